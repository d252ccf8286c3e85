// SPDX-License-Identifier: GPL-2.0-only
/*
 * DOC: Pagoda interrupts
 *
 * The device raises four interrupt sources, each a bit of
 * PAGODA_REG_INT_STATUS: one per engine (a ring entry retired), one for
 * the fault queue and the display's vertical blank. With MSI-X every
 * source has its own vector (PAGODA_MSIX_VECTOR_*); without it, one MSI or
 * INTx vector serves all of them. Every vector gets the same handler, told
 * by struct pagoda_irq which status bits are its own.
 *
 * The engine and fault sources are enabled for as long as the handlers
 * are in place; the vertical blank only while DRM wants vblanks
 * (pagoda_irq_set_sources()).
 *
 * Status bits are write-1-to-clear. The fault bit stays set while the
 * fault queue holds records, so the handler drains the queue before it
 * acks.
 */

#include <linux/interrupt.h>
#include <linux/pci.h>

#include <drm/drm_print.h>

#include "pagoda_drv.h"
#include "pagoda_vm.h"

struct pagoda_irq_source {
	const char *name;
	u32 sources;
};

/* Sources enabled whenever the handlers are in place. */
#define PAGODA_INT_ALWAYS	PAGODA_INT_ALL
#define PAGODA_INT_ENGINES	(PAGODA_INT_ENGINE(PAGODA_ENGINE_PAGING) | \
				 PAGODA_INT_ENGINE(PAGODA_ENGINE_RENDER))
/* Every source the driver handles. */
#define PAGODA_INT_HANDLED	(PAGODA_INT_ALL | PAGODA_INT_VBLANK)

static_assert(PAGODA_MSIX_VECTORS == 2 + PAGODA_NUM_ENGINES);

static const struct pagoda_irq_source pagoda_msix_sources[PAGODA_MSIX_VECTORS] = {
	[PAGODA_MSIX_VECTOR_FAULT] = {
		"pagoda-fault", PAGODA_INT_FAULT
	},
	[PAGODA_MSIX_VECTOR_ENGINE(PAGODA_ENGINE_PAGING)] = {
		"pagoda-paging", PAGODA_INT_ENGINE(PAGODA_ENGINE_PAGING)
	},
	[PAGODA_MSIX_VECTOR_ENGINE(PAGODA_ENGINE_RENDER)] = {
		"pagoda-render", PAGODA_INT_ENGINE(PAGODA_ENGINE_RENDER)
	},
	[PAGODA_MSIX_VECTOR_VBLANK] = {
		"pagoda-vblank", PAGODA_INT_VBLANK
	},
};

static const struct pagoda_irq_source pagoda_single_source = {
	"pagoda", PAGODA_INT_HANDLED
};

/* Keep @fault in the device's log of recent records; fault lock held. */
static void pagoda_fault_log(struct pagoda_device *pgdev, u32 context,
			     const struct pagoda_fault *fault)
{
	struct pagoda_fault_entry *entry = &pgdev->fault_log[pgdev->fault_count % PAGODA_FAULT_LOG];

	entry->fault = *fault;
	entry->context = context;
	pgdev->fault_count++;
}

