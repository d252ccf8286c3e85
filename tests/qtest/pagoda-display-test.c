/*
 * QTest for the Pagoda GPU display controller: registers and mode list,
 * flips latched at vertical blanks and their interrupt and time, refused
 * scanout programming, the pixels the console shows (through screendump)
 * and the cursor drawn over them.
 *
 * The pagoda node of qos-test holds close to the number of tests qos-test
 * accepts per node: each test here covers several behaviours.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pagoda.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"

#define XRGB        PAGODA_DISP_FORMAT_XRGB8888
#define RGB565      PAGODA_DISP_FORMAT_RGB565
#define ENABLE      PAGODA_DISP_CONTROL_ENABLE
#define VRAM(off)   PAGODA_PADDR(PAGODA_SEG_VRAM, (uint64_t)(off))

static QTestState *qts(QPagoda *d)
{
    return d->dev.bus->qts;
}

/* One vertical blank period in ns, from DISP_REFRESH (per 1000 s). */
static int64_t period(QPagoda *d)
{
    uint32_t refresh = pagoda_rd(d, PAGODA_REG_DISP_REFRESH);

    g_assert_cmpuint(refresh, !=, 0);
    return 1000 * 1000000000ll / refresh;
}

static void step(QPagoda *d, int64_t ns)
{
    qtest_clock_step(qts(d), ns);
}

static void stage(QPagoda *d, uint64_t surface, uint32_t width,
                  uint32_t height, uint32_t stride, uint32_t format,
                  uint32_t control)
{
    pagoda_wr64(d, PAGODA_REG_DISP_SURFACE_LO, surface);
    pagoda_wr(d, PAGODA_REG_DISP_WIDTH, width);
    pagoda_wr(d, PAGODA_REG_DISP_HEIGHT, height);
    pagoda_wr(d, PAGODA_REG_DISP_STRIDE, stride);
    pagoda_wr(d, PAGODA_REG_DISP_FORMAT, format);
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, control);
}

/* FLIP and run to the vblank that latches it (at most a period away). */
static void flip(QPagoda *d)
{
    pagoda_wr(d, PAGODA_REG_DISP_FLIP, 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS) &
                    PAGODA_DISP_STATUS_FLIP_PENDING, !=, 0);
    step(d, period(d));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS) &
                    PAGODA_DISP_STATUS_FLIP_PENDING, ==, 0);
}

static uint64_t frame(QPagoda *d)
{
    return pagoda_rd64(d, PAGODA_REG_DISP_FRAME_LO);
}

static bool intx(QPagoda *d)
{
    return qpci_config_readw(&d->dev, PCI_STATUS) & PCI_STATUS_INTERRUPT;
}

/*
 * (1) Identification: CAPS, MSI-X vectors, size limits, the mode list
 * (preferred first, then the standard sizes up to the maximum), refresh,
 * staged registers reading back, and a display that does not tick while
 * nothing asks for vblanks.
 */
static void test_display_regs(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    static const uint32_t want[][2] = {
        { 1000, 700 },      /* preferred, not a standard size */
        { 640, 480 }, { 800, 600 }, { 1024, 768 }, { 1280, 720 },
        { 1280, 800 }, { 1280, 1024 }, { 1366, 768 }, { 1600, 900 },
        { 1920, 1080 }, { 1920, 1200 },
    };
    uint8_t cap = qpci_find_capability(&d->dev, PCI_CAP_ID_MSIX, 0);
    uint32_t n;

    g_assert_cmpuint((qpci_config_readw(&d->dev, cap + PCI_MSIX_FLAGS) &
                      PCI_MSIX_FLAGS_QSIZE) + 1, ==, 4);
    pagoda_start(d, alloc);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_CAPS) & PAGODA_CAPS_DISPLAY, !=, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_MAX_WIDTH), ==, 1920);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_MAX_HEIGHT), ==, 1200);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_PREF_WIDTH), ==, 1000);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_PREF_HEIGHT), ==, 700);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_REFRESH), ==, 60000);
    n = pagoda_rd(d, PAGODA_REG_DISP_NUM_MODES);
    g_assert_cmpuint(n, ==, ARRAY_SIZE(want));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m = pagoda_rd(d, PAGODA_REG_DISP_MODE(i));

        g_assert_cmpuint(PAGODA_DISP_MODE_WIDTH(m), ==, want[i][0]);
        g_assert_cmpuint(PAGODA_DISP_MODE_HEIGHT(m), ==, want[i][1]);
    }
    for (uint32_t i = n; i < PAGODA_DISP_MAX_MODES; i++) {
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_MODE(i)), ==, 0);
    }
    /* read-only */
    pagoda_wr(d, PAGODA_REG_DISP_MAX_WIDTH, 64);
    pagoda_wr(d, PAGODA_REG_DISP_MODE(0), 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_MAX_WIDTH), ==, 1920);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_MODE(0)), ==, 1000 | 700 << 16);

    /* power-on state */
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==, 0);
    g_assert_cmpuint(frame(d), ==, 0);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, 0);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_SURFACE_LO), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CONTROL), ==, 0);

    /* staged registers read back whatever was written; CONTROL its two bits */
    stage(d, 0xfedcba9876543210ull, 0xffffffff, 12345, 7, 0xdeadbeef,
          0xffffffff);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_SURFACE_LO), ==,
                    0xfedcba9876543210ull);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_WIDTH), ==, 0xffffffff);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_HEIGHT), ==, 12345);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_STRIDE), ==, 7);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_FORMAT), ==, 0xdeadbeef);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CONTROL), ==,
                    ENABLE | PAGODA_DISP_CONTROL_CURSOR);
    stage(d, VRAM(0x1000), 640, 480, 2560, XRGB, ENABLE);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_SURFACE_LO), ==, VRAM(0x1000));
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_WIDTH), ==, 640);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_STRIDE), ==, 2560);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_FORMAT), ==, XRGB);

    /* without FLIP nothing is latched and no vblank comes */
    step(d, 10 * period(d));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==, 0);
    g_assert_cmpuint(frame(d), ==, 0);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, 0);

    /* INT_ENABLE takes the vblank bit */
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_VBLANK);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==, PAGODA_INT_VBLANK);
}

