// SPDX-License-Identifier: MIT
/* rowgate-meta's allocation glue (user/meta/cluster.c) over rg_alloc_*:
 * heartbeats on each frontend's own schedule, convergence of a skewed
 * demand, the learning phase after a failover, lease expiry, limits. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "../../user/meta/cluster.h"

#define MS 1000000ULL

/* One heartbeat of node with one database report; returns the quota. */
static __u64 beat(struct rg_cluster *cl, const char *node, const char *db, __u64 adm,
		  __u64 rej, __u64 held, __u64 now, bool *learning)
{
	struct rg_meta_hb_db d = { .admitted_rows_per_s = adm, .rejected_rows_per_s = rej,
				   .quota_rows_per_s = held };
	struct rg_meta_hb_req req = { .count = db ? 1 : 0, .dbs = &d };
	struct rg_meta_hb_reply reply;
	char err[128];
	__u64 q = ~0ULL;

	snprintf(req.node_id, sizeof(req.node_id), "%s", node);
	if (db)
		snprintf(d.db.name, sizeof(d.db.name), "%s", db);
	CHECK(rg_cluster_heartbeat(cl, &req, now, &reply, err, sizeof(err)) == 0, "hb: %s", err);
	for (size_t i = 0; i < reply.count; i++)
		if (db && !strcmp(reply.dbs[i].db.name, db))
			q = reply.dbs[i].quota_rows_per_s;
	if (learning)
		*learning = reply.learning;
	rg_meta_hb_reply_free(&reply);
	return q;
}

static struct rg_db_key key(const char *name)
{
	struct rg_db_key k = {};

	snprintf(k.name, sizeof(k.name), "%s", name);
	return k;
}

/* The e2e scenario in miniature: 80/15/5 of 2 x L, frontends enforcing
 * their grants; the sum of quotas stays <= L and the frontends' admitted
 * rates (min(offered, quota)) sum to L within 3 heartbeats. */
static void test_skew_converges(void)
{
	static const char *const node[3] = { "fe1", "fe2", "fe3" };
	const __u64 L = 300, offered[3] = { 480, 90, 30 };
	__u64 quota[3] = { 0, 0, 0 }, now = 1000 * MS, sum;
	struct rg_cluster cl;
	struct rg_db_key db = key("logs");
	int round;

	CHECK(rg_cluster_init(&cl, RG_ALLOC_WATERFILL, 3000, 500, 0) == 0, "init");
	CHECK(rg_cluster_set_limit(&cl, &db, L) == 0, "set");
	rg_cluster_start_leading(&cl, now);
	for (round = 1; round <= 6; round++) {
		__u64 admitted = 0;

		for (int i = 0; i < 3; i++) {
			/* what the frontend saw with its current quota (0 = L) */
			__u64 q = quota[i] ? quota[i] : L;
			__u64 adm = offered[i] < q ? offered[i] : q;

			quota[i] = beat(&cl, node[i], "logs", adm, offered[i] - adm, quota[i],
					now + (__u64)i * 100 * MS, NULL);
		}
		now += 500 * MS;
		sum = quota[0] + quota[1] + quota[2];
		for (int i = 0; i < 3; i++)
			admitted += offered[i] < quota[i] ? offered[i] : quota[i];
		/* round 1: a frontend granted while the first holds all of L gets
		 * the 1 row/s floor (alloc.h); from then on the sum fits L */
		CHECK(sum <= L + (round == 1 ? 2 : 0), "round %d: quotas sum to %llu > L", round,
		      (unsigned long long)sum);
		if (round >= 3)
			CHECK(admitted * 100 >= L * 95 && admitted <= L,
			      "round %d: admitted %llu not within 5%% of %llu", round,
			      (unsigned long long)admitted, (unsigned long long)L);
	}
	CHECK(quota[1] >= 90 && quota[2] >= 30, "small frontends get their demand: %llu %llu",
	      (unsigned long long)quota[1], (unsigned long long)quota[2]);
	rg_cluster_free(&cl);
}

/* A new leader adopts what frontends hold for the learning phase, then
 * allocates; the sum never exceeds what was held. */
