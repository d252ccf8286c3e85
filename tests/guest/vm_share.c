// SPDX-License-Identifier: MIT
/*
 * Sharing memory between GPU address spaces, and keeping them apart, with
 * real render jobs whose results the CPU checks:
 *
 * - multi-mapping: one allocation mapped four times in one process (three
 *   whole mappings at different VAs and a partial one of its second
 *   64 KiB). Jobs write through one VA and read, copy and CRC32 through
 *   the others, and every byte matches a CPU model of the commands; the
 *   four mappings read the same bytes. Unmapping one mapping leaves the
 *   others working, and an access through it faults. Unmapping the middle
 *   4 KiB of the 64 KiB mapping splits it: a fill running into the hole
 *   writes up to it and faults there (fence EFAULT, context banned,
 *   CTX_QUERY: FAULTED, INVALID_PTE, the VA of the hole), while a new
 *   context uses the pages on both sides of the hole, and the page behind
 *   the hole through the other mappings.
 * - PRIME: an allocation exported by this process (drmPrimeHandleToFD) is
 *   imported by a forked child with its own render node, mapped at another
 *   VA of its own space and written by the child's job; a job of this
 *   process reads it back (CRC32) and matches; then this process's job
 *   writes it and the child's job reads it back.
 * - isolation: a child process with its own node cannot name our
 *   allocations (a handle number valid here is ENOENT there, or names its
 *   own allocation of another size; our mmap offset is refused), cannot
 *   run a command buffer at our VA (ENOENT), and its job that uses our VAs
 *   faults in its own context only: our data stays unchanged and our jobs
 *   keep running, during and after.
 * - 100 processes on the device's 63 user contexts: each opens its node,
 *   maps a 64 KiB allocation and a command buffer and runs 5 jobs filling
 *   the allocation with (process, job); two barriers (pipes) make all of
 *   them submit their first job together and their other four only once
 *   all 100 address spaces have run one job, so the driver lends and
 *   steals contexts. Every process must see every job's result.
 *
 * debugfs, where the driver has the files (each check is skipped
 * otherwise): once all 100 processes have run a job, "vms" lists 101
 * address spaces and every user context lent to exactly one of them; the
 * fault log ("faults") holds exactly the faults this test caused, at
 * their VAs; at the end, with every file closed, "vms" shows no address
 * space and no page table left, and "allocations" no more allocations
 * than before the test (page tables live in allocations of their own).
 */
#include <poll.h>
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

/* The many-processes test. */
#define NPROC		100
#define NPROC_JOBS	5
#define NPROC_SIZE	(64 * KIB)
/* How long the parent waits for all children at a barrier. */
#define BARRIER_MS	(240 * 1000)

/* The device's debugfs directory ("" without one). */
static char dbg_dir[PT_PATH_MAX];
/* The VAs of the faults this test causes, in order (debugfs "faults"). */
static uint64_t expected_faults[16];
static unsigned int n_expected_faults;

static void expect_fault(uint64_t va)
{
	if (n_expected_faults < ARRAY_SIZE(expected_faults))
		expected_faults[n_expected_faults++] = va;
}

/* What debugfs "vms" says. */
struct vms_state {
	int spaces, tables;		/* the summary line; -1 without it */
	unsigned int holding;		/* spaces holding a device context */
	unsigned int bad_slots;		/* slots held twice or out of range */
};

static int vms_read(unsigned int contexts, struct vms_state *st);
/* Spaces of files the kernel keeps open (the display's fbdev client), before the test. */
static int kernel_spaces;
static long long debugfs_count(const char *name, const char *suffix);

/* A CPU model of what FILL32, COPY and WRITE_IMM do to an allocation's bytes. */
static void model_fill(uint8_t *m, uint64_t off, uint64_t size, uint32_t pattern)
{
	uint64_t i;

	for (i = 0; i < size; i++)
		m[off + i] = pattern >> (8 * (i % 4));
}

static void model_copy(uint8_t *m, uint64_t src, uint64_t dst, uint64_t size)
{
	memmove(m + dst, m + src, size);
}

/* The first byte where @a and @b differ, or -1. */
static long long first_diff(const void *a, const void *b, size_t size)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < size; i++)
		if (x[i] != y[i])
			return i;
	return -1;
}

static void fill_words(void *mem, uint64_t size, uint32_t seed)
{
	uint32_t *p = mem;
	uint64_t i;

	for (i = 0; i < size / 4; i++)
		p[i] = (uint32_t)i * 2654435761u ^ seed;
}

/* ------------------------------------------------------------------ */
/* 1. one allocation, several mappings                                 */

#define MM_SIZE		(256 * KIB)
#define MM_PART_OFF	(64 * KIB)	/* the partial mapping's offset and size */
#define MM_PART_SIZE	(64 * KIB)
#define MM_HOLE		(32 * KIB)	/* the page of it unmapped, in it */

/* Compare the allocation with the model; report @what. */
static int mm_compare(const struct pt_buf *x, const uint8_t *model, const char *what)
{
	long long diff = first_diff(x->bo.map, model, MM_SIZE);

	return pt_check(diff < 0,
			"multi-map: %s: every byte as the CPU model says (first difference at %lld)",
			what, diff);
}

