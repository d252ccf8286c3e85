/*
 * Pagoda GPU: data movement over physical or virtual spans.
 *
 * Owns copy, fill, checksum and small reads/writes for the paging and
 * render engines. A span is a range of physical addresses, of one
 * context's virtual addresses, or a list of physical pages. Each step takes
 * the longest piece that is contiguous on both sides (adjacent virtual
 * pages whose physical pages follow each other are merged), maps it once
 * and moves it with one memcpy/memset, so throughput is bounded by the
 * host, not by the page size.
 *
 * Long operations are resumable: they consume a byte budget and report
 * PAGODA_CMD_YIELD with their progress when it runs out, so that one
 * command never holds the main loop for long.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include <zlib.h>
#include "pagoda_int.h"

/* Per-piece cost charged to the budget, so tiny pieces still count. */
#define PIECE_MIN_COST  512

typedef struct PagodaPiece {
    PagodaState *owner;     /* the GPU whose memory paddr names */
    uint64_t paddr;
    uint64_t len;
    bool zero;
} PagodaPiece;

/*
 * Record a fault at byte @pos of @sp. The address reported is that of the
 * byte in the span's own terms: the VA or physical address, or for a page
 * list the physical address the list gives for it.
 */
static int span_fault(const PagodaSpan *sp, uint64_t pos, uint32_t code,
                      uint32_t access, PagodaFault *f)
{
    uint64_t page = pos / PAGODA_PAGE_SIZE;

    f->code = code;
    f->level = 0xff;
    f->access = access;
    if (!sp->pages) {
        f->va = sp->addr + pos;
    } else if (page < sp->npages) {
        f->va = sp->pages[page] + pos % PAGODA_PAGE_SIZE;
    } else {
        f->va = 0;
    }
    return code;
}

/*
 * The GPU whose memory translation @x of byte @pos of @sp names: this one,
 * or a linked peer. A peer that left since the walk cached the entry
 * faults (PAGODA_FAULT_BAD_PEER).
 */
static int span_owner(PagodaState *s, const PagodaSpan *sp, uint64_t pos,
                      const PagodaXlat *x, uint32_t access, PagodaState **owner,
                      PagodaFault *f)
{
    *owner = pagoda_link_peer(s, x->adapter);
    if (!*owner) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: access through PTE_ADAPTER "
                      "%u: that peer is gone\n", x->adapter);
        return span_fault(sp, pos, PAGODA_FAULT_BAD_PEER, access, f);
    }
    return 0;
}

/*
 * The physical piece of @sp at byte @pos, at most @max bytes long. Merges
 * following pages while they stay physically contiguous.
 */
static int span_piece(PagodaState *s, const PagodaSpan *sp, uint64_t pos,
                      uint64_t max, uint32_t access, PagodaPiece *p,
                      PagodaFault *f)
{
    PagodaXlat x;
    int err;

    p->zero = false;
    p->owner = s;
    if (sp->pages) {
        uint64_t page = pos / PAGODA_PAGE_SIZE;

        if (page >= sp->npages) {
            return span_fault(sp, pos, PAGODA_FAULT_BAD_COMMAND, access, f);
        }
        p->paddr = sp->pages[page] + pos % PAGODA_PAGE_SIZE;
        p->len = MIN(max, PAGODA_PAGE_SIZE - pos % PAGODA_PAGE_SIZE);
        while (p->len < max && ++page < sp->npages &&
               sp->pages[page] == p->paddr + p->len) {
            p->len = MIN(max, p->len + PAGODA_PAGE_SIZE);
        }
        return 0;
    }
    if (sp->ctx < 0) {
        p->paddr = sp->addr + pos;
        p->len = max;
        return 0;
    }
    err = pagoda_mmu_translate(s, sp->ctx, sp->addr + pos, access, &x, f);
    if (!err) {
        err = span_owner(s, sp, pos, &x, access, &p->owner, f);
    }
    if (err) {
        return err;
    }
    p->paddr = x.paddr;
    p->zero = x.zero;
    p->len = MIN(max, x.page_left);
    while (p->len < max) {
        PagodaFault ignored;
        PagodaState *owner;

        if (pagoda_mmu_translate(s, sp->ctx, sp->addr + pos + p->len, access,
                                 &x, &ignored) ||
            span_owner(s, sp, pos + p->len, &x, access, &owner, &ignored) ||
            owner != p->owner ||
            x.zero != p->zero || (!p->zero && x.paddr != p->paddr + p->len)) {
            break;      /* a fault there is raised when the copy reaches it */
        }
        p->len = MIN(max, p->len + x.page_left);
    }
    return 0;
}

/* Map piece @p (or its start) for access; a zero page maps the dummy pages. */
static int piece_map(PagodaState *s, const PagodaSpan *sp, uint64_t pos,
                     const PagodaPiece *p, uint32_t access, PagodaMap *m,
                     PagodaFault *f)
{
    bool is_write = access == PAGODA_ACCESS_WRITE;
    int err;

    if (p->zero) {
        m->host = is_write ? s->sink_page : s->zero_page;
        m->len = MIN(p->len, PAGODA_PAGE_SIZE);
        m->kind = PAGODA_MAP_DUMMY;
        m->is_write = is_write;
        return 0;
    }
    err = pagoda_mem_map(p->owner, p->paddr, p->len, is_write, m);
    if (err) {
        return span_fault(sp, pos, err, access, f);
    }
    return 0;
}

static uint64_t charge(uint64_t *budget, uint64_t n)
{
    uint64_t cost = MAX(n, PIECE_MIN_COST);

    *budget = *budget > cost ? *budget - cost : 0;
    return n;
}

