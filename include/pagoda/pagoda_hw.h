/* SPDX-License-Identifier: MIT */
/*
 * Pagoda GPU hardware interface: PCI identity, BAR layout, registers, page
 * table entries, ring entries and command encodings.
 *
 * This header is the one source of truth shared by the QEMU device model,
 * the Linux driver and the tests. It holds only constants and macros so it
 * compiles unchanged in QEMU, in the kernel and in user space. The prose
 * behind every value is docs/hardware.md.
 *
 * Conventions: registers are 32 bits wide, little endian, accessed with
 * aligned 32-bit loads and stores; 64-bit quantities are _LO/_HI pairs.
 * In-memory structures (page tables, rings, commands) are little endian.
 */
#ifndef PAGODA_HW_H
#define PAGODA_HW_H

#define PAGODA_BIT(n)			(1u << (n))
#define PAGODA_BIT64(n)			(1ull << (n))
/* Mask of bits h..l inclusive, and field extraction/insertion. */
#define PAGODA_MASK64(h, l)		((~0ull >> (63 - (h))) & ~((1ull << (l)) - 1))
#define PAGODA_GET(v, h, l)		(((v) & PAGODA_MASK64(h, l)) >> (l))
#define PAGODA_SET(x, h, l)		(((unsigned long long)(x) << (l)) & PAGODA_MASK64(h, l))

/* ---- PCI identity and BARs ------------------------------------------- */
#define PAGODA_PCI_VENDOR_ID		0x1234
#define PAGODA_PCI_DEVICE_ID		0x5047	/* "PG" */
#define PAGODA_PCI_REVISION		0x01

#define PAGODA_BAR_MMIO			0	/* registers, 64 KiB */
#define PAGODA_BAR_MSIX			1	/* MSI-X table and PBA */
#define PAGODA_BAR_VRAM			2	/* segment 1, 64-bit prefetchable */
#define PAGODA_BAR_HOST_APERTURE	4	/* CPU host aperture, 64-bit prefetchable */
#define PAGODA_MMIO_SIZE		0x10000

/* ---- Identification and global registers ----------------------------- */
#define PAGODA_REG_ID			0x0000	/* reads PAGODA_ID */
#define PAGODA_ID			0x50474441	/* "PGDA" */
#define PAGODA_REG_REVISION		0x0004	/* major << 16 | minor */
#define PAGODA_REVISION			0x00010000
#define PAGODA_REG_CAPS			0x0008
#define   PAGODA_CAPS_GPUMMU		PAGODA_BIT(0)
#define   PAGODA_CAPS_HOST_APERTURE	PAGODA_BIT(1)
#define   PAGODA_CAPS_APERTURE_SEGMENT	PAGODA_BIT(2)
#define   PAGODA_CAPS_PHYSICAL_MODE	PAGODA_BIT(3)	/* render engine runs physically */
#define   PAGODA_CAPS_ENGINE_RESET	PAGODA_BIT(4)
#define   PAGODA_CAPS_DISPLAY		PAGODA_BIT(5)	/* display controller at PAGODA_REG_DISP_* */
#define PAGODA_REG_SCRATCH		0x000c	/* read/write, no effect */
#define PAGODA_REG_INT_STATUS		0x0010	/* write 1 to clear */
#define PAGODA_REG_INT_ENABLE		0x0014
#define   PAGODA_INT_ENGINE(e)		PAGODA_BIT(e)	/* engine e retired a ring entry */
#define   PAGODA_INT_FAULT		PAGODA_BIT(8)	/* fault queue not empty */
#define   PAGODA_INT_VBLANK		PAGODA_BIT(9)	/* display vertical blank */
#define   PAGODA_INT_ALL		(PAGODA_INT_ENGINE(0) | PAGODA_INT_ENGINE(1) | \
					 PAGODA_INT_FAULT)
