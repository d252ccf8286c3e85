/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda engines: the driver side of a ring, its kernel jobs and their
 * fences. See the DOC block of pagoda_engine.c.
 */
#ifndef PAGODA_ENGINE_H
#define PAGODA_ENGINE_H

#include <linux/dma-fence.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct pagoda_device;

/* Job buffers per engine. */
#define PAGODA_ENGINE_SLOTS		64
/* Ring entries per engine: a job takes one, or two with a virtual entry. */
#define PAGODA_RING_ENTRIES		(2 * PAGODA_ENGINE_SLOTS)
/* Bytes of one job buffer. */
#define PAGODA_JOB_BUF_SIZE		SZ_16K
/* Bytes the driver ends every job with: a SIGNAL_FENCE to the slot's marker. */
#define PAGODA_JOB_MARKER_BYTES		24
/* Bytes of commands and page lists one kernel job carries. */
#define PAGODA_JOB_CAPACITY		(PAGODA_JOB_BUF_SIZE - PAGODA_JOB_MARKER_BYTES)
/* GPU context of kernel jobs; user address spaces never get it. */
#define PAGODA_KERNEL_CONTEXT		0

/**
 * struct pagoda_job - one ring entry's worth of kernel work
 * @fence: signalled when the engine retires the entry; its error is set
 *	when the engine lost the entry (reset, unplug)
 * @link: in &pagoda_engine.pending while not signalled
 * @engine: the engine it runs on
 * @slot: its buffer (and marker)
 * @entry: its first ring entry
 * @nr_entries: ring entries it takes: 1, or 2 when it runs a user's
 *	buffer before its own (pagoda_job_set_user())
 * @context: GPU context of its ring entries
 * @user_addr: with 2 entries: address of the user's buffer run first
 * @user_length: its bytes
 * @user_virtual: @user_addr is a VA of @context (else physical)
 * @incomplete_error: error of the fence when the job retired without its
 *	marker written: -EIO for kernel work, which should not fail
 * @owner: for a user's job, its GPU context (struct pagoda_gpu_ctx)
 * @cmds: CPU address of the buffer; commands grow from its start
 * @cmd_bytes: bytes of commands written
 * @list_bytes: bytes of page lists, taken from the end of the buffer
 * @prev: the fence of the job before it in the same request (a paging
 *	batch), or NULL; a failure of that job fails this one too, so that
 *	the fence of a request's last job tells about the whole request
 * @shared: its builder holds &pagoda_engine.exclusive for reading
 *
 * Built by one submitter between pagoda_job_begin() and pagoda_job_submit()
 * while it holds &pagoda_engine.submit_lock; after submission only @fence
 * and @link are used, under &pagoda_engine.fence_lock.
 */
struct pagoda_job {
	struct dma_fence fence;
	struct list_head link;
	struct pagoda_engine *engine;
	unsigned int slot;
	unsigned int entry;
	unsigned int nr_entries;
	u16 context;
	u64 user_addr;
	u32 user_length;
	bool user_virtual;
	int incomplete_error;
	void *owner;
	u8 *cmds;
	u32 cmd_bytes;
	u32 list_bytes;
	struct dma_fence *prev;
	bool shared;
};

