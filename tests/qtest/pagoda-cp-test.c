/*
 * QTest for the Pagoda GPU: command processor, paging operations,
 * apertures, interrupts, resets and malicious programming.
 *
 * Every test drives the device the way a driver does: commands are built
 * in guest memory, submitted through the rings, and their results are
 * checked byte for byte in guest memory, through the VRAM BAR (BAR2) and
 * through the CPU host aperture (BAR4).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/fw_cfg.h"
#include "libqos/pagoda.h"
#include "hw/pci/pci_regs.h"
#include "standard-headers/linux/qemu_fw_cfg.h"

#define PG      PAGODA_ENGINE_PAGING
#define RE      PAGODA_ENGINE_RENDER
#define PAGE    4096ull

#define SYS(o)  PAGODA_PADDR(PAGODA_SEG_SYSTEM, (uint64_t)(o))
#define VRAM(o) PAGODA_PADDR(PAGODA_SEG_VRAM, (uint64_t)(o))
#define HID(o)  PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, (uint64_t)(o))
#define APER(o) PAGODA_PADDR(PAGODA_SEG_APERTURE, (uint64_t)(o))

#define ENG(e, reg)     (PAGODA_REG_ENGINE(e) + (reg))
#define SEGREG(s, f)    (PAGODA_REG_SEG(s) + (f))

/* Bytes checked on each side of a destination: they must not change. */
#define GUARD   64
#define GUARD_BYTE 0xa5
/* How long a test waits for something that must happen soon. */
#define SOON_US (10 * G_USEC_PER_SEC)

/* ---- Helpers: data ------------------------------------------------------ */

static void fill_random(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u | 1;

    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = x >> 24;
    }
}

/* @len bytes of a fill with @pattern, phase relative to the fill's start. */
static void fill_expected(uint8_t *buf, size_t len, uint32_t pattern)
{
    uint8_t bytes[4];

    stl_le_p(bytes, pattern);
    for (size_t i = 0; i < len; i++) {
        buf[i] = bytes[i % 4];
    }
}

static void assert_bytes(const uint8_t *got, const uint8_t *want, size_t len,
                         const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (got[i] != want[i]) {
            g_test_message("%s: byte %zu of %zu is 0x%02x, expected 0x%02x",
                           what, i, len, got[i], want[i]);
            g_assert_cmphex(got[i], ==, want[i]);
        }
    }
}

/* Reference CRC-32 (IEEE 802.3, reflected, as zlib's crc32()). */
static uint32_t crc_table[256];

static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    if (!crc_table[1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;

            for (int k = 0; k < 8; k++) {
                c = (c >> 1) ^ (0xedb88320u & -(c & 1));
            }
            crc_table[i] = c;
        }
    }
    crc = ~crc;
    while (n--) {
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

/* ---- Helpers: submission and faults ------------------------------------- */

static QTestState *qts_of(QPagoda *d)
{
    return d->dev.bus->qts;
}

static void cmds(PagodaCmds *c)
{
    pagoda_cmds_init(c);
}

static void expect_no_fault(QPagoda *d)
{
    uint32_t n = pagoda_rd(d, PAGODA_REG_FAULT_COUNT);

    if (n) {
        g_test_message("unexpected fault: code %u engine %u context %u "
                       "va 0x%" PRIx64, pagoda_rd(d, PAGODA_REG_FAULT_CODE),
                       pagoda_rd(d, PAGODA_REG_FAULT_ENGINE),
                       pagoda_rd(d, PAGODA_REG_FAULT_CONTEXT),
                       pagoda_rd64(d, PAGODA_REG_FAULT_VA_LO));
    }
    g_assert_cmpuint(n, ==, 0);
}

/*
 * Pop the one fault that must be queued, check its code and engine, and
 * resume its context (a fault halts it).
 */
static PagodaFaultInfo expect_fault(QPagoda *d, unsigned engine, uint32_t code)
{
    PagodaFaultInfo f;

    g_assert_true(pagoda_pop_fault(d, &f));
    g_assert_cmpuint(f.code, ==, code);
    g_assert_cmpuint(f.engine, ==, engine);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    if (f.context < pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS)) {
        pagoda_resume_context(d, f.context);
    }
    return f;
}

/* Run @c on @engine for context @ctx, wait for it, free @c. */
static uint64_t run_ctx(QPagoda *d, unsigned engine, PagodaCmds *c,
                        uint16_t ctx)
{
    uint64_t fence = pagoda_run(d, engine, c, ctx, 0);

    pagoda_cmds_free(c);
    return fence;
}

static uint64_t run_ok(QPagoda *d, unsigned engine, PagodaCmds *c)
{
    uint64_t fence = run_ctx(d, engine, c, 0);

    expect_no_fault(d);
    return fence;
}

/* Run @c (physically, at @addr) and expect it to fault with @code at @va. */
static PagodaFaultInfo run_fault_at(QPagoda *d, unsigned engine, PagodaCmds *c,
                                    uint16_t ctx, uint32_t code, uint64_t va)
{
    uint64_t fence = run_ctx(d, engine, c, ctx);
    PagodaFaultInfo f = expect_fault(d, engine, code);

    g_assert_cmpuint(f.fence, ==, fence);
    g_assert_cmpuint(f.context, ==, ctx);
    g_assert_cmphex(f.va, ==, va);
    return f;
}

/* Run @c and expect a fault with @code; its VA is not checked. */
static PagodaFaultInfo run_fault(QPagoda *d, unsigned engine, PagodaCmds *c,
                                 uint32_t code)
{
    uint64_t fence = run_ctx(d, engine, c, 0);
    PagodaFaultInfo f = expect_fault(d, engine, code);

    g_assert_cmpuint(f.fence, ==, fence);
    return f;
}

/*
 * Run a buffer whose first command must be rejected as BAD_COMMAND: the
 * fault names the command's address.
 */
static void run_bad_command(QPagoda *d, unsigned engine, PagodaCmds *c)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    uint64_t fence = pagoda_submit(d, engine, SYS(addr), pagoda_cmds_bytes(c),
                                   0, 0);
    PagodaFaultInfo f;

    pagoda_cmds_free(c);
    g_assert_true(pagoda_wait_fence(d, engine, fence));
    f = expect_fault(d, engine, PAGODA_FAULT_BAD_COMMAND);
    g_assert_cmphex(f.va, ==, SYS(addr));
    g_assert_cmpuint(f.fence, ==, fence);
}

/*
 * Submit @c physically for @ctx without waiting (@c is freed); @slot gets
 * its ring slot. Returns the fence.
 */
static uint64_t submit_at(QPagoda *d, unsigned engine, PagodaCmds *c,
                          uint16_t ctx, uint16_t flags, uint32_t *slot)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    uint64_t fence;

    *slot = d->ring_tail[engine];
    fence = pagoda_submit(d, engine, SYS(addr), pagoda_cmds_bytes(c), ctx,
                          flags);
    pagoda_cmds_free(c);
    return fence;
}

/* The same for context 0. */
static uint64_t submit(QPagoda *d, unsigned engine, PagodaCmds *c,
                       uint16_t flags)
{
    uint32_t slot;

    return submit_at(d, engine, c, 0, flags, &slot);
}

static uint64_t submit_irq(QPagoda *d, unsigned engine, PagodaCmds *c)
{
    return submit(d, engine, c, PAGODA_RING_FLAG_INTERRUPT);
}

/*
 * Queue @count copies of @c on @engine and ring the doorbell once, so that
 * the device gets all the work at the same time. Returns the last fence.
 */
static uint64_t submit_many(QPagoda *d, unsigned engine, PagodaCmds *c,
                            unsigned count)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    uint8_t entry[PAGODA_RING_ENTRY_SIZE] = { 0 };
    uint64_t fence = 0;

    g_assert_cmpuint(count, <, d->ring_size[engine]);
    for (unsigned i = 0; i < count; i++) {
        uint32_t tail = d->ring_tail[engine];

        fence = d->next_fence[engine]++;
        stq_le_p(entry + PAGODA_RING_ADDR, SYS(addr));
        stl_le_p(entry + PAGODA_RING_LENGTH, pagoda_cmds_bytes(c));
        stq_le_p(entry + PAGODA_RING_FENCE, fence);
        pagoda_memwrite(d, d->ring_base[engine] +
                        tail * PAGODA_RING_ENTRY_SIZE, entry, sizeof(entry));
        d->ring_tail[engine] = (tail + 1) % d->ring_size[engine];
    }
    pagoda_cmds_free(c);
    pagoda_wr(d, ENG(engine, PAGODA_ENG_RING_TAIL), d->ring_tail[engine]);
    pagoda_wr(d, ENG(engine, PAGODA_ENG_DOORBELL), 1);
    return fence;
}

/* Wait until (ENG_STATUS & mask) == want. */
static bool wait_status(QPagoda *d, unsigned engine, uint32_t mask,
                        uint32_t want)
{
    gint64 end = g_get_monotonic_time() + SOON_US;

    while ((pagoda_rd(d, ENG(engine, PAGODA_ENG_STATUS)) & mask) != want) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(50);
    }
    return true;
}

/* Wait until the u32 at guest address @addr reads @val. */
static bool wait_mem32(QPagoda *d, uint64_t addr, uint32_t val)
{
    gint64 end = g_get_monotonic_time() + SOON_US;

    while (qtest_readl(qts_of(d), addr) != val) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(50);
    }
    return true;
}

/* Point @engine's ring at @base with @size entries (head and tail restart). */
static void ring_program(QPagoda *d, unsigned engine, uint64_t base,
                         uint32_t size)
{
    pagoda_wr64(d, ENG(engine, PAGODA_ENG_RING_BASE_LO), base);
    pagoda_wr(d, ENG(engine, PAGODA_ENG_RING_SIZE), size);
}

/* Give @engine its libqos ring back (after a reset or a test ring). */
static void ring_restore(QPagoda *d, unsigned engine)
{
    ring_program(d, engine, SYS(d->ring_base[engine]), d->ring_size[engine]);
    d->ring_tail[engine] = 0;
}

/* Upload a buffer that jumps to itself forever; returns its address. */
static uint64_t self_loop(QPagoda *d, PagodaCmds *body)
{
    uint64_t addr = pagoda_alloc(d, PAGE, PAGE);
    uint32_t bytes = pagoda_cmds_bytes(body);

    pagoda_cmd_jump(body, SYS(addr), bytes + 16);
    pagoda_memwrite(d, addr, body->dw->data, pagoda_cmds_bytes(body));
    pagoda_cmds_free(body);
    return addr;
}

static uint64_t ram_size(QPagoda *d)
{
    QFWCFG *fw_cfg = pc_fw_cfg_init(qts_of(d));
    uint64_t size = qfw_cfg_get_u64(fw_cfg, FW_CFG_RAM_SIZE);

    pc_fw_cfg_uninit(fw_cfg);
    return size;
}

/* ---- Helpers: CPU view of every segment --------------------------------- */

#define GART_SHADOW     1024
#define MAX_HOST_MAPS   128

/*
 * What the test programmed into the apertures, so that the CPU can reach
 * any GPU physical address: segment 0 directly, segment 1 through BAR2,
 * segment 2 through the BAR4 pages mapped onto it, segment 3 through the
 * system pages its GART entries name.
 */
typedef struct Env {
    QPagoda *d;
    QTestState *qts;
    uint32_t psize;                 /* memory segments' page size */
    uint64_t gart_table;
    uint32_t gart_entries;
    uint64_t gart[GART_SHADOW];     /* system page of an aperture page, or 0 */
    struct {
        uint32_t seg, seg_page, bar_page;
    } host[MAX_HOST_MAPS];
    unsigned nhost;
} Env;

static Env *env_new(QPagoda *d, QGuestAllocator *alloc)
{
    Env *e = g_new0(Env, 1);

    pagoda_start(d, alloc);
    e->d = d;
    e->qts = qts_of(d);
    e->psize = pagoda_rd(d, PAGODA_REG_HOST_APERTURE_PAGE_SIZE);
    return e;
}

static void env_gart(Env *e, uint64_t table, uint32_t entries)
{
    pagoda_wr64(e->d, PAGODA_REG_GART_BASE_LO, table);
    pagoda_wr(e->d, PAGODA_REG_GART_ENTRIES, entries);
    g_assert_cmphex(pagoda_rd64(e->d, PAGODA_REG_GART_BASE_LO), ==, table);
    g_assert_cmpuint(pagoda_rd(e->d, PAGODA_REG_GART_ENTRIES), ==, entries);
    e->gart_table = table;
    e->gart_entries = entries;
}

static void env_map_aperture(Env *e, uint32_t first, uint32_t count,
                             const uint64_t *pages)
{
    PagodaCmds c;

    cmds(&c);
    pagoda_cmd_map_aperture(&c, first, count, pages);
    run_ok(e->d, PG, &c);
    for (uint32_t i = 0; i < count; i++) {
        e->gart[first + i] = pages[i];
    }
}

static void env_map_host(Env *e, uint32_t seg, uint32_t count,
                         const uint32_t *bar_pages, const uint32_t *seg_pages)
{
    PagodaCmds c;

    cmds(&c);
    pagoda_cmd_map_host_aperture(&c, seg, count, bar_pages, seg_pages);
    run_ok(e->d, PG, &c);
    for (uint32_t i = 0; i < count; i++) {
        unsigned j;

        for (j = 0; j < e->nhost; j++) {
            if (e->host[j].bar_page == bar_pages[i]) {
                break;
            }
        }
        g_assert_cmpuint(j, <, MAX_HOST_MAPS);
        e->host[j].seg = seg;
        e->host[j].seg_page = seg_pages[i];
        e->host[j].bar_page = bar_pages[i];
        e->nhost = MAX(e->nhost, j + 1);
    }
}

static uint64_t env_bar4_page(Env *e, unsigned seg, uint64_t seg_page)
{
    for (unsigned j = 0; j < e->nhost; j++) {
        if (e->host[j].seg == seg && e->host[j].seg_page == seg_page) {
            return e->host[j].bar_page;
        }
    }
    g_assert_not_reached();
}

/*
 * qtest handles one command per line, and long lines cost more than their
 * length: move big buffers in pieces.
 */
#define QTEST_CHUNK (256 * KiB)

static void bulk_rw(QTestState *qts, uint64_t addr, void *buf, size_t len,
                    bool write)
{
    uint8_t *b = buf;

    for (size_t off = 0; off < len; off += QTEST_CHUNK) {
        size_t n = MIN(QTEST_CHUNK, len - off);

        if (write) {
            qtest_bufwrite(qts, addr + off, b + off, n);
        } else {
            qtest_bufread(qts, addr + off, b + off, n);
        }
    }
}

static void cpu_rw(Env *e, uint64_t pa, void *buf, size_t len, bool write)
{
    unsigned seg = PAGODA_PADDR_SEG(pa);
    uint64_t off = PAGODA_PADDR_OFFSET(pa);
    uint8_t *b = buf;

    while (len) {
        uint64_t addr, page;
        size_t n;

        switch (seg) {
        case PAGODA_SEG_SYSTEM:
            addr = off;
            n = len;
            break;
        case PAGODA_SEG_VRAM:
            addr = e->d->vram.addr + off;
            n = len;
            break;
        case PAGODA_SEG_VRAM_HIDDEN:
            page = env_bar4_page(e, seg, off / e->psize);
            addr = e->d->host_aperture.addr + page * e->psize + off % e->psize;
            n = MIN(len, e->psize - off % e->psize);
            break;
        case PAGODA_SEG_APERTURE:
            page = off / PAGE;
            g_assert_cmpuint(page, <, GART_SHADOW);
            g_assert_cmphex(e->gart[page], !=, 0);
            addr = e->gart[page] + off % PAGE;
            n = MIN(len, PAGE - off % PAGE);
            break;
        default:
            g_assert_not_reached();
        }
        bulk_rw(e->qts, addr, b, n, write);
        b += n;
        off += n;
        len -= n;
    }
}

static void cpu_write(Env *e, uint64_t pa, const void *buf, size_t len)
{
    cpu_rw(e, pa, (void *)buf, len, true);
}

static void cpu_read(Env *e, uint64_t pa, void *buf, size_t len)
{
    cpu_rw(e, pa, buf, len, false);
}

static void cpu_fill(Env *e, uint64_t pa, uint8_t byte, size_t len)
{
    g_autofree uint8_t *buf = NULL;

    switch (PAGODA_PADDR_SEG(pa)) {
    case PAGODA_SEG_SYSTEM:
        qtest_memset(e->qts, PAGODA_PADDR_OFFSET(pa), byte, len);
        return;
    case PAGODA_SEG_VRAM:
        qtest_memset(e->qts, e->d->vram.addr + PAGODA_PADDR_OFFSET(pa), byte,
                     len);
        return;
    }
    buf = g_malloc(len);
    memset(buf, byte, len);
    cpu_write(e, pa, buf, len);
}

/* Check [pa, pa + len) holds @want, and GUARD bytes each side GUARD_BYTE. */
static void cpu_check(Env *e, uint64_t pa, const uint8_t *want, size_t len,
                      const char *what)
{
    g_autofree uint8_t *got = g_malloc(len + 2 * GUARD);
    g_autofree uint8_t *exp = g_malloc(len + 2 * GUARD);

    memset(exp, GUARD_BYTE, len + 2 * GUARD);
    memcpy(exp + GUARD, want, len);
    cpu_read(e, pa - GUARD, got, len + 2 * GUARD);
    assert_bytes(got, exp, len + 2 * GUARD, what);
}

/* Paint the destination [pa, pa + len) and its guards before a command. */
static void cpu_guard(Env *e, uint64_t pa, size_t len)
{
    cpu_fill(e, pa - GUARD, GUARD_BYTE, len + 2 * GUARD);
}

/*
 * A 128 KiB window of segment @seg reachable by the CPU, laid out so that
 * both halves cross page boundaries of the segment: in system memory, in
 * VRAM, in hidden VRAM across three segment pages mapped at scattered BAR4
 * pages, and in the aperture across 32 GART pages mapped to scattered
 * system pages.
 */
#define WIN (128 * KiB)

static uint64_t env_window(Env *e, unsigned seg)
{
    QPagoda *d = e->d;

    switch (seg) {
    case PAGODA_SEG_SYSTEM:
        return SYS(pagoda_alloc(d, WIN, PAGE));
    case PAGODA_SEG_VRAM:
        return VRAM(3 * MiB);
    case PAGODA_SEG_VRAM_HIDDEN: {
        uint64_t off = 5 * e->psize - 8 * KiB;
        uint32_t first = off / e->psize;
        uint32_t n = DIV_ROUND_UP(off % e->psize + WIN, e->psize);
        g_autofree uint32_t *bar = g_new(uint32_t, n);
        g_autofree uint32_t *segp = g_new(uint32_t, n);

        for (uint32_t i = 0; i < n; i++) {
            segp[i] = first + i;
            bar[i] = 200 - 5 * i;       /* descending, not adjacent */
        }
        env_map_host(e, seg, n, bar, segp);
        return HID(off);
    }
    case PAGODA_SEG_APERTURE: {
        const uint32_t first = 16, n = WIN / PAGE;
        uint64_t pages[WIN / PAGE];
        uint64_t pair = pagoda_alloc(d, 2 * PAGE, PAGE);

        if (!e->gart_table) {
            env_gart(e, SYS(pagoda_alloc(d, PAGE, PAGE)), 64);
        }
        for (uint32_t i = 0; i < n; i++) {
            pages[n - 1 - i] = pagoda_alloc(d, PAGE, PAGE);   /* descending */
        }
        pages[4] = pair;                /* and one contiguous run */
        pages[5] = pair + PAGE;
        env_map_aperture(e, first, n, pages);
        return APER(first * PAGE);
    }
    }
    g_assert_not_reached();
}

static const char *seg_name(uint64_t pa)
{
    static const char *names[] = { "system", "vram", "hidden", "aperture" };

    return names[PAGODA_PADDR_SEG(pa)];
}

/* TRANSFER @size bytes from @src to @dst and check the result byte for byte. */
static void transfer_check(Env *e, uint64_t src, uint64_t dst, uint64_t size,
                           uint32_t seed)
{
    g_autofree uint8_t *data = g_malloc(size);
    g_autofree char *what = g_strdup_printf("TRANSFER %s+0x%" PRIx64 " -> "
                                            "%s+0x%" PRIx64 ", %" PRIu64
                                            " bytes", seg_name(src),
                                            (uint64_t)PAGODA_PADDR_OFFSET(src),
                                            seg_name(dst),
                                            (uint64_t)PAGODA_PADDR_OFFSET(dst),
                                            size);
    PagodaCmds c;

    fill_random(data, size, seed);
    cpu_write(e, src, data, size);
    cpu_guard(e, dst, size);
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, src, dst, size);
    run_ok(e->d, PG, &c);
    cpu_check(e, dst, data, size, what);
}

/* ---- Segment table and properties --------------------------------------- */

typedef struct SegCase {
    uint64_t vram, hidden, aperture;
    uint32_t psize;
} SegCase;

static const SegCase seg_default = { 256 * MiB, 256 * MiB, 256 * MiB, 65536 };
static const SegCase seg_small = { 256 * MiB, 1 * MiB, 1 * MiB, 4096 };
static const SegCase seg_no_hidden = { 256 * MiB, 0, 64 * MiB, 65536 };

static void test_segments(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const SegCase *sc = data;
    static const uint32_t kind[] = {
        PAGODA_SEG_KIND_SYSTEM, PAGODA_SEG_KIND_MEMORY,
        PAGODA_SEG_KIND_MEMORY, PAGODA_SEG_KIND_APERTURE,
    };
    static const uint32_t flags[] = {
        PAGODA_SEG_FLAG_CACHE_COHERENT,
        PAGODA_SEG_FLAG_CPU_VISIBLE,
        PAGODA_SEG_FLAG_HOST_APERTURE,
        PAGODA_SEG_FLAG_APERTURE | PAGODA_SEG_FLAG_CACHE_COHERENT,
    };
    const uint32_t page[] = {
        PAGE, sc->psize, sc->psize, PAGODA_GART_PAGE_SIZE,
    };
    const uint32_t bar[] = {
        PAGODA_SEG_NO_BAR, PAGODA_BAR_VRAM,
        PAGODA_SEG_NO_BAR, PAGODA_SEG_NO_BAR,
    };
    const uint64_t size[] = { 0, sc->vram, sc->hidden, sc->aperture };

    pagoda_start(d, alloc);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_NUM_SEGMENTS), ==,
                     PAGODA_NUM_SEGMENTS);
    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        g_test_message("segment %u", s);
        g_assert_cmpuint(pagoda_rd(d, SEGREG(s, PAGODA_SEG_KIND)), ==, kind[s]);
        g_assert_cmphex(pagoda_rd(d, SEGREG(s, PAGODA_SEG_FLAGS)), ==,
                        flags[s]);
        g_assert_cmpuint(pagoda_rd(d, SEGREG(s, PAGODA_SEG_PAGE_SIZE)), ==,
                         page[s]);
        g_assert_cmphex(pagoda_rd(d, SEGREG(s, PAGODA_SEG_BAR)), ==, bar[s]);
        g_assert_cmphex(pagoda_rd64(d, SEGREG(s, PAGODA_SEG_GPU_BASE_LO)), ==,
                        PAGODA_PADDR(s, 0ull));
        /* segment 0 reads 0: its size is the guest's */
        g_assert_cmpuint(pagoda_rd64(d, SEGREG(s, PAGODA_SEG_SIZE_LO)), ==,
                         size[s]);
    }
    g_assert_cmpuint(pagoda_rd64(d, SEGREG(PAGODA_SEG_VRAM,
                                           PAGODA_SEG_BAR_OFFSET_LO)), ==, 0);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_VRAM_SIZE_LO), ==, sc->vram);
    g_assert_cmpuint(d->vram_bar_size, ==, sc->vram);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_HOST_APERTURE_PAGE_SIZE), ==,
                     sc->psize);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_HOST_APERTURE_PAGES), ==,
                     d->host_aperture_bar_size / sc->psize);
    /* descriptors are read-only */
    pagoda_wr(d, SEGREG(PAGODA_SEG_VRAM, PAGODA_SEG_SIZE_LO), 0x1000);
    pagoda_wr(d, SEGREG(PAGODA_SEG_VRAM, PAGODA_SEG_PAGE_SIZE), 0x1000);
    g_assert_cmpuint(pagoda_rd64(d, SEGREG(PAGODA_SEG_VRAM,
                                           PAGODA_SEG_SIZE_LO)), ==, sc->vram);
    g_assert_cmpuint(pagoda_rd(d, SEGREG(PAGODA_SEG_VRAM,
                                         PAGODA_SEG_PAGE_SIZE)), ==, sc->psize);
}

