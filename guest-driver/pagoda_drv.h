/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DOC: Pagoda device state
 *
 * struct pagoda_link is the logical adapter user space sees: one DRM
 * device (primary and render node), the allocations and the address
 * spaces. struct pagoda_device is one Pagoda GPU, one bound PCI function:
 * registers, interrupts, engines, contexts, its segments and their TTM
 * device, faults and recovery. A GPU that is not linked is a link of one.
 *
 * The link is allocated with devm_drm_dev_alloc() and each of its GPUs
 * with drmm_kzalloc() on the link's DRM device, so both live as long as
 * the DRM device: past the PCI unbind while user space still holds a file
 * open. The hardware resources a GPU refers to (register mapping,
 * interrupt vectors) only live while its PCI function is bound; see the
 * lifetime rules on each member.
 */
#ifndef PAGODA_DRV_H
#define PAGODA_DRV_H

#include <linux/io.h>
#include <linux/mm_types.h>
#include <linux/pci.h>
#include <linux/ioport.h>
#include <linux/lockdep_types.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <linux/wait.h>

#include <drm/drm_device.h>
#include <drm/gpu_scheduler.h>
#include <drm/ttm/ttm_device.h>

#include <pagoda/pagoda_hw.h>

#include "pagoda_bo.h"
#include "pagoda_display.h"
#include "pagoda_engine.h"
#include "pagoda_vm.h"
#include "pagoda_vram_mgr.h"

/* Allocations live in segments 0 .. PAGODA_BO_NUM_SEGMENTS - 1 (not the aperture). */
#define PAGODA_BO_NUM_SEGMENTS	PAGODA_SEG_APERTURE

/* TTM memory type of segment 2, hidden VRAM (segment 1 is TTM_PL_VRAM). */
#define PAGODA_PL_HIDDEN	TTM_PL_PRIV

struct pagoda_device;
struct pci_error_handlers;

/**
 * struct pagoda_params - device description read once at probe
 * @chip_id: PAGODA_REG_ID
 * @revision: PAGODA_REG_REVISION
 * @caps: PAGODA_REG_CAPS
 * @vram_size: bytes of segment 1
 * @num_segments: PAGODA_REG_NUM_SEGMENTS
 * @num_engines: PAGODA_REG_NUM_ENGINES
 * @num_contexts: PAGODA_REG_NUM_CONTEXTS
 * @pci_vendor: PCI vendor ID
 * @pci_device: PCI device ID
 * @host_aperture_pages: pages of the CPU host aperture (BAR4)
 * @host_aperture_page_size: bytes of one
 * @host_aperture_size: their product
 * @mmu_levels: PAGODA_REG_MMU_LEVELS
 * @mmu_caps: PAGODA_REG_MMU_CAPS
 * @va_bits: PAGODA_REG_MMU_VA_BITS
 * @pt_segments: DRM_PAGODA_SEGMENT_MASK()s where tables of every level
 *	may live (PAGODA_MMU_LEVEL_SEGMENTS), among those allocations use
 *
 * What DRM_IOCTL_PAGODA_GET_PARAM reports. Captured before the DRM device
 * is registered and never written afterwards, so readers need no lock and
 * keep working after unplug.
 */
struct pagoda_params {
	u32 chip_id;
	u32 revision;
	u32 caps;
	u64 vram_size;
	u32 num_segments;
	u32 num_engines;
	u32 num_contexts;
	u16 pci_vendor;
	u16 pci_device;
	u32 host_aperture_pages;
	u32 host_aperture_page_size;
	u64 host_aperture_size;
	u32 mmu_levels;
	u32 mmu_caps;
	u32 va_bits;
	u32 pt_segments;
};

/**
 * struct pagoda_segment - one segment as the device describes it
 * @id: PAGODA_SEG_*
 * @kind: PAGODA_SEG_KIND_*
 * @flags: PAGODA_SEG_FLAG_*
 * @page_size: bytes (memory segments: 4 KiB or 64 KiB)
 * @size: bytes (0 for system memory)
 * @gpu_base: PAGODA_PADDR(id, 0)
 *
 * Read once at probe from PAGODA_REG_SEG(id); read-only afterwards.
 */
