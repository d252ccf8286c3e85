// SPDX-License-Identifier: MIT
/*
 * Interrupts raised by the device reach the driver's handler, with MSI-X
 * (the paging and fault vectors) or, under pci=nomsi, INTx:
 *  - the paging engine's: a new VRAM allocation is cleared by a paging job
 *    of the driver, too long for the doorbell's first slice (a job that
 *    slice finishes raises none: DOORBELL_POLL), whose completion
 *    interrupt signals its fence (the CPU mapping waits for it);
 *  - the fault vector's: the driver runs a paging job that faults, on its
 *    own ring (debugfs "paging_fault", pt_paging_fault()). The handler
 *    must drain the fault queue, keep the record in the driver's fault
 *    log (debugfs "faults": its kernel-log line is rate-limited, and a
 *    program before may have used up the burst), fail that job, resume
 *    the kernel context so that the next job runs, and leave no
 *    interrupt pending.
 * The test only reads the device's registers.
 */
#include "pagoda_test.h"

/*
 * The driver's fault log (debugfs "faults"): the records it handled since
 * probe, and in @last the line of the newest one.
 */
static long long fault_log(char *last, size_t len)
{
	char path[PT_PATH_MAX], line[256];
	long long count = -1;
	FILE *f;

	last[0] = 0;
	if (!pt_debugfs_dir(path, sizeof(path)))
		return -1;
	strncat(path, "/faults", sizeof(path) - strlen(path) - 1);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld faults\n", &count) != 1)
		count = -1;
	while (fgets(line, sizeof(line), f))
		snprintf(last, len, "%.*s", (int)strcspn(line, "\n"), line);
	fclose(f);
	return count;
}

/*
 * A paging job of the driver that outlasts its doorbell's first slice (at
 * most 4 MiB of data: hardware.md, Execution) raises its interrupt.
 */
static void check_paging_interrupt(void)
{
	const char *line = pt_cmdline_has("pci=nomsi") ? "pagoda" : "pagoda-paging";
	struct pagoda_bo_desc desc = {
		.size = 16 << 20,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
	};
	long long before = pt_irq_count(line);
	struct pagoda_dev dev;
	struct pagoda_bo bo;
	int ret, waited;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node: %s", strerror(-ret)))
		return;
	ret = pagoda_bo_create(&dev, &desc, &bo);
	if (pt_check(!ret, "a VRAM allocation (cleared by a paging job): %s", strerror(-ret))) {
		ret = pagoda_bo_map(&dev, &bo);
		pt_check(!ret && !((volatile uint32_t *)bo.map)[0],
			 "mapped after the clear's fence signalled: %s", strerror(-ret));
		pagoda_bo_free(&dev, &bo);
	}
	waited = pt_wait_irq(line, before);
	pt_check(pt_irq_count(line) > before, "paging interrupt on \"%s\": %lld -> %lld (%d ms)",
		 line, before, pt_irq_count(line), waited);
	pagoda_close(&dev);
}

int main(void)
{
	const char *line = pt_cmdline_has("pci=nomsi") ? "pagoda" : "pagoda-fault";
	volatile uint32_t *mmio;
	char bdf[PT_NAME_MAX], record[256];
	long long before, faults;
	int waited;

	mmio = pt_find_mmio(bdf, sizeof(bdf));
	if (!mmio)
		return pt_exit();

	faults = fault_log(record, sizeof(record));
	before = pt_irq_count(line);
	pt_check(before >= 0, "\"%s\" in /proc/interrupts: %lld so far", line, before);
	waited = pt_paging_fault(line);
	pt_check(waited >= 0, "a faulting paging job failed, the next ran, interrupt on \"%s\": %lld -> %lld (%d ms)",
		 line, before, pt_irq_count(line), waited);
	pt_check(pt_reg(mmio, PAGODA_REG_FAULT_COUNT) == 0,
		 "the handler drained the fault queue (FAULT_COUNT %u)",
		 pt_reg(mmio, PAGODA_REG_FAULT_COUNT));
	pt_check(!(pt_reg(mmio, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT),
		 "fault interrupt acknowledged (INT_STATUS 0x%x)",
		 pt_reg(mmio, PAGODA_REG_INT_STATUS));
	pt_check(faults >= 0 && fault_log(record, sizeof(record)) > faults &&
		 !strncmp(record, "context 0 engine 0 code 5 ", 26),
		 "the handler recorded the paging engine's OUT_OF_SEGMENT record: %s", record);

	check_paging_interrupt();
	return pt_exit();
}
