/* SPDX-License-Identifier: GPL-2.0 */
/* Real payloads with a known row count, built with protobuf-c (from
 * the .proto files in proto/) and compressed with the real libraries: for rg-count
 * --encode (shell end-to-end tests send them with curl), the unit tests'
 * fixtures and the benchmark. */
#ifndef ROWGATE_DECODE_ENCODE_H
#define ROWGATE_DECODE_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "count.h"
#include "decompress.h"

struct rg_encode_opts {
	uint32_t series;       /* prom-rw series / loki streams / OTLP metrics
				* (0 = one per 100 rows) */
	const char *db_label;  /* prom-rw: x_greptime_database on every series */
	const char *metric;    /* metric / measurement / stream name ("rg_test") */
	uint64_t ts_ms;        /* first timestamp (0 = a fixed 2024 instant) */
};

/*
 * An uncompressed body of protocol p with exactly `rows` rows (by count.h's
 * rules): OTLP metrics are gauges, prom-rw samples spread over the series.
 * *out is malloc'ed.  Returns 0 or a negative errno.
 */
int rg_encode_rows(enum rg_payload_protocol p, uint64_t rows,
		   const struct rg_encode_opts *o, uint8_t **out, size_t *len);

/*
 * Compress with the real library: gzip, deflate (zlib-wrapped), zstd, br,
 * snappy (block, or the framing format when framed).  Identity copies.
 * *out is malloc'ed.  Returns 0 or a negative errno.
 */
int rg_compress(enum rg_codec c, bool framed, const uint8_t *in, size_t n,
		uint8_t **out, size_t *out_len);

#endif /* ROWGATE_DECODE_ENCODE_H */
