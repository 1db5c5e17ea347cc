// SPDX-License-Identifier: MIT
/* What every counter of the library shares: protocol and error names, the
 * counting limits of each server profile, and the result a count builds
 * (rows per database, the reason of an error).  The counters themselves:
 * payload.c (decoding and dispatch), pbwalk.c, jsoncount.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "rowgate/abi.h"
#include "rowgate/rows.h"
#include "internal.h"

static const char *const proto_names[RG_PAYLOAD__COUNT] = {
#define RG_X_(id, ID, name, k) [RG_PAYLOAD_##ID] = name,
	RG_PROTOCOLS(RG_X_)
#undef RG_X_
	[RG_PAYLOAD_LOKI_PROTO] = "loki-proto",
	[RG_PAYLOAD_LOKI_JSON] = "loki-json",
};

static const struct {
	const char *alias;
	enum rg_payload_protocol p;
} proto_aliases[] = {
	{ "line", RG_PAYLOAD_LINE },       { "influxdb", RG_PAYLOAD_LINE },
	{ "prometheus", RG_PAYLOAD_PROM_RW }, { "prom", RG_PAYLOAD_PROM_RW },
	{ "elasticsearch", RG_PAYLOAD_ES_BULK }, { "ingest", RG_PAYLOAD_NDJSON },
	{ "otlp-metric", RG_PAYLOAD_OTLP_METRICS }, { "otlp-log", RG_PAYLOAD_OTLP_LOGS },
	{ "otlp-trace", RG_PAYLOAD_OTLP_TRACES },
};

static const char *const err_text[RG_COUNT_E__COUNT] = {
	[RG_COUNT_OK] = "success",
	[RG_COUNT_E_INVAL] = "invalid arguments",
	[RG_COUNT_E_ENCODING] = "unsupported Content-Encoding",
	[RG_COUNT_E_CORRUPT] = "compressed body is corrupt",
	[RG_COUNT_E_TRUNCATED] = "compressed body is truncated",
	[RG_COUNT_E_TOO_LARGE] = "decoded body is larger than the cap",
	[RG_COUNT_E_MALFORMED] = "payload is malformed for its protocol",
	[RG_COUNT_E_UNSUPPORTED] = "payload format is not supported for counting",
	[RG_COUNT_E_NOMEM] = "out of memory",
};

enum rg_payload_protocol rg_payload_protocol_parse(const char *name)
{
	size_t i;

	if (!name)
		return RG_PAYLOAD_INVALID;
	for (i = 0; i < RG_PAYLOAD__COUNT; i++)
		if (!strcasecmp(name, proto_names[i]))
			return (enum rg_payload_protocol)i;
	for (i = 0; i < sizeof(proto_aliases) / sizeof(proto_aliases[0]); i++)
		if (!strcasecmp(name, proto_aliases[i].alias))
			return proto_aliases[i].p;
	return RG_PAYLOAD_INVALID;
}

const char *rg_payload_protocol_name(enum rg_payload_protocol p)
{
	return p >= 0 && p < RG_PAYLOAD__COUNT ? proto_names[p] : "?";
}

const char *rg_count_strerror(enum rg_count_err e)
{
	return e < RG_COUNT_E__COUNT ? err_text[e] : "unknown error";
}

void rg_count_limits_default(struct rg_count_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_decoded_bytes = RG_COUNT_DEFAULT_MAX_DECODED_BYTES;
	lim->prom_native_histograms_refused = true;
}

void rg_count_limits_for_profile_id(struct rg_count_limits *lim, unsigned int profile)
{
	rg_count_limits_default(lim);
	lim->lp_rows_mode = rg_profile_rows_mode(profile);
	lim->lp_comment_rule = rg_profile_comment_rule(profile);
	if (profile == RG_PROFILE_INFLUXDB) {
		/* services/httpd serveWrite: Header.Get("Content-Encoding") ==
		 * "gzip"; servePromWrite: snappy.Decode, no header read */
		lim->lp_gzip_only = true;
		lim->prom_snappy_only = true;
	}
	if (profile == RG_PROFILE_VICTORIAMETRICS) {
		/* lib/storage Storage.add; prompb has no histograms in 1.79 */
		lim->prom_drop_nan = true;
		lim->prom_native_histograms_refused = false;
		/* lib/protoparser/promremotewrite: snappy.Decode, no header read */
		lim->prom_snappy_only = true;
		/* app/vminsert/influx: Header.Get("Content-Encoding") == "gzip" */
		lim->lp_gzip_only = true;
		/* app/vminsert/influx insertRows, promremotewrite insertRows */
		lim->db_label_vm = true;
	}
}

int rg_count_limits_for_profile(struct rg_count_limits *lim, const char *profile)
{
	unsigned int i;

	for (i = 0; profile && i < RG_PROFILE_MAX; i++) {
		if (!strcasecmp(profile, rg_profile_name(i))) {
			rg_count_limits_for_profile_id(lim, i);
			return 0;
		}
	}
	rg_count_limits_default(lim);
	return -EINVAL;
}

void rg_counts_msg(struct rg_row_counts *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->err_msg, sizeof(out->err_msg), fmt, ap);
	va_end(ap);
}

void rg_counts_add_db(struct rg_row_counts *out, const char *name, size_t n,
		      uint64_t rows)
{
	uint32_t i;

	out->rows += rows;
	if (!n) {
		out->default_rows += rows;
		return;
	}
	out->flags |= RG_COUNT_F_PER_SERIES_DB;
	/* a NUL byte can't be in a key: it would cut the name to another one */
	if (n >= RG_DB_NAME_MAX || memchr(name, 0, n)) {
		out->overflow_rows += rows;
		return;
	}
	for (i = 0; i < out->n_dbs; i++) {
		if (!strncmp(out->dbs[i].name, name, n) && out->dbs[i].name[n] == '\0') {
			out->dbs[i].rows += rows;
			return;
		}
	}
	if (out->n_dbs == RG_COUNT_MAX_DBS) {
		out->overflow_rows += rows;
		return;
	}
	memcpy(out->dbs[i].name, name, n);
	out->dbs[i].name[n] = '\0';
	out->dbs[i].rows = rows;
	out->n_dbs++;
}

uint64_t rg_row_counts_db(const struct rg_row_counts *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->n_dbs; i++)
		if (!strcmp(c->dbs[i].name, name))
			return c->dbs[i].rows;
	return 0;
}