struct pagoda_segment {
	unsigned int id;
	u32 kind;
	u32 flags;
	u32 page_size;
	u64 size;
	u64 gpu_base;
};

/**
 * struct pagoda_gart - the aperture segment's table
 * @table: CPU address of the table, never written by the CPU
 * @table_dma: its bus address, programmed in GART_BASE
 * @entries: entries of the table, programmed in GART_ENTRIES
 *
 * Set at probe, read-only afterwards; lives until the PCI unbind.
 */
struct pagoda_gart {
	__le64 *table;
	dma_addr_t table_dma;
	u32 entries;
};

/**
 * struct pagoda_host_aperture_slot - one page of the CPU host aperture
 * @bo: the allocation whose page it shows, NULL when it shows nothing
 *	the driver still uses
 * @bo_page: that page of @bo, in segment pages
 * @generation: &pagoda_host_aperture.generation when it was mapped
 * @lru: in &pagoda_host_aperture.lru
 */
struct pagoda_host_aperture_slot {
	struct pagoda_bo *bo;
	u32 bo_page;
	u32 generation;
	struct list_head lru;
};

/**
 * struct pagoda_host_aperture - the CPU host aperture (BAR4) and its slots
 * @lock: protects the slots, @lru, the counters and every allocation's
 *	&pagoda_bo.host_aperture_slots; taken inside BO reservations
 * @slots: @count slots of @page_size bytes
 * @count: slots (PAGODA_REG_HOST_APERTURE_PAGES)
 * @page_size: bytes of a slot: the page size of hidden VRAM
 * @bar_start: CPU physical address of BAR4
 * @lru: the slots, least recently used first
 * @maps: segment pages mapped into slots so far
 * @reuses: mappings that took a slot from another page
 * @generation: adapter resets so far: a slot mapped in an older generation
 *	shows nothing any more (written by the reset without @lock)
 *
 * See the DOC block of pagoda_host_aperture.c.
 */
struct pagoda_host_aperture {
	struct mutex lock; /* see @lock above */
	struct pagoda_host_aperture_slot *slots;
	u32 count;
	u32 page_size;
	resource_size_t bar_start;
	struct list_head lru;
	u64 maps;
	u64 reuses;
	u32 generation;
};

/**
 * struct pagoda_irq - one interrupt vector and the sources it serves
 * @pgdev: device the vector belongs to
 * @sources: PAGODA_REG_INT_STATUS bits this vector's handler owns
 * @irq: Linux interrupt number
 * @own_vector: an MSI-X vector of one engine: its handler reads no
 *	INT_STATUS
 *
 * Set by pagoda_irq_init() before the handler is requested, read-only after.
 */
struct pagoda_irq {
	struct pagoda_device *pgdev;
	u32 sources;
	int irq;
	bool own_vector;
};

/* Fault records kept for debugfs. */
#define PAGODA_FAULT_LOG	16

/**
 * struct pagoda_fault_entry - a fault record as debugfs shows it
 * @fault: the record
 * @context: its context
 */
struct pagoda_fault_entry {
	struct pagoda_fault fault;
	u32 context;
};

