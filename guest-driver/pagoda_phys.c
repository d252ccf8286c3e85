// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda physical-mode submission and DMA buffer splitting
 *
 * DRM_IOCTL_PAGODA_SUBMIT_PHYS runs a DMA buffer on the render engine in
 * physical mode, the model's submission for engines without GPU virtual
 * addressing. User space gives the buffer, an allocation list and a
 * patch-location list (struct drm_pagoda_phys_patch). The kernel copies
 * the buffer and parses it (pagoda_parse.c); only then does anything
 * change. The copy lives in a pinned, physically accessed kernel
 * allocation (@buf) that the engine runs from; allocations of the list
 * must have been created physically accessed (contiguous in a memory
 * segment, in the aperture when in system memory), others are refused.
 *
 * Paging and splitting follow the model: the entries are processed in
 * order. Each locks its allocation (drm_exec), places it where the engine
 * reaches it physically (paging it in, evicting others) and writes its
 * (segment, offset) at the patch offset of @buf, while the resource table
 * (one row per slot id, DRM_PAGODA_MAX_SLOT_ID rows, zeroed per buffer)
 * records which allocation each slot holds. When one cannot be placed,
 * the buffer from the previous split point up to that entry's split offset
 * is pushed as a portion (a render job of the context). The allocations
 * the table holds at that split offset stay locked, so nothing moves them;
 * the others are unlocked and may be evicted (their eviction waits for the
 * portion), and paging resumes at the first entry of that split offset.
 * Entries sharing that split offset reprogram their slots there, so the
 * allocations they held lose their placement restriction. A NULL
 * allocation empties its slot. A split offset at which nothing can be
 * placed although nothing is held apart from what it needs fails with
 * ENOSPC; a buffer whose table at some split offset needs more than all
 * the memory the engine reaches is refused before it runs.
 *
 * Victims: when the buffer splits, the allocations it has locked are put
 * at the tail of TTM's LRU in order of their next use in the rest of the
 * patch-location list, farthest (or never) first, so that eviction takes
 * what the buffer needs last (the model gives this future for free).
 * Past this buffer's last entry the future goes on in the buffers queued
 * behind it (@phys_queue), which run next and in that order: an
 * allocation this buffer does not use again has its next use there. With
 * the module parameter split_lru they stay in plain LRU order (each moved
 * to the tail when used), for comparison.
 *
 * The queue: physical submissions run one at a time device-wide, in the
 * order they join @phys_queue, once their buffer and lists are copied and
 * checked. The first buffer of the queue takes its turn (unless debugfs
 * phys_hold is open), runs, and leaves, which gives the next its turn; a
 * signal while waiting takes a buffer out of the queue, and nothing has
 * changed (EINTR).
 *
 * Portions run back to back: the render engine cannot save a context, so
 * no other context's job may run between two portions, while paging jobs
 * (which are not on the render scheduler) do. With drm_sched this is a
 * barrier fence: the first portion of a split buffer, when the scheduler
 * runs it, makes the barrier active, and the scheduler's prepare_job hook
 * then makes every job that is not a portion of this buffer wait for it;
 * the last portion, when it runs, signals it. Jobs of the submitting
 * context cannot slip in between portions either: the context's submit
 * lock is held from the first portion to the last. Deadlocks are avoided
 * on three sides: the barrier becomes active only once the first portion
 * runs (so it never waits for in-fences behind the barrier); portions wait
 * only for the moves of their allocations (usage KERNEL: paging jobs,
 * never render jobs); and while a buffer is being split, eviction skips
 * allocations with render jobs not yet handed to the engine from other
 * contexts (pagoda_split_blocks_eviction()), which the barrier may hold
 * back. Physical submissions take turns device-wide (@phys_queue), so
 * one buffer at a time is split.
 *
 * A split buffer that fails after a portion was pushed (no room even at a
 * fresh split point, a signal, a lost device) bans its context: the rest
 * of the buffer does not run, and its state is unknown.
 */

#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_exec.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>

#include "pagoda_drv.h"
#include "pagoda_phys.h"
#include "pagoda_trace.h"
#include "pagoda_vm.h"

static bool split_lru;
module_param(split_lru, bool, 0644);
MODULE_PARM_DESC(split_lru, "Victims of DMA buffer splitting in plain LRU order, not by next use (for comparison)");

static const char *pagoda_barrier_name(struct dma_fence *fence)
{
	return "pagoda-split";
}

static const struct dma_fence_ops pagoda_barrier_ops = {
	.get_driver_name = pagoda_barrier_name,
	.get_timeline_name = pagoda_barrier_name,
};

/* The barrier of a buffer about to be split; its lock is the device's. */
static struct dma_fence *pagoda_barrier_create(struct pagoda_device *pgdev)
{
	struct dma_fence *fence = kzalloc(sizeof(*fence), GFP_KERNEL);

	if (fence)
		dma_fence_init(fence, &pagoda_barrier_ops, &pgdev->split_lock,
			       pgdev->split_fence_context, ++pgdev->split_seqno);
	return fence;
}

/**
 * pagoda_split_blocks_eviction - whether eviction must skip an allocation
 * @tbo: a reserved allocation TTM considers evicting
 *
 * While a buffer is being split, a render job of another context that the
 * scheduler has not handed to the engine may be held back by the split's
 * barrier: waiting for it would wait for the split itself.
 *
 * Return: true when @tbo has such a job in its reservation.
 */
