/*
 * Pagoda GPU: the command processor.
 *
 * Owns the engines: their ring registers, the scheduling of ring entries,
 * command fetch and decode, the commands every engine runs (NOP, fences)
 * and the render commands. Paging commands are in pagoda_paging.c.
 *
 * A DOORBELL write runs a first slice of its engine on the vCPU thread
 * that rang, up to a job's worth (a fence, a no-op job, a batch of
 * page-table updates complete there and their interrupt is raised before
 * the vCPU returns to the guest), without QEMU's big lock, holding the
 * device's own (PagodaState.lock): the doorbells of two GPUs on two vCPUs
 * run at once, and the main loop and the other vCPU go on meanwhile; the
 * interrupts raised there are signalled once the big lock is taken back.
 * What is left goes to a bottom half in the main loop. Each
 * engine gets a slice per run of the bottom half (a number of commands
 * and a byte budget) and the bottom half reschedules itself while work
 * remains, so a buffer that jumps to itself or a huge fill cannot stall
 * QEMU, MMIO or the vCPU. DMA can only reach guest RAM and VRAM
 * (pagoda_mem.c), never MMIO: a slice needs no lock but the device's. The
 * bottom half carries the device's re-entrancy guard; the DOORBELL
 * registers, regions of their own in BAR0, do not (their slice, off the
 * big lock, would block every other register access of the device).
 *
 * Every ring entry is retired exactly once, in order: completed, aborted
 * by a fault, or skipped because its context is halted. Retiring writes
 * its fence to ENG_FENCE and, if asked, raises the engine's interrupt.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "pagoda_int.h"
#include "trace.h"

#define SLICE_COMMANDS          256
#define SLICE_BYTES             (32 * 1024 * 1024)
/*
 * The slice a doorbell runs on the vCPU thread, off the big lock (it
 * delays that vCPU only): a job, such as a job's worth of 4 KiB
 * page-table writes.
 */
#define DOORBELL_COMMANDS       SLICE_COMMANDS
#define DOORBELL_BYTES          (4 * 1024 * 1024)
#define WAIT_POLL_NS            (100 * 1000)

static bool engine_idle(PagodaEngine *eng)
{
    return !eng->cur.active && eng->head == eng->kicked_tail;
}

void pagoda_cp_kick(PagodaState *s)
{
    qemu_bh_schedule(s->cp_bh);
}

/* The page lists of a TRANSFER go with it. */
void pagoda_cursor_drop_lists(PagodaCursor *cur)
{
    g_clear_pointer(&cur->src_list, g_free);
    g_clear_pointer(&cur->dst_list, g_free);
    cur->src_npages = cur->dst_npages = 0;
}

/* ---- Ring entries -------------------------------------------------------- */

/* ENG_FENCE to the fence writeback address, if the driver gave one. */
static void write_back_fence(PagodaState *s, PagodaEngine *eng)
{
    uint64_t fence = cpu_to_le64(eng->fence);

    if (eng->fence_wb &&
        pagoda_mem_write(s, eng->fence_wb, &fence, sizeof(fence))) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: fence writeback "
                      "to 0x%" PRIx64 " failed\n", eng->id, eng->fence_wb);
    }
}

/*
 * How the entry at HEAD ended (a PAGODA_RING_STATUS_* value), to its ring
 * slot when it asked for it.
 */
static void write_status(PagodaState *s, PagodaEngine *eng, uint32_t status)
{
    uint64_t at = eng->ring_base + PAGODA_RING_STATUS +
                  (uint64_t)eng->head * PAGODA_RING_ENTRY_SIZE;
    uint32_t le = cpu_to_le32(status);

    if (eng->cur.entry.flags & PAGODA_RING_FLAG_STATUS &&
        pagoda_mem_write(s, at, &le, sizeof(le))) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: status of ring "
                      "entry %u not written\n", eng->id, eng->head);
    }
}

/*
 * Retire the entry at HEAD with @status (PAGODA_RING_STATUS_*), or 0 for a
 * malformed one, whose fence is not to be trusted.
 */
