// SPDX-License-Identifier: MIT
/*
 * libpagoda's sub-allocator through the real device: the model leaves it
 * to user space to pack small allocations into larger ones, since memory
 * segments of 64 KiB pages would give each its own 64 KiB.
 *
 * 1000 buffers of 64 B .. 16 KiB take exactly the allocations the packing
 * rules of libpagoda.h give (debugfs "allocations", less the page-table
 * chunks debugfs "vms" lists), not one each. GPU jobs fill every buffer
 * through its own VA with its own pattern and write the CRC-32 of its
 * bytes to a result slot, 250 buffers a job; the CPU finds each buffer's
 * pattern, the rest of its entry untouched (nothing written into a
 * neighbour) and each CRC-32 right. Half of them freed in random order
 * and allocated again reuse the free entries while the others keep their
 * bytes; all freed in random order give every slab back. Requests above
 * 32 KiB or aligned to 64 KiB get an allocation of their own, alignments
 * are kept, and misuse gets EINVAL with nothing changed.
 */
#include <libpagoda.h>

#include "pagoda_vm_test.h"

#define KIB		1024ull
#define COUNT		1000
#define JOB_BUFFERS	250	/* buffers per job: FILL32 and CRC32 each, 56 bytes */
#define MAX_SIZE	(16 * KIB)

struct buf {
	struct pagoda_suballoc_entry e;
	uint64_t size;		/* what was asked */
	uint32_t pattern;
};

static struct buf bufs[COUNT];
static char dbg_dir[PT_PATH_MAX];

/* Every allocation of the device: debugfs "allocations" ends with "N allocations". */
static long long allocations(void)
{
	char path[PT_PATH_MAX + 16], line[512], *end;
	long long count = -1, n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/allocations", dbg_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n = strtoll(line, &end, 10);
		if (end != line && !strcmp(end, " allocations\n"))
			count = n;
	}
	fclose(f);
	return count;
}

/* Page-table chunks of every space (debugfs "vms": "  table chunks <seg> N ..."), or -1. */
static long long table_chunks(void)
{
	char path[PT_PATH_MAX + 8], line[512], *p, *end;
	long long chunks = -1, n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vms", dbg_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "  table chunks", 14))
			continue;
		chunks = chunks < 0 ? 0 : chunks;
		for (p = line + 14; *p; p = end) {
			n = strtoll(p, &end, 10);
			if (end == p)
				end = p + 1;
			else
				chunks += n;
		}
	}
	fclose(f);
	return chunks;
}

/* Allocations of the device other than page-table chunks: what the test's changes move. */
static long long data_allocations(void)
{
	long long all = allocations(), chunks = table_chunks();

	return all < 0 || chunks < 0 ? -1 : all - chunks;
}

/*
 * data_allocations() once it is @want, or what it still is after two
 * seconds: an allocation still busy when its last handle goes is freed by
 * TTM later.
 */
static long long allocations_become(long long want)
{
	long long n = data_allocations();
	int waited;

	for (waited = 0; n != want && waited < 2000; waited += 10) {
		pt_sleep_ms(10);
		n = data_allocations();
	}
	return n;
}

/*
 * data_allocations() once the programs before are gone: unchanged over
 * 200 ms (for at most five seconds), so that it counts this file's.
 */
static long long settled_allocations(void)
{
	long long n = data_allocations(), last = -2;
	int waited;

	for (waited = 0; n != last && waited < 5000; waited += 200) {
		last = n;
		pt_sleep_ms(200);
		n = data_allocations();
	}
	return n;
}

/*
 * The allocations libpagoda.h's packing gives the @n requests of @b (all
 * at most PAGODA_SUBALLOC_MAX_ENTRY, allocated with no free between):
 * per class, slabs of 64 KiB, then each twice the last up to 1 MiB.
 */
static unsigned int packed_allocations(const struct buf *b, unsigned int n)
{
	unsigned int per_class[PAGODA_SUBALLOC_CLASSES] = { 0 }, c, i, k, total = 0;
	uint64_t slab, entries;

	for (i = 0; i < n; i++) {
		for (c = 0; (uint64_t)PAGODA_SUBALLOC_MIN_ENTRY << c < b[i].size; c++)
			;
		per_class[c]++;
	}
	for (c = 0; c < PAGODA_SUBALLOC_CLASSES; c++) {
		for (k = 0, entries = 0; entries < per_class[c]; k++, total++) {
			slab = (uint64_t)PAGODA_SUBALLOC_SLAB_MIN << k;
			slab = slab < PAGODA_SUBALLOC_SLAB_MAX ? slab : PAGODA_SUBALLOC_SLAB_MAX;
			entries += slab / (PAGODA_SUBALLOC_MIN_ENTRY << c);
		}
	}
	return total;
}

