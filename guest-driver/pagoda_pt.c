// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda page tables
 *
 * Each address space has its own tree of page tables in the device's
 * format (docs/hardware.md, section 4): a root of 512 entries (the root
 * of a 2-level device covers the first 1 GiB), then tables of 512
 * entries per level down to the leaf tables of 4 KiB pages. The root is
 * made with the space's first mapping.
 *
 * On a linked adapter the space has a tree on every GPU (struct
 * pagoda_pt_tree), in that GPU's segments, written by that GPU's paging
 * engine: every operation below runs on each tree in turn, with that
 * GPU's batch of the update (struct pagoda_vm_update), so the trees
 * always have the same tables; an entry for another GPU's VRAM or hidden
 * VRAM carries PTE_ADAPTER on the GPUs that reach it as a peer
 * (pt_peer_flags()), none on its own.
 *
 * Tables are 4 KiB and live in page-table allocations (chunks) of 64 KiB
 * for a space's first, each next one twice the one before up to 2 MiB
 * (512 tables), kernel allocations in the segments the hardware allows for
 * tables, VRAM preferred, then system memory, then hidden VRAM. A chunk
 * belongs to one address space, so a table freed by one space is only ever
 * reused by that space, and shares the space's reservation: it is evicted
 * like any allocation, once the space's jobs are done, and everything that
 * writes or names its tables holds that reservation. A chunk that moved
 * has new table addresses at once (pagoda_pt_chunk_moved(), from TTM's
 * move). Before the space's next job, and before any update of its tables,
 * pagoda_pt_restore() brings the chunks back where they belong (pages TTM
 * swapped out come back as other pages: their addresses are read again)
 * and rewrites the entries (or the context's root) naming moved tables.
 *
 * The CPU never writes a table. Every change is an UPDATE_PAGE_TABLE
 * command of a paging batch: a new table is first written invalid
 * (UPT_REPEAT), then its parent's entry made to point to it; pages are
 * written as runs (one UPT_REPEAT_INCREMENT command per physically
 * contiguous run of at least PAGODA_PT_RUN_MIN pages, explicit entries
 * otherwise), and every update of a range ends with a FLUSH_TLB of that
 * range. The flush names every context (FLUSH_ALL_CONTEXTS): the context
 * a space runs in may change between building the batch and running it.
 *
 * Building a batch holds the paging engine's submit lock, under which
 * nothing may allocate (allocating can evict, and evicting submits paging
 * work): pagoda_pt_alloc_range() makes the tables a mapping needs
 * beforehand, pagoda_pt_map() and pagoda_pt_clear() only write them.
 * A table is freed when its last valid entry is cleared; its parent's
 * entry is cleared in the same batch, and the table, which may keep stale
 * entries, is written invalid again when reused.
 *
 * 64 KiB pages of the model are written as 16 consecutive 4 KiB entries
 * (one UPT_REPEAT_INCREMENT command), except in a tiled reservation
 * (DRM_PAGODA_VM_TILED) on a device of 64 KiB segment pages: its spans
 * have the device's LEAF64 leaf tables (32 entries, one per 64 KiB tile;
 * PTE_LEAF64 on the level-1 entry, UPT_LEAF64 on every write to them) and
 * never a 2 MiB page. What such a span maps is whole tiles of 64 KiB
 * pages only (pagoda_vm.c checks it), so its table never changes layout.
 * A 2 MiB span of VA that one mapping covers with 2 MiB of a memory
 * segment, contiguous and 2 MiB aligned (or with zero pages), is one
 * LARGE_PAGE entry of its level-1 table and has no leaf table; system
 * memory is mapped in 4 KiB pages. Splitting such a page (unmapping part
 * of it) or rewriting it as 4 KiB pages (its allocation moved to memory
 * that no longer allows it) needs a leaf table: pagoda_pt_alloc_range()
 * and pagoda_pt_prepare_clear() make spares before the batch, the update
 * takes them, pagoda_pt_put_spares() frees the rest after it. A split page
 * becomes 512 entries of 4 KiB (one repeated entry), then loses the part
 * unmapped.
 */

#include <linux/sizes.h>
#include <linux/slab.h>

#include <drm/drm_print.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_paging.h"
#include "pagoda_trace.h"
#include "pagoda_vm.h"

/* A level-1 entry that maps 2 MiB itself: no table below it. */
static struct pagoda_pt pagoda_pt_large;
#define PT_LARGE		(&pagoda_pt_large)
#define LARGE_SIZE		SZ_2M

/* Shortest run of contiguous pages written as one repeated entry. */
#define PAGODA_PT_RUN_MIN	4
/* Explicit entries gathered before they are written. */
#define PAGODA_PT_BATCH		32

static u32 level_shift(u32 level)
{
	return PAGE_SHIFT + 9 * level;
}

/* Index of @va's entry in its table of @level; the root may have more than 512. */
static u32 pt_index(struct pagoda_pt_tree *tree, u64 va, u32 level)
{
	u64 index = va >> level_shift(level);

	return level == tree->vm->levels - 1 ? index : index & (PAGODA_PT_ENTRIES - 1);
}

static bool pt_is_table(const struct pagoda_pt *pt)
{
	return pt && pt != PT_LARGE;
}

/*
 * Whether [va, va + bytes) starts with a 2 MiB page: @va aligned, 2 MiB
 * of the run left, and the run in a memory segment and aligned (zero pages
 * need no memory).
 */
static bool pt_large_ok(struct pagoda_pt_tree *tree, u64 va, u64 paddr, u64 bytes, bool zero)
{
	if (!(tree->gpu->params.mmu_caps & PAGODA_MMU_CAPS_LARGE_PAGES) ||
	    !IS_ALIGNED(va, LARGE_SIZE) || bytes < LARGE_SIZE)
		return false;
	return zero || (PAGODA_PADDR_SEG(paddr) != PAGODA_SEG_SYSTEM &&
			IS_ALIGNED(PAGODA_PADDR_OFFSET(paddr), LARGE_SIZE));
}

/*
 * PTE_ADAPTER of @bo's memory as @vm's GPU reaches it: a linked peer's VRAM
 * or hidden VRAM through peer entries; its own memory, and system memory
 * (every GPU of a link reaches it alike), without.
 */
static u64 pt_peer_flags(const struct pagoda_pt_tree *tree, struct pagoda_bo *bo)
{
	const struct pagoda_device *home = pagoda_bo_device(bo);
	u32 mem_type = bo->tbo.resource->mem_type;

	if (home == tree->gpu || (mem_type != TTM_PL_VRAM && mem_type != PAGODA_PL_HIDDEN))
		return 0;
	return PAGODA_PTE_PEER(home->link_index);
}

/*
 * What @tree's entries of a mapping of @bo name: @bo, or of a linked
 * allocation the instance the mapping chose (&pagoda_vma.instance).
 */
static struct pagoda_bo *pt_tree_bo(const struct pagoda_pt_tree *tree, struct pagoda_bo *bo,
				    u32 instance)
{
	if (!bo)
		return NULL;
	return pagoda_bo_instance(bo, instance ? instance - 1 : tree->gpu->adapter);
}

static u64 pt_pte(u64 paddr, u64 flags)
{
	return PAGODA_PTE_MAKE(PAGODA_PADDR_SEG(paddr), PAGODA_PADDR_OFFSET(paddr),
			       PAGODA_PTE_VALID | flags);
}

/* The entry of a parent table pointing to @child. */
static u64 pt_table_pte(const struct pagoda_pt *child)
{
	return pt_pte(child->addr, child->leaf64 ? PAGODA_PTE_LEAF64 : 0);
}

/* UPDATE_PAGE_TABLE's flag for a write into @pt. */
static u32 pt_upt_flags(const struct pagoda_pt *pt)
{
	return pt->leaf64 ? PAGODA_UPT_LEAF64 : 0;
}

