// SPDX-License-Identifier: MIT
#define _GNU_SOURCE	/* strerrorname_np() */
/*
 * Coverage-guided, stateful fuzzing of the Pagoda UAPI on the kernel's
 * KCOV (the debug kernel has it, for pagoda.ko only).
 *
 * A program is a sequence of calls: every Pagoda ioctl, the DRM core calls
 * a client mixes with them (GEM close, syncobjs, PRIME), CPU mappings of
 * allocations and the debugfs hooks. Calls name the resources earlier
 * calls of the same program made (allocations, contexts, syncobjs, GPU
 * VAs, command buffers) through small references, or take raw and
 * boundary values. Each program runs on a file of its own; KCOV records
 * the driver code its calls reached, and a program that reaches an edge
 * no program reached before joins the corpus. New programs are corpus
 * programs mutated (an argument changed, a call inserted, removed, or a
 * splice of two programs) or, now and then, generated afresh.
 *
 * Several processes fuzz at once (pagoda_guest.kfuzz_procs, default 3)
 * and share one coverage map, so they race on the same device under
 * memory pressure, the debugfs hooks among their calls. The run lasts
 * pagoda_guest.kfuzz_seconds (default 40); pagoda_guest.kfuzz_seed
 * replays a seed. Oracles: the kernel stays clean (the guest's init
 * checks KASAN, lockdep, UBSAN, kmemleak, WARN and taint after the
 * program) and every Pagoda ioctl fails only with an errno its table in
 * docs/driver.md lists (the first program to get each other one is
 * printed). The end prints executions, corpus, driver PCs and edges, and
 * the errnos each ioctl returned. Not on a kernel without KCOV (SKIP).
 */
#include <linux/kcov.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>

#include <drm.h>

#include "pagoda_test.h"

#define KCOV_PATH	"/sys/kernel/debug/kcov"
#define COVER_WORDS	(256 * 1024)	/* PCs one program may record */
#define EDGE_BITS	22		/* the shared edge map: 4 Mbit */
#define PC_SLOTS	(1u << 17)	/* the shared set of distinct PCs */

#define MAX_CALLS	24
#define NARGS		24
#define MAX_RES		16
#define CORPUS_MAX	4096
#define REF_LIMIT	64		/* argument below: a reference to a resource */
#define SMALL_LIMIT	128		/* argument below (and >= REF_LIMIT): raw arg - 64 */
#define ERRNO_MAX	134
#define MAX_PROCS	16

enum kind {
	K_GET_PARAM, K_GEM_CREATE, K_GEM_INFO, K_RESIDENCY, K_SET_BUDGET, K_MADVISE,
	K_VM_BIND, K_CTX_CREATE, K_CTX_DESTROY, K_SUBMIT, K_CTX_QUERY, K_SUBMIT_PHYS,
	/* not Pagoda ioctls: no errno oracle */
	K_CMDBUF, K_MMAP, K_GEM_CLOSE, K_SYNCOBJ_CREATE, K_SYNCOBJ_WAIT, K_PRIME,
	K_DEBUGFS, NKINDS,
};

static const char *const kind_name[NKINDS] = {
	"GET_PARAM", "GEM_CREATE", "GEM_INFO", "RESIDENCY", "SET_BUDGET", "GEM_MADVISE",
	"VM_BIND", "CTX_CREATE", "CTX_DESTROY", "SUBMIT", "CTX_QUERY", "SUBMIT_PHYS",
	"cmdbuf", "mmap", "GEM_CLOSE", "SYNCOBJ_CREATE", "SYNCOBJ_WAIT", "PRIME",
	"debugfs",
};

/* What docs/driver.md's UAPI tables allow each Pagoda ioctl to fail with. */
static const int documented[K_SUBMIT_PHYS + 1][12] = {
	[K_GET_PARAM] = { EINVAL, EFAULT },
	[K_GEM_CREATE] = { EINVAL, ENOSPC, ENOMEM, EFAULT },
	[K_GEM_INFO] = { EINVAL, ENOENT, EFAULT, EINTR },
	[K_RESIDENCY] = { EINVAL, EFAULT, ENOENT, ENOSPC, ENOMEM },
	[K_SET_BUDGET] = { EFAULT },
	[K_MADVISE] = { EINVAL, ENOENT, EFAULT, EINTR },
	[K_VM_BIND] = { EINVAL, ENOENT, EEXIST, ENOSPC, ENOMEM, EBUSY, EINTR, EIO, ETIMEDOUT,
			EFAULT },
	[K_CTX_CREATE] = { EINVAL, ENOMEM, EBUSY, EFAULT },
	[K_CTX_DESTROY] = { EINVAL, ENOENT, EFAULT },
	[K_SUBMIT] = { EINVAL, ENOENT, EACCES, ECANCELED, EIO, ENOSPC, EBUSY, ENOMEM, ETIMEDOUT,
		       EINTR, EFAULT },
	[K_CTX_QUERY] = { EINVAL, ENOENT, EFAULT },
	[K_SUBMIT_PHYS] = { EINVAL, ENOENT, ECANCELED, ENOSPC, EFAULT, ENOMEM, EINTR, EBUSY },
};

static int is_documented(int kind, int err)
{
	unsigned int k;

	if (kind > K_SUBMIT_PHYS)
		return 1;
	for (k = 0; k < ARRAY_SIZE(documented[kind]); k++)
		if (documented[kind][k] == err)
			return 1;
	return 0;
}

struct call {
	uint8_t kind;
	uint64_t a[NARGS];
};

struct prog {
	uint32_t n;
	struct call c[MAX_CALLS];
};

/* Shared by the fuzzing processes (MAP_SHARED before they fork). */
struct shared {
	uint8_t edges[1u << (EDGE_BITS - 3)];
	uint64_t pcs[PC_SLOTS];
	uint64_t npcs, nedges, execs, corpus;
	uint64_t calls[NKINDS];
	uint64_t errnos[NKINDS][ERRNO_MAX + 1];	/* [0]: successes */
	uint8_t reported[K_SUBMIT_PHYS + 1][ERRNO_MAX + 1];
	uint64_t findings;
};

