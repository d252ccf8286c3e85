// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda CPU host aperture
 *
 * Hidden VRAM (segment 2) is not in any BAR: the CPU reaches it through
 * the host aperture, BAR4, a window of slots of the segment page size, each
 * showing one segment page that a MAP_HOST_APERTURE paging job chooses.
 * This file lends slots to CPU faults on allocations in hidden VRAM.
 *
 * A fault on an allocation page finds the slot that shows it, or takes the
 * least recently used slot, zaps the CPU mappings of the allocation page
 * that slot showed before (so that nobody reaches the new page through an
 * old mapping), maps the new page with a paging job and waits for it, then
 * inserts the slot's pfns in the faulting VMA. When the page before the
 * faulting one is shown already (sequential access), the fault maps up to
 * PAGODA_HOST_APERTURE_AHEAD following pages of the allocation too, in the
 * same job.
 *
 * When an allocation moves or is freed its slots are released (TTM has
 * already zapped its CPU mappings, so nothing reaches them): a later fault
 * finds the allocation's new place. After a reset the device's mappings
 * are gone and every slot is released; the reset zapped every CPU mapping
 * already.
 *
 * Locking: &pagoda_host_aperture.lock protects the slots, their LRU list
 * and each allocation's &pagoda_bo.host_aperture_slots. It is taken inside
 * the allocation's reservation (faults and moves hold it), and held while
 * the fault waits for its paging job, which needs no other lock.
 */

#include <linux/mm.h>
#include <linux/pci.h>

#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/drm_vma_manager.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"
#include "pagoda_vram_mgr.h"

/* Pages of an allocation one fault maps beyond the faulting one, at most. */
#define PAGODA_HOST_APERTURE_AHEAD	15

/**
 * pagoda_host_aperture_init - take BAR4 and set up its slots
 * @pgdev: the device, parameters read
 *
 * Return: 0 or a negative errno.
 */
int pagoda_host_aperture_init(struct pagoda_device *pgdev)
{
	struct pci_dev *pdev = pgdev->pdev;
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	struct resource *bar = &pdev->resource[PAGODA_BAR_HOST_APERTURE];
	u32 i;
	int ret;

	ha->count = pgdev->params.host_aperture_pages;
	ha->page_size = pgdev->params.host_aperture_page_size;
	if (!ha->count || ha->page_size != pgdev->segs[PAGODA_SEG_VRAM_HIDDEN].page_size ||
	    resource_size(bar) < pgdev->params.host_aperture_size) {
		pagoda_gpu_err(pgdev, "host aperture of %u pages of %u bytes in BAR%d %pR: unusable\n",
			       ha->count, ha->page_size, PAGODA_BAR_HOST_APERTURE, bar);
		return -ENODEV;
	}
	ret = pcim_request_region(pdev, PAGODA_BAR_HOST_APERTURE, "pagoda");
	if (ret)
		return ret;
	ha->bar_start = bar->start;
	/* allocations outlive the binding and release their slots when they go */
	ha->slots = drmm_kcalloc(pgdev->drm, ha->count, sizeof(*ha->slots), GFP_KERNEL);
	if (!ha->slots)
		return -ENOMEM;
	INIT_LIST_HEAD(&ha->lru);
	for (i = 0; i < ha->count; i++)
		list_add_tail(&ha->slots[i].lru, &ha->lru);
	return drmm_mutex_init(pgdev->drm, &ha->lock);
}

/* Forget what a slot shows; the caller has made sure nothing maps it. */
static void slot_release(struct pagoda_host_aperture *ha, struct pagoda_host_aperture_slot *slot)
{
	xa_erase(&slot->bo->host_aperture_slots, slot->bo_page);
	slot->bo = NULL;
	/* first to be taken again */
	list_move(&slot->lru, &ha->lru);
}

/* Zap the CPU mappings through which a slot shows its allocation page. */
static void slot_zap(struct pagoda_host_aperture *ha, struct pagoda_host_aperture_slot *slot)
{
	struct ttm_buffer_object *tbo = &slot->bo->tbo;

	unmap_mapping_range(tbo->bdev->dev_mapping,
			    drm_vma_node_offset_addr(&tbo->base.vma_node) +
			    (u64)slot->bo_page * ha->page_size, ha->page_size, 1);
}