/* The shift of the page size of leaf table @leaf's entries. */
static u32 pt_leaf_shift(const struct pagoda_pt *leaf)
{
	return leaf->leaf64 ? ilog2(PAGODA_TILE_SIZE) : PAGE_SHIFT;
}

/* Index of @va's entry in leaf table @leaf. */
static u32 pt_leaf_index(const struct pagoda_pt *leaf, u64 va)
{
	return (va & (LARGE_SIZE - 1)) >> pt_leaf_shift(leaf);
}

static void pagoda_pt_chunk_free(struct pagoda_pt_chunk *chunk)
{
	if (chunk->bo)
		drm_gem_object_put(&chunk->bo->tbo.base);
	bitmap_free(chunk->free);
	kfree(chunk->tables);
	kfree(chunk);
}

/* The first GPU's chunk made @seq-th, which another GPU's chunk @seq mirrors. */
static struct pagoda_pt_chunk *pagoda_pt_twin(struct pagoda_vm *vm, u32 seq)
{
	struct pagoda_pt_chunk *chunk;

	list_for_each_entry(chunk, &vm->pt[0].chunks, link)
		if (chunk->seq == seq)
			return chunk;
	return NULL;
}

/*
 * Where a chunk of another GPU than the first should be: where its twin
 * is, when that is one piece of VRAM or hidden VRAM. Return: @at, or NULL.
 */
static const struct pagoda_bo_at *pagoda_pt_twin_at(struct pagoda_pt_chunk *twin,
						    struct pagoda_bo_at *at)
{
	return twin && pagoda_bo_where(twin->bo, at) ? at : NULL;
}

/*
 * A new chunk, twice the size of the space's last one (up to
 * PAGODA_PT_CHUNK_MAX): a space that maps much makes few allocations. On
 * a link, a chunk of another GPU is placed where the first GPU's chunk of
 * the same rank is, if it can: its tables then sit at the same offsets.
 */
static int pagoda_pt_new_chunk(struct pagoda_pt_tree *tree)
{
	u32 bytes = max_t(u32, tree->chunk_bytes, PAGODA_PT_CHUNK_MIN);
	struct pagoda_pt_chunk *chunk;
	struct pagoda_bo_at at;

	chunk = kzalloc(sizeof(*chunk), GFP_KERNEL);
	if (!chunk)
		return -ENOMEM;
	chunk->vm = tree->vm;
	chunk->tree = tree;
	chunk->seq = tree->nr_chunks;
	if (tree != tree->vm->pt)
		chunk->twin = pagoda_pt_twin(tree->vm, chunk->seq);
	chunk->count = bytes / PAGODA_PT_SIZE;
	chunk->nr_free = chunk->count;
	chunk->free = bitmap_zalloc(chunk->count, GFP_KERNEL);
	chunk->tables = kcalloc(chunk->count, sizeof(*chunk->tables), GFP_KERNEL);
	if (!chunk->free || !chunk->tables) {
		pagoda_pt_chunk_free(chunk);
		return -ENOMEM;
	}
	chunk->bo = pagoda_bo_create_shared(tree->gpu, bytes, tree->gpu->params.pt_segments,
					    drm_gpuvm_resv_obj(&tree->vm->gpuvm),
					    pagoda_pt_twin_at(chunk->twin, &at));
	if (IS_ERR(chunk->bo)) {
		/* its placement may have evicted with the transaction's ticket */
		int ret = pagoda_vm_place_failed(tree->vm, PTR_ERR(chunk->bo));

		chunk->bo = NULL;
		pagoda_pt_chunk_free(chunk);
		return ret;
	}
	chunk->bo->pt_chunk = chunk;
	bitmap_fill(chunk->free, chunk->count);
	list_add(&chunk->link, &tree->chunks);
	tree->nr_chunks++;
	tree->chunk_bytes = min_t(u32, bytes * 2, PAGODA_PT_CHUNK_MAX);
	return 0;
}

/*
 * A root of more than 512 entries (2 levels) has an allocation of its own,
 * contiguous: in a memory segment, or in system memory through the
 * aperture segment, where the device reads a root (not a lower table). The
 * GPUs of a link make their roots one after the other, the first GPU's
 * first: the others' go where it went, if they can.
 */
static int pagoda_pt_alloc_own(struct pagoda_pt_tree *tree, struct pagoda_pt *pt)
{
	struct pagoda_device *pgdev = tree->gpu;
	u64 size = round_up((u64)pt->entries * sizeof(u64), pgdev->segs[PAGODA_SEG_VRAM].page_size);
	struct pagoda_vm *vm = tree->vm;
	bool first = tree == vm->pt;

	pt->bo = pagoda_bo_create_kernel_at(pgdev, size, pgdev->params.pt_segments,
					    DRM_PAGODA_BO_PHYSICAL,
					    !first && vm->root_at_valid ? &vm->root_at : NULL);
	if (IS_ERR(pt->bo))
		return PTR_ERR(pt->bo);
	if (first)
		vm->root_at_valid = pagoda_bo_where(pt->bo, &vm->root_at);
	pt->addr = pagoda_bo_contiguous_paddr(pt->bo);
	return 0;
}

static struct pagoda_pt *pagoda_pt_alloc(struct pagoda_pt_tree *tree, u32 level, u32 entries)
{
	struct pagoda_pt_chunk *chunk;
	struct pagoda_pt *pt;
	int ret;

	pt = kzalloc(sizeof(*pt), GFP_KERNEL);
	if (!pt)
		return ERR_PTR(-ENOMEM);
	pt->level = level;
	pt->entries = entries;
	pt->fresh = true;
	if (level) {
		pt->children = kvcalloc(entries, sizeof(*pt->children), GFP_KERNEL);
		if (!pt->children) {
			kfree(pt);
			return ERR_PTR(-ENOMEM);
		}
	}
	if (entries > PAGODA_PT_ENTRIES) {
		ret = pagoda_pt_alloc_own(tree, pt);
		if (ret) {
			kvfree(pt->children);
			kfree(pt);
			return ERR_PTR(ret);
		}
		tree->tables[level]++;
		trace_pagoda_pt_alloc(tree->vm, level, pt->addr);
		return pt;
	}
	chunk = list_first_entry_or_null(&tree->chunks, struct pagoda_pt_chunk, link);
	if (!chunk || !chunk->nr_free) {
		/* pagoda_pt_reserve() made room for all a request can take */
		ret = WARN_ON_ONCE(tree->chunks_closed) ? -ENOSPC : pagoda_pt_new_chunk(tree);
		if (ret) {
			kvfree(pt->children);
			kfree(pt);
			return ERR_PTR(ret);
		}
		chunk = list_first_entry(&tree->chunks, struct pagoda_pt_chunk, link);
	}
	pt->chunk = chunk;
	pt->index = find_first_bit(chunk->free, chunk->count);
	pt->addr = pagoda_bo_page_paddr(chunk->bo, (u64)pt->index * PAGODA_PT_SIZE);
	chunk->tables[pt->index] = pt;
	__clear_bit(pt->index, chunk->free);
	/* chunks with free tables stay first */
	if (!--chunk->nr_free)
		list_move_tail(&chunk->link, &tree->chunks);
	tree->tables[level]++;
	trace_pagoda_pt_alloc(tree->vm, level, pt->addr);
	return pt;
}

/* Free @pt and the tables below it, which can only be fresh ones. */
static void pagoda_pt_free(struct pagoda_pt_tree *tree, struct pagoda_pt *pt)
{
	unsigned int i;

	if (pt->level)
		for (i = 0; i < pt->entries; i++)
			if (pt_is_table(pt->children[i]))
				pagoda_pt_free(tree, pt->children[i]);
	if (pt->bo) {
		pagoda_bo_free_kernel(pt->bo);
	} else {
		pt->chunk->tables[pt->index] = NULL;
		__set_bit(pt->index, pt->chunk->free);
		pt->chunk->nr_free++;
		list_move(&pt->chunk->link, &tree->chunks);
	}
	tree->tables[pt->level]--;
	tree->leaf64_tables -= pt->leaf64;
	if (tree->leaf_hint == pt)
		tree->leaf_hint = NULL;
	kvfree(pt->children);
	kfree(pt);
}

