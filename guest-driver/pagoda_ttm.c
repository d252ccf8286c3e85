// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda segments and TTM
 *
 * The driver discovers the device's segments from their descriptor
 * registers (PAGODA_REG_SEG(id)) and gives each memory segment a TTM
 * memory type managed by a drm_buddy resource manager (pagoda_vram_mgr.c)
 * in the segment's page size:
 *
 * ========== ================= =====================================
 * segment    TTM memory type   CPU access
 * ========== ================= =====================================
 * 0 system   TTM_PL_SYSTEM     the pages themselves
 * 1 VRAM     TTM_PL_VRAM       BAR2, write-combined
 * 2 hidden   PAGODA_PL_HIDDEN  host aperture slots (BAR4)
 * 3 aperture TTM_PL_TT         the pages themselves
 * ========== ================= =====================================
 *
 * TTM_PL_TT is system memory mapped contiguously into the aperture segment
 * (pagoda_gart.c): where physically accessed allocations live when they are
 * resident in system memory. Others in system memory are TTM_PL_SYSTEM.
 *
 * Every move is run by the paging engine (pagoda_paging.c) and returns a
 * fence that TTM attaches to the buffer: TRANSFER between segments, with
 * page lists for system pages; FILL with zeroes when an allocation gets
 * memory of a segment with no content yet (a new allocation never shows
 * what the memory held before). The CPU never copies an allocation.
 *
 * An allocation that moves from its system pages into a memory segment
 * keeps them as backing store (the model reserves system memory for every
 * allocation's eviction): evicting it again copies into them, with no
 * page to allocate or clear.
 */

#include <linux/dma-mapping.h>
#include <linux/pci.h>

#include <drm/drm_prime.h>
#include <drm/drm_print.h>
#include <drm/ttm/ttm_bo.h>
#include <drm/ttm/ttm_placement.h>
#include <drm/ttm/ttm_tt.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_phys.h"
#include "pagoda_paging.h"
#include "pagoda_trace.h"
#include "pagoda_vram_mgr.h"

static void pagoda_read_segment(struct pagoda_device *pgdev, unsigned int id)
{
	struct pagoda_segment *seg = &pgdev->segs[id];
	u32 base = PAGODA_REG_SEG(id);

	seg->id = id;
	seg->kind = pagoda_read(pgdev, base + PAGODA_SEG_KIND);
	seg->flags = pagoda_read(pgdev, base + PAGODA_SEG_FLAGS);
	seg->page_size = pagoda_read(pgdev, base + PAGODA_SEG_PAGE_SIZE);
	seg->size = (u64)pagoda_read(pgdev, base + PAGODA_SEG_SIZE_HI) << 32 |
		    pagoda_read(pgdev, base + PAGODA_SEG_SIZE_LO);
	seg->gpu_base = (u64)pagoda_read(pgdev, base + PAGODA_SEG_GPU_BASE_HI) << 32 |
			pagoda_read(pgdev, base + PAGODA_SEG_GPU_BASE_LO);
}

/**
 * pagoda_read_segments - read the GPU's segments and check them
 * @pgdev: the GPU
 *
 * The segments the driver needs, with sizes and page sizes it can manage.
 *
 * Return: 0, or -ENODEV for segments the driver cannot use.
 */
int pagoda_read_segments(struct pagoda_device *pgdev)
{
	static const u32 kinds[PAGODA_NUM_SEGMENTS] = {
		[PAGODA_SEG_SYSTEM] = PAGODA_SEG_KIND_SYSTEM,
		[PAGODA_SEG_VRAM] = PAGODA_SEG_KIND_MEMORY,
		[PAGODA_SEG_VRAM_HIDDEN] = PAGODA_SEG_KIND_MEMORY,
		[PAGODA_SEG_APERTURE] = PAGODA_SEG_KIND_APERTURE,
	};
	unsigned int id;

	if (pgdev->params.num_segments < PAGODA_NUM_SEGMENTS) {
		pagoda_gpu_err(pgdev, "%u segments, expected %u\n",
			       pgdev->params.num_segments, PAGODA_NUM_SEGMENTS);
		return -ENODEV;
	}
	for (id = 0; id < PAGODA_NUM_SEGMENTS; id++) {
		struct pagoda_segment *seg = &pgdev->segs[id];

		pagoda_read_segment(pgdev, id);
		if (seg->kind != kinds[id] ||
		    (seg->kind == PAGODA_SEG_KIND_MEMORY &&
		     (seg->page_size != SZ_4K && seg->page_size != SZ_64K)) ||
		    !IS_ALIGNED(seg->size, seg->page_size ? seg->page_size : 1)) {
			pagoda_gpu_err(pgdev, "segment %u: kind %u, page size %u, size %llu: not usable\n",
				       id, seg->kind, seg->page_size, seg->size);
			return -ENODEV;
		}
	}
	return 0;
}

/* The TTM memory type of each segment. */
static const u32 pagoda_segment_mem_types[] = {
	[PAGODA_SEG_SYSTEM] = TTM_PL_SYSTEM,
	[PAGODA_SEG_VRAM] = TTM_PL_VRAM,
	[PAGODA_SEG_VRAM_HIDDEN] = PAGODA_PL_HIDDEN,
	[PAGODA_SEG_APERTURE] = TTM_PL_TT,
};

static_assert(ARRAY_SIZE(pagoda_segment_mem_types) == PAGODA_NUM_SEGMENTS);

/**
 * pagoda_segment_mem_type - the TTM memory type of a segment
 * @seg: a segment id
 *
 * Return: the memory type.
 */
u32 pagoda_segment_mem_type(unsigned int seg)
{
	return pagoda_segment_mem_types[seg];
}

/**
 * pagoda_mem_type_segment - the segment a TTM memory type stands for
 * @mem_type: TTM_PL_SYSTEM, TTM_PL_VRAM, PAGODA_PL_HIDDEN or TTM_PL_TT
 *
 * Return: the segment id.
 */
unsigned int pagoda_mem_type_segment(u32 mem_type)
{
	unsigned int seg;

	for (seg = 0; seg < ARRAY_SIZE(pagoda_segment_mem_types); seg++)
		if (pagoda_segment_mem_types[seg] == mem_type)
			return seg;
	return PAGODA_SEG_SYSTEM;
}

static bool mem_type_is_vram(u32 mem_type)
{
	return mem_type == TTM_PL_VRAM || mem_type == PAGODA_PL_HIDDEN;
}

/* Whether an allocation of @mem_type keeps its data in its system pages. */
static bool mem_type_has_pages(u32 mem_type)
{
	return mem_type == TTM_PL_SYSTEM || mem_type == TTM_PL_TT;
}

/*
 * System pages come from TTM's pool; the driver maps them for the device
 * itself (rather than letting the pool do it) so that it can take every
 * mapping down when the device is unplugged while allocations live on:
 * see pagoda_bo_unmap_all_dma().
 */
static struct ttm_tt *pagoda_ttm_tt_create(struct ttm_buffer_object *bo, u32 page_flags)
{
	struct pagoda_tt *ptt = kzalloc(sizeof(*ptt), GFP_KERNEL);
	enum ttm_caching caching = ttm_cached;

	if (!ptt)
		return NULL;
	/* CPU mappings of the pages as the allocation asked */
	if (pagoda_ttm_bo_is_pagoda(bo) &&
	    to_pagoda_bo(bo)->flags & DRM_PAGODA_BO_WRITE_COMBINED)
		caching = ttm_write_combined;
	if (ttm_tt_init(&ptt->tt, bo, page_flags, caching, 0)) {
		kfree(ptt);
		return NULL;
	}
	ptt->dma = kvcalloc(ptt->tt.num_pages, sizeof(*ptt->dma), GFP_KERNEL);
	if (!ptt->dma) {
		ttm_tt_fini(&ptt->tt);
		kfree(ptt);
		return NULL;
	}
	return &ptt->tt;
}

/* Pages of the physically contiguous run that starts at page @i. */
static pgoff_t pagoda_tt_run(struct ttm_tt *tt, pgoff_t i)
{
	unsigned long pfn = page_to_pfn(tt->pages[i]);
	pgoff_t n = 1;

	while (i + n < tt->num_pages && page_to_pfn(tt->pages[i + n]) == pfn + n)
		n++;
	return n;
}

/* Undo the mappings of the runs before page @end. */
static void pagoda_tt_unmap_runs(struct device *dev, struct pagoda_tt *ptt, pgoff_t end)
{
	pgoff_t i, n;

	for (i = 0; i < end; i += n) {
		n = min(pagoda_tt_run(&ptt->tt, i), end - i);
		dma_unmap_page(dev, ptt->dma[i], n << PAGE_SHIFT, DMA_BIDIRECTIONAL);
	}
}

/**
 * pagoda_tt_unmap_dma - undo the device's mappings of an allocation's pages
 * @bdev: the TTM device
 * @tt: populated or not; a no-op when not mapped
 */
void pagoda_tt_unmap_dma(struct ttm_device *bdev, struct ttm_tt *tt)
{
	struct pagoda_tt *ptt = container_of(tt, struct pagoda_tt, tt);

	if (!ptt->mapped)
		return;
	/* a dma-buf's pages were mapped by its attachment, which unmaps them */
	if (!(tt->page_flags & TTM_TT_FLAG_EXTERNAL))
		pagoda_tt_unmap_runs(bdev->pool.dev, ptt, tt->num_pages);
	ptt->mapped = false;
}

/*
 * The pool hands out pages in large physically contiguous chunks: each
 * run is mapped at once (mapping page by page cost much of an eviction's
 * time), and @dma keeps the bus address of every page for page lists.
 */
static int pagoda_ttm_tt_populate(struct ttm_device *bdev, struct ttm_tt *tt,
				  struct ttm_operation_ctx *ctx)
{
	struct pagoda_tt *ptt = container_of(tt, struct pagoda_tt, tt);
	struct device *dev = bdev->pool.dev;
	pgoff_t i, j, n;
	dma_addr_t addr;
	int ret;

	/* a dma-buf's pages: the attachment mapped them for the device */
	if (tt->page_flags & TTM_TT_FLAG_EXTERNAL) {
		ret = drm_prime_sg_to_dma_addr_array(tt->sg, ptt->dma, tt->num_pages);
		ptt->mapped = !ret;
		return ret;
	}
	ret = ttm_pool_alloc(&bdev->pool, tt, ctx);
	if (ret)
		return ret;
	for (i = 0; i < tt->num_pages; i += n) {
		n = pagoda_tt_run(tt, i);
		addr = dma_map_page(dev, tt->pages[i], 0, n << PAGE_SHIFT, DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, addr)) {
			pagoda_tt_unmap_runs(dev, ptt, i);
			ttm_pool_free(&bdev->pool, tt);
			return -ENOMEM;
		}
		for (j = 0; j < n; j++)
			ptt->dma[i + j] = addr + (j << PAGE_SHIFT);
	}
	ptt->mapped = true;
	return 0;
}