static void test_multi_map(struct pagoda_dev *dev)
{
	static const uint32_t imm[] = { 0x1a2b3c4d, 0x5e6f7081, 0x92a3b4c5, 0xd6e7f809 };
	struct pt_buf x, res, cmd;
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_ctx_query q;
	uint64_t va[3], part = 0, lo, hi;
	uint32_t ctx[4], *r;
	uint8_t *model;
	unsigned int i, j, overlap = 0;
	int ret, banned;

	model = malloc(MM_SIZE);
	ret = model ? 0 : -ENOMEM;
	for (i = 0; i < 4 && !ret; i++)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx[i]);
	if (!ret)
		ret = pt_buf_create(dev, &x, MM_SIZE, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &res, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	va[0] = x.va;
	va[1] = va[2] = 0;
	/* two more whole mappings, and one of its second 64 KiB */
	if (!ret)
		ret = pagoda_vm_map(dev, x.bo.handle, 0, MM_SIZE, 0, &va[1], 0, 0, 0);
	if (!ret)
		ret = pagoda_vm_map(dev, x.bo.handle, 0, MM_SIZE, 0, &va[2], 0, 0, 0);
	if (!ret)
		ret = pagoda_vm_map(dev, x.bo.handle, MM_PART_OFF, MM_PART_SIZE, 0, &part, 0, 0, 0);
	if (!pt_check(!ret,
		      "multi-map: 256 KiB mapped at three VAs and its second 64 KiB at a fourth (%d)",
		      ret))
		return;
	printf("multi-map: VAs 0x%llx 0x%llx 0x%llx, partial 0x%llx\n", (unsigned long long)va[0],
	       (unsigned long long)va[1], (unsigned long long)va[2], (unsigned long long)part);
	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++) {
			uint64_t a = i < 3 ? va[i] : part, b = j < 3 ? va[j] : part;
			uint64_t as = i < 3 ? MM_SIZE : MM_PART_SIZE, bs = j < 3 ? MM_SIZE : MM_PART_SIZE;

			overlap += a < b + bs && b < a + as;
		}
	pt_check(!overlap, "multi-map: the four mappings are at different, disjoint VAs");

	fill_words(x.bo.map, MM_SIZE, 0x5eed0001);
	memcpy(model, x.bo.map, MM_SIZE);
	memset(res.bo.map, 0, 64 * KIB);
	r = res.bo.map;

	/* write through one mapping, read and copy through the others */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, va[0], 16 * KIB, 0xa11ce001);
	model_fill(model, 0, 16 * KIB, 0xa11ce001);
	pagoda_cmd_write_imm(&cb, va[1] + 160 * KIB, imm, 4);
	memcpy(model + 160 * KIB, imm, sizeof(imm));
	/* the fill's result, read through va[2], into the partial mapping */
	pagoda_cmd_copy(&cb, va[2], part, 16 * KIB);
	model_copy(model, 0, MM_PART_OFF, 16 * KIB);
	pagoda_cmd_copy(&cb, part + 16 * KIB, va[0] + 192 * KIB, 16 * KIB);
	model_copy(model, MM_PART_OFF + 16 * KIB, 192 * KIB, 16 * KIB);
	pagoda_cmd_crc32(&cb, va[1], 16 * KIB, res.va);
	pagoda_cmd_crc32(&cb, part, MM_PART_SIZE, res.va + 4);
	pagoda_cmd_copy(&cb, va[2] + 160 * KIB, res.va + 64, sizeof(imm));
	ret = pt_run(dev, ctx[0], &cmd, &cb);
	pt_check(!ret, "multi-map: a job writing through one VA and reading through the others ran (%d)",
		 ret);
	mm_compare(&x, model, "fill, immediates and copies through different VAs");
	pt_check(r[0] == pt_crc32(model, 16 * KIB) &&
		 r[1] == pt_crc32(model + MM_PART_OFF, MM_PART_SIZE) &&
		 !memcmp(&r[16], imm, sizeof(imm)),
		 "multi-map: CRC32s through va[1] and the partial mapping, immediates read back through va[2] (0x%08x 0x%08x, CPU 0x%08x 0x%08x)",
		 r[0], r[1], pt_crc32(model, 16 * KIB), pt_crc32(model + MM_PART_OFF, MM_PART_SIZE));

	/* every mapping reads the same bytes */
	memset(r, 0, 64);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	for (i = 0; i < 3; i++) {
		pagoda_cmd_crc32(&cb, va[i], MM_SIZE, res.va + 4 * i);
		pagoda_cmd_crc32(&cb, va[i] + MM_PART_OFF, MM_PART_SIZE, res.va + 16 + 4 * i);
	}
	pagoda_cmd_crc32(&cb, part, MM_PART_SIZE, res.va + 28);
	ret = pt_run(dev, ctx[0], &cmd, &cb);
	pt_check(!ret && r[0] == pt_crc32(model, MM_SIZE) && r[1] == r[0] && r[2] == r[0] &&
		 r[4] == pt_crc32(model + MM_PART_OFF, MM_PART_SIZE) && r[5] == r[4] &&
		 r[6] == r[4] && r[7] == r[4],
		 "multi-map: the three whole mappings and the partial one read the same bytes (%d: 0x%08x 0x%08x 0x%08x / 0x%08x 0x%08x 0x%08x 0x%08x)",
		 ret, r[0], r[1], r[2], r[4], r[5], r[6], r[7]);

	/* unmap one whole mapping: the other three keep working */
	ret = pagoda_vm_unmap(dev, va[1], MM_SIZE, 0);
	pt_check(!ret, "multi-map: unmap the second whole mapping (%d)", ret);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, va[0] + 224 * KIB, 4 * KIB, 0xbeef0003);
	model_fill(model, 224 * KIB, 4 * KIB, 0xbeef0003);
	pagoda_cmd_copy(&cb, va[2] + 224 * KIB, part + 48 * KIB, 4 * KIB);
	model_copy(model, 224 * KIB, MM_PART_OFF + 48 * KIB, 4 * KIB);
	pagoda_cmd_crc32(&cb, part, MM_PART_SIZE, res.va);
	ret = pt_run(dev, ctx[0], &cmd, &cb);
	banned = pt_ctx_banned(dev, ctx[0], &q);
	pt_check(!ret && !banned && r[0] == pt_crc32(model + MM_PART_OFF, MM_PART_SIZE),
		 "multi-map: after it, a job through the other three mappings runs (%d, banned %d, CRC32 0x%08x)",
		 ret, banned, r[0]);
	mm_compare(&x, model, "after one mapping went");

	/* and an access through the unmapped one faults, in its own context */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, va[1] + 4 * KIB, 4, 0xdead0004);
	pagoda_cmd_fill(&cb, va[0] + 4 * KIB, 4, 0xdead0005);	/* not reached */
	ret = pt_run(dev, ctx[1], &cmd, &cb);
	expect_fault(va[1] + 4 * KIB);
	banned = pt_ctx_banned(dev, ctx[1], &q);
	pt_check(ret == -EFAULT && banned == 1 && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 q.fault_va == va[1] + 4 * KIB && q.fault_access == PAGODA_ACCESS_WRITE &&
		 (q.fault_code == PAGODA_FAULT_INVALID_PTE || q.fault_code == PAGODA_FAULT_ROOT_RANGE),
		 "multi-map: a write through the unmapped VA faults its job (%d) and bans its context (status 0x%x code %u va 0x%llx level %u)",
		 ret, q.status, q.fault_code, (unsigned long long)q.fault_va, q.fault_level);
	mm_compare(&x, model, "nothing written through the unmapped VA");

	/* unmap the middle 4 KiB of the partial mapping: a fill into the hole faults */
	ret = pagoda_vm_unmap(dev, part + MM_HOLE, 4 * KIB, 0);
	pt_check(!ret, "multi-map: unmap 4 KiB in the middle of the 64 KiB mapping (%d)", ret);
	ret = pagoda_vm_unmap(dev, part + MM_HOLE, 4 * KIB, 0);
	pt_check(ret == -ENOENT, "multi-map: unmapping the hole again: ENOENT (%d)", ret);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, va[0] + 0x100, 4, 0x5a5a0005);
	model_fill(model, 0x100, 4, 0x5a5a0005);
	/* 32 bytes from 16 before the hole: the first 16 are written, then it faults */
	pagoda_cmd_fill(&cb, part + MM_HOLE - 16, 32, 0xfa170006);
	model_fill(model, MM_PART_OFF + MM_HOLE - 16, 16, 0xfa170006);
	pagoda_cmd_fill(&cb, va[0] + 0x104, 4, 0x5a5a0007);	/* not reached */
	ret = pt_run(dev, ctx[2], &cmd, &cb);
	expect_fault(part + MM_HOLE);
	banned = pt_ctx_banned(dev, ctx[2], &q);
	pt_check(ret == -EFAULT && banned == 1 && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 q.fault_va == part + MM_HOLE && q.fault_code == PAGODA_FAULT_INVALID_PTE &&
		 q.fault_access == PAGODA_ACCESS_WRITE && q.fault_level == 0,
		 "multi-map: a fill running into the hole faults (%d): context banned, INVALID_PTE at the hole's first byte (status 0x%x code %u va 0x%llx, hole 0x%llx, access %u level %u)",
		 ret, q.status, q.fault_code, (unsigned long long)q.fault_va,
		 (unsigned long long)(part + MM_HOLE), q.fault_access, q.fault_level);
	mm_compare(&x, model, "the job wrote up to the hole and stopped there");
	ret = pagoda_submit(dev, ctx[2], cmd.va, 4, NULL, 0, NULL, 0);
	pt_check(ret == -ECANCELED, "multi-map: the banned context takes no job (%d)", ret);

	/* a new context: both neighbours of the hole, and its page through the others */
	memset(r, 0, 64 * KIB);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, part + MM_HOLE - 4 * KIB, 4 * KIB, 0x0e160007);
	model_fill(model, MM_PART_OFF + MM_HOLE - 4 * KIB, 4 * KIB, 0x0e160007);
	pagoda_cmd_fill(&cb, part + MM_HOLE + 4 * KIB, 4 * KIB, 0x0e160009);
	model_fill(model, MM_PART_OFF + MM_HOLE + 4 * KIB, 4 * KIB, 0x0e160009);
	pagoda_cmd_copy(&cb, part + MM_HOLE - 4 * KIB, res.va + 4 * KIB, 4 * KIB);
	pagoda_cmd_copy(&cb, part + MM_HOLE + 4 * KIB, res.va + 8 * KIB, 4 * KIB);
	pagoda_cmd_crc32(&cb, va[0] + MM_PART_OFF + MM_HOLE, 4 * KIB, res.va);
	pagoda_cmd_fill(&cb, va[2] + MM_PART_OFF + MM_HOLE + 8, 8, 0x0e160008);
	pagoda_cmd_crc32(&cb, va[0] + MM_PART_OFF + MM_HOLE - 4 * KIB, 12 * KIB, res.va + 4);
	ret = pt_run(dev, ctx[3], &cmd, &cb);
	lo = pt_crc32(model + MM_PART_OFF + MM_HOLE, 4 * KIB);
	model_fill(model, MM_PART_OFF + MM_HOLE + 8, 8, 0x0e160008);
	hi = pt_crc32(model + MM_PART_OFF + MM_HOLE - 4 * KIB, 12 * KIB);
	banned = pt_ctx_banned(dev, ctx[3], &q);
	pt_check(!ret && !banned,
		 "multi-map: a new context uses the pages beside the hole (%d, banned %d)", ret, banned);
	pt_check(!memcmp((uint8_t *)r + 4 * KIB, model + MM_PART_OFF + MM_HOLE - 4 * KIB, 4 * KIB) &&
		 !memcmp((uint8_t *)r + 8 * KIB, model + MM_PART_OFF + MM_HOLE + 4 * KIB, 4 * KIB),
		 "multi-map: the pages before and after the hole read back through the split mapping");
	pt_check(r[0] == lo && r[1] == hi,
		 "multi-map: the hole's page read and written through the other mappings (CRC32 0x%08x 0x%08x, CPU 0x%08x 0x%08x)",
		 r[0], r[1], (uint32_t)lo, (uint32_t)hi);
	mm_compare(&x, model, "after the jobs around the hole");

	/* freeing the reservations unmaps what is left, split mapping included */
	ret = pagoda_vm_free(dev, part, MM_PART_SIZE);
	pt_check(!ret, "multi-map: free the split mapping's reservation (%d)", ret);
	ret = pagoda_vm_free(dev, va[1], MM_SIZE);
	pt_check(!ret, "multi-map: free the unmapped mapping's reservation (%d)", ret);
	ret = pagoda_vm_free(dev, va[2], MM_SIZE);
	pt_check(!ret, "multi-map: free the third mapping with its reservation (%d)", ret);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &res);
	pt_buf_destroy(dev, &x);
	for (i = 0; i < 4; i++)
		pagoda_ctx_destroy(dev, ctx[i]);
	free(model);
}

