// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda PCI driver and DRM device
 *
 * Binds to each Pagoda PCI function, checks that BAR0 really is a Pagoda
 * register file, reads the device description, sets up interrupts and
 * registers a DRM device with a primary node (KMS, pagoda_display.c) and a
 * render node; the driver's own ioctls work on both. User space queries
 * the device description with DRM_IOCTL_PAGODA_GET_PARAM.
 *
 * Probe order: enable the PCI function, allocate the DRM device, map
 * BAR0, check PAGODA_REG_ID, read the description, reserve BAR2 (VRAM),
 * enable bus mastering, set up interrupts, start the engines, set up the
 * segments and TTM, the display, register the DRM device, start the fbdev
 * console. Remove runs the reverse: unplug the DRM device so that no new
 * ioctl reaches the hardware, turn the display off, let the engines
 * finish (or give up on them), tear down interrupts, and let
 * devres unmap the BARs and disable the function. TTM and the allocations
 * live until the DRM device is freed, when its last file is closed.
 */

#include <linux/component.h>
#include <linux/module.h>
#include <linux/pci.h>

#include <drm/drm_atomic_helper.h>
#include <drm/drm_drv.h>
#include <drm/drm_fbdev_ttm.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_ttm_helper.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include <uapi/drm/pagoda_drm.h>

#include "pagoda_drv.h"
#include "pagoda_phys.h"

#define DRIVER_NAME	"pagoda"
#define DRIVER_DESC	"Pagoda virtual GPU"
#define DRIVER_MAJOR	1
#define DRIVER_MINOR	0

static int pagoda_ioctl_get_param(struct drm_device *drm, void *data,
				  struct drm_file *file)
{
	const struct pagoda_link *link = to_pagoda_link(drm);
	struct drm_pagoda_get_param *args = data;
	const struct pagoda_device *pgdev;
	const struct pagoda_params *params;

	if (args->adapter >= link->num_gpus)
		return -EINVAL;
	pgdev = link->gpu[args->adapter];
	params = &pgdev->params;

	switch (args->param) {
	case DRM_PAGODA_PARAM_CHIP_ID:
		args->value = params->chip_id;
		break;
	case DRM_PAGODA_PARAM_REVISION:
		args->value = params->revision;
		break;
	case DRM_PAGODA_PARAM_CAPS:
		args->value = params->caps;
		break;
	case DRM_PAGODA_PARAM_VRAM_SIZE:
		args->value = params->vram_size;
		break;
	case DRM_PAGODA_PARAM_NUM_SEGMENTS:
		args->value = params->num_segments;
		break;
	case DRM_PAGODA_PARAM_NUM_ENGINES:
		args->value = params->num_engines;
		break;
	case DRM_PAGODA_PARAM_NUM_CONTEXTS:
		args->value = params->num_contexts;
		break;
	case DRM_PAGODA_PARAM_PCI_VENDOR:
		args->value = params->pci_vendor;
		break;
	case DRM_PAGODA_PARAM_PCI_DEVICE:
		args->value = params->pci_device;
		break;
	case DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE:
		args->value = pgdev->segs[PAGODA_SEG_VRAM_HIDDEN].size;
		break;
	case DRM_PAGODA_PARAM_APERTURE_SIZE:
		args->value = pgdev->segs[PAGODA_SEG_APERTURE].size;
		break;
	case DRM_PAGODA_PARAM_SEGMENT_PAGE_SIZE:
		args->value = pgdev->segs[PAGODA_SEG_VRAM].page_size;
		break;
	case DRM_PAGODA_PARAM_HOST_APERTURE_SIZE:
		args->value = params->host_aperture_size;
		break;
	case DRM_PAGODA_PARAM_VA_BITS:
		args->value = params->va_bits;
		break;
	case DRM_PAGODA_PARAM_MMU_LEVELS:
		args->value = params->mmu_levels;
		break;
	case DRM_PAGODA_PARAM_VA_START:
		args->value = DRM_PAGODA_VA_START;
		break;
	case DRM_PAGODA_PARAM_MAX_SLOT_ID:
		args->value = DRM_PAGODA_MAX_SLOT_ID;
		break;
	case DRM_PAGODA_PARAM_NUM_ADAPTERS:
		args->value = link->num_gpus;
		break;
	case DRM_PAGODA_PARAM_LINK_INDEX:
		args->value = pgdev->link_index;
		break;
	default:
		drm_dbg_driver(drm, "unknown parameter %u\n", args->param);
		return -EINVAL;
	}

