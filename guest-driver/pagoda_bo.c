// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda allocations
 *
 * An allocation of the model is a TTM buffer object whose GEM object is
 * what user space holds (a handle, and PRIME file descriptors). User space
 * names the segments it may live in, the one it prefers, where it goes when
 * evicted, and its priority; TTM places it, moves it (through
 * pagoda_ttm.c's paging-engine moves) and evicts it under pressure, lowest
 * priority and least recently used first. The other allowed segments are
 * fallbacks: an allocation gets its preferred segment by evicting others
 * from it, and lands elsewhere only when nothing there can be evicted.
 *
 * Sizes are rounded up to the largest page size of the allowed memory
 * segments, so an allocation is a whole number of segment pages wherever it
 * goes. Physically accessed and primary allocations are contiguous in
 * memory segments (TTM_PL_FLAG_CONTIGUOUS).
 *
 * CPU access: mmap of the offset DRM_IOCTL_PAGODA_GEM_INFO reports. The
 * fault handler maps the allocation where it is at the time of the fault:
 * BAR2 for VRAM and the pages for system memory (TTM's handler), host
 * aperture slots for hidden VRAM (pagoda_host_aperture.c). TTM unmaps it
 * whenever it moves, so a mapping stays valid across moves. After the
 * device is unplugged every fault gets a dummy page.
 */

#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/workqueue.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_ttm_helper.h>
#include <drm/drm_gpuvm.h>
#include <drm/drm_mode.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>
#include <drm/ttm/ttm_tt.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_trace.h"
#include "pagoda_vram_mgr.h"

/* Segments an allocation may name: those with a TTM memory type. */
#define PAGODA_BO_SEGMENTS	(DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM) | \
				 DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) | \
				 DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN))

static vm_fault_t pagoda_bo_vm_fault(struct vm_fault *vmf)
{
	struct ttm_buffer_object *tbo = vmf->vma->vm_private_data;
	struct drm_device *drm = tbo->base.dev;
	struct pagoda_device *pgdev = bdev_to_pagoda_device(tbo->bdev);
	vm_fault_t ret;
	int idx;

	/* not while a reset has BAR2 turned off */
	down_read(&pgdev->reset_lock);
	ret = ttm_bo_vm_reserve(tbo, vmf);
	if (ret) {
		up_read(&pgdev->reset_lock);
		return ret;
	}
	if (drm_dev_enter(drm, &idx)) {
		if (tbo->resource->mem_type == PAGODA_PL_HIDDEN)
			ret = pagoda_host_aperture_fault(vmf, to_pagoda_bo(tbo));
		else
			ret = ttm_bo_vm_fault_reserved(vmf, vmf->vma->vm_page_prot,
						       TTM_BO_VM_NUM_PREFAULT);
		drm_dev_exit(idx);
	} else {
		/* unplugged: the BAR is gone, give a page that goes nowhere */
		ret = ttm_bo_vm_dummy_page(vmf, vmf->vma->vm_page_prot);
	}
	up_read(&pgdev->reset_lock);
	if (ret == VM_FAULT_RETRY && !(vmf->flags & FAULT_FLAG_RETRY_NOWAIT))
		return ret;
	dma_resv_unlock(tbo->base.resv);
	return ret;
}

static const struct vm_operations_struct pagoda_bo_vm_ops = {
	.fault = pagoda_bo_vm_fault,
	.open = ttm_bo_vm_open,
	.close = ttm_bo_vm_close,
	.access = ttm_bo_vm_access,
};

static void pagoda_gem_free(struct drm_gem_object *gem)
{
	struct pagoda_bo *bo = gem_to_pagoda_bo(gem);
	u32 i;

	/* the other GPUs' instances of a linked allocation go with it */
	for (i = 1; i < bo->num_instances; i++)
		if (bo->instances[i])
			drm_gem_object_put(&bo->instances[i]->tbo.base);
	ttm_bo_put(&bo->tbo);
}

/*
 * Whether the CPU may map the allocation: unless it asked never to be, or
 * is LinkMirrored (a CPU write would reach one GPU's instance).
 */
static bool pagoda_bo_cpu_mappable(const struct pagoda_bo *bo)
{
	return !(bo->flags & (DRM_PAGODA_BO_NO_CPU_ACCESS | DRM_PAGODA_BO_LINK_MIRRORED));
}

static int pagoda_gem_mmap(struct drm_gem_object *gem, struct vm_area_struct *vma)
{
	int ret;

	if (gem->import_attach) {
		/* another device's buffer: its exporter maps it */
		vma->vm_private_data = NULL;
		vma->vm_ops = NULL;
		ret = dma_buf_mmap(gem->dma_buf, vma, 0);
		/* the exporter holds the dma-buf: drop drm_gem_mmap_obj()'s reference */
		if (!ret)
			drm_gem_object_put(gem);
		return ret;
	}
	if (!pagoda_bo_cpu_mappable(gem_to_pagoda_bo(gem)))
		return -EACCES;
	return drm_gem_ttm_mmap(gem, vma);
}

/*
 * Kernel mappings (the fbdev console's buffer, dma-buf importers): of
 * system pages, or of BAR2 for an allocation contiguous in VRAM; TTM maps
 * VRAM as one range.
 */
static int pagoda_gem_vmap(struct drm_gem_object *gem, struct iosys_map *map)
{
	struct ttm_resource *res = gem_to_pagoda_bo(gem)->tbo.resource;
	u32 contiguous;
	u64 offset;

	/* another device's buffer has no pages of ours: its exporter maps it */
	if (gem->import_attach)
		return -EINVAL;
	pagoda_bo_res_placement(res, &offset, &contiguous);
	if (res->mem_type == PAGODA_PL_HIDDEN || (res->mem_type == TTM_PL_VRAM && !contiguous))
		return -EINVAL;
	return drm_gem_ttm_vmap(gem, map);
}

/* Pinned where it is, for dma-buf attachments and kernel clients. */
static int pagoda_gem_pin(struct drm_gem_object *gem)
{
	ttm_bo_pin(&gem_to_pagoda_bo(gem)->tbo);
	return 0;
}

static void pagoda_gem_unpin(struct drm_gem_object *gem)
{
	ttm_bo_unpin(&gem_to_pagoda_bo(gem)->tbo);
}

static const struct drm_gem_object_funcs pagoda_gem_funcs = {
	.free = pagoda_gem_free,
	.close = pagoda_residency_close,
	.mmap = pagoda_gem_mmap,
	.pin = pagoda_gem_pin,
	.unpin = pagoda_gem_unpin,
	.vmap = pagoda_gem_vmap,
	.vunmap = drm_gem_ttm_vunmap,
	.vm_ops = &pagoda_bo_vm_ops,
};

static void pagoda_bo_destroy(struct ttm_buffer_object *tbo)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(tbo->bdev);
	struct pagoda_bo *bo = to_pagoda_bo(tbo);

	mutex_lock(&pgdev->link->bo_list_lock);
	/* one whose initialisation failed never joined the list */
	list_del_init(&bo->link);
	mutex_unlock(&pgdev->link->bo_list_lock);
	/* released when it left hidden VRAM or its memory was freed */
	WARN_ON(!xa_empty(&bo->host_aperture_slots));
	xa_destroy(&bo->host_aperture_slots);
	mutex_destroy(&bo->gpuva_lock);
	if (tbo->base.import_attach)
		drm_prime_gem_destroy(&tbo->base, tbo->sg);
	drm_gem_object_release(&tbo->base);
	/* TTM gave it a reservation of its own when it was released */
	if (bo->resv_owner)
		drm_gem_object_put(bo->resv_owner);
	kfree(bo);
}

