// SPDX-License-Identifier: GPL-2.0
/* The bytes of a gRPC rejection (rowgate/h2/answer.h): control frames, the
 * in-place rewrite of a DATA frame, HPACK integers, the percent-encoded
 * grpc-message, and the trailers-only HEADERS read back by a decoder for
 * exactly the representations it may use (anything else fails the test:
 * the dynamic table must never change). */
#include <stdio.h>
#include <string.h>

#include "rowgate/h2/answer.h"
#include "check.h"

/* An HPACK integer (RFC 7541 §5.1); -1 past end. */
static long hp_int(const __u8 *b, __u32 *off, __u32 end, __u32 prefix_bits)
{
	__u32 max = (1U << prefix_bits) - 1, shift = 0;
	long v;

	if (*off >= end)
		return -1;
	v = b[(*off)++] & max;
	if (v < max)
		return v;
	while (*off < end) {
		__u8 c = b[(*off)++];

		v += (long)(c & 0x7f) << shift;
		shift += 7;
		if (!(c & 0x80))
			return v;
	}
	return -1;
}

static int hp_str(const __u8 *b, __u32 *off, __u32 end, char *out, size_t cap)
{
	long n;

	if (*off >= end || (b[*off] & 0x80)) /* Huffman is never written */
		return -1;
	n = hp_int(b, off, end, 7);
	if (n < 0 || *off + n > end || (size_t)n >= cap)
		return -1;
	memcpy(out, b + *off, n);
	out[n] = 0;
	*off += n;
	return 0;
}

struct field {
	char name[64];
	char value[600];
};

/* Decode a block that uses only indexed static :status 200 (0x88), and
 * literals without indexing with static name content-type (31) or a new
 * name.  Returns the number of fields, -1 on anything else. */
static int hp_decode(const __u8 *b, __u32 len, struct field *f, int max)
{
	__u32 off = 0;
	int n = 0;

	while (off < len && n < max) {
		__u8 c = b[off];

		if (c == 0x88) {
			strcpy(f[n].name, ":status");
			strcpy(f[n].value, "200");
			off++;
		} else if ((c & 0xf0) == 0x00) {
			long idx = hp_int(b, &off, len, 4);

			if (idx == 31)
				strcpy(f[n].name, "content-type");
			else if (idx != 0 || hp_str(b, &off, len, f[n].name, sizeof(f[n].name)))
				return -1;
			if (hp_str(b, &off, len, f[n].value, sizeof(f[n].value)))
				return -1;
		} else {
			return -1; /* would index, or reference the dynamic table */
		}
		n++;
	}
	return off == len ? n : -1;
}

static void test_control_frames(void)
{
	__u8 b[64];
	static const __u8 rst[] = { 0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 8 };
	static const __u8 set[] = { 0, 0, 0, 4, 0, 0, 0, 0, 0 };
	static const __u8 wu[] = { 0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 1, 0, 0 };

	CHECK_EQ_U64(rg_h2_put_rst_stream(b, 5, RG_H2_CANCEL), sizeof(rst), "rst length");
	CHECK(!memcmp(b, rst, sizeof(rst)), "RST_STREAM(5, CANCEL) bytes");
	CHECK_EQ_U64(rg_h2_put_settings_empty(b), sizeof(set), "settings length");
	CHECK(!memcmp(b, set, sizeof(set)), "empty SETTINGS bytes");
	CHECK_EQ_U64(rg_h2_put_window_update(b, 0, 65536), sizeof(wu), "window update length");
	CHECK(!memcmp(b, wu, sizeof(wu)), "WINDOW_UPDATE(0, 65536) bytes");
	CHECK_EQ_U64(rg_h2_put_window_update(b, 0, 0), 0, "a zero increment is refused");
	CHECK_EQ_U64(rg_h2_put_window_update(b, 0, 1U << 31), 0, "2^31 is refused");
}

/* The rewrite keeps the frame's length and leaves three frames the parser
 * follows: RST_STREAM, SETTINGS, then one unknown frame to the end. */