#define PAGODA_REG_VRAM_SIZE_LO		0x0018	/* CPU-visible VRAM (segment 1) */
#define PAGODA_REG_VRAM_SIZE_HI		0x001c
#define PAGODA_REG_NUM_SEGMENTS		0x0020	/* descriptors at PAGODA_REG_SEG() */
#define PAGODA_REG_NUM_ENGINES		0x0024
#define PAGODA_REG_NUM_CONTEXTS		0x0028
#define PAGODA_REG_RESET		0x0030	/* write-only */
#define   PAGODA_RESET_ADAPTER		PAGODA_BIT(0)
#define   PAGODA_RESET_ENGINE(e)	PAGODA_BIT(8 + (e))
#define PAGODA_REG_STATUS		0x0034
#define   PAGODA_STATUS_ENGINE_BUSY(e)	PAGODA_BIT(e)
/*
 * Debug controls, read/write, 0 at power-on and after an adapter reset: a
 * way for tests to make the device misbehave on purpose.
 * ENGINE_RESET_FAILS(e): a RESET_ENGINE(e) does nothing (the engine stays
 * as it was: busy, its ring not drained), as a wedged engine would.
 */
#define PAGODA_REG_DEBUG		0x0038
#define   PAGODA_DEBUG_ENGINE_RESET_FAILS(e) PAGODA_BIT(e)
#define   PAGODA_DEBUG_IMPLEMENTED	(PAGODA_DEBUG_ENGINE_RESET_FAILS(0) | \
					 PAGODA_DEBUG_ENGINE_RESET_FAILS(1))

/*
 * Linked adapters: two to four GPUs (-device pagoda,link=<id of the first>)
 * reach each other's memory segments through PTE_ADAPTER. A GPU alone is
 * adapter 0 of a link of one: LINK_ID 0, LINK_PRESENT 1.
 */
#define PAGODA_REG_LINK_ID		0x0040	/* read-only: the link's id, 0 when not linked */
#define PAGODA_REG_LINK_INDEX		0x0044	/* read-only: this GPU's physical adapter index */
#define PAGODA_REG_LINK_PRESENT		0x0048	/* read-only: bit i set while adapter i is present */
#define PAGODA_LINK_MAX_ADAPTERS	4

/* MSI-X vectors. Without MSI-X, INTx is asserted while any enabled bit is set. */
#define PAGODA_MSIX_VECTOR_FAULT	0
#define PAGODA_MSIX_VECTOR_ENGINE(e)	(1 + (e))
#define PAGODA_MSIX_VECTOR_VBLANK	3
#define PAGODA_MSIX_VECTORS		4

/* ---- Segments ---------------------------------------------------------
 * Physical addresses are (segment id, offset) pairs packed in 64 bits:
 * the segment id in bits 60..56 and the offset in bits 47..0. Segment 0 is
 * system memory (offset = guest physical address).
 */
#define PAGODA_SEG_SYSTEM		0
#define PAGODA_SEG_VRAM			1	/* CPU-visible through BAR2 */
#define PAGODA_SEG_VRAM_HIDDEN		2	/* CPU access only through the host aperture */
#define PAGODA_SEG_APERTURE		3	/* GART over system pages */
#define PAGODA_NUM_SEGMENTS		4

#define PAGODA_PADDR(seg, off)		(PAGODA_SET(seg, 60, 56) | ((off) & PAGODA_MASK64(47, 0)))
#define PAGODA_PADDR_SEG(pa)		((unsigned int)PAGODA_GET(pa, 60, 56))
#define PAGODA_PADDR_OFFSET(pa)		((pa) & PAGODA_MASK64(47, 0))
#define PAGODA_PADDR_RESERVED		(PAGODA_MASK64(63, 61) | PAGODA_MASK64(55, 48))

/* Segment descriptor id at PAGODA_REG_SEG(id) + field, read-only. */
#define PAGODA_REG_SEG(id)		(0x0100 + (id) * 0x40)
#define PAGODA_SEG_KIND			0x00
#define   PAGODA_SEG_KIND_SYSTEM	0
#define   PAGODA_SEG_KIND_MEMORY	1
#define   PAGODA_SEG_KIND_APERTURE	2
#define PAGODA_SEG_FLAGS		0x04
#define   PAGODA_SEG_FLAG_CPU_VISIBLE	PAGODA_BIT(0)
#define   PAGODA_SEG_FLAG_APERTURE	PAGODA_BIT(1)
#define   PAGODA_SEG_FLAG_HOST_APERTURE	PAGODA_BIT(2)	/* reachable through BAR4 */
#define   PAGODA_SEG_FLAG_CACHE_COHERENT PAGODA_BIT(3)
#define PAGODA_SEG_PAGE_SIZE		0x08	/* bytes: 4096 or 65536 */
#define PAGODA_SEG_BAR			0x0c	/* BAR index, or PAGODA_SEG_NO_BAR */
#define   PAGODA_SEG_NO_BAR		0xffffffffu
#define PAGODA_SEG_SIZE_LO		0x10
#define PAGODA_SEG_SIZE_HI		0x14
#define PAGODA_SEG_GPU_BASE_LO		0x18	/* PAGODA_PADDR(id, 0) */
#define PAGODA_SEG_GPU_BASE_HI		0x1c
#define PAGODA_SEG_BAR_OFFSET_LO	0x20
#define PAGODA_SEG_BAR_OFFSET_HI	0x24

