// SPDX-License-Identifier: MIT
/*
 * Moves between every pair of segments, through the real device: an
 * allocation written by the CPU is evicted from its segment (debugfs
 * "evict", as memory pressure would), evicted again from its eviction
 * segment, made resident again, and after each move reads back through the
 * same CPU mapping, wherever it went: BAR2 for VRAM, host aperture slots
 * for hidden VRAM, its pages for system memory. Physically accessed
 * allocations are mapped into the aperture segment whenever they are
 * resident in system memory and contiguous in memory segments; pinned
 * (resident) allocations stay where they are. Last, hidden VRAM is read and
 * written through the host aperture with more pages touched than it has
 * slots, in order and at random.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define MIB		(1024ull * 1024)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define ALL_SEGMENTS	(SEG(SYSTEM) | SEG(VRAM) | SEG(VRAM_HIDDEN))
#define DEBUGFS		"/sys/kernel/debug/dri/0"

static const char *const segment_names[] = { "system", "VRAM", "hidden VRAM", "aperture" };

/* A value no other (allocation, generation, offset) has. */
static uint64_t pattern(unsigned int id, unsigned int gen, uint64_t word)
{
	return (uint64_t)id << 56 ^ (uint64_t)gen << 40 ^ word ^ 0x0123456789abcdefull;
}

static void fill(struct pagoda_bo *bo, unsigned int id, unsigned int gen)
{
	uint64_t *p = bo->map, i;

	for (i = 0; i < bo->size / 8; i++)
		p[i] = pattern(id, gen, i);
}

/* Words that do not hold their pattern. */
static uint64_t check(struct pagoda_bo *bo, unsigned int id, unsigned int gen)
{
	uint64_t *p = bo->map, i, bad = 0;

	for (i = 0; i < bo->size / 8; i++)
		bad += p[i] != pattern(id, gen, i);
	return bad;
}

static const char *segment_name(unsigned int seg)
{
	return seg < ARRAY_SIZE(segment_names) ? segment_names[seg] : "?";
}

static int evict_segment(unsigned int seg)
{
	char text[8];

	snprintf(text, sizeof(text), "%u", seg);
	return pt_write_file(DEBUGFS "/evict", text);
}

struct move_case {
	const char *name;
	uint32_t flags;
	uint32_t preferred;
	uint32_t eviction;
};

/* Where an allocation of @c lands when it leaves a memory segment for system memory. */
static unsigned int system_segment(const struct move_case *c)
{
	return c->flags & DRM_PAGODA_BO_PHYSICAL ? DRM_PAGODA_SEGMENT_APERTURE :
						   DRM_PAGODA_SEGMENT_SYSTEM;
}

/* The allocation is in @want (and contiguous if physically accessed); its bytes are @gen's. */
static int expect_at(struct pagoda_dev *dev, const struct move_case *c, struct pagoda_bo *bo,
		     unsigned int id, unsigned int gen, unsigned int want, const char *after)
{
	struct drm_pagoda_gem_info info;
	uint64_t bad;
	int ret;

	ret = pagoda_bo_info(dev, bo->handle, &info);
	if (!pt_check(!ret && info.segment == want, "%s: after %s in %s (want %s)", c->name, after,
		      ret ? "?" : segment_name(info.segment), segment_name(want)))
		return 0;
	if (c->flags & DRM_PAGODA_BO_PHYSICAL && want != DRM_PAGODA_SEGMENT_SYSTEM)
		pt_check(info.contiguous, "%s: contiguous in %s at 0x%llx", c->name,
			 segment_name(want), (unsigned long long)info.offset);
	bad = check(bo, id, gen);
	return pt_check(!bad, "%s: after %s every byte reads back (%llu words differ)", c->name,
			after, (unsigned long long)bad);
}

