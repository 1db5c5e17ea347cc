// SPDX-License-Identifier: MIT
/* rowgated's reconciler helpers that need no kernel: de-chunking the raw
 * body copies (chunked framing as it came off the wire), by the kernel's
 * own chunked parser; the --copy-memory value and the growth of a copy
 * under the cap (docs/guarantees.md#bounded-state). */
#include <errno.h>
#include <string.h>
#include "../../user/rowgated/reconcile.h"
#include "check.h"

#define K 1024ULL
#define M (1024ULL * K)

static void test_parse_bytes(void)
{
	static const struct {
		const char *in;
		int ret;
		__u64 v;
	} cases[] = {
		{ "0", 0, 0 },           { "8388608", 0, 8 * M },  { "8M", 0, 8 * M },
		{ "8m", 0, 8 * M },      { "512K", 0, 512 * K },   { "2G", 0, 2048 * M },
		{ "", -EINVAL, 0 },      { "M", -EINVAL, 0 },      { "-1", -EINVAL, 0 },
		{ "+5", -EINVAL, 0 },    { " 5", -EINVAL, 0 },     { "8MB", -EINVAL, 0 },
		{ "8T", -EINVAL, 0 },    { "1.5M", -EINVAL, 0 },   { "8 M", -EINVAL, 0 },
		{ "18446744073709551615", 0, ~0ULL },
		{ "18446744073709551616", -EINVAL, 0 },
		{ "17179869184G", -EINVAL, 0 }, /* 2^34 G overflows 64 bits */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u64 v = 12345;
		int ret = rg_parse_bytes(cases[i].in, &v);

		CHECK(ret == cases[i].ret && (ret || v == cases[i].v), "parse '%s': %d %llu",
		      cases[i].in, ret, (unsigned long long)v);
	}
}

static void test_copy_grow(void)
{
	const __u64 B = RG_COPY_BUF_MIN_BYTES;

	/* fits already, or the first buffer */
	CHECK_EQ_U64(rg_copy_grow(B, 8 * M, B, 100), B, "need within cap");
	CHECK_EQ_U64(rg_copy_grow(0, 8 * M, 0, 100), B, "first buffer");
	/* doubling while there is room */
	CHECK_EQ_U64(rg_copy_grow(2 * B, 8 * M, 2 * B, 2 * B + 1), 4 * B, "doubles");
	CHECK_EQ_U64(rg_copy_grow(B, 8 * M, B, 5 * B), 8 * B, "doubles past need");
	/* near the cap: just what is needed, in whole minimum buffers */
	CHECK_EQ_U64(rg_copy_grow(7 * M, 8 * M, 4 * M, 4 * M + 1), 4 * M + B, "only the need");
	CHECK_EQ_U64(rg_copy_grow(8 * M - B, 8 * M, 0, 1), B, "last buffer fits");
	/* the cap is never exceeded: held - cap + result <= limit */
	CHECK_EQ_U64(rg_copy_grow(8 * M, 8 * M, 0, 1), 0, "cap reached");
	CHECK_EQ_U64(rg_copy_grow(8 * M - B + 1, 8 * M, 0, 1), 0, "one byte short");
	CHECK_EQ_U64(rg_copy_grow(9 * M, 8 * M, B, B + 1), 0, "already over (limit lowered)");
	/* the per-copy cap */
	CHECK_EQ_U64(rg_copy_grow(32 * M, 1024 * M, 32 * M, 48 * M), RG_COPY_MAX_BYTES,
		     "doubling stops at the per-copy cap");
	CHECK_EQ_U64(rg_copy_grow(0, 1024 * M, 0, RG_COPY_MAX_BYTES + 1), 0, "over one copy's cap");
	CHECK_EQ_U64(rg_copy_grow(0, 8 * M, B, B + 1), 0, "held below cap: inconsistent");
	/* exhaustive small model: the result always fits both caps and the need */
	for (__u64 held = 0; held <= 16 * B; held += B / 2)
		for (__u64 cap = 0; cap <= held && cap <= 8 * B; cap += B)
			for (__u64 need = cap + 1; need <= cap + 3 * B; need += B / 3) {
				__u64 nc = rg_copy_grow(held, 12 * B, cap, need);

				CHECK(!nc || (nc >= need && held - cap + nc <= 12 * B &&
					      nc % B == 0),
				      "held %llu cap %llu need %llu -> %llu", (unsigned long long)held,
				      (unsigned long long)cap, (unsigned long long)need,
				      (unsigned long long)nc);
				CHECK(nc || held - cap + (need + B - 1) / B * B > 12 * B,
				      "refused though it fits: held %llu cap %llu need %llu",
				      (unsigned long long)held, (unsigned long long)cap,
				      (unsigned long long)need);
			}
}

