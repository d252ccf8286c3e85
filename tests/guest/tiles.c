// SPDX-License-Identifier: MIT
/*
 * Tiled resources on the real device, as a user-mode driver implementing
 * D3D12's tiled resources or Vulkan's sparse binding would use them:
 *
 * - a tiled reservation (DRM_PAGODA_VM_TILED) of 1 GiB of 64 KiB tiles
 *   backed by two small tile pools (one in VRAM, one in hidden VRAM); on a
 *   device of 64 KiB segment pages its tiles are one LEAF64 entry each
 *   (debugfs "vms" counts LEAF64 tables); a window of tiles moves
 *   across it, each step one VM_BIND that unmaps the tiles it leaves,
 *   maps the tiles it enters to pool pages (several tiles may share one)
 *   or to NULL tiles, remaps some, and copies the mappings of a run of
 *   tiles onto another (COPY); then a GPU job reads every tile of the
 *   window (CRC-32) and writes into each; every CRC is compared with a
 *   CPU model of the tiles, and both pools with a model of their bytes:
 *   NULL tiles read zero, and what is written to them reaches nothing;
 * - every other step is a queue operation (DRM_PAGODA_VM_BIND_QUEUE)
 *   behind a render job that waits for the CPU: the bind's fence and the
 *   GPU job reading through it wait, and run once the CPU lets the first
 *   job go;
 * - bad batches (overlapping COPY, a tile past its pool, a VA out of the
 *   64 KiB alignment of its page (with 64 KiB segment pages), a part of a
 *   tile, an allocation allowed in system memory (LEAF64 tiles), a queued
 *   MAP whose VA the driver would
 *   choose, an unknown in-syncobj) change nothing; a queued bind that
 *   fails against the space's state reports it through its fence;
 * - the pools evicted: the next job brings them back and rewrites their
 *   tiles' entries, and reads right;
 * - one VM_BIND of 4096 tile mappings, every tile then read by the GPU.
 */
#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define TILE		(64 * KIB)
#define RANGE_TILES	16384u		/* 1 GiB */
#define POOL_TILES	32u
#define POOLS		2
#define WINDOW		48u
#define STEP		16u
#define ROUNDS		10u
#define BIG_BATCH	4096u
#define FILL_BYTES	256u

enum { T_UNMAPPED, T_NULL, T_POOL };

struct tile {
	uint8_t kind;
	uint8_t pool;
	uint16_t page;
};

static struct pagoda_dev dev;
static uint32_t ctx;
static uint64_t range;				/* VA of tile 0 */
static struct tile model[RANGE_TILES];
static struct pt_buf pools[POOLS], sys, cmd, results, sem;
static uint8_t pool_model[POOLS][POOL_TILES * TILE];
static uint32_t rng = 0x7115eedu;
static uint64_t segment_page;			/* the memory segments' page size */

static uint32_t rnd(uint32_t below)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % below;
}

static uint64_t tile_va(uint32_t t)
{
	return range + (uint64_t)t * TILE;
}

/* The ops of a batch and the model they lead to (applied as they are added). */
struct batch {
	struct drm_pagoda_vm_op ops[BIG_BATCH];
	uint32_t count;
};

static void add_map(struct batch *b, uint32_t t, uint32_t n, int kind, unsigned int pool,
		    unsigned int page)
{
	struct drm_pagoda_vm_op *op = &b->ops[b->count++];
	uint32_t i;

	memset(op, 0, sizeof(*op));
	op->op = DRM_PAGODA_VM_OP_MAP;
	op->flags = DRM_PAGODA_VM_FIXED | (kind == T_NULL ? DRM_PAGODA_VM_ZERO : 0);
	op->handle = kind == T_NULL ? 0 : pools[pool].bo.handle;
	op->offset = kind == T_NULL ? 0 : (uint64_t)page * TILE;
	op->va = tile_va(t);
	op->size = (uint64_t)n * TILE;
	for (i = 0; i < n; i++)
		model[t + i] = (struct tile){ .kind = kind, .pool = pool, .page = page + i };
}

static void add_unmap(struct batch *b, uint32_t t, uint32_t n)
{
	struct drm_pagoda_vm_op *op = &b->ops[b->count++];

	memset(op, 0, sizeof(*op));
	op->op = DRM_PAGODA_VM_OP_UNMAP;
	op->va = tile_va(t);
	op->size = (uint64_t)n * TILE;
	memset(&model[t], 0, n * sizeof(model[0]));
}

