// SPDX-License-Identifier: MIT
/*
 * Overcommit: a working set of four times all of VRAM (visible and hidden
 * together), held by several processes at once, pushed around by forced
 * evictions and re-admissions in random order, with every byte verified.
 *
 * Each of PROCS child processes opens the device itself and allocates its
 * share of the working set: sizes that are random multiples of the segment
 * page size between 256 KiB and 4 MiB, in VRAM and system memory, in VRAM,
 * hidden VRAM and system memory (either VRAM preferred, evicted to system
 * memory or to the other VRAM), or in hidden VRAM and system memory, with
 * random priorities. Every allocation is mapped by the CPU and filled with
 * a pattern that depends on the process, the allocation, the offset and a
 * generation, so that a verify recomputes it instead of keeping a copy:
 * bytes of another allocation, of another process, from another offset or
 * a stale generation all show as a mismatch.
 *
 * Then, in each round, each process takes a random subset of its
 * allocations in random order and, group by group, makes them resident
 * (which forces others, of any process, out of VRAM), verifies every byte
 * of them, rewrites about half with a new generation and evicts them
 * again. ENOSPC from MakeResident (what is resident already pinned by
 * others) is allowed: the group is split and retried, a single allocation
 * refused is left out of that round; it is counted. GEM_INFO before and
 * after each MakeResident records where allocations are: the run must see
 * all three segments, allocations that went from VRAM to system memory
 * (evictions) and from system memory back to VRAM (re-admissions), and
 * every allocation in one of its own segments, resident exactly while the
 * process keeps it resident. At the end each process verifies everything
 * once more and frees it; the parent fails if any process failed. A round
 * verifies about half of the working set, so the default run reads it
 * about 2.5 times in all and writes it about 1.75 times.
 *
 * On the first mismatch in an allocation the process, allocation, offset,
 * expected and found bytes and the allocation's segment are printed, then
 * how much of it differs and whether that reads zeroes or the generation
 * before; that allocation is no longer checked.
 *
 * The seed is printed first; pagoda_guest.overcommit_seed=SEED replays
 * each process's choices (not how the processes interleave), and
 * pagoda_guest.overcommit_rounds=N changes the number of rounds (default
 * 3). The guest must hold the part of the working set that VRAM cannot
 * (a 1 GiB guest: run the device with vram-size=64M,hidden-vram-size=64M);
 * with less memory the test is skipped.
 */
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_test.h"

#define PROCS		4
/* The working set, in multiples of all VRAM. */
#define OVERCOMMIT	4
#define MIN_SIZE	(256ull << 10)
#define MAX_SIZE	(4ull << 20)
/* Allocations one MakeResident names at most. */
#define GROUP_MAX	8
#define DEFAULT_ROUNDS	3
/* Memory the guest keeps free beyond the working set's system pages. */
#define RAM_MARGIN	(96ull << 20)
#define MIB		(1ull << 20)

#define NUM_SEGMENTS	3	/* system, VRAM, hidden VRAM */
#define NO_SEGMENT	(~0u)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

/* Words compared before looking for the mismatch in them. */
#define VERIFY_BLOCK	512

/* What a process did, in memory shared with the parent. */
struct proc_stats {
	uint64_t allocations;
	uint64_t bytes;
	uint64_t make_resident_calls;
	uint64_t enospc;		/* MakeResident calls refused with ENOSPC */
	uint64_t not_admitted;		/* allocations left out of a round by ENOSPC */
	uint64_t seen[NUM_SEGMENTS];	/* GEM_INFO reports, per segment */
	uint64_t moves;			/* reports of another segment than the last one */
	uint64_t evictions;		/* from VRAM or hidden VRAM to system memory */
	uint64_t readmissions;		/* from system memory to VRAM or hidden VRAM */
	uint64_t bytes_verified;
	uint64_t bytes_written;
	uint64_t mismatches;
};

struct shared {
	volatile unsigned int ready;	/* processes done allocating */
	volatile int abort;		/* a process died: stop waiting for it */
	struct proc_stats p[PROCS];
};

/* One allocation of a process, and what it must hold. */
struct alloc {
	struct pagoda_bo bo;
	uint32_t segments;		/* where it may live */
	uint32_t generation;		/* of the pattern in it */
	uint32_t last_segment;		/* where GEM_INFO last saw it */
	unsigned int verified;		/* times it read back right since written */
	int resident;			/* made resident and not evicted yet */
	int broken;			/* a mismatch was reported: not checked again */
};