/* ------------------------------------------------------------------ */
/* 2. PRIME between two processes                                       */

#define PR_SIZE		(256 * KIB)

/* What the importer tells the exporter. */
struct prime_msg {
	int32_t status;		/* 0, or the step that failed */
	int32_t err;
	uint64_t va;		/* where it mapped the allocation */
	uint32_t crc_cpu;	/* of what it wrote, computed by the CPU */
	uint32_t crc_gpu;	/* and by its own job, through its VA */
};

/* The child: import, map, write with a job; later read the parent's bytes with a job. */
static int prime_child(int buf_fd, int to_parent, int from_parent)
{
	struct prime_msg msg = { 0 };
	struct pagoda_dev dev;
	struct pagoda_bo bo = { 0 };
	struct pt_buf src, res, cmd, pad;
	struct pagoda_cmdbuf cb;
	uint32_t ctx, expect;
	uint8_t *model;
	int ret;

	model = malloc(PR_SIZE);
	if (!model)
		return 2;
	msg.status = 1;
	msg.err = pagoda_open(&dev);
	if (!msg.err) {
		msg.status = 2;
		msg.err = drmPrimeFDToHandle(dev.fd, buf_fd, &bo.handle) ? -errno : 0;
	}
	close(buf_fd);
	if (!msg.err) {
		msg.status = 3;
		msg.err = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	}
	/* a mapping of its own first, so that the import lands elsewhere than in the parent */
	if (!msg.err)
		msg.err = pt_buf_create(&dev, &pad, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!msg.err)
		msg.err = pt_buf_create(&dev, &src, PR_SIZE, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!msg.err)
		msg.err = pt_buf_create(&dev, &res, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!msg.err)
		msg.err = pt_buf_create(&dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!msg.err) {
		struct drm_pagoda_gem_info info;

		msg.status = 4;
		msg.err = pagoda_bo_info(&dev, bo.handle, &info);
		if (!msg.err && info.size != PR_SIZE)
			msg.err = -EINVAL;
		bo.size = PR_SIZE;
	}
	if (!msg.err) {
		msg.status = 5;
		msg.err = pagoda_vm_map(&dev, bo.handle, 0, PR_SIZE, 0, &msg.va, 0, 0, 0);
	}
	if (!msg.err) {
		/* a pattern of its own: copied from its buffer, a fill, immediates */
		static const uint32_t imm[] = { 0xc41d0001, 0xc41d0002, 0xc41d0003 };

		fill_words(src.bo.map, PR_SIZE, 0xc41d0000);
		memcpy(model, src.bo.map, PR_SIZE);
		pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
		pagoda_cmd_copy(&cb, src.va, msg.va, PR_SIZE - 64 * KIB);
		pagoda_cmd_fill(&cb, msg.va + PR_SIZE - 64 * KIB, 64 * KIB, 0xc41dc41d);
		model_fill(model, PR_SIZE - 64 * KIB, 64 * KIB, 0xc41dc41d);
		pagoda_cmd_write_imm(&cb, msg.va + 1000, imm, 3);
		memcpy(model + 1000, imm, sizeof(imm));
		pagoda_cmd_crc32(&cb, msg.va, PR_SIZE, res.va);
		msg.status = 6;
		msg.err = pt_run(&dev, ctx, &cmd, &cb);
		msg.crc_cpu = pt_crc32(model, PR_SIZE);
		msg.crc_gpu = *(uint32_t *)res.bo.map;
	}
	if (!msg.err)
		msg.status = 0;
	if (write(to_parent, &msg, sizeof(msg)) != sizeof(msg) || msg.status)
		return 3;

	/* the parent's job wrote it: read it with ours, compare with the parent's CRC32 */
	if (read(from_parent, &expect, sizeof(expect)) != sizeof(expect))
		return 4;
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_crc32(&cb, msg.va, PR_SIZE, res.va + 4);
	ret = pt_run(&dev, ctx, &cmd, &cb);
	if (ret)
		return 5;
	if (((uint32_t *)res.bo.map)[1] != expect)
		return 6;
	pagoda_vm_free(&dev, msg.va, PR_SIZE);
	pagoda_bo_free(&dev, &bo);
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &res);
	pt_buf_destroy(&dev, &src);
	pt_buf_destroy(&dev, &pad);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	free(model);
	return 0;
}

