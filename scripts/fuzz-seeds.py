#!/usr/bin/env python3
"""Seed inputs and a dictionary for QEMU's generic-fuzz target on Pagoda.

usage: fuzz-seeds.py SEED_DIR DICT_FILE

Each seed is a generic-fuzz program (operations separated by "FUZZ") that
programs one ring and rings its doorbell, so that the fuzzer starts from
inputs that reach every command instead of having to find the ring
registers and a well-formed ring entry by chance. generic-fuzz serves the
device's DMA reads from a list of patterns, used in turn, one per read:
a seed lists the ring entry, the command (read twice: header, then whole
command) and whatever the command reads next (page lists, page tables).

The generic-fuzz operation encodings are those of QEMU 10.0's
tests/qtest/fuzz/generic_fuzz.c; the register and command encodings come
from include/pagoda/pagoda_hw.h.
"""
import os
import struct
import sys

SEP = b"FUZZ"
OP_READ, OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLOCK_STEP = 2, 3, 7, 9
LONG, QUAD = 2, 3
# Index of the device's regions among the fuzzed ones, in address order
# (the BARs as generic-fuzz maps them): registers, MSI-X table, MSI-X PBA,
# host aperture.
MMIO, HOST_APERTURE = 0, 3

# pagoda_hw.h
ENG = {"paging": 0, "render": 1}
def REG_ENGINE(e): return 0x1000 + e * 0x100
RING_BASE_LO, RING_SIZE, RING_TAIL, DOORBELL = 0x00, 0x08, 0x10, 0x14
REG_INT_ENABLE, REG_RESET, REG_STATUS = 0x14, 0x30, 0x34
REG_GART_BASE_LO, REG_GART_ENTRIES = 0x200, 0x208
REG_CTX_SELECT, REG_CTX_ROOT_LO, REG_CTX_ROOT_ENTRIES, REG_CTX_STATUS = \
    0x400, 0x404, 0x40c, 0x410
REG_FAULT_COUNT, REG_FAULT_CODE, REG_FAULT_POP = 0x500, 0x528, 0x530
RING_FLAG_VIRTUAL, RING_FLAG_INTERRUPT = 1, 2
NOP, SIGNAL_FENCE, WAIT_FENCE = 0x00, 0x01, 0x02
TRANSFER, FILL, VTRANSFER, VFILL, UPT, COPY_PTES, FLUSH_TLB = range(0x10, 0x17)
MAP_AP, UNMAP_AP, MAP_HOST_AP, UNMAP_HOST_AP = range(0x17, 0x1b)
COPY, FILL32, WRITE_IMM, CRC32, JUMP, CALL = range(0x20, 0x26)
PTE_VALID, PTE_LARGE_PAGE, PTE_LEAF64 = 1, 1 << 10, 1 << 17

def PADDR(seg, off): return (seg << 56) | off
def PTE(seg, addr, flags=PTE_VALID): return (seg << 5) | ((addr >> 12) << 20) | flags

# Guest physical layout of the seeds (all in RAM below 1 GiB).
RING, BUF, DATA, DATA2, TABLE, GART, FENCE = \
    0x100000, 0x200000, 0x300000, 0x340000, 0x400000, 0x600000, 0x700000


def op(code, payload=b""):
    return bytes([code]) + payload

def write(reg, val, region=MMIO, size=LONG):
    return op(OP_WRITE, struct.pack("<BBxxIQ", size, region, reg, val))

def read(reg, region=MMIO, size=LONG):
    return op(OP_READ, struct.pack("<BBxxI", size, region, reg))

def pattern(data):
    return op(OP_ADD_DMA_PATTERN, struct.pack("<BB", 0, 0) + data)

def u32s(*vals):
    return b"".join(struct.pack("<I", v & 0xffffffff) for v in vals)

def u64s(*vals):
    return b"".join(struct.pack("<Q", v) for v in vals)

def cmd(opcode, flags, body):
    """A command: header then body (bytes, a multiple of 4)."""
    dwords = 1 + len(body) // 4
    return u32s(opcode | flags << 8 | dwords << 16) + body

def entry(addr, length, ctx=0, flags=0, fence=1):
    return u64s(addr) + u32s(length) + struct.pack("<HH", ctx, flags) + \
        u64s(fence, 0)


