// SPDX-License-Identifier: MIT
/*
 * Residency, pinning and eviction as several users meet them at once:
 *
 * - MakeResident with no room left in any allowed segment gets ENOSPC
 *   with bytes_to_trim 0 (not the ENOMEM TTM answers), and changes
 *   nothing;
 * - an allocation made resident (pinned) outside its preferred segment
 *   stays usable where it is: a job using it, a second mapping of it and
 *   a physical-mode buffer using a resident physically accessed one all
 *   run; once released it may move back to the preferred segment;
 * - the debugfs "evict" hook, written in a loop by a second thread, never
 *   evicts a pinned allocation: every one of 100 physical-mode buffers
 *   submitted meanwhile (each paged in, patched and pinned in the
 *   aperture) runs right and no context is banned;
 * - four processes, each with as much mapped as VRAM holds, run random
 *   jobs and residency changes beside the "evict" hook: every job runs
 *   and writes what it should, wherever its allocations went, and the
 *   debug kernel's lockdep sees nothing (validation evicts with a
 *   transaction's ticket only while the transaction may still lock);
 * - the debugfs "paging_fault" hook, written in a loop by a second thread
 *   (each write runs paging jobs that fault in the kernel context), fails
 *   only its own jobs: allocations moved between VRAM, system memory and
 *   hidden VRAM meanwhile, and read by the CPU through the host aperture,
 *   keep every byte, and each of the hook's own checks passes;
 * - 24 processes whose jobs fault at once (more records than the
 *   device's fault queue holds, when they come together): every job fails
 *   with EFAULT and the driver logs nothing at error level (faults, and
 *   records lost, are the users' doing: info level).
 */
#include <pthread.h>
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024ull * 1024)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define BLOCK		(4 * MIB)
#define SMALL		(64 * KIB)
/* VRAM-only allocations enough to fill the suite's 64 MiB of VRAM to the last 4 MiB, and more */
#define MAX_FILLERS	128

static struct pagoda_dev dev;
static uint64_t vram_size;
static char evict_path[PT_PATH_MAX];

static int create(struct pagoda_dev *d, uint64_t size, uint32_t segments, uint32_t flags,
		  struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = segments, .flags = flags,
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};

	return pagoda_bo_create(d, &desc, bo);
}

static struct drm_pagoda_gem_info info_of(uint32_t handle)
{
	struct drm_pagoda_gem_info info;

	memset(&info, 0xff, sizeof(info));
	pagoda_bo_info(&dev, handle, &info);
	return info;
}

/*
 * VRAM-only allocations made resident one at a time until one finds no
 * room: @failure is what that MakeResident got (or GEM_CREATE, which needs
 * room in VRAM too), @trim its bytes_to_trim.
 */
struct fillers {
	struct pagoda_bo bo[MAX_FILLERS];
	unsigned int created, resident;
	int failure;
	uint64_t trim;
};

/* @count more of @size, all created first (they evict one another), then made resident. */
static void add_fillers(struct fillers *f, uint64_t size, unsigned int count)
{
	unsigned int i = f->created;

	f->failure = 0;
	for (; count-- && f->created < MAX_FILLERS; f->created++) {
		f->failure = create(&dev, size, SEG(VRAM), 0, &f->bo[f->created]);
		if (f->failure)
			return;
	}
	for (; i < f->created; i++) {
		f->trim = ~0ull;
		f->failure = pagoda_make_resident(&dev, &f->bo[i].handle, 1, &f->trim);
		if (f->failure)
			return;
		f->resident++;
	}
}

/*
 * Everything in VRAM pinned: 4 MiB allocations, then 64 KiB ones to the
 * last page (their creation fails once VRAM is full of pinned ones).
 */
static void fill_vram(struct fillers *f)
{
	memset(f, 0, sizeof(*f));
	add_fillers(f, BLOCK, vram_size / BLOCK + 2);
	do
		add_fillers(f, SMALL, 1);
	while (!f->failure && f->created < MAX_FILLERS);
}

