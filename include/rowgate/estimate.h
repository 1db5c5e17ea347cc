/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Row estimates of bodies the kernel cannot count (compressed, protobuf,
 * JSON), charged at admission until rowgated has counted the body, and the
 * worst case charged when it cannot.
 *
 * estimate = ceil(body bytes / bytes per row).  The bytes per row is the
 * ratio rowgated learned for the database and protocol, but never more than
 * the ceiling of the protocol and coding, which is also the prior of a
 * database with no ratio yet: a new database, a changed compression ratio or
 * a client that first teaches the ratio bulky rows cannot make a body look
 * like fewer rows than the ceiling allows.  The ceilings sit below the
 * densest bodies real clients send, so a normal body is estimated at or
 * above its rows and a concurrent wave is stopped by the bucket after about
 * one second of quota; a more compressible body is still under-estimated
 * until reconciled (DEFLATE reaches ~0.01 bytes/row), and rowgated then
 * charges its exact rows, in debt.
 */
#ifndef ROWGATE_ESTIMATE_H
#define ROWGATE_ESTIMATE_H

#include "types.h"
#include "abi.h"

/* Ceilings (and priors), bytes per row x16 (the ratios map's unit), each
 * at about a third of the densest bodies real clients send: an admitted
 * write is over-charged a few times for the reconciliation lag (~0.2 ms),
 * which costs a client at its limit little; one compressed further than
 * the ceiling is under-charged for that lag. */
#define RG_EST_CODED_BPR_X16   (2 * 16)  /* a Content-Encoding over text:
					  * gzip line protocol is 4.4-7 */
#define RG_EST_SNAPPY_BPR_X16  (8 * 16)  /* remote write and Loki protobuf
					  * (snappy): Prometheus sends ~25 */
#define RG_EST_PB_BPR_X16      (16 * 16) /* OTLP protobuf: 50-100 */
#define RG_EST_JSON_BPR_X16    (16 * 16) /* NDJSON, ES bulk
					  * ({"index":{}}\n{}\n) */
#define RG_EST_TSDB_BPR_X16    (32 * 16) /* {"metric":"m","timestamp":1,...} */
#define RG_EST_ARROW_BPR_X16   (4 * 16)  /* Arrow record batches: a
					  * timestamp and a value take 16 */
#define RG_EST_LINE_BPR_X16    (4 * 16)  /* plain line protocol counted by
					  * rowgated (victoria-metrics rules):
					  * a field takes at least "f=1" and a
					  * separator, so this is an upper bound */

/* Smallest decoded bytes of one stored row (the worst case of a body
 * rowgated could not count: decoded bytes / this). */
#define RG_WORST_BYTES_PER_ROW 2

/* The ceiling of a protocol (enum rg_protocol) with or without a coding. */
RG_INLINE __u64 rg_est_ceiling_x16(__u32 protocol, bool coded)
{
	if (protocol == RG_PROTO_PROM_RW || protocol == RG_PROTO_LOKI)
		return RG_EST_SNAPPY_BPR_X16;
	if (coded)
		return RG_EST_CODED_BPR_X16;
	switch (protocol) {
	case RG_PROTO_LINE:
		return RG_EST_LINE_BPR_X16;
	case RG_PROTO_ES_BULK:
	case RG_PROTO_NDJSON:
		return RG_EST_JSON_BPR_X16;
	case RG_PROTO_OPENTSDB:
		return RG_EST_TSDB_BPR_X16;
	case RG_PROTO_ARROW_FLIGHT:
		return RG_EST_ARROW_BPR_X16;
	default:
		return RG_EST_PB_BPR_X16;
	}
}

/* The bytes per row x16 an estimate uses: learned (0 = none), capped. */
RG_INLINE __u64 rg_est_bytes_per_row_x16(__u64 learned_x16, __u32 protocol, bool coded)
{
	__u64 ceil = rg_est_ceiling_x16(protocol, coded);

	return learned_x16 && learned_x16 < ceil ? learned_x16 : ceil;
}

/* Rows a body of body_bytes is charged before it is counted. */
RG_INLINE __u64 rg_est_rows(__u64 body_bytes, __u64 learned_x16, __u32 protocol, bool coded)
{
	__u64 p = rg_est_bytes_per_row_x16(learned_x16, protocol, coded);
	__u64 q = body_bytes / p, r = body_bytes % p, rows;

	/* ceil(body_bytes * 16 / p) without overflowing body_bytes * 16,
	 * saturated at 2^63 - 1 (a debt no bucket repays) */
	if (q > (~0ULL >> 5))
		return ~0ULL >> 1;
	rows = q * 16 + (r * 16 + p - 1) / p;
	return rows > (~0ULL >> 1) ? ~0ULL >> 1 : rows;
}

#endif /* ROWGATE_ESTIMATE_H */