bool pagoda_split_blocks_eviction(struct ttm_buffer_object *tbo)
{
	/* from the TTM device: a ghost object (an old resource) has no GEM device */
	struct pagoda_device *pgdev = bdev_to_pagoda_device(tbo->bdev);
	struct pagoda_gpu_ctx *splitting = READ_ONCE(pgdev->split_ctx);
	struct dma_resv_iter cursor;
	struct dma_fence *fence;

	if (!splitting)
		return false;
	dma_resv_for_each_fence(&cursor, tbo->base.resv, DMA_RESV_USAGE_BOOKKEEP, fence) {
		struct drm_sched_fence *s_fence = to_drm_sched_fence(fence);

		if (s_fence && s_fence->sched == &pgdev->render_sched &&
		    s_fence->owner != splitting && !dma_fence_is_signaled(&s_fence->scheduled))
			return true;
	}
	return false;
}

static u64 pagoda_phys_capacity(struct pagoda_device *pgdev)
{
	return pgdev->segs[PAGODA_SEG_VRAM].size + pgdev->segs[PAGODA_SEG_VRAM_HIDDEN].size +
	       (u64)pgdev->gart.entries * PAGODA_GART_PAGE_SIZE;
}

/*
 * Refuse a buffer that can never run: at some split offset the allocations
 * its table holds need more than all the memory the engine reaches.
 */
static int pagoda_phys_check_fits(struct pagoda_phys_submit *s)
{
	u64 capacity = pagoda_phys_capacity(s->pgdev) - s->buf->tbo.base.size;
	s16 *table = s->table;
	u32 i, slot;

	memset(table, 0xff, sizeof(s->table));
	for (i = 0; i < s->patch_count; i++) {
		const struct drm_pagoda_phys_patch *p = &s->patches[i];
		DECLARE_BITMAP(seen, DRM_PAGODA_PHYS_MAX_ALLOCS);
		u64 need = 0;

		table[p->slot_id] = s->bos[p->alloc_index] ? p->alloc_index : -1;
		if (i + 1 < s->patch_count && s->patches[i + 1].split_offset == p->split_offset)
			continue;
		bitmap_zero(seen, DRM_PAGODA_PHYS_MAX_ALLOCS);
		for (slot = 0; slot < DRM_PAGODA_MAX_SLOT_ID; slot++) {
			if (table[slot] < 0 || __test_and_set_bit(table[slot], seen))
				continue;
			need += s->alloc_size[table[slot]];
		}
		if (need > capacity)
			return -ENOSPC;
	}
	return 0;
}

/* Write the physical address of @p's allocation at its patch offset. */
static void pagoda_phys_patch(struct pagoda_phys_submit *s, const struct drm_pagoda_phys_patch *p)
{
	u64 paddr = pagoda_bo_contiguous_paddr(s->bos[p->alloc_index]) + p->alloc_offset;

	iosys_map_wr(&s->buf_map, p->patch_offset, u64, cpu_to_le64(paddr));
}

/*
 * Place allocation @a: into its preferred segment, then into any allowed
 * one, then a miss (-ENOSPC). TTM's eviction locks others' allocations
 * with this transaction's ticket and reports a contention there as
 * -ENOSPC, after which nothing more may be locked before the transaction
 * ends: each failed step ends it (-EAGAIN), and the next transaction,
 * which resumes at the split point, takes the allocation's next step.
 * Steps only advance until the next split, so the restarts are bounded.
 */
static int pagoda_phys_place(struct pagoda_phys_submit *s, u32 a, struct ttm_operation_ctx *ctx)
{
	u8 *step = &s->place_step[a];
	int ret;

	if (*step == 2)
		return -ENOSPC;
	ret = pagoda_bo_place_step(s->bos[a], !*step, ctx);
	if (pagoda_bo_place_failed(ret)) {
		++*step;
		return -EAGAIN;
	}
	return ret;
}

/* Lock and place the allocation of entry @i, and patch it in when @patch. */
static int pagoda_phys_page_in(struct pagoda_phys_submit *s, struct drm_exec *exec, u32 i,
			       bool patch)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };
	const struct drm_pagoda_phys_patch *p = &s->patches[i];
	struct pagoda_bo *bo = s->bos[p->alloc_index];
	int ret;

	ret = drm_exec_lock_obj(exec, &bo->tbo.base);
	if (ret)
		return ret;
	ret = pagoda_phys_place(s, p->alloc_index, &ctx);
	if (ret)
		return ret;
	if (split_lru)
		ttm_bo_move_to_lru_tail_unlocked(&bo->tbo);
	bo->phys_last_use = ++s->pgdev->phys_clock;
	if (patch)
		pagoda_phys_patch(s, p);
	return 0;
}

/* Whether entry @i's binding is the one @table holds. */
static bool pagoda_phys_entry_live(struct pagoda_phys_submit *s, u32 i, const s16 *table)
{
	const struct drm_pagoda_phys_patch *p = &s->patches[i];

	return s->bos[p->alloc_index] && table[p->slot_id] == (s16)p->alloc_index;
}

/*
 * Resume at the split point: the allocations the table keeps are locked
 * (they stayed locked unless a contention made drm_exec start over) and
 * their patches past the split point written again, in case they moved.
 */