static void pagoda_ttm_tt_unpopulate(struct ttm_device *bdev, struct ttm_tt *tt)
{
	pagoda_tt_unmap_dma(bdev, tt);
	if (!(tt->page_flags & TTM_TT_FLAG_EXTERNAL))
		ttm_pool_free(&bdev->pool, tt);
}

static void pagoda_ttm_tt_destroy(struct ttm_device *bdev, struct ttm_tt *tt)
{
	struct pagoda_tt *ptt = container_of(tt, struct pagoda_tt, tt);

	ttm_tt_fini(tt);
	kvfree(ptt->dma);
	kfree(ptt);
}

/* TTM's test, and not what a split buffer's barrier may hold back. */
static bool pagoda_eviction_valuable(struct ttm_buffer_object *bo, const struct ttm_place *place)
{
	return ttm_bo_eviction_valuable(bo, place) && !pagoda_split_blocks_eviction(bo);
}

static void pagoda_evict_flags(struct ttm_buffer_object *bo, struct ttm_placement *placement)
{
	static const struct ttm_place system = { .mem_type = TTM_PL_SYSTEM };
	struct pagoda_bo *pbo = to_pagoda_bo(bo);
	u32 from = bo->resource->mem_type;

	if (from == TTM_PL_TT || from == TTM_PL_SYSTEM || pbo->madv == DRM_PAGODA_MADV_DONTNEED) {
		/*
		 * Out of the aperture: not resident until made resident again.
		 * Not needed: discarded on the way (pagoda_bo_move).
		 */
		placement->placement = &system;
		placement->num_placement = 1;
	} else if (from == pbo->eviction_placement[0].mem_type) {
		/* evicted from its eviction segment: the fallbacks (a memory segment has some) */
		placement->placement = &pbo->eviction_placement[1];
		placement->num_placement = pbo->num_eviction_places - 1;
	} else {
		placement->placement = pbo->eviction_placement;
		placement->num_placement = pbo->num_eviction_places;
	}
}

