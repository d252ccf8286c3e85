/*
 * QTest for the Pagoda GPU MMU: page-table walks at every level count, page
 * sizes, tables in every segment the capabilities allow, translation faults
 * and what they record, halting of faulting contexts, and the TLB (flushes,
 * root changes, counters, replacement).
 *
 * Page tables are built by the CPU (guest RAM, or VRAM through BAR2) with
 * PagodaVM, or by the paging engine where the CPU cannot reach. Translations
 * are driven through rings: the paging engine's VIRTUAL_TRANSFER and
 * VIRTUAL_FILL, and render ring entries in virtual mode whose command
 * buffers are themselves mapped at VAs. Results are compared byte for byte.
 * Linked adapters: a machine of three linked GPUs, the device under test
 * reaching the others' memory through PTE_ADAPTER.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pagoda.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"

#define PAGE            (4 * KiB)
#define PAGE64          (64 * KiB)
#define CTX_A           1
#define CTX_B           2

/* ---- Device geometry ------------------------------------------------------ */

typedef struct MmuConfig {
    const char *props;      /* device properties */
    uint32_t levels;
    uint32_t va_bits;
} MmuConfig;

static uint32_t level_reg(QPagoda *d, uint32_t level, uint32_t field)
{
    return pagoda_rd(d, PAGODA_REG_MMU_LEVEL(level) + field);
}

/* log2 of the VA range one entry at @level covers. */
static unsigned va_shift(const PagodaVM *vm, uint32_t level)
{
    unsigned shift = 12, l;

    for (l = 0; l < level; l++) {
        shift += vm->bits[l];
    }
    return shift;
}

/* Entries of a full root table. */
static uint32_t full_root(QPagoda *d)
{
    uint32_t top = pagoda_rd(d, PAGODA_REG_MMU_LEVELS) - 1;

    return 1u << level_reg(d, top, PAGODA_MMU_LEVEL_INDEX_BITS);
}

/* Index of @va in its table at @level. */
static uint64_t va_index(const PagodaVM *vm, uint64_t va, uint32_t level)
{
    return (va >> va_shift(vm, level)) & ((1ull << vm->bits[level]) - 1);
}

static uint64_t vram_size(QPagoda *d)
{
    return pagoda_rd64(d, PAGODA_REG_VRAM_SIZE_LO);
}

/* ---- Memory --------------------------------------------------------------- */

/* Pseudo-random bytes, a different sequence for every seed. */
static void make_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 0x9e3779b9u;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = x >> 24;
    }
}

/* Device memory (system memory or VRAM, a PAGODA_PADDR) seen by the CPU. */
static void mem_write(QPagoda *d, uint64_t paddr, const void *buf, size_t len)
{
    pagoda_memwrite(d, pagoda_cpu_addr(d, paddr), buf, len);
}

static void mem_read(QPagoda *d, uint64_t paddr, void *buf, size_t len)
{
    pagoda_memread(d, pagoda_cpu_addr(d, paddr), buf, len);
}

static uint32_t mem_readl(QPagoda *d, uint64_t paddr)
{
    uint32_t v;

    mem_read(d, paddr, &v, sizeof(v));
    return le32_to_cpu(v);
}

/* Write pattern @seed at @paddr; the host copy is returned (g_free it). */
static uint8_t *put_pattern(QPagoda *d, uint64_t paddr, size_t len,
                            uint32_t seed)
{
    uint8_t *buf = g_malloc(len);

    make_pattern(buf, len, seed);
    mem_write(d, paddr, buf, len);
    return buf;
}

static void expect_bytes(QPagoda *d, uint64_t paddr, const void *want,
                         size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);
    const uint8_t *w = want;
    size_t i;

    mem_read(d, paddr, got, len);
    if (memcmp(got, w, len)) {
        i = 0;
        while (got[i] == w[i]) {
            i++;
        }
        g_test_message("first difference at byte 0x%zx of 0x%zx at 0x%" PRIx64,
                       i, len, paddr);
        g_assert_cmphex(got[i], ==, w[i]);
    }
}

static void expect_pattern(QPagoda *d, uint64_t paddr, size_t len,
                           uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);

    make_pattern(want, len, seed);
    expect_bytes(d, paddr, want, len);
}

/* Zeroed guest RAM, 64 KiB aligned, as a PAGODA_PADDR. */
static uint64_t sys_alloc(QPagoda *d, uint64_t len)
{
    return PAGODA_PADDR(PAGODA_SEG_SYSTEM, pagoda_alloc(d, len, PAGE64));
}

static uint64_t vram(uint64_t off)
{
    return PAGODA_PADDR(PAGODA_SEG_VRAM, off);
}

/* A valid PTE for the page at PAGODA_PADDR @pa. */
static uint64_t pte_to(uint64_t pa, uint64_t flags)
{
    return PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa), PAGODA_PADDR_OFFSET(pa),
                           PAGODA_PTE_VALID | flags);
}

/* ---- Commands ------------------------------------------------------------- */

/* Run @c on the paging engine for context @ctx, wait, free it; the fence. */
static uint64_t paging_run(QPagoda *d, uint32_t ctx, PagodaCmds *c)
{
    uint64_t fence = pagoda_run(d, PAGODA_ENGINE_PAGING, c, ctx, 0);

    pagoda_cmds_free(c);
    return fence;
}

static uint64_t vcopy(QPagoda *d, uint32_t ctx, uint32_t flags, uint64_t src,
                      uint64_t dst, uint64_t size)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_vtransfer(&c, flags, src, dst, size);
    return paging_run(d, ctx, &c);
}

static uint64_t vfill(QPagoda *d, uint32_t ctx, uint32_t flags, uint64_t dst,
                      uint32_t pattern, uint64_t size)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_vfill(&c, flags, dst, pattern, size);
    return paging_run(d, ctx, &c);
}

static void flush_tlb(QPagoda *d, uint32_t flags, uint32_t ctx, uint64_t va,
                      uint64_t size)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_flush_tlb(&c, flags, ctx, va, size);
    paging_run(d, 0, &c);
}

/*
 * Put @c in fresh guest RAM mapped at @va of @vm with 4 KiB pages and
 * @pte_flags; returns its length. @va must not have been used before (the
 * TLB may still hold an older mapping).
 */
static uint32_t map_cmds(QPagoda *d, PagodaVM *vm, PagodaCmds *c, uint64_t va,
                         uint64_t pte_flags)
{
    uint32_t len = pagoda_cmds_bytes(c);
    uint64_t pa = pagoda_cmds_upload(d, c);

    pagoda_vm_map(vm, va, PAGODA_PADDR(PAGODA_SEG_SYSTEM, pa),
                  QEMU_ALIGN_UP(len, PAGE), PAGE, pte_flags);
    return len;
}

/* Queue @c as a virtual render entry of @vm's context, buffer at @va. */
static uint64_t render_submit(QPagoda *d, PagodaVM *vm, PagodaCmds *c,
                              uint64_t va)
{
    uint32_t len = map_cmds(d, vm, c, va, 0);

    pagoda_cmds_free(c);
    return pagoda_submit(d, PAGODA_ENGINE_RENDER, va, len, vm->ctx,
                         PAGODA_RING_FLAG_VIRTUAL);
}

static uint64_t render_run(QPagoda *d, PagodaVM *vm, PagodaCmds *c,
                           uint64_t va)
{
    uint64_t fence = render_submit(d, vm, c, va);

    g_assert_true(pagoda_wait_fence(d, PAGODA_ENGINE_RENDER, fence));
    return fence;
}

static uint64_t render_write(QPagoda *d, PagodaVM *vm, uint64_t cmd_va,
                             uint64_t dst, uint32_t value)
{
    PagodaCmds c;

    pagoda_cmds_init(&c);
    pagoda_cmd_write_imm(&c, dst, &value, 1);
    return render_run(d, vm, &c, cmd_va);
}

static uint64_t eng_fence(QPagoda *d, unsigned engine)
{
    return pagoda_rd64(d, PAGODA_REG_ENGINE(engine) + PAGODA_ENG_FENCE_LO);
}

/* ---- Faults and contexts -------------------------------------------------- */

static bool ctx_halted(QPagoda *d, uint32_t ctx)
{
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, ctx);
    return pagoda_rd(d, PAGODA_REG_CTX_STATUS) & PAGODA_CTX_STATUS_HALTED;
}

static void expect_no_fault(QPagoda *d)
{
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_LOST), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT, ==, 0);
}

/*
 * Expect exactly one queued fault with these fields, pop it, check that its
 * context is halted, and resume the context.
 */
static void expect_fault(QPagoda *d, uint32_t ctx, unsigned engine,
                         uint32_t code, uint64_t va, uint32_t level,
                         uint32_t access, uint64_t fence)
{
    /* a reset that hits a paging buffer is promoted to an adapter reset */
    uint32_t flags = (access == PAGODA_ACCESS_WRITE ? PAGODA_FAULT_FLAG_WRITE : 0) |
                     (engine == PAGODA_ENGINE_PAGING ?
                      PAGODA_FAULT_FLAG_ADAPTER_RESET_REQUIRED : 0);
    PagodaFaultInfo f;

    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT, !=, 0);
    g_assert_true(pagoda_pop_fault(d, &f));
    g_assert_cmpuint(f.code, ==, code);
    g_assert_cmpuint(f.context, ==, ctx);
    g_assert_cmpuint(f.engine, ==, engine);
    g_assert_cmphex(f.va, ==, va);
    g_assert_cmpuint(f.level, ==, level);
    g_assert_cmpuint(f.access, ==, access);
    g_assert_cmpuint(f.fence, ==, fence);
    g_assert_cmphex(f.flags, ==, flags);
    expect_no_fault(d);

    g_assert_true(ctx_halted(d, ctx));
    pagoda_resume_context(d, ctx);
    g_assert_false(ctx_halted(d, ctx));
}

/* ---- TLB counters --------------------------------------------------------- */

typedef struct TlbCount {
    uint64_t hits, misses;
} TlbCount;

static void tlb_clear_counters(QPagoda *d)
{
    pagoda_wr(d, PAGODA_REG_TLB_HITS_LO, 0);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_TLB_HITS_LO), ==, 0);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_TLB_MISSES_LO), ==, 0);
}

static TlbCount tlb_count(QPagoda *d)
{
    return (TlbCount) {
        .hits = pagoda_rd64(d, PAGODA_REG_TLB_HITS_LO),
        .misses = pagoda_rd64(d, PAGODA_REG_TLB_MISSES_LO),
    };
}

/* ======================================================================== */
/* Capabilities and walks                                                    */
/* ======================================================================== */

/* The capability registers describe the configured page-table geometry. */
static void test_caps(void *obj, void *arg, QGuestAllocator *alloc)
{
    const MmuConfig *cfg = arg;
    QPagoda *d = obj;
    uint32_t caps, levels, l, covered = 12;
    const uint32_t needed = PAGODA_MMU_CAPS_READ_ONLY | PAGODA_MMU_CAPS_NO_EXECUTE |
                            PAGODA_MMU_CAPS_ZERO | PAGODA_MMU_CAPS_LARGE_PAGES |
                            PAGODA_MMU_CAPS_64K_LEAF;

    pagoda_start(d, alloc);
    caps = pagoda_rd(d, PAGODA_REG_MMU_CAPS);
    g_assert_cmphex(caps & needed, ==, needed);
    levels = pagoda_rd(d, PAGODA_REG_MMU_LEVELS);
    g_assert_cmpuint(levels, ==, cfg->levels);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_MMU_VA_BITS), ==, cfg->va_bits);

    for (l = 0; l < levels; l++) {
        uint32_t bits = level_reg(d, l, PAGODA_MMU_LEVEL_INDEX_BITS);
        uint32_t segs = level_reg(d, l, PAGODA_MMU_LEVEL_SEGMENTS);
        uint32_t align = level_reg(d, l, PAGODA_MMU_LEVEL_ALIGN);

        if (l < levels - 1) {
            /* fixed tables: one 4 KiB page of 512 entries */
            g_assert_cmpuint(bits, ==, 9);
        } else {
            /* the root takes the VA bits the lower levels leave */
            g_assert_cmpuint(bits, ==, cfg->va_bits - covered);
        }
        covered += bits;
        g_assert_cmpuint(level_reg(d, l, PAGODA_MMU_LEVEL_TABLE_SIZE), ==,
                         (1u << bits) * 8);
        /* tables may live in system memory and in CPU-visible VRAM */
        g_assert_cmphex(segs & PAGODA_BIT(PAGODA_SEG_SYSTEM), !=, 0);
        g_assert_cmphex(segs & PAGODA_BIT(PAGODA_SEG_VRAM), !=, 0);
        g_assert_cmphex(segs >> PAGODA_NUM_SEGMENTS, ==, 0);
        /* a PTE holds a 4 KiB frame: tables are at least 4 KiB aligned */
        g_assert_cmpuint(align, >=, PAGE);
        g_assert_true(is_power_of_2(align));
    }
    g_assert_cmpuint(covered, ==, cfg->va_bits);
    for (; l < PAGODA_MMU_MAX_LEVELS; l++) {
        g_assert_cmpuint(level_reg(d, l, PAGODA_MMU_LEVEL_INDEX_BITS), ==, 0);
        g_assert_cmpuint(level_reg(d, l, PAGODA_MMU_LEVEL_TABLE_SIZE), ==, 0);
        g_assert_cmpuint(level_reg(d, l, PAGODA_MMU_LEVEL_SEGMENTS), ==, 0);
        g_assert_cmpuint(level_reg(d, l, PAGODA_MMU_LEVEL_ALIGN), ==, 0);
    }
    /* a 64 KiB leaf table covers what a level-1 entry covers */
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_MMU_LEAF64_ENTRIES), ==,
                     (PAGE << level_reg(d, 0, PAGODA_MMU_LEVEL_INDEX_BITS)) /
                     PAGE64);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_ENTRIES), >=, 4096);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, 0);
}

