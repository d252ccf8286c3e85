// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda render jobs and virtual-mode submission
 *
 * A GPU context (pagoda_context.c) runs render jobs on its file's address
 * space. Its jobs go through drm_sched: one scheduler for the render
 * engine, one entity per context at the context's priority.
 * DRM_IOCTL_PAGODA_SUBMIT makes a job of a command buffer named by its VA,
 * with syncobj in-fences (binary or timeline points: pagoda_syncobj.c),
 * prepares the address space (pagoda_vm_prepare_job(): evicted
 * allocations back, their mappings rewritten, the job waiting for the last
 * page-table update and for every move of what the space maps) and puts
 * the job's fence in the reservation of every allocation the space maps,
 * so that none is evicted or freed while the job may use it (the model's
 * residency list).
 *
 * When the scheduler runs a job, the space gets one of the device's
 * contexts, a slot (pagoda_slot.c); the scheduler lets PAGODA_RENDER_JOBS
 * jobs be in flight, fewer than the slots, so a slot is always there. The
 * job is two ring entries in that slot: the virtual one naming the command
 * buffer, then the driver's own that writes the job's completion marker
 * (see pagoda_engine.c). While the portions of a split physical-mode
 * buffer run, the jobs of other contexts wait (pagoda_phys.c). A job that
 * hangs is handled by pagoda_recovery.c.
 *
 * Direct submission: the scheduler's worker runs on whichever CPU is
 * free, so a job pushed while the engine idles waits for that CPU to wake
 * up, and its completion for the submitter's (docs/performance.md, Where
 * a round trip goes). A SUBMIT whose job could start at once, as nothing
 * may run before it, hands it to the engine itself, before pushing it:
 * its dependencies signalled, no job of any context waiting in the
 * scheduler to be handed on (so none of its own context), the engine
 * idle, no recovery running, the worker not awake for a stream of jobs
 * (pagoda_render_linger()). The scheduler still takes the job in its turn
 * (run_job returns that run's fence), times it out and frees it; only the
 * hand-over came first. A reset that aborts the run before the scheduler
 * took the job runs it again (pagoda_recovery.c). A short job has retired
 * when SUBMIT returns (a doorbell runs the engine's first slice): its
 * out-syncobjs then get a signalled fence instead of the scheduler's,
 * which signals once the worker got to it.
 */

#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_exec.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_trace.h"
#include "pagoda_vm.h"

/* Render jobs in flight: fewer than the user slots (1 .. contexts - 1). */
#define PAGODA_RENDER_JOBS	31

/* fewer jobs in flight than user slots: a slot is always free */
static_assert(PAGODA_NUM_CONTEXTS - 1 > PAGODA_RENDER_JOBS);
/* two ring entries per job, and one entry always free */
static_assert(PAGODA_RING_ENTRIES > 2 * PAGODA_RENDER_JOBS);

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
 * waits for its barrier (pagoda_phys.c): the barrier (a reference) or NULL.
 */
static struct dma_fence *pagoda_split_barrier(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct dma_fence *barrier = NULL;
	unsigned long flags;

	spin_lock_irqsave(&pgdev->split_lock, flags);
	if (pgdev->split_active && pgdev->split_active != job->split &&
	    !dma_fence_is_signaled_locked(pgdev->split_active))
		barrier = dma_fence_get(pgdev->split_active);
	spin_unlock_irqrestore(&pgdev->split_lock, flags);
	return barrier;
}

static struct dma_fence *pagoda_render_prepare_job(struct drm_sched_job *sched_job,
						   struct drm_sched_entity *entity)
{
	return pagoda_split_barrier(to_render_job(sched_job));
}

/*
 * A direct run goes first only onto an idle engine and not between the
 * portions of a split buffer. Checked under the engine's submit lock: a
 * first portion makes its barrier active before it takes that lock, so
 * either this job sees the barrier or it goes on the ring before that
 * portion.
 */
static bool pagoda_render_may_go_first(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct dma_fence *barrier;

	if (pagoda_engine_busy(&pgdev->engine[PAGODA_ENGINE_RENDER]))
		return false;
	barrier = pagoda_split_barrier(job);
	dma_fence_put(barrier);
	return !barrier;
}

/* The job retired: its slot goes back, its time counts for its space. */
static void pagoda_slot_job_done(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct pagoda_render_job *job = container_of(cb, struct pagoda_render_job, slot_cb);
	struct pagoda_vm *vm = job->ctx->vm;
	struct pagoda_device *gpu = job->ctx->gpu;
	struct pagoda_engine *engine = &gpu->engine[PAGODA_ENGINE_RENDER];

	atomic64_add(pagoda_engine_busy_since(engine, job->run_ns),
		     &vm->busy_ns[PAGODA_ENGINE_RENDER]);
	pagoda_slot_put(gpu, job->slot);
}

/*
 * Hand @job to the engine; @direct: only if it may go first
 * (pagoda_render_may_go_first()), else NULL.
 */
static struct dma_fence *pagoda_render_run(struct pagoda_render_job *job, bool direct)
{
	struct drm_sched_job *sched_job = &job->base;
	struct pagoda_gpu_ctx *ctx = job->ctx;
	struct pagoda_device *pgdev = ctx->gpu;
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
	if (!drm_dev_enter(pgdev->drm, &idx))
		return ERR_PTR(-ENODEV);
	job->slot = pagoda_slot_get(pgdev, ctx->vm);
	if (!job->slot) {
		fence = ERR_PTR(-EBUSY);
		goto exit;
	}
	hw = pagoda_job_begin(&pgdev->engine[PAGODA_ENGINE_RENDER]);
	if (IS_ERR(hw)) {
		fence = ERR_CAST(hw);
		goto put_slot;
	}
	if (direct && !pagoda_render_may_go_first(job)) {
		pagoda_job_abort(hw);
		fence = NULL;
		goto put_slot;
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

put_slot:
	pagoda_slot_put(pgdev, job->slot);
exit:
	drm_dev_exit(idx);
	return fence;
}

/**
 * pagoda_render_run_job - hand a render job to the engine
 * @sched_job: the job
 *
 * The scheduler's run_job, and the resubmission of an innocent job after
 * a reset (pagoda_recovery.c).
 *
 * Return: the engine fence, NULL or an ERR_PTR.
 */
struct dma_fence *pagoda_render_run_job(struct drm_sched_job *sched_job)
{
	return pagoda_render_run(to_render_job(sched_job), false);
}

/*
 * How long the scheduler's worker waits for the next job of a stream
 * (pushes less than this apart) before it may fall asleep.
 */
#define PAGODA_RENDER_LINGER_NS	(25 * NSEC_PER_USEC)

/**
 * pagoda_render_queue - count a job the scheduler is to hand to the engine
 * @job: a job not on the ring, pushed or about to be
 *
 * A direct run does not overtake it (pagoda_render_direct_ok()).
 */
void pagoda_render_queue(struct pagoda_render_job *job)
{
	job->queued = true;
	atomic_inc(&job->ctx->gpu->render_queued);
}

/* @job is on the ring, or will not run: direct runs may overtake it. */
static void pagoda_render_dequeue(struct pagoda_render_job *job)
{
	if (job->queued) {
		job->queued = false;
		atomic_dec(&job->ctx->gpu->render_queued);
	}
}

/**
 * pagoda_render_push - hand an armed render job to the scheduler
 * @job: the job
 */
void pagoda_render_push(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	u64 now = ktime_get_raw_ns();

	WRITE_ONCE(pgdev->render_push_gap_ns, now - READ_ONCE(pgdev->render_push_ns));
	WRITE_ONCE(pgdev->render_push_ns, now);
	/* counted first: a job run before it is counted would look like none waiting */
	atomic64_inc(&pgdev->render_pushed);
	if (!job->direct)
		pagoda_render_queue(job);
	drm_sched_entity_push_job(&job->base);
}

/* Whether @job, armed and not pushed, may run before the scheduler takes it. */
static bool pagoda_render_direct_ok(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct dma_fence *fence;
	unsigned long index;

	/* the worker awake for a stream of jobs hands them on as fast */
	if (READ_ONCE(pgdev->render_lingering))
		return false;
	/*
	 * Checked again under the engine's lock (pagoda_render_may_go_first());
	 * here so that a busy engine's full ring is not waited for.
	 */
	if (job->physical || job->split || READ_ONCE(job->ctx->banned) ||
	    atomic_read(&pgdev->render_queued) ||
	    pagoda_engine_busy(&pgdev->engine[PAGODA_ENGINE_RENDER]))
		return false;
	xa_for_each(&job->base.dependencies, index, fence)
		if (!dma_fence_is_signaled(fence) || fence->error)
			return false;
	return true;
}

/*
 * Direct submission (see the DOC block): run @job, armed and not pushed,
 * when nothing may run before it. The caller holds the context's submit
 * lock, so no job of the context is pushed meanwhile; the recovery lock,
 * taken when free, keeps a recovery from running jobs again while this
 * one goes on the ring before them.
 *
 * Return: the run's engine fence (a reference), or NULL when the job is
 * left to the scheduler.
 */
static struct dma_fence *pagoda_render_run_direct(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct dma_fence *fence = NULL;

	if (!mutex_trylock(&pgdev->recovery_lock))
		return NULL;
	if (pagoda_render_direct_ok(job)) {
		fence = pagoda_render_run(job, true);
		if (IS_ERR_OR_NULL(fence)) {
			fence = NULL;	/* the scheduler tries again */
		} else {
			mutex_lock(&pgdev->render_direct_lock);
			job->direct = fence;
			list_add_tail(&job->direct_link, &pgdev->render_direct);
			mutex_unlock(&pgdev->render_direct_lock);
			atomic64_inc(&pgdev->render_direct_runs);
			dma_fence_get(fence);
		}
	}
	mutex_unlock(&pgdev->recovery_lock);
	return fence;
}

/* The fence of @job's direct run for the scheduler, or NULL: it has none. */
static struct dma_fence *pagoda_render_take_direct(struct pagoda_render_job *job)
{
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct dma_fence *fence;

	mutex_lock(&pgdev->render_direct_lock);
	fence = job->direct;
	if (fence) {
		job->direct = NULL;
		list_del(&job->direct_link);
	}
	mutex_unlock(&pgdev->render_direct_lock);
	return fence;
}

/*
 * The scheduler's run_job. A job run directly is on the engine already
 * (or ran again after a reset aborted it: pagoda_recovery.c): that run's
 * fence is its engine fence.
 */
static struct dma_fence *pagoda_render_sched_run_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct dma_fence *fence;

	job->started = true;
	atomic64_inc(&job->ctx->gpu->render_started);
	fence = pagoda_render_take_direct(job);
	if (fence)
		return fence;
	fence = pagoda_render_run_job(sched_job);
	pagoda_render_dequeue(job);
	return fence;
}

/*
 * While jobs stream in, the scheduler's worker waits here, after a job's
 * fences have signalled, for the next one instead of falling asleep: a
 * push that finds it awake only queues its work, where waking it costs
 * the submitting CPU an inter-processor wake-up (docs/performance.md,
 * Where a round trip goes). Not after a lone job: its next comes later
 * than the wait.
 */
static void pagoda_render_linger(struct pagoda_device *pgdev)
{
	u64 start = ktime_get_raw_ns();

	if (READ_ONCE(pgdev->render_push_gap_ns) > PAGODA_RENDER_LINGER_NS ||
	    start - READ_ONCE(pgdev->render_push_ns) > PAGODA_RENDER_LINGER_NS)
		return;
	WRITE_ONCE(pgdev->render_lingering, true);
	while (atomic64_read(&pgdev->render_pushed) == atomic64_read(&pgdev->render_started) &&
	       ktime_get_raw_ns() - start < PAGODA_RENDER_LINGER_NS)
		pagoda_spin();
	WRITE_ONCE(pgdev->render_lingering, false);
}

static void pagoda_render_free_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct pagoda_device *pgdev = job->ctx->gpu;

	/* a last portion freed without running (its entity was killed) */
	if (job->split_last)
		pagoda_split_barrier_signal(job->ctx->gpu, job->split);
	/*
	 * The slot's callback goes with the job: drm_sched frees a job once
	 * its scheduler fence signalled, normally from the engine fence's own
	 * callbacks, after the slot's; one still waiting would run on freed
	 * memory.
	 */
	if (job->hw_fence && dma_fence_remove_callback(job->hw_fence, &job->slot_cb))
		pagoda_slot_put(job->ctx->gpu, job->slot);
	dma_fence_put(job->hw_fence);
	if (!job->started) {
		atomic64_inc(&pgdev->render_started);
		pagoda_render_dequeue(job);
		dma_fence_put(pagoda_render_take_direct(job));
	}
	pagoda_render_job_free(job);
	pagoda_render_linger(pgdev);
}

static const struct drm_sched_backend_ops pagoda_render_sched_ops = {
	.prepare_job = pagoda_render_prepare_job,
	.run_job = pagoda_render_sched_run_job,
	.timedout_job = pagoda_render_timedout_job,
	.free_job = pagoda_render_free_job,
};

static void pagoda_sched_release(struct drm_device *drm, void *arg)
{
	struct pagoda_device *pgdev = arg;

	drm_sched_fini(&pgdev->render_sched);
	destroy_workqueue(pgdev->render_wq);
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
	INIT_LIST_HEAD(&pgdev->render_direct);
	ret = drmm_mutex_init(pgdev->drm, &pgdev->render_direct_lock);
	if (ret)
		return ret;
	/* high priority: a job's latency is mostly its worker's wake-up */
	pgdev->render_wq = alloc_ordered_workqueue("pagoda-render", WQ_HIGHPRI | WQ_MEM_RECLAIM);
	if (!pgdev->render_wq)
		return -ENOMEM;
	ret = drm_sched_init(&pgdev->render_sched, &pagoda_render_sched_ops, pgdev->render_wq,
			     DRM_SCHED_PRIORITY_COUNT, PAGODA_RENDER_JOBS, 0,
			     pagoda_hang_timeout(), NULL, NULL, "pagoda-render", &pgdev->pdev->dev);
	if (ret) {
		destroy_workqueue(pgdev->render_wq);
		return ret;
	}
	return drmm_add_action_or_reset(pgdev->drm, pagoda_sched_release, pgdev);
}

/*
 * Prepare the space for the job in drm_gpuvm_exec_lock()'s locking loop,
 * once everything is locked: validation evicts others with the
 * transaction's ticket, which the loop's end closes (ww_acquire_done()).
 */
static int pagoda_submit_prepare(struct drm_gpuvm_exec *vm_exec)
{
	struct pagoda_render_job *job = vm_exec->extra.priv;

	return pagoda_vm_prepare_job(to_pagoda_vm(vm_exec->vm), job->ctx->gpu, &vm_exec->exec,
				     &job->base);
}

/*
 * Lock the space, prepare it, arm @job and push it, run directly first when
 * it can. @done gets the fence for the out-syncobjs: the scheduler's, or a
 * signalled one when the direct run retired already.
 */
static int pagoda_submit_push(struct pagoda_vm *vm, struct pagoda_render_job *job,
			      struct dma_fence **done)
{
	struct drm_gpuvm_exec vm_exec = {
		.vm = &vm->gpuvm,
		.flags = DRM_EXEC_INTERRUPTIBLE_WAIT | DRM_EXEC_IGNORE_DUPLICATES,
		.num_fences = 1,
		.extra = { .fn = pagoda_submit_prepare, .priv = job },
	};
	struct dma_fence *direct;
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
	/* nothing it maps moves or goes before the scheduler's fence signals */
	drm_gpuvm_exec_resv_add_fence(&vm_exec, *done, DMA_RESV_USAGE_BOOKKEEP,
				      DMA_RESV_USAGE_BOOKKEEP);
	drm_gpuvm_exec_unlock(&vm_exec);
	mutex_unlock(&vm->lock);

	direct = pagoda_render_run_direct(job);
	pagoda_render_push(job);
	if (direct && dma_fence_is_signaled(direct) && !direct->error) {
		ktime_t retired = dma_fence_timestamp(direct);
		struct dma_fence *stub = dma_fence_allocate_private_stub(retired);

		if (stub) {
			dma_fence_put(*done);
			*done = stub;
		}
	}
	dma_fence_put(direct);
	return 0;
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
	struct pagoda_file *pfile = file->driver_priv;
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
	/* preparing the job may move any GPU's allocations and tables */
	ret = pagoda_link_resets_read_lock(pfile->vm->link);
	if (!ret) {
		ret = mutex_lock_interruptible(&ctx->submit_lock);
		if (!ret) {
			ret = pagoda_submit_push(ctx->vm, job, &done);
			mutex_unlock(&ctx->submit_lock);
		}
		pagoda_link_resets_read_unlock(pfile->vm->link);
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