static void test_rewrite(void)
{
	__u32 p;

	for (p = 0; p < 200; p++) {
		__u8 b[RG_H2_REWRITE_HEAD_BYTES];
		int r = rg_h2_put_rewrite_head(b, 7, p);
		__u32 flen;

		if (p < RG_H2_REWRITE_MIN_PAYLOAD) {
			CHECK(r == -1, "payload %u: too short, refused", p);
			continue;
		}
		CHECK(r == RG_H2_REWRITE_HEAD_BYTES, "payload %u: head written", p);
		CHECK(b[3] == RG_H2_RST_STREAM && b[8] == 7 && b[12] == RG_H2_CANCEL,
		      "payload %u: RST_STREAM(7, CANCEL) first", p);
		CHECK(b[13 + 3] == RG_H2_SETTINGS && b[13 + 2] == 0 && b[13 + 4] == 0,
		      "payload %u: empty SETTINGS second", p);
		flen = (__u32)b[22] << 16 | (__u32)b[23] << 8 | b[24];
		CHECK(b[25] == RG_H2_FILLER, "payload %u: filler type", p);
		CHECK_EQ_U64(RG_H2_REWRITE_HEAD_BYTES + flen, RG_H2_FRAME_HDR_BYTES + p,
			     "the rewrite is as long as the DATA frame");
	}
}

/* Walk the frames of f (total bytes) as a peer does: up to max of them,
 * their types in types; returns how many, and where the walk stopped. */
static __u32 walk_frames(const __u8 *f, __u32 total, __u8 *types, __u32 max, __u32 *end)
{
	__u32 off = 0, n = 0;

	while (off + RG_H2_FRAME_HDR_BYTES <= total && n < max) {
		__u32 len = (__u32)f[off] << 16 | (__u32)f[off + 1] << 8 | f[off + 2];

		types[n++] = f[off + 3];
		off += RG_H2_FRAME_HDR_BYTES + len;
	}
	*end = off;
	return n;
}

/* The early refusal (docs/grpc.md#h2-early): head + the frame's own bytes +
 * a SETTINGS in its last 9 bytes walk as RST_STREAM, one unknown frame,
 * then the empty SETTINGS, ending where the DATA frame ended. */
static void test_early(void)
{
	__u32 p;

	for (p = 0; p < 300; p++) {
		__u8 f[RG_H2_FRAME_HDR_BYTES + 300];
		__u32 total = RG_H2_FRAME_HDR_BYTES + p, off, n;
		__u8 types[4] = { 0 };
		int r;

		memset(f, 0x5a, sizeof(f));
		r = rg_h2_put_early_head(f, 7, p);
		if (p < RG_H2_REWRITE_MIN_PAYLOAD) {
			CHECK(r == -1, "early, payload %u: too short, refused", p);
			continue;
		}
		CHECK(r == RG_H2_EARLY_HEAD_BYTES, "early, payload %u: head written", p);
		rg_h2_put_settings_empty(f + total - RG_H2_SETTINGS_EMPTY_BYTES);
		n = walk_frames(f, total, types, 4, &off);
		CHECK(n == 3 && off == total, "early, payload %u: three frames, the DATA frame's length", p);
		CHECK(types[0] == RG_H2_RST_STREAM && f[8] == 7 && f[12] == RG_H2_CANCEL &&
			      types[1] == RG_H2_FILLER && types[2] == RG_H2_SETTINGS &&
			      f[total - 9] == 0 && f[total - 7] == 0 && f[total - 5] == 0,
		      "early, payload %u: RST_STREAM(7, CANCEL), filler, empty SETTINGS", p);
	}
}

/* The give-back (docs/grpc.md#h2-give-back): an empty SETTINGS, then one
 * unknown frame of the refused stream to where the DATA frame ended. */