/*
 * Walk through a full root at the highest indices and across the boundary
 * of every level, with the source pages mapped in reverse order; once with
 * the paging engine and once with a virtual render buffer.
 */
static void test_walk(void *obj, void *arg, QGuestAllocator *alloc)
{
    const MmuConfig *cfg = arg;
    QPagoda *d = obj;
    PagodaVM vm;
    uint32_t top = cfg->levels - 1, entries, l, i;
    uint64_t edge, src, dst = 0, cmd_va, s_pa, d_pa;
    const uint64_t size = 4 * PAGE, soff = 0x321, doff = 0x1234;
    const uint64_t n = size - doff - 8;
    g_autofree uint8_t *s_data = NULL;
    g_autofree uint8_t *view = g_malloc(size);
    g_autofree uint8_t *want = g_malloc0(size);
    PagodaCmds c;

    pagoda_start(d, alloc);
    entries = 1u << level_reg(d, top, PAGODA_MMU_LEVEL_INDEX_BITS);
    pagoda_vm_init(&vm, d, CTX_A, entries);
    g_assert_cmpuint(vm.levels, ==, cfg->levels);

    /*
     * Two pages at the end of the next-to-last root entry and two at the
     * start of the last one: the index goes 511 -> 0 at every lower level.
     */
    edge = (uint64_t)(entries - 1) << va_shift(&vm, top);
    src = edge - 2 * PAGE;
    /* destination: an arbitrary index at every level */
    for (l = 0; l < cfg->levels; l++) {
        dst |= (uint64_t)((0x15a + 0x67 * l) & ((1u << vm.bits[l]) - 1) &
                          (l == top ? entries - 1 : ~0u)) << va_shift(&vm, l);
    }
    g_assert_cmphex(dst >> cfg->va_bits, ==, 0);
    g_assert_cmphex(edge >> cfg->va_bits, ==, 0);

    s_pa = sys_alloc(d, size);
    d_pa = sys_alloc(d, size);
    s_data = put_pattern(d, s_pa, size, 1);
    for (i = 0; i < 4; i++) {
        pagoda_vm_map(&vm, src + i * PAGE, s_pa + (3 - i) * PAGE, PAGE, PAGE, 0);
        memcpy(view + i * PAGE, s_data + (3 - i) * PAGE, PAGE);
    }
    /* CACHE_COHERENT is accepted and changes nothing */
    pagoda_vm_map(&vm, dst, d_pa, size, PAGE, PAGODA_PTE_CACHE_COHERENT);

    vcopy(d, CTX_A, 0, src, dst, size);
    expect_bytes(d, d_pa, view, size);

    /* unaligned on both sides, through a render buffer mapped at a VA */
    pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, size);
    memcpy(want + doff, view + soff, n);
    cmd_va = dst + 16 * PAGE;
    pagoda_cmds_init(&c);
    pagoda_cmd_copy(&c, src + soff, dst + doff, n);
    render_run(d, &vm, &c, cmd_va);
    expect_bytes(d, d_pa, want, size);
    expect_no_fault(d);
}


/*
 * A resizable 2-level root: N entries work and index N faults ROOT_RANGE;
 * grown (old entries copied with COPY_PTES) the new index works; shrunk,
 * the cut index faults again.
 */
static void test_root_range(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint32_t n = 3;
    PagodaVM vm;
    uint64_t span, s_pa, d_pa, dst, va, fence, old_root;
    g_autofree uint8_t *s_data = NULL;
    uint32_t r;
    PagodaCmds c;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, n);
    g_assert_cmpuint(vm.levels, ==, 2);
    span = 1ull << va_shift(&vm, 1);
    s_pa = sys_alloc(d, (n + 2) * PAGE);
    d_pa = sys_alloc(d, PAGE);
    s_data = put_pattern(d, s_pa, (n + 2) * PAGE, 2);

    /* the first page of every root entry, and the last page under the root */
    for (r = 0; r < n; r++) {
        pagoda_vm_map(&vm, r * span + PAGE, s_pa + r * PAGE, PAGE, PAGE, 0);
    }
    pagoda_vm_map(&vm, n * span - PAGE, s_pa + n * PAGE, PAGE, PAGE, 0);
    dst = 0;
    pagoda_vm_map(&vm, dst, d_pa, PAGE, PAGE, 0);
    for (r = 0; r < n; r++) {
        vcopy(d, CTX_A, 0, r * span + PAGE, dst, PAGE);
        expect_bytes(d, d_pa, s_data + r * PAGE, PAGE);
    }
    vcopy(d, CTX_A, 0, n * span - PAGE, dst, PAGE);
    expect_bytes(d, d_pa, s_data + n * PAGE, PAGE);
    expect_no_fault(d);

    /* root index N, read */
    va = n * span + 0x1238;
    fence = vcopy(d, CTX_A, 0, va, dst, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, va, 1,
                 PAGODA_ACCESS_READ, fence);
    /* the highest index the VA bits allow, written */
    va = (((1ull << vm.bits[1]) - 1) << va_shift(&vm, 1)) + 0x40;
    fence = vfill(d, CTX_A, 0, va, 0x5a5a5a5a, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, va, 1,
                 PAGODA_ACCESS_WRITE, fence);

    /* grow to N + 1 entries: the paging engine copies the old ones */
    old_root = vm.root;
    vm.root = sys_alloc(d, PAGE);
    vm.root_entries = n + 1;
    pagoda_cmds_init(&c);
    pagoda_cmd_copy_ptes(&c, old_root, 0, vm.root, 0, n);
    paging_run(d, 0, &c);
    pagoda_vm_map(&vm, n * span + PAGE, s_pa + (n + 1) * PAGE, PAGE, PAGE, 0);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, CTX_A);
    pagoda_wr64(d, PAGODA_REG_CTX_ROOT_LO, vm.root);
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, n + 1);
    vcopy(d, CTX_A, 0, n * span + PAGE, dst, PAGE);
    expect_bytes(d, d_pa, s_data + (n + 1) * PAGE, PAGE);
    vcopy(d, CTX_A, 0, PAGE, dst, PAGE);
    expect_bytes(d, d_pa, s_data, PAGE);
    expect_no_fault(d);

    /* more entries than the root level has are refused: no address space */
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, (1u << vm.bits[1]) + 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_ROOT_ENTRIES), ==, 0);
    fence = vcopy(d, CTX_A, 0, PAGE, dst, PAGE);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, PAGE, 1,
                 PAGODA_ACCESS_READ, fence);

    /* shrink to N - 1 entries */
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, n - 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_ROOT_ENTRIES), ==, n - 1);
    va = (n - 1) * span + PAGE;
    fence = vcopy(d, CTX_A, 0, va, dst, PAGE);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, va, 1,
                 PAGODA_ACCESS_READ, fence);
}


/*
 * A VA at or above 1 << VA_BITS faults ROOT_RANGE at the top level even
 * though the same VA without its high bit is mapped; so does any VA of a
 * context without a root (0 entries).
 */
static void test_va_bits(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    uint32_t top, va_bits;
    uint64_t va, fence, s_pa;

    pagoda_start(d, alloc);
    top = pagoda_rd(d, PAGODA_REG_MMU_LEVELS) - 1;
    va_bits = pagoda_rd(d, PAGODA_REG_MMU_VA_BITS);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    s_pa = sys_alloc(d, 2 * PAGE);
    g_free(put_pattern(d, s_pa, 2 * PAGE, 3));
    pagoda_vm_map(&vm, 0, s_pa, 2 * PAGE, PAGE, 0);

    va = (1ull << va_bits) | 0x1010;
    fence = vcopy(d, CTX_A, 0, va, 0, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, va, top,
                 PAGODA_ACCESS_READ, fence);
    /* a write there faults too, and leaves the alias alone */
    fence = vfill(d, CTX_A, 0, va, 0, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, va, top,
                 PAGODA_ACCESS_WRITE, fence);
    expect_pattern(d, s_pa, 2 * PAGE, 3);

    fence = vfill(d, CTX_B, 0, 0, 0, 8);
    expect_fault(d, CTX_B, PAGODA_ENGINE_PAGING, PAGODA_FAULT_ROOT_RANGE, 0, top,
                 PAGODA_ACCESS_WRITE, fence);
}

/* ======================================================================== */
/* Page sizes and table placement                                            */
/* ======================================================================== */

/*
 * 64 KiB pages, both as 16 consecutive 4 KiB entries and as single entries
 * of 64 KiB leaf tables (level-1 PTE with LEAF64), read and written. With
 * VIRTUAL_64K, 64 KiB of VA may also be 16 scattered 4 KiB pages: the flag
 * asks for alignment only.
 */
static void test_pages_64k(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t v4 = 1 * GiB + 3 * PAGE64;
    const uint64_t v64 = 2 * GiB + 2 * MiB - 2 * PAGE64;  /* crosses a level-1 entry */
    const uint64_t vd = 3 * GiB;
    const uint64_t o4 = 16 * MiB, o64 = 32 * MiB;
    static const unsigned perm[3] = { 2, 0, 1 };
    const uint64_t size = 3 * PAGE64;
    g_autofree uint8_t *want = g_malloc0(size);
    g_autofree uint8_t *view = g_malloc(size);
    uint8_t *vdata;
    uint64_t d_pa;
    unsigned i;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, size);
    pagoda_vm_map(&vm, vd, d_pa, size, PAGE, 0);

    /* two 64 KiB pages of 4 KiB entries, swapped */
    vdata = put_pattern(d, vram(o4), 2 * PAGE64, 4);
    for (i = 0; i < 2; i++) {
        pagoda_vm_map(&vm, v4 + i * PAGE64, vram(o4 + (1 - i) * PAGE64), PAGE64,
                      PAGE, 0);
        memcpy(want + i * PAGE64, vdata + (1 - i) * PAGE64, PAGE64);
    }
    g_free(vdata);
    vcopy(d, CTX_A, PAGODA_VIRTUAL_64K, v4, vd, 2 * PAGE64);
    expect_bytes(d, d_pa, want, 2 * PAGE64);

    /* three 64 KiB pages in two 64 KiB leaf tables, permuted */
    vdata = put_pattern(d, vram(o64), size, 5);
    for (i = 0; i < 3; i++) {
        pagoda_vm_map(&vm, v64 + i * PAGE64, vram(o64 + perm[i] * PAGE64),
                      PAGE64, PAGE64, 0);
        memcpy(view + i * PAGE64, vdata + perm[i] * PAGE64, PAGE64);
    }
    g_free(vdata);
    g_assert_true(pagoda_vm_get_pte(&vm, v64, 1) & PAGODA_PTE_LEAF64);
    g_assert_true(pagoda_vm_get_pte(&vm, v64 + size - PAGE64, 1) &
                  PAGODA_PTE_LEAF64);
    pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, size);
    memset(want, 0, size);
    memcpy(want + 0x80, view + 0x100, size - 0x200);
    vcopy(d, CTX_A, 0, v64 + 0x100, vd + 0x80, size - 0x200);
    expect_bytes(d, d_pa, want, size);

    /* written through them: every byte of the three VRAM pages */
    vfill(d, CTX_A, PAGODA_VIRTUAL_64K, v64, 0xc0ffee11, size);
    for (i = 0; i < size; i += 4) {
        stl_le_p(want + i, 0xc0ffee11);
    }
    expect_bytes(d, vram(o64), want, size);
    expect_no_fault(d);

    /* 16 scattered 4 KiB pages, in reverse order, under VIRTUAL_64K */
    {
        const uint64_t vs = 4 * GiB;
        uint64_t pa[PAGE64 / PAGE];

        for (i = 0; i < ARRAY_SIZE(pa); i++) {
            pa[i] = sys_alloc(d, PAGE);     /* 64 KiB apart */
        }
        for (i = 0; i < ARRAY_SIZE(pa); i++) {
            pagoda_vm_map(&vm, vs + i * PAGE, pa[ARRAY_SIZE(pa) - 1 - i],
                          PAGE, PAGE, 0);
        }
        vfill(d, CTX_A, PAGODA_VIRTUAL_64K, vs, 0x600dcafe, PAGE64);
        expect_no_fault(d);
        for (i = 0; i < PAGE; i += 4) {
            stl_le_p(want + i, 0x600dcafe);
        }
        for (i = 0; i < ARRAY_SIZE(pa); i++) {
            expect_bytes(d, pa[i], want, PAGE);
        }
    }
}

