// SPDX-License-Identifier: MIT
/*
 * Render jobs over a working set of four times VRAM: 64 allocations of
 * 4 MiB, all mapped in the process's address space, are filled, copied and
 * checksummed by GPU jobs while they are evicted, made resident and moved
 * between segments in between (the residency ioctls, and whole segments
 * evicted through debugfs). Every job sees each allocation's current
 * contents at its VA wherever the allocation went: the driver rewrites
 * the mappings of what moved before the job runs. The CPU keeps a model of
 * every allocation's contents and checks each job's results and, at the
 * end, every allocation. The page tables are evicted with VRAM too, and
 * come back for the next job.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define COUNT		64
#define SIZE		(4 * MIB)
#define ROUNDS		40
#define TIMEOUT_NS	(60ll * 1000 * 1000 * 1000)
#define DEBUGFS		"/sys/kernel/debug/dri/0"

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320u & -(c & 1));
		crc_table[i] = c;
	}
}

/* CRC-32 of @words copies of @value (little endian), as zlib computes it. */
static uint32_t crc_of_fill(uint32_t value, uint64_t words)
{
	uint32_t crc = ~0u;
	uint8_t b[4] = { value, value >> 8, value >> 16, value >> 24 };
	uint64_t i;
	int k;

	for (i = 0; i < words; i++)
		for (k = 0; k < 4; k++)
			crc = crc >> 8 ^ crc_table[(crc ^ b[k]) & 0xff];
	return ~crc;
}

struct alloc {
	struct pagoda_bo bo;
	uint64_t va;
	uint32_t value;		/* every word holds it (the model) */
};

static struct alloc allocs[COUNT];

static uint32_t value_of(unsigned int id, unsigned int round)
{
	return 0x9e3779b9u * (id + 1) ^ round << 8 ^ 0xa5;
}

static int run_job(struct pagoda_dev *dev, uint32_t ctx, uint64_t va, uint32_t bytes)
{
	struct drm_pagoda_sync out = { 0 };
	int ret;

	ret = pagoda_syncobj_create(dev, &out.handle);
	if (ret)
		return ret;
	ret = pagoda_submit(dev, ctx, va, bytes, NULL, 0, &out, 1);
	if (!ret)
		ret = pagoda_syncobj_wait(dev, out.handle, 0, TIMEOUT_NS);
	pagoda_syncobj_destroy(dev, out.handle);
	return ret;
}

static int segment_of(struct pagoda_dev *dev, struct alloc *a)
{
	struct drm_pagoda_gem_info info;

	if (pagoda_bo_info(dev, a->bo.handle, &info))
		return -1;
	return info.segment;
}

/* Move things around: evict one, make one resident for a while, evict a segment. */
static void shuffle(struct pagoda_dev *dev, unsigned int round, uint64_t *rng)
{
	uint32_t h;
	char text[8];

	switch (round % 4) {
	case 0:
		h = allocs[pt_rng_next(rng) % COUNT].bo.handle;
		pagoda_evict(dev, &h, 1);
		break;
	case 1:
		h = allocs[pt_rng_next(rng) % COUNT].bo.handle;
		if (!pagoda_make_resident(dev, &h, 1, NULL))
			pagoda_evict(dev, &h, 1);
		break;
	case 2:
		snprintf(text, sizeof(text), "%u", DRM_PAGODA_SEGMENT_VRAM);
		pt_write_file(DEBUGFS "/evict", text);
		break;
	default:
		snprintf(text, sizeof(text), "%u", DRM_PAGODA_SEGMENT_VRAM_HIDDEN);
		pt_write_file(DEBUGFS "/evict", text);
		break;
	}
}

