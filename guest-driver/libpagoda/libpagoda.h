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
	uint32_t adapter;		/* GPU of a linked adapter, 0 .. NUM_ADAPTERS - 1 */
};

int pagoda_open(struct pagoda_dev *dev);
/* The primary node (/dev/dri/card*): KMS, and every Pagoda ioctl too. */
int pagoda_open_primary(struct pagoda_dev *dev);
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

/*
 * DRM_IOCTL_PAGODA_VM_BIND: @count operations (1 .. DRM_PAGODA_VM_BIND_MAX_OPS)
 * run in order; the kernel writes the chosen VAs back into @ops. @out_syncobj
 * (0: none) receives the fence after which the GPU sees the changes, at
 * timeline point @out_point (0: a binary syncobj). *@done (if not NULL) is
 * set on success and on failure too: the operations that ran, as the kernel
 * reports them (on failure, those before the one that stopped the batch).
 */
int pagoda_vm_bind(struct pagoda_dev *dev, struct drm_pagoda_vm_op *ops, uint32_t count,
		   uint32_t out_syncobj, uint64_t out_point, uint32_t *done);
/*
 * DRM_IOCTL_PAGODA_VM_BIND as a queue operation (DRM_PAGODA_VM_BIND_QUEUE):
 * the @count operations, all at addresses they name, run after the fences
 * of the @in_count syncobjs of @in; @out_syncobj (at @out_point) gets the
 * fence that signals once the GPU sees them, with the error that stopped
 * them if one did. Returns once they are checked and queued.
 */
int pagoda_vm_bind_queue(struct pagoda_dev *dev, const struct drm_pagoda_vm_op *ops,
			 uint32_t count, const struct drm_pagoda_sync *in, uint32_t in_count,
			 uint32_t out_syncobj, uint64_t out_point);
/*
 * One-operation VM_BIND. With DRM_PAGODA_VM_FIXED in @flags, *@va is the
 * base (and @min, @max must be 0); without it the kernel picks a range
 * inside [@min, @max) (@max 0: no limit) and *@va receives its base. Out
 * syncobjs are binary (0: none).
 */
int pagoda_vm_reserve(struct pagoda_dev *dev, uint64_t *va, uint64_t size, uint32_t flags,
		      uint64_t min, uint64_t max);
int pagoda_vm_free(struct pagoda_dev *dev, uint64_t va, uint64_t size);
int pagoda_vm_map(struct pagoda_dev *dev, uint32_t handle, uint64_t offset, uint64_t size,
		  uint32_t flags, uint64_t *va, uint64_t min, uint64_t max, uint32_t out_syncobj);
int pagoda_vm_unmap(struct pagoda_dev *dev, uint64_t va, uint64_t size, uint32_t out_syncobj);

/*
 * Sub-allocation (pagoda_suballoc.c): requests smaller than a 64 KiB
 * segment page packed into shared allocations, "slabs", so that they do
 * not each take a page of their own. A request goes to the class of the
 * smallest power of two that holds its size and alignment (256 B .. 32 KiB,
 * a free list of slabs each); a slab is one allocation of 64 KiB for the
 * class's first, each further live one twice the last up to 1 MiB, mapped
 * once by the CPU and once into the GPU space (a VA the kernel picks, read,
 * write and execute), and it goes when its last entry is freed. A request
 * larger than the largest class gets an allocation of its own, mapped the
 * same way. Every entry has the allocation's handle, its own offset in it,
 * CPU pointer and VA (the slab's VA plus the offset, so aligned like the
 * offset: docs/driver.md, libpagoda's sub-allocator).
 *
 * Not thread-safe. Free an entry only once the GPU is done with it: its
 * bytes go to the next request at once, and the last free of a slab unmaps
 * it, which VM_BIND does not order after the jobs of the space.
 */
