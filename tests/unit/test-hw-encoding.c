/*
 * Unit tests of the encodings in include/pagoda/pagoda_hw.h: physical
 * addresses, page table entries and command headers round-trip through the
 * macros the device, the driver and the tests all use.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "pagoda/pagoda_hw.h"

static int failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

static void test_paddr(void)
{
	uint64_t pa = PAGODA_PADDR(PAGODA_SEG_VRAM_HIDDEN, 0x123456789000ull);

	CHECK(PAGODA_PADDR_SEG(pa) == PAGODA_SEG_VRAM_HIDDEN);
	CHECK(PAGODA_PADDR_OFFSET(pa) == 0x123456789000ull);
	CHECK(!(pa & PAGODA_PADDR_RESERVED));
	/* offsets wider than 48 bits never leak into the segment field */
	CHECK(PAGODA_PADDR_SEG(PAGODA_PADDR(1, 1ull << 50)) == 1);
	CHECK(PAGODA_PADDR(0, 0x1000) == 0x1000);
}

static void test_pte(void)
{
	uint64_t addr = 0xfedcba987000ull;
	uint64_t pte = PAGODA_PTE_MAKE(PAGODA_SEG_APERTURE, addr,
				       PAGODA_PTE_VALID | PAGODA_PTE_READ_ONLY);

	CHECK(PAGODA_PTE_ADDR(pte) == addr);
	CHECK(PAGODA_PTE_SEGMENT(pte) == PAGODA_SEG_APERTURE);
	CHECK(pte & PAGODA_PTE_VALID);
	CHECK(pte & PAGODA_PTE_READ_ONLY);
	CHECK(!(pte & (PAGODA_PTE_RESERVED_MASK | PAGODA_PTE_ADAPTER_MASK |
		       PAGODA_PTE_LARGE_PAGE | PAGODA_PTE_ZERO)));
	/* the flag bits and the frame number do not overlap */
	CHECK(!((PAGODA_PTE_VALID | PAGODA_PTE_ZERO | PAGODA_PTE_CACHE_COHERENT |
		 PAGODA_PTE_READ_ONLY | PAGODA_PTE_NO_EXECUTE | PAGODA_PTE_SEGMENT_MASK |
		 PAGODA_PTE_LARGE_PAGE | PAGODA_PTE_ADAPTER_MASK | PAGODA_PTE_LEAF64 |
		 PAGODA_PTE_RESERVED_MASK) & PAGODA_MASK64(63, PAGODA_PTE_FRAME_SHIFT)));
	/* the largest address a PTE holds: 56 bits */
	CHECK(PAGODA_PTE_ADDR(PAGODA_PTE_MAKE(0, 0xfffffffffff000ull, 0)) ==
	      0xfffffffffff000ull);
}

static void test_command_header(void)
{
	uint32_t h = PAGODA_CMD_HEADER(PAGODA_CMD_UPDATE_PAGE_TABLE,
				       PAGODA_UPT_REPEAT, 8);

	CHECK(PAGODA_CMD_OP(h) == PAGODA_CMD_UPDATE_PAGE_TABLE);
	CHECK(PAGODA_CMD_FLAGS(h) == PAGODA_UPT_REPEAT);
	CHECK(PAGODA_CMD_DWORDS(h) == 8);
	CHECK(PAGODA_CMD_DWORDS(PAGODA_CMD_HEADER(0, 0, PAGODA_CMD_MAX_DWORDS)) ==
	      PAGODA_CMD_MAX_DWORDS);
}

static void test_register_layout(void)
{
	/* engine and segment register blocks do not overlap their neighbours */
	CHECK(PAGODA_REG_SEG(PAGODA_NUM_SEGMENTS) <= PAGODA_REG_GART_BASE_LO);
	CHECK(PAGODA_REG_MMU_LEVEL(PAGODA_MMU_MAX_LEVELS) <= PAGODA_REG_TLB_HITS_LO);
	CHECK(PAGODA_REG_ENGINE(PAGODA_NUM_ENGINES) <= PAGODA_MMIO_SIZE);
	CHECK(PAGODA_ENG_CAPS < 0x100);
}

int main(void)
{
	test_paddr();
	test_pte();
	test_command_header();
	test_register_layout();
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
