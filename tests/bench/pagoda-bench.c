/*
 * Pagoda device benchmark (not a test: it asserts nothing about speed).
 *
 * Drives a Pagoda GPU in QEMU through qtest and prints the throughput of
 * its data paths (virtual transfers through the GPU MMU with 4 KiB,
 * 64 KiB and scattered 4 KiB pages, and from 64 KiB tiles over a small
 * pool in 4 KiB entries and in LEAF64 tables; virtual and physical fills) and the
 * rate of page-table entries written by UPDATE_PAGE_TABLE, each next to
 * the host doing the same work in the same run: the same copies (the
 * scattered one in the same page order), fills with the same 32-bit
 * pattern, and a copy of the same entries with the checks the device makes
 * on each.
 *
 * What is timed is the device's work: every timed submission carries
 * WORK bytes (several commands when an operation is smaller), so the fixed
 * cost of a submission (doorbell to fence of one NOP, printed) stays a few
 * percent of it, and is printed as such. A sweep over operation sizes goes
 * to the file named by $PAGODA_BENCH_DATA, for scripts/bench.sh's plot.
 *
 * Run with scripts/bench.sh.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/madvise.h"
#include "qemu/memalign.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "libqos/pagoda.h"

#define SIZE        (64 * MiB)      /* the largest operation */
#define WORK        (256 * MiB)     /* bytes of work per timed submission */
#define RUNS        7
#define CTX         1
#define VA_SRC      0x100000000ull
#define VA_DST      0x200000000ull
#define VA_SRC_64K  0x300000000ull
#define VA_DST_64K  0x400000000ull
#define VA_SCATTER  0x500000000ull
#define VA_PTE      0x600000000ull
#define VA_TILES    0x700000000ull  /* 64 KiB tiles over a pool, 4 KiB entries */
#define VA_TILES_64K 0x800000000ull /* the same tiles in LEAF64 tables */
#define VA_SRC_PEER 0x900000000ull  /* the linked GPU's VRAM, 64 KiB pages */
#define TILE        (64 * KiB)
#define POOL_TILES  32              /* a 2 MiB tile pool at VRAM_SRC */
#define PTE_SPAN    (1 * GiB)       /* 262144 leaf entries */
#define PTES        (PTE_SPAN / 4096)
#define PTE_ROUNDS  64              /* ring entries of PTE_SPAN's entries per timing */
#define VRAM_SRC    0
#define VRAM_DST    (128 * MiB)
#define PATTERN     0x5a5a1234u

/* Operation sizes of the sweep. */
static const uint64_t sizes[] = {
    64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB,
};

/* Page i of VA_SCATTER shows VRAM page scatter_order[i]. */
static uint32_t scatter_order[SIZE / 4096];

/* Tile i of VA_TILES and VA_TILES_64K shows pool tile tile_order[i]. */
static uint32_t tile_order[SIZE / TILE];

static double now(void)
{
    return g_get_monotonic_time() / 1e6;
}

/*
 * Host buffer backed like QEMU's RAM: 2 MiB aligned with transparent huge
 * pages, so that the baseline pays no TLB cost the device does not.
 */
static uint8_t *host_buffer(uint64_t size)
{
    uint8_t *p = qemu_memalign(2 * MiB, size);

    qemu_madvise(p, size, QEMU_MADV_HUGEPAGE);
    memset(p, 1, size);
    return p;
}

/* ---- The host doing the device's work ----------------------------------- */

typedef void HostWork(uint8_t *dst, const uint8_t *src, uint64_t size);

static void host_copy(uint8_t *dst, const uint8_t *src, uint64_t size)
{
    memcpy(dst, src, size);
}

/* The scattered transfer: source pages in the device's page order. */
static void host_copy_scattered(uint8_t *dst, const uint8_t *src, uint64_t size)
{
    for (uint64_t i = 0; i < size / 4096; i++) {
        memcpy(dst + i * 4096, src + (uint64_t)scatter_order[i] * 4096, 4096);
    }
}

