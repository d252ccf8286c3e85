// SPDX-License-Identifier: MIT
/*
 * Who is evicted when VRAM is full, through the real device: allocations
 * not needed (DONTNEED) go first and lose their contents instead of being
 * copied, then the lowest priority class, least recently used first
 * (made resident counts as a use); higher classes stay. Pinned (resident)
 * allocations are never chosen: with VRAM full of them a VRAM-only
 * allocation fails with ENOMEM, one allowed in system memory lands there.
 * WILLNEED tells whether the contents survived.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
/* VRAM is filled with this many allocations of equal size */
#define SLICES		8

static uint64_t slice;

static int create(struct pagoda_dev *dev, uint32_t segments, uint32_t priority,
		  struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = slice, .segments = segments,
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM, .priority = priority,
	};

	return pagoda_bo_create(dev, &desc, bo);
}

static unsigned int segment_of(struct pagoda_dev *dev, struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_info info;

	return pagoda_bo_info(dev, bo->handle, &info) ? ~0u : info.segment;
}

static void fill(struct pagoda_bo *bo, uint32_t value)
{
	uint32_t *p = bo->map;
	uint64_t i;

	for (i = 0; i < bo->size / 4; i++)
		p[i] = value;
}

/* Words of @bo that are not @value. */
static uint64_t count_not(struct pagoda_bo *bo, uint32_t value)
{
	uint32_t *p = bo->map;
	uint64_t i, bad = 0;

	for (i = 0; i < bo->size / 4; i++)
		bad += p[i] != value;
	return bad;
}

static void free_all(struct pagoda_dev *dev, struct pagoda_bo *bos, unsigned int n)
{
	while (n--)
		pagoda_bo_free(dev, &bos[n]);
}

/*
 * VRAM full: four HIGH, then four LOW (the first LOW used again since). A
 * NORMAL allocation needs one slice: the least recently used LOW one goes.
 */
static void test_priority_classes(struct pagoda_dev *dev)
{
	struct pagoda_bo bos[SLICES], extra;
	unsigned int i, n = 0, in_vram = 0;

	for (i = 0; i < SLICES; i++, n++)
		if (create(dev, SEG(VRAM) | SEG(SYSTEM),
			   i < SLICES / 2 ? DRM_PAGODA_PRIORITY_HIGH : DRM_PAGODA_PRIORITY_LOW,
			   &bos[i]))
			break;
	if (!pt_check(n == SLICES, "VRAM filled with %u allocations of %llu KiB", n,
		      (unsigned long long)(slice >> 10)))
		goto out;
	for (i = 0; i < SLICES; i++)
		in_vram += segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_VRAM;
	pt_check(in_vram == SLICES, "all %u in VRAM", in_vram);
	/* a use of the first LOW one: it is no longer the least recently used */
	pt_check(!pagoda_make_resident(dev, &bos[SLICES / 2].handle, 1, NULL) &&
		 !pagoda_evict(dev, &bos[SLICES / 2].handle, 1), "use the first LOW one");

	if (!pt_check(!create(dev, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_PRIORITY_NORMAL, &extra),
		      "one more, NORMAL"))
		goto out;
	pt_check(segment_of(dev, &extra) == DRM_PAGODA_SEGMENT_VRAM, "it got VRAM");
	for (i = 0; i < SLICES / 2; i++)
		pt_check(segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_VRAM,
			 "HIGH %u stays in VRAM", i);
	pt_check(segment_of(dev, &bos[SLICES / 2]) == DRM_PAGODA_SEGMENT_VRAM,
		 "the recently used LOW one stays in VRAM");
	pt_check(segment_of(dev, &bos[SLICES / 2 + 1]) == DRM_PAGODA_SEGMENT_SYSTEM,
		 "the least recently used LOW one was evicted");
	for (i = SLICES / 2 + 2; i < SLICES; i++)
		pt_check(segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_VRAM,
			 "LOW %u stays in VRAM", i);
	pagoda_bo_free(dev, &extra);
out:
	free_all(dev, bos, n);
}

/*
 * VRAM full of LOW allocations but one HIGH marked DONTNEED: the next
 * allocation evicts that one, without its contents; WILLNEED says so, and
 * it reads zero. One marked DONTNEED and back without pressure keeps them.
 */