/**
 * pagoda_ttm_bo_is_pagoda - whether a TTM buffer object is an allocation
 * @tbo: a buffer object of the device
 *
 * Return: false for TTM's ghost objects, which hold the old resource of a
 * move until its fence signals.
 */
bool pagoda_ttm_bo_is_pagoda(struct ttm_buffer_object *tbo)
{
	return tbo->destroy == pagoda_bo_destroy;
}

/*
 * The memory type of segment @seg for an allocation with @flags: in system
 * memory a physically accessed allocation is mapped into the aperture.
 */
static u32 pagoda_bo_mem_type(u32 flags, unsigned int seg)
{
	if (seg == PAGODA_SEG_SYSTEM && (flags & DRM_PAGODA_BO_PHYSICAL))
		return TTM_PL_TT;
	return pagoda_segment_mem_type(seg);
}

static void pagoda_bo_set_placements(struct pagoda_bo *bo, u32 preferred, u32 eviction)
{
	bool contiguous = bo->flags & (DRM_PAGODA_BO_PHYSICAL | DRM_PAGODA_BO_PRIMARY |
				       DRM_PAGODA_BO_LINK_MIRRORED);
	unsigned int n = 0, id;

	for (id = 0; id < PAGODA_BO_NUM_SEGMENTS; id++) {
		unsigned int seg = id == 0 ? preferred : (id == preferred ? 0 : id);
		struct ttm_place *place;

		if (!(bo->segments & DRM_PAGODA_SEGMENT_MASK(seg)))
			continue;
		place = &bo->places[n++];
		place->mem_type = pagoda_bo_mem_type(bo->flags, seg);
		if (contiguous && seg != PAGODA_SEG_SYSTEM)
			place->flags |= TTM_PL_FLAG_CONTIGUOUS;
		/*
		 * Only the preferred segment is tried first; TTM evicts others
		 * from it before it falls back to the other allowed segments.
		 */
		if (n > 1)
			place->flags |= TTM_PL_FLAG_FALLBACK;
	}
	bo->placement.placement = bo->places;
	bo->placement.num_placement = n;

	bo->eviction_placement[0].mem_type = pagoda_bo_mem_type(bo->flags, eviction);
	if (contiguous && eviction != PAGODA_SEG_SYSTEM)
		bo->eviction_placement[0].flags = TTM_PL_FLAG_CONTIGUOUS;
	n = 1;
	/* then system memory: the aperture for a physically accessed one, ... */
	if (pagoda_bo_mem_type(bo->flags, PAGODA_SEG_SYSTEM) != bo->eviction_placement[0].mem_type)
		bo->eviction_placement[n++].mem_type =
			pagoda_bo_mem_type(bo->flags, PAGODA_SEG_SYSTEM);
	/* ... and plain system pages, not resident, when that is full */
	if (bo->eviction_placement[n - 1].mem_type != TTM_PL_SYSTEM)
		bo->eviction_placement[n++].mem_type = TTM_PL_SYSTEM;
	for (id = 1; id < n; id++)
		bo->eviction_placement[id].flags = TTM_PL_FLAG_FALLBACK;
	bo->num_eviction_places = n;
}

/*
 * The size rounded to the allowed memory segments' pages; 0 when too large
 * for every allowed segment (system memory is the aperture for a
 * physically accessed allocation).
 */
/* The largest page size of the memory segments in @segments (4 KiB: none). */
static u64 pagoda_segments_page_size(struct pagoda_device *pgdev, u32 segments)
{
	u64 page_size = PAGE_SIZE;
	unsigned int id;

	for (id = PAGODA_SEG_SYSTEM + 1; id < PAGODA_BO_NUM_SEGMENTS; id++)
		if (segments & DRM_PAGODA_SEGMENT_MASK(id))
			page_size = max_t(u64, page_size, pgdev->segs[id].page_size);
	return page_size;
}

/**
 * pagoda_bo_page_size - the page size an allocation is made of
 * @bo: the allocation
 *
 * Return: the largest page size of its allowed memory segments (its size
 * and its place in them are multiples of it), 4 KiB when it may only be
 * in system memory.
 */
u64 pagoda_bo_page_size(struct pagoda_bo *bo)
{
	return pagoda_segments_page_size(pagoda_bo_device(bo), bo->segments);
}

static u64 pagoda_bo_round_size(struct pagoda_device *pgdev, u64 size, u32 segments, u32 flags)
{
	u64 align = pagoda_segments_page_size(pgdev, segments), largest = 0;
	unsigned int id;

	for (id = 0; id < PAGODA_BO_NUM_SEGMENTS; id++) {
		const struct pagoda_segment *seg = &pgdev->segs[id];

		if (!(segments & DRM_PAGODA_SEGMENT_MASK(id)))
			continue;
		if (id == PAGODA_SEG_SYSTEM) {
			u64 system = (u64)totalram_pages() << PAGE_SHIFT;

			if (flags & DRM_PAGODA_BO_PHYSICAL)
				system = min_t(u64, system,
					       (u64)pgdev->gart.entries * PAGODA_GART_PAGE_SIZE);
			largest = max(largest, system);
			continue;
		}
		largest = max(largest, seg->size);
	}
	if (size > largest || size > U64_MAX - align)
		return 0;
	size = round_up(size, align);
	return size > largest ? 0 : size;
}

/*
 * The model names system memory by the aperture segment's id when it
 * places an allocation: that id in @args means system memory (where a
 * physically accessed allocation is then mapped into the aperture).
 */
static void pagoda_bo_aperture_means_system(struct drm_pagoda_gem_create *args)
{
	const u32 aperture = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_APERTURE);

	if (args->segments & aperture)
		args->segments = (args->segments & ~aperture) |
				 DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM);
	if (args->preferred_segment == DRM_PAGODA_SEGMENT_APERTURE)
		args->preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	if (args->eviction_segment == DRM_PAGODA_SEGMENT_APERTURE)
		args->eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM;
}

/*
 * A LinkInstanced or LinkMirrored allocation is one or the other; neither
 * is accessed physically or scanned out (those reach one GPU's memory); a
 * mirrored one may live in a memory segment and is never mapped by the CPU.
 */
static int pagoda_bo_check_linked(const struct drm_pagoda_gem_create *args)
{
	const u32 linked = DRM_PAGODA_BO_LINK_INSTANCED | DRM_PAGODA_BO_LINK_MIRRORED;
	const u32 memory = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			   DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN);

	if (!(args->flags & linked))
		return 0;
	if ((args->flags & linked) == linked ||
	    args->flags & (DRM_PAGODA_BO_PHYSICAL | DRM_PAGODA_BO_PRIMARY))
		return -EINVAL;
	if (args->flags & DRM_PAGODA_BO_LINK_MIRRORED &&
	    (args->flags & DRM_PAGODA_BO_CPU_ACCESS || !(args->segments & memory)))
		return -EINVAL;
	return 0;
}