/* Write a fresh table invalid. */
static int pagoda_pt_write_invalid(struct pagoda_paging_batch *batch, struct pagoda_pt *pt)
{
	u64 invalid = 0;

	return pagoda_paging_update_ptes(batch, pt->level, pt->addr, 0, &invalid,
					 pt->entries, PAGODA_UPT_REPEAT | pt_upt_flags(pt));
}

/**
 * pagoda_pt_init - page-table state of a new address space
 * @vm: the address space, with @levels, @link and @num_pt set
 *
 * The root tables are made with the first mapping (pagoda_pt_alloc_range()):
 * a file that maps nothing costs no table.
 */
void pagoda_pt_init(struct pagoda_vm *vm)
{
	u32 va_bits = vm->link->gpu[0]->params.va_bits;
	struct pagoda_pt_tree *tree;

	pagoda_vm_for_each_tree(vm, tree) {
		tree->vm = vm;
		tree->gpu = vm->link->gpu[tree - vm->pt];
		INIT_LIST_HEAD(&tree->chunks);
		INIT_LIST_HEAD(&tree->spares);
		xa_init(&tree->large_ptes);
	}
	vm->root_entries = PAGODA_PT_ENTRIES;
	/* a resizable root (2 levels) takes the VA bits the lower levels leave */
	vm->max_root_entries = vm->levels == 2 ?
			       1u << (va_bits - level_shift(vm->levels - 1)) : PAGODA_PT_ENTRIES;
	vm->va_end = min_t(u64, 1ull << va_bits,
			   (u64)vm->max_root_entries << level_shift(vm->levels - 1));
}

/* @tree's root, made with the first mapping. */
static int pagoda_pt_make_root(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt *root;

	if (tree->root)
		return 0;
	root = pagoda_pt_alloc(tree, tree->vm->levels - 1, tree->vm->root_entries);
	if (IS_ERR(root))
		return PTR_ERR(root);
	tree->root = root;
	return 0;
}

/* The level-1 table of @va, and the tables above it, made as needed. */
static int pagoda_pt_alloc_upper(struct pagoda_pt_tree *tree, u64 va, struct pagoda_pt **level1)
{
	struct pagoda_pt *pt;
	u32 level;

	int ret = pagoda_pt_make_root(tree);

	if (ret)
		return ret;
	pt = tree->root;
	for (level = tree->vm->levels - 1; level > 1; level--) {
		struct pagoda_pt **child = &pt->children[pt_index(tree, va, level)];

		if (!*child) {
			struct pagoda_pt *table;

			table = pagoda_pt_alloc(tree, level - 1, PAGODA_PT_ENTRIES);

			if (IS_ERR(table))
				return PTR_ERR(table);
			*child = table;
		}
		pt = *child;
	}
	*level1 = pt;
	return 0;
}

static int pagoda_pt_add_spare(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt *spare = pagoda_pt_alloc(tree, 0, PAGODA_PT_ENTRIES);

	if (IS_ERR(spare))
		return PTR_ERR(spare);
	list_add(&spare->spare, &tree->spares);
	return 0;
}

static struct pagoda_pt *pagoda_pt_take_spare(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt *spare = list_first_entry_or_null(&tree->spares, struct pagoda_pt, spare);

	if (!WARN_ON(!spare))
		list_del(&spare->spare);
	return spare;
}

static void pt_tree_put_spares(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt *spare, *next;

	list_for_each_entry_safe(spare, next, &tree->spares, spare) {
		list_del(&spare->spare);
		pagoda_pt_free(tree, spare);
	}
}

/**
 * pagoda_pt_put_spares - free the spare tables an update did not take
 * @vm: the address space, its lock held
 */
void pagoda_pt_put_spares(struct pagoda_vm *vm)
{
	struct pagoda_pt_tree *tree;

	pagoda_vm_for_each_tree(vm, tree)
		pt_tree_put_spares(tree);
}

static void pt_tree_fini(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt_chunk *chunk, *next;

	if (tree->last_update)
		dma_fence_wait(tree->last_update, false);
	dma_fence_put(tree->last_update);
	tree->last_update = NULL;

	pt_tree_put_spares(tree);
	if (tree->root)
		pagoda_pt_free(tree, tree->root);
	tree->root = NULL;
	xa_destroy(&tree->large_ptes);
	/*
	 * A chunk's allocation may outlive it (a walk over all allocations
	 * holds a reference): its moves no longer name the chunk.
	 */
	dma_resv_lock(drm_gpuvm_resv(&tree->vm->gpuvm), NULL);
	list_for_each_entry(chunk, &tree->chunks, link)
		chunk->bo->pt_chunk = NULL;
	dma_resv_unlock(drm_gpuvm_resv(&tree->vm->gpuvm));
	list_for_each_entry_safe(chunk, next, &tree->chunks, link) {
		list_del(&chunk->link);
		pagoda_pt_chunk_free(chunk);
	}
}

/**
 * pagoda_pt_fini - free every table and chunk of an address space
 * @vm: the address space, whose jobs are all done
 *
 * Waits for the last update of its tables on each GPU first.
 */
void pagoda_pt_fini(struct pagoda_vm *vm)
{
	struct pagoda_pt_tree *tree;

	pagoda_vm_for_each_tree(vm, tree)
		pt_tree_fini(tree);
}

/*
 * The tables [va, va + bytes) of one contiguous run (at @paddr) needs;
 * @leaf64: LEAF64 leaf tables (a tiled reservation's spans), no 2 MiB page.
 */
static int pagoda_pt_alloc_run(struct pagoda_pt_tree *tree, u64 va, u64 paddr, u64 bytes, bool zero,
			       bool leaf64)
{
	while (bytes) {
		u64 n = min(bytes, round_down(va, LARGE_SIZE) + LARGE_SIZE - va);
		bool large = !leaf64 && pt_large_ok(tree, va, paddr, bytes, zero);
		struct pagoda_pt *level1, **child;
		int ret;

		ret = pagoda_pt_alloc_upper(tree, va, &level1);
		if (ret)
			return ret;
		child = &level1->children[pt_index(tree, va, 1)];
		if (!large && !*child) {
			*child = pagoda_pt_alloc(tree, 0, leaf64 ? PAGODA_PT_LEAF64_ENTRIES :
								 PAGODA_PT_ENTRIES);
			if (IS_ERR(*child)) {
				ret = PTR_ERR(*child);
				*child = NULL;
				return ret;
			}
			(*child)->leaf64 = leaf64;
			tree->leaf64_tables += leaf64;
		} else if (WARN_ON(pt_is_table(*child) && (*child)->leaf64 != leaf64)) {
			return -EINVAL;
		} else if (!large && *child == PT_LARGE) {
			/* the 2 MiB page there is split or rewritten: a table for it */
			ret = pagoda_pt_add_spare(tree);
			if (ret)
				return ret;
		}
		va += n;
		paddr += n;
		bytes -= n;
	}
	return 0;
}

/* The leaf table of the span of @va if it is the one last walked to, else NULL. */
static struct pagoda_pt *pagoda_pt_hinted_leaf(struct pagoda_pt_tree *tree, u64 va)
{
	if (tree->leaf_hint && tree->leaf_hint_span == va >> ilog2(LARGE_SIZE))
		return tree->leaf_hint;
	return NULL;
}