#define PAGODA_SUBALLOC_MIN_ENTRY	256u
#define PAGODA_SUBALLOC_MAX_ENTRY	(32u * 1024)
#define PAGODA_SUBALLOC_CLASSES		8	/* 256 B, 512 B, ... 32 KiB */
#define PAGODA_SUBALLOC_SLAB_MIN	(64u * 1024)
#define PAGODA_SUBALLOC_SLAB_MAX	(1024u * 1024)
/* Largest alignment a request may ask: the VA alignment of every slab. */
#define PAGODA_SUBALLOC_MAX_ALIGN	DRM_PAGODA_VA_ALIGN

struct pagoda_suballoc_slab;

/* One size class: its slabs that have a free entry, and how many it has. */
struct pagoda_suballoc_class {
	struct pagoda_suballoc_slab *partial;
	uint32_t slabs;
};

struct pagoda_suballoc {
	struct pagoda_dev *dev;
	struct pagoda_bo_desc desc;		/* every slab's, but its size */
	struct pagoda_suballoc_class classes[PAGODA_SUBALLOC_CLASSES];
	struct pagoda_suballoc_slab **slots;	/* the live slabs, NULL: a free slot */
	uint32_t nr_slots;
	uint32_t slabs;				/* allocations held, own ones included */
	uint64_t serial;			/* the last entry's: tells entries apart */
};

/* A sub-allocation; the fields after @map are the sub-allocator's. */
struct pagoda_suballoc_entry {
	uint32_t handle;	/* the allocation holding it */
	uint64_t offset;	/* of its first byte in that allocation */
	uint64_t size;		/* bytes it may use: the request rounded up to its class */
	uint64_t va;		/* GPU VA of its first byte */
	void *map;		/* CPU address of its first byte */
	uint32_t slot;
	uint64_t serial;
};

/* Slabs allocated as @desc says (NULL: as pagoda_bo_create()'s defaults); its size must be 0. */
int pagoda_suballoc_init(struct pagoda_suballoc *sa, struct pagoda_dev *dev,
			 const struct pagoda_bo_desc *desc);
/*
 * @size bytes (not 0) aligned to @align (0, or a power of two up to
 * PAGODA_SUBALLOC_MAX_ALIGN; else -EINVAL), in @entry.
 */
int pagoda_suballoc_alloc(struct pagoda_suballoc *sa, uint64_t size, uint64_t align,
			  struct pagoda_suballoc_entry *entry);
/*
 * Give @entry back and clear it. -EINVAL, changing nothing, when it is not
 * an entry @sa handed out and still holds (a double free, a copy of a freed
 * one). When it was its slab's last, the slab goes: an error doing so is
 * returned, the entry is freed all the same.
 */
int pagoda_suballoc_free(struct pagoda_suballoc *sa, struct pagoda_suballoc_entry *entry);
/* Free every slab, entries still held included; the first error, if any. */
int pagoda_suballoc_fini(struct pagoda_suballoc *sa);

/* GPU contexts: DRM_IOCTL_PAGODA_CTX_CREATE, _DESTROY and _QUERY. */
int pagoda_ctx_create(struct pagoda_dev *dev, uint32_t priority, uint32_t *ctx_id);
int pagoda_ctx_create_on(struct pagoda_dev *dev, uint32_t adapter, uint32_t priority,
			 uint32_t *ctx_id);
int pagoda_ctx_destroy(struct pagoda_dev *dev, uint32_t ctx_id);
int pagoda_ctx_query(struct pagoda_dev *dev, uint32_t ctx_id, struct drm_pagoda_ctx_query *out);

/*
 * DRM_IOCTL_PAGODA_SUBMIT: run @cmd_size bytes of commands at GPU VA @cmd_va
 * on the render engine in context @ctx_id, after the @in_count syncobjs of
 * @in; the job's fence goes to the @out_count syncobjs of @out.
 */
int pagoda_submit(struct pagoda_dev *dev, uint32_t ctx_id, uint64_t cmd_va, uint32_t cmd_size,
		  const struct drm_pagoda_sync *in, uint32_t in_count,
		  const struct drm_pagoda_sync *out, uint32_t out_count);