/* 64 B .. 16 KiB: a power of two 64 .. 8 KiB, plus up to as much again. */
static uint64_t random_size(uint64_t *rng)
{
	uint64_t base = 64ull << pt_rng_next(rng) % 8;

	return base + pt_rng_next(rng) % (base + 1);
}

/* Every byte nonzero, so that the zeroes after a buffer tell it from its pattern. */
static uint32_t random_pattern(uint64_t *rng)
{
	return (uint32_t)pt_rng_next(rng) | 0x01010101u;
}

static int alloc_buf(struct pagoda_suballoc *sa, struct buf *b, uint64_t size, uint64_t *rng)
{
	int ret = pagoda_suballoc_alloc(sa, size, 0, &b->e);

	if (ret)
		return ret;
	b->size = size;
	b->pattern = random_pattern(rng);
	/* a reused entry holds its last owner's bytes */
	memset(b->e.map, 0, b->e.size);
	return 0;
}

/*
 * The GPU fills the buffers @ids (@n of them) through their VAs, then
 * writes the CRC-32 of each to its slot of @results, JOB_BUFFERS a job.
 */
static int gpu_fill(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd,
		    struct pt_buf *results, const unsigned int *ids, unsigned int n)
{
	struct pagoda_cmdbuf cb;
	unsigned int i, j;
	int ret = 0;

	for (i = 0; i < n && !ret; i += JOB_BUFFERS) {
		pagoda_cmdbuf_init(&cb, cmd->bo.map, cmd->bo.size);
		for (j = i; j < n && j < i + JOB_BUFFERS; j++) {
			struct buf *b = &bufs[ids[j]];

			pagoda_cmd_fill(&cb, b->e.va, b->size, b->pattern);
			pagoda_cmd_crc32(&cb, b->e.va, b->size, results->va + 4 * ids[j]);
		}
		ret = pt_run(dev, ctx, cmd, &cb);
	}
	return ret;
}

/*
 * Buffer @id's bytes through the CPU: its pattern, then zeroes to the end
 * of its entry; and the GPU's CRC-32 in @results. 0, or what is wrong.
 */
static const char *check_buf(unsigned int id, const uint32_t *results)
{
	static uint8_t want[MAX_SIZE];
	const struct buf *b = &bufs[id];
	const uint8_t *p = b->e.map;
	uint64_t i;

	for (i = 0; i < b->size; i++)
		want[i] = b->pattern >> (8 * (i % 4));
	if (memcmp(p, want, b->size))
		return "its bytes are not its pattern";
	for (i = b->size; i < b->e.size; i++)
		if (p[i])
			return "a byte after it was written";
	if (results[id] != pt_crc32(want, b->size))
		return "the GPU's CRC-32 is wrong";
	return NULL;
}

/* Check the buffers @ids; the number of bad ones, the first reported. */
static unsigned int check_bufs(const unsigned int *ids, unsigned int n, const uint32_t *results)
{
	unsigned int i, bad = 0;
	const char *why;

	for (i = 0; i < n; i++) {
		why = check_buf(ids[i], results);
		if (why && !bad++)
			printf("buffer %u (%llu bytes at offset 0x%llx of handle %u, VA 0x%llx): %s\n",
			       ids[i], (unsigned long long)bufs[ids[i]].size,
			       (unsigned long long)bufs[ids[i]].e.offset, bufs[ids[i]].e.handle,
			       (unsigned long long)bufs[ids[i]].e.va, why);
	}
	return bad;
}

static int by_place(const void *a, const void *b)
{
	const struct buf *x = &bufs[*(const unsigned int *)a], *y = &bufs[*(const unsigned int *)b];

	if (x->e.handle != y->e.handle)
		return x->e.handle < y->e.handle ? -1 : 1;
	return x->e.offset < y->e.offset ? -1 : x->e.offset > y->e.offset;
}

