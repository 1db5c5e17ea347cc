// SPDX-License-Identifier: GPL-2.0
/* Descriptor arrays expanded from the tables of rowgate/counters.h. */
#include <errno.h>
#include <stddef.h>

#include "state.h" /* rg_json_u64 */
#include "counters.h"

#define RG_DESC_(type, field, json, series, kind, help) \
	{ json, "rowgate_" series, help, RG_KIND_##kind, offsetof(type, field) },
#define RG_TABLE_(name, type, FIELDS)                                            \
	static const struct rg_counter_desc name##_desc[] = { FIELDS(name##_X_) }; \
	const struct rg_counter_table name##_table = {                             \
		name##_desc, sizeof(name##_desc) / sizeof(name##_desc[0])          \
	}

#define rg_db_stats_X_(...) RG_DESC_(struct rg_db_stats, __VA_ARGS__)
#define rg_unlimited_stats_X_(...) RG_DESC_(struct rg_unlimited_stats, __VA_ARGS__)
#define rg_proto_stats_X_(...) RG_DESC_(struct rg_proto_stats, __VA_ARGS__)
#define rg_global_stats_X_(...) RG_DESC_(struct rg_global_stats, __VA_ARGS__)
#define rg_h2_stats_X_(...) RG_DESC_(struct rg_h2_stats, __VA_ARGS__)
#define rg_udp_stats_X_(...) RG_DESC_(struct rg_udp_stats, __VA_ARGS__)
#define rg_xdp_stats_X_(...) RG_DESC_(struct rg_xdp_stats, __VA_ARGS__)
#define rg_guard_stats_X_(...) RG_DESC_(struct rg_guard_stats, __VA_ARGS__)
#define rg_verdict_stats_X_(...) RG_DESC_(struct rg_verdict_stats, __VA_ARGS__)
#define rg_reconcile_stats_X_(...) RG_DESC_(struct rg_reconcile_stats, __VA_ARGS__)
#define rg_h2_close_stats_X_(...) RG_DESC_(struct rg_h2_close_stats, __VA_ARGS__)
#define rg_agent_stats_X_(...) RG_DESC_(struct rg_agent_stats, __VA_ARGS__)

RG_TABLE_(rg_db_stats, struct rg_db_stats, RG_DB_STATS_FIELDS);
RG_TABLE_(rg_unlimited_stats, struct rg_unlimited_stats, RG_UNLIMITED_STATS_FIELDS);
RG_TABLE_(rg_proto_stats, struct rg_proto_stats, RG_PROTO_STATS_FIELDS);
RG_TABLE_(rg_global_stats, struct rg_global_stats, RG_GLOBAL_STATS_FIELDS);
RG_TABLE_(rg_h2_stats, struct rg_h2_stats, RG_H2_STATS_FIELDS);
RG_TABLE_(rg_udp_stats, struct rg_udp_stats, RG_UDP_STATS_FIELDS);
RG_TABLE_(rg_xdp_stats, struct rg_xdp_stats, RG_XDP_STATS_FIELDS);
RG_TABLE_(rg_guard_stats, struct rg_guard_stats, RG_GUARD_STATS_FIELDS);
RG_TABLE_(rg_verdict_stats, struct rg_verdict_stats, RG_VERDICT_STATS_FIELDS);
RG_TABLE_(rg_reconcile_stats, struct rg_reconcile_stats, RG_RECONCILE_STATS_FIELDS);
RG_TABLE_(rg_h2_close_stats, struct rg_h2_close_stats, RG_H2_CLOSE_STATS_FIELDS);
RG_TABLE_(rg_agent_stats, struct rg_agent_stats, RG_AGENT_STATS_FIELDS);

const char *rg_counter_kind_name(enum rg_counter_kind kind)
{
	return kind == RG_KIND_GAUGE ? "gauge" : "counter";
}

int rg_counters_json(json_t *obj, const struct rg_counter_table *t, const void *st)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (json_object_set_new(obj, t->d[i].json, rg_json_u64(rg_counter_get(&t->d[i], st))))
			return -ENOMEM;
	return 0;
}
