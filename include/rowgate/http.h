/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Streaming HTTP/1.1 request-head and chunked-body parsers, one byte per
 * step, shared by the sk_skb verdict (which feeds them from bpf_loop) and by
 * the native unit tests.  They are strict where a server could read framing
 * differently (RFC 9112 §6.3, §11.2): Content-Length with Transfer-Encoding,
 * duplicate or malformed lengths, codings other than "chunked", obs-fold,
 * whitespace before a colon, bare LF line ends and oversized heads are errors
 * that the caller answers with 400 and a closed connection.
 *
 * The request target and the query are read as the port's server reads them
 * (enum rg_profile; docs/server-profiles.md cites the sources): Go's net/http
 * and net/url at go1.19 for InfluxDB 1.x, VictoriaMetrics, Prometheus and
 * Loki, GreptimeDB's raw rules for GreptimeDB.  What rowgate does not model
 * is an error (RG_HEAD_ERR_UNMODELED), never a guess.
 */
#ifndef ROWGATE_HTTP_H
#define ROWGATE_HTTP_H

#include "types.h"
#include "abi.h"
#include "dbname.h"
#include "rows.h"

#define RG_HEAD_MAX_BYTES    8192 /* larger heads are refused: 400 */
#define RG_METHOD_MAX_BYTES  16
#define RG_HDR_NAME_WORDS    3    /* known header names are <= 24 bytes */
#define RG_TOKEN_MAX_BYTES   16   /* Transfer-Encoding/Expect/Connection values */
#define RG_CHUNK_SIZE_DIGITS 15   /* hex digits of a chunk size, < 2^60 */

/* Step results.  Errors are negative and say why (counters, 400 bodies). */
enum rg_head_result {
	RG_HEAD_MORE = 0,
	RG_HEAD_DONE = 1,
	RG_HEAD_ERR_NOT_HTTP = -1,  /* first bytes are not a request line */
	RG_HEAD_ERR_MALFORMED = -2, /* request line or header syntax */
	RG_HEAD_ERR_TOO_LARGE = -3, /* head over RG_HEAD_MAX_BYTES */
	RG_HEAD_ERR_FRAMING = -4,   /* ambiguous or invalid body framing */
	RG_HEAD_ERR_UNMODELED = -5, /* valid to the server, but read in a way
				     * rowgate does not model: refused */
};

/* Go's server discards up to this many CR/LF bytes before a request that
 * follows a POST (net/http conn.readRequest, Peek(4)). */
#define RG_GO_LEADING_CRLF_MAX 4

enum rg_head_state {
	RG_HS_METHOD = 0,
	RG_HS_TARGET_START,
	RG_HS_ABS_TARGET, /* absolute-form: skip scheme://authority */
	RG_HS_PATH,
	RG_HS_PATH_PCT1, /* %XX in the path, decoded as servers route on it */
	RG_HS_PATH_PCT2,
	RG_HS_QUERY_NAME,
	RG_HS_QUERY_VALUE,
	RG_HS_QUERY_SKIP, /* a value we don't need */
	RG_HS_VERSION,
	RG_HS_REQLINE_LF,
	RG_HS_NAME_START,
	RG_HS_NAME,
	RG_HS_VALUE_OWS,
	RG_HS_VALUE,
	RG_HS_LINE_LF,
	RG_HS_END_LF,
	RG_HS_DONE,
	RG_HS_LEAD,       /* before the method: CR/LF a server may skip */
	RG_HS_ABS_SCHEME, /* Go: scheme of an absolute-form target */
	RG_HS_ABS_COLON,  /* Go: after "scheme:" */
	RG_HS_ABS_SLASH,  /* Go: after "scheme:/" */
	RG_HS_ABS_AUTH,   /* Go: host[:port] after "scheme://" */
	RG_HS_ABS_PORT,   /* Go: digits after the host's ':' */
};

/* Header names rowgate acts on. */
enum rg_header_id {
	RG_HDR_OTHER = 0,
	RG_HDR_CONTENT_LENGTH,
	RG_HDR_TRANSFER_ENCODING,
	RG_HDR_EXPECT,
	RG_HDR_CONNECTION,
	RG_HDR_DB_NAME, /* X-Greptime-DB-Name */
	RG_HDR_TENANT,  /* X-Scope-OrgID: the db on routes that say so */
	RG_HDR_CONTENT_TYPE,
	RG_HDR_CONTENT_ENCODING,
	RG_HDR_HOST,
};

/* Which query parameter a value belongs to. */
enum rg_query_param {
	RG_QP_NONE = 0,
	RG_QP_DB,
	RG_QP_BUCKET,
	RG_QP_EXTRA_LABEL, /* VictoriaMetrics: extra_label=name=value */
};

#define RG_QNAME_BYTES 12 /* longest parameter name rowgate reads: extra_label */

/* A query pair as Go's url.ParseQuery sees it. */
#define RG_QF_SEMICOLON  (1U << 0) /* contains ';': dropped (go1.17+) */
#define RG_QF_BAD_ESCAPE (1U << 1) /* a '%' not followed by two hex digits: dropped */

/* A captured database value: raw bytes, as long as a key can hold. */
struct rg_db_value {
	char raw[RG_DB_RAW_MAX]; /* zero past len: see rg_db_key_from_padded */
	__u16 len;     /* bytes captured (may exceed raw: overflow) */
	__u8 present;  /* the header or parameter appeared */
	__u8 done;     /* first occurrence complete: ignore later ones */
};

struct rg_http_head {
	__u32 head_bytes;
	__u8 state;
	__u8 first_request; /* the connection's first bytes: may be non-HTTP */
	__u8 profile;       /* enum rg_profile of the port */
	__u8 after_post;    /* the previous request's method was "POST" */
	__u8 lead;          /* CR/LF skipped before the method */
	__u8 method_len;
	__u8 is_post;       /* the method runs the write routes of the profile */
	__u8 method_post;   /* the method is exactly "POST" */
	__u8 path_slash;    /* VictoriaMetrics: a '/' that a next '/' merges into */
	__u8 qflags;        /* RG_QF_* of the current query pair */
	__u8 qpct;          /* query: 1 after '%', 2 after '%' and a hex digit */
	__u8 qhi;
	__u8 extra_db;      /* bytes of "db=" matched by an extra_label value */
	__u8 version_len;
	__u8 http_minor;
	__u8 abs_slashes;
	__u8 pct_hi;
	__u16 path_len;     /* may exceed RG_PATH_MAX: no route matches */
	__u8 qname_len;
	__u8 qparam;        /* enum rg_query_param of the current value */
	__u8 qname[RG_QNAME_BYTES]; /* decoded (Go profiles) */
	__u8 header;        /* enum rg_header_id of the current line */
	__u8 token_len;
	__u8 name_len;
	__u8 value_started;
	__u8 has_content_length;
	__u8 has_transfer_encoding;
	__u8 chunked;
	__u8 expect_continue;
	__u8 conn_close;
	__u8 conn_keep_alive;
	__u8 cl_digits;
	__u8 cl_done;       /* OWS after the digits: only OWS may follow */
	__u8 host_count;    /* Host header lines, counted to 2 */
	__u8 ce_headers;    /* Content-Encoding lines seen (saturating) */
	__u64 method;       /* first 8 bytes of the method, little-endian */
	__u64 name_words[RG_HDR_NAME_WORDS];
	__u64 content_length;
	__u8 token[RG_TOKEN_MAX_BYTES];
	char path[RG_PATH_MAX];
	struct rg_db_value db_header;
	struct rg_db_value db_query;
	struct rg_db_value bucket_query;
	struct rg_db_value tenant;
	__u8 ct_len;
	__u8 ce_len;
	char content_type[RG_CT_BYTES];     /* first bytes, lower-cased */
	char content_encoding[RG_CE_BYTES];
};

/* Eight bytes as a little-endian word, for comparing names without strings
 * (string literals would land in .rodata.str1.1, which BPF can't use). */
#define RG_W8(a, b, c, d, e, f, g, h)                                       \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | \
	 (__u64)(e) << 32 | (__u64)(f) << 40 | (__u64)(g) << 48 |             \
	 (__u64)(h) << 56)

/* A head of a request on a port of this profile; after_post: the request
 * before it on the connection used the method "POST". */
