/* SPDX-License-Identifier: GPL-2.0 */
/* The server's side of a guarded connection (docs/design.md#egress): the
 * verdict's hooks that record each passed request, and the steps of the
 * sk_msg program (rg_egress, rowgate.bpf.c) that follows the server's
 * HTTP/1.1 responses on the same sockhash, pairs each final response with
 * its request and refunds a charged write the server refused before storing
 * it (docs/design.md#refunds).  It changes the server's bytes in one case
 * only: the 400 that answers a voided request becomes rowgate's 429
 * (docs/design.md#response-ordering).
 */
#ifndef ROWGATE_BPF_EGRESS_H
#define ROWGATE_BPF_EGRESS_H

#include "base.h"
#include "maps.h"
#include "admit.h"
#include "conn.h"
#include "copy.h"
#include "respond.h"
#include "scratch.h"
#include "rowgate/abi.h"
#include "rowgate/http_resp.h"

#define RG_MSG_WINDOW_BYTES 256	      /* bytes pulled into view per step */

/* 1: rowgated attached rg_egress: sockops arms new connections. */
const volatile __u32 rg_egress_on = 0;

/* refused: a copied request (cookie, seq) -> whether its correction or its
 * refund came first (struct rg_refused) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RG_MAX_REFUSED);
	__type(key, struct rg_refused_key);
	__type(value, struct rg_refused);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_REFUSED SEC(".maps");

/* Give a refused write's rows back and move its counters from admitted (or
 * unenforced) to refunded.  db points into a map value (6.1 wants map keys
 * there, not in a global function's argument). */
static __always_inline void rg_refund(const struct rg_db_key *db, __u64 rows, __u8 flags)
{
	struct rg_bucket_value *bv = bpf_map_lookup_elem(&RG_MAP_BUCKETS, db);
	struct rg_db_stats *st = rg_db_stats_get(db);

	if (bv) {
		bpf_spin_lock(&bv->lock);
		rg_bucket_refund(&bv->b, rows);
		bpf_spin_unlock(&bv->lock);
	}
	if (!st)
		return;
	/* -x is added as 2^64 - x */
	if (flags & RG_PEND_ENFORCED) {
		__sync_fetch_and_add(&st->admitted_requests, -1ULL);
		__sync_fetch_and_add(&st->admitted_rows, -rows);
	} else {
		__sync_fetch_and_add(&st->unenforced_requests, -1ULL);
		__sync_fetch_and_add(&st->unenforced_rows, -rows);
	}
	__sync_fetch_and_add(&st->refunded_requests, 1);
	__sync_fetch_and_add(&st->refunded_rows, rows);
}

/*
 * Refund one refused request.  A copied one was charged rowgated's estimate
 * and is corrected to its exact rows later (rg_reconcile): whichever of
 * refund and correction comes second adjusts, so the bucket ends where it
 * would have without the request.
 */
static __always_inline void rg_refund_request(struct rg_egress *eg, struct rg_pending *p,
					      __u64 rows, __u64 cookie,
					      struct rg_refund_scratch *x)
{
	struct rg_proto_key *pk = &eg->keys[p->key & (RG_PENDING_KEYS - 1)];
	__u8 flags = p->flags;
	struct rg_proto_stats *ps;
	struct rg_refused *o;

	if (flags & RG_PEND_COPIED) {
		x->key.cookie = cookie;
		x->key.seq = p->seq;
		x->val.exact_rows = 0;
		x->val.state = RG_REFUSED_REFUNDED;
		x->val.pad = 0;
		if (bpf_map_update_elem(&RG_MAP_REFUSED, &x->key, &x->val, BPF_NOEXIST)) {
			o = bpf_map_lookup_elem(&RG_MAP_REFUSED, &x->key);
			if (!o || o->state != RG_REFUSED_CORRECTED)
				return;
			rows = o->exact_rows; /* corrected already: that is the charge */
		}
		ps = bpf_map_lookup_elem(&RG_MAP_PROTO_STATS, pk);
		if (ps) {
			__sync_fetch_and_add(&ps->admitted_requests, -1ULL);
			__sync_fetch_and_add(&ps->admitted_rows, -rows);
		}
	}
	rg_refund(&pk->db, rows, flags);
}

