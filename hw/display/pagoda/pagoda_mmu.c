/*
 * Pagoda GPU: the GPU MMU.
 *
 * Owns per-context translation: page-table walks over 2 to 4 levels (a
 * resizable root with 2 levels, fixed 512-entry tables otherwise), the
 * translation cache and its counters.
 *
 * The TLB keeps one set-associative array per page-size class (4 KiB and
 * 64 KiB pages) plus a small fully associative array for large pages, with
 * LRU replacement inside a set: filling it never throws away unrelated
 * translations, unlike a flush-everything-when-full cache. A miss on a leaf
 * entry reads the aligned group of 16 neighbouring entries in one access
 * and caches every valid one, and a page-walk cache remembers the leaf
 * table of recently used 2 MiB regions, so sequential streams pay one
 * table read per 16 pages. Entries leave the TLB only through replacement,
 * FLUSH_TLB or a root change: page-table writes need an explicit flush
 * (PAGODA_MMU_CAPS_EXPLICIT_FLUSH), and after one nothing stale survives.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "pagoda_int.h"
#include "trace.h"

#define PTE_GROUP       16      /* leaf entries fetched per miss */
#define LEAF64_SHIFT    16
#define TABLE_SEGMENTS  (PAGODA_BIT(PAGODA_SEG_SYSTEM) | \
                         PAGODA_BIT(PAGODA_SEG_VRAM) | \
                         PAGODA_BIT(PAGODA_SEG_VRAM_HIDDEN))

static inline unsigned level_shift(unsigned level)
{
    return 12 + 9 * level;
}

uint32_t pagoda_mmu_level_entries(PagodaState *s, unsigned level, bool leaf64)
{
    if (leaf64 && level == 0) {
        return 1u << (level_shift(1) - LEAF64_SHIFT);
    }
    return 1u << s->level_bits[level];
}

/* ---- TLB ----------------------------------------------------------------- */

static PagodaTlbEntry *tlb_set(PagodaTlb *t, unsigned shift, uint16_t ctx,
                               uint64_t vpn, unsigned *ways)
{
    switch (shift) {
    case 12:
        *ways = PAGODA_TLB_WAYS;
        return &t->e4k[((vpn ^ ((uint64_t)ctx << 6)) % PAGODA_TLB4K_SETS) *
                       PAGODA_TLB_WAYS];
    case LEAF64_SHIFT:
        *ways = PAGODA_TLB_WAYS;
        return &t->e64k[((vpn ^ ((uint64_t)ctx << 4)) % PAGODA_TLB64K_SETS) *
                        PAGODA_TLB_WAYS];
    default:
        *ways = PAGODA_TLB_LARGE_ENTRIES;
        return t->large;
    }
}

static PagodaTlbEntry *tlb_find(PagodaTlb *t, unsigned shift, uint16_t ctx,
                                uint64_t va)
{
    unsigned ways, i;
    uint64_t vpn = va >> shift;
    PagodaTlbEntry *set = tlb_set(t, shift, ctx, vpn, &ways);

    for (i = 0; i < ways; i++) {
        PagodaTlbEntry *e = &set[i];

        if (e->valid && e->ctx == ctx && e->vpn == va >> e->shift &&
            (shift <= LEAF64_SHIFT ? e->shift == shift : e->shift > LEAF64_SHIFT)) {
            e->stamp = ++t->clock;
            return e;
        }
    }
    return NULL;
}

static PagodaTlbEntry *tlb_lookup(PagodaTlb *t, uint16_t ctx, uint64_t va)
{
    PagodaTlbEntry *e = tlb_find(t, 12, ctx, va);

    if (!e) {
        e = tlb_find(t, LEAF64_SHIFT, ctx, va);
    }
    if (!e) {
        e = tlb_find(t, level_shift(1), ctx, va);
    }
    return e;
}