	return 0;
}

static const struct drm_ioctl_desc pagoda_ioctls[] = {
	DRM_IOCTL_DEF_DRV(PAGODA_GET_PARAM, pagoda_ioctl_get_param, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_GEM_CREATE, pagoda_ioctl_gem_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_GEM_INFO, pagoda_ioctl_gem_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_RESIDENCY, pagoda_ioctl_residency, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_SET_BUDGET, pagoda_ioctl_set_budget, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_GEM_MADVISE, pagoda_ioctl_gem_madvise, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_VM_BIND, pagoda_ioctl_vm_bind, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_CTX_CREATE, pagoda_ioctl_ctx_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_CTX_DESTROY, pagoda_ioctl_ctx_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_SUBMIT, pagoda_ioctl_submit, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_CTX_QUERY, pagoda_ioctl_ctx_query, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(PAGODA_SUBMIT_PHYS, pagoda_ioctl_submit_phys, DRM_RENDER_ALLOW),
};

static const struct file_operations pagoda_drm_fops = {
	.owner		= THIS_MODULE,
	DRM_GEM_FOPS,
	.show_fdinfo	= drm_show_fdinfo,
};

static const struct drm_driver pagoda_drm_driver = {
	.driver_features	= DRIVER_GEM | DRIVER_RENDER | DRIVER_GEM_GPUVA |
				  DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE |
				  DRIVER_MODESET | DRIVER_ATOMIC,
	.gem_prime_import	= drm_gem_prime_import,
	.gem_prime_import_sg_table = pagoda_gem_prime_import_sg_table,
	.dumb_create		= pagoda_gem_dumb_create,
	.dumb_map_offset	= drm_gem_ttm_dumb_map_offset,
	.show_fdinfo		= pagoda_show_fdinfo,
	.open			= pagoda_file_open,
	.postclose		= pagoda_file_postclose,
	.ioctls			= pagoda_ioctls,
	.num_ioctls		= ARRAY_SIZE(pagoda_ioctls),
	.fops			= &pagoda_drm_fops,
	.name			= DRIVER_NAME,
	.desc			= DRIVER_DESC,
	.major			= DRIVER_MAJOR,
	.minor			= DRIVER_MINOR,
};

static void pagoda_read_params(struct pagoda_device *pgdev, struct pci_dev *pdev)
{
	struct pagoda_params *params = &pgdev->params;
	u32 l;

	params->chip_id = pagoda_read(pgdev, PAGODA_REG_ID);
	params->revision = pagoda_read(pgdev, PAGODA_REG_REVISION);
	params->caps = pagoda_read(pgdev, PAGODA_REG_CAPS);
	params->vram_size = (u64)pagoda_read(pgdev, PAGODA_REG_VRAM_SIZE_HI) << 32 |
			    pagoda_read(pgdev, PAGODA_REG_VRAM_SIZE_LO);
	params->num_segments = pagoda_read(pgdev, PAGODA_REG_NUM_SEGMENTS);
	params->num_engines = pagoda_read(pgdev, PAGODA_REG_NUM_ENGINES);
	params->num_contexts = pagoda_read(pgdev, PAGODA_REG_NUM_CONTEXTS);
	params->pci_vendor = pdev->vendor;
	params->pci_device = pdev->device;
	params->host_aperture_pages = pagoda_read(pgdev, PAGODA_REG_HOST_APERTURE_PAGES);
	params->host_aperture_page_size = pagoda_read(pgdev, PAGODA_REG_HOST_APERTURE_PAGE_SIZE);
	params->host_aperture_size = (u64)params->host_aperture_pages *
				     params->host_aperture_page_size;
	params->mmu_levels = pagoda_read(pgdev, PAGODA_REG_MMU_LEVELS);
	params->mmu_caps = pagoda_read(pgdev, PAGODA_REG_MMU_CAPS);
	params->va_bits = pagoda_read(pgdev, PAGODA_REG_MMU_VA_BITS);
	params->pt_segments = DRM_PAGODA_SEGMENT_MASK(PAGODA_SEG_SYSTEM) |
			      DRM_PAGODA_SEGMENT_MASK(PAGODA_SEG_VRAM) |
			      DRM_PAGODA_SEGMENT_MASK(PAGODA_SEG_VRAM_HIDDEN);
	for (l = 0; l < params->mmu_levels && l < PAGODA_MMU_MAX_LEVELS; l++)
		params->pt_segments &= pagoda_read(pgdev, PAGODA_REG_MMU_LEVEL(l) +
						   PAGODA_MMU_LEVEL_SEGMENTS);
}

/* How long remove and reset wait for queued engine work. */
#define PAGODA_IDLE_TIMEOUT	(5 * HZ)

static void pagoda_engines_release(struct drm_device *drm, void *arg)
{
	struct pagoda_device *pgdev = arg;
	unsigned int e;

	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		pagoda_engine_fini(&pgdev->engine[e]);
}

/* Allocate both rings, then start them: a failure leaves no ring running. */
static int pagoda_engines_init(struct pagoda_device *pgdev)
{
	unsigned int e;
	int ret;

	for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
		ret = pagoda_engine_init(pgdev, &pgdev->engine[e], e);
		if (ret)
			return ret;
	}
	ret = drmm_add_action_or_reset(pgdev->drm, pagoda_engines_release, pgdev);
	if (ret)
		return ret;
	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		pagoda_engine_start(&pgdev->engine[e]);
	return 0;
}

