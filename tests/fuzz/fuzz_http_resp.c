// SPDX-License-Identifier: MIT
/* The response framing parser (rowgate/http_resp.h) as the egress program
 * drives it: byte steps with body bytes skipped where rg_resp_skippable()
 * allows, against byte steps alone; and on responses built from the input
 * (status, Content-Length, chunked or none, header noise), the boundaries
 * the parser finds against the ones that were built.
 *
 * Input: one byte of mode and skip policy, one byte of "answers to HEAD"
 * bits, then raw bytes (mode 0) or a script of responses (mode 1). */
#include "rowgate/http_resp.h"
#include "fuzz.h"

#define MAX_EVENTS 256
#define BUILT_MAX  (1 << 16)

struct event {
	size_t at;  /* the byte that produced it */
	int result; /* RG_RESP_HEAD, _DONE, _INTERIM, _ERR */
	__u16 status;
};

struct run {
	struct event ev[MAX_EVENTS];
	size_t n;
};

static void record(struct run *r, size_t at, int result, __u16 status)
{
	if (r->n < MAX_EVENTS)
		r->ev[r->n++] = (struct event){ at, result, status };
}

/* Feed p[0, n): skip_every = 0 steps every byte, else skips up to
 * skip_every bytes at a time where the parser allows.  head_bits: bit k set
 * = the k-th response answers a HEAD. */
static void drive(const uint8_t *p, size_t n, unsigned skip_every, unsigned head_bits,
		  struct run *out)
{
	struct rg_resp r;
	unsigned responses = 0;
	__u16 status = 0; /* of the response being read */
	size_t i = 0;

	memset(out, 0, sizeof(*out));
	rg_resp_init(&r);
	while (i < n) {
		__u64 can = skip_every ? rg_resp_skippable(&r) : 0;
		int res;

		if (can) {
			__u64 k = can < skip_every ? can : skip_every;

			if (k > n - i)
				k = n - i;
			res = rg_resp_skip(&r, k);
			i += k;
			if (res == RG_RESP_DONE)
				record(out, i - 1, res, status);
			continue;
		}
		res = rg_resp_step(&r, p[i]);
		if (res == RG_RESP_HEAD) {
			status = r.status;
			record(out, i, res, status);
			res = rg_resp_begin_body(&r, (head_bits >> (responses % 8)) & 1);
			responses++;
			if (res == RG_RESP_DONE)
				record(out, i, res, status);
		} else if (res != RG_RESP_MORE) {
			record(out, i, res, res == RG_RESP_DONE ? status : 0);
			if (res == RG_RESP_ERR)
				return; /* the caller stops tracking */
		}
		i++;
	}
}

/* ---- mode 1: responses built from a script ---- */

struct built {
	uint8_t b[BUILT_MAX];
	size_t len;
	struct event want[MAX_EVENTS]; /* HEAD and DONE, as the parser should see them */
	size_t n;
	bool open_ended; /* the last response is read until close */
};

static void put(struct built *o, const void *s, size_t n)
{
	if (o->len + n > BUILT_MAX)
		n = BUILT_MAX - o->len;
	memcpy(o->b + o->len, s, n);
	o->len += n;
}

static void puts_(struct built *o, const char *s)
{
	put(o, s, strlen(s));
}

static void expect(struct built *o, int result, __u16 status)
{
	if (o->n < MAX_EVENTS && o->len)
		o->want[o->n++] = (struct event){ o->len - 1, result, status };
}

static const __u16 statuses[] = { 100, 200, 204, 304, 400, 401, 403, 404, 413, 429, 500 };

