// SPDX-License-Identifier: GPL-2.0
/* Quota allocation: max-min fair water-filling with headroom, and the anchor
 * strategies it is compared with.  See alloc.h.
 *
 * Userspace only, so sums and products use unsigned __int128: L and every
 * demand may be anywhere in u64 and a database may have many frontends.
 */
#include <stddef.h>
#include <string.h>

#include "alloc.h"

typedef unsigned __int128 u128;

#define PERMILLE 1000U

static const char *const strategy_names[RG_ALLOC_NR_STRATEGIES] = {
	[RG_ALLOC_WATERFILL] = "waterfill",
	[RG_ALLOC_GREPTIME_DOC] = "greptime-doc",
	[RG_ALLOC_EVEN] = "even",
	[RG_ALLOC_DOORMAN_PROPORTIONAL] = "doorman-prop",
	[RG_ALLOC_DOORMAN_FAIR] = "doorman-fair",
};

const char *rg_alloc_strategy_name(enum rg_alloc_strategy s)
{
	if ((unsigned int)s >= RG_ALLOC_NR_STRATEGIES)
		return NULL;
	return strategy_names[s];
}

int rg_alloc_strategy_parse(const char *name)
{
	for (int s = 0; s < RG_ALLOC_NR_STRATEGIES; s++)
		if (strcmp(name, strategy_names[s]) == 0)
			return s;
	return -1;
}

void rg_alloc_params_init(struct rg_alloc_params *p, enum rg_alloc_strategy s)
{
	memset(p, 0, sizeof(*p));
	p->strategy = s;
	p->lease_ns = RG_ALLOC_LEASE_MS_DEFAULT * RG_NSEC_PER_MSEC;
	if (s == RG_ALLOC_WATERFILL) {
		p->deadband_permille = RG_ALLOC_DEADBAND_PERMILLE_DEFAULT;
		p->headroom_equal_permille =
			RG_ALLOC_HEADROOM_EQUAL_PERMILLE_DEFAULT;
	}
}

void rg_alloc_db_init(struct rg_alloc_db *db, struct rg_alloc_fe *fe,
		      __u32 *order, __u32 nr, __u64 limit_rows_per_s)
{
	memset(fe, 0, sizeof(*fe) * nr);
	memset(order, 0, sizeof(*order) * nr);
	db->limit_rows_per_s = limit_rows_per_s;
	db->nr_fe = nr;
	db->nr_live = 0;
	db->fe = fe;
	db->order = order;
}

static __u64 sat_add(__u64 a, __u64 b)
{
	return a > RG_U64_MAX - b ? RG_U64_MAX : a + b;
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

void rg_alloc_report(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u32 i, const struct rg_alloc_report *r, __u64 now_ns)
{
	struct rg_alloc_fe *f = &db->fe[i];
	__u64 s = sat_add(r->admitted_rows_per_s, r->rejected_rows_per_s);
	__u64 diff;

	if (!(f->flags & RG_ALLOC_FE_LIVE)) {
		f->est_rows_per_s = s;
	} else if (s > f->est_rows_per_s && r->rejected_rows_per_s) {
		/* it turned writes away: never hold a starving frontend back */
		f->est_rows_per_s = s;
	} else {
		diff = s > f->est_rows_per_s ? s - f->est_rows_per_s :
					       f->est_rows_per_s - s;
		if ((u128)diff * PERMILLE >
		    (u128)f->est_rows_per_s * p->deadband_permille)
			f->est_rows_per_s = s;
	}
	f->demand_rows_per_s = s;
	f->rejected_rows_per_s = r->rejected_rows_per_s;
	f->debt_rows = r->debt_rows;
	f->last_hb_ns = now_ns;
	f->flags |= RG_ALLOC_FE_LIVE | RG_ALLOC_FE_PENDING;
}

void rg_alloc_forget(struct rg_alloc_db *db, __u32 i)
{
	memset(&db->fe[i], 0, sizeof(db->fe[i]));
}

__u64 rg_alloc_outstanding(const struct rg_alloc_db *db)
{
	u128 sum = 0;

	for (__u32 i = 0; i < db->nr_fe; i++)
		if (db->fe[i].flags & RG_ALLOC_FE_LIVE)
			sum += db->fe[i].quota_rows_per_s;
	return sum > RG_U64_MAX ? RG_U64_MAX : (__u64)sum;
}

/* Order: ascending estimate, then ascending index, so rounds are
 * deterministic whatever the slot layout. */
static bool est_less(const struct rg_alloc_fe *fe, __u32 a, __u32 b)
{
	if (fe[a].est_rows_per_s != fe[b].est_rows_per_s)
		return fe[a].est_rows_per_s < fe[b].est_rows_per_s;
	return a < b;
}

/* In-place heapsort of idx[0..n): no allocation (glibc qsort may malloc). */
static void sort_by_est(const struct rg_alloc_fe *fe, __u32 *idx, __u32 n)
{
	__u32 start, end, root, child, t;

	if (n < 2)
		return;
	for (start = n / 2; start-- > 0;) {
		for (root = start; (child = 2 * root + 1) < n; root = child) {
			if (child + 1 < n && est_less(fe, idx[child], idx[child + 1]))
				child++;
			if (!est_less(fe, idx[root], idx[child]))
				break;
			t = idx[root], idx[root] = idx[child], idx[child] = t;
		}
	}
	for (end = n - 1; end > 0; end--) {
		t = idx[0], idx[0] = idx[end], idx[end] = t;
		for (root = 0; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end &&
			    est_less(fe, idx[child], idx[child + 1]))
				child++;
			if (!est_less(fe, idx[root], idx[child]))
				break;
			t = idx[root], idx[root] = idx[child], idx[child] = t;
		}
	}
}

