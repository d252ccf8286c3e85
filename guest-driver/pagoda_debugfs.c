// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda debugfs
 *
 * Files under /sys/kernel/debug/dri/<minor>/: those of the link
 * (``allocations``, ``vms``) and of its first GPU; each other GPU of a
 * linked adapter has its own in ``gpu<i>/`` (i its position in the link,
 * as GET_PARAM's adapter):
 *
 * - ``segments``: one line per segment: size, used, free and largest free
 *   block, evictions (and how many of them discarded contents not
 *   needed) and bytes moved (memory segments), page size; the
 *   aperture's table entries, used and free (GART occupancy); then the
 *   CPU host aperture's slots: how many, in use, mappings made and slots
 *   taken from another page;
 * - ``allocations``: every allocation of the link: its GPU (physical
 *   adapter index), size, where it is now (segment, offset, contiguous),
 *   allowed segments, flags, priority;
 * - ``evict`` (write-only): a segment id written evicts what is not pinned
 *   from that segment;
 * - ``paging_fault`` (write-only): a write submits a paging job that faults,
 *   a batch of two jobs whose first faults (its second runs once the
 *   context is resumed), and a job after them, and fails (EIO) unless the
 *   first and the batch fail and the last job runs: how tests reach the
 *   fault interrupt through the driver's own ring;
 * - ``paging_selftest`` (write-only): a write runs the page table commands
 *   of the paging client (UPDATE_PAGE_TABLE explicit and repeated,
 *   COPY_PTES, FLUSH_TLB, SIGNAL_FENCE) on tables in system memory and
 *   fails (EIO) unless the CPU reads back what they should have written;
 * - ``vms``: every GPU address space: its device context, root, page
 *   tables per level and where their chunks are, reservations and
 *   mappings; last, the count of spaces and tables;
 * - ``faults``: how many fault records the device queued since probe, and
 *   the last PAGODA_FAULT_LOG of them;
 * - ``resets``: render engine resets and adapter resets so far;
 * - ``render_jobs``: render jobs pushed to the scheduler since probe, and
 *   of them those SUBMIT ran directly (pagoda_sched.c);
 * - ``paging_hang`` (write-only): a write submits a paging job that waits
 *   forever (WAIT_FENCE on its own completion marker) and waits for it: the
 *   paging watchdog resets the adapter, the job fails with ETIMEDOUT, and
 *   the write succeeds; it fails (EIO) if the job ends any other way. How
 *   tests reach the adapter reset.
 * - ``engine_reset_fails`` (write-only): 1 makes the device's render engine
 *   resets fail (its PAGODA_REG_DEBUG control) until the next adapter
 *   reset, which clears it; 0 clears it. How tests reach the promotion of
 *   a failed engine reset to an adapter reset.
 * - ``phys_queue``: the physical-mode DMA buffers queued (checked, waiting
 *   for their turn or running), and one line per buffer in the order they
 *   run: context, bytes, allocations, entries, running or waiting;
 * - ``phys_hold`` (write-only): while it is open, physical-mode buffers
 *   join the queue but none takes its turn (the one running goes on);
 *   closing it lets them run in order. How tests and the split benchmark
 *   queue buffers behind one another.
 * - ``render_hold`` (write-only): while it is open, the render scheduler
 *   hands no job to the engine and frees none (SUBMIT's direct runs go
 *   on); closing it, a recovery or a PCI reset lets it go again. How
 *   tests keep a directly run job from the scheduler.
 *
 * Reading them takes the locks the data needs, never a BO reservation for
 * longer than a trylock: a busy allocation shows as "busy".
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/seq_file.h>

#include <drm/drm_debugfs.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"
#include "pagoda_phys.h"

static const char *const pagoda_segment_names[PAGODA_NUM_SEGMENTS] = {
	"system", "vram", "hidden-vram", "aperture",
};

/**
 * pagoda_segment_name - short name of a segment, as fdinfo and debugfs use it
 * @id: segment id
 *
 * Return: the name.
 */
const char *pagoda_segment_name(unsigned int id)
{
	return id < PAGODA_NUM_SEGMENTS ? pagoda_segment_names[id] : "unknown";
}

static int pagoda_debugfs_segments_show(struct seq_file *m, void *data)
{
	struct pagoda_device *pgdev = m->private;
	u64 maps, reuses;
	u32 slots_used;
	unsigned int id;

	for (id = 0; id < PAGODA_NUM_SEGMENTS; id++) {
		const struct pagoda_segment *seg = &pgdev->segs[id];
		struct pagoda_vram_mgr *mgr = &pgdev->vram_mgr[id];
		u64 size, used, largest, evictions, moved, discards;

		seq_printf(m, "%u %-12s", id, pagoda_segment_name(id));
		if (id == PAGODA_SEG_SYSTEM) {
			seq_puts(m, " (the guest's memory)\n");
			continue;
		}
		if (id == PAGODA_SEG_APERTURE) {
			u64 entries, used;

			pagoda_gart_usage(pgdev, &entries, &used);
			seq_printf(m, " size %llu entries %llu used %llu free %llu page %u\n",
				   seg->size, entries, used, entries - used, seg->page_size);
			continue;
		}
		pagoda_vram_mgr_usage(mgr, &size, &used, &largest);
		mutex_lock(&mgr->lock);
		evictions = mgr->evictions;
		moved = mgr->bytes_moved;
		discards = mgr->discards;
		mutex_unlock(&mgr->lock);
		seq_printf(m, " size %llu used %llu free %llu largest-free %llu evictions %llu discards %llu bytes-moved %llu page %u\n",
			   size, used, size - used, largest, evictions, discards, moved,
			   seg->page_size);
	}
	pagoda_host_aperture_stats(pgdev, &maps, &reuses, &slots_used);
	seq_printf(m, "host-aperture slots %u used %u page %u maps %llu reuses %llu\n",
		   pgdev->host_aperture.count, slots_used, pgdev->host_aperture.page_size,
		   maps, reuses);
	return 0;
}

static void pagoda_debugfs_bo(struct seq_file *m, struct pagoda_bo *bo)
{
	struct ttm_buffer_object *tbo = &bo->tbo;
	unsigned int seg;
	u32 contiguous;
	u64 offset;

	seq_printf(m, "%p gpu %u size %zu allowed 0x%x flags 0x%x priority %u%s", bo,
		   pagoda_bo_device(bo)->link_index, tbo->base.size, bo->segments, bo->flags,
		   bo->priority,
		   READ_ONCE(bo->madv) == DRM_PAGODA_MADV_DONTNEED ? " dontneed" : "");
	/* a linked allocation's instances name the first GPU's */
	if (bo->num_instances || bo->primary)
		seq_printf(m, " instance of %p", bo->primary ?: bo);
	if (!dma_resv_trylock(tbo->base.resv)) {
		seq_puts(m, " busy\n");
		return;
	}
	/* pins: one per file keeping it resident */
	seq_printf(m, " pinned %u", tbo->pin_count);
	if (tbo->ttm)
		seq_printf(m, " pages %s",
			   tbo->ttm->caching == ttm_write_combined ? "wc" : "cached");
	if (!tbo->resource) {
		seq_puts(m, " nowhere\n");
	} else {
		seg = pagoda_mem_type_segment(tbo->resource->mem_type);
		seq_printf(m, " in %s", pagoda_segment_name(seg));
		pagoda_bo_res_placement(tbo->resource, &offset, &contiguous);
		if (seg != PAGODA_SEG_SYSTEM)
			seq_printf(m, " offset 0x%llx%s", offset, contiguous ? " contiguous" : "");
		seq_putc(m, '\n');
	}
	dma_resv_unlock(tbo->base.resv);
}

static int pagoda_debugfs_allocations(struct seq_file *m, void *data)
{
	struct drm_debugfs_entry *entry = m->private;
	struct pagoda_link *link = to_pagoda_link(entry->dev);
	struct pagoda_bo *bo;
	unsigned int count = 0;

	mutex_lock(&link->bo_list_lock);
	list_for_each_entry(bo, &link->bo_list, link) {
		pagoda_debugfs_bo(m, bo);
		count++;
	}
	mutex_unlock(&link->bo_list_lock);
	seq_printf(m, "%u allocations\n", count);
	return 0;
}

/*
 * "evict": writing a segment id (1, 2 or 3) evicts every allocation of that
 * segment that is not pinned, as memory pressure would. For tests and for
 * looking at the eviction path by hand.
 */
static ssize_t pagoda_debugfs_evict_write(struct file *f, const char __user *buf, size_t len,
					  loff_t *pos)
{
	struct pagoda_device *pgdev = file_inode(f)->i_private;
	unsigned int seg;
	int ret, idx;

	ret = kstrtouint_from_user(buf, len, 0, &seg);
	if (ret)
		return ret;
	if (seg == PAGODA_SEG_SYSTEM || seg >= PAGODA_NUM_SEGMENTS)
		return -EINVAL;
	if (!drm_dev_enter(pgdev->drm, &idx))
		return -ENODEV;
	ret = down_read_interruptible(&pgdev->reset_lock);
	if (!ret) {
		ret = pagoda_bo_evict_segment(pgdev, pagoda_segment_mem_type(seg));
		up_read(&pgdev->reset_lock);
	}
	drm_dev_exit(idx);
	return ret ? ret : len;
}

/* "engine_reset_fails": see the DOC block. */
static ssize_t pagoda_debugfs_engine_reset_fails_write(struct file *f, const char __user *buf,
						       size_t len, loff_t *pos)
{
	struct pagoda_device *pgdev = file_inode(f)->i_private;
	bool fails;
	int ret, idx;

	ret = kstrtobool_from_user(buf, len, &fails);
	if (ret)
		return ret;
	if (!drm_dev_enter(pgdev->drm, &idx))
		return -ENODEV;
	pagoda_write(pgdev, PAGODA_REG_DEBUG,
		     fails ? PAGODA_DEBUG_ENGINE_RESET_FAILS(PAGODA_ENGINE_RENDER) : 0);
	drm_dev_exit(idx);
	return len;
}

static const struct file_operations pagoda_debugfs_engine_reset_fails_fops = {
	.owner = THIS_MODULE,
	.write = pagoda_debugfs_engine_reset_fails_write,
	.llseek = noop_llseek,
};

/* A kernel job of one NOP on the paging engine; returns its fence. */
static struct dma_fence *pagoda_debugfs_nop_job(struct pagoda_device *pgdev)
{
	struct pagoda_job *job = pagoda_job_begin(&pgdev->engine[PAGODA_ENGINE_PAGING]);
	__le32 *nop;

	if (IS_ERR(job))
		return ERR_CAST(job);
	nop = pagoda_job_reserve(job, 4);
	*nop = cpu_to_le32(PAGODA_CMD_HEADER(PAGODA_CMD_NOP, 0, 1));
	return pagoda_job_submit(job);
}

/* Wait (up to 1 s) for the fault interrupt to resume the kernel context. */
static void pagoda_debugfs_wait_resumed(struct pagoda_device *pgdev)
{
	unsigned int waited;

	for (waited = 0; waited < 1000; waited += 20) {
		if (!pagoda_context_halted(pgdev, PAGODA_KERNEL_CONTEXT))
			break;
		msleep(20);
	}
}

/*
 * A batch of two jobs whose first faults (at @past_end): once the first
 * has failed and the kernel context runs again, the second (signalling
 * values into a scratch buffer) runs, and fails all the same because the
 * first did. Return: what waiting for the batch returned, or -EINVAL when
 * the second job did not run.
 */
static int pagoda_debugfs_faulting_batch(struct pagoda_device *pgdev, u64 past_end)
{
	struct pagoda_paging_batch batch;
	u64 last = 0;
	dma_addr_t dma;
	__le64 *scratch;
	int ret;

	scratch = dma_alloc_coherent(&pgdev->pdev->dev, SZ_4K, &dma, GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;
	pagoda_paging_batch_init(&batch, pgdev);
	ret = pagoda_paging_fill(&batch, past_end, SZ_4K, 0);
	/* signals until the first job is full and submitted */
	while (!ret && !batch.jobs)
		ret = pagoda_paging_signal(&batch, PAGODA_PADDR(PAGODA_SEG_SYSTEM, dma), ++last,
					   false);
	if (!ret) {
		dma_fence_wait(batch.fence, false);
		pagoda_debugfs_wait_resumed(pgdev);
	}
	ret = pagoda_paging_batch_wait(&batch, ret);
	if (le64_to_cpu(READ_ONCE(*scratch)) != last)
		ret = -EINVAL;
	dma_free_coherent(&pgdev->pdev->dev, SZ_4K, scratch, dma);
	return ret;
}

/* The faults of pagoda_debugfs_paging_fault(), the engine held exclusively. */
static int pagoda_debugfs_inject_paging_faults(struct pagoda_device *pgdev)
{
	u64 past_end = PAGODA_PADDR(PAGODA_SEG_VRAM, pgdev->segs[PAGODA_SEG_VRAM].size);
	struct pagoda_paging_batch batch;
	struct dma_fence *next;
	int ret;

	pagoda_paging_batch_init(&batch, pgdev);
	ret = pagoda_paging_batch_wait(&batch, pagoda_paging_fill(&batch, past_end, SZ_4K, 0));
	if (ret != -EIO) {
		pagoda_gpu_err(pgdev, "faulting paging job: error %d, want %d\n", ret, -EIO);
		return -EIO;
	}
	pagoda_debugfs_wait_resumed(pgdev);
	ret = pagoda_debugfs_faulting_batch(pgdev, past_end);
	if (ret != -EIO) {
		pagoda_gpu_err(pgdev, "batch of two jobs, the first faulting: error %d, want %d\n",
			       ret, -EIO);
		return -EIO;
	}
	/* the fault interrupt may come after the engine's: let it resume */
	pagoda_debugfs_wait_resumed(pgdev);
	next = pagoda_debugfs_nop_job(pgdev);
	if (IS_ERR(next))
		return PTR_ERR(next);
	dma_fence_wait(next, false);
	ret = next->error;
	dma_fence_put(next);
	if (ret) {
		pagoda_gpu_err(pgdev, "paging job after a fault: error %d\n", ret);
		return -EIO;
	}
	return 0;
}

/*
 * A paging job that faults (a FILL just past the end of VRAM, which writes
 * nothing) must fail with -EIO, as must a batch whose first job faults; and
 * the next job must run: the fault interrupt resumed the kernel context.
 * The engine's other kernel jobs wait meanwhile: queued behind a faulting
 * one, the engine would retire them unrun, and a move would lose what it
 * did not copy.
 */
static int pagoda_debugfs_paging_fault(struct pagoda_device *pgdev)
{
	struct pagoda_engine *engine = &pgdev->engine[PAGODA_ENGINE_PAGING];
	int ret;

	pagoda_engine_exclusive_begin(engine);
	ret = pagoda_debugfs_inject_paging_faults(pgdev);
	pagoda_engine_exclusive_end(engine);
	return ret;
}

/*
 * The page table commands through the paging client, on two tables in
 * system memory: explicit entries, a repeated incrementing entry, a copy
 * between the tables, a TLB flush and a signalled value, checked by the
 * CPU afterwards.
 */
static int pagoda_debugfs_paging_selftest(struct pagoda_device *pgdev)
{
	const u64 page = PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x12345000ull, PAGODA_PTE_VALID);
	const u32 entries = SZ_4K / sizeof(u64), signal = 2 * entries;
	u64 ptes[4], a, b, flushes;
	struct pagoda_paging_batch batch;
	dma_addr_t dma;
	__le64 *mem;
	int ret, i;

	mem = dma_alloc_coherent(&pgdev->pdev->dev, 3 * SZ_4K, &dma, GFP_KERNEL);
	if (!mem)
		return -ENOMEM;
	a = PAGODA_PADDR(PAGODA_SEG_SYSTEM, dma);
	b = a + SZ_4K;
	for (i = 0; i < ARRAY_SIZE(ptes); i++)
		ptes[i] = page + ((u64)i << PAGODA_PTE_FRAME_SHIFT) + PAGODA_PTE_READ_ONLY;
	flushes = pagoda_read(pgdev, PAGODA_REG_TLB_FLUSHES);

	pagoda_paging_batch_init(&batch, pgdev);
	ret = pagoda_paging_update_ptes(&batch, 0, a, 0, ptes, ARRAY_SIZE(ptes), 0) ?:
	      pagoda_paging_update_ptes(&batch, 0, a, 100, &page, 8,
					PAGODA_UPT_REPEAT | PAGODA_UPT_REPEAT_INCREMENT) ?:
	      pagoda_paging_copy_ptes(&batch, a, 0, b, 10, ARRAY_SIZE(ptes)) ?:
	      pagoda_paging_flush_tlb(&batch, PAGODA_KERNEL_CONTEXT, 0, 0, true) ?:
	      pagoda_paging_signal(&batch, a + signal * sizeof(u64), 0xfeedbeefull, false);
	ret = pagoda_paging_batch_wait(&batch, ret);
	if (ret)
		goto out;

	for (i = 0; i < ARRAY_SIZE(ptes); i++)
		if (le64_to_cpu(mem[i]) != ptes[i] || le64_to_cpu(mem[entries + 10 + i]) != ptes[i])
			ret = -EIO;
	for (i = 0; i < 8; i++)
		if (le64_to_cpu(mem[100 + i]) != page + ((u64)i << PAGODA_PTE_FRAME_SHIFT))
			ret = -EIO;
	if (le64_to_cpu(mem[signal]) != 0xfeedbeefull ||
	    pagoda_read(pgdev, PAGODA_REG_TLB_FLUSHES) == flushes)
		ret = -EIO;
	if (ret)
		pagoda_gpu_err(pgdev, "paging self-test: tables or signal not as written\n");
out:
	dma_free_coherent(&pgdev->pdev->dev, 3 * SZ_4K, mem, dma);
	return ret;
}

/* A paging job that never ends; the watchdog must reset the adapter. */
static int pagoda_debugfs_paging_hang(struct pagoda_device *pgdev)
{
	struct pagoda_engine *engine = &pgdev->engine[PAGODA_ENGINE_PAGING];
	struct pagoda_job *job = pagoda_job_begin(engine);
	struct dma_fence *fence;
	__le32 *cmd;
	int ret;

	if (IS_ERR(job))
		return PTR_ERR(job);
	cmd = pagoda_job_reserve(job, 24);
	cmd[0] = cpu_to_le32(PAGODA_CMD_HEADER(PAGODA_CMD_WAIT_FENCE, 0, 6));
	cmd[1] = 0;
	/* its own marker, written only after this command: never reached */
	*(__le64 *)(cmd + 2) = cpu_to_le64(engine->markers_dma + job->slot * sizeof(u64));
	*(__le64 *)(cmd + 4) = cpu_to_le64(U64_MAX);
	fence = pagoda_job_submit(job);
	dma_fence_wait(fence, false);
	ret = fence->error;
	dma_fence_put(fence);
	if (ret != -ETIMEDOUT) {
		pagoda_gpu_err(pgdev, "hanging paging job: error %d, want %d\n", ret, -ETIMEDOUT);
		return -EIO;
	}
	return 0;
}

/* Runs @test with the device held; for the test files below. */
static ssize_t pagoda_debugfs_run(struct pagoda_device *pgdev,
				  int (*test)(struct pagoda_device *pgdev), size_t len)
{
	int ret, idx;

	if (!drm_dev_enter(pgdev->drm, &idx))
		return -ENODEV;
	ret = down_read_interruptible(&pgdev->reset_lock);
	if (!ret) {
		ret = test(pgdev);
		up_read(&pgdev->reset_lock);
	}
	drm_dev_exit(idx);
	return ret ? ret : len;
}

static ssize_t pagoda_debugfs_paging_selftest_write(struct file *f, const char __user *buf,
						    size_t len, loff_t *pos)
{
	return pagoda_debugfs_run(file_inode(f)->i_private, pagoda_debugfs_paging_selftest, len);
}

static const struct file_operations pagoda_debugfs_paging_selftest_fops = {
	.owner = THIS_MODULE,
	.write = pagoda_debugfs_paging_selftest_write,
	.llseek = noop_llseek,
};

/*
 * "paging_fault" (write-only): any write runs pagoda_debugfs_paging_fault()
 * and fails with EIO when the driver does not handle the fault as it must.
 */
static ssize_t pagoda_debugfs_paging_fault_write(struct file *f, const char __user *buf,
						 size_t len, loff_t *pos)
{
	return pagoda_debugfs_run(file_inode(f)->i_private, pagoda_debugfs_paging_fault, len);
}

static const struct file_operations pagoda_debugfs_paging_fault_fops = {
	.owner = THIS_MODULE,
	.write = pagoda_debugfs_paging_fault_write,
	.llseek = noop_llseek,
};

/* "paging_hang" (write-only): see the DOC block. */
static ssize_t pagoda_debugfs_paging_hang_write(struct file *f, const char __user *buf,
						size_t len, loff_t *pos)
{
	return pagoda_debugfs_run(file_inode(f)->i_private, pagoda_debugfs_paging_hang, len);
}

static const struct file_operations pagoda_debugfs_paging_hang_fops = {
	.owner = THIS_MODULE,
	.write = pagoda_debugfs_paging_hang_write,
	.llseek = noop_llseek,
};

static const struct file_operations pagoda_debugfs_evict_fops = {
	.owner = THIS_MODULE,
	.write = pagoda_debugfs_evict_write,
	.llseek = noop_llseek,
};

static int pagoda_debugfs_vms(struct seq_file *m, void *data)
{
	struct drm_debugfs_entry *entry = m->private;
	struct pagoda_link *link = to_pagoda_link(entry->dev);
	unsigned int count = 0, tables = 0, l;
	struct pagoda_pt_tree *tree;
	struct pagoda_vm *vm;

	mutex_lock(&link->vm_list_lock);
	list_for_each_entry(vm, &link->vm_list, link_node) {
		pagoda_vm_debugfs_show(m, vm);
		pagoda_vm_for_each_tree(vm, tree)
			for (l = 0; l < vm->levels; l++)
				tables += READ_ONCE(tree->tables[l]);
		count++;
	}
	mutex_unlock(&link->vm_list_lock);
	seq_printf(m, "%u address spaces, %u page tables\n", count, tables);
	return 0;
}

static int pagoda_debugfs_faults_show(struct seq_file *m, void *data)
{
	struct pagoda_device *pgdev = m->private;
	struct pagoda_fault_entry log[PAGODA_FAULT_LOG];
	unsigned long flags;
	u64 count, i;

	spin_lock_irqsave(&pgdev->fault_lock, flags);
	count = pgdev->fault_count;
	memcpy(log, pgdev->fault_log, sizeof(log));
	spin_unlock_irqrestore(&pgdev->fault_lock, flags);
	seq_printf(m, "%llu faults\n", count);
	for (i = count > PAGODA_FAULT_LOG ? count - PAGODA_FAULT_LOG : 0; i < count; i++) {
		const struct pagoda_fault_entry *e = &log[i % PAGODA_FAULT_LOG];

		seq_printf(m, "context %u engine %u code %u va 0x%llx access %u level %u\n",
			   e->context, e->fault.engine, e->fault.code, e->fault.va,
			   e->fault.access, e->fault.level);
	}
	return 0;
}

static int pagoda_debugfs_resets_show(struct seq_file *m, void *data)
{
	struct pagoda_device *pgdev = m->private;

	mutex_lock(&pgdev->recovery_lock);
	seq_printf(m, "engine resets %llu\nadapter resets %llu\n", pgdev->engine_resets,
		   pgdev->adapter_resets);
	mutex_unlock(&pgdev->recovery_lock);
	return 0;
}

static int pagoda_debugfs_render_jobs_show(struct seq_file *m, void *data)
{
	struct pagoda_device *pgdev = m->private;

	seq_printf(m, "pushed %lld\nrun directly %lld\n",
		   (long long)atomic64_read(&pgdev->render_pushed),
		   (long long)atomic64_read(&pgdev->render_direct_runs));
	return 0;
}

static int pagoda_debugfs_phys_queue_show(struct seq_file *m, void *data)
{
	pagoda_phys_queue_show(m->private, m);
	return 0;
}

/* "phys_hold": see the DOC block. The file keeps the device. */
static int pagoda_debugfs_phys_hold_open(struct inode *inode, struct file *f)
{
	struct pagoda_device *pgdev = inode->i_private;

	drm_dev_get(pgdev->drm);
	pagoda_phys_hold(pgdev, true);
	/* i_private may be gone by the release (debugfs_remove()) */
	f->private_data = pgdev;
	return 0;
}

static int pagoda_debugfs_phys_hold_release(struct inode *inode, struct file *f)
{
	struct pagoda_device *pgdev = f->private_data;

	pagoda_phys_hold(pgdev, false);
	drm_dev_put(pgdev->drm);
	return 0;
}

static const struct file_operations pagoda_debugfs_phys_hold_fops = {
	.owner = THIS_MODULE,
	.open = pagoda_debugfs_phys_hold_open,
	.release = pagoda_debugfs_phys_hold_release,
};

/* "render_hold": see the DOC block. The file keeps the device. */
static int pagoda_debugfs_render_hold_open(struct inode *inode, struct file *f)
{
	struct pagoda_device *pgdev = inode->i_private;

	drm_dev_get(pgdev->drm);
	drm_sched_wqueue_stop(&pgdev->render_sched);
	f->private_data = pgdev;
	return 0;
}

static int pagoda_debugfs_render_hold_release(struct inode *inode, struct file *f)
{
	struct pagoda_device *pgdev = f->private_data;
	int idx;

	/* an unplugged device's scheduler stays stopped */
	if (drm_dev_enter(pgdev->drm, &idx)) {
		drm_sched_wqueue_start(&pgdev->render_sched);
		drm_dev_exit(idx);
	}
	drm_dev_put(pgdev->drm);
	return 0;
}

static const struct file_operations pagoda_debugfs_render_hold_fops = {
	.owner = THIS_MODULE,
	.open = pagoda_debugfs_render_hold_open,
	.release = pagoda_debugfs_render_hold_release,
};

DEFINE_SHOW_ATTRIBUTE(pagoda_debugfs_segments);
DEFINE_SHOW_ATTRIBUTE(pagoda_debugfs_faults);
DEFINE_SHOW_ATTRIBUTE(pagoda_debugfs_resets);
DEFINE_SHOW_ATTRIBUTE(pagoda_debugfs_render_jobs);
DEFINE_SHOW_ATTRIBUTE(pagoda_debugfs_phys_queue);

/* The link's files: its allocations and address spaces. */
static const struct drm_debugfs_info pagoda_debugfs_files[] = {
	{ "allocations", pagoda_debugfs_allocations },
	{ "vms", pagoda_debugfs_vms },
};

/* The files of one GPU, in @dir. */
static void pagoda_debugfs_gpu_init(struct pagoda_device *pgdev, struct dentry *dir)
{
	static const struct {
		const char *name;
		umode_t mode;
		const struct file_operations *fops;
	} files[] = {
		{ "segments", 0444, &pagoda_debugfs_segments_fops },
		{ "faults", 0444, &pagoda_debugfs_faults_fops },
		{ "resets", 0444, &pagoda_debugfs_resets_fops },
		{ "render_jobs", 0444, &pagoda_debugfs_render_jobs_fops },
		{ "phys_queue", 0444, &pagoda_debugfs_phys_queue_fops },
		{ "evict", 0200, &pagoda_debugfs_evict_fops },
		{ "paging_fault", 0200, &pagoda_debugfs_paging_fault_fops },
		{ "paging_selftest", 0200, &pagoda_debugfs_paging_selftest_fops },
		{ "paging_hang", 0200, &pagoda_debugfs_paging_hang_fops },
		{ "engine_reset_fails", 0200, &pagoda_debugfs_engine_reset_fails_fops },
		{ "phys_hold", 0200, &pagoda_debugfs_phys_hold_fops },
		{ "render_hold", 0200, &pagoda_debugfs_render_hold_fops },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(files); i++)
		debugfs_create_file(files[i].name, files[i].mode, dir, pgdev, files[i].fops);
}

/**
 * pagoda_debugfs_init - declare the debugfs files
 * @link: link about to be registered (the files appear then)
 *
 * The first GPU's files are in the DRM device's directory, beside the
 * link's; each other GPU of a link has its own in gpu<i>/, i its position.
 */
void pagoda_debugfs_init(struct pagoda_link *link)
{
	char name[16];
	unsigned int i;

	drm_debugfs_add_files(&link->drm, pagoda_debugfs_files, ARRAY_SIZE(pagoda_debugfs_files));
	pagoda_debugfs_gpu_init(link->gpu[0], link->drm.debugfs_root);
	for (i = 1; i < link->num_gpus; i++) {
		snprintf(name, sizeof(name), "gpu%u", i);
		pagoda_debugfs_gpu_init(link->gpu[i],
					debugfs_create_dir(name, link->drm.debugfs_root));
	}
}

/*
 * drm-engine-render and drm-engine-paging: nanoseconds each engine spent on
 * the file's work (its render jobs; the page-table updates of its address
 * space). The device has no cycle counter: drm-cycles- counts those
 * nanoseconds at a nominal 1000 MHz (drm-maxfreq-).
 */
static void pagoda_show_fdinfo_engines(struct drm_printer *p, struct pagoda_vm *vm)
{
	static const char *const names[PAGODA_NUM_ENGINES] = {
		[PAGODA_ENGINE_PAGING] = "paging",
		[PAGODA_ENGINE_RENDER] = "render",
	};
	unsigned int e;

	for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
		u64 ns = atomic64_read(&vm->busy_ns[e]);

		drm_printf(p, "drm-engine-%s:\t%llu ns\n", names[e], ns);
		drm_printf(p, "drm-cycles-%s:\t%llu\n", names[e], ns);
		drm_printf(p, "drm-maxfreq-%s:\t1000 MHz\n", names[e]);
	}
}

