/* SPDX-License-Identifier: GPL-2.0 */
/* Internal interfaces between the counting library's files (not for
 * rowgated): the per-protocol counters over a decoded body.  Each returns
 * RG_COUNT_OK or an rg_count_err, adds to out->rows / out->default_rows /
 * out->dbs, and on error writes the reason into out->err_msg. */
#ifndef ROWGATE_DECODE_INTERNAL_H
#define ROWGATE_DECODE_INTERNAL_H

#include "count.h"

/* A little-endian 32-bit field (snappy framing, flatbuffers). */
static inline uint32_t rg_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Attribute rows to a database named inside the payload (n bytes, not
 * NUL-terminated); n == 0 means the request's own database. */
void rg_counts_add_db(struct rg_row_counts *out, const char *name, size_t n,
		      uint64_t rows);
/* Record an error reason (printf-style) in out->err_msg. */
void rg_counts_msg(struct rg_row_counts *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Protobuf wire-format walkers (pbwalk.c). */
int rg_pb_count_prom(const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		     struct rg_row_counts *out);
int rg_pb_count_otlp_metrics(const uint8_t *p, size_t n,
			     const struct rg_count_limits *lim,
			     struct rg_row_counts *out);
int rg_pb_count_otlp_logs(const uint8_t *p, size_t n, struct rg_row_counts *out);
int rg_pb_count_otlp_traces(const uint8_t *p, size_t n, struct rg_row_counts *out);
int rg_pb_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out);
/* A GreptimeDatabase message (grpccount.c): its rows in dbs[] under the
 * database it names. */
int rg_pb_count_greptime(const uint8_t *p, size_t n, struct rg_row_counts *out);
/* An Arrow Flight DoPut FlightData (pbwalk.c): its RecordBatch's rows. */
int rg_pb_count_flight(const uint8_t *p, size_t n, struct rg_row_counts *out);

/* JSON counters (jsoncount.c). */
int rg_json_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out);
int rg_json_count_opentsdb(const uint8_t *p, size_t n, struct rg_row_counts *out);
int rg_json_count_es_bulk(const uint8_t *p, size_t n, struct rg_row_counts *out);
int rg_json_count_ingest(const uint8_t *p, size_t n, const char *content_type,
			 struct rg_row_counts *out);

#endif /* ROWGATE_DECODE_INTERNAL_H */
