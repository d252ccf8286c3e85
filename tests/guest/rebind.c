// SPDX-License-Identifier: MIT
/*
 * The driver lets go of the device cleanly and takes it back: unbind it
 * through sysfs while a file is open with allocations in every segment
 * (VRAM, hidden VRAM through the host aperture, system memory, the
 * aperture) mapped by the CPU (the file then fails with ENODEV, the
 * mappings keep working on a dummy page, the node disappears, interrupts
 * are disabled and released), close it all, bind it again, then unload and
 * reload the module. The debug kernel's kmemleak scan after the last
 * program finds anything the driver did not free. Each time the render node comes back
 * as renderD128, which also shows that the previous DRM device was freed:
 * its minor would still be taken otherwise.
 *
 * While the device is unbound, one process reads its registers in bursts
 * (several loads in one straight run of code) on one CPU while another
 * turns the function's memory decoding off and on through its config
 * space on the other CPU, as a tool poking at an idle function would: each
 * toggle changes QEMU's memory map under the reader, whose CPU may still
 * hold translations of the old one. Every read returns the register or
 * what an undecoded address returns, and QEMU survives.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <libpagoda.h>

#include "pagoda_test.h"

#define NODE		"/dev/dri/renderD128"
#define CYCLES		2
#define TOGGLES		1500
#define RACE_MARK	0x0dec0de5u
#define BURST		8

static void check_bound(volatile uint32_t *mmio, const char *when)
{
	uint64_t value = 0;
	int fd, ret;

	if (!pt_check(pt_wait_path(NODE, 1), "%s: %s is back", when, NODE))
		return;
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "%s: open %s: %s", when, NODE, fd >= 0 ? "done" : strerror(errno)))
		return;
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(!ret && value == PAGODA_ID, "%s: GET_PARAM CHIP_ID = 0x%llx (%s)", when,
		 (unsigned long long)value, ret ? strerror(-ret) : "ok");
	pt_check((pt_reg(mmio, PAGODA_REG_INT_ENABLE) & ~PAGODA_INT_VBLANK) == PAGODA_INT_ALL,
		 "%s: interrupts enabled (INT_ENABLE 0x%x)", when,
		 pt_reg(mmio, PAGODA_REG_INT_ENABLE));
	close(fd);
}

static void check_unbound(const char *bdf, volatile uint32_t *mmio, const char *when)
{
	char path[PT_PATH_MAX];

	pt_check(pt_wait_path(NODE, 0), "%s: %s is gone", when, NODE);
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/driver", bdf);
	pt_check(pt_wait_path(path, 0), "%s: %s has no driver", when, bdf);
	pt_check(pt_reg(mmio, PAGODA_REG_INT_ENABLE) == 0,
		 "%s: interrupts disabled (INT_ENABLE 0x%x)", when,
		 pt_reg(mmio, PAGODA_REG_INT_ENABLE));
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/msi_irqs", bdf);
	pt_check(access(path, F_OK), "%s: MSI-X vectors released", when);
}

/* Allocations of every kind on @fd, mapped and written. */
static unsigned int make_allocations(int fd, struct pagoda_bo *bos)
{
	static const struct { uint32_t seg; uint32_t flags; } kinds[] = {
		{ DRM_PAGODA_SEGMENT_VRAM, 0 },
		{ DRM_PAGODA_SEGMENT_VRAM_HIDDEN, 0 },
		{ DRM_PAGODA_SEGMENT_SYSTEM, 0 },
		{ DRM_PAGODA_SEGMENT_SYSTEM, DRM_PAGODA_BO_PHYSICAL },
	};
	struct pagoda_dev dev = { .fd = fd };
	unsigned int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct pagoda_bo_desc desc = {
			.size = 1 << 20, .flags = kinds[i].flags,
			.segments = DRM_PAGODA_SEGMENT_MASK(kinds[i].seg),
			.preferred_segment = kinds[i].seg, .eviction_segment = kinds[i].seg,
		};

		if (pagoda_bo_create(&dev, &desc, &bos[n]) || pagoda_bo_map(&dev, &bos[n]))
			break;
		memset(bos[n].map, 0x5a, bos[n].size);
		n++;
	}
	pt_check(n == ARRAY_SIZE(kinds), "%u allocations mapped and written before unbind", n);
	return n;
}

