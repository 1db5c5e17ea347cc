// SPDX-License-Identifier: MIT
/* Exact row counting of compressed and binary payloads (user/decode/):
 * every protocol through every Content-Encoding, randomized protobuf-c
 * round trips against the protobuf-c reference (decode_ref.c) and the known
 * row count, GreptimeDB's OTLP histogram/summary and per-series database
 * rules, malformed, truncated and decompression-bomb inputs, JSON rules, and
 * the fixture files gen_fixtures wrote with the real encoders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>
#include <brotli/encode.h>
#include "proto/prometheus_remote.pb-c.h"
#include "proto/otlp.pb-c.h"
#include "proto/loki_push.pb-c.h"
#include "rowgate/abi.h"
#include "rowgate/rows.h"
#include "count.h"
#include "decompress.h"
#include "encode.h"
#include "internal.h"
#include "decode_ref.h"
#include "check.h"

#ifndef RG_FIXTURE_DIR
#define RG_FIXTURE_DIR "build/fixtures"
#endif
/* A bomb must be refused well within this (ASan build included). */
#define BOMB_MAX_SECONDS 5.0

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)random() % n : 0;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);

	*len = protobuf_c_message_pack(m, buf);
	return buf;
}

/* Count body (already encoded with `enc`) and return the rows, or -errno. */
static long long count(enum rg_payload_protocol p, const char *enc, const char *ct,
		       const void *body, size_t len, struct rg_row_counts *c)
{
	struct rg_row_counts tmp;
	int err = rg_count_payload(p, enc, ct, body, len, NULL, c ? c : &tmp);

	return err ? err : (long long)(c ? c : &tmp)->rows;
}

static void same_counts(const struct rg_row_counts *a, const struct rg_row_counts *b,
			const char *what)
{
	uint32_t i, j;

	CHECK_EQ_U64(a->rows, b->rows, what);
	CHECK_EQ_U64(a->default_rows, b->default_rows, what);
	CHECK_EQ_U64(a->overflow_rows, b->overflow_rows, what);
	CHECK_EQ_U64(a->n_dbs, b->n_dbs, what);
	CHECK_EQ_U64(a->flags & RG_COUNT_F_SERVER_REFUSES,
		     b->flags & RG_COUNT_F_SERVER_REFUSES, what);
	for (i = 0; i < a->n_dbs; i++) {
		for (j = 0; j < b->n_dbs; j++)
			if (!strcmp(a->dbs[i].name, b->dbs[j].name))
				break;
		CHECK(j < b->n_dbs, "%s: db %s missing", what, a->dbs[i].name);
		if (j < b->n_dbs)
			CHECK_EQ_U64(a->dbs[i].rows, b->dbs[j].rows, what);
	}
}

/* ------------------------------------------------------------ names */

static void test_protocol_names(void)
{
	static const struct {
		const char *name;
		enum rg_payload_protocol p;
	} t[] = {
		{ "influx", RG_PAYLOAD_LINE },         { "line", RG_PAYLOAD_LINE },
		{ "prom-rw", RG_PAYLOAD_PROM_RW },     { "otlp-metrics", RG_PAYLOAD_OTLP_METRICS },
		{ "otlp-logs", RG_PAYLOAD_OTLP_LOGS }, { "OTLP-Traces", RG_PAYLOAD_OTLP_TRACES },
		{ "loki", RG_PAYLOAD_LOKI },           { "loki-proto", RG_PAYLOAD_LOKI_PROTO },
		{ "loki-json", RG_PAYLOAD_LOKI_JSON }, { "es-bulk", RG_PAYLOAD_ES_BULK },
		{ "ndjson", RG_PAYLOAD_NDJSON },       { "opentsdb", RG_PAYLOAD_OPENTSDB },
		{ "arrow-flight", RG_PAYLOAD_ARROW_FLIGHT },
		{ "nope", RG_PAYLOAD_INVALID },        { "", RG_PAYLOAD_INVALID },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		CHECK(rg_payload_protocol_parse(t[i].name) == t[i].p, "parse %s", t[i].name);
	CHECK(rg_payload_protocol_parse(NULL) == RG_PAYLOAD_INVALID, "NULL name");
	for (i = 0; i < RG_PAYLOAD__COUNT; i++)
		CHECK(rg_payload_protocol_parse(rg_payload_protocol_name(i)) == (int)i,
		      "name round trip %zu", i);
	for (i = 0; i < RG_COUNT_E__COUNT; i++)
		CHECK(rg_count_strerror(i)[0], "strerror %zu", i);
}

/* ------------------------------------------------- every codec, every protocol */

struct codec_case {
	const char *header;   /* Content-Encoding */
	enum rg_codec c;
	bool framed;
};

static const struct codec_case codecs[] = {
	{ NULL, RG_CODEC_IDENTITY, false },   { "identity", RG_CODEC_IDENTITY, false },
	{ "gzip", RG_CODEC_GZIP, false },     { "x-gzip", RG_CODEC_GZIP, false },
	{ "deflate", RG_CODEC_DEFLATE, false }, { "zstd", RG_CODEC_ZSTD, false },
	{ "br", RG_CODEC_BR, false },         { "snappy", RG_CODEC_SNAPPY, false },
	{ "SNAPPY", RG_CODEC_SNAPPY, true },
};

static const enum rg_payload_protocol all_protocols[] = {
	RG_PAYLOAD_LINE, RG_PAYLOAD_PROM_RW, RG_PAYLOAD_OTLP_METRICS,
	RG_PAYLOAD_OTLP_LOGS, RG_PAYLOAD_OTLP_TRACES, RG_PAYLOAD_LOKI_PROTO,
	RG_PAYLOAD_LOKI_JSON, RG_PAYLOAD_ES_BULK, RG_PAYLOAD_NDJSON, RG_PAYLOAD_OPENTSDB,
};

static bool self_snappy(enum rg_payload_protocol p)
{
	return p == RG_PAYLOAD_PROM_RW || p == RG_PAYLOAD_LOKI_PROTO;
}

/* Encode rows of p, apply c (plus the protocol's own snappy), count. */
static long long round_trip(enum rg_payload_protocol p, uint64_t rows,
			    const struct codec_case *cc, struct rg_row_counts *c)
{
	uint8_t *body, *z, *s;
	size_t len, zlen, slen;
	long long got;

	if (rg_encode_rows(p, rows, NULL, &body, &len))
		return -1000;
	if (self_snappy(p) && cc->c != RG_CODEC_SNAPPY && cc->c != RG_CODEC_ZSTD) {
		if (rg_compress(RG_CODEC_SNAPPY, false, body, len, &s, &slen))
			return -1001;
		free(body);
		body = s;
		len = slen;
	}
	if (rg_compress(cc->c, cc->framed, body, len, &z, &zlen))
		return -1002;
	got = count(p, cc->header, NULL, z, zlen, c);
	free(body);
	free(z);
	return got;
}

static void test_codecs(void)
{
	static const uint64_t sizes[] = { 0, 1, 7, 100, 1001, 70000 };
	size_t pi, ci, si;
	char what[96];

	for (pi = 0; pi < sizeof(all_protocols) / sizeof(all_protocols[0]); pi++)
		for (ci = 0; ci < sizeof(codecs) / sizeof(codecs[0]); ci++)
			for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
				enum rg_payload_protocol p = all_protocols[pi];
				uint64_t n = sizes[si];

				/* empty JSON/bulk bodies have their own rules */
				if (!n && (p == RG_PAYLOAD_ES_BULK || p == RG_PAYLOAD_OPENTSDB))
					continue;
				if (n > 1001 && ci % 3) /* big bodies on a few codecs */
					continue;
				snprintf(what, sizeof(what), "%s via %s%s, %llu rows",
					 rg_payload_protocol_name(p),
					 codecs[ci].header ? codecs[ci].header : "(none)",
					 codecs[ci].framed ? " framed" : "",
					 (unsigned long long)n);
				CHECK(round_trip(p, n, &codecs[ci], NULL) == (long long)n,
				      "%s: got %lld", what, round_trip(p, n, &codecs[ci], NULL));
			}
}

/* Several codings at once, undone right to left. */
static void test_coding_chain(void)
{
	uint8_t *body, *a, *b;
	size_t len, alen, blen;
	struct rg_row_counts c;

	rg_encode_rows(RG_PAYLOAD_LINE, 500, NULL, &body, &len);
	rg_compress(RG_CODEC_GZIP, false, body, len, &a, &alen);
	rg_compress(RG_CODEC_BR, false, a, alen, &b, &blen);
	CHECK(count(RG_PAYLOAD_LINE, "gzip, br", NULL, b, blen, &c) == 500, "gzip, br");
	CHECK(count(RG_PAYLOAD_LINE, " gzip ,br ", NULL, b, blen, &c) == 500, "spaces");
	CHECK(count(RG_PAYLOAD_LINE, "br, gzip", NULL, b, blen, &c) < 0, "wrong order");
	CHECK(count(RG_PAYLOAD_LINE, "gzip, identity, br", NULL, b, blen, &c) == 500,
	      "identity ignored");
	CHECK(count(RG_PAYLOAD_LINE, "gzip, gzip, gzip, gzip, gzip", NULL, b, blen, &c) ==
		      -EOPNOTSUPP && c.err == RG_COUNT_E_ENCODING, "too many codings");
	CHECK(count(RG_PAYLOAD_LINE, "compress", NULL, b, blen, &c) == -EOPNOTSUPP &&
		      c.err == RG_COUNT_E_ENCODING, "unknown coding: %s", c.err_msg);
	free(body);
	free(a);
	free(b);

	/* prom-rw: snappy implied under an HTTP coding; zstd replaces snappy */
	rg_encode_rows(RG_PAYLOAD_PROM_RW, 321, NULL, &body, &len);
	rg_compress(RG_CODEC_SNAPPY, false, body, len, &a, &alen);
	rg_compress(RG_CODEC_GZIP, false, a, alen, &b, &blen);
	CHECK(count(RG_PAYLOAD_PROM_RW, "gzip", NULL, b, blen, &c) == 321, "gzip over snappy");
	CHECK(count(RG_PAYLOAD_PROM_RW, "snappy, gzip", NULL, b, blen, &c) == 321,
	      "explicit snappy, gzip");
	CHECK(count(RG_PAYLOAD_PROM_RW, "", NULL, a, alen, &c) == 321, "implied snappy");
	free(b);
	rg_compress(RG_CODEC_ZSTD, false, body, len, &b, &blen);
	CHECK(count(RG_PAYLOAD_PROM_RW, "zstd", NULL, b, blen, &c) == 321, "zstd prom");
	CHECK(count(RG_PAYLOAD_PROM_RW, "snappy", "application/x-protobuf;proto=io.prometheus.write.v2.Request",
		    a, alen, &c) == -EOPNOTSUPP && c.err == RG_COUNT_E_UNSUPPORTED, "rw v2");
	free(body);
	free(a);
	free(b);
}

/* ------------------------------------------------------------ prom-rw */

static const char *const db_names[] = { "alpha", "beta", "greptime-gamma" };
static const char *const db_labels[] = { "x_greptime_database", "__database__",
					  "__schema__" };