static PagodaTlbEntry *tlb_insert(PagodaTlb *t, const PagodaTlbEntry *new)
{
    unsigned ways, i;
    PagodaTlbEntry *set = tlb_set(t, new->shift, new->ctx, new->vpn, &ways);
    PagodaTlbEntry *victim = &set[0];

    for (i = 0; i < ways; i++) {
        PagodaTlbEntry *e = &set[i];

        if (e->valid && e->ctx == new->ctx && e->shift == new->shift &&
            e->vpn == new->vpn) {
            victim = e;         /* refresh in place: never two copies */
            break;
        }
        if (!e->valid) {
            if (victim->valid) {
                victim = e;
            }
        } else if (victim->valid && e->stamp < victim->stamp) {
            victim = e;
        }
    }
    if (!victim->valid) {
        t->valid++;
    }
    *victim = *new;
    victim->valid = true;
    victim->stamp = ++t->clock;
    return victim;
}

static void tlb_flush_array(PagodaTlb *t, PagodaTlbEntry *a, unsigned n,
                            int ctx, uint64_t va, uint64_t size)
{
    /* last byte of the range; va + size may wrap: then flush up to the top */
    uint64_t last = size - 1 > UINT64_MAX - va ? UINT64_MAX : va + size - 1;
    unsigned i;

    for (i = 0; i < n && t->valid; i++) {
        PagodaTlbEntry *e = &a[i];
        uint64_t start = e->vpn << e->shift;
        uint64_t end = start + (1ull << e->shift);

        if (!e->valid || (ctx >= 0 && e->ctx != ctx)) {
            continue;
        }
        if (!size || (start <= last && va < end)) {
            e->valid = false;
            t->valid--;
        }
    }
}

/*
 * Invalidate translations of context @ctx (every context if negative) that
 * overlap [va, va + size), or all of them if size is 0. The page-walk cache
 * of the context is dropped whole: upper-level entries may have changed.
 */
void pagoda_tlb_flush(PagodaState *s, int ctx, uint64_t va, uint64_t size)
{
    PagodaTlb *t = s->tlb;
    unsigned i;

    trace_pagoda_tlb_flush(ctx, va, size);
    tlb_flush_array(t, t->e4k, ARRAY_SIZE(t->e4k), ctx, va, size);
    tlb_flush_array(t, t->e64k, ARRAY_SIZE(t->e64k), ctx, va, size);
    tlb_flush_array(t, t->large, ARRAY_SIZE(t->large), ctx, va, size);
    for (i = 0; i < PAGODA_PWC_ENTRIES; i++) {
        if (ctx < 0 || t->pwc[i].ctx == ctx) {
            t->pwc[i].valid = false;
        }
    }
    t->flushes++;
}

/* ---- Page-table walk ----------------------------------------------------- */

static PagodaPwcEntry *pwc_slot(PagodaState *s, uint16_t ctx, uint64_t region)
{
    return &s->tlb->pwc[(region ^ ((uint64_t)ctx << 3)) % PAGODA_PWC_ENTRIES];
}

static bool fault_at(PagodaFault *f, uint32_t code, unsigned level)
{
    f->code = code;
    f->level = level;
    return false;
}

/*
 * Turn a leaf (or large-page) entry into a TLB entry. Returns false, with
 * the fault filled in, if the entry cannot be used.
 */
