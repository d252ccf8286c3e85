/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the guest programs that run GPU jobs through an
 * address space: allocations mapped by the CPU and into the GPU space,
 * running a command buffer and waiting for it, the error its fence
 * carries (read through a sync_file), a context's ban, and CRC-32 as the
 * device's CRC32 command computes it.
 */
#ifndef PAGODA_VM_TEST_H
#define PAGODA_VM_TEST_H

#include <linux/sync_file.h>
#include <xf86drm.h>

#include "pagoda_test.h"

/* How long a job may take before the helpers give up on it. */
#define PT_JOB_TIMEOUT_NS	(60ll * 1000 * 1000 * 1000)

/* CRC-32 (IEEE 802.3), as zlib's crc32() and the device's CRC32 command. */
static inline uint32_t pt_crc32(const void *data, size_t len)
{
	return pagoda_crc32(data, len);
}

/* An allocation mapped by the CPU and into the GPU space. */
struct pt_buf {
	struct pagoda_bo bo;
	uint64_t va;
};

/*
 * Create and map it: by the CPU, and at the lowest free VA at or above
 * @min_va (0: anywhere) with the DRM_PAGODA_VM_* protections @map_flags.
 */
static inline int pt_buf_create_at(struct pagoda_dev *dev, struct pt_buf *b, uint64_t size,
				   uint32_t segments, unsigned int preferred, uint32_t map_flags,
				   uint64_t min_va)
{
	struct pagoda_bo_desc desc = {
		.size = size,
		.segments = segments,
		.preferred_segment = preferred,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	int ret;

	memset(b, 0, sizeof(*b));
	ret = pagoda_bo_create(dev, &desc, &b->bo);
	if (!ret)
		ret = pagoda_bo_map(dev, &b->bo);
	if (!ret)
		ret = pagoda_vm_map(dev, b->bo.handle, 0, b->bo.size, map_flags, &b->va, min_va, 0,
				    0);
	return ret;
}

/* In segment @seg only, anywhere, with protections @map_flags. */
static inline int pt_buf_create(struct pagoda_dev *dev, struct pt_buf *b, uint64_t size,
				unsigned int seg, uint32_t map_flags)
{
	return pt_buf_create_at(dev, b, size, DRM_PAGODA_SEGMENT_MASK(seg), seg, map_flags, 0);
}

/* Free the mapping's reservation (which unmaps it) and the allocation. */
static inline void pt_buf_destroy(struct pagoda_dev *dev, struct pt_buf *b)
{
	uint64_t align = DRM_PAGODA_VA_ALIGN;

	if (b->va)
		pagoda_vm_free(dev, b->va, (b->bo.size + align - 1) / align * align);
	pagoda_bo_unmap(&b->bo);
	pagoda_bo_free(dev, &b->bo);
	memset(b, 0, sizeof(*b));
}

/* The error a signalled syncobj's fence carries (0 when none), or the export's. */
static inline int pt_fence_error(struct pagoda_dev *dev, uint32_t syncobj)
{
	struct sync_file_info info;
	int fd, ret;

	if (drmSyncobjExportSyncFile(dev->fd, syncobj, &fd))
		return -errno;
	memset(&info, 0, sizeof(info));
	ret = ioctl(fd, SYNC_IOC_FILE_INFO, &info) ? -errno : info.status < 0 ? info.status : 0;
	close(fd);
	return ret;
}

/*
 * After a submission whose out-syncobj is @syncobj returned @submitted:
 * that error, else the wait's, else the error the job's fence carries; the
 * syncobj is destroyed.
 */
static inline int pt_wait_out(struct pagoda_dev *dev, uint32_t syncobj, int submitted)
{
	int ret = submitted;

	if (!ret)
		ret = pagoda_syncobj_wait(dev, syncobj, 0, PT_JOB_TIMEOUT_NS);
	if (!ret)
		ret = pt_fence_error(dev, syncobj);
	pagoda_syncobj_destroy(dev, syncobj);
	return ret;
}

/*
 * Run @cb's commands (in @cmd) on @ctx and wait. Returns the submission's
 * or the wait's error, else the error the job's fence carries (-EFAULT for
 * a job that faulted), else 0.
 */
static inline int pt_run(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd,
			 struct pagoda_cmdbuf *cb)
{
	struct drm_pagoda_sync out = { 0 };
	int ret;

	if (cb->error)
		return cb->error;
	ret = pagoda_syncobj_create(dev, &out.handle);
	if (ret)
		return ret;
	ret = pagoda_submit(dev, ctx, cmd->va, cb->used_bytes, NULL, 0, &out, 1);
	return pt_wait_out(dev, out.handle, ret);
}

/*
 * Submit the physical-mode buffer @pb on @ctx with its allocation list and
 * wait; the submission's error, else the wait's, else the fence's.
 * @portions (may be NULL) gets the portions it was split into.
 */
static inline int pt_run_phys(struct pagoda_dev *dev, uint32_t ctx, struct pagoda_physbuf *pb,
			      const struct drm_pagoda_phys_alloc *allocs, uint32_t count,
			      uint32_t *portions)
{
	struct drm_pagoda_sync out = { 0 };
	int ret;

	ret = pagoda_syncobj_create(dev, &out.handle);
	if (ret)
		return ret;
	ret = pagoda_submit_phys(dev, ctx, pb, allocs, count, NULL, 0, &out, 1, portions);
	return pt_wait_out(dev, out.handle, ret);
}

/* 1 when @ctx is banned, 0 when not, -1 when the query fails; @q gets the answer. */
static inline int pt_ctx_banned(struct pagoda_dev *dev, uint32_t ctx,
				struct drm_pagoda_ctx_query *q)
{
	memset(q, 0, sizeof(*q));
	if (pagoda_ctx_query(dev, ctx, q))
		return -1;
	return !!(q->status & DRM_PAGODA_CTX_BANNED);
}

#endif /* PAGODA_VM_TEST_H */
