// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda residency
 *
 * The model's MakeResident and Evict, per DRM file (process): making a
 * list of allocations resident validates each into the segments the GPU
 * reaches (its preferred segment first, evicting others if it must) and
 * pins it there; every MakeResident is counted per file and allocation,
 * and the allocation is unpinned (evictable again) when the file's count
 * drops to 0 by as many Evicts, or when the file closes its handle.
 *
 * Each file has a budget: the bytes it may keep resident at once (no
 * limit by default). A MakeResident that would exceed it fails with
 * ENOSPC and reports the bytes to trim, changing nothing.
 *
 * Both operations are all or nothing: arguments are checked and handles
 * looked up first, and a validation that fails part-way unpins what this
 * call pinned.
 */

#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"

/* One allocation a file keeps resident, and how many times. */
struct pagoda_residency {
	struct list_head link;
	struct pagoda_bo *bo;
	unsigned int count;
};

static struct pagoda_residency *find(struct pagoda_file *pfile, struct pagoda_bo *bo)
{
	struct pagoda_residency *r;

	list_for_each_entry(r, &pfile->resident, link)
		if (r->bo == bo)
			return r;
	return NULL;
}

/**
 * pagoda_residency_count - how many times a file keeps an allocation resident
 * @pfile: the file's state
 * @bo: the allocation
 *
 * Return: the count, 0 when not resident for this file.
 */
unsigned int pagoda_residency_count(struct pagoda_file *pfile, struct pagoda_bo *bo)
{
	struct pagoda_residency *r;
	unsigned int count;

	mutex_lock(&pfile->lock);
	r = find(pfile, bo);
	count = r ? r->count : 0;
	mutex_unlock(&pfile->lock);
	return count;
}

/* The instances of @bo: itself, or every GPU's of a linked allocation. */
static u32 instances(const struct pagoda_bo *bo)
{
	return max(bo->num_instances, 1u);
}

/*
 * Place @bo where the GPU reaches it (pagoda_bo_place()) and pin it there;
 * a linked allocation's instances on every GPU (they share its reservation).
 */
static int pin_resident(struct pagoda_bo *bo)
{
	struct ttm_operation_ctx ctx = { .interruptible = true };
	int ret;
	u32 i;

	ret = ttm_bo_reserve(&bo->tbo, true, false, NULL);
	if (ret)
		return ret;
	ret = pagoda_bo_place(bo, &ctx);
	for (i = 0; !ret && i < instances(bo); i++)
		ttm_bo_pin(&pagoda_bo_instance(bo, i)->tbo);
	ttm_bo_unreserve(&bo->tbo);
	return ret;
}

/*
 * ttm_bo_unreserve() puts the unpinned allocation back on its LRU, where
 * eviction finds it: ttm_bo_unpin() alone leaves it on the pinned list.
 * Pinned outside its preferred segment (there was no room there), it is
 * validated again before the next job of each space that maps it, which
 * brings it back if there is room now.
 */
static void unpin(struct pagoda_bo *bo)
{
	u32 i;

	WARN_ON(ttm_bo_reserve(&bo->tbo, false, false, NULL));
	for (i = 0; i < instances(bo); i++) {
		struct pagoda_bo *instance = pagoda_bo_instance(bo, i);

		ttm_bo_unpin(&instance->tbo);
		if (!instance->tbo.pin_count &&
		    instance->tbo.resource->mem_type != instance->places[0].mem_type)
			pagoda_vm_bo_moved(instance);
		/* the other instances back on their GPUs' LRUs (the first's: below) */
		if (i)
			ttm_bo_move_to_lru_tail_unlocked(&instance->tbo);
	}
	ttm_bo_unreserve(&bo->tbo);
}

/* Drop one count of @r; the last one unpins and forgets it. */
static void put_residency(struct pagoda_file *pfile, struct pagoda_residency *r)
{
	if (--r->count)
		return;
	pfile->resident_bytes -= r->bo->tbo.base.size;
	unpin(r->bo);
	list_del(&r->link);
	kfree(r);
}

static int make_resident(struct pagoda_file *pfile, struct drm_gem_object **objs,
			 unsigned int count, u64 *bytes_to_trim)
{
	struct pagoda_residency **added;
	unsigned int i, n_added = 0;
	u64 new_bytes = 0;
	int ret = 0;

	for (i = 0; i < count; i++)
		if (!find(pfile, gem_to_pagoda_bo(objs[i])))
			new_bytes += objs[i]->size;
	if (pfile->budget && pfile->resident_bytes + new_bytes > pfile->budget) {
		*bytes_to_trim = pfile->resident_bytes + new_bytes - pfile->budget;
		return -ENOSPC;
	}

	added = kvcalloc(count, sizeof(*added), GFP_KERNEL);
	if (!added)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		struct pagoda_bo *bo = gem_to_pagoda_bo(objs[i]);
		struct pagoda_residency *r = find(pfile, bo);

		if (!r) {
			r = kzalloc(sizeof(*r), GFP_KERNEL);
			if (!r) {
				ret = -ENOMEM;
				break;
			}
			ret = pin_resident(bo);
			if (ret) {
				kfree(r);
				break;
			}
			r->bo = bo;
			list_add_tail(&r->link, &pfile->resident);
			pfile->resident_bytes += objs[i]->size;
		}
		r->count++;
		added[n_added++] = r;
	}
	if (ret)
		while (n_added--)
			put_residency(pfile, added[n_added]);
	kvfree(added);
	return ret;
}

