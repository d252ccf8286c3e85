// SPDX-License-Identifier: MIT
/*
 * The driver's paging client builds every paging command the device has
 * and the device runs them: UPDATE_PAGE_TABLE (explicit entries, one
 * entry repeated with its address incremented), COPY_PTES, FLUSH_TLB and
 * SIGNAL_FENCE through the driver's self-test (debugfs "paging_selftest",
 * which reads the tables back). FILL, TRANSFER and MAP/UNMAP_APERTURE run
 * in moves, MAP_HOST_APERTURE in CPU faults on hidden VRAM (tests moves,
 * gem_alloc). The self-test also runs while allocations are cleared and
 * evicted, so that its jobs interleave with theirs.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define SELFTEST	"/sys/kernel/debug/dri/0/paging_selftest"
#define ROUNDS		20

int main(void)
{
	struct pagoda_bo_desc desc = {
		.size = 4 << 20,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
	};
	struct pagoda_dev dev;
	struct pagoda_bo bo;
	int ret, i, failed = 0;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node: %s", strerror(-ret)))
		return pt_exit();
	ret = pt_write_file(SELFTEST, "1");
	pt_check(!ret, "page table commands on an idle engine: %s", ret ? strerror(-ret) : "ok");

	for (i = 0; i < ROUNDS; i++) {
		/* a clear, then an eviction to system memory, queued on the engine */
		ret = pagoda_bo_create(&dev, &desc, &bo);
		if (!ret) {
			pt_write_file("/sys/kernel/debug/dri/0/evict", "1");
			ret = pt_write_file(SELFTEST, "1");
			failed += ret != 0;
			pagoda_bo_free(&dev, &bo);
		}
	}
	pt_check(!failed, "page table commands between moves: %d of %d rounds failed",
		 failed, ROUNDS);
	pagoda_close(&dev);
	return pt_exit();
}