static int pagoda_phys_resume(struct pagoda_phys_submit *s, struct drm_exec *exec)
{
	u32 i;
	int ret;

	memcpy(s->table, s->kept, sizeof(s->table));
	for (i = 0; i < s->group; i++) {
		if (!pagoda_phys_entry_live(s, i, s->kept))
			continue;
		ret = pagoda_phys_page_in(s, exec, i, s->patches[i].patch_offset >= s->start);
		if (ret)
			return ret == -ENOMEM ? -ENOSPC : ret;
	}
	return 0;
}

/* Add @fence to an allocation the portion uses, and make the portion wait for its moves. */
static int pagoda_phys_use_bo(struct pagoda_render_job *job, struct pagoda_bo *bo)
{
	int ret;

	ret = dma_resv_reserve_fences(bo->tbo.base.resv, 1);
	if (!ret)
		ret = drm_sched_job_add_resv_dependencies(&job->base, bo->tbo.base.resv,
							  DMA_RESV_USAGE_KERNEL);
	return ret;
}

/* For each allocation index, whether the portion being pushed uses it. */
static void pagoda_phys_portion_bos(struct pagoda_phys_submit *s, u32 end_entry,
				    unsigned long *used)
{
	u32 i, slot;

	bitmap_zero(used, DRM_PAGODA_PHYS_MAX_ALLOCS);
	for (slot = 0; slot < DRM_PAGODA_MAX_SLOT_ID; slot++)
		if (s->kept[slot] >= 0)
			__set_bit(s->kept[slot], used);
	for (i = s->group; i < end_entry; i++)
		if (s->bos[s->patches[i].alloc_index])
			__set_bit(s->patches[i].alloc_index, used);
}

/*
 * Push the portion [@s->start, @end) as a job; it uses the allocations of
 * the kept table and of entries [@s->group, @end_entry). @more: the buffer
 * continues after it.
 */
static int pagoda_phys_push(struct pagoda_phys_submit *s, u32 end, u32 end_entry, bool more)
{
	DECLARE_BITMAP(used, DRM_PAGODA_PHYS_MAX_ALLOCS);
	struct pagoda_render_job *job;
	struct dma_fence *fence;
	u32 a;
	int ret;

	if (more && !s->barrier) {
		s->barrier = pagoda_barrier_create(s->pgdev);
		if (!s->barrier)
			return -ENOMEM;
		WRITE_ONCE(s->pgdev->split_ctx, s->ctx);
	}
	job = pagoda_render_job_create(s->ctx);
	if (IS_ERR(job))
		return PTR_ERR(job);
	job->physical = true;
	job->phys_addr = pagoda_bo_contiguous_paddr(s->buf) + s->start;
	job->cmd_size = end - s->start;
	if (s->barrier) {
		job->split = dma_fence_get(s->barrier);
		job->split_last = !more;
	}
	ret = s->portions ? 0 : pagoda_submit_syncs_wait(job, s->syncs);
	pagoda_phys_portion_bos(s, end_entry, used);
	for_each_set_bit(a, used, DRM_PAGODA_PHYS_MAX_ALLOCS)
		if (!ret)
			ret = pagoda_phys_use_bo(job, s->bos[a]);
	if (!ret)
		ret = pagoda_phys_use_bo(job, s->buf);
	if (ret) {
		pagoda_render_job_free(job);
		return ret;
	}
	drm_sched_job_arm(&job->base);
	fence = &job->base.s_fence->finished;
	trace_pagoda_phys_portion(s->ctx->id, s->portions, s->start, end);
	for_each_set_bit(a, used, DRM_PAGODA_PHYS_MAX_ALLOCS)
		dma_resv_add_fence(s->bos[a]->tbo.base.resv, fence,
				   s->allocs[a].flags & DRM_PAGODA_PHYS_WRITE ?
				   DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ);
	dma_resv_add_fence(s->buf->tbo.base.resv, fence, DMA_RESV_USAGE_READ);
	dma_fence_put(s->done);
	s->done = dma_fence_get(fence);
	pagoda_render_push(job);
	s->portions++;
	return 0;
}

/*
 * Next use of the allocations this buffer does not use again: in the
 * buffers queued behind it, which run next and in that order. Their
 * entries are numbered on from this buffer's last one. Queued buffers may
 * be other files': the same allocation is the same struct pagoda_bo, whose
 * handles differ.
 */
static void pagoda_phys_next_use_queued(struct pagoda_phys_submit *s, u32 *next)
{
	struct pagoda_device *pgdev = s->pgdev;
	struct pagoda_phys_submit *q = s;
	u32 pos = s->patch_count, unknown = 0, a, i, j;

	for (a = 0; a < s->alloc_count; a++)
		unknown += s->bos[a] && next[a] == U32_MAX;
	mutex_lock(&pgdev->phys_queue_lock);
	list_for_each_entry_continue(q, &pgdev->phys_queue, queue_link) {
		if (!unknown)
			break;
		for (j = 0; j < q->alloc_count; j++) {
			s->queued_index[j] = -1;
			for (a = 0; q->bos[j] && a < s->alloc_count; a++)
				if (s->bos[a] == q->bos[j])
					s->queued_index[j] = a;
		}
		for (i = 0; i < q->patch_count && unknown; i++) {
			s16 own = s->queued_index[q->patches[i].alloc_index];

			if (own >= 0 && next[own] == U32_MAX) {
				next[own] = pos + i;
				unknown--;
			}
		}
		pos += q->patch_count;
	}
	mutex_unlock(&pgdev->phys_queue_lock);
}

