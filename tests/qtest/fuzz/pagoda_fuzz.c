/*
 * Pagoda GPU: structure-aware fuzz target ("pagoda-fuzz").
 *
 * generic-fuzz sees the device as registers and anonymous DMA reads; it
 * rarely builds a ring entry, a command and the page tables it walks all
 * at once. This target reads its input as a program of actions and turns
 * each into something the device understands: page tables of every level
 * and kind (4 KiB leaves, 64 KiB leaf tables, large pages, invalid,
 * read-only, zero and no-execute entries, tables in system memory or VRAM,
 * entries naming every segment), a GART, host-aperture accesses, rings on
 * both engines with entries of every flag, command buffers of every
 * opcode, display programming and flips, resets, context resumes, MSI-X
 * on or off, clock steps, and migrations of the device onto itself
 * (sometimes from a damaged stream). Numbers come from the input through
 * pickers that favour the boundaries the device checks (segment ends,
 * table ends, 2^48 and the VA width, page-list and length limits); one
 * structure in eight has fields left raw, so invalid programs stay
 * reachable.
 *
 * The device configuration comes from PAGODA_FUZZ_DEVICE (properties of
 * -device pagoda); the device's geometry (MMU levels, segment sizes, host
 * aperture) is read from its registers once, before fuzzing, when its BARs
 * are mapped. Every input starts from a reset device and ends with a reset
 * (device_reset_mapped()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "ui/console.h"
#include "exec/address-spaces.h"
#include "hw/qdev-core.h"
#include "hw/pci/pci_device.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "io/channel-buffer.h"
#include "migration/vmstate.h"
#include "../migration/qemu-file.h"
#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/pci-pc.h"
#include "standard-headers/linux/pci_regs.h"
#include "fuzz.h"
#include "pagoda/pagoda_hw.h"

#define TYPE_PAGODA_FUZZ        "pagoda"
#define FUZZ_DEVFN              QPCI_DEVFN(4, 0)
/* Guest RAM the programs are built in (the machine has 64 MiB). */
#define ARENA_BASE              (16 * MiB)
#define ARENA_SIZE              (32 * MiB)
/* VRAM the target's own page tables go to (written through BAR2). */
#define VRAM_TABLES             (1 * MiB)
#define MAX_ACTIONS             96
#define MAX_SPACES              4
#define MAX_MAPPED              16
#define MAX_LIST                16
/* Main-loop rounds given to the engines after a doorbell. */
#define RUN_ROUNDS              16
#define FRAME_NS                (17 * 1000 * 1000)
/* PCI_PM_CTRL power states */
#define PM_D0                   0
#define PM_D3HOT                3

/* The device as its registers describe it (read once in pre_fuzz). */
typedef struct FuzzDevice {
    uint32_t levels;
    uint32_t index_bits[PAGODA_MMU_MAX_LEVELS];
    uint32_t va_bits;
    uint32_t leaf64_entries;
    uint64_t seg_size[PAGODA_NUM_SEGMENTS];
    uint32_t seg_page[PAGODA_NUM_SEGMENTS];
    uint32_t host_ap_pages;
    uint32_t host_ap_page_size;
    uint32_t disp_max_width;
    uint32_t disp_max_height;
    size_t pci_state_len;       /* the PCI core's part of its vmstate */
    DeviceState *qdev;          /* found once: a path lookup per input costs */
} FuzzDevice;

/* One GPU address space the target built (tables it can walk itself). */
typedef struct FuzzSpace {
    bool valid;
    uint32_t ctx;
    uint64_t root;              /* PAGODA_PADDR in segment 0 or 1 */
    uint32_t root_entries;
    unsigned nmapped;
    uint64_t mapped[MAX_MAPPED];  /* VAs mapped so far */
} FuzzSpace;

typedef struct FuzzInput {
    const uint8_t *p;
    size_t left;
} FuzzInput;

typedef struct FuzzState {
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    uint64_t mmio, vram, host_ap;   /* BAR addresses */
    uint64_t vram_bar_size, host_ap_bar_size;
    uint32_t bar_config[6];     /* the BAR registers, as mapped */
    uint16_t command;           /* the command register, as enabled */
    bool config_written;        /* PCI configuration or MSI-X state */
    uint64_t arena_next;
    uint64_t vram_next;
    uint64_t ring_base[PAGODA_NUM_ENGINES];
    uint32_t ring_size[PAGODA_NUM_ENGINES];
    uint64_t fence[PAGODA_NUM_ENGINES];
    uint32_t gart_entries;
    FuzzSpace space[MAX_SPACES];
    unsigned engine;            /* of the buffer being generated */
    FuzzInput in;
} FuzzState;

static FuzzDevice fdev;
/* Bytes of the arena the previous input used: cleared before the next. */
static uint64_t arena_dirty;
/* Inputs sent as qtest commands (FUZZ_SERIALIZE_QTEST), for reproducers */
static bool serialized;

/* ---- Input ---------------------------------------------------------- */

static uint8_t in_u8(FuzzState *st)
{
    if (!st->in.left) {
        return 0;
    }
    st->in.left--;
    return *st->in.p++;
}

static uint64_t in_bytes(FuzzState *st, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++) {
        v |= (uint64_t)in_u8(st) << (8 * i);
    }
    return v;
}

static uint16_t in_u16(FuzzState *st)
{
    return in_bytes(st, 2);
}

static uint32_t in_u32(FuzzState *st)
{
    return in_bytes(st, 4);
}

static uint64_t in_u64(FuzzState *st)
{
    return in_bytes(st, 8);
}

/*
 * A mask of the fields to leave raw in one structure: 0 seven times in
 * eight, so that well-formed programs dominate and malformed ones remain.
 */
static uint8_t in_raw_mask(FuzzState *st)
{
    return in_u8(st) < 0x20 ? in_u8(st) : 0;
}

/* ---- Registers and memory ------------------------------------------- */

static void wr(FuzzState *st, uint32_t reg, uint32_t val)
{
    qtest_writel(st->qts, st->mmio + reg, val);
}

static uint32_t rd(FuzzState *st, uint32_t reg)
{
    return qtest_readl(st->qts, st->mmio + reg);
}

static void wr64(FuzzState *st, uint32_t reg_lo, uint64_t val)
{
    wr(st, reg_lo, val);
    wr(st, reg_lo + 4, val >> 32);
}

/* Guest RAM of the arena, page aligned; wraps when used up. */
static uint64_t arena_alloc(FuzzState *st, uint64_t size)
{
    uint64_t addr;

    size = ROUND_UP(MAX(size, 1), 4096);
    if (size > ARENA_SIZE) {
        size = ARENA_SIZE;
    }
    if (st->arena_next + size > ARENA_BASE + ARENA_SIZE) {
        st->arena_next = ARENA_BASE;
    }
    addr = st->arena_next;
    st->arena_next += size;
    arena_dirty = MAX(arena_dirty, st->arena_next - ARENA_BASE);
    return addr;
}

/*
 * Zero guest memory, in place where it is RAM: qtest_memwrite() of zeroes
 * would go through ASan's memmove, which copies byte by byte (a fifth of
 * the fuzzing time went there). Not qtest_memset(): the fuzzer's wrapper of
 * it leaks its buffer, which the corpus leak check would report on every
 * input. When the input is replayed as qtest commands for a reproducer,
 * the zeroes are written as commands too.
 */
static void zero(QTestState *qts, uint64_t addr, uint64_t len)
{
    static const uint8_t zeroes[4096];

    while (len) {
        hwaddr n = len;
        void *host = NULL;

        if (!serialized) {
            host = address_space_map(&address_space_memory, addr, &n, true,
                                     MEMTXATTRS_UNSPECIFIED);
        }
        if (host) {
            memset(host, 0, n);
            address_space_unmap(&address_space_memory, host, n, true, n);
        } else {
            n = MIN(len, sizeof(zeroes));
            qtest_memwrite(qts, addr, zeroes, n);
        }
        addr += n;
        len -= n;
    }
}

static uint64_t arena_put(FuzzState *st, const void *buf, size_t len)
{
    uint64_t addr = arena_alloc(st, len);

    if (len) {
        qtest_memwrite(st->qts, addr, buf, len);
    }
    return addr;
}

/*
 * CPU (guest physical) address of @paddr when the target can write it
 * directly: system memory in the arena, CPU-visible VRAM; else 0.
 */
static uint64_t cpu_addr(FuzzState *st, uint64_t paddr, uint64_t len)
{
    uint64_t off = PAGODA_PADDR_OFFSET(paddr);

    if (paddr & PAGODA_PADDR_RESERVED) {
        return 0;
    }
    switch (PAGODA_PADDR_SEG(paddr)) {
    case PAGODA_SEG_SYSTEM:
        if (off >= ARENA_BASE && off + len <= ARENA_BASE + ARENA_SIZE) {
            return off;
        }
        return 0;
    case PAGODA_SEG_VRAM:
        if (off + len <= st->vram_bar_size) {
            return st->vram + off;
        }
        return 0;
    }
    return 0;
}