def submit(engine, commands, reads=(), ctx=0, flags=RING_FLAG_INTERRUPT,
           setup=(), after=()):
    """Ops that run one ring entry holding @commands (one DMA pattern per
    command: read for its header and again whole) on @engine."""
    e = REG_ENGINE(ENG[engine])
    length = sum(len(c) for c in commands)
    pats = [entry(BUF, length, ctx, flags)]
    for c in commands:
        pats += [c, c]
    pats += list(reads)
    ops = [pattern(p) for p in pats]
    ops += list(setup)
    ops += [write(REG_INT_ENABLE, 0x103),
            write(e + RING_BASE_LO, RING), write(e + RING_SIZE, 4),
            write(e + RING_TAIL, 1), write(e + DOORBELL, 1),
            read(REG_STATUS), read(REG_FAULT_COUNT), read(REG_FAULT_CODE),
            write(REG_FAULT_POP, 1)]
    ops += list(after)
    return SEP.join(ops)


def context_root(ctx=0, root=TABLE, entries=1):
    return [write(REG_CTX_SELECT, ctx), write(REG_CTX_ROOT_LO, root),
            write(REG_CTX_ROOT_ENTRIES, entries)]

# Page-table reads of a 4-level walk: three upper entries, then the group
# of 16 leaf entries; all map VA 0.. to the system page at DATA.
WALK = [u64s(PTE(0, TABLE + 0x1000))] * 3 + [u64s(PTE(0, DATA)) * 16]
# The same with two levels (mmu-levels=2), a 2 MiB page, a 64 KiB leaf table.
WALK2 = [u64s(PTE(0, TABLE + 0x1000)), u64s(PTE(0, DATA)) * 16]
WALK_LARGE = [u64s(PTE(0, TABLE + 0x1000))] * 2 + \
    [u64s(PTE(0, 0x200000, PTE_VALID | PTE_LARGE_PAGE))]
WALK_LEAF64 = [u64s(PTE(0, TABLE + 0x1000))] * 2 + \
    [u64s(PTE(0, TABLE + 0x2000, PTE_VALID | PTE_LEAF64)), u64s(PTE(0, 0x10000)) * 16]