/*
 * Next use of each allocation from entry @from on (U32_MAX: never), this
 * buffer's entries first, then the queued buffers'.
 */
static void pagoda_phys_next_use(struct pagoda_phys_submit *s, u32 from, u32 *next)
{
	u32 i;

	for (i = 0; i < s->alloc_count; i++)
		next[i] = U32_MAX;
	for (i = s->patch_count; i-- > from;)
		next[s->patches[i].alloc_index] = i;
	pagoda_phys_next_use_queued(s, next);
}

/* Victim order: the allocation used farthest ahead first. */
static int pagoda_phys_cmp_next_use(const void *a, const void *b)
{
	const u64 *x = a, *y = b;

	return *x < *y ? 1 : *x > *y ? -1 : 0;
}

/*
 * The buffer splits at entry @s->group: the allocations it holds locked go
 * to the LRU tail, the one used farthest ahead first (so evicted first),
 * then those the table does not keep are unlocked.
 */
static void pagoda_phys_release(struct pagoda_phys_submit *s, struct drm_exec *exec)
{
	DECLARE_BITMAP(kept, DRM_PAGODA_PHYS_MAX_ALLOCS);
	u64 *order = s->victims;
	u32 *next = s->next_use;
	struct drm_gem_object *obj;
	unsigned long index;
	u32 a, slot, n = 0;

	bitmap_zero(kept, DRM_PAGODA_PHYS_MAX_ALLOCS);
	for (slot = 0; slot < DRM_PAGODA_MAX_SLOT_ID; slot++)
		if (s->kept[slot] >= 0)
			__set_bit(s->kept[slot], kept);
	if (!split_lru) {
		pagoda_phys_next_use(s, s->group, next);
		drm_exec_for_each_locked_object(exec, index, obj)
			for (a = 0; a < s->alloc_count; a++)
				if (s->bos[a] && &s->bos[a]->tbo.base == obj)
					order[n++] = (u64)next[a] << 32 | a;
		sort(order, n, sizeof(*order), pagoda_phys_cmp_next_use, NULL);
		for (a = 0; a < n; a++)
			ttm_bo_move_to_lru_tail_unlocked(&s->bos[lower_32_bits(order[a])]->tbo);
	}
	for (a = 0; a < s->alloc_count; a++)
		if (s->bos[a] && !test_bit(a, kept))
			drm_exec_unlock_obj(exec, &s->bos[a]->tbo.base);
}

/* Whether allocation @a is a better victim than @b: used later, or as late and less recently. */
static bool pagoda_phys_victim_before(struct pagoda_phys_submit *s, u32 a, u32 b)
{
	if (s->next_use[a] != s->next_use[b])
		return s->next_use[a] > s->next_use[b];
	return READ_ONCE(s->bos[a]->phys_last_use) < READ_ONCE(s->bos[b]->phys_last_use);
}

static int pagoda_phys_cmp_victims(const void *x, const void *y, const void *priv)
{
	u32 a = lower_32_bits(*(const u64 *)x), b = lower_32_bits(*(const u64 *)y);

	return pagoda_phys_victim_before((struct pagoda_phys_submit *)priv, a, b) ? -1 :
	       pagoda_phys_victim_before((struct pagoda_phys_submit *)priv, b, a) ? 1 : 0;
}

/*
 * The victim for entry @i's allocation in segment @seg: among this
 * buffer's allocations there that the split point at @group would not
 * keep, the one used farthest ahead (never first), the least recently used
 * of those, unless it is locked by the pending portion and an unlocked one
 * is never used again (pagoda_phys_next_use()); -1 for none. @in_exec: it is locked by the pending
 * portion. Fills @s->candidates with the unlocked ones.
 */
static int pagoda_phys_victim(struct pagoda_phys_submit *s, struct drm_exec *exec, u32 group,
			      u32 seg, bool *in_exec)
{
	u32 split = s->patches[group].split_offset, *next = s->next_use, a, j;
	DECLARE_BITMAP(kept, DRM_PAGODA_PHYS_MAX_ALLOCS);
	DECLARE_BITMAP(locked, DRM_PAGODA_PHYS_MAX_ALLOCS);
	struct drm_gem_object *obj;
	int victim = -1, free = -1;
	unsigned long index;

	bitmap_zero(kept, DRM_PAGODA_PHYS_MAX_ALLOCS);
	for (a = 0; a < DRM_PAGODA_MAX_SLOT_ID; a++)
		if (s->group_table[a] >= 0)
			__set_bit(s->group_table[a], kept);
	for (j = group; j < s->patch_count && s->patches[j].split_offset == split; j++)
		if (s->group_table[s->patches[j].slot_id] >= 0)
			__clear_bit(s->group_table[s->patches[j].slot_id], kept);
	bitmap_zero(s->candidates, DRM_PAGODA_PHYS_MAX_ALLOCS);
	bitmap_zero(locked, DRM_PAGODA_PHYS_MAX_ALLOCS);
	drm_exec_for_each_locked_object(exec, index, obj)
		for (a = 0; a < s->alloc_count; a++)
			if (s->bos[a] && obj == &s->bos[a]->tbo.base)
				__set_bit(a, locked);
	/* the group's own entries run again right after a split: they come first */
	pagoda_phys_next_use(s, group, next);
	for (a = 0; a < s->alloc_count; a++) {
		struct pagoda_bo *bo = s->bos[a];

		if (!bo || test_bit(a, kept) || READ_ONCE(bo->segment) != seg)
			continue;
		if (victim < 0 || pagoda_phys_victim_before(s, a, victim))
			victim = a;
		if (test_bit(a, locked))
			continue;
		__set_bit(a, s->candidates);
		if (free < 0 || pagoda_phys_victim_before(s, a, free))
			free = a;
	}
	/*
	 * a split frees nothing better than one never used again, by this
	 * buffer or those queued behind it (one only they use again stays:
	 * evicting it costs a miss there, a split costs a portion here)
	 */
	if (victim >= 0 && test_bit(victim, locked) && free >= 0 && next[free] == U32_MAX)
		victim = free;
	*in_exec = victim >= 0 && test_bit(victim, locked);
	return victim;
}