/*
 * The sizes the descriptors report are the ones the device enforces: the
 * last bytes of each memory segment can be filled, the next one faults.
 */
static void test_segment_bounds(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const SegCase *sc = data;
    const uint64_t size[] = { 0, sc->vram, sc->hidden, sc->aperture };
    uint32_t pages = sc->aperture / PAGODA_GART_PAGE_SIZE;
    uint32_t last_seg_page, one = 0;
    uint64_t buf;
    PagodaCmds c;

    pagoda_start(d, alloc);
    buf = pagoda_alloc(d, PAGE, PAGE);
    for (unsigned s = PAGODA_SEG_VRAM; s < PAGODA_NUM_SEGMENTS; s++) {
        uint64_t start = size[s] ? size[s] - 4 : 0;

        g_test_message("segment %u", s);
        cmds(&c);
        pagoda_cmd_fill(&c, PAGODA_PADDR(s, start), 0x12345678, 8);
        run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT,
                     PAGODA_PADDR(s, size[s]));
    }
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, sc->vram - 4), ==,
                    0x12345678);

    /*
     * A page table running past the end: the entry before it is written,
     * the command faults as a write at its own address.
     */
    {
        const uint64_t ptes[2] = {
            PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x123000, PAGODA_PTE_VALID),
            PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x456000, PAGODA_PTE_VALID),
        };
        uint64_t addr, fence;
        PagodaFaultInfo f;

        cmds(&c);
        pagoda_cmd_update_pt(&c, 0, 0, VRAM(sc->vram - 8), 0, 2, ptes);
        addr = pagoda_cmds_upload(d, &c);
        fence = pagoda_submit(d, PG, SYS(addr), pagoda_cmds_bytes(&c), 0, 0);
        pagoda_cmds_free(&c);
        g_assert_true(pagoda_wait_fence(d, PG, fence));
        f = expect_fault(d, PG, PAGODA_FAULT_OUT_OF_SEGMENT);
        g_assert_cmphex(f.va, ==, SYS(addr));
        g_assert_cmpuint(f.level, ==, 0xff);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_WRITE);
        g_assert_cmphex(qpci_io_readq(&d->dev, d->vram, sc->vram - 8), ==,
                        ptes[0]);
    }

    /* the GART covers at most the aperture segment */
    pagoda_wr64(d, PAGODA_REG_GART_BASE_LO, SYS(buf));
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, pages);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_GART_ENTRIES), ==, pages);
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, pages + 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_GART_ENTRIES), ==, 0);

    /* the host aperture maps pages of hidden VRAM up to its size */
    if (sc->hidden) {
        last_seg_page = sc->hidden / sc->psize - 1;
        cmds(&c);
        pagoda_cmd_map_host_aperture(&c, PAGODA_SEG_VRAM_HIDDEN, 1, &one,
                                     &last_seg_page);
        run_ok(d, PG, &c);
        g_assert_cmphex(qpci_io_readl(&d->dev, d->host_aperture,
                                      sc->psize - 4), ==, 0x12345678);
    }
    last_seg_page = sc->hidden / sc->psize;
    cmds(&c);
    pagoda_cmd_map_host_aperture(&c, PAGODA_SEG_VRAM_HIDDEN, 1, &one,
                                 &last_seg_page);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
}

/* ---- Paging: TRANSFER --------------------------------------------------- */

/* Every pair of segments, odd offsets, a size that is not a page multiple. */
static void test_transfer_matrix(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    const uint64_t src_off = 0xffd, dst_off = 64 * KiB + 0x333;
    const uint64_t size = 3 * PAGE + 0x1a7;
    uint64_t win[PAGODA_NUM_SEGMENTS];

    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        win[s] = env_window(e, s);
    }
    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        for (unsigned t = 0; t < PAGODA_NUM_SEGMENTS; t++) {
            transfer_check(e, win[s] + src_off, win[t] + dst_off, size,
                           s * 4 + t);
        }
    }
}

/* Sizes 1, 2, 3, 4, a page, a page plus one, and zero. */
static void test_transfer_sizes(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    static const uint64_t sizes[] = { 1, 2, 3, 4, 5, PAGE - 1, PAGE, PAGE + 1 };
    uint64_t sys = env_window(e, PAGODA_SEG_SYSTEM);
    uint64_t ap = env_window(e, PAGODA_SEG_APERTURE);
    uint8_t guard[1] = { 0 };  /* no data: only the guards are checked */
    PagodaCmds c;

    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        transfer_check(e, sys + PAGE - 1, VRAM(PAGE - 2), sizes[i], i);
        transfer_check(e, VRAM(7 * PAGE + 3), ap + 2 * PAGE - 1, sizes[i], i);
    }
    /* size 0 moves nothing */
    cpu_guard(e, VRAM(64 * KiB), 0);
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, sys, VRAM(64 * KiB), 0);
    run_ok(e->d, PG, &c);
    cpu_check(e, VRAM(64 * KiB), guard, 0, "TRANSFER of 0 bytes");
}

/* A transfer bigger than one scheduling slice is resumed where it stopped. */
static void test_transfer_large(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t size = 40 * MiB + 12;
    g_autofree uint8_t *buf = g_malloc(size);
    uint64_t result;
    uint32_t crc;
    PagodaCmds c;

    pagoda_start(d, alloc);
    result = pagoda_alloc(d, PAGE, PAGE);
    fill_random(buf, size, 77);
    bulk_rw(qts_of(d), d->vram.addr + 3, buf, size, true);
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, VRAM(3), VRAM(128 * MiB + 1), size);
    run_ok(d, PG, &c);
    /* checked by the render engine's CRC32 and by sampling through BAR2 */
    cmds(&c);
    pagoda_cmd_crc32(&c, VRAM(128 * MiB + 1), size, SYS(result));
    run_ok(d, RE, &c);
    crc = ref_crc32(0, buf, size);
    g_assert_cmphex(qtest_readl(qts_of(d), result), ==, crc);
    for (uint64_t off = 0; off < size; off += 4 * MiB - 1) {
        uint8_t got[64];
        uint64_t n = MIN(sizeof(got), size - off);

        qtest_bufread(qts_of(d), d->vram.addr + 128 * MiB + 1 + off, got, n);
        assert_bytes(got, buf + off, n, "large TRANSFER");
    }
}

static uint64_t write_list(QPagoda *d, const uint64_t *pages, unsigned n)
{
    uint64_t addr = pagoda_alloc(d, n * 8, PAGE);

    for (unsigned i = 0; i < n; i++) {
        pagoda_writeq(d, addr + i * 8, pages[i]);
    }
    return addr;
}

/* Page lists: scattered system pages (with one contiguous pair) and VRAM. */
static void test_transfer_lists(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t size = 4 * PAGE + 0x321;
    g_autofree uint8_t *in = g_malloc(size);
    g_autofree uint8_t *out = g_malloc(size);
    uint64_t pair = pagoda_alloc(d, 2 * PAGE, PAGE);
    uint64_t pages[5] = {
        SYS(pagoda_alloc(d, PAGE, PAGE)), VRAM(7 * MiB),
        SYS(pair), SYS(pair + PAGE), SYS(pagoda_alloc(d, PAGE, PAGE)),
    };
    uint64_t list = write_list(d, pages, 5);
    uint64_t flat = SYS(pagoda_alloc(d, size + 2 * GUARD, PAGE) + GUARD);
    PagodaCmds c;

    /* SRC_LIST: gather the pages into VRAM */
    fill_random(in, size, 5);
    for (unsigned i = 0; i < 5; i++) {
        cpu_write(e, pages[i], in + i * PAGE, MIN(PAGE, size - i * PAGE));
    }
    cpu_guard(e, VRAM(MiB + 1), size);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(list), VRAM(MiB + 1),
                        size);
    run_ok(d, PG, &c);
    cpu_check(e, VRAM(MiB + 1), in, size, "SRC_LIST");

    /* DST_LIST: scatter a flat buffer */
    fill_random(out, size, 6);
    cpu_write(e, flat, out, size);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, flat, SYS(list), size);
    run_ok(d, PG, &c);
    for (unsigned i = 0; i < 5; i++) {
        uint8_t got[PAGE];
        uint64_t n = MIN(PAGE, size - i * PAGE);

        cpu_read(e, pages[i], got, n);
        assert_bytes(got, out + i * PAGE, n, "DST_LIST");
    }

    /* both lists: the list's pages reversed as destination */
    {
        uint64_t rev[5] = { pages[4], pages[3], pages[2], pages[1], pages[0] };
        uint64_t rlist = write_list(d, rev, 5);
        g_autofree uint8_t *tmp = g_malloc(5 * PAGE);

        /* make the source whole pages so that the permutation is total */
        cmds(&c);
        pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST |
                            PAGODA_TRANSFER_DST_LIST, SYS(list), SYS(rlist),
                            2 * PAGE + 5);
        fill_random(tmp, 5 * PAGE, 9);
        for (unsigned i = 0; i < 5; i++) {
            cpu_write(e, pages[i], tmp + i * PAGE, PAGE);
        }
        run_ok(d, PG, &c);
        /* page i of the source landed in page i of rev: pages[4 - i] */
        for (unsigned i = 0; i < 3; i++) {
            uint8_t got[PAGE];
            uint64_t n = i < 2 ? PAGE : 5;

            cpu_read(e, rev[i], got, n);
            assert_bytes(got, tmp + i * PAGE, n, "SRC_LIST|DST_LIST");
        }
        /* rev[3] = pages[1] and rev[4] = pages[0] were not written */
        {
            uint8_t got[PAGE];

            cpu_read(e, pages[0], got, PAGE);
            assert_bytes(got, tmp, PAGE, "untouched list page");
        }
    }
}

static void test_transfer_list_bad(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t ok, list, buf;
    uint64_t pages[2];
    PagodaCmds c;

    pagoda_start(d, alloc);
    ok = pagoda_alloc(d, PAGE, PAGE);
    buf = pagoda_alloc(d, 2 * PAGE, PAGE);

    /* an entry that is not page aligned: nothing is moved */
    pages[0] = SYS(ok);
    pages[1] = SYS(ok + 8);
    list = write_list(d, pages, 2);
    pagoda_memset(d, buf, 0x77, 2 * PAGE);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(list), SYS(buf),
                        2 * PAGE);
    run_bad_command(d, PG, &c);
    g_assert_cmphex(pagoda_readq(d, buf), ==, 0x7777777777777777ull);

    /* lists longer than the device takes, up to sizes that wrap around */
    {
        static const uint64_t sizes[] = {
            1ull << 63, ~0ull, ~0ull - PAGE + 2, (1ull << 40) + 1,
        };

        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
            g_test_message("list for 0x%" PRIx64 " bytes", sizes[i]);
            cmds(&c);
            pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, SYS(buf),
                                SYS(list), sizes[i]);
            run_bad_command(d, PG, &c);
            cmds(&c);
            pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(list),
                                SYS(buf), sizes[i]);
            run_bad_command(d, PG, &c);
        }
    }

    /*
     * The longest list, 262144 pages (1 GiB): accepted, and the copy runs
     * until it leaves VRAM; one page more is refused before anything moves.
     */
    {
        const uint64_t n = 262144;
        g_autofree uint64_t *many = g_new(uint64_t, n);
        uint64_t at = pagoda_alloc(d, n * 8, PAGE);
        uint64_t vram = d->vram_bar_size;

        for (uint64_t i = 0; i < n; i++) {
            many[i] = cpu_to_le64(SYS(ok));
        }
        bulk_rw(qts_of(d), at, many, n * 8, true);
        cmds(&c);
        pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(at), VRAM(0),
                            n * PAGE);
        run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
        qpci_io_writel(&d->dev, d->vram, 0, 0x12345678);
        cmds(&c);
        pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(at), VRAM(0),
                            n * PAGE + 1);
        run_bad_command(d, PG, &c);
        g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, 0), ==, 0x12345678);
    }

    /* a list that is not in memory */
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, PAGODA_PADDR(9, 0ull),
                        SYS(buf), PAGE);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);

    /* a page of the list in a segment that does not exist */
    pages[1] = PAGODA_PADDR(9, 0ull);
    list = write_list(d, pages, 2);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, SYS(buf), SYS(list),
                        2 * PAGE);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);

    /* unknown TRANSFER flag */
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_BIT(2), SYS(ok), SYS(buf), 8);
    run_bad_command(d, PG, &c);
}

/*
 * A fault on a page named by a list reports the physical address of that
 * page, on either side; the pages before it have been copied.
 */
static void test_transfer_list_fault_va(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t src, dst, list, end;
    PagodaFaultInfo f;
    PagodaCmds c;

    pagoda_start(d, alloc);
    src = pagoda_alloc(d, 2 * PAGE, PAGE);
    dst = pagoda_alloc(d, 2 * PAGE, PAGE);
    end = VRAM(d->vram_bar_size);       /* the first byte past segment 1 */
    pagoda_memset(d, src, 0x5a, 2 * PAGE);

    list = write_list(d, (uint64_t[]){ SYS(dst), end }, 2);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, SYS(src), SYS(list),
                        2 * PAGE);
    f = run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, end);
    g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_WRITE);
    g_assert_cmphex(pagoda_readq(d, dst + PAGE - 8), ==,
                    0x5a5a5a5a5a5a5a5aull);

    pagoda_memset(d, dst, 0, 2 * PAGE);
    list = write_list(d, (uint64_t[]){ SYS(src), end }, 2);
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, SYS(list), SYS(dst),
                        2 * PAGE);
    f = run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, end);
    g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_READ);
    g_assert_cmphex(pagoda_readq(d, dst + PAGE - 8), ==,
                    0x5a5a5a5a5a5a5a5aull);
    g_assert_cmphex(pagoda_readq(d, dst + PAGE), ==, 0);
}

/* Several list transfers in one buffer: each uses its own lists. */
static void test_transfer_lists_one_buffer(void *obj, void *data,
                                           QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t size[2] = { PAGE + 0x10, 3 * PAGE - 1 };
    uint64_t pages[2][3], lists[2], flat[2], out[2];
    g_autofree uint8_t *in = g_malloc(2 * 3 * PAGE);
    g_autofree uint8_t *tmp = g_malloc(3 * PAGE);
    PagodaCmds c;

    fill_random(in, 2 * 3 * PAGE, 99);
    for (unsigned k = 0; k < 2; k++) {
        for (unsigned i = 0; i < 3; i++) {
            pages[k][i] = SYS(pagoda_alloc(d, PAGE, PAGE));
            cpu_write(e, pages[k][i], in + (k * 3 + i) * PAGE, PAGE);
        }
        lists[k] = SYS(write_list(d, pages[k], 3));
        flat[k] = SYS(pagoda_alloc(d, 3 * PAGE + 2 * GUARD, PAGE) + GUARD);
        out[k] = VRAM(MiB + k * 64 * KiB);
        cpu_guard(e, flat[k], size[k]);
        cpu_guard(e, out[k], size[k]);
    }
    /* gather list 0, gather list 1, then scatter both back into VRAM */
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, lists[0], flat[0],
                        size[0]);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, lists[1], flat[1],
                        size[1]);
    run_ok(d, PG, &c);
    for (unsigned k = 0; k < 2; k++) {
        cpu_check(e, flat[k], in + k * 3 * PAGE, size[k], "gathered");
    }
    for (unsigned k = 0; k < 2; k++) {
        for (unsigned i = 0; i < 3; i++) {
            cpu_fill(e, pages[k][i], 0, PAGE);
        }
    }
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, flat[0], lists[0],
                        size[0]);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, flat[1], lists[1],
                        size[1]);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, lists[0], out[0],
                        size[0]);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST, lists[1], out[1],
                        size[1]);
    run_ok(d, PG, &c);
    for (unsigned k = 0; k < 2; k++) {
        cpu_check(e, out[k], in + k * 3 * PAGE, size[k], "round trip");
        cpu_read(e, pages[k][0], tmp, PAGE);
        assert_bytes(tmp, in + k * 3 * PAGE, PAGE, "scattered page");
    }
}

/*
 * Page lists longer than one scheduling slice: the device keeps them across
 * slices. One list is contiguous VRAM (merged into long runs), the other
 * the same pages in reverse order.
 */
static void test_transfer_list_large(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t size = 36 * MiB + 100, pages = DIV_ROUND_UP(size, PAGE);
    const uint64_t src_base = 64 * MiB, fwd_base = 128 * MiB;
    /* whole pages: VRAM after the data reads zero */
    g_autofree uint8_t *buf = g_malloc0(pages * PAGE);
    g_autofree uint64_t *list = g_new(uint64_t, pages);
    uint64_t fwd, rev, result;
    PagodaCmds c;

    pagoda_start(d, alloc);
    result = pagoda_alloc(d, PAGE, PAGE);
    fill_random(buf, size, 88);
    bulk_rw(qts_of(d), d->vram.addr + src_base, buf, size, true);

    /* gather: source pages listed in reverse, destination flat */
    for (uint64_t i = 0; i < pages; i++) {
        list[i] = cpu_to_le64(VRAM(src_base + (pages - 1 - i) * PAGE));
    }
    rev = pagoda_alloc(d, pages * 8, PAGE);
    bulk_rw(qts_of(d), rev, list, pages * 8, true);
    for (uint64_t i = 0; i < pages; i++) {
        list[i] = cpu_to_le64(VRAM(fwd_base + i * PAGE));
    }
    fwd = pagoda_alloc(d, pages * 8, PAGE);
    bulk_rw(qts_of(d), fwd, list, pages * 8, true);

    /* reversed source list -> contiguous destination list */
    cmds(&c);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST | PAGODA_TRANSFER_DST_LIST,
                        SYS(rev), SYS(fwd), size);
    run_ok(d, PG, &c);
    cmds(&c);
    pagoda_cmd_crc32(&c, VRAM(fwd_base), size, SYS(result));
    run_ok(d, RE, &c);
    {
        /* page i of the destination is source page pages - 1 - i */
        uint32_t crc = 0;

        for (uint64_t i = 0; i < pages; i++) {
            uint64_t n = MIN(PAGE, size - i * PAGE);

            crc = ref_crc32(crc, buf + (pages - 1 - i) * PAGE, n);
        }
        g_assert_cmphex(qtest_readl(qts_of(d), result), ==, crc);
    }
    {
        uint8_t got[PAGE];

        qtest_bufread(qts_of(d), d->vram.addr + fwd_base + 4097 * PAGE, got,
                      PAGE);
        assert_bytes(got, buf + (pages - 1 - 4097) * PAGE, PAGE,
                     "page 4097 of the list transfer");
    }
}

/* ---- Paging: FILL ------------------------------------------------------- */

static void fill_check(Env *e, uint64_t dst, uint32_t pattern, uint64_t size)
{
    g_autofree uint8_t *want = g_malloc(size + 1);
    g_autofree char *what = g_strdup_printf("FILL 0x%08x %s+0x%" PRIx64 ", %"
                                            PRIu64 " bytes", pattern,
                                            seg_name(dst),
                                            (uint64_t)PAGODA_PADDR_OFFSET(dst),
                                            size);
    PagodaCmds c;

    cpu_guard(e, dst, size);
    cmds(&c);
    pagoda_cmd_fill(&c, dst, pattern, size);
    run_ok(e->d, PG, &c);
    fill_expected(want, size, pattern);
    cpu_check(e, dst, want, size, what);
}

/*
 * The pattern's phase is relative to the start of the fill, whatever the
 * alignment of the destination and wherever its pages break.
 */
static void test_fill(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    static const uint64_t offs[] = { 0, 1, 2, 3, 0xffd };
    static const uint64_t sizes[] = { 1, 2, 3, 5, 7, 2 * PAGE + 0x1d };

    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        uint64_t win = env_window(e, s);

        for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
            for (size_t j = 0; j < ARRAY_SIZE(sizes); j++) {
                fill_check(e, win + offs[i] + GUARD, 0x11223344, sizes[j]);
            }
        }
        /* uniform bytes, and size 0 */
        fill_check(e, win + 64 * KiB + 7, 0xabababab, 3 * PAGE + 1);
        fill_check(e, win + 64 * KiB + 5, 0x00000000, PAGE);
        fill_check(e, win + 64 * KiB + 9, 0xdeadbeef, 0);
    }
}

/* A fill longer than one slice keeps the pattern's phase across slices. */
static void test_fill_large(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    const uint64_t start = PAGE + 5, size = 40 * MiB + 3;
    static const uint64_t at[] = { 0, 32 * MiB - 8, 40 * MiB + 3 - 16 };
    uint8_t guard[GUARD];
    PagodaCmds c;

    cpu_guard(e, VRAM(start), size);
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(start), 0x04030201, size);
    run_ok(e->d, PG, &c);
    for (size_t i = 0; i < ARRAY_SIZE(at); i++) {
        uint8_t got[16], want[16];

        cpu_read(e, VRAM(start + at[i]), got, sizeof(got));
        for (unsigned k = 0; k < sizeof(got); k++) {
            want[k] = (at[i] + k) % 4 + 1;     /* bytes of 0x04030201 */
        }
        assert_bytes(got, want, sizeof(got), "large FILL");
    }
    memset(guard, GUARD_BYTE, GUARD);
    {
        uint8_t got[GUARD];

        cpu_read(e, VRAM(start - GUARD), got, GUARD);
        assert_bytes(got, guard, GUARD, "before large FILL");
        cpu_read(e, VRAM(start + size), got, GUARD);
        assert_bytes(got, guard, GUARD, "after large FILL");
    }
}

/*
 * Commands of size 0 complete without touching memory: addresses that
 * would fault are not looked at, page lists are not read. CRC32 still
 * writes its result, the CRC of nothing.
 */
static void test_zero_size(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t nowhere = PAGODA_PADDR(9, 0ull);
    const uint16_t no_root = 5;
    uint64_t result;
    PagodaCmds c;

    pagoda_start(d, alloc);
    result = pagoda_alloc(d, PAGE, PAGE);
    pagoda_writeq(d, result, ~0ull);

    cmds(&c);
    pagoda_cmd_transfer(&c, 0, nowhere, nowhere, 0);
    pagoda_cmd_transfer(&c, PAGODA_TRANSFER_SRC_LIST |
                        PAGODA_TRANSFER_DST_LIST, nowhere, nowhere, 0);
    pagoda_cmd_fill(&c, nowhere, 0x12345678, 0);
    pagoda_cmd_vtransfer(&c, 0, 0x1000, 0x2000, 0);
    pagoda_cmd_vfill(&c, PAGODA_VIRTUAL_64K, 0, 0x12345678, 0);
    run_ctx(d, PG, &c, no_root);
    expect_no_fault(d);

    cmds(&c);
    pagoda_cmd_copy(&c, nowhere, nowhere, 0);
    pagoda_cmd_fill32(&c, nowhere, 0x12345678, 0);
    pagoda_cmd_write_imm(&c, nowhere, NULL, 0);
    pagoda_cmd_crc32(&c, nowhere, 0, SYS(result));
    run_ok(d, RE, &c);
    g_assert_cmphex(qtest_readl(qts_of(d), result), ==, 0);
    g_assert_cmphex(qtest_readl(qts_of(d), result + 4), ==, 0xffffffff);
}

/* ---- Paging: VIRTUAL_TRANSFER / VIRTUAL_FILL ---------------------------- */

/* A virtual range mapped page by page, with the CPU's view of each page. */
typedef struct VRange {
    uint64_t va;
    uint64_t page;
    unsigned n;
    uint64_t pa[16];
} VRange;

static void vrange_map(PagodaVM *vm, VRange *r)
{
    for (unsigned i = 0; i < r->n; i++) {
        pagoda_vm_map(vm, r->va + i * r->page, r->pa[i], r->page, r->page, 0);
    }
}

