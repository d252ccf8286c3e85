// SPDX-License-Identifier: MIT
/*
 * DRM_IOCTL_PAGODA_GET_PARAM rejects what it does not understand with the
 * errno user space sees: EINVAL for an unknown parameter or an adapter
 * beyond those of the logical adapter (NUM_ADAPTERS and above),
 * EFAULT for an argument pointer it cannot read or write back to.
 */
#include "pagoda_test.h"

static void expect_errno(int fd, void *arg, int want, const char *what)
{
	int ret = ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, arg);
	int err = ret ? errno : 0;

	pt_check(ret == -1 && err == want, "%s: %s (want %s)", what,
		 ret ? strerror(err) : "succeeded", strerror(want));
}

int main(void)
{
	struct drm_pagoda_get_param args;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t adapters = 0;
	char bdf[PT_NAME_MAX];
	void *ro, *gone;
	int fd, ret;

	fd = pt_open_render(bdf, sizeof(bdf));
	if (fd < 0)
		return pt_exit();

	args = (struct drm_pagoda_get_param){ .param = 0x100 };
	expect_errno(fd, &args, EINVAL, "param 0x100");
	args = (struct drm_pagoda_get_param){ .param = 0xffffffff };
	expect_errno(fd, &args, EINVAL, "param 0xffffffff");
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_NUM_ADAPTERS, &adapters);
	if (pt_check(!ret && adapters, "%llu adapters", (unsigned long long)adapters)) {
		args = (struct drm_pagoda_get_param){ .param = DRM_PAGODA_PARAM_CHIP_ID,
						       .adapter = adapters };
		expect_errno(fd, &args, EINVAL, "valid param of the adapter after the last");
	}
	args = (struct drm_pagoda_get_param){ .param = DRM_PAGODA_PARAM_CHIP_ID,
					       .adapter = 0x80000000 };
	expect_errno(fd, &args, EINVAL, "valid param of adapter 0x80000000");

	expect_errno(fd, NULL, EFAULT, "NULL argument");

	gone = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pt_check(gone != MAP_FAILED, "map a scratch page")) {
		munmap(gone, page);
		expect_errno(fd, gone, EFAULT, "unmapped argument");
	}

	/* The copy in succeeds and the copy back of the value fails. */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pt_check(ro != MAP_FAILED, "map a page to make read-only")) {
		((struct drm_pagoda_get_param *)ro)->param = DRM_PAGODA_PARAM_CHIP_ID;
		if (pt_check(!mprotect(ro, page, PROT_READ), "make it read-only"))
			expect_errno(fd, ro, EFAULT, "read-only argument");
		munmap(ro, page);
	}

	/* The same valid request still works after the failures. */
	args = (struct drm_pagoda_get_param){ .param = DRM_PAGODA_PARAM_CHIP_ID, .value = ~0ull };
	ret = ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args);
	if (pt_check(!ret, "valid request afterwards: %s", ret ? strerror(errno) : "done"))
		pt_check(args.value == PAGODA_ID, "it returns CHIP_ID 0x%llx",
			 (unsigned long long)args.value);

	close(fd);
	return pt_exit();
}
