// SPDX-License-Identifier: MIT
/* Row counting over the protobuf wire format, without building messages.
 *
 * Why a walker and not protobuf-c's unpack: unpacking a 64 MiB remote-write
 * body allocates every series, label, string and sample (several times the
 * body), and protobuf-c replaces a repeated oneof member where the protobuf
 * spec and prost (GreptimeDB's decoder) merge it.  The walker allocates
 * nothing, follows prost's rules (wire types of known fields checked, unknown
 * fields and groups skipped, varints at most 10 bytes, lengths within their
 * parent), and is proven equal to a protobuf-c based reference on
 * protobuf-c encoded fixtures (tests/unit/test_decode.c).
 *
 * What is validated: every message on the path to a counted element, and
 * the counted element's own fields.  Not validated: the inside of fields
 * that do not affect the count (attributes, resources, exemplars, ...) and
 * UTF-8 of strings; a body the server refuses only for those counts as if
 * it were accepted.
 */
#include <string.h>
#include "internal.h"

/* prost's default recursion limit, applied to nested unknown groups. */
#define RG_PB_MAX_GROUP_DEPTH 100

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4,
       WT_I32 = 5 };
#define M(wt) (1U << (wt))

struct pbr {
	const uint8_t *p, *end;
};

/* One field: its number, wire type, and for WT_LEN its payload. */
struct pbf {
	uint32_t num;
	uint32_t wt;
	struct pbr sub;   /* WT_LEN payload; also the raw bytes of I64/I32 */
	uint64_t v;       /* WT_VARINT value */
};