static void test_prime(struct pagoda_dev *dev)
{
	struct pt_buf shared, res, cmd;
	struct pagoda_cmdbuf cb;
	struct prime_msg msg;
	int up[2], down[2], buf_fd = -1, ret, status;
	uint32_t ctx, crc, *r;
	uint8_t *model;
	pid_t pid;

	model = malloc(PR_SIZE);
	ret = model ? 0 : -ENOMEM;
	if (!ret)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	/* above 8 MiB: the child maps it low, at another VA */
	if (!ret)
		ret = pt_buf_create_at(dev, &shared, PR_SIZE, SEG(SYSTEM) | SEG(VRAM),
				       DRM_PAGODA_SEGMENT_VRAM, 0, 8 * MIB);
	if (!ret)
		ret = pt_buf_create(dev, &res, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret && (pipe(up) || pipe(down)))
		ret = -errno;
	if (!pt_check(!ret, "prime: set up (%d)", ret))
		return;
	memset(shared.bo.map, 0x33, PR_SIZE);
	ret = drmPrimeHandleToFD(dev->fd, shared.bo.handle, DRM_RDWR | DRM_CLOEXEC, &buf_fd);
	if (!pt_check(!ret, "prime: export the allocation as a dma-buf (%s)",
		      ret ? strerror(errno) : "done"))
		return;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* a process of its own: it drops our DRM file */
		close(dev->fd);
		close(up[0]);
		close(down[1]);
		_exit(prime_child(buf_fd, up[1], down[0]));
	}
	close(buf_fd);
	close(up[1]);
	close(down[0]);

	memset(&msg, 0, sizeof(msg));
	ret = read(up[0], &msg, sizeof(msg)) == sizeof(msg) ? 0 : -EPIPE;
	if (pt_check(!ret && !msg.status,
		     "prime: the child imported it, mapped it at its own VA and wrote it with a job (step %d: %d)",
		     msg.status, msg.err)) {
		printf("prime: VA here 0x%llx, in the child 0x%llx\n",
		       (unsigned long long)shared.va, (unsigned long long)msg.va);
		pt_check(msg.va != shared.va, "prime: the two processes map it at different VAs");
		pt_check(msg.crc_gpu == msg.crc_cpu,
			 "prime: the child's job read back what it wrote (CRC32 0x%08x, CPU 0x%08x)",
			 msg.crc_gpu, msg.crc_cpu);
		/* our job reads it through our VA */
		r = res.bo.map;
		r[0] = 0;
		pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
		pagoda_cmd_crc32(&cb, shared.va, PR_SIZE, res.va);
		ret = pt_run(dev, ctx, &cmd, &cb);
		pt_check(!ret && r[0] == msg.crc_cpu && pt_crc32(shared.bo.map, PR_SIZE) == r[0],
			 "prime: our job reads the child's bytes (%d: CRC32 0x%08x, child's 0x%08x, our CPU mapping 0x%08x)",
			 ret, r[0], msg.crc_cpu, pt_crc32(shared.bo.map, PR_SIZE));

		/* our job writes it, the child's reads it */
		memcpy(model, shared.bo.map, PR_SIZE);
		pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
		pagoda_cmd_fill(&cb, shared.va + 4 * KIB, 100 * KIB, 0xa0a0a0a1);
		model_fill(model, 4 * KIB, 100 * KIB, 0xa0a0a0a1);
		pagoda_cmd_copy(&cb, shared.va + 128 * KIB, shared.va + 200 * KIB, 50 * KIB);
		model_copy(model, 128 * KIB, 200 * KIB, 50 * KIB);
		ret = pt_run(dev, ctx, &cmd, &cb);
		crc = pt_crc32(model, PR_SIZE);
		pt_check(!ret && first_diff(shared.bo.map, model, PR_SIZE) < 0,
			 "prime: our job wrote it through our VA (%d)", ret);
		if (write(down[1], &crc, sizeof(crc)) != sizeof(crc))
			pt_fail("prime: tell the child");
	}
	close(down[1]);
	status = -1;
	waitpid(pid, &status, 0);
	pt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "prime: the child's job read our bytes through its VA (exit status %d)",
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	close(up[0]);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &res);
	pt_buf_destroy(dev, &shared);
	pagoda_ctx_destroy(dev, ctx);
	free(model);
}

