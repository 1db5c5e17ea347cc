/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/2 path's counters (RG_H2_STATS_FIELDS, rowgate/counters.h): a
 * map of their own, so the host-wide global_stats keeps only what every
 * connection shares. */
#ifndef ROWGATE_BPF_H2_STATS_H
#define ROWGATE_BPF_H2_STATS_H

#include "../base.h"
#include "../maps.h"
#include "rowgate/abi.h"

/* h2_stats: [0] -> host-wide HTTP/2 counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_h2_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_STATS SEC(".maps");

#define rg_h2_stats_add(field, v) rg_stats_add(RG_MAP_H2_STATS, struct rg_h2_stats, field, v)
#define rg_h2_stats_inc(field)	  rg_h2_stats_add(field, 1)
#define rg_h2_stats_set(field, v) rg_stats_set(RG_MAP_H2_STATS, struct rg_h2_stats, field, v)

#endif /* ROWGATE_BPF_H2_STATS_H */
