// SPDX-License-Identifier: MIT
/* The streaming HTTP/2 + gRPC + GreptimeRequest parser (rowgate/h2/):
 * connections built frame by frame, fed whole, split at every byte offset
 * and at random offsets (with and without the skip hints), and malformed
 * input that must be refused with the right error. */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

struct rg_hpack;
static int test_route(const struct rg_hpack *t);
#define RG_HPACK_ROUTE(t) test_route(t)

#include "rowgate/h2/frame.h"
#include "rowgate/h2/stash.h"
#include "rowgate/h2/hpack_huffman.h"
#include "check.h"
#include "../../user/decode/count.h"
#include "../../user/decode/decompress.h"
#include "../../user/decode/encode.h"
#include "h2_routes_ref.h"
#include "h2_feed_ref.h"

#define OTHER_PATH "/grpc.health.v1.Health/Check"

/* ---- builders ------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void put8(struct buf *b, uint8_t c)
{
	put(b, &c, 1);
}

static void varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		put8(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put8(b, (uint8_t)v);
}

static void key(struct buf *b, uint32_t field, uint8_t wire)
{
	varint(b, (uint64_t)field << 3 | wire);
}

static void lenfield(struct buf *b, uint32_t field, const struct buf *sub)
{
	key(b, field, 2);
	varint(b, sub->len);
	put(b, sub->p, sub->len);
}

static void strfield(struct buf *b, uint32_t field, const char *s)
{
	key(b, field, 2);
	varint(b, strlen(s));
	put(b, s, strlen(s));
}

static void vfield(struct buf *b, uint32_t field, uint64_t v)
{
	key(b, field, 0);
	varint(b, v);
}

static void freebuf(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* RequestHeader from optional catalog / schema / dbname. */
static void header(struct buf *req, const char *cat, const char *sch, const char *db)
{
	struct buf h = { 0 };

	if (cat)
		strfield(&h, 1, cat);
	if (sch)
		strfield(&h, 2, sch);
	strfield(&h, 6, "+08:00"); /* timezone: skipped */
	if (db)
		strfield(&h, 4, db);
	lenfield(req, 1, &h);
	freebuf(&h);
}

/* row_inserts: tables with nrows[i] rows each. */
static void row_inserts(struct buf *req, const int *nrows, int ntables)
{
	struct buf ris = { 0 };
	int t, r;

	for (t = 0; t < ntables; t++) {
		struct buf ri = { 0 }, rows = { 0 }, sch = { 0 };

		strfield(&ri, 1, "cpu");
		strfield(&sch, 1, "ts");
		vfield(&sch, 2, 16);
		vfield(&sch, 3, 2);
		lenfield(&rows, 1, &sch);
		for (r = 0; r < nrows[t]; r++) {
			struct buf row = { 0 }, v = { 0 };

			vfield(&v, 17, 1700000000000ULL + r);
			lenfield(&row, 1, &v);
			if (r % 3 == 2) { /* an empty Row is still a row */
				freebuf(&row);
				key(&rows, 2, 2);
				varint(&rows, 0);
			} else {
				lenfield(&rows, 2, &row);
			}
			freebuf(&row);
			freebuf(&v);
		}
		lenfield(&ri, 2, &rows);
		lenfield(&ris, 1, &ri);
		freebuf(&ri);
		freebuf(&rows);
		freebuf(&sch);
	}
	lenfield(req, 6, &ris);
	freebuf(&ris);
}

/* columnar inserts with these row_counts */
static void inserts(struct buf *req, const uint32_t *counts, int n)
{
	struct buf is = { 0 };
	int i;

	for (i = 0; i < n; i++) {
		struct buf in = { 0 }, col = { 0 };

		strfield(&in, 1, "mem");
		strfield(&col, 1, "v");
		lenfield(&in, 3, &col);
		vfield(&in, 4, counts[i]);
		lenfield(&is, 1, &in);
		freebuf(&in);
		freebuf(&col);
	}
	lenfield(req, 2, &is);
	freebuf(&is);
}

/* gRPC length-prefixed message */
static void grpc_msg(struct buf *out, const struct buf *msg, uint8_t compressed)
{
	put8(out, compressed);
	put8(out, (uint8_t)(msg->len >> 24));
	put8(out, (uint8_t)(msg->len >> 16));
	put8(out, (uint8_t)(msg->len >> 8));
	put8(out, (uint8_t)msg->len);
	put(out, msg->p, msg->len);
}

static void frame(struct buf *b, uint8_t type, uint8_t flags, uint32_t sid, const void *payload,
		  size_t len)
{
	put8(b, (uint8_t)(len >> 16));
	put8(b, (uint8_t)(len >> 8));
	put8(b, (uint8_t)len);
	put8(b, type);
	put8(b, flags);
	put8(b, (uint8_t)(sid >> 24));
	put8(b, (uint8_t)(sid >> 16));
	put8(b, (uint8_t)(sid >> 8));
	put8(b, (uint8_t)sid);
	if (len)
		put(b, payload, len);
}

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/* an HPACK block: :method POST, :scheme http, :path (literal with
 * incremental indexing, raw) of the client-streaming method, whose every
 * message counts, content-type application/grpc (Huffman) */
static const uint8_t hpack[] = "\x83\x86\x44\x2c" ROUTE_HANDLE_REQUESTS
			       "\x5f\x8b\x1d\x75\xd0\x62\x0d\x26\x3d\x4c\x4d\x65\x64";
/* the same with the unary method's :path */
static const uint8_t hpack_unary[] = "\x83\x86\x44\x24" ROUTE_HANDLE
				     "\x5f\x8b\x1d\x75\xd0\x62\x0d\x26\x3d\x4c\x4d\x65\x64";

static void start(struct buf *b)
{
	static const uint8_t settings[] = { 0, 4, 0, 0, 0x40, 0, 0, 5, 0, 0, 0x40, 0 };

	put(b, preface, 24);
	frame(b, RG_H2_SETTINGS, 0, 0, settings, sizeof(settings));
	frame(b, RG_H2_WINDOW_UPDATE, 0, 0, "\0\x0f\0\x01", 4);
}

static void headers(struct buf *b, uint32_t sid, uint8_t flags)
{
	frame(b, RG_H2_HEADERS, flags | RG_H2_FLAG_END_HEADERS, sid, hpack, sizeof(hpack) - 1);
}

/* DATA frames of at most chunk payload bytes carrying data[0..n) */
static void data(struct buf *b, uint32_t sid, const struct buf *d, size_t chunk, bool end_stream)
{
	size_t off = 0;

	do {
		size_t n = d->len - off < chunk ? d->len - off : chunk;
		bool last = off + n == d->len;

		frame(b, RG_H2_DATA, last && end_stream ? RG_H2_FLAG_END_STREAM : 0, sid,
		      d->p + off, n);
		off += n;
	} while (off < d->len);
}

/* ---- feeding --------------------------------------------------------------- */

static struct rg_h2_conn conn;

static void feed(const struct buf *b, const size_t *cuts, int ncuts, bool skip, struct outcome *o)
{
	feed_pieces(&conn, b->p, b->len, cuts, ncuts, skip, o);
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	int i;

	if (a->err != b->err || a->nev != b->nev || a->frames != b->frames ||
	    a->unrouted != b->unrouted)
		return false;
	for (i = 0; i < a->nev; i++)
		if (a->ev[i].sid != b->ev[i].sid || a->ev[i].rows != b->ev[i].rows ||
		    a->ev[i].kind != b->ev[i].kind || strcmp(a->ev[i].db, b->ev[i].db) ||
		    a->ev[i].compressed != b->ev[i].compressed)
			return false;
	return true;
}

/* Whole, then split once at every offset (with and without skips), then
 * at random offsets: every way gives the same outcome. */
#define SPLIT_ALL_BYTES 4096 /* every offset up to here, then a stride */

static void check_splits(const char *what, const struct buf *b, const struct outcome *want)
{
	struct outcome got;
	size_t k, cuts[8];
	int bad = 0, round, s;

	for (s = 0; s < 2; s++) {
		feed(b, NULL, 0, s, &got);
		CHECK(same(&got, want), "%s: whole (skip %d) differs", what, s);
		for (k = 1; k < b->len && bad < 3; k += k < SPLIT_ALL_BYTES ? 1 : 1 + b->len / 400) {
			feed(b, &k, 1, s, &got);
			if (!same(&got, want)) {
				bad++;
				CHECK(0, "%s: split at %zu (skip %d): err %d events %d", what, k, s,
				      got.err, got.nev);
			}
		}
	}
	srand(12);
	for (round = 0; round < 300 && bad < 3; round++) {
		int n = 1 + rand() % 8, i, j;

		for (i = 0; i < n; i++)
			cuts[i] = 1 + (size_t)rand() % (b->len - 1);
		for (i = 0; i < n; i++) /* sort */
			for (j = i + 1; j < n; j++)
				if (cuts[j] < cuts[i]) {
					size_t t = cuts[i];
					cuts[i] = cuts[j];
					cuts[j] = t;
				}
		feed(b, cuts, n, round & 1, &got);
		if (!same(&got, want)) {
			bad++;
			CHECK(0, "%s: random split round %d differs", what, round);
		}
	}
	check_count++;
}

#define EXPECT_EV(o, i, sid_, kind_, rows_, db_)                                                \
	do {                                                                                    \
		CHECK((o)->nev > (i), "event %d missing (have %d)", i, (o)->nev);               \
		if ((o)->nev > (i)) {                                                           \
			CHECK_EQ_U64((o)->ev[i].sid, sid_, "stream");                           \
			CHECK_EQ_U64((o)->ev[i].kind, kind_, "kind");                           \
			CHECK_EQ_U64((o)->ev[i].rows, rows_, "rows");                           \
			CHECK(strcmp((o)->ev[i].db, db_) == 0, "db %s, want %s", (o)->ev[i].db, \
			      db_);                                                             \
		}                                                                               \
	} while (0)

/* ---- tests ---------------------------------------------------------------- */

static void build_req(struct buf *req, const char *cat, const char *sch, const char *db, int rows)
{
	memset(req, 0, sizeof(*req));
	if (cat || sch || db)
		header(req, cat, sch, db);
	row_inserts(req, &rows, 1);
}

