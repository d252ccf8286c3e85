/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pagoda GPU virtual address spaces, their page tables, GPU contexts and
 * the device's context slots. See the DOC blocks of pagoda_vm.c,
 * pagoda_pt.c, pagoda_sched.c, pagoda_context.c, pagoda_slot.c,
 * pagoda_recovery.c and pagoda_syncobj.c.
 */
#ifndef PAGODA_VM_H
#define PAGODA_VM_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <drm/drm_gpuvm.h>
#include <drm/drm_mm.h>
#include <drm/gpu_scheduler.h>

#include <pagoda/pagoda_hw.h>

#include "pagoda_bo.h"
#include "pagoda_paging.h"

struct dma_fence;
struct drm_exec;
struct drm_file;
struct pagoda_bo;
struct pagoda_device;
struct pagoda_link;
struct pagoda_vm;

/* Entries of a table below the root, and its bytes. */
#define PAGODA_PT_ENTRIES		512
#define PAGODA_PT_SIZE			SZ_4K
/* A LEAF64 table: one entry per 64 KiB tile of its 2 MiB span. */
#define PAGODA_TILE_SIZE		SZ_64K
#define PAGODA_PT_LEAF64_ENTRIES	(SZ_2M / PAGODA_TILE_SIZE)
/*
 * Bytes of a space's first page-table allocation (a chunk), and the most a
 * chunk has: each new chunk of a space is twice the one before.
 */
#define PAGODA_PT_CHUNK_MIN		SZ_64K
#define PAGODA_PT_CHUNK_MAX		SZ_2M

/**
 * struct pagoda_pt_chunk - an allocation holding page tables of one space
 *	on one GPU
 * @link: in &pagoda_pt_tree.chunks
 * @vm: the space
 * @tree: its tables on that GPU
 * @seq: its rank among the chunks of @tree, from 0
 * @twin: on another GPU than the link's first, the first GPU's chunk of
 *	the same rank: this one is placed where it is, when it can
 *	(pagoda_pt.c)
 * @bo: the allocation; it shares the space's reservation, under which it
 *	moves (eviction, coming back)
 * @swapped: TTM swapped its pages out since the space's tables were last
 *	restored; under the space's reservation
 * @count: tables it holds
 * @nr_free: of which free
 * @free: bitmap of @count bits, bit i set: table i of the chunk is free
 * @tables: the tables in it, by index
 */
struct pagoda_pt_chunk {
	struct list_head link;
	struct pagoda_vm *vm;
	struct pagoda_pt_tree *tree;
	u32 seq;
	struct pagoda_pt_chunk *twin;
	struct pagoda_bo *bo;
	bool swapped;
	u32 count;
	u32 nr_free;
	unsigned long *free;
	struct pagoda_pt **tables;
};

/**
 * struct pagoda_pt - one page table
 * @chunk: the allocation it lives in
 * @bo: or its own allocation (a root of more than 512 entries)
 * @addr: its device physical address; changes when its chunk moves, under
 *	the space's reservation
 * @entries: its entries: 512, more for a resizable root, 32 for a LEAF64 table
 * @index: its table in @chunk
 * @level: 0 for a leaf table
 * @fresh: allocated, its entries not yet written invalid by the device
 *	and its parent entry not yet pointing to it
 * @moved: its chunk moved: its parent entry still names the old place
 * @leaf64: a LEAF64 leaf table, of 64 KiB pages (a tiled reservation's)
 * @used: valid entries
 * @children: the tables its entries point to (levels above 0), by index;
 *	at level 1 an entry may be a 2 MiB page instead (pagoda_pt.c)
 * @spare: in &pagoda_pt_tree.spares while a spare
 */
struct pagoda_pt {
	struct pagoda_pt_chunk *chunk;
	struct pagoda_bo *bo;
	u64 addr;
	u32 entries;
	u16 index;
	u8 level;
	bool fresh;
	bool moved;
	bool leaf64;
	u32 used;
	struct pagoda_pt **children;
	struct list_head spare;
};

