// SPDX-License-Identifier: MIT
/*
 * Video memory manager benchmark, run in a guest by scripts/bench.sh after
 * the device benchmark. Prints, in one run, each figure next to a baseline
 * measured in the same run:
 *  - CPU write and read bandwidth through BAR2 (VRAM) and on system pages,
 *    against memcpy on the guest's own memory;
 *  - allocations created and freed per second (VRAM, system memory),
 *    against a null ioctl (GET_PARAM) per second;
 *  - eviction plus re-admission: a set of allocations made resident in VRAM
 *    pushes out the set that was there (VRAM -> system, system -> VRAM by
 *    the paging engine), in MiB moved per second, against the guest's
 *    memcpy and the same set's own clear (paging-engine FILL) rate.
 * Not a test: nothing depends on the figures.
 *   usage: pagoda-membench
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpagoda.h>

#define MIB		(1024ull * 1024)
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)

static struct pagoda_dev dev;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "pagoda-membench: %s: %s\n", what, strerror(-ret));
	exit(1);
}

static void create(uint64_t size, uint32_t segments, uint32_t preferred, struct pagoda_bo *bo)
{
	struct pagoda_bo_desc desc = {
		.size = size, .segments = segments, .preferred_segment = preferred,
	};
	int ret = pagoda_bo_create(&dev, &desc, bo);

	if (ret)
		die("create", ret);
	ret = pagoda_bo_map(&dev, bo);
	if (ret)
		die("map", ret);
}

/* MiB/s of writing then reading @size bytes at @p, best of 3. */
static void cpu_bandwidth(void *p, uint64_t size, double *write, double *read)
{
	char *buf = malloc(size);
	double t, best_w = 1e9, best_r = 1e9;
	int i;

	memset(buf, 0x5a, size);
	for (i = 0; i < 3; i++) {
		t = now();
		memcpy(p, buf, size);
		t = now() - t;
		best_w = t < best_w ? t : best_w;
		t = now();
		memcpy(buf, p, size);
		t = now() - t;
		best_r = t < best_r ? t : best_r;
	}
	*write = size / MIB / best_w;
	*read = size / MIB / best_r;
	free(buf);
}

/*
 * Hidden VRAM through the host aperture: the first pass maps the slots
 * (a paging job per fault, sequential read-ahead), the best of the next
 * ones runs on warm slots. Against BAR2 on the same bytes.
 */
static void bench_host_aperture(uint64_t size, double bar2_w, double bar2_r)
{
	uint64_t aperture = 0;
	struct pagoda_bo hidden;
	double t, cold, w, r;

	pagoda_query(&dev, DRM_PAGODA_PARAM_HOST_APERTURE_SIZE, &aperture);
	if (size > aperture) {
		printf("  CPU through the host aperture       skipped: %llu MiB aperture\n",
		       (unsigned long long)(aperture / MIB));
		return;
	}
	create(size, SEG(VRAM_HIDDEN), DRM_PAGODA_SEGMENT_VRAM_HIDDEN, &hidden);
	t = now();
	memset(hidden.map, 0x5a, size);
	cold = size / MIB / (now() - t);
	cpu_bandwidth(hidden.map, size, &w, &r);
	printf("  CPU through the host aperture       write %7.0f  read %7.0f MiB/s  (%.0f%% / %.0f%% of BAR2; first touch %.0f MiB/s)\n",
	       w, r, 100 * w / bar2_w, 100 * r / bar2_r, cold);
	pagoda_bo_free(&dev, &hidden);
}

static void bench_cpu(void)
{
	const uint64_t size = 16 * MIB;
	double base_w, base_r, bar2_w, bar2_r, w, r;
	struct pagoda_bo vram, sys;
	void *mem = malloc(size);

	memset(mem, 0, size);
	cpu_bandwidth(mem, size, &base_w, &base_r);
	printf("  CPU memcpy, guest memory            write %7.0f  read %7.0f MiB/s\n", base_w, base_r);
	create(size, SEG(VRAM), DRM_PAGODA_SEGMENT_VRAM, &vram);
	cpu_bandwidth(vram.map, size, &bar2_w, &bar2_r);
	printf("  CPU through BAR2 (VRAM, WC)         write %7.0f  read %7.0f MiB/s  (%.0f%% / %.0f%% of memcpy)\n",
	       bar2_w, bar2_r, 100 * bar2_w / base_w, 100 * bar2_r / base_r);
	create(size, SEG(SYSTEM), DRM_PAGODA_SEGMENT_SYSTEM, &sys);
	cpu_bandwidth(sys.map, size, &w, &r);
	printf("  CPU on system pages                 write %7.0f  read %7.0f MiB/s  (%.0f%% / %.0f%% of memcpy)\n",
	       w, r, 100 * w / base_w, 100 * r / base_r);
	bench_host_aperture(size, bar2_w, bar2_r);
	pagoda_bo_free(&dev, &vram);
	pagoda_bo_free(&dev, &sys);
	free(mem);
}