/* A zeroed 4 KiB-aligned table of @size bytes, in system memory or VRAM. */
static uint64_t new_table(FuzzState *st, uint64_t size, bool in_vram)
{
    uint64_t off;

    size = ROUND_UP(size, 4096);
    if (in_vram && size <= VRAM_TABLES) {
        if (st->vram_next + size > VRAM_TABLES) {
            st->vram_next = 0;
        }
        off = st->vram_next;
        st->vram_next += size;
        zero(st->qts, st->vram + off, size);
        return PAGODA_PADDR(PAGODA_SEG_VRAM, off);
    }
    off = arena_alloc(st, size);
    zero(st->qts, off, size);
    return PAGODA_PADDR(PAGODA_SEG_SYSTEM, off);
}

/* ---- Pickers: values near the boundaries the device checks ---------- */

static uint32_t pick_seg(FuzzState *st)
{
    uint8_t b = in_u8(st);

    /* mostly the four segments, sometimes one that does not exist */
    return b >= 0xf0 ? (b >> 2) & 31 : b & 3;
}

static uint64_t seg_size(uint32_t seg)
{
    if (seg == PAGODA_SEG_SYSTEM) {
        return ARENA_BASE + ARENA_SIZE;
    }
    return seg < PAGODA_NUM_SEGMENTS ? fdev.seg_size[seg] : 0;
}

static void gart_setup(FuzzState *st, uint32_t entries, bool raw_base);

/*
 * A system address that is not plain RAM: ROM, holes, the local APIC, the
 * device's own BARs, the end of RAM.
 */
static uint64_t pick_special(FuzzState *st, uint64_t small)
{
    const uint64_t addrs[] = {
        0xa0000, 0xf0000, 0xfffc0000, 0xfee00000, st->mmio, st->vram,
        st->host_ap, 64 * MiB - 4096, 64 * MiB,
    };

    return addrs[small % ARRAY_SIZE(addrs)] + (small >> 8 & 0xff0);
}

/* An offset in segment @seg: valid memory, its end, past it, or raw. */
static uint64_t pick_offset(FuzzState *st, uint32_t seg)
{
    uint8_t mode = in_u8(st);
    uint64_t size = seg_size(seg);
    uint64_t small = in_u16(st);

    switch (mode % 8) {
    case 0:
    case 1:
        if (seg == PAGODA_SEG_SYSTEM) {
            return arena_alloc(st, 4096) + (small & 0xffc);
        }
        if (seg == PAGODA_SEG_APERTURE) {
            /* an aperture address is meant to go through a GART */
            if (!st->gart_entries) {
                gart_setup(st, size / PAGODA_GART_PAGE_SIZE, false);
            }
            /* mostly within the entries gart_setup() filled */
            return (small % MAX(MIN(st->gart_entries, 64u), 1u)) *
                   PAGODA_GART_PAGE_SIZE + (mode >> 4) * 4;
        }
        return size ? (small * 4096) % size : small;
    case 2:     /* the last pages of the segment */
        return size - 4096 * (1 + (small & 15)) + (mode >> 4) * 4;
    case 3:     /* just past its end */
        return size + (small & 0xfff) - (mode >> 5);
    case 4:
        return in_u64(st) & PAGODA_MASK64(47, 0);
    case 5:
        return PAGODA_MASK64(47, 0) - (small & 0xfff);
    case 6:
        return seg == PAGODA_SEG_SYSTEM ? pick_special(st, small) :
               small & 0xfffc;
    default:
        return (small * 4096) & PAGODA_MASK64(47, 0);
    }
}

static uint64_t pick_paddr(FuzzState *st)
{
    uint32_t seg = pick_seg(st);
    uint64_t pa = PAGODA_PADDR(seg, pick_offset(st, seg));

    if (in_u8(st) == 0xff) {
        pa |= in_u64(st) & PAGODA_PADDR_RESERVED;
    }
    return pa;
}

static FuzzSpace *pick_space(FuzzState *st)
{
    return &st->space[in_u8(st) % MAX_SPACES];
}

static unsigned level_shift(uint32_t level)
{
    return 12 + 9 * level;
}

static uint64_t pick_va(FuzzState *st, FuzzSpace *sp)
{
    uint8_t mode = in_u8(st);
    uint64_t small = in_u16(st);
    uint32_t level = (mode >> 4) % fdev.levels;

    switch (mode % 8) {
    case 0:
    case 1:
    case 2:
        if (sp && sp->nmapped) {
            return sp->mapped[small % sp->nmapped] +
                   ((small >> 8) & 0xf) * 4096 + (mode >> 6) * 4;
        }
        return small * 4096;
    case 3:     /* the end of the address space */
        return (1ull << fdev.va_bits) - 4096 * (1 + (small & 7));
    case 4:     /* past it, and around 2^48 */
        return (1ull << (mode & 0x80 ? 48 : fdev.va_bits)) + (small & 0xfff) -
               (mode & 0x40 ? 4096 : 0);
    case 5:     /* a table boundary of some level */
        return ((small & 0xff) + 1) * (1ull << level_shift(level)) -
               (mode & 0x40 ? 4096 : 0);
    case 6:
        return in_u64(st);
    default:
        return small * 65536;
    }
}

static uint64_t pick_size(FuzzState *st)
{
    uint8_t mode = in_u8(st);
    uint64_t small = in_u16(st);

    switch (mode % 8) {
    case 0:
    case 1:
        return 4 * ((small & 0x3ff) + 1);
    case 2:
        return 4096 * ((small & 15) + 1);
    case 3:
        return 65536 * ((small & 7) + 1);
    case 4:     /* a segment, give or take */
        return seg_size((mode >> 3) & 3) + (small & 0xfff) - 2048;
    case 5:
        return 0;
    case 6:
        return in_u64(st);
    default:
        return (1ull << ((small & 31) + 1)) + (int8_t)(small >> 8);
    }
}

static uint32_t pick_count(FuzzState *st, uint32_t limit)
{
    uint8_t mode = in_u8(st);

    switch (mode % 8) {
    case 5:
        return limit + (int8_t)in_u8(st) % 3;
    case 6:
        return in_u32(st);
    case 7:
        return 0;
    default:
        return 1 + (in_u8(st) % MAX_LIST);
    }
}

/* ---- Page tables the target builds itself --------------------------- */

static uint64_t pte_at(FuzzState *st, uint64_t at)
{
    uint64_t cpu = cpu_addr(st, at, 8);

    return cpu ? qtest_readq(st->qts, cpu) : 0;
}

static void set_pte(FuzzState *st, uint64_t at, uint64_t pte)
{
    uint64_t cpu = cpu_addr(st, at, 8);

    if (cpu) {
        qtest_writeq(st->qts, cpu, pte);
    }
}

static uint64_t index_of(uint64_t va, uint32_t level)
{
    uint32_t bits = fdev.index_bits[level];

    return (va >> level_shift(level)) & ((1ull << bits) - 1);
}

/*
 * Address (PAGODA_PADDR) of the entry for @va at @level in @sp, creating
 * tables down to it; 0 if the walk leads somewhere the target cannot
 * write (a table set up by the fuzzer elsewhere). A 64 KiB leaf table is
 * made at level 1 when @leaf64.
 */
static uint64_t entry_for(FuzzState *st, FuzzSpace *sp, uint64_t va,
                          uint32_t level, bool leaf64, bool in_vram)
{
    uint64_t table = sp->root;

    for (uint32_t l = fdev.levels - 1; l > level; l--) {
        uint64_t at = table + index_of(va, l) * 8;
        uint64_t pte = pte_at(st, at);

        if (!(pte & PAGODA_PTE_VALID) || (pte & PAGODA_PTE_LARGE_PAGE)) {
            bool small = leaf64 && l == 1;
            uint64_t next = new_table(st, 4096, in_vram);

            pte = PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(next),
                                  PAGODA_PADDR_OFFSET(next),
                                  PAGODA_PTE_VALID |
                                  (small ? PAGODA_PTE_LEAF64 : 0));
            set_pte(st, at, pte);
        }
        table = PAGODA_PADDR(PAGODA_PTE_SEGMENT(pte), PAGODA_PTE_ADDR(pte));
        if (!cpu_addr(st, table, 8)) {
            return 0;
        }
        if (l == 1 && (pte & PAGODA_PTE_LEAF64)) {
            return level == 0 ?
                   table + ((va >> 16) % fdev.leaf64_entries) * 8 : 0;
        }
    }
    return table + index_of(va, level) * 8;
}