static __always_inline void rg_egress_lose(struct rg_egress *eg)
{
	__u32 tail = RG_READ_ONCE(eg->tail);

	if (!eg->lost) {
		eg->lost = 1;
		rg_global_inc(egress_lost);
		/* a voided request, always the last, keeps the server's 400 */
		if (tail != RG_READ_ONCE(eg->head) &&
		    (eg->q[(tail - 1) & (RG_PENDING_MAX - 1)].flags & RG_PEND_VOIDED))
			rg_global_inc(pipelined_answered_400);
	}
}

/* Whether a request in flight, [head, tail), has key k. */
static __always_inline bool rg_egress_key_in_flight(struct rg_egress *eg, __u32 tail, __u8 k)
{
	__u32 head = RG_READ_ONCE(eg->head), i;

	for (i = 0; i < RG_PENDING_MAX; i++) {
		if (head + i == tail)
			break;
		if (eg->q[(head + i) & (RG_PENDING_MAX - 1)].key == k)
			return true;
	}
	return false;
}

/* The current request's key: one of the two if it is the same (the newest
 * request's first), else the older one, once no request in flight has it
 * (egress reads a key before it pops its request).  -1: both are in
 * flight.  A global function: its frame is not on the verdict's deepest
 * chain of calls. */
__noinline int rg_egress_key(struct rg_conn *c, __u32 tail)
{
	struct rg_egress *eg;
	struct rg_proto_key *pk;
	__u32 i, n;
	__u8 k;

	if (!c)
		return -1;
	eg = &c->eg;
	k = eg->key_last & (RG_PENDING_KEYS - 1);
	for (n = 0; n < RG_PENDING_KEYS; n++, k ^= 1) {
		pk = &eg->keys[k];
		if (pk->protocol == c->protocol && rg_db_key_equal(&pk->db, &c->pk.db)) {
			eg->key_last = k;
			return k;
		}
	}
	k = (eg->key_last & (RG_PENDING_KEYS - 1)) ^ 1;
	if (rg_egress_key_in_flight(eg, tail, k))
		return -1;
	pk = &eg->keys[k];
	/* word by word: a memcpy here is loaded whole into registers first,
	 * and spilled */
	for (i = 0; i < RG_DB_NAME_MAX / 8; i++)
		((__u64 *)pk->db.name)[i] = ((const __u64 *)c->pk.db.name)[i];
	pk->protocol = c->protocol;
	pk->pad = 0;
	eg->key_last = k;
	return k;
}

/* Verdict side: the request whose head just passed gets a slot. */
static __always_inline void rg_egress_open(struct rg_conn *c)
{
	struct rg_egress *eg = &c->eg;
	struct rg_pending *p;
	__u32 tail = eg->tail;
	int k;

	if (!eg->armed || eg->lost || eg->open)
		return;
	if (tail - RG_READ_ONCE(eg->head) >= RG_PENDING_MAX) {
		rg_egress_lose(eg); /* pipelined deeper than the ring */
		return;
	}
	k = rg_egress_key(c, tail);
	if (k < 0) {
		rg_egress_lose(eg); /* a third database in flight */
		return;
	}
	p = &eg->q[tail & (RG_PENDING_MAX - 1)];
	p->key = (__u8)k;
	p->rows = 0;
	p->seq = c->requests;
	/* known now: egress may pop the slot before the request ends */
	p->flags = 0;
	if (c->req_method_head)
		p->flags = RG_PEND_HEAD;
	p->sync = 0;
	eg->cur = tail;
	eg->open = 1;
	/* publish the slot after it is written */
	__sync_fetch_and_add(&eg->tail, 1);
}