/* ---- Aperture segment (GART) ------------------------------------------
 * A table of PAGODA_GART_ENTRIES 64-bit entries at a physical address in
 * system memory or a memory segment. Entry i maps aperture page i (4 KiB)
 * to a system page; an entry without VALID maps the device's dummy page
 * (reads return zero, writes are dropped).
 */
#define PAGODA_REG_GART_BASE_LO		0x0200	/* physical address, 4 KiB aligned */
#define PAGODA_REG_GART_BASE_HI		0x0204
#define PAGODA_REG_GART_ENTRIES		0x0208	/* programmed entry count */
#define PAGODA_GART_PAGE_SIZE		4096
#define PAGODA_GART_VALID		PAGODA_BIT64(0)
#define PAGODA_GART_ADDR_MASK		PAGODA_MASK64(51, 12)

/* ---- CPU host aperture (BAR4) -------------------------------------------
 * BAR4 is split in pages of the memory segments' page size; each can be
 * mapped to one page of segment 1 or 2 with the MAP_HOST_APERTURE paging
 * command. Unmapped pages read as all ones and drop writes.
 */
#define PAGODA_REG_HOST_APERTURE_PAGES	0x0210	/* read-only */
#define PAGODA_REG_HOST_APERTURE_PAGE_SIZE 0x0214	/* read-only */

/* ---- GPU MMU capabilities -------------------------------------------- */
#define PAGODA_REG_MMU_CAPS		0x0300
#define   PAGODA_MMU_CAPS_READ_ONLY	PAGODA_BIT(0)
#define   PAGODA_MMU_CAPS_NO_EXECUTE	PAGODA_BIT(1)
#define   PAGODA_MMU_CAPS_ZERO		PAGODA_BIT(2)
#define   PAGODA_MMU_CAPS_CACHE_COHERENT PAGODA_BIT(3)
#define   PAGODA_MMU_CAPS_LARGE_PAGES	PAGODA_BIT(4)
#define   PAGODA_MMU_CAPS_64K_LEAF	PAGODA_BIT(5)
#define   PAGODA_MMU_CAPS_EXPLICIT_FLUSH PAGODA_BIT(6)	/* PTE writes need FLUSH_TLB */
#define PAGODA_REG_MMU_LEVELS		0x0304	/* 2..4; level 0 is the leaf */
#define PAGODA_REG_MMU_VA_BITS		0x0308
#define PAGODA_REG_MMU_LEAF64_ENTRIES	0x030c	/* entries of a 64 KiB-page leaf table */
/* Per level L (0 = leaf), read-only. */
#define PAGODA_REG_MMU_LEVEL(l)		(0x0310 + (l) * 0x10)
#define PAGODA_MMU_LEVEL_INDEX_BITS	0x00	/* root: maximum entries = 1 << bits */
#define PAGODA_MMU_LEVEL_TABLE_SIZE	0x04	/* bytes of a full table */
#define PAGODA_MMU_LEVEL_SEGMENTS	0x08	/* bit s: tables may live in segment s */
#define PAGODA_MMU_LEVEL_ALIGN		0x0c	/* table alignment in bytes */
#define PAGODA_MMU_MAX_LEVELS		4

/* TLB counters (64-bit, read-only; write 0 to PAGODA_REG_TLB_HITS_LO to clear all). */
#define PAGODA_REG_TLB_HITS_LO		0x0360
#define PAGODA_REG_TLB_HITS_HI		0x0364
#define PAGODA_REG_TLB_MISSES_LO	0x0368
#define PAGODA_REG_TLB_MISSES_HI	0x036c
#define PAGODA_REG_TLB_FLUSHES		0x0370	/* flushes: FLUSH_TLB commands and root commits */
#define PAGODA_REG_TLB_ENTRIES		0x0374	/* total entries, all page sizes */
#define PAGODA_REG_TLB_VALID		0x0378	/* entries currently valid */