/**
 * pagoda_engines_stop - let queued work finish, then stop every engine
 * @pgdev: the device
 * @error: set on the fences of jobs that did not finish in time
 */
void pagoda_engines_stop(struct pagoda_device *pgdev, int error)
{
	unsigned int e;

	for (e = 0; e < PAGODA_NUM_ENGINES; e++) {
		if (pagoda_engine_idle(&pgdev->engine[e], PAGODA_IDLE_TIMEOUT))
			pagoda_gpu_err(pgdev, "%s engine did not finish its work\n",
				       pgdev->engine[e].name);
		pagoda_engine_stop(&pgdev->engine[e], error);
	}
}

/* Allocations outlive the PCI binding: TTM goes with the DRM device. */
static void pagoda_ttm_release(struct drm_device *drm, void *arg)
{
	pagoda_ttm_fini(arg);
}

/* The GPU's description, checked: the driver drives this MMU and display. */
static int pagoda_gpu_check(struct pagoda_device *pgdev)
{
	const struct pagoda_params *params = &pgdev->params;
	struct device *dev = &pgdev->pdev->dev;

	if (params->mmu_levels < 2 || params->mmu_levels > PAGODA_MMU_MAX_LEVELS ||
	    params->num_contexts != PAGODA_NUM_CONTEXTS || !params->pt_segments ||
	    !(params->caps & PAGODA_CAPS_DISPLAY)) {
		dev_err(dev, "unexpected device: %u MMU levels, %u contexts, table segments 0x%x, caps 0x%x\n",
			params->mmu_levels, params->num_contexts, params->pt_segments,
			params->caps);
		return -ENODEV;
	}

	/* Segment 1 is reached by the CPU through BAR2 only. */
	pgdev->vram = &pgdev->pdev->resource[PAGODA_BAR_VRAM];
	if (!(resource_type(pgdev->vram) & IORESOURCE_MEM) ||
	    resource_size(pgdev->vram) < params->vram_size) {
		dev_err(dev, "BAR%d %pR cannot hold the %llu bytes of VRAM the device reports\n",
			PAGODA_BAR_VRAM, pgdev->vram, params->vram_size);
		return -ENODEV;
	}
	return pagoda_read_segments(pgdev);
}

/*
 * The GPUs of a link build every address space's tables alike (pagoda_pt.c:
 * one tree per GPU, the same tables in the same order): the same levels,
 * VA bits, MMU capabilities (2 MiB pages, LEAF64 tables), table segments
 * and memory-segment page sizes as the first GPU, or no link.
 */
