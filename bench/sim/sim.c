// SPDX-License-Identifier: GPL-2.0
/*
 * Deterministic simulator of cluster-wide rate limiting: virtual time, no
 * sockets.  Frontends enforce per-database quotas with the real token bucket
 * (include/rowgate/bucket.h), heartbeat their demand to the real allocator
 * (user/meta/alloc.c) and enforce the grants they get back.  Every strategy sees
 * the same workload (a pure function of the seed), so columns compare.
 *
 * Timeline, in four equal phases: start from "no assignment" (every frontend
 * uses L); demand shift (frontend shares of some databases permuted);
 * frontend churn (some frontends replaced by new ones); demand shift plus
 * limit changes.  The last third of every phase is its steady state.
 * See bench/sim/README.md for the columns.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rowgate/abi.h"
#include "../../user/meta/alloc.h"
#include "rowgate/bucket.h"

#define SIM_FRONTENDS_DEFAULT        1000
#define SIM_DATABASES_DEFAULT        10000
#define SIM_SECONDS_DEFAULT          120
#define SIM_TICK_MS_DEFAULT          100  /* 10 batches/s per (db, frontend) */
#define SIM_HB_MS_DEFAULT            1000 /* frontend heartbeat period */
#define SIM_FE_PER_DB_MAX_DEFAULT    64   /* k of a db is Zipf in [1, this] */
#define SIM_ZIPF_S_PERMILLE_DEFAULT  1100 /* shares within a db: 1/rank^1.1 */
#define SIM_NOISE_PERMILLE_DEFAULT   100  /* offered rows per tick +-10 % */
#define SIM_SHIFT_PERMILLE_DEFAULT   500  /* dbs whose shares a shift permutes */
#define SIM_CHURN_PERMILLE_DEFAULT   20   /* frontends replaced at the churn */
#define SIM_LIMIT_CHANGE_PERMILLE    100  /* dbs whose limit doubles or halves */
#define SIM_OVERLOADED_PERMILLE      800  /* dbs offered more than their limit */
#define SIM_LIMIT_MIN_ROWS_PER_S     1000
#define SIM_LIMIT_MAX_ROWS_PER_S     1000000
#define SIM_TOLERANCE_PERMILLE       50   /* "within 5 % of the target" */
#define SIM_SETTLED_WINDOWS          3    /* in band this many heartbeats */
#define SIM_MAX_WEIGHTS              64
#define SIM_PHASES                   4

struct opts {
	__u32 frontends, databases, seconds, tick_ms, hb_ms, kmax;
	__u32 zipf_permille, noise_permille, shift_permille, churn_permille;
	__u64 seed;
	__u32 nr_weights;
	double weights[SIM_MAX_WEIGHTS];
	bool strategies[RG_ALLOC_NR_STRATEGIES];
	bool tsv;
};

/* One frontend's view of one database: its bucket and heartbeat counters. */
struct pair {
	struct rg_bucket b;
	__u64 quota;     /* last grant received; 0 = none */
	__u64 lease_ns;  /* the grant's expiry */
	__u64 adm_hb;    /* rows admitted since the last heartbeat */
	__u64 rej_hb;    /* rows rejected since the last heartbeat */
	__u64 adm_win;   /* rows admitted in the current window */
	__u64 debt_win;  /* debt at the window start */
	__u32 fe;
	__u32 active;    /* carries traffic and heartbeats */
};

struct db {
	__u64 limit;
	__u32 k;         /* traffic slots (client streams) */
	__u32 base;      /* first pair / alloc slot: cap = 2k of them */
	__u32 slot0;     /* first entry in slot arrays */
	__u32 affected;  /* bit e: touched by event e */
	__u64 offered_win;
	__u64 global_adm_win;    /* the same for the global bucket */
	__u64 global_debt_win;
	struct rg_bucket global; /* one bucket for the whole cluster */
	struct rg_alloc_db a;
};

