// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda paging engine client
 *
 * Every data move of the driver is a paging buffer run by the paging
 * engine: FILL to clear a new allocation, TRANSFER to move one between
 * segments; MAP_APERTURE/UNMAP_APERTURE to map system pages into the
 * aperture segment (GART) and back to the dummy page; MAP_HOST_APERTURE
 * to show VRAM pages in the CPU host aperture; UPDATE_PAGE_TABLE,
 * COPY_PTES and FLUSH_TLB for page tables, SIGNAL_FENCE for a value in
 * memory once the work before it is done. A struct
 * pagoda_paging_batch collects the commands of one request; when a job
 * buffer is full the batch submits it and continues in a new job, so a
 * request of any size becomes as many jobs as it needs.
 * The batch's fence is that of its last job: jobs retire in order, and
 * each job of a batch fails when the one before it failed, so the last
 * job's fence tells whether the whole request ran.
 *
 * A staged batch (pagoda_paging_batch_init_staged()) collects its commands
 * in memory and puts them in jobs only when flushed: it holds no job, and
 * so not the engine's submit lock, while it grows. A request that submits
 * paging work of its own between its commands (placing allocations,
 * making page tables: VM_BIND's operations) builds its page-table writes
 * this way, and one request of many small updates becomes a few full jobs
 * rather than one job each. Its commands take no page lists. Writes that
 * continue the one before (the next entries of the same table, a flush of
 * the range after the last one flushed) join it: a bind of many tiles
 * side by side is a few commands, not two a tile.
 *
 * Addresses are the device's physical (segment, offset) pairs,
 * PAGODA_PADDR(). System pages are named by their bus address in
 * segment 0; scattered system pages go in page lists (TRANSFER_*_LIST)
 * stored in the job buffer after the commands.
 */

#include <linux/dma-fence.h>
#include <linux/sizes.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"

/*
 * A staged batch's first buffer: a few commands, as a bind of one range
 * makes, come from a small slab rather than the page allocator (a job's
 * worth is 16 KiB); larger requests double it.
 */
#define PAGODA_STAGE_MIN_BYTES	512

/* A command at a little-endian byte offset of its buffer. */
static void put32(u8 *cmd, unsigned int offset, u32 value)
{
	*(__le32 *)(cmd + offset) = cpu_to_le32(value);
}

static void put64(u8 *cmd, unsigned int offset, u64 value)
{
	*(__le64 *)(cmd + offset) = cpu_to_le64(value);
}

/**
 * pagoda_paging_batch_init - start an empty batch on the paging engine
 * @batch: the batch
 * @pgdev: the device
 */
void pagoda_paging_batch_init(struct pagoda_paging_batch *batch, struct pagoda_device *pgdev)
{
	*batch = (struct pagoda_paging_batch){ .engine = &pgdev->engine[PAGODA_ENGINE_PAGING] };
}

/**
 * pagoda_paging_batch_init_staged - start an empty staged batch
 * @batch: the batch
 * @pgdev: the device
 */
void pagoda_paging_batch_init_staged(struct pagoda_paging_batch *batch,
				     struct pagoda_device *pgdev)
{
	pagoda_paging_batch_init(batch, pgdev);
	batch->staging = true;
}

static int batch_flush(struct pagoda_paging_batch *batch)
{
	struct dma_fence *fence;

	if (!batch->job)
		return 0;
	fence = pagoda_job_submit(batch->job);
	batch->job = NULL;
	batch->jobs++;
	dma_fence_put(batch->fence);
	batch->fence = fence;
	return 0;
}

/* Room for a command of @bytes at the end of a staged batch's commands. */
static u8 *batch_stage(struct pagoda_paging_batch *batch, u32 bytes)
{
	u8 *cmd;

	if (batch->staged_bytes + bytes > batch->staged_size) {
		u32 size = max3(2 * batch->staged_size, batch->staged_bytes + bytes,
				(u32)PAGODA_STAGE_MIN_BYTES);
		u8 *staged = kvmalloc(size, GFP_KERNEL);

		if (!staged)
			return ERR_PTR(-ENOMEM);
		if (batch->staged)
			memcpy(staged, batch->staged, batch->staged_bytes);
		kvfree(batch->staged);
		batch->staged = staged;
		batch->staged_size = size;
	}
	batch->staged_last = batch->staged_bytes;
	batch->staged_ptes = 0;
	cmd = batch->staged + batch->staged_bytes;
	batch->staged_bytes += bytes;
	return cmd;
}

/* A staged UPDATE_PAGE_TABLE's entry count. */
static u32 staged_upt_count(const u8 *cmd)
{
	return le32_to_cpu(*(__le32 *)(cmd + 20));
}

/*
 * Add @count explicit entries to the staged UPDATE_PAGE_TABLE they
 * continue (same @header flags, @level and @table, entry @start right
 * after its last), in front of the flush that may follow it: nothing
 * runs between them, and that flush comes after all of them still.
 * False when there is none, or it would grow past @max entries.
 */
static bool batch_staged_more_ptes(struct pagoda_paging_batch *batch, u32 flags, u32 level,
				   u64 table, u32 start, const u64 *ptes, u32 count, u32 max)
{
	u32 at = batch->staged_ptes, n, end, tail, i;
	u8 *cmd;

	if (!at--)
		return false;
	cmd = batch->staged + at;
	n = staged_upt_count(cmd);
	if (PAGODA_CMD_FLAGS(le32_to_cpu(*(__le32 *)cmd)) != flags ||
	    le32_to_cpu(*(__le32 *)(cmd + 4)) != level ||
	    le64_to_cpu(*(__le64 *)(cmd + 8)) != table ||
	    le32_to_cpu(*(__le32 *)(cmd + 16)) + n != start || n + count > max)
		return false;
	end = at + 24 + n * sizeof(u64);
	tail = batch->staged_bytes - end;
	if (IS_ERR(batch_stage(batch, count * sizeof(u64))))
		return false;
	cmd = batch->staged + at;
	memmove(cmd + 24 + (n + count) * sizeof(u64), batch->staged + end, tail);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_UPDATE_PAGE_TABLE, flags, 6 + 2 * (n + count)));
	put32(cmd, 20, n + count);
	for (i = 0; i < count; i++)
		put64(cmd, 24 + (n + i) * sizeof(u64), ptes[i]);
	batch->staged_last = tail ? end + count * sizeof(u64) : at;
	batch->staged_ptes = at + 1;
	return true;
}