static bool leaf_entry(PagodaState *s, uint64_t pte, unsigned level,
                       unsigned shift, uint16_t ctx, uint64_t va,
                       PagodaTlbEntry *out, PagodaFault *f)
{
    uint64_t addr = PAGODA_PTE_ADDR(pte);
    unsigned seg = PAGODA_PTE_SEGMENT(pte);
    unsigned adapter = PAGODA_PTE_ADAPTER(pte);
    PagodaState *owner = pagoda_link_peer(s, adapter);
    uint64_t page = 1ull << shift;
    uint64_t size;

    /* an unlinked GPU has no PTE_ADAPTER: it must be 0, as ever */
    if (!(pte & PAGODA_PTE_VALID) || (pte & PAGODA_PTE_RESERVED_MASK) ||
        (adapter && !s->link) || (addr & (page - 1))) {
        return fault_at(f, PAGODA_FAULT_INVALID_PTE, level);
    }
    /* a peer's memory segments, at the same offsets */
    if (adapter && (!owner || (seg != PAGODA_SEG_VRAM &&
                               seg != PAGODA_SEG_VRAM_HIDDEN) ||
                    addr >= pagoda_segment_size(owner, seg) ||
                    page > pagoda_segment_size(owner, seg) - addr)) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: context %u VA 0x%" PRIx64
                      ": PTE_ADAPTER %u names no memory of a present peer "
                      "(segment %u, 0x%" PRIx64 ")\n", ctx, va, adapter, seg,
                      addr);
        return fault_at(f, PAGODA_FAULT_BAD_PEER, level);
    }
    /*
     * A PTE holds addresses up to 2^56, a physical address only offsets
     * below 2^48: system memory ends there, rather than wrapping around.
     */
    size = seg == PAGODA_SEG_SYSTEM ? PAGODA_MASK64(47, 0) + 1
                                    : pagoda_segment_size(s, seg);
    if (seg >= PAGODA_NUM_SEGMENTS || addr >= size || page > size - addr) {
        return fault_at(f, PAGODA_FAULT_OUT_OF_SEGMENT, level);
    }
    *out = (PagodaTlbEntry) {
        .vpn = va >> shift,
        .paddr = PAGODA_PADDR(seg, addr),
        .ctx = ctx,
        .shift = shift,
        .adapter = adapter,
        .read_only = !!(pte & PAGODA_PTE_READ_ONLY),
        .no_execute = !!(pte & PAGODA_PTE_NO_EXECUTE),
        .zero = !!(pte & PAGODA_PTE_ZERO),
    };
    return true;
}

/*
 * Read the aligned group of leaf entries around @va's and cache all the
 * usable ones; return the one for @va.
 */
static PagodaTlbEntry *walk_leaf(PagodaState *s, uint16_t ctx, uint64_t va,
                                 uint64_t table, bool leaf64, PagodaFault *f)
{
    unsigned shift = leaf64 ? LEAF64_SHIFT : level_shift(0);
    uint32_t entries = pagoda_mmu_level_entries(s, 0, leaf64);
    uint32_t idx = (va >> shift) & (entries - 1);
    uint32_t first = idx & ~(PTE_GROUP - 1);
    uint64_t base = va & ~(((uint64_t)entries << shift) - 1);
    uint64_t group[PTE_GROUP];
    PagodaTlbEntry te;
    PagodaFault ignored;
    unsigned i, n = MIN(PTE_GROUP, entries - first);
    int err;

    err = pagoda_mem_read(s, table + first * sizeof(uint64_t), group,
                          n * sizeof(uint64_t));
    if (err) {
        fault_at(f, err, 0);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (first + i != idx &&
            leaf_entry(s, le64_to_cpu(group[i]), 0, shift, ctx,
                       base | ((uint64_t)(first + i) << shift), &te, &ignored)) {
            tlb_insert(s->tlb, &te);
        }
    }
    /* the entry asked for goes in last so that no neighbour evicts it */
    if (!leaf_entry(s, le64_to_cpu(group[idx - first]), 0, shift, ctx, va,
                    &te, f)) {
        return NULL;
    }
    return tlb_insert(s->tlb, &te);
}

