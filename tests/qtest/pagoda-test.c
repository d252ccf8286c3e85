/*
 * QTest for the Pagoda GPU: PCI identity, BARs, registers, MSI-X and
 * device properties.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pagoda.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"

static void test_ids(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;

    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==,
                    PAGODA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_DEVICE_ID), ==,
                    PAGODA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(&d->dev, PCI_REVISION_ID), ==,
                    PAGODA_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_CLASS_DEVICE), ==, 0x0380);
    pagoda_start(d, alloc);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_REVISION), ==, PAGODA_REVISION);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_NUM_SEGMENTS), ==,
                     PAGODA_NUM_SEGMENTS);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_NUM_ENGINES), ==,
                     PAGODA_NUM_ENGINES);
    g_assert_cmpuint(pagoda_rd(d, PAGODA_REG_CAPS) & PAGODA_CAPS_GPUMMU, !=, 0);
}

static void test_bar_sizes(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;

    pagoda_start(d, alloc);
    g_assert_cmpuint(d->vram_bar_size, ==, 256 * MiB);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_VRAM_SIZE_LO), ==, 256 * MiB);
    g_assert_cmpuint(d->host_aperture_bar_size, ==, 32 * MiB);
}

static void test_vram_property(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;

    pagoda_start(d, alloc);
    g_assert_cmpuint(d->vram_bar_size, ==, 64 * MiB);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_VRAM_SIZE_LO), ==, 64 * MiB);
    g_assert_cmpuint(pagoda_rd64(d, PAGODA_REG_SEG(PAGODA_SEG_VRAM) +
                                    PAGODA_SEG_SIZE_LO), ==, 64 * MiB);
}

static void test_scratch(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    static const uint32_t values[] = { 0, 0xffffffff, 0x12345678, 0xa5a5a5a5 };

    pagoda_start(d, alloc);
    for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
        pagoda_wr(d, PAGODA_REG_SCRATCH, values[i]);
        g_assert_cmphex(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, values[i]);
    }
    /* read-only registers ignore writes */
    pagoda_wr(d, PAGODA_REG_ID, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
}

static void test_vram_bar(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;

    pagoda_start(d, alloc);
    qpci_io_writeq(&d->dev, d->vram, 0, 0x0123456789abcdefull);
    qpci_io_writel(&d->dev, d->vram, 256 * MiB - 4, 0xcafef00d);
    g_assert_cmphex(qpci_io_readq(&d->dev, d->vram, 0), ==, 0x0123456789abcdefull);
    g_assert_cmphex(qpci_io_readl(&d->dev, d->vram, 256 * MiB - 4), ==, 0xcafef00d);
}

static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint8_t cap = qpci_find_capability(&d->dev, PCI_CAP_ID_MSIX, 0);
    uint16_t flags;

    g_assert_cmpuint(cap, !=, 0);
    flags = qpci_config_readw(&d->dev, cap + PCI_MSIX_FLAGS);
    g_assert_cmpuint((flags & PCI_MSIX_FLAGS_QSIZE) + 1, ==, PAGODA_MSIX_VECTORS);
    g_assert_cmpuint(qpci_config_readl(&d->dev, cap + PCI_MSIX_TABLE) &
                     PCI_MSIX_FLAGS_BIRMASK, ==, PAGODA_BAR_MSIX);
}

/* A fault interrupt reaches its MSI-X vector and leaves the others alone. */
static void test_msix_fault_vector(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    PagodaCmds c;

    pagoda_start(d, alloc);
    qpci_msix_enable(&d->dev);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL);
    pagoda_cmds_init(&c);
    pagoda_cmd_raw(&c, (uint32_t[]){ PAGODA_CMD_HEADER(0x7f, 0, 1) }, 1);
    pagoda_run(d, PAGODA_ENGINE_RENDER, &c, 0, 0);
    pagoda_cmds_free(&c);
    g_assert_true(qpci_msix_pending(&d->dev, PAGODA_MSIX_VECTOR_FAULT));
    g_assert_false(qpci_msix_pending(&d->dev,
                                     PAGODA_MSIX_VECTOR_ENGINE(PAGODA_ENGINE_RENDER)));
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_STATUS) & PAGODA_INT_FAULT, !=, 0);
}

static void pm_set_state(QPagoda *d, uint8_t cap, uint16_t state)
{
    uint16_t csr = qpci_config_readw(&d->dev, cap + PCI_PM_CTRL);

    qpci_config_writew(&d->dev, cap + PCI_PM_CTRL,
                       (csr & ~PCI_PM_CTRL_STATE_MASK) | state);
}

