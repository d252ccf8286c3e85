/*
 * Pagoda GPU: device state shared by the files of the model.
 *
 * pagoda.c         PCI function, BARs, register file, interrupts, faults, reset
 * pagoda_mem.c     segments, physical access, aperture segment (GART), host aperture
 * pagoda_mmu.c     per-context page-table walks and the TLB
 * pagoda_dma.c     copy, fill and checksum over physical or virtual spans
 * pagoda_cp.c      command processor: rings, scheduling, render commands
 * pagoda_paging.c  paging commands
 * pagoda_display.c display controller: scanout registers, vertical blanks,
 *                  the QEMU graphic console
 *
 * All device code runs under the BQL: MMIO handlers on vCPU threads and the
 * command processor in a bottom half of the main loop. No state is shared
 * with another thread.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_DISPLAY_PAGODA_INT_H
#define HW_DISPLAY_PAGODA_INT_H

#include "hw/pci/pci_device.h"
#include "qemu/lockable.h"
#include "qemu/timer.h"
#include "system/runstate.h"
#include "pagoda/pagoda_hw.h"

#define TYPE_PAGODA "pagoda"
OBJECT_DECLARE_SIMPLE_TYPE(PagodaState, PAGODA)

#define PAGODA_PAGE_SIZE 4096ull

/* ---- Memory access -------------------------------------------------- */

/*
 * A contiguous piece of device-reachable memory, obtained with
 * pagoda_mem_map() and released with pagoda_mem_unmap().
 */
typedef struct PagodaMap {
    uint8_t *host;
    uint64_t len;
    bool is_write;
    /* how to release it */
    enum { PAGODA_MAP_RAM, PAGODA_MAP_VRAM, PAGODA_MAP_DUMMY } kind;
    MemoryRegion *ram;          /* PAGODA_MAP_RAM: referenced while mapped */
    MemoryRegion *vram;
    uint64_t vram_offset;
} PagodaMap;

/* ---- MMU ---------------------------------------------------------------- */

typedef struct PagodaTlbEntry {
    uint64_t vpn;           /* va >> page shift */
    uint64_t paddr;         /* physical address of the page (PAGODA_PADDR) */
    uint64_t stamp;         /* last use, for LRU within the set */
    uint16_t ctx;
    uint8_t shift;          /* page shift: 12, 16, 21, 30, 39 */
    uint8_t adapter;        /* PTE_ADAPTER: 0 this GPU, else a linked one */
    bool valid, read_only, no_execute, zero;
} PagodaTlbEntry;

/* Set-associative arrays, one per page size class. */
#define PAGODA_TLB_WAYS 4
#define PAGODA_TLB4K_SETS 1024
#define PAGODA_TLB64K_SETS 256
#define PAGODA_TLB_LARGE_ENTRIES 32 /* fully associative, 2 MiB and larger */

/* Page-walk cache entry: the leaf table of a 2 MiB region. */
typedef struct PagodaPwcEntry {
    bool valid;
    bool leaf64;
    uint16_t ctx;
    uint64_t region;        /* va >> 21 */
    uint64_t table;
} PagodaPwcEntry;
#define PAGODA_PWC_ENTRIES 64

typedef struct PagodaTlb {
    PagodaTlbEntry e4k[PAGODA_TLB4K_SETS * PAGODA_TLB_WAYS];
    PagodaTlbEntry e64k[PAGODA_TLB64K_SETS * PAGODA_TLB_WAYS];
    PagodaTlbEntry large[PAGODA_TLB_LARGE_ENTRIES];
    PagodaPwcEntry pwc[PAGODA_PWC_ENTRIES];
    /*
     * Valid entries in the three arrays: TLB_VALID reads it, and a flush
     * stops scanning once it reaches zero, so that flushing an empty or
     * sparsely filled TLB does not visit every entry.
     */
    unsigned valid;
    uint64_t clock;
    uint64_t hits, misses;
    uint32_t flushes;
} PagodaTlb;

