// SPDX-License-Identifier: MIT
/*
 * A linked adapter is one DRM device: the Pagoda PCI functions of one link
 * (scripts/run-guest.sh --link N, pagoda_guest.link=N on the kernel command
 * line; one GPU without it) show one render node, on the first of them;
 * GET_PARAM reports N adapters and describes each GPU of the link (its
 * LINK_INDEX, VRAM and hidden VRAM sizes read from its own registers
 * through sysfs), and refuses an adapter beyond them with EINVAL.
 * Unbinding any one member takes the whole logical adapter away (a file
 * opened before gets ENODEV; its jobs of the first GPU reading the last
 * GPU's VRAM end) and binding it again brings it back whole.
 *
 * Peer mappings: allocations created on GPU 1 (GEM_CREATE's adapter, as
 * GEM_INFO reports it) in its VRAM, its hidden VRAM, and 4 MiB of VRAM in
 * 2 MiB pages, written by the CPU through GPU 1's BARs and mapped into the
 * process's address space, are read and written by a job on GPU 0
 * through peer entries, byte-exact against the CPU; pushed out of GPU 1's
 * VRAM by other allocations there, the same job still gets the same bytes
 * (the space's entries follow the move). A physical-mode buffer on GPU 0
 * cannot name GPU 1's allocation, nor can GPU 0's display scan one out
 * (EINVAL), and an adapter beyond the link is EINVAL. An adapter reset of
 * GPU 1 (its paging engine hung) leaves GPU 0's jobs on GPU 1's VRAM
 * running, byte-exact, and GPU 0 without a reset.
 *
 * One address space, tables on every GPU: contexts created on GPU 1 run
 * jobs there that read and write GPU 0's allocations through GPU 1's own
 * tables (debugfs shows a slot and a root in each GPU's VRAM, and trees
 * of the same shape); a syncobj of a GPU 0 job orders a GPU 1 job behind
 * it; a job of GPU 1 that never ends is stopped by GPU 1's engine reset,
 * its context banned and guilty, while GPU 0's jobs complete untouched.
 * Read through each GPU's BAR2, the space's root is at one offset with
 * identical entries on every GPU and the tables below it at the same
 * offsets, their entries differing only where a GPU reaches the memory as
 * a peer; so again after each GPU's VRAM was evicted.
 *
 * LinkInstanced allocations have an instance per GPU, mapped "self" (each
 * GPU its own) or to one GPU's instance (peer entries elsewhere);
 * LinkMirrored ones sit at one offset of VRAM on every GPU, evicted or
 * not; their bad arguments, and any on a GPU that is not linked, are
 * EINVAL.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <drm_fourcc.h>
#include <xf86drmMode.h>

#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define GIB		(1024 * MIB)

struct member {
	char bdf[PT_NAME_MAX];
	volatile uint32_t *mmio;
	uint32_t index;
};

static int by_index(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	return (int)x->index - (int)y->index;
}

/* Every Pagoda PCI function, sorted by physical adapter index. */
static unsigned int find_members(struct member *members, unsigned int max)
{
	char path[PT_PATH_MAX];
	uint64_t vendor = 0, device = 0;
	unsigned int n = 0;
	struct dirent *de;
	DIR *dir;

	dir = opendir(PT_PCI_DEVICES);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/vendor", de->d_name);
		if (pt_read_u64(path, &vendor) || vendor != PAGODA_PCI_VENDOR_ID)
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/device", de->d_name);
		if (pt_read_u64(path, &device) || device != PAGODA_PCI_DEVICE_ID)
			continue;
		snprintf(members[n].bdf, sizeof(members[n].bdf), "%s", de->d_name);
		members[n].mmio = pt_map_mmio(de->d_name);
		if (!pt_check(members[n].mmio != NULL, "map BAR0 of %s", de->d_name))
			continue;
		members[n].index = pt_reg(members[n].mmio, PAGODA_REG_LINK_INDEX);
		n++;
	}
	closedir(dir);
	qsort(members, n, sizeof(*members), by_index);
	return n;
}

static int adapter_param(int fd, uint32_t adapter, uint32_t param, uint64_t *value)
{
	struct drm_pagoda_get_param args = { .param = param, .adapter = adapter };

	if (ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args))
		return -errno;
	*value = args.value;
	return 0;
}

static uint64_t seg_size(volatile uint32_t *mmio, unsigned int id)
{
	return (uint64_t)pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_HI) << 32 |
	       pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_LO);
}

static void check_adapter(int fd, uint32_t adapter, const struct member *m)
{
	static const struct { uint32_t param; const char *name; } params[] = {
		{ DRM_PAGODA_PARAM_LINK_INDEX, "LINK_INDEX" },
		{ DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM_SIZE" },
		{ DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, "HIDDEN_VRAM_SIZE" },
		{ DRM_PAGODA_PARAM_NUM_CONTEXTS, "NUM_CONTEXTS" },
	};
	uint64_t want[] = {
		pt_reg(m->mmio, PAGODA_REG_LINK_INDEX),
		(uint64_t)pt_reg(m->mmio, PAGODA_REG_VRAM_SIZE_HI) << 32 |
			pt_reg(m->mmio, PAGODA_REG_VRAM_SIZE_LO),
		seg_size(m->mmio, PAGODA_SEG_VRAM_HIDDEN),
		pt_reg(m->mmio, PAGODA_REG_NUM_CONTEXTS),
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(params); i++) {
		uint64_t value = ~0ull;
		int ret = adapter_param(fd, adapter, params[i].param, &value);

		pt_check(!ret && value == want[i], "adapter %u (%s): %s = 0x%llx (its registers: 0x%llx)%s%s",
			 adapter, m->bdf, params[i].name, (unsigned long long)value,
			 (unsigned long long)want[i], ret ? ": " : "", ret ? strerror(-ret) : "");
	}
}

/* The members that have a render node: exactly the first, @node its path. */
static unsigned int render_nodes(const struct member *members, unsigned int n, char *node,
				 size_t len)
{
	char path[PT_PATH_MAX];
	unsigned int i, found = 0;

	for (i = 0; i < n; i++) {
		if (pt_render_node(members[i].bdf, path, sizeof(path)))
			continue;
		if (!found++)
			snprintf(node, len, "%s", path);
	}
	return found;
}

static void check_whole(const struct member *members, unsigned int n, const char *when)
{
	char node[PT_PATH_MAX] = "";
	uint64_t value = 0;
	unsigned int i;
	int fd, ret, tries;

	/* binding the link is asynchronous to the sysfs write of its last member */
	for (tries = 0; tries < 100 && !render_nodes(members, n, node, sizeof(node)); tries++)
		pt_sleep_ms(20);
	pt_check(render_nodes(members, n, node, sizeof(node)) == 1 &&
		 !pt_render_node(members[0].bdf, node, sizeof(node)),
		 "%s: one render node for the %u GPUs, on the first (%s)", when, n, node);
	if (!pt_check(pt_wait_path(node, 1), "%s: %s exists", when, node))
		return;
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "%s: open %s", when, node))
		return;
	ret = adapter_param(fd, 0, DRM_PAGODA_PARAM_NUM_ADAPTERS, &value);
	pt_check(!ret && value == n, "%s: NUM_ADAPTERS = %llu (want %u)", when,
		 (unsigned long long)value, n);
	for (i = 0; i < n; i++)
		check_adapter(fd, i, &members[i]);
	ret = adapter_param(fd, n, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -EINVAL, "%s: adapter %u (one past the last): %s (want EINVAL)", when, n,
		 ret ? strerror(-ret) : "succeeded");
	ret = adapter_param(fd, 0xffffffff, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -EINVAL, "%s: adapter 0xffffffff: %s (want EINVAL)", when,
		 ret ? strerror(-ret) : "succeeded");
	close(fd);
}

/*
 * An allocation of GPU @adapter in @seg (and system memory), mapped by the
 * CPU and the space (at the lowest free VA from @min_va).
 */