static PagodaTlbEntry *walk(PagodaState *s, uint16_t ctx, uint64_t va,
                            PagodaFault *f)
{
    PagodaContext *c = &s->ctx[ctx];
    unsigned top = s->mmu_levels - 1, level;
    uint64_t region = va >> level_shift(1);
    PagodaPwcEntry *pwc = pwc_slot(s, ctx, region);
    uint64_t table = c->root;
    bool leaf64 = false;
    PagodaTlbEntry te;

    if (pwc->valid && pwc->ctx == ctx && pwc->region == region) {
        return walk_leaf(s, ctx, va, pwc->table, pwc->leaf64, f);
    }
    if (va >> s->va_bits || !c->root_entries) {
        fault_at(f, PAGODA_FAULT_ROOT_RANGE, top);
        return NULL;
    }
    for (level = top; level > 0; level--) {
        unsigned shift = level_shift(level);
        uint64_t idx = (va >> shift) & ((1ull << s->level_bits[level]) - 1);
        uint64_t pte;
        unsigned seg;
        int err;

        if (level == top && idx >= c->root_entries) {
            fault_at(f, PAGODA_FAULT_ROOT_RANGE, level);
            return NULL;
        }
        err = pagoda_mem_read(s, table + idx * sizeof(pte), &pte, sizeof(pte));
        if (err) {
            fault_at(f, err, level);
            return NULL;
        }
        pte = le64_to_cpu(pte);
        if (pte & PAGODA_PTE_LARGE_PAGE) {
            if (!leaf_entry(s, pte, level, shift, ctx, va, &te, f)) {
                return NULL;
            }
            return tlb_insert(s->tlb, &te);
        }
        seg = PAGODA_PTE_SEGMENT(pte);
        if (!(pte & PAGODA_PTE_VALID) ||
            (pte & (PAGODA_PTE_RESERVED_MASK | PAGODA_PTE_ADAPTER_MASK)) ||
            (pte & PAGODA_PTE_LEAF64 && level != 1)) {
            fault_at(f, PAGODA_FAULT_INVALID_PTE, level);
            return NULL;
        }
        if (!(TABLE_SEGMENTS & PAGODA_BIT(seg))) {
            fault_at(f, PAGODA_FAULT_OUT_OF_SEGMENT, level);
            return NULL;
        }
        if (PAGODA_PTE_ADDR(pte) > PAGODA_MASK64(47, 0)) {
            /* beyond every segment (see leaf_entry): the table is unreadable */
            fault_at(f, PAGODA_FAULT_OUT_OF_SEGMENT, level - 1);
            return NULL;
        }
        leaf64 = level == 1 && (pte & PAGODA_PTE_LEAF64);
        table = PAGODA_PADDR(seg, PAGODA_PTE_ADDR(pte));
    }
    /* table is now the leaf table; level 1's entry said its page size */
    *pwc = (PagodaPwcEntry) {
        .valid = true,
        .ctx = ctx,
        .region = region,
        .table = table,
        .leaf64 = leaf64,
    };
    return walk_leaf(s, ctx, va, table, leaf64, f);
}

int pagoda_mmu_translate(PagodaState *s, unsigned ctx, uint64_t va,
                         uint32_t access, PagodaXlat *x, PagodaFault *f)
{
    PagodaTlb *t = s->tlb;
    PagodaTlbEntry *e = tlb_lookup(t, ctx, va);
    uint64_t page, in_page;

    f->va = va;
    f->access = access;
    if (e) {
        t->hits++;
    } else {
        t->misses++;
        e = walk(s, ctx, va, f);
        if (!e) {
            return f->code;
        }
    }
    page = 1ull << e->shift;
    in_page = va & (page - 1);
    if (access == PAGODA_ACCESS_WRITE && e->read_only) {
        fault_at(f, PAGODA_FAULT_READ_ONLY, (e->shift - 12) / 9);
        return f->code;
    }
    if (access == PAGODA_ACCESS_EXECUTE && e->no_execute) {
        fault_at(f, PAGODA_FAULT_NO_EXECUTE, (e->shift - 12) / 9);
        return f->code;
    }
    x->paddr = e->paddr + in_page;
    x->page_left = page - in_page;
    x->adapter = e->adapter;
    x->zero = e->zero;
    return 0;
}

/* ---- Registers and lifecycle --------------------------------------------- */

