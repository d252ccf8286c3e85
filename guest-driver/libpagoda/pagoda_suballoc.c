// SPDX-License-Identifier: MIT
/*
 * libpagoda: the sub-allocator, which packs small requests into shared
 * allocations (slabs), one size class per power of two, as Mesa's pb_slab
 * does. See libpagoda.h, and docs/driver.md (libpagoda's sub-allocator)
 * for why each slab is mapped once into the GPU space.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libpagoda.h"

#define MIN_ORDER	8	/* log2(PAGODA_SUBALLOC_MIN_ENTRY) */
/* A class's slabs double this many times, from SLAB_MIN to SLAB_MAX. */
#define SLAB_GROWTH	4

_Static_assert(PAGODA_SUBALLOC_MIN_ENTRY == 1u << MIN_ORDER, "MIN_ORDER");
_Static_assert(PAGODA_SUBALLOC_MAX_ENTRY ==
	       PAGODA_SUBALLOC_MIN_ENTRY << (PAGODA_SUBALLOC_CLASSES - 1), "classes");
_Static_assert(PAGODA_SUBALLOC_SLAB_MAX == PAGODA_SUBALLOC_SLAB_MIN << SLAB_GROWTH, "growth");

/*
 * Per entry: who holds it, and the free list's link while nobody does. A
 * free must name the holder's serial too, so that a double free, or a
 * stale copy of an entry handed out again since, frees nothing.
 */
struct slab_entry {
	uint64_t serial;	/* its holder's, 0 while free */
	uint32_t next_free;
};

struct pagoda_suballoc_slab {
	struct pagoda_bo bo;
	uint64_t va;
	uint64_t entry_size;
	int cls;				/* -1: a request of its own */
	uint32_t slot;
	uint32_t count, nr_free, first_free;
	struct pagoda_suballoc_slab *prev, *next;	/* in the class's partial list */
	struct slab_entry entries[];
};

int pagoda_suballoc_init(struct pagoda_suballoc *sa, struct pagoda_dev *dev,
			 const struct pagoda_bo_desc *desc)
{
	if (desc && desc->size)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->dev = dev;
	if (desc)
		sa->desc = *desc;
	return 0;
}

/* The class of @bytes, or -1 when it is larger than the largest. */
static int size_class(uint64_t bytes)
{
	int order = bytes <= PAGODA_SUBALLOC_MIN_ENTRY ? MIN_ORDER :
			64 - __builtin_clzll(bytes - 1);

	return order - MIN_ORDER < PAGODA_SUBALLOC_CLASSES ? order - MIN_ORDER : -1;
}

/*
 * The next slab of class @cls: twice the last, so that a class used a
 * little wastes at most a 64 KiB page and one used a lot takes few
 * allocations.
 */
static uint64_t slab_bytes(const struct pagoda_suballoc *sa, int cls)
{
	uint32_t slabs = sa->classes[cls].slabs;

	return (uint64_t)PAGODA_SUBALLOC_SLAB_MIN << (slabs < SLAB_GROWTH ? slabs : SLAB_GROWTH);
}

static void partial_add(struct pagoda_suballoc *sa, struct pagoda_suballoc_slab *slab)
{
	struct pagoda_suballoc_class *c = &sa->classes[slab->cls];

	slab->prev = NULL;
	slab->next = c->partial;
	if (c->partial)
		c->partial->prev = slab;
	c->partial = slab;
}

static void partial_del(struct pagoda_suballoc *sa, struct pagoda_suballoc_slab *slab)
{
	if (slab->prev)
		slab->prev->next = slab->next;
	else
		sa->classes[slab->cls].partial = slab->next;
	if (slab->next)
		slab->next->prev = slab->prev;
}

/*
 * A free slot for a new slab in *@slot, the table grown when full. A scan:
 * slabs are made far less often than entries, and each costs ioctls.
 */
