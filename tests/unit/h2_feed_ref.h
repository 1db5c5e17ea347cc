// SPDX-License-Identifier: MIT
/* Feeding a client's bytes to rowgate/h2/frame.h as the HTTP/2 verdict does, and
 * recording what the parser found, for unit/test_h2 and fuzz_h2.  Include
 * after rowgate/h2/frame.h.  H2_REF_ON_MESSAGE(h, at), when defined, runs at each
 * completed message before it is recorded. */
#ifndef ROWGATE_H2_FEED_REF_H
#define ROWGATE_H2_FEED_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct event {
	uint32_t sid;
	uint64_t rows;
	uint8_t kind, compressed, hdr;
	char db[RG_DB_NAME_MAX];
	size_t at; /* byte offset of the message's last byte */
};

#define MAX_EVENTS 64
struct outcome {
	int err;       /* 0 or the first negative result */
	size_t err_at; /* byte offset of the error */
	int nev;
	struct event ev[MAX_EVENTS];
	int frames;
	uint32_t unrouted; /* streams found unrouted */
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
#ifdef H2_REF_ON_MESSAGE
	H2_REF_ON_MESSAGE(h, at);
#endif
	if (o->nev == MAX_EVENTS)
		return;
	s = &h->s[h->done_slot];
	e = &o->ev[o->nev++];
	e->sid = h->done_sid;
	e->rows = s->m.rows;
	e->kind = s->m.kind;
	e->compressed = s->m.compressed;
	e->hdr = s->m.hdr;
	e->at = at;
	if (rg_grpc_db_key(&s->m, &k) < 0)
		strcpy(e->db, "<too long>"); /* or not resolvable: refused */
	else
		memcpy(e->db, k.name, sizeof(e->db));
}

/* Feed p[0..n) in pieces ending at the cuts (sorted), taking the skip
 * hints when skip is set but never across a piece's end, the state moved
 * between pieces (the kernel keeps it in a map). */
static void feed_pieces(struct rg_h2_conn *h, const uint8_t *p, size_t n, const size_t *cuts,
			int ncuts, bool skip, struct outcome *o)
{
	static struct rg_h2_conn moved;
	size_t pos = 0;
	int c;

	memset(o, 0, sizeof(*o));
	rg_h2_init(h);
	for (c = 0; c <= ncuts && !o->err; c++) {
		size_t end = c < ncuts ? cuts[c] : n;

		while (pos < end && !o->err) {
			uint32_t k = skip ? rg_h2_skippable(h) : 0;

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

#endif