/* ---- Contexts ----------------------------------------------------------
 * Select a context with CTX_SELECT, then read or write its fields. Writing
 * CTX_ROOT_ENTRIES commits the root (ROOT_LO/HI written before it) and
 * invalidates the context's TLB entries.
 */
#define PAGODA_NUM_CONTEXTS		64	/* PAGODA_REG_NUM_CONTEXTS reads this */
#define PAGODA_REG_CTX_SELECT		0x0400
#define PAGODA_REG_CTX_ROOT_LO		0x0404	/* physical address of the root table */
#define PAGODA_REG_CTX_ROOT_HI		0x0408
#define PAGODA_REG_CTX_ROOT_ENTRIES	0x040c	/* 0 = no address space */
#define PAGODA_REG_CTX_STATUS		0x0410	/* write 1 to HALTED to resume */
#define   PAGODA_CTX_STATUS_HALTED	PAGODA_BIT(0)

/* ---- Fault queue -------------------------------------------------------
 * Faults are queued (PAGODA_FAULT_QUEUE_DEPTH records); the registers show
 * the oldest. Writing FAULT_POP removes it. PAGODA_INT_FAULT stays set while
 * the queue is not empty.
 */
#define PAGODA_REG_FAULT_COUNT		0x0500	/* records queued */
#define PAGODA_REG_FAULT_LOST		0x0504	/* records dropped on overflow */
#define PAGODA_REG_FAULT_CONTEXT	0x0508
#define PAGODA_REG_FAULT_ENGINE		0x050c	/* engine id, or PAGODA_FAULT_SOURCE_DISPLAY */
#define   PAGODA_FAULT_SOURCE_DISPLAY	0x100	/* raised by the display controller */
#define PAGODA_REG_FAULT_VA_LO		0x0510
#define PAGODA_REG_FAULT_VA_HI		0x0514
#define PAGODA_REG_FAULT_LEVEL		0x0518	/* walk level, 0xff if not a walk fault */
#define PAGODA_REG_FAULT_ACCESS		0x051c
#define   PAGODA_ACCESS_READ		0
#define   PAGODA_ACCESS_WRITE		1
#define   PAGODA_ACCESS_EXECUTE		2
#define PAGODA_REG_FAULT_FENCE_LO	0x0520
#define PAGODA_REG_FAULT_FENCE_HI	0x0524
#define PAGODA_REG_FAULT_CODE		0x0528
#define   PAGODA_FAULT_INVALID_PTE	1	/* entry without VALID, or reserved bits */
#define   PAGODA_FAULT_READ_ONLY	2	/* write through a read-only entry */
#define   PAGODA_FAULT_NO_EXECUTE	3	/* command fetch through no-execute */
#define   PAGODA_FAULT_ROOT_RANGE	4	/* root index >= context root entries */
#define   PAGODA_FAULT_OUT_OF_SEGMENT	5	/* physical address outside its segment */
#define   PAGODA_FAULT_BAD_COMMAND	6	/* malformed or unknown command */
#define   PAGODA_FAULT_BAD_RING_ENTRY	7	/* malformed ring entry */
#define   PAGODA_FAULT_BAD_DISPLAY	8	/* scanout programming rejected at a flip */
#define   PAGODA_FAULT_BAD_PEER		9	/* PTE_ADAPTER names no present peer's memory */
#define PAGODA_REG_FAULT_FLAGS		0x052c
#define   PAGODA_FAULT_FLAG_WRITE	PAGODA_BIT(0)
#define   PAGODA_FAULT_FLAG_FENCE_INVALID PAGODA_BIT(1)
#define   PAGODA_FAULT_FLAG_ADAPTER_RESET_REQUIRED PAGODA_BIT(2)
#define   PAGODA_FAULT_FLAG_ENGINE_RESET_REQUIRED PAGODA_BIT(3)
#define   PAGODA_FAULT_FLAG_FATAL	PAGODA_BIT(4)
#define PAGODA_REG_FAULT_POP		0x0530	/* write-only */
#define PAGODA_FAULT_QUEUE_DEPTH	16

