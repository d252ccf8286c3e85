// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda display
 *
 * KMS over the device's display controller (docs/hardware.md, "Display
 * controller") with the atomic helpers: one CRTC, its primary plane and
 * cursor plane (ARGB8888 up to 64x64, drawn by the controller), a
 * virtual encoder and a virtual connector offering the modes the device
 * lists. Framebuffers are made of Pagoda allocations, dumb buffers
 * included; fbdev emulation puts the kernel's text console on them.
 *
 * Primary surfaces follow the model: the controller reads them physically,
 * so a framebuffer is pinned from the plane's prepare_fb to its cleanup_fb,
 * as long as it may be scanned out: contiguous where it is in a memory
 * segment, or, in system memory, mapped into the aperture segment; once it
 * is no longer shown its aperture range goes (pagoda_bo_unpin_scanout()).
 * Pinned, it is never evicted.
 *
 * Flips: the planes' updates build the scanout state, the CRTC's flush
 * writes the staged registers and FLIP once for both; the controller
 * latches them at its next vertical blank. The commit's event is kept and
 * sent from the vblank interrupt once the controller shows no flip
 * pending, so it never comes before the flip it reports. The vblank
 * counter is the controller's FRAME register, and a vblank's time is the
 * controller's (SINCE_VBLANK): exact, however late the interrupt is
 * handled.
 *
 * Checks (atomic check, nothing reaches the device before they pass): a
 * mode larger than the controller's maximum is refused by mode_valid
 * (EINVAL); a framebuffer with a stride that is not a multiple of 4 at
 * creation (EINVAL), a format the plane does not list by the core
 * (EINVAL); the plane must cover the whole mode without scaling (ERANGE
 * for a framebuffer region of another size, ENOSPC for a region outside
 * the framebuffer, EINVAL for a plane off the CRTC), and an enabled CRTC
 * needs its primary plane (EINVAL). The cursor may lie partly or wholly
 * off the CRTC; larger than 64x64 it is refused (EINVAL).
 */

#include <linux/iopoll.h>

#include <drm/drm_atomic.h>
#include <drm/drm_atomic_helper.h>
#include <drm/drm_drv.h>
#include <drm/drm_encoder.h>
#include <drm/drm_fourcc.h>
#include <drm/drm_framebuffer.h>
#include <drm/drm_gem_atomic_helper.h>
#include <drm/drm_gem_framebuffer_helper.h>
#include <drm/drm_modes.h>
#include <drm/drm_modeset_helper_vtables.h>
#include <drm/drm_print.h>
#include <drm/drm_probe_helper.h>
#include <drm/drm_vblank.h>

#include "pagoda_drv.h"

/* The register takes DRM fourcc codes: the plane's formats are the device's. */
static_assert(DRM_FORMAT_XRGB8888 == PAGODA_DISP_FORMAT_XRGB8888);
static_assert(DRM_FORMAT_RGB565 == PAGODA_DISP_FORMAT_RGB565);
static_assert(DRM_FORMAT_ARGB8888 == PAGODA_DISP_FORMAT_ARGB8888);

static const u32 pagoda_plane_formats[] = {
	DRM_FORMAT_XRGB8888,
	DRM_FORMAT_ARGB8888,
	DRM_FORMAT_RGB565,
};

/* The controller blends the cursor as premultiplied ARGB (DRM's default). */
static const u32 pagoda_cursor_formats[] = {
	DRM_FORMAT_ARGB8888,
};

static struct pagoda_device *display_to_pagoda(struct pagoda_display *disp)
{
	return container_of(disp, struct pagoda_device, display);
}

static struct pagoda_display *crtc_to_display(struct drm_crtc *crtc)
{
	return container_of(crtc, struct pagoda_display, crtc);
}

/* Stage @s and latch it at the next vertical blank; display lock held. */
static void pagoda_display_write(struct pagoda_device *pgdev, const struct pagoda_scanout *s)
{
	pagoda_write(pgdev, PAGODA_REG_DISP_SURFACE_LO, lower_32_bits(s->surface));
	pagoda_write(pgdev, PAGODA_REG_DISP_SURFACE_HI, upper_32_bits(s->surface));
	pagoda_write(pgdev, PAGODA_REG_DISP_WIDTH, s->width);
	pagoda_write(pgdev, PAGODA_REG_DISP_HEIGHT, s->height);
	pagoda_write(pgdev, PAGODA_REG_DISP_STRIDE, s->stride);
	pagoda_write(pgdev, PAGODA_REG_DISP_FORMAT, s->format);
	pagoda_write(pgdev, PAGODA_REG_DISP_CURSOR_LO, lower_32_bits(s->cursor));
	pagoda_write(pgdev, PAGODA_REG_DISP_CURSOR_HI, upper_32_bits(s->cursor));
	pagoda_write(pgdev, PAGODA_REG_DISP_CURSOR_SIZE, s->cursor_size);
	pagoda_write(pgdev, PAGODA_REG_DISP_CURSOR_STRIDE, s->cursor_stride);
	pagoda_write(pgdev, PAGODA_REG_DISP_CURSOR_POS, s->cursor_pos);
	pagoda_write(pgdev, PAGODA_REG_DISP_CONTROL, s->control);
	pagoda_write(pgdev, PAGODA_REG_DISP_FLIP, 1);
}

