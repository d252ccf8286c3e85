// SPDX-License-Identifier: MIT
/*
 * Where a job's round trip goes, in the guest: run by scripts/bench.sh
 * after pagoda-vmbench. 200 no-op render jobs and 200 paging jobs (a bind
 * of one zero page), each submitted and waited for on its out-syncobj,
 * with the kernel's tracing on: the driver's tracepoints, the GPU's
 * interrupt handler and the scheduler's wake-up of this process. Each
 * round trip is bracketed by trace_marker writes, and the time between
 * consecutive events of it is one phase:
 *
 *   render: begin -> ioctl armed the job (pagoda_render_submit)
 *           -> ring entries written, SUBMIT running the job itself
 *              (pagoda_job_submit: direct submission)
 *           -> retired on the submit path after the doorbell's slice
 *              (pagoda_job_retire) -> end
 *   paging: begin -> ring entry written (pagoda_job_submit) -> retired
 *           -> end
 *
 * A round that took another path (the scheduler's worker ran the job,
 * the interrupt retired it) is counted, not timed; so are the rounds in
 * which the render interrupt ran or this process slept in its wait.
 * Prints the median and mean of each phase. The device's side (doorbell
 * to retirement, in the QEMU process) is in QEMU's trace of the same run,
 * which scripts/bench.sh sums up. Not a test: nothing depends on the
 * figures.
 *   usage: pagoda-latency
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <libpagoda.h>

#define KIB		1024ull
#define SEG(id)		DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_##id)
#define WAIT_NS		(60ll * 1000 * 1000 * 1000)
#define TRACING		"/sys/kernel/tracing"
#define ROUNDS		200
#define MAX_PHASES	8

static struct pagoda_dev dev;
static uint32_t out_sync;
static int marker = -1;

struct phase_set {
	const char *name;
	unsigned int count;			/* phases: events + 1 */
	const char *events[MAX_PHASES];		/* what ends each phase but the last */
	const char *labels[MAX_PHASES + 1];
	double *samples[MAX_PHASES + 1];	/* per round, microseconds */
	unsigned int rounds;
	unsigned int interrupted;		/* rounds with a Pagoda interrupt */
	unsigned int slept;			/* rounds in which this process slept */
};

static struct phase_set render = {
	.name = "no-op render job",
	.count = 4,
	.events = { "pagoda_render_submit:", "pagoda_job_submit:", "pagoda_job_retire:" },
	.labels = { "ioctl: checks, locks, prepares and arms the job",
		    "direct run: slot, ring entries",
		    "doorbell: the device's slice, retired on the submit path",
		    "retired to the wait's return: out-syncobj, the wait" },
};

static struct phase_set paging = {
	.name = "paging job (bind of one zero page)",
	.count = 3,
	.events = { "pagoda_job_submit:", "pagoda_job_retire:" },
	.labels = { "ioctl: checks, locks, builds the page-table batch",
		    "doorbell: the device's slice, retired on the submit path",
		    "retired to the wait's return: out-syncobj, the wait" },
};

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "pagoda-latency: %s: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static void mark(const char *what, unsigned int round)
{
	char text[64];
	int len = snprintf(text, sizeof(text), "pagoda-latency %s %u\n", what, round);

	if (write(marker, text, len) != len)
		check("trace_marker", -errno);
}

/* The events of a round trip, this process's scheduling only. */
static void tracing_on(void)
{
	static const char *const events[] = {
		"pagoda/pagoda_render_submit", "pagoda/pagoda_job_submit",
		"pagoda/pagoda_job_retire",
		"irq/irq_handler_entry", "sched/sched_wakeup",
	};
	char path[256], filter[64];
	unsigned int i;

	if (access(TRACING "/trace", F_OK))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
	check("buffer size", write_file(TRACING "/buffer_size_kb", "8192"));
	check("clear", write_file(TRACING "/trace", ""));
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		filter[0] = 0;
		if (!strcmp(events[i], "sched/sched_wakeup"))
			snprintf(filter, sizeof(filter), "pid == %d", getpid());
		else if (!strcmp(events[i], "irq/irq_handler_entry"))
			snprintf(filter, sizeof(filter), "name ~ \"pagoda*\"");
		if (filter[0]) {
			snprintf(path, sizeof(path), TRACING "/events/%s/filter", events[i]);
			check(events[i], write_file(path, filter));
		}
		snprintf(path, sizeof(path), TRACING "/events/%s/enable", events[i]);
		check(events[i], write_file(path, "1"));
	}
	marker = open(TRACING "/trace_marker", O_WRONLY);
	if (marker < 0)
		check("trace_marker", -errno);
	check("tracing on", write_file(TRACING "/tracing_on", "1"));
}

static void tracing_off(void)
{
	write_file(TRACING "/tracing_on", "0");
	write_file(TRACING "/events/enable", "0");
	close(marker);
}

/* The time stamp of a trace line ("... [cpu] flags  123.456789: event: ..."), in us. */
static double stamp(const char *line)
{
	const char *colon = strstr(line, ": ");
	const char *p;

	if (!colon)
		return -1;
	for (p = colon; p > line && p[-1] != ' '; p--)
		;
	return atof(p) * 1e6;
}

/*
 * Walk the trace: between "pagoda-latency begin N" and "end N" of @set's
 * tag, the first occurrence of each of its events, in order. A round that
 * lacks one, or has an event of another path (the scheduler's worker runs
 * the job after this process's wait slept), is left out.
 */
