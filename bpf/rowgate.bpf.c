// SPDX-License-Identifier: GPL-2.0
/* rowgate HTTP path: sockops puts accepted ingest sockets in a sockhash, the
 * sk_skb verdict runs a streaming HTTP/1.1 state machine per connection that
 * classifies each write by database, counts its rows and admits it or answers
 * 429 itself; getpeername hooks run the verdict for data that arrived before
 * accept() (docs/design.md#pre-accept-data).
 *
 * The programs only: the headers own the maps and the steps they use, and
 * each compiles alone (make headers-check).
 */
/* Lower layers first, as the headers include each other; the order also
 * keeps the .rodata variables where they were (rg_build_id, ...). */
#include "base.h"
#include "net.h"
#include "maps.h"
#include "conn.h"
#include "skb_edit.h"
#include "respond.h"
#include "copy.h"
/* before egress.h, which used to include them: the gRPC answer's .rodata
 * stays ahead of egress's variables */
#include "rowgate/http_resp.h"
#include "rowgate/h2/answer.h"
#include "egress.h"
#include "h2/stats.h"
#include "h2/egress.h"
#include "request.h"
#include "walk.h"
/* h2_goaway ahead of the HTTP/2 maps, as when bpf/h2.h included it */
#include "close.h"
#include "h2/state.h"
#include "h2/route.h"
#include "h2/copy.h"
#include "h2/judge.h"
#include "h2/refuse.h"
#include "h2/early.h"
#include "h2/verdict.h"
#include "h2/start.h"
#include "guard.h"
#include "lifecycle.h"
#include "tcp_rx.h"
#include "tcp_hdr.h"
#include "pre_accept.h"
#include "slot.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The server sends: follow its responses.  Runs under the sender's socket
 * lock, once per piece tcp_bpf_sendmsg builds (each byte once); data and
 * data_end cover only what bpf_msg_pull_data brought into view.  Its steps:
 * bpf/egress.h, and bpf/h2/egress.h for HTTP/2.
 */
SEC("sk_msg")
int rg_egress(struct sk_msg_md *msg)
{
	struct rg_msg_walk m = { .msg = msg };
	struct bpf_sock *sk = msg->sk;
	struct tcp_sock *tp;
	__u64 cookie;
	__u8 started;

	if (!sk)
		return SK_PASS;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return SK_PASS;
	/* sk_msg has no bpf_get_socket_cookie on 6.1: sockops made the
	 * cookie, read it from the socket */
	cookie = tp->inet_conn.icsk_inet.sk.__sk_common.skc_cookie.counter;
	m.cookie = cookie;
	m.conn = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!m.conn || !m.conn->eg.armed || m.conn->eg.lost)
		return SK_PASS;
	/* on a --grpc port the server may write its SETTINGS before the
	 * client's preface arrives; once it did (an h2_out entry), its
	 * writes are HTTP/2 whatever the verdict has recorded so far (an
	 * HTTP/1 server never writes first).  started is read before h2,
	 * which the verdict stores first */
	started = RG_READ_ONCE(m.conn->started);
	if (RG_READ_ONCE(m.conn->h2) ||
	    ((m.conn->port_flags & RG_PORT_GRPC) &&
	     (!started || bpf_map_lookup_elem(&RG_MAP_H2_OUT, &cookie))))
		return rg_h2_egress(msg, cookie);
	if (m.conn->eg.answered)
		return SK_DROP; /* after the 429 that closes: the server closes too */
	m.size = msg->size;
	bpf_loop(m.size < RG_MSG_MAX_STEPS ? m.size : RG_MSG_MAX_STEPS, rg_msg_cb, &m, 0);
	if (m.voided && m.conn) {
		switch (rg_egress_answer_voided(&m, m.conn)) {
		case RG_ANSWER_429:
			rg_global_inc(pipelined_answered_429);
			m.conn->eg.answered = 1;
			break;
		case RG_ANSWER_400:
			rg_global_inc(pipelined_answered_400);
			break;
		default:
			rg_global_inc(internal_errors);
			m.conn->eg.answered = 1;
			return SK_DROP;
		}
		return SK_PASS;
	}
	if (m.off < m.size && m.conn)
		rg_egress_lose(&m.conn->eg); /* bytes left unread: framing unknown */
	return SK_PASS;
}

/* The HTTP/2 verdict (bpf/h2/verdict.h): a program of its own, reached by a tail
 * call from rg_verdict through h2_slot. */
