// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda GPU virtual address spaces
 *
 * Every DRM file gets an address space at open (the model's process
 * address space), kept with drm_gpuvm: its mappings (struct pagoda_vma)
 * in an interval tree, each allocation linked to the mappings of it in
 * each space (drm_gpuvm_bo). Reservations, the model's reserved VA
 * ranges, are a drm_mm of their own: a mapping lies inside one.
 *
 * DRM_IOCTL_PAGODA_VM_BIND runs a batch of operations in order: reserve,
 * free, map, unmap. A map places the allocation where the GPU reaches it
 * (pagoda_bo_place()), makes the page tables it needs, then, with
 * drm_gpuvm_sm_map(), unmaps or splits what was mapped there and writes
 * the new entries, all in one paging batch; an unmap is
 * drm_gpuvm_sm_unmap() the same way. The batch's fence becomes the space's
 * &pagoda_vm.last_update, which every later job of the space waits for,
 * and is what the ioctl's out-syncobj receives.
 *
 * Allocations move (eviction, make-resident, another space's job). A move
 * only marks the allocation's links evicted (drm_gpuvm_bo_evict(), from
 * TTM's move callback, the allocation reserved); before the next job of a
 * space runs, pagoda_vm_prepare_job() locks every allocation the space
 * maps, validates the evicted ones back where they belong (the model's
 * residency list made resident) and rewrites their entries, one ranged
 * TLB flush per mapping, in one batch the job waits for. No job of the
 * space runs in between: a move waits for the jobs using the allocation
 * (they are in its reservation), and the next job waits for the rewrite.
 *
 * Locking: &pagoda_vm.lock serialises the space (bind, job preparation,
 * teardown). Inside it come the reservations, locked together with
 * drm_exec: the space's own (drm_gpuvm's, which its page-table allocations
 * share, so that no table moves while a bind or a job's preparation names
 * it) and those of the allocations involved. Then the paging engine's
 * submit lock while a batch is built, then
 * &pagoda_bo.gpuva_lock, the lock of an allocation's list of links
 * (drm_gem_gpuva_set_lock()), which is innermost: nothing that may free an
 * allocation or submit paging work runs under it.
 */

#include <linux/dma-fence-array.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_exec.h>
#include <drm/drm_file.h>
#include <drm/drm_syncobj.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"
#include "pagoda_trace.h"
#include "pagoda_vm.h"

/* New mappings one map or unmap may need: the map and two split remnants. */
#define PAGODA_VM_PREALLOC	3
/* Mappings a call allocates at once (a run of tile binds needs one each). */
#define PAGODA_VM_POOL		32

/*
 * Mappings come from their own cache, in bulk for a call's operations:
 * one kzalloc() each cost a sixth of a tile bind under TCG.
 */
static struct kmem_cache *pagoda_vma_cache;

/**
 * struct pagoda_vm_bo - an allocation's link to one address space
 * @base: drm_gpuvm's link
 * @rebind: in the list of links whose mappings pagoda_vm_prepare_job()
 *	rewrites, under &pagoda_vm.lock
 */
struct pagoda_vm_bo {
	struct drm_gpuvm_bo base;
	struct list_head rebind;
};

/*
 * The state of one map or unmap of [@va, @va + @size), for the drm_gpuvm
 * callbacks. A map (@remapping) first unmaps what its range held: the
 * tables stay for it. A mapping of exactly that range under 2 MiB (its
 * entries in leaf tables, as the new one's will be) is not cleared at
 * all: the map rewrites its entries (@in_place), one write and one TLB
 * flush instead of two, and a job of the space running meanwhile sees the
 * old entries or the new, never none.
 */
struct pagoda_vm_op_ctx {
	struct pagoda_vm *vm;
	struct pagoda_vm_update *update;
	struct drm_gpuvm_bo *vm_bo;
	u64 va;
	u64 size;
	u64 pte_flags;
	u32 instance;
	bool remapping;
	bool in_place;
	struct pagoda_vma *prealloc[PAGODA_VM_PREALLOC];
	struct list_head released;
	struct list_head *rebind;
};

/*
 * One transaction of a VM_BIND call: its operations' page-table writes,
 * staged and submitted together when the transaction ends (or before a
 * root resize, which must see them), and the mappings they took out,
 * released only then: until the writes are in the ring, the device may
 * still reach what those mappings named. Many operations on one
 * allocation (the tiles of a pool) place it once and take its link once:
 * @placed is the last allocation placed (locked for the transaction, it
 * stays there), @link the last link taken (a reference until the end).
 * @leaf64: the operation being run maps into LEAF64 tables (its
 * reservation is a tiled one, pagoda_vm_leaf64()), found once per
 * operation. @pool holds @pooled zeroed mappings allocated together, for
 * the @ops_left operations still to run.
 */
struct pagoda_vm_bind {
	struct pagoda_vm *vm;
	struct pagoda_vm_update update;
	struct list_head released;
	struct pagoda_vma *spare[PAGODA_VM_PREALLOC];
	struct pagoda_bo *placed;
	struct drm_gpuvm_bo *link;
	bool leaf64;
	u32 ops_left;
	u32 pooled;
	struct pagoda_vma *pool[PAGODA_VM_POOL];
};

static struct pagoda_vma *to_pagoda_vma(struct drm_gpuva *va)
{
	return container_of(va, struct pagoda_vma, base);
}

static struct pagoda_vma *op_ctx_vma(struct pagoda_vm_op_ctx *op_ctx, u64 pte_flags)
{
	unsigned int i;

	for (i = 0; i < PAGODA_VM_PREALLOC; i++) {
		struct pagoda_vma *vma = op_ctx->prealloc[i];

		if (vma) {
			op_ctx->prealloc[i] = NULL;
			vma->pte_flags = pte_flags;
			return vma;
		}
	}
	return NULL;
}

/* Link @vma to @vm_bo under the allocation's link lock (none for zero pages). */
static void pagoda_vma_link(struct pagoda_vma *vma, struct drm_gpuvm_bo *vm_bo)
{
	struct pagoda_bo *bo;

	if (!vm_bo)
		return;
	bo = gem_to_pagoda_bo(vm_bo->obj);
	mutex_lock(&bo->gpuva_lock);
	drm_gpuva_link(&vma->base, vm_bo);
	mutex_unlock(&bo->gpuva_lock);
}

/**
 * pagoda_vm_bo_get - the link of an allocation to a space
 * @vm: the space
 * @obj: the allocation
 *
 * Made if there is none, and listed among the space's external objects:
 * the space's jobs lock it, validate it and fence it from now on.
 *
 * Return: the link (a reference: pagoda_vm_bo_put()), or an ERR_PTR.
 */
struct drm_gpuvm_bo *pagoda_vm_bo_get(struct pagoda_vm *vm, struct drm_gem_object *obj)
{
	struct pagoda_bo *bo = gem_to_pagoda_bo(obj);
	struct drm_gpuvm_bo *vm_bo;

	mutex_lock(&bo->gpuva_lock);
	vm_bo = drm_gpuvm_bo_obtain(&vm->gpuvm, obj);
	mutex_unlock(&bo->gpuva_lock);
	if (!IS_ERR(vm_bo))
		drm_gpuvm_bo_extobj_add(vm_bo);
	return vm_bo;
}

/**
 * pagoda_vm_bo_put - drop a link reference
 * @vm_bo: the link
 *
 * The last one frees the link, which drops its allocation reference: that
 * may free the allocation, so not under its link lock, nor while a batch
 * is built.
 */
void pagoda_vm_bo_put(struct drm_gpuvm_bo *vm_bo)
{
	struct drm_gem_object *obj = vm_bo->obj;
	struct pagoda_bo *bo = gem_to_pagoda_bo(obj);

	drm_gem_object_get(obj);
	mutex_lock(&bo->gpuva_lock);
	drm_gpuvm_bo_put(vm_bo);
	mutex_unlock(&bo->gpuva_lock);
	drm_gem_object_put(obj);
}

/* Unlink and free mappings taken out of the tree by the callbacks below. */
static void pagoda_vm_release_vmas(struct list_head *released)
{
	struct pagoda_vma *vma, *next;

	list_for_each_entry_safe(vma, next, released, link) {
		struct drm_gpuvm_bo *vm_bo = vma->base.vm_bo;

		if (vm_bo) {
			/* unlinking drops the mapping's reference: keep one */
			drm_gpuvm_bo_get(vm_bo);
			mutex_lock(&gem_to_pagoda_bo(vm_bo->obj)->gpuva_lock);
			drm_gpuva_unlink(&vma->base);
			mutex_unlock(&gem_to_pagoda_bo(vm_bo->obj)->gpuva_lock);
			pagoda_vm_bo_put(vm_bo);
		}
		list_del(&vma->link);
		kmem_cache_free(pagoda_vma_cache, vma);
	}
}

