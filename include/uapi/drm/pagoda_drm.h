/* SPDX-License-Identifier: MIT */
/*
 * Pagoda DRM user-space interface.
 *
 * Include as <uapi/drm/pagoda_drm.h> with the repository's include/ on the
 * include path, from the kernel driver and from user space alike. Like the
 * kernel's own DRM UAPI headers it includes "drm.h": user space gets it from
 * libdrm (-I/usr/include/libdrm), the driver from the kernel's
 * include/uapi/drm (see guest-driver/Kbuild).
 */
#ifndef _PAGODA_DRM_H_
#define _PAGODA_DRM_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_PAGODA_GET_PARAM		0x00
#define DRM_PAGODA_GEM_CREATE		0x01
#define DRM_PAGODA_GEM_INFO		0x02
#define DRM_PAGODA_RESIDENCY		0x03
#define DRM_PAGODA_SET_BUDGET		0x04
#define DRM_PAGODA_GEM_MADVISE		0x05
#define DRM_PAGODA_VM_BIND		0x06
#define DRM_PAGODA_CTX_CREATE		0x07
#define DRM_PAGODA_CTX_DESTROY		0x08
#define DRM_PAGODA_SUBMIT		0x09
#define DRM_PAGODA_CTX_QUERY		0x0a
#define DRM_PAGODA_SUBMIT_PHYS		0x0b

#define DRM_IOCTL_PAGODA_GET_PARAM	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_GET_PARAM, \
						 struct drm_pagoda_get_param)
#define DRM_IOCTL_PAGODA_GEM_CREATE	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_GEM_CREATE, \
						 struct drm_pagoda_gem_create)
#define DRM_IOCTL_PAGODA_GEM_INFO	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_GEM_INFO, \
						 struct drm_pagoda_gem_info)
#define DRM_IOCTL_PAGODA_RESIDENCY	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_RESIDENCY, \
						 struct drm_pagoda_residency)
#define DRM_IOCTL_PAGODA_SET_BUDGET	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_SET_BUDGET, \
						 struct drm_pagoda_set_budget)
#define DRM_IOCTL_PAGODA_GEM_MADVISE	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_GEM_MADVISE, \
						 struct drm_pagoda_gem_madvise)
#define DRM_IOCTL_PAGODA_VM_BIND	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_VM_BIND, \
						 struct drm_pagoda_vm_bind)
#define DRM_IOCTL_PAGODA_CTX_CREATE	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_CTX_CREATE, \
						 struct drm_pagoda_ctx_create)
#define DRM_IOCTL_PAGODA_CTX_DESTROY	DRM_IOW(DRM_COMMAND_BASE + DRM_PAGODA_CTX_DESTROY, \
						struct drm_pagoda_ctx_destroy)
#define DRM_IOCTL_PAGODA_SUBMIT		DRM_IOW(DRM_COMMAND_BASE + DRM_PAGODA_SUBMIT, \
						struct drm_pagoda_submit)
#define DRM_IOCTL_PAGODA_CTX_QUERY	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_CTX_QUERY, \
						 struct drm_pagoda_ctx_query)
#define DRM_IOCTL_PAGODA_SUBMIT_PHYS	DRM_IOWR(DRM_COMMAND_BASE + DRM_PAGODA_SUBMIT_PHYS, \
						 struct drm_pagoda_submit_phys)

