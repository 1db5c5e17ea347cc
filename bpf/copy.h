/* SPDX-License-Identifier: GPL-2.0 */
/* Bodies the kernel cannot count (compressed, binary, or a server that
 * stores a row per field): the estimate each is charged meanwhile
 * (rowgate/estimate.h, from the ratio rowgated learns), and the copy of its
 * bytes sent to rowgated through the body ring, which counts it exactly and
 * corrects the bucket (rg_reconcile; docs/design.md#data-path).
 */
#ifndef ROWGATE_BPF_COPY_H
#define ROWGATE_BPF_COPY_H

#include "base.h"
#include "maps.h"
#include "admit.h"
#include "conn.h"
#include "rowgate/abi.h"
#include "rowgate/estimate.h"

/* proto_stats: (database, protocol) -> per-protocol counters */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_proto_key);
	__type(value, struct rg_proto_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_PROTO_STATS SEC(".maps");

/* ratios: (database, protocol) -> body bytes per row, learned by rowgated */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_proto_key);
	__type(value, struct rg_ratio);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_RATIOS SEC(".maps");

/* bodies: copies of bodies the kernel cannot count, for rowgated */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RG_BODY_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_BODIES SEC(".maps");

/* The (database, protocol) key of the current request, in the connection's
 * scratch: the stack is small.  rowgated creates the counters with a limit. */
static __always_inline struct rg_proto_key *rg_proto_key_of(struct rg_conn *c)
{
	c->pk.protocol = c->protocol;
	c->pk.pad = 0;
	return &c->pk;
}

static __always_inline struct rg_proto_stats *rg_proto_stats_get(struct rg_conn *c)
{
	return bpf_map_lookup_elem(&RG_MAP_PROTO_STATS, rg_proto_key_of(c));
}

/* Rows a body of this size is charged before rowgated has counted it
 * (rowgate/estimate.h: the learned ratio, capped per protocol and coding). */
static __always_inline __u64 rg_estimate_rows(struct rg_conn *c)
{
	struct rg_ratio *r;

	if (!c->body_bytes)
		return 0;
	r = bpf_map_lookup_elem(&RG_MAP_RATIOS, rg_proto_key_of(c));
	return rg_est_rows(c->body_bytes, r ? r->bytes_per_row_x16 : 0, c->protocol,
			   c->req_ce);
}

struct rg_emit_ctx {
	struct __sk_buff *skb;
	__u64 seq;
	__u32 from;
	__u32 to;
	__u32 lost;
};

static long rg_emit_cb(__u64 idx, void *ctx)
{
	struct rg_emit_ctx *e = ctx;
	__u32 off = e->from + (__u32)idx * RG_BODY_DATA_BYTES;
	struct rg_body_data *rec;
	__u32 n;

	if (off >= e->to)
		return 1;
	n = e->to - off;
	if (n > RG_BODY_DATA_BYTES)
		n = RG_BODY_DATA_BYTES;
	rec = bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);
	if (!rec) {
		e->lost = 1;
		rg_global_inc(body_ring_full);
		return 1;
	}
	/* [1, RG_BODY_DATA_BYTES] in a form Linux 6.1's verifier can follow */
	n = ((n - 1) & (RG_BODY_DATA_BYTES - 1)) + 1;
	if (bpf_skb_load_bytes(e->skb, off, rec->data, n)) {
		bpf_ringbuf_discard(rec, 0);
		e->lost = 1;
		return 1;
	}
	rec->h.type = RG_BODY_DATA;
	rec->h.len = n;
	rec->h.cookie = bpf_get_socket_cookie(e->skb);
	rec->h.seq = e->seq;
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* Copy bytes [from, to) of this skb to rowgated as body records of copy
 * seq; -1 when some were lost (ring full). */
__noinline int rg_emit_bytes(struct __sk_buff *skb, __u64 seq, __u32 from, __u32 to)
{
	struct rg_emit_ctx e = { .skb = skb, .seq = seq, .from = from, .to = to };

	if (!skb || from >= to)
		return 0;
	bpf_loop((to - from + RG_BODY_DATA_BYTES - 1) / RG_BODY_DATA_BYTES, rg_emit_cb, &e, 0);
	return e.lost ? -1 : 0;
}

/* Copy body bytes [from, to) of this skb to rowgated (inline: the call
 * stack of rg_verdict has no frame to spare). */
static __always_inline void rg_emit_body(struct __sk_buff *skb, struct rg_conn *c, __u32 from,
					 __u32 to)
{
	if (!c->copy_lost && rg_emit_bytes(skb, c->requests, from, to))
		c->copy_lost = 1;
}

/* The start record of a copied request: what rowgated needs to decode it,
 * from its complete head h. */