static inline int pb_varint(struct pbr *r, uint64_t *out)
{
	const uint8_t *p = r->p;
	uint64_t v = 0;
	int i;

	if (p < r->end && *p < 0x80) {
		*out = *p;
		r->p = p + 1;
		return 0;
	}
	for (i = 0; i < 10; i++) {
		uint8_t b;

		if (p == r->end)
			return -1;
		b = *p++;
		if (i == 9 && b > 1)
			return -1; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			r->p = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int pb_skip_group(struct pbr *r, uint32_t num, int depth);

/* The next n bytes of r as f's payload: 0, or -1 if r ends before. */
static int pb_take(struct pbr *r, struct pbf *f, uint64_t n)
{
	if (n > (uint64_t)(r->end - r->p))
		return -1;
	f->sub.p = r->p;
	f->sub.end = r->p + n;
	r->p += n;
	return 0;
}

/* Read the next field; returns 0, or -1 with *why set. */
static int pb_next(struct pbr *r, struct pbf *f, const char **why)
{
	uint64_t key, len;

	if (pb_varint(r, &key)) {
		*why = "truncated or overlong field key";
		return -1;
	}
	if (key > UINT32_MAX) {
		*why = "field key out of range";
		return -1;
	}
	f->wt = (uint32_t)key & 7;
	f->num = (uint32_t)key >> 3;
	if (f->num == 0) {
		*why = "field number 0";
		return -1;
	}
	switch (f->wt) {
	case WT_VARINT:
		if (pb_varint(r, &f->v)) {
			*why = "truncated or overlong varint";
			return -1;
		}
		return 0;
	case WT_I64:
	case WT_I32:
		if (pb_take(r, f, f->wt == WT_I64 ? 8 : 4)) {
			*why = "truncated fixed-width field";
			return -1;
		}
		return 0;
	case WT_LEN:
		if (pb_varint(r, &len)) {
			*why = "truncated length";
			return -1;
		}
		if (pb_take(r, f, len)) {
			*why = "length runs past its message";
			return -1;
		}
		return 0;
	case WT_SGROUP:
		if (pb_skip_group(r, f->num, RG_PB_MAX_GROUP_DEPTH)) {
			*why = "invalid or too deeply nested group";
			return -1;
		}
		return 0;
	default:
		*why = f->wt == WT_EGROUP ? "unexpected end-group" : "invalid wire type";
		return -1;
	}
}

/* Skip to the end-group of field num (prost's skip_field for groups). */
static int pb_skip_group(struct pbr *r, uint32_t num, int depth)
{
	const char *why;

	if (depth <= 0)
		return -1;
	for (;;) {
		uint64_t key;
		struct pbf f;
		struct pbr save = *r;

		if (pb_varint(r, &key) || key > UINT32_MAX)
			return -1;
		if ((key & 7) == WT_EGROUP)
			return (key >> 3) == num ? 0 : -1;
		*r = save;
		if ((key & 7) == WT_SGROUP) {
			if (pb_varint(r, &key) || (key >> 3) == 0 ||
			    pb_skip_group(r, (uint32_t)(key >> 3), depth - 1))
				return -1;
			continue;
		}
		if (pb_next(r, &f, &why))
			return -1;
	}
}

/* Allowed wire types of a message's known fields (index = field number,
 * 0 = unknown field: skipped, any wire type). */
struct pb_schema {
	const char *name;
	uint8_t nfields;
	const uint8_t *wt;
};

#define SCHEMA(var, label, ...)                                     \
	static const uint8_t var##_wt[] = { __VA_ARGS__ };          \
	static const struct pb_schema var = { label,                \
		sizeof(var##_wt), var##_wt }

static inline bool pb_known(const struct pb_schema *s, const struct pbf *f)
{
	return f->num < s->nfields && s->wt[f->num];
}

static inline bool pb_wt_ok(const struct pb_schema *s, const struct pbf *f)
{
	return f->num >= s->nfields || !s->wt[f->num] ||
	       (s->wt[f->num] & M(f->wt));
}

/* Walk a message only to check its known fields' wire types. */
static int pb_check(struct pbr m, const struct pb_schema *s,
		    struct rg_row_counts *out)
{
	const char *why;
	struct pbf f;

	while (m.p < m.end) {
		if (pb_next(&m, &f, &why)) {
			rg_counts_msg(out, "%s: %s", s->name, why);
			return RG_COUNT_E_MALFORMED;
		}
		if (!pb_wt_ok(s, &f)) {
			rg_counts_msg(out, "%s: field %u has wire type %u", s->name,
				      f.num, f.wt);
			return RG_COUNT_E_MALFORMED;
		}
	}
	return RG_COUNT_OK;
}

/* Iterate the fields of message m: FOR_FIELDS(m, f, schema, out) { ... } with
 * wire types already checked; breaks out with err set on a wire error. */
#define FOR_FIELDS(m, f, s, out, err)                                        \
	for (const char *why_ = NULL; (m).p < (m).end &&                     \
	     (((pb_next(&(m), &(f), &why_) &&                                \
		(rg_counts_msg((out), "%s: %s", (s)->name, why_),            \
		 (err) = RG_COUNT_E_MALFORMED, 1)) ||                        \
	       (!pb_wt_ok((s), &(f)) &&                                      \
		(rg_counts_msg((out), "%s: field %u has wire type %u",       \
			       (s)->name, (f).num, (f).wt),                  \
		 (err) = RG_COUNT_E_MALFORMED, 1))) ? 0 : 1);)

/* ---------------------------------------------------------------- prom */

/* prometheus.WriteRequest and friends (prompb/remote.proto, types.proto). */
SCHEMA(prom_series_s, "TimeSeries", 0, M(WT_LEN), M(WT_LEN));
SCHEMA(prom_label_s, "Label", 0, M(WT_LEN), M(WT_LEN));
SCHEMA(prom_sample_s, "Sample", 0, M(WT_I64), M(WT_VARINT));

#define PROM_LABEL_NAME      "__name__"
#define PROM_DB_LABEL        "x_greptime_database"
#define PROM_DB_LABEL_ALT    "__database__"
#define PROM_SCHEMA_LABEL    "__schema__"   /* deprecated, and wins */
#define PROM_VM_DB_LABEL     "db"           /* victoria-metrics' -influxDBLabel */
/* Prometheus' staleness marker (model/value StaleNaN): the one NaN that
 * victoria-metrics stores (lib/storage Storage.add skips every other NaN). */
#define PROM_STALE_NAN_BITS  0x7ff0000000000002ULL

/* The Sample's value (field 1, a double; the last one wins, absent is 0):
 * true when it is a NaN other than the staleness marker. */
static bool prom_sample_plain_nan(struct pbr s)
{
	uint64_t bits = 0;
	const char *why;
	struct pbf f;
	int i;

	while (s.p < s.end && !pb_next(&s, &f, &why))
		if (f.num == 1 && f.wt == WT_I64)
			for (bits = 0, i = 7; i >= 0; i--)
				bits = bits << 8 | f.sub.p[i];
	return (bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL &&
	       (bits & 0x000fffffffffffffULL) && bits != PROM_STALE_NAN_BITS;
}

static bool bytes_eq(struct pbr b, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(b.end - b.p) == n && !memcmp(b.p, lit, n);
}

static const uint8_t empty[1];

static int prom_series(struct pbr m, const struct rg_count_limits *lim,
		       struct rg_row_counts *out, uint64_t *hists)
{
	struct pbr schema = { NULL, NULL };
	uint64_t samples = 0;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, &prom_series_s, out, err) {
		if (f.num == 1) {
			/* an absent field is the empty string, as for prost */
			struct pbr l = f.sub, name = { empty, empty }, value = { empty, empty };
			struct pbf lf;

			FOR_FIELDS(l, lf, &prom_label_s, out, err) {
				if (lf.num == 1)
					name = lf.sub;
				else if (lf.num == 2)
					value = lf.sub;
			}
			if (err)
				return err;
			/* victoria-metrics: the last `db` label with a value
			 * (InsertCtx.AddLabelBytes drops empty values,
			 * MetricName.sortTags keeps the last duplicate).
			 * GreptimeDB: __schema__ always sets the database, the
			 * two database labels only while none is set */
			if (lim->db_label_vm) {
				if (bytes_eq(name, PROM_VM_DB_LABEL) && value.end > value.p)
					schema = value;
			} else if (bytes_eq(name, PROM_SCHEMA_LABEL)) {
				schema = value;
			} else if (!schema.p && (bytes_eq(name, PROM_DB_LABEL) ||
						 bytes_eq(name, PROM_DB_LABEL_ALT))) {
				schema = value;
			}
		} else if (f.num == 2) {
			err = pb_check(f.sub, &prom_sample_s, out);
			if (err)
				return err;
			if (!lim->prom_drop_nan || !prom_sample_plain_nan(f.sub))
				samples++;
		} else if (f.num == 4) {
			(*hists)++;
		}
	}
	if (err)
		return err;
	rg_counts_add_db(out, schema.p ? (const char *)schema.p : NULL,
			 schema.p ? (size_t)(schema.end - schema.p) : 0, samples);
	return RG_COUNT_OK;
}

int rg_pb_count_prom(const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		     struct rg_row_counts *out)
{
	struct pbr m = { p, p + n };
	const char *why;
	uint64_t hists = 0;
	struct pbf f;
	int err;

	while (m.p < m.end) {
		if (pb_next(&m, &f, &why)) {
			rg_counts_msg(out, "WriteRequest: %s", why);
			return RG_COUNT_E_MALFORMED;
		}
		/* GreptimeDB refuses any top-level field that is not length-delimited */
		if (f.wt != WT_LEN) {
			rg_counts_msg(out, "WriteRequest: field %u has wire type %u",
				      f.num, f.wt);
			return RG_COUNT_E_MALFORMED;
		}
		if (f.num == 1) {
			err = prom_series(f.sub, lim, out, &hists);
			if (err)
				return err;
		}
	}
	out->prom_native_histograms = hists > UINT32_MAX ? UINT32_MAX : (uint32_t)hists;
	if (hists && lim->prom_native_histograms_refused) {
		/* the server refuses the request whole: nothing is stored */
		out->rows = out->default_rows = out->overflow_rows = 0;
		out->n_dbs = 0;
		out->flags = RG_COUNT_F_SERVER_REFUSES;
		rg_counts_msg(out, "%llu native histograms: GreptimeDB refuses v1 native histograms",
			      (unsigned long long)hists);
	}
	return RG_COUNT_OK;
}

/* ---------------------------------------------------------------- OTLP */

/* A resource/scope container: field 1 singular message, field 2 the
 * repeated children, field 3 schema_url. */
SCHEMA(otlp_container_s, "Resource*/Scope*", 0, M(WT_LEN), M(WT_LEN), M(WT_LEN));
SCHEMA(otlp_request_s, "Export*ServiceRequest", 0, M(WT_LEN));

SCHEMA(otlp_metric_s, "Metric", 0, M(WT_LEN), M(WT_LEN), M(WT_LEN), 0,
       M(WT_LEN), 0, M(WT_LEN), 0, M(WT_LEN), M(WT_LEN), M(WT_LEN), M(WT_LEN));
/* Gauge, Sum, Histogram, ExponentialHistogram, Summary share field 1;
 * Sum/Histogram/ExponentialHistogram add temporality (2), Sum monotonic (3).
 * A field a message does not have is unknown there, skipped. */
SCHEMA(otlp_gauge_s, "Gauge/Summary", 0, M(WT_LEN));
SCHEMA(otlp_sum_s, "Sum", 0, M(WT_LEN), M(WT_VARINT), M(WT_VARINT));
SCHEMA(otlp_hist_s, "Histogram", 0, M(WT_LEN), M(WT_VARINT));
SCHEMA(otlp_number_dp_s, "NumberDataPoint", 0, 0, M(WT_I64), M(WT_I64),
       M(WT_I64), M(WT_LEN), M(WT_I64), M(WT_LEN), M(WT_VARINT));
SCHEMA(otlp_hist_dp_s, "HistogramDataPoint", 0, 0, M(WT_I64), M(WT_I64),
       M(WT_I64), M(WT_I64), M(WT_I64) | M(WT_LEN), M(WT_I64) | M(WT_LEN),
       M(WT_LEN), M(WT_LEN), M(WT_VARINT), M(WT_I64), M(WT_I64));
SCHEMA(otlp_summary_dp_s, "SummaryDataPoint", 0, 0, M(WT_I64), M(WT_I64),
       M(WT_I64), M(WT_I64), M(WT_LEN), M(WT_LEN), M(WT_VARINT));
SCHEMA(otlp_log_s, "LogRecord", 0, M(WT_I64), M(WT_VARINT), M(WT_LEN), 0,
       M(WT_LEN), M(WT_LEN), M(WT_VARINT), M(WT_I32), M(WT_LEN), M(WT_LEN),
       M(WT_I64), M(WT_LEN));
SCHEMA(otlp_span_s, "Span", 0, M(WT_LEN), M(WT_LEN), M(WT_LEN), M(WT_LEN),
       M(WT_LEN), M(WT_VARINT), M(WT_I64), M(WT_I64), M(WT_LEN), M(WT_VARINT),
       M(WT_LEN), M(WT_VARINT), M(WT_LEN), M(WT_VARINT), M(WT_LEN), M(WT_I32));

enum { OTLP_GAUGE = 5, OTLP_SUM = 7, OTLP_HISTOGRAM = 9, OTLP_EXP_HISTOGRAM = 10,
       OTLP_SUMMARY = 11 };

/* Rows of one HistogramDataPoint: a `_bucket` row per bucket count, `_sum`
 * when sum is present, `_count` always. */
static int otlp_hist_dp(struct pbr m, struct rg_row_counts *out, uint64_t *rows)
{
	uint64_t buckets = 0, has_sum = 0;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, &otlp_hist_dp_s, out, err) {
		if (f.num == 5) {
			has_sum = 1;
		} else if (f.num == 6 || f.num == 7) {
			size_t len = (size_t)(f.sub.end - f.sub.p);

			if (f.wt == WT_LEN && len % 8) {
				rg_counts_msg(out, "HistogramDataPoint: packed field %u of %zu bytes",
					      f.num, len);
				return RG_COUNT_E_MALFORMED;
			}
			if (f.num == 6)
				buckets += f.wt == WT_LEN ? len / 8 : 1;
		}
	}
	if (err)
		return err;
	*rows += buckets + has_sum + 1;
	return RG_COUNT_OK;
}

static int otlp_summary_dp(struct pbr m, const struct rg_count_limits *lim,
			   struct rg_row_counts *out, uint64_t *rows)
{
	uint64_t quantiles = 0;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, &otlp_summary_dp_s, out, err) {
		if (f.num == 6)
			quantiles++;
	}
	if (err)
		return err;
	/* one row per quantile plus `_count` and `_sum`; legacy: one row */
	*rows += lim->otlp_summary_legacy ? 1 : quantiles + 2;
	return RG_COUNT_OK;
}

/* Rows of one Gauge/Sum/Histogram/ExponentialHistogram/Summary message. */
static int otlp_data(uint32_t kind, struct pbr m, const struct rg_count_limits *lim,
		     struct rg_row_counts *out, uint64_t *rows)
{
	const struct pb_schema *schema = kind == OTLP_SUM ? &otlp_sum_s :
					 kind == OTLP_HISTOGRAM || kind == OTLP_EXP_HISTOGRAM ?
							    &otlp_hist_s :
							    &otlp_gauge_s;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, schema, out, err) {
		if (f.num != 1)
			continue;
		switch (kind) {
		case OTLP_GAUGE:
		case OTLP_SUM:
			err = pb_check(f.sub, &otlp_number_dp_s, out);
			*rows += 1;
			break;
		case OTLP_HISTOGRAM:
			err = otlp_hist_dp(f.sub, out, rows);
			break;
		case OTLP_SUMMARY:
			err = otlp_summary_dp(f.sub, lim, out, rows);
			break;
		default: /* exponential histograms are dropped */
			break;
		}
		if (err)
			return err;
	}
	return err;
}

static int otlp_metric(struct pbr m, const struct rg_count_limits *lim,
		       struct rg_row_counts *out)
{
	uint32_t data_kind = 0;
	uint64_t rows = 0;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, &otlp_metric_s, out, err) {
		if (f.num != OTLP_GAUGE && f.num != OTLP_SUM && f.num != OTLP_HISTOGRAM &&
		    f.num != OTLP_EXP_HISTOGRAM && f.num != OTLP_SUMMARY)
			continue;
		/* oneof data: another member replaces, the same one merges
		 * (repeated data points concatenate), as prost does */
		if (f.num != data_kind) {
			data_kind = f.num;
			rows = 0;
		}
		err = otlp_data(f.num, f.sub, lim, out, &rows);
		if (err)
			return err;
	}
	if (err)
		return err;
	rg_counts_add_db(out, NULL, 0, rows);
	return RG_COUNT_OK;
}

