// SPDX-License-Identifier: MIT
/*
 * Physical-mode submission (DRM_IOCTL_PAGODA_SUBMIT_PHYS) and DMA buffer
 * splitting, on the real device:
 *
 * - the kernel's parser refuses every buffer or list that breaks a rule
 *   (EINVAL, ENOENT, ECANCELED...) and nothing changes: the target keeps
 *   its bytes, the context is not banned;
 * - a buffer whose allocations total three times the memory the engine
 *   reaches physically (VRAM + hidden VRAM + aperture) runs in several
 *   portions on a small device, in one on a large one, and leaves every
 *   allocation byte for byte as a CPU model of the buffer says, with the
 *   CRC-32s the GPU computed equal to the model's;
 * - a slot reprogrammed at a split point lets its allocation move (the
 *   buffer fits), the same allocation kept bound does not (ENOSPC, the
 *   context banned), and a NULL allocation unbinds its slot;
 * - a buffer that needs more at one split point than all that memory is
 *   refused before it runs (ENOSPC), and nothing changes;
 * - the portions run back to back: another process submitting render jobs
 *   all along has none run between the first portion and the last (the
 *   order in which the scheduler hands jobs to the engine, from the
 *   pagoda_render_run tracepoint; skipped without tracing);
 * - buffers queued behind one another (debugfs phys_hold holds the queue,
 *   phys_queue counts it), from two threads and another process, run in
 *   queue order, every result byte for byte; a signal to a queued
 *   submission gets EINTR and changes nothing (skipped without debugfs).
 *
 * The small device: vram-size=16M,hidden-vram-size=8M,aperture-size=16M.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define TRACING		"/sys/kernel/tracing"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(s)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##s)

/* The workload: STEPS allocations of STEP_SIZE, each filled, fed and summed. */
#define STEP_SIZE	(4 * MIB)
#define STEPS		30
#define FEED		(64 * KIB)
#define IMM_COUNT	16
#define BUF_BYTES	(256 * KIB)
#define MAX_PATCHES	DRM_PAGODA_PHYS_MAX_PATCHES

static struct pagoda_dev dev;
static uint32_t ctx;
static uint32_t *cmd_mem;
static struct drm_pagoda_phys_patch patches[MAX_PATCHES];

static int phys_bo(struct pagoda_bo *bo, uint64_t size, uint32_t segments, unsigned int preferred)
{
	struct pagoda_bo_desc desc = {
		.size = size,
		.flags = DRM_PAGODA_BO_PHYSICAL,
		.segments = segments,
		.preferred_segment = preferred,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	int ret;

	memset(bo, 0, sizeof(*bo));
	ret = pagoda_bo_create(&dev, &desc, bo);
	if (!ret)
		ret = pagoda_bo_map(&dev, bo);
	return ret;
}

static void physbuf_init(struct pagoda_physbuf *pb)
{
	pagoda_physbuf_init(pb, cmd_mem, BUF_BYTES, patches, MAX_PATCHES);
}

/* ---- the parser ---- */

/* A raw submission: the buffer and lists as given, no sorting. */
static int submit_raw(uint32_t ctx_id, const void *cmds, uint32_t size,
		      const struct drm_pagoda_phys_alloc *allocs, uint32_t alloc_count,
		      const struct drm_pagoda_phys_patch *list, uint32_t patch_count)
{
	struct drm_pagoda_submit_phys args = {
		.ctx_id = ctx_id,
		.cmds = (uintptr_t)cmds,
		.cmd_size = size,
		.alloc_count = alloc_count,
		.allocs = (uintptr_t)allocs,
		.patch_count = patch_count,
		.patches = (uintptr_t)list,
	};

	return drmIoctl(dev.fd, DRM_IOCTL_PAGODA_SUBMIT_PHYS, &args) ? -errno : 0;
}

struct reject_case {
	const char *what;
	int want;
	/* change the good submission (FILL32 of 4 KiB at offset 0 of allocation 0) */
	void (*edit)(uint32_t *cmds, uint32_t *size, struct drm_pagoda_phys_alloc *allocs,
		     uint32_t *alloc_count, struct drm_pagoda_phys_patch *list, uint32_t *count);
};

#define UNUSED __attribute__((unused))
#define EDIT(name) static void name(UNUSED uint32_t *c, UNUSED uint32_t *size, \
	UNUSED struct drm_pagoda_phys_alloc *a, UNUSED uint32_t *na, \
	UNUSED struct drm_pagoda_phys_patch *l, UNUSED uint32_t *nl)

static uint32_t other_handle, plain_handle;