/**
 * pagoda_show_fdinfo - the DRM file's memory use, per segment
 * @p: printer of the fdinfo file
 * @file: the DRM file
 *
 * Prints the standard drm-total-, drm-shared-, drm-resident- keys (and
 * the others of drm_print_memory_stats()) once per segment, named by the
 * segment: drm-total-vram, drm-total-system, ... An allocation counts in
 * the segment it is in now; one being moved counts where it last was.
 * Then each engine's time on the file's work (pagoda_show_fdinfo_engines()).
 */
void pagoda_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_memory_stats stats[PAGODA_NUM_SEGMENTS] = {};
	struct drm_gem_object *gem;
	unsigned int seg;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, gem, id) {
		struct pagoda_bo *bo = gem_to_pagoda_bo(gem);
		struct drm_memory_stats *s;

		seg = READ_ONCE(bo->segment);
		s = &stats[seg < PAGODA_NUM_SEGMENTS ? seg : PAGODA_SEG_SYSTEM];
		if (gem->handle_count > 1 || gem->dma_buf)
			s->shared += gem->size;
		else
			s->private += gem->size;
		s->resident += gem->size;
		if (READ_ONCE(bo->madv) == DRM_PAGODA_MADV_DONTNEED)
			s->purgeable += gem->size;
	}
	spin_unlock(&file->table_lock);

	for (seg = 0; seg < PAGODA_NUM_SEGMENTS; seg++)
		drm_print_memory_stats(p, &stats[seg],
				       DRM_GEM_OBJECT_RESIDENT | DRM_GEM_OBJECT_PURGEABLE,
				       pagoda_segment_name(seg));
	pagoda_show_fdinfo_engines(p, pfile->vm);
}