static uint64_t pick_pte_flags(FuzzState *st)
{
    uint8_t b = in_u8(st);
    uint64_t flags = PAGODA_PTE_VALID;

    flags |= b & 1 ? PAGODA_PTE_ZERO : 0;
    flags |= b & 2 ? PAGODA_PTE_CACHE_COHERENT : 0;
    flags |= b & 4 ? PAGODA_PTE_READ_ONLY : 0;
    flags |= b & 8 ? PAGODA_PTE_NO_EXECUTE : 0;
    if ((b & 0xf0) == 0xf0) {       /* adapter or reserved bits */
        flags |= in_u64(st) & (PAGODA_PTE_ADAPTER_MASK |
                               PAGODA_PTE_RESERVED_MASK);
    }
    if ((b & 0xf0) == 0xe0) {
        flags &= ~PAGODA_PTE_VALID;
    }
    if ((b & 0xf0) == 0xd0) {       /* a linked adapter's memory, or none's */
        flags |= PAGODA_PTE_PEER(in_u8(st) % (PAGODA_LINK_MAX_ADAPTERS + 1));
    }
    return flags;
}

static void remember_va(FuzzSpace *sp, uint64_t va)
{
    sp->mapped[sp->nmapped++ % MAX_MAPPED] = va;
    sp->nmapped = MIN(sp->nmapped, MAX_MAPPED);
}

/* Map @n pages of @page bytes at @va to @pa and on. */
static void map_pages(FuzzState *st, FuzzSpace *sp, uint64_t va, uint64_t pa,
                      unsigned n, uint64_t page, uint64_t flags, bool in_vram)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = va + i * page, p = pa + i * page;
        uint64_t at = entry_for(st, sp, a, 0, page == 65536, in_vram);

        if (at) {
            set_pte(st, at, PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(p),
                                            PAGODA_PADDR_OFFSET(p), flags));
        }
    }
    remember_va(sp, va);
}

/* ---- Actions ---------------------------------------------------------- */

/* The registers the device defines, as ranges of 32-bit offsets. */
static const struct {
    uint32_t first, last;
} reg_ranges[] = {
    { PAGODA_REG_ID, PAGODA_REG_DEBUG },
    { PAGODA_REG_SEG(0), PAGODA_REG_SEG(PAGODA_NUM_SEGMENTS) - 4 },
    { PAGODA_REG_GART_BASE_LO, PAGODA_REG_HOST_APERTURE_PAGE_SIZE },
    { PAGODA_REG_MMU_CAPS, PAGODA_REG_TLB_VALID },
    { PAGODA_REG_CTX_SELECT, PAGODA_REG_CTX_STATUS },
    { PAGODA_REG_FAULT_COUNT, PAGODA_REG_FAULT_POP },
    { PAGODA_REG_ENGINE(0), PAGODA_REG_ENGINE(0) + PAGODA_ENG_FENCE_WB_HI },
    { PAGODA_REG_ENGINE(1), PAGODA_REG_ENGINE(1) + PAGODA_ENG_FENCE_WB_HI },
    { PAGODA_REG_DISP_MAX_WIDTH, PAGODA_REG_DISP_CURSOR_POS },
    { PAGODA_REG_DISP_MODE(0),
      PAGODA_REG_DISP_MODE(PAGODA_DISP_MAX_MODES - 1) },
};

/*
 * A register: one the device defines, an offset just past a block of
 * them (decoded by the block, defined by none), or any offset of the BAR.
 */
static uint32_t pick_reg(FuzzState *st)
{
    uint8_t b = in_u8(st);
    unsigned i, n = in_u16(st);

    if (b >= 0xf0) {
        return n & (PAGODA_MMIO_SIZE - 4);
    }
    if (b >= 0xe0) {
        return reg_ranges[n % ARRAY_SIZE(reg_ranges)].last + 4 * (1 + (b & 15));
    }
    for (i = 0; ; i = (i + 1) % ARRAY_SIZE(reg_ranges)) {
        unsigned regs = (reg_ranges[i].last - reg_ranges[i].first) / 4 + 1;

        if (n < regs) {
            return reg_ranges[i].first + 4 * n;
        }
        n -= regs;
    }
}

static void act_reg_write(FuzzState *st)
{
    uint32_t reg = pick_reg(st);

    wr(st, reg, in_u8(st) & 1 ? in_u32(st) : in_u8(st));
}

/* Read one register, or every register the device defines. */
static void act_reg_read(FuzzState *st)
{
    if (in_u8(st) & 1) {
        rd(st, pick_reg(st));
        return;
    }
    for (unsigned i = 0; i < ARRAY_SIZE(reg_ranges); i++) {
        for (uint32_t r = reg_ranges[i].first; r <= reg_ranges[i].last;
             r += 4) {
            if (r != PAGODA_REG_FAULT_POP) {
                rd(st, r);
            }
        }
    }
}

/*
 * Give @sp's context a root table of @entries entries (in system memory or
 * VRAM); @raw may leave the context id and the root register raw.
 */
static void space_init(FuzzState *st, FuzzSpace *sp, uint32_t entries,
                       bool in_vram, uint8_t raw)
{
    uint32_t max = 1u << fdev.index_bits[fdev.levels - 1];

    sp->valid = true;
    sp->ctx = raw & 1 ? in_u8(st) : sp - st->space;
    sp->root_entries = entries;
    sp->root = new_table(st, MIN((uint64_t)entries, max) * 8, in_vram);
    sp->nmapped = 0;
    wr(st, PAGODA_REG_CTX_SELECT, sp->ctx);
    wr64(st, PAGODA_REG_CTX_ROOT_LO, raw & 2 ? pick_paddr(st) : sp->root);
    wr(st, PAGODA_REG_CTX_ROOT_ENTRIES, entries);
}

/* The space a virtual program runs in: set up with a full root if new. */
static FuzzSpace *pick_live_space(FuzzState *st)
{
    FuzzSpace *sp = pick_space(st);

    if (!sp->valid) {
        space_init(st, sp, 1u << fdev.index_bits[fdev.levels - 1], false, 0);
    }
    return sp;
}

/* (Re)create a space with a chosen number of root entries. */
static void act_root(FuzzState *st)
{
    FuzzSpace *sp = pick_space(st);
    uint8_t b = in_u8(st);
    uint32_t max = 1u << fdev.index_bits[fdev.levels - 1];
    uint32_t entries;

    switch (b % 4) {
    case 0:
    case 1:
        entries = max;
        break;
    case 2:
        entries = 1 + in_u8(st) % max;
        break;
    default:
        entries = b & 0x80 ? in_u32(st) : max + 1 + (b >> 4 & 7);
        break;
    }
    space_init(st, sp, entries, b & 0x40, in_raw_mask(st));
}

/* Map a range of one page kind, or plant a strange entry. */
static void act_map(FuzzState *st)
{
    FuzzSpace *sp = pick_live_space(st);
    uint8_t kind = in_u8(st);
    bool in_vram = kind & 0x80;
    uint64_t va = pick_va(st, NULL) & ~0xfffull;
    uint64_t pa = pick_paddr(st);
    uint64_t flags = pick_pte_flags(st);
    unsigned n = 1 + in_u8(st) % 16;
    uint64_t at;
    uint32_t level;

    switch (kind % 6) {
    case 0:
        map_pages(st, sp, va, pa & ~0xfffull, n, 4096, flags, in_vram);
        break;
    case 1:
        map_pages(st, sp, va & ~0xffffull, pa & ~0xffffull, n, 65536, flags,
                  in_vram);
        break;
    case 2:     /* a large page at level 1 or above */
    case 3:
        level = 1 + (kind >> 3) % (fdev.levels - 1);
        at = entry_for(st, sp, va, level, false, in_vram);
        if (at) {
            set_pte(st, at, PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa),
                                            PAGODA_PADDR_OFFSET(pa),
                                            flags | PAGODA_PTE_LARGE_PAGE));
        }
        remember_va(sp, va);
        break;
    case 4:     /* an upper-level entry naming a table anywhere */
        level = 1 + (kind >> 3) % (fdev.levels - 1);
        at = entry_for(st, sp, va, level, false, in_vram);
        if (at) {
            set_pte(st, at, PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa),
                                            PAGODA_PADDR_OFFSET(pa),
                                            flags | (kind & 8 ?
                                                     PAGODA_PTE_LEAF64 : 0)));
        }
        remember_va(sp, va);
        break;
    default:    /* a raw entry at any level */
        level = (kind >> 3) % fdev.levels;
        at = entry_for(st, sp, va, level, false, in_vram);
        if (at) {
            set_pte(st, at, in_u64(st));
        }
        break;
    }
}

/*
 * Program the GART: a table for @entries entries in the arena (zeroed), the
 * first ones mapping arena pages, some invalid or raw.
 */
