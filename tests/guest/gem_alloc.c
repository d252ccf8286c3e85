// SPDX-License-Identifier: MIT
/*
 * Allocations through the real device: created in each segment, placed as
 * asked (VRAM, system memory, contiguous when accessed physically), cleared
 * by the paging engine before first use, written and read by the CPU
 * through BAR2 and system pages, evicted to system memory by the paging
 * engine when VRAM is full with every byte kept, and every bad argument
 * refused with its errno.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

#define MIB		(1024ull * 1024)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

static uint64_t vram_size;
/* segment page size of VRAM: the device's default */
static const uint64_t page_size = 65536;

/* A value no other (allocation, offset) pair has. */
static uint64_t pattern(unsigned int n, uint64_t offset)
{
	return (uint64_t)n << 48 ^ offset ^ 0x5a5a000000000000ull;
}

static void fill(struct pagoda_bo *bo, unsigned int n)
{
	uint64_t *p = bo->map, i;

	for (i = 0; i < bo->size / 8; i++)
		p[i] = pattern(n, i);
}

/* Number of 8-byte words that do not hold their pattern. */
static uint64_t check(struct pagoda_bo *bo, unsigned int n)
{
	uint64_t *p = bo->map, i, bad = 0;

	for (i = 0; i < bo->size / 8; i++)
		bad += p[i] != pattern(n, i);
	return bad;
}

static int create(struct pagoda_dev *dev, uint64_t size, uint32_t segments, uint32_t preferred,
		  uint32_t flags, struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = segments, .preferred_segment = preferred,
		.flags = flags,
	};

	return pagoda_bo_create(dev, &desc, bo);
}

static int segment_of(struct pagoda_dev *dev, struct pagoda_bo *bo)
{
	struct drm_pagoda_gem_info info;

	return pagoda_bo_info(dev, bo->handle, &info) ? -1 : (int)info.segment;
}

/* A new allocation in each segment, mapped, written and read back. */
static void test_segments(struct pagoda_dev *dev)
{
	static const struct { const char *name; uint32_t seg; } cases[] = {
		{ "VRAM", DRM_PAGODA_SEGMENT_VRAM },
		{ "system memory", DRM_PAGODA_SEGMENT_SYSTEM },
	};
	struct drm_pagoda_gem_info info;
	struct pagoda_bo bo;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ret = create(dev, 1000, DRM_PAGODA_SEGMENT_MASK(cases[i].seg), cases[i].seg, 0, &bo);
		if (!pt_check(!ret, "%s: create 1000 bytes: %s", cases[i].name, strerror(-ret)))
			continue;
		ret = pagoda_bo_info(dev, bo.handle, &info);
		pt_check(!ret && info.segment == cases[i].seg, "%s: placed in segment %u",
			 cases[i].name, ret ? ~0u : info.segment);
		pt_check(bo.size == (cases[i].seg == DRM_PAGODA_SEGMENT_VRAM ? page_size : 4096),
			 "%s: size rounded to %llu", cases[i].name, (unsigned long long)bo.size);
		ret = pagoda_bo_map(dev, &bo);
		if (pt_check(!ret, "%s: mapped: %s", cases[i].name, strerror(-ret))) {
			fill(&bo, 1);
			pt_check(!check(&bo, 1), "%s: CPU writes read back", cases[i].name);
		}
		pagoda_bo_free(dev, &bo);
	}
}

/*
 * Whether the debugfs allocation list has a line with both words; when it
 * has not, what the list holds is printed.
 */
static int allocation_line_has(const char *a, const char *b)
{
	FILE *f = fopen("/sys/kernel/debug/dri/0/allocations", "r");
	char line[512], last[512] = "";
	int found = 0, lines = 0;

	if (!f) {
		printf("cannot open the debugfs allocation list: %s\n", strerror(errno));
		return 0;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		found = strstr(line, a) && strstr(line, b);
		snprintf(last, sizeof(last), "%s", line);
		lines++;
	}
	if (!found)
		printf("debugfs allocation list: %d lines read (%s), last: %s", lines,
		       ferror(f) ? strerror(errno) : "to its end", last);
	fclose(f);
	return found;
}

/*
 * Write-combined system pages: the CPU mapping is write-combined (the
 * allocation list says how its pages are mapped) and works; without the
 * flag they are cached.
 */