static void test_unary_and_db_resolution(void)
{
	static const struct {
		const char *cat, *sch, *db, *want;
	} cases[] = {
		{ NULL, NULL, "greptime-logs", "logs" },
		{ NULL, NULL, "logs", "logs" },
		{ NULL, NULL, "acme-Metrics", "acme-Metrics" }, /* dbname: not lower-cased */
		{ "Cat", "Sch", NULL, "cat-sch" },
		{ NULL, "Metrics", NULL, "metrics" },
		{ "greptime", "x", NULL, "x" },
		{ "acme", NULL, NULL, "acme-public" },
		{ "c", "s", "wins", "wins" },
		{ NULL, NULL, NULL, "public" },
		{ NULL, NULL, "\xc3\x89t\xc3\xa9", "\xc3\x89t\xc3\xa9" }, /* dbname: bytes as sent */
		{ NULL, "\xc3\x89t\xc3\xa9", NULL,
		  "<too long>" }, /* Unicode lower-casing: refused */
		{ "\xc3\x89", "s", NULL, "<too long>" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf req, g = { 0 }, c = { 0 };
		struct outcome o;

		build_req(&req, cases[i].cat, cases[i].sch, cases[i].db, 7);
		grpc_msg(&g, &req, 0);
		start(&c);
		headers(&c, 1, 0);
		data(&c, 1, &g, 16384, true);
		feed(&c, NULL, 0, false, &o);
		CHECK(o.err == 0, "case %zu: err %d at %zu", i, o.err, o.err_at);
		EXPECT_EV(&o, 0, 1, RG_GRPC_ROW_INSERTS, 7, cases[i].want);
		CHECK(rg_grpc_charged(&(struct rg_grpc_msg){ .kind = RG_GRPC_ROW_INSERTS }),
		      "row inserts charged");
		freebuf(&req);
		freebuf(&g);
		freebuf(&c);
	}
}

/* Unknown fields encoded as groups (wire types 3 and 4), nested, with
 * every wire type inside, in GreptimeRequest and in RequestHeader, and as
 * the message's last field: skipped as prost's skip_field skips them, the
 * rows and database read as without them. */
static void test_groups(void)
{
	struct buf req = { 0 }, h = { 0 }, g = { 0 }, c = { 0 };
	struct outcome o;
	int rows = 5;

	key(&req, 100, 3);
	vfield(&req, 1, 7);
	key(&req, 101, 3);
	key(&req, 2, 5);
	put(&req, "\1\2\3\4", 4);
	key(&req, 3, 1);
	put(&req, "\1\2\3\4\5\6\7\x08", 8);
	key(&req, 101, 4);
	strfield(&req, 3, "ab");
	key(&req, 100, 4);
	strfield(&h, 4, "gdb");
	key(&h, 9, 3);
	vfield(&h, 1, 1);
	key(&h, 9, 4);
	lenfield(&req, 1, &h);
	row_inserts(&req, &rows, 1);
	key(&req, 200000, 3); /* a field number of three key bytes */
	key(&req, 200000, 4);
	grpc_msg(&g, &req, 0);
	start(&c);
	headers(&c, 1, 0);
	data(&c, 1, &g, 16384, true);
	feed(&c, NULL, 0, false, &o);
	CHECK(o.err == 0, "groups: err %d at %zu", o.err, o.err_at);
	EXPECT_EV(&o, 0, 1, RG_GRPC_ROW_INSERTS, 5, "gdb");
	freebuf(&req);
	freebuf(&h);
	freebuf(&g);
	freebuf(&c);
}

/* A unary Handle stream: its server (tonic, grpc-go) takes the first
 * message and drops the rest, so only the first is an event (charged),
 * however the rest comes: in the same DATA frame, in later frames, after
 * a unary stream on another slot; a client-streaming stream beside it
 * counts every message; 16 unary streams waiting for DATA do not keep
 * an unrouted stream out (docs/grpc.md#unary). */
static void test_unary_first_message(void)
{
	struct buf t = { 0 }, v = { 0 }, two = { 0 }, one = { 0 }, c = { 0 };
	struct outcome o;
	uint32_t sid;

	build_req(&t, NULL, NULL, "t", 1);
	build_req(&v, NULL, NULL, "v", 500);
	grpc_msg(&two, &t, 0);
	grpc_msg(&two, &v, 0);
	grpc_msg(&one, &v, 0);
	start(&c);
	/* stream 1: [t 1 row][v 500 rows] in one frame; the same on stream
	 * 3 client-streaming: both events */
	frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 1, hpack_unary, sizeof(hpack_unary) - 1);
	data(&c, 1, &two, 16384, true);
	headers(&c, 3, 0);
	data(&c, 3, &two, 16384, true);
	/* stream 5: t, then v in frames of 7 bytes after it */
	frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 5, hpack_unary, sizeof(hpack_unary) - 1);
	data(&c, 5, &two, 7, false);
	data(&c, 5, &one, 16384, true);
	feed(&c, NULL, 0, false, &o);
	CHECK(o.err == 0, "unary: err %d at %zu", o.err, o.err_at);
	CHECK_EQ_U64(o.nev, 4, "unary: messages");
	EXPECT_EV(&o, 0, 1, RG_GRPC_ROW_INSERTS, 1, "t");
	EXPECT_EV(&o, 1, 3, RG_GRPC_ROW_INSERTS, 1, "t");
	EXPECT_EV(&o, 2, 3, RG_GRPC_ROW_INSERTS, 500, "v");
	EXPECT_EV(&o, 3, 5, RG_GRPC_ROW_INSERTS, 1, "t");
	check_splits("unary", &c, &o);
	freebuf(&c);

	/* 16 unary streams opened, no DATA yet, then an unrouted stream and
	 * each unary stream's message: the unrouted one takes a pending
	 * entry, and the stream it forgot is charged every message */
	start(&c);
	for (sid = 1; sid <= 31; sid += 2)
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, sid, hpack_unary,
		      sizeof(hpack_unary) - 1);
	frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 33, "\x83\x86\x44\x06/other", 10);
	for (sid = 1; sid <= 31; sid += 2)
		data(&c, sid, &two, 16384, true);
	data(&c, 33, &two, 16384, true);
	feed(&c, NULL, 0, false, &o);
	CHECK(o.err == 0, "unary set full: err %d at %zu", o.err, o.err_at);
	CHECK_EQ_U64(o.nev, 17, "unary set full: one stream forgotten, 16 + 1 events");
	CHECK_EQ_U64(o.unrouted, 1, "unary set full: the unrouted stream");
	freebuf(&c);
	freebuf(&t);
	freebuf(&v);
	freebuf(&two);
	freebuf(&one);
}

/* A NUL inside dbname, catalog or schema fails closed: the padded key
 * would name the database without it ("v\0" is another name than "v"). */
static void test_db_nul(void)
{
	static const struct {
		int str;
		const char *val;
		__u32 len;
	} cases[] = {
		{ RG_GRPC_STR_DBNAME, "v\0", 2 },
		{ RG_GRPC_STR_DBNAME, "\0v", 2 },
		{ RG_GRPC_STR_DBNAME, "greptime-v\0", 11 },
		{ RG_GRPC_STR_CATALOG, "c\0", 2 },
		{ RG_GRPC_STR_SCHEMA, "s\0x", 3 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rg_grpc_msg m = { 0 };
		struct rg_db_key key;

		memcpy(m.str[cases[i].str], cases[i].val, cases[i].len);
		m.str_len[cases[i].str] = cases[i].len;
		CHECK(rg_grpc_db_key(&m, &key) == -1, "case %zu: a NUL in the name is refused", i);
		/* the same name without its NUL still resolves */
		memset(m.str[cases[i].str], 0, sizeof(m.str[0]));
		m.str[cases[i].str][0] = 'v';
		m.str_len[cases[i].str] = 1;
		CHECK(rg_grpc_db_key(&m, &key) >= 0, "case %zu: one byte resolves", i);
	}
}

static void test_merge_rules(void)
{
	struct buf req = { 0 }, g = { 0 }, c = { 0 };
	struct outcome o;
	int three = 3, four = 4;
	uint32_t counts[] = { 100, 50 }, big[] = { 0xffffffffU };

	start(&c);
	/* two headers: the last dbname wins; row_inserts twice: rows add up */
	header(&req, NULL, NULL, "first");
	row_inserts(&req, &three, 1);
	header(&req, NULL, NULL, "second");
	row_inserts(&req, &four, 1);
	grpc_msg(&g, &req, 0);
	freebuf(&req);
	/* a different oneof member replaces the one before */
	row_inserts(&req, &three, 1);
	inserts(&req, counts, 2);
	header(&req, NULL, "s", NULL);
	grpc_msg(&g, &req, 0);
	freebuf(&req);
	/* row_count is a uint32 */
	header(&req, NULL, NULL, "big");
	inserts(&req, big, 1);
	grpc_msg(&g, &req, 0);
	freebuf(&req);
	/* a later empty dbname falls back to catalog/schema */
	header(&req, NULL, "sch", "x");
	header(&req, NULL, NULL, "");
	grpc_msg(&g, &req, 0);
	freebuf(&req);
	/* deletes: passed, not charged */
	header(&req, NULL, NULL, "d");
	inserts(&req, counts, 1);
	{
		struct buf del = { 0 };

		strfield(&del, 1, "x");
		lenfield(&req, 5, &del);
		freebuf(&del);
	}
	grpc_msg(&g, &req, 0);
	freebuf(&req);
	/* an empty message */
	grpc_msg(&g, &req, 0);

	headers(&c, 3, 0);
	data(&c, 3, &g, 16384, true);
	feed(&c, NULL, 0, false, &o);
	CHECK(o.err == 0, "merge: err %d", o.err);
	CHECK_EQ_U64(o.nev, 6, "merge: messages");
	EXPECT_EV(&o, 0, 3, RG_GRPC_ROW_INSERTS, 7, "second");
	EXPECT_EV(&o, 1, 3, RG_GRPC_INSERTS, 150, "s");
	EXPECT_EV(&o, 2, 3, RG_GRPC_INSERTS, 0xffffffffU, "big");
	EXPECT_EV(&o, 3, 3, RG_GRPC_NONE, 0, "sch");
	EXPECT_EV(&o, 4, 3, RG_GRPC_DELETES, 0, "d");
	EXPECT_EV(&o, 5, 3, RG_GRPC_NONE, 0, "public");
	CHECK(!rg_grpc_charged(&(struct rg_grpc_msg){ .kind = RG_GRPC_DELETES }),
	      "deletes not charged");
	check_splits("merge", &c, &o);
	freebuf(&g);
	freebuf(&c);
}

/* Everything at once: two streams interleaved, a message spanning frames,
 * several messages per frame, padding, priority, CONTINUATION, control
 * frames between, an unknown frame type, a compressed message. */
static void test_connection(void)
{
	struct buf c = { 0 }, a = { 0 }, b = { 0 }, req = { 0 }, z = { 0 };
	struct outcome o;
	int rows_a = 40, rows_b = 5;
	uint32_t cnt[] = { 9 };
	uint8_t pad[300];
	size_t half;

	memset(pad, 0, sizeof(pad));
	start(&c);
	/* stream 1: client streaming, two messages, the first spanning frames */
	build_req(&req, NULL, NULL, "greptime-a", rows_a);
	grpc_msg(&a, &req, 0);
	freebuf(&req);
	header(&req, NULL, NULL, "a2");
	inserts(&req, cnt, 1);
	grpc_msg(&a, &req, 0);
	freebuf(&req);
	/* stream 3: one message, sent in padded DATA frames */
	build_req(&req, "Acme", "B", NULL, rows_b);
	grpc_msg(&b, &req, 0);
	freebuf(&req);
	/* HEADERS(1) without END_HEADERS + CONTINUATION */
	frame(&c, RG_H2_HEADERS, RG_H2_FLAG_PRIORITY, 1,
	      "\0\0\0\0\x0f"
	      "\x83\x86\x44",
	      8);
	frame(&c, RG_H2_CONTINUATION, 0, 1, hpack + 3, 7);
	frame(&c, RG_H2_CONTINUATION, RG_H2_FLAG_END_HEADERS, 1, hpack + 10, sizeof(hpack) - 1 - 10);
	/* HEADERS(3), padded and with priority */
	{
		struct buf h = { 0 };

		put8(&h, 4);
		put(&h, "\x80\0\0\x01\x10", 5);
		put(&h, hpack, sizeof(hpack) - 1);
		put(&h, pad, 4);
		frame(&c, RG_H2_HEADERS,
		      RG_H2_FLAG_PADDED | RG_H2_FLAG_PRIORITY | RG_H2_FLAG_END_HEADERS, 3, h.p,
		      h.len);
		freebuf(&h);
	}
	half = a.len / 3;
	frame(&c, RG_H2_DATA, 0, 1, a.p, half);
	frame(&c, RG_H2_PING, 0, 0, "12345678", 8);
	{ /* stream 3's message in padded frames */
		struct buf d = { 0 };
		size_t off = 0, n;
		int i = 0;

		while (off < b.len) {
			n = b.len - off < 17 ? b.len - off : 17;
			d.len = 0;
			put8(&d, (uint8_t)(i % 3));
			put(&d, b.p + off, n);
			put(&d, pad, (size_t)(i % 3));
			frame(&c, RG_H2_DATA,
			      RG_H2_FLAG_PADDED | (off + n == b.len ? RG_H2_FLAG_END_STREAM : 0), 3,
			      d.p, d.len);
			off += n;
			i++;
			if (i == 2)
				frame(&c, 0xfa, 0xff, 1, "ignored!", 8); /* unknown type */
		}
		freebuf(&d);
	}
	frame(&c, RG_H2_WINDOW_UPDATE, 0, 1, "\0\0\x10\0", 4);
	frame(&c, RG_H2_PRIORITY, 0, 7, "\0\0\0\x01\x10", 5); /* idle stream: allowed */
	frame(&c, RG_H2_DATA, 0, 1, a.p + half, a.len - half);
	frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, NULL, 0);
	/* stream 5: gzip'd message (contents unknown), then HEADERS-only stream 7 */
	headers(&c, 5, 0);
	put(&z, "\x1f\x8b\x08\0\0\0\0\0\0\x03junk", 14);
	{
		struct buf g = { 0 };

		grpc_msg(&g, &z, 1);
		data(&c, 5, &g, 5, true);
		freebuf(&g);
	}
	headers(&c, 9, RG_H2_FLAG_END_STREAM);
	frame(&c, RG_H2_SETTINGS, RG_H2_FLAG_ACK, 0, NULL, 0);
	frame(&c, RG_H2_RST_STREAM, 0, 5, "\0\0\0\x08", 4);
	frame(&c, RG_H2_GOAWAY, 0, 0, "\0\0\0\0\0\0\0\0", 8);

	feed(&c, NULL, 0, true, &o);
	CHECK(o.err == 0, "connection: err %d at %zu", o.err, o.err_at);
	CHECK_EQ_U64(o.nev, 4, "connection: messages");
	EXPECT_EV(&o, 0, 3, RG_GRPC_ROW_INSERTS, 5, "acme-b");
	EXPECT_EV(&o, 1, 1, RG_GRPC_ROW_INSERTS, 40, "a");
	EXPECT_EV(&o, 2, 1, RG_GRPC_INSERTS, 9, "a2");
	CHECK(o.nev > 3 && o.ev[3].compressed == 1 && o.ev[3].sid == 5 && o.ev[3].rows == 0,
	      "compressed message reported as such");
	check_splits("connection", &c, &o);
	freebuf(&a);
	freebuf(&b);
	freebuf(&c);
	freebuf(&z);
}