static int peer_buf(struct pagoda_dev *dev, struct pt_buf *b, uint64_t size, unsigned int seg,
		    uint32_t adapter, uint32_t flags, uint64_t min_va)
{
	struct pagoda_bo_desc desc = {
		.size = size, .flags = flags, .adapter = adapter,
		.segments = DRM_PAGODA_SEGMENT_MASK(seg) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = seg, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	int ret;

	memset(b, 0, sizeof(*b));
	ret = pagoda_bo_create(dev, &desc, &b->bo);
	if (!ret)
		ret = pagoda_bo_map(dev, &b->bo);
	if (!ret && !(flags & DRM_PAGODA_BO_PHYSICAL))
		ret = pagoda_vm_map(dev, b->bo.handle, 0, b->bo.size, 0, &b->va, min_va, 0, 0);
	return ret;
}

/*
 * What the jobs of the first GPU need: a context, an allocation of
 * @local_size in its VRAM and a command buffer, all mapped. 0 or -errno.
 */
static int first_gpu_rig(struct pagoda_dev *dev, uint32_t *ctx, struct pt_buf *local,
			 uint64_t local_size, struct pt_buf *cmd)
{
	int ret = pagoda_ctx_create(dev, DRM_PAGODA_PRIORITY_NORMAL, ctx);

	if (!ret)
		ret = pt_buf_create(dev, local, local_size, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(dev, cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	return ret;
}

/*
 * Jobs of the first GPU copying the last GPU's VRAM, queued on @dev and not
 * waited for; a sync_file of the last one's fence, or -1.
 */
static int peer_work(struct pagoda_dev *dev, unsigned int n, struct pt_buf *bufs)
{
	struct drm_pagoda_sync out = { 0 };
	struct pagoda_cmdbuf cb;
	uint32_t ctx;
	int i, fd = -1, ret;

	ret = first_gpu_rig(dev, &ctx, &bufs[1], 8 * MIB, &bufs[2]);
	if (!ret)
		ret = peer_buf(dev, &bufs[0], 8 * MIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!ret)
		ret = pagoda_syncobj_create(dev, &out.handle);
	if (!pt_check(!ret, "work in flight: a context and allocations (%d)", ret))
		return -1;
	pagoda_cmdbuf_init(&cb, bufs[2].bo.map, bufs[2].bo.size);
	for (i = 0; i < 64; i++)
		pagoda_cmd_copy(&cb, bufs[0].va, bufs[1].va, 8 * MIB);
	/* 8 jobs of 512 MiB of copies from the peer each */
	for (i = 0; i < 8 && !ret; i++)
		ret = pagoda_submit(dev, ctx, bufs[2].va, cb.used_bytes, NULL, 0, &out, 1);
	if (!ret)
		ret = drmSyncobjExportSyncFile(dev->fd, out.handle, &fd) ? -errno : 0;
	pt_check(!ret, "work in flight: 8 jobs copying GPU %u's VRAM queued (%s)", n - 1,
		 ret ? strerror(-ret) : "ok");
	return fd;
}

/*
 * Unbinding member @m takes the logical adapter away, with jobs of the
 * first GPU still reading the last GPU's VRAM: they end (their fence
 * signals, done or failed) and nothing else happens; binding the member
 * again brings the link back.
 */
static void unbind_member(const struct member *members, unsigned int n, unsigned int m)
{
	char node[PT_PATH_MAX], again[PT_PATH_MAX] = "", when[64];
	struct pollfd pfd = { .events = POLLIN };
	struct sync_file_info info;
	struct pagoda_dev dev;
	struct pt_buf bufs[3];
	uint64_t value;
	unsigned int i;
	int ret;

	snprintf(when, sizeof(when), "member %u rebound", m);
	if (!pt_check(!pt_render_node(members[0].bdf, node, sizeof(node)), "render node before unbind"))
		return;
	dev.fd = open(node, O_RDWR | O_CLOEXEC);
	if (!pt_check(dev.fd >= 0, "open %s", node))
		return;
	memset(bufs, 0, sizeof(bufs));
	pfd.fd = peer_work(&dev, n, bufs);

	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", members[m].bdf);
	pt_check(!ret, "unbind member %u (%s) with the jobs queued: %s", m, members[m].bdf,
		 ret ? strerror(-ret) : "done");
	pt_check(pt_wait_path(node, 0), "after unbinding member %u: %s is gone", m, node);
	ret = pt_get_param(dev.fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -ENODEV, "GET_PARAM on a file opened before: %s (want ENODEV)",
		 ret ? strerror(-ret) : "succeeded");
	if (pfd.fd >= 0) {
		ret = poll(&pfd, 1, 30000);
		memset(&info, 0, sizeof(info));
		if (ret == 1)
			ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &info);
		pt_check(ret == 1, "the last job's fence signalled after the unbind (status %d)",
			 info.status);
		close(pfd.fd);
	}
	/* the CPU mappings keep the file (and the DRM device) alive: let them go */
	for (i = 0; i < ARRAY_SIZE(bufs); i++)
		if (bufs[i].bo.map)
			pagoda_bo_unmap(&bufs[i].bo);
	/* the file's allocations and context go with it */
	close(dev.fd);

	ret = pt_write_file(PT_DRIVER_SYSFS "/bind", members[m].bdf);
	pt_check(!ret, "bind member %u again: %s", m, ret ? strerror(-ret) : "done");
	check_whole(members, n, when);
	/* the unbound link's DRM device was freed: its node number is free again */
	pt_check(!pt_render_node(members[0].bdf, again, sizeof(again)) && !strcmp(again, node),
		 "%s: the link is back on %s (was %s)", when, again, node);
}

/*
 * GPU @adapter's own debugfs files (gpu<adapter>/) count what it holds in
 * segment @seg: at least @bytes in use.
 */
static void check_gpu_debugfs(uint32_t adapter, unsigned int seg, uint64_t bytes)
{
	static const char *const names[] = { "0 system", "1 vram", "2 hidden-vram" };
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 32];
	long long used;

	if (!pt_check(pt_debugfs_dir(dbg, sizeof(dbg)), "debugfs directory"))
		return;
	snprintf(path, sizeof(path), "%s/gpu%u/segments", dbg, adapter);
	used = pt_debugfs_value(path, names[seg], " used ");
	pt_check(used >= (long long)bytes, "%s: %s used %lld (at least %llu)", path, names[seg],
		 used, (unsigned long long)bytes);
}

/* pt_debugfs_value() of the link's debugfs file @file, or -1. */
static long long link_debugfs_value(const char *file, const char *start, const char *word)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 32];

	if (!pt_debugfs_dir(dbg, sizeof(dbg)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dbg, file);
	return pt_debugfs_value(path, start, word);
}

/* Leaf tables of this process's space (debugfs "vms"; one space open), or -1. */
static long long leaf_tables(void)
{
	return link_debugfs_value("vms", "  tables", "level0 ");
}

static uint32_t segment_of(struct pagoda_dev *dev, const struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_info info = { .handle = bo->handle };

	return ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_INFO, &info) ? ~0u : info.segment;
}

/* The GPU GEM_INFO says holds @bo, or ~0 when it fails. */
static uint32_t adapter_of(struct pagoda_dev *dev, const struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_info info = { .handle = bo->handle, .pad2 = 0x5a5a };

	return ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_INFO, &info) || info.pad2 ? ~0u : info.adapter;
}

/*
 * A job on GPU 0 copies the first half of @peer into @local, fills the
 * third quarter of @peer, writes immediates at its end and the CRC32 of
 * @local's copy next to them; everything checked against the CPU model.
 */
static void peer_job(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *peer,
		     struct pt_buf *local, struct pt_buf *cmd, const char *what)
{
	static const uint32_t imm[] = { 0xfeedface, 0x0badf00d, 0x13579bdf };
	uint64_t size = peer->bo.size;
	uint32_t *p = peer->bo.map, *l = local->bo.map, *model, i, bad = 0;
	struct pagoda_cmdbuf cb;
	int ret;

