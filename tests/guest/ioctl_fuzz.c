// SPDX-License-Identifier: MIT
/*
 * Calls every Pagoda ioctl with random and boundary arguments, plus the
 * whole driver ioctl number range and the DRM core ioctls a render node
 * allows, with random sizes, directions and payloads. Every Pagoda ioctl
 * must return what docs/driver.md, include/uapi/drm/pagoda_drm.h and the
 * driver's kernel-doc (pagoda_vm.c, pagoda_sched.c, pagoda_phys.c,
 * pagoda_parse.c) document for those arguments (the exact result where
 * the arguments determine it); every other call must fail with an errno,
 * never succeed by accident or crash; the kernel must stay clean (the
 * debug kernel lane reports KASAN, lockdep, UBSAN and leaks).
 *
 * The fuzzer keeps a model of what its file owns: allocations, the
 * reservations and mappings of its GPU address space (what each maps, and
 * its protections, which PROTECT changes), its contexts (and
 * whether they are banned) and the fences of its syncobjs, so that
 * VM_BIND, SUBMIT and the context ioctls are checked exactly. Submissions
 * run command buffers of NOPs it maps; after each job it waits and asks
 * CTX_QUERY whether the context was banned, which a job of NOPs must
 * never be. Physical-mode submissions (SUBMIT_PHYS) build DMA buffers of
 * the render engine's data commands over small physically accessed
 * allocations the fuzzer makes, with their allocation and patch-location
 * lists, then break one rule now and then; a model of the kernel's checks
 * and parser, in the kernel's order, gives the exact errno, and a buffer
 * it accepts must run without banning its context. A result the model
 * cannot explain reopens the file, so that one wrong result does not
 * cascade.
 *
 * The seed is printed first; a failure replays with
 *   scripts/run-guest.sh --append pagoda_guest.fuzz_seed=SEED ioctl_fuzz
 * and pagoda_guest.fuzz_calls=N changes the number of calls (default 20000).
 */
#include <signal.h>

#include "pagoda_test.h"

#define DEFAULT_CALLS	20000
/* Largest payload a random call passes: the biggest _IOC_SIZE is 16 KiB - 1. */
#define PAYLOAD_MAX	(1u << 14)

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return pt_rng_next(&rng_state);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* A 64-bit value that is often a boundary: 0, 1, page +- 1, powers of two, ~0. */
static uint64_t rnd_value(void)
{
	static const uint64_t edges[] = {
		0, 1, 2, 4095, 4096, 4097, 65535, 65536, 0x7fffffff, 0x80000000u,
		0xffffffffu, 0x100000000ull, 1ull << 63, (1ull << 63) - 1, ~0ull, ~0ull - 4095,
	};

	switch (rnd_below(4)) {
	case 0:
		return edges[rnd_below(ARRAY_SIZE(edges))];
	case 1:
		return 1ull << rnd_below(64);
	case 2:
		return rnd_below(64);
	default:
		return rnd();
	}
}

/* Addresses that are not writable user memory: copies must fail with EFAULT. */
static void *bad_pointer(void *readonly)
{
	static void *const fixed[] = {
		NULL, (void *)16, (void *)0xffff888000000000ull, (void *)~0ull,
		(void *)0x00007ffffffff000ull,
	};
	size_t n = rnd_below(ARRAY_SIZE(fixed) + 1);

	return n < ARRAY_SIZE(fixed) ? fixed[n] : readonly;
}

struct outcome {
	unsigned long calls, ok;
	unsigned long errnos[134];
};

static struct outcome pagoda_outcome, other_outcome;

static void count(struct outcome *o, int err)
{
	o->calls++;
	if (!err)
		o->ok++;
	else if (err > 0 && err < (int)ARRAY_SIZE(o->errnos))
		o->errnos[err]++;
}

/* Calls and successes of each Pagoda ioctl, by number. */
static unsigned long nr_calls[DRM_PAGODA_SUBMIT_PHYS + 1], nr_ok[DRM_PAGODA_SUBMIT_PHYS + 1];

static void count_pagoda(unsigned int nr, int err)
{
	count(&pagoda_outcome, err);
	nr_calls[nr]++;
	nr_ok[nr] += !err;
}

static int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/* What GET_PARAM must report for VA_BITS, MMU_LEVELS and VA_START (see mmu_setup()). */
static uint64_t mmu_param[3];
/* End of the file's address space: every VA is below 1 << VA_BITS. */
static uint64_t va_end;
/* GPUs of the logical adapter: GET_PARAM's adapters 0 .. num_adapters - 1. */
static uint64_t num_adapters;

/* Whether @value is what GET_PARAM must report for @param, where the fuzzer knows it. */
static int param_value_right(uint32_t param, uint64_t value)
{
	if (param == DRM_PAGODA_PARAM_MAX_SLOT_ID)
		return value == DRM_PAGODA_MAX_SLOT_ID;
	if (param >= DRM_PAGODA_PARAM_VA_BITS && param <= DRM_PAGODA_PARAM_VA_START)
		return value == mmu_param[param - DRM_PAGODA_PARAM_VA_BITS];
	if (param == DRM_PAGODA_PARAM_NUM_ADAPTERS)
		return value == num_adapters;
	return 1;
}

/*
 * DRM_IOCTL_PAGODA_GET_PARAM: 0 for a known parameter of an adapter of the
 * link (0 on a single GPU), EINVAL for anything else, EFAULT when the argument cannot be copied. The MMU's
 * parameters have the values the device reports, MAX_SLOT_ID the driver's
 * cap.
 */
static int fuzz_get_param(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_get_param args;
	int want, got;

	args.param = rnd_below(3) ? rnd_below(DRM_PAGODA_PARAM_LINK_INDEX + 3) : rnd_value();
	args.adapter = rnd_below(4) ? 0 : rnd_below(2) ? rnd_below(PAGODA_LINK_MAX_ADAPTERS + 1) :
					  rnd_value();
	args.value = rnd_value();
	want = args.param <= DRM_PAGODA_PARAM_LINK_INDEX && args.adapter < num_adapters ? 0 : EINVAL;

	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args);
	}
	count_pagoda(DRM_PAGODA_GET_PARAM, got);
	if (got == want && (got || param_value_right(args.param, args.value)))
		return 1;
	pt_fail("call %lu: GET_PARAM param %u adapter %u: %s (want %s), value 0x%llx",
		i, args.param, args.adapter, strerror(got), strerror(want),
		(unsigned long long)args.value);
	return 0;
}

/* Handles of allocations the fuzzer created, closed now and then. */
#define MAX_LIVE	16
static uint32_t live[MAX_LIVE];
static uint64_t live_size[MAX_LIVE];	/* their sizes, as GEM_CREATE reported them */
static uint32_t live_flags[MAX_LIVE];	/* their DRM_PAGODA_BO_* flags */
static uint32_t live_segs[MAX_LIVE];	/* the segments they may live in */
static uint32_t live_adapter[MAX_LIVE];	/* the GPU of the link holding them */
static uint64_t live_page[MAX_LIVE];	/* the page size they are made of */
static uint64_t segment_page;		/* the memory segments' page size */
static unsigned int resident[MAX_LIVE];	/* MakeResident counts of live[] */
static unsigned int nlive;

static void close_handle(int fd, uint32_t handle)
{
	struct drm_gem_close args = { .handle = handle };

	ioctl(fd, DRM_IOCTL_GEM_CLOSE, &args);
}

static void close_all(int fd)
{
	while (nlive) {
		close_handle(fd, live[--nlive]);
		resident[nlive] = 0;
	}
}

/* The segment mask GEM_CREATE reads from @segments: the aperture's id is system memory. */
static uint32_t system_for_aperture(uint32_t segments)
{
	const uint32_t aperture = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_APERTURE);

	return segments & aperture ?
	       (segments & ~aperture) | DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM) : segments;
}

/* The page size of an allocation allowed in @segments (pagoda_bo_page_size()). */
static uint64_t page_of(uint32_t segments)
{
	return segments & (DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			   DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN)) ?
	       segment_page : 4096;
}

/* What GEM_CREATE must answer, by the rules of docs/driver.md. */
static int gem_create_expected(const struct drm_pagoda_gem_create *args)
{
	const uint32_t known = DRM_PAGODA_SEGMENT_MASK(0) | DRM_PAGODA_SEGMENT_MASK(1) |
			       DRM_PAGODA_SEGMENT_MASK(2);
	const uint32_t linked = DRM_PAGODA_BO_LINK_INSTANCED | DRM_PAGODA_BO_LINK_MIRRORED;
	struct drm_pagoda_gem_create alias = *args, *a = &alias;

	/* the aperture's id means system memory */
	a->segments = system_for_aperture(a->segments);
	if (a->preferred_segment == DRM_PAGODA_SEGMENT_APERTURE)
		a->preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	if (a->eviction_segment == DRM_PAGODA_SEGMENT_APERTURE)
		a->eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	if (a->pad || a->flags & ~DRM_PAGODA_BO_FLAGS || !a->size || !a->segments ||
	    a->segments & ~known || a->adapter >= num_adapters)
		return EINVAL;
	if (a->preferred_segment >= 4 || !(a->segments & DRM_PAGODA_SEGMENT_MASK(a->preferred_segment)))
		return EINVAL;
	if (a->eviction_segment >= 4 || !(known & DRM_PAGODA_SEGMENT_MASK(a->eviction_segment)))
		return EINVAL;
	if (a->priority > DRM_PAGODA_PRIORITY_HIGH)
		return EINVAL;
	if ((a->flags & DRM_PAGODA_BO_CPU_ACCESS) && (a->flags & DRM_PAGODA_BO_NO_CPU_ACCESS))
		return EINVAL;
	if ((a->flags & DRM_PAGODA_BO_CPU_ACCESS) &&
	    (a->segments & DRM_PAGODA_SEGMENT_MASK(2) || a->eviction_segment == 2))
		return EINVAL;
	if (a->flags & linked) {
		/* one of the two, not physical nor primary; mirrored: no CPU, a memory segment */
		if ((a->flags & linked) == linked ||
		    a->flags & (DRM_PAGODA_BO_PHYSICAL | DRM_PAGODA_BO_PRIMARY))
			return EINVAL;
		if (a->flags & DRM_PAGODA_BO_LINK_MIRRORED &&
		    (a->flags & DRM_PAGODA_BO_CPU_ACCESS ||
		     !(a->segments & (DRM_PAGODA_SEGMENT_MASK(1) | DRM_PAGODA_SEGMENT_MASK(2)))))
			return EINVAL;
		/* an instance on every GPU of a link, named by none of them */
		if (num_adapters < 2 || a->adapter)
			return EINVAL;
	}
	/* sizes are either small (fit) or past every segment and all RAM */
	if (a->size > (1ull << 40))
		return EINVAL;
	return 0;
}

/*
 * DRM_IOCTL_PAGODA_GEM_CREATE: the exact errno for invalid arguments; for
 * valid ones success, or ENOSPC/ENOMEM when the segments are full.
 */
static int fuzz_gem_create(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_gem_create args;
	int want, got;

	memset(&args, 0, sizeof(args));
	args.size = rnd_below(2) ? 1 + rnd_below(16 << 20) : rnd_value();
	if (args.size > (16 << 20) && args.size <= (1ull << 40))
		args.size = 1ull << 41;		/* keep to sizes whose fate is known */
	args.flags = rnd_below(2) ? rnd_below(DRM_PAGODA_BO_FLAGS + 1) : (uint32_t)rnd_value();
	args.segments = rnd_below(4) ? 1 + rnd_below(15) : (uint32_t)rnd_value();
	args.preferred_segment = rnd_below(4) ? rnd_below(4) : (uint32_t)rnd_value();
	args.eviction_segment = rnd_below(4) ? rnd_below(4) : (uint32_t)rnd_value();
	args.priority = rnd_below(4) ? rnd_below(3) : (uint32_t)rnd_value();
	args.handle = rnd();
	args.adapter = rnd_below(4) ? 0 : rnd_below(2) ? rnd_below(num_adapters + 1) : rnd_value();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	want = gem_create_expected(&args);

	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args);
	}
	count_pagoda(DRM_PAGODA_GEM_CREATE, got);
	if (!got && got == want) {
		if (nlive == MAX_LIVE)
			close_all(fd);
		resident[nlive] = 0;
		live_size[nlive] = args.size;
		live_flags[nlive] = args.flags;
		live_adapter[nlive] = args.adapter;
		live_page[nlive] = page_of(args.segments);
		live_segs[nlive] = system_for_aperture(args.segments);
		live[nlive++] = args.handle;
		return 1;
	}
	if (got == want || (!want && (got == ENOSPC || got == ENOMEM)))
		return 1;
	pt_fail("call %lu: GEM_CREATE size 0x%llx flags 0x%x segments 0x%x preferred %u eviction %u priority %u pad 0x%llx: %s (want %s)",
		i, (unsigned long long)args.size, args.flags, args.segments, args.preferred_segment,
		args.eviction_segment, args.priority, (unsigned long long)args.pad, strerror(got),
		strerror(want));
	return 0;
}

/* DRM_IOCTL_PAGODA_GEM_INFO: EINVAL for a pad, ENOENT for a foreign handle. */
static int fuzz_gem_info(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_gem_info args;
	int want, got, known;

	memset(&args, 0, sizeof(args));
	known = nlive && rnd_below(2);
	args.handle = known ? live[rnd_below(nlive)] : (uint32_t)rnd_value();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	if (!known) {
		unsigned int k;

		for (k = 0; k < nlive; k++)
			known |= live[k] == args.handle;
	}
	want = args.pad ? EINVAL : known ? 0 : ENOENT;
	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_INFO, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_INFO, &args);
	}
	count_pagoda(DRM_PAGODA_GEM_INFO, got);
	if (got == want)
		return 1;
	pt_fail("call %lu: GEM_INFO handle %u pad %u: %s (want %s)", i, args.handle, args.pad,
		strerror(got), strerror(want));
	return 0;
}

/* Index of @handle in live[], or -1. */
static int live_index(uint32_t handle)
{
	unsigned int k;

	for (k = 0; k < nlive; k++)
		if (live[k] == handle)
			return k;
	return -1;
}

/*
 * DRM_IOCTL_PAGODA_RESIDENCY: EINVAL for a bad count or op, EFAULT for
 * unreadable handles, ENOENT for an unknown one, EINVAL for an EVICT of
 * what is not resident often enough; a MakeResident of known handles
 * succeeds or finds no room (ENOSPC, ENOMEM). Counts are tracked so that
 * the result of every EVICT is known exactly.
 */
static int fuzz_residency(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_residency args = { 0 };
	uint32_t handles[8];
	unsigned int n, k, uses[MAX_LIVE] = { 0 };
	int want = 0, got, bad_handle = 0, idx;

	static const uint32_t bad_counts[] = { 0, DRM_PAGODA_RESIDENCY_MAX + 1, 0x80000000u, ~0u };

	n = rnd_below(8) ? 1 + rnd_below(8) : bad_counts[rnd_below(ARRAY_SIZE(bad_counts))];
	args.count = n;
	args.op = rnd_below(8) ? rnd_below(2) : (uint32_t)rnd_value();
	for (k = 0; k < 8; k++) {
		handles[k] = nlive && rnd_below(8) ? live[rnd_below(nlive)] : (uint32_t)rnd();
		idx = live_index(handles[k]);
		if (k < n && idx < 0)
			bad_handle = 1;
		else if (k < n)
			uses[idx]++;
	}
	args.handles = (uintptr_t)handles;
	if (!n || n > DRM_PAGODA_RESIDENCY_MAX || args.op > DRM_PAGODA_EVICT)
		want = EINVAL;
	else if (bad_handle)
		want = ENOENT;
	else if (args.op == DRM_PAGODA_EVICT)
		for (k = 0; k < nlive; k++)
			if (uses[k] > resident[k])
				want = EINVAL;
	if (!want && !rnd_below(16)) {
		args.handles = (uintptr_t)bad_pointer(readonly);
		want = args.handles == (uintptr_t)readonly ? -1 : EFAULT;
	}
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_RESIDENCY, &args);
	count_pagoda(DRM_PAGODA_RESIDENCY, got);
	if (want == -1)		/* read-only memory holds zero handles */
		return got == ENOENT || got == 0 || got == EINVAL || got == ENOSPC;
	if (!want && got == 0) {
		for (k = 0; k < nlive; k++)
			resident[k] += args.op == DRM_PAGODA_MAKE_RESIDENT ? uses[k] : -uses[k];
		return 1;
	}
	if (got == want || (!want && args.op == DRM_PAGODA_MAKE_RESIDENT &&
			    (got == ENOSPC || got == ENOMEM)))
		return 1;
	pt_fail("call %lu: RESIDENCY op %u count %u: %s (want %s)", i, args.op, args.count,
		strerror(got), strerror(want));
	return 0;
}