EDIT(no_patch) { *nl = 0; }
EDIT(oob_size) { c[4] = 64 * KIB + 4; }
EDIT(oob_offset) { l[0].alloc_offset = 64 * KIB - 8; c[4] = 16; }
EDIT(plain_alloc) { a[0].handle = plain_handle; }
EDIT(read_only) { a[0].flags = 0; }
EDIT(patch_size_field) { l[0].patch_offset = 16; }
EDIT(patch_twice) { l[1] = l[0]; *nl = 2; }
EDIT(slot_max) { l[0].slot_id = DRM_PAGODA_MAX_SLOT_ID; }
EDIT(alloc_index) { l[0].alloc_index = *na; }
EDIT(split_inside) { l[0].split_offset = 4; }
EDIT(split_unaligned) { l[0].split_offset = 2; }
EDIT(split_beyond) { l[0].split_offset = *size; }
EDIT(patch_before_split) {
	/* a NOP first: the fill's entry splits after its own operand */
	memmove(c + 1, c, 6 * 4);
	c[0] = PAGODA_CMD_HEADER(PAGODA_CMD_NOP, 0, 1);
	*size += 4;
	l[0].patch_offset = 12;
	l[0].split_offset = 24 + 4;
	c[7] = PAGODA_CMD_HEADER(PAGODA_CMD_NOP, 0, 1);
	*size += 4;
}
EDIT(split_decreasing) {
	/* two fills; the second entry's split offset is before the first's */
	memcpy(c + 6, c, 6 * 4);
	*size = 48;
	l[1] = l[0];
	l[1].patch_offset = 32;
	l[0].split_offset = 24;
	l[1].split_offset = 0;
	*nl = 2;
}
EDIT(slot_rebound) {
	/* the slot gets another allocation at 24 before the second fill's patch at 32 */
	memcpy(c + 6, c, 6 * 4);
	*size = 48;
	l[1] = l[0];
	l[1].patch_offset = 32;
	l[2] = (struct drm_pagoda_phys_patch){ .alloc_index = 1, .slot_id = 0, .split_offset = 24 };
	a[1] = (struct drm_pagoda_phys_alloc){ 0, 0 };
	*na = 2;
	*nl = 3;
}
EDIT(jump) { c[0] = PAGODA_CMD_HEADER(PAGODA_CMD_JUMP, 0, 4); c[1] = 16; *size = 16; }
EDIT(paging_cmd) { c[0] = PAGODA_CMD_HEADER(PAGODA_CMD_FILL, 0, 6); }
EDIT(cmd_flags) { c[0] = PAGODA_CMD_HEADER(PAGODA_CMD_FILL32, 1, 6); }
EDIT(cmd_length) { c[0] = PAGODA_CMD_HEADER(PAGODA_CMD_FILL32, 0, 8); *size = 32; }
EDIT(cmd_past_end) { *size = 20; }
EDIT(zero_size) { *size = 0; }
EDIT(huge_size) { *size = DRM_PAGODA_SUBMIT_MAX_SIZE + 4; }
EDIT(odd_size) { *size = 22; }
EDIT(too_many_allocs) { *na = DRM_PAGODA_PHYS_MAX_ALLOCS + 1; }
EDIT(too_many_patches) { *nl = DRM_PAGODA_PHYS_MAX_PATCHES + 1; }
EDIT(alloc_flags) { a[0].flags |= 2; }
EDIT(duplicate_alloc) { a[1] = a[0]; *na = 2; }
EDIT(unknown_handle) { a[0].handle = 0x7fffffff; }
EDIT(other_process) { a[0].handle = other_handle; }
EDIT(null_with_patch) {
	a[1] = (struct drm_pagoda_phys_alloc){ 0, 0 };
	*na = 2;
	l[1] = (struct drm_pagoda_phys_patch){ .alloc_index = 1, .slot_id = 1, .patch_offset = 8 };
	*nl = 2;
}
EDIT(patch_unaligned) { l[0].patch_offset = 9; }

static const struct reject_case reject_cases[] = {
	{ "an address operand without a patch", -EINVAL, no_patch },
	{ "a size past the allocation's end", -EINVAL, oob_size },
	{ "an offset + size past the allocation's end", -EINVAL, oob_offset },
	{ "an allocation not accessed physically", -EINVAL, plain_alloc },
	{ "a write to an allocation listed read-only", -EINVAL, read_only },
	{ "a patch on a size operand", -EINVAL, patch_size_field },
	{ "two patches of one operand", -EINVAL, patch_twice },
	{ "a slot id at the maximum", -EINVAL, slot_max },
	{ "an allocation index past the list", -EINVAL, alloc_index },
	{ "a split offset inside a command", -EINVAL, split_inside },
	{ "a split offset not on a dword", -EINVAL, split_unaligned },
	{ "a split offset at the buffer's end", -EINVAL, split_beyond },
	{ "a patch before its split offset", -EINVAL, patch_before_split },
	{ "split offsets decreasing", -EINVAL, split_decreasing },
	{ "a patch after its slot was bound again", -EINVAL, slot_rebound },
	{ "a JUMP", -EINVAL, jump },
	{ "a paging-engine command", -EINVAL, paging_cmd },
	{ "a command with flags", -EINVAL, cmd_flags },
	{ "a command longer than its opcode", -EINVAL, cmd_length },
	{ "a command past the buffer's end", -EINVAL, cmd_past_end },
	{ "a buffer of 0 bytes", -EINVAL, zero_size },
	{ "a buffer of more than 16 MiB", -EINVAL, huge_size },
	{ "a size not a multiple of 4", -EINVAL, odd_size },
	{ "an allocation list past its maximum", -EINVAL, too_many_allocs },
	{ "a patch list past its maximum", -EINVAL, too_many_patches },
	{ "unknown allocation flags", -EINVAL, alloc_flags },
	{ "an allocation listed twice", -EINVAL, duplicate_alloc },
	{ "an unknown handle", -ENOENT, unknown_handle },
	{ "a handle of another process", -ENOENT, other_process },
	{ "a NULL allocation with a patch", -EINVAL, null_with_patch },
	{ "an unaligned patch offset", -EINVAL, patch_unaligned },
};

