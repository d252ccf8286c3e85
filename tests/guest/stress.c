// SPDX-License-Identifier: MIT
/*
 * Hammers the driver from several processes at once for a bounded time,
 * while a controller unbinds and rebinds the device and resets the PCI
 * function under them: every operation the driver offers, in random order,
 * from every process, with files open and work in flight during each
 * disturbance.
 *
 * Operations: allocate (random size, segments, preferred segment,
 * priority, physically accessed or not, on a random GPU of a linked
 * adapter or LinkInstanced on all of them), write a pattern through a CPU
 * mapping (BAR2, host aperture slots or pages, wherever it is), verify it,
 * make it resident or evict it, mark it not needed and needed again (its
 * contents may be discarded meanwhile, and then read zero), free; open and
 * close the
 * render node, query every parameter (the value must not change),
 * duplicate a file and use it from a forked child, mmap offsets that name
 * no object (refused), close unknown GEM handles (refused). The working set
 * of all workers is several times VRAM, so allocations are evicted and
 * their bytes must survive it. A PCI reset keeps VRAM, so every allocation
 * must read back across it too; an unbind loses the device's memory, so
 * allocations made before one are dropped unverified. While the device is
 * away a call fails with ENODEV and the worker reopens the node once it is
 * back; any other failure fails the test. Each worker must work again after
 * the last disturbance. Counts of operations, evictions seen and
 * disturbances are printed.
 *
 *   stress [-p PROCESSES] [-t SECONDS] [-f] [-q]
 *     -p  worker processes (default 8)
 *     -t  duration (default 60, or pagoda_guest.stress_seconds=N on the
 *         kernel command line: scripts/run-guest.sh --stress-seconds N)
 *     -f  fault injection is on (fault_inject runs it so): ENOMEM is an
 *         accepted result and a failed bind is retried
 *     -q  no unbind or reset
 */
#include <signal.h>
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_test.h"

#define MAX_WORKERS	64
/* Allocations a worker keeps at once, and their largest size. */
#define WORKER_BOS	8
#define BO_MAX_SIZE	(8u << 20)

enum op {
	OP_ALLOC,
	OP_WRITE,
	OP_VERIFY,
	OP_FREE,
	OP_RESIDENCY,
	OP_MADVISE,
	OP_OPEN_CLOSE,
	OP_GET_PARAM,
	OP_FORK_DUP,
	OP_MMAP_NOTHING,
	OP_GEM_CLOSE_UNKNOWN,
	NUM_OPS
};

static const char *const op_names[NUM_OPS] = {
	"alloc", "cpu-write", "cpu-verify", "free", "resident/evict",
	"dontneed/willneed", "open/close", "get-param", "fork+dup", "mmap-nothing", "gem-close-unknown",
};

struct worker_stats {
	unsigned long ops[NUM_OPS];
	unsigned long unplugged;	/* calls that met a device away */
	unsigned long injected;		/* ENOMEM under fault injection */
	unsigned long no_room;		/* allocations refused for lack of memory */
	unsigned long evicted_seen;	/* verified allocations found out of VRAM */
	unsigned long discarded;	/* not needed, then found discarded (read zero) */
	unsigned long lost_to_unplug;	/* allocations dropped because of an unbind */
	unsigned long bytes_verified;
	unsigned long ok_after_last;	/* successful calls after the last disturbance */
	unsigned long failures;
};

/* Shared between the controller and the workers (MAP_SHARED). */
struct shared {
	volatile int stop;
	volatile unsigned int disturbances;	/* finished disturbances */
	volatile unsigned int unplugs;		/* unbinds begun */
	uint64_t params[DRM_PAGODA_PARAM_HOST_APERTURE_SIZE + 1];
	struct worker_stats w[MAX_WORKERS];
};

/* One live allocation of a worker. */
struct worker_bo {
	struct pagoda_bo bo;
	uint64_t seed;
	int written;		/* the pattern is in it */
	int resident;		/* made resident and not evicted */
	int dontneed;		/* marked not needed: its contents may go */
	unsigned int unplugs;	/* sh->unplugs when it was made */
};

static struct shared *sh;
static char bdf[PT_NAME_MAX];
static int fault_injection;
static uint64_t rng;
/* GPUs of the logical adapter: allocations go to any of them */
static uint64_t adapters = 1;

static uint64_t rnd(void)
{
	return pt_rng_next(&rng);
}

/* Open the render node if the device is there; -1 otherwise. */
static int open_node(void)
{
	char node[PT_PATH_MAX];

	if (pt_render_node(bdf, node, sizeof(node)))
		return -1;
	return open(node, O_RDWR | O_CLOEXEC);
}