/* Whether @bo fits one of its other segments without evicting anything. */
static bool pagoda_phys_fallback_room(struct pagoda_phys_submit *s, struct pagoda_bo *bo)
{
	u32 n;

	for (n = 1; n < bo->placement.num_placement; n++) {
		u32 mem_type = bo->places[n].mem_type;
		struct ttm_resource_manager *man =
			ttm_manager_type(&s->pgdev->bdev, mem_type);
		u32 seg = pagoda_mem_type_segment(mem_type);

		if (man && seg != PAGODA_SEG_SYSTEM &&
		    ttm_resource_manager_usage(man) + bo->tbo.base.size <= s->pgdev->segs[seg].size)
			return true;
	}
	return false;
}

/*
 * Belady at a miss: entry @i's allocation must come into its preferred
 * memory segment, which has no room. The driver evicts itself the
 * allocation of this buffer used farthest ahead (pagoda_phys_victim()).
 * When that one is locked by the pending portion, it is freed by splitting
 * here (-ENOSPC), better than evicting one needed sooner, unless another
 * of the allocation's segments has room (TTM falls back there). What else needs
 * room (others' allocations) TTM evicts in LRU order. Returns 0 when the
 * allocation is to be placed.
 */
static int pagoda_phys_make_room(struct pagoda_phys_submit *s, struct drm_exec *exec, u32 i,
				 u32 group)
{
	struct pagoda_bo *bo = s->bos[s->patches[i].alloc_index];
	u32 mem_type = bo->places[0].mem_type, seg = pagoda_mem_type_segment(mem_type);
	struct ttm_resource_manager *man = ttm_manager_type(&s->pgdev->bdev, mem_type);
	u32 a, n = 0;
	bool in_exec;
	int ret, victim;

	if (split_lru || (seg != PAGODA_SEG_VRAM && seg != PAGODA_SEG_VRAM_HIDDEN) ||
	    READ_ONCE(bo->segment) == seg)
		return 0;
	if (ttm_resource_manager_usage(man) + bo->tbo.base.size <= s->pgdev->segs[seg].size)
		return 0;
	victim = pagoda_phys_victim(s, exec, group, seg, &in_exec);
	if (victim < 0)
		return 0;	/* others' allocations: TTM's LRU */
	if (in_exec)
		return s->patches[group].split_offset == s->start ||
		       pagoda_phys_fallback_room(s, bo) ? 0 : -ENOSPC;
	/* TTM evicts from the LRU's head: this buffer's candidates in victim order */
	for (a = 0; a < s->alloc_count; a++) {
		if (!s->bos[a] || !test_bit(a, s->candidates))
			continue;
		s->victims[n++] = a;
	}
	sort_r(s->victims, n, sizeof(*s->victims), pagoda_phys_cmp_victims, NULL, s);
	for (a = 0; a < n; a++) {
		struct pagoda_bo *cand = s->bos[lower_32_bits(s->victims[a])];

		ret = drm_exec_lock_obj(exec, &cand->tbo.base);
		if (ret)
			return ret;
		ttm_bo_move_to_lru_tail_unlocked(&cand->tbo);
		drm_exec_unlock_obj(exec, &cand->tbo.base);
	}
	return 0;
}

/* The table there, without the slots the entries of @group_end's split offset reprogram. */
static void pagoda_phys_keep(struct pagoda_phys_submit *s, u32 group)
{
	u32 split = s->patches[group].split_offset, i;

	memcpy(s->kept, s->group_table, sizeof(s->kept));
	for (i = group; i < s->patch_count && s->patches[i].split_offset == split; i++)
		s->kept[s->patches[i].slot_id] = -1;
	s->group = group;
	s->start = split;
}

/*
 * Process the list from the current split point to the end, pushing a
 * portion at each split. Returns -EDEADLK on a contention (drm_exec
 * retries: it resumes at the split point), -EAGAIN after a failed
 * placement step (a new transaction resumes there: pagoda_phys_place()).
 */
