/* SPDX-License-Identifier: GPL-2.0 */
/* Maps shared by every rowgate BPF object (HTTP verdict, XDP): the daemon
 * pins them by name under its bpffs directory and every object reuses the
 * pinned instance, so one database has one bucket whatever the protocol.
 */
#ifndef ROWGATE_BPF_MAPS_H
#define ROWGATE_BPF_MAPS_H

#include "base.h"
#include "rowgate/abi.h"

/* limits: database -> configured limit and assigned quota (daemon writes) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_db_key);
	__type(value, struct rg_limit);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_LIMITS SEC(".maps");

/* buckets: database -> token bucket (kernel writes, under its lock) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_db_key);
	__type(value, struct rg_bucket_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_BUCKETS SEC(".maps");

/* db_stats: database -> admission counters */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_db_key);
	__type(value, struct rg_db_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_DB_STATS SEC(".maps");

/* shadow: database -> would-be refusals, while its limit is in shadow mode */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_db_key);
	__type(value, struct rg_shadow_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_SHADOW SEC(".maps");

/* unlimited: database -> writes while it has no limit; the kernel adds a
 * database the first time it is written to, and an LRU keeps a flood of
 * invented names from crowding out the rest */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RG_MAX_DATABASES);
	__type(key, struct rg_db_key);
	__type(value, struct rg_unlimited_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_UNLIMITED SEC(".maps");

/* global_stats: [0] -> host-wide counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_global_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_GLOBAL SEC(".maps");

/* The counters of a one-entry map of counter structs (counters.h): every
 * CPU adds, so adds are atomic; a gauge is stored. */
#define rg_stats_add(map, type, field, v)                                     \
	do {                                                                  \
		__u32 zero__ = 0;                                             \
		type *s__ = bpf_map_lookup_elem(&(map), &zero__);             \
		if (s__)                                                      \
			__sync_fetch_and_add(&s__->field, (v));               \
	} while (0)

#define rg_stats_set(map, type, field, v)                                     \
	do {                                                                  \
		__u32 zero__ = 0;                                             \
		type *s__ = bpf_map_lookup_elem(&(map), &zero__);             \
		if (s__)                                                      \
			s__->field = (v);                                     \
	} while (0)

#define rg_global_add(field, v) rg_stats_add(RG_MAP_GLOBAL, struct rg_global_stats, field, v)
#define rg_global_inc(field) rg_global_add(field, 1)

#endif /* ROWGATE_BPF_MAPS_H */