/* The tiled transfer: source tiles in the tiles' pool order. */
static void host_copy_tiles(uint8_t *dst, const uint8_t *src, uint64_t size)
{
    for (uint64_t i = 0; i < size / TILE; i++) {
        memcpy(dst + i * TILE, src + (uint64_t)tile_order[i] * TILE, TILE);
    }
}

/* The fills: a 32-bit pattern, not a byte. */
static void host_fill32(uint8_t *dst, const uint8_t *src, uint64_t size)
{
    uint32_t *p = (uint32_t *)dst;

    for (uint64_t i = 0; i < size / 4; i++) {
        p[i] = PATTERN;
    }
}

/*
 * Best MiB/s of the host doing @work on WORK bytes in operations of @size,
 * each at the next offset of the buffers like the device's (the scattered
 * copy always reads the same shuffled pages, @same_src).
 */
static double host_rate(HostWork *work, uint64_t size, bool same_src)
{
    uint8_t *a = host_buffer(SIZE), *b = host_buffer(SIZE);
    double best = 1e9;

    for (int i = 0; i < RUNS; i++) {
        double t = now();

        for (uint64_t done = 0; done < WORK; done += size) {
            work(b + done % SIZE, same_src ? a : a + done % SIZE, size);
        }
        best = MIN(best, now() - t);
    }
    /* keep the compiler from dropping the work */
    g_assert(b[size - 1] != 0);
    qemu_vfree(a);
    qemu_vfree(b);
    return WORK / best / MiB;
}

/*
 * What UPDATE_PAGE_TABLE does per entry: check it (no reserved or adapter
 * bits, a segment that exists) and store it little-endian; with
 * @increment, one entry whose address advances a page per entry.
 */
static double host_pte_rate(bool increment)
{
    const uint64_t reserved = PAGODA_PTE_RESERVED_MASK | PAGODA_PTE_ADAPTER_MASK;
    uint64_t *src = (uint64_t *)host_buffer(PTES * 8);
    uint64_t *dst = (uint64_t *)host_buffer(PTES * 8);
    uint64_t bad = 0;
    double best = 1e9;

    for (uint64_t i = 0; i < PTES; i++) {
        src[i] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, i * 4096 % SIZE, PAGODA_PTE_VALID);
    }
    for (int r = 0; r < RUNS; r++) {
        double t = now();

        for (int round = 0; round < PTE_ROUNDS; round++) {
            for (uint64_t i = 0; i < PTES; i++) {
                uint64_t pte = increment ? src[0] + (i << PAGODA_PTE_FRAME_SHIFT) : src[i];

                bad += (pte & reserved) || PAGODA_PTE_SEGMENT(pte) >= PAGODA_NUM_SEGMENTS;
                dst[i] = cpu_to_le64(pte);
            }
        }
        best = MIN(best, now() - t);
    }
    g_assert(!bad && dst[PTES - 1]);
    qemu_vfree(src);
    qemu_vfree(dst);
    return PTE_ROUNDS * PTES / best;
}

/* ---- The device --------------------------------------------------------- */

static void flush_tlb(QPagoda *d)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_flush_tlb(&c, PAGODA_FLUSH_ALL_CONTEXTS, 0, 0, 0);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    pagoda_cmds_free(&c);
}

/*
 * Best time of RUNS executions of @c on the paging engine, TLB cold; each
 * execution is @entries ring entries running @c, submitted back to back.
 */
static double best_time_entries(QPagoda *d, PagodaCmds *c, unsigned entries)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    double best = 1e9;

    for (int i = 0; i < RUNS; i++) {
        uint64_t fence = 0;
        double t;

        flush_tlb(d);
        t = now();
        for (unsigned e = 0; e < entries; e++) {
            fence = pagoda_submit(d, PAGODA_ENGINE_PAGING, PAGODA_PADDR(0, addr),
                                  pagoda_cmds_bytes(c), CTX, 0);
        }
        g_assert(pagoda_wait_fence(d, PAGODA_ENGINE_PAGING, fence));
        best = MIN(best, now() - t);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    }
    return best;
}

