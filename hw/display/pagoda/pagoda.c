/*
 * Pagoda GPU: PCI function, BARs, register file, interrupts, fault queue,
 * adapter reset, properties and migration state.
 *
 * The register map and every encoding live in include/pagoda/pagoda_hw.h;
 * docs/hardware.md is the programming guide. Registers of the MMU, the
 * segments, the engines and the display are decoded here and served by
 * their owners (pagoda_mmu.c, pagoda_mem.c, pagoda_cp.c, pagoda_display.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "pagoda_int.h"
#include "trace.h"

/* ---- Interrupts ---------------------------------------------------------- */

/* The INT_STATUS bits MSI-X vector @vector carries. */
static uint32_t vector_bits(unsigned vector)
{
    switch (vector) {
    case PAGODA_MSIX_VECTOR_FAULT:
        return PAGODA_INT_FAULT;
    case PAGODA_MSIX_VECTOR_VBLANK:
        return PAGODA_INT_VBLANK;
    }
    assert(vector - PAGODA_MSIX_VECTOR_ENGINE(0) < PAGODA_NUM_ENGINES);
    return PAGODA_INT_ENGINE(vector - PAGODA_MSIX_VECTOR_ENGINE(0));
}

/*
 * MSI-X messages are edge-triggered: a vector fires when one of its enabled
 * status bits becomes pending and none was pending before. INTx is a level.
 */
static void pagoda_update_irq(PagodaState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t pending = s->int_status & s->int_enable;
    unsigned v;

    trace_pagoda_irq_update(s->int_status, s->int_enable);
    if (msix_enabled(pdev)) {
        for (v = 0; v < PAGODA_MSIX_VECTORS; v++) {
            bool now = pending & vector_bits(v);
            bool before = s->irq_raised & PAGODA_BIT(v);

            if (now && !before) {
                msix_notify(pdev, v);
            }
            s->irq_raised = now ? s->irq_raised | PAGODA_BIT(v)
                                : s->irq_raised & ~PAGODA_BIT(v);
        }
        return;
    }
    pci_set_irq(pdev, pending != 0);
}

/*
 * With the device's lock. A DOORBELL's slice runs without the big lock,
 * which MSI-X and INTx need: there the cause is raised, in INT_STATUS and
 * by its vector together, when the doorbell has the big lock again
 * (pagoda_flush_irq()), before the vCPU goes on. Not in INT_STATUS
 * before: an acknowledgement meanwhile would clear it with no message
 * ever sent for it. A slice run with the big lock (a doorbell written by
 * qtest or another device) defers its causes the same way, so that
 * DOORBELL_POLL drops them alike.
 */
void pagoda_raise_irq(PagodaState *s, uint32_t bits)
{
    if (!bql_locked() || s->in_doorbell) {
        s->irq_deferred |= bits;
        return;
    }
    s->int_status |= bits;
    pagoda_update_irq(s);
}

/* Raise what a DOORBELL's slice raised; both locks held. */
void pagoda_flush_irq(PagodaState *s)
{
    if (s->irq_deferred) {
        s->int_status |= s->irq_deferred;
        s->irq_deferred = 0;
        pagoda_update_irq(s);
    }
}

/* ---- Fault queue --------------------------------------------------------- */

static PagodaFaultRecord *fault_oldest(PagodaState *s)
{
    return s->fault_count ? &s->faults[s->fault_head] : NULL;
}

/*
 * Queue the fault record @r (or count it lost if the queue is full) and
 * raise PAGODA_INT_FAULT.
 */
void pagoda_queue_fault(PagodaState *s, const PagodaFaultRecord *r)
{
    if (s->fault_count == PAGODA_FAULT_QUEUE_DEPTH) {
        s->fault_lost++;
    } else {
        s->faults[(s->fault_head + s->fault_count) % PAGODA_FAULT_QUEUE_DEPTH] = *r;
        s->fault_count++;
    }
    pagoda_raise_irq(s, PAGODA_INT_FAULT);
}

/*
 * Record a fault of the ring entry @eng runs, halt its context and raise
 * PAGODA_INT_FAULT. The engine itself keeps running other contexts.
 */
