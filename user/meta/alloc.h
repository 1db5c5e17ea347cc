/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Quota allocation (the Metasrv role): share one database's limit L among the
 * frontends that enforce it, from the demand they report in heartbeats.
 * Pure userspace code: no I/O, no allocation; the caller owns every array.
 *
 * Contract (docs/design.md#semantics):
 *   - every live frontend's quota is in [1, L]; L = 0 (unset) grants 0,
 *     which the frontend reads as "no assignment: use L", i.e. unlimited;
 *   - the sum of the quotas outstanding (granted, lease not expired) never
 *     exceeds L, except when L < number of live frontends: the 1 row/s
 *     floor then forces a sum of exactly that number;
 *   - a frontend that stops reporting keeps its share (it may still enforce
 *     it) until its lease ends, then loses it.
 *
 * Where smoothing lives: a frontend reports rates over its heartbeat interval
 * (counter deltas / interval: a boxcar average over that interval, free).
 * The allocator adds hysteresis, not an EWMA: an estimate moves only when the
 * new sample differs by more than a deadband, except that a frontend that
 * rejected rows may always raise it.  An EWMA of weight 1/2 would need four
 * heartbeats to bring a step within 5 %; the deadband costs none.
 */
#ifndef ROWGATE_ALLOC_H
#define ROWGATE_ALLOC_H

#include "rowgate/types.h"
#include "../lib/clock.h" /* RG_NSEC_PER_MSEC */

/* Grants stay valid for 3 heartbeats of 1 s: one lost heartbeat must not cost
 * a frontend its share, a dead one must not hold it for long. */
#define RG_ALLOC_LEASE_MS_DEFAULT 3000ULL
/* Demand changes within 2 % leave the estimate, hence the quotas, alone:
 * steady but noisy demand gives steady quotas, at most 2 % of an
 * unthrottled frontend's quota idle. */
#define RG_ALLOC_DEADBAND_PERMILLE_DEFAULT 20
/* Spare capacity is headroom: half split equally (an idle frontend whose
 * traffic starts gets some at once), half by demand (growth is mostly
 * relative, so busy frontends need more room). */
#define RG_ALLOC_HEADROOM_EQUAL_PERMILLE_DEFAULT 500

enum rg_alloc_strategy {
	/* rowgate: max-min fair water-filling of L over demand estimates,
	 * spare capacity given out as headroom, hysteresis on demand */
	RG_ALLOC_WATERFILL = 0,
	/* our reading of the GreptimeDB documentation: "allocates quotas based on
	 * reported demand and redistributes spare capacity" = each frontend gets
	 * L * demand / total demand (equal shares when nobody reports demand) */
	RG_ALLOC_GREPTIME_DOC,
	/* Mimir/Loki "global" strategy: L / number of live frontends */
	RG_ALLOC_EVEN,
	/* Doorman ProportionalShare: wants when the total fits, else an equal
	 * share plus a top-up proportional to the excess want */
	RG_ALLOC_DOORMAN_PROPORTIONAL,
	/* Doorman FairShare: equal share, then two rounds of redistribution of
	 * what frontends below it leave */
	RG_ALLOC_DOORMAN_FAIR,
	RG_ALLOC_NR_STRATEGIES,
};

struct rg_alloc_params {
	enum rg_alloc_strategy strategy;
	__u64 lease_ns;                   /* grant validity; > 0 */
	__u32 deadband_permille;          /* 0 = every sample moves the estimate */
	__u32 headroom_equal_permille;    /* share of spare split equally; the
					   * rest goes by demand (WATERFILL only) */
};

/* One heartbeat's figures for one database, as rates over the interval. */
struct rg_alloc_report {
	__u64 admitted_rows_per_s;
	__u64 rejected_rows_per_s; /* rows of rejected writes (unmet demand) */
	__u64 debt_rows;           /* bucket debt at the heartbeat */
};

#define RG_ALLOC_FE_LIVE    (1U << 0) /* reported within its lease */
#define RG_ALLOC_FE_PENDING (1U << 1) /* reported since its last grant */

/* One frontend's slot in one database's allocation.  Zeroed = unused. */
struct rg_alloc_fe {
	/* last heartbeat, as reported */
	__u64 demand_rows_per_s;   /* admitted + rejected, saturating */
	__u64 rejected_rows_per_s;
	__u64 debt_rows;           /* kept for the admin API; rejected rows
				    * already carry the unmet demand */
	__u64 last_hb_ns;
	/* allocator state */
	__u64 est_rows_per_s;      /* demand estimate after hysteresis */
	__u64 target_rows_per_s;   /* share computed by the last round */
	/* the grant the frontend enforces (its heartbeat reply) */
	__u64 quota_rows_per_s;    /* 0 = none: the frontend uses L */
	__u64 lease_expiry_ns;     /* the frontend uses L from then on */
	__u32 flags;               /* RG_ALLOC_FE_* */
	__u32 pad;
};

/* One database.  fe[] and order[] (scratch, keeps rounds allocation-free)
 * hold nr_fe entries each; a frontend keeps its index while live. */
struct rg_alloc_db {
	__u64 limit_rows_per_s; /* L; 0 = unlimited; may change between rounds */
	__u32 nr_fe;
	__u32 nr_live;          /* set by rg_alloc_round() */
	struct rg_alloc_fe *fe;
	__u32 *order;
};

/* Defaults for strategy s (hysteresis and headroom only for WATERFILL: the
 * anchors run as their authors describe them). */
void rg_alloc_params_init(struct rg_alloc_params *p, enum rg_alloc_strategy s);

/* Short stable name ("waterfill", "greptime-doc", "even", "doorman-prop",
 * "doorman-fair"), NULL when s is out of range; and the reverse, -1 if
 * unknown. */
const char *rg_alloc_strategy_name(enum rg_alloc_strategy s);
int rg_alloc_strategy_parse(const char *name);

/* Zero nr slots and bind them to db. */
void rg_alloc_db_init(struct rg_alloc_db *db, struct rg_alloc_fe *fe,
		      __u32 *order, __u32 nr, __u64 limit_rows_per_s);

/* Record frontend i's heartbeat at now_ns: it becomes live and pending, and
 * its demand estimate is updated.  i < nr_fe. */
void rg_alloc_report(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u32 i, const struct rg_alloc_report *r, __u64 now_ns);

/* Frontend i left cleanly (it no longer enforces anything): free its slot and
 * its share now instead of at lease expiry. */
void rg_alloc_forget(struct rg_alloc_db *db, __u32 i);

/*
 * One allocation round at now_ns: frontends whose lease ended are dropped,
 * targets are computed for all live frontends, and every pending frontend
 * is granted (decreases first, so increases find the room).  Returns the
 * number of live frontends.
 */
__u32 rg_alloc_round(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u64 now_ns);

/*
 * Grant frontend i its last target for a reply sent on its own schedule:
 * a decrease is granted at once; an increase only as far as the grants the
 * others still hold leave room under L (at least 1), the rest at a later
 * heartbeat.  Sets quota and lease of fe[i] and returns the quota.
 */
__u64 rg_alloc_grant(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u32 i, __u64 now_ns);

/* Sum of the quotas live frontends hold, saturating at U64 max. */
__u64 rg_alloc_outstanding(const struct rg_alloc_db *db);

#endif /* ROWGATE_ALLOC_H */
