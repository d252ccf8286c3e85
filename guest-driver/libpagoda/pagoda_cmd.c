// SPDX-License-Identifier: MIT
/*
 * libpagoda: command buffers for the render engine, encoded as
 * docs/hardware.md section 7 describes. See libpagoda.h.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <pagoda/pagoda_hw.h>

#include "libpagoda.h"

/*
 * Lengths in dwords, header included (docs/hardware.md 7.1 and 7.3):
 * pagoda_hw.h gives them in comments only.
 */
#define SIGNAL_FENCE_DWORDS	6
#define WAIT_FENCE_DWORDS	6
#define COPY_DWORDS		8
#define FILL32_DWORDS		6
#define WRITE_IMM_DWORDS	4	/* and one per value */
#define CRC32_DWORDS		8
#define BRANCH_DWORDS		4	/* JUMP and CALL */
/* Most values one WRITE_IMM holds. */
#define WRITE_IMM_MAX		(PAGODA_CMD_MAX_DWORDS - WRITE_IMM_DWORDS)

void pagoda_cmdbuf_init(struct pagoda_cmdbuf *cb, void *mem, uint32_t capacity)
{
	cb->cmds = mem;
	cb->size_bytes = capacity & ~3u;
	cb->used_bytes = 0;
	cb->error = (uintptr_t)mem & 3 ? -EINVAL : 0;
}

/* Whether @dwords more dwords fit a buffer that has not failed; sets -ENOSPC if not. */
static int cmd_room(struct pagoda_cmdbuf *cb, uint64_t dwords)
{
	if (cb->error)
		return 0;
	if (dwords > (cb->size_bytes - cb->used_bytes) / 4) {
		cb->error = -ENOSPC;
		return 0;
	}
	return 1;
}

/* Room for @dwords more dwords: where they go, or NULL as cmd_room(). */
static uint32_t *cmd_reserve(struct pagoda_cmdbuf *cb, uint64_t dwords)
{
	uint32_t *p;

	if (!cmd_room(cb, dwords))
		return NULL;
	p = cb->cmds + cb->used_bytes / 4;
	cb->used_bytes += dwords * 4;
	return p;
}

static void put32(uint32_t *cmd, unsigned int byte, uint32_t v)
{
	cmd[byte / 4] = htole32(v);
}

/* A u64 operand: at a 4-byte (not always 8-byte) aligned address. */
static void put64(uint32_t *cmd, unsigned int byte, uint64_t v)
{
	uint64_t le = htole64(v);

	memcpy(cmd + byte / 4, &le, sizeof(le));
}

/* Reserve a command of @dwords dwords and write its header; operands left zero. */
static uint32_t *cmd_start(struct pagoda_cmdbuf *cb, uint32_t op, uint32_t flags,
			   uint32_t dwords)
{
	uint32_t *cmd = cmd_reserve(cb, dwords);

	if (!cmd)
		return NULL;
	memset(cmd, 0, dwords * 4);
	put32(cmd, 0, PAGODA_CMD_HEADER(op, flags, dwords));
	return cmd;
}

void pagoda_cmd_nop(struct pagoda_cmdbuf *cb, uint32_t dwords)
{
	if (!cb->error && (!dwords || dwords > PAGODA_CMD_MAX_DWORDS))
		cb->error = -EINVAL;
	cmd_start(cb, PAGODA_CMD_NOP, 0, dwords);
}

/* SIGNAL_FENCE and WAIT_FENCE: +8 address, +16 u64 value. */
static void cmd_fence(struct pagoda_cmdbuf *cb, uint32_t op, uint32_t dwords, uint64_t va,
		      uint64_t value)
{
	uint32_t *cmd = cmd_start(cb, op, 0, dwords);

	if (!cmd)
		return;
	put64(cmd, 8, va);
	put64(cmd, 16, value);
}

void pagoda_cmd_signal(struct pagoda_cmdbuf *cb, uint64_t va, uint64_t value)
{
	cmd_fence(cb, PAGODA_CMD_SIGNAL_FENCE, SIGNAL_FENCE_DWORDS, va, value);
}