	model = malloc(size);
	if (!pt_check(model != NULL, "%s: memory for the model", what))
		return;
	for (i = 0; i < size / 4; i++)
		p[i] = model[i] = i * 2654435761u ^ 0x5eed;
	memset(l, 0x5a, local->bo.size);
	pagoda_cmdbuf_init(&cb, cmd->bo.map, cmd->bo.size);
	pagoda_cmd_copy(&cb, peer->va, local->va, size / 2);
	pagoda_cmd_fill(&cb, peer->va + size / 2, size / 4, 0xc0ffee11);
	pagoda_cmd_write_imm(&cb, peer->va + size - 64, imm, 3);
	pagoda_cmd_crc32(&cb, local->va, size / 2, peer->va + size - 8);
	ret = pt_run(dev, ctx, cmd, &cb);
	pt_check(!ret, "%s: the job ran (%s)", what, ret ? strerror(-ret) : "ok");

	for (i = size / 8; i < size / 16 * 3; i++)
		model[i] = 0xc0ffee11;
	memcpy(&model[size / 4 - 16], imm, sizeof(imm));
	model[size / 4 - 2] = pt_crc32(model, size / 2);
	for (i = 0; i < size / 8; i++)
		bad += l[i] != model[i];
	for (i = 0; i < size / 4; i++)
		bad += p[i] != model[i];
	pt_check(!bad, "%s: the other GPU's allocation read and written byte-exact (%u words differ)",
		 what, bad);
	free(model);
}

static void test_peer(unsigned int n)
{
	/* 4 MiB of VRAM at a 2 MiB aligned VA: 2 MiB pages, with the peer's index too */
	static const unsigned int segs[] = {
		DRM_PAGODA_SEGMENT_VRAM, DRM_PAGODA_SEGMENT_VRAM_HIDDEN, DRM_PAGODA_SEGMENT_VRAM,
	};
	static const uint64_t sizes[] = { 256 * KIB, 256 * KIB, 4 * MIB };
	static const char *const names[] = { "", "VRAM", "hidden VRAM" };
	struct pt_buf peer, local, cmd, fill[40];
	struct pagoda_dev dev;
	unsigned int i, f, nfill;
	char what[64];
	uint32_t ctx;
	int ret;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	ret = first_gpu_rig(&dev, &ctx, &local, 4 * MIB, &cmd);
	if (!pt_check(!ret, "a context, a local allocation and a command buffer (%d)", ret))
		goto out;

	for (i = 0; i < ARRAY_SIZE(segs); i++) {
		long long leaves = leaf_tables();

		ret = peer_buf(&dev, &peer, sizes[i], segs[i], n - 1, 0, sizes[i] == 4 * MIB ? GIB : 0);
		if (!pt_check(!ret, "an allocation in GPU %u's %s, mapped (%d)", n - 1,
			      names[segs[i]], ret))
			continue;
		if (sizes[i] == 4 * MIB)
			pt_check(leaf_tables() == leaves,
				 "4 MiB of GPU %u's VRAM mapped in 2 MiB pages: no new leaf table (%lld, %lld)",
				 n - 1, leaves, leaf_tables());
		pt_check(segment_of(&dev, &peer.bo) == segs[i], "it is in segment %u (want %u)",
			 segment_of(&dev, &peer.bo), segs[i]);
		pt_check(adapter_of(&dev, &peer.bo) == n - 1 && adapter_of(&dev, &local.bo) == 0,
			 "GEM_INFO: on GPU %u (want %u), the local one on GPU %u (want 0)",
			 adapter_of(&dev, &peer.bo), n - 1, adapter_of(&dev, &local.bo));
		check_gpu_debugfs(n - 1, segs[i], peer.bo.size);
		snprintf(what, sizeof(what), "peer %s, %llu KiB", names[segs[i]],
			 (unsigned long long)sizes[i] / KIB);
		peer_job(&dev, ctx, &peer, &local, &cmd, what);

		/* other allocations of the peer push it out of its segment */
		for (nfill = 0; nfill < ARRAY_SIZE(fill); nfill++) {
			struct pagoda_bo_desc desc = {
				.size = 4 * MIB, .adapter = n - 1,
				.segments = DRM_PAGODA_SEGMENT_MASK(segs[i]),
				.preferred_segment = segs[i], .eviction_segment = segs[i],
				.priority = DRM_PAGODA_PRIORITY_HIGH,
			};

			memset(&fill[nfill], 0, sizeof(fill[nfill]));
			if (pagoda_bo_create(&dev, &desc, &fill[nfill].bo))
				break;
			if (segment_of(&dev, &peer.bo) != segs[i])
				break;
		}
		pt_check(segment_of(&dev, &peer.bo) == DRM_PAGODA_SEGMENT_SYSTEM,
			 "%s: evicted to system memory by %u allocations of GPU %u", what,
			 nfill + 1, n - 1);
		snprintf(what, sizeof(what), "peer %s, %llu KiB, evicted", names[segs[i]],
			 (unsigned long long)sizes[i] / KIB);
		peer_job(&dev, ctx, &peer, &local, &cmd, what);
		for (f = 0; f <= nfill && f < ARRAY_SIZE(fill); f++)
			if (fill[f].bo.handle)
				pagoda_bo_free(&dev, &fill[f].bo);
		pt_buf_destroy(&dev, &peer);
	}
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &local);
out:
	pagoda_close(&dev);
}

/* A framebuffer of @w x @h over a new surface of GPU @adapter; 0 on failure. */
static uint32_t make_fb(struct pagoda_dev *dev, struct pt_buf *surface, uint32_t w, uint32_t h,
			uint32_t adapter)
{
	uint32_t handles[4] = { 0 }, pitches[4] = { w * 4 }, offsets[4] = { 0 }, fb_id = 0;

	if (peer_buf(dev, surface, (uint64_t)w * h * 4, DRM_PAGODA_SEGMENT_VRAM, adapter,
		     DRM_PAGODA_BO_PRIMARY, 0))
		return 0;
	handles[0] = surface->bo.handle;
	if (drmModeAddFB2(dev->fd, w, h, DRM_FORMAT_ARGB8888, handles, pitches, offsets, &fb_id, 0))
		return 0;
	return fb_id;
}

/*
 * Each plane (primary, cursor) shows a surface of GPU 0 and refuses the
 * same one of GPU @n - 1 with EINVAL: the controller reads its own memory.
 */
static void show_on_planes(struct pagoda_dev *dev, unsigned int n)
{
	drmModePlaneRes *planes;
	struct pt_buf surface[2];
	drmModeCrtc *crtc = NULL;
	drmModeRes *res;
	uint32_t fb[2] = { 0 }, p, w = 0, h = 0, k;

	drmSetClientCap(dev->fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1);
	res = drmModeGetResources(dev->fd);
	planes = drmModeGetPlaneResources(dev->fd);
	if (res && res->count_crtcs)
		crtc = drmModeGetCrtc(dev->fd, res->crtcs[0]);
	if (crtc && crtc->mode_valid) {
		w = crtc->mode.hdisplay;
		h = crtc->mode.vdisplay;
	}
	if (!pt_check(planes && w && h, "planes and the CRTC's mode (%ux%u)", w, h))
		goto out;
	for (k = 0; k < 2; k++) {
		fb[k] = make_fb(dev, &surface[k], w, h, k ? n - 1 : 0);
		pt_check(fb[k], "a %ux%u framebuffer of GPU %u", w, h, k ? n - 1 : 0);
	}
	for (p = 0; fb[0] && fb[1] && p < planes->count_planes; p++) {
		drmModePlane *plane = drmModeGetPlane(dev->fd, planes->planes[p]);
		/* the primary plane shows the console's framebuffer; the cursor is 64x64 */
		uint32_t pw = plane && plane->fb_id == crtc->buffer_id ? w : 64;
		int ret[2];

		for (k = 0; k < 2; k++)
			ret[k] = drmModeSetPlane(dev->fd, planes->planes[p], res->crtcs[0], fb[k], 0, 0,
						 0, pw, pw == w ? h : 64, 0, 0, pw << 16,
						 (pw == w ? h : 64) << 16) ? errno : 0;
		pt_check(!ret[0] && ret[1] == EINVAL,
			 "plane %u: GPU 0's surface %s, GPU %u's %s (want shown, EINVAL)",
			 planes->planes[p], ret[0] ? strerror(ret[0]) : "shown", n - 1,
			 ret[1] ? strerror(ret[1]) : "shown");
		drmModeFreePlane(plane);
	}
	for (k = 0; k < 2; k++) {
		if (fb[k])
			drmModeRmFB(dev->fd, fb[k]);
		if (surface[k].bo.handle) {
			pagoda_bo_unmap(&surface[k].bo);
			pagoda_bo_free(dev, &surface[k].bo);
		}
	}
out:
	drmModeFreeCrtc(crtc);
	drmModeFreePlaneResources(planes);
	drmModeFreeResources(res);
}

