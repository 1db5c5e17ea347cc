// SPDX-License-Identifier: MIT
/* The kernel's own responses: every length response.h computes against what
 * snprintf makes of the same template, and the sizing of a response to the
 * bytes it replaces over every target length. */
#include <stdlib.h>
#include <string.h>
#include "rowgate/response.h"
#include "check.h"
#include "response_ref.h"

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A value with a random number of digits, often at a power of ten's edge. */
static uint64_t any_u64(uint64_t *s)
{
	static const uint64_t pow10[] = { 1ULL,
					  10ULL,
					  100ULL,
					  1000ULL,
					  10000ULL,
					  100000ULL,
					  1000000ULL,
					  10000000ULL,
					  100000000ULL,
					  1000000000ULL,
					  10000000000ULL,
					  100000000000ULL,
					  1000000000000ULL,
					  10000000000000ULL,
					  100000000000000ULL,
					  1000000000000000ULL,
					  10000000000000000ULL,
					  100000000000000000ULL,
					  1000000000000000000ULL,
					  10000000000000000000ULL };
	uint64_t r = xorshift(s);
	uint64_t p = pow10[r % 20];

	switch ((r >> 8) % 4) {
	case 0:
		return p;
	case 1:
		return p - 1;
	case 2:
		return UINT64_MAX - (r >> 40);
	default:
		return xorshift(s) % (p * 9 > p ? p * 9 : UINT64_MAX);
	}
}

/* The numbers of a random response and its database: a name of random
 * length, all one letter (picked by i). */
static void any_response(struct rg_response *r, struct rg_db_key *db, uint64_t *s, int i)
{
	memset(db, 0, sizeof(*db));
	r->retry_after_s = any_u64(s);
	r->rows = any_u64(s);
	r->quota_rows_per_s = any_u64(s);
	r->limit_rows_per_s = any_u64(s);
	r->estimated = xorshift(s) & 1;
	r->db_len = (uint32_t)(xorshift(s) % RG_DB_NAME_MAX);
	memset(db->name, 'a' + i % 26, r->db_len);
}

static void test_digits(void)
{
	char buf[32];
	uint64_t s = 0x9e3779b97f4a7c15ULL, v, p;
	int i;

	for (p = 1, i = 0; i < 20; i++, p *= 10) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)p);
		CHECK_EQ_U64(rg_dec_digits(p), strlen(buf), "digits(10^k)");
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(p - 1));
		CHECK_EQ_U64(rg_dec_digits(p - 1), strlen(buf), "digits(10^k - 1)");
		if (i == 19)
			break;
	}
	CHECK_EQ_U64(rg_dec_digits(0), 1, "digits(0)");
	CHECK_EQ_U64(rg_dec_digits(UINT64_MAX), 20, "digits(2^64 - 1)");
	for (i = 0; i < 200000; i++) {
		v = any_u64(&s);
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
		CHECK(rg_dec_digits(v) == strlen(buf), "digits(%s) = %u", buf, rg_dec_digits(v));
	}
}

/* Random responses for random targets: the plan fills the target exactly
 * (or is the smallest response, larger, with close), its lengths are the
 * reference's, and the writer's bytes are the reference's. */
static void test_plan_and_write(void)
{
	char ref[2048];
	uint64_t s = 12345;
	int i, n;

	for (i = 0; i < 300000; i++) {
		struct rg_response r = { 0 };
		struct rg_resp_buf out;
		struct rg_db_key db;
		uint64_t target;
		uint32_t smallest, len;
		bool want_close;

		memset(&out, 0x5a, sizeof(out));
		r.kind = xorshift(&s) % 4 ? RG_RESP_429 : RG_RESP_400;
		r.error = (uint8_t)(xorshift(&s) % (RG_RESP_ERR_H2_UNCOUNTED + 1));
		any_response(&r, &db, &s, i);
		r.close = want_close = xorshift(&s) & 1;
		db.name[0] = r.db_len ? '_' : '\0';
		/* targets around the sizes that matter: tiny, ~the short and
		 * long forms, whole skbs */
		switch (xorshift(&s) % 4) {
		case 0:
			target = xorshift(&s) % 300;
			break;
		case 1:
			target = 150 + xorshift(&s) % 400;
			break;
		case 2:
			target = xorshift(&s) % 70000;
			break;
		default:
			target = 999 + xorshift(&s) % 3;
		}
		if (rg_response_plan(&r, target)) {
			CHECK(r.text_len >= RG_RESP_TEXT_MAX, "refused plan of %u bytes",
			      r.text_len);
			continue;
		}
		n = format_ref(ref, sizeof(ref), &r, db.name);
		CHECK(n > 0 && (uint32_t)n == r.text_len, "text: snprintf %d, plan %u", n,
		      r.text_len);
		len = rg_response_write(&out, &r, &db);
		CHECK(len == r.text_len && memcmp(out.b, ref, len) == 0,
		      "writer (%u bytes) differs from snprintf (%d): %.*s", len, n, (int)len,
		      out.b);
		/* Content-Length counts the JSON and its padding */
		CHECK(r.content_length >= strlen(strstr(ref, "\r\n\r\n") + 4) &&
			      r.total_len == r.text_len - strlen(strstr(ref, "\r\n\r\n") + 4) +
						     r.content_length,
		      "total %u", r.total_len);
		if (want_close)
			CHECK(r.close, "close was required");
		if (r.total_len != target) {
			/* nothing fits: the smallest response, and it closes */
			smallest = r.text_len;
			CHECK(r.close && smallest > target && r.total_len == smallest,
			      "target %llu: total %u, smallest %u, close %d",
			      (unsigned long long)target, r.total_len, smallest, r.close);
		}
		if (!r.close)
			CHECK(r.total_len == target, "keep-alive must fill the target");
	}
}