static void test_write_combined(struct pagoda_dev *dev)
{
	struct pagoda_bo wc, cached;

	if (create(dev, 7 * 4096, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM,
		   DRM_PAGODA_BO_WRITE_COMBINED, &wc) ||
	    create(dev, 9 * 4096, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, 0, &cached)) {
		pt_fail("create write-combined and cached system allocations");
		return;
	}
	if (pt_check(!pagoda_bo_map(dev, &wc) && !pagoda_bo_map(dev, &cached), "map both")) {
		fill(&wc, 11);
		fill(&cached, 12);
		pt_check(!check(&wc, 11) && !check(&cached, 12), "both read back");
	}
	pt_check(allocation_line_has("size 28672 ", "pages wc"),
		 "debugfs: the write-combined one has write-combined pages");
	pt_check(allocation_line_has("size 36864 ", "pages cached"),
		 "debugfs: the other has cached pages");
	pagoda_bo_free(dev, &wc);
	pagoda_bo_free(dev, &cached);
}

/* Memory a freed allocation held reads as zero in the next one. */
static void test_cleared(struct pagoda_dev *dev)
{
	struct pagoda_bo bo;
	uint64_t i, nonzero = 0;
	int round;

	for (round = 0; round < 2; round++) {
		if (create(dev, 8 * MIB, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM, 0, &bo) ||
		    pagoda_bo_map(dev, &bo)) {
			pt_fail("create and map 8 MiB of VRAM");
			return;
		}
		for (i = 0; i < bo.size / 8; i++)
			nonzero += ((uint64_t *)bo.map)[i] != 0;
		fill(&bo, 7);
		pagoda_bo_free(dev, &bo);
	}
	pt_check(!nonzero, "new VRAM allocations read as zero (%llu words not)",
		 (unsigned long long)nonzero);
}

static void test_physical(struct pagoda_dev *dev)
{
	struct drm_pagoda_gem_info info = { 0 };
	uint64_t aperture_size = 0;
	struct pagoda_bo bo;
	int ret;

	struct pagoda_bo_desc desc = {
		.size = 4 * MIB, .flags = DRM_PAGODA_BO_PHYSICAL, .segments = SEG(VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.eviction_segment = DRM_PAGODA_SEGMENT_VRAM_HIDDEN,
	};

	ret = pagoda_bo_create(dev, &desc, &bo);
	if (!pt_check(!ret, "physically accessed 4 MiB: %s", strerror(-ret)))
		return;
	pagoda_bo_info(dev, bo.handle, &info);
	pt_check(info.contiguous && info.segment == DRM_PAGODA_SEGMENT_VRAM,
		 "physically accessed: contiguous in VRAM at 0x%llx", (unsigned long long)info.offset);
	pagoda_bo_free(dev, &bo);

	/* in system memory: mapped contiguously into the aperture segment */
	pagoda_query(dev, DRM_PAGODA_PARAM_APERTURE_SIZE, &aperture_size);
	desc.segments = SEG(SYSTEM);
	desc.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	desc.eviction_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	ret = pagoda_bo_create(dev, &desc, &bo);
	if (!pt_check(!ret, "physically accessed 4 MiB in system memory: %s", strerror(-ret)))
		return;
	memset(&info, 0, sizeof(info));
	pagoda_bo_info(dev, bo.handle, &info);
	pt_check(info.segment == DRM_PAGODA_SEGMENT_APERTURE && info.contiguous &&
		 info.offset + bo.size <= aperture_size,
		 "physically accessed in system memory: in the aperture at 0x%llx, contiguous",
		 (unsigned long long)info.offset);
	ret = pagoda_bo_map(dev, &bo);
	if (pt_check(!ret, "map it: %s", strerror(-ret))) {
		fill(&bo, 9);
		pt_check(!check(&bo, 9), "CPU writes to its pages read back");
	}
	pagoda_bo_free(dev, &bo);

	/* larger than the aperture: no segment can take it */
	desc.size = aperture_size + 4096;
	ret = pagoda_bo_create(dev, &desc, &bo);
	pt_check(ret == -EINVAL, "physically accessed, larger than the aperture: %s",
		 strerror(-ret));
}

/*
 * 1.5 x VRAM in allocations that may live in VRAM or system memory: the
 * later ones push the earlier ones out, through the paging engine, and
 * every byte of every one reads back.
 */
static void test_eviction(struct pagoda_dev *dev)
{
	const uint64_t size = 16 * MIB;
	unsigned int count = vram_size * 3 / 2 / size, i, in_system = 0;
	uint64_t bad = 0;
	struct pagoda_bo *bos = calloc(count, sizeof(*bos));
	unsigned int made = 0;

	for (i = 0; i < count; i++, made++) {
		if (create(dev, size, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM, 0, &bos[i]) ||
		    pagoda_bo_map(dev, &bos[i]))
			break;
		fill(&bos[i], i + 1);
	}
	pt_check(made == count, "%u allocations of 16 MiB (%llu MiB of VRAM)", made,
		 (unsigned long long)(vram_size / MIB));
	for (i = 0; i < made; i++) {
		in_system += segment_of(dev, &bos[i]) == DRM_PAGODA_SEGMENT_SYSTEM;
		bad += check(&bos[i], i + 1);
	}
	pt_check(in_system >= made - vram_size / size, "%u evicted to system memory", in_system);
	pt_check(!bad, "every byte of every allocation reads back (%llu words differ)",
		 (unsigned long long)bad);
	for (i = 0; i < made; i++)
		pagoda_bo_free(dev, &bos[i]);
	free(bos);
}

/* The value of an fdinfo "key: N [KiB|MiB|GiB]" in bytes, or -1. */
static long long file_key(const char *path, const char *key)
{
	char line[256], unit[8];
	long long value = -1, n;
	size_t len = strlen(key);
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, len) || line[len] != ':')
			continue;
		unit[0] = 0;
		if (sscanf(line + len + 1, "%lld %7s", &n, unit) < 1)
			continue;
		value = n << (!strcmp(unit, "KiB") ? 10 : !strcmp(unit, "MiB") ? 20 :
			      !strcmp(unit, "GiB") ? 30 : 0);
	}
	fclose(f);
	return value;
}