/*
 * Where the entries are: within their allocation, none overlapping
 * another, aligned like their power-of-two size, VA = the slab's VA plus
 * the offset (so VA and offset agree in their low 16 bits). The number of
 * entries that break a rule.
 */
static unsigned int check_places(void)
{
	static unsigned int order[COUNT];
	unsigned int i, bad = 0;

	for (i = 0; i < COUNT; i++)
		order[i] = i;
	qsort(order, COUNT, sizeof(order[0]), by_place);
	for (i = 0; i < COUNT; i++) {
		const struct pagoda_suballoc_entry *e = &bufs[order[i]].e;
		const struct pagoda_suballoc_entry *next = i + 1 < COUNT ? &bufs[order[i + 1]].e : NULL;

		bad += e->size < bufs[order[i]].size || e->size & (e->size - 1) ||
		       e->offset % e->size || (e->va ^ e->offset) & (DRM_PAGODA_VA_ALIGN - 1);
		if (next && next->handle == e->handle)
			bad += e->offset + e->size > next->offset ||
			       next->va - e->va != next->offset - e->offset;
	}
	return bad;
}

static void shuffle(unsigned int *ids, unsigned int n, uint64_t *rng)
{
	unsigned int i, j, t;

	for (i = n - 1; i > 0; i--) {
		j = pt_rng_next(rng) % (i + 1);
		t = ids[i];
		ids[i] = ids[j];
		ids[j] = t;
	}
}

/* Free @ids in that order; the number of frees that failed. */
static unsigned int free_bufs(struct pagoda_suballoc *sa, const unsigned int *ids, unsigned int n)
{
	unsigned int i, failed = 0;

	for (i = 0; i < n; i++)
		failed += !!pagoda_suballoc_free(sa, &bufs[ids[i]].e);
	return failed;
}

/*
 * 1000 buffers packed, used by the GPU, half freed and allocated again,
 * all freed: the allocations each step must leave.
 */
static void test_packing(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd,
			 struct pt_buf *results, uint64_t *rng)
{
	static unsigned int ids[COUNT];
	struct pagoda_bo_desc desc = { .priority = DRM_PAGODA_PRIORITY_NORMAL };
	struct pagoda_suballoc sa;
	long long before, packed, after;
	uint64_t page = 0, asked = 0;
	unsigned int i, want, bad, failed = 0;
	int ret;

	pagoda_query(dev, DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE, &page);
	pagoda_suballoc_init(&sa, dev, &desc);
	before = settled_allocations();
	for (i = 0; i < COUNT; i++) {
		ids[i] = i;
		failed += !!alloc_buf(&sa, &bufs[i], random_size(rng), rng);
		asked += bufs[i].size;
	}
	if (!pt_check(!failed, "%u buffers of 64 B .. 16 KiB allocated (%u failed)", COUNT,
		      failed))
		goto out;
	packed = data_allocations() - before;
	want = packed_allocations(bufs, COUNT);
	pt_check(before >= 0 && packed == want && sa.slabs == want,
		 "%u buffers (%llu KiB asked) packed into %lld allocations (debugfs; %u expected, the sub-allocator holds %u), not one each (%u of at least %llu KiB)",
		 COUNT, (unsigned long long)asked / KIB, packed, want, sa.slabs, COUNT,
		 (unsigned long long)page / KIB);
	pt_check(!check_places(),
		 "every entry in its own bytes of its slab, aligned to its size, at the slab's VA plus its offset");

	ret = gpu_fill(dev, ctx, cmd, results, ids, COUNT);
	pt_check(!ret, "GPU jobs filled and checksummed the %u buffers through their VAs (%s)",
		 COUNT, strerror(-ret));
	bad = check_bufs(ids, COUNT, results->bo.map);
	pt_check(!bad, "every buffer holds its pattern, nothing after it is written, every CRC-32 right (%u bad)",
		 bad);

