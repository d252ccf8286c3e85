/* SPDX-License-Identifier: MIT */
/*
 * pagoda-wl-client: the Wayland client of tests/guest/weston.c. It shows a
 * known picture (weston_pattern.h) through the fullscreen shell
 * (zwp_fullscreen_shell_v1.present_surface) on the compositor's output, in
 * one wl_shm XRGB8888 buffer of exactly the output's current mode, so that
 * the screen shows it pixel for pixel. It commits the buffer FRAMES times,
 * each commit asking for a frame callback and a presentation feedback
 * (wp_presentation, when the compositor has it) and waiting for the
 * previous frame callback. The first commit damages the whole surface,
 * each later one a band of BAND rows, the bands walking down the screen:
 * the compositor composites every frame anew, in its share of a refresh
 * (a whole screen a frame is more than a TCG guest's compositor does in
 * one). Then it prints what it saw, one line each:
 *
 *   output 1024x768 at 60000 mHz
 *   frames 120 of 120 in 2003 ms
 *   intervals 119: median 17 ms, min 16 ms, max 17 ms, 119 within one refresh
 *   presented 120, discarded 0, refresh 16666666 ns, 120 vsync, 119 next vblank,
 *     119 in step (worst 1000 ns), 0 after a stall, 0 wrong      (one line)
 *   ready
 *
 * intervals: between the frame callbacks' times (the compositor's clock,
 * whole milliseconds); next vblank: presentations one vertical blank after
 * the previous one, by their sequence numbers; in step: presentations k > 0
 * blanks after the previous one and k refreshes later, within STEP_NS;
 * after a stall: later than that (a host that stalls the guest's device
 * makes it skip the blanks it missed, docs/hardware.md 8.2); wrong: on the
 * same blank or an earlier one, or sooner than k refreshes later.
 * Then it keeps the picture on screen until its standard input closes (the
 * test takes a screendump meanwhile; at most WAIT_MS) and exits 0. An
 * error prints "error: ..." and exits 1. Every wait is bounded.
 *
 *   usage: pagoda-wl-client FRAMES TIMEOUT_MS
 *   (WAYLAND_DISPLAY and XDG_RUNTIME_DIR name the compositor's socket)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <wayland-client.h>

#include "fullscreen-shell-unstable-v1-client-protocol.h"
#include "presentation-time-client-protocol.h"
#include "weston_pattern.h"

#define FRAMES_MAX	1000
/* How long the picture stays up for the screendump, at most. */
#define WAIT_MS		120000
/* How long presentation feedback may come after the last frame callback. */
#define FEEDBACK_MS	2000
/* The rows each commit after the first damages. */
#define BAND		32
/*
 * How far a presentation may be from a whole number of refreshes after the
 * previous one (DRM's event times are whole microseconds).
 */
#define STEP_NS		20000

struct client {
	struct wl_display *display;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct wl_output *output;
	struct zwp_fullscreen_shell_v1 *shell;
	struct wp_presentation *presentation;
	struct wl_surface *surface;
	struct wl_buffer *buffer;
	int32_t width, height, refresh;	/* the output's current mode; mHz */
	int xrgb;			/* wl_shm offers XRGB8888 */
	int committed, done, pending;
	uint32_t times[FRAMES_MAX];	/* the frame callbacks' times, ms */
	int presented, discarded, vsync, next_vblank;
	uint32_t refresh_ns;
	/* the last presentation: its time (ns) and vertical blank */
	int64_t last_t;
	uint64_t last_seq;
	/*
	 * Presentations k > 0 blanks after the previous one: k refreshes
	 * later (in step), later than that (after a stall of the host, whose
	 * missed blanks the device does not count), or neither (wrong).
	 */
	int in_step, stalled, wrong;
	int64_t worst_ns;	/* in step: the farthest from k refreshes later */
};

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Wait up to @timeout_ms for events and dispatch them: 1 when some came,
 * 0 on timeout, -1 when the connection failed.
 */
static int dispatch_timeout(struct wl_display *d, int timeout_ms)
{
	struct pollfd pfd = { .fd = wl_display_get_fd(d), .events = POLLIN };
	int ret;

	while (wl_display_prepare_read(d))
		if (wl_display_dispatch_pending(d) < 0)
			return -1;
	if (wl_display_flush(d) < 0 && errno != EAGAIN) {
		wl_display_cancel_read(d);
		return -1;
	}
	ret = poll(&pfd, 1, timeout_ms);
	if (ret <= 0) {
		wl_display_cancel_read(d);
		return ret < 0 && errno != EINTR ? -1 : 0;
	}
	if (wl_display_read_events(d) < 0)
		return -1;
	return wl_display_dispatch_pending(d) < 0 ? -1 : 1;
}