static struct shared *sh;
static uint64_t rng;
static int worker;
static unsigned long *cover;
static int kcov_fd = -1;
static char debugfs_dir[PT_PATH_MAX];
static char render_node[PT_PATH_MAX];
static uint64_t vram_size;
static struct prog corpus_progs[CORPUS_MAX];
static unsigned int ncorpus;
/* The last programs this process ran: printed when the kernel reports. */
#define RECENT		4
static struct prog recent[RECENT];
static unsigned long nrecent;
static volatile sig_atomic_t kernel_reported;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t rnd(void)
{
	return pt_rng_next(&rng);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* Values that sit on the edges the checks draw. */
static uint64_t rnd_value(void)
{
	static const uint64_t edges[] = {
		0, 1, 2, 3, 4, 8, 63, 64, 255, 256, 1024, 4095, 4096, 4097, 65535, 65536, 65537,
		0x200000, 0x7fffffff, 0x80000000u, 0xffffffffu, 0x100000000ull, 1ull << 47,
		1ull << 63, ~0ull, ~0ull - 4095, 16u << 20, (16u << 20) + 4,
	};

	switch (below(5)) {
	case 0:
		return edges[below(ARRAY_SIZE(edges))];
	case 1:
		return 1ull << below(64);
	case 2:
		return below(REF_LIMIT);
	case 3:
		return REF_LIMIT + below(SMALL_LIMIT - REF_LIMIT);
	default:
		return rnd();
	}
}

/* ---- the execution state of one program --------------------------------- */

struct res {
	uint64_t v[MAX_RES];
	uint64_t size[MAX_RES];
	unsigned int n;
};

struct state {
	int fd, fd2;
	struct res bo, phys, ctx, sync, va, cmd;
	void *maps[MAX_RES];
	uint64_t map_size[MAX_RES];
	unsigned int nmaps;
};

static void res_add(struct res *r, uint64_t v, uint64_t size)
{
	unsigned int k = r->n < MAX_RES ? r->n++ : below(MAX_RES);

	r->v[k] = v;
	r->size[k] = size;
}

/* An argument as a resource (below REF_LIMIT), a small raw value, or raw. */
static uint64_t ref(const struct res *r, uint64_t arg, uint64_t *size)
{
	if (arg < REF_LIMIT) {
		unsigned int k = r->n ? arg % r->n : 0;

		if (size)
			*size = r->n ? r->size[k] : 0;
		return r->n ? r->v[k] : 0;
	}
	if (size)
		*size = 0;
	return arg < SMALL_LIMIT ? arg - REF_LIMIT : arg;
}

/* The size argument of an operation: below REF_LIMIT, the resource's own. */
static uint64_t size_arg(uint64_t arg, uint64_t own)
{
	return arg < REF_LIMIT ? own : ref(NULL, arg, NULL);
}

static int bad_ptr(uint64_t arg, void *good, void **out)
{
	static void *const bad[] = { NULL, (void *)16, (void *)0xffff888000000000ull,
				     (void *)~0ull };

	*out = (arg & 0xff) == 0xbd ? bad[(arg >> 8) % ARRAY_SIZE(bad)] : good;
	return *out != good;
}

static void record(int kind, int err);

static int xioctl(int kind, int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg) ? errno : 0;

	record(kind, ret);
	return ret;
}

/* ---- the calls ----------------------------------------------------------- */

static void do_get_param(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_get_param p = { .param = a[0] % 32, .adapter = a[1] == 7 ? 1 : 0 };

	if (a[0] >= SMALL_LIMIT)
		p.param = a[0];
	xioctl(K_GET_PARAM, st->fd, DRM_IOCTL_PAGODA_GET_PARAM, &p);
}

static void do_gem_create(struct state *st, const uint64_t *a)
{
	static const uint64_t sizes[] = { 4096, 65536, 1 << 20, 2 << 20, 4 << 20, 8 << 20,
					  (2 << 20) + 4096, 12288 };
	struct drm_pagoda_gem_create c = {
		.size = a[0] < SMALL_LIMIT ? sizes[a[0] % ARRAY_SIZE(sizes)] : a[0],
		.flags = a[1], .segments = a[2], .preferred_segment = a[3],
		.eviction_segment = a[4], .priority = a[5], .adapter = a[6] % 8 == 7,
		.pad = a[7] % 8 == 7,
	};

	if (xioctl(K_GEM_CREATE, st->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &c))
		return;
	res_add(&st->bo, c.handle, c.size);
	if (c.flags & DRM_PAGODA_BO_PHYSICAL)
		res_add(&st->phys, c.handle, c.size);
}

static void do_gem_info(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_gem_info i = { .handle = ref(&st->bo, a[0], NULL), .pad = a[1] };

	xioctl(K_GEM_INFO, st->fd, DRM_IOCTL_PAGODA_GEM_INFO, &i);
}

static void do_residency(struct state *st, const uint64_t *a)
{
	uint32_t handles[5];
	struct drm_pagoda_residency r = { .op = a[0], .count = a[1] < 4 ? a[1] + 1 : a[1] };
	void *p;
	int k;

	for (k = 0; k < 5; k++)
		handles[k] = ref(&st->bo, a[2 + k], NULL);
	if (r.count > 5 && r.count <= DRM_PAGODA_RESIDENCY_MAX)
		r.count = 5;
	bad_ptr(a[7], handles, &p);
	r.handles = (uintptr_t)p;
	xioctl(K_RESIDENCY, st->fd, DRM_IOCTL_PAGODA_RESIDENCY, &r);
}

static void do_set_budget(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_set_budget b = {
		.budget = a[0] < SMALL_LIMIT ? (a[0] % 8) * (vram_size / 4) : a[0],
	};

	xioctl(K_SET_BUDGET, st->fd, DRM_IOCTL_PAGODA_SET_BUDGET, &b);
}

static void do_madvise(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_gem_madvise m = {
		.handle = ref(&st->bo, a[0], NULL), .state = a[1], .pad = a[2],
	};

	xioctl(K_MADVISE, st->fd, DRM_IOCTL_PAGODA_GEM_MADVISE, &m);
}