/* ------------------------------------------------------------------ */
/* 3. isolation between two processes                                   */

#define ISO_MIN_VA	(16 * MIB)	/* our mappings; the child's stay below */
#define ISO_BOS		3

struct iso_parent {
	struct pt_buf bos[ISO_BOS];	/* 64, 128, 192 KiB; the last holds the data */
	struct pt_buf cmd;
	uint64_t mmap_offset;		/* of the data allocation */
};

/* The child: its own node; our handles, offsets and VAs name nothing of ours there. */
static int iso_child(const struct iso_parent *a)
{
	const struct pt_buf *data = &a->bos[ISO_BOS - 1];
	struct pagoda_dev dev;
	struct drm_pagoda_gem_info info;
	struct drm_pagoda_ctx_query q;
	struct pagoda_cmdbuf cb;
	struct pt_buf own, cmd;
	uint32_t ctx, ctx2;
	unsigned int i;
	void *map;
	int ret, fd, banned;

	pt_failures = 0;
	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx2);
	/* allocations of sizes none of ours has: their handles are some of our numbers */
	if (!ret)
		ret = pt_buf_create(&dev, &own, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "isolation child: set up its own file (%d)", ret))
		return 1;
	pt_check(own.va + own.bo.size <= ISO_MIN_VA && cmd.va + cmd.bo.size <= ISO_MIN_VA,
		 "isolation child: its mappings lie below the parent's (0x%llx, 0x%llx)",
		 (unsigned long long)own.va, (unsigned long long)cmd.va);

	/* our handle numbers: unknown there, or one of its own allocations */
	for (i = 0; i < ISO_BOS; i++) {
		uint32_t handle = a->bos[i].bo.handle;
		const struct pt_buf *mine = handle == own.bo.handle ? &own :
					 handle == cmd.bo.handle ? &cmd : NULL;
		uint64_t va = 0;

		memset(&info, 0, sizeof(info));
		ret = pagoda_bo_info(&dev, handle, &info);
		pt_check((ret == -ENOENT && !mine) ||
			 (!ret && mine && info.size == mine->bo.size &&
			  info.size != a->bos[i].bo.size),
			 "isolation child: the parent's handle %u (%llu KiB) is %s here (%d, %llu KiB)",
			 handle, (unsigned long long)(a->bos[i].bo.size / KIB),
			 mine ? "its own allocation, of another size" : "unknown", ret,
			 (unsigned long long)(info.size / KIB));
		if (mine)
			continue;
		ret = pagoda_vm_map(&dev, handle, 0, a->bos[i].bo.size, 0, &va, 0, 0, 0);
		pt_check(ret == -ENOENT, "isolation child: mapping the parent's handle %u: ENOENT (%d)",
			 handle, ret);
		ret = drmPrimeHandleToFD(dev.fd, handle, DRM_CLOEXEC, &fd) ? -errno : 0;
		pt_check(ret == -ENOENT, "isolation child: exporting the parent's handle %u: ENOENT (%d)",
			 handle, ret);
		if (!ret)
			close(fd);
	}
	map = mmap(NULL, data->bo.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev.fd,
		   (off_t)a->mmap_offset);
	ret = map == MAP_FAILED ? -errno : 0;
	pt_check(map == MAP_FAILED, "isolation child: mmap of the parent's mmap offset refused (%d)", ret);
	if (map != MAP_FAILED)
		munmap(map, data->bo.size);

	/* a command buffer at the parent's VA is not ours to run */
	ret = pagoda_submit(&dev, ctx, a->cmd.va, 4, NULL, 0, NULL, 0);
	pt_check(ret == -ENOENT, "isolation child: submitting at the parent's command VA: ENOENT (%d)",
		 ret);

	/* a job writing and reading at the parent's data VA faults, here */
	memset(own.bo.map, 0, own.bo.size);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, own.va, 4, 0x0b0b0001);
	pagoda_cmd_fill(&cb, data->va + 64, 64, 0xbadbad01);
	pagoda_cmd_copy(&cb, data->va, own.va + 64, 64);
	pagoda_cmd_fill(&cb, own.va + 4, 4, 0x0b0b0002);	/* not reached */
	ret = pt_run(&dev, ctx, &cmd, &cb);
	banned = pt_ctx_banned(&dev, ctx, &q);
	pt_check(ret == -EFAULT && banned == 1 && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 q.fault_va == data->va + 64 && q.fault_access == PAGODA_ACCESS_WRITE &&
		 (q.fault_code == PAGODA_FAULT_INVALID_PTE || q.fault_code == PAGODA_FAULT_ROOT_RANGE),
		 "isolation child: its job writing at the parent's VA faults (%d): context banned at that VA (status 0x%x code %u va 0x%llx level %u)",
		 ret, q.status, q.fault_code, (unsigned long long)q.fault_va, q.fault_level);
	pt_check(((uint32_t *)own.bo.map)[0] == 0x0b0b0001 && ((uint32_t *)own.bo.map)[1] == 0,
		 "isolation child: its job ran up to the fault and no further");

	/* reading there faults too, in another context */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_crc32(&cb, data->va, data->bo.size, own.va + 8);
	ret = pt_run(&dev, ctx2, &cmd, &cb);
	banned = pt_ctx_banned(&dev, ctx2, &q);
	pt_check(ret == -EFAULT && banned == 1 && q.fault_va == data->va &&
		 q.fault_access == PAGODA_ACCESS_READ && ((uint32_t *)own.bo.map)[2] == 0,
		 "isolation child: its job reading at the parent's VA faults too (%d, status 0x%x code %u va 0x%llx access %u)",
		 ret, q.status, q.fault_code, (unsigned long long)q.fault_va, q.fault_access);
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &own);
	pagoda_ctx_destroy(&dev, ctx2);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return pt_failures ? 1 : 0;
}