SEC("sk_skb")
int rg_h2_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct rg_h2_loop l = { .skb = skb };
	struct rg_h2_sock *st;
	struct rg_conn *c;
	int verdict, skip;

	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return SK_PASS;
	rg_stash_release(c, cookie);
	st = rg_h2_sock_get(cookie);
	if (!st) {
		/* no room for its state: it cannot be followed */
		rg_h2_stats_inc(h2_failclosed);
		return SK_DROP;
	}
	/* bytes held back from the last skb go first, whatever follows */
	skip = c->stash_len ? rg_h2_unstash(skb) : 0;
	if (st->closing)
		return SK_DROP;
	if (st->lost)
		return SK_PASS;
	l.out = rg_h2_out_get(&cookie);
	st->must_pass = rg_in_recvmsg(skb, c);
	if (st->must_pass)
		rg_h2_stats_inc(h2_recvmsg_skbs);
	st->win_len = 0;
	st->pos = 0;
	st->reject = 0;
	st->nops = 0;
	st->resets = 0;
	st->sid_passed = st->h.last_sid;
	st->cp_slot = -1;
	st->cookie = cookie;
	if (!st->peer.family)
		rg_h2_peer_fill(st, skb);
	l.st = st;
	if (skip < 0) {
		/* held bytes lost: the server's stream has a hole */
		rg_global_inc(internal_errors);
		st->err = RG_H2_ERR_PROTOCOL;
	} else {
		/* the held bytes were followed already */
		st->win_off = (__u32)skip;
		st->fh_off = skip && st->stash_whole ? 0 : ~0U;
		/* at most one iteration per byte (skips take fewer) */
		bpf_loop(skb->len, rg_h2_byte_cb, &l, 0);
		/* before the skb is cut or rewritten below */
		if (!st->err)
			rg_h2_copy_flush(skb, st);
	}
	if (st->cdb_wanted)
		rg_h2_cdb_make(st);
	if (st->h.unrouted_streams != st->unrouted_seen) {
		rg_h2_stats_add(h2_streams_unrouted, st->h.unrouted_streams - st->unrouted_seen);
		st->unrouted_seen = st->h.unrouted_streams;
	}
	if (!st->err && !st->reject && st->early_left) {
		/* an early-refused frame goes on in this skb: the rest of its
		 * head, its trigger bytes */
		int end = rg_h2_early_tail(skb, st, skip > 0 ? (__u32)skip : 0);

		if (end < 0) {
			rg_global_inc(internal_errors);
			st->err = RG_H2_ERR_PROTOCOL;
		} else if (end && st->early_sid) {
			int fb = rg_h2_early_push(st, l.out);

			if (fb) {
				rg_h2_count_fallback(fb);
				st->reject = 1;
			}
		}
	}
	if (rg_h2_keep && !st->err && !st->reject && !st->must_pass &&
	    rg_h2_early_decide(skb, st, l.out) &&
	    rg_h2_early_tail(skb, st, st->fh_off + RG_H2_EARLY_HEAD_BYTES) < 0) {
		rg_global_inc(internal_errors);
		st->err = RG_H2_ERR_PROTOCOL;
	}
	if (!st->err && !st->reject && rg_h2_keep && !st->must_pass && rg_h2_hold(skb, st))
		return SK_DROP;
	if (!st->err && !st->reject) {
		if (st->nops && rg_h2_apply_ops(skb, st)) {
			rg_global_inc(internal_errors);
			return SK_DROP;
		}
		return SK_PASS;
	}
	if (st->err == RG_H2_ERR_UNCOUNTED)
		rg_h2_stats_inc(h2_streams_uncounted);
	if (st->must_pass) {
		/* only a pass sticks here: the rest passes, unfollowed */
		st->lost = 1;
		if (l.out)
			l.out->closing = 1; /* its SETTINGS are not counted any more */
		rg_h2_stats_inc(h2_failclosed);
		rg_h2_stats_set(h2_failclosed_err, (__u64)-st->err);
		return SK_PASS;
	}
	if (st->reject) {
		rg_h2_stats_inc(h2_reject_closed);
	} else {
		rg_h2_stats_inc(h2_failclosed);
		rg_h2_stats_set(h2_failclosed_err, (__u64)-st->err);
	}
	st->closing = 1;
	if (l.out)
		l.out->closing = 1; /* egress stops following the server's frames */
	rg_h2_queue_close(skb, cookie);
	if (rg_h2_goaway(skb, st)) {
		rg_global_inc(internal_errors);
		return SK_DROP;
	}
	verdict = bpf_sk_redirect_hash(skb, &RG_MAP_SOCKHASH, &cookie, 0);
	return verdict;
}

