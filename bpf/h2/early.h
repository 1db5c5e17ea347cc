/* SPDX-License-Identifier: GPL-2.0 */
/* --grpc-reject keep where the refusal cannot wait for the completing
 * frame: the stash (frame bytes held back for the next skb,
 * docs/grpc.md#h2-stash), refusals decided at a DATA frame's header
 * (docs/grpc.md#h2-early) and at a short tail (docs/grpc.md#h2-short-tail). */
#ifndef ROWGATE_BPF_H2_EARLY_H
#define ROWGATE_BPF_H2_EARLY_H

#include "../base.h"
#include "../maps.h"
#include "../admit.h"
#include "../conn.h"
#include "../skb_edit.h"
#include "stats.h"
#include "egress.h"
#include "state.h"
#include "judge.h"
#include "refuse.h"
#include "rowgate/abi.h"
#include "rowgate/h2/result.h"
#include "rowgate/h2/msg.h"
#include "rowgate/h2/grpc.h"
#include "rowgate/h2/frame.h"
#include "rowgate/h2/stash.h"
#include "rowgate/h2/answer.h"

/*
 * --grpc-reject keep: hold back the skb's last frame bytes
 * (rg_h2_stash_bytes) in the connection's stash, the one HTTP/1 heads use
 * (docs/design.md#split-heads; an HTTP/2 connection never has a head
 * stashed), and cut them off: the next skb gets them in front
 * (rg_h2_unstash), so the frame's header is in hand when its message is
 * decided (docs/grpc.md#h2-stash).  Returns 1 when the whole skb is held
 * (it is then 0 bytes long: dropped, it charges nothing), else 0.  A global
 * function: its stack is not on the byte loop's call chain.
 */
__noinline int rg_h2_hold(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u64 cookie;
	struct rg_conn *c;
	__u32 len, n, cut;
	long r;

	if (!skb || !st)
		return 0;
	len = skb->len;
	n = rg_h2_stash_bytes(&st->h, len, st->fh_off);
	if (n == 0 || n > len || n > RG_H2_STASH_MAX)
		return 0;
	cut = len - n;
	/* a rewrite queued at or past the cut is written in this skb */
	if (st->nops && st->ops[(st->nops - 1) & (RG_H2_OPS - 1)].off >= cut)
		return 0;
	if (cut && len > RG_CHANGE_TAIL_MAX)
		return 0; /* change_tail cannot shrink it */
	cookie = bpf_get_socket_cookie(skb);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c || c->stash_len)
		return 0;
	if (rg_stash_append(skb, c, cut, n))
		return 0;
	/* the held bytes are charged when the server reads them in front of
	 * the next skb, not now (docs/design.md#tcp-read-accounting) */
	r = cut ? bpf_skb_change_tail(skb, cut, 0) : rg_empty_skb(skb);
	if (r) {
		c->stash_len = 0;
		c->uncharged -= n;
		if (r == -2) {
			/* the skb lost bytes the server has not seen */
			rg_global_inc(internal_errors);
			st->err = RG_H2_ERR_PROTOCOL;
		}
		return 0;
	}
	st->stash_whole = st->h.st != RG_H2S_FRAME_HDR;
	rg_h2_stats_inc(h2_stashed);
	return cut == 0;
}

/* Write the held bytes in front of the skb: how many, or -1. */
__noinline int rg_h2_unstash(struct __sk_buff *skb)
{
	__u64 cookie;
	struct rg_conn *c;
	__u32 n;

	if (!skb)
		return -1;
	cookie = bpf_get_socket_cookie(skb);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return -1;
	n = c->stash_len;
	if (!n)
		return 0;
	if (n > RG_H2_STASH_MAX || rg_unstash(skb, c)) {
		c->uncharged -= n;
		c->stash_len = 0;
		return -1;
	}
	return (int)n;
}

/*
 * --grpc-reject keep, a DATA frame too large to hold back
 * (docs/grpc.md#h2-early): the skb ends inside it, its header is in this
 * skb, and the message it carries completes in it, so that message is
 * decided now, on the database its RequestHeader named and the bucket as
 * it is now, while the header can still be rewritten.  Refused: the frame
 * becomes RST_STREAM + unknown filler here, its last 9 bytes the kernel
 * SETTINGS (rg_h2_early_tail), and the answer is queued with the message's
 * rows when the frame ends (rg_h2_early_push).  Admitted, or not decidable
 * yet: nothing changes, the message is judged when it completes.  Returns
 * 1 when refused.  A global function: not on the byte loop's call chain.
 */