static int pagoda_gpu_check_link(struct pagoda_device *pgdev, const struct pagoda_device *first)
{
	const struct pagoda_params *p = &pgdev->params, *f = &first->params;
	u32 seg;

	for (seg = PAGODA_SEG_VRAM; seg <= PAGODA_SEG_VRAM_HIDDEN; seg++)
		if (pgdev->segs[seg].page_size != first->segs[seg].page_size)
			break;
	if (seg > PAGODA_SEG_VRAM_HIDDEN && p->mmu_levels == f->mmu_levels &&
	    p->va_bits == f->va_bits && p->mmu_caps == f->mmu_caps &&
	    p->pt_segments == f->pt_segments)
		return 0;
	dev_err(&pgdev->pdev->dev,
		"its MMU differs from the link's first GPU (%u levels, %u VA bits, caps 0x%x, %u-byte VRAM pages against %u, %u, 0x%x, %u): no link\n",
		p->mmu_levels, p->va_bits, p->mmu_caps, pgdev->segs[PAGODA_SEG_VRAM].page_size,
		f->mmu_levels, f->va_bits, f->mmu_caps, first->segs[PAGODA_SEG_VRAM].page_size);
	return -ENODEV;
}

/*
 * Bind one GPU into its link: the link's DRM device exists, not yet
 * registered. Device-managed resources taken here (BAR2, the rings) go
 * when the GPU leaves the link: the component framework opens a devres
 * group around each bind.
 */
static int pagoda_gpu_bind(struct device *dev, struct device *aggregate, void *data)
{
	struct pagoda_member *member = dev_get_drvdata(dev);
	struct pci_dev *pdev = member->pdev;
	struct pagoda_link *link = data;
	struct pagoda_device *pgdev;
	int ret;

	/* the link's match names at most one member per physical adapter index */
	if (WARN_ON(link->num_gpus == ARRAY_SIZE(link->gpu)))
		return -EINVAL;
	pgdev = drmm_kzalloc(&link->drm, sizeof(*pgdev), GFP_KERNEL);
	if (!pgdev)
		return -ENOMEM;
	pgdev->link = link;
	pgdev->drm = &link->drm;
	pgdev->pdev = pdev;
	pgdev->mmio = member->mmio;
	pgdev->link_index = member->index;
	pgdev->adapter = link->num_gpus;

	pagoda_reset_lock_init(pgdev);
	spin_lock_init(&pgdev->ctx_lock);
	spin_lock_init(&pgdev->fault_lock);
	spin_lock_init(&pgdev->int_lock);
	/* a reset restores every GPU's display, which on most shows nothing */
	spin_lock_init(&pgdev->display.lock);
	ret = pagoda_phys_init(pgdev);
	if (ret)
		return ret;
	spin_lock_init(&pgdev->split_lock);
	ret = drmm_mutex_init(pgdev->drm, &pgdev->recovery_lock);
	if (ret)
		return ret;
	pgdev->split_fence_context = dma_fence_context_alloc(1);

	pagoda_read_params(pgdev, pdev);
	ret = pagoda_gpu_check(pgdev);
	if (!ret && link->num_gpus)
		ret = pagoda_gpu_check_link(pgdev, link->gpu[0]);
	if (ret)
		return ret;
	ret = pcim_request_region(pdev, PAGODA_BAR_VRAM, DRIVER_NAME);
	if (ret)
		return dev_err_probe(dev, ret, "cannot reserve BAR%d (VRAM)\n", PAGODA_BAR_VRAM);

	/* MSI and MSI-X messages are memory writes by the device. */
	pci_set_master(pdev);

	ret = pagoda_irq_init(pgdev);
	if (ret)
		return ret;
	ret = pagoda_engines_init(pgdev);
	if (ret)
		goto err_irq_fini;
	ret = pagoda_sched_init(pgdev);
	if (ret)
		goto err_engines;
	ret = pagoda_ttm_init(pgdev);
	if (ret)
		goto err_engines;
	ret = drmm_add_action_or_reset(pgdev->drm, pagoda_ttm_release, pgdev);
	if (ret)
		goto err_engines;
	ret = pagoda_host_aperture_init(pgdev);
	if (ret)
		goto err_engines;

	member->gpu = pgdev;
	link->gpu[link->num_gpus++] = pgdev;
	return 0;

err_engines:
	pagoda_engines_stop(pgdev, -ENODEV);
err_irq_fini:
	pagoda_irq_fini(pgdev);
	return ret;
}

/*
 * A GPU leaves its link: the link's unbind stopped its engines already; a
 * failed bind of another GPU of the link (component_bind_all() unwinding)
 * did not, and stopping stopped engines changes nothing.
 */