PagodaCmdResult pagoda_copy(PagodaState *s, const PagodaSpan *src,
                            const PagodaSpan *dst, uint64_t size,
                            uint64_t *progress, uint64_t *budget,
                            PagodaFault *f)
{
    while (*progress < size) {
        uint64_t pos = *progress, n, done;
        PagodaPiece sp, dp;
        PagodaMap sm, dm;
        int err = 0;

        if (!*budget) {
            return PAGODA_CMD_YIELD;
        }
        n = MIN(size - pos, *budget);
        /*
         * The largest contiguous piece of the destination, mapped once,
         * filled from as many source pieces as it takes (a scattered
         * source costs a translation per page, not a mapping of both).
         * The source is translated first: at the same byte its fault is
         * the one reported.
         */
        if (span_piece(s, src, pos, n, PAGODA_ACCESS_READ, &sp, f) ||
            span_piece(s, dst, pos, n, PAGODA_ACCESS_WRITE, &dp, f) ||
            piece_map(s, dst, pos, &dp, PAGODA_ACCESS_WRITE, &dm, f)) {
            return PAGODA_CMD_FAULT;
        }
        for (done = 0; done < dm.len; done += n) {
            if (done) {
                err = span_piece(s, src, pos + done, dm.len - done,
                                 PAGODA_ACCESS_READ, &sp, f);
            }
            if (!err) {
                err = piece_map(s, src, pos + done, &sp, PAGODA_ACCESS_READ, &sm, f);
            }
            if (err) {
                break;
            }
            n = MIN(dm.len - done, sm.len);
            memmove(dm.host + done, sm.host, n);
            pagoda_mem_unmap(s, &sm, n);
        }
        pagoda_mem_unmap(s, &dm, done);
        *progress += charge(budget, done);
        if (err) {
            return PAGODA_CMD_FAULT;
        }
    }
    return PAGODA_CMD_DONE;
}

/* Fill @len bytes at @host with @pattern, @phase bytes into the pattern. */
static void fill_pattern(uint8_t *host, uint64_t len, uint32_t pattern,
                         unsigned phase)
{
    uint8_t bytes[4];
    uint64_t i;

    stl_le_p(bytes, pattern);
    if (pattern == (pattern & 0xff) * 0x01010101u) {
        memset(host, pattern & 0xff, len);
        return;
    }
    for (i = 0; i < len && (phase + i) % 8; i++) {
        host[i] = bytes[(phase + i) % 4];
    }
    for (; i + 8 <= len; i += 8) {
        stq_le_p(host + i, ((uint64_t)pattern << 32) | pattern);
    }
    for (; i < len; i++) {
        host[i] = bytes[(phase + i) % 4];
    }
}

PagodaCmdResult pagoda_fill(PagodaState *s, const PagodaSpan *dst,
                            uint32_t pattern, uint64_t size,
                            uint64_t *progress, uint64_t *budget,
                            PagodaFault *f)
{
    while (*progress < size) {
        uint64_t pos = *progress;
        PagodaPiece dp;
        PagodaMap dm;

        if (!*budget) {
            return PAGODA_CMD_YIELD;
        }
        if (span_piece(s, dst, pos, MIN(size - pos, *budget),
                       PAGODA_ACCESS_WRITE, &dp, f) ||
            piece_map(s, dst, pos, &dp, PAGODA_ACCESS_WRITE, &dm, f)) {
            return PAGODA_CMD_FAULT;
        }
        fill_pattern(dm.host, dm.len, pattern, pos % 4);
        pagoda_mem_unmap(s, &dm, dm.len);
        *progress += charge(budget, dm.len);
    }
    return PAGODA_CMD_DONE;
}

PagodaCmdResult pagoda_crc32(PagodaState *s, const PagodaSpan *src,
                             uint64_t size, uint32_t *crc,
                             uint64_t *progress, uint64_t *budget,
                             PagodaFault *f)
{
    while (*progress < size) {
        uint64_t pos = *progress;
        PagodaPiece sp;
        PagodaMap sm;

        if (!*budget) {
            return PAGODA_CMD_YIELD;
        }
        if (span_piece(s, src, pos, MIN(size - pos, *budget),
                       PAGODA_ACCESS_READ, &sp, f) ||
            piece_map(s, src, pos, &sp, PAGODA_ACCESS_READ, &sm, f)) {
            return PAGODA_CMD_FAULT;
        }
        *crc = crc32(*crc, sm.host, sm.len);
        pagoda_mem_unmap(s, &sm, sm.len);
        *progress += charge(budget, sm.len);
    }
    return PAGODA_CMD_DONE;
}

/* Small transfers between a device buffer and a span (operands, results). */
int pagoda_span_rw(PagodaState *s, const PagodaSpan *sp, void *buf,
                   uint64_t len, uint32_t access, PagodaFault *f)
{
    bool is_write = access == PAGODA_ACCESS_WRITE;
    uint8_t *b = buf;
    uint64_t pos = 0;

    while (pos < len) {
        PagodaPiece p;
        PagodaMap m;
        int err;

        err = span_piece(s, sp, pos, len - pos, access, &p, f);
        if (!err) {
            err = piece_map(s, sp, pos, &p, access, &m, f);
        }
        if (err) {
            return err;
        }
        if (is_write) {
            memcpy(m.host, b + pos, m.len);
        } else {
            memcpy(b + pos, m.host, m.len);
        }
        pagoda_mem_unmap(s, &m, m.len);
        pos += m.len;
    }
    return 0;
}