struct hang_arg {
	char path[PT_PATH_MAX + 32];
	int result;
};

/* Write the GPU's debugfs paging_hang: returns once its adapter reset is done. */
static void *hang_gpu(void *arg)
{
	struct hang_arg *h = arg;
	int fd = open(h->path, O_WRONLY);

	h->result = fd < 0 ? -errno : write(fd, "1", 1) == 1 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * Recovery is per GPU: the last GPU's paging engine hangs and that GPU
 * gets an adapter reset, while jobs of the first GPU keep reading and
 * writing the last GPU's VRAM through peer entries, byte-exact (VRAM is
 * kept across an adapter reset); the first GPU has no reset.
 */
static void test_peer_reset(unsigned int n)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 32], what[64];
	struct pt_buf peer, local, cmd;
	struct hang_arg hang = { .result = -1 };
	long long mine, theirs;
	struct pagoda_dev dev;
	pthread_t thread;
	uint32_t ctx;
	int ret, i;

	if (!pt_check(pt_debugfs_dir(dbg, sizeof(dbg)), "debugfs directory") ||
	    !pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	snprintf(path, sizeof(path), "%s/resets", dbg);
	mine = pt_debugfs_value(path, "adapter resets", "adapter resets ");
	snprintf(path, sizeof(path), "%s/gpu%u/resets", dbg, n - 1);
	theirs = pt_debugfs_value(path, "adapter resets", "adapter resets ");
	ret = first_gpu_rig(&dev, &ctx, &local, 256 * KIB, &cmd);
	if (!ret)
		ret = peer_buf(&dev, &peer, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!pt_check(!ret, "peer reset: allocations (%d)", ret))
		goto out;
	peer_job(&dev, ctx, &peer, &local, &cmd, "peer reset: before");

	snprintf(hang.path, sizeof(hang.path), "%s/gpu%u/paging_hang", dbg, n - 1);
	if (!pt_check(!pthread_create(&thread, NULL, hang_gpu, &hang), "peer reset: thread"))
		goto out;
	/* the hang is on GPU 1's ring by then (its watchdog fires after 3 s and more) */
	pt_sleep_ms(500);
	for (i = 0; i < 4; i++) {
		snprintf(what, sizeof(what), "peer reset: while GPU %u hangs (%d)", n - 1, i);
		peer_job(&dev, ctx, &peer, &local, &cmd, what);
	}
	pthread_join(thread, NULL);
	pt_check(!hang.result, "GPU %u's paging engine hung and was reset (%s)", n - 1,
		 hang.result ? strerror(-hang.result) : "ok");
	peer_job(&dev, ctx, &peer, &local, &cmd, "peer reset: after");
	snprintf(path, sizeof(path), "%s/gpu%u/resets", dbg, n - 1);
	pt_check(pt_debugfs_value(path, "adapter resets", "adapter resets ") == theirs + 1,
		 "GPU %u: one more adapter reset (%lld before)", n - 1, theirs);
	snprintf(path, sizeof(path), "%s/resets", dbg);
	pt_check(pt_debugfs_value(path, "adapter resets", "adapter resets ") == mine,
		 "GPU 0: no adapter reset (%lld)", mine);
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &local);
	pt_buf_destroy(&dev, &peer);
out:
	pagoda_close(&dev);
}

/*
 * Whether a space of debugfs "vms" has a tree on each of the @n GPUs, each
 * with a slot and a root in that GPU's VRAM, and the same leaf tables.
 */
static void check_trees(unsigned int n)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 8], line[256], seg[16];
	unsigned int gpu, slot, entries, leaves, trees = 0, rooted = 0, same = 0, found = 0;
	unsigned int first_leaves = 0;
	FILE *f;

	if (!pt_check(pt_debugfs_dir(dbg, sizeof(dbg)), "debugfs directory"))
		return;
	snprintf(path, sizeof(path), "%s/vms", dbg);
	f = fopen(path, "r");
	if (!pt_check(f != NULL, "open %s", path))
		return;
	/* a line "vm ..." starts each space; "  gpu<i>: slot ..." then its tables start each tree */
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, ": slot ");

		if (!strncmp(line, "vm ", 3) || !strncmp(line, "  reserved", 10)) {
			found |= trees == n && rooted == n && same == n;
			trees = rooted = same = 0;
		} else if (!strncmp(line, "  gpu", 5) && p && sscanf(line, "  gpu%u", &gpu) == 1 &&
			   gpu == trees) {
			trees++;
			rooted += sscanf(p, ": slot %u root %u entries at %15s", &slot, &entries,
					 seg) == 3 && slot && !strcmp(seg, "vram");
		} else if (trees && sscanf(line, "  tables level0 %u", &leaves) == 1) {
			if (trees == 1)
				first_leaves = leaves;
			same += leaves == first_leaves;
		}
	}
	fclose(f);
	found |= trees == n && rooted == n && same == n;
	pt_check(found,
		 "debugfs vms: the space has tables on each of the %u GPUs, each with a slot and a root in its VRAM, the same leaf tables",
		 n);
}

/* Map the whole of BAR2 (CPU-visible VRAM) of @bdf read-only; its size in *@size. */
static const uint8_t *map_vram(const char *bdf, uint64_t *size)
{
	char path[2 * PT_PATH_MAX];
	struct stat st;
	void *map;
	int fd;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/resource%d", bdf, PAGODA_BAR_VRAM);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	*size = st.st_size;
	map = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return map == MAP_FAILED ? NULL : map;
}

/* A table walk of one GPU, read through its BAR2: each level's table and the last entry. */
struct walk {
	uint64_t table[4];
	uint64_t entry;
};

static int walk_va(const uint8_t *vram, uint64_t size, uint64_t root, unsigned int levels,
		   uint64_t va, struct walk *w)
{
	uint64_t table = root, index, entry;
	unsigned int l;

	for (l = levels - 1;; l--) {
		index = va >> (12 + 9 * l);
		if (l != levels - 1)
			index &= 511;
		if (table + index * 8 + 8 > size)
			return -1;
		w->table[l] = table;
		entry = *(const volatile uint64_t *)(vram + table + index * 8);
		if (!(entry & PAGODA_PTE_VALID))
			return -1;
		if (!l || entry & PAGODA_PTE_LARGE_PAGE) {
			w->entry = entry;
			return 0;
		}
		/* the walk reads tables through BAR2: they are in VRAM */
		if (PAGODA_PTE_SEGMENT(entry) != PAGODA_SEG_VRAM)
			return -1;
		table = PAGODA_PTE_ADDR(entry);
	}
}

/*
 * Each GPU's root (debugfs "vms": "  gpu<i>: slot S root E entries at vram 0x..."),
 * for the one space of this process; 0 when not found.
 */
static unsigned int tree_roots(unsigned int n, uint64_t *roots, uint32_t *entries)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 8], line[256], seg[16];
	unsigned int found = 0, gpu, slot;
	unsigned long long off;
	FILE *f;

	if (!pt_debugfs_dir(dbg, sizeof(dbg)))
		return 0;
	snprintf(path, sizeof(path), "%s/vms", dbg);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, ": slot ");

		if (!strncmp(line, "  gpu", 5) && p && sscanf(line, "  gpu%u", &gpu) == 1 &&
		    gpu < n && sscanf(p, ": slot %u root %u entries at %15s 0x%llx", &slot,
				      &entries[gpu], seg, &off) == 4 && !strcmp(seg, "vram")) {
			roots[gpu] = off;
			found++;
		}
	}
	fclose(f);
	return found;
}

