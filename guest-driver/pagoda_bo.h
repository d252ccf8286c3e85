/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda allocations (buffer objects). See the DOC block of pagoda_bo.c.
 */
#ifndef PAGODA_BO_H
#define PAGODA_BO_H

#include <linux/xarray.h>

#include <drm/ttm/ttm_bo.h>
#include <drm/ttm/ttm_placement.h>
#include <drm/ttm/ttm_tt.h>

#include <pagoda/pagoda_hw.h>

#include "pagoda_vram_mgr.h"

struct pagoda_pt_chunk;

/**
 * struct pagoda_bo - one allocation of the model
 * @tbo: the TTM buffer object; its GEM object is the user's handle
 * @flags: DRM_PAGODA_BO_* given at creation
 * @segments: mask of the segments it may live in
 * @places: its placements, the preferred segment first
 * @at_places: or, while it should be at one place (pagoda_bo_prefer_at()),
 *	that range first and @places after it as fallbacks
 * @placement: @places or @at_places as TTM takes them; under the
 *	reservation
 * @eviction_placement: where eviction sends it: the eviction segment,
 *	then system memory as the fallback (the aperture first for a
 *	physically accessed allocation, then plain system pages)
 * @num_eviction_places: entries of @eviction_placement
 * @priority: DRM_PAGODA_PRIORITY_* given at creation; the TTM priority is
 *	one more, or 0 while @madv is DONTNEED (evicted first)
 * @evicting: pagoda_bo_evict() is moving it, under the reservation
 * @madv: DRM_PAGODA_MADV_*, written with the reservation held
 * @discarded: its contents were discarded while DONTNEED; written with the
 *	reservation held, cleared by WILLNEED
 * @segment: the segment it is in, written with the reservation held by
 *	each move, read without it (READ_ONCE) for fdinfo
 * @link: in &pagoda_link.bo_list, under &pagoda_link.bo_list_lock
 * @pt_chunk: for an allocation of page tables, its chunk (set once)
 * @resv_owner: the object whose reservation it shares
 *	(pagoda_bo_create_shared()), referenced until it is destroyed; set once
 * @gpuva_lock: protects the GEM object's list of address-space links
 *	(drm_gem_gpuva_set_lock()); innermost, see pagoda_vm.c
 * @phys_last_use: &pagoda_device.phys_clock when a physical-mode
 *	submission last paged it in, under its reservation (read without it
 *	to order victims, pagoda_phys.c)
 * @instances: a LinkInstanced or LinkMirrored allocation's instance on
 *	each GPU of the link, by position: [0] is itself (the user's object),
 *	the others the driver's, sharing its reservation, referenced by it
 * @num_instances: entries of @instances; 0 for an allocation of one GPU
 * @primary: for another GPU's instance, the first GPU's (not referenced:
 *	it holds this one)
 * @host_aperture_slots: while in hidden VRAM, the host aperture slot
 *	showing each page the CPU touched (page index, in segment pages, to
 *	xa_mk_value(slot)); under &pagoda_host_aperture.lock
 *
 * Everything else but @tbo is set at creation and read-only afterwards.
 */
struct pagoda_bo {
	struct ttm_buffer_object tbo;
	u32 priority;
	bool evicting;
	u32 madv;
	bool discarded;
	u32 segment;
	struct list_head link;
	struct pagoda_pt_chunk *pt_chunk;
	struct drm_gem_object *resv_owner;
	struct mutex gpuva_lock; /* see @gpuva_lock above */
	u64 phys_last_use;
	struct xarray host_aperture_slots;
	struct pagoda_bo *instances[PAGODA_LINK_MAX_ADAPTERS];
	u32 num_instances;
	struct pagoda_bo *primary;
	u32 flags;
	u32 segments;
	struct ttm_place places[PAGODA_NUM_SEGMENTS];
	struct ttm_place at_places[PAGODA_NUM_SEGMENTS + 1];
	struct ttm_placement placement;
	struct ttm_place eviction_placement[3];
	u32 num_eviction_places;
};

/**
 * struct pagoda_tt - the system pages of an allocation
 * @tt: TTM's page array
 * @dma: the pages' bus addresses for the device (segment 0 offsets)
 * @mapped: @dma is valid; cleared when the pages are unmapped, at
 *	unpopulate or when the device is unplugged
 *
 * Written with the allocation's reservation held.
 */
struct pagoda_tt {
	struct ttm_tt tt;
	dma_addr_t *dma;
	bool mapped;
};