static int pt_tree_alloc_range(struct pagoda_pt_tree *tree, u64 va, u64 size, struct pagoda_bo *bo,
			       u64 offset, bool leaf64)
{
	struct pagoda_pt *hint = pagoda_pt_hinted_leaf(tree, va);
	struct pagoda_bo_run run;
	int ret = 0;

	/* less than a span, in that of an existing leaf table: no 2 MiB page, nothing to make */
	if (hint && hint->leaf64 == leaf64 && size < LARGE_SIZE &&
	    pagoda_pt_hinted_leaf(tree, va + size - 1) == hint)
		return 0;
	if (!bo)
		return pagoda_pt_alloc_run(tree, va, 0, size, true, leaf64);
	for (pagoda_bo_run_first(bo, offset, size, &run); run.bytes && !ret;
	     pagoda_bo_run_next(&run)) {
		ret = pagoda_pt_alloc_run(tree, va, run.paddr, run.bytes, false, leaf64);
		va += run.bytes;
	}
	return ret;
}

/* Free tables in @tree's chunks. */
static u32 pt_tree_free_tables(struct pagoda_pt_tree *tree)
{
	struct pagoda_pt_chunk *chunk;
	u32 n = 0;

	/* those with free tables first */
	list_for_each_entry(chunk, &tree->chunks, link) {
		if (!chunk->nr_free)
			break;
		n += chunk->nr_free;
	}
	return n;
}

/*
 * The most tables a mapping of @size can make below the root: at each
 * level, a table per entry of the level above it crosses (two more for
 * the ends), spares included (a span gets a table or a spare).
 */
static u32 pt_tables_bound(struct pagoda_vm *vm, u64 size)
{
	u32 level, n = 0;

	for (level = 1; level < vm->levels; level++)
		n += (size >> level_shift(level)) + 2;
	return n;
}

/*
 * Make @tree's root and enough chunks for @tables more tables, here:
 * placing a chunk may evict with the caller's locking ticket, which
 * another CPU cannot use.
 */
static int pagoda_pt_reserve(struct pagoda_pt_tree *tree, u32 tables)
{
	int ret = pagoda_pt_make_root(tree);

	while (!ret && pt_tree_free_tables(tree) < tables)
		ret = pagoda_pt_new_chunk(tree);
	return ret;
}

/*
 * A mapping's range, for each tree (pagoda_vm_update_each_tree()):
 * pagoda_pt_alloc_range()'s and pagoda_pt_map()'s arguments.
 */
struct pt_request {
	u64 va;
	u64 size;
	struct pagoda_bo *bo;
	u64 offset;
	u64 pte_flags;
	u32 instance;
	bool leaf64;
	bool rewrite;
};

static int pt_tree_alloc_request(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
				 void *arg)
{
	const struct pt_request *req = arg;

	return pt_tree_alloc_range(tree, req->va, req->size,
				   pt_tree_bo(tree, req->bo, req->instance), req->offset,
				   req->leaf64);
}

/**
 * pagoda_pt_alloc_range - make the tables a mapping needs
 * @vm: the address space, its lock held
 * @update: the update the mapping is written in: on a link the other GPUs'
 *	tables of a range of 2 MiB or more are made on another CPU
 *	meanwhile, from chunks made here first (pagoda_pt_reserve()); NULL
 *	to make them all here
 * @va: first address, page aligned
 * @size: bytes
 * @bo: the allocation it maps, placed where it will be mapped; NULL for
 *	zero pages
 * @offset: byte offset in @bo of the page at @va
 * @instance: of a linked allocation, the instance mapped (&pagoda_vma.instance)
 * @leaf64: the range is in a tiled reservation: its leaf tables are LEAF64
 *	ones and it has no 2 MiB page
 *
 * Every level down to the leaf tables of the spans mapped in 4 KiB pages,
 * and spares for the 2 MiB pages it splits or rewrites, on every GPU of
 * the link (the trees keep one shape). New tables are
 * fresh: pagoda_pt_map() writes them and links them in. Must not run while
 * a paging batch is being built (it may allocate).
 *
 * Return: 0 or a negative errno; tables made before a failure stay.
 */
int pagoda_pt_alloc_range(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va,
			  u64 size, struct pagoda_bo *bo, u64 offset, u32 instance, bool leaf64)
{
	struct pt_request req = {
		.va = va, .size = size, .bo = bo, .offset = offset, .instance = instance,
		.leaf64 = leaf64,
	};
	struct pagoda_pt_tree *tree;
	int ret;

	/* a small range is not worth the other CPU */
	if (!update || vm->num_pt == 1 || size < LARGE_SIZE) {
		pagoda_vm_for_each_tree(vm, tree) {
			ret = pt_tree_alloc_request(tree, NULL, &req);
			if (ret)
				return ret;
		}
		return 0;
	}
	/* chunks in the same order on every GPU: each mirrors the first's */
	pagoda_vm_for_each_tree(vm, tree) {
		ret = pagoda_pt_reserve(tree, pt_tables_bound(vm, size));
		if (ret)
			return ret;
	}
	pagoda_vm_for_each_tree(vm, tree)
		tree->chunks_closed = true;
	ret = pagoda_vm_update_each_tree(vm, update, pt_tree_alloc_request, &req, true);
	pagoda_vm_for_each_tree(vm, tree)
		tree->chunks_closed = false;
	return ret;
}

/*
 * A spare for the 2 MiB page of the span holding @va, if the range
 * [start, end) covers only part of it.
 */
static int pagoda_pt_spare_for_edge(struct pagoda_pt_tree *tree, u64 va, u64 start, u64 end)
{
	u64 span = round_down(va, LARGE_SIZE);
	struct pagoda_pt *pt = tree->root;
	u32 level;

	if (span >= start && span + LARGE_SIZE <= end)
		return 0;
	for (level = tree->vm->levels - 1; level > 1 && pt_is_table(pt); level--)
		pt = pt->children[pt_index(tree, va, level)];
	if (!pt_is_table(pt) || pt->children[pt_index(tree, va, 1)] != PT_LARGE)
		return 0;
	return pagoda_pt_add_spare(tree);
}

/**
 * pagoda_pt_prepare_clear - make the tables an unmap may need
 * @vm: the address space, its lock held
 * @va: first address of the range to unmap
 * @size: bytes
 *
 * Unmapping part of a 2 MiB page splits it into a leaf table: at most the
 * first and the last span of the range.
 *
 * Return: 0 or a negative errno.
 */
int pagoda_pt_prepare_clear(struct pagoda_vm *vm, u64 va, u64 size)
{
	struct pagoda_pt_tree *tree;
	int ret = 0;

	pagoda_vm_for_each_tree(vm, tree) {
		if (!tree->root)
			continue;
		ret = pagoda_pt_spare_for_edge(tree, va, va, va + size);
		if (!ret && round_down(va, LARGE_SIZE) != round_down(va + size - 1, LARGE_SIZE))
			ret = pagoda_pt_spare_for_edge(tree, va + size - 1, va, va + size);
		if (ret)
			break;
	}
	return ret;
}

/* Write fresh table @child invalid, then point entry @index of @pt to it. */
static int pagoda_pt_link(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			  struct pagoda_pt *pt, u32 index, struct pagoda_pt *child)
{
	u64 pte = pt_table_pte(child);
	int ret;

	ret = pagoda_pt_write_invalid(batch, child);
	if (!ret)
		ret = pagoda_paging_update_ptes(batch, pt->level, pt->addr, index, &pte, 1, 0);
	if (!ret)
		child->fresh = false;
	return ret;
}

/*
 * The level-1 table of @va. Fresh tables on the way are written invalid,
 * then linked into their parent.
 */
static int pagoda_pt_level1(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch, u64 va,
			    struct pagoda_pt **level1)
{
	struct pagoda_pt *pt = tree->root;
	u32 level;
	int ret;

	for (level = tree->vm->levels - 1; level > 1; level--) {
		u32 index = pt_index(tree, va, level);
		struct pagoda_pt *child = pt->children[index];

		if (WARN_ON(!pt_is_table(child)))
			return -EINVAL;
		if (child->fresh) {
			ret = pagoda_pt_link(tree, batch, pt, index, child);
			if (ret)
				return ret;
			pt->used++;
		}
		pt = child;
	}
	*level1 = pt;
	return 0;
}

