// SPDX-License-Identifier: MIT
/*
 * Virtual-mode render jobs through the real device: allocations in each
 * segment are mapped into the process's GPU address space, a command
 * buffer at a VA copies, fills, writes immediates and computes CRC32s
 * through those VAs, and every result matches what the CPU computes.
 * Read-only and zero mappings behave as the model says (a write to a
 * read-only page faults the job, a zero page reads zeros and drops
 * writes); an unmapped access kills only its context, while another
 * context and another process keep running; binds and submits chain
 * through binary and timeline syncobjs; a job that can start at once is
 * handed to the engine by SUBMIT itself. Operations VM_BIND can read but
 * not write back run, and the call says EFAULT with their count.
 */
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

static const char *const segment_names[] = { "system", "VRAM", "hidden VRAM" };

/*
 * A FIXED RESERVE in memory the process may read but not write: it runs,
 * and VM_BIND fails with EFAULT (it cannot write the operation back) and
 * count 1; FREE of the range then finds the reservation.
 */
static void test_ops_read_only(struct pagoda_dev *dev)
{
	struct drm_pagoda_vm_bind bind = { .count = 1 };
	struct drm_pagoda_vm_op *op;
	uint64_t va_bits = 0, va;
	int ret;

	/* near the top of the space, where the other tests reserve nothing */
	pagoda_query(dev, DRM_PAGODA_PARAM_VA_BITS, &va_bits);
	va = (1ull << va_bits) - 2 * 64 * KIB;

	op = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pt_check(op != MAP_FAILED, "a page for the operation"))
		return;
	*op = (struct drm_pagoda_vm_op){
		.op = DRM_PAGODA_VM_OP_RESERVE, .flags = DRM_PAGODA_VM_FIXED,
		.va = va, .size = 64 * KIB,
	};
	mprotect(op, 4096, PROT_READ);
	bind.ops = (uintptr_t)op;
	ret = ioctl(dev->fd, DRM_IOCTL_PAGODA_VM_BIND, &bind) ? errno : 0;
	pt_check(ret == EFAULT && bind.count == 1,
		 "VM_BIND with read-only operations: %s, count %u (want EFAULT, 1)",
		 strerror(ret), bind.count);
	ret = pagoda_vm_free(dev, va, 64 * KIB);
	pt_check(!ret, "the reservation was made all the same: FREE %s", strerror(-ret));
	munmap(op, 4096);
}

/* Copy, fill, write immediates and CRC32 between allocations of @src_seg and @dst_seg. */
static void test_commands(struct pagoda_dev *dev, uint32_t ctx, unsigned int src_seg,
			  unsigned int dst_seg)
{
	const uint64_t size = 256 * KIB;
	static const uint32_t imm[] = { 0xdeadbeef, 0x01234567, 0x89abcdef };
	struct pt_buf src, dst, cmd;
	struct pagoda_cmdbuf cb;
	uint32_t *s, *d, i, bad = 0;
	int ret;

	ret = pt_buf_create(dev, &src, size, src_seg, 0);
	if (!ret)
		ret = pt_buf_create(dev, &dst, size, dst_seg, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "%s -> %s: allocations mapped (%d)", segment_names[src_seg],
		      segment_names[dst_seg], ret))
		return;
	s = src.bo.map;
	d = dst.bo.map;
	for (i = 0; i < size / 4; i++) {
		s[i] = i * 2654435761u ^ src_seg << 24 ^ dst_seg;
		d[i] = 0x5a5a5a5a;
	}
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	/* first half copied, 3/4 filled, immediates, CRC32 of the source */
	pagoda_cmd_copy(&cb, src.va, dst.va, size / 2);
	pagoda_cmd_fill(&cb, dst.va + size / 2, size / 4, 0xc0ffee00 | dst_seg);
	pagoda_cmd_write_imm(&cb, dst.va + size - 64, imm, 3);
	pagoda_cmd_crc32(&cb, src.va, size, dst.va + size - 8);
	ret = pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret, "%s -> %s: job ran (%d)", segment_names[src_seg], segment_names[dst_seg],
		 ret);
	for (i = 0; i < size / 8; i++)
		bad += d[i] != s[i];
	for (; i < size / 16 * 3; i++)
		bad += d[i] != (0xc0ffee00 | dst_seg);
	for (; i < size / 4 - 16; i++)
		bad += d[i] != 0x5a5a5a5a;
	pt_check(!bad && !memcmp(&d[size / 4 - 16], imm, sizeof(imm)),
		 "%s -> %s: copy, fill and immediates match the CPU (%u words differ)",
		 segment_names[src_seg], segment_names[dst_seg], bad);
	pt_check(d[size / 4 - 2] == pt_crc32(s, size), "%s -> %s: CRC32 0x%08x (CPU 0x%08x)",
		 segment_names[src_seg], segment_names[dst_seg], d[size / 4 - 2],
		 pt_crc32(s, size));
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &dst);
	pt_buf_destroy(dev, &src);
}