static struct shared *sh;
static uint64_t run_seed;

/* The state of a child process. */
static struct pagoda_dev dev = { .fd = -1 };
static unsigned int proc;
static struct proc_stats *st;
static struct alloc *allocs;
static unsigned int num_allocs;
static uint64_t rng;

static uint64_t rnd(void)
{
	return pt_rng_next(&rng);
}

/* splitmix64's finalizer: every bit of @x changes about half the result. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The pattern of allocation @index of this process, generation @generation. */
static uint64_t pattern_base(unsigned int index, uint32_t generation)
{
	return mix64(run_seed ^ mix64((uint64_t)proc << 56 ^ (uint64_t)index << 32 ^ generation));
}

/* Word @i (bytes 8 * @i ..) of the pattern: different at every offset. */
static inline uint64_t pattern_word(uint64_t base, uint64_t i)
{
	return base ^ i * 0x9e3779b97f4a7c15ull;
}

static const char *segment_name(uint32_t segment)
{
	switch (segment) {
	case DRM_PAGODA_SEGMENT_SYSTEM:
		return "system memory";
	case DRM_PAGODA_SEGMENT_VRAM:
		return "VRAM";
	case DRM_PAGODA_SEGMENT_VRAM_HIDDEN:
		return "hidden VRAM";
	default:
		return "unknown";
	}
}

static void fill(struct alloc *a, unsigned int index)
{
	uint64_t base = pattern_base(index, a->generation);
	uint64_t *p = a->bo.map, i;

	for (i = 0; i < a->bo.size / 8; i++)
		p[i] = pattern_word(base, i);
	a->verified = 0;
	st->bytes_written += a->bo.size;
}

static void report_mismatch(struct alloc *a, unsigned int index, uint64_t word,
			    uint64_t expected, uint64_t got)
{
	struct drm_pagoda_gem_info info = { .segment = NO_SEGMENT };
	uint64_t differ = expected ^ got;
	unsigned int byte = differ ? __builtin_ctzll(differ) / 8 : 0;
	int ret;

	ret = pagoda_bo_info(&dev, a->bo.handle, &info);
	pt_fail("process %u, allocation %u (%llu bytes, generation %u, read back right %u times since written): offset %llu: expected 0x%02x, got 0x%02x (word 0x%016llx, got 0x%016llx); it is in %s%s%s",
		proc, index, (unsigned long long)a->bo.size, a->generation, a->verified,
		(unsigned long long)(word * 8 + byte),
		(unsigned int)(expected >> byte * 8) & 0xff, (unsigned int)(got >> byte * 8) & 0xff,
		(unsigned long long)expected, (unsigned long long)got,
		segment_name(info.segment), ret ? ", GEM_INFO: " : "", ret ? strerror(-ret) : "");
}

/*
 * After a mismatch, once over the whole allocation: how much differs, and
 * whether it reads zeroes (cleared) or the generation before (stale).
 */
static void describe_damage(struct alloc *a, unsigned int index)
{
	uint64_t base = pattern_base(index, a->generation), words = a->bo.size / 8;
	uint64_t stale_base = pattern_base(index, a->generation - 1);
	uint64_t i, bad = 0, zero = 0, stale = 0, first = words, last = 0;
	const uint64_t *p = a->bo.map;

	for (i = 0; i < words; i++) {
		uint64_t got = p[i];

		if (got == pattern_word(base, i))
			continue;
		bad++;
		zero += !got;
		stale += a->generation && got == pattern_word(stale_base, i);
		if (first == words)
			first = i;
		last = i;
	}
	printf("  process %u, allocation %u: %llu of %llu words differ, from offset %llu to %llu; %llu read 0, %llu the generation before\n",
	       proc, index, (unsigned long long)bad, (unsigned long long)words,
	       (unsigned long long)(first * 8), (unsigned long long)(last * 8 + 7),
	       (unsigned long long)zero, (unsigned long long)stale);
	fflush(stdout);
}

/*
 * Compare every byte with the pattern. Blocks are compared whole (a loop
 * without an exit the compiler can vectorize) and searched only when they
 * differ. Returns 0 or -EBADMSG after reporting the first mismatch.
 */