/* The first skb of a connection: an adopted connection was made without
 * sockops, so it takes its port's profile here; then its first request. */
RG_INLINE void rg_conn_first_skb(struct __sk_buff *skb, struct rg_conn *c)
{
	__u32 port = skb->local_port;
	struct rg_port *pv = bpf_map_lookup_elem(&RG_MAP_PORTS, &port);

	if (pv) {
		c->profile = pv->profile;
		c->port_flags = pv->flags;
		c->header_timeout_s = pv->header_timeout_s;
		c->idle_timeout_s = pv->idle_timeout_s;
	}
	rg_request_reset(c);
}

/* A rejected body is dropped, but up to the reserve is withheld so the
 * final skb can carry a full-size 429. */
RG_INLINE void rg_reject_withhold(struct __sk_buff *skb, struct rg_conn *c, __u32 len)
{
	__u32 hold = 0;

	if (c->uncharged < RG_RESERVE_BYTES) {
		hold = RG_RESERVE_BYTES - c->uncharged;
		if (hold > len)
			hold = len;
		if (hold && bpf_skb_adjust_room(skb, -(__s32)hold, 0, 0) == 0)
			c->uncharged += hold;
	}
}

SEC("sk_skb")
int rg_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct rg_loop l = { .skb = skb };
	struct rg_walk *w;
	struct rg_conn *c;
	__u32 len = skb->len;
	struct rg_scratch_cpu *cpu;
	int verdict = SK_PASS, slot;

	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return SK_PASS;
	/* 6.1's tcp_read_skb hands the verdict a FIN as an empty skb: no
	 * bytes, and it must not start the connection (a client that closes
	 * before its preface would make the server's HTTP/2 look HTTP/1) */
	if (!len)
		return SK_PASS;
	rg_rx_trim(skb, c);
	len = skb->len;
	c->verdict_build = (__u8)rg_build_id; /* after an upgrade: which verdict runs */
	if (c->h2)
		goto h2; /* rg_h2_verdict gives back its own stash entry */
	/* a stash emptied without a write-back (a refused or answered head)
	 * goes back at the next skb (or at close) */
	rg_stash_release(c, cookie);
	if (c->mode == RG_MODE_PASSTHROUGH)
		return SK_PASS;
	if (!c->started && rg_adopt_hold(skb, cookie, rg_server_write_seq(skb), c))
		return SK_PASS; /* adopted mid-stream: no request boundary yet */
	if (c->mode == RG_MODE_CLOSING)
		return SK_DROP; /* after a close response nothing reaches the server */
	if (!c->started)
		rg_conn_first_skb(skb, c);
	/* h2 is stored before started: egress on another CPU that sees a
	 * started connection sees it is HTTP/2 (rg_egress) */
	if ((c->port_flags & RG_PORT_GRPC) && c->requests == 0 && c->phase == RG_PHASE_HEAD &&
	    !c->head_begun && !c->started) {
		int h2 = rg_h2_start(skb, c);

		if (h2 < 0)
			return SK_DROP; /* held: the preface's first bytes */
		len = skb->len;
		if (h2) {
			*(volatile __u8 *)&c->h2 = 1;
			*(volatile __u8 *)&c->started = 1;
			goto h2;
		}
	}
	if (!c->started)
		*(volatile __u8 *)&c->started = 1;
	l.conn = c;
	w = &c->w;
	__builtin_memset(w, 0, sizeof(*w));
	w->len = len;
	if (c->copy_body && c->phase != RG_PHASE_HEAD)
		w->body_open = 1; /* a copied body continues from offset 0 */
	w->must_pass = rg_in_recvmsg(skb, c);
	if (w->must_pass)
		rg_global_inc(recvmsg_failopen);

	/* the window the walk loads bytes into and the head parser's state:
	 * as when bytes cannot be loaded, the skb passes unread if no buffer
	 * is free */
	cpu = rg_scratch_cpu();
	slot = rg_scratch_claim(cpu);
	if (slot >= 0 && cpu) {
		struct rg_scratch *s = rg_scratch_of(cpu, slot);

		l.win = &s->win;
		l.head = &s->head;
		w->slot = (__u8)slot;
		/* a head the last run ended inside goes on where it stopped;
		 * if its state was lost, it cannot be read: fail closed */
		if (c->phase == RG_PHASE_HEAD && c->head_begun && rg_head_restore(skb, c, &s->head))
			rg_fail(c, w, RG_HEAD_ERR_MALFORMED);
		else
			bpf_loop((len + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_window_cb, &l,
				 0);
		rg_head_keep(skb, c, &s->head);
		rg_scratch_put(cpu, slot);
	} else {
		w->stop = 1;
		w->must_pass = 1;
	}
	/* the copy of a body that goes on in the next skb, before any rewrite */
	if (c->copy_body && w->body_open)
		rg_emit_body(skb, c, w->body_from, len);

	/* rows of a body still arriving are charged as they arrive; not when
	 * this skb turns into rowgate's answer: its bytes never reach the
	 * server */
	if (c->phase != RG_PHASE_HEAD && !w->respond &&
	    (c->verdict == RG_REQ_ADMIT || c->verdict == RG_REQ_UNENFORCED))
		rg_charge_arrived(skb, c);

	if (c->mode == RG_MODE_PASSTHROUGH)
		goto pass; /* not HTTP (first bytes only, nothing stashed) */
	if (c->mode == RG_MODE_CLOSING && !w->respond)
		goto pass; /* a voided request: the server answers and closes */

	if (w->respond) {
		if (w->must_pass)
			goto failopen;
		if (rg_respond(skb, c))
			goto failopen;
		verdict = bpf_sk_redirect_hash(skb, &RG_MAP_SOCKHASH, &cookie, 0);
		if (verdict == SK_PASS)
			rg_egress_kernel_answer(c, skb->len);
		return verdict;
	}

	if (c->verdict == RG_REQ_REJECT && c->phase != RG_PHASE_HEAD) {
		/* a rejected body */
		if (w->must_pass)
			goto failopen;
		rg_reject_withhold(skb, c, len);
		return SK_DROP;
	}

	if (c->phase == RG_PHASE_HEAD && c->head_begun) {
		/* an incomplete head at the end: hold it back until the rest
		 * arrives, so it can still be rejected */
		__u32 start = w->req_in_skb ? w->req_start : 0;

		if (w->must_pass || (start > 0 && c->stash_len > 0))
			goto unenforce_next;
		if (start == 0) {
			if (rg_stash_append(skb, c, 0, len))
				goto unenforce_next;
			if (bpf_skb_change_tail(skb, 0, 0)) {
				/* cannot shrink: pass what was stashed instead */
				c->stash_len -= len;
				c->uncharged -= len;
				goto unenforce_next;
			}
			rg_global_inc(heads_split);
			return SK_DROP;
		}
		if (len > RG_CHANGE_TAIL_MAX || rg_stash_append(skb, c, start, len - start))
			goto unenforce_next;
		if (bpf_skb_change_tail(skb, start, 0)) {
			c->stash_len -= len - start;
			c->uncharged -= len - start;
			goto unenforce_next;
		}
		rg_global_inc(heads_split);
		/* the requests before it pass; the fragment just stashed waits
		 * for the skb that completes its head */
		return SK_PASS;
	}
	goto pass;

unenforce_next:
	/* the held-back part passes now; its request cannot be refused */
	c->force_unenforced = 1;
	goto pass;
failopen:
	rg_global_inc(internal_errors);
	if (c->verdict == RG_REQ_REJECT)
		c->verdict = RG_REQ_UNENFORCED;
pass:
	if (c->stash_len && rg_unstash(skb, c)) {
		rg_global_inc(internal_errors);
		c->stash_len = 0;
	}
	rg_stash_release(c, cookie);
	return verdict;
h2:
	bpf_tail_call(skb, &RG_MAP_H2_SLOT, RG_VERDICT_SLOT);
	/* the slot is empty: not followed, so nothing reaches the server */
	rg_h2_stats_inc(h2_failclosed);
	return SK_DROP;
}