/* Read the oldest fault record and hand it to whom it concerns, then pop it. */
static void pagoda_fault_handle_one(struct pagoda_device *pgdev)
{
	struct pagoda_fault fault;
	u32 context, flags;
	u64 fence;

	context = pagoda_read(pgdev, PAGODA_REG_FAULT_CONTEXT);
	fault.engine = pagoda_read(pgdev, PAGODA_REG_FAULT_ENGINE);
	fault.va = (u64)pagoda_read(pgdev, PAGODA_REG_FAULT_VA_HI) << 32 |
		   pagoda_read(pgdev, PAGODA_REG_FAULT_VA_LO);
	fault.level = pagoda_read(pgdev, PAGODA_REG_FAULT_LEVEL);
	fault.access = pagoda_read(pgdev, PAGODA_REG_FAULT_ACCESS);
	fault.code = pagoda_read(pgdev, PAGODA_REG_FAULT_CODE);
	fence = (u64)pagoda_read(pgdev, PAGODA_REG_FAULT_FENCE_HI) << 32 |
		pagoda_read(pgdev, PAGODA_REG_FAULT_FENCE_LO);
	flags = pagoda_read(pgdev, PAGODA_REG_FAULT_FLAGS);
	/* a user's fault is the user's business: it does not crowd out the driver's */
	if (context == PAGODA_KERNEL_CONTEXT)
		pagoda_gpu_err_ratelimited(pgdev,
					   "GPU fault: code %u context %u engine %u va 0x%llx access %u level %u flags 0x%x\n",
					   fault.code, context, fault.engine, fault.va,
					   fault.access, fault.level, flags);
	else
		dev_info_ratelimited(&pgdev->pdev->dev,
				     "GPU fault: code %u context %u engine %u va 0x%llx access %u level %u flags 0x%x\n",
				     fault.code, context, fault.engine, fault.va, fault.access,
				     fault.level, flags);
	pagoda_fault_log(pgdev, context, &fault);
	pagoda_write(pgdev, PAGODA_REG_FAULT_POP, 1);
	if (fault.engine >= PAGODA_NUM_ENGINES || context >= pgdev->params.num_contexts)
		return;
	if (context == PAGODA_KERNEL_CONTEXT)
		pagoda_engine_fault(&pgdev->engine[fault.engine], context);
	else
		pagoda_sched_fault(pgdev, context, fence, &fault);
}

/*
 * Handle every queued fault record. Called by the fault vector, and by the
 * engine vectors before they signal jobs: the device queues a record before
 * it retires the faulting entry, so a job found incomplete has its record
 * handled first.
 */
static void pagoda_fault_drain(struct pagoda_device *pgdev)
{
	unsigned int budget = 2 * PAGODA_FAULT_QUEUE_DEPTH;
	unsigned long flags;
	u32 lost;

	spin_lock_irqsave(&pgdev->fault_lock, flags);
	/*
	 * Drain until empty: the fault vector only fires again once the queue
	 * has been empty, so a record left behind would never be reported.
	 * The budget keeps a misbehaving device from holding the CPU here.
	 */
	while (pagoda_read(pgdev, PAGODA_REG_FAULT_COUNT)) {
		if (!budget--) {
			pagoda_gpu_err_ratelimited(pgdev, "fault queue does not drain\n");
			break;
		}
		pagoda_fault_handle_one(pgdev);
	}
	lost = pagoda_read(pgdev, PAGODA_REG_FAULT_LOST);
	if (lost != pgdev->faults_lost) {
		/* user jobs can fault faster than the queue drains: not an error of ours */
		dev_info_ratelimited(&pgdev->pdev->dev, "%u fault records lost\n",
				     lost - pgdev->faults_lost);
		pgdev->faults_lost = lost;
		/* the kernel context too: its jobs run again, the lost one failed */
		pagoda_engine_fault(&pgdev->engine[PAGODA_ENGINE_PAGING], PAGODA_KERNEL_CONTEXT);
		pagoda_sched_faults_lost(pgdev);
	}
	spin_unlock_irqrestore(&pgdev->fault_lock, flags);
}