/*
 * The §6.2.5 stash as bpf/h2/early.h makes it: the connection cut into two skbs,
 * the bytes rg_h2_stash_bytes holds back of the first written in front of
 * the second, parsing going on after them.  Counts, per stream, messages
 * completed in the second skb whose frame header is not in it (a refusal
 * there could not be rewritten); hold = false: nothing held back.
 */
/* A fresh connection fed the first `cut` bytes of b: the last frame
 * header's offset in *fh_off (~0U: none whole), or the parser's error. */
static int parse_to(const struct buf *b, size_t cut, uint32_t *fh_off)
{
	size_t pos;
	int r;

	*fh_off = ~0U;
	rg_h2_init(&conn);
	for (pos = 0; pos < cut; pos++) {
		r = rg_h2_step(&conn, b->p[pos]);
		if (r < 0)
			return r;
		if (r == RG_H2_EV_FRAME)
			*fh_off = pos >= 8 ? (uint32_t)pos - 8 : ~0U;
	}
	return 0;
}

static void stash_cut(const struct buf *b, size_t cut, bool hold, int blind[8], uint32_t *held,
		      bool *early)
{
	uint32_t fh_off, n;
	size_t pos, base;
	int r;

	r = parse_to(b, cut, &fh_off);
	CHECK(r >= 0, "stash: cut %zu: err %d", cut, r);
	if (r < 0)
		return;
	/* a frame too large to hold whole is judged at its header, when
	 * its message allows (docs/grpc.md#h2-early) */
	*early = hold && rg_h2_early_state(&conn, (uint32_t)cut, fh_off,
					   RG_H2_EARLY_HEAD_BYTES) == RG_H2_EARLY_READY;
	n = hold ? rg_h2_stash_bytes(&conn, (uint32_t)cut, fh_off) : 0;
	*held = n;
	CHECK(!(*early && n), "stash: cut %zu: judged early and held back", cut);
	CHECK(n <= cut && n <= RG_H2_STASH_MAX, "stash: cut %zu: %u held", cut, n);
	if (n && conn.st == RG_H2S_FRAME_HDR)
		CHECK(n == conn.got && !memcmp(b->p + cut - n, conn.fh, n),
		      "stash: cut %zu: the held bytes are not the header's first %u", cut, n);
	else if (n)
		CHECK(!memcmp(b->p + cut - n, conn.fh, RG_H2_FRAME_HDR_BYTES),
		      "stash: cut %zu: the held bytes do not begin with the frame header", cut);
	base = cut - n;
	fh_off = n && conn.st != RG_H2S_FRAME_HDR ? 0 : ~0U;
	for (pos = cut; pos < b->len; pos++) {
		r = rg_h2_step(&conn, b->p[pos]);
		CHECK(r >= 0, "stash: cut %zu: err %d at %zu", cut, r, pos);
		if (r < 0)
			return;
		if (r == RG_H2_EV_FRAME)
			fh_off = pos - base >= 8 ? (uint32_t)(pos - base) - 8 : ~0U;
		if (r == RG_H2_EV_MESSAGE && fh_off == ~0U)
			blind[conn.done_sid & 7]++;
	}
}

static void test_stash(void)
{
	struct buf c = { 0 }, a = { 0 }, big = { 0 }, req = { 0 }, d = { 0 };
	int blind[8], nohold[8] = { 0 }, over_blind = 0, over_held = 0, over_early = 0;
	uint8_t pad[3] = { 0 };
	size_t cut, s5;
	uint32_t held;
	bool early;

	start(&c);
	headers(&c, 1, 0);
	headers(&c, 3, 0);
	headers(&c, 5, 0);
	/* stream 1: two messages in DATA frames of 60 bytes */
	build_req(&req, NULL, NULL, "a", 20);
	grpc_msg(&a, &req, 0);
	grpc_msg(&a, &req, 0);
	freebuf(&req);
	data(&c, 1, &a, 60, true);
	/* stream 3: one message in a padded frame */
	build_req(&req, NULL, NULL, "b", 3);
	put8(&d, 3);
	grpc_msg(&d, &req, 0);
	put(&d, pad, 3);
	freebuf(&req);
	frame(&c, RG_H2_DATA, RG_H2_FLAG_PADDED | RG_H2_FLAG_END_STREAM, 3, d.p, d.len);
	frame(&c, RG_H2_PING, 0, 0, "12345678", 8);
	/* stream 5: one frame over the bound */
	s5 = c.len;
	build_req(&req, NULL, NULL, "c", 1000);
	grpc_msg(&big, &req, 0);
	freebuf(&req);
	CHECK(big.len + RG_H2_FRAME_HDR_BYTES > RG_H2_STASH_MAX, "stash: stream 5's frame fits");
	frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 5, big.p, big.len);

	for (cut = 1; cut < c.len; cut++) {
		memset(blind, 0, sizeof(blind));
		stash_cut(&c, cut, true, blind, &held, &early);
		CHECK(blind[1] == 0 && blind[3] == 0,
		      "stash: cut %zu: a message decided without its frame header (%d, %d)", cut,
		      blind[1], blind[3]);
		if (cut > s5 && early)
			over_early++;
		else if (cut > s5 + RG_H2_FRAME_HDR_BYTES && held)
			over_held++;
		if (blind[5] && !early)
			over_blind++;
		stash_cut(&c, cut, false, nohold, &held, &early);
	}
	/* the over-bound frame: its start held back until its RequestHeader
	 * is read, then judged at its header; never completed blind */
	CHECK_EQ_U64(over_blind, 0, "stash: cuts that leave the over-bound frame blind");
	CHECK(over_held > 0 && over_held < 64, "stash: the over-bound frame's start held (%d cuts)",
	      over_held);
	CHECK((size_t)(over_early + over_held) + RG_H2_FRAME_HDR_BYTES >= big.len,
	      "stash: cuts inside the over-bound frame judged early (%d) or held (%d)", over_early,
	      over_held);
	CHECK(nohold[1] > 0 && nohold[3] > 0, "stash: without it, cuts leave messages blind");
	CHECK(c.len > s5, "stash: stream 5 built");
	check_count++;
	freebuf(&a);
	freebuf(&big);
	freebuf(&c);
	freebuf(&d);
}

/* rg_h2_early_state of the connection in b cut after `cut` bytes. */
static int early_at_min(const struct buf *b, size_t cut, uint32_t head_min)
{
	uint32_t fh_off;
	int r = parse_to(b, cut, &fh_off);

	return r < 0 ? r : rg_h2_early_state(&conn, (uint32_t)cut, fh_off, head_min);
}

static int early_at(const struct buf *b, size_t cut)
{
	return early_at_min(b, cut, RG_H2_EARLY_HEAD_BYTES);
}

/*
 * A compressed message in a frame too large to hold back is judged at the
 * frame's header (--grpc-compressed debt, bpf/h2/early.h rg_h2_early_decide) as
 * soon as its prefix and the frame's first RG_H2_EARLY_HEAD_BYTES are in
 * the skb: its verdict needs nothing inside it.  One that goes on past
 * its frame is judged where it completes.
 */
static void test_early_compressed(void)
{
	struct buf c = { 0 }, body = { 0 }, m = { 0 };
	size_t f1, f2, end1, cut;
	int bad = 0, ready = 0, want, got;
	uint32_t i;

	for (i = 0; i < 6000; i++)
		put8(&body, (uint8_t)(i * 131 + 7));
	grpc_msg(&m, &body, 1);
	start(&c);
	headers(&c, 1, 0);
	f1 = c.len;
	frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, m.p, m.len);
	end1 = c.len;
	headers(&c, 3, 0);
	f2 = c.len;
	frame(&c, RG_H2_DATA, 0, 3, m.p, 5000);
	frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 3, m.p + 5000, m.len - 5000);
	CHECK(m.len + RG_H2_FRAME_HDR_BYTES > RG_H2_STASH_MAX, "early compressed: the frame fits");

	for (cut = f1 + 1; cut < end1; cut++) {
		got = early_at(&c, cut);
		/* the header's 9 bytes, then the prefix and the rest of the
		 * rewritten head: held back until all are in */
		want = cut < f1 + RG_H2_FRAME_HDR_BYTES	 ? RG_H2_EARLY_NO :
		       cut < f1 + RG_H2_EARLY_HEAD_BYTES ? RG_H2_EARLY_WAIT :
							   RG_H2_EARLY_READY;
		bad += got != want;
		ready += got == RG_H2_EARLY_READY;
	}
	CHECK_EQ_U64(bad, 0, "early compressed: cuts of a one-frame message judged otherwise");
	CHECK(ready > 0, "early compressed: never ready");
	/* a skb that cannot be held back: judged once the header and the
	 * prefix are in, the head's rest written in the next skb
	 * (docs/grpc.md#h2-early-head-split) */
	for (cut = f1 + 1; cut < end1; cut++) {
		want = cut < f1 + RG_H2_FRAME_HDR_BYTES	    ? RG_H2_EARLY_NO :
		       cut < f1 + RG_H2_FRAME_HDR_BYTES + 5 ? RG_H2_EARLY_WAIT :
							      RG_H2_EARLY_READY;
		bad += early_at_min(&c, cut, RG_H2_FRAME_HDR_BYTES) != want;
	}
	CHECK_EQ_U64(bad, 0, "early compressed: cuts judged otherwise with the header alone");
	for (cut = f2 + RG_H2_FRAME_HDR_BYTES + 5; cut < f2 + RG_H2_FRAME_HDR_BYTES + 5000; cut++)
		bad += early_at(&c, cut) != RG_H2_EARLY_NO;
	CHECK_EQ_U64(bad, 0, "early compressed: a message past its frame judged at the frame");
	freebuf(&c);
	freebuf(&body);
	freebuf(&m);
}

/*
 * The ready-at-frame-end test of bpf/h2/early.h's rg_h2_frame_tail: b holds one
 * stream's message in two DATA frames; parse it and return, at the last
 * byte of the first frame, rg_h2_short_tail_ready of its slot (-1: that
 * byte was never the last of an unpadded DATA frame).
 */
static int short_tail_at_f1_end(const struct buf *b, size_t f2)
{
	size_t pos;
	int tail, r, ready = -1;

	rg_h2_init(&conn);
	for (pos = 0; pos < f2; pos++) {
		tail = conn.st == RG_H2S_DATA && conn.left == 1 && !conn.pad_left ? conn.slot : -1;
		r = rg_h2_step(&conn, b->p[pos]);
		if (r < 0)
			return -2;
		if (r == 0 && tail >= 0 && tail < RG_H2_STREAM_SLOTS)
			ready = rg_h2_short_tail_ready(&conn.s[tail]);
	}
	return ready;
}

/* One stream whose message m goes in two DATA frames, the second with its
 * last `tail` bytes; *f1, *f2: where the frames begin. */
static void two_frames(struct buf *c, const struct buf *m, size_t tail, size_t *f1, size_t *f2)
{
	memset(c, 0, sizeof(*c));
	start(c);
	headers(c, 1, 0);
	*f1 = c->len;
	frame(c, RG_H2_DATA, 0, 1, m->p, m->len - tail);
	*f2 = c->len;
	frame(c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, m->p + m->len - tail, tail);
}

/*
 * A message whose last DATA frame is too short to rewrite in place (grpc-go
 * cuts frames at the flow-control window, so a few bytes may come alone) is
 * judged at the frame before it (docs/grpc.md#h2-short-tail): at that
 * frame's end, or at its header when it is too large to hold back, and a
 * frame cut before it is held back whole.  Not when the tail is long
 * enough or a plain one's database is not read yet; a compressed one needs
 * only its prefix.
 */
