// SPDX-License-Identifier: MIT
/*
 * Calls every Pagoda ioctl with random and boundary arguments, plus the
 * whole driver ioctl number range and the DRM core ioctls a render node
 * allows, with random sizes, directions and payloads. Every Pagoda ioctl
 * must return what docs/driver.md documents for those arguments (the
 * exact result where the arguments determine it); every other call must
 * fail with an errno, never succeed by accident or crash; the kernel must
 * stay clean (the debug kernel lane reports KASAN, lockdep, UBSAN and
 * leaks).
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

static int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/*
 * DRM_IOCTL_PAGODA_GET_PARAM: 0 for a known parameter with pad 0, EINVAL
 * for anything else, EFAULT when the argument cannot be copied.
 */
static int fuzz_get_param(int fd, void *readonly, unsigned long i)
{
	struct drm_pagoda_get_param args;
	int want, got;

	args.param = rnd_below(3) ? rnd_below(DRM_PAGODA_PARAM_HOST_APERTURE_SIZE + 3) : rnd_value();
	args.pad = rnd_below(4) ? 0 : rnd_value();
	args.value = rnd_value();
	want = args.param <= DRM_PAGODA_PARAM_HOST_APERTURE_SIZE && !args.pad ? 0 : EINVAL;

	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args);
	}
	count(&pagoda_outcome, got);
	if (got == want)
		return 1;
	pt_fail("call %lu: GET_PARAM param %u pad %u: %s (want %s)",
		i, args.param, args.pad, strerror(got), strerror(want));
	return 0;
}

/* Handles of allocations the fuzzer created, closed now and then. */
#define MAX_LIVE	16
static uint32_t live[MAX_LIVE];
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

/* What GEM_CREATE must answer, by the rules of docs/driver.md. */
static int gem_create_expected(const struct drm_pagoda_gem_create *a)
{
	const uint32_t known = DRM_PAGODA_SEGMENT_MASK(0) | DRM_PAGODA_SEGMENT_MASK(1) |
			       DRM_PAGODA_SEGMENT_MASK(2);

	if (a->pad || a->flags & ~DRM_PAGODA_BO_FLAGS || !a->size || !a->segments ||
	    a->segments & ~known)
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
	args.segments = rnd_below(4) ? 1 + rnd_below(7) : (uint32_t)rnd_value();
	args.preferred_segment = rnd_below(4) ? rnd_below(3) : (uint32_t)rnd_value();
	args.eviction_segment = rnd_below(4) ? rnd_below(3) : (uint32_t)rnd_value();
	args.priority = rnd_below(4) ? rnd_below(3) : (uint32_t)rnd_value();
	args.handle = rnd();
	args.pad = rnd_below(8) ? 0 : rnd_value();
	want = gem_create_expected(&args);

	if (!rnd_below(16)) {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, bad_pointer(readonly));
		want = EFAULT;
	} else {
		got = do_ioctl(fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args);
	}
	count(&pagoda_outcome, got);
	if (!got && got == want) {
		if (nlive == MAX_LIVE)
			close_all(fd);
		resident[nlive] = 0;
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
	count(&pagoda_outcome, got);
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
	count(&pagoda_outcome, got);
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
	count(&pagoda_outcome, got);
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
	count(&pagoda_outcome, got);
	if (got == want && (got || args.retained <= 1))
		return 1;
	pt_fail("call %lu: GEM_MADVISE handle %u state %u pad %u: %s (want %s), retained %u", i,
		args.handle, args.state, args.pad, strerror(got), strerror(want), args.retained);
	return 0;
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
	if (nr >= DRM_COMMAND_BASE && nr <= DRM_COMMAND_BASE + DRM_PAGODA_GEM_MADVISE)
		nr = DRM_COMMAND_BASE + DRM_PAGODA_GEM_MADVISE + 1;
	/* GEM_CLOSE with a random handle could close one the fuzzer tracks */
	if (nr == _IOC_NR(DRM_IOCTL_GEM_CLOSE))
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
	if (!pt_check(payload != MAP_FAILED && readonly != MAP_FAILED, "payload buffers"))
		return pt_exit();
	/* PRIME_HANDLE_TO_FD may hand out descriptors: keep them from piling up. */
	signal(SIGPIPE, SIG_IGN);

	for (i = 0; i < calls && failed < 10; i++) {
		int ok;

		switch (rnd_below(8)) {
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
		default:
			ok = fuzz_any(fd, payload, readonly, i);
			break;
		}
		failed += !ok;
		/* reopen now and then: state must not leak across files */
		if (!rnd_below(1000)) {
			close_all(fd);
			close(fd);
			fd = pt_open_render(bdf, sizeof(bdf));
			if (fd < 0)
				return pt_exit();
		}
		/* close descriptors a successful PRIME call may have created */
		if (!(i % 256))
			for (e = fd + 1; e < fd + 64; e++)
				close(e);
	}
	close_all(fd);
	close(fd);

	printf("Pagoda ioctls: %lu calls, %lu succeeded", pagoda_outcome.calls, pagoda_outcome.ok);
	for (e = 1; e < (int)ARRAY_SIZE(pagoda_outcome.errnos); e++)
		if (pagoda_outcome.errnos[e])
			printf(", %lu %s", pagoda_outcome.errnos[e], strerror(e));
	printf("\nother DRM ioctls: %lu calls, %lu succeeded", other_outcome.calls, other_outcome.ok);
	for (e = 1; e < (int)ARRAY_SIZE(other_outcome.errnos); e++)
		if (other_outcome.errnos[e])
			printf(", %lu %s", other_outcome.errnos[e], strerror(e));
	printf("\n");
	pt_check(i == calls, "%lu of %lu calls made (stops after 10 wrong results)", i, calls);
	return pt_exit();
}
