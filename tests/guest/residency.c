// SPDX-License-Identifier: MIT
/*
 * MakeResident and Evict through DRM_IOCTL_PAGODA_RESIDENCY: resident
 * allocations are kept where the GPU reaches them and never evicted,
 * counted per file; a budget refuses a MakeResident past it with the bytes
 * to trim and changes nothing; once evicted (count 0) an allocation is
 * evictable again and keeps its bytes when it is; every bad argument gets
 * its errno and changes nothing.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define MIB		(1024ull * 1024)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

static struct pagoda_dev dev;

static int residency(uint32_t op, const uint32_t *handles, uint32_t count, uint64_t *trim)
{
	struct drm_pagoda_residency args = {
		.handles = (uintptr_t)handles, .count = count, .op = op,
	};
	int ret = ioctl(dev.fd, DRM_IOCTL_PAGODA_RESIDENCY, &args) ? -errno : 0;

	if (trim)
		*trim = args.bytes_to_trim;
	return ret;
}

static void info(struct pagoda_bo *bo, struct drm_pagoda_gem_info *out)
{
	memset(out, 0xff, sizeof(*out));
	pagoda_bo_info(&dev, bo->handle, out);
}

static int create(uint64_t size, uint32_t segments, struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = segments, .preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
	};

	return pagoda_bo_create(&dev, &desc, bo);
}

static void expect(int ret, int want, const char *what)
{
	pt_check(ret == want, "%s: %s (want %s)", what, strerror(-ret), strerror(-want));
}

int main(void)
{
	struct drm_pagoda_set_budget budget = { .budget = 8 * MIB };
	struct pagoda_bo a, b, c, fill[8];
	struct drm_pagoda_gem_info ia;
	uint64_t trim = 0, vram = 0, i;
	uint32_t h[3];
	unsigned int n;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open: %s", strerror(-ret)) ||
	    pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram) ||
	    create(4 * MIB, SEG(VRAM) | SEG(SYSTEM), &a) ||
	    create(4 * MIB, SEG(VRAM) | SEG(SYSTEM), &b) ||
	    create(4 * MIB, SEG(VRAM) | SEG(SYSTEM), &c) || pagoda_bo_map(&dev, &a))
		return pt_exit();
	for (i = 0; i < a.size / 8; i++)
		((uint64_t *)a.map)[i] = i * 0x9e3779b97f4a7c15ull;

	pt_check(!ioctl(dev.fd, DRM_IOCTL_PAGODA_SET_BUDGET, &budget) && !budget.budget,
		 "budget 8 MiB (no limit before)");

	h[0] = a.handle;
	h[1] = b.handle;
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 2, NULL), 0, "make 2 x 4 MiB resident");
	info(&a, &ia);
	pt_check(ia.residency == 1 && ia.segment == DRM_PAGODA_SEGMENT_VRAM,
		 "resident once, in VRAM (residency %u, segment %u)", ia.residency, ia.segment);
	h[0] = c.handle;
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 1, &trim), -ENOSPC, "a third past the budget");
	pt_check(trim == 4 * MIB, "bytes to trim: %llu (want 4 MiB)", (unsigned long long)trim);
	info(&c, &ia);
	pt_check(ia.residency == 0, "the refused one is not resident");
	h[0] = b.handle;
	expect(residency(DRM_PAGODA_EVICT, h, 1, NULL), 0, "evict one");
	h[0] = c.handle;
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 1, NULL), 0, "then the third fits");

	/* resident allocations stay in VRAM whatever else wants it */
	for (n = 0; n < 4; n++)
		if (create(vram / 4, SEG(VRAM) | SEG(SYSTEM), &fill[n]))
			break;
	info(&a, &ia);
	pt_check(n == 4 && ia.segment == DRM_PAGODA_SEGMENT_VRAM,
		 "after filling VRAM again, the resident one is still there (segment %u)", ia.segment);
	while (n--)
		pagoda_bo_free(&dev, &fill[n]);

	/* evicted to count 0, it is evictable again, with its bytes */
	h[0] = a.handle;
	h[1] = c.handle;
	expect(residency(DRM_PAGODA_EVICT, h, 2, NULL), 0, "evict both");
	/*
	 * VRAM-only allocations, least recently used evicted first: sooner or
	 * later it is its turn.
	 */
	ia.segment = DRM_PAGODA_SEGMENT_VRAM;
	for (n = 0; n < 8 && ia.segment == DRM_PAGODA_SEGMENT_VRAM; n++) {
		if (create(vram / 4, SEG(VRAM), &fill[n]))
			break;
		info(&a, &ia);
	}
	pt_check(ia.segment == DRM_PAGODA_SEGMENT_SYSTEM,
		 "no longer resident, it was evicted after %u allocations of %llu MiB of VRAM",
		 n, (unsigned long long)(vram / 4 / MIB));
	for (i = 0; i < a.size / 8 && ((uint64_t *)a.map)[i] == i * 0x9e3779b97f4a7c15ull; i++)
		;
	pt_check(i == a.size / 8, "its bytes came along");
	while (n--)
		pagoda_bo_free(&dev, &fill[n]);

	/* bad arguments change nothing */
	h[0] = a.handle;
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 0, NULL), -EINVAL, "count 0");
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, DRM_PAGODA_RESIDENCY_MAX + 1, NULL),
	       -EINVAL, "count past the maximum");
	expect(residency(7, h, 1, NULL), -EINVAL, "unknown op");
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, NULL, 1, NULL), -EFAULT, "handles at NULL");
	h[1] = 0xdead;
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 2, NULL), -ENOENT, "an unknown handle");
	info(&a, &ia);
	pt_check(ia.residency == 0, "the known handle beside it was not made resident");
	expect(residency(DRM_PAGODA_EVICT, h, 1, NULL), -EINVAL, "evict what is not resident");
	expect(residency(DRM_PAGODA_MAKE_RESIDENT, h, 1, NULL), 0, "resident once");
	h[1] = a.handle;
	expect(residency(DRM_PAGODA_EVICT, h, 2, NULL), -EINVAL, "evict it twice");
	info(&a, &ia);
	pt_check(ia.residency == 1, "still resident once");

	/* closing a resident allocation's handle releases its residency */
	pagoda_bo_free(&dev, &a);
	budget.budget = 0;
	pt_check(!ioctl(dev.fd, DRM_IOCTL_PAGODA_SET_BUDGET, &budget) && budget.resident == 0,
		 "nothing resident after closing it (%llu bytes)",
		 (unsigned long long)budget.resident);
	pagoda_bo_free(&dev, &b);
	pagoda_bo_free(&dev, &c);
	pagoda_close(&dev);
	return pt_exit();
}