/**
 * pagoda_bo_evict - evict an allocation as memory pressure would
 * @bo: the allocation, reserved and not pinned
 * @ctx: TTM's operation context
 *
 * Moved where pagoda_evict_flags() sends it, and the move is an eviction
 * (counted as one; an allocation not needed is discarded).
 *
 * Return: 0 or a negative errno from TTM.
 */
int pagoda_bo_evict(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx)
{
	struct ttm_placement placement;
	int ret;

	pagoda_evict_flags(&bo->tbo, &placement);
	bo->evicting = true;
	ret = ttm_bo_validate(&bo->tbo, &placement, ctx);
	bo->evicting = false;
	return ret;
}

/* Zero every chunk of @res, a resource of a memory segment. */
static int pagoda_clear(struct pagoda_paging_batch *batch, struct ttm_resource *res, u64 size)
{
	unsigned int seg = pagoda_mem_type_segment(res->mem_type);
	struct pagoda_vram_cursor cur;
	int ret;

	for (pagoda_vram_cursor_first(res, 0, size, &cur); cur.size;
	     pagoda_vram_cursor_next(&cur)) {
		ret = pagoda_paging_fill(batch, PAGODA_PADDR(seg, cur.seg_offset), cur.size, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/* Copy between system pages and a memory segment resource. */
static int pagoda_copy_system(struct pagoda_paging_batch *batch, struct ttm_tt *tt,
			      struct ttm_resource *vram, u64 size, bool to_system)
{
	unsigned int seg = pagoda_mem_type_segment(vram->mem_type);
	struct pagoda_vram_cursor cur;
	unsigned long page = 0;
	int ret;

	struct pagoda_tt *ptt = container_of(tt, struct pagoda_tt, tt);

	/* the device would write wherever unmapped entries point */
	if (!ptt->mapped)
		return -ENODEV;

	for (pagoda_vram_cursor_first(vram, 0, size, &cur); cur.size;
	     pagoda_vram_cursor_next(&cur)) {
		ret = pagoda_paging_copy_pages(batch, ptt->dma + page,
					       cur.size >> PAGE_SHIFT,
					       PAGODA_PADDR(seg, cur.seg_offset), to_system);
		if (ret)
			return ret;
		page += cur.size >> PAGE_SHIFT;
	}
	return 0;
}

/* Move a cursor @n bytes on, at most to the end of its current chunk. */
static void vram_cursor_advance(struct pagoda_vram_cursor *cur, u64 n)
{
	if (n < cur->size) {
		cur->seg_offset += n;
		cur->size -= n;
		cur->remaining -= n;
	} else {
		pagoda_vram_cursor_next(cur);
	}
}

/* Copy between two memory segment resources, chunk against chunk. */
static int pagoda_copy_vram(struct pagoda_paging_batch *batch, struct ttm_resource *src,
			    struct ttm_resource *dst, u64 size)
{
	unsigned int src_seg = pagoda_mem_type_segment(src->mem_type);
	unsigned int dst_seg = pagoda_mem_type_segment(dst->mem_type);
	struct pagoda_vram_cursor s, d;
	int ret;

	pagoda_vram_cursor_first(src, 0, size, &s);
	pagoda_vram_cursor_first(dst, 0, size, &d);
	while (s.size && d.size) {
		u64 n = min(s.size, d.size);

		ret = pagoda_paging_copy(batch, PAGODA_PADDR(src_seg, s.seg_offset),
					 PAGODA_PADDR(dst_seg, d.seg_offset), n);
		if (ret)
			return ret;
		vram_cursor_advance(&s, n);
		vram_cursor_advance(&d, n);
	}
	return 0;
}

/* Queue the copy (or clear) that gives @new_mem the allocation's contents. */
static int pagoda_move_data(struct pagoda_paging_batch *batch, struct ttm_buffer_object *bo,
			    struct ttm_resource *old_mem, bool old_has_data,
			    struct ttm_resource *new_mem)
{
	u32 new_type = new_mem->mem_type;

	if (!old_has_data)
		return mem_type_is_vram(new_type) ?
		       pagoda_clear(batch, new_mem, bo->base.size) : 0;
	if (mem_type_has_pages(old_mem->mem_type))
		return mem_type_is_vram(new_type) ?
		       pagoda_copy_system(batch, bo->ttm, new_mem, bo->base.size, false) : 0;
	if (mem_type_has_pages(new_type))
		return pagoda_copy_system(batch, bo->ttm, old_mem, bo->base.size, true);
	return pagoda_copy_vram(batch, old_mem, new_mem, bo->base.size);
}

/*
 * The paging work of a move: the data, then the aperture range of the old
 * place unmapped and that of the new one mapped.
 */
static int pagoda_move_batch(struct pagoda_paging_batch *batch, struct ttm_buffer_object *bo,
			     struct ttm_resource *old_mem, bool old_has_data,
			     struct ttm_resource *new_mem)
{
	int ret;

	ret = pagoda_move_data(batch, bo, old_mem, old_has_data, new_mem);
	if (!ret && old_mem && old_mem->mem_type == TTM_PL_TT)
		ret = pagoda_gart_unbind(batch, old_mem);
	if (!ret && new_mem->mem_type == TTM_PL_TT)
		ret = pagoda_gart_bind(batch, new_mem, container_of(bo->ttm, struct pagoda_tt, tt));
	return ret;
}

/*
 * Zero the system pages of an allocation (its backing store) with the
 * paging engine, a FILL per physically contiguous run; users wait for it
 * as a kernel fence.
 */
static int pagoda_clear_pages(struct pagoda_device *pgdev, struct ttm_buffer_object *bo)
{
	struct pagoda_tt *ptt = container_of(bo->ttm, struct pagoda_tt, tt);
	struct pagoda_paging_batch batch;
	struct dma_fence *fence;
	pgoff_t i, n;
	int ret = 0;

	if (!ptt->mapped)
		return -ENODEV;
	pagoda_paging_batch_init(&batch, pgdev);
	/* the runs mapped for the device at populate are contiguous for it too */
	for (i = 0; i < ptt->tt.num_pages && !ret; i += n) {
		n = pagoda_tt_run(&ptt->tt, i);
		ret = pagoda_paging_fill(&batch, PAGODA_PADDR(PAGODA_SEG_SYSTEM, ptt->dma[i]),
					 n << PAGE_SHIFT, 0);
	}
	fence = pagoda_paging_batch_finish(&batch, ret);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	dma_resv_add_fence(bo->base.resv, fence, DMA_RESV_USAGE_KERNEL);
	dma_fence_put(fence);
	return 0;
}

/*
 * Evict a DONTNEED allocation without copying: once the work using it is
 * done its memory goes, and it lands in system memory with its backing
 * pages cleared, or with no pages yet (they come zeroed when touched).
 */
static int pagoda_bo_discard(struct ttm_buffer_object *bo, struct ttm_operation_ctx *ctx,
			     struct ttm_resource *new_mem)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bo->bdev);
	u32 old_type = bo->resource->mem_type;
	int ret;

	ret = ttm_bo_wait_ctx(bo, ctx);
	if (ret)
		return ret;
	if (bo->ttm && ttm_tt_is_populated(bo->ttm)) {
		/* its backing store holds older contents: cleared by the device */
		ret = pagoda_clear_pages(pgdev, bo);
		if (ret)
			return ret;
	} else if (bo->ttm) {
		/*
		 * TTM made the system destination's page array expecting a
		 * copy: its pages must come zeroed, not with what they held.
		 */
		ttm_tt_mark_for_clear(bo->ttm);
	}
	trace_pagoda_bo_move(bo, pagoda_mem_type_segment(old_type),
			     pagoda_mem_type_segment(new_mem->mem_type), 0, true, false);
	pagoda_segment_count_discard(pgdev, old_type);
	pagoda_vm_bo_moved(to_pagoda_bo(bo));
	ttm_bo_move_null(bo, new_mem);
	to_pagoda_bo(bo)->discarded = true;
	WRITE_ONCE(to_pagoda_bo(bo)->segment, pagoda_mem_type_segment(new_mem->mem_type));
	return 0;
}

/*
 * Wait for the work of other engines than the paging engine (whose jobs
 * run in order, so later paging work needs no wait): the render jobs using
 * the allocation.
 */
static int pagoda_bo_wait_jobs(struct ttm_buffer_object *bo, struct ttm_operation_ctx *ctx)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bo->bdev);
	u64 paging = pgdev->engine[PAGODA_ENGINE_PAGING].fence_context;
	struct dma_resv_iter cursor;
	struct dma_fence *fence;
	long ret;

	dma_resv_for_each_fence(&cursor, bo->base.resv, DMA_RESV_USAGE_BOOKKEEP, fence) {
		if (fence->context == paging)
			continue;
		if (ctx->no_wait_gpu) {
			if (!dma_fence_is_signaled(fence))
				return -EBUSY;
			continue;
		}
		ret = dma_fence_wait_timeout(fence, ctx->interruptible, 15 * HZ);
		if (ret < 0)
			return ret;
		if (!ret)
			return -EBUSY;
	}
	return 0;
}

