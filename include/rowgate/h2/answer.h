/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The bytes rowgate writes on an HTTP/2 connection to reject a gRPC message
 * without breaking the connection (docs/grpc.md §6.3): the in-place rewrite
 * of a DATA frame into RST_STREAM(CANCEL) + an empty SETTINGS + an
 * unknown-type filler, the connection WINDOW_UPDATE for hidden DATA, and
 * the trailers-only HEADERS that answers the client (grpc-status 8 with
 * GreptimeDB's error metadata, §4).  HPACK: one static-indexed field and
 * literals without indexing only, so neither side's dynamic table changes
 * (RFC 7541 §6.1, §6.2.2).  Pure byte writers, unit-tested natively
 * (tests/unit/test_h2_answer.c); the grpc-message text is the HTTP 429's.
 */
#ifndef ROWGATE_H2_ANSWER_H
#define ROWGATE_H2_ANSWER_H

#include "../types.h"
#include "../abi.h"
#include "../response.h"
#include "result.h"
#include "frame.h"
#include "stash.h"

#define RG_H2_RST_STREAM_BYTES	  13
#define RG_H2_SETTINGS_EMPTY_BYTES 9
#define RG_H2_WINDOW_UPDATE_BYTES 13
/* RST_STREAM + SETTINGS + the filler's own header, in place of a DATA
 * frame's header + payload: the payload must be at least this long */
#define RG_H2_REWRITE_HEAD_BYTES                                                   \
	(RG_H2_RST_STREAM_BYTES + RG_H2_SETTINGS_EMPTY_BYTES + RG_H2_FRAME_HDR_BYTES)
#define RG_H2_REWRITE_MIN_PAYLOAD (RG_H2_REWRITE_HEAD_BYTES - RG_H2_FRAME_HDR_BYTES)
_Static_assert(RG_H2_SHORT_TAIL_BYTES == RG_H2_REWRITE_MIN_PAYLOAD,
	       "a short tail is a payload the rewrite does not fit");
/* SETTINGS + the filler's header in place of a refused stream's later
 * DATA frame (rg_h2_put_give_back_head) */
#define RG_H2_GIVE_BACK_HEAD_BYTES  (RG_H2_SETTINGS_EMPTY_BYTES + RG_H2_FRAME_HDR_BYTES)
#define RG_H2_GIVE_BACK_MIN_PAYLOAD (RG_H2_GIVE_BACK_HEAD_BYTES - RG_H2_FRAME_HDR_BYTES)
#define RG_H2_FILLER		  0xfa /* an unregistered frame type: ignored (RFC 9113 §5.5) */
#define RG_H2_CANCEL		  0x8
#define RG_H2_WINDOW_MAX	  0x7fffffffU /* largest window increment */

/* A grpc-message fits this; a trailers-only frame and its scratch
 * (RG_GRPC_DETAILS_PRE_AT) fit the answer buffer. */
#define RG_GRPC_MESSAGE_MAX 512
#define RG_GRPC_ANSWER_MAX  RG_RESP_BUF_BYTES
#define RG_GRPC_ANSWER_MASK (RG_GRPC_ANSWER_MAX - 1)

/* HPACK pieces (RFC 7541 Appendix A, §6.2.2) */
#define RG_HPACK_STATUS_200	   0x88 /* indexed field 8 */
#define RG_HPACK_LIT_NOINDEX	   0x00 /* literal without indexing, new name */
#define RG_HPACK_CONTENT_TYPE_IDX 31   /* static name "content-type" */
#define RG_GRPC_CONTENT_TYPE	   "application/grpc"
#define RG_GRPC_STATUS_RESOURCE_EXHAUSTED "8"
#define RG_GRPC_ERR_CODE	   "6001" /* StatusCode::RateLimited */
#define RG_GRPC_RETRY_HINT	   "retryable"

RG_INLINE void rg_h2_put_frame_hdr(__u8 *b, __u32 len, __u8 type, __u8 flags, __u32 sid)
{
	b[0] = (__u8)(len >> 16);
	b[1] = (__u8)(len >> 8);
	b[2] = (__u8)len;
	b[3] = type;
	b[4] = flags;
	b[5] = (__u8)(sid >> 24) & 0x7f;
	b[6] = (__u8)(sid >> 16);
	b[7] = (__u8)(sid >> 8);
	b[8] = (__u8)sid;
}

RG_INLINE void rg_h2_put_u32(__u8 *b, __u32 v)
{
	b[0] = (__u8)(v >> 24);
	b[1] = (__u8)(v >> 16);
	b[2] = (__u8)(v >> 8);
	b[3] = (__u8)v;
}

/* RST_STREAM(sid, code): RG_H2_RST_STREAM_BYTES. */
RG_INLINE __u32 rg_h2_put_rst_stream(__u8 *b, __u32 sid, __u32 code)
{
	rg_h2_put_frame_hdr(b, 4, RG_H2_RST_STREAM, 0, sid);
	rg_h2_put_u32(b + RG_H2_FRAME_HDR_BYTES, code);
	return RG_H2_RST_STREAM_BYTES;
}

/* An empty SETTINGS (the server must acknowledge it, §6.5.3). */
RG_INLINE __u32 rg_h2_put_settings_empty(__u8 *b)
{
	rg_h2_put_frame_hdr(b, 0, RG_H2_SETTINGS, 0, 0);
	return RG_H2_SETTINGS_EMPTY_BYTES;
}

/* WINDOW_UPDATE(sid, inc), inc in [1, 2^31 - 1]; 0 when inc is not. */
RG_INLINE __u32 rg_h2_put_window_update(__u8 *b, __u32 sid, __u32 inc)
{
	if (inc == 0 || inc > RG_H2_WINDOW_MAX)
		return 0;
	rg_h2_put_frame_hdr(b, 4, RG_H2_WINDOW_UPDATE, 0, sid);
	rg_h2_put_u32(b + RG_H2_FRAME_HDR_BYTES, inc);
	return RG_H2_WINDOW_UPDATE_BYTES;
}

/* RST_STREAM(sid, CANCEL), an empty SETTINGS when settings, then the
 * header of an unknown-type filler whose payload is the rest of a DATA
 * frame of payload_len bytes, as long as the frame: the head's length, or
 * -1 when the payload is too short. */
RG_INLINE int rg_h2_put_reset_head(__u8 *b, __u32 sid, __u32 payload_len, bool settings)
{
	__u32 off;

	if (payload_len < RG_H2_REWRITE_MIN_PAYLOAD)
		return -1;
	off = rg_h2_put_rst_stream(b, sid, RG_H2_CANCEL);
	if (settings)
		off += rg_h2_put_settings_empty(b + off);
	rg_h2_put_frame_hdr(b + off, payload_len - RG_H2_REWRITE_MIN_PAYLOAD, RG_H2_FILLER, 0,
			    sid);
	return (int)(off + RG_H2_FRAME_HDR_BYTES);
}

/*
 * The first RG_H2_REWRITE_HEAD_BYTES of a DATA frame of payload_len bytes
 * rewritten in place, same length: RST_STREAM(sid, CANCEL), an empty
 * SETTINGS, then the header of an unknown-type frame whose payload is the
 * rest (its bytes stay as received).  -1 when the payload is too short.
 */
RG_INLINE int rg_h2_put_rewrite_head(__u8 *b, __u32 sid, __u32 payload_len)
{
	return rg_h2_put_reset_head(b, sid, payload_len, true);
}

/*
 * A DATA frame refused before its message completed (docs/grpc.md#h2-early):
 * its first RG_H2_EARLY_HEAD_BYTES become RST_STREAM(sid, CANCEL) and the
 * header of an unknown-type filler up to the frame's last 9 bytes, which
 * become the empty SETTINGS (rg_h2_put_settings_empty) once the skb that
 * holds them passes: the server acknowledges it after the whole frame,
 * when the message's rows are known.  Same length as the frame; -1 when
 * the payload is too short.
 */
_Static_assert(RG_H2_EARLY_HEAD_BYTES == RG_H2_RST_STREAM_BYTES + RG_H2_FRAME_HDR_BYTES,
	       "the early head is RST_STREAM + a frame header");
RG_INLINE int rg_h2_put_early_head(__u8 *b, __u32 sid, __u32 payload_len)
{
	return rg_h2_put_reset_head(b, sid, payload_len, false);
}

/*
 * A DATA frame of a refused stream that gives the window of the DATA the
 * kernel hid back (docs/grpc.md#h2-give-back): its first
 * RG_H2_GIVE_BACK_HEAD_BYTES become an empty SETTINGS, whose ACK egress
 * replaces with a connection WINDOW_UPDATE, and the header of an
 * unknown-type filler over the rest.  Same length as the frame; -1 when
 * the payload is too short.
 */
RG_INLINE int rg_h2_put_give_back_head(__u8 *b, __u32 sid, __u32 payload_len)
{
	__u32 off;

	if (payload_len < RG_H2_GIVE_BACK_MIN_PAYLOAD)
		return -1;
	off = rg_h2_put_settings_empty(b);
	rg_h2_put_frame_hdr(b + off, payload_len - RG_H2_GIVE_BACK_MIN_PAYLOAD, RG_H2_FILLER, 0,
			    sid);
	return (int)(off + RG_H2_FRAME_HDR_BYTES);
}

/* An HPACK integer with a prefix_bits-bit prefix, the first byte's high
 * bits from first (RFC 7541 §5.1).  Returns the new offset. */
RG_INLINE __u32 rg_hpack_put_int(__u8 *b, __u32 off, __u8 first, __u32 prefix_bits, __u32 v)
{
	__u32 max = (1U << prefix_bits) - 1, i;

	if (v < max) {
		b[off] = first | (__u8)v;
		return off + 1;
	}
	b[off++] = first | (__u8)max;
	v -= max;
	for (i = 0; i < 5 && v >= 128; i++) {
		b[off++] = (__u8)(v & 0x7f) | 0x80;
		v >>= 7;
	}
	b[off] = (__u8)v;
	return off + 1;
}

/* A string literal, not Huffman-coded. */
RG_INLINE __u32 rg_hpack_put_str(__u8 *b, __u32 off, const char *s, __u32 n)
{
	__u32 i;

	off = rg_hpack_put_int(b, off, 0, 7, n);
	for (i = 0; i < n; i++)
		b[off + i] = (__u8)s[i];
	return off + n;
}

/* A literal field without indexing with a new name. */
RG_INLINE __u32 rg_hpack_put_field(__u8 *b, __u32 off, const char *name, __u32 nlen,
				   const char *value, __u32 vlen)
{
	b[off++] = RG_HPACK_LIT_NOINDEX;
	off = rg_hpack_put_str(b, off, name, nlen);
	return rg_hpack_put_str(b, off, value, vlen);
}

#define RG_HPACK_FIELD(b, off, name, value, vlen) \
	rg_hpack_put_field((b), (off), name, RG_STRLEN(name), (value), (vlen))

/* Whether grpc-message must percent-encode a byte (gRPC PROTOCOL-HTTP2). */
RG_INLINE bool rg_grpc_pct_needed(__u8 c)
{
	return c < 0x20 || c > 0x7e || c == '%';
}

RG_INLINE char rg_hex_upper(__u32 v)
{
	v &= 0xf;
	return (char)(v < 10 ? '0' + v : 'A' + v - 10);
}

/* Append s[0..n) percent-encoded; returns the new length, cap - 1 at most
 * (a byte that does not fit whole is left out, and all after it). */
RG_INLINE __u32 rg_grpc_put_pct(char *out, __u32 len, __u32 cap, const char *s, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		__u8 c = (__u8)s[i];

		if (rg_grpc_pct_needed(c)) {
			if (len + 3 >= cap)
				break;
			out[len++] = '%';
			out[len++] = rg_hex_upper(c >> 4);
			out[len++] = rg_hex_upper(c);
		} else {
			if (len + 1 >= cap)
				break;
			out[len++] = (char)c;
		}
	}
	return len;
}

