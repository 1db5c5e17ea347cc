// SPDX-License-Identifier: MIT
/* The HTTP/2 + HPACK + gRPC + GreptimeRequest parser the HTTP/2 verdict
 * runs (rowgate/h2/frame.h, rowgate/h2/hpack.h): fed one byte at a time from one
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

#include "rowgate/h2/frame.h"
#include "rowgate/h2/hpack_huffman.h"
#include "h2_routes_ref.h"

/* every message event names a live or just-freed slot of its stream */
#define H2_REF_ON_MESSAGE(h, at)                                                        \
	do {                                                                            \
		FUZZ_ASSERT((h)->done_slot >= 0 && (h)->done_slot < RG_H2_STREAM_SLOTS, \
			    "message event at %zu with slot %d", at, (h)->done_slot);   \
		/* the slot is freed at END_STREAM, its message still readable */       \
		FUZZ_ASSERT((h)->s[(h)->done_slot].id == (h)->done_sid ||               \
				    (h)->s[(h)->done_slot].id == 0,                     \
			    "message event at %zu: slot holds stream %u, not %u", at,   \
			    (h)->s[(h)->done_slot].id, (h)->done_sid);                  \
	} while (0)
#include "h2_feed_ref.h"

#define MAX_CUTS 8

static void expect_same(const struct outcome *a, const struct outcome *b, int ncuts)
{
	int i;

	FUZZ_ASSERT(a->err == b->err && a->err_at == b->err_at,
		    "error %d at %zu whole, %d at %zu in %d cuts", a->err, a->err_at, b->err,
		    b->err_at, ncuts);
	FUZZ_ASSERT(a->frames == b->frames, "%d frames whole, %d in pieces", a->frames, b->frames);
	FUZZ_ASSERT(a->nev == b->nev, "%d messages whole, %d in pieces", a->nev, b->nev);
	FUZZ_ASSERT(a->unrouted == b->unrouted, "%u unrouted streams whole, %u in pieces",
		    a->unrouted, b->unrouted);
	for (i = 0; i < a->nev; i++) {
		const struct event *x = &a->ev[i], *y = &b->ev[i];

		FUZZ_ASSERT(x->sid == y->sid && x->rows == y->rows && x->kind == y->kind &&
				    x->compressed == y->compressed && x->hdr == y->hdr && x->at == y->at &&
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
	feed_pieces(&h, p, n, NULL, 0, false, &whole); /* every byte stepped */
	feed_pieces(&h, p, n, cuts, ncuts, true, &pieces);
	expect_same(&whole, &pieces, ncuts);
	free(p);
	return 0;
}