/**
 * enum drm_pagoda_param - values DRM_IOCTL_PAGODA_GET_PARAM reports
 *
 * All are read from the device when the driver binds and do not change
 * while it stays bound. A DRM device is one logical adapter: one GPU, or
 * the GPUs of a linked adapter; &drm_pagoda_get_param.adapter says which
 * GPU of it a parameter describes.
 *
 * @DRM_PAGODA_PARAM_CHIP_ID: PAGODA_REG_ID (PAGODA_ID on a Pagoda device).
 * @DRM_PAGODA_PARAM_REVISION: PAGODA_REG_REVISION, major << 16 | minor.
 * @DRM_PAGODA_PARAM_CAPS: PAGODA_REG_CAPS, PAGODA_CAPS_* bits.
 * @DRM_PAGODA_PARAM_VRAM_SIZE: CPU-visible VRAM (segment 1) in bytes.
 * @DRM_PAGODA_PARAM_NUM_SEGMENTS: memory segments the device describes.
 * @DRM_PAGODA_PARAM_NUM_ENGINES: engines (rings) the device has.
 * @DRM_PAGODA_PARAM_NUM_CONTEXTS: GPU address-space contexts.
 * @DRM_PAGODA_PARAM_PCI_VENDOR: PCI vendor ID of the device.
 * @DRM_PAGODA_PARAM_PCI_DEVICE: PCI device ID of the device.
 * @DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE: hidden VRAM (segment 2) in bytes.
 * @DRM_PAGODA_PARAM_APERTURE_SIZE: aperture segment (3) in bytes.
 * @DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE: page size of the memory segments
 *	(4096 or 65536); allocations that may live there are multiples of it.
 * @DRM_PAGODA_PARAM_HOST_APERTURE_SIZE: bytes of the CPU host aperture
 *	(BAR4), through which the CPU reaches hidden VRAM.
 * @DRM_PAGODA_PARAM_VA_BITS: width of a GPU virtual address: every VA of
 *	an address space is below 1 << VA_BITS.
 * @DRM_PAGODA_PARAM_MMU_LEVELS: page-table levels of the device (2 to 4).
 * @DRM_PAGODA_PARAM_VA_START: lowest VA an address space maps
 *	(DRM_PAGODA_VA_START).
 * @DRM_PAGODA_PARAM_MAX_SLOT_ID: rows of the resource table of a
 *	physical-mode submission: every slot id is below it
 *	(DRM_PAGODA_MAX_SLOT_ID, the driver's cap).
 * @DRM_PAGODA_PARAM_NUM_ADAPTERS: physical adapters (GPUs) of the logical
 *	adapter: 1 for a GPU that is not linked, 2 to 4 for a link.
 * @DRM_PAGODA_PARAM_LINK_INDEX: the GPU's physical adapter index in its
 *	link (PAGODA_REG_LINK_INDEX), 0 when not linked.
 */
enum drm_pagoda_param {
	DRM_PAGODA_PARAM_CHIP_ID = 0,
	DRM_PAGODA_PARAM_REVISION = 1,
	DRM_PAGODA_PARAM_CAPS = 2,
	DRM_PAGODA_PARAM_VRAM_SIZE = 3,
	DRM_PAGODA_PARAM_NUM_SEGMENTS = 4,
	DRM_PAGODA_PARAM_NUM_ENGINES = 5,
	DRM_PAGODA_PARAM_NUM_CONTEXTS = 6,
	DRM_PAGODA_PARAM_PCI_VENDOR = 7,
	DRM_PAGODA_PARAM_PCI_DEVICE = 8,
	DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE = 9,
	DRM_PAGODA_PARAM_APERTURE_SIZE = 10,
	DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE = 11,
	DRM_PAGODA_PARAM_HOST_APERTURE_SIZE = 12,
	DRM_PAGODA_PARAM_VA_BITS = 13,
	DRM_PAGODA_PARAM_MMU_LEVELS = 14,
	DRM_PAGODA_PARAM_VA_START = 15,
	DRM_PAGODA_PARAM_MAX_SLOT_ID = 16,
	DRM_PAGODA_PARAM_NUM_ADAPTERS = 17,
	DRM_PAGODA_PARAM_LINK_INDEX = 18,
};

/**
 * struct drm_pagoda_get_param - argument of DRM_IOCTL_PAGODA_GET_PARAM
 * @param: in, one of enum drm_pagoda_param. Others fail with EINVAL.
 * @adapter: in, which GPU of the logical adapter: 0 to
 *	DRM_PAGODA_PARAM_NUM_ADAPTERS - 1, in the order of their physical
 *	adapter indices (EINVAL otherwise). 0 on a GPU that is not linked.
 * @value: out, the parameter's value.
 */
struct drm_pagoda_get_param {
	__u32 param;
	__u32 adapter;
	__u64 value;
};

/* Segment ids, as the device numbers them; bit (1 << id) in segment masks. */
#define DRM_PAGODA_SEGMENT_SYSTEM	0
#define DRM_PAGODA_SEGMENT_VRAM		1
#define DRM_PAGODA_SEGMENT_VRAM_HIDDEN	2
/*
 * System memory mapped into the aperture segment: where a physically
 * accessed allocation allowed in system memory is when resident there,
 * as DRM_IOCTL_PAGODA_GEM_INFO reports it. Named when creating an
 * allocation (in @segments, @preferred_segment, @eviction_segment) it
 * means system memory, as DRM_PAGODA_SEGMENT_SYSTEM does.
 */
