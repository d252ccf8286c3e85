/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda display: KMS on the device's display controller. See the DOC
 * block of pagoda_display.c.
 */
#ifndef PAGODA_DISPLAY_H
#define PAGODA_DISPLAY_H

#include <drm/drm_connector.h>
#include <drm/drm_crtc.h>
#include <drm/drm_encoder.h>
#include <drm/drm_plane.h>

#include <pagoda/pagoda_hw.h>

struct pagoda_device;

/**
 * struct pagoda_scanout - what the display controller is told to show
 * @surface: PAGODA_PADDR() of the first pixel
 * @width: pixels
 * @height: lines
 * @stride: bytes per line
 * @format: DRM fourcc, one of the PAGODA_DISP_FORMAT_* codes
 * @control: PAGODA_DISP_CONTROL_*; 0 shows nothing
 * @cursor: PAGODA_PADDR() of the cursor image's first pixel
 * @cursor_size: its width | height << 16
 * @cursor_stride: bytes per line of it
 * @cursor_pos: where it goes, PAGODA_DISP_XY()
 */
struct pagoda_scanout {
	u64 surface;
	u32 width, height, stride, format, control;
	u64 cursor;
	u32 cursor_size, cursor_stride, cursor_pos;
};

/**
 * struct pagoda_display - the KMS objects over the display controller
 * @plane: the primary plane
 * @cursor: the cursor plane
 * @crtc: the one CRTC (the controller's scanout)
 * @encoder: a virtual encoder
 * @connector: a virtual connector offering the device's modes
 * @max_width: largest mode width the controller scans out
 * @max_height: largest mode height
 * @cursor_max: largest cursor, width | height << 16 (DISP_CURSOR_MAX)
 * @refresh_hz: vertical blanks per second, the modes' refresh rate
 * @refresh_mhz: the same in thousandths (PAGODA_REG_DISP_REFRESH), exact
 * @num_modes: entries of @modes
 * @modes: the device's modes (PAGODA_REG_DISP_MODE() values), the
 *	preferred one first
 * @next: the state the planes' updates build, programmed by the CRTC's
 *	flush, or at once by a cursor's async update; under @lock
 * @lock: protects @next, @scanout and @event; taken in the vblank interrupt
 * @scanout: the state last written to the controller, written again
 *	after a reset (which disables the display)
 * @event: the commit's vblank event, sent at the first vertical blank
 *	at which the controller shows no flip pending; holds a vblank
 *	reference
 */
struct pagoda_display {
	struct drm_plane plane;
	struct drm_plane cursor;
	struct drm_crtc crtc;
	struct drm_encoder encoder;
	struct drm_connector connector;
	u32 max_width, max_height;
	u32 cursor_max;
	u32 refresh_hz;
	u32 refresh_mhz;
	u32 num_modes;
	u32 modes[PAGODA_DISP_MAX_MODES];
	struct pagoda_scanout next;
	spinlock_t lock; /* see @lock above */
	struct pagoda_scanout scanout;
	struct drm_pending_vblank_event *event;
};

int pagoda_display_init(struct pagoda_device *pgdev);
void pagoda_display_vblank(struct pagoda_device *pgdev);
void pagoda_display_restore(struct pagoda_device *pgdev);
void pagoda_display_off(struct pagoda_device *pgdev);

#endif /* PAGODA_DISPLAY_H */