RG_INLINE __u32 rg_grpc_put_dec(char *out, __u32 len, __u32 cap, __u64 v)
{
	__u32 d = rg_dec_digits(v), i;

	if (len + d >= cap)
		return len;
	for (i = 0; i < d; i++) {
		out[len + d - 1 - i] = (char)('0' + v % 10);
		v /= 10;
	}
	return len + d;
}

/*
 * The grpc-message of a rejection, percent-encoded: the text of the HTTP
 * 429's "error" (RG_429_MSG0 ... RG_429_MSG_END), so gRPC and HTTP clients
 * read the same sentence.  Returns its length (< cap).
 */
RG_INLINE __u32 rg_grpc_message_429(char *out, __u32 cap, const struct rg_response *r,
				     const struct rg_db_key *db)
{
	__u32 len = 0, dl = r->db_len < RG_DB_NAME_MAX ? r->db_len : RG_DB_NAME_MAX - 1;

	len = rg_grpc_put_pct(out, len, cap, RG_429_MSG0, RG_STRLEN(RG_429_MSG0));
	len = rg_grpc_put_pct(out, len, cap, db->name, dl);
	len = rg_grpc_put_pct(out, len, cap, RG_429_B1, RG_STRLEN(RG_429_B1));
	if (r->estimated)
		len = rg_grpc_put_pct(out, len, cap, RG_STR_ESTIMATED, RG_STRLEN(RG_STR_ESTIMATED));
	len = rg_grpc_put_dec(out, len, cap, r->rows);
	len = rg_grpc_put_pct(out, len, cap, RG_429_B2, RG_STRLEN(RG_429_B2));
	len = rg_grpc_put_dec(out, len, cap, r->quota_rows_per_s);
	len = rg_grpc_put_pct(out, len, cap, RG_429_B3, RG_STRLEN(RG_429_B3));
	len = rg_grpc_put_dec(out, len, cap, r->limit_rows_per_s);
	return rg_grpc_put_pct(out, len, cap, RG_429_MSG_END, RG_STRLEN(RG_429_MSG_END));
}

