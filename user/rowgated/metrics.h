/* SPDX-License-Identifier: GPL-2.0 */
/* /metrics in the Prometheus text format: rowgate_* series with a db label,
 * read from the pinned maps on every scrape (libmicrohttpd's own thread). */
#ifndef ROWGATE_USER_ROWGATED_METRICS_H
#define ROWGATE_USER_ROWGATED_METRICS_H

struct rg_metrics;
struct rg_reconciler;
struct rg_h2_closer;
struct rg_meta_agent;

struct rg_metrics_maps {
	int limits_fd;
	int buckets_fd;
	int db_stats_fd;
	int global_fd;
	int proto_stats_fd;
	const char *bpffs; /* the pins: UDP maps, guard_stats, rowgate_enforcing */
	const struct rg_reconciler *reconciler; /* rowgated's own counters; NULL: none */
	const struct rg_h2_closer *closer;	/* likewise */
	struct rg_meta_agent *agent;		/* --meta's agent; NULL: none */
};

/* The /metrics endpoint over maps (copied; what it points to must outlive
 * the endpoint), listening nowhere yet.  0 or -ENOMEM. */
int rg_metrics_new(const struct rg_metrics_maps *maps, struct rg_metrics **out);
/* Serve http://ADDR/metrics, and no longer the address before; NULL: serve
 * nowhere.  addr is "IP:PORT", "[IPv6]:PORT", "HOST:PORT" (its first
 * address) or ":PORT" (every address of the host): rg_listen_addr_parse.
 * The new listener opens first, so on failure the old one stays.  Returns 0
 * or negative errno (logged). */
int rg_metrics_listen(struct rg_metrics *m, const char *addr);
void rg_metrics_free(struct rg_metrics *m);

/* The exposition text (malloc'd, NUL-terminated); NULL on allocation failure. */
char *rg_metrics_render(const struct rg_metrics_maps *maps);

#endif /* ROWGATE_USER_ROWGATED_METRICS_H */