static double best_time(QPagoda *d, PagodaCmds *c)
{
    return best_time_entries(d, c, 1);
}

/* Doorbell to fence of one NOP: the fixed cost of a timed submission. */
static double fixed_cost(QPagoda *d)
{
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    pagoda_cmd_nop(&c, 1);
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    return t;
}

typedef enum {
    PATH_VTRANSFER_4K,
    PATH_VTRANSFER_64K,
    PATH_VTRANSFER_SCATTERED,
    PATH_VTRANSFER_TILES,
    PATH_VTRANSFER_TILES_64K,
    PATH_VFILL_4K,
    PATH_FILL_VRAM,
    PATH_VTRANSFER_PEER,
    NUM_PATHS
} Path;

static const struct {
    const char *name;
    const char *key;            /* for the sweep's data file */
    HostWork *host;
    const char *host_name;
} paths[NUM_PATHS] = {
    [PATH_VTRANSFER_4K] = { "virtual transfer, 4 KiB pages", "transfer-4k",
                            host_copy, "memcpy" },
    [PATH_VTRANSFER_64K] = { "virtual transfer, 64 KiB pages", "transfer-64k",
                             host_copy, "memcpy" },
    [PATH_VTRANSFER_SCATTERED] = { "virtual transfer, 4 KiB pages, scattered",
                                   "transfer-scattered", host_copy_scattered,
                                   "copy, same page order" },
    [PATH_VTRANSFER_TILES] = { "virtual transfer, 64 KiB tiles, 4 KiB entries",
                               "transfer-tiles", host_copy_tiles,
                               "copy, same tile order" },
    [PATH_VTRANSFER_TILES_64K] = { "virtual transfer, 64 KiB tiles, LEAF64",
                                   "transfer-tiles-64k", host_copy_tiles,
                                   "copy, same tile order" },
    [PATH_VFILL_4K] = { "virtual fill, 4 KiB pages", "vfill-4k", host_fill32,
                        "32-bit fill" },
    [PATH_FILL_VRAM] = { "physical fill, VRAM", "fill-vram", host_fill32,
                         "32-bit fill" },
    [PATH_VTRANSFER_PEER] = { "virtual transfer, from a linked GPU", "transfer-peer",
                              host_copy, "memcpy" },
};

/* The @i-th operation of @path in a submission, of @size bytes. */
static void path_command(PagodaCmds *c, Path path, uint64_t size, uint64_t i)
{
    uint64_t off = i * size % SIZE;

    switch (path) {
    case PATH_VTRANSFER_4K:
        pagoda_cmd_vtransfer(c, 0, VA_SRC + off, VA_DST + off, size);
        break;
    case PATH_VTRANSFER_64K:
        pagoda_cmd_vtransfer(c, PAGODA_VIRTUAL_64K, VA_SRC_64K + off,
                             VA_DST_64K + off, size);
        break;
    case PATH_VTRANSFER_SCATTERED:
        /* from the start each time, as the host baseline does */
        pagoda_cmd_vtransfer(c, 0, VA_SCATTER, VA_DST + off, size);
        break;
    case PATH_VTRANSFER_TILES:
        /* from the start each time, as the host baseline does */
        pagoda_cmd_vtransfer(c, 0, VA_TILES, VA_DST + off, size);
        break;
    case PATH_VTRANSFER_TILES_64K:
        pagoda_cmd_vtransfer(c, PAGODA_VIRTUAL_64K, VA_TILES_64K, VA_DST_64K + off, size);
        break;
    case PATH_VFILL_4K:
        pagoda_cmd_vfill(c, 0, VA_DST + off, PATTERN, size);
        break;
    case PATH_VTRANSFER_PEER:
        pagoda_cmd_vtransfer(c, PAGODA_VIRTUAL_64K, VA_SRC_PEER + off,
                             VA_DST_64K + off, size);
        break;
    default:
        pagoda_cmd_fill(c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST + off), PATTERN,
                        size);
        break;
    }
}