/**
 * struct pagoda_device - one Pagoda GPU
 * @link: the logical adapter the GPU belongs to
 * @drm: the link's DRM device
 * @pdev: the GPU's PCI function
 * @link_index: its physical adapter index in the link (PAGODA_REG_LINK_INDEX)
 * @adapter: its position in &pagoda_link.gpu: the UAPI's adapter number
 * @tag: what its messages begin with: "gpu<i>: " on a link of several
 *	(i its position), else nothing; written before the DRM device is
 *	registered
 * @mmio: BAR0 registers (&pagoda_member.mmio). Mapped by devres from probe
 *	until the PCI unbind completes: code outside probe, remove and the interrupt handlers
 *	touches it only between drm_dev_enter() and drm_dev_exit().
 * @vram: BAR2 resource, the CPU window on VRAM segment 1; reserved for the
 *	driver for as long as the PCI device is bound.
 * @params: identity and sizes, see struct pagoda_params
 * @irqs: interrupt vectors in use, the first @num_irqs entries
 * @num_irqs: PAGODA_MSIX_VECTORS with MSI-X, 1 with MSI or INTx, 0 when
 *	interrupts are torn down
 * @segs: the segments, by id
 * @engine: the engines, by id; see struct pagoda_engine for their locks
 * @bdev: the TTM device over the GPU's segments, sharing the link's DRM
 *	device's mmap offsets; lives as long as the DRM device, since
 *	allocations outlive the PCI binding
 * @gart: the aperture segment's table
 * @host_aperture: the CPU host aperture's slots
 * @vram_mgr: resource managers of the memory segments, by segment id
 *	(entries 1 and 2)
 * @reset_lock: held for writing from a PCI reset's reset_prepare to its
 *	reset_done, while the BARs do not decode and the engines are
 *	stopped; held for reading by what needs the device in between: CPU
 *	faults on allocations and allocation creation (which may move
 *	memory), the debugfs evict and paging_fault files; the read locks
 *	of every GPU of the link (pagoda_link_resets_read_lock(), in the
 *	order of &pagoda_device.adapter, one lockdep class per position)
 *	by what may write any GPU's tables or move any GPU's allocations:
 *	VM_BIND, SUBMIT, RESIDENCY. Always taken outside BO reservations;
 *	in faults inside the mmap lock, which the reset side never takes.
 * @ctx_lock: serialises PAGODA_REG_CTX_SELECT and the context registers
 *	it selects; taken in the fault interrupt, so with interrupts off
 * @render_sched: the render engine's scheduler (pagoda_sched.c)
 * @render_wq: its workqueue, ordered
 * @render_pushed: render jobs pushed to @render_sched
 * @render_started: of them, those it ran or dropped
 * @render_queued: of them, those not run directly (pagoda_sched.c,
 *	Direct submission) and not yet on the engine's ring
 * @render_lingering: its worker waits for the next job of a stream
 * @render_direct_lock: protects @render_direct; taken before the engine
 *	locks (the recovery runs the jobs again under it)
 * @render_direct: jobs run directly that the scheduler has not taken yet
 *	(&pagoda_render_job.direct_link): the recovery runs them again
 * @render_direct_runs: render jobs run directly since probe
 * @render_push_ns: when the last was pushed
 * @render_push_gap_ns: the time between the last two pushes
 * @slot_lock: protects @slots and every space's slot on this GPU
 *	(&pagoda_pt_tree.slot); taken in
 *	interrupt context (fence callbacks, faults), outside @ctx_lock
 * @slots: the device's contexts as lent to address spaces; 0 is the kernel's
 * @fault_lock: serialises draining the fault queue (fault and engine
 *	vectors) and protects @fault_log and @fault_count
 * @fault_log: the last PAGODA_FAULT_LOG fault records, for debugfs
 * @fault_count: records seen since probe
 * @faults_lost: PAGODA_REG_FAULT_LOST when last read (reset by a reset)
 * @phys_queue_lock: protects @phys_queue, the turn of its buffers and
 *	@phys_holds; innermost (taken inside reservations by the buffer
 *	whose turn it is, to look at the buffers behind it)
 * @phys_queue: the physical-mode DMA buffers (struct pagoda_phys_submit)
 *	checked and waiting, in the order they run: one at a time, device
 *	wide, so that one buffer at a time is split (pagoda_phys.c). A
 *	buffer's turn, the first's once no one holds the queue, is taken
 *	inside @reset_lock, before a context's submit lock, and lasts until
 *	it leaves the queue (@phys_turn_map tells lockdep)
 * @phys_queue_wait: the buffers of @phys_queue waiting for their turn
 * @phys_holds: open debugfs phys_hold files: while not 0, no buffer of
 *	@phys_queue takes its turn
 * @phys_turn_map: the turn as a lock, for lockdep
 * @split_lock: protects @split_active; the lock of the split barriers
 * @split_active: the barrier of the split buffer whose portions are
 *	running: jobs of other contexts wait for it (pagoda_sched.c)
 * @split_ctx: the context whose buffer is being split, or NULL; written
 *	by the buffer whose turn it is, read by eviction without a lock
 * @split_fence_context: dma_fence context of the split barriers
 * @split_seqno: seqno of the last barrier, written by the buffer whose
 *	turn it is
 * @phys_clock: physical-mode uses of allocations so far, written by the
 *	buffer whose turn it is
 * @recovery_lock: serialises the recoveries (render timeout, paging
 *	watchdog); taken before a reset's engine submit locks
 * @reset_seq: recoveries so far, under @recovery_lock
 * @engine_resets: render engine resets, under @recovery_lock
 * @adapter_resets: adapter resets, under @recovery_lock
 * @int_lock: protects @int_enable and serialises writes of
 *	PAGODA_REG_INT_ENABLE (probe, remove, resets, DRM's vblank
 *	enabling); taken with interrupts off, innermost
 * @int_enable: the sources enabled while the handlers are in place
 * @display: the KMS objects over the display controller
 *
 * Locking: each member that changes after probe has its lock above.
 * Everything else is written in probe before drm_dev_register() or in
 * remove after drm_dev_unplug(), which the driver core serialises. The
 * interrupt handlers of different vectors may run at the same time on
 * different CPUs; each owns disjoint bits of the write-1-to-clear
 * PAGODA_REG_INT_STATUS, so they ack without a lock. PAGODA_REG_INT_ENABLE
 * is written only under @int_lock.
 */
