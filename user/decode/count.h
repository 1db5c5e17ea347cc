/* SPDX-License-Identifier: GPL-2.0 */
/* Exact row counting of ingest payloads the kernel cannot count: compressed
 * bodies, protobuf and JSON.  rowgated hands the body of an admitted request
 * to rg_count_payload() and corrects the database's bucket by the difference
 * between these counts and the kernel's estimate.  Pure library: no sockets,
 * no BPF, no global state; thread-safe.
 *
 * What one row is follows GreptimeDB (shared/reference/GREPTIMEDB.md):
 *   line       one line (rowgate/rows.h rg_lp_count, the kernel's counter);
 *              victoria-metrics: one sample per stored field
 *              (rg_lp_vm_samples), and only an exact "gzip" coding undone;
 *              a line's last non-empty `db` tag moves its samples there
 *   prom-rw    one Sample (victoria-metrics: not a NaN one, but the
 *              staleness marker).  A series' labels `__schema__` (wins) or else the
 *              first of `x_greptime_database` / `__database__` move its rows
 *              to that database (rows are reported PER DATABASE;
 *              victoria-metrics: the last non-empty `db` label).  Native
 *              histograms (TimeSeries field 4) store no row: GreptimeDB 1.x
 *              refuses such a v1 request whole; with
 *              rg_count_limits.prom_native_histograms_refused (default on)
 *              the request counts 0 rows and RG_COUNT_F_SERVER_REFUSES is
 *              set, otherwise only their samples are counted.
 *              Remote write 2.0 (Content-Type proto=io.prometheus.write.v2.Request)
 *              is reported RG_COUNT_E_UNSUPPORTED.
 *   otlp-*     gauge/sum: one per data point; histogram: one per bucket
 *              count, plus one `_sum` when sum is present, plus `_count`;
 *              summary: one per quantile plus `_count` and `_sum` (one per
 *              data point with rg_count_limits.otlp_summary_legacy);
 *              exponential histograms: none; logs: one per log record;
 *              traces: one per span.
 *   loki       one entry (protobuf PushRequest, or JSON streams[].values[]).
 *   es-bulk    one document per `create` or `index` action; any other action
 *              (delete, update, ...) makes GreptimeDB refuse the whole
 *              request: 0 rows, RG_COUNT_F_SERVER_REFUSES.  A trailing
 *              action without its document is ignored, as GreptimeDB does.
 *   ndjson     /v1/ingest: one row per JSON value, top-level arrays
 *              flattened (application/json, application/x-ndjson, or no
 *              content type); one per non-empty line for text/plain.
 *   opentsdb   one data point: a JSON object, or one per array element.
 */
#ifndef ROWGATE_DECODE_COUNT_H
#define ROWGATE_DECODE_COUNT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "rowgate/abi.h"

enum rg_payload_protocol {
	RG_PAYLOAD_INVALID = -1,
	/* one per route protocol (rowgate/protocols.h), named as there */
#define RG_X_(id, ID, name, k) RG_PAYLOAD_##ID,
	RG_PROTOCOLS(RG_X_)
#undef RG_X_
	/* loki with the body format fixed rather than read from Content-Type */
	RG_PAYLOAD_LOKI_PROTO,     /* "loki-proto" */
	RG_PAYLOAD_LOKI_JSON,      /* "loki-json" */
	RG_PAYLOAD__COUNT
};

/* The payload of a route's protocol (rowgate/protocols.h); INVALID for
 * RG_PROTO_NONE and unknown ids. */
static inline enum rg_payload_protocol rg_payload_of(__u32 protocol)
{
	switch (protocol) {
#define RG_X_(id, ID, name, k) \
	case id:               \
		return RG_PAYLOAD_##ID;
		RG_PROTOCOLS(RG_X_)
#undef RG_X_
	}
	return RG_PAYLOAD_INVALID;
}

/* Error classes; every one has a sentence in rg_count_strerror(). */
enum rg_count_err {
	RG_COUNT_OK = 0,
	RG_COUNT_E_INVAL,        /* bad arguments (NULL body with len > 0, ...) */
	RG_COUNT_E_ENCODING,     /* Content-Encoding not supported */
	RG_COUNT_E_CORRUPT,      /* compressed data is invalid */
	RG_COUNT_E_TRUNCATED,    /* compressed data ends before its stream does */
	RG_COUNT_E_TOO_LARGE,    /* decompressed size over rg_count_limits.max_decoded_bytes */
	RG_COUNT_E_MALFORMED,    /* protobuf / JSON invalid for the protocol */
	RG_COUNT_E_UNSUPPORTED,  /* valid payload this library cannot count */
	RG_COUNT_E_NOMEM,        /* allocation failed */
	RG_COUNT_E__COUNT
};

/* GreptimeDB's HTTP body limit: the default decompressed-size cap. */
#define RG_COUNT_DEFAULT_MAX_DECODED_BYTES (64ULL << 20)
/* Distinct databases reported per request; more go to overflow_rows. */
#define RG_COUNT_MAX_DBS 16

