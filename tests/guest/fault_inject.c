// SPDX-License-Identifier: MIT
/*
 * Allocation failures inside pagoda.ko unwind cleanly. Needs the debug
 * kernel's failslab and fail_page_alloc; on a kernel without them the
 * program reports itself skipped (exit status 77).
 *
 * Both injectors get a stack filter on the module's address range, so only
 * allocations made under the driver's own code fail:
 *  1. Probe sweep: bind the device with the Nth such allocation failing
 *     (/proc/thread-self/fail-nth), for N = 1, 2, ... until a bind makes
 *     fewer than N. A bind that fails must return its errno and leave the
 *     device unbound with no render node; a bind that survives the failure
 *     (a fallback) must leave a working device.
 *  2. The stress program under random failures of 10% of the driver's
 *     allocations, with its unbinds and resets: ENOMEM may reach user
 *     space, nothing else may go wrong.
 * Afterwards injection is off and the device is probed again without it
 * (what a probe lets fail quietly, a debugfs file, is back for the
 * programs that follow) and works. Leaks are
 * caught by the kmemleak scan that ends every debug-kernel run.
 */
#include <sys/wait.h>

#include "pagoda_test.h"

#define SKIP		77
#define MAX_SITES	1000
#define STRESS_SECONDS	"15"
/*
 * How deep below the driver's code an allocation may be to fail (frames
 * from the fault-injection hook): the driver's own allocations and those
 * the helpers it calls make directly. Deeper ones belong to the kernel's
 * core, whose failure paths are not the driver's and not all sound in 6.12:
 * with 32, ACPICA hits a use-after-free (pci_enable_device() evaluates
 * _PRT); with 8 or more, drm_minor_alloc() puts an ERR_PTR device when its
 * drm_sysfs_minor_alloc() fails inside drm_dev_init() (about 8 frames down,
 * more when the allocation refills a slab).
 */
#define STACK_DEPTH	"6"

static const char *const injectors[] = {
	"/sys/kernel/debug/failslab",
	"/sys/kernel/debug/fail_page_alloc",
};

static char bdf[PT_NAME_MAX];

static int set_attr(const char *injector, const char *attr, const char *value)
{
	char path[PT_PATH_MAX];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", injector, attr);
	ret = pt_write_file(path, value);
	if (ret)
		pt_fail("write %s to %s: %s", value, path, strerror(-ret));
	return ret;
}

/* The module's address range, from /proc/modules: size and base address. */
static int module_range(unsigned long long *start, unsigned long long *end)
{
	char line[512], name[64];
	unsigned long long size, base;
	FILE *f = fopen("/proc/modules", "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &base) == 3 &&
		    !strcmp(name, "pagoda")) {
			*start = base;
			*end = base + size;
			found = base != 0;
		}
	fclose(f);
	return found;
}

/* Aim both injectors at the module; @probability in percent (0: fail-nth only). */
static int aim_injectors(int probability)
{
	unsigned long long start, end;
	char value[32];
	size_t i;
	int ret = 0;

	if (!pt_check(module_range(&start, &end), "pagoda's address range from /proc/modules"))
		return -1;
	for (i = 0; i < ARRAY_SIZE(injectors); i++) {
		const char *inj = injectors[i];

		snprintf(value, sizeof(value), "%llu", start);
		ret |= set_attr(inj, "require-start", value);
		snprintf(value, sizeof(value), "%llu", end);
		ret |= set_attr(inj, "require-end", value);
		ret |= set_attr(inj, "stacktrace-depth", STACK_DEPTH);
		ret |= set_attr(inj, "ignore-gfp-wait", "N");
		ret |= set_attr(inj, "verbose", "1");
		ret |= set_attr(inj, "interval", "1");
		ret |= set_attr(inj, "times", "-1");
		snprintf(value, sizeof(value), "%d", probability);
		ret |= set_attr(inj, "probability", value);
	}
	ret |= set_attr(injectors[1], "ignore-gfp-highmem", "N");
	ret |= set_attr(injectors[1], "min-order", "0");
	return ret ? -1 : 0;
}

static void injectors_off(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(injectors); i++)
		set_attr(injectors[i], "probability", "0");
}