static int pagoda_bo_check_args(const struct drm_pagoda_gem_create *args)
{
	if (args->pad || args->flags & ~DRM_PAGODA_BO_FLAGS || !args->size)
		return -EINVAL;
	if (!args->segments || args->segments & ~PAGODA_BO_SEGMENTS)
		return -EINVAL;
	if (args->preferred_segment >= PAGODA_NUM_SEGMENTS ||
	    !(args->segments & DRM_PAGODA_SEGMENT_MASK(args->preferred_segment)))
		return -EINVAL;
	if (args->eviction_segment >= PAGODA_NUM_SEGMENTS ||
	    !(PAGODA_BO_SEGMENTS & DRM_PAGODA_SEGMENT_MASK(args->eviction_segment)))
		return -EINVAL;
	if (args->priority > DRM_PAGODA_PRIORITY_HIGH)
		return -EINVAL;
	if ((args->flags & DRM_PAGODA_BO_CPU_ACCESS) && (args->flags & DRM_PAGODA_BO_NO_CPU_ACCESS))
		return -EINVAL;
	/* CPU access wanted: only where the CPU reaches it directly, not hidden VRAM */
	if ((args->flags & DRM_PAGODA_BO_CPU_ACCESS) &&
	    (args->segments & DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM_HIDDEN) ||
	     args->eviction_segment == DRM_PAGODA_SEGMENT_VRAM_HIDDEN))
		return -EINVAL;
	return pagoda_bo_check_linked(args);
}

/**
 * pagoda_bo_prefer_at - prefer one place for an allocation
 * @bo: the allocation, reserved (or being created)
 * @at: the segment and offset to put it at; NULL for its usual placements
 *
 * The range of its size at @at comes first, its usual placements after it
 * as fallbacks: pagoda_bo_place() evicts what is in that range, and puts
 * it elsewhere only when the range cannot be had (pinned memory there, or
 * past the segment's end).
 */
void pagoda_bo_prefer_at(struct pagoda_bo *bo, const struct pagoda_bo_at *at)
{
	u32 n = bo->placement.num_placement - (bo->placement.placement == bo->at_places);
	u32 i;

	if (!at) {
		bo->placement.placement = bo->places;
		bo->placement.num_placement = n;
		return;
	}
	bo->at_places[0] = (struct ttm_place){
		.fpfn = at->offset >> PAGE_SHIFT,
		.lpfn = (at->offset + bo->tbo.base.size) >> PAGE_SHIFT,
		.mem_type = pagoda_segment_mem_type(at->seg),
		.flags = bo->places[0].flags & TTM_PL_FLAG_CONTIGUOUS,
	};
	for (i = 0; i < n; i++) {
		bo->at_places[i + 1] = bo->places[i];
		bo->at_places[i + 1].flags |= TTM_PL_FLAG_FALLBACK;
	}
	bo->placement.placement = bo->at_places;
	bo->placement.num_placement = n + 1;
}

/**
 * pagoda_bo_where - the one place an allocation is at
 * @bo: the allocation, reserved
 * @at: out: its segment and offset
 *
 * Return: whether it is in one piece in VRAM or hidden VRAM (@at valid).
 */
bool pagoda_bo_where(struct pagoda_bo *bo, struct pagoda_bo_at *at)
{
	struct ttm_resource *res = bo->tbo.resource;
	u32 contiguous;

	if (!res || (res->mem_type != TTM_PL_VRAM && res->mem_type != PAGODA_PL_HIDDEN))
		return false;
	pagoda_bo_res_placement(res, &at->offset, &contiguous);
	at->seg = pagoda_mem_type_segment(res->mem_type);
	return contiguous;
}

/*
 * A new allocation. With @resv (locked by the caller) it shares that
 * reservation. It is returned reserved when @reserved (which it always is
 * with @resv), else unreserved. (Reserved from the start, it is never
 * locked again while the caller may hold other reservations.) With @sg it
 * is a dma-buf's pages, not the driver's own.
 */
static struct pagoda_bo *pagoda_bo_create(struct pagoda_device *pgdev,
					  const struct drm_pagoda_gem_create *args, u64 size,
					  struct dma_resv *resv, bool reserved, struct sg_table *sg,
					  const struct pagoda_bo_at *at)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };
	struct pagoda_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->flags = args->flags;
	bo->segments = args->segments;
	xa_init(&bo->host_aperture_slots);
	mutex_init(&bo->gpuva_lock);
	pagoda_bo_set_placements(bo, args->preferred_segment, args->eviction_segment);

	bo->tbo.base.funcs = &pagoda_gem_funcs;
	drm_gem_private_object_init(pgdev->drm, &bo->tbo.base, size);
	if (at)
		pagoda_bo_prefer_at(bo, at);
	drm_gem_gpuva_set_lock(&bo->tbo.base, &bo->gpuva_lock);
	INIT_LIST_HEAD(&bo->link);
	bo->priority = args->priority;
	bo->tbo.priority = args->priority + 1;
	/* on failure TTM calls pagoda_bo_destroy() */
	ret = ttm_bo_init_reserved(&pgdev->bdev, &bo->tbo,
				   sg ? ttm_bo_type_sg : ttm_bo_type_device, &bo->placement,
				   0, &ctx, sg, resv, pagoda_bo_destroy);
	if (ret)
		return ERR_PTR(ret);
	/*
	 * Listed once initialised and reserved: the list's walkers (the
	 * debugfs evict hook) take references and trylock reservations, and
	 * one taken between TTM's kref_init() and its own trylock made that
	 * trylock fail (a WARN, then fences added unlocked: a BUG).
	 */
	mutex_lock(&pgdev->link->bo_list_lock);
	list_add_tail(&bo->link, &pgdev->link->bo_list);
	mutex_unlock(&pgdev->link->bo_list_lock);
	trace_pagoda_bo_create(bo, size, bo->segments, bo->flags, args->priority);
	if (resv || reserved)
		ttm_bo_move_to_lru_tail_unlocked(&bo->tbo);
	else
		ttm_bo_unreserve(&bo->tbo);
	return bo;
}

/*
 * Allocations whose last reference went while the mappings were dropped
 * are being freed elsewhere (by their last user, or by TTM's delayed
 * delete once their fences signalled: the engines are stopped, so they
 * have); their pages are unmapped as they go. Wait for them to be gone,
 * so that nothing is mapped for the device when the unbind completes.
 */
static void pagoda_bo_wait_dying(struct pagoda_device *pgdev)
{
	unsigned int tries;
	struct pagoda_bo *bo;
	bool dying;

	flush_workqueue(pgdev->bdev.wq);
	for (tries = 0; tries < 250; tries++) {
		dying = false;
		mutex_lock(&pgdev->link->bo_list_lock);
		list_for_each_entry(bo, &pgdev->link->bo_list, link)
			dying |= !kref_read(&bo->tbo.kref);
		mutex_unlock(&pgdev->link->bo_list_lock);
		if (!dying)
			return;
		msleep(20);
	}
	drm_err(pgdev->drm, "allocations still being freed at unplug\n");
}

/*
 * A reference to every allocation still alive, in an array of *@n (to
 * kvfree() once each is put); NULL when out of memory.
 */
static struct ttm_buffer_object **pagoda_bo_get_all(struct pagoda_device *pgdev, unsigned int *n)
{
	struct ttm_buffer_object **held;
	unsigned int count = 0;
	struct pagoda_bo *bo;

	*n = 0;
	mutex_lock(&pgdev->link->bo_list_lock);
	list_for_each_entry(bo, &pgdev->link->bo_list, link)
		count++;
	held = kvmalloc_array(count, sizeof(*held), GFP_KERNEL);
	if (held) {
		list_for_each_entry(bo, &pgdev->link->bo_list, link)
			if (ttm_bo_get_unless_zero(&bo->tbo))
				held[(*n)++] = &bo->tbo;
	}
	mutex_unlock(&pgdev->link->bo_list_lock);
	return held;
}

