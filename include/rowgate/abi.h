/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The kernel <-> userspace ABI: map names, keys and values, pinned under the
 * daemon's bpffs directory and readable with `bpftool map dump pinned`.
 * Both sides include this file; nothing here is defined anywhere else.
 */
#ifndef ROWGATE_ABI_H
#define ROWGATE_ABI_H

#include "types.h"
#include "bucket.h"
#include "protocols.h"
#include "counters.h"
#include "rows.h"
#ifndef __bpf__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

/* Map names double as pin names under the bpffs directory. */
#define RG_MAP_LIMITS   limits
#define RG_MAP_BUCKETS  buckets
#define RG_MAP_DB_STATS db_stats
#define RG_MAP_SHADOW   shadow
#define RG_MAP_UNLIMITED unlimited
#define RG_MAP_ROUTES   routes
#define RG_MAP_PORTS    ports
#define RG_MAP_CONNS    conns
#define RG_MAP_STASH    stash
#define RG_MAP_SOCKHASH sockhash
#define RG_MAP_GLOBAL   global_stats
#define RG_MAP_PROTO_STATS proto_stats
#define RG_MAP_RATIOS   ratios
#define RG_MAP_BODIES   bodies
#define RG_MAP_REFUSED  refused
#define RG_MAP_H2_CONNS h2_conns
#define RG_MAP_H2_OUT   h2_out
#define RG_MAP_H2_PARKED h2_parked
#define RG_MAP_H2_GOAWAY h2_goaway
#define RG_MAP_H2_STATS h2_stats
#define RG_STR_(x) #x
#define RG_STR(x)  RG_STR_(x)

#define RG_DB_NAME_MAX   64    /* bytes of a database key, NUL included */
#define RG_PATH_MAX      64    /* bytes of a route key, NUL included */
#define RG_MAX_DATABASES 16384 /* limits, buckets and counters */
#define RG_MAX_ROUTES    256
#define RG_MAX_PORTS     64
#define RG_MAX_CONNS     65536 /* tracked ingest connections per host */
/* h2_parked's entries by default (--grpc-parked-streams), all connections
 * together (about 370 bytes each, allocated as streams park): 146
 * connections with every stream parked */
#define RG_H2_PARKED_ENTRIES 16384

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

/* shadow: db -> what its limit would have refused, for a database whose
 * limit runs in shadow mode (rowgatectl limit set DB N --shadow): such a
 * write passes uncharged, as if the limit had refused it, and is counted
 * here.  An entry exists only while the database is in shadow mode. */
struct rg_shadow_stats {
	__u64 would_reject_requests;
	__u64 would_reject_rows; /* rows known when it passed (gRPC, UDP) */
};

