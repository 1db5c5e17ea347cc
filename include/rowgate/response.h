/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The responses the kernel answers with itself (429 and 400): their text,
 * their exact lengths, and a writer that copies literal pieces and writes
 * numbers.  TCP charges a response at its length (docs/design.md#tcp-read-accounting), so the
 * verdict plans it by arithmetic and writes it without bpf_snprintf (whose
 * format parsing cost more than the rest of a rejection's verdict); the
 * unit tests hold plan and writer against snprintf of the printf templates.
 * One BPF object may include this header (it defines .rodata and globals).
 */
#ifndef ROWGATE_RESPONSE_H
#define ROWGATE_RESPONSE_H

#include "types.h"
#include "abi.h"

/* ---- text ---- */

/* The literal pieces between the variable parts of each response. */
#define RG_429_H0                             \
	"HTTP/1.1 429 Too Many Requests\r\n"  \
	"Content-Type: application/json\r\n"  \
	"X-Greptime-Err-Code: 6001\r\n"       \
	"X-Greptime-Err-Msg: RateLimited\r\n" \
	"Retry-After: "
#define RG_400_H0                            \
	"HTTP/1.1 400 Bad Request\r\n"       \
	"Content-Type: application/json\r\n" \
	"X-Greptime-Err-Code: 1004"
#define RG_HDR_CONNECTION     "\r\nConnection: "
#define RG_HDR_CONTENT_LENGTH "\r\nContent-Length: "
#define RG_HEAD_END	      "\r\n\r\n"
/* the sentence of "error", also a gRPC rejection's grpc-message (h2/answer.h):
 * MSG0 db B1 [estimated] rows B2 quota B3 limit MSG_END */
#define RG_429_MSG0	      "Ingestion rate limit exceeded for database '"
#define RG_429_MSG_END	      " rows/s"
#define RG_429_B0	      "{\"code\":6001,\"error\":\"" RG_429_MSG0
#define RG_429_B1	      "': rejected "
#define RG_429_B2	      " rows, current quota "
#define RG_429_B3	      " rows/s, configured limit "
#define RG_429_B4	      RG_429_MSG_END "\",\"execution_time_ms\":0}"
/* for requests too small to carry the long form in their own bytes */
#define RG_429S_B0	  "{\"code\":6001,\"error\":\"db '"
#define RG_429S_B1	  "' rate limited: rejected "
#define RG_429S_B2	  " rows, quota "
#define RG_429S_B3	  "/s, limit "
#define RG_429S_B4	  "/s\",\"execution_time_ms\":0}"
#define RG_400_B0	  "{\"code\":1004,\"error\":\"rowgate: "
#define RG_400_B1	  "\",\"execution_time_ms\":0}"
#define RG_STR_CLOSE	  "close"
#define RG_STR_KEEP_ALIVE "keep-alive"
#define RG_STR_OWS	  " " /* one optional whitespace: breaks a length tie */
#define RG_STR_ESTIMATED  "an estimated "
#define RG_STR_MALFORMED  "malformed request"
#define RG_STR_FRAMING	  "ambiguous or invalid message framing"
#define RG_STR_TOO_LARGE  "request head too large"
#define RG_STR_H2	  "HTTP/2 the kernel cannot follow"
#define RG_STR_H2_UNCOUNTED \
	"a gRPC method whose rows the kernel cannot count (rowgated --grpc-uncounted)"

/* The same responses as printf templates: the reference the unit tests
 * format.  Conversions in order: Retry-After, OWS, connection,
 * Content-Length (400: OWS, connection, Content-Length), then the body's:
 * database, estimate, rows, quota, limit (400: the message). */
#define RG_429_HEAD_FMT \
	RG_429_H0 "%llu%s" RG_HDR_CONNECTION "%s" RG_HDR_CONTENT_LENGTH "%llu" RG_HEAD_END
#define RG_429_BODY_FMT \
	RG_429_B0 "%s" RG_429_B1 "%s%llu" RG_429_B2 "%llu" RG_429_B3 "%llu" RG_429_B4
#define RG_429_BODY_SHORT_FMT \
	RG_429S_B0 "%s" RG_429S_B1 "%s%llu" RG_429S_B2 "%llu" RG_429S_B3 "%llu" RG_429S_B4
#define RG_400_HEAD_FMT \
	RG_400_H0 "%s" RG_HDR_CONNECTION "%s" RG_HDR_CONTENT_LENGTH "%llu" RG_HEAD_END
#define RG_400_BODY_FMT RG_400_B0 "%s" RG_400_B1

#define RG_STRLEN(s) ((__u32)(sizeof(s) - 1))

/* ---- what a response says, and its plan ---- */

enum rg_resp_kind {
	RG_RESP_429 = 1,
	RG_RESP_400 = 2,
};

enum rg_resp_error { /* the message of a 400 */
		     RG_RESP_ERR_MALFORMED = 0,
		     RG_RESP_ERR_FRAMING,
		     RG_RESP_ERR_TOO_LARGE,
		     RG_RESP_ERR_H2, /* only in an HTTP/2 GOAWAY (bpf/h2/verdict.h) */
		     RG_RESP_ERR_H2_UNCOUNTED, /* the same, for a refused method */
};

struct rg_response {
	/* what it says (the caller's) */
	__u64 retry_after_s;
	__u64 rows;
	__u64 quota_rows_per_s;
	__u64 limit_rows_per_s;
	__u32 db_len;	/* bytes of the database name */
	__u8 kind;	/* enum rg_resp_kind */
	__u8 error;	/* enum rg_resp_error of a 400 */
	__u8 estimated; /* rows is an estimate: the body was not read */
	__u8 close;	/* in: Connection: close is required; out: sent */
	/* its plan (rg_response_plan) */
	__u8 short_form; /* the short 429 body */
	__u8 ows;	 /* one OWS byte after Retry-After / the error code */
	__u8 pad[2];
	__u32 text_len;	 /* head and JSON */
	__u32 total_len; /* with the JSON's space padding: what TCP charges */
	__u64 content_length;
};

/* Head and JSON of any response fit this; a plan above it is refused. */
#define RG_RESP_TEXT_MAX 512
/* Content-Length with padding: one skb and the ledger stay far below this
 * (it keeps total_len's u32 arithmetic exact); a plan above it is refused. */
#define RG_RESP_PADDED_MAX (512u << 10)
/* The writer's buffer: pieces are copied in whole words at offsets below
 * RG_RESP_TEXT_MAX, digits written at offsets masked to the buffer. */
#define RG_RESP_BUF_BYTES 1024

struct rg_resp_buf {
	char b[RG_RESP_BUF_BYTES];
};

/* Decimal digits of v, without a loop (the verifier counts every step). */
RG_GLOBAL __u32 rg_dec_digits(__u64 v)
{
	__u32 d = 1;

	if (v >= 10000000000ULL) {
		d += 10;
		v /= 10000000000ULL;
	}
	if (v >= 100000) {
		d += 5;
		v /= 100000;
	}
	if (v >= 1000) {
		d += 3;
		v /= 1000;
	}
	if (v >= 100) {
		d += 2;
		v /= 100;
	}
	if (v >= 10)
		d += 1;
	return d;
}

RG_INLINE __u32 rg_resp_error_len(__u8 error)
{
	return error == RG_RESP_ERR_TOO_LARGE ? RG_STRLEN(RG_STR_TOO_LARGE) :
	       error == RG_RESP_ERR_FRAMING   ? RG_STRLEN(RG_STR_FRAMING) :
	       error == RG_RESP_ERR_H2	      ? RG_STRLEN(RG_STR_H2) :
	       error == RG_RESP_ERR_H2_UNCOUNTED ? RG_STRLEN(RG_STR_H2_UNCOUNTED) :
						RG_STRLEN(RG_STR_MALFORMED);
}

/* Bytes of the JSON. */
RG_INLINE __u32 rg_response_body_len(const struct rg_response *r)
{
	if (r->kind == RG_RESP_400)
		return RG_STRLEN(RG_400_B0) + rg_resp_error_len(r->error) + RG_STRLEN(RG_400_B1);
	return (r->short_form ?
			RG_STRLEN(RG_429S_B0) + RG_STRLEN(RG_429S_B1) + RG_STRLEN(RG_429S_B2) +
				RG_STRLEN(RG_429S_B3) + RG_STRLEN(RG_429S_B4) :
			RG_STRLEN(RG_429_B0) + RG_STRLEN(RG_429_B1) + RG_STRLEN(RG_429_B2) +
				RG_STRLEN(RG_429_B3) + RG_STRLEN(RG_429_B4)) +
	       r->db_len + (r->estimated ? RG_STRLEN(RG_STR_ESTIMATED) : 0) +
	       rg_dec_digits(r->rows) + rg_dec_digits(r->quota_rows_per_s) +
	       rg_dec_digits(r->limit_rows_per_s);
}

/* Bytes of the head without its Content-Length digits and the OWS byte. */
RG_INLINE __u32 rg_response_head_base(const struct rg_response *r, bool close)
{
	__u32 n = RG_STRLEN(RG_HDR_CONNECTION) + RG_STRLEN(RG_HDR_CONTENT_LENGTH) +
		  RG_STRLEN(RG_HEAD_END) +
		  (close ? RG_STRLEN(RG_STR_CLOSE) : RG_STRLEN(RG_STR_KEEP_ALIVE));

	if (r->kind == RG_RESP_400)
		return n + RG_STRLEN(RG_400_H0);
	return n + RG_STRLEN(RG_429_H0) + rg_dec_digits(r->retry_after_s);
}

/*
 * Fill exactly target bytes with a response whose head, less its
 * Content-Length digits and OWS, is head_base bytes, and whose JSON is
 * body_len bytes: Content-Length covers the JSON and its space padding,
 * and its own digits change the head's length, so only cl with
 * cl + digits(cl) = room works (room = target - head_base, less one with
 * the OWS byte, which breaks the tie at a power of ten).  False when
 * target is too small for any: then head_base + digits(body_len) +
 * body_len > target.
 */
RG_INLINE bool rg_resp_fit(__u64 target, __u32 head_base, __u32 body_len, __u64 *cl, __u8 *ows)
{
	__u32 i;

	for (i = 0; i < 2; i++) {
		__u64 room, d;

		if (target <= (__u64)head_base + i)
			return false;
		room = target - head_base - i;
		d = rg_dec_digits(room);
		if (room > d && room - d >= body_len && rg_dec_digits(room - d) == d) {
			*cl = room - d;
			*ows = (__u8)i;
			return true;
		}
		if (d > 1 && room - d + 1 >= body_len && rg_dec_digits(room - d + 1) == d - 1) {
			*cl = room - d + 1;
			*ows = (__u8)i;
			return true;
		}
	}
	return false;
}

/*
 * Plan a response that replaces target bytes: the short 429 body when the
 * long one cannot fit, Connection: close when no keep-alive form fits
 * (a shorter head may), and when nothing fits, the smallest response,
 * larger than target (the caller closes the connection).  Returns -1 when
 * the text would not fit RG_RESP_TEXT_MAX.
 */
RG_INLINE int rg_response_plan(struct rg_response *r, __u64 target)
{
	bool close = r->close, fit;
	__u32 body_len, base;

	r->short_form = 0;
	r->ows = 0;
	body_len = rg_response_body_len(r);
	if (r->kind == RG_RESP_429 && target < (__u64)rg_response_head_base(r, close) + body_len) {
		r->short_form = 1;
		body_len = rg_response_body_len(r);
	}
	base = rg_response_head_base(r, close);
	fit = rg_resp_fit(target, base, body_len, &r->content_length, &r->ows);
	if (!fit && !close) {
		close = true; /* a shorter head may fit */
		base = rg_response_head_base(r, close);
		fit = rg_resp_fit(target, base, body_len, &r->content_length, &r->ows);
	}
	if (!fit) {
		/* the smallest response: it grows the skb, so it closes */
		r->ows = 0;
		r->content_length = body_len;
	}
	r->close = close;
	r->text_len = base + r->ows + rg_dec_digits(r->content_length) + body_len;
	r->total_len = r->text_len - body_len + (__u32)r->content_length;
	return r->text_len < RG_RESP_TEXT_MAX && r->content_length < RG_RESP_PADDED_MAX ? 0 : -1;
}

/*
 * Plan the long form with Connection: close and no padding: a response
 * that replaces no received bytes (egress's 429 for a voided request,
 * docs/design.md#response-ordering), so nothing sets its size.
 */
RG_INLINE int rg_response_plan_unpadded(struct rg_response *r)
{
	__u32 body_len;

	r->short_form = 0;
	r->close = 1;
	body_len = rg_response_body_len(r);
	return rg_response_plan(r, (__u64)rg_response_head_base(r, true) +
					   rg_dec_digits(body_len) + body_len);
}

/* ---- the writer ---- */

#ifdef __bpf__
#define RG_RODATA	    const /* named, in .rodata (literals would break BTF) */
#define RG_COPY64(dst, src) (*(__u64 *)(dst) = *(const __u64 *)(src))
#else
#define RG_RODATA	    static const
#define RG_COPY64(dst, src) __builtin_memcpy((dst), (src), 8)
#endif

/* Each piece as a word-padded array, so it can be copied in whole words. */
#define RG_PIECE(name, text) \
	RG_RODATA char name[(sizeof(text) + 7) & ~7] __attribute__((aligned(8))) = text;
RG_PIECE(rg_p_429_h0, RG_429_H0)
RG_PIECE(rg_p_400_h0, RG_400_H0)
RG_PIECE(rg_p_connection, RG_HDR_CONNECTION)
RG_PIECE(rg_p_content_length, RG_HDR_CONTENT_LENGTH)
RG_PIECE(rg_p_head_end, RG_HEAD_END)
RG_PIECE(rg_p_429_b0, RG_429_B0)
RG_PIECE(rg_p_429_b1, RG_429_B1)
RG_PIECE(rg_p_429_b2, RG_429_B2)
RG_PIECE(rg_p_429_b3, RG_429_B3)
RG_PIECE(rg_p_429_b4, RG_429_B4)
RG_PIECE(rg_p_429s_b0, RG_429S_B0)
RG_PIECE(rg_p_429s_b1, RG_429S_B1)
RG_PIECE(rg_p_429s_b2, RG_429S_B2)
RG_PIECE(rg_p_429s_b3, RG_429S_B3)
RG_PIECE(rg_p_429s_b4, RG_429S_B4)
RG_PIECE(rg_p_400_b0, RG_400_B0)
RG_PIECE(rg_p_400_b1, RG_400_B1)
RG_PIECE(rg_p_close, RG_STR_CLOSE)
RG_PIECE(rg_p_keep_alive, RG_STR_KEEP_ALIVE)
RG_PIECE(rg_p_ows, RG_STR_OWS)
RG_PIECE(rg_p_estimated, RG_STR_ESTIMATED)
RG_PIECE(rg_p_malformed, RG_STR_MALFORMED)
RG_PIECE(rg_p_framing, RG_STR_FRAMING)
RG_PIECE(rg_p_too_large, RG_STR_TOO_LARGE)
RG_PIECE(rg_p_h2, RG_STR_H2)
RG_PIECE(rg_p_h2_uncounted, RG_STR_H2_UNCOUNTED)

/* Copy a piece (whole words; the bytes past it are overwritten next). */
#define RG_PUT(o, off, piece, text) rg_put_words((o), (off), (piece), RG_STRLEN(text))

RG_INLINE __u32 rg_put_words(struct rg_resp_buf *o, __u32 off, const char *piece, __u32 len)
{
	__u32 at = off & (RG_RESP_TEXT_MAX - 1), i;

	for (i = 0; i < (len + 7) / 8; i++)
		RG_COPY64(&o->b[at + 8 * i], &piece[8 * i]);
	return off + len;
}

/* Write v in decimal at off. */
RG_GLOBAL __u32 rg_put_dec(struct rg_resp_buf *o, __u32 off, __u64 v)
{
	__u32 d, i;

	if (!o)
		return off;
	d = rg_dec_digits(v);
	if (d > 20)
		d = 20;
	for (i = 0; i < 20 && i < d; i++) {
		o->b[(off + d - 1 - i) & (RG_RESP_BUF_BYTES - 1)] = (char)('0' + v % 10);
		v /= 10;
	}
	return off + d;
}

/* Write the JSON of a response at off; returns where it ends.  The same
 * text is the debug data of the GOAWAY that closes an HTTP/2 connection
 * (bpf/h2/verdict.h), so gRPC clients read what an HTTP client reads. */
RG_INLINE __u32 rg_response_write_body(struct rg_resp_buf *o, __u32 off,
					const struct rg_response *r, const struct rg_db_key *db)
{
	__u32 i, at;

	if (!o || !r || !db)
		return off;
	if (r->kind == RG_RESP_400) {
		off = RG_PUT(o, off, rg_p_400_b0, RG_400_B0);
		if (r->error == RG_RESP_ERR_TOO_LARGE)
			off = RG_PUT(o, off, rg_p_too_large, RG_STR_TOO_LARGE);
		else if (r->error == RG_RESP_ERR_FRAMING)
			off = RG_PUT(o, off, rg_p_framing, RG_STR_FRAMING);
		else if (r->error == RG_RESP_ERR_H2)
			off = RG_PUT(o, off, rg_p_h2, RG_STR_H2);
		else if (r->error == RG_RESP_ERR_H2_UNCOUNTED)
			off = RG_PUT(o, off, rg_p_h2_uncounted, RG_STR_H2_UNCOUNTED);
		else
			off = RG_PUT(o, off, rg_p_malformed, RG_STR_MALFORMED);
		return RG_PUT(o, off, rg_p_400_b1, RG_400_B1);
	}
	if (r->short_form)
		off = RG_PUT(o, off, rg_p_429s_b0, RG_429S_B0);
	else
		off = RG_PUT(o, off, rg_p_429_b0, RG_429_B0);
	/* the whole key (NUL-padded), then the next piece overwrites past it */
	at = off & (RG_RESP_TEXT_MAX - 1);
	for (i = 0; i < RG_DB_NAME_MAX / 8; i++)
		RG_COPY64(&o->b[at + 8 * i], &db->name[8 * i]);
	off += r->db_len & (RG_DB_NAME_MAX - 1);
	if (r->short_form)
		off = RG_PUT(o, off, rg_p_429s_b1, RG_429S_B1);
	else
		off = RG_PUT(o, off, rg_p_429_b1, RG_429_B1);
	if (r->estimated)
		off = RG_PUT(o, off, rg_p_estimated, RG_STR_ESTIMATED);
	off = rg_put_dec(o, off, r->rows);
	if (r->short_form)
		off = RG_PUT(o, off, rg_p_429s_b2, RG_429S_B2);
	else
		off = RG_PUT(o, off, rg_p_429_b2, RG_429_B2);
	off = rg_put_dec(o, off, r->quota_rows_per_s);
	if (r->short_form)
		off = RG_PUT(o, off, rg_p_429s_b3, RG_429S_B3);
	else
		off = RG_PUT(o, off, rg_p_429_b3, RG_429_B3);
	off = rg_put_dec(o, off, r->limit_rows_per_s);
	if (r->short_form)
		return RG_PUT(o, off, rg_p_429s_b4, RG_429S_B4);
	return RG_PUT(o, off, rg_p_429_b4, RG_429_B4);
}

/* Write the planned response into o; returns its text length, which the
 * caller holds against the plan's. */
RG_GLOBAL __u32 rg_response_write(struct rg_resp_buf *o, const struct rg_response *r,
				  const struct rg_db_key *db)
{
	__u32 off;

	if (!o || !r || !db)
		return 0;
	if (r->kind == RG_RESP_400) {
		off = RG_PUT(o, 0, rg_p_400_h0, RG_400_H0);
		if (r->ows)
			off = RG_PUT(o, off, rg_p_ows, RG_STR_OWS);
	} else {
		off = RG_PUT(o, 0, rg_p_429_h0, RG_429_H0);
		off = rg_put_dec(o, off, r->retry_after_s);
		if (r->ows)
			off = RG_PUT(o, off, rg_p_ows, RG_STR_OWS);
	}
	off = RG_PUT(o, off, rg_p_connection, RG_HDR_CONNECTION);
	if (r->close)
		off = RG_PUT(o, off, rg_p_close, RG_STR_CLOSE);
	else
		off = RG_PUT(o, off, rg_p_keep_alive, RG_STR_KEEP_ALIVE);
	off = RG_PUT(o, off, rg_p_content_length, RG_HDR_CONTENT_LENGTH);
	off = rg_put_dec(o, off, r->content_length);
	off = RG_PUT(o, off, rg_p_head_end, RG_HEAD_END);
	return rg_response_write_body(o, off, r, db);
}

#endif /* ROWGATE_RESPONSE_H */
