/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the guest test programs: check reporting, finding the
 * Pagoda PCI device and its render node through sysfs, reading sysfs files,
 * mapping BAR0 through sysfs to read registers without the driver, and
 * calling DRM_IOCTL_PAGODA_GET_PARAM.
 *
 * Every program prints one line per check ("ok: ..." or "FAIL: ...") and
 * ends with pt_exit(), which exits 0 only when no check failed.
 */
#ifndef PAGODA_TEST_H
#define PAGODA_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpagoda.h>
#include <pagoda/pagoda_hw.h>
#include <uapi/drm/pagoda_drm.h>

/* Where scripts/build-guest.sh puts the driver module in the guest image. */
#define PT_MODULE_PATH		"/modules/pagoda.ko"
#define PT_PCI_DEVICES		"/sys/bus/pci/devices"
#define PT_DRIVER_SYSFS		"/sys/bus/pci/drivers/pagoda"
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
/* Sizes that hold any sysfs entry name, and a path with one or two of them. */
#define PT_NAME_MAX		256
#define PT_PATH_MAX		1024

static int pt_failures;

static inline void pt_vreport(int pass, const char *fmt, va_list ap)
{
	fputs(pass ? "ok: " : "FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	if (!pass)
		pt_failures++;
}

/* Report one check; returns @pass so callers can stop on a failed premise. */
__attribute__((format(printf, 2, 3)))
static inline int pt_check(int pass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pt_vreport(pass, fmt, ap);
	va_end(ap);
	return pass;
}

__attribute__((format(printf, 1, 2)))
static inline void pt_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pt_vreport(0, fmt, ap);
	va_end(ap);
}

static inline int pt_exit(void)
{
	printf("%s: %d check(s) failed\n", pt_failures ? "FAILED" : "PASSED", pt_failures);
	return pt_failures ? 1 : 0;
}

