/*
 * libqos driver for the Pagoda GPU (see pagoda.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "../libqtest.h"
#include "pagoda.h"

#define RING_ENTRIES    256
#define WAIT_TIMEOUT_US (60 * G_USEC_PER_SEC)

/* ---- Node ----------------------------------------------------------------- */

static void *pagoda_get_driver(void *obj, const char *interface)
{
    QPagoda *d = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return &d->dev;
    }
    if (!g_strcmp0(interface, "pagoda-cp") || !g_strcmp0(interface, "pagoda-mmu")) {
        return d;
    }
    fprintf(stderr, "%s not present in pagoda\n", interface);
    g_assert_not_reached();
}

static void pagoda_destructor(QOSGraphObject *obj)
{
    QPagoda *d = (QPagoda *)obj;

    if (d->vram_bar_size) {
        qpci_iounmap(&d->dev, d->vram);
        qpci_iounmap(&d->dev, d->host_aperture);
        qpci_iounmap(&d->dev, d->mmio);
    }
    if (d->dev.msix_enabled) {
        qpci_msix_disable(&d->dev);
    }
}

static void *pagoda_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QPagoda *d = g_new0(QPagoda, 1);

    qpci_device_init(&d->dev, pci_bus, addr);
    d->obj.get_driver = pagoda_get_driver;
    d->obj.destructor = pagoda_destructor;
    d->alloc = alloc;
    return &d->obj;
}

static void pagoda_register_nodes(void)
{
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0",
    };

    add_qpci_address(&opts, &(QPCIAddress) { .devfn = QPCI_DEVFN(4, 0) });
    qos_node_create_driver("pagoda", pagoda_create);
    qos_node_consumes("pagoda", "pci-bus", &opts);
    qos_node_produces("pagoda", "pci-device");
    /*
     * The command processor's and the MMU's tests hang off interfaces of
     * their own: qgraph's walk keeps a node's children on a stack of 128,
     * which the device's tests on one node would outgrow.
     */
    qos_node_produces("pagoda", "pagoda-cp");
    qos_node_produces("pagoda", "pagoda-mmu");
}

libqos_init(pagoda_register_nodes);

/* ---- Registers and memory ------------------------------------------------ */

uint32_t pagoda_rd(QPagoda *d, uint32_t reg)
{
    return qpci_io_readl(&d->dev, d->mmio, reg);
}

void pagoda_wr(QPagoda *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(&d->dev, d->mmio, reg, val);
}

uint64_t pagoda_rd64(QPagoda *d, uint32_t reg_lo)
{
    return pagoda_rd(d, reg_lo) | (uint64_t)pagoda_rd(d, reg_lo + 4) << 32;
}

void pagoda_wr64(QPagoda *d, uint32_t reg_lo, uint64_t val)
{
    pagoda_wr(d, reg_lo, val);
    pagoda_wr(d, reg_lo + 4, val >> 32);
}

static QTestState *qts(QPagoda *d)
{
    return d->dev.bus->qts;
}

uint64_t pagoda_alloc(QPagoda *d, uint64_t size, uint64_t align)
{
    uint64_t raw = guest_alloc(d->alloc, size + align);
    uint64_t addr = QEMU_ALIGN_UP(raw, align);

    g_assert(raw);
    qtest_memset(qts(d), addr, 0, size);
    return addr;
}

void pagoda_memwrite(QPagoda *d, uint64_t addr, const void *buf, size_t len)
{
    qtest_memwrite(qts(d), addr, buf, len);
}

void pagoda_memread(QPagoda *d, uint64_t addr, void *buf, size_t len)
{
    qtest_memread(qts(d), addr, buf, len);
}

void pagoda_memset(QPagoda *d, uint64_t addr, uint8_t byte, size_t len)
{
    qtest_memset(qts(d), addr, byte, len);
}

uint64_t pagoda_readq(QPagoda *d, uint64_t addr)
{
    return qtest_readq(qts(d), addr);
}

void pagoda_writeq(QPagoda *d, uint64_t addr, uint64_t val)
{
    qtest_writeq(qts(d), addr, val);
}