static int pagoda_phys_process(struct pagoda_phys_submit *s, struct drm_exec *exec)
{
	u32 i, group;
	int ret;

	ret = drm_exec_lock_obj(exec, &s->buf->tbo.base);
	if (ret)
		return ret;
resume:
	ret = pagoda_phys_resume(s, exec);
	if (ret)
		return ret;
	group = s->group;
	memcpy(s->group_table, s->table, sizeof(s->table));
	for (i = s->group; i < s->patch_count; i++) {
		const struct drm_pagoda_phys_patch *p = &s->patches[i];

		if (p->split_offset != s->patches[group].split_offset) {
			group = i;
			memcpy(s->group_table, s->table, sizeof(s->table));
		}
		if (!s->bos[p->alloc_index]) {
			s->table[p->slot_id] = -1;
			continue;
		}
		ret = pagoda_phys_make_room(s, exec, i, group);
		if (!ret)
			ret = pagoda_phys_page_in(s, exec, i, true);
		if (ret == -ENOSPC || ret == -ENOMEM) {
			/* nothing before it to run: it cannot fit */
			if (p->split_offset == s->start)
				return -ENOSPC;
			ret = pagoda_phys_push(s, p->split_offset, group, true);
			if (ret)
				return ret;
			/* there may be room now */
			memset(s->place_step, 0, sizeof(s->place_step));
			pagoda_phys_keep(s, group);
			pagoda_phys_release(s, exec);
			goto resume;
		}
		if (ret)
			return ret;
		s->table[p->slot_id] = p->alloc_index;
	}
	return pagoda_phys_push(s, s->cmd_size, s->patch_count, false);
}

static int pagoda_phys_run(struct pagoda_phys_submit *s)
{
	struct drm_exec exec;
	int ret;

	memset(s->kept, 0xff, sizeof(s->kept));
	do {
		drm_exec_init(&exec, DRM_EXEC_INTERRUPTIBLE_WAIT | DRM_EXEC_IGNORE_DUPLICATES,
			      s->alloc_count + 1);
		drm_exec_until_all_locked(&exec) {
			ret = pagoda_phys_process(s, &exec);
			drm_exec_retry_on_contention(&exec);
		}
		drm_exec_fini(&exec);
	} while (ret == -EAGAIN);
	return ret;
}

/* The split is over (done or failed): other contexts' jobs run again. */
static void pagoda_phys_end_split(struct pagoda_phys_submit *s, int ret)
{
	if (!s->barrier)
		return;
	WRITE_ONCE(s->pgdev->split_ctx, NULL);
	if (ret) {
		/* the rest of the buffer will not run: see the DOC block */
		if (s->portions)
			pagoda_gpu_ctx_ban(s->ctx);
		pagoda_split_barrier_signal(s->pgdev, s->barrier);
	}
	dma_fence_put(s->barrier);
}

static int pagoda_phys_check_args(const struct drm_pagoda_submit_phys *args)
{
	if (args->flags || args->cmd_size < 4 || args->cmd_size > DRM_PAGODA_SUBMIT_MAX_SIZE ||
	    !IS_ALIGNED(args->cmd_size, 4) || args->alloc_count > DRM_PAGODA_PHYS_MAX_ALLOCS ||
	    args->patch_count > DRM_PAGODA_PHYS_MAX_PATCHES)
		return -EINVAL;
	return 0;
}

/* Entry by entry: what needs no parsing. */
static int pagoda_phys_check_lists(struct pagoda_phys_submit *s)
{
	u32 i, j;

	for (i = 0; i < s->alloc_count; i++) {
		struct drm_pagoda_phys_alloc *a = &s->allocs[i];

		if (a->flags & ~DRM_PAGODA_PHYS_WRITE || (!a->handle && a->flags))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (a->handle && a->handle == s->allocs[j].handle)
				return -EINVAL;
	}
	for (i = 0; i < s->patch_count; i++) {
		struct drm_pagoda_phys_patch *p = &s->patches[i];

		if (p->alloc_index >= s->alloc_count || p->slot_id >= DRM_PAGODA_MAX_SLOT_ID)
			return -EINVAL;
		if (!s->allocs[p->alloc_index].handle) {
			if (p->patch_offset || p->alloc_offset)
				return -EINVAL;
		} else if (!IS_ALIGNED(p->patch_offset, 4) || p->patch_offset >= s->cmd_size) {
			return -EINVAL;
		}
	}
	return 0;
}

/* Copy the lists and the buffer, look the allocations up. */
static int pagoda_phys_copy_in(struct pagoda_phys_submit *s,
			       const struct drm_pagoda_submit_phys *args)
{
	u32 i;
	int ret;

	s->cmds = kvmalloc(s->cmd_size, GFP_KERNEL);
	s->cmd_starts = kvcalloc(BITS_TO_LONGS(s->cmd_size / 4), sizeof(long), GFP_KERNEL);
	s->allocs = kvcalloc(s->alloc_count + 1, sizeof(*s->allocs), GFP_KERNEL);
	s->bos = kvcalloc(s->alloc_count + 1, sizeof(*s->bos), GFP_KERNEL);
	s->alloc_size = kvcalloc(s->alloc_count + 1, sizeof(*s->alloc_size), GFP_KERNEL);
	s->patches = kvcalloc(s->patch_count + 1, sizeof(*s->patches), GFP_KERNEL);
	s->next_use = kvcalloc(s->alloc_count + 1, sizeof(*s->next_use), GFP_KERNEL);
	s->victims = kvcalloc(s->alloc_count + 1, sizeof(*s->victims), GFP_KERNEL);
	if (!s->cmds || !s->cmd_starts || !s->allocs || !s->bos || !s->alloc_size ||
	    !s->patches || !s->next_use || !s->victims)
		return -ENOMEM;
	if (copy_from_user(s->cmds, u64_to_user_ptr(args->cmds), s->cmd_size) ||
	    copy_from_user(s->allocs, u64_to_user_ptr(args->allocs),
			   (size_t)s->alloc_count * sizeof(*s->allocs)) ||
	    copy_from_user(s->patches, u64_to_user_ptr(args->patches),
			   (size_t)s->patch_count * sizeof(*s->patches)))
		return -EFAULT;
	ret = pagoda_phys_check_lists(s);
	if (ret)
		return ret;
	for (i = 0; i < s->alloc_count; i++) {
		struct drm_gem_object *obj;

		if (!s->allocs[i].handle)
			continue;
		obj = drm_gem_object_lookup(s->file, s->allocs[i].handle);
		if (!obj)
			return -ENOENT;
		s->bos[i] = gem_to_pagoda_bo(obj);
		s->alloc_size[i] = obj->size;
		/*
		 * The seed's rule: only allocations accessed physically; and
		 * physical addresses name the GPU's own memory only.
		 */
		if (!(s->bos[i]->flags & DRM_PAGODA_BO_PHYSICAL) ||
		    pagoda_bo_device(s->bos[i]) != s->pgdev)
			return -EINVAL;
	}
	return 0;
}

