/*
 * Pagoda GPU: segments and physical memory access.
 *
 * Owns the four segments (system memory, CPU-visible VRAM behind BAR2,
 * hidden VRAM, the aperture segment), the GART that backs the aperture
 * segment, and the CPU host aperture (BAR4) whose pages the paging engine
 * remaps onto VRAM pages.
 *
 * Every device access to memory goes through pagoda_mem_map(), which turns
 * a physical address (segment, offset) into the longest contiguous host
 * run it can, so that callers copy whole runs with memcpy and fall back to
 * page-sized pieces only where memory really is discontiguous. System
 * memory is reached through the PCI bus-master address space and must be
 * guest RAM that is not one of the device's own BARs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "system/cpus.h"
#include "system/dma.h"
#include "system/runstate.h"
#include "pagoda_int.h"
#include "trace.h"

/* GART entries read per lookup, to coalesce contiguous aperture pages. */
#define GART_BATCH 64

uint64_t pagoda_segment_size(PagodaState *s, unsigned seg)
{
    switch (seg) {
    case PAGODA_SEG_VRAM:
        return s->vram_size;
    case PAGODA_SEG_VRAM_HIDDEN:
        return s->vram_hidden_size;
    case PAGODA_SEG_APERTURE:
        return s->aperture_size;
    }
    return 0;
}

uint32_t pagoda_segment_reg(PagodaState *s, unsigned seg, unsigned field)
{
    static const uint32_t kind[PAGODA_NUM_SEGMENTS] = {
        PAGODA_SEG_KIND_SYSTEM, PAGODA_SEG_KIND_MEMORY,
        PAGODA_SEG_KIND_MEMORY, PAGODA_SEG_KIND_APERTURE,
    };
    static const uint32_t flags[PAGODA_NUM_SEGMENTS] = {
        PAGODA_SEG_FLAG_CACHE_COHERENT,
        PAGODA_SEG_FLAG_CPU_VISIBLE,
        PAGODA_SEG_FLAG_HOST_APERTURE,
        PAGODA_SEG_FLAG_APERTURE | PAGODA_SEG_FLAG_CACHE_COHERENT,
    };
    bool memory = kind[seg] == PAGODA_SEG_KIND_MEMORY;
    uint64_t size = pagoda_segment_size(s, seg);
    uint64_t base = PAGODA_PADDR(seg, 0ull);

    switch (field) {
    case PAGODA_SEG_KIND:
        return kind[seg];
    case PAGODA_SEG_FLAGS:
        return flags[seg];
    case PAGODA_SEG_PAGE_SIZE:
        return memory ? s->segment_page_size : PAGODA_PAGE_SIZE;
    case PAGODA_SEG_BAR:
        return seg == PAGODA_SEG_VRAM ? PAGODA_BAR_VRAM : PAGODA_SEG_NO_BAR;
    case PAGODA_SEG_SIZE_LO:
        return size;
    case PAGODA_SEG_SIZE_HI:
        return size >> 32;
    case PAGODA_SEG_GPU_BASE_LO:
        return base;
    case PAGODA_SEG_GPU_BASE_HI:
        return base >> 32;
    case PAGODA_SEG_BAR_OFFSET_LO:
    case PAGODA_SEG_BAR_OFFSET_HI:
        return 0;
    }
    return 0;
}

static MemoryRegion *segment_ram(PagodaState *s, unsigned seg)
{
    return seg == PAGODA_SEG_VRAM ? &s->vram : &s->vram_hidden;
}

/* ---- System memory ------------------------------------------------------- */