/* A random WriteRequest; expected counts computed while building it. */
static uint8_t *random_prom(size_t *len, bool with_hists, struct rg_row_counts *want,
			    const struct rg_count_limits *lim)
{
	Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
	uint32_t ns = rnd(12), i, j;
	Prometheus__TimeSeries **ts = calloc(ns + 1, sizeof(*ts));
	Prometheus__MetricMetadata md = PROMETHEUS__METRIC_METADATA__INIT, *mdp = &md;
	uint64_t hists = 0;
	uint8_t *buf;

	memset(want, 0, sizeof(*want));
	for (i = 0; i < ns; i++) {
		Prometheus__TimeSeries *t = calloc(1, sizeof(*t));
		uint32_t nl = 1 + rnd(5), nsamp = rnd(40), nh = with_hists && !rnd(4) ? 1 + rnd(2) : 0;
		const char *schema = NULL;

		prometheus__time_series__init(t);
		t->labels = calloc(nl, sizeof(*t->labels));
		t->n_labels = nl;
		for (j = 0; j < nl; j++) {
			Prometheus__Label *l = calloc(1, sizeof(*l));
			uint32_t k = rnd(8);

			prometheus__label__init(l);
			if (j == 0) {
				l->name = "__name__";
				l->value = "m";
			} else if (k < 3) {
				l->name = (char *)db_labels[k];
				l->value = (char *)db_names[rnd(3)];
				if (k == 2)
					schema = l->value;
				else if (!schema)
					schema = l->value;
			} else {
				l->name = "host";
				l->value = "h1";
			}
			t->labels[j] = l;
		}
		/* the rule the reference applies too: __schema__ wins */
		schema = NULL;
		for (j = 0; j < nl; j++) {
			if (!strcmp(t->labels[j]->name, "__schema__"))
				schema = t->labels[j]->value;
			else if (!schema && (!strcmp(t->labels[j]->name, "x_greptime_database") ||
					     !strcmp(t->labels[j]->name, "__database__")))
				schema = t->labels[j]->value;
		}
		t->samples = calloc(nsamp + 1, sizeof(*t->samples));
		t->n_samples = nsamp;
		for (j = 0; j < nsamp; j++) {
			Prometheus__Sample *s = calloc(1, sizeof(*s));

			prometheus__sample__init(s);
			s->value = (double)rnd(1000) / 7.0;
			s->timestamp = 1700000000000LL + j;
			t->samples[j] = s;
		}
		if (!rnd(5)) {
			Prometheus__Exemplar *e = calloc(1, sizeof(*e));

			prometheus__exemplar__init(e);
			e->value = 1;
			t->exemplars = calloc(1, sizeof(*t->exemplars));
			t->exemplars[0] = e;
			t->n_exemplars = 1;
		}
		t->histograms = calloc(nh + 1, sizeof(*t->histograms));
		t->n_histograms = nh;
		for (j = 0; j < nh; j++) {
			Prometheus__Histogram *h = calloc(1, sizeof(*h));

			prometheus__histogram__init(h);
			h->count_case = PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT;
			h->count_int = 3;
			h->sum = 2.5;
			h->schema = 3;
			h->timestamp = 1700000000000LL;
			t->histograms[j] = h;
		}
		hists += nh;
		rg_counts_add_db(want, schema, schema ? strlen(schema) : 0, nsamp);
		ts[i] = t;
	}
	req.timeseries = ts;
	req.n_timeseries = ns;
	if (!rnd(3)) {
		md.type = 1;
		md.metric_family_name = "m";
		md.help = "help";
		req.metadata = &mdp;
		req.n_metadata = 1;
	}
	buf = pack(&req.base, len);
	if (hists && lim->prom_native_histograms_refused) {
		memset(want, 0, sizeof(*want));
		want->flags = RG_COUNT_F_SERVER_REFUSES;
	}
	want->prom_native_histograms = (uint32_t)hists;
	for (i = 0; i < ns; i++) {
		Prometheus__TimeSeries *t = ts[i];

		for (j = 0; j < t->n_labels; j++)
			free(t->labels[j]);
		for (j = 0; j < t->n_samples; j++)
			free(t->samples[j]);
		for (j = 0; j < t->n_histograms; j++)
			free(t->histograms[j]);
		if (t->n_exemplars)
			free(t->exemplars[0]);
		free(t->labels);
		free(t->samples);
		free(t->histograms);
		free(t->exemplars);
		free(t);
	}
	free(ts);
	return buf;
}

static void test_prom_random(void)
{
	int iter;

	srandom(11);
	for (iter = 0; iter < 300; iter++) {
		struct rg_count_limits lim;
		struct rg_row_counts want, got, ref;
		size_t len, slen;
		uint8_t *raw, *snap;
		char what[64];

		rg_count_limits_default(&lim);
		lim.prom_native_histograms_refused = iter % 2;
		raw = random_prom(&len, iter % 3 == 0, &want, &lim);
		snprintf(what, sizeof(what), "prom random %d", iter);
		rg_compress(RG_CODEC_SNAPPY, iter % 5 == 0, raw, len, &snap, &slen);
		CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, snap, slen, &lim,
				       &got) == 0, "%s: %s", what, got.err_msg);
		CHECK(ref_count_prom(raw, len, &lim, &ref) == 0, "%s: protobuf-c refused", what);
		same_counts(&got, &want, what);
		same_counts(&got, &ref, what);
		CHECK_EQ_U64(got.prom_native_histograms, want.prom_native_histograms, what);
		free(raw);
		free(snap);
	}
}

/* Label rules, overflow of the per-database table, long names. */
static void add_series(Prometheus__TimeSeries *t, Prometheus__Label *l,
		       Prometheus__Label **lp, size_t nl, Prometheus__Sample **sp, size_t ns)
{
	size_t i;

	prometheus__time_series__init(t);
	for (i = 0; i < nl; i++)
		lp[i] = &l[i];
	t->labels = lp;
	t->n_labels = nl;
	t->samples = sp;
	t->n_samples = ns;
}

static void test_prom_db_rules(void)
{
	Prometheus__Sample s = PROMETHEUS__SAMPLE__INIT, *sp[5] = { &s, &s, &s, &s, &s };
	Prometheus__Label l[3][3];
	Prometheus__Label *lp[3][3];
	Prometheus__TimeSeries t[3], *tp[3] = { &t[0], &t[1], &t[2] };
	Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
	struct rg_row_counts c;
	uint8_t *raw, *z;
	size_t len, zlen;
	uint32_t i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			prometheus__label__init(&l[i][j]);
	/* series 0: x_greptime_database=a then __schema__=b -> b (schema wins)
	 * series 1: __database__=c then x_greptime_database=d -> c (first wins)
	 * series 2: no label -> the request's database */
	l[0][0].name = "x_greptime_database"; l[0][0].value = "a";
	l[0][1].name = "__schema__";          l[0][1].value = "b";
	l[1][0].name = "__database__";        l[1][0].value = "c";
	l[1][1].name = "x_greptime_database"; l[1][1].value = "d";
	l[2][0].name = "__name__";            l[2][0].value = "up";
	add_series(&t[0], l[0], lp[0], 2, sp, 2);
	add_series(&t[1], l[1], lp[1], 2, sp, 3);
	add_series(&t[2], l[2], lp[2], 1, sp, 5);
	req.timeseries = tp;
	req.n_timeseries = 3;
	raw = pack(&req.base, &len);
	rg_compress(RG_CODEC_SNAPPY, false, raw, len, &z, &zlen);
	CHECK(count(RG_PAYLOAD_PROM_RW, "snappy", NULL, z, zlen, &c) == 10, "db rules");
	CHECK_EQ_U64(c.default_rows, 5, "default db rows");
	CHECK_EQ_U64(c.n_dbs, 2, "two named dbs");
	CHECK(c.flags & RG_COUNT_F_PER_SERIES_DB, "per-series flag");
	for (i = 0; i < c.n_dbs; i++) {
		if (!strcmp(c.dbs[i].name, "b"))
			CHECK_EQ_U64(c.dbs[i].rows, 2, "__schema__ wins");
		else if (!strcmp(c.dbs[i].name, "c"))
			CHECK_EQ_U64(c.dbs[i].rows, 3, "first database label wins");
		else
			CHECK(0, "unexpected db %s", c.dbs[i].name);
	}
	free(raw);
	free(z);

	/* 20 databases: 16 fit, the rest overflow; a 64-byte name overflows */
	{
		Prometheus__TimeSeries ts[21], *tsp[21];
		Prometheus__Label ll[21], *llp[21];
		char names[21][80];

		for (i = 0; i < 21; i++) {
			prometheus__label__init(&ll[i]);
			ll[i].name = "x_greptime_database";
			if (i < 20)
				snprintf(names[i], sizeof(names[i]), "db%u", i);
			else
				memset(names[i], 'x', RG_DB_NAME_MAX), names[i][RG_DB_NAME_MAX] = 0;
			ll[i].value = names[i];
			add_series(&ts[i], &ll[i], &llp[i], 1, sp, 1);
			tsp[i] = &ts[i];
		}
		req.timeseries = tsp;
		req.n_timeseries = 21;
		raw = pack(&req.base, &len);
		rg_compress(RG_CODEC_SNAPPY, false, raw, len, &z, &zlen);
		CHECK(count(RG_PAYLOAD_PROM_RW, NULL, NULL, z, zlen, &c) == 21, "21 dbs");
		CHECK_EQ_U64(c.n_dbs, RG_COUNT_MAX_DBS, "table full");
		CHECK_EQ_U64(c.overflow_rows, 21 - RG_COUNT_MAX_DBS, "overflow rows");
		CHECK_EQ_U64(c.default_rows, 0, "no default rows");
		free(raw);
		free(z);
	}
}

/* A database label holding a NUL byte names no key: its rows overflow
 * rather than go to the name cut at the NUL.  Written by hand, since
 * protobuf-c strings end at a NUL (found by tests/fuzz/fuzz_pbwalk). */
static void test_prom_db_name_nul(void)
{
	static const uint8_t label_nul[] = "\x0a\x13x_greptime_database\x12\x03" "a\0b";
	static const uint8_t label_a[] = "\x0a\x13x_greptime_database\x12\x01" "a";
	static const uint8_t sample[] = "\x09\0\0\0\0\0\0\xf0\x3f\x10\x01";
	uint8_t body[128];
	size_t n = 0, i;
	struct rg_count_limits lim;
	struct rg_row_counts c;

	/* two series, "a\0b" then "a", one sample each */
	for (i = 0; i < 2; i++) {
		const uint8_t *l = i ? label_a : label_nul;
		size_t ll = i ? sizeof(label_a) - 1 : sizeof(label_nul) - 1;

		body[n++] = 0x0a;
		body[n++] = (uint8_t)(2 + ll + 2 + sizeof(sample) - 1);
		body[n++] = 0x0a;
		body[n++] = (uint8_t)ll;
		memcpy(body + n, l, ll);
		n += ll;
		body[n++] = 0x12;
		body[n++] = sizeof(sample) - 1;
		memcpy(body + n, sample, sizeof(sample) - 1);
		n += sizeof(sample) - 1;
	}
	rg_count_limits_default(&lim);
	memset(&c, 0, sizeof(c));
	CHECK(rg_pb_count_prom(body, n, &lim, &c) == RG_COUNT_OK, "NUL label: %s", c.err_msg);
	CHECK_EQ_U64(c.rows, 2, "NUL label rows");
	CHECK_EQ_U64(c.overflow_rows, 1, "NUL label overflows");
	CHECK(c.n_dbs == 1 && !strcmp(c.dbs[0].name, "a") && c.dbs[0].rows == 1,
	      "only the series of \"a\" is charged to a (%u dbs)", c.n_dbs);
}