static int evict(struct pagoda_file *pfile, struct drm_gem_object **objs, unsigned int count)
{
	unsigned int i, j, uses;

	/* every handle must hold a count for each time it is named */
	for (i = 0; i < count; i++) {
		struct pagoda_residency *r = find(pfile, gem_to_pagoda_bo(objs[i]));

		for (uses = 0, j = 0; j < count; j++)
			uses += objs[j] == objs[i];
		if (!r || r->count < uses)
			return -EINVAL;
	}
	for (i = 0; i < count; i++)
		put_residency(pfile, find(pfile, gem_to_pagoda_bo(objs[i])));
	return 0;
}

/**
 * pagoda_ioctl_residency - DRM_IOCTL_PAGODA_RESIDENCY
 * @drm: the DRM device
 * @data: struct drm_pagoda_residency
 * @file: the caller's file, whose residency changes
 *
 * Return: 0; -EINVAL for a count of 0 or above DRM_PAGODA_RESIDENCY_MAX,
 * an unknown op, or an EVICT of what the file does not keep resident;
 * -ENOENT for a handle the file does not hold; -EFAULT when the handles
 * cannot be read; -ENOSPC over the budget (bytes_to_trim set) or when no
 * segment has room; -ENOMEM; -ENODEV after unplug. Nothing changes on error.
 */
int pagoda_ioctl_residency(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_pagoda_residency *args = data;
	struct drm_gem_object **objs = NULL;
	int ret, idx;

	args->bytes_to_trim = 0;
	if (!args->count || args->count > DRM_PAGODA_RESIDENCY_MAX ||
	    (args->op != DRM_PAGODA_MAKE_RESIDENT && args->op != DRM_PAGODA_EVICT))
		return -EINVAL;
	ret = drm_gem_objects_lookup(file, u64_to_user_ptr(args->handles), args->count, &objs);
	if (ret)
		goto out_put;
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_put;
	}
	/* the allocations may be any GPU's */
	ret = pagoda_link_resets_read_lock(to_pagoda_link(drm));
	if (!ret) {
		mutex_lock(&pfile->lock);
		if (args->op == DRM_PAGODA_MAKE_RESIDENT)
			ret = make_resident(pfile, objs, args->count, &args->bytes_to_trim);
		else
			ret = evict(pfile, objs, args->count);
		mutex_unlock(&pfile->lock);
		pagoda_link_resets_read_unlock(to_pagoda_link(drm));
	}
	drm_dev_exit(idx);
out_put:
	/* the DRM core copies bytes_to_trim out with the error too */
	if (objs) {
		unsigned int i;

		for (i = 0; i < args->count; i++)
			if (objs[i])
				drm_gem_object_put(objs[i]);
		kvfree(objs);
	}
	return ret;
}

/**
 * pagoda_residency_close - a file's handle of an allocation goes
 * @obj: the allocation
 * @file: the file
 *
 * Whatever the file kept resident of it is released.
 */
void pagoda_residency_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct pagoda_residency *r;

	mutex_lock(&pfile->lock);
	r = find(pfile, gem_to_pagoda_bo(obj));
	if (r) {
		r->count = 1;
		put_residency(pfile, r);
	}
	mutex_unlock(&pfile->lock);
}

/**
 * pagoda_ioctl_set_budget - DRM_IOCTL_PAGODA_SET_BUDGET
 * @drm: the DRM device
 * @data: struct drm_pagoda_set_budget
 * @file: the caller's file
 *
 * A budget below what is resident now only affects later MakeResidents.
 *
 * Return: 0.
 */
int pagoda_ioctl_set_budget(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;
	struct drm_pagoda_set_budget *args = data;
	u64 old;

	mutex_lock(&pfile->lock);
	old = pfile->budget;
	pfile->budget = args->budget;
	args->resident = pfile->resident_bytes;
	mutex_unlock(&pfile->lock);
	args->budget = old;
	return 0;
}

/**
 * pagoda_file_open - per-file state
 * @drm: the DRM device
 * @file: the new file
 *
 * Gives the file its GPU address space.
 *
 * Return: 0 or -ENOMEM.
 */
int pagoda_file_open(struct drm_device *drm, struct drm_file *file)
{
	struct pagoda_file *pfile;

	pfile = kzalloc(sizeof(*pfile), GFP_KERNEL);
	if (!pfile)
		return -ENOMEM;
	pfile->vm = pagoda_vm_create(to_pagoda_link(drm));
	if (IS_ERR(pfile->vm)) {
		int ret = PTR_ERR(pfile->vm);

		kfree(pfile);
		return ret;
	}
	mutex_init(&pfile->lock);
	INIT_LIST_HEAD(&pfile->resident);
	xa_init_flags(&pfile->contexts, XA_FLAGS_ALLOC1);
	file->driver_priv = pfile;
	return 0;
}

/**
 * pagoda_file_postclose - free per-file state
 * @drm: the DRM device
 * @file: the file, whose handles are all gone (each released its residency)
 *
 * Its contexts go, then, once its jobs are done, its address space.
 */
void pagoda_file_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct pagoda_file *pfile = file->driver_priv;

	pagoda_file_close_contexts(file);
	pagoda_vm_destroy(pfile->vm);
	WARN_ON(!list_empty(&pfile->resident));
	mutex_destroy(&pfile->lock);
	kfree(pfile);
}
