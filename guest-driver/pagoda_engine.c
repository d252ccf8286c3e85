// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda engines and kernel jobs
 *
 * The driver owns the ring of each engine: PAGODA_RING_ENTRIES entries in
 * coherent system memory, beside PAGODA_ENGINE_SLOTS job buffers of
 * PAGODA_JOB_BUF_SIZE bytes. A kernel job is one ring entry whose buffer
 * holds its commands and, from the end of the buffer, the page lists its
 * commands name. Work that does not fit one buffer is split by its builder
 * into several jobs; they retire in order, so the fence of the last one
 * covers all of them. A job that runs a user's command buffer through an
 * address space, or a DMA buffer the kernel parsed and patched, takes two
 * entries: the user's entry (virtual, or physical) naming that buffer,
 * then the physical entry of its own buffer, in the same context
 * (pagoda_job_set_user()).
 *
 * Every entry asks for an interrupt and carries the job's fence seqno as
 * its fence value. The engine's interrupt reads PAGODA_ENG_FENCE and
 * signals, in order, every pending job up to that value. A retired entry
 * may not have run to its end: a fault stops it, and the engine retires
 * the entries of a halted context without running them. So every job ends
 * with a SIGNAL_FENCE writing its seqno to its slot's marker, and a job
 * retired without its marker gets -EIO on its fence. A fault of a kernel
 * job (the paging engine) resumes the kernel context at once, from the
 * fault interrupt: the jobs after it run again, and those the engine
 * skipped in between fail with -EIO like the faulting one. A slot (entry and
 * buffer) is reused only after the job that last used the next slot
 * retired, which also keeps one entry free as the device requires
 * (at most RING_SIZE - 1 entries pending).
 *
 * Before a reset or an unplug the driver stops the engine: no new job
 * starts, and jobs the device will never retire are signalled with an
 * error. After a reset pagoda_engine_start() programs the ring again.
 *
 * A user's entry carries the fence value of the job before, so that
 * ENG_FENCE reaches the job's seqno only when its own entry retires, and
 * a fault in the user's buffer halts the context, which makes the engine
 * skip the job's own entry: its marker stays unwritten and its fence
 * gets &pagoda_job.incomplete_error.
 */

#include <linux/dma-mapping.h>
#include <linux/sizes.h>

#include <drm/drm_print.h>

#include "pagoda_drv.h"
#include "pagoda_trace.h"

static_assert(offsetof(struct pagoda_job, fence) == 0);	/* dma_fence_free() frees the job */
static_assert(PAGODA_JOB_BUF_SIZE <= PAGODA_RING_MAX_LENGTH);

/* How long a submitter waits for a free slot before it gives up. */
#define PAGODA_SLOT_TIMEOUT		(10 * HZ)

static const char *pagoda_fence_driver_name(struct dma_fence *fence)
{
	return "pagoda";
}

static const char *pagoda_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence, struct pagoda_job, fence)->engine->name;
}

static void pagoda_fence_release(struct dma_fence *fence)
{
	struct pagoda_job *job = container_of(fence, struct pagoda_job, fence);

	dma_fence_put(job->prev);
	dma_fence_free(fence);
}

static const struct dma_fence_ops pagoda_fence_ops = {
	.get_driver_name = pagoda_fence_driver_name,
	.get_timeline_name = pagoda_fence_timeline_name,
	.release = pagoda_fence_release,
};

static u32 eng_reg(struct pagoda_engine *engine, u32 reg)
{
	return PAGODA_REG_ENGINE(engine->id) + reg;
}

/**
 * pagoda_engine_init - allocate an engine's ring and job buffers
 * @pgdev: device being probed
 * @engine: engine state to set up
 * @id: PAGODA_ENGINE_PAGING or PAGODA_ENGINE_RENDER
 *
 * The memory is device-managed and lives until the PCI unbind completes.
 * pagoda_engine_start() programs the ring.
 *
 * Return: 0 or -ENOMEM.
 */