/* The copy the engine runs, with the buffer in it. */
static int pagoda_phys_make_buf(struct pagoda_phys_submit *s)
{
	int ret;

	s->buf = pagoda_bo_create_kernel(s->pgdev, PAGE_ALIGN(s->cmd_size),
					 DRM_PAGODA_SEGMENT_MASK(PAGODA_SEG_SYSTEM),
					 DRM_PAGODA_BO_PHYSICAL);
	if (IS_ERR(s->buf)) {
		ret = PTR_ERR(s->buf);
		s->buf = NULL;
		return ret == -ENOMEM ? -ENOSPC : ret;
	}
	ret = ttm_bo_reserve(&s->buf->tbo, true, false, NULL);
	if (ret)
		return ret;
	ret = ttm_bo_vmap(&s->buf->tbo, &s->buf_map);
	if (!ret)
		iosys_map_memcpy_to(&s->buf_map, 0, s->cmds, s->cmd_size);
	ttm_bo_unreserve(&s->buf->tbo);
	return ret;
}

static void pagoda_phys_free(struct pagoda_phys_submit *s)
{
	u32 i;

	if (s->buf) {
		if (!iosys_map_is_null(&s->buf_map)) {
			dma_resv_lock(s->buf->tbo.base.resv, NULL);
			ttm_bo_vunmap(&s->buf->tbo, &s->buf_map);
			dma_resv_unlock(s->buf->tbo.base.resv);
		}
		pagoda_bo_free_kernel(s->buf);
	}
	for (i = 0; s->bos && i < s->alloc_count; i++)
		if (s->bos[i])
			drm_gem_object_put(&s->bos[i]->tbo.base);
	dma_fence_put(s->done);
	kvfree(s->cmds);
	kvfree(s->cmd_starts);
	kvfree(s->allocs);
	kvfree(s->bos);
	kvfree(s->alloc_size);
	kvfree(s->patches);
	kvfree(s->next_use);
	kvfree(s->victims);
}

/* The first buffer of the queue takes its turn, unless the queue is held. */
static void pagoda_phys_pass_turn(struct pagoda_device *pgdev)
{
	struct pagoda_phys_submit *first;

	lockdep_assert_held(&pgdev->phys_queue_lock);
	first = list_first_entry_or_null(&pgdev->phys_queue, struct pagoda_phys_submit,
					 queue_link);
	if (!first || first->turn || pgdev->phys_holds)
		return;
	/* what the buffer before it did happens before what it does */
	smp_store_release(&first->turn, true);
	wake_up_all(&pgdev->phys_queue_wait);
}

/* @s leaves the queue (its turn over, or never taken): the next may take its turn. */
static void pagoda_phys_leave_queue(struct pagoda_phys_submit *s)
{
	struct pagoda_device *pgdev = s->pgdev;

	mutex_lock(&pgdev->phys_queue_lock);
	list_del(&s->queue_link);
	pagoda_phys_pass_turn(pgdev);
	mutex_unlock(&pgdev->phys_queue_lock);
}

/*
 * @s joins the queue and waits for its turn. Returns -EINTR on a signal,
 * with @s out of the queue again.
 */
static int pagoda_phys_take_turn(struct pagoda_phys_submit *s)
{
	struct pagoda_device *pgdev = s->pgdev;

	mutex_lock(&pgdev->phys_queue_lock);
	list_add_tail(&s->queue_link, &pgdev->phys_queue);
	pagoda_phys_pass_turn(pgdev);
	mutex_unlock(&pgdev->phys_queue_lock);
	/* pairs with pagoda_phys_pass_turn(): see what the buffer before did */
	if (wait_event_interruptible(pgdev->phys_queue_wait, smp_load_acquire(&s->turn))) {
		/* a turn given meanwhile passes on to the next */
		pagoda_phys_leave_queue(s);
		return -EINTR;
	}
	lock_map_acquire(&pgdev->phys_turn_map);
	return 0;
}

static void pagoda_phys_end_turn(struct pagoda_phys_submit *s)
{
	lock_map_release(&s->pgdev->phys_turn_map);
	pagoda_phys_leave_queue(s);
}

