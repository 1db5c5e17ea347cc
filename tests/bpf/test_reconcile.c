// SPDX-License-Identifier: MIT
/* rg_reconcile through BPF_PROG_TEST_RUN: the HTTP object loaded with
 * private maps, fed struct rg_correction records as rowgated feeds them
 * (user/rowgated/reconcile.c), and every map it writes compared with the shared
 * bucket model (rowgate/bucket.h) applied to the state read before the run.
 *
 *   test_reconcile      run the tests (needs root; exit 77 otherwise)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "rowgate.skel.h"
#include "../unit/check.h"
#include "maps_test.h"

#define LIMIT 1000ULL

static struct rowgate *skel;

/* A limited database with a bucket that is `debt` rows in debt (or full). */
static int limited_db(const char *name, __u64 debt)
{
	struct rg_db_key k = dbkey(name);
	struct rg_limit lim = { .limit_rows_per_s = LIMIT };
	struct rg_bucket_value bv;

	memset(&bv, 0, sizeof(bv));
	rg_bucket_init(&bv.b, LIMIT, mono_ns());
	if (debt)
		rg_bucket_charge(&bv.b, LIMIT + debt);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.limits), &k, &lim, BPF_ANY))
		return -errno;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.buckets), &k, &bv, BPF_ANY))
		return -errno;
	return 0;
}

static struct rg_bucket bucket_of(const char *name)
{
	return bucket_in(bpf_map__fd(skel->maps.buckets), name);
}

/* A database's counters; a database without an entry reads as all-ones,
 * which no correction here can produce. */
static struct rg_db_stats db_stats_of(const char *name)
{
	struct rg_db_key k = dbkey(name);
	struct rg_db_stats st;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.db_stats), &k, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

static struct rg_proto_stats proto_stats_of(const char *name, __u32 protocol)
{
	struct rg_proto_key k;
	struct rg_proto_stats ps;

	memset(&k, 0, sizeof(k));
	k.db = dbkey(name);
	k.protocol = protocol;
	memset(&ps, 0, sizeof(ps));
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.proto_stats), &k, &ps);
	return ps;
}

/* The db_stats entry rowgated creates with a limit (the program never does). */
static void db_stats_create(const char *name)
{
	struct rg_db_key k = dbkey(name);
	struct rg_db_stats zero;

	memset(&zero, 0, sizeof(zero));
	bpf_map_update_elem(bpf_map__fd(skel->maps.db_stats), &k, &zero, BPF_NOEXIST);
}

static int run(const struct rg_correction *cr, size_t len, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = cr, .data_size_in = (__u32)len);
	int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.rg_reconcile), &opts);

	*retval = opts.retval;
	return err;
}

static struct rg_correction correction(const char *db, __u32 protocol, int admitted,
				       __u64 est, __u64 exact)
{
	struct rg_correction cr;

	memset(&cr, 0, sizeof(cr));
	cr.admitted = (__u8)admitted;
	cr.db = dbkey(db);
	cr.protocol = protocol;
	cr.estimated_rows = est;
	cr.exact_rows = exact;
	cr.lag_ns = 1000;
	return cr;
}

struct step {
	const char *name;
	const char *db;
	int admitted;
	int undecodable;
	__u64 est, exact;
	__u64 lag_ns; /* 0: a fresh correction (1 us) */
};

/* One correction: the bucket moves as the model says, the counters by the
 * difference, the reconciliation counters once. */
static void check_step(const struct step *s)
{
	struct rg_correction cr = correction(s->db, RG_PROTO_PROM_RW, s->admitted, s->est,
					     s->exact);
	struct rg_bucket want = bucket_of(s->db), got;
	struct rg_db_stats st0 = db_stats_of(s->db), st1;
	struct rg_proto_stats ps0 = proto_stats_of(s->db, RG_PROTO_PROM_RW), ps1;
	struct rg_limit lim;
	struct rg_db_key k = dbkey(s->db);
	bool limited = !bpf_map_lookup_elem(bpf_map__fd(skel->maps.limits), &k, &lim) &&
		       lim.limit_rows_per_s;
	bool skipped = s->undecodable && s->exact <= s->est;
	__u64 diff = s->exact - s->est; /* mod 2^64, as the program adds it */
	__u64 diff_db = diff;
	__u32 ret = 0;

	cr.undecodable = (__u8)s->undecodable;
	if (s->lag_ns)
		cr.lag_ns = s->lag_ns;
	CHECK(run(&cr, sizeof(cr), &ret) == 0 && ret == XDP_PASS, "%s: run (retval %u)", s->name,
	      ret);
	if (limited && s->admitted && !skipped) {
		if (s->exact > s->est)
			rg_bucket_charge(&want, s->exact - s->est);
		else if (rg_refund_credited(cr.lag_ns))
			rg_bucket_refund(&want, s->est - s->exact);
	}
	got = bucket_of(s->db);
	CHECK(memcmp(&got, &want, sizeof(got)) == 0,
	      "%s: bucket tokens %llu debt %llu, model tokens %llu debt %llu", s->name,
	      (unsigned long long)got.tokens, (unsigned long long)got.debt_rows,
	      (unsigned long long)want.tokens, (unsigned long long)want.debt_rows);
	st1 = db_stats_of(s->db);
	ps1 = proto_stats_of(s->db, RG_PROTO_PROM_RW);
	if (st0.admitted_rows == RG_U64_MAX) {
		/* the program never creates a database's counters */
		CHECK_EQ_U64(st1.admitted_rows, RG_U64_MAX, s->name);
		st1 = st0;
		diff_db = 0;
	}
	if (skipped) {
		CHECK_EQ_U64(st1.admitted_rows, st0.admitted_rows, s->name);
		CHECK_EQ_U64(st1.rejected_rows, st0.rejected_rows, s->name);
		CHECK_EQ_U64(ps1.undecodable_requests, ps0.undecodable_requests + 1, s->name);
		CHECK_EQ_U64(ps1.reconciled_requests, ps0.reconciled_requests, s->name);
		return;
	}
	CHECK_EQ_U64(st1.admitted_rows, st0.admitted_rows + (s->admitted ? diff_db : 0), s->name);
	CHECK_EQ_U64(st1.rejected_rows, st0.rejected_rows + (s->admitted ? 0 : diff_db), s->name);
	CHECK_EQ_U64(ps1.admitted_rows, ps0.admitted_rows + (s->admitted ? diff : 0), s->name);
	CHECK_EQ_U64(ps1.rejected_rows, ps0.rejected_rows + (s->admitted ? 0 : diff), s->name);
	CHECK_EQ_U64(ps1.undecodable_requests, ps0.undecodable_requests + !!s->undecodable,
		     s->name);
	/* an undecodable body is charged, not reconciled */
	CHECK_EQ_U64(ps1.reconciled_requests, ps0.reconciled_requests + !s->undecodable, s->name);
	CHECK_EQ_U64(ps1.reconciled_rows, ps0.reconciled_rows + (s->undecodable ? 0 : s->exact),
		     s->name);
}

