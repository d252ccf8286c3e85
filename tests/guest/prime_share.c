// SPDX-License-Identifier: MIT
/*
 * An allocation shared between two processes through PRIME: the first
 * creates and fills it and exports a dma-buf file descriptor; a second
 * process, which inherits that descriptor and opens its own DRM file,
 * imports it, sees the same bytes, writes its own, and the first sees
 * those. The allocation lives on while either holds it: the exporter frees
 * its handle first and the importer still reads it.
 */
#include <sys/wait.h>

#include <xf86drm.h>

#include <libpagoda.h>

#include "pagoda_test.h"

#define SIZE		(2u << 20)
#define WORDS		(SIZE / 4)

static unsigned int count_words(const uint32_t *p, uint32_t base)
{
	unsigned int i, good = 0;

	for (i = 0; i < WORDS; i++)
		good += p[i] == base + i;
	return good;
}

/*
 * The second process: import, check the exporter's bytes, write its own.
 * @buf_fd: the dma-buf, inherited; @to_parent, @from_parent: pipes.
 */
static int importer(int buf_fd, int to_parent, int from_parent)
{
	struct pagoda_dev dev;
	struct pagoda_bo bo = { .size = SIZE };
	uint32_t *p, i;
	char ack;
	int ret;

	if (pagoda_open(&dev))
		return 10;
	ret = drmPrimeFDToHandle(dev.fd, buf_fd, &bo.handle);
	close(buf_fd);
	if (ret)
		return 12;
	if (pagoda_bo_map(&dev, &bo))
		return 13;
	p = bo.map;
	if (count_words(p, 0x10000000) != WORDS)
		return 14;
	for (i = 0; i < WORDS; i++)
		p[i] = 0x20000000 + i;
	if (write(to_parent, "w", 1) != 1)	/* written */
		return 15;
	if (read(from_parent, &ack, 1) != 1)	/* the exporter freed its handle */
		return 16;
	if (count_words(p, 0x20000000) != WORDS)
		return 17;
	pagoda_bo_free(&dev, &bo);
	pagoda_close(&dev);
	return 0;
}

int main(void)
{
	struct pagoda_dev dev;
	struct pagoda_bo bo;
	struct pagoda_bo_desc desc = {
		.size = SIZE,
		.segments = DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_VRAM) |
			    DRM_PAGODA_SEGMENT_MASK(DRM_PAGODA_SEGMENT_SYSTEM),
		.preferred_segment = DRM_PAGODA_SEGMENT_VRAM,
	};
	int up[2], down[2], buf_fd, ret, status;
	uint32_t *p, i;
	char done;
	pid_t pid;

	ret = pagoda_open(&dev);
	if (!pt_check(!ret, "open the render node: %s", strerror(-ret)))
		return pt_exit();
	if (!pt_check(!pipe(up) && !pipe(down), "pipes"))
		return pt_exit();
	ret = pagoda_bo_create(&dev, &desc, &bo);
	if (!pt_check(!ret, "create 2 MiB: %s", strerror(-ret)) ||
	    !pt_check(!pagoda_bo_map(&dev, &bo), "map it"))
		return pt_exit();
	p = bo.map;
	for (i = 0; i < WORDS; i++)
		p[i] = 0x10000000 + i;

	ret = drmPrimeHandleToFD(dev.fd, bo.handle, DRM_RDWR, &buf_fd);
	if (!pt_check(!ret, "export as a dma-buf: %s", ret ? strerror(errno) : "done"))
		return pt_exit();

	pid = fork();
	if (!pid) {
		/* a process of its own: it drops the parent's DRM file */
		close(dev.fd);
		_exit(importer(buf_fd, up[1], down[0]));
	}
	close(buf_fd);
	if (pt_check(read(up[0], &done, 1) == 1, "the importer checked our bytes and wrote its own"))
		pt_check(count_words(p, 0x20000000) == WORDS,
			 "its writes show in our mapping");
	pagoda_bo_free(&dev, &bo);
	pt_check(write(down[1], "f", 1) == 1, "freed our handle first");
	status = -1;
	waitpid(pid, &status, 0);
	pt_check(WIFEXITED(status) && !WEXITSTATUS(status),
		 "the importer still read its bytes, then freed it (exit status %d)",
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	pagoda_close(&dev);
	return pt_exit();
}