/* Wait for the last move out of a segment, which frees its memory. */
static int pagoda_bo_wait_segment_moves(struct pagoda_device *pgdev, u32 mem_type)
{
	struct ttm_resource_manager *man = ttm_manager_type(&pgdev->bdev, mem_type);
	struct dma_fence *fence;
	long ret;

	spin_lock(&man->move_lock);
	fence = dma_fence_get(man->move);
	spin_unlock(&man->move_lock);
	if (!fence)
		return 0;
	ret = dma_fence_wait(fence, true);
	dma_fence_put(fence);
	return ret;
}

/*
 * Evict @tbo if it is in @mem_type and not pinned; -EBUSY when someone
 * else holds its lock. Only tried: a pinned allocation is locked by
 * nobody but its holder (pagoda_bo_free_kernel() relies on it), and one
 * locked is being used.
 */
static int pagoda_bo_evict_if_in(struct ttm_buffer_object *tbo, u32 mem_type,
				 struct ttm_operation_ctx *ctx)
{
	int ret = 0;

	if (READ_ONCE(tbo->pin_count))
		return 0;
	if (!dma_resv_trylock(tbo->base.resv))
		return -EBUSY;
	if (!tbo->pin_count && tbo->resource && tbo->resource->mem_type == mem_type)
		ret = pagoda_bo_evict(to_pagoda_bo(tbo), ctx);
	/* not ttm_bo_unreserve(): looking at an allocation is no use of it (LRU) */
	dma_resv_unlock(tbo->base.resv);
	return ret;
}

/* How often pagoda_bo_evict_segment() comes back to allocations in use, 1 ms apart. */
#define PAGODA_EVICT_TRIES	20

/**
 * pagoda_bo_evict_segment - evict what a segment holds, pinned allocations aside
 * @pgdev: the device
 * @mem_type: the segment's TTM memory type
 *
 * What memory pressure does, to every allocation of the segment at once
 * (the debugfs "evict" hook). Each is looked at under its reservation,
 * taken with a trylock; one in use is tried again a few times, then left
 * where it is, as eviction under pressure leaves it. TTM's
 * ttm_resource_manager_evict_all() instead takes the first allocation of
 * the segment's LRU, waits for its lock and evicts it, even if its holder
 * pinned it meanwhile (a physical-mode buffer's kernel copy, a
 * MakeResident).
 *
 * Return: 0, -ENOMEM, -EINTR on a signal, or the first error of an
 * eviction.
 */
int pagoda_bo_evict_segment(struct pagoda_device *pgdev, u32 mem_type)
{
	struct ttm_operation_ctx ctx = { .interruptible = true, .force_alloc = true };
	unsigned int n, i, tries, busy = 1;
	struct ttm_buffer_object **held;
	int ret = 0;

	held = pagoda_bo_get_all(pgdev, &n);
	if (!held)
		return -ENOMEM;
	for (tries = 0; busy && !ret && tries < PAGODA_EVICT_TRIES; tries++) {
		if (tries && msleep_interruptible(1)) {
			ret = -EINTR;
			break;
		}
		busy = 0;
		for (i = 0; i < n && !ret; i++) {
			if (!held[i])
				continue;
			ret = pagoda_bo_evict_if_in(held[i], mem_type, &ctx);
			if (ret == -EBUSY) {
				busy++;
				ret = 0;
				continue;
			}
			ttm_bo_put(held[i]);
			held[i] = NULL;
		}
	}
	for (i = 0; i < n; i++)
		if (held[i])
			ttm_bo_put(held[i]);
	kvfree(held);
	return ret ?: pagoda_bo_wait_segment_moves(pgdev, mem_type);
}

/**
 * pagoda_bo_unmap_all_dma - drop the DMA mappings of every allocation
 * @pgdev: device being unplugged, engines stopped
 *
 * Allocations outlive the PCI binding, but their system pages must not
 * stay mapped for a device the driver lets go of: the mappings go now,
 * the pages when the allocation does (CPU mappings get a dummy page after
 * the unplug). TTM's ttm_device_clear_dma_mappings() would free the pages
 * instead, but in this kernel it spins forever, holding the LRU lock, on
 * an allocation whose last reference is being dropped at the same time;
 * the driver's own list and references avoid that.
 */
void pagoda_bo_unmap_all_dma(struct pagoda_device *pgdev)
{
	struct ttm_buffer_object **held;
	unsigned int n, i;

	held = pagoda_bo_get_all(pgdev, &n);
	if (!held) {
		drm_err(pgdev->drm, "no memory to release the allocations' DMA mappings\n");
		return;
	}

	for (i = 0; i < n; i++) {
		struct ttm_buffer_object *tbo = held[i];

		dma_resv_lock(tbo->base.resv, NULL);
		if (tbo->ttm)
			pagoda_tt_unmap_dma(tbo->bdev, tbo->ttm);
		dma_resv_unlock(tbo->base.resv);
		ttm_bo_put(tbo);
	}
	kvfree(held);
	pagoda_bo_wait_dying(pgdev);
}

/* TTM answers -ENOMEM when no placement has room, even after eviction. */
static int pagoda_bo_no_room(int ret)
{
	return ret == -ENOMEM ? -ENOSPC : ret;
}

/* System pages the device uses are populated, and so mapped for it. */
static int pagoda_bo_populate(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx)
{
	if (bo->tbo.ttm && !ttm_tt_is_populated(bo->tbo.ttm))
		return ttm_tt_populate(bo->tbo.bdev, bo->tbo.ttm, ctx);
	return 0;
}

/*
 * A pinned allocation is resident: it is used where it is, in any of its
 * placements (TTM's own check skips fallback placements, and it may move
 * no pinned allocation to one it likes better). -EBUSY when it is pinned
 * where the GPU does not reach it.
 */
static int pagoda_bo_check_pinned(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx)
{
	struct ttm_place places[PAGODA_NUM_SEGMENTS + 1];
	struct ttm_placement any = {
		.placement = places, .num_placement = bo->placement.num_placement,
	};
	unsigned int i;

	for (i = 0; i < any.num_placement; i++) {
		places[i] = bo->placement.placement[i];
		places[i].flags &= ~TTM_PL_FLAG_FALLBACK;
	}
	return ttm_bo_validate(&bo->tbo, &any, ctx) == -EINVAL ? -EBUSY : 0;
}

/**
 * pagoda_bo_place - put an allocation where the GPU can use it
 * @bo: the allocation, reserved
 * @ctx: TTM's operation context
 *
 * Validates @bo into its preferred segment, evicting others if needed, or
 * failing that into any of its placements (TTM's validate with all
 * placements would leave an allocation in a fallback segment it is
 * already in rather than evict for the preferred one); system pages are
 * populated, and so mapped for the device. A pinned allocation stays
 * where it is, in any of its placements.
 *
 * Return: 0; -ENOSPC when no placement has room even after eviction (or,
 * for a pinned allocation, -EBUSY when it is pinned where the GPU does not
 * reach it); another negative errno from TTM (-ENOMEM for kernel memory).
 */
int pagoda_bo_place(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx)
{
	int ret;

	ret = pagoda_bo_place_step(bo, true, ctx);
	if (pagoda_bo_place_failed(ret))
		ret = pagoda_bo_place_step(bo, false, ctx);
	return ret;
}