static void ring_init(QPagoda *d, unsigned e)
{
    uint32_t reg = PAGODA_REG_ENGINE(e);

    d->ring_size[e] = RING_ENTRIES;
    d->ring_base[e] = pagoda_alloc(d, RING_ENTRIES * PAGODA_RING_ENTRY_SIZE, 4096);
    d->ring_tail[e] = 0;
    d->next_fence[e] = 1;
    pagoda_wr64(d, reg + PAGODA_ENG_RING_BASE_LO, PAGODA_PADDR(0, d->ring_base[e]));
    pagoda_wr(d, reg + PAGODA_ENG_RING_SIZE, RING_ENTRIES);
}

void pagoda_attach(QPagoda *d)
{
    qpci_device_enable(&d->dev);
    /* map the large BAR first: libqos hands out MMIO space in order */
    d->vram = qpci_iomap(&d->dev, PAGODA_BAR_VRAM, &d->vram_bar_size);
    d->host_aperture = qpci_iomap(&d->dev, PAGODA_BAR_HOST_APERTURE,
                                  &d->host_aperture_bar_size);
    d->mmio = qpci_iomap(&d->dev, PAGODA_BAR_MMIO, NULL);
    g_assert_cmphex(pagoda_rd(d, PAGODA_REG_ID), ==, PAGODA_ID);
}

void pagoda_start(QPagoda *d, QGuestAllocator *alloc)
{
    d->alloc = alloc;
    pagoda_attach(d);
    for (unsigned e = 0; e < PAGODA_NUM_ENGINES; e++) {
        ring_init(d, e);
    }
}

void pagoda_start_other(QPagoda *other, QPagoda *d, uint8_t devfn)
{
    memset(other, 0, sizeof(*other));
    qpci_device_init(&other->dev, d->dev.bus, &(QPCIAddress) { .devfn = devfn });
    pagoda_start(other, d->alloc);
}

/* ---- Command buffers ----------------------------------------------------- */

void pagoda_cmds_init(PagodaCmds *c)
{
    c->dw = g_array_new(false, true, sizeof(uint32_t));
}

void pagoda_cmds_free(PagodaCmds *c)
{
    g_array_free(c->dw, true);
}

void pagoda_cmd_raw(PagodaCmds *c, const uint32_t *dw, size_t n)
{
    g_array_append_vals(c->dw, dw, n);
}

uint32_t pagoda_cmds_bytes(PagodaCmds *c)
{
    return c->dw->len * 4;
}

static void put32(PagodaCmds *c, uint32_t v)
{
    g_array_append_val(c->dw, v);
}

static void put64(PagodaCmds *c, uint64_t v)
{
    put32(c, v);
    put32(c, v >> 32);
}

static void header(PagodaCmds *c, uint32_t op, uint32_t flags, uint32_t dwords)
{
    put32(c, PAGODA_CMD_HEADER(op, flags, dwords));
}

void pagoda_cmd_nop(PagodaCmds *c, uint32_t dwords)
{
    header(c, PAGODA_CMD_NOP, 0, dwords);
    for (uint32_t i = 1; i < dwords; i++) {
        put32(c, 0);
    }
}

void pagoda_cmd_signal(PagodaCmds *c, uint64_t addr, uint64_t value, bool irq)
{
    header(c, PAGODA_CMD_SIGNAL_FENCE, irq ? PAGODA_SIGNAL_INTERRUPT : 0, 6);
    put32(c, 0);
    put64(c, addr);
    put64(c, value);
}

void pagoda_cmd_wait(PagodaCmds *c, uint64_t addr, uint64_t value)
{
    header(c, PAGODA_CMD_WAIT_FENCE, 0, 6);
    put32(c, 0);
    put64(c, addr);
    put64(c, value);
}

static void three_operands(PagodaCmds *c, uint32_t op, uint32_t flags,
                           uint64_t a, uint64_t b, uint64_t size)
{
    header(c, op, flags, 8);
    put32(c, 0);
    put64(c, a);
    put64(c, b);
    put64(c, size);
}

static void fill_operands(PagodaCmds *c, uint32_t op, uint32_t flags,
                          uint64_t dst, uint32_t pattern, uint64_t size)
{
    header(c, op, flags, 6);
    put32(c, pattern);
    put64(c, dst);
    put64(c, size);
}

