/* SPDX-License-Identifier: GPL-2.0 */
/* Reference row counts computed from protobuf-c's unpacked messages, by the
 * same GreptimeDB rules as user/decode/pbwalk.c: what the wire walker is
 * proven equal to.  Each returns 0, or -1 when protobuf-c refuses the body. */
#ifndef ROWGATE_TEST_DECODE_REF_H
#define ROWGATE_TEST_DECODE_REF_H

#include <stddef.h>
#include <stdint.h>
#include "count.h"

int ref_count_prom(const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		   struct rg_row_counts *out);
int ref_count_otlp_metrics(const uint8_t *p, size_t n,
			   const struct rg_count_limits *lim,
			   struct rg_row_counts *out);
int ref_count_otlp_logs(const uint8_t *p, size_t n, struct rg_row_counts *out);
int ref_count_otlp_traces(const uint8_t *p, size_t n, struct rg_row_counts *out);
int ref_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out);

#endif