static int pagoda_bo_place_one(struct pagoda_bo *bo, bool preferred,
			       struct ttm_operation_ctx *ctx)
{
	struct ttm_placement one = { .num_placement = 1, .placement = bo->placement.placement };
	int ret;

	if (bo->tbo.pin_count)
		ret = pagoda_bo_check_pinned(bo, ctx);
	else
		ret = ttm_bo_validate(&bo->tbo, preferred ? &one : &bo->placement, ctx);
	ret = pagoda_bo_no_room(ret);
	return ret ?: pagoda_bo_populate(bo, ctx);
}

/* Validate @bo into system memory alone (a mirrored instance whose first is there). */
static int pagoda_bo_place_system(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx)
{
	struct ttm_place system = { .mem_type = pagoda_bo_mem_type(bo->flags, PAGODA_SEG_SYSTEM) };
	struct ttm_placement placement = { .num_placement = 1, .placement = &system };
	int ret = pagoda_bo_no_room(ttm_bo_validate(&bo->tbo, &placement, ctx));

	return ret ?: pagoda_bo_populate(bo, ctx);
}

/*
 * The other GPUs' instances of a linked allocation whose first instance is
 * placed: each where its GPU prefers (LinkInstanced), or where the first is
 * (LinkMirrored: the same offset of the same memory segment, evicting what
 * is there, -ENOSPC when that cannot be had; system memory with the first).
 */
static int pagoda_bo_place_instances(struct pagoda_bo *bo, bool preferred,
				     struct ttm_operation_ctx *ctx)
{
	bool mirrored = bo->flags & DRM_PAGODA_BO_LINK_MIRRORED;
	struct pagoda_bo_at at, got;
	bool in_memory = false;
	u32 i;
	int ret;

	if (mirrored)
		in_memory = pagoda_bo_where(bo, &at);
	for (i = 1; i < bo->num_instances; i++) {
		struct pagoda_bo *instance = bo->instances[i];

		if (mirrored && !in_memory) {
			ret = pagoda_bo_place_system(instance, ctx);
		} else {
			if (mirrored)
				pagoda_bo_prefer_at(instance, &at);
			ret = pagoda_bo_place_one(instance, preferred || mirrored, ctx);
		}
		if (ret)
			return ret;
		if (mirrored && in_memory &&
		    (!pagoda_bo_where(instance, &got) || got.seg != at.seg ||
		     got.offset != at.offset))
			return -ENOSPC;
	}
	return 0;
}

/**
 * pagoda_bo_place_step - one step of pagoda_bo_place()
 * @bo: the allocation, reserved
 * @preferred: into its preferred segment only, else into any placement
 * @ctx: TTM's operation context
 *
 * For callers that must end their locking transaction after a failed
 * step (pagoda_phys.c): TTM's eviction locks others with the caller's
 * ticket and reports a contention there as -ENOSPC.
 *
 * Return: as pagoda_bo_place() (pagoda_bo_place_failed() tells a lack of
 * room).
 */
int pagoda_bo_place_step(struct pagoda_bo *bo, bool preferred, struct ttm_operation_ctx *ctx)
{
	int ret = pagoda_bo_place_one(bo, preferred, ctx);

	return ret ?: pagoda_bo_place_instances(bo, preferred, ctx);
}

/*
 * What the driver's own allocations are: never mapped by the CPU, VRAM
 * preferred, evicted to system memory, evicted last.
 */
static struct drm_pagoda_gem_create pagoda_bo_kernel_args(u64 size, u32 segments, u32 flags)
{
	return (struct drm_pagoda_gem_create){
		.size = size,
		.flags = DRM_PAGODA_BO_NO_CPU_ACCESS | flags,
		.segments = segments,
		.preferred_segment = segments & DRM_PAGODA_SEGMENT_MASK(PAGODA_SEG_VRAM) ?
				     PAGODA_SEG_VRAM : __ffs(segments),
		.eviction_segment = PAGODA_SEG_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_HIGH,
	};
}

/**
 * pagoda_bo_create_kernel - a pinned allocation for the driver's own use
 * @pgdev: the device
 * @size: bytes, a multiple of the segments' page size
 * @segments: DRM_PAGODA_SEGMENT_MASK()s it may live in; VRAM is preferred
 * @flags: DRM_PAGODA_BO_PHYSICAL for a contiguous one, or 0
 *
 * Return: the allocation, placed (pagoda_bo_place()) and pinned, or an
 * ERR_PTR.
 */
struct pagoda_bo *pagoda_bo_create_kernel(struct pagoda_device *pgdev, u64 size, u32 segments,
					  u32 flags)
{
	return pagoda_bo_create_kernel_at(pgdev, size, segments, flags, NULL);
}

/**
 * pagoda_bo_create_kernel_at - pagoda_bo_create_kernel(), at one place if it can
 * @pgdev: the device
 * @size: bytes, a multiple of the segments' page size
 * @segments: DRM_PAGODA_SEGMENT_MASK()s it may live in; VRAM is preferred
 * @flags: DRM_PAGODA_BO_PHYSICAL for a contiguous one, or 0
 * @at: where to put it (pagoda_bo_prefer_at()), or NULL
 *
 * Return: the allocation, placed and pinned, or an ERR_PTR.
 */
struct pagoda_bo *pagoda_bo_create_kernel_at(struct pagoda_device *pgdev, u64 size,
					     u32 segments, u32 flags,
					     const struct pagoda_bo_at *at)
{
	struct ttm_operation_ctx ctx = { .interruptible = false };
	struct drm_pagoda_gem_create args = pagoda_bo_kernel_args(size, segments, flags);
	struct pagoda_bo *bo;
	int ret;

	bo = pagoda_bo_create(pgdev, &args, size, NULL, true, NULL, at);
	if (IS_ERR(bo))
		return bo;
	ret = pagoda_bo_place(bo, &ctx);
	if (!ret)
		ttm_bo_pin(&bo->tbo);
	/* ttm_bo_unreserve() moves a pinned allocation off the LRU eviction walks */
	ttm_bo_unreserve(&bo->tbo);
	if (ret) {
		drm_gem_object_put(&bo->tbo.base);
		return ERR_PTR(ret);
	}
	return bo;
}

/**
 * pagoda_bo_create_shared - a driver allocation sharing a reservation
 * @pgdev: the device
 * @size: bytes, a multiple of the segments' page size
 * @segments: DRM_PAGODA_SEGMENT_MASK()s it may live in; VRAM is preferred,
 *	eviction goes to system memory
 * @resv_obj: the object whose reservation it shares, locked by the caller
 * @at: where to put it (pagoda_bo_prefer_at()), or NULL
 *
 * Unlike pagoda_bo_create_kernel() it is not pinned: it moves like any
 * allocation, under the shared reservation. It keeps a reference to
 * @resv_obj for as long as it lives, so that the reservation outlives
 * every user of it (a walk over all allocations holds one after its
 * owner let it go).
 *
 * Return: the allocation, placed, or an ERR_PTR (-ENOSPC when no
 * placement had room).
 */