/*
 * The leaf table of @va, linked in. Where the span has no table (a 2 MiB
 * page was there) a spare takes its place; replacing a 2 MiB page that
 * stays mapped (@rewrite) makes the whole table valid.
 */
static int pagoda_pt_leaf(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch, u64 va,
			  bool rewrite, struct pagoda_pt **leaf)
{
	struct pagoda_pt *level1, *child;
	u32 index;
	int ret;

	*leaf = pagoda_pt_hinted_leaf(tree, va);
	if (*leaf)
		return 0;
	ret = pagoda_pt_level1(tree, batch, va, &level1);
	if (ret)
		return ret;
	index = pt_index(tree, va, 1);
	child = level1->children[index];
	if (!pt_is_table(child)) {
		bool was_large = child == PT_LARGE;

		child = pagoda_pt_take_spare(tree);
		if (!child)
			return -EINVAL;
		level1->children[index] = child;
		if (was_large) {
			xa_erase(&tree->large_ptes, va >> ilog2(LARGE_SIZE));
			/* the entry stays valid: the table replaces the page */
			level1->used--;
			if (rewrite)
				child->used = PAGODA_PT_ENTRIES;
		}
	}
	if (child->fresh) {
		ret = pagoda_pt_link(tree, batch, level1, index, child);
		if (ret)
			return ret;
		level1->used++;
	}
	tree->leaf_hint = child;
	tree->leaf_hint_span = va >> ilog2(LARGE_SIZE);
	*leaf = child;
	return 0;
}

/* The level-1 table of @va, linked in, and the index of @va's span in it. */
static int pagoda_pt_span_entry(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
				u64 va, struct pagoda_pt **level1, u32 *index)
{
	*index = pt_index(tree, va, 1);
	return pagoda_pt_level1(tree, batch, va, level1);
}

/* Explicit entries of one table, gathered for one command. */
struct pagoda_pt_entries {
	struct pagoda_pt *pt;
	u32 start;
	u32 count;
	u64 ptes[PAGODA_PT_BATCH];
};

/*
 * What a mapping writes in explicit entries: leaf entries, and level-1
 * entries (2 MiB pages, and the links of fresh leaf tables written whole,
 * which go after those tables' fills), one command per run of them rather
 * than one each.
 */
struct pagoda_pt_writer {
	struct pagoda_paging_batch *batch;
	bool rewrite;
	struct pagoda_pt_entries leaf;
	struct pagoda_pt_entries links;
};

static int pagoda_pt_entries_flush(struct pagoda_pt_writer *w, struct pagoda_pt_entries *e)
{
	int ret = 0;

	if (e->count)
		ret = pagoda_paging_update_ptes(w->batch, e->pt->level, e->pt->addr, e->start,
						e->ptes, e->count, pt_upt_flags(e->pt));
	e->count = 0;
	return ret;
}

static int pagoda_pt_entries_add(struct pagoda_pt_writer *w, struct pagoda_pt_entries *e,
				 struct pagoda_pt *pt, u32 index, u64 pte)
{
	int ret;

	if (e->count && (e->pt != pt || e->start + e->count != index ||
			 e->count == PAGODA_PT_BATCH)) {
		ret = pagoda_pt_entries_flush(w, e);
		if (ret)
			return ret;
	}
	if (!e->count) {
		e->pt = pt;
		e->start = index;
	}
	e->ptes[e->count++] = pte;
	return 0;
}

/*
 * A fresh leaf table at @va (2 MiB aligned) that a run fills whole, @pte
 * its first entry and the others following it: the entries are written
 * first and the table linked after (its link joins @w's), with no pass
 * writing it invalid, since nothing reaches the table before it is
 * complete (a job of the space may run meanwhile). *@filled: it was such
 * a table, and is written, its link staged.
 */
static int pagoda_pt_fill_fresh_leaf(struct pagoda_pt_tree *tree, struct pagoda_pt_writer *w,
				     u64 va, u64 pte, bool *filled)
{
	struct pagoda_pt *level1, *child;
	u32 index;
	int ret;

	*filled = false;
	ret = pagoda_pt_span_entry(tree, w->batch, va, &level1, &index);
	if (ret)
		return ret;
	child = level1->children[index];
	if (!pt_is_table(child) || !child->fresh || child->leaf64)
		return 0;
	ret = pagoda_paging_update_ptes(w->batch, 0, child->addr, 0, &pte, child->entries,
					PAGODA_UPT_REPEAT | PAGODA_UPT_REPEAT_INCREMENT);
	if (!ret)
		ret = pagoda_pt_entries_add(w, &w->links, level1, index, pt_table_pte(child));
	if (ret)
		return ret;
	child->fresh = false;
	level1->used++;
	if (!w->rewrite)
		child->used += child->entries;
	tree->leaf_hint = child;
	tree->leaf_hint_span = va >> ilog2(LARGE_SIZE);
	*filled = true;
	return 0;
}

/*
 * Make the span of @va one 2 MiB page, entry @pte, replacing what is
 * there, in the tree's state: *@level1 and *@index get the entry to write,
 * *@unlinked whether a table the device reaches went with it (its entry is
 * then written before anything else, for the batch may reuse the table).
 */
static int pagoda_pt_make_large(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
				u64 va, u64 pte, struct pagoda_pt **level1, u32 *index,
				bool *unlinked)
{
	struct pagoda_pt *child;
	int ret;

	ret = pagoda_pt_span_entry(tree, batch, va, level1, index);
	if (ret)
		return ret;
	ret = xa_err(xa_store(&tree->large_ptes, va >> ilog2(LARGE_SIZE), xa_mk_value(pte),
			      GFP_KERNEL));
	if (ret)
		return ret;
	child = (*level1)->children[*index];
	*unlinked = pt_is_table(child) && !child->fresh;
	/* an entry that was not valid becomes valid */
	if (!child || (pt_is_table(child) && child->fresh))
		(*level1)->used++;
	if (pt_is_table(child))
		pagoda_pt_free(tree, child);
	(*level1)->children[*index] = PT_LARGE;
	return 0;
}

/* Map the span of @va as one 2 MiB page, entry @pte, written now. */
static int pagoda_pt_set_large(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			       u64 va, u64 pte)
{
	struct pagoda_pt *level1;
	bool unlinked;
	u32 index;
	int ret;

	ret = pagoda_pt_make_large(tree, batch, va, pte, &level1, &index, &unlinked);
	return ret ?: pagoda_paging_update_ptes(batch, 1, level1->addr, index, &pte, 1, 0);
}

/*
 * Map the span of @va as one 2 MiB page, entry @pte, its entry staged with
 * @w's links (a run of 2 MiB pages is one command), unless it unlinks a
 * table.
 */
static int pagoda_pt_stage_large(struct pagoda_pt_tree *tree, struct pagoda_pt_writer *w,
				 u64 va, u64 pte)
{
	struct pagoda_pt *level1;
	bool unlinked;
	u32 index;
	int ret;

	ret = pagoda_pt_make_large(tree, w->batch, va, pte, &level1, &index, &unlinked);
	if (ret)
		return ret;
	if (!unlinked)
		return pagoda_pt_entries_add(w, &w->links, level1, index, pte);
	ret = pagoda_pt_entries_flush(w, &w->links);
	return ret ?: pagoda_paging_update_ptes(w->batch, 1, level1->addr, index, &pte, 1, 0);
}

/* Whether the span of @va has a LEAF64 leaf table (a tiled reservation's). */
static bool pagoda_pt_span_leaf64(struct pagoda_pt_tree *tree, u64 va)
{
	struct pagoda_pt *pt = tree->root;
	u32 level;

	for (level = tree->vm->levels - 1; level > 0 && pt_is_table(pt); level--)
		pt = pt->children[pt_index(tree, va, level)];
	return pt_is_table(pt) && pt->leaf64;
}