static void test_give_back(void)
{
	__u32 p;

	for (p = 0; p < 200; p++) {
		__u8 f[RG_H2_FRAME_HDR_BYTES + 200];
		__u32 total = RG_H2_FRAME_HDR_BYTES + p, off, n;
		__u8 types[3] = { 0 };
		int r;

		memset(f, 0x5a, sizeof(f));
		r = rg_h2_put_give_back_head(f, 9, p);
		if (p < RG_H2_GIVE_BACK_MIN_PAYLOAD) {
			CHECK(r == -1, "give-back, payload %u: too short, refused", p);
			continue;
		}
		CHECK(r == RG_H2_GIVE_BACK_HEAD_BYTES, "give-back, payload %u: head written", p);
		n = walk_frames(f, total, types, 3, &off);
		CHECK(n == 2 && off == total,
		      "give-back, payload %u: two frames, the DATA frame's length", p);
		CHECK(types[0] == RG_H2_SETTINGS && f[2] == 0 && f[4] == 0 && f[8] == 0 &&
			      types[1] == RG_H2_FILLER && f[9 + 8] == 9,
		      "give-back, payload %u: empty SETTINGS, then filler on stream 9", p);
	}
}

static void test_hpack_int(void)
{
	__u8 b[8];
	__u32 off, end;

	/* RFC 7541 C.1.2: 1337 with a 5-bit prefix */
	end = rg_hpack_put_int(b, 0, 0, 5, 1337);
	CHECK(end == 3 && b[0] == 31 && b[1] == 154 && b[2] == 10, "1337 as in RFC 7541 C.1.2");
	for (__u32 v = 0; v < 70000; v += (v < 300 ? 1 : 97)) {
		end = rg_hpack_put_int(b, 0, 0, 7, v);
		off = 0;
		CHECK(hp_int(b, &off, end, 7) == (long)v && off == end, "7-bit prefix %u", v);
	}
}

static void fill_resp(struct rg_response *r, struct rg_db_key *db, const char *name)
{
	memset(r, 0, sizeof(*r));
	memset(db, 0, sizeof(*db));
	strncpy(db->name, name, sizeof(db->name) - 1);
	r->kind = RG_RESP_429;
	r->db_len = strlen(name);
	r->rows = 3000;
	r->quota_rows_per_s = 1000;
	r->limit_rows_per_s = 1000;
}

static void test_message(void)
{
	struct rg_response r;
	struct rg_db_key db;
	char msg[RG_GRPC_MESSAGE_MAX], want[RG_GRPC_MESSAGE_MAX], json[RG_GRPC_MESSAGE_MAX];
	__u32 n;

	fill_resp(&r, &db, "logs");
	n = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
	snprintf(want, sizeof(want), "%s%s%s%llu%s%llu%s%llu%s", RG_429_MSG0, "logs", RG_429_B1,
		 3000ULL, RG_429_B2, 1000ULL, RG_429_B3, 1000ULL, RG_429_MSG_END);
	CHECK(n == strlen(want) && !memcmp(msg, want, n), "message: %.*s", (int)n, msg);
	/* the HTTP 429's error text is the same sentence */
	snprintf(json, sizeof(json), RG_429_BODY_FMT, "logs", "", 3000ULL, 1000ULL, 1000ULL);
	CHECK(strstr(json, want) != NULL, "the 429 JSON carries it: %s", json);

	fill_resp(&r, &db, "caf\xc3\xa9%db");
	n = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
	msg[n] = 0;
	CHECK(strstr(msg, "'caf%C3%A9%25db'") != NULL, "percent-encoded: %s", msg);
	for (__u32 i = 0; i < n; i++)
		CHECK(!rg_grpc_pct_needed((__u8)msg[i]) || msg[i] == '%', "byte %u printable", i);

	r.estimated = 1;
	n = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
	msg[n] = 0;
	CHECK(strstr(msg, "rejected an estimated 3000 rows") != NULL, "estimate: %s", msg);
	/* a tiny buffer: cut, never overrun */
	n = rg_grpc_message_429(msg, 10, &r, &db);
	CHECK(n < 10, "cut to the buffer: %u", n);
}