void pagoda_cmd_wait(struct pagoda_cmdbuf *cb, uint64_t va, uint64_t value)
{
	cmd_fence(cb, PAGODA_CMD_WAIT_FENCE, WAIT_FENCE_DWORDS, va, value);
}

/* COPY and CRC32: three u64 operands at +8, +16 and +24. */
static void cmd_three(struct pagoda_cmdbuf *cb, uint32_t op, uint32_t dwords, uint64_t a,
		      uint64_t b, uint64_t c)
{
	uint32_t *cmd = cmd_start(cb, op, 0, dwords);

	if (!cmd)
		return;
	put64(cmd, 8, a);
	put64(cmd, 16, b);
	put64(cmd, 24, c);
}

/* COPY: +8 src, +16 dst, +24 u64 size. */
void pagoda_cmd_copy(struct pagoda_cmdbuf *cb, uint64_t src, uint64_t dst, uint64_t size)
{
	cmd_three(cb, PAGODA_CMD_COPY, COPY_DWORDS, src, dst, size);
}

/* FILL32: +4 pattern, +8 dst, +16 size. */
void pagoda_cmd_fill(struct pagoda_cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern)
{
	uint32_t *cmd = cmd_start(cb, PAGODA_CMD_FILL32, 0, FILL32_DWORDS);

	if (!cmd)
		return;
	put32(cmd, 4, pattern);
	put64(cmd, 8, dst);
	put64(cmd, 16, size);
}

/* WRITE_IMM: +4 count n, +8 dst, +16 n u32 values; 4 + n dwords. */
void pagoda_cmd_write_imm(struct pagoda_cmdbuf *cb, uint64_t dst, const uint32_t *values,
			  uint32_t count)
{
	uint64_t cmds = count ? (count + WRITE_IMM_MAX - 1ull) / WRITE_IMM_MAX : 1;
	uint32_t *cmd, n, i;

	/* all the commands or none */
	if (!cmd_room(cb, cmds * WRITE_IMM_DWORDS + count))
		return;
	do {
		n = count < WRITE_IMM_MAX ? count : WRITE_IMM_MAX;
		cmd = cmd_start(cb, PAGODA_CMD_WRITE_IMM, 0, WRITE_IMM_DWORDS + n);
		if (!cmd)	/* cannot happen: cmd_room() said they fit */
			return;
		put32(cmd, 4, n);
		put64(cmd, 8, dst);
		for (i = 0; i < n; i++)
			put32(cmd, 16 + 4 * i, values[i]);
		values += n;
		dst += 4ull * n;
		count -= n;
	} while (count);
}

/* CRC32: +8 src, +16 size, +24 dst of the u32 result. */
void pagoda_cmd_crc32(struct pagoda_cmdbuf *cb, uint64_t src, uint64_t size, uint64_t dst)
{
	cmd_three(cb, PAGODA_CMD_CRC32, CRC32_DWORDS, src, size, dst);
}

/* JUMP and CALL: +4 length in bytes, +8 target. */
static void cmd_branch(struct pagoda_cmdbuf *cb, uint32_t op, uint64_t target, uint32_t length)
{
	uint32_t *cmd = cmd_start(cb, op, 0, BRANCH_DWORDS);

	if (!cmd)
		return;
	put32(cmd, 4, length);
	put64(cmd, 8, target);
}

void pagoda_cmd_jump(struct pagoda_cmdbuf *cb, uint64_t target, uint32_t length)
{
	cmd_branch(cb, PAGODA_CMD_JUMP, target, length);
}

void pagoda_cmd_call(struct pagoda_cmdbuf *cb, uint64_t target, uint32_t length)
{
	cmd_branch(cb, PAGODA_CMD_CALL, target, length);
}

void pagoda_physbuf_init(struct pagoda_physbuf *pb, void *mem, uint32_t capacity,
			 struct drm_pagoda_phys_patch *patches, uint32_t patch_capacity)
{
	uint32_t slot;

	pagoda_cmdbuf_init(&pb->cb, mem, capacity);
	pb->patches = patches;
	pb->patch_count = 0;
	pb->patch_capacity = patch_capacity;
	pb->split = 0;
	for (slot = 0; slot < PAGODA_PHYS_SLOTS; slot++) {
		pb->bound[slot] = -1;
		pb->bound_at[slot] = 0;
	}
}

