// SPDX-License-Identifier: MIT
/* Payloads with a known row count, built with the protobuf-c code generated
 * from proto/ and the real compressors (see encode.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <brotli/encode.h>
#include <snappy-c.h>
#include "proto/prometheus_remote.pb-c.h"
#include "proto/otlp.pb-c.h"
#include "proto/loki_push.pb-c.h"
#include "encode.h"

/* 2024-01-01T00:00:00Z in ms: a fixed instant keeps bodies reproducible. */
#define RG_ENC_DEFAULT_TS_MS 1704067200000ULL
/* Rows per series/stream/metric when opts.series is 0. */
#define RG_ENC_ROWS_PER_GROUP 100
/* The snappy framing format's largest chunk of input. */
#define RG_SNAPPY_FRAME_IN_BYTES 65536U

static int pack_msg(const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	*out = malloc(n ? n : 1);
	if (!*out)
		return -ENOMEM;
	*len = protobuf_c_message_pack(m, *out);
	return *len == n ? 0 : -EIO;
}

static uint32_t groups_of(uint64_t rows, const struct rg_encode_opts *o)
{
	uint64_t g = o && o->series ? o->series :
				      (rows + RG_ENC_ROWS_PER_GROUP - 1) / RG_ENC_ROWS_PER_GROUP;

	if (g == 0)
		g = 1;
	return g > UINT32_MAX ? UINT32_MAX : (uint32_t)g;
}

/* Rows of group i when rows are spread over g groups. */
static uint64_t share(uint64_t rows, uint32_t g, uint32_t i)
{
	return rows / g + (i < rows % g ? 1 : 0);
}

static int enc_prom(uint64_t rows, const struct rg_encode_opts *o, const char *metric,
		    uint64_t ts, uint8_t **out, size_t *len)
{
	uint32_t g = groups_of(rows, o), i;
	Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
	Prometheus__TimeSeries *ts_arr = calloc(g, sizeof(*ts_arr));
	Prometheus__TimeSeries **ts_ptr = calloc(g, sizeof(*ts_ptr));
	Prometheus__Sample *samples = calloc(rows ? rows : 1, sizeof(*samples));
	Prometheus__Sample **sample_ptr = calloc(rows ? rows : 1, sizeof(*sample_ptr));
	Prometheus__Label *labels = calloc((size_t)g * 3, sizeof(*labels));
	Prometheus__Label **label_ptr = calloc((size_t)g * 3, sizeof(*label_ptr));
	char (*inst)[24] = calloc(g, sizeof(*inst));
	uint64_t k = 0;
	int err = -ENOMEM;

	if (!ts_arr || !ts_ptr || !samples || !sample_ptr || !labels || !label_ptr || !inst)
		goto out;
	for (i = 0; i < g; i++) {
		Prometheus__TimeSeries *t = &ts_arr[i];
		Prometheus__Label *l = &labels[(size_t)i * 3];
		uint64_t n = share(rows, g, i), j;
		size_t nl = 0;

		prometheus__time_series__init(t);
		snprintf(inst[i], sizeof(inst[i]), "i%u", i);
		prometheus__label__init(&l[nl]);
		l[nl].name = "__name__";
		l[nl++].value = (char *)metric;
		if (o && o->db_label) {
			prometheus__label__init(&l[nl]);
			l[nl].name = "x_greptime_database";
			l[nl++].value = (char *)o->db_label;
		}
		prometheus__label__init(&l[nl]);
		l[nl].name = "instance";
		l[nl++].value = inst[i];
		for (j = 0; j < nl; j++)
			label_ptr[(size_t)i * 3 + j] = &l[j];
		t->labels = &label_ptr[(size_t)i * 3];
		t->n_labels = nl;
		t->samples = &sample_ptr[k];
		t->n_samples = n;
		for (j = 0; j < n; j++, k++) {
			prometheus__sample__init(&samples[k]);
			samples[k].value = (double)k;
			samples[k].timestamp = (int64_t)(ts + j);
			sample_ptr[k] = &samples[k];
		}
		ts_ptr[i] = t;
	}
	req.timeseries = ts_ptr;
	req.n_timeseries = g;
	err = pack_msg(&req.base, out, len);
out:
	free(ts_arr);
	free(ts_ptr);
	free(samples);
	free(sample_ptr);
	free(labels);
	free(label_ptr);
	free(inst);
	return err;
}