static void test_move_case(struct pagoda_dev *dev, const struct move_case *c, unsigned int id)
{
	struct pagoda_bo_desc desc = {
		.size = 2 * MIB, .flags = c->flags, .segments = ALL_SEGMENTS,
		.preferred_segment = c->preferred, .eviction_segment = c->eviction,
	};
	unsigned int preferred = c->preferred == DRM_PAGODA_SEGMENT_SYSTEM ?
				 system_segment(c) : c->preferred;
	unsigned int evicted = c->eviction == DRM_PAGODA_SEGMENT_SYSTEM ?
			       system_segment(c) : c->eviction;
	struct pagoda_bo bo;
	unsigned int gen = 1;
	int ret;

	ret = pagoda_bo_create(dev, &desc, &bo);
	if (!pt_check(!ret, "%s: create: %s", c->name, strerror(-ret)))
		return;
	ret = pagoda_bo_map(dev, &bo);
	if (!pt_check(!ret, "%s: map: %s", c->name, strerror(-ret)))
		goto out;
	fill(&bo, id, gen);
	if (!expect_at(dev, c, &bo, id, gen, preferred, "creation"))
		goto out;

	/* pinned: an eviction of its segment leaves it there */
	if (preferred != DRM_PAGODA_SEGMENT_SYSTEM) {
		ret = pagoda_make_resident(dev, &bo.handle, 1, NULL);
		pt_check(!ret, "%s: make resident: %s", c->name, strerror(-ret));
		pt_check(!evict_segment(preferred), "%s: evict %s", c->name,
			 segment_name(preferred));
		expect_at(dev, c, &bo, id, gen, preferred, "eviction while resident");
		pagoda_evict(dev, &bo.handle, 1);
	}

	if (preferred != evicted) {
		pt_check(!evict_segment(preferred), "%s: evict %s", c->name, segment_name(preferred));
		if (!expect_at(dev, c, &bo, id, gen, evicted, "eviction"))
			goto out;
		fill(&bo, id, ++gen);
	}
	if (evicted != system_segment(c)) {
		pt_check(!evict_segment(evicted), "%s: evict %s", c->name, segment_name(evicted));
		if (!expect_at(dev, c, &bo, id, gen, system_segment(c), "second eviction"))
			goto out;
		fill(&bo, id, ++gen);
	}
	if (preferred == DRM_PAGODA_SEGMENT_APERTURE) {
		/* out of the aperture it is not resident: plain system pages */
		pt_check(!evict_segment(DRM_PAGODA_SEGMENT_APERTURE), "%s: evict the aperture",
			 c->name);
		if (!expect_at(dev, c, &bo, id, gen, DRM_PAGODA_SEGMENT_SYSTEM, "aperture eviction"))
			goto out;
		fill(&bo, id, ++gen);
	}

	ret = pagoda_make_resident(dev, &bo.handle, 1, NULL);
	if (pt_check(!ret, "%s: make resident again: %s", c->name, strerror(-ret))) {
		expect_at(dev, c, &bo, id, gen, preferred, "re-admission");
		pagoda_evict(dev, &bo.handle, 1);
	}
out:
	pagoda_bo_free(dev, &bo);
}

/*
 * Preferred and eviction segments chosen so that the moves of all cases
 * together cover every ordered pair of VRAM, hidden VRAM, system memory and
 * the aperture that the model allows.
 */