static int map_system(PagodaState *s, uint64_t addr, uint64_t len,
                      bool is_write, PagodaMap *m)
{
    MemoryRegion *mr;
    hwaddr xlat, plen = len;
    bool usable;

    /*
     * One translation: only guest RAM is mapped (never MMIO, which a
     * bounce buffer would read with its side effects, nor the device's
     * own BARs, nor ROM for writing), the way address_space_map() maps
     * RAM; address_space_unmap() releases what was written (dirty bits,
     * translated code invalidated), a read only drops the reference.
     */
    WITH_RCU_READ_LOCK_GUARD() {
        mr = address_space_translate(s->dma_as, addr, &xlat, &plen, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        usable = plen && memory_region_is_ram(mr) && mr->owner != OBJECT(s) &&
                 !(is_write && mr->readonly);
        if (usable) {
            memory_region_ref(mr);
            m->ram = mr;
            m->host = qemu_map_ram_ptr(mr->ram_block, xlat);
        }
    }
    if (!usable) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: DMA %s 0x%" PRIx64 " is not guest RAM\n",
                      is_write ? "write to" : "read from", addr);
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    m->len = plen;
    m->kind = PAGODA_MAP_RAM;
    return 0;
}

static void map_dummy(PagodaState *s, uint64_t off, uint64_t len,
                      bool is_write, PagodaMap *m)
{
    uint64_t in_page = off & (PAGODA_PAGE_SIZE - 1);

    m->host = (is_write ? s->sink_page : s->zero_page) + in_page;
    m->len = MIN(len, PAGODA_PAGE_SIZE - in_page);
    m->kind = PAGODA_MAP_DUMMY;
}

/* ---- Aperture segment (GART) --------------------------------------------- */

/*
 * Map aperture offset @off: look up its GART entry and the entries after it,
 * extending the run while the system pages stay contiguous.
 */
static int map_aperture(PagodaState *s, uint64_t off, uint64_t len,
                        bool is_write, PagodaMap *m)
{
    uint64_t page = off / PAGODA_GART_PAGE_SIZE;
    uint64_t in_page = off % PAGODA_GART_PAGE_SIZE;
    uint64_t want = DIV_ROUND_UP(in_page + len, PAGODA_GART_PAGE_SIZE);
    uint64_t entries[GART_BATCH];
    uint64_t n, run, sys;

    if (page >= s->gart_entries ||
        PAGODA_PADDR_SEG(s->gart_base) == PAGODA_SEG_APERTURE) {
        map_dummy(s, off, len, is_write, m);
        return 0;
    }
    n = MIN(MIN(want, GART_BATCH), s->gart_entries - page);
    if (pagoda_mem_read(s, s->gart_base + page * sizeof(uint64_t), entries,
                        n * sizeof(uint64_t))) {
        qemu_log_mask(LOG_GUEST_ERROR, "pagoda: GART table unreadable\n");
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    if (!(le64_to_cpu(entries[0]) & PAGODA_GART_VALID)) {
        map_dummy(s, off, len, is_write, m);
        return 0;
    }
    sys = le64_to_cpu(entries[0]) & PAGODA_GART_ADDR_MASK;
    for (run = 1; run < n; run++) {
        uint64_t e = le64_to_cpu(entries[run]);

        if (!(e & PAGODA_GART_VALID) ||
            (e & PAGODA_GART_ADDR_MASK) != sys + run * PAGODA_GART_PAGE_SIZE) {
            break;
        }
    }
    return map_system(s, sys + in_page,
                      MIN(len, run * PAGODA_GART_PAGE_SIZE - in_page),
                      is_write, m);
}

int pagoda_gart_write(PagodaState *s, uint32_t first, uint32_t count,
                      const uint64_t *pages)
{
    g_autofree uint64_t *entries = NULL;
    uint32_t i;

    if (first > s->gart_entries || count > s->gart_entries - first) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: aperture pages %u+%u beyond the GART (%u)\n",
                      first, count, s->gart_entries);
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    entries = g_new(uint64_t, count);
    for (i = 0; i < count; i++) {
        uint64_t pa = pages ? pages[i] : 0;

        if (pages && (pa & ~PAGODA_GART_ADDR_MASK)) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: aperture page 0x%" PRIx64 " is not a 4 KiB "
                          "aligned system address\n", pa);
            return PAGODA_FAULT_BAD_COMMAND;
        }
        entries[i] = cpu_to_le64(pages ? pa | PAGODA_GART_VALID : 0);
    }
    return pagoda_mem_write(s, s->gart_base + (uint64_t)first * sizeof(uint64_t),
                            entries, (uint64_t)count * sizeof(uint64_t));
}

