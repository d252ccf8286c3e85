// SPDX-License-Identifier: MIT
/*
 * Recovery on the real device, a hanging and a faulting process beside a
 * healthy one (three DRM files, each its own address space):
 *
 * - engine reset: a job that never ends is stopped by drm_sched's timeout;
 *   its fence carries ETIMEDOUT and its context reports itself banned and
 *   guilty; the faulting process's job fails with EFAULT; every job of the
 *   healthy process, queued behind the hang when the engine was reset,
 *   runs again and completes with the right results, and its context
 *   reports itself innocent of one reset;
 * - the same with the device's engine reset made to fail (debugfs
 *   "engine_reset_fails"): the driver promotes it to an adapter reset,
 *   and every job ends as above;
 * - adapter reset: a paging job that never ends (debugfs "paging_hang")
 *   is stopped by the paging watchdog, which resets the whole device. The
 *   work queued behind it (a mapping's page-table update, render jobs)
 *   runs afterwards; allocations in VRAM, hidden VRAM and system memory
 *   keep their bytes, as the CPU (hidden VRAM through the host aperture,
 *   mapped again) and the GPU (CRC-32 through the page tables, and
 *   through the aperture in physical mode) read them;
 * - a job SUBMIT ran directly (the engine idle) and the scheduler has not
 *   taken yet (debugfs "render_hold"), aborted by an adapter reset, runs
 *   again as innocent and completes without an error.
 */
#include <pthread.h>
#include <stdbool.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(s)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##s)
#define HEALTHY_JOBS	8
#define CHUNK		(64 * KIB)

static char dbg_dir[PT_PATH_MAX];