/* Read-only pages fault on write, zero pages read zero and drop writes. */
static void test_protections(struct pagoda_dev *dev)
{
	struct pt_buf ro, rw, cmd;
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_ctx_query q;
	uint64_t zero_va = 0;
	uint32_t ctx, *r;
	int ret, banned;

	ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(dev, &ro, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_VM_READ_ONLY);
	if (!ret)
		ret = pt_buf_create(dev, &rw, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_vm_map(dev, 0, 0, 64 * KIB, DRM_PAGODA_VM_ZERO, &zero_va, 0, 0, 0);
	if (!pt_check(!ret, "protections: allocations and zero pages mapped (%d)", ret))
		return;
	memset(ro.bo.map, 0x11, 64 * KIB);
	memset(rw.bo.map, 0x22, 64 * KIB);
	r = rw.bo.map;

	/* reading read-only and zero pages works; writing zero pages is dropped */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_copy(&cb, ro.va, rw.va, 4096);
	pagoda_cmd_fill(&cb, zero_va, 4096, 0xffffffff);
	pagoda_cmd_copy(&cb, zero_va, rw.va + 4096, 4096);
	ret = pt_run(dev, ctx, &cmd, &cb);
	banned = pt_ctx_banned(dev, ctx, &q);
	pt_check(!ret && banned == 0, "protections: read-only read, zero read and write run (%d)",
		 ret);
	pt_check(r[0] == 0x11111111 && r[1023] == 0x11111111 && r[1024] == 0 && r[2047] == 0 &&
		 r[2048] == 0x22222222,
		 "protections: read-only pages read, zero pages read 0 after a dropped write");

	/* a write to a read-only page faults the job and bans the context */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, ro.va + 8192, 4, 0x99999999);
	pagoda_cmd_fill(&cb, rw.va, 4, 0x77777777);
	pt_run(dev, ctx, &cmd, &cb);
	banned = pt_ctx_banned(dev, ctx, &q);
	pt_check(banned == 1 && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 q.fault_code == PAGODA_FAULT_READ_ONLY && q.fault_va == ro.va + 8192 &&
		 q.fault_access == PAGODA_ACCESS_WRITE,
		 "protections: write to a read-only page faults READ_ONLY at its VA (status 0x%x code %u va 0x%llx)",
		 q.status, q.fault_code, (unsigned long long)q.fault_va);
	pt_check(((uint32_t *)ro.bo.map)[2048] == 0x11111111 && r[0] == 0x11111111,
		 "protections: the page stays unchanged and the job stopped at the fault");
	ret = pagoda_submit(dev, ctx, cmd.va, 4, NULL, 0, NULL, 0);
	pt_check(ret == -ECANCELED, "protections: a banned context takes no job (%d)", ret);
	pagoda_vm_unmap(dev, zero_va, 64 * KIB, 0);
	pagoda_vm_free(dev, zero_va, 64 * KIB);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &rw);
	pt_buf_destroy(dev, &ro);
	pagoda_ctx_destroy(dev, ctx);
}

