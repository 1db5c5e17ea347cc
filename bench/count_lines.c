// SPDX-License-Identifier: GPL-2.0
/* The userspace yardstick of figure 3: count the rows (newlines) of a file
 * with memchr, the practical limit of a byte search on this CPU.  The file
 * is read into memory first; only the count is timed, REPEATS times.
 *
 *   count_lines FILE [REPEATS]
 *   -> lines=N bytes=B median_ns=T min_ns=T gbps_median=G
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COUNT_REPEATS_DEFAULT 9

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static size_t count_lines(const char *p, size_t n)
{
	const char *end = p + n;
	size_t lines = 0;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		lines++;
		p++;
	}
	return lines;
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int repeats = argc > 2 ? atoi(argv[2]) : COUNT_REPEATS_DEFAULT;
	unsigned long long *t;
	size_t lines = 0, off = 0;
	struct stat st;
	char *buf;
	int fd, i;

	if (argc < 2 || repeats < 1) {
		fprintf(stderr, "usage: %s FILE [REPEATS]\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	buf = malloc((size_t)st.st_size + 1);
	t = calloc((size_t)repeats, sizeof(*t));
	if (!buf || !t) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);

		if (r <= 0) {
			fprintf(stderr, "%s: short read\n", argv[1]);
			return 1;
		}
		off += (size_t)r;
	}
	close(fd);
	for (i = 0; i < repeats; i++) {
		unsigned long long t0 = now_ns();

		lines = count_lines(buf, off);
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)repeats, sizeof(*t), cmp_ull);
	printf("lines=%zu bytes=%zu median_ns=%llu min_ns=%llu gbps_median=%.3f\n", lines, off,
	       t[repeats / 2], t[0], (double)off / (double)t[repeats / 2]);
	free(buf);
	free(t);
	return 0;
}