/* Run on the CPUs of @mask (bit N: CPU N). */
static void pin_to_cpus(unsigned int mask)
{
	cpu_set_t set;
	int cpu;

	CPU_ZERO(&set);
	for (cpu = 0; cpu < 32; cpu++)
		if (mask & (1u << cpu))
			CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The child: PCI_COMMAND's memory decoding off and on, TOGGLES times. */
static int toggle_decoding(const char *bdf)
{
	char path[PT_PATH_MAX];
	uint16_t command;
	int fd, i;

	pin_to_cpus(1u << 1);
	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/config", bdf);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || pread(fd, &command, 2, 4) != 2)
		return 1;
	for (i = 0; i < TOGGLES; i++) {
		uint16_t off = command & ~0x2;	/* PCI_COMMAND_MEMORY */

		if (pwrite(fd, &off, 2, 4) != 2 || pwrite(fd, &command, 2, 4) != 2)
			return 1;
	}
	close(fd);
	return 0;
}

static int read_is_sane(uint32_t value)
{
	return value == RACE_MARK || value == 0 || value == ~0u;
}

/*
 * Registers read in bursts while the other CPU changes the memory map:
 * a burst is straight-line code, so QEMU runs it as one translated block
 * and the loads after a map change use translations made before it.
 */
static void race_decoding(const char *bdf)
{
	unsigned long long bursts = 0, odd = 0, marks = 0;
	volatile uint32_t *regs;
	uint32_t seen[BURST];
	int status = -1;
	pid_t child;

	regs = pt_map_bar0(bdf, 1);
	if (!pt_check(regs != NULL, "map BAR0 writable while unbound"))
		return;
	pt_wreg(regs, PAGODA_REG_SCRATCH, RACE_MARK);
	pin_to_cpus(1u << 0);
	child = fork();
	if (child == 0)
		_exit(toggle_decoding(bdf));
	while (waitpid(child, &status, WNOHANG) == 0) {
		unsigned int i;

		seen[0] = regs[PAGODA_REG_SCRATCH / 4];
		seen[1] = regs[PAGODA_REG_SCRATCH / 4];
		seen[2] = regs[PAGODA_REG_SCRATCH / 4];
		seen[3] = regs[PAGODA_REG_SCRATCH / 4];
		seen[4] = regs[PAGODA_REG_SCRATCH / 4];
		seen[5] = regs[PAGODA_REG_SCRATCH / 4];
		seen[6] = regs[PAGODA_REG_SCRATCH / 4];
		seen[7] = regs[PAGODA_REG_SCRATCH / 4];
		for (i = 0; i < BURST; i++) {
			odd += !read_is_sane(seen[i]);
			marks += seen[i] == RACE_MARK;
		}
		bursts++;
	}
	pin_to_cpus(~0u);
	pt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "memory decoding turned off and on %d times through config space", TOGGLES);
	pt_check(!odd && marks,
		 "%llu bursts of %d register reads across the toggles: %llu read the register, %llu neither it nor an undecoded address",
		 bursts, BURST, marks, odd);
	pt_check(pt_reg(regs, PAGODA_REG_SCRATCH) == RACE_MARK,
		 "decoding back on: the register reads 0x%x", pt_reg(regs, PAGODA_REG_SCRATCH));
	munmap((void *)regs, PAGODA_MMIO_SIZE);
}

static void unbind_bind(const char *bdf, volatile uint32_t *mmio)
{
	struct pagoda_bo bos[4];
	struct pagoda_dev dev;
	uint64_t value = 0;
	unsigned int n, i;
	int fd, ret;

	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (!pt_check(fd >= 0, "open %s before unbind", NODE))
		return;
	n = make_allocations(fd, bos);

	ret = pt_write_file(PT_DRIVER_SYSFS "/unbind", bdf);
	if (!pt_check(!ret, "unbind %s: %s", bdf, ret ? strerror(-ret) : "done")) {
		close(fd);
		return;
	}
	check_unbound(bdf, mmio, "after unbind");
	ret = pt_get_param(fd, DRM_PAGODA_PARAM_CHIP_ID, &value);
	pt_check(ret == -ENODEV, "GET_PARAM on a file opened before unbind: %s (want %s)",
		 ret ? strerror(-ret) : "succeeded", strerror(ENODEV));
	/* the mappings stay usable (a dummy page once unplugged) */
	for (i = 0; i < n; i++) {
		((volatile uint8_t *)bos[i].map)[bos[i].size - 1] = 1;
		(void)((volatile uint8_t *)bos[i].map)[0];
	}
	printf("the %u mappings were read and written after unbind\n", n);
	race_decoding(bdf);
	/* The last references to the unplugged DRM device go here. */
	dev.fd = fd;
	for (i = 0; i < n; i++)
		pagoda_bo_free(&dev, &bos[i]);
	close(fd);

	ret = pt_write_file(PT_DRIVER_SYSFS "/bind", bdf);
	if (pt_check(!ret, "bind %s: %s", bdf, ret ? strerror(-ret) : "done"))
		check_bound(mmio, "after bind");
}

static void unload_reload(const char *bdf, volatile uint32_t *mmio)
{
	char args[512];
	int fd, ret;

	ret = syscall(SYS_delete_module, "pagoda", O_NONBLOCK) ? -errno : 0;
	if (!pt_check(!ret, "rmmod pagoda: %s", ret ? strerror(-ret) : "done"))
		return;
	pt_check(access("/sys/module/pagoda", F_OK), "module gone from /sys/module");
	check_unbound(bdf, mmio, "after rmmod");

	fd = open(PT_MODULE_PATH, O_RDONLY | O_CLOEXEC);
	if (!pt_check(fd >= 0, "open %s", PT_MODULE_PATH))
		return;
	/* with the parameters the guest's init gave it */
	pt_cmdline_module_args(args, sizeof(args));
	ret = syscall(SYS_finit_module, fd, args, 0) ? -errno : 0;
	close(fd);
	if (pt_check(!ret, "insmod %s: %s", PT_MODULE_PATH, ret ? strerror(-ret) : "done"))
		check_bound(mmio, "after insmod");
}

int main(void)
{
	volatile uint32_t *mmio;
	char bdf[PT_NAME_MAX];
	int i;

	mmio = pt_find_mmio(bdf, sizeof(bdf));
	if (!mmio)
		return pt_exit();

	for (i = 0; i < CYCLES; i++) {
		printf("cycle %d of %d\n", i + 1, CYCLES);
		unbind_bind(bdf, mmio);
		unload_reload(bdf, mmio);
	}
	return pt_exit();
}