/*
 * Large pages: a 2 MiB page (level 1) onto VRAM next to 4 KiB pages, and a
 * 1 GiB page (level 2) identity-mapping system memory.
 */
static void test_large_pages(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t l2m = 3 * GiB + 4 * MiB, g1 = 5 * GiB, vd = 7 * GiB;
    const uint64_t o2m = 6 * MiB, n = 3 * PAGE + 0x100;
    g_autofree uint8_t *want = g_malloc(PAGE);
    g_autofree uint8_t *mid = NULL, *end = NULL, *next = NULL, *s_data = NULL;
    uint64_t d_pa, x_pa, s_pa, t_pa;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);

    pagoda_vm_set_pte(&vm, l2m, 1, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, o2m,
                                                   PAGODA_PTE_VALID |
                                                   PAGODA_PTE_LARGE_PAGE));
    x_pa = sys_alloc(d, PAGE);
    next = put_pattern(d, x_pa, PAGE, 6);
    pagoda_vm_map(&vm, l2m + 2 * MiB, x_pa, PAGE, PAGE, 0);
    mid = put_pattern(d, vram(o2m + 0xff800), PAGE, 7);
    end = put_pattern(d, vram(o2m + 2 * MiB - 0x800), 0x800, 8);

    vcopy(d, CTX_A, 0, l2m + 0xff800, vd, PAGE);
    expect_bytes(d, d_pa, mid, PAGE);
    /* from the end of the large page into the 4 KiB page after it */
    vcopy(d, CTX_A, 0, l2m + 2 * MiB - 0x800, vd, PAGE);
    memcpy(want, end, 0x800);
    memcpy(want + 0x800, next, 0x800);
    expect_bytes(d, d_pa, want, PAGE);

    pagoda_vm_set_pte(&vm, g1, 2, PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0,
                                                  PAGODA_PTE_VALID |
                                                  PAGODA_PTE_LARGE_PAGE));
    s_pa = sys_alloc(d, n);
    t_pa = sys_alloc(d, n);
    s_data = put_pattern(d, s_pa, n, 9);
    vcopy(d, CTX_A, 0, g1 + s_pa + 0x10, g1 + t_pa + 0x10, n - 0x20);
    memset(s_data, 0, 0x10);
    memset(s_data + n - 0x10, 0, 0x10);
    expect_bytes(d, t_pa, s_data, n);
    expect_no_fault(d);
}

/*
 * Tables in VRAM, written through BAR2: a whole hierarchy there (with a
 * 64 KiB leaf table), then a walk alternating system memory and VRAM.
 */
static void test_tables_vram(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm, mixed;
    const uint64_t va = 9 * GiB + 2 * MiB - PAGE, vb = 10 * GiB, vc = 11 * GiB;
    const uint64_t ve = 12 * GiB + 5 * PAGE;
    g_autofree uint8_t *s_data = NULL, *v_data = NULL;
    g_autofree uint8_t *want = g_malloc(3 * PAGE);
    uint64_t s_pa, d_pa;
    uint32_t l;
    int i;

    pagoda_start(d, alloc);
    pagoda_vm_init_vram(&vm, d, CTX_A, full_root(d), 64 * MiB);
    g_assert_cmpuint(PAGODA_PADDR_SEG(vm.root), ==, PAGODA_SEG_VRAM);
    s_pa = sys_alloc(d, 3 * PAGE);
    d_pa = sys_alloc(d, 2 * PAGE64);
    s_data = put_pattern(d, s_pa, 3 * PAGE, 10);
    for (i = 0; i < 3; i++) {
        pagoda_vm_map(&vm, va + i * PAGE, s_pa + (2 - i) * PAGE, PAGE, PAGE, 0);
        memcpy(want + i * PAGE, s_data + (2 - i) * PAGE, PAGE);
    }
    v_data = put_pattern(d, vram(80 * MiB), 2 * PAGE64, 11);
    pagoda_vm_map(&vm, vb, vram(80 * MiB), 2 * PAGE64, PAGE64, 0);
    pagoda_vm_map(&vm, vc, d_pa, 2 * PAGE64, PAGE, 0);
    for (l = vm.levels - 1; l > 0; l--) {
        g_assert_cmpuint(PAGODA_PTE_SEGMENT(pagoda_vm_get_pte(&vm, va, l)), ==,
                         PAGODA_SEG_VRAM);
        g_assert_cmpuint(PAGODA_PTE_SEGMENT(pagoda_vm_get_pte(&vm, vb, l)), ==,
                         PAGODA_SEG_VRAM);
    }

    vcopy(d, CTX_A, 0, va, vc, 3 * PAGE);
    expect_bytes(d, d_pa, want, 3 * PAGE);
    vcopy(d, CTX_A, PAGODA_VIRTUAL_64K, vb, vc, 2 * PAGE64);
    expect_bytes(d, d_pa, v_data, 2 * PAGE64);

    /* root in system memory, then VRAM, system memory, VRAM... */
    pagoda_vm_init(&mixed, d, CTX_B, full_root(d));
    mixed.vram_next = 96 * MiB;
    for (l = mixed.levels - 1; l-- > 0;) {
        mixed.table_seg = (mixed.levels - 1 - l) % 2 ? PAGODA_SEG_VRAM
                                                     : PAGODA_SEG_SYSTEM;
        pagoda_vm_table(&mixed, ve, l, false);
    }
    pagoda_vm_map(&mixed, ve, s_pa, 3 * PAGE, PAGE, 0);
    pagoda_vm_map(&mixed, ve + 16 * PAGE, d_pa, 3 * PAGE, PAGE, 0);
    for (l = mixed.levels - 1; l > 0; l--) {
        g_assert_cmpuint(PAGODA_PTE_SEGMENT(pagoda_vm_get_pte(&mixed, ve, l)), ==,
                         (mixed.levels - l) % 2 ? PAGODA_SEG_VRAM
                                                : PAGODA_SEG_SYSTEM);
    }
    vcopy(d, CTX_B, 0, ve, ve + 16 * PAGE, 3 * PAGE);
    expect_bytes(d, d_pa, s_data, 3 * PAGE);
    expect_no_fault(d);
}

/*
 * Tables in every segment the capabilities allow at every level, built by
 * the paging engine (UPDATE_PAGE_TABLE): that also reaches VRAM the CPU
 * cannot see.
 */
static void test_tables_any_segment(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM geo;
    const uint64_t va = 13 * GiB + 7 * MiB + 5 * PAGE;
    g_autofree uint8_t *s_data = NULL;
    uint32_t segs = ~0u, seg, l, tested = 0;
    uint64_t s_pa, d_pa;

    pagoda_start(d, alloc);
    pagoda_vm_init(&geo, d, 0, full_root(d));   /* geometry only */
    for (l = 0; l < geo.levels; l++) {
        segs &= level_reg(d, l, PAGODA_MMU_LEVEL_SEGMENTS);
    }
    s_pa = sys_alloc(d, 2 * PAGE);
    d_pa = sys_alloc(d, 2 * PAGE);
    s_data = put_pattern(d, s_pa, 2 * PAGE, 12);

    for (seg = 0; seg < PAGODA_NUM_SEGMENTS; seg++) {
        uint32_t kind = pagoda_rd(d, PAGODA_REG_SEG(seg) + PAGODA_SEG_KIND);
        uint64_t base, table[PAGODA_MMU_MAX_LEVELS], pte, zero = 0, leaf[4];
        uint32_t ctx = 8 + seg;
        PagodaCmds c;

        if (!(segs & PAGODA_BIT(seg))) {
            continue;
        }
        if (kind == PAGODA_SEG_KIND_APERTURE) {
            g_test_message("segment %u: tables in the aperture not covered", seg);
            continue;
        }
        base = kind == PAGODA_SEG_KIND_SYSTEM ? 0 :
               pagoda_rd64(d, PAGODA_REG_SEG(seg) + PAGODA_SEG_SIZE_LO) / 2;
        pagoda_cmds_init(&c);
        for (l = 0; l < geo.levels; l++) {
            table[l] = kind == PAGODA_SEG_KIND_SYSTEM ?
                       sys_alloc(d, (8ull << geo.bits[l])) :
                       PAGODA_PADDR(seg, base + l * (8ull << geo.bits[l]));
            pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, l, table[l], 0,
                                 1u << geo.bits[l], &zero);
        }
        for (l = geo.levels - 1; l > 0; l--) {
            pte = PAGODA_PTE_MAKE(seg, PAGODA_PADDR_OFFSET(table[l - 1]),
                                  PAGODA_PTE_VALID);
            pagoda_cmd_update_pt(&c, 0, l, table[l], va_index(&geo, va, l), 1,
                                 &pte);
        }
        for (l = 0; l < 4; l++) {
            uint64_t pa = (l < 2 ? s_pa : d_pa) + (l % 2) * PAGE;

            leaf[l] = PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, pa, PAGODA_PTE_VALID);
        }
        pagoda_cmd_update_pt(&c, 0, 0, table[0], va_index(&geo, va, 0), 4, leaf);
        paging_run(d, 0, &c);

        pagoda_wr(d, PAGODA_REG_CTX_SELECT, ctx);
        pagoda_wr64(d, PAGODA_REG_CTX_ROOT_LO, table[geo.levels - 1]);
        pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, full_root(d));
        pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, 2 * PAGE);
        vcopy(d, ctx, 0, va, va + 2 * PAGE, 2 * PAGE);
        expect_bytes(d, d_pa, s_data, 2 * PAGE);
        expect_no_fault(d);
        tested |= PAGODA_BIT(seg);
    }
    g_assert_cmphex(tested & PAGODA_BIT(PAGODA_SEG_SYSTEM), !=, 0);
    g_assert_cmphex(tested & PAGODA_BIT(PAGODA_SEG_VRAM), !=, 0);
}

/* ======================================================================== */
/* Faults                                                                    */
/* ======================================================================== */

/* Lowest bit of a mask. */
static uint64_t low_bit(uint64_t mask)
{
    return mask & (~mask + 1);
}

/*
 * Invalid leaf entries: one without VALID in the middle of a transfer (the
 * VA of the first byte it stops at is recorded, nothing goes through the
 * entry), valid ones with reserved or adapter bits set, and a 2 MiB or
 * 64 KiB page whose address is not aligned to its size (at the level of
 * its entry).
 */