/*
 * grpc-status-details-bin (gRPC PROTOCOL-HTTP2): google.rpc.Status{code 8,
 * message, details [Any{google.rpc.RetryInfo{retry_delay {seconds}}}]},
 * base64 without padding.  RetryInfo is how a gRPC client learns the
 * HTTP 429's Retry-After: the OpenTelemetry Collector's exporters retry
 * RESOURCE_EXHAUSTED only when it is there.  grpc-go takes the status's
 * message from this field once it is present, so the message is the
 * grpc-message value, read from the frame where it already is.
 *
 * The Status is never written whole: the bytes before and after its
 * message wait at the answer buffer's end (RG_GRPC_DETAILS_PRE_AT, _SUF_AT)
 * while rg_grpc_details_quad turns three bytes a step into base64 (a
 * bpf_loop step in the kernel).  The frame ends before that scratch.
 */
#define RG_GRPC_DETAILS_FIELD "\x00\x17grpc-status-details-bin"
/* Status.details[0], its three lengths 0 (patched) and Duration.seconds'
 * tag last: 49 bytes before the seconds' varint */
#define RG_GRPC_RETRY_INFO \
	"\x1a\x00\x0a\x28type.googleapis.com/google.rpc.RetryInfo\x12\x00\x0a\x00\x08"