/*
 * Show the next state (&pagoda_display.next) from the next vertical blank.
 * It is kept for a reset to write again: a PCI function reset in progress
 * (BARs off) loses the write, and its reset_done restores it.
 */
static void pagoda_display_program(struct pagoda_display *disp)
{
	struct pagoda_device *pgdev = display_to_pagoda(disp);
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&disp->lock, flags);
	/* the controller shows nothing without its primary plane's surface */
	if (!(disp->next.control & PAGODA_DISP_CONTROL_ENABLE))
		disp->next.control = 0;
	disp->scanout = disp->next;
	if (drm_dev_enter(pgdev->drm, &idx)) {
		pagoda_display_write(pgdev, &disp->scanout);
		drm_dev_exit(idx);
	}
	spin_unlock_irqrestore(&disp->lock, flags);
}

/**
 * pagoda_display_restore - program the scanout again after a reset
 * @pgdev: the device, its registers decoding again
 *
 * A reset turns the display controller off; the surface it showed is
 * still pinned where it was, so the same state is written again.
 */
void pagoda_display_restore(struct pagoda_device *pgdev)
{
	struct pagoda_display *disp = &pgdev->display;
	unsigned long flags;

	spin_lock_irqsave(&disp->lock, flags);
	if (disp->scanout.control)
		pagoda_display_write(pgdev, &disp->scanout);
	spin_unlock_irqrestore(&disp->lock, flags);
}

/*
 * Until the controller latched what was written last (FLIP_PENDING clear):
 * it reads the surface it shows until then, which its owner may free as
 * soon as the commit that turned it off is done. At most a frame, a few
 * on a busy host; given up after a second (the function in reset: nothing
 * is read then).
 */
static void pagoda_display_wait_latched(struct pagoda_device *pgdev)
{
	u32 status;

	if (read_poll_timeout(pagoda_read, status, !(status & PAGODA_DISP_STATUS_FLIP_PENDING),
			      1000, USEC_PER_SEC, false, pgdev, PAGODA_REG_DISP_STATUS))
		drm_dbg_kms(pgdev->drm, "the display controller took no new state in a second\n");
}

/**
 * pagoda_display_off - stop scanning out, at unbind
 * @pgdev: the device, unplugged, its registers still mapped
 *
 * The framebuffers are about to be freed: the controller must not read
 * them any more.
 */
void pagoda_display_off(struct pagoda_device *pgdev)
{
	const struct pagoda_scanout off = {};
	unsigned long flags;

	spin_lock_irqsave(&pgdev->display.lock, flags);
	pgdev->display.scanout = off;
	pagoda_display_write(pgdev, &off);
	spin_unlock_irqrestore(&pgdev->display.lock, flags);
	pagoda_display_wait_latched(pgdev);
}

/* Send @event with the vblank count and time of now. */
static void pagoda_crtc_send_event(struct drm_crtc *crtc, struct drm_pending_vblank_event *event)
{
	unsigned long flags;

	spin_lock_irqsave(&crtc->dev->event_lock, flags);
	drm_crtc_send_vblank_event(crtc, event);
	spin_unlock_irqrestore(&crtc->dev->event_lock, flags);
}

/**
 * pagoda_display_vblank - a vertical blank, from the vblank interrupt
 * @pgdev: the device
 *
 * Counts it for DRM, and sends the pending commit's event once its flip
 * is latched.
 */
void pagoda_display_vblank(struct pagoda_device *pgdev)
{
	struct pagoda_display *disp = &pgdev->display;
	struct drm_pending_vblank_event *event = NULL;
	unsigned long flags;

	drm_crtc_handle_vblank(&disp->crtc);
	spin_lock_irqsave(&disp->lock, flags);
	if (disp->event && !(pagoda_read(pgdev, PAGODA_REG_DISP_STATUS) &
			     PAGODA_DISP_STATUS_FLIP_PENDING)) {
		event = disp->event;
		disp->event = NULL;
	}
	spin_unlock_irqrestore(&disp->lock, flags);
	if (!event)
		return;
	pagoda_crtc_send_event(&disp->crtc, event);
	drm_crtc_vblank_put(&disp->crtc);
}