/* DRM_IOCTL_PAGODA_SET_BUDGET always succeeds; a budget only limits. */
static int fuzz_set_budget(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_set_budget args = { .budget = rnd_below(2) ? 0 : rnd_value() };
	int want = 0, got;

	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_SET_BUDGET, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_SET_BUDGET, &args);
	}
	count_pagoda(DRM_PAGODA_SET_BUDGET, got);
	if (got == want)
		return 1;
	pt_fail("call %lu: SET_BUDGET: %s (want %s)", i, strerror(got), strerror(want));
	return 0;
}

/*
 * DRM_IOCTL_PAGODA_GEM_MADVISE: EINVAL for a pad or an unknown state,
 * ENOENT for a foreign handle; retained is 0 or 1.
 */
static int fuzz_gem_madvise(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_gem_madvise args;
	int want, got, known;

	memset(&args, 0, sizeof(args));
	known = nlive && rnd_below(4);
	args.handle = known ? live[rnd_below(nlive)] : (uint32_t)rnd_value();
	known = live_index(args.handle) >= 0;
	args.state = rnd_below(8) ? rnd_below(2) : (uint32_t)rnd_value();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	args.retained = 7;
	want = args.pad || args.state > DRM_PAGODA_MADV_DONTNEED ? EINVAL : known ? 0 : ENOENT;
	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_MADVISE, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_MADVISE, &args);
	}
	count_pagoda(DRM_PAGODA_GEM_MADVISE, got);
	if (got == want && (got || args.retained <= 1))
		return 1;
	pt_fail("call %lu: GEM_MADVISE handle %u state %u pad %u: %s (want %s), retained %u", i,
		args.handle, args.state, args.pad, strerror(got), strerror(want), args.retained);
	return 0;
}

/*
 * The rest checks the GPU address space, contexts and submissions against
 * a model of what this file owns. A result the model cannot explain sets
 * @resync: main() then reopens the file and the model starts empty.
 */
static int resync;

/* A call the fuzzer makes to keep its state known: it must succeed. */
static int must(int got, unsigned long i, const char *what)
{
	if (!got)
		return 1;
	pt_fail("call %lu: %s: %s", i, what, strerror(got));
	resync = 1;
	return 0;
}

/* ---- syncobjs: what drm_syncobj_find_fence() finds in each ---- */

#define NSYNC		4	/* [0] created signaled, [NSYNC - 1] also waits for jobs */
enum { FENCE_NONE, FENCE_PLAIN, FENCE_CHAIN };

static uint32_t sync_handle[NSYNC];
static int sync_fence[NSYNC];		/* FENCE_*: none, a fence, a timeline chain */
static uint64_t sync_seqno[NSYNC];	/* FENCE_CHAIN: the chain's last point */

static int sync_index(uint32_t handle)
{
	int k;

	for (k = 0; k < NSYNC; k++)
		if (handle && sync_handle[k] == handle)
			return k;
	return -1;
}

/* What waiting for @s (an in-fence of SUBMIT) answers: 0, ENOENT or EINVAL. */
static int sync_wait_result(const struct drm_pagoda_sync *s)
{
	int k = sync_index(s->handle);

	if (k < 0)
		return ENOENT;
	switch (sync_fence[k]) {
	case FENCE_NONE:
		return EINVAL;
	case FENCE_PLAIN:	/* a point of something that is no timeline */
		return s->point ? EINVAL : 0;
	default:
		return s->point > sync_seqno[k] ? EINVAL : 0;
	}
}

/* @s received a fence: replaced (point 0) or a timeline point added. */
static void sync_signal(const struct drm_pagoda_sync *s)
{
	int k = sync_index(s->handle);

	if (k < 0)
		return;
	if (!s->point) {
		sync_fence[k] = FENCE_PLAIN;
		return;
	}
	/* a point below the chain's last starts a new chain at the last one */
	if (sync_fence[k] != FENCE_CHAIN || sync_seqno[k] < s->point)
		sync_seqno[k] = s->point;
	sync_fence[k] = FENCE_CHAIN;
}

static void rnd_sync(struct drm_pagoda_sync *s, int often_none)
{
	if (often_none && rnd_below(2))
		s->handle = 0;
	else
		s->handle = rnd_below(4) ? sync_handle[rnd_below(NSYNC)] : (uint32_t)rnd_value();
	s->flags = rnd_below(16) ? 0 : rnd_value();
	s->point = rnd_below(2) ? 0 : rnd_below(4) ? rnd_below(8) : rnd_value();
}

/* ---- contexts ---- */

#define MAX_CTX		8	/* a new one past these destroys one first */
/* A count of syncobjs: mostly 0 to 2, sometimes a boundary. */
static uint32_t rnd_sync_count(void)
{
	static const uint32_t counts[] = {
		0, 1, 2, 3, DRM_PAGODA_SUBMIT_MAX_SYNCS, DRM_PAGODA_SUBMIT_MAX_SYNCS + 1, 0x80000000u, ~0u,
	};

	return rnd_below(4) ? rnd_below(3) : counts[rnd_below(ARRAY_SIZE(counts))];
}

/*
 * In- and out-syncobj arrays of DRM_PAGODA_SUBMIT_MAX_SYNCS entries: all but
 * one in @right_one_in are in every way right (a fence at the point waited
 * for), so that the checks after them are reached.
 */
static void rnd_syncs(struct drm_pagoda_sync *in, struct drm_pagoda_sync *out,
		      unsigned int right_one_in)
{
	unsigned int k;

	for (k = 0; k < DRM_PAGODA_SUBMIT_MAX_SYNCS; k++) {
		rnd_sync(&in[k], 0);
		rnd_sync(&out[k], 0);
		if (rnd_below(right_one_in)) {
			in[k].flags = out[k].flags = 0;
			in[k].handle = sync_handle[rnd_below(NSYNC)];
			out[k].handle = sync_handle[rnd_below(NSYNC)];
			if (sync_wait_result(&in[k]))
				in[k].point = 0;
			if (sync_wait_result(&in[k]))
				in[k].handle = sync_handle[0];
		}
	}
}

static uint32_t ctx_id[MAX_CTX];
static int ctx_banned[MAX_CTX];
static uint32_t ctx_adapter[MAX_CTX];	/* the GPU of the link running its jobs */
static unsigned int nctx;

static int ctx_index(uint32_t id)
{
	unsigned int k;

	for (k = 0; k < nctx; k++)
		if (ctx_id[k] == id)
			return k;
	return -1;
}

static uint32_t rnd_ctx_id(void)
{
	if (nctx && rnd_below(4))
		return ctx_id[rnd_below(nctx)];
	return rnd_below(2) ? rnd_below(16) : (uint32_t)rnd_value();
}

static void ctx_forget(unsigned int k)
{
	nctx--;
	ctx_id[k] = ctx_id[nctx];
	ctx_banned[k] = ctx_banned[nctx];
	ctx_adapter[k] = ctx_adapter[nctx];
}

static int ctx_destroy(int fd, unsigned int k, unsigned long i)
{
	struct drm_pagoda_ctx_destroy args = { .ctx_id = ctx_id[k] };

	if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_DESTROY, &args), i, "CTX_DESTROY of a context"))
		return 0;
	ctx_forget(k);
	return 1;
}

/* ---- the address space: reservations, and what is mapped in them ---- */

#define MAX_RESV	512
#define RESV_KEEP	48	/* past these (or MAPS_KEEP), every reservation is freed */
#define MAX_MAPS	4096
#define MAPS_KEEP	1500
/* Zero mappings get tables for all their range: keep those that run small. */
#define ZERO_MAX	(16ull << 20)

/*
 * What a mapped range holds: tells what a job of a command buffer there
 * does. PROTECT changes a mapping's protections, never what it holds.
 */
enum { MAP_NOP = 1, MAP_BO, MAP_ZERO };

struct range {
	uint64_t va, size;
	int kind;	/* mappings: MAP_*; reservations: 1 for a tiled one */
	uint32_t prot;	/* mappings: DRM_PAGODA_VM_READ_ONLY, DRM_PAGODA_VM_NO_EXECUTE */
};

static struct range resv[MAX_RESV];
static struct range maps[MAX_MAPS];	/* sorted by va, none overlapping */
static unsigned int nresv, nmaps;

/* Index of the reservation holding all of [va, va + size), or -1 (pagoda_vm_find_reservation). */
static int resv_find(uint64_t va, uint64_t size)
{
	unsigned int k;

	for (k = 0; k < nresv; k++)
		if (resv[k].va <= va && va + size <= resv[k].va + resv[k].size)
			return k;
	return -1;
}

static int resv_overlaps(uint64_t va, uint64_t size)
{
	unsigned int k;

	for (k = 0; k < nresv; k++)
		if (resv[k].va < va + size && va < resv[k].va + resv[k].size)
			return 1;
	return 0;
}

/*
 * Whether a free range of @size fits in [@lo, @hi): what the driver's
 * search without DRM_PAGODA_VM_FIXED finds. The lowest that fits starts at
 * @lo or where a reservation ends.
 */
static int resv_fits(uint64_t lo, uint64_t hi, uint64_t size, uint64_t align)
{
	unsigned int k;
	uint64_t start;

	for (k = 0; k <= nresv; k++) {
		start = k < nresv ? resv[k].va + resv[k].size : lo;
		start = (start + align - 1) / align * align;
		if (start < lo || start > hi || hi - start < size)
			continue;
		if (!resv_overlaps(start, size))
			return 1;
	}
	return 0;
}

static void resv_add(uint64_t va, uint64_t size, int tiled)
{
	resv[nresv].va = va;
	resv[nresv].size = size;
	resv[nresv].kind = tiled;
	nresv++;
}

static void maps_insert(unsigned int k, uint64_t va, uint64_t size, int kind, uint32_t prot)
{
	memmove(&maps[k + 1], &maps[k], (nmaps - k) * sizeof(maps[0]));
	maps[k].va = va;
	maps[k].size = size;
	maps[k].kind = kind;
	maps[k].prot = prot;
	nmaps++;
}

/* Nothing is mapped in [va, va + size) any more. */
static void maps_clear(uint64_t va, uint64_t size)
{
	uint64_t end = va + size;
	unsigned int k = 0;

	while (k < nmaps) {
		struct range *m = &maps[k];
		uint64_t m_end = m->va + m->size;

		if (m_end <= va || m->va >= end) {
			k++;
		} else if (m->va < va && m_end > end) {
			m->size = va - m->va;
			maps_insert(k + 1, end, m_end - end, m->kind, m->prot);
			k += 2;
		} else if (m->va < va) {
			m->size = va - m->va;
			k++;
		} else if (m_end > end) {
			m->size = m_end - end;
			m->va = end;
			k++;
		} else {
			memmove(m, m + 1, (nmaps - k - 1) * sizeof(maps[0]));
			nmaps--;
		}
	}
}

static void maps_add(uint64_t va, uint64_t size, int kind, uint32_t prot)
{
	unsigned int k = 0;

	maps_clear(va, size);
	while (k < nmaps && maps[k].va < va)
		k++;
	maps_insert(k, va, size, kind, prot);
}

/*
 * What is mapped in [va, va + size) gets the protections @prot, holding
 * what it held (pagoda_vm_protect): a mapping across an edge of the range
 * is split there, its part outside keeping its protections.
 */
/* [dst, dst + size) maps what [src, src + size) maps, page for page (COPY). */
static void maps_copy(uint64_t src, uint64_t size, uint64_t dst)
{
	static struct range parts[MAX_MAPS];
	uint64_t end = src + size;
	unsigned int k, n = 0;

	for (k = 0; k < nmaps; k++) {
		uint64_t lo = maps[k].va > src ? maps[k].va : src;
		uint64_t hi = maps[k].va + maps[k].size < end ? maps[k].va + maps[k].size : end;

		if (lo < hi)
			parts[n++] = (struct range){ lo + dst - src, hi - lo, maps[k].kind,
						     maps[k].prot };
	}
	maps_clear(dst, size);
	for (k = 0; k < n; k++)
		maps_add(parts[k].va, parts[k].size, parts[k].kind, parts[k].prot);
}

static void maps_protect(uint64_t va, uint64_t size, uint32_t prot)
{
	uint64_t end = va + size;
	unsigned int k;

	for (k = 0; k < nmaps; k++) {
		struct range *m = &maps[k];
		uint64_t m_end = m->va + m->size;

		if (m_end <= va)
			continue;
		if (m->va >= end)
			break;
		if (m->va < va) {	/* the part from @va is maps[k + 1], next */
			m->size = va - m->va;
			maps_insert(k + 1, va, m_end - va, m->kind, m->prot);
			continue;
		}
		if (m_end > end) {
			m->size = end - m->va;
			maps_insert(k + 1, end, m_end - end, m->kind, m->prot);
		}
		m->prot = prot;
	}
}

/* Index of the mapping holding @va, or -1. */
static int maps_find(uint64_t va)
{
	unsigned int k;

	for (k = 0; k < nmaps && maps[k].va <= va; k++)
		if (va < maps[k].va + maps[k].size)
			return k;
	return -1;
}

/*
 * The walk of pagoda_vm_check_exec() over [va, va + size): ENOENT at the
 * first page not mapped, EACCES at the first mapping that cannot be run
 * (with @exec), else 0; *@nops tells whether all of it holds NOPs.
 */
static int maps_walk(uint64_t va, uint64_t size, int exec, int *nops)
{
	uint64_t covered = va, end = va + size;
	unsigned int k;
	int all = 1;

	for (k = 0; k < nmaps; k++) {
		const struct range *m = &maps[k];

		if (m->va + m->size <= va)
			continue;
		if (m->va >= end)
			break;
		if (m->va > covered)
			return ENOENT;
		if (exec && (m->kind == MAP_ZERO || m->prot & DRM_PAGODA_VM_NO_EXECUTE))
			return EACCES;
		all &= m->kind == MAP_NOP;
		covered = m->va + m->size;
	}
	if (nops)
		*nops = all;
	return covered >= end ? 0 : ENOENT;
}

/* ---- command buffers of NOPs, for submissions that must run ---- */

#define NOP_SIZE	(64u << 10)
static uint32_t *nop_map;	/* the CPU's view of the buffer (its handle is closed) */
static uint64_t nop_va;

static void nop_forget(void)
{
	if (nop_map)
		munmap(nop_map, NOP_SIZE);
	nop_map = NULL;
	nop_va = 0;
}

static int nop_intact(void)
{
	int nops = 0;

	return nop_map && !maps_walk(nop_va, NOP_SIZE, 1, &nops) && nops;
}

/* Where the driver looks for a range for @op without FIXED: [*lo, *hi). */
static void vm_op_range(const struct drm_pagoda_vm_op *op, uint64_t *lo, uint64_t *hi)
{
	*lo = op->min_va > DRM_PAGODA_VA_START ? op->min_va : DRM_PAGODA_VA_START;
	*hi = op->max_va ? op->max_va : va_end;
}

/* The size of the reservation @op makes without FIXED. */
static uint64_t vm_op_resv_size(const struct drm_pagoda_vm_op *op)
{
	return (op->size + DRM_PAGODA_VA_ALIGN - 1) & ~(DRM_PAGODA_VA_ALIGN - 1);
}

/* The alignment of the reservation @op makes without FIXED. */
static uint64_t vm_op_align(const struct drm_pagoda_vm_op *op)
{
	return op->op == DRM_PAGODA_VM_OP_RESERVE && op->flags & DRM_PAGODA_VM_TILED ?
	       DRM_PAGODA_VM_TILED_ALIGN : DRM_PAGODA_VA_ALIGN;
}

/*
 * An operation inside a tiled reservation: whole tiles, and a MAP's
 * allocation, where tiles are LEAF64 entries (64 KiB segment pages), of
 * 64 KiB pages and never in system memory (pagoda_vm_tiles_ok()).
 */