int pagoda_engine_init(struct pagoda_device *pgdev, struct pagoda_engine *engine,
		       unsigned int id)
{
	struct device *dev = &pgdev->pdev->dev;

	engine->pgdev = pgdev;
	engine->id = id;
	engine->name = id == PAGODA_ENGINE_PAGING ? "paging" : "render";
	init_rwsem(&engine->exclusive);
	mutex_init(&engine->submit_lock);
	spin_lock_init(&engine->fence_lock);
	INIT_LIST_HEAD(&engine->pending);
	engine->fence_context = dma_fence_context_alloc(1);
	engine->next_seqno = 1;
	INIT_DELAYED_WORK(&engine->tdr, pagoda_paging_timedout);

	engine->ring = dmam_alloc_coherent(dev, PAGODA_RING_ENTRIES * PAGODA_RING_ENTRY_SIZE,
					   &engine->ring_dma, GFP_KERNEL);
	engine->bufs = dmam_alloc_coherent(dev, PAGODA_ENGINE_SLOTS * PAGODA_JOB_BUF_SIZE,
					   &engine->bufs_dma, GFP_KERNEL);
	/* the markers, then the fence writeback */
	engine->markers = dmam_alloc_coherent(dev, (PAGODA_ENGINE_SLOTS + 1) * sizeof(u64),
					      &engine->markers_dma, GFP_KERNEL);
	if (!engine->ring || !engine->bufs || !engine->markers)
		return -ENOMEM;
	return 0;
}

/*
 * Program the ring, empty; the submit lock is held. Fences continue above
 * ENG_FENCE: a device the driver did not reset (a new binding) still shows
 * the last fence of the driver before, which must not retire new jobs.
 */
/* Where the device writes ENG_FENCE: the u64 after the markers. */
static dma_addr_t pagoda_engine_fence_wb_dma(struct pagoda_engine *engine)
{
	return engine->markers_dma + PAGODA_ENGINE_SLOTS * sizeof(u64);
}

static void pagoda_engine_program(struct pagoda_engine *engine)
{
	struct pagoda_device *pgdev = engine->pgdev;

	lockdep_assert_held(&engine->submit_lock);
	engine->next_seqno = max(engine->next_seqno, pagoda_engine_read_fence(engine) + 1);
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_RING_SIZE), 0);
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_RING_BASE_LO),
		     lower_32_bits(engine->ring_dma));
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_RING_BASE_HI),
		     upper_32_bits(engine->ring_dma));
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_RING_SIZE), PAGODA_RING_ENTRIES);
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_FENCE_WB_LO),
		     lower_32_bits(pagoda_engine_fence_wb_dma(engine)));
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_FENCE_WB_HI),
		     upper_32_bits(pagoda_engine_fence_wb_dma(engine)));
	engine->tail = 0;
	engine->running = true;
}

/**
 * pagoda_engine_start - program the ring and accept jobs
 * @engine: engine whose ring the device does not run (after probe or reset)
 *
 * Writing RING_SIZE resets the device's HEAD and TAIL, so the driver's
 * tail starts at 0 too.
 */
void pagoda_engine_start(struct pagoda_engine *engine)
{
	mutex_lock(&engine->submit_lock);
	pagoda_engine_program(engine);
	mutex_unlock(&engine->submit_lock);
}

/* Signal every pending job; @error (negative) marks those not retired. */
static void pagoda_engine_signal_all(struct pagoda_engine *engine, int error)
{
	struct pagoda_job *job, *next;
	unsigned long flags;

	spin_lock_irqsave(&engine->fence_lock, flags);
	list_for_each_entry_safe(job, next, &engine->pending, link) {
		dma_fence_set_error(&job->fence, error);
		list_del_init(&job->link);
		dma_fence_signal_locked(&job->fence);
	}
	spin_unlock_irqrestore(&engine->fence_lock, flags);
}

/**
 * pagoda_engine_stop - stop accepting jobs and drop what the device lost
 * @engine: a started engine
 * @error: negative errno set on the fences of jobs that did not retire
 *
 * Called before a reset or an unplug, once the engine is idle or given up
 * on: the ring is turned off, and every job still pending is signalled
 * with @error. New jobs fail with -ENODEV until pagoda_engine_start().
 */
void pagoda_engine_stop(struct pagoda_engine *engine, int error)
{
	mutex_lock(&engine->submit_lock);
	if (engine->running)
		pagoda_write(engine->pgdev, eng_reg(engine, PAGODA_ENG_RING_SIZE), 0);
	engine->running = false;
	/* what retired before the ring went off keeps its good status */
	pagoda_engine_retire(engine);
	pagoda_engine_signal_all(engine, error);
	mutex_unlock(&engine->submit_lock);
}