/* ---- plane ---------------------------------------------------------- */

/*
 * Whether the controller of @disp may read @fb: it scans out its own GPU's
 * memory only, not a linked peer's (docs/hardware.md section 11).
 */
static bool pagoda_fb_local(struct pagoda_display *disp, const struct drm_framebuffer *fb)
{
	struct pagoda_bo *bo = fb ? gem_to_pagoda_bo(fb->obj[0]) : NULL;

	/* nor the instances of a linked allocation: one GPU's memory each */
	return !bo || (pagoda_bo_device(bo) == display_to_pagoda(disp) && !bo->num_instances);
}

static int pagoda_plane_atomic_check(struct drm_plane *plane, struct drm_atomic_state *state)
{
	struct drm_plane_state *new_state = drm_atomic_get_new_plane_state(state, plane);
	struct pagoda_display *disp = container_of(plane, struct pagoda_display, plane);
	struct drm_crtc_state *crtc_state = NULL;

	if (!pagoda_fb_local(disp, new_state->fb))
		return -EINVAL;
	if (new_state->crtc)
		crtc_state = drm_atomic_get_new_crtc_state(state, new_state->crtc);
	/* the controller has no scaler and no background: the plane is the screen */
	return drm_atomic_helper_check_plane_state(new_state, crtc_state, DRM_PLANE_NO_SCALING,
						   DRM_PLANE_NO_SCALING, false, true);
}

static int pagoda_plane_prepare_fb(struct drm_plane *plane, struct drm_plane_state *state)
{
	struct pagoda_bo *bo;
	int ret;

	if (!state->fb)
		return 0;
	bo = gem_to_pagoda_bo(state->fb->obj[0]);
	ret = pagoda_bo_pin_scanout(bo);
	if (ret)
		return ret;
	/* the commit waits for the work still writing it */
	ret = drm_gem_plane_helper_prepare_fb(plane, state);
	if (ret)
		pagoda_bo_unpin_scanout(bo);
	return ret;
}

static void pagoda_plane_cleanup_fb(struct drm_plane *plane, struct drm_plane_state *state)
{
	if (state->fb)
		pagoda_bo_unpin_scanout(gem_to_pagoda_bo(state->fb->obj[0]));
}

/* Where the controller reads the top-left pixel of a plane's source. */
static u64 pagoda_plane_paddr(const struct drm_plane_state *ps)
{
	const struct drm_framebuffer *fb = ps->fb;

	return pagoda_bo_contiguous_paddr(gem_to_pagoda_bo(fb->obj[0])) + fb->offsets[0] +
	       (u64)(ps->src.y1 >> 16) * fb->pitches[0] + (ps->src.x1 >> 16) * fb->format->cpp[0];
}

static void pagoda_plane_atomic_update(struct drm_plane *plane, struct drm_atomic_state *state)
{
	struct drm_plane_state *ps = drm_atomic_get_new_plane_state(state, plane);
	struct pagoda_display *disp = container_of(plane, struct pagoda_display, plane);
	struct pagoda_scanout *s = &disp->next;
	unsigned long flags;

	/* under the lock: a cursor's async update programs the state at any time */
	spin_lock_irqsave(&disp->lock, flags);
	s->control &= ~PAGODA_DISP_CONTROL_ENABLE;
	if (ps->visible && ps->fb) {
		s->surface = pagoda_plane_paddr(ps);
		s->width = drm_rect_width(&ps->dst);
		s->height = drm_rect_height(&ps->dst);
		s->stride = ps->fb->pitches[0];
		s->format = ps->fb->format->format;
		s->control |= PAGODA_DISP_CONTROL_ENABLE;
	}
	spin_unlock_irqrestore(&disp->lock, flags);
}

static const struct drm_plane_helper_funcs pagoda_plane_helper_funcs = {
	.atomic_check = pagoda_plane_atomic_check,
	.prepare_fb = pagoda_plane_prepare_fb,
	.cleanup_fb = pagoda_plane_cleanup_fb,
	.atomic_update = pagoda_plane_atomic_update,
};