static int vm_op_tiles_ok(const struct drm_pagoda_vm_op *op)
{
	int idx;

	if ((op->va | op->size | op->offset) % DRM_PAGODA_VM_TILE)
		return 0;
	if (op->op != DRM_PAGODA_VM_OP_MAP || op->flags & DRM_PAGODA_VM_ZERO ||
	    segment_page != DRM_PAGODA_VM_TILE)
		return 1;
	idx = live_index(op->handle);
	return idx >= 0 && live_page[idx] == DRM_PAGODA_VM_TILE &&
	       !(live_segs[idx] & DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM));
}

/*
 * Record what @op did (it ran and succeeded). For RESERVE and MAP without
 * FIXED, the VA the driver chose must be free, aligned and in range;
 * returns 0 when it is not.
 */
static int vm_op_apply(const struct drm_pagoda_vm_op *op)
{
	uint64_t lo, hi, size = vm_op_resv_size(op);
	int k;

	if ((op->op == DRM_PAGODA_VM_OP_RESERVE || op->op == DRM_PAGODA_VM_OP_MAP) &&
	    !(op->flags & DRM_PAGODA_VM_FIXED)) {
		vm_op_range(op, &lo, &hi);
		if (op->va % vm_op_align(op) || op->va < lo || op->va > hi || hi - op->va < size ||
		    resv_overlaps(op->va, size))
			return 0;
		resv_add(op->va, size, op->op == DRM_PAGODA_VM_OP_RESERVE &&
				       op->flags & DRM_PAGODA_VM_TILED);
	}
	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		if (op->flags & DRM_PAGODA_VM_FIXED)
			resv_add(op->va, op->size, !!(op->flags & DRM_PAGODA_VM_TILED));
		break;
	case DRM_PAGODA_VM_OP_FREE:
		k = resv_find(op->va, op->size);
		maps_clear(op->va, op->size);
		resv[k] = resv[--nresv];
		break;
	case DRM_PAGODA_VM_OP_MAP:
		maps_add(op->va, op->size, op->flags & DRM_PAGODA_VM_ZERO ? MAP_ZERO : MAP_BO,
			 op->flags & (DRM_PAGODA_VM_READ_ONLY | DRM_PAGODA_VM_NO_EXECUTE));
		break;
	case DRM_PAGODA_VM_OP_UNMAP:
		maps_clear(op->va, op->size);
		break;
	case DRM_PAGODA_VM_OP_COPY:
		maps_copy(op->offset, op->size, op->va);
		break;
	default:
		maps_protect(op->va, op->size, op->flags);
		break;
	}
	return 1;
}

static void report_op(unsigned long i, const char *what, const struct drm_pagoda_vm_op *op,
		      uint32_t k, uint32_t n, uint32_t done, int got, int want)
{
	pt_fail("call %lu: VM_BIND %s: op %u of %u (op %u flags 0x%x handle %u instance %u va 0x%llx size 0x%llx offset 0x%llx min_va 0x%llx max_va 0x%llx), %u done: %s (want %s)",
		i, what, k, n, op->op, op->flags, op->handle, op->instance, (unsigned long long)op->va,
		(unsigned long long)op->size, (unsigned long long)op->offset,
		(unsigned long long)op->min_va, (unsigned long long)op->max_va, done, strerror(got),
		strerror(want));
}

/* Operations VM_BIND ran (successful ones), and the PROTECTs of them. */
static unsigned long vm_ops_done, vm_protects_done;

/* Free every reservation the model holds: keeps the state (and the page tables) bounded. */
static int vm_free_all(int fd, unsigned long i)
{
	static struct drm_pagoda_vm_op ops[DRM_PAGODA_VM_BIND_MAX_OPS];
	struct drm_pagoda_vm_bind args = { .ops = (uintptr_t)ops };
	uint32_t n, k;
	int got;

	while (nresv) {
		n = nresv < DRM_PAGODA_VM_BIND_MAX_OPS ? nresv : DRM_PAGODA_VM_BIND_MAX_OPS;
		memset(ops, 0, n * sizeof(ops[0]));
		for (k = 0; k < n; k++) {
			ops[k].op = DRM_PAGODA_VM_OP_FREE;
			ops[k].va = resv[nresv - 1 - k].va;
			ops[k].size = resv[nresv - 1 - k].size;
		}
		args.count = n;
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_VM_BIND, &args);
		if (got || args.count != n) {
			report_op(i, "freeing every reservation", &ops[args.count < n ? args.count : 0],
				  args.count, n, args.count, got, 0);
			resync = 1;
			return 0;
		}
		for (k = 0; k < n; k++) {
			maps_clear(ops[k].va, ops[k].size);
			nresv--;
		}
	}
	nop_forget();
	return 1;
}

/*
 * Make sure a command buffer of NOPs is mapped executable at nop_va: an
 * allocation in system memory filled through the CPU and mapped where the
 * driver picks, its handle closed at once so that no random handle of the
 * other ioctls reaches it (the mapping and the CPU's keep it).
 */
static int nop_setup(int fd, unsigned long i)
{
	struct drm_pagoda_gem_create create = {
		.size = NOP_SIZE,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct drm_pagoda_vm_op op = { .op = DRM_PAGODA_VM_OP_MAP, .size = NOP_SIZE };
	struct drm_pagoda_vm_bind bind = { .ops = (uintptr_t)&op, .count = 1 };
	struct drm_pagoda_gem_info info = { 0 };
	void *map = MAP_FAILED;
	unsigned int k;
	int got;

	if (nop_intact())
		return 1;
	nop_forget();
	if ((nresv >= RESV_KEEP ||
	     !resv_fits(DRM_PAGODA_VA_START, va_end, NOP_SIZE, DRM_PAGODA_VA_ALIGN)) &&
	    !vm_free_all(fd, i))
		return 0;
	if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, &create), i,
		  "GEM_CREATE of a command buffer"))
		return 0;
	info.handle = create.handle;
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_INFO, &info);
	if (!got && info.mmap_offset) {
		map = mmap(NULL, NOP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			   (off_t)info.mmap_offset);
		got = map == MAP_FAILED ? errno : 0;
	} else if (!got) {
		got = EACCES;
	}
	if (!got) {
		for (k = 0; k < NOP_SIZE / 4; k++)
			((uint32_t *)map)[k] = PAGODA_CMD_HEADER(PAGODA_CMD_NOP, 0, 1);
		op.handle = create.handle;
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_VM_BIND, &bind);
	}
	close_handle(fd, create.handle);
	if (!got && !vm_op_apply(&op)) {
		report_op(i, "mapping a command buffer: bad VA", &op, 0, 1, 1, 0, 0);
		resync = 1;
		got = -1;
	}
	if (got) {
		if (got > 0)
			must(got, i, "mapping a command buffer of NOPs");
		if (map != MAP_FAILED)
			munmap(map, NOP_SIZE);
		return 0;
	}
	maps_add(op.va, NOP_SIZE, MAP_NOP, 0);
	nop_map = map;
	nop_va = op.va;
	return 1;
}

/* ---- DRM_IOCTL_PAGODA_VM_BIND ---- */

/* A VA: often a reservation's start, end or a page in it, or an edge of the space. */
static uint64_t rnd_va(void)
{
	const struct range *r;

	switch (rnd_below(8)) {
	case 0:
		return rnd_value();
	case 1:
		return DRM_PAGODA_VA_START * rnd_below(32);
	case 2:
		return va_end - DRM_PAGODA_VA_ALIGN * rnd_below(32);
	case 3:
		return rnd_below(va_end) & ~(DRM_PAGODA_VA_ALIGN - 1);
	default:
		if (!nresv)
			return DRM_PAGODA_VA_START + DRM_PAGODA_VA_ALIGN * rnd_below(64);
		r = &resv[rnd_below(nresv)];
		switch (rnd_below(3)) {
		case 0:
			return r->va;
		case 1:
			return r->va + r->size;
		default:
			return r->va + DRM_PAGODA_VA_PAGE * rnd_below(r->size / DRM_PAGODA_VA_PAGE);
		}
	}
}

/* Bytes in multiples of @unit, mostly small. */
static uint64_t rnd_size(uint64_t unit)
{
	switch (rnd_below(8)) {
	case 0:
		return unit * (1 + rnd_below(4096));
	case 1:
		return unit << rnd_below(20);
	default:
		return unit * (1 + rnd_below(16));
	}
}

/*
 * A random operation. @sane ones pass pagoda_vm_check_op() and name live
 * allocations: what they do depends on the state only; the others break
 * one rule or more now and then.
 */
static void rnd_vm_op(struct drm_pagoda_vm_op *op, int sane)
{
	static const uint32_t kinds[] = {
		DRM_PAGODA_VM_OP_RESERVE, DRM_PAGODA_VM_OP_RESERVE, DRM_PAGODA_VM_OP_FREE,
		DRM_PAGODA_VM_OP_MAP, DRM_PAGODA_VM_OP_MAP, DRM_PAGODA_VM_OP_MAP,
		DRM_PAGODA_VM_OP_UNMAP, DRM_PAGODA_VM_OP_UNMAP,
		DRM_PAGODA_VM_OP_PROTECT, DRM_PAGODA_VM_OP_PROTECT, DRM_PAGODA_VM_OP_COPY,
	};
	const struct range *r = nresv && rnd_below(4) ? &resv[rnd_below(nresv)] : NULL;
	const struct range *m = nmaps && rnd_below(2) ? &maps[rnd_below(nmaps)] : NULL;
	uint64_t bo_size = 0, span;
	int idx;

	memset(op, 0, sizeof(*op));
	op->op = kinds[rnd_below(ARRAY_SIZE(kinds))];
	/* PROTECT now and then the buffer of NOPs, which SUBMIT runs */
	if (op->op == DRM_PAGODA_VM_OP_PROTECT && nop_map && !rnd_below(4)) {
		idx = maps_find(nop_va + DRM_PAGODA_VA_PAGE * rnd_below(NOP_SIZE / DRM_PAGODA_VA_PAGE));
		if (idx >= 0)
			m = &maps[idx];
	}
	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		op->flags = rnd_below(2) ? DRM_PAGODA_VM_FIXED : 0;
		op->size = rnd_size(DRM_PAGODA_VA_ALIGN);
		/* now and then a tiled resource, in whole 2 MiB */
		if (!rnd_below(4)) {
			op->flags |= DRM_PAGODA_VM_TILED;
			op->size = DRM_PAGODA_VM_TILED_ALIGN * (1 + rnd_below(8));
		}
		break;
	case DRM_PAGODA_VM_OP_FREE:	/* at @va, without the flag */
		op->size = r ? r->size : rnd_size(DRM_PAGODA_VA_ALIGN);
		break;
	case DRM_PAGODA_VM_OP_MAP:
		op->flags = (rnd_below(4) ? DRM_PAGODA_VM_FIXED : 0) |
			    (rnd_below(4) ? 0 : DRM_PAGODA_VM_READ_ONLY) |
			    (rnd_below(4) ? 0 : DRM_PAGODA_VM_NO_EXECUTE) |
			    (nlive && rnd_below(4) ? 0 : DRM_PAGODA_VM_ZERO);
		if (!(op->flags & DRM_PAGODA_VM_ZERO)) {
			idx = rnd_below(nlive);
			op->handle = live[idx];
			bo_size = live_size[idx];
			op->offset = DRM_PAGODA_VA_PAGE *
				     rnd_below(rnd_below(2) ? 1 : bo_size / DRM_PAGODA_VA_PAGE);
			span = (bo_size - op->offset) / DRM_PAGODA_VA_PAGE;
			op->size = DRM_PAGODA_VA_PAGE * (rnd_below(2) ? span : 1 + rnd_below(span));
		} else {
			op->size = rnd_size(DRM_PAGODA_VA_PAGE);
			if (op->size > ZERO_MAX)
				op->size = ZERO_MAX;
		}
		break;
	case DRM_PAGODA_VM_OP_PROTECT:
		op->flags = (rnd_below(2) ? 0 : DRM_PAGODA_VM_READ_ONLY) |
			    (rnd_below(2) ? 0 : DRM_PAGODA_VM_NO_EXECUTE);
		/* now and then what a MAP takes and a PROTECT refuses */
		if (!sane && !rnd_below(16)) {
			switch (rnd_below(4)) {
			case 0:
				op->flags |= DRM_PAGODA_VM_FIXED;
				break;
			case 1:
				op->flags |= DRM_PAGODA_VM_ZERO;
				break;
			case 2:
				op->handle = nlive ? live[rnd_below(nlive)] : 1;
				break;
			default:
				op->offset = DRM_PAGODA_VA_PAGE;
				break;
			}
		}
		/* fall through */
	default:
		op->size = m ? m->size : r ? r->size : rnd_size(DRM_PAGODA_VA_PAGE);
		break;
	}
	/* at @va: a place in a reservation (or over one); else a range to pick from */
	if (op->flags & DRM_PAGODA_VM_FIXED || op->op == DRM_PAGODA_VM_OP_FREE ||
	    op->op == DRM_PAGODA_VM_OP_UNMAP || op->op == DRM_PAGODA_VM_OP_PROTECT ||
	    op->op == DRM_PAGODA_VM_OP_COPY) {
		uint64_t align = op->op == DRM_PAGODA_VM_OP_RESERVE || op->op == DRM_PAGODA_VM_OP_FREE ?
				 vm_op_align(op) : DRM_PAGODA_VA_PAGE;

		if (m && (op->op == DRM_PAGODA_VM_OP_UNMAP || op->op == DRM_PAGODA_VM_OP_PROTECT ||
			  op->op == DRM_PAGODA_VM_OP_COPY)) {
			unsigned int last = m - maps;

			/* now and then on over the mappings that follow it without a gap */
			while (rnd_below(2) && last + 1 < nmaps &&
			       maps[last + 1].va == maps[last].va + maps[last].size)
				last++;
			op->va = m->va;
			op->size = maps[last].va + maps[last].size - m->va;
			if (rnd_below(2)) {	/* from a page of the first to a page of the last */
				op->va += DRM_PAGODA_VA_PAGE * rnd_below(m->size / DRM_PAGODA_VA_PAGE);
				span = (maps[last].va + maps[last].size - op->va) / DRM_PAGODA_VA_PAGE;
				op->size = DRM_PAGODA_VA_PAGE * (1 + rnd_below(span));
			}
		} else if (r && op->size <= r->size && op->op != DRM_PAGODA_VM_OP_RESERVE) {
			op->va = r->va + align * rnd_below((r->size - op->size) / align + 1);
		} else {
			op->va = rnd_va() & ~(align - 1);
		}
		if (op->va < DRM_PAGODA_VA_START)
			op->va = DRM_PAGODA_VA_START;
		if (op->size > va_end - DRM_PAGODA_VA_START)
			op->size = DRM_PAGODA_VA_ALIGN;
		if (op->va > va_end - op->size)
			op->va = va_end - op->size;
	} else if (rnd_below(4)) {
		op->min_va = rnd_below(2) ? 0 : rnd_va() & ~(DRM_PAGODA_VA_ALIGN - 1);
		if (op->min_va >= va_end)
			op->min_va = 0;
		if (rnd_below(2)) {
			op->max_va = op->min_va + DRM_PAGODA_VA_ALIGN * (1 + rnd_below(64));
			op->max_va += vm_op_resv_size(op) * rnd_below(3);
			if (op->max_va > va_end)
				op->max_va = va_end;
		}
	}
	if (op->size > va_end - DRM_PAGODA_VA_START)
		op->size = DRM_PAGODA_VA_ALIGN;
	/* COPY: a source in a reservation, at the same low bits, mostly apart */
	if (op->op == DRM_PAGODA_VM_OP_COPY) {
		const struct range *src = nresv ? &resv[rnd_below(nresv)] : NULL;

		op->offset = src && src->size >= op->size ?
			     src->va + DRM_PAGODA_VA_ALIGN *
				       rnd_below((src->size - op->size) / DRM_PAGODA_VA_ALIGN + 1) +
				       op->va % DRM_PAGODA_VA_ALIGN :
			     op->va + (rnd_below(2) ? op->size : 0);
		op->offset = (op->offset & ~(DRM_PAGODA_VA_ALIGN - 1)) |
			     (op->va & (DRM_PAGODA_VA_ALIGN - 1));
	}
	/* mostly an offset in the VA's 64 KiB alignment, as 64 KiB pages need */
	if (op->op == DRM_PAGODA_VM_OP_MAP && op->handle && rnd_below(4)) {
		const uint64_t mask = DRM_PAGODA_VA_ALIGN - 1;
		uint64_t offset = (op->offset & ~mask) |
				  (op->flags & DRM_PAGODA_VM_FIXED ? op->va & mask : 0);

		while (offset >= DRM_PAGODA_VA_ALIGN && offset + op->size > bo_size)
			offset -= DRM_PAGODA_VA_ALIGN;
		if (offset + op->size <= bo_size)
			op->offset = offset;
	}
	if (sane)
		return;

	/* now and then something pagoda_vm_check_op() refuses */
	switch (rnd_below(64)) {
	case 0:
		op->op = rnd_below(2) ? rnd_below(7) : (uint32_t)rnd_value();
		break;
	case 1:
		op->flags ^= 1u << rnd_below(rnd_below(2) ? 4 : 32);
		break;
	case 2:
		op->instance = rnd_below(2) ? rnd_below(PAGODA_LINK_MAX_ADAPTERS + 2) :
					      (uint32_t)rnd_value();
		break;
	case 3:
		op->handle = rnd_below(2) ? 0 : (uint32_t)rnd_value();
		break;
	case 4:
		op->va = rnd_value();
		break;
	case 5:
		op->size = rnd_value();
		break;
	case 6:
		op->offset = rnd_value();
		break;
	case 7:
		op->min_va = rnd_value();
		break;
	case 8:
		op->max_va = rnd_below(2) ? va_end + DRM_PAGODA_VA_ALIGN : rnd_value();
		break;
	case 9:
		op->va += 4096;
		break;
	case 10:
		op->size += DRM_PAGODA_VA_PAGE;
		break;
	}
	/* a zero mapping that passes the checks runs: keep it small */
	if (op->op == DRM_PAGODA_VM_OP_MAP && op->flags & DRM_PAGODA_VM_ZERO && op->size > ZERO_MAX &&
	    op->size % DRM_PAGODA_VA_PAGE == 0)
		op->size = ZERO_MAX;
}