static void gart_setup(FuzzState *st, uint32_t entries, bool raw_base)
{
    uint32_t max = fdev.seg_size[PAGODA_SEG_APERTURE] / PAGODA_GART_PAGE_SIZE;
    uint64_t table[64] = { 0 };
    unsigned n = MIN(entries, ARRAY_SIZE(table));
    uint64_t base = arena_alloc(st, (uint64_t)MIN(entries, max) * 8);

    for (unsigned i = 0; i < n; i++) {
        uint8_t k = in_u8(st);

        table[i] = k < 0xc0 ? arena_alloc(st, 4096) | PAGODA_GART_VALID :
                   k < 0xe0 ? 0 : in_u64(st);
    }
    qtest_memwrite(st->qts, base, table, n * sizeof(uint64_t));
    wr64(st, PAGODA_REG_GART_BASE_LO, raw_base ? pick_paddr(st) :
         PAGODA_PADDR(PAGODA_SEG_SYSTEM, base));
    wr(st, PAGODA_REG_GART_ENTRIES, entries);
    st->gart_entries = entries;
}

static void act_gart(FuzzState *st)
{
    uint32_t max = fdev.seg_size[PAGODA_SEG_APERTURE] / PAGODA_GART_PAGE_SIZE;
    uint8_t b = in_u8(st);

    gart_setup(st, b & 1 ? max : pick_count(st, max), b & 2);
}

/* CPU access to a BAR: the host aperture or VRAM. */
static void act_bar_access(FuzzState *st, uint64_t bar, uint64_t bar_size)
{
    uint8_t b = in_u8(st);
    uint64_t off = b & 0x80 ? in_u32(st) % bar_size :
                   (in_u16(st) * 4096ull + (b & 0x78)) % bar_size;

    switch (b & 7) {
    case 0:
        qtest_writeb(st->qts, bar + off, in_u8(st));
        break;
    case 1:
        qtest_writel(st->qts, bar + (off & ~3ull), in_u32(st));
        break;
    case 2:
        qtest_writeq(st->qts, bar + (off & ~7ull), in_u64(st));
        break;
    case 3:
        qtest_readb(st->qts, bar + off);
        break;
    case 4:
        qtest_readl(st->qts, bar + (off & ~3ull));
        break;
    default:
        qtest_readq(st->qts, bar + (off & ~7ull));
        break;
    }
}

/* Write raw input bytes over something the program built. */
static void act_poke(FuzzState *st)
{
    uint8_t buf[64];
    unsigned n = 1 + in_u8(st) % sizeof(buf);
    uint64_t at = ARENA_BASE + (in_u32(st) % (arena_dirty + 1));

    for (unsigned i = 0; i < n; i++) {
        buf[i] = in_u8(st);
    }
    if (at + n <= ARENA_BASE + ARENA_SIZE) {
        qtest_memwrite(st->qts, at, buf, n);
    }
}

/* Forget what a reset of the device dropped (rings, GART, spaces). */
static void forget_device_state(FuzzState *st)
{
    memset(st->ring_size, 0, sizeof(st->ring_size));
    st->gart_entries = 0;
    memset(st->space, 0, sizeof(st->space));
}

