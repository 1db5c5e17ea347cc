/* The kernel <-> userspace ABI: map names, keys and values, pinned under the
 * daemon's bpffs directory and readable with `bpftool map dump pinned`.
 * Both sides include this file; nothing here is defined anywhere else.
 */
#ifndef ROWGATE_ABI_H
#define ROWGATE_ABI_H

#include "types.h"
#include "bucket.h"
#ifndef __bpf__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

/* Map names double as pin names under the bpffs directory. */
#define RG_MAP_LIMITS   limits
#define RG_MAP_BUCKETS  buckets
#define RG_MAP_DB_STATS db_stats
#define RG_MAP_ROUTES   routes
#define RG_MAP_PORTS    ports
#define RG_MAP_CONNS    conns
#define RG_MAP_SOCKHASH sockhash
#define RG_MAP_GLOBAL   global_stats
#define RG_STR_(x) #x
#define RG_STR(x)  RG_STR_(x)

#define RG_DB_NAME_MAX   64    /* bytes of a database key, NUL included */
#define RG_PATH_MAX      64    /* bytes of a route key, NUL included */
#define RG_MAX_DATABASES 16384 /* limits, buckets and counters */
#define RG_MAX_ROUTES    256
#define RG_MAX_PORTS     64
#define RG_MAX_CONNS     65536 /* tracked ingest connections per host */

/* A database as the server resolves it (dbname.h), NUL-padded. */
struct rg_db_key {
	char name[RG_DB_NAME_MAX];
};

/* limits: db -> configured limit and the allocator's quota.  0 = unlimited. */
struct rg_limit {
	__u64 limit_rows_per_s; /* configured limit L; 0 disables */
	__u64 quota_rows_per_s; /* assigned share, 0 = none: use L */
};

/* buckets: db -> token bucket; written by the kernel only, under the lock.
 * The daemon creates a full one when a limit is first set (BPF_NOEXIST),
 * so debt survives disable/re-enable and daemon restarts. */
struct rg_bucket_value {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct rg_bucket b;
};

/* db_stats: db -> counters since the map was created (atomic adds). */
struct rg_db_stats {
	__u64 admitted_requests;
	__u64 admitted_rows;
	__u64 rejected_requests;
	__u64 rejected_rows;
	__u64 unenforced_requests; /* could not be answered in order: passed */
	__u64 unenforced_rows;
	__u64 debt_rows;           /* bucket snapshot at the last charge */
	__u64 tokens;
	__u64 quota_rows_per_s;
	__u64 limit_rows_per_s;
};

/* Protocols a route can name; how the rows of its body are counted. */
enum rg_protocol {
	RG_PROTO_NONE = 0,
	RG_PROTO_LINE = 1, /* InfluxDB line protocol: one row per line */
};

#define RG_ROUTE_BUCKET_PARAM (1U << 0) /* InfluxDB v2 path: `bucket` names the db */

/* routes: exact request path (no query) -> protocol. */
struct rg_route_key {
	char path[RG_PATH_MAX];
};

struct rg_route {
	__u32 protocol; /* enum rg_protocol */
	__u32 flags;    /* RG_ROUTE_* */
};

/* ports: local TCP port (host order) -> 1 when guarded. */

/* global_stats: one entry of host-wide counters. */
struct rg_global_stats {
	__u64 conns_tracked;
	__u64 conns_untracked;      /* conn state map full: passed unenforced */
	__u64 non_http_conns;       /* first bytes were not HTTP: passed */
	__u64 bad_requests;         /* answered 400 and closed */
	__u64 heads_split;          /* request heads stashed across skbs */
	__u64 pipelined_unenforced; /* rejections that could not be answered in order */
	__u64 recvmsg_failopen;     /* verdicts run inside recvmsg: passed */
	__u64 responses_close;      /* 429s that had to close the connection */
	__u64 internal_errors;      /* helper failures: passed unenforced */
};

/* The effective quota of DESIGN §1: the assignment, capped by the limit,
 * at least 1; the limit itself when nothing is assigned. */
RG_INLINE __u64 rg_effective_quota(const struct rg_limit *l)
{
	__u64 q = l->quota_rows_per_s;

	if (q == 0 || q > l->limit_rows_per_s)
		q = l->limit_rows_per_s;
	return q ? q : 1;
}

#endif /* ROWGATE_ABI_H */