/* Result of a translation: the page that holds va. */
typedef struct PagodaXlat {
    uint64_t paddr;         /* physical address of va */
    uint64_t page_left;     /* bytes from va to the end of its page */
    uint8_t adapter;        /* whose memory paddr is in: PTE_ADAPTER */
    bool zero;              /* reads return zero, writes are dropped */
} PagodaXlat;

/* A fault about to be recorded (see pagoda_fault()). */
typedef struct PagodaFault {
    uint32_t code;
    uint32_t level;         /* 0xff when not raised by a walk */
    uint64_t va;
    uint32_t access;
} PagodaFault;

typedef struct PagodaContext {
    uint64_t root;          /* physical address of the root table */
    uint64_t root_staged;   /* ROOT_LO/HI before ROOT_ENTRIES commits */
    uint32_t root_entries;
    bool halted;
} PagodaContext;

typedef struct PagodaFaultRecord {
    uint32_t context, engine, level, access, code, flags;
    uint64_t va, fence;
} PagodaFaultRecord;

/* ---- Command processor -------------------------------------------------- */

typedef struct PagodaRingEntry {
    uint64_t addr;
    uint32_t length;
    uint16_t context;
    uint16_t flags;
    uint64_t fence;
} PagodaRingEntry;

/* Largest page list a TRANSFER may use (per side): 1 GiB of 4 KiB pages. */
#define PAGODA_MAX_LIST_PAGES   (256 * 1024)

/* A buffer a CALL will return to: the command after the CALL, its end. */
typedef struct PagodaCallFrame {
    uint64_t pos, end;
} PagodaCallFrame;

/*
 * Where an engine is in its work: everything that changes while it runs
 * an entry, and nothing else. Migrated as it is (its own subsection), so
 * that a destination continues exactly where the source stopped.
 */
typedef struct PagodaCursor {
    /* The ring entry being run, copied from the ring once. */
    bool active;
    PagodaRingEntry entry;
    uint64_t pos, end;          /* command cursor in the current buffer */
    PagodaCallFrame stack[PAGODA_CALL_DEPTH];
    uint32_t depth;

    /* The command being run, copied from memory once. */
    bool cmd_active;
    uint32_t *cmd;              /* PAGODA_CMD_MAX_DWORDS dwords */
    uint64_t cmd_addr;          /* where it was fetched from */
    uint32_t cmd_dwords;
    uint64_t cmd_progress;      /* bytes done by a resumable command */
    uint32_t cmd_crc;           /* running CRC32 of a resumable CRC32 */
    uint64_t *src_list, *dst_list;  /* page lists of a TRANSFER */
    uint32_t src_npages, dst_npages;
    bool waiting;
    /* host aperture update the running command waits for, 0 = none */
    uint64_t host_aperture_wait;
} PagodaCursor;

typedef struct PagodaEngine {
    uint32_t id;
    uint32_t caps;
    uint64_t ring_base;
    uint32_t ring_size;
    uint32_t head, tail;
    uint32_t kicked_tail;       /* TAIL as of the last DOORBELL */
    bool retired_uncompleted;   /* since a DOORBELL's slice began (DOORBELL_POLL) */
    uint64_t fence, aborted_fence;
    uint64_t fence_wb;          /* where ENG_FENCE is written, 0 = off */
    PagodaCursor cur;
} PagodaEngine;

/* ---- Display controller ------------------------------------------------ */

/* Vertical blanks per 1000 s (DISP_REFRESH): 60 Hz. */
#define PAGODA_DISP_REFRESH         60000

/* Interrupt causes INT_ENABLE accepts (PAGODA_INT_ALL leaves out VBLANK). */
#define PAGODA_INT_IMPLEMENTED      (PAGODA_INT_ALL | PAGODA_INT_VBLANK)

/* The staged cursor registers CURSOR .. CURSOR_POS, and their latched copy. */
typedef struct PagodaDispCursor {
    uint64_t surface;
    uint32_t size, stride, pos;
} PagodaDispCursor;

