// SPDX-License-Identifier: MIT
/*
 * The driver set up its interrupts: with MSI-X, PAGODA_MSIX_VECTORS vectors
 * named after their sources in /proc/interrupts and listed in the device's
 * sysfs msi_irqs; with pci=nomsi on the kernel command line, one INTx line.
 * Either way all sources are enabled and none is pending.
 */
#include "pagoda_test.h"

static const char *const msix_names[] = {
	"pagoda-fault", "pagoda-paging", "pagoda-render", "pagoda-vblank",
};

/* Number of /proc/interrupts lines whose action name is exactly @name. */
static int irq_lines(const char *name)
{
	long long count;

	return pt_irq_lines(name, &count);
}

static int msi_irqs(const char *bdf)
{
	char path[PT_PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/msi_irqs", bdf);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

int main(void)
{
	volatile uint32_t *mmio;
	char bdf[PT_NAME_MAX];
	unsigned int i;
	int n;

	if (!pt_check(!pt_find_pci(bdf, sizeof(bdf)), "Pagoda PCI device present"))
		return pt_exit();

	_Static_assert(ARRAY_SIZE(msix_names) == PAGODA_MSIX_VECTORS,
		       "one name per MSI-X vector");
	if (pt_cmdline_has("pci=nomsi")) {
		n = msi_irqs(bdf);
		pt_check(n == 0, "pci=nomsi: %d MSI/MSI-X vectors (want 0)", n);
		n = irq_lines("pagoda");
		pt_check(n == 1, "pci=nomsi: %d \"pagoda\" line(s) in /proc/interrupts (want 1)",
			 n);
	} else {
		n = msi_irqs(bdf);
		pt_check(n == PAGODA_MSIX_VECTORS, "%d MSI-X vectors in msi_irqs (want %d)",
			 n, PAGODA_MSIX_VECTORS);
		for (i = 0; i < PAGODA_MSIX_VECTORS; i++) {
			n = irq_lines(msix_names[i]);
			pt_check(n == 1, "%d \"%s\" line(s) in /proc/interrupts (want 1)",
				 n, msix_names[i]);
		}
	}

	mmio = pt_map_mmio(bdf);
	if (!pt_check(mmio != NULL, "map BAR0 of %s through sysfs: %s", bdf,
		      mmio ? "done" : strerror(errno)))
		return pt_exit();
	pt_check((pt_reg(mmio, PAGODA_REG_INT_ENABLE) & ~PAGODA_INT_VBLANK) == PAGODA_INT_ALL,
		 "INT_ENABLE = 0x%x (want 0x%x)", pt_reg(mmio, PAGODA_REG_INT_ENABLE),
		 PAGODA_INT_ALL);
	/* a vertical blank (60 a second) may be raised and not yet handled */
	pt_check((pt_reg(mmio, PAGODA_REG_INT_STATUS) & ~PAGODA_INT_VBLANK) == 0,
		 "INT_STATUS = 0x%x (nothing pending but maybe a vertical blank)",
		 pt_reg(mmio, PAGODA_REG_INT_STATUS));

	return pt_exit();
}
