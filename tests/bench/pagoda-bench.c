/*
 * Pagoda device benchmark (not a test: it asserts nothing about speed).
 *
 * Drives a Pagoda GPU in QEMU through qtest and prints, in one run, the
 * throughput of virtual transfers and fills through the GPU MMU with 4 KiB
 * and 64 KiB pages, of physical fills, and the rate of page-table entries
 * written by UPDATE_PAGE_TABLE, next to the host's own memcpy/memset on the
 * same sizes measured in the same run, with the ratios.
 *
 * Run with scripts/bench.sh.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/madvise.h"
#include "qemu/memalign.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "libqos/pagoda.h"

#define SIZE        (64 * MiB)
#define RUNS        5
#define CTX         1
#define VA_SRC      0x100000000ull
#define VA_DST      0x200000000ull
#define VA_SRC_64K  0x300000000ull
#define VA_DST_64K  0x400000000ull
#define VA_SCATTER  0x500000000ull
#define VA_PTE      0x600000000ull
#define PTE_SPAN    (1 * GiB)       /* 262144 leaf entries */
#define VRAM_SRC    0
#define VRAM_DST    (128 * MiB)

static double now(void)
{
    return g_get_monotonic_time() / 1e6;
}

/*
 * Host buffer backed like QEMU's RAM: 2 MiB aligned with transparent huge
 * pages, so that the baseline pays no TLB cost the device does not.
 */
static uint8_t *host_buffer(void)
{
    uint8_t *p = qemu_memalign(2 * MiB, SIZE);

    qemu_madvise(p, SIZE, QEMU_MADV_HUGEPAGE);
    return p;
}

/* Best of RUNS of the host doing memcpy or memset of SIZE bytes. */
static double host_rate(bool copy)
{
    uint8_t *a = host_buffer(), *b = host_buffer();
    double best = 1e9;

    memset(a, 1, SIZE);
    memset(b, 2, SIZE);
    for (int i = 0; i < RUNS; i++) {
        double t = now();

        if (copy) {
            memcpy(b, a, SIZE);
        } else {
            memset(b, i, SIZE);
        }
        best = MIN(best, now() - t);
        /* keep the compiler from dropping the work */
        g_assert(b[SIZE - 1] == (copy ? 1 : i));
    }
    qemu_vfree(a);
    qemu_vfree(b);
    return SIZE / best / MiB;
}

static void flush_tlb(QPagoda *d)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_flush_tlb(&c, PAGODA_FLUSH_ALL_CONTEXTS, 0, 0, 0);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    pagoda_cmds_free(&c);
}

/* Best time of RUNS executions of @c on the paging engine, TLB cold. */
static double best_time(QPagoda *d, PagodaCmds *c)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    double best = 1e9;

    for (int i = 0; i < RUNS; i++) {
        uint64_t fence;
        double t;

        flush_tlb(d);
        t = now();
        fence = pagoda_submit(d, PAGODA_ENGINE_PAGING, PAGODA_PADDR(0, addr),
                              pagoda_cmds_bytes(c), CTX, 0);
        g_assert(pagoda_wait_fence(d, PAGODA_ENGINE_PAGING, fence));
        best = MIN(best, now() - t);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    }
    return best;
}

static double vtransfer_rate(QPagoda *d, uint64_t src, uint64_t dst,
                             uint32_t flags)
{
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    pagoda_cmd_vtransfer(&c, flags, src, dst, SIZE);
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    return SIZE / t / MiB;
}

static double vfill_rate(QPagoda *d, uint64_t dst)
{
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    pagoda_cmd_vfill(&c, 0, dst, 0x5a5a1234, SIZE);
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    return SIZE / t / MiB;
}

/* Give every page of VRAM used here real content (untouched RAM reads as the
 * shared zero page, which would flatter the copies). */
static void populate_vram(QPagoda *d)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), 0x01020304, SIZE);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), 0x05060708, SIZE);
    pagoda_run(d, PAGODA_ENGINE_PAGING, &c, CTX, 0);
    pagoda_cmds_free(&c);
}

static double fill_rate(QPagoda *d)
{
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), 0x5a5a1234, SIZE);
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    return SIZE / t / MiB;
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
        ptes[i] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, vram_base + i * 4096,
                                  PAGODA_PTE_VALID);
    }
    for (uint64_t i = pages - 1; i > 0; i--) {
        uint64_t j = g_rand_int_range(rand, 0, i + 1), tmp = ptes[i];

        ptes[i] = ptes[j];
        ptes[j] = tmp;
    }
    for (uint64_t i = 0; i < pages; i += per_table) {
        pagoda_memwrite(vm->d, pagoda_vm_table(vm, va + i * 4096, 0, false),
                        ptes + i, per_table * sizeof(uint64_t));
    }
    g_rand_free(rand);
}