static void act_reset(FuzzState *st)
{
    uint8_t b = in_u8(st);

    switch (b % 4) {
    case 0:
        wr(st, PAGODA_REG_RESET, PAGODA_RESET_ENGINE(b >> 7));
        break;
    case 1:
        wr(st, PAGODA_REG_CTX_SELECT, (b >> 2) % MAX_SPACES);
        wr(st, PAGODA_REG_CTX_STATUS, PAGODA_CTX_STATUS_HALTED);
        break;
    case 2:
        wr(st, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
        forget_device_state(st);
        break;
    default:
        wr(st, PAGODA_REG_RESET, in_u32(st));
        break;
    }
}

/* Map the function where device_start() did, as a driver's resume does. */
static void function_remap(FuzzState *st)
{
    for (unsigned i = 0; i < ARRAY_SIZE(st->bar_config); i++) {
        qpci_config_writel(st->dev, PCI_BASE_ADDRESS_0 + 4 * i,
                           st->bar_config[i]);
    }
    qpci_config_writew(st->dev, PCI_COMMAND, st->command);
}

/*
 * PCI configuration space: the power state (D3hot, then D0, which resets
 * the function; its BARs and command register are then restored as a
 * driver's resume does), memory decoding or bus mastering turned off, or a
 * raw write anywhere.
 */
static void act_config(FuzzState *st)
{
    QPCIDevice *dev = st->dev;
    uint8_t b = in_u8(st);
    uint8_t pm = qpci_find_capability(dev, PCI_CAP_ID_PM, 0);

    g_assert(pm);
    st->config_written = true;
    switch (b % 4) {
    case 0:
        qpci_config_writew(dev, pm + PCI_PM_CTRL, PM_D3HOT);
        break;
    case 1:
        if ((qpci_config_readw(dev, pm + PCI_PM_CTRL) &
             PCI_PM_CTRL_STATE_MASK) == PM_D3HOT) {
            forget_device_state(st);
        }
        qpci_config_writew(dev, pm + PCI_PM_CTRL, PM_D0);
        function_remap(st);
        break;
    case 2:
        qpci_config_writew(dev, PCI_COMMAND, st->command &
                           ~(b & 0x40 ? PCI_COMMAND_MEMORY : 0) &
                           ~(b & 0x80 ? PCI_COMMAND_MASTER : 0));
        break;
    default:
        qpci_config_writel(dev, in_u8(st) & 0xfc, in_u32(st));
        break;
    }
}

static void act_faults(FuzzState *st)
{
    unsigned n = in_u8(st) % (PAGODA_FAULT_QUEUE_DEPTH + 2);

    for (unsigned i = 0; i < n && rd(st, PAGODA_REG_FAULT_COUNT); i++) {
        for (uint32_t r = PAGODA_REG_FAULT_LOST; r <= PAGODA_REG_FAULT_FLAGS;
             r += 4) {
            rd(st, r);
        }
        wr(st, PAGODA_REG_FAULT_POP, 1);
    }
    wr(st, PAGODA_REG_INT_STATUS, rd(st, PAGODA_REG_INT_STATUS));
}

/* MSI-X on (vectors aimed at the local APIC, each masked or not) or off. */
static void act_interrupts(FuzzState *st)
{
    QPCIDevice *dev = st->dev;
    uint8_t b = in_u8(st);

    st->config_written = true;
    if (b & 1) {
        if (!dev->msix_enabled) {
            qpci_msix_enable(dev);
        }
        for (unsigned v = 0; v < PAGODA_MSIX_VECTORS; v++) {
            uint64_t entry = dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

            qpci_io_writel(dev, dev->msix_table_bar,
                           entry + PCI_MSIX_ENTRY_LOWER_ADDR, 0xfee00000);
            qpci_io_writel(dev, dev->msix_table_bar,
                           entry + PCI_MSIX_ENTRY_DATA, 0x30 + v);
            qpci_io_writel(dev, dev->msix_table_bar,
                           entry + PCI_MSIX_ENTRY_VECTOR_CTRL,
                           b & (2 << v) ? 0 : PCI_MSIX_ENTRY_CTRL_MASKBIT);
        }
    } else if (dev->msix_enabled) {
        qpci_msix_disable(dev);
    }
    wr(st, PAGODA_REG_INT_ENABLE, b & 0x20 ? in_u32(st) :
       PAGODA_INT_ALL | (b & 0x40 ? PAGODA_INT_VBLANK : 0));
}

static void act_clock(FuzzState *st)
{
    uint8_t b = in_u8(st);

    qtest_clock_step(st->qts, b & 0x80 ? FRAME_NS * (1 + (b & 3)) :
                     1000ull * (1 + b));
    if (b & 0x40) {
        /* a fence wait polls on the real-time clock */
        g_usleep(150);
    }
    flush_events(st->qts);
}

static void act_display(FuzzState *st)
{
    static const uint32_t formats[] = {
        PAGODA_DISP_FORMAT_XRGB8888, PAGODA_DISP_FORMAT_RGB565,
        PAGODA_DISP_FORMAT_ARGB8888,
    };
    QemuConsole *con = qemu_console_lookup_by_index(0);
    uint8_t b = in_u8(st);
    uint32_t w, h, bpp, fmt, stride, line;
    uint64_t surface, at;

    fmt = b & 0x80 ? in_u32(st) : formats[b & 1];
    bpp = fmt == PAGODA_DISP_FORMAT_RGB565 ? 2 : 4;
    switch ((b >> 1) & 3) {
    case 0:
        w = 64 + in_u8(st);
        h = 64 + in_u8(st);
        break;
    case 1:
        w = fdev.disp_max_width + (int8_t)in_u8(st) % 2;
        h = fdev.disp_max_height + (int8_t)in_u8(st) % 2;
        break;
    default:
        w = in_u16(st);
        h = in_u16(st);
        break;
    }
    surface = b & 8 ? pick_paddr(st) :
              PAGODA_PADDR(PAGODA_SEG_VRAM,
                           in_u8(st) * 65536ull % fdev.seg_size[1]);
    wr64(st, PAGODA_REG_DISP_SURFACE_LO, surface);
    wr(st, PAGODA_REG_DISP_WIDTH, w);
    wr(st, PAGODA_REG_DISP_HEIGHT, h);
    stride = b & 0x10 ? in_u32(st) : ROUND_UP(w * bpp, 4) + 4 * (b >> 5 & 1);
    wr(st, PAGODA_REG_DISP_STRIDE, stride);
    wr(st, PAGODA_REG_DISP_FORMAT, fmt);
    /* a cursor anywhere, of any size, partly off the surface or not */
    if (b & 0x20) {
        uint32_t cw = 1 + in_u8(st) % (PAGODA_DISP_CURSOR_MAX_SIZE + 2);
        uint32_t ch = 1 + in_u8(st) % (PAGODA_DISP_CURSOR_MAX_SIZE + 2);

        wr64(st, PAGODA_REG_DISP_CURSOR_LO, in_u8(st) & 1 ? pick_paddr(st) :
             PAGODA_PADDR(PAGODA_SEG_VRAM, in_u8(st) * 4096ull % fdev.seg_size[1]));
        wr(st, PAGODA_REG_DISP_CURSOR_SIZE, cw | ch << 16);
        wr(st, PAGODA_REG_DISP_CURSOR_STRIDE, cw * 4 + 4 * (in_u8(st) & 3));
        wr(st, PAGODA_REG_DISP_CURSOR_POS, in_u32(st));
    }
    wr(st, PAGODA_REG_DISP_CONTROL, (b & 0x40 ? 0 : PAGODA_DISP_CONTROL_ENABLE) |
       (b & 0x20 ? PAGODA_DISP_CONTROL_CURSOR : 0));
    wr(st, PAGODA_REG_DISP_FLIP, 1);
    qtest_clock_step(st->qts, FRAME_NS);
    rd(st, PAGODA_REG_DISP_STATUS);
    /* the console reads the surface as a display would */
    graphic_hw_update(con);
    /* then again, unchanged or with one line written through BAR2 */
    b = in_u8(st);
    line = in_u16(st);
    at = PAGODA_PADDR_OFFSET(surface) + (uint64_t)line * stride;
    if (b & 1 && PAGODA_PADDR_SEG(surface) == PAGODA_SEG_VRAM &&
        at < st->vram_bar_size - 4) {
        qtest_writel(st->qts, st->vram + at, in_u32(st));
    }
    if (b & 3) {
        graphic_hw_update(con);
    }
}

static void run_engines(FuzzState *st);

/* Migration state of @opaque, saved in-process as savevm would. */
static uint8_t *state_save(const VMStateDescription *vmsd, void *opaque,
                           size_t *len)
{
    QIOChannelBuffer *bioc = qio_channel_buffer_new(65536);
    QEMUFile *f = qemu_file_new_output(QIO_CHANNEL(bioc));
    uint8_t *data;

    g_assert(vmstate_save_state(f, vmsd, opaque, NULL) == 0);
    g_assert(qemu_fflush(f) == 0);
    /* closing the file closes the channel, which frees its buffer */
    *len = bioc->usage;
    data = g_memdup2(bioc->data, bioc->usage);
    qemu_fclose(f);
    object_unref(OBJECT(bioc));
    return data;
}

static uint8_t *device_save(DeviceState *dev, size_t *len)
{
    return state_save(DEVICE_GET_CLASS(dev)->vmsd, dev, len);
}

static int device_load(DeviceState *dev, const uint8_t *data, size_t len)
{
    const VMStateDescription *vmsd = DEVICE_GET_CLASS(dev)->vmsd;
    QIOChannelBuffer *bioc = qio_channel_buffer_new(len);
    QEMUFile *f;
    int ret;

    memcpy(bioc->data, data, len);
    bioc->usage = len;
    f = qemu_file_new_input(QIO_CHANNEL(bioc));
    ret = vmstate_load_state(f, vmsd, dev, vmsd->version_id);
    qemu_fclose(f);
    object_unref(OBJECT(bioc));
    return ret;
}

/*
 * Migrate the device onto itself: stop the VM (pending work must wait, the
 * main loop runs meanwhile), save its state, load it back as an incoming
 * migration would, run again, the pending work going on from there. The
 * stream is sometimes damaged first (bytes or big-endian words overwritten
 * from the input), so that post_load's checks of an untrusted stream are
 * exercised; a load the checks refuse fails the migration, and the saved
 * state is loaded again (QEMU would have stopped: the machine must not run
 * on a half-loaded device). The PCI core's part of the stream (config
 * space) is left intact: a load that fails there leaves the function
 * refusing any later load, where QEMU would have exited.
 */
static void act_migrate(FuzzState *st)
{
    uint8_t raw = in_raw_mask(st);
    g_autofree uint8_t *saved = NULL, *stream = NULL;
    size_t len, pci_len = fdev.pci_state_len;

    vm_stop(RUN_STATE_PAUSED);
    flush_events(st->qts);
    saved = device_save(fdev.qdev, &len);
    stream = g_memdup2(saved, len);
    g_assert(len >= pci_len + 4);
    /* the MSI-X table follows the PCI part */
    st->config_written |= raw;
    for (unsigned i = 0; raw && i < 1 + raw % 8; i++) {
        uint32_t pos = in_u32(st);
        uint8_t k = in_u8(st);

        if (k & 1) {
            stream[pci_len + pos % (len - pci_len)] = in_u8(st);
        } else {
            /*
             * A counter or index a check must catch (the top, or just
             * beyond a limit) over a field: the device's fields are words
             * and double words from the end of the PCI part on.
             */
            stl_be_p(stream + pci_len + 4 * (pos % ((len - pci_len) / 4)),
                     k & 2 ? UINT32_MAX - (k >> 2) :
                     (1u << (k >> 3)) + (k >> 2 & 1));
        }
    }
    if (device_load(fdev.qdev, stream, len) < 0) {
        g_assert(device_load(fdev.qdev, saved, len) == 0);
    }
    vm_start();
    run_engines(st);
}

/* ---- Command buffers -------------------------------------------------- */

typedef struct Cmds {
    GArray *dw;
} Cmds;

static void put32(Cmds *c, uint32_t v)
{
    g_array_append_val(c->dw, v);
}

static void put64(Cmds *c, uint64_t v)
{
    put32(c, v);
    put32(c, v >> 32);
}

/* An address for a command: a VA of @sp in a virtual entry, else physical. */
static uint64_t pick_addr(FuzzState *st, FuzzSpace *sp)
{
    return sp ? pick_va(st, sp) : pick_paddr(st);
}

/*
 * A page address for a list: a system page of the arena or a page of a
 * memory segment; with @raw any address.
 */
static uint64_t list_page(FuzzState *st, bool raw)
{
    uint8_t k = in_u8(st);
    uint32_t seg = 1 + (k & 1);

    if (raw) {
        return k < 0x80 ? pick_paddr(st) : in_u64(st);
    }
    if (k < 0xc0 || !fdev.seg_size[seg]) {
        return PAGODA_PADDR(PAGODA_SEG_SYSTEM, arena_alloc(st, 4096));
    }
    return PAGODA_PADDR(seg, in_u16(st) * 4096ull % fdev.seg_size[seg]);
}

/* A list of page addresses in the arena (TRANSFER with a list flag). */
static uint64_t page_list(FuzzState *st, unsigned n, bool raw)
{
    uint64_t list[MAX_LIST];

    n = MIN(n, MAX_LIST);
    for (unsigned i = 0; i < n; i++) {
        list[i] = list_page(st, raw);
    }
    return arena_put(st, list, MAX(n, 1) * sizeof(uint64_t));
}

static void gen_buffer(FuzzState *st, FuzzSpace *sp, unsigned depth,
                       Cmds *c);

/*
 * A buffer for JUMP or CALL: built the same way, placed in the arena and,
 * in a virtual entry, mapped into the space. Returns its address.
 */
static uint64_t branch_target(FuzzState *st, FuzzSpace *sp, unsigned depth,
                              uint32_t *length)
{
    Cmds sub = { g_array_new(false, true, sizeof(uint32_t)) };
    uint64_t addr;

    gen_buffer(st, sp, depth + 1, &sub);
    *length = sub.dw->len * 4;
    addr = arena_put(st, sub.dw->data, *length);
    g_array_free(sub.dw, true);
    if (!sp) {
        return PAGODA_PADDR(PAGODA_SEG_SYSTEM, addr);
    }
    map_pages(st, sp, 0x40000000ull + (addr - ARENA_BASE),
              PAGODA_PADDR(PAGODA_SEG_SYSTEM, addr),
              DIV_ROUND_UP(MAX(*length, 4), 4096), 4096, PAGODA_PTE_VALID,
              false);
    return 0x40000000ull + (addr - ARENA_BASE);
}

static void header(Cmds *c, uint32_t op, uint32_t flags, uint32_t dwords)
{
    put32(c, PAGODA_CMD_HEADER(op, flags, dwords));
}

/* The flags command @op knows: any other makes it malformed. */
static uint32_t known_flags(uint32_t op)
{
    switch (op) {
    case PAGODA_CMD_SIGNAL_FENCE:
        return PAGODA_SIGNAL_INTERRUPT;
    case PAGODA_CMD_TRANSFER:
        return PAGODA_TRANSFER_SRC_LIST | PAGODA_TRANSFER_DST_LIST;
    case PAGODA_CMD_VIRTUAL_TRANSFER:
    case PAGODA_CMD_VIRTUAL_FILL:
        return PAGODA_VIRTUAL_64K;
    case PAGODA_CMD_UPDATE_PAGE_TABLE:
        return PAGODA_UPT_REPEAT | PAGODA_UPT_LEAF64 |
               PAGODA_UPT_REPEAT_INCREMENT;
    case PAGODA_CMD_FLUSH_TLB:
        return PAGODA_FLUSH_ALL_CONTEXTS;
    default:
        return 0;
    }
}

/* One command of any opcode, with operands from the pickers. */
static void gen_command(FuzzState *st, FuzzSpace *sp, unsigned depth,
                        Cmds *c)
{
    /* the engine's own commands first, then the other's */
    static const uint8_t ops[PAGODA_NUM_ENGINES][20] = {
        [PAGODA_ENGINE_PAGING] = {
            PAGODA_CMD_NOP, PAGODA_CMD_SIGNAL_FENCE, PAGODA_CMD_WAIT_FENCE,
            PAGODA_CMD_TRANSFER, PAGODA_CMD_FILL, PAGODA_CMD_VIRTUAL_TRANSFER,
            PAGODA_CMD_VIRTUAL_FILL, PAGODA_CMD_UPDATE_PAGE_TABLE,
            PAGODA_CMD_COPY_PTES, PAGODA_CMD_FLUSH_TLB,
            PAGODA_CMD_MAP_APERTURE, PAGODA_CMD_UNMAP_APERTURE,
            PAGODA_CMD_MAP_HOST_APERTURE, PAGODA_CMD_UNMAP_HOST_APERTURE,
            PAGODA_CMD_COPY, PAGODA_CMD_FILL32, PAGODA_CMD_WRITE_IMM,
            PAGODA_CMD_CRC32, PAGODA_CMD_JUMP, PAGODA_CMD_CALL,
        },
        [PAGODA_ENGINE_RENDER] = {
            PAGODA_CMD_NOP, PAGODA_CMD_SIGNAL_FENCE, PAGODA_CMD_WAIT_FENCE,
            PAGODA_CMD_COPY, PAGODA_CMD_FILL32, PAGODA_CMD_WRITE_IMM,
            PAGODA_CMD_CRC32, PAGODA_CMD_JUMP, PAGODA_CMD_CALL,
            PAGODA_CMD_TRANSFER, PAGODA_CMD_FILL, PAGODA_CMD_VIRTUAL_TRANSFER,
            PAGODA_CMD_VIRTUAL_FILL, PAGODA_CMD_UPDATE_PAGE_TABLE,
            PAGODA_CMD_COPY_PTES, PAGODA_CMD_FLUSH_TLB,
            PAGODA_CMD_MAP_APERTURE, PAGODA_CMD_UNMAP_APERTURE,
            PAGODA_CMD_MAP_HOST_APERTURE, PAGODA_CMD_UNMAP_HOST_APERTURE,
        },
    };
    static const unsigned own[PAGODA_NUM_ENGINES] = { 14, 9 };
    uint8_t sel = in_u8(st), fl = in_u8(st), raw = in_raw_mask(st);
    uint32_t op = sel >= 0xf0 ? in_u8(st) :
                  sel >= 0xe0 ? ops[st->engine][sel % 20] :
                  ops[st->engine][sel % own[st->engine]];
    /* mostly the flags the command knows, sometimes any */
    uint32_t flags = (fl & 0xe0) == 0xe0 ? fl : fl & known_flags(op);
    unsigned start = c->dw->len, n, i;
    uint32_t len;
    uint64_t target;

    switch (op) {
    case PAGODA_CMD_NOP:
        n = 1 + in_u8(st) % 8;
        header(c, op, flags, n);
        for (i = 1; i < n; i++) {
            put32(c, in_u32(st));
        }
        break;
    case PAGODA_CMD_SIGNAL_FENCE:
    case PAGODA_CMD_WAIT_FENCE:
        header(c, op, flags, 6);
        put32(c, 0);
        put64(c, pick_addr(st, sp));
        put64(c, in_u8(st));
        break;
    case PAGODA_CMD_FILL:
    case PAGODA_CMD_FILL32:
    case PAGODA_CMD_VIRTUAL_FILL:
        header(c, op, flags, 6);
        put32(c, in_u32(st));
        put64(c, op == PAGODA_CMD_FILL ? pick_paddr(st) :
              op == PAGODA_CMD_VIRTUAL_FILL ? pick_va(st, sp) :
              pick_addr(st, sp));
        put64(c, pick_size(st));
        break;
    case PAGODA_CMD_TRANSFER:
        n = in_u8(st) % (MAX_LIST + 1);
        header(c, op, flags, 8);
        put32(c, 0);
        put64(c, flags & PAGODA_TRANSFER_SRC_LIST ?
              PAGODA_PADDR(PAGODA_SEG_SYSTEM, page_list(st, n, raw & 1)) :
              pick_paddr(st));
        put64(c, flags & PAGODA_TRANSFER_DST_LIST ?
              PAGODA_PADDR(PAGODA_SEG_SYSTEM, page_list(st, n, raw & 1)) :
              pick_paddr(st));
        put64(c, in_u8(st) & 1 ? n * 4096ull - in_u8(st) : pick_size(st));
        break;
    case PAGODA_CMD_VIRTUAL_TRANSFER:
    case PAGODA_CMD_COPY:
    case PAGODA_CMD_CRC32:
        header(c, op, flags, 8);
        put32(c, 0);
        if (op == PAGODA_CMD_VIRTUAL_TRANSFER) {
            put64(c, pick_va(st, sp));
            put64(c, pick_va(st, sp));
            put64(c, pick_size(st));
        } else if (op == PAGODA_CMD_COPY) {
            put64(c, pick_addr(st, sp));
            put64(c, pick_addr(st, sp));
            put64(c, pick_size(st));
        } else {
            put64(c, pick_addr(st, sp));
            put64(c, pick_size(st));
            put64(c, pick_addr(st, sp));
        }
        break;
    case PAGODA_CMD_UPDATE_PAGE_TABLE: {
        FuzzSpace *tsp = pick_space(st);
        uint32_t level = in_u8(st) % (fdev.levels + 1);
        uint32_t entries = 1u << fdev.index_bits[MIN(level, fdev.levels - 1)];
        uint32_t count = pick_count(st, entries);

        n = flags & PAGODA_UPT_REPEAT ? 1 : MIN(count, MAX_LIST);
        header(c, op, flags, 6 + 2 * n + !!(raw & 0x10));
        put32(c, level);
        put64(c, tsp->valid && in_u8(st) & 1 ?
              entry_for(st, tsp, pick_va(st, tsp), MIN(level, fdev.levels - 1),
                        false, false) & ~0xfffull : pick_paddr(st));
        put32(c, in_u8(st) & 1 ? in_u32(st) : entries - count);
        put32(c, count);
        for (i = 0; i < n; i++) {
            uint64_t pa = pick_paddr(st);

            put64(c, PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(pa),
                                     PAGODA_PADDR_OFFSET(pa),
                                     pick_pte_flags(st)));
        }
        break;
    }
    case PAGODA_CMD_COPY_PTES:
        n = pick_count(st, PAGODA_COPY_PTES_MAX);
        header(c, op, flags, 8);
        put32(c, n);
        put64(c, pick_paddr(st));
        put64(c, pick_paddr(st));
        /* indices in the table, or where index + count passes the limit */
        for (i = 0; i < 2; i++) {
            put32(c, in_u8(st) & 1 ? in_u16(st) % 512 :
                  PAGODA_COPY_PTES_MAX - n + in_u8(st) % 3);
        }
        break;
    case PAGODA_CMD_FLUSH_TLB:
        header(c, op, flags, 6);
        put32(c, in_u8(st) & 0x80 ? in_u32(st) : in_u8(st) % MAX_SPACES);
        put64(c, pick_va(st, sp));
        put64(c, in_u8(st) & 1 ? 0 : pick_size(st));
        break;
    case PAGODA_CMD_MAP_APERTURE:
    case PAGODA_CMD_UNMAP_APERTURE:
        if (!st->gart_entries) {
            gart_setup(st, fdev.seg_size[PAGODA_SEG_APERTURE] /
                       PAGODA_GART_PAGE_SIZE, false);
        }
        n = pick_count(st, MAX_LIST);
        header(c, op, flags, op == PAGODA_CMD_UNMAP_APERTURE ? 4 :
               4 + 2 * MIN(n, MAX_LIST));
        put32(c, raw & 2 ? in_u32(st) : in_u8(st) & 1 ?
              st->gart_entries - MIN(n, MAX_LIST) :
              in_u16(st) % MAX(st->gart_entries, 1));
        put32(c, n);
        put32(c, 0);
        for (i = 0; op == PAGODA_CMD_MAP_APERTURE && i < MIN(n, MAX_LIST);
             i++) {
            put64(c, raw & 1 ? list_page(st, true) : arena_alloc(st, 4096));
        }
        break;
    case PAGODA_CMD_MAP_HOST_APERTURE:
    case PAGODA_CMD_UNMAP_HOST_APERTURE: {
        bool map = op == PAGODA_CMD_MAP_HOST_APERTURE;
        uint32_t seg = raw & 4 ? pick_seg(st) : 1 + (in_u8(st) & 1);

        n = pick_count(st, fdev.host_ap_pages);
        header(c, op, flags, map ? 3 + 2 * MIN(n, MAX_LIST) :
               2 + MIN(n, MAX_LIST));
        if (map) {
            put32(c, seg);
        }
        put32(c, n);
        /* every pair is checked before any is mapped: one raw at most */
        for (i = 0; i < MIN(n, MAX_LIST); i++) {
            put32(c, raw & 1 ? in_u32(st) : in_u8(st) & 1 ?
                  fdev.host_ap_pages - 1 - i :
                  in_u16(st) % fdev.host_ap_pages);
        }
        for (i = 0; map && i < MIN(n, MAX_LIST); i++) {
            uint64_t pages = seg_size(seg) / fdev.host_ap_page_size;

            put32(c, raw & 2 ? in_u32(st) : in_u8(st) & 1 ? pages - 1 - i :
                  in_u16(st) % MAX(pages, 1));
        }
        break;
    }
    case PAGODA_CMD_WRITE_IMM:
        n = in_u8(st) % 8;
        header(c, op, flags, 4 + n);
        put32(c, raw & 0x10 ? in_u32(st) : n);
        put64(c, pick_addr(st, sp));
        for (i = 0; i < n; i++) {
            put32(c, in_u32(st));
        }
        break;
    case PAGODA_CMD_JUMP:
    case PAGODA_CMD_CALL:
        if (depth < PAGODA_CALL_DEPTH + 1 && in_u8(st) < 0xe0) {
            target = branch_target(st, sp, depth, &len);
        } else {
            target = pick_addr(st, sp);
            len = in_u32(st);
        }
        header(c, op, flags, 4);
        put32(c, len);
        put64(c, target);
        break;
    default:    /* an opcode the device does not know */
        header(c, op, flags, 1 + in_u8(st) % 4);
        for (i = 1; i < PAGODA_CMD_DWORDS(g_array_index(c->dw, uint32_t,
                                                        start)); i++) {
            put32(c, in_u32(st));
        }
        break;
    }
    if (raw & 8) {              /* a header whose length lies */
        uint32_t *h = &g_array_index(c->dw, uint32_t, start);
        int8_t delta = in_u8(st);

        /* by a dword or two (the command's own check), or by any amount */
        *h = PAGODA_CMD_HEADER(op, flags, delta & 0x40 ? in_u16(st) :
                               PAGODA_CMD_DWORDS(*h) + delta % 3);
    }
}