static int pagoda_cursor_atomic_check(struct drm_plane *plane, struct drm_atomic_state *state)
{
	struct drm_plane_state *new_state = drm_atomic_get_new_plane_state(state, plane);
	struct pagoda_display *disp = container_of(plane, struct pagoda_display, cursor);
	struct drm_crtc_state *crtc_state = NULL;

	if (!pagoda_fb_local(disp, new_state->fb))
		return -EINVAL;
	if (new_state->crtc)
		crtc_state = drm_atomic_get_new_crtc_state(state, new_state->crtc);
	if (new_state->fb && (new_state->crtc_w > plane->dev->mode_config.cursor_width ||
			      new_state->crtc_h > plane->dev->mode_config.cursor_height))
		return -EINVAL;
	/* anywhere, clipped to the CRTC; drawn at the size it is */
	return drm_atomic_helper_check_plane_state(new_state, crtc_state, DRM_PLANE_NO_SCALING,
						   DRM_PLANE_NO_SCALING, true, true);
}

/* The cursor's part of the next state, from its plane state @ps. */
static void pagoda_display_set_cursor(struct pagoda_display *disp, const struct drm_plane_state *ps)
{
	struct pagoda_scanout *s = &disp->next;
	unsigned long flags;

	spin_lock_irqsave(&disp->lock, flags);
	s->control &= ~PAGODA_DISP_CONTROL_CURSOR;
	if (ps->visible && ps->fb) {
		/* the part on the CRTC: the helpers clipped the source with the position */
		s->cursor = pagoda_plane_paddr(ps);
		s->cursor_size = drm_rect_width(&ps->dst) | drm_rect_height(&ps->dst) << 16;
		s->cursor_stride = ps->fb->pitches[0];
		s->cursor_pos = PAGODA_DISP_XY(ps->dst.x1, ps->dst.y1);
		s->control |= PAGODA_DISP_CONTROL_CURSOR;
	}
	spin_unlock_irqrestore(&disp->lock, flags);
}

static void pagoda_cursor_atomic_update(struct drm_plane *plane, struct drm_atomic_state *state)
{
	pagoda_display_set_cursor(container_of(plane, struct pagoda_display, cursor),
				  drm_atomic_get_new_plane_state(state, plane));
}

/*
 * A cursor moved or changed on a running CRTC (the legacy cursor ioctls)
 * goes to the controller at once, not behind the flips queued before it:
 * it is latched with them at the next vertical blank.
 */
static int pagoda_cursor_atomic_async_check(struct drm_plane *plane,
					    struct drm_atomic_state *state)
{
	struct drm_plane_state *new_state = drm_atomic_get_new_plane_state(state, plane);
	struct drm_crtc_state *crtc_state;

	crtc_state = drm_atomic_get_new_crtc_state(state, new_state->crtc);
	return crtc_state && crtc_state->active ? 0 : -EINVAL;
}

static void pagoda_cursor_atomic_async_update(struct drm_plane *plane,
					      struct drm_atomic_state *state)
{
	struct drm_plane_state *new_state = drm_atomic_get_new_plane_state(state, plane);
	struct pagoda_display *disp = container_of(plane, struct pagoda_display, cursor);
	struct drm_plane_state *ps = plane->state;

	/* the plane's state takes the new framebuffer; @new_state's cleanup the old */
	swap(ps->fb, new_state->fb);
	ps->crtc_x = new_state->crtc_x;
	ps->crtc_y = new_state->crtc_y;
	ps->crtc_w = new_state->crtc_w;
	ps->crtc_h = new_state->crtc_h;
	ps->src_x = new_state->src_x;
	ps->src_y = new_state->src_y;
	ps->src_w = new_state->src_w;
	ps->src_h = new_state->src_h;
	ps->src = new_state->src;
	ps->dst = new_state->dst;
	ps->visible = new_state->visible;
	pagoda_display_set_cursor(disp, ps);
	pagoda_display_program(disp);
}

static const struct drm_plane_helper_funcs pagoda_cursor_helper_funcs = {
	.atomic_check = pagoda_cursor_atomic_check,
	.prepare_fb = pagoda_plane_prepare_fb,
	.cleanup_fb = pagoda_plane_cleanup_fb,
	.atomic_update = pagoda_cursor_atomic_update,
	.atomic_async_check = pagoda_cursor_atomic_async_check,
	.atomic_async_update = pagoda_cursor_atomic_async_update,
};

static const struct drm_plane_funcs pagoda_plane_funcs = {
	.update_plane = drm_atomic_helper_update_plane,
	.disable_plane = drm_atomic_helper_disable_plane,
	.destroy = drm_plane_cleanup,
	.reset = drm_atomic_helper_plane_reset,
	.atomic_duplicate_state = drm_atomic_helper_plane_duplicate_state,
	.atomic_destroy_state = drm_atomic_helper_plane_destroy_state,
};

/* ---- CRTC --------------------------------------------------------------- */

/*
 * The controller blanks at its own refresh rate: a mode's timings must
 * describe a frame (a total that fits the helpers' 32-bit arithmetic) and
 * claim that rate, within 1%.
 */
