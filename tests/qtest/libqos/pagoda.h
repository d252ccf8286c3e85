/*
 * libqos driver for the Pagoda GPU: the "pagoda" node of the qos graph (and
 * the "pagoda-cp" and "pagoda-mmu" interfaces it produces, which give the
 * same QPagoda to those tests) and
 * helpers to program it from qtests (registers, rings, command buffers,
 * page tables built in guest memory).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QOS_PAGODA_H
#define QOS_PAGODA_H

#include "qgraph.h"
#include "pci.h"
#include "malloc.h"
#include "pagoda/pagoda_hw.h"

typedef struct QPagoda {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar mmio;
    QPCIBar vram;
    QPCIBar host_aperture;
    uint64_t vram_bar_size;
    uint64_t host_aperture_bar_size;
    QGuestAllocator *alloc;
    /* software state of the two rings */
    uint64_t ring_base[PAGODA_NUM_ENGINES];
    uint32_t ring_size[PAGODA_NUM_ENGINES];
    uint32_t ring_tail[PAGODA_NUM_ENGINES];
    uint64_t next_fence[PAGODA_NUM_ENGINES];
} QPagoda;

/* Enable the device (bus master, BARs), start both rings. */
void pagoda_start(QPagoda *d, QGuestAllocator *alloc);
/*
 * Another Pagoda of the test machine, at @devfn on @d's bus (a linked GPU
 * the test's command line added): attached, its rings started, sharing
 * @d's allocator.
 */
void pagoda_start_other(QPagoda *other, QPagoda *d, uint8_t devfn);
/*
 * Enable the device and map its BARs, its rings as they are (a device
 * migrated from one pagoda_start() set up, @d's software state with it).
 */
void pagoda_attach(QPagoda *d);

uint32_t pagoda_rd(QPagoda *d, uint32_t reg);
void pagoda_wr(QPagoda *d, uint32_t reg, uint32_t val);
uint64_t pagoda_rd64(QPagoda *d, uint32_t reg_lo);
void pagoda_wr64(QPagoda *d, uint32_t reg_lo, uint64_t val);

/* Guest memory: zeroed, aligned to @align (a power of two, >= 4096). */
uint64_t pagoda_alloc(QPagoda *d, uint64_t size, uint64_t align);
void pagoda_memwrite(QPagoda *d, uint64_t addr, const void *buf, size_t len);
void pagoda_memread(QPagoda *d, uint64_t addr, void *buf, size_t len);
void pagoda_memset(QPagoda *d, uint64_t addr, uint8_t byte, size_t len);
uint64_t pagoda_readq(QPagoda *d, uint64_t addr);
void pagoda_writeq(QPagoda *d, uint64_t addr, uint64_t val);

/* ---- Command buffers ----------------------------------------------------- */

typedef struct PagodaCmds {
    GArray *dw;     /* uint32_t */
} PagodaCmds;

void pagoda_cmds_init(PagodaCmds *c);
void pagoda_cmds_free(PagodaCmds *c);
void pagoda_cmd_raw(PagodaCmds *c, const uint32_t *dw, size_t n);
void pagoda_cmd_nop(PagodaCmds *c, uint32_t dwords);
void pagoda_cmd_signal(PagodaCmds *c, uint64_t addr, uint64_t value, bool irq);
void pagoda_cmd_wait(PagodaCmds *c, uint64_t addr, uint64_t value);
void pagoda_cmd_transfer(PagodaCmds *c, uint32_t flags, uint64_t src,
                         uint64_t dst, uint64_t size);
void pagoda_cmd_fill(PagodaCmds *c, uint64_t dst, uint32_t pattern,
                     uint64_t size);
void pagoda_cmd_vtransfer(PagodaCmds *c, uint32_t flags, uint64_t src,
                          uint64_t dst, uint64_t size);
void pagoda_cmd_vfill(PagodaCmds *c, uint32_t flags, uint64_t dst,
                      uint32_t pattern, uint64_t size);
void pagoda_cmd_update_pt(PagodaCmds *c, uint32_t flags, uint32_t level,
                          uint64_t table, uint32_t start, uint32_t count,
                          const uint64_t *ptes);
void pagoda_cmd_copy_ptes(PagodaCmds *c, uint64_t src_table, uint32_t src_idx,
                          uint64_t dst_table, uint32_t dst_idx, uint32_t count);
void pagoda_cmd_flush_tlb(PagodaCmds *c, uint32_t flags, uint32_t ctx,
                          uint64_t va, uint64_t size);
void pagoda_cmd_map_aperture(PagodaCmds *c, uint32_t first, uint32_t count,
                             const uint64_t *pages);
void pagoda_cmd_unmap_aperture(PagodaCmds *c, uint32_t first, uint32_t count);
void pagoda_cmd_map_host_aperture(PagodaCmds *c, uint32_t seg, uint32_t count,
                                  const uint32_t *pages,
                                  const uint32_t *seg_pages);
void pagoda_cmd_unmap_host_aperture(PagodaCmds *c, uint32_t count,
                                    const uint32_t *pages);