static void vrange_rw(Env *e, const VRange *r, uint64_t va, void *buf,
                      size_t len, bool write)
{
    uint8_t *b = buf;

    while (len) {
        uint64_t idx = (va - r->va) / r->page, in = (va - r->va) % r->page;
        size_t n = MIN(len, r->page - in);

        g_assert_cmpuint(idx, <, r->n);
        cpu_rw(e, r->pa[idx] + in, b, n, write);
        va += n;
        b += n;
        len -= n;
    }
}

static void vrange_check(Env *e, const VRange *r, uint64_t va,
                         const uint8_t *want, size_t len, const char *what)
{
    g_autofree uint8_t *got = g_malloc(len + 2 * GUARD);
    g_autofree uint8_t *exp = g_malloc(len + 2 * GUARD);

    memset(exp, GUARD_BYTE, len + 2 * GUARD);
    memcpy(exp + GUARD, want, len);
    vrange_rw(e, r, va - GUARD, got, len + 2 * GUARD, false);
    assert_bytes(got, exp, len + 2 * GUARD, what);
}

static void vrange_guard(Env *e, const VRange *r, uint64_t va, size_t len)
{
    g_autofree uint8_t *buf = g_malloc(len + 2 * GUARD);

    memset(buf, GUARD_BYTE, len + 2 * GUARD);
    vrange_rw(e, r, va - GUARD, buf, len + 2 * GUARD, true);
}

#define VCTX 3

/* Context VCTX: 8 scattered 4 KiB system pages, 4 shuffled 64 KiB VRAM ones. */
static void virtual_setup(Env *e, PagodaVM *vm, VRange *small, VRange *big)
{
    pagoda_vm_init(vm, e->d, VCTX, 512);
    *small = (VRange) { .va = 0x40000000, .page = PAGE, .n = 8 };
    for (unsigned i = 0; i < small->n; i++) {
        small->pa[small->n - 1 - i] = SYS(pagoda_alloc(e->d, PAGE, PAGE));
    }
    *big = (VRange) { .va = 0x80000000, .page = 64 * KiB, .n = 4 };
    for (unsigned i = 0; i < big->n; i++) {
        big->pa[i] = VRAM(8 * MiB + ((i * 3) % 4) * 64 * KiB);
    }
    vrange_map(vm, small);
    vrange_map(vm, big);
}

static void test_virtual_fill(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    g_autofree uint8_t *want = g_malloc(256 * KiB);
    PagodaVM vm;
    VRange sm, big;
    PagodaCmds c;

    virtual_setup(e, &vm, &sm, &big);

    /* 4 KiB pages, odd start and length */
    vrange_guard(e, &sm, sm.va + 0x801, 3 * PAGE + 5);
    cmds(&c);
    pagoda_cmd_vfill(&c, 0, sm.va + 0x801, 0xa1b2c3d4, 3 * PAGE + 5);
    run_ctx(e->d, PG, &c, VCTX);
    expect_no_fault(e->d);
    fill_expected(want, 3 * PAGE + 5, 0xa1b2c3d4);
    vrange_check(e, &sm, sm.va + 0x801, want, 3 * PAGE + 5, "VIRTUAL_FILL");

    /* 64 KiB: aligned start and size */
    vrange_guard(e, &big, big.va + 64 * KiB, 128 * KiB);
    cmds(&c);
    pagoda_cmd_vfill(&c, PAGODA_VIRTUAL_64K, big.va + 64 * KiB, 0x0badf00d,
                     128 * KiB);
    run_ctx(e->d, PG, &c, VCTX);
    expect_no_fault(e->d);
    fill_expected(want, 128 * KiB, 0x0badf00d);
    vrange_check(e, &big, big.va + 64 * KiB, want, 128 * KiB,
                 "VIRTUAL_FILL 64K");
}

static void test_virtual_transfer(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    const uint64_t size = 5 * PAGE + 0x77;
    g_autofree uint8_t *in = g_malloc(256 * KiB);
    PagodaVM vm;
    VRange sm, big;
    PagodaCmds c;

    virtual_setup(e, &vm, &sm, &big);

    /* system -> VRAM, odd offsets, across 4 KiB and 64 KiB pages */
    fill_random(in, size, 11);
    vrange_rw(e, &sm, sm.va + 0x123, in, size, true);
    vrange_guard(e, &big, big.va + 64 * KiB - 0x999, size);
    cmds(&c);
    pagoda_cmd_vtransfer(&c, 0, sm.va + 0x123, big.va + 64 * KiB - 0x999, size);
    run_ctx(e->d, PG, &c, VCTX);
    expect_no_fault(e->d);
    vrange_check(e, &big, big.va + 64 * KiB - 0x999, in, size,
                 "VIRTUAL_TRANSFER to VRAM");

    /* and back, to other system pages */
    fill_random(in, 2 * PAGE + 1, 12);
    vrange_rw(e, &big, big.va + 3 * 64 * KiB - PAGE, in, 2 * PAGE + 1, true);
    vrange_guard(e, &sm, sm.va + 4 * PAGE + 7, 2 * PAGE + 1);
    cmds(&c);
    pagoda_cmd_vtransfer(&c, 0, big.va + 3 * 64 * KiB - PAGE,
                         sm.va + 4 * PAGE + 7, 2 * PAGE + 1);
    run_ctx(e->d, PG, &c, VCTX);
    expect_no_fault(e->d);
    vrange_check(e, &sm, sm.va + 4 * PAGE + 7, in, 2 * PAGE + 1,
                 "VIRTUAL_TRANSFER to system");

    /* 64 KiB flag: 64 KiB aligned addresses and size */
    fill_random(in, 128 * KiB, 13);
    vrange_guard(e, &big, big.va + 128 * KiB, 128 * KiB - GUARD);
    vrange_rw(e, &big, big.va, in, 128 * KiB, true);
    cmds(&c);
    pagoda_cmd_vtransfer(&c, PAGODA_VIRTUAL_64K, big.va, big.va + 128 * KiB,
                         128 * KiB);
    run_ctx(e->d, PG, &c, VCTX);
    expect_no_fault(e->d);
    {
        g_autofree uint8_t *got = g_malloc(128 * KiB);

        vrange_rw(e, &big, big.va + 128 * KiB, got, 128 * KiB, false);
        assert_bytes(got, in, 128 * KiB, "VIRTUAL_TRANSFER 64K");
    }
}

/* With PAGODA_VIRTUAL_64K, anything not 64 KiB aligned is a bad command. */
static void test_virtual_64k_misaligned(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    PagodaVM vm;
    VRange sm, big;
    uint8_t before[64], after[64];
    /* offsets from the 64 KiB range's base */
    static const struct {
        bool fill;
        uint32_t flags;
        uint64_t a, b, size;
    } bad[] = {
        { true, PAGODA_VIRTUAL_64K, PAGE, 0, 64 * KiB },
        { true, PAGODA_VIRTUAL_64K, 0, 0, 64 * KiB + PAGE },
        { true, PAGODA_VIRTUAL_64K, 0, 0, 1 },
        { false, PAGODA_VIRTUAL_64K, 1, 128 * KiB, 64 * KiB },
        { false, PAGODA_VIRTUAL_64K, 0, 128 * KiB + 4, 64 * KiB },
        { false, PAGODA_VIRTUAL_64K, 0, 128 * KiB, 64 * KiB - 4 },
        { true, PAGODA_BIT(1), 0, 0, 64 * KiB },
        { false, PAGODA_BIT(7), 0, 128 * KiB, 64 * KiB },
    };

    virtual_setup(e, &vm, &sm, &big);
    fill_random(before, sizeof(before), 1);
    vrange_rw(e, &big, big.va, before, sizeof(before), true);
    vrange_rw(e, &big, big.va + 128 * KiB, before, sizeof(before), true);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        PagodaCmds c;
        uint64_t addr, fence;

        g_test_message("case %zu", i);
        cmds(&c);
        if (bad[i].fill) {
            pagoda_cmd_vfill(&c, bad[i].flags, big.va + bad[i].a, 0,
                             bad[i].size);
        } else {
            pagoda_cmd_vtransfer(&c, bad[i].flags, big.va + bad[i].a,
                                 big.va + bad[i].b, bad[i].size);
        }
        addr = pagoda_cmds_upload(d, &c);
        fence = pagoda_submit(d, PG, SYS(addr), pagoda_cmds_bytes(&c), VCTX, 0);
        pagoda_cmds_free(&c);
        g_assert_true(pagoda_wait_fence(d, PG, fence));
        g_assert_cmphex(expect_fault(d, PG, PAGODA_FAULT_BAD_COMMAND).va, ==,
                        SYS(addr));
    }
    vrange_rw(e, &big, big.va, after, sizeof(after), false);
    assert_bytes(after, before, sizeof(after), "VRAM after rejected fills");
    vrange_rw(e, &big, big.va + 128 * KiB, after, sizeof(after), false);
    assert_bytes(after, before, sizeof(after), "VRAM after rejected transfers");
}

/* ---- Paging: page tables ------------------------------------------------ */

#define SENTINEL 0xeeeeeeeeeeeeeeeeull

static uint32_t level_entries(QPagoda *d, unsigned level)
{
    return 1u << pagoda_rd(d, PAGODA_REG_MMU_LEVEL(level) +
                              PAGODA_MMU_LEVEL_INDEX_BITS);
}

static void table_paint(Env *e, uint64_t table)
{
    cpu_fill(e, table, 0xee, PAGE);
}

static void table_check(Env *e, uint64_t table, const uint64_t *want,
                        const char *what)
{
    uint8_t raw[PAGE];

    cpu_read(e, table, raw, PAGE);
    for (unsigned i = 0; i < PAGE / 8; i++) {
        if (ldq_le_p(raw + i * 8) != want[i]) {
            g_test_message("%s: entry %u", what, i);
            g_assert_cmphex(ldq_le_p(raw + i * 8), ==, want[i]);
        }
    }
}

/* Patch the flags of the first command of @c. */
static void set_cmd_flags(PagodaCmds *c, uint32_t flags)
{
    g_array_index(c->dw, uint32_t, 0) |= flags << 8;
}

/*
 * Tables in system memory, VRAM and the aperture segment (written through
 * the GART, to the system pages behind it).
 */
static void test_update_page_table(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t where[] = {
        SYS(pagoda_alloc(d, PAGE, PAGE)), VRAM(5 * MiB),
        env_window(e, PAGODA_SEG_APERTURE) + 2 * PAGE,
    };
    const uint64_t ptes[3] = {
        PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x123000, PAGODA_PTE_VALID),
        PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, 0x7000,
                        PAGODA_PTE_VALID | PAGODA_PTE_READ_ONLY),
        PAGODA_PTE_MAKE(PAGODA_SEG_VRAM_HIDDEN, 0x10000,
                        PAGODA_PTE_VALID | PAGODA_PTE_NO_EXECUTE),
    };
    uint64_t want[PAGE / 8];
    PagodaCmds c;

    g_assert_cmpuint(level_entries(d, 0), >=, 512);
    for (size_t w = 0; w < ARRAY_SIZE(where); w++) {
        uint64_t t = where[w];
        uint64_t pte;

        g_test_message("table in %s", seg_name(t));
        table_paint(e, t);
        for (unsigned i = 0; i < PAGE / 8; i++) {
            want[i] = SENTINEL;
        }

        /* inline entries */
        cmds(&c);
        pagoda_cmd_update_pt(&c, 0, 0, t, 5, 3, ptes);
        run_ok(d, PG, &c);
        memcpy(&want[5], ptes, sizeof(ptes));
        table_check(e, t, want, "inline");

        /* REPEAT: one entry in count slots */
        pte = PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x200000, PAGODA_PTE_VALID);
        cmds(&c);
        pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 1, t, 100, 20, &pte);
        run_ok(d, PG, &c);
        for (unsigned i = 100; i < 120; i++) {
            want[i] = pte;
        }
        table_check(e, t, want, "REPEAT");

        /* REPEAT_INCREMENT at levels 0, 1 and 2: a page of that level each */
        for (unsigned level = 0; level < 3; level++) {
            uint64_t step = 1ull << (12 + 9 * level);
            uint64_t base = level ? step * 3 : 0x300000;
            uint64_t flags = PAGODA_PTE_VALID | PAGODA_PTE_CACHE_COHERENT |
                             (level ? PAGODA_PTE_LARGE_PAGE : 0);
            uint32_t start = 200 + 50 * level, count = 40 - 10 * level;

            pte = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, base, flags);
            cmds(&c);
            pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT |
                                 PAGODA_UPT_REPEAT_INCREMENT, level, t, start,
                                 count, &pte);
            run_ok(d, PG, &c);
            for (unsigned i = 0; i < count; i++) {
                want[start + i] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM,
                                                  base + i * step, flags);
            }
            table_check(e, t, want, "REPEAT_INCREMENT");
        }

        /* the last entry of a table, and a whole table */
        cmds(&c);
        pagoda_cmd_update_pt(&c, 0, 0, t, level_entries(d, 0) - 1, 1, ptes);
        run_ok(d, PG, &c);
        want[level_entries(d, 0) - 1] = ptes[0];
        table_check(e, t, want, "last entry");
        pte = PAGODA_PTE_MAKE(PAGODA_SEG_SYSTEM, 0x5000, PAGODA_PTE_VALID);
        cmds(&c);
        pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 0, t, 0, 512, &pte);
        run_ok(d, PG, &c);
        for (unsigned i = 0; i < 512; i++) {
            want[i] = pte;
        }
        table_check(e, t, want, "whole table");
    }
}

static void test_update_page_table_leaf64(void *obj, void *data,
                                          QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint32_t n = pagoda_rd(d, PAGODA_REG_MMU_LEAF64_ENTRIES);
    uint64_t t = SYS(pagoda_alloc(d, PAGE, PAGE));
    uint64_t want[PAGE / 8];
    uint64_t pte = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, MiB, PAGODA_PTE_VALID);
    PagodaCmds c;

    g_assert_cmpuint(n, ==, 32);
    table_paint(e, t);
    for (unsigned i = 0; i < PAGE / 8; i++) {
        want[i] = SENTINEL;
    }
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_LEAF64 | PAGODA_UPT_REPEAT |
                         PAGODA_UPT_REPEAT_INCREMENT, 0, t, 1, n - 1, &pte);
    run_ok(d, PG, &c);
    for (unsigned i = 1; i < n; i++) {
        want[i] = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, MiB + (i - 1) * 64 * KiB,
                                  PAGODA_PTE_VALID);
    }
    table_check(e, t, want, "LEAF64 REPEAT_INCREMENT");
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_LEAF64, 0, t, 0, 1, &pte);
    run_ok(d, PG, &c);
    want[0] = pte;
    table_check(e, t, want, "LEAF64 inline");
}

/* With 2 levels the root is large: long REPEAT updates of it. */
static void test_update_page_table_root(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint32_t start = 700, count = 1500;
    uint32_t root = level_entries(d, 1);
    uint64_t t = SYS(pagoda_alloc(d, 4 * PAGE, PAGE));
    uint64_t pte = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM_HIDDEN, 0,
                                   PAGODA_PTE_VALID | PAGODA_PTE_LARGE_PAGE);
    uint8_t raw[4 * PAGE];
    PagodaCmds c;

    QEMU_BUILD_BUG_ON(sizeof(raw) < 2 * 1024 * 8);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_MMU_LEVELS), ==, 2);
    g_assert_cmpuint(root, >, start + count);
    cpu_fill(e, t, 0xee, 4 * PAGE);
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT | PAGODA_UPT_REPEAT_INCREMENT,
                         1, t, start, count, &pte);
    run_ok(d, PG, &c);
    cpu_read(e, t, raw, sizeof(raw));
    for (uint32_t i = 0; i < sizeof(raw) / 8; i++) {
        uint64_t want = i < start || i >= start + count ? SENTINEL :
            PAGODA_PTE_MAKE(PAGODA_SEG_VRAM_HIDDEN, (i - start) * 2ull * MiB,
                            PAGODA_PTE_VALID | PAGODA_PTE_LARGE_PAGE);

        if (ldq_le_p(raw + i * 8) != want) {
            g_test_message("root entry %u", i);
            g_assert_cmphex(ldq_le_p(raw + i * 8), ==, want);
        }
    }
    /* a whole root in VRAM: its last 600 entries, then one too many */
    t = VRAM(16 * MiB);
    cpu_fill(e, t + (root - 1024) * 8ull, 0xee, 2 * 1024 * 8);
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 1, t, root - 600, 600, &pte);
    run_ok(d, PG, &c);
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 1, t, root - 599, 600, &pte);
    run_bad_command(d, PG, &c);
    cpu_read(e, t + (root - 1024) * 8ull, raw, 2 * 1024 * 8);
    for (uint32_t i = 0; i < 2 * 1024; i++) {
        uint64_t want = i >= 1024 - 600 && i < 1024 ? pte : SENTINEL;

        if (ldq_le_p(raw + i * 8) != want) {
            g_test_message("entry %u before the end of the root", 1024 - i);
            g_assert_cmphex(ldq_le_p(raw + i * 8), ==, want);
        }
    }
}

/* Out-of-range or malformed updates are rejected and write nothing. */
static void test_update_page_table_bad(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint32_t levels = pagoda_rd(d, PAGODA_REG_MMU_LEVELS);
    uint32_t n0 = level_entries(d, 0);
    uint32_t n64 = pagoda_rd(d, PAGODA_REG_MMU_LEAF64_ENTRIES);
    uint64_t t = SYS(pagoda_alloc(d, PAGE, PAGE));
    uint64_t ptes[4] = {
        PAGODA_PTE_MAKE(0, 0x1000, PAGODA_PTE_VALID),
        PAGODA_PTE_MAKE(0, 0x2000, PAGODA_PTE_VALID),
        PAGODA_PTE_MAKE(0, 0x3000, PAGODA_PTE_VALID),
        PAGODA_PTE_MAKE(0, 0x4000, PAGODA_PTE_VALID),
    };
    const struct {
        uint32_t flags, level, start, count;
    } bad[] = {
        { 0, levels, 0, 1 },
        { 0, 7, 0, 1 },
        { 0, 0, n0, 1 },
        { 0, 0, n0 - 2, 3 },
        { 0, 0, 0xffffffff, 2 },
        { 0, 0, 0, 0 },
        { PAGODA_UPT_REPEAT, 0, 1, n0 },
        { PAGODA_UPT_REPEAT, 0, 2, 0xffffffff },
        { PAGODA_UPT_REPEAT, levels - 1, level_entries(d, levels - 1), 1 },
        { PAGODA_UPT_LEAF64, 1, 0, 1 },
        { PAGODA_UPT_LEAF64, 0, n64, 1 },
        { PAGODA_UPT_LEAF64, 0, n64 - 1, 2 },
        { PAGODA_UPT_LEAF64 | PAGODA_UPT_REPEAT, 0, 0, n64 + 1 },
        { PAGODA_UPT_REPEAT_INCREMENT, 0, 0, 1 },
        { PAGODA_BIT(3), 0, 0, 1 },
        { PAGODA_BIT(7) | PAGODA_UPT_REPEAT, 0, 0, 1 },
    };
    uint64_t want[PAGE / 8];
    PagodaCmds c;

    table_paint(e, t);
    for (unsigned i = 0; i < PAGE / 8; i++) {
        want[i] = SENTINEL;
    }
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        uint32_t inline_count = bad[i].flags & PAGODA_UPT_REPEAT ? 1 :
                                bad[i].count;

        g_test_message("case %zu", i);
        cmds(&c);
        if (inline_count > ARRAY_SIZE(ptes)) {
            /* the header claims count entries; only a few follow */
            pagoda_cmd_update_pt(&c, bad[i].flags | PAGODA_UPT_REPEAT,
                                 bad[i].level, t, bad[i].start, bad[i].count,
                                 ptes);
            g_array_index(c.dw, uint32_t, 0) &= ~(PAGODA_UPT_REPEAT << 8);
        } else {
            pagoda_cmd_update_pt(&c, bad[i].flags, bad[i].level, t,
                                 bad[i].start, bad[i].count, ptes);
        }
        run_bad_command(d, PG, &c);
    }
    /* dword count that does not match count */
    {
        const uint32_t raw[] = {
            PAGODA_CMD_HEADER(PAGODA_CMD_UPDATE_PAGE_TABLE, 0, 8), 0,
            (uint32_t)t, (uint32_t)(t >> 32), 0, 2,
            (uint32_t)ptes[0], (uint32_t)(ptes[0] >> 32),
        };
        const uint32_t rep[] = {
            PAGODA_CMD_HEADER(PAGODA_CMD_UPDATE_PAGE_TABLE,
                              PAGODA_UPT_REPEAT, 10), 0,
            (uint32_t)t, (uint32_t)(t >> 32), 0, 2,
            (uint32_t)ptes[0], (uint32_t)(ptes[0] >> 32),
            (uint32_t)ptes[1], (uint32_t)(ptes[1] >> 32),
        };

        cmds(&c);
        pagoda_cmd_raw(&c, raw, ARRAY_SIZE(raw));
        run_bad_command(d, PG, &c);
        cmds(&c);
        pagoda_cmd_raw(&c, rep, ARRAY_SIZE(rep));
        run_bad_command(d, PG, &c);
    }
    table_check(e, t, want, "table after rejected updates");

    /* a table where there is no memory */
    cmds(&c);
    pagoda_cmd_update_pt(&c, 0, 0, PAGODA_PADDR(12, 0ull), 0, 1, ptes);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    cmds(&c);
    pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 0,
                         VRAM(d->vram_bar_size - PAGE / 2), 0, 512, ptes);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
}

static void test_copy_ptes(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t src[] = { SYS(pagoda_alloc(d, PAGE, PAGE)), VRAM(6 * MiB) };
    uint64_t dst = SYS(pagoda_alloc(d, PAGE, PAGE));
    uint64_t want[PAGE / 8];
    uint8_t raw[PAGE];
    PagodaCmds c;

    for (unsigned i = 0; i < PAGE / 8; i++) {
        want[i] = SENTINEL;
    }
    table_paint(e, dst);
    for (size_t s = 0; s < ARRAY_SIZE(src); s++) {
        for (unsigned i = 0; i < PAGE / 8; i++) {
            stq_le_p(raw + i * 8, PAGODA_PTE_MAKE(s, (i + 1) * PAGE + s,
                                                  PAGODA_PTE_VALID));
        }
        cpu_write(e, src[s], raw, PAGE);
        cmds(&c);
        pagoda_cmd_copy_ptes(&c, src[s], 3 + s * 100, dst, 500 - s * 200, 7);
        run_ok(d, PG, &c);
        for (unsigned i = 0; i < 7; i++) {
            want[500 - s * 200 + i] = ldq_le_p(raw + (3 + s * 100 + i) * 8);
        }
        table_check(e, dst, want, "COPY_PTES");
    }
    /* the whole table, system to VRAM */
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, dst, 0, VRAM(6 * MiB), 0, 512);
    run_ok(d, PG, &c);
    table_check(e, VRAM(6 * MiB), want, "COPY_PTES of a whole table");
}

static void test_copy_ptes_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t src = SYS(pagoda_alloc(d, PAGE, PAGE));
    uint64_t dst = SYS(pagoda_alloc(d, PAGE, PAGE));
    uint64_t want[PAGE / 8];
    PagodaCmds c;

    for (unsigned i = 0; i < PAGE / 8; i++) {
        want[i] = SENTINEL;
    }
    table_paint(e, dst);
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, src, 0, dst, 0, 0);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, src, 0, dst, 0, 0xffffffff);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, src, 0xfffffff0, dst, 0, 0x20);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, src, 0, dst, 0xffffffff, 1);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, src, 0, dst, 0, 4);
    set_cmd_flags(&c, 1);
    run_bad_command(d, PG, &c);
    table_check(e, dst, want, "table after rejected copies");
    cmds(&c);
    pagoda_cmd_copy_ptes(&c, PAGODA_PADDR(20, 0ull), 0, dst, 0, 4);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    table_check(e, dst, want, "table after a copy from nowhere");
}