/* Native histograms: refused whole by default, samples-only if allowed. */
static void test_prom_native_histograms(void)
{
	Prometheus__Sample s = PROMETHEUS__SAMPLE__INIT, *sp[2] = { &s, &s };
	Prometheus__Histogram h = PROMETHEUS__HISTOGRAM__INIT, *hp = &h;
	Prometheus__TimeSeries t = PROMETHEUS__TIME_SERIES__INIT, *tp = &t;
	Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
	struct rg_count_limits lim;
	struct rg_row_counts c;
	uint8_t *raw, *z;
	size_t len, zlen;

	t.samples = sp;
	t.n_samples = 2;
	t.histograms = &hp;
	t.n_histograms = 1;
	req.timeseries = &tp;
	req.n_timeseries = 1;
	raw = pack(&req.base, &len);
	rg_compress(RG_CODEC_SNAPPY, false, raw, len, &z, &zlen);
	rg_count_limits_default(&lim);
	CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, z, zlen, &lim, &c) == 0 &&
		      c.rows == 0 && (c.flags & RG_COUNT_F_SERVER_REFUSES) &&
		      c.prom_native_histograms == 1 && c.err_msg[0],
	      "native histogram refused: rows %llu", (unsigned long long)c.rows);
	lim.prom_native_histograms_refused = false;
	CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, z, zlen, &lim, &c) == 0 &&
		      c.rows == 2 && !(c.flags & RG_COUNT_F_SERVER_REFUSES),
	      "native histogram counted as its samples only");
	free(raw);
	free(z);
}

/* ------------------------------------------------------------ OTLP metrics */

struct otlp_build {
	void **ptrs;     /* everything calloc'ed, freed at the end */
	size_t n, cap;
};

static void *oalloc(struct otlp_build *b, size_t sz)
{
	void *p = calloc(1, sz);

	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->ptrs = realloc(b->ptrs, b->cap * sizeof(*b->ptrs));
	}
	b->ptrs[b->n++] = p;
	return p;
}

static void obuild_free(struct otlp_build *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		free(b->ptrs[i]);
	free(b->ptrs);
}

/* A random Metric of any kind; adds its rows to rows and legacy_rows. */
static Rowgate__Otlp__Metric *random_metric(struct otlp_build *b, uint64_t *rows,
					    uint64_t *legacy_rows)
{
	Rowgate__Otlp__Metric *m = oalloc(b, sizeof(*m));
	uint32_t kind = rnd(6), n = rnd(6), i, j;

	rowgate__otlp__metric__init(m);
	m->name = "m";
	switch (kind) {
	case 0:
	case 1: { /* gauge / sum */
		Rowgate__Otlp__NumberDataPoint **dp = oalloc(b, (n + 1) * sizeof(*dp));

		for (i = 0; i < n; i++) {
			dp[i] = oalloc(b, sizeof(**dp));
			rowgate__otlp__number_data_point__init(dp[i]);
			dp[i]->has_time_unix_nano = 1;
			dp[i]->time_unix_nano = 1;
			dp[i]->value_case = i % 2 ? ROWGATE__OTLP__NUMBER_DATA_POINT__VALUE_AS_INT :
						    ROWGATE__OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
			dp[i]->as_int = 5;
		}
		if (kind == 0) {
			Rowgate__Otlp__Gauge *g = oalloc(b, sizeof(*g));

			rowgate__otlp__gauge__init(g);
			g->data_points = dp;
			g->n_data_points = n;
			m->data_case = ROWGATE__OTLP__METRIC__DATA_GAUGE;
			m->gauge = g;
		} else {
			Rowgate__Otlp__Sum *s = oalloc(b, sizeof(*s));

			rowgate__otlp__sum__init(s);
			s->data_points = dp;
			s->n_data_points = n;
			s->has_aggregation_temporality = 1;
			s->aggregation_temporality = 2;
			m->data_case = ROWGATE__OTLP__METRIC__DATA_SUM;
			m->sum = s;
		}
		*rows += n;
		*legacy_rows += n;
		break;
	}
	case 2: { /* histogram */
		Rowgate__Otlp__Histogram *h = oalloc(b, sizeof(*h));
		Rowgate__Otlp__HistogramDataPoint **dp = oalloc(b, (n + 1) * sizeof(*dp));

		rowgate__otlp__histogram__init(h);
		for (i = 0; i < n; i++) {
			uint32_t nb = rnd(8);

			dp[i] = oalloc(b, sizeof(**dp));
			rowgate__otlp__histogram_data_point__init(dp[i]);
			dp[i]->has_count = 1;
			dp[i]->count = 10;
			dp[i]->has_sum = rnd(2);
			dp[i]->sum = 0.0; /* present even at zero */
			dp[i]->n_bucket_counts = nb;
			dp[i]->bucket_counts = oalloc(b, (nb + 1) * sizeof(uint64_t));
			dp[i]->n_explicit_bounds = nb ? nb - 1 : 0;
			dp[i]->explicit_bounds = oalloc(b, (nb + 1) * sizeof(double));
			for (j = 0; j < nb; j++)
				dp[i]->bucket_counts[j] = j;
			*rows += nb + (dp[i]->has_sum ? 1 : 0) + 1;
			*legacy_rows += nb + (dp[i]->has_sum ? 1 : 0) + 1;
		}
		h->data_points = dp;
		h->n_data_points = n;
		m->data_case = ROWGATE__OTLP__METRIC__DATA_HISTOGRAM;
		m->histogram = h;
		break;
	}
	case 3: { /* exponential histogram: dropped */
		Rowgate__Otlp__ExponentialHistogram *e = oalloc(b, sizeof(*e));
		Rowgate__Otlp__ExponentialHistogramDataPoint **dp = oalloc(b, (n + 1) * sizeof(*dp));

		rowgate__otlp__exponential_histogram__init(e);
		for (i = 0; i < n; i++) {
			dp[i] = oalloc(b, sizeof(**dp));
			rowgate__otlp__exponential_histogram_data_point__init(dp[i]);
			dp[i]->has_count = 1;
			dp[i]->count = 4;
		}
		e->data_points = dp;
		e->n_data_points = n;
		m->data_case = ROWGATE__OTLP__METRIC__DATA_EXPONENTIAL_HISTOGRAM;
		m->exponential_histogram = e;
		break;
	}
	case 4: { /* summary */
		Rowgate__Otlp__Summary *s = oalloc(b, sizeof(*s));
		Rowgate__Otlp__SummaryDataPoint **dp = oalloc(b, (n + 1) * sizeof(*dp));

		rowgate__otlp__summary__init(s);
		for (i = 0; i < n; i++) {
			uint32_t nq = rnd(5);

			dp[i] = oalloc(b, sizeof(**dp));
			rowgate__otlp__summary_data_point__init(dp[i]);
			dp[i]->quantile_values = oalloc(b, (nq + 1) * sizeof(void *));
			dp[i]->n_quantile_values = nq;
			for (j = 0; j < nq; j++) {
				Rowgate__Otlp__SummaryDataPoint__ValueAtQuantile *q =
					oalloc(b, sizeof(*q));

				rowgate__otlp__summary_data_point__value_at_quantile__init(q);
				q->has_quantile = 1;
				q->quantile = 0.5;
				dp[i]->quantile_values[j] = q;
			}
			*rows += nq + 2;
			*legacy_rows += 1;
		}
		s->data_points = dp;
		s->n_data_points = n;
		m->data_case = ROWGATE__OTLP__METRIC__DATA_SUMMARY;
		m->summary = s;
		break;
	}
	default: /* no data at all */
		break;
	}
	return m;
}

static uint8_t *random_otlp_metrics(size_t *len, uint64_t *rows, uint64_t *legacy_rows)
{
	Rowgate__Otlp__ExportMetricsServiceRequest req =
		ROWGATE__OTLP__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	struct otlp_build b = { 0 };
	uint32_t nr = rnd(3), i, j, k;
	uint8_t *buf;

	*rows = *legacy_rows = 0;
	req.resource_metrics = oalloc(&b, (nr + 1) * sizeof(void *));
	req.n_resource_metrics = nr;
	for (i = 0; i < nr; i++) {
		Rowgate__Otlp__ResourceMetrics *rm = oalloc(&b, sizeof(*rm));
		uint32_t ns = rnd(3);

		rowgate__otlp__resource_metrics__init(rm);
		rm->schema_url = "https://opentelemetry.io/schemas/1.21.0";
		rm->scope_metrics = oalloc(&b, (ns + 1) * sizeof(void *));
		rm->n_scope_metrics = ns;
		for (j = 0; j < ns; j++) {
			Rowgate__Otlp__ScopeMetrics *sm = oalloc(&b, sizeof(*sm));
			uint32_t nm = rnd(6);

			rowgate__otlp__scope_metrics__init(sm);
			sm->metrics = oalloc(&b, (nm + 1) * sizeof(void *));
			sm->n_metrics = nm;
			for (k = 0; k < nm; k++)
				sm->metrics[k] = random_metric(&b, rows, legacy_rows);
			rm->scope_metrics[j] = sm;
		}
		req.resource_metrics[i] = rm;
	}
	buf = pack(&req.base, len);
	obuild_free(&b);
	return buf;
}

static void test_otlp_metrics_random(void)
{
	int iter;

	srandom(23);
	for (iter = 0; iter < 300; iter++) {
		struct rg_count_limits lim;
		struct rg_row_counts got, ref;
		uint64_t rows, legacy_rows;
		size_t len, zlen;
		uint8_t *raw = random_otlp_metrics(&len, &rows, &legacy_rows), *z;
		char what[64];

		snprintf(what, sizeof(what), "otlp metrics random %d", iter);
		rg_count_limits_default(&lim);
		lim.otlp_summary_legacy = iter % 4 == 0;
		rg_compress(iter % 2 ? RG_CODEC_GZIP : RG_CODEC_ZSTD, false, raw, len, &z, &zlen);
		CHECK(rg_count_payload(RG_PAYLOAD_OTLP_METRICS, iter % 2 ? "gzip" : "zstd", NULL,
				       z, zlen, &lim, &got) == 0, "%s: %s", what, got.err_msg);
		CHECK_EQ_U64(got.rows, lim.otlp_summary_legacy ? legacy_rows : rows, what);
		CHECK(ref_count_otlp_metrics(raw, len, &lim, &ref) == 0, "%s: protobuf-c", what);
		same_counts(&got, &ref, what);
		free(raw);
		free(z);
	}
}

/* GreptimeDB's own examples: histogram with 5 buckets and a sum = 7 rows,
 * summary with two quantiles = 4 rows, exponential histogram = 0. */