struct pagoda_device {
	struct pagoda_link *link;
	struct drm_device *drm;
	struct pci_dev *pdev;
	u32 link_index;
	u32 adapter;
	char tag[8];
	void __iomem *mmio;
	struct resource *vram;
	struct pagoda_params params;
	struct pagoda_irq irqs[PAGODA_MSIX_VECTORS];
	unsigned int num_irqs;
	struct pagoda_segment segs[PAGODA_NUM_SEGMENTS];
	struct pagoda_engine engine[PAGODA_NUM_ENGINES];
	struct ttm_device bdev;
	struct pagoda_gart gart;
	struct pagoda_host_aperture host_aperture;
	struct pagoda_vram_mgr vram_mgr[PAGODA_NUM_SEGMENTS];
	struct rw_semaphore reset_lock;
	spinlock_t ctx_lock; /* see @ctx_lock above */
	struct drm_gpu_scheduler render_sched;
	struct workqueue_struct *render_wq;
	atomic64_t render_pushed;
	atomic64_t render_started;
	atomic_t render_queued;
	bool render_lingering;
	struct mutex render_direct_lock; /* see @render_direct_lock above */
	struct list_head render_direct;
	atomic64_t render_direct_runs;
	u64 render_push_ns;
	u64 render_push_gap_ns;
	spinlock_t slot_lock; /* see @slot_lock above */
	struct pagoda_slot slots[PAGODA_NUM_CONTEXTS];
	spinlock_t fault_lock; /* see @fault_lock above */
	struct pagoda_fault_entry fault_log[PAGODA_FAULT_LOG];
	u64 fault_count;
	u32 faults_lost;
	struct mutex phys_queue_lock; /* see @phys_queue_lock above */
	struct list_head phys_queue;
	wait_queue_head_t phys_queue_wait;
	unsigned int phys_holds;
	struct lockdep_map phys_turn_map;
	spinlock_t split_lock; /* see @split_lock above */
	struct dma_fence *split_active;
	struct pagoda_gpu_ctx *split_ctx;
	u64 split_fence_context;
	u64 split_seqno;
	u64 phys_clock;
	struct mutex recovery_lock; /* see @recovery_lock above */
	u64 reset_seq;
	u64 engine_resets;
	u64 adapter_resets;
	spinlock_t int_lock; /* see @int_lock above */
	u32 int_enable;
	struct pagoda_display display;
};

/**
 * struct pagoda_member - a Pagoda PCI function bound to the driver
 * @pdev: the function
 * @mmio: BAR0, mapped by devres from probe until the PCI unbind
 * @link_id: PAGODA_REG_LINK_ID at probe, 0 when not linked
 * @index: PAGODA_REG_LINK_INDEX at probe
 * @present: PAGODA_REG_LINK_PRESENT at probe
 * @first: the member that made the link's component match: the lowest
 *	index present at its probe
 * @link: on @first, the link while it is bound
 * @gpu: the GPU's state while its link is bound, else NULL
 * @reset_gpu: @gpu when a PCI reset began, for its end
 *
 * The PCI driver data. A GPU that is not linked is the first and only
 * member of its link. @link and @gpu are written by the component
 * framework's bind and unbind, which it serialises.
 */
