// SPDX-License-Identifier: MIT
/* The token bucket of include/rowgate/bucket.h against an independent model
 * that keeps the level in nano-rows in 128-bit arithmetic (allowed here, never
 * in BPF code): the examples of docs/design.md#admission and a randomized run.
 */
#include <stdlib.h>
#include <string.h>
#include "rowgate/bucket.h"
#include "check.h"

#define NS 1000000000ULL
typedef __int128 i128;

/* Reference: level in 1e-9 rows, capacity q * 1e9. */
struct model {
	i128 level;
	uint64_t q;
	uint64_t last;
};

static void model_refill(struct model *m, uint64_t now)
{
	i128 cap = (i128)m->q * NS;

	if (now <= m->last)
		return;
	m->level += (i128)(now - m->last) * m->q;
	m->last = now;
	if (m->level >= cap)
		m->level = cap;
}

static int model_admit(struct model *m, uint64_t now, uint64_t rows)
{
	model_refill(m, now);
	if (m->level < (i128)NS)
		return 0;
	m->level -= (i128)rows * NS;
	return 1;
}

static void model_set_quota(struct model *m, uint64_t now, uint64_t q)
{
	model_refill(m, now);
	if (now > m->last)
		m->last = now;
	m->q = q;
	if (m->level >= (i128)q * NS)
		m->level = (i128)q * NS;
}

static i128 bucket_level(const struct rg_bucket *b)
{
	return (i128)b->tokens * NS - (i128)b->debt_rows * NS + b->frac_nrows;
}

static int same(const struct rg_bucket *b, const struct model *m)
{
	if (bucket_level(b) != m->level)
		return 0;
	if (b->tokens && b->debt_rows)
		return 0;
	return b->frac_nrows < NS;
}

static void test_reference_example(void)
{
	struct rg_bucket b;
	uint64_t t0 = 5 * NS, t;

	rg_bucket_init(&b, 1000, t0);
	CHECK(rg_bucket_admit(&b, t0, 3000), "full bucket admits a 3,000-row batch");
	CHECK_EQ_U64(b.debt_rows, 2000, "debt after the batch");
	CHECK_EQ_U64(b.tokens, 0, "tokens after the batch");
	CHECK(!rg_bucket_admit(&b, t0 + 1, 1), "rejected right after");
	CHECK(!rg_bucket_admit(&b, t0 + 2 * NS, 1), "rejected at 2.000 s: debt repaid, no token");
	CHECK(!rg_bucket_admit(&b, t0 + 2 * NS + 999999, 1), "rejected at 2.000999 s");
	CHECK(rg_bucket_admit(&b, t0 + 2 * NS + 1000000, 1), "admitted at 2.001 s");

	/* the time the bucket announces matches the time it admits */
	rg_bucket_init(&b, 1000, t0);
	rg_bucket_admit(&b, t0, 3000);
	CHECK_EQ_U64(rg_bucket_ns_until_token(&b), 2 * NS + 1000000, "ns until a token");
	CHECK_EQ_U64(rg_bucket_retry_after_s(&b), 3, "Retry-After rounds up");
	t = t0 + rg_bucket_ns_until_token(&b);
	CHECK(!rg_bucket_admit(&b, t - 1, 1), "one ns early is rejected");
	CHECK(rg_bucket_admit(&b, t, 1), "on time is admitted");
}

static void test_one_whole_token(void)
{
	struct rg_bucket b;

	/* 0.999 of a row is not a token */
	rg_bucket_init(&b, 1, 0);
	CHECK(rg_bucket_admit(&b, 0, 1), "first row");
	CHECK(!rg_bucket_admit(&b, 999999999, 1), "0.999999999 tokens rejects");
	CHECK_EQ_U64(b.frac_nrows, 999999999, "fraction carried");
	CHECK(rg_bucket_admit(&b, NS, 1), "one whole token admits");
	/* a batch far larger than the bucket is admitted on one token */
	rg_bucket_init(&b, 10, 0);
	rg_bucket_charge(&b, 9);
	CHECK(rg_bucket_admit(&b, 0, 1000000), "1 token admits 1,000,000 rows");
	CHECK_EQ_U64(b.debt_rows, 999999, "debt");
}

static void test_small_steps_equal_one_step(void)
{
	struct rg_bucket a, b;
	uint64_t t;

	rg_bucket_init(&a, 7, 0);
	rg_bucket_init(&b, 7, 0);
	rg_bucket_charge(&a, 100);
	rg_bucket_charge(&b, 100);
	for (t = 1; t <= 10 * NS; t += 333333)
		rg_bucket_refill(&a, t);
	rg_bucket_refill(&a, 10 * NS);
	rg_bucket_refill(&b, 10 * NS);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0,
	      "many small refills equal one: %llu/%llu/%llu vs %llu/%llu/%llu",
	      a.tokens, a.debt_rows, a.frac_nrows, b.tokens, b.debt_rows, b.frac_nrows);
}

