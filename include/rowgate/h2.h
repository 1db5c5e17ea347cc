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
#ifndef ROWGATE_H2_H
#define ROWGATE_H2_H

#include "types.h"
#include "abi.h"
#include "dbname.h"
#include "hpack.h"
#include "estimate.h"

#define RG_H2_PREFACE_LEN      24
#define RG_H2_FRAME_HDR_BYTES  9
/* SETTINGS_MAX_FRAME_SIZE's initial value (RFC 9113 §6.5.2); a caller that
 * learns the server's larger setting raises rg_h2_conn.max_frame. */
#define RG_H2_DEFAULT_MAX_FRAME_BYTES 16384
/* Streams with a message half-read at a frame boundary that can be
 * followed at once; one more is refused (fail closed).  A stream takes a
 * slot only while one of its messages spans DATA frames: grpc-go with 16
 * calls in flight opened 16 streams before any DATA (measured), and
 * interleaves large messages 16 KB at a time. */
#define RG_H2_STREAM_SLOTS     16 /* a power of two: slot indexes are masked */
/* GreptimeDB's default max_recv_message_size (512 MiB,
 * DEFAULT_MAX_GRPC_RECV_MESSAGE_SIZE): a larger length prefix is refused. */
#define RG_GRPC_MSG_MAX_BYTES  (512U << 20)
/* Protobuf nesting followed: Request > RowInsertRequests > RowInsertRequest
 * > Rows (a Row is skipped, not entered); a power of two (masked index). */
#define RG_PB_DEPTH            8
#define RG_PB_VARINT_MAX_BYTES 10
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

/* Step results.  Events are positive, errors negative and say why. */
enum rg_h2_result {
	RG_H2_MORE = 0,
	RG_H2_EV_FRAME = 1,   /* a frame header completed: ftype/fflags/fsid/flen */
	RG_H2_EV_MESSAGE = 2, /* a gRPC message completed: h->s[h->done_slot].m */
	RG_H2_ERR_PREFACE = -1,   /* not the client preface, or no SETTINGS first */
	RG_H2_ERR_FRAME_SIZE = -2, /* over max_frame, or a wrong fixed length */
	RG_H2_ERR_PROTOCOL = -3,  /* stream ids, header blocks, padding, PUSH_PROMISE */
	RG_H2_ERR_STREAMS = -4,   /* more than RG_H2_STREAM_SLOTS streams in flight */
	RG_H2_ERR_GRPC = -5,      /* compressed flag > 1, message over the max */
	RG_H2_ERR_PROTOBUF = -6,  /* a GreptimeRequest the server cannot decode */
	RG_H2_ERR_HPACK = RG_HPACK_ERR, /* a header block the shadow cannot follow */
	RG_H2_ERR_UNROUTED = -8,  /* more than RG_H2_UNROUTED_SLOTS unrouted streams */
	RG_H2_ERR_UNCOUNTED = -9, /* a stream of a method whose rows the kernel cannot count */
	/* an OTLP/gRPC stream whose x-greptime-db-name the shadow cannot give
	 * (several, lost, too long, empty), or more than RG_H2_HDB_SLOTS */
	RG_H2_ERR_HEADER_DB = -10,
};

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

/* GreptimeRequest oneof `request` field numbers (docs/grpc.md §1). */
enum rg_grpc_kind {
	RG_GRPC_NONE = 0,
	RG_GRPC_INSERTS = 2,
	RG_GRPC_QUERY = 3,
	RG_GRPC_DDL = 4,
	RG_GRPC_DELETES = 5,
	RG_GRPC_ROW_INSERTS = 6,
	RG_GRPC_ROW_DELETES = 7,
};

/* Whether messages of this kind are charged (docs/grpc.md §3). */
RG_INLINE bool rg_grpc_kind_charged(__u32 kind)
{
	return kind == RG_GRPC_INSERTS || kind == RG_GRPC_ROW_INSERTS;
}

