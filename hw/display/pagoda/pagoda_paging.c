/*
 * Pagoda GPU: paging commands.
 *
 * Owns the commands only the paging engine runs: transfers and fills
 * between segments (physical, through page lists, or through a context's
 * virtual addresses), page-table updates and copies, TLB flushes, and the
 * programming of the aperture segment's GART and of the CPU host aperture.
 *
 * Every operand comes from the command copied into the engine
 * (eng->cur.cmd) and is validated there before anything is written: a bad
 * command faults without side effects.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "pagoda_int.h"
#include "trace.h"

static uint32_t u32_at(PagodaEngine *eng, unsigned byte)
{
    return ldl_le_p((uint8_t *)eng->cur.cmd + byte);
}

static uint64_t u64_at(PagodaEngine *eng, unsigned byte)
{
    return ldq_le_p((uint8_t *)eng->cur.cmd + byte);
}

static PagodaCmdResult reject(PagodaEngine *eng, PagodaFault *f,
                              uint32_t code, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: paging command 0x%02x at 0x%" PRIx64 ": %s\n",
                  PAGODA_CMD_OP(eng->cur.cmd[0]), eng->cur.cmd_addr, why);
    f->code = code;
    f->level = 0xff;
    f->va = eng->cur.cmd_addr;
    f->access = PAGODA_ACCESS_EXECUTE;
    return PAGODA_CMD_FAULT;
}

static PagodaCmdResult bad(PagodaEngine *eng, PagodaFault *f, const char *why)
{
    return reject(eng, f, PAGODA_FAULT_BAD_COMMAND, why);
}

/*
 * Commands that write a table in one go still use up the slice's byte
 * budget: a count of entries is not bounded by the command's length, and
 * without this a slice of such commands would write gigabytes.
 */
static void spend(uint64_t *budget, uint64_t bytes)
{
    *budget -= MIN(*budget, bytes);
}

static PagodaCmdResult result(int err, PagodaFault *f, PagodaEngine *eng)
{
    if (!err) {
        return PAGODA_CMD_DONE;
    }
    f->code = err;
    f->level = 0xff;
    f->va = eng->cur.cmd_addr;
    f->access = PAGODA_ACCESS_WRITE;
    return PAGODA_CMD_FAULT;
}

/* ---- Transfers and fills ------------------------------------------------- */