static void retire(PagodaState *s, PagodaEngine *eng, uint32_t status)
{
    trace_pagoda_retire(eng->id, eng->head, eng->cur.entry.fence);
    if (status) {
        write_status(s, eng, status);
        eng->fence = eng->cur.entry.fence;
        write_back_fence(s, eng);
    }
    eng->head = (eng->head + 1) & (eng->ring_size - 1);
    eng->retired_uncompleted |= status != PAGODA_RING_STATUS_COMPLETED;
    eng->cur.active = false;
    eng->cur.cmd_active = false;
    eng->cur.waiting = false;
    pagoda_cursor_drop_lists(&eng->cur);
    if (eng->cur.entry.flags & PAGODA_RING_FLAG_INTERRUPT) {
        pagoda_raise_irq(s, PAGODA_INT_ENGINE(eng->id));
    }
}

static const char *check_entry(PagodaEngine *eng, const PagodaRingEntry *e,
                               uint64_t reserved)
{
    if (reserved) {
        return "reserved field not zero";
    }
    if (!e->length || e->length % 4 || e->length > PAGODA_RING_MAX_LENGTH) {
        return "bad length";
    }
    if (e->context >= PAGODA_NUM_CONTEXTS) {
        return "context out of range";
    }
    if (e->flags & ~(PAGODA_RING_FLAG_VIRTUAL | PAGODA_RING_FLAG_INTERRUPT |
                     PAGODA_RING_FLAG_STATUS)) {
        return "unknown flags";
    }
    if (e->flags & PAGODA_RING_FLAG_VIRTUAL ?
        !(eng->caps & PAGODA_ENG_CAPS_VIRTUAL) :
        !(eng->caps & PAGODA_ENG_CAPS_PHYSICAL)) {
        return "addressing mode not supported by this engine";
    }
    return NULL;
}

/*
 * Whether a cursor that came in a migration stream is one this engine
 * could have made: its entry passes the fetch's checks, the cursor and
 * its CALL stack lie in their buffers, a command being run is whole.
 */
bool pagoda_cursor_valid(PagodaEngine *eng)
{
    const PagodaCursor *cur = &eng->cur;
    uint32_t i;

    if (!cur->active) {
        return !cur->cmd_active;
    }
    if (check_entry(eng, &cur->entry, 0) || cur->depth > PAGODA_CALL_DEPTH ||
        cur->pos > cur->end) {
        return false;
    }
    for (i = 0; i < cur->depth; i++) {
        if (cur->stack[i].pos > cur->stack[i].end) {
            return false;
        }
    }
    return !cur->cmd_active ||
           (cur->cmd_dwords && PAGODA_CMD_DWORDS(cur->cmd[0]) == cur->cmd_dwords);
}

/* Copy the entry at HEAD into the engine and validate it. */
static bool fetch_entry(PagodaState *s, PagodaEngine *eng)
{
    uint8_t raw[PAGODA_RING_ENTRY_SIZE];
    uint64_t at = eng->ring_base + (uint64_t)eng->head * PAGODA_RING_ENTRY_SIZE;
    PagodaRingEntry *e = &eng->cur.entry;
    PagodaFault f = { .level = 0xff, .va = at, .access = PAGODA_ACCESS_READ };
    const char *why = NULL;

    memset(e, 0, sizeof(*e));
    f.code = pagoda_mem_read(s, at, raw, sizeof(raw));
    if (!f.code) {
        e->addr = ldq_le_p(raw + PAGODA_RING_ADDR);
        e->length = ldl_le_p(raw + PAGODA_RING_LENGTH);
        e->context = lduw_le_p(raw + PAGODA_RING_CONTEXT);
        e->flags = lduw_le_p(raw + PAGODA_RING_FLAGS);
        e->fence = ldq_le_p(raw + PAGODA_RING_FENCE);
        why = check_entry(eng, e, ldq_le_p(raw + PAGODA_RING_RESERVED));
        f.code = why ? PAGODA_FAULT_BAD_RING_ENTRY : 0;
    }
    if (f.code) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: engine %u ring entry %u at 0x%" PRIx64 ": %s\n",
                      eng->id, eng->head, at, why ?: "unreadable");
        /* nothing in a malformed entry can be trusted: halt no context */
        f.code = PAGODA_FAULT_BAD_RING_ENTRY;
        e->context = UINT16_MAX;
        e->flags = 0;
        pagoda_fault(s, eng, &f);
        retire(s, eng, 0);
        return false;
    }
    eng->cur.active = true;
    eng->cur.pos = e->addr;
    eng->cur.end = e->addr + e->length;
    eng->cur.depth = 0;
    eng->cur.cmd_active = false;
    return true;
}

