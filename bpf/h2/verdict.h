/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/2 verdict: connections on a --grpc port that open with the h2c
 * preface are followed frame by frame (rowgate/h2/frame.h), each completed
 * GreptimeDatabase insert message is charged to its database's bucket, and
 * a message the bucket refuses, or HTTP/2 the parser cannot follow, ends
 * the connection with a kernel GOAWAY (docs/grpc.md#7-what-is-built).
 * Streams whose `:path` no gRPC route names pass unread and uncharged
 * (docs/grpc.md#7-path-routing).  A program of its own (rg_h2_verdict in
 * rowgate.bpf.c), reached by a tail call from the HTTP/1 verdict, so it
 * has its own stack and verifier budget.  Here its steps: the byte loop
 * (rg_h2_byte_cb), the GOAWAY that fails closed, the rewrites applied to
 * the skb; the rest of the wing: state.h (struct rg_h2_sock, h2_conns),
 * route.h, copy.h, park.h, judge.h, refuse.h, early.h, egress.h (the server's
 * side), start.h (the HTTP/1 verdict's side). */
#ifndef ROWGATE_BPF_H2_VERDICT_H
#define ROWGATE_BPF_H2_VERDICT_H

#include "../base.h"
#include "../maps.h"
#include "../close.h"
#include "../conn.h"
#include "../skb_edit.h"
#include "stats.h"
#include "egress.h"
#include "state.h"
#include "route.h" /* rg_h2_route_kind, which the HPACK shadow calls */
#include "copy.h"
#include "park.h"
#include "judge.h"
#include "refuse.h"
#include "early.h"
#include "rowgate/abi.h"
#include "rowgate/response.h"
#include "rowgate/h2/result.h"
#include "rowgate/h2/frame.h"
#include "rowgate/h2/stash.h"
#include "rowgate/h2/answer.h"

static __maybe_unused long rg_h2_byte_cb(__u64 idx, void *ctx)
{
	struct rg_h2_loop *l = ctx;
	struct rg_h2_sock *st = l->st;
	__u32 p = st->pos, n;
	int r, fb, cs, tail;

	if (p >= st->win_len) {
		__u32 off = st->win_off + st->win_len, left;

		if (off >= l->skb->len)
			return 1;
		left = l->skb->len - off;
		if (left >= RG_H2_WINDOW_BYTES) {
			if (bpf_skb_load_bytes(l->skb, off, st->win, RG_H2_WINDOW_BYTES))
				goto internal;
			st->win_len = RG_H2_WINDOW_BYTES;
		} else {
			/* left is in [1, RG_H2_WINDOW_BYTES): written so that
			 * Linux 6.1's verifier sees a non-zero length */
			left = ((left - 1) & (RG_H2_WINDOW_BYTES - 1)) + 1;
			if (bpf_skb_load_bytes(l->skb, off, st->win, left))
				goto internal;
			st->win_len = left;
		}
		st->win_off = off;
		st->pos = p = 0;
	}
	cs = rg_h2_copy_slot(st);
	n = rg_h2_skippable(&st->h);
	if (n && cs >= 0) {
		/* a copied message: past the window, to the skb's end */
		__u32 at = st->win_off + p;

		if (n > l->skb->len - at)
			n = l->skb->len - at;
		rg_h2_skip(&st->h, n);
		rg_h2_copy_extend(l->skb, st, cs, at, n);
		st->win_off = at + n;
		st->win_len = 0;
		st->pos = 0;
		return 0;
	}
	if (n) {
		if (n > st->win_len - p)
			n = st->win_len - p;
		rg_h2_skip(&st->h, n);
		st->pos = p + n;
		return 0;
	}
	/* gathered before the step, which may end the stream and free its slot */
	if (cs >= 0)
		rg_h2_copy_extend(l->skb, st, cs, st->win_off + p, 1);
	if (st->h.st == RG_H2S_FRAME_HDR && st->h.got == RG_H2_FRAME_HDR_BYTES - 1) {
		/* streams past the parser's slots (park.h) */
		r = rg_h2_park_frame(l->skb, st, st->win[p & (RG_H2_WINDOW_BYTES - 1)]);
		if (r < 0) {
			st->err = r;
			return 1;
		}
	}
	/* the last byte of an unpadded DATA frame: its stream's slot */
	tail = st->h.st == RG_H2S_DATA && st->h.left == 1 && !st->h.pad_left ? st->h.slot : -1;
	r = rg_h2_step(&st->h, st->win[p & (RG_H2_WINDOW_BYTES - 1)]);
	st->pos = p + 1;
	if (r < 0) {
		st->err = r;
		return 1;
	}
	if (r == 0 && tail >= 0 && rg_h2_keep && !st->must_pass) {
		/* refused at its header already: its rows are those read */
		if (st->early_sid && st->early_sid == st->h.fsid)
			rg_h2_early_rows(st, tail);
		else
			rg_h2_tail(st, l->out, tail);
	}
	if (r == RG_H2_EV_MESSAGE && st->early_sid && st->h.done_sid == st->early_sid) {
		/* refused at its frame's header: only its rows are wanted
		 * (a compressed one's: rowgated's, from its copy) */
		rg_h2_early_rows(st, st->h.done_slot);
		if (cs >= 0)
			rg_h2_copy_end(l->skb, st, cs, 0);
		return 0;
	}
	if (r == RG_H2_EV_MESSAGE) {
		/* a compressed message's databases are looked up here:
		 * rg_h2_message's stack has no room for another call */
		if (cs >= 0)
			st->cverdict = rg_h2_compressed_admit(st);
		fb = rg_h2_message(st);
		/* one completing on a stream refused before its short tail
		 * (rg_h2_tail_refuse) never reached the server: refused */
		if (cs >= 0)
			rg_h2_copy_end(l->skb, st, cs, !fb && !rg_h2_stream_refused(st, st->h.done_sid));
		if (!fb)
			return 0;
		if (fb > 0)
			rg_h2_refused_rows(st);
		/* a compressed message's error fails closed at once */
		if (!rg_h2_keep || (fb < 0 && cs >= 0))
			return 1;
		fb = rg_h2_keep_reject(st, l->out);
		if (fb)
			goto fallback;
		return 0;
	}
	if (r == RG_H2_EV_FRAME) {
		/* the header's last byte is at win_off + p: all of it is in
		 * this skb unless it began in an earlier one */
		if (st->early_sid) {
			/* the early-refused frame ended before this one */
			fb = rg_h2_early_push(st, l->out);
			if (fb)
				goto fallback;
		}
		st->frame_rej = 0;
		st->fh_off = st->win_off + p >= RG_H2_FRAME_HDR_BYTES - 1 ?
				     st->win_off + p - (RG_H2_FRAME_HDR_BYTES - 1) :
				     ~0U;
		if (st->h.ftype == RG_H2_SETTINGS && !(st->h.fflags & RG_H2_FLAG_ACK) && l->out)
			rg_h2_out_settings(l->out, false);
		if (rg_h2_keep && !st->must_pass) {
			fb = rg_h2_keep_frame(st, l->out, l->skb->len);
			if (fb)
				goto fallback;
		}
	}
	return 0;
fallback:
	/* close instead, as for a refused message */
	rg_h2_count_fallback(fb);
	st->reject = 1;
	return 1;
internal:
	rg_global_inc(internal_errors);
	st->err = RG_H2_ERR_PROTOCOL;
	return 1;
}

struct rg_h2_fill_ctx {
	struct __sk_buff *skb;
	__u32 off;
	__u32 len;
	__s32 err;
};

/* One unknown-type frame header every RG_H2_DEFAULT_MAX_FRAME_BYTES: the
 * client's own bytes after the GOAWAY become ignored payload. */
static long rg_h2_fill_cb(__u64 idx, void *ctx)
{
	struct rg_h2_fill_ctx *f = ctx;
	__u32 rem, n;
	__u8 hdr[RG_H2_FRAME_HDR_BYTES] = {};

	if (f->off >= f->len)
		return 1;
	rem = f->len - f->off;
	n = rem - RG_H2_FRAME_HDR_BYTES;
	if (n > RG_H2_DEFAULT_MAX_FRAME_BYTES)
		n = RG_H2_DEFAULT_MAX_FRAME_BYTES;
	/* never leave a tail too short for a frame header */
	if (rem - RG_H2_FRAME_HDR_BYTES - n > 0 && rem - RG_H2_FRAME_HDR_BYTES - n < RG_H2_FRAME_HDR_BYTES)
		n -= RG_H2_FRAME_HDR_BYTES;
	hdr[0] = (__u8)(n >> 16);
	hdr[1] = (__u8)(n >> 8);
	hdr[2] = (__u8)n;
	hdr[3] = RG_H2_FILLER_TYPE;
	f->err = bpf_skb_store_bytes(f->skb, f->off, hdr, sizeof(hdr), 0);
	f->off += RG_H2_FRAME_HDR_BYTES + n;
	return f->err ? 1 : 0;
}

/* The GOAWAY's text in st->text from RG_H2_GOAWAY_HDR_BYTES on: the 429
 * of the refused message, or the 400 of what the parser could not follow;
 * its last stream id in st->goaway_sid.  Returns the text's end.  A global
 * function: rg_h2_verdict's stack has no room for it. */
__noinline __u32 rg_h2_goaway_text(struct rg_h2_sock *st)
{
	struct rg_response *r;
	__u32 last_sid;

	if (!st)
		return 0;
	r = &st->plan;
	__builtin_memset(r, 0, sizeof(*r));
	if (st->reject) {
		r->kind = RG_RESP_429;
		r->retry_after_s = st->info.retry_after_s;
		r->rows = st->reject_rows;
		r->estimated = (__u8)st->reject_estimated;
		r->quota_rows_per_s = st->info.quota_rows_per_s;
		r->limit_rows_per_s = st->info.limit_rows_per_s;
		r->db_len = st->db_len;
		/* the refused stream and those opened after it are named
		 * unprocessed (the client may retry them) unless a later
		 * stream's bytes reached the server already: then that one
		 * may have been handled, and a retry would store it twice.
		 * The last stream id is a client's (odd) stream: nghttp2
		 * takes an even one for a protocol error, grpc-go closes its
		 * transport on it (docs/grpc.md#7-what-is-built). */
		last_sid = st->reject_sid > 2 ? st->reject_sid - 2 : 0;
		if (st->sid_passed > st->reject_sid)
			last_sid = st->sid_passed;
	} else {
		r->kind = RG_RESP_400;
		r->error = st->err == RG_H2_ERR_UNCOUNTED ? RG_RESP_ERR_H2_UNCOUNTED :
							    RG_RESP_ERR_H2;
		/* streams opened in this skb never reached the server */
		last_sid = st->sid_passed;
	}
	st->goaway_sid = last_sid;
	return rg_response_write_body(&st->text, RG_H2_GOAWAY_HDR_BYTES, r, &st->db);
}

/*
 * Turn the skb into a GOAWAY to the client, as long as the skb (every
 * received byte is charged once: docs/design.md#tcp-read-accounting): its
 * debug data is the 429's JSON (or the 400's), padded with spaces; what
 * does not fit one frame becomes unknown-type frames.  Only a skb shorter
 * than the GOAWAY grows (the connection ends anyway).  The last stream id
 * is the one before the refused message's stream: the client may retry
 * that call elsewhere, its server never saw the message.
 */
static __always_inline int rg_h2_goaway(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	struct rg_pad_ctx pad = { .skb = skb };
	struct rg_h2_fill_ctx f = { .skb = skb };
	__u32 text, need, total, payload, last_sid;
	__u8 *b = (__u8 *)st->text.b;

	text = rg_h2_goaway_text(st);
	last_sid = st->goaway_sid;
	if (text <= RG_H2_GOAWAY_HDR_BYTES || text >= RG_RESP_TEXT_MAX)
		return -1;
	need = text;
	total = skb->len;
	if (total < need) {
		if (rg_resize(skb, need))
			return -1;
		total = need;
	}
	payload = total - RG_H2_FRAME_HDR_BYTES;
	if (payload > RG_H2_DEFAULT_MAX_FRAME_BYTES) {
		payload = RG_H2_DEFAULT_MAX_FRAME_BYTES;
		if (total - RG_H2_FRAME_HDR_BYTES - payload < RG_H2_FRAME_HDR_BYTES)
			payload -= RG_H2_FRAME_HDR_BYTES;
	}
	b[0] = (__u8)(payload >> 16);
	b[1] = (__u8)(payload >> 8);
	b[2] = (__u8)payload;
	b[3] = RG_H2_GOAWAY;
	b[4] = 0;
	b[5] = b[6] = b[7] = b[8] = 0;
	b[9] = (__u8)(last_sid >> 24) & 0x7f;
	b[10] = (__u8)(last_sid >> 16);
	b[11] = (__u8)(last_sid >> 8);
	b[12] = (__u8)last_sid;
	b[13] = b[14] = b[15] = 0;
	b[16] = st->reject ? RG_H2_ENHANCE_YOUR_CALM : RG_H2_PROTOCOL_ERROR;
	if (bpf_skb_store_bytes(skb, 0, b, ((need - 1) & (RG_RESP_TEXT_MAX - 1)) + 1, 0))
		return -1;
	pad.from = need;
	pad.len = RG_H2_FRAME_HDR_BYTES + payload;
	if (pad.len > pad.from) {
		bpf_loop((pad.len - pad.from + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_pad_cb,
			 &pad, 0);
		if (pad.err)
			return -1;
	}
	f.off = RG_H2_FRAME_HDR_BYTES + payload;
	f.len = total;
	if (f.off < f.len) {
		bpf_loop(f.len / RG_H2_DEFAULT_MAX_FRAME_BYTES + 2, rg_h2_fill_cb, &f, 0);
		if (f.err || f.off != f.len)
			return -1;
	}
	return 0;
}

/*
 * Write an early-refused frame's head at off; the skb may end inside it:
 * the rest goes at the next skb's start (rg_h2_early_head_rest).  0, or -1
 * on a failed write.  A global function: verified once, not per op.
 */
__noinline int rg_h2_early_head(struct __sk_buff *skb, struct rg_h2_sock *st, __u32 off,
				__u32 sid, __u32 flen)
{
	__u8 *b;
	__u32 n;

	if (!skb || !st || off >= skb->len)
		return -1;
	b = (__u8 *)st->text.b;
	n = skb->len - off;
	if (n > RG_H2_EARLY_HEAD_BYTES)
		n = RG_H2_EARLY_HEAD_BYTES;
	/* the mask keeps 6.1's verifier sure of n's bounds */
	if (rg_h2_put_early_head(b, sid, flen) != RG_H2_EARLY_HEAD_BYTES ||
	    bpf_skb_store_bytes(skb, off, b, ((n - 1) & 31) + 1, 0))
		return -1;
	return 0;
}

/* Write the rewrites the walk queued (same lengths: TCP read accounting). */
static __always_inline int rg_h2_apply_ops(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u8 *b = (__u8 *)st->text.b;
	struct rg_h2_op *op;
	__u32 i;

	for (i = 0; i < RG_H2_OPS; i++) {
		if (i >= st->nops)
			break;
		op = &st->ops[i];
		if (op->kind == RG_H2_OP_REWRITE) {
			if (rg_h2_put_rewrite_head(b, op->sid, op->flen) != RG_H2_REWRITE_HEAD_BYTES ||
			    bpf_skb_store_bytes(skb, op->off, b, RG_H2_REWRITE_HEAD_BYTES, 0))
				return -1;
		} else if (op->kind == RG_H2_OP_EARLY) {
			if (rg_h2_early_head(skb, st, op->off, op->sid, op->flen))
				return -1;
		} else if (op->kind == RG_H2_OP_GIVE_BACK) {
			if (rg_h2_put_give_back_head(b, op->sid, op->flen) != RG_H2_GIVE_BACK_HEAD_BYTES ||
			    bpf_skb_store_bytes(skb, op->off, b, RG_H2_GIVE_BACK_HEAD_BYTES, 0))
				return -1;
		} else {
			b[0] = RG_H2_FILLER;
			b[1] = 0;
			if (bpf_skb_store_bytes(skb, op->off + 3, b, 2, 0))
				return -1;
		}
	}
	return 0;
}

/* Nothing more of this connection reaches the server: queue it for
 * rowgated to reset once the client had time to read the GOAWAY
 * (docs/grpc.md#h2-close). */
static __maybe_unused __noinline void rg_h2_queue_close(struct __sk_buff *skb, __u64 cookie)
{
	struct rg_h2_goaway ev = { .cookie = cookie, .at_ns = bpf_ktime_get_ns() };

	rg_close_event_fill(&ev, skb);
	if (bpf_map_push_elem(&RG_MAP_H2_GOAWAY, &ev, 0))
		rg_h2_stats_inc(h2_goaway_unqueued);
	else
		rg_h2_stats_inc(h2_goaway_queued);
}

#endif /* ROWGATE_BPF_H2_VERDICT_H */