struct world {
	const struct opts *o;
	struct db *dbs;
	struct pair *pairs;
	struct rg_alloc_fe *afe;
	__u32 *order;
	__u32 *slot_pair; /* slot -> pair index (absolute) */
	double *slot_rate;
	/* the workload as generated, restored before each strategy */
	__u32 *slot_fe0;
	double *slot_rate0;
	__u64 *limit0;
	__u8 *fe_dead;
	__u32 nr_pairs, nr_slots, nr_windows;
	float *win_ratio; /* [db][window] effective admitted / target */
	__u64 rej_rows;
	double rej_global_ok;
	double round_ns_sum, round_ns_max;
	__u32 rounds;
};

struct result {
	double ratio_mean, ratio_p1, ratio_p99;
	double shift_mean_s, shift_p99_s, shift_le3_pct;
	double churn_mean_s, churn_p99_s;
	__u32 shift_unsettled, churn_unsettled;
	double wrong_pct, round_mean_ms, round_max_ms;
};

static __u64 mix64(__u64 z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A uniform draw in [0, 1) that depends on its key only. */
static double u01(__u64 seed, __u64 a, __u64 b, __u64 c)
{
	__u64 h = mix64(seed ^ mix64(a ^ mix64(b ^ mix64(c))));

	return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* Sequential draws for setup only. */
static __u64 rng_state;

static double urand(void)
{
	rng_state = mix64(rng_state);
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static __u32 uint_below(__u32 n)
{
	return (__u32)(urand() * n);
}

static double now_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The frontend rule of docs/design.md#effective-quota: the grant capped by L; L when none or
 * when its lease ended. */
static __u64 effective_quota(const struct pair *p, __u64 limit, __u64 now)
{
	struct rg_limit l = { .limit_rows_per_s = limit,
			      .quota_rows_per_s = now < p->lease_ns ? p->quota : 0 };

	return rg_effective_quota(&l);
}

static void pair_start(struct pair *p, __u32 fe, __u64 limit, __u64 now)
{
	memset(p, 0, sizeof(*p));
	rg_bucket_init(&p->b, limit, now);
	p->fe = fe;
	p->active = 1;
}

/* Shares within a db: explicit weights, or 1/rank^s over a random order. */
static void assign_rates(struct world *w, struct db *d, double total)
{
	const struct opts *o = w->o;
	double wt[SIM_MAX_WEIGHTS], sum = 0;
	__u32 perm[SIM_MAX_WEIGHTS], i, j, t;

	for (i = 0; i < d->k; i++)
		perm[i] = i;
	for (i = d->k; i > 1; i--) {
		j = uint_below(i);
		t = perm[i - 1], perm[i - 1] = perm[j], perm[j] = t;
	}
	for (i = 0; i < d->k; i++) {
		wt[i] = o->nr_weights ? o->weights[perm[i]] :
			pow(perm[i] + 1, -(double)o->zipf_permille / 1000.0);
		sum += wt[i];
	}
	for (i = 0; i < d->k; i++)
		w->slot_rate[d->slot0 + i] = total * wt[i] / sum;
}

static double db_total(const struct world *w, const struct db *d)
{
	double s = 0;

	for (__u32 i = 0; i < d->k; i++)
		s += w->slot_rate[d->slot0 + i];
	return s;
}

static int world_init(struct world *w, const struct opts *o)
{
	__u32 nk_max = o->nr_weights ? o->nr_weights : o->kmax, i, j, s;
	double hk = 0;

	memset(w, 0, sizeof(*w));
	w->o = o;
	rng_state = o->seed;
	if (nk_max > o->frontends)
		nk_max = o->frontends;
	for (i = 1; i <= nk_max; i++)
		hk += 1.0 / i;
	w->dbs = calloc(o->databases, sizeof(*w->dbs));
	w->slot_pair = calloc((size_t)o->databases * nk_max, sizeof(__u32));
	w->slot_rate = calloc((size_t)o->databases * nk_max, sizeof(double));
	w->slot_fe0 = calloc((size_t)o->databases * nk_max, sizeof(__u32));
	w->slot_rate0 = calloc((size_t)o->databases * nk_max, sizeof(double));
	w->limit0 = calloc(o->databases, sizeof(__u64));
	w->fe_dead = calloc(2 * (size_t)o->frontends, 1);
	w->nr_windows = o->seconds * 1000 / o->hb_ms + 1;
	w->win_ratio = calloc((size_t)o->databases * w->nr_windows, sizeof(float));
	if (!w->dbs || !w->slot_pair || !w->slot_rate || !w->fe_dead ||
	    !w->slot_fe0 || !w->slot_rate0 || !w->limit0 || !w->win_ratio)
		return -1;

	for (i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];
		double x = urand(), acc = 0, lo = log(SIM_LIMIT_MIN_ROWS_PER_S),
		       hi = log(SIM_LIMIT_MAX_ROWS_PER_S), f;

		/* k: Zipf over [1, kmax], P(k) ~ 1/k */
		d->k = nk_max;
		if (!o->nr_weights)
			for (j = 1; j <= nk_max; j++) {
				acc += 1.0 / j / hk;
				if (x < acc) {
					d->k = j;
					break;
				}
			}
		d->limit = (__u64)exp(lo + urand() * (hi - lo));
		d->slot0 = w->nr_slots;
		d->base = w->nr_pairs;
		w->nr_slots += d->k;
		w->nr_pairs += 2 * d->k;
		f = urand() * 1000 < SIM_OVERLOADED_PERMILLE ? 1.2 + 0.8 * urand() :
							       0.3 + 0.6 * urand();
		assign_rates(w, d, f * d->limit);
		/* distinct frontends, uniformly */
		for (s = 0; s < d->k; s++) {
			__u32 fe;
			bool dup;

			do {
				fe = uint_below(o->frontends);
				dup = false;
				for (j = 0; j < s; j++)
					dup |= w->slot_fe0[d->slot0 + j] == fe;
			} while (dup);
			w->slot_fe0[d->slot0 + s] = fe;
		}
		w->limit0[i] = d->limit;
	}
	memcpy(w->slot_rate0, w->slot_rate, sizeof(double) * w->nr_slots);
	w->pairs = calloc(w->nr_pairs, sizeof(*w->pairs));
	w->afe = calloc(w->nr_pairs, sizeof(*w->afe));
	w->order = calloc(w->nr_pairs, sizeof(*w->order));
	if (!w->pairs || !w->afe || !w->order)
		return -1;
	return 0;
}

static void world_free(struct world *w)
{
	free(w->dbs);
	free(w->pairs);
	free(w->afe);
	free(w->order);
	free(w->slot_pair);
	free(w->slot_rate);
	free(w->slot_fe0);
	free(w->slot_rate0);
	free(w->limit0);
	free(w->fe_dead);
	free(w->win_ratio);
}

/* Fresh per-strategy state: every frontend starts with no assignment. */
static void world_reset(struct world *w)
{
	const struct opts *o = w->o;

	memset(w->pairs, 0, sizeof(*w->pairs) * w->nr_pairs);
	memset(w->fe_dead, 0, 2 * (size_t)o->frontends);
	memset(w->win_ratio, 0, sizeof(float) * (size_t)o->databases * w->nr_windows);
	memcpy(w->slot_rate, w->slot_rate0, sizeof(double) * w->nr_slots);
	for (__u32 i = 0; i < o->databases; i++)
		w->dbs[i].limit = w->limit0[i];
	w->rej_rows = w->rej_global_ok = 0;
	w->round_ns_sum = w->round_ns_max = 0;
	w->rounds = 0;
}

static void db_start(struct world *w, struct db *d)
{
	rg_alloc_db_init(&d->a, &w->afe[d->base], &w->order[d->base], 2 * d->k,
			 d->limit);
	rg_bucket_init(&d->global, d->limit, 0);
	d->offered_win = d->global_adm_win = d->global_debt_win = 0;
	d->affected = 0;
	for (__u32 s = 0; s < d->k; s++) {
		pair_start(&w->pairs[d->base + s], w->slot_fe0[d->slot0 + s],
			   d->limit, 0);
		w->slot_pair[d->slot0 + s] = d->base + s;
	}
}

static void apply_quota(struct pair *p, __u64 limit, __u64 now)
{
	__u64 q = effective_quota(p, limit, now);

	if (q != p->b.quota)
		rg_bucket_set_quota(&p->b, now, q);
}

/* Events.  e = 0 first shift, 1 churn, 2 second shift + limit changes. */
static void event_shift(struct world *w, __u32 e)
{
	for (__u32 i = 0; i < w->o->databases; i++) {
		struct db *d = &w->dbs[i];

		if (d->k < 2 || urand() * 1000 >= w->o->shift_permille)
			continue;
		assign_rates(w, d, db_total(w, d));
		d->affected |= 1U << e;
	}
}

static void event_limits(struct world *w, __u32 e, __u64 now)
{
	for (__u32 i = 0; i < w->o->databases; i++) {
		struct db *d = &w->dbs[i];

		if (urand() * 1000 >= SIM_LIMIT_CHANGE_PERMILLE)
			continue;
		d->limit = urand() < 0.5 ? d->limit * 2 : d->limit / 2;
		d->a.limit_rows_per_s = d->limit;
		rg_bucket_set_quota(&d->global, now, d->limit);
		for (__u32 p = d->base; p < d->base + 2 * d->k; p++)
			if (w->pairs[p].active)
				apply_quota(&w->pairs[p], d->limit, now);
		d->affected |= 1U << e;
	}
}

/* Replace some frontends: their streams reconnect to new frontends, which
 * start without assignment; the old ones fall silent (their grants stay
 * leased until they expire). */
static void event_churn(struct world *w, __u32 e, __u64 now)
{
	const struct opts *o = w->o;
	__u32 n = (o->frontends * o->churn_permille + 999) / 1000, i, s, p;

	for (i = 0; i < n; i++)
		w->fe_dead[uint_below(o->frontends)] = 1;
	for (i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];

		for (s = 0; s < d->k; s++) {
			struct pair *old = &w->pairs[w->slot_pair[d->slot0 + s]];

			if (!w->fe_dead[old->fe])
				continue;
			old->active = 0;
			/* a free slot: no traffic, no live allocation */
			for (p = d->base; p < d->base + 2 * d->k; p++)
				if (!w->pairs[p].active &&
				    !(w->afe[p].flags & RG_ALLOC_FE_LIVE) &&
				    &w->pairs[p] != old)
					break;
			if (p == d->base + 2 * d->k)
				continue; /* cannot happen with one churn event */
			pair_start(&w->pairs[p], o->frontends + old->fe, d->limit, now);
			w->slot_pair[d->slot0 + s] = p;
			d->affected |= 1U << e;
		}
	}
}

/*
 * Close heartbeat window win after the traffic of its last tick: admitted
 * rows net of the change in debt.  A throttled bucket then holds no tokens,
 * so this is exactly what the quota refilled, free of the phase of the
 * batches; over longer spans it is the admitted rows.
 */
static void window_close(struct world *w, __u64 now, __u32 win, bool count)
{
	const struct opts *o = w->o;
	__u32 i, p;

	for (i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];
		double eff = 0, geff, target;

		for (p = d->base; p < d->base + 2 * d->k; p++) {
			struct pair *pr = &w->pairs[p];

			rg_bucket_refill(&pr->b, now);
			eff += (double)pr->adm_win - ((double)pr->b.debt_rows -
						      (double)pr->debt_win);
			pr->adm_win = 0;
			pr->debt_win = pr->b.debt_rows;
		}
		rg_bucket_refill(&d->global, now);
		geff = (double)d->global_adm_win - ((double)d->global.debt_rows -
						    (double)d->global_debt_win);
		d->global_adm_win = 0;
		d->global_debt_win = d->global.debt_rows;
		/* rows a single cluster-wide bucket would have admitted on top */
		if (count && geff > eff)
			w->rej_global_ok += geff - eff;
		target = (double)d->limit * o->hb_ms / 1000.0;
		if ((double)d->offered_win < target)
			target = (double)d->offered_win;
		w->win_ratio[(size_t)i * w->nr_windows + win] =
			target > 0 ? (float)(eff / target) : 1.0f;
		d->offered_win = 0;
	}
}

