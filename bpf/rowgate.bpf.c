// SPDX-License-Identifier: GPL-2.0
/* rowgate HTTP path: sockops puts accepted ingest sockets in a sockhash, the
 * sk_skb verdict runs a streaming HTTP/1.1 state machine per connection that
 * classifies each write by database, counts its rows and admits it or answers
 * 429 itself; getpeername hooks run the verdict for data that arrived before
 * accept() (docs/design.md#pre-accept-data).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "admit.h"
#include "conn.h"
#include "rowgate/estimate.h"
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

#define SOL_SOCKET   1
#define SO_RCVLOWAT  18
#define RG_SPACE     ' '

/* ports: guarded local TCP port (host order) -> its server profile */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct rg_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_PORTS SEC(".maps");

/* routes: request path -> protocol of its body */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_ROUTES);
	__type(key, struct rg_route_key);
	__type(value, struct rg_route);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_ROUTES SEC(".maps");

/* sockhash: socket cookie -> guarded socket; the verdict is attached here */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, RG_MAX_CONNS);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_SOCKHASH SEC(".maps");

/* conns: socket cookie -> connection state, allocated on demand */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_CONNS SEC(".maps");

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

/* conn_zero: [0] -> an all-zero connection, the template sockops copies;
 * not pinned: it belongs to one load */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_conn);
} conn_zero SEC(".maps");

/* the sk_msg program and the verdict's hooks use the maps above */
#include "egress.h"

const char spaces[RG_WINDOW_BYTES] = { [0 ... RG_WINDOW_BYTES - 1] = ' ' };

/* What a bpf_loop callback needs: the skb and its connection.  Kept apart
 * from the walk state, which global functions may write. */
struct rg_loop {
	struct __sk_buff *skb;
	struct rg_conn *conn;
};

static __always_inline __u64 rg_server_write_seq(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct tcp_sock *tp;

	if (!sk)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	return tp->write_seq;
}

/*
 * Whether this verdict runs inside the server's recvmsg (tcp_bpf's
 * copied_seq write-back would lose any drop or redirect charge): the socket
 * is owned by the reader and no backlog is being drained.
 */
static __always_inline bool rg_in_recvmsg(struct __sk_buff *skb, struct rg_conn *c)
{
	struct bpf_sock *sk = skb->sk;
	struct tcp_sock *tp;

	/* the accept-time drain holds the socket lock too, but there
	 * charges stick */
	if (!sk || c->draining)
		return false;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return false;
	return BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_lock.owned) &&
	       BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_backlog.len) == 0;
}

/* The (database, protocol) key of the current request, in the connection's
 * scratch: the stack is small.  rowgated creates the counters with a limit. */
static __always_inline struct rg_proto_key *rg_proto_key_of(struct rg_conn *c)
{
	__builtin_memcpy(&c->proto_key.db, &c->db, sizeof(c->db));
	c->proto_key.protocol = c->protocol;
	c->proto_key.pad = 0;
	return &c->proto_key;
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
			   c->head.ce_len != 0);
}

struct rg_emit_ctx {
	struct __sk_buff *skb;
	struct rg_conn *conn;
	__u32 from;
	__u32 to;
};

static long rg_emit_cb(__u64 idx, void *ctx)
{
	struct rg_emit_ctx *e = ctx;
	struct rg_conn *c = e->conn;
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
		c->copy_lost = 1;
		rg_global_inc(body_ring_full);
		return 1;
	}
	/* [1, RG_BODY_DATA_BYTES] in a form Linux 6.1's verifier can follow */
	n = ((n - 1) & (RG_BODY_DATA_BYTES - 1)) + 1;
	if (bpf_skb_load_bytes(e->skb, off, rec->data, n)) {
		bpf_ringbuf_discard(rec, 0);
		c->copy_lost = 1;
		return 1;
	}
	rec->h.type = RG_BODY_DATA;
	rec->h.len = n;
	rec->h.cookie = bpf_get_socket_cookie(e->skb);
	rec->h.seq = c->requests;
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* Copy body bytes [from, to) of this skb to rowgated. */
__noinline int rg_emit_body(struct __sk_buff *skb, struct rg_conn *c, __u32 from, __u32 to)
{
	struct rg_emit_ctx e = { .skb = skb, .conn = c, .from = from, .to = to };

	if (!skb || !c || from >= to || c->copy_lost)
		return 0;
	bpf_loop((to - from + RG_BODY_DATA_BYTES - 1) / RG_BODY_DATA_BYTES, rg_emit_cb, &e, 0);
	return 0;
}