/*
 * The space's tables as the model lays them out on a link, read from each
 * GPU's VRAM (@vram): the roots at one offset with identical entries
 * (mirrored), the tables below them at the same offsets on every GPU,
 * their entries differing where a GPU reaches the memory as a peer
 * (instanced). @peer is the last GPU's allocation, @local the first's.
 */
static void check_mirrored(const struct member *members, unsigned int n, const uint8_t **vram,
			   const uint64_t *vram_size, const struct pt_buf *peer,
			   const struct pt_buf *local, const char *when)
{
	uint64_t roots[PAGODA_LINK_MAX_ADAPTERS];
	uint32_t entries[PAGODA_LINK_MAX_ADAPTERS], levels;
	struct walk wp[PAGODA_LINK_MAX_ADAPTERS] = { 0 }, wl[PAGODA_LINK_MAX_ADAPTERS] = { 0 };
	unsigned int i, l, same_root = 1, same_tables = 1, walked = 1, flags_ok = 1;

	levels = pt_reg(members[0].mmio, PAGODA_REG_MMU_LEVELS);
	if (!pt_check(tree_roots(n, roots, entries) == n,
		      "%s: debugfs vms: a root in VRAM on each of the %u GPUs", when, n))
		return;
	for (i = 1; i < n; i++)
		same_root &= roots[i] == roots[0] && entries[i] == entries[0] &&
			     roots[0] + entries[0] * 8ull <= vram_size[i] &&
			     !memcmp(vram[i] + roots[i], vram[0] + roots[0], entries[0] * 8ull);
	pt_check(same_root,
		 "%s: the root is at one offset (0x%llx) with identical entries on every GPU (LinkMirrored)",
		 when, (unsigned long long)roots[0]);
	for (i = 0; i < n; i++)
		walked &= !walk_va(vram[i], vram_size[i], roots[i], levels, peer->va, &wp[i]) &&
			  !walk_va(vram[i], vram_size[i], roots[i], levels, local->va, &wl[i]);
	if (!pt_check(walked, "%s: the walks to both allocations read through each GPU's VRAM",
		      when))
		return;
	for (i = 1; i < n; i++)
		for (l = 0; l < levels; l++)
			same_tables &= wp[i].table[l] == wp[0].table[l] &&
				       wl[i].table[l] == wl[0].table[l];
	pt_check(same_tables,
		 "%s: the tables below the root are at the same offsets on every GPU (LinkInstanced; leaf at 0x%llx)",
		 when, (unsigned long long)wp[0].table[0]);
	for (i = 0; i < n; i++) {
		/* the last GPU's allocation: a peer entry but on that GPU; the first's the reverse */
		flags_ok &= PAGODA_PTE_ADAPTER(wp[i].entry) == (i == n - 1 ? 0 : n) &&
			    PAGODA_PTE_ADAPTER(wl[i].entry) == (i == 0 ? 0 : 1) &&
			    PAGODA_PTE_ADDR(wp[i].entry) == PAGODA_PTE_ADDR(wp[0].entry) &&
			    PAGODA_PTE_ADDR(wl[i].entry) == PAGODA_PTE_ADDR(wl[0].entry);
	}
	pt_check(flags_ok,
		 "%s: their entries differ only where a GPU reaches the memory as a peer (0x%llx, 0x%llx)",
		 when, (unsigned long long)wp[0].entry, (unsigned long long)wp[n - 1].entry);
}

/* Evict GPU @gpu's VRAM (debugfs "evict", "gpu<i>/evict"): 0 or -errno. */
static int evict_vram(unsigned int gpu)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 32];
	int fd, ret;

	if (!pt_debugfs_dir(dbg, sizeof(dbg)))
		return -ENOENT;
	if (gpu)
		snprintf(path, sizeof(path), "%s/gpu%u/evict", dbg, gpu);
	else
		snprintf(path, sizeof(path), "%s/evict", dbg);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

/*
 * Mirrored root, instanced tables (check_mirrored()), as made, then after
 * the last GPU's VRAM was evicted (its tables come back where the first
 * GPU's are), then after the first GPU's (the others follow them).
 */
static void test_mirrored_tables(const struct member *members, unsigned int n)
{
	static const char *const when[] = {
		"made", "last GPU's VRAM evicted", "first GPU's VRAM evicted",
	};
	struct pt_buf peer = { 0 }, local = { 0 }, cmd = { 0 };
	const uint8_t *vram[PAGODA_LINK_MAX_ADAPTERS] = { 0 };
	uint64_t vram_size[PAGODA_LINK_MAX_ADAPTERS];
	struct pagoda_dev dev;
	uint32_t ctx0, ctx1;
	char what[64];
	unsigned int i, k;
	int ret;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	ret = first_gpu_rig(&dev, &ctx0, &local, 256 * KIB, &cmd);
	if (!ret)
		ret = pagoda_ctx_create_on(&dev, n - 1, DRM_PAGODA_PRIORITY_NORMAL, &ctx1);
	if (!ret)
		ret = peer_buf(&dev, &peer, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!pt_check(!ret, "mirrored tables: allocations on both GPUs (%d)", ret))
		goto out;
	for (i = 0; i < n; i++) {
		vram[i] = map_vram(members[i].bdf, &vram_size[i]);
		if (!pt_check(vram[i] != NULL, "map BAR2 of %s", members[i].bdf))
			goto out;
	}
	for (k = 0; k < ARRAY_SIZE(when); k++) {
		if (k)
			pt_check(!evict_vram(k == 1 ? n - 1 : 0), "%s", when[k]);
		/* a job on each GPU: the tables are back and every update done */
		snprintf(what, sizeof(what), "mirrored tables, %s: GPU 0", when[k]);
		peer_job(&dev, ctx0, &peer, &local, &cmd, what);
		snprintf(what, sizeof(what), "mirrored tables, %s: the last GPU", when[k]);
		peer_job(&dev, ctx1, &local, &peer, &cmd, what);
		snprintf(what, sizeof(what), "mirrored tables, %s", when[k]);
		check_mirrored(members, n, vram, vram_size, &peer, &local, what);
	}
out:
	for (i = 0; i < n; i++)
		if (vram[i])
			munmap((void *)vram[i], vram_size[i]);
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &local);
	pt_buf_destroy(&dev, &peer);
	pagoda_close(&dev);
}

/*
 * Contexts on the last GPU: CTX_CREATE names the GPU (EINVAL past the
 * link); a job of the last GPU reads and writes the first GPU's
 * allocation through its own tables' peer entries, byte-exact, in the same
 * address space as the first GPU's jobs; and a syncobj orders work across
 * the GPUs: a job on the last GPU waiting for one on the first sees what
 * that one wrote last.
 */