__noinline int rg_h2_early_decide(struct __sk_buff *skb, struct rg_h2_sock *st,
				  struct rg_h2_out *o)
{
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	struct rg_h2_stream *s;
	struct rg_h2_conn *h;
	__u32 len, sid, head_min = RG_H2_EARLY_HEAD_BYTES;
	int n;

	if (!skb || !st)
		return 0;
	h = &st->h;
	len = skb->len;
	sid = h->fsid;
	/* a skb that cannot be cut (rg_h2_hold) is judged with the frame's
	 * header alone in it: the rest of the head goes in the next skb */
	if (st->fh_off && st->fh_off < len && len > RG_CHANGE_TAIL_MAX)
		head_min = RG_H2_FRAME_HDR_BYTES;
	if (st->early_sid || rg_h2_early_state(h, len, st->fh_off, head_min) != RG_H2_EARLY_READY)
		return 0;
	if (rg_h2_stream_refused(st, sid))
		return 0; /* already refused */
	if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
		return 0;
	s = &h->s[rg_h2_slot(h->slot)];
	if (rg_grpc_db_hidden(&s->m)) {
		/* --grpc-compressed debt: on the databases the connection's
		 * earlier compressed messages named (refuse: fails closed at
		 * completion) */
		if (!rg_h2_compressed_debt || rg_h2_compressed_admit(st) != RG_ADMIT_NO)
			return 0;
	} else {
		n = rg_grpc_db_key_in(&s->m, &st->db, st->db_raw);
		if (n < 0 || !rg_grpc_db_plain(&st->db, (__u32)n))
			return 0;
		st->db_len = (__u32)n;
		__builtin_memcpy(&db, &st->db, sizeof(db));
		if (rg_admit(&db, &st->info) != RG_ADMIT_NO)
			return 0;
	}
	/* room for everything the refusal needs, else it is judged (and
	 * falls back) at completion as before */
	if (rg_h2_out_room(o) || st->resets >= RG_H2_RESETS_PER_SKB ||
	    rg_h2_reset_stream(st, o, RG_H2_OP_EARLY, 1, h->slot))
		return 0;
	rg_h2_answer_set(&st->early_ans, st, sid, 0, 0); /* its rows when it completes */
	st->early_sid = sid;
	st->early_rows_set = 0;
	/* the frame's bytes from the end of the rewritten head on: the tail
	 * (its last 9 bytes) is pending while this is not 0 */
	st->early_left = RG_H2_FRAME_HDR_BYTES + h->flen - RG_H2_EARLY_HEAD_BYTES;
	st->early_flen = h->flen;
	st->early_head_left = 0;
	if (len - st->fh_off < RG_H2_EARLY_HEAD_BYTES) {
		st->early_head_left = RG_H2_EARLY_HEAD_BYTES - (len - st->fh_off);
		rg_h2_stats_inc(h2_early_head_split);
	}
	rg_h2_stats_inc(h2_reject_early);
	return 1;
}

/*
 * Write what is left of the early-refused frame's head at base: its first
 * bytes ended the skb before, which could not be cut
 * (docs/grpc.md#h2-early-head-split).  Returns how many bytes it wrote,
 * or -1 on a failed write.  In the skb that decided the refusal base is
 * past its end: nothing is written (rg_h2_apply_ops writes the head).
 */
static __always_inline int rg_h2_early_head_rest(struct __sk_buff *skb, struct rg_h2_sock *st,
						 __u32 base)
{
	__u32 len, left, i0, n;
	__u8 *b;

	if (!skb || !st)
		return -1;
	left = st->early_head_left;
	len = skb->len;
	if (!left || base >= len)
		return 0;
	if (left >= RG_H2_EARLY_HEAD_BYTES)
		return -1;
	b = (__u8 *)st->text.b;
	if (rg_h2_put_early_head(b, st->early_sid, st->early_flen) != RG_H2_EARLY_HEAD_BYTES)
		return -1;
	i0 = RG_H2_EARLY_HEAD_BYTES - left;
	n = len - base < left ? len - base : left;
	if (bpf_skb_store_bytes(skb, base, b + (i0 & 31), ((n - 1) & 31) + 1, 0))
		return -1;
	st->early_head_left = left - n;
	return (int)n;
}