/* PROTECT changes what a range allows, keeping what it maps. */
static void test_protect(struct pagoda_dev *dev)
{
	struct drm_pagoda_vm_op op = { .op = DRM_PAGODA_VM_OP_PROTECT };
	struct drm_pagoda_ctx_query q;
	struct pagoda_cmdbuf cb;
	struct pt_buf data, cmd;
	uint32_t ctx, ctx2, *p;
	int ret, banned;

	ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx2);
	if (!ret)
		ret = pt_buf_create(dev, &data, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "protect: set up (%d)", ret))
		return;
	p = data.bo.map;
	memset(p, 0, 256 * KIB);

	/* the middle 64 KiB read-only */
	op.va = data.va + 64 * KIB;
	op.size = 64 * KIB;
	op.flags = DRM_PAGODA_VM_READ_ONLY;
	ret = pagoda_vm_bind(dev, &op, 1, 0, 0, NULL);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va, 64 * KIB, 0x11);
	pagoda_cmd_copy(&cb, data.va, data.va + 192 * KIB, 4096);
	pagoda_cmd_crc32(&cb, data.va + 64 * KIB, 64 * KIB, data.va + 200 * KIB);
	ret = ret ?: pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && p[0] == 0x11 && p[48 * KIB] == 0x11 && p[50 * KIB] == pt_crc32(&p[16 * KIB], 64 * KIB),
		 "protect: a read-only part reads, its neighbours write (%d)", ret);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va + 100 * KIB, 4, 0x22);
	pt_run(dev, ctx2, &cmd, &cb);
	banned = pt_ctx_banned(dev, ctx2, &q);
	pt_check(banned == 1 && q.fault_code == PAGODA_FAULT_READ_ONLY &&
		 q.fault_va == data.va + 100 * KIB && p[25 * KIB] == 0,
		 "protect: a write there faults READ_ONLY (va 0x%llx)", (unsigned long long)q.fault_va);

	/* back to read-write, and the command buffer no-execute */
	op.flags = 0;
	ret = pagoda_vm_bind(dev, &op, 1, 0, 0, NULL);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va + 100 * KIB, 4, 0x33);
	ret = ret ?: pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && p[25 * KIB] == 0x33, "protect: writable again (%d)", ret);
	op.va = cmd.va;
	op.size = 4 * KIB;
	op.flags = DRM_PAGODA_VM_NO_EXECUTE;
	ret = pagoda_vm_bind(dev, &op, 1, 0, 0, NULL);
	if (!ret)
		ret = pagoda_submit(dev, ctx, cmd.va, cb.used_bytes, NULL, 0, NULL, 0);
	pt_check(ret == -EACCES, "protect: a no-execute command buffer is refused (%d)", ret);
	op.va = data.va + 240 * KIB;
	op.size = 32 * KIB;
	ret = pagoda_vm_bind(dev, &op, 1, 0, 0, NULL);
	pt_check(ret == -ENOENT, "protect: a range not mapped throughout (%d)", ret);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &data);
	pagoda_ctx_destroy(dev, ctx2);
	pagoda_ctx_destroy(dev, ctx);
}

/*
 * A context that touches an unmapped VA is banned; another context of the
 * process and a second process run their jobs meanwhile.
 */
static void test_fault_isolation(struct pagoda_dev *dev)
{
	struct pt_buf data, cmd, cmd2;
	struct drm_pagoda_ctx_query q;
	struct pagoda_cmdbuf cb;
	uint32_t bad_ctx, good_ctx, *p;
	int ret, status, banned;
	pid_t child;

	ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &bad_ctx);
	if (!ret)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &good_ctx);
	if (!ret)
		ret = pt_buf_create(dev, &data, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd2, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "isolation: set up (%d)", ret))
		return;
	p = data.bo.map;
	memset(p, 0, 64 * KIB);

	child = fork();
	if (child == 0) {
		/* a second process with its own space runs 50 jobs */
		struct pagoda_dev dev2;
		struct pt_buf d2, c2;
		unsigned int i, ok = 0;
		uint32_t ctx2;

		if (pagoda_open(&dev2) || pagoda_ctx_create(&dev2, DRM_PAGODA_PRIORITY_NORMAL, &ctx2) ||
		    pt_buf_create(&dev2, &d2, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0) ||
		    pt_buf_create(&dev2, &c2, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0))
			_exit(2);
		for (i = 0; i < 50; i++) {
			pagoda_cmdbuf_init(&cb, c2.bo.map, c2.bo.size);
			pagoda_cmd_fill(&cb, d2.va, 64 * KIB, i);
			if (!pt_run(&dev2, ctx2, &c2, &cb) && ((uint32_t *)d2.bo.map)[4095] == i)
				ok++;
		}
		_exit(ok == 50 ? 0 : 1);
	}

	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va, 4, 1);
	pagoda_cmd_fill(&cb, 0x3ff00000, 4, 2);	/* nothing mapped there */
	pagoda_cmd_fill(&cb, data.va + 4, 4, 3);
	pt_run(dev, bad_ctx, &cmd, &cb);
	banned = pt_ctx_banned(dev, bad_ctx, &q);
	pt_check(banned == 1 && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 (q.fault_code == PAGODA_FAULT_INVALID_PTE || q.fault_code == PAGODA_FAULT_ROOT_RANGE),
		 "isolation: an unmapped access bans its context (code %u level %u)", q.fault_code,
		 q.fault_level);
	pt_check(p[0] == 1 && p[1] == 0, "isolation: the job stopped at the faulting command");

	pagoda_cmdbuf_init(&cb, cmd2.bo.map, cmd2.bo.size);
	pagoda_cmd_fill(&cb, data.va + 8, 4, 4);
	ret = pt_run(dev, good_ctx, &cmd2, &cb);
	banned = pt_ctx_banned(dev, good_ctx, &q);
	pt_check(!ret && p[2] == 4 && banned == 0,
		 "isolation: another context of the process still runs (%d)", ret);
	waitpid(child, &status, 0);
	pt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "isolation: the other process ran all its jobs (status 0x%x)", status);
	pt_buf_destroy(dev, &cmd2);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &data);
	pagoda_ctx_destroy(dev, good_ctx);
	pagoda_ctx_destroy(dev, bad_ctx);
}

