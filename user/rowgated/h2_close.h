/* SPDX-License-Identifier: GPL-2.0 */
/* Resetting the HTTP/2 connections the kernel closed with GOAWAY, once the
 * client had --grpc-close-grace to read it (docs/grpc.md#h2-close), and at
 * once the connections a full table refused (--conns-full=fail-closed). */
#ifndef ROWGATE_USER_ROWGATED_H2_CLOSE_H
#define ROWGATE_USER_ROWGATED_H2_CLOSE_H

#include <linux/types.h>

struct rg_h2_closer;
struct rg_h2_close_stats;

/* queue_fd: the h2_goaway queue map; adopt_fd: the adopting map (tells
 * overdue adopted connections from refused ones); grace_ms 0: reset no GOAWAY'd
 * connection (refused ones still); cgroup: the guarded cgroup, whose processes' network namespaces
 * are searched for a socket not in rowgated's own.  0 or negative errno. */
int rg_h2_closer_new(int queue_fd, int adopt_fd, unsigned int grace_ms, const char *cgroup,
		     struct rg_h2_closer **out);
void rg_h2_closer_free(struct rg_h2_closer *c);

/* Take what the kernel queued, reset what is due.  Returns the ms until the
 * next is due, or -1 when nothing waits. */
int rg_h2_closer_tick(struct rg_h2_closer *c, __u64 now_ns);

/* --conns-full=fail-closed, at attach: the established connections on the
 * guarded ports (in rowgated's network namespace) the table does not hold
 * are queued to be reset at the next tick, as a full table's refusals are:
 * rg_refuse drops their data, and no sockops event will come for them
 * (accepted before sockops was attached and not adopted: in the accept
 * queue, or their server's fds out of reach).  Returns how many, or a
 * negative errno. */
int rg_h2_closer_sweep(struct rg_h2_closer *c, int conns_fd, __u32 conn_value_size,
		       const __u32 *ports, int nports);

/* Safe from another thread (the /metrics one). */
void rg_h2_closer_stats(const struct rg_h2_closer *c, struct rg_h2_close_stats *out);

#endif /* ROWGATE_USER_ROWGATED_H2_CLOSE_H */