struct rg_count_limits {
	uint64_t max_decoded_bytes;          /* 0 = RG_COUNT_DEFAULT_MAX_DECODED_BYTES */
	bool prom_native_histograms_refused; /* see prom-rw above */
	bool otlp_summary_legacy;            /* GreptimeDB legacy OTLP mode */
	/* the guarded server's own reading (rg_count_limits_for_profile) */
	bool prom_drop_nan;      /* prom-rw: NaN samples other than the staleness
				  * marker are not stored (victoria-metrics) */
	uint8_t lp_rows_mode;    /* enum rg_rows_mode: lines or VM samples */
	uint8_t lp_comment_rule; /* enum rg_lp_comment_rule */
	bool prom_snappy_only;   /* prom-rw: snappy block whatever the
				  * Content-Encoding (victoria-metrics) */
	bool lp_gzip_only;       /* line protocol: only "Content-Encoding: gzip",
				  * exactly, is decoded; any other coding is
				  * read as raw line protocol (victoria-metrics) */
	bool db_label_vm;        /* a series' `db` label, a line's `db` tag
				  * names its database (the last non-empty one),
				  * not GreptimeDB's labels (victoria-metrics) */
	bool body_cut;           /* the body stops early (its connection closed
				  * inside it): line protocol whose coding is
				  * cut short is counted as far as it decodes,
				  * its last line too, as a server inserting
				  * while it decodes reads it; other
				  * protocols fail as before */
};

/* rg_count_limits with the defaults (what rg_count_payload uses for NULL):
 * GreptimeDB's rules. */
void rg_count_limits_default(struct rg_count_limits *lim);

/* The defaults, then the rules of a server profile ("greptimedb",
 * "influxdb", "victoriametrics", "prometheus", "loki", case-insensitive);
 * -EINVAL for an unknown name (lim is left with the defaults). */
int rg_count_limits_for_profile(struct rg_count_limits *lim, const char *profile);

/* The same by enum rg_profile (rowgated: the profile of the port a body came
 * through). */
void rg_count_limits_for_profile_id(struct rg_count_limits *lim, unsigned int profile);

/* Rows attributed to one database named inside the payload. */
struct rg_db_rows {
	char name[RG_DB_NAME_MAX];  /* the label value, raw (not split at '-') */
	uint64_t rows;
};

#define RG_COUNT_F_SERVER_REFUSES (1U << 0) /* the server will store nothing */
#define RG_COUNT_F_PER_SERIES_DB  (1U << 1) /* some rows named their own db */
#define RG_COUNT_F_CUT            (1U << 2) /* body_cut: the coding ended early */

struct rg_row_counts {
	uint64_t rows;            /* all rows the server will store */
	uint64_t default_rows;    /* of which in the request's own database */
	uint32_t n_dbs;           /* entries used in dbs[] */
	struct rg_db_rows dbs[RG_COUNT_MAX_DBS]; /* per-series databases */
	uint64_t overflow_rows;   /* rows of databases that did not fit dbs[]
				   * or whose name is >= RG_DB_NAME_MAX bytes
				   * or holds a NUL byte */
	uint64_t decoded_bytes;   /* body size after Content-Encoding */
	uint32_t flags;           /* RG_COUNT_F_* */
	uint32_t prom_native_histograms; /* native histograms seen (prom-rw) */
	enum rg_count_err err;    /* RG_COUNT_OK on success */
	char err_msg[128];        /* the reason, for logs; "" on success */
};

/*
 * Count the rows of one request body.  content_encoding is the
 * Content-Encoding header value (NULL, "", "identity", "gzip", "x-gzip",
 * "deflate", "zstd", "br", "snappy"; case-insensitive; a comma list of at
 * most 4 codings is undone right to left), content_type the Content-Type
 * (used by loki, ndjson and prom-rw; may be NULL).  lim may be NULL.
 * Prom remote write and Loki protobuf bodies are snappy-compressed even
 * without a Content-Encoding header: with content_encoding NULL or ""
 * they are decoded as snappy (block format, or framed if the body starts
 * with the framing format's stream identifier).
 *
 * Returns 0 and fills *out, or a negative errno (-EINVAL, -EOPNOTSUPP,
 * -EBADMSG, -EFBIG, -ENOMEM) with out->err / out->err_msg saying why and
 * the counts zeroed.  Memory is bounded by max_decoded_bytes plus, for JSON,
 * jansson's tree of the decoded body.
 */
int rg_count_payload(enum rg_payload_protocol p, const char *content_encoding,
		     const char *content_type, const void *body, size_t len,
		     const struct rg_count_limits *lim, struct rg_row_counts *out);

/* Rows counted in the per-series database name (dbs[]), 0 if none. */
uint64_t rg_row_counts_db(const struct rg_row_counts *c, const char *name);

/* Route-config protocol name ("influx", "prom-rw", ...) or RG_PAYLOAD_INVALID. */
enum rg_payload_protocol rg_payload_protocol_parse(const char *name);
/* Canonical name of p ("?" if out of range). */
const char *rg_payload_protocol_name(enum rg_payload_protocol p);
/* One sentence for an error class. */
const char *rg_count_strerror(enum rg_count_err e);

#endif /* ROWGATE_DECODE_COUNT_H */