/**
 * pagoda_engine_abort_locked - drop the jobs an engine reset aborted
 * @engine: the engine, its submit lock held, just reset
 * @error: negative errno for the fences of the jobs that did not retire
 *
 * What retired before the reset keeps its status; the ring is programmed
 * again, empty.
 */
void pagoda_engine_abort_locked(struct pagoda_engine *engine, int error)
{
	lockdep_assert_held(&engine->submit_lock);
	pagoda_engine_retire(engine);
	pagoda_engine_signal_all(engine, error);
	pagoda_engine_program(engine);
}

/**
 * pagoda_engine_oldest - the engine's oldest job not retired
 * @engine: the engine
 *
 * Return: the job with a reference on its fence, or NULL.
 */
struct pagoda_job *pagoda_engine_oldest(struct pagoda_engine *engine)
{
	struct pagoda_job *job;
	unsigned long flags;

	spin_lock_irqsave(&engine->fence_lock, flags);
	job = list_first_entry_or_null(&engine->pending, struct pagoda_job, link);
	if (job)
		dma_fence_get(&job->fence);
	spin_unlock_irqrestore(&engine->fence_lock, flags);
	return job;
}

/**
 * pagoda_engine_busy - whether a job handed to the engine has not retired
 * @engine: the engine
 *
 * Return: true while one is in flight.
 */
bool pagoda_engine_busy(struct pagoda_engine *engine)
{
	unsigned long flags;
	bool busy;

	spin_lock_irqsave(&engine->fence_lock, flags);
	busy = !list_empty(&engine->pending);
	spin_unlock_irqrestore(&engine->fence_lock, flags);
	return busy;
}

/**
 * pagoda_engine_fini - release the references an engine holds
 * @engine: a stopped engine
 */
void pagoda_engine_fini(struct pagoda_engine *engine)
{
	unsigned int i;

	cancel_delayed_work_sync(&engine->tdr);
	for (i = 0; i < PAGODA_ENGINE_SLOTS; i++) {
		if (engine->slot_job[i])
			dma_fence_put(&engine->slot_job[i]->fence);
		engine->slot_job[i] = NULL;
	}
	for (i = 0; i < PAGODA_RING_ENTRIES; i++) {
		if (engine->entry_job[i])
			dma_fence_put(&engine->entry_job[i]->fence);
		engine->entry_job[i] = NULL;
	}
	mutex_destroy(&engine->submit_lock);
}

/**
 * pagoda_engine_read_fence - the fence of the engine's last retired entry
 * @engine: the engine
 *
 * Read so that a retirement between the two halves of ENG_FENCE is not torn.
 *
 * Return: ENG_FENCE.
 */
u64 pagoda_engine_read_fence(struct pagoda_engine *engine)
{
	struct pagoda_device *pgdev = engine->pgdev;
	u32 hi, lo;

	do {
		hi = pagoda_read(pgdev, eng_reg(engine, PAGODA_ENG_FENCE_HI));
		lo = pagoda_read(pgdev, eng_reg(engine, PAGODA_ENG_FENCE_LO));
	} while (hi != pagoda_read(pgdev, eng_reg(engine, PAGODA_ENG_FENCE_HI)));
	return (u64)hi << 32 | lo;
}

/**
 * pagoda_engine_written_fence - ENG_FENCE as the device last wrote it to memory
 * @engine: the engine
 *
 * The device writes the fence there before it raises the interrupt of the
 * entry that moved it, so the interrupt handler reads memory instead of
 * three registers. Until the ring retires an entry after a reset the value
 * is an older fence, whose jobs are signalled already.
 *
 * Return: the fence.
 */
u64 pagoda_engine_written_fence(struct pagoda_engine *engine)
{
	return le64_to_cpu(READ_ONCE(engine->markers[PAGODA_ENGINE_SLOTS]));
}

/**
 * pagoda_engine_incomplete_upto - whether a job up to a fence lacks its marker
 * @engine: the engine
 * @retired: a fence the engine retired
 *
 * Return: true when a pending job the engine retired did not complete (a
 * fault stopped it, or its context was halted): its fault record must be
 * handled before its fence signals.
 */