static long dechunk_as(const char *in, char *out, bool cut)
{
	size_t n = strlen(in);
	long r;

	memcpy(out, in, n);
	r = rg_dechunk((unsigned char *)out, n, cut);
	if (r >= 0)
		out[r] = 0;
	return r;
}

static long dechunk(const char *in, char *out)
{
	return dechunk_as(in, out, false);
}

/* A body cut by its connection: what arrived is what the server read. */
static void test_dechunk_cut(void)
{
	char buf[256];

	CHECK(dechunk_as("5\r\nhello\r\n6\r\n wor", buf, true) == 9 && !strcmp(buf, "hello wor"),
	      "cut inside a chunk's data: %s", buf);
	CHECK(dechunk_as("5\r\nhello\r\n6", buf, true) == 5 && !strcmp(buf, "hello"),
	      "cut in a size line: %s", buf);
	CHECK(dechunk_as("5\r\nhello\r", buf, true) == 5, "cut in the CRLF after data");
	CHECK(dechunk_as("", buf, true) == 0, "cut before any chunk");
	CHECK(dechunk_as("5\r\nhelloXX", buf, true) < 0, "framing error before the cut");
	CHECK(dechunk_as("zz\r\n", buf, true) < 0, "bad size before the cut");
	CHECK(dechunk_as("3\r\nabc\r\n0\r\n\r\n", buf, true) == 3, "a complete body");
	CHECK(dechunk_as("5\r\nhello\r\n6\r\n wor", buf, false) < 0, "not cut: incomplete");
}

/* The correction lag histogram's buckets: a bound holds the samples up to
 * and including it (Prometheus' "le"), the last bucket the rest. */
static void test_lag_buckets(void)
{
	for (unsigned int i = 1; i < RG_LAG_NR_BOUNDS; i++)
		CHECK(rg_lag_bound_us[i] > rg_lag_bound_us[i - 1], "bounds ascend at %u", i);
	CHECK_EQ_U64(rg_lag_bucket(0), 0, "0 ns");
	CHECK_EQ_U64(rg_lag_bucket(rg_lag_bound_us[0] * 1000), 0, "on the first bound");
	CHECK_EQ_U64(rg_lag_bucket(rg_lag_bound_us[0] * 1000 + 1), 1, "just past it");
	CHECK_EQ_U64(rg_lag_bucket(rg_lag_bound_us[RG_LAG_NR_BOUNDS - 1] * 1000),
		     RG_LAG_NR_BOUNDS - 1, "on the last bound");
	CHECK_EQ_U64(rg_lag_bucket(rg_lag_bound_us[RG_LAG_NR_BOUNDS - 1] * 1000 + 1),
		     RG_LAG_NR_BOUNDS, "past every bound: +Inf");
	CHECK_EQ_U64(rg_lag_bucket(UINT64_MAX), RG_LAG_NR_BOUNDS, "no overflow");
	/* the copy expiry (30 s default) is the last bound: a body held that
	 * long is the worst lag there is */
	CHECK_EQ_U64(rg_lag_bound_us[RG_LAG_NR_BOUNDS - 1], RG_COPY_EXPIRY_DEFAULT_S * 1000000ULL,
		     "last bound: the copy expiry");
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
	test_dechunk_cut();
	test_parse_bytes();
	test_copy_grow();
	test_lag_buckets();
	return check_report("reconcile");
}