static int bound(void)
{
	char path[PT_PATH_MAX];

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/driver", bdf);
	return !access(path, F_OK);
}

/* The device is bound, its render node answers and interrupts are on. */
static int works(volatile uint32_t *mmio, const char *when)
{
	char node[PT_PATH_MAX];
	uint64_t value = 0;
	int fd, ret = -1;

	if (!pt_render_node(bdf, node, sizeof(node))) {
		fd = open(node, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
			close(fd);
		}
	}
	return pt_check(!ret && value == PAGODA_ID &&
			(pt_reg(mmio, PAGODA_REG_INT_ENABLE) & ~PAGODA_INT_VBLANK) == PAGODA_INT_ALL,
			"%s: the device works (GET_PARAM %s, INT_ENABLE 0x%x)", when,
			ret ? "failed" : "ok", pt_reg(mmio, PAGODA_REG_INT_ENABLE));
}

static int fail_nth(unsigned int n)
{
	char value[16];

	snprintf(value, sizeof(value), "%u", n);
	return pt_write_file("/proc/thread-self/fail-nth", value);
}

static unsigned long long fail_nth_left(void)
{
	uint64_t left = ~0ull;

	pt_read_u64("/proc/thread-self/fail-nth", &left);
	return left;
}

static void probe_sweep(volatile uint32_t *mmio)
{
	unsigned int n, failed = 0, survived = 0;
	char path[PT_PATH_MAX];
	int ret;

	if (bound() && pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf)) {
		pt_fail("unbind before the sweep");
		return;
	}
	for (n = 1; n <= MAX_SITES; n++) {
		unsigned long long left;

		if (fail_nth(n)) {
			pt_fail("write /proc/thread-self/fail-nth");
			return;
		}
		ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);
		left = fail_nth_left();
		fail_nth(0);
		if (left) {
			/* fewer than n allocations: nothing was injected */
			pt_check(!ret, "bind without an injected failure: %s",
				 ret ? strerror(-ret) : "done");
			break;
		}
		if (ret) {
			failed++;
			snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/drm", bdf);
			if (!pt_check(!bound() && access(path, F_OK),
				      "allocation %u failed: bind returned %s, device left unbound",
				      n, strerror(-ret)))
				return;
			continue;
		}
		survived++;
		if (!works(mmio, "allocation failed, bind survived"))
			return;
		if (pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf)) {
			pt_fail("unbind after allocation %u", n);
			return;
		}
	}
	printf("probe: %u allocations under pagoda's code; %u failures made bind fail, %u were survived\n",
	       n - 1, failed, survived);
	pt_check(n > 1 && n <= MAX_SITES, "the sweep found the probe's allocations and ended");
}

static void stress_under_failures(void)
{
	int status;
	pid_t pid;

	if (aim_injectors(10))
		return;
	pid = fork();
	if (!pid) {
		execl("/tests/stress", "stress", "-f", "-p", "4", "-t", STRESS_SECONDS, NULL);
		_exit(127);
	}
	status = -1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	injectors_off();
	pt_check(WIFEXITED(status) && !WEXITSTATUS(status),
		 "stress under 10%% allocation failures passed (status %d)", status);
}

int main(void)
{
	volatile uint32_t *mmio;

	if (access(injectors[0], F_OK) || access(injectors[1], F_OK)) {
		printf("skipped: this kernel has no failslab/fail_page_alloc (the debug kernel has)\n");
		return SKIP;
	}
	mmio = pt_find_mmio(bdf, sizeof(bdf));
	if (!mmio)
		return pt_exit();

	if (!aim_injectors(0))
		probe_sweep(mmio);
	fail_nth(0);
	stress_under_failures();

	injectors_off();
	/*
	 * The device as bound under injection may miss what the probe lets
	 * fail quietly (a debugfs file): the programs after this one get a
	 * device probed with injection off.
	 */
	if (bound()) {
		int ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf);

		pt_check(!ret, "unbind after injection: %s", ret ? strerror(-ret) : "done");
	}
	{
		int ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);

		pt_check(!ret, "bind with injection off: %s", ret ? strerror(-ret) : "done");
	}
	works(mmio, "injection off");
	return pt_exit();
}