static enum drm_mode_status pagoda_mode_timing_valid(const struct drm_display_mode *mode,
						     u32 refresh_mhz)
{
	u64 frame = (u64)mode->htotal * mode->vtotal * max_t(u16, mode->vscan, 1);
	u64 mhz;

	if (!frame || frame > U32_MAX || mode->clock <= 0)
		return MODE_H_ILLEGAL;
	mhz = div64_u64((u64)mode->clock * 1000000, frame);
	if (mhz * 100 < (u64)refresh_mhz * 99 || mhz * 100 > (u64)refresh_mhz * 101)
		return MODE_CLOCK_RANGE;
	return MODE_OK;
}

static enum drm_mode_status pagoda_crtc_mode_valid(struct drm_crtc *crtc,
						   const struct drm_display_mode *mode)
{
	struct pagoda_display *disp = crtc_to_display(crtc);

	if (mode->hdisplay > disp->max_width)
		return MODE_VIRTUAL_X;
	if (mode->vdisplay > disp->max_height)
		return MODE_VIRTUAL_Y;
	if (mode->flags & (DRM_MODE_FLAG_INTERLACE | DRM_MODE_FLAG_DBLSCAN))
		return MODE_NO_INTERLACE;
	return pagoda_mode_timing_valid(mode, disp->refresh_mhz);
}

static int pagoda_crtc_atomic_check(struct drm_crtc *crtc, struct drm_atomic_state *state)
{
	struct drm_crtc_state *crtc_state = drm_atomic_get_new_crtc_state(state, crtc);

	/* the controller shows a surface or nothing: an enabled CRTC needs its plane */
	if (!crtc_state->enable)
		return 0;
	return drm_atomic_helper_check_crtc_primary_plane(crtc_state);
}

static void pagoda_crtc_atomic_flush(struct drm_crtc *crtc, struct drm_atomic_state *state)
{
	struct drm_crtc_state *crtc_state = drm_atomic_get_new_crtc_state(state, crtc);
	struct drm_pending_vblank_event *event = crtc_state->event;
	struct pagoda_display *disp = crtc_to_display(crtc);
	unsigned long flags;
	int idx;

	pagoda_display_program(disp);
	if (!event)
		return;
	crtc_state->event = NULL;
	/* unplugged, nothing was written and no vertical blank comes */
	if (!drm_dev_enter(crtc->dev, &idx)) {
		pagoda_crtc_send_event(crtc, event);
		return;
	}
	if (drm_crtc_vblank_get(crtc)) {
		pagoda_crtc_send_event(crtc, event);
	} else {
		spin_lock_irqsave(&disp->lock, flags);
		/* the helpers wait for a commit's flip before the next one's */
		WARN_ON(disp->event);
		disp->event = event;
		spin_unlock_irqrestore(&disp->lock, flags);
	}
	drm_dev_exit(idx);
}

static void pagoda_crtc_atomic_enable(struct drm_crtc *crtc, struct drm_atomic_state *state)
{
	drm_crtc_vblank_on(crtc);
}

static void pagoda_crtc_atomic_disable(struct drm_crtc *crtc, struct drm_atomic_state *state)
{
	struct drm_crtc_state *crtc_state = drm_atomic_get_new_crtc_state(state, crtc);
	struct pagoda_display *disp = crtc_to_display(crtc);
	struct drm_pending_vblank_event *pending;
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&disp->lock, flags);
	disp->next = (struct pagoda_scanout){};
	spin_unlock_irqrestore(&disp->lock, flags);
	pagoda_display_program(disp);
	/* the old framebuffer is unpinned once this commit is done */
	if (drm_dev_enter(crtc->dev, &idx)) {
		pagoda_display_wait_latched(display_to_pagoda(disp));
		drm_dev_exit(idx);
	}
	spin_lock_irqsave(&disp->lock, flags);
	pending = disp->event;
	disp->event = NULL;
	spin_unlock_irqrestore(&disp->lock, flags);
	if (pending) {
		pagoda_crtc_send_event(crtc, pending);
		drm_crtc_vblank_put(crtc);
	}
	drm_crtc_vblank_off(crtc);
	/* the planes of an inactive CRTC are not flushed: its event goes now */
	if (crtc_state->event && !crtc_state->active) {
		pagoda_crtc_send_event(crtc, crtc_state->event);
		crtc_state->event = NULL;
	}
}

static const struct drm_crtc_helper_funcs pagoda_crtc_helper_funcs = {
	.mode_valid = pagoda_crtc_mode_valid,
	.atomic_check = pagoda_crtc_atomic_check,
	.atomic_flush = pagoda_crtc_atomic_flush,
	.atomic_enable = pagoda_crtc_atomic_enable,
	.atomic_disable = pagoda_crtc_atomic_disable,
};