/* pagoda_vm_check_op(): 0, or EINVAL for what no state makes right. */
static int vm_op_check(const struct drm_pagoda_vm_op *op)
{
	int fixed = op->flags & DRM_PAGODA_VM_FIXED;
	uint64_t align = op->op == DRM_PAGODA_VM_OP_RESERVE || op->op == DRM_PAGODA_VM_OP_FREE ?
			 DRM_PAGODA_VA_ALIGN : DRM_PAGODA_VA_PAGE;
	uint32_t allowed;

	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		allowed = DRM_PAGODA_VM_FIXED | DRM_PAGODA_VM_TILED;
		if (op->flags & DRM_PAGODA_VM_TILED)
			align = DRM_PAGODA_VM_TILED_ALIGN;
		break;
	case DRM_PAGODA_VM_OP_MAP:
		allowed = DRM_PAGODA_VM_FLAGS;
		break;
	case DRM_PAGODA_VM_OP_PROTECT:
		allowed = DRM_PAGODA_VM_READ_ONLY | DRM_PAGODA_VM_NO_EXECUTE;
		fixed = 1;
		break;
	case DRM_PAGODA_VM_OP_FREE:
	case DRM_PAGODA_VM_OP_UNMAP:
	case DRM_PAGODA_VM_OP_COPY:
		allowed = 0;
		fixed = 1;
		break;
	default:
		return EINVAL;
	}
	if (op->flags & ~allowed || !op->size || op->size % align)
		return EINVAL;
	/* which GPU's instance: only a MAP of an allocation says */
	if (op->instance && (op->op != DRM_PAGODA_VM_OP_MAP || op->flags & DRM_PAGODA_VM_ZERO ||
			     op->instance > num_adapters))
		return EINVAL;
	if (op->op == DRM_PAGODA_VM_OP_MAP && !(op->flags & DRM_PAGODA_VM_ZERO)) {
		if (!op->handle || op->offset % DRM_PAGODA_VA_PAGE)
			return EINVAL;
	} else if (op->op == DRM_PAGODA_VM_OP_COPY) {
		/* the source: in the space, apart, at the same low 16 bits */
		if (op->handle || op->offset < DRM_PAGODA_VA_START || op->size > va_end ||
		    op->offset > va_end - op->size || (op->va ^ op->offset) % DRM_PAGODA_VA_ALIGN ||
		    (op->offset < op->va + op->size && op->va < op->offset + op->size))
			return EINVAL;
	} else if (op->handle || op->offset) {
		return EINVAL;
	}
	if (fixed)
		return op->min_va || op->max_va || op->va % align || op->va < DRM_PAGODA_VA_START ||
		       op->size > va_end || op->va > va_end - op->size ? EINVAL : 0;
	if (op->min_va % DRM_PAGODA_VA_ALIGN || op->max_va % DRM_PAGODA_VA_ALIGN ||
	    op->max_va > va_end || (op->max_va && op->max_va <= op->min_va) || op->size > va_end)
		return EINVAL;
	return 0;
}

/* pagoda_vm_lookup_objs(): the checks of every operation before any runs. */
static int vm_ops_check(const struct drm_pagoda_vm_op *ops, uint32_t n, uint32_t *bad)
{
	int ret, idx;

	for (*bad = 0; *bad < n; (*bad)++) {
		const struct drm_pagoda_vm_op *op = &ops[*bad];

		ret = vm_op_check(op);
		if (ret)
			return ret;
		if (op->op != DRM_PAGODA_VM_OP_MAP || op->flags & DRM_PAGODA_VM_ZERO)
			continue;
		idx = live_index(op->handle);
		if (idx < 0)
			return ENOENT;
		if (op->offset > live_size[idx] || op->size > live_size[idx] - op->offset)
			return EINVAL;
		/* a 64 KiB page's VA and address share their 64 KiB alignment */
		if (op->flags & DRM_PAGODA_VM_FIXED ? (op->va ^ op->offset) % live_page[idx] :
		    op->offset % live_page[idx])
			return EINVAL;
		/* instances are a linked allocation's */
		if (op->instance && !(live_flags[idx] & (DRM_PAGODA_BO_LINK_INSTANCED |
							 DRM_PAGODA_BO_LINK_MIRRORED)))
			return EINVAL;
	}
	return 0;
}

/*
 * What running @op against the modelled space answers (pagoda_vm_run_op).
 * *@room is set for a MAP or PROTECT (which maps again), which may also
 * fail for want of memory (ENOSPC, ENOMEM) where 0 is expected.
 */
static int vm_op_expect(const struct drm_pagoda_vm_op *op, int *room)
{
	int fixed = op->flags & DRM_PAGODA_VM_FIXED, k, src;
	uint64_t lo, hi;

	*room = op->op == DRM_PAGODA_VM_OP_MAP || op->op == DRM_PAGODA_VM_OP_PROTECT ||
		op->op == DRM_PAGODA_VM_OP_COPY;
	vm_op_range(op, &lo, &hi);
	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		if (fixed)
			return resv_overlaps(op->va, op->size) ? EEXIST : 0;
		return resv_fits(lo, hi, vm_op_resv_size(op), vm_op_align(op)) ? 0 : ENOSPC;
	case DRM_PAGODA_VM_OP_FREE:
		k = resv_find(op->va, op->size);
		return k >= 0 && resv[k].va == op->va && resv[k].size == op->size ? 0 : ENOENT;
	case DRM_PAGODA_VM_OP_MAP:
		if (!fixed)
			return resv_fits(lo, hi, vm_op_resv_size(op), vm_op_align(op)) ? 0 : ENOSPC;
		k = resv_find(op->va, op->size);
		if (k < 0)
			return ENOENT;
		return resv[k].kind && !vm_op_tiles_ok(op) ? EINVAL : 0;
	case DRM_PAGODA_VM_OP_COPY:	/* each range in one reservation, tiles onto tiles */
		k = resv_find(op->va, op->size);
		src = resv_find(op->offset, op->size);
		if (k < 0 || src < 0)
			return ENOENT;
		return resv[k].kind != resv[src].kind || (resv[k].kind && !vm_op_tiles_ok(op)) ?
		       EINVAL : 0;
	default:	/* UNMAP, PROTECT: in one reservation, mapped throughout */
		k = resv_find(op->va, op->size);
		if (k < 0 || maps_walk(op->va, op->size, 0, NULL))
			return ENOENT;
		return resv[k].kind && !vm_op_tiles_ok(op) ? EINVAL : 0;
	}
}

/*
 * DRM_IOCTL_PAGODA_VM_BIND: EINVAL for a bad count, flags or out_sync
 * flags; EFAULT for unreadable operations; then, in the order of the
 * operations, EINVAL for one pagoda_vm_check_op() refuses, ENOENT for an
 * unknown handle, EINVAL for a range past the allocation; ENOENT for an
 * unknown out-syncobj; all with nothing done (count 0). Then the
 * operations run in order until one fails against the state the earlier
 * ones left (EEXIST, ENOENT, ENOSPC; a MAP or PROTECT also ENOSPC or
 * ENOMEM for want of memory): count tells how many ran, and each of them
 * must be what the model expects; the out-syncobj gets a fence either way.
 * A PROTECT that ran out of memory may have changed part of its range:
 * the model is then lost.
 */
static int fuzz_vm_bind(int fd, void *readonly, unsigned long i)
{
	static const uint32_t bad_counts[] = {
		0, DRM_PAGODA_VM_BIND_MAX_OPS, DRM_PAGODA_VM_BIND_MAX_OPS + 1, 0x80000000u, ~0u,
	};
	static struct drm_pagoda_vm_op ops[DRM_PAGODA_VM_BIND_MAX_OPS];
	struct drm_pagoda_vm_bind args = { 0 };
	uint32_t n, k, bad = ~0u;	/* the operation the checks refuse */
	int want, got, room, expect, sane = rnd_below(2);

	if ((nresv > RESV_KEEP || nmaps > MAPS_KEEP) && !vm_free_all(fd, i))
		return 0;
	n = rnd_below(16) ? 1 + rnd_below(rnd_below(4) ? 4 : 16) :
			    bad_counts[rnd_below(ARRAY_SIZE(bad_counts))];
	for (k = 0; k < n && k < DRM_PAGODA_VM_BIND_MAX_OPS; k++)
		rnd_vm_op(&ops[k], sane);
	args.ops = (uintptr_t)ops;
	args.count = n;
	/* never DRM_PAGODA_VM_BIND_QUEUE alone: queued binds run later (tiles, kfuzz) */
	args.flags = rnd_below(16) ? 0 : rnd_value() | (1u << (1 + rnd_below(31)));
	rnd_sync(&args.out_sync, 1);
	if (!n || n > DRM_PAGODA_VM_BIND_MAX_OPS || args.flags || args.out_sync.flags) {
		want = EINVAL;
	} else if (!rnd_below(16)) {
		args.ops = (uintptr_t)bad_pointer(readonly);
		/* read-only memory holds operations 0, as far as it goes */
		want = args.ops == (uintptr_t)readonly &&
		       n * sizeof(ops[0]) <= PAYLOAD_MAX ? EINVAL : EFAULT;
	} else {
		want = vm_ops_check(ops, n, &bad);
		if (!want && args.out_sync.handle && sync_index(args.out_sync.handle) < 0)
			want = ENOENT;
	}

	if (!rnd_below(32)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_VM_BIND, bad_pointer(readonly));
		count_pagoda(DRM_PAGODA_VM_BIND, got);
		if (got == EFAULT)
			return 1;
		pt_fail("call %lu: VM_BIND with a bad argument pointer: %s (want %s)", i,
			strerror(got), strerror(EFAULT));
		return 0;
	}
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_VM_BIND, &args);
	count_pagoda(DRM_PAGODA_VM_BIND, got);
	if (want) {
		if (got == want && !args.count)
			return 1;
		if (bad < n && n <= DRM_PAGODA_VM_BIND_MAX_OPS && args.ops == (uintptr_t)ops)
			report_op(i, "checks", &ops[bad], bad, n, args.count, got, want);
		else
			pt_fail("call %lu: VM_BIND count %u flags 0x%x out_sync %u flags 0x%x point %llu: %s, %u done (want %s, 0 done)",
				i, n, args.flags, args.out_sync.handle, args.out_sync.flags,
				(unsigned long long)args.out_sync.point, strerror(got), args.count,
				strerror(want));
		resync = 1;
		return 0;
	}

	/* Everything passed the checks: the operations ran in order. */
	if (args.out_sync.handle)
		sync_signal(&args.out_sync);
	for (k = 0; k < n; k++) {
		expect = vm_op_expect(&ops[k], &room);
		if (k < args.count) {
			vm_ops_done++;
			vm_protects_done += ops[k].op == DRM_PAGODA_VM_OP_PROTECT;
			if (!expect && vm_op_apply(&ops[k]))
				continue;
			report_op(i, expect ? "ran" : "ran, VA outside the range or over a reservation",
				  &ops[k], k, n, args.count, 0, expect);
			resync = 1;
			return 0;
		}
		/* ops[k] stopped the batch */
		if (got && got == expect)
			return 1;
		if (got && !expect && room && (got == ENOSPC || got == ENOMEM)) {
			/* a PROTECT maps its mappings' parts one by one: some may have changed */
			if (ops[k].op == DRM_PAGODA_VM_OP_PROTECT || ops[k].op == DRM_PAGODA_VM_OP_COPY)
				resync = 1;
			return 1;
		}
		report_op(i, "stopped", &ops[k], k, n, args.count, got, expect);
		resync = 1;
		return 0;
	}
	if (!got && args.count == n)
		return 1;
	pt_fail("call %lu: VM_BIND of %u operations: %s, %u done (want 0 and all done)", i, n,
		strerror(got), args.count);
	resync = 1;
	return 0;
}

/* ---- contexts ---- */

/*
 * DRM_IOCTL_PAGODA_CTX_CREATE: EINVAL for flags, a pad or a priority past
 * DRM_PAGODA_PRIORITY_HIGH, else a new id: none in use, and never 0 (the
 * driver allocates them from 1, XA_FLAGS_ALLOC1). The read-only argument
 * is not tried: the context would be made before the copy back failed,
 * and its id never known.
 */
static int fuzz_ctx_create(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_ctx_create args;
	void *bad;
	int want, got;

	if (nctx == MAX_CTX && !ctx_destroy(fd, rnd_below(nctx), i))
		return 0;
	args.priority = rnd_below(4) ? rnd_below(3) : (uint32_t)rnd_value();
	args.flags = rnd_below(8) ? 0 : rnd_value();
	args.adapter = rnd_below(4) ? 0 : rnd_below(2) ? rnd_below(num_adapters + 1) : rnd_value();
	args.ctx_id = rnd();
	want = args.flags || args.adapter >= num_adapters ||
	       args.priority > DRM_PAGODA_PRIORITY_HIGH ? EINVAL : 0;
	if (!rnd_below(16)) {
		do
			bad = bad_pointer(readonly);
		while (bad == readonly);
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_CREATE, bad);
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_CREATE, &args);
	}
	count_pagoda(DRM_PAGODA_CTX_CREATE, got);
	if (got == want && !got && args.ctx_id && ctx_index(args.ctx_id) < 0) {
		ctx_id[nctx] = args.ctx_id;
		ctx_adapter[nctx] = args.adapter;
		ctx_banned[nctx++] = 0;
		return 1;
	}
	if (got == want && got)
		return 1;
	pt_fail("call %lu: CTX_CREATE priority %u flags 0x%x adapter %u: %s (want %s), id %u%s", i,
		args.priority, args.flags, args.adapter, strerror(got), strerror(want), args.ctx_id,
		got || got != want ? "" : args.ctx_id ? " (in use)" : " (ids start at 1)");
	if (!got)
		resync = 1;
	return 0;
}

/*
 * DRM_IOCTL_PAGODA_CTX_DESTROY: EINVAL for a pad, ENOENT for an id not in
 * use (read-only memory names context 0, which never is).
 */
static int fuzz_ctx_destroy(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_ctx_destroy args;
	void *arg = &args;
	int want, got, k;

	args.ctx_id = rnd_ctx_id();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	if (!rnd_below(16)) {
		arg = bad_pointer(readonly);
		if (arg == readonly)
			memset(&args, 0, sizeof(args));
	}
	k = ctx_index(args.ctx_id);
	want = arg != &args && arg != readonly ? EFAULT : args.pad ? EINVAL : k < 0 ? ENOENT : 0;
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_DESTROY, arg);
	count_pagoda(DRM_PAGODA_CTX_DESTROY, got);
	if (got == want) {
		if (!got)
			ctx_forget(k);
		return 1;
	}
	pt_fail("call %lu: CTX_DESTROY id %u pad 0x%x: %s (want %s)", i, args.ctx_id, args.pad,
		strerror(got), strerror(want));
	resync = 1;
	return 0;
}