static void heartbeat(struct world *w, const struct rg_alloc_params *ap,
		      __u64 now)
{
	const struct opts *o = w->o;
	__u64 hb_ns = (__u64)o->hb_ms * RG_NSEC_PER_MSEC;
	double t0, dt;
	__u32 i, p;

	t0 = now_wall_ns();
	for (i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];

		for (p = d->base; p < d->base + 2 * d->k; p++) {
			struct pair *pr = &w->pairs[p];
			struct rg_alloc_report r;

			if (!pr->active)
				continue;
			r.admitted_rows_per_s = pr->adm_hb * RG_NSEC_PER_SEC / hb_ns;
			r.rejected_rows_per_s = pr->rej_hb * RG_NSEC_PER_SEC / hb_ns;
			r.debt_rows = pr->b.debt_rows;
			rg_alloc_report(&d->a, ap, p - d->base, &r, now);
			pr->adm_hb = pr->rej_hb = 0;
		}
		rg_alloc_round(&d->a, ap, now);
	}
	dt = now_wall_ns() - t0;
	w->round_ns_sum += dt;
	if (dt > w->round_ns_max)
		w->round_ns_max = dt;
	w->rounds++;

	/* replies reach the frontends */
	for (i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];

		for (p = d->base; p < d->base + 2 * d->k; p++) {
			struct pair *pr = &w->pairs[p];

			if (!pr->active)
				continue;
			pr->quota = w->afe[p].quota_rows_per_s;
			pr->lease_ns = w->afe[p].lease_expiry_ns;
			apply_quota(pr, d->limit, now);
		}
	}
}

