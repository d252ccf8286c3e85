// SPDX-License-Identifier: MIT
/*
 * A linked adapter is one DRM device: the Pagoda PCI functions of one link
 * (scripts/run-guest.sh --link N, pagoda_guest.link=N on the kernel command
 * line; one GPU without it) show one render node, on the first of them;
 * GET_PARAM reports N adapters and describes each GPU of the link (its
 * LINK_INDEX, VRAM and hidden VRAM sizes read from its own registers
 * through sysfs), and refuses an adapter beyond them with EINVAL.
 * Unbinding any one member takes the whole logical adapter away (a file
 * opened before gets ENODEV) and binding it again brings it back whole.
 */
#include <libpagoda.h>

#include "pagoda_test.h"

struct member {
	char bdf[PT_NAME_MAX];
	volatile uint32_t *mmio;
	uint32_t index;
};

static int by_index(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	return (int)x->index - (int)y->index;
}

/* Every Pagoda PCI function, sorted by physical adapter index. */
static unsigned int find_members(struct member *members, unsigned int max)
{
	char path[PT_PATH_MAX];
	uint64_t vendor = 0, device = 0;
	unsigned int n = 0;
	struct dirent *de;
	DIR *dir;

	dir = opendir(PT_PCI_DEVICES);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/vendor", de->d_name);
		if (pt_read_u64(path, &vendor) || vendor != PAGODA_PCI_VENDOR_ID)
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/device", de->d_name);
		if (pt_read_u64(path, &device) || device != PAGODA_PCI_DEVICE_ID)
			continue;
		snprintf(members[n].bdf, sizeof(members[n].bdf), "%s", de->d_name);
		members[n].mmio = pt_map_mmio(de->d_name);
		if (!pt_check(members[n].mmio != NULL, "map BAR0 of %s", de->d_name))
			continue;
		members[n].index = pt_reg(members[n].mmio, PAGODA_REG_LINK_INDEX);
		n++;
	}
	closedir(dir);
	qsort(members, n, sizeof(*members), by_index);
	return n;
}

static int adapter_param(int fd, uint32_t adapter, uint32_t param, uint64_t *value)
{
	struct drm_pagoda_get_param args = { .param = param, .adapter = adapter };

	if (ioctl(fd, DRM_IOCTL_PAGODA_GET_PARAM, &args))
		return -errno;
	*value = args.value;
	return 0;
}

static uint64_t seg_size(volatile uint32_t *mmio, unsigned int id)
{
	return (uint64_t)pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_HI) << 32 |
	       pt_reg(mmio, PAGODA_REG_SEG(id) + PAGODA_SEG_SIZE_LO);
}

static void check_adapter(int fd, uint32_t adapter, const struct member *m)
{
	static const struct { uint32_t param; const char *name; } params[] = {
		{ DRM_PAGODA_PARAM_LINK_INDEX, "LINK_INDEX" },
		{ DRM_PAGODA_PARAM_VRAM_SIZE, "VRAM_SIZE" },
		{ DRM_PAGODA_PARAM_HIDDEN_VRAM_SIZE, "HIDDEN_VRAM_SIZE" },
		{ DRM_PAGODA_PARAM_NUM_CONTEXTS, "NUM_CONTEXTS" },
	};
	uint64_t want[] = {
		pt_reg(m->mmio, PAGODA_REG_LINK_INDEX),
		(uint64_t)pt_reg(m->mmio, PAGODA_REG_VRAM_SIZE_HI) << 32 |
			pt_reg(m->mmio, PAGODA_REG_VRAM_SIZE_LO),
		seg_size(m->mmio, PAGODA_SEG_VRAM_HIDDEN),
		pt_reg(m->mmio, PAGODA_REG_NUM_CONTEXTS),
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(params); i++) {
		uint64_t value = ~0ull;
		int ret = adapter_param(fd, adapter, params[i].param, &value);

		pt_check(!ret && value == want[i], "adapter %u (%s): %s = 0x%llx (its registers: 0x%llx)%s%s",
			 adapter, m->bdf, params[i].name, (unsigned long long)value,
			 (unsigned long long)want[i], ret ? ": " : "", ret ? strerror(-ret) : "");
	}
}

/* The members that have a render node: exactly the first, @node its path. */
static unsigned int render_nodes(const struct member *members, unsigned int n, char *node,
				 size_t len)
{
	char path[PT_PATH_MAX];
	unsigned int i, found = 0;

	for (i = 0; i < n; i++) {
		if (pt_render_node(members[i].bdf, path, sizeof(path)))
			continue;
		if (!found++)
			snprintf(node, len, "%s", path);
	}
	return found;
}