/*
 * The answer of CTX_QUERY for a context banned or not (every job of it is
 * done). No job of the fuzzer hangs the engine: no reset ever stopped one
 * (no RESET_GUILTY or RESET_INNOCENT, resets 0).
 */
static int ctx_query_right(const struct drm_pagoda_ctx_query *q, int banned)
{
	if (q->status & ~(DRM_PAGODA_CTX_BANNED | DRM_PAGODA_CTX_FAULTED) ||
	    !(q->status & DRM_PAGODA_CTX_BANNED) != !banned || q->resets)
		return 0;
	if (q->status & DRM_PAGODA_CTX_FAULTED)
		return q->fault_code != 0;
	return !q->fault_va && !q->fault_code && !q->fault_access && !q->fault_level;
}

/*
 * DRM_IOCTL_PAGODA_CTX_QUERY: EINVAL for a pad, ENOENT for an unknown id;
 * else whether the context is banned, as the fuzzer knows it.
 */
static int fuzz_ctx_query(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_ctx_query args;
	int want, got, k;

	args.ctx_id = rnd_ctx_id();
	args.status = rnd();
	args.fault_va = rnd();
	args.fault_code = rnd();
	args.fault_access = rnd();
	args.fault_level = rnd();
	args.resets = rnd();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	k = ctx_index(args.ctx_id);
	want = args.pad ? EINVAL : k < 0 ? ENOENT : 0;
	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_QUERY, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_QUERY, &args);
	}
	count_pagoda(DRM_PAGODA_CTX_QUERY, got);
	if (got == want && (got || ctx_query_right(&args, ctx_banned[k])))
		return 1;
	pt_fail("call %lu: CTX_QUERY id %u pad 0x%x: %s (want %s), status 0x%x (want %s) fault va 0x%llx code %u access %u level %u resets %llu",
		i, args.ctx_id, args.pad, strerror(got), strerror(want), args.status,
		k >= 0 && ctx_banned[k] ? "banned" : "not banned", (unsigned long long)args.fault_va,
		args.fault_code, args.fault_access, args.fault_level,
		(unsigned long long)args.resets);
	resync = 1;
	return 0;
}

/* ---- DRM_IOCTL_PAGODA_SUBMIT ---- */

#define JOB_TIMEOUT_NS	(30ll * 1000 * 1000 * 1000)

/* Jobs submitted and waited for; those of them that got their context banned. */
static unsigned long jobs, jobs_banned;

/*
 * Wait until every job of context @k is done, with a job of NOPs behind
 * them, then learn from CTX_QUERY whether it is banned: only when
 * @may_fault (an earlier job ran something else than NOPs).
 */
static int settle(int fd, unsigned int k, int may_fault, unsigned long i)
{
	struct drm_pagoda_sync done = { .handle = sync_handle[NSYNC - 1] };
	struct drm_pagoda_submit job = {
		.ctx_id = ctx_id[k],
		.cmd_va = nop_va,
		.cmd_size = 4,
		.out_count = 1,
		.out_syncs = (uintptr_t)&done,
	};
	struct drm_pagoda_ctx_query q = { .ctx_id = ctx_id[k] };
	struct pagoda_dev dev = { .fd = fd };
	int got;

	got = do_ioctl(fd, DRM_IOCTL_PAGODA_SUBMIT, &job);
	if (!got) {
		sync_signal(&done);
		got = -pagoda_syncobj_wait(&dev, done.handle, 0, JOB_TIMEOUT_NS);
		if (!must(got, i, "waiting for the jobs of a context"))
			return 0;
	} else if (got != ECANCELED || !may_fault) {
		pt_fail("call %lu: SUBMIT of a job of NOPs on context %u: %s (want %s)", i, ctx_id[k],
			strerror(got), strerror(may_fault ? ECANCELED : 0));
		resync = 1;
		return 0;
	}
	if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_QUERY, &q), i, "CTX_QUERY of a context"))
		return 0;
	jobs++;
	jobs_banned += q.status & DRM_PAGODA_CTX_BANNED ? 1 : 0;
	ctx_banned[k] = !!(q.status & DRM_PAGODA_CTX_BANNED);
	if (ctx_query_right(&q, may_fault ? ctx_banned[k] : 0))
		return 1;
	pt_fail("call %lu: context %u after jobs of %s: status 0x%x fault va 0x%llx code %u access %u level %u resets %llu",
		i, ctx_id[k], may_fault ? "anything" : "NOPs only", q.status,
		(unsigned long long)q.fault_va, q.fault_code, q.fault_access, q.fault_level,
		(unsigned long long)q.resets);
	resync = 1;
	return 0;
}

/*
 * What pagoda_copy_syncs() answers for @count syncobjs at @user (the
 * read-only buffer reads as zeros): EINVAL for too many or for flags,
 * EFAULT when they cannot be read. *@syncs is what the driver reads.
 */
static int syncs_copy_result(uint64_t user, uint32_t count, void *readonly,
			     const struct drm_pagoda_sync **syncs)
{
	static const struct drm_pagoda_sync zero[DRM_PAGODA_SUBMIT_MAX_SYNCS];
	uint32_t k;

	if (count > DRM_PAGODA_SUBMIT_MAX_SYNCS)
		return EINVAL;
	if (!count)
		return 0;
	if (user == (uintptr_t)readonly)
		*syncs = zero;
	else if (user != (uintptr_t)*syncs)
		return EFAULT;
	for (k = 0; k < count; k++)
		if ((*syncs)[k].flags)
			return EINVAL;
	return 0;
}

/*
 * DRM_IOCTL_PAGODA_SUBMIT, in the driver's order: EINVAL for flags, a pad
 * or a bad command buffer size or alignment (pagoda_submit_check); ENOENT
 * for an unknown context; ECANCELED when it is banned; EINVAL for too
 * many syncobjs or sync flags, EFAULT for unreadable ones; per in-fence
 * ENOENT for an unknown syncobj or EINVAL when it has no fence at the
 * point; ENOENT for an unknown out-syncobj; ENOENT when the buffer is not
 * mapped throughout, EACCES when a page of it is mapped no-execute or to
 * zero pages. A job that succeeds is waited for (settle()).
 */
static int fuzz_submit(int fd, void *readonly, unsigned long i)
{
	static const uint32_t sizes[] = {
		0, 1, 2, 3, 4, 5, 8, 4092, 4096, 4100, DRM_PAGODA_SUBMIT_MAX_SIZE - 4,
		DRM_PAGODA_SUBMIT_MAX_SIZE, DRM_PAGODA_SUBMIT_MAX_SIZE + 4, ~0u - 3, ~0u,
	};
	static struct drm_pagoda_sync in[DRM_PAGODA_SUBMIT_MAX_SYNCS], out[DRM_PAGODA_SUBMIT_MAX_SYNCS];
	const struct drm_pagoda_sync *in_read = in, *out_read = out;
	struct drm_pagoda_submit args = { 0 };
	uint32_t k, off;
	int want, got, c, nops = 0;

	/* a context and a buffer of NOPs to run, made before anything is submitted */
	if (!nctx) {
		struct drm_pagoda_ctx_create create = { .priority = DRM_PAGODA_PRIORITY_NORMAL };

		if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_CREATE, &create), i, "CTX_CREATE"))
			return 0;
		ctx_id[0] = create.ctx_id;
		ctx_adapter[0] = 0;
		ctx_banned[nctx++] = 0;
	}
	if (!nop_setup(fd, i))
		return 0;

	args.ctx_id = rnd_ctx_id();
	args.flags = rnd_below(16) ? 0 : rnd_value();
	args.pad = rnd_below(16) ? 0 : rnd_value();
	if (rnd_below(2)) {	/* in the NOPs, or one past them */
		off = 4 * rnd_below(NOP_SIZE / 4);
		args.cmd_va = nop_va + off;
		args.cmd_size = rnd_below(2) ? 4 * (1 + rnd_below(16)) : NOP_SIZE - off;
		if (args.cmd_size > NOP_SIZE - off)
			args.cmd_size = NOP_SIZE - off;
		if (!rnd_below(8))
			args.cmd_size += 4;
	} else if (nmaps && rnd_below(2)) {
		/* in a mapping, often of NOPs: protected no-execute or zero, EACCES, else it runs */
		unsigned int m = rnd_below(nmaps), n = rnd_below(2) ? nmaps : 0;

		while (n-- && maps[m].kind != MAP_NOP)
			m = (m + 1) % nmaps;
		off = 4 * rnd_below(maps[m].size / 4);
		args.cmd_va = maps[m].va + off;
		args.cmd_size = rnd_below(2) ? 4 * (1 + rnd_below(16)) : maps[m].size - off;
	} else {
		args.cmd_va = rnd_below(2) ? rnd_va() + 4 * rnd_below(4) : rnd_value();
		args.cmd_size = rnd_below(2) ? sizes[rnd_below(ARRAY_SIZE(sizes))] :
					       4 * (1 + rnd_below(1024));
	}
	args.in_count = rnd_sync_count();
	args.out_count = rnd_sync_count();
	rnd_syncs(in, out, 4);
	args.in_syncs = rnd_below(16) ? (uintptr_t)in : (uintptr_t)bad_pointer(readonly);
	args.out_syncs = rnd_below(16) ? (uintptr_t)out : (uintptr_t)bad_pointer(readonly);

	c = ctx_index(args.ctx_id);
	if (args.flags || args.pad || args.cmd_size < 4 || args.cmd_size > DRM_PAGODA_SUBMIT_MAX_SIZE ||
	    args.cmd_size % 4 || args.cmd_va % 4 || args.cmd_va > UINT64_MAX - args.cmd_size)
		want = EINVAL;
	else if (c < 0)
		want = ENOENT;
	else if (ctx_banned[c])
		want = ECANCELED;
	else
		want = syncs_copy_result(args.in_syncs, args.in_count, readonly, &in_read);
	if (!want && c >= 0)
		want = syncs_copy_result(args.out_syncs, args.out_count, readonly, &out_read);
	for (k = 0; !want && c >= 0 && k < args.in_count; k++)
		want = sync_wait_result(&in_read[k]);
	for (k = 0; !want && c >= 0 && k < args.out_count; k++)
		want = sync_index(out_read[k].handle) < 0 ? ENOENT : 0;
	if (!want)
		want = maps_walk(args.cmd_va, args.cmd_size, 1, &nops);

	if (!rnd_below(32)) {
		void *arg = bad_pointer(readonly);

		/* read-only memory holds a submission of 0 bytes */
		want = arg == readonly ? EINVAL : EFAULT;
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_SUBMIT, arg);
		count_pagoda(DRM_PAGODA_SUBMIT, got);
		if (got == want)
			return 1;
		pt_fail("call %lu: SUBMIT with a bad argument pointer: %s (want %s)", i,
			strerror(got), strerror(want));
		return 0;
	}
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_SUBMIT, &args);
	count_pagoda(DRM_PAGODA_SUBMIT, got);
	if (got == want) {
		if (got)
			return 1;
		for (k = 0; k < args.out_count; k++)
			sync_signal(&out[k]);
		return settle(fd, c, !nops, i);
	}
	pt_fail("call %lu: SUBMIT ctx %u flags 0x%x pad 0x%x va 0x%llx size 0x%x in %u at %s out %u at %s: %s (want %s)",
		i, args.ctx_id, args.flags, args.pad, (unsigned long long)args.cmd_va, args.cmd_size,
		args.in_count, args.in_syncs == (uintptr_t)in ? "the syncs" : "a bad pointer",
		args.out_count, args.out_syncs == (uintptr_t)out ? "the syncs" : "a bad pointer",
		strerror(got), strerror(want));
	if (!got && c >= 0)
		settle(fd, c, 1, i);
	resync = 1;
	return 0;
}

/* ---- DRM_IOCTL_PAGODA_SUBMIT_PHYS ---- */

/*
 * Physically accessed allocations the fuzzer keeps for its DMA buffers,
 * among live[] (so that every handle of the file is one live[] knows): at
 * least PHYS_POOL of at most PHYS_BO_MAX bytes, which any number of buffers
 * fit at once. The handle of a larger one only comes from a stale entry.
 */
#define PHYS_POOL	3
#define PHYS_BO_MAX	(1u << 20)
/* Most entries of a generated allocation list, the NULL one included. */
#define PHYS_LIST	5
/* Where buffers are built; a cmd_size past it points at phys_zeros. */
#define PHYS_CMD_BYTES	(16u << 10)

static uint32_t phys_cmds[PHYS_CMD_BYTES / 4];
static struct drm_pagoda_phys_alloc phys_allocs[DRM_PAGODA_PHYS_MAX_ALLOCS + 1];
static struct drm_pagoda_phys_patch phys_patches[DRM_PAGODA_PHYS_MAX_PATCHES + 1];
/* live[] index of each entry of phys_allocs a buffer is built with (-1: NULL) */
static int phys_live[DRM_PAGODA_PHYS_MAX_ALLOCS + 1];
/*
 * DRM_PAGODA_SUBMIT_MAX_SIZE read-only bytes of zeros: a "bad" pointer the
 * driver reads (as a buffer, zero headers: a command of 0 dwords; as lists,
 * NULL allocations and entries naming entry 0) at any size it takes. The
 * read-only memory bad_pointer() may give holds 16 KiB, less than a list.
 */
static const uint8_t *phys_zeros;

/* Buffers that ran (and were waited for), and those of them split in portions. */
static unsigned long phys_jobs, phys_split_jobs;
/* The results of SUBMIT_PHYS with a readable argument, by errno. */
static struct outcome phys_outcome;

static int phys_small(unsigned int k)
{
	return live_flags[k] & DRM_PAGODA_BO_PHYSICAL && live_size[k] <= PHYS_BO_MAX &&
	       !live_adapter[k];
}

/* Close live[k]; its residency goes with the handle. */
static void live_drop(int fd, unsigned int k)
{
	close_handle(fd, live[k]);
	nlive--;
	live[k] = live[nlive];
	live_size[k] = live_size[nlive];
	live_flags[k] = live_flags[nlive];
	live_adapter[k] = live_adapter[nlive];
	live_page[k] = live_page[nlive];
	live_segs[k] = live_segs[nlive];
	resident[k] = resident[nlive];
}

/*
 * Top the pool up: small allocations created DRM_PAGODA_BO_PHYSICAL in
 * VRAM, hidden VRAM or system memory (the aperture), each a place the
 * render engine reaches physically. No room is no failure: the buffers
 * then use what there is.
 */
static int phys_pool(int fd, unsigned long i)
{
	static const uint32_t segments[] = {
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN) |
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
	};
	unsigned int k, n = 0;
	int got;

	for (k = 0; k < nlive; k++)
		n += phys_small(k);
	while (n < PHYS_POOL) {
		struct drm_pagoda_gem_create create = {
			.size = rnd_below(2) ? 64 << 10 : 4096 * (1 + rnd_below(64)),
			.flags = DRM_PAGODA_BO_PHYSICAL,
			.segments = segments[rnd_below(ARRAY_SIZE(segments))],
			.priority = rnd_below(3),
		};

		do
			create.preferred_segment = rnd_below(3);
		while (!(create.segments & DRM_PAGODA_SEGMENT_MASK(create.preferred_segment)));
		if (nlive == MAX_LIVE) {
			/* make room: any one but the pool's (there are fewer of those) */
			do
				k = rnd_below(nlive);
			while (phys_small(k));
			live_drop(fd, k);
		}
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, &create);
		if (got == ENOSPC || got == ENOMEM)
			return 1;
		if (!must(got, i, "GEM_CREATE of a physically accessed allocation"))
			return 0;
		resident[nlive] = 0;
		live_size[nlive] = create.size;
		live_flags[nlive] = create.flags;
		live_adapter[nlive] = 0;
		live_page[nlive] = page_of(create.segments);
		live_segs[nlive] = create.segments;
		live[nlive++] = create.handle;
		n++;
	}
	return 1;
}