/* Base64 (RFC 4648), padded or not; the decoded length, -1 on a bad
 * character. */
static long b64_decode(const char *in, __u8 *out, size_t cap)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	__u32 acc = 0, bits = 0;
	size_t n = 0;

	for (; *in && *in != '='; in++) {
		const char *p = strchr(alphabet, *in);

		if (!p || n >= cap)
			return -1;
		acc = acc << 6 | (__u32)(p - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (__u8)(acc >> bits);
		}
	}
	return (long)n;
}

static size_t pb_varint(__u8 *b, __u64 v)
{
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (__u8)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (__u8)v;
	return n;
}

/* google.rpc.Status{8, msg, [Any{RetryInfo{retry_delay{secs}}}]}, built
 * message by message as protoc would. */
static size_t status_bytes(__u8 *b, const char *msg, __u32 mlen, __u64 secs)
{
	static const char url[] = "type.googleapis.com/google.rpc.RetryInfo";
	__u8 dur[16], info[32], any[96];
	size_t nd = 0, ni = 0, na = 0, n = 0;

	dur[nd++] = 0x08;
	nd += pb_varint(dur + nd, secs);
	info[ni++] = 0x0a;
	ni += pb_varint(info + ni, nd);
	memcpy(info + ni, dur, nd), ni += nd;
	any[na++] = 0x0a;
	na += pb_varint(any + na, sizeof(url) - 1);
	memcpy(any + na, url, sizeof(url) - 1), na += sizeof(url) - 1;
	any[na++] = 0x12;
	na += pb_varint(any + na, ni);
	memcpy(any + na, info, ni), na += ni;
	b[n++] = 0x08;
	b[n++] = 8;
	b[n++] = 0x12;
	n += pb_varint(b + n, mlen);
	memcpy(b + n, msg, mlen), n += mlen;
	b[n++] = 0x1a;
	n += pb_varint(b + n, na);
	memcpy(b + n, any, na), n += na;
	return n;
}

/* The field's value is unpadded base64 of exactly that Status. */
static void check_details(const char *b64, const char *msg, __u32 mlen, __u64 secs)
{
	__u8 got[1024], want[1024];
	long n = b64_decode(b64, got, sizeof(got));
	size_t w = status_bytes(want, msg, mlen, secs);

	CHECK(!strchr(b64, '='), "no base64 padding");
	CHECK(n == (long)w && !memcmp(got, want, w),
	      "grpc-status-details-bin: Status{8, message, RetryInfo %llus} (%ld, %zu bytes)",
	      (unsigned long long)secs, n, w);
}

static void test_details(void)
{
	struct rg_grpc_details d;
	__u8 b[RG_GRPC_ANSWER_MAX];
	__u64 secs[] = { 0, 1, 127, 128, 300, 1ULL << 40 };
	__u32 end, k;

	/* a vector from Python's protobuf layout and base64 */
	memcpy(b + 100, "hi", 2);
	end = rg_grpc_details_begin(&d, b, 10, 100, 2, 2);
	for (k = 0; k < d.quads; k++)
		rg_grpc_details_quad(&d, b, k);
	CHECK(end == d.out + 75 && d.out == 10 + 25 + 1, "field layout: %u, %u", end, d.out);
	CHECK(!memcmp(b + 10, "\x00\x17grpc-status-details-bin\x4b", 26), "field name, length 75");
	CHECK(!memcmp(b + d.out,
		      "CAgSAmhpGjAKKHR5cGUuZ29vZ2xlYXBpcy5jb20vZ29vZ2xlLnJwYy5SZXRyeUluZm8SBAoCCAI", 75),
	      "base64 of Status{8, \"hi\", RetryInfo 2s}");
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		char v[1024];

		for (__u32 len = 0; len < 300; len += 37) {
			memset(b, 'm', sizeof(b));
			end = rg_grpc_details_begin(&d, b, 400, 100, len, secs[i]);
			CHECK(end > 400, "fits: %u bytes", len);
			for (k = 0; k < d.quads; k++)
				rg_grpc_details_quad(&d, b, k);
			memcpy(v, b + d.out, end - d.out);
			v[end - d.out] = 0;
			check_details(v, (const char *)b + 100,  len,
				      secs[i] > 0xffffffffULL ? 0xffffffffULL : secs[i]);
		}
	}
	CHECK_EQ_U64(rg_grpc_details_begin(&d, b, 700, 100, 200, 1), 0,
		     "left out where it would reach the scratch");
	CHECK_EQ_U64(d.quads, 0, "nothing to write then");
}