/* ---- Engines -----------------------------------------------------------
 * Engine e's registers at PAGODA_REG_ENGINE(e) + field. The ring is an array
 * of PAGODA_RING_ENTRY_SIZE-byte entries at a physical address; the device
 * consumes entries from HEAD to TAIL after a DOORBELL write.
 */
#define PAGODA_ENGINE_PAGING		0
#define PAGODA_ENGINE_RENDER		1
#define PAGODA_NUM_ENGINES		2

#define PAGODA_REG_ENGINE(e)		(0x1000 + (e) * 0x100)
#define PAGODA_ENG_RING_BASE_LO		0x00	/* physical address, 4 KiB aligned */
#define PAGODA_ENG_RING_BASE_HI		0x04
#define PAGODA_ENG_RING_SIZE		0x08	/* entries, power of two, 0 = off */
#define   PAGODA_RING_MAX_ENTRIES	65536
#define PAGODA_ENG_RING_HEAD		0x0c	/* read-only: next entry to run */
#define PAGODA_ENG_RING_TAIL		0x10	/* next entry the driver writes */
#define PAGODA_ENG_DOORBELL		0x14	/* write: run entries up to TAIL */
#define   PAGODA_DOORBELL_POLL		PAGODA_BIT(1)	/* the writer reads the fence */
#define PAGODA_ENG_FENCE_LO		0x18	/* fence of the last retired entry */
#define PAGODA_ENG_FENCE_HI		0x1c
#define PAGODA_ENG_ABORTED_FENCE_LO	0x20	/* last fence aborted by an engine reset */
#define PAGODA_ENG_ABORTED_FENCE_HI	0x24
#define PAGODA_ENG_STATUS		0x28
#define   PAGODA_ENG_STATUS_BUSY	PAGODA_BIT(0)
#define   PAGODA_ENG_STATUS_WAITING	PAGODA_BIT(1)	/* blocked in WAIT_FENCE */
#define PAGODA_ENG_CAPS			0x2c
#define   PAGODA_ENG_CAPS_PAGING	PAGODA_BIT(0)	/* runs paging commands */
#define   PAGODA_ENG_CAPS_RENDER	PAGODA_BIT(1)	/* runs render commands */
#define   PAGODA_ENG_CAPS_VIRTUAL	PAGODA_BIT(2)	/* ring entries may be virtual */
#define   PAGODA_ENG_CAPS_PHYSICAL	PAGODA_BIT(3)	/* ring entries may be physical */
/*
 * Fence writeback: a system-memory address (segment 0, 8-byte aligned; 0 =
 * off) where the engine writes ENG_FENCE, as a little-endian u64, each time
 * it moves, before the entry's interrupt: the driver's interrupt handler
 * reads memory instead of the registers.
 */
#define PAGODA_ENG_FENCE_WB_LO		0x30
#define PAGODA_ENG_FENCE_WB_HI		0x34

/* Ring entry: one DMA buffer. */
#define PAGODA_RING_ENTRY_SIZE		32
#define PAGODA_RING_ADDR		0x00	/* u64: buffer address */
#define PAGODA_RING_LENGTH		0x08	/* u32: buffer length in bytes, multiple of 4 */
#define PAGODA_RING_CONTEXT		0x0c	/* u16: context id */
#define PAGODA_RING_FLAGS		0x0e	/* u16 */
#define   PAGODA_RING_FLAG_VIRTUAL	PAGODA_BIT(0)	/* buffer and command addresses are VAs */
#define   PAGODA_RING_FLAG_INTERRUPT	PAGODA_BIT(1)	/* raise PAGODA_INT_ENGINE when retired */
#define   PAGODA_RING_FLAG_STATUS	PAGODA_BIT(2)	/* outcome to RING_STATUS when retired */
#define PAGODA_RING_FENCE		0x10	/* u64: written to ENG_FENCE when retired */
#define PAGODA_RING_RESERVED		0x18	/* u64: must be zero when submitted */
/*
 * With PAGODA_RING_FLAG_STATUS the engine writes how the entry ended, as a
 * little-endian u32, over the low half of RING_RESERVED, before it moves
 * ENG_FENCE: whether a job ran to its end, without a command of its own.
 */
