// SPDX-License-Identifier: MIT
/*
 * A one-minute walk through the GPU virtual-memory model on the Pagoda
 * GPU, run by scripts/demo.sh on a small device (16 MiB of VRAM, 8 MiB of
 * hidden VRAM, a 16 MiB aperture): segments and allocations, eviction and
 * the paging engine, a process's address space and its page tables, a
 * DMA buffer split into portions, a faulting process beside a healthy
 * one, a hang recovered, a linked adapter's peer copy (when scripts/demo.sh
 * boots two linked GPUs), and what debugfs and fdinfo show at the end.
 *   usage: pagoda-demo
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpagoda.h>
#include <xf86drm.h>

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define WAIT_NS		(60ll * 1000 * 1000 * 1000)

static const char *const seg_names[] = { "system", "VRAM", "hidden VRAM", "aperture" };
static struct pagoda_dev dev;
static uint32_t ctx;

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "pagoda-demo: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static void title(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("\n== ");
	vprintf(fmt, ap);
	printf(" ==\n");
	va_end(ap);
}

static void create(struct pagoda_bo *bo, uint64_t size, uint32_t flags, uint32_t segments,
		   uint32_t preferred)
{
	struct pagoda_bo_desc desc = {
		.size = size, .flags = flags, .segments = segments,
		.preferred_segment = preferred, .priority = DRM_PAGODA_PRIORITY_NORMAL,
	};

	check("allocation", pagoda_bo_create(&dev, &desc, bo));
	check("CPU mapping", pagoda_bo_map(&dev, bo));
}

/* Map @bo into this process's address space with DRM_PAGODA_VM_* @flags; its VA. */
static uint64_t map(struct pagoda_bo *bo, uint32_t flags)
{
	uint64_t va = 0;

	check("map", pagoda_vm_map(&dev, bo->handle, 0, bo->size, flags, &va, 0, 0, 0));
	return va;
}

/* Unmap @bo from the CPU and free it (its GPU mappings go with it). */
static void destroy(struct pagoda_bo *bo)
{
	pagoda_bo_unmap(bo);
	pagoda_bo_free(&dev, bo);
}

static const char *where(struct pagoda_bo *bo)
{
	static char text[64];
	struct drm_pagoda_gem_info info;

	if (pagoda_bo_info(&dev, bo->handle, &info))
		return "?";
	snprintf(text, sizeof(text), "%s at 0x%llx%s", seg_names[info.segment % 4],
		 (unsigned long long)info.offset, info.contiguous ? " (contiguous)" : "");
	return text;
}

/* Print the lines of a file that contain @what (all with NULL). */
static void show_file(const char *path, const char *what)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!what || strstr(line, what))
			printf("   %s", line);
	fclose(f);
}

static char dbg[128];

static void show_debugfs(const char *name, const char *what)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dbg, name);
	show_file(path, what);
}