/* The fillers are released: the resident ones first (a filler that failed is not). */
static void release_fillers(struct fillers *f)
{
	unsigned int i;
	struct drm_pagoda_gem_info info;

	for (i = 0; i < f->created; i++) {
		info = info_of(f->bo[i].handle);
		if (info.residency)
			pagoda_evict(&dev, &f->bo[i].handle, 1);
		pagoda_bo_free(&dev, &f->bo[i]);
	}
	f->created = f->resident = 0;
}

static void test_make_resident_enospc(void)
{
	struct fillers f;
	struct drm_pagoda_gem_info info;

	memset(&f, 0, sizeof(f));
	add_fillers(&f, BLOCK, vram_size / BLOCK + 2);
	pt_check(f.resident > 0 && f.resident < f.created,
		 "%u of %u VRAM-only allocations of 4 MiB made resident before VRAM is full",
		 f.resident, f.created);
	pt_check(f.failure == -ENOSPC && f.trim == 0,
		 "the next MakeResident: %s, bytes_to_trim %llu (want ENOSPC, 0)",
		 strerror(-f.failure), (unsigned long long)f.trim);
	if (f.created) {
		info = info_of(f.bo[f.created - 1].handle);
		pt_check(info.residency == 0, "and changes nothing: residency %u", info.residency);
	}
	release_fillers(&f);
}

/* Fill @b's first @size bytes with @pattern on the GPU. */
static int gpu_fill(uint32_t ctx, struct pt_buf *cmd, uint64_t va, uint64_t size,
		    uint32_t pattern)
{
	struct pagoda_cmdbuf cb;

	pagoda_cmdbuf_init(&cb, cmd->bo.map, 4096);
	pagoda_cmd_fill(&cb, va, size, pattern);
	return pt_run(&dev, ctx, cmd, &cb);
}

/* Fill the first @size bytes of @p with @pattern by a physical-mode buffer, and wait. */
static int phys_fill(uint32_t ctx, struct pagoda_bo *p, uint64_t size, uint32_t pattern)
{
	struct drm_pagoda_phys_alloc alloc = { p->handle, DRM_PAGODA_PHYS_WRITE };
	struct drm_pagoda_phys_patch patches[4];
	struct pagoda_physbuf pb;
	uint32_t words[64];

	pagoda_physbuf_init(&pb, words, sizeof(words), patches, 4);
	pagoda_phys_bind(&pb, 0, 0, 0);
	pagoda_phys_fill(&pb, 0, 0, size, pattern);
	return pt_run_phys(&dev, ctx, &pb, &alloc, 1, NULL);
}

/* The number of 32-bit words of @bytes at @map that are not @pattern. */
static uint64_t count_not(const void *map, uint64_t bytes, uint32_t pattern)
{
	const volatile uint32_t *w = map;
	uint64_t i, bad = 0;

	for (i = 0; i < bytes / 4; i++)
		bad += w[i] != pattern;
	return bad;
}