/*
 * One VM operation from seven arguments: op | flags << 8 | pad << 16,
 * handle, va, size, offset, min_va, max_va. A VA below REF_LIMIT is a
 * VA an earlier call got (its size is then the size's default); a size
 * below REF_LIMIT is the resource's own (the allocation's for MAP).
 */
static void vm_op(struct state *st, const uint64_t *a, struct drm_pagoda_vm_op *op)
{
	uint64_t bo_size, va_size;

	memset(op, 0, sizeof(*op));
	op->op = a[0] & 0xff;
	op->flags = (a[0] >> 8) & 0xff;
	op->instance = a[0] >> 16;
	op->handle = ref(&st->bo, a[1], &bo_size);
	op->va = ref(&st->va, a[2], &va_size);
	switch (op->op) {
	case DRM_PAGODA_VM_OP_MAP:
		op->size = size_arg(a[3], bo_size);
		if (op->flags & DRM_PAGODA_VM_ZERO) {
			op->handle = 0;
			op->size = size_arg(a[3], va_size ? va_size : DRM_PAGODA_VA_ALIGN);
		}
		break;
	case DRM_PAGODA_VM_OP_RESERVE:
		op->size = a[3] < REF_LIMIT ? (a[3] % 32 + 1) * DRM_PAGODA_VA_ALIGN :
					      ref(NULL, a[3], NULL);
		op->handle = a[1] < REF_LIMIT ? 0 : op->handle;
		break;
	default:
		op->size = size_arg(a[3], va_size);
		op->handle = a[1] < REF_LIMIT ? 0 : op->handle;
	}
	op->offset = a[4] < REF_LIMIT ? 0 : ref(NULL, a[4], NULL);
	/* COPY's source: mostly a VA an earlier call got */
	if (op->op == DRM_PAGODA_VM_OP_COPY && a[4] < REF_LIMIT)
		op->offset = ref(&st->va, a[4], NULL);
	op->min_va = a[5] < REF_LIMIT ? 0 : ref(NULL, a[5], NULL);
	op->max_va = a[6] < REF_LIMIT ? 0 : ref(NULL, a[6], NULL);
}

/*
 * Arguments: count | bad pointer << 8, flags (low 3 bits: 5 a queued
 * bind, 6 an unknown flag; bit 3: a queued one waits for the in-sync
 * a1 >> 4), out sync, then 3 x 7 per op.
 */
static void do_vm_bind(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_sync in = { .handle = ref(&st->sync, a[1] >> 4, NULL) };
	struct drm_pagoda_vm_op ops[3];
	struct drm_pagoda_vm_bind b = {
		.flags = (a[1] & 7) == 5 ? DRM_PAGODA_VM_BIND_QUEUE : (a[1] & 7) == 6 ? 2 : 0,
	};
	unsigned int k, n = a[0] % 3 + 1;
	void *p;

	if (b.flags == DRM_PAGODA_VM_BIND_QUEUE && a[1] & 8) {
		b.in_syncs = (uintptr_t)&in;
		b.in_count = 1;
	}

	for (k = 0; k < n; k++)
		vm_op(st, a + 3 + 7 * k, &ops[k]);
	/* or a count the checks refuse: 0, or above the most */
	b.count = (a[0] & 0xff) < 200 ? n : a[0] & 1 ? 0 : DRM_PAGODA_VM_BIND_MAX_OPS + 1;
	bad_ptr(a[0] >> 16, ops, &p);
	b.ops = (uintptr_t)p;
	b.out_sync.handle = a[2] < REF_LIMIT + 1 ? ref(&st->sync, a[2], NULL) : 0;
	/* a queued bind's reservations are known once it ran: none are recorded */
	if (xioctl(K_VM_BIND, st->fd, DRM_IOCTL_PAGODA_VM_BIND, &b) || b.ops != (uintptr_t)ops ||
	    b.flags)
		return;
	for (k = 0; k < b.count && k < n; k++)
		if (ops[k].op == DRM_PAGODA_VM_OP_RESERVE || ops[k].op == DRM_PAGODA_VM_OP_MAP)
			res_add(&st->va, ops[k].va, ops[k].size);
}

static void do_ctx_create(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_ctx_create c = { .priority = a[0], .flags = a[1], .adapter = a[2] % 8 == 7 };

	if (!xioctl(K_CTX_CREATE, st->fd, DRM_IOCTL_PAGODA_CTX_CREATE, &c))
		res_add(&st->ctx, c.ctx_id, 0);
}

static void do_ctx_destroy(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_ctx_destroy d = { .ctx_id = ref(&st->ctx, a[0], NULL), .pad = a[1] };

	xioctl(K_CTX_DESTROY, st->fd, DRM_IOCTL_PAGODA_CTX_DESTROY, &d);
}

static void do_ctx_query(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_ctx_query q = { .ctx_id = ref(&st->ctx, a[0], NULL), .pad = a[1] };

	xioctl(K_CTX_QUERY, st->fd, DRM_IOCTL_PAGODA_CTX_QUERY, &q);
}

/* Sync arrays: @n entries from handle references @h and points @pt. */
static void syncs(struct state *st, struct drm_pagoda_sync *s, unsigned int n, const uint64_t *h,
		  uint64_t pt, uint64_t flags)
{
	unsigned int k;

	for (k = 0; k < n; k++) {
		s[k].handle = ref(&st->sync, h[k], NULL);
		s[k].point = pt < REF_LIMIT ? 0 : pt;
		s[k].flags = flags < REF_LIMIT ? 0 : flags;
	}
}

