// SPDX-License-Identifier: MIT
/*
 * pagoda-info: print what the Pagoda driver reports about each Pagoda GPU.
 *
 *   pagoda-info [RENDER_NODE]
 *
 * Without an argument, every DRM device with Pagoda's PCI IDs is shown.
 * Exits 1 when there is no device or a query fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include <pagoda/pagoda_hw.h>
#include <uapi/drm/pagoda_drm.h>

#define MAX_DEVICES	16
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const struct {
	uint32_t param;
	const char *name;
} params[] = {
	{ DRM_PAGODA_PARAM_CHIP_ID, "chip ID" },
	{ DRM_PAGODA_PARAM_REVISION, "revision" },
	{ DRM_PAGODA_PARAM_CAPS, "caps" },
	{ DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM" },
	{ DRM_PAGODA_PARAM_NUM_SEGMENTS, "segments" },
	{ DRM_PAGODA_PARAM_NUM_ENGINES, "engines" },
	{ DRM_PAGODA_PARAM_NUM_CONTEXTS, "contexts" },
	{ DRM_PAGODA_PARAM_PCI_VENDOR, "PCI vendor" },
	{ DRM_PAGODA_PARAM_PCI_DEVICE, "PCI device" },
	{ DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, "hidden VRAM" },
	{ DRM_PAGODA_PARAM_APERTURE_SIZE, "aperture" },
	{ DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, "segment page size" },
	{ DRM_PAGODA_PARAM_HOST_APERTURE_SIZE, "host aperture" },
	{ DRM_PAGODA_PARAM_VA_BITS, "VA bits" },
	{ DRM_PAGODA_PARAM_MMU_LEVELS, "page-table levels" },
	{ DRM_PAGODA_PARAM_VA_START, "lowest VA" },
	{ DRM_PAGODA_PARAM_NUM_ADAPTERS, "GPUs (linked adapter)" },
};

static const struct {
	uint32_t bit;
	const char *name;
} caps[] = {
	{ PAGODA_CAPS_GPUMMU, "gpummu" },
	{ PAGODA_CAPS_HOST_APERTURE, "host-aperture" },
	{ PAGODA_CAPS_APERTURE_SEGMENT, "aperture-segment" },
	{ PAGODA_CAPS_PHYSICAL_MODE, "physical-mode" },
	{ PAGODA_CAPS_ENGINE_RESET, "engine-reset" },
};

static void print_value(uint32_t param, uint64_t value)
{
	unsigned int i;

	switch (param) {
	case DRM_PAGODA_PARAM_CHIP_ID:
	case DRM_PAGODA_PARAM_PCI_VENDOR:
	case DRM_PAGODA_PARAM_PCI_DEVICE:
		printf("0x%04" PRIx64, value);
		break;
	case DRM_PAGODA_PARAM_REVISION:
		printf("%" PRIu64 ".%" PRIu64, value >> 16, value & 0xffff);
		break;
	case DRM_PAGODA_PARAM_CAPS:
		printf("0x%08" PRIx64, value);
		for (i = 0; i < ARRAY_SIZE(caps); i++)
			if (value & caps[i].bit)
				printf(" %s", caps[i].name);
		break;
	case DRM_PAGODA_PARAM_VRAM_SIZE:
		printf("%" PRIu64 " MiB (%" PRIu64 " bytes)", value >> 20, value);
		break;
	default:
		printf("%" PRIu64, value);
	}
	putchar('\n');
}

/* The other GPUs of a linked adapter: GET_PARAM's adapter 1 and up. */
static void show_link(int fd)
{
	static const uint32_t each[] = {
		DRM_PAGODA_PARAM_LINK_INDEX, DRM_PAGODA_PARAM_VRAM_SIZE,
		DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, DRM_PAGODA_PARAM_APERTURE_SIZE,
	};
	struct drm_pagoda_get_param args = { .param = DRM_PAGODA_PARAM_NUM_ADAPTERS };
	uint64_t value[ARRAY_SIZE(each)];
	uint32_t a, n, i;

	if (drmIoctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args))
		return;
	n = args.value;
	for (a = 0; a < n; a++) {
		for (i = 0; i < ARRAY_SIZE(each); i++) {
			args = (struct drm_pagoda_get_param){ .param = each[i], .adapter = a };
			value[i] = drmIoctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args) ? 0 : args.value;
		}
		printf("  GPU %u        physical adapter %" PRIu64 ": VRAM %" PRIu64
		       " MiB, hidden VRAM %" PRIu64 " MiB, aperture %" PRIu64 " MiB\n",
		       a, value[0], value[1] >> 20, value[2] >> 20, value[3] >> 20);
	}
}

static int show(const char *node)
{
	struct drm_pagoda_get_param args;
	drmVersionPtr ver;
	unsigned int i;
	int fd, ret = 0;

	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "pagoda-info: %s: %s\n", node, strerror(errno));
		return 1;
	}

	ver = drmGetVersion(fd);
	if (!ver) {
		fprintf(stderr, "pagoda-info: %s: drmGetVersion: %s\n", node, strerror(errno));
		close(fd);
		return 1;
	}
	printf("%s\n  %-12s %s %d.%d.%d (%s)\n", node, "driver", ver->name,
	       ver->version_major, ver->version_minor, ver->version_patchlevel, ver->desc);
	if (strcmp(ver->name, "pagoda")) {
		fprintf(stderr, "pagoda-info: %s is driven by %s, not pagoda\n", node, ver->name);
		drmFreeVersion(ver);
		close(fd);
		return 1;
	}
	drmFreeVersion(ver);

	for (i = 0; i < ARRAY_SIZE(params); i++) {
		args = (struct drm_pagoda_get_param){ .param = params[i].param };
		printf("  %-12s ", params[i].name);
		if (drmIoctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args)) {
			printf("error: %s\n", strerror(errno));
			ret = 1;
			continue;
		}
		print_value(params[i].param, args.value);
	}
	show_link(fd);

	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	drmDevicePtr devs[MAX_DEVICES];
	int n, i, found = 0, ret = 0;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: pagoda-info [RENDER_NODE]\n");
		return 2;
	}
	if (argc == 2)
		return show(argv[1]);

	n = drmGetDevices2(0, devs, MAX_DEVICES);
	if (n < 0) {
		fprintf(stderr, "pagoda-info: drmGetDevices2: %s\n", strerror(-n));
		return 1;
	}
	for (i = 0; i < n; i++) {
		drmDevicePtr d = devs[i];

		if (d->bustype != DRM_BUS_PCI ||
		    d->deviceinfo.pci->vendor_id != PAGODA_PCI_VENDOR_ID ||
		    d->deviceinfo.pci->device_id != PAGODA_PCI_DEVICE_ID ||
		    !(d->available_nodes & (1 << DRM_NODE_RENDER)))
			continue;
		printf("%sPagoda GPU at PCI %04x:%02x:%02x.%x, ", found ? "\n" : "",
		       d->businfo.pci->domain, d->businfo.pci->bus, d->businfo.pci->dev,
		       d->businfo.pci->func);
		found++;
		ret |= show(d->nodes[DRM_NODE_RENDER]);
	}
	drmFreeDevices(devs, n);

	if (!found) {
		fprintf(stderr, "pagoda-info: no Pagoda GPU with a render node found\n");
		return 1;
	}
	return ret;
}