/* Run @cb on @c and wait; the error its fence carries. */
static int run(struct pagoda_dev *d, uint32_t c, uint64_t va, struct pagoda_cmdbuf *cb)
{
	struct drm_pagoda_sync out = { 0 };
	int ret;

	check("syncobj", pagoda_syncobj_create(d, &out.handle));
	ret = pagoda_submit(d, c, va, cb->used_bytes, NULL, 0, &out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(d, out.handle, 0, WAIT_NS);
	if (!ret) {
		int fd;

		/* the fence's error, through a sync_file */
		if (!drmSyncobjExportSyncFile(d->fd, out.handle, &fd)) {
			struct sync_file_info { char name[32]; int32_t status; uint32_t flags;
						uint32_t num_fences; uint32_t pad; uint64_t info; } fi;

			memset(&fi, 0, sizeof(fi));
			if (!ioctl(fd, _IOWR('>', 4, struct sync_file_info), &fi) && fi.status < 0)
				ret = fi.status;
			close(fd);
		}
	}
	pagoda_syncobj_destroy(d, out.handle);
	return ret;
}

static void device(void)
{
	unsigned long long v[6] = { 0 };

	title("the device");
	static const uint32_t params[6] = {
		DRM_PAGODA_PARAM_VRAM_SIZE, DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE,
		DRM_PAGODA_PARAM_APERTURE_SIZE, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE,
		DRM_PAGODA_PARAM_MMU_LEVELS, DRM_PAGODA_PARAM_NUM_CONTEXTS,
	};
	unsigned int i;

	for (i = 0; i < 6; i++) {
		uint64_t value = 0;

		pagoda_query(&dev, params[i], &value);
		v[i] = value;
	}
	printf("segments: VRAM %llu MiB (CPU-visible), hidden VRAM %llu MiB, aperture %llu MiB (GART over system pages)\n",
	       v[0] / MIB, v[1] / MIB, v[2] / MIB);
	printf("GPU MMU: %llu page-table levels, %llu KiB segment pages, %llu hardware contexts\n",
	       v[4], v[3] / KIB, v[5]);
}

static void allocations(void)
{
	struct pagoda_bo vram, hidden, sys, phys;

	title("allocations: placed by the video memory manager");
	create(&vram, 1 * MIB, 0, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM);
	create(&hidden, 1 * MIB, 0, SEG(VRAM_HIDDEN), DRM_PAGODA_SEGMENT_VRAM_HIDDEN);
	create(&sys, 1 * MIB, 0, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	create(&phys, 1 * MIB, DRM_PAGODA_BO_PHYSICAL, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	printf("1 MiB preferring VRAM:            %s\n", where(&vram));
	printf("1 MiB in hidden VRAM:             %s (the CPU reaches it through the host aperture)\n",
	       where(&hidden));
	printf("1 MiB in system memory:           %s (pages, reached through page tables)\n",
	       where(&sys));
	printf("1 MiB accessed physically:        %s\n", where(&phys));
	pagoda_bo_free(&dev, &vram);
	pagoda_bo_free(&dev, &hidden);
	pagoda_bo_free(&dev, &sys);
	pagoda_bo_free(&dev, &phys);
}

static void eviction(void)
{
	struct pagoda_bo bos[12];
	uint32_t crc[12];
	unsigned int i, in_vram = 0, intact = 0;

	title("a working set larger than VRAM: 12 x 2 MiB over 16 MiB");
	for (i = 0; i < 12; i++) {
		create(&bos[i], 2 * MIB, 0, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM);
		memset(bos[i].map, 0x10 + i, 2 * MIB);
		crc[i] = pagoda_crc32(bos[i].map, 2 * MIB);
	}
	for (i = 0; i < 12; i++)
		printf("  #%-2u %s\n", i, where(&bos[i]));
	printf("making #0..#3 resident again: the paging engine evicts others, copies these back\n");
	check("make resident", pagoda_make_resident(&dev, (uint32_t[]){ bos[0].handle,
		bos[1].handle, bos[2].handle, bos[3].handle }, 4, NULL));
	for (i = 0; i < 12; i++) {
		struct drm_pagoda_gem_info info;

		pagoda_bo_info(&dev, bos[i].handle, &info);
		in_vram += info.segment == DRM_PAGODA_SEGMENT_VRAM;
		intact += pagoda_crc32(bos[i].map, 2 * MIB) == crc[i];
	}
	for (i = 0; i < 4; i++)
		printf("  #%-2u %s\n", i, where(&bos[i]));
	printf("%u of 12 in VRAM now; contents intact after the moves: %u of 12\n", in_vram, intact);
	pagoda_evict(&dev, (uint32_t[]){ bos[0].handle, bos[1].handle, bos[2].handle,
		     bos[3].handle }, 4);
	show_debugfs("segments", "VRAM");
	for (i = 0; i < 12; i++) {
		destroy(&bos[i]);
	}
}

/* The "vm" block of debugfs "vms" of this process's space: the one mapping @va. */
static void show_my_vm(uint64_t va)
{
	char path[256], line[512], block[4096] = "", key[64];
	int mine = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vms", dbg);
	snprintf(key, sizeof(key), "0x%llx", (unsigned long long)va);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "vm ", 3)) {
			if (mine)
				break;
			block[0] = 0;
		}
		if (strlen(block) + strlen(line) < sizeof(block))
			strcat(block, line);
		mine |= strstr(line, key) != NULL;
	}
	fclose(f);
	if (mine) {
		char *l = strtok(block, "\n");

		for (; l; l = strtok(NULL, "\n"))
			printf("   %s\n", l);
	}
}