static int pagoda_vm_step_map(struct drm_gpuva_op *op, void *priv)
{
	struct pagoda_vm_op_ctx *op_ctx = priv;
	struct pagoda_vm *vm = op_ctx->vm;
	struct pagoda_vma *vma = op_ctx_vma(op_ctx, op_ctx->pte_flags);
	struct drm_gem_object *obj = op->map.gem.obj;
	int ret;

	if (WARN_ON(!vma))
		return -EINVAL;
	ret = pagoda_pt_map(vm, op_ctx->update, op->map.va.addr, op->map.va.range,
			    obj ? gem_to_pagoda_bo(obj) : NULL, op->map.gem.offset,
			    op_ctx->pte_flags, op_ctx->instance, op_ctx->in_place);
	if (ret) {
		kmem_cache_free(pagoda_vma_cache, vma);
		return ret;
	}
	vma->instance = op_ctx->instance;
	drm_gpuva_map(&vm->gpuvm, &vma->base, &op->map);
	pagoda_vma_link(vma, op_ctx->vm_bo);
	return 0;
}

static int pagoda_vm_step_remap(struct drm_gpuva_op *op, void *priv)
{
	struct pagoda_vm_op_ctx *op_ctx = priv;
	struct pagoda_vma *old = to_pagoda_vma(op->remap.unmap->va);
	struct pagoda_vma *prev = NULL, *next = NULL;
	u64 start, range;
	int ret;

	drm_gpuva_op_remap_to_unmap_range(&op->remap, &start, &range);
	if (!op_ctx->vm->dying) {
		ret = pagoda_pt_clear(op_ctx->vm, op_ctx->update, start, range,
				      op_ctx->remapping);
		if (ret)
			return ret;
	}
	if (op->remap.prev)
		prev = op_ctx_vma(op_ctx, old->pte_flags);
	if (op->remap.next)
		next = op_ctx_vma(op_ctx, old->pte_flags);
	if (WARN_ON((op->remap.prev && !prev) || (op->remap.next && !next)))
		return -EINVAL;
	drm_gpuva_remap(prev ? &prev->base : NULL, next ? &next->base : NULL, &op->remap);
	if (prev) {
		prev->instance = old->instance;
		pagoda_vma_link(prev, old->base.vm_bo);
	}
	if (next) {
		next->instance = old->instance;
		pagoda_vma_link(next, old->base.vm_bo);
	}
	list_add_tail(&old->link, &op_ctx->released);
	return 0;
}

static int pagoda_vm_step_unmap(struct drm_gpuva_op *op, void *priv)
{
	struct pagoda_vm_op_ctx *op_ctx = priv;
	struct pagoda_vma *vma = to_pagoda_vma(op->unmap.va);
	int ret;

	op_ctx->in_place = op_ctx->remapping && vma->base.va.addr == op_ctx->va &&
			   vma->base.va.range == op_ctx->size && op_ctx->size < SZ_2M;
	if (!op_ctx->vm->dying && !op_ctx->in_place) {
		ret = pagoda_pt_clear(op_ctx->vm, op_ctx->update, vma->base.va.addr,
				      vma->base.va.range, op_ctx->remapping);
		if (ret)
			return ret;
	}
	drm_gpuva_unmap(&op->unmap);
	list_add_tail(&vma->link, &op_ctx->released);
	return 0;
}

/* Placement steps of a space's transaction: the preferred segment, then any placement, twice. */
#define PAGODA_VM_PLACE_STEPS	3

/**
 * pagoda_vm_place_failed - what a failed placement in a transaction returns
 * @vm: the space, its lock held, in a drm_exec transaction
 * @ret: the placement's errno
 *
 * TTM's eviction locks others' allocations with the transaction's ticket
 * and reports a contention there (-EDEADLK) as a lack of room; after it the
 * ww-mutex rules allow no other lock before the transaction has ended. So
 * a placement that found no room ends the transaction (-EAGAIN), and its
 * caller runs it again with the next &pagoda_vm.place_step; after the last
 * step the lack of room is the answer.
 *
 * Return: -EAGAIN, or @ret.
 */
int pagoda_vm_place_failed(struct pagoda_vm *vm, int ret)
{
	if (pagoda_bo_place_failed(ret) && vm->place_step < PAGODA_VM_PLACE_STEPS - 1)
		return -EAGAIN;
	return ret;
}

/**
 * pagoda_vm_place - place an allocation for the space, in its transaction
 * @vm: the space, its lock held, in a drm_exec transaction
 * @bo: the allocation, locked in it
 *
 * One step of pagoda_bo_place(), by &pagoda_vm.place_step.
 *
 * Return: 0, -EAGAIN when the transaction must end and run again
 * (pagoda_vm_place_failed()), or a negative errno.
 */
int pagoda_vm_place(struct pagoda_vm *vm, struct pagoda_bo *bo)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };

	return pagoda_vm_place_failed(vm, pagoda_bo_place_step(bo, !vm->place_step, &ctx));
}

/*
 * An evicted or moved allocation of the space, reserved: placed back where
 * it belongs, its mappings queued for rewriting.
 */
static int pagoda_vm_bo_validate(struct drm_gpuvm_bo *vm_bo, struct drm_exec *exec)
{
	struct pagoda_vm_bo *pvb = container_of(vm_bo, struct pagoda_vm_bo, base);
	struct pagoda_vm *vm = to_pagoda_vm(vm_bo->vm);
	int ret;

	ret = pagoda_vm_place(vm, gem_to_pagoda_bo(vm_bo->obj));
	if (ret)
		return ret;
	/* off the evicted list (drm_gpuvm_validate() would put it back) */
	drm_gpuvm_bo_evict(vm_bo, false);
	if (list_empty(&pvb->rebind))
		list_add_tail(&pvb->rebind, &vm->rebind);
	return 0;
}

static struct drm_gpuvm_bo *pagoda_vm_bo_alloc(void)
{
	struct pagoda_vm_bo *pvb = kzalloc(sizeof(*pvb), GFP_KERNEL);

	if (!pvb)
		return NULL;
	INIT_LIST_HEAD(&pvb->rebind);
	return &pvb->base;
}

static void pagoda_vm_bo_free(struct drm_gpuvm_bo *vm_bo)
{
	struct pagoda_vm_bo *pvb = container_of(vm_bo, struct pagoda_vm_bo, base);

	list_del(&pvb->rebind);
	kfree(pvb);
}

static void pagoda_vm_free(struct drm_gpuvm *gpuvm)
{
	struct pagoda_vm *vm = to_pagoda_vm(gpuvm);

	mutex_destroy(&vm->lock);
	kfree(vm);
}

static const struct drm_gpuvm_ops pagoda_gpuvm_ops = {
	.vm_free = pagoda_vm_free,
	.vm_bo_alloc = pagoda_vm_bo_alloc,
	.vm_bo_free = pagoda_vm_bo_free,
	.vm_bo_validate = pagoda_vm_bo_validate,
	.sm_step_map = pagoda_vm_step_map,
	.sm_step_remap = pagoda_vm_step_remap,
	.sm_step_unmap = pagoda_vm_step_unmap,
};

/**
 * pagoda_vm_create - a new address space
 * @link: the adapter; the space has page tables on each of its GPUs
 *
 * Return: the space (one reference), or an ERR_PTR.
 */
struct pagoda_vm *pagoda_vm_create(struct pagoda_link *link)
{
	struct pagoda_device *pgdev = link->gpu[0];
	struct drm_gem_object *resv_obj;
	struct pagoda_vm *vm;

	vm = kzalloc(sizeof(*vm), GFP_KERNEL);
	if (!vm)
		return ERR_PTR(-ENOMEM);
	vm->link = link;
	vm->num_pt = link->num_gpus;
	vm->levels = pgdev->params.mmu_levels;
	mutex_init(&vm->lock);
	INIT_LIST_HEAD(&vm->rebind);
	pagoda_bind_queue_init(vm);
	vm->leaf64 = pgdev->params.mmu_caps & PAGODA_MMU_CAPS_64K_LEAF &&
		     pgdev->segs[PAGODA_SEG_VRAM].page_size == PAGODA_TILE_SIZE;
	pagoda_pt_init(vm);
	drm_mm_init(&vm->reservations, DRM_PAGODA_VA_START, vm->va_end - DRM_PAGODA_VA_START);

	resv_obj = drm_gpuvm_resv_object_alloc(&link->drm);
	if (!resv_obj) {
		drm_mm_takedown(&vm->reservations);
		mutex_destroy(&vm->lock);
		kfree(vm);
		return ERR_PTR(-ENOMEM);
	}
	drm_gpuvm_init(&vm->gpuvm, "pagoda", 0, &link->drm, resv_obj, DRM_PAGODA_VA_START,
		       vm->va_end - DRM_PAGODA_VA_START, 0, 0, &pagoda_gpuvm_ops);
	drm_gem_object_put(resv_obj);
	mutex_lock(&link->vm_list_lock);
	list_add_tail(&vm->link_node, &link->vm_list);
	mutex_unlock(&link->vm_list_lock);
	return vm;
}