/* unlimited: db -> writes while it has no limit (counters.h). */
struct rg_unlimited_stats {
	RG_UNLIMITED_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* db_stats: db -> counters since the map was created (counters.h). */
struct rg_db_stats {
	RG_DB_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* enum rg_protocol and its names: protocols.h. */

#define RG_ROUTE_BUCKET_PARAM (1U << 0) /* InfluxDB v2 path: `bucket` names the db */
#define RG_ROUTE_TENANT       (1U << 1) /* X-Scope-OrgID names the db (Loki) */
#define RG_ROUTE_REFUSE       (1U << 2) /* the server writes there, rowgate
					 * cannot count it: answered 400 */

/* routes: exact request path (no query) -> protocol.  A path ending in
 * "/_bulk" that has no route of its own takes the route of this key. */
#define RG_ROUTE_BULK_WILDCARD "*/_bulk"
struct rg_route_key {
	char path[RG_PATH_MAX];
};

struct rg_route {
	__u32 protocol; /* enum rg_protocol */
	__u32 flags;    /* RG_ROUTE_* */
	__u32 profiles; /* bit (1 << enum rg_profile) per server that runs it; 0: all */
};

/* What a guarded port serves: its server decides which method and path run
 * a write and which database it lands in (docs/server-profiles.md). */
enum rg_profile {
	RG_PROFILE_GREPTIMEDB = 0,
	RG_PROFILE_INFLUXDB = 1,       /* InfluxDB 1.x */
	RG_PROFILE_VICTORIAMETRICS = 2,
	RG_PROFILE_PROMETHEUS = 3,     /* remote-write receiver */
	RG_PROFILE_LOKI = 4,
	RG_PROFILE_MAX,
};

#define RG_PROFILE_BIT(p) (1U << (p))

/* Go's net/http and url.Query read the request (every profile but GreptimeDB). */
#define rg_profile_is_go(p) ((p) != RG_PROFILE_GREPTIMEDB)

/* How the profile's server stores line protocol (docs/rows.md): the kernel
 * and rowgated's decoder both count each request by its port's profile. */
RG_INLINE __u8 rg_profile_rows_mode(__u32 profile)
{
	return profile == RG_PROFILE_VICTORIAMETRICS ? RG_ROWS_VM_SAMPLES : RG_ROWS_LINES;
}

RG_INLINE __u8 rg_profile_comment_rule(__u32 profile)
{
	return profile == RG_PROFILE_VICTORIAMETRICS ? RG_LP_COMMENT_AT_START :
						       RG_LP_COMMENT_AFTER_BLANKS;
}

#ifndef __bpf__
/* The profile names of --port PORT=PROFILE. */
static inline const char *rg_profile_name(__u32 profile)
{
	static const char *const names[RG_PROFILE_MAX] = {
		[RG_PROFILE_GREPTIMEDB] = "greptimedb",
		[RG_PROFILE_INFLUXDB] = "influxdb",
		[RG_PROFILE_VICTORIAMETRICS] = "victoriametrics",
		[RG_PROFILE_PROMETHEUS] = "prometheus",
		[RG_PROFILE_LOKI] = "loki",
	};

	return profile < RG_PROFILE_MAX ? names[profile] : "unknown";
}
#endif

#define RG_PORT_ALLOW_UNPARSED (1U << 0) /* bytes that are not HTTP pass (counted) */
#define RG_PORT_GRPC (1U << 1) /* h2c with prior knowledge is followed (docs/grpc.md) */

/* ports: local TCP port (host order) -> what it guards. */
struct rg_port {
	__u8 profile; /* enum rg_profile */
	__u8 flags;   /* RG_PORT_* */
	__u8 pad[2];
	/* the server's connection timers (docs/server-profiles.md#server-timeouts),
	 * 0 = none: a connection that never had a request passed is closed
	 * header_timeout_s after accept, one that had idle_timeout_s after the
	 * last passed request's answer */
	__u16 header_timeout_s;
	__u16 idle_timeout_s;
};

#define RG_TIMEOUT_MAX_S 65535 /* what a timer field holds */

/* The timers of each profile's server at the version Debian 12 ships,
 * before any --server-timeout (docs/server-profiles.md#server-timeouts). */
RG_INLINE __u16 rg_profile_header_timeout_s(__u32 profile)
{
	switch (profile) {
	case RG_PROFILE_VICTORIAMETRICS:
		return 5; /* lib/httpserver ReadHeaderTimeout */
	case RG_PROFILE_PROMETHEUS:
		return 300; /* --web.read-timeout */
	case RG_PROFILE_LOKI:
		return 30; /* -server.http-read-timeout */
	default:
		return 0; /* influxd and GreptimeDB set none */
	}
}

RG_INLINE __u16 rg_profile_idle_timeout_s(__u32 profile)
{
	switch (profile) {
	case RG_PROFILE_VICTORIAMETRICS:
		return 60; /* -http.idleConnTimeout */
	case RG_PROFILE_PROMETHEUS:
		return 300; /* --web.read-timeout */
	case RG_PROFILE_LOKI:
		return 120; /* -server.http-idle-timeout */
	default:
		return 0;
	}
}

/*
 * A rejected request is answered with Connection: close once half the
 * server's timer has run: the server never sees it, so its timer keeps
 * running, and a client that writes at least every timeout/2 then always
 * reconnects before the server would reset it mid-send.
 */
RG_INLINE bool rg_server_timer_near(__u64 elapsed_ns, __u32 timeout_s)
{
	return timeout_s && elapsed_ns >= (__u64)timeout_s * (RG_NSEC_PER_SEC / 2);
}

/* proto_stats: (database, protocol) -> counters of that protocol. */
struct rg_proto_key {
	struct rg_db_key db;
	__u32 protocol; /* enum rg_protocol */
	__u32 pad;
};

struct rg_proto_stats {
	RG_PROTO_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* ratios: (database, protocol) -> learned body bytes per row, x16. */
struct rg_ratio {
	__u64 bytes_per_row_x16;
};

/* Estimates before rowgated has counted a body: rowgate/estimate.h. */

/* bodies: ring buffer of body copies for rowgated to count.  A request is
 * START, DATA records in order, END; DATA carries raw body bytes as on the
 * wire (chunked framing included). */
#define RG_BODY_RING_BYTES  (64 << 20)
#define RG_BODY_DATA_BYTES  4096 /* payload of one DATA record (a power of two:
				   * lengths are masked for the 6.1 verifier) */
#define RG_CT_BYTES         64   /* Content-Type kept for rowgated */
#define RG_CE_BYTES         16   /* Content-Encoding kept for rowgated */

enum rg_body_event_type {
	RG_BODY_START = 1,
	RG_BODY_DATA = 2,
	RG_BODY_END = 3,
};

struct rg_body_hdr {
	__u32 type;   /* enum rg_body_event_type */
	__u32 len;    /* DATA: payload bytes */
	__u64 cookie; /* connection */
	__u64 seq;    /* request number on the connection */
};

/* A client address: AF_INET (ip[0], network order) or AF_INET6. */
struct rg_peer {
	__u32 family; /* 0: unknown */
	__u32 ip[4];
};

struct rg_body_start {
	struct rg_body_hdr h;
	struct rg_db_key db;
	__u32 protocol;
	__u8 chunked;
	__u8 admitted;  /* 1: charged an estimate; 0: rejected (stats only) */
	__u8 profile;   /* enum rg_profile of the port: the counting rules */
	__u8 pad;
	__u64 content_length;
	char content_type[RG_CT_BYTES];
	char content_encoding[RG_CE_BYTES];
	struct rg_peer peer; /* gRPC copies: the client's, for h2_cdb_peer */
};

struct rg_body_data {
	struct rg_body_hdr h;
	__u8 data[RG_BODY_DATA_BYTES];
};

struct rg_body_end {
	struct rg_body_hdr h;
	__u64 body_bytes;
	__u64 estimated_rows;
	__u64 end_ns;   /* bpf_ktime_get_ns() at the request's end */
	__u8 admitted;
	__u8 complete;  /* every DATA record made it into the ring */
	__u8 aborted;   /* the connection closed inside the body: no more */
	__u8 pad[5];
};

/* Input of the rg_reconcile program (run with BPF_PROG_TEST_RUN): correct a
 * database's bucket and counters by what rowgated counted. */
struct rg_correction {
	__u8 eth_pad[14]; /* test runs want an Ethernet-sized header */
	__u8 admitted;
	__u8 undecodable;
	struct rg_db_key db;
	__u32 protocol;
	/* the kernel left proto_stats to this correction (a gRPC message
	 * judged on its header's database): counted here whole */
	__u32 proto_uncounted;
	__u64 estimated_rows; /* what the kernel charged (0 for other dbs) */
	__u64 exact_rows;     /* what the server will store */
	__u64 lag_ns;
	__u64 cookie;         /* the request: connection and number, as in */
	__u64 seq;            /* its body records (struct rg_body_hdr) */
};

/* refused: a copied request (cookie, seq) -> which came first, its
 * correction or its refund (docs/design.md#refunds).  Whichever side
 * inserts second adjusts: a refund after the correction gives back the
 * exact rows, a correction after the refund changes nothing. */
struct rg_refused_key {
	__u64 cookie;
	__u64 seq;
};

enum rg_refused_state {
	RG_REFUSED_CORRECTED = 1, /* the correction ran: exact_rows is the charge */
	RG_REFUSED_REFUNDED = 2,  /* the estimate was refunded: skip corrections */
};

struct rg_refused {
	__u64 exact_rows;
	__u32 state; /* enum rg_refused_state */
	__u32 pad;
};
#define RG_MAX_REFUSED 65536 /* LRU: entries outlive the request briefly */

/* h2_cdb: socket cookie -> the databases a connection's compressed
 * GreptimeDatabase messages named (--grpc-compressed debt), learned by
 * rowgated from the copies it decodes into the entry the verdict made at
 * the connection's first copy; the verdict refuses the
 * connection's later compressed messages while any of them is in debt.
 * full: they named more than RG_H2_CDB_DBS; the connection's further
 * compressed messages fail closed (docs/grpc.md#compressed).  Not pinned. */
#define RG_MAP_H2_CDB h2_cdb
/* h2_cdb_peer: a client address -> the newest RG_H2_CDB_DBS databases its
 * connections' compressed messages named (n counts them, full is never
 * set): a connection h2_cdb holds nothing of yet (its first compressed
 * messages, before rowgated decoded one) is judged on them.  Not pinned. */
#define RG_MAP_H2_CDB_PEER h2_cdb_peer
/* client addresses h2_cdb_peer follows (an LRU map, preallocated: ~2.5 MB) */
#define RG_H2_CDB_PEERS 4096
#define RG_H2_CDB_DBS 8
struct rg_h2_cdb {
	struct rg_db_key db[RG_H2_CDB_DBS];
	__u32 len[RG_H2_CDB_DBS]; /* of db[i].name */
	__u32 n;
	__u32 full;
};

/* h2_goaway: a queue of HTTP/2 connections the kernel closed with GOAWAY
 * (nothing more of them reaches the server), for rowgated to reset after
 * --grpc-close-grace: the streams the GOAWAY names as possibly processed
 * would otherwise wait for a body that never comes (docs/grpc.md#h2-close).
 * Addresses and ports as the server's socket sees them; sock_diag's
 * SOCK_DESTROY finds the socket by them and checks the cookie. */
struct rg_h2_goaway {
	__u64 cookie;
	__u64 at_ns;	  /* bpf_ktime_get_ns() of the GOAWAY (CLOCK_MONOTONIC) */
	__u32 family;	  /* AF_INET or AF_INET6 */
	__u32 local_ip[4];  /* network order; IPv4 in [0] */
	__u32 remote_ip[4];
	__u16 local_port; /* host order */
	__u16 remote_port;
};
#define RG_H2_GOAWAY_QUEUE 1024

/* global_stats: one entry of host-wide counters (counters.h). */
struct rg_global_stats {
	RG_GLOBAL_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* h2_stats: one entry of host-wide HTTP/2 counters (counters.h). */
struct rg_h2_stats {
	RG_H2_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* The effective quota of docs/design.md#effective-quota: the assignment, capped by the limit,
 * at least 1; the limit itself when nothing is assigned. */
RG_INLINE __u64 rg_effective_quota(const struct rg_limit *l)
{
	__u64 q = l->quota_rows_per_s;

	if (q == 0 || q > l->limit_rows_per_s)
		q = l->limit_rows_per_s;
	return q ? q : 1;
}

#endif /* ROWGATE_ABI_H */