static void wait_sync(struct state *st, uint32_t handle, int64_t ms)
{
	struct drm_syncobj_wait w = {
		.handles = (uintptr_t)&handle, .count_handles = 1,
		.timeout_nsec = now_ns() + ms * 1000000,
		.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
	};

	if (handle)
		xioctl(K_SYNCOBJ_WAIT, st->fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
}

/*
 * Arguments: ctx, cmd, cmd_size (below REF_LIMIT: the buffer's own), in
 * count, -, out sync, flags, pad, wait, point, sync flags, cmd offset, bad
 * pointer, 4 in syncs.
 */
static void do_submit(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_sync in[4], out[1];
	uint64_t cmd_size;
	struct drm_pagoda_submit s = {
		.ctx_id = ref(&st->ctx, a[0], NULL),
		.cmd_va = ref(&st->cmd, a[1], &cmd_size) + (a[11] < REF_LIMIT ? 0 : a[11] & 0xffff),
		.in_count = a[3] < REF_LIMIT ? a[3] % 3 : a[3],
		.out_count = a[5] < REF_LIMIT ? 1 : 0,
		.flags = a[6] < REF_LIMIT ? 0 : a[6], .pad = a[7] < REF_LIMIT ? 0 : a[7],
	};
	void *p;

	s.cmd_size = size_arg(a[2], cmd_size);
	if (s.in_count > 4 && s.in_count <= DRM_PAGODA_SUBMIT_MAX_SYNCS)
		s.in_count = 4;
	syncs(st, in, 4, a + 13, a[9], a[10]);
	syncs(st, out, 1, a + 5, a[9], a[10]);
	bad_ptr(a[12], in, &p);
	s.in_syncs = (uintptr_t)p;
	s.out_syncs = (uintptr_t)out;
	if (!xioctl(K_SUBMIT, st->fd, DRM_IOCTL_PAGODA_SUBMIT, &s) && s.out_count &&
	    a[8] % 4 == 0)
		wait_sync(st, out[0].handle, 2000);
}

/*
 * A command buffer: a 64 KiB allocation (segments a6), mapped without
 * FIXED (flags a4), holding a mix (a0) of commands aimed at another VA
 * (a1) with a size (a2) and pattern (a5).
 */
static void do_cmdbuf(struct state *st, const uint64_t *a)
{
	struct drm_pagoda_gem_create c = {
		.size = DRM_PAGODA_VA_ALIGN, .segments = (a[6] % 7) + 1,
	};
	struct drm_pagoda_vm_op op = { .op = DRM_PAGODA_VM_OP_MAP };
	struct drm_pagoda_vm_bind b = { .ops = (uintptr_t)&op, .count = 1 };
	struct drm_pagoda_gem_info i = { 0 };
	struct pagoda_cmdbuf cb;
	uint64_t target = ref(&st->va, a[1], NULL), size = a[2] % (1 << 20);
	uint32_t values[4] = { 1, 2, 3, 4 };
	unsigned int k;
	void *map;

	c.preferred_segment = __builtin_ctz(c.segments);
	if (xioctl(K_GEM_CREATE, st->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &c))
		return;
	i.handle = c.handle;
	if (xioctl(K_GEM_INFO, st->fd, DRM_IOCTL_PAGODA_GEM_INFO, &i))
		return;
	map = mmap(NULL, c.size, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, i.mmap_offset);
	if (map == MAP_FAILED)
		return;
	pagoda_cmdbuf_init(&cb, map, c.size);
	for (k = 0; k < 4; k++) {
		switch ((a[0] >> (4 * k)) % 10) {
		case 0: case 1: case 2:
			pagoda_cmd_nop(&cb, 1 + a[3] % 64);
			break;
		case 3:
			pagoda_cmd_fill(&cb, target, size & ~3ull, a[5]);
			break;
		case 4:
			pagoda_cmd_signal(&cb, target, a[5]);
			break;
		case 5:
			pagoda_cmd_copy(&cb, target, target + size, size);
			break;
		case 6:
			pagoda_cmd_write_imm(&cb, target, values, 1 + a[3] % 4);
			break;
		case 7:
			pagoda_cmd_crc32(&cb, target, size, target + 4096);
			break;
		case 8:
			/* WAIT_FENCE: on zeroes, a value it already passed, mostly */
			pagoda_cmd_wait(&cb, target, a[5] % 64 ? 0 : a[5]);
			break;
		default:
			pagoda_cmd_call(&cb, target, (a[3] % 16) * 4);
		}
	}
	munmap(map, c.size);
	op.handle = c.handle;
	op.size = c.size;
	op.flags = a[4] % 8 ? 0 : (a[4] >> 3) & (DRM_PAGODA_VM_READ_ONLY | DRM_PAGODA_VM_NO_EXECUTE);
	if (xioctl(K_VM_BIND, st->fd, DRM_IOCTL_PAGODA_VM_BIND, &b))
		return;
	res_add(&st->bo, c.handle, c.size);
	res_add(&st->va, op.va, op.size);
	res_add(&st->cmd, op.va, cb.error ? 4 : cb.used_bytes);
}

/*
 * A physical-mode buffer over up to three allocations (a1..a3, a4 of
 * them, written as a8 says): fills, copies, a CRC and a fence at offsets
 * a12, sizes a13, a split (a11); then one field broken (a6 names it, a7
 * is the value).
 */
static void do_submit_phys(struct state *st, const uint64_t *a)
{
	static uint32_t cmds[1024];
	struct drm_pagoda_phys_patch patches[64];
	struct drm_pagoda_phys_alloc allocs[4] = { { 0 } };
	struct drm_pagoda_sync out = { .handle = ref(&st->sync, a[10], NULL) };
	struct drm_pagoda_submit_phys s = { .ctx_id = ref(&st->ctx, a[0], NULL) };
	struct pagoda_physbuf pb;
	unsigned int k, n = a[4] % 3 + 1;
	uint64_t off = a[12] % 8192 & ~3ull, len = 4 + (a[13] % 4096 & ~3ull);

	for (k = 0; k < n; k++) {
		/* physically accessed allocations, if the program made any */
		allocs[k].handle = ref(st->phys.n ? &st->phys : &st->bo, a[1 + k], NULL);
		allocs[k].flags = (a[8] >> k) & 1 ? DRM_PAGODA_PHYS_WRITE : 0;
	}
	pagoda_physbuf_init(&pb, cmds, sizeof(cmds), patches, ARRAY_SIZE(patches));
	for (k = 0; k < n; k++)
		pagoda_phys_bind(&pb, k, k, 0);
	pagoda_phys_fill(&pb, 0, off, len, a[7]);
	if (a[11] % 2)
		pagoda_phys_split(&pb);
	pagoda_phys_copy(&pb, 0, off, n - 1, off + len, len);
	if (a[11] % 3 == 0) {
		pagoda_phys_split(&pb);
		pagoda_phys_bind(&pb, 0, n - 1, 0);
	}
	pagoda_phys_crc32(&pb, n - 1, off, len, 0, 0);
	pagoda_phys_signal(&pb, 0, 8, a[7]);
	pagoda_physbuf_sort(&pb);
	s.cmds = (uintptr_t)cmds;
	s.cmd_size = pb.cb.used_bytes;
	s.allocs = (uintptr_t)allocs;
	s.alloc_count = n;
	s.patches = (uintptr_t)patches;
	s.patch_count = pb.patch_count;
	s.out_syncs = (uintptr_t)&out;
	s.out_count = out.handle ? 1 : 0;
	if (pb.patch_count)
		switch (a[6] % 16) {
		case 0: s.flags = a[7]; break;
		case 1: s.cmd_size = a[7] <= DRM_PAGODA_SUBMIT_MAX_SIZE ?
				     a[7] % (sizeof(cmds) + 1) : a[7]; break;
		case 2: allocs[a[7] % n].handle = a[9]; break;
		case 3: allocs[a[7] % n].flags = a[9]; break;
		case 4: patches[a[7] % pb.patch_count].alloc_index = a[9]; break;
		case 5: patches[a[7] % pb.patch_count].slot_id = a[9]; break;
		case 6: patches[a[7] % pb.patch_count].alloc_offset = a[9]; break;
		case 7: patches[a[7] % pb.patch_count].patch_offset = a[9]; break;
		case 8: patches[a[7] % pb.patch_count].split_offset = a[9]; break;
		case 9: cmds[a[7] % (pb.cb.used_bytes / 4)] = a[9]; break;
		case 10: s.alloc_count = a[9] <= DRM_PAGODA_PHYS_MAX_ALLOCS ?
					 a[9] % (ARRAY_SIZE(allocs) + 1) : a[9]; break;
		case 11: s.patch_count = a[9] <= DRM_PAGODA_PHYS_MAX_PATCHES ?
					 a[9] % (ARRAY_SIZE(patches) + 1) : a[9]; break;
		case 12: s.in_count = a[9] % 2; s.in_syncs = (uintptr_t)&out; break;
		default: break;	/* well formed */
		}
	if (!xioctl(K_SUBMIT_PHYS, st->fd, DRM_IOCTL_PAGODA_SUBMIT_PHYS, &s) && out.handle &&
	    a[5] % 4 == 0)
		wait_sync(st, out.handle, 2000);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static void finding(const char *fmt, ...);

/*
 * CPU access: page a1 of allocation a0, read or written (a2) with a3. A
 * SIGBUS there is a finding: the allocation exists and may be mapped.
 */
static void do_mmap(struct state *st, const uint64_t *a)
{
	uint64_t size;
	struct drm_pagoda_gem_info i = { .handle = ref(&st->bo, a[0], &size) };
	volatile uint32_t *volatile p;
	uint64_t at;

	if (!size || ioctl(st->fd, DRM_IOCTL_PAGODA_GEM_INFO, &i) || !i.mmap_offset)
		return;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, i.mmap_offset);
	if (p == MAP_FAILED)
		return;
	at = (a[1] % (size / 4096)) * 1024 + a[3] % 1024;
	if (sigsetjmp(bus_jmp, 1)) {
		finding("SIGBUS on a CPU access to a mapped allocation (segment %u)", i.segment);
		munmap((void *)p, size);
		return;
	}
	if (a[2] & 1)
		p[at] = a[3];
	else
		(void)p[at];
	if (a[2] & 2 && st->nmaps < MAX_RES) {	/* kept until the file closes */
		st->maps[st->nmaps] = (void *)p;
		st->map_size[st->nmaps++] = size;
	} else {
		munmap((void *)p, size);
	}
}

static void do_gem_close(struct state *st, const uint64_t *a)
{
	struct drm_gem_close c = { .handle = ref(&st->bo, a[0], NULL) };

	xioctl(K_GEM_CLOSE, st->fd, DRM_IOCTL_GEM_CLOSE, &c);
}

static void do_syncobj_create(struct state *st, const uint64_t *a)
{
	struct drm_syncobj_create c = { .flags = a[0] % 4 ? 0 : DRM_SYNCOBJ_CREATE_SIGNALED };

	if (!xioctl(K_SYNCOBJ_CREATE, st->fd, DRM_IOCTL_SYNCOBJ_CREATE, &c))
		res_add(&st->sync, c.handle, 0);
}

static void do_syncobj_wait(struct state *st, const uint64_t *a)
{
	wait_sync(st, ref(&st->sync, a[0], NULL), a[1] % 500);
}

/* PRIME: allocation a0 exported, imported by a second file, used there. */
static void do_prime(struct state *st, const uint64_t *a)
{
	struct drm_prime_handle ex = { .handle = ref(&st->bo, a[0], NULL),
				       .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_prime_handle im = { 0 };
	struct drm_pagoda_gem_info i = { 0 };

	if (xioctl(K_PRIME, st->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ex))
		return;
	if (st->fd2 < 0)
		st->fd2 = open(render_node, O_RDWR | O_CLOEXEC);
	im.fd = ex.fd;
	if (st->fd2 >= 0 && !xioctl(K_PRIME, st->fd2, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im)) {
		i.handle = im.handle;
		xioctl(K_GEM_INFO, st->fd2, DRM_IOCTL_PAGODA_GEM_INFO, &i);
		if (a[1] & 1) {
			struct drm_gem_close c = { .handle = im.handle };

			ioctl(st->fd2, DRM_IOCTL_GEM_CLOSE, &c);
		}
	}
	close(ex.fd);
}

/* The debugfs hooks: evict a segment (a1), a paging fault, the selftest. */
static void do_debugfs(struct state *st, const uint64_t *a)
{
	static const char *const hook[] = { "evict", "evict", "evict", "evict", "paging_fault",
					    "paging_selftest" };
	char path[PT_PATH_MAX + 32], value[24];

	(void)st;
	if (!debugfs_dir[0])
		return;
	snprintf(path, sizeof(path), "%s/%s", debugfs_dir, hook[a[0] % ARRAY_SIZE(hook)]);
	snprintf(value, sizeof(value), "%llu",
		 (unsigned long long)(a[1] < SMALL_LIMIT ? a[1] % 4 : a[1]));
	pt_write_file(path, value);
}

typedef void (*call_fn)(struct state *st, const uint64_t *a);

static const call_fn call_fns[NKINDS] = {
	do_get_param, do_gem_create, do_gem_info, do_residency, do_set_budget, do_madvise,
	do_vm_bind, do_ctx_create, do_ctx_destroy, do_submit, do_ctx_query, do_submit_phys,
	do_cmdbuf, do_mmap, do_gem_close, do_syncobj_create, do_syncobj_wait, do_prime,
	do_debugfs,
};

/* ---- outcomes and coverage ------------------------------------------------ */

static const struct prog *running;

static void print_prog(const struct prog *p)
{
	unsigned int k, j;

	for (k = 0; k < p->n; k++) {
		printf("    %s(", kind_name[p->c[k].kind]);
		for (j = 0; j < NARGS; j++)
			printf("%s%#llx", j ? ", " : "", (unsigned long long)p->c[k].a[j]);
		printf(")\n");
	}
}

static void record(int kind, int err)
{
	__atomic_fetch_add(&sh->errnos[kind][err > ERRNO_MAX ? ERRNO_MAX : err], 1,
			   __ATOMIC_RELAXED);
	if (!err || is_documented(kind, err))
		return;
	if (__atomic_exchange_n(&sh->reported[kind][err > ERRNO_MAX ? ERRNO_MAX : err], 1,
				__ATOMIC_RELAXED))
		return;
	finding("%s failed with %s (errno %d), which docs/driver.md does not list for it",
		kind_name[kind], strerror(err), err);
}

/* Something the driver must not do: printed with the program that saw it. */
static void finding(const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(&sh->findings, 1, __ATOMIC_RELAXED);
	printf("KFUZZ-FINDING worker %d: ", worker);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("; the program:\n");
	if (running)
		print_prog(running);
	fflush(stdout);
}

/* New edges (and PCs) of the last run into the shared map: how many. */
static unsigned int cover_merge(void)
{
	unsigned long n = __atomic_load_n(&cover[0], __ATOMIC_RELAXED), k;
	uint64_t prev = 0;
	unsigned int fresh = 0;

	if (n > COVER_WORDS - 1)
		n = COVER_WORDS - 1;
	for (k = 0; k < n; k++) {
		uint64_t pc = cover[k + 1], h = (pc ^ (prev << 1)) * 0x9e3779b97f4a7c15ull;
		uint32_t bit = h >> (64 - EDGE_BITS), slot = (pc * 0x9e3779b97f4a7c15ull) >> 47;
		uint8_t mask = 1u << (bit & 7), old;

		prev = pc;
		old = __atomic_fetch_or(&sh->edges[bit >> 3], mask, __ATOMIC_RELAXED);
		if (old & mask)
			continue;
		fresh++;
		__atomic_fetch_add(&sh->nedges, 1, __ATOMIC_RELAXED);
		for (;; slot = (slot + 1) % PC_SLOTS) {
			uint64_t expected = 0;

			if (__atomic_load_n(&sh->pcs[slot], __ATOMIC_RELAXED) == pc)
				break;
			if (__atomic_compare_exchange_n(&sh->pcs[slot], &expected, pc, 0,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				__atomic_fetch_add(&sh->npcs, 1, __ATOMIC_RELAXED);
				break;
			}
			if (expected == pc)
				break;
		}
	}
	return fresh;
}

static int kcov_open(void)
{
	kcov_fd = open(KCOV_PATH, O_RDWR | O_CLOEXEC);
	if (kcov_fd < 0)
		return -errno;
	if (ioctl(kcov_fd, KCOV_INIT_TRACE, (unsigned long)COVER_WORDS))
		return -errno;
	cover = mmap(NULL, COVER_WORDS * sizeof(unsigned long), PROT_READ | PROT_WRITE,
		     MAP_SHARED, kcov_fd, 0);
	if (cover == MAP_FAILED)
		return -errno;
	if (ioctl(kcov_fd, KCOV_ENABLE, KCOV_TRACE_PC))
		return -errno;
	return 0;
}

/* Run @p on a file of its own; returns the edges no program reached before. */
static unsigned int run(const struct prog *p)
{
	struct state st = { .fd2 = -1 };
	unsigned int k, fresh;

	st.fd = open(render_node, O_RDWR | O_CLOEXEC);
	if (st.fd < 0)
		return 0;
	running = p;
	__atomic_store_n(&cover[0], 0, __ATOMIC_RELAXED);
	for (k = 0; k < p->n; k++) {
		__atomic_fetch_add(&sh->calls[p->c[k].kind], 1, __ATOMIC_RELAXED);
		call_fns[p->c[k].kind](&st, p->c[k].a);
	}
	for (k = 0; k < st.nmaps; k++)
		munmap(st.maps[k], st.map_size[k]);
	close(st.fd);	/* teardown with work in flight, counted too */
	if (st.fd2 >= 0)
		close(st.fd2);
	fresh = cover_merge();
	running = NULL;
	__atomic_fetch_add(&sh->execs, 1, __ATOMIC_RELAXED);
	return fresh;
}

/* ---- generation and mutation ---------------------------------------------- */

/* Calls weighted towards the ones that build state. */
static const uint8_t kind_weight[NKINDS] = {
	[K_GET_PARAM] = 1, [K_GEM_CREATE] = 8, [K_GEM_INFO] = 2, [K_RESIDENCY] = 5,
	[K_SET_BUDGET] = 2, [K_MADVISE] = 3, [K_VM_BIND] = 8, [K_CTX_CREATE] = 4,
	[K_CTX_DESTROY] = 2, [K_SUBMIT] = 6, [K_CTX_QUERY] = 2, [K_SUBMIT_PHYS] = 5,
	[K_CMDBUF] = 5, [K_MMAP] = 3, [K_GEM_CLOSE] = 2, [K_SYNCOBJ_CREATE] = 3,
	[K_SYNCOBJ_WAIT] = 2, [K_PRIME] = 1, [K_DEBUGFS] = 1,
};

static int rnd_kind(void)
{
	unsigned int total = 0, k, pick;

	for (k = 0; k < NKINDS; k++)
		total += kind_weight[k];
	pick = below(total);
	for (k = 0; pick >= kind_weight[k]; k++)
		pick -= kind_weight[k];
	return k;
}

/* A call of @kind with arguments that mostly pass the checks. */
static void gen_call_of(struct call *c, int kind)
{
	unsigned int k;

	c->kind = kind;
	for (k = 0; k < NARGS; k++)
		c->a[k] = below(REF_LIMIT);
	switch (c->kind) {
	case K_GEM_CREATE:
		/* now and then LinkInstanced or LinkMirrored (a link's only) */
		c->a[1] = below(4) ? below(2) * DRM_PAGODA_BO_PHYSICAL : below(128);
		c->a[2] = below(7) + 1;
		c->a[3] = __builtin_ctz(c->a[2]) + (below(8) ? 0 : 1);
		c->a[4] = below(3);
		c->a[5] = below(3);
		c->a[6] = 0;
		break;
	case K_RESIDENCY:
		c->a[0] = below(2);
		c->a[1] = below(4);
		break;
	case K_MADVISE:
		c->a[1] = below(2);
		c->a[2] = 0;
		break;
	case K_GEM_INFO:
	case K_CTX_DESTROY:
	case K_CTX_QUERY:
		c->a[1] = 0;	/* pad */
		break;
	case K_VM_BIND:
		c->a[0] = below(3);
		c->a[2] = REF_LIMIT + 1;	/* no out sync */
		for (k = 0; k < 3; k++) {
			uint64_t *o = c->a + 3 + 7 * k;

			o[0] = 1 + below(6);
			if (o[0] == DRM_PAGODA_VM_OP_MAP)
				o[0] |= (uint64_t)(below(4) ? 0 : below(16)) << 8;
			else if (o[0] == DRM_PAGODA_VM_OP_PROTECT)
				o[0] |= (uint64_t)below(4) << 9;
		}
		break;
	case K_CTX_CREATE:
		c->a[0] = below(3);
		c->a[1] = 0;
		/* on a link, a context of the second GPU now and then */
		c->a[2] = below(4) ? 0 : 7;
		break;
	case K_SUBMIT:
		c->a[3] = below(3) ? 0 : 1 + below(2);
		break;
	case K_SUBMIT_PHYS:
		/* half of them well formed (13 .. 15), half with one field broken */
		c->a[6] = below(2) ? 13 + below(3) : below(13);
		c->a[8] = below(8);
		break;
	case K_CMDBUF:
		c->a[0] = rnd();
		c->a[2] = below(4) * 4096;
		break;
	case K_DEBUGFS:
		c->a[0] = below(6);
		c->a[1] = below(4);
		break;
	default:
		break;
	}
}

static void gen_call(struct call *c)
{
	gen_call_of(c, rnd_kind());
}

/*
 * Mostly, a program starts with what the others take: a context, a
 * syncobj, a physically accessed allocation and another one, a command
 * buffer, a mapping.
 */
static void gen_prog(struct prog *p)
{
	static const uint8_t prologue[] = {
		K_CTX_CREATE, K_SYNCOBJ_CREATE, K_GEM_CREATE, K_GEM_CREATE, K_CMDBUF, K_VM_BIND,
	};
	unsigned int k = 0;

	p->n = 4 + below(MAX_CALLS - 4);
	if (below(4))
		for (; k < ARRAY_SIZE(prologue); k++) {
			gen_call_of(&p->c[k], prologue[k]);
			if (k == 2) {	/* 64 KiB, physically accessed, preferring VRAM */
				p->c[k].a[0] = 1;
				p->c[k].a[1] = DRM_PAGODA_BO_PHYSICAL;
				p->c[k].a[2] = 3;
				p->c[k].a[3] = 1;
			}
			if (prologue[k] == K_VM_BIND) {
				p->c[k].a[0] = 0;	/* one op: a MAP without FIXED */
				p->c[k].a[3] = DRM_PAGODA_VM_OP_MAP;
			}
		}
	for (; k < p->n; k++)
		gen_call(&p->c[k]);
}

static void mutate(struct prog *p)
{
	unsigned int rounds = 1 + below(3), k;

	while (rounds--) {
		switch (below(8)) {
		case 0:
			if (p->n < MAX_CALLS) {
				k = below(p->n + 1);
				memmove(&p->c[k + 1], &p->c[k], (p->n - k) * sizeof(p->c[0]));
				gen_call(&p->c[k]);
				p->n++;
			}
			break;
		case 1:
			if (p->n > 1) {
				k = below(p->n);
				memmove(&p->c[k], &p->c[k + 1], (p->n - k - 1) * sizeof(p->c[0]));
				p->n--;
			}
			break;
		case 2:
			if (ncorpus) {	/* splice: a tail of another program */
				const struct prog *o = &corpus_progs[below(ncorpus)];
				unsigned int at = below(p->n + 1), from = below(o->n);

				while (at < MAX_CALLS && from < o->n)
					p->c[at++] = o->c[from++];
				p->n = at > p->n ? at : p->n;
			}
			break;
		case 3:
			k = below(p->n);
			p->c[k].a[below(NARGS)] ^= 1ull << below(64);
			break;
		default:
			k = below(p->n);
			p->c[k].a[below(NARGS)] = rnd_value();
		}
	}
}

static void corpus_add(const struct prog *p)
{
	unsigned int k = ncorpus < CORPUS_MAX ? ncorpus++ : below(CORPUS_MAX);

	corpus_progs[k] = *p;
	__atomic_fetch_add(&sh->corpus, 1, __ATOMIC_RELAXED);
}

static void on_report(int sig)
{
	(void)sig;
	kernel_reported = 1;
}

/* The kernel reported while these ran (one of them, or another process's). */
static void print_recent(void)
{
	unsigned long k;

	kernel_reported = 0;
	printf("KFUZZ-RECENT worker %d: its last programs before the kernel's report, oldest "
	       "first:\n", worker);
	for (k = nrecent > RECENT ? nrecent - RECENT : 0; k < nrecent; k++) {
		printf("  program %lu:\n", k);
		print_prog(&recent[k % RECENT]);
	}
	fflush(stdout);
}

static void fuzz(uint64_t seed, uint64_t deadline_ns)
{
	struct prog p;

	signal(SIGUSR1, on_report);
	signal(SIGBUS, on_sigbus);
	rng = seed ? seed : 1;
	if (kcov_open()) {
		printf("worker %d: KCOV: %s\n", worker, strerror(errno));
		exit(2);
	}
	while (now_ns() < deadline_ns) {
		if (!ncorpus || !below(10)) {
			gen_prog(&p);
		} else {
			p = corpus_progs[below(ncorpus)];
			mutate(&p);
		}
		recent[nrecent++ % RECENT] = p;
		if (run(&p))
			corpus_add(&p);
		if (kernel_reported)
			print_recent();
	}
	exit(0);
}

/* A line of the kernel log that starts a report (guest-init.sh's list). */
static int report_line(const char *line)
{
	static const char *const starts[] = {
		"BUG:", "WARNING:", "Oops", "UBSAN:", "kernel BUG", "INFO: task",
		"possible recursive locking", "unreferenced object", "ODEBUG:",
	};
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(starts); k++)
		if (strstr(line, starts[k]))
			return 1;
	return 0;
}

/*
 * Until the fuzzing processes end: each kernel report is printed as it
 * comes, and the processes print the programs they just ran. Returns
 * how many processes did not end well.
 */
static int watch_kernel(const pid_t *pids, unsigned int n)
{
	unsigned int k, left = n;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC), bad = 0, status;
	char line[1024];
	ssize_t len;
	pid_t pid;

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	while (left) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno != EINTR)
			break;
		if (pid > 0) {
			left--;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				printf("a fuzzing process ended with status %#x\n", status);
				bad++;
			}
			continue;
		}
		pt_sleep_ms(200);
		while (fd >= 0 && (len = read(fd, line, sizeof(line) - 1)) > 0) {
			line[len] = 0;
			if (!report_line(line))
				continue;
			printf("KFUZZ-KERNEL-REPORT %s", strchr(line, ';') ? strchr(line, ';') + 1 : line);
			fflush(stdout);
			for (k = 0; k < n; k++)
				kill(pids[k], SIGUSR1);
		}
	}
	if (fd >= 0)
		close(fd);
	return bad;
}