/*
 * The program attached to the sockhash, identical in every build: open
 * connections keep the program they were accepted with, so it only jumps to
 * the slot rowgated fills (docs/design.md#verdict-slot).  No subprogram
 * calls: on 6.1 they would cap the stack of a program that tail-calls.  An
 * empty slot passes the segment, counted; it never drops.
 */
SEC("sk_skb")
int rg_entry(struct __sk_buff *skb)
{
	struct rg_verdict_stats *s;
	__u32 zero = 0;

	bpf_tail_call(skb, &RG_MAP_VERDICT_SLOT, RG_VERDICT_SLOT);
	s = bpf_map_lookup_elem(&RG_MAP_VERDICT_STATS, &zero);
	if (s)
		__sync_fetch_and_add(&s->verdict_missing, 1);
	return SK_PASS;
}

/* The sk_msg program attached to the sockhash, identical in every build:
 * it jumps to the egress program in the slot; an empty slot passes the
 * server's bytes untouched, counted. */
SEC("sk_msg")
int rg_egress_entry(struct sk_msg_md *msg)
{
	struct rg_verdict_stats *s;
	__u32 zero = 0;

	bpf_tail_call(msg, &RG_MAP_EGRESS_SLOT, RG_VERDICT_SLOT);
	s = bpf_map_lookup_elem(&RG_MAP_VERDICT_STATS, &zero);
	if (s)
		__sync_fetch_and_add(&s->egress_missing, 1);
	return SK_PASS;
}