/*
 * The last staged command if it is a FLUSH_TLB of @header for @context
 * whose range ends at @va (the flush of the mapping before, which one
 * flush can cover with this one's), else NULL.
 */
static u8 *batch_staged_flush_before(struct pagoda_paging_batch *batch, u32 header, u32 context,
				     u64 va)
{
	u8 *cmd = batch->staged + batch->staged_last;

	if (!batch->staging || !batch->staged_bytes ||
	    le32_to_cpu(*(__le32 *)cmd) != header || le32_to_cpu(*(__le32 *)(cmd + 4)) != context ||
	    le64_to_cpu(*(__le64 *)(cmd + 8)) + le64_to_cpu(*(__le64 *)(cmd + 16)) != va ||
	    !le64_to_cpu(*(__le64 *)(cmd + 16)))
		return NULL;
	return cmd;
}

/*
 * Room for a command of @bytes and a list of @list_bytes in the current
 * job, submitting it and starting another when it is full.
 */
static u8 *batch_reserve(struct pagoda_paging_batch *batch, u32 bytes, u32 list_bytes,
			 void **list, u64 *list_addr)
{
	int tries;

	if (batch->staging)
		return WARN_ON(list_bytes) ? ERR_PTR(-EINVAL) : batch_stage(batch, bytes);

	for (tries = 0; tries < 2; tries++) {
		if (!batch->job) {
			batch->job = pagoda_job_begin(batch->engine);
			if (IS_ERR(batch->job)) {
				int ret = PTR_ERR(batch->job);

				batch->job = NULL;
				return ERR_PTR(ret);
			}
			/* a failure of the batch's job before fails this one too */
			if (batch->fence)
				batch->job->prev = dma_fence_get(batch->fence);
		}
		if (batch->job->cmd_bytes + bytes + batch->job->list_bytes + list_bytes <=
		    PAGODA_JOB_CAPACITY) {
			if (list_bytes)
				*list = pagoda_job_reserve_list(batch->job, list_bytes, list_addr);
			return pagoda_job_reserve(batch->job, bytes);
		}
		batch_flush(batch);
	}
	return ERR_PTR(-E2BIG);
}