/*
 * (2) A flip latches at the next vblank only; vblanks advance FRAME and
 * raise INT_VBLANK on MSI-X vector 3 or INTx; the timer runs while the
 * latched state is enabled or a flip is pending and stops otherwise; an
 * adapter reset stops everything.
 */
static void test_display_flip(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint64_t a = VRAM(0x10000), b = VRAM(0x20000);
    int64_t p;
    uint64_t f;

    pagoda_start(d, alloc);
    p = period(d);
    g_assert_cmpint(p, ==, 16666666);
    qpci_msix_enable(&d->dev);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL | PAGODA_INT_VBLANK);

    /* no vblank yet: SINCE_VBLANK says none */
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==,
                    PAGODA_DISP_NO_VBLANK);

    /* from idle: the first vblank comes one period after FLIP */
    stage(d, a, 64, 48, 256, XRGB, ENABLE);
    pagoda_wr(d, PAGODA_REG_DISP_FLIP, 1);
    pagoda_wr(d, PAGODA_REG_DISP_FLIP, 1);   /* still one flip */
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_FLIP_PENDING);
    step(d, p - 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_FLIP_PENDING);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, 0);
    g_assert_cmpuint(frame(d), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_VBLANK));
    step(d, 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, a);
    g_assert_cmpuint(frame(d), ==, 1);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_VBLANK);
    g_assert_true(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_VBLANK));
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_FAULT));
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_ENGINE(0)));
    g_assert_false(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_ENGINE(1)));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_VBLANK);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);

    /* SINCE_VBLANK: the virtual time since that vblank, exactly */
    step(d, 1234567);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==, 1234567);

    /* enabled: a vblank every period, on a fixed grid */
    step(d, p - 1234567);
    g_assert_cmpuint(frame(d), ==, 2);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==, 0);
    step(d, 3 * p);
    g_assert_cmpuint(frame(d), ==, 5);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_VBLANK);

    /* staged changes alone do nothing; a flip takes them at the next vblank */
    stage(d, b, 32, 16, 128, RGB565, ENABLE);
    step(d, p);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, a);
    g_assert_cmpuint(frame(d), ==, 6);
    step(d, p / 2);
    pagoda_wr(d, PAGODA_REG_DISP_FLIP, 1);
    step(d, p / 2 - 1);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, a);
    g_assert_cmpuint(frame(d), ==, 6);
    step(d, 1);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, b);
    g_assert_cmpuint(frame(d), ==, 7);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);

    /* disabled and nothing pending: the vblank that latches it is the last */
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, 0);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==, 0);
    f = frame(d);
    g_assert_cmpuint(f, ==, 8);
    step(d, 10 * p);
    g_assert_cmpuint(frame(d), ==, f);
    /* idle: the last vblank stays the last, and the count saturates */
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==, 10 * p);
    step(d, 300 * p);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==,
                    PAGODA_DISP_NO_VBLANK);

    /* INTx: asserted while INT_VBLANK is pending and enabled */
    qpci_msix_disable(&d->dev);
    pagoda_wr(d, PAGODA_REG_INT_STATUS, 0xffffffff);
    g_assert_false(intx(d));
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL);
    flip(d);        /* a flip to a disabled state still has its vblank */
    g_assert_cmpuint(frame(d), ==, f + 1);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, PAGODA_INT_VBLANK);
    g_assert_false(intx(d));
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_VBLANK);
    g_assert_true(intx(d));
    pagoda_wr(d, PAGODA_REG_INT_STATUS, PAGODA_INT_VBLANK);
    g_assert_false(intx(d));
    step(d, 10 * p);
    g_assert_cmpuint(frame(d), ==, f + 1);
    g_assert_false(intx(d));

    /* adapter reset: disabled, nothing staged or pending, FRAME 0, no timer */
    stage(d, a, 64, 48, 256, XRGB, ENABLE);
    flip(d);
    pagoda_wr(d, PAGODA_REG_DISP_FLIP, 1);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==, 0);
    g_assert_cmpuint(frame(d), ==, 0);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==, 0);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_SURFACE_LO), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_WIDTH), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CONTROL), ==, 0);
    step(d, 10 * p);
    g_assert_cmpuint(frame(d), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_SINCE_VBLANK), ==,
                    PAGODA_DISP_NO_VBLANK);
}

