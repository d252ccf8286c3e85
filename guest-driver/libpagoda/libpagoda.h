/* SPDX-License-Identifier: MIT */
/*
 * libpagoda: the Pagoda driver's ioctls for user space, on libdrm.
 *
 * Every function returns 0 or a negative errno (the ioctl's), and leaves
 * its outputs untouched on failure.
 */
#ifndef LIBPAGODA_H
#define LIBPAGODA_H

#include <stddef.h>
#include <stdint.h>

#include <uapi/drm/pagoda_drm.h>

/* An open Pagoda render node. */
struct pagoda_dev {
	int fd;
};

/* An allocation: its handle and, once mapped, the CPU mapping. */
struct pagoda_bo {
	uint32_t handle;
	uint64_t size;
	void *map;
};

/* What to allocate; zeroes mean: system memory and VRAM, VRAM preferred. */
struct pagoda_bo_desc {
	uint64_t size;
	uint32_t flags;			/* DRM_PAGODA_BO_* */
	uint32_t segments;		/* DRM_PAGODA_SEGMENT_MASK()s */
	uint32_t preferred_segment;
	uint32_t eviction_segment;
	uint32_t priority;		/* DRM_PAGODA_PRIORITY_* */
};

int pagoda_open(struct pagoda_dev *dev);
int pagoda_open_fd(struct pagoda_dev *dev, int fd);
void pagoda_close(struct pagoda_dev *dev);
int pagoda_query(struct pagoda_dev *dev, uint32_t param, uint64_t *value);

int pagoda_bo_create(struct pagoda_dev *dev, const struct pagoda_bo_desc *desc,
		     struct pagoda_bo *bo);
int pagoda_bo_info(struct pagoda_dev *dev, uint32_t handle, struct drm_pagoda_gem_info *info);
int pagoda_bo_map(struct pagoda_dev *dev, struct pagoda_bo *bo);
void pagoda_bo_unmap(struct pagoda_bo *bo);
int pagoda_bo_free(struct pagoda_dev *dev, struct pagoda_bo *bo);

/*
 * DRM_IOCTL_PAGODA_RESIDENCY on @count handles (1 .. DRM_PAGODA_RESIDENCY_MAX),
 * all or nothing. pagoda_make_resident() sets *@bytes_to_trim (if not NULL)
 * on success and on failure too: on ENOSPC it is the bytes the file must
 * evict first to stay within its budget (0 when a segment had no room).
 */
int pagoda_make_resident(struct pagoda_dev *dev, const uint32_t *handles, uint32_t count,
			 uint64_t *bytes_to_trim);
int pagoda_evict(struct pagoda_dev *dev, const uint32_t *handles, uint32_t count);

/* DRM_IOCTL_PAGODA_GEM_MADVISE: the model's Offer (DONTNEED) and Reclaim (WILLNEED). */
int pagoda_bo_madvise(struct pagoda_dev *dev, uint32_t handle, uint32_t state, int *retained);

#endif /* LIBPAGODA_H */