int main(void)
{
	struct pagoda_bo_desc desc = {
		.size = SIZE,
		.segments = SEG(SYSTEM) | SEG(VRAM) | SEG(VRAM_HIDDEN),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct pagoda_bo_desc small = {
		.size = 64 * KIB,
		.segments = SEG(SYSTEM),
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	unsigned int i, round, bad_jobs = 0, bad_results = 0, bad_final = 0;
	unsigned int seen[4] = { 0 };
	struct pagoda_bo cmd, result;
	uint64_t cmd_va = 0, result_va = 0, rng = 0x5eed;
	struct pagoda_dev dev;
	uint32_t ctx;
	int ret;

	crc_init();
	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pagoda_bo_create(&dev, &small, &cmd);
	if (!ret)
		ret = pagoda_bo_create(&dev, &small, &result);
	if (!ret)
		ret = pagoda_bo_map(&dev, &cmd);
	if (!ret)
		ret = pagoda_bo_map(&dev, &result);
	if (!ret)
		ret = pagoda_vm_map(&dev, cmd.handle, 0, cmd.size, 0, &cmd_va, 0, 0, 0);
	if (!ret)
		ret = pagoda_vm_map(&dev, result.handle, 0, result.size, 0, &result_va, 0, 0, 0);
	for (i = 0; i < COUNT && !ret; i++) {
		ret = pagoda_bo_create(&dev, &desc, &allocs[i].bo);
		if (!ret)
			ret = pagoda_vm_map(&dev, allocs[i].bo.handle, 0, SIZE, 0, &allocs[i].va, 0, 0,
					    0);
	}
	if (!pt_check(!ret, "%u allocations of %llu MiB mapped, with a command buffer (%d)", COUNT,
		      SIZE / MIB, ret))
		return pt_exit();

	/* the GPU gives every allocation its first contents, 16 per job */
	for (i = 0; i < COUNT && !ret; i += 16) {
		struct pagoda_cmdbuf cb;
		unsigned int j;

		pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
		for (j = i; j < i + 16; j++) {
			allocs[j].value = value_of(j, 0);
			pagoda_cmd_fill(&cb, allocs[j].va, SIZE, allocs[j].value);
		}
		ret = cb.error ?: run_job(&dev, ctx, cmd_va, cb.used_bytes);
	}
	pt_check(!ret, "every allocation filled by the GPU (%d)", ret);

	for (round = 1; round <= ROUNDS; round++) {
		unsigned int x = pt_rng_next(&rng) % COUNT, y = pt_rng_next(&rng) % COUNT;
		unsigned int z = pt_rng_next(&rng) % COUNT;
		uint32_t *r = result.map, crc_z, value_y;
		struct pagoda_cmdbuf cb;
		int seg;

		shuffle(&dev, round, &rng);
		seg = segment_of(&dev, &allocs[y]);
		if (seg >= 0 && seg < 4)
			seen[seg]++;
		/* the expected results, from the model before the job */
		value_y = allocs[y].value;
		crc_z = crc_of_fill(x == z ? value_of(x, round) : allocs[z].value, SIZE / 4);
		memset(r, 0, result.size);

		pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
		pagoda_cmd_fill(&cb, allocs[x].va, SIZE, value_of(x, round));
		pagoda_cmd_copy(&cb, allocs[y].va + SIZE - 32 * KIB, result_va, 32 * KIB);
		pagoda_cmd_crc32(&cb, allocs[z].va, SIZE, result_va + 32 * KIB);
		ret = cb.error ?: run_job(&dev, ctx, cmd_va, cb.used_bytes);
		if (ret) {
			bad_jobs++;
			continue;
		}
		allocs[x].value = value_of(x, round);
		if (x == y)
			value_y = allocs[x].value;
		for (i = 0; i < 8 * KIB; i++)
			if (r[i] != value_y)
				break;
		if (i < 8 * KIB || r[8 * KIB] != crc_z) {
			bad_results++;
			printf("round %u: x %u y %u z %u: word %u of the copy 0x%08x (want 0x%08x), crc 0x%08x (want 0x%08x)\n",
			       round, x, y, z, i, i < 8 * KIB ? r[i] : 0, value_y, r[8 * KIB], crc_z);
		}
	}
	pt_check(!bad_jobs, "%u jobs over the working set ran (%u failed)", ROUNDS, bad_jobs);
	pt_check(!bad_results, "every job read what the model holds (%u rounds wrong)", bad_results);
	printf("allocation read by jobs was in: system %u, VRAM %u, hidden VRAM %u\n", seen[0],
	       seen[1], seen[2]);
	pt_check(seen[0] && seen[1], "jobs used allocations in system memory and in VRAM");

	/* page tables are evicted with VRAM and come back for the next job */
	{
		long long before, evicted, back;
		char text[8];
		uint32_t *r = result.map;
		struct pagoda_cmdbuf cb;

		before = pt_debugfs_value(DEBUGFS "/vms", "  table chunks", "vram ");
		snprintf(text, sizeof(text), "%u", DRM_PAGODA_SEGMENT_VRAM);
		pt_write_file(DEBUGFS "/evict", text);
		evicted = pt_debugfs_value(DEBUGFS "/vms", "  table chunks", "vram ");
		pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
		pagoda_cmd_crc32(&cb, allocs[0].va, SIZE, result_va);
		ret = cb.error ?: run_job(&dev, ctx, cmd_va, cb.used_bytes);
		back = pt_debugfs_value(DEBUGFS "/vms", "  table chunks", "vram ");
		pt_check(before > 0 && evicted == 0 && back == before && !ret &&
			 r[0] == crc_of_fill(allocs[0].value, SIZE / 4),
			 "page tables: %lld chunks in VRAM, %lld after VRAM was evicted, %lld after the next job, which ran right (%d)",
			 before, evicted, back, ret);
	}

	/* every allocation holds its last value: sampled by the GPU (CRC32 of each) */
	for (i = 0; i < COUNT; i++) {
		struct pagoda_cmdbuf cb;
		uint32_t *r = result.map;

		pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
		pagoda_cmd_crc32(&cb, allocs[i].va, SIZE, result_va);
		if (cb.error || run_job(&dev, ctx, cmd_va, cb.used_bytes) ||
		    r[0] != crc_of_fill(allocs[i].value, SIZE / 4))
			bad_final++;
	}
	pt_check(!bad_final, "all %u allocations hold their last contents (%u differ)", COUNT,
		 bad_final);

	for (i = 0; i < COUNT; i++) {
		pagoda_vm_unmap(&dev, allocs[i].va, SIZE, 0);
		pagoda_bo_free(&dev, &allocs[i].bo);
	}
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return pt_exit();
}