/* Reservations, drm_gpuvm's mappings and the space's tables all end here. */
static void pagoda_vm_unmap_all(struct pagoda_vm *vm)
{
	struct pagoda_vm_op_ctx op_ctx = { .vm = vm };

	INIT_LIST_HEAD(&op_ctx.released);
	vm->dying = true;
	/* with @dying set, the callbacks write no table: nothing allocates */
	WARN_ON(drm_gpuvm_sm_unmap(&vm->gpuvm, &op_ctx, DRM_PAGODA_VA_START,
				   vm->va_end - DRM_PAGODA_VA_START));
	pagoda_vm_release_vmas(&op_ctx.released);
}

/**
 * pagoda_vm_destroy - tear an address space down at file close
 * @vm: the space; the file's contexts are gone
 *
 * Waits for the space's jobs, unmaps everything, gives its device context
 * back and frees its tables. The memory goes with the last reference
 * (contexts whose jobs are not freed yet hold one).
 */
void pagoda_vm_destroy(struct pagoda_vm *vm)
{
	struct drm_mm_node *node, *next;
	struct pagoda_pt_tree *tree;

	pagoda_bind_queue_fini(vm);
	mutex_lock(&vm->link->vm_list_lock);
	list_del(&vm->link_node);
	mutex_unlock(&vm->link->vm_list_lock);
	dma_resv_wait_timeout(drm_gpuvm_resv(&vm->gpuvm), DMA_RESV_USAGE_BOOKKEEP, false,
			      MAX_SCHEDULE_TIMEOUT);
	mutex_lock(&vm->lock);
	pagoda_vm_unmap_all(vm);
	drm_mm_for_each_node_safe(node, next, &vm->reservations) {
		drm_mm_remove_node(node);
		kfree(container_of(node, struct pagoda_va_reservation, node));
	}
	drm_mm_takedown(&vm->reservations);
	pagoda_vm_for_each_tree(vm, tree)
		pagoda_slot_release_vm(tree->gpu, vm);
	pagoda_pt_fini(vm);
	mutex_unlock(&vm->lock);
	drm_gpuvm_put(&vm->gpuvm);
}

/**
 * pagoda_vm_bo_moved - an allocation left the memory its mappings name
 * @bo: the allocation, reserved
 *
 * Called from TTM's move and swap callbacks: every address space mapping
 * it rewrites its entries before its next job (pagoda_vm_prepare_job()).
 * Another GPU's instance of a linked allocation is mapped as the first's.
 */
void pagoda_vm_bo_moved(struct pagoda_bo *bo)
{
	struct drm_gpuvm_bo *vm_bo;

	if (bo->primary)
		bo = bo->primary;

	mutex_lock(&bo->gpuva_lock);
	drm_gem_for_each_gpuvm_bo(vm_bo, &bo->tbo.base)
		drm_gpuvm_bo_evict(vm_bo, true);
	mutex_unlock(&bo->gpuva_lock);
}

/* Counts a paging batch's time on its engine for its space (fdinfo). */
struct pagoda_vm_busy {
	struct dma_fence_cb cb;
	struct pagoda_vm *vm;
	struct pagoda_engine *engine;
	u64 submit_ns;
};

static void pagoda_vm_busy_done(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct pagoda_vm_busy *busy = container_of(cb, struct pagoda_vm_busy, cb);

	atomic64_add(pagoda_engine_busy_since(busy->engine, busy->submit_ns),
		     &busy->vm->busy_ns[PAGODA_ENGINE_PAGING]);
	kfree(busy);
}

/*
 * Count @fence's time on @engine for @vm. The space outlives it: its
 * teardown waits for its last updates. (A batch of several jobs counts
 * from its last job's retirement back to the one before: its other jobs'
 * time is lost.)
 */
static void pagoda_vm_count_busy(struct pagoda_vm *vm, struct pagoda_engine *engine,
				 struct dma_fence *fence, u64 submit_ns)
{
	struct pagoda_vm_busy *busy = kmalloc(sizeof(*busy), GFP_KERNEL);

	if (!busy)
		return;
	busy->vm = vm;
	busy->engine = engine;
	busy->submit_ns = submit_ns;
	if (dma_fence_add_callback(fence, &busy->cb, pagoda_vm_busy_done)) {
		/* done already: it took at most the time since its submission */
		atomic64_add(ktime_get_raw_ns() - submit_ns, &vm->busy_ns[PAGODA_ENGINE_PAGING]);
		kfree(busy);
	}
}

/**
 * pagoda_vm_update_init - start an update of a space's tables
 * @vm: the space, its lock held
 * @update: the update: a paging batch on each GPU of the link
 * @staged: the batches stage their commands (pagoda_paging_batch_init_staged())
 *
 * On a link the batches are always staged: built side by side, batches
 * that write their rings as they go would hold several paging engines'
 * submit locks at once.
 */
void pagoda_vm_update_init(struct pagoda_vm *vm, struct pagoda_vm_update *update, bool staged)
{
	struct pagoda_pt_tree *tree;

	staged |= vm->num_pt > 1;
	update->helper = (struct pagoda_vm_helper){};
	pagoda_vm_for_each_tree(vm, tree) {
		struct pagoda_paging_batch *batch = &update->batch[tree - vm->pt];

		if (staged)
			pagoda_paging_batch_init_staged(batch, tree->gpu);
		else
			pagoda_paging_batch_init(batch, tree->gpu);
	}
}