static void pagoda_gpu_unbind(struct device *dev, struct device *aggregate, void *data)
{
	struct pagoda_member *member = dev_get_drvdata(dev);

	pagoda_engines_stop(member->gpu, -ENODEV);
	pagoda_irq_fini(member->gpu);
	member->gpu = NULL;
}

static const struct component_ops pagoda_gpu_ops = {
	.bind	= pagoda_gpu_bind,
	.unbind	= pagoda_gpu_unbind,
};

static void pagoda_link_stop(struct pagoda_link *link)
{
	unsigned int i;

	for (i = 0; i < link->num_gpus; i++)
		pagoda_engines_stop(link->gpu[i], -ENODEV);
}

/*
 * Every member is there: make the link's DRM device over them. Runs in
 * the probe of the member that arrived last, with the first member's
 * device as the aggregate's.
 */
static int pagoda_link_bind(struct device *dev)
{
	struct pagoda_member *first = dev_get_drvdata(dev);
	struct pagoda_device *pgdev;
	struct pagoda_link *link;
	unsigned int i;
	int ret;

	link = devm_drm_dev_alloc(dev, &pagoda_drm_driver, struct pagoda_link, drm);
	if (IS_ERR(link))
		return PTR_ERR(link);
	ret = drmm_mutex_init(&link->drm, &link->bo_list_lock);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&link->bo_list);
	ret = drmm_mutex_init(&link->drm, &link->vm_list_lock);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&link->vm_list);

	ret = component_bind_all(dev, link);
	if (ret)
		return ret;
	for (i = 0; link->num_gpus > 1 && i < link->num_gpus; i++)
		snprintf(link->gpu[i]->tag, sizeof(link->gpu[i]->tag), "gpu%u: ", i);

	pgdev = link->gpu[0];
	ret = pagoda_display_init(pgdev);
	if (ret)
		goto err_unbind;

	pagoda_debugfs_init(link);
	ret = drm_dev_register(&link->drm, 0);
	if (ret)
		goto err_unbind;
	first->link = link;
	drm_fbdev_ttm_setup(&link->drm, 32);

	drm_info(&link->drm, "Pagoda revision %u.%u, %llu MiB VRAM at %pR, %u engines, %u contexts\n",
		 pgdev->params.revision >> 16, pgdev->params.revision & 0xffff,
		 pgdev->params.vram_size >> 20, pgdev->vram,
		 pgdev->params.num_engines, pgdev->params.num_contexts);
	if (link->num_gpus > 1)
		drm_info(&link->drm, "linked adapter %u: %u GPUs\n", first->link_id,
			 link->num_gpus);
	return 0;

err_unbind:
	pagoda_link_stop(link);
	component_unbind_all(dev, link);
	return ret;
}

static void pagoda_link_unbind(struct device *dev)
{
	struct pagoda_member *first = dev_get_drvdata(dev);
	struct pagoda_link *link = first->link;

	/* New ioctls fail with ENODEV from here on; open files stay valid. */
	drm_dev_unplug(&link->drm);
	drm_atomic_helper_shutdown(&link->drm);
	/* unplugged, the commit above did not reach the device */
	pagoda_display_off(link->gpu[0]);
	pagoda_link_stop(link);
	pagoda_bo_unmap_all_dma(link->gpu[0]);
	component_unbind_all(dev, link);
	first->link = NULL;
}

static const struct component_master_ops pagoda_link_ops = {
	.bind	= pagoda_link_bind,
	.unbind	= pagoda_link_unbind,
};

static struct pci_driver pagoda_pci_driver;

/* Match data: a member by its link's id and its physical adapter index. */
#define PAGODA_MEMBER_KEY(link_id, index) \
	((void *)((unsigned long)(link_id) * PAGODA_LINK_MAX_ADAPTERS + (index)))

static int pagoda_member_compare(struct device *dev, void *key)
{
	struct pagoda_member *member;

	if (dev->driver != &pagoda_pci_driver.driver)
		return 0;
	member = dev_get_drvdata(dev);
	return PAGODA_MEMBER_KEY(member->link_id, member->index) == key;
}

/*
 * The link is the members present when its first member probes: the
 * component framework binds it once all of them are there, and unbinds it
 * when any of them goes.
 */