struct pagoda_member {
	struct pci_dev *pdev;
	void __iomem *mmio;
	u32 link_id;
	u32 index;
	u32 present;
	bool first;
	struct pagoda_link *link;
	struct pagoda_device *gpu;
	struct pagoda_device *reset_gpu;
};

/**
 * struct pagoda_link - the logical adapter: one DRM device over linked GPUs
 * @drm: the DRM device; its parent is the PCI function of @gpu[0]
 * @gpu: the GPUs in the order of their physical adapter indices; the
 *	first @num_gpus are set
 * @num_gpus: GPUs of the link
 * @bo_list_lock: protects @bo_list; taken alone (debugfs takes BO
 *	reservations under it with trylock only)
 * @bo_list: every allocation of the link, for debugfs
 * @vm_list_lock: protects @vm_list; taken before an address space's lock
 * @vm_list: every address space (struct pagoda_vm), for debugfs
 *
 * @gpu and @num_gpus are written before the DRM device is registered and
 * never afterwards.
 */
struct pagoda_link {
	struct drm_device drm;
	struct pagoda_device *gpu[PAGODA_LINK_MAX_ADAPTERS];
	unsigned int num_gpus;
	struct mutex bo_list_lock; /* protects @bo_list */
	struct list_head bo_list;
	struct mutex vm_list_lock; /* protects @vm_list */
	struct list_head vm_list;
};

