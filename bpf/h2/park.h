/* SPDX-License-Identifier: GPL-2.0 */
/* Streams past the parser's slots: a stream whose message is half-read
 * waits in h2_parked while other streams' DATA is read, and its next DATA
 * frame's header takes it back into a slot (docs/grpc.md#framing).  The
 * parser (rowgate/h2/frame.h) never sees more than its 16 slots. */
#ifndef ROWGATE_BPF_H2_PARK_H
#define ROWGATE_BPF_H2_PARK_H

#include "../base.h"
#include "../maps.h"
#include "copy.h"
#include "state.h"
#include "stats.h"
#include "rowgate/abi.h"
#include "rowgate/h2/result.h"
#include "rowgate/h2/grpc.h"
#include "rowgate/h2/frame.h"

struct rg_h2_park_key {
	__u64 cookie;
	__u32 sid;
	__u32 pad;
};

/* h2_parked: {socket cookie, stream id} -> the stream's parser state, its
 * copy state with it; an entry per id in rg_h2_sock.parked, deleted when
 * the stream comes back, ends, or its connection closes (rg_conn_close);
 * pinned with h2_conns, whose state it completes */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_H2_PARKED_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rg_h2_park_key);
	__type(value, struct rg_h2_stream);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_PARKED SEC(".maps");

/* Index of sid in st->parked (0: a free entry), -1 if absent. */
static __always_inline int rg_h2_parked_find(struct rg_h2_sock *st, __u32 sid)
{
	int i;

#pragma clang loop unroll(disable)
	for (i = 0; i < RG_H2_PARKED; i++)
		if (st->parked[i] == sid)
			break;
	/* Verifier workaround: read back from memory, the index is one
	 * unknown value, not 112 known ones each verified on its own */
	st->park_at = i < RG_H2_PARKED ? i : -1;
	return RG_READ_ONCE(st->park_at);
}

static __always_inline __u32 rg_h2_parked_idx(int i)
{
	/* callers found i in [0, RG_H2_PARKED) */
	__u32 j = rg_h2_opaque((__u32)i);

	return j < RG_H2_PARKED ? j : 0;
}

/* Parked stream i ended (RST_STREAM, trailers): the server drops its
 * partial message, and so does the kernel. */
static __always_inline void rg_h2_parked_drop(struct rg_h2_sock *st, int i)
{
	struct rg_h2_park_key k = { .cookie = st->cookie };
	__u32 j = rg_h2_parked_idx(i);

	k.sid = st->parked[j];
	bpf_map_delete_elem(&RG_MAP_H2_PARKED, &k);
	st->parked[j] = 0;
	st->parked_n--;
}

/* Every slot holds a stream with a message half-read: one of them parks.
 * Returns 0, or -1 when no more can. */
static __always_inline int rg_h2_park(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	struct rg_h2_park_key k = { .cookie = st->cookie };
	struct rg_h2_stream *s, *v;
	struct rg_h2_sock *tmpl;
	__u32 zero = 0;
	int q;

	if (st->parked_n >= RG_H2_PARKED)
		return -1;
	q = rg_h2_parked_find(st, 0);
	if (q < 0)
		return -1;
	s = &st->h.s[rg_h2_slot((int)st->park_next++)];
	k.sid = s->id;
	/* Linux 6.1 takes no map value from an argument's memory: the entry
	 * is made from the template (any bytes: overwritten at once) */
	tmpl = bpf_map_lookup_elem(&h2_zero, &zero);
	if (!tmpl || bpf_map_update_elem(&RG_MAP_H2_PARKED, &k, tmpl, BPF_ANY))
		return -1;
	v = bpf_map_lookup_elem(&RG_MAP_H2_PARKED, &k);
	if (!v)
		return -1;
	/* bytes gathered for its copy are emitted under its copy's id */
	rg_h2_copy_flush(skb, st);
	__builtin_memcpy(v, s, sizeof(*v));
	st->parked[rg_h2_parked_idx(q)] = k.sid;
	st->parked_n++;
	s->id = 0;
	rg_h2_stats_inc(h2_streams_parked);
	return 0;
}