/* The resource of every OTLP body: service.name = rowgate-encoder. */
struct otlp_res {
	Rowgate__Otlp__Resource r;
	Rowgate__Otlp__KeyValue kv, *kvp[1];
	Rowgate__Otlp__AnyValue val;
};

static Rowgate__Otlp__Resource *resource(struct otlp_res *o)
{
	rowgate__otlp__resource__init(&o->r);
	rowgate__otlp__key_value__init(&o->kv);
	rowgate__otlp__any_value__init(&o->val);
	o->val.value_case = ROWGATE__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	o->val.string_value = "rowgate-encoder";
	o->kv.key = "service.name";
	o->kv.value = &o->val;
	o->kvp[0] = &o->kv;
	o->r.attributes = o->kvp;
	o->r.n_attributes = 1;
	return &o->r;
}

static int enc_otlp_metrics(uint64_t rows, const struct rg_encode_opts *o,
			    const char *metric, uint64_t ts, uint8_t **out, size_t *len)
{
	uint32_t g = groups_of(rows, o), i;
	Rowgate__Otlp__ExportMetricsServiceRequest req =
		ROWGATE__OTLP__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	Rowgate__Otlp__ResourceMetrics rm = ROWGATE__OTLP__RESOURCE_METRICS__INIT, *rmp = &rm;
	Rowgate__Otlp__ScopeMetrics sm = ROWGATE__OTLP__SCOPE_METRICS__INIT, *smp = &sm;
	struct otlp_res res;
	Rowgate__Otlp__Metric *m = calloc(g, sizeof(*m));
	Rowgate__Otlp__Metric **mp = calloc(g, sizeof(*mp));
	Rowgate__Otlp__Gauge *ga = calloc(g, sizeof(*ga));
	Rowgate__Otlp__NumberDataPoint *dp = calloc(rows ? rows : 1, sizeof(*dp));
	Rowgate__Otlp__NumberDataPoint **dpp = calloc(rows ? rows : 1, sizeof(*dpp));
	char (*names)[80] = calloc(g, sizeof(*names));
	uint64_t k = 0;
	int err = -ENOMEM;

	if (!m || !mp || !ga || !dp || !dpp || !names)
		goto out;
	for (i = 0; i < g; i++) {
		uint64_t n = share(rows, g, i), j;

		rowgate__otlp__metric__init(&m[i]);
		rowgate__otlp__gauge__init(&ga[i]);
		snprintf(names[i], sizeof(names[i]), "%s_%u", metric, i);
		m[i].name = names[i];
		m[i].data_case = ROWGATE__OTLP__METRIC__DATA_GAUGE;
		m[i].gauge = &ga[i];
		ga[i].data_points = &dpp[k];
		ga[i].n_data_points = n;
		for (j = 0; j < n; j++, k++) {
			rowgate__otlp__number_data_point__init(&dp[k]);
			dp[k].has_time_unix_nano = 1;
			dp[k].time_unix_nano = (ts + j) * 1000000ULL;
			dp[k].value_case = ROWGATE__OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
			dp[k].as_double = (double)k;
			dpp[k] = &dp[k];
		}
		mp[i] = &m[i];
	}
	sm.metrics = mp;
	sm.n_metrics = g;
	rm.resource = resource(&res);
	rm.scope_metrics = &smp;
	rm.n_scope_metrics = 1;
	req.resource_metrics = &rmp;
	req.n_resource_metrics = 1;
	err = pack_msg(&req.base, out, len);
out:
	free(m);
	free(mp);
	free(ga);
	free(dp);
	free(dpp);
	free(names);
	return err;
}