bool pagoda_engine_incomplete_upto(struct pagoda_engine *engine, u64 retired)
{
	struct pagoda_job *job;
	unsigned long flags;
	bool incomplete = false;

	spin_lock_irqsave(&engine->fence_lock, flags);
	list_for_each_entry(job, &engine->pending, link) {
		if (job->fence.seqno > retired)
			break;
		if (le64_to_cpu(READ_ONCE(engine->markers[job->slot])) != job->fence.seqno) {
			incomplete = true;
			break;
		}
	}
	spin_unlock_irqrestore(&engine->fence_lock, flags);
	return incomplete;
}

/* The paging engine's watchdog starts again: it has work, and made progress. */
static void pagoda_engine_arm_tdr(struct pagoda_engine *engine)
{
	if (engine->id == PAGODA_ENGINE_PAGING)
		mod_delayed_work(system_wq, &engine->tdr, pagoda_hang_timeout());
}

/**
 * pagoda_engine_retire_upto - signal the jobs the engine retired up to a fence
 * @engine: engine whose interrupt fired
 * @retired: ENG_FENCE, read after the engine's status bit was acknowledged
 *	(a retirement after the read raises a new interrupt) and before the
 *	fault queue was drained (the records of the entries retired up to it
 *	are handled, so a faulting job's context is banned before its fence
 *	signals)
 */
void pagoda_engine_retire_upto(struct pagoda_engine *engine, u64 retired)
{
	struct pagoda_job *job, *next;
	unsigned long flags;
	bool progress = false;

	/* the markers were written before the fence register moved */
	dma_rmb();
	spin_lock_irqsave(&engine->fence_lock, flags);
	list_for_each_entry_safe(job, next, &engine->pending, link) {
		if (job->fence.seqno > retired)
			break;
		if (le64_to_cpu(READ_ONCE(engine->markers[job->slot])) != job->fence.seqno) {
			/* a user's job that faulted is no driver error */
			if (!job->owner)
				pagoda_gpu_err_ratelimited(engine->pgdev,
							   "%s engine: job %llu did not complete\n",
							   engine->name, job->fence.seqno);
			dma_fence_set_error(&job->fence, job->incomplete_error);
		} else if (job->prev && job->prev->error) {
			/* jobs retire in order: the one before has signalled */
			dma_fence_set_error(&job->fence, job->prev->error);
		}
		trace_pagoda_job_retire(engine->id, job->fence.seqno, job->cmd_bytes);
		list_del_init(&job->link);
		/* callbacks count the job's time against the last retirement */
		dma_fence_signal_locked(&job->fence);
		engine->last_retire_ns = ktime_get_raw_ns();
		progress = true;
	}
	if (engine->id == PAGODA_ENGINE_PAGING && progress) {
		if (list_empty(&engine->pending))
			cancel_delayed_work(&engine->tdr);
		else
			pagoda_engine_arm_tdr(engine);
	}
	spin_unlock_irqrestore(&engine->fence_lock, flags);
}

/**
 * pagoda_engine_reap - retire what the engine finished, if it all completed
 * @engine: the engine
 *
 * A doorbell runs the engine's first short slice before the write returns
 * (hardware.md, Execution), so a small job has often retired by then: its
 * fence signals here, on the submitter's CPU, instead of after its
 * interrupt reached whichever CPU takes it. Only when every job up to the
 * written fence completed: one that did not has a fault record, which the
 * interrupt handler handles before the fence signals. The doorbell asks
 * for no interrupt when the slice left the engine idle with every entry
 * completed (DOORBELL_POLL), so a job that completed behind one that did
 * not may have no interrupt of its own: the interrupt handler reaps too,
 * once it retired the one that did not.
 */
void pagoda_engine_reap(struct pagoda_engine *engine)
{
	u64 written = pagoda_engine_written_fence(engine);

	/* the markers were written before the fence */
	dma_rmb();
	if (!pagoda_engine_incomplete_upto(engine, written))
		pagoda_engine_retire_upto(engine, written);
}

/**
 * pagoda_engine_retire - signal every job the engine has retired
 * @engine: engine that is being stopped, reset or recovered, its fault
 *	queue handled
 */
