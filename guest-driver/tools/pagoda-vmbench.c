// SPDX-License-Identifier: MIT
/*
 * Address-space and submission benchmark, run in a guest by
 * scripts/bench.sh after the video memory manager benchmark. Prints, in
 * one run, each figure next to a baseline measured in the same run:
 *  - a null ioctl (GET_PARAM) round trip, the baseline of what follows;
 *  - map + unmap pairs per second of 4 KiB, 64 KiB and 2 MiB granules,
 *    each waited for (the page-table update and TLB flush done);
 *  - binding 1 GiB (one 64 MiB allocation mapped 16 times) in 2 MiB pages
 *    and in 64 KiB pages, and the page tables each takes (debugfs "vms");
 *    on a linked adapter (tables on every GPU, each GPU's paging engine
 *    writing its own) against the same on a lone GPU of the same guest
 *    (scripts/bench.sh gives it one);
 *  - one VM_BIND of 4096 tile mappings (64 KiB each) with one out-fence,
 *    in one call and as a queue operation: time per tile against the null
 *    ioctl, and until the fence signals;
 *  - a no-op job's round trip (submit to syncobj signalled), against the
 *    null ioctl and against the device's own floor, a paging job's round
 *    trip (a bind of one zero page, waited); jobs per second when 512 are
 *    in flight;
 *  - when the guest has QEMU's NVMe controller (scripts/bench.sh gives it
 *    one on a null-co drive), the same kind of round trip through another
 *    device of the same QEMU: one 4 KiB O_DIRECT read (doorbell, DMA,
 *    MSI-X, blk-mq completion, the reader woken), and reads per second
 *    with 32 in flight; the job figures are then also given as ratios of
 *    these;
 *  - the first job after every allocation of the space was evicted (its
 *    allocations validated back and their mappings rewritten), against the
 *    no-op round trip;
 *  - on a linked adapter: a peer copy against a local one, and a no-op job
 *    of the last GPU waiting for a syncobj of a no-op job of the first,
 *    against the same chain within the first GPU.
 * Not a test: nothing depends on the figures.
 *   usage: pagoda-vmbench
 */
#define _GNU_SOURCE	/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <libpagoda.h>

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define GIB		(1024 * MIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define WAIT_NS		(60ll * 1000 * 1000 * 1000)

/* QEMU's NVMe controller, the baseline of the round trips, when there is one */
#define NVME_DEV	"/dev/nvme0n1"
#define NVME_BLOCK	4096
#define NVME_DEPTH	32
#define NVME_READS	4096

/*
 * The GPU the benchmarks run on: a lone one, or the only adapter; and a
 * linked adapter beside it, if there is one (peer copies, cross-GPU
 * chains, binds on a link against on the lone GPU).
 */
static struct pagoda_dev dev, linked;
static char dev_debugfs[64], link_debugfs[64];
static uint32_t out_sync, link_sync;

/* The NVMe baseline of this run: 0 when the guest has no NVMe controller. */
struct nvme_baseline {
	double read_s;		/* one 4 KiB read's round trip */
	double qd32_iops;	/* 4 KiB reads per second, 32 in flight */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double shorter(double a, double b)
{
	return a < b ? a : b;
}

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "pagoda-vmbench: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static void create_on(struct pagoda_dev *d, uint64_t size, uint32_t segments, uint32_t preferred,
		      struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = segments, .preferred_segment = preferred,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};

	check("create", pagoda_bo_create(d, &desc, bo));
}

static void create(uint64_t size, uint32_t segments, uint32_t preferred, struct pagoda_bo *bo)
{
	create_on(&dev, size, segments, preferred, bo);
}

/* Seconds per null ioctl, best of 3 runs of 2000. */
static double null_ioctl(void)
{
	double best = 1e9, t;
	uint64_t value;
	int run, i;

	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 2000; i++)
			pagoda_query(&dev, DRM_PAGODA_PARAM_CHIP_ID, &value);
		t = (now() - t) / 2000;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * Map + unmap pairs of @granule per second, each pair waited for; the
 * tables of the range exist already (a first pair made them).
 */
