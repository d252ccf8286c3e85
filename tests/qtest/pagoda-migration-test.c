/*
 * Pagoda migration test: chains of jobs that give a wrong answer if any
 * command runs twice or is skipped (copy then overwrite the source, CRC
 * then fill, CALLs, a WAIT_FENCE on the other engine's fence, a page list,
 * a fence slot read before it is signalled) run on both engines; the VM is migrated at a seeded point in the middle of them (to
 * a file, then loaded into a second QEMU that continues), and everything
 * the jobs wrote must equal what they write without a migration, each
 * fence once.
 *
 * A standalone qtest (two QEMU processes per case), run by
 * scripts/test.sh beside the qos tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "libqos/pagoda.h"

#define MACHINE     "-machine pc -m 256M -device pagoda,addr=04.0,vram-size=128M," \
                    "hidden-vram-size=16M,host-aperture-size=4M"
#define BLOCK       (16 * MiB)      /* the data each job moves */
#define JOBS        48              /* jobs per engine */
#define SEEDS       8               /* migration points */
#define RE          PAGODA_ENGINE_RENDER
#define PG          PAGODA_ENGINE_PAGING
#define VRAM(off)   PAGODA_PADDR(PAGODA_SEG_VRAM, (off))
#define SYS(addr)   PAGODA_PADDR(PAGODA_SEG_SYSTEM, (addr))

/* Where each chain works, in VRAM, and what the render chain reads. */
#define R_SRC       (0 * BLOCK)
#define R_DST       (1 * BLOCK)
#define P_SRC       (2 * BLOCK)
#define P_DST       (3 * BLOCK)
#define SCATTER     (4 * BLOCK)     /* pages a page list names, in reverse */
#define LIST_PAGES  1024

/* One QEMU with the device set up as the test left it. */
typedef struct Machine {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPagoda d;
} Machine;

/* The test's guest memory, allocated before the migration. */
typedef struct Layout {
    uint64_t crcs;                  /* JOBS CRC-32s of the render chain */
    uint64_t logs;                  /* JOBS x 8 bytes the paging chain copies */
    uint64_t fence_wb;              /* the paging engine's fence, written back */
    uint64_t after;                 /* a command buffer for after it */
    uint64_t gate;                  /* both chains wait for the test to set it */
    uint64_t list;                  /* LIST_PAGES page addresses in SCATTER */
    uint64_t marks;                 /* JOBS fences, each signalled by its job */
    uint64_t seen;                  /* JOBS: each mark as its job found it */
} Layout;

static uint32_t pattern(unsigned engine, unsigned job)
{
    return 0x51000000u + engine * 0x10000u + job * 0x101u;
}

static void machine_attach(Machine *m)
{
    QPCIDevice *dev;

    m->bus = qpci_new_pc(m->qts, &m->alloc);
    dev = qpci_device_find(m->bus, QPCI_DEVFN(4, 0));
    g_assert(dev);
    m->d.dev = *dev;
    g_free(dev);
}

static void machine_start(Machine *m)
{
    memset(m, 0, sizeof(*m));
    m->qts = qtest_init(MACHINE);
    pc_alloc_init(&m->alloc, m->qts, ALLOC_NO_FLAGS);
    machine_attach(m);
    pagoda_start(&m->d, &m->alloc);
}

static void machine_quit(Machine *m)
{
    qpci_free_pc(m->bus);
    alloc_destroy(&m->alloc);
    qtest_quit(m->qts);
}

/* The QMP status of the migration (query-migrate), or of the VM (query-status). */
static char *qmp_status(QTestState *qts, const char *command, const char *key)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': %s }", command);
    QDict *ret = qdict_get_qdict(rsp, "return");
    char *status = g_strdup(ret && qdict_haskey(ret, key) ? qdict_get_str(ret, key) : "");

    qobject_unref(rsp);
    return status;
}