/* The two container levels (Resource*, Scope*) down to the counted leaves:
 * level 0 = request, 1 = Resource*, 2 = Scope*, leaf = field 2 of Scope*. */
enum otlp_kind { OTLP_K_METRICS, OTLP_K_LOGS, OTLP_K_TRACES };

static int otlp_walk(enum otlp_kind kind, struct pbr m, int level,
		     const struct rg_count_limits *lim, struct rg_row_counts *out)
{
	const struct pb_schema *s = level ? &otlp_container_s : &otlp_request_s;
	uint32_t child = level ? 2 : 1;
	struct pbf f;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, s, out, err) {
		if (f.num != child)
			continue;
		if (level < 2) {
			err = otlp_walk(kind, f.sub, level + 1, lim, out);
		} else if (kind == OTLP_K_METRICS) {
			err = otlp_metric(f.sub, lim, out);
		} else {
			err = pb_check(f.sub, kind == OTLP_K_LOGS ? &otlp_log_s :
				       &otlp_span_s, out);
			if (!err)
				rg_counts_add_db(out, NULL, 0, 1);
		}
		if (err)
			return err;
	}
	return err;
}

int rg_pb_count_otlp_metrics(const uint8_t *p, size_t n,
			     const struct rg_count_limits *lim,
			     struct rg_row_counts *out)
{
	return otlp_walk(OTLP_K_METRICS, (struct pbr){ p, p + n }, 0, lim, out);
}

