// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the quota allocator (user/meta/alloc.c): the documented edge cases
 * and the properties — sum <= L, max-min fairness, stability. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../user/meta/alloc.h"

#define MAX_FE       64
#define SEC_NS       1000000000ULL
#define HB_NS        SEC_NS /* heartbeat period the tests assume */
#define RANDOM_CASES 20000

static int failures, checks;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		checks++;                                                  \
		if (!(cond)) {                                             \
			failures++;                                        \
			printf("FAIL %s:%d: %s: ", __func__, __LINE__, #cond); \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
		}                                                          \
	} while (0)

struct fixture {
	struct rg_alloc_fe fe[MAX_FE];
	__u32 order[MAX_FE];
	struct rg_alloc_db db;
	struct rg_alloc_params p;
};

static void setup(struct fixture *f, enum rg_alloc_strategy s, __u32 n, __u64 L)
{
	rg_alloc_db_init(&f->db, f->fe, f->order, n, L);
	rg_alloc_params_init(&f->p, s);
}

static void report(struct fixture *f, __u32 i, __u64 adm, __u64 rej, __u64 now)
{
	struct rg_alloc_report r = { .admitted_rows_per_s = adm,
				     .rejected_rows_per_s = rej };

	rg_alloc_report(&f->db, &f->p, i, &r, now);
}

/* Every frontend in [0, n) reports demand[i] as admitted, then a round. */
static void round_with(struct fixture *f, const __u64 *demand, __u32 n, __u64 now)
{
	for (__u32 i = 0; i < n; i++)
		report(f, i, demand[i], 0, now);
	rg_alloc_round(&f->db, &f->p, now);
}

static __u64 q(const struct fixture *f, __u32 i)
{
	return f->fe[i].quota_rows_per_s;
}

static unsigned __int128 sum_quota(const struct fixture *f)
{
	unsigned __int128 s = 0;

	for (__u32 i = 0; i < f->db.nr_fe; i++)
		if (f->fe[i].flags & RG_ALLOC_FE_LIVE)
			s += f->fe[i].quota_rows_per_s;
	return s;
}

static void test_limit_below_frontends(void)
{
	struct fixture f;
	__u64 d[5] = { 100, 0, 7, 1, 50 };

	setup(&f, RG_ALLOC_WATERFILL, 5, 3);
	round_with(&f, d, 5, HB_NS);
	for (__u32 i = 0; i < 5; i++)
		CHECK(q(&f, i) == 1, "fe %u quota %llu, want the 1 row/s floor", i,
		      (unsigned long long)q(&f, i));
	CHECK(sum_quota(&f) == 5, "sum %llu: the floor forces n > L",
	      (unsigned long long)sum_quota(&f));
	printf("ok   limit 3 < 5 frontends: every quota 1, sum 5\n");
}

static void test_new_frontend(void)
{
	struct fixture f;
	__u64 d[3] = { 300, 200, 0 };

	/* underloaded: the newcomer gets headroom at once, not just 1 */
	setup(&f, RG_ALLOC_WATERFILL, 3, 1000);
	round_with(&f, d, 2, HB_NS);
	CHECK(q(&f, 0) + q(&f, 1) == 1000, "two frontends hold all of L");
	round_with(&f, d, 3, 2 * HB_NS);
	CHECK(q(&f, 2) >= 50, "newcomer quota %llu, want headroom",
	      (unsigned long long)q(&f, 2));
	CHECK(sum_quota(&f) == 1000, "sum %llu != L", (unsigned long long)sum_quota(&f));
	CHECK(q(&f, 0) >= 300 && q(&f, 1) >= 200, "demand still covered");

	/* overloaded: its demand shows at its next heartbeat, fair share then */
	d[0] = 900, d[1] = 900, d[2] = 0;
	setup(&f, RG_ALLOC_WATERFILL, 3, 1000);
	round_with(&f, d, 2, HB_NS);
	round_with(&f, d, 3, 2 * HB_NS);
	CHECK(q(&f, 2) == 1, "overloaded newcomer without demand: %llu",
	      (unsigned long long)q(&f, 2));
	d[2] = 900;
	round_with(&f, d, 3, 3 * HB_NS);
	CHECK(q(&f, 0) >= 333 && q(&f, 0) <= 334 && q(&f, 2) >= 333 &&
	      q(&f, 2) <= 334, "fair thirds: %llu %llu %llu",
	      (unsigned long long)q(&f, 0), (unsigned long long)q(&f, 1),
	      (unsigned long long)q(&f, 2));
	CHECK(sum_quota(&f) == 1000, "sum %llu", (unsigned long long)sum_quota(&f));
	printf("ok   new frontend: headroom when spare, fair share next heartbeat\n");
}

