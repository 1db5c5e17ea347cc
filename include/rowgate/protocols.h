/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The protocols a route can name: one table, from which the enum of the ABI,
 * rg_protocol_in_kernel() and every protocol-name table are expanded.  The
 * ids are wire ABI (routes, proto_stats keys and body records live in pinned
 * maps that survive restarts): never renumber, only append.
 */
#ifndef ROWGATE_PROTOCOLS_H
#define ROWGATE_PROTOCOLS_H

#include "types.h"

/*
 * X(id, ID, name, in_kernel): the wire id, the enum suffix (RG_PROTO_<ID>),
 * the name that --route, the stats JSON and /metrics use, and whether the
 * kernel counts the rows itself (1) or charges an estimate and rowgated
 * reconciles them from a copy of the body (0).  What one row is, per
 * protocol: user/decode/count.h.
 */
#define RG_PROTOCOLS(X)                                    \
	X(1, LINE, "influx", 1)      /* InfluxDB line protocol */ \
	X(2, PROM_RW, "prom-rw", 0)  /* Prometheus remote write v1 */ \
	X(3, OTLP_METRICS, "otlp-metrics", 0) \
	X(4, OTLP_LOGS, "otlp-logs", 0) \
	X(5, OTLP_TRACES, "otlp-traces", 0) \
	X(6, LOKI, "loki", 0)        /* protobuf or JSON by Content-Type */ \
	X(7, ES_BULK, "es-bulk", 0)  /* Elasticsearch _bulk */ \
	X(8, NDJSON, "ndjson", 0)    /* /v1/ingest */ \
	X(9, OPENTSDB, "opentsdb", 0) \
	/* GreptimeDatabase gRPC messages, never an HTTP route: the h2 \
	 * verdict counts plain ones, rowgated compressed ones (docs/grpc.md) */ \
	X(10, GREPTIME_GRPC, "greptime-grpc", 0) \
	/* Arrow Flight DoPut FlightData (GreptimeDB bulk inserts), never an \
	 * HTTP route: rowgated counts each RecordBatch's rows */ \
	X(11, ARROW_FLIGHT, "arrow-flight", 0)

enum rg_protocol {
	RG_PROTO_NONE = 0, /* no route: the request passes untouched */
#define RG_X_(id, ID, name, k) RG_PROTO_##ID = id,
	RG_PROTOCOLS(RG_X_)
#undef RG_X_
	RG_PROTO_MAX,
};

/* Whether a protocol is carried by gRPC only, never by an HTTP route. */
RG_INLINE bool rg_protocol_grpc_only(__u32 p)
{
	return p == RG_PROTO_GREPTIME_GRPC || p == RG_PROTO_ARROW_FLIGHT;
}

/* Whether a protocol is one of OTLP's signals. */
RG_INLINE bool rg_protocol_otlp(__u32 p)
{
	return p >= RG_PROTO_OTLP_METRICS && p <= RG_PROTO_OTLP_TRACES;
}

/* Whether the kernel counts a protocol's rows itself. */
RG_INLINE bool rg_protocol_in_kernel(__u32 p)
{
	switch (p) {
#define RG_X_(id, ID, name, k) \
	case id:               \
		return k;
		RG_PROTOCOLS(RG_X_)
#undef RG_X_
	}
	return false;
}

#ifndef __bpf__
#include <stddef.h>

/* The protocol's name, or NULL for NONE and unknown ids. */
static inline const char *rg_protocol_name(__u32 p)
{
	switch (p) {
#define RG_X_(id, ID, name, k) \
	case id:               \
		return name;
		RG_PROTOCOLS(RG_X_)
#undef RG_X_
	}
	return NULL;
}
#endif

#endif /* ROWGATE_PROTOCOLS_H */