struct pagoda_bo *pagoda_bo_create_shared(struct pagoda_device *pgdev, u64 size, u32 segments,
					  struct drm_gem_object *resv_obj,
					  const struct pagoda_bo_at *at)
{
	struct ttm_operation_ctx ctx = { .interruptible = false };
	struct drm_pagoda_gem_create args = pagoda_bo_kernel_args(size, segments, 0);
	struct pagoda_bo *bo;
	int ret;

	/* TTM's creation placed it: the preferred segment, by eviction if needed */
	bo = pagoda_bo_create(pgdev, &args, size, resv_obj->resv, true, NULL, at);
	if (IS_ERR(bo))
		return ERR_PTR(pagoda_bo_no_room(PTR_ERR(bo)));
	drm_gem_object_get(resv_obj);
	bo->resv_owner = resv_obj;
	ret = pagoda_bo_populate(bo, &ctx);
	if (ret) {
		drm_gem_object_put(&bo->tbo.base);
		return ERR_PTR(ret);
	}
	return bo;
}

/**
 * pagoda_bo_free_kernel - release an allocation of pagoda_bo_create_kernel()
 * @bo: the allocation; its memory goes once the work using it is done
 */
void pagoda_bo_free_kernel(struct pagoda_bo *bo)
{
	/* pinned, it is on no LRU: nobody else locks it (callers may hold reservations) */
	if (!WARN_ON(!dma_resv_trylock(bo->tbo.base.resv))) {
		ttm_bo_unpin(&bo->tbo);
		ttm_bo_unreserve(&bo->tbo);
	}
	drm_gem_object_put(&bo->tbo.base);
}

static bool pagoda_bo_in_pages(struct ttm_buffer_object *tbo)
{
	return tbo->resource->mem_type == TTM_PL_SYSTEM || tbo->resource->mem_type == TTM_PL_TT;
}

static dma_addr_t *pagoda_bo_dma(struct ttm_buffer_object *tbo)
{
	struct pagoda_tt *ptt = container_of(tbo->ttm, struct pagoda_tt, tt);

	return ptt->mapped ? ptt->dma : NULL;
}

/**
 * pagoda_bo_page_paddr - device physical address of one page
 * @bo: the allocation, pinned or reserved, its pages mapped for the device
 * @offset: byte offset of the page
 *
 * Return: PAGODA_PADDR() of the page; system pages (also those of an
 * allocation in the aperture) are named in system memory.
 */
u64 pagoda_bo_page_paddr(struct pagoda_bo *bo, u64 offset)
{
	struct ttm_buffer_object *tbo = &bo->tbo;
	dma_addr_t *dma;

	if (!pagoda_bo_in_pages(tbo))
		return PAGODA_PADDR(pagoda_mem_type_segment(tbo->resource->mem_type),
				    pagoda_vram_res_offset(tbo->resource, offset));
	dma = pagoda_bo_dma(tbo);
	if (WARN_ON(!dma))
		return PAGODA_PADDR(PAGODA_SEG_SYSTEM, 0);
	return PAGODA_PADDR(PAGODA_SEG_SYSTEM, dma[offset >> PAGE_SHIFT] + offset_in_page(offset));
}

/**
 * pagoda_bo_contiguous_paddr - device physical address of a contiguous allocation
 * @bo: a physically accessed allocation or a scanout, pinned
 *
 * Return: PAGODA_PADDR() of its first byte: in its memory segment, or in
 * the aperture segment when in system memory.
 */
u64 pagoda_bo_contiguous_paddr(struct pagoda_bo *bo)
{
	struct ttm_resource *res = bo->tbo.resource;
	u32 contiguous;
	u64 offset;

	pagoda_bo_res_placement(res, &offset, &contiguous);
	WARN_ON(!contiguous);
	return PAGODA_PADDR(pagoda_mem_type_segment(res->mem_type), offset);
}

static void pagoda_bo_run_pages(struct pagoda_bo_run *run)
{
	dma_addr_t *dma = pagoda_bo_dma(run->tbo);
	pgoff_t i = run->offset >> PAGE_SHIFT, n = 1;

	if (WARN_ON(!dma) || !run->remaining) {
		run->bytes = 0;
		return;
	}
	while (((u64)n << PAGE_SHIFT) < run->remaining && i + n < run->tbo->ttm->num_pages &&
	       dma[i + n] == dma[i] + ((u64)n << PAGE_SHIFT))
		n++;
	run->paddr = PAGODA_PADDR(PAGODA_SEG_SYSTEM, dma[i]);
	run->bytes = min_t(u64, (u64)n << PAGE_SHIFT, run->remaining);
}

/**
 * pagoda_bo_run_first - start walking part of an allocation
 * @bo: the allocation, reserved, its pages mapped for the device
 * @offset: first byte, page aligned
 * @size: bytes, page aligned, within the allocation
 * @run: the walk
 */
void pagoda_bo_run_first(struct pagoda_bo *bo, u64 offset, u64 size, struct pagoda_bo_run *run)
{
	struct ttm_buffer_object *tbo = &bo->tbo;

	run->tbo = tbo;
	run->offset = offset;
	run->remaining = size;
	if (pagoda_bo_in_pages(tbo)) {
		pagoda_bo_run_pages(run);
		return;
	}
	pagoda_vram_cursor_first(tbo->resource, offset, size, &run->cur);
	run->paddr = PAGODA_PADDR(pagoda_mem_type_segment(tbo->resource->mem_type),
				  run->cur.seg_offset);
	run->bytes = run->cur.size;
}

/**
 * pagoda_bo_run_next - the next run
 * @run: a walk whose current run is not empty
 */
void pagoda_bo_run_next(struct pagoda_bo_run *run)
{
	run->offset += run->bytes;
	run->remaining -= run->bytes;
	if (pagoda_bo_in_pages(run->tbo)) {
		pagoda_bo_run_pages(run);
		return;
	}
	pagoda_vram_cursor_next(&run->cur);
	run->paddr = PAGODA_PADDR(PAGODA_PADDR_SEG(run->paddr), run->cur.seg_offset);
	run->bytes = run->cur.size;
}

/* A user's allocation, placed: GEM_CREATE's work, under the device's locks. */
static struct pagoda_bo *pagoda_bo_create_user(struct pagoda_device *pgdev,
					       const struct drm_pagoda_gem_create *args, u64 size)
{
	struct pagoda_bo *bo;
	int ret, idx;

	if (!drm_dev_enter(pgdev->drm, &idx))
		return ERR_PTR(-ENODEV);
	/* a new allocation is cleared by the paging engine: not during a reset */
	ret = down_read_interruptible(&pgdev->reset_lock);
	if (ret) {
		drm_dev_exit(idx);
		return ERR_PTR(ret);
	}
	bo = pagoda_bo_create(pgdev, args, size, NULL, false, NULL, NULL);
	up_read(&pgdev->reset_lock);
	drm_dev_exit(idx);
	return bo;
}

/*
 * A LinkInstanced or LinkMirrored allocation, placed: the first GPU's
 * instance is the user's object, the others the driver's. All share one
 * reservation (of an object of its own that each holds, so that it
 * outlives whichever goes last); the first holds the others. A mirrored
 * one's instances are made where the first is, or it fails with -ENOSPC.
 */