#define RG_GRPC_RETRY_INFO_ANY_LEN   1
#define RG_GRPC_RETRY_INFO_INFO_LEN  45
#define RG_GRPC_RETRY_INFO_DELAY_LEN 47
#define RG_GRPC_DETAILS_PRE_AT	     (RG_GRPC_ANSWER_MAX - 72)
#define RG_GRPC_DETAILS_SUF_AT	     (RG_GRPC_ANSWER_MAX - 64)
_Static_assert(RG_STRLEN(RG_GRPC_RETRY_INFO) + 5 <= 64, "RetryInfo fits its scratch");
RG_PIECE(rg_p_grpc_retry_info, RG_GRPC_RETRY_INFO)
RG_PIECE(rg_p_grpc_details_field, RG_GRPC_DETAILS_FIELD)

struct rg_grpc_details {
	__u32 text_at;	/* Status.message: the grpc-message value in the frame */
	__u32 text_len;
	__u32 pre_len;	/* Status bytes before it, at RG_GRPC_DETAILS_PRE_AT */
	__u32 bytes;	/* the Status's length; those after the message: _SUF_AT */
	__u32 out;	/* where its base64 goes */
	__u32 quads;	/* rg_grpc_details_quad steps that write it */
};

/* A protobuf varint at b[off], offsets masked to the answer buffer. */
RG_INLINE __u32 rg_grpc_put_varint(__u8 *b, __u32 off, __u32 v)
{
	__u32 i;

	RG_UNROLL
	for (i = 0; i < 4; i++) {
		if (v >= 0x80) {
			b[off++ & RG_GRPC_ANSWER_MASK] = (__u8)(v | 0x80);
			v >>= 7;
		}
	}
	b[off++ & RG_GRPC_ANSWER_MASK] = (__u8)v;
	return off;
}

/*
 * Plan the Status whose message is b[text_at, +text_len) and whose
 * RetryInfo says retry_s seconds: write its other bytes to the scratch and
 * the field's HPACK name and length at off.  Returns the field's end (the
 * d->quads steps of rg_grpc_details_quad fill its base64), or 0 when it
 * would reach the scratch: the answer then goes without it.
 */