static double map_unmap_rate(struct pagoda_bo *bo, uint64_t base, uint64_t granule)
{
	unsigned int n = granule >= 2 * MIB ? 64 : 256, i;
	uint64_t va = base;
	double t;

	check("map", pagoda_vm_map(&dev, bo->handle, 0, granule, DRM_PAGODA_VM_FIXED, &va, 0, 0, 0));
	check("unmap", pagoda_vm_unmap(&dev, va, granule, 0));
	t = now();
	for (i = 0; i < n; i++) {
		/* the offset at the VA's low bits, as 64 KiB pages need */
		uint64_t va = base + (i % 8) * granule;

		check("map", pagoda_vm_map(&dev, bo->handle, (i % 8) * granule, granule,
					   DRM_PAGODA_VM_FIXED, &va, 0, 0, 0));
		check("unmap", pagoda_vm_unmap(&dev, va, granule, out_sync));
		check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
	}
	return n / (now() - t);
}

/* The last value after @word on a line of @dir's "vms" starting with @start, or -1. */
static long long debugfs_value(const char *dir, const char *start, const char *word)
{
	char line[512], path[96], *p;
	long long value = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vms", dir);
	f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, start, strlen(start)) && (p = strstr(line, word)))
			value = strtoll(p + strlen(word), NULL, 10);
	fclose(f);
	return value;
}

/*
 * 1 GiB: @bo (64 MiB of VRAM) mapped 16 times in one batch, at 2 MiB
 * aligned VAs plus @skew: 0 lets every 2 MiB be one large page, 64 KiB
 * makes them 64 KiB pages (16 entries of 4 KiB each, one repeated entry).
 */
static double bind_gib(struct pagoda_dev *d, const char *debugfs, uint32_t sync,
		       struct pagoda_bo *bo, uint64_t skew, const char *what, int report)
{
	struct drm_pagoda_vm_op ops[16];
	uint64_t res = 0, base, tables = 0;
	unsigned int i;
	double t;

	check("reserve", pagoda_vm_reserve(d, &res, GIB + 2 * MIB, 0, 0, 0));
	base = (res + 2 * MIB - 1) / (2 * MIB) * (2 * MIB) + skew;
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 16; i++) {
		ops[i].op = DRM_PAGODA_VM_OP_MAP;
		ops[i].flags = DRM_PAGODA_VM_FIXED;
		ops[i].handle = bo->handle;
		ops[i].size = 64 * MIB;
		ops[i].va = base + i * 64 * MIB;
	}
	t = now();
	check("bind 1 GiB", pagoda_vm_bind(d, ops, 16, sync, 0, NULL));
	check("wait", pagoda_syncobj_wait(d, sync, 0, WAIT_NS));
	t = now() - t;
	for (i = 0; i < 4; i++) {
		char word[8];
		long long n;

		snprintf(word, sizeof(word), "level%u ", i);
		n = debugfs_value(debugfs, "  tables", word);
		tables += n > 0 ? n : 0;
	}
	if (report)
		printf("  bind 1 GiB (16 x 64 MiB), %-18s %8.1f ms   (%.0f ns per 4 KiB of VA; %llu KiB of page tables per GPU)\n",
		       what, t * 1e3, t * 1e9 / 262144, (unsigned long long)(tables * 4));
	for (i = 0; i < 16; i++)
		check("unmap", pagoda_vm_unmap(d, ops[i].va, 64 * MIB, 0));
	check("free", pagoda_vm_free(d, res, GIB + 2 * MIB));
	return t;
}

/*
 * Binding 1 GiB on the link against on a lone GPU: best of 15 each,
 * interleaved, in 2 MiB and in 64 KiB pages, after one bind of each not
 * counted (the link's first makes its tables' chunks). A bind takes half
 * a millisecond or so: a slow spell of the host spans several of them.
 */
#define LINK_BIND_RUNS	15