/*
 * How many entries of leaf table @leaf, from the one of @va, map the
 * first of @bytes; 0 (a warning) when less than one of its pages is left.
 */
static u32 pt_leaf_count(const struct pagoda_pt *leaf, u64 va, u64 bytes)
{
	u32 n = min_t(u64, bytes >> pt_leaf_shift(leaf), leaf->entries - pt_leaf_index(leaf, va));

	WARN_ON(!n);
	return n;
}

/* Map [va, va + bytes) to the physically contiguous run at @paddr. */
static int pagoda_pt_map_run(struct pagoda_pt_tree *tree, struct pagoda_pt_writer *w, u64 va,
			     u64 paddr, u64 bytes, u64 pte_flags)
{
	while (bytes) {
		struct pagoda_pt *leaf;
		u32 index, shift, n, i;
		int ret;

		if (pt_large_ok(tree, va, paddr, bytes, false) &&
		    !pagoda_pt_span_leaf64(tree, va)) {
			ret = pagoda_pt_entries_flush(w, &w->leaf);
			if (!ret)
				ret = pagoda_pt_stage_large(tree, w, va,
							    pt_pte(paddr, pte_flags |
								   PAGODA_PTE_LARGE_PAGE));
			if (ret)
				return ret;
			va += LARGE_SIZE;
			paddr += LARGE_SIZE;
			bytes -= LARGE_SIZE;
			continue;
		}
		if (IS_ALIGNED(va, LARGE_SIZE) && bytes >= LARGE_SIZE) {
			bool filled;

			ret = pagoda_pt_fill_fresh_leaf(tree, w, va, pt_pte(paddr, pte_flags),
							&filled);
			if (ret)
				return ret;
			if (filled) {
				va += LARGE_SIZE;
				paddr += LARGE_SIZE;
				bytes -= LARGE_SIZE;
				continue;
			}
		}
		ret = pagoda_pt_leaf(tree, w->batch, va, w->rewrite, &leaf);
		if (ret)
			return ret;
		shift = pt_leaf_shift(leaf);
		index = pt_leaf_index(leaf, va);
		n = pt_leaf_count(leaf, va, bytes);
		if (!n)
			return -EINVAL;
		if (n >= PAGODA_PT_RUN_MIN) {
			u32 flags = PAGODA_UPT_REPEAT | PAGODA_UPT_REPEAT_INCREMENT |
				    pt_upt_flags(leaf);
			u64 pte = pt_pte(paddr, pte_flags);

			ret = pagoda_pt_entries_flush(w, &w->leaf);
			if (!ret)
				ret = pagoda_paging_update_ptes(w->batch, 0, leaf->addr, index,
								&pte, n, flags);
		} else {
			for (i = 0; i < n && !ret; i++)
				ret = pagoda_pt_entries_add(w, &w->leaf, leaf, index + i,
							    pt_pte(paddr + ((u64)i << shift),
								   pte_flags));
		}
		if (ret)
			return ret;
		if (!w->rewrite)
			leaf->used += n;
		va += (u64)n << shift;
		paddr += (u64)n << shift;
		bytes -= (u64)n << shift;
	}
	return 0;
}

/* Map [va, va + size) to zero pages: one repeated entry per leaf table. */
static int pagoda_pt_map_zero(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			      u64 va, u64 size, u64 pte_flags, bool rewrite)
{
	u64 pte = PAGODA_PTE_VALID | PAGODA_PTE_ZERO | pte_flags;
	u64 end = va + size;

	while (va < end) {
		struct pagoda_pt *leaf;
		u32 n;
		int ret;

		if (pt_large_ok(tree, va, 0, end - va, true) && !pagoda_pt_span_leaf64(tree, va)) {
			ret = pagoda_pt_set_large(tree, batch, va, pte | PAGODA_PTE_LARGE_PAGE);
			if (ret)
				return ret;
			va += LARGE_SIZE;
			continue;
		}
		ret = pagoda_pt_leaf(tree, batch, va, rewrite, &leaf);
		if (ret)
			return ret;
		n = pt_leaf_count(leaf, va, end - va);
		if (!n)
			return -EINVAL;
		ret = pagoda_paging_update_ptes(batch, 0, leaf->addr, pt_leaf_index(leaf, va), &pte,
						n, PAGODA_UPT_REPEAT | pt_upt_flags(leaf));
		if (ret)
			return ret;
		if (!rewrite)
			leaf->used += n;
		va += (u64)n << pt_leaf_shift(leaf);
	}
	return 0;
}

static int pt_tree_map(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch, u64 va,
		       u64 size, struct pagoda_bo *bo, u64 offset, u64 pte_flags, bool rewrite)
{
	struct pagoda_pt_writer w = { .batch = batch, .rewrite = rewrite };
	struct pagoda_bo_run run;
	u64 pos = va;
	int ret = 0;

	if (tree->root->fresh) {
		ret = pagoda_pt_write_invalid(batch, tree->root);
		if (ret)
			return ret;
		tree->root->fresh = false;
	}

	if (!bo) {
		ret = pagoda_pt_map_zero(tree, batch, va, size, pte_flags & ~PAGODA_PTE_ZERO,
					 rewrite);
	} else {
		pte_flags |= pt_peer_flags(tree, bo);
		for (pagoda_bo_run_first(bo, offset, size, &run); run.bytes && !ret;
		     pagoda_bo_run_next(&run)) {
			ret = pagoda_pt_map_run(tree, &w, pos, run.paddr, run.bytes, pte_flags);
			pos += run.bytes;
		}
		if (!ret)
			ret = pagoda_pt_entries_flush(&w, &w.leaf);
		if (!ret)
			ret = pagoda_pt_entries_flush(&w, &w.links);
	}
	if (!ret)
		ret = pagoda_paging_flush_tlb(batch, 0, va, size, true);
	return ret;
}

static int pt_tree_map_request(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			       void *arg)
{
	const struct pt_request *req = arg;
	int ret;

	ret = pt_tree_map(tree, batch, req->va, req->size,
			  pt_tree_bo(tree, req->bo, req->instance), req->offset, req->pte_flags,
			  req->rewrite);
	if (ret)
		return ret;
	ret = pagoda_paging_batch_flush_full(batch);
	/* what was not submitted is lost to the device's tables */
	if (ret)
		WRITE_ONCE(tree->vm->lost, true);
	return ret;
}

/**
 * pagoda_pt_map - write the entries of a mapping
 * @vm: the address space, its lock held
 * @update: the paging batches the entries go in, one per GPU
 * @va: first address, page aligned; [va, va + size) holds no valid
 *	entry, unless @rewrite
 * @size: bytes, a multiple of the page size
 * @bo: the allocation, reserved and placed where the GPU reaches it; NULL
 *	for zero pages
 * @offset: byte offset in @bo of the page at @va
 * @pte_flags: PAGODA_PTE_READ_ONLY, PAGODA_PTE_NO_EXECUTE (and
 *	PAGODA_PTE_ZERO, implied without @bo)
 * @instance: of a linked allocation, the instance each GPU's entries name
 *	(&pagoda_vma.instance)
 * @rewrite: the range is mapped already: its entries get new addresses
 *
 * Each GPU's tree gets its entries: another GPU's memory it reaches as a
 * peer. On a link the other GPUs' trees are written on another CPU
 * meanwhile for a range of 2 MiB or more (pagoda_vm_update_each_tree()).
 * The tables must exist
 * (pagoda_pt_alloc_range()).
 *
 * Return: 0 or a negative errno from the batch.
 */
int pagoda_pt_map(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va, u64 size,
		  struct pagoda_bo *bo, u64 offset, u64 pte_flags, u32 instance, bool rewrite)
{
	struct pt_request req = {
		.va = va, .size = size, .bo = bo, .offset = offset, .pte_flags = pte_flags,
		.instance = instance, .rewrite = rewrite,
	};

