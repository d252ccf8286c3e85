// SPDX-License-Identifier: GPL-2.0-only
/**
 * DOC: Pagoda memory segment manager
 *
 * The device's memory segments, PAGODA_SEG_VRAM and PAGODA_SEG_VRAM_HIDDEN,
 * are handed out to buffer objects through TTM. Each gets a struct
 * pagoda_vram_mgr: a TTM resource manager whose space is tracked by a
 * drm_buddy allocator over the segment's bytes. A resource, struct
 * pagoda_vram_resource, is the list of buddy blocks backing it. Offsets
 * here are byte offsets within the segment, the offset half of a
 * PAGODA_PADDR().
 *
 * Granule: the buddy allocator's chunk size is the segment page size
 * (4 KiB or 64 KiB), or PAGE_SIZE where that is larger, so every block is
 * a whole number of segment pages and aligned to one. A BO's size is
 * rounded up to the granule. The padding belongs to the resource (cursors
 * may walk it) but is not part of ttm_resource.size, which TTM sets to the
 * BO size. A BO's page_alignment larger than the granule becomes the
 * minimum block size, which aligns every block, and with it the start of
 * the resource, to it.
 *
 * Placement: fpfn and lpfn count PAGE_SIZE pages, as everywhere in TTM;
 * lpfn 0 means the end of the segment. They are turned into a byte range
 * and shrunk to whole granules (fpfn rounded up, lpfn down), so blocks
 * never leave the requested range. TTM_PL_FLAG_TOPDOWN takes the highest
 * free blocks. TTM_PL_FLAG_CONTIGUOUS asks drm_buddy for one contiguous
 * range (DRM_BUDDY_CONTIGUOUS_ALLOCATION): a naturally aligned block of
 * the size rounded up to a power of two, trimmed back to the size; without
 * a range limit drm_buddy falls back to joining neighbouring blocks when
 * no such block is free. A range exactly as large as the BO is allocated
 * as precisely that range. A resource that turns out contiguous without
 * asking is flagged TTM_PL_FLAG_CONTIGUOUS too, so a later contiguous
 * placement finds it compatible.
 *
 * ttm_resource.start: for a contiguous resource, the segment offset of its
 * first byte in PAGE_SIZE pages, from which the driver's io_mem_reserve
 * can compute a bus address. Other resources have no single start and get
 * PAGODA_VRAM_INVALID_START; walk them with struct pagoda_vram_cursor or
 * pagoda_vram_res_offset().
 *
 * Running out: alloc returns -ENOSPC whenever the request does not fit,
 * including requests that can never fit the placement. TTM first tries
 * every placement of the BO without evicting, then again evicting
 * resources that intersect each placement.
 *
 * Accounting: TTM adds every resource's ttm_resource.size to the manager's
 * usage in ttm_resource_init() and takes it off in ttm_resource_fini();
 * alloc gives up early once that exceeds the segment.
 * pagoda_vram_mgr_usage() reports what the buddy allocator really holds,
 * padding included, and the largest free block, for debugfs.
 */

#include <linux/bitops.h>
#include <linux/bug.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/sizes.h>

#include <drm/drm_print.h>
#include <drm/ttm/ttm_bo.h>
#include <drm/ttm/ttm_device.h>
#include <drm/ttm/ttm_placement.h>

#include "pagoda_vram_mgr.h"

/**
 * struct pagoda_vram_request - a TTM placement in drm_buddy terms
 * @start: first byte the blocks may use
 * @end: end of the bytes the blocks may use, exclusive
 * @size: bytes to allocate, a whole number of granules
 * @min_block: minimum block size, a power of two that blocks are aligned to
 * @flags: DRM_BUDDY_*_ALLOCATION flags
 */
struct pagoda_vram_request {
	u64 start;
	u64 end;
	u64 size;
	u64 min_block;
	unsigned long flags;
};

static u64 pagoda_vram_pow2_roundup(u64 n)
{
	return n > 1 ? BIT_ULL(fls64(n - 1)) : 1;
}