/*
 * DRM syncobjs, on libdrm. pagoda_syncobj_wait() waits for @point of a
 * timeline syncobj (0: a binary one), also until a fence is attached
 * (WAIT_FOR_SUBMIT), at most @timeout_ns from now (negative: no limit; 0:
 * just check). It fails with -ETIME when the time runs out. It does not
 * report a fence's error (a faulted job): see pagoda_ctx_query().
 */
int pagoda_syncobj_create(struct pagoda_dev *dev, uint32_t *handle);
int pagoda_syncobj_wait(struct pagoda_dev *dev, uint32_t handle, uint64_t point,
			int64_t timeout_ns);
void pagoda_syncobj_destroy(struct pagoda_dev *dev, uint32_t handle);

/*
 * Command buffers for the render engine (docs/hardware.md section 7),
 * written little-endian into @mem, typically the CPU mapping of an
 * allocation (pagoda_bo.map), which the GPU then runs at its VA.
 *
 * pagoda_cmd_*() append one command each. One that does not fit sets
 * @error to -ENOSPC and writes nothing; one that cannot be encoded (a NOP
 * of 0 or more than PAGODA_CMD_MAX_DWORDS dwords) sets -EINVAL. The error
 * is sticky: every later command writes nothing, so a sequence of commands
 * needs one check of @error at its end. @used_bytes is then what to submit.
 */
struct pagoda_cmdbuf {
	uint32_t *cmds;
	uint32_t size_bytes;		/* capacity, a multiple of 4 */
	uint32_t used_bytes;
	int error;			/* 0, or the first negative errno */
};

/* Start an empty buffer of @capacity bytes (rounded down to 4) at @mem, 4-byte aligned. */
void pagoda_cmdbuf_init(struct pagoda_cmdbuf *cb, void *mem, uint32_t capacity);

/* NOP of @dwords dwords (header included, 1 .. PAGODA_CMD_MAX_DWORDS): padding. */
void pagoda_cmd_nop(struct pagoda_cmdbuf *cb, uint32_t dwords);
/* SIGNAL_FENCE: write the u64 @value at @va. */
void pagoda_cmd_signal(struct pagoda_cmdbuf *cb, uint64_t va, uint64_t value);
/* WAIT_FENCE: wait until the u64 at @va is >= @value. */
void pagoda_cmd_wait(struct pagoda_cmdbuf *cb, uint64_t va, uint64_t value);
/* COPY @size bytes from @src to @dst. */
void pagoda_cmd_copy(struct pagoda_cmdbuf *cb, uint64_t src, uint64_t dst, uint64_t size);
/* FILL32: @size bytes at @dst with the u32 @pattern repeated (the last one cut short). */
void pagoda_cmd_fill(struct pagoda_cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern);
/*
 * WRITE_IMM: the @count u32 @values at @dst; more than fit one command
 * (PAGODA_CMD_MAX_DWORDS - 4) are split into several, all or none written.
 */
void pagoda_cmd_write_imm(struct pagoda_cmdbuf *cb, uint64_t dst, const uint32_t *values,
			  uint32_t count);
/* CRC32: the u32 CRC-32 (zlib's crc32()) of [@src, @src + @size) at @dst. */
void pagoda_cmd_crc32(struct pagoda_cmdbuf *cb, uint64_t src, uint64_t size, uint64_t dst);
/*
 * JUMP to, or CALL, the buffer of @length bytes (4 .. 16 MiB, a multiple of
 * 4; not checked here: the device faults BAD_COMMAND) at @target.
 */
void pagoda_cmd_jump(struct pagoda_cmdbuf *cb, uint64_t target, uint32_t length);
void pagoda_cmd_call(struct pagoda_cmdbuf *cb, uint64_t target, uint32_t length);