/**
 * struct pagoda_engine - one of the device's engines as the driver runs it
 * @pgdev: the device
 * @id: PAGODA_ENGINE_PAGING or PAGODA_ENGINE_RENDER
 * @name: for fences and messages
 * @ring: the ring (PAGODA_RING_ENTRIES entries) in coherent system memory
 * @ring_dma: its bus address (the device's segment 0 address)
 * @bufs: PAGODA_ENGINE_SLOTS job buffers of PAGODA_JOB_BUF_SIZE bytes
 * @bufs_dma: their bus address
 * @markers: PAGODA_ENGINE_SLOTS u64s in coherent memory; the last command
 *	of each job writes its seqno to its slot's marker, so a job retired
 *	without its marker written did not complete (a fault stopped it, or
 *	its context was halted). One more u64 after them is the fence
 *	writeback (ENG_FENCE_WB): where the device writes ENG_FENCE
 * @markers_dma: their bus address
 * @fence_context: dma_fence context of the engine's jobs
 * @exclusive: the paging engine's kernel jobs are built holding it for
 *	reading (pagoda_job_begin() to pagoda_job_submit() or
 *	pagoda_job_abort()); pagoda_engine_exclusive_begin() takes it for
 *	writing and waits for the engine to be idle, so that a job which
 *	faults on purpose (debugfs ``paging_fault``) halts the kernel context
 *	with no one else's job queued behind it: the engine would retire those
 *	unrun. Taken before @submit_lock. Render jobs never run in the kernel
 *	context and do not take it.
 * @exclusive_owner: the task holding @exclusive for writing, whose own jobs
 *	do not take it again; NULL otherwise
 * @submit_lock: serialises submitters: taken by pagoda_job_begin(), released
 *	by pagoda_job_submit() or pagoda_job_abort(). Protects @tail,
 *	@next_slot, @next_seqno, @slot_job, @entry_job and the ring memory.
 *	May sleep (waiting for a free slot); never taken in interrupt context.
 * @tail: next ring entry to fill
 * @next_slot: job buffer of the next job
 * @next_seqno: fence of the next job
 * @slot_job: the job last submitted with each buffer (a reference), so
 *	that a buffer is reused only after its job retired
 * @entry_job: likewise for each ring entry
 * @fence_lock: the lock of every fence of the engine; also protects
 *	@pending. Taken in the engine's interrupt handler.
 * @pending: submitted jobs whose fence is not signalled, oldest first
 * @last_retire_ns: when the engine last retired a job, under @fence_lock:
 *	what a job's time on the engine is counted from, at the earliest
 * @running: the ring is programmed; cleared before a reset or unplug
 * @tdr: the paging engine's watchdog: runs when its oldest job made no
 *	progress for pagoda_hang_timeout() (pagoda_reset.c); re-armed at each
 *	retirement. The render engine's is drm_sched's.
 */
struct pagoda_engine {
	struct pagoda_device *pgdev;
	unsigned int id;
	const char *name;
	void *ring;
	dma_addr_t ring_dma;
	u8 *bufs;
	dma_addr_t bufs_dma;
	__le64 *markers;
	dma_addr_t markers_dma;
	u64 fence_context;

	struct rw_semaphore exclusive; /* see @exclusive above */
	struct task_struct *exclusive_owner;

	struct mutex submit_lock; /* see @submit_lock above */
	u32 tail;
	u32 next_slot;
	u64 next_seqno;
	struct pagoda_job *slot_job[PAGODA_ENGINE_SLOTS];
	struct pagoda_job *entry_job[PAGODA_RING_ENTRIES];

	spinlock_t fence_lock; /* see @fence_lock above */
	struct list_head pending;
	u64 last_retire_ns;
	bool running;
	struct delayed_work tdr;
};

int pagoda_engine_init(struct pagoda_device *pgdev, struct pagoda_engine *engine,
		       unsigned int id);
void pagoda_engine_start(struct pagoda_engine *engine);
void pagoda_engine_stop(struct pagoda_engine *engine, int error);
void pagoda_engine_abort_locked(struct pagoda_engine *engine, int error);
void pagoda_engine_replay_locked(struct pagoda_engine *engine, struct pagoda_job *guilty);
void pagoda_engine_fini(struct pagoda_engine *engine);
u64 pagoda_engine_read_fence(struct pagoda_engine *engine);
u64 pagoda_engine_written_fence(struct pagoda_engine *engine);
bool pagoda_engine_incomplete_upto(struct pagoda_engine *engine, u64 retired);
void pagoda_engine_retire_upto(struct pagoda_engine *engine, u64 retired);
void pagoda_engine_retire(struct pagoda_engine *engine);
int pagoda_engine_idle(struct pagoda_engine *engine, long timeout);
void pagoda_engine_exclusive_begin(struct pagoda_engine *engine);
void pagoda_engine_exclusive_end(struct pagoda_engine *engine);
struct pagoda_job *pagoda_engine_oldest(struct pagoda_engine *engine);
bool pagoda_engine_busy(struct pagoda_engine *engine);
void pagoda_engine_reap(struct pagoda_engine *engine);
void pagoda_engine_fault(struct pagoda_engine *engine, u32 context);
bool pagoda_context_halted(struct pagoda_device *pgdev, u32 context);
u64 pagoda_engine_busy_since(struct pagoda_engine *engine, u64 submit_ns);

struct pagoda_job *pagoda_job_begin(struct pagoda_engine *engine);
void pagoda_job_set_user(struct pagoda_job *job, u16 context, u64 addr, u32 length,
			 bool virtual);
void *pagoda_job_reserve(struct pagoda_job *job, u32 bytes);
void *pagoda_job_reserve_list(struct pagoda_job *job, u32 bytes, u64 *bus_addr);
struct dma_fence *pagoda_job_submit(struct pagoda_job *job);
void pagoda_job_abort(struct pagoda_job *job);

#endif /* PAGODA_ENGINE_H */