def seeds():
    s = {}
    s["nop"] = submit("render", [cmd(NOP, 0, b"")])
    s["signal-fence"] = submit("render", [cmd(SIGNAL_FENCE, 1, u32s(0) + u64s(FENCE, 5))])
    s["wait-fence"] = submit("render", [cmd(WAIT_FENCE, 0, u32s(0) + u64s(FENCE, 0))],
                             reads=[u64s(1)])
    s["transfer"] = submit("paging", [cmd(TRANSFER, 0, u32s(0) + u64s(DATA, PADDR(1, 0), 0x2000))])
    s["transfer-lists"] = submit(
        "paging", [cmd(TRANSFER, 3, u32s(0) + u64s(DATA, DATA2, 0x2000))],
        reads=[u64s(PADDR(1, 0x10000)), u64s(PADDR(2, 0))])
    s["fill"] = submit("paging", [cmd(FILL, 0, u32s(0x5a5a0102) + u64s(PADDR(1, 0x1000), 0x3000))])
    s["fill-aperture"] = submit(
        "paging", [cmd(FILL, 0, u32s(0x11223344) + u64s(PADDR(3, 0), 0x2000))],
        reads=[u64s(DATA | 1, (DATA + 0x1000) | 1)],
        setup=[write(REG_GART_BASE_LO, GART), write(REG_GART_ENTRIES, 16)])
    s["fill-aperture-no-gart"] = submit(
        "paging", [cmd(FILL, 0, u32s(0x11223344) + u64s(PADDR(3, 0x1000), 0x2000))])
    s["virtual-fill"] = submit(
        "paging", [cmd(VFILL, 0, u32s(0xcafe) + u64s(0, 0x2000))],
        reads=WALK, setup=context_root())
    for name, walk in (("2-levels", WALK2), ("large-page", WALK_LARGE),
                       ("leaf64", WALK_LEAF64)):
        s["virtual-fill-" + name] = submit(
            "paging", [cmd(VFILL, 0, u32s(0xcafe) + u64s(0, 0x2000))],
            reads=walk, setup=context_root())
    s["virtual-transfer"] = submit(
        "paging", [cmd(VTRANSFER, 0, u32s(0) + u64s(0, 0x1000, 0x1000))],
        reads=WALK, setup=context_root())
    s["update-page-table"] = submit(
        "paging", [cmd(UPT, 0, u32s(0) + u64s(TABLE) + u32s(0, 2) +
                       u64s(PTE(0, DATA), PTE(1, 0)))])
    s["update-page-table-repeat"] = submit(
        "paging", [cmd(UPT, 5, u32s(0) + u64s(TABLE) + u32s(0, 64) + u64s(PTE(0, DATA)))])
    s["copy-ptes"] = submit("paging", [cmd(COPY_PTES, 0, u32s(4) + u64s(TABLE, TABLE + 0x1000) + u32s(0, 8))])
    s["flush-tlb"] = submit("paging", [cmd(FLUSH_TLB, 0, u32s(0) + u64s(0, 0x10000))])
    s["map-aperture"] = submit(
        "paging", [cmd(MAP_AP, 0, u32s(0, 2, 0) + u64s(DATA, DATA + 0x1000))],
        setup=[write(REG_GART_BASE_LO, GART), write(REG_GART_ENTRIES, 16)])
    s["unmap-aperture"] = submit(
        "paging", [cmd(UNMAP_AP, 0, u32s(1, 2, 0))],
        setup=[write(REG_GART_BASE_LO, GART), write(REG_GART_ENTRIES, 16)])
    s["map-host-aperture"] = submit(
        "paging", [cmd(MAP_HOST_AP, 0, u32s(1, 2, 0, 1, 3, 4))],
        after=[write(0x10, 0xdeadbeef, HOST_APERTURE), read(0x10, HOST_APERTURE),
               read(0x10008, HOST_APERTURE, QUAD)])
    s["unmap-host-aperture"] = submit("paging", [cmd(UNMAP_HOST_AP, 0, u32s(2, 0, 1))])
    s["copy"] = submit("render", [cmd(COPY, 0, u32s(0) + u64s(DATA, PADDR(1, 0x20000), 0x1800))])
    s["fill32"] = submit("render", [cmd(FILL32, 0, u32s(0x01020304) + u64s(PADDR(2, 0), 0x1000))])
    s["write-imm"] = submit("render", [cmd(WRITE_IMM, 0, u32s(3) + u64s(DATA) + u32s(1, 2, 3))])
    s["crc32"] = submit("render", [cmd(CRC32, 0, u32s(0) + u64s(DATA, 0x1000, FENCE))])
    s["jump"] = submit("render", [cmd(JUMP, 0, u32s(4) + u64s(BUF + 0x1000))],
                       reads=[cmd(NOP, 0, b"")] * 2)
    s["call"] = submit("render", [cmd(CALL, 0, u32s(4) + u64s(BUF + 0x1000))],
                       reads=[cmd(NOP, 0, b"")] * 2)
    # Virtual render entry: the command fetch itself walks the page tables.
    s["render-virtual"] = SEP.join([pattern(entry(0, 24, 0, RING_FLAG_VIRTUAL))] +
                                   [pattern(p) for p in WALK] +
                                   [pattern(cmd(FILL32, 0, u32s(7) + u64s(0x2000, 0x1000)))] * 2 +
                                   context_root() +
                                   [write(REG_ENGINE(1) + RING_BASE_LO, RING),
                                    write(REG_ENGINE(1) + RING_SIZE, 4),
                                    write(REG_ENGINE(1) + RING_TAIL, 1),
                                    write(REG_ENGINE(1) + DOORBELL, 1),
                                    read(REG_FAULT_COUNT)])
    s["engine-reset"] = submit("render", [cmd(WAIT_FENCE, 0, u32s(0) + u64s(FENCE, 9))],
                               reads=[u64s(1)],
                               after=[op(OP_CLOCK_STEP), write(REG_RESET, 1 << 9),
                                      write(REG_CTX_STATUS, 1), write(REG_RESET, 1)])
    return s


def dictionary():
    """The separator and the offset of every register, as read and write
    operations encode them."""
    regs = list(range(0, 0x38, 4))                      # global
    regs += list(range(0x100, 0x200, 4))                # segment descriptors
    regs += list(range(0x200, 0x20c, 4)) + [0x210, 0x214]   # GART, host aperture
    regs += list(range(0x300, 0x37c, 4))                # MMU and TLB
    regs += list(range(0x400, 0x414, 4))                # contexts
    regs += list(range(0x500, 0x534, 4))                # fault queue
    regs += [REG_ENGINE(e) + r for e in (0, 1) for r in range(0, 0x30, 4)]
    return [SEP] + [struct.pack("<I", r) for r in regs]


def main():
    seed_dir, dict_file = sys.argv[1:3]
    os.makedirs(seed_dir, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(seed_dir, name), "wb") as f:
            f.write(data)
    with open(dict_file, "w") as f:
        for w in dictionary():
            f.write('"%s"\n' % "".join("\\x%02x" % b for b in w))


if __name__ == "__main__":
    main()