typedef struct BadScanout {
    const char *what;
    uint64_t surface;
    uint32_t width, height, stride, format;
    uint32_t code;          /* 0: valid */
} BadScanout;

/*
 * (3) Each invalid field of an enabled state: latched anyway, black,
 * STATUS.FAULT and one fault record from the display; a disabled state is
 * not checked; a valid flip clears FAULT.
 */
static void test_display_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint64_t vram = 256 * MiB, hidden = 256 * MiB, aperture = 256 * MiB;
    uint64_t sys = pagoda_alloc(d, 4096, 4096);
    const BadScanout cases[] = {
        { "valid", VRAM(0), 64, 48, 256, XRGB, 0 },
        { "width 0", VRAM(0), 0, 48, 256, XRGB, PAGODA_FAULT_BAD_DISPLAY },
        /* the default max-xres and max-yres: 4096 */
        { "width > max", VRAM(0), 4097, 48, 4097 * 4, XRGB,
          PAGODA_FAULT_BAD_DISPLAY },
        { "huge width", VRAM(0), 0xffffffff, 1, 0xfffffffc, XRGB,
          PAGODA_FAULT_BAD_DISPLAY },
        { "height 0", VRAM(0), 64, 0, 256, XRGB, PAGODA_FAULT_BAD_DISPLAY },
        { "height > max", VRAM(0), 64, 4097, 256, XRGB,
          PAGODA_FAULT_BAD_DISPLAY },
        { "stride % 4", VRAM(0), 64, 48, 258, XRGB, PAGODA_FAULT_BAD_DISPLAY },
        { "stride < line", VRAM(0), 64, 48, 252, XRGB,
          PAGODA_FAULT_BAD_DISPLAY },
        { "565 stride < line", VRAM(0), 64, 48, 124, RGB565,
          PAGODA_FAULT_BAD_DISPLAY },
        { "565 stride % 4", VRAM(0), 63, 48, 126, RGB565,
          PAGODA_FAULT_BAD_DISPLAY },
        { "format", VRAM(0), 64, 48, 256, 0x34324258 /* XB24 */,
          PAGODA_FAULT_BAD_DISPLAY },
        { "ARGB8888", VRAM(0), 64, 48, 256, PAGODA_DISP_FORMAT_ARGB8888, 0 },
        { "format 0", VRAM(0), 64, 48, 256, 0, PAGODA_FAULT_BAD_DISPLAY },
        { "system memory", PAGODA_PADDR(PAGODA_SEG_SYSTEM, sys), 16, 4, 64,
          XRGB, PAGODA_FAULT_OUT_OF_SEGMENT },
        { "reserved bits", VRAM(0) | PAGODA_BIT64(50), 64, 48, 256, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "segment 5", PAGODA_PADDR(5, 0), 64, 48, 256, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "VRAM end", VRAM(vram - 512), 64, 2, 256, XRGB, 0 },
        { "past VRAM end", VRAM(vram - 511), 64, 2, 256, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "beyond VRAM", VRAM(vram), 64, 2, 256, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "huge offset", VRAM(PAGODA_MASK64(47, 0)), 64, 2, 256, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "huge stride", VRAM(0), 64, 1600, 0xfffffffc, XRGB,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "hidden end", PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, hidden - 256),
          64, 1, 256, XRGB, 0 },
        { "past hidden end", PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, hidden - 255),
          64, 1, 256, XRGB, PAGODA_FAULT_OUT_OF_SEGMENT },
        /* the last line needs width * bpp bytes, not a whole stride */
        { "aperture end", PAGODA_PADDR(PAGODA_SEG_APERTURE, aperture - 192),
          32, 2, 128, RGB565, 0 },
        { "past aperture end", PAGODA_PADDR(PAGODA_SEG_APERTURE, aperture - 191),
          32, 2, 128, RGB565, PAGODA_FAULT_OUT_OF_SEGMENT },
    };
    PagodaFaultInfo f;

    pagoda_start(d, alloc);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const BadScanout *c = &cases[i];

        g_test_message("%s", c->what);
        stage(d, c->surface, c->width, c->height, c->stride, c->format, ENABLE);
        flip(d);
        g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_ACTIVE_SURFACE_LO), ==,
                        c->surface);
        if (!c->code) {
            g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                            PAGODA_DISP_STATUS_ENABLED);
            g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
            continue;
        }
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                        PAGODA_DISP_STATUS_FAULT);
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 1);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT,
                        !=, 0);
        g_assert_true(pagoda_pop_fault(d, &f));
        g_assert_cmpuint(f.code, ==, c->code);
        g_assert_cmphex(f.engine, ==, PAGODA_FAULT_SOURCE_DISPLAY);
        g_assert_cmpuint(f.context, ==, 0);
        g_assert_cmphex(f.va, ==, c->surface);
        g_assert_cmphex(f.level, ==, 0xff);
        g_assert_cmpuint(f.access, ==, PAGODA_ACCESS_READ);
        g_assert_cmphex(f.flags, ==, 0);
        g_assert_cmphex(f.fence, ==, 0);
        /* one record per latch: later vblanks of the same state add none */
        step(d, 3 * period(d));
        g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                        PAGODA_DISP_STATUS_FAULT);
        /* no context is halted */
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_CTX_STATUS), ==, 0);
    }

    /* a disabled state is not checked */
    stage(d, PAGODA_PADDR(7, 0), 0, 0, 3, 0, 0);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);

    /* refused, then a valid flip clears FAULT */
    stage(d, VRAM(0), 64, 48, 250, XRGB, ENABLE);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_FAULT);
    g_assert_true(pagoda_pop_fault(d, &f));
    g_assert_cmpuint(f.code, ==, PAGODA_FAULT_BAD_DISPLAY);
    pagoda_wr(d, PAGODA_REG_DISP_STRIDE, 256);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_COUNT), ==, 0);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_FAULT_LOST), ==, 0);
}