static void test_flush_tlb_args(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint32_t n, nctx;
    PagodaCmds c;

    pagoda_start(d, alloc);
    nctx = pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS);
    n = pagoda_rd(d, PAGODA_REG_TLB_FLUSHES);
    cmds(&c);
    pagoda_cmd_flush_tlb(&c, 0, 0, 0, 0);
    pagoda_cmd_flush_tlb(&c, 0, nctx - 1, 0x10000, PAGE);
    pagoda_cmd_flush_tlb(&c, PAGODA_FLUSH_ALL_CONTEXTS, 999, 0, 0);
    pagoda_cmd_flush_tlb(&c, PAGODA_FLUSH_ALL_CONTEXTS, 0, ~0ull, ~0ull);
    run_ok(d, PG, &c);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_FLUSHES), ==, n + 4);

    cmds(&c);
    pagoda_cmd_flush_tlb(&c, 0, nctx, 0, 0);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_flush_tlb(&c, 0, 0xffffffff, 0, 0);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_flush_tlb(&c, PAGODA_BIT(1), 0, 0, 0);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(PAGODA_CMD_FLUSH_TLB,
                                                        0, 4), 0, 0, 0 }, 4);
    run_bad_command(d, PG, &c);
    /* a render engine does not run paging commands */
    cmds(&c);
    pagoda_cmd_flush_tlb(&c, 0, 0, 0, 0);
    run_bad_command(d, RE, &c);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_TLB_FLUSHES), ==, n + 4);
}

/*
 * The paging sequence of a mapping change: UPDATE_PAGE_TABLE, FLUSH_TLB,
 * then a virtual fill lands in the newly mapped page.
 */
static void test_remap_sequence(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t va = 0x123456000ull;
    uint64_t table, pte;
    uint8_t want[PAGE], got[PAGE], zero[PAGE] = { 0 };
    PagodaVM vm;
    PagodaCmds c;

    pagoda_vm_init(&vm, d, VCTX, 512);
    pagoda_vm_map(&vm, va, VRAM(9 * MiB), PAGE, PAGE, 0);
    table = pagoda_vm_table(&vm, va, 0, false);
    fill_expected(want, PAGE, 0x5a5a0001);
    for (unsigned round = 0; round < 3; round++) {
        uint64_t page = 9 * MiB + (round + 1) * PAGE;

        pte = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, page, PAGODA_PTE_VALID);
        cmds(&c);
        pagoda_cmd_vfill(&c, 0, va, 0x5a5a0000 + round, PAGE);
        pagoda_cmd_update_pt(&c, 0, 0, SYS(table), (va >> 12) & 511, 1, &pte);
        pagoda_cmd_flush_tlb(&c, 0, VCTX, va, PAGE);
        pagoda_cmd_vfill(&c, 0, va, 0x5a5a0001 + round, PAGE);
        run_ctx(d, PG, &c, VCTX);
        expect_no_fault(d);
        g_assert_cmphex(pagoda_readq(d, table + ((va >> 12) & 511) * 8), ==,
                        pte);
        fill_expected(want, PAGE, 0x5a5a0001 + round);
        cpu_read(e, VRAM(page), got, PAGE);
        assert_bytes(got, want, PAGE, "new page after FLUSH_TLB");
    }
    cpu_read(e, VRAM(9 * MiB + 4 * PAGE), got, PAGE);
    assert_bytes(got, zero, PAGE, "page never mapped");
}

/*
 * FLUSH_TLB ranges that reach the top of the 64-bit space flush everything
 * from their start: the end of the range must not wrap around.
 */
static void test_flush_tlb_range_end(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t va = 0x40000000;
    const struct {
        uint64_t va, size;
    } ranges[] = {
        { 0, ~0ull },
        { 0x1000, ~0ull },
        { va, ~0ull },
        { va, -va },            /* exactly to 2^64 */
        { va - PAGE, ~0ull - 5 },
        { va, 1 },
        { va + PAGE - 1, 1 },
        { va - 1, 2 },
    };
    uint64_t table, pte;
    uint8_t want[PAGE], got[PAGE];
    PagodaVM vm;
    PagodaCmds c;

    pagoda_vm_init(&vm, d, VCTX, 512);
    pagoda_vm_map(&vm, va, VRAM(20 * MiB), PAGE, PAGE, 0);
    table = pagoda_vm_table(&vm, va, 0, false);
    for (size_t i = 0; i < ARRAY_SIZE(ranges); i++) {
        uint64_t page = 20 * MiB + (i + 1) * PAGE;

        g_test_message("flush 0x%" PRIx64 "+0x%" PRIx64, ranges[i].va,
                       ranges[i].size);
        pte = PAGODA_PTE_MAKE(PAGODA_SEG_VRAM, page, PAGODA_PTE_VALID);
        cmds(&c);
        /* use the old translation, so that the TLB holds it */
        pagoda_cmd_vfill(&c, 0, va, 0, 4);
        pagoda_cmd_update_pt(&c, 0, 0, table, (va >> 12) & 511, 1, &pte);
        pagoda_cmd_flush_tlb(&c, 0, VCTX, ranges[i].va, ranges[i].size);
        pagoda_cmd_vfill(&c, 0, va, 0xf1f1f100 + i, PAGE);
        run_ctx(d, PG, &c, VCTX);
        expect_no_fault(d);
        fill_expected(want, PAGE, 0xf1f1f100 + i);
        cpu_read(e, VRAM(page), got, PAGE);
        assert_bytes(got, want, PAGE, "page mapped before the flush");
    }
}

/* ---- Paging: aperture segment ------------------------------------------- */

static void gart_check(Env *e, const uint64_t *want, uint32_t n)
{
    g_autofree uint8_t *raw = g_malloc(n * 8);

    cpu_read(e, e->gart_table, raw, n * 8);
    for (uint32_t i = 0; i < n; i++) {
        if (ldq_le_p(raw + i * 8) != want[i]) {
            g_test_message("GART entry %u", i);
            g_assert_cmphex(ldq_le_p(raw + i * 8), ==, want[i]);
        }
    }
}

static void aperture_case(Env *e, uint64_t gart_table)
{
    QPagoda *d = e->d;
    uint64_t sys[4], map[4], want[64] = { 0 };
    uint8_t got[PAGE], zero[PAGE] = { 0 }, nines[PAGE];
    g_autofree uint8_t *data = g_malloc(4 * PAGE);
    g_autofree uint8_t *holes = g_malloc(4 * PAGE);
    PagodaCmds c;

    cpu_fill(e, gart_table, 0, 64 * 8);
    env_gart(e, gart_table, 64);
    for (unsigned i = 0; i < 4; i++) {
        sys[i] = pagoda_alloc(d, PAGE, PAGE);
    }
    map[0] = sys[2];
    map[1] = sys[0];
    map[2] = sys[3];
    map[3] = sys[1];
    env_map_aperture(e, 10, 4, map);
    for (unsigned i = 0; i < 4; i++) {
        want[10 + i] = map[i] | PAGODA_GART_VALID;
    }
    gart_check(e, want, 64);

    /* GPU writes through the aperture land in the scattered system pages */
    transfer_check(e, VRAM(0x4000), APER(10 * PAGE + 0x123), 3 * PAGE + 0x456,
                   21);

    /* CPU writes to the system pages are seen by the GPU */
    fill_random(data, 4 * PAGE, 23);
    for (unsigned i = 0; i < 4; i++) {
        qtest_bufwrite(e->qts, map[i], data + i * PAGE, PAGE);
    }
    cpu_guard(e, VRAM(MiB), 4 * PAGE);
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, APER(10 * PAGE), VRAM(MiB), 4 * PAGE);
    run_ok(d, PG, &c);
    cpu_check(e, VRAM(MiB), data, 4 * PAGE, "aperture read");

    /* unmapped pages read zero... */
    cmds(&c);
    pagoda_cmd_unmap_aperture(&c, 11, 2);
    run_ok(d, PG, &c);
    e->gart[11] = e->gart[12] = 0;
    want[11] = want[12] = 0;
    gart_check(e, want, 64);
    cpu_guard(e, VRAM(2 * MiB), 4 * PAGE);
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, APER(10 * PAGE), VRAM(2 * MiB), 4 * PAGE);
    run_ok(d, PG, &c);
    memcpy(holes, data, 4 * PAGE);
    memset(holes + PAGE, 0, 2 * PAGE);
    cpu_check(e, VRAM(2 * MiB), holes, 4 * PAGE, "aperture with a hole");

    /* ...and drop writes: the pages they named keep their data */
    cmds(&c);
    pagoda_cmd_fill(&c, APER(10 * PAGE), 0x99999999, 4 * PAGE);
    run_ok(d, PG, &c);
    memset(nines, 0x99, PAGE);
    qtest_bufread(e->qts, map[0], got, PAGE);
    assert_bytes(got, nines, PAGE, "aperture page 10 filled");
    qtest_bufread(e->qts, map[3], got, PAGE);
    assert_bytes(got, nines, PAGE, "aperture page 13 filled");
    qtest_bufread(e->qts, map[1], got, PAGE);
    assert_bytes(got, data + PAGE, PAGE, "page behind unmapped page 11");
    qtest_bufread(e->qts, map[2], got, PAGE);
    assert_bytes(got, data + 2 * PAGE, PAGE, "page behind unmapped page 12");

    /* pages past GART_ENTRIES behave as unmapped */
    cpu_fill(e, VRAM(3 * MiB), 0x55, PAGE);
    cmds(&c);
    pagoda_cmd_fill(&c, APER(64 * PAGE), 0x12345678, PAGE);
    pagoda_cmd_transfer(&c, 0, APER(64 * PAGE), VRAM(3 * MiB), PAGE);
    run_ok(d, PG, &c);
    cpu_read(e, VRAM(3 * MiB), got, PAGE);
    assert_bytes(got, zero, PAGE, "aperture beyond the GART");
    gart_check(e, want, 64);
}

static void test_aperture(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);

    g_assert_cmpuint(pagoda_rd64(e->d, PAGODA_REG_GART_BASE_LO), ==, 0);
    g_assert_cmpuint(pagoda_rd(e->d, PAGODA_REG_GART_ENTRIES), ==, 0);
    aperture_case(e, SYS(pagoda_alloc(e->d, PAGE, PAGE)));
}

/* The GART may live in VRAM; the CPU sees the entries through BAR2. */
static void test_aperture_gart_in_vram(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);

    aperture_case(e, VRAM(10 * MiB));
}

static void test_aperture_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t p = pagoda_alloc(d, PAGE, PAGE), want[64];
    uint32_t aperture_pages;
    PagodaCmds c;

    env_gart(e, SYS(pagoda_alloc(d, PAGE, PAGE)), 64);
    for (unsigned i = 0; i < 64; i++) {
        want[i] = 0;
    }
    /* beyond the programmed entries: nothing written */
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 62, 4, (uint64_t[]){ p, p, p, p });
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0xffffffff, 2, (uint64_t[]){ p, p });
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    cmds(&c);
    pagoda_cmd_unmap_aperture(&c, 63, 2);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    /* pages that are not 4 KiB aligned system addresses */
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 2, (uint64_t[]){ p, p + 0x10 });
    run_fault(d, PG, &c, PAGODA_FAULT_BAD_COMMAND);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 2, (uint64_t[]){ p, VRAM(0) });
    run_fault(d, PG, &c, PAGODA_FAULT_BAD_COMMAND);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 1, (uint64_t[]){ p | (1ull << 52) });
    run_fault(d, PG, &c, PAGODA_FAULT_BAD_COMMAND);
    /* malformed commands */
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 0, NULL);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_unmap_aperture(&c, 0, 0);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 2, (uint64_t[]){ p, p });
    g_array_index(c.dw, uint32_t, 2) = 3;   /* count beyond the command */
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 1, (uint64_t[]){ p });
    set_cmd_flags(&c, 1);
    run_bad_command(d, PG, &c);
    gart_check(e, want, 64);

    /* GART_ENTRIES larger than the aperture segment is refused */
    aperture_pages = pagoda_rd64(d, SEGREG(PAGODA_SEG_APERTURE,
                                           PAGODA_SEG_SIZE_LO)) /
                     PAGODA_GART_PAGE_SIZE;
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, aperture_pages + 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_GART_ENTRIES), ==, 0);
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, 0xffffffff);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_GART_ENTRIES), ==, 0);
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, aperture_pages);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_GART_ENTRIES), ==, aperture_pages);
}

/* ---- Paging: CPU host aperture ------------------------------------------ */

static void check_bar4_unmapped(QPagoda *d, uint64_t off)
{
    QTestState *qts = qts_of(d);
    uint64_t a = d->host_aperture.addr + off;

    g_assert_cmphex(qtest_readb(qts, a), ==, 0xff);
    g_assert_cmphex(qtest_readw(qts, a + 2), ==, 0xffff);
    g_assert_cmphex(qtest_readl(qts, a + 4), ==, 0xffffffff);
    g_assert_cmphex(qtest_readq(qts, a + 8), ==, ~0ull);
}

static void test_host_aperture(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    QTestState *qts = e->qts;
    const uint32_t ps = e->psize;
    const uint32_t pages = pagoda_rd(d, PAGODA_REG_HOST_APERTURE_PAGES);
    const uint64_t bar4 = d->host_aperture.addr;
    g_autofree uint8_t *buf = g_malloc(ps);
    g_autofree uint8_t *want = g_malloc(ps);
    uint64_t sys = pagoda_alloc(d, ps, PAGE);
    PagodaCmds c;

    g_assert_cmpuint(pages, ==, d->host_aperture_bar_size / ps);
    /* at power-on every page is unmapped */
    check_bar4_unmapped(d, 0);
    check_bar4_unmapped(d, (uint64_t)(pages - 1) * ps + ps - 16);

    /* hidden pages 3 and 8 at BAR4 pages 5 and 1 */
    env_map_host(e, PAGODA_SEG_VRAM_HIDDEN, 2, (uint32_t[]){ 5, 1 },
                 (uint32_t[]){ 3, 8 });

    /* GPU writes are visible through BAR4 */
    cmds(&c);
    pagoda_cmd_fill(&c, HID(3 * ps), 0xc0ffee11, ps);
    run_ok(d, PG, &c);
    qtest_bufread(qts, bar4 + 5 * ps, buf, ps);
    fill_expected(want, ps, 0xc0ffee11);
    assert_bytes(buf, want, ps, "BAR4 page 5 = hidden page 3");
    g_assert_cmphex(qtest_readl(qts, bar4 + 1 * ps), ==, 0);

    /* CPU writes through BAR4 are visible to a GPU TRANSFER */
    fill_random(want, ps, 31);
    qtest_bufwrite(qts, bar4 + 1 * ps, want, ps);
    qtest_writeq(qts, bar4 + ps + 8, 0x1122334455667788ull);
    qtest_writel(qts, bar4 + ps + 20, 0xaabbccdd);
    qtest_writew(qts, bar4 + ps + 30, 0xeeff);
    qtest_writeb(qts, bar4 + ps + 33, 0x42);
    stq_le_p(want + 8, 0x1122334455667788ull);
    stl_le_p(want + 20, 0xaabbccdd);
    stw_le_p(want + 30, 0xeeff);
    want[33] = 0x42;
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, HID(8 * ps), SYS(sys), ps);
    run_ok(d, PG, &c);
    qtest_bufread(qts, sys, buf, ps);
    assert_bytes(buf, want, ps, "hidden page 8 written through BAR4 page 1");

    /* unmapped pages read all ones and drop writes */
    qtest_writel(qts, bar4, 0x12345678);
    qtest_writeq(qts, bar4 + 8, 0x12345678);
    check_bar4_unmapped(d, 0);
    env_map_host(e, PAGODA_SEG_VRAM_HIDDEN, 1, (uint32_t[]){ 0 },
                 (uint32_t[]){ 20 });
    g_assert_cmphex(qtest_readq(qts, bar4), ==, 0);
    g_assert_cmphex(qtest_readq(qts, bar4 + 8), ==, 0);

    /* remap a page and unmap another */
    env_map_host(e, PAGODA_SEG_VRAM_HIDDEN, 1, (uint32_t[]){ 5 },
                 (uint32_t[]){ 8 });
    qtest_bufread(qts, bar4 + 5 * ps, buf, ps);
    assert_bytes(buf, want, ps, "BAR4 page 5 remapped to hidden page 8");
    cmds(&c);
    pagoda_cmd_unmap_host_aperture(&c, 2, (uint32_t[]){ 1, 0 });
    run_ok(d, PG, &c);
    check_bar4_unmapped(d, 1 * ps);
    check_bar4_unmapped(d, 0);
    qtest_bufread(qts, bar4 + 5 * ps, buf, ps);
    assert_bytes(buf, want, ps, "BAR4 page 5 after unmapping others");

    /* pages of the CPU-visible segment too: BAR2 and BAR4 agree */
    env_map_host(e, PAGODA_SEG_VRAM, 1, (uint32_t[]){ pages - 1 },
                 (uint32_t[]){ 2 });
    qtest_writeq(qts, d->vram.addr + 2 * ps + 16, 0xfeedfacecafebeefull);
    g_assert_cmphex(qtest_readq(qts, bar4 + (uint64_t)(pages - 1) * ps + 16),
                    ==, 0xfeedfacecafebeefull);
    qtest_writel(qts, bar4 + (uint64_t)(pages - 1) * ps + 40, 0x87654321);
    g_assert_cmphex(qtest_readl(qts, d->vram.addr + 2 * ps + 40), ==,
                    0x87654321);
}

/* Bad mappings are refused as a whole: no pair of the command is applied. */
static void test_host_aperture_bad(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint32_t ps = e->psize;
    const uint32_t pages = pagoda_rd(d, PAGODA_REG_HOST_APERTURE_PAGES);
    const uint32_t hidden_pages =
        pagoda_rd64(d, SEGREG(PAGODA_SEG_VRAM_HIDDEN, PAGODA_SEG_SIZE_LO)) / ps;
    const struct {
        uint32_t seg, bar, seg_page;
    } bad[] = {
        { PAGODA_SEG_VRAM_HIDDEN, pages, 0 },
        { PAGODA_SEG_VRAM_HIDDEN, 0xffffffff, 0 },
        { PAGODA_SEG_VRAM_HIDDEN, 3, hidden_pages },
        { PAGODA_SEG_VRAM_HIDDEN, 3, 0xffffffff },
        { PAGODA_SEG_VRAM, 3, d->vram_bar_size / ps },
        { PAGODA_SEG_SYSTEM, 3, 0 },
        { PAGODA_SEG_APERTURE, 3, 0 },
        { 9, 3, 0 },
        { 0xffffffff, 3, 0 },
    };
    PagodaCmds c;

    env_map_host(e, PAGODA_SEG_VRAM_HIDDEN, 1, (uint32_t[]){ 4 },
                 (uint32_t[]){ 1 });
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        g_test_message("case %zu", i);
        cmds(&c);
        /* a good pair first: it must not be applied either */
        pagoda_cmd_map_host_aperture(&c, bad[i].seg, 2,
                                     (uint32_t[]){ 7, bad[i].bar },
                                     (uint32_t[]){ 0, bad[i].seg_page });
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        check_bar4_unmapped(d, 7 * ps);
        check_bar4_unmapped(d, 3 * ps);
    }
    /* malformed: count 0, count beyond the command, flags */
    cmds(&c);
    pagoda_cmd_map_host_aperture(&c, PAGODA_SEG_VRAM_HIDDEN, 0, NULL, NULL);
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_map_host_aperture(&c, PAGODA_SEG_VRAM_HIDDEN, 1,
                                 (uint32_t[]){ 7 }, (uint32_t[]){ 0 });
    g_array_index(c.dw, uint32_t, 2) = 2;
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_map_host_aperture(&c, PAGODA_SEG_VRAM_HIDDEN, 1,
                                 (uint32_t[]){ 7 }, (uint32_t[]){ 0 });
    set_cmd_flags(&c, 0x80);
    run_bad_command(d, PG, &c);
    check_bar4_unmapped(d, 7 * ps);
    /* unmapping a page out of range unmaps nothing */
    cmds(&c);
    pagoda_cmd_unmap_host_aperture(&c, 2, (uint32_t[]){ 4, pages });
    run_bad_command(d, PG, &c);
    cmds(&c);
    pagoda_cmd_unmap_host_aperture(&c, 0, NULL);
    run_bad_command(d, PG, &c);
    qtest_writel(e->qts, d->host_aperture.addr + 4 * ps, 0x600d600d);
    g_assert_cmphex(qtest_readl(e->qts, d->host_aperture.addr + 4 * ps), ==,
                    0x600d600d);
}

/* ---- Fences ------------------------------------------------------------- */

static void test_signal_fence(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t buf;
    uint8_t got[32], want[32];
    PagodaCmds c;

    pagoda_start(d, alloc);
    buf = pagoda_alloc(d, PAGE, PAGE);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        pagoda_memset(d, buf, 0xcc, sizeof(got));
        cmds(&c);
        pagoda_cmd_signal(&c, SYS(buf + 8), 0x0123456789abcdefull + e, false);
        run_ok(d, e, &c);
        memset(want, 0xcc, sizeof(want));
        stq_le_p(want + 8, 0x0123456789abcdefull + e);
        pagoda_memread(d, buf, got, sizeof(got));
        assert_bytes(got, want, sizeof(got), "SIGNAL_FENCE");
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);

        /* with INTERRUPT: the engine's bit, and only it */
        cmds(&c);
        pagoda_cmd_signal(&c, SYS(buf + 16), ~0ull - e, true);
        run_ok(d, e, &c);
        stq_le_p(want + 16, ~0ull - e);
        pagoda_memread(d, buf, got, sizeof(got));
        assert_bytes(got, want, sizeof(got), "SIGNAL_FENCE with INTERRUPT");
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                        PAGODA_INT_ENGINE(e));
        pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(e));
    }
    /* into VRAM, and a bad size */
    cmds(&c);
    pagoda_cmd_signal(&c, VRAM(0x100), 0xfedcba9876543210ull, false);
    run_ok(d, PG, &c);
    g_assert_cmphex(qpci_io_readq(&d->dev, d->vram, 0x100), ==,
                    0xfedcba9876543210ull);
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(PAGODA_CMD_SIGNAL_FENCE,
                                                        0, 4),
                                     0, (uint32_t)buf, 0 }, 4);
    run_bad_command(d, RE, &c);
}

/* Submit a render entry that waits for *@addr >= @value, then writes @mark. */
static uint64_t submit_waiter(QPagoda *d, uint64_t addr, uint64_t value,
                              uint64_t mark)
{
    PagodaCmds c;

    cmds(&c);
    pagoda_cmd_wait(&c, SYS(addr), value);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 0x600d }, 1);
    return submit(d, RE, &c, 0);
}

static void assert_waiting(QPagoda *d, uint64_t fence, uint64_t mark)
{
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_WAITING,
                              PAGODA_ENG_STATUS_WAITING));
    g_usleep(2000);
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY | PAGODA_ENG_STATUS_WAITING);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), <, fence);
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0);
}

/* The CPU provides the value; the compare is >= on 64 bits. */
static void test_wait_fence_cpu(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t sem, mark, fence;

    pagoda_start(d, alloc);
    sem = pagoda_alloc(d, PAGE, PAGE);
    mark = pagoda_alloc(d, PAGE, PAGE);
    fence = submit_waiter(d, sem, 0x100000005ull, mark);
    assert_waiting(d, fence, mark);
    pagoda_writeq(d, sem, 0xffffffffull);       /* low half bigger: not yet */
    assert_waiting(d, fence, mark);
    pagoda_writeq(d, sem, 0x100000004ull);
    assert_waiting(d, fence, mark);
    pagoda_writeq(d, sem, 0x100000006ull);      /* beyond the value: go */
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0x600d);
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==, 0);
    /* a value already reached does not wait */
    qtest_writel(qts_of(d), mark, 0);
    g_assert_true(pagoda_wait_fence(d, RE, submit_waiter(d, sem, 6, mark)));
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0x600d);
    expect_no_fault(d);
}