static void bench_bind_link(struct pagoda_bo *bo)
{
	static const uint64_t skews[] = { 0, 64 * KIB };
	static const char *const names[] = { "2 MiB pages", "64 KiB pages" };
	struct pagoda_bo_desc desc = {
		.size = 64 * MIB, .segments = SEG(VRAM) | SEG(SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	uint64_t adapters = 1;
	struct pagoda_bo link_bo;
	char what[32];
	unsigned int k, run;

	if (!linked.fd || !strcmp(link_debugfs, dev_debugfs)) {
		printf("  (no lone GPU beside a link: no bind comparison)\n");
		return;
	}
	pagoda_query(&linked, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	check("create", pagoda_bo_create(&linked, &desc, &link_bo));
	for (k = 0; k < 2; k++) {
		double on_link = 1e9, on_lone = 1e9;

		snprintf(what, sizeof(what), "%s, %llu GPUs", names[k],
			 (unsigned long long)adapters);
		bind_gib(&linked, link_debugfs, link_sync, &link_bo, skews[k], what, 0);
		bind_gib(&dev, dev_debugfs, out_sync, bo, skews[k], names[k], 0);
		for (run = 0; run < LINK_BIND_RUNS; run++) {
			on_link = shorter(on_link, bind_gib(&linked, link_debugfs, link_sync,
							    &link_bo, skews[k], what, 0));
			on_lone = shorter(on_lone, bind_gib(&dev, dev_debugfs, out_sync, bo,
							    skews[k], names[k], 0));
		}
		printf("  bind 1 GiB in %s on %llu linked GPUs: %.2f ms, %.2fx the lone GPU's %.2f ms (best of %d each)\n",
		       names[k], (unsigned long long)adapters, on_link * 1e3, on_link / on_lone,
		       on_lone * 1e3, LINK_BIND_RUNS);
	}
	pagoda_bo_free(&linked, &link_bo);
}

static void bench_binds(double null_s)
{
	static const uint64_t granules[] = { 4 * KIB, 64 * KIB, 2 * MIB };
	uint64_t res = 0, base;
	struct pagoda_bo bo;
	unsigned int i;

	create(64 * MIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM, &bo);
	check("reserve", pagoda_vm_reserve(&dev, &res, 18 * 2 * MIB, 0, 0, 0));
	/* 2 MiB aligned: the 2 MiB granule is one large page */
	base = (res + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
	for (i = 0; i < 3; i++) {
		double rate = map_unmap_rate(&bo, base, granules[i]);

		printf("  map + unmap %4llu KiB, waited        %8.0f /s  (%.1f us each, %.0fx a null ioctl)\n",
		       (unsigned long long)(granules[i] / KIB), rate, 1e6 / rate,
		       1 / rate / null_s);
	}
	check("free", pagoda_vm_free(&dev, res, 18 * 2 * MIB));

	bind_gib(&dev, dev_debugfs, out_sync, &bo, 0, "2 MiB pages", 1);
	bind_gib(&dev, dev_debugfs, out_sync, &bo, 64 * KIB, "64 KiB pages", 1);
	bench_bind_link(&bo);
	pagoda_bo_free(&dev, &bo);
}

#define TILE		(64 * KIB)
#define TILES		4096u
#define POOL_TILES	32u

/*
 * One VM_BIND of TILES tile mappings (64 KiB each, over a pool of
 * POOL_TILES in VRAM) into a reserved range, with one out-fence: seconds
 * until the call returned and until the fence signalled (*@fence_s), then
 * all unmapped in one call. @queued: as a queue operation.
 */
static double bind_tiles(struct pagoda_bo *pool, uint64_t base, int queued, double *fence_s)
{
	static struct drm_pagoda_vm_op ops[TILES];
	double t, call;
	unsigned int i;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < TILES; i++) {
		ops[i].op = DRM_PAGODA_VM_OP_MAP;
		ops[i].flags = DRM_PAGODA_VM_FIXED;
		ops[i].handle = pool->handle;
		ops[i].offset = (uint64_t)(i * 7 % POOL_TILES) * TILE;
		ops[i].va = base + (uint64_t)i * TILE;
		ops[i].size = TILE;
	}
	t = now();
	if (queued)
		check("queued bind", pagoda_vm_bind_queue(&dev, ops, TILES, NULL, 0, out_sync, 0));
	else
		check("bind", pagoda_vm_bind(&dev, ops, TILES, out_sync, 0, NULL));
	call = now() - t;
	check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
	*fence_s = now() - t;
	check("unmap", pagoda_vm_unmap(&dev, base, (uint64_t)TILES * TILE, 0));
	return call;
}

/*
 * Tile binds, best of 3 per kind, per tile against the null ioctl: into a
 * tiled reservation (LEAF64 tables on a 64 KiB-page device), in one call
 * and queued, and into a plain one (16 entries of 4 KiB per tile).
 */
static void bench_tiles(double null_s)
{
	static const struct {
		uint32_t flags;
		int queued;
		const char *what;
	} kinds[] = {
		{ DRM_PAGODA_VM_TILED, 0, "tiled, one call" },
		{ DRM_PAGODA_VM_TILED, 1, "tiled, queued" },
		{ 0, 0, "4 KiB entries" },
	};
	struct pagoda_bo pool;
	unsigned int k;
	int i;

	create(POOL_TILES * TILE, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM, &pool);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		double call = 1e9, fence = 1e9, c, f;
		uint64_t res = 0;

		check("reserve", pagoda_vm_reserve(&dev, &res, GIB, kinds[k].flags, 0, 0));
		for (i = 0; i < 3; i++) {
			c = bind_tiles(&pool, res, kinds[k].queued, &f);
			call = c < call ? c : call;
			fence = f < fence ? f : fence;
		}
		check("free", pagoda_vm_free(&dev, res, GIB));
		printf("  bind %u tiles, %-16s %8.2f us per tile (%.1fx a null ioctl); fence after %.1f ms\n",
		       TILES, kinds[k].what, call * 1e6 / TILES, call / TILES / null_s,
		       fence * 1e3);
	}
	pagoda_bo_free(&dev, &pool);
}

/* 4 KiB reads per second with NVME_DEPTH in flight (Linux AIO), or 0. */
static double nvme_qd32(int fd, char *buf)
{
	struct iocb cbs[NVME_DEPTH], *list[NVME_DEPTH];
	struct io_event events[NVME_DEPTH];
	aio_context_t aio = 0;
	unsigned int i, issued = 0, done = 0;
	double t;
	long n;

	if (syscall(SYS_io_setup, NVME_DEPTH, &aio))
		return 0;
	for (i = 0; i < NVME_DEPTH; i++) {
		cbs[i] = (struct iocb){
			.aio_fildes = fd, .aio_lio_opcode = IOCB_CMD_PREAD,
			.aio_buf = (uintptr_t)(buf + i * NVME_BLOCK), .aio_nbytes = NVME_BLOCK,
			.aio_offset = (uint64_t)i * NVME_BLOCK, .aio_data = i,
		};
		list[i] = &cbs[i];
	}
	t = now();
	if (syscall(SYS_io_submit, aio, NVME_DEPTH, list) != NVME_DEPTH)
		goto fail;
	issued = NVME_DEPTH;
	while (done < NVME_READS) {
		n = syscall(SYS_io_getevents, aio, 1, NVME_DEPTH, events, NULL);
		if (n <= 0)
			goto fail;
		for (i = 0; i < n; i++) {
			if (events[i].res != NVME_BLOCK)
				goto fail;
			done++;
			if (issued < NVME_READS) {
				struct iocb *cb = &cbs[events[i].data];

				cb->aio_offset = (uint64_t)(issued++ % 4096) * NVME_BLOCK;
				if (syscall(SYS_io_submit, aio, 1, &cb) != 1)
					goto fail;
			}
		}
	}
	t = now() - t;
	syscall(SYS_io_destroy, aio);
	return NVME_READS / t;
fail:
	fprintf(stderr, "pagoda-vmbench: NVMe reads with %u in flight: %s\n", NVME_DEPTH,
		strerror(errno));
	syscall(SYS_io_destroy, aio);
	return 0;
}

/*
 * The NVMe baseline: a 4 KiB O_DIRECT read's round trip, best of 3 runs of
 * 100 (as the jobs' below), and reads per second with 32 in flight, best
 * of 3 runs of 4096.
 */
static struct nvme_baseline nvme_baseline(void)
{
	struct nvme_baseline nvme = { 0 };
	double t;
	char *buf;
	int fd, run, i;

	fd = open(NVME_DEV, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return nvme;
	buf = aligned_alloc(NVME_BLOCK, NVME_BLOCK * NVME_DEPTH);
	if (!buf) {
		close(fd);
		return nvme;
	}
	nvme.read_s = 1e9;
	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 100; i++)
			if (pread(fd, buf, NVME_BLOCK, (off_t)i * NVME_BLOCK) != NVME_BLOCK) {
				fprintf(stderr, "pagoda-vmbench: NVMe read: %s\n", strerror(errno));
				nvme.read_s = 0;
				goto out;
			}
		t = (now() - t) / 100;
		nvme.read_s = t < nvme.read_s ? t : nvme.read_s;
	}
	for (run = 0; run < 3; run++) {
		double iops = nvme_qd32(fd, buf);

		nvme.qd32_iops = iops > nvme.qd32_iops ? iops : nvme.qd32_iops;
	}
out:
	free(buf);
	close(fd);
	return nvme;
}

/* Round trip of one job, best of 3 runs of 100, in seconds. */
static double job_round_trip(uint32_t ctx, uint64_t va)
{
	struct drm_pagoda_sync out = { .handle = out_sync };
	double best = 1e9, t;
	int run, i;

	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 100; i++) {
			check("submit", pagoda_submit(&dev, ctx, va, 4, NULL, 0, &out, 1));
			check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
		}
		t = (now() - t) / 100;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * The device's own floor: one paging job's round trip, a 4 KiB zero page
 * mapped and the bind's out-syncobj waited for (best of 3 runs of 100).
 */
static double paging_round_trip(void)
{
	double best = 1e9, t;
	uint64_t res = 0, va;
	int run, i;

	check("reserve", pagoda_vm_reserve(&dev, &res, 64 * KIB, 0, 0, 0));
	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 100; i++) {
			va = res;
			check("map", pagoda_vm_map(&dev, 0, 0, 4 * KIB,
						   DRM_PAGODA_VM_FIXED | DRM_PAGODA_VM_ZERO, &va, 0, 0,
						   out_sync));
			check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
		}
		t = (now() - t) / 100;
		best = t < best ? t : best;
	}
	check("free", pagoda_vm_free(&dev, res, 64 * KIB));
	return best;
}