/*
 * fdinfo shows the file's memory per segment with the standard DRM keys,
 * and debugfs the segment's use and the allocation.
 */
static void test_observability(struct pagoda_dev *dev)
{
	char fdinfo[64];
	struct pagoda_bo vram, sys;
	long long total_vram, total_sys, used;

	if (create(dev, 4 * MIB, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM, 0, &vram) ||
	    create(dev, 2 * MIB, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, 0, &sys)) {
		pt_fail("create the allocations to observe");
		return;
	}
	snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", dev->fd);
	total_vram = file_key(fdinfo, "drm-total-vram");
	total_sys = file_key(fdinfo, "drm-total-system");
	pt_check(total_vram == 4 * (long long)MIB && total_sys == 2 * (long long)MIB,
		 "fdinfo: drm-total-vram %lld, drm-total-system %lld bytes (want 4 and 2 MiB)",
		 total_vram, total_sys);
	pt_check(file_key(fdinfo, "drm-resident-vram") == 4 * (long long)MIB,
		 "fdinfo: drm-resident-vram 4 MiB");
	used = pt_debugfs_value("/sys/kernel/debug/dri/0/segments", "1 vram", " used ");
	pt_check(used >= 4 * (long long)MIB, "debugfs segments: %lld bytes of VRAM used", used);
	pt_check(allocation_line_has("size 4194304 ", "in vram"),
		 "debugfs allocations lists the 4 MiB one, in VRAM");
	pagoda_bo_free(dev, &vram);
	pagoda_bo_free(dev, &sys);
}

/*
 * The aperture segment's id places an allocation in system memory, as the
 * model names it: a plain one is in system memory, a physically accessed
 * one mapped into the aperture; preferred over VRAM, it is not in VRAM.
 */
