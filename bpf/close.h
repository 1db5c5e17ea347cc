/* SPDX-License-Identifier: GPL-2.0 */
/* The close queue: connections no BPF helper of 6.1 can close, queued for
 * rowgated to reset with SOCK_DESTROY (user/rowgated/h2_close.c): HTTP/2
 * connections ended with a GOAWAY (bpf/h2/verdict.h) and, under --conns-full
 * fail-closed, connections the full table refused (bpf/guard.h).
 */
#ifndef ROWGATE_BPF_CLOSE_H
#define ROWGATE_BPF_CLOSE_H

#include "base.h"
#include "rowgate/abi.h"

/* h2_goaway: connections closed with GOAWAY, or refused by the full table,
 * for rowgated to reset */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, RG_H2_GOAWAY_QUEUE);
	__type(value, struct rg_h2_goaway);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_GOAWAY SEC(".maps");

/* The close queue's record of a socket from a context that carries its
 * addresses: __sk_buff and bpf_sock_ops name them alike (ports: local in
 * host order, remote in network order in the upper half).  A macro: each
 * access must stay a load from the context itself. */
#define rg_close_event_fill(ev, ctx)                                      \
	do {                                                              \
		(ev)->family = (ctx)->family;                             \
		(ev)->local_port = (__u16)(ctx)->local_port;              \
		(ev)->remote_port = (__u16)bpf_ntohl((ctx)->remote_port); \
		if ((ev)->family == AF_INET6) {                           \
			(ev)->local_ip[0] = (ctx)->local_ip6[0];          \
			(ev)->local_ip[1] = (ctx)->local_ip6[1];          \
			(ev)->local_ip[2] = (ctx)->local_ip6[2];          \
			(ev)->local_ip[3] = (ctx)->local_ip6[3];          \
			(ev)->remote_ip[0] = (ctx)->remote_ip6[0];        \
			(ev)->remote_ip[1] = (ctx)->remote_ip6[1];        \
			(ev)->remote_ip[2] = (ctx)->remote_ip6[2];        \
			(ev)->remote_ip[3] = (ctx)->remote_ip6[3];        \
		} else {                                                  \
			(ev)->local_ip[0] = (ctx)->local_ip4;             \
			(ev)->remote_ip[0] = (ctx)->remote_ip4;           \
		}                                                         \
	} while (0)

#endif /* ROWGATE_BPF_CLOSE_H */