void pagoda_fault(PagodaState *s, const PagodaEngine *eng, const PagodaFault *f)
{
    uint32_t ctx = eng->cur.entry.context;

    trace_pagoda_fault(eng->id, ctx, f->code, f->va, f->level, f->access);
    if (ctx < PAGODA_NUM_CONTEXTS) {
        s->ctx[ctx].halted = true;
    }
    pagoda_queue_fault(s, &(PagodaFaultRecord) {
        .context = ctx,
        .engine = eng->id,
        .level = f->level,
        .access = f->access,
        .code = f->code,
        .va = f->va,
        .fence = eng->cur.entry.fence,
        .flags = (f->access == PAGODA_ACCESS_WRITE ? PAGODA_FAULT_FLAG_WRITE : 0) |
                 (f->code == PAGODA_FAULT_BAD_RING_ENTRY ?
                  PAGODA_FAULT_FLAG_FENCE_INVALID : 0) |
                 (eng->id == PAGODA_ENGINE_PAGING ?
                  PAGODA_FAULT_FLAG_ADAPTER_RESET_REQUIRED : 0),
    });
}

static void fault_pop(PagodaState *s)
{
    if (!s->fault_count) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: FAULT_POP with an empty queue\n");
        return;
    }
    s->fault_head = (s->fault_head + 1) % PAGODA_FAULT_QUEUE_DEPTH;
    s->fault_count--;
    if (!s->fault_count) {
        s->int_status &= ~PAGODA_INT_FAULT;
        pagoda_update_irq(s);
    }
}

static uint32_t fault_reg(PagodaState *s, hwaddr addr)
{
    const PagodaFaultRecord *r = fault_oldest(s);

    switch (addr) {
    case PAGODA_REG_FAULT_COUNT:
        return s->fault_count;
    case PAGODA_REG_FAULT_LOST:
        return s->fault_lost;
    }
    if (!r) {
        return 0;
    }
    switch (addr) {
    case PAGODA_REG_FAULT_CONTEXT:  return r->context;
    case PAGODA_REG_FAULT_ENGINE:   return r->engine;
    case PAGODA_REG_FAULT_VA_LO:    return r->va;
    case PAGODA_REG_FAULT_VA_HI:    return r->va >> 32;
    case PAGODA_REG_FAULT_LEVEL:    return r->level;
    case PAGODA_REG_FAULT_ACCESS:   return r->access;
    case PAGODA_REG_FAULT_FENCE_LO: return r->fence;
    case PAGODA_REG_FAULT_FENCE_HI: return r->fence >> 32;
    case PAGODA_REG_FAULT_CODE:     return r->code;
    case PAGODA_REG_FAULT_FLAGS:    return r->flags;
    }
    return 0;
}

/* ---- Contexts ------------------------------------------------------------ */

static PagodaContext *selected_ctx(PagodaState *s)
{
    return &s->ctx[s->ctx_select];
}

static uint32_t ctx_reg(PagodaState *s, hwaddr addr)
{
    PagodaContext *c = selected_ctx(s);

    switch (addr) {
    case PAGODA_REG_CTX_SELECT:       return s->ctx_select;
    case PAGODA_REG_CTX_ROOT_LO:      return c->root_staged;
    case PAGODA_REG_CTX_ROOT_HI:      return c->root_staged >> 32;
    case PAGODA_REG_CTX_ROOT_ENTRIES: return c->root_entries;
    case PAGODA_REG_CTX_STATUS:
        return c->halted ? PAGODA_CTX_STATUS_HALTED : 0;
    }
    return 0;
}

static void ctx_write(PagodaState *s, hwaddr addr, uint32_t val)
{
    PagodaContext *c = selected_ctx(s);
    uint32_t max_root = pagoda_mmu_level_entries(s, s->mmu_levels - 1, false);

    switch (addr) {
    case PAGODA_REG_CTX_SELECT:
        if (val >= PAGODA_NUM_CONTEXTS) {
            qemu_log_mask(LOG_GUEST_ERROR, "pagoda: context %u out of range\n", val);
            return;
        }
        s->ctx_select = val;
        break;
    case PAGODA_REG_CTX_ROOT_LO:
        c->root_staged = deposit64(c->root_staged, 0, 32, val);
        break;
    case PAGODA_REG_CTX_ROOT_HI:
        c->root_staged = deposit64(c->root_staged, 32, 32, val);
        break;
    case PAGODA_REG_CTX_ROOT_ENTRIES:
        if (val > max_root) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: root of %u entries exceeds the maximum %u\n",
                          val, max_root);
            val = 0;
        }
        c->root = c->root_staged;
        c->root_entries = val;
        pagoda_tlb_flush(s, s->ctx_select, 0, 0);
        break;
    case PAGODA_REG_CTX_STATUS:
        if (val & PAGODA_CTX_STATUS_HALTED) {
            c->halted = false;
            pagoda_cp_kick(s);
        }
        break;
    }
}

/* ---- Reset --------------------------------------------------------------- */

/*
 * Adapter reset: back to the power-on state. The command processor stops at
 * once: nothing it queued before can touch memory afterwards.
 */
