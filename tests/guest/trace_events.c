// SPDX-License-Identifier: MIT
/*
 * The driver's tracepoints fire where data moves: allocation creation, the
 * paging engine's clear, an eviction when VRAM is full, and the submit and
 * retirement of the kernel jobs behind them. Needs a kernel with tracing
 * (the stock one); skipped (77) elsewhere.
 */
#include <sys/mount.h>

#include <libpagoda.h>

#include "pagoda_test.h"

#define TRACING		"/sys/kernel/tracing"
#define MIB		(1024ull * 1024)
#define SKIP		77

static int trace_has(const char *text)
{
	char line[512];
	int found = 0;
	FILE *f = fopen(TRACING "/trace", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	fclose(f);
	return found;
}

int main(void)
{
	struct pagoda_bo_desc desc = {
		.size = 16 * MIB,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
	};
	struct pagoda_bo bos[32];
	unsigned int n, count;
	struct pagoda_dev dev;
	uint64_t vram = 0;
	int ret;

	if (access(TRACING "/trace", F_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	if (access(TRACING "/events/pagoda/enable", F_OK)) {
		printf("skipped: no tracing in this kernel, or no pagoda events\n");
		return access(TRACING "/trace", F_OK) ? SKIP : pt_check(0, "pagoda events exist");
	}
	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node: %s", strerror(-ret)) ||
	    !pt_check(!pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram), "VRAM size"))
		return pt_exit();
	pt_check(!pt_write_file(TRACING "/trace", ""), "clear the trace");
	pt_check(!pt_write_file(TRACING "/events/pagoda/enable", "1"), "enable pagoda events");

	/* past VRAM by two allocations: the first ones are evicted */
	count = vram / desc.size + 2;
	if (count > 32)
		count = 32;
	for (n = 0; n < count; n++)
		if (pagoda_bo_create(&dev, &desc, &bos[n]))
			break;
	pt_write_file(TRACING "/events/pagoda/enable", "0");
	pt_check(n == count, "%u allocations of 16 MiB over %llu MiB of VRAM", n,
		 (unsigned long long)(vram / MIB));

	pt_check(trace_has("pagoda_bo_create:"), "pagoda_bo_create traced");
	pt_check(trace_has(" clear"), "pagoda_bo_move traced the paging engine's clear");
	pt_check(trace_has("segment 1 -> 0 size=16777216 evict"), "pagoda_bo_move traced an eviction");
	pt_check(trace_has("pagoda_job_submit: engine=0"), "pagoda_job_submit traced");
	pt_check(trace_has("pagoda_job_retire: engine=0"), "pagoda_job_retire traced");
	while (n--)
		pagoda_bo_free(&dev, &bos[n]);
	pagoda_close(&dev);
	return pt_exit();
}