__noinline int rg_emit_start(struct __sk_buff *skb, struct rg_conn *c,
			     const struct rg_http_head *h)
{
	struct rg_body_start *rec;

	if (!skb || !c || !h)
		return 0;
	rec = bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);
	if (!rec) {
		c->copy_lost = 1;
		rg_global_inc(body_ring_full);
		return 0;
	}
	rec->h.type = RG_BODY_START;
	rec->h.len = 0;
	rec->h.cookie = bpf_get_socket_cookie(skb);
	rec->h.seq = c->requests;
	__builtin_memcpy(&rec->db, &c->pk.db, sizeof(rec->db));
	rec->protocol = c->protocol;
	rec->chunked = h->chunked;
	rec->admitted = c->verdict != RG_REQ_REJECT;
	rec->profile = c->profile;
	rec->pad = 0;
	rec->content_length = h->content_length;
	__builtin_memcpy(rec->content_type, h->content_type, RG_CT_BYTES);
	__builtin_memcpy(rec->content_encoding, h->content_encoding, RG_CE_BYTES);
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* Tell rowgated a copied request ended (aborted: its connection closed
 * inside the body) and what it was charged; -1 when the ring is full. */
static __always_inline int rg_body_end_record(__u64 cookie, __u64 seq, __u64 body_bytes, __u64 est,
					      bool admitted, bool aborted)
{
	struct rg_body_end *rec = bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);

	if (!rec)
		return -1;
	rec->h.type = RG_BODY_END;
	rec->h.len = 0;
	rec->h.cookie = cookie;
	rec->h.seq = seq;
	rec->body_bytes = body_bytes;
	rec->estimated_rows = est;
	rec->end_ns = bpf_ktime_get_ns();
	rec->admitted = admitted;
	rec->complete = 1;
	rec->aborted = aborted;
	__builtin_memset(rec->pad, 0, sizeof(rec->pad));
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

static __always_inline int rg_body_end_submit(struct rg_conn *c, __u64 cookie, __u64 est,
					      bool admitted, bool aborted)
{
	return rg_body_end_record(cookie, c->requests, c->body_bytes, est, admitted, aborted);
}

/* The end of a copied request: charge the estimate, tell rowgated. */
static __always_inline void rg_copied_request_end(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_proto_stats *ps = rg_proto_stats_get(c);
	/* an unlimited database is not charged: nothing to correct there */
	__u64 est = c->verdict == RG_REQ_PASS ? 0 : rg_estimate_rows(c);
	bool admitted = c->verdict != RG_REQ_REJECT;

	/* what was charged while the body arrived stands (the ratio may have
	 * moved since): the correction is taken from the total */
	if (est < c->charged_rows)
		est = c->charged_rows;

	c->req_rows = est;
	if (ps) {
		__sync_fetch_and_add(&ps->body_bytes, c->body_bytes);
		__sync_fetch_and_add(&ps->estimated_rows, est);
		if (admitted) {
			__sync_fetch_and_add(&ps->admitted_requests, 1);
			__sync_fetch_and_add(&ps->admitted_rows, est);
		} else {
			__sync_fetch_and_add(&ps->rejected_requests, 1);
			__sync_fetch_and_add(&ps->rejected_rows, est);
		}
	}
	if (c->copy_lost ||
	    rg_body_end_submit(c, bpf_get_socket_cookie(skb), est, admitted, false)) {
		if (!c->copy_lost)
			rg_global_inc(body_ring_full);
		if (ps) {
			__sync_fetch_and_add(&ps->unreconciled_requests, 1);
			__sync_fetch_and_add(&ps->unreconciled_bytes, c->body_bytes);
		}
	}
}

/*
 * The connection closed inside a copied body (sockops, at TCP_CLOSE): its
 * request never ends, and a server that inserts while it decodes (gzip line
 * protocol on victoria-metrics) stored what arrived.  rowgated counts the
 * bytes it holds as the server read them and corrects what was charged
 * while they arrived (docs/design.md#aborted-copies).  A rejected body
 * never reached the server; an unlimited one was not charged.
 */
static __always_inline void rg_copy_aborted(struct rg_conn *c, __u64 cookie)
{
	if (!c->copy_body || c->copy_lost || c->phase == RG_PHASE_HEAD ||
	    (c->verdict != RG_REQ_ADMIT && c->verdict != RG_REQ_UNENFORCED))
		return;
	if (rg_body_end_submit(c, cookie, c->charged_rows, true, true))
		rg_global_inc(body_ring_full);
}

/* A correction's request and rows in proto_stats (rg_reconcile): by the
 * difference from the estimate the verdict counted, or whole (rows) when
 * the verdict did not count the request (proto_uncounted: OTLP, Arrow
 * Flight). */
static __always_inline void rg_reconcile_proto(struct rg_proto_stats *ps,
					       const struct rg_correction *cr, __u64 est,
					       __u64 rows)
{
	if (!ps)
		return;
	if (cr->proto_uncounted) {
		__sync_fetch_and_add(cr->admitted ? &ps->admitted_requests : &ps->rejected_requests,
				     1);
		__sync_fetch_and_add(&ps->estimated_rows, est);
	} else {
		rows -= est;
	}
	__sync_fetch_and_add(cr->admitted ? &ps->admitted_rows : &ps->rejected_rows, rows);
}

#endif /* ROWGATE_BPF_COPY_H */
