/* Maps of enforcement continuity (rowgate/guard.h): what rowgated attached,
 * the adoption of connections that predate a start, and the counters of
 * adoption and of the connection-table policy. */
#ifndef ROWGATE_BPF_GUARD_H
#define ROWGATE_BPF_GUARD_H

#include "rowgate/guard.h"

/* guard: [0] -> the cgroup and policy rowgated attached with */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_guard);
} RG_MAP_GUARD SEC(".maps");

/* guard_stats: [0] -> adoption and connection-table counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_guard_stats);
} RG_MAP_GUARD_STATS SEC(".maps");

/* adopting: socket cookie -> adoption state, until a request boundary */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_adopt);
} RG_MAP_ADOPT SEC(".maps");

#define rg_guard_add(field, n)                                                \
	do {                                                                  \
		__u32 zero__ = 0;                                             \
		struct rg_guard_stats *g__ =                                  \
			bpf_map_lookup_elem(&RG_MAP_GUARD_STATS, &zero__);    \
		if (g__)                                                      \
			__sync_fetch_and_add(&g__->field, (n));               \
	} while (0)

#endif /* ROWGATE_BPF_GUARD_H */