static int get_params(int fd)
{
	uint64_t value = 0;
	uint32_t p;
	int ret;

	for (p = 0; p <= DRM_PAGODA_PARAM_HOST_APERTURE_SIZE; p++) {
		ret = pt_get_param(fd, p, &value);
		if (ret)
			return ret;
		if (value != sh->params[p]) {
			pt_fail("parameter %u changed: 0x%llx, was 0x%llx", p,
				(unsigned long long)value, (unsigned long long)sh->params[p]);
			return -EBADMSG;
		}
	}
	return 0;
}

/* The child uses a duplicate of the parent's file, then both go on. */
static int fork_dup(int fd)
{
	int dup_fd = dup(fd), status, ret;
	pid_t pid;

	if (dup_fd < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(dup_fd);
		return -errno;
	}
	if (!pid) {
		ret = get_params(dup_fd);
		_exit(ret ? -ret : 0);
	}
	close(dup_fd);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

static int mmap_nothing(int fd)
{
	off_t offset = (off_t)(rnd() % 4096) << 12;
	void *map;

	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
	if (map != MAP_FAILED) {
		munmap(map, 4096);
		pt_fail("mmap of offset 0x%llx that names no object succeeded",
			(unsigned long long)offset);
		return -EBADMSG;
	}
	/* no object at that offset; ENODEV once unplugged */
	return errno == EINVAL || errno == EACCES ? 0 : -errno;
}

static int gem_close_unknown(int fd)
{
	/* far above the handles of the worker's own allocations */
	struct drm_gem_close args = { .handle = 1000000 + rnd() % 1000 };

	if (!ioctl(fd, DRM_IOCTL_GEM_CLOSE, &args)) {
		pt_fail("GEM_CLOSE of handle %u that was never created succeeded", args.handle);
		return -EBADMSG;
	}
	return errno == EINVAL ? 0 : -errno;
}

static struct worker_bo bos[WORKER_BOS];
static unsigned int worker_id;

static uint64_t word(uint64_t seed, uint64_t i)
{
	return seed * 0x9e3779b97f4a7c15ull ^ i;
}

static int bo_alloc(int fd)
{
	static const uint32_t masks[] = {
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN) |
			DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN) |
			DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
	};
	static const uint32_t preferred[] = {
		DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_VRAM_HIDDEN, DRM_PAGODA_SEGMENT_SYSTEM,
	};
	struct pagoda_dev dev = { .fd = fd };
	struct pagoda_bo_desc desc = { 0 };
	struct worker_bo *w = &bos[rnd() % WORKER_BOS];
	unsigned int i;
	int ret;

	if (w->bo.handle)
		return 0;
	desc.size = 4096 + rnd() % BO_MAX_SIZE;
	desc.segments = masks[rnd() % ARRAY_SIZE(masks)];
	/* the first allowed of a random rotation of the segments */
	for (i = rnd() % 3; !(desc.segments & DRM_PAGODA_SEGMENT_MASK(preferred[i % 3])); i++)
		;
	desc.preferred_segment = preferred[i % 3];
	desc.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	desc.flags = rnd() % 4 ? 0 : DRM_PAGODA_BO_PHYSICAL;
	desc.priority = rnd() % 3;
	desc.adapter = rnd() % adapters;
	/* on a link, now and then an instance on every GPU (the CPU maps the first's) */
	if (adapters > 1 && !desc.flags && !(rnd() % 4)) {
		desc.flags = DRM_PAGODA_BO_LINK_INSTANCED;
		desc.adapter = 0;
	}
	ret = pagoda_bo_create(&dev, &desc, &w->bo);
	/* a full guest (or an injected failure) refuses it cleanly */
	if (ret == -ENOSPC || ret == -ENOMEM) {
		sh->w[worker_id].no_room++;
		return 0;
	}
	if (ret)
		return ret;
	ret = pagoda_bo_map(&dev, &w->bo);
	if (ret) {
		pagoda_bo_free(&dev, &w->bo);
		memset(&w->bo, 0, sizeof(w->bo));
		return ret;
	}
	w->seed = rnd();
	w->written = 0;
	w->dontneed = 0;
	w->unplugs = sh->unplugs;
	return 0;
}

static struct worker_bo *pick_bo(void)
{
	struct worker_bo *w = &bos[rnd() % WORKER_BOS];

	return w->bo.handle ? w : NULL;
}