static void test_trailers_only(void)
{
	struct rg_response r;
	struct rg_db_key db;
	struct field f[8];
	char msg[RG_GRPC_MESSAGE_MAX];
	__u8 out[RG_GRPC_ANSWER_MAX];
	__u32 n, len, mlen;
	int k;

	fill_resp(&r, &db, "logs");
	mlen = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
	for (int sent = 0; sent <= 1; sent++) {
		n = rg_grpc_put_trailers_only(out, 0x7ffffffd, sent, msg, mlen, 7);
		len = (__u32)out[0] << 16 | (__u32)out[1] << 8 | out[2];
		CHECK(n > RG_H2_FRAME_HDR_BYTES && len == n - RG_H2_FRAME_HDR_BYTES, "frame length");
		CHECK(out[3] == RG_H2_HEADERS && out[4] == (RG_H2_FLAG_END_STREAM | RG_H2_FLAG_END_HEADERS),
		      "HEADERS, END_STREAM | END_HEADERS");
		CHECK(out[5] == 0x7f && out[6] == 0xff && out[7] == 0xff && out[8] == 0xfd,
		      "stream id");
		k = hp_decode(out + RG_H2_FRAME_HDR_BYTES, len, f, 8);
		CHECK(k == (sent ? 5 : 7), "fields: %d", k);
		if (k != (sent ? 5 : 7))
			continue;
		if (!sent) {
			CHECK(!strcmp(f[0].name, ":status") && !strcmp(f[0].value, "200"), ":status");
			CHECK(!strcmp(f[1].name, "content-type") &&
				      !strcmp(f[1].value, "application/grpc"),
			      "content-type");
		}
		struct field *t = f + (sent ? 0 : 2);

		CHECK(!strcmp(t[0].name, "grpc-status") && !strcmp(t[0].value, "8"), "grpc-status 8");
		CHECK(!strcmp(t[1].name, "grpc-message") && strlen(t[1].value) == mlen &&
			      !memcmp(t[1].value, msg, mlen),
		      "grpc-message");
		CHECK(!strcmp(t[2].name, "x-greptime-err-code") && !strcmp(t[2].value, "6001"),
		      "x-greptime-err-code 6001");
		CHECK(!strcmp(t[3].name, "x-greptime-err-retry-hint") &&
			      !strcmp(t[3].value, "retryable"),
		      "retry hint");
		CHECK(!strcmp(t[4].name, "grpc-status-details-bin"), "status details");
		check_details(t[4].value, msg, mlen, 7);
	}
	/* the longest message: a 63-byte name of bytes that all need %XX */
	memset(&db, 0, sizeof(db));
	memset(db.name, 0xff, RG_DB_NAME_MAX - 1);
	r.db_len = RG_DB_NAME_MAX - 1;
	r.rows = r.quota_rows_per_s = r.limit_rows_per_s = ~0ULL;
	r.estimated = 1;
	mlen = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
	n = rg_grpc_put_trailers_only(out, 1, false, msg, mlen, 1);
	CHECK(n > 0 && n <= RG_GRPC_DETAILS_PRE_AT, "the longest answer fits: %u", n);
	CHECK(hp_decode(out + RG_H2_FRAME_HDR_BYTES, n - RG_H2_FRAME_HDR_BYTES, f, 8) == 6,
	      "the longest answer decodes, without status details");
	CHECK_EQ_U64(rg_grpc_put_trailers_only(out, 1, false, msg, RG_GRPC_MESSAGE_MAX, 1), 0,
		     "a message over the max is refused");
}