static void bench_alloc(void)
{
	const int n = 2000;
	struct pagoda_bo_desc desc = { .size = 65536 };
	struct pagoda_bo bo;
	uint64_t value;
	double t, null_rate, vram_rate, sys_rate;
	int i;

	t = now();
	for (i = 0; i < n; i++)
		pagoda_query(&dev, DRM_PAGODA_PARAM_CHIP_ID, &value);
	null_rate = n / (now() - t);

	desc.segments = SEG(VRAM);
	desc.preferred_segment = DRM_PAGODA_SEGMENT_VRAM;
	t = now();
	for (i = 0; i < n; i++) {
		if (pagoda_bo_create(&dev, &desc, &bo))
			die("create", -EIO);
		pagoda_bo_free(&dev, &bo);
	}
	vram_rate = n / (now() - t);

	desc.segments = SEG(SYSTEM);
	desc.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM;
	t = now();
	for (i = 0; i < n; i++) {
		if (pagoda_bo_create(&dev, &desc, &bo))
			die("create", -EIO);
		pagoda_bo_free(&dev, &bo);
	}
	sys_rate = n / (now() - t);
	printf("  null ioctl (GET_PARAM)              %9.0f /s\n", null_rate);
	printf("  create+free 64 KiB in VRAM          %9.0f /s  (1 per %.1f null ioctls; cleared by the paging engine)\n",
	       vram_rate, null_rate / vram_rate);
	printf("  create+free 64 KiB in system memory %9.0f /s  (1 per %.1f null ioctls)\n",
	       sys_rate, null_rate / sys_rate);
}

static int residency(uint32_t op, struct pagoda_bo *bos, unsigned int n)
{
	uint32_t handles[64];
	unsigned int i;

	for (i = 0; i < n; i++)
		handles[i] = bos[i].handle;
	return op == DRM_PAGODA_MAKE_RESIDENT ? pagoda_make_resident(&dev, handles, n, NULL) :
						pagoda_evict(&dev, handles, n);
}

/* Touch one byte of each: waits for the moves' fences. */
static void touch(struct pagoda_bo *bos, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		(void)*(volatile char *)bos[i].map;
}

static void bench_eviction(uint64_t vram)
{
	const uint64_t size = 4 * MIB;
	unsigned int n = vram / size * 3 / 4, i, round;
	struct pagoda_bo a[64], b[64], *in = a;
	double t, clear_rate, best = 0, mem_rate, s;
	char *m1, *m2;

	if (n > 64)
		n = 64;
	/*
	 * Both sets prefer VRAM and only one fits: b, created first, is pushed
	 * out to system memory by a. Then they take turns.
	 */
	for (i = 0; i < n; i++) {
		create(size, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM, &b[i]);
		memset(b[i].map, i, size);
	}
	t = now();
	for (i = 0; i < n; i++)
		create(size, SEG(VRAM) | SEG(SYSTEM), DRM_PAGODA_SEGMENT_VRAM, &a[i]);
	touch(a, n);
	clear_rate = n * size / MIB / (now() - t);
	for (i = 0; i < n; i++)
		memset(a[i].map, i + 1, size);
	for (round = 0; round < 3; round++) {
		struct pagoda_bo *out = round % 2 ? b : a;

		in = round % 2 ? a : b;
		/* out is resident from the round before (a: from its creation) */
		if (round && residency(DRM_PAGODA_EVICT, out, n))
			die("evict", -EIO);
		t = now();
		if (residency(DRM_PAGODA_MAKE_RESIDENT, in, n))
			die("make resident", -EIO);
		touch(in, n);
		touch(out, n);
		s = 2.0 * n * size / MIB / (now() - t);
		best = s > best ? s : best;
	}
	m1 = malloc(n * size);
	m2 = malloc(n * size);
	memset(m1, 1, n * size);
	memset(m2, 2, n * size);
	t = now();
	memcpy(m2, m1, n * size);
	mem_rate = n * size / MIB / (now() - t);
	printf("  eviction + re-admission             %9.0f MiB/s moved  (%u x 4 MiB each way; %.0f%% of guest memcpy %.0f MiB/s)\n",
	       best, n, 100 * best / mem_rate, mem_rate);
	printf("  create in full VRAM, clear          %9.0f MiB/s  (evicting the same size to system memory, then FILL; create to first touch)\n",
	       clear_rate);
	residency(DRM_PAGODA_EVICT, in, n);
	for (i = 0; i < n; i++) {
		pagoda_bo_free(&dev, &a[i]);
		pagoda_bo_free(&dev, &b[i]);
	}
	free(m1);
	free(m2);
}

int main(void)
{
	uint64_t vram = 0;
	int ret;

	ret = pagoda_open(&dev);
	if (ret)
		die("open", ret);
	pagoda_query(&dev, DRM_PAGODA_PARAM_VRAM_SIZE, &vram);
	printf("Pagoda video memory manager benchmark (guest, %llu MiB of VRAM)\n",
	       (unsigned long long)(vram / MIB));
	bench_cpu();
	bench_alloc();
	bench_eviction(vram);
	pagoda_close(&dev);
	return 0;
}