/* ---- Physical access ----------------------------------------------------- */

int pagoda_mem_map(PagodaState *s, uint64_t paddr, uint64_t len,
                   bool is_write, PagodaMap *m)
{
    unsigned seg = PAGODA_PADDR_SEG(paddr);
    uint64_t off = PAGODA_PADDR_OFFSET(paddr);
    uint64_t size;

    m->is_write = is_write;
    if (paddr & PAGODA_PADDR_RESERVED) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: malformed physical address 0x%" PRIx64 "\n", paddr);
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    switch (seg) {
    case PAGODA_SEG_SYSTEM:
        return map_system(s, off, len, is_write, m);
    case PAGODA_SEG_VRAM:
    case PAGODA_SEG_VRAM_HIDDEN:
        size = pagoda_segment_size(s, seg);
        if (off >= size) {
            break;
        }
        m->kind = PAGODA_MAP_VRAM;
        m->vram = segment_ram(s, seg);
        m->vram_offset = off;
        m->host = (uint8_t *)memory_region_get_ram_ptr(m->vram) + off;
        m->len = MIN(len, size - off);
        return 0;
    case PAGODA_SEG_APERTURE:
        if (off >= s->aperture_size) {
            break;
        }
        return map_aperture(s, off, MIN(len, s->aperture_size - off),
                            is_write, m);
    }
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: physical address 0x%" PRIx64 " outside segment %u\n",
                  paddr, seg);
    return PAGODA_FAULT_OUT_OF_SEGMENT;
}

void pagoda_mem_unmap(PagodaState *s, PagodaMap *m, uint64_t used)
{
    switch (m->kind) {
    case PAGODA_MAP_RAM:
        if (m->is_write) {
            address_space_unmap(s->dma_as, m->host, m->len, true, used);
        } else {
            memory_region_unref(m->ram);
        }
        break;
    case PAGODA_MAP_VRAM:
        if (m->is_write && used) {
            memory_region_set_dirty(m->vram, m->vram_offset, used);
        }
        break;
    case PAGODA_MAP_DUMMY:
        break;
    }
}

static int mem_rw(PagodaState *s, uint64_t paddr, uint8_t *buf, uint64_t len,
                  bool is_write)
{
    PagodaMap m;
    int err;

    while (len) {
        err = pagoda_mem_map(s, paddr, len, is_write, &m);
        if (err) {
            return err;
        }
        if (is_write) {
            memcpy(m.host, buf, m.len);
        } else {
            memcpy(buf, m.host, m.len);
        }
        pagoda_mem_unmap(s, &m, m.len);
        paddr += m.len;
        buf += m.len;
        len -= m.len;
    }
    return 0;
}

int pagoda_mem_read(PagodaState *s, uint64_t paddr, void *buf, uint64_t len)
{
    return mem_rw(s, paddr, buf, len, false);
}

int pagoda_mem_write(PagodaState *s, uint64_t paddr, const void *buf,
                     uint64_t len)
{
    return mem_rw(s, paddr, (uint8_t *)buf, len, true);
}

/* ---- CPU host aperture (BAR4) -------------------------------------------- */

bool pagoda_host_aperture_valid(PagodaState *s, uint32_t page, unsigned seg,
                                uint32_t seg_page)
{
    if (page >= s->host_aperture_pages ||
        (seg != PAGODA_SEG_VRAM && seg != PAGODA_SEG_VRAM_HIDDEN) ||
        seg_page >= pagoda_segment_size(s, seg) / s->segment_page_size) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: host aperture page %u cannot map page %u of "
                      "segment %u\n", page, seg_page, seg);
        return false;
    }
    return true;
}