static void test_isolation(struct pagoda_dev *main_dev)
{
	static const uint64_t sizes[ISO_BOS] = { 64 * KIB, 128 * KIB, 192 * KIB };
	struct iso_parent a;
	struct pt_buf *data = &a.bos[ISO_BOS - 1], res;
	struct drm_pagoda_gem_info info;
	struct drm_pagoda_ctx_query q;
	struct pagoda_cmdbuf cb;
	struct pagoda_dev dev;
	unsigned int i, jobs_ok = 0, jobs = 0;
	uint32_t ctx, crc, *r;
	int ret, status, banned;
	pid_t pid;

	/* a file of its own, so that our handles are the first numbers */
	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	for (i = 0; i < ISO_BOS && !ret; i++)
		ret = pt_buf_create_at(&dev, &a.bos[i], sizes[i], SEG(VRAM),
				       DRM_PAGODA_SEGMENT_VRAM, 0, ISO_MIN_VA);
	if (!ret)
		ret = pt_buf_create_at(&dev, &a.cmd, 4 * KIB, SEG(SYSTEM),
				       DRM_PAGODA_SEGMENT_SYSTEM, 0, ISO_MIN_VA);
	if (!ret)
		ret = pt_buf_create_at(&dev, &res, 4 * KIB, SEG(SYSTEM),
				       DRM_PAGODA_SEGMENT_SYSTEM, 0, ISO_MIN_VA);
	if (!ret)
		ret = pagoda_bo_info(&dev, data->bo.handle, &info);
	if (!pt_check(!ret, "isolation: set up (%d)", ret))
		return;
	a.mmap_offset = info.mmap_offset;
	printf("isolation: handles %u %u %u, data at VA 0x%llx, commands at 0x%llx\n",
	       a.bos[0].bo.handle, a.bos[1].bo.handle, a.bos[2].bo.handle,
	       (unsigned long long)data->va, (unsigned long long)a.cmd.va);
	fill_words(data->bo.map, data->bo.size, 0x150a0001);
	crc = pt_crc32(data->bo.map, data->bo.size);
	r = res.bo.map;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(main_dev->fd);
		close(dev.fd);
		_exit(iso_child(&a));
	}

	/* our jobs meanwhile: read our data, write the other allocations */
	for (i = 0; i < 20; i++) {
		r[0] = 0;
		pagoda_cmdbuf_init(&cb, a.cmd.bo.map, a.cmd.bo.size);
		pagoda_cmd_crc32(&cb, data->va, data->bo.size, res.va);
		pagoda_cmd_fill(&cb, a.bos[i % 2].va, a.bos[i % 2].bo.size, 0x150b0000 + i);
		ret = pt_run(&dev, ctx, &a.cmd, &cb);
		jobs++;
		jobs_ok += !ret && r[0] == crc &&
			   ((uint32_t *)a.bos[i % 2].bo.map)[a.bos[i % 2].bo.size / 4 - 1] ==
			   0x150b0000 + i;
	}
	status = -1;
	waitpid(pid, &status, 0);
	expect_fault(data->va + 64);
	expect_fault(data->va);
	pt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "isolation: every check of the child passed (exit status %d)",
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	pt_check(jobs_ok == jobs, "isolation: our %u jobs while the child ran all ran right (%u)", jobs,
		 jobs_ok);

	/* after its faults: our data unchanged, our context fine, our jobs run */
	pt_check(pt_crc32(data->bo.map, data->bo.size) == crc,
		 "isolation: our data is unchanged (CPU CRC32 0x%08x, before 0x%08x)",
		 pt_crc32(data->bo.map, data->bo.size), crc);
	banned = pt_ctx_banned(&dev, ctx, &q);
	pt_check(banned == 0 && q.status == 0, "isolation: our context is not banned (status 0x%x)",
		 q.status);
	r[0] = r[1] = 0;
	pagoda_cmdbuf_init(&cb, a.cmd.bo.map, a.cmd.bo.size);
	pagoda_cmd_crc32(&cb, data->va, data->bo.size, res.va);
	pagoda_cmd_fill(&cb, data->va + 64, 64, 0x150c0001);
	pagoda_cmd_crc32(&cb, data->va, data->bo.size, res.va + 4);
	ret = pt_run(&dev, ctx, &a.cmd, &cb);
	{
		uint8_t *m = malloc(data->bo.size);
		uint32_t crc2 = 0;

		if (m) {
			fill_words(m, data->bo.size, 0x150a0001);
			model_fill(m, 64, 64, 0x150c0001);
			crc2 = pt_crc32(m, data->bo.size);
			pt_check(first_diff(m, data->bo.map, data->bo.size) < 0,
				 "isolation: our later job writes our data as asked");
			free(m);
		}
		pt_check(!ret && r[0] == crc && r[1] == crc2,
			 "isolation: our later job runs and reads our data (%d: 0x%08x 0x%08x, CPU 0x%08x 0x%08x)",
			 ret, r[0], r[1], crc, crc2);
	}
	pt_buf_destroy(&dev, &res);
	pt_buf_destroy(&dev, &a.cmd);
	for (i = 0; i < ISO_BOS; i++)
		pt_buf_destroy(&dev, &a.bos[i]);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
}

/* ------------------------------------------------------------------ */
/* 4. 100 processes on 63 contexts                                       */

/* What each child leaves in memory shared with the parent. */
struct proc_result {
	int32_t step;			/* the last step begun (PS_*) */
	int32_t err;			/* its error, 0 when it passed */
	uint32_t bad_words;		/* words not as the job should have left them */
	uint32_t job;			/* the job that went wrong */
	uint64_t va;			/* of the data allocation */
	int64_t t_first, t_last;	/* first submission, last completion (us) */
};

enum { PS_OPEN = 1, PS_SETUP, PS_JOB, PS_DONE };

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ll + ts.tv_nsec / 1000;
}