/* A slot bound to a real allocation (writable with @write), or -1. */
static int phys_pick_slot(const struct pagoda_physbuf *pb, int write)
{
	unsigned int slot, n = 0;
	int pick = -1;

	for (slot = 0; slot < PAGODA_PHYS_SLOTS; slot++) {
		int e = pb->bound[slot];

		if (e < 0 || (write && !(phys_allocs[e].flags & DRM_PAGODA_PHYS_WRITE)))
			continue;
		if (!rnd_below(++n))
			pick = slot;
	}
	return pick;
}

static uint64_t phys_slot_size(const struct pagoda_physbuf *pb, int slot)
{
	return live_size[phys_live[pb->bound[slot]]];
}

/* An offset in an allocation of @size bytes with @need bytes after it (@need <= @size). */
static uint64_t phys_offset(uint64_t size, uint64_t need)
{
	uint64_t span = size - need;

	switch (rnd_below(4)) {
	case 0:
		return 0;
	case 1:
		return span;		/* right up to the end */
	case 2:
		return rnd_below(span + 1);
	default:
		return 4 * rnd_below(span / 4 + 1);
	}
}

/* Bytes a command touches, at most @room: none, a few, or all there is. */
static uint64_t phys_length(uint64_t room)
{
	switch (rnd_below(6)) {
	case 0:
		return 0;
	case 1:
		return room;
	case 2:
		return rnd_below(room + 1);
	default:
		return rnd_below((room < 256 ? room : 256) + 1);
	}
}

/*
 * One command on the slots bound: every access inside its allocation,
 * writes only to allocations listed DRM_PAGODA_PHYS_WRITE. WAIT_FENCE
 * waits for a value of 0, which any u64 is at least: it never blocks.
 */
static void phys_emit(struct pagoda_physbuf *pb)
{
	int rs = phys_pick_slot(pb, 0), ws = phys_pick_slot(pb, 1);
	uint64_t rsize = rs >= 0 ? phys_slot_size(pb, rs) : 0;
	uint64_t wsize = ws >= 0 ? phys_slot_size(pb, ws) : 0;
	uint64_t n, src, dst;
	uint32_t values[16], k, at;

	switch (rnd_below(8)) {
	case 0:
		if (ws < 0)
			break;
		n = phys_length(wsize);
		pagoda_phys_fill(pb, ws, phys_offset(wsize, n), n, rnd());
		return;
	case 1:
		if (ws < 0)
			break;
		n = rnd_below((wsize / 4 < 16 ? wsize / 4 : 16) + 1);
		for (k = 0; k < n; k++)
			values[k] = rnd();
		pagoda_phys_write_imm(pb, ws, phys_offset(wsize, 4 * n), values, n);
		return;
	case 2:
		if (rs < 0 || ws < 0)
			break;
		n = phys_length(rsize < wsize ? rsize : wsize);
		src = phys_offset(rsize, n);
		dst = phys_offset(wsize, n);
		pagoda_phys_copy(pb, rs, src, ws, dst, n);
		return;
	case 3:
		if (rs < 0 || ws < 0 || wsize < 4)
			break;
		n = phys_length(rsize);
		src = phys_offset(rsize, n);
		pagoda_phys_crc32(pb, rs, src, n, ws, phys_offset(wsize, 4));
		return;
	case 4:
		if (ws < 0 || wsize < 8)
			break;
		pagoda_phys_signal(pb, ws, phys_offset(wsize, 8), rnd());
		return;
	case 5:
		/* libpagoda has no physical WAIT_FENCE: its entry is written here */
		if (rs < 0 || rsize < 8 || pb->patch_count == pb->patch_capacity)
			break;
		at = pb->cb.used_bytes;
		pagoda_cmd_wait(&pb->cb, 0, 0);
		pb->patches[pb->patch_count++] = (struct drm_pagoda_phys_patch){
			.alloc_index = pb->bound[rs],
			.slot_id = rs,
			.alloc_offset = phys_offset(rsize, 8),
			.patch_offset = at + 8,
			.split_offset = pb->bound_at[rs],
		};
		return;
	}
	pagoda_cmd_nop(&pb->cb, 1 + rnd_below(8));
}

/*
 * A buffer the kernel must accept, on allocations of the pool (and now
 * and then none: NOPs only): up to PHYS_LIST entries in random order, one
 * of them now and then the NULL allocation, most listed for writing. One
 * to four split points; at each, slots (mostly a few low ones, so that
 * they are bound again) get an entry of the list or the NULL one, then
 * one to four commands follow, so every split offset is a command's start.
 * Returns the entries of the allocation list.
 */
static uint32_t phys_build(struct pagoda_physbuf *pb)
{
	int small[MAX_LIVE];
	unsigned int nsmall = 0, k, j, splits, binds, cmds;
	uint32_t na = 0, null_at = ~0u;
	uint64_t touched;

	for (k = 0; k < nlive; k++)
		if (phys_small(k))
			small[nsmall++] = k;
	for (k = 0; k < nsmall; k++) {		/* shuffle */
		int t = small[k];

		j = k + rnd_below(nsmall - k);
		small[k] = small[j];
		small[j] = t;
	}
	k = rnd_below(8) ? 1 + rnd_below(nsmall < PHYS_LIST - 1 ? nsmall : PHYS_LIST - 1) : 0;
	if (k > nsmall)
		k = nsmall;
	if (k && !rnd_below(4))
		null_at = rnd_below(k + 1);
	for (j = 0; j < k || na == null_at; ) {
		if (na == null_at) {
			phys_allocs[na] = (struct drm_pagoda_phys_alloc){ 0, 0 };
			phys_live[na++] = -1;
			continue;
		}
		phys_allocs[na] = (struct drm_pagoda_phys_alloc){
			live[small[j]], rnd_below(4) ? DRM_PAGODA_PHYS_WRITE : 0,
		};
		phys_live[na++] = small[j++];
	}

	pagoda_physbuf_init(pb, phys_cmds, 4096, phys_patches, DRM_PAGODA_PHYS_MAX_PATCHES);
	splits = 1 + rnd_below(4);
	while (splits--) {
		pagoda_phys_split(pb);
		touched = 0;	/* slots given an entry at this split: one each */
		binds = na ? rnd_below(4) : 0;
		while (binds--) {
			uint32_t slot = rnd_below(4) ? rnd_below(4) : rnd_below(PAGODA_PHYS_SLOTS);
			uint32_t e = rnd_below(na);

			if (touched & 1ull << slot)
				continue;
			touched |= 1ull << slot;
			pagoda_phys_bind(pb, slot, e, phys_live[e] < 0);
		}
		cmds = 1 + rnd_below(4);
		while (cmds--)
			phys_emit(pb);
	}
	return na;
}

/* The start and length of a random command of the buffer as built ([0, @size) well formed). */
static uint32_t phys_pick_cmd(uint32_t size, uint32_t *dwords)
{
	uint32_t at = 0, pick = 0, n = 0, d;

	*dwords = 1;
	while (at < size) {
		d = phys_cmds[at / 4] >> 16;
		if (!rnd_below(++n)) {
			pick = at;
			*dwords = d;
		}
		at += 4 * d;
	}
	return pick;
}

/*
 * The parser takes WAIT_FENCE with any value, and the engine then waits
 * for it: a corruption that left a value (or made a command of one) would
 * hang the engine until the scheduler's timeout resets it. Every
 * WAIT_FENCE the engine could run waits for 0 again: the value is no
 * operand the parser looks at, so the answer does not change.
 */
static void phys_no_wait(uint32_t size)
{
	uint32_t at = 0, dwords;

	if (size > sizeof(phys_cmds))
		return;
	while (at < size) {
		dwords = PAGODA_CMD_DWORDS(phys_cmds[at / 4]);
		if (!dwords || dwords > (size - at) / 4)
			return;
		if (PAGODA_CMD_OP(phys_cmds[at / 4]) == PAGODA_CMD_WAIT_FENCE && dwords == 6)
			phys_cmds[at / 4 + 4] = phys_cmds[at / 4 + 5] = 0;
		at += 4 * dwords;
	}
}

/* A bad pointer for a list or the buffer: read-only memory reads as phys_zeros. */
static uint64_t phys_bad_pointer(void *readonly)
{
	void *p = bad_pointer(readonly);

	return p == readonly ? (uintptr_t)phys_zeros : (uintptr_t)p;
}

/*
 * Break (mostly) one rule of the buffer just built, or of its arguments:
 * what the driver makes of it is phys_expect()'s business, not this one's.
 */
static void phys_corrupt(struct drm_pagoda_submit_phys *a, void *readonly)
{
	static const uint32_t bad_sizes[] = {
		0, 1, 2, 3, 5, 6, 7, 4094, DRM_PAGODA_SUBMIT_MAX_SIZE + 1,
		DRM_PAGODA_SUBMIT_MAX_SIZE + 4, 0x80000000u, ~0u - 3, ~0u,
	};
	static const uint32_t bad_counts[] = {
		DRM_PAGODA_PHYS_MAX_ALLOCS + 1, DRM_PAGODA_PHYS_MAX_PATCHES + 1, 0x80000000u, ~0u,
	};
	uint32_t np = a->patch_count, na = a->alloc_count, at, dwords, k;
	struct drm_pagoda_phys_patch *p = &phys_patches[rnd_below(np ? np : 1)];
	struct drm_pagoda_phys_alloc *al = &phys_allocs[rnd_below(na ? na : 1)];
	uint64_t v;

	at = phys_pick_cmd(a->cmd_size, &dwords);
	switch (rnd_below(24)) {
	case 0:
		a->flags = 1u << rnd_below(32);
		break;
	case 1:		/* a size the arguments refuse, or one that cuts or runs on */
		switch (rnd_below(3)) {
		case 0:
			a->cmd_size = bad_sizes[rnd_below(ARRAY_SIZE(bad_sizes))];
			break;
		case 1:
			a->cmd_size = a->cmd_size > 4 ? a->cmd_size - 4 * (1 + rnd_below(4)) : 8;
			break;
		default:
			a->cmd_size += 4 * (1 + rnd_below(4));
			break;
		}
		if (a->cmd_size >= 4 && a->cmd_size <= DRM_PAGODA_SUBMIT_MAX_SIZE &&
		    !(a->cmd_size % 4) && a->cmd_size > sizeof(phys_cmds))
			a->cmds = (uintptr_t)phys_zeros;
		break;
	case 2:
		/*
		 * A buffer of zeros (a command of 0 dwords), or the largest
		 * size from where nothing is to be read. Copying 16 MiB takes
		 * the guest about a second: that is rare.
		 */
		a->cmds = (uintptr_t)phys_zeros;
		a->cmd_size = 4 * (1 + rnd_below(1 << 14));
		if (!rnd_below(4)) {
			a->cmd_size = DRM_PAGODA_SUBMIT_MAX_SIZE - 4 * rnd_below(2);
			if (rnd_below(32))
				do
					a->cmds = phys_bad_pointer(readonly);
				while (a->cmds == (uintptr_t)phys_zeros);
		}
		break;
	case 3:		/* more entries than the list has: stale ones, or past the maximum */
		switch (rnd_below(4)) {
		case 0:
			a->alloc_count = bad_counts[rnd_below(ARRAY_SIZE(bad_counts))];
			break;
		case 1:
			a->alloc_count = DRM_PAGODA_PHYS_MAX_ALLOCS;
			break;
		case 2:
			a->alloc_count = na ? na - 1 : 1;
			break;
		default:
			a->alloc_count = na + 1 + rnd_below(4);
			break;
		}
		break;
	case 4:
		switch (rnd_below(4)) {
		case 0:
			a->patch_count = bad_counts[rnd_below(ARRAY_SIZE(bad_counts))];
			break;
		case 1:
			a->patch_count = DRM_PAGODA_PHYS_MAX_PATCHES;
			break;
		case 2:
			a->patch_count = np ? np - 1 : 1;
			break;
		default:
			a->patch_count = np + 1 + rnd_below(4);
			break;
		}
		break;
	case 5:		/* an entry left out: its operand is not patched */
		if (!np)
			break;
		memmove(p, p + 1, (np - (p - phys_patches) - 1) * sizeof(*p));
		a->patch_count--;
		break;
	case 6:		/* an entry twice: two patches of one operand */
		if (!np)
			break;
		memmove(p + 1, p, (np - (p - phys_patches)) * sizeof(*p));
		a->patch_count++;
		break;
	case 7:		/* an access past the allocation's end */
		k = p->alloc_index < na && phys_live[p->alloc_index] >= 0 ?
		    phys_live[p->alloc_index] : 0;
		p->alloc_offset = rnd_below(2) && nlive ? live_size[k] - rnd_below(8) : rnd_value();
		break;
	case 8:		/* a size operand past the allocation's end */
		k = PAGODA_CMD_OP(phys_cmds[at / 4]);
		v = rnd_below(2) ? PHYS_BO_MAX + rnd_below(8) : rnd_value();
		if (k == PAGODA_CMD_FILL32 || k == PAGODA_CMD_CRC32)
			memcpy((uint8_t *)phys_cmds + at + 16, &v, 8);
		else if (k == PAGODA_CMD_COPY)
			memcpy((uint8_t *)phys_cmds + at + 24, &v, 8);
		else if (k == PAGODA_CMD_WRITE_IMM)
			phys_cmds[at / 4 + 1] = v;	/* the count: no longer the length's */
		break;
	case 9:		/* a write to an allocation listed read-only, or unknown flags */
		if (rnd_below(2))
			al->flags &= ~DRM_PAGODA_PHYS_WRITE;
		else
			al->flags |= 1u << rnd_below(rnd_below(2) ? 4 : 32);
		break;
	case 10:	/* a slot past the table, or another one */
		p->slot_id = rnd_below(2) ? DRM_PAGODA_MAX_SLOT_ID + rnd_below(4) :
			     rnd_below(2) ? rnd_below(DRM_PAGODA_MAX_SLOT_ID) : (uint32_t)rnd_value();
		break;
	case 11:	/* split offsets out of order */
		if (np < 2)
			break;
		k = rnd_below(np - 1);
		if (rnd_below(2)) {
			struct drm_pagoda_phys_patch t = phys_patches[k];

			phys_patches[k] = phys_patches[np - 1];
			phys_patches[np - 1] = t;
		} else {
			phys_patches[k].split_offset = phys_patches[np - 1].split_offset + 4;
		}
		break;
	case 12:	/* a split offset inside a command, past the end, or a byte in a dword */
		switch (rnd_below(4)) {
		case 0:
			p->split_offset = at + 4 * rnd_below(dwords);
			break;
		case 1:
			p->split_offset = p->split_offset + 1 + rnd_below(3);
			break;
		case 2:
			p->split_offset = a->cmd_size + 4 * rnd_below(2);
			break;
		default:
			p->split_offset = rnd_value();
			break;
		}
		break;
	case 13:	/* a JUMP or CALL, which would run what the kernel did not parse */
		phys_cmds[at / 4] = PAGODA_CMD_HEADER(rnd_below(2) ? PAGODA_CMD_JUMP : PAGODA_CMD_CALL,
						      0, dwords);
		break;
	case 14:	/* a command of another engine or none, with flags, or of another length */
		switch (rnd_below(4)) {
		case 0:
			phys_cmds[at / 4] = PAGODA_CMD_HEADER(PAGODA_CMD_TRANSFER + rnd_below(11), 0, dwords);
			break;
		case 1:
			phys_cmds[at / 4] = PAGODA_CMD_HEADER(rnd_below(2) ? 3 + rnd_below(13) :
							      0x26 + rnd_below(0xda), 0, dwords);
			break;
		case 2:
			phys_cmds[at / 4] |= (1 + rnd_below(255)) << 8;
			break;
		default:
			k = rnd_below(2) ? dwords + 1 : rnd_below(2) ? dwords - 1 : rnd_below(0x10000);
			phys_cmds[at / 4] = (phys_cmds[at / 4] & 0xffff) | k << 16;
			break;
		}
		break;
	case 15:	/* a handle this file does not have */
		al->handle = rnd_below(2) ? (uint32_t)rnd_value() : al->handle + 1 + rnd_below(64);
		break;
	case 16:	/* an allocation not accessed physically (when there is one) */
		for (k = 0; k < nlive; k++)
			if (!(live_flags[k] & DRM_PAGODA_BO_PHYSICAL) && !rnd_below(2))
				al->handle = live[k];
		break;
	case 17:	/* an allocation listed twice */
		if (na > 1)
			al->handle = phys_allocs[rnd_below(na)].handle;
		break;
	case 18:	/* the NULL allocation where there are patches or flags, or patches of it */
		if (rnd_below(2))
			al->handle = 0;
		else if (rnd_below(2))
			p->patch_offset = 4 * rnd_below(a->cmd_size / 4);
		else
			p->alloc_offset = rnd_below(2) ? 1 : rnd_value();
		break;
	case 19:	/* lists or buffer where nothing (or zeros) is to be read */
		switch (rnd_below(3)) {
		case 0:
			a->cmds = phys_bad_pointer(readonly);
			break;
		case 1:
			a->allocs = phys_bad_pointer(readonly);
			break;
		default:
			a->patches = phys_bad_pointer(readonly);
			break;
		}
		break;
	case 20:	/* a patch offset off its operand: a byte, a dword, past the end */
		switch (rnd_below(4)) {
		case 0:
			p->patch_offset += 1 + rnd_below(3);
			break;
		case 1:
			p->patch_offset += rnd_below(2) ? 4 : -4;
			break;
		case 2:
			p->patch_offset = a->cmd_size + 4 * rnd_below(2);
			break;
		default:
			p->patch_offset = rnd_value();
			break;
		}
		break;
	case 21:	/* an entry naming another entry of the list, or none */
		p->alloc_index = rnd_below(2) ? rnd_below(na + 2) : (uint32_t)rnd_value();
		break;
	case 22:	/* any dword of the buffer */
		phys_cmds[rnd_below(a->cmd_size / 4 + 1)] = rnd_value();
		break;
	default:	/* any bits of an entry */
		((uint32_t *)p)[rnd_below(sizeof(*p) / 4)] ^= 1u << rnd_below(32);
		break;
	}
}

