// SPDX-License-Identifier: MIT
/*
 * libpagoda: see libpagoda.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xf86drm.h>

#include "libpagoda.h"

static int pagoda_ioctl(struct pagoda_dev *dev, unsigned long request, void *arg)
{
	return drmIoctl(dev->fd, request, arg) ? -errno : 0;
}

/* Whether @fd is a DRM file of the Pagoda driver. */
static int is_pagoda(int fd)
{
	drmVersionPtr version = drmGetVersion(fd);
	int match;

	if (!version)
		return 0;
	match = !strcmp(version->name, "pagoda");
	drmFreeVersion(version);
	return match;
}

/* Open the first Pagoda render node. */
int pagoda_open(struct pagoda_dev *dev)
{
	drmDevicePtr devices[16];
	int count, i, fd, ret = -ENODEV;

	count = drmGetDevices2(0, devices, 16);
	if (count < 0)
		return count;
	for (i = 0; i < count && ret; i++) {
		if (!(devices[i]->available_nodes & (1 << DRM_NODE_RENDER)))
			continue;
		fd = open(devices[i]->nodes[DRM_NODE_RENDER], O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (is_pagoda(fd)) {
			dev->fd = fd;
			ret = 0;
		} else {
			close(fd);
		}
	}
	drmFreeDevices(devices, count);
	return ret;
}

/* Use an already open DRM file (it is closed by pagoda_close()). */
int pagoda_open_fd(struct pagoda_dev *dev, int fd)
{
	if (!is_pagoda(fd))
		return -ENODEV;
	dev->fd = fd;
	return 0;
}

void pagoda_close(struct pagoda_dev *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
}

int pagoda_query(struct pagoda_dev *dev, uint32_t param, uint64_t *value)
{
	struct drm_pagoda_get_param args = { .param = param };
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_GET_PARAM, &args);

	if (!ret)
		*value = args.value;
	return ret;
}

int pagoda_bo_create(struct pagoda_dev *dev, const struct pagoda_bo_desc *desc,
		     struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_create args = {
		.size = desc->size,
		.flags = desc->flags,
		.segments = desc->segments,
		.preferred_segment = desc->preferred_segment,
		.eviction_segment = desc->eviction_segment,
		.priority = desc->priority,
	};
	int ret;

	if (!args.segments) {
		args.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM) |
				DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM);
		args.preferred_segment = DRM_PAGODA_SEGMENT_VRAM;
	}
	ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_GEM_CREATE, &args);
	if (ret)
		return ret;
	bo->handle = args.handle;
	bo->size = args.size;
	bo->map = NULL;
	return 0;
}

int pagoda_bo_info(struct pagoda_dev *dev, uint32_t handle, struct drm_pagoda_gem_info *info)
{
	struct drm_pagoda_gem_info args = { .handle = handle };
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_GEM_INFO, &args);

	if (!ret)
		*info = args;
	return ret;
}

/* Map the whole allocation for the CPU, read and write, into bo->map. */
int pagoda_bo_map(struct pagoda_dev *dev, struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_info info;
	void *map;
	int ret;

	if (bo->map)
		return 0;
	ret = pagoda_bo_info(dev, bo->handle, &info);
	if (ret)
		return ret;
	if (!info.mmap_offset)
		return -EACCES;
	map = mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		   (off_t)info.mmap_offset);
	if (map == MAP_FAILED)
		return -errno;
	bo->map = map;
	return 0;
}

void pagoda_bo_unmap(struct pagoda_bo *bo)
{
	if (bo->map)
		munmap(bo->map, bo->size);
	bo->map = NULL;
}

/* Unmap and close the handle; the memory goes once nothing else holds it. */
int pagoda_bo_free(struct pagoda_dev *dev, struct pagoda_bo *bo)
{
	struct drm_gem_close args = { .handle = bo->handle };

	pagoda_bo_unmap(bo);
	return pagoda_ioctl(dev, DRM_IOCTL_GEM_CLOSE, &args);
}

static int pagoda_residency(struct pagoda_dev *dev, uint32_t op, const uint32_t *handles,
			    uint32_t count, uint64_t *bytes_to_trim)
{
	struct drm_pagoda_residency args = {
		.handles = (uintptr_t)handles,
		.count = count,
		.op = op,
	};
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_RESIDENCY, &args);

	/* DRM copies the arguments back on failure too: ENOSPC reports here */
	if (bytes_to_trim)
		*bytes_to_trim = args.bytes_to_trim;
	return ret;
}

/* Keep the allocations where the GPU reaches them until as many evicts. */
int pagoda_make_resident(struct pagoda_dev *dev, const uint32_t *handles, uint32_t count,
			 uint64_t *bytes_to_trim)
{
	return pagoda_residency(dev, DRM_PAGODA_MAKE_RESIDENT, handles, count, bytes_to_trim);
}

/* Drop one residency count of each; at 0 an allocation may be evicted again. */
int pagoda_evict(struct pagoda_dev *dev, const uint32_t *handles, uint32_t count)
{
	return pagoda_residency(dev, DRM_PAGODA_EVICT, handles, count, NULL);
}

/*
 * Mark an allocation's contents needed (DRM_PAGODA_MADV_WILLNEED) or not
 * (DRM_PAGODA_MADV_DONTNEED); *@retained (if not NULL) tells whether they
 * survived since the last DONTNEED.
 */
int pagoda_bo_madvise(struct pagoda_dev *dev, uint32_t handle, uint32_t state, int *retained)
{
	struct drm_pagoda_gem_madvise args = { .handle = handle, .state = state };
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_GEM_MADVISE, &args);

	if (!ret && retained)
		*retained = args.retained;
	return ret;
}