static irqreturn_t pagoda_irq_handler(int irq, void *arg)
{
	struct pagoda_irq *vec = arg;
	struct pagoda_device *pgdev = vec->pgdev;
	u64 retired[PAGODA_NUM_ENGINES];
	bool incomplete = false;
	unsigned int e;
	u32 status;

	/*
	 * An engine's own MSI-X vector says what fired: the hot path of job
	 * completion touches one register (the acknowledgment).
	 */
	if (vec->own_vector) {
		status = vec->sources;
	} else {
		status = pagoda_read(pgdev, PAGODA_REG_INT_STATUS);
		/*
		 * All ones: the function does not decode its BARs (a reset in
		 * progress, or gone). A shared INTx line may still call us then.
		 */
		if (status == ~0u)
			return IRQ_NONE;
		status &= vec->sources;
		/* Another vector's source, or another device on a shared INTx line. */
		if (!status)
			return IRQ_NONE;
	}

	/*
	 * Engine bits are acked before the fences are read, so that an entry
	 * retiring after the read raises a new interrupt. The fault bit stays
	 * set while records remain: drain, then ack.
	 */
	pagoda_write(pgdev, PAGODA_REG_INT_STATUS, status & ~PAGODA_INT_FAULT);
	if (status & PAGODA_INT_VBLANK)
		pagoda_display_vblank(pgdev);
	/*
	 * The fences (as the device wrote them to memory before raising the
	 * interrupt) are read before the drain: an entry that retires after
	 * the drain may have faulted after it, and waits for the next
	 * interrupt, by which its record is handled. The queue is drained
	 * only when a job retired without completing: the records of the
	 * entries retired up to the fences are queued already, and a job
	 * that completed has none.
	 */
	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		if (status & PAGODA_INT_ENGINE(e)) {
			retired[e] = pagoda_engine_written_fence(&pgdev->engine[e]);
			incomplete |= pagoda_engine_incomplete_upto(&pgdev->engine[e],
								   retired[e]);
		}
	if (incomplete)
		pagoda_fault_drain(pgdev);
	for (e = 0; e < PAGODA_NUM_ENGINES; e++)
		if (status & PAGODA_INT_ENGINE(e)) {
			pagoda_engine_retire_upto(&pgdev->engine[e], retired[e]);
			/*
			 * A job that completed after the read, behind one that
			 * did not, may have had its interrupt dropped
			 * (DOORBELL_POLL) and its submitter's reap stopped at
			 * the one just retired.
			 */
			if (incomplete)
				pagoda_engine_reap(&pgdev->engine[e]);
		}
	if (status & PAGODA_INT_FAULT) {
		pagoda_fault_drain(pgdev);
		pagoda_write(pgdev, PAGODA_REG_INT_STATUS, PAGODA_INT_FAULT);
	}
	return IRQ_HANDLED;
}

/**
 * pagoda_irq_init - allocate interrupt vectors and enable all sources
 * @pgdev: device with registers mapped and bus mastering on
 *
 * Prefers MSI-X with one vector per source and falls back to a single MSI
 * or INTx vector.
 *
 * Return: 0 or a negative errno; on error nothing is left allocated.
 */
int pagoda_irq_init(struct pagoda_device *pgdev)
{
	struct pci_dev *pdev = pgdev->pdev;
	const struct pagoda_irq_source *map;
	unsigned long flags = 0;
	int nvec, i, ret;

	/* Nothing left over from an earlier binding may fire into the new handlers. */
	pgdev->int_enable = 0;
	pagoda_write(pgdev, PAGODA_REG_INT_ENABLE, 0);
	pagoda_write(pgdev, PAGODA_REG_INT_STATUS, PAGODA_INT_HANDLED);

	nvec = pci_alloc_irq_vectors(pdev, PAGODA_MSIX_VECTORS, PAGODA_MSIX_VECTORS,
				     PCI_IRQ_MSIX);
	if (nvec > 0) {
		map = pagoda_msix_sources;
	} else {
		nvec = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
		if (nvec < 0) {
			pagoda_gpu_err(pgdev, "no usable interrupt (MSI-X, MSI or INTx): %d\n",
				       nvec);
			return nvec;
		}
		map = &pagoda_single_source;
		if (!pdev->msi_enabled)
			flags = IRQF_SHARED;
		pagoda_gpu_info(pgdev, "MSI-X unavailable, one %s vector serves all sources\n",
				pdev->msi_enabled ? "MSI" : "INTx");
	}

	for (i = 0; i < nvec; i++) {
		struct pagoda_irq *vec = &pgdev->irqs[i];

		vec->pgdev = pgdev;
		vec->sources = map[i].sources;
		vec->own_vector = map == pagoda_msix_sources &&
				  (vec->sources & PAGODA_INT_ENGINES) == vec->sources;
		vec->irq = pci_irq_vector(pdev, i);
		ret = request_irq(vec->irq, pagoda_irq_handler, flags, map[i].name, vec);
		if (ret) {
			pagoda_gpu_err(pgdev, "cannot request IRQ %d (%s): %d\n",
				       vec->irq, map[i].name, ret);
			goto err_free_irqs;
		}
	}
	pgdev->num_irqs = nvec;

	pagoda_irq_enable(pgdev);
	return 0;

err_free_irqs:
	while (i--)
		free_irq(pgdev->irqs[i].irq, &pgdev->irqs[i]);
	pci_free_irq_vectors(pdev);
	return ret;
}