RG_INLINE __u32 rg_grpc_details_begin(struct rg_grpc_details *d, __u8 *b, __u32 off,
				      __u32 text_at, __u32 text_len, __u64 retry_s)
{
	__u32 secs = retry_s > 0xffffffffULL ? 0xffffffffU : (__u32)retry_s;
	__u32 pre, suf, vlen, chars, i;

	d->quads = 0;
	if (text_len >= RG_GRPC_MESSAGE_MAX)
		return 0;
	pre = RG_GRPC_DETAILS_PRE_AT;
	b[pre] = 0x08; /* code */
	b[pre + 1] = 8;
	b[pre + 2] = 0x12; /* message */
	d->pre_len = rg_grpc_put_varint(b, pre + 3, text_len) - pre;
	suf = RG_GRPC_DETAILS_SUF_AT;
	RG_UNROLL
	for (i = 0; i < sizeof(rg_p_grpc_retry_info) / 8; i++)
		RG_COPY64(&b[suf + 8 * i], &rg_p_grpc_retry_info[8 * i]);
	vlen = rg_grpc_put_varint(b, suf + RG_STRLEN(RG_GRPC_RETRY_INFO), secs) -
	       (suf + RG_STRLEN(RG_GRPC_RETRY_INFO));
	b[suf + RG_GRPC_RETRY_INFO_DELAY_LEN] = (__u8)(1 + vlen);
	b[suf + RG_GRPC_RETRY_INFO_INFO_LEN] = (__u8)(3 + vlen);
	b[suf + RG_GRPC_RETRY_INFO_ANY_LEN] = (__u8)(47 + vlen);
	d->text_at = text_at;
	d->text_len = text_len;
	d->bytes = d->pre_len + text_len + RG_STRLEN(RG_GRPC_RETRY_INFO) + vlen;
	d->quads = (d->bytes + 2) / 3;
	chars = (d->bytes * 4 + 2) / 3;
	/* name, then the value's length: an HPACK integer, 7-bit prefix */
	if (off + RG_STRLEN(RG_GRPC_DETAILS_FIELD) + 3 + chars + 2 >= RG_GRPC_DETAILS_PRE_AT) {
		d->quads = 0;
		return 0;
	}
	off = rg_h2_opaque(off); /* the masks below stay */
	RG_UNROLL
	for (i = 0; i < RG_STRLEN(RG_GRPC_DETAILS_FIELD); i++)
		b[(off + i) & RG_GRPC_ANSWER_MASK] = (__u8)rg_p_grpc_details_field[i];
	off += RG_STRLEN(RG_GRPC_DETAILS_FIELD);
	if (chars < 127) {
		b[off++ & RG_GRPC_ANSWER_MASK] = (__u8)chars;
	} else {
		b[off++ & RG_GRPC_ANSWER_MASK] = 0x7f;
		off = rg_grpc_put_varint(b, off, chars - 127);
	}
	d->out = off;
	return off + chars;
}

/* The Status's byte j (0 past its end: base64's padding bits). */
RG_INLINE __u32 rg_grpc_details_byte(const struct rg_grpc_details *d, const __u8 *b, __u32 j)
{
	if (j >= d->bytes)
		return 0;
	if (j < d->pre_len)
		return b[(RG_GRPC_DETAILS_PRE_AT + j) & RG_GRPC_ANSWER_MASK];
	j -= d->pre_len;
	if (j < d->text_len)
		return b[(d->text_at + j) & RG_GRPC_ANSWER_MASK];
	return b[(RG_GRPC_DETAILS_SUF_AT + j - d->text_len) & RG_GRPC_ANSWER_MASK];
}

RG_INLINE __u8 rg_base64_char(__u32 v)
{
	v &= 63;
	if (v < 26)
		return (__u8)('A' + v);
	if (v < 52)
		return (__u8)('a' + v - 26);
	if (v < 62)
		return (__u8)('0' + v - 52);
	return v == 62 ? '+' : '/';
}

/* Base64 step k: the Status's bytes 3k..3k+2 as four characters (the last
 * step's extra ones fall past the field, before the scratch). */