/* Messages about one GPU: on a link of several they say which (@tag). */
#define pagoda_gpu_printk(drm_print, pgdev, fmt, ...) ({		\
	const struct pagoda_device *__gpu = (pgdev);			\
	drm_print(__gpu->drm, "%s" fmt, __gpu->tag, ##__VA_ARGS__);	\
})
#define pagoda_gpu_err(pgdev, fmt, ...) \
	pagoda_gpu_printk(drm_err, pgdev, fmt, ##__VA_ARGS__)
#define pagoda_gpu_err_ratelimited(pgdev, fmt, ...) \
	pagoda_gpu_printk(drm_err_ratelimited, pgdev, fmt, ##__VA_ARGS__)
#define pagoda_gpu_warn(pgdev, fmt, ...) \
	pagoda_gpu_printk(drm_warn, pgdev, fmt, ##__VA_ARGS__)
#define pagoda_gpu_info(pgdev, fmt, ...) \
	pagoda_gpu_printk(drm_info, pgdev, fmt, ##__VA_ARGS__)

/*
 * One turn of a short, bounded spin (the link helper's, the render
 * worker's linger). Not cpu_relax(): under QEMU's TCG a PAUSE ends the
 * vCPU's translated code and its thread takes QEMU's big lock before it
 * goes on (and under KVM it is a pause-loop exit), so a CPU spinning with
 * it keeps the device and the other CPU's register accesses waiting on
 * that lock (docs/performance.md, Binding on a link).
 */
static inline void pagoda_spin(void)
{
	barrier();
}

static inline struct pagoda_link *to_pagoda_link(struct drm_device *drm)
{
	return container_of(drm, struct pagoda_link, drm);
}

static inline struct pagoda_device *bdev_to_pagoda_device(struct ttm_device *bdev)
{
	return container_of(bdev, struct pagoda_device, bdev);
}

/* The GPU whose segments hold @bo (its physical adapter). */
static inline struct pagoda_device *pagoda_bo_device(struct pagoda_bo *bo)
{
	return bdev_to_pagoda_device(bo->tbo.bdev);
}

static inline u32 pagoda_read(struct pagoda_device *pgdev, u32 reg)
{
	return readl(pgdev->mmio + reg);
}

static inline void pagoda_write(struct pagoda_device *pgdev, u32 reg, u32 val)
{
	writel(val, pgdev->mmio + reg);
}

int pagoda_irq_init(struct pagoda_device *pgdev);
void pagoda_irq_enable(struct pagoda_device *pgdev);
void pagoda_irq_disable(struct pagoda_device *pgdev);
void pagoda_irq_set_sources(struct pagoda_device *pgdev, u32 sources, bool on);
void pagoda_irq_fini(struct pagoda_device *pgdev);

extern const struct pci_error_handlers pagoda_pci_err_handlers;
unsigned long pagoda_hang_timeout(void);

void pagoda_engines_stop(struct pagoda_device *pgdev, int error);
struct pagoda_job;
void pagoda_adapter_reset(struct pagoda_device *pgdev, struct pagoda_job *guilty);
void pagoda_reset_lock_init(struct pagoda_device *pgdev);
int pagoda_link_resets_read_lock(struct pagoda_link *link);
void pagoda_link_resets_read_unlock(struct pagoda_link *link);
void pagoda_paging_timedout(struct work_struct *work);
int pagoda_read_segments(struct pagoda_device *pgdev);
int pagoda_ttm_init(struct pagoda_device *pgdev);
void pagoda_ttm_fini(struct pagoda_device *pgdev);
unsigned int pagoda_mem_type_segment(u32 mem_type);
u32 pagoda_segment_mem_type(unsigned int seg);
void pagoda_segment_count_move(struct pagoda_device *pgdev, u32 mem_type, bool evict, u64 bytes);
void pagoda_segment_count_discard(struct pagoda_device *pgdev, u32 mem_type);
const char *pagoda_segment_name(unsigned int id);

struct pagoda_paging_batch;
struct pagoda_tt;
struct ttm_resource;
int pagoda_gart_init(struct pagoda_device *pgdev);
void pagoda_gart_fini(struct pagoda_device *pgdev);
void pagoda_gart_program(struct pagoda_device *pgdev);
int pagoda_gart_bind(struct pagoda_paging_batch *batch, struct ttm_resource *res,
		     struct pagoda_tt *ptt);
int pagoda_gart_unbind(struct pagoda_paging_batch *batch, struct ttm_resource *res);
void pagoda_gart_unbind_now(struct pagoda_device *pgdev, struct ttm_resource *res);
void pagoda_gart_usage(struct pagoda_device *pgdev, u64 *entries, u64 *used);

int pagoda_host_aperture_init(struct pagoda_device *pgdev);
void pagoda_host_aperture_release_bo(struct pagoda_device *pgdev, struct pagoda_bo *bo);
void pagoda_host_aperture_reset(struct pagoda_device *pgdev);
void pagoda_host_aperture_forget(struct pagoda_device *pgdev);
vm_fault_t pagoda_host_aperture_fault(struct vm_fault *vmf, struct pagoda_bo *bo);
void pagoda_host_aperture_stats(struct pagoda_device *pgdev, u64 *maps, u64 *reuses, u32 *used);

/**
 * struct pagoda_file - per DRM file (process) state
 * @lock: protects everything below; taken before BO reservations
 * @resident: struct pagoda_residency entries: allocations this file keeps
 *	resident (pinned), with counts
 * @resident_bytes: their total size
 * @budget: bytes the file may keep resident, 0 for no limit
 * @vm: its GPU address space, from open to close
 * @contexts: its GPU contexts (struct pagoda_gpu_ctx) by id; the xarray's
 *	own lock protects it
 */
struct pagoda_file {
	struct mutex lock; /* see @lock above */
	struct list_head resident;
	u64 resident_bytes;
	u64 budget;
	struct pagoda_vm *vm;
	struct xarray contexts;
};

int pagoda_file_open(struct drm_device *drm, struct drm_file *file);
void pagoda_file_postclose(struct drm_device *drm, struct drm_file *file);
int pagoda_ioctl_residency(struct drm_device *drm, void *data, struct drm_file *file);
int pagoda_ioctl_set_budget(struct drm_device *drm, void *data, struct drm_file *file);
void pagoda_residency_close(struct drm_gem_object *obj, struct drm_file *file);
unsigned int pagoda_residency_count(struct pagoda_file *pfile, struct pagoda_bo *bo);
void pagoda_bo_unmap_all_dma(struct pagoda_device *pgdev);
int pagoda_bo_evict_segment(struct pagoda_device *pgdev, u32 mem_type);
struct pagoda_link;
void pagoda_debugfs_init(struct pagoda_link *link);
struct drm_printer;
void pagoda_show_fdinfo(struct drm_printer *p, struct drm_file *file);

#endif /* PAGODA_DRV_H */