static u32 pagoda_crtc_get_vblank_counter(struct drm_crtc *crtc)
{
	struct pagoda_device *pgdev = display_to_pagoda(crtc_to_display(crtc));
	u32 frame = 0;
	int idx;

	if (drm_dev_enter(crtc->dev, &idx)) {
		frame = pagoda_read(pgdev, PAGODA_REG_DISP_FRAME_LO);
		drm_dev_exit(idx);
	}
	return frame;
}

static int pagoda_crtc_enable_vblank(struct drm_crtc *crtc)
{
	struct pagoda_device *pgdev = display_to_pagoda(crtc_to_display(crtc));
	int idx;

	if (!drm_dev_enter(crtc->dev, &idx))
		return -ENODEV;
	pagoda_irq_set_sources(pgdev, PAGODA_INT_VBLANK, true);
	drm_dev_exit(idx);
	return 0;
}

static void pagoda_crtc_disable_vblank(struct drm_crtc *crtc)
{
	struct pagoda_device *pgdev = display_to_pagoda(crtc_to_display(crtc));
	int idx;

	if (!drm_dev_enter(crtc->dev, &idx))
		return;
	pagoda_irq_set_sources(pgdev, PAGODA_INT_VBLANK, false);
	drm_dev_exit(idx);
}

/*
 * The time of the last vertical blank on the guest's clock: the controller
 * says how long ago it was, read between two readings of the clock. Not
 * known before the first one since reset (the helpers then take now).
 */
static bool pagoda_crtc_get_vblank_timestamp(struct drm_crtc *crtc, int *max_error,
					     ktime_t *vblank_time, bool in_vblank_irq)
{
	struct pagoda_device *pgdev = display_to_pagoda(crtc_to_display(crtc));
	ktime_t before, after;
	u32 since;
	int idx, tries = 3;

	if (!drm_dev_enter(crtc->dev, &idx))
		return false;
	/* a read the guest was preempted around says little: again */
	do {
		before = ktime_get();
		since = pagoda_read(pgdev, PAGODA_REG_DISP_SINCE_VBLANK);
		after = ktime_get();
	} while (ktime_to_ns(ktime_sub(after, before)) > *max_error && --tries);
	drm_dev_exit(idx);
	if (since == PAGODA_DISP_NO_VBLANK)
		return false;
	*max_error = ktime_to_ns(ktime_sub(after, before));
	*vblank_time = ktime_sub_ns(ktime_add_ns(before, *max_error / 2), since);
	return true;
}

static const struct drm_crtc_funcs pagoda_crtc_funcs = {
	.reset = drm_atomic_helper_crtc_reset,
	.destroy = drm_crtc_cleanup,
	.set_config = drm_atomic_helper_set_config,
	.page_flip = drm_atomic_helper_page_flip,
	.atomic_duplicate_state = drm_atomic_helper_crtc_duplicate_state,
	.atomic_destroy_state = drm_atomic_helper_crtc_destroy_state,
	.get_vblank_counter = pagoda_crtc_get_vblank_counter,
	.get_vblank_timestamp = pagoda_crtc_get_vblank_timestamp,
	.enable_vblank = pagoda_crtc_enable_vblank,
	.disable_vblank = pagoda_crtc_disable_vblank,
};

/* ---- connector ------------------------------------------------------------ */

/*
 * The pixel clock (kHz) that makes @mode refresh at exactly @refresh_mhz,
 * its vertical blanking grown by the lines that takes (at most 1000): the
 * controller blanks at its own rate, and a client pacing itself by the
 * mode's refresh must not drift from it. 0 when none fits.
 */
static int pagoda_mode_exact_clock(struct drm_display_mode *mode, u32 refresh_mhz)
{
	u32 lines;

	for (lines = 0; lines <= 1000; lines++) {
		u64 frame = (u64)mode->htotal * (mode->vtotal + lines) * refresh_mhz;

		if (frame % 1000000 == 0 && frame / 1000000 <= INT_MAX) {
			mode->vtotal += lines;
			return frame / 1000000;
		}
	}
	return 0;
}

/*
 * A mode of exactly @width x @height (CVT rounds widths to 8 pixels) that
 * refreshes at exactly @refresh_mhz thousandths of a hertz.
 */
