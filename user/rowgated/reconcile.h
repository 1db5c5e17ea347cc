/* SPDX-License-Identifier: GPL-2.0 */
/* Reconciliation of rows the kernel cannot count (docs/design.md#data-path): the
 * HTTP verdict charges an estimate from the body size and copies the body
 * into the `bodies` ring; here each copy is decoded and counted exactly
 * (user/decode), and the bucket and counters are corrected by the difference
 * through the rg_reconcile program, under the bucket's lock.
 */
#ifndef ROWGATE_USER_ROWGATED_RECONCILE_H
#define ROWGATE_USER_ROWGATED_RECONCILE_H

#include <jansson.h>
#include <stdbool.h>
#include <linux/types.h>

struct rg_reconciler;

struct rg_reconcile_stats;

/* Defaults of --copy-memory and --copy-expiry (docs/guarantees.md#bounded-state). */
#define RG_COPY_MEMORY_DEFAULT_BYTES (256ULL << 20)
#define RG_COPY_MEMORY_MIN_BYTES     (1ULL << 20) /* one copy's first buffers */
#define RG_COPY_EXPIRY_DEFAULT_S     30U          /* a copy missing its end */
#define RG_COPY_EXPIRY_MAX_S         86400U
#define RG_COPY_MAX_BYTES            (64ULL << 20) /* one copy: GreptimeDB's body limit */

struct rg_reconcile_fds {
	int bodies_fd;  /* ring buffer map */
	int ratios_fd;  /* learned bytes per row */
	int prog_fd;    /* rg_reconcile, run with BPF_PROG_TEST_RUN */
	int h2_cdb_fd;  /* the database of each connection's compressed gRPC messages */
	int h2_cdb_peer_fd; /* ... and of each client address's connections */
	__u64 copy_memory_bytes; /* cap on bytes held for copies; 0 = default */
	__u32 copy_expiry_s;     /* a copy without its end is freed after; 0 = default */
};

/* 0 or negative errno (logged). */
int rg_reconciler_new(const struct rg_reconcile_fds *fds, struct rg_reconciler **out);
void rg_reconciler_free(struct rg_reconciler *r);

/* An fd that polls readable when records wait. */
int rg_reconciler_fd(const struct rg_reconciler *r);

/* Consume what waits (timeout_ms 0: do not block). Returns records or < 0. */
int rg_reconciler_poll(struct rg_reconciler *r, int timeout_ms);

/* Counters and correction lag percentiles, for `rowgatectl stats`. */
void rg_reconciler_stats_json(const struct rg_reconciler *r, json_t *obj);

/* The counters, safe to call from another thread (/metrics). */
void rg_reconciler_stats(const struct rg_reconciler *r, struct rg_reconcile_stats *out);

/* The correction lag (a request's end to its bucket corrected) as a
 * Prometheus histogram: upper bounds in microseconds, a last bucket (+Inf)
 * beyond them.  The percentiles of the stats come from the last samples
 * only; these counts are since the start. */
#define RG_LAG_NR_BOUNDS 12
extern const __u64 rg_lag_bound_us[RG_LAG_NR_BOUNDS];

struct rg_lag_histogram {
	__u64 count, sum_ns;
	__u64 le[RG_LAG_NR_BOUNDS]; /* cumulative: samples <= rg_lag_bound_us[i] */
};

/* The bucket of a sample: the first bound it does not exceed, else
 * RG_LAG_NR_BOUNDS (+Inf). */
unsigned int rg_lag_bucket(__u64 lag_ns);

/* Safe to call from another thread (/metrics). */
void rg_reconciler_lag_histogram(const struct rg_reconciler *r, struct rg_lag_histogram *out);

/* A byte count with an optional K, M or G suffix (powers of 1024), as
 * --copy-memory takes it.  0 or -EINVAL. */
int rg_parse_bytes(const char *s, __u64 *out);

/* The buffer size a copy of cap bytes grows to for need bytes, when held
 * bytes are held in all (cap included) under limit: doubling from
 * RG_COPY_BUF_MIN_BYTES, at most RG_COPY_MAX_BYTES, else just enough
 * (whole RG_COPY_BUF_MIN_BYTES) to fit the cap; 0 when even that would
 * exceed the limit. */
#define RG_COPY_BUF_MIN_BYTES 65536
__u64 rg_copy_grow(__u64 held, __u64 limit, __u64 cap, __u64 need);

/* Remove HTTP/1.1 chunked framing in place; returns the data length or -1.
 * cut: the body ended with its connection, anywhere: the data that arrived,
 * a chunk begun included. */
long rg_dechunk(unsigned char *buf, size_t len, bool cut);

#endif /* ROWGATE_USER_ROWGATED_RECONCILE_H */