static void test_fault_invalid_leaf(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t vs = 20 * GiB, vd = 21 * GiB, vr = 22 * GiB;
    const uint64_t bad_bits[] = {
        low_bit(PAGODA_PTE_RESERVED_MASK),
        low_bit(PAGODA_PTE_ADAPTER_MASK),
    };
    g_autofree uint8_t *s_data = NULL;
    g_autofree uint8_t *zero = g_malloc0(PAGE);
    uint64_t s_pa, d_pa, fence, va;
    unsigned i;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    s_pa = sys_alloc(d, 3 * PAGE);
    d_pa = sys_alloc(d, 3 * PAGE);
    s_data = put_pattern(d, s_pa, 3 * PAGE, 20);
    pagoda_vm_map(&vm, vs, s_pa, 3 * PAGE, PAGE, 0);
    pagoda_vm_map(&vm, vd, d_pa, 2 * PAGE, PAGE, 0);
    /* an address, but no VALID */
    pagoda_vm_set_pte(&vm, vd + 2 * PAGE, 0,
                      PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, d_pa + 2 * PAGE, 0));

    fence = vcopy(d, CTX_A, 0, vs, vd, 3 * PAGE);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE,
                 vd + 2 * PAGE, 0, PAGODA_ACCESS_WRITE, fence);
    expect_bytes(d, d_pa + 2 * PAGE, zero, PAGE);

    for (i = 0; i < ARRAY_SIZE(bad_bits); i++) {
        va = vr + i * PAGE;
        pagoda_vm_set_pte(&vm, va, 0, PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, s_pa,
                                                      PAGODA_PTE_VALID |
                                                      bad_bits[i]));
        fence = vcopy(d, CTX_A, 0, va + 0x10, vd, 16);
        expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE,
                     va + 0x10, 0, PAGODA_ACCESS_READ, fence);
    }

    va = 23 * GiB;
    pagoda_vm_set_pte(&vm, va, 1, pte_to(vram(6 * MiB + PAGE64),
                                         PAGODA_PTE_LARGE_PAGE));
    fence = vcopy(d, CTX_A, 0, va + 0x40, vd, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE,
                 va + 0x40, 1, PAGODA_ACCESS_READ, fence);
    va = 24 * GiB;
    pagoda_vm_map(&vm, va, vram(32 * MiB), 2 * PAGE64, PAGE64, 0);
    g_assert_true(pagoda_vm_get_pte(&vm, va, 1) & PAGODA_PTE_LEAF64);
    pagoda_vm_set_pte(&vm, va + PAGE64, 0, pte_to(vram(32 * MiB + PAGE), 0));
    fence = vfill(d, CTX_A, 0, va + PAGE64 + 0x20, 0, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE,
                 va + PAGE64 + 0x20, 0, PAGODA_ACCESS_WRITE, fence);

    /* resumed, the context runs again */
    vcopy(d, CTX_A, 0, vs, vd, 2 * PAGE);
    expect_bytes(d, d_pa, s_data, 2 * PAGE);
    expect_no_fault(d);
}

/*
 * An invalid entry at each upper level. The entries point to a table that
 * maps everything validly, so only VALID stands between them and success.
 */
static void test_fault_invalid_upper(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    g_autofree uint64_t *junk = g_new(uint64_t, 512);
    uint64_t junk_pa, d_pa, va, fence;
    uint32_t top, l, access;
    unsigned i;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    top = vm.levels - 1;
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, 0, d_pa, PAGE, PAGE, 0);
    junk_pa = sys_alloc(d, PAGE);
    for (i = 0; i < 512; i++) {
        junk[i] = cpu_to_le64(PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, junk_pa,
                                              PAGODA_PTE_VALID));
    }
    mem_write(d, junk_pa, junk, 512 * sizeof(*junk));

    for (l = top; l > 0; l--) {
        va = ((uint64_t)(l + 4) << va_shift(&vm, top)) + 0x123678;
        pagoda_vm_set_pte(&vm, va, l,
                          PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, junk_pa, 0));
        if (l % 2) {
            access = PAGODA_ACCESS_WRITE;
            fence = vfill(d, CTX_A, 0, va, 0x77777777, 8);
        } else {
            access = PAGODA_ACCESS_READ;
            fence = vcopy(d, CTX_A, 0, va, 0, 8);
        }
        expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE,
                     va, l, access, fence);
    }
}

/*
 * Writes through read-only entries fault, on the paging engine (4 KiB page)
 * and on the render engine (2 MiB page); reads through them work.
 * READ_ONLY on the entries above a page does not apply to it.
 */
static void test_fault_read_only(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t vr = 30 * GiB, vw = 31 * GiB, l2m = 32 * GiB + 2 * MiB;
    const uint64_t cmd = 33 * GiB, o2m = 8 * MiB, vu = 34 * GiB;
    g_autofree uint8_t *p_data = NULL, *v_data = NULL;
    uint64_t p_pa, w_pa, u_pa, fence;
    PagodaCmds c;
    uint32_t l;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    p_pa = sys_alloc(d, PAGE);
    w_pa = sys_alloc(d, PAGE);
    u_pa = sys_alloc(d, PAGE);
    p_data = put_pattern(d, p_pa, PAGE, 30);
    pagoda_vm_map(&vm, vr, p_pa, PAGE, PAGE, PAGODA_PTE_READ_ONLY);
    pagoda_vm_map(&vm, vw, w_pa, PAGE, PAGE, 0);
    pagoda_vm_map(&vm, vu, u_pa, PAGE, PAGE, 0);

    vcopy(d, CTX_A, 0, vr, vw, PAGE);
    expect_bytes(d, w_pa, p_data, PAGE);
    expect_no_fault(d);
    fence = vfill(d, CTX_A, 0, vr + 0x20, 0xdeadbeef, 64);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_READ_ONLY,
                 vr + 0x20, 0, PAGODA_ACCESS_WRITE, fence);
    expect_bytes(d, p_pa, p_data, PAGE);

    pagoda_vm_set_pte(&vm, l2m, 1, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, o2m,
                                                   PAGODA_PTE_VALID |
                                                   PAGODA_PTE_LARGE_PAGE |
                                                   PAGODA_PTE_READ_ONLY));
    v_data = put_pattern(d, vram(o2m + 0x1000), PAGE, 31);
    fence = render_write(d, &vm, cmd, l2m + 0x1004, 0x12345678);
    expect_fault(d, CTX_A, PAGODA_ENGINE_RENDER, PAGODA_FAULT_READ_ONLY,
                 l2m + 0x1004, 1, PAGODA_ACCESS_WRITE, fence);
    expect_bytes(d, vram(o2m + 0x1000), v_data, PAGE);

    pagoda_cmds_init(&c);
    pagoda_cmd_copy(&c, l2m + 0x1000, vw, PAGE);
    render_run(d, &vm, &c, cmd + 16 * PAGE);
    expect_bytes(d, w_pa, v_data, PAGE);
    expect_no_fault(d);

    for (l = 1; l < vm.levels; l++) {
        pagoda_vm_set_pte(&vm, vu, l, pagoda_vm_get_pte(&vm, vu, l) |
                                      PAGODA_PTE_READ_ONLY);
    }
    vfill(d, CTX_A, 0, vu, 0x11223344, 8);
    expect_no_fault(d);
    g_assert_cmphex(mem_readl(d, u_pa + 4), ==, 0x11223344);
}

/* Run @len bytes of commands already mapped at @va of @vm; the fence. */
static uint64_t render_run_at(QPagoda *d, PagodaVM *vm, uint64_t va,
                              uint32_t len)
{
    uint64_t fence = pagoda_submit(d, PAGODA_ENGINE_RENDER, va, len, vm->ctx,
                                   PAGODA_RING_FLAG_VIRTUAL);

    g_assert_true(pagoda_wait_fence(d, PAGODA_ENGINE_RENDER, fence));
    return fence;
}

/*
 * Command fetch through no-execute entries faults: a whole buffer (even
 * after it was read as data, which is allowed), the second page of a
 * buffer whose first page ran, a command straddling into a no-execute page
 * (the VA recorded is the first byte that could not be fetched), and the
 * target of a JUMP. NO_EXECUTE on the entries above a buffer does not
 * apply to it.
 */
static void test_fault_no_execute(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t vt = 40 * GiB, cmd_x = 41 * GiB, cmd_nx = 42 * GiB;
    const uint64_t cmd_mixed = 43 * GiB, cmd_copy = 44 * GiB;
    const uint64_t cmd_straddle = 45 * GiB, cmd_jump = 46 * GiB;
    const uint64_t cmd_target = 47 * GiB, cmd_up = 48 * GiB;
    uint64_t t_pa, fence, pte;
    uint32_t len, value, l;
    PagodaCmds c;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    t_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vt, t_pa, PAGE, PAGE, 0);

    render_write(d, &vm, cmd_x, vt, 0x11111111);
    g_assert_cmphex(mem_readl(d, t_pa), ==, 0x11111111);
    expect_no_fault(d);

    pagoda_cmds_init(&c);
    value = 0x22222222;
    pagoda_cmd_write_imm(&c, vt, &value, 1);
    len = map_cmds(d, &vm, &c, cmd_nx, PAGODA_PTE_NO_EXECUTE);
    pagoda_cmds_free(&c);
    /* read as data first (allowed): the cached translation keeps its NX */
    pagoda_cmds_init(&c);
    pagoda_cmd_copy(&c, cmd_nx, vt + 8, 8);
    render_run(d, &vm, &c, cmd_copy);
    g_assert_cmphex(mem_readl(d, t_pa + 8), ==,
                    PAGODA_CMD_HEADER(PAGODA_CMD_WRITE_IMM, 0, 5));
    g_assert_cmphex(mem_readl(d, t_pa + 12), ==, 1);
    expect_no_fault(d);
    fence = render_run_at(d, &vm, cmd_nx, len);
    expect_fault(d, CTX_A, PAGODA_ENGINE_RENDER, PAGODA_FAULT_NO_EXECUTE,
                 cmd_nx, 0, PAGODA_ACCESS_EXECUTE, fence);
    g_assert_cmphex(mem_readl(d, t_pa), ==, 0x11111111);

    /* one command at the end of an executable page, one on a no-execute page */
    pagoda_cmds_init(&c);
    value = 0x33333333;
    pagoda_cmd_write_imm(&c, vt, &value, 1);
    pagoda_cmd_nop(&c, PAGE / 4 - c.dw->len);
    g_assert_cmpuint(pagoda_cmds_bytes(&c), ==, PAGE);
    value = 0x44444444;
    pagoda_cmd_write_imm(&c, vt + 4, &value, 1);
    len = map_cmds(d, &vm, &c, cmd_mixed, 0);
    pagoda_cmds_free(&c);
    pte = pagoda_vm_get_pte(&vm, cmd_mixed + PAGE, 0);
    pagoda_vm_set_pte(&vm, cmd_mixed + PAGE, 0, pte | PAGODA_PTE_NO_EXECUTE);
    fence = render_run_at(d, &vm, cmd_mixed, len);
    expect_fault(d, CTX_A, PAGODA_ENGINE_RENDER, PAGODA_FAULT_NO_EXECUTE,
                 cmd_mixed + PAGE, 0, PAGODA_ACCESS_EXECUTE, fence);
    g_assert_cmphex(mem_readl(d, t_pa), ==, 0x33333333);
    g_assert_cmphex(mem_readl(d, t_pa + 4), ==, 0);

    /* a command whose last 12 bytes are on a no-execute page */
    pagoda_cmds_init(&c);
    value = 0x55555555;
    pagoda_cmd_write_imm(&c, vt + 16, &value, 1);
    pagoda_cmd_nop(&c, PAGE / 4 - 2 - c.dw->len);
    value = 0x66666666;
    pagoda_cmd_write_imm(&c, vt + 20, &value, 1);
    g_assert_cmpuint(pagoda_cmds_bytes(&c), ==, PAGE + 12);
    len = map_cmds(d, &vm, &c, cmd_straddle, 0);
    pagoda_cmds_free(&c);
    pte = pagoda_vm_get_pte(&vm, cmd_straddle + PAGE, 0);
    pagoda_vm_set_pte(&vm, cmd_straddle + PAGE, 0, pte | PAGODA_PTE_NO_EXECUTE);
    fence = render_run_at(d, &vm, cmd_straddle, len);
    expect_fault(d, CTX_A, PAGODA_ENGINE_RENDER, PAGODA_FAULT_NO_EXECUTE,
                 cmd_straddle + PAGE, 0, PAGODA_ACCESS_EXECUTE, fence);
    g_assert_cmphex(mem_readl(d, t_pa + 16), ==, 0x55555555);
    g_assert_cmphex(mem_readl(d, t_pa + 20), ==, 0);

    /* a JUMP from an executable buffer into a no-execute one */
    pagoda_cmds_init(&c);
    value = 0x77777777;
    pagoda_cmd_write_imm(&c, vt + 24, &value, 1);
    len = map_cmds(d, &vm, &c, cmd_target, PAGODA_PTE_NO_EXECUTE);
    pagoda_cmds_free(&c);
    pagoda_cmds_init(&c);
    pagoda_cmd_jump(&c, cmd_target, len);
    fence = render_run_at(d, &vm, cmd_jump, map_cmds(d, &vm, &c, cmd_jump, 0));
    pagoda_cmds_free(&c);
    expect_fault(d, CTX_A, PAGODA_ENGINE_RENDER, PAGODA_FAULT_NO_EXECUTE,
                 cmd_target, 0, PAGODA_ACCESS_EXECUTE, fence);
    g_assert_cmphex(mem_readl(d, t_pa + 24), ==, 0);
    expect_no_fault(d);

    pagoda_cmds_init(&c);
    value = 0x88888888;
    pagoda_cmd_write_imm(&c, vt + 28, &value, 1);
    len = map_cmds(d, &vm, &c, cmd_up, 0);
    pagoda_cmds_free(&c);
    for (l = 1; l < vm.levels; l++) {
        pagoda_vm_set_pte(&vm, cmd_up, l, pagoda_vm_get_pte(&vm, cmd_up, l) |
                                          PAGODA_PTE_NO_EXECUTE);
    }
    render_run_at(d, &vm, cmd_up, len);
    expect_no_fault(d);
    g_assert_cmphex(mem_readl(d, t_pa + 28), ==, 0x88888888);
}