/* The paging engine provides the value with SIGNAL_FENCE. */
static void test_wait_fence_paging(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t sem, mark, fence;
    PagodaCmds c;

    pagoda_start(d, alloc);
    sem = pagoda_alloc(d, PAGE, PAGE);
    mark = pagoda_alloc(d, PAGE, PAGE);
    fence = submit_waiter(d, sem, 7, mark);
    assert_waiting(d, fence, mark);
    /* the paging engine runs while the render engine waits */
    cmds(&c);
    pagoda_cmd_signal(&c, SYS(sem), 6, false);
    run_ok(d, PG, &c);
    assert_waiting(d, fence, mark);
    cmds(&c);
    pagoda_cmd_signal(&c, SYS(sem), 7, false);
    run_ok(d, PG, &c);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0x600d);
    expect_no_fault(d);
}

static void test_wait_fence_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;

    pagoda_start(d, alloc);
    cmds(&c);
    pagoda_cmd_wait(&c, PAGODA_PADDR(7, 0ull), 1);
    run_fault(d, RE, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    cmds(&c);
    pagoda_cmd_wait(&c, SYS(0x1000), 1);
    g_array_index(c.dw, uint32_t, 0) = PAGODA_CMD_HEADER(PAGODA_CMD_WAIT_FENCE,
                                                         0, 5);
    g_array_set_size(c.dw, 5);
    run_bad_command(d, RE, &c);
}

/* ---- Render engine ------------------------------------------------------ */

static void test_crc32_reference(void)
{
    g_assert_cmphex(ref_crc32(0, (const uint8_t *)"123456789", 9), ==,
                    0xcbf43926);
    g_assert_cmphex(ref_crc32(0, NULL, 0), ==, 0);
}

/* COPY, FILL32, WRITE_IMM and CRC32 on physical addresses of every segment. */
static void test_render_physical(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t win[PAGODA_NUM_SEGMENTS];
    const uint64_t size = 2 * PAGE + 0x135;
    g_autofree uint8_t *in = g_malloc(size);
    g_autofree uint8_t *want = g_malloc(size);
    uint64_t result = pagoda_alloc(d, PAGE, PAGE);
    PagodaCmds c;

    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_CAPS)) &
                    PAGODA_ENG_CAPS_PHYSICAL, !=, 0);
    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        win[s] = env_window(e, s);
    }
    for (unsigned s = 0; s < PAGODA_NUM_SEGMENTS; s++) {
        uint64_t src = win[s] + 0x7ff;
        uint64_t dst = win[(s + 1) % PAGODA_NUM_SEGMENTS] + 64 * KiB + 0xffd;
        uint64_t imm = win[(s + 2) % PAGODA_NUM_SEGMENTS] + 96 * KiB + 2;
        uint32_t vals[5] = { 0x11111111, 0x22222222, 0x33333333, 0x44444444,
                             0x55555555 + s };

        g_test_message("from segment %u", s);
        /* COPY */
        fill_random(in, size, 40 + s);
        cpu_write(e, src, in, size);
        cpu_guard(e, dst, size);
        cmds(&c);
        pagoda_cmd_copy(&c, src, dst, size);
        run_ok(d, RE, &c);
        cpu_check(e, dst, in, size, "COPY");

        /* CRC32 of what was copied, read from the destination */
        qtest_writel(e->qts, result, 0xdeadbeef);
        cmds(&c);
        pagoda_cmd_crc32(&c, dst, size, SYS(result));
        run_ok(d, RE, &c);
        g_assert_cmphex(qtest_readl(e->qts, result), ==,
                        ref_crc32(0, in, size));

        /* FILL32 over the source, odd start and length */
        cpu_guard(e, src + 1, size - 2);
        cmds(&c);
        pagoda_cmd_fill32(&c, src + 1, 0x8899aabb, size - 2);
        run_ok(d, RE, &c);
        fill_expected(want, size - 2, 0x8899aabb);
        cpu_check(e, src + 1, want, size - 2, "FILL32");

        /* WRITE_IMM at an address that is not dword aligned */
        cpu_guard(e, imm, sizeof(vals));
        cmds(&c);
        pagoda_cmd_write_imm(&c, imm, vals, 5);
        run_ok(d, RE, &c);
        for (unsigned i = 0; i < 5; i++) {
            stl_le_p(want + 4 * i, vals[i]);
        }
        cpu_check(e, imm, want, sizeof(vals), "WRITE_IMM");
    }
}

static void test_crc32(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    static const uint64_t sizes[] = { 0, 1, 2, 3, 4, 5, 4095, 4096, 4097,
                                      3 * PAGE + 77 };
    g_autofree uint8_t *buf = g_malloc(4 * PAGE);
    uint64_t src, result;
    PagodaCmds c;

    pagoda_start(d, alloc);
    src = pagoda_alloc(d, 4 * PAGE, PAGE);
    result = pagoda_alloc(d, PAGE, PAGE);
    fill_random(buf, 4 * PAGE, 50);
    pagoda_memwrite(d, src, buf, 4 * PAGE);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        pagoda_memset(d, result, 0xcc, 16);
        cmds(&c);
        pagoda_cmd_crc32(&c, SYS(src + 3), sizes[i], SYS(result + 4));
        run_ok(d, RE, &c);
        g_assert_cmphex(qtest_readl(qts_of(d), result + 4), ==,
                        ref_crc32(0, buf + 3, sizes[i]));
        /* exactly four bytes written */
        g_assert_cmphex(qtest_readl(qts_of(d), result), ==, 0xcccccccc);
        g_assert_cmphex(qtest_readl(qts_of(d), result + 8), ==, 0xcccccccc);
    }
    /* a CRC longer than a slice, over a pattern filled by the paging engine */
    {
        const uint64_t n = 33 * MiB + 5;
        g_autofree uint8_t *pat = g_malloc(n);

        cmds(&c);
        pagoda_cmd_fill(&c, VRAM(0), 0x9abcdef0, n);
        run_ok(d, PG, &c);
        cmds(&c);
        pagoda_cmd_crc32(&c, VRAM(0), n, SYS(result));
        run_ok(d, RE, &c);
        fill_expected(pat, n, 0x9abcdef0);
        g_assert_cmphex(qtest_readl(qts_of(d), result), ==,
                        ref_crc32(0, pat, n));
    }
    /* unreadable source: fault, no result */
    qtest_writel(qts_of(d), result, 0x12345678);
    cmds(&c);
    pagoda_cmd_crc32(&c, VRAM(d->vram_bar_size - 4), 8, SYS(result));
    run_fault(d, RE, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    g_assert_cmphex(qtest_readl(qts_of(d), result), ==, 0x12345678);
}

/* Upload @c, map it at @va in @vm and run it virtually on the render engine. */
static uint64_t run_virtual(QPagoda *d, PagodaVM *vm, PagodaCmds *c,
                            uint64_t va)
{
    uint32_t bytes = pagoda_cmds_bytes(c);
    uint64_t pa = pagoda_alloc(d, ROUND_UP(bytes, PAGE), PAGE);
    uint64_t fence;

    pagoda_memwrite(d, pa, c->dw->data, bytes);
    pagoda_cmds_free(c);
    pagoda_vm_map(vm, va, SYS(pa), ROUND_UP(bytes, PAGE), PAGE, 0);
    fence = pagoda_submit(d, RE, va, bytes, vm->ctx, PAGODA_RING_FLAG_VIRTUAL);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    return fence;
}

/* The same commands on virtual addresses of the ring entry's context. */
static void test_render_virtual(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t size = 4 * PAGE + 0x2d;
    g_autofree uint8_t *in = g_malloc(size);
    g_autofree uint8_t *want = g_malloc(size);
    const uint32_t vals[3] = { 0xa0a1a2a3, 0xb0b1b2b3, 0xc0c1c2c3 };
    uint8_t got[4];
    PagodaVM vm;
    VRange sm, big;
    PagodaCmds c;

    virtual_setup(e, &vm, &sm, &big);
    fill_random(in, size, 60);
    vrange_rw(e, &sm, sm.va + 0x123, in, size, true);
    vrange_guard(e, &big, big.va + 64 * KiB - 0x801, size);
    vrange_guard(e, &big, big.va + 3 * 64 * KiB - 6, sizeof(vals));
    vrange_guard(e, &sm, sm.va + 6 * PAGE - 3, PAGE + 9);
    vrange_guard(e, &big, big.va + 200 * KiB, 4);

    cmds(&c);
    pagoda_cmd_copy(&c, sm.va + 0x123, big.va + 64 * KiB - 0x801, size);
    pagoda_cmd_crc32(&c, big.va + 64 * KiB - 0x801, size, big.va + 200 * KiB);
    pagoda_cmd_write_imm(&c, big.va + 3 * 64 * KiB - 6, vals, 3);
    pagoda_cmd_fill32(&c, sm.va + 6 * PAGE - 3, 0x76543210, PAGE + 9);
    run_virtual(d, &vm, &c, 0x7000000000ull);
    expect_no_fault(d);

    vrange_check(e, &big, big.va + 64 * KiB - 0x801, in, size, "virtual COPY");
    vrange_rw(e, &big, big.va + 200 * KiB, got, 4, false);
    g_assert_cmphex(ldl_le_p(got), ==, ref_crc32(0, in, size));
    for (unsigned i = 0; i < 3; i++) {
        stl_le_p(want + 4 * i, vals[i]);
    }
    vrange_check(e, &big, big.va + 3 * 64 * KiB - 6, want, sizeof(vals),
                 "virtual WRITE_IMM");
    fill_expected(want, PAGE + 9, 0x76543210);
    vrange_check(e, &sm, sm.va + 6 * PAGE - 3, want, PAGE + 9,
                 "virtual FILL32");
}

/* Upload a buffer; returns its physical (system) address. */
static uint64_t upload(QPagoda *d, PagodaCmds *c, uint32_t *len)
{
    uint64_t addr = pagoda_cmds_upload(d, c);

    *len = pagoda_cmds_bytes(c);
    pagoda_cmds_free(c);
    return SYS(addr);
}

static void test_jump(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t m = pagoda_alloc(d, PAGE, PAGE);
    uint64_t self = pagoda_alloc(d, PAGE, PAGE);
    uint64_t b, v = VRAM(0x20000);
    uint32_t blen, vlen, len;
    PagodaCmds c;

    /* V, in VRAM, is where B jumps */
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(m + 12), (uint32_t[]){ 0xcccc }, 1);
    vlen = pagoda_cmds_bytes(&c);
    cpu_write(e, v, c.dw->data, vlen);
    pagoda_cmds_free(&c);

    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(m + 4), (uint32_t[]){ 0xbbbb }, 1);
    pagoda_cmd_jump(&c, v, vlen);
    pagoda_cmd_write_imm(&c, SYS(m + 8), (uint32_t[]){ 0xdead }, 1);
    b = upload(d, &c, &blen);

    /*
     * The ring's buffer: WRITE_IMM (20 bytes), a JUMP (16) forward over a
     * WRITE_IMM (20) to a JUMP to B at byte 56, followed by a WRITE_IMM
     * that is never reached either.
     */
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(m), (uint32_t[]){ 0xaaaa }, 1);
    pagoda_cmd_jump(&c, SYS(self + 56), 16 + 20);
    pagoda_cmd_write_imm(&c, SYS(m + 16), (uint32_t[]){ 0xdead }, 1);
    pagoda_cmd_jump(&c, b, blen);
    pagoda_cmd_write_imm(&c, SYS(m + 20), (uint32_t[]){ 0xdead }, 1);
    len = pagoda_cmds_bytes(&c);
    g_assert_cmpuint(len, ==, 56 + 16 + 20);
    pagoda_memwrite(d, self, c.dw->data, len);
    pagoda_cmds_free(&c);
    g_assert_true(pagoda_wait_fence(d, RE, pagoda_submit(d, RE, SYS(self), len,
                                                         0, 0)));
    expect_no_fault(d);
    g_assert_cmphex(qtest_readl(e->qts, m), ==, 0xaaaa);
    g_assert_cmphex(qtest_readl(e->qts, m + 4), ==, 0xbbbb);
    g_assert_cmphex(qtest_readl(e->qts, m + 8), ==, 0);
    g_assert_cmphex(qtest_readl(e->qts, m + 12), ==, 0xcccc);
    g_assert_cmphex(qtest_readl(e->qts, m + 16), ==, 0);
    g_assert_cmphex(qtest_readl(e->qts, m + 20), ==, 0);
}

/*
 * A chain of @calls nested CALLs. Level k calls level k + 1, then copies
 * the value the callee left in X to slot k and writes k to X; the last
 * level writes 100. Returns the address of level 0; *call_at is the
 * address of the CALL in level @calls - 1.
 */
static uint64_t call_chain(QPagoda *d, unsigned calls, uint64_t x,
                           uint64_t slots, uint32_t *len0, uint64_t *call_at)
{
    uint64_t next = 0;
    uint32_t next_len = 0;

    for (int k = calls; k >= 0; k--) {
        PagodaCmds c;

        cmds(&c);
        if (k == calls) {
            pagoda_cmd_write_imm(&c, SYS(x), (uint32_t[]){ 100 }, 1);
        } else {
            pagoda_cmd_call(&c, next, next_len);
            pagoda_cmd_copy(&c, SYS(x), SYS(slots + 4 * k), 4);
            pagoda_cmd_write_imm(&c, SYS(x), (uint32_t[]){ k }, 1);
        }
        next = upload(d, &c, &next_len);
        if (k == calls - 1) {
            *call_at = next;
        }
    }
    *len0 = next_len;
    return next;
}

static void test_call(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t x, slots, l0, call_at;
    uint32_t len;

    pagoda_start(d, alloc);
    for (unsigned calls = 1; calls <= PAGODA_CALL_DEPTH; calls++) {
        x = pagoda_alloc(d, PAGE, PAGE);
        slots = pagoda_alloc(d, PAGE, PAGE);
        l0 = call_chain(d, calls, x, slots, &len, &call_at);
        g_assert_true(pagoda_wait_fence(d, RE,
                                        pagoda_submit(d, RE, l0, len, 0, 0)));
        expect_no_fault(d);
        g_assert_cmpuint(qtest_readl(qts_of(d), x), ==, 0);
        for (unsigned k = 0; k < calls; k++) {
            g_assert_cmpuint(qtest_readl(qts_of(d), slots + 4 * k), ==,
                             k + 1 == calls ? 100 : k + 1);
        }
    }
}

/* One CALL more than PAGODA_CALL_DEPTH faults at that CALL; nothing returns. */
static void test_call_too_deep(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t x, slots, l0, call_at, fence;
    uint32_t len;
    PagodaFaultInfo f;

    pagoda_start(d, alloc);
    x = pagoda_alloc(d, PAGE, PAGE);
    slots = pagoda_alloc(d, PAGE, PAGE);
    pagoda_memset(d, slots, 0xee, 64);
    l0 = call_chain(d, PAGODA_CALL_DEPTH + 1, x, slots, &len, &call_at);
    fence = pagoda_submit(d, RE, l0, len, 0, 0);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    f = expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND);
    g_assert_cmphex(f.va, ==, call_at);
    g_assert_cmpuint(f.fence, ==, fence);
    g_assert_cmpuint(qtest_readl(qts_of(d), x), ==, 0);
    for (unsigned k = 0; k <= PAGODA_CALL_DEPTH; k++) {
        g_assert_cmphex(qtest_readl(qts_of(d), slots + 4 * k), ==, 0xeeeeeeee);
    }
    /* a buffer that calls itself ends the same way */
    {
        uint64_t self = pagoda_alloc(d, PAGE, PAGE);
        PagodaCmds c;

        cmds(&c);
        pagoda_cmd_call(&c, SYS(self), 16);
        pagoda_memwrite(d, self, c.dw->data, 16);
        pagoda_cmds_free(&c);
        fence = pagoda_submit(d, RE, SYS(self), 16, 0, 0);
        g_assert_true(pagoda_wait_fence(d, RE, fence));
        g_assert_cmphex(expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND).va, ==,
                        SYS(self));
    }
}

/* A JUMP inside a called buffer ends that level: the caller resumes after. */
static void test_jump_in_call(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t m, l1, l2;
    uint32_t len1, len2;
    PagodaCmds c;

    pagoda_start(d, alloc);
    m = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(m), (uint32_t[]){ 2 }, 1);
    l2 = upload(d, &c, &len2);
    cmds(&c);
    pagoda_cmd_jump(&c, l2, len2);
    pagoda_cmd_write_imm(&c, SYS(m + 4), (uint32_t[]){ 0xdead }, 1);
    l1 = upload(d, &c, &len1);
    cmds(&c);
    pagoda_cmd_call(&c, l1, len1);
    pagoda_cmd_copy(&c, SYS(m), SYS(m + 8), 4);
    run_ok(d, RE, &c);
    g_assert_cmphex(qtest_readl(qts_of(d), m), ==, 2);
    g_assert_cmphex(qtest_readl(qts_of(d), m + 4), ==, 0);
    g_assert_cmphex(qtest_readl(qts_of(d), m + 8), ==, 2);
}

static void test_branch_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    static const uint32_t lengths[] = { 0, 2, 6, PAGODA_RING_MAX_LENGTH + 4,
                                        0xfffffffc };
    uint64_t target, m;
    PagodaCmds c;

    pagoda_start(d, alloc);
    target = pagoda_alloc(d, PAGE, PAGE);
    m = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(m), (uint32_t[]){ 1 }, 1);
    pagoda_memwrite(d, target, c.dw->data, pagoda_cmds_bytes(&c));
    pagoda_cmds_free(&c);
    for (size_t i = 0; i < ARRAY_SIZE(lengths); i++) {
        cmds(&c);
        pagoda_cmd_jump(&c, SYS(target), lengths[i]);
        run_bad_command(d, RE, &c);
        cmds(&c);
        pagoda_cmd_call(&c, SYS(target), lengths[i]);
        run_bad_command(d, RE, &c);
    }
    /* wrong size */
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(PAGODA_CMD_JUMP, 0, 3),
                                     20, (uint32_t)target }, 3);
    run_bad_command(d, RE, &c);
    /* a target whose first command is longer than the branch length */
    cmds(&c);
    pagoda_cmd_jump(&c, SYS(target), 8);
    run_fault_at(d, RE, &c, 0, PAGODA_FAULT_BAD_COMMAND, SYS(target));
    /* a target that is not memory */
    cmds(&c);
    pagoda_cmd_call(&c, PAGODA_PADDR(30, 0ull), 16);
    run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT,
                 PAGODA_PADDR(30, 0ull));
    g_assert_cmphex(qtest_readl(qts_of(d), m), ==, 0);
}

/* ---- Interrupts --------------------------------------------------------- */

static void test_int_ring_entry(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;

    pagoda_start(d, alloc);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==, 0);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        /* without the flag, nothing */
        cmds(&c);
        pagoda_cmd_nop(&c, 2);
        run_ok(d, e, &c);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
        /* with it, the engine's bit (INT_ENABLE only gates delivery) */
        cmds(&c);
        pagoda_cmd_nop(&c, 2);
        g_assert_true(pagoda_wait_fence(d, e, submit_irq(d, e, &c)));
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                        PAGODA_INT_ENGINE(e));
        /* write 1 to clear; 0 and unset bits change nothing */
        pagoda_wr(d, PAGODA_REG_INT_STATUS, 0);
        pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(!e));
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                        PAGODA_INT_ENGINE(e));
        pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(e));
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
    }
    /* both engines, then clear both at once */
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    g_assert_true(pagoda_wait_fence(d, PG, submit_irq(d, PG, &c)));
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    g_assert_true(pagoda_wait_fence(d, RE, submit_irq(d, RE, &c)));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                    PAGODA_INT_ENGINE(PG) | PAGODA_INT_ENGINE(RE));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
}

static void test_int_enable(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;

    pagoda_start(d, alloc);
    /* every cause: PAGODA_INT_ALL and the vblank, which it leaves out */
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==,
                    PAGODA_INT_ALL | PAGODA_INT_VBLANK);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_FAULT);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==, PAGODA_INT_FAULT);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==, 0);
    /* INT_STATUS cannot be set by software */
    pagoda_wr(d, PAGODA_REG_INT_STATUS, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
}

/* Enabling a pending bit delivers it; a masked one stays pending only. */
static void test_int_enable_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const unsigned vec = PAGODA_MSIX_VECTOR_ENGINE(RE);
    PagodaCmds c;

    pagoda_start(d, alloc);
    qpci_msix_enable(&d->dev);
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    g_assert_true(pagoda_wait_fence(d, RE, submit_irq(d, RE, &c)));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                    PAGODA_INT_ENGINE(RE));
    g_assert_false(qpci_msix_pending(&d->dev, vec));
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ENGINE(PG));
    g_assert_false(qpci_msix_pending(&d->dev, vec));
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ENGINE(RE));
    g_assert_true(qpci_msix_pending(&d->dev, vec));
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_ENGINE(PG)));
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_FAULT));
}

/* The fault bit stays set while the queue holds records. */
static void test_int_fault_sticky(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;

    pagoda_start(d, alloc);
    for (unsigned i = 0; i < 2; i++) {
        cmds(&c);
        pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7e, 0, 1) }, 1);
        run_ctx(d, RE, &c, 10 + i);
    }
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 2);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_FAULT);
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_FAULT);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_FAULT);
    pagoda_wr(d, PAGODA_REG_FAULT_POP, 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_FAULT);
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_FAULT);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_FAULT);
    pagoda_wr(d, PAGODA_REG_FAULT_POP, 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
    /* a new fault sets it again; clearing the engine bits leaves it alone */
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7e, 0, 1) }, 1);
    g_assert_true(pagoda_wait_fence(d, RE, submit_irq(d, RE, &c)));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                    PAGODA_INT_FAULT | PAGODA_INT_ENGINE(RE));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_FAULT);
    expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
}

/* Queue @c for @ctx with INTERRUPT (@c is freed) and write @doorbell. */
static uint64_t submit_rung(QPagoda *d, unsigned engine, PagodaCmds *c, uint16_t ctx,
                            uint32_t doorbell)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    uint64_t fence = pagoda_ring_put(d, engine, SYS(addr), pagoda_cmds_bytes(c), ctx,
                                     PAGODA_RING_FLAG_INTERRUPT, 0);

    pagoda_cmds_free(c);
    pagoda_wr(d, ENG(engine, PAGODA_ENG_DOORBELL), doorbell);
    return fence;
}

/* A job of one NOP, rung with @doorbell: returns its fence. */
static uint64_t submit_nop_rung(QPagoda *d, unsigned engine, uint32_t doorbell)
{
    PagodaCmds c;

    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    return submit_rung(d, engine, &c, 0, doorbell);
}

/*
 * DOORBELL_POLL: a job the doorbell's slice completes retires before the
 * write returns and raises no engine interrupt; without the flag it does.
 * An engine interrupt pending from before stays.
 */
static void test_doorbell_poll(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t fence;

    pagoda_start(d, alloc);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        fence = submit_nop_rung(d, e, 1 | PAGODA_DOORBELL_POLL);
        g_assert_cmpuint(pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, fence);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);

        fence = submit_nop_rung(d, e, 1);
        g_assert_cmpuint(pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, fence);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_ENGINE(e));

        fence = submit_nop_rung(d, e, PAGODA_DOORBELL_POLL);
        g_assert_cmpuint(pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, fence);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_ENGINE(e));
        pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(e));
    }
    expect_no_fault(d);
}

/*
 * DOORBELL_POLL keeps the engine interrupt of a job the slice did not
 * finish (the command processor retires it) and of entries that faulted
 * or were skipped (the driver finishes those from its interrupt handler).
 */
static void test_doorbell_poll_kept(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;
    uint64_t fence;

    pagoda_start(d, alloc);
    /* more commands than a slice runs */
    cmds(&c);
    for (unsigned i = 0; i < 2 * 256; i++) {
        pagoda_cmd_nop(&c, 1);
    }
    fence = submit_rung(d, RE, &c, 0, PAGODA_DOORBELL_POLL);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_ENGINE(RE));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(RE));

    /* a fault, then a job of the context it halted */
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7e, 0, 1) }, 1);
    fence = submit_rung(d, RE, &c, 10, PAGODA_DOORBELL_POLL);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                    PAGODA_INT_FAULT | PAGODA_INT_ENGINE(RE));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(RE));
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    fence = submit_rung(d, RE, &c, 10, PAGODA_DOORBELL_POLL);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==,
                    PAGODA_INT_FAULT | PAGODA_INT_ENGINE(RE));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_ENGINE(RE));
    expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND);
    expect_no_fault(d);
}