static void test_silent_frontend(void)
{
	struct fixture f;
	__u64 d[3] = { 600, 600, 600 }, lease;

	setup(&f, RG_ALLOC_WATERFILL, 3, 900);
	lease = f.p.lease_ns;
	round_with(&f, d, 3, HB_NS);
	CHECK(q(&f, 2) == 300, "thirds first: %llu", (unsigned long long)q(&f, 2));
	/* fe 2 falls silent: its grant is still enforced until its lease ends */
	round_with(&f, d, 2, 2 * HB_NS);
	CHECK(q(&f, 0) + q(&f, 1) + q(&f, 2) <= 900, "sum with a leased silent one");
	CHECK(f.db.nr_live == 3, "silent but leased is live");
	CHECK(q(&f, 0) == 300, "no room taken from a leased grant: %llu",
	      (unsigned long long)q(&f, 0));
	/* exactly one lease after its last heartbeat it is gone */
	round_with(&f, d, 2, HB_NS + lease);
	CHECK(f.db.nr_live == 2, "expired: live %u", f.db.nr_live);
	CHECK(f.fe[2].flags == 0 && q(&f, 2) == 0, "slot freed");
	CHECK(q(&f, 0) == 450 && q(&f, 1) == 450, "its share redistributed: %llu %llu",
	      (unsigned long long)q(&f, 0), (unsigned long long)q(&f, 1));
	CHECK(f.fe[0].lease_expiry_ns == HB_NS + 2 * lease, "lease = now + lease_ns");
	printf("ok   silent frontend keeps its share for its lease, then loses it\n");
}

static void test_limit_change(void)
{
	struct fixture f;
	__u64 d[4] = { 100, 200, 300, 400 };

	setup(&f, RG_ALLOC_WATERFILL, 4, 2000);
	round_with(&f, d, 4, HB_NS);
	CHECK(sum_quota(&f) == 2000, "spare handed out");
	f.db.limit_rows_per_s = 400;
	round_with(&f, d, 4, 2 * HB_NS);
	CHECK(sum_quota(&f) == 400, "sum %llu after lowering L to 400",
	      (unsigned long long)sum_quota(&f));
	CHECK(q(&f, 0) == 100 && q(&f, 3) == 100, "max-min at 400: %llu %llu",
	      (unsigned long long)q(&f, 0), (unsigned long long)q(&f, 3));
	f.db.limit_rows_per_s = 10000;
	round_with(&f, d, 4, 3 * HB_NS);
	CHECK(sum_quota(&f) == 10000, "raised to 10000");
	for (__u32 i = 0; i < 4; i++)
		CHECK(q(&f, i) > d[i], "fe %u gets headroom above demand", i);
	printf("ok   limit change: lowered and raised within one round\n");
}

static void test_limit_zero(void)
{
	struct fixture f;
	__u64 d[2] = { 100, 5 };

	setup(&f, RG_ALLOC_WATERFILL, 2, 0);
	round_with(&f, d, 2, HB_NS);
	CHECK(q(&f, 0) == 0 && q(&f, 1) == 0, "unset limit grants 0 (= use L = unlimited)");
	CHECK(f.db.nr_live == 2, "still tracked");
	/* set it later: normal grants */
	f.db.limit_rows_per_s = 50;
	round_with(&f, d, 2, 2 * HB_NS);
	CHECK(q(&f, 1) == 5 || q(&f, 1) >= 5, "small one served");
	CHECK(sum_quota(&f) == 50, "sum %llu", (unsigned long long)sum_quota(&f));
	printf("ok   limit 0/unset: quota 0 (no assignment)\n");
}