static const struct step steps[] = {
	{ "admitted, estimate too low: charged the rest", "full", 1, 0, 10, 250, 0 },
	{ "admitted, estimate too high: refunded", "full", 1, 0, 400, 100, 0 },
	{ "refund beyond capacity stops at a full bucket", "full", 1, 0, 5000, 0, 0 },
	{ "charge into debt", "full", 1, 0, 0, 3000, 0 },
	{ "refund pays debt first", "debt", 1, 0, 700, 200, 0 },
	{ "refund larger than the debt fills tokens", "debt", 1, 0, 5000, 1, 0 },
	{ "exact estimate: bucket unchanged", "debt", 1, 0, 42, 42, 0 },
	{ "refund at the freshness bound: credited", "debt", 1, 0, 700, 200, RG_REFUND_CREDIT_NS },
	{ "late refund: estimate stands in the bucket, counters exact", "debt", 1, 0, 700, 200,
	  RG_REFUND_CREDIT_NS + 1 },
	{ "late refund into a full bucket: unchanged", "full", 1, 0, 400, 100,
	  60 * RG_NSEC_PER_SEC },
	{ "late charge: charged all the same", "debt", 1, 0, 10, 250, 60 * RG_NSEC_PER_SEC },
	{ "rejected: bucket untouched, rejected rows corrected", "debt", 0, 0, 100, 130, 0 },
	{ "rejected, estimate too high", "debt", 0, 0, 130, 100, 0 },
	{ "undecodable within the estimate: estimate stands", "debt", 1, 1, 500, 20, 0 },
	{ "undecodable above the estimate: worst case charged", "debt", 1, 1, 20, 900, 0 },
	{ "no limit: counters move, no bucket", "free", 1, 0, 5, 50, 0 },
	{ "limit unset (0): bucket kept, not charged", "off", 1, 0, 0, 77, 0 },
};

static void test_truncated(void)
{
	struct rg_correction cr = correction("full", RG_PROTO_PROM_RW, 1, 0, 1000000);
	struct rg_bucket before = bucket_of("full"), after;
	__u32 ret = 0;

	CHECK(run(&cr, sizeof(cr) - 1, &ret) == 0 && ret == XDP_ABORTED,
	      "a short record is aborted (retval %u)", ret);
	after = bucket_of("full");
	CHECK(memcmp(&before, &after, sizeof(before)) == 0, "a short record charges nothing");
}

int main(void)
{
	struct bpf_map *map;
	struct rg_limit off = { 0 };
	struct rg_db_key k;
	size_t i;
	int err;

	if (geteuid() != 0) {
		printf("SKIP: needs root (BPF_PROG_TEST_RUN)\n");
		return 77;
	}
	skel = rowgate__open();
	if (!skel) {
		fprintf(stderr, "cannot open the HTTP object: %s\n", strerror(errno));
		return 1;
	}
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_pin_path(map, NULL); /* private maps */
	err = rowgate__load(skel);
	if (err) {
		fprintf(stderr, "cannot load the HTTP object: %s\n", strerror(-err));
		return 1;
	}
	err = limited_db("full", 0);
	err = err ?: limited_db("debt", 2000);
	err = err ?: limited_db("off", 0);
	if (err) {
		fprintf(stderr, "cannot fill the maps: %s\n", strerror(-err));
		return 1;
	}
	k = dbkey("off");
	bpf_map_update_elem(bpf_map__fd(skel->maps.limits), &k, &off, BPF_ANY);
	db_stats_create("full");
	db_stats_create("debt");
	db_stats_create("off");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int before = check_failures;

		check_step(&steps[i]);
		printf("%s  %s\n", check_failures == before ? "ok  " : "FAIL", steps[i].name);
	}
	test_truncated();
	printf("%s  a short record\n", check_failures ? "?   " : "ok  ");
	rowgate__destroy(skel);
	return check_report("test_reconcile");
}
