// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda GPU contexts, virtual-mode submission and context slots
 *
 * A GPU context (DRM_IOCTL_PAGODA_CTX_CREATE) runs render jobs on its
 * file's address space. Its jobs go through drm_sched: one scheduler for
 * the render engine, one entity per context at the context's priority.
 * DRM_IOCTL_PAGODA_SUBMIT makes a job of a command buffer named by its VA,
 * with syncobj in-fences (binary or timeline points), prepares the address
 * space (pagoda_vm_prepare_job(): evicted allocations back, their mappings
 * rewritten, the job waiting for the last page-table update and for every
 * move of what the space maps) and puts the job's fence in the
 * reservation of every allocation the space maps, so that none is evicted
 * or freed while the job may use it (the model's residency list).
 *
 * When the scheduler runs a job, the space gets one of the device's
 * contexts (a slot, struct pagoda_slot): the one it had if nobody took it,
 * else a free one, else the least recently used idle one (no job in flight
 * in it), whose root is then set (CTX_ROOT_*; committing also flushes its
 * TLB entries). Slot 0 is the kernel's. Slots change hands only when idle,
 * so a root never changes under running work; the scheduler lets
 * PAGODA_RENDER_JOBS jobs be in flight, fewer than the slots, so a slot is
 * always there. The job is two ring entries in that slot: the virtual one
 * naming the command buffer, then the driver's own that writes the job's
 * completion marker (see pagoda_engine.c).
 *
 * A fault of a user context halts its slot: the engine skips the entries
 * of that slot queued behind, whose jobs fail with -EFAULT like the
 * faulting one. The fault interrupt bans the context of the faulting job
 * (later jobs of it fail with -ECANCELED, submissions with ECANCELED),
 * keeps the record for DRM_IOCTL_PAGODA_CTX_QUERY and takes the slot away
 * from the space; the slot is resumed and freed once its last job retired.
 * The space's next job gets another slot: other processes never notice.
 *
 * A job that runs longer than pagoda_hang_timeout() (the hang_timeout_ms
 * module parameter, 10 s by default) is treated as hung
 * (drm_sched's timeout): it is guilty, its context banned, and the render
 * engine is reset. The hung job fails with -ETIMEDOUT; every other job the
 * reset aborted is innocent and runs again from its start with a new
 * engine fence (its scheduler fence, the one user space holds, is the
 * same), except those of banned contexts (-ECANCELED). An engine that
 * does not come back from its reset is promoted to an adapter reset
 * (pagoda_reset.c), as is a paging engine that makes no progress.
 * DRM_IOCTL_PAGODA_CTX_QUERY reports whether a context was guilty or
 * innocent of a reset, and how many resets stopped its jobs.
 */

#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_exec.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_trace.h"
#include "pagoda_vm.h"

/* Render jobs in flight: fewer than the user slots (1 .. contexts - 1). */
#define PAGODA_RENDER_JOBS	31

/* fewer jobs in flight than user slots: a slot is always free */
static_assert(PAGODA_NUM_CONTEXTS - 1 > PAGODA_RENDER_JOBS);
/* pagoda_slot_get() keeps the slots it skips in a u64 */
static_assert(PAGODA_NUM_CONTEXTS <= 64);
/* two ring entries per job, and one entry always free */
static_assert(PAGODA_RING_ENTRIES > 2 * PAGODA_RENDER_JOBS);

static struct pagoda_render_job *to_render_job(struct drm_sched_job *sched_job)
{
	return container_of(sched_job, struct pagoda_render_job, base);
}

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

/**
 * pagoda_render_job_create - a render job of a context, not yet armed
 * @ctx: the context; the job takes a reference
 *
 * Return: the job, or an ERR_PTR.
 */
struct pagoda_render_job *pagoda_render_job_create(struct pagoda_gpu_ctx *ctx)
{
	struct pagoda_render_job *job = kzalloc(sizeof(*job), GFP_KERNEL);
	int ret;

	if (!job)
		return ERR_PTR(-ENOMEM);
	ret = drm_sched_job_init(&job->base, &ctx->entity, 1, ctx);
	if (ret) {
		kfree(job);
		return ERR_PTR(ret);
	}
	kref_get(&ctx->refcount);
	job->ctx = ctx;
	return job;
}

/**
 * pagoda_render_job_free - drop a job that was not armed
 * @job: from pagoda_render_job_create()
 */
void pagoda_render_job_free(struct pagoda_render_job *job)
{
	drm_sched_job_cleanup(&job->base);
	dma_fence_put(job->split);
	pagoda_gpu_ctx_put(job->ctx);
	kfree(job);
}

/*
 * The barrier of a split buffer: made active when its first portion runs,
 * signalled when its last one runs or goes without running.
 */
static void pagoda_split_job_runs(struct pagoda_device *pgdev, struct pagoda_render_job *job)
{
	unsigned long flags;

	if (job->split_last) {
		pagoda_split_barrier_signal(pgdev, job->split);
		return;
	}
	spin_lock_irqsave(&pgdev->split_lock, flags);
	if (!pgdev->split_active && !dma_fence_is_signaled_locked(job->split))
		pgdev->split_active = dma_fence_get(job->split);
	spin_unlock_irqrestore(&pgdev->split_lock, flags);
}

/**
 * pagoda_split_barrier_signal - the portions of a split buffer are over
 * @pgdev: the device
 * @barrier: the buffer's barrier: other contexts' jobs run again
 */
void pagoda_split_barrier_signal(struct pagoda_device *pgdev, struct dma_fence *barrier)
{
	struct dma_fence *active = NULL;
	unsigned long flags;

	spin_lock_irqsave(&pgdev->split_lock, flags);
	if (pgdev->split_active == barrier) {
		active = pgdev->split_active;
		pgdev->split_active = NULL;
	}
	if (!dma_fence_is_signaled_locked(barrier))
		dma_fence_signal_locked(barrier);
	spin_unlock_irqrestore(&pgdev->split_lock, flags);
	dma_fence_put(active);
}

/*
 * While a split buffer's portions run, every job that is not one of them
 * waits for its barrier (pagoda_phys.c).
 */
static struct dma_fence *pagoda_render_prepare_job(struct drm_sched_job *sched_job,
						   struct drm_sched_entity *entity)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct pagoda_device *pgdev = job->ctx->vm->pgdev;
	struct dma_fence *barrier = NULL;
	unsigned long flags;

	spin_lock_irqsave(&pgdev->split_lock, flags);
	if (pgdev->split_active && pgdev->split_active != job->split &&
	    !dma_fence_is_signaled_locked(pgdev->split_active))
		barrier = dma_fence_get(pgdev->split_active);
	spin_unlock_irqrestore(&pgdev->split_lock, flags);
	return barrier;
}

/* Select a context and write one of its registers; &pgdev->ctx_lock taken. */
static void pagoda_ctx_write(struct pagoda_device *pgdev, u32 slot, u32 reg, u32 value)
{
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, slot);
	pagoda_write(pgdev, reg, value);
}