static void pagoda_reset_state(PagodaState *s)
{
    pagoda_cp_reset(s);
    pagoda_display_reset(s);
    pagoda_mmu_reset(s);
    pagoda_mem_reset(s);
    memset(s->ctx, 0, sizeof(s->ctx));
    memset(s->faults, 0, sizeof(s->faults));
    s->fault_head = s->fault_count = s->fault_lost = 0;
    s->ctx_select = 0;
    s->scratch = 0;
    s->debug = 0;
    s->int_status = 0;
    s->irq_deferred = 0;
    s->int_enable = 0;
    pagoda_update_irq(s);
}

/* ---- PCI power management ------------------------------------------------ */

/*
 * The PCI power management capability gives the function a reset of its
 * own: a D3hot -> D0 transition with No_Soft_Reset clear resets it like
 * power-on, configuration space included (the PCI PM spec's "internal
 * reset"). Linux uses it for a function-level reset (its "pm" reset
 * method). While in D3hot the BARs do not decode (pci_update_mappings()).
 */
#define PCI_PM_STATE_D0     0
#define PCI_PM_STATE_D3HOT  3

static uint16_t pagoda_pm_state(PCIDevice *pdev)
{
    return pci_get_word(pdev->config + pdev->pm_cap + PCI_PM_CTRL) &
           PCI_PM_CTRL_STATE_MASK;
}

/* Powered (D0): not in D3hot, where a function reset is under way. */
bool pagoda_powered(PagodaState *s)
{
    return pagoda_pm_state(PCI_DEVICE(s)) == PCI_PM_STATE_D0;
}

static void pagoda_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                                int len)
{
    uint16_t old_state = pagoda_pm_state(pdev);

    pci_default_write_config(pdev, addr, val, len);
    if (old_state == PCI_PM_STATE_D3HOT &&
        pagoda_pm_state(pdev) == PCI_PM_STATE_D0) {
        trace_pagoda_reset_pm();
        pci_device_reset(pdev);
    }
}

static bool pagoda_pm_init(PCIDevice *pdev, Error **errp)
{
    int offset = pci_pm_init(pdev, 0, errp);

    if (offset < 0) {
        return false;
    }
    /* D0 and D3hot only; No_Soft_Reset clear: D3hot -> D0 resets. */
    pci_set_word(pdev->config + offset + PCI_PM_PMC, PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->wmask + offset + PCI_PM_CTRL, PCI_PM_CTRL_STATE_MASK);
    return true;
}

static void pagoda_reset_write(PagodaState *s, uint32_t val)
{
    unsigned e;

    if (val & PAGODA_RESET_ADAPTER) {
        trace_pagoda_reset_adapter();
        pagoda_reset_state(s);
        return;
    }
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        if (!(val & PAGODA_RESET_ENGINE(e))) {
            continue;
        }
        if (s->debug & PAGODA_DEBUG_ENGINE_RESET_FAILS(e)) {
            trace_pagoda_engine_reset_failed(e);
            continue;
        }
        pagoda_engine_reset(s, &s->engine[e]);
    }
}

/* ---- Register file ------------------------------------------------------- */

static bool is_engine_reg(hwaddr addr, unsigned *e)
{
    if (addr < PAGODA_REG_ENGINE(0) ||
        addr >= PAGODA_REG_ENGINE(PAGODA_NUM_ENGINES)) {
        return false;
    }
    *e = (addr - PAGODA_REG_ENGINE(0)) / 0x100;
    return true;
}

static uint32_t pagoda_status(PagodaState *s)
{
    uint32_t st = 0;
    unsigned e;

    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        if (pagoda_engine_read(s, &s->engine[e], PAGODA_ENG_STATUS) &
            PAGODA_ENG_STATUS_BUSY) {
            st |= PAGODA_STATUS_ENGINE_BUSY(e);
        }
    }
    return st;
}