static void test_moves(struct pagoda_dev *dev)
{
	static const struct move_case cases[] = {
		{ "VRAM, evicted to hidden VRAM", 0, DRM_PAGODA_SEGMENT_VRAM,
		  DRM_PAGODA_SEGMENT_VRAM_HIDDEN },
		{ "hidden VRAM, evicted to VRAM", 0, DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
		  DRM_PAGODA_SEGMENT_VRAM },
		{ "VRAM, evicted to system", 0, DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_SYSTEM },
		{ "hidden VRAM, evicted to system", 0, DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
		  DRM_PAGODA_SEGMENT_SYSTEM },
		{ "system, evicted to system", 0, DRM_PAGODA_SEGMENT_SYSTEM,
		  DRM_PAGODA_SEGMENT_SYSTEM },
		{ "physical VRAM, evicted to hidden VRAM", DRM_PAGODA_BO_PHYSICAL,
		  DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_VRAM_HIDDEN },
		{ "physical hidden VRAM, evicted to system", DRM_PAGODA_BO_PHYSICAL,
		  DRM_PAGODA_SEGMENT_VRAM_HIDDEN, DRM_PAGODA_SEGMENT_SYSTEM },
		{ "physical system", DRM_PAGODA_BO_PHYSICAL, DRM_PAGODA_SEGMENT_SYSTEM,
		  DRM_PAGODA_SEGMENT_SYSTEM },
		{ "primary VRAM, evicted to system", DRM_PAGODA_BO_PRIMARY,
		  DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_SYSTEM },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		test_move_case(dev, &cases[i], i + 1);
}

/*
 * Hidden VRAM through the host aperture, touching more pages than it has
 * slots: slots are reused (least recently used first) and every byte is
 * right, in order and at random.
 */
static void test_host_aperture(struct pagoda_dev *dev)
{
	uint64_t aperture = 0, hidden = 0, words, i, bad = 0, state = 0x9e3779b97f4a7c15ull;
	struct pagoda_bo_desc desc = {
		.segments = SEG(VRAM_HIDDEN), .preferred_segment = DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
		.eviction_segment = DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
	};
	long long reuses;
	struct pagoda_bo bo;
	uint64_t *p;
	int ret;

	if (pagoda_query(dev, DRM_PAGODA_PARAM_HOST_APERTURE_SIZE, &aperture) ||
	    pagoda_query(dev, DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, &hidden)) {
		pt_fail("query the host aperture and hidden VRAM sizes");
		return;
	}
	desc.size = aperture * 2 + 3 * 65536;
	if (desc.size > hidden / 2) {
		printf("skip host aperture: %llu MiB of hidden VRAM for a %llu MiB aperture\n",
		       (unsigned long long)(hidden / MIB), (unsigned long long)(aperture / MIB));
		return;
	}
	ret = pagoda_bo_create(dev, &desc, &bo);
	if (!pt_check(!ret, "%llu MiB in hidden VRAM: %s", (unsigned long long)(bo.size / MIB),
		      strerror(-ret)))
		return;
	ret = pagoda_bo_map(dev, &bo);
	if (!pt_check(!ret, "map it: %s", strerror(-ret)))
		goto out;
	reuses = pt_debugfs_value(DEBUGFS "/segments", "host-aperture", " reuses ");
	p = bo.map;
	words = bo.size / 8;
	fill(&bo, 99, 1);
	bad = check(&bo, 99, 1);
	pt_check(!bad, "%.1f x the host aperture written and read in order (%llu words differ)",
		 (double)bo.size / aperture, (unsigned long long)bad);
	for (i = 0, bad = 0; i < 20000; i++) {
		uint64_t w = pt_rng_next(&state) % words;

		bad += p[w] != pattern(99, 1, w);
		if (i % 3 == 0) {
			p[w] = pattern(99, 2, w);
			bad += p[w] != pattern(99, 2, w);
			p[w] = pattern(99, 1, w);
		}
	}
	pt_check(!bad, "20000 random reads and writes (%llu wrong)", (unsigned long long)bad);
	pt_check(pt_debugfs_value(DEBUGFS "/segments", "host-aperture", " reuses ") > reuses,
		 "slots were reused (%lld before, %lld after)", reuses,
		 pt_debugfs_value(DEBUGFS "/segments", "host-aperture", " reuses "));
	/* moved out and back while mapped: the mapping follows */
	pt_check(!evict_segment(DRM_PAGODA_SEGMENT_VRAM_HIDDEN), "evict hidden VRAM");
	bad = check(&bo, 99, 1);
	pt_check(!bad, "read back from system memory through the same mapping (%llu differ)",
		 (unsigned long long)bad);
	ret = pagoda_make_resident(dev, &bo.handle, 1, NULL);
	pt_check(!ret, "back into hidden VRAM: %s", strerror(-ret));
	bad = check(&bo, 99, 1);
	pt_check(!bad, "read back through the host aperture again (%llu differ)",
		 (unsigned long long)bad);
	pagoda_evict(dev, &bo.handle, 1);
out:
	pagoda_bo_free(dev, &bo);
}

int main(void)
{
	struct pagoda_dev dev;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the Pagoda render node: %s", strerror(-ret)))
		return pt_exit();
	test_moves(&dev);
	test_host_aperture(&dev);
	pagoda_close(&dev);
	return pt_exit();
}