/* Point @slot at @vm's root, or at nothing. Caller holds the slot lock. */
static void pagoda_slot_set_root(struct pagoda_device *pgdev, u32 slot, struct pagoda_vm *vm)
{
	u64 root = 0;
	u32 entries = 0;

	/* a space that maps nothing yet (physical-mode jobs only) has no root */
	if (vm && vm->root) {
		root = pagoda_pt_root_addr(vm);
		entries = pagoda_pt_root_entries(vm);
	}
	pgdev->slots[slot].rootless = vm && !vm->root;
	spin_lock(&pgdev->ctx_lock);
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_LO, lower_32_bits(root));
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_HI, upper_32_bits(root));
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_ENTRIES, entries);
	spin_unlock(&pgdev->ctx_lock);
}

static bool pagoda_slot_halted(struct pagoda_device *pgdev, u32 slot)
{
	u32 status;

	spin_lock(&pgdev->ctx_lock);
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, slot);
	status = pagoda_read(pgdev, PAGODA_REG_CTX_STATUS);
	spin_unlock(&pgdev->ctx_lock);
	return status & PAGODA_CTX_STATUS_HALTED;
}

/* The free slot, or the least recently used idle one, not in @skip; 0 for none. */
static u32 pagoda_slot_pick(struct pagoda_device *pgdev, u64 skip)
{
	u32 slot, best = 0;

	for (slot = 1; slot < pgdev->params.num_contexts; slot++) {
		struct pagoda_slot *s = &pgdev->slots[slot];

		if (s->active || s->draining || (skip & BIT_ULL(slot)))
			continue;
		if (!s->vm)
			return slot;
		if (!best || time_before(s->last_use, pgdev->slots[best].last_use))
			best = slot;
	}
	return best;
}