/* The staged registers SURFACE .. CONTROL and the cursor's, and their latched copy. */
typedef struct PagodaScanout {
    uint64_t surface;
    uint32_t width, height, stride, format, control;
    PagodaDispCursor cursor;
} PagodaScanout;

typedef struct PagodaDisplay {
    /* properties: preferred and maximum mode */
    uint32_t xres, yres;
    uint32_t max_xres, max_yres;
    uint32_t modes[PAGODA_DISP_MAX_MODES];  /* width | height << 16 */
    uint32_t num_modes;

    PagodaScanout staged;       /* as written */
    PagodaScanout latched;      /* taken by the last vblank after a FLIP */
    bool flip_pending;
    bool fault;                 /* latched state enabled but refused: black */
    uint64_t frame;             /* vertical blanks since reset */
    QEMUTimer *vblank_timer;    /* QEMU_CLOCK_VIRTUAL, armed while needed */
    int64_t next_vblank;        /* deadline of vblank_timer when armed */
    int64_t last_vblank;        /* virtual clock of the last vblank, -1: none */
    int64_t flip_time;          /* virtual clock of the pending flip's FLIP */

    /* console */
    QemuConsole *con;
    struct DisplaySurface *surface; /* ours, owned by the console */
    uint32_t black_width;       /* size shown while nothing scans out */
    uint32_t black_height;
    bool full_update;           /* redraw every line at the next update */
    uint8_t *line;              /* one source line, max_xres * 4 bytes */
    uint32_t *pixels;           /* one converted line */
    uint32_t *cursor;           /* the latched cursor image, as read */
} PagodaDisplay;

/* ---- Linked adapters ------------------------------------------------------ */

/*
 * A link of GPUs, shared by its members: each -device pagoda,link=<first>
 * joins the link of its first GPU, made when the second one joins. It goes
 * with its last member.
 */
typedef struct PagodaLink {
    uint32_t id;                    /* LINK_ID: 1 for the first link made */
    unsigned members_left;          /* members still realized */
    PagodaState *members[PAGODA_LINK_MAX_ADAPTERS]; /* NULL: absent */
} PagodaLink;

/* ---- Device ------------------------------------------------------------- */

/* An engine's DOORBELL register: a region of its own in BAR0 (pagoda_cp.c). */
typedef struct PagodaDoorbell {
    MemoryRegion mr;
    PagodaState *s;
    PagodaEngine *eng;
} PagodaDoorbell;