/*
 * Faults beyond the queue's depth are counted in FAULT_LOST and still halt
 * their context. Only an adapter reset clears the count.
 */
static void test_fault_lost(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const unsigned n = PAGODA_FAULT_QUEUE_DEPTH + 2;
    uint64_t buf, fence = 0;
    PagodaCmds c;
    uint32_t len;

    pagoda_start(d, alloc);
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7f, 0, 1) }, 1);
    buf = upload(d, &c, &len);
    for (unsigned i = 0; i < n; i++) {
        fence = pagoda_submit(d, RE, buf, len, i, 0);
    }
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==,
                     PAGODA_FAULT_QUEUE_DEPTH);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_LOST), ==, 2);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, n - 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_CTX_STATUS), ==,
                    PAGODA_CTX_STATUS_HALTED);

    pagoda_wr(d, PAGODA_REG_FAULT_LOST, 0);
    for (unsigned i = 0; i < PAGODA_FAULT_QUEUE_DEPTH; i++) {
        pagoda_wr(d, PAGODA_REG_FAULT_POP, 1);
    }
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT,
                    ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_LOST), ==, 2);

    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_LOST), ==, 0);
}

/* ---- Fence writeback --------------------------------------------------- */

/* A NOP entry on @engine, waited for: its fence. */
static uint64_t run_nop(QPagoda *d, unsigned engine)
{
    PagodaCmds c;

    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    return run_ok(d, engine, &c);
}

/*
 * ENG_FENCE_WB: every retirement writes ENG_FENCE to memory, per engine;
 * an unaligned address is refused, one the device cannot write is the
 * guest's error and the engine goes on, 0 turns it off, an adapter reset
 * clears it.
 */
static void test_fence_writeback(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t wb, fence;

    pagoda_start(d, alloc);
    wb = pagoda_alloc(d, PAGE, PAGE);
    pagoda_memset(d, wb, 0xff, 16);
    g_assert_cmphex(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO)), ==, 0);
    pagoda_wr(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO), (uint32_t)SYS(wb) + 4);
    g_assert_cmphex(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO)), ==, 0);
    pagoda_wr64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO), SYS(wb));
    g_assert_cmphex(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO)), ==,
                    SYS(wb));

    fence = run_nop(d, RE);
    g_assert_cmpuint(pagoda_readq(d, wb), ==, fence);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);
    g_assert_cmphex(pagoda_readq(d, wb + 8), ==, ~0ull);
    fence = run_nop(d, RE);
    g_assert_cmpuint(pagoda_readq(d, wb), ==, fence);

    /* the paging engine has none: it writes nothing there */
    run_nop(d, PG);
    g_assert_cmpuint(pagoda_readq(d, wb), ==, fence);

    /* nowhere the device can write: logged, and the engine goes on */
    pagoda_wr64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO), VRAM(1ull << 40));
    g_assert_cmpuint(run_nop(d, RE), >, fence);
    g_assert_cmpuint(pagoda_readq(d, wb), ==, fence);

    /* off */
    pagoda_wr64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO), 0);
    g_assert_cmpuint(run_nop(d, RE), >, fence);
    g_assert_cmpuint(pagoda_readq(d, wb), ==, fence);

    pagoda_wr64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO), SYS(wb));
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_WB_LO)), ==, 0);
}

/* ---- Ring entry status ------------------------------------------------- */

/* What the engine wrote over the reserved field of ring slot @slot. */
static uint64_t entry_status(QPagoda *d, unsigned engine, uint32_t slot)
{
    return pagoda_readq(d, d->ring_base[engine] +
                        (uint64_t)slot * PAGODA_RING_ENTRY_SIZE +
                        PAGODA_RING_STATUS);
}

/*
 * RING_FLAG_STATUS: an entry that ran to its end gets COMPLETED in its
 * slot, one a fault stopped FAULTED, one of the halted context behind it
 * SKIPPED; without the flag, and for a malformed entry, nothing is
 * written.
 */
static void test_ring_status(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint32_t done, plain, faulted, skipped, bad;
    uint64_t fence;
    PagodaCmds c;

    pagoda_start(d, alloc);
    cmds(&c);
    pagoda_cmd_nop(&c, 2);
    fence = submit_at(d, RE, &c, 0, PAGODA_RING_FLAG_STATUS, &done);
    cmds(&c);
    pagoda_cmd_nop(&c, 2);
    fence = submit_at(d, RE, &c, 0, 0, &plain);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmpuint(entry_status(d, RE, done), ==,
                     PAGODA_RING_STATUS_COMPLETED);
    g_assert_cmpuint(entry_status(d, RE, plain), ==, 0);

    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0xee, 0, 1) }, 1);
    submit_at(d, RE, &c, 5, PAGODA_RING_FLAG_STATUS, &faulted);
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    fence = submit_at(d, RE, &c, 5, PAGODA_RING_FLAG_STATUS, &skipped);
    g_assert_true(pagoda_wait_fence(d, RE, fence));
    g_assert_cmpuint(entry_status(d, RE, faulted), ==,
                     PAGODA_RING_STATUS_FAULTED);
    g_assert_cmpuint(entry_status(d, RE, skipped), ==,
                     PAGODA_RING_STATUS_SKIPPED);
    expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND);

    /* an unknown flag: BAD_RING_ENTRY, no status, the fence stays */
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    submit_at(d, RE, &c, 0, PAGODA_RING_FLAG_STATUS | PAGODA_BIT(3), &bad);
    g_assert_true(pagoda_wait_idle(d, RE));
    g_assert_cmpuint(entry_status(d, RE, bad), ==, 0);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);
    expect_fault(d, RE, PAGODA_FAULT_BAD_RING_ENTRY);
}

/* ---- Resets ------------------------------------------------------------- */

static void test_engine_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t mark, done, looping, queued, aborted, fence;
    PagodaCmds c;

    pagoda_start(d, alloc);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_CAPS) & PAGODA_CAPS_ENGINE_RESET,
                    !=, 0);
    mark = pagoda_alloc(d, PAGE, PAGE);
    /* a fault of context 5, left in the queue */
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7e, 0, 1) }, 1);
    run_ctx(d, RE, &c, 5);
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    done = run_ctx(d, RE, &c, 0);

    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark + 8), (uint32_t[]){ 0x1009 }, 1);
    looping = pagoda_submit(d, RE, SYS(self_loop(d, &c)), 36, 0, 0);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 0xdead }, 1);
    queued = submit(d, RE, &c, 0);
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_BUSY,
                              PAGODA_ENG_STATUS_BUSY));
    g_assert_true(wait_mem32(d, mark + 8, 0x1009));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==,
                    PAGODA_STATUS_ENGINE_BUSY(RE));
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, done);

    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_HEAD)), ==,
                     pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_TAIL)));
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, done);
    aborted = pagoda_rd64(d, ENG(RE, PAGODA_ENG_ABORTED_FENCE_LO));
    g_assert_cmpuint(aborted, >=, looping);
    g_assert_cmpuint(aborted, <=, queued);
    g_assert_cmpuint(aborted, >, done);
    /* faults and contexts are untouched */
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 1);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, 5);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_CTX_STATUS), ==,
                    PAGODA_CTX_STATUS_HALTED);
    expect_fault(d, RE, PAGODA_FAULT_BAD_COMMAND);

    /* the aborted entries never run, the ring takes new work at once */
    qtest_writel(qts_of(d), mark + 8, 0);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark + 4), (uint32_t[]){ 0x600d }, 1);
    fence = run_ok(d, RE, &c);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);
    g_assert_cmphex(qtest_readl(qts_of(d), mark + 4), ==, 0x600d);
    g_usleep(2000);
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0);
    g_assert_cmphex(qtest_readl(qts_of(d), mark + 8), ==, 0);
    /* the other engine was not touched */
    g_assert_cmpuint(pagoda_rd64(d, ENG(PG, PAGODA_ENG_ABORTED_FENCE_LO)), ==,
                     0);
    expect_no_fault(d);
}

/* Reset of the paging engine in the middle of long fills, render running on. */
static void test_engine_reset_paging(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t vram = 32 * MiB;
    uint64_t last, aborted, done, mark;
    PagodaCmds c;

    pagoda_start(d, alloc);
    mark = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 0x1009 }, 1);
    pagoda_submit(d, RE, SYS(self_loop(d, &c)), 36, 0, 0);
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(0), 0x01010101, vram);
    pagoda_cmd_fill(&c, VRAM(0), 0x02020202, vram);
    last = submit_many(d, PG, &c, 200);
    g_assert_cmphex(pagoda_rd(d, ENG(PG, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(PG));
    g_assert_cmphex(pagoda_rd(d, ENG(PG, PAGODA_ENG_STATUS)), ==, 0);
    done = pagoda_rd64(d, ENG(PG, PAGODA_ENG_FENCE_LO));
    aborted = pagoda_rd64(d, ENG(PG, PAGODA_ENG_ABORTED_FENCE_LO));
    g_assert_cmpuint(done, <, last);
    g_assert_cmpuint(aborted, >, done);
    g_assert_cmpuint(aborted, <=, last);

    /* VRAM stops changing */
    qpci_io_writel(&d->dev, d->vram, vram - 4, 0);
    qpci_io_writel(&d->dev, d->vram, 0, 0);
    g_usleep(20000);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, vram - 4), ==, 0);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, 0), ==, 0);

    /* the render engine kept running; the paging ring works again */
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY);
    qtest_writel(qts_of(d), mark, 0);
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_BUSY,
                              PAGODA_ENG_STATUS_BUSY));
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(PAGE), 0x600d600d, 8);
    run_ok(d, PG, &c);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, PAGE + 4), ==, 0x600d600d);
    g_assert_true(wait_mem32(d, mark, 0x1009));
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==, 0);
    expect_no_fault(d);
}

/* An engine blocked in WAIT_FENCE is reset like a running one. */
static void test_engine_reset_waiting(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t sem, mark, fence;

    pagoda_start(d, alloc);
    sem = pagoda_alloc(d, PAGE, PAGE);
    mark = pagoda_alloc(d, PAGE, PAGE);
    fence = submit_waiter(d, sem, 1, mark);
    assert_waiting(d, fence, mark);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==, 0);
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_ABORTED_FENCE_LO)), ==,
                     fence);
    pagoda_writeq(d, sem, 1);
    g_usleep(2000);
    g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0);
    /* reset of an idle engine aborts nothing */
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(PG));
    g_assert_cmpuint(pagoda_rd64(d, ENG(PG, PAGODA_ENG_ABORTED_FENCE_LO)), ==,
                     pagoda_rd64(d, ENG(PG, PAGODA_ENG_FENCE_LO)));
    expect_no_fault(d);
}

/*
 * With PAGODA_DEBUG_ENGINE_RESET_FAILS an engine reset does nothing: the
 * engine goes on waiting; the other engine still resets, and an adapter
 * reset clears the control and stops the engine.
 */
static void test_engine_reset_fails(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t sem, mark, fence, aborted;

    pagoda_start(d, alloc);
    sem = pagoda_alloc(d, PAGE, PAGE);
    mark = pagoda_alloc(d, PAGE, PAGE);
    fence = submit_waiter(d, sem, 1, mark);
    assert_waiting(d, fence, mark);
    aborted = pagoda_rd64(d, ENG(RE, PAGODA_ENG_ABORTED_FENCE_LO));
    pagoda_wr(d, PAGODA_REG_DEBUG, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DEBUG), ==,
                    PAGODA_DEBUG_IMPLEMENTED);
    pagoda_wr(d, PAGODA_REG_DEBUG, PAGODA_DEBUG_ENGINE_RESET_FAILS(RE));
    pagoda_wr(d, PAGODA_REG_RESET,
              PAGODA_RESET_ENGINE(RE) | PAGODA_RESET_ENGINE(PG));
    assert_waiting(d, fence, mark);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==,
                    PAGODA_STATUS_ENGINE_BUSY(RE));
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_ABORTED_FENCE_LO)), ==,
                     aborted);
    /* still the same wait: releasing it completes the entry */
    pagoda_writeq(d, sem, 1);
    g_assert_true(wait_mem32(d, mark, 0x600d));
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==, fence);

    pagoda_writeq(d, sem, 0);
    fence = submit_waiter(d, sem, 1, mark + 8);
    assert_waiting(d, fence, mark + 8);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DEBUG), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==, 0);
    pagoda_writeq(d, sem, 1);
    g_usleep(2000);
    g_assert_cmphex(qtest_readl(qts_of(d), mark + 8), ==, 0);
}

/* Registers an adapter reset returns to their power-on value. */
static const uint32_t reset_global_regs[] = {
    PAGODA_REG_SCRATCH, PAGODA_REG_INT_STATUS, PAGODA_REG_INT_ENABLE,
    PAGODA_REG_STATUS, PAGODA_REG_DEBUG, PAGODA_REG_GART_BASE_LO,
    PAGODA_REG_GART_BASE_HI,
    PAGODA_REG_GART_ENTRIES, PAGODA_REG_TLB_HITS_LO, PAGODA_REG_TLB_MISSES_LO,
    PAGODA_REG_TLB_FLUSHES, PAGODA_REG_TLB_VALID, PAGODA_REG_CTX_SELECT,
    PAGODA_REG_CTX_ROOT_LO, PAGODA_REG_CTX_ROOT_HI, PAGODA_REG_CTX_ROOT_ENTRIES,
    PAGODA_REG_CTX_STATUS, PAGODA_REG_FAULT_COUNT, PAGODA_REG_FAULT_LOST,
    PAGODA_REG_FAULT_CODE, PAGODA_REG_FAULT_VA_LO,
};
static const uint32_t reset_engine_regs[] = {
    PAGODA_ENG_RING_BASE_LO, PAGODA_ENG_RING_BASE_HI, PAGODA_ENG_RING_SIZE,
    PAGODA_ENG_RING_HEAD, PAGODA_ENG_RING_TAIL, PAGODA_ENG_FENCE_LO,
    PAGODA_ENG_FENCE_HI, PAGODA_ENG_ABORTED_FENCE_LO,
    PAGODA_ENG_ABORTED_FENCE_HI, PAGODA_ENG_STATUS, PAGODA_ENG_CAPS,
};
#define NUM_RESET_REGS  (ARRAY_SIZE(reset_global_regs) + \
                         PAGODA_NUM_ENGINES * ARRAY_SIZE(reset_engine_regs))

static uint32_t reset_reg(size_t i)
{
    size_t n = ARRAY_SIZE(reset_global_regs), m = ARRAY_SIZE(reset_engine_regs);

    if (i < n) {
        return reset_global_regs[i];
    }
    return ENG((i - n) / m, reset_engine_regs[(i - n) % m]);
}

static bool is_ring_reg(uint32_t reg)
{
    uint32_t r = reg & 0xff;

    return reg >= PAGODA_REG_ENGINE(0) &&
           (r == PAGODA_ENG_RING_BASE_LO || r == PAGODA_ENG_RING_BASE_HI ||
            r == PAGODA_ENG_RING_SIZE);
}

/*
 * Adapter reset with both engines busy: everything stops at once, no DMA
 * happens afterwards, and every register reads its power-on value.
 */
static void test_adapter_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint32_t power_on[NUM_RESET_REGS];
    const uint64_t vram = d->vram_bar_size, fill = vram / 2;
    uint8_t kept[64], got[64];
    uint64_t x, hidden;
    PagodaVM vm;
    PagodaCmds c;

    /*
     * Power-on values: nothing is programmed yet but the two rings, whose
     * base and size are checked apart below.
     */
    for (size_t i = 0; i < NUM_RESET_REGS; i++) {
        power_on[i] = pagoda_rd(d, reset_reg(i));
    }

    /* program a bit of everything */
    x = pagoda_alloc(d, PAGE, PAGE);
    pagoda_wr(d, PAGODA_REG_SCRATCH, 0x12345678);
    pagoda_wr(d, PAGODA_REG_DEBUG, PAGODA_DEBUG_IMPLEMENTED);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL);
    env_window(e, PAGODA_SEG_APERTURE);
    hidden = env_window(e, PAGODA_SEG_VRAM_HIDDEN);
    pagoda_vm_init(&vm, d, 7, 512);
    /* VRAM content the reset must keep, in both VRAM segments */
    fill_random(kept, sizeof(kept), 3);
    cpu_write(e, VRAM(vram - sizeof(kept)), kept, sizeof(kept));
    cpu_write(e, hidden, kept, sizeof(kept));
    cmds(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7e, 0, 1) }, 1);
    run_ctx(d, RE, &c, 9);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, 9);

    /* render: two fills in a loop; paging: long fills */
    cmds(&c);
    pagoda_cmd_fill32(&c, SYS(x), 0x11111111, PAGE);
    pagoda_cmd_fill32(&c, SYS(x), 0x22222222, PAGE);
    pagoda_submit(d, RE, SYS(self_loop(d, &c)), 6 * 4 * 2 + 16, 0, 0);
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(0), 0x01010101, fill);
    pagoda_cmd_fill(&c, VRAM(0), 0x02020202, fill);
    submit_many(d, PG, &c, 200);
    g_assert_cmphex(pagoda_rd(d, ENG(PG, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY);
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_BUSY,
                              PAGODA_ENG_STATUS_BUSY));
    {
        gint64 end = g_get_monotonic_time() + SOON_US;
        uint32_t v;

        /* the loop runs: x holds one of its two patterns */
        while ((v = qtest_readl(e->qts, x)) == 0 &&
               g_get_monotonic_time() < end) {
            g_usleep(50);
        }
        g_assert_true(v == 0x11111111 || v == 0x22222222);
    }

    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==, 0);

    /* no DMA after the reset */
    qtest_memset(e->qts, x, 0, PAGE);
    qpci_io_writel(&d->dev, d->vram, 0, 0);
    qpci_io_writel(&d->dev, d->vram, fill - 4, 0);
    g_usleep(30000);
    g_assert_cmphex(qtest_readl(e->qts, x), ==, 0);
    g_assert_cmphex(qtest_readl(e->qts, x + PAGE - 4), ==, 0);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, 0), ==, 0);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, fill - 4), ==, 0);

    /* registers back to power-on values; apertures unmapped */
    for (size_t i = 0; i < NUM_RESET_REGS; i++) {
        uint32_t reg = reset_reg(i);

        if (is_ring_reg(reg)) {
            g_assert_cmphex(pagoda_rd(d, reg), ==, 0);
        } else if (pagoda_rd(d, reg) != power_on[i]) {
            g_test_message("register 0x%x", reg);
            g_assert_cmphex(pagoda_rd(d, reg), ==, power_on[i]);
        }
    }
    for (unsigned ctx = 0; ctx < pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS);
         ctx += 7) {
        pagoda_wr(d, PAGODA_REG_CTX_SELECT, ctx);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_ROOT_ENTRIES), ==, 0);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_STATUS), ==, 0);
    }
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, 0);
    check_bar4_unmapped(d, 200 * (uint64_t)e->psize);

    /* and the device works again once the driver restarts it */
    ring_restore(d, PG);
    ring_restore(d, RE);
    cmds(&c);
    pagoda_cmd_fill(&c, SYS(x), 0x600d600d, 8);
    run_ok(d, PG, &c);
    g_assert_cmphex(qtest_readl(e->qts, x + 4), ==, 0x600d600d);

    /* VRAM content was kept; hidden VRAM is seen once BAR4 is mapped again */
    cpu_read(e, VRAM(vram - sizeof(kept)), got, sizeof(got));
    assert_bytes(got, kept, sizeof(got), "VRAM after adapter reset");
    e->nhost = 0;
    env_window(e, PAGODA_SEG_VRAM_HIDDEN);
    cpu_read(e, hidden, got, sizeof(got));
    assert_bytes(got, kept, sizeof(got), "hidden VRAM after adapter reset");
}

/* ---- Rings anywhere ----------------------------------------------------- */

/* Write a ring entry with CPU access through @e at @pa. */
static void put_entry(Env *e, uint64_t pa, uint64_t addr, uint32_t length,
                      uint16_t ctx, uint16_t flags, uint64_t fence)
{
    uint8_t entry[PAGODA_RING_ENTRY_SIZE] = { 0 };

    stq_le_p(entry + PAGODA_RING_ADDR, addr);
    stl_le_p(entry + PAGODA_RING_LENGTH, length);
    stw_le_p(entry + PAGODA_RING_CONTEXT, ctx);
    stw_le_p(entry + PAGODA_RING_FLAGS, flags);
    stq_le_p(entry + PAGODA_RING_FENCE, fence);
    cpu_write(e, pa, entry, sizeof(entry));
}

/* Rings and buffers may live in VRAM or behind the aperture. */
static void test_ring_in_segments(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t mark = pagoda_alloc(d, PAGE, PAGE);
    uint64_t rings[] = { VRAM(12 * MiB), env_window(e, PAGODA_SEG_APERTURE),
                         env_window(e, PAGODA_SEG_VRAM_HIDDEN) };
    PagodaCmds c;

    for (size_t r = 0; r < ARRAY_SIZE(rings); r++) {
        uint64_t ring = rings[r], buf = rings[r] + 2 * PAGE + 0x40;
        uint32_t len;

        g_test_message("ring in %s", seg_name(ring));
        cmds(&c);
        pagoda_cmd_write_imm(&c, SYS(mark + 4 * r),
                             (uint32_t[]){ 0x100 + r }, 1);
        len = pagoda_cmds_bytes(&c);
        cpu_write(e, buf, c.dw->data, len);
        pagoda_cmds_free(&c);
        for (unsigned i = 0; i < 4; i++) {
            put_entry(e, ring + i * PAGODA_RING_ENTRY_SIZE, buf, len, 0, 0,
                      1000 * (r + 1) + i);
        }
        ring_program(d, RE, ring, 4);
        pagoda_wr(d, ENG(RE, PAGODA_ENG_RING_TAIL), 3);
        pagoda_wr(d, ENG(RE, PAGODA_ENG_DOORBELL), 1);
        g_assert_true(pagoda_wait_fence(d, RE, 1000 * (r + 1) + 2));
        g_assert_cmpuint(pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_HEAD)), ==, 3);
        /* wrap around the end of the ring */
        pagoda_wr(d, ENG(RE, PAGODA_ENG_RING_TAIL), 1);
        pagoda_wr(d, ENG(RE, PAGODA_ENG_DOORBELL), 1);
        g_assert_true(pagoda_wait_fence(d, RE, 1000 * (r + 1)));
        g_assert_true(pagoda_wait_idle(d, RE));
        g_assert_cmpuint(pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_HEAD)), ==, 1);
        g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==,
                         1000 * (r + 1));
        g_assert_cmphex(qtest_readl(e->qts, mark + 4 * r), ==, 0x100 + r);
        expect_no_fault(d);
    }
}

/* ---- Malicious programming ---------------------------------------------- */

/*
 * Sizes of 2^63 and more: the command runs to the end of the segment (or of
 * guest RAM), faults there, and the device is done in bounded time.
 */
