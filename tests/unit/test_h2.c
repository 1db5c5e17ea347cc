// SPDX-License-Identifier: MIT
/* The streaming HTTP/2 + gRPC + GreptimeRequest parser (rowgate/h2.h):
 * connections built frame by frame, fed whole, split at every byte offset
 * and at random offsets (with and without the skip hints), and malformed
 * input that must be refused with the right error. */
#include <stdlib.h>
#include <string.h>
#include "rowgate/h2.h"
#include "check.h"

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

static void put8(struct buf *b, uint8_t c) { put(b, &c, 1); }

static void varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		put8(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put8(b, (uint8_t)v);
}

static void key(struct buf *b, uint32_t field, uint8_t wire) { varint(b, (uint64_t)field << 3 | wire); }

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

static void frame(struct buf *b, uint8_t type, uint8_t flags, uint32_t sid,
		  const void *payload, size_t len)
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
/* an HPACK block as grpc-go sends it; the parser never decodes it */
static const uint8_t hpack[] = { 0x83, 0x86, 0x44, 0x0f, '/', 'g', 'r', 'e', 'p',
				 't', 'i', 'm', 'e', '.', 'v', '1', '/', 'H', 0x5f,
				 0x8b, 0x1d, 0x75, 0xd0, 0x62, 0x0d, 0x26, 0x3d,
				 0x4c, 0x4d, 0x65, 0x64 };

static void start(struct buf *b)
{
	static const uint8_t settings[] = { 0, 4, 0, 0, 0x40, 0, 0, 5, 0, 0, 0x40, 0 };

	put(b, preface, 24);
	frame(b, RG_H2_SETTINGS, 0, 0, settings, sizeof(settings));
	frame(b, RG_H2_WINDOW_UPDATE, 0, 0, "\0\x0f\0\x01", 4);
}

static void headers(struct buf *b, uint32_t sid, uint8_t flags)
{
	frame(b, RG_H2_HEADERS, flags | RG_H2_FLAG_END_HEADERS, sid, hpack, sizeof(hpack));
}

/* DATA frames of at most chunk payload bytes carrying data[0..n) */
static void data(struct buf *b, uint32_t sid, const struct buf *d, size_t chunk,
		 bool end_stream)
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

struct event {
	uint32_t sid;
	uint64_t rows;
	uint8_t kind, compressed;
	char db[RG_DB_NAME_MAX];
};

#define MAX_EVENTS 64
struct outcome {
	int err;           /* 0 or the first negative result */
	size_t err_at;     /* byte offset of the error */
	int nev;
	struct event ev[MAX_EVENTS];
	int frames;
};

static struct rg_h2_conn conn;

static void on_result(struct outcome *o, int r, size_t at)
{
	if (r < 0) {
		o->err = r;
		o->err_at = at;
		return;
	}
	if (r == RG_H2_EV_FRAME)
		o->frames++;
	if (r == RG_H2_EV_MESSAGE && o->nev < MAX_EVENTS) {
		const struct rg_h2_stream *s = &conn.s[conn.done_slot];
		struct event *e = &o->ev[o->nev++];
		struct rg_db_key k;

		e->sid = conn.done_sid;
		e->rows = s->m.rows;
		e->kind = s->m.kind;
		e->compressed = s->m.compressed;
		if (rg_grpc_db_key(&s->m, &k) < 0)
			strcpy(e->db, "<too long>"); /* or not resolvable: refused */
		else
			memcpy(e->db, k.name, sizeof(e->db));
	}
}

/* Feed b split at the given offsets (sorted), using the skip hints when
 * skip is set, but never across a chunk end. */
static void feed(const struct buf *b, const size_t *cuts, int ncuts, bool skip,
		 struct outcome *o)
{
	size_t pos = 0;
	int c;

	memset(o, 0, sizeof(*o));
	rg_h2_init(&conn);
	for (c = 0; c <= ncuts && !o->err; c++) {
		size_t end = c < ncuts ? cuts[c] : b->len;

		while (pos < end && !o->err) {
			uint32_t n = skip ? rg_h2_skippable(&conn) : 0;

			if (n) {
				if (n > end - pos)
					n = (uint32_t)(end - pos);
				rg_h2_skip(&conn, n);
				pos += n;
				continue;
			}
			on_result(o, rg_h2_step(&conn, b->p[pos]), pos);
			pos++;
		}
	}
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	int i;

