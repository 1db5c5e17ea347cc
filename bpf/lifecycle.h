/* SPDX-License-Identifier: GPL-2.0 */
/* A guarded connection's life in the kernel, the one place its state is
 * created and torn down: at PASSIVE_ESTABLISHED, rg_conn (conns) and the
 * sockhash entry that runs the verdict; at TCP_CLOSE, rg_conn and the
 * HTTP/2 state the verdict (h2_conns, h2_parked, h2_cdb) and egress (h2_out) created
 * on the way.  The HTTP/2 verdict allocates its state lazily
 * (bpf/h2/state.h), egress its own (bpf/h2/egress.h); neither frees it.
 * Connections that predate a start are rowgated's: adoption
 * (user/rowgated/adopt.c) creates their rg_conn and sockhash entry, and
 * deletes the entries of sockets gone before they closed here.
 */
#ifndef ROWGATE_BPF_LIFECYCLE_H
#define ROWGATE_BPF_LIFECYCLE_H

#include "base.h"
#include "maps.h"
#include "conn.h"
#include "copy.h"
#include "egress.h"
#include "guard.h"
#include "h2/egress.h"
#include "h2/state.h"
#include "h2/park.h"

/* An accepted connection on a guarded port: its rg_conn from the template,
 * its port's profile, and the sockhash entry.  A connection that cannot be
 * tracked is left to rg_conn_untracked (--conns-full).  Returns the state,
 * or NULL when the connection is not followed. */
static __always_inline struct rg_conn *rg_conn_open(struct bpf_sock_ops *skops)
{
	__u32 port = skops->local_port, zero = 0;
	struct rg_conn *tmpl, *c;
	struct rg_port *pv;
	__u64 cookie;

	pv = bpf_map_lookup_elem(&RG_MAP_PORTS, &port);
	if (!pv)
		return NULL;
	cookie = bpf_get_socket_cookie(skops);
	tmpl = bpf_map_lookup_elem(&conn_zero, &zero);
	if (!tmpl)
		return NULL;
	if (bpf_map_update_elem(&RG_MAP_CONNS, &cookie, tmpl, BPF_NOEXIST)) {
		rg_conn_untracked(skops, cookie);
		return NULL;
	}
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (c) {
		c->profile = pv->profile;
		c->port_flags = pv->flags;
		c->header_timeout_s = pv->header_timeout_s;
		c->idle_timeout_s = pv->idle_timeout_s;
		/* the server's header timer runs from about now */
		c->server_timer = RG_TIMER_HEADER;
		c->timer_from_ns = bpf_ktime_get_ns();
		/* egress follows it from the server's first byte */
		c->eg.armed = rg_egress_on;
	}
	if (!c || bpf_sock_hash_update(skops, &RG_MAP_SOCKHASH, &cookie, BPF_NOEXIST)) {
		bpf_map_delete_elem(&RG_MAP_CONNS, &cookie);
		rg_conn_untracked(skops, cookie);
		return NULL;
	}
	return c;
}

/* The connection closed (TCP_CLOSE): every entry keyed by its cookie goes. */
static __always_inline void rg_conn_close(struct bpf_sock_ops *skops)
{
	__u64 cookie = bpf_get_socket_cookie(skops);
	struct rg_conn *c;

	/* only the HTTP/2 verdict creates HTTP/2 state, once h2 is set, and
	 * egress on a --grpc port: a lookup is cheaper than two deletes */
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (c)
		rg_copy_aborted(c, cookie);
	/* the verdict runs only once the server accepted; data queued before
	 * a reset is still read by the server */
	if (c && !c->started && skops->bytes_received)
		rg_global_inc(closed_unseen);
	if (!c || c->h2 || (c->port_flags & RG_PORT_GRPC)) {
		rg_h2_unpark_all(cookie);
		bpf_map_delete_elem(&RG_MAP_H2_CONNS, &cookie);
		bpf_map_delete_elem(&RG_MAP_H2_OUT, &cookie);
		bpf_map_delete_elem(&RG_MAP_H2_CDB, &cookie);
	}
	if (c && c->stash_held)
		bpf_map_delete_elem(&RG_MAP_STASH, &cookie);
	bpf_map_delete_elem(&RG_MAP_CONNS, &cookie);
}

#endif /* ROWGATE_BPF_LIFECYCLE_H */