static void test_otlp_rules(void)
{
	uint64_t buckets[5] = { 2, 4, 6, 9, 4 };
	double bounds[4] = { 0.1, 1, 10, 100 };
	Rowgate__Otlp__HistogramDataPoint hdp = ROWGATE__OTLP__HISTOGRAM_DATA_POINT__INIT, *hdpp = &hdp;
	Rowgate__Otlp__Histogram h = ROWGATE__OTLP__HISTOGRAM__INIT;
	Rowgate__Otlp__SummaryDataPoint__ValueAtQuantile q[2] = {
		ROWGATE__OTLP__SUMMARY_DATA_POINT__VALUE_AT_QUANTILE__INIT,
		ROWGATE__OTLP__SUMMARY_DATA_POINT__VALUE_AT_QUANTILE__INIT,
	}, *qp[2] = { &q[0], &q[1] };
	Rowgate__Otlp__SummaryDataPoint sdp = ROWGATE__OTLP__SUMMARY_DATA_POINT__INIT, *sdpp = &sdp;
	Rowgate__Otlp__Summary s = ROWGATE__OTLP__SUMMARY__INIT;
	Rowgate__Otlp__ExponentialHistogramDataPoint edp =
		ROWGATE__OTLP__EXPONENTIAL_HISTOGRAM_DATA_POINT__INIT, *edpp = &edp;
	Rowgate__Otlp__ExponentialHistogram e = ROWGATE__OTLP__EXPONENTIAL_HISTOGRAM__INIT;
	Rowgate__Otlp__Metric m[3] = { ROWGATE__OTLP__METRIC__INIT, ROWGATE__OTLP__METRIC__INIT,
				       ROWGATE__OTLP__METRIC__INIT };
	Rowgate__Otlp__Metric *mp[3] = { &m[0], &m[1], &m[2] };
	Rowgate__Otlp__ScopeMetrics sm = ROWGATE__OTLP__SCOPE_METRICS__INIT, *smp = &sm;
	Rowgate__Otlp__ResourceMetrics rm = ROWGATE__OTLP__RESOURCE_METRICS__INIT, *rmp = &rm;
	Rowgate__Otlp__ExportMetricsServiceRequest req =
		ROWGATE__OTLP__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	struct rg_count_limits lim;
	struct rg_row_counts c;
	size_t len, i;
	uint8_t *raw;

	hdp.has_count = 1;
	hdp.count = 25;
	hdp.has_sum = 1;
	hdp.sum = 100;
	hdp.bucket_counts = buckets;
	hdp.n_bucket_counts = 5;
	hdp.explicit_bounds = bounds;
	hdp.n_explicit_bounds = 4;
	h.data_points = &hdpp;
	h.n_data_points = 1;
	sdp.quantile_values = qp;
	sdp.n_quantile_values = 2;
	s.data_points = &sdpp;
	s.n_data_points = 1;
	e.data_points = &edpp;
	e.n_data_points = 1;
	m[0].data_case = ROWGATE__OTLP__METRIC__DATA_HISTOGRAM;
	m[0].histogram = &h;
	m[1].data_case = ROWGATE__OTLP__METRIC__DATA_SUMMARY;
	m[1].summary = &s;
	m[2].data_case = ROWGATE__OTLP__METRIC__DATA_EXPONENTIAL_HISTOGRAM;
	m[2].exponential_histogram = &e;
	sm.metrics = mp;
	rm.scope_metrics = &smp;
	rm.n_scope_metrics = 1;
	req.resource_metrics = &rmp;
	req.n_resource_metrics = 1;
	rg_count_limits_default(&lim);
	for (i = 1; i <= 3; i++) {
		static const uint64_t want[] = { 0, 7, 11, 11 };

		sm.n_metrics = i;
		raw = pack(&req.base, &len);
		CHECK(rg_count_payload(RG_PAYLOAD_OTLP_METRICS, NULL, NULL, raw, len, &lim, &c) == 0,
		      "otlp rules: %s", c.err_msg);
		CHECK_EQ_U64(c.rows, want[i], "histogram 7, summary +4, exponential +0");
		free(raw);
	}
	lim.otlp_summary_legacy = true;
	raw = pack(&req.base, &len);
	rg_count_payload(RG_PAYLOAD_OTLP_METRICS, NULL, NULL, raw, len, &lim, &c);
	CHECK_EQ_U64(c.rows, 8, "legacy summary: one row");
	free(raw);
	hdp.has_sum = 0;
	sm.n_metrics = 1;
	raw = pack(&req.base, &len);
	rg_count_payload(RG_PAYLOAD_OTLP_METRICS, NULL, NULL, raw, len, &lim, &c);
	CHECK_EQ_U64(c.rows, 6, "histogram without sum: buckets + _count");
	free(raw);
}

/* Wire-level cases a generator does not produce: unpacked repeated fixed64,
 * oneof members repeated or replaced (prost merges the same member and
 * replaces on another; protobuf-c replaces always), unknown fields and groups,
 * wrong wire types, overlong varints. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t put_len(uint8_t *p, uint32_t field, const uint8_t *sub, size_t n)
{
	size_t o = put_varint(p, (uint64_t)field << 3 | 2);

	o += put_varint(p + o, n);
	memcpy(p + o, sub, n);
	return o + n;
}

/* request -> resource_metrics -> scope_metrics -> metric(body) */
static size_t wrap_metric(uint8_t *out, const uint8_t *metric, size_t n)
{
	uint8_t a[4096], b[4096];
	size_t an, bn;

	an = put_len(a, 2, metric, n);       /* ScopeMetrics.metrics */
	bn = put_len(b, 2, a, an);           /* ResourceMetrics.scope_metrics */
	return put_len(out, 1, b, bn);       /* request.resource_metrics */
}

static long long otlp_wire(const uint8_t *metric, size_t n)
{
	uint8_t body[8192];
	size_t len = wrap_metric(body, metric, n);

	return count(RG_PAYLOAD_OTLP_METRICS, NULL, NULL, body, len, NULL);
}

static void test_otlp_wire(void)
{
	uint8_t dp[256], hist[512], metric[1024], gauge[256], g2[256];
	size_t dn = 0, hn, mn, gn, i;
	uint8_t one_dp[] = { 0x19, 1, 0, 0, 0, 0, 0, 0, 0 }; /* time_unix_nano fixed64 */

	/* HistogramDataPoint: 3 unpacked bucket counts + 2 packed = 5, no sum */
	for (i = 0; i < 3; i++) {
		dp[dn++] = 6 << 3 | 1;
		memset(dp + dn, 0, 8);
		dn += 8;
	}
	{
		uint8_t packed[16] = { 0 };

		dn += put_len(dp + dn, 6, packed, 16);
	}
	hn = put_len(hist, 1, dp, dn);
	mn = put_len(metric, 9, hist, hn);
	CHECK(otlp_wire(metric, mn) == 6, "unpacked + packed buckets: got %lld",
	      otlp_wire(metric, mn));

	/* packed bucket counts of a length not a multiple of 8: malformed */
	{
		uint8_t bad[9] = { 0 }, d2[64], h2[64], m2[64];
		size_t n2 = put_len(d2, 6, bad, 9), hn2 = put_len(h2, 1, d2, n2);
		size_t mn2 = put_len(m2, 9, h2, hn2);

		CHECK(otlp_wire(m2, mn2) == -EBADMSG, "packed fixed64 of 9 bytes");
	}

	/* gauge twice in one Metric: merged, 1 + 2 points */
	gn = put_len(gauge, 1, one_dp, sizeof(one_dp));
	{
		size_t g2n = put_len(g2, 1, one_dp, sizeof(one_dp));

		g2n += put_len(g2 + g2n, 1, one_dp, sizeof(one_dp));
		mn = put_len(metric, 5, gauge, gn);
		mn += put_len(metric + mn, 5, g2, g2n);
		CHECK(otlp_wire(metric, mn) == 3, "same oneof member merges");
		/* gauge then sum: the sum replaces it */
		mn = put_len(metric, 5, g2, g2n);
		mn += put_len(metric + mn, 7, gauge, gn);
		CHECK(otlp_wire(metric, mn) == 1, "another oneof member replaces");
		/* gauge then exponential histogram: 0 */
		mn = put_len(metric, 5, g2, g2n);
		mn += put_len(metric + mn, 10, gauge, gn);
		CHECK(otlp_wire(metric, mn) == 0, "replaced by exponential histogram");
	}

	/* unknown fields of every wire type (and a group) are skipped */
	{
		uint8_t m3[256];
		size_t n3 = put_len(m3, 5, gauge, gn);

		/* unknown field numbers of Metric: 13, 14, 15 and a group as 4 */
		m3[n3++] = 13 << 3 | 0;  m3[n3++] = 0x96; m3[n3++] = 0x01; /* varint */
		m3[n3++] = 14 << 3 | 1;  memset(m3 + n3, 7, 8); n3 += 8;   /* i64 */
		m3[n3++] = 15 << 3 | 5;  memset(m3 + n3, 7, 4); n3 += 4;   /* i32 */
		m3[n3++] = 4 << 3 | 3;                                     /* group { */
		m3[n3++] = 1 << 3 | 0;   m3[n3++] = 5;
		m3[n3++] = 4 << 3 | 4;                                     /* } */
		CHECK(otlp_wire(m3, n3) == 1, "unknown fields skipped: %lld", otlp_wire(m3, n3));
		m3[n3 - 1] = 6 << 3 | 4; /* mismatched end group */
		CHECK(otlp_wire(m3, n3) == -EBADMSG, "mismatched end group");
	}

	/* fields another data message has are unknown in this one: a Gauge's
	 * field 2 or 3, a Histogram's 3 (found by tests/fuzz/fuzz_pbwalk) */
	{
		uint8_t g3[64], m7[64];
		size_t n7, k;
		static const uint8_t kinds[] = { 5, 9, 11 };

		for (k = 0; k < sizeof(kinds); k++) {
			size_t g3n = put_len(g3, 1, kinds[k] == 5 ? one_dp : dp,
					     kinds[k] == 5 ? sizeof(one_dp) : 0);

			g3n += put_len(g3 + g3n, 3, (const uint8_t *)"xy", 2);
			if (kinds[k] != 9) /* a Histogram's 2 is its temporality */
				g3n += put_len(g3 + g3n, 2, (const uint8_t *)"z", 1);
			n7 = put_len(m7, kinds[k], g3, g3n);
			CHECK(otlp_wire(m7, n7) == (kinds[k] == 11 ? 2 : 1),
			      "unknown fields of data message %u skipped: %lld",
			      (unsigned)kinds[k], otlp_wire(m7, n7));
		}
	}

	/* a known field with the wrong wire type is malformed (prost refuses) */
	{
		uint8_t m4[16] = { 1 << 3 | 0, 5 }; /* Metric.name as varint */

		CHECK(otlp_wire(m4, 2) == -EBADMSG, "Metric.name as varint");
	}
	/* an 11-byte varint, and field number 0 */
	{
		uint8_t m5[16] = { 13 << 3 | 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0x01 };
		uint8_t m6[4] = { 0 << 3 | 0, 1 };

		CHECK(otlp_wire(m5, 12) == -EBADMSG, "overlong varint");
		CHECK(otlp_wire(m6, 2) == -EBADMSG, "field 0");
	}
}

/* ------------------------------------------------------------ logs, traces, loki */