/* Guard accepted connections on our ports: their state (bpf/lifecycle.h),
 * every segment's header (bpf/tcp_rx.h) and the close callback. */
SEC("sockops")
int rg_sockops(struct bpf_sock_ops *skops)
{
	struct rg_conn *c;
	__u64 cookie;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		c = rg_conn_open(skops);
		if (!c)
			break;
		/* every segment's header too: see bpf/tcp_rx.h */
		if (!bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
							      BPF_SOCK_OPS_STATE_CB_FLAG |
							      BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG))
			c->rx.recorded = 1;
		rg_global_inc(conns_tracked);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		cookie = bpf_get_socket_cookie(skops);
		c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
		if (c)
			rg_rx_record(skops, c);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE)
			rg_conn_close(skops);
		break;
	}
	return 1;
}

/*
 * A reset that would close a connection before any verdict saw its data is
 * dropped.  No verdict runs before the server accepts, and a reset then
 * takes the socket out of the sockhash, yet the server still accepts it and
 * reads what was queued: a write no verdict ever saw (docs/design.md#pre-
 * accept-data).  Held, the connection stays open: the server accepts it,
 * the accept-time drain runs the verdict on its data, and the reset the
 * client's host sends to the server's answer (or its keepalive) closes it,
 * now with the verdict done.  Runs for every packet of the cgroup: all but
 * a reset leave after one load of its flags.
 */
SEC("cgroup_skb/ingress")
int rg_hold_reset(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct bpf_tcp_sock *tp;
	struct rg_conn *c;
	__u64 cookie;
	__u32 port;
	int at;
	__u8 flags;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != RG_IPPROTO_TCP ||
	    (sk->state != BPF_TCP_ESTABLISHED && sk->state != BPF_TCP_CLOSE_WAIT))
		return 1;
	at = rg_tcp_header_at(skb);
	if (at < 0 || at > 60 || bpf_skb_load_bytes(skb, at + 13, &flags, 1) ||
	    !(flags & RG_TCP_FLAG_RST))
		return 1;
	port = sk->src_port;
	if (!bpf_map_lookup_elem(&RG_MAP_PORTS, &port))
		return 1;
	cookie = bpf_get_socket_cookie(skb);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	/* an adopted connection was accepted long ago */
	if (!c || c->started || bpf_map_lookup_elem(&RG_MAP_ADOPT, &cookie))
		return 1;
	tp = bpf_tcp_sock(sk);
	if (!tp || !tp->bytes_received)
		return 1;
	rg_global_inc(resets_held);
	return 0;
}

/*
 * --conns-full=fail-closed: a connection on a guarded port that has no state
 * (the table was full when it was accepted) gets none of its data to the
 * server: its data segments are dropped here, before TCP queues them, so
 * the client's writes time out.  ACKs, FINs and RSTs pass so it can close.
 * Attached to the cgroup's ingress only in that mode (it runs for every
 * packet of the cgroup).
 */
SEC("cgroup_skb/ingress")
int rg_refuse(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	__u64 cookie;
	__u32 port;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != RG_IPPROTO_TCP || sk->state != BPF_TCP_ESTABLISHED)
		return 1; /* a listener's packet: the handshake */
	port = sk->src_port;
	if (!bpf_map_lookup_elem(&RG_MAP_PORTS, &port))
		return 1;
	cookie = bpf_get_socket_cookie(skb);
	if (bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie))
		return 1;
	if (rg_tcp_payload(skb) == 0)
		return 1;
	rg_guard_add(refused_segments, 1);
	return 0;
}

