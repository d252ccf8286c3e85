// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda render recovery
 *
 * A job that runs longer than pagoda_hang_timeout() (the hang_timeout_ms
 * module parameter, 10 s by default) is treated as hung (drm_sched's
 * timeout): it is guilty, its context banned, and the render engine is
 * reset. The hung job fails with -ETIMEDOUT; every other job the reset
 * aborted is innocent and runs again from its start with a new engine
 * fence (its scheduler fence, the one user space holds, is the same),
 * except those of banned contexts (-ECANCELED). An engine that does not
 * come back from its reset is promoted to an adapter reset
 * (pagoda_reset.c), as is a paging engine that makes no progress.
 */

#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

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

	if (!drm_dev_enter(pgdev->drm, &idx))
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
 * The jobs run directly (pagoda_sched.c) that the scheduler has not taken
 * yet are on no pending list: one the reset aborted runs again the same
 * way, as innocent, unless its context is banned or it cannot run; then
 * the scheduler runs it in its turn (or cancels it).
 */
static void pagoda_render_resubmit_direct(struct pagoda_device *pgdev, u64 reset)
{
	struct pagoda_render_job *job, *next;
	struct dma_fence *fence;

	mutex_lock(&pgdev->render_direct_lock);
	list_for_each_entry_safe(job, next, &pgdev->render_direct, direct_link) {
		if (!dma_fence_is_signaled(job->direct) || job->direct->error != -ETIMEDOUT)
			continue;
		pagoda_ctx_reset_hit(job->ctx, reset);
		fence = READ_ONCE(job->ctx->banned) ? NULL : pagoda_render_run_job(&job->base);
		dma_fence_put(job->direct);
		if (IS_ERR_OR_NULL(fence)) {
			job->direct = NULL;
			list_del(&job->direct_link);
			pagoda_render_queue(job);
			continue;
		}
		WRITE_ONCE(job->ctx->reset_innocent, true);
		job->direct = fence;
	}
	mutex_unlock(&pgdev->render_direct_lock);
}

/*
 * After a reset, with the scheduler stopped: each job the reset aborted
 * (its engine fence failed with -ETIMEDOUT) runs again with a new engine
 * fence unless it is @bad (it keeps the failed fence: -ETIMEDOUT) or its
 * context was banned (-ECANCELED). Jobs that retired before the reset keep
 * their fence and its status; one the reset did not reach (no reset, the
 * device going away) keeps waiting for its own. Then the same for the jobs
 * run directly that the scheduler has not taken.
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
	pagoda_render_resubmit_direct(pgdev, reset);
}

/**
 * pagoda_render_timedout_job - the scheduler's timeout: a job hung
 * @sched_job: the job that ran pagoda_hang_timeout()
 *
 * It is guilty, its context banned. The render engine is reset; when it
 * does not come back the whole adapter is (pagoda_adapter_reset()).
 * Innocent jobs the reset aborted run again.
 *
 * Return: DRM_GPU_SCHED_STAT_NOMINAL.
 */
enum drm_gpu_sched_stat pagoda_render_timedout_job(struct drm_sched_job *sched_job)
{
	struct pagoda_render_job *job = to_render_job(sched_job);
	struct pagoda_device *pgdev = job->ctx->gpu;
	struct drm_gpu_scheduler *sched = &pgdev->render_sched;

	pagoda_gpu_warn(pgdev, "render job of context %u timed out: engine reset\n",
			job->ctx->id);
	mutex_lock(&pgdev->recovery_lock);
	drm_sched_stop(sched, sched_job);
	WRITE_ONCE(job->ctx->reset_guilty, true);
	/* no fault record: CTX_QUERY reports a ban without one */
	pagoda_gpu_ctx_ban(job->ctx);
	if (!pagoda_render_engine_reset(pgdev)) {
		pagoda_gpu_err(pgdev, "render engine did not come back: adapter reset\n");
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