/*
 * Entries must point inside their segment: the last page of VRAM (and a
 * 2 MiB page ending there) works, one page (or 2 MiB page) further faults,
 * as does a page past the end of hidden VRAM or of the aperture segment.
 * Tables cannot live in the aperture segment.
 */
static void test_fault_out_of_segment(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t ve = 50 * GiB, vx = 51 * GiB, l_ok = 52 * GiB;
    const uint64_t l_bad = 52 * GiB + 2 * MiB, vh = 53 * GiB, vd = 54 * GiB;
    const uint64_t vap = 55 * GiB, vt = 56 * GiB + 3 * PAGE;
    g_autofree uint8_t *data = NULL;
    uint64_t size, hidden, aperture, d_pa, fence;
    uint32_t l;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    size = vram_size(d);
    hidden = pagoda_rd64(d, PAGODA_REG_SEG(PAGODA_SEG_VRAM_HIDDEN) +
                            PAGODA_SEG_SIZE_LO);
    aperture = pagoda_rd64(d, PAGODA_REG_SEG(PAGODA_SEG_APERTURE) +
                              PAGODA_SEG_SIZE_LO);
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);

    data = put_pattern(d, vram(size - PAGE), PAGE, 50);
    pagoda_vm_map(&vm, ve, vram(size - PAGE), PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, ve, vd, PAGE);
    expect_bytes(d, d_pa, data, PAGE);

    pagoda_vm_set_pte(&vm, vx, 0, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, size,
                                                  PAGODA_PTE_VALID));
    fence = vcopy(d, CTX_A, 0, vx + 8, vd, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 vx + 8, 0, PAGODA_ACCESS_READ, fence);

    pagoda_vm_set_pte(&vm, l_ok, 1, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, size - 2 * MiB,
                                                    PAGODA_PTE_VALID |
                                                    PAGODA_PTE_LARGE_PAGE));
    pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, PAGE);
    vcopy(d, CTX_A, 0, l_ok + 2 * MiB - PAGE, vd, PAGE);
    expect_bytes(d, d_pa, data, PAGE);
    pagoda_vm_set_pte(&vm, l_bad, 1, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, size,
                                                     PAGODA_PTE_VALID |
                                                     PAGODA_PTE_LARGE_PAGE));
    fence = vfill(d, CTX_A, 0, l_bad, 0, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 l_bad, 1, PAGODA_ACCESS_WRITE, fence);

    pagoda_vm_set_pte(&vm, vh, 0, PAGODA_PTE_MAKE(PAGODA_SEG_VRAM_HIDDEN, hidden,
                                                  PAGODA_PTE_VALID));
    fence = vfill(d, CTX_A, 0, vh + 0xffc, 0, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 vh + 0xffc, 0, PAGODA_ACCESS_WRITE, fence);
    pagoda_vm_set_pte(&vm, vap, 0, PAGODA_PTE_MAKE(PAGODA_SEG_APERTURE, aperture,
                                                   PAGODA_PTE_VALID));
    fence = vcopy(d, CTX_A, 0, vap, vd, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 vap, 0, PAGODA_ACCESS_READ, fence);
    expect_bytes(d, vram(size - PAGE), data, PAGE);

    /* a non-leaf entry pointing into the aperture segment, at each level */
    for (l = vm.levels - 1; l > 0; l--) {
        uint64_t va = vt + ((uint64_t)l << va_shift(&vm, vm.levels - 1));

        pagoda_vm_set_pte(&vm, va, l, PAGODA_PTE_MAKE(PAGODA_SEG_APERTURE, 0,
                                                      PAGODA_PTE_VALID));
        fence = vcopy(d, CTX_A, 0, va, vd, 4);
        expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                     va, l, PAGODA_ACCESS_READ, fence);
    }
}

/*
 * A PTE can hold addresses up to 2^56, but segment offsets stop at 2^48:
 * a page or a table at or above 2^48 faults OUT_OF_SEGMENT (a table at the
 * level of that table), and is not taken modulo 2^48, which would reach the
 * memory below.
 */
static void test_fault_address_bits(void *obj, void *arg,
                                    QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t high = 1ull << 48, v_leaf = 60 * GiB;
    const uint64_t v_good = 61 * GiB + 5 * PAGE, v_table = 62 * GiB + 5 * PAGE;
    g_autofree uint8_t *sys_data = NULL, *vram_data = NULL;
    uint64_t d_pa, p_pa, table, fence;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, PAGE);
    p_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, 63 * GiB, d_pa, PAGE, PAGE, 0);
    sys_data = put_pattern(d, p_pa, PAGE, 60);

    /* a system page at 2^48 + p_pa */
    pagoda_vm_set_pte(&vm, v_leaf, 0,
                      PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM,
                                      high | PAGODA_PADDR_OFFSET(p_pa),
                                      PAGODA_PTE_VALID));
    fence = vfill(d, CTX_A, 0, v_leaf, 0, PAGE);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 v_leaf, 0, PAGODA_ACCESS_WRITE, fence);
    expect_bytes(d, p_pa, sys_data, PAGE);

    /* a leaf table at 2^48 + the offset of a good one */
    vram_data = put_pattern(d, vram(7 * MiB), PAGE, 61);
    pagoda_vm_map(&vm, v_good, vram(7 * MiB), PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, v_good, 63 * GiB, PAGE);
    expect_bytes(d, d_pa, vram_data, PAGE);
    table = pagoda_vm_table(&vm, v_good, 0, false);
    pagoda_vm_set_pte(&vm, v_table, 1,
                      PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(table),
                                      high | PAGODA_PADDR_OFFSET(table),
                                      PAGODA_PTE_VALID));
    fence = vcopy(d, CTX_A, 0, v_table, 63 * GiB, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_OUT_OF_SEGMENT,
                 v_table, 0, PAGODA_ACCESS_READ, fence);
}

/*
 * VALID|ZERO pages read as zero and drop writes, on both engines, without a
 * fault, even though they carry the address of a page with data; also in
 * the middle of a run of physically contiguous pages.
 */
static void test_zero_pages(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t vz = 60 * GiB, vw = 61 * GiB, cmd = 62 * GiB;
    const uint64_t vz3 = 63 * GiB, vw3 = 64 * GiB;
    g_autofree uint8_t *p_data = NULL, *w_data = NULL;
    g_autofree uint8_t *zero = g_malloc0(PAGE);
    uint64_t p_pa, w_pa, w3_pa;
    PagodaCmds c;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    p_pa = sys_alloc(d, PAGE);
    w_pa = sys_alloc(d, PAGE);
    w3_pa = sys_alloc(d, 3 * PAGE);
    p_data = put_pattern(d, p_pa, PAGE, 60);
    pagoda_vm_map(&vm, vz, p_pa, PAGE, PAGE, PAGODA_PTE_ZERO);
    pagoda_vm_map(&vm, vw, w_pa, PAGE, PAGE, 0);

    g_free(put_pattern(d, w_pa, PAGE, 61));
    vcopy(d, CTX_A, 0, vz, vw, PAGE);
    expect_bytes(d, w_pa, zero, PAGE);
    vfill(d, CTX_A, 0, vz, 0x12345678, PAGE);
    expect_bytes(d, p_pa, p_data, PAGE);
    expect_no_fault(d);

    w_data = put_pattern(d, w_pa, PAGE, 62);
    pagoda_cmds_init(&c);
    pagoda_cmd_write_imm(&c, vz + 16, (uint32_t[]){ 1, 2, 3 }, 3);
    pagoda_cmd_copy(&c, vw, vz + 0x100, PAGE - 0x200);
    pagoda_cmd_copy(&c, vz + 0x800, vw + 0x10, 0x20);
    render_run(d, &vm, &c, cmd);
    expect_bytes(d, p_pa, p_data, PAGE);
    memset(w_data + 0x10, 0, 0x20);
    expect_bytes(d, w_pa, w_data, PAGE);
    expect_no_fault(d);

    /* [page 0, zero page over page 1, page 2] of one contiguous buffer */
    g_free(p_data);
    p_pa = sys_alloc(d, 3 * PAGE);
    p_data = put_pattern(d, p_pa, 3 * PAGE, 63);
    pagoda_vm_map(&vm, vz3, p_pa, 3 * PAGE, PAGE, 0);
    pagoda_vm_set_pte(&vm, vz3 + PAGE, 0, pte_to(p_pa + PAGE, PAGODA_PTE_ZERO));
    pagoda_vm_map(&vm, vw3, w3_pa, 3 * PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, vz3 + 0x100, vw3 + 0x100, 3 * PAGE - 0x200);
    memset(p_data, 0, 0x100);
    memset(p_data + PAGE, 0, PAGE);
    memset(p_data + 3 * PAGE - 0x100, 0, 0x100);
    expect_bytes(d, w3_pa, p_data, 3 * PAGE);
    expect_no_fault(d);
    g_assert_false(ctx_halted(d, CTX_A));
}

/* ======================================================================== */
/* Halted contexts                                                           */
/* ======================================================================== */

/*
 * Queue 4-byte writes of @value at @dst[0..n) in @vm's context on @engine,
 * one command each: a virtual render buffer (mapped at @cmd_va) or a
 * physical paging buffer of VIRTUAL_FILLs. Returns the fence without waiting.
 */
static uint64_t queue_writes(QPagoda *d, unsigned engine, PagodaVM *vm,
                             uint64_t cmd_va, const uint64_t *dst, unsigned n,
                             uint32_t value)
{
    PagodaCmds c;
    uint64_t addr;
    uint32_t len;
    unsigned i;

    pagoda_cmds_init(&c);
    for (i = 0; i < n; i++) {
        if (engine == PAGODA_ENGINE_RENDER) {
            pagoda_cmd_write_imm(&c, dst[i], &value, 1);
        } else {
            pagoda_cmd_vfill(&c, 0, dst[i], value, 4);
        }
    }
    if (engine == PAGODA_ENGINE_RENDER) {
        return render_submit(d, vm, &c, cmd_va);
    }
    len = pagoda_cmds_bytes(&c);
    addr = pagoda_cmds_upload(d, &c);
    pagoda_cmds_free(&c);
    return pagoda_submit(d, engine, addr, len, vm->ctx, 0);
}

static uint64_t queue_write(QPagoda *d, unsigned engine, PagodaVM *vm,
                            uint64_t cmd_va, uint64_t dst, uint32_t value)
{
    return queue_writes(d, engine, vm, cmd_va, &dst, 1, value);
}

/*
 * A faulting entry stops at the faulting command and its context halts;
 * another context's entries on the same engine run on; the halted
 * context's later entries retire without running; after resuming, its new
 * entries run. ENG_FENCE follows every retired entry.
 */