static uint64_t pagoda_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    PagodaState *s = opaque;
    uint64_t val = 0;
    unsigned e;

    QEMU_LOCK_GUARD(&s->lock);
    switch (addr) {
    case PAGODA_REG_ID:
        val = PAGODA_ID;
        break;
    case PAGODA_REG_REVISION:
        val = PAGODA_REVISION;
        break;
    case PAGODA_REG_CAPS:
        val = PAGODA_CAPS_GPUMMU | PAGODA_CAPS_HOST_APERTURE |
              PAGODA_CAPS_APERTURE_SEGMENT | PAGODA_CAPS_PHYSICAL_MODE |
              PAGODA_CAPS_ENGINE_RESET | PAGODA_CAPS_DISPLAY;
        break;
    case PAGODA_REG_SCRATCH:
        val = s->scratch;
        break;
    case PAGODA_REG_INT_STATUS:
        val = s->int_status;
        break;
    case PAGODA_REG_INT_ENABLE:
        val = s->int_enable;
        break;
    case PAGODA_REG_VRAM_SIZE_LO:
        val = s->vram_size;
        break;
    case PAGODA_REG_VRAM_SIZE_HI:
        val = s->vram_size >> 32;
        break;
    case PAGODA_REG_NUM_SEGMENTS:
        val = PAGODA_NUM_SEGMENTS;
        break;
    case PAGODA_REG_NUM_ENGINES:
        val = PAGODA_NUM_ENGINES;
        break;
    case PAGODA_REG_NUM_CONTEXTS:
        val = PAGODA_NUM_CONTEXTS;
        break;
    case PAGODA_REG_STATUS:
        val = pagoda_status(s);
        break;
    case PAGODA_REG_DEBUG:
        val = s->debug;
        break;
    case PAGODA_REG_LINK_ID:
    case PAGODA_REG_LINK_INDEX:
    case PAGODA_REG_LINK_PRESENT:
        val = pagoda_link_reg(s, addr);
        break;
    case PAGODA_REG_SEG(0) ... PAGODA_REG_SEG(PAGODA_NUM_SEGMENTS) - 1:
        val = pagoda_segment_reg(s, (addr - PAGODA_REG_SEG(0)) / 0x40,
                                 (addr - PAGODA_REG_SEG(0)) % 0x40);
        break;
    case PAGODA_REG_GART_BASE_LO:
        val = s->gart_base;
        break;
    case PAGODA_REG_GART_BASE_HI:
        val = s->gart_base >> 32;
        break;
    case PAGODA_REG_GART_ENTRIES:
        val = s->gart_entries;
        break;
    case PAGODA_REG_HOST_APERTURE_PAGES:
        val = s->host_aperture_pages;
        break;
    case PAGODA_REG_HOST_APERTURE_PAGE_SIZE:
        val = s->segment_page_size;
        break;
    case PAGODA_REG_MMU_CAPS ... PAGODA_REG_TLB_VALID:
        val = pagoda_mmu_reg(s, addr);
        break;
    case PAGODA_REG_CTX_SELECT ... PAGODA_REG_CTX_STATUS:
        val = ctx_reg(s, addr);
        break;
    case PAGODA_REG_FAULT_COUNT ... PAGODA_REG_FAULT_FLAGS:
        val = fault_reg(s, addr);
        break;
    case PAGODA_REG_DISP_MAX_WIDTH ...
         PAGODA_REG_DISP_MODE(PAGODA_DISP_MAX_MODES) - 1:
        val = pagoda_display_read(s, addr);
        break;
    default:
        if (is_engine_reg(addr, &e)) {
            val = pagoda_engine_read(s, &s->engine[e], addr & 0xff);
        } else {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: read of unknown register 0x%" HWADDR_PRIx "\n",
                          addr);
        }
    }
    trace_pagoda_mmio_read(addr, val);
    return val;
}

static void pagoda_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    PagodaState *s = opaque;
    unsigned e;

    QEMU_LOCK_GUARD(&s->lock);
    trace_pagoda_mmio_write(addr, val);
    switch (addr) {
    case PAGODA_REG_SCRATCH:
        s->scratch = val;
        break;
    case PAGODA_REG_INT_STATUS:
        /* the fault bit stays while the fault queue holds records */
        s->int_status &= ~(val & ~(s->fault_count ? PAGODA_INT_FAULT : 0));
        pagoda_update_irq(s);
        break;
    case PAGODA_REG_INT_ENABLE:
        s->int_enable = val & PAGODA_INT_IMPLEMENTED;
        pagoda_update_irq(s);
        break;
    case PAGODA_REG_RESET:
        pagoda_reset_write(s, val);
        break;
    case PAGODA_REG_DEBUG:
        s->debug = val & PAGODA_DEBUG_IMPLEMENTED;
        break;
    case PAGODA_REG_GART_BASE_LO:
        /* the table is 4 KiB aligned: the low bits do not exist */
        s->gart_base = deposit64(s->gart_base, 0, 32,
                                 val & ~(uint32_t)(PAGODA_PAGE_SIZE - 1));
        break;
    case PAGODA_REG_GART_BASE_HI:
        s->gart_base = deposit64(s->gart_base, 32, 32, val);
        break;
    case PAGODA_REG_GART_ENTRIES:
        if (val > s->aperture_size / PAGODA_GART_PAGE_SIZE) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: GART of %" PRIu64 " entries exceeds the "
                          "aperture segment\n", val);
            val = 0;
        }
        s->gart_entries = val;
        break;
    case PAGODA_REG_TLB_HITS_LO:
        s->tlb->hits = s->tlb->misses = 0;
        break;
    case PAGODA_REG_CTX_SELECT ... PAGODA_REG_CTX_STATUS:
        ctx_write(s, addr, val);
        break;
    case PAGODA_REG_FAULT_POP:
        fault_pop(s);
        break;
    case PAGODA_REG_DISP_MAX_WIDTH ...
         PAGODA_REG_DISP_MODE(PAGODA_DISP_MAX_MODES) - 1:
        pagoda_display_write(s, addr, val);
        break;
    default:
        if (is_engine_reg(addr, &e)) {
            pagoda_engine_write(s, &s->engine[e], addr & 0xff, val);
        } else {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: write 0x%" PRIx64 " to read-only or unknown "
                          "register 0x%" HWADDR_PRIx "\n", val, addr);
        }
    }
}