static void test_short_tail(void)
{
	struct buf req = { 0 }, m = { 0 }, big = { 0 }, late = { 0 }, cm = { 0 }, c;
	int rows = 20, bad = 0, got, want;
	size_t tail, f1, f2, cut;
	uint32_t fh_off;

	build_req(&req, NULL, NULL, "a", 20);
	grpc_msg(&m, &req, 0);
	freebuf(&req);
	for (tail = 1; tail < 40; tail++) {
		two_frames(&c, &m, tail, &f1, &f2);
		got = short_tail_at_f1_end(&c, f2);
		want = tail < RG_H2_SHORT_TAIL_BYTES;
		CHECK(got == want, "short tail %zu: ready %d, want %d", tail, got, want);
		/* cut inside the first frame, past its message's prefix: held
		 * back whole exactly when its message is judged at its end */
		for (cut = f1 + RG_H2_FRAME_HDR_BYTES + 5; cut < f2; cut += 7) {
			if (parse_to(&c, cut, &fh_off) < 0) {
				bad++;
				continue;
			}
			bad += (rg_h2_stash_bytes(&conn, (uint32_t)cut, fh_off) == cut - f1) !=
			       want;
		}
		freebuf(&c);
	}
	CHECK_EQ_U64(bad, 0, "short tail: first frames held back otherwise");

	/* the RequestHeader after the rows, inside the tail: not known at
	 * the first frame's end, judged (and falls back) at completion */
	row_inserts(&req, &rows, 1);
	header(&req, NULL, NULL, "a");
	grpc_msg(&late, &req, 0);
	freebuf(&req);
	two_frames(&c, &late, 10, &f1, &f2);
	CHECK(short_tail_at_f1_end(&c, f2) == 0, "short tail: judged before its RequestHeader");
	freebuf(&c);

	/* compressed (--grpc-compressed debt): judged on its prefix alone */
	for (tail = 0; tail < 200; tail++)
		put8(&req, (uint8_t)(tail * 131 + 7));
	grpc_msg(&cm, &req, 1);
	freebuf(&req);
	for (tail = 10; tail <= 30; tail += 20) {
		two_frames(&c, &cm, tail, &f1, &f2);
		CHECK(short_tail_at_f1_end(&c, f2) == (tail < RG_H2_SHORT_TAIL_BYTES),
		      "short tail: a compressed message with %zu bytes after its first frame",
		      tail);
		freebuf(&c);
	}

	/* a first frame too large to hold back: judged at its header */
	bad = 0;
	build_req(&req, NULL, NULL, "a", 1000);
	grpc_msg(&big, &req, 0);
	freebuf(&req);
	CHECK(big.len > RG_H2_STASH_MAX, "short tail: the big message fits the stash");
	for (tail = 10; tail <= 30; tail += 20) {
		two_frames(&c, &big, tail, &f1, &f2);
		want = tail < RG_H2_SHORT_TAIL_BYTES ? RG_H2_EARLY_READY : RG_H2_EARLY_NO;
		for (cut = f1 + 200; cut < f2; cut += 97)
			bad += early_at(&c, cut) != want;
		freebuf(&c);
	}
	CHECK_EQ_U64(bad, 0, "short tail: big first frames judged at their header otherwise");
	freebuf(&m);
	freebuf(&big);
	freebuf(&late);
	freebuf(&cm);
}

/* A stream the kernel refused gives its slot up to a new stream (bpf/h2/refuse.h
 * marks it): a client that abandons a refused call mid-message never ends
 * its stream (grpc-go 1.33's HandleRequests). */
static void test_refused_slots(void)
{
	struct buf c = { 0 }, req = { 0 }, m = { 0 };
	size_t pos;
	uint32_t sid;
	int pass, i, r = 0;

	build_req(&req, NULL, NULL, "a", 50);
	grpc_msg(&m, &req, 0);
	start(&c);
	for (sid = 1; sid <= 2 * RG_H2_STREAM_SLOTS + 1; sid += 2) {
		headers(&c, sid, 0);
		/* half a message, and never an END_STREAM */
		frame(&c, RG_H2_DATA, 0, sid, m.p, (uint32_t)m.len / 2);
	}
	for (pass = 0; pass < 2; pass++) {
		rg_h2_init(&conn);
		for (pos = 0; pos < c.len; pos++) {
			r = rg_h2_step(&conn, c.p[pos]);
			if (r < 0)
				break;
			/* pass 1: the kernel refuses every stream open so far */
			if (pass && r == RG_H2_EV_FRAME && conn.ftype == RG_H2_HEADERS)
				for (i = 0; i < RG_H2_STREAM_SLOTS; i++)
					if (conn.s[i].id)
						conn.s[i].refused = 1;
		}
		if (pass == 0)
			CHECK(r == RG_H2_ERR_STREAMS, "%d half-read streams: got %d, want %d",
			      RG_H2_STREAM_SLOTS + 1, r, RG_H2_ERR_STREAMS);
		else
			CHECK(r >= 0 && pos == c.len, "%d half-read refused streams: got %d at %zu",
			      RG_H2_STREAM_SLOTS + 1, r, pos);
	}
	freebuf(&c);
	freebuf(&req);
	freebuf(&m);
}

/* A connection prefix + one frame (or raw bytes) must fail with err. */
static void expect_err(const char *what, const struct buf *c, int err)
{
	struct outcome o;

	feed(c, NULL, 0, true, &o);
	CHECK(o.err == err, "%s: got %d, want %d", what, o.err, err);
	if (o.err == err && c->len > 1)
		check_splits(what, c, &o);
}

static void test_malformed(void)
{
	struct buf c = { 0 };

#define CASE(what, err, build)             \
	do {                               \
		c.len = 0;                 \
		build;                     \
		expect_err(what, &c, err); \
	} while (0)

	CASE("HTTP/1 request", RG_H2_ERR_PREFACE, put(&c, "POST /write HTTP/1.1\r\n", 22));
	CASE("preface typo", RG_H2_ERR_PREFACE, put(&c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\n\n", 24));
	CASE("no SETTINGS first", RG_H2_ERR_PREFACE, (put(&c, preface, 24), headers(&c, 1, 0)));
	CASE("SETTINGS ACK first", RG_H2_ERR_PREFACE,
	     (put(&c, preface, 24), frame(&c, RG_H2_SETTINGS, 1, 0, NULL, 0)));
	CASE("frame over max size", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), put(&c, "\0\x40\x01\0\0\0\0\0\x01", 9)));
	CASE("SETTINGS length 5", RG_H2_ERR_FRAME_SIZE,
	     (put(&c, preface, 24), frame(&c, RG_H2_SETTINGS, 0, 0, "12345", 5)));
	CASE("SETTINGS on a stream", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_SETTINGS, 0, 1, NULL, 0)));
	CASE("PING length 7", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), frame(&c, RG_H2_PING, 0, 0, "1234567", 7)));
	CASE("WINDOW_UPDATE length 3", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), frame(&c, RG_H2_WINDOW_UPDATE, 0, 0, "123", 3)));
	CASE("GOAWAY length 4", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), frame(&c, RG_H2_GOAWAY, 0, 0, "1234", 4)));
	CASE("PRIORITY on stream 0", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_PRIORITY, 0, 0, "12345", 5)));
	CASE("RST_STREAM on an idle stream", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_RST_STREAM, 0, 1, "\0\0\0\x08", 4)));
	CASE("DATA on stream 0", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_DATA, 0, 0, "x", 1)));
	CASE("DATA on a stream never opened", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_DATA, 0, 1, "x", 1)));
	CASE("DATA on an even stream", RG_H2_ERR_PROTOCOL,
	     (start(&c), headers(&c, 3, 0), frame(&c, RG_H2_DATA, 0, 2, "x", 1)));
	CASE("even stream id", RG_H2_ERR_PROTOCOL, (start(&c), headers(&c, 2, 0)));
	CASE("stream id going down", RG_H2_ERR_PROTOCOL,
	     (start(&c), headers(&c, 5, 0), headers(&c, 3, 0)));
	CASE("HEADERS on an open stream without END_STREAM", RG_H2_ERR_PROTOCOL,
	     (start(&c), headers(&c, 1, 0), headers(&c, 1, 0)));
	CASE("PUSH_PROMISE from a client", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_PUSH_PROMISE, 4, 1, "\0\0\0\x02", 4)));
	CASE("CONTINUATION without HEADERS", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_CONTINUATION, 4, 1, hpack, 4)));
	CASE("a frame inside a header block", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_HEADERS, 0, 1, hpack, 4),
	      frame(&c, RG_H2_PING, 0, 0, "12345678", 8)));
	CASE("CONTINUATION of another stream", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_HEADERS, 0, 1, hpack, 4),
	      frame(&c, RG_H2_CONTINUATION, 4, 3, hpack, 4)));
	CASE("unknown frame inside a header block", RG_H2_ERR_PROTOCOL,
	     (start(&c), frame(&c, RG_H2_HEADERS, 0, 1, hpack, 4), frame(&c, 0xfa, 0, 1, "x", 1)));
	CASE("padding longer than the frame", RG_H2_ERR_PROTOCOL,
	     (start(&c), headers(&c, 1, 0), frame(&c, RG_H2_DATA, 8, 1, "\x05xyz", 4)));
	CASE("PADDED DATA of length 0", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), headers(&c, 1, 0), frame(&c, RG_H2_DATA, 8, 1, NULL, 0)));
	CASE("PRIORITY flag on a 4-byte HEADERS", RG_H2_ERR_FRAME_SIZE,
	     (start(&c), frame(&c, RG_H2_HEADERS, 0x24, 1, hpack, 4)));
	CASE("gRPC compressed flag 2", RG_H2_ERR_GRPC,
	     (start(&c), headers(&c, 1, 0), frame(&c, RG_H2_DATA, 0, 1, "\x02\0\0\0\x01x", 6)));
	CASE("huge gRPC message length", RG_H2_ERR_GRPC,
	     (start(&c), headers(&c, 1, 0), frame(&c, RG_H2_DATA, 0, 1, "\0\xff\xff\xff\xff", 5)));
	CASE("gRPC length just over the max", RG_H2_ERR_GRPC,
	     (start(&c), headers(&c, 1, 0), frame(&c, RG_H2_DATA, 0, 1, "\0\x20\0\0\x01", 5)));

	freebuf(&c);
#undef CASE
}

/* Protobuf the server's decoder refuses. */
static void test_malformed_protobuf(void)
{
	struct buf c = { 0 }, req = { 0 }, g = { 0 };
	int i;

	static const struct {
		const char *what;
		const char *bytes;
		size_t len;
	} pb[] = {
		{ "header as a varint", "\x08\x01", 2 },
		{ "row_inserts as fixed32", "\x35\0\0\0\0", 5 },
		{ "field number 0", "\x02\x00", 2 },
		{ "a group for a declared field", "\x0b\x0c", 2 },
		{ "an end-group key outside any group", "\xa4\x06", 2 },
		{ "an end-group key naming another group", "\xa3\x06\xac\x06", 4 },
		{ "the message ends inside a group", "\xa3\x06\x08\x07", 4 },
		{ "a start-group key ends the message", "\xa3\x06", 2 },
		{ "length past the message",
		  "\x0a\x05"
		  "ab",
		  4 },
		{ "varint of 11 bytes", "\x50\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12 },
		{ "key without a value", "\x50", 1 },
		{ "nested length past its parent",
		  "\x32\x03\x0a\x05"
		  "a",
		  5 },
		{ "dbname as a varint", "\x0a\x02\x20\x01", 4 },
		{ "row_count as a string",
		  "\x12\x06\x0a\x04\x22\x02"
		  "ab",
		  8 },
		{ "Row as a varint", "\x32\x06\x0a\x04\x12\x02\x10\x01", 8 },
		{ "fixed64 past the message", "\x59\x01\x02", 3 },
	};
	for (i = 0; i < (int)(sizeof(pb) / sizeof(pb[0])); i++) {
		memset(&req, 0, sizeof(req));
		put(&req, pb[i].bytes, pb[i].len);
		g.len = 0;
		grpc_msg(&g, &req, 0);
		c.len = 0;
		start(&c);
		headers(&c, 1, 0);
		data(&c, 1, &g, 16384, true);
		expect_err(pb[i].what, &c, RG_H2_ERR_PROTOBUF);
		freebuf(&req);
	}

	freebuf(&c);
	freebuf(&g);
}

/* Stream slots: only a half-read message holds one. */
static void test_stream_slots(void)
{
	struct buf c = { 0 };
	int i;

	/* more streams with a message half-read than slots */
	c.len = 0;
	start(&c);
	for (i = 0; i <= RG_H2_STREAM_SLOTS; i++) {
		headers(&c, 1 + 2 * (uint32_t)i, 0);
		frame(&c, RG_H2_DATA, 0, 1 + 2 * (uint32_t)i, "\0\0\0\0\x10\x0a", 6);
	}
	expect_err("too many half-read messages", &c, RG_H2_ERR_STREAMS);
	/* ... but open streams without DATA, or between messages, need none */
	c.len = 0;
	start(&c);
	for (i = 0; i < 4 * RG_H2_STREAM_SLOTS; i++)
		headers(&c, 1 + 2 * (uint32_t)i, 0);
	for (i = 0; i < 4 * RG_H2_STREAM_SLOTS; i++) {
		struct buf m = { 0 }, gm = { 0 };
		int one = 1;

		build_req(&m, NULL, NULL, "many", one);
		grpc_msg(&gm, &m, 0);
		frame(&c, RG_H2_DATA, 0, 1 + 2 * (uint32_t)i, gm.p, gm.len);
		freebuf(&m);
		freebuf(&gm);
	}
	for (i = 0; i < 4 * RG_H2_STREAM_SLOTS; i++)
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1 + 2 * (uint32_t)i, NULL, 0);
	{
		struct outcome o;

		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == 0 && o.nev == 4 * RG_H2_STREAM_SLOTS,
		      "64 open streams, one message each: err %d, %d messages", o.err, o.nev);
	}
	/* ... but streams that ended free their slot */
	c.len = 0;
	start(&c);
	for (i = 0; i < 3 * RG_H2_STREAM_SLOTS; i++) {
		headers(&c, 1 + 2 * (uint32_t)i, 0);
		if (i % 2)
			frame(&c, RG_H2_DATA, 1, 1 + 2 * (uint32_t)i, NULL, 0);
		else
			frame(&c, RG_H2_RST_STREAM, 0, 1 + 2 * (uint32_t)i, "\0\0\0\x08", 4);
	}
	{
		struct outcome o;

		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == 0, "ended streams free their slots: err %d", o.err);
	}
	freebuf(&c);
}