static void test_second_gpu(unsigned int n)
{
	struct drm_pagoda_sync first_out = { 0 }, second_out = { 0 };
	struct pt_buf peer = { 0 }, local = { 0 }, cmd = { 0 }, cmd2 = { 0 }, scratch = { 0 };
	struct pt_buf src = { 0 }, dst = { 0 };
	uint32_t ctx0, ctx1, bad_ctx, *d, i, bad = 0;
	struct pagoda_cmdbuf cb;
	struct pagoda_dev dev;
	int ret, status;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	ret = pagoda_ctx_create_on(&dev, n, DRM_PAGODA_PRIORITY_NORMAL, &bad_ctx);
	pt_check(ret == -EINVAL, "CTX_CREATE on adapter %u (past the link): %s (want EINVAL)", n,
		 strerror(-ret));
	ret = pagoda_ctx_create_on(&dev, ~0u, DRM_PAGODA_PRIORITY_NORMAL, &bad_ctx);
	pt_check(ret == -EINVAL, "CTX_CREATE on adapter 0xffffffff: %s (want EINVAL)",
		 strerror(-ret));

	ret = first_gpu_rig(&dev, &ctx0, &peer, 256 * KIB, &cmd);
	if (!ret)
		ret = pagoda_ctx_create_on(&dev, n - 1, DRM_PAGODA_PRIORITY_NORMAL, &ctx1);
	if (!ret)
		ret = peer_buf(&dev, &local, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!pt_check(!ret, "a context on GPU %u and allocations on both GPUs (%d)", n - 1, ret))
		goto out;
	peer_job(&dev, ctx1, &peer, &local, &cmd, "a job on the last GPU, GPU 0's VRAM");
	peer_job(&dev, ctx0, &local, &peer, &cmd, "a job on GPU 0, the last GPU's VRAM");
	check_trees(n);

	/*
	 * The chain: GPU 0 copies 64 MiB of scratch about first, then fills
	 * @src; the last GPU waits for that and copies @src to @dst. Without
	 * the wait the copy would find @src as the CPU left it.
	 */
	ret = pt_buf_create(&dev, &scratch, 8 * MIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &src, MIB, DRM_PAGODA_SEGMENT_VRAM, 0);
	if (!ret)
		ret = peer_buf(&dev, &dst, MIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd2, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &first_out.handle);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &second_out.handle);
	if (!pt_check(!ret, "chain: allocations and syncobjs (%d)", ret))
		goto out_local;
	memset(src.bo.map, 0x11, src.bo.size);
	memset(dst.bo.map, 0x22, dst.bo.size);
	pagoda_cmdbuf_init(&cb, cmd.bo.map, cmd.bo.size);
	for (i = 0; i < 8; i++)
		pagoda_cmd_copy(&cb, scratch.va, scratch.va + 4 * MIB, 4 * MIB);
	pagoda_cmd_fill(&cb, src.va, src.bo.size, 0xc4a1c4a1);
	ret = pagoda_submit(&dev, ctx0, cmd.va, cb.used_bytes, NULL, 0, &first_out, 1);
	pagoda_cmdbuf_init(&cb, cmd2.bo.map, cmd2.bo.size);
	pagoda_cmd_copy(&cb, src.va, dst.va, src.bo.size);
	if (!ret)
		ret = pagoda_submit(&dev, ctx1, cmd2.va, cb.used_bytes, &first_out, 1, &second_out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, second_out.handle, 0, PT_JOB_TIMEOUT_NS);
	status = pt_fence_error(&dev, second_out.handle);
	d = dst.bo.map;
	for (i = 0; i < dst.bo.size / 4; i++)
		bad += d[i] != 0xc4a1c4a1;
	pt_check(!ret && !status && !bad,
		 "a job on GPU %u waiting for a syncobj of GPU 0 copies what GPU 0 wrote (%s, status %d, %u words differ)",
		 n - 1, ret ? strerror(-ret) : "ok", status, bad);
	pt_buf_destroy(&dev, &cmd2);
	pt_buf_destroy(&dev, &dst);
	pt_buf_destroy(&dev, &src);
	pt_buf_destroy(&dev, &scratch);
out_local:
	pt_buf_destroy(&dev, &local);
out:
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &peer);
	pagoda_close(&dev);
}

/*
 * A job of the last GPU that never ends is stopped by that GPU's engine
 * reset after the hang timeout: its context is banned and guilty; jobs of
 * the first GPU submitted meanwhile complete, their contexts untouched.
 */
static void test_second_gpu_hang(unsigned int n)
{
	struct drm_pagoda_sync hang_out = { 0 };
	struct drm_pagoda_ctx_query q;
	struct pt_buf loop = { 0 }, peer = { 0 }, local = { 0 }, cmd = { 0 };
	uint32_t hang_ctx, ctx0;
	struct pagoda_cmdbuf cb;
	struct pagoda_dev dev;
	char what[64];
	int ret, status, i;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	ret = pagoda_ctx_create_on(&dev, n - 1, DRM_PAGODA_PRIORITY_NORMAL, &hang_ctx);
	if (!ret)
		ret = first_gpu_rig(&dev, &ctx0, &local, 256 * KIB, &cmd);
	if (!ret)
		ret = peer_buf(&dev, &peer, 256 * KIB, DRM_PAGODA_SEGMENT_VRAM, n - 1, 0, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &loop, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pagoda_syncobj_create(&dev, &hang_out.handle);
	if (!pt_check(!ret, "hang: set up (%d)", ret))
		goto out;
	pagoda_cmdbuf_init(&cb, loop.bo.map, loop.bo.size);
	pagoda_cmd_jump(&cb, loop.va, 16);
	ret = pagoda_submit(&dev, hang_ctx, loop.va, cb.used_bytes, NULL, 0, &hang_out, 1);
	pt_check(!ret, "a job that never ends on GPU %u (%d)", n - 1, ret);
	for (i = 0; i < 4; i++) {
		snprintf(what, sizeof(what), "GPU 0 while GPU %u hangs (%d)", n - 1, i);
		peer_job(&dev, ctx0, &peer, &local, &cmd, what);
	}
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, hang_out.handle, 0, PT_JOB_TIMEOUT_NS);
	status = pt_fence_error(&dev, hang_out.handle);
	pt_check(!ret && status == -ETIMEDOUT,
		 "the hung job of GPU %u is stopped, its fence carries ETIMEDOUT (%d, status %d)",
		 n - 1, ret, status);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&dev, hang_ctx, &q);
	pt_check(!ret && q.status == (DRM_PAGODA_CTX_BANNED | DRM_PAGODA_CTX_RESET_GUILTY),
		 "its context is banned and guilty (status 0x%x)", q.status);
	memset(&q, 0, sizeof(q));
	ret = pagoda_ctx_query(&dev, ctx0, &q);
	pt_check(!ret && q.status == 0 && q.resets == 0,
		 "GPU 0's context: not banned, no reset stopped its jobs (status 0x%x, %llu resets)",
		 q.status, (unsigned long long)q.resets);
	peer_job(&dev, ctx0, &peer, &local, &cmd, "GPU 0 after GPU 1's reset");
out:
	pt_buf_destroy(&dev, &loop);
	pt_buf_destroy(&dev, &peer);
	pt_buf_destroy(&dev, &local);
	pt_buf_destroy(&dev, &cmd);
	pagoda_close(&dev);
}

/* A linked allocation (LinkInstanced or LinkMirrored) of @size, VRAM preferred: 0 or -errno. */
static int linked_bo(struct pagoda_dev *dev, uint32_t flags, uint64_t size, struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .flags = flags,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};

	memset(bo, 0, sizeof(*bo));
	return pagoda_bo_create(dev, &desc, bo);
}

/* GEM_CREATE of a linked allocation with @flags and @adapter: 0 or its errno. */
static int linked_create_errno(struct pagoda_dev *dev, uint32_t flags, uint32_t segments,
			       uint32_t adapter)
{
	struct drm_pagoda_gem_create args = {
		.size = 64 * KIB, .flags = flags, .segments = segments,
		.preferred_segment = __builtin_ctz(segments), .adapter = adapter,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	int ret = ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args) ? errno : 0;

	if (!ret) {
		struct drm_gem_close close_args = { .handle = args.handle };

		ioctl(dev->fd, DRM_IOCTL_GEM_CLOSE, &close_args);
	}
	return ret;
}

/* MAP all of @handle (@size) choosing @instance; its VA in *@va. 0 or -errno. */
static int map_instance(struct pagoda_dev *dev, uint32_t handle, uint64_t size, uint32_t instance,
			uint64_t *va)
{
	struct drm_pagoda_vm_op op = {
		.op = DRM_PAGODA_VM_OP_MAP, .handle = handle, .size = size, .instance = instance,
	};
	int ret = pagoda_vm_bind(dev, &op, 1, 0, 0, NULL);

	*va = op.va;
	return ret;
}

/* One job of @ctx filling @size bytes at @va with @value, waited for: 0 or -errno. */
static int fill_job(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd, uint64_t va,
		    uint64_t size, uint32_t value)
{
	struct pagoda_cmdbuf cb;

	pagoda_cmdbuf_init(&cb, cmd->bo.map, cmd->bo.size);
	pagoda_cmd_fill(&cb, va, size, value);
	return pt_run(dev, ctx, cmd, &cb);
}