/**
 * pagoda_host_aperture_release_bo - release the slots of an allocation
 * @pgdev: the device
 * @bo: an allocation that moves or goes, reserved, its CPU mappings zapped
 */
void pagoda_host_aperture_release_bo(struct pagoda_device *pgdev, struct pagoda_bo *bo)
{
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	unsigned long bo_page;
	void *entry;

	if (xa_empty(&bo->host_aperture_slots))
		return;
	mutex_lock(&ha->lock);
	xa_for_each(&bo->host_aperture_slots, bo_page, entry)
		slot_release(ha, &ha->slots[xa_to_value(entry)]);
	mutex_unlock(&ha->lock);
}

/**
 * pagoda_host_aperture_reset - forget every slot after a device reset
 * @pgdev: the device, every CPU mapping of an allocation zapped
 */
void pagoda_host_aperture_reset(struct pagoda_device *pgdev)
{
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	u32 i;

	mutex_lock(&ha->lock);
	for (i = 0; i < ha->count; i++)
		if (ha->slots[i].bo)
			slot_release(ha, &ha->slots[i]);
	mutex_unlock(&ha->lock);
}

/**
 * pagoda_host_aperture_forget - an adapter reset is about to unmap every slot
 * @pgdev: the device
 *
 * Called without the slots' lock (a fault holding it may wait for the
 * paging engine the reset recovers): the slots mapped so far belong to an
 * old generation, which the next fault maps again, and every CPU mapping
 * of an allocation is zapped so that the next access faults.
 */
void pagoda_host_aperture_forget(struct pagoda_device *pgdev)
{
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;

	WRITE_ONCE(ha->generation, ha->generation + 1);
	unmap_mapping_range(pgdev->drm->anon_inode->i_mapping, 0, 0, 1);
}

/*
 * Slots showing allocation pages [first, first + count) of @bo, which is
 * in hidden VRAM: those already mapped are used again, the others take the
 * least recently used slots and are mapped by one paging job, waited for.
 * Returns the slot of each page in @slots.
 */
static int slots_get(struct pagoda_device *pgdev, struct pagoda_bo *bo, u32 first, u32 count,
		     u32 *slots)
{
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	u32 new_slots[PAGODA_HOST_APERTURE_AHEAD + 1], seg_pages[PAGODA_HOST_APERTURE_AHEAD + 1];
	u32 new_pages[PAGODA_HOST_APERTURE_AHEAD + 1];
	struct pagoda_paging_batch batch;
	unsigned int n = 0, i;
	int ret;

	lockdep_assert_held(&ha->lock);
	for (i = 0; i < count; i++) {
		void *entry = xa_load(&bo->host_aperture_slots, first + i);

		/* mapped before an adapter reset, which the device forgot */
		if (entry &&
		    ha->slots[xa_to_value(entry)].generation != READ_ONCE(ha->generation)) {
			slot_release(ha, &ha->slots[xa_to_value(entry)]);
			entry = NULL;
		}
		if (entry) {
			slots[i] = xa_to_value(entry);
			list_move_tail(&ha->slots[slots[i]].lru, &ha->lru);
		} else {
			new_pages[n++] = i;
		}
	}
	for (i = 0; i < n; i++) {
		struct pagoda_host_aperture_slot *slot =
			list_first_entry(&ha->lru, struct pagoda_host_aperture_slot, lru);
		u32 page = first + new_pages[i];

		if (slot->bo) {
			slot_zap(ha, slot);
			slot_release(ha, slot);
			ha->reuses++;
		}
		/* not used by another page of this fault before the job is built */
		list_move_tail(&slot->lru, &ha->lru);
		new_slots[i] = slot - ha->slots;
		seg_pages[i] = pagoda_vram_res_offset(bo->tbo.resource,
						      (u64)page * ha->page_size) / ha->page_size;
		slots[new_pages[i]] = new_slots[i];
	}
	if (!n)
		return 0;

	pagoda_paging_batch_init(&batch, pgdev);
	ret = pagoda_paging_map_host_aperture(&batch, PAGODA_SEG_VRAM_HIDDEN, new_slots,
					      seg_pages, n);
	ret = pagoda_paging_batch_wait(&batch, ret);
	if (ret)
		return ret;

	for (i = 0; i < n; i++) {
		struct pagoda_host_aperture_slot *slot = &ha->slots[new_slots[i]];

		ret = xa_err(xa_store(&bo->host_aperture_slots, first + new_pages[i],
				      xa_mk_value(new_slots[i]), GFP_KERNEL));
		if (ret)
			return ret;
		slot->bo = bo;
		slot->bo_page = first + new_pages[i];
		slot->generation = READ_ONCE(ha->generation);
	}
	ha->maps += n;
	return 0;
}

