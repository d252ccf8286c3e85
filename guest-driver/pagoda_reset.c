// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda resets
 *
 * A reset brings the device back to its power-on state: every register the
 * driver programmed is lost, VRAM keeps its contents. The driver restores
 * what it programmed in one place, pagoda_reset_restore(), whatever reset
 * it was: a PCI function reset requested from outside the driver (sysfs
 * "reset", a hypervisor, a PCI error recovery), and later the adapter
 * reset of the driver's own recovery.
 *
 * A PCI function reset (pci_reset_function(), which on Pagoda is the PCI
 * power management D3hot -> D0 reset) calls reset_prepare before and
 * reset_done after, both with the device lock held, so they never overlap
 * probe or remove. The PCI core saves and restores the configuration space
 * and the MSI-X table around the reset; the requested interrupt vectors
 * stay requested. Before the reset the driver takes the reset lock for
 * writing and zaps every CPU mapping of an allocation, so that nothing
 * reads or writes VRAM through BAR2 while it does not decode (faults and
 * new allocations wait); it lets queued engine work
 * finish and stops the render scheduler and the engines, then stops every
 * interrupt source and waits for running handlers; afterwards it checks
 * that the registers read back as Pagoda's and restores them: interrupts,
 * the aperture's table (whose entries are in system memory and survive),
 * then the rings. The contexts' roots are set again by each space's next
 * job, in whatever slot it gets.
 *
 * The adapter reset is the driver's own recovery (the model's TDR), for a
 * paging engine that made no progress for pagoda_hang_timeout() (the
 * engine's watchdog, pagoda_engine.c) and for a render engine that did
 * not come back from its engine reset (pagoda_recovery.c). With the render
 * scheduler stopped and both engines' submit locks held, the driver
 * retires what the engines finished, writes RESET_ADAPTER and restores:
 * interrupts, the aperture's table, the rings; the render jobs the reset
 * aborted fail on the engine and run again through the scheduler (new
 * engine fences), the paging jobs are written to the ring again, in
 * order, with their original fences, except the one that hung (it fails
 * with -ETIMEDOUT). The contexts' roots are set again by each space's
 * next job; the host aperture's mappings are forgotten (every CPU mapping
 * of an allocation is zapped before the reset, and a slot mapped before it
 * is mapped again by the next fault). VRAM keeps its contents, so no
 * allocation loses data. The reset lock is only tried: a PCI function
 * reset in progress does the restoring itself.
 */

#include <linux/mm.h>
#include <linux/pci.h>

#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

/*
 * The reset locks of a link's GPUs are taken together, in the order of
 * their position: each position is a lockdep class of its own.
 */
static struct lock_class_key pagoda_reset_lock_keys[PAGODA_LINK_MAX_ADAPTERS];

/**
 * pagoda_reset_lock_init - set up a GPU's reset lock
 * @pgdev: the GPU, its &pagoda_device.adapter set
 */
void pagoda_reset_lock_init(struct pagoda_device *pgdev)
{
	init_rwsem(&pgdev->reset_lock);
	lockdep_set_class(&pgdev->reset_lock, &pagoda_reset_lock_keys[pgdev->adapter]);
}

/**
 * pagoda_link_resets_read_lock - no GPU of a link is reset from here on
 * @link: the adapter
 *
 * For what may write the tables of any GPU or move the allocations of any.
 *
 * Return: 0, or -EINTR when a signal came (no lock held).
 */
int pagoda_link_resets_read_lock(struct pagoda_link *link)
{
	unsigned int i;
	int ret;

	for (i = 0; i < link->num_gpus; i++) {
		ret = down_read_interruptible(&link->gpu[i]->reset_lock);
		if (ret) {
			while (i--)
				up_read(&link->gpu[i]->reset_lock);
			return ret;
		}
	}
	return 0;
}

/**
 * pagoda_link_resets_read_unlock - end of pagoda_link_resets_read_lock()
 * @link: the adapter
 */
void pagoda_link_resets_read_unlock(struct pagoda_link *link)
{
	unsigned int i;

	for (i = link->num_gpus; i--; )
		up_read(&link->gpu[i]->reset_lock);
}

/* Reprogram everything the device lost in a reset. */
static int pagoda_reset_restore(struct pagoda_device *pgdev)
{
	u32 id = pagoda_read(pgdev, PAGODA_REG_ID);
	unsigned int e;

	if (id != PAGODA_ID) {
		pagoda_gpu_err(pgdev, "after reset BAR%d reads ID 0x%08x: device lost\n",
			       PAGODA_BAR_MMIO, id);
		return -ENODEV;
	}
	pagoda_irq_enable(pgdev);
	pagoda_gart_program(pgdev);
	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		pagoda_engine_start(&pgdev->engine[e]);
	pagoda_display_restore(pgdev);
	return 0;
}