static struct pagoda_bo *pagoda_bo_create_linked(struct pagoda_link *link,
						 const struct drm_pagoda_gem_create *args, u64 size)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };
	bool mirrored = args->flags & DRM_PAGODA_BO_LINK_MIRRORED, at_first = false;
	struct drm_gem_object *resv_obj;
	struct pagoda_bo *bo = NULL;
	struct pagoda_bo_at at;
	int ret, idx;
	u32 i;

	if (!drm_dev_enter(&link->drm, &idx))
		return ERR_PTR(-ENODEV);
	/* new allocations are cleared by the paging engines: not during a reset */
	ret = pagoda_link_resets_read_lock(link);
	if (ret)
		goto out_exit;
	resv_obj = drm_gpuvm_resv_object_alloc(&link->drm);
	if (!resv_obj) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	dma_resv_lock(resv_obj->resv, NULL);
	for (i = 0; i < link->num_gpus; i++) {
		struct pagoda_bo *instance;

		instance = pagoda_bo_create(link->gpu[i], args, size, resv_obj->resv, true, NULL,
					    at_first ? &at : NULL);
		if (IS_ERR(instance)) {
			ret = pagoda_bo_no_room(PTR_ERR(instance));
			break;
		}
		drm_gem_object_get(resv_obj);
		instance->resv_owner = resv_obj;
		if (!bo) {
			bo = instance;
			bo->num_instances = link->num_gpus;
			/* a mirrored one's others where the first is */
			at_first = mirrored && pagoda_bo_where(bo, &at);
		} else {
			instance->primary = bo;
		}
		bo->instances[i] = instance;
	}
	if (!ret)
		ret = pagoda_bo_place_instances(bo, true, &ctx);
	dma_resv_unlock(resv_obj->resv);
	drm_gem_object_put(resv_obj);
	if (ret && bo)
		drm_gem_object_put(&bo->tbo.base);
out_unlock:
	pagoda_link_resets_read_unlock(link);
out_exit:
	drm_dev_exit(idx);
	return ret ? ERR_PTR(ret) : bo;
}

/**
 * pagoda_ioctl_gem_create - DRM_IOCTL_PAGODA_GEM_CREATE
 * @drm: the DRM device
 * @data: struct drm_pagoda_gem_create
 * @file: the caller's file, which gets the handle
 *
 * Return: 0, -EINVAL for bad arguments (docs/driver.md lists them),
 * -ENOSPC or -ENOMEM when no allowed segment has room even after eviction,
 * -ENODEV after unplug.
 */
int pagoda_ioctl_gem_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_pagoda_gem_create *args = data, req = *args;
	struct pagoda_link *link = to_pagoda_link(drm);
	struct pagoda_device *pgdev;
	struct pagoda_bo *bo;
	bool linked;
	u64 size;
	int ret;

	pagoda_bo_aperture_means_system(&req);
	ret = pagoda_bo_check_args(&req);
	if (ret)
		return ret;
	if (req.adapter >= link->num_gpus)
		return -EINVAL;
	linked = req.flags & (DRM_PAGODA_BO_LINK_INSTANCED | DRM_PAGODA_BO_LINK_MIRRORED);
	/* an instance on every GPU: of a link, and named by no one GPU */
	if (linked && (link->num_gpus < 2 || req.adapter))
		return -EINVAL;
	pgdev = link->gpu[req.adapter];
	size = pagoda_bo_round_size(pgdev, req.size, req.segments, req.flags);
	if (!size)
		return -EINVAL;

	bo = linked ? pagoda_bo_create_linked(link, &req, size) :
		      pagoda_bo_create_user(pgdev, &req, size);
	/*
	 * No room: allocations freed a moment ago may still wait in TTM's
	 * delayed destroy (busy when their last reference went, or their
	 * reservation held then); let it return their memory, and try again.
	 */
	if (bo == ERR_PTR(-ENOMEM) && !linked) {
		flush_workqueue(pgdev->bdev.wq);
		bo = pagoda_bo_create_user(pgdev, &req, size);
	}
	if (IS_ERR(bo))
		return PTR_ERR(bo);

	ret = drm_gem_handle_create(file, &bo->tbo.base, &args->handle);
	/* the handle holds the reference from here, or nothing does */
	drm_gem_object_put(&bo->tbo.base);
	if (ret)
		return ret;
	args->size = size;
	return 0;
}

/**
 * pagoda_gem_dumb_create - a dumb buffer, for generic KMS clients
 * @file: the caller's file, which gets the handle
 * @drm: the DRM device
 * @args: size in pixels and bits per pixel in; handle, pitch and size out
 *
 * A primary allocation that the CPU maps: contiguous in VRAM (BAR2)
 * preferred, system memory when VRAM is full or when evicted.
 *
 * Return: 0, -EINVAL for a size of 0 or one that overflows, or an errno of
 * DRM_IOCTL_PAGODA_GEM_CREATE.
 */
int pagoda_gem_dumb_create(struct drm_file *file, struct drm_device *drm,
			   struct drm_mode_create_dumb *args)
{
	struct drm_pagoda_gem_create create = {
		.flags = DRM_PAGODA_BO_PRIMARY | DRM_PAGODA_BO_CPU_ACCESS,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	u32 cpp = DIV_ROUND_UP(args->bpp, 8);
	u64 pitch;
	int ret;

	if (!args->width || !args->height || !cpp || args->width > U32_MAX / cpp)
		return -EINVAL;
	/* lines dword-aligned for the display controller, 64 bytes for copies */
	pitch = ALIGN((u64)args->width * cpp, 64);
	if (pitch > U32_MAX)
		return -EINVAL;
	create.size = pitch * args->height;
	ret = pagoda_ioctl_gem_create(drm, &create, file);
	if (ret)
		return ret;
	args->handle = create.handle;
	args->pitch = pitch;
	args->size = create.size;
	return 0;
}

/**
 * pagoda_gem_prime_import_sg_table - an allocation of another device's dma-buf
 * @drm: the DRM device
 * @attach: the dma-buf's attachment to the device
 * @sgt: its pages, mapped for the device
 *
 * A foreign buffer is system memory the device reaches by bus address: the
 * allocation lives in system memory only, where page tables map it (and,
 * scanned out, the aperture segment), shares the dma-buf's reservation
 * object (its fences order the work of both devices), and is never copied,
 * cleared, discarded or swapped out by this driver. It is not physically
 * accessed (SUBMIT_PHYS refuses it, EINVAL). The CPU maps it through its
 * exporter. Pagoda's own dma-bufs come back as the allocation itself
 * (drm_gem_prime_import()).
 *
 * Return: its GEM object, or an ERR_PTR: -EINVAL for a size that is not a
 * whole number of pages, -ENOMEM.
 */
struct drm_gem_object *pagoda_gem_prime_import_sg_table(struct drm_device *drm,
							struct dma_buf_attachment *attach,
							struct sg_table *sgt)
{
	const struct drm_pagoda_gem_create args = {
		.size = attach->dmabuf->size,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct dma_resv *resv = attach->dmabuf->resv;
	struct pagoda_bo *bo;

	if (!args.size || !PAGE_ALIGNED(args.size))
		return ERR_PTR(-EINVAL);
	dma_resv_lock(resv, NULL);
	/* the link's first GPU holds what other devices export */
	bo = pagoda_bo_create(to_pagoda_link(drm)->gpu[0], &args, args.size, resv, true, sgt,
			      NULL);
	dma_resv_unlock(resv);
	return IS_ERR(bo) ? ERR_CAST(bo) : &bo->tbo.base;
}

/*
 * Where the display controller may read @bo: contiguous in the memory
 * segment it is in, or in another allowed one; in system memory, the
 * aperture segment. Fills @places, returns how many.
 */
static unsigned int pagoda_bo_scanout_places(struct pagoda_bo *bo, struct ttm_place *places)
{
	u32 now = bo->tbo.resource->mem_type;
	unsigned int i, n = 0;

	if (now == TTM_PL_SYSTEM || now == TTM_PL_TT) {
		places[n++] = (struct ttm_place){ .mem_type = TTM_PL_TT };
		return n;
	}
	places[n++] = (struct ttm_place){ .mem_type = now, .flags = TTM_PL_FLAG_CONTIGUOUS };
	for (i = 0; i < bo->placement.num_placement; i++) {
		u32 type = bo->places[i].mem_type;

		if (type == now)
			continue;
		if (type == TTM_PL_SYSTEM)
			type = TTM_PL_TT;
		places[n++] = (struct ttm_place){
			.mem_type = type,
			.flags = TTM_PL_FLAG_FALLBACK |
				 (type == TTM_PL_TT ? 0 : TTM_PL_FLAG_CONTIGUOUS),
		};
	}
	return n;
}

/**
 * pagoda_bo_pin_scanout - pin an allocation where the display controller reads it
 * @bo: a framebuffer's allocation
 *
 * The model's primary surface: contiguous in a memory segment (where it
 * is, moved to a contiguous range if it is not), or, in system memory,
 * mapped into the aperture segment. An allocation pinned already stays
 * where it is if the controller can read it there. Each call is balanced
 * by pagoda_bo_unpin_scanout().
 *
 * Return: 0; -ENOSPC or -ENOMEM when no place has room, -EBUSY when it is
 * pinned where the controller cannot read it, -ERESTARTSYS.
 */
int pagoda_bo_pin_scanout(struct pagoda_bo *bo)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };
	struct ttm_place places[PAGODA_NUM_SEGMENTS];
	struct ttm_placement placement = { .placement = places };
	u32 contiguous;
	u64 offset;
	int ret;