void pagoda_cmd_transfer(PagodaCmds *c, uint32_t flags, uint64_t src,
                         uint64_t dst, uint64_t size)
{
    three_operands(c, PAGODA_CMD_TRANSFER, flags, src, dst, size);
}

void pagoda_cmd_fill(PagodaCmds *c, uint64_t dst, uint32_t pattern,
                     uint64_t size)
{
    fill_operands(c, PAGODA_CMD_FILL, 0, dst, pattern, size);
}

void pagoda_cmd_vtransfer(PagodaCmds *c, uint32_t flags, uint64_t src,
                          uint64_t dst, uint64_t size)
{
    three_operands(c, PAGODA_CMD_VIRTUAL_TRANSFER, flags, src, dst, size);
}

void pagoda_cmd_vfill(PagodaCmds *c, uint32_t flags, uint64_t dst,
                      uint32_t pattern, uint64_t size)
{
    fill_operands(c, PAGODA_CMD_VIRTUAL_FILL, flags, dst, pattern, size);
}

void pagoda_cmd_update_pt(PagodaCmds *c, uint32_t flags, uint32_t level,
                          uint64_t table, uint32_t start, uint32_t count,
                          const uint64_t *ptes)
{
    uint32_t n = flags & PAGODA_UPT_REPEAT ? 1 : count;

    header(c, PAGODA_CMD_UPDATE_PAGE_TABLE, flags, 6 + 2 * n);
    put32(c, level);
    put64(c, table);
    put32(c, start);
    put32(c, count);
    for (uint32_t i = 0; i < n; i++) {
        put64(c, ptes[i]);
    }
}

void pagoda_cmd_copy_ptes(PagodaCmds *c, uint64_t src_table, uint32_t src_idx,
                          uint64_t dst_table, uint32_t dst_idx, uint32_t count)
{
    header(c, PAGODA_CMD_COPY_PTES, 0, 8);
    put32(c, count);
    put64(c, src_table);
    put64(c, dst_table);
    put32(c, src_idx);
    put32(c, dst_idx);
}

void pagoda_cmd_flush_tlb(PagodaCmds *c, uint32_t flags, uint32_t ctx,
                          uint64_t va, uint64_t size)
{
    header(c, PAGODA_CMD_FLUSH_TLB, flags, 6);
    put32(c, ctx);
    put64(c, va);
    put64(c, size);
}

void pagoda_cmd_map_aperture(PagodaCmds *c, uint32_t first, uint32_t count,
                             const uint64_t *pages)
{
    header(c, PAGODA_CMD_MAP_APERTURE, 0, 4 + 2 * count);
    put32(c, first);
    put32(c, count);
    put32(c, 0);
    for (uint32_t i = 0; i < count; i++) {
        put64(c, pages[i]);
    }
}

void pagoda_cmd_unmap_aperture(PagodaCmds *c, uint32_t first, uint32_t count)
{
    header(c, PAGODA_CMD_UNMAP_APERTURE, 0, 4);
    put32(c, first);
    put32(c, count);
    put32(c, 0);
}

void pagoda_cmd_map_host_aperture(PagodaCmds *c, uint32_t seg, uint32_t count,
                                  const uint32_t *pages,
                                  const uint32_t *seg_pages)
{
    header(c, PAGODA_CMD_MAP_HOST_APERTURE, 0, 3 + 2 * count);
    put32(c, seg);
    put32(c, count);
    pagoda_cmd_raw(c, pages, count);
    pagoda_cmd_raw(c, seg_pages, count);
}

void pagoda_cmd_unmap_host_aperture(PagodaCmds *c, uint32_t count,
                                    const uint32_t *pages)
{
    header(c, PAGODA_CMD_UNMAP_HOST_APERTURE, 0, 2 + count);
    put32(c, count);
    pagoda_cmd_raw(c, pages, count);
}

void pagoda_cmd_copy(PagodaCmds *c, uint64_t src, uint64_t dst, uint64_t size)
{
    three_operands(c, PAGODA_CMD_COPY, 0, src, dst, size);
}

void pagoda_cmd_fill32(PagodaCmds *c, uint64_t dst, uint32_t pattern,
                       uint64_t size)
{
    fill_operands(c, PAGODA_CMD_FILL32, 0, dst, pattern, size);
}

