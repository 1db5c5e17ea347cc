/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Streaming HTTP/1.1 response framing, one byte per step, with skips for
 * bytes whose content does not matter (bodies; reason phrases and values of
 * headers that do not frame, a word at a time): where each response of a
 * server begins and ends, and its status.  Shared by the sk_msg program that
 * follows a guarded server's responses (docs/design.md#egress) and by the
 * native unit tests.  It frames as RFC 9112 §6.3 does: no body for 1xx, 204,
 * 304 and answers to HEAD; Transfer-Encoding chunked; Content-Length; else
 * until the connection closes.  It is strict (CRLF line ends, one
 * Content-Length): anything else is an error and the caller stops tracking
 * that connection; it never decides anything about bytes it cannot frame.
 */
#ifndef ROWGATE_HTTP_RESP_H
#define ROWGATE_HTTP_RESP_H

#include "types.h"
#include "http.h"

#define RG_RESP_HEAD_MAX_BYTES 8192 /* a longer head: tracking is lost */
#define RG_RESP_CL_DIGITS      15   /* Content-Length digits, < 10^15 */

enum rg_resp_result {
	RG_RESP_MORE = 0,
	RG_RESP_HEAD = 1,    /* a final response head ended: status is set;
			      * the caller calls rg_resp_begin_body */
	RG_RESP_DONE = 2,    /* the response ended with this byte */
	RG_RESP_INTERIM = 3, /* a 1xx head ended; another head follows */
	RG_RESP_ERR = -1,    /* cannot frame: stop tracking */
};

enum rg_resp_state {
	RG_RS_VERSION = 0, /* "HTTP/1." */
	RG_RS_MINOR,
	RG_RS_SP,
	RG_RS_CODE, /* three digits */
	RG_RS_CODE_SP,
	RG_RS_REASON,
	RG_RS_LINE_LF,
	RG_RS_NAME_START,
	RG_RS_NAME,
	RG_RS_VALUE,
	RG_RS_VALUE_LF,
	RG_RS_END_LF,
	RG_RS_BODY_LENGTH, /* Content-Length bytes left in remaining */
	RG_RS_BODY_CHUNKED,
	RG_RS_BODY_CLOSE, /* until the connection closes */
};

/* The headers that frame a response. */
#define RG_RH_CL 1 /* content-length */
#define RG_RH_TE 2 /* transfer-encoding */

/* "HTTP/1." as a word, byte i at bits 8i */
#define RG_RESP_VERSION_W   RG_W8('H', 'T', 'T', 'P', '/', '1', '.', 0)
#define RG_RESP_VERSION_LEN 7

struct rg_resp {
	__u64 remaining; /* Content-Length body bytes left */
	__u64 length;	 /* the Content-Length value */
	__u64 te_tail;	 /* last 8 non-blank bytes of Transfer-Encoding, lowercased */
	__u64 name_words[RG_HDR_NAME_WORDS]; /* header name, lowercased */
	struct rg_chunked chunk;
	__u32 head_bytes;
	__u16 status;
	__u8 state; /* enum rg_resp_state */
	__u8 pos;   /* bytes of the version, the code, the name */
	__u8 hdr;   /* RG_RH_* of the current value */
	__u8 has_length;
	__u8 has_te;
	__u8 digits;
	__u8 pad[8];
};

RG_INLINE void rg_resp_init(struct rg_resp *r)
{
	__builtin_memset(r, 0, sizeof(*r));
}