/*
 * What the driver reads from @user (@bytes of it): @mine, the zeros, or
 * NULL when the copy faults. The fuzzer never passes its own arrays with
 * more bytes than they hold.
 */
static const void *phys_read(uint64_t user, uint64_t bytes, const void *mine, size_t mine_bytes)
{
	if (user == (uintptr_t)mine && bytes <= mine_bytes)
		return mine;
	if (user == (uintptr_t)phys_zeros && bytes <= DRM_PAGODA_SUBMIT_MAX_SIZE)
		return phys_zeros;
	return NULL;
}

/* pagoda_phys_check_lists(): EINVAL for an entry no buffer makes right. */
static int phys_check_lists(uint32_t cmd_size, const struct drm_pagoda_phys_alloc *al, uint32_t na,
			    const struct drm_pagoda_phys_patch *pl, uint32_t np)
{
	uint32_t k, j;

	for (k = 0; k < na; k++) {
		/* the NULL allocation is not written (the UAPI does not say so) */
		if (al[k].flags & ~DRM_PAGODA_PHYS_WRITE || (!al[k].handle && al[k].flags))
			return EINVAL;
		for (j = 0; j < k; j++)
			if (al[k].handle && al[k].handle == al[j].handle)
				return EINVAL;
	}
	for (k = 0; k < np; k++) {
		const struct drm_pagoda_phys_patch *p = &pl[k];

		if (p->alloc_index >= na || p->slot_id >= DRM_PAGODA_MAX_SLOT_ID)
			return EINVAL;
		/* an entry of the NULL allocation patches nothing: offsets 0 (alloc_offset too) */
		if (!al[p->alloc_index].handle ? p->patch_offset || p->alloc_offset :
		    p->patch_offset % 4 || p->patch_offset >= cmd_size)
			return EINVAL;
	}
	return 0;
}

/* An address operand of the buffer (pagoda_parse.c). */
struct phys_operand {
	uint32_t offset;
	int write;
	uint64_t bytes;
};

static uint64_t phys_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t phys_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The parser's rules (the DOC block of pagoda_parse.c and the UAPI), on
 * lists that passed phys_check_lists(); @size: the bytes of each entry's
 * allocation (0 for the NULL one). 0 or EINVAL.
 */
static int phys_parse(const uint8_t *buf, uint32_t cmd_size,
		      const struct drm_pagoda_phys_alloc *al, const struct drm_pagoda_phys_patch *pl,
		      uint32_t np, const uint64_t *size)
{
	static struct phys_operand ops[DRM_PAGODA_PHYS_MAX_PATCHES + 1];
	static uint64_t starts[DRM_PAGODA_SUBMIT_MAX_SIZE / 4 / 64];
	uint32_t at = 0, n = 0, patched = 0, k, j, slot;

	for (k = 0; k < np; k++)
		patched += al[pl[k].alloc_index].handle != 0;
	memset(starts, 0, (cmd_size / 4 + 63) / 64 * sizeof(starts[0]));

	/* commands: data operands only, no flags, their opcode's length, inside the buffer */
	while (at < cmd_size) {
		uint32_t header = phys_u32(buf + at), dwords = PAGODA_CMD_DWORDS(header);
		const uint8_t *cmd = buf + at;
		struct phys_operand found[2];
		unsigned int nf = 0, f;

		if (!dwords || dwords > (cmd_size - at) / 4 || PAGODA_CMD_FLAGS(header))
			return EINVAL;
		switch (PAGODA_CMD_OP(header)) {
		case PAGODA_CMD_NOP:
			break;
		case PAGODA_CMD_SIGNAL_FENCE:
		case PAGODA_CMD_WAIT_FENCE:
			if (dwords != 6)
				return EINVAL;
			found[nf++] = (struct phys_operand){
				at + 8, PAGODA_CMD_OP(header) == PAGODA_CMD_SIGNAL_FENCE, 8 };
			break;
		case PAGODA_CMD_COPY:
			if (dwords != 8)
				return EINVAL;
			found[nf++] = (struct phys_operand){ at + 8, 0, phys_u64(cmd + 24) };
			found[nf++] = (struct phys_operand){ at + 16, 1, phys_u64(cmd + 24) };
			break;
		case PAGODA_CMD_FILL32:
			if (dwords != 6)
				return EINVAL;
			found[nf++] = (struct phys_operand){ at + 8, 1, phys_u64(cmd + 16) };
			break;
		case PAGODA_CMD_WRITE_IMM:
			if (dwords < 4 || dwords - 4 != phys_u32(cmd + 4))
				return EINVAL;
			found[nf++] = (struct phys_operand){ at + 8, 1, 4ull * (dwords - 4) };
			break;
		case PAGODA_CMD_CRC32:
			if (dwords != 8)
				return EINVAL;
			found[nf++] = (struct phys_operand){ at + 8, 0, phys_u64(cmd + 16) };
			found[nf++] = (struct phys_operand){ at + 24, 1, 4 };
			break;
		default:	/* JUMP, CALL, the paging engine's, unknown */
			return EINVAL;
		}
		for (f = 0; f < nf; f++) {
			if (n == patched)
				return EINVAL;
			ops[n++] = found[f];
		}
		starts[at / 4 / 64] |= 1ull << (at / 4 % 64);
		at += 4 * dwords;
	}

	/* each operand the patch offset of exactly one entry, and every entry an operand's */
	if (n != patched)
		return EINVAL;
	for (k = 0; k < n; k++) {
		const struct drm_pagoda_phys_patch *p = NULL;
		uint64_t end;

		for (j = 0; j < np; j++) {
			if (!al[pl[j].alloc_index].handle || pl[j].patch_offset != ops[k].offset)
				continue;
			if (p)
				return EINVAL;
			p = &pl[j];
		}
		if (!p)
			return EINVAL;
		end = p->alloc_offset + ops[k].bytes;
		if (end < p->alloc_offset || end > size[p->alloc_index])
			return EINVAL;
		if (ops[k].write && !(al[p->alloc_index].flags & DRM_PAGODA_PHYS_WRITE))
			return EINVAL;
	}

	/* Split offsets: non-decreasing, inside the buffer, a command's start. */
	for (k = 0; k < np; k++) {
		uint32_t split = pl[k].split_offset;

		if ((k && split < pl[k - 1].split_offset) || split >= cmd_size || split % 4 ||
		    !(starts[split / 4 / 64] & 1ull << (split / 4 % 64)))
			return EINVAL;
	}
	/*
	 * Per slot, its entries in list order: those of one split offset name
	 * one allocation, which the slot holds from there to the slot's next
	 * greater split offset; a patch lies in that range.
	 */
	for (slot = 0; slot < DRM_PAGODA_MAX_SLOT_ID; slot++) {
		for (k = 0; k < np; k++) {
			uint64_t end = ~0ull;

			if (pl[k].slot_id != slot)
				continue;
			for (j = k + 1; j < np; j++) {
				if (pl[j].slot_id != slot)
					continue;
				if (pl[j].split_offset == pl[k].split_offset &&
				    pl[j].alloc_index != pl[k].alloc_index)
					return EINVAL;
				if (pl[j].split_offset > pl[k].split_offset) {
					end = pl[j].split_offset;
					break;
				}
			}
			if (al[pl[k].alloc_index].handle &&
			    (pl[k].patch_offset < pl[k].split_offset || pl[k].patch_offset >= end))
				return EINVAL;
		}
	}
	return 0;
}

/*
 * What DRM_IOCTL_PAGODA_SUBMIT_PHYS answers, in the driver's order: EINVAL
 * for flags, a buffer size or list counts out of range; ENOENT for an
 * unknown context; the syncobjs as SUBMIT's (pagoda_submit_syncs_get():
 * EINVAL for too many or flags, EFAULT for unreadable ones; per
 * in-syncobj ENOENT for an unknown one or EINVAL when it has no fence at
 * the point; ENOENT for an unknown out-syncobj); EFAULT for a buffer or
 * list that cannot be read; EINVAL for entries no buffer makes right
 * (pagoda_phys_check_lists); per allocation, ENOENT for an unknown handle
 * and EINVAL for one not created physically accessed; EINVAL from the
 * parser; only then ECANCELED for a banned context. Then the allocations
 * are paged in (*@ran: ENOSPC or ENOMEM when they find no room). *@in and
 * *@out are what the driver read of the syncobj arrays.
 */
static int phys_expect(const struct drm_pagoda_submit_phys *a, void *readonly,
		       const struct drm_pagoda_sync **in, const struct drm_pagoda_sync **out,
		       int *ran)
{
	static uint64_t size[DRM_PAGODA_PHYS_MAX_ALLOCS];
	const struct drm_pagoda_phys_alloc *al;
	const struct drm_pagoda_phys_patch *pl;
	const uint8_t *cmds;
	int c = ctx_index(a->ctx_id), ret, idx;
	uint32_t k;

	*ran = 0;
	if (a->flags || a->cmd_size < 4 || a->cmd_size > DRM_PAGODA_SUBMIT_MAX_SIZE || a->cmd_size % 4 ||
	    a->alloc_count > DRM_PAGODA_PHYS_MAX_ALLOCS || a->patch_count > DRM_PAGODA_PHYS_MAX_PATCHES)
		return EINVAL;
	if (c < 0)
		return ENOENT;
	ret = syncs_copy_result(a->in_syncs, a->in_count, readonly, in);
	if (!ret)
		ret = syncs_copy_result(a->out_syncs, a->out_count, readonly, out);
	for (k = 0; !ret && k < a->in_count; k++)
		ret = sync_wait_result(&(*in)[k]);
	for (k = 0; !ret && k < a->out_count; k++)
		ret = sync_index((*out)[k].handle) < 0 ? ENOENT : 0;
	if (ret)
		return ret;

	cmds = phys_read(a->cmds, a->cmd_size, phys_cmds, sizeof(phys_cmds));
	al = phys_read(a->allocs, (uint64_t)a->alloc_count * sizeof(*al), phys_allocs,
		       sizeof(phys_allocs));
	pl = phys_read(a->patches, (uint64_t)a->patch_count * sizeof(*pl), phys_patches,
		       sizeof(phys_patches));
	/* copying nothing never faults */
	if (!cmds || (a->alloc_count && !al) || (a->patch_count && !pl))
		return EFAULT;
	ret = phys_check_lists(a->cmd_size, al, a->alloc_count, pl, a->patch_count);
	if (ret)
		return ret;
	for (k = 0; k < a->alloc_count; k++) {
		size[k] = 0;
		if (!al[k].handle)
			continue;
		idx = live_index(al[k].handle);
		if (idx < 0)
			return ENOENT;
		/* physically accessed, and of the GPU the context runs on */
		if (!(live_flags[idx] & DRM_PAGODA_BO_PHYSICAL) || live_adapter[idx] != ctx_adapter[c])
			return EINVAL;
		size[k] = live_size[idx];
	}
	ret = phys_parse(cmds, a->cmd_size, al, pl, a->patch_count, size);
	if (ret)
		return ret;
	if (ctx_banned[c])
		return ECANCELED;
	/* the pool's allocations fit many times over: never "needs more than all the memory" */
	*ran = 1;
	return 0;
}

/* The lists of a submission the model got wrong, for the log. */
static void phys_dump(const struct drm_pagoda_submit_phys *a)
{
	uint32_t k, n;

	if (a->allocs == (uintptr_t)phys_allocs)
		for (k = 0, n = a->alloc_count; k < n && k < 8; k++)
			printf("  alloc %u: handle %u flags 0x%x (live %d, size 0x%llx, flags 0x%x)\n",
			       k, phys_allocs[k].handle, phys_allocs[k].flags,
			       live_index(phys_allocs[k].handle),
			       live_index(phys_allocs[k].handle) < 0 ? 0ull :
			       (unsigned long long)live_size[live_index(phys_allocs[k].handle)],
			       live_index(phys_allocs[k].handle) < 0 ? 0 :
			       live_flags[live_index(phys_allocs[k].handle)]);
	if (a->patches == (uintptr_t)phys_patches)
		for (k = 0, n = a->patch_count; k < n && k < 24; k++)
			printf("  patch %u: alloc %u slot %u alloc_offset 0x%llx patch_offset %u split_offset %u\n",
			       k, phys_patches[k].alloc_index, phys_patches[k].slot_id,
			       (unsigned long long)phys_patches[k].alloc_offset,
			       phys_patches[k].patch_offset, phys_patches[k].split_offset);
	if (a->cmds == (uintptr_t)phys_cmds)
		for (k = 0, n = a->cmd_size / 4; k < n && k < 96; k += 8)
			printf("  cmds +%u: %08x %08x %08x %08x %08x %08x %08x %08x\n", 4 * k,
			       phys_cmds[k], phys_cmds[k + 1], phys_cmds[k + 2], phys_cmds[k + 3],
			       phys_cmds[k + 4], phys_cmds[k + 5], phys_cmds[k + 6], phys_cmds[k + 7]);
}

/*
 * A buffer ran: wait for it through its last out-syncobj (which now holds
 * its fence: a point added, or replaced), else for every job of the
 * context (settle()); a buffer the parser passed must not have banned it.
 */
static int phys_settle(int fd, unsigned int c, const struct drm_pagoda_sync *out, uint32_t n,
		       unsigned long i)
{
	struct drm_pagoda_ctx_query q = { .ctx_id = ctx_id[c] };
	struct pagoda_dev dev = { .fd = fd };

	if (!n)
		return nop_setup(fd, i) && settle(fd, c, 0, i);
	if (!must(-pagoda_syncobj_wait(&dev, out[n - 1].handle, out[n - 1].point, JOB_TIMEOUT_NS),
		  i, "waiting for the out-syncobj of a physical-mode buffer") ||
	    !must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_QUERY, &q), i, "CTX_QUERY of a context"))
		return 0;
	ctx_banned[c] = !!(q.status & DRM_PAGODA_CTX_BANNED);
	if (ctx_query_right(&q, 0))
		return 1;
	pt_fail("call %lu: context %u after a physical-mode buffer the parser accepted: status 0x%x fault va 0x%llx code %u access %u level %u resets %llu",
		i, ctx_id[c], q.status, (unsigned long long)q.fault_va, q.fault_code,
		q.fault_access, q.fault_level, (unsigned long long)q.resets);
	resync = 1;
	return 0;
}

/*
 * DRM_IOCTL_PAGODA_SUBMIT_PHYS: buffers phys_build() makes on the pool,
 * often with one rule broken (phys_corrupt()), on a context and syncobjs
 * chosen as SUBMIT's, each result exactly phys_expect()'s. A buffer that
 * runs is waited for and must not ban its context; portions tells how
 * many jobs it took: 1 unless the allocations did not fit at once. Where
 * the allocations find no room (ENOSPC, ENOMEM) a buffer that was split
 * may have run in part and banned its context: the model asks CTX_QUERY.
 */
