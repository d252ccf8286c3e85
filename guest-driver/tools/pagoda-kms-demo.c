/* SPDX-License-Identifier: MIT */
/*
 * pagoda-kms-demo: a picture on the Pagoda display. A framebuffer in VRAM,
 * its top half a test pattern drawn by the CPU (colour bars over a grey
 * ramp), its bottom half drawn by the GPU: the render engine fills the
 * tiers of a pagoda, line by line, through the process's GPU address
 * space. The mode is set through KMS, then the host is asked for a PNG of
 * the screen (pagoda_screen.h), whose path the demo prints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <libpagoda.h>

#include "pagoda_screen.h"

#define WAIT_NS		(30 * 1000000000ll)

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "pagoda-kms-demo: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

/* The CPU's half: eight colour bars over a grey ramp. */
static void draw_pattern(uint32_t *px, uint32_t pitch_px, uint32_t w, uint32_t h)
{
	static const uint32_t bars[] = {
		0xc0c0c0, 0xc0c000, 0x00c0c0, 0x00c000, 0xc000c0, 0xc00000, 0x0000c0, 0x101010,
	};
	uint32_t x, y;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint32_t grey = x * 255 / (w - 1);

			px[y * pitch_px + x] = y < h * 3 / 4 ? bars[x * 8 / w] :
					       grey << 16 | grey << 8 | grey;
		}
}

/* The GPU's half: sky, ground and the tiers of a pagoda, one FILL32 per line span. */
static void draw_pagoda(struct pagoda_cmdbuf *cb, uint64_t va, uint32_t pitch, uint32_t w,
			uint32_t top, uint32_t h)
{
	const uint32_t tiers = 5, roof = 0xb22222, wall = 0xf0d060, sky = 0x203060;
	uint32_t y, tier_h = h * 4 / 5 / tiers;

	for (y = 0; y < h; y++) {
		uint64_t line = va + (uint64_t)(top + y) * pitch;
		uint32_t t = y / tier_h, in = y % tier_h, half, colour;

		if (t >= tiers) {
			pagoda_cmd_fill(cb, line, (uint64_t)w * 4, 0x305020);
			continue;
		}
		/* each tier wider than the one above; its roof flares out at the bottom */
		half = w / 16 + t * w / 14 + (in < tier_h / 3 ? in * w / 12 / tier_h : 0);
		colour = in < tier_h / 3 ? roof : wall;
		pagoda_cmd_fill(cb, line, (uint64_t)w * 4, sky);
		pagoda_cmd_fill(cb, line + (uint64_t)(w / 2 - half) * 4, (uint64_t)half * 8, colour);
	}
}

int main(void)
{
	struct pagoda_bo_desc fb_desc = {
		.flags = DRM_PAGODA_BO_PRIMARY,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_HIGH,
	};
	struct pagoda_bo_desc cmd_desc = {
		.size = 1 << 20,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	uint32_t handles[4] = {}, pitches[4] = {}, offsets[4] = {}, fb_id, ctx, conn_id;
	struct drm_pagoda_sync out = {};
	struct pagoda_bo fb, cmd;
	struct pagoda_cmdbuf cb;
	struct pagoda_dev dev;
	drmModeConnector *conn;
	drmModeModeInfo mode;
	drmModeRes *res;
	uint64_t fb_va, cmd_va;
	char png[PAGODA_SCREEN_LINE];
	int fd, i;

	check("open the Pagoda primary node", pagoda_open_primary(&dev));
	fd = dev.fd;
	res = drmModeGetResources(fd);
	check("KMS resources", res && res->count_connectors && res->count_crtcs ? 0 : -ENODEV);
	conn_id = res->connectors[0];
	conn = drmModeGetConnector(fd, conn_id);
	check("connector", conn && conn->count_modes ? 0 : -ENODEV);
	mode = conn->modes[0];
	for (i = 0; i < conn->count_modes; i++)
		if (conn->modes[i].type & DRM_MODE_TYPE_PREFERRED)
			mode = conn->modes[i];
	printf("display: %d modes, preferred %s\n", conn->count_modes, mode.name);

	fb_desc.size = (uint64_t)mode.hdisplay * mode.vdisplay * 4;
	check("framebuffer allocation", pagoda_bo_create(&dev, &fb_desc, &fb));
	check("map it", pagoda_bo_map(&dev, &fb));
	draw_pattern(fb.map, mode.hdisplay, mode.hdisplay, mode.vdisplay / 2);

	check("context", pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx));
	check("command buffer", pagoda_bo_create(&dev, &cmd_desc, &cmd));
	check("map it", pagoda_bo_map(&dev, &cmd));
	check("GPU map framebuffer", pagoda_vm_map(&dev, fb.handle, 0, fb.size, 0, &fb_va, 0, 0, 0));
	check("GPU map commands", pagoda_vm_map(&dev, cmd.handle, 0, cmd.size,
						DRM_PAGODA_VM_READ_ONLY, &cmd_va, 0, 0, 0));
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	draw_pagoda(&cb, fb_va, mode.hdisplay * 4, mode.hdisplay, mode.vdisplay / 2,
		    mode.vdisplay - mode.vdisplay / 2);
	check("commands", cb.error);
	check("syncobj", pagoda_syncobj_create(&dev, &out.handle));
	check("submit", pagoda_submit(&dev, ctx, cmd_va, cb.used_bytes, NULL, 0, &out, 1));
	check("wait", pagoda_syncobj_wait(&dev, out.handle, 0, WAIT_NS));
	printf("GPU: %u bytes of commands drew the bottom half\n", cb.used_bytes);

	handles[0] = fb.handle;
	pitches[0] = mode.hdisplay * 4;
	check("framebuffer", drmModeAddFB2(fd, mode.hdisplay, mode.vdisplay, DRM_FORMAT_XRGB8888,
					   handles, pitches, offsets, &fb_id, 0) ? -errno : 0);
	check("mode set", drmModeSetCrtc(fd, res->crtcs[0], fb_id, 0, 0, &conn_id, 1, &mode) ?
			  -errno : 0);
	check("screen PNG", pagoda_screen_png("pagoda-kms-demo", png, sizeof(png)));
	printf("screen: %s\n", png);

	drmModeRmFB(fd, fb_id);
	pagoda_syncobj_destroy(&dev, out.handle);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_bo_free(&dev, &cmd);
	pagoda_bo_free(&dev, &fb);
	drmModeFreeConnector(conn);
	drmModeFreeResources(res);
	close(fd);
	return 0;
}