/* Until @qts's side of the migration has completed (by @end). */
static void wait_migration(QTestState *qts, gint64 end)
{
    char *status;

    for (;;) {
        status = qmp_status(qts, "query-migrate", "status");
        if (!strcmp(status, "completed") || !strcmp(status, "failed") ||
            g_get_monotonic_time() > end) {
            break;
        }
        g_free(status);
        g_usleep(1000);
    }
    g_assert_cmpstr(status, ==, "completed");
    g_free(status);
}

/*
 * Stop @src (the point of the migration: no engine works while stopped),
 * save it to @file, and load it into a second QEMU, left stopped. The
 * test's view of the device (its rings) carries over; the second QEMU's
 * memory is the first's, so nothing is allocated in it any more.
 */
static void migrate(Machine *src, Machine *dst, const char *file)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    qtest_qmp_assert_success(src->qts, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(src->qts, "{ 'execute': 'migrate', 'arguments': { 'uri': %s } }",
                             uri);
    wait_migration(src->qts, end);

    memset(dst, 0, sizeof(*dst));
    dst->qts = qtest_initf(MACHINE " -incoming %s", uri);
    wait_migration(dst->qts, end);
    pc_alloc_init(&dst->alloc, dst->qts, ALLOC_NO_FLAGS);
    dst->d = src->d;
    dst->d.alloc = NULL;
    machine_attach(dst);
    pagoda_attach(&dst->d);
}

/* Run @c from @addr (memory allocated before the migration) on @engine. */
static void run_at(QPagoda *d, unsigned engine, uint64_t addr, PagodaCmds *c)
{
    uint64_t fence;

    pagoda_memwrite(d, addr, c->dw->data, pagoda_cmds_bytes(c));
    fence = pagoda_submit(d, engine, SYS(addr), pagoda_cmds_bytes(c), 0, 0);
    g_assert_true(pagoda_wait_fence(d, engine, fence));
}

/*
 * The render chain: job k copies R_SRC to R_DST through a CALL, fills
 * R_SRC with its pattern, then writes R_DST's CRC-32 to crcs[k] after
 * waiting for the paging chain's job k (its fence written back); last it
 * copies its fence slot marks[k] to seen[k], then signals marks[k]: a
 * signal written twice would be seen.
 */
static uint64_t submit_render_chain(QPagoda *d, const Layout *l)
{
    uint64_t fence = 0;

    for (unsigned k = 0; k < JOBS; k++) {
        PagodaCmds sub, c;
        uint64_t sub_addr;

        pagoda_cmds_init(&sub);
        pagoda_cmd_copy(&sub, VRAM(R_SRC), VRAM(R_DST), BLOCK);
        pagoda_cmd_fill32(&sub, VRAM(R_SRC), pattern(RE, k), BLOCK);
        sub_addr = pagoda_cmds_upload(d, &sub);

        pagoda_cmds_init(&c);
        pagoda_cmd_call(&c, SYS(sub_addr), pagoda_cmds_bytes(&sub));
        /* the paging chain's job k: fence k + 3 (after the set-up and the gate) */
        pagoda_cmd_wait(&c, SYS(l->fence_wb), k + 3);
        pagoda_cmd_crc32(&c, VRAM(R_DST), BLOCK, SYS(l->crcs + 4 * k));
        pagoda_cmd_copy(&c, SYS(l->marks + 8 * k), SYS(l->seen + 8 * k), 8);
        pagoda_cmd_signal(&c, SYS(l->marks + 8 * k), k + 1, false);
        fence = pagoda_submit(d, RE, SYS(pagoda_cmds_upload(d, &c)), pagoda_cmds_bytes(&c), 0,
                              0);
        pagoda_cmds_free(&sub);
        pagoda_cmds_free(&c);
    }
    return fence;
}

/*
 * The paging chain: job k transfers P_SRC to P_DST, fills P_SRC with its
 * pattern, copies the start of P_SRC to the pages of a page list, and
 * P_DST's first 8 bytes to logs[k].
 */