#define DRM_PAGODA_SEGMENT_APERTURE	3
#define DRM_PAGODA_SEGMENT_MASK(id)	(1u << (id))

/* drm_pagoda_gem_create.flags */
#define DRM_PAGODA_BO_PHYSICAL		(1u << 0)	/* accessed physically: contiguous, in the aperture when in system memory */
#define DRM_PAGODA_BO_PRIMARY		(1u << 1)	/* a primary surface: contiguous in a memory segment */
#define DRM_PAGODA_BO_CPU_ACCESS	(1u << 2)	/* the CPU maps it often: never in hidden VRAM */
#define DRM_PAGODA_BO_NO_CPU_ACCESS	(1u << 3)	/* never mapped by the CPU */
#define DRM_PAGODA_BO_WRITE_COMBINED	(1u << 4)	/* CPU mappings of system pages write-combined */
/*
 * On a linked adapter (DRM_PAGODA_PARAM_NUM_ADAPTERS > 1), @adapter 0: one
 * instance on every GPU, with content of its own (the model's
 * LinkInstanced; the CPU maps the first GPU's), or at one offset of one
 * memory segment on every GPU, contiguous, content kept identical by
 * writing it on every GPU (LinkMirrored; never mapped by the CPU).
 * VM_BIND maps them per GPU (&drm_pagoda_vm_op.instance).
 */
#define DRM_PAGODA_BO_LINK_INSTANCED	(1u << 5)
#define DRM_PAGODA_BO_LINK_MIRRORED	(1u << 6)
#define DRM_PAGODA_BO_FLAGS		0x7f

/* drm_pagoda_gem_create.priority: who is evicted first (LOW) */
#define DRM_PAGODA_PRIORITY_LOW		0
#define DRM_PAGODA_PRIORITY_NORMAL	1
#define DRM_PAGODA_PRIORITY_HIGH	2

/**
 * struct drm_pagoda_gem_create - argument of DRM_IOCTL_PAGODA_GEM_CREATE
 * @size: in: bytes; out: the size allocated, rounded up to the page size
 *	of the allowed segments (64 KiB on a 64 KiB-page device)
 * @flags: in: DRM_PAGODA_BO_*
 * @segments: in: DRM_PAGODA_SEGMENT_MASK() of the segments it may live in
 * @preferred_segment: in: one of @segments, tried first
 * @eviction_segment: in: where it goes when evicted from a memory segment
 *	(system memory by default: DRM_PAGODA_SEGMENT_SYSTEM)
 * @priority: in: DRM_PAGODA_PRIORITY_*
 * @handle: out: GEM handle
 * @adapter: in: the GPU of the logical adapter whose segments hold it (0
 *	to DRM_PAGODA_PARAM_NUM_ADAPTERS - 1, as in GET_PARAM; 0 on a GPU that
 *	is not linked)
 * @pad: must be zero
 */
struct drm_pagoda_gem_create {
	__u64 size;
	__u32 flags;
	__u32 segments;
	__u32 preferred_segment;
	__u32 eviction_segment;
	__u32 priority;
	__u32 handle;
	__u32 adapter;
	__u32 pad;
};

/**
 * struct drm_pagoda_gem_info - argument of DRM_IOCTL_PAGODA_GEM_INFO
 * @handle: in: GEM handle
 * @pad: in: must be zero
 * @size: out: bytes
 * @mmap_offset: out: offset to pass to mmap() on the DRM file (0 when the
 *	CPU may not map it)
 * @segment: out: the segment it is in now
 * @flags: out: its DRM_PAGODA_BO_* flags
 * @contiguous: out: 1 when its memory is one contiguous range
 * @residency: out: how many times this file made it resident and has not
 *	evicted it yet (DRM_IOCTL_PAGODA_RESIDENCY)
 * @offset: out: offset of its first byte in @segment; 0 in system memory
 *	(user space never learns a system memory address)
 * @adapter: out: the GPU of the logical adapter whose segments hold it (as
 *	&drm_pagoda_gem_create.adapter; 0 on a GPU that is not linked)
 * @pad2: out: 0
 */