/* ---- Commands ------------------------------------------------------------ */

/*
 * Dwords of a command copied into eng->cur.cmd: all of them, except the
 * entries of an UPDATE_PAGE_TABLE, which are data that the command copies
 * from the buffer to the table itself (once).
 */
static uint32_t cmd_fetch_dwords(uint32_t header)
{
    uint32_t dwords = PAGODA_CMD_DWORDS(header);

    if (PAGODA_CMD_OP(header) == PAGODA_CMD_UPDATE_PAGE_TABLE &&
        !(PAGODA_CMD_FLAGS(header) & PAGODA_UPT_REPEAT)) {
        return MIN(dwords, PAGODA_UPT_ENTRIES / 4);
    }
    return dwords;
}

PagodaSpan pagoda_entry_span(PagodaEngine *eng, uint64_t addr)
{
    return (PagodaSpan) {
        .ctx = eng->cur.entry.flags & PAGODA_RING_FLAG_VIRTUAL ? eng->cur.entry.context : -1,
        .addr = addr,
    };
}

static PagodaCmdResult bad_command(PagodaEngine *eng, PagodaFault *f,
                                   const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: engine %u, command 0x%02x at 0x%" PRIx64 ": %s\n",
                  eng->id, PAGODA_CMD_OP(eng->cur.cmd[0]), eng->cur.cmd_addr, why);
    f->code = PAGODA_FAULT_BAD_COMMAND;
    f->level = 0xff;
    f->va = eng->cur.cmd_addr;
    f->access = PAGODA_ACCESS_EXECUTE;
    return PAGODA_CMD_FAULT;
}

static uint64_t cmd_u64(PagodaEngine *eng, unsigned byte)
{
    return ldq_le_p((uint8_t *)eng->cur.cmd + byte);
}

static uint32_t cmd_u32(PagodaEngine *eng, unsigned byte)
{
    return ldl_le_p((uint8_t *)eng->cur.cmd + byte);
}

/*
 * Fetch the command at eng->cur.pos into eng->cur.cmd, each byte read once: a
 * first read takes the header with what follows it in the same 4 KiB
 * page, up to FETCH_FIRST bytes (most commands whole); the rest of a
 * longer command follows in a second read.
 */
#define FETCH_FIRST     32

static PagodaCmdResult fetch_command(PagodaState *s, PagodaEngine *eng,
                                     PagodaFault *f)
{
    PagodaSpan sp = pagoda_entry_span(eng, eng->cur.pos);
    uint64_t first = MIN(MIN(eng->cur.end - eng->cur.pos, FETCH_FIRST),
                         PAGODA_PAGE_SIZE - (eng->cur.pos & (PAGODA_PAGE_SIZE - 1)));
    uint32_t header, dwords, want;

    eng->cur.cmd_addr = eng->cur.pos;
    first &= ~3ull;
    if (first < 4) {
        eng->cur.cmd[0] = 0;
        return bad_command(eng, f, "truncated command");
    }
    if (pagoda_span_rw(s, &sp, eng->cur.cmd, first, PAGODA_ACCESS_EXECUTE, f)) {
        eng->cur.cmd[0] = 0;
        return PAGODA_CMD_FAULT;
    }
    eng->cur.cmd[0] = header = le32_to_cpu(eng->cur.cmd[0]);
    dwords = PAGODA_CMD_DWORDS(header);
    if (!dwords || (uint64_t)dwords * 4 > eng->cur.end - eng->cur.pos) {
        return bad_command(eng, f, "length beyond the buffer");
    }
    want = cmd_fetch_dwords(header) * 4;
    if (want > first) {
        PagodaSpan rest = pagoda_entry_span(eng, eng->cur.pos + first);

        if (pagoda_span_rw(s, &rest, (uint8_t *)eng->cur.cmd + first, want - first,
                           PAGODA_ACCESS_EXECUTE, f)) {
            return PAGODA_CMD_FAULT;
        }
    }
    eng->cur.cmd_dwords = dwords;
    eng->cur.cmd_active = true;
    eng->cur.cmd_progress = 0;
    eng->cur.cmd_crc = 0;
    /* page lists belong to the TRANSFER that loaded them, not to the buffer */
    pagoda_cursor_drop_lists(&eng->cur);
    return PAGODA_CMD_DONE;
}