/**
 * pagoda_irq_enable - acknowledge stale causes and enable the sources
 * @pgdev: device whose vectors are requested
 *
 * Called once the handlers are in place: at probe, and after a reset that
 * brought PAGODA_REG_INT_ENABLE back to its power-on value of 0. The
 * engine and fault sources are enabled, the vertical blank again if DRM
 * had it on.
 */
void pagoda_irq_enable(struct pagoda_device *pgdev)
{
	unsigned long flags;

	spin_lock_irqsave(&pgdev->int_lock, flags);
	pgdev->int_enable |= PAGODA_INT_ALWAYS;
	pagoda_write(pgdev, PAGODA_REG_INT_STATUS, PAGODA_INT_HANDLED);
	pagoda_write(pgdev, PAGODA_REG_INT_ENABLE, pgdev->int_enable);
	spin_unlock_irqrestore(&pgdev->int_lock, flags);
}

/**
 * pagoda_irq_set_sources - enable or disable interrupt sources
 * @pgdev: device whose vectors are requested
 * @sources: PAGODA_INT_* bits
 * @on: enable them (their stale causes acknowledged first) or disable them
 */
void pagoda_irq_set_sources(struct pagoda_device *pgdev, u32 sources, bool on)
{
	unsigned long flags;

	spin_lock_irqsave(&pgdev->int_lock, flags);
	if (on) {
		pagoda_write(pgdev, PAGODA_REG_INT_STATUS, sources & ~pgdev->int_enable);
		pgdev->int_enable |= sources;
	} else {
		pgdev->int_enable &= ~sources;
	}
	pagoda_write(pgdev, PAGODA_REG_INT_ENABLE, pgdev->int_enable);
	spin_unlock_irqrestore(&pgdev->int_lock, flags);
}

/**
 * pagoda_irq_disable - disable every source and wait for running handlers
 * @pgdev: device whose vectors are requested
 *
 * On return no handler of the device runs, and none is started by the
 * device until pagoda_irq_enable(). The vectors stay requested; which
 * optional sources were on is remembered for pagoda_irq_enable().
 */
void pagoda_irq_disable(struct pagoda_device *pgdev)
{
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&pgdev->int_lock, flags);
	pagoda_write(pgdev, PAGODA_REG_INT_ENABLE, 0);
	spin_unlock_irqrestore(&pgdev->int_lock, flags);
	for (i = 0; i < pgdev->num_irqs; i++)
		synchronize_irq(pgdev->irqs[i].irq);
}

/**
 * pagoda_irq_fini - disable all sources and release the vectors
 * @pgdev: device set up by pagoda_irq_init()
 *
 * On return no handler runs or will run.
 */
void pagoda_irq_fini(struct pagoda_device *pgdev)
{
	struct pci_dev *pdev = pgdev->pdev;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&pgdev->int_lock, flags);
	pgdev->int_enable = 0;
	pagoda_write(pgdev, PAGODA_REG_INT_ENABLE, 0);
	spin_unlock_irqrestore(&pgdev->int_lock, flags);
	/* free_irq() waits for a handler still running on another CPU. */
	for (i = 0; i < pgdev->num_irqs; i++)
		free_irq(pgdev->irqs[i].irq, &pgdev->irqs[i]);
	pgdev->num_irqs = 0;
	pci_free_irq_vectors(pdev);
}