int rg_pb_count_otlp_logs(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	return otlp_walk(OTLP_K_LOGS, (struct pbr){ p, p + n }, 0, NULL, out);
}

int rg_pb_count_otlp_traces(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	return otlp_walk(OTLP_K_TRACES, (struct pbr){ p, p + n }, 0, NULL, out);
}

/* ---------------------------------------------------------------- Loki */

SCHEMA(loki_push_s, "PushRequest", 0, M(WT_LEN));
SCHEMA(loki_stream_s, "StreamAdapter", 0, M(WT_LEN), M(WT_LEN), M(WT_VARINT));
SCHEMA(loki_entry_s, "EntryAdapter", 0, M(WT_LEN), M(WT_LEN), M(WT_LEN));

int rg_pb_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	struct pbr m = { p, p + n };
	struct pbf f, sf;
	uint64_t rows = 0;
	int err = RG_COUNT_OK;

	FOR_FIELDS(m, f, &loki_push_s, out, err) {
		struct pbr s = f.sub;

		if (f.num != 1)
			continue;
		FOR_FIELDS(s, sf, &loki_stream_s, out, err) {
			if (sf.num != 2)
				continue;
			err = pb_check(sf.sub, &loki_entry_s, out);
			if (err)
				return err;
			rows++;
		}
		if (err)
			return err;
	}
	if (err)
		return err;
	rg_counts_add_db(out, NULL, 0, rows);
	return RG_COUNT_OK;
}

