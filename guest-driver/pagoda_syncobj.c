// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda submission syncobjs
 *
 * The syncobjs of a SUBMIT or SUBMIT_PHYS: in-syncobjs, binary or at a
 * timeline point, whose fences the job waits for; out-syncobjs that get
 * its fence, binary or at a timeline point (a chain node made beforehand).
 * Every one is looked up and every chain node allocated before the point
 * of no return, so that a submission that fails changes no syncobj.
 */

#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_file.h>
#include <drm/drm_syncobj.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

/* Copy a syncobj array of a submission from user space; checks the flags. */
static int pagoda_copy_syncs(u64 user, u32 count, struct drm_pagoda_sync **syncs)
{
	u32 i;

	if (count > DRM_PAGODA_SUBMIT_MAX_SYNCS)
		return -EINVAL;
	*syncs = NULL;
	if (!count)
		return 0;
	*syncs = memdup_array_user(u64_to_user_ptr(user), count, sizeof(**syncs));
	if (IS_ERR(*syncs)) {
		int ret = PTR_ERR(*syncs);

		*syncs = NULL;
		return ret;
	}
	for (i = 0; i < count; i++)
		if ((*syncs)[i].flags)
			return -EINVAL;
	return 0;
}

/* Each in-syncobj's fence (or timeline point's), for the job to wait for. */
static int pagoda_submit_in_fences(struct drm_file *file, struct pagoda_submit_syncs *syncs)
{
	u32 i;
	int ret;

	syncs->in_fences = kcalloc(syncs->in_count, sizeof(*syncs->in_fences), GFP_KERNEL);
	if (syncs->in_count && !syncs->in_fences)
		return -ENOMEM;
	for (i = 0; i < syncs->in_count; i++) {
		struct dma_fence *fence;

		/* on an error it may leave a pointer it dropped: not kept */
		ret = drm_syncobj_find_fence(file, syncs->in[i].handle, syncs->in[i].point, 0,
					     &fence);
		if (ret)
			return ret;
		syncs->in_fences[i] = fence;
	}
	return 0;
}

/* Check the out-syncobjs exist and allocate a chain node per timeline point. */
static int pagoda_submit_out_chains(struct drm_file *file, struct pagoda_submit_syncs *syncs)
{
	u32 i;

	syncs->chains = kcalloc(syncs->out_count, sizeof(*syncs->chains), GFP_KERNEL);
	if (syncs->out_count && !syncs->chains)
		return -ENOMEM;
	for (i = 0; i < syncs->out_count; i++) {
		struct drm_syncobj *syncobj = drm_syncobj_find(file, syncs->out[i].handle);

		if (!syncobj)
			return -ENOENT;
		drm_syncobj_put(syncobj);
		if (syncs->out[i].point) {
			syncs->chains[i] = dma_fence_chain_alloc();
			if (!syncs->chains[i])
				return -ENOMEM;
		}
	}
	return 0;
}

/**
 * pagoda_submit_syncs_get - resolve a submission's syncobjs
 * @file: the caller's file
 * @in: user pointer to the in-syncobjs
 * @in_count: their count, at most DRM_PAGODA_SUBMIT_MAX_SYNCS
 * @out: user pointer to the out-syncobjs
 * @out_count: their count, likewise
 * @syncs: filled; released by pagoda_submit_syncs_put() whatever the result
 *
 * Everything that can fail is done here, before the point of no return:
 * the arrays are copied, the in-syncobjs' fences found, the out-syncobjs
 * looked up and their timeline chain nodes allocated.
 *
 * Return: 0, -EINVAL for too many or flags not zero or an in-syncobj
 * without a fence at its point, -ENOENT for an unknown syncobj, -EFAULT,
 * -ENOMEM.
 */
int pagoda_submit_syncs_get(struct drm_file *file, u64 in, u32 in_count, u64 out, u32 out_count,
			    struct pagoda_submit_syncs *syncs)
{
	int ret;

	memset(syncs, 0, sizeof(*syncs));
	ret = pagoda_copy_syncs(in, in_count, &syncs->in);
	if (ret)
		return ret;
	syncs->in_count = in_count;
	ret = pagoda_copy_syncs(out, out_count, &syncs->out);
	if (ret)
		return ret;
	syncs->out_count = out_count;
	ret = pagoda_submit_in_fences(file, syncs);
	if (ret)
		return ret;
	return pagoda_submit_out_chains(file, syncs);
}

/**
 * pagoda_submit_syncs_wait - make a job wait for the in-syncobjs
 * @job: the job, not yet armed
 * @syncs: from pagoda_submit_syncs_get()
 *
 * Return: 0 or -ENOMEM.
 */
int pagoda_submit_syncs_wait(struct pagoda_render_job *job, struct pagoda_submit_syncs *syncs)
{
	u32 i;
	int ret;

	for (i = 0; i < syncs->in_count; i++) {
		ret = drm_sched_job_add_dependency(&job->base, dma_fence_get(syncs->in_fences[i]));
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * pagoda_submit_syncs_signal - the out-syncobjs get a submission's fence
 * @file: the caller's file
 * @syncs: from pagoda_submit_syncs_get()
 * @fence: the fence (a point added to a timeline, a binary one replaced)
 */
void pagoda_submit_syncs_signal(struct drm_file *file, struct pagoda_submit_syncs *syncs,
				struct dma_fence *fence)
{
	u32 i;

	for (i = 0; i < syncs->out_count; i++)
		pagoda_syncobj_signal(file, &syncs->out[i], &syncs->chains[i], fence);
}

/**
 * pagoda_submit_syncs_put - release what pagoda_submit_syncs_get() made
 * @syncs: the syncobjs
 */
void pagoda_submit_syncs_put(struct pagoda_submit_syncs *syncs)
{
	u32 i;

	for (i = 0; syncs->chains && i < syncs->out_count; i++)
		dma_fence_chain_free(syncs->chains[i]);
	for (i = 0; syncs->in_fences && i < syncs->in_count; i++)
		dma_fence_put(syncs->in_fences[i]);
	kfree(syncs->in_fences);
	kfree(syncs->chains);
	kfree(syncs->in);
	kfree(syncs->out);
}
