// SPDX-License-Identifier: MIT
/*
 * A render job that never ends (a command buffer that jumps to itself):
 * the scheduler's timeout (the hang_timeout_ms module parameter) resets
 * the render engine, not before it, the job's fence
 * carries ETIMEDOUT (read through a sync_file exported from its syncobj),
 * its context is banned and guilty without a fault record, and a job of
 * another context submitted afterwards runs normally.
 */
#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct drm_pagoda_sync hang_out = { 0 }, good_out = { 0 };
	struct drm_pagoda_ctx_query q;
	struct pt_buf loop, cmd, data;
	struct pagoda_cmdbuf cb;
	uint32_t hang_ctx, good_ctx, *p;
	struct pagoda_dev dev;
	uint64_t timeout_ms = 10000;
	double t, hang_timeout;
	int ret, status;

	/* the driver's hang timeout (the tests run with a short one) */
	pt_read_u64("/sys/module/pagoda/parameters/hang_timeout_ms", &timeout_ms);
	hang_timeout = timeout_ms / 1000.0;

	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &hang_ctx);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &good_ctx);
	if (!ret)
		ret = pt_buf_create(&dev, &loop, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &data, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &hang_out.handle);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &good_out.handle);
	if (!pt_check(!ret, "set up (%d)", ret))
		return pt_exit();
	p = data.bo.map;
	memset(p, 0, data.bo.size);

	/* a buffer of one JUMP to itself */
	pagoda_cmdbuf_init(&cb, loop.bo.map, loop.bo.size);
	pagoda_cmd_jump(&cb, loop.va, 16);
	t = now();
	ret = pagoda_submit(&dev, hang_ctx, loop.va, cb.used_bytes, NULL, 0, &hang_out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, hang_out.handle, 0, PT_JOB_TIMEOUT_NS);
	t = now() - t;
	status = pt_fence_error(&dev, hang_out.handle);
	pt_check(!ret && status == -ETIMEDOUT,
		 "a job that never ends is stopped after %.1f s, its fence carries ETIMEDOUT (%d, status %d)",
		 t, ret, status);
	pt_check(t > hang_timeout * 0.9, "not before the scheduler's timeout of %.1f s (%.1f s)",
		 hang_timeout, t);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&dev, hang_ctx, &q);
	pt_check(!ret && q.status == (DRM_PAGODA_CTX_BANNED | DRM_PAGODA_CTX_RESET_GUILTY) &&
		 q.resets == 1,
		 "its context is banned and guilty of 1 reset, with no fault record (status 0x%x)",
		 q.status);
	ret = pagoda_submit(&dev, hang_ctx, loop.va, cb.used_bytes, NULL, 0, NULL, 0);
	pt_check(ret == -ECANCELED, "the banned context takes no job (%d)", ret);

	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	pagoda_cmd_fill(&cb, data.va, data.bo.size, 0x600d);
	ret = pagoda_submit(&dev, good_ctx, cmd.va, cb.used_bytes, NULL, 0, &good_out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, good_out.handle, 0, PT_JOB_TIMEOUT_NS);
	status = pt_fence_error(&dev, good_out.handle);
	pt_check(!ret && status == 0 && p[0] == 0x600d && p[data.bo.size / 4 - 1] == 0x600d,
		 "the render engine runs another context's job after the reset (%d, status %d)",
		 ret, status);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&dev, good_ctx, &q);
	pt_check(!ret && q.status == 0, "that context is not banned (status 0x%x)", q.status);
	pagoda_close(&dev);
	return pt_exit();
}