static int fuzz_submit_phys(int fd, void *readonly, unsigned long i)
{
	static struct drm_pagoda_sync in[DRM_PAGODA_SUBMIT_MAX_SYNCS], out[DRM_PAGODA_SUBMIT_MAX_SYNCS];
	const struct drm_pagoda_sync *in_read = in, *out_read = out;
	struct drm_pagoda_submit_phys args = { 0 };
	struct pagoda_physbuf pb;
	uint32_t k;
	int want, got, c, ran;

	if (!nctx) {
		struct drm_pagoda_ctx_create create = { .priority = DRM_PAGODA_PRIORITY_NORMAL };

		if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_CREATE, &create), i, "CTX_CREATE"))
			return 0;
		ctx_id[0] = create.ctx_id;
		ctx_adapter[0] = 0;
		ctx_banned[nctx++] = 0;
	}
	if (!phys_pool(fd, i))
		return 0;

	args.alloc_count = phys_build(&pb);
	pagoda_physbuf_sort(&pb);
	args.ctx_id = nctx && rnd_below(8) ? ctx_id[rnd_below(nctx)] : rnd_ctx_id();
	args.cmds = (uintptr_t)phys_cmds;
	args.cmd_size = pb.cb.used_bytes;
	args.allocs = (uintptr_t)phys_allocs;
	args.patch_count = pb.patch_count;
	args.patches = (uintptr_t)phys_patches;
	args.in_count = rnd_sync_count();
	args.out_count = rnd_sync_count();
	rnd_syncs(in, out, 8);
	args.in_syncs = rnd_below(32) ? (uintptr_t)in : (uintptr_t)bad_pointer(readonly);
	args.out_syncs = rnd_below(32) ? (uintptr_t)out : (uintptr_t)bad_pointer(readonly);
	/* out only: a value the driver's answer cannot be */
	args.portions = 0x80000000u | rnd();
	/* three in four break a rule: the rest run, which takes the longest */
	if (rnd_below(4))
		phys_corrupt(&args, readonly);
	if (args.cmds == (uintptr_t)phys_cmds)
		phys_no_wait(args.cmd_size);
	want = phys_expect(&args, readonly, &in_read, &out_read, &ran);
	c = ctx_index(args.ctx_id);

	if (!rnd_below(32)) {
		/* DRM copies the argument back even on failure: read-only memory faults too */
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_SUBMIT_PHYS, bad_pointer(readonly));
		count_pagoda(DRM_PAGODA_SUBMIT_PHYS, got);
		if (got == EFAULT)
			return 1;
		pt_fail("call %lu: SUBMIT_PHYS with a bad argument pointer: %s (want %s)", i,
			strerror(got), strerror(EFAULT));
		resync = 1;
		return 0;
	}
	got = do_ioctl(fd, DRM_IOCTL_PAGODA_SUBMIT_PHYS, &args);
	count_pagoda(DRM_PAGODA_SUBMIT_PHYS, got);
	count(&phys_outcome, got);
	/* one portion per split offset at most */
	if (got == want && !got && args.portions >= 1 && args.portions <= args.patch_count + 1) {
		for (k = 0; k < args.out_count; k++)
			sync_signal(&out_read[k]);
		phys_jobs++;
		phys_split_jobs += args.portions > 1;
		if (phys_settle(fd, c, out_read, args.out_count, i))
			return 1;
		phys_dump(&args);
		return 0;
	}
	/*
	 * Once past the parser the driver reports the portions that ran: none
	 * on a banned context. Before, portions is not written.
	 */
	if (got == want && got && (want != ECANCELED || !args.portions))
		return 1;
	if (ran && (got == ENOSPC || got == ENOMEM)) {
		struct drm_pagoda_ctx_query q = { .ctx_id = ctx_id[c] };

		/* portions that ran before it found no room: the out-syncobjs have the last */
		if (args.portions)
			for (k = 0; k < args.out_count; k++)
				sync_signal(&out_read[k]);
		if (!must(do_ioctl(fd, DRM_IOCTL_PAGODA_CTX_QUERY, &q), i, "CTX_QUERY of a context"))
			return 0;
		ctx_banned[c] = !!(q.status & DRM_PAGODA_CTX_BANNED);
		return 1;
	}
	pt_fail("call %lu: SUBMIT_PHYS ctx %u flags 0x%x cmds %s size 0x%x allocs %u at %s patches %u at %s in %u at %s out %u at %s: %s (want %s), portions %u",
		i, args.ctx_id, args.flags,
		args.cmds == (uintptr_t)phys_cmds ? "the buffer" :
		args.cmds == (uintptr_t)phys_zeros ? "zeros" : "a bad pointer", args.cmd_size,
		args.alloc_count, args.allocs == (uintptr_t)phys_allocs ? "the list" :
		args.allocs == (uintptr_t)phys_zeros ? "zeros" : "a bad pointer",
		args.patch_count, args.patches == (uintptr_t)phys_patches ? "the list" :
		args.patches == (uintptr_t)phys_zeros ? "zeros" : "a bad pointer",
		args.in_count, args.in_syncs == (uintptr_t)in ? "the syncs" : "a bad pointer",
		args.out_count, args.out_syncs == (uintptr_t)out ? "the syncs" : "a bad pointer",
		strerror(got), strerror(want), args.portions);
	phys_dump(&args);
	if (!got && c >= 0 && nop_setup(fd, i))
		settle(fd, c, 1, i);
	resync = 1;
	return 0;
}

/* ---- the file's state ---- */

/* A new file: syncobjs to use ([0] signaled), nothing else. */
static int file_setup(int fd)
{
	int k;

	for (k = 0; k < NSYNC; k++) {
		struct drm_syncobj_create create = { .flags = k ? 0 : DRM_SYNCOBJ_CREATE_SIGNALED };

		if (!pt_check(!do_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &create), "syncobj %d created", k))
			return 0;
		sync_handle[k] = create.handle;
		sync_fence[k] = k ? FENCE_NONE : FENCE_PLAIN;
		sync_seqno[k] = 0;
	}
	return 1;
}

/* The file is being closed: everything it owned goes. */
static void file_forget(int fd)
{
	close_all(fd);
	nop_forget();
	nresv = nmaps = nctx = 0;
	resync = 0;
}

/* VA_BITS, MMU_LEVELS and VA_START: what the device's registers say, and sane. */
static int mmu_setup(int fd, const char *bdf)
{
	static const unsigned int default_bits[] = { 0, 0, 40, 39, 48 };
	volatile uint32_t *mmio = pt_map_mmio(bdf);
	uint64_t bits = 0, levels = 0, start = 0, reg_bits, reg_levels;
	char cmdline[4096] = "";
	unsigned int top;
	FILE *f;
	int ok;

	if (!pt_check(mmio != NULL, "BAR0 mapped through sysfs"))
		return 0;
	reg_bits = pt_reg(mmio, PAGODA_REG_MMU_VA_BITS);
	reg_levels = pt_reg(mmio, PAGODA_REG_MMU_LEVELS);
	munmap((void *)mmio, PAGODA_MMIO_SIZE);
	f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
	ok = !pt_get_param(fd, DRM_PAGODA_PARAM_VA_BITS, &bits) &&
	     !pt_get_param(fd, DRM_PAGODA_PARAM_MMU_LEVELS, &levels) &&
	     !pt_get_param(fd, DRM_PAGODA_PARAM_VA_START, &start) &&
	     !pt_get_param(fd, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, &segment_page) &&
	     !pt_get_param(fd, DRM_PAGODA_PARAM_NUM_ADAPTERS, &num_adapters);
	ok = ok && num_adapters >= 1 && num_adapters <= PAGODA_LINK_MAX_ADAPTERS && levels >= 2 && levels <= 4 && levels == reg_levels && bits == reg_bits &&
	     start == DRM_PAGODA_VA_START;
	top = ok ? 12 + 9 * (levels - 1) : 0;
	/* the root has 1 to 20 index bits, at most 9 above 2 levels; else the default */
	ok = ok && bits > top && bits <= top + (levels == 2 ? 20 : 9) &&
	     (strstr(cmdline, "va-bits=") || bits == default_bits[levels]);
	if (!pt_check(ok, "GET_PARAM: %llu-bit VAs (register %llu), %llu levels (register %llu), VAs from 0x%llx",
		      (unsigned long long)bits, (unsigned long long)reg_bits,
		      (unsigned long long)levels, (unsigned long long)reg_levels,
		      (unsigned long long)start))
		return 0;
	mmu_param[0] = bits;
	mmu_param[1] = levels;
	mmu_param[2] = start;
	va_end = 1ull << bits;
	return 1;
}

/*
 * Any ioctl number in the DRM driver range or the core range, any size and
 * direction, random payload. Driver numbers past the last Pagoda ioctl are
 * EINVAL; core ioctls a render node may not call are EACCES; the rest must
 * fail with an errno of the DRM core or the driver.
 */
static int fuzz_any(int fd, void *payload, void *readonly, unsigned long i)
{
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE };
	unsigned int nr, size, dir;
	unsigned long cmd;
	uint64_t *words = payload;
	int got, k;

	nr = rnd_below(2) ? DRM_COMMAND_BASE + rnd_below(DRM_COMMAND_END - DRM_COMMAND_BASE)
			  : rnd_below(DRM_COMMAND_BASE);
	/* Pagoda's own ioctls are fuzzed with structure above. */
	if (nr >= DRM_COMMAND_BASE && nr <= DRM_COMMAND_BASE + DRM_PAGODA_SUBMIT_PHYS)
		nr = DRM_COMMAND_BASE + DRM_PAGODA_SUBMIT_PHYS + 1;
	/*
	 * GEM_CLOSE with a random handle could close one the fuzzer tracks;
	 * the syncobj ioctls that make or destroy a handle, or give one a
	 * fence from another, would change what SUBMIT's checks find.
	 */
	if (nr == _IOC_NR(DRM_IOCTL_GEM_CLOSE) || nr == _IOC_NR(DRM_IOCTL_SYNCOBJ_CREATE) ||
	    nr == _IOC_NR(DRM_IOCTL_SYNCOBJ_DESTROY) || nr == _IOC_NR(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE) ||
	    nr == _IOC_NR(DRM_IOCTL_SYNCOBJ_TRANSFER))
		nr = _IOC_NR(DRM_IOCTL_VERSION);
	size = rnd_below(3) ? rnd_below(256) : rnd_below(PAYLOAD_MAX);
	dir = dirs[rnd_below(ARRAY_SIZE(dirs))];
	cmd = _IOC(dir, DRM_IOCTL_BASE, nr, size);
	for (k = 0; k < 32; k++)
		words[k] = rnd_below(2) ? rnd_value() : 0;

	got = do_ioctl(fd, cmd, rnd_below(8) ? payload : bad_pointer(readonly));
	count(&other_outcome, got);
	if (nr >= DRM_COMMAND_BASE && got != EINVAL) {
		pt_fail("call %lu: unknown driver ioctl 0x%lx: %s (want %s)",
			i, cmd, strerror(got), strerror(EINVAL));
		return 0;
	}
	/*
	 * Core ioctls: without arguments that make sense they fail, and none
	 * of them has an effect that matters to this test if one succeeds.
	 */
	return 1;
}

static const char *const pagoda_names[] = {
	"GET_PARAM", "GEM_CREATE", "GEM_INFO", "RESIDENCY", "SET_BUDGET", "GEM_MADVISE",
	"VM_BIND", "CTX_CREATE", "CTX_DESTROY", "SUBMIT", "CTX_QUERY", "SUBMIT_PHYS",
};

int main(void)
{
	unsigned long calls = pt_cmdline_number("pagoda_guest.fuzz_calls", DEFAULT_CALLS);
	uint64_t seed = pt_cmdline_number("pagoda_guest.fuzz_seed", 0);
	unsigned long i, failed = 0;
	void *payload, *readonly;
	char bdf[PT_NAME_MAX];
	int fd, e;

	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ull ^ ts.tv_nsec ^ (uint64_t)getpid() << 32;
	}
	printf("seed 0x%llx, %lu calls (replay: --append pagoda_guest.fuzz_seed=0x%llx)\n",
	       (unsigned long long)seed, calls, (unsigned long long)seed);
	rng_state = seed | 1;

	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0)
		return pt_exit();
	payload = mmap(NULL, PAYLOAD_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	readonly = mmap(NULL, PAYLOAD_MAX, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	phys_zeros = mmap(NULL, DRM_PAGODA_SUBMIT_MAX_SIZE, PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!pt_check(payload != MAP_FAILED && readonly != MAP_FAILED && phys_zeros != MAP_FAILED,
		      "payload buffers"))
		return pt_exit();
	/* PRIME_HANDLE_TO_FD may hand out descriptors: keep them from piling up. */
	signal(SIGPIPE, SIG_IGN);
	if (!mmu_setup(fd, bdf) || !file_setup(fd))
		return pt_exit();

	for (i = 0; i < calls && failed < 10; i++) {
		int ok;

		/* SUBMIT_PHYS as often as SUBMIT */
		switch (rnd_below(18)) {
		case 0:
			ok = fuzz_get_param(fd, readonly, i);
			break;
		case 1:
			ok = fuzz_gem_create(fd, readonly, i);
			break;
		case 2:
			ok = fuzz_gem_info(fd, readonly, i);
			break;
		case 3:
			ok = fuzz_residency(fd, readonly, i);
			break;
		case 4:
			ok = fuzz_set_budget(fd, readonly, i);
			break;
		case 5:
			ok = fuzz_gem_madvise(fd, readonly, i);
			break;
		case 6:
		case 7:
			ok = fuzz_vm_bind(fd, readonly, i);
			break;
		case 8:
			ok = fuzz_ctx_create(fd, readonly, i);
			break;
		case 9:
			ok = fuzz_ctx_destroy(fd, readonly, i);
			break;
		case 10:
		case 11:
			ok = fuzz_submit(fd, readonly, i);
			break;
		case 12:
			ok = fuzz_ctx_query(fd, readonly, i);
			break;
		case 13:
		case 14:
			ok = fuzz_submit_phys(fd, readonly, i);
			break;
		default:
			ok = fuzz_any(fd, payload, readonly, i);
			break;
		}
		failed += !ok;
		/* reopen now and then (state must not leak across files), and when the model is lost */
		if (resync || !rnd_below(1000)) {
			file_forget(fd);
			close(fd);
			fd = pt_open_render(bdf, sizeof(bdf));
			if (fd < 0 || !file_setup(fd))
				return pt_exit();
		}
		/* close descriptors a successful PRIME call may have created */
		if (!(i % 256))
			for (e = fd + 1; e < fd + 64; e++)
				close(e);
	}
	file_forget(fd);
	close(fd);

	printf("Pagoda ioctls: %lu calls, %lu succeeded", pagoda_outcome.calls, pagoda_outcome.ok);
	for (e = 1; e < (int)ARRAY_SIZE(pagoda_outcome.errnos); e++)
		if (pagoda_outcome.errnos[e])
			printf(", %lu %s", pagoda_outcome.errnos[e], strerror(e));
	printf("\nby ioctl (calls/succeeded):");
	for (e = 0; e <= DRM_PAGODA_SUBMIT_PHYS; e++)
		printf(" %s %lu/%lu", pagoda_names[e], nr_calls[e], nr_ok[e]);
	printf("\nVM_BIND ran %lu operations (%lu PROTECT); %lu jobs waited for, %lu of them banned their context",
	       vm_ops_done, vm_protects_done, jobs, jobs_banned);
	printf("\nSUBMIT_PHYS ran %lu buffers, %lu of them in several portions; %lu calls",
	       phys_jobs, phys_split_jobs, phys_outcome.calls);
	for (e = 1; e < (int)ARRAY_SIZE(phys_outcome.errnos); e++)
		if (phys_outcome.errnos[e])
			printf(", %lu %s", phys_outcome.errnos[e], strerror(e));
	printf("\nother DRM ioctls: %lu calls, %lu succeeded", other_outcome.calls, other_outcome.ok);
	for (e = 1; e < (int)ARRAY_SIZE(other_outcome.errnos); e++)
		if (other_outcome.errnos[e])
			printf(", %lu %s", other_outcome.errnos[e], strerror(e));
	printf("\n");
	pt_check(i == calls, "%lu of %lu calls made (stops after 10 wrong results)", i, calls);
	return pt_exit();
}