/* ---- Pixels ----------------------------------------------------------------- */

typedef struct Image {
    uint32_t width, height;
    uint8_t *rgb;           /* width * height * 3 */
} Image;

/*
 * screendump of the pagoda console (id pgd0) in @format, to a file; the
 * caller removes it. QEMU's PPM writer pads each line to 4 bytes: the
 * images here are multiples of 4 pixels wide, so the PPM is exact.
 */
static char *screendump(QPagoda *d, const char *format)
{
    g_autofree char *path = NULL;
    QDict *resp;
    int fd;

    fd = g_file_open_tmp("pagoda-display-XXXXXX", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    resp = qtest_qmp(qts(d), "{'execute': 'screendump', 'arguments': "
                     "{'filename': %s, 'device': 'pgd0', 'format': %s}}",
                     path, format);
    if (qdict_haskey(resp, "error")) {
        QDict *err = qdict_get_qdict(resp, "error");

        g_error("screendump: %s", qdict_get_str(err, "desc"));
    }
    qobject_unref(resp);
    return g_steal_pointer(&path);
}

/* QEMU has screendump only when configured with pixman (--enable-pixman). */
static bool have_screendump(QPagoda *d)
{
    QDict *resp = qtest_qmp(qts(d), "{'execute': 'query-commands'}");
    QList *cmds = qdict_get_qlist(resp, "return");
    QListEntry *e;
    bool found = false;

    QLIST_FOREACH_ENTRY(cmds, e) {
        QDict *cmd = qobject_to(QDict, qlist_entry_obj(e));

        found |= !strcmp(qdict_get_str(cmd, "name"), "screendump");
    }
    qobject_unref(resp);
    return found;
}

static Image grab(QPagoda *d)
{
    g_autofree char *path = screendump(d, "ppm");
    g_autofree char *buf = NULL;
    gsize len;
    Image img;
    int n = 0;

    g_assert_true(g_file_get_contents(path, &buf, &len, NULL));
    unlink(path);
    g_assert_cmpint(sscanf(buf, "P6\n%u %u\n255\n%n", &img.width, &img.height,
                           &n), ==, 2);
    g_assert_cmpint(n, >, 0);
    g_assert_cmpuint(len - n, ==, (gsize)img.width * img.height * 3);
    img.rgb = g_memdup2(buf + n, len - n);
    return img;
}

static uint32_t pixel(const Image *img, uint32_t x, uint32_t y)
{
    const uint8_t *p = img->rgb + ((size_t)y * img->width + x) * 3;

    return p[0] << 16 | p[1] << 8 | p[2];
}

static void assert_black(Image img, uint32_t width, uint32_t height)
{
    g_assert_cmpuint(img.width, ==, width);
    g_assert_cmpuint(img.height, ==, height);
    for (size_t i = 0; i < (size_t)width * height * 3; i++) {
        g_assert_cmpuint(img.rgb[i], ==, 0);
    }
    g_free(img.rgb);
}

static uint32_t xrgb_pattern(uint32_t x, uint32_t y, uint32_t salt)
{
    /* the x byte is garbage the display ignores */
    return (x * 0x9e3779b9u) ^ (y * 0x85ebca6bu) ^ salt;
}

static uint32_t expand565(uint16_t v)
{
    uint32_t r = v >> 11, g = (v >> 5) & 0x3f, b = v & 0x1f;

    return (r << 3 | r >> 2) << 16 | (g << 2 | g >> 4) << 8 | (b << 3 | b >> 2);
}

/*
 * (4) What the console shows: XRGB8888 and RGB565 surfaces in VRAM with
 * padded strides, updated content, an aperture surface through the GART
 * (an invalid entry shows black), black while disabled or refused, PNG.
 */
static void test_display_pixels(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint32_t xw = 40, xh = 24, xstride = 192;     /* 160 + padding */
    const uint32_t rw = 48, rh = 30, rstride = 104;     /* 96 + padding */
    const uint32_t aw = 64, ah = 40, astride = 256;
    const uint64_t xoff = 0x100000, roff = 0x200000, aoff = 0x800;
    g_autofree uint8_t *buf = g_malloc0(64 * KiB);
    uint64_t gart, page[3];
    g_autofree char *png = NULL;
    g_autofree char *png_data = NULL;
    gsize png_len;
    Image img;

    pagoda_start(d, alloc);
    if (!have_screendump(d)) {
        g_test_skip("QEMU built without pixman: no screendump");
        return;
    }

    /* power-on: black at the preferred size */
    assert_black(grab(d), 320, 200);

    /* XRGB8888 */
    for (uint32_t y = 0; y < xh; y++) {
        for (uint32_t x = 0; x < xw; x++) {
            stl_le_p(buf + y * xstride + x * 4, xrgb_pattern(x, y, 0));
        }
    }
    qpci_memwrite(&d->dev, d->vram, xoff, buf, xh * xstride);
    stage(d, VRAM(xoff), xw, xh, xstride, XRGB, ENABLE);
    flip(d);
    img = grab(d);
    g_assert_cmpuint(img.width, ==, xw);
    g_assert_cmpuint(img.height, ==, xh);
    for (uint32_t y = 0; y < xh; y++) {
        for (uint32_t x = 0; x < xw; x++) {
            g_assert_cmphex(pixel(&img, x, y), ==,
                            xrgb_pattern(x, y, 0) & 0xffffff);
        }
    }
    g_free(img.rgb);

    /* the scanout is live: new content shows without a flip */
    for (uint32_t x = 0; x < xw; x++) {
        stl_le_p(buf + 5 * xstride + x * 4, xrgb_pattern(x, 5, 0x5a5a5a5a));
    }
    qpci_memwrite(&d->dev, d->vram, xoff + 5 * xstride, buf + 5 * xstride,
                  xstride);
    img = grab(d);
    for (uint32_t y = 0; y < xh; y++) {
        for (uint32_t x = 0; x < xw; x++) {
            g_assert_cmphex(pixel(&img, x, y), ==,
                            xrgb_pattern(x, y, y == 5 ? 0x5a5a5a5a : 0) &
                            0xffffff);
        }
    }
    g_free(img.rgb);

    /* RGB565, every extreme value included */
    memset(buf, 0, 64 * KiB);
    for (uint32_t y = 0; y < rh; y++) {
        for (uint32_t x = 0; x < rw; x++) {
            uint16_t v = y == 0 ? (x & 1 ? 0xffff : 0) :
                         y == 1 ? (x & 1 ? 0xf800 : 0x07e0) :
                         y == 2 ? 0x001f : (uint16_t)(xrgb_pattern(x, y, 7) >> 8);

            stw_le_p(buf + y * rstride + x * 2, v);
        }
    }
    qpci_memwrite(&d->dev, d->vram, roff, buf, rh * rstride);
    stage(d, VRAM(roff), rw, rh, rstride, RGB565, ENABLE);
    flip(d);
    img = grab(d);
    g_assert_cmpuint(img.width, ==, rw);
    g_assert_cmpuint(img.height, ==, rh);
    for (uint32_t y = 0; y < rh; y++) {
        for (uint32_t x = 0; x < rw; x++) {
            g_assert_cmphex(pixel(&img, x, y), ==,
                            expand565(lduw_le_p(buf + y * rstride + x * 2)));
        }
    }
    g_assert_cmphex(pixel(&img, 1, 0), ==, 0xffffff);
    g_assert_cmphex(pixel(&img, 1, 1), ==, 0xff0000);
    g_assert_cmphex(pixel(&img, 0, 1), ==, 0x00ff00);
    g_assert_cmphex(pixel(&img, 0, 2), ==, 0x0000ff);
    g_free(img.rgb);

    /* PNG works too */
    png = screendump(d, "png");
    g_assert_true(g_file_get_contents(png, &png_data, &png_len, NULL));
    unlink(png);
    g_assert_cmpuint(png_len, >, 8);
    g_assert_cmpmem(png_data, 8, "\x89PNG\r\n\x1a\n", 8);

    /*
     * Aperture: pages 0 and 1 map two system pages in reverse order,
     * page 2 has no valid entry (reads zero). The surface starts half
     * way into page 0.
     */
    gart = pagoda_alloc(d, 4096, 4096);
    for (int i = 0; i < 3; i++) {
        page[i] = pagoda_alloc(d, 4096, 4096);
    }
    pagoda_writeq(d, gart, page[1] | PAGODA_GART_VALID);
    pagoda_writeq(d, gart + 8, page[0] | PAGODA_GART_VALID);
    pagoda_writeq(d, gart + 16, page[2]);      /* not VALID */
    pagoda_wr64(d, PAGODA_REG_GART_BASE_LO, PAGODA_PADDR(PAGODA_SEG_SYSTEM, gart));
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, 4);
    for (uint32_t y = 0; y < ah; y++) {
        for (uint32_t x = 0; x < aw; x++) {
            uint64_t off = aoff + y * astride + x * 4;
            uint32_t v = xrgb_pattern(x, y, 0x1234);

            if (off < 4096) {
                qtest_writel(qts(d), page[1] + off, v);
            } else if (off < 8192) {
                qtest_writel(qts(d), page[0] + off - 4096, v);
            } else {
                qtest_writel(qts(d), page[2] + off - 8192, v);
            }
        }
    }
    stage(d, PAGODA_PADDR(PAGODA_SEG_APERTURE, aoff), aw, ah, astride, XRGB,
          ENABLE);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);
    img = grab(d);
    g_assert_cmpuint(img.width, ==, aw);
    g_assert_cmpuint(img.height, ==, ah);
    for (uint32_t y = 0; y < ah; y++) {
        for (uint32_t x = 0; x < aw; x++) {
            bool mapped = aoff + y * astride < 8192;

            g_assert_cmphex(pixel(&img, x, y), ==,
                            mapped ? xrgb_pattern(x, y, 0x1234) & 0xffffff : 0);
        }
    }
    g_free(img.rgb);

    /* a GART table the device cannot read: black lines, no crash */
    pagoda_wr64(d, PAGODA_REG_GART_BASE_LO, PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN,
                                                         512 * MiB));
    assert_black(grab(d), aw, ah);
    /* and with no GART at all: the dummy page */
    pagoda_wr(d, PAGODA_REG_GART_ENTRIES, 0);
    assert_black(grab(d), aw, ah);

    /* refused: black at the last size shown */
    stage(d, VRAM(0), 8, 8, 4, XRGB, ENABLE);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_FAULT);
    assert_black(grab(d), aw, ah);

    /* back to the RGB565 surface, then disabled: black at its size */
    stage(d, VRAM(roff), rw, rh, rstride, RGB565, ENABLE);
    flip(d);
    img = grab(d);
    g_assert_cmphex(pixel(&img, 1, 0), ==, 0xffffff);
    g_free(img.rgb);
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, 0);
    flip(d);
    assert_black(grab(d), rw, rh);

    /* adapter reset: black at the preferred size */
    stage(d, VRAM(xoff), xw, xh, xstride, XRGB, ENABLE);
    flip(d);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    assert_black(grab(d), 320, 200);
}

