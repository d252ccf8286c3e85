// SPDX-License-Identifier: MIT
/*
 * The screen channel end to end (pagoda_screen.h, scripts/guest-agent.py):
 * the host answers each request on /dev/ttyS1 with one line, and what it
 * reports is the device's console as QEMU shows it.
 *
 * Whatever a driver shows, a screendump answers with a size the display
 * can have and a colour count that fits it, and pixels inside it can be
 * read. Then, for a screen known without any driver: the driver (if bound)
 * is unbound and the function reset, which leaves the display disabled,
 * black at its preferred size (DISP_PREF_WIDTH x DISP_PREF_HEIGHT, 1024x768
 * unless the device is given another). That dump must have one colour,
 * 000000 at every corner, and as CRC the zlib CRC-32 that libpagoda's
 * pagoda_crc32() computes over as many black RGB pixels: the convention
 * display tests compare their own pictures by. Malformed and unknown
 * requests, names and coordinates get "error", and the channel still works
 * after them. The driver is bound again at the end.
 */
#include <libpagoda.h>

#include "pagoda_screen.h"
#include "pagoda_test.h"

#define NAME		"screen_agent"

/* Expect "error" for @request, and see what the host said. */
static void check_refused(const char *request)
{
	char reply[PAGODA_SCREEN_LINE];
	int ret = pagoda_screen_request(request, reply, sizeof(reply));

	pt_check(ret == -EREMOTEIO, "\"%s\" refused: %s", request,
		 ret ? pagoda_screen_strerror(ret) : reply);
}

/* The screen as a driver left it: nothing known but its bounds. */
static void check_any_screen(volatile uint32_t *mmio)
{
	uint32_t max_w = pt_reg(mmio, PAGODA_REG_DISP_MAX_WIDTH);
	uint32_t max_h = pt_reg(mmio, PAGODA_REG_DISP_MAX_HEIGHT);
	struct pagoda_screen scr;
	uint32_t rgb = 0;
	int ret;

	ret = pagoda_screendump(NAME "-driver", &scr);
	if (!pt_check(!ret, "screendump with the driver's screen: %s",
		      pagoda_screen_strerror(ret)))
		return;
	pt_check(scr.width >= 1 && scr.width <= max_w && scr.height >= 1 && scr.height <= max_h,
		 "%ux%u, within the display's maximum %ux%u", scr.width, scr.height, max_w, max_h);
	pt_check(scr.ncolors >= 1 && scr.ncolors <= (unsigned long long)scr.width * scr.height,
		 "%u colour(s), CRC %08x", scr.ncolors, scr.crc);
	ret = pagoda_screen_pixel(NAME "-driver", scr.width - 1, scr.height - 1, &rgb);
	pt_check(!ret, "pixel (%u, %u): %06x (%s)", scr.width - 1, scr.height - 1, rgb,
		 pagoda_screen_strerror(ret));
}

static int unbind(const char *bdf)
{
	char path[PT_PATH_MAX];
	int ret;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/driver", bdf);
	if (access(path, F_OK))
		return 0;
	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf);
	pt_check(!ret, "unbind the driver from %s: %s", bdf, ret ? strerror(-ret) : "done");
	return !ret;
}

