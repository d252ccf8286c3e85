// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda GPU contexts
 *
 * A GPU context (DRM_IOCTL_PAGODA_CTX_CREATE) runs render jobs on its
 * file's address space, through its own scheduler entity at its priority
 * (pagoda_sched.c), on the render engine of the GPU of the link it was
 * created on. A fault of one of its jobs bans it (the fault
 * interrupt, pagoda_sched_fault()): its later jobs fail with -ECANCELED,
 * its submissions with ECANCELED, and the fault record is kept for
 * DRM_IOCTL_PAGODA_CTX_QUERY, which also reports whether the context was
 * guilty or innocent of a reset and how many resets stopped its jobs
 * (pagoda_recovery.c).
 */

#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

static void pagoda_gpu_ctx_release(struct kref *ref)
{
	struct pagoda_gpu_ctx *ctx = container_of(ref, struct pagoda_gpu_ctx, refcount);

	drm_gpuvm_put(&ctx->vm->gpuvm);
	mutex_destroy(&ctx->submit_lock);
	kfree(ctx);
}

/**
 * pagoda_gpu_ctx_put - drop a reference to a context
 * @ctx: the context
 */
void pagoda_gpu_ctx_put(struct pagoda_gpu_ctx *ctx)
{
	kref_put(&ctx->refcount, pagoda_gpu_ctx_release);
}

/**
 * pagoda_gpu_ctx_ban - its later jobs are cancelled, its submissions refused
 * @ctx: the context
 */
void pagoda_gpu_ctx_ban(struct pagoda_gpu_ctx *ctx)
{
	/* pairs with CTX_QUERY's smp_load_acquire() */
	smp_store_release(&ctx->banned, true);
}

/*
 * Ban the context of the render job whose virtual entry carried @fence.
 * The device queues a fault record before it retires the entry, and the
 * engine's interrupt drains the fault queue before it signals jobs, so the
 * job is still pending; while the fence lock is held it stays so, and its
 * context reference keeps the context.
 */
static void pagoda_ban_faulting_ctx(struct pagoda_device *pgdev, u64 fence,
				    const struct pagoda_fault *fault)
{
	struct pagoda_engine *engine = &pgdev->engine[PAGODA_ENGINE_RENDER];
	struct pagoda_job *job;
	unsigned long flags;

	spin_lock_irqsave(&engine->fence_lock, flags);
	list_for_each_entry(job, &engine->pending, link) {
		struct pagoda_gpu_ctx *ctx = job->owner;

		/* a virtual entry carries the seqno before its job's */
		if (job->fence.seqno != fence + 1 || !ctx)
			continue;
		if (!ctx->banned) {
			ctx->fault = *fault;
			/* pairs with CTX_QUERY's smp_load_acquire(): record first */
			smp_store_release(&ctx->banned, true);
		}
		ctx->vm->faults++;
		ctx->vm->last_fault = *fault;
		break;
	}
	spin_unlock_irqrestore(&engine->fence_lock, flags);
}

/**
 * pagoda_sched_fault - a fault record of a user context
 * @pgdev: the device
 * @context: the record's context (a slot)
 * @fence: the record's fence
 * @fault: what the record says
 *
 * Called with the fault queue drained under &pagoda_device.fault_lock:
 * bans the faulting job's context and takes the halted slot from its
 * space (see the DOC block).
 */
void pagoda_sched_fault(struct pagoda_device *pgdev, u32 context, u64 fence,
			const struct pagoda_fault *fault)
{
	if (fault->engine == PAGODA_ENGINE_RENDER)
		pagoda_ban_faulting_ctx(pgdev, fence, fault);
	pagoda_slot_faulted(pgdev, context);
}

/**
 * pagoda_gpu_ctx_lookup - a context of a file, by id
 * @pfile: the file
 * @id: the context's id
 *
 * Return: the context with a reference, or NULL.
 */
struct pagoda_gpu_ctx *pagoda_gpu_ctx_lookup(struct pagoda_file *pfile, u32 id)
{
	struct pagoda_gpu_ctx *ctx;

	xa_lock(&pfile->contexts);
	ctx = xa_load(&pfile->contexts, id);
	if (ctx)
		kref_get(&ctx->refcount);
	xa_unlock(&pfile->contexts);
	return ctx;
}

/**
 * pagoda_ioctl_ctx_create - DRM_IOCTL_PAGODA_CTX_CREATE
 * @drm: the DRM device
 * @data: struct drm_pagoda_ctx_create
 * @file: the caller's file
 *
 * Return: 0, -EINVAL for a bad priority or flags or an adapter past the
 * link, -ENOMEM, -EBUSY when the file has 2^32 - 1 contexts.
 */