static bool cmd_has_dwords(PagodaEngine *eng, uint32_t want)
{
    return eng->cur.cmd_dwords == want;
}

static PagodaCmdResult cmd_signal_fence(PagodaState *s, PagodaEngine *eng,
                                        PagodaFault *f)
{
    PagodaSpan sp = pagoda_entry_span(eng, cmd_u64(eng, 8));
    uint64_t value = cpu_to_le64(cmd_u64(eng, 16));

    if (!cmd_has_dwords(eng, 6)) {
        return bad_command(eng, f, "SIGNAL_FENCE takes 6 dwords");
    }
    if (pagoda_span_rw(s, &sp, &value, 8, PAGODA_ACCESS_WRITE, f)) {
        return PAGODA_CMD_FAULT;
    }
    if (PAGODA_CMD_FLAGS(eng->cur.cmd[0]) & PAGODA_SIGNAL_INTERRUPT) {
        pagoda_raise_irq(s, PAGODA_INT_ENGINE(eng->id));
    }
    return PAGODA_CMD_DONE;
}

static PagodaCmdResult cmd_wait_fence(PagodaState *s, PagodaEngine *eng,
                                      PagodaFault *f)
{
    PagodaSpan sp = pagoda_entry_span(eng, cmd_u64(eng, 8));
    uint64_t value;

    if (!cmd_has_dwords(eng, 6)) {
        return bad_command(eng, f, "WAIT_FENCE takes 6 dwords");
    }
    if (pagoda_span_rw(s, &sp, &value, 8, PAGODA_ACCESS_READ, f)) {
        return PAGODA_CMD_FAULT;
    }
    return le64_to_cpu(value) >= cmd_u64(eng, 16) ? PAGODA_CMD_DONE
                                                   : PAGODA_CMD_WAIT;
}

static PagodaCmdResult cmd_branch(PagodaEngine *eng, bool call, PagodaFault *f)
{
    uint32_t length = cmd_u32(eng, 4);
    uint64_t target = cmd_u64(eng, 8);

    if (!cmd_has_dwords(eng, 4)) {
        return bad_command(eng, f, "JUMP/CALL take 4 dwords");
    }
    if (!length || length % 4 || length > PAGODA_RING_MAX_LENGTH) {
        return bad_command(eng, f, "bad branch length");
    }
    if (call) {
        if (eng->cur.depth == PAGODA_CALL_DEPTH) {
            return bad_command(eng, f, "CALL nested too deep");
        }
        eng->cur.stack[eng->cur.depth].pos = eng->cur.pos;
        eng->cur.stack[eng->cur.depth].end = eng->cur.end;
        eng->cur.depth++;
    }
    eng->cur.pos = target;
    eng->cur.end = target + length;
    return PAGODA_CMD_DONE;
}

static PagodaCmdResult render_command(PagodaState *s, PagodaEngine *eng,
                                      uint64_t *budget, PagodaFault *f)
{
    PagodaSpan src, dst;
    uint32_t count, crc;
    PagodaCmdResult r;

    switch (PAGODA_CMD_OP(eng->cur.cmd[0])) {
    case PAGODA_CMD_COPY:
        if (!cmd_has_dwords(eng, 8)) {
            return bad_command(eng, f, "COPY takes 8 dwords");
        }
        src = pagoda_entry_span(eng, cmd_u64(eng, 8));
        dst = pagoda_entry_span(eng, cmd_u64(eng, 16));
        return pagoda_copy(s, &src, &dst, cmd_u64(eng, 24), &eng->cur.cmd_progress,
                           budget, f);
    case PAGODA_CMD_FILL32:
        if (!cmd_has_dwords(eng, 6)) {
            return bad_command(eng, f, "FILL32 takes 6 dwords");
        }
        dst = pagoda_entry_span(eng, cmd_u64(eng, 8));
        return pagoda_fill(s, &dst, cmd_u32(eng, 4), cmd_u64(eng, 16),
                           &eng->cur.cmd_progress, budget, f);
    case PAGODA_CMD_WRITE_IMM:
        count = cmd_u32(eng, 4);
        if (eng->cur.cmd_dwords < 4 || count != eng->cur.cmd_dwords - 4) {
            return bad_command(eng, f, "WRITE_IMM length does not match count");
        }
        dst = pagoda_entry_span(eng, cmd_u64(eng, 8));
        return pagoda_span_rw(s, &dst, eng->cur.cmd + 4, count * 4ull,
                              PAGODA_ACCESS_WRITE, f) ? PAGODA_CMD_FAULT
                                                      : PAGODA_CMD_DONE;
    case PAGODA_CMD_CRC32:
        if (!cmd_has_dwords(eng, 8)) {
            return bad_command(eng, f, "CRC32 takes 8 dwords");
        }
        src = pagoda_entry_span(eng, cmd_u64(eng, 8));
        r = pagoda_crc32(s, &src, cmd_u64(eng, 16), &eng->cur.cmd_crc,
                         &eng->cur.cmd_progress, budget, f);
        if (r != PAGODA_CMD_DONE) {
            return r;
        }
        dst = pagoda_entry_span(eng, cmd_u64(eng, 24));
        crc = cpu_to_le32(eng->cur.cmd_crc);
        return pagoda_span_rw(s, &dst, &crc, 4, PAGODA_ACCESS_WRITE, f) ?
               PAGODA_CMD_FAULT : PAGODA_CMD_DONE;
    case PAGODA_CMD_JUMP:
        return cmd_branch(eng, false, f);
    case PAGODA_CMD_CALL:
        return cmd_branch(eng, true, f);
    }
    return bad_command(eng, f, "unknown render command");
}