static void add_copy(struct batch *b, uint32_t dst, uint32_t src, uint32_t n)
{
	struct drm_pagoda_vm_op *op = &b->ops[b->count++];

	memset(op, 0, sizeof(*op));
	op->op = DRM_PAGODA_VM_OP_COPY;
	op->va = tile_va(dst);
	op->offset = tile_va(src);
	op->size = (uint64_t)n * TILE;
	memmove(&model[dst], &model[src], n * sizeof(model[0]));
}

/* A tile mapped to a random pool page, or (one in four) a NULL tile. */
static void add_random(struct batch *b, uint32_t t)
{
	if (!rnd(4))
		add_map(b, t, 1, T_NULL, 0, 0);
	else
		add_map(b, t, 1, T_POOL, rnd(POOLS), rnd(POOL_TILES));
}

/* What the CPU model says tile @t reads. */
static const uint8_t *tile_bytes(uint32_t t)
{
	static const uint8_t zero[TILE];

	if (model[t].kind != T_POOL)
		return zero;
	return pool_model[model[t].pool] + (uint64_t)model[t].page * TILE;
}

/*
 * The GPU job over tiles [first, first + n): the CRC-32 of each (all read
 * before any write), then FILL_BYTES written into each at @offset. The
 * model takes the writes that reach a pool page.
 */
static void build_job(struct pagoda_cmdbuf *cb, uint32_t first, uint32_t n, uint32_t offset,
		      uint32_t seed, uint32_t *want)
{
	uint32_t i, k;

	pagoda_cmdbuf_init(cb, cmd.bo.map, cmd.bo.size);
	for (i = 0; i < n; i++) {
		pagoda_cmd_crc32(cb, tile_va(first + i), TILE, results.va + 4 * i);
		want[i] = pt_crc32(tile_bytes(first + i), TILE);
	}
	for (i = 0; i < n; i++) {
		uint32_t pattern = seed * 0x9e3779b9u + i;

		pagoda_cmd_fill(cb, tile_va(first + i) + offset, FILL_BYTES, pattern);
		if (model[first + i].kind != T_POOL)
			continue;
		for (k = 0; k < FILL_BYTES / 4; k++)
			memcpy(pool_model[model[first + i].pool] +
			       (uint64_t)model[first + i].page * TILE + offset + 4 * k, &pattern, 4);
	}
}

/* Compare the job's CRCs and both pools with the model. */
static void check_job(const char *what, uint32_t n, const uint32_t *want)
{
	const uint32_t *got = results.bo.map;
	uint32_t i, bad = 0;
	int p;

	for (i = 0; i < n; i++)
		bad += got[i] != want[i];
	pt_check(!bad, "%s: the GPU reads what the model says in all %u tiles (%u differ)", what,
		 n, bad);
	for (p = 0; p < POOLS; p++)
		pt_check(!memcmp(pools[p].bo.map, pool_model[p], sizeof(pool_model[p])),
			 "%s: pool %d holds exactly the model's bytes", what, p);
}

/* Run the job over the window synchronously and check it. */
static void run_window(const char *what, uint32_t first, uint32_t n, uint32_t round)
{
	static uint32_t want[BIG_BATCH];
	struct pagoda_cmdbuf cb;
	int ret;

	build_job(&cb, first, n, (round * FILL_BYTES) % TILE, round, want);
	ret = pt_run(&dev, ctx, &cmd, &cb);
	if (pt_check(!ret, "%s: the GPU job over %u tiles (%s)", what, n, strerror(-ret)))
		check_job(what, n, want);
}

/* The batch of window step @round: leave STEP tiles, enter STEP, remap, copy. */
static void step_batch(struct batch *b, uint32_t round)
{
	uint32_t w = round * STEP, i, a, c;

	b->count = 0;
	if (round)
		add_unmap(b, w - STEP, STEP);
	for (i = round ? WINDOW - STEP : 0; i < WINDOW; i++)
		add_random(b, w + i);
	for (i = 0; i < 6; i++)
		add_random(b, w + rnd(WINDOW));
	/* a run of 4 tiles' mappings onto 4 others, not overlapping */
	a = rnd(WINDOW / 2 - 4);
	c = WINDOW / 2 + rnd(WINDOW / 2 - 4);
	if (rnd(2))
		add_copy(b, w + c, w + a, 4);
	else
		add_copy(b, w + a, w + c, 4);
}