/**
 * pagoda_paging_fill - fill [dst, dst + size) with a 32-bit pattern
 * @batch: the batch
 * @dst: device physical address
 * @size: bytes
 * @pattern: repeated from the first byte
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_fill(struct pagoda_paging_batch *batch, u64 dst, u64 size, u32 pattern)
{
	u8 *cmd = batch_reserve(batch, 24, 0, NULL, NULL);

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_FILL, 0, 6));
	put32(cmd, 4, pattern);
	put64(cmd, 8, dst);
	put64(cmd, 16, size);
	return 0;
}

static int transfer(struct pagoda_paging_batch *batch, u32 flags, u64 src, u64 dst, u64 size)
{
	u8 *cmd = batch_reserve(batch, 32, 0, NULL, NULL);

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_TRANSFER, flags, 8));
	put32(cmd, 4, 0);
	put64(cmd, 8, src);
	put64(cmd, 16, dst);
	put64(cmd, 24, size);
	return 0;
}

/**
 * pagoda_paging_copy - copy between two contiguous physical ranges
 * @batch: the batch
 * @src: device physical address of the source
 * @dst: device physical address of the destination
 * @size: bytes
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_copy(struct pagoda_paging_batch *batch, u64 src, u64 dst, u64 size)
{
	return transfer(batch, 0, src, dst, size);
}

/**
 * pagoda_paging_copy_pages - copy between system pages and a contiguous range
 * @batch: the batch
 * @pages: bus addresses of 4 KiB system pages, @npages of them
 * @npages: number of pages
 * @range: device physical address of the contiguous side
 * @to_pages: true to copy @range into the pages, false the other way
 *
 * Splits the pages into as many TRANSFER commands (and jobs) as the job
 * buffers need.
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_copy_pages(struct pagoda_paging_batch *batch, const dma_addr_t *pages,
			     unsigned long npages, u64 range, bool to_pages)
{
	/* pages per command: a third of a job buffer, so two fit with their commands */
	const unsigned long chunk = PAGODA_JOB_CAPACITY / 3 / sizeof(u64);
	unsigned long done, n, i;

	for (done = 0; done < npages; done += n) {
		u64 list_addr = 0, size;
		__le64 *list = NULL;
		u8 *cmd;

		n = min(chunk, npages - done);
		cmd = batch_reserve(batch, 32, n * sizeof(u64), (void **)&list, &list_addr);
		if (IS_ERR(cmd))
			return PTR_ERR(cmd);
		for (i = 0; i < n; i++)
			list[i] = cpu_to_le64(PAGODA_PADDR(PAGODA_SEG_SYSTEM, pages[done + i]));
		size = (u64)n * SZ_4K;
		put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_TRANSFER,
						to_pages ? PAGODA_TRANSFER_DST_LIST :
							   PAGODA_TRANSFER_SRC_LIST, 8));
		put32(cmd, 4, 0);
		put64(cmd, 8, to_pages ? range : list_addr);
		put64(cmd, 16, to_pages ? list_addr : range);
		put64(cmd, 24, size);
		range += size;
	}
	return 0;
}