/* -------------------------------------------------------- Arrow Flight */

/*
 * A DoPut FlightData (Arrow's Flight.proto): data_header (2) is an Arrow
 * IPC Message flatbuffer (format/Message.fbs), data_body (1000) its body.
 * GreptimeDB stores a RecordBatch message's length rows; a Schema or
 * DictionaryBatch message stores none.  The flatbuffer is read only as far
 * as that takes, every offset checked against the buffer.
 */
SCHEMA(flight_data_s, "FlightData", 0, M(WT_LEN), M(WT_LEN), M(WT_LEN));

#define ARROW_MSG_RECORD_BATCH 3 /* MessageHeader union: RecordBatch */
/* vtable slots: Message { version, header_type, header, bodyLength },
 * RecordBatch { length } */
#define ARROW_MSG_F_HEADER_TYPE 1
#define ARROW_MSG_F_HEADER	2
#define ARROW_MSG_F_BODY_LENGTH 3
#define ARROW_RB_F_LENGTH	0

struct fb_table {
	const uint8_t *b;
	size_t n;
	size_t pos, vt;	 /* the table and its vtable */
	uint16_t vt_len, tbl_len;
};

static uint64_t fb_u64(const uint8_t *p)
{
	return (uint64_t)rg_le32(p) | (uint64_t)rg_le32(p + 4) << 32;
}

