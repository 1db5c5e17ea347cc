/* SPDX-License-Identifier: GPL-2.0 */
/* The counter tables of rowgate/counters.h as data: one descriptor per
 * field, so the stats JSON and the /metrics exposition are both generated
 * from the same table (and hence from the struct bpftool prints). */
#ifndef ROWGATE_USER_LIB_COUNTERS_H
#define ROWGATE_USER_LIB_COUNTERS_H

#include <stddef.h>

#include <jansson.h>

#include "rowgate/abi.h"
#include "rowgate/guard.h"
#include "rowgate/xdp_abi.h"

/* rowgated's reconciler counters: its own memory, not a map. */
struct rg_reconcile_stats {
	RG_RECONCILE_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* rowgated's resets after a kernel GOAWAY: its own memory, not a map. */
struct rg_h2_close_stats {
	RG_H2_CLOSE_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* rowgated's meta agent (distributed mode): its own memory, not a map. */
struct rg_agent_stats {
	RG_AGENT_STATS_FIELDS(RG_COUNTER_FIELD_)
};

enum rg_counter_kind {
	RG_KIND_COUNTER,
	RG_KIND_GAUGE,
};

struct rg_counter_desc {
	const char *json;   /* key in the stats JSON */
	const char *series; /* Prometheus name, "rowgate_" included */
	const char *help;
	enum rg_counter_kind kind;
	size_t off; /* of the __u64 in its struct */
};

struct rg_counter_table {
	const struct rg_counter_desc *d;
	size_t n;
};

extern const struct rg_counter_table rg_db_stats_table;     /* struct rg_db_stats */
extern const struct rg_counter_table rg_unlimited_stats_table; /* struct rg_unlimited_stats */
extern const struct rg_counter_table rg_proto_stats_table;  /* struct rg_proto_stats */
extern const struct rg_counter_table rg_global_stats_table; /* struct rg_global_stats */
extern const struct rg_counter_table rg_h2_stats_table;     /* struct rg_h2_stats */
extern const struct rg_counter_table rg_udp_stats_table;    /* struct rg_udp_stats */
extern const struct rg_counter_table rg_xdp_stats_table;    /* struct rg_xdp_stats */
extern const struct rg_counter_table rg_guard_stats_table;  /* struct rg_guard_stats */
extern const struct rg_counter_table rg_verdict_stats_table; /* struct rg_verdict_stats */
extern const struct rg_counter_table rg_reconcile_stats_table; /* struct rg_reconcile_stats */
extern const struct rg_counter_table rg_h2_close_stats_table; /* struct rg_h2_close_stats */
extern const struct rg_counter_table rg_agent_stats_table;     /* struct rg_agent_stats */

static inline __u64 rg_counter_get(const struct rg_counter_desc *d, const void *st)
{
	return *(const __u64 *)((const char *)st + d->off);
}

/* "counter" or "gauge", as a TYPE line spells it. */
const char *rg_counter_kind_name(enum rg_counter_kind kind);

/* Set every field of st in obj under its JSON key.  0 or -ENOMEM. */
int rg_counters_json(json_t *obj, const struct rg_counter_table *t, const void *st);

/* Whether a (database, protocol) saw traffic: the views list only those
 * (per-series databases get rows without requests of their own). */
static inline bool rg_proto_stats_seen(const struct rg_proto_stats *ps)
{
	return ps->admitted_requests || ps->rejected_requests || ps->admitted_rows ||
	       ps->rejected_rows || ps->reconciled_rows;
}

#endif /* ROWGATE_USER_LIB_COUNTERS_H */