/* The claim above the floor that every strategy reserves first. */
static __u64 claim(const struct rg_alloc_fe *f)
{
	return f->est_rows_per_s ? f->est_rows_per_s - 1 : 0;
}

/*
 * rowgate's strategy.  Every live frontend first gets the 1 row/s floor;
 * B = L - n is water-filled over the claims est - 1 (ascending claims are
 * satisfied in full while they fit the equal split of what is left; the
 * rest get that split, the remainder one row each to the largest), which
 * is the max-min fair share.  Whatever no claim takes is spare, handed out
 * as headroom so the sum is exactly L.
 */
static void targets_waterfill(struct rg_alloc_db *db,
			      const struct rg_alloc_params *p)
{
	struct rg_alloc_fe *fe = db->fe;
	__u32 *ord = db->order, n = db->nr_live, k, j;
	__u64 rest = db->limit_rows_per_s - n, share, lambda, rem, eq, prop, c;
	u128 claims = 0, given = 0;

	sort_by_est(fe, ord, n);
	for (k = 0; k < n; k++) {
		c = claim(&fe[ord[k]]);
		share = rest / (n - k);
		if (c > share)
			break;
		fe[ord[k]].target_rows_per_s = 1 + c;
		rest -= c;
		claims += c;
	}
	if (k < n) {
		/* demand exceeds L: the level, remainder to the largest claims */
		lambda = rest / (n - k);
		rem = rest % (n - k);
		for (j = k; j < n; j++)
			fe[ord[j]].target_rows_per_s =
				1 + lambda + (j >= n - rem ? 1 : 0);
		return;
	}
	if (rest == 0)
		return;

	/* spare: the equal part, remainder to the busiest */
	eq = (__u64)((u128)rest * p->headroom_equal_permille / PERMILLE);
	prop = rest - eq;
	if (claims == 0) {
		eq = rest;
		prop = 0;
	}
	for (k = 0; k < n; k++)
		fe[ord[k]].target_rows_per_s += eq / n +
						(k >= n - eq % n ? 1 : 0);
	if (prop == 0)
		return;
	for (k = 0; k < n; k++) {
		struct rg_alloc_fe *f = &fe[ord[k]];
		__u64 h;

		c = claim(f);
		h = (__u64)((u128)prop * c / claims);
		f->target_rows_per_s += h;
		given += h;
	}
	/* rounding leftover (< n rows) to the busiest frontend */
	fe[ord[n - 1]].target_rows_per_s += prop - (__u64)given;
}

/*
 * The anchors, as their authors state them, on the same footing as ours:
 * the 1 row/s floor is reserved first (so the floor never pushes the sum
 * past L when L >= n), then each rule shares L - n over the claims.
 * Doorman computes in float64; integer division here differs by < 1 row.
 */
static void targets_anchor(struct rg_alloc_db *db,
			   const struct rg_alloc_params *p)
{
	struct rg_alloc_fe *fe = db->fe;
	__u32 *ord = db->order, n = db->nr_live, k, cnt_gt = 0, cnt_gt2 = 0;
	__u64 L = db->limit_rows_per_s - n, eq = L / n, w, t = 0, extra = 0;
	__u64 level2 = 0;
	u128 sum = 0, need = 0, extra2 = 0;

	for (k = 0; k < n; k++) {
		w = claim(&fe[ord[k]]);
		sum += w;
		if (w < eq)
			extra += eq - w; /* <= L: n * eq <= L */
		else
			need += w - eq;
		if (w > eq)
			cnt_gt++;
	}
	if (p->strategy == RG_ALLOC_DOORMAN_FAIR && cnt_gt) {
		level2 = eq + extra / cnt_gt;
		for (k = 0; k < n; k++) {
			w = claim(&fe[ord[k]]);
			if (w > eq && w < level2)
				extra2 += level2 - w;
			if (w > level2)
				cnt_gt2++;
		}
	}
	for (k = 0; k < n; k++) {
		struct rg_alloc_fe *f = &fe[ord[k]];

		w = claim(f);
		switch (p->strategy) {
		case RG_ALLOC_GREPTIME_DOC:
			t = sum ? (__u64)((u128)L * w / sum) : eq;
			break;
		case RG_ALLOC_EVEN:
			t = eq;
			break;
		case RG_ALLOC_DOORMAN_PROPORTIONAL:
			if (sum <= L || w <= eq)
				t = w;
			else /* (w - eq) * extra < 2^128; the ratio is < 1 */
				t = eq + (__u64)((u128)(w - eq) * extra / need);
			break;
		case RG_ALLOC_DOORMAN_FAIR:
			if (w <= eq || w < level2) {
				t = w;
				break;
			}
			/* those above level2 compete for extra2 with it */
			t = level2 + (__u64)(extra2 / (cnt_gt2 + (w == level2)));
			break;
		default:
			t = eq;
			break;
		}
		f->target_rows_per_s = 1 + t;
	}
}