void pagoda_phys_split(struct pagoda_physbuf *pb)
{
	pb->split = pb->cb.used_bytes;
}

static void phys_add(struct pagoda_physbuf *pb, const struct drm_pagoda_phys_patch *entry)
{
	if (pb->cb.error)
		return;
	if (pb->patch_count == pb->patch_capacity) {
		pb->cb.error = -ENOSPC;
		return;
	}
	pb->patches[pb->patch_count++] = *entry;
}

void pagoda_phys_bind(struct pagoda_physbuf *pb, uint32_t slot, uint32_t alloc, int null)
{
	if (slot >= PAGODA_PHYS_SLOTS) {
		if (!pb->cb.error)
			pb->cb.error = -EINVAL;
		return;
	}
	if (null) {
		struct drm_pagoda_phys_patch entry = {
			.alloc_index = alloc, .slot_id = slot, .split_offset = pb->split,
		};

		phys_add(pb, &entry);
		pb->bound[slot] = -1;
		return;
	}
	pb->bound[slot] = alloc;
	pb->bound_at[slot] = pb->split;
}

/* The entry patching byte @at with (slot's allocation, @offset). */
static void phys_patch(struct pagoda_physbuf *pb, uint32_t slot, uint64_t offset, uint32_t at)
{
	struct drm_pagoda_phys_patch entry;

	if (slot >= PAGODA_PHYS_SLOTS || pb->bound[slot] < 0) {
		if (!pb->cb.error)
			pb->cb.error = -EINVAL;
		return;
	}
	entry = (struct drm_pagoda_phys_patch){
		.alloc_index = pb->bound[slot],
		.slot_id = slot,
		.alloc_offset = offset,
		.patch_offset = at,
		.split_offset = pb->bound_at[slot],
	};
	phys_add(pb, &entry);
}

void pagoda_phys_signal(struct pagoda_physbuf *pb, uint32_t slot, uint64_t offset,
			uint64_t value)
{
	uint32_t at = pb->cb.used_bytes;

	pagoda_cmd_signal(&pb->cb, 0, value);
	phys_patch(pb, slot, offset, at + 8);
}

void pagoda_phys_copy(struct pagoda_physbuf *pb, uint32_t src_slot, uint64_t src,
		      uint32_t dst_slot, uint64_t dst, uint64_t size)
{
	uint32_t at = pb->cb.used_bytes;

	pagoda_cmd_copy(&pb->cb, 0, 0, size);
	phys_patch(pb, src_slot, src, at + 8);
	phys_patch(pb, dst_slot, dst, at + 16);
}

void pagoda_phys_fill(struct pagoda_physbuf *pb, uint32_t slot, uint64_t dst, uint64_t size,
		      uint32_t pattern)
{
	uint32_t at = pb->cb.used_bytes;

	pagoda_cmd_fill(&pb->cb, 0, size, pattern);
	phys_patch(pb, slot, dst, at + 8);
}

void pagoda_phys_crc32(struct pagoda_physbuf *pb, uint32_t src_slot, uint64_t src,
		       uint64_t size, uint32_t dst_slot, uint64_t dst)
{
	uint32_t at = pb->cb.used_bytes;

	pagoda_cmd_crc32(&pb->cb, 0, size, 0);
	phys_patch(pb, src_slot, src, at + 8);
	phys_patch(pb, dst_slot, dst, at + 24);
}

void pagoda_phys_write_imm(struct pagoda_physbuf *pb, uint32_t slot, uint64_t dst,
			   const uint32_t *values, uint32_t count)
{
	uint32_t at = pb->cb.used_bytes;

	if (count > PAGODA_CMD_MAX_DWORDS - 4 && !pb->cb.error)
		pb->cb.error = -EINVAL;
	pagoda_cmd_write_imm(&pb->cb, 0, values, count);
	phys_patch(pb, slot, dst, at + 8);
}

uint32_t pagoda_crc32(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t crc = ~0u;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}