static uint64_t submit_paging_chain(QPagoda *d, const Layout *l)
{
    uint64_t fence = 0;

    for (unsigned k = 0; k < JOBS; k++) {
        PagodaCmds c;

        pagoda_cmds_init(&c);
        pagoda_cmd_transfer(&c, 0, VRAM(P_SRC), VRAM(P_DST), BLOCK);
        pagoda_cmd_fill(&c, VRAM(P_SRC), pattern(PG, k), BLOCK);
        pagoda_cmd_transfer(&c, PAGODA_TRANSFER_DST_LIST, VRAM(P_SRC), SYS(l->list),
                            LIST_PAGES * 4096ull);
        pagoda_cmd_transfer(&c, 0, VRAM(P_DST), SYS(l->logs + 8 * k), 8);
        fence = pagoda_submit(d, PG, SYS(pagoda_cmds_upload(d, &c)), pagoda_cmds_bytes(&c), 0,
                              0);
        pagoda_cmds_free(&c);
    }
    return fence;
}

/* CRC-32 (IEEE, zlib's) of BLOCK bytes of @word repeated, as CRC32 computes it. */
static uint32_t block_crc(uint32_t word)
{
    static uint32_t table[256];
    uint32_t crc = 0xffffffffu;
    uint8_t bytes[4];

    if (!table[1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;

            for (int b = 0; b < 8; b++) {
                c = c >> 1 ^ (0xedb88320u & -(c & 1));
            }
            table[i] = c;
        }
    }
    stl_le_p(bytes, word);
    for (uint64_t i = 0; i < BLOCK; i++) {
        crc = crc >> 8 ^ table[(crc ^ bytes[i % 4]) & 0xff];
    }
    return ~crc;
}

/* What each job must have written: job k saw the data job k - 1 left. */
static void check_results(Machine *m, const Layout *l, uint32_t initial)
{
    static uint32_t crcs[JOBS];

    for (unsigned k = 0; k < JOBS; k++) {
        uint32_t before = k ? pattern(RE, k - 1) : initial;
        uint64_t log = pagoda_readq(&m->d, l->logs + 8 * k);
        uint32_t want = k ? pattern(PG, k - 1) : initial;

        if (!crcs[k]) {
            crcs[k] = block_crc(before);
        }
        g_assert_cmphex(qtest_readl(m->qts, l->crcs + 4 * k), ==, crcs[k]);
        /* each fence written once: its job found it unwritten */
        g_assert_cmpuint(pagoda_readq(&m->d, l->marks + 8 * k), ==, k + 1);
        g_assert_cmpuint(pagoda_readq(&m->d, l->seen + 8 * k), ==, 0);
        g_assert_cmphex(log, ==, (uint64_t)want << 32 | want);
    }
}

/*
 * Run both chains, migrate at a point @seed chooses, let the second QEMU
 * finish them, and check every result. Returns whether an engine was in
 * the middle of an entry when the VM stopped.
 */