struct drm_pagoda_gem_info {
	__u32 handle;
	__u32 pad;
	__u64 size;
	__u64 mmap_offset;
	__u32 segment;
	__u32 flags;
	__u32 contiguous;
	__u32 residency;
	__u64 offset;
	__u32 adapter;
	__u32 pad2;
};

/* drm_pagoda_residency.op */
#define DRM_PAGODA_MAKE_RESIDENT	0
#define DRM_PAGODA_EVICT		1
/* Most handles one DRM_IOCTL_PAGODA_RESIDENCY takes. */
#define DRM_PAGODA_RESIDENCY_MAX	1024

/**
 * struct drm_pagoda_residency - argument of DRM_IOCTL_PAGODA_RESIDENCY
 * @handles: in: user pointer to @count __u32 GEM handles
 * @count: in: 1 .. DRM_PAGODA_RESIDENCY_MAX
 * @op: in: DRM_PAGODA_MAKE_RESIDENT or DRM_PAGODA_EVICT
 * @bytes_to_trim: out: when MAKE_RESIDENT fails with ENOSPC because the
 *	file's budget would be exceeded, the bytes it must evict first; else 0
 *
 * MAKE_RESIDENT brings every allocation into a segment the GPU reaches
 * (its preferred segment if it can) and keeps it there, counted per file,
 * until as many EVICTs; all or nothing. EVICT drops one count of each
 * (all or nothing); at 0 the allocation may be evicted again.
 */
struct drm_pagoda_residency {
	__u64 handles;
	__u32 count;
	__u32 op;
	__u64 bytes_to_trim;
};

/**
 * struct drm_pagoda_set_budget - argument of DRM_IOCTL_PAGODA_SET_BUDGET
 * @budget: in: bytes this file may keep resident (0: no limit);
 *	out: the previous budget
 * @resident: out: bytes this file keeps resident now
 */
struct drm_pagoda_set_budget {
	__u64 budget;
	__u64 resident;
};

/* drm_pagoda_gem_madvise.state */
#define DRM_PAGODA_MADV_WILLNEED	0	/* contents needed (the model's Reclaim) */
#define DRM_PAGODA_MADV_DONTNEED	1	/* contents may be discarded (the model's Offer) */

/**
 * struct drm_pagoda_gem_madvise - argument of DRM_IOCTL_PAGODA_GEM_MADVISE
 * @handle: in: GEM handle
 * @state: in: DRM_PAGODA_MADV_WILLNEED or DRM_PAGODA_MADV_DONTNEED
 * @retained: out: 1 when the contents are still there, 0 when they were
 *	discarded since the allocation was marked DONTNEED (it then reads
 *	as zeroes)
 * @pad: in: must be zero
 *
 * A DONTNEED allocation is evicted before any needed one of its segment
 * and its eviction discards the contents instead of copying them. WILLNEED
 * makes it an ordinary allocation again and tells whether it lost them.
 */
struct drm_pagoda_gem_madvise {
	__u32 handle;
	__u32 state;
	__u32 retained;
	__u32 pad;
};

/*
 * GPU virtual address spaces. Every DRM file has one, created at open.
 * VAs below DRM_PAGODA_VA_START are never mapped; reservations are
 * DRM_PAGODA_VA_ALIGN aligned, mappings DRM_PAGODA_VA_PAGE aligned.
 */
#define DRM_PAGODA_VA_START		0x10000ull
#define DRM_PAGODA_VA_ALIGN		0x10000ull
#define DRM_PAGODA_VA_PAGE		0x1000ull

/* drm_pagoda_vm_op.op */
#define DRM_PAGODA_VM_OP_RESERVE	1	/* reserve [va, va + size) */
#define DRM_PAGODA_VM_OP_FREE		2	/* free a reservation and its mappings */
#define DRM_PAGODA_VM_OP_MAP		3	/* map an allocation (or zero pages) */
#define DRM_PAGODA_VM_OP_UNMAP		4	/* unmap [va, va + size) */
#define DRM_PAGODA_VM_OP_PROTECT	5	/* new protections for [va, va + size) */
#define DRM_PAGODA_VM_OP_COPY		6	/* [va, va + size) maps what [offset, offset + size) maps */