/* A bind's out-fence and a timeline chain of jobs: each waits for the one before. */
static void test_syncobjs(struct pagoda_dev *dev, uint32_t ctx)
{
	struct pt_buf data, cmd[3];
	struct drm_pagoda_sync in, out;
	struct pagoda_cmdbuf cb;
	uint32_t timeline, bind_sync, *p;
	unsigned int i;
	int ret;

	ret = pt_buf_create(dev, &data, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	for (i = 0; i < 3 && !ret; i++)
		ret = pt_buf_create(dev, &cmd[i], 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_syncobj_create(dev, &timeline);
	if (!ret)
		ret = pagoda_syncobj_create(dev, &bind_sync);
	if (!pt_check(!ret, "syncobjs: set up (%d)", ret))
		return;
	p = data.bo.map;
	memset(p, 0, 64 * KIB);

	/* job i adds to what job i - 1 wrote: copy word i - 1 to word i, plus a fill */
	for (i = 0; i < 3; i++) {
		pagoda_cmdbuf_init(&cb, cmd[i].bo.map, cmd[i].bo.size);
		if (i)
			pagoda_cmd_copy(&cb, data.va + 4 * (i - 1), data.va + 4 * i, 4);
		else
			pagoda_cmd_fill(&cb, data.va, 4, 0x600d);
		in = (struct drm_pagoda_sync){ .handle = timeline, .point = i };
		out = (struct drm_pagoda_sync){ .handle = timeline, .point = i + 1 };
		ret = pagoda_submit(dev, ctx, cmd[i].va, cb.used_bytes, i ? &in : NULL, i ? 1 : 0,
				    &out, 1);
		if (ret)
			break;
	}
	if (!ret)
		ret = pagoda_syncobj_wait(dev, timeline, 3, PT_JOB_TIMEOUT_NS);
	pt_check(!ret && p[0] == 0x600d && p[1] == 0x600d && p[2] == 0x600d,
		 "syncobjs: three jobs chained on timeline points 1..3 (%d)", ret);

	/* a map's out-fence, then a job that waits for it writes through the new VA */
	{
		uint64_t va = 0;

		ret = pagoda_vm_map(dev, data.bo.handle, 0, 64 * KIB, 0, &va, 0, 0, bind_sync);
		pagoda_cmdbuf_init(&cb, cmd[0].bo.map, cmd[0].bo.size);
		pagoda_cmd_fill(&cb, va + 64, 4, 0xb1d);
		in = (struct drm_pagoda_sync){ .handle = bind_sync };
		out = (struct drm_pagoda_sync){ .handle = bind_sync };
		if (!ret)
			ret = pagoda_submit(dev, ctx, cmd[0].va, cb.used_bytes, &in, 1, &out, 1);
		if (!ret)
			ret = pagoda_syncobj_wait(dev, bind_sync, 0, PT_JOB_TIMEOUT_NS);
		pt_check(!ret && p[16] == 0xb1d,
			 "syncobjs: a job after a bind's out-fence writes through the new VA (%d)",
			 ret);
		pagoda_vm_unmap(dev, va, 64 * KIB, 0);
		pagoda_vm_free(dev, va, 64 * KIB);
	}
	pagoda_syncobj_destroy(dev, bind_sync);
	pagoda_syncobj_destroy(dev, timeline);
	for (i = 0; i < 3; i++)
		pt_buf_destroy(dev, &cmd[i]);
	pt_buf_destroy(dev, &data);
}

/* Whether the fence in @handle has signalled, without waiting. */
static int signalled(struct pagoda_dev *dev, uint32_t handle)
{
	return !pagoda_syncobj_wait(dev, handle, 0, 0);
}

/*
 * Direct submission: a job that may start at once (the engine idle,
 * nothing waiting before it) is handed to the engine by SUBMIT itself, so
 * a no-op has retired, its out-syncobj signalled, when SUBMIT returns (a
 * few may not: a migration's stop defers a doorbell). A job behind one of
 * its context that waits on the engine, and one of another context, wait
 * for it, then run.
 */
static void test_direct_submission(struct pagoda_dev *dev, uint32_t ctx)
{
	struct drm_pagoda_sync out[3];
	struct pagoda_cmdbuf nop, wait;
	struct pt_buf flag, cmd[2];
	unsigned int i, early = 0;
	uint32_t other = 0, sync[3] = { 0 };
	long long before;
	int ret;

	ret = pt_buf_create(dev, &flag, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	for (i = 0; i < 2 && !ret; i++)
		ret = pt_buf_create(dev, &cmd[i], 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	for (i = 0; i < 3 && !ret; i++) {
		ret = pagoda_syncobj_create(dev, &sync[i]);
		out[i] = (struct drm_pagoda_sync){ .handle = sync[i] };
	}
	if (!ret)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &other);
	if (!pt_check(!ret, "direct submission: set up (%d)", ret))
		return;
	pagoda_cmdbuf_init(&nop, cmd[0].bo.map, cmd[0].bo.size);
	pagoda_cmd_nop(&nop, 1);
	pagoda_cmdbuf_init(&wait, cmd[1].bo.map, cmd[1].bo.size);
	pagoda_cmd_wait(&wait, flag.va, 1);
	*(volatile uint64_t *)flag.bo.map = 0;

	before = pt_direct_runs();
	for (i = 0; i < 10 && !ret; i++) {
		usleep(1000);	/* lone jobs: no stream for the scheduler's worker */
		ret = pagoda_submit(dev, ctx, cmd[0].va, nop.used_bytes, NULL, 0, &out[0], 1);
		early += !ret && signalled(dev, sync[0]);
		if (!ret)
			ret = pagoda_syncobj_wait(dev, sync[0], 0, PT_JOB_TIMEOUT_NS);
	}
	pt_check(!ret && early >= 8 && pt_direct_runs() - before >= early,
		 "direct submission: %u of 10 lone no-op jobs retired when SUBMIT returned, %lld run directly (%d)",
		 early, pt_direct_runs() - before, ret);

	before = pt_direct_runs();
	ret = pagoda_submit(dev, ctx, cmd[1].va, wait.used_bytes, NULL, 0, &out[1], 1);
	if (!ret)
		ret = pagoda_submit(dev, ctx, cmd[0].va, nop.used_bytes, NULL, 0, &out[2], 1);
	if (!ret)
		ret = pagoda_submit(dev, other, cmd[0].va, nop.used_bytes, NULL, 0, &out[0], 1);
	usleep(10000);
	pt_check(!ret && !signalled(dev, sync[1]) && !signalled(dev, sync[2]) &&
		 !signalled(dev, sync[0]) && pt_direct_runs() - before == 1,
		 "direct submission: behind a job waiting on the engine, jobs of its context and another wait; %lld of 3 run directly (%d)",
		 pt_direct_runs() - before, ret);
	*(volatile uint64_t *)flag.bo.map = 1;
	for (i = 0; i < 3 && !ret; i++)
		ret = pagoda_syncobj_wait(dev, sync[i], 0, PT_JOB_TIMEOUT_NS);
	pt_check(!ret, "direct submission: all three ran once the first's wait ended (%d)", ret);

	pagoda_ctx_destroy(dev, other);
	for (i = 0; i < 3; i++)
		pagoda_syncobj_destroy(dev, sync[i]);
	for (i = 0; i < 2; i++)
		pt_buf_destroy(dev, &cmd[i]);
	pt_buf_destroy(dev, &flag);
}

/* Leaf tables of this process's space (debugfs "vms"; one space open), or -1. */
static long long leaf_tables(void)
{
	return pt_debugfs_value("/sys/kernel/debug/dri/0/vms", "  tables", "level0 ");
}

/*
 * 2 MiB of VRAM, contiguous and aligned, mapped at a 2 MiB aligned VA is
 * one large page (no leaf table); unmapping part of it splits it into a
 * leaf table, mapping another allocation over part of it too, and the
 * rest stays as it was.
 */
static void test_large_pages(struct pagoda_dev *dev, uint32_t ctx)
{
	const uint64_t base = 512 * MIB, size = 4 * MIB;
	struct drm_pagoda_ctx_query q;
	struct pt_buf big, small, cmd;
	struct pagoda_cmdbuf cb;
	long long before, mapped, split;
	uint64_t va = base;
	uint32_t ctx2, *p, *sp;
	int ret, banned;

	memset(&big, 0, sizeof(big));
	ret = pt_buf_create(dev, &small, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx2);
	before = leaf_tables();
	if (!ret)
		ret = pagoda_vm_reserve(dev, &va, size, DRM_PAGODA_VM_FIXED, 0, 0);
	if (!ret)
		ret = pagoda_bo_create(dev, &(struct pagoda_bo_desc){
				.size = size, .segments = SEG(VRAM), .preferred_segment = 1,
				.priority = DRM_PAGODA_PRIORITY_NORMAL }, &big.bo);
	if (!ret)
		ret = pagoda_bo_map(dev, &big.bo);
	if (!ret)
		ret = pagoda_vm_map(dev, big.bo.handle, 0, size, DRM_PAGODA_VM_FIXED, &va, 0, 0, 0);
	mapped = leaf_tables();
	if (!pt_check(!ret && mapped == before,
		      "large pages: 4 MiB of VRAM mapped with no leaf table (%lld before, %lld after, %d)",
		      before, mapped, ret))
		return;
	p = big.bo.map;
	sp = small.bo.map;
	memset(p, 0, size);
	memset(sp, 0, 64 * KIB);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, base, size, 0x1a26e);
	ret = pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && p[0] == 0x1a26e && p[size / 4 - 1] == 0x1a26e && p[MIB / 4] == 0x1a26e,
		 "large pages: a job fills them (%d)", ret);

	/* a hole in the first page, another allocation over part of the second */
	ret = pagoda_vm_unmap(dev, base + MIB, 4 * KIB, 0);
	va = base + 3 * MIB;
	if (!ret)
		ret = pagoda_vm_map(dev, small.bo.handle, 0, 64 * KIB, DRM_PAGODA_VM_FIXED, &va, 0,
				    0, 0);
	split = leaf_tables();
	pt_check(!ret && split == before + 2, "large pages: both split into leaf tables (%lld, %d)",
		 split, ret);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, base, MIB, 0x2222);
	pagoda_cmd_fill(&cb, base + MIB + 4 * KIB, size - MIB - 4 * KIB, 0x3333);
	ret = pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && p[0] == 0x2222 && p[MIB / 4 - 1] == 0x2222 && p[MIB / 4] == 0x1a26e &&
		 p[(MIB + 4 * KIB) / 4] == 0x3333 && p[3 * MIB / 4] == 0x1a26e &&
		 p[(3 * MIB + 64 * KIB) / 4] == 0x3333 && p[size / 4 - 1] == 0x3333 &&
		 sp[0] == 0x3333 && sp[16 * KIB - 1] == 0x3333,
		 "large pages: what was not unmapped or replaced still maps the same bytes (%d)",
		 ret);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, base + MIB, 4, 0x4444);
	pt_run(dev, ctx2, &cmd, &cb);
	banned = pt_ctx_banned(dev, ctx2, &q);
	pt_check(banned == 1 && q.fault_va == base + MIB && p[MIB / 4] == 0x1a26e,
		 "large pages: the hole faults (va 0x%llx)", (unsigned long long)q.fault_va);

	pagoda_vm_unmap(dev, base, MIB, 0);
	pagoda_vm_unmap(dev, base + MIB + 4 * KIB, 2 * MIB - 4 * KIB, 0);
	pagoda_vm_unmap(dev, base + 3 * MIB, 64 * KIB, 0);
	pagoda_vm_unmap(dev, base + 3 * MIB + 64 * KIB, MIB - 64 * KIB, 0);
	ret = pagoda_vm_free(dev, base, size);
	pt_check(!ret && leaf_tables() == before, "large pages: unmapped, their tables freed (%lld, %d)",
		 leaf_tables(), ret);
	pagoda_ctx_destroy(dev, ctx2);
	pagoda_bo_unmap(&big.bo);
	pagoda_bo_free(dev, &big.bo);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &small);
}