static void sync_done(void *data, struct wl_callback *cb, uint32_t serial)
{
	(void)serial;
	*(int *)data = 1;
	wl_callback_destroy(cb);
}

static const struct wl_callback_listener sync_listener = { .done = sync_done };

/* wl_display_roundtrip() with a deadline. */
static void roundtrip(struct client *c, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct wl_callback *cb = wl_display_sync(c->display);
	int done = 0;

	wl_callback_add_listener(cb, &sync_listener, &done);
	while (!done) {
		long long left = deadline - now_ms();

		if (left <= 0)
			die("no answer from the compositor in %d ms", timeout_ms);
		if (dispatch_timeout(c->display, left) < 0)
			die("connection to the compositor lost: %s", strerror(errno));
	}
}

static void output_geometry(void *data, struct wl_output *o, int32_t x, int32_t y,
			    int32_t pw, int32_t ph, int32_t subpixel, const char *make,
			    const char *model, int32_t transform)
{
	(void)data, (void)o, (void)x, (void)y, (void)pw, (void)ph, (void)subpixel;
	(void)make, (void)model, (void)transform;
}

static void output_mode(void *data, struct wl_output *o, uint32_t flags, int32_t width,
			int32_t height, int32_t refresh)
{
	struct client *c = data;

	(void)o;
	if (flags & WL_OUTPUT_MODE_CURRENT) {
		c->width = width;
		c->height = height;
		c->refresh = refresh;
	}
}

static void output_done(void *data, struct wl_output *o)
{
	(void)data, (void)o;
}

static void output_scale(void *data, struct wl_output *o, int32_t factor)
{
	(void)data, (void)o, (void)factor;
}

static const struct wl_output_listener output_listener = {
	.geometry = output_geometry,
	.mode = output_mode,
	.done = output_done,
	.scale = output_scale,
};

static void shm_format(void *data, struct wl_shm *shm, uint32_t format)
{
	struct client *c = data;

	(void)shm;
	if (format == WL_SHM_FORMAT_XRGB8888)
		c->xrgb = 1;
}

static const struct wl_shm_listener shm_listener = { .format = shm_format };

static void global(void *data, struct wl_registry *reg, uint32_t name, const char *iface,
		   uint32_t version)
{
	struct client *c = data;

	if (!strcmp(iface, wl_compositor_interface.name) && version >= 4) {
		c->compositor = wl_registry_bind(reg, name, &wl_compositor_interface, 4);
	} else if (!strcmp(iface, wl_shm_interface.name)) {
		c->shm = wl_registry_bind(reg, name, &wl_shm_interface, 1);
		wl_shm_add_listener(c->shm, &shm_listener, c);
	} else if (!strcmp(iface, wl_output_interface.name) && !c->output && version >= 2) {
		c->output = wl_registry_bind(reg, name, &wl_output_interface, 2);
		wl_output_add_listener(c->output, &output_listener, c);
	} else if (!strcmp(iface, zwp_fullscreen_shell_v1_interface.name)) {
		c->shell = wl_registry_bind(reg, name, &zwp_fullscreen_shell_v1_interface, 1);
	} else if (!strcmp(iface, wp_presentation_interface.name)) {
		c->presentation = wl_registry_bind(reg, name, &wp_presentation_interface, 1);
	}
}

static void global_remove(void *data, struct wl_registry *reg, uint32_t name)
{
	(void)data, (void)reg, (void)name;
}

static const struct wl_registry_listener registry_listener = {
	.global = global,
	.global_remove = global_remove,
};

static void frame_done(void *data, struct wl_callback *cb, uint32_t time)
{
	struct client *c = data;

	wl_callback_destroy(cb);
	if (c->done < FRAMES_MAX)
		c->times[c->done] = time;
	c->done++;
	c->pending = 0;
}

static const struct wl_callback_listener frame_listener = { .done = frame_done };

static void feedback_sync_output(void *data, struct wp_presentation_feedback *fb,
				 struct wl_output *output)
{
	(void)data, (void)fb, (void)output;
}

