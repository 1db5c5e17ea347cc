/* SPDX-License-Identifier: GPL-2.0 */
/* Writing a whole buffer to a descriptor, for the admin socket, the state
 * file and rg-count's standard output alike. */
#ifndef ROWGATE_USER_LIB_IO_H
#define ROWGATE_USER_LIB_IO_H

#include <stddef.h>

/* Write all len bytes of buf to fd, a socket or any other descriptor,
 * through short writes and EINTR.  A socket is written with MSG_NOSIGNAL:
 * rowgated does not ignore SIGPIPE, and a client that hangs up must cost it
 * an EPIPE, not its life.  Returns 0 or a negative errno. */
int rg_write_all(int fd, const void *buf, size_t len);

#endif /* ROWGATE_USER_LIB_IO_H */
