// SPDX-License-Identifier: MIT
/*
 * A PCI function reset while the driver is bound and a file is open
 * (echo 1 > /sys/bus/pci/devices/<bdf>/reset, as an administrator or a
 * hypervisor would): the device comes back at its power-on state and the
 * driver restores it through its reset_prepare/reset_done handlers. After
 * each reset the open file still works, the driver has re-enabled the
 * interrupt sources and the paging ring, and the fault interrupt of a
 * paging job that faults (debugfs "paging_fault") reaches the handler
 * again.
 */
#include "pagoda_test.h"

#define RESETS		3
#define SCRATCH_MARK	0x5eed1234u

static void reset_once(const char *bdf, volatile uint32_t *mmio, int fd, int round)
{
	const char *line = pt_cmdline_has("pci=nomsi") ? "pagoda" : "pagoda-fault";
	char path[PT_PATH_MAX];
	uint64_t value = 0;
	int ret, waited;

	/* SCRATCH is not the driver's: reading 0 after shows the reset happened. */
	pt_wreg(mmio, PAGODA_REG_SCRATCH, SCRATCH_MARK);
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/reset", bdf);
	ret = pt_write_file(path, "1");
	if (!pt_check(!ret, "reset %d: write 1 to %s: %s", round, path,
		      ret ? strerror(-ret) : "done"))
		return;

	pt_check(pt_reg(mmio, PAGODA_REG_SCRATCH) == 0,
		 "reset %d: the device was reset (SCRATCH 0x%x)", round,
		 pt_reg(mmio, PAGODA_REG_SCRATCH));
	pt_check((pt_reg(mmio, PAGODA_REG_INT_ENABLE) & ~PAGODA_INT_VBLANK) == PAGODA_INT_ALL,
		 "reset %d: the driver re-enabled interrupts (INT_ENABLE 0x%x)", round,
		 pt_reg(mmio, PAGODA_REG_INT_ENABLE));
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(!ret && value == PAGODA_ID, "reset %d: GET_PARAM on the open file: 0x%llx (%s)",
		 round, (unsigned long long)value, ret ? strerror(-ret) : "ok");
	waited = pt_paging_fault(line);
	pt_check(waited >= 0,
		 "reset %d: the paging ring runs, its fault interrupt reaches the handler (%d ms)",
		 round, waited);
	pt_check(pt_reg(mmio, PAGODA_REG_FAULT_COUNT) == 0,
		 "reset %d: the handler drained the fault queue", round);
}

int main(void)
{
	char bdf[PT_NAME_MAX], path[PT_PATH_MAX], methods[256] = "";
	volatile uint32_t *mmio;
	FILE *f;
	int fd, i;

	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0)
		return pt_exit();
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/reset_method", bdf);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(methods, sizeof(methods), f))
			methods[0] = 0;
		fclose(f);
	}
	methods[strcspn(methods, "\n")] = 0;
	if (!pt_check(strstr(methods, "pm") != NULL,
		      "the function can be reset (reset methods: \"%s\")", methods))
		return pt_exit();

	mmio = pt_map_bar0(bdf, 1);
	if (!pt_check(mmio != NULL, "map BAR0 read-write"))
		return pt_exit();

	for (i = 1; i <= RESETS; i++)
		reset_once(bdf, mmio, fd, i);
	close(fd);
	return pt_exit();
}