RG_INLINE void rg_grpc_details_quad(const struct rg_grpc_details *d, __u8 *b, __u32 k)
{
	__u32 j = 3 * k, at = d->out + 4 * k, v;

	v = rg_grpc_details_byte(d, b, j) << 16 | rg_grpc_details_byte(d, b, j + 1) << 8 |
	    rg_grpc_details_byte(d, b, j + 2);
	b[at & RG_GRPC_ANSWER_MASK] = rg_base64_char(v >> 18);
	b[(at + 1) & RG_GRPC_ANSWER_MASK] = rg_base64_char(v >> 12);
	b[(at + 2) & RG_GRPC_ANSWER_MASK] = rg_base64_char(v >> 6);
	b[(at + 3) & RG_GRPC_ANSWER_MASK] = rg_base64_char(v);
}

/*
 * The frame that answers a rejected stream: HEADERS(END_STREAM |
 * END_HEADERS) with `:status 200` and `content-type application/grpc`
 * (left out when the server already sent the response's HEADERS, §6.2.7:
 * then these are trailers), grpc-status 8, grpc-message msg (already
 * percent-encoded), x-greptime-err-code 6001, x-greptime-err-retry-hint
 * retryable, grpc-status-details-bin with RetryInfo retry_s seconds (left
 * out when it does not fit; its message is msg as written, the text where
 * nothing needed encoding, the only case the kernel answers).  out holds
 * RG_GRPC_ANSWER_MAX bytes; returns the frame's length, or 0 when msg is
 * too long.
 */
RG_INLINE __u32 rg_grpc_put_trailers_only(__u8 *out, __u32 sid, bool headers_sent,
					  const char *msg, __u32 msg_len, __u64 retry_s)
{
	struct rg_grpc_details d;
	__u32 off = RG_H2_FRAME_HDR_BYTES, text_at, end, k;

	if (msg_len >= RG_GRPC_MESSAGE_MAX)
		return 0;
	if (!headers_sent) {
		out[off++] = RG_HPACK_STATUS_200;
		off = rg_hpack_put_int(out, off, 0, 4, RG_HPACK_CONTENT_TYPE_IDX);
		off = rg_hpack_put_str(out, off, RG_GRPC_CONTENT_TYPE,
				       RG_STRLEN(RG_GRPC_CONTENT_TYPE));
	}
	off = RG_HPACK_FIELD(out, off, "grpc-status", RG_GRPC_STATUS_RESOURCE_EXHAUSTED,
			     RG_STRLEN(RG_GRPC_STATUS_RESOURCE_EXHAUSTED));
	off = RG_HPACK_FIELD(out, off, "grpc-message", msg, msg_len);
	text_at = off - msg_len;
	off = RG_HPACK_FIELD(out, off, "x-greptime-err-code", RG_GRPC_ERR_CODE,
			     RG_STRLEN(RG_GRPC_ERR_CODE));
	off = RG_HPACK_FIELD(out, off, "x-greptime-err-retry-hint", RG_GRPC_RETRY_HINT,
			     RG_STRLEN(RG_GRPC_RETRY_HINT));
	end = rg_grpc_details_begin(&d, out, off, text_at, msg_len, retry_s);
	for (k = 0; k < d.quads; k++)
		rg_grpc_details_quad(&d, out, k);
	if (end)
		off = end;
	rg_h2_put_frame_hdr(out, off - RG_H2_FRAME_HDR_BYTES, RG_H2_HEADERS,
			    RG_H2_FLAG_END_STREAM | RG_H2_FLAG_END_HEADERS, sid);
	return off;
}

/*
 * The same trailers-only frame, written the way the BPF programs can
 * (rg_response_write_body's word copies into a struct rg_resp_buf): the
 * 429's sentence for database db (db_len bytes, none of which needs
 * percent-encoding: the caller checks rg_grpc_db_plain), r->rows rows
 * ("an estimated" when r->estimated), grpc-status-details-bin with
 * RetryInfo r->retry_after_s, its base64 left to the caller: d->quads steps
 * of rg_grpc_details_quad (none when it does not fit).
 * Returns the frame's length, 0 when it would not fit.
 */
#define RG_GRPC_A_STATUS_CT "\x88\x0f\x10\x10" RG_GRPC_CONTENT_TYPE
#define RG_GRPC_A_STATUS                                                             \
	"\x00\x0bgrpc-status\x01" RG_GRPC_STATUS_RESOURCE_EXHAUSTED "\x00\x0cgrpc-message"
#define RG_GRPC_A_TAIL                                                               \
	"\x00\x13x-greptime-err-code\x04" RG_GRPC_ERR_CODE                               \
	"\x00\x19x-greptime-err-retry-hint\x09" RG_GRPC_RETRY_HINT