/* Device MiB/s of @path: WORK bytes in operations of @size, one submission. */
static double device_rate(QPagoda *d, Path path, uint64_t size, double *seconds)
{
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    for (uint64_t i = 0; i < WORK / size; i++) {
        path_command(&c, path, size, i);
    }
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    if (seconds) {
        *seconds = t;
    }
    return WORK / t / MiB;
}

/*
 * Give every page of VRAM used here real content (untouched RAM reads as
 * the shared zero page, which would flatter the copies).
 */
static void populate_vram(QPagoda *d)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), 0x01020304, SIZE);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), 0x05060708, SIZE);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    pagoda_cmds_free(&c);
}

/*
 * Map SIZE bytes at @va to VRAM pages in a shuffled order, so that no two
 * neighbouring virtual pages are physically adjacent.
 */
static void map_scattered(PagodaVM *vm, uint64_t va, uint64_t vram_base)
{
    uint64_t pages = SIZE / 4096, per_table = 512;
    g_autofree uint64_t *ptes = g_new(uint64_t, pages);
    GRand *rand = g_rand_new_with_seed(42);

    for (uint64_t i = 0; i < pages; i++) {
        scatter_order[i] = i;
    }
    for (uint64_t i = pages - 1; i > 0; i--) {
        uint32_t j = g_rand_int_range(rand, 0, i + 1), tmp = scatter_order[i];

        scatter_order[i] = scatter_order[j];
        scatter_order[j] = tmp;
    }
    for (uint64_t i = 0; i < pages; i++) {
        ptes[i] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM,
                                  vram_base + (uint64_t)scatter_order[i] * 4096,
                                  PAGODA_PTE_VALID);
    }
    for (uint64_t i = 0; i < pages; i += per_table) {
        pagoda_memwrite(vm->d, pagoda_vm_table(vm, va + i * 4096, 0, false),
                        ptes + i, per_table * sizeof(uint64_t));
    }
    g_rand_free(rand);
}

/*
 * SIZE bytes of 64 KiB tiles at VA_TILES (16 entries of 4 KiB each) and at
 * VA_TILES_64K (one LEAF64 entry each), each showing a tile of a pool of
 * POOL_TILES at @vram_base, in a shuffled order repeated over the pool: a
 * tiled resource larger than its pool.
 */
static void map_tiles(PagodaVM *vm, uint64_t vram_base)
{
    GRand *rand = g_rand_new_with_seed(64);

    for (uint64_t i = 0; i < SIZE / TILE; i++) {
        uint64_t pa;

        tile_order[i] = g_rand_int_range(rand, 0, POOL_TILES);
        pa = PAGODA_PADDR(PAGODA_SEG_VRAM, vram_base + (uint64_t)tile_order[i] * TILE);
        pagoda_vm_map(vm, VA_TILES + i * TILE, pa, TILE, 4096, 0);
        pagoda_vm_map(vm, VA_TILES_64K + i * TILE, pa, TILE, 65536, 0);
    }
    g_rand_free(rand);
}

/*
 * UPDATE_PAGE_TABLE: the leaf entries of PTE_SPAN bytes, 512 per command,
 * in PTE_ROUNDS ring entries.
 */
static double pte_rate(QPagoda *d, PagodaVM *vm, bool repeat, double *seconds)
{
    uint64_t per_table = 512;
    g_autofree uint64_t *ptes = g_new(uint64_t, per_table);
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    for (uint64_t i = 0; i < PTES; i += per_table) {
        uint64_t table = pagoda_vm_table(vm, VA_PTE + i * 4096, 0, false);

        for (uint64_t j = 0; j < per_table; j++) {
            ptes[j] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, ((i + j) * 4096) % SIZE,
                                      PAGODA_PTE_VALID);
        }
        pagoda_cmd_update_pt(&c, repeat ? PAGODA_UPT_REPEAT |
                             PAGODA_UPT_REPEAT_INCREMENT : 0, 0, PAGODA_PADDR(0, table),
                             0, per_table, ptes);
    }
    t = best_time_entries(d, &c, PTE_ROUNDS);
    pagoda_cmds_free(&c);
    *seconds = t;
    return PTE_ROUNDS * PTES / t;
}