/* Write what each batch of @update staged so far to its ring. */
static int pagoda_vm_update_flush(struct pagoda_vm *vm, struct pagoda_vm_update *update)
{
	u32 i;
	int ret;

	for (i = 0; i < vm->num_pt; i++) {
		ret = pagoda_paging_batch_flush(&update->batch[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* pagoda_vm_update_done() for each tree: the aborting error, each tree's result. */
struct pagoda_vm_finish {
	int abort;
	u64 submit_ns;
	int ret[PAGODA_LINK_MAX_ADAPTERS];
};

static int pagoda_vm_finish_tree(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
				 void *arg)
{
	struct pagoda_vm_finish *finish = arg;
	struct dma_fence *fence;

	if (!finish->abort && pagoda_paging_batch_empty(batch))
		return 0;
	fence = pagoda_paging_batch_finish(batch, finish->abort);
	if (IS_ERR(fence)) {
		finish->ret[tree - tree->vm->pt] = PTR_ERR(fence);
		return 0;
	}
	pagoda_vm_count_busy(tree->vm, batch->engine, fence, finish->submit_ns);
	dma_fence_put(tree->last_update);
	tree->last_update = fence;
	return 0;
}

/**
 * pagoda_vm_update_done - submit an update (or abort it)
 * @vm: the space, its lock held
 * @update: the update
 * @ret: 0, or the error that stopped building it: it is aborted
 *
 * Each GPU's batch that is not empty is submitted (on a link the other
 * GPUs' on another CPU meanwhile, pagoda_vm_update_each_tree()); its fence
 * becomes that GPU's last update, which the space's jobs on that GPU wait
 * for. A batch that fails (or is aborted) may have run in part: the
 * tables are not known, the space is lost.
 *
 * Return: @ret, or the first error of a batch.
 */
int pagoda_vm_update_done(struct pagoda_vm *vm, struct pagoda_vm_update *update, int ret)
{
	struct pagoda_vm_finish finish = { .abort = ret, .submit_ns = ktime_get_raw_ns() };
	u32 i;

	/* every batch is finished: an error of one does not stop the others */
	pagoda_vm_update_each_tree(vm, update, pagoda_vm_finish_tree, &finish, true);
	pagoda_vm_update_close(update);
	for (i = 0; i < vm->num_pt; i++) {
		if (finish.ret[i]) {
			vm->lost = true;
			ret = finish.ret[i];
		}
	}
	return ret;
}

/**
 * pagoda_vm_last_update - the last update of a space's tables on every GPU
 * @vm: the space, its lock held
 *
 * Return: a fence that signals once each GPU's last update has (a
 * reference): the update's own fence on a single GPU, a fence array on a
 * link, a signalled stub when there was none; NULL without memory.
 */
struct dma_fence *pagoda_vm_last_update(struct pagoda_vm *vm)
{
	struct dma_fence **fences;
	struct dma_fence_array *array;
	struct pagoda_pt_tree *tree;
	u32 count = 0;

	pagoda_vm_for_each_tree(vm, tree)
		count += !!tree->last_update;
	if (count <= 1) {
		pagoda_vm_for_each_tree(vm, tree)
			if (tree->last_update)
				return dma_fence_get(tree->last_update);
		return dma_fence_get_stub();
	}
	fences = kmalloc_array(count, sizeof(*fences), GFP_KERNEL);
	if (!fences)
		return NULL;
	count = 0;
	pagoda_vm_for_each_tree(vm, tree)
		if (tree->last_update)
			fences[count++] = dma_fence_get(tree->last_update);
	array = dma_fence_array_create(count, fences, dma_fence_context_alloc(1), 1, false);
	if (!array) {
		while (count--)
			dma_fence_put(fences[count]);
		kfree(fences);
		return NULL;
	}
	return &array->base;
}

/*
 * Whether the space's tables are lost: an update failed while being built,
 * or an engine did not complete one (its fence carries the error).
 */
static bool pagoda_vm_is_lost(struct pagoda_vm *vm)
{
	struct pagoda_pt_tree *tree;

	pagoda_vm_for_each_tree(vm, tree) {
		struct dma_fence *fence = tree->last_update;

		if (fence && dma_fence_is_signaled(fence) && fence->error)
			vm->lost = true;
	}
	return vm->lost;
}

/* The reservation holding all of [va, va + size), or NULL. */
static struct pagoda_va_reservation *
pagoda_vm_find_reservation(struct pagoda_vm *vm, u64 va, u64 size)
{
	struct drm_mm_node *node;

	drm_mm_for_each_node_in_range(node, &vm->reservations, va, va + size) {
		if (node->start <= va && va + size <= node->start + node->size)
			return container_of(node, struct pagoda_va_reservation, node);
		return NULL;
	}
	return NULL;
}

/* Whether [va, va + size) lies in a tiled reservation mapped in LEAF64 tables. */
static bool pagoda_vm_leaf64(struct pagoda_vm *vm, u64 va, u64 size)
{
	struct pagoda_va_reservation *res;

	if (!vm->leaf64)
		return false;
	res = pagoda_vm_find_reservation(vm, va, size);
	return res && res->tiled;
}

/* Rewrite the mappings of the links validate queued. */
static int pagoda_vm_rebind(struct pagoda_vm *vm)
{
	struct pagoda_vm_bo *pvb, *next;
	struct pagoda_vm_update update;
	int ret = 0;

	if (list_empty(&vm->rebind))
		return 0;
	/* 2 MiB pages may become 4 KiB ones (and back) where they moved */
	list_for_each_entry(pvb, &vm->rebind, rebind) {
		struct drm_gpuvm_bo *vm_bo = &pvb->base;
		struct drm_gpuva *va;

		drm_gpuvm_bo_for_each_va(va, vm_bo) {
			bool leaf64 = pagoda_vm_leaf64(vm, va->va.addr, va->va.range);

			ret = pagoda_pt_alloc_range(vm, NULL, va->va.addr, va->va.range,
						    gem_to_pagoda_bo(vm_bo->obj), va->gem.offset,
						    to_pagoda_vma(va)->instance, leaf64);
			if (ret) {
				pagoda_pt_put_spares(vm);
				return ret;
			}
		}
	}
	pagoda_vm_update_init(vm, &update, false);
	list_for_each_entry_safe(pvb, next, &vm->rebind, rebind) {
		struct drm_gpuvm_bo *vm_bo = &pvb->base;
		struct drm_gpuva *va;

		drm_gpuvm_bo_for_each_va(va, vm_bo) {
			struct pagoda_vma *vma = to_pagoda_vma(va);

			ret = pagoda_pt_map(vm, &update, va->va.addr, va->va.range,
					    gem_to_pagoda_bo(vm_bo->obj), va->gem.offset,
					    vma->pte_flags, vma->instance, true);
			if (ret)
				break;
		}
		if (ret)
			break;
		list_del_init(&pvb->rebind);
	}
	ret = pagoda_vm_update_done(vm, &update, ret);
	pagoda_pt_put_spares(vm);
	return ret;
}

/**
 * pagoda_vm_prepare_job - make what a space maps usable by a job
 * @vm: the space, its lock held
 * @gpu: the GPU the job runs on
 * @exec: locks every allocation of the space (drm_gpuvm_exec_lock()), in
 *	its locking loop: validation evicts others with its ticket
 * @job: the job, not armed yet
 *
 * Validates the evicted allocations and rewrites their mappings, then
 * makes @job wait for the last update of the space's tables on @gpu and
 * for the moves of every allocation it maps.
 *
 * Return: 0 or a negative errno (-EIO when the space's tables were lost,
 * -EAGAIN when a placement ended the transaction: pagoda_vm_place()).
 */
int pagoda_vm_prepare_job(struct pagoda_vm *vm, struct pagoda_device *gpu, struct drm_exec *exec,
			  struct drm_sched_job *job)
{
	struct dma_fence *last_update;
	struct drm_gem_object *obj;
	unsigned long index;
	int ret;

	if (pagoda_vm_is_lost(vm))
		return -EIO;
	ret = pagoda_pt_restore(vm);
	if (!ret)
		ret = drm_gpuvm_validate(&vm->gpuvm, exec);
	if (!ret)
		ret = pagoda_vm_rebind(vm);
	if (ret)
		return ret;
	drm_exec_for_each_locked_object(exec, index, obj) {
		ret = drm_sched_job_add_resv_dependencies(job, obj->resv, DMA_RESV_USAGE_KERNEL);
		if (ret)
			return ret;
	}
	last_update = pagoda_vm_tree(vm, gpu)->last_update;
	return last_update ? drm_sched_job_add_dependency(job, dma_fence_get(last_update)) : 0;
}

/*
 * Walk the mappings of [va, va + size): -ENOENT when a page of it is not
 * mapped; with @exec, -EACCES when one is mapped no-execute or to zero
 * pages; else 0.
 */
static int pagoda_vm_check_range(struct pagoda_vm *vm, u64 va, u64 size, bool exec)
{
	u64 covered = va, end = va + size;
	struct drm_gpuva *gpuva;

	drm_gpuvm_for_each_va_range(gpuva, &vm->gpuvm, va, end) {
		if (gpuva->va.addr > covered)
			return -ENOENT;
		if (exec && (!gpuva->gem.obj ||
			     to_pagoda_vma(gpuva)->pte_flags & PAGODA_PTE_NO_EXECUTE))
			return -EACCES;
		covered = gpuva->va.addr + gpuva->va.range;
	}
	return covered >= end ? 0 : -ENOENT;
}

/**
 * pagoda_vm_check_exec - whether a command buffer is mapped executable
 * @vm: the space, its lock held
 * @va: the buffer
 * @size: its bytes
 *
 * Return: 0, -ENOENT when a page of it is not mapped, -EACCES when one is
 * mapped no-execute or to zero pages.
 */
int pagoda_vm_check_exec(struct pagoda_vm *vm, u64 va, u64 size)
{
	return pagoda_vm_check_range(vm, va, size, true);
}

/* End of the highest reservation (0 without any). */
static u64 pagoda_vm_extent(struct pagoda_vm *vm)
{
	struct drm_mm_node *last;

	if (list_empty(drm_mm_nodes(&vm->reservations)))
		return 0;
	last = list_last_entry(drm_mm_nodes(&vm->reservations), struct drm_mm_node, node_list);
	return last->start + last->size;
}

/*
 * An operation in a tiled reservation works in whole tiles (VA, size and
 * the offset of a MAP or COPY); a MAP's allocation is one whose every
 * place has 64 KiB pages, when tiles are one LEAF64 entry each.
 */
static bool pagoda_vm_tiles_ok(struct pagoda_vm *vm, const struct drm_pagoda_vm_op *op,
			       struct drm_gem_object *obj)
{
	const u64 mask = DRM_PAGODA_VM_TILE - 1;
	struct pagoda_bo *bo;

	if ((op->va | op->size | op->offset) & mask)
		return false;
	if (!obj || !vm->leaf64)
		return true;
	bo = gem_to_pagoda_bo(obj);
	return pagoda_bo_page_size(bo) == PAGODA_TILE_SIZE &&
	       !(bo->segments & DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM));
}

/*
 * Fit the root to the reservations (2 levels). The root may move: the
 * staged writes go to the ring first, to the tables they name.
 */
static int pagoda_vm_resize_root(struct pagoda_vm_bind *bind)
{
	struct pagoda_vm *vm = bind->vm;
	int ret;

	if (vm->levels != 2)
		return 0;
	ret = pagoda_vm_update_flush(vm, &bind->update);
	if (ret) {
		vm->lost = true;
		return ret;
	}
	return pagoda_pt_resize_root(vm, pagoda_vm_extent(vm));
}

static int pagoda_vm_reserve(struct pagoda_vm_bind *bind, struct drm_pagoda_vm_op *op)
{
	struct pagoda_vm *vm = bind->vm;
	struct pagoda_va_reservation *res;
	u64 size = round_up(op->size, DRM_PAGODA_VA_ALIGN);
	int ret;

	res = kzalloc(sizeof(*res), GFP_KERNEL);
	if (!res)
		return -ENOMEM;
	res->tiled = op->flags & DRM_PAGODA_VM_TILED;
	if (op->flags & DRM_PAGODA_VM_FIXED) {
		res->node.start = op->va;
		res->node.size = size;
		ret = drm_mm_reserve_node(&vm->reservations, &res->node);
		if (ret == -ENOSPC)
			ret = -EEXIST;
	} else {
		ret = drm_mm_insert_node_in_range(&vm->reservations, &res->node, size,
						  res->tiled ? DRM_PAGODA_VM_TILED_ALIGN :
							       DRM_PAGODA_VA_ALIGN, 0,
						  max_t(u64, op->min_va, DRM_PAGODA_VA_START),
						  op->max_va ?: vm->va_end, DRM_MM_INSERT_LOW);
		op->va = res->node.start;
	}
	if (ret) {
		kfree(res);
		return ret;
	}
	ret = pagoda_vm_resize_root(bind);
	if (ret) {
		drm_mm_remove_node(&res->node);
		kfree(res);
	}
	return ret;
}

/**
 * pagoda_vm_module_init - make the cache of mappings
 *
 * Return: 0 or -ENOMEM.
 */
int pagoda_vm_module_init(void)
{
	pagoda_vma_cache = KMEM_CACHE(pagoda_vma, 0);
	return pagoda_vma_cache ? 0 : -ENOMEM;
}

/**
 * pagoda_vm_module_exit - free the cache of mappings, every one of them freed
 */
void pagoda_vm_module_exit(void)
{
	kmem_cache_destroy(pagoda_vma_cache);
}

/* A zeroed mapping for an operation of @bind, from its pool, refilled in bulk. */
static struct pagoda_vma *pagoda_vm_bind_vma(struct pagoda_vm_bind *bind)
{
	if (!bind->pooled)
		bind->pooled = kmem_cache_alloc_bulk(pagoda_vma_cache, GFP_KERNEL | __GFP_ZERO,
						     min(bind->ops_left + PAGODA_VM_PREALLOC,
							 PAGODA_VM_POOL),
						     (void **)bind->pool);
	return bind->pooled ? bind->pool[--bind->pooled] : NULL;
}

/*
 * Map [va, va + size) to @obj at @offset (drm_gpuvm_sm_map()), or unmap it
 * (drm_gpuvm_sm_unmap()) when @op_ctx maps nothing, writing the tables in
 * the call's staged batch. A failure part way loses the space's tables.
 */
static int pagoda_vm_update(struct pagoda_vm_bind *bind, struct pagoda_vm_op_ctx *op_ctx, u64 va,
			    u64 size, struct drm_gem_object *obj, u64 offset)
{
	struct pagoda_vm *vm = bind->vm;
	unsigned int i;
	int ret = 0;

	INIT_LIST_HEAD(&op_ctx->released);
	op_ctx->vm = vm;
	op_ctx->update = &bind->update;
	op_ctx->va = va;
	op_ctx->size = size;
	/* what the call's earlier operations left unused first */
	for (i = 0; i < PAGODA_VM_PREALLOC && !ret; i++) {
		op_ctx->prealloc[i] = bind->spare[i] ?: pagoda_vm_bind_vma(bind);
		bind->spare[i] = NULL;
		if (!op_ctx->prealloc[i])
			ret = -ENOMEM;
	}
	if (!ret) {
		op_ctx->remapping = op_ctx->vm_bo || (op_ctx->pte_flags & PAGODA_PTE_ZERO);
		if (op_ctx->remapping)
			ret = drm_gpuvm_sm_map(&vm->gpuvm, op_ctx, va, size, obj, offset);
		else
			ret = drm_gpuvm_sm_unmap(&vm->gpuvm, op_ctx, va, size);
		if (ret)
			vm->lost = true;
	}
	pagoda_pt_put_spares(vm);
	list_splice_tail(&op_ctx->released, &bind->released);
	for (i = 0; i < PAGODA_VM_PREALLOC; i++)
		bind->spare[i] = op_ctx->prealloc[i];
	return ret;
}

static int pagoda_vm_map(struct pagoda_vm_bind *bind, struct drm_pagoda_vm_op *op,
			 struct drm_gem_object *obj)
{
	struct pagoda_vm *vm = bind->vm;
	struct pagoda_vm_op_ctx op_ctx = {};
	struct pagoda_bo *bo;
	int ret;

	op_ctx.pte_flags = (op->flags & DRM_PAGODA_VM_READ_ONLY ? PAGODA_PTE_READ_ONLY : 0) |
			   (op->flags & DRM_PAGODA_VM_NO_EXECUTE ? PAGODA_PTE_NO_EXECUTE : 0);
	op_ctx.instance = op->instance;
	if (!obj) {
		op_ctx.pte_flags |= PAGODA_PTE_ZERO;
		ret = pagoda_pt_alloc_range(vm, &bind->update, op->va, op->size, NULL, 0, 0,
					    bind->leaf64);
		return ret ?: pagoda_vm_update(bind, &op_ctx, op->va, op->size, NULL, 0);
	}

	/* placed first: where it is decides which spans get 2 MiB pages */
	bo = gem_to_pagoda_bo(obj);
	ret = bind->placed == bo ? 0 : pagoda_vm_place(vm, bo);
	if (!ret) {
		bind->placed = bo;
		ret = pagoda_pt_alloc_range(vm, &bind->update, op->va, op->size, bo, op->offset,
					    op->instance, bind->leaf64);
	}
	if (ret) {
		pagoda_pt_put_spares(vm);
		return ret;
	}
	if (!bind->link || bind->link->obj != obj) {
		struct drm_gpuvm_bo *link = pagoda_vm_bo_get(vm, obj);

		if (IS_ERR(link))
			return PTR_ERR(link);
		if (bind->link)
			pagoda_vm_bo_put(bind->link);
		bind->link = link;
	}
	op_ctx.vm_bo = bind->link;
	return pagoda_vm_update(bind, &op_ctx, op->va, op->size, obj, op->offset);
}

/* Whether [va, va + size) is mapped throughout. */
static bool pagoda_vm_range_mapped(struct pagoda_vm *vm, u64 va, u64 size)
{
	return !pagoda_vm_check_range(vm, va, size, false);
}

static int pagoda_vm_unmap(struct pagoda_vm_bind *bind, u64 va, u64 size)
{
	struct pagoda_vm_op_ctx op_ctx = {};
	int ret;

	ret = pagoda_pt_prepare_clear(bind->vm, va, size);
	if (ret) {
		pagoda_pt_put_spares(bind->vm);
		return ret;
	}
	return pagoda_vm_update(bind, &op_ctx, va, size, NULL, 0);
}

static int pagoda_vm_free_reservation(struct pagoda_vm_bind *bind, struct drm_pagoda_vm_op *op)
{
	struct pagoda_vm *vm = bind->vm;
	struct pagoda_va_reservation *res = pagoda_vm_find_reservation(vm, op->va, op->size);
	int ret;

	if (!res || res->node.start != op->va || res->node.size != op->size)
		return -ENOENT;
	if (!drm_gpuvm_interval_empty(&vm->gpuvm, op->va, op->size)) {
		ret = pagoda_vm_unmap(bind, op->va, op->size);
		if (ret)
			return ret;
	}
	drm_mm_remove_node(&res->node);
	kfree(res);
	/* a root that cannot shrink now stays larger: no error */
	pagoda_vm_resize_root(bind);
	return vm->lost ? -EIO : 0;
}

/* The DRM_PAGODA_VM_* protections of a mapping. */
static u32 pagoda_vma_prot(struct drm_gpuva *va)
{
	u64 pte_flags = to_pagoda_vma(va)->pte_flags;

	return (pte_flags & PAGODA_PTE_READ_ONLY ? DRM_PAGODA_VM_READ_ONLY : 0) |
	       (pte_flags & PAGODA_PTE_NO_EXECUTE ? DRM_PAGODA_VM_NO_EXECUTE : 0);
}

/* Unmap what [va, va + size) maps, if anything. */
static int pagoda_vm_unmap_any(struct pagoda_vm_bind *bind, u64 va, u64 size)
{
	if (!size || drm_gpuvm_interval_empty(&bind->vm->gpuvm, va, size))
		return 0;
	return pagoda_vm_unmap(bind, va, size);
}

/*
 * Make [dst, dst + size) map what [src, src + size) maps, page for page:
 * each mapping's part mapped again at its place from @dst, same allocation
 * and offset (or zero pages), with the protections @prot names (or, NULL,
 * its own); with @dst apart from @src, what the source does not map is
 * unmapped at @dst. The parts are listed first: each map changes the tree.
 * PROTECT is this at @src; COPY elsewhere.
 */
static int pagoda_vm_map_like(struct pagoda_vm_bind *bind, u64 src, u64 size, u64 dst,
			      const u32 *prot)
{
	struct pagoda_vm *vm = bind->vm;
	u64 end = src + size, covered = src;
	struct drm_pagoda_vm_op *parts;
	struct drm_gem_object **objs;
	struct drm_gpuva *va;
	unsigned int n = 0, i;
	int ret = 0;

	drm_gpuvm_for_each_va_range(va, &vm->gpuvm, src, end)
		n++;
	parts = kvcalloc(n, sizeof(*parts), GFP_KERNEL);
	objs = kvcalloc(n, sizeof(*objs), GFP_KERNEL);
	if (!parts || !objs) {
		ret = -ENOMEM;
		goto out;
	}
	n = 0;
	drm_gpuvm_for_each_va_range(va, &vm->gpuvm, src, end) {
		u64 start = max(src, va->va.addr);

		parts[n].op = DRM_PAGODA_VM_OP_MAP;
		parts[n].flags = DRM_PAGODA_VM_FIXED | (prot ? *prot : pagoda_vma_prot(va)) |
				 (va->gem.obj ? 0 : DRM_PAGODA_VM_ZERO);
		parts[n].va = start;
		parts[n].size = min(end, va->va.addr + va->va.range) - start;
		parts[n].offset = va->gem.obj ? va->gem.offset + start - va->va.addr : 0;
		parts[n].instance = to_pagoda_vma(va)->instance;
		objs[n] = va->gem.obj;
		/* the mapping holds it only until it is replaced */
		if (objs[n])
			drm_gem_object_get(objs[n]);
		n++;
	}
	for (i = 0; i < n && !ret; i++) {
		if (dst != src)
			ret = pagoda_vm_unmap_any(bind, dst + covered - src, parts[i].va - covered);
		covered = parts[i].va + parts[i].size;
		parts[i].va += dst - src;
		if (!ret)
			ret = pagoda_vm_map(bind, &parts[i], objs[i]);
	}
	if (!ret && dst != src)
		ret = pagoda_vm_unmap_any(bind, dst + covered - src, end - covered);
	for (i = 0; i < n; i++)
		if (objs[i])
			drm_gem_object_put(objs[i]);
out:
	kvfree(objs);
	kvfree(parts);
	return ret;
}

/* One operation against the space's state; @obj is MAP's allocation. */
static int pagoda_vm_run_op(struct pagoda_vm_bind *bind, struct drm_pagoda_vm_op *op,
			    struct drm_gem_object *obj)
{
	struct pagoda_vm *vm = bind->vm;
	struct pagoda_va_reservation *res, *src;
	int ret;

	bind->leaf64 = false;
	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		return pagoda_vm_reserve(bind, op);
	case DRM_PAGODA_VM_OP_FREE:
		return pagoda_vm_free_reservation(bind, op);
	case DRM_PAGODA_VM_OP_MAP:
		if (op->flags & DRM_PAGODA_VM_FIXED) {
			res = pagoda_vm_find_reservation(vm, op->va, op->size);
			if (!res)
				return -ENOENT;
			if (res->tiled && !pagoda_vm_tiles_ok(vm, op, obj))
				return -EINVAL;
			bind->leaf64 = vm->leaf64 && res->tiled;
			return pagoda_vm_map(bind, op, obj);
		}
		ret = pagoda_vm_reserve(bind, op);
		if (ret)
			return ret;
		ret = pagoda_vm_map(bind, op, obj);
		if (ret) {
			res = pagoda_vm_find_reservation(vm, op->va, op->size);
			if (res && drm_gpuvm_interval_empty(&vm->gpuvm, op->va, op->size)) {
				drm_mm_remove_node(&res->node);
				kfree(res);
			}
		}
		return ret;
	case DRM_PAGODA_VM_OP_UNMAP:
	case DRM_PAGODA_VM_OP_PROTECT:
		res = pagoda_vm_find_reservation(vm, op->va, op->size);
		if (!res || !pagoda_vm_range_mapped(vm, op->va, op->size))
			return -ENOENT;
		if (res->tiled && !pagoda_vm_tiles_ok(vm, op, NULL))
			return -EINVAL;
		if (op->op == DRM_PAGODA_VM_OP_UNMAP)
			return pagoda_vm_unmap(bind, op->va, op->size);
		bind->leaf64 = vm->leaf64 && res->tiled;
		return pagoda_vm_map_like(bind, op->va, op->size, op->va, &op->flags);
	case DRM_PAGODA_VM_OP_COPY:
		res = pagoda_vm_find_reservation(vm, op->va, op->size);
		src = pagoda_vm_find_reservation(vm, op->offset, op->size);
		if (!res || !src)
			return -ENOENT;
		/* tiles are copied onto tiles, pages onto pages */
		if (res->tiled != src->tiled || (res->tiled && !pagoda_vm_tiles_ok(vm, op, NULL)))
			return -EINVAL;
		bind->leaf64 = vm->leaf64 && res->tiled;
		return pagoda_vm_map_like(bind, op->offset, op->size, op->va, NULL);
	}
	return -EINVAL;
}

/* [va, va + size) lies in what the space maps, without wrapping. */
static bool pagoda_vm_range_ok(struct pagoda_vm *vm, u64 va, u64 size)
{
	return va >= DRM_PAGODA_VA_START && size <= vm->va_end && va <= vm->va_end - size;
}

/*
 * COPY's source (@offset) lies in the space apart from its destination,
 * in the same 64 KiB alignment (a 64 KiB page maps at the same low bits).
 */
static bool pagoda_vm_copy_ok(struct pagoda_vm *vm, const struct drm_pagoda_vm_op *op)
{
	return pagoda_vm_range_ok(vm, op->offset, op->size) &&
	       !((op->va ^ op->offset) & (DRM_PAGODA_VA_ALIGN - 1)) &&
	       (op->offset + op->size <= op->va || op->va + op->size <= op->offset);
}

/* The checks that need no state of the space. */
static int pagoda_vm_check_op(struct pagoda_vm *vm, const struct drm_pagoda_vm_op *op)
{
	bool fixed = op->flags & DRM_PAGODA_VM_FIXED;
	u64 align = op->op == DRM_PAGODA_VM_OP_RESERVE || op->op == DRM_PAGODA_VM_OP_FREE ?
		    DRM_PAGODA_VA_ALIGN : DRM_PAGODA_VA_PAGE;
	u32 allowed;

	switch (op->op) {
	case DRM_PAGODA_VM_OP_RESERVE:
		allowed = DRM_PAGODA_VM_FIXED | DRM_PAGODA_VM_TILED;
		if (op->flags & DRM_PAGODA_VM_TILED)
			align = DRM_PAGODA_VM_TILED_ALIGN;
		break;
	case DRM_PAGODA_VM_OP_MAP:
		allowed = DRM_PAGODA_VM_FLAGS;
		break;
	case DRM_PAGODA_VM_OP_PROTECT:
		allowed = DRM_PAGODA_VM_READ_ONLY | DRM_PAGODA_VM_NO_EXECUTE;
		fixed = true;
		break;
	case DRM_PAGODA_VM_OP_FREE:
	case DRM_PAGODA_VM_OP_UNMAP:
	case DRM_PAGODA_VM_OP_COPY:
		allowed = 0;
		fixed = true;
		break;
	default:
		return -EINVAL;
	}
	if (op->flags & ~allowed || !op->size || !IS_ALIGNED(op->size, align))
		return -EINVAL;
	/* which GPU's instance: only a MAP of an allocation says */
	if (op->instance && (op->op != DRM_PAGODA_VM_OP_MAP || op->flags & DRM_PAGODA_VM_ZERO ||
			     op->instance > vm->num_pt))
		return -EINVAL;
	if (op->op == DRM_PAGODA_VM_OP_MAP && !(op->flags & DRM_PAGODA_VM_ZERO)) {
		if (!op->handle || !IS_ALIGNED(op->offset, DRM_PAGODA_VA_PAGE))
			return -EINVAL;
	} else if (op->op == DRM_PAGODA_VM_OP_COPY) {
		if (op->handle || !pagoda_vm_copy_ok(vm, op))
			return -EINVAL;
	} else if (op->handle || op->offset) {
		return -EINVAL;
	}
	if (fixed)
		return op->min_va || op->max_va || !IS_ALIGNED(op->va, align) ||
		       !pagoda_vm_range_ok(vm, op->va, op->size) ? -EINVAL : 0;
	if (!IS_ALIGNED(op->min_va, DRM_PAGODA_VA_ALIGN) ||
	    !IS_ALIGNED(op->max_va, DRM_PAGODA_VA_ALIGN) || op->max_va > vm->va_end ||
	    (op->max_va && op->max_va <= op->min_va) || op->size > vm->va_end)
		return -EINVAL;
	return 0;
}

/*
 * In an allocation made of 64 KiB pages, a VA and the address it maps
 * share their 64 KiB alignment (the model guarantees it): the VA of a MAP
 * and its offset agree in their low bits. Without DRM_PAGODA_VM_FIXED the
 * VA chosen is DRM_PAGODA_VA_ALIGN aligned, so the offset must be.
 */
static bool pagoda_vm_map_aligned(const struct drm_pagoda_vm_op *op, struct pagoda_bo *bo)
{
	u64 mask = pagoda_bo_page_size(bo) - 1;

	if (!(op->flags & DRM_PAGODA_VM_FIXED))
		return !(op->offset & mask);
	return !((op->va ^ op->offset) & mask);
}

/**
 * pagoda_vm_put_objs - drop the allocations pagoda_vm_lookup_objs() held
 * @objs: the array (freed), or NULL
 * @count: its entries
 */
void pagoda_vm_put_objs(struct drm_gem_object **objs, u32 count)
{
	u32 i;

	for (i = 0; objs && i < count; i++)
		if (objs[i])
			drm_gem_object_put(objs[i]);
	kvfree(objs);
}

/* The allocations MAP operations name, looked up before anything runs. */
static int pagoda_vm_lookup_objs(struct drm_file *file, struct pagoda_vm *vm,
				 const struct drm_pagoda_vm_op *ops, u32 count,
				 struct drm_gem_object **objs)
{
	u32 i;

	for (i = 0; i < count; i++) {
		const struct drm_pagoda_vm_op *op = &ops[i];
		int ret = pagoda_vm_check_op(vm, op);

		if (ret)
			return ret;
		if (op->op != DRM_PAGODA_VM_OP_MAP || (op->flags & DRM_PAGODA_VM_ZERO))
			continue;
		/* tiles of one pool: the handle of the operation before */
		if (i && objs[i - 1] && ops[i - 1].handle == op->handle) {
			objs[i] = objs[i - 1];
			drm_gem_object_get(objs[i]);
		} else {
			objs[i] = drm_gem_object_lookup(file, op->handle);
		}
		if (!objs[i])
			return -ENOENT;
		if (op->offset > objs[i]->size || op->size > objs[i]->size - op->offset)
			return -EINVAL;
		if (!pagoda_vm_map_aligned(op, gem_to_pagoda_bo(objs[i])))
			return -EINVAL;
		/* instances are a linked allocation's */
		if (op->instance && !gem_to_pagoda_bo(objs[i])->num_instances)
			return -EINVAL;
	}
	return 0;
}

/* Lock the allocations mapped in [start, start + size) (PROTECT, COPY's source). */
static int pagoda_vm_lock_mapped(struct pagoda_vm *vm, struct drm_exec *exec, u64 start, u64 size)
{
	struct drm_gpuva *va;
	int ret;

	drm_gpuvm_for_each_va_range(va, &vm->gpuvm, start, start + size) {
		if (!va->gem.obj)
			continue;
		ret = drm_exec_lock_obj(exec, va->gem.obj);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Run @count operations in order, their page-table writes in one staged
 * batch submitted at the end (its fence the space's last update), what
 * they unmapped released after it; *@done counts those that ran.
 */
static int pagoda_vm_run_ops(struct pagoda_vm *vm, struct drm_pagoda_vm_op *ops,
			     struct drm_gem_object **objs, u32 count, u32 *done)
{
	struct pagoda_vm_bind bind = { .vm = vm };
	int ret = 0, submitted;
	u32 i;

	INIT_LIST_HEAD(&bind.released);
	pagoda_vm_update_init(vm, &bind.update, true);
	for (i = 0; i < count && !ret; i++) {
		bind.ops_left = count - i;
		ret = vm->lost ? -EIO : pagoda_vm_run_op(&bind, &ops[i], objs[i]);
		trace_pagoda_vm_bind(vm, ops[i].op, ops[i].flags, ops[i].va, ops[i].size, ret);
		if (!ret)
			++*done;
	}
	/* what ran is in the tables the CPU keeps: the device gets it too */
	submitted = pagoda_vm_update_done(vm, &bind.update, 0);
	pagoda_vm_release_vmas(&bind.released);
	if (bind.link)
		pagoda_vm_bo_put(bind.link);
	for (i = 0; i < PAGODA_VM_PREALLOC; i++)
		if (bind.spare[i])
			kmem_cache_free(pagoda_vma_cache, bind.spare[i]);
	kmem_cache_free_bulk(pagoda_vma_cache, bind.pooled, (void **)bind.pool);
	return ret ?: submitted;
}

/*
 * Lock the space's reservation (that of its page tables) and those of the
 * allocations the operations map or protect, for the whole batch (the
 * space's lock keeps its mappings as they are meanwhile; a PROTECT can
 * only meet those, or what a MAP of the batch maps). Then, still in
 * drm_exec's locking loop (placing memory evicts others with the
 * transaction's ticket, which the loop's end closes), restore the space's
 * tables and run the operations in order; *@done counts those that ran.
 * -EAGAIN: a placement ended the transaction (pagoda_vm_place()).
 */
static int pagoda_vm_bind_locked(struct pagoda_vm *vm, struct drm_exec *exec,
				 struct drm_pagoda_vm_op *ops, struct drm_gem_object **objs,
				 u32 count, u32 *done)
{
	int ret = 0;
	u32 i;

	drm_exec_init(exec, DRM_EXEC_INTERRUPTIBLE_WAIT | DRM_EXEC_IGNORE_DUPLICATES, 0);
	drm_exec_until_all_locked(exec) {
		ret = drm_gpuvm_prepare_vm(&vm->gpuvm, exec, 0);
		drm_exec_retry_on_contention(exec);
		for (i = 0; i < count && !ret; i++) {
			if (ops[i].op == DRM_PAGODA_VM_OP_PROTECT)
				ret = pagoda_vm_lock_mapped(vm, exec, ops[i].va, ops[i].size);
			else if (ops[i].op == DRM_PAGODA_VM_OP_COPY)
				ret = pagoda_vm_lock_mapped(vm, exec, ops[i].offset, ops[i].size);
			else if (objs[i] && (!i || objs[i] != objs[i - 1]))
				ret = drm_exec_lock_obj(exec, objs[i]);
			drm_exec_retry_on_contention(exec);
		}
		if (ret)
			break;
		/* nothing below locks through @exec: the loop ends here */
		ret = pagoda_vm_is_lost(vm) ? -EIO : pagoda_pt_restore(vm);
		if (!ret)
			ret = pagoda_vm_run_ops(vm, ops, objs, count, done);
	}
	return ret;
}

/* Give the out-syncobj (if any) @fence, binary or at a timeline point. */
int pagoda_syncobj_signal(struct drm_file *file, const struct drm_pagoda_sync *sync,
			  struct dma_fence_chain **chain, struct dma_fence *fence)
{
	struct drm_syncobj *syncobj = drm_syncobj_find(file, sync->handle);

	if (!syncobj)
		return -ENOENT;
	if (sync->point) {
		drm_syncobj_add_point(syncobj, *chain, fence, sync->point);
		*chain = NULL;
	} else {
		drm_syncobj_replace_fence(syncobj, fence);
	}
	drm_syncobj_put(syncobj);
	return 0;
}

/* Where a mapping's allocation is, or "zero" for zero pages. */
static const char *pagoda_vma_segment_name(struct drm_gpuva *va)
{
	if (!va->gem.obj)
		return "zero";
	return pagoda_segment_name(READ_ONCE(gem_to_pagoda_bo(va->gem.obj)->segment));
}

/* The space on one GPU: its slot, root, tables per level and their chunks. */
static void pagoda_vm_debugfs_show_tree(struct seq_file *m, struct pagoda_pt_tree *tree)
{
	unsigned int per_seg[PAGODA_NUM_SEGMENTS] = {};
	struct pagoda_pt_chunk *chunk;
	unsigned int l;

	seq_printf(m, "  %sslot %u", tree->gpu->tag, READ_ONCE(tree->slot));
	if (tree->root)
		seq_printf(m, " root %u entries at %s 0x%llx\n", tree->root->entries,
			   pagoda_segment_name(PAGODA_PADDR_SEG(tree->root->addr)),
			   PAGODA_PADDR_OFFSET(tree->root->addr));
	else
		seq_puts(m, " root none\n");
	seq_puts(m, "  tables");
	for (l = 0; l < tree->vm->levels; l++)
		seq_printf(m, " level%u %u", l, tree->tables[l]);
	seq_printf(m, " leaf64 %u", tree->leaf64_tables);
	list_for_each_entry(chunk, &tree->chunks, link)
		per_seg[READ_ONCE(chunk->bo->segment)]++;
	seq_puts(m, "\n  table chunks");
	for (l = 0; l < PAGODA_NUM_SEGMENTS; l++)
		seq_printf(m, " %s %u", pagoda_segment_name(l), per_seg[l]);
	seq_putc(m, '\n');
}

/**
 * pagoda_vm_debugfs_show - an address space as debugfs "vms" shows it
 * @m: the file
 * @vm: the space
 *
 * Its slot, root, tables per level and where their allocations are, and
 * its reservations and mappings.
 */
void pagoda_vm_debugfs_show(struct seq_file *m, struct pagoda_vm *vm)
{
	struct pagoda_pt_tree *tree;
	struct drm_mm_node *node;
	struct drm_gpuva *va;

	mutex_lock(&vm->lock);
	seq_printf(m, "vm %p faults %u%s\n", vm, vm->faults, vm->lost ? " lost" : "");
	if (vm->faults)
		seq_printf(m, "  last fault: code %u va 0x%llx access %u level %u engine %u\n",
			   vm->last_fault.code, vm->last_fault.va, vm->last_fault.access,
			   vm->last_fault.level, vm->last_fault.engine);
	pagoda_vm_for_each_tree(vm, tree)
		pagoda_vm_debugfs_show_tree(m, tree);
	drm_mm_for_each_node(node, &vm->reservations)
		seq_printf(m, "  reserved 0x%llx-0x%llx%s\n", node->start, node->start + node->size,
			   container_of(node, struct pagoda_va_reservation, node)->tiled ?
			   " tiled" : "");
	drm_gpuvm_for_each_va(va, &vm->gpuvm)
		seq_printf(m, "  mapped 0x%llx-0x%llx %s offset 0x%llx%s%s%s\n", va->va.addr,
			   va->va.addr + va->va.range, pagoda_vma_segment_name(va),
			   va->gem.offset,
			   to_pagoda_vma(va)->pte_flags & PAGODA_PTE_READ_ONLY ? " ro" : "",
			   to_pagoda_vma(va)->pte_flags & PAGODA_PTE_NO_EXECUTE ? " nx" : "",
			   va->vm_bo && va->vm_bo->evicted ? " evicted" : "");
	mutex_unlock(&vm->lock);
}

/**
 * pagoda_vm_bind_run - run checked operations on a space
 * @vm: the space
 * @ops: operations that passed pagoda_vm_lookup_objs(); VAs written back
 * @objs: the allocations MAP operations name, held
 * @count: entries of @ops
 * @done: out: how many ran
 * @fence: out: the space's last update once they ran (a reference)
 *
 * What a VM_BIND call does, and the bind queue's worker for a queued one.
 *
 * Return: 0 or a negative errno (what stopped them; -ERESTARTSYS when a
 * signal came before any ran).
 */
int pagoda_vm_bind_run(struct pagoda_vm *vm, struct drm_pagoda_vm_op *ops,
		       struct drm_gem_object **objs, u32 count, u32 *done, struct dma_fence **fence)
{
	struct drm_exec exec;
	int ret, idx;

	*done = 0;
	*fence = NULL;
	if (!drm_dev_enter(&vm->link->drm, &idx))
		return -ENODEV;
	/* the tables are on every GPU, the allocations on any */
	ret = pagoda_link_resets_read_lock(vm->link);
	if (ret)
		goto out_exit;
	mutex_lock(&vm->lock);
	/* a transaction a placement ended runs the rest of the batch again */
	for (vm->place_step = 0; ; vm->place_step++) {
		ret = pagoda_vm_bind_locked(vm, &exec, ops + *done, objs + *done, count - *done,
					    done);
		drm_exec_fini(&exec);
		if (ret != -EAGAIN)
			break;
	}
	*fence = pagoda_vm_last_update(vm);
	if (!*fence && !ret)
		ret = -ENOMEM;
	mutex_unlock(&vm->lock);
	pagoda_link_resets_read_unlock(vm->link);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

/*
 * The checks of a queued VM_BIND beyond those of every call: each
 * operation names its addresses, and the file's in-syncobjs have fences.
 */
static int pagoda_vm_bind_check_queue(struct drm_pagoda_vm_bind *args,
				      const struct drm_pagoda_vm_op *ops, u32 count)
{
	u32 i;

	if (!(args->flags & DRM_PAGODA_VM_BIND_QUEUE))
		return args->in_count ? -EINVAL : 0;
	for (i = 0; i < count; i++)
		if ((ops[i].op == DRM_PAGODA_VM_OP_RESERVE || ops[i].op == DRM_PAGODA_VM_OP_MAP) &&
		    !(ops[i].flags & DRM_PAGODA_VM_FIXED))
			return -EINVAL;
	return 0;
}

/**
 * pagoda_ioctl_vm_bind - DRM_IOCTL_PAGODA_VM_BIND
 * @drm: the DRM device
 * @data: struct drm_pagoda_vm_bind
 * @file: the caller's file, whose address space changes
 *
 * Return: 0; -EINVAL for a bad argument or operation (nothing runs),
 * -ENOENT for an unknown handle or syncobj (nothing runs) or an operation
 * naming a reservation or mapping that is not there, -EEXIST for a
 * reservation over another, -ENOSPC when no free range fits, -ENOMEM,
 * -EFAULT, -EINTR (-ERESTARTSYS when nothing ran), -EBUSY and -ETIMEDOUT
 * from moving memory, -EIO once the space's tables were lost, -ENODEV
 * after unplug. A queued call (DRM_PAGODA_VM_BIND_QUEUE) returns the
 * errors of its checks; those of running its operations go to its fence.
 */
int pagoda_ioctl_vm_bind(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_pagoda_vm_bind *args = data;
	struct pagoda_vm *vm = pfile->vm;
	struct dma_fence_chain *chain = NULL;
	struct drm_pagoda_vm_op *ops;
	struct drm_gem_object **objs;
	struct dma_fence *fence;
	u32 count = args->count, done = 0;
	int ret;

	args->count = 0;
	if (!count || count > DRM_PAGODA_VM_BIND_MAX_OPS ||
	    args->flags & ~DRM_PAGODA_VM_BIND_FLAGS || args->out_sync.flags || args->pad)
		return -EINVAL;
	ops = kvmalloc_array(count, sizeof(*ops), GFP_KERNEL);
	objs = kvcalloc(count, sizeof(*objs), GFP_KERNEL);
	if (!ops || !objs) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (copy_from_user(ops, u64_to_user_ptr(args->ops), count * sizeof(*ops))) {
		ret = -EFAULT;
		goto out_free;
	}
	ret = pagoda_vm_lookup_objs(file, vm, ops, count, objs);
	if (!ret)
		ret = pagoda_vm_bind_check_queue(args, ops, count);
	if (ret)
		goto out_free;
	if (args->out_sync.handle) {
		struct drm_syncobj *syncobj = drm_syncobj_find(file, args->out_sync.handle);

		if (!syncobj) {
			ret = -ENOENT;
			goto out_free;
		}
		drm_syncobj_put(syncobj);
		if (args->out_sync.point) {
			chain = dma_fence_chain_alloc();
			if (!chain) {
				ret = -ENOMEM;
				goto out_free;
			}
		}
	}

	if (args->flags & DRM_PAGODA_VM_BIND_QUEUE) {
		/* the queue takes @ops and @objs */
		ret = pagoda_bind_queue_push(file, vm, args, ops, objs, count, &fence);
		if (!ret) {
			ops = NULL;
			objs = NULL;
			args->count = count;
			pagoda_syncobj_signal(file, &args->out_sync, &chain, fence);
			dma_fence_put(fence);
		}
		goto out_free;
	}
	/* after the space's queued binds */
	ret = pagoda_bind_queue_wait_idle(vm);
	if (ret) {
		/* interrupted: a restart runs the call as it was */
		args->count = count;
		goto out_free;
	}
	ret = pagoda_vm_bind_run(vm, ops, objs, count, &done, &fence);
	if (fence) {
		if (args->out_sync.handle)
			pagoda_syncobj_signal(file, &args->out_sync, &chain, fence);
		dma_fence_put(fence);
	}
	/*
	 * Interrupted: a restart runs the call again as it was when nothing
	 * ran; once operations ran it cannot, and returns EINTR with @count.
	 */
	if (ret == -ERESTARTSYS && !done) {
		args->count = count;
		goto out_free;
	}
	if (ret == -ERESTARTSYS)
		ret = -EINTR;
	args->count = done;
	if (copy_to_user(u64_to_user_ptr(args->ops), ops, done * sizeof(*ops)))
		ret = ret ?: -EFAULT;
out_free:
	dma_fence_chain_free(chain);
	pagoda_vm_put_objs(objs, count);
	kvfree(ops);
	return ret;
}