/* The start record of a copied request: what rowgated needs to decode it. */
__noinline int rg_emit_start(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_body_start *rec;

	if (!skb || !c)
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
	__builtin_memcpy(&rec->db, &c->db, sizeof(rec->db));
	rec->protocol = c->protocol;
	rec->chunked = c->head.chunked;
	rec->admitted = c->verdict != RG_REQ_REJECT;
	rec->profile = c->profile;
	rec->pad = 0;
	rec->content_length = c->head.content_length;
	__builtin_memcpy(rec->content_type, c->head.content_type, RG_CT_BYTES);
	__builtin_memcpy(rec->content_encoding, c->head.content_encoding, RG_CE_BYTES);
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* The end of a copied request: charge the estimate, tell rowgated. */
static __always_inline void rg_copied_request_end(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_proto_stats *ps = rg_proto_stats_get(c);
	struct rg_body_end *rec;
	/* an unlimited database is not charged: nothing to correct there */
	__u64 est = c->verdict == RG_REQ_PASS ? 0 : rg_estimate_rows(c);
	bool admitted = c->verdict != RG_REQ_REJECT;

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
	rec = c->copy_lost ? NULL : bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);
	if (rec) {
		rec->h.type = RG_BODY_END;
		rec->h.len = 0;
		rec->h.cookie = bpf_get_socket_cookie(skb);
		rec->h.seq = c->requests;
		rec->body_bytes = c->body_bytes;
		rec->estimated_rows = est;
		rec->end_ns = bpf_ktime_get_ns();
		rec->admitted = admitted;
		rec->complete = 1;
		__builtin_memset(rec->pad, 0, sizeof(rec->pad));
		bpf_ringbuf_submit(rec, 0);
	} else {
		if (!c->copy_lost)
			rg_global_inc(body_ring_full);
		if (ps) {
			__sync_fetch_and_add(&ps->unreconciled_requests, 1);
			__sync_fetch_and_add(&ps->unreconciled_bytes, c->body_bytes);
		}
	}
}

static __always_inline void rg_request_reset(struct rg_conn *c)
{
	rg_http_head_init(&c->head, c->requests == 0, c->profile, c->last_post);
	c->phase = RG_PHASE_HEAD;
	c->verdict = RG_REQ_PASS;
	c->count_rows = 0;
	c->copy_body = 0;
	c->copy_lost = 0;
	c->body_bytes = 0;
	c->req_rows = 0;
	/* comments as the port's server reads them */
	rg_lp_init_rule(&c->lp, rg_profile_comment_rule(c->profile));
}

/*
 * Inside a global function the connection argument is plain memory to the
 * verifier, and Linux 6.1 refuses map keys that point into it (newer kernels
 * accept them).  Looking the connection up again by cookie gives a map value
 * whose fields can key other maps.
 */
static __always_inline struct rg_conn *rg_conn_again(struct __sk_buff *skb, struct rg_conn *arg)
{
	__u64 cookie;

	if (!skb || !arg)
		return NULL;
	cookie = bpf_get_socket_cookie(skb);
	return bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
}

/* The request ended at skb offset end.  Global functions like this one are
 * verified once, not once per call site and callback round. */
__noinline int rg_request_end(struct __sk_buff *skb, struct rg_conn *arg, __u32 end)
{
	struct rg_conn *c = rg_conn_again(skb, arg);
	struct rg_walk *w;

	if (!c)
		return 0;
	w = &c->w;
	if (c->copy_body) {
		if (w->body_open)
			rg_emit_body(skb, c, w->body_from, end);
		w->body_open = 0;
		rg_copied_request_end(skb, c);
		if (c->verdict == RG_REQ_REJECT)
			c->reject_estimated = 1;
	}
	switch (c->verdict) {
	case RG_REQ_ADMIT:
		rg_charge(&c->db, c->req_rows, true);
		break;
	case RG_REQ_UNENFORCED:
		rg_charge(&c->db, c->req_rows, false);
		break;
	case RG_REQ_REJECT:
		rg_account_reject(&c->db, c->req_rows, &c->reject);
		break;
	}
	rg_egress_close(skb, c);
	c->requests++;
	if (c->verdict == RG_REQ_REJECT) {
		c->reject_rows = c->req_rows;
		if (!c->copy_body)
			c->reject_estimated = 0;
		/* the 429 must replace the skb: only if nothing follows */
		w->respond = end == w->len && c->keep_alive ? RG_RESPOND_429 :
							     RG_RESPOND_429_CLOSE;
		w->stop = 1;
		rg_request_reset(c);
		return 0;
	}
	w->pass_end = end;
	c->awaiting = 1;
	c->write_seq_mark = rg_server_write_seq(skb);
	rg_request_reset(c);
	return 0;
}

/* A request rowgate cannot read as the server would: on a guarded port it
 * is answered 400 and the connection closed; only a port the operator
 * marked passes bytes that are not HTTP at all. */