	return pagoda_vm_update_each_tree(vm, update, pt_tree_map_request, &req,
					  size >= LARGE_SIZE);
}

/*
 * Entry @index of the level-1 table on @path to @va goes (a leaf table left
 * with no valid entry, or a 2 MiB page): free what it pointed to, and the
 * tables above that only held it, and clear the entry that pointed to the
 * topmost one freed.
 */
static int pagoda_pt_unlink(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			    struct pagoda_pt **path, u64 va)
{
	u32 level = 1, index;
	u64 invalid = 0;
	struct pagoda_pt *pt;

	/* path[l] is the table of level l on the way to @va */
	while (level < tree->vm->levels - 1 && path[level]->used == 1)
		level++;
	pt = path[level];
	index = pt_index(tree, va, level);
	pt->used--;
	if (pt_is_table(pt->children[index]))
		pagoda_pt_free(tree, pt->children[index]);
	pt->children[index] = NULL;
	return pagoda_paging_update_ptes(batch, level, pt->addr, index, &invalid, 1, 0);
}

/*
 * Split the 2 MiB page of the span of @va into a spare leaf table: 512
 * entries of 4 KiB in its place. Return: the table, or an ERR_PTR.
 */
static struct pagoda_pt *pagoda_pt_split(struct pagoda_pt_tree *tree,
					 struct pagoda_paging_batch *batch,
					 struct pagoda_pt *level1, u64 va)
{
	u32 index = pt_index(tree, va, 1);
	void *entry = xa_erase(&tree->large_ptes, va >> ilog2(LARGE_SIZE));
	struct pagoda_pt *leaf;
	u64 pte;
	int ret;

	if (WARN_ON(!entry))
		return ERR_PTR(-EINVAL);
	leaf = pagoda_pt_take_spare(tree);
	if (!leaf)
		return ERR_PTR(-EINVAL);
	pte = xa_to_value(entry) & ~PAGODA_PTE_LARGE_PAGE;
	ret = pagoda_paging_update_ptes(batch, 0, leaf->addr, 0, &pte, PAGODA_PT_ENTRIES,
					PAGODA_UPT_REPEAT |
					(pte & PAGODA_PTE_ZERO ? 0 : PAGODA_UPT_REPEAT_INCREMENT));
	if (!ret) {
		pte = pt_pte(leaf->addr, 0);
		ret = pagoda_paging_update_ptes(batch, 1, level1->addr, index, &pte, 1, 0);
	}
	if (ret) {
		list_add(&leaf->spare, &tree->spares);
		return ERR_PTR(ret);
	}
	leaf->fresh = false;
	leaf->used = PAGODA_PT_ENTRIES;
	level1->children[index] = leaf;
	return leaf;
}

static int pt_tree_clear(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch, u64 va,
			 u64 size, bool keep)
{
	struct pagoda_pt *path[PAGODA_MMU_MAX_LEVELS];
	u64 end = va + size, start = va;
	u64 invalid = 0;
	int ret;

	while (va < end) {
		u32 index = pt_index(tree, va, 0), level;
		u32 n = min_t(u64, (end - va) >> PAGE_SHIFT, PAGODA_PT_ENTRIES - index);
		struct pagoda_pt *pt = tree->root;
		u32 shift = PAGE_SHIFT;

		for (level = tree->vm->levels - 1; level > 0 && pt_is_table(pt); level--) {
			path[level] = pt;
			pt = pt->children[pt_index(tree, va, level)];
		}
		if (pt == PT_LARGE && IS_ALIGNED(va, LARGE_SIZE) && end - va >= LARGE_SIZE) {
			xa_erase(&tree->large_ptes, va >> ilog2(LARGE_SIZE));
			if (keep || path[1]->used > 1 || tree->vm->levels == 2) {
				u32 index1 = pt_index(tree, va, 1);

				path[1]->used--;
				path[1]->children[index1] = NULL;
				ret = pagoda_paging_update_ptes(batch, 1, path[1]->addr, index1,
								&invalid, 1, 0);
			} else {
				ret = pagoda_pt_unlink(tree, batch, path, va);
			}
			if (ret)
				return ret;
			va += LARGE_SIZE;
			continue;
		}
		if (pt == PT_LARGE) {
			pt = pagoda_pt_split(tree, batch, path[1], va);
			if (IS_ERR(pt))
				return PTR_ERR(pt);
		}
		if (pt_is_table(pt) && pt->leaf64) {
			shift = pt_leaf_shift(pt);
			index = pt_leaf_index(pt, va);
			n = pt_leaf_count(pt, va, end - va);
		}
		if (WARN_ON(!pt_is_table(pt) || pt->fresh || pt->used < n || !n))
			return -EINVAL;
		if (pt->used == n && !keep) {
			pt->used = 0;
			ret = pagoda_pt_unlink(tree, batch, path, va);
		} else {
			pt->used -= n;
			ret = pagoda_paging_update_ptes(batch, 0, pt->addr, index, &invalid, n,
							PAGODA_UPT_REPEAT | pt_upt_flags(pt));
		}
		if (ret)
			return ret;
		va += (u64)n << shift;
	}
	return pagoda_paging_flush_tlb(batch, 0, start, size, true);
}

/**
 * pagoda_pt_clear - invalidate the entries of a range
 * @vm: the address space, its lock held
 * @update: the paging batches, one per GPU
 * @va: first address, page aligned; every page of the range is mapped
 * @size: bytes
 * @keep: the range is mapped again in the same batch: keep its tables
 *
 * Tables left with no valid entry are freed, unless @keep. A 2 MiB page
 * the range covers goes whole; one it covers in part is split first
 * (spares from pagoda_pt_prepare_clear() or pagoda_pt_alloc_range()).
 *
 * Return: 0 or a negative errno from the batch.
 */
int pagoda_pt_clear(struct pagoda_vm *vm, struct pagoda_vm_update *update, u64 va, u64 size,
		    bool keep)
{
	struct pagoda_pt_tree *tree;
	int ret;

	pagoda_vm_for_each_tree(vm, tree) {
		ret = pt_tree_clear(tree, &update->batch[tree - vm->pt], va, size, keep);
		if (ret)
			return ret;
	}
	return 0;
}

/* Entries a root needs to cover [0, @extent), for a 2-level device. */
static u32 pagoda_pt_root_need(struct pagoda_vm *vm, u64 extent)
{
	u32 shift = level_shift(vm->levels - 1);
	u64 entries = (extent >> shift) + !!(extent & ((1ull << shift) - 1));

	return clamp_t(u64, round_up(entries, PAGODA_PT_ENTRIES), PAGODA_PT_ENTRIES,
		       vm->max_root_entries);
}

/* Write @tree's new root @root invalid, then copy the entries it keeps. */
static int pagoda_pt_copy_root(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			       struct pagoda_pt *root)
{
	struct pagoda_pt *old = tree->root;
	int ret;

	ret = pagoda_pt_write_invalid(batch, root);
	if (!ret && !old->fresh)
		ret = pagoda_paging_copy_ptes(batch, old->addr, 0, root->addr, 0,
					      min(root->entries, old->entries));
	return ret;
}

/*
 * Move each GPU's root to a new table of @entries: written invalid, the
 * entries it keeps copied over (COPY_PTES), waited for, then the old one
 * freed. On failure the roots stay as they were.
 */