static void test_pinned_elsewhere(uint32_t ctx, struct pt_buf *cmd)
{
	struct drm_pagoda_gem_info info;
	struct pagoda_bo p;
	struct pt_buf x;
	struct fillers f;
	uint64_t va2 = 0;
	int ret;

	ret = pt_buf_create_at(&dev, &x, BLOCK, SEG(VRAM) | SEG(VRAM_HIDDEN) | SEG(SYSTEM),
			       DRM_PAGODA_SEGMENT_VRAM, 0, 0);
	if (!pt_check(!ret, "X: 4 MiB preferring VRAM, mapped: %s", strerror(-ret)))
		return;
	ret = gpu_fill(ctx, cmd, x.va, x.bo.size, 0x11111111);
	pt_check(!ret && !count_not(x.bo.map, x.bo.size, 0x11111111), "a job fills X: %s",
		 strerror(-ret));

	fill_vram(&f);
	info = info_of(x.bo.handle);
	pt_check((f.failure == -ENOSPC || f.failure == -ENOMEM) &&
		 info.segment != DRM_PAGODA_SEGMENT_VRAM,
		 "VRAM full of %u resident VRAM-only allocations (the next: %s) evicts X (segment %u)",
		 f.resident, strerror(-f.failure), info.segment);
	ret = pagoda_make_resident(&dev, &x.bo.handle, 1, NULL);
	info = info_of(x.bo.handle);
	pt_check(!ret && info.residency == 1 && info.segment != DRM_PAGODA_SEGMENT_VRAM,
		 "X made resident where it is: %s, segment %u", strerror(-ret), info.segment);
	ret = create(&dev, 64 * KIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_BO_PHYSICAL, &p);
	if (!ret)
		ret = pagoda_bo_map(&dev, &p);
	if (!ret)
		ret = pagoda_make_resident(&dev, &p.handle, 1, NULL);
	info = info_of(p.handle);
	pt_check(!ret && info.segment == DRM_PAGODA_SEGMENT_APERTURE,
		 "P, physically accessed, preferring VRAM, made resident in the aperture: %s, segment %u",
		 strerror(-ret), info.segment);
	release_fillers(&f);

	ret = gpu_fill(ctx, cmd, x.va, x.bo.size, 0x22222222);
	pt_check(!ret && !count_not(x.bo.map, x.bo.size, 0x22222222),
		 "with VRAM free again, a job uses X pinned where it is: %s", strerror(-ret));
	ret = pagoda_vm_map(&dev, x.bo.handle, 0, x.bo.size, 0, &va2, 0, 0, 0);
	pt_check(!ret, "X mapped at a second VA: %s", strerror(-ret));
	if (!ret) {
		ret = gpu_fill(ctx, cmd, va2, 64 * KIB, 0x33333333);
		pt_check(!ret && !count_not(x.bo.map, 64 * KIB, 0x33333333) &&
			 !count_not((char *)x.bo.map + 64 * KIB, 64 * KIB, 0x22222222),
			 "a job writes X through it: %s", strerror(-ret));
	}

	ret = phys_fill(ctx, &p, p.size, 0x44444444);
	pt_check(!ret && !count_not(p.map, p.size, 0x44444444),
		 "a physical-mode buffer uses P pinned in the aperture: %s", strerror(-ret));

	pt_check(!pagoda_evict(&dev, &x.bo.handle, 1) && !pagoda_evict(&dev, &p.handle, 1),
		 "X and P released");
	ret = gpu_fill(ctx, cmd, x.va, x.bo.size, 0x55555555);
	info = info_of(x.bo.handle);
	pt_check(!ret && !count_not(x.bo.map, x.bo.size, 0x55555555) &&
		 info.segment == DRM_PAGODA_SEGMENT_VRAM,
		 "the next job moves X back to VRAM: %s, segment %u", strerror(-ret), info.segment);

	if (va2)
		pagoda_vm_unmap(&dev, va2, x.bo.size, 0);
	pagoda_bo_unmap(&p);
	pagoda_bo_free(&dev, &p);
	pt_buf_destroy(&dev, &x);
}

/* Writes segment ids to debugfs "evict" until told to stop. */
struct evictor {
	pthread_t thread;
	const char *segments;
	volatile int stop;
	unsigned long writes;
};

static void *evict_loop(void *arg)
{
	struct evictor *e = arg;
	const char *s;

	while (!e->stop)
		for (s = e->segments; *s && !e->stop; s++) {
			char id[2] = { *s, 0 };

			if (!pt_write_file(evict_path, id))
				e->writes++;
		}
	return NULL;
}