/*
 * 512 no-op jobs submitted back to back, then the last waited for: the
 * best of 3 runs, in seconds; @submit gets that run's time in the ioctls.
 */
static double in_flight(uint32_t ctx, uint64_t cmd_va, double *submit)
{
	struct drm_pagoda_sync out = { .handle = out_sync };
	double best = 1e9, t, t_submit;
	unsigned int run, i;

	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 512; i++)
			check("submit", pagoda_submit(&dev, ctx, cmd_va, 4, NULL, 0, &out, 1));
		t_submit = now() - t;
		check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
		t = now() - t;
		if (t < best) {
			best = t;
			*submit = t_submit;
		}
	}
	return best;
}

static void bench_jobs(double null_s, const struct nvme_baseline *nvme)
{
	struct drm_pagoda_sync out = { .handle = out_sync };
	struct pagoda_cmdbuf cb;
	struct pagoda_bo cmd, data;
	uint64_t cmd_va = 0, va;
	double rt, t, evicted, paging, submit = 0;
	unsigned int i;
	uint32_t ctx;
	char seg[4];

	create(64 * KIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, &cmd);
	check("map", pagoda_bo_map(&dev, &cmd));
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	pagoda_cmd_nop(&cb, 1);
	check("bind", pagoda_vm_map(&dev, cmd.handle, 0, cmd.size, 0, &cmd_va, 0, 0, 0));
	check("context", pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx));

	rt = job_round_trip(ctx, cmd_va);
	paging = paging_round_trip();
	printf("  paging job round trip (bind, waited) %8.1f us   (%.1fx a null ioctl)\n",
	       paging * 1e6, paging / null_s);
	printf("  no-op job round trip                 %8.1f us   (%.1fx a null ioctl, %.1fx a paging job)\n",
	       rt * 1e6, rt / null_s, rt / paging);
	t = in_flight(ctx, cmd_va, &submit);
	printf("  no-op jobs in flight                 %8.0f /s   (%.1f us each; submitting "
	       "took %.1f us of it)\n", 512 / t, t * 1e6 / 512, submit * 1e6 / 512);
	if (nvme->read_s) {
		printf("  against QEMU's NVMe: paging job %.2fx its 4 KiB read, no-op job %.2fx",
		       paging / nvme->read_s, rt / nvme->read_s);
		if (nvme->qd32_iops)
			printf(", jobs in flight %.2fx its reads at queue depth 32", 512 / t / nvme->qd32_iops);
		printf("\n");
	}

	/* 16 x 4 MiB in VRAM, mapped; VRAM evicted; the next job brings them back */
	for (i = 0; i < 16; i++) {
		create(4 * MIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM, &data);
		va = 0;
		check("bind", pagoda_vm_map(&dev, data.handle, 0, data.size, 0, &va, 0, 0, 0));
	}
	job_round_trip(ctx, cmd_va);
	snprintf(seg, sizeof(seg), "%u", DRM_PAGODA_SEGMENT_VRAM);
	{
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "%s/evict", dev_debugfs);
		f = fopen(path, "w");

		if (f) {
			fputs(seg, f);
			fclose(f);
		}
	}
	t = now();
	check("submit", pagoda_submit(&dev, ctx, cmd_va, 4, NULL, 0, &out, 1));
	check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
	evicted = now() - t;
	printf("  first job after all VRAM evicted     %8.1f ms   (64 MiB back in VRAM, 16 mappings rewritten; %.0fx a no-op job)\n",
	       evicted * 1e3, evicted / rt);
	pagoda_ctx_destroy(&dev, ctx);
}