/* Grant frontend i its target under the room the others' grants leave.
 * *out is the sum of live grants, kept up to date. */
static void grant_one(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		      __u32 i, __u64 now_ns, u128 *out)
{
	struct rg_alloc_fe *f = &db->fe[i];
	__u64 L = db->limit_rows_per_s, q = f->target_rows_per_s;
	u128 others = *out - f->quota_rows_per_s;

	if (L == 0) {
		q = 0;
	} else {
		q = min_u64(q, L);
		if (q > f->quota_rows_per_s || f->quota_rows_per_s == 0)
			q = others >= L ? 0 : min_u64(q, (__u64)(L - others));
		if (q == 0)
			q = 1;
	}
	*out = others + q;
	f->quota_rows_per_s = q;
	f->lease_expiry_ns = sat_add(now_ns, p->lease_ns);
	f->flags &= ~RG_ALLOC_FE_PENDING;
}

static u128 outstanding(const struct rg_alloc_db *db)
{
	u128 sum = 0;

	for (__u32 k = 0; k < db->nr_live; k++)
		sum += db->fe[db->order[k]].quota_rows_per_s;
	return sum;
}

/* Drop frontends whose lease ended; list the live ones in order[]. */
static void expire(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		   __u64 now_ns)
{
	struct rg_alloc_fe *f;
	__u32 n = 0;

	for (__u32 i = 0; i < db->nr_fe; i++) {
		f = &db->fe[i];
		if (!(f->flags & RG_ALLOC_FE_LIVE))
			continue;
		if (now_ns > f->last_hb_ns && now_ns - f->last_hb_ns >= p->lease_ns) {
			rg_alloc_forget(db, i);
			continue;
		}
		db->order[n++] = i;
	}
	db->nr_live = n;
}

static void compute_targets(struct rg_alloc_db *db,
			    const struct rg_alloc_params *p)
{
	__u32 n = db->nr_live;

	if (n == 0)
		return;
	if (db->limit_rows_per_s == 0) {
		for (__u32 k = 0; k < n; k++)
			db->fe[db->order[k]].target_rows_per_s = 0;
		return;
	}
	if (db->limit_rows_per_s <= n) {
		/* the floor: n rows/s, more than L when L < n (documented) */
		for (__u32 k = 0; k < n; k++)
			db->fe[db->order[k]].target_rows_per_s = 1;
		return;
	}
	if (p->strategy == RG_ALLOC_WATERFILL)
		targets_waterfill(db, p);
	else
		targets_anchor(db, p);
}

__u32 rg_alloc_round(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u64 now_ns)
{
	struct rg_alloc_fe *f;
	u128 out;
	__u32 k;

	expire(db, p, now_ns);
	compute_targets(db, p);
	out = outstanding(db);
	/* decreases first: they make the room the increases need */
	for (k = 0; k < db->nr_live; k++) {
		f = &db->fe[db->order[k]];
		if ((f->flags & RG_ALLOC_FE_PENDING) && f->quota_rows_per_s &&
		    f->target_rows_per_s <= f->quota_rows_per_s)
			grant_one(db, p, db->order[k], now_ns, &out);
	}
	for (k = 0; k < db->nr_live; k++) {
		f = &db->fe[db->order[k]];
		if (f->flags & RG_ALLOC_FE_PENDING)
			grant_one(db, p, db->order[k], now_ns, &out);
	}
	return db->nr_live;
}

__u64 rg_alloc_grant(struct rg_alloc_db *db, const struct rg_alloc_params *p,
		     __u32 i, __u64 now_ns)
{
	u128 out = 0;

	for (__u32 j = 0; j < db->nr_fe; j++)
		if (db->fe[j].flags & RG_ALLOC_FE_LIVE)
			out += db->fe[j].quota_rows_per_s;
	grant_one(db, p, i, now_ns, &out);
	return db->fe[i].quota_rows_per_s;
}