/* The bytes of the segment @place allows, in whole granules. */
static void pagoda_vram_place_range(struct drm_buddy *mm,
				    const struct ttm_place *place,
				    u64 *start, u64 *end)
{
	u64 last = mm->size;

	if (place->lpfn)
		last = min_t(u64, last, (u64)place->lpfn << PAGE_SHIFT);

	*start = round_up((u64)place->fpfn << PAGE_SHIFT, mm->chunk_size);
	*end = round_down(last, mm->chunk_size);
}

static u64 pagoda_vram_min_block(struct drm_buddy *mm,
				 const struct ttm_buffer_object *tbo)
{
	u64 align = (u64)tbo->page_alignment << PAGE_SHIFT;

	return max(mm->chunk_size, pagoda_vram_pow2_roundup(align));
}

/*
 * The range is exactly as large as the request: drm_buddy allocates
 * precisely that range, contiguous by construction, if its start has the
 * alignment the BO wants.
 */
static int pagoda_vram_request_exact(struct drm_buddy *mm,
				     struct pagoda_vram_request *req)
{
	if (!IS_ALIGNED(req->start, req->min_block))
		return -ENOSPC;

	req->min_block = mm->chunk_size;
	return 0;
}

static int pagoda_vram_request_init(struct pagoda_vram_mgr *mgr,
				    const struct ttm_buffer_object *tbo,
				    const struct ttm_place *place,
				    struct pagoda_vram_request *req)
{
	struct drm_buddy *mm = &mgr->mm;
	u64 span;

	pagoda_vram_place_range(mm, place, &req->start, &req->end);
	req->size = round_up((u64)tbo->base.size, mm->chunk_size);
	req->min_block = pagoda_vram_min_block(mm, tbo);
	req->flags = 0;

	if (req->start >= req->end || req->size > req->end - req->start)
		return -ENOSPC;

	if (req->start || req->end != mm->size)
		req->flags |= DRM_BUDDY_RANGE_ALLOCATION;
	if (place->flags & TTM_PL_FLAG_TOPDOWN)
		req->flags |= DRM_BUDDY_TOPDOWN_ALLOCATION;

	if (req->start + req->size == req->end)
		return pagoda_vram_request_exact(mm, req);

	/* A request of at most one minimum block gets a single block. */
	span = round_up(req->size, req->min_block);
	if (place->flags & TTM_PL_FLAG_CONTIGUOUS && req->size > req->min_block) {
		req->flags |= DRM_BUDDY_CONTIGUOUS_ALLOCATION;
		span = pagoda_vram_pow2_roundup(req->size);
		/* Without a range, drm_buddy can join smaller blocks instead. */
		if (!(req->flags & DRM_BUDDY_RANGE_ALLOCATION))
			return 0;
	}

	/* drm_buddy would reject a span beyond the segment with -EINVAL. */
	return span > req->end - req->start ? -ENOSPC : 0;
}

/*
 * drm_buddy trims the block it rounded up back to the requested size, but
 * goes on without trimming if splitting the block fails for lack of
 * memory. Try again so the tail returns to the pool; should that fail
 * too, the resource keeps the tail.
 */
static void pagoda_vram_trim(struct drm_buddy *mm, u64 size,
			     struct list_head *blocks)
{
	struct drm_buddy_block *block;

	if (!list_is_singular(blocks))
		return;

	block = list_first_entry(blocks, struct drm_buddy_block, link);
	if (drm_buddy_block_size(mm, block) > size)
		drm_buddy_block_trim(mm, NULL, size, blocks);
}

static int pagoda_vram_alloc_blocks(struct pagoda_vram_mgr *mgr,
				    const struct pagoda_vram_request *req,
				    struct list_head *blocks)
{
	int err;

