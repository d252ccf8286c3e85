// SPDX-License-Identifier: MIT
/*
 * Every DRM_IOCTL_PAGODA_GET_PARAM value matches what the device reports by
 * a route that bypasses the driver: registers read through the sysfs BAR0
 * mapping, the PCI IDs and BAR2 size from sysfs, and the vram-size device
 * property when scripts/run-guest.sh passed one (pagoda_guest.device= on
 * the kernel command line).
 */
#include <ctype.h>

#include "pagoda_test.h"

/* vram-size from the -device options, in bytes; 0 when not given. */
static uint64_t vram_size_property(void)
{
	char cmdline[4096], *opt, *end;
	uint64_t size;
	FILE *f;

	f = fopen("/proc/cmdline", "r");
	if (!f || !fgets(cmdline, sizeof(cmdline), f)) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	opt = strstr(cmdline, "pagoda_guest.device=");
	if (!opt)
		return 0;
	opt = strstr(opt, "vram-size=");
	if (!opt)
		return 0;
	size = strtoull(opt + strlen("vram-size="), &end, 0);
	/* QEMU size suffixes, as the property accepts them. */
	switch (toupper((unsigned char)*end)) {
	case 'T':
		size <<= 10;
		/* fall through */
	case 'G':
		size <<= 10;
		/* fall through */
	case 'M':
		size <<= 10;
		/* fall through */
	case 'K':
		size <<= 10;
	}
	return size;
}

static void check_param(int fd, uint32_t param, const char *name, uint64_t want)
{
	uint64_t value = 0;
	int ret;

	ret = pt_get_param(fd, param, &value);
	if (ret) {
		pt_fail("GET_PARAM %s: %s", name, strerror(-ret));
		return;
	}
	pt_check(value == want, "GET_PARAM %s = 0x%llx (device: 0x%llx)", name,
		 (unsigned long long)value, (unsigned long long)want);
}

static uint64_t seg_size(volatile uint32_t *mmio, unsigned int id)
{
	return (uint64_t)pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_HI) << 32 |
	       pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_LO);
}

int main(void)
{
	volatile uint32_t *mmio;
	uint64_t vendor, device, vram, bar2, prop;
	char bdf[PT_NAME_MAX], path[PT_PATH_MAX];
	int fd;

	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0)
		return pt_exit();

	mmio = pt_map_mmio(bdf);
	if (!pt_check(mmio != NULL, "map BAR0 of %s through sysfs: %s", bdf,
		      mmio ? "done" : strerror(errno)))
		return pt_exit();

	pt_check(pt_reg(mmio, PAGODA_REG_ID) == PAGODA_ID, "register ID reads 0x%08x",
		 pt_reg(mmio, PAGODA_REG_ID));
	check_param(fd, DRM_PAGODA_PARAM_CHIP_ID, "CHIP_ID", pt_reg(mmio, PAGODA_REG_ID));
	check_param(fd, DRM_PAGODA_PARAM_REVISION, "REVISION",
		    pt_reg(mmio, PAGODA_REG_REVISION));
	check_param(fd, DRM_PAGODA_PARAM_CAPS, "CAPS", pt_reg(mmio, PAGODA_REG_CAPS));
	vram = (uint64_t)pt_reg(mmio, PAGODA_REG_VRAM_SIZE_HI) << 32 |
	       pt_reg(mmio, PAGODA_REG_VRAM_SIZE_LO);
	check_param(fd, DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM_SIZE", vram);
	check_param(fd, DRM_PAGODA_PARAM_NUM_SEGMENTS, "NUM_SEGMENTS",
		    pt_reg(mmio, PAGODA_REG_NUM_SEGMENTS));
	check_param(fd, DRM_PAGODA_PARAM_NUM_ENGINES, "NUM_ENGINES",
		    pt_reg(mmio, PAGODA_REG_NUM_ENGINES));
	check_param(fd, DRM_PAGODA_PARAM_NUM_CONTEXTS, "NUM_CONTEXTS",
		    pt_reg(mmio, PAGODA_REG_NUM_CONTEXTS));

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/vendor", bdf);
	if (pt_check(!pt_read_u64(path, &vendor), "read %s", path))
		check_param(fd, DRM_PAGODA_PARAM_PCI_VENDOR, "PCI_VENDOR", vendor);
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/device", bdf);
	if (pt_check(!pt_read_u64(path, &device), "read %s", path))
		check_param(fd, DRM_PAGODA_PARAM_PCI_DEVICE, "PCI_DEVICE", device);

	check_param(fd, DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, "HIDDEN_VRAM_SIZE",
		    seg_size(mmio, PAGODA_SEG_VRAM_HIDDEN));
	check_param(fd, DRM_PAGODA_PARAM_APERTURE_SIZE, "APERTURE_SIZE",
		    seg_size(mmio, PAGODA_SEG_APERTURE));
	check_param(fd, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, "SEGMENT_PAGE_SIZE",
		    pt_reg(mmio, PAGODA_REG_SEG(PAGODA_SEG_VRAM) + PAGODA_SEG_PAGE_SIZE));
	/* the host aperture is exactly BAR4 */
	check_param(fd, DRM_PAGODA_PARAM_HOST_APERTURE_SIZE, "HOST_APERTURE_SIZE",
		    pt_bar_size(bdf, PAGODA_BAR_HOST_APERTURE));

	/* Segment 1 is exactly the CPU-visible window of BAR2. */
	bar2 = pt_bar_size(bdf, PAGODA_BAR_VRAM);
	check_param(fd, DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM_SIZE vs BAR2 size", bar2);

	prop = vram_size_property();
	if (prop)
		check_param(fd, DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM_SIZE vs vram-size property",
			    prop);
	else
		printf("no vram-size property given: VRAM size checked against BAR2 only\n");

	close(fd);
	return pt_exit();
}
