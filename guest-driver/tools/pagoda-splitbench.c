// SPDX-License-Identifier: MIT
/*
 * DMA buffer splitting benchmark, run in a guest by scripts/bench.sh on a
 * small device (16 MiB of VRAM). Two traces of allocation uses, BUFFERS
 * physical-mode DMA buffers of STEPS steps over POOL allocations of 2 MiB
 * (VRAM only), each step binding one allocation at its own split point (a
 * hot set of 3 taken half of the time and a cycle over the 9 others
 * otherwise; or a working set of 4 that moves on by one every 8 steps),
 * are each run with the driver's victim policy (the allocation used
 * farthest ahead in the buffer's patch-location list first, then in the
 * buffers queued behind it) and with plain LRU (module parameter
 * split_lru), each in two ways: each buffer submitted once the one before
 * has completed (nothing queued behind it: the policy sees one buffer
 * ahead), and all the buffers queued behind one another before the first
 * runs (one thread each, in trace order: debugfs phys_hold holds the
 * queue while each joins it in turn, phys_queue counts them), so that the
 * policy sees the rest of the trace. For each it prints the bytes paged
 * in and out of VRAM (pagoda_bo_move tracepoint), the portions and the
 * time; then the bytes Belady's optimal schedule
 * pages for the same trace, computed offline with the whole trace known
 * (farthest next use, every eviction written back as the driver does) for
 * the number of allocations VRAM really holds at once beside what is
 * pinned there (measured: vram_capacity()), and the ratios. On a device whose VRAM holds the whole pool it runs the
 * trace unsplit instead (warmed up) and prints its throughput:
 * scripts/bench.sh runs both and compares the two throughputs.
 * Not a test: nothing depends on the figures.
 *   usage: pagoda-splitbench
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <libpagoda.h>

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define WAIT_NS		(120ll * 1000 * 1000 * 1000)
#define TRACING		"/sys/kernel/tracing"
#define PARAM		"/sys/module/pagoda/parameters/split_lru"

#define ALLOC_SIZE	(2 * MIB)
#define POOL		12
#define HOT		3
#define BUFFERS		6
#define STEPS		24
#define TOUCH		(64 * KIB)

#define CMD_WORDS	4096
#define PATCHES		1024

static struct pagoda_dev dev;
static uint32_t ctx, syncobjs[BUFFERS];
static struct pagoda_bo pool[POOL], results;
static unsigned int trace[BUFFERS][STEPS];
static char dbg[256];
static struct pagoda_physbuf buffers[BUFFERS];
static uint32_t buffer_cmds[BUFFERS][CMD_WORDS];
static struct drm_pagoda_phys_patch buffer_patches[BUFFERS][PATCHES];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "pagoda-splitbench: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(text, f) < 0 ? -EIO : 0;
	return fclose(f) ? -errno : ret;
}

static void create(struct pagoda_bo *bo, uint64_t size, uint32_t segments, uint32_t preferred)
{
	struct pagoda_bo_desc desc = {
		.size = size, .flags = DRM_PAGODA_BO_PHYSICAL, .segments = segments,
		.preferred_segment = preferred, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};

	check("allocation", pagoda_bo_create(&dev, &desc, bo));
}

enum trace_kind {
	TRACE_SCAN,		/* a hot set beside a cycle over the rest: LRU's worst case */
	TRACE_LOCALITY,		/* a working set that drifts: temporal locality */
	NUM_TRACES
};

static const char *const trace_names[NUM_TRACES] = {
	[TRACE_SCAN] = "hot set and scan",
	[TRACE_LOCALITY] = "drifting working set",
};

/* Steps a working set of the locality trace stays before it moves on by one. */
#define DRIFT_STEPS	8
#define WORKING_SET	4

/*
 * The trace, fixed pseudo-random: for TRACE_SCAN each step takes one of
 * the hot set half of the time and the next of a cycle over the rest
 * otherwise; for TRACE_LOCALITY each takes one of WORKING_SET consecutive
 * allocations, the set moving on by one every DRIFT_STEPS steps.
 */