static long long resets(const char *what)
{
	char path[PT_PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/resets", dbg_dir);
	return pt_debugfs_value(path, what, what);
}

/* One process's state: its file, a context, a command buffer and data. */
struct proc {
	struct pagoda_dev dev;
	uint32_t ctx;
	struct pt_buf cmd, data;
};

static int proc_open(struct proc *p, uint64_t data_size)
{
	int ret;

	memset(p, 0, sizeof(*p));
	ret = pagoda_open(&p->dev);
	if (!ret)
		ret = pagoda_ctx_create(&p->dev, DRM_PAGODA_PRIORITY_NORMAL, &p->ctx);
	if (!ret)
		ret = pt_buf_create(&p->dev, &p->cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&p->dev, &p->data, data_size, DRM_PAGODA_SEGMENT_VRAM, 0);
	return ret;
}

static void proc_close(struct proc *p)
{
	pt_buf_destroy(&p->dev, &p->cmd);
	pt_buf_destroy(&p->dev, &p->data);
	pagoda_close(&p->dev);
}

/* Submit @cb (at @offset of @p's command buffer) with a new out syncobj. */
static int submit(struct proc *p, uint64_t offset, struct pagoda_cmdbuf *cb, uint32_t *syncobj)
{
	struct drm_pagoda_sync out = { 0 };
	int ret;

	if (cb->error)
		return cb->error;
	ret = pagoda_syncobj_create(&p->dev, &out.handle);
	if (!ret)
		ret = pagoda_submit(&p->dev, p->ctx, p->cmd.va + offset, cb->used_bytes, NULL, 0,
				    &out, 1);
	*syncobj = out.handle;
	return ret;
}

/* Wait for a syncobj and return the error its fence carries. */
static int finish(struct pagoda_dev *dev, uint32_t syncobj)
{
	int ret = pagoda_syncobj_wait(dev, syncobj, 0, PT_JOB_TIMEOUT_NS);

	if (!ret)
		ret = pt_fence_error(dev, syncobj);
	pagoda_syncobj_destroy(dev, syncobj);
	return ret;
}

static uint32_t pattern(unsigned int i)
{
	return 0x5eed0000u + i * 0x01010101u;
}

/*
 * Healthy job i: fill chunk i with its pattern, then its CRC-32 to the
 * result word i (after the chunks).
 */
static void healthy_job(struct proc *p, unsigned int i, struct pagoda_cmdbuf *cb)
{
	uint64_t chunk = p->data.va + i * CHUNK, result = p->data.va + HEALTHY_JOBS * CHUNK;

	pagoda_cmdbuf_init(cb, (uint8_t *)p->cmd.bo.map + i * 256, 256);
	pagoda_cmd_fill(cb, chunk, CHUNK, pattern(i));
	pagoda_cmd_crc32(cb, chunk, CHUNK, result + 4 * i);
}

/* Write @value to the debugfs file @name; false when it cannot. */
static bool debugfs_write(const char *name, const char *value)
{
	char path[PT_PATH_MAX + 32];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dbg_dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(value, f) >= 0;
	return fclose(f) == 0 && ok;
}

/*
 * A hang among three processes. @reset_fails: the device's engine reset
 * is made to fail (debugfs "engine_reset_fails"), so the driver must
 * promote it to an adapter reset, with the same outcome for every job.
 */
static void test_engine_reset(bool reset_fails)
{
	const char *what = reset_fails ? "failed engine reset" : "engine reset";
	long long adapter_before = resets("adapter resets");
	struct proc healthy, hang, fault;
	uint32_t hs[HEALTHY_JOBS], hang_sync, fault_sync, *words;
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_ctx_query q;
	long long before = resets("engine resets");
	uint8_t chunk[CHUNK];
	unsigned int i, bad = 0;
	int ret, status;

	ret = proc_open(&healthy, HEALTHY_JOBS * CHUNK + 4 * KIB);
	if (!ret)
		ret = proc_open(&hang, 64 * KIB);
	if (!ret)
		ret = proc_open(&fault, 64 * KIB);
	if (!pt_check(!ret, "%s: three processes (%s)", what, strerror(-ret)))
		return;
	if (reset_fails && !pt_check(debugfs_write("engine_reset_fails", "1"),
				     "debugfs: the device's engine resets made to fail"))
		return;
	memset(healthy.data.bo.map, 0, healthy.data.bo.size);

	/* the hang first, then a fault, then the healthy jobs, all queued behind it */
	pagoda_cmdbuf_init(&cb, hang.cmd.bo.map, 64);
	pagoda_cmd_jump(&cb, hang.cmd.va, 16);
	ret = submit(&hang, 0, &cb, &hang_sync);
	pagoda_cmdbuf_init(&cb, fault.cmd.bo.map, 64);
	pagoda_cmd_fill(&cb, 1ull << 40, 4096, 0xbad);	/* not mapped */
	if (!ret)
		ret = submit(&fault, 0, &cb, &fault_sync);
	for (i = 0; !ret && i < HEALTHY_JOBS; i++) {
		healthy_job(&healthy, i, &cb);
		ret = submit(&healthy, i * 256, &cb, &hs[i]);
	}
	if (!pt_check(!ret, "%s: jobs submitted (%s)", what, strerror(-ret)))
		return;

	status = finish(&hang.dev, hang_sync);
	pt_check(status == -ETIMEDOUT, "the hanging job fails with ETIMEDOUT (%s)", strerror(-status));
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&hang.dev, hang.ctx, &q);
	pt_check(!ret && q.status == (DRM_PAGODA_CTX_BANNED | DRM_PAGODA_CTX_RESET_GUILTY) &&
		 q.resets == 1, "its context is banned and guilty of 1 reset (status 0x%x, resets %llu)",
		 q.status, (unsigned long long)q.resets);

	status = finish(&fault.dev, fault_sync);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&fault.dev, fault.ctx, &q);
	pt_check(status == -EFAULT && !ret && (q.status & DRM_PAGODA_CTX_FAULTED) &&
		 !(q.status & DRM_PAGODA_CTX_RESET_GUILTY) && q.fault_va == 1ull << 40,
		 "the faulting job fails with EFAULT, its context faulted at 0x%llx, not guilty (%s, status 0x%x)",
		 (unsigned long long)q.fault_va, strerror(-status), q.status);

	for (i = 0; i < HEALTHY_JOBS; i++)
		bad += finish(&healthy.dev, hs[i]) != 0;
	words = healthy.data.bo.map;
	for (i = 0; i < HEALTHY_JOBS; i++) {
		uint32_t v = pattern(i), k;

		for (k = 0; k < CHUNK / 4; k++)
			memcpy(chunk + 4 * k, &v, 4);
		bad += words[HEALTHY_JOBS * CHUNK / 4 + i] != pt_crc32(chunk, CHUNK);
		bad += memcmp((uint8_t *)healthy.data.bo.map + i * CHUNK, chunk, CHUNK) != 0;
	}
	pt_check(!bad, "%s: every healthy job ran again after the reset and completed right (%u wrong)",
		 what, bad);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&healthy.dev, healthy.ctx, &q);
	pt_check(!ret && q.status == DRM_PAGODA_CTX_RESET_INNOCENT && q.resets == 1,
		 "the healthy context is innocent of 1 reset, not banned (status 0x%x, resets %llu)",
		 q.status, (unsigned long long)q.resets);
	if (dbg_dir[0])
		pt_check(resets("engine resets") == before + 1 &&
			 resets("adapter resets") == adapter_before + reset_fails,
			 "debugfs: one more engine reset (%lld), %d more adapter resets (%lld)",
			 resets("engine resets"), reset_fails, resets("adapter resets"));
	if (reset_fails)
		debugfs_write("engine_reset_fails", "0");
	proc_close(&healthy);
	proc_close(&hang);
	proc_close(&fault);
}