static int enc_otlp_logs(uint64_t rows, uint64_t ts, uint8_t **out, size_t *len)
{
	Rowgate__Otlp__ExportLogsServiceRequest req =
		ROWGATE__OTLP__EXPORT_LOGS_SERVICE_REQUEST__INIT;
	Rowgate__Otlp__ResourceLogs rl = ROWGATE__OTLP__RESOURCE_LOGS__INIT, *rlp = &rl;
	Rowgate__Otlp__ScopeLogs sl = ROWGATE__OTLP__SCOPE_LOGS__INIT, *slp = &sl;
	struct otlp_res res;
	Rowgate__Otlp__AnyValue body = ROWGATE__OTLP__ANY_VALUE__INIT;
	Rowgate__Otlp__LogRecord *lr = calloc(rows ? rows : 1, sizeof(*lr));
	Rowgate__Otlp__LogRecord **lrp = calloc(rows ? rows : 1, sizeof(*lrp));
	uint64_t k;
	int err = -ENOMEM;

	if (!lr || !lrp)
		goto out;
	body.value_case = ROWGATE__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	body.string_value = "GET /index.html 200";
	for (k = 0; k < rows; k++) {
		rowgate__otlp__log_record__init(&lr[k]);
		lr[k].has_time_unix_nano = 1;
		lr[k].time_unix_nano = (ts + k) * 1000000ULL;
		lr[k].has_severity_number = 1;
		lr[k].severity_number = 9;
		lr[k].severity_text = "INFO";
		lr[k].body = &body;
		lrp[k] = &lr[k];
	}
	sl.log_records = lrp;
	sl.n_log_records = rows;
	rl.resource = resource(&res);
	rl.scope_logs = &slp;
	rl.n_scope_logs = 1;
	req.resource_logs = &rlp;
	req.n_resource_logs = 1;
	err = pack_msg(&req.base, out, len);
out:
	free(lr);
	free(lrp);
	return err;
}

