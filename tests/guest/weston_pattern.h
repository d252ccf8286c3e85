/* SPDX-License-Identifier: MIT */
/*
 * The picture the Weston test's Wayland client (tests/guest/wayland/) shows
 * full screen, and from which tests/guest/weston.c computes the screen's
 * expected CRC: the same function on both sides of the compositor. Every
 * pixel depends on both of its coordinates without a short period, so that
 * a picture shifted, scaled, cropped or converted does not match. libc
 * only: the client does not link libpagoda.
 */
#ifndef WESTON_PATTERN_H
#define WESTON_PATTERN_H

#include <stdint.h>

/* Pixel (@x, @y) as 0xRRGGBB. */
static inline uint32_t weston_pattern_rgb(uint32_t x, uint32_t y)
{
	uint32_t r = (x * 7 + y) & 0xff;
	uint32_t g = ((y * 3) ^ (x >> 2)) & 0xff;
	uint32_t b = ((x >> 6) + (y >> 6)) & 1 ? 0xe0 - (y & 0x1f) : 0x20 + (x & 0x1f);

	return r << 16 | g << 8 | b;
}

#endif /* WESTON_PATTERN_H */