/*
 * Write the part of the early-refused frame's last 9 bytes (the kernel
 * SETTINGS) that lies in this skb, from offset base on, where
 * st->early_left bytes of the frame begin, after what is left of its head
 * (rg_h2_early_head_rest).  Returns 1 when the frame ends in this skb, 0
 * when it goes on, -1 on a failed write.
 */
__noinline int rg_h2_early_tail(struct __sk_buff *skb, struct rg_h2_sock *st, __u32 base)
{
	__u32 len, end, lo, hi, i0, n;
	__u8 *b;

	if (!skb || !st || !st->early_left)
		return 0;
	n = rg_h2_early_head_rest(skb, st, base);
	if ((int)n < 0)
		return -1;
	base += n;
	len = skb->len;
	end = base + st->early_left;
	lo = end >= base + RG_H2_SETTINGS_EMPTY_BYTES ? end - RG_H2_SETTINGS_EMPTY_BYTES : base;
	hi = end < len ? end : len;
	if (lo < hi) {
		b = (__u8 *)st->text.b;
		rg_h2_put_settings_empty(b);
		i0 = lo + RG_H2_SETTINGS_EMPTY_BYTES - end;
		n = hi - lo;
		if (i0 >= RG_H2_SETTINGS_EMPTY_BYTES || n > RG_H2_SETTINGS_EMPTY_BYTES - i0)
			return -1;
		if (bpf_skb_store_bytes(skb, lo, b + (i0 & 15), ((n - 1) & 15) + 1, 0))
			return -1;
	}
	if (end <= len) {
		st->early_left = 0;
		return 1;
	}
	st->early_left = end - (base > len ? base : len);
	return 0;
}

/* The early-refused stream's message (in parser slot s) completed, or its
 * frame ended before its short tail: its rows, those read so far. */
__noinline int rg_h2_early_rows(struct rg_h2_sock *st, int s)
{
	struct rg_reject_info info = {};
	struct rg_grpc_msg *m;
	struct rg_db_key db;

	if (!st || st->early_rows_set)
		return 0;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	m = &st->h.s[rg_h2_slot(s)].m;
	st->early_ans.rows = rg_grpc_answer_rows(m);
	st->early_ans.estimated = rg_grpc_rows_estimated(m);
	st->early_rows_set = 1;
	info.quota_rows_per_s = st->early_ans.quota_rows_per_s;
	info.limit_rows_per_s = st->early_ans.limit_rows_per_s;
	__builtin_memcpy(&db, &st->early_ans.db, sizeof(db));
	/* a compressed message's rejected rows: counted by rowgated from
	 * its copy */
	rg_account_reject(&db, m->rows, &info);
	return 0;
}

/*
 * The early-refused frame ended: queue its answer and its SETTINGS for
 * egress.  0, or the enum rg_h2_fallback why the connection must close
 * (the 429 then names the refused message).
 */
__noinline int rg_h2_early_push(struct rg_h2_sock *st, struct rg_h2_out *o)
{
	struct rg_h2_answer *a;
	__u32 t;
	int why;

	if (!st || !st->early_sid)
		return 0;
	why = st->early_rows_set ? rg_h2_out_room(o) : RG_H2_FB_HEAD_SPLIT;
	if (why) {
		st->reject_sid = st->early_sid;
		st->reject_rows = st->early_ans.rows;
		st->reject_estimated = st->early_ans.estimated;
		st->info.quota_rows_per_s = st->early_ans.quota_rows_per_s;
		st->info.limit_rows_per_s = st->early_ans.limit_rows_per_s;
		st->info.retry_after_s = st->early_ans.retry_after_s;
		st->db_len = st->early_ans.db_len;
		__builtin_memcpy(&st->db, &st->early_ans.db, sizeof(st->db));
		st->early_sid = 0;
		return why;
	}
	t = o->ans_tail;
	a = &o->ans[t & (RG_H2_ANSWERS - 1)];
	__builtin_memcpy(a, &st->early_ans, sizeof(*a));
	RG_FETCH_ADD(&o->ans_tail, 1); /* then resp_open is read */
	rg_h2_out_resp_sent(o, t);
	rg_h2_out_settings(o, true);
	st->early_sid = 0;
	rg_h2_stats_inc(h2_reject_kept);
	return 0;
}