RG_INLINE void rg_http_head_init(struct rg_http_head *h, bool first_request, __u8 profile,
				 bool after_post)
{
	__builtin_memset(h, 0, sizeof(*h));
	h->first_request = first_request;
	h->profile = profile;
	h->after_post = after_post;
	h->state = RG_HS_LEAD;
}

RG_INLINE __u8 rg_lower(__u8 c)
{
	return (c >= 'A' && c <= 'Z') ? c | 0x20 : c;
}

RG_INLINE int rg_hex_value(__u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = rg_lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* RFC 9110 tchar: what a header name may contain. */
RG_INLINE bool rg_is_tchar(__u8 c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'': case '*':
	case '+': case '-': case '.': case '^': case '_': case '`': case '|':
	case '~':
		return true;
	}
	return false;
}

/* Bytes a header value may hold: visible ASCII, obs-text, SP and HTAB. */
RG_INLINE bool rg_is_field_byte(__u8 c)
{
	return c == '\t' || (c >= ' ' && c != 0x7f);
}

/* 0x80 in every byte of x that is not an RFC 9110 tchar (what a header
 * name may hold): controls, SP, DEL, bytes past ASCII and the separators
 * "(),/:;<=>?@[\]{} (pairs that differ in bit 0 are tested together). */
RG_INLINE __u64 rg_swar_not_tchar(__u64 x)
{
	__u64 even = x & (RG_SWAR_ONES * 0xfe);

	return rg_swar_lt_space(x) | rg_swar_eq(x, ' ') | rg_swar_eq(x, 0x7f) | (x & RG_SWAR_HIGH) |
	       rg_swar_eq(x, '"') | rg_swar_eq(even, '(') | rg_swar_eq(x, ',') |
	       rg_swar_eq(x, '/') | rg_swar_eq(even, ':') | rg_swar_eq(even, '<') |
	       rg_swar_eq(even, '>') | rg_swar_eq(x, '@') | rg_swar_eq(x, '[') |
	       rg_swar_eq(even, '\\') | rg_swar_eq(x, '{') | rg_swar_eq(x, '}');
}

/* x lower-cased, every byte below 0x80 (no carries). */
RG_INLINE __u64 rg_swar_lower(__u64 x)
{
	__u64 ge_a = x + RG_SWAR_ONES * (0x80 - 'A');
	__u64 gt_z = x + RG_SWAR_ONES * (0x80 - 'Z' - 1);

	return x | ((ge_a & ~gt_z & RG_SWAR_HIGH) >> 2);
}

/* The index of the lowest byte flagged 0x80 in m, 8 when none. */
RG_INLINE __u32 rg_swar_first(__u64 m)
{
	if (!m)
		return 8;
	/* bit 8j+7 alone, times bytes 7..0: j lands in the top byte */
	return (__u32)((((m & -m) >> 7) * 0x0001020304050607ULL) >> 56);
}

/* The first n bytes of x (memory order, little-endian), the rest zero. */
RG_INLINE __u64 rg_swar_low(__u64 x, __u32 n)
{
	return n >= 8 ? x : x & ((1ULL << (n * 8)) - 1);
}

/* Byte i of x (memory order). */
RG_INLINE __u8 rg_swar_byte(__u64 x, __u32 i)
{
	return (__u8)(x >> ((i & 7) * 8));
}

RG_INLINE void rg_word_put(__u64 *words, __u32 nwords, __u32 i, __u8 c)
{
	__u32 w = i / 8;

	if (w < nwords && w < RG_HDR_NAME_WORDS)
		words[w] |= (__u64)c << ((i % 8) * 8);
}

RG_INLINE enum rg_header_id rg_header_lookup(const struct rg_http_head *h)
{
	const __u64 *w = h->name_words;

	switch (h->name_len) {
	case 4:
		if (w[0] == RG_W8('h', 'o', 's', 't', 0, 0, 0, 0))
			return RG_HDR_HOST;
		break;
	case 6:
		if (w[0] == RG_W8('e', 'x', 'p', 'e', 'c', 't', 0, 0))
			return RG_HDR_EXPECT;
		break;
	case 10:
		if (w[0] == RG_W8('c', 'o', 'n', 'n', 'e', 'c', 't', 'i') &&
		    w[1] == RG_W8('o', 'n', 0, 0, 0, 0, 0, 0))
			return RG_HDR_CONNECTION;
		break;
	case 14:
		if (w[0] == RG_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-') &&
		    w[1] == RG_W8('l', 'e', 'n', 'g', 't', 'h', 0, 0))
			return RG_HDR_CONTENT_LENGTH;
		break;
	case 17:
		if (w[0] == RG_W8('t', 'r', 'a', 'n', 's', 'f', 'e', 'r') &&
		    w[1] == RG_W8('-', 'e', 'n', 'c', 'o', 'd', 'i', 'n') &&
		    w[2] == RG_W8('g', 0, 0, 0, 0, 0, 0, 0))
			return RG_HDR_TRANSFER_ENCODING;
		break;
	case 12:
		if (w[0] == RG_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-') &&
		    w[1] == RG_W8('t', 'y', 'p', 'e', 0, 0, 0, 0))
			return RG_HDR_CONTENT_TYPE;
		break;
	case 13:
		if (w[0] == RG_W8('x', '-', 's', 'c', 'o', 'p', 'e', '-') &&
		    w[1] == RG_W8('o', 'r', 'g', 'i', 'd', 0, 0, 0))
			return RG_HDR_TENANT;
		break;
	case 16:
		if (w[0] == RG_W8('c', 'o', 'n', 't', 'e', 'n', 't', '-') &&
		    w[1] == RG_W8('e', 'n', 'c', 'o', 'd', 'i', 'n', 'g'))
			return RG_HDR_CONTENT_ENCODING;
		break;
	case 18:
		if (w[0] == RG_W8('x', '-', 'g', 'r', 'e', 'p', 't', 'i') &&
		    w[1] == RG_W8('m', 'e', '-', 'd', 'b', '-', 'n', 'a') &&
		    w[2] == RG_W8('m', 'e', 0, 0, 0, 0, 0, 0))
			return RG_HDR_DB_NAME;
		break;
	}
	return RG_HDR_OTHER;
}

/* The lower-cased token value equals w0/w1 of exactly len bytes. */
RG_INLINE bool rg_token_is(const struct rg_http_head *h, __u32 len, __u64 w0,
			   __u64 w1)
{
	__u64 t0 = 0, t1 = 0;
	__u32 i;

	if (h->token_len != len)
		return false;
	for (i = 0; i < 8; i++) {
		t0 |= (__u64)h->token[i] << (i * 8);
		t1 |= (__u64)h->token[i + 8] << (i * 8);
	}
	return t0 == w0 && t1 == w1;
}

RG_INLINE void rg_db_value_put(struct rg_db_value *v, __u8 c)
{
	if (v->len < sizeof(v->raw))
		v->raw[v->len] = c;
	if (v->len < 0xffff)
		v->len++;
}

/* A header line ended: apply what it said. */
RG_INLINE int rg_header_end(struct rg_http_head *h)
{
	switch (h->header) {
	case RG_HDR_CONTENT_LENGTH:
		if (h->cl_digits == 0)
			return RG_HEAD_ERR_FRAMING;
		break;
	case RG_HDR_TRANSFER_ENCODING:
		/* only a lone "chunked" frames the same way everywhere */
		if (!rg_token_is(h, 7, RG_W8('c', 'h', 'u', 'n', 'k', 'e', 'd', 0), 0))
			return RG_HEAD_ERR_FRAMING;
		h->chunked = 1;
		break;
	case RG_HDR_EXPECT:
		if (rg_token_is(h, 12, RG_W8('1', '0', '0', '-', 'c', 'o', 'n', 't'),
				RG_W8('i', 'n', 'u', 'e', 0, 0, 0, 0)))
			h->expect_continue = 1;
		break;
	case RG_HDR_CONNECTION:
		if (rg_token_is(h, 5, RG_W8('c', 'l', 'o', 's', 'e', 0, 0, 0), 0))
			h->conn_close = 1;
		else if (rg_token_is(h, 10,
				     RG_W8('k', 'e', 'e', 'p', '-', 'a', 'l', 'i'),
				     RG_W8('v', 'e', 0, 0, 0, 0, 0, 0)))
			h->conn_keep_alive = 1;
		break;
	case RG_HDR_DB_NAME:
		h->db_header.done = 1;
		break;
	}
	return RG_HEAD_MORE;
}