static void test_parser(void)
{
	static uint32_t cmds[(DRM_PAGODA_SUBMIT_MAX_SIZE + 8) / 4];
	static struct drm_pagoda_phys_patch list[DRM_PAGODA_PHYS_MAX_PATCHES + 1];
	static struct drm_pagoda_phys_alloc allocs[DRM_PAGODA_PHYS_MAX_ALLOCS + 1];
	struct pagoda_bo target, plain, other;
	struct drm_pagoda_ctx_query q;
	struct pagoda_dev dev2;
	struct pagoda_bo_desc desc = { .size = 64 * KIB };
	unsigned int i, k;
	int ret;

	ret = phys_bo(&target, 64 * KIB, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM);
	if (!ret)
		ret = pagoda_bo_create(&dev, &desc, &plain);
	if (!ret)
		ret = pagoda_open(&dev2);
	/* enough allocations that the other process's last handle is not ours */
	for (k = 0; !ret && k < 8; k++)
		ret = pagoda_bo_create(&dev2, &desc, &other);
	if (!pt_check(!ret, "parser: set up (%s)", strerror(-ret)))
		return;
	plain_handle = plain.handle;
	other_handle = other.handle;
	memset(target.map, 0x5a, target.size);

	for (i = 0; i < ARRAY_SIZE(reject_cases); i++) {
		const struct reject_case *rc = &reject_cases[i];
		uint32_t size = 24, na = 1, nl = 1;
		const uint8_t *p = target.map;

		memset(cmds, 0, 64);
		cmds[0] = PAGODA_CMD_HEADER(PAGODA_CMD_FILL32, 0, 6);
		cmds[1] = 0xdeadbeef;
		cmds[4] = 4 * KIB;
		allocs[0] = (struct drm_pagoda_phys_alloc){ target.handle, DRM_PAGODA_PHYS_WRITE };
		list[0] = (struct drm_pagoda_phys_patch){ .patch_offset = 8 };
		rc->edit(cmds, &size, allocs, &na, list, &nl);
		ret = submit_raw(ctx, cmds, size, allocs, na, list, nl);
		for (k = 0; k < target.size && p[k] == 0x5a; k++)
			;
		pt_check(ret == rc->want && k == target.size && pt_ctx_banned(&dev, ctx, &q) == 0,
			 "parser refuses %s: %s (want %s), target unchanged: %s", rc->what,
			 strerror(-ret), strerror(-rc->want), k == target.size ? "yes" : "no");
	}

	/* the good one runs */
	{
		struct pagoda_physbuf pb;
		struct drm_pagoda_phys_alloc one = { target.handle, DRM_PAGODA_PHYS_WRITE };
		uint32_t *w = target.map;

		physbuf_init(&pb);
		pagoda_phys_bind(&pb, 0, 0, 0);
		pagoda_phys_fill(&pb, 0, 0, 4 * KIB, 0xdeadbeef);
		ret = pt_run_phys(&dev, ctx, &pb, &one, 1, NULL);
		pt_check(!ret && w[0] == 0xdeadbeef && w[1023] == 0xdeadbeef && w[1024] == 0x5a5a5a5a,
			 "parser accepts a good buffer, which runs: %s", strerror(-ret));
	}
	pagoda_close(&dev2);
	pagoda_bo_free(&dev, &plain);
	pagoda_bo_unmap(&target);
	pagoda_bo_free(&dev, &target);
}

/* ---- the split workload and its CPU model ---- */

struct workload {
	struct pagoda_bo steps[STEPS];
	struct pagoda_bo results;
	struct drm_pagoda_phys_alloc allocs[STEPS + 1];
	uint8_t *model;			/* STEPS * STEP_SIZE */
	uint32_t want_crc[STEPS];
};

static uint32_t step_pattern(unsigned int k)
{
	return 0x01010101u * (k + 1) ^ 0xa5000000u;
}

static uint64_t feed_src(unsigned int k)
{
	return (k * 12288ull) % (STEP_SIZE - FEED);
}

#define FEED_DST	(1 * MIB)
#define IMM_DST		(2 * MIB + 4 * KIB)

/*
 * Step k (its own split point): allocation k bound to slot 1 + k % 2, filled
 * with its pattern; FEED bytes of allocation k - 1 (still bound, kept)
 * copied in; IMM_COUNT values written; its CRC-32 to results[k] (results
 * bound once, in slot 0, kept throughout).
 */
static void build_workload(struct pagoda_physbuf *pb)
{
	uint32_t values[IMM_COUNT];
	unsigned int k, i;

	pagoda_phys_bind(pb, 0, STEPS, 0);
	for (k = 0; k < STEPS; k++) {
		uint32_t slot = 1 + k % 2;

		pagoda_phys_split(pb);
		pagoda_phys_bind(pb, slot, k, 0);
		pagoda_phys_fill(pb, slot, 0, STEP_SIZE, step_pattern(k));
		if (k)
			pagoda_phys_copy(pb, 1 + (k - 1) % 2, feed_src(k), slot, FEED_DST, FEED);
		for (i = 0; i < IMM_COUNT; i++)
			values[i] = k * 1000 + i;
		pagoda_phys_write_imm(pb, slot, IMM_DST, values, IMM_COUNT);
		pagoda_phys_crc32(pb, slot, 0, STEP_SIZE, 0, 4ull * k);
	}
}

static void model_workload(struct workload *w)
{
	unsigned int k, i;

	for (k = 0; k < STEPS; k++) {
		uint8_t *a = w->model + (uint64_t)k * STEP_SIZE;
		uint32_t pat = step_pattern(k);

		for (i = 0; i < STEP_SIZE / 4; i++)
			memcpy(a + 4 * i, &pat, 4);
		if (k)
			memcpy(a + FEED_DST, a - STEP_SIZE + feed_src(k), FEED);
		for (i = 0; i < IMM_COUNT; i++) {
			uint32_t v = k * 1000 + i;

			memcpy(a + IMM_DST + 4 * i, &v, 4);
		}
		w->want_crc[k] = pt_crc32(a, STEP_SIZE);
	}
}