struct PagodaState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion vram;          /* segment 1, BAR2 */
    MemoryRegion vram_hidden;   /* segment 2, not mapped */
    MemoryRegion host_aperture; /* BAR4: container of the two below */
    MemoryRegion host_aperture_unmapped; /* background: unmapped pages */
    AddressSpace *dma_as;

    /* properties */
    PagodaState *link_first;    /* "link": the first GPU of our link */
    uint64_t vram_size;
    uint64_t vram_hidden_size;
    uint64_t aperture_size;
    uint64_t host_aperture_size;
    uint32_t segment_page_size;
    uint32_t mmu_levels;
    uint32_t va_bits;

    PagodaLink *link;           /* NULL: not linked */
    uint32_t link_index;        /* LINK_INDEX */

    /* registers */
    uint32_t scratch;
    uint32_t debug;             /* PAGODA_REG_DEBUG */
    uint32_t int_status;
    uint32_t int_enable;
    uint32_t ctx_select;

    /* segments and apertures */
    uint64_t gart_base;
    uint32_t gart_entries;
    uint32_t host_aperture_pages;
    uint32_t *host_aperture_map;    /* per page: segment page + 1, 0 = unmapped */
    uint8_t *host_aperture_seg;     /* per page: segment id */
    /*
     * Per page and segment (VRAM, then hidden VRAM: 2 * pages), the alias
     * that shows a segment page there, made on first use and kept; the
     * one in BAR4 now, per page, or NULL.
     */
    MemoryRegion **host_aperture_alias;
    MemoryRegion **host_aperture_shown;
    /*
     * BAR4 follows host_aperture_map in a bottom half that stops the
     * vCPUs around the memory map update (pagoda_mem.c): updates asked
     * for and done so far.
     */
    QEMUBH *host_aperture_bh;
    uint64_t host_aperture_requested, host_aperture_applied;
    uint8_t zero_page[PAGODA_PAGE_SIZE];
    uint8_t sink_page[PAGODA_PAGE_SIZE];

    /* MMU */
    uint32_t level_bits[PAGODA_MMU_MAX_LEVELS];
    PagodaContext ctx[PAGODA_NUM_CONTEXTS];
    PagodaTlb *tlb;

    /* faults */
    PagodaFaultRecord faults[PAGODA_FAULT_QUEUE_DEPTH];
    uint32_t fault_head, fault_count, fault_lost;

    /*
     * The device's lock: engines, contexts, MMU and TLB, faults, the host
     * aperture's map, the interrupt status. Taken after the big lock where
     * both are: register accesses, bottom halves, timers, resets and
     * migration hold the big lock and take this one. A DOORBELL's slice
     * runs holding this one only (pagoda_cp.c), so it never waits for the
     * big lock while holding it. A link member takes the other members'
     * locks only to join or leave the link, with the big lock held, in
     * link order (pagoda_link.c).
     */
    QemuMutex lock;
    bool gone;                  /* unrealized: a slice in flight stops */
    uint32_t irq_deferred;      /* causes raised by a DOORBELL's slice (pagoda_raise_irq()) */
    bool in_doorbell;           /* a DOORBELL's slice runs */

    /* command processor */
    PagodaEngine engine[PAGODA_NUM_ENGINES];
    PagodaDoorbell doorbell[PAGODA_NUM_ENGINES];
    QEMUBH *cp_bh;
    QEMUTimer *cp_wait_timer;
    VMChangeStateEntry *cp_vmstate;     /* pauses the engines with the VM */
    uint32_t irq_raised;            /* vectors already signalled */

    /* display controller */
    PagodaDisplay disp;
};

/* pagoda.c */
void pagoda_raise_irq(PagodaState *s, uint32_t bits);
void pagoda_flush_irq(PagodaState *s);
bool pagoda_powered(PagodaState *s);
void pagoda_fault(PagodaState *s, const PagodaEngine *eng, const PagodaFault *f);
void pagoda_queue_fault(PagodaState *s, const PagodaFaultRecord *r);

/* pagoda_mem.c */
void pagoda_mem_realize(PagodaState *s, Error **errp);
void pagoda_mem_reset(PagodaState *s);
uint64_t pagoda_segment_size(PagodaState *s, unsigned seg);
uint32_t pagoda_segment_reg(PagodaState *s, unsigned seg, unsigned field);
int pagoda_mem_map(PagodaState *s, uint64_t paddr, uint64_t len,
                   bool is_write, PagodaMap *m);
void pagoda_mem_unmap(PagodaState *s, PagodaMap *m, uint64_t used);
int pagoda_mem_read(PagodaState *s, uint64_t paddr, void *buf, uint64_t len);
int pagoda_mem_write(PagodaState *s, uint64_t paddr, const void *buf,
                     uint64_t len);
int pagoda_gart_write(PagodaState *s, uint32_t first, uint32_t count,
                      const uint64_t *pages);
bool pagoda_host_aperture_valid(PagodaState *s, uint32_t page, unsigned seg,
                                uint32_t seg_page);
void pagoda_host_aperture_map(PagodaState *s, uint32_t page, unsigned seg,
                              uint32_t seg_page);
void pagoda_host_aperture_unmap(PagodaState *s, uint32_t page);
void pagoda_host_aperture_rebuild(PagodaState *s);
uint64_t pagoda_host_aperture_request(PagodaState *s);
void pagoda_mem_unrealize(PagodaState *s);