static __always_inline void rg_fail(struct rg_conn *c, struct rg_walk *w, int err)
{
	w->stop = 1;
	if (err == RG_HEAD_ERR_NOT_HTTP && (c->port_flags & RG_PORT_ALLOW_UNPARSED)) {
		c->mode = RG_MODE_PASSTHROUGH;
		rg_global_inc(non_http_conns);
		return;
	}
	w->error = err;
	w->respond = RG_RESPOND_400;
	rg_global_inc(bad_requests);
	switch (err) {
	case RG_HEAD_ERR_NOT_HTTP:
		rg_global_inc(failclosed_not_http);
		break;
	case RG_HEAD_ERR_FRAMING:
		rg_global_inc(failclosed_framing);
		break;
	case RG_HEAD_ERR_TOO_LARGE:
		rg_global_inc(failclosed_too_large);
		break;
	case RG_HEAD_ERR_UNMODELED:
		rg_global_inc(failclosed_unmodeled);
		break;
	default:
		rg_global_inc(failclosed_malformed);
		break;
	}
}

/* The path ends in "/_bulk" (an Elasticsearch bulk endpoint of any index). */
static __always_inline bool rg_path_ends_bulk(const struct rg_http_head *h)
{
	__u32 n = h->path_len;
	const char *p;

	if (n < 6 || n > RG_PATH_MAX)
		return false;
	p = &h->path[(n - 6) & (RG_PATH_MAX - 1)];
	if ((n - 6) + 6 > RG_PATH_MAX)
		return false;
	return p[0] == '/' && p[1] == '_' && p[2] == 'b' && p[3] == 'u' && p[4] == 'l' &&
	       p[5] == 'k';
}

/* No Content-Encoding, or "identity": the body is the text itself. */
static __always_inline bool rg_identity_encoding(const struct rg_http_head *h)
{
	const char *e = h->content_encoding;

	if (h->ce_len == 0)
		return true;
	return h->ce_len == 8 && e[0] == 'i' && e[1] == 'd' && e[2] == 'e' && e[3] == 'n' &&
	       e[4] == 't' && e[5] == 'i' && e[6] == 't' && e[7] == 'y';
}

/* The head is complete: classify, decide, and set up the body. */
__noinline int rg_head_done(struct __sk_buff *skb, struct rg_conn *arg, __u32 end)
{
	struct rg_conn *c = rg_conn_again(skb, arg);
	struct rg_walk *w;
	struct rg_http_head *h;
	struct rg_route *route = NULL;
	enum rg_admission adm;
	int db_len;

	if (!c)
		return 0;
	w = &c->w;
	h = &c->head;
	c->keep_alive = rg_http_keep_alive(h);
	c->verdict = RG_REQ_PASS;
	if (h->is_post && h->path_len < RG_PATH_MAX) {
		/* the head was zeroed: bytes past path_len are NULs */
		__builtin_memcpy(c->route_key.path, h->path, RG_PATH_MAX);
		route = bpf_map_lookup_elem(&RG_MAP_ROUTES, &c->route_key);
		if (!route && rg_path_ends_bulk(h)) {
			/* /v1/elasticsearch/{index}/_bulk: one wildcard route */
			__builtin_memset(&c->route_key, 0, sizeof(c->route_key));
			__builtin_memcpy(c->route_key.path, RG_ROUTE_BULK_WILDCARD,
					 sizeof(RG_ROUTE_BULK_WILDCARD) - 1);
			route = bpf_map_lookup_elem(&RG_MAP_ROUTES, &c->route_key);
		}
	}
	/* a route of another server's paths is not a write here */
	if (route && route->profiles && !(route->profiles & RG_PROFILE_BIT(c->profile & 31)))
		route = NULL;
	/* a write of this server whose rows rowgate cannot count: refused */
	if (route && (route->flags & RG_ROUTE_REFUSE)) {
		rg_fail(c, w, RG_HEAD_ERR_UNMODELED);
		return 0;
	}
	if (route && route->protocol > RG_PROTO_NONE && route->protocol < RG_PROTO_MAX &&
	    (db_len = rg_http_head_db_padded(h, route->flags, &c->db)) >= 0) {
		c->db_len = (__u8)db_len;
		adm = rg_admit(&c->db, &c->reject);
		if (adm == RG_ADMIT_YES) {
			c->verdict = RG_REQ_ADMIT;
		} else if (adm == RG_ADMIT_NO) {
			/* A 429 may only go out when no passed request awaits
			 * its answer, and only as a whole skb of its own. */
			bool pipelined = w->pass_end > 0 ||
					 (c->awaiting &&
					  rg_server_write_seq(skb) == c->write_seq_mark);

			if (pipelined || w->must_pass || c->force_unenforced) {
				c->verdict = RG_REQ_UNENFORCED;
				rg_global_inc(pipelined_unenforced);
			} else {
				c->verdict = RG_REQ_REJECT;
			}
		}
		c->protocol = (__u8)route->protocol;
		if (c->verdict != RG_REQ_PASS) {
			/* compressed text is counted by rowgated like binary, and
			 * so is line protocol whose server stores a row per field
			 * (RG_ROWS_VM_SAMPLES: the kernel charges an upper bound) */
			if (rg_protocol_in_kernel(route->protocol) && rg_identity_encoding(h) &&
			    rg_profile_rows_mode(c->profile) == RG_ROWS_LINES) {
				c->count_rows = 1;
			} else {
				c->copy_body = 1;
				rg_emit_start(skb, c);
			}
		} else if (route->protocol == RG_PROTO_PROM_RW ||
			   (route->protocol == RG_PROTO_LINE &&
			    c->profile == RG_PROFILE_VICTORIAMETRICS)) {
			/* series (victoria-metrics: lines too, by a db tag) may
			 * name databases of their own, limited even when the
			 * request's database is not: rowgated charges them
			 * after the fact */
			c->copy_body = 1;
			rg_emit_start(skb, c);
		}
	}
	c->force_unenforced = 0;
	if (c->verdict == RG_REQ_REJECT) {
		c->awaiting = 0;
		c->stash_len = 0; /* never passed: already in uncharged */
	} else {
		/* the server's last method: it never sees a rejected one */
		c->last_post = h->method_post;
	}
	if (c->verdict != RG_REQ_REJECT)
		rg_egress_open(c);

	if (c->copy_body) {
		w->body_open = 1;
		w->body_from = end;
	}
	if (h->chunked) {
		c->phase = RG_PHASE_BODY_CHUNKED;
		rg_chunked_init(&c->chunk);
	} else if (h->content_length) {
		c->phase = RG_PHASE_BODY_LENGTH;
		c->body_remaining = h->content_length;
	} else {
		return rg_request_end(skb, c, end);
	}
	/* A client waiting for 100 Continue gets its answer now; its rows
	 * are not read, so the count is an estimate from the length. */
	if (c->verdict == RG_REQ_REJECT && h->expect_continue) {
		/* the same estimate as for bodies rowgated counts */
		c->body_bytes = h->content_length;
		if (c->copy_body) {
			/* no body will be read: the estimate stands */
			c->copy_lost = 1;
			rg_copied_request_end(skb, c);
			c->copy_body = 0;
			w->body_open = 0;
		}
		c->req_rows = rg_estimate_rows(c) ?: 1;
		c->reject_rows = c->req_rows;
		rg_account_reject(&c->db, c->req_rows, &c->reject);
		w->respond = RG_RESPOND_429_CLOSE;
		w->stop = 1;
		c->keep_alive = 0;
		c->reject_estimated = 1;
	}
	return 0;
}