/* A synchronous step. */
static void step_sync(uint32_t round)
{
	static struct batch b;
	uint32_t done = 0;
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "step %u (VM_BIND)", round);
	step_batch(&b, round);
	ret = pagoda_vm_bind(&dev, b.ops, b.count, 0, 0, &done);
	if (pt_check(!ret && done == b.count, "%s: %u operations (%s, %u done)", what, b.count,
		     strerror(-ret), done))
		run_window(what, round * STEP, WINDOW, round);
}

/* Submit @cb on the context after @in (0: none), its fence to a new syncobj. */
static int submit_after(struct pagoda_cmdbuf *cb, uint64_t offset, uint32_t in, uint32_t *out)
{
	struct drm_pagoda_sync in_sync = { .handle = in }, out_sync = { 0 };
	int ret = pagoda_syncobj_create(&dev, &out_sync.handle);

	if (!ret)
		ret = pagoda_submit(&dev, ctx, cmd.va + offset, cb->used_bytes, in ? &in_sync : NULL,
				    in ? 1 : 0, &out_sync, 1);
	*out = out_sync.handle;
	return ret;
}

/*
 * A queued step: a render job waits for the CPU (the semaphore), the bind
 * waits for that job, the GPU job over the window waits for the bind.
 * Neither may run before the CPU lets the first job go.
 */
static void step_queued(uint32_t round)
{
	static uint32_t want[WINDOW];
	static struct batch b;
	struct pagoda_cmdbuf gate, cb;
	struct drm_pagoda_sync in = { 0 };
	uint32_t gated = 0, bound = 0, read = 0;
	uint64_t *semaphore = sem.bo.map;
	char what[64];
	int ret, early;

	snprintf(what, sizeof(what), "step %u (queued VM_BIND)", round);
	step_batch(&b, round);
	/* the window job's buffer first, the gate's after it */
	build_job(&cb, round * STEP, WINDOW, (round * FILL_BYTES) % TILE, round, want);
	pagoda_cmdbuf_init(&gate, (uint8_t *)cmd.bo.map + cmd.bo.size - 4 * KIB, 4 * KIB);
	pagoda_cmd_wait(&gate, sem.va, round);
	ret = submit_after(&gate, cmd.bo.size - 4 * KIB, 0, &gated);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &bound);
	in.handle = gated;
	if (!ret)
		ret = pagoda_vm_bind_queue(&dev, b.ops, b.count, &in, 1, bound, 0);
	if (!ret)
		ret = submit_after(&cb, 0, bound, &read);
	if (!pt_check(!ret, "%s: gate, %u queued operations, window job (%s)", what, b.count,
		      strerror(-ret)))
		goto out;
	usleep(50 * 1000);
	early = !pagoda_syncobj_wait(&dev, bound, 0, 0) + !pagoda_syncobj_wait(&dev, read, 0, 0);
	pt_check(!early, "%s: the bind and the job reading through it wait for the gate", what);
	__atomic_store_n(semaphore, round, __ATOMIC_SEQ_CST);
	ret = pagoda_syncobj_wait(&dev, read, 0, PT_JOB_TIMEOUT_NS);
	if (!ret)
		ret = pt_fence_error(&dev, bound) ?: pt_fence_error(&dev, read);
	if (pt_check(!ret, "%s: the gate opened, the bind then the job ran (%s)", what,
		     strerror(-ret)))
		check_job(what, WINDOW, want);
out:
	pagoda_syncobj_destroy(&dev, gated);
	pagoda_syncobj_destroy(&dev, bound);
	pagoda_syncobj_destroy(&dev, read);
}

/* A batch that must fail with @want before anything changes. */
static void expect_refused(const char *what, struct drm_pagoda_vm_op *ops, uint32_t n, int queue,
			   uint32_t in_handle, int want)
{
	struct drm_pagoda_sync in = { .handle = in_handle };
	uint32_t done = ~0u;
	int ret;

	if (queue)
		ret = pagoda_vm_bind_queue(&dev, ops, n, in_handle ? &in : NULL, in_handle ? 1 : 0,
					   0, 0);
	else
		ret = pagoda_vm_bind(&dev, ops, n, 0, 0, &done);
	pt_check(ret == want && (queue || done == 0), "bad batch, %s: %s (want %s), %u done",
		 what, strerror(-ret), strerror(-want), queue ? 0 : done);
}

