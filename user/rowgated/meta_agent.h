/* SPDX-License-Identifier: GPL-2.0 */
/* rowgated's side of distributed mode: a thread that heartbeats to
 * rowgate-meta (demand, rejections, debt and held quota of every limited
 * database, from the pinned maps) and writes the limits and quotas of each
 * reply into the limits map.
 *
 * When no allocator answers, the quotas are kept until their lease ends
 * (measured from when the last successful heartbeat was sent, so the
 * frontend lets go no later than the allocator does), then every database
 * falls back to its full limit (quota 0 = "use L", docs/design.md#effective-quota); counted and
 * logged.  The admin socket is never blocked: the HTTP exchange runs in the
 * agent's own thread, and the main loop only picks up the cluster's limit
 * list (rg_meta_agent_tick) to show it and keep it in the state file, so a
 * restart with the allocator down still enforces the last known limits.
 */
#ifndef ROWGATE_USER_ROWGATED_META_AGENT_H
#define ROWGATE_USER_ROWGATED_META_AGENT_H

#include <jansson.h>

#include <rowgate/abi.h>

#include "../lib/state.h"

/* Until the first reply names one, in ms. */
#define RG_META_AGENT_INTERVAL_MS_DEFAULT 1000ULL
/* Connecting to a replica: loopback or LAN, so short. */
#define RG_META_AGENT_CONNECT_TIMEOUT_MS 300L
/* One heartbeat exchange never takes longer than this. */
#define RG_META_AGENT_TIMEOUT_MS_MAX 2000L
/* Replica URLs in --meta (comma-separated). */
#define RG_META_AGENT_URLS_MAX 8

struct rg_meta_agent;

struct rg_meta_agent_config {
	const char *urls;       /* "http://a:4100[,http://b:4100...]" */
	const char *node_id;    /* this frontend's id, unique in the cluster */
	const char *token_file; /* NULL: no Authorization header */
	/* https:// replicas: the CA that verifies them (NULL: the system's),
	 * this host's client certificate and key (NULL: none) */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	int limits_fd;          /* the pinned maps (abi.h) */
	int buckets_fd;
	int stats_fd;
	/*
	 * Make db enforce {limit, quota}: create its bucket and counters when
	 * new (as a local limit would), then write the limits map.  Called from
	 * the agent thread; returns 0 or negative errno.
	 */
	int (*apply)(void *ctx, const struct rg_db_key *db, __u64 limit, __u64 quota);
	void *ctx;
};

/* Validate the configuration (URLs, node id, token file) and start the
 * thread.  0 with *out set, or negative errno after logging why. */
int rg_meta_agent_start(const struct rg_meta_agent_config *cfg, struct rg_meta_agent **out);

/* Stop the thread (waits at most one heartbeat timeout) and free; NULL ok. */
void rg_meta_agent_stop(struct rg_meta_agent *a);

/* From the daemon's main loop: when the cluster's limits changed, copy them
 * into limits and save them to state_file (NULL: don't).  Cheap otherwise. */
void rg_meta_agent_tick(struct rg_meta_agent *a, struct rg_limit_list *limits,
			const char *state_file);

/* Counters and state for `rowgatectl stats` (a new object; NULL on ENOMEM). */
json_t *rg_meta_agent_stats(struct rg_meta_agent *a);

/* The same counters for /metrics (any thread). */
struct rg_agent_stats;
void rg_meta_agent_read_stats(struct rg_meta_agent *a, struct rg_agent_stats *out);

#endif /* ROWGATE_USER_ROWGATED_META_AGENT_H */