static void test_preface_prefix(void)
{
	CHECK(rg_h2_preface_prefix((const __u8 *)"PRI * HT", 8), "preface prefix");
	CHECK(rg_h2_preface_prefix((const __u8 *)preface, 24), "whole preface");
	CHECK(!rg_h2_preface_prefix((const __u8 *)"POST /", 6), "HTTP/1 is not h2c");
	CHECK(!rg_h2_preface_prefix((const __u8 *)"PRI * HTTP/1.1", 14), "PRI with HTTP/1.1");
}

/* A long message of small frames, and one large message: the skip hints
 * must pass over Row bodies and frames a few bytes at a time. */
static void test_large(void)
{
	struct buf req = { 0 }, g = { 0 }, c = { 0 };
	struct outcome o, o2;
	int rows = 20000;
	size_t steps = 0, pos = 0;

	header(&req, NULL, NULL, "big");
	row_inserts(&req, &rows, 1);
	grpc_msg(&g, &req, 0);
	start(&c);
	headers(&c, 1, 0);
	data(&c, 1, &g, 16384, true);
	feed(&c, NULL, 0, true, &o);
	CHECK(o.err == 0 && o.nev == 1, "large: err %d events %d", o.err, o.nev);
	EXPECT_EV(&o, 0, 1, RG_GRPC_ROW_INSERTS, 20000, "big");
	feed(&c, NULL, 0, false, &o2);
	CHECK(same(&o, &o2), "large: skipping changes nothing");
	/* how many bytes still go through rg_h2_step */
	rg_h2_init(&conn);
	while (pos < c.len) {
		uint32_t n = rg_h2_skippable(&conn);

		if (n) {
			rg_h2_skip(&conn, n);
			pos += n;
			continue;
		}
		rg_h2_step(&conn, c.p[pos++]);
		steps++;
	}
	printf("large: %zu bytes, %zu stepped (%.0f%%)\n", c.len, steps,
	       100.0 * (double)steps / (double)c.len);
	CHECK(steps < c.len / 2, "skips pass over most bytes");
	freebuf(&req);
	freebuf(&g);
	freebuf(&c);
}

#ifndef RG_GRPC_FIXTURE_DIR
#define RG_GRPC_FIXTURE_DIR "tests/fixtures/grpc"
#endif

/* Connections recorded from the real clients (tests/fixtures/grpc/README.md). */
static void test_real_clients(void)
{
	static const struct {
		const char *file;
		int messages;
		uint8_t kind;
		uint64_t rows;
		const char *db;
	} fx[] = {
		{ "grpcgo_unary.bin", 3, RG_GRPC_ROW_INSERTS, 10, "go_fx" },
		{ "grpcgo_stream_columnar.bin", 6, RG_GRPC_INSERTS, 4, "go_fxs" },
		{ "grpcjs_unary.bin", 3, RG_GRPC_ROW_INSERTS, 10, "acme-js_fx" },
		{ "grpcjs_stream.bin", 6, RG_GRPC_ROW_INSERTS, 500, "js_fxs" },
	};
	size_t i;
	int e;

	for (i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		char path[512];
		struct buf b = { 0 };
		struct outcome o;
		uint8_t chunk[4096];
		size_t n;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", RG_GRPC_FIXTURE_DIR, fx[i].file);
		f = fopen(path, "rb");
		CHECK(f != NULL, "cannot open %s", path);
		if (!f)
			continue;
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			put(&b, chunk, n);
		fclose(f);
		feed(&b, NULL, 0, true, &o);
		CHECK(o.err == 0, "%s: err %d at %zu", fx[i].file, o.err, o.err_at);
		CHECK_EQ_U64(o.nev, fx[i].messages, fx[i].file);
		for (e = 0; e < o.nev; e++) {
			/* unary: one message per stream 1, 3, 5; streaming: 3 per stream */
			uint32_t sid = fx[i].messages == 3 ? 1 + 2 * (uint32_t)e :
							     1 + 2 * (uint32_t)(e / 3);

			EXPECT_EV(&o, e, sid, fx[i].kind, fx[i].rows, fx[i].db);
		}
		check_splits(fx[i].file, &b, &o);
		freebuf(&b);
	}
}

/*
 * A compressed message as rowgated counts it (--grpc-compressed debt,
 * user/decode/grpccount.c): after gzip or zstd, the same rows and the same
 * database key the kernel's walk finds in the plain message.
 */
static void count_compressed(const struct buf *req, enum rg_codec codec, const char *ce,
			     const char *want_db, uint64_t want_rows, const char *what)
{
	struct rg_row_counts counts = { 0 };
	struct rg_db_key key = { 0 };
	uint8_t *z = NULL;
	size_t zn = 0;
	int r;

	CHECK(rg_compress(codec, false, req->p, req->len, &z, &zn) == 0, "%s: compress", what);
	r = rg_count_payload(RG_PAYLOAD_GREPTIME_GRPC, ce, NULL, z, zn, NULL, &counts);
	CHECK(r == 0 && counts.err == RG_COUNT_OK, "%s %s: %s", what, ce, counts.err_msg);
	CHECK_EQ_U64(counts.rows, want_rows, what);
	if (!want_db) {
		CHECK_EQ_U64(counts.n_dbs, 0, what);
	} else if (!strcmp(want_db, "<too long>")) {
		CHECK_EQ_U64(counts.overflow_rows, want_rows, what);
	} else {
		CHECK_EQ_U64(counts.n_dbs, 1, what);
		uint32_t n = (uint32_t)strlen(counts.dbs[0].name);

		CHECK(rg_db_key_from_raw(&key, counts.dbs[0].name, n, RG_DB_NAME_MAX) >= 0 &&
			      !strcmp(key.name, want_db),
		      "%s %s: db %s, want %s", what, ce, key.name, want_db);
		CHECK_EQ_U64(counts.dbs[0].rows, want_rows, what);
	}
	free(z);
}

static void test_compressed_count(void)
{
	static const struct {
		const char *cat, *sch, *db, *want;
	} cases[] = {
		{ NULL, NULL, "greptime-logs", "logs" },
		{ NULL, NULL, "acme-Metrics", "acme-Metrics" },
		{ "Cat", "Sch", NULL, "cat-sch" },
		{ "acme", NULL, NULL, "acme-public" },
		{ NULL, NULL, NULL, "public" },
		{ NULL, "\xc3\x89t\xc3\xa9", NULL, "<too long>" },
	};
	/* GreptimeRequest { query = 3 {} }: not charged */
	static const uint8_t query[] = { 0x1a, 0x00 };
	struct buf req = { 0 }, q = { .p = (uint8_t *)query, .len = sizeof(query) };
	struct rg_row_counts counts = { 0 };
	uint32_t cols[] = { 100, 50 };
	uint8_t *z = NULL;
	size_t i, zn = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build_req(&req, cases[i].cat, cases[i].sch, cases[i].db, 7);
		count_compressed(&req, RG_CODEC_GZIP, "gzip", cases[i].want, 7, "row inserts");
		count_compressed(&req, RG_CODEC_ZSTD, "zstd", cases[i].want, 7, "row inserts");
		freebuf(&req);
	}
	memset(&req, 0, sizeof(req));
	header(&req, NULL, NULL, "col");
	inserts(&req, cols, 2);
	count_compressed(&req, RG_CODEC_GZIP, "gzip", "col", 150, "columnar inserts");
	count_compressed(&q, RG_CODEC_ZSTD, "zstd", NULL, 0, "a query");

	/* what the server cannot decode stores nothing: an error, not rows */
	CHECK(rg_compress(RG_CODEC_GZIP, false, req.p, req.len - 1, &z, &zn) == 0, "compress");
	CHECK(rg_count_payload(RG_PAYLOAD_GREPTIME_GRPC, "gzip", NULL, z, zn, NULL, &counts) &&
		      counts.err == RG_COUNT_E_MALFORMED,
	      "a message cut inside a field: %d", counts.err);
	memset(&counts, 0, sizeof(counts));
	z[zn / 2] ^= 0xff;
	CHECK(rg_count_payload(RG_PAYLOAD_GREPTIME_GRPC, "gzip", NULL, z, zn, NULL, &counts) &&
		      counts.err != RG_COUNT_OK,
	      "corrupt gzip: %d", counts.err);
	free(z);
	freebuf(&req);
}

