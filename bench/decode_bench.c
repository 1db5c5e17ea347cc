// SPDX-License-Identifier: MIT
/* Reconciliation throughput of rg_count_payload on one core: compressed MB/s,
 * decoded MB/s and rows/s for the bodies rowgated reconciles most: Prometheus
 * remote write (snappy), OTLP metrics (gzip), line protocol (gzip).
 *   build/bench/decode_bench [ROWS_PER_BODY] [SECONDS_PER_CASE]          */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "count.h"
#include "encode.h"

/* Rows per body: about what a Prometheus shard or OTel batch sends. */
#define BENCH_DEFAULT_ROWS 10000
#define BENCH_DEFAULT_SECONDS 2.0

struct bench_case {
	const char *label;
	enum rg_payload_protocol p;
	const char *encoding;
	enum rg_codec c;
	uint32_t series;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct bench_case cases[] = {
		{ "prom-rw snappy", RG_PAYLOAD_PROM_RW, "snappy", RG_CODEC_SNAPPY, 0 },
		{ "prom-rw snappy, 1 sample/series", RG_PAYLOAD_PROM_RW, "snappy", RG_CODEC_SNAPPY, 1 },
		{ "otlp-metrics gzip", RG_PAYLOAD_OTLP_METRICS, "gzip", RG_CODEC_GZIP, 0 },
		{ "influx line gzip", RG_PAYLOAD_LINE, "gzip", RG_CODEC_GZIP, 0 },
		{ "influx line identity", RG_PAYLOAD_LINE, NULL, RG_CODEC_IDENTITY, 0 },
	};
	uint64_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : BENCH_DEFAULT_ROWS;
	double secs = argc > 2 ? atof(argv[2]) : BENCH_DEFAULT_SECONDS;
	size_t i;

	printf("%-34s %9s %9s %10s %11s %12s\n", "case", "body_KB", "plain_KB",
	       "MB/s_in", "MB/s_plain", "rows/s");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bench_case *bc = &cases[i];
		struct rg_encode_opts eo = { 0 };
		struct rg_row_counts c;
		uint8_t *body, *z;
		size_t len, zlen;
		uint64_t iters = 0;
		double t0, el;

		/* 1 sample per series: the worst case (labels dominate) */
		eo.series = bc->series ? (uint32_t)rows : 0;
		if (rg_encode_rows(bc->p, rows, &eo, &body, &len) ||
		    rg_compress(bc->c, false, body, len, &z, &zlen)) {
			fprintf(stderr, "decode_bench: cannot build %s\n", bc->label);
			return 1;
		}
		t0 = now_s();
		do {
			if (rg_count_payload(bc->p, bc->encoding, NULL, z, zlen, NULL, &c) ||
			    c.rows != rows) {
				fprintf(stderr, "decode_bench: %s: wrong count %llu (%s)\n",
					bc->label, (unsigned long long)c.rows, c.err_msg);
				return 1;
			}
			iters++;
			el = now_s() - t0;
		} while (el < secs);
		printf("%-34s %9.1f %9.1f %10.1f %11.1f %12.3g\n", bc->label, zlen / 1024.0,
		       len / 1024.0, (double)zlen * iters / el / 1e6,
		       (double)len * iters / el / 1e6, (double)rows * iters / el);
		free(body);
		free(z);
	}
	return 0;
}