static void test_halt(void *obj, void *arg, QGuestAllocator *alloc)
{
    unsigned engine = GPOINTER_TO_UINT(arg);
    QPagoda *d = obj;
    PagodaVM va_, vb_;
    const uint64_t vt = 70 * GiB, vbad = 71 * GiB, cmd = 72 * GiB;
    uint64_t t_pa, f1, f4, f5;

    pagoda_start(d, alloc);
    pagoda_vm_init(&va_, d, CTX_A, full_root(d));
    pagoda_vm_init(&vb_, d, CTX_B, full_root(d));
    t_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&va_, vt, t_pa, PAGE, PAGE, 0);
    pagoda_vm_map(&vb_, vt, t_pa, PAGE, PAGE, 0);
    pagoda_vm_table(&va_, vbad, 0, false);     /* its leaf entry stays invalid */

    f1 = queue_writes(d, engine, &va_, cmd, (uint64_t[]){ vt + 16, vbad, vt + 20 },
                      3, 0xa1);
    queue_write(d, engine, &vb_, cmd, vt, 0xb2);
    queue_write(d, engine, &va_, cmd + PAGE, vt + 4, 0xa3);   /* skipped */
    f4 = queue_write(d, engine, &vb_, cmd + PAGE, vt + 8, 0xb4);
    g_assert_true(pagoda_wait_fence(d, engine, f4));
    g_assert_cmpuint(eng_fence(d, engine), ==, f4);
    g_assert_true(pagoda_wait_idle(d, engine));

    g_assert_cmphex(mem_readl(d, t_pa), ==, 0xb2);
    g_assert_cmphex(mem_readl(d, t_pa + 4), ==, 0);
    g_assert_cmphex(mem_readl(d, t_pa + 8), ==, 0xb4);
    g_assert_cmphex(mem_readl(d, t_pa + 16), ==, 0xa1);
    g_assert_cmphex(mem_readl(d, t_pa + 20), ==, 0);
    g_assert_false(ctx_halted(d, CTX_B));
    /* one fault: the skipped entry raised none */
    expect_fault(d, CTX_A, engine, PAGODA_FAULT_INVALID_PTE, vbad, 0,
                 PAGODA_ACCESS_WRITE, f1);

    f5 = queue_write(d, engine, &va_, cmd + 2 * PAGE, vt + 12, 0xa5);
    g_assert_true(pagoda_wait_fence(d, engine, f5));
    g_assert_cmpuint(eng_fence(d, engine), ==, f5);
    g_assert_cmphex(mem_readl(d, t_pa + 12), ==, 0xa5);
    /* nothing of the halted context ran late */
    g_assert_cmphex(mem_readl(d, t_pa + 4), ==, 0);
    g_assert_cmphex(mem_readl(d, t_pa + 20), ==, 0);
    expect_no_fault(d);
}

/* ======================================================================== */
/* TLB                                                                       */
/* ======================================================================== */

/* A fresh chain of tables below @level ending at page @pa: the PTE for @level. */
static uint64_t fresh_chain(PagodaVM *vm, uint64_t va, uint32_t level,
                            uint64_t pa)
{
    uint64_t pte = PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa), PAGODA_PADDR_OFFSET(pa),
                                   PAGODA_PTE_VALID);
    uint32_t l;

    for (l = 0; l < level; l++) {
        uint64_t table = sys_alloc(vm->d, PAGE);

        pagoda_writeq(vm->d, table + va_index(vm, va, l) * 8, pte);
        pte = PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, table, PAGODA_PTE_VALID);
    }
    return pte;
}

/*
 * Counters: a second pass over the same pages hits and never misses;
 * TLB_VALID counts the cached pages; TLB_FLUSHES counts FLUSH_TLB commands
 * and root commits; after a flush the same pass misses again.
 */
static void test_tlb_counters(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t v = 80 * GiB, n = 64, o = 40 * MiB;
    g_autofree uint8_t *want = g_malloc(n * PAGE);
    TlbCount t;
    uint32_t flushes, i;
    PagodaCmds c;

    pagoda_start(d, alloc);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_ENTRIES), >=, 4096);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    pagoda_vm_map(&vm, v, vram(o), n * PAGE, PAGE, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, 0);

    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x01010101, n * PAGE);
    t = tlb_count(d);
    g_test_message("first pass: %" PRIu64 " hits, %" PRIu64 " misses",
                   t.hits, t.misses);
    g_assert_cmpuint(t.misses, >=, 1);
    g_assert_cmpuint(t.misses, <=, n);
    g_assert_cmpuint(t.hits + t.misses, >=, n);
    /* the context has exactly n valid entries, all cached now */
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, n);

    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x5aa5f00f, n * PAGE);
    t = tlb_count(d);
    g_assert_cmpuint(t.misses, ==, 0);
    g_assert_cmpuint(t.hits, >=, n);
    for (i = 0; i < n * PAGE; i += 4) {
        stl_le_p(want + i, 0x5aa5f00f);
    }
    expect_bytes(d, vram(o), want, n * PAGE);

    flushes = pagoda_rd(d, PAGODA_REG_TLB_FLUSHES);
    pagoda_cmds_init(&c);
    pagoda_cmd_flush_tlb(&c, 0, CTX_A, v, PAGE);
    pagoda_cmd_flush_tlb(&c, 0, CTX_B, 0, 0);
    pagoda_cmd_flush_tlb(&c, PAGODA_FLUSH_ALL_CONTEXTS, 0, 0, 0);
    paging_run(d, 0, &c);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_FLUSHES), ==, flushes + 3);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, 0);
    /* a root commit flushes the context too */
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, CTX_A);
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, vm.root_entries);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_FLUSHES), ==, flushes + 4);

    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x01010101, n * PAGE);
    t = tlb_count(d);
    g_assert_cmpuint(t.misses, >=, 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, n);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_HITS_HI), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_MISSES_HI), ==, 0);
    expect_no_fault(d);
}

/*
 * Two contexts map the same VA. Flushing one context makes it see its new
 * mapping and leaves the other's translations cached.
 */
static void test_tlb_flush_context(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vma, vmb;
    const uint64_t vx = 90 * GiB, vd = 91 * GiB;
    g_autofree uint8_t *a1 = NULL, *a2 = NULL, *b1 = NULL, *b2 = NULL;
    uint64_t pa1, pa2, pb1, pb2, da, db;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vma, d, CTX_A, full_root(d));
    pagoda_vm_init(&vmb, d, CTX_B, full_root(d));
    pa1 = sys_alloc(d, PAGE);
    pa2 = sys_alloc(d, PAGE);
    pb1 = sys_alloc(d, PAGE);
    pb2 = sys_alloc(d, PAGE);
    da = sys_alloc(d, PAGE);
    db = sys_alloc(d, PAGE);
    a1 = put_pattern(d, pa1, PAGE, 90);
    a2 = put_pattern(d, pa2, PAGE, 91);
    b1 = put_pattern(d, pb1, PAGE, 92);
    b2 = put_pattern(d, pb2, PAGE, 93);
    pagoda_vm_map(&vma, vx, pa1, PAGE, PAGE, 0);
    pagoda_vm_map(&vma, vd, da, PAGE, PAGE, 0);
    pagoda_vm_map(&vmb, vx, pb1, PAGE, PAGE, 0);
    pagoda_vm_map(&vmb, vd, db, PAGE, PAGE, 0);

    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_bytes(d, da, a1, PAGE);
    vcopy(d, CTX_B, 0, vx, vd, PAGE);
    expect_bytes(d, db, b1, PAGE);

    pagoda_vm_set_pte(&vma, vx, 0, pte_to(pa2, 0));
    pagoda_vm_set_pte(&vmb, vx, 0, pte_to(pb2, 0));
    flush_tlb(d, 0, CTX_A, 0, 0);
    tlb_clear_counters(d);
    vcopy(d, CTX_B, 0, vx, vd, PAGE);
    g_assert_cmpuint(tlb_count(d).misses, ==, 0);
    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_bytes(d, da, a2, PAGE);

    flush_tlb(d, 0, CTX_B, 0, 0);
    vcopy(d, CTX_B, 0, vx, vd, PAGE);
    expect_bytes(d, db, b2, PAGE);
    expect_no_fault(d);
}

/*
 * Range flushes: remapped pages inside the range are seen anew, pages
 * outside stay cached; a range that only overlaps a 2 MiB or 64 KiB page
 * drops that page.
 */
static void test_tlb_flush_range(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t v = 100 * GiB, vd = 101 * GiB, l2m = 102 * GiB;
    const uint64_t v64 = 103 * GiB, n = 64;
    g_autofree uint8_t *want = NULL, *fresh = NULL;
    g_autofree uint8_t *a = NULL, *b = NULL;
    uint64_t p_pa, np_pa, d_pa;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    p_pa = sys_alloc(d, n * PAGE);
    np_pa = sys_alloc(d, 2 * PAGE);
    d_pa = sys_alloc(d, n * PAGE);
    want = put_pattern(d, p_pa, n * PAGE, 100);
    fresh = put_pattern(d, np_pa, 2 * PAGE, 101);
    pagoda_vm_map(&vm, v, p_pa, n * PAGE, PAGE, 0);
    pagoda_vm_map(&vm, vd, d_pa, n * PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, v, vd, n * PAGE);
    expect_bytes(d, d_pa, want, n * PAGE);

    pagoda_vm_set_pte(&vm, v, 0, pte_to(np_pa, 0));
    pagoda_vm_set_pte(&vm, v + 40 * PAGE, 0, pte_to(np_pa + PAGE, 0));
    flush_tlb(d, 0, CTX_A, v, PAGE);
    flush_tlb(d, 0, CTX_A, v + 40 * PAGE + 0x800, 1);
    memcpy(want, fresh, PAGE);
    memcpy(want + 40 * PAGE, fresh + PAGE, PAGE);

    tlb_clear_counters(d);
    vcopy(d, CTX_A, 0, v + 16 * PAGE, vd + 16 * PAGE, 24 * PAGE);
    vcopy(d, CTX_A, 0, v + 41 * PAGE, vd + 41 * PAGE, 23 * PAGE);
    g_assert_cmpuint(tlb_count(d).misses, ==, 0);
    vcopy(d, CTX_A, 0, v, vd, n * PAGE);
    expect_bytes(d, d_pa, want, n * PAGE);

    pagoda_vm_set_pte(&vm, l2m, 1, pte_to(vram(10 * MiB), PAGODA_PTE_LARGE_PAGE));
    a = put_pattern(d, vram(10 * MiB + 0x3000), PAGE, 102);
    b = put_pattern(d, vram(12 * MiB + 0x3000), PAGE, 103);
    vcopy(d, CTX_A, 0, l2m + 0x3000, vd, PAGE);
    expect_bytes(d, d_pa, a, PAGE);
    pagoda_vm_set_pte(&vm, l2m, 1,
                      pte_to(vram(12 * MiB), PAGODA_PTE_LARGE_PAGE));
    flush_tlb(d, 0, CTX_A, l2m + 1 * MiB, PAGE);
    vcopy(d, CTX_A, 0, l2m + 0x3000, vd, PAGE);
    expect_bytes(d, d_pa, b, PAGE);
    g_free(a);
    g_free(b);

    pagoda_vm_map(&vm, v64, vram(14 * MiB), PAGE64, PAGE64, 0);
    a = put_pattern(d, vram(14 * MiB + 0x5000), PAGE, 104);
    b = put_pattern(d, vram(15 * MiB + 0x5000), PAGE, 105);
    vcopy(d, CTX_A, 0, v64 + 0x5000, vd, PAGE);
    expect_bytes(d, d_pa, a, PAGE);
    pagoda_vm_map(&vm, v64, vram(15 * MiB), PAGE64, PAGE64, 0);
    flush_tlb(d, 0, CTX_A, v64 + 0xf000, PAGE);
    vcopy(d, CTX_A, 0, v64 + 0x5000, vd, PAGE);
    expect_bytes(d, d_pa, b, PAGE);
    expect_no_fault(d);
}

/*
 * A flush of all contexts reaches every context, whatever its context
 * field; with a range, only that range of every context.
 */
static void test_tlb_flush_all(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm[2];
    const uint64_t vx = 92 * GiB, vd = 93 * GiB;
    g_autofree uint8_t *want = NULL;
    uint64_t old_pa, new_pa[2], d_pa[2];
    unsigned i;

    pagoda_start(d, alloc);
    old_pa = sys_alloc(d, PAGE);
    g_free(put_pattern(d, old_pa, PAGE, 110));
    for (i = 0; i < 2; i++) {
        pagoda_vm_init(&vm[i], d, CTX_A + i, full_root(d));
        new_pa[i] = sys_alloc(d, PAGE);
        d_pa[i] = sys_alloc(d, PAGE);
        g_free(put_pattern(d, new_pa[i], PAGE, 111 + i));
        pagoda_vm_map(&vm[i], vx, old_pa, PAGE, PAGE, 0);
        pagoda_vm_map(&vm[i], vd, d_pa[i], PAGE, PAGE, 0);
        vcopy(d, vm[i].ctx, 0, vx, vd, PAGE);
        expect_pattern(d, d_pa[i], PAGE, 110);
        pagoda_vm_set_pte(&vm[i], vx, 0, pte_to(new_pa[i], 0));
    }
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), >=, 4);
    flush_tlb(d, PAGODA_FLUSH_ALL_CONTEXTS,
              pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS) - 1, 0, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_VALID), ==, 0);
    for (i = 0; i < 2; i++) {
        vcopy(d, vm[i].ctx, 0, vx, vd, PAGE);
        expect_pattern(d, d_pa[i], PAGE, 111 + i);
        pagoda_vm_set_pte(&vm[i], vx, 0, pte_to(old_pa, 0));
    }

    flush_tlb(d, PAGODA_FLUSH_ALL_CONTEXTS, 0, vx, PAGE);
    tlb_clear_counters(d);
    for (i = 0; i < 2; i++) {
        vcopy(d, vm[i].ctx, 0, vx, vd, PAGE);
        expect_pattern(d, d_pa[i], PAGE, 110);
    }
    /* only the two flushed pages were walked again */
    g_assert_cmpuint(tlb_count(d).misses, <=, 2);
    expect_no_fault(d);
}