/* One response per 4 script bytes: status, framing, body size, noise. */
static void build(struct fuzz_in *in, unsigned head_bits, struct built *o)
{
	unsigned k = 0;

	memset(o, 0, sizeof(*o));
	while (in->n >= 4 && o->len < BUILT_MAX - 4096 && o->n < MAX_EVENTS - 4 &&
	       !o->open_ended) {
		__u16 status = statuses[fuzz_u8(in) % (sizeof(statuses) / sizeof(statuses[0]))];
		uint8_t framing = fuzz_u8(in) % 4, size = fuzz_u8(in), noise = fuzz_u8(in);
		bool head = status >= 200 && ((head_bits >> (k % 8)) & 1);
		char line[96];
		size_t j;

		snprintf(line, sizeof(line), "HTTP/1.%c %u %s\r\n", noise & 1 ? '0' : '1', status,
			 noise & 2 ? "" : "Reason Phrase");
		puts_(o, line);
		if (noise & 4)
			puts_(o, "Date: Tue, 01 Dec 2026 17:00:00 GMT\r\n");
		if (noise & 8)
			puts_(o, "X-Content-Length-Not: 12\r\ncontent-TYPE: text/plain\r\n");
		if (status == 100) {
			puts_(o, "\r\n");
			expect(o, RG_RESP_INTERIM, 0);
			continue; /* interim: not a response of its own */
		}
		k++;
		if (framing == 0 || rg_resp_status_bodyless(status)) {
			/* no body: bodyless status, or Content-Length 0 */
			if (!rg_resp_status_bodyless(status))
				puts_(o, noise & 16 ? "content-length: 0\r\n" : "Content-Length:0\r\n");
			puts_(o, "\r\n");
			expect(o, RG_RESP_HEAD, status);
			expect(o, RG_RESP_DONE, status);
			continue;
		}
		if (framing == 1) {
			snprintf(line, sizeof(line), "Content-Length: %u\r\n\r\n", size + 1u);
			puts_(o, line);
			expect(o, RG_RESP_HEAD, status);
			if (head) {
				expect(o, RG_RESP_DONE, status);
				continue;
			}
			for (j = 0; j <= size; j++)
				put(o, &"HTTP/1.1 200 \r\n"[j % 15], 1); /* looks like a head */
			expect(o, RG_RESP_DONE, status);
			continue;
		}
		if (framing == 2) {
			puts_(o, noise & 32 ? "Transfer-Encoding: gzip, chunked\r\n\r\n" :
					      "transfer-encoding:  Chunked \r\n\r\n");
			expect(o, RG_RESP_HEAD, status);
			if (head) {
				expect(o, RG_RESP_DONE, status);
				continue;
			}
			for (j = 0; j < (size & 3u); j++) {
				snprintf(line, sizeof(line), "%x%s\r\n", size % 23 + 1,
					 noise & 64 ? ";ext=1" : "");
				puts_(o, line);
				memset(line, 'x', sizeof(line));
				put(o, line, size % 23 + 1);
				puts_(o, "\r\n");
			}
			puts_(o, noise & 128 ? "0\r\nTrailer: t\r\n\r\n" : "0\r\n\r\n");
			expect(o, RG_RESP_DONE, status);
			continue;
		}
		/* no framing header: the body runs until the connection closes */
		puts_(o, "\r\n");
		expect(o, RG_RESP_HEAD, status);
		if (head) {
			expect(o, RG_RESP_DONE, status);
			continue;
		}
		put(o, "400 Bad Request", 15);
		o->open_ended = true;
	}
}

static void check_same(const struct run *a, const struct run *b, const char *what)
{
	size_t i;

	FUZZ_ASSERT(a->n == b->n, "%s: %zu events, %zu stepping", what, b->n, a->n);
	for (i = 0; i < a->n; i++)
		FUZZ_ASSERT(a->ev[i].at == b->ev[i].at && a->ev[i].result == b->ev[i].result &&
				    a->ev[i].status == b->ev[i].status,
			    "%s: event %zu at %zu result %d status %u, stepping at %zu result %d "
			    "status %u",
			    what, i, b->ev[i].at, b->ev[i].result, b->ev[i].status, a->ev[i].at,
			    a->ev[i].result, a->ev[i].status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct built built;
	static struct run stepped, skipped;
	struct fuzz_in in = { data, size };
	uint8_t mode = fuzz_u8(&in);
	unsigned head_bits = fuzz_u8(&in);
	unsigned skip_every = (mode >> 1) % 64 + 1;
	size_t i;

	if (!(mode & 1)) {
		drive(in.p, in.n, 0, head_bits, &stepped);
		drive(in.p, in.n, skip_every, head_bits, &skipped);
		check_same(&stepped, &skipped, "raw");
		return 0;
	}
	build(&in, head_bits, &built);
	drive(built.b, built.len, 0, head_bits, &stepped);
	drive(built.b, built.len, skip_every, head_bits, &skipped);
	check_same(&stepped, &skipped, "built");
	FUZZ_ASSERT(stepped.n == built.n, "built %zu events, parser found %zu", built.n,
		    stepped.n);
	for (i = 0; i < built.n; i++)
		FUZZ_ASSERT(stepped.ev[i].at == built.want[i].at &&
				    stepped.ev[i].result == built.want[i].result &&
				    stepped.ev[i].status == built.want[i].status,
			    "event %zu: built at %zu result %d status %u, parser at %zu result %d "
			    "status %u",
			    i, built.want[i].at, built.want[i].result, built.want[i].status,
			    stepped.ev[i].at, stepped.ev[i].result, stepped.ev[i].status);
	return 0;
}