static void test_u64_max(void)
{
	struct fixture f;
	__u64 d[3] = { RG_U64_MAX, RG_U64_MAX, RG_U64_MAX };

	for (int s = 0; s < RG_ALLOC_NR_STRATEGIES; s++) {
		setup(&f, s, 3, RG_U64_MAX);
		report(&f, 0, RG_U64_MAX, RG_U64_MAX, HB_NS); /* saturating sum */
		report(&f, 1, d[1], 0, HB_NS);
		report(&f, 2, d[2], 0, HB_NS);
		rg_alloc_round(&f.db, &f.p, HB_NS);
		CHECK(f.fe[0].demand_rows_per_s == RG_U64_MAX, "demand saturates");
		CHECK(sum_quota(&f) <= RG_U64_MAX, "%s: sum %llu over L",
		      rg_alloc_strategy_name(s), (unsigned long long)(sum_quota(&f) >> 64));
		CHECK(q(&f, 0) >= RG_U64_MAX / 3 - 1, "%s: thirds of U64 max: %llu",
		      rg_alloc_strategy_name(s), (unsigned long long)q(&f, 0));
	}
	/* tiny demand under a huge limit: all of L given out, exactly */
	setup(&f, RG_ALLOC_WATERFILL, 3, RG_U64_MAX);
	d[0] = 1, d[1] = 10, d[2] = 0;
	round_with(&f, d, 3, HB_NS);
	CHECK(sum_quota(&f) == RG_U64_MAX, "sum == U64 max");
	CHECK(q(&f, 1) > q(&f, 2), "headroom follows demand");
	CHECK(rg_alloc_outstanding(&f.db) == RG_U64_MAX, "outstanding");
	printf("ok   U64 max limit and demands: exact, no wrap, every strategy\n");
}

/* splitmix64: a fixed sequence, so failures reproduce */
static __u64 rng_state = 0x5eed;