/**
 * struct pagoda_pt_tree - an address space on one GPU: its page tables there
 *	and the device context it runs in
 * @vm: the space
 * @gpu: the GPU; its tables are in its segments, written by its paging
 *	engine
 * @root: the root table, NULL until the first mapping
 * @chunks: its page-table allocations, those with free tables first
 * @nr_chunks: chunks made
 * @chunk_bytes: size of its next chunk
 * @spares: leaf tables made for one update, to replace 2 MiB pages it
 *	splits or rewrites; freed when it ends
 * @large_ptes: entry of each 2 MiB page, by VA >> 21 (xa_mk_value())
 * @leaf_hint: the leaf table last walked to, linked in; NULL once freed.
 *	Binds of tiles walk to the same leaf table again and again: they
 *	start here
 * @leaf_hint_span: the 2 MiB span @leaf_hint maps, VA >> 21
 * @tables: tables in use, per level
 * @leaf64_tables: LEAF64 tables among the leaf tables
 * @last_update: fence of the last update of these tables; the space's
 *	jobs on @gpu wait for it
 * @slot: the context of @gpu that runs the space's work, 0 for none;
 *	under &pagoda_device.slot_lock
 * @chunks_closed: tables come only from chunks made already (the tree is
 *	being written on another CPU, which cannot place allocations)
 *
 * Under &pagoda_vm.lock but @slot; while a request of an update runs
 * (pagoda_vm_update_each_tree()), by the CPU that runs it. Every GPU of a link has one tree per
 * space, updated together: the same tables, at their own addresses, with
 * entries that differ where one GPU reaches memory as a peer
 * (pagoda_pt.c).
 */
struct pagoda_pt_tree {
	struct pagoda_vm *vm;
	struct pagoda_device *gpu;
	struct pagoda_pt *root;
	struct list_head chunks;
	u32 nr_chunks;
	u32 chunk_bytes;
	struct list_head spares;
	struct xarray large_ptes;
	struct pagoda_pt *leaf_hint;
	u64 leaf_hint_span;
	u32 tables[PAGODA_MMU_MAX_LEVELS];
	u32 leaf64_tables;
	struct dma_fence *last_update;
	u32 slot;
	bool chunks_closed;
};

struct pagoda_vm_update;

/* A request of an update for one tree and its batch (pagoda_pt_helper.c). */
typedef int (*pagoda_tree_fn)(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			      void *arg);

/**
 * struct pagoda_vm_helper - writes a link's other trees on another CPU
 *	(pagoda_pt_helper.c)
 * @work: the helper, on @cpu's high-priority pool; on the caller's stack
 *	with its update
 * @state: the request's PAGODA_HELPER_*: moved to TAKEN by whoever runs it
 * @running: @work is queued or running: asking queues it only when not
 * @fn: the request
 * @arg: its argument
 * @ret: its result, for the other trees
 * @vm: the space; NULL until the first request, and after the update closed
 * @update: the update holding it
 * @cpu: the CPU it runs on
 * @closed: the update is done: the helper leaves
 * @alone: no other CPU was online: the caller writes every tree
 *
 * The caller writes @fn, @arg before it marks the request ASKED and reads
 * @ret after it saw DONE; the helper the other way round.
 */
struct pagoda_vm_helper {
	struct work_struct work;
	atomic_t state;
	atomic_t running;
	pagoda_tree_fn fn;
	void *arg;
	int ret;
	struct pagoda_vm *vm;
	struct pagoda_vm_update *update;
	unsigned int cpu;
	bool closed;
	bool alone;
};

/**
 * struct pagoda_vm_update - one update of a space's tables: a paging batch
 *	on every GPU of its link, in step (pagoda_pt.c)
 * @batch: by GPU (&pagoda_device.adapter)
 * @helper: on a link, writes the other GPUs' trees on another CPU
 */
struct pagoda_vm_update {
	struct pagoda_paging_batch batch[PAGODA_LINK_MAX_ADAPTERS];
	struct pagoda_vm_helper helper;
};

/**
 * struct pagoda_fault - a fault record of a context
 * @va: PAGODA_REG_FAULT_VA
 * @code: PAGODA_FAULT_*
 * @access: PAGODA_ACCESS_*
 * @level: page-table level, 0xff when not a walk
 * @engine: engine id
 */
struct pagoda_fault {
	u64 va;
	u32 code;
	u32 access;
	u32 level;
	u32 engine;
};