static int enc_otlp_traces(uint64_t rows, uint64_t ts, uint8_t **out, size_t *len)
{
	static uint8_t trace_id[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	Rowgate__Otlp__ExportTraceServiceRequest req =
		ROWGATE__OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
	Rowgate__Otlp__ResourceSpans rs = ROWGATE__OTLP__RESOURCE_SPANS__INIT, *rsp = &rs;
	Rowgate__Otlp__ScopeSpans ss = ROWGATE__OTLP__SCOPE_SPANS__INIT, *ssp = &ss;
	struct otlp_res res;
	Rowgate__Otlp__Span *sp = calloc(rows ? rows : 1, sizeof(*sp));
	Rowgate__Otlp__Span **spp = calloc(rows ? rows : 1, sizeof(*spp));
	uint64_t *ids = calloc(rows ? rows : 1, sizeof(*ids));
	uint64_t k;
	int err = -ENOMEM;

	if (!sp || !spp || !ids)
		goto out;
	for (k = 0; k < rows; k++) {
		rowgate__otlp__span__init(&sp[k]);
		ids[k] = k + 1;
		sp[k].has_trace_id = 1;
		sp[k].trace_id.data = trace_id;
		sp[k].trace_id.len = sizeof(trace_id);
		sp[k].has_span_id = 1;
		sp[k].span_id.data = (uint8_t *)&ids[k];
		sp[k].span_id.len = sizeof(ids[k]);
		sp[k].name = "GET /";
		sp[k].has_start_time_unix_nano = 1;
		sp[k].start_time_unix_nano = (ts + k) * 1000000ULL;
		sp[k].has_end_time_unix_nano = 1;
		sp[k].end_time_unix_nano = (ts + k + 1) * 1000000ULL;
		spp[k] = &sp[k];
	}
	ss.spans = spp;
	ss.n_spans = rows;
	rs.resource = resource(&res);
	rs.scope_spans = &ssp;
	rs.n_scope_spans = 1;
	req.resource_spans = &rsp;
	req.n_resource_spans = 1;
	err = pack_msg(&req.base, out, len);
out:
	free(sp);
	free(spp);
	free(ids);
	return err;
}

static int enc_loki_proto(uint64_t rows, const struct rg_encode_opts *o,
			  const char *metric, uint64_t ts, uint8_t **out, size_t *len)
{
	uint32_t g = groups_of(rows, o), i;
	Logproto__PushRequest req = LOGPROTO__PUSH_REQUEST__INIT;
	Logproto__StreamAdapter *st = calloc(g, sizeof(*st));
	Logproto__StreamAdapter **stp = calloc(g, sizeof(*stp));
	Logproto__EntryAdapter *en = calloc(rows ? rows : 1, sizeof(*en));
	Logproto__EntryAdapter **enp = calloc(rows ? rows : 1, sizeof(*enp));
	Logproto__Timestamp *tsm = calloc(rows ? rows : 1, sizeof(*tsm));
	char (*labels)[96] = calloc(g, sizeof(*labels));
	uint64_t k = 0;
	int err = -ENOMEM;

	if (!st || !stp || !en || !enp || !tsm || !labels)
		goto out;
	for (i = 0; i < g; i++) {
		uint64_t n = share(rows, g, i), j;

		logproto__stream_adapter__init(&st[i]);
		snprintf(labels[i], sizeof(labels[i]), "{job=\"%.40s\", stream=\"%u\"}",
			 metric, i);
		st[i].labels = labels[i];
		st[i].entries = &enp[k];
		st[i].n_entries = n;
		for (j = 0; j < n; j++, k++) {
			uint64_t ns = (ts + j) * 1000000ULL;

			logproto__entry_adapter__init(&en[k]);
			logproto__timestamp__init(&tsm[k]);
			tsm[k].seconds = (int64_t)(ns / 1000000000ULL);
			tsm[k].nanos = (int32_t)(ns % 1000000000ULL);
			en[k].timestamp = &tsm[k];
			en[k].line = "level=info msg=\"request served\"";
			enp[k] = &en[k];
		}
		stp[i] = &st[i];
	}
	req.streams = stp;
	req.n_streams = g;
	err = pack_msg(&req.base, out, len);
out:
	free(st);
	free(stp);
	free(en);
	free(enp);
	free(tsm);
	free(labels);
	return err;
}

/* Text bodies: a growable buffer and printf into it. */
struct tbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void tprintf(struct tbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tprintf(struct tbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->p && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap * 2 : 4096;
			char *np;

			while (cap < b->len + (size_t)n + 1)
				cap *= 2;
			np = realloc(b->p, cap);
			if (!np) {
				b->err = -ENOMEM;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

static int enc_text(enum rg_payload_protocol p, uint64_t rows, const char *metric,
		    uint64_t ts, uint8_t **out, size_t *len)
{
	struct tbuf b = { 0 };
	uint64_t k;

	switch (p) {
	case RG_PAYLOAD_LINE:
		for (k = 0; k < rows; k++)
			tprintf(&b, "%s,host=h%" PRIu64 " usage=%" PRIu64 "i %" PRIu64 "000000\n",
				metric, k % 64, k, ts + k);
		break;
	case RG_PAYLOAD_LOKI_JSON:
		tprintf(&b, "{\"streams\":[{\"stream\":{\"job\":\"%s\"},\"values\":[", metric);
		for (k = 0; k < rows; k++)
			tprintf(&b, "%s[\"%" PRIu64 "000000\",\"line %" PRIu64 "\"]",
				k ? "," : "", ts + k, k);
		tprintf(&b, "]}]}\n");
		break;
	case RG_PAYLOAD_ES_BULK:
		for (k = 0; k < rows; k++)
			tprintf(&b, "{\"create\":{\"_index\":\"%s\"}}\n{\"message\":\"line %" PRIu64
				    "\",\"@timestamp\":%" PRIu64 "}\n", metric, k, ts + k);
		break;
	case RG_PAYLOAD_NDJSON:
		for (k = 0; k < rows; k++)
			tprintf(&b, "{\"message\":\"line %" PRIu64 "\",\"ts\":%" PRIu64 "}\n",
				k, ts + k);
		break;
	case RG_PAYLOAD_OPENTSDB:
		tprintf(&b, "[");
		for (k = 0; k < rows; k++)
			tprintf(&b, "%s{\"metric\":\"%s\",\"timestamp\":%" PRIu64
				    ",\"value\":%" PRIu64 ",\"tags\":{\"host\":\"h%" PRIu64 "\"}}",
				k ? "," : "", metric, ts + k, k, k % 64);
		tprintf(&b, "]");
		break;
	default:
		return -EINVAL;
	}
	if (b.err) {
		free(b.p);
		return b.err;
	}
	if (!b.p) {
		b.p = malloc(1);
		if (!b.p)
			return -ENOMEM;
	}
	*out = (uint8_t *)b.p;
	*len = b.len;
	return 0;
}

int rg_encode_rows(enum rg_payload_protocol p, uint64_t rows,
		   const struct rg_encode_opts *o, uint8_t **out, size_t *len)
{
	const char *metric = o && o->metric ? o->metric : "rg_test";
	uint64_t ts = o && o->ts_ms ? o->ts_ms : RG_ENC_DEFAULT_TS_MS;

	*out = NULL;
	*len = 0;
	switch (p) {
	case RG_PAYLOAD_PROM_RW:
		return enc_prom(rows, o, metric, ts, out, len);
	case RG_PAYLOAD_OTLP_METRICS:
		return enc_otlp_metrics(rows, o, metric, ts, out, len);
	case RG_PAYLOAD_OTLP_LOGS:
		return enc_otlp_logs(rows, ts, out, len);
	case RG_PAYLOAD_OTLP_TRACES:
		return enc_otlp_traces(rows, ts, out, len);
	case RG_PAYLOAD_LOKI:
	case RG_PAYLOAD_LOKI_PROTO:
		return enc_loki_proto(rows, o, metric, ts, out, len);
	default:
		return enc_text(p, rows, metric, ts, out, len);
	}
}

static int comp_zlib(int wbits, const uint8_t *in, size_t n, uint8_t **out,
		     size_t *out_len)
{
	z_stream z;
	size_t cap = deflateBound(NULL, n) + 64;
	uint8_t *buf;
	int zr;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, n);
	buf = malloc(cap ? cap : 1);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	zr = deflate(&z, Z_FINISH);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

static int comp_snappy_framed(const uint8_t *in, size_t n, uint8_t **out,
			      size_t *out_len)
{
	size_t chunks = n / RG_SNAPPY_FRAME_IN_BYTES + 1;
	size_t cap = sizeof(rg_snappy_stream_id) +
		     chunks * (8 + snappy_max_compressed_length(RG_SNAPPY_FRAME_IN_BYTES));
	uint8_t *buf = malloc(cap), *w;
	size_t off = 0;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, rg_snappy_stream_id, sizeof(rg_snappy_stream_id));
	w = buf + sizeof(rg_snappy_stream_id);
	while (off < n) {
		size_t in_n = n - off > RG_SNAPPY_FRAME_IN_BYTES ? RG_SNAPPY_FRAME_IN_BYTES : n - off;
		size_t clen = snappy_max_compressed_length(in_n);
		uint32_t crc = rg_snappy_mask_crc(rg_crc32c(0, in + off, in_n));
		size_t body;

		if (snappy_compress((const char *)in + off, in_n, (char *)w + 8, &clen) !=
		    SNAPPY_OK) {
			free(buf);
			return -EIO;
		}
		if (clen < in_n) {
			w[0] = 0x00;
			body = clen + 4;
		} else {          /* incompressible: an uncompressed chunk */
			w[0] = 0x01;
			memcpy(w + 8, in + off, in_n);
			body = in_n + 4;
		}
		w[1] = body & 0xff;
		w[2] = (body >> 8) & 0xff;
		w[3] = (body >> 16) & 0xff;
		w[4] = crc & 0xff;
		w[5] = (crc >> 8) & 0xff;
		w[6] = (crc >> 16) & 0xff;
		w[7] = crc >> 24;
		w += 4 + body;
		off += in_n;
	}
	*out = buf;
	*out_len = (size_t)(w - buf);
	return 0;
}

int rg_compress(enum rg_codec c, bool framed, const uint8_t *in, size_t n,
		uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	switch (c) {
	case RG_CODEC_IDENTITY:
		*out = malloc(n ? n : 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out, in, n);
		*out_len = n;
		return 0;
	case RG_CODEC_GZIP:
		return comp_zlib(15 + 16, in, n, out, out_len);
	case RG_CODEC_DEFLATE:
		return comp_zlib(15, in, n, out, out_len);
	case RG_CODEC_ZSTD: {
		size_t cap = ZSTD_compressBound(n), r;

		*out = malloc(cap ? cap : 1);
		if (!*out)
			return -ENOMEM;
		r = ZSTD_compress(*out, cap, in, n, 3);
		if (ZSTD_isError(r)) {
			free(*out);
			*out = NULL;
			return -EIO;
		}
		*out_len = r;
		return 0;
	}
	case RG_CODEC_BR: {
		size_t cap = BrotliEncoderMaxCompressedSize(n);

		if (!cap)
			cap = n + 1024;
		*out = malloc(cap);
		if (!*out)
			return -ENOMEM;
		*out_len = cap;
		if (!BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC,
					   n, in, out_len, *out)) {
			free(*out);
			*out = NULL;
			return -EIO;
		}
		return 0;
	}
	case RG_CODEC_SNAPPY: {
		size_t cap;

		if (framed)
			return comp_snappy_framed(in, n, out, out_len);
		cap = snappy_max_compressed_length(n);
		*out = malloc(cap ? cap : 1);
		if (!*out)
			return -ENOMEM;
		*out_len = cap;
		if (snappy_compress((const char *)in, n, (char *)*out, out_len) != SNAPPY_OK) {
			free(*out);
			*out = NULL;
			return -EIO;
		}
		return 0;
	}
	default:
		return -EINVAL;
	}
}