static struct drm_display_mode *pagoda_mode_create(struct drm_device *drm, u32 width, u32 height,
						   u32 refresh_mhz)
{
	struct drm_display_mode *mode;
	int grow, clock;

	mode = drm_cvt_mode(drm, width, height, DIV_ROUND_CLOSEST(refresh_mhz, 1000), false, false,
			    false);
	if (!mode)
		return NULL;
	grow = width - mode->hdisplay;
	mode->hdisplay += grow;
	mode->hsync_start += grow;
	mode->hsync_end += grow;
	mode->htotal += grow;
	clock = pagoda_mode_exact_clock(mode, refresh_mhz);
	if (clock)
		mode->clock = clock;
	drm_mode_set_name(mode);
	return mode;
}

static int pagoda_connector_get_modes(struct drm_connector *connector)
{
	struct pagoda_display *disp = container_of(connector, struct pagoda_display, connector);
	int count = 0;
	u32 i;

	for (i = 0; i < disp->num_modes; i++) {
		struct drm_display_mode *mode;

		mode = pagoda_mode_create(connector->dev, PAGODA_DISP_MODE_WIDTH(disp->modes[i]),
					  PAGODA_DISP_MODE_HEIGHT(disp->modes[i]),
					  disp->refresh_mhz);
		if (!mode)
			continue;
		mode->type |= DRM_MODE_TYPE_DRIVER;
		if (i == 0)
			mode->type |= DRM_MODE_TYPE_PREFERRED;
		drm_mode_probed_add(connector, mode);
		count++;
	}
	return count;
}

static const struct drm_connector_helper_funcs pagoda_connector_helper_funcs = {
	.get_modes = pagoda_connector_get_modes,
};

static const struct drm_connector_funcs pagoda_connector_funcs = {
	.fill_modes = drm_helper_probe_single_connector_modes,
	.destroy = drm_connector_cleanup,
	.reset = drm_atomic_helper_connector_reset,
	.atomic_duplicate_state = drm_atomic_helper_connector_duplicate_state,
	.atomic_destroy_state = drm_atomic_helper_connector_destroy_state,
};

/* ---- device --------------------------------------------------------------- */

static struct drm_framebuffer *pagoda_fb_create(struct drm_device *drm, struct drm_file *file,
						const struct drm_mode_fb_cmd2 *cmd)
{
	/* the controller reads lines at dword-aligned strides */
	if (cmd->pitches[0] % 4) {
		drm_dbg_kms(drm, "stride %u is not a multiple of 4\n", cmd->pitches[0]);
		return ERR_PTR(-EINVAL);
	}
	return drm_gem_fb_create(drm, file, cmd);
}

static const struct drm_mode_config_funcs pagoda_mode_config_funcs = {
	.fb_create = pagoda_fb_create,
	.atomic_check = drm_atomic_helper_check,
	.atomic_commit = drm_atomic_helper_commit,
};

/*
 * drm_atomic_helper_commit_tail_rpm() (planes are written once the CRTC is
 * on, so its event waits for a vblank), except that it waits for the flips
 * themselves rather than for the vblank counter to move: a vertical blank
 * that came just before the FLIP write, its interrupt handled on another
 * CPU after the counter was read, would end that wait before the
 * controller latched the new surface, and the old framebuffer would be
 * unpinned while still scanned out. A commit's event is sent only once no
 * flip is pending (pagoda_display_vblank()).
 */
static void pagoda_atomic_commit_tail(struct drm_atomic_state *state)
{
	struct drm_device *drm = state->dev;

	drm_atomic_helper_commit_modeset_disables(drm, state);
	drm_atomic_helper_commit_modeset_enables(drm, state);
	drm_atomic_helper_commit_planes(drm, state, DRM_PLANE_COMMIT_ACTIVE_ONLY);
	drm_atomic_helper_fake_vblank(state);
	drm_atomic_helper_commit_hw_done(state);
	drm_atomic_helper_wait_for_flip_done(drm, state);
	drm_atomic_helper_cleanup_planes(drm, state);
}

static const struct drm_mode_config_helper_funcs pagoda_mode_config_helpers = {
	.atomic_commit_tail = pagoda_atomic_commit_tail,
};

