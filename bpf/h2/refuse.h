/* SPDX-License-Identifier: GPL-2.0 */
/* --grpc-reject keep (docs/grpc.md §6.3): a refused message's stream is
 * reset in place: the rewrites queued for this skb, the refused-stream
 * set, the answers queued for egress, the later frames of refused streams,
 * and the count of the refusals that fall back to GOAWAY. */
#ifndef ROWGATE_BPF_H2_REFUSE_H
#define ROWGATE_BPF_H2_REFUSE_H

#include "../base.h"
#include "../maps.h"
#include "stats.h"
/* copy.h first: it brings rowgate/http.h (bpf/conn.h), whose enum
 * rg_header_id names rowgate/response.h (through egress.h) defines as
 * macros, so http.h must come first */
#include "copy.h"
#include "egress.h"
#include "state.h"
#include "rowgate/abi.h"
#include "rowgate/h2/frame.h"
#include "rowgate/h2/answer.h"

/* An entry of the refused-stream set for a new refusal: a free one, else
 * the ring's next (a client that abandons a refused call never ends its
 * stream: its later frames, if any ever come, reach the server as frames
 * on a stream it reset, a stream error, never a handler call). */
static __always_inline int rg_h2_rej_slot(struct rg_h2_sock *st)
{
	int free = rg_h2_find(st->rej, RG_H2_REJECTED, 0);

	if (free < 0)
		free = (int)(st->rej_next++ & (RG_H2_REJECTED - 1));
	return free;
}

/* The parser's slot of a refused stream may go to a new stream. */
static __always_inline void rg_h2_mark_refused(struct rg_h2_conn *h, __s8 slot, __u32 sid)
{
	if (slot >= 0 && slot < RG_H2_STREAM_SLOTS && h->s[rg_h2_slot(slot)].id == sid)
		h->s[rg_h2_slot(slot)].refused = 1;
}

/* Queue a rewrite of the current frame; 0, or why none fits: split (the
 * frame's header is not in this skb) or RG_H2_FB_PER_SKB. */
static __always_inline int rg_h2_op(struct rg_h2_sock *st, __u32 kind, int split)
{
	struct rg_h2_op *op;

	if (st->fh_off == ~0U)
		return split;
	if (st->nops >= RG_H2_OPS)
		return RG_H2_FB_PER_SKB;
	op = &st->ops[st->nops & (RG_H2_OPS - 1)];
	op->off = st->fh_off;
	op->sid = st->h.fsid;
	op->flen = st->h.flen;
	op->kind = kind;
	st->nops++;
	return 0;
}

/* Whether egress can take one more refused stream's answer and kernel
 * SETTINGS: 0, or the enum rg_h2_fallback why not. */
static __always_inline int rg_h2_out_room(const struct rg_h2_out *o)
{
	if (!o || o->lost || o->closing)
		return RG_H2_FB_EGRESS;
	if (o->ack_untracked || /* the SETTINGS queue overflowed once */
	    o->ans_tail - RG_READ_ONCE(o->ans_head) >= RG_H2_ANSWERS ||
	    o->settings_tail - RG_READ_ONCE(o->settings_head) >= RG_H2_SETTINGS_QUEUE)
		return RG_H2_FB_FULL;
	return 0;
}

/*
 * Reset the current DATA frame's stream in the server's view: queue the
 * frame's rewrite (kind: RG_H2_OP_REWRITE or RG_H2_OP_EARLY), and account
 * the stream as refused: its later messages in this frame are gone with
 * it, the client's later frames on it become filler, its parser slot
 * (slot) may go to a new stream, and the window of the hidden DATA is owed
 * to the client.  0, or rg_h2_op's reason (split) why no rewrite fits.
 */
static __always_inline int rg_h2_reset_stream(struct rg_h2_sock *st, struct rg_h2_out *o,
					      __u32 kind, int split, __s8 slot)
{
	__u32 sid = st->h.fsid;
	int r = rg_h2_op(st, kind, split);

	if (r)
		return r;
	st->resets++;
	st->frame_rej = sid;
	if (!(st->h.fflags & RG_H2_FLAG_END_STREAM))
		st->rej[rg_h2_rej_slot(st) & (RG_H2_REJECTED - 1)] = sid;
	rg_h2_mark_refused(&st->h, slot, sid);
	RG_FETCH_ADD(&o->owed_in, st->h.flen);
	return 0;
}