/* UPDATE_PAGE_TABLE: write the leaf entries of PTE_SPAN bytes, 512 per command. */
static double pte_rate(QPagoda *d, PagodaVM *vm, bool repeat)
{
    uint64_t count = PTE_SPAN / 4096, per_table = 512;
    g_autofree uint64_t *ptes = g_new(uint64_t, per_table);
    PagodaCmds c;
    double t;

    pagoda_cmds_init(&c);
    for (uint64_t i = 0; i < count; i += per_table) {
        uint64_t table = pagoda_vm_table(vm, VA_PTE + i * 4096, 0, false);

        for (uint64_t j = 0; j < per_table; j++) {
            ptes[j] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, ((i + j) * 4096) % SIZE,
                                      PAGODA_PTE_VALID);
        }
        pagoda_cmd_update_pt(&c, repeat ? PAGODA_UPT_REPEAT |
                             PAGODA_UPT_REPEAT_INCREMENT : 0, 0, PAGODA_PADDR(0, table),
                             0, per_table, ptes);
    }
    t = best_time(d, &c);
    pagoda_cmds_free(&c);
    return count / t;
}

/* @base: the host's rate for the same bytes (a PTE is 8 bytes of memcpy). */
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

static void row(const char *what, double rate, double base, const char *unit)
{
    if (base) {
        printf("  %-44s %10.0f %s  %5.0f%% of host\n", what, rate, unit,
               100 * rate / base);
    } else {
        printf("  %-44s %10.0f %s\n", what, rate, unit);
    }
}

int main(int argc, char **argv)
{
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPagoda d = { 0 };
    PagodaVM vm;
    double memcpy_rate, memset_rate, r4k, r64k, rscatter;

    qts = qtest_init("-machine pc -m 512M -device pagoda,addr=04.0");
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    bus = qpci_new_pc(qts, &alloc);
    dev = qpci_device_find(bus, QPCI_DEVFN(4, 0));
    g_assert(dev);
    d.dev = *dev;
    g_free(dev);
    pagoda_start(&d, &alloc);

    pagoda_vm_init(&vm, &d, CTX, 512);
    pagoda_vm_map(&vm, VA_SRC, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC), SIZE,
                  4096, 0);
    pagoda_vm_map(&vm, VA_DST, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST), SIZE,
                  4096, 0);
    pagoda_vm_map(&vm, VA_SRC_64K, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_SRC),
                  SIZE, 65536, 0);
    pagoda_vm_map(&vm, VA_DST_64K, PAGODA_PADDR(PAGODA_SEG_VRAM, VRAM_DST),
                  SIZE, 65536, 0);
    map_scattered(&vm, VA_SCATTER, VRAM_SRC);

    populate_vram(&d);
    memcpy_rate = host_rate(true);
    memset_rate = host_rate(false);
    r4k = vtransfer_rate(&d, VA_SRC, VA_DST, 0);
    r64k = vtransfer_rate(&d, VA_SRC_64K, VA_DST_64K, PAGODA_VIRTUAL_64K);
    rscatter = vtransfer_rate(&d, VA_SCATTER, VA_DST, 0);

    printf("Pagoda device benchmark: %u MiB per operation, best of %d, "
           "TLB flushed before each run\n", (unsigned)(SIZE / MiB), RUNS);
    printf("  %-44s %10.0f MiB/s\n", "host memcpy", memcpy_rate);
    printf("  %-44s %10.0f MiB/s\n", "host memset", memset_rate);
    row("virtual transfer, 4 KiB pages", r4k, memcpy_rate, "MiB/s");
    row("virtual transfer, 64 KiB pages", r64k, memcpy_rate, "MiB/s");
    row("virtual transfer, 4 KiB pages, scattered", rscatter, memcpy_rate,
        "MiB/s");
    row("virtual fill, 4 KiB pages", vfill_rate(&d, VA_DST), memset_rate,
        "MiB/s");
    row("physical fill, VRAM", fill_rate(&d), memset_rate, "MiB/s");
    row("update page table, inline entries", pte_rate(&d, &vm, false),
        memcpy_rate * MiB / sizeof(uint64_t), "PTE/s");
    row("update page table, repeat+increment", pte_rate(&d, &vm, true),
        memcpy_rate * MiB / sizeof(uint64_t), "PTE/s");
    printf("  64 KiB pages vs 4 KiB pages: %.2fx\n", r64k / r4k);
    printf("  TLB misses, 2nd pass over %u MiB of 4 KiB pages: %" PRIu64
           " (flush-all-when-full 1024-entry cache: %" PRIu64 " of %u)\n",
           (unsigned)(WORKING_SET / MiB), second_pass_misses(&d),
           flush_all_when_full_misses(), (unsigned)(WORKING_SET / 4096));

    qpci_free_pc(bus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
    return 0;
}
