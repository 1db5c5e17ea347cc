// SPDX-License-Identifier: MIT
/* The streaming head parser (rowgate/http.h) and database resolution.
 *
 * The kernel keeps the parser state in a map between skbs, so a head split
 * at any offset, the state copied between the pieces, must end exactly as
 * the whole head does.  On a finished head, the generic resolver and the
 * padded one the BPF program uses must agree for every route kind, which
 * relies on each captured value being zero past its length.  Taking runs a
 * word at a time, as the verdict does, must end exactly as byte steps do.
 *
 * Input: one flags byte (bit 0: first request on the connection), then the
 * bytes of the connection. */
#include "rowgate/http.h"
#include "fuzz.h"

struct run {
	struct rg_http_head h;
	int result;
	size_t used;
};

static void feed(struct run *r, const uint8_t *p, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to && r->result == RG_HEAD_MORE; i++) {
		r->result = rg_http_head_step(&r->h, p[i]);
		r->used = i + 1;
	}
}

/* The verdict's way: runs taken a word at a time by
 * rg_http_head_take_word(), the rest byte by byte. */
static void feed_words(struct run *r, const uint8_t *p, size_t n)
{
	size_t i = 0;
	__u32 k;
	__u64 x;

	while (i < n && r->result == RG_HEAD_MORE) {
		if (i + 8 <= n) {
			memcpy(&x, p + i, 8);
			k = rg_http_head_take_word(&r->h, x);
			FUZZ_ASSERT(k <= 8, "took %u bytes", k);
			if (k) {
				i += k;
				r->used = i;
				continue;
			}
		}
		r->result = rg_http_head_step(&r->h, p[i++]);
		r->used = i;
	}
}

static void check_value(const struct rg_db_value *v, const char *what)
{
	size_t i;

	for (i = v->len; i < sizeof(v->raw); i++)
		FUZZ_ASSERT(v->raw[i] == 0, "%s: byte %zu past len %u is %#x", what, i, v->len,
			    (unsigned char)v->raw[i]);
}

static void check_done(const struct rg_http_head *h)
{
	static const __u32 routes[] = { 0, RG_ROUTE_BUCKET_PARAM, RG_ROUTE_TENANT,
					RG_ROUTE_BUCKET_PARAM | RG_ROUTE_TENANT };
	size_t i;

	check_value(&h->db_header, "db header");
	check_value(&h->db_query, "db query");
	check_value(&h->bucket_query, "bucket query");
	check_value(&h->tenant, "tenant");
	FUZZ_ASSERT(memchr(h->content_type, 0, sizeof(h->content_type)), "content type");
	FUZZ_ASSERT(memchr(h->content_encoding, 0, sizeof(h->content_encoding)), "content encoding");
	FUZZ_ASSERT(!(h->chunked && h->has_content_length), "chunked with a length");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		struct rg_db_key a, b;
		int la, lb;

		memset(&a, 0x55, sizeof(a));
		memset(&b, 0xaa, sizeof(b));
		la = rg_http_head_db(h, routes[i], &a);
		lb = rg_http_head_db_padded(h, routes[i], &b);
		FUZZ_ASSERT(la == lb, "route %#x: generic %d, padded %d", routes[i], la, lb);
		if (la < 0)
			continue;
		FUZZ_ASSERT(la < RG_DB_NAME_MAX, "key length %d", la);
		FUZZ_ASSERT(memcmp(&a, &b, sizeof(a)) == 0, "route %#x: keys differ", routes[i]);
		FUZZ_ASSERT(strlen(a.name) <= (size_t)la, "key %.*s longer than %d", la, a.name, la);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	/* the first byte: first request, the port's profile, after a POST */
	uint8_t sel = fuzz_u8(&in);
	bool first = sel & 1, after_post = sel & 0x80;
	uint8_t profile = (uint8_t)((sel >> 1) % RG_PROFILE_MAX);
	const uint8_t *p = in.p;
	size_t n = in.n, cut, step;
	struct run whole, split;

	rg_http_head_init(&whole.h, first, profile, after_post);
	whole.result = RG_HEAD_MORE;
	whole.used = 0;
	feed(&whole, p, 0, n);
	FUZZ_ASSERT(whole.used <= RG_HEAD_MAX_BYTES + 1, "used %zu", whole.used);
	if (whole.result == RG_HEAD_DONE)
		check_done(&whole.h);

	rg_http_head_init(&split.h, first, profile, after_post);
	split.result = RG_HEAD_MORE;
	split.used = 0;
	feed_words(&split, p, n);
	FUZZ_ASSERT(split.result == whole.result && split.used == whole.used,
		    "words: result %d after %zu bytes, bytes %d after %zu", split.result,
		    split.used, whole.result, whole.used);
	FUZZ_ASSERT(memcmp(&split.h, &whole.h, sizeof(whole.h)) == 0, "words: state differs");

	/* every offset of short inputs, a spread of them in long ones */
	step = n <= 512 ? 1 : n / 61 + 1;
	for (cut = 0; cut <= n; cut += step) {
		struct rg_http_head *saved = malloc(sizeof(*saved));

		if (!saved)
			abort();
		rg_http_head_init(&split.h, first, profile, after_post);
		split.result = RG_HEAD_MORE;
		split.used = 0;
		feed(&split, p, 0, cut);
		memcpy(saved, &split.h, sizeof(*saved));
		memset(&split.h, 0xa5, sizeof(split.h));
		memcpy(&split.h, saved, sizeof(split.h));
		free(saved);
		feed(&split, p, cut, n);
		FUZZ_ASSERT(split.result == whole.result && split.used == whole.used,
			    "cut %zu: result %d after %zu bytes, whole %d after %zu", cut,
			    split.result, split.used, whole.result, whole.used);
		FUZZ_ASSERT(memcmp(&split.h, &whole.h, sizeof(whole.h)) == 0,
			    "cut %zu: state differs", cut);
	}
	return 0;
}