static int pagoda_bo_move(struct ttm_buffer_object *bo, bool evict,
			  struct ttm_operation_ctx *ctx, struct ttm_resource *new_mem,
			  struct ttm_place *hop)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bo->bdev);
	struct ttm_resource *old_mem = bo->resource;
	u32 old_type = old_mem ? old_mem->mem_type : TTM_PL_SYSTEM;
	/* system pages TTM swapped out under memory pressure hold data too */
	bool old_has_data = old_mem && (mem_type_is_vram(old_type) ||
					(bo->ttm && (ttm_tt_is_populated(bo->ttm) ||
						     bo->ttm->page_flags & TTM_TT_FLAG_SWAPPED)));
	struct pagoda_paging_batch batch;
	struct dma_fence *fence;
	int ret;

	evict |= to_pagoda_bo(bo)->evicting;
	/* TTM zapped its CPU mappings: the slots showing its old place go */
	if (old_type == PAGODA_PL_HIDDEN)
		pagoda_host_aperture_release_bo(pgdev, to_pagoda_bo(bo));

	/* GPU jobs may read and write it until they are done */
	if (old_mem) {
		ret = pagoda_bo_wait_jobs(bo, ctx);
		if (ret)
			return ret;
	}

	if (evict && mem_type_is_vram(old_type) &&
	    to_pagoda_bo(bo)->madv == DRM_PAGODA_MADV_DONTNEED)
		return pagoda_bo_discard(bo, ctx, new_mem);

	if (old_type == TTM_PL_SYSTEM && new_mem->mem_type == TTM_PL_SYSTEM) {
		/* system pages come zeroed from the pool */
		ttm_bo_move_null(bo, new_mem);
		WRITE_ONCE(to_pagoda_bo(bo)->segment, PAGODA_SEG_SYSTEM);
		return 0;
	}

	/*
	 * TTM populates the pages of a system memory destination only when it
	 * is first touched, and swaps a source's out when memory is short: a
	 * copy needs them now (populating swaps them back in).
	 */
	if (old_has_data && (mem_type_has_pages(old_type) ||
			     new_mem->mem_type == TTM_PL_SYSTEM)) {
		ret = ttm_tt_populate(bo->bdev, bo->ttm, ctx);
		if (ret)
			return ret;
	}

	pagoda_paging_batch_init(&batch, pgdev);
	ret = pagoda_move_batch(&batch, bo, old_mem, old_has_data, new_mem);
	fence = pagoda_paging_batch_finish(&batch, ret);
	/* on error nothing changed: the allocation stays where it was */
	if (IS_ERR(fence))
		return PTR_ERR(fence);

	trace_pagoda_bo_move(bo, pagoda_mem_type_segment(old_type),
			     pagoda_mem_type_segment(new_mem->mem_type), bo->base.size, evict,
			     !old_has_data);
	/* its mappings are rewritten before the next job of each space */
	pagoda_vm_bo_moved(to_pagoda_bo(bo));
	pagoda_segment_count_move(pgdev, old_has_data ? old_type : new_mem->mem_type,
				  evict, bo->base.size);
	WRITE_ONCE(to_pagoda_bo(bo)->segment, pagoda_mem_type_segment(new_mem->mem_type));
	if (!old_mem || (mem_type_has_pages(old_type) && mem_type_is_vram(new_mem->mem_type))) {
		/*
		 * A new allocation, or one going into a memory segment from
		 * its pages: nothing to release behind the work, whose fence
		 * users (and CPU faults) wait for as a kernel fence. The pages
		 * stay as the allocation's backing store (the model reserves
		 * system memory for eviction), so that evicting it again
		 * neither allocates nor clears pages; an aperture range goes
		 * at once, its unmap being queued before any later map of it.
		 */
		dma_resv_add_fence(bo->base.resv, fence, DMA_RESV_USAGE_KERNEL);
		ttm_bo_move_null(bo, new_mem);
		ret = 0;
	} else {
		ret = ttm_bo_move_accel_cleanup(bo, fence, evict, true, new_mem);
	}
	dma_fence_put(fence);
	/* page tables in it have new addresses */
	if (!ret && to_pagoda_bo(bo)->pt_chunk)
		pagoda_pt_chunk_moved(to_pagoda_bo(bo)->pt_chunk);
	return ret;
}

