// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: A link's page tables written on two CPUs
 *
 * On a link every change to a space's mappings is written into each GPU's
 * tree of tables by the CPU, the same walk once per GPU: a bind on two
 * GPUs cost its caller twice what it costs on one. So an update of a
 * linked space has a helper (struct pagoda_vm_helper): a work item on
 * another CPU, in that CPU's high-priority pool, that writes the other
 * GPUs' trees while the caller writes the first GPU's
 * (pagoda_vm_update_each_tree()). The trees share nothing but the mapping
 * they follow (each GPU has its own tables, batch, spares and large-page
 * index), and the caller waits for the helper's part before it returns:
 * seen from outside, a request ran on one CPU, in order. The mapped
 * allocations stay reserved by the caller meanwhile.
 *
 * A request is one slot. The caller fills it and marks it ASKED; whoever
 * moves it to TAKEN runs it: the helper, or the caller itself when its own
 * tree is written before the helper took the request (the other CPU was
 * asleep or busy: the caller never waits for work it can do). The helper
 * stays up for a while after a request (a bind's operations come tens of
 * microseconds apart, and waking a CPU costs about as much), then leaves;
 * the update's end (pagoda_vm_update_done()) closes it. With one CPU
 * online, or one GPU, the caller writes every tree itself, as before.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/wait_bit.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

/* How long the helper waits for the next request before it leaves. */
#define PAGODA_HELPER_LINGER_NS		(100 * NSEC_PER_USEC)
/* How long the caller spins for a request the helper runs, then sleeps. */
#define PAGODA_HELPER_SPIN_NS		(100 * NSEC_PER_USEC)

enum {
	PAGODA_HELPER_IDLE,
	PAGODA_HELPER_ASKED,
	PAGODA_HELPER_TAKEN,
	PAGODA_HELPER_DONE,
};

/* The request for every tree but the first. */
static int pagoda_helper_run(struct pagoda_vm_helper *h)
{
	struct pagoda_vm *vm = h->vm;
	struct pagoda_pt_tree *tree;
	int ret;

	for (tree = vm->pt + 1; tree < vm->pt + vm->num_pt; tree++) {
		ret = h->fn(tree, &h->update->batch[tree - vm->pt], h->arg);
		if (ret)
			return ret;
	}
	return 0;
}

static void pagoda_helper_work(struct work_struct *work)
{
	struct pagoda_vm_helper *h = container_of(work, struct pagoda_vm_helper, work);
	u64 idle_since = ktime_get_ns();

	while (!READ_ONCE(h->closed)) {
		if (atomic_read(&h->state) == PAGODA_HELPER_ASKED &&
		    atomic_cmpxchg(&h->state, PAGODA_HELPER_ASKED,
				   PAGODA_HELPER_TAKEN) == PAGODA_HELPER_ASKED) {
			h->ret = pagoda_helper_run(h);
			atomic_set_release(&h->state, PAGODA_HELPER_DONE);
			wake_up_var(&h->state);
			idle_since = ktime_get_ns();
			continue;
		}
		if (ktime_get_ns() - idle_since > PAGODA_HELPER_LINGER_NS)
			break;
		pagoda_spin();
	}
	/* a request asked meanwhile is the caller's to run, or queues it again */
	atomic_set_release(&h->running, 0);
}

/* The other CPU the helper runs on; false when there is none. */
static bool pagoda_helper_start(struct pagoda_vm_helper *h, struct pagoda_vm *vm,
				struct pagoda_vm_update *update)
{
	unsigned int cpu = cpumask_any_but(cpu_online_mask, raw_smp_processor_id());

	if (cpu >= nr_cpu_ids)
		return false;
	h->vm = vm;
	h->update = update;
	h->cpu = cpu;
	atomic_set(&h->state, PAGODA_HELPER_IDLE);
	atomic_set(&h->running, 0);
	INIT_WORK_ONSTACK(&h->work, pagoda_helper_work);
	return true;
}

/* Wait for the helper to finish the request it took; its result. */
static int pagoda_helper_join(struct pagoda_vm_helper *h)
{
	u64 start = ktime_get_ns();

	while (atomic_read_acquire(&h->state) != PAGODA_HELPER_DONE) {
		if (ktime_get_ns() - start > PAGODA_HELPER_SPIN_NS) {
			wait_var_event(&h->state,
				       atomic_read_acquire(&h->state) == PAGODA_HELPER_DONE);
			break;
		}
		pagoda_spin();
	}
	return h->ret;
}

/**
 * pagoda_vm_update_each_tree - run a request on every tree of a space
 * @vm: the space, its lock held
 * @update: the update the request writes into (each tree its own batch)
 * @fn: the request for one tree and its batch; touches nothing of the
 *	other trees
 * @arg: what @fn needs, unchanged until this returns
 * @share: the request is worth another CPU (false: too small to pay for
 *	the hand-over; every tree's part runs here)
 *
 * The first tree's part runs here; on a link, if @share, the other trees'
 * run on another CPU meanwhile (DOC above), or here after it when no other
 * CPU took them first.
 *
 * Return: the first tree's error, else the first of the others'.
 */
int pagoda_vm_update_each_tree(struct pagoda_vm *vm, struct pagoda_vm_update *update,
			       pagoda_tree_fn fn, void *arg, bool share)
{
	struct pagoda_vm_helper *h = &update->helper;
	int ret, others;

	if (share && vm->num_pt > 1 && !h->vm && !h->alone &&
	    !pagoda_helper_start(h, vm, update))
		h->alone = true;
	if (!share || !h->vm) {
		struct pagoda_pt_tree *tree;

		pagoda_vm_for_each_tree(vm, tree) {
			ret = fn(tree, &update->batch[tree - vm->pt], arg);
			if (ret)
				return ret;
		}
		return 0;
	}
	h->fn = fn;
	h->arg = arg;
	atomic_set_release(&h->state, PAGODA_HELPER_ASKED);
	/* a running helper takes it; otherwise the one queued here will */
	if (!atomic_xchg(&h->running, 1))
		queue_work_on(h->cpu, system_highpri_wq, &h->work);
	ret = fn(vm->pt, &update->batch[0], arg);
	if (atomic_cmpxchg(&h->state, PAGODA_HELPER_ASKED,
			   PAGODA_HELPER_TAKEN) == PAGODA_HELPER_ASKED)
		others = pagoda_helper_run(h);
	else
		others = pagoda_helper_join(h);
	atomic_set(&h->state, PAGODA_HELPER_IDLE);
	return ret ?: others;
}

/**
 * pagoda_vm_update_close - let go of an update's helper
 * @update: the update, its requests all returned
 */
void pagoda_vm_update_close(struct pagoda_vm_update *update)
{
	struct pagoda_vm_helper *h = &update->helper;

	if (!h->vm)
		return;
	WRITE_ONCE(h->closed, true);
	cancel_work_sync(&h->work);
	destroy_work_on_stack(&h->work);
	h->vm = NULL;
}