/* Entries of this process's root (debugfs "vms"; one space open), or -1. */
static long long root_entries(void)
{
	return pt_debugfs_value("/sys/kernel/debug/dri/0/vms", "  ", " root ");
}

/*
 * With 2 levels the root grows with the reserved range past one table and
 * shrinks back when the range is freed, the mappings below kept intact.
 */
static void test_root_resize(struct pagoda_dev *dev, uint32_t ctx)
{
	const uint64_t high = 16 * 1024 * MIB;	/* 16 GiB: root entry 8192 */
	struct pt_buf low, cmd, far;
	struct pagoda_cmdbuf cb;
	long long before, grown, after;
	uint64_t va = high;
	uint32_t *p;
	int ret;

	ret = pt_buf_create(dev, &low, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "root: low mappings (%d)", ret))
		return;
	before = root_entries();
	memset(&far, 0, sizeof(far));
	ret = pagoda_vm_reserve(dev, &va, 64 * KIB, DRM_PAGODA_VM_FIXED, 0, 0);
	if (!ret)
		ret = pagoda_bo_create(dev, &(struct pagoda_bo_desc){
				.size = 64 * KIB, .segments = SEG(VRAM), .preferred_segment = 1,
				.priority = DRM_PAGODA_PRIORITY_NORMAL }, &far.bo);
	if (!ret)
		ret = pagoda_bo_map(dev, &far.bo);
	if (!ret)
		ret = pagoda_vm_map(dev, far.bo.handle, 0, 64 * KIB, DRM_PAGODA_VM_FIXED, &va, 0, 0, 0);
	grown = root_entries();
	pt_check(!ret && before == 512 && grown > 8192,
		 "root: a reservation at 16 GiB grows the root from %lld to %lld entries (%d)",
		 before, grown, ret);
	p = low.bo.map;
	memset(p, 0, 64 * KIB);
	memset(far.bo.map, 0, 64 * KIB);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, low.va, 4096, 0x1017);
	pagoda_cmd_fill(&cb, high, 4096, 0xf4a5);
	ret = pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && p[0] == 0x1017 && ((uint32_t *)far.bo.map)[1023] == 0xf4a5,
		 "root: jobs write below and above the old root's reach (%d)", ret);
	pagoda_vm_unmap(dev, high, 64 * KIB, 0);
	ret = pagoda_vm_free(dev, high, 64 * KIB);
	after = root_entries();
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_copy(&cb, low.va, low.va + 8192, 4096);
	ret = ret ?: pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && after == 512 && p[2048] == 0x1017,
		 "root: freeing it shrinks the root back to %lld entries, mappings intact (%d)",
		 after, ret);
	pagoda_bo_unmap(&far.bo);
	pagoda_bo_free(dev, &far.bo);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &low);
}