static void check_whole(const struct member *members, unsigned int n, const char *when)
{
	char node[PT_PATH_MAX] = "";
	uint64_t value = 0;
	unsigned int i;
	int fd, ret, tries;

	/* binding the link is asynchronous to the sysfs write of its last member */
	for (tries = 0; tries < 100 && !render_nodes(members, n, node, sizeof(node)); tries++)
		pt_sleep_ms(20);
	pt_check(render_nodes(members, n, node, sizeof(node)) == 1 &&
		 !pt_render_node(members[0].bdf, node, sizeof(node)),
		 "%s: one render node for the %u GPUs, on the first (%s)", when, n, node);
	if (!pt_check(pt_wait_path(node, 1), "%s: %s exists", when, node))
		return;
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "%s: open %s", when, node))
		return;
	ret = adapter_param(fd, 0, DRM_PAGODA_PARAM_NUM_ADAPTERS, &value);
	pt_check(!ret && value == n, "%s: NUM_ADAPTERS = %llu (want %u)", when,
		 (unsigned long long)value, n);
	for (i = 0; i < n; i++)
		check_adapter(fd, i, &members[i]);
	ret = adapter_param(fd, n, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -EINVAL, "%s: adapter %u (one past the last): %s (want EINVAL)", when, n,
		 ret ? strerror(-ret) : "succeeded");
	ret = adapter_param(fd, 0xffffffff, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -EINVAL, "%s: adapter 0xffffffff: %s (want EINVAL)", when,
		 ret ? strerror(-ret) : "succeeded");
	close(fd);
}

/* Unbinding member @m takes the logical adapter away; binding it brings it back. */
static void unbind_member(const struct member *members, unsigned int n, unsigned int m)
{
	char node[PT_PATH_MAX], when[64];
	struct pagoda_bo_desc desc = {
		.size = 1 << 20,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
		.eviction_segment = DRM_PAGODA_SEGMENT_VRAM,
	};
	struct pagoda_dev dev;
	struct pagoda_bo bo;
	uint64_t value;
	int ret;

	snprintf(when, sizeof(when), "member %u rebound", m);
	if (!pt_check(!pt_render_node(members[0].bdf, node, sizeof(node)), "render node before unbind"))
		return;
	dev.fd = open(node, O_RDWR | O_CLOEXEC);
	if (!pt_check(dev.fd >= 0, "open %s", node))
		return;
	ret = pagoda_bo_create(&dev, &desc, &bo);
	pt_check(!ret, "an allocation in VRAM before unbind: %s", ret ? strerror(-ret) : "done");

	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", members[m].bdf);
	pt_check(!ret, "unbind member %u (%s): %s", m, members[m].bdf,
		 ret ? strerror(-ret) : "done");
	pt_check(pt_wait_path(node, 0), "after unbinding member %u: %s is gone", m, node);
	ret = pt_get_param(dev.fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -ENODEV, "GET_PARAM on a file opened before: %s (want ENODEV)",
		 ret ? strerror(-ret) : "succeeded");
	pagoda_bo_free(&dev, &bo);
	close(dev.fd);

	ret = pt_write_file(PT_DRIVER_SYSFS "/bind", members[m].bdf);
	pt_check(!ret, "bind member %u again: %s", m, ret ? strerror(-ret) : "done");
	check_whole(members, n, when);
}

int main(void)
{
	unsigned int want = pt_cmdline_number("pagoda_guest.link", 1);
	struct member members[PAGODA_LINK_MAX_ADAPTERS + 1];
	unsigned int n, i;

	n = find_members(members, ARRAY_SIZE(members));
	if (!pt_check(n == want, "%u Pagoda PCI functions (want %u)", n, want))
		return pt_exit();
	for (i = 0; i < n; i++)
		pt_check(members[i].index == i &&
			 pt_reg(members[i].mmio, PAGODA_REG_LINK_ID) ==
			 pt_reg(members[0].mmio, PAGODA_REG_LINK_ID),
			 "%s: physical adapter %u of link %u", members[i].bdf, members[i].index,
			 pt_reg(members[i].mmio, PAGODA_REG_LINK_ID));

	check_whole(members, n, "at boot");
	if (n > 1) {
		unbind_member(members, n, n - 1);
		unbind_member(members, n, 0);
	}
	return pt_exit();
}
