/* SPDX-License-Identifier: GPL-2.0 */
/* --grpc-compressed debt and OTLP: the copies of messages the kernel
 * does not read, emitted on the bodies ring for rowgated to count
 * (docs/grpc.md#compressed). */
#ifndef ROWGATE_BPF_H2_COPY_H
#define ROWGATE_BPF_H2_COPY_H

#include "../base.h"
#include "../maps.h"
#include "../copy.h"
#include "stats.h"
#include "state.h"
#include "rowgate/abi.h"
#include "rowgate/h2/msg.h"
#include "rowgate/h2/grpc.h"
#include "rowgate/h2/frame.h"

static __always_inline int rg_h2_copy_slot(const struct rg_h2_sock *st)
{
	const struct rg_h2_stream *s;

	if (st->h.st != RG_H2S_DATA || st->h.unrouted_frame)
		return -1;
	if (st->h.slot < 0 || st->h.slot >= RG_H2_STREAM_SLOTS)
		return -1;
	s = &st->h.s[rg_h2_slot(st->h.slot)];
	if (s->pfx_got != 5)
		return -1;
	return s->m.hdr || (rg_h2_compressed_debt && s->m.compressed) ? st->h.slot : -1;
}

/* The current DATA frame goes on with a compressed message whose copy is
 * under way. */
static __always_inline bool rg_h2_copy_open(const struct rg_h2_sock *st)
{
	__s8 slot = st->h.slot;
	__u32 i;

	if (slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return false;
	i = rg_h2_slot(slot);
	return st->h.s[i].id == st->h.fsid && st->h.s[i].pfx_got == 5 &&
	       st->h.s[i].copy_seq > RG_H2_COPY_NONE && st->h.s[i].copy_sid == st->h.fsid;
}

/* Emit the bytes of this skb gathered for a copy. */
__noinline int rg_h2_copy_flush(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u32 slot;

	if (!skb || !st || st->cp_slot < 0 || st->cp_slot >= RG_H2_STREAM_SLOTS)
		return 0;
	slot = rg_h2_slot(st->cp_slot);
	st->cp_slot = -1;
	if (st->h.s[slot].copy_seq <= RG_H2_COPY_NONE)
		return 0;
	if (rg_emit_bytes(skb, st->h.s[slot].copy_seq, st->cp_from, st->cp_to)) {
		st->h.s[slot].copy_seq = RG_H2_COPY_NONE;
		rg_h2_stats_inc(h2_compressed_lost);
	}
	return 0;
}

/* Bytes [off, off + n) of this skb are the compressed message of stream
 * slot `slot`: begin its copy at its first bytes (the start record), and
 * gather them, contiguous ones in one range. */
__noinline int rg_h2_copy_extend(struct __sk_buff *skb, struct rg_h2_sock *st, int slot, __u32 off,
				 __u32 n)
{
	struct rg_body_start *rec;
	const struct rg_h2_stream *s;
	__u32 i, sid;

	if (!skb || !st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	i = rg_h2_slot(slot);
	s = &st->h.s[i];
	sid = s->id;
	if (!st->h.s[i].copy_seq || st->h.s[i].copy_sid != sid) {
		st->h.s[i].copy_sid = sid;
		st->h.s[i].copy_seq = RG_H2_COPY_NONE;
		/* a refused stream's frames never reach the server */
		if (rg_h2_stream_refused(st, sid))
			return 0;
		rec = bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);
		if (!rec) {
			rg_global_inc(body_ring_full);
			rg_h2_stats_inc(h2_compressed_lost);
			return 0;
		}
		st->h.s[i].copy_seq = RG_H2_COPY_SEQ_BASE | ++st->copy_next;
		__builtin_memset(rec, 0, sizeof(*rec));
		rec->h.type = RG_BODY_START;
		rec->h.cookie = bpf_get_socket_cookie(skb);
		rec->h.seq = st->h.s[i].copy_seq;
		rec->protocol = s->m.hdr ? s->m.hdr : RG_PROTO_GREPTIME_GRPC;
		if (s->m.hdr) /* an OTLP export's: its header's database */
			rg_grpc_db_key_in(&s->m, &rec->db, st->db_raw);
		else /* a compressed one's: rowgated learns its database */
			st->cdb_wanted = 1;
		rec->admitted = 1;
		rec->content_length = s->m.len;
		__builtin_memcpy(&rec->peer, &st->peer, sizeof(rec->peer));
		bpf_ringbuf_submit(rec, 0);
	}
	if (st->h.s[i].copy_seq == RG_H2_COPY_NONE)
		return 0;
	if (st->cp_slot == slot && st->cp_to == off) {
		st->cp_to += n;
		return 0;
	}
	rg_h2_copy_flush(skb, st);
	st->cp_slot = slot;
	st->cp_from = off;
	st->cp_to = off + n;
	return 0;
}

/* The compressed message of slot `slot` completed (its last byte is
 * gathered) and was judged: its copy's end record; the kernel charged
 * nothing.  A refused one is counted by rowgated as rejected rows. */
__noinline int rg_h2_copy_end(struct __sk_buff *skb, struct rg_h2_sock *st, int slot, int admitted)
{
	__u32 i;

	if (!skb || !st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	i = rg_h2_slot(slot);
	if (st->cp_slot == slot)
		rg_h2_copy_flush(skb, st);
	if (st->h.s[i].copy_seq > RG_H2_COPY_NONE) {
		/* what the kernel charged or refused: an OTLP export's estimate */
		if (rg_body_end_record(bpf_get_socket_cookie(skb), st->h.s[i].copy_seq,
				       st->h.s[i].m.len, st->h.s[i].m.hdr ? st->h.s[i].m.rows : 0,
				       admitted, false)) {
			rg_global_inc(body_ring_full);
			rg_h2_stats_inc(h2_compressed_lost);
		} else {
			rg_h2_stats_inc(h2_compressed_copied);
		}
	}
	st->h.s[i].copy_seq = 0;
	return 0;
}

#endif /* ROWGATE_BPF_H2_COPY_H */