static bool is_paging_op(uint32_t op)
{
    return op >= PAGODA_CMD_TRANSFER && op <= PAGODA_CMD_UNMAP_HOST_APERTURE;
}

static bool is_render_op(uint32_t op)
{
    return op >= PAGODA_CMD_COPY && op <= PAGODA_CMD_CALL;
}

static PagodaCmdResult run_command(PagodaState *s, PagodaEngine *eng,
                                   uint64_t *budget, PagodaFault *f)
{
    PagodaCmdResult r;
    uint32_t op;

    if (!eng->cur.cmd_active) {
        r = fetch_command(s, eng, f);
        if (r != PAGODA_CMD_DONE) {
            return r;
        }
        eng->cur.pos += eng->cur.cmd_dwords * 4ull;
    }
    op = PAGODA_CMD_OP(eng->cur.cmd[0]);
    switch (op) {
    case PAGODA_CMD_NOP:
        return PAGODA_CMD_DONE;
    case PAGODA_CMD_SIGNAL_FENCE:
        return cmd_signal_fence(s, eng, f);
    case PAGODA_CMD_WAIT_FENCE:
        return cmd_wait_fence(s, eng, f);
    }
    if (is_paging_op(op) && (eng->caps & PAGODA_ENG_CAPS_PAGING)) {
        return pagoda_paging_command(s, eng, budget, f);
    }
    if (is_render_op(op) && (eng->caps & PAGODA_ENG_CAPS_RENDER)) {
        return render_command(s, eng, budget, f);
    }
    return bad_command(eng, f, "command not supported by this engine");
}

/* Advance past a finished command; returns true when the entry is done. */
static bool command_done(PagodaEngine *eng)
{
    eng->cur.cmd_active = false;
    while (eng->cur.pos == eng->cur.end) {
        if (!eng->cur.depth) {
            return true;
        }
        eng->cur.depth--;
        eng->cur.pos = eng->cur.stack[eng->cur.depth].pos;
        eng->cur.end = eng->cur.stack[eng->cur.depth].end;
    }
    return false;
}

/*
 * Run one slice of @eng: at most @max_commands commands and @budget bytes.
 * Returns true if it has more to run right away, false if it is idle or
 * waiting on a fence.
 */
static bool engine_run_slice(PagodaState *s, PagodaEngine *eng, unsigned max_commands,
                             uint64_t budget)
{
    unsigned commands;

    eng->cur.waiting = false;
    for (commands = 0; commands < max_commands && budget; commands++) {
        PagodaFault f = { 0 };

        if (!eng->cur.active) {
            if (eng->head == eng->kicked_tail) {
                return false;
            }
            if (!fetch_entry(s, eng)) {
                continue;
            }
            if (s->ctx[eng->cur.entry.context].halted) {
                trace_pagoda_skip_halted(eng->id, eng->cur.entry.context,
                                         eng->cur.entry.fence);
                retire(s, eng, PAGODA_RING_STATUS_SKIPPED);
                continue;
            }
        }
        switch (run_command(s, eng, &budget, &f)) {
        case PAGODA_CMD_DONE:
            if (command_done(eng)) {
                retire(s, eng, PAGODA_RING_STATUS_COMPLETED);
            }
            break;
        case PAGODA_CMD_YIELD:
            return true;
        case PAGODA_CMD_WAIT:
            eng->cur.waiting = true;
            return false;
        case PAGODA_CMD_FAULT:
            pagoda_fault(s, eng, &f);
            retire(s, eng, PAGODA_RING_STATUS_FAULTED);
            break;
        }
    }
    return !engine_idle(eng);
}