	mutex_lock(&mgr->lock);
	err = drm_buddy_alloc_blocks(&mgr->mm, req->start, req->end, req->size,
				     req->min_block, blocks, req->flags);
	if (!err)
		pagoda_vram_trim(&mgr->mm, req->size, blocks);
	mutex_unlock(&mgr->lock);

	return err;
}

static void pagoda_vram_free_blocks(struct pagoda_vram_mgr *mgr,
				    struct list_head *blocks)
{
	mutex_lock(&mgr->lock);
	drm_buddy_free_list(&mgr->mm, blocks, 0);
	mutex_unlock(&mgr->lock);
}

static bool pagoda_vram_blocks_contiguous(struct drm_buddy *mm,
					  struct list_head *blocks)
{
	struct drm_buddy_block *block, *prev = NULL;

	if (list_empty(blocks))
		return false;

	list_for_each_entry(block, blocks, link) {
		if (prev && drm_buddy_block_offset(prev) +
			    drm_buddy_block_size(mm, prev) !=
			    drm_buddy_block_offset(block))
			return false;
		prev = block;
	}

	return true;
}

/* Sets ttm_resource.start and the CONTIGUOUS flag; true if contiguous. */
static bool pagoda_vram_res_set_start(struct pagoda_vram_resource *vres)
{
	struct drm_buddy_block *block;

	if (!pagoda_vram_blocks_contiguous(&vres->mgr->mm, &vres->blocks)) {
		vres->base.start = PAGODA_VRAM_INVALID_START;
		return false;
	}

	block = list_first_entry(&vres->blocks, struct drm_buddy_block, link);
	vres->base.start = drm_buddy_block_offset(block) >> PAGE_SHIFT;
	vres->base.placement |= TTM_PL_FLAG_CONTIGUOUS;
	return true;
}

static int pagoda_vram_mgr_alloc(struct ttm_resource_manager *man,
				 struct ttm_buffer_object *tbo,
				 const struct ttm_place *place,
				 struct ttm_resource **res)
{
	struct pagoda_vram_mgr *mgr = to_pagoda_vram_mgr(man);
	struct pagoda_vram_resource *vres;
	struct pagoda_vram_request req;
	int err;

	vres = kzalloc(sizeof(*vres), GFP_KERNEL);
	if (!vres)
		return -ENOMEM;

	ttm_resource_init(tbo, place, &vres->base);
	INIT_LIST_HEAD(&vres->blocks);
	vres->mgr = mgr;

	if (WARN_ON(!vres->base.size)) {
		err = -EINVAL;
		goto err_fini;
	}

	/* Give up early when the segment is already overcommitted. */
	if (ttm_resource_manager_usage(man) > man->size) {
		err = -ENOSPC;
		goto err_fini;
	}

	err = pagoda_vram_request_init(mgr, tbo, place, &req);
	if (err)
		goto err_fini;

	err = pagoda_vram_alloc_blocks(mgr, &req, &vres->blocks);
	if (err)
		goto err_fini;

	if (!pagoda_vram_res_set_start(vres) &&
	    WARN_ON(place->flags & TTM_PL_FLAG_CONTIGUOUS)) {
		err = -EINVAL;
		goto err_free_blocks;
	}

	*res = &vres->base;
	return 0;

err_free_blocks:
	pagoda_vram_free_blocks(mgr, &vres->blocks);
err_fini:
	ttm_resource_fini(man, &vres->base);
	kfree(vres);
	return err;
}

static void pagoda_vram_mgr_free(struct ttm_resource_manager *man,
				 struct ttm_resource *res)
{
	struct pagoda_vram_resource *vres = to_pagoda_vram_resource(res);

	pagoda_vram_free_blocks(to_pagoda_vram_mgr(man), &vres->blocks);
	ttm_resource_fini(man, res);
	kfree(vres);
}

/*
 * Whether the blocks of @res lie in the range of @place: every one of them
 * (@every), or at least one, overlapping it.
 */