/**
 * struct pagoda_vm - a GPU virtual address space (one per DRM file)
 * @gpuvm: the mappings, with their allocations' links and eviction state
 * @link: the adapter
 * @lock: serialises everything that changes the space: reservations,
 *	mappings, page tables. Taken before allocation reservations and
 *	before the paging engines' submit locks.
 * @reservations: reserved VA ranges (struct pagoda_va_reservation)
 * @pt: the space on each GPU of @link, by &pagoda_device.adapter
 * @num_pt: GPUs of @link
 * @levels: page-table levels (PAGODA_REG_MMU_LEVELS)
 * @root_entries: entries of the root (made or to be made)
 * @max_root_entries: most entries the root may have
 * @va_end: end of the VA range the largest root covers
 * @root_at: where the first GPU's root of its own allocation (2 levels,
 *	more than 512 entries) was put, if @root_at_valid: the other GPUs'
 *	go there if they can
 * @root_at_valid: @root_at is one piece of VRAM or hidden VRAM
 * @rebind: links (struct pagoda_vm_bo) whose mappings are to be
 *	rewritten, under @lock
 * @place_step: how the current drm_exec transaction places allocations
 *	(pagoda_vm_place()): 0 into the preferred segment, then into any
 *	placement; each transaction ended by a failed placement takes the
 *	next. Under @lock
 * @dying: being torn down: mappings go without writing tables
 * @lost: a table update failed part-way: the space takes no more work
 * @pt_moved: a chunk of its tables moved or was swapped out since the
 *	tables were last restored: set under the space's reservation (TTM's
 *	move and swap_notify), acted on before the next job or bind
 * @leaf64: tiled reservations are mapped in LEAF64 tables (the device has
 *	them and its memory segments have 64 KiB pages)
 * @faults: faults of its jobs so far
 * @last_fault: the last of them (debugfs); written in the fault interrupt
 * @link_node: in &pagoda_link.vm_list
 * @busy_ns: time each engine spent on the space's work (fdinfo)
 * @bind_lock: protects @bind_queue and @bind_seqno (pagoda_bind_queue.c);
 *	a spinlock taken with interrupts off, before the in-fences' locks
 * @bind_queue: queued binds (struct pagoda_bind_job), oldest first
 * @bind_work: runs the queued binds whose fences signalled
 * @bind_idle: woken when a queued bind leaves the queue
 * @bind_context: the fence context of the queued binds' fences
 * @bind_seqno: the last queued bind's fence seqno
 */
struct pagoda_vm {
	struct drm_gpuvm gpuvm;
	struct pagoda_link *link;
	struct mutex lock; /* see @lock above */
	struct drm_mm reservations;
	struct pagoda_pt_tree pt[PAGODA_LINK_MAX_ADAPTERS];
	u32 num_pt;
	u32 levels;
	u32 root_entries;
	u32 max_root_entries;
	u64 va_end;
	struct pagoda_bo_at root_at;
	bool root_at_valid;
	struct list_head rebind;
	u32 place_step;
	bool dying;
	bool lost;
	bool pt_moved;
	bool leaf64;
	u32 faults;
	struct pagoda_fault last_fault;
	struct list_head link_node;
	atomic64_t busy_ns[PAGODA_NUM_ENGINES];
	spinlock_t bind_lock; /* see @bind_lock above */
	struct list_head bind_queue;
	struct work_struct bind_work;
	wait_queue_head_t bind_idle;
	u64 bind_context;
	u64 bind_seqno;
};

/* Each tree of @vm: the space on each GPU of its link. */
#define pagoda_vm_for_each_tree(vm, tree) \
	for ((tree) = (vm)->pt; (tree) < (vm)->pt + (vm)->num_pt; (tree)++)

/* The tree of @vm on @gpu. */
#define pagoda_vm_tree(vm, gpu)	(&(vm)->pt[(gpu)->adapter])

/**
 * struct pagoda_va_reservation - a reserved VA range
 * @node: its range in &pagoda_vm.reservations
 * @tiled: a tiled resource (DRM_PAGODA_VM_TILED): mapped in whole 64 KiB
 *	tiles, in LEAF64 tables where &pagoda_vm.leaf64
 */
struct pagoda_va_reservation {
	struct drm_mm_node node;
	bool tiled;
};