static void gen_buffer(FuzzState *st, FuzzSpace *sp, unsigned depth,
                       Cmds *c)
{
    unsigned n = 1 + in_u8(st) % 6;

    for (unsigned i = 0; i < n && st->in.left; i++) {
        gen_command(st, sp, depth, c);
    }
}

/* ---- Submission -------------------------------------------------------- */

/*
 * Program a ring. A busy engine keeps its ring (the writes are ignored):
 * the target then keeps writing entries where the device reads them.
 */
static void ring_setup(FuzzState *st, unsigned e, uint8_t raw)
{
    uint8_t b = in_u8(st);
    uint32_t size = raw & 1 ? in_u32(st) : 1u << (b % 9);
    uint32_t reg = PAGODA_REG_ENGINE(e);
    uint64_t base = arena_alloc(st, MIN(size, 1024u) *
                                PAGODA_RING_ENTRY_SIZE);

    wr64(st, reg + PAGODA_ENG_RING_BASE_LO, raw & 2 ? pick_paddr(st) :
         PAGODA_PADDR(PAGODA_SEG_SYSTEM, base));
    wr(st, reg + PAGODA_ENG_RING_SIZE, size);
    /* the fence writeback: off, in the arena, or anywhere */
    wr64(st, reg + PAGODA_ENG_FENCE_WB_LO, b & 0x40 ? 0 : raw & 4 ? pick_paddr(st) :
         PAGODA_PADDR(PAGODA_SEG_SYSTEM, arena_alloc(st, 8)));
    if (!(raw & 3) && rd(st, reg + PAGODA_ENG_RING_SIZE) != size) {
        return;
    }
    st->ring_size[e] = size;
    st->ring_base[e] = base;
}

