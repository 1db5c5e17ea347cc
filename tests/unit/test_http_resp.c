// SPDX-License-Identifier: MIT
/* The response framing parser on streams of responses, fed as the sk_msg
 * program feeds it (a byte step, a word of head bytes skipped, or a skip
 * over body bytes), split into two
 * sends at every offset and into one send per byte: the events must not
 * depend on where the sends split. */
#include <string.h>
#include "rowgate/http_resp.h"
#include "check.h"

#define MAX_EVENTS 32

struct events {
	int n;
	int err;
	char s[MAX_EVENTS * 8];
};

/* Per stream: which requests were HEAD, in order. */
struct feeder {
	struct rg_resp r;
	const char *head_reqs; /* 'H' for HEAD, any other byte otherwise */
	int next_req;
	struct events ev;
};

static void event(struct events *e, const char *what, unsigned status)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%s%u ", what, status);
	if (strlen(e->s) + strlen(buf) < sizeof(e->s))
		strcat(e->s, buf);
	e->n++;
}

/* One send of len bytes, walked as the BPF loop walks it. */
static void feed(struct feeder *f, const char *p, size_t len)
{
	size_t off = 0;

	while (off < len && !f->ev.err) {
		__u64 skip = rg_resp_skippable(&f->r), x;
		int res;

		if (skip) {
			if (skip > len - off)
				skip = len - off;
			res = rg_resp_skip(&f->r, skip);
			off += skip;
		} else if (len - off >= 8 && (memcpy(&x, p + off, 8), rg_resp_skip_word(&f->r, x))) {
			off += 8;
			res = RG_RESP_MORE;
		} else {
			res = rg_resp_step(&f->r, (__u8)p[off++]);
		}
		if (res == RG_RESP_HEAD) {
			bool head = f->head_reqs && f->head_reqs[f->next_req] == 'H';

			f->next_req++;
			event(&f->ev, "H", f->r.status);
			res = rg_resp_begin_body(&f->r, head);
		}
		if (res == RG_RESP_DONE)
			event(&f->ev, "D", 0);
		else if (res == RG_RESP_INTERIM)
			event(&f->ev, "I", 0);
		else if (res == RG_RESP_ERR)
			f->ev.err = 1;
	}
}

static void run(const char *stream, const char *head_reqs, struct events *out)
{
	struct feeder f = { .head_reqs = head_reqs };

	rg_resp_init(&f.r);
	feed(&f, stream, strlen(stream));
	*out = f.ev;
}

/* Every split into two sends, and byte by byte, gives the same events. */
static void check_splits(const char *name, const char *stream, const char *head_reqs,
			 const char *want, int want_err)
{
	size_t len = strlen(stream), k;
	struct events whole;

	run(stream, head_reqs, &whole);
	CHECK(strcmp(whole.s, want) == 0 && whole.err == want_err,
	      "%s: events \"%s\" err %d, want \"%s\" err %d", name, whole.s, whole.err, want,
	      want_err);
	for (k = 1; k < len; k++) {
		struct feeder f = { .head_reqs = head_reqs };

		rg_resp_init(&f.r);
		feed(&f, stream, k);
		feed(&f, stream + k, len - k);
		CHECK(strcmp(f.ev.s, whole.s) == 0 && f.ev.err == whole.err,
		      "%s split at %zu: \"%s\" vs \"%s\"", name, k, f.ev.s, whole.s);
	}
	{
		struct feeder f = { .head_reqs = head_reqs };

		rg_resp_init(&f.r);
		for (k = 0; k < len; k++)
			feed(&f, stream + k, 1);
		CHECK(strcmp(f.ev.s, whole.s) == 0 && f.ev.err == whole.err,
		      "%s byte by byte: \"%s\" vs \"%s\"", name, f.ev.s, whole.s);
	}
}

