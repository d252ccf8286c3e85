/* SPDX-License-Identifier: MIT */
/*
 * libdrm's own clients against the Pagoda display: drm_info describes the
 * device (driver, connector, modes, CRTC, plane formats), modetest lists
 * it, sets the preferred mode with its test pattern (seen from the host:
 * its colour bars on a screen of that size) and page-flips with vsync.
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "pagoda_screen.h"
#include "pagoda_test.h"

#define OUTPUT_MAX	(256 * 1024)
/* How long a client may take to show what is waited for (TCG, debug kernel). */
#define WAIT_MS		20000

struct run {
	char out[OUTPUT_MAX];
	size_t len;
	int status;
	int stdin_fd;		/* the client's stdin, kept open until run_finish() */
	int out_fd;
	pid_t pid;
};

/* Start @argv with stdout and stderr into a pipe and stdin from a pipe. */
static int run_start(struct run *r, char *const argv[])
{
	r->len = 0;
	r->out[0] = 0;
	r->pid = pt_spawn(argv, NULL, &r->stdin_fd, &r->out_fd);
	return r->pid < 0 ? r->pid : 0;
}

/*
 * Read what the client printed next, waiting up to @timeout_ms (-1: for
 * ever): the bytes read, 0 at its end, -1 when nothing came in time.
 */
static ssize_t run_read(struct run *r, int timeout_ms)
{
	struct pollfd pfd = { .fd = r->out_fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -1;
	n = read(r->out_fd, r->out + r->len, sizeof(r->out) - 1 - r->len);
	if (n > 0)
		r->len += n;
	r->out[r->len] = 0;
	return n;
}

/* Read until the client has printed @text, its output ends, or WAIT_MS passed. */
static void run_wait_output(struct run *r, const char *text)
{
	long long deadline = pagoda_screen_now_ms() + WAIT_MS;

	while (!strstr(r->out, text)) {
		long long left = deadline - pagoda_screen_now_ms();

		if (left <= 0 || run_read(r, (int)left) <= 0)
			return;
	}
}

/* Close its stdin (modetest stops on input or end of file), collect output and status. */
static void run_finish(struct run *r)
{
	close(r->stdin_fd);
	while (run_read(r, -1) > 0)
		;
	close(r->out_fd);
	waitpid(r->pid, &r->status, 0);
}

static int run(struct run *r, char *const argv[])
{
	int ret = run_start(r, argv);

	if (ret)
		return ret;
	run_finish(r);
	return 0;
}

static int exited_ok(const struct run *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static void show_tail(const struct run *r)
{
	size_t len = strlen(r->out);

	printf("%s\n", r->out + (len > 2000 ? len - 2000 : 0));
}

int main(void)
{
	static struct run r;
	char *info[] = { "drm_info", NULL };
	char *list[] = { "modetest", "-M", "pagoda", "-c", "-p", NULL };
	char set_arg[64], *set[] = { "modetest", "-M", "pagoda", "-s", set_arg, NULL };
	char *flip[] = { "modetest", "-M", "pagoda", "-s", set_arg, "-v", NULL };
	unsigned int conn = 0, crtc = 0, w = 0, h = 0;
	struct pagoda_screen s;
	char bdf[PT_NAME_MAX];
	volatile uint32_t *mmio;
	const char *p;
	int ret;

	mmio = pt_find_mmio(bdf, sizeof(bdf));
	if (!mmio)
		return pt_exit();
	w = pt_reg(mmio, PAGODA_REG_DISP_PREF_WIDTH);
	h = pt_reg(mmio, PAGODA_REG_DISP_PREF_HEIGHT);

	ret = run(&r, info);
	if (!pt_check(!ret && exited_ok(&r), "drm_info exits 0 (status 0x%x)", r.status))
		show_tail(&r);
	pt_check(strstr(r.out, "pagoda") != NULL, "drm_info names the pagoda driver");
	if (!pt_check(strstr(r.out, "Connector") != NULL && strstr(r.out, "XRGB8888") != NULL &&
		      strstr(r.out, "RGB565") != NULL, "drm_info shows the connector and both formats"))
		show_tail(&r);

	ret = run(&r, list);
	if (!pt_check(!ret && exited_ok(&r), "modetest -c -p exits 0 (status 0x%x)", r.status))
		show_tail(&r);
	/* "id encoder status name ..." then "<id> <enc> connected Virtual-1" */
	p = strstr(r.out, "connected");
	while (p && p > r.out && p[-1] != '\n')
		p--;
	if (!pt_check(p && sscanf(p, "%u", &conn) == 1, "modetest lists a connected connector %u",
		      conn))
		return pt_exit();
	p = strstr(r.out, "CRTCs:");
	if (p)
		p = strchr(p, '\n');
	if (p)
		p = strchr(p + 1, '\n');
	if (!pt_check(p && sscanf(p + 1, "%u", &crtc) == 1, "modetest lists CRTC %u", crtc))
		return pt_exit();

	snprintf(set_arg, sizeof(set_arg), "%u@%u:%ux%u", conn, crtc, w, h);
	ret = run_start(&r, set);
	if (pt_check(!ret, "modetest -s %s started", set_arg)) {
		/* the pattern stays up while modetest waits for input */
		long long deadline = pagoda_screen_now_ms() + WAIT_MS;

		do {
			ret = pagoda_screendump("modetest", &s);
			if (!ret && s.width == w && s.height == h && s.ncolors >= 8)
				break;
			pt_sleep_ms(100);
		} while (pagoda_screen_now_ms() < deadline);
		pt_check(!ret && s.width == w && s.height == h && s.ncolors >= 8,
			 "modetest's pattern on screen: %ux%u, %u colours (%s)", ret ? 0 : s.width,
			 ret ? 0 : s.height, ret ? 0 : s.ncolors, pagoda_screen_strerror(ret));
		run_finish(&r);
		if (!pt_check(exited_ok(&r), "modetest -s exits 0 (status 0x%x)", r.status))
			show_tail(&r);
	}

	ret = run_start(&r, flip);
	if (pt_check(!ret, "modetest -s %s -v started", set_arg)) {
		/* it reports the flip rate after every 60 flips */
		run_wait_output(&r, "freq:");
		run_finish(&r);
		if (!pt_check(exited_ok(&r), "modetest -v exits 0 (status 0x%x)", r.status))
			show_tail(&r);
		pt_check(strstr(r.out, "freq:") != NULL, "modetest -v flipped with vsync: %s",
			 strstr(r.out, "freq:") ? strstr(r.out, "freq:") : "no rate reported");
	}
	return pt_exit();
}