static void make_trace(enum trace_kind kind)
{
	uint64_t state = 0x5eed;
	unsigned int b, s, cycle = 0, step = 0;

	for (b = 0; b < BUFFERS; b++)
		for (s = 0; s < STEPS; s++, step++) {
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			if (kind == TRACE_LOCALITY)
				trace[b][s] = (step / DRIFT_STEPS + (state >> 40) % WORKING_SET) % POOL;
			else if ((state >> 33) & 1)
				trace[b][s] = (state >> 40) % HOT;
			else
				trace[b][s] = HOT + cycle++ % (POOL - HOT);
		}
}

/* Buffer @b of the trace: each step binds its allocation to slot 1, fills and sums a part of it. */
static void build_buffer(unsigned int b)
{
	struct pagoda_physbuf *pb = &buffers[b];
	unsigned int s;

	pagoda_physbuf_init(pb, buffer_cmds[b], sizeof(buffer_cmds[b]), buffer_patches[b],
			    PATCHES);
	pagoda_phys_bind(pb, 0, POOL, 0);
	for (s = 0; s < STEPS; s++) {
		pagoda_phys_split(pb);
		pagoda_phys_bind(pb, 1, trace[b][s], 0);
		pagoda_phys_fill(pb, 1, (s % 16) * TOUCH, TOUCH, b << 16 | s);
		pagoda_phys_crc32(pb, 1, 0, TOUCH, 0, 4 * (b * STEPS + s));
	}
}

/* Submit buffer @b; its last portion's fence goes to its syncobj. */
static int submit_buffer(unsigned int b, uint32_t *portions)
{
	struct drm_pagoda_phys_alloc allocs[POOL + 1];
	struct drm_pagoda_sync out = { syncobjs[b], 0, 0 };
	unsigned int i;

	for (i = 0; i < POOL; i++)
		allocs[i] = (struct drm_pagoda_phys_alloc){ pool[i].handle, DRM_PAGODA_PHYS_WRITE };
	allocs[POOL] = (struct drm_pagoda_phys_alloc){ results.handle, DRM_PAGODA_PHYS_WRITE };
	return pagoda_submit_phys(&dev, ctx, &buffers[b], allocs, POOL + 1, NULL, 0, &out, 1,
				  portions);
}

/* Buffer @b, waited for. */
static int run_buffer(unsigned int b, uint32_t *portions)
{
	int ret = submit_buffer(b, portions);

	return ret ? ret : pagoda_syncobj_wait(&dev, syncobjs[b], 0, WAIT_NS);
}

/* A buffer submitted from a thread of its own, so that it waits in the queue. */
struct queued_buffer {
	pthread_t thread;
	unsigned int b;
	uint32_t portions;
	int ret;
	int submitted;		/* its submission returned */
};

