/* SPDX-License-Identifier: GPL-2.0 */
/* Admission against the shared per-database bucket (docs/design.md#admission), used by the
 * HTTP verdict and the XDP program alike.  Clock first, then the lock: no
 * helper may run while a bpf_spin_lock is held.
 */
#ifndef ROWGATE_BPF_ADMIT_H
#define ROWGATE_BPF_ADMIT_H

#include "base.h"
#include "maps.h"
#include "rowgate/bucket.h"

enum rg_admission {
	RG_ADMIT_UNLIMITED = 0, /* no limit configured, or 0: pass, uncharged */
	RG_ADMIT_YES = 1,
	RG_ADMIT_NO = 2,
	/* the limit would refuse it, but runs in shadow mode: pass it
	 * uncharged, as a refusal would have left the bucket, and count it
	 * where the write is decided (rg_shadow_count) */
	RG_ADMIT_SHADOW = 3,
};

/* What a rejection tells the client. */
struct rg_reject_info {
	__u64 limit_rows_per_s;
	__u64 quota_rows_per_s;
	__u64 retry_after_s;
};

/* Whether two keys name the same database: their padded names a word at a
 * time (the BPF loads need no alignment). */
static __always_inline bool rg_db_key_equal(const struct rg_db_key *a, const struct rg_db_key *b)
{
	const __u64 *x = (const __u64 *)a->name, *y = (const __u64 *)b->name;
	__u64 diff = 0;
	__u32 i;

	for (i = 0; i < RG_DB_NAME_MAX / 8; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* Decide whether a batch of db may enter now; nothing is charged yet. */
static __always_inline enum rg_admission
rg_admit(const struct rg_db_key *db, struct rg_reject_info *info)
{
	struct rg_bucket_value *bv;
	struct rg_limit *lim;
	__u64 now, q;
	bool ok;

	lim = bpf_map_lookup_elem(&RG_MAP_LIMITS, db);
	if (!lim || lim->limit_rows_per_s == 0)
		return RG_ADMIT_UNLIMITED;
	bv = bpf_map_lookup_elem(&RG_MAP_BUCKETS, db);
	if (!bv)
		return RG_ADMIT_UNLIMITED; /* daemon creates it with the limit */
	q = rg_effective_quota(lim);
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&bv->lock);
	if (bv->b.quota != q)
		rg_bucket_set_quota(&bv->b, now, q);
	rg_bucket_refill(&bv->b, now);
	ok = rg_bucket_can_admit(&bv->b);
	info->retry_after_s = ok ? 0 : rg_bucket_retry_after_s(&bv->b);
	bpf_spin_unlock(&bv->lock);
	info->limit_rows_per_s = lim->limit_rows_per_s;
	info->quota_rows_per_s = q;
	if (ok)
		return RG_ADMIT_YES;
	/* only a refusal looks: the admitted path costs what it did */
	if (bpf_map_lookup_elem(&RG_MAP_SHADOW, db))
		return RG_ADMIT_SHADOW;
	return RG_ADMIT_NO;
}

/* A write its database's shadow limit would have refused passed: count it
 * once, where it is decided (rows: 0 where not known yet). */
static __always_inline void rg_shadow_count(const struct rg_db_key *db, __u64 rows)
{
	struct rg_shadow_stats *s = bpf_map_lookup_elem(&RG_MAP_SHADOW, db);

	if (!s)
		return;
	__sync_fetch_and_add(&s->would_reject_requests, 1);
	__sync_fetch_and_add(&s->would_reject_rows, rows);
}

/* A new database's unlimited counters start from this: not from the
 * stack, which on 6.1 the verdict's call chain has no room left in (512
 * bytes for the whole chain). */
static const struct rg_unlimited_stats rg_unlimited_zero;

/* The unlimited counters of db, created the first time it is written to
 * (NULL when the map cannot take it).  Linux 6.1 takes no map key from an
 * argument's memory: db is on the caller's stack or in a map value. */
static __always_inline struct rg_unlimited_stats *rg_unlimited_get(const struct rg_db_key *db)
{
	struct rg_unlimited_stats *u = bpf_map_lookup_elem(&RG_MAP_UNLIMITED, db);

	if (u)
		return u;
	bpf_map_update_elem(&RG_MAP_UNLIMITED, db, &rg_unlimited_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&RG_MAP_UNLIMITED, db);
}

/* A write to a database without a limit passed: count it in u (from
 * rg_unlimited_get, taken first so that no other value need outlive its
 * calls: the verifier's 512-byte chain on 6.1 has no room to spill), rows
 * an estimate when estimated is set. */
static __always_inline void rg_unlimited_count(struct rg_unlimited_stats *u, __u64 rows,
					       __u64 body_bytes, bool estimated)
{
	if (!u)
		return;
	__sync_fetch_and_add(&u->requests, 1);
	__sync_fetch_and_add(&u->rows, rows);
	__sync_fetch_and_add(&u->body_bytes, body_bytes);
	if (estimated)
		__sync_fetch_and_add(&u->estimated_requests, 1);
}

/* The daemon creates a database's counters with its limit. */
static __always_inline struct rg_db_stats *rg_db_stats_get(const struct rg_db_key *db)
{
	return bpf_map_lookup_elem(&RG_MAP_DB_STATS, db);
}

/* Charge rows of an admitted batch (debt allowed) and account them; requests
 * is 1 where the batch ends, 0 for rows charged while its body arrives. */
static __always_inline void rg_charge(const struct rg_db_key *db, __u64 rows, __u32 requests,
				      bool enforced)
{
	struct rg_bucket_value *bv = bpf_map_lookup_elem(&RG_MAP_BUCKETS, db);
	struct rg_limit *lim = bpf_map_lookup_elem(&RG_MAP_LIMITS, db);
	struct rg_db_stats *st = rg_db_stats_get(db);
	__u64 debt = 0, tokens = 0, quota = 0;

	if (bv) {
		bpf_spin_lock(&bv->lock);
		rg_bucket_charge(&bv->b, rows);
		debt = bv->b.debt_rows;
		tokens = bv->b.tokens;
		quota = bv->b.quota;
		bpf_spin_unlock(&bv->lock);
	}
	if (!st)
		return;
	if (enforced) {
		__sync_fetch_and_add(&st->admitted_requests, requests);
		__sync_fetch_and_add(&st->admitted_rows, rows);
	} else {
		__sync_fetch_and_add(&st->unenforced_requests, requests);
		__sync_fetch_and_add(&st->unenforced_rows, rows);
	}
	st->debt_rows = debt;
	st->tokens = tokens;
	st->quota_rows_per_s = quota;
	st->limit_rows_per_s = lim ? lim->limit_rows_per_s : 0;
}

/* Account a rejected batch (nothing is charged). */
static __always_inline void rg_account_reject(const struct rg_db_key *db, __u64 rows,
					      const struct rg_reject_info *info)
{
	struct rg_db_stats *st = rg_db_stats_get(db);

	if (!st)
		return;
	__sync_fetch_and_add(&st->rejected_requests, 1);
	__sync_fetch_and_add(&st->rejected_rows, rows);
	st->quota_rows_per_s = info->quota_rows_per_s;
	st->limit_rows_per_s = info->limit_rows_per_s;
}

#endif /* ROWGATE_BPF_ADMIT_H */