/*
 * An allocation's memory is freed (not that of one of TTM's ghost objects,
 * which only hold a resource already unmapped by its move): its aperture
 * range is unmapped, its host aperture slots released.
 */
static void pagoda_delete_mem_notify(struct ttm_buffer_object *bo)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bo->bdev);

	if (!pagoda_ttm_bo_is_pagoda(bo) || !bo->resource)
		return;
	if (bo->resource->mem_type == TTM_PL_TT)
		pagoda_gart_unbind_now(pgdev, bo->resource);
	else if (bo->resource->mem_type == PAGODA_PL_HIDDEN)
		pagoda_host_aperture_release_bo(pgdev, to_pagoda_bo(bo));
}

static int pagoda_io_mem_reserve(struct ttm_device *bdev, struct ttm_resource *mem)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bdev);

	switch (mem->mem_type) {
	case TTM_PL_SYSTEM:
	case TTM_PL_TT:
		return 0;
	case TTM_PL_VRAM:
		mem->bus.offset = pgdev->vram->start + ((u64)mem->start << PAGE_SHIFT);
		mem->bus.is_iomem = true;
		mem->bus.caching = ttm_write_combined;
		return 0;
	default:
		/* hidden VRAM: only through the host aperture */
		return -EINVAL;
	}
}