static void test_evict_hook_vs_phys(uint32_t ctx)
{
	struct drm_pagoda_ctx_query q;
	struct evictor e = { .segments = "3" };
	struct pagoda_bo p;
	unsigned int i, ok = 0, first_error = 0;
	int ret;

	ret = create(&dev, 64 * KIB, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_BO_PHYSICAL, &p);
	if (!ret)
		ret = pagoda_bo_map(&dev, &p);
	if (!pt_check(!ret, "a physically accessed allocation: %s", strerror(-ret)))
		return;
	if (!pt_check(!pthread_create(&e.thread, NULL, evict_loop, &e),
		      "a thread evicts the aperture in a loop"))
		goto out;
	for (i = 0; i < 100; i++) {
		ret = phys_fill(ctx, &p, 4 * KIB, 0xa0000000 + i);
		if (!ret && !count_not(p.map, 4 * KIB, 0xa0000000 + i))
			ok++;
		else if (!first_error)
			first_error = ret ? -ret : EILSEQ;
	}
	e.stop = 1;
	pthread_join(e.thread, NULL);
	pt_check(ok == 100, "%u of 100 physical-mode buffers ran right beside %lu evictions (%s)",
		 ok, e.writes, first_error ? strerror(first_error) : "no error");
	pt_check(e.writes > 0, "the hook evicted meanwhile");
	pt_check(pt_ctx_banned(&dev, ctx, &q) == 0, "the context is not banned");
out:
	pagoda_bo_unmap(&p);
	pagoda_bo_free(&dev, &p);
}

/* ---- the fault-injection hook beside moves ---- */

struct fault_injector {
	pthread_t thread;
	char path[PT_PATH_MAX];
	volatile int stop;
	unsigned long writes, failed;
};

static void *fault_loop(void *arg)
{
	struct fault_injector *f = arg;

	while (!f->stop) {
		if (pt_write_file(f->path, "1"))
			f->failed++;
		f->writes++;
	}
	return NULL;
}

/* 0 when every word of @map is @pattern, else -EILSEQ. */
static int check_pattern(const uint32_t *map, uint64_t bytes, uint32_t pattern)
{
	return count_not(map, bytes, pattern) ? -EILSEQ : 0;
}

/*
 * Rounds of: two allocations (one preferring VRAM, one preferring hidden
 * VRAM, which the CPU reaches through the host aperture's slots) written
 * by the CPU, evicted from their segments by the "evict" hook (paging
 * TRANSFERs), made resident again (moved back) and read, all while a
 * thread injects paging faults.
 */
