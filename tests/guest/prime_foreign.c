// SPDX-License-Identifier: MIT
/*
 * Buffers of other devices imported through PRIME, as compositors, video
 * decoders and cameras hand them over: a udmabuf (memfd pages) and a
 * buffer of the system dma-buf heap. Each is imported into a Pagoda file
 * and mapped into its address space; a GPU job reads it byte-exact
 * against what the CPU wrote through the exporter, another writes it and
 * the CPU sees those bytes through the exporter; the importer's own CPU
 * mapping reaches the same pages. A physically accessed use is refused
 * (EINVAL), and a udmabuf imported on the primary node is scanned out as
 * a framebuffer, byte-exact in a screendump. The buffers live on after the
 * GPU lets them go: the exporter's pages are never cleared or moved.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/mman.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include <libpagoda.h>

#include "pagoda_screen.h"
#include "pagoda_vm_test.h"

#define SIZE	(1u << 20)
#define WORDS	(SIZE / 4)

/* A foreign dma-buf, its CPU view through its exporter. */
struct foreign {
	const char *name;
	int fd;		/* the dma-buf */
	int memfd;	/* udmabuf's memfd, or -1 */
	uint32_t *cpu;
	size_t size;
};

static int udmabuf_create(struct foreign *f, size_t size)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
	int dev, ret = 0;

	f->name = "udmabuf";
	f->size = size;
	f->fd = -1;
	f->memfd = memfd_create("pagoda-foreign", MFD_ALLOW_SEALING);
	if (f->memfd < 0 || ftruncate(f->memfd, size) ||
	    fcntl(f->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	f->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	if (f->cpu == MAP_FAILED)
		return -errno;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	create.memfd = f->memfd;
	f->fd = ioctl(dev, UDMABUF_CREATE, &create);
	if (f->fd < 0)
		ret = -errno;
	close(dev);
	return ret;
}

static int heap_create(struct foreign *f, size_t size)
{
	struct dma_heap_allocation_data alloc = { .len = size, .fd_flags = O_RDWR | O_CLOEXEC };
	int heap, ret = 0;

	f->name = "system heap";
	f->size = size;
	f->fd = -1;
	f->memfd = -1;
	heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		return -errno;
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc))
		ret = -errno;
	close(heap);
	if (ret)
		return ret;
	f->fd = alloc.fd;
	f->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	return f->cpu == MAP_FAILED ? -errno : 0;
}

/*
 * CPU access through the exporter's mapping, bracketed as dma-buf users
 * must. Not for a udmabuf, whose CPU mapping is its memfd's (coherent on
 * this machine): its SYNC maps the pages for udmabuf's own device too, a
 * second bidirectional mapping of the pages the importer has mapped,
 * which the DMA API's debug checks report as overlapping.
 */
static void foreign_sync(struct foreign *f, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags | DMA_BUF_SYNC_RW };

	if (f->memfd < 0)
		ioctl(f->fd, DMA_BUF_IOCTL_SYNC, &sync);
}

static void foreign_destroy(struct foreign *f)
{
	if (f->cpu && f->cpu != MAP_FAILED)
		munmap(f->cpu, f->size);
	if (f->fd >= 0)
		close(f->fd);
	if (f->memfd >= 0)
		close(f->memfd);
}

static unsigned int count_words(const uint32_t *p, uint32_t base)
{
	unsigned int i, good = 0;

	for (i = 0; i < WORDS; i++)
		good += p[i] == base + i * 7;
	return good;
}

/*
 * @f imported into @dev and mapped: a job copies it into a Pagoda
 * allocation, then copies other bytes back into it.
 */