void pagoda_engine_retire(struct pagoda_engine *engine)
{
	pagoda_engine_retire_upto(engine, pagoda_engine_read_fence(engine));
}

/**
 * pagoda_engine_fault - a fault record names a job of this engine
 * @engine: the engine
 * @context: the record's context
 *
 * Called from the fault interrupt. A kernel job's fault halted the kernel
 * context: resume it so that the jobs queued behind run (the faulting job
 * and any skipped meanwhile fail, by their markers). Faults of user
 * contexts are left to their owners.
 */
void pagoda_engine_fault(struct pagoda_engine *engine, u32 context)
{
	struct pagoda_device *pgdev = engine->pgdev;
	unsigned long flags;

	if (context != PAGODA_KERNEL_CONTEXT)
		return;
	spin_lock_irqsave(&pgdev->ctx_lock, flags);
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, PAGODA_KERNEL_CONTEXT);
	pagoda_write(pgdev, PAGODA_REG_CTX_STATUS, PAGODA_CTX_STATUS_HALTED);
	spin_unlock_irqrestore(&pgdev->ctx_lock, flags);
}

/**
 * pagoda_engine_busy_since - time a job just retired spent on its engine
 * @engine: the engine
 * @submit_ns: when the job was handed to the engine (ktime_get_raw_ns())
 *
 * Called from a callback of the job's fence, under the fence lock: the job
 * ran from its submission or from the retirement of the job before it,
 * whichever came last.
 *
 * Return: nanoseconds.
 */
u64 pagoda_engine_busy_since(struct pagoda_engine *engine, u64 submit_ns)
{
	lockdep_assert_held(&engine->fence_lock);
	return ktime_get_raw_ns() - max(submit_ns, engine->last_retire_ns);
}

/**
 * pagoda_context_halted - whether a context is halted by a fault
 * @pgdev: the device
 * @context: context id
 *
 * Return: true while halted.
 */
bool pagoda_context_halted(struct pagoda_device *pgdev, u32 context)
{
	unsigned long flags;
	u32 status;

	spin_lock_irqsave(&pgdev->ctx_lock, flags);
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, context);
	status = pagoda_read(pgdev, PAGODA_REG_CTX_STATUS);
	spin_unlock_irqrestore(&pgdev->ctx_lock, flags);
	return status & PAGODA_CTX_STATUS_HALTED;
}

/**
 * pagoda_engine_idle - wait until every submitted job has retired
 * @engine: the engine
 * @timeout: in jiffies
 *
 * Return: 0 when idle, -ETIMEDOUT otherwise.
 */
int pagoda_engine_idle(struct pagoda_engine *engine, long timeout)
{
	struct dma_fence *last = NULL;
	struct pagoda_job *job;
	long ret;

	mutex_lock(&engine->submit_lock);
	job = engine->entry_job[(engine->tail + PAGODA_RING_ENTRIES - 1) % PAGODA_RING_ENTRIES];
	if (job)
		last = dma_fence_get(&job->fence);
	mutex_unlock(&engine->submit_lock);
	if (!last)
		return 0;
	ret = dma_fence_wait_timeout(last, false, timeout);
	dma_fence_put(last);
	return ret > 0 ? 0 : -ETIMEDOUT;
}

/**
 * pagoda_engine_exclusive_begin - have the engine's kernel jobs to oneself
 * @engine: the paging engine
 *
 * Holds off every other builder of kernel jobs (they wait in
 * pagoda_job_begin()) and waits until what they submitted has retired.
 * The caller's own jobs go on as usual; it must not wait for anything
 * that another kernel job would have to do. Ended by
 * pagoda_engine_exclusive_end().
 */
void pagoda_engine_exclusive_begin(struct pagoda_engine *engine)
{
	down_write(&engine->exclusive);
	WRITE_ONCE(engine->exclusive_owner, current);
	/* an engine that hangs is reset by its watchdog: the wait ends */
	pagoda_engine_idle(engine, MAX_SCHEDULE_TIMEOUT);
}

/**
 * pagoda_engine_exclusive_end - let the other kernel jobs in again
 * @engine: the engine given to pagoda_engine_exclusive_begin()
 */