/* One byte of the request stream (all phases); returns 1 to stop. */
__noinline int rg_feed_byte(struct __sk_buff *skb, struct rg_conn *c, __u32 off, __u32 ch)
{
	struct rg_walk *w;
	int r;

	if (!skb || !c)
		return 1;
	w = &c->w;
	switch (c->phase) {
	case RG_PHASE_HEAD:
		if (c->head.head_bytes == 0) {
			w->req_start = off;
			w->req_in_skb = 1;
		}
		r = rg_http_head_step(&c->head, (__u8)ch);
		if (r == RG_HEAD_DONE)
			rg_head_done(skb, c, off + 1);
		else if (r < 0)
			rg_fail(c, w, r);
		break;
	case RG_PHASE_BODY_LENGTH:
		c->body_bytes++;
		if (c->count_rows)
			c->req_rows += rg_lp_step(&c->lp, (__u8)ch);
		if (--c->body_remaining == 0)
			rg_request_end(skb, c, off + 1);
		break;
	case RG_PHASE_BODY_CHUNKED:
		c->body_bytes++;
		r = rg_chunked_step(&c->chunk, (__u8)ch);
		if (r == RG_CHUNK_DATA && c->count_rows)
			c->req_rows += rg_lp_step(&c->lp, (__u8)ch);
		else if (r == RG_CHUNK_DONE)
			rg_request_end(skb, c, off + 1);
		else if (r == RG_CHUNK_ERR)
			rg_fail(c, w, RG_HEAD_ERR_FRAMING);
		break;
	}
	return w->stop ? 1 : 0;
}

/* 0x80 in every byte of x below 0x20, exactly (bytes >= 0x80 are not). */
static __always_inline __u64 rg_swar_lt_space(__u64 x)
{
	return ~(((x & RG_SWAR_LOW7) + RG_SWAR_ONES * (0x80 - 0x20)) | x) & RG_SWAR_HIGH;
}

/*
 * Eight head bytes that only need skipping: inside the value of a header
 * rowgate ignores, or of a query parameter it ignores, with no byte that
 * ends it or would make the head malformed.  Then they count as consumed.
 */
static __always_inline bool rg_head_skip_word(struct rg_http_head *h, __u64 x)
{
	__u64 stop;

	if (h->head_bytes + 8 >= RG_HEAD_MAX_BYTES)
		return false;
	if (h->state == RG_HS_VALUE && h->header == RG_HDR_OTHER)
		stop = (rg_swar_lt_space(x) & ~rg_swar_eq(x, '\t')) | rg_swar_eq(x, 0x7f);
	else if (h->state == RG_HS_QUERY_SKIP)
		stop = rg_swar_lt_space(x) | rg_swar_eq(x, ' ') | rg_swar_eq(x, '&') |
		       rg_swar_eq(x, 0x7f);
	else
		return false;
	if (stop)
		return false;
	h->head_bytes += 8;
	return true;
}