static void test_logs_traces_loki_random(void)
{
	int iter;

	srandom(31);
	for (iter = 0; iter < 200; iter++) {
		uint32_t nr = rnd(3), i, j, k;
		uint64_t rows = 0;
		struct rg_row_counts got, ref;
		Rowgate__Otlp__ExportLogsServiceRequest lreq =
			ROWGATE__OTLP__EXPORT_LOGS_SERVICE_REQUEST__INIT;
		Rowgate__Otlp__ExportTraceServiceRequest treq =
			ROWGATE__OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
		Logproto__PushRequest preq = LOGPROTO__PUSH_REQUEST__INIT;
		struct otlp_build b = { 0 };
		uint8_t *raw, *z;
		size_t len, zlen;
		int kind = iter % 3;

		if (kind == 0) {
			lreq.resource_logs = oalloc(&b, (nr + 1) * sizeof(void *));
			lreq.n_resource_logs = nr;
		} else if (kind == 1) {
			treq.resource_spans = oalloc(&b, (nr + 1) * sizeof(void *));
			treq.n_resource_spans = nr;
		} else {
			nr *= 3;
			preq.streams = oalloc(&b, (nr + 1) * sizeof(void *));
			preq.n_streams = nr;
		}
		for (i = 0; i < nr; i++) {
			uint32_t ns = rnd(4);

			if (kind == 2) {
				Logproto__StreamAdapter *s = oalloc(&b, sizeof(*s));
				uint32_t ne = rnd(20);

				logproto__stream_adapter__init(s);
				s->labels = "{job=\"x\"}";
				s->entries = oalloc(&b, (ne + 1) * sizeof(void *));
				s->n_entries = ne;
				for (k = 0; k < ne; k++) {
					Logproto__EntryAdapter *e = oalloc(&b, sizeof(*e));
					Logproto__Timestamp *t = oalloc(&b, sizeof(*t));

					logproto__entry_adapter__init(e);
					logproto__timestamp__init(t);
					t->seconds = 1700000000;
					e->timestamp = t;
					e->line = k % 2 ? "" : "hello";
					s->entries[k] = e;
				}
				rows += ne;
				preq.streams[i] = s;
				continue;
			}
			if (kind == 0) {
				Rowgate__Otlp__ResourceLogs *rl = oalloc(&b, sizeof(*rl));

				rowgate__otlp__resource_logs__init(rl);
				rl->scope_logs = oalloc(&b, (ns + 1) * sizeof(void *));
				rl->n_scope_logs = ns;
				for (j = 0; j < ns; j++) {
					Rowgate__Otlp__ScopeLogs *sl = oalloc(&b, sizeof(*sl));
					uint32_t nl = rnd(10);

					rowgate__otlp__scope_logs__init(sl);
					sl->log_records = oalloc(&b, (nl + 1) * sizeof(void *));
					sl->n_log_records = nl;
					for (k = 0; k < nl; k++) {
						Rowgate__Otlp__LogRecord *lr = oalloc(&b, sizeof(*lr));

						rowgate__otlp__log_record__init(lr);
						sl->log_records[k] = lr; /* empty records count */
					}
					rows += nl;
					rl->scope_logs[j] = sl;
				}
				lreq.resource_logs[i] = rl;
			} else {
				Rowgate__Otlp__ResourceSpans *rs = oalloc(&b, sizeof(*rs));

				rowgate__otlp__resource_spans__init(rs);
				rs->scope_spans = oalloc(&b, (ns + 1) * sizeof(void *));
				rs->n_scope_spans = ns;
				for (j = 0; j < ns; j++) {
					Rowgate__Otlp__ScopeSpans *ss = oalloc(&b, sizeof(*ss));
					uint32_t nsp = rnd(10);

					rowgate__otlp__scope_spans__init(ss);
					ss->spans = oalloc(&b, (nsp + 1) * sizeof(void *));
					ss->n_spans = nsp;
					for (k = 0; k < nsp; k++) {
						Rowgate__Otlp__Span *sp = oalloc(&b, sizeof(*sp));

						rowgate__otlp__span__init(sp);
						sp->name = "op";
						sp->has_kind = 1;
						sp->kind = 2;
						ss->spans[k] = sp;
					}
					rows += nsp;
					rs->scope_spans[j] = ss;
				}
				treq.resource_spans[i] = rs;
			}
		}
		raw = pack(kind == 0 ? &lreq.base : kind == 1 ? &treq.base : &preq.base, &len);
		obuild_free(&b);
		if (kind == 2) {
			rg_compress(RG_CODEC_SNAPPY, iter % 2, raw, len, &z, &zlen);
			CHECK(count(RG_PAYLOAD_LOKI, NULL, "application/x-protobuf", z, zlen, &got) ==
				      (long long)rows, "loki random %d: %s", iter, got.err_msg);
			CHECK(ref_count_loki(raw, len, &ref) == 0, "loki ref");
		} else {
			enum rg_payload_protocol p = kind ? RG_PAYLOAD_OTLP_TRACES : RG_PAYLOAD_OTLP_LOGS;

			rg_compress(RG_CODEC_GZIP, false, raw, len, &z, &zlen);
			CHECK(count(p, "gzip", NULL, z, zlen, &got) == (long long)rows,
			      "otlp %d random %d: %s", kind, iter, got.err_msg);
			CHECK((kind ? ref_count_otlp_traces(raw, len, &ref) :
				      ref_count_otlp_logs(raw, len, &ref)) == 0, "otlp ref");
		}
		same_counts(&got, &ref, "logs/traces/loki vs protobuf-c");
		free(raw);
		free(z);
	}
}

/* Every prefix of a body: the walker fails exactly when protobuf-c does,
 * and counts the same when both accept (a cut at a top-level boundary). */
static void test_truncated_protobuf(void)
{
	struct rg_count_limits lim;
	struct rg_row_counts want, got, ref;
	uint64_t rows, legacy;
	size_t len, cut;
	uint8_t *raw;
	int iter;

	rg_count_limits_default(&lim);
	srandom(41);
	for (iter = 0; iter < 12; iter++) {
		bool prom = iter % 2;

		raw = prom ? random_prom(&len, false, &want, &lim) :
			     random_otlp_metrics(&len, &rows, &legacy);
		for (cut = 0; cut <= len; cut++) {
			int w = prom ? rg_count_payload(RG_PAYLOAD_PROM_RW, "identity", NULL, raw,
							cut, &lim, &got) :
				       rg_count_payload(RG_PAYLOAD_OTLP_METRICS, NULL, NULL, raw,
							cut, &lim, &got);
			int r = prom ? ref_count_prom(raw, cut, &lim, &ref) :
				       ref_count_otlp_metrics(raw, cut, &lim, &ref);

			/* identity for prom still means snappy: compare the walker directly */
			if (prom) {
				memset(&got, 0, sizeof(got));
				w = rg_pb_count_prom(raw, cut, &lim, &got) ? -1 : 0;
			}
			CHECK((w == 0) == (r == 0), "prefix %zu/%zu of %s: walker %d, protobuf-c %d",
			      cut, len, prom ? "prom" : "otlp", w, r);
			if (!w && !r)
				CHECK_EQ_U64(got.rows, ref.rows, "prefix rows");
		}
		free(raw);
	}
}

/* Random corruption: never a crash or a read out of bounds (ASan). */
static void test_fuzz_protobuf(void)
{
	static const enum rg_payload_protocol ps[] = {
		RG_PAYLOAD_PROM_RW, RG_PAYLOAD_OTLP_METRICS, RG_PAYLOAD_OTLP_LOGS,
		RG_PAYLOAD_OTLP_TRACES, RG_PAYLOAD_LOKI_PROTO,
	};
	struct rg_count_limits lim;
	struct rg_row_counts got;
	int iter;

	rg_count_limits_default(&lim);
	srandom(53);
	for (iter = 0; iter < 2000; iter++) {
		enum rg_payload_protocol p = ps[iter % 5];
		uint8_t *raw;
		size_t len, i, flips;
		int rc;

		rg_encode_rows(p == RG_PAYLOAD_LOKI_PROTO ? RG_PAYLOAD_LOKI : p, rnd(30), NULL,
			       &raw, &len);
		flips = 1 + rnd(4);
		for (i = 0; i < flips && len; i++)
			raw[rnd((uint32_t)len)] ^= (uint8_t)(1 + rnd(255));
		memset(&got, 0, sizeof(got));
		switch (p) {
		case RG_PAYLOAD_PROM_RW: rc = rg_pb_count_prom(raw, len, &lim, &got); break;
		case RG_PAYLOAD_OTLP_METRICS: rc = rg_pb_count_otlp_metrics(raw, len, &lim, &got); break;
		case RG_PAYLOAD_OTLP_LOGS: rc = rg_pb_count_otlp_logs(raw, len, &got); break;
		case RG_PAYLOAD_OTLP_TRACES: rc = rg_pb_count_otlp_traces(raw, len, &got); break;
		default: rc = rg_pb_count_loki(raw, len, &got); break;
		}
		CHECK(rc == RG_COUNT_OK || rc == RG_COUNT_E_MALFORMED, "fuzz rc %d", rc);
		free(raw);
	}
}

/* ------------------------------------------------------------ compression errors */

static void test_corrupt_and_truncated(void)
{
	static const struct codec_case cc[] = {
		{ "gzip", RG_CODEC_GZIP, false }, { "deflate", RG_CODEC_DEFLATE, false },
		{ "zstd", RG_CODEC_ZSTD, false }, { "br", RG_CODEC_BR, false },
		{ "snappy", RG_CODEC_SNAPPY, true },
	};
	uint8_t *body, *z;
	size_t len, zlen, i;
	struct rg_row_counts c;

	rg_encode_rows(RG_PAYLOAD_LINE, 3000, NULL, &body, &len);
	for (i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
		size_t cut;
		int rc;

		rg_compress(cc[i].c, cc[i].framed, body, len, &z, &zlen);
		/* truncated: half of the stream, and all but the last byte */
		for (cut = zlen / 2; cut < zlen; cut += zlen / 2 - 1 > 0 ? zlen / 2 - 1 : 1) {
			rc = rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, cut, NULL, &c);
			CHECK(rc == -EBADMSG && (c.err == RG_COUNT_E_TRUNCATED ||
						 c.err == RG_COUNT_E_CORRUPT),
			      "%s cut at %zu/%zu: rc %d err %d (%s)", cc[i].header, cut, zlen, rc,
			      c.err, c.err_msg);
			CHECK(c.rows == 0 && c.err_msg[0], "%s: error leaves no rows", cc[i].header);
		}
		rc = rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, zlen - 1, NULL, &c);
		CHECK(c.err == RG_COUNT_E_TRUNCATED || cc[i].c == RG_CODEC_ZSTD ||
			      cc[i].c == RG_CODEC_SNAPPY || cc[i].c == RG_CODEC_GZIP,
		      "%s last byte missing: %s", cc[i].header, c.err_msg);
		/* corrupt: garbage in the middle */
		memset(z + zlen / 3, 0xA5, zlen / 3 > 64 ? 64 : zlen / 3);
		rc = rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, zlen, NULL, &c);
		CHECK(rc == -EBADMSG, "%s corrupt: rc %d (%s)", cc[i].header, rc, c.err_msg);
		/* trailing garbage after a complete stream */
		free(z);
		rg_compress(cc[i].c, cc[i].framed, body, len, &z, &zlen);
		z = realloc(z, zlen + 3);
		memcpy(z + zlen, "\x01\x02\x03", 3);
		rc = rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, zlen + 3, NULL, &c);
		CHECK(rc == -EBADMSG, "%s trailing garbage: rc %d", cc[i].header, rc);
		free(z);
	}
	/* not compressed at all */
	CHECK(count(RG_PAYLOAD_LINE, "gzip", NULL, body, len, &c) == -EBADMSG &&
		      c.err == RG_COUNT_E_CORRUPT, "plain text as gzip: %s", c.err_msg);
	CHECK(count(RG_PAYLOAD_PROM_RW, "snappy", NULL, body, len, &c) == -EBADMSG,
	      "plain text as snappy: %s", c.err_msg);
	CHECK(count(RG_PAYLOAD_LINE, "zstd", NULL, "", 0, &c) == -EBADMSG &&
		      c.err == RG_COUNT_E_TRUNCATED, "empty zstd");
	CHECK(count(RG_PAYLOAD_LINE, "snappy", NULL, "", 0, &c) == -EBADMSG, "empty snappy");
	/* framed snappy with a wrong checksum */
	rg_compress(RG_CODEC_SNAPPY, true, body, len, &z, &zlen);
	z[14] ^= 1;
	CHECK(count(RG_PAYLOAD_LINE, "snappy", NULL, z, zlen, &c) == -EBADMSG &&
		      strstr(c.err_msg, "checksum"), "framed checksum: %s", c.err_msg);
	free(z);
	free(body);
	/* arguments */
	CHECK(rg_count_payload(RG_PAYLOAD_LINE, NULL, NULL, NULL, 5, NULL, &c) == -EINVAL &&
		      c.err == RG_COUNT_E_INVAL, "NULL body");
	CHECK(rg_count_payload(RG_PAYLOAD__COUNT, NULL, NULL, "", 0, NULL, &c) == -EINVAL,
	      "bad protocol");
	CHECK(rg_count_payload(RG_PAYLOAD_LINE, NULL, NULL, NULL, 0, NULL, &c) == 0 &&
		      c.rows == 0, "empty body");
}