static int pagoda_link_add(struct pagoda_member *first)
{
	struct component_match *match = NULL;
	unsigned long present = first->present;
	unsigned int i;

	for_each_set_bit(i, &present, PAGODA_LINK_MAX_ADAPTERS)
		component_match_add(&first->pdev->dev, &match, pagoda_member_compare,
				    PAGODA_MEMBER_KEY(first->link_id, i));
	return component_master_add_with_match(&first->pdev->dev, &pagoda_link_ops, match);
}

static int pagoda_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct pagoda_member *member;
	u32 chip_id;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	member = devm_kzalloc(dev, sizeof(*member), GFP_KERNEL);
	if (!member)
		return -ENOMEM;
	member->pdev = pdev;
	member->mmio = pcim_iomap_region(pdev, PAGODA_BAR_MMIO, DRIVER_NAME);
	if (IS_ERR(member->mmio))
		return dev_err_probe(dev, PTR_ERR(member->mmio), "cannot map BAR%d (registers)\n",
				     PAGODA_BAR_MMIO);

	/* Everything below trusts the register layout: make sure it is ours. */
	chip_id = readl(member->mmio + PAGODA_REG_ID);
	if (chip_id != PAGODA_ID) {
		dev_err(dev, "BAR%d reads ID 0x%08x, expected 0x%08x: not a Pagoda device\n",
			PAGODA_BAR_MMIO, chip_id, PAGODA_ID);
		return -ENODEV;
	}
	member->link_id = readl(member->mmio + PAGODA_REG_LINK_ID);
	member->index = readl(member->mmio + PAGODA_REG_LINK_INDEX);
	member->present = readl(member->mmio + PAGODA_REG_LINK_PRESENT) &
			  GENMASK(PAGODA_LINK_MAX_ADAPTERS - 1, 0);
	if (member->index >= PAGODA_LINK_MAX_ADAPTERS || !(member->present & BIT(member->index))) {
		dev_err(dev, "physical adapter index %u, present 0x%x: not a usable link\n",
			member->index, member->present);
		return -ENODEV;
	}
	pci_set_drvdata(pdev, member);

	ret = component_add(dev, &pagoda_gpu_ops);
	if (ret)
		return ret;
	/* the member with the lowest index present makes the link */
	member->first = member->index == __ffs(member->present);
	if (member->first) {
		ret = pagoda_link_add(member);
		if (ret) {
			component_del(dev, &pagoda_gpu_ops);
			return ret;
		}
	}
	return 0;
}

static void pagoda_remove(struct pci_dev *pdev)
{
	struct pagoda_member *member = pci_get_drvdata(pdev);

	/* Either unbinds the whole link: the others wait for this GPU again. */
	if (member->first)
		component_master_del(&pdev->dev, &pagoda_link_ops);
	component_del(&pdev->dev, &pagoda_gpu_ops);
}

static const struct pci_device_id pagoda_pci_ids[] = {
	{ PCI_DEVICE(PAGODA_PCI_VENDOR_ID, PAGODA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, pagoda_pci_ids);

static unsigned int hang_timeout_ms = 10000;
module_param(hang_timeout_ms, uint, 0444);
MODULE_PARM_DESC(hang_timeout_ms,
		 "How long a render job may run, and the paging engine make no progress, before it counts as hung (ms, at least 100; default 10000)");

/**
 * pagoda_hang_timeout - how long work may make no progress before it is hung
 *
 * Return: the hang_timeout_ms module parameter in jiffies, at least 100 ms.
 */
unsigned long pagoda_hang_timeout(void)
{
	return msecs_to_jiffies(max(hang_timeout_ms, 100u));
}

static struct pci_driver pagoda_pci_driver = {
	.name		= DRIVER_NAME,
	.id_table	= pagoda_pci_ids,
	.probe		= pagoda_probe,
	.remove		= pagoda_remove,
	.err_handler	= &pagoda_pci_err_handlers,
};

static int __init pagoda_init(void)
{
	int ret = pagoda_vm_module_init();

	if (ret)
		return ret;
	ret = pci_register_driver(&pagoda_pci_driver);
	if (ret)
		pagoda_vm_module_exit();
	return ret;
}

static void __exit pagoda_exit(void)
{
	pci_unregister_driver(&pagoda_pci_driver);
	pagoda_vm_module_exit();
}

module_init(pagoda_init);
module_exit(pagoda_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