/*
 * Changing an upper-level entry (a new table below it) and flushing the
 * range of the page is enough: no cached walk survives.
 */
static void test_tlb_flush_upper(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t vx = 110 * GiB + 4 * MiB + 3 * PAGE, vd = 111 * GiB;
    uint64_t p_pa, d_pa;
    uint32_t l;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    p_pa = sys_alloc(d, vm.levels * PAGE);
    d_pa = sys_alloc(d, PAGE);
    for (l = 0; l < vm.levels; l++) {
        g_free(put_pattern(d, p_pa + l * PAGE, PAGE, 120 + l));
    }
    pagoda_vm_map(&vm, vx, p_pa, PAGE, PAGE, 0);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_pattern(d, d_pa, PAGE, 120);

    for (l = 1; l < vm.levels; l++) {
        pagoda_vm_set_pte(&vm, vx, l, fresh_chain(&vm, vx, l, p_pa + l * PAGE));
        flush_tlb(d, 0, CTX_A, vx, PAGE);
        vcopy(d, CTX_A, 0, vx, vd, PAGE);
        expect_pattern(d, d_pa, PAGE, 120 + l);
    }
    expect_no_fault(d);
}

/*
 * Committing a root (CTX_ROOT_ENTRIES) invalidates the context: a new root,
 * and the same root again after a PTE change. Other contexts stay cached.
 */
static void test_tlb_new_root(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm, vm2, other;
    const uint64_t vx = 120 * GiB, vd = 121 * GiB;
    uint64_t p_pa, d_pa, o_pa;
    unsigned i;

    pagoda_start(d, alloc);
    p_pa = sys_alloc(d, 3 * PAGE);
    d_pa = sys_alloc(d, PAGE);
    o_pa = sys_alloc(d, PAGE);
    for (i = 0; i < 3; i++) {
        g_free(put_pattern(d, p_pa + i * PAGE, PAGE, 130 + i));
    }
    pagoda_vm_init(&other, d, CTX_B, full_root(d));
    pagoda_vm_map(&other, vx, p_pa, PAGE, PAGE, 0);
    pagoda_vm_map(&other, vd, o_pa, PAGE, PAGE, 0);
    vcopy(d, CTX_B, 0, vx, vd, PAGE);

    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    pagoda_vm_map(&vm, vx, p_pa, PAGE, PAGE, 0);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);
    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_pattern(d, d_pa, PAGE, 130);

    pagoda_vm_init(&vm2, d, CTX_A, full_root(d));
    pagoda_vm_map(&vm2, vx, p_pa + PAGE, PAGE, PAGE, 0);
    pagoda_vm_map(&vm2, vd, d_pa, PAGE, PAGE, 0);
    tlb_clear_counters(d);
    vcopy(d, CTX_B, 0, vx, vd, PAGE);
    g_assert_cmpuint(tlb_count(d).misses, ==, 0);
    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_pattern(d, d_pa, PAGE, 131);

    pagoda_vm_set_pte(&vm2, vx, 0, pte_to(p_pa + 2 * PAGE, 0));
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, CTX_A);
    pagoda_wr64(d, PAGODA_REG_CTX_ROOT_LO, vm2.root);
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, vm2.root_entries);
    vcopy(d, CTX_A, 0, vx, vd, PAGE);
    expect_pattern(d, d_pa, PAGE, 132);
    expect_no_fault(d);
}

/*
 * Replacement keeps a working set: 64 MiB is mapped with 4 KiB pages and
 * streamed through once (four times the TLB's 4 KiB reach); then a 16 MiB
 * working set is touched, then 12 pages 4 MiB apart that compete for the
 * same sets as some of it, then the working set again. The second pass
 * must miss on a small fraction of its pages: a TLB that drops everything
 * when it fills up would walk again for all of them.
 */
static void test_tlb_working_set(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaVM vm;
    const uint64_t v = 64 * GiB, mapped = 64 * MiB, ws = 16 * MiB;
    const uint64_t pages = ws / PAGE, set = 5 * PAGE;
    uint64_t off, k;
    TlbCount run1, run2, run3;
    PagodaCmds c;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    pagoda_vm_map(&vm, v, vram(0), mapped, PAGE, 0);

    vfill(d, CTX_A, 0, v, 0x11111111, mapped);
    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x22222222, ws);
    run1 = tlb_count(d);

    pagoda_cmds_init(&c);
    for (k = ws / (4 * MiB); k < mapped / (4 * MiB); k++) {
        pagoda_cmd_vfill(&c, 0, v + k * 4 * MiB + set, 0x33333333, 4);
    }
    paging_run(d, CTX_A, &c);

    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x44444444, ws);
    run2 = tlb_count(d);

    flush_tlb(d, 0, CTX_A, 0, 0);
    tlb_clear_counters(d);
    vfill(d, CTX_A, 0, v, 0x55555555, ws);
    run3 = tlb_count(d);

    g_test_message("%" PRIu64 " pages: misses %" PRIu64 " first pass, %" PRIu64
                   " second, %" PRIu64 " after a flush", pages, run1.misses,
                   run2.misses, run3.misses);
    g_assert_cmpuint(run1.misses, >=, 1);
    g_assert_cmpuint(run2.hits + run2.misses, >=, pages);
    g_assert_cmpuint(run2.misses, <=, pages / 32);
    g_assert_cmpuint(run3.misses, >, run2.misses);

    for (off = 0; off < mapped; off += MiB) {
        g_assert_cmphex(mem_readl(d, vram(off + 4)), ==,
                        off < ws ? 0x55555555 : 0x11111111);
    }
    for (k = ws / (4 * MiB); k < mapped / (4 * MiB); k++) {
        g_assert_cmphex(mem_readl(d, vram(k * 4 * MiB + set)), ==, 0x33333333);
    }
    expect_no_fault(d);
}

/* ---- Linked adapters ------------------------------------------------------ */

/*
 * The link of the test machine (link_machine()): the device under test
 * "pgd0" is adapter 0; "pgd1" (32 MiB of VRAM, 16 MiB hidden) adapter 1;
 * "pgd2" (no hidden VRAM) adapter 2.
 */
#define PEER1_DEVFN     QPCI_DEVFN(5, 0)
#define PEER2_DEVFN     QPCI_DEVFN(6, 0)
#define PEER1_VRAM      (32 * MiB)

static void *link_machine(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -device pagoda,id=pgd1,link=pgd0,addr=05.0,"
                    "vram-size=32M,hidden-vram-size=16M"
                    " -device pagoda,id=pgd2,link=pgd0,addr=06.0,"
                    "vram-size=32M,hidden-vram-size=0 ");
    return arg;
}

/* A leaf entry for page @pa (PAGODA_PADDR) of linked adapter @adapter. */
static uint64_t peer_pte(unsigned adapter, uint64_t pa, uint64_t flags)
{
    return pte_to(pa, PAGODA_PTE_PEER(adapter) | flags);
}

/* The same bytes at @off of @other's VRAM, read through its BAR2. */
static void expect_vram_bytes(QPagoda *other, uint64_t off, const void *want,
                              size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);

    qpci_memread(&other->dev, other->vram, off, got, len);
    g_assert_cmpmem(got, len, want, len);
}

/*
 * (1) Link registers: the same link id on every member, each its own
 * physical adapter index, all three present.
 */
static void test_link_regs(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj, p1, p2;
    uint32_t id;

    pagoda_start(d, alloc);
    pagoda_start_other(&p1, d, PEER1_DEVFN);
    pagoda_start_other(&p2, d, PEER2_DEVFN);
    id = pagoda_rd(d, PAGODA_REG_LINK_ID);
    g_assert_cmpuint(id, !=, 0);
    g_assert_cmpuint(pagoda_rd(&p1, PAGODA_REG_LINK_ID), ==, id);
    g_assert_cmpuint(pagoda_rd(&p2, PAGODA_REG_LINK_ID), ==, id);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_LINK_INDEX), ==, 0);
    g_assert_cmpuint(pagoda_rd(&p1, PAGODA_REG_LINK_INDEX), ==, 1);
    g_assert_cmpuint(pagoda_rd(&p2, PAGODA_REG_LINK_INDEX), ==, 2);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_LINK_PRESENT), ==, 0x7);
    g_assert_cmphex(pagoda_rd(&p2, PAGODA_REG_LINK_PRESENT), ==, 0x7);
    /* still each its own device: own VRAM size, own registers */
    g_assert_cmpuint(pagoda_rd64(&p1, PAGODA_REG_VRAM_SIZE_LO), ==, PEER1_VRAM);
    pagoda_wr(&p1, PAGODA_REG_SCRATCH, 0x1234);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, 0);
}

/* (2) An unlinked GPU: a link of one, and no PTE_ADAPTER (INVALID_PTE). */
static void test_link_none(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t vs = 40 * GiB, vd = 41 * GiB;
    PagodaVM vm;
    uint64_t d_pa, fence;

    pagoda_start(d, alloc);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_LINK_ID), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_LINK_INDEX), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_LINK_PRESENT), ==, 1);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);
    pagoda_vm_set_pte(&vm, vs, 0, peer_pte(0, vram(0), 0));
    fence = vcopy(d, CTX_A, 0, vs, vd, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE, vs, 0,
                 PAGODA_ACCESS_READ, fence);
}

/*
 * (3) Peer memory through PTE_ADAPTER, from jobs on adapter 0: copies from
 * adapter 1's VRAM and hidden VRAM (read back through its own paging
 * engine), fills and CRC through them, a 2 MiB page of it, an engine
 * fetching its commands there, and an entry naming adapter 0 explicitly.
 */