/* Parked stream i takes a slot back (one is free or refused). */
static __always_inline int rg_h2_unpark(struct __sk_buff *skb, struct rg_h2_sock *st, int i)
{
	struct rg_h2_park_key k = { .cookie = st->cookie };
	struct rg_h2_stream *v;
	int to = rg_h2_find_slot(&st->h, 0);

	if (to < 0)
		to = rg_h2_find_refused_slot(&st->h);
	k.sid = st->parked[rg_h2_parked_idx(i)];
	v = bpf_map_lookup_elem(&RG_MAP_H2_PARKED, &k);
	/* a parked message lost: the rest of it cannot be read */
	if (to < 0 || !v)
		return RG_H2_ERR_STREAMS;
	rg_h2_copy_flush(skb, st);
	__builtin_memcpy(&st->h.s[rg_h2_slot(to)], v, sizeof(*v));
	rg_h2_parked_drop(st, i);
	return 0;
}

/*
 * Before the last byte of a frame header is stepped (c): a DATA frame of a
 * parked stream takes it back, and one of a stream that needs a slot when
 * every slot holds a half-read message parks one; a parked stream that
 * ends leaves the park.  Frames the parser refuses are left to it.
 * Returns 0 or RG_H2_ERR_STREAMS (no room: fail closed, as the parser
 * alone would).  A global function: verified once, not per path of the
 * byte loop.
 */
__noinline int rg_h2_park_frame(struct __sk_buff *skb, struct rg_h2_sock *st, __u32 c)
{
	struct rg_h2_conn *h;
	__u32 sid, len;
	__u8 type;
	int p;

	if (!skb || !st)
		return 0;
	h = &st->h;
	if (!h->settings_seen || h->block_sid)
		return 0;
	type = h->fh[3];
	if (!st->parked_n && (type != RG_H2_DATA || rg_h2_find_slot(h, 0) >= 0))
		return 0; /* the parser has room */
	sid = ((__u32)h->fh[5] << 24 | (__u32)h->fh[6] << 16 | (__u32)h->fh[7] << 8 |
	       (c & 0xff)) & 0x7fffffffU;
	len = (__u32)h->fh[0] << 16 | (__u32)h->fh[1] << 8 | h->fh[2];
	if (!(sid & 1) || sid > h->last_sid)
		return 0; /* a new stream, or one the parser refuses */
	p = st->parked_n ? rg_h2_parked_find(st, sid) : -1;
	if (type == RG_H2_RST_STREAM || type == RG_H2_HEADERS) {
		/* HEADERS on an open stream are its trailers (or an error) */
		if (p >= 0)
			rg_h2_parked_drop(st, p);
		return 0;
	}
	if (type != RG_H2_DATA || len > h->max_frame)
		return 0;
	if (rg_h2_find_slot(h, sid) >= 0 || rg_h2_find_unrouted(h, sid) >= 0)
		return 0;
	if (p < 0 && !len)
		return 0; /* takes no slot */
	if (rg_h2_find_slot(h, 0) < 0 && rg_h2_find_refused_slot(h) < 0 && rg_h2_park(skb, st))
		return RG_H2_ERR_STREAMS;
	return p >= 0 ? rg_h2_unpark(skb, st, p) : 0;
}

struct rg_h2_unpark_ctx {
	struct rg_h2_sock *st;
	__u64 cookie;
};

static __maybe_unused long rg_h2_unpark_all_cb(__u64 i, void *ctx)
{
	struct rg_h2_unpark_ctx *u = ctx;
	struct rg_h2_park_key k = { .cookie = u->cookie };

	if (i >= RG_H2_PARKED)
		return 1;
	k.sid = u->st->parked[i];
	if (k.sid)
		bpf_map_delete_elem(&RG_MAP_H2_PARKED, &k);
	return 0;
}

/* The connection closed (rg_conn_close): its parked streams go. */
static __always_inline void rg_h2_unpark_all(__u64 cookie)
{
	struct rg_h2_unpark_ctx u = { .cookie = cookie };

	u.st = bpf_map_lookup_elem(&RG_MAP_H2_CONNS, &cookie);
	if (u.st && u.st->parked_n)
		bpf_loop(RG_H2_PARKED, rg_h2_unpark_all_cb, &u, 0);
}

#endif /* ROWGATE_BPF_H2_PARK_H */
