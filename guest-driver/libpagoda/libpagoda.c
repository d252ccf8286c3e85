// SPDX-License-Identifier: MIT
/*
 * libpagoda: see libpagoda.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
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
/* Open the first Pagoda DRM node of @type (DRM_NODE_RENDER or DRM_NODE_PRIMARY). */
static int pagoda_open_node(struct pagoda_dev *dev, int type)
{
	drmDevicePtr devices[16];
	int count, i, fd, ret = -ENODEV;

	count = drmGetDevices2(0, devices, 16);
	if (count < 0)
		return count;
	for (i = 0; i < count && ret; i++) {
		if (!(devices[i]->available_nodes & (1 << type)))
			continue;
		fd = open(devices[i]->nodes[type], O_RDWR | O_CLOEXEC);
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

int pagoda_open(struct pagoda_dev *dev)
{
	return pagoda_open_node(dev, DRM_NODE_RENDER);
}

int pagoda_open_primary(struct pagoda_dev *dev)
{
	return pagoda_open_node(dev, DRM_NODE_PRIMARY);
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
		.adapter = desc->adapter,
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

/* Run the operations in order; the kernel writes the VAs it picks into @ops. */
int pagoda_vm_bind(struct pagoda_dev *dev, struct drm_pagoda_vm_op *ops, uint32_t count,
		   uint32_t out_syncobj, uint64_t out_point, uint32_t *done)
{
	struct drm_pagoda_vm_bind args = {
		.ops = (uintptr_t)ops,
		.count = count,
		.out_sync = { .handle = out_syncobj, .point = out_point },
	};
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_VM_BIND, &args);

	/* DRM copies the arguments back on failure too: how many ran */
	if (done)
		*done = args.count;
	return ret;
}

int pagoda_vm_bind_queue(struct pagoda_dev *dev, const struct drm_pagoda_vm_op *ops,
			 uint32_t count, const struct drm_pagoda_sync *in, uint32_t in_count,
			 uint32_t out_syncobj, uint64_t out_point)
{
	struct drm_pagoda_vm_bind args = {
		.ops = (uintptr_t)ops,
		.count = count,
		.flags = DRM_PAGODA_VM_BIND_QUEUE,
		.out_sync = { .handle = out_syncobj, .point = out_point },
		.in_syncs = (uintptr_t)in,
		.in_count = in_count,
	};

	return pagoda_ioctl(dev, DRM_IOCTL_PAGODA_VM_BIND, &args);
}

/* One operation, with a binary out syncobj (0: none); *@va as in drm_pagoda_vm_op. */
static int pagoda_vm_op(struct pagoda_dev *dev, struct drm_pagoda_vm_op *op, uint64_t *va,
			uint32_t out_syncobj)
{
	int ret = pagoda_vm_bind(dev, op, 1, out_syncobj, 0, NULL);

	if (!ret && va)
		*va = op->va;
	return ret;
}

/* Reserve [*@va, *@va + @size) with DRM_PAGODA_VM_FIXED, else a range the kernel picks. */
int pagoda_vm_reserve(struct pagoda_dev *dev, uint64_t *va, uint64_t size, uint32_t flags,
		      uint64_t min, uint64_t max)
{
	struct drm_pagoda_vm_op op = {
		.op = DRM_PAGODA_VM_OP_RESERVE,
		.flags = flags,
		.va = flags & DRM_PAGODA_VM_FIXED ? *va : 0,
		.size = size,
		.min_va = min,
		.max_va = max,
	};

	return pagoda_vm_op(dev, &op, va, 0);
}

/* Free a whole reservation and unmap what it holds. */
int pagoda_vm_free(struct pagoda_dev *dev, uint64_t va, uint64_t size)
{
	struct drm_pagoda_vm_op op = {
		.op = DRM_PAGODA_VM_OP_FREE,
		.va = va,
		.size = size,
	};

	return pagoda_vm_op(dev, &op, NULL, 0);
}

/*
 * Map @size bytes of allocation @handle from @offset (@handle 0 with
 * DRM_PAGODA_VM_ZERO): at *@va inside a reservation with DRM_PAGODA_VM_FIXED,
 * else in a new reservation the kernel picks inside [@min, @max), its base in *@va.
 */
int pagoda_vm_map(struct pagoda_dev *dev, uint32_t handle, uint64_t offset, uint64_t size,
		  uint32_t flags, uint64_t *va, uint64_t min, uint64_t max, uint32_t out_syncobj)
{
	struct drm_pagoda_vm_op op = {
		.op = DRM_PAGODA_VM_OP_MAP,
		.flags = flags,
		.handle = handle,
		.va = flags & DRM_PAGODA_VM_FIXED ? *va : 0,
		.size = size,
		.offset = offset,
		.min_va = min,
		.max_va = max,
	};

	return pagoda_vm_op(dev, &op, va, out_syncobj);
}

int pagoda_vm_unmap(struct pagoda_dev *dev, uint64_t va, uint64_t size, uint32_t out_syncobj)
{
	struct drm_pagoda_vm_op op = {
		.op = DRM_PAGODA_VM_OP_UNMAP,
		.va = va,
		.size = size,
	};

	return pagoda_vm_op(dev, &op, NULL, out_syncobj);
}

/* A context whose jobs run on GPU @adapter of the logical adapter. */
int pagoda_ctx_create_on(struct pagoda_dev *dev, uint32_t adapter, uint32_t priority,
			 uint32_t *ctx_id)
{
	struct drm_pagoda_ctx_create args = { .priority = priority, .adapter = adapter };
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_CTX_CREATE, &args);

	if (!ret)
		*ctx_id = args.ctx_id;
	return ret;
}

int pagoda_ctx_create(struct pagoda_dev *dev, uint32_t priority, uint32_t *ctx_id)
{
	return pagoda_ctx_create_on(dev, 0, priority, ctx_id);
}

/* The context's queued jobs still run. */
int pagoda_ctx_destroy(struct pagoda_dev *dev, uint32_t ctx_id)
{
	struct drm_pagoda_ctx_destroy args = { .ctx_id = ctx_id };

	return pagoda_ioctl(dev, DRM_IOCTL_PAGODA_CTX_DESTROY, &args);
}

int pagoda_ctx_query(struct pagoda_dev *dev, uint32_t ctx_id, struct drm_pagoda_ctx_query *out)
{
	struct drm_pagoda_ctx_query args = { .ctx_id = ctx_id };
	int ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_CTX_QUERY, &args);

	if (!ret)
		*out = args;
	return ret;
}