/* Body bytes ahead that are plain data: the rest of a Content-Length body
 * or of the current chunk's data (0 elsewhere). */
static __always_inline __u64 rg_data_ahead(const struct rg_conn *c)
{
	if (c->phase == RG_PHASE_BODY_LENGTH)
		return c->body_remaining;
	if (c->phase == RG_PHASE_BODY_CHUNKED && c->chunk.state == RG_CS_DATA)
		return c->chunk.remaining;
	return 0;
}

#define RG_BYTES_PER_STEP 8 /* byte steps per bpf_loop iteration */

/* Up to RG_BYTES_PER_STEP bytes of the window per iteration (the frames of
 * nested callbacks and global functions are limited, so no deeper call). */
static long rg_byte_cb(__u64 idx, void *ctx)
{
	struct rg_loop *l = ctx;
	struct rg_conn *c = l->conn;
	struct rg_walk *w = &c->w;
	__u32 i, p;

	for (i = 0; i < RG_BYTES_PER_STEP; i++) {
		p = w->pos;
		if (w->stop || p >= w->win_len || p >= RG_WINDOW_BYTES)
			return 1;
		if (w->yield_to_bulk && rg_data_ahead(c) > 8)
			return 1;
		if (c->phase == RG_PHASE_HEAD && p + 8 <= w->win_len &&
		    p <= RG_WINDOW_BYTES - 8 &&
		    rg_head_skip_word(&c->head, *(__u64 *)&c->win[p & (RG_WINDOW_BYTES - 1)])) {
			w->pos = p + 8;
			continue;
		}
		w->pos = p + 1;
		if (rg_feed_byte(l->skb, c, w->win_off + p, c->win[p & (RG_WINDOW_BYTES - 1)]))
			return 1;
	}
	return 0;
}


/*
 * The bulk of a Content-Length body or of a chunk's data in the loaded
 * window, from w->pos: whole words through the SWAR counter instead of
 * per-byte steps.  The last byte of the body (or chunk) is left to the
 * byte path, which ends the request (or the chunk).
 */
__noinline int rg_bulk_body(struct rg_conn *c)
{
	struct rg_walk *w;
	__u32 from, to, i, k;
	__u64 ahead;

	if (!c)
		return 0;
	w = &c->w;
	ahead = rg_data_ahead(c);
	if (ahead <= 1 || w->pos >= w->win_len || w->win_len > RG_WINDOW_BYTES)
		return 0;
	from = w->pos;
	k = w->win_len - from;
	if (ahead - 1 < k)
		k = (__u32)(ahead - 1);
	to = from + k;
	if (c->count_rows && k) {
		/* indexed as words: clang 14 loads a byte array at a variable
		 * index byte by byte, even where it is aligned */
		const __u64 *words = (const __u64 *)c->win;
		struct rg_lp_state lp = c->lp;
		__u32 first = from / 8, last = (to - 1) / 8;
		__u64 rows;

		if (first >= RG_WINDOW_BYTES / 8 || last >= RG_WINDOW_BYTES / 8)
			return 0;
		if (first == last) {
			rows = rg_lp_count_span(&lp, words[first], from - first * 8,
						to - first * 8);
		} else {
			/* only the edge words are masked */
			rows = rg_lp_count_span(&lp, words[first], from - first * 8, 8);
			for (i = first + 1; i < last && i < RG_WINDOW_BYTES / 8; i++)
				rows += rg_lp_count_word(&lp, words[i]);
			rows += rg_lp_count_span(&lp, words[last], 0, to - last * 8);
		}
		c->lp = lp;
		c->req_rows += rows;
	}
	if (c->phase == RG_PHASE_BODY_LENGTH)
		c->body_remaining -= k;
	else
		c->chunk.remaining -= k;
	c->body_bytes += k;
	w->pos = to;
	return 0;
}

/* Segments of one window: body bulk and byte steps alternate (a head, then
 * its body; a body's end, then the next head); past this many the rest of
 * the window goes byte by byte. */
#define RG_WINDOW_SEGMENTS 3

/* One window of up to RG_WINDOW_BYTES bytes of the skb. */
static long rg_window_cb(__u64 idx, void *ctx)
{
	struct rg_loop *l = ctx;
	struct rg_conn *c = l->conn;
	struct rg_walk *w = &c->w;
	__u32 off = (__u32)idx * RG_WINDOW_BYTES;
	__u32 n, seg;

	if (w->stop || off >= w->len)
		return 1;
	n = w->len - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1; /* [1, 256] for the verifier */
	/* inside a body nobody counts or copies: no need to look at it */
	if (c->phase == RG_PHASE_BODY_LENGTH && !c->count_rows && !c->copy_body &&
	    c->body_remaining > n) {
		c->body_remaining -= n;
		c->body_bytes += n;
		return 0;
	}
	if (bpf_skb_load_bytes(l->skb, off, c->win, n)) {
		rg_global_inc(internal_errors);
		w->stop = 1;
		w->must_pass = 1;
		return 1;
	}
	w->win_off = off;
	w->win_len = n;
	w->pos = 0;
	for (seg = 0; seg <= RG_WINDOW_SEGMENTS; seg++) {
		rg_bulk_body(c);
		if (w->stop || w->pos >= n)
			break;
		/* byte steps yield back when a body worth the bulk path starts */
		w->yield_to_bulk = seg < RG_WINDOW_SEGMENTS;
		bpf_loop((n - w->pos + RG_BYTES_PER_STEP - 1) / RG_BYTES_PER_STEP + 1, rg_byte_cb,
			 l, 0);
		if (w->stop || w->pos >= n)
			break;
	}
	return w->stop ? 1 : 0;
}