/* A refused stream's answer: rows (estimated or not) of the database
 * st->db names, at the quota and limit rg_admit found. */
static __always_inline void rg_h2_answer_set(struct rg_h2_answer *a, const struct rg_h2_sock *st,
					     __u32 sid, __u64 rows, __u8 estimated)
{
	a->sid = sid;
	a->hdrs_sent = 0;
	a->estimated = estimated;
	a->rows = rows;
	a->quota_rows_per_s = st->info.quota_rows_per_s;
	a->limit_rows_per_s = st->info.limit_rows_per_s;
	a->db_len = st->db_len;
	a->retry_after_s = st->info.retry_after_s > 0xffffffffULL ? 0xffffffffU :
								  (__u32)st->info.retry_after_s;
	__builtin_memcpy(&a->db, &st->db, sizeof(a->db));
}

/* Queue a refused stream's answer (rows of st->db) and its kernel
 * SETTINGS for egress. */
static __always_inline void rg_h2_answer_push(struct rg_h2_sock *st, struct rg_h2_out *o,
					      __u32 sid, __u64 rows, __u8 estimated)
{
	__u32 t = o->ans_tail;

	rg_h2_answer_set(&o->ans[t & (RG_H2_ANSWERS - 1)], st, sid, rows, estimated);
	/* a full barrier between this publication and the read of resp_open */
	RG_FETCH_ADD(&o->ans_tail, 1);
	rg_h2_out_resp_sent(o, t);
	rg_h2_out_settings(o, true);
	rg_h2_stats_inc(h2_reject_kept);
}

/*
 * --grpc-reject keep: the refused message completes in the current DATA
 * frame; rewrite that frame into RST_STREAM + a kernel SETTINGS + filler
 * and queue the stream's answer for egress (docs/grpc.md §6.3).  Returns
 * 0 when kept, else the enum rg_h2_fallback why the connection must close
 * instead.
 */
static __always_inline int rg_h2_keep_reject(struct rg_h2_sock *st, struct rg_h2_out *o)
{
	__u32 sid = st->h.fsid;
	int r;

	if (!o || o->lost || o->closing)
		return RG_H2_FB_EGRESS;
	if (o->ack_untracked)
		return RG_H2_FB_FULL; /* the SETTINGS queue overflowed once */
	/* messages complete in DATA frames of their stream: defensive */
	if (st->h.ftype != RG_H2_DATA || sid != st->reject_sid)
		return RG_H2_FB_HEAD_SPLIT;
	if (st->h.flen < RG_H2_REWRITE_MIN_PAYLOAD)
		return RG_H2_FB_SHORT;
	if (st->resets >= RG_H2_RESETS_PER_SKB)
		return RG_H2_FB_PER_SKB;
	if (!rg_grpc_db_plain(&st->db, st->db_len))
		return RG_H2_FB_NAME;
	r = rg_h2_out_room(o);
	if (r)
		return r;
	r = rg_h2_reset_stream(st, o, RG_H2_OP_REWRITE, RG_H2_FB_HEAD_SPLIT, st->h.done_slot);
	if (r)
		return r;
	rg_h2_answer_push(st, o, sid, st->reject_rows, (__u8)st->reject_estimated);
	st->reject = 0;
	return 0;
}

/*
 * Whether the current DATA frame, hidden from the server, is to give the
 * window of all DATA hidden so far back (docs/grpc.md#h2-give-back): no
 * answer is queued that would, the queues have room, and its SETTINGS and
 * filler header are in this skb (skb_len bytes).  Called after owed_in
 * grew (a full barrier): an answer egress takes after this read of
 * ans_head reads owed_in after the add.
 */
static __always_inline bool rg_h2_give_back_due(const struct rg_h2_sock *st,
						const struct rg_h2_out *o, __u32 skb_len)
{
	return st->h.flen >= RG_H2_GIVE_BACK_MIN_PAYLOAD && st->fh_off != ~0U &&
	       st->fh_off + RG_H2_GIVE_BACK_HEAD_BYTES <= skb_len &&
	       RG_READ_ONCE(o->ans_head) == o->ans_tail && !rg_h2_out_room(o);
}