/* drm_pagoda_vm_op.flags */
#define DRM_PAGODA_VM_FIXED		(1u << 0)	/* at @va, else the driver picks one in [min_va, max_va] */
#define DRM_PAGODA_VM_READ_ONLY		(1u << 1)	/* MAP, PROTECT: GPU writes fault */
#define DRM_PAGODA_VM_NO_EXECUTE	(1u << 2)	/* MAP, PROTECT: not fetched as commands */
#define DRM_PAGODA_VM_ZERO		(1u << 3)	/* MAP: no allocation; reads zero, writes dropped */
#define DRM_PAGODA_VM_FLAGS		0xf		/* those a MAP takes */
#define DRM_PAGODA_VM_TILED		(1u << 4)	/* RESERVE: a tiled resource of 64 KiB tiles */
/* A tiled reservation's alignment (VA and size), and its tiles'. */
#define DRM_PAGODA_VM_TILED_ALIGN	0x200000ull
#define DRM_PAGODA_VM_TILE		0x10000ull

/* Most operations one DRM_IOCTL_PAGODA_VM_BIND takes. */
#define DRM_PAGODA_VM_BIND_MAX_OPS	16384

/**
 * struct drm_pagoda_vm_op - one operation of DRM_IOCTL_PAGODA_VM_BIND
 * @op: DRM_PAGODA_VM_OP_*
 * @flags: DRM_PAGODA_VM_* (protections only with MAP and PROTECT)
 * @handle: MAP: the allocation's GEM handle; 0 with DRM_PAGODA_VM_ZERO
 * @instance: MAP of a LinkInstanced or LinkMirrored allocation:
 *	DRM_PAGODA_VM_INSTANCE_SELF, each GPU's entries name its own
 *	instance, or DRM_PAGODA_VM_INSTANCE(i), every GPU's entries name GPU
 *	i's instance (the others' as peer entries); must be 0 otherwise
 * @va: with DRM_PAGODA_VM_FIXED (and for FREE and UNMAP), in: the base
 *	address; RESERVE and MAP without it, out: the address chosen
 * @size: bytes. RESERVE, FREE: a multiple of DRM_PAGODA_VA_ALIGN; MAP,
 *	UNMAP, PROTECT: a multiple of DRM_PAGODA_VA_PAGE
 * @offset: MAP: byte offset in the allocation, DRM_PAGODA_VA_PAGE aligned;
 *	COPY: the base of the source range; must be 0 otherwise
 * @min_va: RESERVE and MAP without DRM_PAGODA_VM_FIXED: lowest acceptable
 *	base; must be 0 otherwise
 * @max_va: likewise, the highest acceptable end (exclusive); 0 for no limit
 *
 * RESERVE takes [va, va + size) for the file's mappings: EEXIST when it
 * overlaps another reservation. With DRM_PAGODA_VM_TILED it is a tiled
 * resource, its VA and size DRM_PAGODA_VM_TILED_ALIGN aligned: every
 * MAP, UNMAP, PROTECT and COPY inside it works in whole 64 KiB tiles (VA,
 * size and offset DRM_PAGODA_VM_TILE aligned), and on a device of 64 KiB
 * segment pages a MAP there names an allocation that may only live in
 * VRAM or hidden VRAM (its tiles are then one page-table entry each);
 * EINVAL otherwise. FREE takes a whole reservation back
 * (ENOENT if @va, @size is not one) and unmaps what it holds. MAP with
 * DRM_PAGODA_VM_FIXED maps inside one reservation (ENOENT otherwise),
 * replacing what was mapped there; without it the driver reserves a
 * range in [min_va, max_va) for the mapping, @size rounded up to
 * DRM_PAGODA_VA_ALIGN (freed with FREE of that rounded size). UNMAP
 * unmaps [va, va + size), which must lie in one reservation and be
 * mapped throughout (ENOENT otherwise). PROTECT gives the same range the
 * protections of @flags (DRM_PAGODA_VM_READ_ONLY, DRM_PAGODA_VM_NO_EXECUTE;
 * none: read, write and execute), keeping what each page maps (an
 * allocation's page, or zero pages). COPY makes [va, va + size) map what
 * [offset, offset + size) maps, page for page, with the same protections
 * (an allocation's page, zero pages, or nothing: unmapped), copying no
 * data (D3D12's CopyTileMappings); each range lies in one reservation
 * (ENOENT otherwise), they do not overlap and agree in their low 16 bits
 * (EINVAL otherwise).
 */
