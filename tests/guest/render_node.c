// SPDX-License-Identifier: MIT
/*
 * The driver registers the DRM render node /dev/dri/renderD128 for the
 * Pagoda device: it exists as a DRM character device, belongs to the
 * Pagoda PCI function, and opens.
 */
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "pagoda_test.h"

#define NODE		"/dev/dri/renderD128"
#define DRM_MAJOR	226

int main(void)
{
	char bdf[PT_NAME_MAX], path[PT_PATH_MAX], want[PATH_MAX], got[PATH_MAX];
	struct stat st;
	int fd;

	if (pt_check(!stat(NODE, &st), "%s exists", NODE)) {
		pt_check(S_ISCHR(st.st_mode), "%s is a character device", NODE);
		pt_check(major(st.st_rdev) == DRM_MAJOR && minor(st.st_rdev) == 128,
			 "%s is DRM device %u:%u (want %d:128)", NODE,
			 major(st.st_rdev), minor(st.st_rdev), DRM_MAJOR);
	}

	if (pt_check(!pt_find_pci(bdf, sizeof(bdf)), "Pagoda PCI device present")) {
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s", bdf);
		if (!realpath(path, want))
			pt_fail("realpath %s: %s", bdf, strerror(errno));
		else if (!realpath("/sys/class/drm/renderD128/device", got))
			pt_fail("renderD128 has no parent device: %s", strerror(errno));
		else
			pt_check(!strcmp(want, got), "renderD128 belongs to %s (%s)", bdf, got);
	}

	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (pt_check(fd >= 0, "open %s read-write: %s", NODE,
		     fd >= 0 ? "done" : strerror(errno)))
		close(fd);

	return pt_exit();
}