static bool run_case(unsigned seed, const char *file)
{
    const uint32_t initial = 0x0badf00d;
    Machine src, dst;
    Layout l;
    uint64_t rfence, pfence;
    bool busy;
    PagodaCmds c;

    machine_start(&src);
    l.crcs = pagoda_alloc(&src.d, JOBS * 4, 4096);
    l.logs = pagoda_alloc(&src.d, JOBS * 8, 4096);
    l.fence_wb = pagoda_alloc(&src.d, 4096, 4096);
    l.after = pagoda_alloc(&src.d, 4096, 4096);
    l.gate = pagoda_alloc(&src.d, 4096, 4096);
    l.list = pagoda_alloc(&src.d, LIST_PAGES * 8, 4096);
    l.marks = pagoda_alloc(&src.d, JOBS * 8, 4096);
    l.seen = pagoda_alloc(&src.d, JOBS * 8, 4096);
    for (unsigned i = 0; i < LIST_PAGES; i++) {
        pagoda_writeq(&src.d, l.list + 8 * i, VRAM(SCATTER + (LIST_PAGES - 1 - i) * 4096ull));
    }
    pagoda_wr64(&src.d, PAGODA_REG_ENGINE(PG) + PAGODA_ENG_FENCE_WB_LO, SYS(l.fence_wb));
    pagoda_cmds_init(&c);
    pagoda_cmd_fill(&c, VRAM(R_SRC), initial, BLOCK);
    pagoda_cmd_fill(&c, VRAM(P_SRC), initial, BLOCK);
    pagoda_run(&src.d, PG, &c, 0, 0);
    pagoda_cmds_free(&c);

    /* both chains queued behind a gate, then let go together */
    pagoda_cmds_init(&c);
    pagoda_cmd_wait(&c, SYS(l.gate), 1);
    pagoda_submit(&src.d, RE, SYS(pagoda_cmds_upload(&src.d, &c)), pagoda_cmds_bytes(&c), 0, 0);
    pagoda_submit(&src.d, PG, SYS(pagoda_cmds_upload(&src.d, &c)), pagoda_cmds_bytes(&c), 0, 0);
    pagoda_cmds_free(&c);
    pagoda_writeq(&src.d, l.gate, 0);
    rfence = submit_render_chain(&src.d, &l);
    pfence = submit_paging_chain(&src.d, &l);
    pagoda_writeq(&src.d, l.gate, 1);
    g_usleep(1000 + g_test_rand_int_range(0, 60000) + seed * 997 % 3000);
    migrate(&src, &dst, file);
    machine_quit(&src);

    /* the chains were still running when the VM stopped */
    busy = pagoda_rd64(&dst.d, PAGODA_REG_ENGINE(RE) + PAGODA_ENG_FENCE_LO) < rfence ||
           pagoda_rd64(&dst.d, PAGODA_REG_ENGINE(PG) + PAGODA_ENG_FENCE_LO) < pfence;
    qtest_qmp_assert_success(dst.qts, "{ 'execute': 'cont' }");
    g_assert_true(pagoda_wait_fence(&dst.d, PG, pfence));
    g_assert_true(pagoda_wait_fence(&dst.d, RE, rfence));
    g_assert_cmpuint(pagoda_rd(&dst.d, PAGODA_REG_FAULT_COUNT), ==, 0);
    check_results(&dst, &l, initial);
    /* the device keeps working after it; the list's pages hold the last pattern */
    pagoda_cmds_init(&c);
    pagoda_cmd_transfer(&c, 0, VRAM(SCATTER), SYS(l.logs + 8), 8);
    pagoda_cmd_fill(&c, VRAM(P_DST), 0x600d, 4096);
    pagoda_cmd_transfer(&c, 0, VRAM(P_DST), SYS(l.logs), 8);
    run_at(&dst.d, PG, l.after, &c);
    pagoda_cmds_free(&c);
    g_assert_cmphex(pagoda_readq(&dst.d, l.logs), ==, 0x0000600d0000600dull);
    g_assert_cmphex(pagoda_readq(&dst.d, l.logs + 8), ==,
                    (uint64_t)pattern(PG, JOBS - 1) << 32 | pattern(PG, JOBS - 1));
    /* and resets: every register back to its power-on value */
    pagoda_wr(&dst.d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd(&dst.d, PAGODA_REG_STATUS), ==, 0);
    g_assert_cmpuint(pagoda_rd64(&dst.d, PAGODA_REG_ENGINE(RE) + PAGODA_ENG_FENCE_LO), ==, 0);
    g_assert_cmpuint(pagoda_rd(&dst.d, PAGODA_REG_ENGINE(PG) + PAGODA_ENG_RING_SIZE), ==, 0);
    machine_quit(&dst);
    return busy;
}

static void test_migrate_mid_entry(void)
{
    g_autofree char *file = g_strdup_printf("%s/pagoda-migration-%d", g_get_tmp_dir(),
                                            getpid());
    unsigned busy = 0;

    for (unsigned seed = 0; seed < SEEDS; seed++) {
        busy += run_case(seed, file);
    }
    unlink(file);
    g_test_message("chains in progress at %u of %u migration points", busy, SEEDS);
    g_assert_cmpuint(busy, >=, SEEDS / 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/pagoda/migration/mid-entry", test_migrate_mid_entry);
    return g_test_run();
}