/* Verdict side, at the end of a passed request, after it was charged. */
static __always_inline void rg_egress_close(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_egress *eg = &c->eg;
	struct rg_pending *p;
	__u8 flags;
	__u32 old;

	if (c->verdict == RG_REQ_REJECT)
		return;	   /* never reached the server: the kernel answered */
	rg_egress_open(c); /* passed after all (fail-open): a slot now */
	if (!eg->open)
		return;
	eg->open = 0;
	p = &eg->q[eg->cur & (RG_PENDING_MAX - 1)];
	flags = p->flags & (RG_PEND_HEAD | RG_PEND_VOIDED);
	if ((c->verdict == RG_REQ_ADMIT || c->verdict == RG_REQ_UNENFORCED) && c->req_rows) {
		flags |= RG_PEND_CHARGED;
		if (c->verdict == RG_REQ_ADMIT)
			flags |= RG_PEND_ENFORCED;
		if (c->copy_body)
			flags |= RG_PEND_COPIED;
	}
	p->rows = c->req_rows;
	p->flags = flags;
	old = __sync_fetch_and_or(&p->sync, RG_PEND_DONE);
	/* the server refused it before its body ended */
	if ((old & RG_PEND_REFUSED) && (flags & RG_PEND_CHARGED))
		rg_refund_request(eg, p, c->req_rows, bpf_get_socket_cookie(skb), &eg->sv);
}

/* The kernel's own 429/400 leave through the server's egress too. */
static __always_inline void rg_egress_kernel_answer(struct rg_conn *c, __u32 bytes)
{
	if (c->eg.armed)
		__sync_fetch_and_add(&c->eg.kernel_bytes, bytes);
}

struct rg_msg_walk {
	struct sk_msg_md *msg;
	struct rg_conn *conn;
	__u64 cookie;
	__u32 off; /* next byte of the msg */
	__u32 size;
	__u32 win_start; /* [win_start, win_end) is in view */
	__u32 win_end;
	/* the head of a voided request's answer ended: where it began in this
	 * msg (>= size: in an earlier one, sent already), and its status */
	__u32 voided_start;
	__u16 voided_status;
	__u8 voided;
	__u8 pad;
};

/*
 * The 429 a voided request would have had (docs/design.md#response-ordering),
 * in the kernel's close form, unpadded: the long body, its rows the estimate
 * the verdict left in reject_rows.  Written to s->text; returns its length,
 * 0 on failure.
 */
static __always_inline __u32 rg_egress_plan_429(struct rg_conn *c, struct rg_scratch *s)
{
	struct rg_response *r = &s->plan;

	__builtin_memset(r, 0, sizeof(*r));
	rg_response_fill_429(r, c);
	if (rg_response_plan_unpadded(r) || r->short_form || r->text_len != r->total_len ||
	    r->text_len == 0 || r->text_len >= RG_RESP_TEXT_MAX)
		return 0;
	if (rg_response_write(&s->text, r, &c->pk.db) != r->text_len)
		return 0;
	return r->text_len;
}

/* Copy the 429's first count bytes over the pulled range, in words. */
static __always_inline int rg_egress_store(struct sk_msg_md *msg, const struct rg_scratch *s,
					   __u32 count)
{
	__u8 *data = (__u8 *)(long)msg->data, *end = (__u8 *)(long)msg->data_end;
	__u32 i, words = count / 8;

	if (data + count > end)
		return -1;
	for (i = 0; i < RG_RESP_TEXT_MAX / 8; i++) {
		if (i >= words || data + 8 * i + 8 > end)
			break;
		*(__u64 *)(data + 8 * i) = *(const __u64 *)&s->text.b[8 * i];
	}
	for (i = words * 8; i < words * 8 + 8; i++) {
		if (i >= count || i >= RG_RESP_TEXT_MAX)
			break;
		if (data + i + 1 > end)
			return -1;
		data[i] = s->text.b[i & (RG_RESP_TEXT_MAX - 1)];
	}
	return 0;
}