static void check_gpu(struct pagoda_dev *dev, uint32_t ctx, struct foreign *f)
{
	struct pagoda_bo import = { .size = f->size };
	struct pt_buf dst, cmd;
	struct pagoda_cmdbuf cb;
	struct drm_pagoda_gem_info info;
	uint64_t va = 0;
	uint32_t *mine, i;
	int ret;

	foreign_sync(f, DMA_BUF_SYNC_START);
	for (i = 0; i < WORDS; i++)
		f->cpu[i] = 0x30000000 + i * 7;
	foreign_sync(f, DMA_BUF_SYNC_END);

	ret = drmPrimeFDToHandle(dev->fd, f->fd, &import.handle) ? -errno : 0;
	if (!pt_check(!ret, "%s: imported: %s", f->name, strerror(-ret)))
		return;
	ret = pagoda_bo_info(dev, import.handle, &info);
	pt_check(!ret && info.size == f->size && info.segment == DRM_PAGODA_SEGMENT_SYSTEM,
		 "%s: %llu bytes in system memory (%s, segment %u)", f->name,
		 (unsigned long long)info.size, strerror(-ret), info.segment);
	ret = pagoda_vm_map(dev, import.handle, 0, f->size, 0, &va, 0, 0, 0);
	if (!pt_check(!ret, "%s: mapped into the GPU space: %s", f->name, strerror(-ret)))
		goto out_import;
	if (!pt_check(!pt_buf_create(dev, &dst, SIZE, DRM_PAGODA_SEGMENT_VRAM, 0) &&
		      !pt_buf_create(dev, &cmd, (64u << 10), DRM_PAGODA_SEGMENT_SYSTEM, 0),
		      "%s: a VRAM target and a command buffer", f->name))
		goto out_map;

	/* the GPU reads what the CPU wrote through the exporter */
	pagoda_cmdbuf_init(&cb, cmd.bo.map, (64u << 10));
	pagoda_cmd_copy(&cb, va, dst.va, SIZE);
	ret = pt_run(dev, ctx, &cmd, &cb);
	mine = dst.bo.map;
	pt_check(!ret && count_words(mine, 0x30000000) == WORDS,
		 "%s: a job read it byte-exact (%s, %u of %u words)", f->name, strerror(-ret),
		 count_words(mine, 0x30000000), WORDS);

	/* the GPU writes it, the CPU sees the bytes through the exporter */
	for (i = 0; i < WORDS; i++)
		mine[i] = 0x40000000 + i * 7;
	pagoda_cmdbuf_init(&cb, cmd.bo.map, (64u << 10));
	pagoda_cmd_copy(&cb, dst.va, va, SIZE);
	ret = pt_run(dev, ctx, &cmd, &cb);
	foreign_sync(f, DMA_BUF_SYNC_START);
	pt_check(!ret && count_words(f->cpu, 0x40000000) == WORDS,
		 "%s: a job wrote it, the exporter's pages hold it (%s, %u of %u words)",
		 f->name, strerror(-ret), count_words(f->cpu, 0x40000000), WORDS);
	foreign_sync(f, DMA_BUF_SYNC_END);

	/* the importer's CPU mapping goes to the exporter: the same pages */
	if (pt_check(info.mmap_offset, "%s: its mmap offset", f->name)) {
		uint32_t *p = mmap(NULL, f->size, PROT_READ, MAP_SHARED, dev->fd, info.mmap_offset);

		if (pt_check(p != MAP_FAILED, "%s: mapped through the Pagoda file: %s", f->name,
			     p == MAP_FAILED ? strerror(errno) : "ok")) {
			pt_check(count_words(p, 0x40000000) == WORDS,
				 "%s: that mapping shows the GPU's bytes (%u of %u words)", f->name,
				 count_words(p, 0x40000000), WORDS);
			munmap(p, f->size);
		}
	}

	/* not physically accessed: SUBMIT_PHYS refuses it */
	{
		static uint8_t mem[4096];
		static struct drm_pagoda_phys_patch patches[4];
		struct drm_pagoda_phys_alloc one = { import.handle, DRM_PAGODA_PHYS_WRITE };
		struct pagoda_physbuf pb;

		pagoda_physbuf_init(&pb, mem, sizeof(mem), patches, 4);
		pagoda_phys_bind(&pb, 0, 0, 0);
		pagoda_phys_fill(&pb, 0, 0, 4096, 0xdeadbeef);
		ret = pt_run_phys(dev, ctx, &pb, &one, 1, NULL);
		foreign_sync(f, DMA_BUF_SYNC_START);
		pt_check(ret == -EINVAL && f->cpu[0] == 0x40000000,
			 "%s: SUBMIT_PHYS of it: %s (EINVAL), untouched", f->name, strerror(-ret));
		foreign_sync(f, DMA_BUF_SYNC_END);
	}

	pt_buf_destroy(dev, &cmd);
	pt_buf_destroy(dev, &dst);
out_map:
	pagoda_vm_free(dev, va, f->size);
out_import:
	pagoda_bo_free(dev, &import);
	/* the GPU let it go: the exporter's pages still hold the bytes */
	foreign_sync(f, DMA_BUF_SYNC_START);
	pt_check(count_words(f->cpu, 0x40000000) == WORDS,
		 "%s: its pages as they were after the handle went", f->name);
	foreign_sync(f, DMA_BUF_SYNC_END);
}

