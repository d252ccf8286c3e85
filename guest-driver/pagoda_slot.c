// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda context slots
 *
 * The device has PAGODA_NUM_CONTEXTS contexts; an address space that runs
 * a job gets one of them, a slot (struct pagoda_slot): the one it had if
 * nobody took it, else a free one, else the least recently used idle one
 * (no job in flight in it), whose root is then set (CTX_ROOT_*; committing
 * also flushes its TLB entries). Slot 0 is the kernel's. Slots change
 * hands only when idle, so a root never changes under running work.
 *
 * A fault of a user context halts its slot: the engine skips the entries
 * of that slot queued behind, whose jobs fail with -EFAULT like the
 * faulting one. The slot is taken away from its space and resumed and
 * freed once its last job retired; the space's next job gets another
 * slot: other processes never notice.
 *
 * Each GPU of a linked adapter has its own contexts: a space holds a slot
 * of each GPU it runs jobs on (&pagoda_pt_tree.slot), with the root of its
 * tables on that GPU.
 */

#include <drm/drm_drv.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

/* pagoda_slot_get() keeps the slots it skips in a u64 */
static_assert(PAGODA_NUM_CONTEXTS <= 64);

/* Select a context and write one of its registers; &pgdev->ctx_lock taken. */
static void pagoda_ctx_write(struct pagoda_device *pgdev, u32 slot, u32 reg, u32 value)
{
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, slot);
	pagoda_write(pgdev, reg, value);
}

/* Point @slot at @vm's root, or at nothing. Caller holds the slot lock. */
static void pagoda_slot_set_root(struct pagoda_device *pgdev, u32 slot, struct pagoda_vm *vm)
{
	struct pagoda_pt *pt = vm ? pagoda_vm_tree(vm, pgdev)->root : NULL;
	u64 root = pt ? pt->addr : 0;
	u32 entries = pt ? pt->entries : 0;

	/* a space that maps nothing yet (physical-mode jobs only) has no root */
	pgdev->slots[slot].rootless = vm && !pt;
	spin_lock(&pgdev->ctx_lock);
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_LO, lower_32_bits(root));
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_HI, upper_32_bits(root));
	pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_ROOT_ENTRIES, entries);
	spin_unlock(&pgdev->ctx_lock);
}

static bool pagoda_slot_halted(struct pagoda_device *pgdev, u32 slot)
{
	u32 status;

	spin_lock(&pgdev->ctx_lock);
	pagoda_write(pgdev, PAGODA_REG_CTX_SELECT, slot);
	status = pagoda_read(pgdev, PAGODA_REG_CTX_STATUS);
	spin_unlock(&pgdev->ctx_lock);
	return status & PAGODA_CTX_STATUS_HALTED;
}

/* The free slot, or the least recently used idle one, not in @skip; 0 for none. */
static u32 pagoda_slot_pick(struct pagoda_device *pgdev, u64 skip)
{
	u32 slot, best = 0;

	for (slot = 1; slot < pgdev->params.num_contexts; slot++) {
		struct pagoda_slot *s = &pgdev->slots[slot];

		if (s->active || s->draining || (skip & BIT_ULL(slot)))
			continue;
		if (!s->vm)
			return slot;
		if (!best || time_before(s->last_use, pgdev->slots[best].last_use))
			best = slot;
	}
	return best;
}

/**
 * pagoda_slot_get - a slot for one more job of a space
 * @pgdev: the device
 * @vm: the job's space
 *
 * See the DOC block.
 *
 * Return: the slot, or 0 when none is free.
 */