static __u64 rnd(void)
{
	__u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u64 rnd_value(void)
{
	switch (rnd() % 5) {
	case 0:
		return 0;
	case 1:
		return rnd() % 16;
	case 2:
		return rnd() % 100000;
	case 3:
		return RG_U64_MAX - rnd() % 4;
	default:
		return rnd() >> (rnd() % 64);
	}
}

/* Max-min fairness: a frontend that gets less than its estimate is at the
 * level, so nobody holds more than it (+1 for integer rounding). */
static bool maxmin_ok(const struct fixture *f, __u32 *who)
{
	for (__u32 i = 0; i < f->db.nr_fe; i++) {
		if (!(f->fe[i].flags & RG_ALLOC_FE_LIVE) ||
		    q(f, i) >= f->fe[i].est_rows_per_s)
			continue;
		for (__u32 j = 0; j < f->db.nr_fe; j++)
			if ((f->fe[j].flags & RG_ALLOC_FE_LIVE) && q(f, j) > q(f, i) + 1) {
				*who = i;
				return false;
			}
	}
	return true;
}

static void test_random_properties(void)
{
	struct fixture f;
	__u32 bad_sum = 0, bad_skip_sum = 0, bad_range = 0, bad_maxmin = 0;
	__u32 bad_full = 0, who = 0;

	for (int c = 0; c < RANDOM_CASES; c++) {
		enum rg_alloc_strategy s = c % RG_ALLOC_NR_STRATEGIES;
		__u32 n = 1 + rnd() % MAX_FE, rounds = 1 + rnd() % 4;
		__u64 L = rnd_value(), now = 0;
		unsigned __int128 sum;

		setup(&f, s, n, L);
		/* some frontends skip heartbeats: those keep their grants, and
		 * the others' increases must fit around them */
		for (__u32 r = 0; r < rounds; r++) {
			now += HB_NS;
			for (__u32 i = 0; i < n; i++)
				if (rnd() % 8)
					report(&f, i, rnd_value(), rnd() % 2 ? rnd_value() : 0, now);
			rg_alloc_round(&f.db, &f.p, now);
			/* only a newcomer's floor may go past what is free */
			if (L != 0 && sum_quota(&f) > (unsigned __int128)L + n)
				bad_skip_sum++;
		}
		/* the limit changes, every live frontend reports */
		if (rnd() % 2)
			f.db.limit_rows_per_s = L = rnd_value();
		now += HB_NS;
		for (__u32 i = 0; i < n; i++)
			report(&f, i, rnd_value(), rnd() % 2 ? rnd_value() : 0, now);
		rg_alloc_round(&f.db, &f.p, now);
		sum = sum_quota(&f);
		if (L != 0 && sum > (L > f.db.nr_live ? L : f.db.nr_live))
			bad_sum++;
		for (__u32 i = 0; i < n; i++)
			if (L == 0 ? q(&f, i) != 0 : (q(&f, i) < 1 || q(&f, i) > L))
				bad_range++;
		if (s != RG_ALLOC_WATERFILL || L <= f.db.nr_live)
			continue;
		if (!maxmin_ok(&f, &who))
			bad_maxmin++;
		/* efficiency: all of L is handed out (headroom or water level) */
		if (sum != L)
			bad_full++;
	}
	CHECK(bad_skip_sum == 0, "%u rounds with skipped heartbeats: sum > L + n", bad_skip_sum);
	CHECK(bad_sum == 0, "%u cases with sum of quotas > max(L, live frontends)", bad_sum);
	CHECK(bad_range == 0, "%u quotas outside [1, L]", bad_range);
	CHECK(bad_maxmin == 0, "%u waterfill rounds not max-min fair (e.g. fe %u)",
	      bad_maxmin, who);
	CHECK(bad_full == 0, "%u waterfill rounds that left part of L unassigned", bad_full);
	printf("ok   %d random cases, all strategies: sum <= max(L, n) once all report "
	       "(<= L + n with skipped heartbeats), quotas in [1, L]; waterfill max-min "
	       "fair and sum == L\n", RANDOM_CASES);
}

static void test_maxmin_example(void)
{
	struct fixture f;
	__u64 d[4] = { 50, 200, 900, 5000 };

	setup(&f, RG_ALLOC_WATERFILL, 4, 1000);
	round_with(&f, d, 4, HB_NS);
	/* 50 and 200 fit; 750 left for two: 375 each */
	CHECK(q(&f, 0) == 50 && q(&f, 1) == 200 && q(&f, 2) == 375 && q(&f, 3) == 375,
	      "%llu %llu %llu %llu", (unsigned long long)q(&f, 0),
	      (unsigned long long)q(&f, 1), (unsigned long long)q(&f, 2),
	      (unsigned long long)q(&f, 3));
	printf("ok   water level: 50 200 375 375 of 1000\n");
}

static void test_anchor_examples(void)
{
	static const struct {
		enum rg_alloc_strategy s;
		__u64 want[3];
	} cases[] = {
		/* L 100, wants 10 50 80; the floor is reserved first, so
		 * each rule shares 97 over the claims 9 49 79 and adds 1 */
		{ RG_ALLOC_GREPTIME_DOC, { 7, 35, 56 } },
		{ RG_ALLOC_EVEN, { 33, 33, 33 } },
		/* eq 32; 23 left by the small one, excess 17 + 47:
		 * top-ups 6 and 16 */
		{ RG_ALLOC_DOORMAN_PROPORTIONAL, { 10, 39, 49 } },
		/* eq 32, extra 23 over 2: level 43; no second round */
		{ RG_ALLOC_DOORMAN_FAIR, { 10, 44, 44 } },
	};
	__u64 d[3] = { 10, 50, 80 };
	struct fixture f;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		setup(&f, cases[c].s, 3, 100);
		round_with(&f, d, 3, HB_NS);
		for (__u32 i = 0; i < 3; i++)
			CHECK(q(&f, i) == cases[c].want[i], "%s fe %u: %llu want %llu",
			      rg_alloc_strategy_name(cases[c].s), i,
			      (unsigned long long)q(&f, i),
			      (unsigned long long)cases[c].want[i]);
	}
	CHECK(rg_alloc_strategy_parse("doorman-fair") == RG_ALLOC_DOORMAN_FAIR, "parse");
	CHECK(rg_alloc_strategy_parse("nope") == -1, "parse unknown");
	printf("ok   anchors on L 100, wants 10 50 80: documented results\n");
}