/* The function just reset: black at the preferred size. */
static void check_black_screen(const char *bdf, volatile uint32_t *mmio)
{
	char path[PT_PATH_MAX];
	struct pagoda_screen scr;
	uint32_t want_w, want_h, rgb, crc;
	unsigned int corner[4][2], i;
	uint8_t *zeros;
	int ret;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/reset", bdf);
	ret = pt_write_file(path, "1");
	if (!pt_check(!ret, "reset %s: %s", bdf, ret ? strerror(-ret) : "done"))
		return;
	pt_check(!(pt_reg(mmio, PAGODA_REG_DISP_STATUS) & PAGODA_DISP_STATUS_ENABLED),
		 "the display is disabled after the reset (DISP_STATUS 0x%x)",
		 pt_reg(mmio, PAGODA_REG_DISP_STATUS));
	want_w = pt_reg(mmio, PAGODA_REG_DISP_PREF_WIDTH);
	want_h = pt_reg(mmio, PAGODA_REG_DISP_PREF_HEIGHT);

	ret = pagoda_screendump(NAME, &scr);
	if (!pt_check(!ret, "screendump " NAME ": %s", pagoda_screen_strerror(ret)))
		return;
	pt_check(scr.width == want_w && scr.height == want_h,
		 "%ux%u, the preferred size %ux%u", scr.width, scr.height, want_w, want_h);
	pt_check(scr.ncolors == 1, "%u colour(s) (want 1)", scr.ncolors);
	zeros = calloc((size_t)scr.width * scr.height, 3);
	if (zeros) {
		crc = pagoda_crc32(zeros, (size_t)scr.width * scr.height * 3);
		pt_check(scr.crc == crc, "CRC %08x, pagoda_crc32() of %ux%u black RGB pixels %08x",
			 scr.crc, scr.width, scr.height, crc);
		free(zeros);
	} else {
		pt_fail("no memory for %ux%u pixels", scr.width, scr.height);
	}

	corner[0][0] = 0;		corner[0][1] = 0;
	corner[1][0] = scr.width - 1;	corner[1][1] = 0;
	corner[2][0] = 0;		corner[2][1] = scr.height - 1;
	corner[3][0] = scr.width - 1;	corner[3][1] = scr.height - 1;
	for (i = 0; i < ARRAY_SIZE(corner); i++) {
		rgb = 0xdeadbeef;
		ret = pagoda_screen_pixel(NAME, corner[i][0], corner[i][1], &rgb);
		pt_check(!ret && rgb == 0, "pixel (%u, %u): %06x (%s)", corner[i][0],
			 corner[i][1], rgb, pagoda_screen_strerror(ret));
	}
	snprintf(path, sizeof(path), "pixel " NAME " %u 0", scr.width);
	check_refused(path);
	snprintf(path, sizeof(path), "pixel " NAME " 0 %u", scr.height);
	check_refused(path);

	ret = pagoda_screen_png(NAME, path, sizeof(path));
	pt_check(!ret && strstr(path, NAME ".png"), "screendump-png " NAME ": %s",
		 ret ? pagoda_screen_strerror(ret) : path);
}

static void bind(const char *bdf)
{
	int ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);

	if (pt_check(!ret, "bind the driver to %s again: %s", bdf, ret ? strerror(-ret) : "done"))
		pt_check(pt_wait_path("/dev/dri/renderD128", 1), "the render node is back");
}

int main(void)
{
	char bdf[PT_NAME_MAX], reply[PAGODA_SCREEN_LINE];
	volatile uint32_t *mmio;
	int ret, was_bound;

	/* the protocol, before any dump */
	check_refused("hello");
	check_refused("screendump");
	check_refused("screendump ../" NAME);
	check_refused("screendump .hidden");
	check_refused("pixel never-dumped 0 0");
	check_refused("screendump-png a b");
	ret = pagoda_screen_request("", reply, sizeof(reply));
	pt_check(ret == -EREMOTEIO, "an empty line refused: %s",
		 ret ? pagoda_screen_strerror(ret) : reply);

	mmio = pt_find_mmio(bdf, sizeof(bdf));
	if (!mmio)
		return pt_exit();
	if (!pt_check(pt_reg(mmio, PAGODA_REG_CAPS) & PAGODA_CAPS_DISPLAY,
		      "the device has a display controller (CAPS 0x%x)",
		      pt_reg(mmio, PAGODA_REG_CAPS)))
		return pt_exit();
	check_any_screen(mmio);
	was_bound = unbind(bdf);
	check_black_screen(bdf, mmio);
	/* an earlier dump stays readable under its own name */
	ret = pagoda_screen_pixel(NAME "-driver", 0, 0, &(uint32_t){ 0 });
	pt_check(!ret, "the first dump is still there: %s", pagoda_screen_strerror(ret));
	check_refused("pixel " NAME " x 0");
	if (was_bound)
		bind(bdf);
	return pt_exit();
}