void pagoda_cmd_write_imm(PagodaCmds *c, uint64_t dst, const uint32_t *vals,
                          uint32_t count)
{
    header(c, PAGODA_CMD_WRITE_IMM, 0, 4 + count);
    put32(c, count);
    put64(c, dst);
    pagoda_cmd_raw(c, vals, count);
}

void pagoda_cmd_crc32(PagodaCmds *c, uint64_t src, uint64_t size, uint64_t dst)
{
    three_operands(c, PAGODA_CMD_CRC32, 0, src, size, dst);
}

static void branch(PagodaCmds *c, uint32_t op, uint64_t target, uint32_t length)
{
    header(c, op, 0, 4);
    put32(c, length);
    put64(c, target);
}

void pagoda_cmd_jump(PagodaCmds *c, uint64_t target, uint32_t length)
{
    branch(c, PAGODA_CMD_JUMP, target, length);
}

void pagoda_cmd_call(PagodaCmds *c, uint64_t target, uint32_t length)
{
    branch(c, PAGODA_CMD_CALL, target, length);
}

/* ---- Submission ---------------------------------------------------------- */

uint64_t pagoda_cmds_upload(QPagoda *d, PagodaCmds *c)
{
    uint64_t addr = pagoda_alloc(d, MAX(pagoda_cmds_bytes(c), 4), 4096);

    pagoda_memwrite(d, addr, c->dw->data, pagoda_cmds_bytes(c));
    return addr;
}

uint64_t pagoda_ring_put(QPagoda *d, unsigned engine, uint64_t addr, uint32_t length,
                         uint16_t ctx, uint16_t flags, uint64_t reserved)
{
    uint8_t entry[PAGODA_RING_ENTRY_SIZE] = { 0 };
    uint32_t tail = d->ring_tail[engine];
    uint64_t fence = d->next_fence[engine]++;

    stq_le_p(entry + PAGODA_RING_ADDR, addr);
    stl_le_p(entry + PAGODA_RING_LENGTH, length);
    stw_le_p(entry + PAGODA_RING_CONTEXT, ctx);
    stw_le_p(entry + PAGODA_RING_FLAGS, flags);
    stq_le_p(entry + PAGODA_RING_FENCE, fence);
    stq_le_p(entry + PAGODA_RING_RESERVED, reserved);
    pagoda_memwrite(d, d->ring_base[engine] + tail * PAGODA_RING_ENTRY_SIZE,
                    entry, sizeof(entry));
    d->ring_tail[engine] = (tail + 1) % d->ring_size[engine];
    pagoda_wr(d, PAGODA_REG_ENGINE(engine) + PAGODA_ENG_RING_TAIL, d->ring_tail[engine]);
    return fence;
}

uint64_t pagoda_submit_entry(QPagoda *d, unsigned engine, uint64_t addr,
                             uint32_t length, uint16_t ctx, uint16_t flags,
                             uint64_t reserved)
{
    uint64_t fence = pagoda_ring_put(d, engine, addr, length, ctx, flags, reserved);

    pagoda_wr(d, PAGODA_REG_ENGINE(engine) + PAGODA_ENG_DOORBELL, 1);
    return fence;
}

uint64_t pagoda_submit(QPagoda *d, unsigned engine, uint64_t addr,
                       uint32_t length, uint16_t ctx, uint16_t flags)
{
    return pagoda_submit_entry(d, engine, addr, length, ctx, flags, 0);
}

bool pagoda_wait_fence(QPagoda *d, unsigned engine, uint64_t fence)
{
    gint64 end = g_get_monotonic_time() + WAIT_TIMEOUT_US;
    uint32_t reg = PAGODA_REG_ENGINE(engine) + PAGODA_ENG_FENCE_LO;

    while (pagoda_rd64(d, reg) < fence) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(20);
    }
    return true;
}

bool pagoda_wait_idle(QPagoda *d, unsigned engine)
{
    gint64 end = g_get_monotonic_time() + WAIT_TIMEOUT_US;
    uint32_t reg = PAGODA_REG_ENGINE(engine) + PAGODA_ENG_STATUS;

    while (pagoda_rd(d, reg) & PAGODA_ENG_STATUS_BUSY) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(20);
    }
    return true;
}