static bool pagoda_vram_blocks_in_place(struct ttm_resource *res, const struct ttm_place *place,
					bool every)
{
	struct pagoda_vram_resource *vres = to_pagoda_vram_resource(res);
	struct drm_buddy *mm = &vres->mgr->mm;
	struct drm_buddy_block *block;
	u64 start, end;

	if (!place->fpfn && !place->lpfn)
		return true;

	pagoda_vram_place_range(mm, place, &start, &end);
	list_for_each_entry(block, &vres->blocks, link) {
		u64 first = drm_buddy_block_offset(block);
		u64 last = first + drm_buddy_block_size(mm, block);

		if (every && (first < start || last > end))
			return false;
		if (!every && first < end && last > start)
			return true;
	}
	return every;
}

static bool pagoda_vram_mgr_intersects(struct ttm_resource_manager *man,
				       struct ttm_resource *res,
				       const struct ttm_place *place,
				       size_t size)
{
	return pagoda_vram_blocks_in_place(res, place, false);
}

static bool pagoda_vram_mgr_compatible(struct ttm_resource_manager *man,
				       struct ttm_resource *res,
				       const struct ttm_place *place,
				       size_t size)
{
	return pagoda_vram_blocks_in_place(res, place, true);
}

/*
 * The block after @block in a pre-order walk of the tree under @root that
 * skips @block's children, or NULL at the end.
 */
static struct drm_buddy_block *
pagoda_vram_tree_next(struct drm_buddy_block *root,
		      struct drm_buddy_block *block)
{
	while (block != root && block == block->parent->right)
		block = block->parent;

	return block == root ? NULL : block->parent->right;
}

/*
 * The size of the largest free block under @root if larger than @best,
 * else @best. Walks through the parent links, without recursion, and
 * skips split blocks whose halves cannot beat the best so far.
 */
static u64 pagoda_vram_tree_largest_free(struct drm_buddy *mm,
					 struct drm_buddy_block *root, u64 best)
{
	struct drm_buddy_block *block = root;

	while (block) {
		u64 size = drm_buddy_block_size(mm, block);

		if (drm_buddy_block_is_split(block) && size / 2 > best) {
			block = block->left;
			continue;
		}
		if (drm_buddy_block_is_free(block))
			best = max(best, size);
		block = pagoda_vram_tree_next(root, block);
	}

	return best;
}

/*
 * drm_buddy keeps no record of its largest free block and has no call
 * that reports it, so walk its block trees, read only, under the lock.
 */
static u64 pagoda_vram_largest_free(struct pagoda_vram_mgr *mgr)
{
	struct drm_buddy *mm = &mgr->mm;
	u64 best = 0;
	unsigned int i;

	lockdep_assert_held(&mgr->lock);

	for (i = 0; i < mm->n_roots; i++)
		best = pagoda_vram_tree_largest_free(mm, mm->roots[i], best);

	return best;
}

static void pagoda_vram_mgr_usage_locked(struct pagoda_vram_mgr *mgr,
					 u64 *size, u64 *used,
					 u64 *largest_free)
{
	lockdep_assert_held(&mgr->lock);

	*size = mgr->mm.size;
	*used = mgr->mm.size - mgr->mm.avail;
	*largest_free = pagoda_vram_largest_free(mgr);
}

static void pagoda_vram_mgr_debug(struct ttm_resource_manager *man,
				  struct drm_printer *printer)
{
	struct pagoda_vram_mgr *mgr = to_pagoda_vram_mgr(man);
	u64 size, used, largest_free;

	mutex_lock(&mgr->lock);
	pagoda_vram_mgr_usage_locked(mgr, &size, &used, &largest_free);
	drm_printf(printer, "  page_size: %llu KiB\n", mgr->page_size >> 10);
	drm_printf(printer, "  size: %llu, used: %llu, largest free: %llu\n",
		   size, used, largest_free);
	drm_printf(printer, "  evictions: %llu (%llu discarded), bytes moved: %llu\n",
		   mgr->evictions, mgr->discards, mgr->bytes_moved);
	drm_buddy_print(&mgr->mm, printer);
	mutex_unlock(&mgr->lock);
}