/* ------------------------------------------------------------ bombs */

/* Stream `total` zero bytes through a real compressor without holding them. */
static uint8_t *zero_bomb(enum rg_codec c, uint64_t total, size_t *out_len)
{
	static uint8_t zeros[1 << 20];
	size_t cap = 1 << 22, n = 0;
	uint8_t *out = malloc(cap);
	uint64_t fed = 0;

	if (c == RG_CODEC_GZIP) {
		z_stream z;

		memset(&z, 0, sizeof(z));
		deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
		z.next_out = out;
		z.avail_out = (uInt)cap;
		while (fed < total) {
			z.next_in = zeros;
			z.avail_in = sizeof(zeros);
			fed += sizeof(zeros);
			deflate(&z, fed < total ? Z_NO_FLUSH : Z_FINISH);
		}
		n = cap - z.avail_out;
		deflateEnd(&z);
	} else if (c == RG_CODEC_ZSTD) {
		ZSTD_CCtx *z = ZSTD_createCCtx();
		ZSTD_outBuffer ob = { out, cap, 0 };

		while (fed < total) {
			ZSTD_inBuffer ib = { zeros, sizeof(zeros), 0 };

			fed += sizeof(zeros);
			while (ib.pos < ib.size || fed >= total) {
				size_t r = ZSTD_compressStream2(z, &ob, &ib,
								fed < total ? ZSTD_e_continue : ZSTD_e_end);
				if (fed >= total && r == 0)
					break;
				if (fed < total && ib.pos == ib.size)
					break;
			}
		}
		n = ob.pos;
		ZSTD_freeCCtx(z);
	} else if (c == RG_CODEC_BR) {
		BrotliEncoderState *b = BrotliEncoderCreateInstance(NULL, NULL, NULL);
		uint8_t *next_out = out;
		size_t avail_out = cap;

		BrotliEncoderSetParameter(b, BROTLI_PARAM_QUALITY, 1);
		while (fed < total) {
			const uint8_t *next_in = zeros;
			size_t avail_in = sizeof(zeros);

			fed += sizeof(zeros);
			while (avail_in || (fed >= total && !BrotliEncoderIsFinished(b)))
				BrotliEncoderCompressStream(b, fed < total ? BROTLI_OPERATION_PROCESS :
									     BROTLI_OPERATION_FINISH,
							    &avail_in, &next_in, &avail_out,
							    &next_out, NULL);
		}
		n = cap - avail_out;
		BrotliEncoderDestroyInstance(b);
	}
	*out_len = n;
	return out;
}

static void test_bombs(void)
{
	static const enum rg_codec cs[] = { RG_CODEC_GZIP, RG_CODEC_ZSTD, RG_CODEC_BR };
	static const char *const names[] = { "gzip", "zstd", "br" };
	struct rg_count_limits lim;
	struct rg_row_counts c;
	size_t i, len;
	double t0;
	int rc;

	rg_count_limits_default(&lim);
	/* 256 MiB of zeros, a few hundred KB compressed: refused at the
	 * default 64 MiB cap, for a streamed (line) and a buffered protocol */
	for (i = 0; i < 3; i++) {
		uint8_t *bomb = zero_bomb(cs[i], 256ULL << 20, &len);

		t0 = now_s();
		rc = rg_count_payload(RG_PAYLOAD_LINE, names[i], NULL, bomb, len, &lim, &c);
		CHECK(rc == -EFBIG && c.err == RG_COUNT_E_TOO_LARGE,
		      "%s bomb (%zu bytes): rc %d %s", names[i], len, rc, c.err_msg);
		rc = rg_count_payload(RG_PAYLOAD_NDJSON, names[i], NULL, bomb, len, &lim, &c);
		CHECK(rc == -EFBIG && c.err == RG_COUNT_E_TOO_LARGE,
		      "%s bomb buffered: rc %d %s", names[i], rc, c.err_msg);
		CHECK(now_s() - t0 < BOMB_MAX_SECONDS, "%s bomb took %.2fs", names[i], now_s() - t0);
		/* a small cap stops it after 1 MiB */
		lim.max_decoded_bytes = 1 << 20;
		t0 = now_s();
		rc = rg_count_payload(RG_PAYLOAD_OTLP_LOGS, names[i], NULL, bomb, len, &lim, &c);
		CHECK(rc == -EFBIG && now_s() - t0 < 1.0, "%s bomb, 1 MiB cap", names[i]);
		CHECK(c.decoded_bytes <= (1 << 20) + RG_DECOMP_CHUNK_BYTES,
		      "stopped at the cap: %llu", (unsigned long long)c.decoded_bytes);
		lim.max_decoded_bytes = 0;
		free(bomb);
	}
	/* 1 KB of snappy whose header claims 4 GiB - 1: refused before allocating */
	{
		uint8_t body[1024];
		size_t n = put_varint(body, 0xffffffffULL); /* snappy's largest */

		memset(body + n, 0, sizeof(body) - n);
		t0 = now_s();
		rc = rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, body, sizeof(body), &lim, &c);
		CHECK(rc == -EFBIG && c.err == RG_COUNT_E_TOO_LARGE && now_s() - t0 < 0.5,
		      "snappy claiming 4 GiB: rc %d %s", rc, c.err_msg);
		/* claims 1000 bytes, holds garbage: corrupt, not a crash */
		n = put_varint(body, 1000);
		rc = rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, body, 20, &lim, &c);
		CHECK(rc == -EBADMSG, "snappy claim with no data");
	}
	/* a gzip trailer (ISIZE) claiming 4 GiB is never trusted: 1 KB body */
	{
		uint8_t *body, *z;
		size_t blen, zlen;

		rg_encode_rows(RG_PAYLOAD_LINE, 10, NULL, &body, &blen);
		rg_compress(RG_CODEC_GZIP, false, body, blen, &z, &zlen);
		z[zlen - 1] = 0xff; /* ISIZE high byte */
		rc = rg_count_payload(RG_PAYLOAD_LINE, "gzip", NULL, z, zlen, &lim, &c);
		CHECK(rc == -EBADMSG, "gzip with a lying ISIZE: %s", c.err_msg);
		free(body);
		free(z);
	}
	/* a zstd frame header claiming 4 GiB of content */
	{
		uint8_t frame[64] = { 0x28, 0xb5, 0x2f, 0xfd, 0xa0 /* FCS 4 bytes, single segment */ };
		size_t fl = 5;

		frame[fl++] = 0; frame[fl++] = 0; frame[fl++] = 0; frame[fl++] = 0xff; /* ~4 GiB */
		/* a raw block of 3 bytes, last block */
		frame[fl++] = (3 << 3) | 1; frame[fl++] = 0; frame[fl++] = 0;
		frame[fl++] = 'a'; frame[fl++] = '\n'; frame[fl++] = 'b';
		t0 = now_s();
		rc = rg_count_payload(RG_PAYLOAD_LINE, "zstd", NULL, frame, fl, &lim, &c);
		CHECK(rc < 0 && now_s() - t0 < 0.5, "zstd claiming 4 GiB: rc %d %s", rc, c.err_msg);
	}
}

/* ------------------------------------------------------------ line protocol */

/* Compressed line protocol counts exactly as rowgate/rows.h over the bytes. */
/* What zlib makes of a cut gzip stream: the reference for body_cut. */
static size_t gunzip_prefix(const uint8_t *z, size_t zlen, uint8_t *out, size_t cap)
{
	z_stream s;
	size_t n;

	memset(&s, 0, sizeof(s));
	if (inflateInit2(&s, 15 + 16) != Z_OK)
		return 0;
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zlen;
	s.next_out = out;
	s.avail_out = (uInt)cap;
	inflate(&s, Z_SYNC_FLUSH);
	n = cap - s.avail_out;
	inflateEnd(&s);
	return n;
}

/* A body whose connection closed inside it (body_cut): line protocol is
 * counted as far as its coding decodes, a begun last line too, as a server
 * inserting while it decodes reads it (docs/design.md#aborted-copies);
 * other protocols fail as before. */
static void test_body_cut(void)
{
	static const struct codec_case cc[] = {
		{ "gzip", RG_CODEC_GZIP, false },
		{ "deflate", RG_CODEC_DEFLATE, false },
		{ "zstd", RG_CODEC_ZSTD, false },
		{ "br", RG_CODEC_BR, false },
	};
	struct rg_count_limits cut, vm;
	struct rg_row_counts c;
	uint8_t *body, *z, *plain = malloc(1 << 20);
	size_t len, zlen, i, at;

	rg_count_limits_default(&cut);
	cut.body_cut = true;
	rg_count_limits_for_profile(&vm, "victoriametrics");
	vm.body_cut = true;
	rg_encode_rows(RG_PAYLOAD_LINE, 3000, NULL, &body, &len);
	for (i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
		uint64_t last = 0;

		rg_compress(cc[i].c, cc[i].framed, body, len, &z, &zlen);
		for (at = 0; at <= zlen; at += zlen / 97 + 1) {
			int rc = rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, at, &cut,
						  &c);

			CHECK(rc == 0 && c.rows >= last && c.rows <= 3000,
			      "%s cut at %zu/%zu: rc %d, %llu rows after %llu (%s)", cc[i].header,
			      at, zlen, rc, (unsigned long long)c.rows, (unsigned long long)last,
			      c.err_msg);
			last = c.rows;
			if (cc[i].c == RG_CODEC_GZIP) {
				struct rg_lp_state st;
				size_t n = gunzip_prefix(z, at, plain, 1 << 20);

				rg_lp_init(&st);
				CHECK_EQ_U64(c.rows, rg_lp_count(&st, plain, n),
					     "gzip cut: zlib's prefix");
				/* victoria-metrics: samples of the same prefix */
				rc = rg_count_payload(RG_PAYLOAD_LINE, "gzip", NULL, z, at, &vm, &c);
				CHECK(rc == 0 && c.rows <= last && c.rows + 1 >= last,
				      "victoria-metrics gzip cut at %zu: %llu samples of %llu lines",
				      at, (unsigned long long)c.rows, (unsigned long long)last);
			}
		}
		rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, zlen, &cut, &c);
		CHECK(c.rows == 3000 && !(c.flags & RG_COUNT_F_CUT),
		      "%s whole, body_cut: %llu rows", cc[i].header, (unsigned long long)c.rows);
		rg_count_payload(RG_PAYLOAD_LINE, cc[i].header, NULL, z, zlen / 2, &cut, &c);
		CHECK(c.flags & RG_COUNT_F_CUT, "%s half: flagged cut", cc[i].header);
		free(z);
	}
	free(body);
	/* a protobuf body cut short still fails: its server reads it whole */
	rg_encode_rows(RG_PAYLOAD_PROM_RW, 300, NULL, &body, &len);
	rg_compress(RG_CODEC_SNAPPY, false, body, len, &z, &zlen);
	CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, NULL, NULL, z, zlen / 2, &cut, &c) < 0 &&
		      c.rows == 0,
	      "prom-rw cut: %s", c.err_msg);
	free(z);
	free(body);
	free(plain);
}