int pagoda_submit(struct pagoda_dev *dev, uint32_t ctx_id, uint64_t cmd_va, uint32_t cmd_size,
		  const struct drm_pagoda_sync *in, uint32_t in_count,
		  const struct drm_pagoda_sync *out, uint32_t out_count)
{
	struct drm_pagoda_submit args = {
		.ctx_id = ctx_id,
		.cmd_va = cmd_va,
		.cmd_size = cmd_size,
		.in_count = in_count,
		.out_count = out_count,
		.in_syncs = (uintptr_t)in,
		.out_syncs = (uintptr_t)out,
	};

	return pagoda_ioctl(dev, DRM_IOCTL_PAGODA_SUBMIT, &args);
}

/* Entries in order of split offset, keeping their order within one (insertion sort). */
void pagoda_physbuf_sort(struct pagoda_physbuf *pb)
{
	uint32_t i, j;

	for (i = 1; i < pb->patch_count; i++) {
		struct drm_pagoda_phys_patch e = pb->patches[i];

		for (j = i; j && pb->patches[j - 1].split_offset > e.split_offset; j--)
			pb->patches[j] = pb->patches[j - 1];
		pb->patches[j] = e;
	}
}

int pagoda_submit_phys(struct pagoda_dev *dev, uint32_t ctx_id, struct pagoda_physbuf *pb,
		       const struct drm_pagoda_phys_alloc *allocs, uint32_t alloc_count,
		       const struct drm_pagoda_sync *in, uint32_t in_count,
		       const struct drm_pagoda_sync *out, uint32_t out_count, uint32_t *portions)
{
	struct drm_pagoda_submit_phys args = {
		.ctx_id = ctx_id,
		.cmds = (uintptr_t)pb->cb.cmds,
		.cmd_size = pb->cb.used_bytes,
		.alloc_count = alloc_count,
		.allocs = (uintptr_t)allocs,
		.patch_count = pb->patch_count,
		.patches = (uintptr_t)pb->patches,
		.in_count = in_count,
		.in_syncs = (uintptr_t)in,
		.out_count = out_count,
		.out_syncs = (uintptr_t)out,
	};
	int ret;

	if (pb->cb.error)
		return pb->cb.error;
	pagoda_physbuf_sort(pb);
	ret = pagoda_ioctl(dev, DRM_IOCTL_PAGODA_SUBMIT_PHYS, &args);
	if (portions)
		*portions = args.portions;
	return ret;
}

/*
 * The result of a libdrm syncobj call as a negative errno. Depending on the
 * function and libdrm's version it is drmIoctl()'s -1 (errno set), -errno
 * or errno; -1 with errno set is -errno, and -EPERM is -1 too.
 */
static int libdrm_ret(int ret)
{
	if (ret == -1)
		return -errno;
	return ret > 0 ? -ret : ret;
}

int pagoda_syncobj_create(struct pagoda_dev *dev, uint32_t *handle)
{
	uint32_t h;
	int ret = libdrm_ret(drmSyncobjCreate(dev->fd, 0, &h));

	if (!ret)
		*handle = h;
	return ret;
}

/* The absolute CLOCK_MONOTONIC deadline @timeout_ns from now (negative: none). */
static int64_t deadline_ns(int64_t timeout_ns)
{
	struct timespec now;
	int64_t t;

	if (timeout_ns < 0 || clock_gettime(CLOCK_MONOTONIC, &now))
		return INT64_MAX;
	t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	return timeout_ns > INT64_MAX - t ? INT64_MAX : t + timeout_ns;
}

int pagoda_syncobj_wait(struct pagoda_dev *dev, uint32_t handle, uint64_t point,
			int64_t timeout_ns)
{
	int64_t deadline = deadline_ns(timeout_ns);
	unsigned int flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;

	if (!point)
		return libdrm_ret(drmSyncobjWait(dev->fd, &handle, 1, deadline, flags, NULL));
	return libdrm_ret(drmSyncobjTimelineWait(dev->fd, &handle, &point, 1, deadline, flags,
						 NULL));
}

void pagoda_syncobj_destroy(struct pagoda_dev *dev, uint32_t handle)
{
	drmSyncobjDestroy(dev->fd, handle);
}

int pagoda_debugfs_dir(char *path, size_t len)
{
	struct dirent *de;
	DIR *dir = opendir("/sys/kernel/debug/dri");
	int ret = -ENOENT;

	if (!dir)
		return ret;
	while (ret && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, len, "/sys/kernel/debug/dri/%s/allocations", de->d_name);
		if (!access(path, F_OK)) {
			snprintf(path, len, "/sys/kernel/debug/dri/%s", de->d_name);
			ret = 0;
		}
	}
	closedir(dir);
	return ret;
}

int pagoda_phys_queued(const char *debugfs_dir)
{
	char path[PATH_MAX];
	unsigned int n;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/phys_queue", debugfs_dir);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ret = fscanf(f, "%u queued", &n) == 1 ? (int)n : -EIO;
	fclose(f);
	return ret;
}