static const MemoryRegionOps pagoda_mmio_ops = {
    .read = pagoda_mmio_read,
    .write = pagoda_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* ---- Device lifecycle ---------------------------------------------------- */

static bool check_properties(PagodaState *s, Error **errp)
{
    if (s->vram_size < 16 * MiB || s->vram_size > 16 * GiB ||
        !is_power_of_2(s->vram_size)) {
        error_setg(errp, "pagoda: vram-size must be a power of two between "
                   "16 MiB and 16 GiB (got %" PRIu64 ")", s->vram_size);
        return false;
    }
    if (s->vram_hidden_size > 16 * GiB ||
        s->vram_hidden_size % (64 * KiB)) {
        error_setg(errp, "pagoda: hidden-vram-size must be a multiple of "
                   "64 KiB up to 16 GiB (got %" PRIu64 ")", s->vram_hidden_size);
        return false;
    }
    if (s->aperture_size < 1 * MiB || s->aperture_size > 4 * GiB ||
        s->aperture_size % (64 * KiB)) {
        error_setg(errp, "pagoda: aperture-size must be a multiple of 64 KiB "
                   "between 1 MiB and 4 GiB (got %" PRIu64 ")", s->aperture_size);
        return false;
    }
    if (s->segment_page_size != 4 * KiB && s->segment_page_size != 64 * KiB) {
        error_setg(errp, "pagoda: segment-page-size must be 4096 or 65536 "
                   "(got %u)", s->segment_page_size);
        return false;
    }
    if (s->host_aperture_size < 1 * MiB || s->host_aperture_size > 1 * GiB ||
        !is_power_of_2(s->host_aperture_size)) {
        error_setg(errp, "pagoda: host-aperture-size must be a power of two "
                   "between 1 MiB and 1 GiB (got %" PRIu64 ")",
                   s->host_aperture_size);
        return false;
    }
    return pagoda_display_check_properties(s, errp);
}

static void pagoda_realize(PCIDevice *pdev, Error **errp)
{
    PagodaState *s = PAGODA(pdev);
    Error *err = NULL;

    if (!check_properties(s, errp)) {
        return;
    }
    s->dma_as = pci_get_address_space(pdev);

    pci_config_set_interrupt_pin(pdev->config, 1);
    memory_region_init_io(&s->mmio, OBJECT(s), &pagoda_mmio_ops, s,
                          "pagoda-mmio", PAGODA_MMIO_SIZE);
    pci_register_bar(pdev, PAGODA_BAR_MMIO, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);

    pagoda_mem_realize(s, &err);
    if (err) {
        error_propagate(errp, err);
        goto fail;
    }
    pagoda_mmu_realize(s, &err);
    if (err) {
        error_propagate(errp, err);
        goto fail;
    }

    if (!pagoda_pm_init(pdev, errp)) {
        goto fail;
    }
    if (msix_init_exclusive_bar(pdev, PAGODA_MSIX_VECTORS, PAGODA_BAR_MSIX,
                                errp)) {
        goto fail;
    }
    for (unsigned v = 0; v < PAGODA_MSIX_VECTORS; v++) {
        msix_vector_use(pdev, v);
    }
    if (!pagoda_link_realize(s, errp)) {
        msix_uninit_exclusive_bar(pdev);
        goto fail;
    }
    pagoda_cp_realize(s);
    pagoda_display_realize(s);
    return;

fail:
    /* pagoda_exit() is not called for a device that failed to realize */
    g_free(s->tlb);
    pagoda_mem_unrealize(s);
}

static void pagoda_exit(PCIDevice *pdev)
{
    PagodaState *s = PAGODA(pdev);

    /* after a DOORBELL's slice in flight, which stops at its next step */
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        s->gone = true;
    }
    pagoda_link_unrealize(s);
    pagoda_display_unrealize(s);
    pagoda_cp_unrealize(s);
    msix_uninit_exclusive_bar(pdev);
    g_free(s->tlb);
    pagoda_mem_unrealize(s);
}

