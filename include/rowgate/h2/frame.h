/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Streaming HTTP/2 (h2c, prior knowledge) + gRPC + GreptimeRequest parser,
 * one byte per step, for the client->server direction of a connection.
 * Shared by the sk_skb verdict (fed from bpf_loop) and the native unit
 * tests.  Bytes may be split anywhere: the client preface, 9-byte frame
 * headers, PADDED and PRIORITY fields, HEADERS+CONTINUATION blocks, DATA of
 * interleaved streams, gRPC length-prefixed messages spanning frames, and the
 * protobuf walk of greptime.v1.GreptimeRequest (docs/grpc.md §1-3), which
 * yields the RequestHeader (dbname / catalog / schema) and the rows a
 * message stores: one Row per row_inserts Row, row_count per columnar
 * InsertRequest.  Header blocks go through the HPACK shadow (hpack.h) for
 * each new stream's `:path`: a stream whose `:path` no route names has its
 * DATA passed unread (docs/grpc.md#7-path-routing).
 *
 * It is strict where the server would fail the connection or could read the
 * bytes differently (RFC 9113 §4-6): a wrong preface, a first frame other
 * than SETTINGS, oversized frames, wrong fixed lengths, frames on the wrong
 * stream, anything but CONTINUATION inside a header block, padding longer
 * than the payload, client PUSH_PROMISE, even stream ids, HEADERS without
 * END_STREAM on an opened stream, DATA on an idle stream (DATA on a stream
 * that already ended is not detected: the server refuses it, and rowgate
 * at worst charges a message that is never stored), gRPC compressed flags other than
 * 0/1, messages over RG_GRPC_MSG_MAX_BYTES, and protobuf the server's
 * decoder (prost) refuses.  Errors are negative; the caller fails closed
 * (GOAWAY and close) on every one of them.
 */
#ifndef ROWGATE_H2_FRAME_H
#define ROWGATE_H2_FRAME_H

#include "../types.h"
#include "../protocols.h"
#include "hpack.h"
#include "result.h"
#include "msg.h"
#include "pb.h"
#include "grpc.h"

#define RG_H2_PREFACE_LEN      24
#define RG_H2_FRAME_HDR_BYTES  9
/* SETTINGS_MAX_FRAME_SIZE's initial value (RFC 9113 §6.5.2); a caller that
 * learns the server's larger setting raises rg_h2_conn.max_frame. */
#define RG_H2_DEFAULT_MAX_FRAME_BYTES 16384
/* Streams with a message half-read at a frame boundary that the parser
 * follows at once; one more is refused (fail closed), unless its caller
 * makes room (the verdict parks one: bpf/h2/park.h).  A stream takes a
 * slot only while one of its messages spans DATA frames: grpc-go with 16
 * calls in flight opened 16 streams before any DATA (measured), and
 * interleaves large messages 16 KB at a time. */
#define RG_H2_STREAM_SLOTS     16 /* a power of two: slot indexes are masked */
/* Open streams whose `:path` no route names, followed until they end; one
 * more fails closed.  A power of two. */
#define RG_H2_UNROUTED_SLOTS   16
/* open OTLP/gRPC streams (their database from the header block) */
#define RG_H2_HDB_SLOTS 8

/* Frame types (RFC 9113 §6). */
enum rg_h2_frame_type {
	RG_H2_DATA = 0x0,
	RG_H2_HEADERS = 0x1,
	RG_H2_PRIORITY = 0x2,
	RG_H2_RST_STREAM = 0x3,
	RG_H2_SETTINGS = 0x4,
	RG_H2_PUSH_PROMISE = 0x5,
	RG_H2_PING = 0x6,
	RG_H2_GOAWAY = 0x7,
	RG_H2_WINDOW_UPDATE = 0x8,
	RG_H2_CONTINUATION = 0x9,
};

#define RG_H2_FLAG_END_STREAM  0x01
#define RG_H2_FLAG_ACK         0x01
#define RG_H2_FLAG_END_HEADERS 0x04
#define RG_H2_FLAG_PADDED      0x08
#define RG_H2_FLAG_PRIORITY    0x20

enum rg_h2_state {
	RG_H2S_PREFACE = 0,
	RG_H2S_FRAME_HDR,
	RG_H2S_PADLEN,
	RG_H2S_PRIO,    /* the 5 priority bytes of a HEADERS frame */
	RG_H2S_SKIP,    /* payload nobody reads: header blocks, control frames */
	RG_H2S_DATA,    /* DATA payload, fed to the stream's gRPC layer */
	RG_H2S_PADDING,
	RG_H2S_HBLOCK,  /* a header block fragment, fed to the HPACK shadow */
};

/* An open OTLP/gRPC stream: its database, from its header block. */
struct rg_h2_hdb {
	__u32 sid;  /* 0: free */
	__u8 proto; /* enum rg_protocol */
	__u8 len;   /* of the x-greptime-db-name value; 0: none */
	__u8 pad[2];
	struct rg_hpack_db v; /* the value, zero padded */
};

struct rg_h2_conn {
	__u32 max_frame;     /* largest frame payload accepted */
	__u32 flen;          /* current frame: payload length */
	__u32 fsid;          /* current frame: stream id */
	__u32 left;          /* payload bytes to go, padding excluded */
	__u32 pad_left;      /* padding bytes to go */
	__u32 last_sid;      /* highest stream id the client opened */
	__u32 block_sid;     /* non-zero inside a header block (CONTINUATION due) */
	__u8 st;             /* enum rg_h2_state */
	__u8 ftype;
	__u8 fflags;
	__u8 got;            /* bytes of the preface / frame header / priority */
	__u8 fh[RG_H2_FRAME_HDR_BYTES];
	__u8 settings_seen;  /* the client's first frame (SETTINGS) arrived */
	__s8 slot;           /* stream slot of the current DATA frame */
	__s8 done_slot;      /* slot of the message of the last RG_H2_EV_MESSAGE */
	__u32 done_sid;      /* its stream (the slot may be free by then) */
	__u32 hb_sid;        /* stream of the header block being read */
	__u8 hb_new;         /* it opens the stream */
	__u8 hb_end;         /* its HEADERS had END_STREAM */
	__u8 unrouted_frame; /* the current DATA frame is of an unrouted stream */
	__u8 pad2;
	__u32 unrouted_streams; /* streams found unrouted, ever (a counter) */
	__u32 unrouted[RG_H2_UNROUTED_SLOTS]; /* open unrouted streams, 0 = free */
	struct rg_h2_stream s[RG_H2_STREAM_SLOTS];
	struct rg_h2_hdb hdb[RG_H2_HDB_SLOTS];
	struct rg_hpack hp;
};

/* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
RG_INLINE __u8 rg_h2_preface_byte(__u32 i)
{
	switch (i) {
	case 0: return 'P';
	case 1: return 'R';
	case 2: return 'I';
	case 3: return ' ';
	case 4: return '*';
	case 5: return ' ';
	case 6: return 'H';
	case 7: return 'T';
	case 8: return 'T';
	case 9: return 'P';
	case 10: return '/';
	case 11: return '2';
	case 12: return '.';
	case 13: return '0';
	case 14: case 16: case 20: case 22: return '\r';
	case 15: case 17: case 21: case 23: return '\n';
	case 18: return 'S';
	case 19: return 'M';
	}
	return 0;
}

/* Whether the n first bytes of a connection may be the start of the
 * preface (n = 0 says yes): how a guarded port tells h2c from HTTP/1. */
RG_INLINE bool rg_h2_preface_prefix(const __u8 *b, __u32 n)
{
	__u32 i;

	for (i = 0; i < RG_H2_PREFACE_LEN && i < n; i++)
		if (b[i] != rg_h2_preface_byte(i))
			return false;
	return true;
}

RG_INLINE void rg_h2_init(struct rg_h2_conn *h)
{
	__builtin_memset(h, 0, sizeof(*h));
	h->max_frame = RG_H2_DEFAULT_MAX_FRAME_BYTES;
	h->slot = -1;
	h->done_slot = -1;
	h->hp.max = RG_HPACK_TABLE_MAX_BYTES;
}

/* A stream slot index the verifier can see is in bounds (callers have
 * already checked it). */
RG_INLINE __u32 rg_h2_slot(int i)
{
	return rg_h2_opaque((__u32)i) & (RG_H2_STREAM_SLOTS - 1);
}

RG_INLINE int rg_h2_find_slot(const struct rg_h2_conn *h, __u32 sid)
{
	int i;

	/* Verifier workaround: unrolled, clang keeps the 16 ids in stack
	 * slots, and the byte loop's call chain outgrows 512 bytes on 6.1 */
#ifdef __bpf__
#pragma clang loop unroll(disable)
#endif
	for (i = 0; i < RG_H2_STREAM_SLOTS; i++)
		if (h->s[i].id == sid)
			return i;
	return -1;
}

/* Index of sid among the unrouted streams, -1 if absent. */
RG_INLINE int rg_h2_find_unrouted(const struct rg_h2_conn *h, __u32 sid)
{
	int i;

	for (i = 0; i < RG_H2_UNROUTED_SLOTS; i++)
		if (h->unrouted[i] == sid)
			return i;
	return -1;
}

/* Index of sid among the OTLP/gRPC streams, -1 if absent. */
RG_INLINE int rg_h2_find_hdb(const struct rg_h2_conn *h, __u32 sid)
{
	int i;

	for (i = 0; i < RG_H2_HDB_SLOTS; i++)
		if (h->hdb[i].sid == sid)
			return i;
	return -1;
}

/*
 * An entry of the unrouted set may also be a unary stream (GreptimeDatabase
 * /Handle) whose first message has not completed: its id with this bit (no
 * stream id has it).  When that message completes the entry becomes the
 * plain id, and the stream's later messages pass unread and uncharged: its
 * server (tonic, grpc-go) hands the handler the first message and drops the
 * rest (docs/grpc.md#unary).
 */
#define RG_H2_UNARY_PENDING 0x80000000U

/* A stream ended (END_STREAM or RST_STREAM): it leaves the unrouted and
 * OTLP sets. */
RG_INLINE void rg_h2_unrouted_end(struct rg_h2_conn *h, __u32 sid)
{
	int i = rg_h2_find_unrouted(h, sid);

	if (i >= 0)
		h->unrouted[rg_h2_opaque((__u32)i) & (RG_H2_UNROUTED_SLOTS - 1)] = 0;
	i = rg_h2_find_unrouted(h, sid | RG_H2_UNARY_PENDING);
	if (i >= 0)
		h->unrouted[rg_h2_opaque((__u32)i) & (RG_H2_UNROUTED_SLOTS - 1)] = 0;
	i = rg_h2_find_hdb(h, sid);
	if (i >= 0)
		h->hdb[rg_h2_opaque((__u32)i) & (RG_H2_HDB_SLOTS - 1)].sid = 0;
}

/* A slot takes stream sid.  An OTLP/gRPC stream's messages are named
 * the database of its header block: the value goes where a GreptimeRequest's
 * RequestHeader.dbname would (both are resolved alike, docs/grpc.md §2),
 * and stays there for each message (rg_grpc_step clears what is before). */
RG_INLINE void rg_h2_stream_open(const struct rg_h2_conn *h, struct rg_h2_stream *s, __u32 sid)
{
	const struct rg_h2_hdb *e;
	int i = rg_h2_find_hdb(h, sid);

	s->id = sid;
	s->pfx_got = 0;
	s->refused = 0;
	s->hdr = 0;
	if (i < 0)
		return;
	e = &h->hdb[rg_h2_opaque((__u32)i) & (RG_H2_HDB_SLOTS - 1)];
	s->hdr = e->proto;
	__builtin_memset(s->m.str_len, 0, sizeof(s->m.str_len));
	__builtin_memset(s->m.str, 0, sizeof(s->m.str));
	__builtin_memcpy(s->m.str[RG_GRPC_STR_DBNAME], e->v.c, sizeof(e->v.c));
	s->m.str_len[RG_GRPC_STR_DBNAME] = e->len;
}

/* A slot whose stream the kernel reset: a client that abandons a refused
 * call mid-message never ends its stream (grpc-go 1.33's HandleRequests),
 * and the server dropped it, so a new stream may take the slot.  -1: none. */
RG_INLINE int rg_h2_find_refused_slot(const struct rg_h2_conn *h)
{
	int i;

#ifdef __bpf__
#pragma clang loop unroll(disable)
#endif
	for (i = 0; i < RG_H2_STREAM_SLOTS; i++)
		if (h->s[i].id && h->s[i].refused)
			return i;
	return -1;
}

/* The current DATA frame, its header just read, is passed unread: the
 * kernel reset its stream and the frame is filler to the server
 * (bpf/h2/refuse.h rg_h2_keep_frame).  Its stream's slot, and the message
 * half-read there, are let go: read on, a frame whose stream lost its
 * slot to a new stream would be taken for a new message. */
RG_INLINE void rg_h2_frame_unread(struct rg_h2_conn *h)
{
	if (h->ftype != RG_H2_DATA || (h->st != RG_H2S_DATA && h->st != RG_H2S_PADLEN))
		return;
	if (h->slot >= 0 && h->slot < RG_H2_STREAM_SLOTS && h->s[rg_h2_slot(h->slot)].id == h->fsid)
		h->s[rg_h2_slot(h->slot)].id = 0;
	h->slot = -1;
	h->unrouted_frame = 1;
	if (h->st == RG_H2S_DATA)
		h->st = RG_H2S_SKIP;
}

/* ---- frames -------------------------------------------------------------- */

/* A new OTLP/gRPC or DoPut stream (kind: its protocol) with DATA to come:
 * it joins the header-database set with the database its block names
 * (none: greptime-public, as the server's default). */
RG_INLINE int rg_h2_hdb_open(struct rg_h2_conn *h, int kind)
{
	__u32 len = 0, s = h->hp.blk_db - 1;
	struct rg_h2_hdb *e;
	int i;

	/* several fields, a value lost or too long, an empty one */
	if (h->hp.blk_db && (!rg_hpack_block_db(&h->hp, &len) || !len))
		return RG_H2_ERR_HEADER_DB;
	i = rg_h2_find_hdb(h, 0);
	if (i < 0)
		return RG_H2_ERR_HEADER_DB;
	e = &h->hdb[rg_h2_opaque((__u32)i) & (RG_H2_HDB_SLOTS - 1)];
	if (len)
		__builtin_memcpy(&e->v, &h->hp.db[s & (RG_HPACK_DB_SLOTS - 1)], sizeof(e->v));
	else
		__builtin_memset(&e->v, 0, sizeof(e->v));
	e->len = (__u8)len;
	e->proto = (__u8)kind;
	e->sid = h->hb_sid;
	return 0;
}

/* An entry of the unrouted set for a new entry: a free one, else one of a
 * unary stream still pending (forgotten, its messages are all charged:
 * the safe side).  -1: none. */
RG_INLINE int rg_h2_unrouted_slot(const struct rg_h2_conn *h)
{
	int i = rg_h2_find_unrouted(h, 0);

	if (i >= 0)
		return i;
	for (i = 0; i < RG_H2_UNROUTED_SLOTS; i++)
		if (h->unrouted[i] & RG_H2_UNARY_PENDING)
			return i;
	return -1;
}

/* A new unary stream with DATA to come: remembered until its first
 * message completes, if there is room (else each message is charged). */
RG_INLINE void rg_h2_unary_open(struct rg_h2_conn *h)
{
	int i = rg_h2_find_unrouted(h, 0);

	if (i >= 0)
		h->unrouted[rg_h2_opaque((__u32)i) & (RG_H2_UNROUTED_SLOTS - 1)] =
			h->hb_sid | RG_H2_UNARY_PENDING;
}

/* A message completed on the current DATA frame's stream: the first of a
 * unary stream makes the stream unrouted, and the rest of this frame is
 * passed unread (the slot is let go: the message stays in it for the
 * caller). */
RG_INLINE void rg_h2_unary_done(struct rg_h2_conn *h)
{
	int i = rg_h2_find_unrouted(h, h->fsid | RG_H2_UNARY_PENDING);

	if (i < 0)
		return;
	h->unrouted[rg_h2_opaque((__u32)i) & (RG_H2_UNROUTED_SLOTS - 1)] = h->fsid;
	if (h->slot >= 0 && h->slot < RG_H2_STREAM_SLOTS)
		h->s[rg_h2_slot(h->slot)].id = 0;
	h->slot = -1;
	h->unrouted_frame = 1;
	h->st = RG_H2S_SKIP;
}

/* A header block ended: a new stream whose `:path` no route names joins
 * the unrouted set (its DATA is passed unread); one of an uncounted
 * method is refused, before any of its bytes reach the server; an OTLP
 * export's joins the OTLP set with its database. */
RG_INLINE int rg_h2_block_end(struct rg_h2_conn *h)
{
	int r = rg_hpack_block_end(&h->hp), i;

	if (r < 0)
		return RG_H2_ERR_HPACK;
	if (h->hb_new && r == RG_H2_PATH_UNCOUNTED)
		return RG_H2_ERR_UNCOUNTED;
	if (h->hb_new && rg_h2_path_header_db(r))
		return h->hb_end ? 0 : rg_h2_hdb_open(h, r);
	if (h->hb_new && !h->hb_end && r == RG_PROTO_GREPTIME_GRPC && rg_hpack_block_unary(&h->hp))
		rg_h2_unary_open(h);
	if (!h->hb_new || r != RG_H2_PATH_OTHER)
		return 0;
	h->unrouted_streams++;
	if (h->hb_end)
		return 0; /* no DATA will follow */
	i = rg_h2_unrouted_slot(h);
	if (i < 0)
		return RG_H2_ERR_UNROUTED;
	h->unrouted[rg_h2_opaque((__u32)i) & (RG_H2_UNROUTED_SLOTS - 1)] = h->hb_sid;
	return 0;
}

/* The current frame's payload (and padding) is over. */
RG_INLINE int rg_h2_frame_end(struct rg_h2_conn *h)
{
	/* A slot is held only while a message is half-read: END_STREAM ends
	 * the stream (a partial message dies with it), and a stream between
	 * two messages needs no state.  The last message's result stays in
	 * the slot until a later DATA frame takes it. */
	if (h->ftype == RG_H2_DATA && h->slot >= 0 && h->slot < RG_H2_STREAM_SLOTS) {
		struct rg_h2_stream *s = &h->s[rg_h2_slot(h->slot)];

		if ((h->fflags & RG_H2_FLAG_END_STREAM) || s->pfx_got == 0)
			s->id = 0;
	}
	if (h->ftype == RG_H2_DATA && (h->fflags & RG_H2_FLAG_END_STREAM))
		rg_h2_unrouted_end(h, h->fsid);
	h->slot = -1;
	h->unrouted_frame = 0;
	h->st = RG_H2S_FRAME_HDR;
	h->got = 0;
	if ((h->ftype == RG_H2_HEADERS || h->ftype == RG_H2_CONTINUATION) &&
	    (h->fflags & RG_H2_FLAG_END_HEADERS))
		return rg_h2_block_end(h);
	return 0;
}

/* Payload bytes of the frame are done (padding may follow). */
RG_INLINE int rg_h2_payload_end(struct rg_h2_conn *h)
{
	if (h->pad_left) {
		h->st = RG_H2S_PADDING;
		return 0;
	}
	return rg_h2_frame_end(h);
}

/* After the frame header, and after PADLEN/PRIO: where the payload goes. */
RG_INLINE int rg_h2_enter_payload(struct rg_h2_conn *h)
{
	if (h->left == 0)
		return rg_h2_payload_end(h);
	if (h->ftype == RG_H2_DATA)
		h->st = h->unrouted_frame ? RG_H2S_SKIP : RG_H2S_DATA;
	else if (h->ftype == RG_H2_HEADERS || h->ftype == RG_H2_CONTINUATION)
		h->st = RG_H2S_HBLOCK;
	else
		h->st = RG_H2S_SKIP;
	return 0;
}

/* The frame header is done and its payload set up: the event, or an
 * error from a frame ended at once. */
RG_INLINE int rg_h2_frame_ev(struct rg_h2_conn *h)
{
	int r = rg_h2_enter_payload(h);

	return r < 0 ? r : RG_H2_EV_FRAME;
}

/* Stream bookkeeping of a HEADERS frame (before its payload). */
RG_INLINE int rg_h2_headers(struct rg_h2_conn *h)
{
	__u32 sid = h->fsid;
	bool end_stream = h->fflags & RG_H2_FLAG_END_STREAM;
	int i;

	if (!(h->fflags & RG_H2_FLAG_END_HEADERS))
		h->block_sid = sid;
	if (!(sid & 1))
		return RG_H2_ERR_PROTOCOL; /* not a client stream */
	rg_hpack_block_start(&h->hp);
	h->hb_sid = sid;
	h->hb_end = end_stream;
	h->hb_new = sid > h->last_sid;
	if (sid > h->last_sid) {
		/* a new stream: it needs a slot only once DATA leaves a
		 * message half-read (rg_h2_frame_end) */
		h->last_sid = sid;
		return 0;
	}
	/* an opened stream: only trailers, which end it */
	if (!end_stream)
		return RG_H2_ERR_PROTOCOL;
	i = rg_h2_find_slot(h, sid);
	if (i >= 0)
		h->s[rg_h2_slot(i)].id = 0;
	rg_h2_unrouted_end(h, sid);
	return 0;
}

/* The 9-byte frame header is complete: validate it and route the payload. */
RG_INLINE int rg_h2_frame_header(struct rg_h2_conn *h)
{
	__u32 len = (__u32)h->fh[0] << 16 | (__u32)h->fh[1] << 8 | h->fh[2];
	__u32 sid = ((__u32)h->fh[5] << 24 | (__u32)h->fh[6] << 16 |
		     (__u32)h->fh[7] << 8 | h->fh[8]) & 0x7fffffffU;
	__u8 type = h->fh[3], flags = h->fh[4];
	__u32 extra = 0;
	int r;

	h->flen = len;
	h->ftype = type;
	h->fflags = flags;
	h->fsid = sid;
	h->left = len;
	h->pad_left = 0;
	h->slot = -1;
	h->got = 0;
	if (len > h->max_frame)
		return RG_H2_ERR_FRAME_SIZE;
	if (!h->settings_seen) {
		/* the preface's SETTINGS must come first (RFC 9113 §3.4) */
		if (type != RG_H2_SETTINGS || (flags & RG_H2_FLAG_ACK))
			return RG_H2_ERR_PREFACE;
		h->settings_seen = 1;
	}
	if (h->block_sid) {
		if (type != RG_H2_CONTINUATION || sid != h->block_sid)
			return RG_H2_ERR_PROTOCOL;
		if (flags & RG_H2_FLAG_END_HEADERS)
			h->block_sid = 0;
		return rg_h2_frame_ev(h);
	}
	switch (type) {
	case RG_H2_DATA:
		if (sid == 0)
			return RG_H2_ERR_PROTOCOL;
		if (!(sid & 1) || sid > h->last_sid)
			return RG_H2_ERR_PROTOCOL; /* an idle stream (§5.1) */
		if (rg_h2_find_unrouted(h, sid) >= 0) {
			/* another service's call: passed unread */
			h->unrouted_frame = 1;
			if (flags & RG_H2_FLAG_PADDED) {
				if (len < 1)
					return RG_H2_ERR_FRAME_SIZE;
				h->st = RG_H2S_PADLEN;
				return RG_H2_EV_FRAME;
			}
			break;
		}
		h->slot = (__s8)rg_h2_find_slot(h, sid);
		if (h->slot < 0 && len > 0) {
			/* a message starts here, or a stream's first DATA */
			int i = rg_h2_find_slot(h, 0);

			if (i < 0)
				i = rg_h2_find_refused_slot(h);
			if (i < 0)
				return RG_H2_ERR_STREAMS;
			rg_h2_stream_open(h, &h->s[rg_h2_slot(i)], sid);
			h->slot = (__s8)i;
		}
		if (flags & RG_H2_FLAG_PADDED) {
			if (len < 1)
				return RG_H2_ERR_FRAME_SIZE;
			h->st = RG_H2S_PADLEN;
			return RG_H2_EV_FRAME;
		}
		break;
	case RG_H2_HEADERS:
		if (sid == 0)
			return RG_H2_ERR_PROTOCOL;
		extra = (flags & RG_H2_FLAG_PADDED ? 1 : 0) +
			(flags & RG_H2_FLAG_PRIORITY ? 5 : 0);
		if (len < extra)
			return RG_H2_ERR_FRAME_SIZE;
		r = rg_h2_headers(h);
		if (r < 0)
			return r;
		if (flags & RG_H2_FLAG_PADDED) {
			h->st = RG_H2S_PADLEN;
			return RG_H2_EV_FRAME;
		}
		if (flags & RG_H2_FLAG_PRIORITY) {
			h->left -= 5;
			h->st = RG_H2S_PRIO;
			return RG_H2_EV_FRAME;
		}
		break;
	case RG_H2_PRIORITY:
		if (sid == 0)
			return RG_H2_ERR_PROTOCOL;
		if (len != 5)
			return RG_H2_ERR_FRAME_SIZE;
		break;
	case RG_H2_RST_STREAM: {
		int i;

		if (sid == 0 || sid > h->last_sid)
			return RG_H2_ERR_PROTOCOL; /* idle stream (§6.4) */
		if (len != 4)
			return RG_H2_ERR_FRAME_SIZE;
		i = rg_h2_find_slot(h, sid);
		if (i >= 0)
			h->s[rg_h2_slot(i)].id = 0; /* the server drops the stream and its partial message */
		rg_h2_unrouted_end(h, sid);
		break;
	}
	case RG_H2_SETTINGS:
		if (sid != 0)
			return RG_H2_ERR_PROTOCOL;
		if ((flags & RG_H2_FLAG_ACK) ? len != 0 : len % 6 != 0)
			return RG_H2_ERR_FRAME_SIZE;
		break;
	case RG_H2_PUSH_PROMISE:
		return RG_H2_ERR_PROTOCOL; /* clients never push (§8.4) */
	case RG_H2_PING:
		if (sid != 0)
			return RG_H2_ERR_PROTOCOL;
		if (len != 8)
			return RG_H2_ERR_FRAME_SIZE;
		break;
	case RG_H2_GOAWAY:
		if (sid != 0)
			return RG_H2_ERR_PROTOCOL;
		if (len < 8)
			return RG_H2_ERR_FRAME_SIZE;
		break;
	case RG_H2_WINDOW_UPDATE:
		if (len != 4)
			return RG_H2_ERR_FRAME_SIZE;
		break;
	case RG_H2_CONTINUATION:
		return RG_H2_ERR_PROTOCOL; /* outside a header block */
	default:
		break; /* unknown types are ignored (§4.1, §5.5) */
	}
	return rg_h2_frame_ev(h);
}

/* One byte of the client->server stream.  In BPF a global function
 * (RG_HPACK_FN): verified once, not once per path of the byte loop that
 * calls it, which on newer kernels walks the loop's body until its states
 * converge (over a million instructions inlined). */
RG_HPACK_FN int rg_h2_step(struct rg_h2_conn *h, __u8 c)
{
	int r;

	if (!h)
		return RG_H2_ERR_PROTOCOL;
	switch (h->st) {
	case RG_H2S_PREFACE:
		if (c != rg_h2_preface_byte(h->got))
			return RG_H2_ERR_PREFACE;
		if (++h->got == RG_H2_PREFACE_LEN) {
			h->st = RG_H2S_FRAME_HDR;
			h->got = 0;
		}
		return RG_H2_MORE;
	case RG_H2S_FRAME_HDR:
		if (h->got >= RG_H2_FRAME_HDR_BYTES)
			return RG_H2_ERR_PROTOCOL;
		h->fh[h->got] = c;
		if (++h->got < RG_H2_FRAME_HDR_BYTES)
			return RG_H2_MORE;
		return rg_h2_frame_header(h);
	case RG_H2S_PADLEN:
		/* left counts the pad length byte itself */
		if ((__u32)c + 1 > h->left)
			return RG_H2_ERR_PROTOCOL;
		h->left -= (__u32)c + 1;
		h->pad_left = c;
		if (h->ftype == RG_H2_HEADERS && (h->fflags & RG_H2_FLAG_PRIORITY)) {
			if (h->left < 5)
				return RG_H2_ERR_FRAME_SIZE;
			h->left -= 5;
			h->st = RG_H2S_PRIO;
			h->got = 0;
			return RG_H2_MORE;
		}
		return rg_h2_enter_payload(h);
	case RG_H2S_PRIO:
		if (++h->got == 5)
			return rg_h2_enter_payload(h);
		return RG_H2_MORE;
	case RG_H2S_SKIP:
		if (--h->left == 0)
			return rg_h2_payload_end(h);
		return RG_H2_MORE;
	case RG_H2S_HBLOCK:
		r = rg_hpack_step(&h->hp, c);
		if (r < 0)
			return RG_H2_ERR_HPACK;
		if (--h->left == 0)
			return rg_h2_payload_end(h);
		return RG_H2_MORE;
	case RG_H2S_DATA:
		if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
			return RG_H2_ERR_PROTOCOL;
		r = rg_grpc_step(&h->s[rg_h2_slot(h->slot)], c);
		if (r == RG_H2_EV_MESSAGE) {
			h->done_slot = h->slot;
			h->done_sid = h->fsid;
			rg_h2_unary_done(h);
		}
		if (--h->left == 0) {
			int e = rg_h2_payload_end(h);

			if (e < 0)
				return e;
		}
		return r;
	case RG_H2S_PADDING:
		if (--h->pad_left == 0)
			return rg_h2_frame_end(h);
		return RG_H2_MORE;
	}
	return RG_H2_ERR_PROTOCOL;
}

/*
 * Bytes that can be passed over without rg_h2_step (0: step the next one):
 * payloads nobody reads, padding, a skipped protobuf field inside DATA.  The
 * last byte of each such run is left to rg_h2_step, which makes the
 * transitions, so rg_h2_skip never has to.
 */
RG_INLINE __u32 rg_h2_skippable(const struct rg_h2_conn *h)
{
	__u32 n = 0;

	switch (h->st) {
	case RG_H2S_SKIP:
		n = h->left;
		break;
	case RG_H2S_PADDING:
		n = h->pad_left;
		break;
	case RG_H2S_HBLOCK:
		n = rg_hpack_skippable(&h->hp) + 1;
		if (n > h->left)
			n = h->left;
		break;
	case RG_H2S_DATA: {
		const struct rg_h2_stream *s;

		if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
			return 0;
		s = &h->s[rg_h2_slot(h->slot)];
		if (s->pfx_got < 5)
			return 0;
		n = rg_pb_skippable(&s->w) + 1;
		if (n > h->left)
			n = h->left;
		break;
	}
	default:
		return 0;
	}
	return n > 1 ? n - 1 : 0;
}

/* Pass over n <= rg_h2_skippable(h) bytes. */
RG_INLINE void rg_h2_skip(struct rg_h2_conn *h, __u32 n)
{
	switch (h->st) {
	case RG_H2S_SKIP:
		h->left -= n;
		break;
	case RG_H2S_PADDING:
		h->pad_left -= n;
		break;
	case RG_H2S_HBLOCK:
		rg_hpack_skip(&h->hp, n);
		h->left -= n;
		break;
	case RG_H2S_DATA:
		if (h->slot >= 0 && h->slot < RG_H2_STREAM_SLOTS)
			rg_pb_skip(&h->s[rg_h2_slot(h->slot)].w, n);
		h->left -= n;
		break;
	}
}

#endif /* ROWGATE_H2_FRAME_H */