/**
 * struct pagoda_vma - a mapping
 * @base: range, allocation and offset (no allocation for a zero mapping)
 * @pte_flags: PAGODA_PTE_* protections of its pages
 * @instance: of a linked allocation, which GPU's instance each GPU's
 *	entries name (&drm_pagoda_vm_op.instance: 0 its own, i + 1 GPU i's)
 * @link: in a list of mappings being released
 */
struct pagoda_vma {
	struct drm_gpuva base;
	u64 pte_flags;
	u32 instance;
	struct list_head link;
};

/**
 * struct pagoda_gpu_ctx - a GPU context of a file
 * @id: its handle in &pagoda_file.contexts
 * @vm: the file's address space (a reference on its gpuvm)
 * @gpu: the GPU of the link whose engines run its jobs
 * @entity: its scheduler entity on @gpu's render engine
 * @priority: DRM_PAGODA_PRIORITY_*
 * @submit_lock: serialises the context's submissions, so that no job of
 *	it comes between the portions of a split DMA buffer (pagoda_phys.c);
 *	taken before &pagoda_vm.lock
 * @banned: set when one of its jobs faulted: its later jobs are cancelled
 * @fault: the first fault, valid once @banned
 * @reset_guilty: one of its jobs hung and was stopped by a reset
 * @reset_innocent: a reset stopped jobs of it, which ran again
 * @resets: resets that stopped its jobs
 * @last_reset: &pagoda_device.reset_seq of the last of them
 * @refcount: the file's handle and each job hold one
 *
 * The reset fields are written by the recovery (&pagoda_device.recovery_lock).
 */
struct pagoda_gpu_ctx {
	u32 id;
	struct pagoda_vm *vm;
	struct pagoda_device *gpu;
	struct drm_sched_entity entity;
	u32 priority;
	struct mutex submit_lock; /* see @submit_lock above */
	bool banned;
	struct pagoda_fault fault;
	bool reset_guilty;
	bool reset_innocent;
	u64 resets;
	u64 last_reset;
	struct kref refcount;
};

/**
 * struct pagoda_render_job - a user job on the render engine
 * @base: the scheduler's job
 * @ctx: its context (a reference)
 * @cmd_va: VA of its command buffer (virtual mode)
 * @phys_addr: or the device physical address of a portion of a DMA buffer
 *	the kernel copied and patched (physical mode, pagoda_phys.c)
 * @cmd_size: bytes
 * @physical: runs @phys_addr in physical mode
 * @split_last: the last portion of a split buffer
 * @split: for a portion of a split buffer, the buffer's barrier (a
 *	reference): see pagoda_phys.c
 * @hw_fence: the engine's fence of its last run (a reference), for the
 *	recovery to tell a job a reset aborted from one that retired
 * @slot: the device context it ran in
 * @slot_cb: releases @slot when @hw_fence signals
 * @run_ns: when it was handed to the engine
 * @started: the scheduler ran it (or dropped it: its run failed)
 * @queued: pushed without a direct run and not yet handed to the engine
 *	(counted in &pagoda_device.render_queued)
 * @direct: the engine fence of its run by SUBMIT itself, before the
 *	scheduler took it (a reference, handed to the scheduler by run_job):
 *	see pagoda_sched.c, Direct submission; under
 *	&pagoda_device.render_direct_lock
 * @direct_link: in &pagoda_device.render_direct while @direct is set
 */
struct pagoda_render_job {
	struct drm_sched_job base;
	struct pagoda_gpu_ctx *ctx;
	u64 cmd_va;
	u64 phys_addr;
	u32 cmd_size;
	bool physical;
	bool split_last;
	struct dma_fence *split;
	struct dma_fence *hw_fence;
	u32 slot;
	struct dma_fence_cb slot_cb;
	u64 run_ns;
	bool started;
	bool queued;
	struct dma_fence *direct;
	struct list_head direct_link;
};

static inline struct pagoda_render_job *to_render_job(struct drm_sched_job *sched_job)
{
	return container_of(sched_job, struct pagoda_render_job, base);
}