enum rg_egress_answer {
	RG_ANSWER_429 = 0,    /* the 429 replaced the 400 and what followed */
	RG_ANSWER_400 = -1,   /* the server's bytes are untouched */
	RG_ANSWER_BROKEN = -2, /* neither: the msg must be dropped */
};

/*
 * Replace the server's answer to a voided request, which began at
 * m->voided_start in this msg, and everything after it (the server closes),
 * with the 429 of len bytes: insert all but its last byte in front of the
 * 400, write them, cut the server's bytes but the msg's last one, and
 * write the 429's last byte there.  Kernels without the late-2024 sk_msg
 * pop/push fixes (not every 6.1 build has them) refuse a pop that reaches
 * the msg's end (last >= size) and miscompute a pop or push that begins
 * inside a later scatterlist element: every pop here begins where an
 * element begins (the inserted one, or the one after it) and stops short
 * of the end.  Until the cut, a failure takes the inserted bytes out again
 * and the 400 leaves untouched (the fail-closed fallback).
 */
static __always_inline int rg_egress_write_voided(struct rg_msg_walk *m, struct rg_conn *c,
						  struct rg_scratch *s)
{
	__u32 start = m->voided_start, len, size = m->size;
	__u8 *last;

	len = rg_egress_plan_429(c, s);
	if (len < 2)
		return RG_ANSWER_400;
	if (bpf_msg_push_data(m->msg, start, len - 1, 0))
		return RG_ANSWER_400;
	if (bpf_msg_pull_data(m->msg, start, start + len - 1, 0) ||
	    rg_egress_store(m->msg, s, len - 1) ||
	    bpf_msg_pop_data(m->msg, start + len - 1, size - start - 1, 0)) {
		if (bpf_msg_pop_data(m->msg, start, len - 1, 0))
			return RG_ANSWER_BROKEN;
		return RG_ANSWER_400;
	}
	if (bpf_msg_pull_data(m->msg, start + len - 1, start + len, 0))
		return RG_ANSWER_BROKEN;
	last = (__u8 *)(long)m->msg->data;
	if (last + 1 > (__u8 *)(long)m->msg->data_end)
		return RG_ANSWER_BROKEN;
	*last = s->text.b[(len - 1) & (RG_RESP_TEXT_MAX - 1)];
	return RG_ANSWER_429;
}

/* The same, its text in a scratch buffer (scratch.h) held meanwhile. */
static __always_inline int rg_egress_answer_voided(struct rg_msg_walk *m, struct rg_conn *c)
{
	struct rg_scratch_cpu *cpu;
	int slot, ret;

	if (m->voided_status != 400 || m->voided_start + 1 >= m->size)
		return RG_ANSWER_400;
	cpu = rg_scratch_cpu();
	slot = rg_scratch_claim(cpu);
	if (slot < 0 || !cpu)
		return RG_ANSWER_400;
	ret = rg_egress_write_voided(m, c, rg_scratch_of(cpu, slot));
	rg_scratch_put(cpu, slot);
	return ret;
}

/* One final response head: pop its request, refund if refused. */
static __always_inline int rg_egress_final(struct rg_conn *c, __u64 cookie)
{
	struct rg_egress *eg = &c->eg;
	struct rg_pending *p;
	__u32 head = eg->head, old;
	bool refuse;
	__u8 flags;

	if (head == RG_READ_ONCE(eg->tail)) {
		rg_egress_lose(eg); /* an answer to no request we know of */
		return RG_RESP_ERR;
	}
	p = &eg->q[head & (RG_PENDING_MAX - 1)];
	flags = RG_READ_ONCE(p->flags);
	refuse = rg_resp_status_refunds(eg->resp.status);
	old = refuse ? __sync_fetch_and_or(&p->sync, RG_PEND_REFUSED) : RG_READ_ONCE(p->sync);
	rg_global_inc(egress_responses);
	if (refuse && (old & RG_PEND_DONE) && (flags & RG_PEND_CHARGED))
		rg_refund_request(eg, p, p->rows, cookie, &eg->se);
	/* the pop gives the slot and its key back to the verdict: every read
	 * of them is above, and a BPF atomic is fully ordered, so none of
	 * them can pass it (a plain store could, on arm64) */
	RG_FETCH_ADD(&eg->head, 1);
	return rg_resp_begin_body(&eg->resp, flags & RG_PEND_HEAD);
}

