// SPDX-License-Identifier: GPL-2.0
/* See io.h.  No dependencies: rg-count links this file alone. */
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io.h"

int rg_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	bool is_socket = true;

	while (len) {
		/* send() is what carries MSG_NOSIGNAL; ENOTSOCK tells a file or
		 * pipe, which write() takes instead */
		ssize_t n = is_socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOTSOCK && is_socket) {
				is_socket = false;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