#define PAGODA_RING_STATUS		PAGODA_RING_RESERVED
#define   PAGODA_RING_STATUS_COMPLETED	1	/* ran to its end */
#define   PAGODA_RING_STATUS_FAULTED	2	/* a fault stopped it */
#define   PAGODA_RING_STATUS_SKIPPED	3	/* not run: its context was halted */
#define PAGODA_RING_MAX_LENGTH		(1u << 24)

/* ---- Display controller ------------------------------------------------
 * One scanout reading a surface physically, from a memory segment or the
 * aperture segment. The surface registers (SURFACE .. CONTROL) are staged:
 * writing FLIP latches them at the next vertical blank, when FLIP_PENDING
 * clears, FRAME advances and PAGODA_INT_VBLANK is raised. Vertical blanks
 * come at the refresh rate while the scanout is enabled or a flip is
 * pending. A latched state the controller cannot show (bad geometry or
 * format, surface outside its segment) shows black, sets STATUS.FAULT and
 * queues one fault record (engine PAGODA_FAULT_SOURCE_DISPLAY). A cursor
 * (CONTROL.CURSOR) is an ARGB8888 image, its alpha premultiplied, drawn
 * over the surface at CURSOR_POS; its registers are staged with the rest.
 */
#define PAGODA_REG_DISP_MAX_WIDTH	0x2000	/* read-only, pixels */
#define PAGODA_REG_DISP_MAX_HEIGHT	0x2004	/* read-only, lines */
#define PAGODA_REG_DISP_PREF_WIDTH	0x2008	/* read-only: preferred mode */
#define PAGODA_REG_DISP_PREF_HEIGHT	0x200c
#define PAGODA_REG_DISP_REFRESH		0x2010	/* read-only: vertical blanks per 1000 s */
#define PAGODA_REG_DISP_NUM_MODES	0x2014	/* read-only: entries at DISP_MODE() */
#define PAGODA_REG_DISP_CURSOR_MAX	0x2018	/* read-only: largest cursor, width | height << 16 */
#define   PAGODA_DISP_CURSOR_MAX_SIZE	64
#define PAGODA_REG_DISP_MODE(i)		(0x2100 + (i) * 4)	/* width | height << 16 */
#define PAGODA_DISP_MAX_MODES		32
#define PAGODA_DISP_MODE_WIDTH(m)	((m) & 0xffff)
#define PAGODA_DISP_MODE_HEIGHT(m)	((m) >> 16)

#define PAGODA_REG_DISP_SURFACE_LO	0x2020	/* staged: PAGODA_PADDR() of the first pixel */
#define PAGODA_REG_DISP_SURFACE_HI	0x2024
#define PAGODA_REG_DISP_WIDTH		0x2028	/* staged: 1 .. MAX_WIDTH */
#define PAGODA_REG_DISP_HEIGHT		0x202c	/* staged: 1 .. MAX_HEIGHT */
#define PAGODA_REG_DISP_STRIDE		0x2030	/* staged: bytes, multiple of 4, >= width * bpp */
#define PAGODA_REG_DISP_FORMAT		0x2034	/* staged: a DRM fourcc code */
#define   PAGODA_DISP_FORMAT_XRGB8888	0x34325258	/* 'XR24': 4 bytes, x:R:G:B */
#define   PAGODA_DISP_FORMAT_RGB565	0x36314752	/* 'RG16': 2 bytes, R:G:B 5:6:5 */
#define   PAGODA_DISP_FORMAT_ARGB8888	0x34325241	/* 'AR24': 4 bytes, A:R:G:B, shown opaque */
#define PAGODA_REG_DISP_CONTROL		0x2038	/* staged */
#define   PAGODA_DISP_CONTROL_ENABLE	PAGODA_BIT(0)	/* scan out; off shows nothing */
#define   PAGODA_DISP_CONTROL_CURSOR	PAGODA_BIT(1)	/* draw the cursor (with ENABLE) */
#define PAGODA_REG_DISP_FLIP		0x203c	/* write: latch the staged state at the next vblank */
#define PAGODA_REG_DISP_STATUS		0x2040	/* read-only */
#define   PAGODA_DISP_STATUS_FLIP_PENDING PAGODA_BIT(0)
#define   PAGODA_DISP_STATUS_ENABLED	PAGODA_BIT(1)	/* the latched state scans out */
#define   PAGODA_DISP_STATUS_FAULT	PAGODA_BIT(2)	/* the latched state shows black */
#define PAGODA_REG_DISP_FRAME_LO	0x2048	/* read-only: vertical blanks since reset */
#define PAGODA_REG_DISP_FRAME_HI	0x204c
#define PAGODA_REG_DISP_ACTIVE_SURFACE_LO 0x2050	/* read-only: latched SURFACE */
#define PAGODA_REG_DISP_ACTIVE_SURFACE_HI 0x2054
#define PAGODA_REG_DISP_SINCE_VBLANK	0x2058	/* read-only: ns since the last vertical blank */
#define   PAGODA_DISP_NO_VBLANK		0xffffffff	/* none since reset, or 2^32 - 1 ns or more */
#define PAGODA_REG_DISP_CURSOR_LO	0x2060	/* staged: PAGODA_PADDR() of the cursor's first pixel */
#define PAGODA_REG_DISP_CURSOR_HI	0x2064
#define PAGODA_REG_DISP_CURSOR_SIZE	0x2068	/* staged: width | height << 16, 1 .. CURSOR_MAX */
#define PAGODA_REG_DISP_CURSOR_STRIDE	0x206c	/* staged: bytes, multiple of 4, >= width * 4 */
#define PAGODA_REG_DISP_CURSOR_POS	0x2070	/* staged: x | y << 16, signed 16-bit each */
#define PAGODA_DISP_XY(x, y)		(((x) & 0xffff) | ((unsigned int)((y) & 0xffff) << 16))
#define PAGODA_DISP_X(v)		((int16_t)((v) & 0xffff))
#define PAGODA_DISP_Y(v)		((int16_t)((v) >> 16))