static void *queued_submit(void *arg)
{
	struct queued_buffer *q = arg;

	q->ret = submit_buffer(q->b, &q->portions);
	__atomic_store_n(&q->submitted, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Until @n buffers are queued, or @q's submission returned: it failed. */
static int wait_queued(struct queued_buffer *q, int n)
{
	int len;

	while ((len = pagoda_phys_queued(dbg)) >= 0 && len < n) {
		/* nothing returns while the queue is held but a failure */
		if (__atomic_load_n(&q->submitted, __ATOMIC_ACQUIRE))
			return q->ret ? q->ret : -EPROTO;
		usleep(200);
	}
	return len < 0 ? len : 0;
}

/*
 * Every buffer of the trace queued behind the one before, then run: the
 * queue is held (debugfs phys_hold open) while buffer b + 1's thread
 * submits only once buffer b is in the queue, so the queue's order is the
 * trace's; closing phys_hold lets them run. Times from that close.
 */
static int run_queued(double *start, uint32_t *portions)
{
	static struct queued_buffer q[BUFFERS];
	unsigned int b, started = 0;
	char path[300];
	int hold, ret = 0;

	snprintf(path, sizeof(path), "%s/phys_hold", dbg);
	hold = open(path, O_WRONLY);
	if (hold < 0)
		return -errno;
	for (b = 0; b < BUFFERS && !ret; b++) {
		q[b] = (struct queued_buffer){ .b = b };
		ret = -pthread_create(&q[b].thread, NULL, queued_submit, &q[b]);
		if (ret)
			break;
		started++;
		ret = wait_queued(&q[b], b + 1);
	}
	*start = now();
	close(hold);
	for (b = 0; b < started; b++) {
		pthread_join(q[b].thread, NULL);
		if (!ret)
			ret = q[b].ret;
		if (!ret)
			ret = pagoda_syncobj_wait(&dev, syncobjs[b], 0, WAIT_NS);
		*portions += q[b].portions;
	}
	return ret;
}

/* Bytes moved into or out of VRAM (segment 1) since the trace was cleared. */
static uint64_t traced_vram_bytes(void)
{
	char line[512];
	uint64_t bytes = 0;
	FILE *f = fopen(TRACING "/trace", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned int from, to;
		unsigned long long size;
		char *p = strstr(line, "segment ");

		if (!strstr(line, "pagoda_bo_move:") || !p ||
		    sscanf(p, "segment %u -> %u size=%llu", &from, &to, &size) != 3)
			continue;
		if ((from == DRM_PAGODA_SEGMENT_VRAM || to == DRM_PAGODA_SEGMENT_VRAM) &&
		    !strstr(line, " clear"))
			bytes += size;
	}
	fclose(f);
	return bytes;
}

struct result {
	uint64_t bytes;
	uint32_t portions;
	double seconds;
};

/*
 * Run the whole trace, from VRAM emptied when @cold; each buffer waited
 * for, or all @queued behind one another. @bytes needs tracing.
 */
static struct result run_trace(int cold, int queued)
{
	struct result r = { 0 };
	unsigned int b;
	double t;

	if (cold && dbg[0]) {
		char path[300];

		snprintf(path, sizeof(path), "%s/evict", dbg);
		write_file(path, "1");
	}
	write_file(TRACING "/trace", "");
	write_file(TRACING "/events/pagoda/pagoda_bo_move/enable", "1");
	t = now();
	for (b = 0; b < BUFFERS; b++)
		build_buffer(b);
	if (queued) {
		check("queued split submissions", run_queued(&t, &r.portions));
	} else {
		for (b = 0; b < BUFFERS; b++) {
			uint32_t portions = 0;

			check("split submission", run_buffer(b, &portions));
			r.portions += portions;
		}
	}
	r.seconds = now() - t;
	write_file(TRACING "/events/pagoda/pagoda_bo_move/enable", "0");
	r.bytes = traced_vram_bytes();
	return r;
}

/* Belady: misses and evictions with @capacity allocations, the whole trace known. */
static uint64_t belady_bytes(unsigned int capacity)
{
	const unsigned int n = BUFFERS * STEPS;
	const unsigned int *seq = &trace[0][0];
	int resident[POOL] = { 0 };
	unsigned int used = 0, i, j, a;
	uint64_t moves = 0;

	for (i = 0; i < n; i++) {
		unsigned int victim = POOL, far = 0;

		if (resident[seq[i]])
			continue;
		moves++;			/* paged in */
		if (used < capacity) {
			resident[seq[i]] = 1;
			used++;
			continue;
		}
		for (a = 0; a < POOL; a++) {
			if (!resident[a])
				continue;
			for (j = i + 1; j < n && seq[j] != a; j++)
				;
			if (victim == POOL || j > far) {
				victim = a;
				far = j;
			}
		}
		resident[victim] = 0;
		resident[seq[i]] = 1;
		moves++;			/* written back */
	}
	return moves * ALLOC_SIZE;
}

/*
 * How many of the pool's allocations VRAM holds at once beside what stays
 * pinned there (the console's framebuffer, the driver's own tables): as
 * many 2 MiB VRAM-only physically accessed allocations as can be made
 * resident together once VRAM is emptied. Belady's schedule is computed
 * for that capacity, the one the driver has.
 */
static unsigned int vram_capacity(void)
{
	struct pagoda_bo_desc desc = {
		.size = ALLOC_SIZE, .flags = DRM_PAGODA_BO_PHYSICAL, .segments = SEG(VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct pagoda_bo probe[POOL + 1];
	char path[300];
	unsigned int n, i;

	snprintf(path, sizeof(path), "%s/evict", dbg);
	write_file(path, "1");
	for (n = 0; n <= POOL; n++) {
		if (pagoda_bo_create(&dev, &desc, &probe[n]))
			break;
		if (pagoda_make_resident(&dev, &probe[n].handle, 1, NULL)) {
			pagoda_bo_free(&dev, &probe[n]);
			break;
		}
	}
	for (i = 0; i < n; i++) {
		pagoda_evict(&dev, &probe[i].handle, 1);
		pagoda_bo_free(&dev, &probe[i]);
	}
	return n;
}

static void print_run(const char *label, const struct result *r)
{
	printf("%-20s%u portions, %.3f s, %.0f steps/s, %.1f MiB paged\n", label, r->portions,
	       r->seconds, BUFFERS * STEPS / r->seconds, r->bytes / (double)MIB);
}

/* The trace with the driver's victims and with plain LRU, each buffer waited for or all @queued. */
static void compare(int queued, uint64_t optimal)
{
	struct result next_use, lru;

	write_file(PARAM, "0");
	next_use = run_trace(1, queued);
	write_file(PARAM, "1");
	lru = run_trace(1, queued);
	write_file(PARAM, "0");
	print_run(queued ? "driver (queued):" : "driver (next use):", &next_use);
	print_run(queued ? "plain LRU (queued):" : "plain LRU:", &lru);
	printf("driver / optimal %.2fx, LRU / optimal %.2fx, driver / LRU %.2fx\n",
	       (double)next_use.bytes / optimal, (double)lru.bytes / optimal,
	       (double)next_use.bytes / lru.bytes);
}

int main(void)
{
	struct result unsplit;
	uint64_t vram = 0, optimal;
	unsigned int i, capacity, kind;

	check("open", pagoda_open(&dev));
	check("context", pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx));
	for (i = 0; i < BUFFERS; i++)
		check("syncobj", pagoda_syncobj_create(&dev, &syncobjs[i]));
	check("VRAM size", pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram));
	if (access(TRACING "/trace", F_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	if (pagoda_debugfs_dir(dbg, sizeof(dbg)))
		dbg[0] = 0;
	for (i = 0; i < POOL; i++)
		create(&pool[i], ALLOC_SIZE, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM);
	create(&results, 64 * KIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	printf("split benchmark: %u buffers of %u steps over %u allocations of %llu MiB, %llu MiB of VRAM\n",
	       BUFFERS, STEPS, POOL, ALLOC_SIZE / MIB, (unsigned long long)(vram / MIB));

	if (vram >= POOL * ALLOC_SIZE) {
		make_trace(TRACE_SCAN);
		run_trace(1, 0);	/* warm: every allocation in VRAM */
		unsplit = run_trace(0, 0);
		print_run("unsplit:", &unsplit);
		return 0;
	}
	capacity = vram_capacity();
	printf("VRAM holds %u of them at once (%llu MiB of it pinned by others: the console, the driver's tables)\n",
	       capacity, (unsigned long long)((vram - capacity * ALLOC_SIZE) / MIB));
	for (kind = 0; kind < NUM_TRACES; kind++) {
		make_trace(kind);
		optimal = belady_bytes(capacity);
		printf("trace: %s\n", trace_names[kind]);
		printf("Belady (offline, %u at once): %.1f MiB paged\n", capacity,
		       optimal / (double)MIB);
		printf("each buffer submitted once the one before completed (none queued behind it):\n");
		compare(0, optimal);
		if (!dbg[0]) {
			printf("queued: no debugfs, skipped\n");
			continue;
		}
		printf("all %u buffers queued behind one another first (the rest of the trace ahead):\n",
		       BUFFERS);
		compare(1, optimal);
	}
	return 0;
}