static void test_stability(void)
{
	struct fixture f, g;
	__u64 d[8], first[8];
	bool changed = false;
	__u32 changes = 0, reversals = 0;
	int dir[8] = { 0 };

	for (__u32 i = 0; i < 8; i++)
		d[i] = 1000 * (i + 1);
	/* same input twice, from the same state: same output */
	setup(&f, RG_ALLOC_WATERFILL, 8, 20000);
	setup(&g, RG_ALLOC_WATERFILL, 8, 20000);
	round_with(&f, d, 8, HB_NS);
	round_with(&g, d, 8, HB_NS);
	CHECK(memcmp(f.fe, g.fe, sizeof(f.fe[0]) * 8) == 0, "deterministic");

	/* steady demand with +-1 % noise, overloaded: after the first round
	 * quotas do not move for 500 rounds */
	for (__u32 i = 0; i < 8; i++)
		first[i] = q(&f, i);
	for (__u32 r = 2; r < 500; r++) {
		for (__u32 i = 0; i < 8; i++) {
			__u64 noisy = d[i] * (1000 + rnd() % 21 - 10) / 1000;

			report(&f, i, noisy < first[i] ? noisy : first[i],
			       noisy > first[i] ? noisy - first[i] : 0, r * HB_NS);
		}
		rg_alloc_round(&f.db, &f.p, r * HB_NS);
		for (__u32 i = 0; i < 8; i++) {
			if (q(&f, i) != first[i]) {
				int d1 = q(&f, i) > first[i] ? 1 : -1;

				reversals += dir[i] && dir[i] != d1;
				dir[i] = d1;
				changes++;
			}
			first[i] = q(&f, i);
		}
	}
	/* a throttled frontend may ratchet up to its noise peak (a record is
	 * ever rarer), the level down with it; never back and forth */
	CHECK(reversals == 0, "%u quota direction reversals under steady demand",
	      reversals);
	CHECK(changes <= 64, "%u quota changes in 500 noisy steady rounds", changes);
	CHECK(sum_quota(&f) == 20000, "still all of L");

	/* exactly steady demand: no change at all after round 1 */
	setup(&g, RG_ALLOC_WATERFILL, 8, 20000);
	round_with(&g, d, 8, HB_NS);
	memcpy(first, (__u64[8]){ 0 }, sizeof(first));
	for (__u32 i = 0; i < 8; i++)
		first[i] = q(&g, i);
	changed = false;
	for (__u32 r = 2; r < 500; r++) {
		round_with(&g, d, 8, r * HB_NS);
		for (__u32 i = 0; i < 8; i++)
			changed |= q(&g, i) != first[i];
	}
	CHECK(!changed, "quotas oscillate under exactly steady demand");
	printf("ok   stability: deterministic; steady demand holds quotas; +-1 %% "
	       "noise: %u monotone changes in 500 rounds, no reversal\n", changes);
}

static void test_async_grant(void)
{
	struct fixture f;
	__u64 d[2] = { 900, 100 };

	setup(&f, RG_ALLOC_WATERFILL, 2, 1000);
	round_with(&f, d, 2, HB_NS);
	CHECK(q(&f, 0) == 900 && q(&f, 1) == 100, "start %llu %llu",
	      (unsigned long long)q(&f, 0), (unsigned long long)q(&f, 1));
	/* demand moves from fe 0 to fe 1; in one round both replies go out */
	report(&f, 0, 100, 0, 2 * HB_NS);
	report(&f, 1, 100, 800, 2 * HB_NS);
	rg_alloc_round(&f.db, &f.p, 2 * HB_NS);
	CHECK(q(&f, 0) == 100 && q(&f, 1) == 900, "round: %llu %llu",
	      (unsigned long long)q(&f, 0), (unsigned long long)q(&f, 1));

	/* replies on each frontend's own schedule: fe 1 is answered first
	 * and may not take what fe 0 still enforces */
	setup(&f, RG_ALLOC_WATERFILL, 2, 1000);
	round_with(&f, d, 2, HB_NS);
	report(&f, 0, 100, 0, 2 * HB_NS);
	report(&f, 1, 100, 800, 2 * HB_NS);
	CHECK(rg_alloc_round(&f.db, &f.p, 2 * HB_NS) == 2, "two live");
	f.fe[0].quota_rows_per_s = 900; /* as if neither reply had gone out */
	f.fe[1].quota_rows_per_s = 100;
	CHECK(rg_alloc_grant(&f.db, &f.p, 1, 2 * HB_NS) == 100,
	      "increase capped by the others' grants");
	CHECK(rg_alloc_grant(&f.db, &f.p, 0, 2 * HB_NS) == 100, "decrease at once");
	CHECK(rg_alloc_grant(&f.db, &f.p, 1, 3 * HB_NS) == 900, "then the increase");
	CHECK(rg_alloc_outstanding(&f.db) == 1000, "outstanding 1000");
	printf("ok   async grants never let outstanding quotas exceed L\n");
}

int main(void)
{
	test_limit_below_frontends();
	test_new_frontend();
	test_silent_frontend();
	test_limit_change();
	test_limit_zero();
	test_u64_max();
	test_maxmin_example();
	test_anchor_examples();
	test_random_properties();
	test_stability();
	test_async_grant();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