static int verify(struct alloc *a, unsigned int index)
{
	uint64_t base = pattern_base(index, a->generation);
	uint64_t words = a->bo.size / 8, start, end, i, differ = 0;
	const uint64_t *p = a->bo.map;

	if (a->broken)
		return 0;
	for (start = 0; start < words && !differ; start = end) {
		end = start + VERIFY_BLOCK < words ? start + VERIFY_BLOCK : words;
		for (i = start; i < end; i++)
			differ |= p[i] ^ pattern_word(base, i);
	}
	if (!differ) {
		a->verified++;
		st->bytes_verified += a->bo.size;
		return 0;
	}
	/* the differing block is the last one compared */
	start = (end - 1) / VERIFY_BLOCK * VERIFY_BLOCK;
	for (i = start; i < end; i++) {
		uint64_t got = p[i];

		if (got != pattern_word(base, i)) {
			report_mismatch(a, index, i, pattern_word(base, i), got);
			describe_damage(a, index);
			break;
		}
	}
	if (i == end)
		pt_fail("process %u, allocation %u: words %llu .. %llu differed, then read right",
			proc, index, (unsigned long long)start, (unsigned long long)end - 1);
	a->broken = 1;
	st->mismatches++;
	return -EBADMSG;
}

/*
 * Ask GEM_INFO where the allocation is, and count it: it must be in one of
 * its segments and resident as many times as this process made it.
 */
static int observe(struct alloc *a, unsigned int index)
{
	struct drm_pagoda_gem_info info;
	uint32_t seg, last = a->last_segment;
	int ret;

	ret = pagoda_bo_info(&dev, a->bo.handle, &info);
	if (ret) {
		pt_fail("process %u: GEM_INFO of allocation %u: %s", proc, index, strerror(-ret));
		return ret;
	}
	seg = info.segment;
	if (seg >= NUM_SEGMENTS || !(a->segments & DRM_PAGODA_SEGMENT_MASK(seg))) {
		pt_fail("process %u: allocation %u is in segment %u, not one of its segments 0x%x",
			proc, index, seg, a->segments);
		return -EBADMSG;
	}
	if (info.residency != (uint32_t)a->resident) {
		pt_fail("process %u: allocation %u is resident %u times, made resident %d",
			proc, index, info.residency, a->resident);
		return -EBADMSG;
	}
	st->seen[seg]++;
	if (last != NO_SEGMENT && seg != last) {
		st->moves++;
		if (seg == DRM_PAGODA_SEGMENT_SYSTEM)
			st->evictions++;
		else if (last == DRM_PAGODA_SEGMENT_SYSTEM)
			st->readmissions++;
	}
	a->last_segment = seg;
	return 0;
}

/* A random allocation of @size bytes, mapped by the CPU and filled. */
static int create(struct alloc *a, unsigned int index, uint64_t size)
{
	static const uint32_t masks[] = {
		SEG(VRAM) | SEG(SYSTEM),
		SEG(VRAM) | SEG(VRAM_HIDDEN) | SEG(SYSTEM),
		SEG(VRAM_HIDDEN) | SEG(SYSTEM),
	};
	struct pagoda_bo_desc desc = { .size = size };
	int ret;

	desc.segments = masks[rnd() % ARRAY_SIZE(masks)];
	desc.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	if (desc.segments & SEG(VRAM) && desc.segments & SEG(VRAM_HIDDEN)) {
		/* either VRAM preferred; evicted to system memory or the other one */
		desc.preferred_segment = rnd() % 2 ? DRM_PAGODA_SEGMENT_VRAM :
					 DRM_PAGODA_SEGMENT_VRAM_HIDDEN;
		if (rnd() % 2)
			desc.eviction_segment = DRM_PAGODA_SEGMENT_VRAM +
						DRM_PAGODA_SEGMENT_VRAM_HIDDEN -
						desc.preferred_segment;
	} else {
		desc.preferred_segment = desc.segments & SEG(VRAM) ? DRM_PAGODA_SEGMENT_VRAM :
					 DRM_PAGODA_SEGMENT_VRAM_HIDDEN;
	}
	desc.priority = rnd() % (DRM_PAGODA_PRIORITY_HIGH + 1);

	ret = pagoda_bo_create(&dev, &desc, &a->bo);
	if (ret) {
		pt_fail("process %u: create allocation %u of %llu bytes in segments 0x%x: %s",
			proc, index, (unsigned long long)size, desc.segments, strerror(-ret));
		return ret;
	}
	ret = pagoda_bo_map(&dev, &a->bo);
	if (ret) {
		pt_fail("process %u: map allocation %u (segments 0x%x): %s",
			proc, index, desc.segments, strerror(-ret));
		pagoda_bo_free(&dev, &a->bo);
		memset(&a->bo, 0, sizeof(a->bo));
		return ret;
	}
	a->segments = desc.segments;
	a->last_segment = NO_SEGMENT;
	st->allocations++;
	st->bytes += a->bo.size;
	fill(a, index);
	return observe(a, index);
}