static uint64_t reachable(void)
{
	uint64_t vram = 0, hidden = 0, aperture = 0;

	pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram);
	pagoda_query(&dev, DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, &hidden);
	pagoda_query(&dev, DRM_PAGODA_PARAM_APERTURE_SIZE, &aperture);
	return vram + hidden + aperture;
}

/* The workload's allocations: STEPS of STEP_SIZE anywhere, results in the aperture. */
static int workload_create(struct workload *w)
{
	unsigned int k;
	int ret = 0;

	for (k = 0; !ret && k < STEPS; k++) {
		ret = phys_bo(&w->steps[k], STEP_SIZE, SEG(VRAM) | SEG(VRAM_HIDDEN) | SEG(SYSTEM),
			      DRM_PAGODA_SEGMENT_VRAM);
		w->allocs[k] = (struct drm_pagoda_phys_alloc){ w->steps[k].handle,
							       DRM_PAGODA_PHYS_WRITE };
	}
	if (!ret)
		ret = phys_bo(&w->results, 64 * KIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	w->allocs[STEPS] = (struct drm_pagoda_phys_alloc){ w->results.handle,
							   DRM_PAGODA_PHYS_WRITE };
	return ret;
}

static void workload_destroy(struct workload *w)
{
	unsigned int k;

	for (k = 0; k < STEPS; k++) {
		pagoda_bo_unmap(&w->steps[k]);
		pagoda_bo_free(&dev, &w->steps[k]);
	}
	pagoda_bo_unmap(&w->results);
	pagoda_bo_free(&dev, &w->results);
}

static void test_split(void)
{
	static struct workload w;
	struct pagoda_physbuf pb;
	uint64_t total = (uint64_t)STEPS * STEP_SIZE, mem = reachable();
	uint32_t portions = 0, *crc;
	unsigned int k, bad = 0;
	int ret = 0;

	w.model = malloc(total);
	if (!pt_check(w.model != NULL, "split: model memory"))
		return;
	ret = workload_create(&w);
	if (!pt_check(!ret, "split: %u allocations of %llu MiB (%s)", STEPS, STEP_SIZE / MIB,
		      strerror(-ret)))
		return;
	memset(w.results.map, 0, w.results.size);
	model_workload(&w);
	physbuf_init(&pb);
	build_workload(&pb);
	ret = pt_run_phys(&dev, ctx, &pb, w.allocs, STEPS + 1, &portions);
	printf("split: %llu MiB of allocations, %llu MiB reachable (%.1fx): %u portion(s)\n",
	       (unsigned long long)(total / MIB), (unsigned long long)(mem / MIB),
	       (double)total / mem, portions);
	if (total > mem)
		pt_check(!ret && portions >= total / mem,
			 "split: the buffer ran in %u portions (at least %llu): %s", portions,
			 (unsigned long long)(total / mem), strerror(-ret));
	else
		pt_check(!ret && portions == 1, "unsplit: the buffer ran in %u portion: %s",
			 portions, strerror(-ret));
	crc = w.results.map;
	for (k = 0; k < STEPS; k++)
		bad += crc[k] != w.want_crc[k];
	pt_check(!bad, "the GPU's CRC-32 of each allocation equals the model's (%u differ)", bad);
	for (k = 0, bad = 0; k < STEPS; k++)
		bad += memcmp(w.steps[k].map, w.model + (uint64_t)k * STEP_SIZE, STEP_SIZE) != 0;
	pt_check(!bad, "every allocation equals the model byte for byte (%u differ)", bad);
	workload_destroy(&w);
	free(w.model);
}

/* ---- reprogrammed, kept and unbound slots ---- */

enum bind_mode { REPROGRAM, KEEP, UNBIND };

/*
 * L (8 MiB, VRAM or aperture) is bound at 0 and used; at the split point
 * V (12 MiB, VRAM only) is bound and filled. Both in VRAM need 20 MiB of
 * the 16: L must leave VRAM there. REPROGRAM binds L again at that split
 * point (after V) and uses it; UNBIND binds the NULL allocation to its
 * slot; KEEP leaves it bound from 0 and uses it after the split point.
 */
static int run_bind_mode(enum bind_mode mode, uint32_t run_ctx, uint32_t *portions,
			 struct pagoda_bo *l, struct pagoda_bo *v)
{
	struct drm_pagoda_phys_alloc allocs[3] = {
		{ l->handle, DRM_PAGODA_PHYS_WRITE }, { v->handle, DRM_PAGODA_PHYS_WRITE }, { 0, 0 },
	};
	struct pagoda_physbuf pb;
	uint32_t saved = ctx;
	int ret;

	physbuf_init(&pb);
	pagoda_phys_bind(&pb, 3, 0, 0);
	pagoda_phys_fill(&pb, 3, 0, l->size, 0x11111111);
	pagoda_phys_split(&pb);
	pagoda_phys_bind(&pb, 1, 1, 0);
	pagoda_phys_fill(&pb, 1, 0, v->size, 0x22222222);
	if (mode == REPROGRAM)
		pagoda_phys_bind(&pb, 3, 0, 0);
	if (mode == UNBIND)
		pagoda_phys_bind(&pb, 3, 2, 1);
	else
		pagoda_phys_copy(&pb, 3, 0, 1, 0, 64 * KIB);
	ctx = run_ctx;
	ret = pt_run_phys(&dev, ctx, &pb, allocs, 3, portions);
	ctx = saved;
	return ret;
}

static void test_bind_modes(void)
{
	static const char *const names[] = { "reprogrammed", "kept", "unbound (NULL)" };
	struct pagoda_bo l, v;
	struct drm_pagoda_ctx_query q;
	uint64_t vram = 0;
	int mode, ret;

	pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram);
	if (vram != 16 * MIB) {
		printf("bind modes: needs the small device, skipped\n");
		return;
	}
	/* V first: L, created last, takes VRAM and pushes V out */
	ret = phys_bo(&v, 12 * MIB, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM);
	if (!ret)
		ret = phys_bo(&l, 8 * MIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM);
	if (!pt_check(!ret, "bind modes: set up (%s)", strerror(-ret)))
		return;
	for (mode = REPROGRAM; mode <= UNBIND; mode++) {
		uint32_t run_ctx, portions = 0, *p = v.map;
		int banned;

		if (pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &run_ctx))
			break;
		/* L in VRAM (pinned there a moment), so V is not */
		ret = pagoda_make_resident(&dev, &l.handle, 1, NULL);
		if (!ret)
			ret = pagoda_evict(&dev, &l.handle, 1);
		if (!ret)
			ret = run_bind_mode(mode, run_ctx, &portions, &l, &v);
		banned = pt_ctx_banned(&dev, run_ctx, &q);
		if (mode == KEEP) {
			pt_check(ret == -ENOSPC && banned == 1,
				 "a slot %s across the split point: %s (want ENOSPC), context banned: %d",
				 names[mode], strerror(-ret), banned);
			ret = run_bind_mode(mode, run_ctx, &portions, &l, &v);
			pt_check(ret == -ECANCELED, "a split submission on a banned context: %s",
				 strerror(-ret));
		} else {
			pt_check(!ret && portions == 2 && p[0] == (mode == REPROGRAM ? 0x11111111 :
								    0x22222222) &&
				 p[v.size / 4 - 1] == 0x22222222 && banned == 0,
				 "a slot %s at the split point lets its allocation move: %s, %u portions",
				 names[mode], strerror(-ret), portions);
		}
		pagoda_ctx_destroy(&dev, run_ctx);
	}
	pagoda_bo_unmap(&l);
	pagoda_bo_free(&dev, &l);
	pagoda_bo_unmap(&v);
	pagoda_bo_free(&dev, &v);
}

