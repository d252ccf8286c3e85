// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda physical-mode command parser
 *
 * A physical-mode DMA buffer names physical addresses, which user space
 * must never choose. The kernel therefore parses its copy of the buffer
 * before anything runs, and accepts it only when:
 *
 * - every command is one the render engine runs with data operands only
 *   (NOP, SIGNAL_FENCE, WAIT_FENCE, COPY, FILL32, WRITE_IMM, CRC32), with
 *   no flags and the length its opcode has, inside the buffer. JUMP and
 *   CALL are refused: they would run memory the kernel did not parse;
 * - every address operand of every command is the patch offset of exactly
 *   one patch-location entry, and every patch offset is an address
 *   operand (so a patch never lands in a size or a value);
 * - every access, the patched allocation offset plus the bytes the command
 *   touches there, lies inside the entry's allocation, and a command that
 *   writes names an allocation listed for writing;
 * - split offsets do not decrease along the list and fall on command
 *   boundaries; an entry's patch offset lies in the range its slot holds
 *   its allocation: from its split offset up to the slot's next entry with
 *   a greater split offset; entries of one slot at one split offset name
 *   one allocation.
 *
 * The patched address of an operand is then always inside an allocation
 * the process owns, placed by the driver: the device can touch nothing
 * else. The parser runs on the kernel's copy; the device reads that copy
 * (never user memory) and copies each command once before it checks it.
 */

#include <linux/bitmap.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include <pagoda/pagoda_hw.h>
#include <uapi/drm/pagoda_drm.h>

#include "pagoda_phys.h"

/* One address operand found in the buffer. */
struct pagoda_operand {
	u32 offset;
	bool write;
	u64 bytes;
};

/* Up to two address operands of the command at @cmd (@dwords long). */
static int pagoda_parse_cmd(const u8 *cmd, u32 dwords, u32 at, struct pagoda_operand *ops)
{
	u32 header = le32_to_cpup((const __le32 *)cmd);
	u64 size;

	if (PAGODA_CMD_FLAGS(header))
		return -EINVAL;
	switch (PAGODA_CMD_OP(header)) {
	case PAGODA_CMD_NOP:
		return 0;
	case PAGODA_CMD_SIGNAL_FENCE:
	case PAGODA_CMD_WAIT_FENCE:
		if (dwords != 6)
			return -EINVAL;
		ops[0] = (struct pagoda_operand){ at + 8,
			PAGODA_CMD_OP(header) == PAGODA_CMD_SIGNAL_FENCE, sizeof(u64) };
		return 1;
	case PAGODA_CMD_COPY:
		if (dwords != 8)
			return -EINVAL;
		size = le64_to_cpup((const __le64 *)(cmd + 24));
		ops[0] = (struct pagoda_operand){ at + 8, false, size };
		ops[1] = (struct pagoda_operand){ at + 16, true, size };
		return 2;
	case PAGODA_CMD_FILL32:
		if (dwords != 6)
			return -EINVAL;
		size = le64_to_cpup((const __le64 *)(cmd + 16));
		ops[0] = (struct pagoda_operand){ at + 8, true, size };
		return 1;
	case PAGODA_CMD_WRITE_IMM:
		if (dwords < 4 || dwords - 4 != le32_to_cpup((const __le32 *)(cmd + 4)))
			return -EINVAL;
		ops[0] = (struct pagoda_operand){ at + 8, true, 4ull * (dwords - 4) };
		return 1;
	case PAGODA_CMD_CRC32:
		if (dwords != 8)
			return -EINVAL;
		size = le64_to_cpup((const __le64 *)(cmd + 16));
		ops[0] = (struct pagoda_operand){ at + 8, false, size };
		ops[1] = (struct pagoda_operand){ at + 24, true, sizeof(u32) };
		return 2;
	default:
		return -EINVAL;
	}
}

/*
 * Walk the commands: mark where each starts in @s->cmd_starts (one bit per
 * dword) and collect the address operands, at most @max of them.
 */
static int pagoda_parse_walk(struct pagoda_phys_submit *s, struct pagoda_operand *ops, u32 max,
			     u32 *count)
{
	const u8 *buf = s->cmds;
	u32 at = 0, n = 0;

	while (at < s->cmd_size) {
		u32 dwords = PAGODA_CMD_DWORDS(le32_to_cpup((const __le32 *)(buf + at)));
		struct pagoda_operand found[2];
		int ret, i;

		if (!dwords || dwords > (s->cmd_size - at) / 4)
			return -EINVAL;
		ret = pagoda_parse_cmd(buf + at, dwords, at, found);
		if (ret < 0)
			return ret;
		for (i = 0; i < ret; i++) {
			if (n == max)
				return -EINVAL;	/* more operands than patches */
			ops[n++] = found[i];
		}
		__set_bit(at / 4, s->cmd_starts);
		at += dwords * 4;
	}
	*count = n;
	return 0;
}