void pagoda_engine_exclusive_end(struct pagoda_engine *engine)
{
	WRITE_ONCE(engine->exclusive_owner, NULL);
	up_write(&engine->exclusive);
}

/* Wait until the job in @*owner retired, then drop it. */
static int pagoda_engine_wait_owner(struct pagoda_engine *engine, struct pagoda_job **owner)
{
	struct pagoda_job *old = *owner;
	long ret;

	if (!old)
		return 0;
	ret = dma_fence_wait_timeout(&old->fence, false, PAGODA_SLOT_TIMEOUT);
	if (ret <= 0) {
		pagoda_gpu_err(engine->pgdev, "%s engine: no ring slot free after %u s\n",
			       engine->name, PAGODA_SLOT_TIMEOUT / HZ);
		return -ETIMEDOUT;
	}
	dma_fence_put(&old->fence);
	*owner = NULL;
	return 0;
}

/*
 * Make the next buffer and the two ring entries at the tail usable: the
 * job that last used the entry after them must have retired (in-order
 * retirement then frees those two, and one entry stays free).
 */
static int pagoda_engine_wait_slot(struct pagoda_engine *engine)
{
	unsigned int spare = (engine->tail + 2) % PAGODA_RING_ENTRIES;
	int ret;

	ret = pagoda_engine_wait_owner(engine, &engine->slot_job[engine->next_slot]);
	if (!ret)
		ret = pagoda_engine_wait_owner(engine, &engine->entry_job[spare]);
	return ret;
}

/**
 * pagoda_job_begin - start building a kernel job
 * @engine: a started engine
 *
 * Takes the engine's submit lock (released by pagoda_job_submit() or
 * pagoda_job_abort()), on the paging engine after its exclusive lock for
 * reading (see &pagoda_engine.exclusive), and waits for a free slot. May
 * sleep.
 *
 * Return: the job, or an ERR_PTR: -ENODEV when the engine is stopped,
 * -ETIMEDOUT when no slot frees up, -ENOMEM.
 */
struct pagoda_job *pagoda_job_begin(struct pagoda_engine *engine)
{
	struct pagoda_job *job;
	int ret;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return ERR_PTR(-ENOMEM);

	job->shared = engine->id == PAGODA_ENGINE_PAGING &&
		      READ_ONCE(engine->exclusive_owner) != current;
	if (job->shared)
		down_read(&engine->exclusive);
	mutex_lock(&engine->submit_lock);
	ret = engine->running ? pagoda_engine_wait_slot(engine) : -ENODEV;
	if (ret) {
		mutex_unlock(&engine->submit_lock);
		if (job->shared)
			up_read(&engine->exclusive);
		kfree(job);
		return ERR_PTR(ret);
	}
	job->engine = engine;
	job->slot = engine->next_slot;
	job->entry = engine->tail;
	job->nr_entries = 1;
	job->context = PAGODA_KERNEL_CONTEXT;
	job->incomplete_error = -EIO;
	job->cmds = engine->bufs + (size_t)job->slot * PAGODA_JOB_BUF_SIZE;
	INIT_LIST_HEAD(&job->link);
	return job;
}

/**
 * pagoda_job_set_user - run a user's buffer first
 * @job: job being built, with no commands of its own yet
 * @context: GPU context of the user's address space
 * @addr: the buffer: a VA of that space, or a physical address the kernel
 *	chose (a parsed and patched DMA buffer)
 * @length: its bytes
 * @virtual: @addr is a VA
 *
 * The job becomes two ring entries in @context: the user's one, then its
 * own buffer (which only writes the marker). A fault in the user's buffer
 * fails the job with -EFAULT.
 */
void pagoda_job_set_user(struct pagoda_job *job, u16 context, u64 addr, u32 length,
			 bool virtual)
{
	job->nr_entries = 2;
	job->context = context;
	job->user_addr = addr;
	job->user_length = length;
	job->user_virtual = virtual;
	job->incomplete_error = -EFAULT;
}

/**
 * pagoda_job_reserve - room for @bytes of commands
 * @job: job being built
 * @bytes: a multiple of 4
 *
 * Return: where to write them, or NULL when the buffer is full (submit
 * this job and continue in a new one).
 */
