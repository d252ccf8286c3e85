/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda memory segment (VRAM) manager: a TTM resource manager over
 * drm_buddy. See the DOC section in pagoda_vram_mgr.c.
 */
#ifndef PAGODA_VRAM_MGR_H
#define PAGODA_VRAM_MGR_H

#include <linux/limits.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include <drm/drm_buddy.h>
#include <drm/ttm/ttm_resource.h>

struct ttm_device;

/*
 * ttm_resource.start of a resource whose blocks are not physically
 * contiguous: it has no single start, walk it with struct pagoda_vram_cursor.
 */
#define PAGODA_VRAM_INVALID_START	LONG_MAX

/**
 * struct pagoda_vram_mgr - TTM resource manager of one memory segment
 * @evictions: resources evicted from the segment, under @lock
 * @bytes_moved: bytes moved into or out of the segment, under @lock
 * @discards: resources evicted without copying (not needed), under @lock
 *
 * The driver updates @evictions and @bytes_moved through
 * pagoda_vram_mgr_count_move(), @discards through
 * pagoda_vram_mgr_count_discard().
 */
struct pagoda_vram_mgr {
	/** @manager: the TTM manager, registered for @mem_type */
	struct ttm_resource_manager manager;
	/** @mm: buddy allocator over the segment's bytes */
	struct drm_buddy mm;
	/**
	 * @lock: protects @mm (every drm_buddy call and every read of its
	 * counters), @evictions, @bytes_moved and @discards. A leaf lock: it is taken
	 * with BO reservations and TTM's eviction walk held, and nothing is
	 * taken under it; the only thing under it that may sleep is
	 * drm_buddy's GFP_KERNEL allocation of block structures. TTM keeps
	 * its usage counter under the device's lru_lock, never taken with
	 * @lock held. A resource's block list needs no lock, see struct
	 * pagoda_vram_resource.
	 */
	struct mutex lock;
	/**
	 * @page_size: segment page size, 4096 or 65536. Every allocation is
	 * aligned and sized to it, or to PAGE_SIZE if that is larger.
	 */
	u64 page_size;
	u64 evictions, bytes_moved, discards;
	/** @mem_type: TTM memory type the manager is registered for */
	u32 mem_type;
};

/**
 * struct pagoda_vram_resource - TTM resource allocated from a segment
 */
struct pagoda_vram_resource {
	/**
	 * @base: the TTM resource. @base.size is the BO size; the blocks
	 * may exceed it by less than a segment page.
	 */
	struct ttm_resource base;
	/**
	 * @blocks: the drm_buddy blocks, in the order they back the
	 * resource's bytes. Written only when the resource is allocated and
	 * freed, so walking it needs no lock, only a reference that keeps
	 * the resource alive (typically the BO's reservation).
	 */
	struct list_head blocks;
	/** @mgr: the manager @blocks come from */
	struct pagoda_vram_mgr *mgr;
};

/**
 * struct pagoda_vram_cursor - walk a resource in physically contiguous chunks
 * @seg_offset: segment byte offset of the current chunk
 * @size: length of the current chunk in bytes; 0 once the walk is done
 * @remaining: bytes left to walk, the current chunk included
 *
 * Initialised by pagoda_vram_cursor_first() and advanced by
 * pagoda_vram_cursor_next(). A chunk spans as many consecutive blocks as
 * are adjacent in the segment.
 */
struct pagoda_vram_cursor {
	u64 seg_offset;
	u64 size;
	u64 remaining;
	/* private: */
	struct drm_buddy *mm;
	struct list_head *head;
	struct drm_buddy_block *block;
};

static inline struct pagoda_vram_mgr *
to_pagoda_vram_mgr(struct ttm_resource_manager *man)
{
	return container_of(man, struct pagoda_vram_mgr, manager);
}

static inline struct pagoda_vram_resource *
to_pagoda_vram_resource(struct ttm_resource *res)
{
	return container_of(res, struct pagoda_vram_resource, base);
}

int pagoda_vram_mgr_init(struct ttm_device *bdev, struct pagoda_vram_mgr *mgr,
			 u32 mem_type, u64 size, u64 page_size);
void pagoda_vram_mgr_fini(struct ttm_device *bdev, struct pagoda_vram_mgr *mgr);

u64 pagoda_vram_res_offset(struct ttm_resource *res, u64 offset);
void pagoda_vram_cursor_first(struct ttm_resource *res, u64 start, u64 size,
			      struct pagoda_vram_cursor *cur);
void pagoda_vram_cursor_next(struct pagoda_vram_cursor *cur);
bool pagoda_vram_res_is_contiguous(struct ttm_resource *res);

void pagoda_vram_mgr_count_discard(struct pagoda_vram_mgr *mgr);
void pagoda_vram_mgr_count_move(struct pagoda_vram_mgr *mgr, u64 bytes,
				bool eviction);
void pagoda_vram_mgr_usage(struct pagoda_vram_mgr *mgr, u64 *size, u64 *used,
			   u64 *largest_free);

#endif /* PAGODA_VRAM_MGR_H */