/* Read a sysfs file holding one number (decimal or 0x-prefixed hex). */
static inline int pt_read_u64(const char *path, uint64_t *value)
{
	char buf[64];
	char *end;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	errno = 0;
	*value = strtoull(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/*
 * Find the Pagoda PCI function by the IDs sysfs reports, independent of the
 * driver: of the GPUs of a link, the one with the DRM device (its first),
 * else the first found. Fills @bdf (e.g. "0000:00:03.0"); returns 0 or
 * -ENODEV.
 */
static inline int pt_find_pci(char *bdf, size_t len)
{
	char path[PT_PATH_MAX];
	struct dirent *de;
	uint64_t vendor = 0, device = 0;
	DIR *dir;
	int ret = -ENODEV;

	dir = opendir(PT_PCI_DEVICES);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/vendor", de->d_name);
		if (pt_read_u64(path, &vendor))
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/device", de->d_name);
		if (pt_read_u64(path, &device))
			continue;
		if (vendor != PAGODA_PCI_VENDOR_ID || device != PAGODA_PCI_DEVICE_ID)
			continue;
		snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/drm", de->d_name);
		if (ret || !access(path, F_OK))
			snprintf(bdf, len, "%s", de->d_name);
		ret = 0;
		if (!access(path, F_OK))
			break;
	}
	closedir(dir);
	return ret;
}

/*
 * Path of the render node the driver registered for PCI function @bdf
 * ("/dev/dri/renderD128"), from the device's drm/ directory in sysfs.
 * Returns 0 or -ENOENT when the function has no render node.
 */
static inline int pt_render_node(const char *bdf, char *node, size_t len)
{
	char path[PT_PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/drm", bdf);
	dir = opendir(path);
	if (!dir)
		return -ENOENT;
	while ((de = readdir(dir))) {
		if (!strncmp(de->d_name, "renderD", 7)) {
			snprintf(node, len, "/dev/dri/%s", de->d_name);
			ret = 0;
			break;
		}
	}
	closedir(dir);
	return ret;
}

/* Find the device and open its render node; fails the test when impossible. */
static inline int pt_open_render(char *bdf, size_t bdf_len)
{
	char node[PT_PATH_MAX];
	int fd;

	if (!pt_check(!pt_find_pci(bdf, bdf_len), "Pagoda PCI device present"))
		return -1;
	if (!pt_check(!pt_render_node(bdf, node, sizeof(node)),
		      "%s has a render node", bdf))
		return -1;
	fd = open(node, O_RDWR | O_CLOEXEC);
	pt_check(fd >= 0, "open %s: %s", node, fd >= 0 ? "done" : strerror(errno));
	return fd;
}

/* Returns 0 or the negative errno the ioctl failed with. */
static inline int pt_get_param(int fd, uint32_t param, uint64_t *value)
{
	struct pagoda_dev dev = { .fd = fd };

	return pagoda_query(&dev, param, value);
}

/*
 * Physical start and size of BAR @bar, from the sysfs resource file: one
 * "start end flags" line per resource. Returns 0 if the BAR is not there.
 */
static inline uint64_t pt_bar_range(const char *bdf, int bar, uint64_t *start)
{
	unsigned long long first, last, flags;
	char path[PT_PATH_MAX];
	uint64_t size = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/resource", bdf);
	f = fopen(path, "r");
	if (!f)
		return 0;
	for (i = 0; i <= bar; i++) {
		if (fscanf(f, "%llx %llx %llx", &first, &last, &flags) != 3)
			break;
		if (i == bar && last > first) {
			size = last - first + 1;
			*start = first;
		}
	}
	fclose(f);
	return size;
}

static inline uint64_t pt_bar_size(const char *bdf, int bar)
{
	uint64_t start;

	return pt_bar_range(bdf, bar, &start);
}

/*
 * Map BAR0 through sysfs, to reach registers by a route that does not go
 * through the driver. Needs iomem=relaxed on the kernel command line while
 * the driver owns the BAR (scripts/run-guest.sh passes it). Writable only
 * for tests that make the device raise an interrupt behind the driver's
 * back, on parts the driver does not use yet.
 */
static inline volatile uint32_t *pt_map_bar0(const char *bdf, int writable)
{
	char path[PT_PATH_MAX];
	void *map;
	int fd;

	snprintf(path, sizeof(path), PT_PCI_DEVICES "/%s/resource%d", bdf, PAGODA_BAR_MMIO);
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	map = mmap(NULL, PAGODA_MMIO_SIZE, PROT_READ | (writable ? PROT_WRITE : 0),
		   MAP_SHARED, fd, 0);
	close(fd);
	return map == MAP_FAILED ? NULL : map;
}

static inline volatile uint32_t *pt_map_mmio(const char *bdf)
{
	return pt_map_bar0(bdf, 0);
}

/*
 * Find the device (pt_find_pci(), @bdf) and map its registers read-only;
 * fails the test and returns NULL when either cannot be done.
 */
static inline volatile uint32_t *pt_find_mmio(char *bdf, size_t len)
{
	volatile uint32_t *mmio;

	if (!pt_check(!pt_find_pci(bdf, len), "Pagoda PCI device present"))
		return NULL;
	mmio = pt_map_mmio(bdf);
	pt_check(mmio != NULL, "map BAR0 of %s through sysfs: %s", bdf,
		 mmio ? "done" : strerror(errno));
	return mmio;
}

static inline uint32_t pt_reg(volatile uint32_t *mmio, uint32_t reg)
{
	return mmio[reg / 4];
}

static inline void pt_wreg(volatile uint32_t *mmio, uint32_t reg, uint32_t val)
{
	mmio[reg / 4] = val;
}

/*
 * xorshift64*: small, and the same sequence on every machine, so that a
 * printed seed replays a run. @state must not be 0.
 */
static inline uint64_t pt_rng_next(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

/* Write @text to the (sysfs) file @path; returns 0 or a negative errno. */
static inline int pt_write_file(const char *path, const char *text)
{
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static inline void pt_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait up to two seconds for @path to exist (@want 1) or to be gone (0). */
static inline int pt_wait_path(const char *path, int want)
{
	struct stat st;
	int i;

	for (i = 0; i < 200; i++) {
		int exists = !stat(path, &st);

		if (exists == want)
			return 1;
		pt_sleep_ms(10);
	}
	return 0;
}

static inline int pt_cmdline_has(const char *word)
{
	char cmdline[4096];
	int found = 0;
	FILE *f;

	f = fopen("/proc/cmdline", "r");
	if (f) {
		found = fgets(cmdline, sizeof(cmdline), f) && strstr(cmdline, word);
		fclose(f);
	}
	return found;
}

/*
 * The value of "@key=value" on the kernel command line, as a number, or
 * @fallback when the key is absent. Lets a run pass parameters to guest
 * programs (scripts/run-guest.sh --append).
 */
static inline unsigned long long pt_cmdline_number(const char *key,
						   unsigned long long fallback)
{
	char cmdline[4096], *p;
	size_t len = strlen(key);
	FILE *f;

	f = fopen("/proc/cmdline", "r");
	if (!f)
		return fallback;
	if (!fgets(cmdline, sizeof(cmdline), f))
		cmdline[0] = 0;
	fclose(f);
	for (p = strtok(cmdline, " \n"); p; p = strtok(NULL, " \n"))
		if (!strncmp(p, key, len) && p[len] == '=')
			return strtoull(p + len + 1, NULL, 0);
	return fallback;
}

/*
 * The module parameters the kernel command line gives pagoda.ko
 * ("pagoda.NAME=VALUE", which the guest's init passes to insmod), as
 * finit_module() takes them: "NAME=VALUE ..." in @args.
 */
static inline void pt_cmdline_module_args(char *args, size_t len)
{
	char cmdline[4096], *p;
	size_t used = 0;
	FILE *f;

	args[0] = 0;
	f = fopen("/proc/cmdline", "r");
	if (!f)
		return;
	if (!fgets(cmdline, sizeof(cmdline), f))
		cmdline[0] = 0;
	fclose(f);
	for (p = strtok(cmdline, " \n"); p; p = strtok(NULL, " \n"))
		if (!strncmp(p, "pagoda.", 7) && used < len)
			used += snprintf(args + used, len - used, "%s%s", used ? " " : "", p + 7);
}

/*
 * The kernel log (with each line's "<level>" prefix), in a buffer to
 * free(); NULL when it cannot be read.
 */
static inline char *pt_kernel_log(void)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf;

	if (len <= 0)
		return NULL;
	buf = calloc(1, len + 1);
	if (buf && klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len) < 0) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/*
 * The /proc/interrupts lines whose action name is exactly @name: how many
 * there are, and the interrupts counted on them over all CPUs.
 */
static inline int pt_irq_lines(const char *name, long long *count)
{
	char line[1024], *p, *end, *last;
	int lines = 0;
	FILE *f;

	*count = 0;
	f = fopen("/proc/interrupts", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		last = strrchr(line, ' ');
		if (!last || strcmp(last + 1, name))
			continue;
		lines++;
		for (p = strchr(line, ':'); p; p = end) {
			long long n = strtoll(p + 1, &end, 10);

			if (end == p + 1)
				break;
			*count += n;
		}
	}
	fclose(f);
	return lines;
}

/*
 * Interrupts counted so far on the lines named @name (one per GPU of a
 * link), or -1 without one.
 */
static inline long long pt_irq_count(const char *name)
{
	long long count;

	return pt_irq_lines(name, &count) >= 1 ? count : -1;
}

/*
 * Wait up to two seconds until /proc/interrupts line @line counts more
 * than @before. Returns the milliseconds waited, or -1.
 */
static inline int pt_wait_irq(const char *line, long long before)
{
	int waited;

	for (waited = 0; waited < 2000; waited += 10) {
		if (pt_irq_count(line) > before)
			return waited;
		pt_sleep_ms(10);
	}
	return -1;
}

/*
 * Make the driver run a paging job that faults, through its own ring
 * (debugfs "paging_fault"), and wait until the fault interrupt on
 * /proc/interrupts line @line was counted. The write fails unless the
 * driver failed that job and ran the next. Returns the milliseconds waited
 * for the count, or -1.
 */
static inline int pt_paging_fault(const char *line)
{
	long long before = pt_irq_count(line);

	if (pt_write_file("/sys/kernel/debug/dri/0/paging_fault", "1"))
		return -1;
	return pt_wait_irq(line, before);
}

/* The device's debugfs directory (the one with "allocations") in @path: 1, or 0 for none. */
static inline int pt_debugfs_dir(char *path, size_t len)
{
	return !pagoda_debugfs_dir(path, len);
}

/* A number after @word on the line of @path starting with @start, or -1. */
static inline long long pt_debugfs_value(const char *path, const char *start, const char *word)
{
	char line[512], *p;
	long long value = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, start, strlen(start)) && (p = strstr(line, word)))
			value = strtoll(p + strlen(word), NULL, 10);
	fclose(f);
	return value;
}

/* Render jobs SUBMIT ran directly since probe (debugfs "render_jobs"), or -1. */
static inline long long pt_direct_runs(void)
{
	char path[PT_PATH_MAX];

	if (!pt_debugfs_dir(path, sizeof(path) - sizeof("/render_jobs")))
		return -1;
	strcat(path, "/render_jobs");
	return pt_debugfs_value(path, "run directly", "directly ");
}

/*
 * The CRC-32 of the RGB bytes (R first, rows top to bottom) of a @w x @h
 * screen whose pixel (x, y) is @pixel(x, y, @arg) as 0xRRGGBB: what a
 * host screendump of it gives (pagoda_screen.h). 0 without memory.
 */
static inline uint32_t pt_screen_crc(uint32_t w, uint32_t h,
				     uint32_t (*pixel)(uint32_t x, uint32_t y, const void *arg),
				     const void *arg)
{
	uint8_t *rgb = malloc((size_t)w * h * 3), *o;
	uint32_t x, y, crc;

	if (!rgb)
		return 0;
	for (y = 0, o = rgb; y < h; y++) {
		for (x = 0; x < w; x++, o += 3) {
			uint32_t p = pixel(x, y, arg);

			o[0] = p >> 16;
			o[1] = p >> 8;
			o[2] = p;
		}
	}
	crc = pagoda_crc32(rgb, (size_t)w * h * 3);
	free(rgb);
	return crc;
}

/*
 * Start @argv (searched in PATH) in a child process, with @env ("NAME=value",
 * or NULL) added to its environment, its standard input from a pipe
 * (*@in_fd) and its standard output and error into one (*@out_fd).
 * Return: the child's pid, or a negative errno.
 */
static inline pid_t pt_spawn(char *const argv[], const char *env, int *in_fd, int *out_fd)
{
	int in[2], out[2], i;
	pid_t pid;

	if (pipe(in))
		return -errno;
	if (pipe(out)) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	/* not inherited by what the test starts later */
	for (i = 0; i < 2; i++) {
		fcntl(in[i], F_SETFD, FD_CLOEXEC);
		fcntl(out[i], F_SETFD, FD_CLOEXEC);
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		if (env)
			putenv((char *)env);
		execvp(argv[0], argv);
		printf("error: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*in_fd = in[1];
	*out_fd = out[0];
	return pid;
}

#endif /* PAGODA_TEST_H */