/* The table at pos of flatbuffer b (n bytes); -1 if it or its vtable
 * lies outside. */
static int fb_table_at(const uint8_t *b, size_t n, size_t pos, struct fb_table *t)
{
	int64_t vt;

	if (pos > n || n - pos < 4)
		return -1;
	vt = (int64_t)pos - (int32_t)rg_le32(b + pos);
	if (vt < 0 || (uint64_t)vt > n || n - (size_t)vt < 4)
		return -1;
	t->b = b;
	t->n = n;
	t->pos = pos;
	t->vt = (size_t)vt;
	t->vt_len = (uint16_t)(b[vt] | b[vt + 1] << 8);
	t->tbl_len = (uint16_t)(b[vt + 2] | b[vt + 3] << 8);
	if (t->vt_len < 4 || (t->vt_len & 1) || t->vt_len > n - t->vt || t->tbl_len < 4 ||
	    t->tbl_len > n - pos)
		return -1;
	return 0;
}

/* Where field id of width bytes is in the buffer: 0 if absent (its
 * default), -1 if it lies outside the table. */
static int64_t fb_field(const struct fb_table *t, unsigned int id, size_t width)
{
	size_t slot = 4 + 2 * (size_t)id;
	uint16_t off;

	if (slot + 2 > t->vt_len)
		return 0;
	off = (uint16_t)(t->b[t->vt + slot] | t->b[t->vt + slot + 1] << 8);
	if (!off)
		return 0;
	if (off < 4 || (size_t)off + width > t->tbl_len)
		return -1;
	return (int64_t)(t->pos + off);
}

