/* SPDX-License-Identifier: MIT */
/*
 * The guest's side of the screen channel: what the Pagoda display shows,
 * seen from the host. scripts/run-guest.sh connects the guest's second
 * serial port (/dev/ttyS1) to scripts/guest-agent.py, which takes QMP
 * screendumps of the device's console. One request line, one reply line:
 *
 *   screendump NAME      -> ok WIDTH HEIGHT CRC NCOLORS
 *   pixel NAME X Y       -> ok RRGGBB  (of the last "screendump NAME")
 *   screendump-png NAME  -> ok WIDTH HEIGHT PATH  (PATH on the host)
 *   anything else        -> error MESSAGE
 *
 * CRC is the zlib CRC-32 of the screen's RGB bytes (3 a pixel, R first,
 * rows top to bottom, no padding): libpagoda's pagoda_crc32() over the same
 * bytes gives the same value. NAME is 1 to 64 characters of
 * [A-Za-z0-9._-], not starting with a dot; the host keeps the last dump
 * of each NAME in memory only (for "pixel").
 *
 * Only libc is used, so that tools (guest-driver/tools/) can include this
 * too (scripts/build-guest.sh puts tests/guest/ on their include path).
 * Every function returns 0 or a negative errno: -ETIMEDOUT without an
 * answer, -EREMOTEIO when the host answered "error" (the message is then
 * in pagoda_screen_error), -EPROTO for a reply that does not parse.
 */
#ifndef PAGODA_SCREEN_H
#define PAGODA_SCREEN_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PAGODA_SCREEN_TTY	"/dev/ttyS1"
/* A screendump of a large screen takes a few seconds under TCG. */
#define PAGODA_SCREEN_TIMEOUT_MS 60000
#define PAGODA_SCREEN_LINE	512

struct pagoda_screen {
	unsigned int width;
	unsigned int height;
	uint32_t crc;		/* zlib CRC-32 of the RGB bytes */
	unsigned int ncolors;	/* distinct colours, up to 4096 */
};

/* The host's message for the last -EREMOTEIO. */
static char pagoda_screen_error[PAGODA_SCREEN_LINE];

/* What a function's result @ret means: "done", the host's message or errno's. */
static inline const char *pagoda_screen_strerror(int ret)
{
	if (!ret)
		return "done";
	return ret == -EREMOTEIO ? pagoda_screen_error : strerror(-ret);
}

static inline long long pagoda_screen_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Raw 8N1, no echo, no line editing, no flow control, no CR/NL mapping. */
static inline int pagoda_screen_open(void)
{
	struct termios tio;
	int fd;

	fd = open(PAGODA_SCREEN_TTY, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (tcgetattr(fd, &tio)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	cfmakeraw(&tio);
	tio.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS | HUPCL);
	tio.c_cflag |= CS8 | CLOCAL | CREAD;
	tio.c_cc[VMIN] = 0;
	tio.c_cc[VTIME] = 0;
	cfsetispeed(&tio, B115200);
	cfsetospeed(&tio, B115200);
	if (tcsetattr(fd, TCSANOW, &tio)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	/* a late reply to an earlier request that timed out */
	tcflush(fd, TCIOFLUSH);
	return fd;
}

/* Write all of @buf before @deadline (ms, CLOCK_MONOTONIC). */
static inline int pagoda_screen_write(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		long long left = deadline - pagoda_screen_now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* Read one line into @buf (without its end) before @deadline. */
static inline int pagoda_screen_read_line(int fd, char *buf, size_t size, long long deadline)
{
	size_t len = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - pagoda_screen_now_ms();
		char c;
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n = read(fd, &c, 1);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (c == '\n')
			break;
		if (c == '\r')
			continue;
		if (len + 1 >= size)
			return -EMSGSIZE;
		buf[len++] = c;
	}
	buf[len] = 0;
	return 0;
}

/*
 * Send @request (one line, without its end) and wait for the answer. On
 * "ok", @reply gets what follows "ok " and 0 is returned; on "error", the
 * message goes to pagoda_screen_error and -EREMOTEIO is returned.
 */
static inline int pagoda_screen_request(const char *request, char *reply, size_t size)
{
	long long deadline = pagoda_screen_now_ms() + PAGODA_SCREEN_TIMEOUT_MS;
	char line[PAGODA_SCREEN_LINE + 2], answer[PAGODA_SCREEN_LINE];
	int fd, ret;

	if (strlen(request) > PAGODA_SCREEN_LINE || strchr(request, '\n'))
		return -EINVAL;
	fd = pagoda_screen_open();
	if (fd < 0)
		return fd;
	snprintf(line, sizeof(line), "%s\n", request);
	ret = pagoda_screen_write(fd, line, strlen(line), deadline);
	if (!ret)
		ret = pagoda_screen_read_line(fd, answer, sizeof(answer), deadline);
	close(fd);
	if (ret)
		return ret;
	if (!strncmp(answer, "ok", 2) && (!answer[2] || answer[2] == ' ')) {
		snprintf(reply, size, "%s", answer[2] ? answer + 3 : "");
		return 0;
	}
	if (!strncmp(answer, "error", 5)) {
		snprintf(pagoda_screen_error, sizeof(pagoda_screen_error), "%s",
			 answer[5] ? answer + 6 : "error");
		return -EREMOTEIO;
	}
	return -EPROTO;
}

/* Take a screendump named @name: size, CRC and colour count. */
static inline int pagoda_screendump(const char *name, struct pagoda_screen *out)
{
	char request[PAGODA_SCREEN_LINE], reply[PAGODA_SCREEN_LINE];
	int ret;

	snprintf(request, sizeof(request), "screendump %s", name);
	ret = pagoda_screen_request(request, reply, sizeof(reply));
	if (ret)
		return ret;
	if (sscanf(reply, "%u %u %x %u", &out->width, &out->height, &out->crc,
		   &out->ncolors) != 4)
		return -EPROTO;
	return 0;
}

/* The pixel at (@x, @y) of the last screendump named @name, as 0xRRGGBB. */
static inline int pagoda_screen_pixel(const char *name, unsigned int x, unsigned int y,
				      uint32_t *rgb)
{
	char request[PAGODA_SCREEN_LINE], reply[PAGODA_SCREEN_LINE], *end;
	int ret;

	snprintf(request, sizeof(request), "pixel %s %u %u", name, x, y);
	ret = pagoda_screen_request(request, reply, sizeof(reply));
	if (ret)
		return ret;
	*rgb = strtoul(reply, &end, 16);
	return end == reply + 6 && !*end ? 0 : -EPROTO;
}

/*
 * Have the host save the screen as a PNG named @name (scripts/demo.sh
 * collects them); @path (if not NULL) gets its path on the host.
 */
static inline int pagoda_screen_png(const char *name, char *path, size_t size)
{
	char request[PAGODA_SCREEN_LINE], reply[PAGODA_SCREEN_LINE];
	unsigned int width, height;
	int ret, at = 0;

	snprintf(request, sizeof(request), "screendump-png %s", name);
	ret = pagoda_screen_request(request, reply, sizeof(reply));
	if (ret)
		return ret;
	if (sscanf(reply, "%u %u %n", &width, &height, &at) != 2 || !at || !reply[at])
		return -EPROTO;
	if (path)
		snprintf(path, size, "%s", reply + at);
	return 0;
}

#endif /* PAGODA_SCREEN_H */