/*
 * A slot for one more job of @vm: see the DOC block. Return: the slot, or
 * 0 when none is free.
 */
static u32 pagoda_slot_get(struct pagoda_device *pgdev, struct pagoda_vm *vm)
{
	unsigned long flags;
	u64 skip = 0;
	u32 slot;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	slot = vm->slot;
	while (!slot) {
		slot = pagoda_slot_pick(pgdev, skip);
		if (!slot)
			break;
		/* halted by a fault not yet handled: its handler frees it */
		if (pagoda_slot_halted(pgdev, slot)) {
			skip |= BIT_ULL(slot);
			slot = 0;
			continue;
		}
		if (pgdev->slots[slot].vm)
			pgdev->slots[slot].vm->slot = 0;
		pgdev->slots[slot].vm = vm;
		vm->slot = slot;
		pagoda_slot_set_root(pgdev, slot, vm);
	}
	/*
	 * Lent while the space had no root (physical-mode jobs only, which
	 * never translate, so the root may be set under them): set it now.
	 */
	if (slot && pgdev->slots[slot].rootless && vm->root)
		pagoda_slot_set_root(pgdev, slot, vm);
	if (slot) {
		pgdev->slots[slot].active++;
		pgdev->slots[slot].last_use = jiffies;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
	return slot;
}

/* A job of @slot retired; the last one of a draining slot resumes it. */
static void pagoda_slot_put(struct pagoda_device *pgdev, u32 slot)
{
	struct pagoda_slot *s = &pgdev->slots[slot];
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (!WARN_ON(!s->active) && !--s->active && s->draining) {
		if (drm_dev_enter(&pgdev->drm, &idx)) {
			spin_lock(&pgdev->ctx_lock);
			pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_STATUS,
					 PAGODA_CTX_STATUS_HALTED);
			spin_unlock(&pgdev->ctx_lock);
			pagoda_slot_set_root(pgdev, slot, NULL);
			drm_dev_exit(idx);
		}
		s->draining = false;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/* The job retired: its slot goes back, its time counts for its space. */
static void pagoda_slot_job_done(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct pagoda_render_job *job = container_of(cb, struct pagoda_render_job, slot_cb);
	struct pagoda_vm *vm = job->ctx->vm;
	struct pagoda_engine *engine = &vm->pgdev->engine[PAGODA_ENGINE_RENDER];

	atomic64_add(pagoda_engine_busy_since(engine, job->run_ns),
		     &vm->busy_ns[PAGODA_ENGINE_RENDER]);
	pagoda_slot_put(vm->pgdev, job->slot);
}

/**
 * pagoda_slots_reset - the device forgot every context's root
 * @pgdev: the device, after a reset, with no job in flight
 *
 * Every space's next job sets its root in a slot again.
 */
void pagoda_slots_reset(struct pagoda_device *pgdev)
{
	unsigned long flags;
	u32 slot;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	for (slot = 1; slot < PAGODA_NUM_CONTEXTS; slot++) {
		struct pagoda_slot *s = &pgdev->slots[slot];

		if (s->vm)
			s->vm->slot = 0;
		s->vm = NULL;
		s->draining = false;
		WARN_ON(s->active);
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/**
 * pagoda_slot_release_vm - an address space goes: its slot becomes free
 * @pgdev: the device
 * @vm: the space, with no job in flight
 */
void pagoda_slot_release_vm(struct pagoda_device *pgdev, struct pagoda_vm *vm)
{
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (vm->slot) {
		pgdev->slots[vm->slot].vm = NULL;
		if (drm_dev_enter(&pgdev->drm, &idx)) {
			pagoda_slot_set_root(pgdev, vm->slot, NULL);
			drm_dev_exit(idx);
		}
		vm->slot = 0;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

static struct dma_fence *pagoda_render_run_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct pagoda_gpu_ctx *ctx = job->ctx;
	struct pagoda_device *pgdev = ctx->vm->pgdev;
	struct pagoda_job *hw;
	struct dma_fence *fence;

	int idx;

	if (job->split)
		pagoda_split_job_runs(pgdev, job);
	if (sched_job->s_fence->finished.error)
		return NULL;
	if (READ_ONCE(ctx->banned))
		return ERR_PTR(-ECANCELED);
	/* the context registers are there only while the device is */
	if (!drm_dev_enter(&pgdev->drm, &idx))
		return ERR_PTR(-ENODEV);
	job->slot = pagoda_slot_get(pgdev, ctx->vm);
	if (!job->slot) {
		drm_dev_exit(idx);
		return ERR_PTR(-EBUSY);
	}
	hw = pagoda_job_begin(&pgdev->engine[PAGODA_ENGINE_RENDER]);
	if (IS_ERR(hw)) {
		pagoda_slot_put(pgdev, job->slot);
		drm_dev_exit(idx);
		return ERR_CAST(hw);
	}
	if (job->physical)
		pagoda_job_set_user(hw, job->slot, job->phys_addr, job->cmd_size, false);
	else
		pagoda_job_set_user(hw, job->slot, job->cmd_va, job->cmd_size, true);
	hw->owner = ctx;
	job->run_ns = ktime_get_raw_ns();
	fence = pagoda_job_submit(hw);
	dma_fence_put(job->hw_fence);
	job->hw_fence = dma_fence_get(fence);
	trace_pagoda_render_run(ctx->id, job->slot, fence->seqno);
	if (dma_fence_add_callback(fence, &job->slot_cb, pagoda_slot_job_done)) {
		/*
		 * Retired already (the interrupt came first, or an engine
		 * stopped): it took at most the time since it was handed on.
		 */
		atomic64_add(ktime_get_raw_ns() - job->run_ns,
			     &ctx->vm->busy_ns[PAGODA_ENGINE_RENDER]);
		pagoda_slot_put(pgdev, job->slot);
	}
	drm_dev_exit(idx);
	/* the scheduler takes the submission's reference */
	return fence;
}

/*
 * Reset the render engine: every job it held is aborted (its fence gets
 * -ETIMEDOUT). Returns false when the engine did not come back (still busy,
 * or the ring not empty).
 */
static bool pagoda_render_engine_reset(struct pagoda_device *pgdev)
{
	struct pagoda_engine *engine = &pgdev->engine[PAGODA_ENGINE_RENDER];
	u32 base = PAGODA_REG_ENGINE(PAGODA_ENGINE_RENDER);
	bool back;
	int idx;

	if (!drm_dev_enter(&pgdev->drm, &idx))
		return true;
	mutex_lock(&engine->submit_lock);
	/* what retired before the reset keeps its status */
	pagoda_engine_retire(engine);
	pagoda_write(pgdev, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(PAGODA_ENGINE_RENDER));
	back = !(pagoda_read(pgdev, base + PAGODA_ENG_STATUS) & PAGODA_ENG_STATUS_BUSY) &&
	       pagoda_read(pgdev, base + PAGODA_ENG_RING_HEAD) ==
	       pagoda_read(pgdev, base + PAGODA_ENG_RING_TAIL);
	pagoda_engine_abort_locked(engine, -ETIMEDOUT);
	mutex_unlock(&engine->submit_lock);
	pgdev->engine_resets++;
	drm_dev_exit(idx);
	return back;
}

/* A reset stopped jobs of @ctx: count it once per reset. */
static void pagoda_ctx_reset_hit(struct pagoda_gpu_ctx *ctx, u64 reset)
{
	if (ctx->last_reset != reset) {
		ctx->last_reset = reset;
		ctx->resets++;
	}
}

/*
 * After a reset, with the scheduler stopped: each job the reset aborted
 * (its engine fence failed with -ETIMEDOUT) runs again with a new engine
 * fence unless it is @bad (it keeps the failed fence: -ETIMEDOUT) or its
 * context was banned (-ECANCELED). Jobs that retired before the reset keep
 * their fence and its status; one the reset did not reach (no reset, the
 * device going away) keeps waiting for its own.
 */
static void pagoda_render_resubmit(struct pagoda_device *pgdev, struct drm_sched_job *bad)
{
	struct drm_gpu_scheduler *sched = &pgdev->render_sched;
	u64 reset = ++pgdev->reset_seq;
	struct drm_sched_job *s_job;

	list_for_each_entry(s_job, &sched->pending_list, list) {
		struct pagoda_render_job *job = to_render_job(s_job);
		struct dma_fence *hw = job->hw_fence, *fence;

		s_job->s_fence->parent = NULL;
		if (!hw || !dma_fence_is_signaled(hw) || hw->error != -ETIMEDOUT) {
			s_job->s_fence->parent = hw ? dma_fence_get(hw) : NULL;
			continue;
		}
		pagoda_ctx_reset_hit(job->ctx, reset);
		if (s_job == bad) {
			s_job->s_fence->parent = dma_fence_get(hw);
			continue;
		}
		if (READ_ONCE(job->ctx->banned))
			continue;	/* drm_sched_start() cancels it */
		WRITE_ONCE(job->ctx->reset_innocent, true);
		fence = pagoda_render_run_job(s_job);
		if (IS_ERR(fence))
			dma_fence_set_error(&s_job->s_fence->finished, PTR_ERR(fence));
		else
			s_job->s_fence->parent = fence;
	}
}

/*
 * A job ran pagoda_hang_timeout(): it is guilty, its context banned. The
 * render engine is reset; when it does not come back the whole adapter is
 * (pagoda_adapter_reset()). Innocent jobs the reset aborted run again.
 */
static enum drm_gpu_sched_stat pagoda_render_timedout_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct pagoda_device *pgdev = job->ctx->vm->pgdev;
	struct drm_gpu_scheduler *sched = &pgdev->render_sched;

	drm_warn(&pgdev->drm, "render job of context %u timed out: engine reset\n",
		 job->ctx->id);
	mutex_lock(&pgdev->recovery_lock);
	drm_sched_stop(sched, sched_job);
	WRITE_ONCE(job->ctx->reset_guilty, true);
	/* no fault record: CTX_QUERY reports a ban without one */
	pagoda_gpu_ctx_ban(job->ctx);
	if (!pagoda_render_engine_reset(pgdev)) {
		drm_err(&pgdev->drm, "render engine did not come back: adapter reset\n");
		pagoda_adapter_reset(pgdev, NULL);
	}
	pagoda_render_resubmit(pgdev, sched_job);
	drm_sched_start(sched);
	mutex_unlock(&pgdev->recovery_lock);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

/**
 * pagoda_recover_adapter - the paging engine hung: reset the adapter
 * @pgdev: the device
 * @guilty: the paging job that made no progress; it fails with -ETIMEDOUT
 *
 * Render jobs the reset aborted run again (innocent), paging jobs run again
 * with their original fences.
 */
void pagoda_recover_adapter(struct pagoda_device *pgdev, struct pagoda_job *guilty)
{
	struct drm_gpu_scheduler *sched = &pgdev->render_sched;

	mutex_lock(&pgdev->recovery_lock);
	drm_sched_stop(sched, NULL);
	pagoda_adapter_reset(pgdev, guilty);
	pagoda_render_resubmit(pgdev, NULL);
	drm_sched_start(sched);
	mutex_unlock(&pgdev->recovery_lock);
}

static void pagoda_render_free_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);

	/* a last portion freed without running (its entity was killed) */
	if (job->split_last)
		pagoda_split_barrier_signal(job->ctx->vm->pgdev, job->split);
	/*
	 * The slot's callback goes with the job: drm_sched frees a job once
	 * its scheduler fence signalled, normally from the engine fence's own
	 * callbacks, after the slot's; one still waiting would run on freed
	 * memory.
	 */
	if (job->hw_fence && dma_fence_remove_callback(job->hw_fence, &job->slot_cb))
		pagoda_slot_put(job->ctx->vm->pgdev, job->slot);
	dma_fence_put(job->hw_fence);
	pagoda_render_job_free(job);
}

static const struct drm_sched_backend_ops pagoda_render_sched_ops = {
	.prepare_job = pagoda_render_prepare_job,
	.run_job = pagoda_render_run_job,
	.timedout_job = pagoda_render_timedout_job,
	.free_job = pagoda_render_free_job,
};

static void pagoda_sched_release(struct drm_device *drm, void *arg)
{
	drm_sched_fini(&to_pagoda_device(drm)->render_sched);
	destroy_workqueue(to_pagoda_device(drm)->render_wq);
}

/**
 * pagoda_sched_init - the render engine's scheduler and the slots
 * @pgdev: device being probed
 *
 * Return: 0 or a negative errno.
 */
int pagoda_sched_init(struct pagoda_device *pgdev)
{
	int ret;

	spin_lock_init(&pgdev->slot_lock);
	/* high priority: a job's latency is mostly its worker's wake-up */
	pgdev->render_wq = alloc_ordered_workqueue("pagoda-render", WQ_HIGHPRI | WQ_MEM_RECLAIM);
	if (!pgdev->render_wq)
		return -ENOMEM;
	ret = drm_sched_init(&pgdev->render_sched, &pagoda_render_sched_ops, pgdev->render_wq,
			     DRM_SCHED_PRIORITY_COUNT, PAGODA_RENDER_JOBS, 0,
			     pagoda_hang_timeout(), NULL, NULL, "pagoda-render", pgdev->drm.dev);
	if (ret) {
		destroy_workqueue(pgdev->render_wq);
		return ret;
	}
	return drmm_add_action_or_reset(&pgdev->drm, pagoda_sched_release, NULL);
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

static void pagoda_slot_faulted(struct pagoda_device *pgdev, u32 context);

/**
 * pagoda_sched_faults_lost - the fault queue dropped records
 * @pgdev: the device, its fault queue drained under &pagoda_device.fault_lock
 *
 * A dropped record still halted its context: every halted user slot not
 * known to be draining is handled as faulted, without a record (no context
 * is banned: the jobs the slot skips fail with -EFAULT).
 */
void pagoda_sched_faults_lost(struct pagoda_device *pgdev)
{
	u32 slot;

	for (slot = 1; slot < PAGODA_NUM_CONTEXTS; slot++) {
		unsigned long flags;
		bool draining;

		spin_lock_irqsave(&pgdev->slot_lock, flags);
		draining = pgdev->slots[slot].draining;
		spin_unlock_irqrestore(&pgdev->slot_lock, flags);
		if (!draining && pagoda_slot_halted(pgdev, slot))
			pagoda_slot_faulted(pgdev, slot);
	}
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

/*
 * Slot @context is halted by a fault: it leaves its space (whose next job
 * gets another slot) and is resumed once the jobs in it retired.
 */
static void pagoda_slot_faulted(struct pagoda_device *pgdev, u32 context)
{
	struct pagoda_slot *s = &pgdev->slots[context];
	unsigned long flags;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (s->vm) {
		s->vm->slot = 0;
		s->vm = NULL;
	}
	if (s->active) {
		s->draining = true;
	} else {
		spin_lock(&pgdev->ctx_lock);
		pagoda_ctx_write(pgdev, context, PAGODA_REG_CTX_STATUS, PAGODA_CTX_STATUS_HALTED);
		spin_unlock(&pgdev->ctx_lock);
		pagoda_slot_set_root(pgdev, context, NULL);
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
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
 * Return: 0, -EINVAL for a bad priority, flags or pad, -ENOMEM, -EBUSY
 * when the file has 2^32 - 1 contexts.
 */
int pagoda_ioctl_ctx_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_device *pgdev = to_pagoda_device(drm);
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_pagoda_ctx_create *args = data;
	struct drm_gpu_scheduler *sched = &pgdev->render_sched;
	static const enum drm_sched_priority priorities[] = {
		[DRM_PAGODA_PRIORITY_LOW] = DRM_SCHED_PRIORITY_LOW,
		[DRM_PAGODA_PRIORITY_NORMAL] = DRM_SCHED_PRIORITY_NORMAL,
		[DRM_PAGODA_PRIORITY_HIGH] = DRM_SCHED_PRIORITY_HIGH,
	};
	struct pagoda_gpu_ctx *ctx;
	int ret;

	if (args->flags || args->pad || args->priority > DRM_PAGODA_PRIORITY_HIGH)
		return -EINVAL;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kref_init(&ctx->refcount);
	mutex_init(&ctx->submit_lock);
	ctx->priority = args->priority;
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

/*
 * Prepare the space for the job in drm_gpuvm_exec_lock()'s locking loop,
 * once everything is locked: validation evicts others with the
 * transaction's ticket, which the loop's end closes (ww_acquire_done()).
 */
static int pagoda_submit_prepare(struct drm_gpuvm_exec *vm_exec)
{
	struct pagoda_render_job *job = vm_exec->extra.priv;

	return pagoda_vm_prepare_job(to_pagoda_vm(vm_exec->vm), &vm_exec->exec, &job->base);
}

/* Lock the space, prepare it, arm and push @job. */
static int pagoda_submit_push(struct pagoda_vm *vm, struct pagoda_render_job *job,
			      struct dma_fence **done)
{
	struct drm_gpuvm_exec vm_exec = {
		.vm = &vm->gpuvm,
		.flags = DRM_EXEC_INTERRUPTIBLE_WAIT | DRM_EXEC_IGNORE_DUPLICATES,
		.num_fences = 1,
		.extra = { .fn = pagoda_submit_prepare, .priv = job },
	};
	int ret;

	mutex_lock(&vm->lock);
	ret = pagoda_vm_check_exec(vm, job->cmd_va, job->cmd_size);
	if (ret)
		goto unlock;
	/* a transaction a placement ended runs again (pagoda_vm_place()) */
	vm->place_step = 0;
	while ((ret = drm_gpuvm_exec_lock(&vm_exec)) == -EAGAIN)
		vm->place_step++;
	if (ret)
		goto unlock;	/* the exec is released already */
	drm_sched_job_arm(&job->base);
	trace_pagoda_render_submit(vm, job->ctx->id, job->cmd_va, job->cmd_size);
	*done = dma_fence_get(&job->base.s_fence->finished);
	drm_gpuvm_exec_resv_add_fence(&vm_exec, *done, DMA_RESV_USAGE_BOOKKEEP,
				      DMA_RESV_USAGE_BOOKKEEP);
	drm_sched_entity_push_job(&job->base);
	drm_gpuvm_exec_unlock(&vm_exec);
unlock:
	mutex_unlock(&vm->lock);
	return ret;
}

static int pagoda_submit_check(const struct drm_pagoda_submit *args)
{
	if (args->flags || args->pad || args->cmd_size < 4 ||
	    args->cmd_size > DRM_PAGODA_SUBMIT_MAX_SIZE || !IS_ALIGNED(args->cmd_size, 4) ||
	    !IS_ALIGNED(args->cmd_va, 4) || args->cmd_va > U64_MAX - args->cmd_size)
		return -EINVAL;
	return 0;
}

/**
 * pagoda_ioctl_submit - DRM_IOCTL_PAGODA_SUBMIT
 * @drm: the DRM device
 * @data: struct drm_pagoda_submit
 * @file: the caller's file
 *
 * Return: 0; -EINVAL for bad arguments or sync flags, a syncobj without a
 * fence at the point waited for; -ENOENT for an unknown context or
 * syncobj, or a command buffer not mapped throughout; -EACCES for one
 * mapped no-execute or to zero pages; -ECANCELED on a banned context;
 * -EIO when the space's tables were lost; -ENOSPC, -EBUSY and -ETIMEDOUT
 * from bringing its allocations back; -EFAULT, -ENOMEM, -EINTR, -ENODEV
 * after unplug.
 */
int pagoda_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_device *pgdev = to_pagoda_device(drm);
	struct drm_pagoda_submit *args = data;
	struct pagoda_render_job *job = NULL;
	struct pagoda_submit_syncs syncs = {};
	struct dma_fence *done = NULL;
	struct pagoda_gpu_ctx *ctx;
	int ret, idx;

	ret = pagoda_submit_check(args);
	if (ret)
		return ret;
	ctx = pagoda_gpu_ctx_lookup(file->driver_priv, args->ctx_id);
	if (!ctx)
		return -ENOENT;
	if (READ_ONCE(ctx->banned)) {
		ret = -ECANCELED;
		goto out_put;
	}
	ret = pagoda_submit_syncs_get(file, args->in_syncs, args->in_count, args->out_syncs,
				      args->out_count, &syncs);
	if (ret)
		goto out_free;
	job = pagoda_render_job_create(ctx);
	if (IS_ERR(job)) {
		ret = PTR_ERR(job);
		job = NULL;
		goto out_free;
	}
	job->cmd_va = args->cmd_va;
	job->cmd_size = args->cmd_size;
	ret = pagoda_submit_syncs_wait(job, &syncs);
	if (ret)
		goto out_free;

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_free;
	}
	ret = down_read_interruptible(&pgdev->reset_lock);
	if (!ret) {
		ret = mutex_lock_interruptible(&ctx->submit_lock);
		if (!ret) {
			ret = pagoda_submit_push(ctx->vm, job, &done);
			mutex_unlock(&ctx->submit_lock);
		}
		up_read(&pgdev->reset_lock);
	}
	drm_dev_exit(idx);
	if (ret)
		goto out_free;

	/* the job is the scheduler's now */
	pagoda_submit_syncs_signal(file, &syncs, done);
	dma_fence_put(done);
	job = NULL;

out_free:
	if (job)
		pagoda_render_job_free(job);
	pagoda_submit_syncs_put(&syncs);
out_put:
	pagoda_gpu_ctx_put(ctx);
	return ret;
}
