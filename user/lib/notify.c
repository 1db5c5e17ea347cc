// SPDX-License-Identifier: GPL-2.0
/* sd_notify(3) by hand; see notify.h.  Linking libsystemd for one datagram
 * would add a dependency to every build and to hosts without systemd. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int rg_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len, state_len = strlen(state);
	socklen_t sa_len;
	ssize_t n;
	int fd, err = 0;

	if (!path || !path[0])
		return 0;
	len = strlen(path);
	/* systemd sends a path or an abstract name; anything else (vsock:) is
	 * not for a host daemon */
	if (path[0] != '/' && path[0] != '@')
		return -EAFNOSUPPORT;
	if (len > sizeof(sa.sun_path) || (path[0] == '/' && len == sizeof(sa.sun_path)))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = 0; /* the name is the bytes after it, no NUL */
	sa_len = offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/');

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, state, state_len, MSG_NOSIGNAL, (struct sockaddr *)&sa, sa_len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != state_len)
		err = -EMSGSIZE;
	close(fd);
	return err ? err : 1;
}