/* Three 16 MiB allocations needed at one split point: more than the 40 the engine reaches. */
static void test_never_fits(void)
{
	struct drm_pagoda_phys_alloc allocs[3];
	struct drm_pagoda_ctx_query q;
	struct pagoda_physbuf pb;
	struct pagoda_bo bo[3];
	uint32_t portions = 7;
	unsigned int i;
	int ret = 0;

	if (reachable() != 40 * MIB) {
		printf("never fits: needs the small device, skipped\n");
		return;
	}
	for (i = 0; !ret && i < 3; i++) {
		ret = phys_bo(&bo[i], 16 * MIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM);
		allocs[i] = (struct drm_pagoda_phys_alloc){ bo[i].handle, DRM_PAGODA_PHYS_WRITE };
	}
	if (!pt_check(!ret, "never fits: set up (%s)", strerror(-ret)))
		return;
	memset(bo[2].map, 0x77, 4096);
	physbuf_init(&pb);
	for (i = 0; i < 3; i++)
		pagoda_phys_bind(&pb, i, i, 0);
	pagoda_phys_copy(&pb, 0, 0, 2, 0, 4096);
	pagoda_phys_copy(&pb, 1, 0, 2, 0, 4096);
	ret = pagoda_submit_phys(&dev, ctx, &pb, allocs, 3, NULL, 0, NULL, 0, &portions);
	pt_check(ret == -ENOSPC && portions == 0 && ((uint8_t *)bo[2].map)[0] == 0x77 &&
		 pt_ctx_banned(&dev, ctx, &q) == 0,
		 "a portion needing 48 MiB at once is refused before it runs: %s, %u portions",
		 strerror(-ret), portions);
	for (i = 0; i < 3; i++) {
		pagoda_bo_unmap(&bo[i]);
		pagoda_bo_free(&dev, &bo[i]);
	}
}

/*
 * A process that submits small render jobs until killed, on a context
 * whose id (ids are per file) is not @split_ctx's.
 */
static void busy_child(uint32_t split_ctx)
{
	struct pagoda_dev cdev;
	struct pt_buf cmd, data;
	struct pagoda_cmdbuf cb;
	uint32_t cctx, sync;

	if (pagoda_open(&cdev) || pagoda_ctx_create(&cdev, DRM_PAGODA_PRIORITY_NORMAL, &cctx) ||
	    (cctx == split_ctx &&
	     pagoda_ctx_create(&cdev, DRM_PAGODA_PRIORITY_NORMAL, &cctx)) ||
	    pt_buf_create(&cdev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0) ||
	    pt_buf_create(&cdev, &data, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0) ||
	    pagoda_syncobj_create(&cdev, &sync))
		_exit(1);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va, 4096, 0xc41d);
	for (;;) {
		struct drm_pagoda_sync out = { sync, 0, 0 };
		unsigned int i;

		/* a few in flight, then wait: the queue never runs dry */
		for (i = 0; i < 4; i++)
			if (pagoda_submit(&cdev, cctx, cmd.va, cb.used_bytes, NULL, 0, &out, 1))
				_exit(1);
		pagoda_syncobj_wait(&cdev, sync, 0, PT_JOB_TIMEOUT_NS);
	}
}