/* ---- HPACK ---------------------------------------------------------------- */

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	unsigned int v;

	while (h[0] && h[1] && sscanf(h, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

/* RFC 7541 Appendix C.4 and C.6: the Huffman coding of their strings. */
static void test_huffman(void)
{
	static const struct {
		const char *s, *hex;
	} v[] = {
		{ "www.example.com", "f1e3c2e5f23a6ba0ab90f4ff" },
		{ "no-cache", "a8eb10649cbf" },
		{ "custom-key", "25a849e95ba97d7f" },
		{ "custom-value", "25a849e95bb8e8b4bf" },
		{ "302", "6402" },
		{ "307", "640eff" },
		{ "private", "aec3771a4b" },
		{ "Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff" },
		{ "https://www.example.com", "9d29ad171863c78f0b97c8e9ae82ae43d3" },
		{ "gzip", "9bd9ab" },
		{ "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
		  "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007" },
		{ ":path", "b958d33f" },
	};
	uint8_t want[128], got[128];
	size_t i, n;
	int len;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = unhex(v[i].hex, want);
		len = rg_huff_encode(v[i].s, strlen(v[i].s), got, sizeof(got), NULL);
		CHECK(len == (int)n && !memcmp(got, want, n), "huffman of '%s'", v[i].s);
	}
	CHECK(rg_huff_encode("www.example.com", 15, got, 11, NULL) == -1, "too small");
}

/* Feed one header block into t; the block's class, or the error. */
static int hpack_block(struct rg_hpack *t, const uint8_t *b, size_t n)
{
	size_t i;
	int r;

	rg_hpack_block_start(t);
	for (i = 0; i < n; i++) {
		r = rg_hpack_step(t, b[i]);
		if (r < 0)
			return r;
	}
	return rg_hpack_block_end(t);
}

/* RFC 7541 Appendix C.3-C.6: the shadow table's entries and size after
 * each block, raw and Huffman (whose decoded lengths are counted), with
 * eviction at a table size of 256 in C.5/C.6. */
static void test_hpack_rfc(void)
{
	static const struct {
		const char *what;
		uint32_t max;
		const char *hex[3];
		uint32_t count[3], used[3];
		int kind[3];
	} v[] = {
		{ "C.3",
		  4096,
		  { "828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
		    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565" },
		  { 1, 2, 3 },
		  { 57, 110, 164 },
		  { RG_H2_PATH_OTHER, RG_H2_PATH_OTHER, RG_H2_PATH_OTHER } },
		{ "C.4",
		  4096,
		  { "828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
		    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf" },
		  { 1, 2, 3 },
		  { 57, 110, 164 },
		  { RG_H2_PATH_OTHER, RG_H2_PATH_OTHER, RG_H2_PATH_OTHER } },
		{ "C.5",
		  256,
		  { "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
		    "4803333037c1c0bf",
		    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31" },
		  { 4, 4, 3 },
		  { 222, 222, 215 },
		  { RG_PROTO_GREPTIME_GRPC, RG_PROTO_GREPTIME_GRPC, RG_PROTO_GREPTIME_GRPC } },
		{ "C.6",
		  256,
		  { "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
		    "4883640effc1c0bf",
		    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007" },
		  { 4, 4, 3 },
		  { 222, 222, 215 },
		  { RG_PROTO_GREPTIME_GRPC, RG_PROTO_GREPTIME_GRPC, RG_PROTO_GREPTIME_GRPC } },
	};
	struct rg_hpack t;
	uint8_t b[256];
	size_t i, j, n;
	int r;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rg_hpack_init(&t);
		t.max = v[i].max;
		for (j = 0; j < 3; j++) {
			n = unhex(v[i].hex[j], b);
			r = hpack_block(&t, b, n);
			CHECK(r == v[i].kind[j], "%s block %zu: kind %d", v[i].what, j + 1, r);
			CHECK_EQ_U64(t.count, v[i].count[j], v[i].what);
			CHECK_EQ_U64(t.used, v[i].used[j], v[i].what);
		}
	}
	/* C.5.3's entries, newest first: set-cookie 98, content-encoding 52, date 65 */
	{
		static const uint16_t want[] = { 98, 52, 65 };

		for (j = 0; j < 3; j++) {
			int pos = rg_hpack_dyn(&t, (uint32_t)j + 1);

			CHECK(pos >= 0 && t.ent_size[pos] == want[j], "C.6.3 entry %zu", j + 1);
		}
		CHECK(rg_hpack_dyn(&t, 4) < 0, "entry 4 evicted");
	}
}

/* A reference model of the dynamic table the test's blocks build (RFC 7541
 * §4), to refer to entries by index. */
#define MODEL_MAX 256
static struct {
	const char *name[MODEL_MAX], *value[MODEL_MAX]; /* newest first */
	int n;
	size_t used, max;
} model;

static void m_reset(void)
{
	memset(&model, 0, sizeof(model));
	model.max = RG_HPACK_TABLE_MAX_BYTES;
}

static void m_evict(size_t extra)
{
	while (model.n && model.used + extra > model.max) {
		model.n--;
		model.used -= strlen(model.name[model.n]) + strlen(model.value[model.n]) + 32;
	}
}

static void m_add(const char *name, const char *value)
{
	size_t sz = strlen(name) + strlen(value) + 32;

	if (sz > model.max) {
		model.n = 0;
		model.used = 0;
		return;
	}
	m_evict(sz);
	memmove(model.name + 1, model.name, sizeof(model.name[0]) * (size_t)model.n);
	memmove(model.value + 1, model.value, sizeof(model.value[0]) * (size_t)model.n);
	model.name[0] = name;
	model.value[0] = value;
	model.n++;
	model.used += sz;
}

/* The index of the newest entry (name, value); 0 if none. */
static uint32_t m_idx(const char *name, const char *value)
{
	int i;

	for (i = 0; i < model.n; i++)
		if (!strcmp(model.name[i], name) && (!value || !strcmp(model.value[i], value)))
			return RG_HPACK_STATIC_ENTRIES + 1 + (uint32_t)i;
	return 0;
}

/* HPACK string: H bit + 7-bit prefixed length + bytes. */
static void hp_str(struct buf *b, const char *s, bool huff)
{
	uint8_t enc[4096];
	size_t n = strlen(s);
	int len = huff ? rg_huff_encode(s, n, enc, sizeof(enc), NULL) : (int)n;
	const void *p = huff ? (const void *)enc : (const void *)s;
	uint32_t v = (uint32_t)len;

	if (v < 0x7f) {
		put8(b, (uint8_t)((huff ? 0x80 : 0) | v));
	} else {
		put8(b, (uint8_t)((huff ? 0x80 : 0) | 0x7f));
		v -= 0x7f;
		while (v >= 0x80) {
			put8(b, (uint8_t)(v | 0x80));
			v >>= 7;
		}
		put8(b, (uint8_t)v);
	}
	put(b, p, (size_t)len);
}

/* An integer with an n-bit prefix after the flag bits `first`. */
static void hp_int(struct buf *b, uint8_t first, int nbits, uint32_t v)
{
	uint32_t mask = (1U << nbits) - 1;

	if (v < mask) {
		put8(b, (uint8_t)(first | v));
		return;
	}
	put8(b, (uint8_t)(first | mask));
	v -= mask;
	while (v >= 0x80) {
		put8(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put8(b, (uint8_t)v);
}

/* Literal :path: rep 0x40 (incremental), 0x00 (without), 0x10 (never);
 * name by static index 4, or a literal name (raw or Huffman). */
enum { NAME_IDX, NAME_RAW, NAME_HUFF };
static void hp_path(struct buf *b, uint8_t rep, int name, const char *path, bool huff)
{
	int nbits = rep == 0x40 ? 6 : 4;

	if (name == NAME_IDX) {
		hp_int(b, rep, nbits, 4);
	} else {
		put8(b, rep);
		hp_str(b, ":path", name == NAME_HUFF);
	}
	hp_str(b, path, huff);
	if (rep == 0x40)
		m_add(":path", path);
}

/* A block's common fields: :method POST, :scheme http, content-type
 * application/grpc indexed with incremental indexing, te trailers. */
static void hp_common(struct buf *b)
{
	put8(b, 0x83);
	put8(b, 0x86);
	put8(b, 0x40);
	hp_str(b, "content-type", true);
	hp_str(b, "application/grpc", true);
	put8(b, 0x40);
	hp_str(b, "te", false);
	hp_str(b, "trailers", true);
	m_add("content-type", "application/grpc");
	m_add("te", "trailers");
}

/* A gRPC message no GreptimeRequest decoder accepts (field 0): parsed as
 * one, it fails closed; passed unread, it does not. */
static const uint8_t other_msg[] = { 0, 0, 0, 0, 4, 0x02, 0x00, 0xff, 0xff };

struct hp_call {
	struct buf block;
	bool routed;
};

/* One call per block: HEADERS, then a message (routed: a write of 7 rows
 * to "hp"), END_STREAM. */
static void hp_calls(struct buf *c, struct hp_call *calls, int n, uint32_t *sid, int *routed)
{
	struct buf req = { 0 }, msg = { 0 };
	int i;

	build_req(&req, NULL, NULL, "hp", 7);
	grpc_msg(&msg, &req, 0);
	for (i = 0; i < n; i++) {
		frame(c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, *sid, calls[i].block.p,
		      calls[i].block.len);
		if (calls[i].routed) {
			frame(c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, *sid, msg.p, msg.len);
			(*routed)++;
		} else {
			frame(c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, *sid, other_msg,
			      sizeof(other_msg));
		}
		*sid += 2;
	}
	freebuf(&req);
	freebuf(&msg);
}

static void hp_free(struct hp_call *calls, int n)
{
	int i;

	for (i = 0; i < n; i++)
		freebuf(&calls[i].block);
}

/* Routed and other paths in every representation, referred to again from
 * the dynamic table, with eviction and size updates: a routed stream's
 * message is charged, another's DATA is passed unread. */
static void test_hpack_paths(void)
{
	struct hp_call k[24];
	struct buf c = { 0 };
	struct outcome o;
	uint32_t sid = 1;
	int n = 0, routed = 0, unrouted = 0, i;
	char big[4000];

	memset(k, 0, sizeof(k));
	m_reset();
#define ADD(routed_, stmt)                   \
	do {                                 \
		struct buf *b = &k[n].block; \
		hp_common(b);                \
		stmt;                        \
		k[n].routed = routed_;       \
		unrouted += !(routed_);      \
		n++;                         \
	} while (0)
	/* grpc-go: :path with incremental indexing, Huffman, name indexed */
	ADD(true, hp_path(b, 0x40, NAME_IDX, ROUTE_HANDLE, true));
	ADD(false, hp_path(b, 0x40, NAME_IDX, OTHER_PATH, true));
	/* later calls: the :path from the dynamic table */
	ADD(true, hp_int(b, 0x80, 7, m_idx(":path", ROUTE_HANDLE)));
	ADD(false, hp_int(b, 0x80, 7, m_idx(":path", OTHER_PATH)));
	ADD(true, hp_path(b, 0x00, NAME_RAW, ROUTE_HANDLE_REQUESTS, false));
	ADD(false, hp_path(b, 0x10, NAME_HUFF, "/other.v1.Svc/Handle", false));
	ADD(true, hp_path(b, 0x40, NAME_HUFF, ROUTE_HANDLE "?x=1", true));
	ADD(true, hp_path(b, 0x00, NAME_IDX, ROUTE_HANDLE "#f", false));
	ADD(true, hp_path(b, 0x10, NAME_IDX, ROUTE_HANDLE_REQUESTS "?", true));
	ADD(false, hp_path(b, 0x40, NAME_RAW, "/", false));
	ADD(false, put8(b, 0x84)); /* static :path / */
	ADD(false, hp_path(b, 0x00, NAME_IDX, "/greptime.v1.GreptimeDatabase/HandleX", false));
	ADD(false, hp_path(b, 0x00, NAME_IDX, "/greptime.v1.GreptimeDatabase/Handl", true));
	/* a literal whose name is a dynamic :path entry's */
	ADD(true, hp_int(b, 0x00, 4, m_idx(":path", NULL)); hp_str(b, ROUTE_HANDLE, false));
	ADD(false, hp_int(b, 0x40, 6, m_idx(":path", NULL)); hp_str(b, OTHER_PATH, false);
	    m_add(":path", OTHER_PATH));
	ADD(true, hp_int(b, 0x80, 7, m_idx(":path", ROUTE_HANDLE)));
	/* eviction: a 3,958-byte value (an entry of 4,000 bytes) leaves room
	 * for 96 bytes: the routed :path indexed before it is evicted by the
	 * next block's fields, the other one stays */
	memset(big, 'v', sizeof(big) - 1);
	big[3958] = 0;
	ADD(true, hp_path(b, 0x00, NAME_IDX, ROUTE_HANDLE, false); put8(b, 0x40 | 58);
	    hp_str(b, big, false); m_add("user-agent", big));
	ADD(false, hp_path(b, 0x40, NAME_IDX, OTHER_PATH, true));
	CHECK(m_idx(":path", ROUTE_HANDLE) == 0 && m_idx(":path", OTHER_PATH) != 0,
	      "model: the routed :path evicted, the other kept (n %d)", model.n);
	ADD(false, hp_int(b, 0x80, 7, m_idx(":path", OTHER_PATH)));
	/* a size update to 0 and back empties the table */
	{
		struct buf *b = &k[n].block;

		put8(b, 0x20);
		put8(b, 0x3f);
		put8(b, 0xe1);
		put8(b, 0x1f);
		model.max = 0;
		m_evict(0);
		model.max = RG_HPACK_TABLE_MAX_BYTES;
		hp_common(b);
		hp_path(b, 0x40, NAME_IDX, ROUTE_HANDLE, true);
		k[n++].routed = true;
	}
	ADD(true, hp_int(b, 0x80, 7, m_idx(":path", ROUTE_HANDLE)));
	ADD(false, hp_path(b, 0x40, NAME_IDX, OTHER_PATH, false));
	ADD(false, hp_int(b, 0x80, 7, m_idx(":path", OTHER_PATH)));
	ADD(true, hp_int(b, 0x80, 7, m_idx(":path", ROUTE_HANDLE)));
#undef ADD
	start(&c);
	hp_calls(&c, k, n, &sid, &routed);
	feed(&c, NULL, 0, true, &o);
	CHECK(o.err == 0, "err %d at %zu", o.err, o.err_at);
	CHECK_EQ_U64(o.nev, routed, "routed messages");
	for (i = 0; i < o.nev; i++)
		EXPECT_EV(&o, i, o.ev[i].sid, RG_GRPC_ROW_INSERTS, 7, "hp");
	CHECK_EQ_U64(o.unrouted, unrouted, "unrouted streams");
	{ /* which streams were routed */
		int e = 0;

		for (i = 0; i < n; i++) {
			if (!k[i].routed)
				continue;
			CHECK(e < o.nev && o.ev[e].sid == 1 + 2 * (uint32_t)i,
			      "call %d routed (event sid %u)", i, e < o.nev ? o.ev[e].sid : 0);
			e++;
		}
	}
	check_splits("hpack paths", &c, &o);
	freebuf(&c);

	/* every block cut into HEADERS + CONTINUATION at every offset, and
	 * into three fragments */
	{
		struct outcome want = o, got;
		size_t a, m;
		int bad = 0;

		for (i = 0; i < n && bad < 3; i++) {
			struct buf *blk = &k[i].block;

			for (a = 1; a < blk->len && bad < 3; a++) {
				struct buf d = { 0 };
				uint32_t s = 1;
				int r = 0;

				start(&d);
				hp_calls(&d, k, i, &s, &r);
				frame(&d, RG_H2_HEADERS, 0, s, blk->p, a);
				m = a + (blk->len - a) / 2;
				if (m > a && blk->len > 64) {
					frame(&d, RG_H2_CONTINUATION, 0, s, blk->p + a, m - a);
					frame(&d, RG_H2_CONTINUATION, RG_H2_FLAG_END_HEADERS, s,
					      blk->p + m, blk->len - m);
				} else {
					frame(&d, RG_H2_CONTINUATION, RG_H2_FLAG_END_HEADERS, s,
					      blk->p + a, blk->len - a);
				}
				frame(&d, RG_H2_DATA, RG_H2_FLAG_END_STREAM, s,
				      k[i].routed ? (const void *)"" : (const void *)other_msg,
				      k[i].routed ? 0 : sizeof(other_msg));
				s += 2;
				hp_calls(&d, k + i + 1, n - i - 1, &s, &r);
				feed(&d, NULL, 0, true, &got);
				if (got.err || got.unrouted != want.unrouted ||
				    got.nev != want.nev - (k[i].routed ? 1 : 0)) {
					bad++;
					CHECK(0,
					      "block %d cut at %zu: err %d events %d unrouted %u",
					      i, a, got.err, got.nev, got.unrouted);
				}
				freebuf(&d);
			}
		}
		check_count++;
	}
	hp_free(k, n);
}

#define DB_HDR "x-greptime-db-name"

/* A block of `:method POST`, `:path` (indexed into the table) and one
 * x-greptime-db-name field: literal name (rep: 0x40 incremental, 0x00
 * without, 0x10 never indexed) or, with name_idx, a name by index. */
static void db_block(struct buf *b, uint8_t rep, uint8_t name_idx, const char *db, bool huff)
{
	b->len = 0;
	put(b, "\x83", 1);
	put(b, "\x04", 1); /* :path, literal without indexing, static name 4 */
	hp_str(b, OTHER_PATH, false);
	if (name_idx) {
		/* 6-bit index prefix with incremental indexing, else 4 */
		uint8_t max = rep == 0x40 ? 0x3f : 0x0f;

		if (name_idx < max)
			put(b, &(uint8_t){ (uint8_t)(rep | name_idx) }, 1);
		else
			put(b, (uint8_t[]){ (uint8_t)(rep | max), (uint8_t)(name_idx - max) }, 2);
	} else {
		put(b, &rep, 1);
		hp_str(b, DB_HDR, huff);
	}
	hp_str(b, db, huff);
}

static void check_block_db(struct rg_hpack *t, const struct buf *b, const char *want,
			   const char *what)
{
	const char *got;
	uint32_t len = 0;
	int r = hpack_block(t, b->p, b->len);

	CHECK(r >= 0, "%s: block refused (%d)", what, r);
	got = rg_hpack_block_db(t, &len);
	if (!want) {
		CHECK(!got, "%s: no database expected, got %.*s", what, (int)len, got ? got : "");
		return;
	}
	CHECK(got && len == strlen(want) && !memcmp(got, want, len) && !got[len],
	      "%s: database %s, got %.*s", what, want, got ? (int)len : 4, got ? got : "none");
}

/* OTLP/gRPC exports: each stream's messages are passed unread (no
 * GreptimeRequest inside) and named the database of its block's
 * x-greptime-db-name (greptime-public without one); a block whose value
 * the shadow cannot give fails closed. */
#define OTLP_METRICS_PATH "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
#define OTLP_LOGS_PATH	  "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
#define FLIGHT_PATH "/arrow.flight.protocol.FlightService/DoPut"
/* Start c over: a new connection, the parser's state reset. */
static void restart(struct buf *c)
{
	m_reset();
	c->len = 0;
	start(c);
}

/* A request's block: path (a literal without indexing) and, unless db is
 * NULL, one x-greptime-db-name literal without indexing. */
static void request_block(struct buf *b, const char *path, const char *db, bool huff)
{
	b->len = 0;
	hp_common(b);
	hp_path(b, 0x00, NAME_IDX, path, huff);
	if (!db)
		return;
	put8(b, 0x00);
	hp_str(b, DB_HDR, huff);
	hp_str(b, db, huff);
}

static void test_h2_otlp(void)
{
	struct buf c = { 0 }, b = { 0 }, msg = { 0 }, big = { 0 };
	struct outcome o;
	uint8_t payload[300];
	int h;

	memset(payload, 0x0a, sizeof(payload)); /* not a GreptimeRequest */
	put(&msg, (uint8_t[]){ 0, 0, 0, 0, 9 }, 5);
	put(&msg, payload, 9);
	put(&big, (uint8_t[]){ 0, 0, 0, 0x01, 0x2c }, 5);
	put(&big, payload, sizeof(payload));
	for (h = 0; h < 2; h++) {
		restart(&c);
		/* grpc-go: the path and the database with incremental indexing */
		b.len = 0;
		hp_common(&b);
		hp_path(&b, 0x40, NAME_IDX, OTLP_METRICS_PATH, h);
		put8(&b, 0x40);
		hp_str(&b, DB_HDR, h);
		hp_str(&b, "greptime-tenant", h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 1, b.p, b.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, msg.p, msg.len);
		/* both indexed; a message over two frames, then another */
		b.len = 0;
		put(&b, "\x83\x86\xbf\xbe\xc1\xc0", 6);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 3, b.p, b.len);
		frame(&c, RG_H2_DATA, 0, 3, big.p, 100);
		frame(&c, RG_H2_DATA, 0, 3, big.p + 100, big.len - 100);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 3, msg.p, msg.len);
		/* logs, no database: the server's default */
		request_block(&b, OTLP_LOGS_PATH, NULL, h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 5, b.p, b.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 5, msg.p, msg.len);
		/* a Flight DoPut: its database the same way, two messages */
		request_block(&b, FLIGHT_PATH, "greptime-bulk", h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 7, b.p, b.len);
		frame(&c, RG_H2_DATA, 0, 7, msg.p, msg.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 7, big.p, big.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == 0, "otlp (%s): err %d", h ? "huffman" : "raw", o.err);
		CHECK_EQ_U64(o.nev, 6, "otlp and flight messages");
		CHECK(o.ev[4].sid == 7 && o.ev[4].hdr == RG_PROTO_ARROW_FLIGHT &&
			      !strcmp(o.ev[4].db, "bulk") && o.ev[5].sid == 7 &&
			      o.ev[5].hdr == RG_PROTO_ARROW_FLIGHT && !strcmp(o.ev[5].db, "bulk"),
		      "flight stream 7: %u %s", o.ev[4].hdr, o.ev[4].db);
		CHECK(o.ev[0].sid == 1 && o.ev[0].hdr == RG_PROTO_OTLP_METRICS &&
			      !strcmp(o.ev[0].db, "tenant"),
		      "otlp stream 1: %u %u %s", o.ev[0].sid, o.ev[0].hdr, o.ev[0].db);
		CHECK(o.ev[1].sid == 3 && o.ev[1].hdr == RG_PROTO_OTLP_METRICS &&
			      !strcmp(o.ev[1].db, "tenant") && o.ev[2].sid == 3 &&
			      !strcmp(o.ev[2].db, "tenant"),
		      "otlp stream 3, indexed: %s %s", o.ev[1].db, o.ev[2].db);
		CHECK(o.ev[3].sid == 5 && o.ev[3].hdr == RG_PROTO_OTLP_LOGS &&
			      !strcmp(o.ev[3].db, "public"),
		      "otlp stream 5, no database: %u %s", o.ev[3].hdr, o.ev[3].db);
		CHECK_EQ_U64(o.ev[0].rows, 0, "otlp rows are rowgated's to count");
		check_splits("otlp", &c, &o);

		/* two values in one block: refused */
		restart(&c);
		request_block(&b, OTLP_METRICS_PATH, "a", h);
		put8(&b, 0x00);
		hp_str(&b, DB_HDR, h);
		hp_str(&b, "b", h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 1, b.p, b.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, msg.p, msg.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_HEADER_DB && o.nev == 0, "otlp, two databases: err %d",
		      o.err);
		/* an empty value: refused */
		restart(&c);
		request_block(&b, OTLP_METRICS_PATH, "", h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 1, b.p, b.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, msg.p, msg.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_HEADER_DB, "otlp, empty database: err %d", o.err);

		/* RG_H2_HDB_SLOTS exports open at once; one more fails closed,
		 * unless one of them ended first */
		for (int end_one = 0; end_one < 2; end_one++) {
			uint32_t sid = 1;

			restart(&c);
			for (int k = 0; k <= RG_H2_HDB_SLOTS; k++, sid += 2) {
				request_block(&b, OTLP_METRICS_PATH, NULL, h);
				frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, sid, b.p, b.len);
				if (end_one && k == 0)
					frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, sid, msg.p,
					      msg.len);
			}
			feed(&c, NULL, 0, true, &o);
			CHECK(o.err == (end_one ? 0 : RG_H2_ERR_HEADER_DB),
			      "otlp, %d exports open%s: err %d", RG_H2_HDB_SLOTS + 1,
			      end_one ? ", the first ended" : "", o.err);
		}

		/* an indexed value the shadow lost (its slot reused by eight
		 * newer values): the export fails closed */
		restart(&c);
		b.len = 0;
		hp_common(&b);
		hp_path(&b, 0x00, NAME_IDX, OTHER_PATH, h);
		put8(&b, 0x40);
		hp_str(&b, DB_HDR, h);
		hp_str(&b, "kept", h);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS | RG_H2_FLAG_END_STREAM, 1, b.p,
		      b.len);
		for (int k = 0; k < RG_HPACK_DB_SLOTS; k++) {
			char v[16];

			snprintf(v, sizeof(v), "v%d", k);
			b.len = 0;
			put(&b, "\x83\x86", 2);
			hp_path(&b, 0x00, NAME_IDX, OTHER_PATH, h);
			put8(&b, 0x00);
			hp_str(&b, DB_HDR, h);
			hp_str(&b, v, h);
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS | RG_H2_FLAG_END_STREAM,
			      (uint32_t)(3 + 2 * k), b.p, b.len);
		}
		b.len = 0;
		put(&b, "\x83\x86", 2);
		hp_path(&b, 0x00, NAME_IDX, OTLP_METRICS_PATH, h);
		put8(&b, 0xbe); /* the newest entry: the lost value */
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 19, b.p, b.len);
		frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 19, msg.p, msg.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_HEADER_DB && o.nev == 0, "otlp, a lost value: err %d",
		      o.err);
	}
	freebuf(&c);
	freebuf(&b);
	freebuf(&msg);
	freebuf(&big);
}