static uint32_t scanout_pixel(uint32_t x, uint32_t y, const void *arg)
{
	(void)arg;
	return (x * 0x010203 + y * 0x030201) & 0xffffff;
}

/* A udmabuf on screen: a compositor scanning out a client's buffer. */
static void check_scanout(struct foreign *f, uint32_t w, uint32_t h)
{
	uint32_t handles[4] = {}, pitches[4] = { w * 4 }, offsets[4] = {}, fb = 0;
	struct pagoda_screen s;
	struct pagoda_dev dev;
	drmModeRes *res = NULL;
	drmModeConnector *conn = NULL;
	drmModeModeInfo *mode = NULL;
	uint32_t x, y, crc;
	int i, ret;

	if (!pt_check(!pagoda_open_primary(&dev), "scanout: the primary node"))
		return;
	res = drmModeGetResources(dev.fd);
	if (res && res->count_connectors)
		conn = drmModeGetConnector(dev.fd, res->connectors[0]);
	for (i = 0; conn && i < conn->count_modes && !mode; i++)
		if (conn->modes[i].hdisplay == w && conn->modes[i].vdisplay == h)
			mode = &conn->modes[i];
	if (!pt_check(mode != NULL, "scanout: a %ux%u mode", w, h))
		goto out;
	foreign_sync(f, DMA_BUF_SYNC_START);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			f->cpu[y * w + x] = scanout_pixel(x, y, NULL);
	foreign_sync(f, DMA_BUF_SYNC_END);
	crc = pt_screen_crc(w, h, scanout_pixel, NULL);

	ret = drmPrimeFDToHandle(dev.fd, f->fd, &handles[0]) ? -errno : 0;
	if (!pt_check(!ret, "scanout: imported on the primary node: %s", strerror(-ret)))
		goto out;
	ret = drmModeAddFB2(dev.fd, w, h, DRM_FORMAT_XRGB8888, handles, pitches, offsets, &fb, 0);
	if (pt_check(!ret, "scanout: a framebuffer of it: %s", ret ? strerror(errno) : "ok")) {
		ret = drmModeSetCrtc(dev.fd, res->crtcs[0], fb, 0, 0, &conn->connector_id, 1, mode);
		if (pt_check(!ret, "scanout: on screen: %s", ret ? strerror(errno) : "ok")) {
			ret = pagoda_screendump("foreign-scanout", &s);
			pt_check(!ret && s.width == w && s.height == h && s.crc == crc,
				 "scanout: screen %ux%u crc %08x (expected %ux%u crc %08x): %s",
				 s.width, s.height, s.crc, w, h, crc, pagoda_screen_strerror(ret));
		}
		drmModeRmFB(dev.fd, fb);
	}
	drmCloseBufferHandle(dev.fd, handles[0]);
out:
	drmModeFreeConnector(conn);
	drmModeFreeResources(res);
	pagoda_close(&dev);
}

int main(void)
{
	struct foreign f = { .fd = -1, .memfd = -1 };
	struct pagoda_dev dev;
	uint32_t ctx;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node: %s", strerror(-ret)))
		return pt_exit();
	ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!pt_check(!ret, "a context: %s", strerror(-ret)))
		return pt_exit();

	ret = udmabuf_create(&f, SIZE);
	if (pt_check(!ret, "a 1 MiB udmabuf: %s", strerror(-ret)))
		check_gpu(&dev, ctx, &f);
	foreign_destroy(&f);

	ret = heap_create(&f, SIZE);
	if (pt_check(!ret, "a 1 MiB buffer of the system dma-buf heap: %s", strerror(-ret)))
		check_gpu(&dev, ctx, &f);
	foreign_destroy(&f);

	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);

	ret = udmabuf_create(&f, 1024 * 768 * 4);
	if (pt_check(!ret, "a 1024x768 udmabuf: %s", strerror(-ret)))
		check_scanout(&f, 1024, 768);
	foreign_destroy(&f);
	return pt_exit();
}