void pagoda_cmd_copy(PagodaCmds *c, uint64_t src, uint64_t dst, uint64_t size);
void pagoda_cmd_fill32(PagodaCmds *c, uint64_t dst, uint32_t pattern,
                       uint64_t size);
void pagoda_cmd_write_imm(PagodaCmds *c, uint64_t dst, const uint32_t *vals,
                          uint32_t count);
void pagoda_cmd_crc32(PagodaCmds *c, uint64_t src, uint64_t size, uint64_t dst);
void pagoda_cmd_jump(PagodaCmds *c, uint64_t target, uint32_t length);
void pagoda_cmd_call(PagodaCmds *c, uint64_t target, uint32_t length);
uint32_t pagoda_cmds_bytes(PagodaCmds *c);

/* ---- Submission ---------------------------------------------------------- */

/* Copy @c into fresh guest memory and return its address. */
uint64_t pagoda_cmds_upload(QPagoda *d, PagodaCmds *c);
/* Queue one ring entry and move TAIL past it, no doorbell; returns its fence. */
uint64_t pagoda_ring_put(QPagoda *d, unsigned engine, uint64_t addr, uint32_t length,
                         uint16_t ctx, uint16_t flags, uint64_t reserved);
/* Queue one ring entry and ring the doorbell; returns its fence. */
uint64_t pagoda_submit_entry(QPagoda *d, unsigned engine, uint64_t addr,
                             uint32_t length, uint16_t ctx, uint16_t flags,
                             uint64_t reserved);
/* The same with the reserved field zero, as a driver would submit. */
uint64_t pagoda_submit(QPagoda *d, unsigned engine, uint64_t addr,
                       uint32_t length, uint16_t ctx, uint16_t flags);
/* Upload @c to system memory, submit it as a physical ring entry with
 * @flags and wait until it retires (virtual entries: use pagoda_submit). */
uint64_t pagoda_run(QPagoda *d, unsigned engine, PagodaCmds *c, uint16_t ctx,
                    uint16_t flags);
/* Wait until ENG_FENCE of @engine reaches @fence; false on timeout. */
bool pagoda_wait_fence(QPagoda *d, unsigned engine, uint64_t fence);
/* Wait until the engine is idle; false on timeout. */
bool pagoda_wait_idle(QPagoda *d, unsigned engine);

/* ---- Faults -------------------------------------------------------------- */

typedef struct PagodaFaultInfo {
    uint32_t context, engine, level, access, code, flags;
    uint64_t va, fence;
} PagodaFaultInfo;

/* Pop the oldest fault into @f; false if the queue is empty. */
bool pagoda_pop_fault(QPagoda *d, PagodaFaultInfo *f);
void pagoda_resume_context(QPagoda *d, uint32_t ctx);

/* ---- GPU virtual memory built by the CPU in guest memory ------------------ */

typedef struct PagodaVM {
    QPagoda *d;
    uint32_t ctx;
    uint32_t levels;
    uint32_t bits[PAGODA_MMU_MAX_LEVELS];
    uint64_t root;          /* PAGODA_PADDR of the root table */
    uint32_t root_entries;
    /*
     * Where tables created from now on go: PAGODA_SEG_SYSTEM (guest RAM,
     * the default) or PAGODA_SEG_VRAM (written through BAR2, placed upwards
     * from VRAM offset vram_next). May be changed between calls.
     */
    uint32_t table_seg;
    uint64_t vram_next;
} PagodaVM;

/* Create a context's address space with @root_entries root entries. */
void pagoda_vm_init(PagodaVM *vm, QPagoda *d, uint32_t ctx,
                    uint32_t root_entries);
/* The same with the root and every later table in VRAM from @vram_offset. */
void pagoda_vm_init_vram(PagodaVM *vm, QPagoda *d, uint32_t ctx,
                         uint32_t root_entries, uint64_t vram_offset);
/* CPU (guest physical) address of a system memory or VRAM PAGODA_PADDR. */
uint64_t pagoda_cpu_addr(QPagoda *d, uint64_t paddr);
/* PAGODA_PADDR of the table at @level covering @va, created if absent.
 * @leaf64 picks a 64 KiB-page leaf table when level 0 is created. */
uint64_t pagoda_vm_table(PagodaVM *vm, uint64_t va, uint32_t level,
                         bool leaf64);
/* Map [va, va+size) to physical pages starting at @paddr (PAGODA_PADDR),
 * with pages of 4 KiB (page = 4096) or 64 KiB in 64 KiB leaf tables
 * (page = 65536), adding @flags (VALID is implied). */
void pagoda_vm_map(PagodaVM *vm, uint64_t va, uint64_t paddr, uint64_t size,
                   uint64_t page, uint64_t flags);
/* Write @pte at @level for @va directly (large pages, invalid entries...). */
void pagoda_vm_set_pte(PagodaVM *vm, uint64_t va, uint32_t level, uint64_t pte);
uint64_t pagoda_vm_get_pte(PagodaVM *vm, uint64_t va, uint32_t level);

#endif