/* A block's `:path` kind for every sequence of up to three `:path`s, as
 * the set of their kinds decides it: an uncounted method's anywhere, or
 * an export's or DoPut's beside another kind, refused; only unrouted
 * ones, passed; else (none, or a routed one, beside unrouted ones or not)
 * followed, unary when a unary method's is its only kind. */
static void test_hpack_block_kinds(void)
{
	static const uint8_t kinds[] = {
		RG_H2_PATH_OTHER,
		RG_PROTO_GREPTIME_GRPC,
		RG_PROTO_GREPTIME_GRPC | RG_H2_PATH_UNARY,
		RG_H2_PATH_UNCOUNTED,
		RG_PROTO_OTLP_METRICS,
		RG_PROTO_OTLP_LOGS,
		RG_PROTO_OTLP_TRACES,
		RG_PROTO_ARROW_FLIGHT,
	};
	const int nk = (int)sizeof(kinds);

	for (int code = 0; code < 4 * nk * nk * nk; code++) {
		int n = code % 4, c = code / 4, want;
		uint32_t set = 0, hdr;
		bool unary = false, want_unary;
		struct rg_hpack t;

		rg_hpack_init(&t);
		rg_hpack_block_start(&t);
		for (int i = 0; i < n; i++, c /= nk) {
			t.kind = kinds[c % nk];
			set |= 1U << (t.kind & RG_H2_PATH_KIND);
			unary |= t.kind & RG_H2_PATH_UNARY;
			rg_hpack_block_path(&t);
		}
		hdr = set & ((1U << RG_PROTO_OTLP_METRICS) | (1U << RG_PROTO_OTLP_LOGS) |
			     (1U << RG_PROTO_OTLP_TRACES) | (1U << RG_PROTO_ARROW_FLIGHT));
		if ((set & (1U << RG_H2_PATH_UNCOUNTED)) ||
		    (hdr && (set != hdr || (hdr & (hdr - 1)))))
			want = RG_H2_PATH_UNCOUNTED;
		else if (hdr)
			want = __builtin_ctz(hdr);
		else if (set == 1U << RG_H2_PATH_OTHER)
			want = RG_H2_PATH_OTHER;
		else
			want = RG_PROTO_GREPTIME_GRPC;
		want_unary = set == 1U << RG_PROTO_GREPTIME_GRPC && unary;
		CHECK(rg_hpack_block_end(&t) == want && rg_hpack_block_unary(&t) == want_unary,
		      "block of %d paths (code %d): kind %d unary %d, want %d %d", n, code,
		      rg_hpack_block_end(&t), rg_hpack_block_unary(&t), want, want_unary);
	}
}

/* x-greptime-db-name read as the server reads it: raw and Huffman names and
 * values, kept with dynamic-table entries and referred to by index, lost
 * once its slot is reused, and refused when ambiguous or too long. */