static void test_line_protocol(void)
{
	static const char alphabet[] = "ab \t\r\n#\n\nx=1 ";
	static char buf[20000];
	int iter;

	srandom(61);
	for (iter = 0; iter < 200; iter++) {
		size_t len = rnd(sizeof(buf)), i, zlen;
		struct rg_lp_state st;
		uint64_t want;
		uint8_t *z;
		const struct codec_case *cc = &codecs[iter % (sizeof(codecs) / sizeof(codecs[0]))];

		for (i = 0; i < len; i++)
			buf[i] = alphabet[rnd(sizeof(alphabet) - 1)];
		rg_lp_init(&st);
		want = rg_lp_count(&st, (const uint8_t *)buf, len);
		rg_compress(cc->c, cc->framed, (uint8_t *)buf, len, &z, &zlen);
		CHECK(count(RG_PAYLOAD_LINE, cc->header, NULL, z, zlen, NULL) == (long long)want,
		      "line protocol random %d via %s", iter, cc->header ? cc->header : "none");
		free(z);
	}
}

/* victoria-metrics' rules: Header.Get("Content-Encoding") == "gzip" decodes,
 * anything else is read raw; remote write is snappy whatever the header;
 * NaN samples but the staleness marker are not stored. */
static void test_vm_rules(void)
{
	static const char plain[] = "m f=1,g=2\n #h=3\nbad\nm k=NaN,l=4 5\n";
	struct rg_count_limits vm;
	struct rg_row_counts c;
	const char *raw_ce[] = { NULL, "", "GZIP", "x-gzip", "zstd", "snappy", "gzip, identity",
				 "identity", "\ngzip", "br\ngzip" };
	const char *gz_ce[] = { "gzip", " gzip ", "gzip\nzstd", "gzip \nbr" };
	uint8_t *z;
	size_t zlen, i;

	CHECK(rg_count_limits_for_profile(&vm, "VictoriaMetrics") == 0, "profile name");
	CHECK(rg_count_limits_for_profile(&vm, "mysql") == -EINVAL, "unknown profile");
	CHECK(rg_count_limits_for_profile(&vm, "victoriametrics") == 0, "profile");
	/* the rules the reconciler picks by a body's profile are the named
	 * ones, and the kernel's line rules agree with them */
	for (i = 0; i < RG_PROFILE_MAX; i++) {
		struct rg_count_limits by_id, by_name;

		rg_count_limits_for_profile_id(&by_id, (unsigned int)i);
		CHECK(rg_count_limits_for_profile(&by_name, rg_profile_name((__u32)i)) == 0 &&
			      !memcmp(&by_id, &by_name, sizeof(by_id)),
		      "profile %zu by id and by name", i);
		CHECK(by_id.lp_rows_mode == rg_profile_rows_mode((__u32)i) &&
			      by_id.lp_comment_rule == rg_profile_comment_rule((__u32)i),
		      "profile %zu: decoder and kernel line rules", i);
	}
	for (i = 0; i < sizeof(raw_ce) / sizeof(raw_ce[0]); i++) {
		CHECK(rg_count_payload(RG_PAYLOAD_LINE, raw_ce[i], NULL, plain, strlen(plain),
				       &vm, &c) == 0 && c.rows == 4,
		      "read raw under '%s': %" PRIu64, raw_ce[i] ? raw_ce[i] : "(none)", c.rows);
	}
	CHECK(rg_compress(RG_CODEC_GZIP, false, (const uint8_t *)plain, strlen(plain), &z,
			  &zlen) == 0, "gzip");
	for (i = 0; i < sizeof(gz_ce) / sizeof(gz_ce[0]); i++)
		CHECK(rg_count_payload(RG_PAYLOAD_LINE, gz_ce[i], NULL, z, zlen, &vm, &c) == 0 &&
			      c.rows == 4, "gzip under '%s'", gz_ce[i]);
	/* the same gzip body under another first line is garbage to the server */
	CHECK(rg_count_payload(RG_PAYLOAD_LINE, "GZIP", NULL, z, zlen, &vm, &c) == 0 &&
		      c.rows == 0, "gzip bytes read raw: %" PRIu64, c.rows);
	free(z);
	/* remote write: a series of 4 samples: 1.0, NaN, the staleness marker,
	 * and a NaN with a sign bit (as Go's math.NaN() may come out) */
	{
		static const uint64_t vals[] = { 0x3ff0000000000000ULL, 0x7ff8000000000001ULL,
						 0x7ff0000000000002ULL, 0xfff8000000000000ULL };
		uint8_t ts[128], wr[160], *sz;
		size_t n = 0, m = 0, k, szlen;

		ts[n++] = 0x0a; /* labels: __name__ = "x" */
		ts[n++] = 13;
		ts[n++] = 0x0a; ts[n++] = 8; memcpy(ts + n, "__name__", 8); n += 8;
		ts[n++] = 0x12; ts[n++] = 1; ts[n++] = 'x';
		for (i = 0; i < 4; i++) {
			ts[n++] = 0x12; /* Sample: value (fixed64), timestamp */
			ts[n++] = 11;
			ts[n++] = 0x09;
			for (k = 0; k < 8; k++)
				ts[n++] = (uint8_t)(vals[i] >> (8 * k));
			ts[n++] = 0x10;
			ts[n++] = (uint8_t)(i + 1);
		}
		wr[m++] = 0x0a;
		wr[m++] = (uint8_t)n;
		memcpy(wr + m, ts, n);
		m += n;
		CHECK(rg_compress(RG_CODEC_SNAPPY, false, wr, m, &sz, &szlen) == 0, "snappy");
		CHECK(count(RG_PAYLOAD_PROM_RW, "snappy", NULL, sz, szlen, NULL) == 4,
		      "GreptimeDB stores NaN samples");
		CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, "snappy", NULL, sz, szlen, &vm, &c) == 0 &&
			      c.rows == 2, "victoria-metrics: 1.0 and the staleness marker (%" PRIu64 ")",
		      c.rows);
		/* victoria-metrics ignores the header: always a snappy block */
		CHECK(rg_count_payload(RG_PAYLOAD_PROM_RW, "zstd", NULL, sz, szlen, &vm, &c) == 0 &&
			      c.rows == 2, "snappy whatever the header");
		free(sz);
	}
	/* InfluxDB 1.x: lines, and the same "gzip"-only rule */
	{
		struct rg_count_limits ix;

		CHECK(rg_count_limits_for_profile(&ix, "influxdb") == 0, "influxdb profile");
		CHECK(rg_count_payload(RG_PAYLOAD_LINE, "GZIP", NULL, plain, strlen(plain), &ix,
				       &c) == 0 && c.rows == 3, "influxdb: GZIP read raw");
	}
	/* GreptimeDB's rules: repeated lines form one list */
	CHECK(count(RG_PAYLOAD_LINE, "identity\nidentity", NULL, plain, strlen(plain), NULL) == 3,
	      "identity list over two lines");
}

/* ------------------------------------------------------------ JSON */

struct json_case {
	enum rg_payload_protocol p;
	const char *ct;
	const char *body;
	long long rows;     /* -errno for an error */
	bool refused;
};

/* victoria-metrics files a line under its last non-empty `db` tag, a series
 * under its last non-empty `db` label; GreptimeDB's rules ignore both. */
static void test_vm_db_names(void)
{
	const char *lp = "dt,db=dbt a=1,b=2\ndt,db=,k=1 a=3\ndt,db=x,db=dbt2 a=4\n"
			 "dt c=5\ndt,db=a\\ b\\q x=1\ndt,db=dbt\n";
	struct rg_count_limits vm, gt;
	struct rg_row_counts c;

	rg_count_limits_for_profile_id(&vm, RG_PROFILE_VICTORIAMETRICS);
	rg_count_limits_for_profile_id(&gt, RG_PROFILE_GREPTIMEDB);
	CHECK(rg_count_payload(RG_PAYLOAD_LINE, NULL, NULL, (const uint8_t *)lp, strlen(lp), &vm,
			       &c) == 0, "vm db tags counted");
	CHECK_EQ_U64(c.rows, 6, "vm db tags: samples");
	CHECK_EQ_U64(c.default_rows, 2, "vm db tags: lines without one (or an empty one)");
	CHECK_EQ_U64(rg_row_counts_db(&c, "dbt"), 2, "vm db tag");
	CHECK_EQ_U64(rg_row_counts_db(&c, "dbt2"), 1, "vm db tag: the last one wins");
	CHECK_EQ_U64(rg_row_counts_db(&c, "x"), 0, "vm db tag: an earlier one loses");
	CHECK_EQ_U64(rg_row_counts_db(&c, "a b\\q"), 1, "vm db tag unescaped as victoria-metrics does");
	CHECK(rg_count_payload(RG_PAYLOAD_LINE, NULL, NULL, (const uint8_t *)lp, strlen(lp), &gt,
			       &c) == 0 && c.n_dbs == 0 && c.default_rows == 6,
	      "greptimedb: a db tag is a tag");
}