static void test_quota_change(void)
{
	struct rg_bucket b;

	rg_bucket_init(&b, 1000, 0);
	rg_bucket_charge(&b, 1500);
	rg_bucket_set_quota(&b, 0, 10);
	CHECK_EQ_U64(b.debt_rows, 500, "quota change keeps debt");
	rg_bucket_init(&b, 1000, 0);
	rg_bucket_set_quota(&b, 0, 10);
	CHECK_EQ_U64(b.tokens, 10, "tokens clamped to the new capacity");
	rg_bucket_set_quota(&b, NS, 100);
	CHECK_EQ_U64(b.tokens, 10, "a larger quota grants nothing at once");
	rg_bucket_set_quota(&b, 2 * NS, 100);
	CHECK_EQ_U64(b.tokens, 100, "refills at the new quota");
}

static void test_disable_keeps_debt(void)
{
	/* disabling is the caller not touching the bucket; re-enabling
	 * resumes from the kept state: debt is repaid only by time */
	struct rg_bucket b;

	rg_bucket_init(&b, 100, 0);
	rg_bucket_admit(&b, 0, 1000);
	CHECK_EQ_U64(b.debt_rows, 900, "debt before disable");
	CHECK(!rg_bucket_admit(&b, NS, 1), "still in debt after re-enable at 1 s");
	CHECK_EQ_U64(b.debt_rows, 800, "debt repaid by elapsed time only");
}

static void test_u64_max(void)
{
	struct rg_bucket b;
	uint64_t q = RG_U64_MAX;

	rg_bucket_init(&b, q, 0);
	CHECK(rg_bucket_admit(&b, 0, q), "admit the whole bucket");
	CHECK_EQ_U64(b.tokens, 0, "empty");
	CHECK(!rg_bucket_admit(&b, 0, 1), "no token at the same instant");
	rg_bucket_refill(&b, 1);
	CHECK_EQ_U64(b.tokens, q / NS, "1 ns refills q/1e9 rows");
	rg_bucket_refill(&b, 400ULL * 365 * 86400 * NS);
	CHECK_EQ_U64(b.tokens, q, "400 years idle: full, no overflow");
	CHECK(rg_bucket_admit(&b, RG_U64_MAX, RG_U64_MAX), "clock at u64 max");
	CHECK(rg_bucket_ns_until_token(&b) >= 1, "ns until token at u64 max");
	/* the smallest quota over a long idle period */
	rg_bucket_init(&b, 1, 0);
	rg_bucket_charge(&b, 10);
	rg_bucket_refill(&b, RG_U64_MAX);
	CHECK_EQ_U64(b.tokens, 1, "584 years idle at 1 row/s: full");
}

static void test_clock_backwards(void)
{
	struct rg_bucket b;

	rg_bucket_init(&b, 1000, 10 * NS);
	rg_bucket_admit(&b, 10 * NS, 1000);
	rg_bucket_refill(&b, 5 * NS);
	CHECK_EQ_U64(b.tokens, 0, "a clock going back grants nothing");
	CHECK_EQ_U64(b.last_ns, 10 * NS, "and does not move the refill point back");
	rg_bucket_refill(&b, 10 * NS + NS / 2);
	CHECK_EQ_U64(b.tokens, 500, "time after the jump counts once");
}

static void test_refund(void)
{
	struct rg_bucket b;

	rg_bucket_init(&b, 100, 0);
	rg_bucket_charge(&b, 350);
	rg_bucket_refund(&b, 200);
	CHECK_EQ_U64(b.debt_rows, 50, "a refund repays debt first");
	rg_bucket_refund(&b, 80);
	CHECK(b.debt_rows == 0 && b.tokens == 30, "then fills tokens: %llu/%llu", b.debt_rows,
	      b.tokens);
	rg_bucket_refund(&b, 1000000);
	CHECK_EQ_U64(b.tokens, 100, "never above capacity");
	rg_bucket_charge(&b, 10);
	rg_bucket_refund(&b, RG_U64_MAX);
	CHECK_EQ_U64(b.tokens, 100, "u64 max refund saturates at capacity");
	/* charge + refund of the same rows is the identity (below capacity) */
	rg_bucket_init(&b, 1000, 0);
	rg_bucket_charge(&b, 2345);
	rg_bucket_charge(&b, 77);
	rg_bucket_refund(&b, 77);
	CHECK(b.debt_rows == 1345 && b.tokens == 0, "charge then refund: debt %llu", b.debt_rows);
}

