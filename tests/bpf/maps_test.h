/* SPDX-License-Identifier: MIT */
/* What the BPF_PROG_TEST_RUN tests read and write in the shared maps, by
 * database name: the objects differ, the maps' layouts do not. */
#ifndef ROWGATE_TEST_MAPS_H
#define ROWGATE_TEST_MAPS_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "rowgate/abi.h"
#include "rowgate/bucket.h"

static inline __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * RG_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

static inline struct rg_db_key dbkey(const char *name)
{
	struct rg_db_key k;

	memset(&k, 0, sizeof(k));
	snprintf(k.name, sizeof(k.name), "%s", name);
	return k;
}

/* The bucket as the kernel left it, read under its lock. */
static inline struct rg_bucket bucket_in(int buckets_fd, const char *name)
{
	struct rg_db_key k = dbkey(name);
	struct rg_bucket_value bv;

	memset(&bv, 0, sizeof(bv));
	bpf_map_lookup_elem_flags(buckets_fd, &k, &bv, BPF_F_LOCK);
	return bv.b;
}

/* A database's counters; all zero when it has none. */
static inline struct rg_db_stats db_stats_in(int db_stats_fd, const char *name)
{
	struct rg_db_key k = dbkey(name);
	struct rg_db_stats s;

	memset(&s, 0, sizeof(s));
	bpf_map_lookup_elem(db_stats_fd, &k, &s);
	return s;
}

#endif