/**
 * struct pagoda_slot - one of the device's contexts, as the driver lends it
 * @vm: the space whose root it holds, or NULL
 * @active: jobs in flight in it; the root changes only at 0
 * @last_use: jiffies of the last job given it, for LRU stealing
 * @draining: a fault halted it: it is resumed and freed once @active
 *	reaches 0 (the engine skipped the jobs behind the fault)
 * @rootless: lent to @vm before it had a root (for physical-mode jobs):
 *	its root is set when a job finds the space has one
 */
struct pagoda_slot {
	struct pagoda_vm *vm;
	u32 active;
	unsigned long last_use;
	bool draining;
	bool rootless;
};

static inline struct pagoda_vm *to_pagoda_vm(struct drm_gpuvm *gpuvm)
{
	return container_of(gpuvm, struct pagoda_vm, gpuvm);
}

/* pagoda_pt.c */
void pagoda_pt_init(struct pagoda_vm *vm);
void pagoda_pt_fini(struct pagoda_vm *vm);
int pagoda_pt_alloc_range(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va,
			  u64 size, struct pagoda_bo *bo, u64 offset, u32 instance, bool leaf64);
int pagoda_pt_prepare_clear(struct pagoda_vm *vm, u64 va, u64 size);
void pagoda_pt_put_spares(struct pagoda_vm *vm);
int pagoda_pt_map(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va, u64 size,
		  struct pagoda_bo *bo, u64 offset, u64 pte_flags, u32 instance, bool rewrite);
int pagoda_pt_clear(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va, u64 size,
		    bool keep);
int pagoda_pt_resize_root(struct pagoda_vm *vm, u64 extent);
void pagoda_pt_chunk_moved(struct pagoda_pt_chunk *chunk);
void pagoda_pt_chunk_swapped(struct pagoda_pt_chunk *chunk);
int pagoda_pt_restore(struct pagoda_vm *vm);

/* pagoda_vm.c */
int pagoda_vm_module_init(void);
void pagoda_vm_module_exit(void);
struct pagoda_vm *pagoda_vm_create(struct pagoda_link *link);
void pagoda_vm_destroy(struct pagoda_vm *vm);
int pagoda_vm_prepare_job(struct pagoda_vm *vm, struct pagoda_device *gpu, struct drm_exec *exec,
			  struct drm_sched_job *job);
void pagoda_vm_update_init(struct pagoda_vm *vm, struct pagoda_vm_update *update, bool staged);
int pagoda_vm_update_each_tree(struct pagoda_vm *vm, struct pagoda_vm_update *update,
			       pagoda_tree_fn fn, void *arg, bool share);
void pagoda_vm_update_close(struct pagoda_vm_update *update);
int pagoda_vm_update_done(struct pagoda_vm *vm, struct pagoda_vm_update *update, int ret);
struct dma_fence *pagoda_vm_last_update(struct pagoda_vm *vm);
void pagoda_vm_bo_moved(struct pagoda_bo *bo);
int pagoda_vm_place(struct pagoda_vm *vm, struct pagoda_bo *bo);
int pagoda_vm_place_failed(struct pagoda_vm *vm, int ret);
int pagoda_vm_check_exec(struct pagoda_vm *vm, u64 va, u64 size);
struct drm_pagoda_sync;
struct dma_fence_chain;
int pagoda_syncobj_signal(struct drm_file *file, const struct drm_pagoda_sync *sync,
			  struct dma_fence_chain **chain, struct dma_fence *fence);
int pagoda_ioctl_vm_bind(struct drm_device *drm, void *data, struct drm_file *file);
struct drm_gem_object;
struct drm_gpuvm_bo;
struct drm_pagoda_vm_op;
struct drm_pagoda_vm_bind;
int pagoda_vm_bind_run(struct pagoda_vm *vm, struct drm_pagoda_vm_op *ops,
		       struct drm_gem_object **objs, u32 count, u32 *done,
		       struct dma_fence **fence);
void pagoda_vm_put_objs(struct drm_gem_object **objs, u32 count);
struct drm_gpuvm_bo *pagoda_vm_bo_get(struct pagoda_vm *vm, struct drm_gem_object *obj);
void pagoda_vm_bo_put(struct drm_gpuvm_bo *vm_bo);
void pagoda_bind_queue_init(struct pagoda_vm *vm);
void pagoda_bind_queue_work(struct work_struct *work);
int pagoda_bind_queue_push(struct drm_file *file, struct pagoda_vm *vm,
			   const struct drm_pagoda_vm_bind *args, struct drm_pagoda_vm_op *ops,
			   struct drm_gem_object **objs, u32 count, struct dma_fence **fence);