/* One second of a writer that sends a 100-row batch every millisecond
 * while a backlog of corrections arrives, each refunding 100 rows charged
 * `age_ns` earlier, one every `every` ms for the first 300 ms (rowgated
 * catching up after a SIGSTOP).  Returns the rows admitted. */
static uint64_t drain_with_backlog(uint64_t age_ns, unsigned int every)
{
	struct rg_bucket b;
	uint64_t admitted = 0;
	unsigned int ms;

	rg_bucket_init(&b, 2000, 0);
	rg_bucket_charge(&b, 2000); /* empty: the estimates held the rate down */
	for (ms = 1; ms <= 1000; ms++) {
		if (ms <= 300 && ms % every == 0 && rg_refund_credited(age_ns))
			rg_bucket_refund(&b, 100);
		if (rg_bucket_admit(&b, ms * (NS / 1000), 100))
			admitted += 100;
	}
	return admitted;
}

static void test_late_refunds(void)
{
	CHECK(rg_refund_credited(0) && rg_refund_credited(RG_REFUND_CREDIT_NS) &&
		      !rg_refund_credited(RG_REFUND_CREDIT_NS + 1),
	      "fresh up to RG_REFUND_CREDIT_NS");
	/* each refund stops at capacity, yet the backlog adds up: fresh
	 * refunds (a running rowgated) admit beyond a second of refill... */
	CHECK(drain_with_backlog(1000, 1) > 2000 + 2000 + 100, "fresh backlog: %llu rows",
	      (unsigned long long)drain_with_backlog(1000, 1));
	/* ...which late ones (35 s old) may not: the refill, one batch */
	CHECK(drain_with_backlog(35 * NS, 1) <= 2000 + 100, "late backlog: %llu rows",
	      (unsigned long long)drain_with_backlog(35 * NS, 1));
}

static uint64_t rnd(void)
{
	return (uint64_t)random() << 42 ^ (uint64_t)random() << 21 ^ (uint64_t)random();
}

static uint64_t pick_quota(void)
{
	switch (rnd() % 6) {
	case 0: return 1 + rnd() % 10;
	case 1: return 1 + rnd() % 100000;
	case 2: return 999999999 + rnd() % 3;
	case 3: return 1 + rnd() % (NS * 1000);
	case 4: return RG_U64_MAX - rnd() % 1000;
	default: return 1 + rnd() % 1000000000000ULL;
	}
}

static void test_randomized(void)
{
	const long steps = 3000000;
	struct rg_bucket b;
	struct model m;
	uint64_t now = 1000;
	long i, mismatches = 0, admitted = 0;

	srandom(42);
	for (i = 0; i < steps; i++) {
		if (i % 100000 == 0) {
			uint64_t q = pick_quota();

			rg_bucket_init(&b, q, now);
			m = (struct model){ (i128)q * NS, q, now };
		}
		switch (rnd() % 16) {
		case 0: /* quota change */
			{
				uint64_t q = pick_quota();

				rg_bucket_set_quota(&b, now, q);
				model_set_quota(&m, now, q);
			}
			break;
		case 1: { /* clock going backwards */
			uint64_t back = now - rnd() % 1000;

			rg_bucket_refill(&b, back);
			model_refill(&m, back);
			break;
		}
		default: {
			uint64_t rows = rnd() % 4 ? rnd() % (b.quota < 1000 ? 10 : 5000) :
						   rnd() % 1000000;
			int x = rg_bucket_admit(&b, now, rows);
			int y = model_admit(&m, now, rows);

			admitted += x;
			if (x != y)
				mismatches++;
		}
		}
		if (!same(&b, &m)) {
			if (mismatches++ < 3)
				fprintf(stderr, "step %ld: q=%llu tokens=%llu debt=%llu frac=%llu diff=%lld\n",
					i, b.quota, b.tokens, b.debt_rows, b.frac_nrows,
					(long long)(bucket_level(&b) - m.level));
			m.level = bucket_level(&b); /* resync: report each divergence once */
		}
		now += rnd() % 4 == 0 ? rnd() % (3 * NS) : rnd() % 100000;
	}
	CHECK(mismatches == 0, "%ld mismatches against the model in %ld steps", mismatches,
	      steps);
	CHECK(admitted > steps / 10 && admitted < steps, "both outcomes exercised: %ld admitted",
	      admitted);
}

int main(void)
{
	test_reference_example();
	test_one_whole_token();
	test_small_steps_equal_one_step();
	test_quota_change();
	test_disable_keeps_debt();
	test_u64_max();
	test_clock_backwards();
	test_randomized();
	test_refund();
	test_late_refunds();
	return check_report("bucket");
}
