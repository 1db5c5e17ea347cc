// SPDX-License-Identifier: MIT
/* The streaming HTTP head and chunked-body parsers on valid and invalid
 * input, fed one byte at a time exactly as the BPF verdict feeds them. */
#include <string.h>
#include "rowgate/http.h"
#include "check.h"

static struct rg_http_head h;

/* Returns the final step result; *used = bytes consumed. */
static int parse(const char *s, int first, size_t *used)
{
	size_t i, len = strlen(s);
	int r = RG_HEAD_MORE;

	rg_http_head_init(&h, first);
	for (i = 0; i < len && r == RG_HEAD_MORE; i++)
		r = rg_http_head_step(&h, (uint8_t)s[i]);
	if (used)
		*used = i;
	return r;
}

static const char *db_of(const char *head, int v2)
{
	static struct rg_db_key key;
	int r = parse(head, 1, NULL);

	if (r != RG_HEAD_DONE)
		return "<parse error>";
	if (rg_http_head_db(&h, v2 ? RG_ROUTE_BUCKET_PARAM : 0, &key) < 0)
		return "<too long>";
	return key.name;
}

#define EXPECT_DB(head, v2, want)                                          \
	CHECK(strcmp(db_of(head, v2), want) == 0, "db of %s: got %s, want %s", \
	      head, db_of(head, v2), want)

static void test_valid(void)
{
	size_t used;
	const char *req = "POST /v1/influxdb/write?db=logs&precision=ms HTTP/1.1\r\n"
			  "Host: x\r\nContent-Length: 12\r\n\r\nbody";

	CHECK(parse(req, 1, &used) == RG_HEAD_DONE, "simple POST");
	CHECK(used == strlen(req) - 4, "stops at the end of the head (%zu)", used);
	CHECK(h.is_post && h.has_content_length && h.content_length == 12, "framing");
	CHECK(strncmp(h.path, "/v1/influxdb/write", h.path_len) == 0 && h.path_len == 18,
	      "path");
	CHECK(rg_http_keep_alive(&h), "1.1 keeps alive");

	CHECK(parse("POST /write HTTP/1.1\r\ntransfer-encoding:  Chunked \r\n\r\n", 1, 0) ==
		      RG_HEAD_DONE && h.chunked, "chunked, any case, OWS");
	CHECK(parse("POST /write HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
		    1, 0) == RG_HEAD_DONE && h.expect_continue, "expect");
	CHECK(parse("POST /write HTTP/1.0\r\n\r\n", 1, 0) == RG_HEAD_DONE &&
		      !rg_http_keep_alive(&h) && !h.has_content_length, "1.0 closes, no body");
	CHECK(parse("POST /write HTTP/1.1\r\nConnection: close\r\n\r\n", 1, 0) == RG_HEAD_DONE &&
		      !rg_http_keep_alive(&h), "Connection: close");
	CHECK(parse("GET / HTTP/1.1\r\n\r\n", 1, 0) == RG_HEAD_DONE && !h.is_post, "GET");
	CHECK(parse("POST /wr%69te HTTP/1.1\r\n\r\n", 1, 0) == RG_HEAD_DONE &&
		      h.path_len == 6 && memcmp(h.path, "/write", 6) == 0,
	      "percent-decoded path, as Go routes it");
	CHECK(parse("POST http://example:80/write?db=a HTTP/1.1\r\n\r\n", 1, 0) == RG_HEAD_DONE &&
		      h.path_len == 6 && memcmp(h.path, "/write", 6) == 0,
	      "absolute-form target");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 007\r\n\r\n", 1, 0) == RG_HEAD_DONE &&
		      h.content_length == 7, "leading zeros");
}