static void feedback_presented(void *data, struct wp_presentation_feedback *fb,
			       uint32_t sec_hi, uint32_t sec_lo, uint32_t nsec, uint32_t refresh,
			       uint32_t seq_hi, uint32_t seq_lo, uint32_t flags)
{
	struct client *c = data;
	uint64_t seq = (uint64_t)seq_hi << 32 | seq_lo;
	int64_t t = (int64_t)((uint64_t)sec_hi << 32 | sec_lo) * 1000000000 + nsec;

	wp_presentation_feedback_destroy(fb);
	if (c->presented) {
		int64_t k = seq - c->last_seq;
		int64_t off = t - c->last_t - llround(k * 1e12 / c->refresh);

		if (k > 0 && llabs(off) < STEP_NS) {
			c->in_step++;
			if (llabs(off) > c->worst_ns)
				c->worst_ns = llabs(off);
		} else {
			if (k > 0 && off > 0)
				c->stalled++;
			else
				c->wrong++;
			if (c->stalled + c->wrong <= 5)
				printf("not in step: frame %d presented at blank %llu, %lld.%06lld s, "
				       "after blank %llu, %lld.%06lld s\n", c->presented,
				       (unsigned long long)seq, (long long)(t / 1000000000),
				       (long long)(t % 1000000000 / 1000),
				       (unsigned long long)c->last_seq,
				       (long long)(c->last_t / 1000000000),
				       (long long)(c->last_t % 1000000000 / 1000));
		}
		c->next_vblank += k == 1;
	}
	c->presented++;
	c->refresh_ns = refresh;
	if (flags & WP_PRESENTATION_FEEDBACK_KIND_VSYNC)
		c->vsync++;
	c->last_t = t;
	c->last_seq = seq;
}

static void feedback_discarded(void *data, struct wp_presentation_feedback *fb)
{
	struct client *c = data;

	wp_presentation_feedback_destroy(fb);
	c->discarded++;
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	.sync_output = feedback_sync_output,
	.presented = feedback_presented,
	.discarded = feedback_discarded,
};

/* The picture in a wl_shm buffer of the output's size. */
static void create_buffer(struct client *c)
{
	int32_t stride = c->width * 4;
	size_t size = (size_t)stride * c->height;
	struct wl_shm_pool *pool;
	uint32_t *pixels;
	int32_t x, y;
	int fd;

	fd = memfd_create("pagoda-wl-client", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, size) < 0)
		die("a %zu-byte memfd: %s", size, strerror(errno));
	pixels = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pixels == MAP_FAILED)
		die("mmap of the buffer: %s", strerror(errno));
	for (y = 0; y < c->height; y++)
		for (x = 0; x < c->width; x++)
			pixels[(size_t)y * c->width + x] = weston_pattern_rgb(x, y);
	pool = wl_shm_create_pool(c->shm, fd, size);
	c->buffer = wl_shm_pool_create_buffer(pool, 0, c->width, c->height, stride,
					      WL_SHM_FORMAT_XRGB8888);
	wl_shm_pool_destroy(pool);
	close(fd);
}

