/* SPDX-License-Identifier: GPL-2.0 */
/* Reconciliation of rows the kernel cannot count (docs/design.md#data-path): the
 * HTTP verdict charges an estimate from the body size and copies the body
 * into the `bodies` ring; here each copy is decoded and counted exactly
 * (user/decode), and the bucket and counters are corrected by the difference
 * through the rg_reconcile program, under the bucket's lock.
 */
#ifndef ROWGATE_USER_RECONCILE_H
#define ROWGATE_USER_RECONCILE_H

#include <jansson.h>
#include <linux/types.h>

struct rg_reconciler;

struct rg_reconcile_fds {
	int bodies_fd;  /* ring buffer map */
	int ratios_fd;  /* learned bytes per row */
	int prog_fd;    /* rg_reconcile, run with BPF_PROG_TEST_RUN */
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

/* Remove HTTP/1.1 chunked framing in place; returns the data length or -1. */
long rg_dechunk(unsigned char *buf, size_t len);

#endif /* ROWGATE_USER_RECONCILE_H */