static void test_database(void)
{
	EXPECT_DB("POST /write HTTP/1.1\r\n\r\n", 0, "public");
	EXPECT_DB("POST /write?db=metrics HTTP/1.1\r\n\r\n", 0, "metrics");
	EXPECT_DB("POST /write?a=1&db=metrics&db=other HTTP/1.1\r\n\r\n", 0, "metrics");
	EXPECT_DB("POST /write?db=&bucket=b HTTP/1.1\r\n\r\n", 1, "b");
	EXPECT_DB("POST /write?db= HTTP/1.1\r\n\r\n", 0, "public");
	EXPECT_DB("POST /api/v2/write?bucket=b&org=o HTTP/1.1\r\n\r\n", 1, "b");
	EXPECT_DB("POST /write?bucket=b HTTP/1.1\r\n\r\n", 0, "public");
	EXPECT_DB("POST /write?db=q HTTP/1.1\r\nx-GREPTIME-db-NAME: h \r\n\r\n", 0, "h");
	EXPECT_DB("POST /write?db=greptime-logs HTTP/1.1\r\n\r\n", 0, "logs");
	EXPECT_DB("POST /write?db=a-b HTTP/1.1\r\n\r\n", 0, "a-b");
	EXPECT_DB("POST /write?db=my%20db HTTP/1.1\r\n\r\n", 0, "my%20db"); /* raw */
	EXPECT_DB("POST /write?xdb=1&db=z HTTP/1.1\r\n\r\n", 0, "z");
	EXPECT_DB("POST /write HTTP/1.1\r\nX-Greptime-DB-Name: a b\r\n\r\n", 0, "<too long>");
	/* 63 bytes fit a key, 64 never match by truncation */
	{
		char head[256], name[80];

		memset(name, 'n', 63);
		name[63] = 0;
		snprintf(head, sizeof(head), "POST /write?db=%s HTTP/1.1\r\n\r\n", name);
		EXPECT_DB(head, 0, name);
		snprintf(head, sizeof(head), "POST /write?db=%sX HTTP/1.1\r\n\r\n", name);
		EXPECT_DB(head, 0, "<too long>");
		snprintf(head, sizeof(head), "POST /write?db=greptime-%s HTTP/1.1\r\n\r\n", name);
		EXPECT_DB(head, 0, name);
		snprintf(head, sizeof(head), "POST /write?db=%sXXXXXXXXXXXXXX HTTP/1.1\r\n\r\n",
			 name);
		EXPECT_DB(head, 0, "<too long>");
	}
}