static void traffic(struct world *w, __u64 tick, __u64 now, bool count_wrong)
{
	const struct opts *o = w->o;
	double dt_s = o->tick_ms / 1000.0, noise = o->noise_permille / 1000.0;

	for (__u32 i = 0; i < o->databases; i++) {
		struct db *d = &w->dbs[i];

		for (__u32 j = 0; j < d->k; j++) {
			__u32 s = (j + tick) % d->k; /* no stream always first */
			struct pair *pr = &w->pairs[w->slot_pair[d->slot0 + s]];
			double x = w->slot_rate[d->slot0 + s] * dt_s *
				   (1 + noise * (2 * u01(o->seed, i, s, tick) - 1));
			__u64 rows = (__u64)x;
			bool local, global;

			if (u01(o->seed ^ 1, i, s, tick) < x - (double)rows)
				rows++;
			if (rows == 0)
				continue;
			d->offered_win += rows;
			local = rg_bucket_admit(&pr->b, now, rows);
			global = rg_bucket_admit(&d->global, now, rows);
			if (global)
				d->global_adm_win += rows;
			if (local) {
				pr->adm_hb += rows;
				pr->adm_win += rows;
			} else {
				pr->rej_hb += rows;
				if (count_wrong)
					w->rej_rows += rows;
			}
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, __u32 n, double q)
{
	__u32 i;

	if (n == 0)
		return 0;
	i = (__u32)(q * (n - 1) + 0.5);
	return sorted[i];
}

/* Heartbeats from an event until the ratio stays in band for
 * SIM_SETTLED_WINDOWS windows; the phase length when it never does. */
static __u32 settle_windows(const struct world *w, __u32 db, __u32 w0, __u32 nwin,
			    bool *settled)
{
	const float *r = &w->win_ratio[(size_t)db * w->nr_windows];
	double tol = SIM_TOLERANCE_PERMILLE / 1000.0;
	__u32 j, run = 0;

	for (j = 0; j < nwin; j++) {
		if (fabs(r[w0 + j] - 1.0) <= tol) {
			if (++run == SIM_SETTLED_WINDOWS) {
				*settled = true;
				return j + 1 - SIM_SETTLED_WINDOWS;
			}
		} else {
			run = 0;
		}
	}
	*settled = false;
	return nwin;
}

static void run(struct world *w, enum rg_alloc_strategy strat, struct result *res)
{
	const struct opts *o = w->o;
	__u64 tick_ns = (__u64)o->tick_ms * RG_NSEC_PER_MSEC;
	__u32 hb_ticks = o->hb_ms / o->tick_ms;
	__u64 ticks = (__u64)o->seconds * 1000 / o->tick_ms;
	__u64 phase_ticks = ticks / SIM_PHASES / hb_ticks * hb_ticks, t;
	__u64 ev_off = hb_ticks / 2;
	__u32 phase_win = phase_ticks / hb_ticks, i, e, nconv[2] = { 0, 0 };
	struct rg_alloc_params ap;
	double *buf, *conv[2], hb_s = o->hb_ms / 1000.0;
	__u32 le3 = 0;

	memset(res, 0, sizeof(*res));
	rg_alloc_params_init(&ap, strat);
	ap.lease_ns = 3ULL * o->hb_ms * RG_NSEC_PER_MSEC;
	world_reset(w);
	rng_state = o->seed ^ 0xfeed; /* events: the same for every strategy */
	for (i = 0; i < o->databases; i++)
		db_start(w, &w->dbs[i]);

	for (t = 0; t < ticks; t++) {
		__u64 now = t * tick_ns;

		/* events land mid-interval: the next report mixes old and new */
		if (t == phase_ticks + ev_off)
			event_shift(w, 0);
		if (t == 2 * phase_ticks + ev_off)
			event_churn(w, 1, now);
		if (t == 3 * phase_ticks + ev_off) {
			event_shift(w, 2);
			event_limits(w, 2, now);
		}
		if (t > 0 && t % hb_ticks == 0)
			heartbeat(w, &ap, now);
		traffic(w, t, now, t >= phase_ticks * 2 / 3);
		if ((t + 1) % hb_ticks == 0)
			window_close(w, now, (t + 1) / hb_ticks - 1,
				     t >= phase_ticks * 2 / 3);
	}

	/* steady ratio per db over the steady windows of every phase */
	buf = calloc(o->databases, sizeof(double));
	conv[0] = calloc(o->databases, sizeof(double));
	conv[1] = calloc(o->databases, sizeof(double));
	if (!buf || !conv[0] || !conv[1]) {
		perror("calloc");
		exit(1);
	}
	for (i = 0; i < o->databases; i++) {
		const float *r = &w->win_ratio[(size_t)i * w->nr_windows];
		double sum = 0;
		__u32 n = 0;

		for (__u32 ph = 0; ph < SIM_PHASES; ph++)
			for (__u32 j = ph * phase_win + phase_win * 2 / 3;
			     j < (ph + 1) * phase_win; j++, n++)
				sum += r[j];
		buf[i] = n ? sum / n : 1;
	}
	for (i = 0; i < o->databases; i++)
		res->ratio_mean += buf[i] / o->databases;
	qsort(buf, o->databases, sizeof(double), cmp_double);
	res->ratio_p1 = pct(buf, o->databases, 0.01);
	res->ratio_p99 = pct(buf, o->databases, 0.99);

	for (i = 0; i < o->databases; i++) {
		for (e = 0; e < 3; e++) {
			__u32 kind = e == 1, nwin;
			bool ok;

			if (!(w->dbs[i].affected & (1U << e)))
				continue;
			nwin = settle_windows(w, i, (e + 1) * phase_win, phase_win, &ok);
			conv[kind][nconv[kind]++] = nwin * hb_s;
			if (!ok)
				kind ? res->churn_unsettled++ : res->shift_unsettled++;
			if (!kind && ok && nwin <= 3)
				le3++;
		}
	}
	for (e = 0; e < 2; e++) {
		double m = 0;

		for (i = 0; i < nconv[e]; i++)
			m += conv[e][i];
		m = nconv[e] ? m / nconv[e] : 0;
		qsort(conv[e], nconv[e], sizeof(double), cmp_double);
		if (e == 0) {
			res->shift_mean_s = m;
			res->shift_p99_s = pct(conv[0], nconv[0], 0.99);
		} else {
			res->churn_mean_s = m;
			res->churn_p99_s = pct(conv[1], nconv[1], 0.99);
		}
	}
	res->shift_le3_pct = nconv[0] ? 100.0 * le3 / nconv[0] : 100;
	res->wrong_pct = w->rej_rows ? 100.0 * w->rej_global_ok / w->rej_rows : 0;
	res->round_mean_ms = w->rounds ? w->round_ns_sum / w->rounds / 1e6 : 0;
	res->round_max_ms = w->round_ns_max / 1e6;
	free(buf);
	free(conv[0]);
	free(conv[1]);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: sim [options]\n"
"Deterministic simulation of per-database quota allocation across frontends.\n"
"  -f, --frontends N     frontends (default %d)\n"
"  -d, --databases N     databases (default %d)\n"
"  -t, --seconds N       virtual seconds, 4 phases (default %d)\n"
"      --tick-ms N       tick (default %d)\n"
"      --hb-ms N         heartbeat period, a multiple of the tick (default %d)\n"
"  -k, --kmax N          most frontends one db spans, Zipf in [1, N] (default %d)\n"
"      --zipf-permille N shares within a db: 1/rank^(N/1000) (default %d)\n"
"  -w, --weights A,B,..  explicit shares per db instead (e.g. 80,15,5)\n"
"      --noise-permille N offered rows per tick +-N/1000 (default %d)\n"
"      --shift-permille N dbs permuted at each shift (default %d)\n"
"      --churn-permille N frontends replaced at the churn (default %d)\n"
"  -s, --strategy NAME   run only these (repeat): waterfill, greptime-doc,\n"
"                        even, doorman-prop, doorman-fair (default all)\n"
"      --seed N          (default 1)\n"
"      --tsv             machine-readable output\n"
"EXAMPLES\n"
"  sim                                   full scale, all strategies\n"
"  sim -f 20 -d 50 -w 80,15,5 -t 60      small, 80/15/5 skew\n",
		SIM_FRONTENDS_DEFAULT, SIM_DATABASES_DEFAULT, SIM_SECONDS_DEFAULT,
		SIM_TICK_MS_DEFAULT, SIM_HB_MS_DEFAULT, SIM_FE_PER_DB_MAX_DEFAULT,
		SIM_ZIPF_S_PERMILLE_DEFAULT, SIM_NOISE_PERMILLE_DEFAULT,
		SIM_SHIFT_PERMILLE_DEFAULT, SIM_CHURN_PERMILLE_DEFAULT);
}

static bool parse_u32(const char *s, __u32 *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || x > 0xffffffffUL)
		return false;
	*v = (__u32)x;
	return true;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "frontends", required_argument, NULL, 'f' },
		{ "databases", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 't' },
		{ "tick-ms", required_argument, NULL, 1 },
		{ "hb-ms", required_argument, NULL, 2 },
		{ "kmax", required_argument, NULL, 'k' },
		{ "zipf-permille", required_argument, NULL, 3 },
		{ "weights", required_argument, NULL, 'w' },
		{ "noise-permille", required_argument, NULL, 4 },
		{ "shift-permille", required_argument, NULL, 5 },
		{ "churn-permille", required_argument, NULL, 6 },
		{ "strategy", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 7 },
		{ "tsv", no_argument, NULL, 8 },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool any = false, ok = true;
	__u32 seed = 1;
	int c, s;

	*o = (struct opts){
		.frontends = SIM_FRONTENDS_DEFAULT, .databases = SIM_DATABASES_DEFAULT,
		.seconds = SIM_SECONDS_DEFAULT, .tick_ms = SIM_TICK_MS_DEFAULT,
		.hb_ms = SIM_HB_MS_DEFAULT, .kmax = SIM_FE_PER_DB_MAX_DEFAULT,
		.zipf_permille = SIM_ZIPF_S_PERMILLE_DEFAULT,
		.noise_permille = SIM_NOISE_PERMILLE_DEFAULT,
		.shift_permille = SIM_SHIFT_PERMILLE_DEFAULT,
		.churn_permille = SIM_CHURN_PERMILLE_DEFAULT,
	};
	while ((c = getopt_long(argc, argv, "f:d:t:k:w:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': ok = parse_u32(optarg, &o->frontends); break;
		case 'd': ok = parse_u32(optarg, &o->databases); break;
		case 't': ok = parse_u32(optarg, &o->seconds); break;
		case 1: ok = parse_u32(optarg, &o->tick_ms); break;
		case 2: ok = parse_u32(optarg, &o->hb_ms); break;
		case 'k': ok = parse_u32(optarg, &o->kmax); break;
		case 3: ok = parse_u32(optarg, &o->zipf_permille); break;
		case 4: ok = parse_u32(optarg, &o->noise_permille); break;
		case 5: ok = parse_u32(optarg, &o->shift_permille); break;
		case 6: ok = parse_u32(optarg, &o->churn_permille); break;
		case 7: ok = parse_u32(optarg, &seed); break;
		case 8: o->tsv = true; break;
		case 'w':
			for (char *p = optarg; *p && o->nr_weights < SIM_MAX_WEIGHTS;) {
				char *end;

				o->weights[o->nr_weights++] = strtod(p, &end);
				if (end == p || o->weights[o->nr_weights - 1] <= 0) {
					ok = false;
					break;
				}
				p = *end == ',' ? end + 1 : end;
				if (*end && *end != ',') {
					ok = false;
					break;
				}
			}
			break;
		case 's':
			s = rg_alloc_strategy_parse(optarg);
			ok = s >= 0;
			if (ok)
				o->strategies[s] = any = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (!ok) {
			fprintf(stderr, "sim: bad value for -%c: '%s'\n",
				c < 32 ? '-' : c, optarg);
			return -1;
		}
	}
	if (!any)
		for (s = 0; s < RG_ALLOC_NR_STRATEGIES; s++)
			o->strategies[s] = true;
	o->seed = mix64(seed);
	if (!o->frontends || !o->databases || !o->tick_ms || o->hb_ms % o->tick_ms ||
	    o->hb_ms < o->tick_ms || o->kmax < 1 || o->kmax > SIM_MAX_WEIGHTS ||
	    o->nr_weights > o->frontends ||
	    o->seconds * 1000ULL / o->hb_ms < 4 * 3 * SIM_SETTLED_WINDOWS) {
		fprintf(stderr, "sim: inconsistent options (heartbeat a multiple of "
			"the tick, kmax <= %d, >= %d heartbeats)\n", SIM_MAX_WEIGHTS,
			4 * 3 * SIM_SETTLED_WINDOWS);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct world w;
	struct result r = { 0 };

	if (parse_opts(argc, argv, &o))
		return 2;
	if (world_init(&w, &o)) {
		world_free(&w);
		fprintf(stderr, "sim: out of memory\n");
		return 1;
	}
	if (o.tsv)
		printf("strategy\tratio_mean\tratio_p1\tratio_p99\tshift_mean_s\t"
		       "shift_p99_s\tshift_le3_pct\tshift_unsettled\tchurn_mean_s\t"
		       "churn_p99_s\twrong_pct\tround_mean_ms\tround_max_ms\n");
	else
		printf("%u frontends, %u databases (%u streams), %u s, tick %u ms, "
		       "heartbeat %u ms\n\n"
		       "| strategy | admitted ÷ target: mean | p1 | p99 | shift: "
		       "converge mean (s) | p99 (s) | ≤ 3 hb | unsettled | churn: "
		       "converge mean (s) | p99 (s) | rejected a global bucket would "
		       "admit | round mean (ms) | round max (ms) |\n"
		       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
		       o.frontends, o.databases, w.nr_slots, o.seconds, o.tick_ms,
		       o.hb_ms);
	for (int s = 0; s < RG_ALLOC_NR_STRATEGIES; s++) {
		if (!o.strategies[s])
			continue;
		run(&w, s, &r);
		if (o.tsv)
			printf("%s\t%.4f\t%.4f\t%.4f\t%.2f\t%.2f\t%.1f\t%u\t%.2f\t%.2f\t"
			       "%.2f\t%.3f\t%.3f\n", rg_alloc_strategy_name(s),
			       r.ratio_mean, r.ratio_p1, r.ratio_p99, r.shift_mean_s,
			       r.shift_p99_s, r.shift_le3_pct, r.shift_unsettled,
			       r.churn_mean_s, r.churn_p99_s, r.wrong_pct,
			       r.round_mean_ms, r.round_max_ms);
		else
			printf("| %s | %.3f | %.3f | %.3f | %.1f | %.1f | %.0f %% | %u | "
			       "%.1f | %.1f | %.1f %% | %.2f | %.2f |\n",
			       rg_alloc_strategy_name(s), r.ratio_mean, r.ratio_p1,
			       r.ratio_p99, r.shift_mean_s, r.shift_p99_s,
			       r.shift_le3_pct, r.shift_unsettled, r.churn_mean_s,
			       r.churn_p99_s, r.wrong_pct, r.round_mean_ms,
			       r.round_max_ms);
		fflush(stdout);
	}
	world_free(&w);
	return 0;
}