static int bo_write(void)
{
	struct worker_bo *w = pick_bo();
	uint64_t *p, i;

	/* not needed: not used until needed again (the model's Offer) */
	if (!w || w->dontneed)
		return 0;
	p = w->bo.map;
	for (i = 0; i < w->bo.size / 8; i++)
		p[i] = word(w->seed, i);
	w->written = 1;
	return 0;
}

static int bo_verify(int fd)
{
	struct pagoda_dev dev = { .fd = fd };
	struct drm_pagoda_gem_info info;
	struct worker_bo *w = pick_bo();
	uint64_t *p, i, bad = 0;
	int ret;

	/* not needed: its contents may be discarded at any time */
	if (!w || !w->written || w->dontneed)
		return 0;
	p = w->bo.map;
	for (i = 0; i < w->bo.size / 8; i++)
		bad += p[i] != word(w->seed, i);
	if (bad && w->unplugs != sh->unplugs) {
		/* the device went away with its memory since it was written */
		sh->w[worker_id].lost_to_unplug++;
		w->written = 0;
		return 0;
	}
	if (bad) {
		pt_fail("worker %u: allocation of %llu bytes: %llu words differ", worker_id,
			(unsigned long long)w->bo.size, (unsigned long long)bad);
		return -EBADMSG;
	}
	sh->w[worker_id].bytes_verified += w->bo.size;
	ret = pagoda_bo_info(&dev, w->bo.handle, &info);
	if (!ret && info.segment != DRM_PAGODA_SEGMENT_VRAM)
		sh->w[worker_id].evicted_seen++;
	return ret;
}

static int bo_free(int fd)
{
	struct pagoda_dev dev = { .fd = fd };
	struct worker_bo *w = pick_bo();
	int ret;

	if (!w)
		return 0;
	ret = pagoda_bo_free(&dev, &w->bo);
	memset(w, 0, sizeof(*w));
	return ret;
}

/* Make an allocation resident (pinned) or evict it again. */
static int bo_residency(int fd)
{
	struct pagoda_dev dev = { .fd = fd };
	struct worker_bo *w = pick_bo();
	int ret;

	if (!w)
		return 0;
	ret = w->resident ? pagoda_evict(&dev, &w->bo.handle, 1) :
			    pagoda_make_resident(&dev, &w->bo.handle, 1, NULL);
	if (!ret)
		w->resident = !w->resident;
	/* no room to keep it resident: refused cleanly */
	if (ret == -ENOSPC || ret == -ENOMEM) {
		sh->w[worker_id].no_room++;
		return 0;
	}
	return ret;
}

/*
 * Mark an allocation not needed, or needed again: then, unless retained,
 * its contents were discarded and it reads zero.
 */
static int bo_madvise(int fd)
{
	struct pagoda_dev dev = { .fd = fd };
	struct worker_bo *w = pick_bo();
	int retained = -1, ret;
	uint64_t *p, i, nonzero = 0;

	if (!w)
		return 0;
	ret = pagoda_bo_madvise(&dev, w->bo.handle, w->dontneed ? DRM_PAGODA_MADV_WILLNEED :
								  DRM_PAGODA_MADV_DONTNEED, &retained);
	if (ret)
		return ret;
	w->dontneed = !w->dontneed;
	if (w->dontneed || retained)
		return 0;
	p = w->bo.map;
	for (i = 0; i < w->bo.size / 8; i++)
		nonzero += p[i] != 0;
	if (nonzero && w->unplugs == sh->unplugs) {
		pt_fail("worker %u: discarded allocation of %llu bytes: %llu words not zero",
			worker_id, (unsigned long long)w->bo.size, (unsigned long long)nonzero);
		return -EBADMSG;
	}
	sh->w[worker_id].discarded++;
	w->written = 0;
	return 0;
}

/* The device went away: its allocations are gone with the file. */
static void drop_bos(void)
{
	unsigned int i;

	for (i = 0; i < WORKER_BOS; i++) {
		pagoda_bo_unmap(&bos[i].bo);
		memset(&bos[i], 0, sizeof(bos[i]));
	}
}

/* Returns 0 or a negative errno; *fd is closed and set to -1 on ENODEV. */
static int run_op(enum op op, int *fd)
{
	switch (op) {
	case OP_ALLOC:
		return bo_alloc(*fd);
	case OP_WRITE:
		return bo_write();
	case OP_VERIFY:
		return bo_verify(*fd);
	case OP_FREE:
		return bo_free(*fd);
	case OP_RESIDENCY:
		return bo_residency(*fd);
	case OP_MADVISE:
		return bo_madvise(*fd);
	case OP_OPEN_CLOSE: {
		int other = open_node();

		if (other < 0)
			return -ENODEV;
		close(other);
		return 0;
	}
	case OP_GET_PARAM:
		return get_params(*fd);
	case OP_FORK_DUP:
		return fork_dup(*fd);
	case OP_MMAP_NOTHING:
		return mmap_nothing(*fd);
	case OP_GEM_CLOSE_UNKNOWN:
		return gem_close_unknown(*fd);
	default:
		return -EINVAL;
	}
}