static void collect(struct phase_set *set, const char *tag)
{
	double t[MAX_PHASES + 2];
	char line[1024], begin[64], end[64];
	unsigned int next = 0, i;
	int in = 0, interrupted = 0, slept = 0;
	FILE *f = fopen(TRACING "/trace", "r");

	if (!f)
		check("read the trace", -errno);
	snprintf(begin, sizeof(begin), "pagoda-latency %s-begin", tag);
	snprintf(end, sizeof(end), "pagoda-latency %s-end", tag);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, begin)) {
			in = 1;
			next = 0;
			interrupted = 0;
			slept = 0;
			t[0] = stamp(line);
		} else if (in && strstr(line, end)) {
			in = 0;
			set->interrupted += interrupted;
			set->slept += slept;
			if (next != set->count - 1 || slept)
				continue;
			t[set->count] = stamp(line);
			for (i = 0; i < set->count; i++)
				set->samples[i][set->rounds] = t[i + 1] - t[i];
			set->rounds++;
		} else if (in && strstr(line, "irq_handler_entry:")) {
			interrupted = 1;
		} else if (in && strstr(line, "sched_wakeup:")) {
			slept = 1;
		} else if (in && next < set->count - 1 && strstr(line, set->events[next])) {
			t[++next] = stamp(line);
		}
	}
	fclose(f);
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(struct phase_set *set)
{
	double total_median = 0, total_mean = 0;
	unsigned int i, r;

	printf("%s: %u of %u round trips on this path (a Pagoda interrupt in %u, the wait slept in %u)\n",
	       set->name, set->rounds, ROUNDS, set->interrupted, set->slept);
	if (!set->rounds)
		return;
	printf("  %-58s %9s %9s\n", "phase", "median", "mean");
	for (i = 0; i < set->count; i++) {
		double mean = 0, median;

		for (r = 0; r < set->rounds; r++)
			mean += set->samples[i][r];
		mean /= set->rounds;
		qsort(set->samples[i], set->rounds, sizeof(double), compare);
		median = set->samples[i][set->rounds / 2];
		total_median += median;
		total_mean += mean;
		printf("  %-58s %6.1f us %6.1f us\n", set->labels[i], median, mean);
	}
	printf("  %-58s %6.1f us %6.1f us\n", "round trip (sum)", total_median, total_mean);
}

static void alloc_samples(struct phase_set *set)
{
	unsigned int i;

	for (i = 0; i < set->count; i++) {
		set->samples[i] = calloc(ROUNDS, sizeof(double));
		if (!set->samples[i])
			check("memory", -ENOMEM);
	}
}

int main(void)
{
	struct drm_pagoda_sync out;
	struct pagoda_bo_desc desc = {
		.size = 64 * KIB, .segments = SEG(SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_SYSTEM,
		.priority = DRM_PAGODA_PRIORITY_NORMAL,
	};
	struct pagoda_cmdbuf cb;
	struct pagoda_bo cmd;
	uint64_t cmd_va = 0, res = 0, va;
	uint32_t ctx;
	unsigned int i;

	check("open", pagoda_open(&dev));
	check("syncobj", pagoda_syncobj_create(&dev, &out_sync));
	out = (struct drm_pagoda_sync){ .handle = out_sync };
	check("command buffer", pagoda_bo_create(&dev, &desc, &cmd));
	check("map", pagoda_bo_map(&dev, &cmd));
	pagoda_cmdbuf_init(&cb, cmd.map, cmd.size);
	pagoda_cmd_nop(&cb, 1);
	check("bind", pagoda_vm_map(&dev, cmd.handle, 0, cmd.size, 0, &cmd_va, 0, 0, 0));
	check("context", pagoda_ctx_create(&dev, DRM_PAGODA_PRIORITY_NORMAL, &ctx));
	check("reserve", pagoda_vm_reserve(&dev, &res, 64 * KIB, 0, 0, 0));
	alloc_samples(&render);
	alloc_samples(&paging);

	/* warm: the slot taken, the paths in the caches */
	for (i = 0; i < 10; i++) {
		check("submit", pagoda_submit(&dev, ctx, cmd_va, 4, NULL, 0, &out, 1));
		check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
	}
	tracing_on();
	for (i = 0; i < ROUNDS; i++) {
		mark("render-begin", i);
		check("submit", pagoda_submit(&dev, ctx, cmd_va, 4, NULL, 0, &out, 1));
		check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
		mark("render-end", i);
	}
	for (i = 0; i < ROUNDS; i++) {
		va = res;
		mark("paging-begin", i);
		check("map", pagoda_vm_map(&dev, 0, 0, 4 * KIB, DRM_PAGODA_VM_FIXED | DRM_PAGODA_VM_ZERO,
					   &va, 0, 0, out_sync));
		check("wait", pagoda_syncobj_wait(&dev, out_sync, 0, WAIT_NS));
		mark("paging-end", i);
	}
	tracing_off();

	printf("where a job's round trip goes (pagoda-latency, guest clock, with tracing on)\n");
	collect(&render, "render");
	collect(&paging, "paging");
	report(&render);
	report(&paging);
	pagoda_ctx_destroy(&dev, ctx);
	pagoda_close(&dev);
	return 0;
}