static void cp_run(void *opaque)
{
    PagodaState *s = opaque;
    bool more = false, waiting = false;
    unsigned e;

    QEMU_LOCK_GUARD(&s->lock);
    /*
     * A stopped VM (migration, pause) must not see its memory change: the
     * engines resume when it runs again (cp_vm_state_change()).
     */
    if (!runstate_is_running()) {
        return;
    }

    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        more |= engine_run_slice(s, &s->engine[e], SLICE_COMMANDS, SLICE_BYTES);
        waiting |= s->engine[e].cur.waiting;
    }
    if (more) {
        qemu_bh_schedule(s->cp_bh);
    } else if (waiting) {
        /* the awaited value may come from the CPU: poll for it */
        timer_mod(s->cp_wait_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + WAIT_POLL_NS);
    }
}

/*
 * DOORBELL_POLL: the writer reads the fence when the write returns, so the
 * engine interrupt the slice raised is dropped when the slice left the
 * engine idle with every entry it retired completed. A faulted or skipped
 * entry (whose job the driver finishes from its interrupt), work left
 * over, or an engine interrupt raised before the slice and not yet sent
 * keep it.
 */
static void cp_doorbell_poll(PagodaState *s, PagodaEngine *eng, uint32_t deferred_before,
                             bool more)
{
    uint32_t bit = PAGODA_INT_ENGINE(eng->id);

    if (more || eng->retired_uncompleted || (deferred_before & bit) ||
        !(s->irq_deferred & bit)) {
        return;
    }
    s->irq_deferred &= ~bit;
    trace_pagoda_doorbell_polled(eng->id, eng->fence);
}

/*
 * A DOORBELL write, with the big lock: the engine's first slice on the
 * caller's thread (the vCPU that rang, or qtest), unless the VM is stopped
 * (cp_run()). From a CPU it runs with the device's lock only (DOC above):
 * the big lock is let go first, and taken back before the device's, in
 * that order, to signal the interrupts the slice raised. From anything
 * else (another device's DMA, qtest: no CPU's attributes) it keeps the big
 * lock: a device whose handler or bottom half is writing here must not see
 * the big lock go from under it. The bottom half takes over whatever is
 * left or awaited. A device unrealized meanwhile is left alone.
 */
static MemTxResult cp_doorbell_write(void *opaque, hwaddr addr, uint64_t val,
                                     unsigned size, MemTxAttrs attrs)
{
    PagodaDoorbell *db = opaque;
    PagodaState *s = db->s;
    PagodaEngine *eng = db->eng;
    bool off_bql = !attrs.unspecified;
    bool more = true;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        trace_pagoda_doorbell(eng->id, eng->head, eng->tail);
        eng->kicked_tail = eng->tail;
        if (!runstate_is_running()) {
            pagoda_cp_kick(s);
            return MEMTX_OK;
        }
    }
    if (off_bql) {
        bql_unlock();
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (!s->gone) {
            uint32_t deferred_before = s->irq_deferred;

            s->in_doorbell = true;
            eng->retired_uncompleted = false;
            more = engine_run_slice(s, eng, DOORBELL_COMMANDS, DOORBELL_BYTES) ||
                   eng->cur.waiting;
            s->in_doorbell = false;
            if (val & PAGODA_DOORBELL_POLL) {
                cp_doorbell_poll(s, eng, deferred_before, more);
            }
        }
    }
    if (off_bql) {
        bql_lock();
    }
    QEMU_LOCK_GUARD(&s->lock);
    if (s->gone) {
        return MEMTX_OK;
    }
    pagoda_flush_irq(s);
    if (more) {
        pagoda_cp_kick(s);
    }
    return MEMTX_OK;
}