/* Copy skb bytes [from, from + n) into the stash at stash_len (n small). */
struct rg_stash_ctx {
	struct __sk_buff *skb;
	struct rg_conn *conn;
	__u32 from;
	__u32 n;
	__s32 err;
};

static long rg_stash_cb(__u64 idx, void *ctx)
{
	struct rg_stash_ctx *s = ctx;
	struct rg_conn *c = s->conn;
	__u32 done = (__u32)idx * RG_WINDOW_BYTES;
	__u32 dst, n;

	if (done >= s->n)
		return 1;
	n = s->n - done;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	dst = (c->stash_len + done) & (RG_HEAD_MAX_BYTES - 1);
	s->err = bpf_skb_load_bytes(s->skb, s->from + done, &c->stash[dst], n);
	return s->err ? 1 : 0;
}

static __always_inline int rg_stash_append(struct __sk_buff *skb, struct rg_conn *c,
					   __u32 from, __u32 n)
{
	struct rg_stash_ctx s = { .skb = skb, .conn = c, .from = from, .n = n };

	if (n == 0)
		return 0;
	if ((__u32)c->stash_len + n > RG_HEAD_MAX_BYTES)
		return -1;
	bpf_loop((n + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_stash_cb, &s, 0);
	if (s.err)
		return -1;
	c->stash_len += n;
	c->uncharged += n;
	return 0;
}

/* Write the stash back in front of the skb (the head it belongs to is
 * admitted): grow in steps adjust_room allows, then store the bytes. */
static long rg_unstash_cb(__u64 idx, void *ctx)
{
	struct rg_stash_ctx *s = ctx;
	struct rg_conn *c = s->conn;
	__u32 off = (__u32)idx * RG_WINDOW_BYTES;
	__u32 n;

	if (off >= s->n)
		return 1;
	n = s->n - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	s->err = bpf_skb_store_bytes(s->skb, off, &c->stash[off & (RG_HEAD_MAX_BYTES - 1)], n, 0);
	return s->err ? 1 : 0;
}

static __always_inline int rg_grow_front(struct __sk_buff *skb, __u32 n)
{
	__u32 i;

	for (i = 0; i < 3 && n; i++) {
		__u32 step = n > RG_ADJUST_MAX ? RG_ADJUST_MAX : n;

		if (bpf_skb_adjust_room(skb, (__s32)step, 0, 0))
			return -1;
		n -= step;
	}
	return n ? -1 : 0;
}

static __always_inline int rg_unstash(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_stash_ctx s = { .skb = skb, .conn = c, .n = c->stash_len };

	if (!s.n)
		return 0;
	if (rg_grow_front(skb, s.n))
		return -1;
	bpf_loop((s.n + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_unstash_cb, &s, 0);
	if (s.err)
		return -1;
	c->uncharged -= c->stash_len;
	c->stash_len = 0;
	return 0;
}

/* Pad skb bytes [from, len) with spaces. */
struct rg_pad_ctx {
	struct __sk_buff *skb;
	__u32 from;
	__u32 len;
	__s32 err;
};

static long rg_pad_cb(__u64 idx, void *ctx)
{
	struct rg_pad_ctx *p = ctx;
	__u32 off = p->from + (__u32)idx * RG_WINDOW_BYTES;
	__u32 n;

	if (off >= p->len)
		return 1;
	n = p->len - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	p->err = bpf_skb_store_bytes(p->skb, off, spaces, n, 0);
	return p->err ? 1 : 0;
}

/* Make the skb exactly len bytes long. */
static __always_inline int rg_resize(struct __sk_buff *skb, __u32 len)
{
	__u32 cur = skb->len;

	if (cur == len)
		return 0;
	if (len <= RG_CHANGE_TAIL_MAX && cur <= RG_CHANGE_TAIL_MAX)
		return bpf_skb_change_tail(skb, len, 0);
	if (len > cur)
		return rg_grow_front(skb, len - cur);
	return -1; /* a large skb cannot shrink from the tail */
}

/*
 * Plan the pending response (response.h): sized to every byte received and
 * not yet charged, the skb plus the ledger, since its length is what TCP
 * charges (docs/design.md#tcp-read-accounting).  A global function: the verifier checks the
 * arithmetic once, and its results reach the caller as plain values.
 */
__noinline int rg_plan_response(struct rg_conn *c)
{
	struct rg_response *r;
	struct rg_walk *w;

	if (!c)
		return -1;
	w = &c->w;
	r = &c->resp_plan;
	__builtin_memset(r, 0, sizeof(*r));
	if (w->respond == RG_RESPOND_400) {
		r->kind = RG_RESP_400;
		r->error = w->error == RG_HEAD_ERR_TOO_LARGE ? RG_RESP_ERR_TOO_LARGE :
			   w->error == RG_HEAD_ERR_FRAMING  ? RG_RESP_ERR_FRAMING :
							      RG_RESP_ERR_MALFORMED;
		r->close = 1;
	} else {
		r->kind = RG_RESP_429;
		r->retry_after_s = c->reject.retry_after_s;
		r->rows = c->reject_rows;
		r->quota_rows_per_s = c->reject.quota_rows_per_s;
		r->limit_rows_per_s = c->reject.limit_rows_per_s;
		r->db_len = c->db_len;
		r->estimated = c->reject_estimated;
		r->close = w->respond != RG_RESPOND_429;
	}
	return rg_response_plan(r, (__u64)w->len + c->uncharged);
}

/*
 * Turn the skb into the planned response and send it back out of the same
 * socket: the text, then the JSON's space padding.  Only when even the
 * short form cannot fit does it grow, with Connection: close.
 */
static __always_inline int rg_respond(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_response *r = &c->resp_plan;
	__u32 text, total;

	if (rg_plan_response(c))
		return -1;
	text = r->text_len;
	total = r->total_len;
	if (rg_response_write(&c->resp, r, &c->db) != text || text == 0 || text > total ||
	    text >= RG_RESP_TEXT_MAX) {
		/* writer and plan disagree (never expected) */
		rg_global_inc(internal_errors);
		return -1;
	}
	if (rg_resize(skb, total))
		return -1;
	if (bpf_skb_store_bytes(skb, 0, c->resp.b, ((text - 1) & (RG_RESP_TEXT_MAX - 1)) + 1, 0))
		return -1;
	if (total > text) {
		struct rg_pad_ctx p = { .skb = skb, .from = text, .len = total };

		bpf_loop((p.len - p.from + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_pad_cb,
			 &p, 0);
		if (p.err)
			return -1;
	}
	if (r->close) {
		c->mode = RG_MODE_CLOSING;
		if ((__u64)total > (__u64)c->w.len + c->uncharged)
			rg_global_inc(responses_close);
	}
	c->uncharged = 0;
	c->stash_len = 0;
	return 0;
}

SEC("sk_skb")
int rg_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct rg_loop l = { .skb = skb };
	struct rg_walk *w;
	struct rg_conn *c;
	__u32 len = skb->len;
	int verdict = SK_PASS;

	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c || c->mode == RG_MODE_PASSTHROUGH)
		return SK_PASS;
	if (!c->started && rg_adopt_hold(skb, cookie, rg_server_write_seq(skb)))
		return SK_PASS; /* adopted mid-stream: no request boundary yet */
	if (c->mode == RG_MODE_CLOSING)
		return SK_DROP; /* after a close response nothing reaches the server */
	if (!c->started) {
		__u32 port = skb->local_port;
		struct rg_port *pv = bpf_map_lookup_elem(&RG_MAP_PORTS, &port);

		/* an adopted connection was made without sockops: its port's
		 * profile too */
		if (pv) {
			c->profile = pv->profile;
			c->port_flags = pv->flags;
		}
		c->started = 1;
		rg_request_reset(c);
	}
	l.conn = c;
	w = &c->w;
	__builtin_memset(w, 0, sizeof(*w));
	w->len = len;
	if (c->copy_body && c->phase != RG_PHASE_HEAD)
		w->body_open = 1; /* a copied body continues from offset 0 */
	w->must_pass = rg_in_recvmsg(skb, c);
	if (w->must_pass)
		rg_global_inc(recvmsg_failopen);

	bpf_loop((len + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_window_cb, &l, 0);
	/* the copy of a body that goes on in the next skb, before any rewrite */
	if (c->copy_body && w->body_open)
		rg_emit_body(skb, c, w->body_from, len);

	if (c->mode == RG_MODE_PASSTHROUGH)
		goto pass; /* not HTTP (first bytes only, nothing stashed) */

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
		/* a rejected body: drop it, withholding up to the reserve so
		 * the final skb can carry a full-size 429 */
		__u32 hold = 0;

		if (w->must_pass)
			goto failopen;
		if (c->uncharged < RG_RESERVE_BYTES) {
			hold = RG_RESERVE_BYTES - c->uncharged;
			if (hold > len)
				hold = len;
			if (hold && bpf_skb_adjust_room(skb, -(__s32)hold, 0, 0) == 0)
				c->uncharged += hold;
		}
		return SK_DROP;
	}

	if (c->phase == RG_PHASE_HEAD && c->head.head_bytes > 0) {
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
		goto pass;
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
	return verdict;
}

#ifndef RG_BUILD_ID
#define RG_BUILD_ID 1
#endif
/* Which build of this object is loaded (bpftool map dump of .rodata). */
const volatile __u32 rg_build_id = RG_BUILD_ID;

/* --conns-full: 0 = fail-open (an untracked connection passes, counted),
 * 1 = fail-closed (rg_refuse drops its data). */
const volatile __u32 rg_conns_full_close = 0;

static __always_inline void rg_conn_untracked(void)
{
	if (rg_conns_full_close)
		rg_guard_add(conns_refused, 1);
	else
		rg_global_inc(conns_untracked);
}

/* Guard accepted connections on our ports: state, sockhash, close callback. */
SEC("sockops")
int rg_sockops(struct bpf_sock_ops *skops)
{
	__u32 port = skops->local_port, zero = 0;
	__u64 cookie;
	struct rg_conn *tmpl, *c;
	struct rg_port *pv;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		pv = bpf_map_lookup_elem(&RG_MAP_PORTS, &port);
		if (!pv)
			break;
		cookie = bpf_get_socket_cookie(skops);
		tmpl = bpf_map_lookup_elem(&conn_zero, &zero);
		if (!tmpl)
			break;
		if (bpf_map_update_elem(&RG_MAP_CONNS, &cookie, tmpl, BPF_NOEXIST)) {
			rg_conn_untracked();
			break;
		}
		c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
		if (c) {
			c->profile = pv->profile;
			c->port_flags = pv->flags;
			/* egress follows it from the server's first byte */
			c->eg.armed = rg_egress_on;
		}
		if (!c || bpf_sock_hash_update(skops, &RG_MAP_SOCKHASH, &cookie, BPF_NOEXIST)) {
			bpf_map_delete_elem(&RG_MAP_CONNS, &cookie);
			rg_conn_untracked();
			break;
		}
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
							 BPF_SOCK_OPS_STATE_CB_FLAG);
		rg_global_inc(conns_tracked);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE) {
			cookie = bpf_get_socket_cookie(skops);
			bpf_map_delete_elem(&RG_MAP_CONNS, &cookie);
		}
		break;
	}
	return 1;
}