static void test_bad_batches(void)
{
	const uint32_t w = (ROUNDS - 1) * STEP;	/* the window of the last step */
	struct drm_pagoda_vm_op ops[3];
	struct batch *b = calloc(1, sizeof(*b));
	struct tile saved[WINDOW];
	uint32_t bound = 0;
	int ret;

	if (!b)
		return;
	/* each starts with a valid remap, which must not run either */
	memcpy(saved, &model[w], sizeof(saved));
	add_map(b, w, 1, T_NULL, 0, 0);
	add_copy(b, w + 2, w + 1, 4);		/* source and destination overlap */
	memcpy(&model[w], saved, sizeof(saved));
	expect_refused("a COPY onto its own source", b->ops, 2, 0, 0, -EINVAL);

	ops[0] = b->ops[0];
	ops[1] = ops[0];
	ops[1].flags = DRM_PAGODA_VM_FIXED;
	ops[1].handle = pools[0].bo.handle;
	ops[1].offset = (uint64_t)(POOL_TILES - 1) * TILE;
	ops[1].size = 2 * TILE;			/* one tile past the pool */
	expect_refused("a tile past its pool", ops, 2, 0, 0, -EINVAL);
	ops[1].offset = 0;
	ops[1].size = TILE;
	if (segment_page == TILE) {
		ops[1].va += 4 * KIB;		/* a VRAM tile's VA out of its alignment */
		expect_refused("a VA not in its page's 64 KiB alignment", ops, 2, 0, 0, -EINVAL);
		ops[1].va -= 4 * KIB;
	}
	ops[1].flags = 0;			/* the driver would choose the VA */
	expect_refused("a queued MAP without a VA", ops, 2, 1, 0, -EINVAL);
	expect_refused("an unknown in-syncobj", ops, 1, 1, 0xdead, -ENOENT);
	/* against the tiled reservation: the batch stops there, 0 done */
	ops[1].flags = DRM_PAGODA_VM_FIXED;
	ops[1].size = 4 * KIB;
	expect_refused("a MAP of part of a tile", &ops[1], 1, 0, 0, -EINVAL);
	ops[1].op = DRM_PAGODA_VM_OP_UNMAP;
	ops[1].flags = 0;
	ops[1].handle = 0;
	expect_refused("an UNMAP of part of a tile", &ops[1], 1, 0, 0, -EINVAL);
	if (segment_page == TILE) {
		ops[1] = ops[0];
		ops[1].flags = DRM_PAGODA_VM_FIXED;
		ops[1].handle = sys.bo.handle;
		expect_refused("an allocation allowed in system memory", &ops[1], 1, 0, 0,
			       -EINVAL);
	}
	run_window("after the bad batches", w, WINDOW, ROUNDS);

	/* a queued COPY from outside any reservation: its fence says so */
	ops[0].op = DRM_PAGODA_VM_OP_COPY;
	ops[0].flags = 0;
	ops[0].va = tile_va(w);
	ops[0].offset = range + RANGE_TILES * TILE;
	ops[0].size = TILE;
	ret = pagoda_syncobj_create(&dev, &bound);
	if (!ret)
		ret = pagoda_vm_bind_queue(&dev, ops, 1, NULL, 0, bound, 0);
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, bound, 0, PT_JOB_TIMEOUT_NS);
	pt_check(!ret && pt_fence_error(&dev, bound) == -ENOENT,
		 "a queued COPY from outside any reservation: accepted, its fence carries ENOENT (%s, %s)",
		 strerror(-ret), strerror(-pt_fence_error(&dev, bound)));
	pagoda_syncobj_destroy(&dev, bound);
	run_window("after the failed queued bind", w, WINDOW, ROUNDS + 1);
	free(b);
}