static void pagoda_reset_hold(Object *obj, ResetType type)
{
    PagodaState *s = PAGODA(obj);

    QEMU_LOCK_GUARD(&s->lock);
    pagoda_reset_state(s);
}

static const Property pagoda_properties[] = {
    DEFINE_PROP_SIZE("vram-size", PagodaState, vram_size, 256 * MiB),
    DEFINE_PROP_SIZE("hidden-vram-size", PagodaState, vram_hidden_size,
                     256 * MiB),
    DEFINE_PROP_SIZE("aperture-size", PagodaState, aperture_size, 256 * MiB),
    DEFINE_PROP_SIZE("host-aperture-size", PagodaState, host_aperture_size,
                     32 * MiB),
    DEFINE_PROP_UINT32("segment-page-size", PagodaState, segment_page_size,
                       64 * KiB),
    DEFINE_PROP_UINT32("mmu-levels", PagodaState, mmu_levels, 4),
    DEFINE_PROP_UINT32("va-bits", PagodaState, va_bits, 0),
    DEFINE_PROP_UINT32("xres", PagodaState, disp.xres, 1024),
    DEFINE_PROP_UINT32("yres", PagodaState, disp.yres, 768),
    DEFINE_PROP_UINT32("max-xres", PagodaState, disp.max_xres, 4096),
    DEFINE_PROP_UINT32("max-yres", PagodaState, disp.max_yres, 4096),
    DEFINE_PROP_LINK("link", PagodaState, link_first, TYPE_PAGODA, PagodaState *),
};

static const VMStateDescription vmstate_pagoda_context = {
    .name = "pagoda/context",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(root, PagodaContext),
        VMSTATE_UINT64(root_staged, PagodaContext),
        VMSTATE_UINT32(root_entries, PagodaContext),
        VMSTATE_BOOL(halted, PagodaContext),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pagoda_fault = {
    .name = "pagoda/fault",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(context, PagodaFaultRecord),
        VMSTATE_UINT32(engine, PagodaFaultRecord),
        VMSTATE_UINT32(level, PagodaFaultRecord),
        VMSTATE_UINT32(access, PagodaFaultRecord),
        VMSTATE_UINT32(code, PagodaFaultRecord),
        VMSTATE_UINT32(flags, PagodaFaultRecord),
        VMSTATE_UINT64(va, PagodaFaultRecord),
        VMSTATE_UINT64(fence, PagodaFaultRecord),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pagoda_call_frame = {
    .name = "pagoda/engine/call-frame",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(pos, PagodaCallFrame),
        VMSTATE_UINT64(end, PagodaCallFrame),
        VMSTATE_END_OF_LIST()
    },
};

static bool pagoda_cursor_needed(void *opaque)
{
    PagodaEngine *eng = opaque;

    return eng->cur.active;
}

/* Checked before the arrays they size are loaded into the device's buffers. */
static bool pagoda_cursor_sizes_valid(void *opaque, int version_id)
{
    PagodaCursor *cur = &((PagodaEngine *)opaque)->cur;

    return cur->cmd_dwords <= PAGODA_CMD_MAX_DWORDS && cur->depth <= PAGODA_CALL_DEPTH &&
           cur->src_npages <= PAGODA_MAX_LIST_PAGES &&
           cur->dst_npages <= PAGODA_MAX_LIST_PAGES;
}

/*
 * An engine in the middle of an entry: its cursor, its CALL stack, the
 * command being run as it was fetched (never read again), its progress,
 * the page lists it copied, a WAIT_FENCE or host aperture wait.
 */
static const VMStateDescription vmstate_pagoda_cursor = {
    .name = "pagoda/engine/cursor",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pagoda_cursor_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(cur.active, PagodaEngine),
        VMSTATE_UINT64(cur.entry.addr, PagodaEngine),
        VMSTATE_UINT32(cur.entry.length, PagodaEngine),
        VMSTATE_UINT16(cur.entry.context, PagodaEngine),
        VMSTATE_UINT16(cur.entry.flags, PagodaEngine),
        VMSTATE_UINT64(cur.entry.fence, PagodaEngine),
        VMSTATE_UINT64(cur.pos, PagodaEngine),
        VMSTATE_UINT64(cur.end, PagodaEngine),
        VMSTATE_STRUCT_ARRAY(cur.stack, PagodaEngine, PAGODA_CALL_DEPTH, 1,
                             vmstate_pagoda_call_frame, PagodaCallFrame),
        VMSTATE_UINT32(cur.depth, PagodaEngine),
        VMSTATE_BOOL(cur.cmd_active, PagodaEngine),
        VMSTATE_UINT64(cur.cmd_addr, PagodaEngine),
        VMSTATE_UINT32(cur.cmd_dwords, PagodaEngine),
        VMSTATE_UINT64(cur.cmd_progress, PagodaEngine),
        VMSTATE_UINT32(cur.cmd_crc, PagodaEngine),
        VMSTATE_UINT32(cur.src_npages, PagodaEngine),
        VMSTATE_UINT32(cur.dst_npages, PagodaEngine),
        VMSTATE_VALIDATE("pagoda cursor sizes", pagoda_cursor_sizes_valid),
        VMSTATE_VARRAY_UINT32(cur.cmd, PagodaEngine, cur.cmd_dwords, 0,
                              vmstate_info_uint32, uint32_t),
        VMSTATE_VARRAY_UINT32_ALLOC(cur.src_list, PagodaEngine, cur.src_npages, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_VARRAY_UINT32_ALLOC(cur.dst_list, PagodaEngine, cur.dst_npages, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_BOOL(cur.waiting, PagodaEngine),
        VMSTATE_UINT64(cur.host_aperture_wait, PagodaEngine),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Migration covers the programming model (registers, contexts, faults, ring
 * positions) and, in a subsection, an engine's place inside the entry it is
 * running: the destination continues it exactly. The TLB is a cache and is
 * rebuilt from page tables.
 */
static const VMStateDescription vmstate_pagoda_engine = {
    .name = "pagoda/engine",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(ring_base, PagodaEngine),
        VMSTATE_UINT32(ring_size, PagodaEngine),
        VMSTATE_UINT32(head, PagodaEngine),
        VMSTATE_UINT32(tail, PagodaEngine),
        VMSTATE_UINT32(kicked_tail, PagodaEngine),
        VMSTATE_UINT64(fence, PagodaEngine),
        VMSTATE_UINT64(aborted_fence, PagodaEngine),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_pagoda_cursor,
        NULL
    },
};

static bool pagoda_fence_wb_needed(void *opaque)
{
    PagodaState *s = opaque;
    unsigned e;

    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        if (s->engine[e].fence_wb) {
            return true;
        }
    }
    return false;
}

QEMU_BUILD_BUG_ON(PAGODA_NUM_ENGINES != 2);

/* The engines' fence writeback addresses, when the driver set one. */
static const VMStateDescription vmstate_pagoda_fence_wb = {
    .name = "pagoda/fence-writeback",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pagoda_fence_wb_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(engine[PAGODA_ENGINE_PAGING].fence_wb, PagodaState),
        VMSTATE_UINT64(engine[PAGODA_ENGINE_RENDER].fence_wb, PagodaState),
        VMSTATE_END_OF_LIST()
    },
};

static bool pagoda_debug_needed(void *opaque)
{
    PagodaState *s = opaque;

    return s->debug;
}

/* The debug controls, when a test set one. */
static const VMStateDescription vmstate_pagoda_debug = {
    .name = "pagoda/debug",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pagoda_debug_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(debug, PagodaState),
        VMSTATE_END_OF_LIST()
    },
};