/* A line of header id would frame the body ambiguously: a second length
 * or coding, or Transfer-Encoding on HTTP/1.0. */
RG_INLINE bool rg_header_conflicts(const struct rg_http_head *h, __u8 id)
{
	if (id != RG_HDR_CONTENT_LENGTH && id != RG_HDR_TRANSFER_ENCODING)
		return false;
	if (h->has_content_length || h->has_transfer_encoding)
		return true;
	/* Go ignores it on HTTP/1.0 (transfer.go parseTransferEncoding),
	 * other servers honour it: no single reading */
	return id == RG_HDR_TRANSFER_ENCODING && h->http_minor == 0;
}

/* A header name ended at ':' (id: rg_header_lookup of it): which header
 * is it, and is it allowed twice? */
RG_INLINE int rg_header_begin(struct rg_http_head *h, __u8 id)
{
	h->header = id;
	h->token_len = 0;
	h->value_started = 0;
	__builtin_memset(h->token, 0, sizeof(h->token));
	if (rg_header_conflicts(h, id))
		return RG_HEAD_ERR_FRAMING;
	switch (h->header) {
	case RG_HDR_CONTENT_LENGTH:
		h->has_content_length = 1;
		break;
	case RG_HDR_TRANSFER_ENCODING:
		h->has_transfer_encoding = 1;
		break;
	case RG_HDR_CONTENT_ENCODING:
		/* a second line is kept after a '\n': Go servers read the
		 * first line only (Header.Get), others join them as a list */
		if (h->ce_headers && h->ce_len < RG_CE_BYTES - 1)
			h->content_encoding[h->ce_len++ & (RG_CE_BYTES - 1)] = '\n';
		if (h->ce_headers < 0xff)
			h->ce_headers++;
		break;
	case RG_HDR_DB_NAME:
		if (h->db_header.present) /* a second one: first wins */
			h->header = RG_HDR_OTHER;
		else
			h->db_header.present = 1;
		break;
	case RG_HDR_TENANT:
		if (h->tenant.present)
			h->header = RG_HDR_OTHER;
		else
			h->tenant.present = 1;
		break;
	case RG_HDR_HOST:
		if (h->host_count < 2)
			h->host_count++;
		break;
	}
	return RG_HEAD_MORE;
}

/* One byte of a header value (after leading OWS). */
RG_INLINE int rg_header_value_byte(struct rg_http_head *h, __u8 c)
{
	bool ows = c == ' ' || c == '\t';

	switch (h->header) {
	case RG_HDR_CONTENT_LENGTH:
		if (ows) {
			if (h->cl_digits)
				h->cl_done = 1;
			return RG_HEAD_MORE;
		}
		if (c < '0' || c > '9' || h->cl_done)
			return RG_HEAD_ERR_FRAMING;
		/* 19 digits always fit u64; more would be a lie anyway */
		if (h->cl_digits >= 19)
			return RG_HEAD_ERR_FRAMING;
		h->content_length = h->content_length * 10 + (c - '0');
		h->cl_digits++;
		return RG_HEAD_MORE;
	case RG_HDR_TRANSFER_ENCODING:
	case RG_HDR_EXPECT:
	case RG_HDR_CONNECTION:
		if (ows) {
			h->value_started = 2; /* trailing OWS so far */
			return RG_HEAD_MORE;
		}
		if (h->value_started == 2) /* inner space: not one token */
			h->token_len = RG_TOKEN_MAX_BYTES;
		h->value_started = 1;
		if (h->token_len < RG_TOKEN_MAX_BYTES)
			h->token[h->token_len & (RG_TOKEN_MAX_BYTES - 1)] = rg_lower(c);
		if (h->token_len < 0xff)
			h->token_len++;
		return RG_HEAD_MORE;
	case RG_HDR_CONTENT_TYPE:
		if (h->ct_len < RG_CT_BYTES - 1)
			h->content_type[h->ct_len++ & (RG_CT_BYTES - 1)] = rg_lower(c);
		return RG_HEAD_MORE;
	case RG_HDR_CONTENT_ENCODING:
		/* as sent: servers differ on case (victoria-metrics: "gzip" only) */
		if (h->ce_len < RG_CE_BYTES - 1)
			h->content_encoding[h->ce_len++ & (RG_CE_BYTES - 1)] = (char)c;
		return RG_HEAD_MORE;
	case RG_HDR_TENANT:
	case RG_HDR_DB_NAME: {
		struct rg_db_value *v = h->header == RG_HDR_TENANT ? &h->tenant : &h->db_header;

		/* GreptimeDB reads the header with HeaderValue::to_str(), which
		 * fails on bytes past ASCII and falls back to the query */
		if (c >= 0x80 && h->header == RG_HDR_DB_NAME && !rg_profile_is_go(h->profile))
			return RG_HEAD_ERR_UNMODELED;

		/* trailing OWS is not part of the value; inner whitespace makes
		 * a name no database can have: mark it too long to match */
		if (ows) {
			h->token_len = 1;
			return RG_HEAD_MORE;
		}
		if (h->token_len)
			v->len = 0xffff;
		h->token_len = 0;
		rg_db_value_put(v, c);
		return RG_HEAD_MORE;
	}
	}
	return RG_HEAD_MORE;
}

