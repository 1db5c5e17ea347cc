/* SPDX-License-Identifier: GPL-2.0 */
/* rowgate-meta's in-memory cluster: the configured limits, the frontends
 * that heartbeat, and one allocation (alloc.h) per database.
 * Pure: no I/O, no clock (callers pass now_ns), not thread-safe (the server
 * holds one lock around every call).
 *
 * Every heartbeat runs one allocation round for every limited database.  The
 * reporting frontend is then the only pending one, so the round grants it
 * alone: every frontend is granted on its own schedule, in its own reply,
 * and the allocator's record of what each frontend holds is what that
 * frontend was last told.
 *
 * Learning phase: for learning_ns after it starts leading, the allocator
 * does not know what the frontends hold (a previous leader granted it), so
 * it adopts the quota each frontend reports holding (capped by L) and
 * answers with that same quota.  A frontend that holds nothing is answered
 * "no assignment" (it uses L, as it already does).  Doorman's learning mode.
 */
#ifndef ROWGATE_USER_META_CLUSTER_H
#define ROWGATE_USER_META_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "alloc.h"

#include "../lib/meta_proto.h"
#include "../lib/state.h"

/* Heartbeats every second: a step in demand is met within 1-2 s. */
#define RG_META_HEARTBEAT_INTERVAL_MS_DEFAULT 1000ULL
/* A frontend silent this long is forgotten (its slots freed), not just
 * expired: ten minutes. */
#define RG_META_NODE_FORGET_NS (600ULL * 1000000000ULL)

struct rg_cluster_node {
	char id[RG_META_NODE_ID_MAX];
	__u64 last_hb_ns;
	__u64 heartbeats;
	bool seen; /* sent at least one heartbeat since this process started */
};

struct rg_cluster_db {
	struct rg_db_key db;
	struct rg_alloc_db alloc; /* fe[] / order[]: one slot per node */
};

struct rg_cluster {
	struct rg_alloc_params params;
	__u64 heartbeat_interval_ms;
	__u64 learning_ns;       /* length of a learning phase */
	__u64 learning_until_ns; /* 0 = not learning */
	struct rg_limit_list limits;
	struct rg_cluster_db *dbs; /* sorted by name, parallel to limits */
	size_t nr_dbs, cap_dbs;
	struct rg_cluster_node *nodes;
	__u32 nr_nodes, cap_nodes;
	/* counters for /v1/status */
	__u64 heartbeats;
	__u64 heartbeats_learning;
};

/* lease_ms > 0; learning_ms may be 0 (no learning phase). */
int rg_cluster_init(struct rg_cluster *cl, enum rg_alloc_strategy strategy, __u64 lease_ms,
		    __u64 heartbeat_interval_ms, __u64 learning_ms);
void rg_cluster_free(struct rg_cluster *cl);

/* Set or change a limit (0 = disabled but configured); 0 or -ENOMEM. */
int rg_cluster_set_limit(struct rg_cluster *cl, const struct rg_db_key *db, __u64 limit);
/* 0, or -ENOENT when db has no limit. */
int rg_cluster_unset_limit(struct rg_cluster *cl, const struct rg_db_key *db);
/* Replace every limit (a new leader loading the store); 0 or -ENOMEM. */
int rg_cluster_replace_limits(struct rg_cluster *cl, const struct rg_limit_list *limits);

/* Start leading at now_ns: forget every grant and start learning. */
void rg_cluster_start_leading(struct rg_cluster *cl, __u64 now_ns);
bool rg_cluster_learning(const struct rg_cluster *cl, __u64 now_ns);

/*
 * One heartbeat at now_ns: record the reports, allocate, and fill *reply
 * (every limited database, its limit and this frontend's quota; the caller
 * frees it with rg_meta_hb_reply_free).  Databases the frontend did not
 * report count as zero demand; reports of databases without a limit are
 * ignored.  0, or -ENOMEM / -E2BIG (too many frontends) with err.
 */
int rg_cluster_heartbeat(struct rg_cluster *cl, const struct rg_meta_hb_req *req, __u64 now_ns,
			 struct rg_meta_hb_reply *reply, char *err, size_t errlen);

/* The allocation of one database (or all, db NULL) as JSON for /v1/status:
 * [{"db","limit","outstanding","frontends":[{"node","demand","rejected",
 *   "debt","estimate","target","quota","lease_ms_left","live"}]}]. */
json_t *rg_cluster_status_json(const struct rg_cluster *cl, const struct rg_db_key *db,
			       __u64 now_ns);

#endif /* ROWGATE_USER_META_CLUSTER_H */