void *pagoda_job_reserve(struct pagoda_job *job, u32 bytes)
{
	void *p;

	if (job->cmd_bytes + bytes + job->list_bytes > PAGODA_JOB_CAPACITY)
		return NULL;
	p = job->cmds + job->cmd_bytes;
	job->cmd_bytes += bytes;
	return p;
}

/**
 * pagoda_job_reserve_list - room for @bytes of data a command points to
 * @job: job being built
 * @bytes: size, a multiple of 8 (a page list of u64 addresses)
 * @bus_addr: set to the device's (segment 0) address of the room
 *
 * Return: where to write it, or NULL when the buffer is full.
 */
void *pagoda_job_reserve_list(struct pagoda_job *job, u32 bytes, u64 *bus_addr)
{
	struct pagoda_engine *engine = job->engine;
	u32 offset;

	if (job->cmd_bytes + bytes + job->list_bytes > PAGODA_JOB_CAPACITY)
		return NULL;
	job->list_bytes += bytes;
	offset = PAGODA_JOB_BUF_SIZE - job->list_bytes;
	*bus_addr = engine->bufs_dma + (u64)job->slot * PAGODA_JOB_BUF_SIZE + offset;
	return job->cmds + offset;
}

/* The job's last command: its seqno to its slot's marker (room was kept). */
static void pagoda_job_write_marker(struct pagoda_job *job)
{
	struct pagoda_engine *engine = job->engine;
	u8 *cmd = job->cmds + job->cmd_bytes;

	*(__le32 *)cmd = cpu_to_le32(PAGODA_CMD_HEADER(PAGODA_CMD_SIGNAL_FENCE, 0,
						       PAGODA_JOB_MARKER_BYTES / 4));
	*(__le32 *)(cmd + 4) = 0;
	*(__le64 *)(cmd + 8) = cpu_to_le64(engine->markers_dma + job->slot * sizeof(u64));
	*(__le64 *)(cmd + 16) = cpu_to_le64(job->fence.seqno);
	job->cmd_bytes += PAGODA_JOB_MARKER_BYTES;
}

static void pagoda_ring_write_entry(struct pagoda_engine *engine, unsigned int index, u64 addr,
				    u32 length, u16 context, u16 flags, u64 fence)
{
	u8 *entry = (u8 *)engine->ring + index * PAGODA_RING_ENTRY_SIZE;

	*(__le64 *)(entry + PAGODA_RING_ADDR) = cpu_to_le64(addr);
	*(__le32 *)(entry + PAGODA_RING_LENGTH) = cpu_to_le32(length);
	*(__le16 *)(entry + PAGODA_RING_CONTEXT) = cpu_to_le16(context);
	*(__le16 *)(entry + PAGODA_RING_FLAGS) = cpu_to_le16(flags);
	*(__le64 *)(entry + PAGODA_RING_FENCE) = cpu_to_le64(fence);
	*(__le64 *)(entry + PAGODA_RING_RESERVED) = 0;
}

/* The job's entries; the engine's tail moves past them. */
static void pagoda_ring_write(struct pagoda_engine *engine, struct pagoda_job *job)
{
	u64 buf = engine->bufs_dma + (u64)job->slot * PAGODA_JOB_BUF_SIZE;
	unsigned int i;

	if (job->nr_entries == 2)
		pagoda_ring_write_entry(engine, job->entry, job->user_addr, job->user_length,
					job->context,
					job->user_virtual ? PAGODA_RING_FLAG_VIRTUAL : 0,
					job->fence.seqno - 1);
	pagoda_ring_write_entry(engine, (job->entry + job->nr_entries - 1) % PAGODA_RING_ENTRIES,
				buf, job->cmd_bytes, job->context, PAGODA_RING_FLAG_INTERRUPT,
				job->fence.seqno);
	for (i = 0; i < job->nr_entries; i++) {
		unsigned int e = (job->entry + i) % PAGODA_RING_ENTRIES;

		/* retired: pagoda_engine_wait_slot() waited for a later one */
		if (engine->entry_job[e])
			dma_fence_put(&engine->entry_job[e]->fence);
		engine->entry_job[e] = job;
		dma_fence_get(&job->fence);
	}
	engine->tail = (job->entry + job->nr_entries) % PAGODA_RING_ENTRIES;
}