static int slot_find(struct pagoda_suballoc *sa, uint32_t *slot)
{
	struct pagoda_suballoc_slab **slots;
	uint32_t i, n;

	for (i = 0; i < sa->nr_slots && sa->slots[i]; i++)
		;
	if (i == sa->nr_slots) {
		n = sa->nr_slots ? 2 * sa->nr_slots : 16;
		slots = realloc(sa->slots, n * sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		memset(slots + sa->nr_slots, 0, (n - sa->nr_slots) * sizeof(*slots));
		sa->slots = slots;
		sa->nr_slots = n;
	}
	*slot = i;
	return 0;
}

/* The reservation a MAP without FIXED made for @slab: its size rounded up to 64 KiB. */
static uint64_t slab_va_size(const struct pagoda_suballoc_slab *slab)
{
	return (slab->bo.size + DRM_PAGODA_VA_ALIGN - 1) & ~(DRM_PAGODA_VA_ALIGN - 1);
}

/* The GEM allocation of @bytes, mapped by the CPU and at a VA the kernel picks. */
static int slab_memory(struct pagoda_suballoc *sa, uint64_t bytes, struct pagoda_bo *bo,
		       uint64_t *va)
{
	struct pagoda_bo_desc desc = sa->desc;
	int ret;

	desc.size = bytes;
	ret = pagoda_bo_create(sa->dev, &desc, bo);
	if (ret)
		return ret;
	ret = pagoda_bo_map(sa->dev, bo);
	if (!ret)
		ret = pagoda_vm_map(sa->dev, bo->handle, 0, bo->size, 0, va, 0, 0, 0);
	if (ret)
		pagoda_bo_free(sa->dev, bo);
	return ret;
}

/*
 * A new slab of class @cls, or (@cls -1) an allocation of @bytes of its
 * own: one entry of the size the kernel rounded it to.
 */
static int slab_create(struct pagoda_suballoc *sa, int cls, uint64_t bytes,
		       struct pagoda_suballoc_slab **out)
{
	struct pagoda_suballoc_slab *slab;
	uint64_t entry_size = cls < 0 ? 0 : PAGODA_SUBALLOC_MIN_ENTRY << cls;
	uint32_t count = cls < 0 ? 1 : bytes / entry_size, slot, i;
	int ret;

	ret = slot_find(sa, &slot);
	if (ret)
		return ret;
	slab = calloc(1, sizeof(*slab) + count * sizeof(slab->entries[0]));
	if (!slab)
		return -ENOMEM;
	ret = slab_memory(sa, bytes, &slab->bo, &slab->va);
	if (ret) {
		free(slab);
		return ret;
	}
	slab->entry_size = cls < 0 ? slab->bo.size : entry_size;
	slab->cls = cls;
	slab->slot = slot;
	slab->count = count;
	slab->nr_free = count;
	for (i = 0; i < count; i++)
		slab->entries[i].next_free = i + 1;
	sa->slots[slot] = slab;
	sa->slabs++;
	if (cls >= 0) {
		sa->classes[cls].slabs++;
		partial_add(sa, slab);
	}
	*out = slab;
	return 0;
}

/* Unmap and free @slab, whatever it still holds: the first error. */
static int slab_destroy(struct pagoda_suballoc *sa, struct pagoda_suballoc_slab *slab)
{
	int ret = pagoda_vm_free(sa->dev, slab->va, slab_va_size(slab));
	int ret2 = pagoda_bo_free(sa->dev, &slab->bo);

	if (slab->cls >= 0) {
		/* a class slab is on the partial list exactly while it has a free entry */
		if (slab->nr_free)
			partial_del(sa, slab);
		sa->classes[slab->cls].slabs--;
	}
	sa->slots[slab->slot] = NULL;
	sa->slabs--;
	free(slab);
	return ret ?: ret2;
}

/* Hand out @slab's first free entry in @e. */
static void entry_take(struct pagoda_suballoc *sa, struct pagoda_suballoc_slab *slab,
		       struct pagoda_suballoc_entry *e)
{
	uint32_t i = slab->first_free;

	slab->first_free = slab->entries[i].next_free;
	slab->entries[i].serial = ++sa->serial;
	if (!--slab->nr_free && slab->cls >= 0)
		partial_del(sa, slab);
	*e = (struct pagoda_suballoc_entry){
		.handle = slab->bo.handle,
		.offset = i * slab->entry_size,
		.size = slab->entry_size,
		.va = slab->va + i * slab->entry_size,
		.map = (uint8_t *)slab->bo.map + i * slab->entry_size,
		.slot = slab->slot,
		.serial = slab->entries[i].serial,
	};
}

int pagoda_suballoc_alloc(struct pagoda_suballoc *sa, uint64_t size, uint64_t align,
			  struct pagoda_suballoc_entry *entry)
{
	struct pagoda_suballoc_slab *slab;
	int cls, ret;

	if (!size || align & (align - 1) || align > PAGODA_SUBALLOC_MAX_ALIGN)
		return -EINVAL;
	/* entries are aligned like their power-of-two size, slabs' VAs to 64 KiB */
	cls = size_class(size > align ? size : align);
	slab = cls < 0 ? NULL : sa->classes[cls].partial;
	if (!slab) {
		ret = slab_create(sa, cls, cls < 0 ? size : slab_bytes(sa, cls), &slab);
		if (ret)
			return ret;
	}
	entry_take(sa, slab, entry);
	return 0;
}

/* The live slab holding @e and @e's index in it, or NULL when @sa does not hold @e. */
static struct pagoda_suballoc_slab *entry_slab(struct pagoda_suballoc *sa,
					       const struct pagoda_suballoc_entry *e,
					       uint32_t *index)
{
	struct pagoda_suballoc_slab *slab;

	if (!e->serial || e->slot >= sa->nr_slots)
		return NULL;
	slab = sa->slots[e->slot];
	if (!slab || slab->bo.handle != e->handle || e->offset % slab->entry_size ||
	    e->offset / slab->entry_size >= slab->count)
		return NULL;
	*index = e->offset / slab->entry_size;
	return slab->entries[*index].serial == e->serial ? slab : NULL;
}

int pagoda_suballoc_free(struct pagoda_suballoc *sa, struct pagoda_suballoc_entry *entry)
{
	struct pagoda_suballoc_slab *slab;
	uint32_t i;

	slab = entry_slab(sa, entry, &i);
	if (!slab)
		return -EINVAL;
	memset(entry, 0, sizeof(*entry));
	slab->entries[i].serial = 0;
	slab->entries[i].next_free = slab->first_free;
	slab->first_free = i;
	if (!slab->nr_free++ && slab->cls >= 0)
		partial_add(sa, slab);
	return slab->nr_free == slab->count ? slab_destroy(sa, slab) : 0;
}

int pagoda_suballoc_fini(struct pagoda_suballoc *sa)
{
	uint32_t i;
	int ret = 0, r;

	for (i = 0; i < sa->nr_slots; i++) {
		if (!sa->slots[i])
			continue;
		r = slab_destroy(sa, sa->slots[i]);
		ret = ret ?: r;
	}
	free(sa->slots);
	memset(sa, 0, sizeof(*sa));
	return ret;
}