static void test_framing(void)
{
	/* what influxd 1.x and victoria-metrics (Go net/http) send */
	check_splits("204 then 401 then 200 with length",
		     "HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\n"
		     "X-Influxdb-Version: 1.8.10\r\n\r\n"
		     "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
		     "Content-Length: 34\r\n\r\n{\"error\":\"unable to parse auth\"}\n\n"
		     "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
		     NULL, "H204 D0 H401 D0 H200 D0 ", 0);
	check_splits("chunked with extension and trailer",
		     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		     "5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n"
		     "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		     NULL, "H200 D0 H404 D0 ", 0);
	check_splits("100 continue is interim",
		     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\n"
		     "Content-Length: 3\r\n\r\nno\n",
		     NULL, "I0 H403 D0 ", 0);
	check_splits("HEAD answer has no body despite its length",
		     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
		     "HTTP/1.1 204 No Content\r\n\r\n",
		     "HP", "H200 D0 H204 D0 ", 0);
	check_splits("304 and 204 carry no body",
		     "HTTP/1.1 304 Not Modified\r\n\r\n"
		     "HTTP/1.0 204\r\n\r\n",
		     NULL, "H304 D0 H204 D0 ", 0);
	check_splits("no framing: until close",
		     "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nanything HTTP/1.1 204 x\r\n\r\n",
		     NULL, "H200 ", 0);
	check_splits("a coding other than chunked last: until close",
		     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", NULL,
		     "H200 ", 0);
	check_splits("chunked wins over a length",
		     "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: Chunked\r\n\r\n"
		     "3\r\nabc\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		     NULL, "H200 D0 H204 D0 ", 0);
	check_splits("length with blanks", "HTTP/1.1 200 OK\r\nContent-Length:  4 \r\n\r\nabcd",
		     NULL, "H200 D0 ", 0);
}

static void test_errors(void)
{
	check_splits("not HTTP", "SSH-2.0-x\r\n", NULL, "", 1);
	check_splits("bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", NULL, "", 1);
	check_splits("two lengths",
		     "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", NULL, "",
		     1);
	check_splits("bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\nx", NULL, "", 1);
	check_splits("empty length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", NULL, "", 1);
	check_splits("101 switches protocol", "HTTP/1.1 101 Switching Protocols\r\n\r\n", NULL, "",
		     1);
	check_splits("two-digit status", "HTTP/1.1 20 OK\r\n\r\n", NULL, "", 1);
	check_splits("HTTP/2 preface", "HTTP/2 200\r\n\r\n", NULL, "", 1);
	check_splits("bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		     NULL, "H200 ", 1);
	check_splits("a body byte too many is the next head",
		     "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxy", NULL, "H200 D0 ", 1);
}

static void test_head_limit(void)
{
	static char big[RG_RESP_HEAD_MAX_BYTES + 64];
	struct events e;
	size_t n;

	strcpy(big, "HTTP/1.1 200 OK\r\nX: ");
	n = strlen(big);
	memset(big + n, 'a', RG_RESP_HEAD_MAX_BYTES - n);
	strcpy(big + RG_RESP_HEAD_MAX_BYTES, "\r\n\r\n");
	run(big, NULL, &e);
	CHECK(e.err && e.n == 0, "a head over %d bytes loses tracking", RG_RESP_HEAD_MAX_BYTES);
}

/* Words of a head (names, values, reasons) taken at once frame exactly as
 * bytes do, whatever byte sits anywhere in them. */
static void test_word_skips(void)
{
	static const char *const shapes[] = {
		"HTTP/1.1 200 O%sK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n%sxyz: 1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-%s: 1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a%sb\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: %schunked\r\n\r\n0\r\n\r\n",
	};
	char word[9], stream[256];
	unsigned s, b, at, k;

	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (b = 1; b < 256; b++) {
			for (at = 0; at < 8; at++) {
				struct events whole;
				struct feeder f = { 0 };

				memcpy(word, "AbcdEfgh", 9);
				word[at] = (char)b;
				snprintf(stream, sizeof(stream), shapes[s], word);
				run(stream, NULL, &whole);
				rg_resp_init(&f.r);
				for (k = 0; k < strlen(stream); k++)
					feed(&f, stream + k, 1);
				CHECK(strcmp(f.ev.s, whole.s) == 0 && f.ev.err == whole.err,
				      "shape %u, byte 0x%02x at %u: \"%s\" err %d vs bytes \"%s\" err %d",
				      s, b, at, whole.s, whole.err, f.ev.s, f.ev.err);
			}
		}
	}
}

int main(void)
{
	test_framing();
	test_errors();
	test_head_limit();
	test_word_skips();
	return check_report("test_http_resp");
}
