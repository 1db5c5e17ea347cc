// SPDX-License-Identifier: MIT
/* The HTTP/2 + HPACK + gRPC + GreptimeRequest parser the HTTP/2 verdict
 * runs (rowgate/h2.h, rowgate/hpack.h): fed one byte at a time from one
 * piece, against the same bytes cut into pieces as skbs cut them, taking
 * the skip hints the verdict takes, with the state copied between pieces
 * (the kernel keeps it in a map).  Both must find the same frames, the
 * same completed messages (stream, kind, rows, database) and the same
 * error at the same byte; and every message event names a live slot.
 *
 * Input: one flags byte (bit 0: the connection preface and an empty
 * SETTINGS come first, so the fuzzer starts past them), one byte with the
 * number of cuts (up to 8), two bytes per cut (an offset, taken modulo the
 * stream's length), then the client's bytes. */
#include <stdbool.h>
#include "fuzz.h"

struct rg_hpack;
static int test_route(const struct rg_hpack *t);
#define RG_HPACK_ROUTE(t) test_route(t)

#include "rowgate/h2.h"
#include "rowgate/hpack_huffman.h"
#include "h2_routes_ref.h"

#define MAX_EVENTS 64
#define MAX_CUTS   8

struct event {
	uint32_t sid;
	uint64_t rows;
	uint8_t kind, compressed;
	char db[RG_DB_NAME_MAX];
	size_t at;
};

struct outcome {
	int err;
	size_t err_at;
	int nev;
	struct event ev[MAX_EVENTS];
	uint64_t frames;
	uint32_t unrouted;
};

static void on_result(const struct rg_h2_conn *h, struct outcome *o, int r, size_t at)
{
	const struct rg_h2_stream *s;
	struct event *e;
	struct rg_db_key k;

	if (r < 0) {
		o->err = r;
		o->err_at = at;
		return;
	}
	if (r == RG_H2_EV_FRAME)
		o->frames++;
	if (r != RG_H2_EV_MESSAGE)
		return;
	FUZZ_ASSERT(h->done_slot >= 0 && h->done_slot < RG_H2_STREAM_SLOTS,
		    "message event at %zu with slot %d", at, h->done_slot);
	s = &h->s[h->done_slot];
	/* the slot is freed at END_STREAM, its message still readable */
	FUZZ_ASSERT(s->id == h->done_sid || s->id == 0,
		    "message event at %zu: slot holds stream %u, not %u", at, s->id, h->done_sid);
	if (o->nev == MAX_EVENTS)
		return;
	e = &o->ev[o->nev++];
	e->sid = h->done_sid;
	e->rows = s->m.rows;
	e->kind = s->m.kind;
	e->compressed = s->m.compressed;
	e->at = at;
	if (rg_grpc_db_key(&s->m, &k) < 0)
		strcpy(e->db, "<unresolved>");
	else
		memcpy(e->db, k.name, sizeof(e->db));
}

/* Every byte through rg_h2_step, in one piece: the reference. */
static void feed_bytes(const uint8_t *p, size_t n, struct rg_h2_conn *h, struct outcome *o)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	rg_h2_init(h);
	for (i = 0; i < n && !o->err; i++)
		on_result(h, o, rg_h2_step(h, p[i]), i);
	o->unrouted = h->unrouted_streams;
}

/* As the verdict feeds it: pieces ending at the cuts, skip hints taken
 * but never across a piece's end, the state moved between pieces. */
static void feed_pieces(const uint8_t *p, size_t n, const size_t *cuts, int ncuts,
			struct rg_h2_conn *h, struct outcome *o)
{
	static struct rg_h2_conn moved;
	size_t pos = 0;
	int c;

	memset(o, 0, sizeof(*o));
	rg_h2_init(h);
	for (c = 0; c <= ncuts && !o->err; c++) {
		size_t end = c < ncuts ? cuts[c] : n;

		while (pos < end && !o->err) {
			uint32_t k = rg_h2_skippable(h);

			if (k) {
				if (k > end - pos)
					k = (uint32_t)(end - pos);
				rg_h2_skip(h, k);
				pos += k;
				continue;
			}
			on_result(h, o, rg_h2_step(h, p[pos]), pos);
			pos++;
		}
		memcpy(&moved, h, sizeof(moved));
		memset(h, 0x5a, sizeof(*h));
		memcpy(h, &moved, sizeof(*h));
	}
	o->unrouted = h->unrouted_streams;
}

static void expect_same(const struct outcome *a, const struct outcome *b, int ncuts)
{
	int i;

	FUZZ_ASSERT(a->err == b->err && a->err_at == b->err_at,
		    "error %d at %zu whole, %d at %zu in %d cuts", a->err, a->err_at, b->err,
		    b->err_at, ncuts);
	FUZZ_ASSERT(a->frames == b->frames, "%llu frames whole, %llu in pieces",
		    (unsigned long long)a->frames, (unsigned long long)b->frames);
	FUZZ_ASSERT(a->nev == b->nev, "%d messages whole, %d in pieces", a->nev, b->nev);
	FUZZ_ASSERT(a->unrouted == b->unrouted, "%u unrouted streams whole, %u in pieces",
		    a->unrouted, b->unrouted);
	for (i = 0; i < a->nev; i++) {
		const struct event *x = &a->ev[i], *y = &b->ev[i];

		FUZZ_ASSERT(x->sid == y->sid && x->rows == y->rows && x->kind == y->kind &&
				    x->compressed == y->compressed && x->at == y->at &&
				    !strcmp(x->db, y->db),
			    "message %d: stream %u kind %u rows %llu db %s at %zu whole; stream "
			    "%u kind %u rows %llu db %s at %zu in pieces",
			    i, x->sid, x->kind, (unsigned long long)x->rows, x->db, x->at, y->sid,
			    y->kind, (unsigned long long)y->rows, y->db, y->at);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t start[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
				       "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
	static struct rg_h2_conn h;
	static struct outcome whole, pieces;
	struct fuzz_in in = { data, size };
	size_t cuts[MAX_CUTS], n, pre;
	uint8_t flags = fuzz_u8(&in);
	int ncuts = fuzz_u8(&in) % (MAX_CUTS + 1), i, j;
	uint16_t raw[MAX_CUTS];
	uint8_t *p;

	routes_init();
	for (i = 0; i < ncuts; i++)
		raw[i] = (uint16_t)(fuzz_u8(&in) << 8 | fuzz_u8(&in));
	pre = flags & 1 ? sizeof(start) - 1 : 0;
	n = pre + in.n;
	if (n < 2)
		return 0;
	p = malloc(n); /* exactly n: a read past it is an ASan report */
	if (!p)
		abort();
	memcpy(p, start, pre);
	memcpy(p + pre, in.p, in.n);
	for (i = 0; i < ncuts; i++)
		cuts[i] = 1 + raw[i] % (n - 1);
	for (i = 0; i < ncuts; i++)
		for (j = i + 1; j < ncuts; j++)
			if (cuts[j] < cuts[i]) {
				size_t t = cuts[i];

				cuts[i] = cuts[j];
				cuts[j] = t;
			}
	feed_bytes(p, n, &h, &whole);
	feed_pieces(p, n, cuts, ncuts, &h, &pieces);
	expect_same(&whole, &pieces, ncuts);
	free(p);
	return 0;
}