RG_INLINE __u8 rg_resp_lower(__u8 c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Whether the server frames a response of this status without a body. */
RG_INLINE bool rg_resp_status_bodyless(__u16 status)
{
	return status < 200 || status == 204 || status == 304;
}

/*
 * Statuses that prove the server refused a write before storing any of it
 * (docs/design.md#refunds): authentication (401), authorisation (403), no
 * such path or database (404), and a request too large to read (413, 431).
 * 400 is not here: InfluxDB and VictoriaMetrics answer 400 to a body that
 * fails to parse part-way, after storing the rows before the error.
 */
RG_INLINE bool rg_resp_status_refunds(__u16 status)
{
	return status == 401 || status == 403 || status == 404 || status == 413 || status == 431;
}

/* The head is over: set up the body (head_request: the request was HEAD).
 * Returns RG_RESP_DONE when there is none, else RG_RESP_MORE. */
RG_INLINE int rg_resp_begin_body(struct rg_resp *r, bool head_request)
{
	if (head_request || rg_resp_status_bodyless(r->status))
		goto done;
	if (r->has_te) {
		/* the final coding must be chunked; any other coding is
		 * read until close (RFC 9112 §6.3 rule 4) */
		if ((r->te_tail & 0xffffffffffffffULL) == 0x6368756e6b6564ULL /* "chunked" */ &&
		    ((r->te_tail >> 56) == 0 || (r->te_tail >> 56) == ',')) {
			r->state = RG_RS_BODY_CHUNKED;
			rg_chunked_init(&r->chunk);
		} else {
			r->state = RG_RS_BODY_CLOSE;
		}
		return RG_RESP_MORE;
	}
	if (r->has_length) {
		if (r->length == 0)
			goto done;
		r->remaining = r->length;
		r->state = RG_RS_BODY_LENGTH;
		return RG_RESP_MORE;
	}
	r->state = RG_RS_BODY_CLOSE;
	return RG_RESP_MORE;
done:
	rg_resp_init(r);
	return RG_RESP_DONE;
}

/* Bytes from here on the caller may pass over without reading them. */
RG_INLINE __u64 rg_resp_skippable(const struct rg_resp *r)
{
	switch (r->state) {
	case RG_RS_BODY_LENGTH:
		return r->remaining;
	case RG_RS_BODY_CHUNKED:
		return r->chunk.state == RG_CS_DATA ? r->chunk.remaining - 1 : 0;
	case RG_RS_BODY_CLOSE:
		return RG_U64_MAX;
	}
	return 0;
}

/* Pass over n <= rg_resp_skippable() bytes; RG_RESP_DONE if that ends the
 * response.  A chunk's last data byte is always stepped (it moves the
 * chunked parser on), so only a Content-Length body ends here. */
RG_INLINE int rg_resp_skip(struct rg_resp *r, __u64 n)
{
	switch (r->state) {
	case RG_RS_BODY_LENGTH:
		r->remaining -= n;
		if (r->remaining == 0) {
			rg_resp_init(r);
			return RG_RESP_DONE;
		}
		break;
	case RG_RS_BODY_CHUNKED:
		r->chunk.remaining -= n;
		break;
	}
	return RG_RESP_MORE;
}

/*
 * Eight head bytes taken at once where no byte decides anything alone: the
 * reason phrase or the value of a header that does not frame the response
 * (no CR, which ends it, and no LF, an error), or eight bytes of a header
 * name that are all tchars and start a word of it.  They count as consumed,
 * exactly as eight rg_resp_step() calls would leave r (x holds the bytes in
 * memory order, little-endian); false: step them one by one.
 */
RG_INLINE bool rg_resp_skip_word(struct rg_resp *r, __u64 x)
{
	__u32 w;

	if (r->head_bytes + 8 > RG_RESP_HEAD_MAX_BYTES)
		return false;
	switch (r->state) {
	case RG_RS_VALUE:
		if (r->hdr)
			return false;
		/* fall through */
	case RG_RS_REASON:
		if (rg_swar_eq(x, '\r') | rg_swar_eq(x, '\n'))
			return false;
		break;
	case RG_RS_NAME_START:
	case RG_RS_NAME:
		if ((r->state == RG_RS_NAME && r->pos % 8) || rg_swar_not_tchar(x))
			return false;
		if (r->state == RG_RS_NAME_START) {
			r->state = RG_RS_NAME;
			r->pos = 0;
			__builtin_memset(r->name_words, 0, sizeof(r->name_words));
		}
		w = r->pos / 8;
		if (w < RG_HDR_NAME_WORDS)
			r->name_words[w] = rg_swar_lower(x);
		r->pos = r->pos > 255 - 8 ? 255 : r->pos + 8;
		break;
	default:
		return false;
	}
	r->head_bytes += 8;
	return true;
}

/* The framing header a complete name is, or 0. */
RG_INLINE __u8 rg_resp_header(const struct rg_resp *r)
{
	const __u64 *w = r->name_words;

	if (r->pos == 14 && w[0] == RG_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-') &&
	    w[1] == RG_W8('l', 'e', 'n', 'g', 't', 'h', 0, 0))
		return RG_RH_CL;
	if (r->pos == 17 && w[0] == RG_W8('t', 'r', 'a', 'n', 's', 'f', 'e', 'r') &&
	    w[1] == RG_W8('-', 'e', 'n', 'c', 'o', 'd', 'i', 'n') &&
	    w[2] == RG_W8('g', 0, 0, 0, 0, 0, 0, 0))
		return RG_RH_TE;
	return 0;
}

/* One byte of a header value (pos: blanks followed the length digits). */
RG_INLINE int rg_resp_value_byte(struct rg_resp *r, __u8 c)
{
	bool blank = c == ' ' || c == '\t';

	if (r->hdr == RG_RH_CL) {
		if (blank) {
			if (r->digits)
				r->pos = 1;
			return RG_RESP_MORE;
		}
		if (c < '0' || c > '9' || r->pos || r->digits >= RG_RESP_CL_DIGITS)
			return RG_RESP_ERR;
		r->length = r->length * 10 + (c - '0');
		r->digits++;
	} else if (r->hdr == RG_RH_TE && !blank) {
		r->te_tail = r->te_tail << 8 | rg_resp_lower(c);
	}
	return RG_RESP_MORE;
}

RG_INLINE int rg_resp_step(struct rg_resp *r, __u8 c)
{
	int res;

	if (r->state < RG_RS_BODY_LENGTH && ++r->head_bytes > RG_RESP_HEAD_MAX_BYTES)
		return RG_RESP_ERR;
	switch (r->state) {
	case RG_RS_VERSION:
		if (r->pos >= RG_RESP_VERSION_LEN ||
		    c != (__u8)(RG_RESP_VERSION_W >> ((r->pos & 7) * 8)))
			return RG_RESP_ERR;
		if (++r->pos == RG_RESP_VERSION_LEN)
			r->state = RG_RS_MINOR;
		return RG_RESP_MORE;
	case RG_RS_MINOR:
		if (c != '0' && c != '1')
			return RG_RESP_ERR;
		r->state = RG_RS_SP;
		return RG_RESP_MORE;
	case RG_RS_SP:
		if (c != ' ')
			return RG_RESP_ERR;
		r->state = RG_RS_CODE;
		r->pos = 0;
		return RG_RESP_MORE;
	case RG_RS_CODE:
		if (c < '0' || c > '9' || (r->pos == 0 && c == '0'))
			return RG_RESP_ERR;
		r->status = r->status * 10 + (c - '0');
		if (++r->pos == 3)
			r->state = RG_RS_CODE_SP;
		return RG_RESP_MORE;
	case RG_RS_CODE_SP:
		if (c == '\r') {
			r->state = RG_RS_LINE_LF;
			return RG_RESP_MORE;
		}
		if (c != ' ')
			return RG_RESP_ERR;
		r->state = RG_RS_REASON;
		return RG_RESP_MORE;
	case RG_RS_REASON:
		if (c == '\r')
			r->state = RG_RS_LINE_LF;
		else if (c == '\n')
			return RG_RESP_ERR;
		return RG_RESP_MORE;
	case RG_RS_LINE_LF:
	case RG_RS_VALUE_LF:
		if (c != '\n')
			return RG_RESP_ERR;
		r->state = RG_RS_NAME_START;
		return RG_RESP_MORE;
	case RG_RS_NAME_START:
		if (c == '\r') {
			r->state = RG_RS_END_LF;
			return RG_RESP_MORE;
		}
		if (!rg_is_tchar(c))
			return RG_RESP_ERR;
		r->state = RG_RS_NAME;
		r->pos = 0;
		__builtin_memset(r->name_words, 0, sizeof(r->name_words));
		/* fall through */
	case RG_RS_NAME:
		if (c == ':') {
			r->hdr = rg_resp_header(r);
			if (r->hdr == RG_RH_CL) {
				/* a second Content-Length: ambiguous */
				if (r->has_length)
					return RG_RESP_ERR;
				r->has_length = 1;
			} else if (r->hdr == RG_RH_TE) {
				if (r->has_te)
					r->te_tail = r->te_tail << 8 | ',';
				r->has_te = 1;
			}
			r->state = RG_RS_VALUE;
			r->pos = 0;
			return RG_RESP_MORE;
		}
		if (!rg_is_tchar(c))
			return RG_RESP_ERR;
		rg_word_put(r->name_words, RG_HDR_NAME_WORDS, r->pos, rg_resp_lower(c));
		if (r->pos < 255)
			r->pos++;
		return RG_RESP_MORE;
	case RG_RS_VALUE:
		if (c == '\r') {
			if (r->hdr == RG_RH_CL && !r->digits)
				return RG_RESP_ERR;
			r->state = RG_RS_VALUE_LF;
			return RG_RESP_MORE;
		}
		if (c == '\n')
			return RG_RESP_ERR;
		return rg_resp_value_byte(r, c);
	case RG_RS_END_LF:
		if (c != '\n')
			return RG_RESP_ERR;
		/* 101 switches to another protocol: nothing here frames it */
		if (r->status == 101)
			return RG_RESP_ERR;
		if (r->status < 200) {
			rg_resp_init(r);
			return RG_RESP_INTERIM;
		}
		return RG_RESP_HEAD;
	case RG_RS_BODY_LENGTH:
		if (--r->remaining == 0) {
			rg_resp_init(r);
			return RG_RESP_DONE;
		}
		return RG_RESP_MORE;
	case RG_RS_BODY_CHUNKED:
		res = rg_chunked_step(&r->chunk, c);
		if (res == RG_CHUNK_ERR)
			return RG_RESP_ERR;
		if (res == RG_CHUNK_DONE) {
			rg_resp_init(r);
			return RG_RESP_DONE;
		}
		return RG_RESP_MORE;
	case RG_RS_BODY_CLOSE:
		return RG_RESP_MORE;
	}
	return RG_RESP_ERR;
}

#endif /* ROWGATE_HTTP_RESP_H */