/**
 * pagoda_host_aperture_fault - CPU fault on an allocation in hidden VRAM
 * @vmf: the fault
 * @bo: the allocation, reserved, in hidden VRAM
 *
 * Return: VM_FAULT_NOPAGE when the page is mapped (or the fault should be
 * retried), VM_FAULT_SIGBUS when it cannot be.
 */
vm_fault_t pagoda_host_aperture_fault(struct vm_fault *vmf, struct pagoda_bo *bo)
{
	struct pagoda_device *pgdev = pagoda_bo_device(bo);
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	struct vm_area_struct *vma = vmf->vma;
	u32 slots[PAGODA_HOST_APERTURE_AHEAD + 1];
	unsigned long page, vma_first, vma_end, addr;
	u32 per_slot = ha->page_size >> PAGE_SHIFT;
	u32 first, count, i;
	vm_fault_t ret = VM_FAULT_NOPAGE;
	pgprot_t prot;
	long wait;

	/* the move that brought it here has finished */
	wait = dma_resv_wait_timeout(bo->tbo.base.resv, DMA_RESV_USAGE_KERNEL, true,
				     MAX_SCHEDULE_TIMEOUT);
	if (wait < 0)
		return VM_FAULT_NOPAGE;

	/* CPU pages of the allocation this VMA covers: [vma_first, vma_end) */
	vma_first = vma->vm_pgoff - drm_vma_node_start(&bo->tbo.base.vma_node);
	vma_end = min(vma_first + vma_pages(vma), PFN_UP(bo->tbo.base.size));
	page = vma_first + ((vmf->address - vma->vm_start) >> PAGE_SHIFT);
	if (page >= vma_end)
		return VM_FAULT_SIGBUS;

	first = page / per_slot;
	mutex_lock(&ha->lock);
	/* read ahead when the access looks sequential: the page before is shown */
	count = 1;
	if (first && xa_load(&bo->host_aperture_slots, first - 1)) {
		count = min_t(u32, PAGODA_HOST_APERTURE_AHEAD + 1,
			      DIV_ROUND_UP(vma_end, per_slot) - first);
		/* never more than a quarter of the slots for one fault */
		count = min(count, max(ha->count / 4, 1u));
	}
	if (slots_get(pgdev, bo, first, count, slots)) {
		mutex_unlock(&ha->lock);
		return VM_FAULT_SIGBUS;
	}
	prot = pgprot_decrypted(pgprot_writecombine(vma->vm_page_prot));
	for (i = 0; i < count; i++) {
		unsigned long pfn = (ha->bar_start + (u64)slots[i] * ha->page_size) >> PAGE_SHIFT;
		unsigned long p = (first + i) * per_slot, last = p + per_slot;

		for (; p < last && p < vma_end; p++, pfn++) {
			if (p < vma_first)
				continue;
			addr = vma->vm_start + ((p - vma_first) << PAGE_SHIFT);
			ret = vmf_insert_pfn_prot(vma, addr, pfn, prot);
			/* only the faulting page's failure matters */
			if (ret & VM_FAULT_ERROR) {
				if (p == page)
					goto out;
				ret = VM_FAULT_NOPAGE;
			}
		}
	}
out:
	mutex_unlock(&ha->lock);
	return ret;
}

/**
 * pagoda_host_aperture_stats - slot use, for debugfs and benchmarks
 * @pgdev: the device
 * @maps: out: segment pages mapped into slots so far
 * @reuses: out: how many of those took a slot from another page
 * @used: out: slots showing a page now
 */
void pagoda_host_aperture_stats(struct pagoda_device *pgdev, u64 *maps, u64 *reuses, u32 *used)
{
	struct pagoda_host_aperture *ha = &pgdev->host_aperture;
	u32 i;

	mutex_lock(&ha->lock);
	*maps = ha->maps;
	*reuses = ha->reuses;
	*used = 0;
	for (i = 0; i < ha->count; i++)
		*used += !!ha->slots[i].bo;
	mutex_unlock(&ha->lock);
}