static void test_hpack_db(void)
{
	struct rg_hpack t;
	struct buf b = { 0 };
	char name[80];
	uint32_t s, v;
	int i;

	/* the decoding tables agree with the encoder's on every symbol */
	for (s = 0; s < 256; s++) {
		v = rg_huff_code[s] << (RG_HPACK_HUFF_WINDOW_BITS - rg_huff_bits[s]);
		CHECK(rg_hpack_code_bits(v) == rg_huff_bits[s], "code length of symbol %u", s);
		CHECK(rg_hpack_huff_sym(v, rg_huff_bits[s]) == s, "symbol %u decoded", s);
	}
	{
		uint8_t code[32];

		CHECK(rg_huff_encode(DB_HDR, strlen(DB_HDR), code, sizeof(code), NULL) ==
				      RG_HPACK_DB_NAME_HUFF &&
			      !memcmp(code, rg_hpack_db_name_huff, RG_HPACK_DB_NAME_HUFF),
		      "Huffman wire form of " DB_HDR);
	}

	for (i = 0; i < 2; i++) {
		bool huff = i;

		rg_hpack_init(&t);
		/* grpc-go: literal with incremental indexing, then indexed (62) */
		db_block(&b, 0x40, 0, "tenant_a", huff);
		check_block_db(&t, &b, "tenant_a", "literal, incremental indexing");
		b.len = 0;
		put(&b, "\x83\xbe", 2);
		check_block_db(&t, &b, "tenant_a", "indexed dynamic entry");
		/* a new value under the entry's name (index 62) */
		db_block(&b, 0x00, 62, "greptime-Public_2", huff);
		check_block_db(&t, &b, "greptime-Public_2", "name by index, without indexing");
		db_block(&b, 0x10, 0, "a", huff);
		check_block_db(&t, &b, "a", "never indexed");
		/* no field, a field named alike but not the same */
		b.len = 0;
		put(&b, "\x83", 1);
		check_block_db(&t, &b, NULL, "no field");
		b.len = 0;
		put(&b, "\x00", 1);
		hp_str(&b, "x-greptime-db-namf", huff);
		hp_str(&b, "x", huff);
		check_block_db(&t, &b, NULL, "another name");
		b.len = 0;
		put(&b, "\x00", 1);
		hp_str(&b, "x-greptime-db-name-x", huff);
		hp_str(&b, "x", huff);
		check_block_db(&t, &b, NULL, "a longer name");
		/* two fields: the server takes one, which one is not ours to guess */
		db_block(&b, 0x00, 0, "one", huff);
		put(&b, "\xbe", 1);
		check_block_db(&t, &b, NULL, "two fields");
		CHECK(t.blk_db == RG_HPACK_DB_MANY, "two fields: many");
		/* 63 bytes fit a key, 64 do not */
		memset(name, 'd', 63);
		name[63] = 0;
		db_block(&b, 0x00, 0, name, huff);
		check_block_db(&t, &b, name, "63 bytes");
		name[63] = 'd';
		name[64] = 0;
		db_block(&b, 0x00, 0, name, huff);
		check_block_db(&t, &b, NULL, "64 bytes");
		/* the same value again takes its slot, not a new one */
		b.len = 0;
		put(&b, "\x83\xbe", 2);
		check_block_db(&t, &b, "tenant_a", "entry still known");
		{
			uint8_t next = t.db_next;

			db_block(&b, 0x00, 0, "tenant_a", huff);
			check_block_db(&t, &b, "tenant_a", "same value");
			CHECK(t.db_next == next, "same value: no new slot");
		}
		/* eight new values reuse the entry's slot: the entry is lost */
		for (s = 0; s < RG_HPACK_DB_SLOTS; s++) {
			snprintf(name, sizeof(name), "db%u", s);
			db_block(&b, 0x00, 0, name, huff);
			check_block_db(&t, &b, name, "a new value");
		}
		b.len = 0;
		put(&b, "\x83\xbe", 2);
		check_block_db(&t, &b, NULL, "entry lost");
		CHECK(t.blk_db == RG_HPACK_DB_LOST, "entry lost: lost");
		/* a new entry of the name takes a slot again */
		db_block(&b, 0x40, 0, "tenant_b", huff);
		check_block_db(&t, &b, "tenant_b", "a new entry");
		b.len = 0;
		put(&b, "\x83\xbe", 2);
		check_block_db(&t, &b, "tenant_b", "the new entry, indexed");
		b.len = 0;
		put(&b, "\x83\xbf", 2); /* 63: the lost one */
		check_block_db(&t, &b, NULL, "the lost entry, indexed");
	}
	/* bad Huffman padding in the value: the server's decoder refuses it */
	rg_hpack_init(&t);
	b.len = 0;
	put(&b, "\x00", 1);
	hp_str(&b, DB_HDR, false);
	put(&b, "\x81\x00", 2);
	CHECK(hpack_block(&t, b.p, b.len) == RG_HPACK_ERR, "bad Huffman padding refused");
	free(b.p);
}

/* Header blocks the server's decoder refuses, or the shadow cannot follow:
 * fail closed. */
static void test_hpack_errors(void)
{
	static const struct {
		const char *what;
		const char *hex;
		int err;
	} v[] = {
		{ "index 0", "80", RG_H2_ERR_HPACK },
		{ "dynamic index past the table", "be", RG_H2_ERR_HPACK },
		{ "name index past the table", "7e0161", RG_H2_ERR_HPACK },
		{ "size update over 4096", "3fe21f", RG_H2_ERR_HPACK },
		{ "block ends inside a string", "4405", RG_H2_ERR_HPACK },
		{ "block ends inside an integer", "ff", RG_H2_ERR_HPACK },
		{ "huffman padding of 8 bits", "418308ff", RG_H2_ERR_HPACK },
		{ "huffman padding not ones", "418200fe", RG_H2_ERR_HPACK },
		{ "EOS in a huffman string", "4184ffffffff", RG_H2_ERR_HPACK },
		{ "integer too large", "3fffffffff0f", RG_H2_ERR_HPACK },
	};
	uint8_t blk[32];
	size_t i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct buf c = { 0 };
		struct outcome o;

		n = unhex(v[i].hex, blk);
		start(&c);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS | RG_H2_FLAG_END_STREAM, 1, blk, n);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == v[i].err, "%s: err %d", v[i].what, o.err);
		freebuf(&c);
	}
	/* more open unrouted streams than the set holds */
	{
		struct buf c = { 0 }, b = { 0 };
		struct outcome o;
		uint32_t s;

		hp_common(&b);
		hp_path(&b, 0x00, NAME_IDX, OTHER_PATH, false);
		start(&c);
		for (s = 1; s <= 2 * RG_H2_UNROUTED_SLOTS + 1; s += 2)
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, s, b.p, b.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_UNROUTED, "17 unrouted streams: err %d", o.err);
		CHECK_EQ_U64(o.unrouted, RG_H2_UNROUTED_SLOTS + 1, "counted");
		freebuf(&c);
		/* RST_STREAM frees an entry */
		start(&c);
		for (s = 1; s <= 2 * RG_H2_UNROUTED_SLOTS + 1; s += 2) {
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, s, b.p, b.len);
			if (s == 5)
				frame(&c, RG_H2_RST_STREAM, 0, s, "\0\0\0\x08", 4);
		}
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == 0, "16 open after a reset: err %d", o.err);
		freebuf(&c);
		freebuf(&b);
	}
}

/* Streams of the methods whose rows the kernel cannot count are refused at
 * the end of their header block (RG_H2_ERR_UNCOUNTED), in every coding of
 * their :path (raw, Huffman, with a query, a path longer than a key, from
 * the dynamic table), at every split; GreptimeDatabase and other methods
 * on the same connection before them are followed or passed as before. */
static void test_uncounted(void)
{
	static const char *const paths[] = {
		"/opentelemetry.proto.experimental.arrow.v1.ArrowTracesService/ArrowTraces",
		"/opentelemetry.proto.experimental.arrow.v1.ArrowMetricsService/ArrowMetrics#f",
		"/opentelemetry.proto.experimental.arrow.v1.ArrowMetricsService/ArrowMetrics",
		"/opentelemetry.proto.experimental.arrow.v1.ArrowLogsService/ArrowLogs?q",
	};
	struct buf req = { 0 }, msg = { 0 };
	size_t i;
	int h, n = 0;

	CHECK(RG_H2_ROUTE_PATHS * RG_H2_ROUTE_KEYS_PER_PATH + 1 <= RG_H2_MAX_ROUTES,
	      "h2_routes holds every key");
	{ /* the prefix lengths fit the kernel's list */
		uint8_t lens[64];
		int nl = 0, k, j;

		for (k = 0; k < nroute_keys; k++) {
			if (!(route_keys[k].coding & RG_H2_ROUTE_PREFIX))
				continue;
			for (j = 0; j < nl && lens[j] != route_keys[k].len; j++)
				;
			if (j == nl && nl < 64)
				lens[nl++] = route_keys[k].len;
		}
		CHECK(nl <= RG_H2_ROUTE_LENS, "%d prefix lengths, the kernel lists %d", nl,
		      RG_H2_ROUTE_LENS);
	}
	build_req(&req, NULL, NULL, "uc", 5);
	grpc_msg(&msg, &req, 0);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (h = 0; h < 2; h++) {
			struct buf c = { 0 }, b = { 0 }, g = { 0 }, o_blk = { 0 };
			struct outcome o;
			char what[160];

			m_reset();
			start(&c);
			/* a GreptimeDatabase write and another service first */
			hp_common(&g);
			hp_path(&g, 0x40, NAME_IDX, ROUTE_HANDLE, h);
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 1, g.p, g.len);
			frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 1, msg.p, msg.len);
			hp_path(&o_blk, 0x00, NAME_IDX, OTHER_PATH, h);
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 3, o_blk.p, o_blk.len);
			frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 3, other_msg,
			      sizeof(other_msg));
			/* the uncounted call, indexed: then named by its index */
			hp_path(&b, 0x40, h ? NAME_HUFF : NAME_RAW, paths[i], h);
			frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS, 5, b.p, b.len);
			frame(&c, RG_H2_DATA, RG_H2_FLAG_END_STREAM, 5, msg.p, msg.len);
			snprintf(what, sizeof(what), "%s (%s)", paths[i], h ? "huffman" : "raw");
			feed(&c, NULL, 0, true, &o);
			CHECK(o.err == RG_H2_ERR_UNCOUNTED, "%s: err %d", what, o.err);
			CHECK_EQ_U64(o.nev, 1, "the GreptimeDatabase write before it");
			CHECK_EQ_U64(o.unrouted, 1, "the other call before it");
			if (o.err == RG_H2_ERR_UNCOUNTED)
				check_splits(what, &c, &o);
			n++;
			freebuf(&c);
			freebuf(&b);
			freebuf(&g);
			freebuf(&o_blk);
		}
	}
	{ /* DoPut's block split by CONTINUATION, and with no body */
		struct buf c = { 0 }, b = { 0 };
		struct outcome o;

		m_reset();
		start(&c);
		hp_common(&b);
		hp_path(&b, 0x40, NAME_IDX, paths[2], true);
		/* its first block ends in another fragment: CONTINUATION */
		frame(&c, RG_H2_HEADERS, 0, 1, b.p, b.len - 3);
		frame(&c, RG_H2_CONTINUATION, RG_H2_FLAG_END_HEADERS, 1, b.p + b.len - 3, 3);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_UNCOUNTED, "DoPut across CONTINUATION: err %d", o.err);
		CHECK(o.err_at >= c.len - 3, "refused at the block's end (at %zu of %zu)", o.err_at,
		      c.len);
		/* with END_STREAM on HEADERS (no body) too */
		freebuf(&c);
		start(&c);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_END_HEADERS | RG_H2_FLAG_END_STREAM, 1, b.p,
		      b.len);
		feed(&c, NULL, 0, true, &o);
		CHECK(o.err == RG_H2_ERR_UNCOUNTED, "DoPut with no body: err %d", o.err);
		freebuf(&c);
		freebuf(&b);
	}
	CHECK(n == 8, "cases run: %d", n);
	freebuf(&req);
	freebuf(&msg);
}

int main(void)
{
	routes_init();
	test_huffman();
	test_hpack_rfc();
	test_hpack_paths();
	test_hpack_errors();
	test_hpack_db();
	test_hpack_block_kinds();
	test_h2_otlp();
	test_preface_prefix();
	test_unary_and_db_resolution();
	test_db_nul();
	test_unary_first_message();
	test_merge_rules();
	test_connection();
	test_malformed();
	test_malformed_protobuf();
	test_stream_slots();
	test_groups();
	test_large();
	test_real_clients();
	test_compressed_count();
	test_stash();
	test_early_compressed();
	test_short_tail();
	test_refused_slots();
	test_uncounted();
	return check_report("test_h2");
}