#define RG_ETH_P_IP   0x0800
#define RG_ETH_P_IPV6 0x86DD
#define RG_IPPROTO_TCP 6
#define RG_IPV6_HDR_BYTES 40

/* Bytes of TCP payload in an ingress packet (the skb starts at the IP
 * header); -1 when the headers cannot be read, which counts as data. */
static __always_inline int rg_tcp_payload(struct __sk_buff *skb)
{
	__u32 ip_bytes = RG_IPV6_HDR_BYTES;
	__u8 b;

	if (skb->protocol == bpf_htons(RG_ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, &b, 1))
			return -1;
		ip_bytes = (b & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(RG_ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 6, &b, 1) || b != RG_IPPROTO_TCP)
			return -1; /* extension headers: treat as data */
	} else {
		return -1;
	}
	if (bpf_skb_load_bytes(skb, ip_bytes + 12, &b, 1))
		return -1;
	return (int)skb->len - (int)ip_bytes - (int)((b >> 4) * 4);
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

/*
 * accept4() with an address buffer calls getpeername on the grafted socket
 * under its lock: re-setting SO_RCVLOWAT there runs tcp_data_ready(), so the
 * verdict sees data that arrived before accept() outside recvmsg, where its
 * drops and redirects are charged (docs/design.md#pre-accept-data).
 */