static MemTxResult cp_doorbell_read(void *opaque, hwaddr addr, uint64_t *val,
                                    unsigned size, MemTxAttrs attrs)
{
    PagodaDoorbell *db = opaque;

    QEMU_LOCK_GUARD(&db->s->lock);
    *val = pagoda_engine_read(db->s, db->eng, PAGODA_ENG_DOORBELL);
    return MEMTX_OK;
}

static const MemoryRegionOps cp_doorbell_ops = {
    .read_with_attrs = cp_doorbell_read,
    .write_with_attrs = cp_doorbell_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static void cp_wait_timeout(void *opaque)
{
    pagoda_cp_kick(opaque);
}

static void cp_vm_state_change(void *opaque, bool running, RunState state)
{
    if (running) {
        pagoda_cp_kick(opaque);
    }
}

/* ---- Registers ----------------------------------------------------------- */

uint32_t pagoda_engine_read(PagodaState *s, PagodaEngine *eng, hwaddr reg)
{
    switch (reg) {
    case PAGODA_ENG_RING_BASE_LO:     return eng->ring_base;
    case PAGODA_ENG_RING_BASE_HI:     return eng->ring_base >> 32;
    case PAGODA_ENG_RING_SIZE:        return eng->ring_size;
    case PAGODA_ENG_RING_HEAD:        return eng->head;
    case PAGODA_ENG_RING_TAIL:        return eng->tail;
    case PAGODA_ENG_FENCE_LO:         return eng->fence;
    case PAGODA_ENG_FENCE_HI:         return eng->fence >> 32;
    case PAGODA_ENG_ABORTED_FENCE_LO: return eng->aborted_fence;
    case PAGODA_ENG_ABORTED_FENCE_HI: return eng->aborted_fence >> 32;
    case PAGODA_ENG_STATUS:
        return (engine_idle(eng) ? 0 : PAGODA_ENG_STATUS_BUSY) |
               (eng->cur.waiting ? PAGODA_ENG_STATUS_WAITING : 0);
    case PAGODA_ENG_CAPS:             return eng->caps;
    case PAGODA_ENG_FENCE_WB_LO:      return eng->fence_wb;
    case PAGODA_ENG_FENCE_WB_HI:      return eng->fence_wb >> 32;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: read of unknown "
                  "register 0x%" HWADDR_PRIx "\n", eng->id, reg);
    return 0;
}

static bool ring_writable(PagodaEngine *eng)
{
    if (!engine_idle(eng)) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: ring reprogrammed "
                      "while busy, ignored\n", eng->id);
        return false;
    }
    return true;
}

void pagoda_engine_write(PagodaState *s, PagodaEngine *eng, hwaddr reg,
                         uint32_t val)
{
    switch (reg) {
    case PAGODA_ENG_RING_BASE_LO:
        if (ring_writable(eng)) {
            /* rings are 4 KiB aligned: the low bits do not exist */
            eng->ring_base = deposit64(eng->ring_base, 0, 32,
                                       val & ~(uint32_t)(PAGODA_PAGE_SIZE - 1));
        }
        return;
    case PAGODA_ENG_RING_BASE_HI:
        if (ring_writable(eng)) {
            eng->ring_base = deposit64(eng->ring_base, 32, 32, val);
        }
        return;
    case PAGODA_ENG_RING_SIZE:
        if (val > PAGODA_RING_MAX_ENTRIES || (val & (val - 1))) {
            qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: ring size %u "
                          "is not a power of two up to %u\n", eng->id, val,
                          PAGODA_RING_MAX_ENTRIES);
            return;
        }
        if (ring_writable(eng)) {
            eng->ring_size = val;
            eng->head = eng->tail = eng->kicked_tail = 0;
        }
        return;
    case PAGODA_ENG_RING_TAIL:
        if (val >= eng->ring_size) {
            qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: tail %u beyond "
                          "the ring (%u entries)\n", eng->id, val, eng->ring_size);
            return;
        }
        eng->tail = val;
        return;
    case PAGODA_ENG_FENCE_WB_LO:
        if (val & 7) {
            qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: fence writeback "
                          "address 0x%x not 8-byte aligned\n", eng->id, val);
            return;
        }
        eng->fence_wb = deposit64(eng->fence_wb, 0, 32, val);
        return;
    case PAGODA_ENG_FENCE_WB_HI:
        eng->fence_wb = deposit64(eng->fence_wb, 32, 32, val);
        return;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "pagoda: engine %u: write to read-only or "
                  "unknown register 0x%" HWADDR_PRIx "\n", eng->id, reg);
}