static void test_mal_huge_sizes(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    const uint64_t vram = d->vram_bar_size, ram = ram_size(d);
    const uint64_t aperture = pagoda_rd64(d, SEGREG(PAGODA_SEG_APERTURE,
                                                    PAGODA_SEG_SIZE_LO));
    g_autofree uint8_t *want = g_malloc(8 * KiB);
    gint64 start = g_get_monotonic_time();
    PagodaCmds c;

    /* FILL of 2^63 bytes near the end of VRAM */
    cpu_guard(e, VRAM(vram - 8 * KiB), 8 * KiB - GUARD);
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(vram - 8 * KiB), 0x55aa55aa, 1ull << 63);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    fill_expected(want, 8 * KiB, 0x55aa55aa);
    {
        uint8_t got[GUARD];

        cpu_read(e, VRAM(vram - 8 * KiB - GUARD), got, GUARD);
        memset(want + 8 * KiB - GUARD, GUARD_BYTE, GUARD);
        assert_bytes(got, want + 8 * KiB - GUARD, GUARD, "before the fill");
    }

    /* ...and over the whole of VRAM, with the largest size there is */
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(0), 0x01234567, ~0ull);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, 0), ==, 0x01234567);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, vram - 4), ==, 0x01234567);

    /* a 4 GiB fill of system memory stops at the end of guest RAM */
    pagoda_memset(d, ram - 8 * KiB - 16, 0x3c, 16);
    cmds(&c);
    pagoda_cmd_fill(&c, SYS(ram - 8 * KiB), 0x89abcdef, 4 * GiB);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, SYS(ram));
    g_assert_cmphex(pagoda_readq(d, ram - 8 * KiB - 8), ==,
                    0x3c3c3c3c3c3c3c3cull);
    g_assert_cmphex(pagoda_readq(d, ram - 8 * KiB), ==, 0x89abcdef89abcdefull);
    g_assert_cmphex(pagoda_readq(d, ram - 8), ==, 0x89abcdef89abcdefull);

    /* the aperture without a GART: dummy page writes up to its end */
    cmds(&c);
    pagoda_cmd_fill(&c, APER(0), 0x77777777, 1ull << 63);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, APER(aperture));

    /* transfers and render commands behave the same */
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, VRAM(0), VRAM(vram - PAGE), 1ull << 63);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    cmds(&c);
    pagoda_cmd_transfer(&c, 0, VRAM(vram - PAGE), VRAM(0), ~0ull);
    run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    cmds(&c);
    pagoda_cmd_fill32(&c, VRAM(vram - PAGE), 0, 1ull << 63);
    run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    cmds(&c);
    pagoda_cmd_copy(&c, SYS(ram - PAGE), VRAM(0), ~0ull);
    run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, SYS(ram));
    cmds(&c);
    pagoda_cmd_crc32(&c, VRAM(0), 1ull << 63, SYS(ram - PAGE));
    run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, VRAM(vram));
    cmds(&c);
    pagoda_cmd_fill(&c, HID(0), 0, ~0ull);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    /* offsets that wrap into the segment bits */
    cmds(&c);
    pagoda_cmd_fill(&c, VRAM(PAGODA_MASK64(47, 0) - 3), 0, 16);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    cmds(&c);
    pagoda_cmd_fill(&c, SYS(PAGODA_MASK64(47, 0) - 3), 0, 16);
    run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);

    g_test_message("huge sizes took %" PRId64 " ms",
                   (g_get_monotonic_time() - start) / 1000);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
}

/* An address inside one of the device's own BARs, as a system address. */
typedef struct OwnBar {
    const char *name;
    uint64_t addr;
} OwnBar;

static unsigned own_bars(Env *e, OwnBar *bars)
{
    QPagoda *d = e->d;
    QPCIBar msix = qpci_iomap(&d->dev, PAGODA_BAR_MSIX, NULL);

    /* give BAR4's first page some memory behind it */
    env_map_host(e, PAGODA_SEG_VRAM, 1, (uint32_t[]){ 0 }, (uint32_t[]){ 0 });
    bars[0] = (OwnBar) { "BAR0 (registers)", d->mmio.addr };
    bars[1] = (OwnBar) { "BAR1 (MSI-X)", msix.addr };
    bars[2] = (OwnBar) { "BAR2 (VRAM)", d->vram.addr };
    bars[3] = (OwnBar) { "BAR4 (host aperture)", d->host_aperture.addr };
    return 4;
}

/*
 * A ring the device cannot read, in its own BARs or in system memory with
 * bus mastering off: the entry is malformed. It faults at its slot, its
 * fence is not written and it raises no engine interrupt.
 */
static void test_mal_ring_in_bars(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t mark = pagoda_alloc(d, PAGE, PAGE);
    OwnBar bars[4];
    unsigned n = own_bars(e, bars);
    PagodaCmds c;
    uint64_t buf;
    uint32_t len;

    /* a valid entry at the start of VRAM, reachable through BAR2 and BAR4 */
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 0xbad }, 1);
    buf = upload(d, &c, &len);
    put_entry(e, VRAM(0), buf, len, 0, 0, 77);
    for (unsigned b = 0; b < n; b++) {
        for (unsigned engine = 0; engine < PAGODA_NUM_ENGINES; engine++) {
            uint64_t done = pagoda_rd64(d, ENG(engine, PAGODA_ENG_FENCE_LO));
            PagodaFaultInfo f;

            g_test_message("%s, engine %u", bars[b].name, engine);
            ring_program(d, engine, SYS(bars[b].addr), 4);
            pagoda_wr(d, ENG(engine, PAGODA_ENG_RING_TAIL), 1);
            pagoda_wr(d, ENG(engine, PAGODA_ENG_DOORBELL), 1);
            g_assert_true(pagoda_wait_idle(d, engine));
            g_assert_cmpuint(pagoda_rd(d, ENG(engine, PAGODA_ENG_RING_HEAD)),
                             ==, 1);
            g_assert_cmpuint(pagoda_rd64(d, ENG(engine, PAGODA_ENG_FENCE_LO)),
                             ==, done);
            f = expect_fault(d, engine, PAGODA_FAULT_BAD_RING_ENTRY);
            g_assert_cmphex(f.va, ==, SYS(bars[b].addr));
            g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_FENCE_INVALID, !=, 0);
            g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
            ring_restore(d, engine);
        }
    }
    g_assert_cmphex(qtest_readl(e->qts, mark), ==, 0);

    /* bus mastering off: the libqos ring in system memory cannot be read */
    {
        uint16_t command = qpci_config_readw(&d->dev, PCI_COMMAND);
        uint64_t done = pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO));
        uint32_t head = pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_HEAD));
        PagodaFaultInfo f;

        qpci_config_writew(&d->dev, PCI_COMMAND,
                           command & ~PCI_COMMAND_MASTER);
        pagoda_submit(d, RE, buf, len, 0, PAGODA_RING_FLAG_INTERRUPT);
        g_assert_true(pagoda_wait_idle(d, RE));
        g_assert_cmpuint(pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_HEAD)), ==,
                         head + 1);
        g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_FENCE_LO)), ==,
                         done);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) &
                        PAGODA_INT_ENGINE(RE), ==, 0);
        f = expect_fault(d, RE, PAGODA_FAULT_BAD_RING_ENTRY);
        g_assert_cmphex(f.va, ==, SYS(d->ring_base[RE] +
                                      head * PAGODA_RING_ENTRY_SIZE));
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_FENCE_INVALID, !=, 0);
        g_assert_cmpuint(f.fence, ==, 0);   /* nothing could be read */
        g_assert_cmphex(f.context, ==, 0xffff);
        qpci_config_writew(&d->dev, PCI_COMMAND, command);
        g_assert_cmphex(qtest_readl(e->qts, mark), ==, 0);
    }

    /* the same entry through the GPU's own address of VRAM runs */
    ring_program(d, RE, VRAM(0), 4);
    pagoda_wr(d, ENG(RE, PAGODA_ENG_RING_TAIL), 1);
    pagoda_wr(d, ENG(RE, PAGODA_ENG_DOORBELL), 1);
    g_assert_true(pagoda_wait_fence(d, RE, 77));
    g_assert_cmphex(qtest_readl(e->qts, mark), ==, 0xbad);
    expect_no_fault(d);
}

/* Command buffers in the device's own BARs are not fetched. */
static void test_mal_buffer_in_bars(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t mark = pagoda_alloc(d, PAGE, PAGE);
    OwnBar bars[4];
    unsigned n = own_bars(e, bars);
    PagodaCmds c;
    uint32_t len;

    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 0xbad }, 1);
    len = pagoda_cmds_bytes(&c);
    cpu_write(e, VRAM(0), c.dw->data, len);
    pagoda_cmds_free(&c);
    for (unsigned b = 0; b < n; b++) {
        uint64_t fence;
        PagodaFaultInfo f;

        g_test_message("%s", bars[b].name);
        fence = pagoda_submit(d, RE, SYS(bars[b].addr), len, 0, 0);
        g_assert_true(pagoda_wait_fence(d, RE, fence));
        f = expect_fault(d, RE, PAGODA_FAULT_OUT_OF_SEGMENT);
        g_assert_cmphex(f.va, ==, SYS(bars[b].addr));
        g_assert_cmpuint(f.fence, ==, fence);
        /* a JUMP there is refused the same way */
        cmds(&c);
        pagoda_cmd_jump(&c, SYS(bars[b].addr), len);
        run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT,
                     SYS(bars[b].addr));
    }
    g_assert_cmphex(qtest_readl(e->qts, mark), ==, 0);
    /* from VRAM's GPU address it runs */
    g_assert_true(pagoda_wait_fence(d, RE, pagoda_submit(d, RE, VRAM(0), len,
                                                         0, 0)));
    g_assert_cmphex(qtest_readl(e->qts, mark), ==, 0xbad);
    expect_no_fault(d);
}

/*
 * DMA aimed at the device's own BARs (registers, MSI-X, VRAM BAR, host
 * aperture) faults: no register changes, no VRAM changes.
 */
static void test_mal_dma_to_bars(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t buf = pagoda_alloc(d, 2 * PAGE, PAGE);
    OwnBar bars[4];
    unsigned n = own_bars(e, bars);
    uint64_t list;
    PagodaVM vm;
    PagodaCmds c;

    pagoda_wr(d, PAGODA_REG_SCRATCH, 0x5c5c5c5c);
    qpci_io_writeq(&d->dev, d->vram, 0, 0x0123456789abcdefull);
    pagoda_memset(d, buf, 0x11, 2 * PAGE);
    for (unsigned b = 0; b < n; b++) {
        uint64_t a = SYS(bars[b].addr);

        g_test_message("%s", bars[b].name);
        cmds(&c);
        pagoda_cmd_write_imm(&c, a + PAGODA_REG_SCRATCH, (uint32_t[]){ 0 }, 1);
        run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT,
                     a + PAGODA_REG_SCRATCH);
        cmds(&c);
        pagoda_cmd_signal(&c, a + PAGODA_REG_RESET, PAGODA_RESET_ADAPTER,
                          false);
        run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT,
                     a + PAGODA_REG_RESET);
        cmds(&c);
        pagoda_cmd_fill(&c, a, 0, 64);
        run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        cmds(&c);
        pagoda_cmd_transfer(&c, 0, a, SYS(buf), 64);
        run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        cmds(&c);
        pagoda_cmd_copy(&c, SYS(buf), a, 64);
        run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        cmds(&c);
        pagoda_cmd_wait(&c, a, 0);
        run_fault(d, RE, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        cmds(&c);
        pagoda_cmd_crc32(&c, a, 64, SYS(buf));
        run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        /* a page list naming the BAR */
        list = write_list(d, (uint64_t[]){ SYS(buf), a }, 2);
        cmds(&c);
        pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, SYS(buf), SYS(list),
                            2 * PAGE);
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        /* a GART entry naming the BAR */
        env_gart(e, SYS(pagoda_alloc(d, PAGE, PAGE)), 16);
        env_map_aperture(e, 3, 1, &bars[b].addr);
        cmds(&c);
        pagoda_cmd_fill(&c, APER(3 * PAGE), 0, 64);
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        cmds(&c);
        pagoda_cmd_transfer(&c, 0, APER(3 * PAGE), SYS(buf), 64);
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        /* the GART itself in the BAR */
        env_gart(e, a, 16);
        cmds(&c);
        pagoda_cmd_fill(&c, APER(0), 0, 64);
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
        /* a page table entry naming the BAR */
        pagoda_vm_init(&vm, d, VCTX, 512);
        pagoda_vm_map(&vm, 0x100000, a, PAGE, PAGE, 0);
        cmds(&c);
        pagoda_cmd_vfill(&c, 0, 0x100000, 0, 64);
        run_fault_at(d, PG, &c, VCTX, PAGODA_FAULT_OUT_OF_SEGMENT, 0x100000);
    }
    /* none of it reached the device */
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, 0x5c5c5c5c);
    g_assert_cmpuint(pagoda_rd(d, ENG(PG, PAGODA_ENG_RING_SIZE)), ==,
                     d->ring_size[PG]);
    g_assert_cmphex(qpci_io_readq(&d->dev, d->vram, 0), ==,
                    0x0123456789abcdefull);
    g_assert_cmphex(pagoda_readq(d, buf), ==, 0x1111111111111111ull);
    g_assert_cmphex(pagoda_readq(d, buf + PAGE), ==, 0x1111111111111111ull);
}

/* A GART placed in the aperture itself reads as unmapped: no recursion. */
static void test_mal_gart_in_aperture(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    g_autofree Env *e = env_new(obj, alloc);
    QPagoda *d = e->d;
    uint64_t p = pagoda_alloc(d, PAGE, PAGE);
    uint8_t got[PAGE], zero[PAGE] = { 0 };
    PagodaCmds c;

    env_gart(e, APER(0), 64);
    cmds(&c);
    pagoda_cmd_map_aperture(&c, 0, 1, &p);
    run_ok(d, PG, &c);
    cpu_fill(e, VRAM(0), 0x33, PAGE);
    cmds(&c);
    pagoda_cmd_fill(&c, APER(0), 0x44444444, 2 * PAGE);
    pagoda_cmd_transfer(&c, 0, APER(0), VRAM(0), PAGE);
    run_ok(d, PG, &c);
    cpu_read(e, VRAM(0), got, PAGE);
    assert_bytes(got, zero, PAGE, "aperture through a GART in the aperture");
    g_assert_cmphex(pagoda_readq(d, p), ==, 0);
}

/* A buffer that jumps to itself: MMIO answers, the other engine runs. */
static void test_mal_self_jump(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t a, b, mark;
    gint64 worst = 0;
    PagodaCmds c;

    pagoda_start(d, alloc);
    mark = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_submit(d, RE, SYS(self_loop(d, &c)), 16, 0, 0);
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_BUSY,
                              PAGODA_ENG_STATUS_BUSY));
    for (unsigned i = 0; i < 2000; i++) {
        gint64 t = g_get_monotonic_time();

        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
        pagoda_wr(d, PAGODA_REG_SCRATCH, i);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, i);
        worst = MAX(worst, g_get_monotonic_time() - t);
    }
    g_test_message("slowest MMIO round trip while looping: %" PRId64 " us",
                   worst);
    for (unsigned i = 0; i < 20; i++) {
        cmds(&c);
        pagoda_cmd_fill(&c, SYS(mark), 0x01010101 * i, 64);
        pagoda_cmd_signal(&c, SYS(mark + 64), i, false);
        run_ok(d, PG, &c);
        g_assert_cmphex(qtest_readl(qts_of(d), mark), ==, 0x01010101 * i);
    }
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY);

    /* two buffers jumping to each other */
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    a = pagoda_alloc(d, PAGE, PAGE);
    b = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark + 128), (uint32_t[]){ 0xa }, 1);
    pagoda_cmd_jump(&c, SYS(b), 20 + 16);
    pagoda_memwrite(d, a, c.dw->data, pagoda_cmds_bytes(&c));
    pagoda_cmds_free(&c);
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark + 132), (uint32_t[]){ 0xb }, 1);
    pagoda_cmd_jump(&c, SYS(a), 20 + 16);
    pagoda_memwrite(d, b, c.dw->data, pagoda_cmds_bytes(&c));
    pagoda_cmds_free(&c);
    pagoda_submit(d, RE, SYS(a), 36, 0, 0);
    g_assert_true(wait_mem32(d, mark + 128, 0xa));
    g_assert_true(wait_mem32(d, mark + 132, 0xb));
    g_assert_cmphex(pagoda_rd(d, ENG(RE, PAGODA_ENG_STATUS)), ==,
                    PAGODA_ENG_STATUS_BUSY);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_STATUS), ==, 0);
    expect_no_fault(d);
}

/* Segment ids 4..31 and reserved address bits, wherever an address goes. */
static void test_mal_segment_ids(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    static const unsigned segs[] = { 4, 5, 16, 31 };
    const uint64_t reserved[] = {
        VRAM(0) | PAGODA_BIT64(63), VRAM(0) | PAGODA_BIT64(61),
        VRAM(0) | PAGODA_BIT64(48), SYS(0x100000) | PAGODA_BIT64(55),
    };
    uint64_t buf, fence;
    PagodaVM vm;
    PagodaCmds c;

    pagoda_start(d, alloc);
    buf = pagoda_alloc(d, PAGE, PAGE);
    pagoda_vm_init(&vm, d, VCTX, 512);
    for (size_t i = 0; i < ARRAY_SIZE(segs) + ARRAY_SIZE(reserved); i++) {
        uint64_t a = i < ARRAY_SIZE(segs) ? PAGODA_PADDR(segs[i], 0x1000ull) :
                     reserved[i - ARRAY_SIZE(segs)];
        PagodaFaultInfo f;

        g_test_message("address 0x%" PRIx64, a);
        cmds(&c);
        pagoda_cmd_fill(&c, a, 0, 4);
        f = run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_WRITE);
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_WRITE, !=, 0);
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_FENCE_INVALID, ==, 0);
        g_assert_cmpuint(f.level, ==, 0xff);
        cmds(&c);
        pagoda_cmd_transfer(&c, 0, a, SYS(buf), 4);
        f = run_fault_at(d, PG, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_READ);
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_WRITE, ==, 0);
        g_assert_cmpuint(f.level, ==, 0xff);
        cmds(&c);
        pagoda_cmd_write_imm(&c, a, (uint32_t[]){ 1 }, 1);
        f = run_fault_at(d, RE, &c, 0, PAGODA_FAULT_OUT_OF_SEGMENT, a);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_WRITE);
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_WRITE, !=, 0);
        /* as a command buffer */
        fence = pagoda_submit(d, RE, a, 16, 0, 0);
        g_assert_true(pagoda_wait_fence(d, RE, fence));
        f = expect_fault(d, RE, PAGODA_FAULT_OUT_OF_SEGMENT);
        g_assert_cmphex(f.va, ==, a);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_EXECUTE);
        g_assert_cmpuint(f.level, ==, 0xff);
        /* as a ring */
        ring_program(d, PG, a, 2);
        pagoda_wr(d, ENG(PG, PAGODA_ENG_RING_TAIL), 1);
        pagoda_wr(d, ENG(PG, PAGODA_ENG_DOORBELL), 1);
        g_assert_true(pagoda_wait_idle(d, PG));
        g_assert_cmphex(expect_fault(d, PG, PAGODA_FAULT_BAD_RING_ENTRY).va,
                        ==, a);
        ring_restore(d, PG);
        /* as a GART */
        pagoda_wr64(d, PAGODA_REG_GART_BASE_LO, a);
        pagoda_wr(d, PAGODA_REG_GART_ENTRIES, 1);
        cmds(&c);
        pagoda_cmd_fill(&c, APER(0), 0, 4);
        run_fault(d, PG, &c, PAGODA_FAULT_OUT_OF_SEGMENT);
    }
    /* a leaf PTE naming a segment that does not exist */
    for (size_t i = 0; i < ARRAY_SIZE(segs); i++) {
        uint64_t va = 0x200000 + i * PAGE;
        PagodaFaultInfo f;

        pagoda_vm_set_pte(&vm, va, 0,
                          PAGODA_PTE_MAKE(segs[i], 0, PAGODA_PTE_VALID));
        cmds(&c);
        pagoda_cmd_vfill(&c, 0, va, 0, 4);
        f = run_fault_at(d, PG, &c, VCTX, PAGODA_FAULT_OUT_OF_SEGMENT, va);
        g_assert_cmpuint(f.level, ==, 0);
    }
    g_assert_cmphex(pagoda_readq(d, buf), ==, 0);
}

/* Each malformed ring entry faults, is skipped, and the next one runs. */
static void test_mal_ring_entries(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint16_t nctx = 64;   /* checked against NUM_CONTEXTS below */
    uint64_t buf, mark;
    uint32_t len;
    PagodaCmds c;
    const struct {
        unsigned engine;
        uint32_t length;
        uint16_t ctx, flags;
        uint64_t reserved;
    } bad[] = {
        { RE, 20, 0, 0, 1 },
        { RE, 20, 0, 0, 1ull << 63 },
        { PG, 20, 0, 0, 0x100 },
        { RE, 0, 0, 0, 0 },
        { RE, 18, 0, 0, 0 },
        { PG, 21, 0, 0, 0 },
        { RE, PAGODA_RING_MAX_LENGTH + 4, 0, 0, 0 },
        { RE, 0xfffffffc, 0, 0, 0 },
        { RE, 20, nctx, 0, 0 },
        { PG, 20, 0xffff, 0, 0 },
        { RE, 20, 0, PAGODA_BIT(3), 0 },
        { PG, 20, 0, PAGODA_BIT(15), 0 },
        { PG, 20, 0, PAGODA_RING_FLAG_VIRTUAL, 0 },
    };

    pagoda_start(d, alloc);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS), ==, nctx);
    g_assert_cmphex(pagoda_rd(d, ENG(PG, PAGODA_ENG_CAPS)) &
                    PAGODA_ENG_CAPS_VIRTUAL, ==, 0);
    mark = pagoda_alloc(d, PAGE, PAGE);
    cmds(&c);
    pagoda_cmd_signal(&c, SYS(mark), 0xbad, false);
    buf = upload(d, &c, &len);
    g_assert_cmpuint(len, ==, 24);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        unsigned e = bad[i].engine;
        uint64_t done = pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO));
        uint32_t head = pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD));
        uint64_t fence, good;
        PagodaFaultInfo f;

        g_test_message("case %zu", i);
        fence = pagoda_submit_entry(d, e, buf,
                                    bad[i].length == 20 ? len : bad[i].length,
                                    bad[i].ctx, bad[i].flags, bad[i].reserved);
        g_assert_true(pagoda_wait_idle(d, e));
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==,
                         head + 1);
        /* the fence of a malformed entry is not trusted: not retired */
        g_assert_cmpuint(pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, done);
        f = expect_fault(d, e, PAGODA_FAULT_BAD_RING_ENTRY);
        g_assert_cmphex(f.va, ==, SYS(d->ring_base[e] +
                                      head * PAGODA_RING_ENTRY_SIZE));
        g_assert_cmphex(f.flags & PAGODA_FAULT_FLAG_FENCE_INVALID, !=, 0);
        g_assert_cmpuint(f.fence, ==, fence);
        g_assert_cmphex(f.context, ==, 0xffff);     /* halts no context */
        g_assert_cmpuint(f.level, ==, 0xff);
        g_assert_cmphex(pagoda_readq(d, mark), ==, 0);
        /* the ring goes on */
        cmds(&c);
        pagoda_cmd_nop(&c, 1);
        good = pagoda_run(d, e, &c, 0, 0);
        pagoda_cmds_free(&c);
        g_assert_cmpuint(pagoda_rd64(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, good);
        expect_no_fault(d);
    }
}

/*
 * RING_SIZE above PAGODA_RING_MAX_ENTRIES is refused like any other bad
 * size: the ring keeps its size, HEAD and TAIL, and runs on. The maximum
 * itself is taken.
 */
static void test_ring_size_too_large(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;

    pagoda_start(d, alloc);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        cmds(&c);
        pagoda_cmd_nop(&c, 1);
        run_ok(d, e, &c);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 1);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_TAIL)), ==, 1);

        pagoda_wr(d, ENG(e, PAGODA_ENG_RING_SIZE),
                  2 * PAGODA_RING_MAX_ENTRIES);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_SIZE)), ==,
                         d->ring_size[e]);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 1);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_TAIL)), ==, 1);
        cmds(&c);
        pagoda_cmd_nop(&c, 1);
        run_ok(d, e, &c);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 2);

        pagoda_wr(d, ENG(e, PAGODA_ENG_RING_SIZE), PAGODA_RING_MAX_ENTRIES);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_SIZE)), ==,
                         PAGODA_RING_MAX_ENTRIES);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 0);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_TAIL)), ==, 0);
        ring_restore(d, e);
    }
}