/* The rows of an Arrow IPC Message flatbuffer with a body of body_len
 * bytes: a RecordBatch's length, 0 for any other message. */
static int arrow_message_rows(const uint8_t *b, size_t n, size_t body_len, uint64_t *rows,
			      struct rg_row_counts *out)
{
	struct fb_table msg, rb;
	int64_t at, len_at;
	uint64_t body, len;
	size_t hdr;

	*rows = 0;
	if (n < 4 || fb_table_at(b, n, rg_le32(b), &msg)) {
		rg_counts_msg(out, "FlightData: data_header is not an Arrow IPC message");
		return RG_COUNT_E_MALFORMED;
	}
	at = fb_field(&msg, ARROW_MSG_F_HEADER_TYPE, 1);
	if (at < 0)
		goto bad;
	if (!at || b[at] != ARROW_MSG_RECORD_BATCH)
		return RG_COUNT_OK; /* a Schema, a DictionaryBatch: no rows */
	at = fb_field(&msg, ARROW_MSG_F_BODY_LENGTH, 8);
	if (at < 0)
		goto bad;
	body = at ? fb_u64(b + at) : 0;
	if (body > body_len) {
		rg_counts_msg(out, "FlightData: a body of %zu bytes, its message says %llu",
			      body_len, (unsigned long long)body);
		return RG_COUNT_E_MALFORMED;
	}
	at = fb_field(&msg, ARROW_MSG_F_HEADER, 4);
	if (at <= 0)
		goto bad; /* a RecordBatch header must be there */
	hdr = (size_t)at + rg_le32(b + at);
	if (hdr < (size_t)at || fb_table_at(b, n, hdr, &rb))
		goto bad;
	len_at = fb_field(&rb, ARROW_RB_F_LENGTH, 8);
	if (len_at < 0)
		goto bad;
	len = len_at ? fb_u64(b + len_at) : 0;
	if (len > INT64_MAX) {
		rg_counts_msg(out, "FlightData: a RecordBatch of negative length");
		return RG_COUNT_E_MALFORMED;
	}
	*rows = len;
	return RG_COUNT_OK;
bad:
	rg_counts_msg(out, "FlightData: data_header's RecordBatch lies outside the message");
	return RG_COUNT_E_MALFORMED;
}

int rg_pb_count_flight(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	struct pbr m = { p, p + n }, hdr = { NULL, NULL }, body = { NULL, NULL };
	struct pbf f;
	uint64_t rows = 0;
	int err = RG_COUNT_OK;

	/* a bytes field given twice: the last one counts (prost) */
	FOR_FIELDS(m, f, &flight_data_s, out, err) {
		if (f.num == 2)
			hdr = f.sub;
		else if (f.num == 1000 && f.wt == WT_LEN)
			body = f.sub;
	}
	if (err)
		return err;
	if (!hdr.p || hdr.p == hdr.end) {
		rg_counts_msg(out, "FlightData without data_header");
		return RG_COUNT_E_MALFORMED;
	}
	err = arrow_message_rows(hdr.p, (size_t)(hdr.end - hdr.p),
				 body.p ? (size_t)(body.end - body.p) : 0, &rows, out);
	if (err)
		return err;
	rg_counts_add_db(out, NULL, 0, rows);
	return RG_COUNT_OK;
}