static unsigned long pagoda_io_mem_pfn(struct ttm_buffer_object *bo, unsigned long page_offset)
{
	struct pagoda_device *pgdev = bdev_to_pagoda_device(bo->bdev);
	u64 offset = pagoda_vram_res_offset(bo->resource, (u64)page_offset << PAGE_SHIFT);

	return (pgdev->vram->start + offset) >> PAGE_SHIFT;
}

/*
 * TTM swaps an allocation's system pages out: its mappings name them, or,
 * for page tables, their parents' entries do.
 */
static void pagoda_swap_notify(struct ttm_buffer_object *bo)
{
	if (!pagoda_ttm_bo_is_pagoda(bo))
		return;
	if (to_pagoda_bo(bo)->pt_chunk)
		pagoda_pt_chunk_swapped(to_pagoda_bo(bo)->pt_chunk);
	else
		pagoda_vm_bo_moved(to_pagoda_bo(bo));
}

static const struct ttm_device_funcs pagoda_ttm_funcs = {
	.ttm_tt_create = pagoda_ttm_tt_create,
	.ttm_tt_populate = pagoda_ttm_tt_populate,
	.ttm_tt_unpopulate = pagoda_ttm_tt_unpopulate,
	.ttm_tt_destroy = pagoda_ttm_tt_destroy,
	.eviction_valuable = pagoda_eviction_valuable,
	.evict_flags = pagoda_evict_flags,
	.move = pagoda_bo_move,
	.delete_mem_notify = pagoda_delete_mem_notify,
	.swap_notify = pagoda_swap_notify,
	.io_mem_reserve = pagoda_io_mem_reserve,
	.io_mem_pfn = pagoda_io_mem_pfn,
};

