// SPDX-License-Identifier: MIT
/* The protobuf-c reference counter (see decode_ref.h). */
#include <string.h>
#include "proto/prometheus_remote.pb-c.h"
#include "proto/otlp.pb-c.h"
#include "proto/loki_push.pb-c.h"
#include "internal.h"
#include "decode_ref.h"

int ref_count_prom(const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		   struct rg_row_counts *out)
{
	Prometheus__WriteRequest *req = prometheus__write_request__unpack(NULL, n, p);
	uint64_t hists = 0;
	size_t i, j;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -1;
	for (i = 0; i < req->n_timeseries; i++) {
		Prometheus__TimeSeries *t = req->timeseries[i];
		const char *schema = NULL;

		for (j = 0; j < t->n_labels; j++) {
			const char *name = t->labels[j]->name, *value = t->labels[j]->value;

			if (!strcmp(name, "__schema__"))
				schema = value;
			else if (!schema && (!strcmp(name, "x_greptime_database") ||
					     !strcmp(name, "__database__")))
				schema = value;
		}
		hists += t->n_histograms;
		rg_counts_add_db(out, schema, schema ? strlen(schema) : 0, t->n_samples);
	}
	out->prom_native_histograms = (uint32_t)hists;
	if (hists && lim->prom_native_histograms_refused) {
		memset(out, 0, sizeof(*out));
		out->prom_native_histograms = (uint32_t)hists;
		out->flags = RG_COUNT_F_SERVER_REFUSES;
	}
	prometheus__write_request__free_unpacked(req, NULL);
	return 0;
}

static uint64_t ref_metric_rows(const Rowgate__Otlp__Metric *m,
				const struct rg_count_limits *lim)
{
	uint64_t rows = 0;
	size_t i;

	switch (m->data_case) {
	case ROWGATE__OTLP__METRIC__DATA_GAUGE:
		return m->gauge->n_data_points;
	case ROWGATE__OTLP__METRIC__DATA_SUM:
		return m->sum->n_data_points;
	case ROWGATE__OTLP__METRIC__DATA_HISTOGRAM:
		for (i = 0; i < m->histogram->n_data_points; i++) {
			const Rowgate__Otlp__HistogramDataPoint *dp = m->histogram->data_points[i];

			rows += dp->n_bucket_counts + (dp->has_sum ? 1 : 0) + 1;
		}
		return rows;
	case ROWGATE__OTLP__METRIC__DATA_SUMMARY:
		for (i = 0; i < m->summary->n_data_points; i++)
			rows += lim->otlp_summary_legacy ? 1 :
				m->summary->data_points[i]->n_quantile_values + 2;
		return rows;
	default: /* exponential histograms, no data */
		return 0;
	}
}

int ref_count_otlp_metrics(const uint8_t *p, size_t n,
			   const struct rg_count_limits *lim,
			   struct rg_row_counts *out)
{
	Rowgate__Otlp__ExportMetricsServiceRequest *req =
		rowgate__otlp__export_metrics_service_request__unpack(NULL, n, p);
	size_t i, j, k;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -1;
	for (i = 0; i < req->n_resource_metrics; i++)
		for (j = 0; j < req->resource_metrics[i]->n_scope_metrics; j++) {
			Rowgate__Otlp__ScopeMetrics *sm = req->resource_metrics[i]->scope_metrics[j];

			for (k = 0; k < sm->n_metrics; k++)
				rg_counts_add_db(out, NULL, 0, ref_metric_rows(sm->metrics[k], lim));
		}
	rowgate__otlp__export_metrics_service_request__free_unpacked(req, NULL);
	return 0;
}

int ref_count_otlp_logs(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	Rowgate__Otlp__ExportLogsServiceRequest *req =
		rowgate__otlp__export_logs_service_request__unpack(NULL, n, p);
	size_t i, j;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -1;
	for (i = 0; i < req->n_resource_logs; i++)
		for (j = 0; j < req->resource_logs[i]->n_scope_logs; j++)
			rg_counts_add_db(out, NULL, 0,
					 req->resource_logs[i]->scope_logs[j]->n_log_records);
	rowgate__otlp__export_logs_service_request__free_unpacked(req, NULL);
	return 0;
}

int ref_count_otlp_traces(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	Rowgate__Otlp__ExportTraceServiceRequest *req =
		rowgate__otlp__export_trace_service_request__unpack(NULL, n, p);
	size_t i, j;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -1;
	for (i = 0; i < req->n_resource_spans; i++)
		for (j = 0; j < req->resource_spans[i]->n_scope_spans; j++)
			rg_counts_add_db(out, NULL, 0,
					 req->resource_spans[i]->scope_spans[j]->n_spans);
	rowgate__otlp__export_trace_service_request__free_unpacked(req, NULL);
	return 0;
}

int ref_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	Logproto__PushRequest *req = logproto__push_request__unpack(NULL, n, p);
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -1;
	for (i = 0; i < req->n_streams; i++)
		rg_counts_add_db(out, NULL, 0, req->streams[i]->n_entries);
	logproto__push_request__free_unpacked(req, NULL);
	return 0;
}