/* Unknown, misplaced, truncated and mis-sized commands. */
static void test_mal_commands(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t mark;
#define H(op, fl, n) PAGODA_CMD_HEADER(op, fl, n)
    static const struct {
        unsigned engine;
        uint32_t dw[8];
        unsigned n;
    } bad[] = {
        /* unknown opcodes, and commands of the other engine */
        { RE, { H(0x7f, 0, 1) }, 1 },
        { PG, { H(0x30, 0, 1) }, 1 },
        { PG, { H(0xff, 0, 2), 0 }, 2 },
        { RE, { H(0x03, 0, 1) }, 1 },
        { RE, { H(0x1b, 0, 1) }, 1 },
        { PG, { H(0x26, 0, 1) }, 1 },
        { RE, { H(PAGODA_CMD_FILL, 0, 6) }, 6 },
        { RE, { H(PAGODA_CMD_TRANSFER, 0, 8) }, 8 },
        { PG, { H(PAGODA_CMD_COPY, 0, 8) }, 8 },
        { PG, { H(PAGODA_CMD_JUMP, 0, 4), 16 }, 4 },
        { PG, { H(PAGODA_CMD_WRITE_IMM, 0, 4) }, 4 },
        /* a header of zero dwords; a length beyond the buffer */
        { RE, { H(PAGODA_CMD_NOP, 0, 0) }, 1 },
        { PG, { H(PAGODA_CMD_NOP, 0, 3), 0 }, 2 },
        { RE, { H(PAGODA_CMD_FILL32, 0, 6), 0, 0, 0 }, 4 },
        { PG, { H(PAGODA_CMD_NOP, 0, 0xffff) }, 1 },
        /* wrong sizes */
        { RE, { H(PAGODA_CMD_SIGNAL_FENCE, 0, 5) }, 5 },
        { PG, { H(PAGODA_CMD_SIGNAL_FENCE, 0, 7) }, 7 },
        { RE, { H(PAGODA_CMD_WAIT_FENCE, 0, 4) }, 4 },
        { PG, { H(PAGODA_CMD_TRANSFER, 0, 7) }, 7 },
        { PG, { H(PAGODA_CMD_FILL, 0, 5) }, 5 },
        { PG, { H(PAGODA_CMD_VIRTUAL_TRANSFER, 0, 6) }, 6 },
        { PG, { H(PAGODA_CMD_VIRTUAL_FILL, 0, 8) }, 8 },
        { PG, { H(PAGODA_CMD_UPDATE_PAGE_TABLE, 0, 6) }, 6 },
        { PG, { H(PAGODA_CMD_COPY_PTES, 0, 7), 1 }, 7 },
        { PG, { H(PAGODA_CMD_FLUSH_TLB, 0, 7) }, 7 },
        { PG, { H(PAGODA_CMD_MAP_APERTURE, 0, 5), 0, 1 }, 5 },
        { PG, { H(PAGODA_CMD_UNMAP_APERTURE, 0, 3), 0, 1 }, 3 },
        { PG, { H(PAGODA_CMD_MAP_HOST_APERTURE, 0, 4),
                PAGODA_SEG_VRAM_HIDDEN, 1, 0 }, 4 },
        { PG, { H(PAGODA_CMD_UNMAP_HOST_APERTURE, 0, 2), 1 }, 2 },
        { RE, { H(PAGODA_CMD_COPY, 0, 6) }, 6 },
        { RE, { H(PAGODA_CMD_FILL32, 0, 8) }, 8 },
        { RE, { H(PAGODA_CMD_WRITE_IMM, 0, 5), 2 }, 5 },
        { RE, { H(PAGODA_CMD_WRITE_IMM, 0, 3), 0 }, 3 },
        { RE, { H(PAGODA_CMD_WRITE_IMM, 0, 5), 0xffffffff }, 5 },
        { RE, { H(PAGODA_CMD_CRC32, 0, 6) }, 6 },
        { RE, { H(PAGODA_CMD_CALL, 0, 5), 16 }, 5 },
        /* COPY_PTES counts and indices past PAGODA_COPY_PTES_MAX */
        { PG, { H(PAGODA_CMD_COPY_PTES, 0, 8), 0 }, 8 },
        { PG, { H(PAGODA_CMD_COPY_PTES, 0, 8), PAGODA_COPY_PTES_MAX + 1 }, 8 },
        { PG, { H(PAGODA_CMD_COPY_PTES, 0, 8), 2, 0, 0, 0, 0,
                PAGODA_COPY_PTES_MAX - 1, 0 }, 8 },
        { PG, { H(PAGODA_CMD_COPY_PTES, 0, 8), 2, 0, 0, 0, 0,
                0, PAGODA_COPY_PTES_MAX - 1 }, 8 },
        /* unknown flags */
        { PG, { H(PAGODA_CMD_FILL, 1, 6) }, 6 },
        { PG, { H(PAGODA_CMD_TRANSFER, 0x80, 8) }, 8 },
        { PG, { H(PAGODA_CMD_UNMAP_APERTURE, 2, 4), 0, 1 }, 4 },
        { PG, { H(PAGODA_CMD_UNMAP_HOST_APERTURE, 4, 3), 1, 0 }, 3 },
    };
#undef H

    pagoda_start(d, alloc);
    mark = pagoda_alloc(d, PAGE, PAGE);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        unsigned e = bad[i].engine;
        uint64_t addr, fence;
        uint32_t len;
        PagodaFaultInfo f;
        PagodaCmds c;

        g_test_message("case %zu: header 0x%08x", i, bad[i].dw[0]);
        /* one good command before, one after: only the first runs */
        cmds(&c);
        pagoda_cmd_signal(&c, SYS(mark), i + 1, false);
        pagoda_cmd_raw(&c, bad[i].dw, bad[i].n);
        pagoda_cmd_signal(&c, SYS(mark + 8), i + 1, false);
        addr = pagoda_cmds_upload(d, &c);
        len = pagoda_cmds_bytes(&c);
        pagoda_cmds_free(&c);
        if (PAGODA_CMD_DWORDS(bad[i].dw[0]) > bad[i].n) {
            len = 24 + 4 * bad[i].n;    /* the bad command ends the buffer */
        }
        fence = pagoda_submit(d, e, SYS(addr), len, 0, 0);
        g_assert_true(pagoda_wait_fence(d, e, fence));
        f = expect_fault(d, e, PAGODA_FAULT_BAD_COMMAND);
        g_assert_cmphex(f.va, ==, SYS(addr + 24));
        g_assert_cmpuint(f.fence, ==, fence);
        g_assert_cmpuint(f.context, ==, 0);
        g_assert_cmpuint(pagoda_readq(d, mark), ==, i + 1);
        g_assert_cmpuint(pagoda_readq(d, mark + 8), ==, 0);
        pagoda_writeq(d, mark, 0);
    }
    /* a buffer that ends in the middle of a header */
    {
        PagodaCmds c;
        uint64_t addr, fence;

        cmds(&c);
        pagoda_cmd_nop(&c, 1);
        pagoda_cmd_nop(&c, 1);
        addr = pagoda_cmds_upload(d, &c);
        pagoda_cmds_free(&c);
        fence = pagoda_submit(d, RE, SYS(addr), 4, 0, 0);
        g_assert_true(pagoda_wait_fence(d, RE, fence));
        expect_no_fault(d);
    }
}

static void test_mal_registers(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint32_t nctx;
    static const uint32_t sizes[] = { 3, 100, 255, 131072, 0x80000000,
                                      0xffffffff };
    uint64_t mark, fence;
    PagodaCmds c;

    pagoda_start(d, alloc);
    mark = pagoda_alloc(d, PAGE, PAGE);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        /* RING_SIZE must be a power of two up to PAGODA_RING_MAX_ENTRIES */
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
            pagoda_wr(d, ENG(e, PAGODA_ENG_RING_SIZE), sizes[i]);
            g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_SIZE)), ==,
                             d->ring_size[e]);
        }
        /* TAIL beyond the ring is refused and runs nothing */
        pagoda_wr(d, ENG(e, PAGODA_ENG_RING_TAIL), d->ring_size[e]);
        pagoda_wr(d, ENG(e, PAGODA_ENG_RING_TAIL), 0xffffffff);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_TAIL)), ==, 0);
        pagoda_wr(d, ENG(e, PAGODA_ENG_DOORBELL), 1);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 0);
        g_assert_cmphex(pagoda_rd(d, ENG(e, PAGODA_ENG_STATUS)), ==, 0);
        /* read-only registers */
        pagoda_wr(d, ENG(e, PAGODA_ENG_RING_HEAD), 5);
        pagoda_wr(d, ENG(e, PAGODA_ENG_FENCE_LO), 5);
        pagoda_wr(d, ENG(e, PAGODA_ENG_CAPS), 0);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_RING_HEAD)), ==, 0);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_FENCE_LO)), ==, 0);
        g_assert_cmpuint(pagoda_rd(d, ENG(e, PAGODA_ENG_CAPS)), !=, 0);
        /* a good submission still works */
        cmds(&c);
        pagoda_cmd_nop(&c, 1);
        run_ok(d, e, &c);
    }

    /* the ring cannot be reprogrammed while the engine is busy */
    cmds(&c);
    pagoda_cmd_write_imm(&c, SYS(mark), (uint32_t[]){ 1 }, 1);
    fence = pagoda_submit(d, RE, SYS(self_loop(d, &c)), 36, 0, 0);
    g_assert_true(wait_status(d, RE, PAGODA_ENG_STATUS_BUSY,
                              PAGODA_ENG_STATUS_BUSY));
    pagoda_wr64(d, ENG(RE, PAGODA_ENG_RING_BASE_LO), SYS(mark));
    pagoda_wr(d, ENG(RE, PAGODA_ENG_RING_SIZE), 4);
    g_assert_cmphex(pagoda_rd64(d, ENG(RE, PAGODA_ENG_RING_BASE_LO)), ==,
                    SYS(d->ring_base[RE]));
    g_assert_cmpuint(pagoda_rd(d, ENG(RE, PAGODA_ENG_RING_SIZE)), ==,
                     d->ring_size[RE]);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(RE));
    g_assert_cmpuint(pagoda_rd64(d, ENG(RE, PAGODA_ENG_ABORTED_FENCE_LO)), ==,
                     fence);

    /* a ring of size 0 is off: doorbells do nothing */
    ring_program(d, PG, SYS(d->ring_base[PG]), 0);
    g_assert_cmpuint(pagoda_rd(d, ENG(PG, PAGODA_ENG_RING_SIZE)), ==, 0);
    pagoda_wr(d, ENG(PG, PAGODA_ENG_RING_TAIL), 1);
    pagoda_wr(d, ENG(PG, PAGODA_ENG_DOORBELL), 1);
    g_assert_cmpuint(pagoda_rd(d, ENG(PG, PAGODA_ENG_RING_TAIL)), ==, 0);
    g_assert_cmphex(pagoda_rd(d, ENG(PG, PAGODA_ENG_STATUS)), ==, 0);
    ring_restore(d, PG);

    /* CTX_SELECT out of range keeps the selected context */
    nctx = pagoda_rd(d, PAGODA_REG_NUM_CONTEXTS);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, 5);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, nctx);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_SELECT), ==, 5);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, 0xffffffff);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_SELECT), ==, 5);
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, nctx - 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CTX_SELECT), ==,
                     nctx - 1);

    /* writes to unknown registers and FAULT_POP on an empty queue */
    pagoda_wr(d, 0xfffc, 0xffffffff);
    g_assert_cmphex(pagoda_rd(d, 0xfffc), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ENGINE(PAGODA_NUM_ENGINES)), ==, 0);
    pagoda_wr(d, PAGODA_REG_ENGINE(PAGODA_NUM_ENGINES) + 0x10, 1);
    pagoda_wr(d, PAGODA_REG_FAULT_POP, 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
    cmds(&c);
    pagoda_cmd_nop(&c, 1);
    run_ok(d, PG, &c);
}

/*
 * Table writes use up the slice's byte budget: a buffer of 256
 * UPDATE_PAGE_TABLE commands that each rewrite a root of 2^20 entries
 * (8 MiB) runs over many slices, with register and memory access served in
 * between, instead of writing 2 GiB in one go.
 */
static void test_mal_table_write_slices(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint32_t entries = 1u << 20, n = 256;
    uint64_t root, buf, fence, done;
    PagodaCmds c;

    pagoda_start(d, alloc);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_MMU_LEVEL(1) +
                               PAGODA_MMU_LEVEL_INDEX_BITS), ==, 20);
    root = pagoda_alloc(d, entries * 8ull, PAGE);
    cmds(&c);
    for (uint64_t i = 1; i <= n; i++) {
        pagoda_cmd_update_pt(&c, PAGODA_UPT_REPEAT, 1, SYS(root), 0, entries,
                             &i);
    }
    buf = pagoda_cmds_upload(d, &c);
    fence = pagoda_submit(d, PG, SYS(buf), pagoda_cmds_bytes(&c), 0, 0);
    pagoda_cmds_free(&c);
    /* each command writes the last entry last: it counts finished commands */
    done = pagoda_readq(d, root + (entries - 1) * 8ull);
    g_test_message("%" PRIu64 " of %u commands done at the first access",
                   done, n);
    g_assert_cmpuint(done, <, n);
    g_assert_true(pagoda_wait_fence(d, PG, fence));
    expect_no_fault(d);
    g_assert_cmpuint(pagoda_readq(d, root), ==, n);
}

/* ---- Registration ------------------------------------------------------- */

/*
 * While the VM is stopped (e.g. for the last pass of a migration) the
 * engines do not touch memory; they run what was submitted on resume.
 */
static void test_vm_stopped(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    QTestState *qts = d->dev.bus->qts;
    PagodaCmds c;
    uint64_t buf, fence;

    pagoda_start(d, alloc);
    buf = pagoda_alloc(d, PAGE, PAGE);
    pagoda_cmds_init(&c);
    pagoda_cmd_fill(&c, PAGODA_PADDR(PAGODA_SEG_SYSTEM, buf), 0x5a5a5a5a, PAGE);
    qtest_qmp_assert_success(qts, "{'execute': 'stop'}");
    fence = pagoda_submit(d, PAGODA_ENGINE_PAGING,
                          PAGODA_PADDR(0, pagoda_cmds_upload(d, &c)),
                          pagoda_cmds_bytes(&c), 0, 0);
    g_usleep(50 * 1000);
    g_assert_cmphex(pagoda_readq(d, buf), ==, 0);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_ENGINE(PAGODA_ENGINE_PAGING) +
                                    PAGODA_ENG_FENCE_LO), <, fence);
    qtest_qmp_assert_success(qts, "{'execute': 'cont'}");
    g_assert_true(pagoda_wait_fence(d, PAGODA_ENGINE_PAGING, fence));
    g_assert_cmphex(pagoda_readq(d, buf), ==, 0x5a5a5a5a5a5a5a5aull);
    pagoda_cmds_free(&c);
}

static void register_pagoda_cp_tests(void)
{
    static QOSGraphTestOptions seg_default_opts = {
        .arg = (void *)&seg_default,
    };
    static QOSGraphTestOptions seg_small_opts = {
        .edge.extra_device_opts = "segment-page-size=4096,"
                                  "hidden-vram-size=1M,aperture-size=1M",
        .arg = (void *)&seg_small,
    };
    static QOSGraphTestOptions seg_no_hidden_opts = {
        .edge.extra_device_opts = "hidden-vram-size=0,aperture-size=64M",
        .arg = (void *)&seg_no_hidden,
    };
    static QOSGraphTestOptions page4k = {
        .edge.extra_device_opts = "segment-page-size=4096",
    };
    static QOSGraphTestOptions vram32 = {
        .edge.extra_device_opts = "vram-size=32M",
    };
    static QOSGraphTestOptions levels2 = {
        .edge.extra_device_opts = "mmu-levels=2",
    };
    static QOSGraphTestOptions root_1m = {
        .edge.extra_device_opts = "mmu-levels=2,va-bits=41",
    };
    static QOSGraphTestOptions vram16 = {
        .edge.extra_device_opts = "vram-size=16M",
    };

    qtest_add_func("/pagoda/cp/crc32-reference", test_crc32_reference);

    qos_add_test("cp-segments", "pagoda-cp", test_segments, &seg_default_opts);
    qos_add_test("cp-segments-small", "pagoda-cp", test_segments, &seg_small_opts);
    qos_add_test("cp-segments-no-hidden", "pagoda-cp", test_segments,
                 &seg_no_hidden_opts);
    qos_add_test("cp-segment-bounds", "pagoda-cp", test_segment_bounds,
                 &seg_default_opts);
    qos_add_test("cp-segment-bounds-small", "pagoda-cp", test_segment_bounds,
                 &seg_small_opts);
    qos_add_test("cp-segment-bounds-no-hidden", "pagoda-cp", test_segment_bounds,
                 &seg_no_hidden_opts);

    qos_add_test("cp-transfer-matrix", "pagoda-cp", test_transfer_matrix, NULL);
    qos_add_test("cp-transfer-matrix-4k", "pagoda-cp", test_transfer_matrix,
                 &page4k);
    qos_add_test("cp-transfer-sizes", "pagoda-cp", test_transfer_sizes, NULL);
    qos_add_test("cp-transfer-large", "pagoda-cp", test_transfer_large, NULL);
    qos_add_test("cp-transfer-lists", "pagoda-cp", test_transfer_lists, NULL);
    qos_add_test("cp-transfer-list-bad", "pagoda-cp", test_transfer_list_bad,
                 NULL);
    qos_add_test("cp-transfer-list-fault-va", "pagoda-cp",
                 test_transfer_list_fault_va, NULL);
    qos_add_test("cp-transfer-list-large", "pagoda-cp", test_transfer_list_large,
                 NULL);
    qos_add_test("cp-transfer-lists-one-buffer", "pagoda-cp",
                 test_transfer_lists_one_buffer, NULL);
    qos_add_test("cp-fill", "pagoda-cp", test_fill, NULL);
    qos_add_test("cp-fence-writeback", "pagoda-cp", test_fence_writeback, NULL);
    qos_add_test("cp-ring-status", "pagoda-cp", test_ring_status, NULL);
    qos_add_test("cp-fill-large", "pagoda-cp", test_fill_large, NULL);
    qos_add_test("cp-zero-size", "pagoda-cp", test_zero_size, NULL);
    qos_add_test("cp-virtual-fill", "pagoda-cp", test_virtual_fill, NULL);
    qos_add_test("cp-virtual-transfer", "pagoda-cp", test_virtual_transfer, NULL);
    qos_add_test("cp-virtual-64k-misaligned", "pagoda-cp",
                 test_virtual_64k_misaligned, NULL);
    qos_add_test("cp-update-page-table", "pagoda-cp", test_update_page_table,
                 NULL);
    qos_add_test("cp-update-page-table-leaf64", "pagoda-cp",
                 test_update_page_table_leaf64, NULL);
    qos_add_test("cp-update-page-table-root", "pagoda-cp",
                 test_update_page_table_root, &levels2);
    qos_add_test("cp-update-page-table-bad", "pagoda-cp",
                 test_update_page_table_bad, NULL);
    qos_add_test("cp-copy-ptes", "pagoda-cp", test_copy_ptes, NULL);
    qos_add_test("cp-copy-ptes-bad", "pagoda-cp", test_copy_ptes_bad, NULL);
    qos_add_test("cp-flush-tlb-args", "pagoda-cp", test_flush_tlb_args, NULL);
    qos_add_test("cp-remap-sequence", "pagoda-cp", test_remap_sequence, NULL);
    qos_add_test("cp-flush-tlb-range-end", "pagoda-cp", test_flush_tlb_range_end,
                 NULL);
    qos_add_test("cp-aperture", "pagoda-cp", test_aperture, NULL);
    qos_add_test("cp-aperture-gart-in-vram", "pagoda-cp",
                 test_aperture_gart_in_vram, NULL);
    qos_add_test("cp-aperture-bad", "pagoda-cp", test_aperture_bad, NULL);
    qos_add_test("cp-host-aperture", "pagoda-cp", test_host_aperture, NULL);
    qos_add_test("cp-host-aperture-4k", "pagoda-cp", test_host_aperture, &page4k);
    qos_add_test("cp-host-aperture-bad", "pagoda-cp", test_host_aperture_bad,
                 NULL);
    qos_add_test("cp-signal-fence", "pagoda-cp", test_signal_fence, NULL);
    qos_add_test("cp-wait-fence-cpu", "pagoda-cp", test_wait_fence_cpu, NULL);
    qos_add_test("cp-wait-fence-paging", "pagoda-cp", test_wait_fence_paging,
                 NULL);
    qos_add_test("cp-wait-fence-bad", "pagoda-cp", test_wait_fence_bad, NULL);

    qos_add_test("cp-render-physical", "pagoda-cp", test_render_physical, NULL);
    qos_add_test("cp-render-virtual", "pagoda-cp", test_render_virtual, NULL);
    qos_add_test("cp-crc32", "pagoda-cp", test_crc32, NULL);
    qos_add_test("cp-jump", "pagoda-cp", test_jump, NULL);
    qos_add_test("cp-call", "pagoda-cp", test_call, NULL);
    qos_add_test("cp-call-too-deep", "pagoda-cp", test_call_too_deep, NULL);
    qos_add_test("cp-jump-in-call", "pagoda-cp", test_jump_in_call, NULL);
    qos_add_test("cp-branch-bad", "pagoda-cp", test_branch_bad, NULL);

    qos_add_test("cp-int-ring-entry", "pagoda-cp", test_int_ring_entry, NULL);
    qos_add_test("cp-int-enable", "pagoda-cp", test_int_enable, NULL);
    qos_add_test("cp-int-enable-msix", "pagoda-cp", test_int_enable_msix, NULL);
    qos_add_test("cp-int-fault-sticky", "pagoda-cp", test_int_fault_sticky, NULL);
    qos_add_test("cp-doorbell-poll", "pagoda-cp", test_doorbell_poll, NULL);
    qos_add_test("cp-doorbell-poll-kept", "pagoda-cp", test_doorbell_poll_kept, NULL);
    qos_add_test("cp-fault-lost", "pagoda-cp", test_fault_lost, NULL);

    qos_add_test("cp-engine-reset", "pagoda-cp", test_engine_reset, NULL);
    qos_add_test("cp-engine-reset-paging", "pagoda-cp", test_engine_reset_paging,
                 &vram32);
    qos_add_test("cp-engine-reset-waiting", "pagoda-cp",
                 test_engine_reset_waiting, NULL);
    qos_add_test("cp-engine-reset-fails", "pagoda-cp",
                 test_engine_reset_fails, NULL);
    qos_add_test("cp-adapter-reset", "pagoda-cp", test_adapter_reset, &vram32);
    qos_add_test("cp-vm-stopped", "pagoda-cp", test_vm_stopped, NULL);

    qos_add_test("cp-ring-in-segments", "pagoda-cp", test_ring_in_segments, NULL);
    qos_add_test("cp-mal-huge-sizes", "pagoda-cp", test_mal_huge_sizes, &vram16);
    qos_add_test("cp-mal-ring-in-bars", "pagoda-cp", test_mal_ring_in_bars, NULL);
    qos_add_test("cp-mal-buffer-in-bars", "pagoda-cp", test_mal_buffer_in_bars,
                 NULL);
    qos_add_test("cp-mal-dma-to-bars", "pagoda-cp", test_mal_dma_to_bars, NULL);
    qos_add_test("cp-mal-gart-in-aperture", "pagoda-cp",
                 test_mal_gart_in_aperture, NULL);
    qos_add_test("cp-mal-self-jump", "pagoda-cp", test_mal_self_jump, NULL);
    qos_add_test("cp-mal-segment-ids", "pagoda-cp", test_mal_segment_ids, NULL);
    qos_add_test("cp-mal-ring-entries", "pagoda-cp", test_mal_ring_entries, NULL);
    qos_add_test("cp-ring-size-too-large", "pagoda-cp", test_ring_size_too_large,
                 NULL);
    qos_add_test("cp-mal-commands", "pagoda-cp", test_mal_commands, NULL);
    qos_add_test("cp-mal-registers", "pagoda-cp", test_mal_registers, NULL);
    qos_add_test("cp-mal-table-write-slices", "pagoda-cp",
                 test_mal_table_write_slices, &root_1m);
}

libqos_init(register_pagoda_cp_tests);