/* Premultiplied ARGB @src over opaque @dst, as the display blends. */
static uint32_t blend(uint32_t src, uint32_t dst)
{
    uint32_t a = src >> 24, out = 0;

    for (unsigned shift = 0; shift < 24; shift += 8) {
        uint32_t c = ((src >> shift) & 0xff) +
                     (((dst >> shift) & 0xff) * (255 - a) + 127) / 255;

        out |= MIN(c, 255) << shift;
    }
    return out;
}

static uint32_t cursor_pattern(uint32_t x, uint32_t y)
{
    /* opaque, clear and half-covering pixels, premultiplied */
    uint32_t a = (x + y) % 3 == 0 ? 0xff : (x + y) % 3 == 1 ? 0 : 0x80;
    uint32_t rgb = xrgb_pattern(x, y, 0xc0c0) & 0xffffff;
    uint32_t r = ((rgb >> 16) & 0xff) * a / 255, g = ((rgb >> 8) & 0xff) * a / 255;
    uint32_t b = (rgb & 0xff) * a / 255;

    return a << 24 | r << 16 | g << 8 | b;
}

static void stage_cursor(QPagoda *d, uint64_t surface, uint32_t width,
                         uint32_t height, uint32_t stride, int x, int y)
{
    pagoda_wr64(d, PAGODA_REG_DISP_CURSOR_LO, surface);
    pagoda_wr(d, PAGODA_REG_DISP_CURSOR_SIZE, width | height << 16);
    pagoda_wr(d, PAGODA_REG_DISP_CURSOR_STRIDE, stride);
    pagoda_wr(d, PAGODA_REG_DISP_CURSOR_POS, PAGODA_DISP_XY(x, y));
}