/* ---- Commands -----------------------------------------------------------
 * A DMA buffer is a sequence of commands. Each starts with a 32-bit header:
 * opcode in bits 7..0, flags in bits 15..8, total length in dwords
 * (header included) in bits 31..16. Operands follow as little-endian u32/u64
 * fields at the byte offsets given below (from the header).
 */
#define PAGODA_CMD_HEADER(op, flags, dwords) \
	((op) | ((flags) << 8) | ((unsigned int)(dwords) << 16))
#define PAGODA_CMD_OP(h)		((h) & 0xff)
#define PAGODA_CMD_FLAGS(h)		(((h) >> 8) & 0xff)
#define PAGODA_CMD_DWORDS(h)		((h) >> 16)

/* Any engine. */
#define PAGODA_CMD_NOP			0x00	/* [dwords] any length */
#define PAGODA_CMD_SIGNAL_FENCE		0x01	/* +8 addr, +16 value: 6 dwords */
#define   PAGODA_SIGNAL_INTERRUPT	PAGODA_BIT(0)
#define PAGODA_CMD_WAIT_FENCE		0x02	/* +8 addr, +16 value: 6 dwords; waits until u64 at addr >= value */

/* Paging engine. Addresses are physical except in VIRTUAL_* commands. */
#define PAGODA_CMD_TRANSFER		0x10	/* +8 src, +16 dst, +24 size: 8 dwords */
#define   PAGODA_TRANSFER_SRC_LIST	PAGODA_BIT(0)	/* src is a list of u64 page addresses */
#define   PAGODA_TRANSFER_DST_LIST	PAGODA_BIT(1)	/* dst is a list of u64 page addresses */
#define PAGODA_CMD_FILL			0x11	/* +4 pattern, +8 dst, +16 size: 6 dwords */
#define PAGODA_CMD_VIRTUAL_TRANSFER	0x12	/* +8 src va, +16 dst va, +24 size: 8 dwords */
#define PAGODA_CMD_VIRTUAL_FILL		0x13	/* +4 pattern, +8 dst va, +16 size: 6 dwords */
#define   PAGODA_VIRTUAL_64K		PAGODA_BIT(0)	/* VAs and size are 64 KiB aligned */
#define PAGODA_CMD_UPDATE_PAGE_TABLE	0x14	/* +4 level, +8 table, +16 start, +20 count, +24 PTEs */
#define   PAGODA_UPT_REPEAT		PAGODA_BIT(0)	/* one PTE at +24 fills count entries */
#define   PAGODA_UPT_LEAF64		PAGODA_BIT(1)	/* level-0 table holds 64 KiB pages */
#define   PAGODA_UPT_REPEAT_INCREMENT	PAGODA_BIT(2)	/* with REPEAT: PTE address advances a page per entry */
#define PAGODA_CMD_COPY_PTES		0x15	/* +4 count, +8 src table, +16 dst table, +24 src index, +28 dst index: 8 dwords */
#define   PAGODA_COPY_PTES_MAX		(1u << 20)	/* count, and index + count */
#define PAGODA_CMD_FLUSH_TLB		0x16	/* +4 context, +8 va, +16 size: 6 dwords; size 0 = whole context */
#define   PAGODA_FLUSH_ALL_CONTEXTS	PAGODA_BIT(0)
#define PAGODA_CMD_MAP_APERTURE		0x17	/* +4 first page, +8 count, +16 u64 system pages[count] */
#define PAGODA_CMD_UNMAP_APERTURE	0x18	/* +4 first page, +8 count: 4 dwords */
#define PAGODA_CMD_MAP_HOST_APERTURE	0x19	/* +4 segment, +8 count, +12 u32 aperture pages[count], then u32 segment pages[count] */
#define PAGODA_CMD_UNMAP_HOST_APERTURE	0x1a	/* +4 count, +8 u32 aperture pages[count] */