/* --grpc-reject keep: a client frame on a reset stream (DATA,
 * WINDOW_UPDATE, RST_STREAM) never reaches the server: the server would
 * answer it with a stream error (docs/grpc.md §6.2.4).  0, or the enum
 * rg_h2_fallback why it cannot. */
static __always_inline int rg_h2_keep_frame(struct rg_h2_sock *st, struct rg_h2_out *o,
					    __u32 skb_len)
{
	__u32 kind = RG_H2_OP_FILL;
	__u8 type = st->h.ftype;
	int i, r;

	if (st->h.fsid == 0 ||
	    (type != RG_H2_DATA && type != RG_H2_WINDOW_UPDATE && type != RG_H2_RST_STREAM))
		return 0;
	i = rg_h2_find(st->rej, RG_H2_REJECTED, st->h.fsid);
	if (i < 0)
		return 0;
	if (type == RG_H2_DATA && o) {
		/* the server never gives this window back */
		RG_FETCH_ADD(&o->owed_in, st->h.flen);
		if (rg_h2_give_back_due(st, o, skb_len))
			kind = RG_H2_OP_GIVE_BACK;
	}
	r = rg_h2_op(st, kind, RG_H2_FB_LATER_SPLIT);
	if (r)
		return r;
	if (kind == RG_H2_OP_GIVE_BACK) {
		/* an entry without a stream: egress writes the window only */
		o->ans[o->ans_tail & (RG_H2_ANSWERS - 1)].sid = 0;
		__sync_fetch_and_add(&o->ans_tail, 1);
		rg_h2_out_settings(o, true);
		rg_h2_stats_inc(h2_give_backs);
	}
	/* a message completing in it is gone with it, not refused again */
	st->frame_rej = st->h.fsid;
	/* and the frame is passed unread, its stream's slot let go, unless
	 * it carries on a compressed message's copy (its rows are counted as
	 * rejected from the whole copy): then the slot is only marked, and
	 * may go to a new stream */
	if (type == RG_H2_DATA && !rg_h2_copy_open(st))
		rg_h2_frame_unread(&st->h);
	else
		rg_h2_mark_refused(&st->h, st->h.slot, st->h.fsid);
	if (type == RG_H2_RST_STREAM || (type == RG_H2_DATA && (st->h.fflags & RG_H2_FLAG_END_STREAM)))
		st->rej[i & (RG_H2_REJECTED - 1)] = 0;
	return 0;
}

/* One lookup for h2_reject_fallback and its reason's counter.  A global
 * function: inlined, it grew rg_h2_byte_cb's frame past what 6.1 allows on
 * the verdict -> byte callback -> rg_h2_message chain (512 bytes). */
__noinline int rg_h2_count_fallback(int why)
{
	__u32 zero = 0;
	struct rg_h2_stats *g = bpf_map_lookup_elem(&RG_MAP_H2_STATS, &zero);

	if (!g)
		return 0;
	__sync_fetch_and_add(&g->h2_reject_fallback, 1);
	switch (why) {
	case RG_H2_FB_HEAD_SPLIT:
		__sync_fetch_and_add(&g->h2_fallback_head_split, 1);
		break;
	case RG_H2_FB_SHORT:
		__sync_fetch_and_add(&g->h2_fallback_short, 1);
		break;
	case RG_H2_FB_LATER_SPLIT:
		__sync_fetch_and_add(&g->h2_fallback_later_split, 1);
		break;
	case RG_H2_FB_FULL:
		__sync_fetch_and_add(&g->h2_fallback_full, 1);
		break;
	case RG_H2_FB_PER_SKB:
		__sync_fetch_and_add(&g->h2_fallback_per_skb, 1);
		break;
	case RG_H2_FB_NAME:
		__sync_fetch_and_add(&g->h2_fallback_name, 1);
		break;
	default:
		__sync_fetch_and_add(&g->h2_fallback_egress, 1);
		break;
	}
	return 0;
}

#endif /* ROWGATE_BPF_H2_REFUSE_H */