static void *paging_hang(void *arg)
{
	char path[PT_PATH_MAX + 16];
	int fd, *result = arg;

	snprintf(path, sizeof(path), "%s/paging_hang", dbg_dir);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		*result = -errno;
		return NULL;
	}
	*result = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return NULL;
}

/* Fill @size bytes at @p with a pattern derived from @seed. */
static void fill_bytes(void *p, uint64_t size, uint32_t seed)
{
	uint32_t *w = p;
	uint64_t i;

	for (i = 0; i < size / 4; i++)
		w[i] = seed ^ (uint32_t)(i * 2654435761u);
}

static void test_adapter_reset(void)
{
	static const unsigned int segs[] = {
		DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_VRAM_HIDDEN, DRM_PAGODA_SEGMENT_SYSTEM,
	};
	struct pt_buf bufs[3], late;
	struct proc p;
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_ctx_query q;
	uint32_t crc_want[3], *res, sync, bind_sync = 0, render_sync;
	long long before = resets("adapter resets");
	pthread_t thread;
	int hang_result = -1, ret, status;
	unsigned int i;

	ret = proc_open(&p, 64 * KIB);
	for (i = 0; !ret && i < 3; i++)
		ret = pt_buf_create(&p.dev, &bufs[i], 4 * MIB, segs[i], 0);
	if (!ret)
		ret = pt_buf_create(&p.dev, &late, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!pt_check(!ret, "adapter reset: allocations in VRAM, hidden VRAM, system (%s)",
		      strerror(-ret)))
		return;
	for (i = 0; i < 3; i++) {
		fill_bytes(bufs[i].bo.map, bufs[i].bo.size, 0xa0a0a0a0u + i);
		crc_want[i] = pt_crc32(bufs[i].bo.map, bufs[i].bo.size);
	}
	memset(p.data.bo.map, 0, p.data.bo.size);

	/* the paging engine hangs; work queues behind it meanwhile */
	if (pthread_create(&thread, NULL, paging_hang, &hang_result)) {
		pt_check(0, "adapter reset: thread");
		return;
	}
	pt_sleep_ms(500);
	/* a mapping: its page-table update waits behind the hang, then runs again */
	ret = pagoda_syncobj_create(&p.dev, &bind_sync);
	if (!ret)
		ret = pagoda_vm_unmap(&p.dev, late.va, late.bo.size, 0);
	if (!ret)
		ret = pagoda_vm_map(&p.dev, late.bo.handle, 0, late.bo.size, DRM_PAGODA_VM_FIXED,
				    &late.va, 0, 0, bind_sync);
	/* a render job using it, waiting for the mapping */
	pagoda_cmdbuf_init(&cb, p.cmd.bo.map, 256);
	pagoda_cmd_fill(&cb, late.va, late.bo.size, 0x1a7e);
	if (!ret)
		ret = submit(&p, 0, &cb, &render_sync);
	pt_check(!ret, "adapter reset: work queued behind the hang (%s)", strerror(-ret));
	pthread_join(thread, NULL);
	pt_check(hang_result == 0, "the hanging paging job is stopped by an adapter reset (%s)",
		 strerror(-hang_result));
	if (dbg_dir[0])
		pt_check(resets("adapter resets") == before + 1,
			 "debugfs: one more adapter reset (%lld)", resets("adapter resets"));
	status = ret ? ret : finish(&p.dev, bind_sync);
	pt_check(status == 0, "the mapping queued behind it completes (%s)", strerror(-status));
	status = ret ? ret : finish(&p.dev, render_sync);
	pt_check(status == 0 && ((uint32_t *)late.bo.map)[0] == 0x1a7e,
		 "the render job using it completes (%s)", strerror(-status));

	/* the bytes are kept: the CPU and the GPU read them */
	for (i = 0; i < 3; i++)
		pt_check(pt_crc32(bufs[i].bo.map, bufs[i].bo.size) == crc_want[i],
			 "allocation in segment %u keeps its bytes (CPU)", segs[i]);
	pagoda_cmdbuf_init(&cb, p.cmd.bo.map, 256);
	for (i = 0; i < 3; i++)
		pagoda_cmd_crc32(&cb, bufs[i].va, bufs[i].bo.size, p.data.va + 4 * i);
	ret = submit(&p, 0, &cb, &sync);
	status = ret ? ret : finish(&p.dev, sync);
	res = p.data.bo.map;
	pt_check(status == 0 && res[0] == crc_want[0] && res[1] == crc_want[1] &&
		 res[2] == crc_want[2], "the GPU reads the same bytes after the reset (%s)",
		 strerror(-status));
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&p.dev, p.ctx, &q);
	pt_check(!ret && !(q.status & (DRM_PAGODA_CTX_BANNED | DRM_PAGODA_CTX_RESET_GUILTY)),
		 "the process's context is not banned (status 0x%x)", q.status);

	/* physical mode through the aperture: the table was restored */
	{
		struct pagoda_bo phys;
		struct pagoda_bo_desc desc = {
			.size = 64 * KIB, .flags = DRM_PAGODA_BO_PHYSICAL, .segments = SEG(SYSTEM),
		};
		struct drm_pagoda_phys_alloc alloc;
		struct drm_pagoda_phys_patch patches[4];
		struct drm_pagoda_sync out = { 0 };
		struct pagoda_physbuf pb;
		uint32_t mem[64];

		ret = pagoda_bo_create(&p.dev, &desc, &phys);
		if (!ret)
			ret = pagoda_bo_map(&p.dev, &phys);
		if (!ret)
			ret = pagoda_syncobj_create(&p.dev, &out.handle);
		if (!pt_check(!ret, "physical allocation in the aperture (%s)", strerror(-ret)))
			goto out;
		fill_bytes(phys.map, 4096, 0x77);
		alloc = (struct drm_pagoda_phys_alloc){ phys.handle, DRM_PAGODA_PHYS_WRITE };
		pagoda_physbuf_init(&pb, mem, sizeof(mem), patches, 4);
		pagoda_phys_bind(&pb, 0, 0, 0);
		pagoda_phys_crc32(&pb, 0, 0, 4096, 0, 8192);
		ret = pagoda_submit_phys(&p.dev, p.ctx, &pb, &alloc, 1, NULL, 0, &out, 1, NULL);
		status = ret ? ret : finish(&p.dev, out.handle);
		pt_check(status == 0 && ((uint32_t *)phys.map)[2048] == pt_crc32(phys.map, 4096),
			 "a physical-mode job reads through the aperture after the reset (%s)",
			 strerror(-status));
		pagoda_bo_unmap(&phys);
		pagoda_bo_free(&p.dev, &phys);
	}