static void test_fault_hook_vs_moves(void)
{
	struct fault_injector f = { 0 };
	struct pagoda_bo_desc hidden = {
		.size = MIB, .segments = SEG(VRAM_HIDDEN) | SEG(SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct pagoda_bo a, b;
	unsigned int round, ok = 0;
	int ret, first_error = 0;

	ret = create(&dev, MIB, SEG(VRAM) | SEG(SYSTEM), 0, &a);
	if (!ret)
		ret = pagoda_bo_create(&dev, &hidden, &b);
	if (!ret)
		ret = pagoda_bo_map(&dev, &a) ?: pagoda_bo_map(&dev, &b);
	if (!pt_check(!ret, "two allocations, mapped: %s", strerror(-ret)))
		return;
	pagoda_debugfs_dir(f.path, sizeof(f.path));
	strncat(f.path, "/paging_fault", sizeof(f.path) - strlen(f.path) - 1);
	if (!pt_check(!pthread_create(&f.thread, NULL, fault_loop, &f),
		      "a thread injects paging faults in a loop"))
		goto out;
	for (round = 0; round < 30; round++) {
		uint32_t pattern = 0x5a000000 + round;
		uint32_t *pa = a.map, *pb = b.map;
		uint64_t i;

		for (i = 0; i < MIB / 4; i++)
			pa[i] = pb[i] = pattern;
		ret = pt_write_file(evict_path, "1") ?: pt_write_file(evict_path, "2") ?:
		      check_pattern(a.map, MIB, pattern) ?: check_pattern(b.map, MIB, pattern) ?:
		      pagoda_make_resident(&dev, &a.handle, 1, NULL) ?:
		      pagoda_make_resident(&dev, &b.handle, 1, NULL) ?:
		      check_pattern(a.map, MIB, pattern) ?: check_pattern(b.map, MIB, pattern);
		pagoda_evict(&dev, &a.handle, 1);
		pagoda_evict(&dev, &b.handle, 1);
		if (!ret)
			ok++;
		else if (!first_error)
			first_error = -ret;
	}
	f.stop = 1;
	pthread_join(f.thread, NULL);
	pt_check(ok == 30, "%u of 30 rounds of moves kept every byte beside %lu fault injections (%s)",
		 ok, f.writes, first_error ? strerror(first_error) : "no error");
	pt_check(f.writes > 0 && !f.failed, "%lu of %lu injections failed their own checks",
		 f.failed, f.writes);
	pt_check(!info_of(a.handle).residency && !info_of(b.handle).residency,
		 "nothing left resident");
out:
	pagoda_bo_unmap(&a);
	pagoda_bo_unmap(&b);
	pagoda_bo_free(&dev, &a);
	pagoda_bo_free(&dev, &b);
}

/* ---- several processes ---- */

#define WORKERS		4
#define WORKER_ROUNDS	150
#define SLOT		(64 * KIB)

/*
 * One worker: VRAM's worth of 4 MiB allocations preferring VRAM, mapped;
 * rounds of a job filling a random 64 KiB slot of one of them (checked by
 * the CPU), a MakeResident or Evict of one; exits 0 when all went right.
 */
static int worker(unsigned int id)
{
	unsigned int n = vram_size / BLOCK, i, round, bad = 0;
	struct pt_buf bufs[MAX_FILLERS], cmd;
	unsigned int resident[MAX_FILLERS] = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ull * (id + 1);
	struct pagoda_dev d;
	uint32_t ctx;
	int ret;

	if (n > MAX_FILLERS)
		n = MAX_FILLERS;
	ret = pagoda_open(&d);
	if (!ret)
		ret = pagoda_ctx_create(&d, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(&d, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	for (i = 0; !ret && i < n; i++)
		ret = pt_buf_create_at(&d, &bufs[i], BLOCK, SEG(VRAM) | SEG(SYSTEM),
				       DRM_PAGODA_SEGMENT_VRAM, 0, 0);
	if (ret) {
		printf("# worker %u: set-up failed: %s\n", id, strerror(-ret));
		return 1;
	}
	for (round = 0; round < WORKER_ROUNDS && !bad; round++) {
		unsigned int b = pt_rng_next(&rng) % n, op = pt_rng_next(&rng) % 4;
		uint64_t slot = pt_rng_next(&rng) % (BLOCK / SLOT) * SLOT;
		uint32_t pattern = id << 24 | round;
		struct pagoda_cmdbuf cb;

		if (op == 0) {
			if (resident[b])
				ret = pagoda_evict(&d, &bufs[b].bo.handle, 1);
			else
				ret = pagoda_make_resident(&d, &bufs[b].bo.handle, 1, NULL);
			if (ret == -ENOSPC && !resident[b])
				continue;
			if (ret) {
				printf("# worker %u: residency of %u: %s\n", id, b, strerror(-ret));
				bad++;
			}
			resident[b] = !resident[b];
			continue;
		}
		pagoda_cmdbuf_init(&cb, cmd.bo.map, 4096);
		pagoda_cmd_fill(&cb, bufs[b].va + slot, SLOT, pattern);
		ret = pt_run(&d, ctx, &cmd, &cb);
		if (ret || count_not((char *)bufs[b].bo.map + slot, SLOT, pattern)) {
			printf("# worker %u: job on %u: %s\n", id, b,
			       ret ? strerror(-ret) : "wrong contents");
			bad++;
		}
	}
	pagoda_close(&d);
	return bad ? 1 : 0;
}

static void test_processes(void)
{
	struct evictor e = { .segments = "12" };
	unsigned int i, good = 0;
	pid_t pids[WORKERS];
	int status;

	pthread_create(&e.thread, NULL, evict_loop, &e);
	for (i = 0; i < WORKERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(worker(i));
	}
	for (i = 0; i < WORKERS; i++)
		if (pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i] &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			good++;
	e.stop = 1;
	pthread_join(e.thread, NULL);
	pt_check(good == WORKERS,
		 "%u of %u processes with VRAM's worth mapped each ran %u rounds of jobs and residency changes right, beside %lu evictions",
		 good, WORKERS, WORKER_ROUNDS, e.writes);
}

#define STORM		24

/* One process of the storm: waits for the start, runs a job that faults. */
static int faulting_process(int start_fd)
{
	struct drm_pagoda_sync out = { 0 };
	struct pagoda_cmdbuf cb;
	struct pagoda_dev d;
	struct pt_buf cmd;
	uint64_t hole = 0;
	uint32_t ctx;
	char go;
	int ret;

	ret = pagoda_open(&d);
	if (!ret)
		ret = pagoda_ctx_create(&d, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(&d, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)	/* reserved, never mapped */
		ret = pagoda_vm_reserve(&d, &hole, 64 * KIB, 0, 0, 0);
	if (!ret)
		ret = pagoda_syncobj_create(&d, &out.handle);
	if (ret || read(start_fd, &go, 1) != 1)
		return 2;
	pagoda_cmdbuf_init(&cb, cmd.bo.map, 4096);
	pagoda_cmd_fill(&cb, hole, 4 * KIB, 0xdead);
	ret = pagoda_submit(&d, ctx, cmd.va, cb.used_bytes, NULL, 0, &out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(&d, out.handle, 0, PT_JOB_TIMEOUT_NS);
	if (!ret)
		ret = pt_fence_error(&d, out.handle);
	pagoda_close(&d);
	return ret == -EFAULT ? 0 : 1;
}

/* Lines of the kernel log at error level or worse ("<0>" to "<3>") naming @what. */
static unsigned int kernel_errors(const char *what)
{
	char *buf = pt_kernel_log(), *line;
	unsigned int errors = 0;

	if (!buf)
		return 0;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (line[0] == '<' && line[1] >= '0' && line[1] <= '3' && strstr(line, what)) {
			printf("# %s\n", line);
			errors++;
		}
	free(buf);
	return errors;
}

static void test_fault_storm(void)
{
	unsigned int i, failed = 0, good = 0;
	pid_t pids[STORM];
	int start[2], status;

	if (!pt_check(!pipe(start), "a pipe to start them together"))
		return;
	for (i = 0; i < STORM; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(start[1]);
			_exit(faulting_process(start[0]));
		}
	}
	close(start[0]);
	/* each takes one byte once it is set up: all submit at about once */
	for (i = 0; i < STORM; i++)
		if (write(start[1], "g", 1) != 1)
			failed++;
	close(start[1]);
	for (i = 0; i < STORM; i++)
		if (pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i] &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			good++;
	pt_check(good == STORM && !failed, "%u processes whose jobs fault at once: %u got EFAULT",
		 STORM, good);
	pt_check(!kernel_errors("pagoda"), "the driver logged no error for them");
}

int main(void)
{
	struct pt_buf cmd;
	uint32_t ctx;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram_size);
	if (!pt_check(!ret, "open, VRAM size: %s", strerror(-ret)) ||
	    !pt_check(vram_size >= 2 * BLOCK && vram_size / BLOCK + BLOCK / SMALL + 4 <= MAX_FILLERS,
		      "VRAM %llu MiB", (unsigned long long)(vram_size / MIB)) ||
	    !pt_check(!pagoda_debugfs_dir(evict_path, sizeof(evict_path)), "debugfs directory"))
		return pt_exit();
	strncat(evict_path, "/evict", sizeof(evict_path) - strlen(evict_path) - 1);
	ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "a context and a command buffer: %s", strerror(-ret)))
		return pt_exit();

	test_make_resident_enospc();
	test_pinned_elsewhere(ctx, &cmd);
	test_evict_hook_vs_phys(ctx);
	test_processes();
	test_fault_storm();
	/* last: the faults it injects are the driver's own, logged as errors */
	test_fault_hook_vs_moves();

	pt_buf_destroy(&dev, &cmd);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return pt_exit();
}