SEC("cgroup/getpeername4")
int rg_getpeername4(struct bpf_sock_addr *ctx)
{
	rg_kick_verdict(ctx);
	return 1;
}

SEC("cgroup/getpeername6")
int rg_getpeername6(struct bpf_sock_addr *ctx)
{
	rg_kick_verdict(ctx);
	return 1;
}

/*
 * Correct a database by what rowgated counted in a body copy.  rowgated runs
 * this with BPF_PROG_TEST_RUN, a struct rg_correction as the packet: the
 * bucket is charged the rows the estimate missed, or refunded what it
 * overcharged, under the bucket's lock, so corrections and admissions never
 * lose each other's updates.
 */
SEC("xdp")
int rg_reconcile(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct rg_correction *cr = data;
	struct rg_proto_key pk = {};
	struct rg_bucket_value *bv;
	struct rg_proto_stats *ps;
	struct rg_db_stats *st;
	__u64 est, exact;

	if ((void *)(cr + 1) > end)
		return XDP_ABORTED;
	est = cr->estimated_rows;
	exact = cr->exact_rows;
	__builtin_memcpy(&pk.db, &cr->db, sizeof(pk.db));
	pk.protocol = cr->protocol;
	ps = bpf_map_lookup_elem(&RG_MAP_PROTO_STATS, &pk);
	if (!ps) {
		struct rg_proto_stats zero = {};

		bpf_map_update_elem(&RG_MAP_PROTO_STATS, &pk, &zero, BPF_NOEXIST);
		ps = bpf_map_lookup_elem(&RG_MAP_PROTO_STATS, &pk);
	}
	st = bpf_map_lookup_elem(&RG_MAP_DB_STATS, &pk.db);
	/* a request refunded before its correction stays refunded; one
	 * corrected first is refunded its exact rows (egress.h) */
	if (cr->cookie) {
		struct rg_refused_key k = { .cookie = cr->cookie, .seq = cr->seq };
		struct rg_refused v = { .state = RG_REFUSED_CORRECTED };
		struct rg_refused *o;

		/* an undecodable body stays at its estimate when that is more */
		v.exact_rows = cr->undecodable && exact <= est ? est : exact;
		if (!cr->admitted || !est ||
		    bpf_map_update_elem(&RG_MAP_REFUSED, &k, &v, BPF_NOEXIST)) {
			o = bpf_map_lookup_elem(&RG_MAP_REFUSED, &k);
			if (o && o->state == RG_REFUSED_REFUNDED)
				return XDP_PASS;
		}
	}
	if (cr->undecodable) {
		if (ps)
			__sync_fetch_and_add(&ps->undecodable_requests, 1);
		/* rowgated charges the worst case the server could store:
		 * when the estimate stands, it is counted as charged */
		if (exact <= est) {
			rg_reconcile_proto(ps, cr, est, est);
			return XDP_PASS;
		}
	}
	if (cr->admitted) {
		struct rg_limit *lim = bpf_map_lookup_elem(&RG_MAP_LIMITS, &pk.db);

		/* a database without a (live) limit is never charged */
		bv = lim && lim->limit_rows_per_s ? bpf_map_lookup_elem(&RG_MAP_BUCKETS, &pk.db) :
						    NULL;
		if (bv) {
			bpf_spin_lock(&bv->lock);
			if (exact > est)
				rg_bucket_charge(&bv->b, exact - est);
			else if (rg_refund_credited(cr->lag_ns))
				rg_bucket_refund(&bv->b, est - exact);
			bpf_spin_unlock(&bv->lock);
		}
		/* counters move by the difference: -x is added as 2^64 - x */
		if (st)
			__sync_fetch_and_add(&st->admitted_rows, exact - est);
	} else if (st) {
		__sync_fetch_and_add(&st->rejected_rows, exact - est);
	}
	rg_reconcile_proto(ps, cr, est, exact);
	if (ps && !cr->undecodable) {
		__sync_fetch_and_add(&ps->reconciled_requests, 1);
		__sync_fetch_and_add(&ps->reconciled_rows, exact);
		__sync_fetch_and_add(&ps->lag_ns_total, cr->lag_ns);
	}
	return XDP_PASS;
}