#define PEER_COPY	(32 * MIB)
#define PEER_ROUNDS	7

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @n values (sorted in place). */
static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* An allocation of @size in GPU @adapter's VRAM, mapped; its VA. */
static uint64_t vram_on(uint32_t adapter, uint64_t size, struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = SEG(VRAM), .preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL, .adapter = adapter,
	};
	uint64_t va = 0;

	check("create", pagoda_bo_create(&linked, &desc, bo));
	check("map", pagoda_vm_map(&linked, bo->handle, 0, bo->size, 0, &va, 0, 0, 0));
	return va;
}

/* Seconds of one job copying @size from @src to @dst, best of 3. */
static double copy_job(uint32_t ctx, struct pagoda_cmdbuf *cb, uint64_t cmd_va, uint64_t src,
		       uint64_t dst, uint64_t size)
{
	struct drm_pagoda_sync out = { .handle = link_sync };
	double best = 1e9, t;
	int run;

	cb->used_bytes = 0;
	pagoda_cmd_copy(cb, src, dst, size);
	for (run = 0; run < 3; run++) {
		t = now();
		check("submit", pagoda_submit(&linked, ctx, cmd_va, cb->used_bytes, NULL, 0, &out, 1));
		check("wait", pagoda_syncobj_wait(&linked, link_sync, 0, WAIT_NS));
		t = now() - t;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * A linked adapter: a job of the first GPU copying 32 MiB from the last
 * GPU's VRAM through peer entries, and into it, against the same copy
 * within its own VRAM, in the same run.
 */
static void bench_peer(void)
{
	struct pagoda_bo cmd, a, b, peer;
	uint64_t adapters = 1, cmd_va = 0, a_va, b_va, peer_va;
	double local, from_peer, to_peer, from_ratio[PEER_ROUNDS], to_ratio[PEER_ROUNDS];
	struct pagoda_cmdbuf cb;
	unsigned int round;
	uint32_t ctx;

	if (!linked.fd) {
		printf("  (no linked adapter: no peer copy)\n");
		return;
	}
	pagoda_query(&linked, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	check("context", pagoda_ctx_create(&linked, DRM_PAGODA_PRIORITY_NORMAL, &ctx));
	create_on(&linked, 64 * KIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, &cmd);
	check("map", pagoda_bo_map(&linked, &cmd));
	check("bind", pagoda_vm_map(&linked, cmd.handle, 0, cmd.size, 0, &cmd_va, 0, 0, 0));
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	a_va = vram_on(0, PEER_COPY, &a);
	b_va = vram_on(0, PEER_COPY, &b);
	peer_va = vram_on(adapters - 1, PEER_COPY, &peer);
	/*
	 * Interleaved rounds (the first copies also wait for the clears): each
	 * round's best of each copy, and the ratio to the local copy of the
	 * same round; the median of the rounds' ratios, since one 2 ms copy
	 * meets the host's own hiccups, and a lucky or unlucky round alone
	 * would make the ratio.
	 */
	local = from_peer = to_peer = 1e9;
	for (round = 0; round < PEER_ROUNDS; round++) {
		double l = copy_job(ctx, &cb, cmd_va, a_va, b_va, PEER_COPY);
		double f = copy_job(ctx, &cb, cmd_va, peer_va, b_va, PEER_COPY);
		double t = copy_job(ctx, &cb, cmd_va, a_va, peer_va, PEER_COPY);

		from_ratio[round] = l / f;
		to_ratio[round] = l / t;
		local = shorter(local, l);
		from_peer = shorter(from_peer, f);
		to_peer = shorter(to_peer, t);
	}
	printf("  copy 32 MiB VRAM -> VRAM, one job    %8.0f MB/s\n", PEER_COPY / local / 1e6);
	printf("  the same from GPU %llu's VRAM (peer)   %8.0f MB/s   (%.2fx local, median of %d rounds)\n",
	       (unsigned long long)adapters - 1, PEER_COPY / from_peer / 1e6,
	       median(from_ratio, PEER_ROUNDS), PEER_ROUNDS);
	printf("  the same into GPU %llu's VRAM (peer)   %8.0f MB/s   (%.2fx local, median of %d rounds)\n",
	       (unsigned long long)adapters - 1, PEER_COPY / to_peer / 1e6,
	       median(to_ratio, PEER_ROUNDS), PEER_ROUNDS);
	pagoda_bo_free(&linked, &peer);
	pagoda_bo_free(&linked, &b);
	pagoda_bo_free(&linked, &a);
	pagoda_bo_unmap(&cmd);
	pagoda_bo_free(&linked, &cmd);
	pagoda_ctx_destroy(&linked, ctx);
}

/* Round trip of a no-op job of @first, then one of @second waiting for it: best of 3 x 100. */
static double chain_round_trip(uint32_t first, uint32_t second, uint64_t cmd_va, uint32_t mid)
{
	struct drm_pagoda_sync chain = { .handle = mid }, out = { .handle = link_sync };
	double best = 1e9, t;
	int run, i;

	for (run = 0; run < 3; run++) {
		t = now();
		for (i = 0; i < 100; i++) {
			check("submit", pagoda_submit(&linked, first, cmd_va, 4, NULL, 0, &chain, 1));
			check("submit", pagoda_submit(&linked, second, cmd_va, 4, &chain, 1, &out, 1));
			check("wait", pagoda_syncobj_wait(&linked, link_sync, 0, WAIT_NS));
		}
		best = shorter(best, (now() - t) / 100);
	}
	return best;
}

/*
 * A linked adapter: a no-op job of the last GPU that waits for a syncobj
 * of a no-op job of the first GPU, against two contexts of the first GPU
 * chained the same way.
 */
static void bench_chain(void)
{
	uint32_t first, same, other, mid;
	uint64_t adapters = 1, cmd_va = 0;
	struct pagoda_cmdbuf cb;
	struct pagoda_bo cmd;
	double local, cross;

	if (!linked.fd)
		return;
	pagoda_query(&linked, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	create_on(&linked, 64 * KIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, &cmd);
	check("map", pagoda_bo_map(&linked, &cmd));
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	pagoda_cmd_nop(&cb, 1);
	check("bind", pagoda_vm_map(&linked, cmd.handle, 0, cmd.size, 0, &cmd_va, 0, 0, 0));
	check("context", pagoda_ctx_create_on(&linked, 0, DRM_PAGODA_PRIORITY_NORMAL, &first));
	check("context", pagoda_ctx_create_on(&linked, 0, DRM_PAGODA_PRIORITY_NORMAL, &same));
	check("context", pagoda_ctx_create_on(&linked, adapters - 1, DRM_PAGODA_PRIORITY_NORMAL,
					      &other));
	check("syncobj", pagoda_syncobj_create(&linked, &mid));
	local = chain_round_trip(first, same, cmd_va, mid);
	cross = chain_round_trip(first, other, cmd_va, mid);
	local = shorter(local, chain_round_trip(first, same, cmd_va, mid));
	cross = shorter(cross, chain_round_trip(first, other, cmd_va, mid));
	printf("  syncobj chain of 2 no-op jobs, GPU 0 -> GPU 0 %8.1f us\n", local * 1e6);
	printf("  the same, GPU 0 -> GPU %llu               %8.1f us   (%.2fx)\n",
	       (unsigned long long)adapters - 1, cross * 1e6, cross / local);
	pagoda_syncobj_destroy(&linked, mid);
	pagoda_ctx_destroy(&linked, other);
	pagoda_ctx_destroy(&linked, same);
	pagoda_ctx_destroy(&linked, first);
	pagoda_bo_unmap(&cmd);
	pagoda_bo_free(&linked, &cmd);
}

/*
 * The Pagoda render nodes: the first lone GPU becomes @dev, the first
 * linked adapter @linked; with no lone GPU, the link is @dev too (then
 * opened twice). Each gets its debugfs directory (card minor = render
 * minor - 128). 0 or -ENODEV.
 */
static int open_adapters(void)
{
	char path[32];
	int minor, fd;
	uint64_t n;

	for (minor = 128; minor < 144; minor++) {
		struct pagoda_dev d = { 0 };
		char *dir;

		snprintf(path, sizeof(path), "/dev/dri/renderD%d", minor);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (pagoda_open_fd(&d, fd)) {
			close(fd);
			continue;
		}
		n = 1;
		pagoda_query(&d, DRM_PAGODA_PARAM_NUM_ADAPTERS, &n);
		if (n > 1 && !linked.fd) {
			linked = d;
			dir = link_debugfs;
		} else if (n == 1 && !dev.fd) {
			dev = d;
			dir = dev_debugfs;
		} else {
			pagoda_close(&d);
			continue;
		}
		snprintf(dir, 64, "/sys/kernel/debug/dri/%d", minor - 128);
	}
	if (!dev.fd && linked.fd) {
		if (pagoda_open(&dev))
			return -ENODEV;
		strcpy(dev_debugfs, link_debugfs);
	}
	return dev.fd ? 0 : -ENODEV;
}

int main(void)
{
	struct nvme_baseline nvme;
	double null_s;

	check("open", open_adapters());
	check("syncobj", pagoda_syncobj_create(&dev, &out_sync));
	if (linked.fd)
		check("syncobj", pagoda_syncobj_create(&linked, &link_sync));
	printf("address spaces and submission (pagoda-vmbench)\n");
	null_s = null_ioctl();
	printf("  null ioctl (GET_PARAM)               %8.1f us\n", null_s * 1e6);
	nvme = nvme_baseline();
	if (nvme.read_s)
		printf("  NVMe 4 KiB read round trip (QEMU's)  %8.1f us   (O_DIRECT; %.0f reads/s with 32 in flight)\n",
		       nvme.read_s * 1e6, nvme.qd32_iops);
	else
		printf("  (no NVMe controller in this guest: no NVMe baseline)\n");
	bench_binds(null_s);
	bench_tiles(null_s);
	bench_jobs(null_s, &nvme);
	bench_peer();
	bench_chain();
	if (linked.fd)
		pagoda_close(&linked);
	pagoda_close(&dev);
	return 0;
}