/*
 * A mapped page of BAR4 is an alias of the segment page it shows, so that
 * CPU accesses go straight to the segment's RAM; unmapped pages fall
 * through to host_aperture_unmapped.
 */
static MemoryRegion *host_aperture_alias(PagodaState *s, uint32_t page,
                                         unsigned seg)
{
    uint32_t i = (seg == PAGODA_SEG_VRAM_HIDDEN) * s->host_aperture_pages + page;

    if (!s->host_aperture_alias[i]) {
        g_autofree char *name = g_strdup_printf("pagoda-host-aperture-%u.%u",
                                                page, seg);

        s->host_aperture_alias[i] = g_new0(MemoryRegion, 1);
        memory_region_init_alias(s->host_aperture_alias[i], OBJECT(s), name,
                                 segment_ram(s, seg), 0, s->segment_page_size);
    }
    return s->host_aperture_alias[i];
}

static void host_aperture_hide(PagodaState *s, uint32_t page)
{
    if (s->host_aperture_shown[page]) {
        memory_region_del_subregion(&s->host_aperture,
                                    s->host_aperture_shown[page]);
        s->host_aperture_shown[page] = NULL;
    }
}

static void host_aperture_show(PagodaState *s, uint32_t page)
{
    MemoryRegion *alias = host_aperture_alias(s, page,
                                              s->host_aperture_seg[page]);

    memory_region_set_alias_offset(alias,
                                   (uint64_t)(s->host_aperture_map[page] - 1) *
                                   s->segment_page_size);
    memory_region_add_subregion_overlap(&s->host_aperture,
                                        (hwaddr)page * s->segment_page_size,
                                        alias, 1);
    s->host_aperture_shown[page] = alias;
}

/*
 * Callers check the mapping with pagoda_host_aperture_valid() first, and
 * make BAR4 follow with pagoda_host_aperture_request().
 */
void pagoda_host_aperture_map(PagodaState *s, uint32_t page, unsigned seg,
                              uint32_t seg_page)
{
    s->host_aperture_map[page] = seg_page + 1;
    s->host_aperture_seg[page] = seg;
}

void pagoda_host_aperture_unmap(PagodaState *s, uint32_t page)
{
    s->host_aperture_map[page] = 0;
}

/*
 * Make BAR4 show what host_aperture_map says. Only with the vCPUs stopped:
 * a TCG vCPU that runs on while the memory map changes may resolve an I/O
 * access it looked up in the old map against the new one.
 */
void pagoda_host_aperture_rebuild(PagodaState *s)
{
    uint32_t page;

    memory_region_transaction_begin();
    for (page = 0; page < s->host_aperture_pages; page++) {
        host_aperture_hide(s, page);
        if (s->host_aperture_map[page]) {
            host_aperture_show(s, page);
        }
    }
    memory_region_transaction_commit();
}

/*
 * The device's lock is taken with the vCPUs stopped, not before: a vCPU in
 * a DOORBELL's slice holds it, and stops only once that slice is done.
 */
static void host_aperture_apply(void *opaque)
{
    PagodaState *s = opaque;
    bool running = runstate_is_running();

    if (running) {
        pause_all_vcpus();
    }
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        uint64_t generation = s->host_aperture_requested;

        trace_pagoda_host_aperture_apply(generation);
        pagoda_host_aperture_rebuild(s);
        s->host_aperture_applied = generation;
        /* the commands that waited for it complete */
        pagoda_cp_kick(s);
    }
    if (running) {
        resume_all_vcpus();
    }
}

/*
 * Ask for BAR4 to follow host_aperture_map; returns the generation that
 * host_aperture_applied reaches once it does.
 */