static int pagoda_post_load(void *opaque, int version_id)
{
    PagodaState *s = opaque;
    uint32_t page, e;

    QEMU_LOCK_GUARD(&s->lock);
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        if (!pagoda_cursor_valid(&s->engine[e])) {
            return -EINVAL;
        }
    }
    if (s->ctx_select >= PAGODA_NUM_CONTEXTS ||
        s->fault_head >= PAGODA_FAULT_QUEUE_DEPTH ||
        s->fault_count > PAGODA_FAULT_QUEUE_DEPTH ||
        (s->engine[PAGODA_ENGINE_PAGING].fence_wb & 7) ||
        (s->engine[PAGODA_ENGINE_RENDER].fence_wb & 7) ||
        (s->debug & ~PAGODA_DEBUG_IMPLEMENTED)) {
        return -EINVAL;
    }
    /* BAR4 accesses index VRAM with these without further checks */
    for (page = 0; page < s->host_aperture_pages; page++) {
        if (s->host_aperture_map[page] &&
            !pagoda_host_aperture_valid(s, page, s->host_aperture_seg[page],
                                        s->host_aperture_map[page] - 1)) {
            return -EINVAL;
        }
    }
    /* BAR4 shows every mapping now: a host aperture wait is over */
    pagoda_host_aperture_rebuild(s);
    s->host_aperture_requested = s->host_aperture_applied = 1;
    for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
        if (s->engine[e].cur.host_aperture_wait) {
            s->engine[e].cur.host_aperture_wait = 1;
        }
    }
    pagoda_tlb_flush(s, -1, 0, 0);
    pagoda_cp_kick(s);
    return 0;
}