uint64_t pagoda_run(QPagoda *d, unsigned engine, PagodaCmds *c, uint16_t ctx,
                    uint16_t flags)
{
    uint64_t addr = pagoda_cmds_upload(d, c);
    uint64_t fence = pagoda_submit(d, engine, PAGODA_PADDR(0, addr),
                                   pagoda_cmds_bytes(c), ctx, flags);

    g_assert(pagoda_wait_fence(d, engine, fence));
    return fence;
}

/* ---- Faults -------------------------------------------------------------- */

bool pagoda_pop_fault(QPagoda *d, PagodaFaultInfo *f)
{
    if (!pagoda_rd(d, PAGODA_REG_FAULT_COUNT)) {
        return false;
    }
    *f = (PagodaFaultInfo) {
        .context = pagoda_rd(d, PAGODA_REG_FAULT_CONTEXT),
        .engine = pagoda_rd(d, PAGODA_REG_FAULT_ENGINE),
        .level = pagoda_rd(d, PAGODA_REG_FAULT_LEVEL),
        .access = pagoda_rd(d, PAGODA_REG_FAULT_ACCESS),
        .code = pagoda_rd(d, PAGODA_REG_FAULT_CODE),
        .flags = pagoda_rd(d, PAGODA_REG_FAULT_FLAGS),
        .va = pagoda_rd64(d, PAGODA_REG_FAULT_VA_LO),
        .fence = pagoda_rd64(d, PAGODA_REG_FAULT_FENCE_LO),
    };
    pagoda_wr(d, PAGODA_REG_FAULT_POP, 1);
    return true;
}

void pagoda_resume_context(QPagoda *d, uint32_t ctx)
{
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, ctx);
    pagoda_wr(d, PAGODA_REG_CTX_STATUS, PAGODA_CTX_STATUS_HALTED);
}

/* ---- Page tables --------------------------------------------------------- */

static unsigned shift_of(uint32_t level)
{
    return 12 + 9 * level;
}

uint64_t pagoda_cpu_addr(QPagoda *d, uint64_t paddr)
{
    uint64_t off = PAGODA_PADDR_OFFSET(paddr);

    switch (PAGODA_PADDR_SEG(paddr)) {
    case PAGODA_SEG_SYSTEM:
        return off;
    case PAGODA_SEG_VRAM:
        g_assert_cmpuint(off, <, d->vram_bar_size);
        return d->vram.addr + off;
    }
    g_assert_not_reached();
}

/* A zeroed table of @size bytes in vm->table_seg. */
static uint64_t new_table(PagodaVM *vm, uint64_t size)
{
    uint64_t paddr;

    switch (vm->table_seg) {
    case PAGODA_SEG_SYSTEM:
        return PAGODA_PADDR(PAGODA_SEG_SYSTEM, pagoda_alloc(vm->d, size, 4096));
    case PAGODA_SEG_VRAM:
        vm->vram_next = QEMU_ALIGN_UP(vm->vram_next, 4096);
        paddr = PAGODA_PADDR(PAGODA_SEG_VRAM, vm->vram_next);
        vm->vram_next += size;
        /* VRAM keeps its content across resets: clear it */
        pagoda_memset(vm->d, pagoda_cpu_addr(vm->d, paddr), 0, size);
        return paddr;
    }
    g_assert_not_reached();
}

static void vm_setup(PagodaVM *vm, QPagoda *d, uint32_t ctx,
                     uint32_t root_entries, uint32_t seg, uint64_t vram_offset)
{
    uint32_t l;

    memset(vm, 0, sizeof(*vm));
    vm->d = d;
    vm->ctx = ctx;
    vm->table_seg = seg;
    vm->vram_next = vram_offset;
    vm->levels = pagoda_rd(d, PAGODA_REG_MMU_LEVELS);
    for (l = 0; l < vm->levels; l++) {
        vm->bits[l] = pagoda_rd(d, PAGODA_REG_MMU_LEVEL(l) +
                                   PAGODA_MMU_LEVEL_INDEX_BITS);
    }
    vm->root_entries = root_entries;
    vm->root = new_table(vm, QEMU_ALIGN_UP(root_entries * 8ull, 4096));
    pagoda_wr(d, PAGODA_REG_CTX_SELECT, ctx);
    pagoda_wr64(d, PAGODA_REG_CTX_ROOT_LO, vm->root);
    pagoda_wr(d, PAGODA_REG_CTX_ROOT_ENTRIES, root_entries);
}