static int pagoda_patch_cmp(const void *a, const void *b, const void *priv)
{
	const struct drm_pagoda_phys_patch *patches = priv;
	u32 x = patches[*(const u32 *)a].patch_offset, y = patches[*(const u32 *)b].patch_offset;

	return x < y ? -1 : x > y;
}

/* Each operand is written by exactly one entry, which keeps to its allocation. */
static int pagoda_parse_match(struct pagoda_phys_submit *s, const struct pagoda_operand *ops,
			      u32 nr_ops, u32 *order, u32 nr_patches)
{
	u32 i;

	if (nr_ops != nr_patches)
		return -EINVAL;
	sort_r(order, nr_patches, sizeof(*order), pagoda_patch_cmp, NULL, s->patches);
	for (i = 0; i < nr_ops; i++) {
		const struct drm_pagoda_phys_patch *p = &s->patches[order[i]];
		u64 end;

		if (p->patch_offset != ops[i].offset)
			return -EINVAL;
		if (check_add_overflow(p->alloc_offset, ops[i].bytes, &end) ||
		    end > s->alloc_size[p->alloc_index])
			return -EINVAL;
		if (ops[i].write && !(s->allocs[p->alloc_index].flags & DRM_PAGODA_PHYS_WRITE))
			return -EINVAL;
	}
	return 0;
}

/*
 * The list's own rules: split offsets, slot ranges. Walking backwards, for
 * each slot: the split offset of its nearest later group (@cur), and where
 * the slot's binding made at @cur ends (@cur_end).
 */
static int pagoda_parse_slots(struct pagoda_phys_submit *s)
{
	u64 *cur, *cur_end;
	u32 *cur_alloc;
	int ret = 0;
	u32 i;

	cur = kvmalloc_array(DRM_PAGODA_MAX_SLOT_ID, sizeof(*cur), GFP_KERNEL);
	cur_end = kvmalloc_array(DRM_PAGODA_MAX_SLOT_ID, sizeof(*cur_end), GFP_KERNEL);
	cur_alloc = kvmalloc_array(DRM_PAGODA_MAX_SLOT_ID, sizeof(*cur_alloc), GFP_KERNEL);
	if (!cur || !cur_end || !cur_alloc) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < DRM_PAGODA_MAX_SLOT_ID; i++) {
		cur[i] = U64_MAX;
		cur_end[i] = U64_MAX;
	}
	for (i = s->patch_count; i--;) {
		const struct drm_pagoda_phys_patch *p = &s->patches[i];
		u64 end;

		if ((i && p->split_offset < s->patches[i - 1].split_offset) ||
		    p->split_offset >= s->cmd_size || !IS_ALIGNED(p->split_offset, 4) ||
		    !test_bit(p->split_offset / 4, s->cmd_starts)) {
			ret = -EINVAL;
			break;
		}
		if (p->split_offset == cur[p->slot_id]) {
			if (cur_alloc[p->slot_id] != p->alloc_index) {
				ret = -EINVAL;	/* one slot, one split, two allocations */
				break;
			}
			end = cur_end[p->slot_id];
		} else {
			end = cur[p->slot_id];
			cur_end[p->slot_id] = end;
			cur[p->slot_id] = p->split_offset;
			cur_alloc[p->slot_id] = p->alloc_index;
		}
		if (s->bos[p->alloc_index] &&
		    (p->patch_offset < p->split_offset || p->patch_offset >= end)) {
			ret = -EINVAL;
			break;
		}
	}
out:
	kvfree(cur);
	kvfree(cur_end);
	kvfree(cur_alloc);
	return ret;
}

/**
 * pagoda_parse_phys - check a physical-mode submission (see the DOC block)
 * @s: the submission: its buffer copied, lists copied and checked entry by
 *	entry (indices, slot ids, alignment), allocations looked up
 *
 * Fills @s->cmd_starts.
 *
 * Return: 0 when the buffer and its lists follow every rule, -EINVAL when
 * they do not, -ENOMEM.
 */
int pagoda_parse_phys(struct pagoda_phys_submit *s)
{
	struct pagoda_operand *ops;
	u32 *order, nr_ops, nr_patches = 0, i;
	int ret;

	ops = kvmalloc_array(s->patch_count + 1, sizeof(*ops), GFP_KERNEL);
	order = kvmalloc_array(s->patch_count + 1, sizeof(*order), GFP_KERNEL);
	if (!ops || !order) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < s->patch_count; i++)
		if (s->bos[s->patches[i].alloc_index])
			order[nr_patches++] = i;
	ret = pagoda_parse_walk(s, ops, nr_patches, &nr_ops);
	if (!ret)
		ret = pagoda_parse_match(s, ops, nr_ops, order, nr_patches);
	if (!ret)
		ret = pagoda_parse_slots(s);
out:
	kvfree(ops);
	kvfree(order);
	return ret;
}