/* The largest text of all: every field at its widest. */
static void test_widest(void)
{
	struct rg_response r = {
		.kind = RG_RESP_429,
		.retry_after_s = UINT64_MAX,
		.rows = UINT64_MAX,
		.quota_rows_per_s = UINT64_MAX,
		.limit_rows_per_s = UINT64_MAX,
		.db_len = RG_DB_NAME_MAX - 1,
		.estimated = 1,
	};

	CHECK(rg_response_plan(&r, 100000) == 0, "the widest 429 must fit: %u", r.text_len);
	CHECK(r.text_len < RG_RESP_TEXT_MAX && r.total_len == 100000, "text %u total %u",
	      r.text_len, r.total_len);
}

/* A response that replaces no bytes (egress's 429): the long form, with
 * close, unpadded, byte for byte the reference. */
static void test_unpadded(void)
{
	char ref[2048];
	uint64_t s = 777;
	int i, n;

	for (i = 0; i < 100000; i++) {
		struct rg_response r = { 0 };
		struct rg_resp_buf out;
		struct rg_db_key db;
		uint32_t len;

		r.kind = RG_RESP_429;
		any_response(&r, &db, &s, i);
		CHECK(rg_response_plan_unpadded(&r) == 0, "refused: %u bytes", r.text_len);
		CHECK(!r.short_form && r.close && !r.ows && r.total_len == r.text_len,
		      "short %d close %d ows %d text %u total %u", r.short_form, r.close, r.ows,
		      r.text_len, r.total_len);
		n = format_ref(ref, sizeof(ref), &r, db.name);
		len = rg_response_write(&out, &r, &db);
		CHECK(n > 0 && len == (uint32_t)n && memcmp(out.b, ref, len) == 0 &&
			      r.content_length == strlen(strstr(ref, "\r\n\r\n") + 4),
		      "unpadded 429 differs: %.*s", (int)len, out.b);
	}
}

/* Every target from nothing to past the largest response: a fit fills it
 * exactly with room for the JSON, and no fit means even the smallest
 * response is larger than the target (it must grow and close). */
static void test_fit(void)
{
	static const uint32_t bodies[] = { 1, 9, 10, 11, 98, 99, 100, 101, 150, 231, 999, 1000 };
	static const uint32_t bases[] = { 0, 1, 60, 180, 205 };
	unsigned b, h;
	uint64_t target;

	for (b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		for (h = 0; h < sizeof(bases) / sizeof(bases[0]); h++) {
			uint32_t body = bodies[b], base = bases[h];
			uint64_t smallest = base + rg_dec_digits(body) + body;

			for (target = 0; target < 20000; target++) {
				__u64 cl = 0;
				__u8 ows = 0;
				bool ok;

				ok = rg_resp_fit(target, base, body, &cl, &ows);
				if (ok) {
					CHECK(base + ows + rg_dec_digits(cl) + cl == target &&
						      cl >= body,
					      "fit %llu: base %u ows %d cl %llu body %u",
					      (unsigned long long)target, base, ows,
					      (unsigned long long)cl, body);
				} else {
					CHECK(smallest > target,
					      "no fit for %llu, but %llu bytes would do (body %u)",
					      (unsigned long long)target,
					      (unsigned long long)smallest, body);
				}
			}
		}
	}
	/* huge ledgers: lengths near a power of ten far above any skb */
	for (target = 999999990; target < 1000000020; target++) {
		__u64 cl = 0;
		__u8 ows = 0;

		CHECK(rg_resp_fit(target, 200, 150, &cl, &ows) &&
			      200 + ows + rg_dec_digits(cl) + cl == target,
		      "fit %llu", (unsigned long long)target);
	}
}

int main(void)
{
	test_digits();
	test_plan_and_write();
	test_widest();
	test_unpadded();
	test_fit();
	return check_report("test_response");
}