#define DRM_PAGODA_VM_INSTANCE_SELF	0
#define DRM_PAGODA_VM_INSTANCE(adapter)	((adapter) + 1)

struct drm_pagoda_vm_op {
	__u32 op;
	__u32 flags;
	__u32 handle;
	__u32 instance;
	__u64 va;
	__u64 size;
	__u64 offset;
	__u64 min_va;
	__u64 max_va;
};

/**
 * struct drm_pagoda_sync - a DRM syncobj, binary or timeline
 * @handle: the syncobj's handle
 * @flags: must be zero
 * @point: timeline point; 0 for a binary syncobj
 */
struct drm_pagoda_sync {
	__u32 handle;
	__u32 flags;
	__u64 point;
};

/* drm_pagoda_vm_bind.flags */
#define DRM_PAGODA_VM_BIND_QUEUE	(1u << 0)	/* a queue operation: runs later, in order */
#define DRM_PAGODA_VM_BIND_FLAGS	0x1

/**
 * struct drm_pagoda_vm_bind - argument of DRM_IOCTL_PAGODA_VM_BIND
 * @ops: user pointer to @count struct drm_pagoda_vm_op; their @va are
 *	written back
 * @count: in: operations, 1 .. DRM_PAGODA_VM_BIND_MAX_OPS; out: the
 *	operations done (all of them on success, see below)
 * @flags: DRM_PAGODA_VM_BIND_*
 * @out_sync: a syncobj that receives the fence after which the GPU sees
 *	every change of the operations (handle 0: none)
 * @in_syncs: user pointer to @in_count struct drm_pagoda_sync whose
 *	fences the operations wait for (DRM_PAGODA_VM_BIND_QUEUE only)
 * @in_count: 0 .. DRM_PAGODA_SUBMIT_MAX_SYNCS
 * @pad: must be zero
 *
 * Operations run in order. Each is checked (flags, alignment, sizes,
 * handles) before any runs: such an error changes nothing. An operation
 * that fails against the state the earlier ones left (EEXIST, ENOENT,
 * ENOSPC), or for want of memory or time (ENOMEM, EINTR, EBUSY,
 * ETIMEDOUT), stops the batch: @count tells how many ran (a PROTECT so
 * stopped may have changed the first mappings of its range). EIO means the
 * address space can no longer be updated (a page-table update failed part
 * way): its file must be closed.
 *
 * With DRM_PAGODA_VM_BIND_QUEUE the call is a queue operation (Vulkan's
 * vkQueueBindSparse): it checks the operations, which must all name their
 * addresses (DRM_PAGODA_VM_FIXED, or FREE, UNMAP, PROTECT, COPY), and
 * returns at once with @count unchanged; they run after every fence of
 * @in_syncs has signalled and after the space's earlier queue operations,
 * and the fence @out_sync receives signals when the GPU sees their
 * changes, with the error that stopped them if one did (the rest did not
 * run). A VM_BIND without the flag runs after the queued ones.
 */
struct drm_pagoda_vm_bind {
	__u64 ops;
	__u32 count;
	__u32 flags;
	struct drm_pagoda_sync out_sync;
	__u64 in_syncs;
	__u32 in_count;
	__u32 pad;
};

/**
 * struct drm_pagoda_ctx_create - argument of DRM_IOCTL_PAGODA_CTX_CREATE
 * @priority: in: DRM_PAGODA_PRIORITY_* of the context's jobs
 * @flags: in: must be zero
 * @ctx_id: out: the context's id, used by the file that created it
 * @adapter: in: the GPU of the logical adapter whose engines run its jobs,
 *	below DRM_PAGODA_PARAM_NUM_ADAPTERS (0 on a single GPU)
 *
 * A GPU context runs render jobs on the file's address space, on one GPU:
 * on a linked adapter the space has page tables on every GPU of it.
 */
struct drm_pagoda_ctx_create {
	__u32 priority;
	__u32 flags;
	__u32 ctx_id;
	__u32 adapter;
};

