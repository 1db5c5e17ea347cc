/* SPDX-License-Identifier: GPL-2.0 */
/* Maps of enforcement continuity (rowgate/guard.h): what rowgated attached,
 * the adoption of connections that predate a start, and the counters of
 * adoption and of the connection-table policy. */
#ifndef ROWGATE_BPF_GUARD_H
#define ROWGATE_BPF_GUARD_H

#include "base.h"
#include "maps.h"
#include "close.h"
#include "conn.h"
#include "rowgate/abi.h"
#include "rowgate/guard.h"

/* guard: [0] -> the cgroup and policy rowgated attached with */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_guard);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_GUARD SEC(".maps");

/* guard_stats: [0] -> adoption and connection-table counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_guard_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_GUARD_STATS SEC(".maps");

/* adopting: socket cookie -> adoption state, until a request boundary */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_adopt);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_ADOPT SEC(".maps");

#define rg_guard_add(field, n) rg_stats_add(RG_MAP_GUARD_STATS, struct rg_guard_stats, field, n)

#define RG_REQ_LINE_PEEK 9 /* "OPTIONS /": the longest method, a space, a slash */

/* The skb begins with a request line: an upper-case method of 3 to 7
 * letters, a space, then '/' (origin form) or 'h' (absolute form). */
static __always_inline int rg_starts_request(struct __sk_buff *skb)
{
	__u8 b[RG_REQ_LINE_PEEK];
	int i;

	if (skb->len < RG_REQ_LINE_PEEK || bpf_skb_load_bytes(skb, 0, b, RG_REQ_LINE_PEEK))
		return 0;
#pragma unroll
	for (i = 0; i < RG_REQ_LINE_PEEK - 1; i++) {
		if (b[i] >= 'A' && b[i] <= 'Z')
			continue;
		return i >= 3 && b[i] == ' ' && (b[i + 1] == '/' || b[i + 1] == 'h');
	}
	return 0;
}

/* --adopt-grace in ns (0: off; docs/design.md#adoption) */
const volatile __u64 rg_adopt_grace_ns = 0;

/*
 * An adopted connection whose client, --adopt-grace after its adoption,
 * still sends bytes that start no request where a request would begin
 * (the server answered since the client's last bytes) cannot be read: an
 * HTTP/2 connection, whose streams and HPACK table began before rowgated,
 * or a request exchange that began before the start and goes on after an
 * answer (Expect: 100-continue).  An idle HTTP/1 connection is never
 * overdue: its first bytes after the grace pass (the boundary may be
 * unprovable) and its next request synchronises it.  Fail closed: it is
 * queued for rowgated to reset, like a connection the full table refused
 * (at_ns 0; rowgated tells the two apart by the adopting entry, kept
 * until the socket is gone), and the caller drops its bytes from now on
 * (RG_MODE_CLOSING).  Its client reconnects and is enforced from its first
 * byte.  A port that lets unparsed bytes pass goes on passing.
 */
__noinline int rg_adopt_overdue(struct __sk_buff *skb, __u64 cookie, __u64 adopted_ns)
{
	struct rg_h2_goaway ev = { .cookie = cookie };
	__u32 port = skb->local_port;
	struct rg_port *pv;

	if (!rg_adopt_grace_ns || bpf_ktime_get_ns() - adopted_ns < rg_adopt_grace_ns)
		return 0;
	pv = bpf_map_lookup_elem(&RG_MAP_PORTS, &port);
	if (!pv || (pv->flags & RG_PORT_ALLOW_UNPARSED))
		return 0;
	rg_close_event_fill(&ev, skb);
	/* the queue full: the next skb asks again */
	return bpf_map_push_elem(&RG_MAP_H2_GOAWAY, &ev, 0) == 0;
}

/*
 * The verdict's hook for a connection it has not started: 1 while it is
 * being adopted and must pass untouched (rg_adopt).  write_seq is the
 * server's, now.  Once adopted, the server's timer counts from its last
 * send before adoption, or from the last bytes passed while held
 * (docs/server-profiles.md#server-timeouts).  A global function: inlined,
 * its branches grew the verdict's verified states by a third.
 */
__noinline int rg_adopt_hold(struct __sk_buff *skb, __u64 cookie, __u64 write_seq,
			     struct rg_conn *c)
{
	struct rg_adopt *a = bpf_map_lookup_elem(&RG_MAP_ADOPT, &cookie);
	struct rg_guard_stats *g;
	__u32 zero = 0;
	__u64 took;

	if (!a || !c || c->mode == RG_MODE_CLOSING)
		return 0; /* closing: dropped until rowgated resets it */
	if (a->at_boundary || (a->seq_known && a->write_seq != write_seq)) {
		if (rg_starts_request(skb)) {
			took = bpf_ktime_get_ns() - a->adopted_ns;
			/* either the server had answered everything it received
			 * when it was adopted, or it answered the bytes passed
			 * while held: it waits for the next request on its idle
			 * timer */
			c->server_timer = RG_TIMER_IDLE;
			c->timer_from_ns = a->timer_from_ns;
			bpf_map_delete_elem(&RG_MAP_ADOPT, &cookie);
			g = bpf_map_lookup_elem(&RG_MAP_GUARD_STATS, &zero);
			if (g) {
				__sync_fetch_and_add(&g->adopt_synced, 1);
				__sync_fetch_and_add(&g->adopt_sync_ns_total, took);
				if (took > g->adopt_sync_ns_max)
					g->adopt_sync_ns_max = took; /* racy, good enough */
			}
			return 0;
		}
		/* the server answered, and what follows is no request */
		if (rg_adopt_overdue(skb, cookie, a->adopted_ns)) {
			c->mode = RG_MODE_CLOSING;
			return 0;
		}
	}
	a->write_seq = write_seq;
	a->seq_known = 1;
	a->at_boundary = 0;
	a->timer_from_ns = bpf_ktime_get_ns();
	rg_guard_add(adopt_passed_bytes, skb->len);
	return 1;
}

/* --conns-full: 0 = fail-open (an untracked connection passes, counted),
 * 1 = fail-closed (rg_refuse drops its data, rowgated resets it). */
const volatile __u32 rg_conns_full_close = 0;

/*
 * A connection the full table refused gets none of its data to the server
 * (rg_refuse), but no BPF helper of 6.1 can close it: without more, its
 * client would wait for its own timeout.  It is queued for rowgated, which
 * resets it at once with SOCK_DESTROY (h2_close.c; at_ns 0 marks it).
 */
static __always_inline void rg_conn_untracked(struct bpf_sock_ops *skops, __u64 cookie)
{
	struct rg_h2_goaway ev = { .cookie = cookie };

	if (!rg_conns_full_close) {
		rg_global_inc(conns_untracked);
		return;
	}
	rg_guard_add(conns_refused, 1);
	rg_close_event_fill(&ev, skops);
	bpf_map_push_elem(&RG_MAP_H2_GOAWAY, &ev, 0);
}

#endif /* ROWGATE_BPF_GUARD_H */