static const struct ttm_resource_manager_func pagoda_vram_mgr_func = {
	.alloc = pagoda_vram_mgr_alloc,
	.free = pagoda_vram_mgr_free,
	.intersects = pagoda_vram_mgr_intersects,
	.compatible = pagoda_vram_mgr_compatible,
	.debug = pagoda_vram_mgr_debug,
};

/**
 * pagoda_vram_mgr_init() - set up and register the manager of a segment
 * @bdev: TTM device the manager belongs to
 * @mgr: manager to initialise, typically embedded in the device
 * @mem_type: TTM memory type to register it for, below TTM_NUM_MEM_TYPES
 * @size: segment size in bytes; a partial segment page at the end is unused
 * @page_size: segment page size, 4096 or 65536
 *
 * Sets up the buddy allocator over the segment, registers the manager with
 * TTM for @mem_type and enables it for placements.
 *
 * Return: 0 on success, -EINVAL for a bad argument, -EBUSY if @mem_type
 * already has a manager, -ENOMEM if the allocator cannot be set up.
 */
int pagoda_vram_mgr_init(struct ttm_device *bdev, struct pagoda_vram_mgr *mgr,
			 u32 mem_type, u64 size, u64 page_size)
{
	struct ttm_resource_manager *man = &mgr->manager;
	u64 granule = max_t(u64, page_size, PAGE_SIZE);
	int err;

	if (page_size != SZ_4K && page_size != SZ_64K)
		return -EINVAL;
	if (mem_type >= TTM_NUM_MEM_TYPES)
		return -EINVAL;
	if (ttm_manager_type(bdev, mem_type))
		return -EBUSY;

	size = round_down(size, granule);
	if (!size)
		return -EINVAL;

	mgr->mem_type = mem_type;
	mgr->page_size = page_size;
	mgr->evictions = 0;
	mgr->bytes_moved = 0;
	mgr->discards = 0;
	mutex_init(&mgr->lock);

	man->func = &pagoda_vram_mgr_func;
	man->use_tt = false;
	ttm_resource_manager_init(man, bdev, size);

	err = drm_buddy_init(&mgr->mm, size, granule);
	if (err)
		goto err_destroy_lock;

	ttm_set_driver_manager(bdev, mem_type, man);
	ttm_resource_manager_set_used(man, true);
	return 0;

err_destroy_lock:
	mutex_destroy(&mgr->lock);
	return err;
}

static bool pagoda_vram_mgr_idle(struct pagoda_vram_mgr *mgr)
{
	bool idle;

	mutex_lock(&mgr->lock);
	idle = mgr->mm.avail == mgr->mm.size;
	mutex_unlock(&mgr->lock);

	return idle;
}

/**
 * pagoda_vram_mgr_fini() - evict everything and tear the manager down
 * @bdev: TTM device the manager was registered with
 * @mgr: manager set up by pagoda_vram_mgr_init()
 *
 * Stops placements in the segment, evicts every resource in it and
 * unregisters the manager. If eviction fails or resources remain (pinned
 * BOs are not evicted), warns and leaves the manager registered, disabled,
 * with its allocator intact, so the remaining resources can still be
 * freed; the caller must then keep @mgr alive.
 *
 * Context: process context, no BO reservation held.
 */
void pagoda_vram_mgr_fini(struct ttm_device *bdev, struct pagoda_vram_mgr *mgr)
{
	struct ttm_resource_manager *man = &mgr->manager;

	/*
	 * Disable placements here first, so eviction cannot move a BO back
	 * in. Not ttm_resource_manager_set_used(): it warns about resources
	 * on the LRU, which are expected here and evicted next.
	 */
	man->use_type = false;

	if (WARN_ON(ttm_resource_manager_evict_all(bdev, man)))
		return;
	if (WARN_ON(!pagoda_vram_mgr_idle(mgr)))
		return;

	drm_buddy_fini(&mgr->mm);
	ttm_resource_manager_cleanup(man);
	ttm_set_driver_manager(bdev, mgr->mem_type, NULL);
	mutex_destroy(&mgr->lock);
}