/**
 * struct drm_pagoda_ctx_destroy - argument of DRM_IOCTL_PAGODA_CTX_DESTROY
 * @ctx_id: the context; its queued jobs still run
 * @pad: must be zero
 */
struct drm_pagoda_ctx_destroy {
	__u32 ctx_id;
	__u32 pad;
};

/* Bytes a command buffer of DRM_IOCTL_PAGODA_SUBMIT may have. */
#define DRM_PAGODA_SUBMIT_MAX_SIZE	(16u << 20)
/* Most in or out syncobjs of one submission. */
#define DRM_PAGODA_SUBMIT_MAX_SYNCS	64

/**
 * struct drm_pagoda_submit - argument of DRM_IOCTL_PAGODA_SUBMIT
 * @ctx_id: a context of this file
 * @flags: must be zero
 * @cmd_va: GPU VA of the command buffer, 4-byte aligned
 * @cmd_size: its bytes: a multiple of 4, 4 .. DRM_PAGODA_SUBMIT_MAX_SIZE
 * @in_count: syncobjs in @in_syncs (at most DRM_PAGODA_SUBMIT_MAX_SYNCS)
 * @out_count: syncobjs in @out_syncs (likewise)
 * @pad: must be zero
 * @in_syncs: user pointer to struct drm_pagoda_sync the job waits for
 * @out_syncs: user pointer to struct drm_pagoda_sync that receive the
 *	job's fence (a timeline point is added, a binary one replaced)
 *
 * The job runs the buffer on the render engine through the file's address
 * space, after the page-table updates of earlier DRM_IOCTL_PAGODA_VM_BIND
 * calls. Its fence carries an error when it did not complete: EFAULT when
 * it faulted, or when it was queued behind a job of the same address space
 * (any context of the file) that faulted; ECANCELED when its context was
 * banned before it ran; ETIMEDOUT when the engine was reset. Read it from
 * DRM_IOCTL_PAGODA_CTX_QUERY or a sync_file's status.
 */
struct drm_pagoda_submit {
	__u32 ctx_id;
	__u32 flags;
	__u64 cmd_va;
	__u32 cmd_size;
	__u32 in_count;
	__u32 out_count;
	__u32 pad;
	__u64 in_syncs;
	__u64 out_syncs;
};

/* drm_pagoda_ctx_query.status */
#define DRM_PAGODA_CTX_BANNED		(1u << 0)	/* submissions fail with ECANCELED */
#define DRM_PAGODA_CTX_FAULTED		(1u << 1)	/* one of its jobs faulted: @fault_* tell */
#define DRM_PAGODA_CTX_RESET_GUILTY	(1u << 2)	/* one of its jobs hung: a reset stopped it */
#define DRM_PAGODA_CTX_RESET_INNOCENT	(1u << 3)	/* a reset stopped its jobs, which ran again */

/**
 * struct drm_pagoda_ctx_query - argument of DRM_IOCTL_PAGODA_CTX_QUERY
 * @ctx_id: in: a context of this file
 * @status: out: DRM_PAGODA_CTX_*
 * @fault_va: out: VA of the first fault (PAGODA_REG_FAULT_VA)
 * @fault_code: out: its PAGODA_FAULT_* code
 * @fault_access: out: its PAGODA_ACCESS_* access
 * @fault_level: out: its page-table level (0xff when not a walk)
 * @pad: must be zero
 * @resets: out: engine and adapter resets that stopped jobs of the
 *	context (guilty or innocent), like other drivers' reset status
 *
 * The context's reset status: DRM_PAGODA_CTX_RESET_GUILTY once a job of it
 * ran past the timeout (it is then banned too), DRM_PAGODA_CTX_RESET_INNOCENT
 * once a reset that another job caused stopped some of its jobs (they ran
 * again from the start and completed normally).
 */
struct drm_pagoda_ctx_query {
	__u32 ctx_id;
	__u32 status;
	__u64 fault_va;
	__u32 fault_code;
	__u32 fault_access;
	__u32 fault_level;
	__u32 pad;
	__u64 resets;
};

/* Rows of the resource table of DRM_IOCTL_PAGODA_SUBMIT_PHYS (slot ids). */
#define DRM_PAGODA_MAX_SLOT_ID		64
/* Most entries of its allocation list and of its patch-location list. */
#define DRM_PAGODA_PHYS_MAX_ALLOCS	256
#define DRM_PAGODA_PHYS_MAX_PATCHES	4096