RG_PIECE(rg_p_grpc_status_ct, RG_GRPC_A_STATUS_CT)
RG_PIECE(rg_p_grpc_status, RG_GRPC_A_STATUS)
RG_PIECE(rg_p_grpc_tail, RG_GRPC_A_TAIL)
RG_PIECE(rg_p_grpc_msg0, RG_429_MSG0)
RG_PIECE(rg_p_grpc_b1, RG_429_B1)
RG_PIECE(rg_p_grpc_msg_end, RG_429_MSG_END)

/* Whether a database name goes into grpc-message as it is. */
RG_INLINE bool rg_grpc_db_plain(const struct rg_db_key *db, __u32 db_len)
{
	__u32 i;

	for (i = 0; i < RG_DB_NAME_MAX; i++) {
		if (i >= db_len)
			break;
		if (rg_grpc_pct_needed((__u8)db->name[i]))
			return false;
	}
	return true;
}

RG_INLINE __u32 rg_grpc_write_answer(struct rg_resp_buf *o, __u32 sid, bool headers_sent,
				     const struct rg_response *r, const struct rg_db_key *db,
				     struct rg_grpc_details *d)
{
	__u32 off = RG_H2_FRAME_HDR_BYTES, at, i, dl = r->db_len & (RG_DB_NAME_MAX - 1), mlen;
	__u32 text_at, end;

	mlen = RG_STRLEN(RG_429_MSG0) + dl + RG_STRLEN(RG_429_B1) +
	       (r->estimated ? RG_STRLEN(RG_STR_ESTIMATED) : 0) + rg_dec_digits(r->rows) +
	       RG_STRLEN(RG_429_B2) + rg_dec_digits(r->quota_rows_per_s) + RG_STRLEN(RG_429_B3) +
	       rg_dec_digits(r->limit_rows_per_s) + RG_STRLEN(RG_429_MSG_END);
	if (mlen >= 127 + 127)
		return 0;
	if (!headers_sent)
		off = RG_PUT(o, off, rg_p_grpc_status_ct, RG_GRPC_A_STATUS_CT);
	off = RG_PUT(o, off, rg_p_grpc_status, RG_GRPC_A_STATUS);
	/* its length: an HPACK integer, 7-bit prefix, no Huffman */
	if (mlen < 127) {
		o->b[off & (RG_RESP_TEXT_MAX - 1)] = (char)mlen;
		off++;
	} else {
		o->b[off & (RG_RESP_TEXT_MAX - 1)] = 0x7f;
		o->b[(off + 1) & (RG_RESP_TEXT_MAX - 1)] = (char)(mlen - 127);
		off += 2;
	}
	d->quads = 0;
	text_at = off;
	off = RG_PUT(o, off, rg_p_grpc_msg0, RG_429_MSG0);
	at = off & (RG_RESP_TEXT_MAX - 1);
	for (i = 0; i < RG_DB_NAME_MAX / 8; i++)
		RG_COPY64(&o->b[at + 8 * i], &db->name[8 * i]);
	off += dl;
	off = RG_PUT(o, off, rg_p_grpc_b1, RG_429_B1);
	if (r->estimated)
		off = RG_PUT(o, off, rg_p_estimated, RG_STR_ESTIMATED);
	off = rg_put_dec(o, off, r->rows);
	off = RG_PUT(o, off, rg_p_429_b2, RG_429_B2);
	off = rg_put_dec(o, off, r->quota_rows_per_s);
	off = RG_PUT(o, off, rg_p_429_b3, RG_429_B3);
	off = rg_put_dec(o, off, r->limit_rows_per_s);
	off = RG_PUT(o, off, rg_p_grpc_msg_end, RG_429_MSG_END);
	off = RG_PUT(o, off, rg_p_grpc_tail, RG_GRPC_A_TAIL);
	if (off >= RG_RESP_TEXT_MAX)
		return 0;
	end = rg_grpc_details_begin(d, (__u8 *)o->b, off, text_at, mlen, r->retry_after_s);
	if (end)
		off = end;
	rg_h2_put_frame_hdr((__u8 *)o->b, off - RG_H2_FRAME_HDR_BYTES, RG_H2_HEADERS,
			    RG_H2_FLAG_END_STREAM | RG_H2_FLAG_END_HEADERS, sid);
	return off;
}

#endif /* ROWGATE_H2_ANSWER_H */