/* Allocate this process's share of the working set. */
static int allocate(uint64_t share, uint64_t page_size)
{
	uint64_t min_pages = MIN_SIZE / page_size, max_pages = MAX_SIZE / page_size;
	int ret;

	if (!min_pages)
		min_pages = 1;
	if (max_pages < min_pages)
		max_pages = min_pages;
	allocs = calloc(share / (min_pages * page_size) + 1, sizeof(*allocs));
	if (!allocs) {
		pt_fail("process %u: no memory for the list of allocations", proc);
		return -ENOMEM;
	}
	while (st->bytes < share) {
		uint64_t pages = min_pages + rnd() % (max_pages - min_pages + 1);

		ret = create(&allocs[num_allocs], num_allocs, pages * page_size);
		/* what exists is verified and freed at the end, even after a failure */
		if (allocs[num_allocs].bo.handle)
			num_allocs++;
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * MakeResident allocations @index[0 .. @count - 1]. ENOSPC splits the
 * group and retries the halves; a single allocation refused stays out.
 */
static int admit(const uint32_t *index, unsigned int count)
{
	uint32_t handles[GROUP_MAX];
	uint64_t trim = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < count; i++)
		handles[i] = allocs[index[i]].bo.handle;
	st->make_resident_calls++;
	ret = pagoda_make_resident(&dev, handles, count, &trim);
	if (!ret) {
		for (i = 0; i < count; i++)
			allocs[index[i]].resident = 1;
		return 0;
	}
	if (ret != -ENOSPC) {
		pt_fail("process %u: MakeResident of %u allocations: %s", proc, count, strerror(-ret));
		return ret;
	}
	st->enospc++;
	if (trim) {
		pt_fail("process %u: ENOSPC without a budget, with %llu bytes to trim",
			proc, (unsigned long long)trim);
		return -EBADMSG;
	}
	if (count == 1) {
		st->not_admitted++;
		return 0;
	}
	ret = admit(index, count / 2);
	if (!ret)
		ret = admit(index + count / 2, count - count / 2);
	return ret;
}

/* Evict again what admit() made resident of @index[0 .. @count - 1]. */
static int evict(const uint32_t *index, unsigned int count)
{
	uint32_t handles[GROUP_MAX];
	unsigned int i, n = 0;
	int ret;

	for (i = 0; i < count; i++)
		if (allocs[index[i]].resident)
			handles[n++] = allocs[index[i]].bo.handle;
	if (!n)
		return 0;
	ret = pagoda_evict(&dev, handles, n);
	if (ret) {
		pt_fail("process %u: Evict of %u allocations: %s", proc, n, strerror(-ret));
		return ret;
	}
	for (i = 0; i < count; i++)
		allocs[index[i]].resident = 0;
	return 0;
}

/*
 * One group: see where its allocations were pushed, make them resident,
 * see where they came, verify them, rewrite about half, evict them.
 * Returns 0, -EBADMSG after a mismatch or a wrong report, or the errno of
 * a failed call.
 */
static int cycle_group(const uint32_t *index, unsigned int count)
{
	unsigned int i;
	int ret, err = 0;

	for (i = 0; i < count; i++) {
		ret = observe(&allocs[index[i]], index[i]);
		if (ret)
			return ret;
	}
	ret = admit(index, count);
	for (i = 0; i < count && !ret; i++) {
		struct alloc *a = &allocs[index[i]];

		if (!a->resident)
			continue;
		ret = observe(a, index[i]);
		if (ret)
			break;
		if (verify(a, index[i]))
			err = -EBADMSG;
		else if (rnd() % 2) {
			a->generation++;
			fill(a, index[i]);
		}
	}
	/* even after a failure: nothing stays pinned against the others */
	if (evict(index, count) && !ret)
		ret = -EIO;
	return ret ? ret : err;
}

/* A random subset of the allocations, in random order, in random groups. */
static int run_round(uint32_t *order)
{
	unsigned int i, subset, group;
	int ret, err = 0;

	for (i = 0; i < num_allocs; i++)
		order[i] = i;
	for (i = num_allocs - 1; i > 0; i--) {
		unsigned int j = rnd() % (i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/* a quarter to three quarters of them, half on average */
	subset = num_allocs / 4 + rnd() % (num_allocs / 2 + 1);
	for (i = 0; i < subset; i += group) {
		group = 1 + rnd() % GROUP_MAX;
		if (group > subset - i)
			group = subset - i;
		ret = cycle_group(&order[i], group);
		/* a mismatch stops checking one allocation, not the round */
		if (ret == -EBADMSG)
			err = ret;
		else if (ret)
			return ret;
	}
	return err;
}

/* Verify everything once more and free it. */
static void finish(void)
{
	unsigned int i;
	int ret;

	for (i = 0; i < num_allocs; i++) {
		struct alloc *a = &allocs[i];

		if (!observe(a, i))
			verify(a, i);
		ret = pagoda_bo_free(&dev, &a->bo);
		if (ret)
			pt_fail("process %u: free allocation %u: %s", proc, i, strerror(-ret));
	}
	num_allocs = 0;
}

/* Wait until every process has its share allocated (or one died). */
static void wait_for_all(void)
{
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < PROCS && !sh->abort)
		pt_sleep_ms(10);
}

static void child(unsigned int index, uint64_t share, uint64_t page_size, unsigned int rounds)
{
	unsigned int round;
	uint32_t *order = NULL;
	int ret;

	proc = index;
	st = &sh->p[index];
	rng = mix64(run_seed + (index + 1) * 0x9e3779b97f4a7c15ull) | 1;

	ret = pagoda_open(&dev);
	if (ret) {
		pt_fail("process %u: open the device: %s", proc, strerror(-ret));
		wait_for_all();
		_exit(1);
	}
	ret = allocate(share, page_size);
	if (!ret) {
		order = calloc(num_allocs, sizeof(*order));
		if (!order) {
			pt_fail("process %u: no memory for the order of allocations", proc);
			ret = -ENOMEM;
		}
	}
	wait_for_all();
	for (round = 0; !ret && round < rounds; round++) {
		ret = run_round(order);
		/* after a mismatch the other allocations still go on */
		if (ret == -EBADMSG)
			ret = 0;
	}
	finish();
	pagoda_close(&dev);
	_exit(pt_failures ? 1 : 0);
}

/* Whether the guest can hold the part of the working set VRAM cannot. */
static int ram_fits(uint64_t system_bytes, uint64_t *available)
{
	char line[256];
	unsigned long long kib;
	FILE *f;

	*available = 0;
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			*available = kib << 10;
	fclose(f);
	return system_bytes + RAM_MARGIN <= *available;
}

static void print_stats(unsigned int index, const struct proc_stats *s)
{
	printf("  process %u: %llu allocations, %llu MiB; %llu MakeResident calls, %llu ENOSPC (%llu allocations left out); seen in system memory %llu, VRAM %llu, hidden VRAM %llu times: %llu moves, %llu evictions, %llu re-admissions; %llu MiB verified, %llu MiB written\n",
	       index, (unsigned long long)s->allocations, (unsigned long long)(s->bytes / MIB),
	       (unsigned long long)s->make_resident_calls, (unsigned long long)s->enospc,
	       (unsigned long long)s->not_admitted,
	       (unsigned long long)s->seen[DRM_PAGODA_SEGMENT_SYSTEM],
	       (unsigned long long)s->seen[DRM_PAGODA_SEGMENT_VRAM],
	       (unsigned long long)s->seen[DRM_PAGODA_SEGMENT_VRAM_HIDDEN],
	       (unsigned long long)s->moves, (unsigned long long)s->evictions,
	       (unsigned long long)s->readmissions,
	       (unsigned long long)(s->bytes_verified / MIB),
	       (unsigned long long)(s->bytes_written / MIB));
}

int main(void)
{
	unsigned int rounds = pt_cmdline_number("pagoda_guest.overcommit_rounds", DEFAULT_ROUNDS);
	uint64_t vram = 0, hidden = 0, page_size = 0, working_set, available;
	struct proc_stats total = { 0 };
	struct timespec t0, t1;
	pid_t pids[PROCS];
	unsigned int i, left, seg;
	int ret, status;

	run_seed = pt_cmdline_number("pagoda_guest.overcommit_seed", 0);
	if (!run_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		run_seed = (uint64_t)ts.tv_sec * 1000000007ull ^ ts.tv_nsec ^ (uint64_t)getpid() << 32;
	}
	printf("seed 0x%llx, %u rounds (replay: --append pagoda_guest.overcommit_seed=0x%llx)\n",
	       (unsigned long long)run_seed, rounds, (unsigned long long)run_seed);

	/* the parent only asks for the sizes: nothing is open at fork */
	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the device: %s", ret ? strerror(-ret) : "done"))
		return pt_exit();
	ret = pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram);
	if (!ret)
		ret = pagoda_query(&dev, DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, &hidden);
	if (!ret)
		ret = pagoda_query(&dev, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, &page_size);
	pagoda_close(&dev);
	if (!pt_check(!ret && page_size, "VRAM, hidden VRAM and segment page sizes: %s",
		      ret ? strerror(-ret) : "done"))
		return pt_exit();
	if (!vram || !hidden) {
		printf("skip: the device has %llu MiB of VRAM and %llu MiB of hidden VRAM, this test needs both\n",
		       (unsigned long long)(vram / MIB), (unsigned long long)(hidden / MIB));
		return 77;
	}
	working_set = OVERCOMMIT * (vram + hidden);
	if (!ram_fits(working_set - vram - hidden, &available)) {
		printf("skip: a working set of %llu MiB keeps %llu MiB in system memory, the guest has %llu MiB available (run the device with less VRAM, e.g. vram-size=64M,hidden-vram-size=64M)\n",
		       (unsigned long long)(working_set / MIB),
		       (unsigned long long)((working_set - vram - hidden) / MIB),
		       (unsigned long long)(available / MIB));
		return 77;
	}
	printf("%u processes, working set %llu MiB: %u x (VRAM %llu MiB + hidden VRAM %llu MiB), segment pages of %llu KiB\n",
	       PROCS, (unsigned long long)(working_set / MIB), OVERCOMMIT,
	       (unsigned long long)(vram / MIB), (unsigned long long)(hidden / MIB),
	       (unsigned long long)(page_size >> 10));

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!pt_check(sh != MAP_FAILED, "shared state"))
		return pt_exit();
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		if (!pids[i])
			child(i, working_set / PROCS, page_size, rounds);
		if (pids[i] < 0) {
			pt_fail("fork process %u: %s", i, strerror(errno));
			sh->abort = 1;
		}
	}
	for (left = 0, i = 0; i < PROCS; i++)
		left += pids[i] > 0;
	while (left) {
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0)
			break;
		for (i = 0; i < PROCS && pids[i] != pid; i++)
			;
		if (i == PROCS)
			continue;
		left--;
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		sh->abort = 1;
		pt_fail("process %u ended with %s %d", i,
			WIFSIGNALED(status) ? "signal" : "exit status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (i = 0; i < PROCS; i++) {
		const struct proc_stats *s = &sh->p[i];

		print_stats(i, s);
		total.allocations += s->allocations;
		total.bytes += s->bytes;
		total.enospc += s->enospc;
		for (seg = 0; seg < NUM_SEGMENTS; seg++)
			total.seen[seg] += s->seen[seg];
		total.evictions += s->evictions;
		total.readmissions += s->readmissions;
		total.bytes_verified += s->bytes_verified;
		total.mismatches += s->mismatches;
	}
	printf("  %.1f s; %llu MiB verified in all, %.1f x the working set\n",
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (unsigned long long)(total.bytes_verified / MIB),
	       (double)total.bytes_verified / (total.bytes ? total.bytes : 1));
	pt_check(total.bytes >= working_set, "%llu allocations, %llu MiB: %.1f x all VRAM",
		 (unsigned long long)total.allocations, (unsigned long long)(total.bytes / MIB),
		 (double)total.bytes / (vram + hidden));
	pt_check(total.seen[DRM_PAGODA_SEGMENT_SYSTEM] && total.seen[DRM_PAGODA_SEGMENT_VRAM] &&
		 total.seen[DRM_PAGODA_SEGMENT_VRAM_HIDDEN],
		 "allocations seen in each segment: system memory %llu, VRAM %llu, hidden VRAM %llu times",
		 (unsigned long long)total.seen[DRM_PAGODA_SEGMENT_SYSTEM],
		 (unsigned long long)total.seen[DRM_PAGODA_SEGMENT_VRAM],
		 (unsigned long long)total.seen[DRM_PAGODA_SEGMENT_VRAM_HIDDEN]);
	pt_check(total.evictions && total.readmissions,
		 "allocations moved: %llu evictions to system memory, %llu re-admissions from it",
		 (unsigned long long)total.evictions, (unsigned long long)total.readmissions);
	pt_check(!total.mismatches, "every byte read back (%llu allocations differed)",
		 (unsigned long long)total.mismatches);
	return pt_exit();
}