static void worker(int id)
{
	struct worker_stats *st = &sh->w[id];
	unsigned int seen = 0;
	int fd = -1, ret;

	rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;
	worker_id = id;
	while (!sh->stop) {
		enum op op = rnd() % NUM_OPS;

		if (seen != sh->disturbances) {
			seen = sh->disturbances;
			st->ok_after_last = 0;
		}
		if (fd < 0) {
			fd = open_node();
			if (fd < 0) {
				st->unplugged++;
				pt_sleep_ms(5);
				continue;
			}
		}
		ret = run_op(op, &fd);
		if (!ret) {
			st->ops[op]++;
			st->ok_after_last++;
		} else if (ret == -ENODEV) {
			st->unplugged++;
			drop_bos();
			close(fd);
			fd = -1;
		} else if (ret == -ENOMEM && fault_injection) {
			st->injected++;
		} else {
			st->failures++;
			if (ret != -EBADMSG)
				pt_fail("worker %d: %s: %s", id, op_names[op], strerror(-ret));
		}
	}
	drop_bos();
	if (fd >= 0)
		close(fd);
	_exit(0);
}

/* The fault injectors of the debug kernel, as tests/guest/fault_inject.c aims them. */
static const char *const injector_probability[] = {
	"/sys/kernel/debug/failslab/probability",
	"/sys/kernel/debug/fail_page_alloc/probability",
};

/* Pause both injectors (probability 0), their probabilities saved in @old. */
static void injectors_pause(char old[][16])
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(injector_probability); i++) {
		FILE *f = fopen(injector_probability[i], "r");

		snprintf(old[i], 16, "10");
		if (f) {
			if (!fgets(old[i], 16, f))
				snprintf(old[i], 16, "10");
			fclose(f);
		}
		pt_write_file(injector_probability[i], "0");
	}
}

/*
 * Under injection a bind succeeds only when none of the probe's
 * allocations fails: with the display's (about 80 in all) that is 0.02%
 * of the time at 10%. After 20 tries under injection (the probe's failure
 * paths, also swept one by one by fault_inject), one bind runs with the
 * injectors paused.
 */
static int bind_device(void)
{
	char old[ARRAY_SIZE(injector_probability)][16];
	int tries, ret = 0;
	size_t i;

	for (tries = 0; tries < 20; tries++) {
		ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);
		if (!ret || !fault_injection)
			return ret;
	}
	injectors_pause(old);
	ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);
	for (i = 0; i < ARRAY_SIZE(injector_probability); i++)
		pt_write_file(injector_probability[i], old[i]);
	return ret;
}

static void unbind_bind(void)
{
	int ret;

	sh->unplugs++;
	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf);
	if (!pt_check(!ret, "unbind with files open: %s",
		      ret ? strerror(-ret) : "done"))
		return;
	pt_sleep_ms(200);
	ret = bind_device();
	pt_check(!ret, "bind again: %s", ret ? strerror(-ret) : "done");
}

static void reset_function(void)
{
	char path[PT_PATH_MAX];
	int ret;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/reset", bdf);
	ret = pt_write_file(path, "1");
	pt_check(!ret, "PCI function reset under load: %s", ret ? strerror(-ret) : "done");
}

static void controller(unsigned int seconds, int quiet)
{
	/* the disturbances, evenly spread over the first 3/4 of the run */
	static void (*const disturb[])(void) = { unbind_bind, reset_function, unbind_bind };
	unsigned int n = quiet ? 0 : ARRAY_SIZE(disturb), i;
	long slice = seconds * 1000L * 3 / 4 / (n + 1);

	for (i = 0; i < n; i++) {
		pt_sleep_ms(slice);
		disturb[i]();
		sh->disturbances++;
	}
	pt_sleep_ms(seconds * 1000L - slice * n);
	sh->stop = 1;
}