static void test_learning(void)
{
	struct rg_cluster cl;
	struct rg_db_key db = key("logs");
	__u64 now = 5000 * MS, q1, q2;
	bool learning = false;

	rg_cluster_init(&cl, RG_ALLOC_WATERFILL, 3000, 500, 1000);
	rg_cluster_set_limit(&cl, &db, 300);
	rg_cluster_start_leading(&cl, now);
	CHECK(rg_cluster_learning(&cl, now), "learning at start");
	q1 = beat(&cl, "fe1", "logs", 200, 500, 200, now, &learning);
	CHECK(learning, "reply says learning");
	CHECK_EQ_U64(q1, 200, "adopted fe1's quota");
	q2 = beat(&cl, "fe2", "logs", 10, 0, 100, now + 10 * MS, NULL);
	CHECK_EQ_U64(q2, 100, "adopted fe2's quota");
	/* held above L (the limit was lowered meanwhile): capped */
	CHECK_EQ_U64(beat(&cl, "fe3", "logs", 0, 0, 999, now + 20 * MS, NULL), 300, "capped");
	CHECK_EQ_U64(beat(&cl, "fe3", "logs", 0, 0, 0, now + 30 * MS, NULL), 0,
		     "nothing held: no assignment");
	/* after learning: normal allocation, decreases first */
	now += 1001 * MS;
	CHECK(!rg_cluster_learning(&cl, now), "learning over");
	q2 = beat(&cl, "fe2", "logs", 10, 0, 100, now, &learning);
	CHECK(!learning, "reply not learning");
	CHECK(q2 < 100, "fe2 decreased to its demand plus headroom: %llu", (unsigned long long)q2);
	q1 = beat(&cl, "fe1", "logs", 200, 500, 200, now + 10 * MS, NULL);
	CHECK(q1 > 200 && q1 + q2 <= 300, "fe1 grows into the room: %llu + %llu",
	      (unsigned long long)q1, (unsigned long long)q2);
	rg_cluster_free(&cl);
}

/* A frontend that stops heartbeating loses its share when its lease ends. */
static void test_lease_expiry(void)
{
	struct rg_cluster cl;
	struct rg_db_key db = key("logs");
	__u64 now = 1000 * MS, q1 = 0;

	rg_cluster_init(&cl, RG_ALLOC_WATERFILL, 3000, 500, 0);
	rg_cluster_set_limit(&cl, &db, 300);
	rg_cluster_start_leading(&cl, now);
	for (int i = 0; i < 4; i++, now += 500 * MS) {
		q1 = beat(&cl, "fe1", "logs", 150, 400, q1, now, NULL);
		beat(&cl, "fe2", "logs", 150, 400, 0, now + MS, NULL);
	}
	CHECK(q1 >= 140 && q1 <= 160, "even split of equal demand: %llu", (unsigned long long)q1);
	/* fe2 goes silent: within the lease fe1 cannot grow, after it it gets all */
	q1 = beat(&cl, "fe1", "logs", 150, 400, q1, now + 1000 * MS, NULL);
	CHECK(q1 <= 160, "fe2's grant still reserved: %llu", (unsigned long long)q1);
	q1 = beat(&cl, "fe1", "logs", 150, 400, q1, now + 3500 * MS, NULL);
	CHECK_EQ_U64(q1, 300, "fe2's share freed after its lease");
	rg_cluster_free(&cl);
}

static void test_limits(void)
{
	struct rg_cluster cl;
	struct rg_db_key a = key("a"), b = key("b"), c = key("c");
	struct rg_limit_list list;
	__u64 now = 1000 * MS;

	rg_cluster_init(&cl, RG_ALLOC_WATERFILL, 3000, 1000, 0);
	rg_cluster_start_leading(&cl, now);
	CHECK(rg_cluster_set_limit(&cl, &b, 100) == 0, "set b");
	CHECK(rg_cluster_set_limit(&cl, &a, 50) == 0, "set a");
	CHECK_EQ_U64(beat(&cl, "fe1", "a", 0, 0, 0, now, NULL), 50, "one frontend gets L");
	CHECK(rg_cluster_unset_limit(&cl, &c) == -ENOENT, "unset missing");
	CHECK(rg_cluster_unset_limit(&cl, &b) == 0, "unset b");
	CHECK_EQ_U64(cl.nr_dbs, 1, "one db left");
	CHECK(!strcmp(cl.dbs[0].db.name, "a"), "a left");
	/* L = 0: configured but disabled, quota 0 */
	rg_cluster_set_limit(&cl, &a, 0);
	CHECK_EQ_U64(beat(&cl, "fe1", "a", 10, 0, 0, now + MS, NULL), 0, "disabled: no quota");
	/* a new leader replaces everything with the store's list */
	rg_limit_list_init(&list);
	rg_limit_list_set(&list, &c, 10);
	CHECK(rg_cluster_replace_limits(&cl, &list) == 0, "replace");
	CHECK(cl.nr_dbs == 1 && !strcmp(cl.dbs[0].db.name, "c"), "only c");
	CHECK_EQ_U64(cl.dbs[0].alloc.nr_fe, 1, "c has a slot for fe1");
	rg_limit_list_free(&list);
	/* reports of databases without a limit are ignored */
	CHECK_EQ_U64(beat(&cl, "fe2", "zzz", 10, 0, 0, now + 2 * MS, NULL), ~0ULL,
		     "unknown db not in the reply");
	rg_cluster_free(&cl);
}

int main(void)
{
	test_skew_converges();
	test_learning();
	test_lease_expiry();
	test_limits();
	return check_report("test_meta_cluster");
}