/**
 * struct pagoda_bo_run - walk an allocation's memory in physically
 *	contiguous runs, as the device addresses them
 * @paddr: PAGODA_PADDR() of the current run
 * @bytes: its length; 0 once the walk is over
 *
 * Initialised by pagoda_bo_run_first(), advanced by pagoda_bo_run_next(),
 * with the allocation reserved and its pages mapped for the device.
 */
struct pagoda_bo_run {
	u64 paddr;
	u64 bytes;
	/* private: */
	struct ttm_buffer_object *tbo;
	u64 offset;
	u64 remaining;
	struct pagoda_vram_cursor cur;
};

static inline struct pagoda_bo *to_pagoda_bo(struct ttm_buffer_object *tbo)
{
	return container_of(tbo, struct pagoda_bo, tbo);
}

static inline struct pagoda_bo *gem_to_pagoda_bo(struct drm_gem_object *gem)
{
	return to_pagoda_bo(container_of(gem, struct ttm_buffer_object, base));
}

struct drm_device;
struct drm_file;

struct ttm_device;
struct ttm_resource;
bool pagoda_ttm_bo_is_pagoda(struct ttm_buffer_object *tbo);
void pagoda_bo_res_placement(struct ttm_resource *res, u64 *offset, u32 *contiguous);
void pagoda_tt_unmap_dma(struct ttm_device *bdev, struct ttm_tt *tt);
int pagoda_bo_place(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx);
int pagoda_bo_place_step(struct pagoda_bo *bo, bool preferred, struct ttm_operation_ctx *ctx);
int pagoda_bo_evict(struct pagoda_bo *bo, struct ttm_operation_ctx *ctx);

/* A placement failed for lack of room (or a lock contention in TTM's eviction). */
static inline bool pagoda_bo_place_failed(int ret)
{
	return ret == -ENOSPC || ret == -ENOMEM || ret == -EBUSY;
}

struct pagoda_device;
struct pagoda_bo *pagoda_bo_create_kernel(struct pagoda_device *pgdev, u64 size, u32 segments,
					  u32 flags);
u64 pagoda_bo_contiguous_paddr(struct pagoda_bo *bo);
u64 pagoda_bo_page_size(struct pagoda_bo *bo);
/**
 * struct pagoda_bo_at - one place in a GPU's memory
 * @seg: a memory segment (PAGODA_SEG_VRAM or PAGODA_SEG_VRAM_HIDDEN)
 * @offset: byte offset in it
 */
struct pagoda_bo_at {
	u32 seg;
	u64 offset;
};

/*
 * The instance of @bo on the GPU at position @adapter of its link: @bo
 * itself unless it is LinkInstanced or LinkMirrored.
 */
static inline struct pagoda_bo *pagoda_bo_instance(struct pagoda_bo *bo, u32 adapter)
{
	return bo->num_instances ? bo->instances[adapter] : bo;
}

void pagoda_bo_prefer_at(struct pagoda_bo *bo, const struct pagoda_bo_at *at);
bool pagoda_bo_where(struct pagoda_bo *bo, struct pagoda_bo_at *at);
struct pagoda_bo *pagoda_bo_create_kernel_at(struct pagoda_device *pgdev, u64 size,
					     u32 segments, u32 flags,
					     const struct pagoda_bo_at *at);
struct pagoda_bo *pagoda_bo_create_shared(struct pagoda_device *pgdev, u64 size, u32 segments,
					  struct drm_gem_object *resv_obj,
					  const struct pagoda_bo_at *at);
void pagoda_bo_free_kernel(struct pagoda_bo *bo);
u64 pagoda_bo_page_paddr(struct pagoda_bo *bo, u64 offset);
void pagoda_bo_run_first(struct pagoda_bo *bo, u64 offset, u64 size, struct pagoda_bo_run *run);
void pagoda_bo_run_next(struct pagoda_bo_run *run);
int pagoda_ioctl_gem_create(struct drm_device *drm, void *data, struct drm_file *file);
int pagoda_ioctl_gem_info(struct drm_device *drm, void *data, struct drm_file *file);
int pagoda_ioctl_gem_madvise(struct drm_device *drm, void *data, struct drm_file *file);
struct drm_mode_create_dumb;
int pagoda_gem_dumb_create(struct drm_file *file, struct drm_device *drm,
			   struct drm_mode_create_dumb *args);
int pagoda_bo_pin_scanout(struct pagoda_bo *bo);
struct dma_buf_attachment;
struct sg_table;
struct drm_gem_object *pagoda_gem_prime_import_sg_table(struct drm_device *drm,
							struct dma_buf_attachment *attach,
							struct sg_table *sgt);
void pagoda_bo_unpin_scanout(struct pagoda_bo *bo);

#endif /* PAGODA_BO_H */