	if (a->err != b->err || a->nev != b->nev || a->frames != b->frames)
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
		for (k = 1; k < b->len && bad < 3;
		     k += k < SPLIT_ALL_BYTES ? 1 : 1 + b->len / 400) {
			feed(b, &k, 1, s, &got);
			if (!same(&got, want)) {
				bad++;
				CHECK(0, "%s: split at %zu (skip %d): err %d events %d",
				      what, k, s, got.err, got.nev);
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

#define EXPECT_EV(o, i, sid_, kind_, rows_, db_)                                   \
	do {                                                                       \
		CHECK((o)->nev > (i), "event %d missing (have %d)", i, (o)->nev);   \
		if ((o)->nev > (i)) {                                              \
			CHECK_EQ_U64((o)->ev[i].sid, sid_, "stream");               \
			CHECK_EQ_U64((o)->ev[i].kind, kind_, "kind");               \
			CHECK_EQ_U64((o)->ev[i].rows, rows_, "rows");               \
			CHECK(strcmp((o)->ev[i].db, db_) == 0, "db %s, want %s",    \
			      (o)->ev[i].db, db_);                                  \
		}                                                                  \
	} while (0)

/* ---- tests ---------------------------------------------------------------- */

static void build_req(struct buf *req, const char *cat, const char *sch, const char *db,
		      int rows)
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
		{ NULL, "\xc3\x89t\xc3\xa9", NULL, "<too long>" }, /* Unicode lower-casing: refused */
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
	frame(&c, RG_H2_HEADERS, RG_H2_FLAG_PRIORITY, 1, "\0\0\0\0\x0f" "\x83\x86\x44", 8);
	frame(&c, RG_H2_CONTINUATION, 0, 1, hpack, 10);
	frame(&c, RG_H2_CONTINUATION, RG_H2_FLAG_END_HEADERS, 1, hpack + 10, sizeof(hpack) - 10);
	/* HEADERS(3), padded and with priority */
	{
		struct buf h = { 0 };

		put8(&h, 4);
		put(&h, "\x80\0\0\x01\x10", 5);
		put(&h, hpack, sizeof(hpack));
		put(&h, pad, 4);
		frame(&c, RG_H2_HEADERS, RG_H2_FLAG_PADDED | RG_H2_FLAG_PRIORITY |
			  RG_H2_FLAG_END_HEADERS, 3, h.p, h.len);
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
			frame(&c, RG_H2_DATA, RG_H2_FLAG_PADDED |
				  (off + n == b.len ? RG_H2_FLAG_END_STREAM : 0), 3, d.p, d.len);
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
	struct buf c = { 0 }, req = { 0 }, g = { 0 };
	int i;

#define CASE(what, err, build)          \
	do {                            \
		c.len = 0;              \
		build;                  \
		expect_err(what, &c, err); \
	} while (0)

	CASE("HTTP/1 request", RG_H2_ERR_PREFACE, put(&c, "POST /write HTTP/1.1\r\n", 22));
	CASE("preface typo", RG_H2_ERR_PREFACE, put(&c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\n\n", 24));
	CASE("no SETTINGS first", RG_H2_ERR_PREFACE,
	     (put(&c, preface, 24), headers(&c, 1, 0)));
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
	     (start(&c), frame(&c, RG_H2_HEADERS, 0, 1, hpack, 4),
	      frame(&c, 0xfa, 0, 1, "x", 1)));
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

	/* protobuf the server's decoder refuses */
	static const struct {
		const char *what;
		const char *bytes;
		size_t len;
	} pb[] = {
		{ "header as a varint", "\x08\x01", 2 },
		{ "row_inserts as fixed32", "\x35\0\0\0\0", 5 },
		{ "field number 0", "\x02\x00", 2 },
		{ "group wire type", "\x0b\x0c", 2 },
		{ "length past the message", "\x0a\x05" "ab", 4 },
		{ "varint of 11 bytes", "\x50\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12 },
		{ "key without a value", "\x50", 1 },
		{ "nested length past its parent", "\x32\x03\x0a\x05" "a", 5 },
		{ "dbname as a varint", "\x0a\x02\x20\x01", 4 },
		{ "row_count as a string", "\x12\x06\x0a\x04\x22\x02" "ab", 8 },
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
	freebuf(&g);
#undef CASE
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
			uint32_t sid = fx[i].messages == 3 ? 1 + 2 * (uint32_t)e : 1 + 2 * (uint32_t)(e / 3);

			EXPECT_EV(&o, e, sid, fx[i].kind, fx[i].rows, fx[i].db);
		}
		check_splits(fx[i].file, &b, &o);
		freebuf(&b);
	}
}

int main(void)
{
	test_preface_prefix();
	test_unary_and_db_resolution();
	test_merge_rules();
	test_connection();
	test_malformed();
	test_large();
	test_real_clients();
	return check_report("test_h2");
}