/* pagoda_link.c */
bool pagoda_link_realize(PagodaState *s, Error **errp);
void pagoda_link_unrealize(PagodaState *s);
PagodaState *pagoda_link_peer(PagodaState *s, unsigned adapter);
uint32_t pagoda_link_reg(PagodaState *s, hwaddr addr);

/* pagoda_mmu.c */
void pagoda_mmu_realize(PagodaState *s, Error **errp);
void pagoda_mmu_reset(PagodaState *s);
uint32_t pagoda_mmu_reg(PagodaState *s, hwaddr addr);
int pagoda_mmu_translate(PagodaState *s, unsigned ctx, uint64_t va,
                         uint32_t access, PagodaXlat *x, PagodaFault *f);
void pagoda_tlb_flush(PagodaState *s, int ctx, uint64_t va, uint64_t size);
uint32_t pagoda_mmu_level_entries(PagodaState *s, unsigned level, bool leaf64);


/* pagoda_cp.c */
void pagoda_cp_realize(PagodaState *s);
void pagoda_cp_unrealize(PagodaState *s);
void pagoda_cp_reset(PagodaState *s);
void pagoda_engine_reset(PagodaState *s, PagodaEngine *eng);
void pagoda_cursor_drop_lists(PagodaCursor *cur);
bool pagoda_cursor_valid(PagodaEngine *eng);
uint32_t pagoda_engine_read(PagodaState *s, PagodaEngine *eng, hwaddr reg);
void pagoda_engine_write(PagodaState *s, PagodaEngine *eng, hwaddr reg,
                         uint32_t val);
void pagoda_cp_kick(PagodaState *s);

/*
 * pagoda_dma.c: data movement shared by paging and render commands. An address space is
 * physical (ctx < 0) or the virtual space of context ctx.
 */
typedef enum PagodaCmdResult {
    PAGODA_CMD_DONE,        /* command finished */
    PAGODA_CMD_YIELD,       /* budget spent; run again to continue */
    PAGODA_CMD_WAIT,        /* blocked on a fence */
    PAGODA_CMD_FAULT,       /* fault recorded in the PagodaFault */
} PagodaCmdResult;

typedef struct PagodaSpan {
    int ctx;                /* -1: physical addresses */
    uint64_t addr;
    const uint64_t *pages;  /* page list (physical) instead of addr, or NULL */
    uint64_t npages;
} PagodaSpan;

/* Byte offset of the entries in an UPDATE_PAGE_TABLE command. */
#define PAGODA_UPT_ENTRIES      24

PagodaSpan pagoda_entry_span(PagodaEngine *eng, uint64_t addr);
PagodaCmdResult pagoda_copy(PagodaState *s, const PagodaSpan *src,
                            const PagodaSpan *dst, uint64_t size,
                            uint64_t *progress, uint64_t *budget,
                            PagodaFault *f);
PagodaCmdResult pagoda_fill(PagodaState *s, const PagodaSpan *dst,
                            uint32_t pattern, uint64_t size,
                            uint64_t *progress, uint64_t *budget,
                            PagodaFault *f);
int pagoda_span_rw(PagodaState *s, const PagodaSpan *sp, void *buf,
                   uint64_t len, uint32_t access, PagodaFault *f);
PagodaCmdResult pagoda_crc32(PagodaState *s, const PagodaSpan *src,
                             uint64_t size, uint32_t *crc,
                             uint64_t *progress, uint64_t *budget,
                             PagodaFault *f);

/* pagoda_display.c */
bool pagoda_display_check_properties(PagodaState *s, Error **errp);
void pagoda_display_realize(PagodaState *s);
void pagoda_display_unrealize(PagodaState *s);
void pagoda_display_reset(PagodaState *s);
uint32_t pagoda_display_read(PagodaState *s, hwaddr addr);
void pagoda_display_write(PagodaState *s, hwaddr addr, uint32_t val);
extern const VMStateDescription vmstate_pagoda_display;

/* pagoda_paging.c */
PagodaCmdResult pagoda_paging_command(PagodaState *s, PagodaEngine *eng,
                                      uint64_t *budget, PagodaFault *f);

#endif