/**
 * pagoda_segment_count_move - account a move in its segment's counters
 * @pgdev: the device
 * @mem_type: memory type the data left (or, for a clear, was written to)
 * @evict: the move was an eviction
 * @bytes: bytes moved
 */
void pagoda_segment_count_move(struct pagoda_device *pgdev, u32 mem_type, bool evict, u64 bytes)
{
	if (mem_type_is_vram(mem_type))
		pagoda_vram_mgr_count_move(&pgdev->vram_mgr[pagoda_mem_type_segment(mem_type)],
					   bytes, evict);
}

/**
 * pagoda_segment_count_discard - account a discarded allocation
 * @pgdev: the device
 * @mem_type: memory type it was discarded from
 */
void pagoda_segment_count_discard(struct pagoda_device *pgdev, u32 mem_type)
{
	if (mem_type_is_vram(mem_type))
		pagoda_vram_mgr_count_discard(&pgdev->vram_mgr[pagoda_mem_type_segment(mem_type)]);
}

/**
 * pagoda_ttm_init - set up TTM over the segments
 * @pgdev: device with its segments read and the paging engine started
 *
 * Sets up the aperture segment too (pagoda_gart.c).
 *
 * Return: 0 or a negative errno; on error nothing is left set up.
 */
int pagoda_ttm_init(struct pagoda_device *pgdev)
{
	struct drm_device *drm = pgdev->drm;
	struct pagoda_segment *vram, *hidden;
	int ret;

	vram = &pgdev->segs[PAGODA_SEG_VRAM];
	hidden = &pgdev->segs[PAGODA_SEG_VRAM_HIDDEN];

	/* one TTM device a GPU; the link's GEM objects share mmap offsets */
	ret = ttm_device_init(&pgdev->bdev, &pagoda_ttm_funcs, &pgdev->pdev->dev,
			      drm->anon_inode->i_mapping, drm->vma_offset_manager,
			      false, false);
	if (ret)
		return ret;
	ret = pagoda_vram_mgr_init(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM],
				   TTM_PL_VRAM, vram->size, vram->page_size);
	if (ret)
		goto err_device;
	ret = pagoda_vram_mgr_init(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM_HIDDEN],
				   PAGODA_PL_HIDDEN, hidden->size, hidden->page_size);
	if (ret)
		goto err_vram;
	ret = pagoda_gart_init(pgdev);
	if (ret)
		goto err_hidden;
	drm_info(drm, "segments: VRAM %llu MiB, hidden VRAM %llu MiB, %u KiB pages; aperture %llu MiB\n",
		 vram->size >> 20, hidden->size >> 20, vram->page_size >> 10,
		 pgdev->segs[PAGODA_SEG_APERTURE].size >> 20);
	return 0;

err_hidden:
	pagoda_vram_mgr_fini(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM_HIDDEN]);
err_vram:
	pagoda_vram_mgr_fini(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM]);
err_device:
	ttm_device_fini(&pgdev->bdev);
	return ret;
}

/**
 * pagoda_ttm_fini - evict everything and tear TTM down
 * @pgdev: device whose buffer objects are all freed
 */
void pagoda_ttm_fini(struct pagoda_device *pgdev)
{
	pagoda_gart_fini(pgdev);
	pagoda_vram_mgr_fini(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM_HIDDEN]);
	pagoda_vram_mgr_fini(&pgdev->bdev, &pgdev->vram_mgr[PAGODA_SEG_VRAM]);
	ttm_device_fini(&pgdev->bdev);
}