/**
 * pagoda_phys_hold - hold the queue of physical buffers, or release a hold
 * @pgdev: the device
 * @hold: true to hold, false to release a hold
 *
 * While held (debugfs phys_hold open), buffers join the queue but none
 * takes its turn; the one whose turn it is goes on.
 */
void pagoda_phys_hold(struct pagoda_device *pgdev, bool hold)
{
	mutex_lock(&pgdev->phys_queue_lock);
	if (hold)
		pgdev->phys_holds++;
	else if (!--pgdev->phys_holds)
		pagoda_phys_pass_turn(pgdev);
	mutex_unlock(&pgdev->phys_queue_lock);
}

/**
 * pagoda_phys_queue_show - debugfs phys_queue
 * @pgdev: the device
 * @m: the file
 *
 * The buffers queued, then one line per buffer in queue order.
 */
void pagoda_phys_queue_show(struct pagoda_device *pgdev, struct seq_file *m)
{
	struct pagoda_phys_submit *s;

	mutex_lock(&pgdev->phys_queue_lock);
	seq_printf(m, "%zu queued, %u holds\n", list_count_nodes(&pgdev->phys_queue),
		   pgdev->phys_holds);
	list_for_each_entry(s, &pgdev->phys_queue, queue_link)
		seq_printf(m, "context %u: %u bytes, %u allocations, %u entries, %s\n",
			   s->ctx->id, s->cmd_size, s->alloc_count, s->patch_count,
			   s->turn ? "running" : "waiting");
	mutex_unlock(&pgdev->phys_queue_lock);
}

/**
 * pagoda_phys_init - the queue of physical buffers, at probe
 * @pgdev: the device
 *
 * Return: 0 or -ENOMEM.
 */
int pagoda_phys_init(struct pagoda_device *pgdev)
{
	static struct lock_class_key turn_key;

	INIT_LIST_HEAD(&pgdev->phys_queue);
	init_waitqueue_head(&pgdev->phys_queue_wait);
	lockdep_init_map(&pgdev->phys_turn_map, "pagoda_phys_turn", &turn_key, 0);
	return drmm_mutex_init(pgdev->drm, &pgdev->phys_queue_lock);
}

/* Everything that changes the device, under its locks and in its turn. */
static int pagoda_phys_submit(struct pagoda_phys_submit *s)
{
	struct pagoda_device *pgdev = s->pgdev;
	int ret, idx;

	if (!drm_dev_enter(pgdev->drm, &idx))
		return -ENODEV;
	ret = down_read_interruptible(&pgdev->reset_lock);
	if (ret)
		goto exit;
	ret = pagoda_phys_take_turn(s);
	if (ret)
		goto up;
	ret = mutex_lock_interruptible(&s->ctx->submit_lock);
	if (ret)
		goto end_turn;
	ret = READ_ONCE(s->ctx->banned) ? -ECANCELED : pagoda_phys_make_buf(s);
	if (!ret)
		ret = pagoda_phys_check_fits(s);
	if (!ret)
		ret = pagoda_phys_run(s);
	pagoda_phys_end_split(s, ret);
	mutex_unlock(&s->ctx->submit_lock);
end_turn:
	pagoda_phys_end_turn(s);
up:
	up_read(&pgdev->reset_lock);
exit:
	drm_dev_exit(idx);
	return ret;
}

/**
 * pagoda_ioctl_submit_phys - DRM_IOCTL_PAGODA_SUBMIT_PHYS
 * @drm: the DRM device
 * @data: struct drm_pagoda_submit_phys
 * @file: the caller's file
 *
 * Return: 0; -EINVAL for bad arguments, list entries or buffer (see the
 * UAPI), an allocation not created physically accessed or listed twice;
 * -ENOENT for an unknown context, handle or syncobj; -ECANCELED on a
 * banned context; -ENOSPC when the buffer needs more memory at once than
 * the engine reaches; -EFAULT, -ENOMEM, -EINTR, -ENODEV after unplug.
 */
int pagoda_ioctl_submit_phys(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_pagoda_submit_phys *args = data;
	struct pagoda_submit_syncs syncs = {};
	struct pagoda_phys_submit *s;
	int ret;

	ret = pagoda_phys_check_args(args);
	if (ret)
		return ret;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->file = file;
	s->cmd_size = args->cmd_size;
	s->alloc_count = args->alloc_count;
	s->patch_count = args->patch_count;
	s->ctx = pagoda_gpu_ctx_lookup(file->driver_priv, args->ctx_id);
	if (!s->ctx) {
		ret = -ENOENT;
		goto out;
	}
	/* the GPU the context runs on; its allocations are the ones it reaches */
	s->pgdev = s->ctx->gpu;
	ret = pagoda_submit_syncs_get(file, args->in_syncs, args->in_count, args->out_syncs,
				      args->out_count, &syncs);
	if (!ret)
		ret = pagoda_phys_copy_in(s, args);
	if (!ret)
		ret = pagoda_parse_phys(s);
	if (ret)
		goto out;
	s->syncs = &syncs;
	ret = pagoda_phys_submit(s);
	if (s->done)
		pagoda_submit_syncs_signal(file, &syncs, s->done);
	args->portions = s->portions;
out:
	pagoda_submit_syncs_put(&syncs);
	pagoda_phys_free(s);
	if (s->ctx)
		pagoda_gpu_ctx_put(s->ctx);
	kfree(s);
	return ret;
}