/* The writer the BPF programs use gives the same bytes, for names that need
 * no percent-encoding, with and without the response HEADERS sent, rows
 * read or estimated. */
static void test_write_answer(void)
{
	const char *names[] = { "logs", "acme-g_lim", "", "a123456789012345678901234567890123456789012345678901234567890ab" };
	__u64 nums[] = { 0, 9, 10, 1000, 123456789, ~0ULL };
	struct rg_grpc_details d;
	struct rg_resp_buf o;
	struct rg_response r;
	struct rg_db_key db;
	char msg[RG_GRPC_MESSAGE_MAX];
	__u8 want[RG_GRPC_ANSWER_MAX];
	__u32 n, w, mlen, k;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (size_t j = 0; j < sizeof(nums) / sizeof(nums[0]); j++)
			for (int sent = 0; sent <= 3; sent++) {
				fill_resp(&r, &db, names[i]);
				r.estimated = sent >> 1;
				r.rows = nums[j];
				r.quota_rows_per_s = nums[(j + 1) % 6];
				r.limit_rows_per_s = nums[(j + 3) % 6];
				r.retry_after_s = nums[(j + 2) % 6];
				CHECK(rg_grpc_db_plain(&db, r.db_len), "plain: %s", names[i]);
				memset(&o, 0xaa, sizeof(o));
				mlen = rg_grpc_message_429(msg, sizeof(msg), &r, &db);
				w = rg_grpc_put_trailers_only(want, 77, sent & 1, msg, mlen,
							      r.retry_after_s);
				n = rg_grpc_write_answer(&o, 77, sent & 1, &r, &db, &d);
				CHECK(d.quads > 0, "status details written");
				for (k = 0; k < d.quads; k++)
					rg_grpc_details_quad(&d, (__u8 *)o.b, k);
				CHECK(n == w && n > 0 && !memcmp(o.b, want, n),
				      "same bytes: %s rows %llu sent %d estimated %d (%u, %u)",
				      names[i], (unsigned long long)nums[j], sent & 1, r.estimated, n, w);
			}
	fill_resp(&r, &db, "caf%");
	CHECK(!rg_grpc_db_plain(&db, r.db_len), "%% needs encoding");
	fill_resp(&r, &db, "caf\xc3\xa9");
	CHECK(!rg_grpc_db_plain(&db, r.db_len), "non-ASCII needs encoding");
}

/* A refusal names the rows read, or a compressed message's estimate: its
 * length at the coded ceiling, as HTTP's 429 does for a coded body. */
static void test_answer_rows(void)
{
	struct rg_grpc_msg m = { .rows = 7, .len = 65530 };

	CHECK_EQ_U64(rg_grpc_answer_rows(&m), 7, "plain: the rows read");
	CHECK(!rg_grpc_rows_estimated(&m), "plain: not estimated");
	m.compressed = 1;
	m.rows = 0;
	CHECK_EQ_U64(rg_grpc_answer_rows(&m),
		     rg_est_rows(65530, 0, RG_PROTO_GREPTIME_GRPC, true),
		     "compressed: the coded estimate");
	CHECK_EQ_U64(rg_grpc_answer_rows(&m), 65530 * 16 / RG_EST_CODED_BPR_X16,
		     "compressed: 2 bytes a row");
	CHECK(rg_grpc_rows_estimated(&m), "compressed: estimated");
	m.len = 1;
	CHECK_EQ_U64(rg_grpc_answer_rows(&m), 1, "a 1-byte message: 1 row");
}

int main(void)
{
	test_control_frames();
	test_rewrite();
	test_early();
	test_give_back();
	test_hpack_int();
	test_message();
	test_details();
	test_trailers_only();
	test_write_answer();
	test_answer_rows();
	return check_report("test_h2_answer");
}
