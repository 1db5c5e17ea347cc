// SPDX-License-Identifier: MIT
/* Adoption of established connections; see adopt.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "rowgate/guard.h"
#include "../lib/clock.h"
#include "adopt.h"
#include "../lib/log.h"

#define RG_ADOPT_DEPTH_MAX 16 /* cgroup levels below the guarded one */

struct seen {
	unsigned long *inodes;
	size_t n, cap;
};

static bool seen_add(struct seen *s, unsigned long ino)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->inodes[i] == ino)
			return false;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		unsigned long *p = realloc(s->inodes, cap * sizeof(*p));

		if (!p)
			return false;
		s->inodes = p;
		s->cap = cap;
	}
	s->inodes[s->n++] = ino;
	return true;
}

bool rg_port_guarded(const __u32 *ports, int nports, __u32 port)
{
	for (int i = 0; i < nports; i++)
		if (ports[i] == port)
			return true;
	return false;
}

static __u32 local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* One socket of the server, as our own fd. */
static void adopt_fd(int fd, const __u32 *ports, int nports, const struct rg_adopt_maps *m,
		     void *zero_conn, struct rg_adopt_result *res)
{
	int proto = 0, listening = 0, unread = 0;
	socklen_t len = sizeof(int);
	struct tcp_info ti = {};
	struct rg_adopt a = {};
	__u64 cookie = 0, value = (__u64)fd;
	socklen_t tlen = sizeof(ti), clen = sizeof(cookie);

	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) || proto != IPPROTO_TCP)
		return;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) || listening)
		return;
	if (!rg_port_guarded(ports, nports, local_port(fd)))
		return;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) || ti.tcpi_state != TCP_ESTABLISHED)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &clen))
		return;
	if (bpf_map_lookup_elem(m->conns_fd, &cookie, zero_conn) == 0) {
		memset(zero_conn, 0, m->conn_value_size);
		res->tracked++; /* sockops saw it, or an earlier start did */
		return;
	}
	/* between requests: nothing unread, and the server wrote after the
	 * last bytes it received (ms clocks: equal proves nothing) */
	ioctl(fd, FIONREAD, &unread);
	a.at_boundary = unread == 0 && ti.tcpi_last_data_sent < ti.tcpi_last_data_recv;
	a.adopted_ns = rg_monotonic_ns();
	/* the server's timer runs since its last send, or the establishment */
	a.timer_from_ns = a.adopted_ns - (__u64)ti.tcpi_last_data_sent * 1000000;
	if (a.timer_from_ns > a.adopted_ns)
		a.timer_from_ns = 0;
	if (bpf_map_update_elem(m->conns_fd, &cookie, zero_conn, BPF_NOEXIST)) {
		res->failed++;
		return;
	}
	if (bpf_map_update_elem(m->adopt_fd, &cookie, &a, BPF_ANY) ||
	    bpf_map_update_elem(m->sockhash_fd, &cookie, &value, BPF_NOEXIST)) {
		pr_debug("cannot adopt connection %llu: %s", (unsigned long long)cookie,
			 strerror(errno));
		bpf_map_delete_elem(m->adopt_fd, &cookie);
		bpf_map_delete_elem(m->conns_fd, &cookie);
		res->failed++;
		return;
	}
	/* bytes that arrived meanwhile went past the verdict: not a boundary */
	if (a.at_boundary && ioctl(fd, FIONREAD, &unread) == 0 && unread) {
		a.at_boundary = 0;
		bpf_map_update_elem(m->adopt_fd, &cookie, &a, BPF_EXIST);
	}
	res->adopted++;
	res->at_boundary += a.at_boundary;
}

static void adopt_pid(pid_t pid, const __u32 *ports, int nports, const struct rg_adopt_maps *m,
		      void *zero_conn, struct seen *seen, struct rg_adopt_result *res)
{
	char dir[64], link[PATH_MAX], target[64];
	struct dirent *de;
	int pidfd;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		closedir(d);
		return;
	}
	while ((de = readdir(d))) {
		unsigned long ino;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (sscanf(target, "socket:[%lu]", &ino) != 1 || !seen_add(seen, ino))
			continue;
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(de->d_name), 0);
		if (fd < 0) {
			if (errno != EBADF) /* EBADF: closed meanwhile */
				res->unreadable++;
			pr_debug("pidfd_getfd %d/%s: %s", (int)pid, de->d_name, strerror(errno));
			continue;
		}
		adopt_fd(fd, ports, nports, m, zero_conn, res);
		close(fd);
	}
	close(pidfd);
	closedir(d);
}

static void adopt_cgroup(const char *path, int depth, const __u32 *ports, int nports,
			 const struct rg_adopt_maps *m, void *zero_conn, struct seen *seen,
			 struct rg_adopt_result *res)
{
	char file[PATH_MAX];
	struct dirent *de;
	FILE *f;
	DIR *d;
	int pid;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	f = fopen(file, "r");
	if (f) {
		while (fscanf(f, "%d", &pid) == 1)
			adopt_pid(pid, ports, nports, m, zero_conn, seen, res);
		fclose(f);
	}
	if (depth == RG_ADOPT_DEPTH_MAX)
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		adopt_cgroup(file, depth + 1, ports, nports, m, zero_conn, seen, res);
	}
	closedir(d);
}

int rg_adopt_existing(const char *cgroup, const __u32 *ports, int nports,
		      const struct rg_adopt_maps *m, struct rg_adopt_result *res)
{
	struct seen seen = {};
	void *zero_conn = calloc(1, m->conn_value_size);

	memset(res, 0, sizeof(*res));
	if (!zero_conn)
		return -ENOMEM;
	adopt_cgroup(cgroup, 0, ports, nports, m, zero_conn, &seen, res);
	free(seen.inodes);
	free(zero_conn);
	return 0;
}

/* Cookies missing from the sockhash at the previous pass. */
static __u64 *gc_suspects;
static size_t gc_nsuspects;

static bool was_suspect(__u64 cookie)
{
	for (size_t i = 0; i < gc_nsuspects; i++)
		if (gc_suspects[i] == cookie)
			return true;
	return false;
}

static int push(__u64 **v, size_t *n, size_t *cap, __u64 x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		__u64 *p = realloc(*v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static void gc_map(int fd, int sockhash_fd, __u64 **next, size_t *nnext, size_t *cap)
{
	__u64 key, nk, sockval, *gone = NULL;
	size_t ngone = 0, gcap = 0;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &key, &nk) == 0) {
		key = nk;
		first = false;
		if (bpf_map_lookup_elem(sockhash_fd, &key, &sockval) == 0 || errno != ENOENT)
			continue;
		if (was_suspect(key))
			push(&gone, &ngone, &gcap, key);
		else
			push(next, nnext, cap, key);
	}
	for (size_t i = 0; i < ngone; i++)
		bpf_map_delete_elem(fd, &gone[i]);
	free(gone);
}

void rg_adopt_gc(const struct rg_adopt_maps *m)
{
	__u64 *next = NULL;
	size_t nnext = 0, cap = 0;

	gc_map(m->adopt_fd, m->sockhash_fd, &next, &nnext, &cap);
	gc_map(m->conns_fd, m->sockhash_fd, &next, &nnext, &cap);
	gc_map(m->stash_fd, m->sockhash_fd, &next, &nnext, &cap);
	free(gc_suspects);
	gc_suspects = next;
	gc_nsuspects = nnext;
}