static __always_inline void rg_kick_verdict(struct bpf_sock_addr *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct rg_conn *c;
	__u64 cookie;
	__u32 port;
	int lowat = 1;

	if (!sk)
		return;
	port = sk->src_port;
	if (!bpf_map_lookup_elem(&RG_MAP_PORTS, &port))
		return;
	cookie = bpf_get_socket_cookie(ctx);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return;
	if (bpf_getsockopt(ctx, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)))
		lowat = 1;
	c->draining = 1;
	bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
	c->draining = 0;
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
		/* rowgated charges the worst case the server could store */
		if (exact <= est)
			return XDP_PASS;
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
			else
				rg_bucket_refund(&bv->b, est - exact);
			bpf_spin_unlock(&bv->lock);
		}
		/* counters move by the difference: -x is added as 2^64 - x */
		if (st)
			__sync_fetch_and_add(&st->admitted_rows, exact - est);
		if (ps)
			__sync_fetch_and_add(&ps->admitted_rows, exact - est);
	} else {
		if (st)
			__sync_fetch_and_add(&st->rejected_rows, exact - est);
		if (ps)
			__sync_fetch_and_add(&ps->rejected_rows, exact - est);
	}
	if (ps && !cr->undecodable) {
		__sync_fetch_and_add(&ps->reconciled_requests, 1);
		__sync_fetch_and_add(&ps->reconciled_rows, exact);
		__sync_fetch_and_add(&ps->lag_ns_total, cr->lag_ns);
	}
	return XDP_PASS;
}
