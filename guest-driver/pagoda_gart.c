// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda aperture segment (GART)
 *
 * Segment 3 makes scattered system pages look contiguous to the device: it
 * is what a physically accessed allocation uses while it lives in system
 * memory (the model's "mapped when resident"). The driver keeps it as TTM's
 * TTM_PL_TT memory type over a range manager of 4 KiB aperture pages: an
 * allocation in TTM_PL_TT has system pages (its struct pagoda_tt) and a
 * contiguous range of the aperture that maps them.
 *
 * The table is one coherent DMA buffer in system memory, programmed into
 * GART_BASE/GART_ENTRIES at probe and after every reset (its contents
 * survive a reset: they are in guest memory). It starts zeroed: every
 * entry invalid. An invalid entry is the device's dummy mapping (reads
 * zero, writes dropped, no fault: docs/hardware.md 3.1), so the driver's
 * dummy mapping for an unused entry is simply an invalid one, which
 * UNMAP_APERTURE writes. The CPU never writes the table: entries change
 * only through MAP_APERTURE/UNMAP_APERTURE jobs of the paging engine, in
 * order with the moves that fill or empty the pages.
 *
 * An allocation's range is mapped by the move that brings it into
 * TTM_PL_TT and unmapped (in the same paging batch, after the copy out if
 * any) by the move that takes it out; when an allocation is freed while in
 * TTM_PL_TT its range is unmapped, and the unmap waited for, before its
 * pages go back to the system (delete_mem_notify).
 */

#include <linux/dma-mapping.h>

#include <drm/drm_print.h>
#include <drm/ttm/ttm_range_manager.h>
#include <drm/ttm/ttm_resource.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"

/* Largest table the driver allocates: 2 MiB of entries map 1 GiB. */
#define PAGODA_GART_TABLE_MAX	SZ_2M

/**
 * pagoda_gart_program - point the device at the table
 * @pgdev: the device, registers mapped
 */
void pagoda_gart_program(struct pagoda_device *pgdev)
{
	struct pagoda_gart *gart = &pgdev->gart;

	pagoda_write(pgdev, PAGODA_REG_GART_BASE_LO, lower_32_bits(gart->table_dma));
	pagoda_write(pgdev, PAGODA_REG_GART_BASE_HI, upper_32_bits(gart->table_dma));
	pagoda_write(pgdev, PAGODA_REG_GART_ENTRIES, gart->entries);
}

/**
 * pagoda_gart_init - allocate the table and the aperture's memory type
 * @pgdev: the device, segments read
 *
 * The table lives as long as the PCI binding (managed DMA memory); the
 * TTM memory type as long as the TTM device.
 *
 * Return: 0 or a negative errno.
 */
int pagoda_gart_init(struct pagoda_device *pgdev)
{
	struct pagoda_gart *gart = &pgdev->gart;
	u64 entries = pgdev->segs[PAGODA_SEG_APERTURE].size / PAGODA_GART_PAGE_SIZE;

	/* the rest of a larger aperture maps the dummy page, unused */
	gart->entries = min_t(u64, entries, PAGODA_GART_TABLE_MAX / sizeof(u64));
	if (!gart->entries)
		return -ENODEV;
	gart->table = dmam_alloc_coherent(&pgdev->pdev->dev, gart->entries * sizeof(u64),
					  &gart->table_dma, GFP_KERNEL);
	if (!gart->table)
		return -ENOMEM;
	pagoda_gart_program(pgdev);

	/* resources count in CPU pages, which are aperture pages */
	BUILD_BUG_ON(PAGE_SIZE != PAGODA_GART_PAGE_SIZE);
	return ttm_range_man_init(&pgdev->bdev, TTM_PL_TT, true, gart->entries);
}

/**
 * pagoda_gart_fini - tear the aperture's memory type down
 * @pgdev: the device, every allocation freed
 */
void pagoda_gart_fini(struct pagoda_device *pgdev)
{
	ttm_range_man_fini(&pgdev->bdev, TTM_PL_TT);
}

/**
 * pagoda_gart_bind - map an allocation's pages at its aperture range
 * @batch: the paging batch of the move
 * @res: a TTM_PL_TT resource
 * @ptt: the allocation's pages, populated and mapped for the device
 *
 * Return: 0 or a negative errno from the paging engine.
 */
int pagoda_gart_bind(struct pagoda_paging_batch *batch, struct ttm_resource *res,
		     struct pagoda_tt *ptt)
{
	if (!ptt->mapped)
		return -ENODEV;
	return pagoda_paging_map_aperture(batch, res->start, ptt->dma, ptt->tt.num_pages);
}

/**
 * pagoda_gart_unbind - point an aperture range back at the dummy page
 * @batch: the paging batch of the move
 * @res: a TTM_PL_TT resource
 *
 * Return: 0 or a negative errno from the paging engine.
 */
int pagoda_gart_unbind(struct pagoda_paging_batch *batch, struct ttm_resource *res)
{
	return pagoda_paging_unmap_aperture(batch, res->start, PFN_UP(res->size));
}

/**
 * pagoda_gart_unbind_now - unmap an aperture range and wait for it
 * @pgdev: the device
 * @res: a TTM_PL_TT resource about to be freed with its pages
 *
 * When the device is gone (or the job fails) there is nothing left to
 * unmap: its table went with the binding.
 */
void pagoda_gart_unbind_now(struct pagoda_device *pgdev, struct ttm_resource *res)
{
	struct pagoda_paging_batch batch;

	pagoda_paging_batch_init(&batch, pgdev);
	pagoda_paging_batch_wait(&batch, pagoda_gart_unbind(&batch, res));
}

/**
 * pagoda_gart_usage - occupancy of the aperture segment
 * @pgdev: the device
 * @entries: out: entries the table has
 * @used: out: entries allocations hold
 */
void pagoda_gart_usage(struct pagoda_device *pgdev, u64 *entries, u64 *used)
{
	struct ttm_resource_manager *man = ttm_manager_type(&pgdev->bdev, TTM_PL_TT);

	*entries = pgdev->gart.entries;
	*used = ttm_resource_manager_usage(man) / PAGODA_GART_PAGE_SIZE;
}