/* The screen with the cursor image at (@cx, @cy): surface pixels blended. */
static void assert_cursor_at(QPagoda *d, uint32_t w, uint32_t h, uint32_t cw,
                             uint32_t ch, int cx, int cy)
{
    Image img = grab(d);

    g_assert_cmpuint(img.width, ==, w);
    g_assert_cmpuint(img.height, ==, h);
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            uint32_t bg = xrgb_pattern(x, y, 0) & 0xffffff;
            int ix = (int)x - cx, iy = (int)y - cy;
            bool in = ix >= 0 && ix < (int)cw && iy >= 0 && iy < (int)ch;

            g_assert_cmphex(pixel(&img, x, y), ==,
                            in ? blend(cursor_pattern(ix, iy), bg) : bg);
        }
    }
    g_free(img.rgb);
}

/*
 * (5) The cursor: its registers (staged, read back, latched by a flip),
 * drawn over the surface with premultiplied alpha where it is put, clipped
 * at every edge, off with CONTROL.CURSOR clear, and each bad field
 * refused like a bad surface (black, one fault).
 */
static void test_display_cursor(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    const uint32_t w = 64, h = 40, stride = 256, cw = 20, ch = 12, cstride = 96;
    const uint64_t soff = 0x100000, coff = 0x200000;
    const struct {
        const char *what;
        uint64_t surface;
        uint32_t width, height, stride;
        uint32_t code;
    } bad[] = {
        { "zero width", VRAM(coff), 0, ch, cstride, PAGODA_FAULT_BAD_DISPLAY },
        { "too tall", VRAM(coff), cw, PAGODA_DISP_CURSOR_MAX_SIZE + 1,
          cstride, PAGODA_FAULT_BAD_DISPLAY },
        { "short stride", VRAM(coff), cw, ch, cw * 4 - 4,
          PAGODA_FAULT_BAD_DISPLAY },
        { "odd stride", VRAM(coff), cw, ch, cstride + 2,
          PAGODA_FAULT_BAD_DISPLAY },
        { "system memory", PAGODA_PADDR(PAGODA_SEG_SYSTEM, 0), cw, ch, cstride,
          PAGODA_FAULT_OUT_OF_SEGMENT },
        { "4 bytes past VRAM", VRAM(256 * MiB + 4 - cstride * (ch - 1) - cw * 4),
          cw, ch, cstride, PAGODA_FAULT_OUT_OF_SEGMENT },
    };
    g_autofree uint8_t *buf = g_malloc0(h * stride);
    PagodaFaultInfo f;

    pagoda_start(d, alloc);
    if (!have_screendump(d)) {
        g_test_skip("QEMU built without pixman: no screendump");
        return;
    }
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CURSOR_MAX), ==,
                    PAGODA_DISP_CURSOR_MAX_SIZE |
                    PAGODA_DISP_CURSOR_MAX_SIZE << 16);

    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            stl_le_p(buf + y * stride + x * 4, xrgb_pattern(x, y, 0));
        }
    }
    qpci_memwrite(&d->dev, d->vram, soff, buf, h * stride);
    memset(buf, 0, h * stride);
    for (uint32_t y = 0; y < ch; y++) {
        for (uint32_t x = 0; x < cw; x++) {
            stl_le_p(buf + y * cstride + x * 4, cursor_pattern(x, y));
        }
    }
    qpci_memwrite(&d->dev, d->vram, coff, buf, ch * cstride);

    /* staged registers read back; nothing shows before the flip */
    stage(d, VRAM(soff), w, h, stride, XRGB, ENABLE);
    flip(d);
    stage_cursor(d, VRAM(coff), cw, ch, cstride, 10, 7);
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, ENABLE | PAGODA_DISP_CONTROL_CURSOR);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_CURSOR_LO), ==, VRAM(coff));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CURSOR_SIZE), ==,
                    cw | ch << 16);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_DISP_CURSOR_STRIDE), ==, cstride);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CURSOR_POS), ==,
                    PAGODA_DISP_XY(10, 7));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CONTROL), ==,
                    ENABLE | PAGODA_DISP_CONTROL_CURSOR);
    assert_cursor_at(d, w, h, 0, 0, 0, 0);

    /* latched: blended where it was put */
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);
    assert_cursor_at(d, w, h, cw, ch, 10, 7);

    /* moved, clipped at each edge and corner, and wholly off the screen */
    for (int i = 0; i < 5; i++) {
        static const int pos[][2] = {
            { -7, -5 }, { 64 - 9, 40 - 4 }, { -19, 20 }, { 30, 39 }, { -300, 500 },
        };

        pagoda_wr(d, PAGODA_REG_DISP_CURSOR_POS,
                  PAGODA_DISP_XY(pos[i][0], pos[i][1]));
        flip(d);
        assert_cursor_at(d, w, h, cw, ch, pos[i][0], pos[i][1]);
    }

    /* CONTROL.CURSOR clear: no cursor, and its fields are not checked */
    pagoda_wr(d, PAGODA_REG_DISP_CURSOR_SIZE, 0);
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, ENABLE);
    flip(d);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                    PAGODA_DISP_STATUS_ENABLED);
    assert_cursor_at(d, w, h, 0, 0, 0, 0);

    /* each bad field: black, one fault, the display goes on */
    pagoda_wr(d, PAGODA_REG_DISP_CONTROL, ENABLE | PAGODA_DISP_CONTROL_CURSOR);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        stage_cursor(d, bad[i].surface, bad[i].width, bad[i].height,
                     bad[i].stride, 0, 0);
        flip(d);
        g_test_message("bad cursor: %s", bad[i].what);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_STATUS), ==,
                        PAGODA_DISP_STATUS_FAULT);
        g_assert_true(pagoda_pop_fault(d, &f));
        g_assert_cmpuint(f.code, ==, bad[i].code);
        g_assert_cmpuint(f.engine, ==, PAGODA_FAULT_SOURCE_DISPLAY);
        g_assert_false(pagoda_pop_fault(d, &f));
        assert_black(grab(d), w, h);
    }

    /* a good cursor again; an adapter reset clears it */
    stage_cursor(d, VRAM(coff), cw, ch, cstride, 3, 2);
    flip(d);
    assert_cursor_at(d, w, h, cw, ch, 3, 2);
    pagoda_wr(d, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
    g_assert_cmphex(pagoda_rd64(d, PAGODA_REG_DISP_CURSOR_LO), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_DISP_CURSOR_POS), ==, 0);
}

static void register_pagoda_display_tests(void)
{
    QOSGraphTestOptions modes = {
        .edge.extra_device_opts = "xres=1000,yres=700,max-xres=1920,"
                                  "max-yres=1200",
    };
    QOSGraphTestOptions console = {
        .edge.extra_device_opts = "id=pgd0,xres=320,yres=200",
    };

    qos_add_test("display-regs", "pagoda", test_display_regs, &modes);
    qos_add_test("display-flip", "pagoda", test_display_flip, NULL);
    qos_add_test("display-bad", "pagoda", test_display_bad, NULL);
    qos_add_test("display-pixels", "pagoda", test_display_pixels, &console);
    qos_add_test("display-cursor", "pagoda", test_display_cursor, &console);
}

libqos_init(register_pagoda_display_tests);