/*
 * Physical-mode DMA buffers (DRM_IOCTL_PAGODA_SUBMIT_PHYS): commands whose
 * addresses the kernel patches in. pagoda_phys_split() makes the current
 * end of the buffer a split point; pagoda_phys_bind() binds an allocation
 * (an index of the allocation list) to a resource-table slot there, or
 * reprograms the slot. Commands name their addresses as (slot, offset):
 * each address operand gets a patch-location entry for the slot's
 * allocation, whose split offset is where the slot was bound, so the
 * allocation stays in place from there on unless its slot is bound again.
 * Binding the NULL allocation (an entry of handle 0) unbinds the slot.
 * pagoda_submit_phys() sorts the entries by split offset (stable). Errors
 * are sticky as in struct pagoda_cmdbuf (@cb.error); -ENOSPC also when
 * @patches is full, -EINVAL for a slot not bound or out of range.
 */
#define PAGODA_PHYS_SLOTS	DRM_PAGODA_MAX_SLOT_ID

struct pagoda_physbuf {
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_phys_patch *patches;
	uint32_t patch_count;
	uint32_t patch_capacity;
	uint32_t split;				/* current split point */
	int32_t bound[PAGODA_PHYS_SLOTS];	/* allocation index per slot, -1: none */
	uint32_t bound_at[PAGODA_PHYS_SLOTS];	/* split offset of that binding */
};

void pagoda_physbuf_init(struct pagoda_physbuf *pb, void *mem, uint32_t capacity,
			 struct drm_pagoda_phys_patch *patches, uint32_t patch_capacity);
/* A split point at the current end of the buffer. */
void pagoda_phys_split(struct pagoda_physbuf *pb);
/* Bind allocation @alloc to @slot at the current split point; @null: it is the NULL one. */
void pagoda_phys_bind(struct pagoda_physbuf *pb, uint32_t slot, uint32_t alloc, int null);
void pagoda_phys_signal(struct pagoda_physbuf *pb, uint32_t slot, uint64_t offset,
			uint64_t value);
void pagoda_phys_copy(struct pagoda_physbuf *pb, uint32_t src_slot, uint64_t src,
		      uint32_t dst_slot, uint64_t dst, uint64_t size);
void pagoda_phys_fill(struct pagoda_physbuf *pb, uint32_t slot, uint64_t dst, uint64_t size,
		      uint32_t pattern);
void pagoda_phys_crc32(struct pagoda_physbuf *pb, uint32_t src_slot, uint64_t src,
		       uint64_t size, uint32_t dst_slot, uint64_t dst);
/* WRITE_IMM of at most PAGODA_CMD_MAX_DWORDS - 4 values. */
void pagoda_phys_write_imm(struct pagoda_physbuf *pb, uint32_t slot, uint64_t dst,
			   const uint32_t *values, uint32_t count);

/* Sort @pb's entries by split offset, stable (pagoda_submit_phys() does it). */
void pagoda_physbuf_sort(struct pagoda_physbuf *pb);

/*
 * Submit @pb on @ctx_id with the allocation list @allocs; @portions (may be
 * NULL) gets the portions the kernel split it into.
 */
int pagoda_submit_phys(struct pagoda_dev *dev, uint32_t ctx_id, struct pagoda_physbuf *pb,
		       const struct drm_pagoda_phys_alloc *allocs, uint32_t alloc_count,
		       const struct drm_pagoda_sync *in, uint32_t in_count,
		       const struct drm_pagoda_sync *out, uint32_t out_count, uint32_t *portions);

/* CRC-32 (IEEE 802.3, as zlib's crc32()): what the CRC32 command computes. */
uint32_t pagoda_crc32(const void *data, size_t len);

/*
 * The device's debugfs directory (/sys/kernel/debug/dri/<minor>, the one
 * with Pagoda's "allocations") in @path: 0, or -ENOENT.
 */
int pagoda_debugfs_dir(char *path, size_t len);

/*
 * Physical-mode buffers in the queue of the first GPU (debugfs phys_queue
 * under @debugfs_dir, as pagoda_debugfs_dir() gives it), or -errno.
 */
int pagoda_phys_queued(const char *debugfs_dir);

#endif /* LIBPAGODA_H */