/* With 64 KiB segment pages the window's spans are LEAF64 tables (debugfs "vms"). */
static void check_leaf64(void)
{
	char dir[PT_PATH_MAX], path[PT_PATH_MAX + 8];
	long long n;

	if (!pt_debugfs_dir(dir, sizeof(dir))) {
		printf("LEAF64 tables: no debugfs, not checked\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/vms", dir);
	n = pt_debugfs_value(path, "  tables", "leaf64 ");
	if (segment_page == TILE)
		pt_check(n >= (long long)(WINDOW * TILE / DRM_PAGODA_VM_TILED_ALIGN),
			 "the window's spans are LEAF64 tables (%lld)", n);
	else
		pt_check(n == 0, "4 KiB segment pages: no LEAF64 table (%lld)", n);
}

/*
 * Both pools evicted (debugfs "evict" of VRAM and hidden VRAM): the next
 * job brings them back and rewrites their tiles' entries first.
 */
static void test_evicted(void)
{
	char dir[PT_PATH_MAX], path[PT_PATH_MAX + 8];
	const char *segs[] = { "1", "2" };
	unsigned int i;
	FILE *f;

	if (!pt_debugfs_dir(dir, sizeof(dir))) {
		printf("pools evicted: no debugfs, not checked\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/evict", dir);
	for (i = 0; i < 2; i++) {
		int ok = 0;

		f = fopen(path, "w");
		if (f) {
			ok = fputs(segs[i], f) >= 0;
			ok = !fclose(f) && ok;
		}
		pt_check(ok, "debugfs: evict segment %s", segs[i]);
	}
	run_window("after the pools were evicted", (ROUNDS - 1) * STEP, WINDOW, ROUNDS + 3);
}

/* One VM_BIND of BIG_BATCH tile mappings, every tile then read by the GPU. */
static void test_big_batch(void)
{
	static struct batch b;
	const uint32_t first = RANGE_TILES - BIG_BATCH;
	uint32_t i, done = 0;
	int ret;

	b.count = 0;
	for (i = 0; i < BIG_BATCH; i++)
		add_map(&b, first + i, 1, i % 5 ? T_POOL : T_NULL, i % POOLS, (i * 7) % POOL_TILES);
	ret = pagoda_vm_bind(&dev, b.ops, b.count, 0, 0, &done);
	if (!pt_check(!ret && done == BIG_BATCH, "one VM_BIND of %u tile mappings (%s, %u done)",
		      BIG_BATCH, strerror(-ret), done))
		return;
	run_window("4096 tiles", first, BIG_BATCH, ROUNDS + 2);
}

static int setup(void)
{
	uint64_t size = (uint64_t)RANGE_TILES * TILE;
	int ret, p;

	ret = pagoda_query(&dev, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, &segment_page);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(&dev, &pools[0], POOL_TILES * TILE, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &pools[1], POOL_TILES * TILE, DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
				    0);
	if (!ret)
		ret = pt_buf_create(&dev, &sys, POOL_TILES * TILE, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd, 256 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &results, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &sem, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_vm_reserve(&dev, &range, size, DRM_PAGODA_VM_TILED, 0, 0);
	if (!pt_check(!ret && range % DRM_PAGODA_VM_TILED_ALIGN == 0,
		      "a tiled range of 1 GiB reserved at 0x%llx, two pools of %u tiles (%s)",
		      (unsigned long long)range, POOL_TILES, strerror(-ret)))
		return -1;
	memset(sem.bo.map, 0, sem.bo.size);
	for (p = 0; p < POOLS; p++) {
		for (uint64_t i = 0; i < sizeof(pool_model[p]); i++)
			pool_model[p][i] = (uint8_t)(i * 131 + p * 17 + (i >> 16));
		memcpy(pools[p].bo.map, pool_model[p], sizeof(pool_model[p]));
	}
	return 0;
}

int main(void)
{
	uint32_t round;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node (%s)", strerror(-ret)) || setup())
		return pt_exit();
	for (round = 0; round < ROUNDS; round++) {
		if (round % 2)
			step_queued(round);
		else
			step_sync(round);
	}
	check_leaf64();
	test_evicted();
	test_bad_batches();
	test_big_batch();
	ret = pagoda_vm_free(&dev, range, (uint64_t)RANGE_TILES * TILE);
	pt_check(!ret, "the range freed, every tile with it (%s)", strerror(-ret));
	pagoda_close(&dev);
	return pt_exit();
}