int pagoda_ioctl_ctx_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct pagoda_link *link = pfile->vm->link;
	struct drm_pagoda_ctx_create *args = data;
	struct drm_gpu_scheduler *sched;
	static const enum drm_sched_priority priorities[] = {
		[DRM_PAGODA_PRIORITY_LOW] = DRM_SCHED_PRIORITY_LOW,
		[DRM_PAGODA_PRIORITY_NORMAL] = DRM_SCHED_PRIORITY_NORMAL,
		[DRM_PAGODA_PRIORITY_HIGH] = DRM_SCHED_PRIORITY_HIGH,
	};
	struct pagoda_gpu_ctx *ctx;
	int ret;

	if (args->flags || args->adapter >= link->num_gpus ||
	    args->priority > DRM_PAGODA_PRIORITY_HIGH)
		return -EINVAL;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kref_init(&ctx->refcount);
	mutex_init(&ctx->submit_lock);
	ctx->priority = args->priority;
	ctx->gpu = link->gpu[args->adapter];
	sched = &ctx->gpu->render_sched;
	ret = drm_sched_entity_init(&ctx->entity, priorities[args->priority], &sched, 1, NULL);
	if (ret) {
		kfree(ctx);
		return ret;
	}
	ctx->vm = pfile->vm;
	drm_gpuvm_get(&ctx->vm->gpuvm);
	ret = xa_alloc(&pfile->contexts, &ctx->id, ctx, xa_limit_32b, GFP_KERNEL);
	if (ret) {
		drm_sched_entity_destroy(&ctx->entity);
		pagoda_gpu_ctx_put(ctx);
		return ret;
	}
	args->ctx_id = ctx->id;
	return 0;
}

static void pagoda_gpu_ctx_destroy(struct pagoda_gpu_ctx *ctx)
{
	drm_sched_entity_destroy(&ctx->entity);
	pagoda_gpu_ctx_put(ctx);
}

/**
 * pagoda_ioctl_ctx_destroy - DRM_IOCTL_PAGODA_CTX_DESTROY
 * @drm: the DRM device
 * @data: struct drm_pagoda_ctx_destroy
 * @file: the caller's file
 *
 * Return: 0, -EINVAL for a pad not zero, -ENOENT for an unknown context.
 */
int pagoda_ioctl_ctx_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_pagoda_ctx_destroy *args = data;
	struct pagoda_gpu_ctx *ctx;

	if (args->pad)
		return -EINVAL;
	/* ids start at 1: 0 is the xarray's reserved entry */
	ctx = args->ctx_id ? xa_erase(&pfile->contexts, args->ctx_id) : NULL;
	if (!ctx)
		return -ENOENT;
	pagoda_gpu_ctx_destroy(ctx);
	return 0;
}

/**
 * pagoda_ioctl_ctx_query - DRM_IOCTL_PAGODA_CTX_QUERY
 * @drm: the DRM device
 * @data: struct drm_pagoda_ctx_query
 * @file: the caller's file
 *
 * Return: 0, -EINVAL for a pad not zero, -ENOENT for an unknown context.
 */
int pagoda_ioctl_ctx_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_pagoda_ctx_query *args = data;
	struct pagoda_gpu_ctx *ctx;

	if (args->pad)
		return -EINVAL;
	ctx = pagoda_gpu_ctx_lookup(file->driver_priv, args->ctx_id);
	if (!ctx)
		return -ENOENT;
	args->status = 0;
	args->fault_va = 0;
	args->fault_code = 0;
	args->fault_access = 0;
	args->fault_level = 0;
	args->resets = READ_ONCE(ctx->resets);
	if (READ_ONCE(ctx->reset_guilty))
		args->status |= DRM_PAGODA_CTX_RESET_GUILTY;
	if (READ_ONCE(ctx->reset_innocent))
		args->status |= DRM_PAGODA_CTX_RESET_INNOCENT;
	/* pairs with the ban's smp_store_release(): the record is complete */
	if (smp_load_acquire(&ctx->banned)) {
		args->status |= DRM_PAGODA_CTX_BANNED;
		if (ctx->fault.code) {
			args->status |= DRM_PAGODA_CTX_FAULTED;
			args->fault_va = ctx->fault.va;
			args->fault_code = ctx->fault.code;
			args->fault_access = ctx->fault.access;
			args->fault_level = ctx->fault.level;
		}
	}
	pagoda_gpu_ctx_put(ctx);
	return 0;
}

/**
 * pagoda_file_close_contexts - destroy a closing file's contexts
 * @file: the file
 *
 * Jobs already queued still run (entities are flushed for a while, then
 * the rest are dropped).
 */
void pagoda_file_close_contexts(struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct pagoda_gpu_ctx *ctx;
	unsigned long id;

	xa_for_each(&pfile->contexts, id, ctx) {
		xa_erase(&pfile->contexts, id);
		pagoda_gpu_ctx_destroy(ctx);
	}
	xa_destroy(&pfile->contexts);
}