RG_INLINE bool rg_is_alpha(__u8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

RG_INLINE bool rg_is_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

/* A query parameter name ended (at '=', or at the pair's end on Go
 * profiles, where "db" alone is db=""): which value is it? */
RG_INLINE void rg_query_param_begin(struct rg_http_head *h)
{
	const __u8 *n = h->qname;
	struct rg_db_value *v = 0;

	h->qparam = RG_QP_NONE;
	if (h->qname_len == 2 && n[0] == 'd' && n[1] == 'b') {
		h->qparam = RG_QP_DB;
		v = &h->db_query;
	} else if (!rg_profile_is_go(h->profile) && h->qname_len == 6 && n[0] == 'b' &&
		   n[1] == 'u' && n[2] == 'c' && n[3] == 'k' && n[4] == 'e' && n[5] == 't') {
		h->qparam = RG_QP_BUCKET;
		v = &h->bucket_query;
	} else if (h->profile == RG_PROFILE_VICTORIAMETRICS && h->qname_len == 11 &&
		   n[0] == 'e' && n[1] == 'x' && n[2] == 't' && n[3] == 'r' && n[4] == 'a' &&
		   n[5] == '_' && n[6] == 'l' && n[7] == 'a' && n[8] == 'b' && n[9] == 'e' &&
		   n[10] == 'l') {
		h->qparam = RG_QP_EXTRA_LABEL;
		h->extra_db = 0;
	}
	/* the first pair wins (Go: the first valid one, Query().Get) */
	if (v && v->done)
		h->qparam = RG_QP_NONE;
	else if (v)
		v->present = 1;
}

/*
 * A query pair ended (at '&' or at the end of the target).  Go profiles:
 * url.ParseQuery drops a pair that contains ';' or a bad escape, so a db
 * captured from it is forgotten; an extra_label that adds a second db label
 * (VictoriaMetrics appends it to the row's labels) has no single database.
 */
RG_INLINE int rg_query_param_end(struct rg_http_head *h)
{
	int r = RG_HEAD_MORE;

	if (rg_profile_is_go(h->profile)) {
		if (h->state == RG_HS_QUERY_NAME && h->qname_len)
			rg_query_param_begin(h);
		if (h->qpct)
			h->qflags |= RG_QF_BAD_ESCAPE;
		if (h->qparam == RG_QP_DB) {
			if (h->qflags)
				__builtin_memset(&h->db_query, 0, sizeof(h->db_query));
			else
				h->db_query.done = 1;
		} else if (h->qparam == RG_QP_EXTRA_LABEL && !h->qflags && h->extra_db == 3) {
			r = RG_HEAD_ERR_UNMODELED;
		}
	} else if (h->qparam == RG_QP_DB) {
		h->db_query.done = 1;
	} else if (h->qparam == RG_QP_BUCKET) {
		h->bucket_query.done = 1;
	}
	h->qparam = RG_QP_NONE;
	h->qname_len = 0;
	h->qflags = 0;
	h->qpct = 0;
	return r;
}

/* One decoded byte of the current query pair (Go profiles). */
RG_INLINE void rg_query_put(struct rg_http_head *h, __u8 d)
{
	if (h->state == RG_HS_QUERY_NAME) {
		if (h->qname_len < RG_QNAME_BYTES)
			h->qname[h->qname_len] = d;
		if (h->qname_len < 0xff)
			h->qname_len++;
		return;
	}
	if (h->qparam == RG_QP_DB) {
		rg_db_value_put(&h->db_query, d);
	} else if (h->qparam == RG_QP_EXTRA_LABEL && h->extra_db < 3) {
		__u8 want = h->extra_db == 0 ? 'd' : h->extra_db == 1 ? 'b' : '=';

		h->extra_db = d == want ? h->extra_db + 1 : 0xff;
	}
}

/* One raw query byte inside a name or a needed value, as url.QueryUnescape
 * decodes it: "+" is a space, %XX a byte, any other '%' spoils the pair. */
RG_INLINE void rg_query_decode(struct rg_http_head *h, __u8 c)
{
	int v;

	if (c == ';')
		h->qflags |= RG_QF_SEMICOLON;
	if (h->qpct) {
		v = rg_hex_value(c);
		if (v < 0) {
			h->qflags |= RG_QF_BAD_ESCAPE;
			h->qpct = 0;
			return;
		}
		if (h->qpct == 1) {
			h->qhi = (__u8)v;
			h->qpct = 2;
			return;
		}
		h->qpct = 0;
		rg_query_put(h, (__u8)(h->qhi << 4 | v));
		return;
	}
	if (c == '%') {
		h->qpct = 1;
		return;
	}
	rg_query_put(h, c == '+' ? ' ' : c);
}

/* A query byte on a Go profile (raw c, any query state). */
RG_INLINE int rg_query_step_go(struct rg_http_head *h, __u8 c);

RG_INLINE void rg_path_put(struct rg_http_head *h, __u8 c)
{
	if (h->path_len < RG_PATH_MAX)
		h->path[h->path_len & (RG_PATH_MAX - 1)] = c;
	if (h->path_len < 0xffff)
		h->path_len++;
}

/* One decoded path byte: VictoriaMetrics routes on
 * strings.Replace(path, "//", "/", -1), so each pair of slashes is one. */
RG_INLINE void rg_path_char(struct rg_http_head *h, __u8 c)
{
	if (h->profile == RG_PROFILE_VICTORIAMETRICS && c == '/') {
		if (h->path_slash) {
			h->path_slash = 0;
			return;
		}
		h->path_slash = 1;
	} else {
		h->path_slash = 0;
	}
	rg_path_put(h, c);
}

/*
 * A request-target byte as GreptimeDB's http crate (1.x, uri/path.rs
 * PathAndQuery::from_shared) reads it, on top of httparse's URI tokens:
 * '#' starts a fragment it drops (unmodelled), and '<', '>', in the path '`'
 * and in the query '"' make the server's 400.
 */
RG_INLINE int rg_gt_target_byte(__u8 c, bool query)
{
	if (c == '#')
		return RG_HEAD_ERR_UNMODELED;
	if (c == '<' || c == '>' || c == (query ? '"' : '`'))
		return RG_HEAD_ERR_MALFORMED;
	return RG_HEAD_MORE;
}

/* The request line's target ended (at SP): only the version follows. */
RG_INLINE int rg_target_end(struct rg_http_head *h)
{
	const char *p = h->path;

	if (h->path_len == 0)
		rg_path_put(h, '/');
	/* VictoriaMetrics trims one trailing '/' from /datadog/ paths */
	if (h->profile == RG_PROFILE_VICTORIAMETRICS && h->path_len >= 9 &&
	    h->path_len <= RG_PATH_MAX && p[0] == '/' && p[1] == 'd' && p[2] == 'a' &&
	    p[3] == 't' && p[4] == 'a' && p[5] == 'd' && p[6] == 'o' && p[7] == 'g' &&
	    p[8] == '/' && p[(h->path_len - 1) & (RG_PATH_MAX - 1)] == '/') {
		h->path[(h->path_len - 1) & (RG_PATH_MAX - 1)] = 0;
		h->path_len--;
	}
	h->state = RG_HS_VERSION;
	return RG_HEAD_MORE;
}

RG_INLINE int rg_query_step_go(struct rg_http_head *h, __u8 c)
{
	int r;

	if (c == ' ') {
		r = rg_query_param_end(h);
		return r ? r : rg_target_end(h);
	}
	if (c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	if (c == '&') {
		r = rg_query_param_end(h);
		h->state = RG_HS_QUERY_NAME;
		return r;
	}
	if (c == '=' && h->state == RG_HS_QUERY_NAME) {
		/* ParseQuery cuts at the first '=', then unescapes each side */
		if (h->qpct)
			h->qflags |= RG_QF_BAD_ESCAPE;
		h->qpct = 0;
		rg_query_param_begin(h);
		h->state = h->qparam ? RG_HS_QUERY_VALUE : RG_HS_QUERY_SKIP;
		return RG_HEAD_MORE;
	}
	if (h->state != RG_HS_QUERY_SKIP)
		rg_query_decode(h, c);
	return RG_HEAD_MORE;
}

/* The method of a finished request line runs the profile's write routes:
 * VictoriaMetrics dispatches on the path alone (vminsert RequestHandler);
 * the others route writes on "POST" only (case-sensitive). */
RG_INLINE bool rg_http_write_method(const struct rg_http_head *h)
{
	if (h->profile == RG_PROFILE_VICTORIAMETRICS)
		return true;
	return h->method == RG_W8('P', 'O', 'S', 'T', 0, 0, 0, 0);
}

/* The authority of an absolute-form target ended at c. */
RG_INLINE int rg_abs_authority_end(struct rg_http_head *h, __u8 c)
{
	if (c == '/') {
		h->state = RG_HS_PATH;
		rg_path_char(h, c);
		return RG_HEAD_MORE;
	}
	if (c == '?') {
		h->state = RG_HS_QUERY_NAME;
		return RG_HEAD_MORE;
	}
	if (c == ' ')
		return rg_target_end(h);
	/* userinfo, IP literals, escapes: valid to url.Parse or not, unmodeled */
	return RG_HEAD_ERR_UNMODELED;
}

/* Request line: a method token up to the SP before the target. */
RG_INLINE int rg_hs_method(struct rg_http_head *h, __u8 c)
{
	/* any token is a method (Go validMethod, httparse) */
	if (rg_is_tchar(c)) {
		if (h->method_len >= RG_METHOD_MAX_BYTES)
			return RG_HEAD_ERR_UNMODELED;
		if (h->method_len < 8)
			h->method |= (__u64)c << (h->method_len * 8);
		h->method_len++;
		return RG_HEAD_MORE;
	}
	if (c == ' ' && h->method_len > 0) {
		h->method_post = h->method == RG_W8('P', 'O', 'S', 'T', 0, 0, 0, 0);
		h->is_post = rg_http_write_method(h);
		h->state = RG_HS_TARGET_START;
		return RG_HEAD_MORE;
	}
	return h->first_request && h->head_bytes <= RG_METHOD_MAX_BYTES + 1 ? RG_HEAD_ERR_NOT_HTTP :
									      RG_HEAD_ERR_MALFORMED;
}

/* Request line: the first byte of the target picks origin or absolute form. */
RG_INLINE int rg_hs_target_start(struct rg_http_head *h, __u8 c)
{
	if (c == '/') {
		h->state = RG_HS_PATH;
		rg_path_char(h, c);
		return RG_HEAD_MORE;
	}
	if (c == ' ' || c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	if (rg_profile_is_go(h->profile)) {
		/* url.ParseRequestURI: a scheme, or no write ("*", opaque) */
		if (!rg_is_alpha(c))
			return RG_HEAD_ERR_UNMODELED;
		h->state = RG_HS_ABS_SCHEME;
		return RG_HEAD_MORE;
	}
	h->state = RG_HS_ABS_TARGET; /* scheme://authority/path or '*' */
	return RG_HEAD_MORE;
}

/* Request line: an absolute-form target (non-Go profiles) up to its path. */
RG_INLINE int rg_hs_abs_target(struct rg_http_head *h, __u8 c)
{
	/* the authority ends at the third slash, '?' or SP */
	if ((c == '/' && ++h->abs_slashes == 3) || c == '?' || c == ' ')
		return rg_abs_authority_end(h, c);
	if (c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	return rg_gt_target_byte(c, false);
}

/* Request line: one byte of the path, undoing escapes where the server does. */
RG_INLINE int rg_hs_path(struct rg_http_head *h, __u8 c)
{
	if (c == ' ')
		return rg_target_end(h);
	if (c == '?') {
		h->state = RG_HS_QUERY_NAME;
		return RG_HEAD_MORE;
	}
	if (c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	if (h->profile == RG_PROFILE_GREPTIMEDB && rg_gt_target_byte(c, false))
		return rg_gt_target_byte(c, false);
	/* InfluxDB's router (bmizerany/pat) matches URL.EscapedPath(),
	 * which is the target as sent whenever it holds an escape, and
	 * GreptimeDB's (axum) the raw URI path: only the other Go
	 * servers route on the decoded path */
	if (c == '%' && h->profile != RG_PROFILE_INFLUXDB && h->profile != RG_PROFILE_GREPTIMEDB) {
		h->state = RG_HS_PATH_PCT1;
		return RG_HEAD_MORE;
	}
	rg_path_char(h, c);
	return RG_HEAD_MORE;
}

/* Request line: the second hex digit of a path escape. */
RG_INLINE int rg_hs_path_pct2(struct rg_http_head *h, __u8 c)
{
	__u8 d;

	if (rg_hex_value(c) < 0)
		return RG_HEAD_ERR_MALFORMED;
	d = (__u8)(h->pct_hi << 4 | rg_hex_value(c));
	/* a NUL would end the route key early */
	if (d == 0)
		return RG_HEAD_ERR_UNMODELED;
	rg_path_char(h, d);
	h->state = RG_HS_PATH;
	return RG_HEAD_MORE;
}

/* Request line: a query parameter's name (non-Go profiles). */
RG_INLINE int rg_hs_query_name(struct rg_http_head *h, __u8 c)
{
	if (c == ' ') {
		rg_query_param_end(h);
		return rg_target_end(h);
	}
	if (c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	if (rg_gt_target_byte(c, true))
		return rg_gt_target_byte(c, true);
	if (c == '&') {
		rg_query_param_end(h);
		return RG_HEAD_MORE;
	}
	if (c == '=') {
		rg_query_param_begin(h);
		h->state = h->qparam ? RG_HS_QUERY_VALUE : RG_HS_QUERY_SKIP;
		return RG_HEAD_MORE;
	}
	if (h->qname_len < RG_QNAME_BYTES)
		h->qname[h->qname_len] = c;
	if (h->qname_len < 0xff)
		h->qname_len++;
	return RG_HEAD_MORE;
}

/* Request line: a query parameter's value, kept or skipped (non-Go). */
RG_INLINE int rg_hs_query_value(struct rg_http_head *h, __u8 c)
{
	if (c == ' ' || c == '&') {
		rg_query_param_end(h);
		if (c == ' ')
			return rg_target_end(h);
		h->state = RG_HS_QUERY_NAME;
		return RG_HEAD_MORE;
	}
	if (c < 0x21 || c == 0x7f)
		return RG_HEAD_ERR_MALFORMED;
	if (rg_gt_target_byte(c, true))
		return rg_gt_target_byte(c, true);
	if (h->state == RG_HS_QUERY_VALUE)
		rg_db_value_put(h->qparam == RG_QP_DB ? &h->db_query : &h->bucket_query, c);
	return RG_HEAD_MORE;
}

/* Request line: "HTTP/1.0" or "HTTP/1.1" and its CR. */
RG_INLINE int rg_hs_version(struct rg_http_head *h, __u8 c)
{
	__u8 i = h->version_len++;

	if (c == '\r' && i == 8) {
		h->state = RG_HS_REQLINE_LF;
		return RG_HEAD_MORE;
	}
	if (i < 7 && c == (__u8)(RG_W8('H', 'T', 'T', 'P', '/', '1', '.', 0) >> (i * 8)))
		return RG_HEAD_MORE;
	if (i == 7 && (c == '0' || c == '1')) {
		h->http_minor = c - '0';
		return RG_HEAD_MORE;
	}
	return RG_HEAD_ERR_MALFORMED;
}

/* Header field: one byte of the name, lowercased into name_words. */
RG_INLINE int rg_hs_name(struct rg_http_head *h, __u8 c)
{
	if (c == ':') {
		if (h->name_len == 0)
			return RG_HEAD_ERR_MALFORMED;
		h->state = RG_HS_VALUE_OWS;
		return rg_header_begin(h, rg_header_lookup(h));
	}
	if (!rg_is_tchar(c)) /* includes SP before the colon */
		return RG_HEAD_ERR_MALFORMED;
	rg_word_put(h->name_words, RG_HDR_NAME_WORDS, h->name_len, rg_lower(c));
	if (h->name_len < 0xff)
		h->name_len++;
	if (h->name_len > RG_HDR_NAME_WORDS * 8)
		h->name_len = 0xff; /* longer than any name we know */
	return RG_HEAD_MORE;
}

/* End of the head: the LF of the empty line. */
RG_INLINE int rg_hs_end_lf(struct rg_http_head *h, __u8 c)
{
	if (c != '\n')
		return RG_HEAD_ERR_MALFORMED;
	/* Go refuses these before any handler (server.go readRequest):
	 * no write, so no charge */
	if (rg_profile_is_go(h->profile) &&
	    (h->host_count > 1 || (h->http_minor == 1 && h->host_count == 0)))
		return RG_HEAD_ERR_MALFORMED;
	h->state = RG_HS_DONE;
	/* a body without framing has length 0 (RFC 9112 §6.3 rule 7) */
	return RG_HEAD_DONE;
}

/*
 * Feed one byte.  Returns RG_HEAD_MORE, RG_HEAD_DONE once the empty line
 * after the headers is complete (c was its '\n'), or a negative error.
 */
RG_INLINE int rg_http_head_step(struct rg_http_head *h, __u8 c)
{
	if (++h->head_bytes > RG_HEAD_MAX_BYTES)
		return RG_HEAD_ERR_TOO_LARGE;

	switch (h->state) {
	/* request line */
	case RG_HS_LEAD:
		/* Go skips CR/LF in the 4 bytes after a POST request (for old
		 * clients); anywhere else an empty request line is malformed */
		if ((c == '\r' || c == '\n') && rg_profile_is_go(h->profile) && h->after_post &&
		    h->lead < RG_GO_LEADING_CRLF_MAX) {
			h->lead++;
			return RG_HEAD_MORE;
		}
		h->state = RG_HS_METHOD;
		/* fall through */
	case RG_HS_METHOD:
		return rg_hs_method(h, c);
	case RG_HS_TARGET_START:
		return rg_hs_target_start(h, c);
	case RG_HS_ABS_TARGET:
		return rg_hs_abs_target(h, c);
	case RG_HS_ABS_SCHEME:
		if (c == ':') {
			h->state = RG_HS_ABS_COLON;
			return RG_HEAD_MORE;
		}
		if (rg_is_alpha(c) || rg_is_digit(c) || c == '+' || c == '-' || c == '.')
			return RG_HEAD_MORE;
		return RG_HEAD_ERR_UNMODELED;
	case RG_HS_ABS_COLON:
		if (c == '/') {
			h->state = RG_HS_ABS_SLASH;
			return RG_HEAD_MORE;
		}
		return RG_HEAD_ERR_UNMODELED; /* opaque: path "" */
	case RG_HS_ABS_AUTH:
		if (rg_is_alpha(c) || rg_is_digit(c) || c == '.' || c == '-' || c == '_' ||
		    c == '~')
			return RG_HEAD_MORE;
		if (c == ':') {
			h->state = RG_HS_ABS_PORT;
			return RG_HEAD_MORE;
		}
		return rg_abs_authority_end(h, c);
	case RG_HS_ABS_PORT:
		if (rg_is_digit(c))
			return RG_HEAD_MORE;
		return rg_abs_authority_end(h, c);
	case RG_HS_ABS_SLASH:
		if (c == '/') {
			h->state = RG_HS_ABS_AUTH;
			return RG_HEAD_MORE;
		}
		/* "scheme:/path": that slash began the path */
		h->state = RG_HS_PATH;
		rg_path_char(h, '/');
		/* fall through */
	case RG_HS_PATH:
		return rg_hs_path(h, c);
	case RG_HS_PATH_PCT1:
		if (rg_hex_value(c) < 0)
			return RG_HEAD_ERR_MALFORMED;
		h->pct_hi = (__u8)rg_hex_value(c);
		h->state = RG_HS_PATH_PCT2;
		return RG_HEAD_MORE;
	case RG_HS_PATH_PCT2:
		return rg_hs_path_pct2(h, c);
	case RG_HS_QUERY_NAME:
		if (rg_profile_is_go(h->profile))
			return rg_query_step_go(h, c);
		return rg_hs_query_name(h, c);
	case RG_HS_QUERY_VALUE:
	case RG_HS_QUERY_SKIP:
		if (rg_profile_is_go(h->profile))
			return rg_query_step_go(h, c);
		return rg_hs_query_value(h, c);
	case RG_HS_VERSION:
		return rg_hs_version(h, c);
	/* header fields */
	case RG_HS_REQLINE_LF:
	case RG_HS_LINE_LF:
		if (c != '\n')
			return RG_HEAD_ERR_MALFORMED;
		h->state = RG_HS_NAME_START;
		return RG_HEAD_MORE;
	case RG_HS_NAME_START:
		if (c == '\r') {
			h->state = RG_HS_END_LF;
			return RG_HEAD_MORE;
		}
		/* obs-fold (a line starting with SP/HTAB) is refused */
		if (!rg_is_tchar(c))
			return RG_HEAD_ERR_MALFORMED;
		__builtin_memset(h->name_words, 0, sizeof(h->name_words));
		h->name_len = 0;
		h->state = RG_HS_NAME;
		/* fall through */
	case RG_HS_NAME:
		return rg_hs_name(h, c);
	case RG_HS_VALUE_OWS:
		if (c == ' ' || c == '\t')
			return RG_HEAD_MORE;
		h->state = RG_HS_VALUE;
		/* fall through */
	case RG_HS_VALUE:
		if (c == '\r') {
			h->state = RG_HS_LINE_LF;
			return rg_header_end(h);
		}
		if (!rg_is_field_byte(c))
			return RG_HEAD_ERR_MALFORMED;
		return rg_header_value_byte(h, c);
	case RG_HS_END_LF:
		return rg_hs_end_lf(h, c);
	}
	return RG_HEAD_ERR_MALFORMED;
}

/*
 * Taking head bytes a word at a time.  Each rg_take_*() gets the head's next
 * eight bytes x (memory order, little-endian) in one state and takes the run
 * of them that state reads alike, up to the first byte that decides
 * something; it returns how many it took (0..8), leaving h exactly as that
 * many rg_http_head_step() calls would.  It never takes a byte that ends the
 * head or makes an error: those are stepped alone, as before.
 */

/* 0x80 in the bytes of x from index n on (n <= 8). */
RG_INLINE __u64 rg_swar_from(__u32 n)
{
	return n >= 8 ? 0 : RG_SWAR_HIGH << (n * 8);
}

/* The method's tchars, and the SP that ends it. */
RG_INLINE __u32 rg_take_method(struct rg_http_head *h, __u64 x)
{
	__u32 k = rg_swar_first(rg_swar_not_tchar(x));

	/* CR/LF a Go server skips first are no tchars: stepped */
	if (k == 0 || h->method_len + k > RG_METHOD_MAX_BYTES)
		return 0;
	if (h->method_len < 8)
		h->method |= rg_swar_low(x, k) << (h->method_len * 8);
	h->method_len += k;
	h->state = RG_HS_METHOD;
	if (k < 8 && rg_swar_byte(x, k) == ' ') {
		h->method_post = h->method == RG_W8('P', 'O', 'S', 'T', 0, 0, 0, 0);
		h->is_post = rg_http_write_method(h);
		h->state = RG_HS_TARGET_START;
		k++;
	}
	return k;
}

/* A header name's tchars, then its ':' and the blanks after it. */
RG_INLINE __u32 rg_take_name(struct rg_http_head *h, __u64 x)
{
	__u32 k = rg_swar_first(rg_swar_not_tchar(x)), w, off;
	__u64 lw;
	__u8 id;

	if (h->state == RG_HS_NAME_START) {
		if (k == 0)
			return 0;
		__builtin_memset(h->name_words, 0, sizeof(h->name_words));
		h->name_len = 0;
		h->state = RG_HS_NAME;
	}
	if (k && h->name_len < RG_HDR_NAME_WORDS * 8) {
		/* bytes past the last word are dropped, as rg_word_put does */
		lw = rg_swar_lower(rg_swar_low(x, k));
		w = h->name_len / 8;
		off = h->name_len % 8;
		if (w < RG_HDR_NAME_WORDS) {
			h->name_words[w] |= lw << (off * 8);
			if (off && w + 1 < RG_HDR_NAME_WORDS)
				h->name_words[w + 1] |= lw >> (64 - off * 8);
		}
	}
	h->name_len = h->name_len + k > RG_HDR_NAME_WORDS * 8 ? 0xff : h->name_len + k;
	if (k == 8 || rg_swar_byte(x, k) != ':' || h->name_len == 0)
		return k;
	/* a line that makes the framing ambiguous fails at its ':', stepped */
	id = (__u8)rg_header_lookup(h);
	if (rg_header_conflicts(h, id))
		return k;
	h->state = RG_HS_VALUE_OWS;
	rg_header_begin(h, id);
	k++;
	return rg_swar_first(~(rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t')) & RG_SWAR_HIGH &
			     rg_swar_from(k));
}

/* 0x80 in the bytes of x that end a header value's run or are no field
 * bytes: CR, controls but HTAB, DEL. */
RG_INLINE __u64 rg_value_stop(__u64 x)
{
	return (rg_swar_lt_space(x) & ~rg_swar_eq(x, '\t')) | rg_swar_eq(x, 0x7f);
}

/* The value of a header nobody reads, up to its first stop byte; leading
 * blanks alone stay in RG_HS_VALUE_OWS. */
RG_INLINE __u32 rg_take_value_run(struct rg_http_head *h, __u64 x)
{
	__u32 k = rg_swar_first(rg_value_stop(x));

	if (h->state == RG_HS_VALUE_OWS &&
	    (~(rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t')) & RG_SWAR_HIGH & ~rg_swar_from(k)))
		h->state = RG_HS_VALUE;
	return k;
}

/* A value's CR LF at byte k of x, taken with the line when the header does
 * nothing at the line's end (rg_header_end). */
RG_INLINE __u32 rg_take_line_end(struct rg_http_head *h, __u64 x, __u32 k)
{
	if (k < 7 && rg_swar_byte(x, k) == '\r' && rg_swar_byte(x, k + 1) == '\n') {
		h->state = RG_HS_NAME_START;
		return k + 2;
	}
	return k;
}

/* A Content-Type value, lower-cased into content_type as it is stepped. */
RG_INLINE __u32 rg_take_content_type(struct rg_http_head *h, __u64 x)
{
	__u32 k;
	__u64 lw;

	if (h->state == RG_HS_VALUE_OWS) {
		/* its leading blanks are no part of it */
		k = rg_swar_first(~(rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t')) & RG_SWAR_HIGH);
		if (k)
			return k;
	}
	/* past ASCII: stepped, as the lower-casing below would carry */
	k = rg_swar_first(rg_value_stop(x) | (x & RG_SWAR_HIGH));
	if (k && h->ct_len < RG_CT_BYTES - 1) {
		/* a whole word stored, zero past the run as the buffer is;
		 * the last bytes of the buffer are stepped */
		if (h->ct_len > RG_CT_BYTES - 1 - 8)
			return 0;
		lw = rg_swar_lower(rg_swar_low(x, k));
		__builtin_memcpy(&h->content_type[h->ct_len], &lw, 8);
		h->ct_len += k;
	}
	if (k)
		h->state = RG_HS_VALUE;
	return rg_take_line_end(h, x, k);
}

/* Content-Length's digits, then its CR LF; blanks after the digits end
 * the number and are stepped. */
RG_INLINE __u32 rg_take_length(struct rg_http_head *h, __u64 x)
{
	__u64 lt0 = x + RG_SWAR_ONES * (0x80 - '0');
	__u64 gt9 = x + RG_SWAR_ONES * (0x80 - '9' - 1);
	__u32 k, i;

	if (h->state == RG_HS_VALUE_OWS) {
		k = rg_swar_first(~(rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t')) & RG_SWAR_HIGH);
		if (k)
			return k;
	}
	/* bytes past ASCII first: the sums below would carry out of them */
	k = rg_swar_first((x & RG_SWAR_HIGH) | (~(lt0 & ~gt9) & RG_SWAR_HIGH));
	if (k == 0) {
		/* a line with digits ends here */
		if (h->state == RG_HS_VALUE && h->cl_digits)
			return rg_take_line_end(h, x, 0);
		return 0;
	}
	if (h->cl_done || h->cl_digits + k > 19)
		return 0;
	h->state = RG_HS_VALUE;
	RG_UNROLL
	for (i = 0; i < 8; i++) {
		if (i >= k)
			break;
		h->content_length = h->content_length * 10 + (rg_swar_byte(x, i) - '0');
	}
	h->cl_digits += k;
	return rg_take_line_end(h, x, k);
}

/* A path's bytes that are no decision: not SP, '?', controls, DEL, an
 * escape where the server decodes it, GreptimeDB's refused bytes, nor a
 * '/' that VictoriaMetrics merges with the next; the target's leading '/'
 * first. */
RG_INLINE __u32 rg_take_path(struct rg_http_head *h, __u64 x)
{
	__u64 stop = rg_swar_lt_space(x) | rg_swar_eq(x, ' ') | rg_swar_eq(x, '?') |
		     rg_swar_eq(x, 0x7f) | rg_swar_eq(x, '#') | rg_swar_eq(x, '<') |
		     rg_swar_eq(x, '>') | rg_swar_eq(x, '`');
	__u32 s = 0, k;

	if (h->profile != RG_PROFILE_INFLUXDB && h->profile != RG_PROFILE_GREPTIMEDB)
		stop |= rg_swar_eq(x, '%');
	if (h->profile == RG_PROFILE_VICTORIAMETRICS)
		stop |= rg_swar_eq(x, '/');
	if (h->state == RG_HS_TARGET_START) {
		if ((__u8)x != '/')
			return 0;
		h->state = RG_HS_PATH;
		rg_path_char(h, '/');
		s = 1;
	}
	k = rg_swar_first(stop & rg_swar_from(s));
	if (k > s) {
		__u64 run = rg_swar_low(x, k) >> (s * 8);

		/* a whole word stored, zero past the run as the key is; the
		 * last bytes of the key are stepped, those past it counted */
		if (h->path_len >= RG_PATH_MAX) {
			h->path_len = h->path_len > 0xffff - 8 ? 0xffff : h->path_len + k - s;
		} else {
			if (h->path_len > RG_PATH_MAX - 8)
				return s;
			__builtin_memcpy(&h->path[h->path_len], &run, 8);
			h->path_len += k - s;
		}
		h->path_slash = 0;
	}
	return k;
}

/* The states rg_http_head_take_word() can take bytes in: in the others
 * the verdict steps each byte without asking it. */
#define RG_HS_TAKE_STATES                                                         \
	(1U << RG_HS_LEAD | 1U << RG_HS_METHOD | 1U << RG_HS_TARGET_START |       \
	 1U << RG_HS_PATH | 1U << RG_HS_VERSION | 1U << RG_HS_NAME_START |        \
	 1U << RG_HS_NAME | 1U << RG_HS_VALUE_OWS | 1U << RG_HS_VALUE |           \
	 1U << RG_HS_QUERY_SKIP)

/* Whether rg_http_head_take_word() may take bytes in the head's state. */
RG_INLINE bool rg_http_head_may_take(const struct rg_http_head *h)
{
	return h->state < 32 && (RG_HS_TAKE_STATES >> h->state & 1);
}

/*
 * The head bytes of x the state reads alike, taken at once: the method, a
 * header name with its ':' and blanks, the values of headers nobody reads
 * (Host's too: it is counted at its name) and Content-Type's, each with its
 * line's CR LF, the request line's "HTTP/1.x" and the values of ignored
 * query parameters.  Returns how many bytes it took, 0..8; 0: step one.
 */
RG_INLINE __u32 rg_http_head_take_word(struct rg_http_head *h, __u64 x)
{
	__u64 stop;
	__u32 k;

	if (h->head_bytes + 8 >= RG_HEAD_MAX_BYTES || !rg_http_head_may_take(h))
		return 0;
	switch (h->state) {
	case RG_HS_LEAD:
	case RG_HS_METHOD:
		k = rg_take_method(h, x);
		break;
	case RG_HS_VERSION: {
		/* the whole version of the request line: only its minor digit counts */
		__u8 minor = (__u8)(x >> 56);

		if (h->version_len == 8 && (__u16)x == ('\r' | '\n' << 8)) {
			/* its CR LF: the CR counts as a version byte */
			h->version_len = 9;
			h->state = RG_HS_NAME_START;
			k = 2;
			break;
		}
		if (h->version_len != 0 ||
		    (x & 0x00ffffffffffffffULL) != RG_W8('H', 'T', 'T', 'P', '/', '1', '.', 0) ||
		    (minor != '0' && minor != '1'))
			return 0;
		h->version_len = 8;
		h->http_minor = minor - '0';
		k = 8;
		break;
	}
	case RG_HS_TARGET_START:
	case RG_HS_PATH:
		k = rg_take_path(h, x);
		break;
	case RG_HS_NAME_START:
	case RG_HS_NAME:
		k = rg_take_name(h, x);
		break;
	case RG_HS_VALUE_OWS:
	case RG_HS_VALUE:
		if (h->header == RG_HDR_OTHER || h->header == RG_HDR_HOST)
			k = rg_take_line_end(h, x, rg_take_value_run(h, x));
		else if (h->header == RG_HDR_CONTENT_TYPE)
			k = rg_take_content_type(h, x);
		else if (h->header == RG_HDR_CONTENT_LENGTH)
			k = rg_take_length(h, x);
		else if (h->state == RG_HS_VALUE_OWS)
			k = rg_swar_first(~(rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t')) &
					  RG_SWAR_HIGH);
		else
			k = 0;
		break;
	case RG_HS_QUERY_SKIP:
		/* up to a byte that ends the value, and the bytes
		 * rg_gt_target_byte() reads (harmless elsewhere) */
		stop = rg_swar_lt_space(x) | rg_swar_eq(x, ' ') | rg_swar_eq(x, '&') |
		       rg_swar_eq(x, 0x7f) | rg_swar_eq(x, '#') | rg_swar_eq(x, '"') |
		       rg_swar_eq(x, '<') | rg_swar_eq(x, '>');
		k = rg_swar_first(stop);
		break;
	default:
		k = 0;
	}
	h->head_bytes += k;
	return k;
}

/* The path ends in "/_bulk" (an Elasticsearch bulk endpoint of any index). */
RG_INLINE bool rg_http_path_ends_bulk(const struct rg_http_head *h)
{
	__u32 n = h->path_len;
	const char *p;

	if (n < 6 || n > RG_PATH_MAX)
		return false;
	p = &h->path[(n - 6) & (RG_PATH_MAX - 1)];
	if ((n - 6) + 6 > RG_PATH_MAX)
		return false;
	return p[0] == '/' && p[1] == '_' && p[2] == 'b' && p[3] == 'u' && p[4] == 'l' &&
	       p[5] == 'k';
}

/* No Content-Encoding, or "identity": the body is the text itself. */
RG_INLINE bool rg_http_identity_encoding(const struct rg_http_head *h)
{
	const char *e = h->content_encoding;

	if (h->ce_len == 0)
		return true;
	return h->ce_len == 8 && e[0] == 'i' && e[1] == 'd' && e[2] == 'e' && e[3] == 'n' &&
	       e[4] == 't' && e[5] == 'i' && e[6] == 't' && e[7] == 'y';
}

/* Whether the connection stays open after this request. */
RG_INLINE bool rg_http_keep_alive(const struct rg_http_head *h)
{
	if (h->conn_close)
		return false;
	return h->http_minor >= 1 || h->conn_keep_alive;
}

/*
 * Which value names the database of a finished head.  GreptimeDB's
 * precedence: the X-Greptime-DB-Name header, then `db`, then `bucket` on
 * InfluxDB v2 routes, else none ("public"); an empty `db`/`bucket` counts as
 * absent.  Go servers: Query().Get("db") alone, the first valid pair even
 * when empty (none).  Routes that say so take X-Scope-OrgID (Loki tenants)
 * first.
 */
RG_INLINE const struct rg_db_value *rg_http_head_db_value(const struct rg_http_head *h,
							  __u32 route_flags)
{
	if ((route_flags & RG_ROUTE_TENANT) && h->tenant.present && h->tenant.len)
		return &h->tenant;
	if (rg_profile_is_go(h->profile))
		return h->db_query.done && h->db_query.len ? &h->db_query : 0;
	if (h->db_header.present)
		return &h->db_header;
	if (h->db_query.present && h->db_query.len)
		return &h->db_query;
	if ((route_flags & RG_ROUTE_BUCKET_PARAM) && h->bucket_query.present &&
	    h->bucket_query.len)
		return &h->bucket_query;
	return 0;
}

RG_INLINE int rg_db_key_public(struct rg_db_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->name[0] = 'p';
	key->name[1] = 'u';
	key->name[2] = 'b';
	key->name[3] = 'l';
	key->name[4] = 'i';
	key->name[5] = 'c';
	return 6;
}

/* The database key of a finished head: its length, or -1 when the name
 * cannot be a configured database (too long to be a key). */
RG_INLINE int rg_http_head_db(const struct rg_http_head *h, __u32 route_flags,
			      struct rg_db_key *key)
{
	const struct rg_db_value *v = rg_http_head_db_value(h, route_flags);

	if (!v)
		return rg_db_key_public(key);
	/* only GreptimeDB knows catalogs: "greptime-x" is x there alone */
	if (rg_profile_is_go(h->profile)) {
		__u32 i;

		if (v->len >= RG_DB_NAME_MAX)
			return -1;
		for (i = 0; i < RG_DB_NAME_MAX; i++)
			key->name[i] = i < v->len ? v->raw[i] : 0;
		return (int)v->len;
	}
	return rg_db_key_from_raw(key, v->raw, v->len, sizeof(v->raw));
}

/* The same for BPF: relies on the value buffers being zero past len. */
RG_INLINE int rg_http_head_db_padded(const struct rg_http_head *h, __u32 route_flags,
				     struct rg_db_key *key)
{
	const struct rg_db_value *v = rg_http_head_db_value(h, route_flags);

	if (!v)
		return rg_db_key_public(key);
	if (rg_profile_is_go(h->profile)) {
		if (v->len >= RG_DB_NAME_MAX)
			return -1;
		__builtin_memcpy(key->name, v->raw, RG_DB_NAME_MAX);
		return (int)v->len;
	}
	return rg_db_key_from_padded(key, v->raw, v->len);
}

/* ---- chunked bodies (RFC 9112 §7.1) ---- */

enum rg_chunk_state {
	RG_CS_SIZE = 0,    /* hex digits of the chunk size */
	RG_CS_EXT,         /* ;extensions up to CR */
	RG_CS_SIZE_LF,
	RG_CS_DATA,        /* remaining bytes of chunk data */
	RG_CS_DATA_CR,
	RG_CS_DATA_LF,
	RG_CS_TRAILER_START,
	RG_CS_TRAILER,     /* a trailer field line */
	RG_CS_TRAILER_LF,
	RG_CS_END_LF,
	RG_CS_DONE,
	RG_CS_SIZE_WS,     /* blanks after the size: only CR may follow */
};

enum rg_chunk_result {
	RG_CHUNK_FRAMING = 0, /* the byte was framing */
	RG_CHUNK_DATA = 1,    /* the byte was body data */
	RG_CHUNK_DONE = 2,    /* the byte ended the body */
	RG_CHUNK_ERR = -1,
};

struct rg_chunked {
	__u64 remaining; /* data bytes left in the current chunk */
	__u8 state;
	__u8 digits;
	__u8 last_chunk; /* size 0 seen: trailers follow */
	__u8 data_seen;	 /* a chunk of data began: bytes that store rows follow */
	__u8 pad[4];
};

RG_INLINE void rg_chunked_init(struct rg_chunked *s)
{
	__builtin_memset(s, 0, sizeof(*s));
}

RG_INLINE int rg_chunked_step(struct rg_chunked *s, __u8 c)
{
	int v;

	switch (s->state) {
	case RG_CS_SIZE:
		v = rg_hex_value(c);
		if (v >= 0) {
			if (s->digits >= RG_CHUNK_SIZE_DIGITS)
				return RG_CHUNK_ERR;
			s->remaining = s->remaining << 4 | (__u64)v;
			s->digits++;
			return RG_CHUNK_FRAMING;
		}
		if (s->digits == 0)
			return RG_CHUNK_ERR;
		if (c == ';') {
			s->state = RG_CS_EXT;
			return RG_CHUNK_FRAMING;
		}
		/* Go trims trailing blanks and then wants hex digits alone
		 * (internal/chunked.go readChunkLine), hyper allows blanks
		 * before ';': only blanks then CRLF reads the same in both */
		if (c == ' ' || c == '\t') {
			s->state = RG_CS_SIZE_WS;
			return RG_CHUNK_FRAMING;
		}
		if (c != '\r')
			return RG_CHUNK_ERR;
		s->state = RG_CS_SIZE_LF;
		return RG_CHUNK_FRAMING;
	case RG_CS_SIZE_WS:
		if (c == ' ' || c == '\t')
			return RG_CHUNK_FRAMING;
		if (c != '\r')
			return RG_CHUNK_ERR;
		s->state = RG_CS_SIZE_LF;
		return RG_CHUNK_FRAMING;
	case RG_CS_EXT:
		if (c == '\r') {
			s->state = RG_CS_SIZE_LF;
			return RG_CHUNK_FRAMING;
		}
		if (c == '\n' || !rg_is_field_byte(c))
			return RG_CHUNK_ERR;
		return RG_CHUNK_FRAMING;
	case RG_CS_SIZE_LF:
		if (c != '\n')
			return RG_CHUNK_ERR;
		if (s->remaining == 0) {
			s->last_chunk = 1;
			s->state = RG_CS_TRAILER_START;
		} else {
			s->state = RG_CS_DATA;
			s->data_seen = 1;
		}
		return RG_CHUNK_FRAMING;
	case RG_CS_DATA:
		if (--s->remaining == 0)
			s->state = RG_CS_DATA_CR;
		return RG_CHUNK_DATA;
	case RG_CS_DATA_CR:
		if (c != '\r')
			return RG_CHUNK_ERR;
		s->state = RG_CS_DATA_LF;
		return RG_CHUNK_FRAMING;
	case RG_CS_DATA_LF:
		if (c != '\n')
			return RG_CHUNK_ERR;
		s->state = RG_CS_SIZE;
		s->digits = 0;
		return RG_CHUNK_FRAMING;
	case RG_CS_TRAILER_START:
		if (c == '\r') {
			s->state = RG_CS_END_LF;
			return RG_CHUNK_FRAMING;
		}
		if (!rg_is_tchar(c))
			return RG_CHUNK_ERR;
		s->state = RG_CS_TRAILER;
		return RG_CHUNK_FRAMING;
	case RG_CS_TRAILER:
		if (c == '\r') {
			s->state = RG_CS_TRAILER_LF;
			return RG_CHUNK_FRAMING;
		}
		if (!rg_is_field_byte(c))
			return RG_CHUNK_ERR;
		return RG_CHUNK_FRAMING;
	case RG_CS_TRAILER_LF:
		if (c != '\n')
			return RG_CHUNK_ERR;
		s->state = RG_CS_TRAILER_START;
		return RG_CHUNK_FRAMING;
	case RG_CS_END_LF:
		if (c != '\n')
			return RG_CHUNK_ERR;
		s->state = RG_CS_DONE;
		return RG_CHUNK_DONE;
	}
	return RG_CHUNK_ERR;
}

#endif /* ROWGATE_HTTP_H */