/* One job of @ctx copying @size bytes from @src to @dst, waited for: 0 or -errno. */
static int copy_job(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd, uint64_t src,
		    uint64_t dst, uint64_t size)
{
	struct pagoda_cmdbuf cb;

	pagoda_cmdbuf_init(&cb, cmd->bo.map, cmd->bo.size);
	pagoda_cmd_copy(&cb, src, dst, size);
	return pt_run(dev, ctx, cmd, &cb);
}

/* Words of @p (@size bytes) that are not @value. */
static unsigned int differ(const void *p, uint64_t size, uint32_t value)
{
	const volatile uint32_t *w = p;
	unsigned int bad = 0;
	uint64_t i;

	for (i = 0; i < size / 4; i++)
		bad += w[i] != value;
	return bad;
}

/* The link's debugfs "allocations", open for reading, or NULL. */
static FILE *open_allocations(void)
{
	char dbg[PT_PATH_MAX], path[PT_PATH_MAX + 16];

	if (!pt_debugfs_dir(dbg, sizeof(dbg)))
		return NULL;
	snprintf(path, sizeof(path), "%s/allocations", dbg);
	return fopen(path, "r");
}

/* Whether @line of "allocations" is an instance of a linked allocation with @flags. */
static int instance_line(const char *line, uint32_t flags)
{
	char want[32];

	snprintf(want, sizeof(want), " flags 0x%x ", flags);
	return strstr(line, want) && strstr(line, " instance of ");
}

/* Instances of linked allocations with @flags whose "allocations" line has @a and @b. */
static unsigned int instances_with(uint32_t flags, const char *a, const char *b)
{
	FILE *f = open_allocations();
	unsigned int found = 0;
	char line[512];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		found += instance_line(line, flags) && strstr(line, a) && strstr(line, b);
	fclose(f);
	return found;
}

/*
 * Each mirrored instance's place (the "allocations" lines of instances of
 * @flags), by GPU: the number found, all in VRAM.
 */
static unsigned int mirrored_offsets(uint32_t flags, uint64_t *offsets, unsigned int n)
{
	FILE *f = open_allocations();
	unsigned int found = 0, gpu;
	unsigned long long off;
	char line[512], seg[16];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		const char *g = strstr(line, " gpu "), *in = strstr(line, " in ");

		if (!instance_line(line, flags) || !g || !in || sscanf(g, " gpu %u", &gpu) != 1 ||
		    gpu >= n || sscanf(in, " in %15s offset 0x%llx", seg, &off) != 2 ||
		    strcmp(seg, "vram"))
			continue;
		offsets[gpu] = off;
		found++;
	}
	fclose(f);
	return found;
}

/* Allocations of the link (debugfs "allocations": "N allocations"), or -1. */
static long long allocations(void)
{
	/* the last line, "N allocations", is the last value read */
	return link_debugfs_value("allocations", "", "");
}

/*
 * The last GPU's VRAM full of resident (pinned) allocations: a mirrored
 * allocation cannot have the first GPU's offset there: ENOSPC, and no
 * allocation is left behind.
 */
static void test_mirrored_no_room(struct pagoda_dev *dev, unsigned int n)
{
	struct pagoda_bo fill[24], mir;
	unsigned int k, i;
	long long before;
	int ret;

	for (k = 0; k < ARRAY_SIZE(fill); k++) {
		struct pagoda_bo_desc desc = {
			.size = 4 * MIB, .adapter = n - 1,
			.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
			.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
			.priority = DRM_PAGODA_PRIORITY_LOW,
		};

		if (pagoda_bo_create(dev, &desc, &fill[k]))
			break;
		if (pagoda_make_resident(dev, &fill[k].handle, 1, NULL)) {
			pagoda_bo_free(dev, &fill[k]);
			break;
		}
	}
	before = allocations();
	ret = linked_bo(dev, DRM_PAGODA_BO_LINK_MIRRORED | DRM_PAGODA_BO_NO_CPU_ACCESS, 4 * MIB,
			&mir);
	/* an instance made before the failure goes once its clear is done (TTM's delayed free) */
	for (i = 0; i < 100 && allocations() != before; i++)
		pt_sleep_ms(20);
	pt_check(ret == -ENOSPC && allocations() == before,
		 "GPU %u's VRAM pinned full (%u resident): a mirrored allocation is %s (want ENOSPC), %lld allocations before and %lld after",
		 n - 1, k, ret ? strerror(-ret) : "made", before, allocations());
	if (!ret)
		pagoda_bo_free(dev, &mir);
	while (k--)
		pagoda_bo_free(dev, &fill[k]);
}

/*
 * LinkInstanced and LinkMirrored allocations. An instanced one has an
 * instance per GPU: mapped "self", a job of each GPU writes its own (the
 * CPU, which maps the first GPU's, sees only the first GPU's writes);
 * mapped to the last GPU's instance, a job of the first reads the last
 * GPU's writes through peer entries, and again after that instance was
 * evicted and brought back. A mirrored one sits at one offset of VRAM on
 * every GPU, as made and after the last GPU's VRAM was evicted. Bad
 * arguments: EINVAL.
 */