/**
 * pagoda_adapter_reset - reset the whole device and restore it (TDR)
 * @pgdev: the device; the render scheduler stopped, the recovery lock held
 * @guilty: the paging job that hung (not run again), or NULL
 *
 * See the DOC block.
 */
void pagoda_adapter_reset(struct pagoda_device *pgdev, struct pagoda_job *guilty)
{
	struct pagoda_engine *paging = &pgdev->engine[PAGODA_ENGINE_PAGING];
	struct pagoda_engine *render = &pgdev->engine[PAGODA_ENGINE_RENDER];
	int idx;

	lockdep_assert_held(&pgdev->recovery_lock);
	if (!drm_dev_enter(pgdev->drm, &idx))
		return;
	if (!down_read_trylock(&pgdev->reset_lock)) {
		drm_dev_exit(idx);
		return;
	}
	pagoda_gpu_warn(pgdev, "adapter reset\n");
	mutex_lock(&paging->submit_lock);
	/* the two engines' locks are of one class: the paging one is taken first */
	mutex_lock_nested(&render->submit_lock, SINGLE_DEPTH_NESTING);
	pagoda_engine_retire(paging);
	pagoda_engine_retire(render);
	pagoda_host_aperture_forget(pgdev);
	pagoda_write(pgdev, PAGODA_REG_RESET, PAGODA_RESET_ADAPTER);
	/* the reset emptied the fault queue and cleared FAULT_LOST */
	pgdev->faults_lost = 0;
	pagoda_engine_abort_locked(render, -ETIMEDOUT);
	pagoda_slots_reset(pgdev);
	pagoda_irq_enable(pgdev);
	pagoda_gart_program(pgdev);
	/* the surface on screen is pinned: VRAM kept it, the GART maps it again */
	pagoda_display_restore(pgdev);
	pagoda_engine_replay_locked(paging, guilty);
	mutex_unlock(&render->submit_lock);
	mutex_unlock(&paging->submit_lock);
	pgdev->adapter_resets++;
	pagoda_gpu_info(pgdev, "device restored after adapter reset\n");
	up_read(&pgdev->reset_lock);
	drm_dev_exit(idx);
}

/**
 * pagoda_paging_timedout - the paging engine's watchdog fired
 * @work: &pagoda_engine.tdr of the paging engine
 *
 * Its oldest job made no progress for pagoda_hang_timeout(): the adapter
 * is reset, that job fails with -ETIMEDOUT, the others run again.
 */
void pagoda_paging_timedout(struct work_struct *work)
{
	struct pagoda_engine *engine = container_of(to_delayed_work(work), struct pagoda_engine,
						    tdr);
	struct pagoda_job *job = pagoda_engine_oldest(engine);

	if (!job)
		return;
	pagoda_gpu_err(engine->pgdev, "paging job %llu made no progress: adapter reset\n",
		       job->fence.seqno);
	pagoda_recover_adapter(engine->pgdev, job);
	dma_fence_put(&job->fence);
}

static void pagoda_reset_prepare(struct pci_dev *pdev)
{
	struct pagoda_member *member = pci_get_drvdata(pdev);
	struct pagoda_device *pgdev = member->gpu;

	/* a GPU whose link is not bound has nothing to stop or restore */
	member->reset_gpu = pgdev;
	if (!pgdev)
		return;

	pagoda_gpu_info(pgdev, "PCI function reset\n");
	/*
	 * No CPU access to VRAM while BAR2 does not decode: new faults and
	 * allocations wait for reset_done, existing mappings are zapped.
	 */
	down_write(&pgdev->reset_lock);
	unmap_mapping_range(pgdev->drm->anon_inode->i_mapping, 0, 0, 1);
	/* no render job starts until the device is back */
	drm_sched_wqueue_stop(&pgdev->render_sched);
	/* queued work finishes first; what the reset would cut off fails */
	pagoda_engines_stop(pgdev, -EIO);
	pagoda_irq_disable(pgdev);
}

static void pagoda_reset_done(struct pci_dev *pdev)
{
	struct pagoda_member *member = pci_get_drvdata(pdev);
	struct pagoda_device *pgdev = member->reset_gpu;

	if (!pgdev)
		return;
	member->reset_gpu = NULL;

	/* the device forgot the host aperture's mappings and the contexts' roots */
	pagoda_host_aperture_reset(pgdev);
	pagoda_slots_reset(pgdev);
	/* the reset emptied the fault queue and cleared FAULT_LOST */
	pgdev->faults_lost = 0;
	if (!pagoda_reset_restore(pgdev))
		pagoda_gpu_info(pgdev, "device restored after PCI function reset\n");
	drm_sched_wqueue_start(&pgdev->render_sched);
	up_write(&pgdev->reset_lock);
}

const struct pci_error_handlers pagoda_pci_err_handlers = {
	.reset_prepare	= pagoda_reset_prepare,
	.reset_done	= pagoda_reset_done,
};