static void print_errnos(void)
{
	unsigned int kind, e;

	printf("calls and their results (count x errno; ok: success):\n");
	for (kind = 0; kind < NKINDS; kind++) {
		printf("  %-15s %7llu:", kind_name[kind], (unsigned long long)sh->calls[kind]);
		for (e = 0; e <= ERRNO_MAX; e++)
			if (sh->errnos[kind][e])
				printf(" %llu %s", (unsigned long long)sh->errnos[kind][e],
				       e ? strerrorname_np(e) ?: "?" : "ok");
		printf("\n");
	}
}

int main(void)
{
	unsigned int procs = pt_cmdline_number("pagoda_guest.kfuzz_procs", 3), k;
	uint64_t secs = pt_cmdline_number("pagoda_guest.kfuzz_seconds", 40);
	uint64_t seed = pt_cmdline_number("pagoda_guest.kfuzz_seed", 0);
	uint64_t start = now_ns();
	int fd, failed;
	char bdf[PT_NAME_MAX];
	pid_t pids[MAX_PROCS];

	if (access(KCOV_PATH, R_OK | W_OK)) {
		printf("no %s: this kernel has no KCOV (the debug kernel has it)\n", KCOV_PATH);
		return 77;
	}
	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0 || pt_render_node(bdf, render_node, sizeof(render_node)) ||
	    pt_get_param(fd, DRM_PAGODA_PARAM_VRAM_SIZE, &vram_size)) {
		pt_fail("no Pagoda render node");
		return pt_exit();
	}
	close(fd);
	pagoda_debugfs_dir(debugfs_dir, sizeof(debugfs_dir));
	if (!seed)
		seed = start ^ getpid();
	printf("pagoda-kfuzz: %u processes, %llu s, seed %#llx (pagoda_guest.kfuzz_seed replays it)\n",
	       procs, (unsigned long long)secs, (unsigned long long)seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		pt_fail("shared map: %s", strerror(errno));
		return pt_exit();
	}
	fflush(stdout);
	for (k = 0; k < procs && k < MAX_PROCS; k++) {
		pids[k] = fork();
		if (!pids[k]) {
			worker = k;
			fuzz(seed + 0x9e3779b97f4a7c15ull * (k + 1), start + secs * 1000000000ull);
		}
	}
	failed = watch_kernel(pids, k);
	printf("pagoda-kfuzz: %llu programs in %.0f s (%.1f/s), corpus %llu, driver PCs %llu, "
	       "edges %llu\n", (unsigned long long)sh->execs, (now_ns() - start) / 1e9,
	       sh->execs / ((now_ns() - start) / 1e9), (unsigned long long)sh->corpus,
	       (unsigned long long)sh->npcs, (unsigned long long)sh->nedges);
	print_errnos();
	pt_check(!failed, "every fuzzing process ran to its end");
	pt_check(sh->execs > 0 && sh->npcs > 0, "programs ran and reached driver code (%llu PCs)",
		 (unsigned long long)sh->npcs);
	pt_check(!sh->findings, "every Pagoda ioctl failed only with a documented errno "
		 "(%llu findings above)", (unsigned long long)sh->findings);
	return pt_exit();
}