/*
 * The block of @vres holding byte *@offset of the resource, with *@offset
 * turned into an offset within that block; NULL past the last block.
 */
static struct drm_buddy_block *
pagoda_vram_res_seek(struct pagoda_vram_resource *vres, u64 *offset)
{
	struct drm_buddy *mm = &vres->mgr->mm;
	struct drm_buddy_block *block;

	list_for_each_entry(block, &vres->blocks, link) {
		u64 size = drm_buddy_block_size(mm, block);

		if (*offset < size)
			return block;
		*offset -= size;
	}

	return NULL;
}

/**
 * pagoda_vram_res_offset() - segment offset of a byte of a resource
 * @res: resource allocated by a struct pagoda_vram_mgr
 * @offset: byte offset within the resource
 *
 * Walks the resource's blocks, so it costs a step per block before the
 * one holding @offset; use struct pagoda_vram_cursor to walk a range.
 * @offset may reach into the padding up to the next segment page.
 *
 * Context: the caller keeps @res alive, typically by holding the BO's
 * reservation; no lock needed.
 *
 * Return: the byte offset within the segment, or U64_MAX (with a warning)
 * if @offset is past the end of the resource.
 */
u64 pagoda_vram_res_offset(struct ttm_resource *res, u64 offset)
{
	struct drm_buddy_block *block;

	block = pagoda_vram_res_seek(to_pagoda_vram_resource(res), &offset);
	if (WARN_ON(!block))
		return U64_MAX;

	return drm_buddy_block_offset(block) + offset;
}

/*
 * Make the chunk that starts at cur->seg_offset in @block the current one,
 * extending it over the following blocks while they are adjacent in the
 * segment and bytes remain.
 */
static void pagoda_vram_cursor_fill(struct pagoda_vram_cursor *cur,
				    struct drm_buddy_block *block)
{
	u64 end = drm_buddy_block_offset(block) +
		  drm_buddy_block_size(cur->mm, block);

	while (end - cur->seg_offset < cur->remaining &&
	       !list_is_last(&block->link, cur->head)) {
		struct drm_buddy_block *next = list_next_entry(block, link);

		if (drm_buddy_block_offset(next) != end)
			break;
		block = next;
		end += drm_buddy_block_size(cur->mm, block);
	}

	cur->block = block;
	cur->size = min(end - cur->seg_offset, cur->remaining);
}

/**
 * pagoda_vram_cursor_first() - start walking a range of a resource
 * @res: resource allocated by a struct pagoda_vram_mgr
 * @start: byte offset within the resource of the first byte to walk
 * @size: bytes to walk
 * @cur: cursor to initialise
 *
 * Positions @cur on the first physically contiguous chunk of the range:
 * @cur->seg_offset and @cur->size describe it, @cur->remaining counts the
 * bytes left including it. A chunk ends where the resource's next block is
 * not adjacent in the segment or where the range ends. The range may reach
 * into the padding up to the next segment page; past that, or for a @size
 * of 0, the walk is empty (@cur->size is 0), with a warning in the former
 * case.
 *
 * Context: the caller keeps @res alive for as long as it uses @cur,
 * typically by holding the BO's reservation; no lock needed.
 */
void pagoda_vram_cursor_first(struct ttm_resource *res, u64 start, u64 size,
			      struct pagoda_vram_cursor *cur)
{
	struct pagoda_vram_resource *vres = to_pagoda_vram_resource(res);
	u64 limit = round_up((u64)res->size, vres->mgr->mm.chunk_size);
	struct drm_buddy_block *block;

	cur->mm = &vres->mgr->mm;
	cur->head = &vres->blocks;
	cur->seg_offset = 0;
	cur->size = 0;
	cur->remaining = 0;
	cur->block = NULL;