void pagoda_vm_init(PagodaVM *vm, QPagoda *d, uint32_t ctx,
                    uint32_t root_entries)
{
    vm_setup(vm, d, ctx, root_entries, PAGODA_SEG_SYSTEM, 0);
}

void pagoda_vm_init_vram(PagodaVM *vm, QPagoda *d, uint32_t ctx,
                         uint32_t root_entries, uint64_t vram_offset)
{
    vm_setup(vm, d, ctx, root_entries, PAGODA_SEG_VRAM, vram_offset);
}

static uint64_t index_at(PagodaVM *vm, uint64_t va, uint32_t level)
{
    return (va >> shift_of(level)) & ((1ull << vm->bits[level]) - 1);
}

/*
 * Physical address (PAGODA_PADDR) of the entry for @va in the table at
 * @level (tables created as needed).
 */
static uint64_t entry_addr(PagodaVM *vm, uint64_t va, uint32_t level,
                           bool leaf64)
{
    uint64_t table = vm->root;
    uint32_t l;

    for (l = vm->levels - 1; l > level; l--) {
        uint64_t at = table + index_at(vm, va, l) * 8;
        uint64_t pte = pagoda_readq(vm->d, pagoda_cpu_addr(vm->d, at));

        if (!(pte & PAGODA_PTE_VALID)) {
            bool small = leaf64 && l == 1;
            uint64_t next = new_table(vm, 4096);

            pte = PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(next),
                                  PAGODA_PADDR_OFFSET(next), PAGODA_PTE_VALID |
                                  (small ? PAGODA_PTE_LEAF64 : 0));
            pagoda_writeq(vm->d, pagoda_cpu_addr(vm->d, at), pte);
        }
        table = PAGODA_PADDR(PAGODA_PTE_SEGMENT(pte), PAGODA_PTE_ADDR(pte));
        if (l == 1 && (pte & PAGODA_PTE_LEAF64)) {
            g_assert(level == 0);
            return table + ((va >> 16) & 31) * 8;
        }
    }
    return table + index_at(vm, va, level) * 8;
}

uint64_t pagoda_vm_table(PagodaVM *vm, uint64_t va, uint32_t level,
                         bool leaf64)
{
    uint64_t at = entry_addr(vm, va, level, leaf64);

    return at & ~4095ull;
}

void pagoda_vm_set_pte(PagodaVM *vm, uint64_t va, uint32_t level, uint64_t pte)
{
    uint64_t at = entry_addr(vm, va, level, false);

    pagoda_writeq(vm->d, pagoda_cpu_addr(vm->d, at), pte);
}

uint64_t pagoda_vm_get_pte(PagodaVM *vm, uint64_t va, uint32_t level)
{
    uint64_t at = entry_addr(vm, va, level, false);

    return pagoda_readq(vm->d, pagoda_cpu_addr(vm->d, at));
}

void pagoda_vm_map(PagodaVM *vm, uint64_t va, uint64_t paddr, uint64_t size,
                   uint64_t page, uint64_t flags)
{
    const uint64_t region = 1ull << shift_of(1);
    bool leaf64 = page == 65536;
    uint64_t off = 0;

    g_assert(page == 4096 || page == 65536);
    g_assert(!((va | PAGODA_PADDR_OFFSET(paddr) | size) & (page - 1)));
    /* one table lookup and one write per leaf table */
    while (off < size) {
        uint64_t chunk = MIN(size - off, region - ((va + off) & (region - 1)));
        uint64_t n = chunk / page, i;
        uint64_t at = entry_addr(vm, va + off, 0, leaf64);
        g_autofree uint64_t *ptes = g_new(uint64_t, n);

        for (i = 0; i < n; i++) {
            uint64_t pa = paddr + off + i * page;

            ptes[i] = cpu_to_le64(PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa),
                                                  PAGODA_PADDR_OFFSET(pa),
                                                  PAGODA_PTE_VALID | flags));
        }
        pagoda_memwrite(vm->d, pagoda_cpu_addr(vm->d, at), ptes,
                        n * sizeof(uint64_t));
        off += chunk;
    }
}
