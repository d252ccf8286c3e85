/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda physical-mode submission: the kernel's parser and DMA buffer
 * splitting. See the DOC blocks of pagoda_parse.c and pagoda_phys.c.
 */
#ifndef PAGODA_PHYS_H
#define PAGODA_PHYS_H

#include <linux/bitmap.h>
#include <linux/iosys-map.h>
#include <linux/list.h>
#include <linux/types.h>

#include <uapi/drm/pagoda_drm.h>

struct dma_fence;
struct drm_device;
struct drm_file;
struct pagoda_bo;
struct pagoda_device;
struct pagoda_gpu_ctx;
struct pagoda_submit_syncs;
struct seq_file;
struct ttm_buffer_object;

/**
 * struct pagoda_phys_submit - one DRM_IOCTL_PAGODA_SUBMIT_PHYS call
 * @pgdev: the device
 * @file: the caller's file
 * @ctx: the context (a reference)
 * @cmds: the kernel's copy of the DMA buffer, as parsed
 * @cmd_size: its bytes
 * @cmd_starts: bitmap, one bit per dword of @cmds: a command starts there
 * @allocs: the allocation list
 * @alloc_count: its entries
 * @bos: the allocation of each entry (a reference), NULL for the NULL one
 * @alloc_size: the bytes of each
 * @patches: the patch-location list
 * @patch_count: its entries
 * @buf: the copy the engine runs: a pinned, physically accessed kernel
 *	allocation, patched as allocations are paged in
 * @buf_map: its CPU mapping
 * @group: first entry of the split point paging resumes at
 * @start: that split point: where the next portion starts
 * @place_step: per allocation, the placement step it takes next since the
 *	split point (pagoda_phys_place()): 0 its preferred segment, 1 any
 *	allowed one, 2 a miss
 * @kept: the resource table there: for each slot the allocation index
 *	it holds (-1 for none); these stay where they are
 * @table: the resource table as entries are processed
 * @group_table: the table before the current group of entries (those
 *	sharing one split offset) was processed
 * @barrier: while the buffer is split, signalled once its last portion
 *	runs; other contexts' jobs wait for it (pagoda_sched.c)
 * @done: the fence of the last portion pushed
 * @portions: portions pushed
 * @syncs: the syncobjs: the first portion waits for the in-fences
 * @next_use: scratch: per allocation, its next entry (victim order)
 * @victims: scratch: allocations in victim order
 * @candidates: scratch: allocations that may be evicted at a miss
 * @queued_index: scratch: per entry of a queued buffer's allocation list,
 *	the index of the same allocation in this buffer's, -1 for none
 * @queue_link: in &pagoda_device.phys_queue, once checked
 * @turn: it is this buffer's turn: set under
 *	&pagoda_device.phys_queue_lock, read by its waiter without it
 *
 * Everything but the scratch members, @queue_link and @turn is set before
 * the buffer joins the queue and read-only while it is there, where the
 * buffer whose turn it is reads it (its lookahead).
 */
struct pagoda_phys_submit {
	struct pagoda_device *pgdev;
	struct drm_file *file;
	struct pagoda_gpu_ctx *ctx;
	u8 *cmds;
	u32 cmd_size;
	unsigned long *cmd_starts;
	struct drm_pagoda_phys_alloc *allocs;
	u32 alloc_count;
	struct pagoda_bo **bos;
	u64 *alloc_size;
	struct drm_pagoda_phys_patch *patches;
	u32 patch_count;
	struct pagoda_bo *buf;
	struct iosys_map buf_map;
	u32 group;
	u32 start;
	u8 place_step[DRM_PAGODA_PHYS_MAX_ALLOCS];
	s16 kept[DRM_PAGODA_MAX_SLOT_ID];
	s16 table[DRM_PAGODA_MAX_SLOT_ID];
	s16 group_table[DRM_PAGODA_MAX_SLOT_ID];
	struct dma_fence *barrier;
	struct dma_fence *done;
	u32 portions;
	struct pagoda_submit_syncs *syncs;
	u32 *next_use;
	u64 *victims;
	DECLARE_BITMAP(candidates, DRM_PAGODA_PHYS_MAX_ALLOCS);
	s16 queued_index[DRM_PAGODA_PHYS_MAX_ALLOCS];
	struct list_head queue_link;
	bool turn;
};

/* pagoda_parse.c */
int pagoda_parse_phys(struct pagoda_phys_submit *s);

/* pagoda_phys.c */
int pagoda_phys_init(struct pagoda_device *pgdev);
void pagoda_phys_hold(struct pagoda_device *pgdev, bool hold);
void pagoda_phys_queue_show(struct pagoda_device *pgdev, struct seq_file *m);
int pagoda_ioctl_submit_phys(struct drm_device *drm, void *data, struct drm_file *file);
bool pagoda_split_blocks_eviction(struct ttm_buffer_object *tbo);

#endif /* PAGODA_PHYS_H */