	if (!size || WARN_ON(size > limit || start > limit - size))
		return;

	block = pagoda_vram_res_seek(vres, &start);
	if (WARN_ON(!block))
		return;

	cur->seg_offset = drm_buddy_block_offset(block) + start;
	cur->remaining = size;
	pagoda_vram_cursor_fill(cur, block);
}

/**
 * pagoda_vram_cursor_next() - move a cursor to the next chunk
 * @cur: cursor set up by pagoda_vram_cursor_first()
 *
 * Makes the chunk after the current one current. Once the range is
 * walked, @cur->size and @cur->remaining are 0; calling it again then does
 * nothing.
 *
 * Context: as for pagoda_vram_cursor_first().
 */
void pagoda_vram_cursor_next(struct pagoda_vram_cursor *cur)
{
	struct drm_buddy_block *block;

	cur->remaining -= cur->size;
	cur->size = 0;
	if (!cur->remaining)
		return;

	/* A chunk short of the remaining bytes ends with its last block. */
	if (WARN_ON(list_is_last(&cur->block->link, cur->head))) {
		cur->remaining = 0;
		return;
	}

	block = list_next_entry(cur->block, link);
	cur->seg_offset = drm_buddy_block_offset(block);
	pagoda_vram_cursor_fill(cur, block);
}

/**
 * pagoda_vram_res_is_contiguous() - whether a resource is one segment range
 * @res: resource allocated by a struct pagoda_vram_mgr
 *
 * Context: the caller keeps @res alive; no lock needed.
 *
 * Return: true if the blocks of @res follow each other without a gap in
 * the segment, in which case @res->start is its first page.
 */
bool pagoda_vram_res_is_contiguous(struct ttm_resource *res)
{
	struct pagoda_vram_resource *vres = to_pagoda_vram_resource(res);

	return pagoda_vram_blocks_contiguous(&vres->mgr->mm, &vres->blocks);
}

/**
 * pagoda_vram_mgr_count_move() - account a move into or out of the segment
 * @mgr: manager of the segment
 * @bytes: bytes moved
 * @eviction: whether the move evicts a resource from the segment
 *
 * Adds @bytes to @mgr->bytes_moved and, for an eviction, one to
 * @mgr->evictions, under @mgr->lock.
 *
 * Context: process context; takes @mgr->lock.
 */
void pagoda_vram_mgr_count_move(struct pagoda_vram_mgr *mgr, u64 bytes,
				bool eviction)
{
	mutex_lock(&mgr->lock);
	mgr->bytes_moved += bytes;
	if (eviction)
		mgr->evictions++;
	mutex_unlock(&mgr->lock);
}

/**
 * pagoda_vram_mgr_count_discard() - account a resource discarded from the segment
 * @mgr: manager of the segment
 *
 * Context: process context; takes @mgr->lock.
 */
void pagoda_vram_mgr_count_discard(struct pagoda_vram_mgr *mgr)
{
	mutex_lock(&mgr->lock);
	mgr->evictions++;
	mgr->discards++;
	mutex_unlock(&mgr->lock);
}

/**
 * pagoda_vram_mgr_usage() - report how full the segment is
 * @mgr: manager of the segment
 * @size: returns the bytes the manager hands out
 * @used: returns the bytes held by resources, padding included
 * @largest_free: returns the size of the largest free block; a contiguous
 *	allocation of up to that size succeeds without eviction
 *
 * Walks the allocator's block trees for @largest_free, so it is meant for
 * debugfs rather than hot paths.
 *
 * Context: process context; takes @mgr->lock.
 */
void pagoda_vram_mgr_usage(struct pagoda_vram_mgr *mgr, u64 *size, u64 *used,
			   u64 *largest_free)
{
	mutex_lock(&mgr->lock);
	pagoda_vram_mgr_usage_locked(mgr, size, used, largest_free);
	mutex_unlock(&mgr->lock);
}
