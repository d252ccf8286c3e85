// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda bind queue
 *
 * A VM_BIND with DRM_PAGODA_VM_BIND_QUEUE is a queue operation, as
 * Vulkan's vkQueueBindSparse and D3D12's UpdateTileMappings on a queue
 * are: the call checks its operations, queues them on its address space
 * and returns; they run once the fences of its in-syncobjs have signalled
 * and the space's earlier queued binds have run, and its out-syncobj gets
 * a fence (&pagoda_bind_job.done, on the space's own timeline) that
 * signals once the GPU sees their changes. A render job that reads what a
 * bind maps waits for that fence, not for the CPU.
 *
 * Each queued bind (struct pagoda_bind_job) keeps its checked operations
 * and the allocations they map (held), and links those allocations to the
 * space at once (pagoda_vm_bo_get()): from then on every job of the space
 * locks, validates and fences them, so a job submitted behind the bind
 * finds them resident and keeps them so while it runs, although the bind
 * has not mapped them yet. A callback on each in-fence counts them down;
 * the last one queues the space's worker (&pagoda_vm.bind_work), which
 * runs the binds at the queue's head whose fences have all signalled,
 * in order, each as a VM_BIND call would (pagoda_vm_bind_run()), then
 * signals its fence once the space's last page-table update has. An error
 * that stops a bind (an in-fence's error, a state error such as ENOENT,
 * no memory) goes to its fence; the operations before it ran. A VM_BIND
 * without the flag waits for the queue to empty first, so binds stay in
 * order.
 *
 * Locking: &pagoda_vm.bind_lock (a spinlock, taken with interrupts off:
 * before the in-fences' locks) protects &pagoda_vm.bind_queue and
 * &pagoda_vm.bind_seqno; the worker runs a bind with no lock of the
 * queue held. A bind stays on the queue while it runs, so that waiting
 * for an empty queue waits for it too.
 *
 * Teardown (the file closed): the in-fence callbacks are removed, the
 * worker is cancelled (one running finishes its bind), and every bind
 * still queued is dropped, its fence signalled with -ECANCELED.
 */

#include <linux/dma-fence.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gpuvm.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

/*
 * A bind's fence. Its lock is its own: the fence may outlive the space
 * (a syncobj holds it), and a signalled fence's lock is still taken (its
 * status read). Freed by dma_fence's release (base first).
 */
struct pagoda_bind_fence {
	struct dma_fence base;
	spinlock_t lock; /* the fence's own, nothing else */
};

/* A callback on an in-fence of a bind. */
struct pagoda_bind_in {
	struct dma_fence_cb cb;
	struct pagoda_bind_job *job;
};

/**
 * struct pagoda_bind_job - a queued VM_BIND
 * @link: in &pagoda_vm.bind_queue
 * @vm: the space
 * @ops: its operations, checked
 * @objs: the allocations MAP operations name, held
 * @links: their links to the space, made when queued (one reference each)
 * @count: entries of @ops, @objs and @links
 * @in: the in-syncobjs' fences (references)
 * @in_cbs: a callback on each
 * @in_count: entries of @in and @in_cbs
 * @waiting: fences not signalled yet, plus one while it is being queued
 * @done: its fence, the out-syncobj's
 * @done_cb: on the space's last update once it ran, to signal @done
 */
struct pagoda_bind_job {
	struct list_head link;
	struct pagoda_vm *vm;
	struct drm_pagoda_vm_op *ops;
	struct drm_gem_object **objs;
	struct drm_gpuvm_bo **links;
	u32 count;
	struct dma_fence **in;
	struct pagoda_bind_in *in_cbs;
	u32 in_count;
	atomic_t waiting;
	struct dma_fence *done;
	struct dma_fence_cb done_cb;
};

static const char *pagoda_bind_fence_driver(struct dma_fence *fence)
{
	return "pagoda";
}

static const char *pagoda_bind_fence_timeline(struct dma_fence *fence)
{
	return "vm-bind";
}

static const struct dma_fence_ops pagoda_bind_fence_ops = {
	.get_driver_name = pagoda_bind_fence_driver,
	.get_timeline_name = pagoda_bind_fence_timeline,
};

/**
 * pagoda_bind_queue_init - an empty bind queue for a new space
 * @vm: the space
 */
void pagoda_bind_queue_init(struct pagoda_vm *vm)
{
	spin_lock_init(&vm->bind_lock);
	INIT_LIST_HEAD(&vm->bind_queue);
	INIT_WORK(&vm->bind_work, pagoda_bind_queue_work);
	init_waitqueue_head(&vm->bind_idle);
	vm->bind_context = dma_fence_context_alloc(1);
}

/* Free what a bind holds but its fence; the fence goes with its callback. */
static void pagoda_bind_job_release(struct pagoda_bind_job *job)
{
	u32 i;

	for (i = 0; job->links && i < job->count; i++)
		if (job->links[i])
			pagoda_vm_bo_put(job->links[i]);
	pagoda_vm_put_objs(job->objs, job->count);
	for (i = 0; i < job->in_count; i++)
		dma_fence_put(job->in[i]);
	kvfree(job->links);
	kvfree(job->ops);
	kfree(job->in);
	kfree(job->in_cbs);
}

/* Signal @job's fence, with @error if not 0, and free the job. */
static void pagoda_bind_job_signal(struct pagoda_bind_job *job, int error)
{
	if (error)
		dma_fence_set_error(job->done, error);
	dma_fence_signal(job->done);
	dma_fence_put(job->done);
	kfree(job);
}

static void pagoda_bind_job_updated(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct pagoda_bind_job *job = container_of(cb, struct pagoda_bind_job, done_cb);

	pagoda_bind_job_signal(job, fence->error);
}

static void pagoda_bind_job_in_signalled(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct pagoda_bind_job *job = container_of(cb, struct pagoda_bind_in, cb)->job;

	if (atomic_dec_and_test(&job->waiting))
		queue_work(system_unbound_wq, &job->vm->bind_work);
}

/* The first error among @job's in-fences, all signalled. */
static int pagoda_bind_job_in_error(struct pagoda_bind_job *job)
{
	u32 i;

	for (i = 0; i < job->in_count; i++)
		if (job->in[i]->error)
			return job->in[i]->error;
	return 0;
}

/*
 * Run @job (the queue's head, its fences signalled) and take it off the
 * queue; its fence signals once the space's last update after it has.
 */
static void pagoda_bind_job_run(struct pagoda_bind_job *job)
{
	struct pagoda_vm *vm = job->vm;
	struct dma_fence *fence = NULL;
	int ret;
	u32 done;

	ret = pagoda_bind_job_in_error(job);
	if (!ret)
		ret = pagoda_vm_bind_run(vm, job->ops, job->objs, job->count, &done, &fence);
	pagoda_bind_job_release(job);
	spin_lock_irq(&vm->bind_lock);
	list_del(&job->link);
	spin_unlock_irq(&vm->bind_lock);
	wake_up_all(&vm->bind_idle);

	if (ret == -ERESTARTSYS)
		ret = -EINTR;
	if (ret)
		dma_fence_set_error(job->done, ret);
	if (!fence || dma_fence_add_callback(fence, &job->done_cb, pagoda_bind_job_updated))
		pagoda_bind_job_signal(job, fence ? fence->error : 0);
	dma_fence_put(fence);
}

/* The queue's head if its fences have all signalled, else NULL. */
static struct pagoda_bind_job *pagoda_bind_queue_ready(struct pagoda_vm *vm)
{
	struct pagoda_bind_job *job;

	spin_lock_irq(&vm->bind_lock);
	job = list_first_entry_or_null(&vm->bind_queue, struct pagoda_bind_job, link);
	if (job && atomic_read(&job->waiting))
		job = NULL;
	spin_unlock_irq(&vm->bind_lock);
	return job;
}

/**
 * pagoda_bind_queue_work - run the binds at the head of a space's queue
 * @work: &pagoda_vm.bind_work
 *
 * Stops at the first bind still waiting for a fence: that fence's
 * callback queues the work again.
 */
void pagoda_bind_queue_work(struct work_struct *work)
{
	struct pagoda_vm *vm = container_of(work, struct pagoda_vm, bind_work);
	struct pagoda_bind_job *job;

	while ((job = pagoda_bind_queue_ready(vm)))
		pagoda_bind_job_run(job);
}

/* Take the in-syncobjs' fences of @args for @job. */
static int pagoda_bind_job_get_in(struct drm_file *file, struct pagoda_bind_job *job,
				  const struct drm_pagoda_vm_bind *args)
{
	struct pagoda_submit_syncs syncs;
	int ret;

	ret = pagoda_submit_syncs_get(file, args->in_syncs, args->in_count, 0, 0, &syncs);
	if (!ret && syncs.in_count) {
		job->in_cbs = kcalloc(syncs.in_count, sizeof(*job->in_cbs), GFP_KERNEL);
		job->in = kcalloc(syncs.in_count, sizeof(*job->in), GFP_KERNEL);
		if (!job->in_cbs || !job->in)
			ret = -ENOMEM;
	}
	for (; !ret && job->in_count < syncs.in_count; job->in_count++) {
		job->in[job->in_count] = dma_fence_get(syncs.in_fences[job->in_count]);
		job->in_cbs[job->in_count].job = job;
	}
	pagoda_submit_syncs_put(&syncs);
	return ret;
}

/* Link the allocations @job maps to its space, so its jobs keep them resident. */
static int pagoda_bind_job_link(struct pagoda_bind_job *job)
{
	u32 i;

	job->links = kvcalloc(job->count, sizeof(*job->links), GFP_KERNEL);
	if (!job->links)
		return -ENOMEM;
	for (i = 0; i < job->count; i++) {
		if (!job->objs[i])
			continue;
		job->links[i] = pagoda_vm_bo_get(job->vm, job->objs[i]);
		if (IS_ERR(job->links[i])) {
			int ret = PTR_ERR(job->links[i]);

			job->links[i] = NULL;
			return ret;
		}
	}
	return 0;
}

/**
 * pagoda_bind_queue_push - queue a checked VM_BIND
 * @file: the caller's file
 * @vm: its space
 * @args: the call's argument, checked
 * @ops: its operations, checked; the queue takes them on success
 * @objs: the allocations they map, held; likewise
 * @count: entries of @ops and @objs
 * @fence: out: the bind's fence (a reference), for the out-syncobj
 *
 * Return: 0, -EINVAL for an in-syncobj with flags or no fence, -ENOENT
 * for an unknown one, -EFAULT, -ENOMEM, -ENODEV once the file closes.
 */
int pagoda_bind_queue_push(struct drm_file *file, struct pagoda_vm *vm,
			   const struct drm_pagoda_vm_bind *args, struct drm_pagoda_vm_op *ops,
			   struct drm_gem_object **objs, u32 count, struct dma_fence **fence)
{
	struct pagoda_bind_fence *done;
	struct pagoda_bind_job *job;
	int ret;
	u32 i;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	done = kzalloc(sizeof(*done), GFP_KERNEL);
	if (!job || !done) {
		kfree(job);
		kfree(done);
		return -ENOMEM;
	}
	job->vm = vm;
	job->objs = objs;
	job->count = count;
	ret = pagoda_bind_job_get_in(file, job, args);
	if (!ret)
		ret = pagoda_bind_job_link(job);
	if (ret) {
		/* the caller keeps @ops and @objs */
		job->objs = NULL;
		pagoda_bind_job_release(job);
		kfree(done);
		kfree(job);
		return ret;
	}
	job->ops = ops;
	atomic_set(&job->waiting, job->in_count + 1);
	spin_lock_init(&done->lock);
	job->done = &done->base;

	spin_lock_irq(&vm->bind_lock);
	dma_fence_init(job->done, &pagoda_bind_fence_ops, &done->lock, vm->bind_context,
		       ++vm->bind_seqno);
	list_add_tail(&job->link, &vm->bind_queue);
	spin_unlock_irq(&vm->bind_lock);
	*fence = dma_fence_get(job->done);

	for (i = 0; i < job->in_count; i++)
		if (dma_fence_add_callback(job->in[i], &job->in_cbs[i].cb,
					   pagoda_bind_job_in_signalled))
			atomic_dec(&job->waiting);
	if (atomic_dec_and_test(&job->waiting))
		queue_work(system_unbound_wq, &vm->bind_work);
	return 0;
}

/**
 * pagoda_bind_queue_wait_idle - wait until a space's queued binds have run
 * @vm: the space
 *
 * Return: 0, or -ERESTARTSYS when a signal came first.
 */
int pagoda_bind_queue_wait_idle(struct pagoda_vm *vm)
{
	return wait_event_interruptible(vm->bind_idle, list_empty_careful(&vm->bind_queue));
}

/**
 * pagoda_bind_queue_fini - drop a closing space's queued binds
 * @vm: the space, its file closing
 *
 * Binds still waiting for a fence do not run: their fences signal with
 * -ECANCELED. One the worker is running finishes first.
 */
void pagoda_bind_queue_fini(struct pagoda_vm *vm)
{
	struct pagoda_bind_job *job, *next;
	LIST_HEAD(dropped);
	u32 i;

	/* after this no callback queues the work: each ran, or never will */
	spin_lock_irq(&vm->bind_lock);
	list_for_each_entry(job, &vm->bind_queue, link)
		for (i = 0; i < job->in_count; i++)
			dma_fence_remove_callback(job->in[i], &job->in_cbs[i].cb);
	spin_unlock_irq(&vm->bind_lock);
	cancel_work_sync(&vm->bind_work);
	spin_lock_irq(&vm->bind_lock);
	list_splice_init(&vm->bind_queue, &dropped);
	spin_unlock_irq(&vm->bind_lock);
	list_for_each_entry_safe(job, next, &dropped, link) {
		pagoda_bind_job_release(job);
		pagoda_bind_job_signal(job, -ECANCELED);
	}
}