	/* half freed in random order; as many of the same sizes again */
	shuffle(ids, COUNT, rng);
	failed = free_bufs(&sa, ids, COUNT / 2);
	after = allocations_become(before + sa.slabs) - before;
	pt_check(!failed && after == sa.slabs && after <= packed,
		 "half freed in random order: %lld allocations left (the sub-allocator holds %u; %u frees failed)",
		 after, sa.slabs, failed);
	bad = check_bufs(ids + COUNT / 2, COUNT - COUNT / 2, results->bo.map);
	pt_check(!bad, "the other half keep their bytes (%u bad)", bad);
	for (i = 0; i < COUNT / 2; i++)
		failed += !!alloc_buf(&sa, &bufs[ids[i]], bufs[ids[i]].size, rng);
	after = allocations_become(before + sa.slabs) - before;
	pt_check(!failed && after == sa.slabs && !check_places(),
		 "as many allocated again: %lld allocations (were %lld), entries apart (%u failed)",
		 after, packed, failed);
	ret = gpu_fill(dev, ctx, cmd, results, ids, COUNT / 2);
	bad = check_bufs(ids, COUNT, results->bo.map);
	pt_check(!ret && !bad, "the new ones filled by the GPU, all %u right (%s, %u bad)", COUNT,
		 strerror(-ret), bad);

	shuffle(ids, COUNT, rng);
	failed = free_bufs(&sa, ids, COUNT);
	after = allocations_become(before) - before;
	pt_check(!failed && after == 0 && sa.slabs == 0,
		 "all freed in random order: %lld allocations more than before (%u frees failed)",
		 after, failed);
out:
	pagoda_suballoc_fini(&sa);
}

/*
 * Requests of their own (more than 32 KiB, or aligned to more than their
 * size allows in a slab), alignments, and the GPU through such entries.
 */
static void test_own_and_aligned(struct pagoda_dev *dev, uint32_t ctx, struct pt_buf *cmd,
				 struct pt_buf *results, uint64_t *rng)
{
	static const uint64_t sizes[] = { 32 * KIB + 1, 64 * KIB, 200 * KIB };
	static const unsigned int ids[] = { 0, 1, 2, 3, 4 };
	struct pagoda_suballoc sa;
	long long before = data_allocations();
	unsigned int i, bad;
	int ret = 0;

	pagoda_suballoc_init(&sa, dev, NULL);
	for (i = 0; i < 3 && !ret; i++) {
		ret = alloc_buf(&sa, &bufs[i], sizes[i], rng);
		if (!ret)
			pt_check(bufs[i].e.offset == 0 && bufs[i].e.size >= sizes[i] &&
				 data_allocations() - before == i + 1,
				 "%llu bytes: an allocation of its own (%llu bytes, offset %llu); the allocations now %lld more",
				 (unsigned long long)sizes[i], (unsigned long long)bufs[i].e.size,
				 (unsigned long long)bufs[i].e.offset, data_allocations() - before);
	}
	if (!pt_check(!ret, "requests of their own allocated (%s)", strerror(-ret)))
		goto out;
	ret = pagoda_suballoc_alloc(&sa, 100, 4 * KIB, &bufs[3].e);
	pt_check(!ret && bufs[3].e.size == 4 * KIB && !(bufs[3].e.offset % (4 * KIB)) &&
		 !(bufs[3].e.va % (4 * KIB)),
		 "100 bytes aligned to 4 KiB: a 4 KiB entry at offset 0x%llx, VA 0x%llx (%s)",
		 (unsigned long long)bufs[3].e.offset, (unsigned long long)bufs[3].e.va,
		 strerror(-ret));
	ret = pagoda_suballoc_alloc(&sa, 100, 64 * KIB, &bufs[4].e);
	pt_check(!ret && bufs[4].e.offset == 0 && !(bufs[4].e.va % (64 * KIB)) &&
		 data_allocations() - before == 5,
		 "100 bytes aligned to 64 KiB: an allocation of its own at VA 0x%llx (%s)",
		 (unsigned long long)bufs[4].e.va, strerror(-ret));
	for (i = 3; i < 5; i++) {
		bufs[i].size = 100;
		bufs[i].pattern = random_pattern(rng);
		memset(bufs[i].e.map, 0, bufs[i].e.size);
	}
	/* sizes above MAX_SIZE: the GPU fills the first 16 KiB only */
	for (i = 0; i < 3; i++)
		bufs[i].size = MAX_SIZE;
	ret = gpu_fill(dev, ctx, cmd, results, ids, 5);
	bad = check_bufs(ids, 5, results->bo.map);
	pt_check(!ret && !bad, "the GPU fills and checksums them through their VAs (%s, %u bad)",
		 strerror(-ret), bad);
	for (i = 0; i < 5; i++)
		ret = ret ?: pagoda_suballoc_free(&sa, &bufs[i].e);
	pt_check(!ret && allocations_become(before) == before && !sa.slabs,
		 "freed, their allocations gone (%s)", strerror(-ret));
out:
	pagoda_suballoc_fini(&sa);
}