/* The PM capability offers D3hot and a reset on the way back to D0. */
static void test_pm_capability(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint8_t cap = qpci_find_capability(&d->dev, PCI_CAP_ID_PM, 0);

    g_assert_cmpuint(cap, !=, 0);
    g_assert_cmphex(qpci_config_readw(&d->dev, cap + PCI_PM_PMC) &
                    (PCI_PM_CAP_D1 | PCI_PM_CAP_D2), ==, 0);
    g_assert_cmphex(qpci_config_readw(&d->dev, cap + PCI_PM_CTRL) &
                    (PCI_PM_CTRL_NO_SOFT_RESET | PCI_PM_CTRL_STATE_MASK), ==, 0);
    pm_set_state(d, cap, 3);
    g_assert_cmphex(qpci_config_readw(&d->dev, cap + PCI_PM_CTRL) &
                    PCI_PM_CTRL_STATE_MASK, ==, 3);
    /* D1 is not offered: the state stays D3hot */
    pm_set_state(d, cap, 1);
    g_assert_cmphex(qpci_config_readw(&d->dev, cap + PCI_PM_CTRL) &
                    PCI_PM_CTRL_STATE_MASK, ==, 3);
}

/*
 * D3hot -> D0 is a function reset: registers and configuration space are
 * back at their power-on values (what Linux's "pm" reset method relies on).
 */
static void test_pm_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QPagoda *d = obj;
    uint8_t cap = qpci_find_capability(&d->dev, PCI_CAP_ID_PM, 0);
    uint32_t bar0;

    pagoda_start(d, alloc);
    pagoda_wr(d, PAGODA_REG_SCRATCH, 0x5a5a1234);
    pagoda_wr(d, PAGODA_REG_INT_ENABLE, PAGODA_INT_ALL);
    bar0 = qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_0);
    g_assert_cmphex(bar0, !=, 0);

    /* D0 -> D0 changes nothing */
    pm_set_state(d, cap, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, 0x5a5a1234);

    pm_set_state(d, cap, 3);
    pm_set_state(d, cap, 0);
    g_assert_cmphex(qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_0), ==, 0);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_COMMAND) &
                    (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), ==, 0);

    /* what the OS does after the reset: restore the BAR and decoding */
    qpci_config_writel(&d->dev, PCI_BASE_ADDRESS_0, bar0);
    qpci_device_enable(&d->dev);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_SCRATCH), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_INT_ENABLE), ==, 0);
    g_assert_cmphex(pagoda_rd(d, PAGODA_ENG_RING_SIZE +
                              PAGODA_REG_ENGINE(PAGODA_ENGINE_RENDER)), ==, 0);
}

/* Start QEMU with a pagoda of bad @props and expect a clear error. */
static void check_rejected(const char *props, const char *message)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *device = g_strdup_printf("pagoda,%s", props);
    const char *argv[] = {
        qemu, "-machine", "q35", "-accel", "qtest", "-display", "none",
        "-nodefaults", "-device", device, NULL,
    };
    g_autofree char *out = NULL, *err = NULL;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT,
                               NULL, NULL, &out, &err, &status, NULL));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, message));
}

static void test_bad_properties(void)
{
    check_rejected("vram-size=3M", "vram-size must be a power of two");
    check_rejected("vram-size=32G", "vram-size must be a power of two");
    check_rejected("segment-page-size=8192", "segment-page-size must be");
    check_rejected("mmu-levels=5", "mmu-levels must be");
    check_rejected("mmu-levels=4,va-bits=52", "va-bits");
    check_rejected("aperture-size=100", "aperture-size must be");
    check_rejected("host-aperture-size=3M", "host-aperture-size must be");
    check_rejected("max-xres=9000", "max-xres and max-yres must be");
    check_rejected("max-yres=32", "max-xres and max-yres must be");
    check_rejected("xres=2000,max-xres=1920", "xres and yres must be");
    check_rejected("yres=10", "xres and yres must be");
}

/*
 * A device_add whose realize fails after the segments are set up must give
 * back their memory: without that, LeakSanitizer (scripts/sanitize.sh)
 * reports a leak when QEMU exits.
 */
static void test_failed_hotplug(void)
{
    QTestState *qts = qtest_init("-machine pc -nodefaults");
    QDict *resp;

    resp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                     "{'driver': 'pagoda', 'id': 'gpu', 'mmu-levels': 5}}");
    g_assert_true(qdict_haskey(resp, "error"));
    qobject_unref(resp);
    qtest_quit(qts);
}

static void register_pagoda_tests(void)
{
    QOSGraphTestOptions small_vram = {
        .edge.extra_device_opts = "vram-size=64M",
    };

    qos_add_test("ids", "pagoda", test_ids, NULL);
    qos_add_test("bar-sizes", "pagoda", test_bar_sizes, NULL);
    qos_add_test("vram-property", "pagoda", test_vram_property, &small_vram);
    qos_add_test("scratch", "pagoda", test_scratch, NULL);
    qos_add_test("vram-bar", "pagoda", test_vram_bar, NULL);
    qos_add_test("msix", "pagoda", test_msix, NULL);
    qos_add_test("msix-fault-vector", "pagoda", test_msix_fault_vector, NULL);
    qos_add_test("pm-capability", "pagoda", test_pm_capability, NULL);
    qos_add_test("pm-reset", "pagoda", test_pm_reset, NULL);
    if (g_getenv("QTEST_QEMU_BINARY")) {
        qtest_add_func("/pagoda/bad-properties", test_bad_properties);
        qtest_add_func("/pagoda/failed-hotplug", test_failed_hotplug);
    }
}

libqos_init(register_pagoda_tests);