static __maybe_unused long rg_msg_cb(__u64 idx, void *ctx)
{
	struct rg_msg_walk *m = ctx;
	struct rg_conn *c = m->conn;
	struct rg_egress *eg;
	__u64 skip, n;
	__u8 *data, *end;
	__u32 i;
	int res;

	if (!c)
		return 1;
	eg = &c->eg;
	if (m->off >= m->size || eg->lost)
		return 1;
	n = m->size - m->off;
	if (eg->resp.state == RG_RS_VERSION && eg->resp.head_bytes == 0 &&
	    (skip = RG_READ_ONCE(eg->kernel_bytes))) {
		/* a kernel answer goes out only between the server's */
		if (skip > n)
			skip = n;
		__sync_fetch_and_add(&eg->kernel_bytes, -skip);
		m->off += skip;
		return 0;
	}
	skip = rg_resp_skippable(&eg->resp);
	if (skip) {
		if (skip > n)
			skip = n;
		/* only a body ends here: nothing to decide */
		rg_resp_skip(&eg->resp, skip);
		m->off += skip;
		return 0;
	}
	if (m->off >= m->win_end) {
		__u32 to = m->off + RG_MSG_WINDOW_BYTES;

		if (to > m->size)
			to = m->size;
		if (bpf_msg_pull_data(m->msg, m->off, to, 0)) {
			rg_egress_lose(eg);
			return 1;
		}
		m->win_start = m->off;
		m->win_end = to;
	}
	i = (m->off - m->win_start) & (RG_MSG_WINDOW_BYTES - 1);
	data = (__u8 *)(long)m->msg->data;
	end = (__u8 *)(long)m->msg->data_end;
	if (data + i + 1 > end) {
		rg_egress_lose(eg);
		return 1;
	}
	/* head bytes nobody reads (reason, most header values): a word */
	if (m->off + 8 <= m->win_end && data + i + 8 <= end &&
	    rg_resp_skip_word(&eg->resp, *(__u64 *)(data + i))) {
		m->off += 8;
		return 0;
	}
	res = rg_resp_step(&eg->resp, data[i]);
	m->off++;
	if (res == RG_RESP_HEAD) {
		__u32 head = eg->head, head_bytes = eg->resp.head_bytes;
		__u16 status = eg->resp.status;
		bool voided = head != RG_READ_ONCE(eg->tail) &&
			      (eg->q[head & (RG_PENDING_MAX - 1)].flags & RG_PEND_VOIDED);

		res = rg_egress_final(c, m->cookie);
		if (voided) {
			/*
			 * Answered after the loop; the server answers nothing
			 * after it.  Where the head began comes from its length
			 * in the connection's state, not from a mark an earlier
			 * step left on the stack: Verifier workaround: 6.1
			 * verifies a bpf_loop callback as if it ran once, so
			 * code that needs a mark from an earlier round is dead
			 * to it and removed (fixed in 6.7, "verify callbacks as
			 * if they are called unknown number of times").
			 */
			m->voided = 1;
			m->voided_start = m->off >= head_bytes ? m->off - head_bytes : m->size;
			m->voided_status = status;
			m->off = m->size;
			return 1;
		}
	}
	if (res == RG_RESP_ERR)
		rg_egress_lose(eg);
	return 0;
}

#endif /* ROWGATE_BPF_EGRESS_H */
