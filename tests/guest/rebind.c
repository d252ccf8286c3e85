// SPDX-License-Identifier: MIT
/*
 * The driver lets go of the device cleanly and takes it back: unbind it
 * through sysfs while a file is open (the file then fails with ENODEV, the
 * node disappears, interrupts are disabled and released), bind it again,
 * then unload and reload the module. Each time the render node comes back
 * as renderD128, which also shows that the previous DRM device was freed:
 * its minor would still be taken otherwise.
 */
#include <sys/syscall.h>

#include "pagoda_test.h"

#define NODE		"/dev/dri/renderD128"
#define CYCLES		2

static void check_bound(volatile uint32_t *mmio, const char *when)
{
	uint64_t value = 0;
	int fd, ret;

	if (!pt_check(pt_wait_path(NODE, 1), "%s: %s is back", when, NODE))
		return;
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "%s: open %s: %s", when, NODE, fd >= 0 ? "done" : strerror(errno)))
		return;
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(!ret && value == PAGODA_ID, "%s: GET_PARAM CHIP_ID = 0x%llx (%s)", when,
		 (unsigned long long)value, ret ? strerror(-ret) : "ok");
	pt_check(pt_reg(mmio, PAGODA_REG_INT_ENABLE) == PAGODA_INT_ALL,
		 "%s: interrupts enabled (INT_ENABLE 0x%x)", when,
		 pt_reg(mmio, PAGODA_REG_INT_ENABLE));
	close(fd);
}

static void check_unbound(const char *bdf, volatile uint32_t *mmio, const char *when)
{
	char path[PT_PATH_MAX];

	pt_check(pt_wait_path(NODE, 0), "%s: %s is gone", when, NODE);
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/driver", bdf);
	pt_check(pt_wait_path(path, 0), "%s: %s has no driver", when, bdf);
	pt_check(pt_reg(mmio, PAGODA_REG_INT_ENABLE) == 0,
		 "%s: interrupts disabled (INT_ENABLE 0x%x)", when,
		 pt_reg(mmio, PAGODA_REG_INT_ENABLE));
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/msi_irqs", bdf);
	pt_check(access(path, F_OK), "%s: MSI-X vectors released", when);
}

static void unbind_bind(const char *bdf, volatile uint32_t *mmio)
{
	uint64_t value = 0;
	int fd, ret;

	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "open %s before unbind", NODE))
		return;

	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf);
	if (!pt_check(!ret, "unbind %s: %s", bdf, ret ? strerror(-ret) : "done")) {
		close(fd);
		return;
	}
	check_unbound(bdf, mmio, "after unbind");
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -ENODEV, "GET_PARAM on a file opened before unbind: %s (want %s)",
		 ret ? strerror(-ret) : "succeeded", strerror(ENODEV));
	/* The last reference to the unplugged DRM device goes here. */
	close(fd);

	ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);
	if (pt_check(!ret, "bind %s: %s", bdf, ret ? strerror(-ret) : "done"))
		check_bound(mmio, "after bind");
}

static void unload_reload(const char *bdf, volatile uint32_t *mmio)
{
	int fd, ret;

	ret = syscall(SYS_delete_module, "pagoda", O_NONBLOCK) ? -errno : 0;
	if (!pt_check(!ret, "rmmod pagoda: %s", ret ? strerror(-ret) : "done"))
		return;
	pt_check(access("/sys/module/pagoda", F_OK), "module gone from /sys/module");
	check_unbound(bdf, mmio, "after rmmod");

	fd = open(PT_MODULE_PATH, O_RDONLY | O_CLOEXEC);
	if (!pt_check(fd >= 0, "open %s", PT_MODULE_PATH))
		return;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	if (pt_check(!ret, "insmod %s: %s", PT_MODULE_PATH, ret ? strerror(-ret) : "done"))
		check_bound(mmio, "after insmod");
}

int main(void)
{
	volatile uint32_t *mmio;
	char bdf[PT_NAME_MAX];
	int i;

	if (!pt_check(!pt_find_pci(bdf, sizeof(bdf)), "Pagoda PCI device present"))
		return pt_exit();
	mmio = pt_map_mmio(bdf);
	if (!pt_check(mmio != NULL, "map BAR0 of %s through sysfs: %s", bdf,
		      mmio ? "done" : strerror(errno)))
		return pt_exit();

	for (i = 0; i < CYCLES; i++) {
		printf("cycle %d of %d\n", i + 1, CYCLES);
		unbind_bind(bdf, mmio);
		unload_reload(bdf, mmio);
	}
	return pt_exit();
}