int pagoda_bind_queue_wait_idle(struct pagoda_vm *vm);
void pagoda_bind_queue_fini(struct pagoda_vm *vm);
struct seq_file;
void pagoda_vm_debugfs_show(struct seq_file *m, struct pagoda_vm *vm);

/* pagoda_sched.c: render jobs and submission */
int pagoda_sched_init(struct pagoda_device *pgdev);
int pagoda_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
struct pagoda_render_job *pagoda_render_job_create(struct pagoda_gpu_ctx *ctx);
void pagoda_render_job_free(struct pagoda_render_job *job);
struct dma_fence *pagoda_render_run_job(struct drm_sched_job *sched_job);
void pagoda_render_push(struct pagoda_render_job *job);
void pagoda_render_queue(struct pagoda_render_job *job);
void pagoda_split_barrier_signal(struct pagoda_device *pgdev, struct dma_fence *barrier);

/* pagoda_slot.c: the device's contexts lent to address spaces */
u32 pagoda_slot_get(struct pagoda_device *pgdev, struct pagoda_vm *vm);
void pagoda_slot_put(struct pagoda_device *pgdev, u32 slot);
void pagoda_slot_release_vm(struct pagoda_device *pgdev, struct pagoda_vm *vm);
void pagoda_slots_reset(struct pagoda_device *pgdev);
void pagoda_slot_faulted(struct pagoda_device *pgdev, u32 context);
void pagoda_sched_faults_lost(struct pagoda_device *pgdev);

/* pagoda_context.c: GPU contexts */
void pagoda_sched_fault(struct pagoda_device *pgdev, u32 context, u64 fence,
			const struct pagoda_fault *fault);
int pagoda_ioctl_ctx_create(struct drm_device *drm, void *data, struct drm_file *file);
int pagoda_ioctl_ctx_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int pagoda_ioctl_ctx_query(struct drm_device *drm, void *data, struct drm_file *file);
void pagoda_file_close_contexts(struct drm_file *file);
struct pagoda_file;
struct pagoda_gpu_ctx *pagoda_gpu_ctx_lookup(struct pagoda_file *pfile, u32 id);
void pagoda_gpu_ctx_put(struct pagoda_gpu_ctx *ctx);
void pagoda_gpu_ctx_ban(struct pagoda_gpu_ctx *ctx);

/* pagoda_recovery.c: hung jobs and engine and adapter resets */
enum drm_gpu_sched_stat pagoda_render_timedout_job(struct drm_sched_job *sched_job);
struct pagoda_job;
void pagoda_recover_adapter(struct pagoda_device *pgdev, struct pagoda_job *guilty);

/* pagoda_syncobj.c: a submission's syncobjs */
/**
 * struct pagoda_submit_syncs - a submission's syncobjs, resolved before the
 *	point of no return (pagoda_submit_syncs_get())
 * @in: the in-syncobjs the job waits for
 * @in_fences: their fences (references)
 * @out: the out-syncobjs that receive its fence
 * @chains: a timeline chain node for each out-syncobj with a point
 * @in_count: entries of @in
 * @out_count: entries of @out and @chains
 */
struct pagoda_submit_syncs {
	struct drm_pagoda_sync *in;
	struct dma_fence **in_fences;
	struct drm_pagoda_sync *out;
	struct dma_fence_chain **chains;
	u32 in_count;
	u32 out_count;
};

int pagoda_submit_syncs_get(struct drm_file *file, u64 in, u32 in_count, u64 out, u32 out_count,
			    struct pagoda_submit_syncs *syncs);
void pagoda_submit_syncs_signal(struct drm_file *file, struct pagoda_submit_syncs *syncs,
				struct dma_fence *fence);
int pagoda_submit_syncs_wait(struct pagoda_render_job *job, struct pagoda_submit_syncs *syncs);
void pagoda_submit_syncs_put(struct pagoda_submit_syncs *syncs);

#endif /* PAGODA_VM_H */
