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
#include "system/dma.h"
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

    WITH_RCU_READ_LOCK_GUARD() {
        mr = address_space_translate(s->dma_as, addr, &xlat, &plen, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        usable = memory_region_is_ram(mr) && mr->owner != OBJECT(s) &&
                 !(is_write && mr->readonly);
    }
    if (!usable) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: DMA %s 0x%" PRIx64 " is not guest RAM\n",
                      is_write ? "write to" : "read from", addr);
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    m->host = address_space_map(s->dma_as, addr, &plen, is_write,
                                MEMTXATTRS_UNSPECIFIED);
    if (!m->host || !plen) {
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
        address_space_unmap(s->dma_as, m->host, m->len, m->is_write, used);
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

/* Callers check the mapping with pagoda_host_aperture_valid() first. */
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

/* Host pointer behind BAR4 offset @addr, or NULL if its page is unmapped. */
static uint8_t *host_aperture_ptr(PagodaState *s, hwaddr addr,
                                  MemoryRegion **mr, uint64_t *off)
{
    uint32_t page = addr / s->segment_page_size;
    uint32_t entry = s->host_aperture_map[page];

    if (!entry) {
        return NULL;
    }
    *mr = segment_ram(s, s->host_aperture_seg[page]);
    *off = (uint64_t)(entry - 1) * s->segment_page_size +
           addr % s->segment_page_size;
    return (uint8_t *)memory_region_get_ram_ptr(*mr) + *off;
}

static uint64_t host_aperture_read(void *opaque, hwaddr addr, unsigned size)
{
    PagodaState *s = opaque;
    MemoryRegion *mr;
    uint64_t off;
    uint8_t *p = host_aperture_ptr(s, addr, &mr, &off);

    if (!p) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: read of unmapped host aperture 0x%" HWADDR_PRIx "\n",
                      addr);
        return ~0ull >> (64 - size * 8);
    }
    return ldn_le_p(p, size);
}

static void host_aperture_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    PagodaState *s = opaque;
    MemoryRegion *mr;
    uint64_t off;
    uint8_t *p = host_aperture_ptr(s, addr, &mr, &off);

    if (!p) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: write to unmapped host aperture 0x%" HWADDR_PRIx "\n",
                      addr);
        return;
    }
    stn_le_p(p, size, val);
    memory_region_set_dirty(mr, off, size);
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
    memory_region_init_io(&s->host_aperture, OBJECT(s), &host_aperture_ops, s,
                          "pagoda-host-aperture", s->host_aperture_size);
    pci_register_bar(pdev, PAGODA_BAR_VRAM, bar64, &s->vram);
    pci_register_bar(pdev, PAGODA_BAR_HOST_APERTURE, bar64, &s->host_aperture);

    s->host_aperture_pages = s->host_aperture_size / s->segment_page_size;
    s->host_aperture_map = g_new0(uint32_t, s->host_aperture_pages);
    s->host_aperture_seg = g_new0(uint8_t, s->host_aperture_pages);
}

void pagoda_mem_reset(PagodaState *s)
{
    s->gart_base = 0;
    s->gart_entries = 0;
    memset(s->host_aperture_map, 0,
           s->host_aperture_pages * sizeof(*s->host_aperture_map));
}