/* Which message the protobuf walk is inside. */
enum rg_pb_ctx {
	RG_PB_REQUEST = 0,    /* GreptimeRequest */
	RG_PB_HEADER,         /* RequestHeader */
	RG_PB_INSERTS,        /* InsertRequests */
	RG_PB_INSERT,         /* InsertRequest */
	RG_PB_ROW_INSERTS,    /* RowInsertRequests */
	RG_PB_ROW_INSERT,     /* RowInsertRequest */
	RG_PB_ROWS,           /* Rows */
};
/* An unknown field encoded as a group (wire types 3 ... 4), skipped as
 * prost's skip_field does: a level of its own whose ctx is this bit and
 * the group's field number's low 7 bits, which its end-group key must
 * match (a mismatch in higher bits, which prost refuses, is charged: the
 * safe side). */
#define RG_PB_GROUP	   0x80
#define RG_PB_GROUP_FIELD 0x7f

enum rg_pb_state {
	RG_PBS_KEY = 0,
	RG_PBS_VARINT, /* a varint value (row_count is kept, others dropped) */
	RG_PBS_LEN,    /* the length of a length-delimited field */
	RG_PBS_SKIP,   /* bytes of a field nobody reads */
	RG_PBS_CAPTURE, /* a RequestHeader string */
};

/* Which RequestHeader string a capture fills. */
enum rg_grpc_str {
	RG_GRPC_STR_CATALOG = 0,
	RG_GRPC_STR_SCHEMA = 1,
	RG_GRPC_STR_DBNAME = 2,
	RG_GRPC_STRS = 3,
};

/* One gRPC message as the server will decode it.  Protobuf merge rules
 * apply: the last value of a header string wins (across repeated headers),
 * the last oneof member set replaces earlier ones, repeated occurrences of
 * the same member merge (their rows add up). */
struct rg_grpc_msg {
	__u64 rows;
	__u32 len;           /* message bytes after the 5-byte prefix */
	__u32 row_count;     /* row_count of the InsertRequest being walked */
	__u8 kind;           /* enum rg_grpc_kind: the oneof member set last */
	__u8 compressed;     /* grpc-encoding applied: nothing below is known */
	__u8 has_header;
	/* enum rg_protocol of a message whose database is its stream's header
	 * (OTLP/gRPC): nothing inside it is read in the kernel; 0: none */
	__u8 hdr;
	__u16 str_len[RG_GRPC_STRS]; /* may exceed RG_DB_RAW_MAX: too long */
	char str[RG_GRPC_STRS][RG_DB_RAW_MAX]; /* zero past str_len */
};

/* Whether nothing inside message m is read in the kernel: it is
 * compressed, or an OTLP/gRPC export (its rows are rowgated's to count). */
RG_INLINE bool rg_grpc_opaque(const struct rg_grpc_msg *m)
{
	return m->compressed || m->hdr;
}

/* Whether message m's database is inside its compressed bytes: a
 * compressed GreptimeRequest, judged on what rowgated learned
 * (--grpc-compressed debt), not an OTLP export, whose header names it. */
RG_INLINE bool rg_grpc_db_hidden(const struct rg_grpc_msg *m)
{
	return m->compressed && !m->hdr;
}

/* Protobuf walk of one message; positions are message-relative. */
struct rg_pb_walk {
	__u32 pos;
	__u32 end[RG_PB_DEPTH];
	__u32 left;          /* bytes of SKIP/CAPTURE to go */
	__u64 varint;
	__u32 field;
	__u8 ctx[RG_PB_DEPTH];
	__u8 depth;
	__u8 st;             /* enum rg_pb_state */
	__u8 vbytes;         /* bytes of the varint so far */
	__u8 wire;           /* wire type of the current field */
	__u8 cap;            /* enum rg_grpc_str being captured */
	__u8 pad[3];
};

