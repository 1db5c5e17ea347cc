// SPDX-License-Identifier: MIT
/* rowgated's reconciler helpers that need no kernel: de-chunking the raw
 * body copies (chunked framing as it came off the wire), by the kernel's
 * own chunked parser. */
#include <string.h>
#include "../../user/reconcile.h"
#include "check.h"

static long dechunk(const char *in, char *out)
{
	size_t n = strlen(in);
	long r;

	memcpy(out, in, n);
	r = rg_dechunk((unsigned char *)out, n);
	if (r >= 0)
		out[r] = 0;
	return r;
}

int main(void)
{
	char buf[256];

	CHECK(dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", buf) == 11 &&
		      !strcmp(buf, "hello world"), "two chunks: %s", buf);
	CHECK(dechunk("3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n", buf) == 3 && !strcmp(buf, "abc"),
	      "extension and trailer");
	CHECK(dechunk("A\r\n0123456789\r\n0\r\n\r\n", buf) == 10, "hex size");
	CHECK(dechunk("0\r\n\r\n", buf) == 0, "empty body");
	CHECK(dechunk("5\r\nhel", buf) < 0, "truncated data");
	CHECK(dechunk("zz\r\n", buf) < 0, "bad size");
	CHECK(dechunk("5\r\nhelloXX0\r\n\r\n", buf) < 0, "missing CRLF after data");
	CHECK(dechunk("ffffffffffffffff\r\n", buf) < 0, "size overflow");
	/* the kernel's framing rules: bare LF and a size line ending in junk */
	CHECK(dechunk("5\nhello\r\n0\r\n\r\n", buf) < 0, "bare LF after the size");
	CHECK(dechunk("5x\r\nhello\r\n0\r\n\r\n", buf) < 0, "junk after the size");
	CHECK(dechunk("3\r\nabc\r\n0\r\nTrai", buf) == 3, "copy ends in the trailers");
	return check_report("reconcile");
}