int main(int argc, char **argv)
{
	unsigned int seconds = pt_cmdline_number("pagoda_guest.stress_seconds", 60);
	unsigned int procs = 8, i;
	struct worker_stats total = { 0 };
	uint64_t vram = 0;
	pid_t pids[MAX_WORKERS];
	int quiet = 0, fd, opt, status, idle = 0, ret;
	unsigned int sigbus = 0;
	char dead[MAX_WORKERS] = { 0 };

	while ((opt = getopt(argc, argv, "p:t:fq")) != -1) {
		switch (opt) {
		case 'p': procs = strtoul(optarg, NULL, 0); break;
		case 't': seconds = strtoul(optarg, NULL, 0); break;
		case 'f': fault_injection = 1; break;
		case 'q': quiet = 1; break;
		default: return 2;
		}
	}
	if (!procs || procs > MAX_WORKERS || !seconds)
		return 2;
	printf("%u processes for %u s%s%s\n", procs, seconds, quiet ? "" : ", with unbind/rebind and reset",
	       fault_injection ? ", under fault injection" : "");

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!pt_check(sh != MAP_FAILED, "shared state"))
		return pt_exit();
	if (!pt_check(!pt_find_pci(bdf, sizeof(bdf)), "Pagoda PCI device present"))
		return pt_exit();
	/* an open may fail by injection (ENOMEM): that is not a lost device */
	for (i = 0, fd = -1; fd < 0 && i < (fault_injection ? 100u : 1u); i++)
		fd = open_node();
	if (!pt_check(fd >= 0, "open the render node of %s", bdf))
		return pt_exit();
	for (i = 0; i <= DRM_PAGODA_PARAM_HOST_APERTURE_SIZE; i++)
		if (!pt_check(!pt_get_param(fd, i, &sh->params[i]), "parameter %u", i))
			return pt_exit();
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	if (!pt_check(!ret && adapters, "%llu GPUs", (unsigned long long)adapters))
		return pt_exit();
	close(fd);

	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (!pids[i])
			worker(i);
	}
	controller(seconds, quiet);
	for (i = 0; i < procs; i++) {
		status = -1;
		if (pids[i] > 0)
			waitpid(pids[i], &status, 0);
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		/*
		 * A CPU access whose page cannot be allocated has no errno to
		 * return: under fault injection the kernel may end the access
		 * with SIGBUS, which is a clean outcome.
		 */
		if (fault_injection && WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) {
			sigbus++;
			dead[i] = 1;
			continue;
		}
		pt_fail("worker %u did not finish cleanly (%s %d)", i,
			WIFSIGNALED(status) ? "signal" : "exit status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	if (fault_injection)
		printf("  workers ended by SIGBUS on a failed page allocation: %u\n", sigbus);

	for (i = 0; i < procs; i++) {
		struct worker_stats *st = &sh->w[i];
		int k;

		for (k = 0; k < NUM_OPS; k++)
			total.ops[k] += st->ops[k];
		total.unplugged += st->unplugged;
		total.injected += st->injected;
		total.failures += st->failures;
		total.no_room += st->no_room;
		total.evicted_seen += st->evicted_seen;
		total.discarded += st->discarded;
		total.lost_to_unplug += st->lost_to_unplug;
		total.bytes_verified += st->bytes_verified;
		idle += !dead[i] && !st->ok_after_last;
	}
	for (i = 0; i < NUM_OPS; i++)
		printf("  %-18s %lu\n", op_names[i], total.ops[i]);
	printf("  calls on a device away: %lu, injected ENOMEM: %lu, disturbances: %u\n",
	       total.unplugged, total.injected, sh->disturbances);
	printf("  %llu MiB verified; allocations found evicted: %lu, discarded: %lu, refused for room: %lu, dropped by an unbind: %lu\n",
	       (unsigned long long)(total.bytes_verified >> 20), total.evicted_seen,
	       total.discarded, total.no_room, total.lost_to_unplug);
	vram = sh->params[DRM_PAGODA_PARAM_VRAM_SIZE] +
	       sh->params[DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE];
	printf("  working set: up to %u x %u allocations of up to %u MiB, %.1f x VRAM and hidden VRAM (%llu MiB)\n",
	       procs, WORKER_BOS, BO_MAX_SIZE >> 20,
	       (double)procs * WORKER_BOS * BO_MAX_SIZE / 2 / (vram ? vram : 1),
	       (unsigned long long)(vram >> 20));
	pt_check(!total.failures, "no unexpected result (%lu)", total.failures);
	pt_check(!idle, "every worker worked after the last disturbance (%d did not)", idle);
	/* an open may fail by injection (ENOMEM): that is not a lost device */
	for (i = 0, fd = -1; fd < 0 && i < (fault_injection ? 100u : 1u); i++)
		fd = open_node();
	pt_check(fd >= 0, "the device is bound at the end");
	if (fd >= 0)
		close(fd);
	return pt_exit();
}