static void address_space(void)
{
	struct pagoda_bo big, small, cmd;
	uint64_t big_va, small_va, cmd_va;
	struct pagoda_cmdbuf cb;
	uint32_t *r;
	int ret;

	title("a process's GPU address space and its page tables");
	create(&big, 2 * MIB, 0, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM);
	create(&small, 64 * KIB, 0, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	create(&cmd, 64 * KIB, 0, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	big_va = map(&big, 0);
	small_va = map(&small, 0);
	cmd_va = map(&cmd, DRM_PAGODA_VM_READ_ONLY);
	printf("VRAM 2 MiB at VA 0x%llx (one 2 MiB page), system 64 KiB at VA 0x%llx (16 x 4 KiB), commands at VA 0x%llx (read-only)\n",
	       (unsigned long long)big_va, (unsigned long long)small_va,
	       (unsigned long long)cmd_va);
	memset(big.map, 0x42, big.size);
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	pagoda_cmd_crc32(&cb, big_va, big.size, small_va);
	ret = run(&dev, ctx, cmd_va, &cb);
	r = small.map;
	printf("a render job through these tables: CRC-32 of the 2 MiB = 0x%08x (CPU: 0x%08x) %s\n",
	       r[0], pagoda_crc32(big.map, big.size), ret ? strerror(-ret) : "");
	if (dbg[0])
		show_my_vm(big_va);
	pagoda_vm_unmap(&dev, big_va, big.size, 0);
	destroy(&big);
	destroy(&small);
	destroy(&cmd);
}

/*
 * Two GPUs, one adapter: an allocation in the second GPU's VRAM, mapped
 * into this process's address space, read and written in place by a job
 * on the first GPU through peer entries.
 */
static void linked(void)
{
	struct pagoda_bo peer, mine, cmd;
	uint64_t adapters = 1, peer_va, mine_va, cmd_va, vram, index;
	struct pagoda_bo_desc desc = {
		.size = MIB, .segments = SEG(VRAM), .preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct pagoda_cmdbuf cb;
	uint32_t a, *r;
	void *model;
	int ret;

	pagoda_query(&dev, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	if (adapters < 2)
		return;
	title("a linked adapter: %llu GPUs, one device, one address space",
	      (unsigned long long)adapters);
	for (a = 0; a < adapters; a++) {
		struct drm_pagoda_get_param p = { .param = DRM_PAGODA_PARAM_VRAM_SIZE, .adapter = a };

		vram = ioctl(dev.fd, DRM_IOCTL_PAGODA_GET_PARAM, &p) ? 0 : p.value;
		p.param = DRM_PAGODA_PARAM_LINK_INDEX;
		index = ioctl(dev.fd, DRM_IOCTL_PAGODA_GET_PARAM, &p) ? 0 : p.value;
		printf("GPU %u: physical adapter %llu, %llu MiB of VRAM\n", a,
		       (unsigned long long)index, (unsigned long long)vram >> 20);
	}
	desc.adapter = adapters - 1;
	check("allocation on the peer", pagoda_bo_create(&dev, &desc, &peer));
	check("CPU mapping", pagoda_bo_map(&dev, &peer));
	create(&mine, MIB, 0, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM);
	create(&cmd, 64 * KIB, 0, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	peer_va = map(&peer, 0);
	mine_va = map(&mine, 0);
	cmd_va = map(&cmd, DRM_PAGODA_VM_READ_ONLY);
	printf("1 MiB in GPU %llu's VRAM (%s) at VA 0x%llx, 1 MiB in GPU 0's at VA 0x%llx\n",
	       (unsigned long long)adapters - 1, where(&peer), (unsigned long long)peer_va,
	       (unsigned long long)mine_va);
	memset(peer.map, 0x7e, peer.size);
	memset(mine.map, 0, mine.size);
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	pagoda_cmd_copy(&cb, peer_va, mine_va, peer.size);
	pagoda_cmd_fill(&cb, peer_va, 4096, 0x600d600d);
	pagoda_cmd_crc32(&cb, mine_va, mine.size, mine_va);
	ret = run(&dev, ctx, cmd_va, &cb);
	r = mine.map;
	/* what it copied: the peer's bytes before the fill */
	model = malloc(mine.size);
	if (model)
		memset(model, 0x7e, mine.size);
	printf("a job on GPU 0 copied the peer's 1 MiB through peer entries: CRC-32 0x%08x (CPU: 0x%08x); it wrote the peer too: 0x%08x %s\n",
	       r[0], model ? pagoda_crc32(model, mine.size) : 0, ((uint32_t *)peer.map)[0],
	       ret ? strerror(-ret) : "");
	free(model);
	destroy(&peer);
	destroy(&mine);
	destroy(&cmd);
}

#define STEPS		30
#define STEP_SIZE	(4 * MIB)

static void split(void)
{
	static uint32_t cmds[16384];
	static struct drm_pagoda_phys_patch patches[1024];
	struct drm_pagoda_phys_alloc allocs[STEPS + 1];
	struct pagoda_bo steps[STEPS], results;
	struct drm_pagoda_sync out = { 0 };
	struct pagoda_physbuf pb;
	uint32_t portions = 0, same = 0, k, *crc;
	uint8_t *model = malloc(STEP_SIZE);
	int ret;

	title("a DMA buffer split: %u allocations of 4 MiB (3x what the engine reaches physically)",
	      STEPS);
	for (k = 0; k < STEPS; k++) {
		create(&steps[k], STEP_SIZE, DRM_PAGODA_BO_PHYSICAL,
		       SEG(VRAM) | SEG(VRAM_HIDDEN) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM);
		allocs[k] = (struct drm_pagoda_phys_alloc){ steps[k].handle, DRM_PAGODA_PHYS_WRITE };
	}
	create(&results, 64 * KIB, DRM_PAGODA_BO_PHYSICAL, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM);
	allocs[STEPS] = (struct drm_pagoda_phys_alloc){ results.handle, DRM_PAGODA_PHYS_WRITE };
	/* step k: fill allocation k, copy 64 KiB of allocation k - 1 in, sum it */
	pagoda_physbuf_init(&pb, cmds, sizeof(cmds), patches, 1024);
	pagoda_phys_bind(&pb, 0, STEPS, 0);
	for (k = 0; k < STEPS; k++) {
		pagoda_phys_split(&pb);
		pagoda_phys_bind(&pb, 1 + k % 2, k, 0);
		pagoda_phys_fill(&pb, 1 + k % 2, 0, STEP_SIZE, 0x01010101u * (k + 1));
		if (k)
			pagoda_phys_copy(&pb, 1 + (k - 1) % 2, 0, 1 + k % 2, MIB, 64 * KIB);
		pagoda_phys_crc32(&pb, 1 + k % 2, 0, STEP_SIZE, 0, 4 * k);
	}
	check("syncobj", pagoda_syncobj_create(&dev, &out.handle));
	ret = pagoda_submit_phys(&dev, ctx, &pb, allocs, STEPS + 1, NULL, 0, &out, 1, &portions);
	if (!ret)
		ret = pagoda_syncobj_wait(&dev, out.handle, 0, WAIT_NS);
	pagoda_syncobj_destroy(&dev, out.handle);
	crc = results.map;
	for (k = 0; k < STEPS && model; k++) {
		memset(model, k + 1, STEP_SIZE);
		if (k)
			memset(model + MIB, k, 64 * KIB);
		same += crc[k] == pagoda_crc32(model, STEP_SIZE);
	}
	printf("%u KiB of commands, %u patch locations: ran in %u portions (%s)\n",
	       pb.cb.used_bytes / 1024, pb.patch_count, portions, ret ? strerror(-ret) : "ok");
	printf("the GPU's 30 CRC-32s equal those of the buffer run unsplit (CPU model): %u of %u\n",
	       same, STEPS);
	for (k = 0; k < STEPS; k++) {
		destroy(&steps[k]);
	}
	destroy(&results);
	free(model);
}

/*
 * A process of its own with a context, and a command buffer and data of
 * 4 KiB each: sub-allocations of one 64 KiB allocation, not one each.
 */
struct proc {
	struct pagoda_dev dev;
	uint32_t ctx;
	struct pagoda_suballoc sa;
	struct pagoda_suballoc_entry cmd, data;
};

static void proc_open(struct proc *p)
{
	struct pagoda_bo_desc desc = { .segments = SEG(SYSTEM),
				       .priority = DRM_PAGODA_PRIORITY_NORMAL };

	check("open", pagoda_open(&p->dev));
	check("context", pagoda_ctx_create(&p->dev, DRM_PAGODA_PRIORITY_NORMAL, &p->ctx));
	check("sub-allocator", pagoda_suballoc_init(&p->sa, &p->dev, &desc));
	check("commands", pagoda_suballoc_alloc(&p->sa, 4 * KIB, 0, &p->cmd));
	check("data", pagoda_suballoc_alloc(&p->sa, 4 * KIB, 0, &p->data));
}

static void proc_close(struct proc *p)
{
	pagoda_suballoc_fini(&p->sa);
	pagoda_close(&p->dev);
}

static const char *status(struct proc *p)
{
	static char text[128];
	struct drm_pagoda_ctx_query q;

	memset(&q, 0, sizeof(q));
	if (pagoda_ctx_query(&p->dev, p->ctx, &q))
		return "?";
	snprintf(text, sizeof(text), "%s%s%s%s%s(resets %llu)",
		 q.status & DRM_PAGODA_CTX_BANNED ? "banned " : "",
		 q.status & DRM_PAGODA_CTX_FAULTED ? "faulted " : "",
		 q.status & DRM_PAGODA_CTX_RESET_GUILTY ? "guilty " : "",
		 q.status & DRM_PAGODA_CTX_RESET_INNOCENT ? "innocent " : "",
		 q.status ? "" : "fine ", (unsigned long long)q.resets);
	return text;
}

static void fault_and_hang(void)
{
	struct proc healthy, faulty, hung;
	struct pagoda_cmdbuf cb;
	unsigned int i, ok = 0;
	int ret, wstatus = 0;
	pid_t child;

	title("a faulting process beside a healthy one");
	proc_open(&healthy);
	proc_open(&faulty);
	printf("each process's commands and data, 4 KiB each: offsets 0x%llx and 0x%llx of %s allocation\n",
	       (unsigned long long)healthy.cmd.offset, (unsigned long long)healthy.data.offset,
	       healthy.cmd.handle == healthy.data.handle ? "one" : "not one");
	pagoda_cmdbuf_init(&cb, faulty.cmd.map, faulty.cmd.size);
	pagoda_cmd_fill(&cb, 1ull << 40, 4096, 0xbad);
	ret = run(&faulty.dev, faulty.ctx, faulty.cmd.va, &cb);
	printf("faulting process: its job writes to an unmapped VA: %s; context %s\n",
	       strerror(-ret), status(&faulty));
	pagoda_cmdbuf_init(&cb, healthy.cmd.map, healthy.cmd.size);
	pagoda_cmd_fill(&cb, healthy.data.va, 4096, 0x600d);
	for (i = 0; i < 10; i++)
		ok += !run(&healthy.dev, healthy.ctx, healthy.cmd.va, &cb);
	printf("healthy process: %u of 10 jobs completed; context %s\n", ok, status(&healthy));
	if (dbg[0])
		show_debugfs("faults", "context");

	title("a hang recovered (the scheduler's timeout, 10 s)");
	proc_open(&hung);
	pagoda_cmdbuf_init(&cb, hung.cmd.map, hung.cmd.size);
	pagoda_cmd_jump(&cb, hung.cmd.va, 16);
	child = fork();
	if (child == 0) {
		/* the hung job: a buffer that jumps to itself */
		_exit(run(&hung.dev, hung.ctx, hung.cmd.va, &cb) == -ETIMEDOUT ? 0 : 1);
	}
	usleep(200 * 1000);
	pagoda_cmdbuf_init(&cb, healthy.cmd.map, healthy.cmd.size);
	pagoda_cmd_fill(&cb, healthy.data.va, 4096, 0x600d);
	ret = run(&healthy.dev, healthy.ctx, healthy.cmd.va, &cb);
	waitpid(child, &wstatus, 0);
	printf("hung process: its job failed with ETIMEDOUT: %s; context %s\n",
	       WIFEXITED(wstatus) && !WEXITSTATUS(wstatus) ? "yes" : "no", status(&hung));
	printf("healthy process: its job queued behind the hang ran again and completed: %s; context %s\n",
	       ret ? strerror(-ret) : "yes", status(&healthy));
	if (dbg[0])
		show_debugfs("resets", NULL);
	proc_close(&faulty);
	proc_close(&hung);
	proc_close(&healthy);
}

static void finale(void)
{
	char path[64];

	title("debugfs: the segments");
	show_debugfs("segments", NULL);
	title("fdinfo of this process's DRM file");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dev.fd);
	show_file(path, "drm-");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	check("open", pagoda_open(&dev));
	check("context", pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx));
	if (pagoda_debugfs_dir(dbg, sizeof(dbg)))
		dbg[0] = 0;
	device();
	allocations();
	eviction();
	address_space();
	split();
	fault_and_hang();
	linked();
	finale();
	return 0;
}