/* Let the engines run: main-loop rounds until both are idle or waiting. */
static void run_engines(FuzzState *st)
{
    for (unsigned i = 0; i < RUN_ROUNDS; i++) {
        flush_events(st->qts);
        if (!(rd(st, PAGODA_REG_STATUS) & (PAGODA_STATUS_ENGINE_BUSY(0) |
                                           PAGODA_STATUS_ENGINE_BUSY(1)))) {
            break;
        }
    }
}

static void act_submit(FuzzState *st)
{
    uint8_t b = in_u8(st), raw = in_raw_mask(st);
    unsigned e = b & 1;
    bool virtual = b & 2;
    FuzzSpace *sp = virtual ? pick_live_space(st) : pick_space(st);
    Cmds c = { g_array_new(false, true, sizeof(uint32_t)) };
    uint8_t entry[PAGODA_RING_ENTRY_SIZE] = { 0 };
    uint32_t reg = PAGODA_REG_ENGINE(e), len, slot, ring, tail;
    uint16_t flags, ctx;
    uint64_t addr, start;

    if (!st->ring_size[e] || (b & 0x1c) == 0x1c) {
        ring_setup(st, e, raw);
    }
    st->engine = e;
    gen_buffer(st, virtual ? sp : NULL, 0, &c);
    if (raw & 0x80) {           /* ends jumping back to its start: a hang */
        header(&c, PAGODA_CMD_JUMP, 0, 4);
        put32(&c, (c.dw->len + 3) * 4);
        put64(&c, 0);
    }
    len = c.dw->len * 4;
    start = arena_alloc(st, len);
    addr = virtual ? 0x80000000ull + (start - ARENA_BASE) :
           PAGODA_PADDR(PAGODA_SEG_SYSTEM, start);
    if (raw & 0x80) {
        g_array_index(c.dw, uint32_t, c.dw->len - 2) = addr;
        g_array_index(c.dw, uint32_t, c.dw->len - 1) = addr >> 32;
    }
    if (len) {
        qtest_memwrite(st->qts, start, c.dw->data, len);
    }
    g_array_free(c.dw, true);
    if (virtual) {
        map_pages(st, sp, addr, PAGODA_PADDR(PAGODA_SEG_SYSTEM, start),
                  DIV_ROUND_UP(MAX(len, 4), 4096), 4096,
                  PAGODA_PTE_VALID | (raw & 4 ? PAGODA_PTE_NO_EXECUTE : 0),
                  false);
    }
    flags = (virtual ? PAGODA_RING_FLAG_VIRTUAL : 0) |
            (b & 8 ? PAGODA_RING_FLAG_INTERRUPT : 0) |
            (b & 0x20 ? PAGODA_RING_FLAG_STATUS : 0);
    ctx = sp->valid ? sp->ctx : sp - st->space;
    if (raw & 8) {              /* any flags, length, reserved field */
        flags = in_u16(st);
        len += (int8_t)in_u8(st);
        stq_le_p(entry + PAGODA_RING_RESERVED, in_u8(st) & 1);
    }
    if (raw & 0x10) {
        addr = pick_addr(st, virtual ? sp : NULL);
    }
    if (raw & 0x20) {
        ctx = in_u16(st);
    }
    stq_le_p(entry + PAGODA_RING_ADDR, addr);
    stl_le_p(entry + PAGODA_RING_LENGTH, len);
    stw_le_p(entry + PAGODA_RING_CONTEXT, ctx);
    stw_le_p(entry + PAGODA_RING_FLAGS, flags);
    stq_le_p(entry + PAGODA_RING_FENCE, ++st->fence[e]);
    /*
     * The entry goes where the device's tail is (resets, raw register
     * writes and migrations move it); the target writes at most 1024
     * entries of a raw ring size.
     */
    ring = MAX(MIN(st->ring_size[e], 1024u), 1u);
    slot = rd(st, reg + PAGODA_ENG_RING_TAIL) % ring;
    qtest_memwrite(st->qts, st->ring_base[e] + slot * PAGODA_RING_ENTRY_SIZE,
                   entry, sizeof(entry));
    tail = (slot + 1) % ring;
    if (raw & 0x40) {           /* a few slots on (never written), or any */
        uint8_t k = in_u8(st);

        tail = k & 1 ? in_u32(st) : (tail + (k >> 1) % 4) % ring;
    }
    wr(st, reg + PAGODA_ENG_RING_TAIL, tail);
    /* as the driver rings, or without DOORBELL_POLL */
    wr(st, reg + PAGODA_ENG_DOORBELL, b & 0x20 ? 1 | PAGODA_DOORBELL_POLL : 1);
    /*
     * The engines run in the main loop: left pending, the entry meets
     * whatever comes next (a reset, a migration, the next submission).
     */
    if ((b & 0x60) != 0x60) {
        run_engines(st);
    }
}