static void test_linked_allocations(unsigned int n)
{
	const uint32_t vram = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM);
	const uint32_t system = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM);
	const uint32_t mirrored = DRM_PAGODA_BO_LINK_MIRRORED | DRM_PAGODA_BO_NO_CPU_ACCESS;
	struct pt_buf local = { 0 }, cmd = { 0 };
	uint64_t self_va = 0, last_va = 0, mir_va = 0, offsets[PAGODA_LINK_MAX_ADAPTERS];
	struct pagoda_bo inst = { 0 }, mir = { 0 };
	struct drm_pagoda_vm_op op;
	struct pagoda_dev dev;
	uint32_t ctx0, ctx1;
	unsigned int i, k, same;
	int ret;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_INSTANCED | DRM_PAGODA_BO_LINK_MIRRORED,
				     vram, 0) == EINVAL, "instanced and mirrored at once: EINVAL");
	pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_INSTANCED, vram, 1) == EINVAL,
		 "an instanced allocation named on GPU 1: EINVAL");
	pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_INSTANCED | DRM_PAGODA_BO_PHYSICAL,
				     vram, 0) == EINVAL, "an instanced allocation accessed physically: EINVAL");
	pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_MIRRORED | DRM_PAGODA_BO_CPU_ACCESS,
				     vram, 0) == EINVAL, "a mirrored allocation the CPU maps: EINVAL");
	pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_MIRRORED, system, 0) == EINVAL,
		 "a mirrored allocation of system memory only: EINVAL");

	ret = first_gpu_rig(&dev, &ctx0, &local, 256 * KIB, &cmd);
	if (!ret)
		ret = pagoda_ctx_create_on(&dev, n - 1, DRM_PAGODA_PRIORITY_NORMAL, &ctx1);
	if (!ret)
		ret = linked_bo(&dev, DRM_PAGODA_BO_LINK_INSTANCED, 256 * KIB, &inst);
	if (!ret)
		ret = pagoda_bo_map(&dev, &inst);
	if (!ret)
		ret = map_instance(&dev, inst.handle, inst.size, DRM_PAGODA_VM_INSTANCE_SELF,
				   &self_va);
	if (!ret)
		ret = map_instance(&dev, inst.handle, inst.size, DRM_PAGODA_VM_INSTANCE(n - 1),
				   &last_va);
	if (!pt_check(!ret, "an instanced allocation, mapped self and to GPU %u's instance (%d)",
		      n - 1, ret))
		goto out;

	memset(&op, 0, sizeof(op));
	op.op = DRM_PAGODA_VM_OP_MAP;
	op.handle = inst.handle;
	op.size = inst.size;
	op.instance = DRM_PAGODA_VM_INSTANCE(n);
	ret = pagoda_vm_bind(&dev, &op, 1, 0, 0, NULL);
	pt_check(ret == -EINVAL, "MAP of the instance of adapter %u (past the link): %s (want EINVAL)",
		 n, strerror(-ret));
	op.handle = local.bo.handle;
	op.size = local.bo.size;
	op.instance = DRM_PAGODA_VM_INSTANCE(0);
	ret = pagoda_vm_bind(&dev, &op, 1, 0, 0, NULL);
	pt_check(ret == -EINVAL, "an instance of an allocation of one GPU: %s (want EINVAL)",
		 strerror(-ret));

	ret = fill_job(&dev, ctx0, &cmd, self_va, inst.size, 0xa0a0a0a0);
	if (!ret)
		ret = fill_job(&dev, ctx1, &cmd, self_va, inst.size, 0xb1b1b1b1);
	pt_check(!ret && !differ(inst.map, inst.size, 0xa0a0a0a0),
		 "mapped self, each GPU writes its own instance: the CPU sees the first GPU's (%d, %u words differ)",
		 ret, differ(inst.map, inst.size, 0xa0a0a0a0));
	for (k = 0; k < 2; k++) {
		if (k)
			pt_check(!evict_vram(n - 1), "GPU %u's VRAM evicted", n - 1);
		memset(local.bo.map, 0, local.bo.size);
		ret = copy_job(&dev, ctx0, &cmd, last_va, local.va, inst.size);
		pt_check(!ret && !differ(local.bo.map, inst.size, 0xb1b1b1b1),
			 "%s: a job of GPU 0 reads GPU %u's instance through its mapping (%d, %u words differ)",
			 k ? "evicted and back" : "made", n - 1, ret,
			 differ(local.bo.map, inst.size, 0xb1b1b1b1));
	}

	/* resident: every instance pinned where it is, through its GPU's eviction */
	ret = pagoda_make_resident(&dev, &inst.handle, 1, NULL);
	if (!ret)
		ret = evict_vram(n - 1);
	k = instances_with(DRM_PAGODA_BO_LINK_INSTANCED, " pinned 1", " in vram");
	pt_check(!ret && k == n,
		 "made resident, the instanced allocation's %u instances stay pinned in VRAM through GPU %u's eviction (%d, %u)",
		 n, n - 1, ret, k);
	pagoda_evict(&dev, &inst.handle, 1);

	ret = linked_bo(&dev, mirrored, 256 * KIB, &mir);
	if (!ret)
		ret = map_instance(&dev, mir.handle, mir.size, DRM_PAGODA_VM_INSTANCE_SELF, &mir_va);
	if (!pt_check(!ret, "a mirrored allocation, mapped self (%d)", ret))
		goto out;
	for (k = 0; k < 2; k++) {
		if (k)
			pt_check(!evict_vram(n - 1), "GPU %u's VRAM evicted", n - 1);
		/* written on every GPU, then read back by each */
		ret = fill_job(&dev, ctx0, &cmd, mir_va, mir.size, 0x3a3a3a3a);
		if (!ret)
			ret = fill_job(&dev, ctx1, &cmd, mir_va, mir.size, 0x3a3a3a3a);
		memset(local.bo.map, 0, local.bo.size);
		if (!ret)
			ret = copy_job(&dev, ctx1, &cmd, mir_va, local.va, mir.size);
		pt_check(!ret && !differ(local.bo.map, mir.size, 0x3a3a3a3a),
			 "mirrored, %s: written on every GPU, read by GPU %u (%d)",
			 k ? "evicted and back" : "made", n - 1, ret);
		same = mirrored_offsets(mirrored, offsets, n) == n;
		for (i = 1; same && i < n; i++)
			same = offsets[i] == offsets[0];
		pt_check(same, "mirrored, %s: its instances at one offset of VRAM on every GPU (0x%llx)",
			 k ? "evicted and back" : "made", (unsigned long long)offsets[0]);
	}
	test_mirrored_no_room(&dev, n);
out:
	if (mir.handle)
		pagoda_bo_free(&dev, &mir);
	pagoda_bo_unmap(&inst);
	if (inst.handle)
		pagoda_bo_free(&dev, &inst);
	pt_buf_destroy(&dev, &cmd);
	pt_buf_destroy(&dev, &local);
	pagoda_close(&dev);
}

/*
 * What may not reach a peer: physical-mode buffers (a GPU's own allocation
 * on a context of that GPU runs), scanout, adapters past the link.
 */
static void test_peer_refused(unsigned int n)
{
	struct drm_pagoda_gem_create create = {
		.size = 64 * KIB, .segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.adapter = n,
	};
	struct drm_pagoda_phys_alloc alloc = { 0, DRM_PAGODA_PHYS_WRITE };
	struct drm_pagoda_phys_patch patches[4];
	struct pagoda_physbuf pb;
	struct pagoda_dev dev;
	struct pt_buf phys;
	uint32_t ctx, words[64];
	int ret;

	if (!pt_check(!pagoda_open(&dev), "open the link's render node"))
		return;
	ret = ioctl(dev.fd, DRM_IOCTL_PAGODA_GEM_CREATE, &create) ? errno : 0;
	pt_check(ret == EINVAL, "GEM_CREATE on adapter %u (past the link): %s (want EINVAL)", n,
		 strerror(ret));

	ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = peer_buf(&dev, &phys, 64 * KIB, DRM_PAGODA_SEGMENT_VRAM, n - 1,
			       DRM_PAGODA_BO_PHYSICAL, 0);
	if (pt_check(!ret, "a physically accessed allocation of GPU %u (%d)", n - 1, ret)) {
		alloc.handle = phys.bo.handle;
		pagoda_physbuf_init(&pb, words, sizeof(words), patches, 4);
		pagoda_phys_bind(&pb, 0, 0, 0);
		pagoda_phys_fill(&pb, 0, 0, 4096, 0x1234);
		ret = pt_run_phys(&dev, ctx, &pb, &alloc, 1, NULL);
		pt_check(ret == -EINVAL, "SUBMIT_PHYS on GPU 0 naming it: %s (want EINVAL)",
			 ret ? strerror(-ret) : "ran");
		/* the same buffer on a context of that GPU runs there */
		memset(phys.bo.map, 0, 4096);
		ret = pagoda_ctx_create_on(&dev, n - 1, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
		if (!ret)
			ret = pt_run_phys(&dev, ctx, &pb, &alloc, 1, NULL);
		pt_check(!ret && !differ(phys.bo.map, 4096, 0x1234),
			 "SUBMIT_PHYS on a context of GPU %u naming it: filled (%s)", n - 1,
			 ret ? strerror(-ret) : "ran");
		pagoda_bo_unmap(&phys.bo);
		pagoda_bo_free(&dev, &phys.bo);
	}
	pagoda_close(&dev);

	/* KMS on the primary node: a framebuffer of GPU 1's memory is not shown */
	if (!pt_check(!pagoda_open_primary(&dev), "open the link's primary node"))
		return;
	show_on_planes(&dev, n);
	pagoda_close(&dev);
}

int main(void)
{
	unsigned int want = pt_cmdline_number("pagoda_guest.link", 1);
	struct member members[PAGODA_LINK_MAX_ADAPTERS + 1];
	unsigned int n, i;

	n = find_members(members, ARRAY_SIZE(members));
	if (!pt_check(n == want, "%u Pagoda PCI functions (want %u)", n, want))
		return pt_exit();
	for (i = 0; i < n; i++)
		pt_check(members[i].index == i &&
			 pt_reg(members[i].mmio, PAGODA_REG_LINK_ID) ==
			 pt_reg(members[0].mmio, PAGODA_REG_LINK_ID),
			 "%s: physical adapter %u of link %u", members[i].bdf, members[i].index,
			 pt_reg(members[i].mmio, PAGODA_REG_LINK_ID));

	check_whole(members, n, "at boot");
	if (n == 1) {
		struct pagoda_dev dev;

		if (pt_check(!pagoda_open(&dev), "open the render node")) {
			pt_check(linked_create_errno(&dev, DRM_PAGODA_BO_LINK_INSTANCED,
						     DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
						     0) == EINVAL,
				 "an instanced allocation on a GPU that is not linked: EINVAL");
			pagoda_close(&dev);
		}
	}
	if (n > 1) {
		test_peer(n);
		test_peer_reset(n);
		test_second_gpu(n);
		test_mirrored_tables(members, n);
		test_second_gpu_hang(n);
		test_linked_allocations(n);
		test_peer_refused(n);
		unbind_member(members, n, n - 1);
		unbind_member(members, n, 0);
	}
	return pt_exit();
}