/**
 * pagoda_paging_map_aperture - map system pages into the aperture segment
 * @batch: the batch
 * @first: first aperture (GART) page
 * @pages: bus addresses of 4 KiB system pages, @npages of them
 * @npages: number of pages, mapped at @first, @first + 1, ...
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_map_aperture(struct pagoda_paging_batch *batch, u32 first,
			       const dma_addr_t *pages, unsigned long npages)
{
	/* entries per command: half a job buffer */
	const unsigned long chunk = (PAGODA_JOB_CAPACITY / 2 - 16) / sizeof(u64);
	unsigned long done, n, i;

	for (done = 0; done < npages; done += n) {
		u8 *cmd;

		n = min(chunk, npages - done);
		cmd = batch_reserve(batch, 16 + n * sizeof(u64), 0, NULL, NULL);
		if (IS_ERR(cmd))
			return PTR_ERR(cmd);
		put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_MAP_APERTURE, 0, 4 + 2 * n));
		put32(cmd, 4, first + done);
		put64(cmd, 8, n);
		for (i = 0; i < n; i++)
			put64(cmd, 16 + i * sizeof(u64), pages[done + i]);
	}
	return 0;
}

/**
 * pagoda_paging_unmap_aperture - point aperture pages back at the dummy page
 * @batch: the batch
 * @first: first aperture (GART) page
 * @npages: number of pages
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_unmap_aperture(struct pagoda_paging_batch *batch, u32 first,
				 unsigned long npages)
{
	u8 *cmd = batch_reserve(batch, 16, 0, NULL, NULL);

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_UNMAP_APERTURE, 0, 4));
	put32(cmd, 4, first);
	put64(cmd, 8, npages);
	return 0;
}

/**
 * pagoda_paging_map_host_aperture - show segment pages in host aperture pages
 * @batch: the batch
 * @seg: PAGODA_SEG_VRAM or PAGODA_SEG_VRAM_HIDDEN
 * @slots: host aperture page indices
 * @seg_pages: segment page indices (in the segment's page size), one per slot
 * @count: number of pairs, at most PAGODA_PAGING_HOST_APERTURE_MAX
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_map_host_aperture(struct pagoda_paging_batch *batch, unsigned int seg,
				    const u32 *slots, const u32 *seg_pages, unsigned int count)
{
	u8 *cmd = batch_reserve(batch, 12 + count * 2 * sizeof(u32), 0, NULL, NULL);
	unsigned int i;

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_MAP_HOST_APERTURE, 0, 3 + 2 * count));
	put32(cmd, 4, seg);
	put32(cmd, 8, count);
	for (i = 0; i < count; i++) {
		put32(cmd, 12 + i * sizeof(u32), slots[i]);
		put32(cmd, 12 + (count + i) * sizeof(u32), seg_pages[i]);
	}
	return 0;
}

/**
 * pagoda_paging_update_ptes - write page table entries
 * @batch: the batch
 * @level: table level (0 = leaf)
 * @table: device physical address of the table
 * @start: first entry
 * @ptes: @count entries, or one when @flags has PAGODA_UPT_REPEAT
 * @count: entries to write
 * @flags: PAGODA_UPT_*
 *
 * Splits explicit entries over as many commands (and jobs) as they need.
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_update_ptes(struct pagoda_paging_batch *batch, u32 level, u64 table,
			      u32 start, const u64 *ptes, u32 count, u32 flags)
{
	/* entries per command: half a job buffer */
	const u32 chunk = (PAGODA_JOB_CAPACITY / 2 - 24) / sizeof(u64);
	bool repeat = flags & PAGODA_UPT_REPEAT;
	u32 done, n, i;

	if (batch->staging && !repeat &&
	    batch_staged_more_ptes(batch, flags, level, table, start, ptes, count, chunk))
		return 0;
	for (done = 0; done < count; done += n) {
		u8 *cmd;

		n = repeat ? count : min(chunk, count - done);
		cmd = batch_reserve(batch, 24 + (repeat ? 1 : n) * sizeof(u64), 0, NULL, NULL);
		if (IS_ERR(cmd))
			return PTR_ERR(cmd);
		put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_UPDATE_PAGE_TABLE, flags,
						repeat ? 8 : 6 + 2 * n));
		put32(cmd, 4, level);
		put64(cmd, 8, table);
		put32(cmd, 16, start + done);
		put32(cmd, 20, n);
		for (i = 0; i < (repeat ? 1 : n); i++)
			put64(cmd, 24 + i * sizeof(u64), ptes[done + i]);
		if (batch->staging && !repeat)
			batch->staged_ptes = batch->staged_last + 1;
	}
	return 0;
}