/* ---- Reset and lifecycle ------------------------------------------------- */

/* Fence of the last entry submitted with DOORBELL, read back from the ring. */
static uint64_t last_submitted_fence(PagodaState *s, PagodaEngine *eng)
{
    uint32_t last = (eng->kicked_tail - 1) & (eng->ring_size - 1);
    uint64_t fence;

    if (pagoda_mem_read(s, eng->ring_base + (uint64_t)last * PAGODA_RING_ENTRY_SIZE +
                        PAGODA_RING_FENCE, &fence, sizeof(fence))) {
        return eng->cur.active ? eng->cur.entry.fence : eng->fence;
    }
    return le64_to_cpu(fence);
}

/*
 * Engine reset: abort the running entry and every submitted one behind it.
 * ABORTED_FENCE tells the driver the newest fence that will never signal;
 * the ring stays programmed and takes new entries at once.
 */
void pagoda_engine_reset(PagodaState *s, PagodaEngine *eng)
{
    if (engine_idle(eng)) {
        eng->aborted_fence = eng->fence;
    } else if (eng->head != eng->kicked_tail) {
        eng->aborted_fence = last_submitted_fence(s, eng);
    } else {
        eng->aborted_fence = eng->cur.entry.fence;
    }
    trace_pagoda_engine_reset(eng->id, eng->aborted_fence);
    eng->head = eng->kicked_tail;
    eng->cur.active = false;
    eng->cur.cmd_active = false;
    eng->cur.waiting = false;
    pagoda_cursor_drop_lists(&eng->cur);
}

void pagoda_cp_reset(PagodaState *s)
{
    unsigned e;

    qemu_bh_cancel(s->cp_bh);
    timer_del(s->cp_wait_timer);
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        PagodaEngine *eng = &s->engine[e];
        uint32_t *cmd = eng->cur.cmd;
        uint32_t caps = eng->caps;

        pagoda_cursor_drop_lists(&eng->cur);
        memset(eng, 0, sizeof(*eng));
        eng->id = e;
        eng->caps = caps;
        eng->cur.cmd = cmd;
    }
}

void pagoda_cp_realize(PagodaState *s)
{
    static const uint32_t caps[PAGODA_NUM_ENGINES] = {
        [PAGODA_ENGINE_PAGING] = PAGODA_ENG_CAPS_PAGING | PAGODA_ENG_CAPS_PHYSICAL,
        [PAGODA_ENGINE_RENDER] = PAGODA_ENG_CAPS_RENDER | PAGODA_ENG_CAPS_VIRTUAL |
                                 PAGODA_ENG_CAPS_PHYSICAL,
    };
    unsigned e;

    s->cp_bh = qemu_bh_new_guarded(cp_run, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    s->cp_wait_timer = timer_new_ns(QEMU_CLOCK_REALTIME, cp_wait_timeout, s);
    s->cp_vmstate = qemu_add_vm_change_state_handler(cp_vm_state_change, s);
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        PagodaDoorbell *db = &s->doorbell[e];

        s->engine[e].id = e;
        s->engine[e].caps = caps[e];
        s->engine[e].cur.cmd = g_new(uint32_t, PAGODA_CMD_MAX_DWORDS);
        db->s = s;
        db->eng = &s->engine[e];
        memory_region_init_io(&db->mr, OBJECT(s), &cp_doorbell_ops, db,
                              "pagoda-doorbell", 4);
        db->mr.disable_reentrancy_guard = true;
        memory_region_add_subregion_overlap(&s->mmio,
                                            PAGODA_REG_ENGINE(e) + PAGODA_ENG_DOORBELL,
                                            &db->mr, 1);
    }
}

void pagoda_cp_unrealize(PagodaState *s)
{
    unsigned e;

    pagoda_cp_reset(s);
    qemu_del_vm_change_state_handler(s->cp_vmstate);
    qemu_bh_delete(s->cp_bh);
    timer_free(s->cp_wait_timer);
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        g_free(s->engine[e].cur.cmd);
        /* a subregion holds its owner: the device could not go */
        memory_region_del_subregion(&s->mmio, &s->doorbell[e].mr);
    }
}