out:
	for (i = 0; i < 3; i++)
		pt_buf_destroy(&p.dev, &bufs[i]);
	pt_buf_destroy(&p.dev, &late);
	proc_close(&p);
}

static void test_direct_reset(void)
{
	char path[PT_PATH_MAX + 16];
	volatile uint64_t *flag;
	struct drm_pagoda_ctx_query q;
	struct pagoda_cmdbuf cb;
	int ret, hold, status, hang_result = -1;
	long long before;
	pthread_t thread;
	uint32_t sync;
	struct proc p;

	ret = proc_open(&p, 64 * KIB);
	snprintf(path, sizeof(path), "%s/render_hold", dbg_dir);
	hold = ret ? -1 : open(path, O_WRONLY);
	if (!pt_check(!ret && hold >= 0, "direct run and reset: set up (%d, %s)", ret,
		      strerror(errno)))
		return;
	/* waits for the CPU's word at 32 KiB of the command buffer, then writes */
	flag = (uint64_t *)((uint8_t *)p.cmd.bo.map + 32 * KIB);
	*flag = 0;
	pagoda_cmdbuf_init(&cb, p.cmd.bo.map, 256);
	pagoda_cmd_wait(&cb, p.cmd.va + 32 * KIB, 1);
	pagoda_cmd_fill(&cb, p.data.va, 4, 0x600d);
	before = pt_direct_runs();
	ret = submit(&p, 0, &cb, &sync);
	pt_check(!ret && pt_direct_runs() == before + 1,
		 "direct run and reset: the job ran directly, the scheduler held (%d)", ret);
	if (pthread_create(&thread, NULL, paging_hang, &hang_result)) {
		pt_check(false, "direct run and reset: thread");
		close(hold);
		proc_close(&p);
		return;
	}
	pthread_join(thread, NULL);
	close(hold);
	*flag = 1;
	status = ret ? ret : finish(&p.dev, sync);
	pt_check(hang_result == 0 && status == 0 && *(volatile uint32_t *)p.data.bo.map == 0x600d,
		 "direct run and reset: aborted by the adapter reset, it ran again and completed (%s, %s)",
		 strerror(-hang_result), strerror(-status));
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&p.dev, p.ctx, &q);
	pt_check(!ret && q.status == DRM_PAGODA_CTX_RESET_INNOCENT && q.resets == 1,
		 "direct run and reset: its context is innocent of 1 reset (status 0x%x, resets %llu)",
		 q.status, (unsigned long long)q.resets);
	proc_close(&p);
}

int main(void)
{
	if (!pt_debugfs_dir(dbg_dir, sizeof(dbg_dir)))
		dbg_dir[0] = 0;
	test_engine_reset(false);
	if (dbg_dir[0]) {
		test_engine_reset(true);
		test_adapter_reset();
		test_direct_reset();
	} else {
		printf("failed engine reset, adapter reset: no debugfs, skipped\n");
	}
	return pt_exit();
}