static void test_link_peer(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj, p1;
    const uint64_t vp = 60 * GiB, vh = 61 * GiB, vs = 62 * GiB, vl = 64 * GiB;
    const uint64_t vself = 63 * GiB;
    g_autofree uint8_t *pdata = g_malloc(3 * PAGE);
    g_autofree uint8_t *fill = g_malloc(PAGE);
    g_autofree uint8_t *sdata = NULL;
    uint64_t s_pa, h_pa, fence;
    PagodaCmds c;
    PagodaVM vm;

    pagoda_start(d, alloc);
    pagoda_start_other(&p1, d, PEER1_DEVFN);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    s_pa = sys_alloc(d, 4 * PAGE);
    pagoda_vm_map(&vm, vs, s_pa, 4 * PAGE, PAGE, 0);

    /* adapter 1's VRAM at 1 MiB, written through its BAR2, copied by adapter 0 */
    make_pattern(pdata, 3 * PAGE, 70);
    qpci_memwrite(&p1.dev, p1.vram, 1 * MiB, pdata, 3 * PAGE);
    pagoda_vm_map(&vm, vp, vram(1 * MiB), 3 * PAGE, PAGE, PAGODA_PTE_PEER(1));
    vcopy(d, CTX_A, 0, vp, vs, 3 * PAGE);
    expect_bytes(d, s_pa, pdata, 3 * PAGE);
    expect_no_fault(d);

    /* adapter 0 writes adapter 1's VRAM: a fill, then a copy into it */
    vfill(d, CTX_A, 0, vp + PAGE, 0x5a5a5a5a, PAGE);
    memset(fill, 0x5a, PAGE);
    expect_vram_bytes(&p1, 1 * MiB + PAGE, fill, PAGE);
    sdata = put_pattern(d, s_pa, PAGE, 71);
    vcopy(d, CTX_A, 0, vs, vp + 2 * PAGE, PAGE);
    expect_vram_bytes(&p1, 1 * MiB + 2 * PAGE, sdata, PAGE);
    /* adapter 0's own VRAM at the same offset is untouched */
    g_assert_cmpuint(mem_readl(d, vram(1 * MiB + PAGE)), ==, 0);

    /* adapter 1's hidden VRAM: written by adapter 0, read back by adapter 1 */
    pagoda_vm_map(&vm, vh, PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, 8 * MiB), PAGE,
                  PAGE, PAGODA_PTE_PEER(1));
    vcopy(d, CTX_A, 0, vp, vh, PAGE);
    h_pa = sys_alloc(d, PAGE);
    pagoda_cmds_init(&c);
    pagoda_cmd_transfer(&c, 0, PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, 8 * MiB),
                        h_pa, PAGE);
    pagoda_run(&p1, PAGODA_ENGINE_PAGING, &c, 0, 0);
    pagoda_cmds_free(&c);
    expect_bytes(d, h_pa, pdata, PAGE);

    /* a 2 MiB page of adapter 1's VRAM */
    pagoda_vm_set_pte(&vm, vl, 1, peer_pte(1, vram(0), PAGODA_PTE_LARGE_PAGE));
    vcopy(d, CTX_A, 0, vl + 1 * MiB + PAGE, vs + 3 * PAGE, PAGE);
    memset(fill, 0x5a, PAGE);
    expect_bytes(d, s_pa + 3 * PAGE, fill, PAGE);

    /* adapter 0 named explicitly is this GPU */
    sdata = (g_free(sdata), put_pattern(d, vram(4 * MiB), PAGE, 72));
    pagoda_vm_map(&vm, vself, vram(4 * MiB), PAGE, PAGE, PAGODA_PTE_PEER(0));
    vcopy(d, CTX_A, 0, vself, vs, PAGE);
    expect_bytes(d, s_pa, sdata, PAGE);

    /* the render engine fetches and runs commands from adapter 1's VRAM */
    pagoda_cmds_init(&c);
    pagoda_cmd_fill32(&c, vs, 0xc0ffee00, PAGE);
    qpci_memwrite(&p1.dev, p1.vram, 2 * MiB, c.dw->data, pagoda_cmds_bytes(&c));
    pagoda_vm_map(&vm, vp + 4 * PAGE, vram(2 * MiB), PAGE, PAGE,
                  PAGODA_PTE_PEER(1));
    fence = pagoda_submit(d, PAGODA_ENGINE_RENDER, vp + 4 * PAGE,
                          pagoda_cmds_bytes(&c), CTX_A, PAGODA_RING_FLAG_VIRTUAL);
    g_assert_true(pagoda_wait_fence(d, PAGODA_ENGINE_RENDER, fence));
    pagoda_cmds_free(&c);
    expect_no_fault(d);
    g_assert_cmphex(mem_readl(d, s_pa + PAGE - 4), ==, 0xc0ffee00);
}

/*
 * (4) What PTE_ADAPTER may not name faults BAD_PEER and touches nothing:
 * an adapter index that is not in the link, system memory or the aperture
 * of a peer, a peer's VRAM beyond its size (though within adapter 0's), a
 * peer without hidden VRAM; page tables are always local (an upper entry
 * with PTE_ADAPTER is INVALID_PTE).
 */
static void test_link_faults(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t vd = 70 * GiB, vb = 71 * GiB;
    const struct {
        unsigned adapter;
        uint64_t pa;
    } bad[] = {
        { 3, vram(0) },                                     /* not in the link */
        { 62, vram(0) },                                    /* beyond any */
        { 1, PAGODA_PADDR(PAGODA_SEG_SYSTEM, 0) },          /* not memory of its own */
        { 1, PAGODA_PADDR(PAGODA_SEG_APERTURE, 0) },
        { 1, vram(PEER1_VRAM) },                            /* past its VRAM */
        { 2, PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, 0) },     /* it has none */
    };
    g_autofree uint8_t *zero = g_malloc0(PAGE);
    uint64_t d_pa, fence, va;
    PagodaVM vm;
    unsigned i;

    pagoda_start(d, alloc);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        va = vb + i * PAGE;
        pagoda_vm_set_pte(&vm, va, 0, peer_pte(bad[i].adapter, bad[i].pa, 0));
        g_test_message("adapter %u, 0x%" PRIx64, bad[i].adapter, bad[i].pa);
        fence = vcopy(d, CTX_A, 0, va + 0x40, vd, 16);
        expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_BAD_PEER,
                     va + 0x40, 0, PAGODA_ACCESS_READ, fence);
        fence = vfill(d, CTX_A, 0, va, 0xffffffff, 16);
        expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_BAD_PEER,
                     va, 0, PAGODA_ACCESS_WRITE, fence);
    }
    expect_bytes(d, d_pa, zero, PAGE);

    /* a level-1 table entry naming a peer: tables are local */
    va = 72 * GiB;
    pagoda_vm_set_pte(&vm, va, 1, peer_pte(1, vram(0), 0));
    fence = vcopy(d, CTX_A, 0, va, vd, 4);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_INVALID_PTE, va, 1,
                 PAGODA_ACCESS_READ, fence);
}

/*
 * (5) A peer that leaves: in D3hot (a function reset under way) it is
 * absent, accesses through a cached translation of its memory fault
 * BAD_PEER, and back in D0 they reach its memory again, kept; unplugged,
 * it is absent for good; an adapter reset of a peer keeps its memory.
 */
static void test_link_leave(void *obj, void *arg, QGuestAllocator *alloc)
{
    QPagoda *d = obj, p1, p2;
    QTestState *qts = d->dev.bus->qts;
    const uint64_t v1 = 80 * GiB, v2 = 81 * GiB, vd = 82 * GiB;
    g_autofree uint8_t *data = g_malloc(PAGE);
    uint64_t d_pa, fence;
    uint8_t pm;
    PagodaVM vm;

    pagoda_start(d, alloc);
    pagoda_start_other(&p1, d, PEER1_DEVFN);
    pagoda_start_other(&p2, d, PEER2_DEVFN);
    pagoda_vm_init(&vm, d, CTX_A, full_root(d));
    d_pa = sys_alloc(d, PAGE);
    pagoda_vm_map(&vm, vd, d_pa, PAGE, PAGE, 0);
    make_pattern(data, PAGE, 80);
    qpci_memwrite(&p1.dev, p1.vram, 0, data, PAGE);
    qpci_memwrite(&p2.dev, p2.vram, 0, data, PAGE);
    pagoda_vm_map(&vm, v1, vram(0), PAGE, PAGE, PAGODA_PTE_PEER(1));
    pagoda_vm_map(&vm, v2, vram(0), PAGE, PAGE, PAGODA_PTE_PEER(2));
    vcopy(d, CTX_A, 0, v1, vd, PAGE);
    vcopy(d, CTX_A, 0, v2, vd, PAGE);
    expect_bytes(d, d_pa, data, PAGE);

    /* adapter 1 in D3hot: absent; its translation is in the TLB still */
    pm = qpci_find_capability(&p1.dev, PCI_CAP_ID_PM, 0);
    qpci_config_writew(&p1.dev, pm + PCI_PM_CTRL, 3);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_LINK_PRESENT), ==, 0x5);
    fence = vcopy(d, CTX_A, 0, v1 + 8, vd, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_BAD_PEER, v1 + 8,
                 0xff, PAGODA_ACCESS_READ, fence);
    /* back in D0 (reset, like power-on): present, its memory as it was */
    qpci_config_writew(&p1.dev, pm + PCI_PM_CTRL, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_LINK_PRESENT), ==, 0x7);
    pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, PAGE);
    vcopy(d, CTX_A, 0, v1, vd, PAGE);
    expect_bytes(d, d_pa, data, PAGE);

    /* an adapter reset of adapter 2 keeps its memory and its place */
    pagoda_wr(&p2, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    pagoda_memset(d, pagoda_cpu_addr(d, d_pa), 0, PAGE);
    vcopy(d, CTX_A, 0, v2, vd, PAGE);
    expect_bytes(d, d_pa, data, PAGE);

    /* adapter 2 unplugged: absent for good */
    qpci_iounmap(&p2.dev, p2.vram);
    qpci_iounmap(&p2.dev, p2.host_aperture);
    qpci_iounmap(&p2.dev, p2.mmio);
    qpci_unplug_acpi_device_test(qts, "pgd2", 6);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_LINK_PRESENT), ==, 0x3);
    fence = vcopy(d, CTX_A, 0, v2, vd, 8);
    expect_fault(d, CTX_A, PAGODA_ENGINE_PAGING, PAGODA_FAULT_BAD_PEER, v2, 0xff,
                 PAGODA_ACCESS_READ, fence);
}

/* ======================================================================== */

static const MmuConfig configs[] = {
    { "mmu-levels=2,va-bits=40", 2, 40 },
    { "mmu-levels=2,va-bits=32", 2, 32 },
    { "mmu-levels=3", 3, 39 },
    { "mmu-levels=4", 4, 48 },
    { "mmu-levels=4,va-bits=44", 4, 44 },
};

static void add_config_test(const char *what, QOSTestFunc fn,
                            const MmuConfig *cfg)
{
    QOSGraphTestOptions opts = {
        .edge.extra_device_opts = cfg->props,
        .arg = (void *)cfg,
    };
    g_autofree char *name = g_strdup_printf("mmu-%s-l%u-va%u", what,
                                            cfg->levels, cfg->va_bits);

    qos_add_test(name, "pagoda-mmu", fn, &opts);
}

static void register_pagoda_mmu_tests(void)
{
    QOSGraphTestOptions two_levels = {
        .edge.extra_device_opts = "mmu-levels=2,va-bits=40",
    };
    QOSGraphTestOptions on_paging = {
        .arg = GUINT_TO_POINTER(PAGODA_ENGINE_PAGING),
    };
    QOSGraphTestOptions on_render = {
        .arg = GUINT_TO_POINTER(PAGODA_ENGINE_RENDER),
    };
    QOSGraphTestOptions linked = {
        .edge.extra_device_opts = "id=pgd0",
        .before = link_machine,
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(configs); i++) {
        add_config_test("caps", test_caps, &configs[i]);
        add_config_test("walk", test_walk, &configs[i]);
        add_config_test("invalid-upper", test_fault_invalid_upper, &configs[i]);
    }
    qos_add_test("mmu-root-range", "pagoda-mmu", test_root_range, &two_levels);
    qos_add_test("mmu-va-bits", "pagoda-mmu", test_va_bits, NULL);
    qos_add_test("mmu-pages-64k", "pagoda-mmu", test_pages_64k, NULL);
    qos_add_test("mmu-large-pages", "pagoda-mmu", test_large_pages, NULL);
    qos_add_test("mmu-tables-vram", "pagoda-mmu", test_tables_vram, NULL);
    qos_add_test("mmu-tables-any-segment", "pagoda-mmu", test_tables_any_segment,
                 NULL);
    qos_add_test("mmu-fault-invalid-leaf", "pagoda-mmu", test_fault_invalid_leaf,
                 NULL);
    qos_add_test("mmu-fault-read-only", "pagoda-mmu", test_fault_read_only, NULL);
    qos_add_test("mmu-fault-no-execute", "pagoda-mmu", test_fault_no_execute, NULL);
    qos_add_test("mmu-fault-out-of-segment", "pagoda-mmu", test_fault_out_of_segment,
                 NULL);
    qos_add_test("mmu-fault-address-bits", "pagoda-mmu", test_fault_address_bits,
                 NULL);
    qos_add_test("mmu-zero-pages", "pagoda-mmu", test_zero_pages, NULL);
    qos_add_test("mmu-halt-paging", "pagoda-mmu", test_halt, &on_paging);
    qos_add_test("mmu-halt-render", "pagoda-mmu", test_halt, &on_render);
    qos_add_test("tlb-counters", "pagoda-mmu", test_tlb_counters, NULL);
    qos_add_test("tlb-flush-context", "pagoda-mmu", test_tlb_flush_context, NULL);
    qos_add_test("tlb-flush-range", "pagoda-mmu", test_tlb_flush_range, NULL);
    qos_add_test("tlb-flush-all", "pagoda-mmu", test_tlb_flush_all, NULL);
    qos_add_test("tlb-flush-upper", "pagoda-mmu", test_tlb_flush_upper, NULL);
    qos_add_test("tlb-new-root", "pagoda-mmu", test_tlb_new_root, NULL);
    qos_add_test("tlb-working-set", "pagoda-mmu", test_tlb_working_set, NULL);
    qos_add_test("link-none", "pagoda-mmu", test_link_none, NULL);
    qos_add_test("link-regs", "pagoda-mmu", test_link_regs, &linked);
    qos_add_test("link-peer", "pagoda-mmu", test_link_peer, &linked);
    qos_add_test("link-faults", "pagoda-mmu", test_link_faults, &linked);
    qos_add_test("link-leave", "pagoda-mmu", test_link_leave, &linked);
}

libqos_init(register_pagoda_mmu_tests);
