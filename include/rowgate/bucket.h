/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Token bucket with debt: the admission contract of docs/design.md#token-bucket.
 *
 * The level of a bucket is  tokens - debt_rows + frac_nrows / 1e9  rows, with
 * tokens == 0 whenever debt_rows != 0.  Capacity is one second of quota.
 * Everything is exact u64 arithmetic over the whole quota range, without
 * 128-bit types, so the same code runs in BPF programs and in userspace.
 * No function here calls a helper: BPF callers hold a bpf_spin_lock around them.
 */
#ifndef ROWGATE_BUCKET_H
#define ROWGATE_BUCKET_H

#include "types.h"

#define RG_NSEC_PER_SEC 1000000000ULL

struct rg_bucket {
	__u64 tokens;     /* whole rows available; 0 while in debt */
	__u64 debt_rows;  /* rows admitted beyond the tokens there were */
	__u64 frac_nrows; /* fractional row carried, in 1e-9 rows, < 1e9 */
	__u64 quota;      /* rows per second; 0 = not initialised */
	__u64 last_ns;    /* clock of the last refill (never moves back) */
};

RG_INLINE __u64 rg_sat_add(__u64 a, __u64 b)
{
	return a > RG_U64_MAX - b ? RG_U64_MAX : a + b;
}

/* a * b, saturating at U64_MAX. */
RG_INLINE __u64 rg_sat_mul(__u64 a, __u64 b)
{
	if (a == 0 || b == 0)
		return 0;
	return a > RG_U64_MAX / b ? RG_U64_MAX : a * b;
}

/* A full bucket at quota q (q > 0), refilled as of now_ns. */
RG_INLINE void rg_bucket_init(struct rg_bucket *b, __u64 q, __u64 now_ns)
{
	b->tokens = q;
	b->debt_rows = 0;
	b->frac_nrows = 0;
	b->quota = q;
	b->last_ns = now_ns;
}

RG_INLINE void rg_bucket_fill(struct rg_bucket *b)
{
	b->tokens = b->quota;
	b->debt_rows = 0;
	b->frac_nrows = 0; /* a full bucket carries no fraction */
}

/*
 * Add secs * q + rows (rows <= q) exactly, although secs * q may not fit in
 * u64: with debt = dq * q + dr, the level after the refill is
 * (secs - dq) * q + rows - dr, which decides fullness without the product.
 */
RG_INLINE void rg_bucket_add(struct rg_bucket *b, __u64 secs, __u64 rows)
{
	__u64 q = b->quota, dq, dr;

	if (b->debt_rows == 0) {
		if (secs >= 1 || b->tokens >= q || rows >= q - b->tokens)
			rg_bucket_fill(b);
		else
			b->tokens += rows;
		return;
	}
	dq = b->debt_rows / q;
	dr = b->debt_rows % q;
	if (secs > dq && (secs - dq > 1 || rows >= dr)) {
		rg_bucket_fill(b);
	} else if (secs > dq) { /* one second more than the debt, rows < dr */
		b->debt_rows = 0;
		b->tokens = q + rows - dr;
	} else if (secs == dq && rows >= dr) {
		b->debt_rows = 0;
		b->tokens = rows - dr;
		if (b->tokens >= q)
			rg_bucket_fill(b);
	} else if (secs == dq) {
		b->debt_rows = dr - rows;
	} else {
		/* (dq - secs) * q >= q >= rows: neither overflows nor wraps */
		b->debt_rows = (dq - secs) * q - rows + dr;
	}
}

/*
 * Refill for the time elapsed since last_ns.  Splitting the elapsed time into
 * seconds and nanoseconds, and the quota into units of 1e9 rows/s and the
 * rest, keeps every product inside u64 and makes the result independent of
 * how the time is cut into steps.  A clock that goes backwards grants nothing
 * and does not move last_ns back, so no interval is ever granted twice.
 */
RG_INLINE void rg_bucket_refill(struct rg_bucket *b, __u64 now_ns)
{
	__u64 q = b->quota, elapsed, secs, rem_ns, q_hi, q_lo, rows, frac;

	if (now_ns <= b->last_ns || q == 0)
		return;
	elapsed = now_ns - b->last_ns;
	b->last_ns = now_ns;
	if (b->debt_rows == 0 && b->tokens >= q) {
		b->frac_nrows = 0;
		return;
	}
	secs = elapsed / RG_NSEC_PER_SEC;
	rem_ns = elapsed % RG_NSEC_PER_SEC;
	q_hi = q / RG_NSEC_PER_SEC;
	q_lo = q % RG_NSEC_PER_SEC;
	frac = rem_ns * q_lo + b->frac_nrows;         /* < 1e18 + 1e9 */
	rows = rem_ns * q_hi + frac / RG_NSEC_PER_SEC; /* <= q */
	b->frac_nrows = frac % RG_NSEC_PER_SEC;
	rg_bucket_add(b, secs, rows);
}