/* rg_h2_tail_judge: a compressed message, for rg_h2_compressed_admit */
#define RG_H2_TAIL_COMPRESSED 2

/*
 * --grpc-reject keep: an unpadded DATA frame ended at the byte just
 * stepped, its stream's message, in parser slot `slot`, half-read: whether
 * that message is to be refused now (rg_h2_tail_refuse), while this
 * frame's header can still be rewritten, because what is left of it may
 * come in a frame too short to rewrite (rg_h2_short_tail_ready,
 * docs/grpc.md#h2-short-tail): 1 when its database's bucket refuses it
 * (st->db, st->info set); RG_H2_TAIL_COMPRESSED when it is compressed
 * (--grpc-compressed debt), to be judged by rg_h2_compressed_admit; 0
 * otherwise: it is judged at completion.  A global function, as
 * rg_h2_tail_refuse: they fit the byte loop's call chain (512 bytes on
 * 6.1) only one at a time.
 */
__noinline int rg_h2_tail_judge(struct rg_h2_sock *st, int slot)
{
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	struct rg_h2_stream *s;
	__u32 sid;
	int n;

	if (!st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	s = &st->h.s[rg_h2_slot(slot)];
	sid = st->h.fsid;
	if (s->id != sid || (st->h.fflags & RG_H2_FLAG_END_STREAM))
		return 0;
	if (st->fh_off == ~0U || st->h.flen < RG_H2_REWRITE_MIN_PAYLOAD ||
	    !rg_h2_short_tail_ready(s))
		return 0;
	if (rg_h2_stream_refused(st, sid))
		return 0; /* already refused */
	if (rg_grpc_db_hidden(&s->m))
		return rg_h2_compressed_debt ? RG_H2_TAIL_COMPRESSED : 0;
	n = rg_grpc_db_key_in(&s->m, &st->db, st->db_raw);
	if (n < 0 || !rg_grpc_db_plain(&st->db, (__u32)n))
		return 0;
	st->db_len = (__u32)n;
	__builtin_memcpy(&db, &st->db, sizeof(db));
	return rg_admit(&db, &st->info) == RG_ADMIT_NO;
}

/*
 * Refuse the message rg_h2_tail_judge refused like one completing in this
 * frame: the frame becomes RST_STREAM + SETTINGS + filler, the answer
 * carries the rows read so far, and the frame that would complete it
 * becomes filler (rg_h2_keep_frame).  Without room for that, it is judged
 * (and falls back) at completion as before.
 */
__noinline int rg_h2_tail_refuse(struct rg_h2_sock *st, struct rg_h2_out *o, int slot)
{
	struct rg_grpc_msg *m;
	struct rg_db_key db;
	__u64 rows;

	if (!st || !o || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	if (rg_h2_out_room(o) || st->resets >= RG_H2_RESETS_PER_SKB ||
	    rg_h2_reset_stream(st, o, RG_H2_OP_REWRITE, 1, (__s8)slot))
		return 0;
	m = &st->h.s[rg_h2_slot(slot)].m;
	rows = rg_grpc_answer_rows(m);
	__builtin_memcpy(&db, &st->db, sizeof(db));
	rg_account_reject(&db, m->rows, &st->info);
	rg_h2_answer_push(st, o, st->h.fsid, rows, rg_grpc_rows_estimated(m));
	rg_h2_stats_inc(h2_reject_short_tail);
	return 1;
}

/* rg_h2_tail_judge, and rg_h2_tail_refuse when it refuses: the byte
 * loop's call chain has room for one global function under these */
static __always_inline void rg_h2_tail(struct rg_h2_sock *st, struct rg_h2_out *o, int slot)
{
	int r = rg_h2_tail_judge(st, slot);

	if (r == RG_H2_TAIL_COMPRESSED)
		r = rg_h2_compressed_admit(st) == RG_ADMIT_NO;
	if (r == 1)
		rg_h2_tail_refuse(st, o, slot);
}

#endif /* ROWGATE_BPF_H2_EARLY_H */