/* Block until the parent closes the pipe (EOF). */
static void barrier_wait(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static int proc_job(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *data, struct pt_buf *cmd,
		    unsigned int id, unsigned int job, struct proc_result *res)
{
	uint32_t pattern = (id << 16) | job, tag[2] = { id, job }, *p = data->bo.map, i, bad = 0;
	struct pagoda_cmdbuf cb;
	int ret;

	pagoda_cmdbuf_init(&cb, cmd->bo.map, cmd->bo.size);
	pagoda_cmd_fill(&cb, data->va, NPROC_SIZE - 8, pattern);
	pagoda_cmd_write_imm(&cb, data->va + NPROC_SIZE - 8, tag, 2);
	if (!res->t_first)
		res->t_first = now_us();
	ret = pt_run(dev, ctx, cmd, &cb);
	res->t_last = now_us();
	for (i = 0; i < NPROC_SIZE / 4 - 2; i++)
		bad += p[i] != pattern;
	bad += p[i] != id;
	bad += p[i + 1] != job;
	if (ret || bad) {
		res->err = ret ? ret : -EIO;
		res->bad_words = bad;
		res->job = job;
		return -1;
	}
	return 0;
}

static int proc_child(unsigned int id, int ready, int go1, int go2, struct proc_result *res)
{
	struct pagoda_dev dev;
	struct pt_buf data, cmd;
	uint32_t ctx;
	unsigned int job;
	int ok;

	res->step = PS_OPEN;
	res->err = pagoda_open(&dev);
	if (!res->err) {
		res->step = PS_SETUP;
		res->err = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	}
	if (!res->err)
		res->err = pt_buf_create_at(&dev, &data, NPROC_SIZE, SEG(SYSTEM) | SEG(VRAM),
					    DRM_PAGODA_SEGMENT_VRAM, 0, 0);
	if (!res->err)
		res->err = pt_buf_create(&dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!res->err)
		memset(data.bo.map, 0, NPROC_SIZE);
	ok = !res->err;
	res->va = ok ? data.va : 0;

	/* every process set up before any submits; job 0 of all before job 1 of any */
	if (write(ready, "r", 1) != 1)
		ok = 0;
	barrier_wait(go1);
	if (ok) {
		res->step = PS_JOB;
		ok = !proc_job(&dev, ctx, &data, &cmd, id, 0, res);
	}
	if (write(ready, "s", 1) != 1)
		ok = 0;
	barrier_wait(go2);
	for (job = 1; ok && job < NPROC_JOBS; job++)
		ok = !proc_job(&dev, ctx, &data, &cmd, id, job, res);
	if (!ok)
		return 1;
	res->step = PS_DONE;
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &data);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return 0;
}

/* Read @count bytes from @fd within @ms; returns how many came. */
static unsigned int barrier_collect(int fd, unsigned int count, int ms)
{
	int64_t end = now_us() + ms * 1000ll;
	unsigned int got = 0;
	char buf[NPROC];

	while (got < count) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = (end - now_us()) / 1000;
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			break;
		n = read(fd, buf, count - got < sizeof(buf) ? count - got : sizeof(buf));
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

static void test_many_processes(struct pagoda_dev *main_dev)
{
	struct proc_result *res;
	struct vms_state st;
	int ready[2], go1[2], go2[2], status;
	unsigned int i, started = 0, passed = 0, got, shown = 0, most = 0;
	uint64_t contexts = 0;
	long long allocations;
	int64_t t0;
	pid_t pids[NPROC];

	pagoda_query(main_dev, DRM_PAGODA_PARAM_NUM_CONTEXTS, &contexts);
	printf("processes: %u processes, the device has %llu contexts (%llu for them)\n", NPROC,
	       (unsigned long long)contexts, (unsigned long long)(contexts ? contexts - 1 : 0));
	pt_check(contexts && NPROC > contexts - 1,
		 "processes: more processes (%u) than user contexts (%llu)", NPROC,
		 (unsigned long long)(contexts ? contexts - 1 : 0));
	res = mmap(NULL, NPROC * sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		   -1, 0);
	if (!pt_check(res != MAP_FAILED && !pipe(ready) && !pipe(go1) && !pipe(go2),
		      "processes: shared results and barrier pipes"))
		return;
	memset(res, 0, NPROC * sizeof(*res));
	fflush(stdout);
	t0 = now_us();
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(main_dev->fd);
			close(ready[0]);
			close(go1[1]);
			close(go2[1]);
			_exit(proc_child(i, ready[1], go1[0], go2[0], &res[i]));
		}
		if (pids[i] < 0) {
			pt_fail("processes: fork %u: %s", i, strerror(errno));
			break;
		}
		started++;
	}
	close(ready[1]);
	close(go1[0]);
	close(go2[0]);

	got = barrier_collect(ready[0], started, BARRIER_MS);
	pt_check(started == NPROC && got == started,
		 "processes: %u of %u set up (own file, context, 64 KiB allocation and command buffer mapped) and waiting, after %lld ms",
		 got, NPROC, (long long)(now_us() - t0) / 1000);
	close(go1[1]);
	got = barrier_collect(ready[0], started, BARRIER_MS);
	pt_check(got == started, "processes: %u of %u ran their first job together, in %lld ms", got,
		 started, (long long)(now_us() - t0) / 1000);
	/* every space has run a job, none runs one now: every user context is lent, once */
	if (!vms_read(contexts, &st))
		pt_check(st.spaces == NPROC + 1 + kernel_spaces && st.holding == contexts - 1 &&
			 !st.bad_slots,
			 "processes: debugfs vms: %d address spaces (%u expected), %u holding a device context (%llu expected), %u slots held twice or out of range",
			 st.spaces, NPROC + 1 + kernel_spaces, st.holding, (unsigned long long)(contexts - 1),
			 st.bad_slots);
	else
		printf("processes: no debugfs \"vms\": context lending not checked\n");
	allocations = debugfs_count("allocations", " allocations");
	if (allocations >= 0)
		pt_check(allocations >= 3 * NPROC,
			 "processes: debugfs lists %lld allocations meanwhile (each process: data, commands, page tables)",
			 allocations);
	close(go2[1]);

	for (i = 0; i < started; i++) {
		status = -1;
		waitpid(pids[i], &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && res[i].step == PS_DONE) {
			passed++;
			continue;
		}
		if (shown++ < 10)
			pt_fail("processes: process %u: step %d, error %d, job %u with %u words wrong (exit status 0x%x)",
				i, res[i].step, res[i].err, res[i].job, res[i].bad_words, status);
	}
	close(ready[0]);
	/* the most processes between their first submission and last completion at once */
	for (i = 0; i < started; i++) {
		unsigned int j, n = 0;

		for (j = 0; j < started; j++)
			n += res[j].t_first && res[j].t_first <= res[i].t_first &&
			     res[i].t_first <= res[j].t_last;
		if (n > most)
			most = n;
	}
	printf("processes: up to %u processes had jobs under way at once\n", most);
	pt_check(passed == NPROC,
		 "processes: %u of %u processes saw all %u of their jobs fill their allocation with (process, job), in %lld ms",
		 passed, NPROC, NPROC_JOBS, (long long)(now_us() - t0) / 1000);
	munmap(res, NPROC * sizeof(*res));
}