/* The context id of the next pagoda_render_run line of @f, or -1 at the end. */
static long long next_run_ctx(FILE *f)
{
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "pagoda_render_run:");
		unsigned int ctx_id;

		if (p && sscanf(p, "pagoda_render_run: ctx=%u", &ctx_id) == 1)
			return ctx_id;
	}
	return -1;
}

/*
 * The engine's order from the trace (lines "pagoda_render_run: ctx=C
 * slot=S"): the split's jobs are those of its context, @split_ctx (the
 * other process's has another id); counts the other jobs before its
 * first, between, and after its last. -1 unless the split's jobs are
 * @portions.
 */
static int check_back_to_back(uint32_t split_ctx, uint32_t portions, unsigned int *before,
			      unsigned int *between, unsigned int *after)
{
	unsigned int seen = 0, others = 0;
	FILE *f = fopen(TRACING "/trace", "r");
	long long run_ctx;

	if (!f)
		return -1;
	*before = *between = *after = 0;
	while ((run_ctx = next_run_ctx(f)) >= 0) {
		if (run_ctx != split_ctx) {
			others++;
			continue;
		}
		if (!seen++)
			*before = others;
		else
			*between += others;
		others = 0;
	}
	*after = others;
	fclose(f);
	return seen == portions ? 0 : -1;
}