/*
 * Version 2: four MSI-X vectors (the vblank one) and the display
 * subsection.
 */
static const VMStateDescription vmstate_pagoda = {
    .name = TYPE_PAGODA,
    .version_id = 2,
    .minimum_version_id = 2,
    .post_load = pagoda_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, PagodaState),
        VMSTATE_MSIX(parent_obj, PagodaState),
        VMSTATE_UINT32(scratch, PagodaState),
        VMSTATE_UINT32(int_status, PagodaState),
        VMSTATE_UINT32(int_enable, PagodaState),
        VMSTATE_UINT32(ctx_select, PagodaState),
        VMSTATE_UINT32(irq_raised, PagodaState),
        VMSTATE_UINT64(gart_base, PagodaState),
        VMSTATE_UINT32(gart_entries, PagodaState),
        VMSTATE_VARRAY_UINT32(host_aperture_map, PagodaState,
                              host_aperture_pages, 0,
                              vmstate_info_uint32, uint32_t),
        VMSTATE_VARRAY_UINT32(host_aperture_seg, PagodaState,
                              host_aperture_pages, 0,
                              vmstate_info_uint8, uint8_t),
        VMSTATE_STRUCT_ARRAY(ctx, PagodaState, PAGODA_NUM_CONTEXTS, 1,
                             vmstate_pagoda_context, PagodaContext),
        VMSTATE_STRUCT_ARRAY(faults, PagodaState, PAGODA_FAULT_QUEUE_DEPTH, 1,
                             vmstate_pagoda_fault, PagodaFaultRecord),
        VMSTATE_UINT32(fault_head, PagodaState),
        VMSTATE_UINT32(fault_count, PagodaState),
        VMSTATE_UINT32(fault_lost, PagodaState),
        VMSTATE_STRUCT_ARRAY(engine, PagodaState, PAGODA_NUM_ENGINES, 1,
                             vmstate_pagoda_engine, PagodaEngine),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_pagoda_display,
        &vmstate_pagoda_fence_wb,
        &vmstate_pagoda_debug,
        NULL
    },
};

static void pagoda_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = pagoda_realize;
    k->exit = pagoda_exit;
    k->config_write = pagoda_write_config;
    k->vendor_id = PAGODA_PCI_VENDOR_ID;
    k->device_id = PAGODA_PCI_DEVICE_ID;
    k->revision = PAGODA_PCI_REVISION;
    k->class_id = PCI_CLASS_DISPLAY_OTHER;
    rc->phases.hold = pagoda_reset_hold;
    dc->desc = "Pagoda GPU (GPU MMU, segments, paging engine, display)";
    dc->vmsd = &vmstate_pagoda;
    device_class_set_props(dc, pagoda_properties);
    object_class_property_set_description(klass, "vram-size",
        "CPU-visible VRAM, segment 1 and BAR2 (power of two, 16M-16G)");
    object_class_property_set_description(klass, "hidden-vram-size",
        "VRAM reachable only through the host aperture, segment 2");
    object_class_property_set_description(klass, "aperture-size",
        "aperture segment (GART over system pages), segment 3");
    object_class_property_set_description(klass, "host-aperture-size",
        "CPU host aperture window, BAR4 (power of two, 1M-1G)");
    object_class_property_set_description(klass, "segment-page-size",
        "page size of the memory segments: 4096 or 65536");
    object_class_property_set_description(klass, "mmu-levels",
        "GPU page-table levels: 2 (resizable root), 3 or 4");
    object_class_property_set_description(klass, "va-bits",
        "GPU virtual address bits (0: 40 with 2 levels, 12+9*levels otherwise)");
    object_class_property_set_description(klass, "xres",
        "preferred display width, first in the mode list (64..max-xres)");
    object_class_property_set_description(klass, "yres",
        "preferred display height (64..max-yres)");
    object_class_property_set_description(klass, "max-xres",
        "largest display width (64..8192)");
    object_class_property_set_description(klass, "max-yres",
        "largest display height (64..8192)");
    set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
}

static void pagoda_instance_init(Object *obj)
{
    qemu_mutex_init(&PAGODA(obj)->lock);
}

/* Not in unrealize: a DOORBELL in flight takes the lock once more. */
static void pagoda_instance_finalize(Object *obj)
{
    qemu_mutex_destroy(&PAGODA(obj)->lock);
}

static const TypeInfo pagoda_info = {
    .name = TYPE_PAGODA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(PagodaState),
    .instance_init = pagoda_instance_init,
    .instance_finalize = pagoda_instance_finalize,
    .class_init = pagoda_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void pagoda_register_types(void)
{
    type_register_static(&pagoda_info);
}

type_init(pagoda_register_types)
