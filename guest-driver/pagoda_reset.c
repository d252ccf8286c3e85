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
 */

#include <linux/mm.h>
#include <linux/pci.h>

#include <drm/drm_print.h>

#include "pagoda_drv.h"

/* Reprogram everything the device lost in a reset. */
static int pagoda_reset_restore(struct pagoda_device *pgdev)
{
	u32 id = pagoda_read(pgdev, PAGODA_REG_ID);
	unsigned int e;

	if (id != PAGODA_ID) {
		drm_err(&pgdev->drm, "after reset BAR%d reads ID 0x%08x: device lost\n",
			PAGODA_BAR_MMIO, id);
		return -ENODEV;
	}
	pagoda_irq_enable(pgdev);
	pagoda_gart_program(pgdev);
	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		pagoda_engine_start(&pgdev->engine[e]);
	return 0;
}

static void pagoda_reset_prepare(struct pci_dev *pdev)
{
	struct pagoda_device *pgdev = pci_get_drvdata(pdev);

	drm_info(&pgdev->drm, "PCI function reset\n");
	/*
	 * No CPU access to VRAM while BAR2 does not decode: new faults and
	 * allocations wait for reset_done, existing mappings are zapped.
	 */
	down_write(&pgdev->reset_lock);
	unmap_mapping_range(pgdev->drm.anon_inode->i_mapping, 0, 0, 1);
	/* no render job starts until the device is back */
	drm_sched_wqueue_stop(&pgdev->render_sched);
	/* queued work finishes first; what the reset would cut off fails */
	pagoda_engines_stop(pgdev, -EIO);
	pagoda_irq_disable(pgdev);
}

static void pagoda_reset_done(struct pci_dev *pdev)
{
	struct pagoda_device *pgdev = pci_get_drvdata(pdev);

	/* the device forgot the host aperture's mappings and the contexts' roots */
	pagoda_host_aperture_reset(pgdev);
	pagoda_slots_reset(pgdev);
	/* the reset emptied the fault queue and cleared FAULT_LOST */
	pgdev->faults_lost = 0;
	if (!pagoda_reset_restore(pgdev))
		drm_info(&pgdev->drm, "device restored after PCI function reset\n");
	drm_sched_wqueue_start(&pgdev->render_sched);
	up_write(&pgdev->reset_lock);
}

const struct pci_error_handlers pagoda_pci_err_handlers = {
	.reset_prepare	= pagoda_reset_prepare,
	.reset_done	= pagoda_reset_done,
};