/* ------------------------------------------------------------------ */
/* debugfs                                                              */

/* The Pagoda device's debugfs directory: the one with an "allocations" file. */
/* The number of the first line of debugfs @name ending in @suffix ("N allocations"), or -1. */
static long long debugfs_count(const char *name, const char *suffix)
{
	char path[PT_PATH_MAX + PT_NAME_MAX], line[512];
	long long count = -1;
	FILE *f;

	if (!dbg_dir[0])
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dbg_dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (count < 0 && fgets(line, sizeof(line), f)) {
		char *end;
		long long v = strtoll(line, &end, 10);

		if (end != line && !strncmp(end, suffix, strlen(suffix)))
			count = v;
	}
	fclose(f);
	return count;
}

/*
 * debugfs "vms": the summary line ("N address spaces, M page tables") and
 * the slots the spaces hold ("vm ... slot S"): how many hold one and
 * whether any slot is held twice or is out of 1 .. @contexts - 1.
 * Returns 0, or -1 without the file or its summary.
 */
static int vms_read(unsigned int contexts, struct vms_state *st)
{
	char path[PT_PATH_MAX + PT_NAME_MAX], line[512];
	unsigned char seen[256] = { 0 };
	unsigned int a, b, slot;
	FILE *f;

	memset(st, 0, sizeof(*st));
	st->spaces = st->tables = -1;
	if (!dbg_dir[0])
		return -1;
	snprintf(path, sizeof(path), "%s/vms", dbg_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u address spaces, %u page tables", &a, &b) == 2) {
			st->spaces = a;
			st->tables = b;
		} else if (!strncmp(line, "  slot ", 7) && sscanf(line, "  slot %u", &slot) == 1 &&
			   slot) {
			st->holding++;
			if (slot >= contexts || slot >= sizeof(seen) || seen[slot]++)
				st->bad_slots++;
		}
	}
	fclose(f);
	return st->spaces < 0 ? -1 : 0;
}

/*
 * The fault log of debugfs "faults" from record @from on: are the records
 * since then those this test expects (their VAs, in order)?
 */
static void check_fault_log(long long before)
{
	char path[PT_PATH_MAX + PT_NAME_MAX], line[512];
	unsigned long long va;
	long long count = debugfs_count("faults", " faults"), first, i = 0;
	unsigned int matched = 0, seen = 0;
	FILE *f;

	if (before < 0 || count < 0) {
		printf("debugfs: no \"faults\" file: the fault log is not checked\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/faults", dbg_dir);
	f = fopen(path, "r");
	/* the file lists the last PAGODA_FAULT_LOG (16) records */
	first = count > 16 ? count - 16 : 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " va ");

		if (!p || sscanf(p, " va %llx", &va) != 1)
			continue;
		if (first + i >= before) {
			unsigned int k = first + i - before;

			seen++;
			matched += k < n_expected_faults && va == expected_faults[k];
			printf("debugfs: fault %u: %s", k, line);
		}
		i++;
	}
	if (f)
		fclose(f);
	pt_check(count - before == n_expected_faults && matched == n_expected_faults,
		 "debugfs: %lld fault records during the test, %u expected, %u at the expected VAs",
		 count - before, n_expected_faults, matched);
}

static void check_debugfs_leftovers(long long allocations_before, long long faults_before)
{
	struct vms_state st;
	long long after = -1;
	int i, ret = -1;

	/* files close asynchronously at the end: give freeing a moment */
	for (i = 0; i < 100; i++) {
		after = debugfs_count("allocations", " allocations");
		ret = vms_read(256, &st);
		if (after <= allocations_before &&
		    (ret || (st.spaces == kernel_spaces && !st.tables)))
			break;
		pt_sleep_ms(50);
	}
	pt_check(allocations_before >= 0 && after >= 0 && after <= allocations_before,
		 "debugfs: %lld allocations left, %lld before the test (page tables live in allocations)",
		 after, allocations_before);
	if (ret)
		printf("debugfs: no \"vms\" file (or no summary in it): the page-table check is skipped\n");
	else
		pt_check(st.spaces == kernel_spaces && !st.tables,
			 "debugfs: vms: %d address spaces (%d of the kernel's files) and %d page tables left once every file is closed",
			 st.spaces, kernel_spaces, st.tables);
	check_fault_log(faults_before);
}

int main(void)
{
	struct pagoda_dev dev;
	long long allocations = -1, faults = -1;
	uint64_t levels = 0, va_bits = 0;
	int ret;

	if (pt_debugfs_dir(dbg_dir, sizeof(dbg_dir))) {
		struct vms_state st;

		allocations = debugfs_count("allocations", " allocations");
		faults = debugfs_count("faults", " faults");
		if (!vms_read(256, &st))
			kernel_spaces = st.spaces;
	} else {
		dbg_dir[0] = 0;
	}
	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node (%d)", ret))
		return pt_exit();
	pagoda_query(&dev, DRM_PAGODA_PARAM_MMU_LEVELS, &levels);
	pagoda_query(&dev, DRM_PAGODA_PARAM_VA_BITS, &va_bits);
	printf("device: %llu page-table levels, %llu VA bits; debugfs %s: %lld allocations, %lld faults before the test\n",
	       (unsigned long long)levels, (unsigned long long)va_bits,
	       dbg_dir[0] ? dbg_dir : "(none)", allocations, faults);

	test_multi_map(&dev);
	test_prime(&dev);
	test_isolation(&dev);
	test_many_processes(&dev);
	pagoda_close(&dev);

	if (dbg_dir[0])
		check_debugfs_leftovers(allocations, faults);
	else
		printf("debugfs: no Pagoda directory under /sys/kernel/debug/dri: leftovers not checked\n");
	return pt_exit();
}