static void test_aperture_id(struct pagoda_dev *dev)
{
	static const struct {
		uint32_t segments, flags, want;
		const char *what;
	} cases[] = {
		{ SEG(APERTURE), 0, DRM_PAGODA_SEGMENT_SYSTEM, "plain" },
		{ SEG(APERTURE), DRM_PAGODA_BO_PHYSICAL, DRM_PAGODA_SEGMENT_APERTURE,
		  "physically accessed" },
		{ SEG(APERTURE) | SEG(VRAM), 0, DRM_PAGODA_SEGMENT_SYSTEM,
		  "VRAM allowed, aperture preferred:" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pagoda_bo_desc desc = {
			.size = 64 * 1024, .segments = cases[i].segments,
			.preferred_segment = DRM_PAGODA_SEGMENT_APERTURE,
			.eviction_segment = DRM_PAGODA_SEGMENT_APERTURE, .flags = cases[i].flags,
		};
		struct pagoda_bo bo;
		int ret = pagoda_bo_create(dev, &desc, &bo), seg;

		if (!pt_check(!ret, "aperture id: %s allocation created (%s)", cases[i].what,
			      strerror(-ret)))
			continue;
		seg = segment_of(dev, &bo);
		pt_check(seg == (int)cases[i].want, "aperture id: %s allocation in segment %d (want %u)",
			 cases[i].what, seg, cases[i].want);
		ret = pagoda_bo_map(dev, &bo);
		if (pt_check(!ret, "aperture id: %s allocation mapped (%s)", cases[i].what,
			     strerror(-ret))) {
			fill(&bo, 11 + i);
			pt_check(!check(&bo, 11 + i), "aperture id: %s allocation reads back",
				 cases[i].what);
		}
		pagoda_bo_free(dev, &bo);
	}
}

static void expect(int ret, int want, const char *what)
{
	pt_check(ret == want, "%s: %s (want %s)", what, strerror(-ret), strerror(-want));
}

static void test_bad_arguments(struct pagoda_dev *dev)
{
	struct drm_pagoda_gem_create args;
	struct drm_pagoda_gem_info info;
	struct pagoda_bo bo;

	expect(create(dev, 0, SEG(VRAM), 1, 0, &bo), -EINVAL, "size 0");
	expect(create(dev, ~0ull, SEG(VRAM), 1, 0, &bo), -EINVAL, "size 2^64 - 1");
	expect(create(dev, 1ull << 63, SEG(VRAM), 1, 0, &bo), -EINVAL, "size 2^63");
	expect(create(dev, vram_size + 1, SEG(VRAM), 1, 0, &bo), -EINVAL, "size past the segment");
	expect(create(dev, 4096, 0x10, 4, 0, &bo), -EINVAL, "segment 4");
	expect(create(dev, 4096, SEG(VRAM), 0, 0, &bo), -EINVAL, "preferred not allowed");
	expect(create(dev, 4096, SEG(VRAM), 1, 1u << 31, &bo), -EINVAL, "unknown flag");
	expect(create(dev, 4096, SEG(VRAM), 1,
		      DRM_PAGODA_BO_CPU_ACCESS | DRM_PAGODA_BO_NO_CPU_ACCESS, &bo),
	       -EINVAL, "CPU access and no CPU access");
	expect(create(dev, 4096, SEG(VRAM) | SEG(VRAM_HIDDEN), 1, DRM_PAGODA_BO_CPU_ACCESS, &bo),
	       -EINVAL, "CPU access wanted, hidden VRAM allowed");
	if (!create(dev, 4096, SEG(VRAM) | SEG(SYSTEM), 1, DRM_PAGODA_BO_CPU_ACCESS, &bo)) {
		pt_check(!pagoda_bo_map(dev, &bo), "CPU access wanted, VRAM or system: mapped");
		pagoda_bo_free(dev, &bo);
	} else {
		pt_fail("CPU access wanted, VRAM or system: refused");
	}

	memset(&args, 0, sizeof(args));
	args.size = 4096;
	args.segments = SEG(VRAM);
	args.preferred_segment = 1;
	args.priority = 3;
	expect(ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args) ? -errno : 0, -EINVAL,
	       "priority 3");
	args.priority = 0;
	args.pad = 1;
	expect(ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args) ? -errno : 0, -EINVAL, "pad");
	args.pad = 0;
	args.eviction_segment = 4;
	expect(ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_CREATE, &args) ? -errno : 0, -EINVAL,
	       "eviction to segment 4");
	expect(ioctl(dev->fd, DRM_IOCTL_PAGODA_GEM_CREATE, NULL) ? -errno : 0, -EFAULT, "NULL");

	expect(pagoda_bo_info(dev, 0, &info), -ENOENT, "info of handle 0");
	expect(pagoda_bo_info(dev, 12345, &info), -ENOENT, "info of an unknown handle");
	if (!create(dev, 4096, SEG(VRAM), 1, DRM_PAGODA_BO_NO_CPU_ACCESS, &bo)) {
		expect(pagoda_bo_map(dev, &bo), -EACCES, "map of a no-CPU-access allocation");
		pagoda_bo_free(dev, &bo);
	}
}

int main(void)
{
	struct pagoda_dev dev;
	int ret;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the Pagoda render node: %s", strerror(-ret)))
		return pt_exit();
	ret = pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram_size);
	if (!pt_check(!ret, "VRAM size %llu MiB", (unsigned long long)(vram_size / MIB)))
		return pt_exit();

	test_segments(&dev);
	test_cleared(&dev);
	test_write_combined(&dev);
	test_physical(&dev);
	test_aperture_id(&dev);
	test_observability(&dev);
	test_eviction(&dev);
	test_bad_arguments(&dev);
	pagoda_close(&dev);
	return pt_exit();
}