struct rg_h2_stream {
	__u32 id;            /* 0: free slot */
	__u8 pfx[5];         /* the gRPC length prefix being read */
	__u8 pfx_got;        /* 0..5; 5 = inside the message */
	__u8 refused;        /* the kernel reset it (bpf/h2.h): a new stream may take the slot */
	__u8 hdr;     /* rg_grpc_msg.hdr of its messages */
	struct rg_pb_walk w;
	struct rg_grpc_msg m;
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

/* Verifier workaround: hide a value from clang, which otherwise drops a
 * mask or a bound check made after the caller's own range check and
 * re-derives an unbounded index from the stored byte. */
RG_INLINE __u32 rg_h2_opaque(__u32 k)
{
#ifdef __bpf__
	asm volatile("" : "+r"(k));
#endif
	return k;
}

/* A stream slot index the verifier can see is in bounds (callers have
 * already checked it). */
RG_INLINE __u32 rg_h2_slot(int i)
{
	return rg_h2_opaque((__u32)i) & (RG_H2_STREAM_SLOTS - 1);
}

/* The same for a protobuf nesting level. */
RG_INLINE __u32 rg_pb_level(__u32 d)
{
	return rg_h2_opaque(d) & (RG_PB_DEPTH - 1);
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
 * (bpf/h2.h rg_h2_keep_frame).  Its stream's slot, and the message
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

/* ---- protobuf walk of GreptimeRequest ---------------------------------- */

/* A RequestHeader string starts again (the last occurrence wins). */
RG_INLINE void rg_grpc_str_reset(struct rg_grpc_msg *m, __u8 k, __u16 len)
{
	/* constant indexes: the verifier sees every access in bounds */
	switch (k) {
	case RG_GRPC_STR_CATALOG:
		__builtin_memset(m->str[RG_GRPC_STR_CATALOG], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_CATALOG] = len;
		break;
	case RG_GRPC_STR_SCHEMA:
		__builtin_memset(m->str[RG_GRPC_STR_SCHEMA], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_SCHEMA] = len;
		break;
	case RG_GRPC_STR_DBNAME:
		__builtin_memset(m->str[RG_GRPC_STR_DBNAME], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_DBNAME] = len;
		break;
	}
}

/* Byte c of string k, with left bytes of it to go (this one included).  A
 * value longer than a key holds is not stored: rg_grpc_db_key refuses it. */
RG_INLINE void rg_grpc_str_put(struct rg_grpc_msg *m, __u8 k, __u32 left, __u8 c)
{
	__u32 len, i;

	if (k >= RG_GRPC_STRS)
		return;
	len = m->str_len[k == RG_GRPC_STR_CATALOG ? RG_GRPC_STR_CATALOG :
			 k == RG_GRPC_STR_SCHEMA ? RG_GRPC_STR_SCHEMA : RG_GRPC_STR_DBNAME];
	if (len >= RG_DB_RAW_MAX || left > len)
		return;
	i = rg_h2_opaque(len - left);
	if (i >= RG_DB_RAW_MAX)
		return;
	if (k == RG_GRPC_STR_CATALOG)
		m->str[RG_GRPC_STR_CATALOG][i] = (char)c;
	else if (k == RG_GRPC_STR_SCHEMA)
		m->str[RG_GRPC_STR_SCHEMA][i] = (char)c;
	else
		m->str[RG_GRPC_STR_DBNAME][i] = (char)c;
}

/* What a length-delimited field of ctx with this number is. */
enum rg_pb_action {
	RG_PBA_SKIP = 0,
	RG_PBA_ENTER,        /* descend into a message we follow */
	RG_PBA_ROW,          /* a Row of Rows: one row, contents skipped */
	RG_PBA_CAPTURE,      /* a RequestHeader string */
};

/* A field number we know with the wrong wire type fails the server's
 * decoder; -1 then.  Otherwise the action, with *next = the context entered
 * or the string captured. */
RG_INLINE int rg_pb_classify(__u8 ctx, __u32 field, __u8 wire, __u8 *next)
{
	bool len = wire == 2;

	if (ctx & RG_PB_GROUP)
		return RG_PBA_SKIP; /* inside an unknown group: nothing is read */
	switch (ctx) {
	case RG_PB_REQUEST:
		if (field >= 1 && field <= 7 && !len)
			return -1;
		if (field == 1) {
			*next = RG_PB_HEADER;
			return RG_PBA_ENTER;
		}
		if (field == RG_GRPC_INSERTS) {
			*next = RG_PB_INSERTS;
			return RG_PBA_ENTER;
		}
		if (field == RG_GRPC_ROW_INSERTS) {
			*next = RG_PB_ROW_INSERTS;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_HEADER:
		if (field >= 1 && field <= 6 && !len)
			return -1;
		if (field == 1 || field == 2 || field == 4) {
			*next = field == 1 ? RG_GRPC_STR_CATALOG :
				field == 2 ? RG_GRPC_STR_SCHEMA : RG_GRPC_STR_DBNAME;
			return RG_PBA_CAPTURE;
		}
		return RG_PBA_SKIP;
	case RG_PB_INSERTS:
		if (field == 1) {
			if (!len)
				return -1;
			*next = RG_PB_INSERT;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_INSERT:
		/* table_name 1, columns 3: length-delimited; row_count 4: varint */
		if ((field == 1 || field == 3) && !len)
			return -1;
		if (field == 4 && wire != 0)
			return -1;
		return RG_PBA_SKIP;
	case RG_PB_ROW_INSERTS:
		if (field == 1) {
			if (!len)
				return -1;
			*next = RG_PB_ROW_INSERT;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_ROW_INSERT:
		if ((field == 1 || field == 2) && !len)
			return -1;
		if (field == 2) {
			*next = RG_PB_ROWS;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_ROWS:
		if ((field == 1 || field == 2) && !len)
			return -1;
		if (field == 2)
			return RG_PBA_ROW;
		return RG_PBA_SKIP;
	}
	return -1;
}

/* Leave every message whose end is reached; an InsertRequest left adds its
 * row_count.  Returns 1 when the whole GreptimeRequest is complete. */
RG_INLINE int rg_pb_pop(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	int i;

	for (i = 0; i < RG_PB_DEPTH; i++) {
		__u32 d = rg_pb_level(w->depth);

		if (w->pos != w->end[d])
			return 0;
		if (d == 0)
			return 1;
		if (w->ctx[d] & RG_PB_GROUP)
			return RG_H2_ERR_PROTOBUF; /* the message ends inside a group */
		if (w->ctx[d] == RG_PB_INSERT)
			m->rows += m->row_count;
		w->depth = (__u8)(d - 1);
	}
	return 0;
}

/* A oneof member of GreptimeRequest starts: a different member replaces
 * the one set before (its rows are dropped), the same one merges. */
RG_INLINE void rg_pb_oneof(struct rg_grpc_msg *m, __u32 field)
{
	if (field < RG_GRPC_INSERTS || field > RG_GRPC_ROW_DELETES)
		return;
	if (m->kind != field) {
		m->kind = (__u8)field;
		m->rows = 0;
	}
}

/* A field's key has been read: set up its value.  Returns 0, 1 when the
 * message completed (an empty last field), or a negative error. */
RG_INLINE int rg_pb_field(struct rg_pb_walk *w)
{
	__u32 d = rg_pb_level(w->depth);

	if (w->field == 0)
		return RG_H2_ERR_PROTOBUF;
	switch (w->wire) {
	case 0: {
		__u8 nx = 0;

		if (rg_pb_classify(w->ctx[d], w->field, 0, &nx) < 0)
			return RG_H2_ERR_PROTOBUF;
		w->st = RG_PBS_VARINT;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	}
	case 1:
	case 5: {
		__u8 nx = 0;

		if (rg_pb_classify(w->ctx[d], w->field, w->wire, &nx) < 0)
			return RG_H2_ERR_PROTOBUF;
		w->left = w->wire == 1 ? 8 : 4;
		if (w->left > w->end[d] - w->pos)
			return RG_H2_ERR_PROTOBUF;
		w->st = RG_PBS_SKIP;
		return 0;
	}
	case 2:
		w->st = RG_PBS_LEN;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	case 3: {
		__u8 nx = 0;

		/* a start-group key: unknown fields only (these messages
		 * declare no group) */
		if (rg_pb_classify(w->ctx[d], w->field, 3, &nx) != RG_PBA_SKIP ||
		    d + 1 >= RG_PB_DEPTH)
			return RG_H2_ERR_PROTOBUF;
		w->depth = (__u8)(d + 1);
		w->end[rg_pb_level(d + 1)] = w->end[d];
		w->ctx[rg_pb_level(d + 1)] = RG_PB_GROUP | (w->field & RG_PB_GROUP_FIELD);
		w->st = RG_PBS_KEY;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	}
	}
	/* an end-group key comes through rg_pb_group_end; 6 and 7 are no
	 * wire types */
	return RG_H2_ERR_PROTOBUF;
}

/* An end-group key: it closes the innermost group, which it must name.
 * Returns rg_pb_pop's answer for the levels it completes. */
RG_INLINE int rg_pb_group_end(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	__u32 d = rg_pb_level(w->depth);

	if (!(w->ctx[d] & RG_PB_GROUP) || d == 0 ||
	    (w->ctx[d] & RG_PB_GROUP_FIELD) != (w->field & RG_PB_GROUP_FIELD))
		return RG_H2_ERR_PROTOBUF;
	w->depth = (__u8)(d - 1);
	w->st = RG_PBS_KEY;
	w->varint = 0;
	w->vbytes = 0;
	return rg_pb_pop(w, m);
}

/* A length-delimited field's length has been read. */
RG_INLINE int rg_pb_len_done(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	__u32 d = rg_pb_level(w->depth);
	__u8 nx = 0;
	__u64 len = w->varint;
	int act;

	if (len > (__u64)(w->end[d] - w->pos))
		return RG_H2_ERR_PROTOBUF;
	act = rg_pb_classify(w->ctx[d], w->field, 2, &nx);
	if (act < 0)
		return RG_H2_ERR_PROTOBUF;
	if (w->ctx[d] == RG_PB_REQUEST) {
		rg_pb_oneof(m, w->field);
		if (w->field == 1)
			m->has_header = 1;
	}
	w->left = (__u32)len;
	w->st = RG_PBS_KEY;
	w->varint = 0;
	w->vbytes = 0;
	switch (act) {
	case RG_PBA_ENTER:
		if (d + 1 >= RG_PB_DEPTH)
			return RG_H2_ERR_PROTOBUF;
		w->depth = (__u8)(d + 1);
		w->end[rg_pb_level(d + 1)] = w->pos + (__u32)len;
		w->ctx[rg_pb_level(d + 1)] = nx;
		if (nx == RG_PB_INSERT)
			m->row_count = 0;
		break;
	case RG_PBA_ROW:
		m->rows++;
		w->st = RG_PBS_SKIP;
		break;
	case RG_PBA_CAPTURE:
		rg_grpc_str_reset(m, nx, len > 0xffff ? 0xffff : (__u16)len);
		w->cap = nx;
		w->st = RG_PBS_CAPTURE;
		break;
	default:
		w->st = RG_PBS_SKIP;
		break;
	}
	if (w->left == 0) {
		w->st = RG_PBS_KEY;
		return rg_pb_pop(w, m);
	}
	return 0;
}

/* One byte of a GreptimeRequest.  Returns 1 when it completed the message,
 * 0 for more, or a negative error. */
RG_INLINE int rg_pb_step(struct rg_pb_walk *w, struct rg_grpc_msg *m, __u8 c)
{
	__u32 d = rg_pb_level(w->depth);
	int r;

	w->pos++;
	switch (w->st) {
	case RG_PBS_KEY:
	case RG_PBS_VARINT:
	case RG_PBS_LEN:
		if (w->vbytes >= RG_PB_VARINT_MAX_BYTES)
			return RG_H2_ERR_PROTOBUF;
		w->varint |= (__u64)(c & 0x7f) << (7 * w->vbytes);
		w->vbytes++;
		if (c & 0x80) {
			/* the varint runs past its message */
			if (w->pos >= w->end[d])
				return RG_H2_ERR_PROTOBUF;
			return 0;
		}
		if (w->st == RG_PBS_KEY) {
			if (w->varint > 0xffffffffULL)
				return RG_H2_ERR_PROTOBUF;
			w->field = (__u32)(w->varint >> 3);
			w->wire = (__u8)(w->varint & 7);
			if (w->wire == 4 && w->field)
				return rg_pb_group_end(w, m);
			/* a key with no value before the end of its message */
			if (w->pos >= w->end[d])
				return RG_H2_ERR_PROTOBUF;
			return rg_pb_field(w);
		}
		if (w->st == RG_PBS_VARINT) {
			/* uint32 fields keep the low 32 bits, as decoders do */
			if (w->ctx[d] == RG_PB_INSERT && w->field == 4)
				m->row_count = (__u32)w->varint;
			w->st = RG_PBS_KEY;
			w->varint = 0;
			w->vbytes = 0;
			return rg_pb_pop(w, m);
		}
		return rg_pb_len_done(w, m);
	case RG_PBS_CAPTURE:
		rg_grpc_str_put(m, w->cap, w->left, c);
		/* fallthrough */
	case RG_PBS_SKIP:
		if (w->left == 0)
			return RG_H2_ERR_PROTOBUF;
		w->left--;
		if (w->left)
			return 0;
		w->st = RG_PBS_KEY;
		w->varint = 0;
		w->vbytes = 0;
		r = rg_pb_pop(w, m);
		return r;
	}
	return RG_H2_ERR_PROTOBUF;
}

/* Bytes the walk can pass over without looking (a skipped field's body,
 * minus its last byte, which goes through rg_pb_step). */
RG_INLINE __u32 rg_pb_skippable(const struct rg_pb_walk *w)
{
	return w->st == RG_PBS_SKIP && w->left > 1 ? w->left - 1 : 0;
}

/* Pass over n <= rg_pb_skippable(w) bytes. */
RG_INLINE void rg_pb_skip(struct rg_pb_walk *w, __u32 n)
{
	w->left -= n;
	w->pos += n;
}

/* A GreptimeRequest of len bytes begins: the walk at its first byte. */
RG_INLINE void rg_pb_begin_request(struct rg_pb_walk *w, __u32 len)
{
	__builtin_memset(w, 0, sizeof(*w));
	w->end[0] = len;
	w->ctx[0] = RG_PB_REQUEST;
}

/* ---- gRPC messages of one stream ---------------------------------------- */

/* One byte of a stream's DATA.  Returns RG_H2_EV_MESSAGE, 0 or an error.
 * The message's result lives in s->m until the next message's first byte. */
RG_INLINE int rg_grpc_step(struct rg_h2_stream *s, __u8 c)
{
	int r;

	if (s->pfx_got < 5) {
		if (s->pfx_got == 0) {
			/* an OTLP stream's database stays (rg_h2_stream_open) */
			if (s->hdr)
				__builtin_memset(&s->m, 0,
						 __builtin_offsetof(struct rg_grpc_msg, str_len));
			else
				__builtin_memset(&s->m, 0, sizeof(s->m));
			s->m.hdr = s->hdr;
		}
		s->pfx[s->pfx_got] = c;
		s->pfx_got++;
		if (s->pfx_got < 5)
			return 0;
		if (s->pfx[0] > 1)
			return RG_H2_ERR_GRPC;
		s->m.len = (__u32)s->pfx[1] << 24 | (__u32)s->pfx[2] << 16 |
			   (__u32)s->pfx[3] << 8 | s->pfx[4];
		if (s->m.len > RG_GRPC_MSG_MAX_BYTES)
			return RG_H2_ERR_GRPC;
		s->m.compressed = s->pfx[0];
		rg_pb_begin_request(&s->w, s->m.len);
		if (rg_grpc_opaque(&s->m)) {
			/* nothing inside is read: skip it whole */
			s->w.st = RG_PBS_SKIP;
			s->w.left = s->m.len;
		}
		if (s->m.len == 0) {
			s->pfx_got = 0;
			return RG_H2_EV_MESSAGE;
		}
		return 0;
	}
	r = rg_pb_step(&s->w, &s->m, c);
	if (r == 1) {
		s->pfx_got = 0;
		return RG_H2_EV_MESSAGE;
	}
	return r;
}

/* ---- frames -------------------------------------------------------------- */

/* A new OTLP/gRPC stream (class cls) with DATA to come: it joins the OTLP
 * set with the database its block names (none: greptime-public, as the
 * server's default). */
RG_INLINE int rg_h2_hdb_open(struct rg_h2_conn *h, int cls)
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
	e->proto = cls == RG_HPACK_PATH_OTLP_METRICS ? RG_PROTO_OTLP_METRICS :
		   cls == RG_HPACK_PATH_OTLP_LOGS    ? RG_PROTO_OTLP_LOGS :
		   cls == RG_HPACK_PATH_OTLP_TRACES  ? RG_PROTO_OTLP_TRACES :
						       RG_PROTO_ARROW_FLIGHT;
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
	if (h->hb_new && r == RG_HPACK_PATH_UNCOUNTED)
		return RG_H2_ERR_UNCOUNTED;
	if (h->hb_new && r >= RG_HPACK_PATH_OTLP_METRICS)
		return h->hb_end ? 0 : rg_h2_hdb_open(h, r);
	if (h->hb_new && !h->hb_end && r == RG_HPACK_PATH_ROUTED && rg_hpack_block_unary(&h->hp))
		rg_h2_unary_open(h);
	if (!h->hb_new || r != RG_HPACK_PATH_OTHER)
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
 * RST_STREAM + SETTINGS + a filler header (rowgate/h2_answer.h): a payload
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

/* Byte i of the default catalog ("greptime") or schema ("public"),
 * spelled out: clang turns a copy of a literal into a memcpy call, which
 * BPF has not, and a literal indexed at run time lands in .rodata.str1.1,
 * which breaks BTF (docs/design.md#toolchain-traps). */
RG_INLINE char rg_grpc_default_char(bool schema, __u32 i)
{
	switch (schema ? i + 8 : i) {
	case 0: return 'g';
	case 1: return 'r';
	case 2: return 'e';
	case 3: return 'p';
	case 4: return 't';
	case 5: return 'i';
	case 6: return 'm';
	case 7: return 'e';
	case 8: return 'p';
	case 9: return 'u';
	case 10: return 'b';
	case 11: return 'l';
	case 12: return 'i';
	case 13: return 'c';
	}
	return 0;
}

/* Scratch of rg_grpc_db_key_in: "catalog-schema" is built here.  Twice
 * the longest value, so every index masked to it stays in bounds. */
#define RG_GRPC_DB_SCRATCH_BYTES 256

/* Lower-case an ASCII letter (catalog and schema are lower-cased). */
RG_INLINE char rg_grpc_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The non-zero bytes of a header string (zero past its length): its
 * length unless it holds a NUL.  Arithmetic, no branch per byte: the
 * verifier walks it once. */
RG_INLINE __u32 rg_grpc_nonzero(const char *s)
{
	__u32 i, n = 0;

	for (i = 0; i < RG_DB_RAW_MAX; i++)
		n += ((__u32)(__u8)s[i] + 255) >> 8;
	return n;
}

/*
 * The database a completed message writes to, as greptimedb's
 * create_query_context() resolves it (docs/grpc.md §2), into key: dbname if
 * non-empty (split at its first '-', not lower-cased), else catalog and
 * schema lower-cased with defaults "greptime" / "public".  Returns the key
 * length, or -1 when the name does not fit a key, holds a NUL byte (the
 * zero-padded key would fold it into a shorter name), or when catalog/schema
 * has non-ASCII bytes, which the server lower-cases by Unicode rules (Rust's
 * to_lowercase) this code does not carry: fail closed.  raw is
 * RG_GRPC_DB_SCRATCH_BYTES of scratch (the BPF caller's is in a map value:
 * the verifier follows variable-offset writes there cheaply, not on the
 * stack).  The header strings are zero past their length, so each is
 * copied whole, one path per byte.
 */
RG_INLINE int rg_grpc_db_key_in(const struct rg_grpc_msg *m, struct rg_db_key *key, char *raw)
{
	__u32 cl = m->str_len[RG_GRPC_STR_CATALOG], sl = m->str_len[RG_GRPC_STR_SCHEMA];
	__u32 i, n;
	__u8 bad = 0;

	if (m->str_len[RG_GRPC_STR_DBNAME]) {
		n = m->str_len[RG_GRPC_STR_DBNAME];
		if (n >= RG_DB_RAW_MAX)
			return -1;
		/* a NUL inside the name: the zero-padded key would lose it and
		 * name another database ("v\0" is not "v") */
		if (rg_grpc_nonzero(m->str[RG_GRPC_STR_DBNAME]) != n)
			return -1;
		return rg_db_key_from_padded(key, m->str[RG_GRPC_STR_DBNAME], n);
	}
	if (cl >= RG_DB_RAW_MAX || sl >= RG_DB_RAW_MAX ||
	    rg_grpc_nonzero(m->str[RG_GRPC_STR_CATALOG]) != cl ||
	    rg_grpc_nonzero(m->str[RG_GRPC_STR_SCHEMA]) != sl)
		return -1; /* a NUL inside catalog or schema, as in dbname */
	__builtin_memset(raw, 0, RG_GRPC_DB_SCRATCH_BYTES);
	if (cl) {
		for (i = 0; i < RG_DB_RAW_MAX; i++) {
			char c = m->str[RG_GRPC_STR_CATALOG][i];

			bad |= (__u8)c & 0x80;
			raw[i] = rg_grpc_lower(c);
		}
		n = cl;
	} else {
		for (i = 0; i < RG_DEFAULT_CATALOG_LEN; i++)
			raw[i] = rg_grpc_default_char(false, rg_h2_opaque(i));
		n = RG_DEFAULT_CATALOG_LEN;
	}
	raw[n & (RG_GRPC_DB_SCRATCH_BYTES - 1)] = '-';
	n++;
	if (sl) {
		for (i = 0; i < RG_DB_RAW_MAX; i++) {
			char c = m->str[RG_GRPC_STR_SCHEMA][i];

			bad |= (__u8)c & 0x80;
			raw[(n + i) & (RG_GRPC_DB_SCRATCH_BYTES - 1)] = rg_grpc_lower(c);
		}
		n += sl;
	} else {
		for (i = 0; i < 6; i++)
			raw[(n + i) & (RG_GRPC_DB_SCRATCH_BYTES - 1)] =
				rg_grpc_default_char(true, rg_h2_opaque(i));
		n += 6;
	}
	if (bad || n >= RG_DB_RAW_MAX)
		return -1;
	return rg_db_key_from_padded(key, raw, n);
}

#ifndef __bpf__
/* rg_grpc_db_key_in with scratch of its own. */
static inline int rg_grpc_db_key(const struct rg_grpc_msg *m, struct rg_db_key *key)
{
	char raw[RG_GRPC_DB_SCRATCH_BYTES];

	return rg_grpc_db_key_in(m, key, raw);
}
#endif

/* Whether a completed message is charged, and its rows (docs/grpc.md §3). */
RG_INLINE bool rg_grpc_charged(const struct rg_grpc_msg *m)
{
	return m->hdr || rg_grpc_kind_charged(m->kind);
}

/* Whether a refusal of message m names an estimate: its rows are unread
 * (compressed, OTLP). */
RG_INLINE bool rg_grpc_rows_estimated(const struct rg_grpc_msg *m)
{
	return rg_grpc_opaque(m);
}

/* The rows a refusal of message m names: those read, or for an opaque
 * message the estimate HTTP's 429 gives a body of its length and protocol
 * (rowgate/estimate.h). */
RG_INLINE __u64 rg_grpc_answer_rows(const struct rg_grpc_msg *m)
{
	if (!rg_grpc_rows_estimated(m))
		return m->rows;
	return rg_est_rows(m->len, 0, m->hdr ? m->hdr : RG_PROTO_GREPTIME_GRPC, m->compressed);
}

#endif /* ROWGATE_H2_H */
