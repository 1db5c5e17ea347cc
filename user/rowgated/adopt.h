/* SPDX-License-Identifier: GPL-2.0 */
/* Adoption of the connections that predate a start (or a re-attach): the
 * established TCP connections on guarded ports of the processes in the
 * guarded cgroup are put in the connection table and the sockhash, marked
 * as adopting (rowgate/guard.h), so they are limited too.
 *
 * Done from userspace: on Linux 6.1 a BPF TCP iterator cannot insert into a
 * sockhash (its show callback holds the socket's spinlock through
 * lock_sock_fast() and the sockhash update takes it again: a self-deadlock,
 * fixed in 6.5 when the iterator moved to lock_sock()).  rowgated takes a
 * copy of each socket with pidfd_getfd() (5.6+) and inserts it by fd.
 */
#ifndef ROWGATE_USER_ROWGATED_ADOPT_H
#define ROWGATE_USER_ROWGATED_ADOPT_H

#include <stdbool.h>
#include <linux/types.h>

struct rg_adopt_maps {
	int conns_fd, sockhash_fd, adopt_fd;
	int stash_fd; /* swept with conns: an adopted socket has no close callback */
	__u32 conn_value_size;
};

struct rg_adopt_result {
	unsigned adopted;     /* new in the table, adopting */
	unsigned at_boundary; /* of which provably between requests already */
	unsigned tracked;     /* already in the table */
	unsigned failed;      /* could not be inserted (table full, closed) */
	unsigned unreadable;  /* sockets pidfd_getfd() refused (EPERM: ptrace
			       * restrictions such as yama ptrace_scope 3) */
};

/* Adopt what the processes of cgroup (and its descendants) hold on ports. */
int rg_adopt_existing(const char *cgroup, const __u32 *ports, int nports,
		      const struct rg_adopt_maps *m, struct rg_adopt_result *res);

/* Connections adopted without a close callback leave state behind: drop
 * table and adopting entries whose socket left the sockhash, once seen
 * twice (a new connection is in the table a moment before the sockhash). */
void rg_adopt_gc(const struct rg_adopt_maps *m);

/* Whether port is one of the guarded ports. */
bool rg_port_guarded(const __u32 *ports, int nports, __u32 port);

#endif /* ROWGATE_USER_ROWGATED_ADOPT_H */
