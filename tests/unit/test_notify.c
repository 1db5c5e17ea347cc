// SPDX-License-Identifier: GPL-2.0
/* rg_sd_notify (user/lib/notify.c) against a socket standing in for
 * systemd's: a path and an abstract name, with the sender's credentials
 * systemd checks; unset, relative and too long NOTIFY_SOCKETs. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "../../user/lib/notify.h"

/* A datagram socket bound to ADDR (a path, or '@' + an abstract name) that
 * receives its senders' credentials, as systemd's notify socket does. */
static int listen_at(const char *addr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(addr);
	int fd, on = 1;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, addr, len);
	if (addr[0] == '@')
		sa.sun_path[0] = 0;
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ||
	    bind(fd, (struct sockaddr *)&sa,
		 offsetof(struct sockaddr_un, sun_path) + len + (addr[0] == '/'))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The one datagram waiting on FD into BUF; its sender's pid in *PID. */
static int recv_one(int fd, char *buf, size_t size, pid_t *pid)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = size - 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	n = recvmsg(fd, &msg, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	*pid = 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			*pid = cred.pid;
		}
	return (int)n;
}

static void test_delivered(const char *addr, const char *state)
{
	char buf[256];
	pid_t pid;
	int fd, ret, n;

	fd = listen_at(addr);
	CHECK(fd >= 0, "cannot bind %s: %s", addr, strerror(errno));
	if (fd < 0)
		return;
	setenv("NOTIFY_SOCKET", addr, 1);
	ret = rg_sd_notify(state);
	CHECK(ret == 1, "%s: rg_sd_notify returned %d (%s)", addr, ret,
	      ret < 0 ? strerror(-ret) : "not sent");
	n = recv_one(fd, buf, sizeof(buf), &pid);
	CHECK(n == (int)strlen(state) && !strcmp(buf, state),
	      "%s: received %d bytes '%s', want '%s'", addr, n, n > 0 ? buf : "", state);
	CHECK(pid == getpid(), "%s: sender pid %d, want %d", addr, (int)pid, (int)getpid());
	n = recv_one(fd, buf, sizeof(buf), &pid);
	CHECK(n == -EAGAIN, "%s: a second datagram (%d)", addr, n);
	close(fd);
}

int main(void)
{
	char dir[] = "/tmp/rowgate-test-notify.XXXXXX", path[128], abstract[64],
	     long_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 2];
	int ret;

	unsetenv("NOTIFY_SOCKET");
	CHECK(rg_sd_notify("READY=1") == 0, "unset NOTIFY_SOCKET: nothing to send");
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK(rg_sd_notify("READY=1") == 0, "empty NOTIFY_SOCKET: nothing to send");

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/notify", dir);
	test_delivered(path, "READY=1");
	unlink(path);
	test_delivered(path, "STOPPING=1\nSTATUS=stopping");
	unlink(path);
	snprintf(abstract, sizeof(abstract), "@rowgate/test-notify/%d", (int)getpid());
	test_delivered(abstract, "READY=1");

	/* nobody listening: an error, never a block or a crash */
	setenv("NOTIFY_SOCKET", path, 1);
	ret = rg_sd_notify("READY=1");
	CHECK(ret == -ENOENT || ret == -ECONNREFUSED, "no socket at %s: got %d", path, ret);
	rmdir(dir);

	setenv("NOTIFY_SOCKET", "run/notify", 1);
	CHECK(rg_sd_notify("READY=1") == -EAFNOSUPPORT, "relative NOTIFY_SOCKET refused");
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	CHECK(rg_sd_notify("READY=1") == -EAFNOSUPPORT, "vsock NOTIFY_SOCKET refused");
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = 0;
	setenv("NOTIFY_SOCKET", long_path, 1);
	CHECK(rg_sd_notify("READY=1") == -ENAMETOOLONG, "path longer than sun_path refused");
	return check_report("test_notify");
}
