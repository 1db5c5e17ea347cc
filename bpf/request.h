/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/1 request state machine of the verdict: what each byte of a
 * guarded connection means (rowgate/http.h reads the head as the port's
 * server does), the decision at a complete head (route, database, bucket;
 * refused, voided or admitted), and the end of a request (charged,
 * answered, paired with egress).  walk.h feeds it the bytes (rg_feed_byte).
 */
#ifndef ROWGATE_BPF_REQUEST_H
#define ROWGATE_BPF_REQUEST_H

#include "base.h"
#include "maps.h"
#include "admit.h"
#include "conn.h"
#include "copy.h"
#include "egress.h"
#include "scratch.h"
#include "skb_edit.h"
#include "rowgate/abi.h"

/* routes: request path -> protocol of its body */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_ROUTES);
	__type(key, struct rg_route_key);
	__type(value, struct rg_route);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_ROUTES SEC(".maps");

/* The routes key of the Elasticsearch bulk wildcard, NUL-padded (in
 * .rodata: a lookup key needs memory, and the stack is small). */
const char rg_route_bulk_key[sizeof(struct rg_route_key)] = RG_ROUTE_BULK_WILDCARD;

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

static __always_inline void rg_request_reset(struct rg_conn *c)
{
	c->head_begun = 0; /* the next head's parser starts at its first byte */
	c->phase = RG_PHASE_HEAD;
	c->verdict = RG_REQ_PASS;
	c->count_rows = 0;
	c->copy_body = 0;
	c->unlimited = 0;
	c->copy_lost = 0;
	c->scan_db = 0;
	c->body_bytes = 0;
	c->req_rows = 0;
	c->charged_rows = 0;
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

/* The run's head parser state (its scratch buffer, c->w.slot), as a map
 * value, for the same reason as rg_conn_again: its path keys the routes. */
static __always_inline struct rg_http_head *rg_head_again(struct rg_conn *c)
{
	struct rg_scratch_cpu *cpu = rg_scratch_cpu();

	return cpu ? &rg_scratch_of(cpu, c->w.slot)->head : NULL;
}

/* Half of the server's running timer has passed: the 429 closes now rather
 * than let the server reset the client mid-send
 * (docs/server-profiles.md#server-timeouts). */
static __always_inline bool rg_server_deadline_near(const struct rg_conn *c)
{
	__u32 h = c->header_timeout_s, i = c->idle_timeout_s, t;
	__u64 now = bpf_ktime_get_ns();

	t = c->server_timer == RG_TIMER_HEADER ? h : i;
	return rg_server_timer_near(now > c->timer_from_ns ? now - c->timer_from_ns : 0, t);
}

/* Whether the current request's rows are counted here as its body passes:
 * line protocol, uncompressed, on a port whose server stores a row per line
 * (c->protocol set from its route). */
static __always_inline bool rg_rows_in_kernel(const struct rg_conn *c)
{
	return rg_protocol_in_kernel(c->protocol) && c->req_identity &&
	       rg_profile_rows_mode(c->profile) == RG_ROWS_LINES;
}

/*
 * A write to a database without a limit: its head was read (line protocol
 * whose server stores a row per line has its rows counted, as an admitted
 * write's are) and its end (counted, its rows an estimate from the body
 * size where they were not counted).  Global functions of their own: the
 * verdict's call chain has no stack to spare for them on 6.1.
 */
__noinline int rg_unlimited_start(struct __sk_buff *skb, struct rg_conn *arg)
{
	struct rg_conn *c = rg_conn_again(skb, arg);

	if (c && rg_rows_in_kernel(c))
		c->count_rows = 1;
	return 0;
}

__noinline int rg_unlimited_end(struct __sk_buff *skb, struct rg_conn *arg)
{
	struct rg_conn *c = rg_conn_again(skb, arg);
	struct rg_unlimited_stats *u;

	if (!c)
		return 0;
	if (!c->count_rows)
		c->req_rows = rg_estimate_rows(c);
	u = rg_unlimited_get(&c->pk.db);
	rg_unlimited_count(u, c->req_rows, c->body_bytes, !c->count_rows);
	return 0;
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
	if (c->unlimited && c->verdict == RG_REQ_PASS)
		rg_unlimited_end(skb, c);
	switch (c->verdict) {
	case RG_REQ_ADMIT:
		rg_charge(&c->pk.db, c->req_rows - c->charged_rows, 1, true);
		break;
	case RG_REQ_UNENFORCED:
		rg_charge(&c->pk.db, c->req_rows - c->charged_rows, 1, false);
		break;
	case RG_REQ_REJECT:
		rg_account_reject(&c->pk.db, c->req_rows, &c->reject);
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
		if (w->respond == RG_RESPOND_429 && rg_server_deadline_near(c)) {
			w->respond = RG_RESPOND_429_CLOSE;
			w->close_deadline = 1;
		}
		w->stop = 1;
		rg_request_reset(c);
		return 0;
	}
	w->pass_end = end;
	c->awaiting = 1;
	c->write_seq_mark = rg_server_write_seq(skb);
	/* the server's idle timer starts at its answer, which is later */
	c->server_timer = RG_TIMER_IDLE;
	c->timer_from_ns = bpf_ktime_get_ns();
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

/*
 * A write that must be refused but cannot be answered in order (a passed
 * request before it still awaits its answer): its method's first byte
 * becomes '@', which no server reads as a method, so the server itself
 * answers it 400 and closes the connection, after its answers to the
 * requests before it (docs/design.md#response-ordering).  The head began
 * in this skb or in the stash (bytes of it already passed would have
 * forced it unenforced).
 */
static __always_inline int rg_void_method(struct __sk_buff *skb, struct rg_conn *c)
{
	__u32 at = c->req_lead; /* leading CR/LF the server skips */
	__u8 void_byte = '@';

	if (c->w.req_in_skb)
		return bpf_skb_store_bytes(skb, c->w.req_start + at, &void_byte, 1, 0);
	if (at < c->stash_len) {
		struct rg_stash *buf = rg_stash_of(skb, c);

		if (!buf)
			return -1;
		buf->bytes[at & (RG_HEAD_MAX_BYTES - 1)] = void_byte;
		return 0;
	}
	return bpf_skb_store_bytes(skb, at - c->stash_len, &void_byte, 1, 0);
}

/* The server closes the connection after its 400: nothing that follows is
 * read, so nothing more is parsed or charged, and later data is dropped.
 * Egress replaces that 400 with the 429 the request would have had; what it
 * says stays in c->reject, c->reject_rows and c->pk.db, which the verdict no
 * longer writes once the connection is closing. */
static __always_inline void rg_void_request(struct __sk_buff *skb, struct rg_conn *c,
					    struct rg_walk *w, __u8 protocol)
{
	/* the server answers it: egress pairs that 400 with it, uncharged */
	c->verdict = RG_REQ_PASS;
	rg_egress_open(c);
	if (c->eg.open)
		c->eg.q[c->eg.cur & (RG_PENDING_MAX - 1)].flags |= RG_PEND_VOIDED;
	else
		rg_global_inc(pipelined_answered_400); /* egress off, unarmed or lost */
	rg_egress_close(skb, c);
	rg_account_reject(&c->pk.db, 0, &c->reject);
	rg_global_inc(pipelined_voided);
	/* its body is never read: the 429 names an estimate from its length */
	c->protocol = protocol;
	c->body_bytes = c->req_content_length;
	c->reject_rows = rg_estimate_rows(c) ?: 1;
	c->reject_estimated = 1;
	c->mode = RG_MODE_CLOSING;
	c->requests++;
	w->stop = 1;
	rg_request_reset(c);
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
	h = rg_head_again(c);
	if (!h)
		return 0;
	c->keep_alive = rg_http_keep_alive(h);
	/* what the rest of the request needs of its head, which ends here */
	c->req_lead = h->lead;
	c->req_method_head =
		h->method_len == 4 && h->method == RG_W8('H', 'E', 'A', 'D', 0, 0, 0, 0);
	c->req_ce = h->ce_len != 0;
	c->req_identity = rg_http_identity_encoding(h);
	c->req_content_length = h->content_length;
	c->verdict = RG_REQ_PASS;
	if (h->is_post && h->path_len < RG_PATH_MAX) {
		/* the key is the path as it lies in the head, which was zeroed:
		 * bytes past path_len are NULs */
		route = bpf_map_lookup_elem(&RG_MAP_ROUTES, h->path);
		if (!route && rg_http_path_ends_bulk(h))
			/* /v1/elasticsearch/{index}/_bulk: one wildcard route */
			route = bpf_map_lookup_elem(&RG_MAP_ROUTES, rg_route_bulk_key);
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
	    (db_len = rg_http_head_db_padded(h, route->flags, &c->pk.db)) >= 0) {
		c->db_len = (__u8)db_len;
		adm = rg_admit(&c->pk.db, &c->reject);
		if (adm == RG_ADMIT_YES) {
			c->verdict = RG_REQ_ADMIT;
		} else if (adm == RG_ADMIT_SHADOW) {
			/* passes as an unlimited database's write: uncharged */
			rg_shadow_count(&c->pk.db, 0);
		} else if (adm == RG_ADMIT_NO) {
			/* A 429 may only go out when no passed request awaits
			 * its answer, and only as a whole skb of its own. */
			bool pipelined = w->pass_end > 0 ||
					 (c->awaiting &&
					  rg_server_write_seq(skb) == c->write_seq_mark);

			if (!pipelined && !w->must_pass && !c->force_unenforced) {
				c->verdict = RG_REQ_REJECT;
			} else if (pipelined && !w->must_pass && !c->force_unenforced &&
				   rg_void_method(skb, c) == 0) {
				rg_void_request(skb, c, w, (__u8)route->protocol);
				return 0;
			} else {
				c->verdict = RG_REQ_UNENFORCED;
				rg_global_inc(pipelined_unenforced);
			}
		}
		c->protocol = (__u8)route->protocol;
		/* counted at its end, so its rate is known before a limit is
		 * set (rg_request_end) */
		c->unlimited = adm == RG_ADMIT_UNLIMITED;
		if (c->unlimited)
			rg_unlimited_start(skb, c);
		if (c->verdict != RG_REQ_PASS) {
			/* compressed text is counted by rowgated like binary, and
			 * so is line protocol whose server stores a row per field
			 * (RG_ROWS_VM_SAMPLES: the kernel charges an upper bound) */
			if (rg_rows_in_kernel(c)) {
				c->count_rows = 1;
			} else {
				c->copy_body = 1;
				rg_emit_start(skb, c, h);
			}
		} else if (adm != RG_ADMIT_SHADOW &&
			   (route->protocol == RG_PROTO_PROM_RW ||
			    (route->protocol == RG_PROTO_LINE &&
			     c->profile == RG_PROFILE_VICTORIAMETRICS))) {
			/* series (victoria-metrics: lines too, by a db tag) may
			 * name databases of their own, limited even when the
			 * request's database is not: rowgated charges them
			 * after the fact.  Not a write a shadow limit would
			 * have refused: it passes whole, uncharged */
			c->copy_body = 1;
			rg_emit_start(skb, c, h);
		}
	}
	/* victoria-metrics files a line under its db tag, not the query's:
	 * each line's is read as it passes (rg_body_db_check) */
	if (route && route->protocol == RG_PROTO_LINE && c->profile == RG_PROFILE_VICTORIAMETRICS &&
	    rg_http_identity_encoding(h) &&
	    (c->verdict == RG_REQ_ADMIT || c->verdict == RG_REQ_PASS)) {
		c->scan_db = 1;
		rg_lp_dbtag_init(&c->dbt);
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
		/* the unread body would follow the 429: it closes */
		c->keep_alive = 0;
		rg_request_end(skb, c, end);
		c->reject_estimated = 1;
	}
	return 0;
}

/*
 * Charge the rows of the current request that arrived so far (counted, or
 * the estimate of the bytes so far): servers insert while reading, and an
 * aborted request keeps what it sent.  A global function, so its stack is
 * not on the verdict's deepest call chain (6.1 caps that chain at 512
 * bytes).
 */
__noinline int rg_charge_arrived(struct __sk_buff *skb, struct rg_conn *arg)
{
	struct rg_conn *c = rg_conn_again(skb, arg);
	__u64 so_far;

	if (!c)
		return 0;
	/* chunk-size lines alone store nothing */
	if (c->phase == RG_PHASE_BODY_CHUNKED && !c->chunk.data_seen)
		return 0;
	so_far = c->count_rows ? c->req_rows : c->copy_body ? rg_estimate_rows(c) : 0;
	if (so_far > c->charged_rows) {
		rg_charge(&c->pk.db, so_far - c->charged_rows, 0, c->verdict == RG_REQ_ADMIT);
		c->charged_rows = so_far;
	}
	return 0;
}

/*
 * A line of the body named database dbt.key in its db tag, and
 * victoria-metrics will file it there (docs/threat-model.md#which-database).
 * Unless that database may take rows now, the line never reaches the
 * server: this skb becomes a closing 429 for that database (body bytes
 * that passed before it stay with the server, which inserts while
 * reading), or, when the request's head is in this skb behind a request
 * still unanswered, its method is voided as at the head.  Returns 1 when
 * the walk stops.
 */
__noinline int rg_body_db_check(struct __sk_buff *skb, struct rg_conn *arg)
{
	struct rg_conn *c = rg_conn_again(skb, arg);
	struct rg_walk *w;
	bool pipelined;

	if (!c || !rg_lp_dbtag_key(&c->dbt))
		return 0;
	w = &c->w;
	/* the request's own database was admitted with its head */
	if (rg_db_key_equal(&c->dbt.key, &c->pk.db) && c->verdict == RG_REQ_ADMIT)
		return 0;
	if (rg_admit(&c->dbt.key, &c->reject) != RG_ADMIT_NO)
		return 0;
	pipelined = w->pass_end > 0 ||
		    (c->awaiting && rg_server_write_seq(skb) == c->write_seq_mark);
	if (w->must_pass || (pipelined && !w->req_in_skb)) {
		rg_global_inc(body_db_unenforced);
		return 0;
	}
	/* the answer names the database that refused, its rows a guess */
	__builtin_memcpy(&c->pk.db, &c->dbt.key, sizeof(c->pk.db));
	c->db_len = c->dbt.len;
	rg_global_inc(body_db_refused);
	/* the copy stops here: its bytes so far keep their estimate */
	c->copy_body = 0;
	w->body_open = 0;
	if (pipelined) {
		if (rg_void_method(skb, c)) {
			rg_global_inc(body_db_unenforced);
			return 0;
		}
		rg_void_request(skb, c, w, c->protocol);
		return 1;
	}
	if (c->req_content_length > c->body_bytes)
		c->body_bytes = c->req_content_length;
	c->reject_rows = rg_estimate_rows(c) ?: 1;
	c->reject_estimated = 1;
	rg_account_reject(&c->pk.db, c->reject_rows, &c->reject);
	c->verdict = RG_REQ_REJECT;
	w->respond = RG_RESPOND_429_CLOSE;
	w->stop = 1;
	return 1;
}

/* A head's first byte, at skb offset off, is where its request starts:
 * what a refusal cuts from and a split head is held back from.  Its parser
 * starts there, in the run's scratch buffer (h).  A global function: the
 * parser's zeroing is not repeated in each caller. */
__noinline int rg_head_begin(struct rg_conn *c, struct rg_http_head *h, __u32 off)
{
	if (!c || !h)
		return 0;
	rg_http_head_init(h, c->requests == 0, c->profile, c->last_post);
	c->head_begun = 1;
	c->w.req_start = off;
	c->w.req_in_skb = 1;
	return 0;
}

/* One byte of the request stream (all phases), h the head parser's state,
 * which the caller began at the head's first byte (rg_head_begin); returns
 * 1 to stop. */
__noinline int rg_feed_byte(struct __sk_buff *skb, struct rg_conn *c, __u32 off, __u32 ch,
			    struct rg_http_head *h)
{
	struct rg_walk *w;
	int r;

	if (!skb || !c || !h)
		return 1;
	w = &c->w;
	switch (c->phase) {
	case RG_PHASE_HEAD:
		r = rg_http_head_step(h, (__u8)ch);
		if (r == RG_HEAD_DONE)
			rg_head_done(skb, c, off + 1);
		else if (r < 0)
			rg_fail(c, w, r);
		break;
	case RG_PHASE_BODY_LENGTH:
		c->body_bytes++;
		if (c->count_rows)
			c->req_rows += rg_lp_step(&c->lp, (__u8)ch);
		if (c->scan_db && rg_lp_dbtag_step(&c->dbt, (__u8)ch) && rg_body_db_check(skb, c))
			break;
		if (--c->body_remaining == 0)
			rg_request_end(skb, c, off + 1);
		break;
	case RG_PHASE_BODY_CHUNKED:
		c->body_bytes++;
		r = rg_chunked_step(&c->chunk, (__u8)ch);
		if (r == RG_CHUNK_DATA && c->count_rows)
			c->req_rows += rg_lp_step(&c->lp, (__u8)ch);
		if (r == RG_CHUNK_DATA && c->scan_db && rg_lp_dbtag_step(&c->dbt, (__u8)ch) &&
		    rg_body_db_check(skb, c))
			break;
		if (r == RG_CHUNK_DONE)
			rg_request_end(skb, c, off + 1);
		else if (r == RG_CHUNK_ERR)
			rg_fail(c, w, RG_HEAD_ERR_FRAMING);
		break;
	}
	return w->stop ? 1 : 0;
}

#ifndef RG_BUILD_ID
#define RG_BUILD_ID 1
#endif
/* Which build of this object is loaded (bpftool map dump of .rodata;
 * rowgatectl status finds it by name, RG_BUILD_ID_VAR). */
const volatile __u32 rg_build_id = RG_BUILD_ID;

#endif /* ROWGATE_BPF_REQUEST_H */