/* An fdinfo "key:\tN ns" value of this process's file, or -1. */
static long long fdinfo_ns(struct pagoda_dev *dev, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dev->fd);
	return pt_debugfs_value(path, key, ":\t");
}

/*
 * The VA of a 64 KiB page shares its 64 KiB alignment with the page: a MAP
 * of a VRAM allocation (64 KiB pages on the default device) whose VA and
 * offset differ in their low 16 bits is refused with EINVAL, as is one
 * without DRM_PAGODA_VM_FIXED whose offset is not 64 KiB aligned; with
 * 4 KiB segment pages, and for an allocation only in system memory, any
 * 4 KiB alignment goes. A mapping whose low bits agree reads the right
 * bytes through the GPU.
 */
static void test_page_alignment(struct pagoda_dev *dev, uint32_t ctx)
{
	uint64_t page = 0, res = 0, va, base;
	struct pt_buf cmd, out;
	struct pagoda_bo vram, sys;
	struct pagoda_cmdbuf cb;
	uint32_t *words;
	int ret, want;

	pagoda_query(dev, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, &page);
	want = page == 64 * KIB ? -EINVAL : 0;
	ret = pagoda_bo_create(dev, &(struct pagoda_bo_desc){
			.size = 128 * KIB, .segments = SEG(VRAM), .preferred_segment = 1 }, &vram);
	if (!ret)
		ret = pagoda_bo_create(dev, &(struct pagoda_bo_desc){
				.size = 128 * KIB, .segments = SEG(SYSTEM) }, &sys);
	if (!ret)
		ret = pagoda_bo_map(dev, &vram);
	if (!ret)
		ret = pt_buf_create(dev, &cmd, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(dev, &out, 4 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_vm_reserve(dev, &res, 512 * KIB, 0, 0, 0);
	if (!pt_check(!ret, "64 KiB alignment: allocations and a reservation (%s)", strerror(-ret)))
		return;

	va = res + 4 * KIB;
	ret = pagoda_vm_map(dev, vram.handle, 0, 64 * KIB, DRM_PAGODA_VM_FIXED, &va, 0, 0, 0);
	pt_check(ret == want, "64 KiB alignment: VA 0x...1000 for offset 0 of %llu KiB pages: %s",
		 (unsigned long long)(page / KIB), strerror(-ret));
	if (!ret)
		pagoda_vm_unmap(dev, va, 64 * KIB, 0);
	ret = pagoda_vm_map(dev, vram.handle, 4 * KIB, 60 * KIB, 0, &va, 0, 0, 0);
	pt_check(ret == want, "64 KiB alignment: a VA chosen for offset 0x1000: %s", strerror(-ret));
	if (!ret)
		pagoda_vm_free(dev, va, 64 * KIB);
	va = res + 64 * KIB + 4 * KIB;
	ret = pagoda_vm_map(dev, sys.handle, 0, 64 * KIB, DRM_PAGODA_VM_FIXED, &va, 0, 0, 0);
	pt_check(!ret, "64 KiB alignment: system memory only, any 4 KiB VA (%s)", strerror(-ret));

	/* low bits agreeing: VA ...3000 maps offset 0x13000 */
	base = res + 256 * KIB + 0x3000;
	ret = pagoda_vm_map(dev, vram.handle, 0x13000, 0x4000, DRM_PAGODA_VM_FIXED, &base, 0, 0,
			    0);
	if (!pt_check(!ret, "64 KiB alignment: VA 0x...3000 for offset 0x13000 (%s)",
		      strerror(-ret)))
		goto out;
	words = vram.map;
	for (unsigned int i = 0; i < 128 * KIB / 4; i++)
		words[i] = 0xa11900u + i;
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_crc32(&cb, base, 0x4000, out.va);
	ret = pt_run(dev, ctx, &cmd, &cb);
	pt_check(!ret && *(uint32_t *)out.bo.map == pt_crc32((uint8_t *)vram.map + 0x13000, 0x4000),
		 "64 KiB alignment: the GPU reads offset 0x13000 through VA 0x...3000 (%s)",
		 strerror(-ret));
out:
	pagoda_vm_free(dev, res, 512 * KIB);
	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &out);
	pagoda_bo_free(dev, &vram);
	pagoda_bo_free(dev, &sys);
}

int main(void)
{
	struct pagoda_dev dev;
	unsigned int src, dst;
	uint64_t levels = 0;
	uint32_t ctx;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node (%d)", ret))
		return pt_exit();
	pagoda_query(&dev, DRM_PAGODA_PARAM_MMU_LEVELS, &levels);
	printf("device: %llu page-table levels\n", (unsigned long long)levels);
	ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!pt_check(!ret, "create a context (%d)", ret))
		return pt_exit();
	for (src = 0; src < 3; src++)
		for (dst = 0; dst < 3; dst++)
			test_commands(&dev, ctx, src, dst);
	test_syncobjs(&dev, ctx);
	test_direct_submission(&dev, ctx);
	test_large_pages(&dev, ctx);
	test_page_alignment(&dev, ctx);
	if (levels == 2)
		test_root_resize(&dev, ctx);
	pt_check(fdinfo_ns(&dev, "drm-engine-render") > 0 && fdinfo_ns(&dev, "drm-engine-paging") > 0,
		 "fdinfo: render %lld ns, paging %lld ns on this file's work",
		 fdinfo_ns(&dev, "drm-engine-render"), fdinfo_ns(&dev, "drm-engine-paging"));
	test_protections(&dev);
	test_protect(&dev);
	test_ops_read_only(&dev);
	test_fault_isolation(&dev);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return pt_exit();
}