static void test_back_to_back(void)
{
	static struct workload w;
	unsigned int before = 0, between = 0, after = 0;
	struct pagoda_physbuf pb;
	uint32_t portions = 0;
	pid_t child;
	int ret = 0;

	if (access(TRACING "/trace", F_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	if (access(TRACING "/events/pagoda/pagoda_render_run/enable", F_OK)) {
		printf("back to back: no tracing in this kernel, skipped\n");
		return;
	}
	ret = workload_create(&w);
	if (!pt_check(!ret, "back to back: allocations (%s)", strerror(-ret)))
		return;
	physbuf_init(&pb);
	build_workload(&pb);
	child = fork();
	if (child == 0)
		busy_child(ctx);
	pt_write_file(TRACING "/trace", "");
	pt_write_file(TRACING "/events/pagoda/pagoda_render_run/enable", "1");
	pt_sleep_ms(300);
	ret = pt_run_phys(&dev, ctx, &pb, w.allocs, STEPS + 1, &portions);
	pt_sleep_ms(300);
	pt_write_file(TRACING "/events/pagoda/pagoda_render_run/enable", "0");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (pt_check(!ret && portions > 1,
		     "back to back: the buffer ran in %u portions beside another process (%s)",
		     portions, strerror(-ret))) {
		ret = check_back_to_back(ctx, portions, &before, &between, &after);
		pt_check(!ret && !between && before && after,
			 "no other process's job ran between the portions (%u before, %u between, %u after)",
			 before, between, after);
	}
	workload_destroy(&w);
}

/* ---- the queue of physical buffers ---- */

static char dbg[256];

/* Wait up to ten seconds for @n buffers in the queue; 1 when they are. */
static int wait_queue_length(int n)
{
	int i;

	for (i = 0; i < 10000; i++) {
		if (pagoda_phys_queued(dbg) == n)
			return 1;
		pt_sleep_ms(1);
	}
	return 0;
}

/* Hold the queue: no buffer takes its turn while the returned fd is open. */
static int hold_queue(void)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/phys_hold", dbg);
	return open(path, O_WRONLY | O_CLOEXEC);
}

/* A physical buffer submitted from a thread of its own, so that it waits in the queue. */
struct queued_buffer {
	pthread_t thread;
	struct pagoda_physbuf pb;
	uint32_t *cmds;
	struct drm_pagoda_phys_patch *patches;
	const struct drm_pagoda_phys_alloc *allocs;
	uint32_t alloc_count;
	int once;		/* one ioctl, no retry on EINTR (not drmIoctl) */
	int started;		/* its thread runs */
	uint32_t portions;
	int ret;
};

static int queued_init(struct queued_buffer *q, const struct drm_pagoda_phys_alloc *allocs,
		       uint32_t alloc_count)
{
	memset(q, 0, sizeof(*q));
	q->cmds = malloc(BUF_BYTES);
	q->patches = calloc(MAX_PATCHES, sizeof(*q->patches));
	q->allocs = allocs;
	q->alloc_count = alloc_count;
	if (!q->cmds || !q->patches)
		return -ENOMEM;
	pagoda_physbuf_init(&q->pb, q->cmds, BUF_BYTES, q->patches, MAX_PATCHES);
	return 0;
}

static void queued_fini(struct queued_buffer *q)
{
	free(q->cmds);
	free(q->patches);
}

static void *queued_submit(void *arg)
{
	struct queued_buffer *q = arg;
	struct drm_pagoda_submit_phys args = {
		.ctx_id = ctx,
		.cmds = (uintptr_t)q->pb.cb.cmds,
		.cmd_size = q->pb.cb.used_bytes,
		.alloc_count = q->alloc_count,
		.allocs = (uintptr_t)q->allocs,
		.patch_count = q->pb.patch_count,
		.patches = (uintptr_t)q->pb.patches,
	};

	if (!q->once) {
		q->ret = pt_run_phys(&dev, ctx, &q->pb, q->allocs, q->alloc_count, &q->portions);
		return NULL;
	}
	pagoda_physbuf_sort(&q->pb);
	q->ret = ioctl(dev.fd, DRM_IOCTL_PAGODA_SUBMIT_PHYS, &args) ? -errno : 0;
	q->portions = args.portions;
	return NULL;
}

/* Start @q's thread and wait until it is the queue's @n-th buffer. */
static int queued_start(struct queued_buffer *q, int n)
{
	int ret = -pthread_create(&q->thread, NULL, queued_submit, q);

	if (ret)
		return ret;
	q->started = 1;
	return wait_queue_length(n) ? 0 : -ETIMEDOUT;
}

/* A second buffer over the workload: per step, immediates written and the whole allocation summed. */
#define IMM2_DST	(3 * MIB)

static uint32_t imm2_value(unsigned int k, unsigned int i)
{
	return 0x5000000u + k * 100 + i;
}

static void build_check_buffer(struct pagoda_physbuf *pb)
{
	uint32_t values[IMM_COUNT];
	unsigned int k, i;

	pagoda_phys_bind(pb, 0, STEPS, 0);
	for (k = 0; k < STEPS; k++) {
		pagoda_phys_split(pb);
		pagoda_phys_bind(pb, 1, k, 0);
		for (i = 0; i < IMM_COUNT; i++)
			values[i] = imm2_value(k, i);
		pagoda_phys_write_imm(pb, 1, IMM2_DST, values, IMM_COUNT);
		pagoda_phys_crc32(pb, 1, 0, STEP_SIZE, 0, 4ull * (STEPS + k));
	}
}

/* Another process's buffer between the two: fills an 8 MiB VRAM-only allocation of its own. */
#define OTHER_SIZE	(8 * MIB)
#define OTHER_PATTERN	0x3c3c0f0fu

static void queued_child(void)
{
	struct pagoda_bo_desc desc = {
		.size = OTHER_SIZE, .flags = DRM_PAGODA_BO_PHYSICAL, .segments = SEG(VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct drm_pagoda_phys_alloc allocs[2];
	struct pagoda_bo big, res;
	struct pagoda_physbuf pb;
	struct pagoda_dev cdev;
	uint32_t cctx, *words, *model, i, crc;

	model = malloc(OTHER_SIZE);
	if (!model || pagoda_open(&cdev) ||
	    pagoda_ctx_create(&cdev, DRM_PAGODA_PRIORITY_NORMAL, &cctx) ||
	    pagoda_bo_create(&cdev, &desc, &big) || pagoda_bo_map(&cdev, &big))
		_exit(2);
	desc.size = 64 * KIB;
	desc.segments = SEG(SYSTEM);
	desc.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	if (pagoda_bo_create(&cdev, &desc, &res) || pagoda_bo_map(&cdev, &res))
		_exit(2);
	allocs[0] = (struct drm_pagoda_phys_alloc){ big.handle, DRM_PAGODA_PHYS_WRITE };
	allocs[1] = (struct drm_pagoda_phys_alloc){ res.handle, DRM_PAGODA_PHYS_WRITE };
	physbuf_init(&pb);
	pagoda_phys_bind(&pb, 0, 0, 0);
	pagoda_phys_bind(&pb, 1, 1, 0);
	pagoda_phys_fill(&pb, 0, 0, OTHER_SIZE, OTHER_PATTERN);
	pagoda_phys_crc32(&pb, 0, 0, OTHER_SIZE, 1, 0);
	if (pt_run_phys(&cdev, cctx, &pb, allocs, 2, NULL))
		_exit(3);
	for (i = 0; i < OTHER_SIZE / 4; i++)
		model[i] = OTHER_PATTERN;
	crc = pt_crc32(model, OTHER_SIZE);
	words = big.map;
	_exit(memcmp(words, model, OTHER_SIZE) || *(uint32_t *)res.map != crc ? 4 : 0);
}

/*
 * Three buffers queued while the queue is held (debugfs phys_hold), in
 * this order: the split workload (a thread), another process's buffer,
 * and a second buffer over the workload's allocations (a thread) that
 * sums what the first wrote. Released, they run in queue order: the
 * second's CRC-32s are those of the first's results (it ran after it,
 * and the first could look ahead into it), every allocation equals the
 * model byte for byte, the other process's too.
 */
static void test_queued(void)
{
	static struct workload w;
	static struct queued_buffer first, second;
	uint32_t *crc, values[IMM_COUNT];
	unsigned int k, i, bad = 0;
	int hold, status = -1, ret;
	pid_t child = -1;

	w.model = malloc((uint64_t)STEPS * STEP_SIZE);
	if (!pt_check(w.model != NULL, "queued: model memory"))
		return;
	ret = workload_create(&w);
	if (!ret)
		ret = queued_init(&first, w.allocs, STEPS + 1);
	if (!ret)
		ret = queued_init(&second, w.allocs, STEPS + 1);
	if (!pt_check(!ret, "queued: set up (%s)", strerror(-ret)))
		return;
	memset(w.results.map, 0, w.results.size);
	model_workload(&w);
	build_workload(&first.pb);
	build_check_buffer(&second.pb);

	hold = hold_queue();
	ret = hold < 0 ? -errno : queued_start(&first, 1);
	if (!ret) {
		child = fork();
		if (child == 0) {
			close(hold);	/* a hold lasts while any process has it open */
			queued_child();
		}
		ret = child < 0 ? -errno : wait_queue_length(2) ? 0 : -ETIMEDOUT;
	}
	if (!ret)
		ret = queued_start(&second, 3);
	pt_check(!ret, "queued: three buffers wait in the held queue, in order (%s)",
		 strerror(-ret));
	if (hold >= 0)
		close(hold);
	if (first.started)
		pthread_join(first.thread, NULL);
	if (second.started)
		pthread_join(second.thread, NULL);
	if (child > 0)
		waitpid(child, &status, 0);
	printf("queued: the workload ran in %u portions, the second buffer in %u\n",
	       first.portions, second.portions);
	pt_check(!first.ret && !second.ret, "queued: both buffers ran (%s, %s)",
		 strerror(-first.ret), strerror(-second.ret));
	pt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "queued: the other process's buffer ran between them, its allocation right (status 0x%x)",
		 status);
	crc = w.results.map;
	for (k = 0; k < STEPS; k++) {
		uint8_t *a = w.model + (uint64_t)k * STEP_SIZE;

		bad += crc[k] != w.want_crc[k];
		for (i = 0; i < IMM_COUNT; i++)
			values[i] = imm2_value(k, i);
		memcpy(a + IMM2_DST, values, sizeof(values));
		bad += crc[STEPS + k] != pt_crc32(a, STEP_SIZE);
	}
	pt_check(!bad, "queued: the GPU's CRC-32s equal the model's, the second buffer's of the first's results (%u differ)",
		 bad);
	for (k = 0, bad = 0; k < STEPS; k++)
		bad += memcmp(w.steps[k].map, w.model + (uint64_t)k * STEP_SIZE, STEP_SIZE) != 0;
	pt_check(!bad, "queued: every allocation equals the model byte for byte (%u differ)", bad);
	queued_fini(&first);
	queued_fini(&second);
	workload_destroy(&w);
	free(w.model);
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * Three small buffers queued while the queue is held, each filling an
 * allocation of its own; the middle one's thread gets a signal (no
 * SA_RESTART, one ioctl): EINTR, the queue holds the other two, and once
 * released they run while the interrupted one's allocation keeps its
 * bytes and the context is not banned.
 */
static void test_interrupted(void)
{
	static struct queued_buffer q[3];
	static const uint32_t fills[3] = { 0x11111111, 0x22222222, 0x33333333 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct drm_pagoda_phys_alloc allocs[3];
	struct drm_pagoda_ctx_query query;
	struct pagoda_bo target[3];
	unsigned int i;
	int hold, ret = 0, left = -1, ok[3];

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; !ret && i < 3; i++) {
		ret = phys_bo(&target[i], 64 * KIB, SEG(VRAM) | SEG(SYSTEM),
			      DRM_PAGODA_SEGMENT_VRAM);
		if (ret)
			break;
		memset(target[i].map, 0x5a, target[i].size);
		allocs[i] = (struct drm_pagoda_phys_alloc){ target[i].handle,
							    DRM_PAGODA_PHYS_WRITE };
		ret = queued_init(&q[i], &allocs[i], 1);
		if (!ret) {
			pagoda_phys_bind(&q[i].pb, 0, 0, 0);
			pagoda_phys_fill(&q[i].pb, 0, 0, target[i].size, fills[i]);
		}
	}
	if (!pt_check(!ret, "interrupted: set up (%s)", strerror(-ret)))
		return;
	q[1].once = 1;
	hold = hold_queue();
	ret = hold < 0 ? -errno : 0;
	for (i = 0; !ret && i < 3; i++)
		ret = queued_start(&q[i], i + 1);
	if (!ret) {
		pthread_kill(q[1].thread, SIGUSR1);
		pthread_join(q[1].thread, NULL);
		q[1].started = 0;
		left = pagoda_phys_queued(dbg);
	}
	pt_check(!ret && q[1].ret == -EINTR && q[1].portions == 0 && left == 2,
		 "interrupted: a signal to a queued submission gets EINTR (%s), %d buffers left in the queue (%s)",
		 strerror(-q[1].ret), left, strerror(-ret));
	if (hold >= 0)
		close(hold);
	for (i = 0; i < 3; i++)
		if (q[i].started)
			pthread_join(q[i].thread, NULL);
	for (i = 0; i < 3; i++) {
		const uint32_t *w = target[i].map;
		uint32_t want = i == 1 ? 0x5a5a5a5a : fills[i];

		ok[i] = w[0] == want && w[target[i].size / 4 - 1] == want;
	}
	pt_check(!q[0].ret && !q[2].ret && ok[0] && ok[2],
		 "interrupted: the buffers before and after it run once the queue is released (%s, %s)",
		 strerror(-q[0].ret), strerror(-q[2].ret));
	pt_check(ok[1] && pt_ctx_banned(&dev, ctx, &query) == 0 && pagoda_phys_queued(dbg) == 0,
		 "interrupted: nothing changed: its allocation keeps its bytes, the context is not banned, the queue is empty");
	for (i = 0; i < 3; i++) {
		queued_fini(&q[i]);
		pagoda_bo_unmap(&target[i]);
		pagoda_bo_free(&dev, &target[i]);
	}
	signal(SIGUSR1, SIG_DFL);
}

int main(void)
{
	uint64_t max_slot = 0;
	int ret;

	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pagoda_query(&dev, DRM_PAGODA_PARAM_MAX_SLOT_ID, &max_slot);
	cmd_mem = malloc(BUF_BYTES);
	if (!pt_check(!ret && cmd_mem, "set up (%s)", strerror(-ret)))
		return pt_exit();
	pt_check(max_slot == DRM_PAGODA_MAX_SLOT_ID, "GET_PARAM MAX_SLOT_ID: %llu",
		 (unsigned long long)max_slot);
	test_parser();
	test_split();
	test_bind_modes();
	test_never_fits();
	if (reachable() < (uint64_t)STEPS * STEP_SIZE)
		test_back_to_back();
	if (!pagoda_debugfs_dir(dbg, sizeof(dbg))) {
		test_queued();
		test_interrupted();
	} else {
		printf("queue: no debugfs, skipped\n");
	}
	pagoda_close(&dev);
	return pt_exit();
}