	ret = ttm_bo_reserve(&bo->tbo, true, false, NULL);
	if (ret)
		return ret;
	if (bo->tbo.pin_count) {
		pagoda_bo_res_placement(bo->tbo.resource, &offset, &contiguous);
		ret = contiguous ? 0 : -EBUSY;
	} else {
		placement.num_placement = pagoda_bo_scanout_places(bo, places);
		ret = ttm_bo_validate(&bo->tbo, &placement, &ctx);
	}
	if (!ret)
		ttm_bo_pin(&bo->tbo);
	ttm_bo_unreserve(&bo->tbo);
	return ret;
}

/**
 * pagoda_bo_unpin_scanout - the display controller no longer reads @bo
 * @bo: an allocation pinned by pagoda_bo_pin_scanout()
 *
 * Once nothing pins it, an allocation that was mapped into the aperture
 * for the display goes back to plain system pages: the aperture holds the
 * system-memory primaries on screen, and the physically accessed
 * allocations whose place it is.
 */
void pagoda_bo_unpin_scanout(struct pagoda_bo *bo)
{
	struct ttm_operation_ctx ctx = { .interruptible = false };
	struct ttm_place system = { .mem_type = TTM_PL_SYSTEM };
	struct ttm_placement placement = { .placement = &system, .num_placement = 1 };
	int ret;

	ttm_bo_reserve(&bo->tbo, false, false, NULL);
	ttm_bo_unpin(&bo->tbo);
	if (!bo->tbo.pin_count && bo->tbo.resource->mem_type == TTM_PL_TT &&
	    !(bo->flags & DRM_PAGODA_BO_PHYSICAL)) {
		ret = ttm_bo_validate(&bo->tbo, &placement, &ctx);
		if (ret)
			drm_dbg_kms(bo->tbo.base.dev,
				    "framebuffer stays in the aperture: %d\n", ret);
	}
	ttm_bo_unreserve(&bo->tbo);
}

/**
 * pagoda_ioctl_gem_madvise - DRM_IOCTL_PAGODA_GEM_MADVISE
 * @drm: the DRM device
 * @data: struct drm_pagoda_gem_madvise
 * @file: the caller's file
 *
 * Return: 0, -EINVAL for an unknown state or a pad not zero, -ENOENT for a
 * handle the file does not hold.
 */
int pagoda_ioctl_gem_madvise(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_pagoda_gem_madvise *args = data;
	struct drm_gem_object *gem;
	struct pagoda_bo *bo;
	int ret;

	if (args->pad || args->state > DRM_PAGODA_MADV_DONTNEED)
		return -EINVAL;
	gem = drm_gem_object_lookup(file, args->handle);
	if (!gem)
		return -ENOENT;
	bo = gem_to_pagoda_bo(gem);
	ret = dma_resv_lock_interruptible(bo->tbo.base.resv, NULL);
	if (ret)
		goto out;
	bo->madv = args->state;
	args->retained = !bo->discarded;
	if (args->state == DRM_PAGODA_MADV_WILLNEED)
		bo->discarded = false;
	/* DONTNEED ones are evicted first: a class below every priority */
	bo->tbo.priority = args->state == DRM_PAGODA_MADV_DONTNEED ? 0 : bo->priority + 1;
	ttm_bo_move_to_lru_tail_unlocked(&bo->tbo);
	dma_resv_unlock(bo->tbo.base.resv);
out:
	drm_gem_object_put(gem);
	return ret;
}

/**
 * pagoda_bo_res_placement - where a resource is in its segment
 * @res: an allocation's resource
 * @offset: out: offset of its first byte in its segment; 0 in system memory
 * @contiguous: out: 1 when it is one contiguous range of its segment
 */
void pagoda_bo_res_placement(struct ttm_resource *res, u64 *offset, u32 *contiguous)
{
	switch (res->mem_type) {
	case TTM_PL_SYSTEM:
		*offset = 0;
		*contiguous = 0;
		break;
	case TTM_PL_TT:
		*offset = (u64)res->start << PAGE_SHIFT;
		*contiguous = 1;
		break;
	default:
		*offset = pagoda_vram_res_offset(res, 0);
		*contiguous = pagoda_vram_res_is_contiguous(res);
		break;
	}
}

/**
 * pagoda_ioctl_gem_info - DRM_IOCTL_PAGODA_GEM_INFO
 * @drm: the DRM device
 * @data: struct drm_pagoda_gem_info
 * @file: the caller's file
 *
 * Return: 0, -EINVAL when a pad is not zero, -ENOENT for a handle the file
 * does not hold.
 */
int pagoda_ioctl_gem_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_pagoda_gem_info *args = data;
	struct drm_gem_object *gem;
	struct ttm_resource *res;
	struct pagoda_bo *bo;
	int ret;

	if (args->pad)
		return -EINVAL;
	gem = drm_gem_object_lookup(file, args->handle);
	if (!gem)
		return -ENOENT;
	bo = gem_to_pagoda_bo(gem);
	/* the file's lock comes before BO reservations */
	args->residency = pagoda_residency_count(file->driver_priv, bo);

	/* a query is not a use: plain lock, the LRU order stays */
	ret = dma_resv_lock_interruptible(bo->tbo.base.resv, NULL);
	if (ret)
		goto out;
	res = bo->tbo.resource;
	args->size = gem->size;
	args->flags = bo->flags;
	args->segment = pagoda_mem_type_segment(res->mem_type);
	pagoda_bo_res_placement(res, &args->offset, &args->contiguous);
	args->adapter = pagoda_bo_device(bo)->adapter;
	args->pad2 = 0;
	args->mmap_offset = 0;
	if (pagoda_bo_cpu_mappable(bo))
		args->mmap_offset = drm_vma_node_offset_addr(&gem->vma_node);
	dma_resv_unlock(bo->tbo.base.resv);
out:
	drm_gem_object_put(gem);
	return ret;
}