u32 pagoda_slot_get(struct pagoda_device *pgdev, struct pagoda_vm *vm)
{
	unsigned long flags;
	struct pagoda_pt_tree *tree = pagoda_vm_tree(vm, pgdev);
	u64 skip = 0;
	u32 slot;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	slot = tree->slot;
	while (!slot) {
		slot = pagoda_slot_pick(pgdev, skip);
		if (!slot)
			break;
		/* halted by a fault not yet handled: its handler frees it */
		if (pagoda_slot_halted(pgdev, slot)) {
			skip |= BIT_ULL(slot);
			slot = 0;
			continue;
		}
		if (pgdev->slots[slot].vm)
			pagoda_vm_tree(pgdev->slots[slot].vm, pgdev)->slot = 0;
		pgdev->slots[slot].vm = vm;
		tree->slot = slot;
		pagoda_slot_set_root(pgdev, slot, vm);
	}
	/*
	 * Lent while the space had no root (physical-mode jobs only, which
	 * never translate, so the root may be set under them): set it now.
	 */
	if (slot && pgdev->slots[slot].rootless && tree->root)
		pagoda_slot_set_root(pgdev, slot, vm);
	if (slot) {
		pgdev->slots[slot].active++;
		pgdev->slots[slot].last_use = jiffies;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
	return slot;
}

/**
 * pagoda_slot_put - a job of a slot retired
 * @pgdev: the device
 * @slot: its slot; the last job of a draining slot resumes it
 */
void pagoda_slot_put(struct pagoda_device *pgdev, u32 slot)
{
	struct pagoda_slot *s = &pgdev->slots[slot];
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (!WARN_ON(!s->active) && !--s->active && s->draining) {
		if (drm_dev_enter(pgdev->drm, &idx)) {
			spin_lock(&pgdev->ctx_lock);
			pagoda_ctx_write(pgdev, slot, PAGODA_REG_CTX_STATUS,
					 PAGODA_CTX_STATUS_HALTED);
			spin_unlock(&pgdev->ctx_lock);
			pagoda_slot_set_root(pgdev, slot, NULL);
			drm_dev_exit(idx);
		}
		s->draining = false;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/**
 * pagoda_slots_reset - the device forgot every context's root
 * @pgdev: the device, after a reset, with no job in flight
 *
 * Every space's next job sets its root in a slot again.
 */
void pagoda_slots_reset(struct pagoda_device *pgdev)
{
	unsigned long flags;
	u32 slot;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	for (slot = 1; slot < PAGODA_NUM_CONTEXTS; slot++) {
		struct pagoda_slot *s = &pgdev->slots[slot];

		if (s->vm)
			pagoda_vm_tree(s->vm, pgdev)->slot = 0;
		s->vm = NULL;
		s->draining = false;
		WARN_ON(s->active);
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/**
 * pagoda_slot_release_vm - an address space leaves its slot of a GPU
 * @pgdev: the GPU
 * @vm: the space, with no job in flight
 */
void pagoda_slot_release_vm(struct pagoda_device *pgdev, struct pagoda_vm *vm)
{
	struct pagoda_pt_tree *tree = pagoda_vm_tree(vm, pgdev);
	unsigned long flags;
	int idx;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (tree->slot) {
		pgdev->slots[tree->slot].vm = NULL;
		if (drm_dev_enter(pgdev->drm, &idx)) {
			pagoda_slot_set_root(pgdev, tree->slot, NULL);
			drm_dev_exit(idx);
		}
		tree->slot = 0;
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/**
 * pagoda_slot_faulted - a slot is halted by a fault
 * @pgdev: the device
 * @context: the slot
 *
 * It leaves its space (whose next job gets another slot) and is resumed
 * once the jobs in it retired.
 */
void pagoda_slot_faulted(struct pagoda_device *pgdev, u32 context)
{
	struct pagoda_slot *s = &pgdev->slots[context];
	unsigned long flags;

	spin_lock_irqsave(&pgdev->slot_lock, flags);
	if (s->vm) {
		pagoda_vm_tree(s->vm, pgdev)->slot = 0;
		s->vm = NULL;
	}
	if (s->active) {
		s->draining = true;
	} else {
		spin_lock(&pgdev->ctx_lock);
		pagoda_ctx_write(pgdev, context, PAGODA_REG_CTX_STATUS, PAGODA_CTX_STATUS_HALTED);
		spin_unlock(&pgdev->ctx_lock);
		pagoda_slot_set_root(pgdev, context, NULL);
	}
	spin_unlock_irqrestore(&pgdev->slot_lock, flags);
}

/**
 * pagoda_sched_faults_lost - the fault queue dropped records
 * @pgdev: the device, its fault queue drained under &pagoda_device.fault_lock
 *
 * A dropped record still halted its context: every halted user slot not
 * known to be draining is handled as faulted, without a record (no context
 * is banned: the jobs the slot skips fail with -EFAULT).
 */
void pagoda_sched_faults_lost(struct pagoda_device *pgdev)
{
	u32 slot;

	for (slot = 1; slot < PAGODA_NUM_CONTEXTS; slot++) {
		unsigned long flags;
		bool draining;

		spin_lock_irqsave(&pgdev->slot_lock, flags);
		draining = pgdev->slots[slot].draining;
		spin_unlock_irqrestore(&pgdev->slot_lock, flags);
		if (!draining && pagoda_slot_halted(pgdev, slot))
			pagoda_slot_faulted(pgdev, slot);
	}
}