/* Commit the picture again, with a frame callback: whole, then a band. */
static void commit_frame(struct client *c)
{
	int32_t y = c->committed ? (c->committed - 1) * BAND % c->height : 0;
	int32_t rows = c->committed ? BAND : c->height;
	struct wl_callback *cb;

	wl_surface_attach(c->surface, c->buffer, 0, 0);
	wl_surface_damage_buffer(c->surface, 0, y, c->width,
				 rows < c->height - y ? rows : c->height - y);
	cb = wl_surface_frame(c->surface);
	wl_callback_add_listener(cb, &frame_listener, c);
	if (c->presentation)
		wp_presentation_feedback_add_listener(
			wp_presentation_feedback(c->presentation, c->surface),
			&feedback_listener, c);
	wl_surface_commit(c->surface);
	c->committed++;
	c->pending = 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The frame callbacks' intervals: median, extremes, how many one refresh long. */
static void print_intervals(struct client *c)
{
	uint32_t d[FRAMES_MAX];
	int n = (c->done < FRAMES_MAX ? c->done : FRAMES_MAX) - 1, i, within = 0;
	double period = c->refresh > 0 ? 1e6 / c->refresh : 0;

	if (n < 1) {
		printf("intervals 0: median 0 ms, min 0 ms, max 0 ms, 0 within one refresh\n");
		return;
	}
	for (i = 0; i < n; i++) {
		d[i] = c->times[i + 1] - c->times[i];
		/* the times are whole milliseconds: 16 or 17 at 60 Hz */
		within += d[i] > period - 1.5 && d[i] < period + 1.5;
	}
	qsort(d, n, sizeof(d[0]), cmp_u32);
	printf("intervals %d: median %u ms, min %u ms, max %u ms, %d within one refresh\n", n,
	       d[n / 2], d[0], d[n - 1], within);
}

/* Keep the picture up until standard input closes, or WAIT_MS. */
static void wait_for_stdin(struct client *c)
{
	long long deadline = now_ms() + WAIT_MS;
	struct pollfd pfd[2] = {
		{ .fd = 0, .events = POLLIN },
		{ .fd = wl_display_get_fd(c->display), .events = POLLIN },
	};
	char buf[64];

	while (now_ms() < deadline) {
		while (wl_display_prepare_read(c->display))
			wl_display_dispatch_pending(c->display);
		wl_display_flush(c->display);
		if (poll(pfd, 2, deadline - now_ms()) <= 0) {
			wl_display_cancel_read(c->display);
			continue;
		}
		if (pfd[1].revents) {
			if (wl_display_read_events(c->display) < 0)
				die("connection to the compositor lost: %s", strerror(errno));
			wl_display_dispatch_pending(c->display);
		} else {
			wl_display_cancel_read(c->display);
		}
		if (pfd[0].revents && read(0, buf, sizeof(buf)) <= 0)
			return;
	}
}

int main(int argc, char **argv)
{
	static struct client c;
	int frames, timeout_ms;
	long long start, deadline, elapsed;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3)
		die("usage: pagoda-wl-client FRAMES TIMEOUT_MS");
	frames = atoi(argv[1]);
	timeout_ms = atoi(argv[2]);
	if (frames < 2 || frames > FRAMES_MAX || timeout_ms < 1)
		die("FRAMES must be 2 to %d, TIMEOUT_MS positive", FRAMES_MAX);

	c.display = wl_display_connect(NULL);
	if (!c.display)
		die("cannot connect to the compositor: %s", strerror(errno));
	wl_registry_add_listener(wl_display_get_registry(c.display), &registry_listener, &c);
	roundtrip(&c, timeout_ms);
	if (!c.compositor || !c.shm || !c.output || !c.shell)
		die("missing globals: wl_compositor v4 %s, wl_shm %s, wl_output v2 %s, "
		    "zwp_fullscreen_shell_v1 %s", c.compositor ? "yes" : "no",
		    c.shm ? "yes" : "no", c.output ? "yes" : "no", c.shell ? "yes" : "no");
	/* the output's modes and the formats come after the binds */
	roundtrip(&c, timeout_ms);
	if (c.width <= 0 || c.height <= 0 || c.refresh <= 0 || !c.xrgb)
		die("no current output mode (%dx%d at %d mHz) or no XRGB8888 (%d)", c.width,
		    c.height, c.refresh, c.xrgb);
	printf("output %dx%d at %d mHz\n", c.width, c.height, c.refresh);

	create_buffer(&c);
	c.surface = wl_compositor_create_surface(c.compositor);
	zwp_fullscreen_shell_v1_present_surface(c.shell, c.surface,
						ZWP_FULLSCREEN_SHELL_V1_PRESENT_METHOD_DEFAULT,
						c.output);
	start = now_ms();
	deadline = start + timeout_ms;
	while (c.done < frames && now_ms() < deadline) {
		if (!c.pending && c.committed < frames)
			commit_frame(&c);
		if (dispatch_timeout(c.display, deadline - now_ms()) < 0)
			die("connection to the compositor lost: %s", strerror(errno));
	}
	elapsed = now_ms() - start;
	/* the last presentations are reported after their frame callbacks */
	deadline = now_ms() + FEEDBACK_MS;
	while (c.presentation && c.presented + c.discarded < c.committed && now_ms() < deadline)
		if (dispatch_timeout(c.display, deadline - now_ms()) < 0)
			die("connection to the compositor lost: %s", strerror(errno));

	printf("frames %d of %d in %lld ms\n", c.done, frames, elapsed);
	print_intervals(&c);
	printf("presented %d, discarded %d, refresh %u ns, %d vsync, %d next vblank, "
	       "%d in step (worst %lld ns), %d after a stall, %d wrong\n", c.presented,
	       c.discarded, c.refresh_ns, c.vsync, c.next_vblank, c.in_step,
	       (long long)c.worst_ns, c.stalled, c.wrong);
	printf("ready\n");
	wait_for_stdin(&c);

	wl_buffer_destroy(c.buffer);
	wl_surface_destroy(c.surface);
	wl_display_flush(c.display);
	wl_display_disconnect(c.display);
	return 0;
}
