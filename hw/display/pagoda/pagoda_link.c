/*
 * Pagoda GPU: linked adapters.
 *
 * Two to four Pagoda GPUs form one linked adapter: each GPU after the
 * first names the first with its "link" property. They stay separate PCI
 * functions (BARs, interrupts, engines, MMU, contexts, TLB, segments); what
 * the link adds is that a leaf page-table entry whose PTE_ADAPTER names
 * another member reaches that member's VRAM or hidden VRAM at the same
 * offset, for every engine path that goes through the MMU (pagoda_dma.c
 * asks pagoda_link_peer() whose memory a translation names). Page tables
 * themselves are always local.
 *
 * The first GPU makes the link when the second joins; members take the
 * lowest free physical adapter index (the first GPU is 0); a member that
 * is unplugged leaves its index absent, and one in D3hot (a function reset
 * under way) is absent until it is back in D0: translations naming an
 * absent member fault (PAGODA_FAULT_BAD_PEER), checked at every access
 * since TLBs may still hold them. The link goes with its last member.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/qdev-core.h"
#include "pagoda_int.h"

/* Links made so far in this QEMU: the next one's id is one more. */
static uint32_t links_made;

static PagodaLink *link_new(PagodaState *first)
{
    PagodaLink *link = g_new0(PagodaLink, 1);

    link->id = ++links_made;
    link->members[0] = first;
    link->members_left = 1;
    WITH_QEMU_LOCK_GUARD(&first->lock) {
        first->link = link;
        first->link_index = 0;
    }
    return link;
}

/*
 * Hold (or release) every other member's lock, in link order: their
 * DOORBELL slices, which hold only their own, read the membership. With
 * the big lock, so that two joins or leaves never take them at once.
 */
static void link_lock_others(PagodaLink *link, PagodaState *s, bool lock)
{
    unsigned i;

    for (i = 0; i < PAGODA_LINK_MAX_ADAPTERS; i++) {
        PagodaState *m = link->members[lock ? i : PAGODA_LINK_MAX_ADAPTERS - 1 - i];

        if (m && m != s) {
            if (lock) {
                qemu_mutex_lock(&m->lock);
            } else {
                qemu_mutex_unlock(&m->lock);
            }
        }
    }
}

/*
 * Join the link of the GPU named by the "link" property, if any; that GPU
 * must be realized already (it comes first on the command line) and not
 * name another itself.
 */
bool pagoda_link_realize(PagodaState *s, Error **errp)
{
    PagodaState *first = s->link_first;
    PagodaLink *link;
    unsigned i;

    if (!first) {
        return true;
    }
    if (first == s || first->link_first) {
        error_setg(errp, "pagoda: link must name the first GPU of the link, "
                   "which names none itself");
        return false;
    }
    if (!DEVICE(first)->realized) {
        error_setg(errp, "pagoda: the first GPU of the link must be created "
                   "before the GPUs linked to it");
        return false;
    }
    link = first->link ?: link_new(first);
    for (i = 0; i < PAGODA_LINK_MAX_ADAPTERS && link->members[i]; i++) {
        continue;
    }
    if (i == PAGODA_LINK_MAX_ADAPTERS) {
        error_setg(errp, "pagoda: a link holds at most %u GPUs",
                   PAGODA_LINK_MAX_ADAPTERS);
        return false;
    }
    link_lock_others(link, s, true);
    link->members[i] = s;
    link->members_left++;
    s->link = link;
    s->link_index = i;
    link_lock_others(link, s, false);
    return true;
}

/* Leave the link: its index is absent from now on. */
void pagoda_link_unrealize(PagodaState *s)
{
    PagodaLink *link = s->link;

    if (!link) {
        return;
    }
    assert(link->members[s->link_index] == s);
    link_lock_others(link, s, true);
    link->members[s->link_index] = NULL;
    s->link = NULL;
    link_lock_others(link, s, false);
    if (!--link->members_left) {
        g_free(link);
    }
}

/* Member @i of @link if it is present: realized, and powered. */
static PagodaState *link_member(PagodaLink *link, unsigned i)
{
    PagodaState *m = link->members[i];

    return m && pagoda_powered(m) ? m : NULL;
}

/*
 * The GPU whose memory a PTE_ADAPTER value names: 0 this one, i + 1
 * adapter i of the link (this one included). NULL when it names no
 * present member: an unlinked GPU has no adapter but itself (0).
 */
PagodaState *pagoda_link_peer(PagodaState *s, unsigned adapter)
{
    if (!adapter) {
        return s;
    }
    if (!s->link || adapter > PAGODA_LINK_MAX_ADAPTERS) {
        return NULL;
    }
    return link_member(s->link, adapter - 1);
}

uint32_t pagoda_link_reg(PagodaState *s, hwaddr addr)
{
    uint32_t present = 0;
    unsigned i;

    switch (addr) {
    case PAGODA_REG_LINK_ID:
        return s->link ? s->link->id : 0;
    case PAGODA_REG_LINK_INDEX:
        return s->link_index;
    case PAGODA_REG_LINK_PRESENT:
        if (!s->link) {
            return 1;
        }
        for (i = 0; i < PAGODA_LINK_MAX_ADAPTERS; i++) {
            present |= link_member(s->link, i) ? PAGODA_BIT(i) : 0;
        }
        return present;
    }
    g_assert_not_reached();
}