/* Render engine. Addresses are VAs of the ring entry's context in virtual mode, physical otherwise. */
#define PAGODA_CMD_COPY			0x20	/* +8 src, +16 dst, +24 size: 8 dwords */
#define PAGODA_CMD_FILL32		0x21	/* +4 pattern, +8 dst, +16 size: 6 dwords */
#define PAGODA_CMD_WRITE_IMM		0x22	/* +4 count, +8 dst, +16 u32 values[count] */
#define PAGODA_CMD_CRC32		0x23	/* +8 src, +16 size, +24 dst (u32 result): 8 dwords */
#define PAGODA_CMD_JUMP			0x24	/* +4 length in bytes, +8 target: 4 dwords */
#define PAGODA_CMD_CALL			0x25	/* +4 length in bytes, +8 target: 4 dwords */
#define PAGODA_CALL_DEPTH		4

#define PAGODA_CMD_MAX_DWORDS		0xffff

/* ---- Page table entries ------------------------------------------------
 * One 64-bit word. The page (or next table) address is a 4 KiB frame number
 * in bits 63..20 within segment SEGMENT.
 */
#define PAGODA_PTE_VALID		PAGODA_BIT64(0)
#define PAGODA_PTE_ZERO			PAGODA_BIT64(1)	/* with VALID: reads 0, writes dropped */
#define PAGODA_PTE_CACHE_COHERENT	PAGODA_BIT64(2)
#define PAGODA_PTE_READ_ONLY		PAGODA_BIT64(3)
#define PAGODA_PTE_NO_EXECUTE		PAGODA_BIT64(4)
#define PAGODA_PTE_SEGMENT_MASK		PAGODA_MASK64(9, 5)
#define PAGODA_PTE_LARGE_PAGE		PAGODA_BIT64(10)	/* non-leaf entry maps its range */
#define PAGODA_PTE_ADAPTER_MASK		PAGODA_MASK64(16, 11)	/* 0: this GPU; i + 1: adapter i */
#define PAGODA_PTE_LEAF64		PAGODA_BIT64(17)	/* level-1 entry: 64 KiB leaf table */
#define PAGODA_PTE_RESERVED_MASK	PAGODA_MASK64(19, 18)
#define PAGODA_PTE_FRAME_SHIFT		20
#define PAGODA_PTE_ADDR_SHIFT		12

#define PAGODA_PTE_SEGMENT(pte)		((unsigned int)PAGODA_GET(pte, 9, 5))
#define PAGODA_PTE_ADAPTER(pte)		((unsigned int)PAGODA_GET(pte, 16, 11))
#define PAGODA_PTE_PEER(i)		PAGODA_SET((i) + 1, 16, 11)	/* linked adapter i's memory */
#define PAGODA_PTE_ADDR(pte)		(((pte) >> PAGODA_PTE_FRAME_SHIFT) << PAGODA_PTE_ADDR_SHIFT)
#define PAGODA_PTE_MAKE(seg, addr, flags) \
	(PAGODA_SET(seg, 9, 5) | (((unsigned long long)(addr) >> PAGODA_PTE_ADDR_SHIFT) \
	 << PAGODA_PTE_FRAME_SHIFT) | (flags))

#endif /* PAGODA_HW_H */