/*
 * TLB working set: fill WORKING_SET bytes of scattered 4 KiB pages twice,
 * without a flush in between, and count the page walks of the second pass.
 * Next to it, the same page sequence through a cache organised like QEMU's
 * intel-iommu IOTLB (1024 entries, emptied when full), simulated here.
 */
#define WORKING_SET (12 * MiB)

static uint64_t flush_all_when_full_misses(void)
{
    g_autoptr(GHashTable) cache = g_hash_table_new(g_direct_hash, g_direct_equal);
    uint64_t pages = WORKING_SET / 4096, misses = 0;

    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t p = 0; p < pages; p++) {
            if (g_hash_table_contains(cache, GSIZE_TO_POINTER(p))) {
                continue;
            }
            if (pass) {
                misses++;
            }
            if (g_hash_table_size(cache) == 1024) {
                g_hash_table_remove_all(cache);
            }
            g_hash_table_add(cache, GSIZE_TO_POINTER(p));
        }
    }
    return misses;
}

static uint64_t second_pass_misses(QPagoda *d)
{
    PagodaCmds c;
    uint64_t before;

    flush_tlb(d);
    pagoda_cmds_init(&c);
    pagoda_cmd_vfill(&c, 0, VA_SCATTER, 0, WORKING_SET);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    before = pagoda_rd64(d, PAGODA_REG_TLB_MISSES_LO);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    pagoda_cmds_free(&c);
    return pagoda_rd64(d, PAGODA_REG_TLB_MISSES_LO) - before;
}

/* ---- Report ------------------------------------------------------------- */

static void print_machine(void)
{
    g_autofree char *cpuinfo = NULL;
    const char *model = "unknown CPU";
    char *line;

    if (g_file_get_contents("/proc/cpuinfo", &cpuinfo, NULL, NULL) &&
        (line = strstr(cpuinfo, "model name"))) {
        line = strchr(line, ':');
        model = line ? g_strstrip(g_strndup(line + 1, strcspn(line + 1, "\n"))) : model;
    }
    printf("Machine: %s, %d CPUs online\n", model, (int)sysconf(_SC_NPROCESSORS_ONLN));
}

static void row(const char *what, double rate, const char *unit, double base,
                const char *base_name)
{
    printf("  %-44s %10.0f %-5s %5.0f%% of host %s (%.0f)\n", what, rate, unit,
           100 * rate / base, base_name, base);
}

/* Whether @path reads the same source each time (its host baseline too). */
static bool same_src(Path path)
{
    return path == PATH_VTRANSFER_SCATTERED || path == PATH_VTRANSFER_TILES ||
           path == PATH_VTRANSFER_TILES_64K;
}

