/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda paging engine client: paging buffers built as kernel jobs. See the
 * DOC block of pagoda_paging.c.
 */
#ifndef PAGODA_PAGING_H
#define PAGODA_PAGING_H

#include <linux/types.h>

struct dma_fence;
struct pagoda_device;
struct pagoda_engine;
struct pagoda_job;

/**
 * struct pagoda_paging_batch - the paging jobs of one request
 * @engine: the paging engine
 * @job: job being filled, or NULL; while set the engine's submit lock is held
 * @fence: fence of the last submitted job, or NULL
 * @jobs: jobs submitted so far
 * @staged: a staged batch's commands, not in a job yet (kvmalloc'ed)
 * @staged_bytes: bytes of @staged in use
 * @staged_size: bytes @staged holds
 * @staged_last: offset in @staged of the last command
 * @staged_ptes: 1 + offset in @staged of the last command if it is an
 *	UPDATE_PAGE_TABLE of explicit entries, or of the one before a last
 *	FLUSH_TLB; else 0
 * @staging: commands go to @staged until pagoda_paging_batch_flush()
 *
 * Used by one thread from pagoda_paging_batch_init() (or _init_staged())
 * to pagoda_paging_batch_submit() or pagoda_paging_batch_abort().
 */
struct pagoda_paging_batch {
	struct pagoda_engine *engine;
	struct pagoda_job *job;
	struct dma_fence *fence;
	unsigned int jobs;
	u8 *staged;
	u32 staged_bytes;
	u32 staged_size;
	u32 staged_last;
	u32 staged_ptes;
	bool staging;
};

void pagoda_paging_batch_init(struct pagoda_paging_batch *batch, struct pagoda_device *pgdev);
void pagoda_paging_batch_init_staged(struct pagoda_paging_batch *batch,
				     struct pagoda_device *pgdev);
int pagoda_paging_batch_flush(struct pagoda_paging_batch *batch);
int pagoda_paging_batch_flush_full(struct pagoda_paging_batch *batch);
bool pagoda_paging_batch_empty(struct pagoda_paging_batch *batch);
int pagoda_paging_fill(struct pagoda_paging_batch *batch, u64 dst, u64 size, u32 pattern);
int pagoda_paging_copy(struct pagoda_paging_batch *batch, u64 src, u64 dst, u64 size);
int pagoda_paging_copy_pages(struct pagoda_paging_batch *batch, const dma_addr_t *pages,
			     unsigned long npages, u64 range, bool to_pages);
int pagoda_paging_map_aperture(struct pagoda_paging_batch *batch, u32 first,
			       const dma_addr_t *pages, unsigned long npages);
int pagoda_paging_unmap_aperture(struct pagoda_paging_batch *batch, u32 first,
				 unsigned long npages);
/* Most pairs one MAP_HOST_APERTURE command of pagoda_paging_map_host_aperture() takes. */
#define PAGODA_PAGING_HOST_APERTURE_MAX	256
int pagoda_paging_map_host_aperture(struct pagoda_paging_batch *batch, unsigned int seg,
				    const u32 *slots, const u32 *seg_pages, unsigned int count);
int pagoda_paging_update_ptes(struct pagoda_paging_batch *batch, u32 level, u64 table,
			      u32 start, const u64 *ptes, u32 count, u32 flags);
int pagoda_paging_copy_ptes(struct pagoda_paging_batch *batch, u64 src, u32 src_index,
			    u64 dst, u32 dst_index, u32 count);
int pagoda_paging_flush_tlb(struct pagoda_paging_batch *batch, u32 context, u64 va, u64 size,
			    bool all_contexts);
int pagoda_paging_signal(struct pagoda_paging_batch *batch, u64 addr, u64 value, bool interrupt);
struct dma_fence *pagoda_paging_batch_submit(struct pagoda_paging_batch *batch);
struct dma_fence *pagoda_paging_batch_finish(struct pagoda_paging_batch *batch, int ret);
int pagoda_paging_batch_wait(struct pagoda_paging_batch *batch, int ret);
void pagoda_paging_batch_abort(struct pagoda_paging_batch *batch);

#endif /* PAGODA_PAGING_H */