/* drm_pagoda_phys_alloc.flags */
#define DRM_PAGODA_PHYS_WRITE		(1u << 0)	/* the buffer writes the allocation */

/**
 * struct drm_pagoda_phys_alloc - an entry of the allocation list
 * @handle: a GEM handle of this file, created DRM_PAGODA_BO_PHYSICAL; 0
 *	for the NULL allocation (a patch-location entry naming it unbinds
 *	its slot)
 * @flags: DRM_PAGODA_PHYS_WRITE, or 0 (the buffer only reads it); 0 for
 *	the NULL allocation
 */
struct drm_pagoda_phys_alloc {
	__u32 handle;
	__u32 flags;
};

/**
 * struct drm_pagoda_phys_patch - an entry of the patch-location list
 * @alloc_index: entry of the allocation list
 * @slot_id: row of the resource table, below DRM_PAGODA_MAX_SLOT_ID
 * @alloc_offset: byte of the allocation whose physical address is patched
 *	(0 for the NULL allocation)
 * @patch_offset: byte of the buffer that receives it: an address operand
 *	(0 for the NULL allocation, which patches nothing)
 * @split_offset: byte of the buffer (a command boundary) from which the
 *	slot holds the allocation; non-decreasing along the list
 */
struct drm_pagoda_phys_patch {
	__u32 alloc_index;
	__u32 slot_id;
	__u64 alloc_offset;
	__u32 patch_offset;
	__u32 split_offset;
};

/**
 * struct drm_pagoda_submit_phys - argument of DRM_IOCTL_PAGODA_SUBMIT_PHYS
 * @ctx_id: a context of this file
 * @flags: must be zero
 * @cmds: user pointer to the DMA buffer, copied by the kernel
 * @cmd_size: its bytes: a multiple of 4, 4 .. DRM_PAGODA_SUBMIT_MAX_SIZE
 * @alloc_count: entries of @allocs, 0 .. DRM_PAGODA_PHYS_MAX_ALLOCS
 * @allocs: user pointer to struct drm_pagoda_phys_alloc
 * @patch_count: entries of @patches, 0 .. DRM_PAGODA_PHYS_MAX_PATCHES
 * @in_count: syncobjs in @in_syncs (at most DRM_PAGODA_SUBMIT_MAX_SYNCS)
 * @patches: user pointer to struct drm_pagoda_phys_patch
 * @in_syncs: user pointer to struct drm_pagoda_sync the job waits for
 * @out_syncs: user pointer to struct drm_pagoda_sync that receive the
 *	fence of the buffer's last portion
 * @out_count: syncobjs in @out_syncs
 * @portions: out: the portions the buffer ran in (1 when not split)
 *
 * The render engine runs the buffer in physical mode: every address in it
 * is one the kernel patched in, the (segment, offset) of an allocation of
 * the list. The kernel parses the buffer first and rejects it (EINVAL,
 * nothing changes) unless each command is NOP, SIGNAL_FENCE, WAIT_FENCE,
 * COPY, FILL32, WRITE_IMM or CRC32 without flags, each of its address
 * operands is the @patch_offset of exactly one patch-location entry, and
 * each access (patched address plus the command's size) stays inside that
 * entry's allocation, one listed DRM_PAGODA_PHYS_WRITE where the command
 * writes. Entries bind their allocation to their slot from their
 * @split_offset until the slot's next entry with a greater one; a patch
 * offset lies inside that range.
 *
 * Allocations are paged in in list order. When one cannot be, the buffer
 * up to that entry's split offset runs (a portion), the allocations the
 * resource table holds there stay where they are, others may be evicted,
 * and paging continues (splitting). The portions run back to back on the
 * render engine: no other context's job between them.
 */
struct drm_pagoda_submit_phys {
	__u32 ctx_id;
	__u32 flags;
	__u64 cmds;
	__u32 cmd_size;
	__u32 alloc_count;
	__u64 allocs;
	__u32 patch_count;
	__u32 in_count;
	__u64 patches;
	__u64 in_syncs;
	__u64 out_syncs;
	__u32 out_count;
	__u32 portions;
};

#if defined(__cplusplus)
}
#endif

#endif /* _PAGODA_DRM_H_ */