/**
 * pagoda_paging_copy_ptes - copy page table entries between tables
 * @batch: the batch
 * @src: device physical address of the source table
 * @src_index: first source entry
 * @dst: device physical address of the destination table
 * @dst_index: first destination entry
 * @count: entries, 1 .. 2^20
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_copy_ptes(struct pagoda_paging_batch *batch, u64 src, u32 src_index,
			    u64 dst, u32 dst_index, u32 count)
{
	u8 *cmd = batch_reserve(batch, 32, 0, NULL, NULL);

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_COPY_PTES, 0, 8));
	put32(cmd, 4, count);
	put64(cmd, 8, src);
	put64(cmd, 16, dst);
	put32(cmd, 24, src_index);
	put32(cmd, 28, dst_index);
	return 0;
}

/**
 * pagoda_paging_flush_tlb - drop translations the device may have cached
 * @batch: the batch
 * @context: GPU context, ignored with @all_contexts
 * @va: first virtual address
 * @size: bytes; 0 for the whole context
 * @all_contexts: flush every context
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_flush_tlb(struct pagoda_paging_batch *batch, u32 context, u64 va, u64 size,
			    bool all_contexts)
{
	u32 header = PAGODA_CMD_HEADER(PAGODA_CMD_FLUSH_TLB,
				       all_contexts ? PAGODA_FLUSH_ALL_CONTEXTS : 0, 6);
	u8 *cmd = size ? batch_staged_flush_before(batch, header, context, va) : NULL;
	/* entries written last: more may still join them, in front of this flush */
	u32 ptes = batch->staging && batch->staged_ptes == batch->staged_last + 1 ?
		   batch->staged_ptes : 0;

	/* the mappings of a staged batch side by side: one flush for them all */
	if (cmd) {
		put64(cmd, 16, le64_to_cpu(*(__le64 *)(cmd + 16)) + size);
		return 0;
	}
	cmd = batch_reserve(batch, 24, 0, NULL, NULL);
	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	batch->staged_ptes = ptes;
	put32(cmd, 0, header);
	put32(cmd, 4, context);
	put64(cmd, 8, va);
	put64(cmd, 16, size);
	return 0;
}

/**
 * pagoda_paging_signal - write a 64-bit value when the work before is done
 * @batch: the batch
 * @addr: device physical address, 8-byte aligned
 * @value: the value
 * @interrupt: raise the engine's interrupt too
 *
 * Return: 0 or a negative errno from starting a job.
 */
int pagoda_paging_signal(struct pagoda_paging_batch *batch, u64 addr, u64 value, bool interrupt)
{
	u8 *cmd = batch_reserve(batch, 24, 0, NULL, NULL);

	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	put32(cmd, 0, PAGODA_CMD_HEADER(PAGODA_CMD_SIGNAL_FENCE,
					interrupt ? PAGODA_SIGNAL_INTERRUPT : 0, 6));
	put32(cmd, 4, 0);
	put64(cmd, 8, addr);
	put64(cmd, 16, value);
	return 0;
}

/**
 * pagoda_paging_batch_empty - whether a batch has nothing to submit
 * @batch: the batch
 *
 * Return: true when it holds no command and submitted no job.
 */
bool pagoda_paging_batch_empty(struct pagoda_paging_batch *batch)
{
	return !batch->job && !batch->fence && !batch->staged_bytes;
}

/**
 * pagoda_paging_batch_flush - put a staged batch's commands in jobs
 * @batch: the batch; one not staged has nothing to put
 *
 * The commands are submitted in order, as many to a job as fit; the
 * batch stays staged, empty, for more commands. Returns with no job held.
 *
 * Return: 0 or a negative errno from starting a job (the commands not
 * submitted then are dropped).
 */