static void test_discard(struct pagoda_dev *dev)
{
	struct pagoda_bo bos[SLICES], extra;
	unsigned int i, n = 0;
	int retained = -1;
	long long discards;

	for (i = 0; i < SLICES; i++, n++)
		if (create(dev, SEG(VRAM) | SEG(SYSTEM),
			   i ? DRM_PAGODA_PRIORITY_LOW : DRM_PAGODA_PRIORITY_HIGH, &bos[i]) ||
		    pagoda_bo_map(dev, &bos[i]))
			break;
	if (!pt_check(n == SLICES, "VRAM filled with %u mapped allocations", n))
		goto out;
	for (i = 0; i < SLICES; i++)
		fill(&bos[i], 0xc0de0000 + i);

	pt_check(!pagoda_bo_madvise(dev, bos[1].handle, DRM_PAGODA_MADV_DONTNEED, NULL) &&
		 !pagoda_bo_madvise(dev, bos[1].handle, DRM_PAGODA_MADV_WILLNEED, &retained) &&
		 retained == 1, "DONTNEED then WILLNEED without pressure: retained %d", retained);
	pt_check(!count_not(&bos[1], 0xc0de0001), "and its contents are there");

	pt_check(!pagoda_bo_madvise(dev, bos[0].handle, DRM_PAGODA_MADV_DONTNEED, NULL),
		 "the HIGH one is not needed");
	discards = pt_debugfs_value("/sys/kernel/debug/dri/0/segments", "1 vram", " discards ");
	if (!pt_check(!create(dev, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_PRIORITY_LOW, &extra),
		      "one more"))
		goto out;
	pt_check(segment_of(dev, &extra) == DRM_PAGODA_SEGMENT_VRAM, "it got VRAM");
	pt_check(segment_of(dev, &bos[0]) == DRM_PAGODA_SEGMENT_SYSTEM,
		 "the one not needed was evicted, before every LOW one");
	for (i = 1; i < SLICES; i++)
		pt_check(segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_VRAM,
			 "LOW %u stays in VRAM", i);
	pt_check(pt_debugfs_value("/sys/kernel/debug/dri/0/segments", "1 vram", " discards ") ==
		 discards + 1, "debugfs counts one discard more");
	pt_check(!pagoda_bo_madvise(dev, bos[0].handle, DRM_PAGODA_MADV_WILLNEED, &retained) &&
		 retained == 0, "WILLNEED: contents not retained (%d)", retained);
	pt_check(!count_not(&bos[0], 0), "it reads zero");
	for (i = 1; i < SLICES; i++)
		pt_check(!count_not(&bos[i], 0xc0de0000 + i), "LOW %u kept its contents", i);
	pagoda_bo_free(dev, &extra);
out:
	free_all(dev, bos, n);
}

/* VRAM full of pinned allocations: nothing can be evicted. */
static void test_all_pinned(struct pagoda_dev *dev)
{
	struct pagoda_bo bos[SLICES], extra;
	unsigned int i, n = 0;
	int ret;

	for (i = 0; i < SLICES; i++, n++)
		if (create(dev, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_PRIORITY_LOW, &bos[i]) ||
		    pagoda_make_resident(dev, &bos[i].handle, 1, NULL))
			break;
	if (!pt_check(n == SLICES, "VRAM filled with %u resident allocations", n))
		goto out;
	ret = create(dev, SEG(VRAM), DRM_PAGODA_PRIORITY_HIGH, &extra);
	pt_check(ret == -ENOMEM, "a HIGH VRAM-only one: %s (want %s)", strerror(-ret),
		 strerror(ENOMEM));
	if (!ret)
		pagoda_bo_free(dev, &extra);
	ret = create(dev, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_PRIORITY_HIGH, &extra);
	if (pt_check(!ret, "a HIGH one allowed in system memory: %s", strerror(-ret))) {
		pt_check(segment_of(dev, &extra) == DRM_PAGODA_SEGMENT_SYSTEM,
			 "it lands in system memory");
		pagoda_bo_free(dev, &extra);
	}
	for (i = 0; i < SLICES; i++)
		pt_check(segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_VRAM,
			 "resident %u stays in VRAM", i);
out:
	free_all(dev, bos, n);
}

/* VRAM the display's pinned console framebuffer holds, not evictable. */
static long long vram_pinned;

static long long vram_used(void)
{
	return pt_debugfs_value("/sys/kernel/debug/dri/0/segments", "1 vram", " used ");
}

/*
 * The checks count slices of VRAM: wait until allocations freed by the
 * programs before (their memory released once their last work is done)
 * have left it, all but what the display holds.
 */
static void wait_vram_empty(void)
{
	long long used = -1;
	int waited;

	for (waited = 0; waited < 5000; waited += 20) {
		used = vram_used();
		if (used <= vram_pinned)
			break;
		pt_sleep_ms(20);
	}
	pt_check(used <= vram_pinned, "VRAM empty at the start but for the display's %lld bytes (%lld used)",
		 vram_pinned, used);
}

int main(void)
{
	struct pagoda_dev dev;
	uint64_t vram = 0;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the Pagoda render node: %s", strerror(-ret)))
		return pt_exit();
	if (!pt_check(!pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram), "VRAM size"))
		return pt_exit();
	/*
	 * What eviction leaves in VRAM, once earlier programs' memory is
	 * released, is pinned: the console on screen.
	 */
	vram_pinned = -1;
	for (ret = 0; ret < 50; ret++) {
		long long used;

		pt_write_file("/sys/kernel/debug/dri/0/evict", "1");
		pt_sleep_ms(100);
		used = vram_used();
		if (used == vram_pinned)
			break;
		vram_pinned = used;
	}
	pt_check(vram_pinned >= 0 && (uint64_t)vram_pinned < vram / 4,
		 "%lld bytes of VRAM pinned (the display)", vram_pinned);
	slice = (vram - vram_pinned) / SLICES & ~((1ull << 20) - 1);
	wait_vram_empty();
	test_priority_classes(&dev);
	wait_vram_empty();
	test_discard(&dev);
	wait_vram_empty();
	test_all_pinned(&dev);
	pagoda_close(&dev);
	return pt_exit();
}