/* Device and host throughput over operation sizes, for the plot. */
static void sweep(QPagoda *d, const char *file)
{
    FILE *f = fopen(file, "w");

    g_assert(f);
    fprintf(f, "# path size_bytes device_MiBps host_MiBps\n");
    for (int p = 0; p < NUM_PATHS; p++) {
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
            double device = device_rate(d, p, sizes[i], NULL);
            double host = host_rate(paths[p].host, sizes[i], same_src(p));

            fprintf(f, "%s %" PRIu64 " %.0f %.0f\n", paths[p].key, sizes[i],
                    device, host);
        }
        fprintf(f, "\n\n");
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPagoda d = { 0 }, peer;
    PagodaVM vm;
    double fixed, rate[NUM_PATHS], seconds[NUM_PATHS], host[NUM_PATHS], longest = 0;
    const char *data = g_getenv("PAGODA_BENCH_DATA");

    /* a second GPU linked to the first: the peer path reads its VRAM */
    qts = qtest_init("-machine pc -m 512M -device pagoda,id=pgd0,addr=04.0 "
                     "-device pagoda,link=pgd0,addr=05.0,vram-size=64M,host-aperture-size=1M");
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    bus = qpci_new_pc(qts, &alloc);
    dev = qpci_device_find(bus, QPCI_DEVFN(4, 0));
    g_assert(dev);
    d.dev = *dev;
    g_free(dev);
    pagoda_start(&d, &alloc);

    pagoda_vm_init(&vm, &d, CTX, 512);
    pagoda_vm_map(&vm, VA_SRC, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), SIZE, 4096, 0);
    pagoda_vm_map(&vm, VA_DST, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), SIZE, 4096, 0);
    pagoda_vm_map(&vm, VA_SRC_64K, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), SIZE,
                  65536, 0);
    pagoda_vm_map(&vm, VA_DST_64K, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), SIZE,
                  65536, 0);
    pagoda_vm_map(&vm, VA_SRC_PEER, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), SIZE,
                  65536, PAGODA_PTE_PEER(1));
    map_scattered(&vm, VA_SCATTER, VRAM_SRC);
    map_tiles(&vm, VRAM_SRC);
    populate_vram(&d);
    pagoda_start_other(&peer, &d, QPCI_DEVFN(5, 0));
    populate_vram(&peer);

    print_machine();
    fixed = fixed_cost(&d);
    for (int p = 0; p < NUM_PATHS; p++) {
        rate[p] = device_rate(&d, p, SIZE, &seconds[p]);
        host[p] = host_rate(paths[p].host, SIZE, same_src(p));
    }
    printf("Pagoda device benchmark: %u MiB of work per timed submission in %u MiB "
           "operations, best of %d, TLB flushed before each\n",
           (unsigned)(WORK / MiB), (unsigned)(SIZE / MiB), RUNS);
    printf("  host memcpy %.0f MiB/s; fixed cost of a submission (NOP, doorbell to "
           "fence) %.0f us\n", host[PATH_VTRANSFER_4K], fixed * 1e6);
    for (int p = 0; p < NUM_PATHS; p++) {
        row(paths[p].name, rate[p], "MiB/s", host[p], paths[p].host_name);
        longest = MAX(longest, fixed / seconds[p]);
    }
    for (int repeat = 0; repeat < 2; repeat++) {
        double t, r = pte_rate(&d, &vm, repeat, &t);

        row(repeat ? "update page table, repeat+increment" :
            "update page table, inline entries", r, "PTE/s", host_pte_rate(repeat),
            repeat ? "checked generation" : "checked copy");
        longest = MAX(longest, fixed / t);
    }
    printf("  fixed cost: at most %.1f%% of a timed submission\n", 100 * longest);
    printf("  64 KiB pages vs 4 KiB pages: %.2fx; 64 KiB tiles, LEAF64 vs 4 KiB entries: %.2fx\n",
           rate[PATH_VTRANSFER_64K] / rate[PATH_VTRANSFER_4K],
           rate[PATH_VTRANSFER_TILES_64K] / rate[PATH_VTRANSFER_TILES]);
    printf("  from a linked GPU's VRAM vs from its own, 64 KiB pages: %.2fx\n",
           rate[PATH_VTRANSFER_PEER] / rate[PATH_VTRANSFER_64K]);
    printf("  TLB misses, 2nd pass over %u MiB of 4 KiB pages: %" PRIu64
           " (flush-all-when-full 1024-entry cache: %" PRIu64 " of %u)\n",
           (unsigned)(WORKING_SET / MiB), second_pass_misses(&d),
           flush_all_when_full_misses(), (unsigned)(WORKING_SET / 4096));
    if (data) {
        sweep(&d, data);
        printf("  throughput over operation sizes: %s\n", data);
    }

    qpci_free_pc(bus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
    return 0;
}