/* ---- The target ------------------------------------------------------- */

enum {
    ACT_SUBMIT, ACT_SUBMIT2, ACT_MAP, ACT_MAP2, ACT_ROOT, ACT_GART,
    ACT_REG_WRITE, ACT_REG_READ, ACT_HOST_APERTURE, ACT_VRAM, ACT_POKE,
    ACT_RESET, ACT_FAULTS, ACT_INTERRUPTS, ACT_CLOCK, ACT_DISPLAY, ACT_RUN,
    ACT_MIGRATE, ACT_CONFIG, ACT_COUNT
};

/* The function as pre_fuzz enabled and mapped it: inputs start from it. */
static FuzzState mapped;

/* Enable the function and map its BARs (once, before fuzzing). */
static void device_start(FuzzState *st)
{
    QPCIBar bar;

    st->bus = qpci_new_pc(st->qts, NULL);
    st->dev = qpci_device_find(st->bus, FUZZ_DEVFN);
    g_assert(st->dev);
    qpci_device_enable(st->dev);
    /* the large BARs first: libqos hands out MMIO space in order */
    bar = qpci_iomap(st->dev, PAGODA_BAR_VRAM, &st->vram_bar_size);
    st->vram = bar.addr;
    bar = qpci_iomap(st->dev, PAGODA_BAR_HOST_APERTURE, &st->host_ap_bar_size);
    st->host_ap = bar.addr;
    bar = qpci_iomap(st->dev, PAGODA_BAR_MMIO, NULL);
    st->mmio = bar.addr;
    for (unsigned i = 0; i < ARRAY_SIZE(st->bar_config); i++) {
        st->bar_config[i] = qpci_config_readl(st->dev,
                                              PCI_BASE_ADDRESS_0 + 4 * i);
    }
    st->command = qpci_config_readw(st->dev, PCI_COMMAND);
}

/*
 * Reset the device as a machine reset does, its BARs mapped where
 * device_start() put them. A machine reset and a new mapping per input
 * took about 3 ms, most of it rebuilding the memory map several times over:
 * as much as an average program. The device alone is reset, and its PCI
 * function too (then mapped again, in one memory transaction) only if the
 * input wrote its configuration or MSI-X state. Nothing else in the
 * machine is within an input's reach but guest RAM (the arena is cleared
 * before each input) and the interrupt controllers, which the device does
 * not read.
 */
static void device_reset_mapped(FuzzState *st)
{
    if (!st->config_written) {
        device_cold_reset(fdev.qdev);
        main_loop_wait(true);
        return;
    }
    memory_region_transaction_begin();
    pci_device_reset(PCI_DEVICE(fdev.qdev));
    function_remap(st);
    memory_region_transaction_commit();
    st->dev->msix_enabled = false;
    main_loop_wait(true);
}

static void pagoda_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    FuzzState st = mapped;

    st.qts = s;
    st.in = (FuzzInput) { data, size };
    st.arena_next = ARENA_BASE;

    if (arena_dirty) {
        zero(s, ARENA_BASE, arena_dirty);
        arena_dirty = 0;
    }
    for (unsigned n = 0; n < MAX_ACTIONS && st.in.left; n++) {
        switch (in_u8(&st) % ACT_COUNT) {
        case ACT_SUBMIT:
        case ACT_SUBMIT2:
            act_submit(&st);
            break;
        case ACT_MAP:
        case ACT_MAP2:
            act_map(&st);
            break;
        case ACT_ROOT:
            act_root(&st);
            break;
        case ACT_GART:
            act_gart(&st);
            break;
        case ACT_REG_WRITE:
            act_reg_write(&st);
            break;
        case ACT_REG_READ:
            act_reg_read(&st);
            break;
        case ACT_HOST_APERTURE:
            act_bar_access(&st, st.host_ap, st.host_ap_bar_size);
            break;
        case ACT_VRAM:
            act_bar_access(&st, st.vram, st.vram_bar_size);
            break;
        case ACT_POKE:
            act_poke(&st);
            break;
        case ACT_RESET:
            act_reset(&st);
            break;
        case ACT_FAULTS:
            act_faults(&st);
            break;
        case ACT_INTERRUPTS:
            act_interrupts(&st);
            break;
        case ACT_CLOCK:
            act_clock(&st);
            break;
        case ACT_DISPLAY:
            act_display(&st);
            break;
        case ACT_MIGRATE:
            act_migrate(&st);
            break;
        case ACT_CONFIG:
            act_config(&st);
            break;
        case ACT_RUN:
            wr(&st, PAGODA_REG_ENGINE(in_u8(&st) & 1) + PAGODA_ENG_DOORBELL, 1);
            run_engines(&st);
            break;
        }
    }
    run_engines(&st);
    device_reset_mapped(&st);
}

static void pagoda_fuzz_pre(QTestState *s)
{
    FuzzState *st = &mapped;
    uint32_t l, seg;
    Object *obj = object_resolve_path_type("", TYPE_PAGODA_FUZZ, NULL);

    serialized = getenv("FUZZ_SERIALIZE_QTEST");
    st->qts = s;
    device_start(st);
    g_assert_cmphex(rd(st, PAGODA_REG_ID), ==, PAGODA_ID);
    fdev.levels = rd(st, PAGODA_REG_MMU_LEVELS);
    g_assert(fdev.levels >= 2 && fdev.levels <= PAGODA_MMU_MAX_LEVELS);
    for (l = 0; l < fdev.levels; l++) {
        fdev.index_bits[l] = rd(st, PAGODA_REG_MMU_LEVEL(l) +
                                PAGODA_MMU_LEVEL_INDEX_BITS);
    }
    fdev.va_bits = rd(st, PAGODA_REG_MMU_VA_BITS);
    fdev.leaf64_entries = rd(st, PAGODA_REG_MMU_LEAF64_ENTRIES);
    for (seg = 0; seg < PAGODA_NUM_SEGMENTS; seg++) {
        uint32_t reg = PAGODA_REG_SEG(seg);

        fdev.seg_size[seg] = rd(st, reg + PAGODA_SEG_SIZE_LO) |
                             (uint64_t)rd(st, reg + PAGODA_SEG_SIZE_HI) << 32;
        fdev.seg_page[seg] = rd(st, reg + PAGODA_SEG_PAGE_SIZE);
    }
    fdev.host_ap_pages = rd(st, PAGODA_REG_HOST_APERTURE_PAGES);
    fdev.host_ap_page_size = rd(st, PAGODA_REG_HOST_APERTURE_PAGE_SIZE);
    fdev.disp_max_width = rd(st, PAGODA_REG_DISP_MAX_WIDTH);
    fdev.disp_max_height = rd(st, PAGODA_REG_DISP_MAX_HEIGHT);
    g_assert(obj);
    fdev.qdev = DEVICE(obj);
    g_free(state_save(&vmstate_pci_device, PCI_DEVICE(obj),
                      &fdev.pci_state_len));
    device_reset_mapped(st);
}

static GString *pagoda_fuzz_cmdline(FuzzTarget *t)
{
    const char *props = getenv("PAGODA_FUZZ_DEVICE");

    GString *cmdline = g_string_new(NULL);

    /* linked to a second, smaller GPU without hidden VRAM: peer entries reach it */
    g_string_printf(cmdline, "%s -machine pc -accel qtest -m 64M -nodefaults "
                    "-display none -device pagoda,id=pgd0,addr=04.0%s%s "
                    "-device pagoda,link=pgd0,addr=05.0,vram-size=16M,"
                    "hidden-vram-size=0",
                    TARGET_NAME, props ? "," : "", props ? props : "");
    return cmdline;
}

static void register_pagoda_fuzz_target(void)
{
    fuzz_add_target(&(FuzzTarget) {
        .name = "pagoda-fuzz",
        .description = "Programs for the Pagoda GPU: page tables, GART, "
                       "rings, commands, display, resets "
                       "(device properties from PAGODA_FUZZ_DEVICE)",
        .get_init_cmdline = pagoda_fuzz_cmdline,
        .pre_fuzz = pagoda_fuzz_pre,
        .fuzz = pagoda_fuzz,
    });
}

fuzz_target_init(register_pagoda_fuzz_target);