static void test_invalid(void)
{
	CHECK(parse("\x16\x03\x01\x02\x00", 1, 0) == RG_HEAD_ERR_NOT_HTTP, "TLS is not HTTP");
	CHECK(parse("SSH-2.0-OpenSSH\r\n", 1, 0) == RG_HEAD_ERR_NOT_HTTP, "SSH is not HTTP");
	CHECK(parse("\x16\x03", 0, 0) == RG_HEAD_ERR_MALFORMED, "garbage after a request");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		    1, 0) == RG_HEAD_ERR_FRAMING, "CL + TE");
	CHECK(parse("POST /write HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		    1, 0) == RG_HEAD_ERR_FRAMING, "TE + CL");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 1,
		    0) == RG_HEAD_ERR_FRAMING, "duplicate CL");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_FRAMING, "CL list");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_FRAMING, "negative CL");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_FRAMING, "CL with inner space");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: \r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_FRAMING, "empty CL");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 1,
		    0) == RG_HEAD_ERR_FRAMING, "CL overflow");
	CHECK(parse("POST /write HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_FRAMING, "coding list");
	CHECK(parse("POST /write HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		    1, 0) == RG_HEAD_ERR_FRAMING, "duplicate TE");
	CHECK(parse("POST /write HTTP/1.1\r\nContent-Length : 5\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_MALFORMED, "space before colon");
	CHECK(parse("POST /write HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 1, 0) ==
		      RG_HEAD_ERR_MALFORMED, "obs-fold");
	CHECK(parse("POST /write HTTP/1.1\nHost: x\n\n", 1, 0) == RG_HEAD_ERR_MALFORMED,
	      "bare LF");
	CHECK(parse("POST /write HTTP/2.0\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED, "HTTP/2.0");
	CHECK(parse("POST /write\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED, "no version");
	CHECK(parse("POST  /write HTTP/1.1\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED, "two spaces");
	CHECK(parse("POST /wr%zzite HTTP/1.1\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED, "bad %%");
	CHECK(parse("POST /write HTTP/1.1\r\nNoColon\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED,
	      "no colon");
	CHECK(parse("POST /write HTTP/1.1\r\nX: a\x01\r\n\r\n", 1, 0) == RG_HEAD_ERR_MALFORMED,
	      "control byte in a value");
	{
		static char big[RG_HEAD_MAX_BYTES + 100];
		size_t n = (size_t)snprintf(big, sizeof(big), "POST /write HTTP/1.1\r\nX: ");

		memset(big + n, 'a', sizeof(big) - n - 1);
		CHECK(parse(big, 1, 0) == RG_HEAD_ERR_TOO_LARGE, "head too large");
	}
}

static int chunked(const char *body, uint64_t *data, size_t *used)
{
	struct rg_chunked s;
	size_t i, len = strlen(body);
	int r = RG_CHUNK_FRAMING;

	rg_chunked_init(&s);
	*data = 0;
	for (i = 0; i < len; i++) {
		r = rg_chunked_step(&s, (uint8_t)body[i]);
		if (r == RG_CHUNK_DATA)
			(*data)++;
		if (r == RG_CHUNK_DONE || r == RG_CHUNK_ERR) {
			i++;
			break;
		}
	}
	*used = i;
	return r;
}

static void test_chunked(void)
{
	uint64_t data;
	size_t used;

	CHECK(chunked("5\r\nhello\r\n0\r\n\r\nNEXT", &data, &used) == RG_CHUNK_DONE &&
		      data == 5 && used == 15, "one chunk (%zu)", used);
	CHECK(chunked("3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n", &data,
		      &used) == RG_CHUNK_DONE && data == 13, "extension, hex, trailer");
	CHECK(chunked("0\r\n\r\n", &data, &used) == RG_CHUNK_DONE && data == 0, "empty body");
	CHECK(chunked("g\r\n", &data, &used) == RG_CHUNK_ERR, "bad size");
	CHECK(chunked("\r\n", &data, &used) == RG_CHUNK_ERR, "empty size");
	CHECK(chunked("5\r\nhelloX\r\n", &data, &used) == RG_CHUNK_ERR, "data longer than size");
	CHECK(chunked("1000000000000000\r\n", &data, &used) == RG_CHUNK_ERR, "size overflow");
	CHECK(chunked("5\nhello", &data, &used) == RG_CHUNK_ERR, "bare LF");
}

static void test_captured_headers(void)
{
	struct rg_db_key key;

	CHECK(parse("POST /loki/api/v1/push?db=q HTTP/1.1\r\nContent-Type: Application/X-Protobuf\r\n"
		    "Content-Encoding: snappy\r\nX-Scope-OrgID: tenant-a \r\n\r\n",
		    1, 0) == RG_HEAD_DONE,
	      "loki head");
	CHECK(strcmp(h.content_type, "application/x-protobuf") == 0, "content type lower-cased: %s",
	      h.content_type);
	CHECK(strcmp(h.content_encoding, "snappy") == 0, "content encoding: %s", h.content_encoding);
	CHECK(rg_http_head_db_padded(&h, RG_ROUTE_TENANT, &key) == 8 &&
		      strcmp(key.name, "tenant-a") == 0,
	      "tenant names the db on tenant routes: %s", key.name);
	CHECK(rg_http_head_db_padded(&h, 0, &key) == 1 && strcmp(key.name, "q") == 0,
	      "elsewhere the tenant header is ignored: %s", key.name);
	/* the padded (BPF) resolver agrees with the generic one */
	{
		static const char *heads[] = {
			"POST /w?db=greptime-x HTTP/1.1\r\n\r\n",
			"POST /w?bucket=b HTTP/1.1\r\n\r\n",
			"POST /w HTTP/1.1\r\nX-Greptime-DB-Name: greptime-abc\r\n\r\n",
			"POST /w?db=a-b HTTP/1.1\r\n\r\n",
			"POST /w HTTP/1.1\r\n\r\n",
		};
		struct rg_db_key a, b;
		size_t i;

		for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
			parse(heads[i], 1, 0);
			memset(&a, 0x55, sizeof(a));
			memset(&b, 0x55, sizeof(b));
			CHECK(rg_http_head_db(&h, RG_ROUTE_BUCKET_PARAM, &a) ==
				      rg_http_head_db_padded(&h, RG_ROUTE_BUCKET_PARAM, &b) &&
				      memcmp(&a, &b, sizeof(a)) == 0,
			      "padded resolver agrees on %s", heads[i]);
		}
	}
	/* a long content type is cut, not overflowed */
	{
		char head[512];

		snprintf(head, sizeof(head), "POST /w HTTP/1.1\r\nContent-Type: %0200d\r\n\r\n", 7);
		CHECK(parse(head, 1, 0) == RG_HEAD_DONE && strlen(h.content_type) == RG_CT_BYTES - 1,
		      "content type capped at %d bytes", RG_CT_BYTES - 1);
	}
}

int main(void)
{
	test_captured_headers();
	test_valid();
	test_database();
	test_invalid();
	test_chunked();
	return check_report("http");
}
