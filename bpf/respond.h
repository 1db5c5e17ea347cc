/* SPDX-License-Identifier: GPL-2.0 */
/* The verdict's own answers, a 429 or a 400: planned to the bytes TCP must
 * charge (rowgate/response.h, docs/design.md#tcp-read-accounting), written
 * over the skb that carries them, padded, and sent back out of the socket.
 */
#ifndef ROWGATE_BPF_RESPOND_H
#define ROWGATE_BPF_RESPOND_H

#include "base.h"
#include "maps.h"
#include "admit.h"
#include "conn.h"
#include "skb_edit.h"
#include "scratch.h"

/* The 429 of the rejection the connection holds (c->reject, reject_rows):
 * what the verdict's answer and egress's replacement of a voided write
 * both say. */
static __always_inline void rg_response_fill_429(struct rg_response *r, const struct rg_conn *c)
{
	r->kind = RG_RESP_429;
	r->retry_after_s = c->reject.retry_after_s;
	r->rows = c->reject_rows;
	r->quota_rows_per_s = c->reject.quota_rows_per_s;
	r->limit_rows_per_s = c->reject.limit_rows_per_s;
	r->db_len = c->db_len;
	r->estimated = c->reject_estimated;
}

/*
 * Plan the pending response (response.h) into r: sized to every byte
 * received and not yet charged, the skb plus the ledger, since its length is
 * what TCP charges (docs/design.md#tcp-read-accounting).  A global function:
 * the verifier checks the arithmetic once, and its results reach the caller
 * as plain values.
 */
__noinline int rg_plan_response(struct rg_conn *c, struct rg_response *r)
{
	struct rg_walk *w;

	if (!c || !r)
		return -1;
	w = &c->w;
	__builtin_memset(r, 0, sizeof(*r));
	if (w->respond == RG_RESPOND_400) {
		r->kind = RG_RESP_400;
		r->error = w->error == RG_HEAD_ERR_TOO_LARGE ? RG_RESP_ERR_TOO_LARGE :
			   w->error == RG_HEAD_ERR_FRAMING  ? RG_RESP_ERR_FRAMING :
							      RG_RESP_ERR_MALFORMED;
		r->close = 1;
	} else {
		rg_response_fill_429(r, c);
		r->close = w->respond != RG_RESPOND_429;
	}
	return rg_response_plan(r, (__u64)w->len + c->uncharged);
}

/*
 * Plan the response and write its text over the skb's start, grown or cut to
 * the plan's total: the text in a scratch buffer (scratch.h), given back
 * before returning.  Returns the text's length, the plan's total and whether
 * it closes in *total and *close; -1 on failure.
 */
static __always_inline int rg_respond_text(struct __sk_buff *skb, struct rg_conn *c,
					   __u32 *total, __u8 *close)
{
	struct rg_scratch_cpu *cpu = rg_scratch_cpu();
	struct rg_scratch *s;
	int slot, ret = -1;
	__u32 text;

	slot = rg_scratch_claim(cpu);
	if (slot < 0 || !cpu)
		return -1;
	s = rg_scratch_of(cpu, slot);
	if (rg_plan_response(c, &s->plan))
		goto out;
	text = s->plan.text_len;
	*total = s->plan.total_len;
	*close = s->plan.close;
	if (rg_response_write(&s->text, &s->plan, &c->pk.db) != text || text == 0 ||
	    text > *total || text >= RG_RESP_TEXT_MAX) {
		/* writer and plan disagree (never expected) */
		rg_global_inc(internal_errors);
		goto out;
	}
	if (rg_resize(skb, *total))
		goto out;
	if (bpf_skb_store_bytes(skb, 0, s->text.b, ((text - 1) & (RG_RESP_TEXT_MAX - 1)) + 1, 0))
		goto out;
	ret = (int)text;
out:
	rg_scratch_put(cpu, slot);
	return ret;
}

/*
 * Turn the skb into the planned response and send it back out of the same
 * socket: the text, then the JSON's space padding.  Only when even the
 * short form cannot fit does it grow, with Connection: close.  A global
 * function: verified once, not once for each state the verdict reaches it in.
 */
__noinline int rg_respond(struct __sk_buff *skb, struct rg_conn *c)
{
	__u32 total = 0;
	__u8 close = 0;
	int text;

	if (!skb || !c)
		return -1;
	text = rg_respond_text(skb, c, &total, &close);
	if (text < 0)
		return -1;
	if (total > (__u32)text) {
		struct rg_pad_ctx p = { .skb = skb, .from = (__u32)text, .len = total };

		bpf_loop((p.len - p.from + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_pad_cb,
			 &p, 0);
		if (p.err)
			return -1;
	}
	if (close) {
		c->mode = RG_MODE_CLOSING;
		if ((__u64)total > (__u64)c->w.len + c->uncharged)
			rg_global_inc(responses_close);
		else if (c->w.close_deadline)
			rg_global_inc(responses_close_deadline);
	}
	c->uncharged = 0;
	c->stash_len = 0;
	return 0;
}

#endif /* ROWGATE_BPF_RESPOND_H */