static int pagoda_pt_move_roots(struct pagoda_vm *vm, u32 entries)
{
	struct pagoda_pt *roots[PAGODA_LINK_MAX_ADAPTERS] = {};
	struct dma_fence *fences[PAGODA_LINK_MAX_ADAPTERS] = {};
	struct pagoda_vm_update update;
	struct pagoda_pt_tree *tree;
	int ret = 0;
	u32 i;

	pagoda_vm_for_each_tree(vm, tree) {
		roots[tree - vm->pt] = pagoda_pt_alloc(tree, vm->levels - 1, entries);
		if (IS_ERR(roots[tree - vm->pt])) {
			ret = PTR_ERR(roots[tree - vm->pt]);
			roots[tree - vm->pt] = NULL;
			goto out;
		}
	}
	pagoda_vm_update_init(vm, &update, false);
	pagoda_vm_for_each_tree(vm, tree) {
		i = tree - vm->pt;
		if (!ret)
			ret = pagoda_pt_copy_root(tree, &update.batch[i], roots[i]);
		fences[i] = pagoda_paging_batch_finish(&update.batch[i], ret);
		if (IS_ERR(fences[i])) {
			ret = PTR_ERR(fences[i]);
			fences[i] = NULL;
		}
	}
	/* the old roots go once copied; no job runs meanwhile */
	for (i = 0; i < vm->num_pt; i++) {
		if (fences[i] && dma_fence_wait(fences[i], false) == 0 && !ret)
			ret = fences[i]->error;
	}
	if (ret)
		goto out;
	pagoda_vm_for_each_tree(vm, tree) {
		struct pagoda_pt *old = tree->root, *root = roots[tree - vm->pt];

		memcpy(root->children, old->children,
		       min(entries, old->entries) * sizeof(*root->children));
		memset(old->children, 0, old->entries * sizeof(*old->children));
		root->used = old->used;
		root->fresh = false;
		tree->root = root;
		roots[tree - vm->pt] = old;
		dma_fence_put(tree->last_update);
		tree->last_update = fences[tree - vm->pt];
		fences[tree - vm->pt] = NULL;
	}
	trace_pagoda_pt_root_resize(vm, roots[0]->entries, entries);
out:
	/* the old roots, or on failure the new ones */
	for (i = 0; i < vm->num_pt; i++) {
		if (roots[i])
			pagoda_pt_free(&vm->pt[i], roots[i]);
		dma_fence_put(fences[i]);
	}
	return ret;
}

/**
 * pagoda_pt_resize_root - fit a resizable root to the reserved VA range
 * @vm: the address space, its lock held
 * @extent: end of the highest reservation
 *
 * With 2 levels the root grows and shrinks with the address space, by
 * 512 entries (4 KiB): a root of more than 512 entries has an allocation
 * of its own. It only shrinks down to its highest entry in use. The space
 * must be idle: this waits for its jobs, then the space leaves its device
 * contexts, so that its next job on each GPU sets the new root. Other
 * devices keep a fixed root.
 *
 * Return: 0, or a negative errno (the roots are unchanged).
 */
int pagoda_pt_resize_root(struct pagoda_vm *vm, u64 extent)
{
	struct pagoda_pt *root = vm->pt[0].root;
	struct pagoda_pt_tree *tree;
	u32 entries, used;
	long ret;

	if (vm->levels != 2)
		return 0;
	entries = pagoda_pt_root_need(vm, extent);
	if (!root) {
		vm->root_entries = entries;
		return 0;
	}
	/* the roots of every GPU have the same entries in use */
	for (used = root->entries; used > entries; used--)
		if (root->children[used - 1])
			break;
	entries = max(entries, round_up(used, PAGODA_PT_ENTRIES));
	if (entries == root->entries)
		return 0;
	ret = dma_resv_wait_timeout(drm_gpuvm_resv(&vm->gpuvm), DMA_RESV_USAGE_BOOKKEEP, true,
				    MAX_SCHEDULE_TIMEOUT);
	if (ret < 0)
		return ret;
	pagoda_vm_for_each_tree(vm, tree)
		pagoda_slot_release_vm(tree->gpu, vm);
	ret = pagoda_pt_move_roots(vm, entries);
	if (!ret)
		vm->root_entries = entries;
	return ret;
}

/**
 * pagoda_pt_chunk_moved - a chunk of tables has a new place
 * @chunk: the chunk, its allocation reserved and moved
 *
 * Called from TTM's move: the tables' addresses change at once (later
 * paging work writes them there, after the copy); the entries naming them
 * are rewritten before the space's next job.
 */
void pagoda_pt_chunk_moved(struct pagoda_pt_chunk *chunk)
{
	unsigned int i;

	for (i = 0; i < chunk->count; i++) {
		struct pagoda_pt *pt = chunk->tables[i];

		if (!pt)
			continue;
		pt->addr = pagoda_bo_page_paddr(chunk->bo, (u64)i * PAGODA_PT_SIZE);
		pt->moved = true;
	}
	chunk->tree->vm->pt_moved = true;
}

/**
 * pagoda_pt_chunk_swapped - TTM swaps a chunk's pages out
 * @chunk: the chunk, its allocation reserved
 *
 * Called from TTM's swap_notify: the pages come back as other pages when
 * the chunk is next placed (pagoda_pt_restore()), which reads the tables'
 * addresses again.
 */
void pagoda_pt_chunk_swapped(struct pagoda_pt_chunk *chunk)
{
	chunk->swapped = true;
	chunk->tree->vm->pt_moved = true;
}

/* Point the entries naming moved tables below @pt at their new place. */
static int pagoda_pt_relink(struct pagoda_pt_tree *tree, struct pagoda_paging_batch *batch,
			    struct pagoda_pt *pt)
{
	u32 i;
	int ret;

	for (i = 0; i < pt->entries; i++) {
		struct pagoda_pt *child = pt->children[i];

		if (!pt_is_table(child))
			continue;
		if (child->moved && !child->fresh) {
			u64 pte = pt_table_pte(child);

			ret = pagoda_paging_update_ptes(batch, pt->level, pt->addr, i, &pte, 1, 0);
			if (ret)
				return ret;
		}
		child->moved = false;
		if (child->level) {
			ret = pagoda_pt_relink(tree, batch, child);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/**
 * pagoda_pt_restore - tables back in place before they are used
 * @vm: the space, its lock and reservation held
 *
 * Only when a chunk moved or was swapped out since the last restore: the
 * chunks come back to their preferred segment when there is room (a
 * swapped one gets its tables' addresses read again); the entries naming
 * tables that moved are rewritten,
 * then every context's translations flushed (the device's page-walk cache
 * keeps leaf tables' addresses), and a moved root is set again in the
 * space's next device context.
 *
 * Return: 0, -EAGAIN when a placement ended the transaction
 * (pagoda_vm_place()), or a negative errno.
 */
int pagoda_pt_restore(struct pagoda_vm *vm)
{
	struct pagoda_vm_update update;
	struct pagoda_pt_chunk *chunk;
	struct pagoda_pt_tree *tree;
	int ret = 0;

	/* nothing moved or was swapped since the last time: the common case */
	if (!vm->pt_moved)
		return 0;
	/* the first GPU's chunks first: the others' go where those are */
	pagoda_vm_for_each_tree(vm, tree) {
		list_for_each_entry(chunk, &tree->chunks, link) {
			struct pagoda_bo_at at;

			if (chunk->twin)
				pagoda_bo_prefer_at(chunk->bo, pagoda_pt_twin_at(chunk->twin, &at));
			ret = pagoda_vm_place(vm, chunk->bo);
			if (ret)
				return ret;
			/* swapped-out pages came back elsewhere, without a move */
			if (chunk->swapped)
				pagoda_pt_chunk_moved(chunk);
			chunk->swapped = false;
		}
	}
	pagoda_vm_update_init(vm, &update, false);
	pagoda_vm_for_each_tree(vm, tree) {
		struct pagoda_paging_batch *batch = &update.batch[tree - vm->pt];

		if (!tree->root || ret)
			continue;
		if (tree->root->moved)
			pagoda_slot_release_vm(tree->gpu, vm);
		tree->root->moved = false;
		ret = pagoda_pt_relink(tree, batch, tree->root);
		if (!ret)
			ret = pagoda_paging_flush_tlb(batch, 0, 0, 0, true);
	}
	/* on failure the marks are gone, the entries maybe not rewritten: lost */
	ret = pagoda_vm_update_done(vm, &update, ret);
	if (!ret)
		vm->pt_moved = false;
	return ret;
}