static void test_json_rules(void)
{
	static const struct json_case t[] = {
		/* Loki JSON */
		{ RG_PAYLOAD_LOKI_JSON, NULL, "{\"streams\":[]}", 0, false },
		{ RG_PAYLOAD_LOKI, "application/json",
		  "{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"x\"],[\"2\",\"y\",{\"k\":\"v\"}]]},"
		  "{\"stream\":{},\"values\":[[\"3\",\"z\"]]}]}", 3, false },
		{ RG_PAYLOAD_LOKI_JSON, NULL, "{\"streams\":{}}", -EBADMSG, false },
		{ RG_PAYLOAD_LOKI_JSON, NULL, "{\"streams\":[{\"values\":[\"x\"]}]}", -EBADMSG, false },
		{ RG_PAYLOAD_LOKI_JSON, NULL, "{\"streams\":[", -EBADMSG, false },
		/* OpenTSDB */
		{ RG_PAYLOAD_OPENTSDB, NULL, "{\"metric\":\"m\",\"timestamp\":1,\"value\":1,\"tags\":{}}", 1, false },
		{ RG_PAYLOAD_OPENTSDB, NULL, "[{\"metric\":\"m\"},{\"metric\":\"n\"}]", 2, false },
		{ RG_PAYLOAD_OPENTSDB, NULL, "[]", 0, false },
		{ RG_PAYLOAD_OPENTSDB, NULL, "[1]", -EBADMSG, false },
		{ RG_PAYLOAD_OPENTSDB, NULL, "42", -EBADMSG, false },
		/* Elasticsearch bulk */
		{ RG_PAYLOAD_ES_BULK, NULL,
		  "{\"index\":{\"_index\":\"t\"}}\n{\"a\":1}\n{\"create\":{}}\n{\"b\":2}\n", 2, false },
		{ RG_PAYLOAD_ES_BULK, NULL, "{\"create\":{}} {\"a\":1} {\"create\":{}}", 1, false },
		{ RG_PAYLOAD_ES_BULK, NULL, "{\"index\":{}}\n{\"a\":1}\n{\"delete\":{\"_id\":\"1\"}}\n",
		  0, true },
		{ RG_PAYLOAD_ES_BULK, NULL, "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{}}\n", 0, true },
		{ RG_PAYLOAD_ES_BULK, NULL, "{\"index\":{\"_index\":5}}\n{}\n", 0, true },
		{ RG_PAYLOAD_ES_BULK, NULL, "\n \n", 0, true },
		{ RG_PAYLOAD_ES_BULK, NULL, "{\"index\":{}}\n{\"a\":", -EBADMSG, false },
		/* /v1/ingest */
		{ RG_PAYLOAD_NDJSON, "application/x-ndjson", "{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}", 3, false },
		{ RG_PAYLOAD_NDJSON, "application/json", "[{\"a\":1},{\"a\":2}]", 2, false },
		{ RG_PAYLOAD_NDJSON, NULL, "[{\"a\":1},{\"a\":2}] {\"b\":1}", 3, false },
		{ RG_PAYLOAD_NDJSON, NULL, "[1]", -EBADMSG, false },
		{ RG_PAYLOAD_NDJSON, NULL, "{\"a\":1}\nnot json\n", -EBADMSG, false },
		{ RG_PAYLOAD_NDJSON, "text/plain", "a\n\nb\r\n\r\nc", 3, false },
		{ RG_PAYLOAD_NDJSON, "text/plain; charset=utf-8", "  \n", 1, false },
		{ RG_PAYLOAD_NDJSON, "text/plain", "", 0, false },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct rg_row_counts c;
		long long got = count(t[i].p, NULL, t[i].ct, t[i].body, strlen(t[i].body), &c);

		CHECK(got == t[i].rows, "json case %zu (%s): got %lld want %lld (%s)", i,
		      rg_payload_protocol_name(t[i].p), got, t[i].rows, c.err_msg);
		if (got >= 0)
			CHECK(!!(c.flags & RG_COUNT_F_SERVER_REFUSES) == t[i].refused,
			      "json case %zu refused flag", i);
	}
}

/* ------------------------------------------------------------ fixture files */

/*
 * An Arrow IPC Message flatbuffer as Arrow writers lay it out: the root
 * offset, the Message's vtable and table { version, header_type, header,
 * bodyLength }, the RecordBatch's vtable and table { length }.  Returns its
 * length; *rb_at: where the RecordBatch table starts.
 */
static size_t arrow_msg(uint8_t *b, uint8_t header_type, uint64_t rows, uint64_t body_len)
{
	/* root 0-3, vtable 4-15, table 16-35, vtable 36-41 (+2), table 44-55 */
	static const uint8_t tmpl[56] = {
		16, 0, 0, 0,				    /* root: the Message at 16 */
		12, 0, 20, 0, 4, 0, 6, 0, 8, 0, 12, 0,	    /* vtable: 4 fields */
		12, 0, 0, 0,				    /* soffset 16 - 4 */
		5, 0, 0, 0,				    /* version V5, header_type */
		20, 0, 0, 0,				    /* header: 24 + 20 = 44 */
		0, 0, 0, 0, 0, 0, 0, 0,			    /* bodyLength */
		6, 0, 12, 0, 4, 0, 0, 0,		    /* vtable: length */
		8, 0, 0, 0,				    /* soffset 44 - 36 */
		0, 0, 0, 0, 0, 0, 0, 0,			    /* length */
	};
	int i;

	memcpy(b, tmpl, sizeof(tmpl));
	b[22] = header_type;
	for (i = 0; i < 8; i++) {
		b[28 + i] = (uint8_t)(body_len >> (8 * i));
		b[48 + i] = (uint8_t)(rows >> (8 * i));
	}
	return sizeof(tmpl);
}

/* FlightData { data_header = 2; data_body = 1000 } around them. */
static size_t flight_data(uint8_t *out, const uint8_t *hdr, size_t hdr_len, size_t body_len)
{
	size_t n = 0;

	out[n++] = 0x12;
	out[n++] = (uint8_t)hdr_len; /* under 128 here */
	memcpy(out + n, hdr, hdr_len);
	n += hdr_len;
	out[n++] = 0xc2; /* field 1000, length-delimited: varint 8002 */
	out[n++] = 0x3e;
	out[n++] = (uint8_t)body_len;
	memset(out + n, 0xab, body_len);
	return n + body_len;
}

/* The error class of counting a FlightData (RG_COUNT_OK: counted). */
static int flight_err(const uint8_t *fd, size_t n)
{
	struct rg_row_counts c;

	if (rg_count_payload(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, NULL, &c) &&
	    c.err == RG_COUNT_OK)
		return RG_COUNT_E__COUNT; /* failed without a class */
	return c.err;
}

/* DoPut FlightData: a RecordBatch's length counts, a Schema's nothing; a
 * header that lies outside its bytes or a body shorter than the message
 * says is malformed (the estimate stands), at every cut. */
static void test_arrow_flight(void)
{
	uint8_t hdr[64], fd[256];
	struct rg_row_counts c;
	size_t hn, n, cut;

	hn = arrow_msg(hdr, 3, 1234, 64);
	n = flight_data(fd, hdr, hn, 64);
	CHECK_EQ_U64(count(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, &c), 1234,
		     "a RecordBatch of 1234 rows");
	CHECK_EQ_U64(c.default_rows, 1234, "in the request's database");
	n = flight_data(fd, hdr, hn, 100);
	CHECK_EQ_U64(count(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, NULL), 1234,
		     "a longer body: counted");
	n = flight_data(fd, hdr, hn, 63);
	CHECK(flight_err(fd, n) == RG_COUNT_E_MALFORMED,
	      "a body shorter than bodyLength: malformed");
	hn = arrow_msg(hdr, 1, 1234, 0);
	n = flight_data(fd, hdr, hn, 0);
	CHECK_EQ_U64(count(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, NULL), 0,
		     "a Schema message: no rows");
	hn = arrow_msg(hdr, 3, 0, 0);
	n = flight_data(fd, hdr, hn, 0);
	CHECK_EQ_U64(count(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, NULL), 0,
		     "an empty RecordBatch");
	hn = arrow_msg(hdr, 3, 1ULL << 63, 0);
	n = flight_data(fd, hdr, hn, 0);
	CHECK(flight_err(fd, n) == RG_COUNT_E_MALFORMED,
	      "a negative length: malformed");
	/* every cut of the header leaves the RecordBatch outside it */
	hn = arrow_msg(hdr, 3, 77, 8);
	for (cut = 0; cut < hn; cut++) {
		n = flight_data(fd, hdr, cut, 8);
		CHECK(flight_err(fd, n) == RG_COUNT_E_MALFORMED,
		      "data_header cut at %zu: malformed", cut);
	}
	/* offsets that point out: the vtable, the header */
	hn = arrow_msg(hdr, 3, 77, 8);
	hdr[16] = 0xf0; /* soffset: the vtable past the end */
	n = flight_data(fd, hdr, hn, 8);
	CHECK(flight_err(fd, n) == RG_COUNT_E_MALFORMED,
	      "a vtable outside: malformed");
	hn = arrow_msg(hdr, 3, 77, 8);
	hdr[24] = 0x7f; /* header offset past the end */
	n = flight_data(fd, hdr, hn, 8);
	CHECK(flight_err(fd, n) == RG_COUNT_E_MALFORMED,
	      "a RecordBatch outside: malformed");
	hn = arrow_msg(hdr, 3, 77, 8);
	hdr[10] = 0; /* header_type absent: its default, NONE */
	n = flight_data(fd, hdr, hn, 8);
	CHECK_EQ_U64(count(RG_PAYLOAD_ARROW_FLIGHT, NULL, NULL, fd, n, NULL), 0,
		     "no header type: no rows");
	n = flight_data(fd, hdr, 0, 0);
	CHECK(flight_err(fd + 2, n - 2) == RG_COUNT_E_MALFORMED,
	      "no data_header: malformed");
}

static void test_fixture_files(void)
{
	char path[512], line[512];
	FILE *m;
	int n = 0;

	snprintf(path, sizeof(path), "%s/manifest.txt", RG_FIXTURE_DIR);
	m = fopen(path, "r");
	CHECK(m != NULL, "open %s", path);
	if (!m)
		return;
	while (fgets(line, sizeof(line), m)) {
		char file[128], proto[32], enc[32], ct[64];
		long long want;
		unsigned long long want_default;
		struct rg_row_counts c;
		uint8_t *body;
		size_t len;
		FILE *f;
		long sz;

		if (line[0] == '#' || sscanf(line, "%127s %31s %31s %63s %lld %llu", file, proto,
					     enc, ct, &want, &want_default) != 6)
			continue;
		snprintf(path, sizeof(path), "%s/%s", RG_FIXTURE_DIR, file);
		f = fopen(path, "rb");
		CHECK(f != NULL, "open %s", path);
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		sz = ftell(f);
		fseek(f, 0, SEEK_SET);
		body = malloc(sz ? (size_t)sz : 1);
		len = fread(body, 1, (size_t)sz, f);
		fclose(f);
		CHECK(count(rg_payload_protocol_parse(proto), strcmp(enc, "-") ? enc : NULL,
			    strcmp(ct, "-") ? ct : NULL, body, len, &c) == want,
		      "fixture %s: got %lld want %lld (%s)", file, (long long)(c.err ? -1 : (long long)c.rows),
		      want, c.err_msg);
		if (want >= 0)
			CHECK_EQ_U64(c.default_rows, want_default, file);
		free(body);
		n++;
	}
	fclose(m);
	CHECK(n >= 40, "only %d fixtures", n);
}

int main(void)
{
	test_protocol_names();
	test_codecs();
	test_coding_chain();
	test_prom_random();
	test_prom_db_rules();
	test_prom_db_name_nul();
	test_prom_native_histograms();
	test_otlp_metrics_random();
	test_otlp_rules();
	test_otlp_wire();
	test_logs_traces_loki_random();
	test_truncated_protobuf();
	test_fuzz_protobuf();
	test_corrupt_and_truncated();
	test_bombs();
	test_line_protocol();
	test_body_cut();
	test_vm_rules();
	test_vm_db_names();
	test_json_rules();
	test_arrow_flight();
	test_fixture_files();
	return check_report("decode");
}
