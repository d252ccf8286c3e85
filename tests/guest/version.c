// SPDX-License-Identifier: MIT
/*
 * drmGetVersion() on the render node names the pagoda driver and gives
 * its description and version.
 */
#include <xf86drm.h>

#include "pagoda_test.h"

int main(void)
{
	drmVersionPtr ver;
	char bdf[PT_NAME_MAX];
	int fd;

	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0)
		return pt_exit();

	ver = drmGetVersion(fd);
	if (pt_check(ver != NULL, "drmGetVersion: %s", ver ? "done" : strerror(errno))) {
		printf("driver %s %d.%d.%d (%s): %s\n", ver->name, ver->version_major,
		       ver->version_minor, ver->version_patchlevel, ver->date, ver->desc);
		pt_check(!strcmp(ver->name, "pagoda"), "driver name \"%s\" is \"pagoda\"",
			 ver->name);
		pt_check(ver->desc_len > 0, "driver has a description");
		pt_check(ver->version_major >= 1, "driver major version %d >= 1",
			 ver->version_major);
		drmFreeVersion(ver);
	}

	close(fd);
	return pt_exit();
}