uint64_t pagoda_host_aperture_request(PagodaState *s)
{
    qemu_bh_schedule(s->host_aperture_bh);
    return ++s->host_aperture_requested;
}

static uint64_t host_aperture_read(void *opaque, hwaddr addr, unsigned size)
{
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: read of unmapped host aperture 0x%" HWADDR_PRIx "\n",
                  addr);
    return ~0ull >> (64 - size * 8);
}

static void host_aperture_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: write to unmapped host aperture 0x%" HWADDR_PRIx "\n",
                  addr);
}

static const MemoryRegionOps host_aperture_ops = {
    .read = host_aperture_read,
    .write = host_aperture_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = false,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/* ---- Lifecycle ----------------------------------------------------------- */

void pagoda_mem_realize(PagodaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint8_t bar64 = PCI_BASE_ADDRESS_SPACE_MEMORY |
                    PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH;

    if (!memory_region_init_ram(&s->vram, OBJECT(s), "pagoda-vram",
                                s->vram_size, errp)) {
        return;
    }
    if (!memory_region_init_ram(&s->vram_hidden, OBJECT(s), "pagoda-vram-hidden",
                                MAX(s->vram_hidden_size, 64 * KiB), errp)) {
        return;
    }
    memory_region_init(&s->host_aperture, OBJECT(s), "pagoda-host-aperture",
                       s->host_aperture_size);
    memory_region_init_io(&s->host_aperture_unmapped, OBJECT(s),
                          &host_aperture_ops, s, "pagoda-host-aperture-unmapped",
                          s->host_aperture_size);
    memory_region_add_subregion(&s->host_aperture, 0, &s->host_aperture_unmapped);
    pci_register_bar(pdev, PAGODA_BAR_VRAM, bar64, &s->vram);
    pci_register_bar(pdev, PAGODA_BAR_HOST_APERTURE, bar64, &s->host_aperture);

    s->host_aperture_pages = s->host_aperture_size / s->segment_page_size;
    s->host_aperture_map = g_new0(uint32_t, s->host_aperture_pages);
    s->host_aperture_seg = g_new0(uint8_t, s->host_aperture_pages);
    s->host_aperture_alias = g_new0(MemoryRegion *, 2 * s->host_aperture_pages);
    s->host_aperture_shown = g_new0(MemoryRegion *, s->host_aperture_pages);
    s->host_aperture_bh = qemu_bh_new(host_aperture_apply, s);
}

/* Also for a device that failed to realize part-way. */
void pagoda_mem_unrealize(PagodaState *s)
{
    uint32_t i;

    g_clear_pointer(&s->host_aperture_bh, qemu_bh_delete);
    for (i = 0; s->host_aperture_shown && i < s->host_aperture_pages; i++) {
        host_aperture_hide(s, i);
    }
    for (i = 0; s->host_aperture_alias && i < 2 * s->host_aperture_pages; i++) {
        if (s->host_aperture_alias[i]) {
            object_unparent(OBJECT(s->host_aperture_alias[i]));
        }
    }
    /*
     * A subregion holds a reference on its owner, the device: one left in
     * place would keep an unplugged device from ever being freed.
     */
    if (s->host_aperture_unmapped.container) {
        memory_region_del_subregion(&s->host_aperture, &s->host_aperture_unmapped);
    }
    g_free(s->host_aperture_alias);
    g_free(s->host_aperture_shown);
    g_free(s->host_aperture_map);
    g_free(s->host_aperture_seg);
    s->host_aperture_alias = NULL;
    s->host_aperture_shown = NULL;
    s->host_aperture_map = NULL;
    s->host_aperture_seg = NULL;
}

void pagoda_mem_reset(PagodaState *s)
{
    s->gart_base = 0;
    s->gart_entries = 0;
    memset(s->host_aperture_map, 0,
           s->host_aperture_pages * sizeof(*s->host_aperture_map));
    pagoda_host_aperture_request(s);
}