/* Misuse: EINVAL, and nothing allocated or freed. */
static void test_misuse(struct pagoda_dev *dev)
{
	struct pagoda_bo_desc sized = { .size = 4096 };
	struct pagoda_suballoc_entry e, other, forged, zero = { 0 };
	struct pagoda_suballoc sa;
	long long before = data_allocations();
	int ret;

	pt_check(pagoda_suballoc_init(&sa, dev, &sized) == -EINVAL,
		 "init with a size in the description: EINVAL");
	pagoda_suballoc_init(&sa, dev, NULL);
	pt_check(pagoda_suballoc_alloc(&sa, 0, 0, &e) == -EINVAL, "size 0: EINVAL");
	pt_check(pagoda_suballoc_alloc(&sa, 64, 3, &e) == -EINVAL,
		 "alignment not a power of two: EINVAL");
	pt_check(pagoda_suballoc_alloc(&sa, 64, 128 * KIB, &e) == -EINVAL,
		 "alignment above 64 KiB: EINVAL");
	pt_check(pagoda_suballoc_free(&sa, &zero) == -EINVAL,
		 "free of an entry never handed out: EINVAL");
	pt_check(data_allocations() == before && !sa.slabs, "the refused requests allocated nothing");
	ret = pagoda_suballoc_alloc(&sa, 64, 0, &e);
	if (!pt_check(!ret && !pagoda_suballoc_alloc(&sa, 64, 0, &other),
		      "two entries of 64 bytes (%s)", strerror(-ret)))
		goto out;
	forged = e;
	forged.offset += 1;
	pt_check(pagoda_suballoc_free(&sa, &forged) == -EINVAL,
		 "free of an entry whose offset was changed: EINVAL");
	forged.offset = other.offset;
	pt_check(pagoda_suballoc_free(&sa, &forged) == -EINVAL,
		 "free naming the other entry's offset: EINVAL");
	forged = e;
	pt_check(!pagoda_suballoc_free(&sa, &e) && !e.serial, "free: done, the entry cleared");
	pt_check(pagoda_suballoc_free(&sa, &e) == -EINVAL, "double free: EINVAL");
	pt_check(pagoda_suballoc_free(&sa, &forged) == -EINVAL,
		 "free of a copy of the freed entry: EINVAL");
	pt_check(data_allocations() == before + 1 && sa.slabs == 1,
		 "the misuse freed nothing: the slab still there");
	ret = pagoda_suballoc_alloc(&sa, 64, 0, &e);
	pt_check(!ret && e.offset == forged.offset && pagoda_suballoc_free(&sa, &forged) == -EINVAL,
		 "free of the stale copy once its entry is handed out again: EINVAL");
	pt_check(!pagoda_suballoc_free(&sa, &e) && !pagoda_suballoc_free(&sa, &other) &&
		 allocations_become(before) == before && !sa.slabs,
		 "the last entries freed: the slab gone");
out:
	pagoda_suballoc_fini(&sa);
}

int main(void)
{
	struct pt_buf cmd, results;
	struct pagoda_dev dev;
	uint64_t rng = 0x5ab5eed;
	uint32_t ctx;
	int ret;

	if (!pt_check(pt_debugfs_dir(dbg_dir, sizeof(dbg_dir)), "the device's debugfs directory"))
		return pt_exit();
	ret = pagoda_open(&dev);
	if (!ret)
		ret = pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx);
	if (!ret)
		ret = pt_buf_create(&dev, &cmd, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!ret)
		ret = pt_buf_create(&dev, &results, 64 * KIB, DRM_PAGODA_SEGMENT_SYSTEM, 0);
	if (!pt_check(!ret, "a context, a command buffer and a result buffer (%s)", strerror(-ret)))
		return pt_exit();
	test_packing(&dev, ctx, &cmd, &results, &rng);
	test_own_and_aligned(&dev, ctx, &cmd, &results, &rng);
	test_misuse(&dev);
	pt_buf_destroy(&dev, &results);
	pt_buf_destroy(&dev, &cmd);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return pt_exit();
}
