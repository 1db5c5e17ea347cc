/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* --grpc-reject keep: where a refusal can be written into the client's
 * bytes.  The bytes of a skb held back for the next one (the stash,
 * docs/grpc.md#h2-stash) and whether a message is judged at its DATA
 * frame's header (the early refusal, docs/grpc.md#h2-early), from the
 * parser's state after the skb's last byte. */
#ifndef ROWGATE_H2_STASH_H
#define ROWGATE_H2_STASH_H

#include "../types.h"
#include "msg.h"
#include "pb.h"
#include "grpc.h"
#include "frame.h"

/*
 * --grpc-reject keep: how many bytes at the end of a skb of len bytes to
 * hold back and write in front of the next skb, so that the frame header a
 * rewrite needs is in the skb that decides (docs/grpc.md#h2-stash); 0: none.
 * Two cases, h being the state after the skb's last byte:
 *   - a frame header cut by the skb's end: its h->got bytes;
 *   - a DATA frame of a followed stream, its header at fh_off in this skb
 *     (~0U: an earlier one), its payload unfinished, whose half-read or
 *     next message may be judged at it (complete in it, or leave a short
 *     tail: rg_h2_msg_ends_near): the frame so far, if the whole frame
 *     fits RG_H2_STASH_MAX;
 *   - such a frame too large for that, while its message cannot be judged
 *     at its header yet (rg_h2_early_state): the frame so far, if that
 *     fits RG_H2_STASH_MAX.
 * The held bytes begin with a complete header when h->st is not
 * RG_H2S_FRAME_HDR.
 */
#define RG_H2_STASH_MAX 4096
/* RST_STREAM (13 bytes) + a filler frame header: what the early refusal
 * writes over the start of a frame (rg_h2_put_early_head) */
#define RG_H2_EARLY_HEAD_BYTES 22

/*
 * --grpc-reject keep, a DATA frame too large to hold back whole, the skb
 * of len bytes ending inside it (h: the state after its last byte), its
 * header at fh_off (~0U: an earlier skb): whether its message can be
 * judged now, at the frame's header (docs/grpc.md#h2-early).  head_min:
 * the bytes of the frame the skb must hold, RG_H2_EARLY_HEAD_BYTES, or
 * RG_H2_FRAME_HDR_BYTES for a skb that cannot be held back (the rest of
 * the rewritten head then goes at the next skb's start,
 * docs/grpc.md#h2-early-head-split).
 *   RG_H2_EARLY_READY: the message is judged at this frame
 *	(rg_h2_msg_ends_near: it completes in it, or leaves a short tail),
 *	its prefix, kind (a charged one) and RequestHeader are read (a
 *	compressed one: its prefix), its header is read and the first
 *	head_min bytes of the frame are in this skb;
 *   RG_H2_EARLY_WAIT: it may complete in this frame but is not ready:
 *	hold the frame's start back (rg_h2_stash_bytes) and ask again;
 *   RG_H2_EARLY_NO: not such a frame, or its message is judged elsewhere
 *	(completes later than that, or a kind that is never charged).
 */
enum { RG_H2_EARLY_NO = 0, RG_H2_EARLY_READY, RG_H2_EARLY_WAIT };

/* A refused message's completing DATA frame is rewritten in place into
 * RST_STREAM + SETTINGS + a filler header (answer.h): a payload
 * shorter than this cannot hold them */
#define RG_H2_SHORT_TAIL_BYTES 22

/* Whether the database of the plain message s being read is known
 * (RG_H2_EARLY_READY: a charged kind, its RequestHeader read and the walk
 * not inside it), may be later (RG_H2_EARLY_WAIT), or the message is a
 * kind that is never charged (RG_H2_EARLY_NO). */
RG_INLINE int rg_h2_msg_db_state(const struct rg_h2_stream *s)
{
	if (s->m.kind && !rg_grpc_kind_charged(s->m.kind))
		return RG_H2_EARLY_NO;
	if (!s->m.kind || !s->m.has_header || (s->w.depth >= 1 && s->w.ctx[1] == RG_PB_HEADER))
		return RG_H2_EARLY_WAIT;
	return RG_H2_EARLY_READY;
}

/*
 * Whether the message s, its prefix read, is judged at the current DATA
 * frame (h->left payload bytes to go): it completes in it, or its stream
 * goes on after it with fewer than RG_H2_SHORT_TAIL_BYTES of the message,
 * which a frame too short to rewrite may carry
 * (docs/grpc.md#h2-short-tail).
 */
RG_INLINE bool rg_h2_msg_ends_near(const struct rg_h2_conn *h, const struct rg_h2_stream *s)
{
	__u32 rest = s->m.len - s->w.pos;

	if (rest <= h->left)
		return true;
	return !(h->fflags & RG_H2_FLAG_END_STREAM) && rest - h->left < RG_H2_SHORT_TAIL_BYTES;
}

/*
 * --grpc-reject keep, an unpadded DATA frame without END_STREAM ended at
 * the byte just stepped, s the stream it carried: whether the message
 * half-read in s is judged now, while this frame's header can still be
 * rewritten, because fewer than RG_H2_SHORT_TAIL_BYTES of it are left and
 * what its verdict needs is read: a plain one's database; a compressed
 * one's prefix (docs/grpc.md#h2-short-tail).
 */
RG_INLINE bool rg_h2_short_tail_ready(const struct rg_h2_stream *s)
{
	__u32 rest;

	if (s->pfx_got < 5)
		return false;
	rest = s->m.len - s->w.pos;
	return rest && rest < RG_H2_SHORT_TAIL_BYTES &&
	       (rg_grpc_opaque(&s->m) || rg_h2_msg_db_state(s) == RG_H2_EARLY_READY);
}

RG_INLINE int rg_h2_early_state(const struct rg_h2_conn *h, __u32 len, __u32 fh_off,
			      __u32 head_min)
{
	const struct rg_h2_stream *s;
	int db;

	if (h->st != RG_H2S_DATA && h->st != RG_H2S_PADLEN)
		return RG_H2_EARLY_NO;
	if (h->ftype != RG_H2_DATA || h->unrouted_frame || fh_off >= len)
		return RG_H2_EARLY_NO;
	if (h->flen <= RG_H2_STASH_MAX - RG_H2_FRAME_HDR_BYTES)
		return RG_H2_EARLY_NO; /* held back whole instead */
	if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
		return RG_H2_EARLY_NO;
	s = &h->s[rg_h2_slot(h->slot)];
	if (s->pfx_got < 5)
		return RG_H2_EARLY_WAIT;
	if (!rg_h2_msg_ends_near(h, s))
		return RG_H2_EARLY_NO;
	/* a compressed message is judged on what its connection's earlier
	 * ones named, an OTLP one on its header: its prefix is all it needs */
	if (!rg_grpc_opaque(&s->m)) {
		db = rg_h2_msg_db_state(s);
		if (db != RG_H2_EARLY_READY)
			return db;
	}
	if (h->st == RG_H2S_DATA && len - fh_off >= head_min)
		return RG_H2_EARLY_READY;
	return RG_H2_EARLY_WAIT;
}

RG_INLINE __u32 rg_h2_stash_bytes(const struct rg_h2_conn *h, __u32 len, __u32 fh_off)
{
	const struct rg_h2_stream *s;

	if (h->st == RG_H2S_FRAME_HDR)
		return h->got <= len ? h->got : 0;
	if (h->st != RG_H2S_DATA && h->st != RG_H2S_PADLEN)
		return 0; /* the preface, or not a DATA payload */
	if (h->ftype != RG_H2_DATA || h->unrouted_frame || fh_off >= len)
		return 0;
	if (h->flen > RG_H2_STASH_MAX - RG_H2_FRAME_HDR_BYTES) {
		/* too large to hold whole: its start, while its message may
		 * become judgeable at its header (rg_h2_early_state) */
		if (rg_h2_early_state(h, len, fh_off, RG_H2_EARLY_HEAD_BYTES) != RG_H2_EARLY_WAIT ||
		    len - fh_off > RG_H2_STASH_MAX)
			return 0;
		return len - fh_off;
	}
	if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
		return 0;
	s = &h->s[rg_h2_slot(h->slot)];
	/* a message that goes on past this frame is decided in a later one */
	if (s->pfx_got == 5 && !rg_h2_msg_ends_near(h, s))
		return 0;
	return len - fh_off;
}

#endif /* ROWGATE_H2_STASH_H */