/* Read the controller's limits and modes; -ENODEV when they make no sense. */
static int pagoda_display_read_modes(struct pagoda_device *pgdev)
{
	struct pagoda_display *disp = &pgdev->display;
	u32 i, n;

	disp->max_width = pagoda_read(pgdev, PAGODA_REG_DISP_MAX_WIDTH);
	disp->max_height = pagoda_read(pgdev, PAGODA_REG_DISP_MAX_HEIGHT);
	disp->cursor_max = pagoda_read(pgdev, PAGODA_REG_DISP_CURSOR_MAX);
	n = pagoda_read(pgdev, PAGODA_REG_DISP_NUM_MODES);
	/* the register counts vertical blanks per 1000 s */
	disp->refresh_mhz = pagoda_read(pgdev, PAGODA_REG_DISP_REFRESH);
	disp->refresh_hz = DIV_ROUND_CLOSEST(disp->refresh_mhz, 1000);
	if (!disp->max_width || !disp->max_height || !n || n > PAGODA_DISP_MAX_MODES ||
	    !disp->refresh_hz || !PAGODA_DISP_MODE_WIDTH(disp->cursor_max) ||
	    !PAGODA_DISP_MODE_HEIGHT(disp->cursor_max)) {
		drm_err(pgdev->drm, "display controller: maximum %ux%u, %u modes, %u Hz\n",
			disp->max_width, disp->max_height, n, disp->refresh_hz);
		return -ENODEV;
	}
	disp->modes[0] = pagoda_read(pgdev, PAGODA_REG_DISP_PREF_WIDTH) |
			 pagoda_read(pgdev, PAGODA_REG_DISP_PREF_HEIGHT) << 16;
	disp->num_modes = 1;
	for (i = 0; i < n; i++) {
		u32 mode = pagoda_read(pgdev, PAGODA_REG_DISP_MODE(i));

		if (mode != disp->modes[0] && disp->num_modes < PAGODA_DISP_MAX_MODES)
			disp->modes[disp->num_modes++] = mode;
	}
	return 0;
}

/**
 * pagoda_display_init - KMS objects over the display controller
 * @pgdev: the device, before drm_dev_register()
 *
 * Return: 0 or a negative errno.
 */
int pagoda_display_init(struct pagoda_device *pgdev)
{
	struct pagoda_display *disp = &pgdev->display;
	struct drm_device *drm = pgdev->drm;
	int ret;

	ret = pagoda_display_read_modes(pgdev);
	if (ret)
		return ret;

	ret = drmm_mode_config_init(drm);
	if (ret)
		return ret;
	drm->mode_config.min_width = 1;
	drm->mode_config.min_height = 1;
	drm->mode_config.max_width = disp->max_width;
	drm->mode_config.max_height = disp->max_height;
	drm->mode_config.cursor_width = PAGODA_DISP_MODE_WIDTH(disp->cursor_max);
	drm->mode_config.cursor_height = PAGODA_DISP_MODE_HEIGHT(disp->cursor_max);
	drm->mode_config.preferred_depth = 24;
	drm->mode_config.funcs = &pagoda_mode_config_funcs;
	drm->mode_config.helper_private = &pagoda_mode_config_helpers;

	ret = drm_universal_plane_init(drm, &disp->plane, 0, &pagoda_plane_funcs,
				       pagoda_plane_formats, ARRAY_SIZE(pagoda_plane_formats),
				       NULL, DRM_PLANE_TYPE_PRIMARY, NULL);
	if (ret)
		return ret;
	drm_plane_helper_add(&disp->plane, &pagoda_plane_helper_funcs);
	ret = drm_universal_plane_init(drm, &disp->cursor, 0, &pagoda_plane_funcs,
				       pagoda_cursor_formats, ARRAY_SIZE(pagoda_cursor_formats),
				       NULL, DRM_PLANE_TYPE_CURSOR, NULL);
	if (ret)
		return ret;
	drm_plane_helper_add(&disp->cursor, &pagoda_cursor_helper_funcs);

	ret = drm_crtc_init_with_planes(drm, &disp->crtc, &disp->plane, &disp->cursor,
					&pagoda_crtc_funcs, NULL);
	if (ret)
		return ret;
	drm_crtc_helper_add(&disp->crtc, &pagoda_crtc_helper_funcs);

	ret = drmm_encoder_init(drm, &disp->encoder, NULL, DRM_MODE_ENCODER_VIRTUAL, NULL);
	if (ret)
		return ret;
	disp->encoder.possible_crtcs = drm_crtc_mask(&disp->crtc);

	ret = drm_connector_init(drm, &disp->connector, &pagoda_connector_funcs,
				 DRM_MODE_CONNECTOR_VIRTUAL);
	if (ret)
		return ret;
	drm_connector_helper_add(&disp->connector, &pagoda_connector_helper_funcs);
	ret = drm_connector_attach_encoder(&disp->connector, &disp->encoder);
	if (ret)
		return ret;

	ret = drm_vblank_init(drm, 1);
	if (ret)
		return ret;
	drm->max_vblank_count = U32_MAX;

	drm_mode_config_reset(drm);
	/* the reset allocates the initial states and cannot report failing to */
	if (!disp->plane.state || !disp->cursor.state || !disp->crtc.state ||
	    !disp->connector.state)
		return -ENOMEM;
	return 0;
}