/**
 * pagoda_job_submit - hand a built job to the engine
 * @job: job from pagoda_job_begin() with at least one command
 *
 * Releases the submit lock (and the exclusive lock pagoda_job_begin() took).
 * The engine owns the job from here.
 *
 * Return: a reference to the job's fence, for the caller to put.
 */
struct dma_fence *pagoda_job_submit(struct pagoda_job *job)
{
	struct pagoda_engine *engine = job->engine;
	struct pagoda_device *pgdev = engine->pgdev;
	bool shared = job->shared;
	unsigned long flags;

	WARN_ON(!job->cmd_bytes && job->nr_entries == 1);
	dma_fence_init(&job->fence, &pagoda_fence_ops, &engine->fence_lock,
		       engine->fence_context, engine->next_seqno++);
	pagoda_job_write_marker(job);
	pagoda_ring_write(engine, job);
	trace_pagoda_job_submit(engine->id, job->fence.seqno, job->cmd_bytes);

	spin_lock_irqsave(&engine->fence_lock, flags);
	if (list_empty(&engine->pending))
		pagoda_engine_arm_tdr(engine);
	list_add_tail(&job->link, &engine->pending);
	spin_unlock_irqrestore(&engine->fence_lock, flags);
	engine->slot_job[job->slot] = job;
	dma_fence_get(&job->fence);	/* one for the slot, one for the caller */
	engine->next_slot = (engine->next_slot + 1) % PAGODA_ENGINE_SLOTS;

	/*
	 * writel() orders the ring and buffer writes before the doorbell;
	 * pagoda_engine_reap() reads the fence after it (DOORBELL_POLL)
	 */
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_RING_TAIL), engine->tail);
	pagoda_write(pgdev, eng_reg(engine, PAGODA_ENG_DOORBELL), 1 | PAGODA_DOORBELL_POLL);
	mutex_unlock(&engine->submit_lock);
	if (shared)
		up_read(&engine->exclusive);
	pagoda_engine_reap(engine);
	return &job->fence;
}

/**
 * pagoda_job_abort - drop a job that was not submitted
 * @job: job from pagoda_job_begin()
 *
 * Releases the submit lock (and the exclusive lock pagoda_job_begin() took).
 */
void pagoda_job_abort(struct pagoda_job *job)
{
	mutex_unlock(&job->engine->submit_lock);
	if (job->shared)
		up_read(&job->engine->exclusive);
	dma_fence_put(job->prev);
	kfree(job);
}

/**
 * pagoda_engine_replay_locked - run again what an adapter reset aborted
 * @engine: the engine, its submit lock held, after an adapter reset (the
 *	device forgot the ring; what retired before was signalled)
 * @guilty: a job not to run again (it hung): it fails with -ETIMEDOUT
 *
 * The ring is programmed again and every pending job is written to it
 * again, in order, with its buffer and its original fence (the model's
 * resubmission of paging buffers).
 */
void pagoda_engine_replay_locked(struct pagoda_engine *engine, struct pagoda_job *guilty)
{
	struct pagoda_job *job, *next;
	unsigned long flags;
	unsigned int e;

	lockdep_assert_held(&engine->submit_lock);
	pagoda_engine_program(engine);
	for (e = 0; e < PAGODA_RING_ENTRIES; e++) {
		if (engine->entry_job[e])
			dma_fence_put(&engine->entry_job[e]->fence);
		engine->entry_job[e] = NULL;
	}
	spin_lock_irqsave(&engine->fence_lock, flags);
	list_for_each_entry_safe(job, next, &engine->pending, link) {
		if (job == guilty) {
			dma_fence_set_error(&job->fence, -ETIMEDOUT);
			list_del_init(&job->link);
			dma_fence_signal_locked(&job->fence);
			continue;
		}
		job->entry = engine->tail;
		pagoda_ring_write(engine, job);
	}
	spin_unlock_irqrestore(&engine->fence_lock, flags);
	if (engine->tail) {
		pagoda_engine_arm_tdr(engine);
		pagoda_write(engine->pgdev, eng_reg(engine, PAGODA_ENG_RING_TAIL), engine->tail);
		pagoda_write(engine->pgdev, eng_reg(engine, PAGODA_ENG_DOORBELL), 1);
	}
}