int pagoda_paging_batch_flush(struct pagoda_paging_batch *batch)
{
	u32 offset = 0, bytes;
	u8 *cmd;

	if (!batch->staging)
		return 0;
	batch->staging = false;
	for (; offset < batch->staged_bytes; offset += bytes) {
		bytes = PAGODA_CMD_DWORDS(le32_to_cpu(*(__le32 *)(batch->staged + offset))) * 4;
		cmd = batch_reserve(batch, bytes, 0, NULL, NULL);
		if (IS_ERR(cmd))
			break;
		memcpy(cmd, batch->staged + offset, bytes);
	}
	batch->staging = true;
	batch->staged_bytes = 0;
	batch->staged_ptes = 0;
	batch_flush(batch);
	return offset < batch->staged_bytes ? PTR_ERR(cmd) : 0;
}

/**
 * pagoda_paging_batch_flush_full - start the jobs a staged batch fills
 * @batch: the batch
 *
 * Once a job's worth is staged, the commands go to the ring
 * (pagoda_paging_batch_flush()): the paging engine starts on them while
 * the request goes on staging more, rather than after it.
 *
 * Return: 0 or a negative errno from pagoda_paging_batch_flush().
 */
int pagoda_paging_batch_flush_full(struct pagoda_paging_batch *batch)
{
	if (!batch->staging || batch->staged_bytes < PAGODA_JOB_CAPACITY)
		return 0;
	return pagoda_paging_batch_flush(batch);
}

/**
 * pagoda_paging_batch_submit - submit what the batch holds
 * @batch: the batch
 *
 * Return: the fence of the batch's last job (a reference for the caller),
 * a signalled stub fence when the batch is empty, or an ERR_PTR.
 */
struct dma_fence *pagoda_paging_batch_submit(struct pagoda_paging_batch *batch)
{
	struct dma_fence *fence;
	int ret = pagoda_paging_batch_flush(batch);

	kvfree(batch->staged);
	batch->staged = NULL;
	if (ret) {
		pagoda_paging_batch_abort(batch);
		return ERR_PTR(ret);
	}
	batch_flush(batch);
	fence = batch->fence ? batch->fence : dma_fence_get_stub();
	batch->fence = NULL;
	return fence;
}

/**
 * pagoda_paging_batch_finish - submit a batch, or abort it after an error
 * @batch: the batch
 * @ret: 0, or the error that stopped building it (the batch is aborted)
 *
 * Return: the fence of the batch's last job (a reference for the caller),
 * or an ERR_PTR of @ret or of the submission's error.
 */
struct dma_fence *pagoda_paging_batch_finish(struct pagoda_paging_batch *batch, int ret)
{
	if (ret) {
		pagoda_paging_batch_abort(batch);
		return ERR_PTR(ret);
	}
	return pagoda_paging_batch_submit(batch);
}

/**
 * pagoda_paging_batch_wait - submit a batch and wait for it, or abort it
 * @batch: the batch
 * @ret: 0, or the error that stopped building it (the batch is aborted)
 *
 * Return: @ret, or the error of submitting or of the batch's last job.
 */
int pagoda_paging_batch_wait(struct pagoda_paging_batch *batch, int ret)
{
	struct dma_fence *fence = pagoda_paging_batch_finish(batch, ret);

	if (IS_ERR(fence))
		return PTR_ERR(fence);
	dma_fence_wait(fence, false);
	ret = fence->error;
	dma_fence_put(fence);
	return ret;
}

/**
 * pagoda_paging_batch_abort - give up a batch after an error
 * @batch: the batch
 *
 * Jobs already submitted run to completion; this waits for them so that
 * the caller may free what they touch. The job being built is dropped.
 */
void pagoda_paging_batch_abort(struct pagoda_paging_batch *batch)
{
	kvfree(batch->staged);
	batch->staged = NULL;
	batch->staged_bytes = 0;
	if (batch->job)
		pagoda_job_abort(batch->job);
	batch->job = NULL;
	if (batch->fence) {
		dma_fence_wait(batch->fence, false);
		dma_fence_put(batch->fence);
	}
	batch->fence = NULL;
}