/* Charge rows that were admitted: tokens first, the rest becomes debt. */
RG_INLINE void rg_bucket_charge(struct rg_bucket *b, __u64 rows)
{
	if (b->tokens >= rows) {
		b->tokens -= rows;
		return;
	}
	rows -= b->tokens;
	b->tokens = 0;
	b->debt_rows = rg_sat_add(b->debt_rows, rows);
}

/* Give rows back (an estimate was too high): debt first, then tokens up to
 * capacity; the fraction is kept. */
RG_INLINE void rg_bucket_refund(struct rg_bucket *b, __u64 rows)
{
	if (b->debt_rows >= rows) {
		b->debt_rows -= rows;
		return;
	}
	rows -= b->debt_rows;
	b->debt_rows = 0;
	if (b->tokens >= b->quota || rows >= b->quota - b->tokens)
		rg_bucket_fill(b);
	else
		b->tokens += rows;
}

/*
 * A refund (an estimate found too high) credits the bucket only while it is
 * fresh: within RG_REFUND_CREDIT_NS of the end of its request.  Each refund
 * stops at capacity, but a backlog of them (rowgated stopped or behind, then
 * catching up) tops the bucket up again and again while writers drain it:
 * credit owed to the past, admitted now on top of the refill.  A late refund
 * leaves the estimate in the bucket (the counters still take the exact rows);
 * a late charge is always applied.  docs/design.md#late-refunds
 */
#define RG_REFUND_CREDIT_NS RG_NSEC_PER_SEC /* a running rowgated: ~0.2 ms */

RG_INLINE bool rg_refund_credited(__u64 age_ns)
{
	return age_ns <= RG_REFUND_CREDIT_NS;
}

/* The admission rule: at least one whole token, whatever the batch size. */
RG_INLINE bool rg_bucket_can_admit(const struct rg_bucket *b)
{
	return b->tokens >= 1;
}

/* Refill, then admit and charge rows if one whole token exists. */
RG_INLINE bool rg_bucket_admit(struct rg_bucket *b, __u64 now_ns, __u64 rows)
{
	rg_bucket_refill(b, now_ns);
	if (!rg_bucket_can_admit(b))
		return false;
	rg_bucket_charge(b, rows);
	return true;
}

/* A quota change keeps the debt and clamps tokens to the new capacity. */
RG_INLINE void rg_bucket_set_quota(struct rg_bucket *b, __u64 now_ns, __u64 q)
{
	rg_bucket_refill(b, now_ns);
	if (b->last_ns < now_ns)
		b->last_ns = now_ns;
	b->quota = q;
	if (b->tokens >= q) {
		b->tokens = q;
		b->frac_nrows = 0;
	}
}

/*
 * Nanoseconds until one whole token exists (0 if one does now), saturating.
 * Rows still missing are  need = debt + 1 - tokens  minus the fraction; the
 * time is ceil((need * 1e9 - frac) / q), computed per whole second of quota
 * so that nothing overflows.
 */
RG_INLINE __u64 rg_bucket_ns_until_token(const struct rg_bucket *b)
{
	__u64 q = b->quota, need, secs, rest_nrows, q_hi, q_lo, ns;

	if (b->tokens >= 1 || q == 0)
		return 0;
	need = rg_sat_add(b->debt_rows, 1);
	secs = need / q;
	need %= q; /* rows left after whole seconds, < q */
	/* rest_nrows = need * 1e9 - frac, split to stay in u64 */
	if (need == 0) {
		/* exactly secs seconds minus the carried fraction */
		if (secs == 0)
			return 0;
		secs -= 1;
		need = q;
	}
	q_hi = q / RG_NSEC_PER_SEC;
	q_lo = q % RG_NSEC_PER_SEC;
	if (q_hi == 0) {
		/* q < 1e9: need < q < 1e9, so need * 1e9 < 1e18 */
		rest_nrows = need * RG_NSEC_PER_SEC - b->frac_nrows;
		ns = (rest_nrows + q - 1) / q;
	} else {
		/* q >= 1e9: one row takes < 1 ns; count ns in steps of q_hi */
		rest_nrows = need; /* rows, sub-ns precision is irrelevant */
		ns = rest_nrows / (q_hi + (q_lo ? 1 : 0));
		if (ns == 0)
			ns = 1;
	}
	return rg_sat_add(rg_sat_mul(secs, RG_NSEC_PER_SEC), ns);
}

/* Retry-After in whole seconds, at least 1 (HTTP has no fractions). */
RG_INLINE __u64 rg_bucket_retry_after_s(const struct rg_bucket *b)
{
	__u64 ns = rg_bucket_ns_until_token(b);
	__u64 s = ns / RG_NSEC_PER_SEC + (ns % RG_NSEC_PER_SEC ? 1 : 0);

	return s ? s : 1;
}

#endif /* ROWGATE_BUCKET_H */