uint32_t pagoda_mmu_reg(PagodaState *s, hwaddr addr)
{
    PagodaTlb *t = s->tlb;
    unsigned level;

    switch (addr) {
    case PAGODA_REG_MMU_CAPS:
        return PAGODA_MMU_CAPS_READ_ONLY | PAGODA_MMU_CAPS_NO_EXECUTE |
               PAGODA_MMU_CAPS_ZERO | PAGODA_MMU_CAPS_CACHE_COHERENT |
               PAGODA_MMU_CAPS_LARGE_PAGES | PAGODA_MMU_CAPS_64K_LEAF |
               PAGODA_MMU_CAPS_EXPLICIT_FLUSH;
    case PAGODA_REG_MMU_LEVELS:
        return s->mmu_levels;
    case PAGODA_REG_MMU_VA_BITS:
        return s->va_bits;
    case PAGODA_REG_MMU_LEAF64_ENTRIES:
        return pagoda_mmu_level_entries(s, 0, true);
    case PAGODA_REG_TLB_HITS_LO:
        return t->hits;
    case PAGODA_REG_TLB_HITS_HI:
        return t->hits >> 32;
    case PAGODA_REG_TLB_MISSES_LO:
        return t->misses;
    case PAGODA_REG_TLB_MISSES_HI:
        return t->misses >> 32;
    case PAGODA_REG_TLB_FLUSHES:
        return t->flushes;
    case PAGODA_REG_TLB_ENTRIES:
        return ARRAY_SIZE(t->e4k) + ARRAY_SIZE(t->e64k) + ARRAY_SIZE(t->large);
    case PAGODA_REG_TLB_VALID:
        return t->valid;
    }
    if (addr < PAGODA_REG_MMU_LEVEL(0) ||
        addr >= PAGODA_REG_MMU_LEVEL(PAGODA_MMU_MAX_LEVELS)) {
        return 0;
    }
    level = (addr - PAGODA_REG_MMU_LEVEL(0)) / 0x10;
    if (level >= s->mmu_levels) {
        return 0;
    }
    switch ((addr - PAGODA_REG_MMU_LEVEL(0)) % 0x10) {
    case PAGODA_MMU_LEVEL_INDEX_BITS:
        return s->level_bits[level];
    case PAGODA_MMU_LEVEL_TABLE_SIZE:
        return pagoda_mmu_level_entries(s, level, false) * sizeof(uint64_t);
    case PAGODA_MMU_LEVEL_SEGMENTS:
        return TABLE_SEGMENTS;
    case PAGODA_MMU_LEVEL_ALIGN:
        return PAGODA_PAGE_SIZE;
    }
    return 0;
}

void pagoda_mmu_realize(PagodaState *s, Error **errp)
{
    unsigned level, root_bits;

    if (s->mmu_levels < 2 || s->mmu_levels > PAGODA_MMU_MAX_LEVELS) {
        error_setg(errp, "pagoda: mmu-levels must be 2, 3 or 4 (got %u)",
                   s->mmu_levels);
        return;
    }
    if (!s->va_bits) {
        s->va_bits = s->mmu_levels == 2 ? 40 : level_shift(s->mmu_levels);
    }
    if (s->va_bits <= level_shift(s->mmu_levels - 1) ||
        s->va_bits > level_shift(s->mmu_levels - 1) + 20) {
        error_setg(errp, "pagoda: va-bits %u does not fit %u levels: the root "
                   "needs 1 to 20 index bits", s->va_bits, s->mmu_levels);
        return;
    }
    root_bits = s->va_bits - level_shift(s->mmu_levels - 1);
    if (s->mmu_levels > 2 && root_bits > 9) {
        error_setg(errp, "pagoda: with %u levels every table is fixed at 512 "
                   "entries: va-bits must be at most %u", s->mmu_levels,
                   level_shift(s->mmu_levels));
        return;
    }
    for (level = 0; level < s->mmu_levels - 1; level++) {
        s->level_bits[level] = 9;
    }
    s->level_bits[s->mmu_levels - 1] = root_bits;
    s->tlb = g_new0(PagodaTlb, 1);
}

void pagoda_mmu_reset(PagodaState *s)
{
    memset(s->tlb, 0, sizeof(*s->tlb));
}