/* Read a page list once, at the start of the command, into the engine. */
static int load_list(PagodaState *s, uint64_t at, uint64_t size,
                     uint64_t **list, uint32_t *npages)
{
    /*
     * Not DIV_ROUND_UP: it wraps for sizes near 2^64, and an empty list
     * would leave the span without pages, i.e. a physical address.
     */
    uint64_t n = size / PAGODA_PAGE_SIZE + !!(size % PAGODA_PAGE_SIZE), i;

    if (n > PAGODA_MAX_LIST_PAGES) {
        return PAGODA_FAULT_BAD_COMMAND;
    }
    *list = g_new(uint64_t, n);
    *npages = n;
    if (pagoda_mem_read(s, at, *list, n * sizeof(uint64_t))) {
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    for (i = 0; i < n; i++) {
        (*list)[i] = le64_to_cpu((*list)[i]);
        if ((*list)[i] & (PAGODA_PAGE_SIZE - 1)) {
            return PAGODA_FAULT_BAD_COMMAND;
        }
    }
    return 0;
}

static PagodaCmdResult cmd_transfer(PagodaState *s, PagodaEngine *eng,
                                    uint64_t *budget, PagodaFault *f)
{
    uint32_t flags = PAGODA_CMD_FLAGS(eng->cur.cmd[0]);
    uint64_t size = u64_at(eng, 24);
    PagodaSpan src = { .ctx = -1, .addr = u64_at(eng, 8) };
    PagodaSpan dst = { .ctx = -1, .addr = u64_at(eng, 16) };
    int err = 0;

    if (eng->cur.cmd_dwords != 8 ||
        flags & ~(PAGODA_TRANSFER_SRC_LIST | PAGODA_TRANSFER_DST_LIST)) {
        return bad(eng, f, "malformed TRANSFER");
    }
    /* lists are read once, by the first slice of the command */
    if (flags & PAGODA_TRANSFER_SRC_LIST && !eng->cur.src_list) {
        err = load_list(s, src.addr, size, &eng->cur.src_list, &eng->cur.src_npages);
    }
    if (!err && flags & PAGODA_TRANSFER_DST_LIST && !eng->cur.dst_list) {
        err = load_list(s, dst.addr, size, &eng->cur.dst_list, &eng->cur.dst_npages);
    }
    if (err) {
        return reject(eng, f, err, "bad page list");
    }
    if (flags & PAGODA_TRANSFER_SRC_LIST) {
        src.pages = eng->cur.src_list;
        src.npages = eng->cur.src_npages;
    }
    if (flags & PAGODA_TRANSFER_DST_LIST) {
        dst.pages = eng->cur.dst_list;
        dst.npages = eng->cur.dst_npages;
    }
    return pagoda_copy(s, &src, &dst, size, &eng->cur.cmd_progress, budget, f);
}

static PagodaCmdResult cmd_fill(PagodaState *s, PagodaEngine *eng,
                                uint64_t *budget, PagodaFault *f)
{
    PagodaSpan dst = { .ctx = -1, .addr = u64_at(eng, 8) };

    if (eng->cur.cmd_dwords != 6 || PAGODA_CMD_FLAGS(eng->cur.cmd[0])) {
        return bad(eng, f, "malformed FILL");
    }
    return pagoda_fill(s, &dst, u32_at(eng, 4), u64_at(eng, 16),
                       &eng->cur.cmd_progress, budget, f);
}

static bool virtual_flags_ok(PagodaEngine *eng, uint64_t a, uint64_t b,
                             uint64_t size)
{
    uint32_t flags = PAGODA_CMD_FLAGS(eng->cur.cmd[0]);

    if (flags & ~PAGODA_VIRTUAL_64K) {
        return false;
    }
    return !(flags & PAGODA_VIRTUAL_64K) ||
           !((a | b | size) & (64 * KiB - 1));
}

static PagodaCmdResult cmd_virtual_transfer(PagodaState *s, PagodaEngine *eng,
                                            uint64_t *budget, PagodaFault *f)
{
    PagodaSpan src = { .ctx = eng->cur.entry.context, .addr = u64_at(eng, 8) };
    PagodaSpan dst = { .ctx = eng->cur.entry.context, .addr = u64_at(eng, 16) };
    uint64_t size = u64_at(eng, 24);

    if (eng->cur.cmd_dwords != 8 ||
        !virtual_flags_ok(eng, src.addr, dst.addr, size)) {
        return bad(eng, f, "malformed VIRTUAL_TRANSFER");
    }
    return pagoda_copy(s, &src, &dst, size, &eng->cur.cmd_progress, budget, f);
}

static PagodaCmdResult cmd_virtual_fill(PagodaState *s, PagodaEngine *eng,
                                        uint64_t *budget, PagodaFault *f)
{
    PagodaSpan dst = { .ctx = eng->cur.entry.context, .addr = u64_at(eng, 8) };
    uint64_t size = u64_at(eng, 16);

    if (eng->cur.cmd_dwords != 6 || !virtual_flags_ok(eng, dst.addr, 0, size)) {
        return bad(eng, f, "malformed VIRTUAL_FILL");
    }
    return pagoda_fill(s, &dst, u32_at(eng, 4), size, &eng->cur.cmd_progress,
                       budget, f);
}

/* ---- Page tables --------------------------------------------------------- */

static bool table_range_ok(PagodaState *s, unsigned level, bool leaf64,
                           uint32_t start, uint32_t count)
{
    uint32_t entries;

    if (level >= s->mmu_levels || (leaf64 && level)) {
        return false;
    }
    entries = pagoda_mmu_level_entries(s, level, leaf64);
    return count && start < entries && count <= entries - start;
}

/*
 * Explicit entries go from the command buffer to the table in one copy
 * (they were not fetched with the command). A fault writing the table is
 * reported like the command's other table writes; one reading the buffer
 * like a fetch of the command.
 */
static PagodaCmdResult upt_copy_entries(PagodaState *s, PagodaEngine *eng,
                                        uint64_t at, uint32_t count,
                                        uint64_t *budget, PagodaFault *f)
{
    uint64_t from = eng->cur.cmd_addr + PAGODA_UPT_ENTRIES;
    uint64_t bytes = (uint64_t)count * sizeof(uint64_t);
    PagodaSpan src = pagoda_entry_span(eng, from);
    PagodaSpan dst = { .ctx = -1, .addr = at };
    PagodaCmdResult r = pagoda_copy(s, &src, &dst, bytes, &eng->cur.cmd_progress,
                                    budget, f);

    if (r == PAGODA_CMD_FAULT) {
        if (f->va >= from && f->va - from < bytes) {
            f->access = PAGODA_ACCESS_EXECUTE;
        } else {
            result(f->code, f, eng);
        }
    }
    return r;
}

/* One entry, repeated (and incremented), written straight into the table. */
static int upt_repeat(PagodaState *s, uint64_t at, uint32_t count, uint64_t pte,
                      uint64_t step)
{
    uint32_t done = 0, n, i;
    PagodaMap m;
    int err;

    while (done < count) {
        err = pagoda_mem_map(s, at + (uint64_t)done * sizeof(uint64_t),
                             (uint64_t)(count - done) * sizeof(uint64_t), true, &m);
        if (err) {
            return err;
        }
        /* tables are 8-byte aligned and mappings end on page boundaries */
        n = m.len / sizeof(uint64_t);
        if (!n) {
            pagoda_mem_unmap(s, &m, 0);
            return PAGODA_FAULT_OUT_OF_SEGMENT;
        }
        for (i = 0; i < n; i++) {
            stq_le_p(m.host + i * sizeof(uint64_t), pte);
            pte += step;
        }
        pagoda_mem_unmap(s, &m, (uint64_t)n * sizeof(uint64_t));
        done += n;
    }
    return 0;
}

static PagodaCmdResult cmd_update_page_table(PagodaState *s, PagodaEngine *eng,
                                             uint64_t *budget, PagodaFault *f)
{
    uint32_t flags = PAGODA_CMD_FLAGS(eng->cur.cmd[0]);
    uint32_t level = u32_at(eng, 4);
    uint64_t table = u64_at(eng, 8);
    uint32_t start = u32_at(eng, 16), count = u32_at(eng, 20);
    bool repeat = flags & PAGODA_UPT_REPEAT;
    bool leaf64 = flags & PAGODA_UPT_LEAF64;
    uint64_t at = table + (uint64_t)start * sizeof(uint64_t);
    uint64_t step;

    if (flags & ~(PAGODA_UPT_REPEAT | PAGODA_UPT_LEAF64 |
                  PAGODA_UPT_REPEAT_INCREMENT) ||
        (flags & PAGODA_UPT_REPEAT_INCREMENT && !repeat) ||
        !table_range_ok(s, level, leaf64, start, count) ||
        eng->cur.cmd_dwords != 6 + 2 * (repeat ? 1 : (uint64_t)count)) {
        return bad(eng, f, "malformed UPDATE_PAGE_TABLE");
    }
    if (!eng->cur.cmd_progress) {
        trace_pagoda_update_page_table(level, table, start, count, repeat);
    }
    if (!repeat) {
        return upt_copy_entries(s, eng, at, count, budget, f);
    }
    spend(budget, count * sizeof(uint64_t));
    step = flags & PAGODA_UPT_REPEAT_INCREMENT ?
           (leaf64 ? 64 * KiB : 1ull << (12 + 9 * level)) >> PAGODA_PTE_ADDR_SHIFT
                                                          << PAGODA_PTE_FRAME_SHIFT : 0;
    return result(upt_repeat(s, at, count, u64_at(eng, PAGODA_UPT_ENTRIES), step),
                  f, eng);
}

static PagodaCmdResult cmd_copy_ptes(PagodaState *s, PagodaEngine *eng,
                                     uint64_t *budget, PagodaFault *f)
{
    uint32_t count = u32_at(eng, 4);
    uint32_t src_idx = u32_at(eng, 24), dst_idx = u32_at(eng, 28);
    uint32_t max = PAGODA_COPY_PTES_MAX;
    PagodaSpan src = { .ctx = -1,
                       .addr = u64_at(eng, 8) + src_idx * sizeof(uint64_t) };
    PagodaSpan dst = { .ctx = -1,
                       .addr = u64_at(eng, 16) + dst_idx * sizeof(uint64_t) };

    if (eng->cur.cmd_dwords != 8 || PAGODA_CMD_FLAGS(eng->cur.cmd[0]) || !count ||
        count > max || src_idx > max - count || dst_idx > max - count) {
        return bad(eng, f, "malformed COPY_PTES");
    }
    return pagoda_copy(s, &src, &dst, count * sizeof(uint64_t),
                       &eng->cur.cmd_progress, budget, f);
}

static PagodaCmdResult cmd_flush_tlb(PagodaState *s, PagodaEngine *eng,
                                     PagodaFault *f)
{
    uint32_t flags = PAGODA_CMD_FLAGS(eng->cur.cmd[0]);
    uint32_t ctx = u32_at(eng, 4);

    if (eng->cur.cmd_dwords != 6 || flags & ~PAGODA_FLUSH_ALL_CONTEXTS ||
        (!(flags & PAGODA_FLUSH_ALL_CONTEXTS) && ctx >= PAGODA_NUM_CONTEXTS)) {
        return bad(eng, f, "malformed FLUSH_TLB");
    }
    pagoda_tlb_flush(s, flags & PAGODA_FLUSH_ALL_CONTEXTS ? -1 : (int)ctx,
                     u64_at(eng, 8), u64_at(eng, 16));
    return PAGODA_CMD_DONE;
}

/* ---- Apertures ----------------------------------------------------------- */

static PagodaCmdResult cmd_map_aperture(PagodaState *s, PagodaEngine *eng,
                                        PagodaFault *f)
{
    uint32_t first = u32_at(eng, 4), count = u32_at(eng, 8), i;
    g_autofree uint64_t *pages = NULL;

    if (PAGODA_CMD_FLAGS(eng->cur.cmd[0]) || !count ||
        eng->cur.cmd_dwords != 4 + 2 * (uint64_t)count) {
        return bad(eng, f, "malformed MAP_APERTURE");
    }
    pages = g_new(uint64_t, count);
    for (i = 0; i < count; i++) {
        pages[i] = u64_at(eng, 16 + 8 * i);
    }
    return result(pagoda_gart_write(s, first, count, pages), f, eng);
}

static PagodaCmdResult cmd_unmap_aperture(PagodaState *s, PagodaEngine *eng,
                                          uint64_t *budget, PagodaFault *f)
{
    if (PAGODA_CMD_FLAGS(eng->cur.cmd[0]) || eng->cur.cmd_dwords != 4 ||
        !u32_at(eng, 8)) {
        return bad(eng, f, "malformed UNMAP_APERTURE");
    }
    spend(budget, u32_at(eng, 8) * sizeof(uint64_t));
    return result(pagoda_gart_write(s, u32_at(eng, 4), u32_at(eng, 8), NULL),
                  f, eng);
}

/*
 * A host aperture command completes once BAR4 shows its mappings: the
 * memory map is updated in a bottom half of its own (pagoda_mem.c), which
 * kicks the engines when done.
 */
static PagodaCmdResult host_aperture_wait(PagodaState *s, PagodaEngine *eng)
{
    if (s->host_aperture_applied < eng->cur.host_aperture_wait) {
        return PAGODA_CMD_WAIT;
    }
    eng->cur.host_aperture_wait = 0;
    return PAGODA_CMD_DONE;
}

static PagodaCmdResult cmd_map_host_aperture(PagodaState *s, PagodaEngine *eng,
                                             PagodaFault *f)
{
    uint32_t seg = u32_at(eng, 4), count = u32_at(eng, 8), i;
    const unsigned pages_at = 12, seg_pages_at = 12 + 4 * count;

    if (eng->cur.host_aperture_wait) {
        return host_aperture_wait(s, eng);
    }
    if (PAGODA_CMD_FLAGS(eng->cur.cmd[0]) || !count ||
        eng->cur.cmd_dwords != 3 + 2 * (uint64_t)count) {
        return bad(eng, f, "malformed MAP_HOST_APERTURE");
    }
    /* validate every pair before changing any mapping */
    for (i = 0; i < count; i++) {
        if (!pagoda_host_aperture_valid(s, u32_at(eng, pages_at + 4 * i), seg,
                                        u32_at(eng, seg_pages_at + 4 * i))) {
            return reject(eng, f, PAGODA_FAULT_OUT_OF_SEGMENT,
                          "host aperture mapping out of range");
        }
    }
    for (i = 0; i < count; i++) {
        pagoda_host_aperture_map(s, u32_at(eng, pages_at + 4 * i), seg,
                                 u32_at(eng, seg_pages_at + 4 * i));
    }
    eng->cur.host_aperture_wait = pagoda_host_aperture_request(s);
    return host_aperture_wait(s, eng);
}

static PagodaCmdResult cmd_unmap_host_aperture(PagodaState *s,
                                               PagodaEngine *eng,
                                               PagodaFault *f)
{
    uint32_t count = u32_at(eng, 4), i;

    if (eng->cur.host_aperture_wait) {
        return host_aperture_wait(s, eng);
    }
    if (PAGODA_CMD_FLAGS(eng->cur.cmd[0]) || !count ||
        eng->cur.cmd_dwords != 2 + (uint64_t)count) {
        return bad(eng, f, "malformed UNMAP_HOST_APERTURE");
    }
    for (i = 0; i < count; i++) {
        if (u32_at(eng, 8 + 4 * i) >= s->host_aperture_pages) {
            return bad(eng, f, "host aperture page out of range");
        }
    }
    for (i = 0; i < count; i++) {
        pagoda_host_aperture_unmap(s, u32_at(eng, 8 + 4 * i));
    }
    eng->cur.host_aperture_wait = pagoda_host_aperture_request(s);
    return host_aperture_wait(s, eng);
}

PagodaCmdResult pagoda_paging_command(PagodaState *s, PagodaEngine *eng,
                                      uint64_t *budget, PagodaFault *f)
{
    switch (PAGODA_CMD_OP(eng->cur.cmd[0])) {
    case PAGODA_CMD_TRANSFER:
        return cmd_transfer(s, eng, budget, f);
    case PAGODA_CMD_FILL:
        return cmd_fill(s, eng, budget, f);
    case PAGODA_CMD_VIRTUAL_TRANSFER:
        return cmd_virtual_transfer(s, eng, budget, f);
    case PAGODA_CMD_VIRTUAL_FILL:
        return cmd_virtual_fill(s, eng, budget, f);
    case PAGODA_CMD_UPDATE_PAGE_TABLE:
        return cmd_update_page_table(s, eng, budget, f);
    case PAGODA_CMD_COPY_PTES:
        return cmd_copy_ptes(s, eng, budget, f);
    case PAGODA_CMD_FLUSH_TLB:
        return cmd_flush_tlb(s, eng, f);
    case PAGODA_CMD_MAP_APERTURE:
        return cmd_map_aperture(s, eng, f);
    case PAGODA_CMD_UNMAP_APERTURE:
        return cmd_unmap_aperture(s, eng, budget, f);
    case PAGODA_CMD_MAP_HOST_APERTURE:
        return cmd_map_host_aperture(s, eng, f);
    case PAGODA_CMD_UNMAP_HOST_APERTURE:
        return cmd_unmap_host_aperture(s, eng, f);
    }
    return bad(eng, f, "unknown paging command");
}
