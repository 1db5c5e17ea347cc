// SPDX-License-Identifier: MIT
/* rg_count_payload: undo the Content-Encoding chain within the cap, then
 * count with the protocol's counter.  Line protocol is counted while it is
 * decompressed (rowgate/rows.h, the kernel's own counter), so it never
 * needs the whole decoded body in memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "rowgate/abi.h"
#include "rowgate/rows.h"
#include "rowgate/lp_dbtag.h"
#include "decompress.h"
#include "internal.h"

/* Codings undone per request at most ("gzip, br" is two). */
#define RG_COUNT_MAX_CODINGS 4

/* Line protocol rows of a whole decoded body under lim's rules, each line
 * to the database it names where the server files it so. */
static void lp_rows(const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		    struct rg_row_counts *out)
{
	struct rg_lp_state st;
	size_t i = 0;

	if (lim->lp_rows_mode != RG_ROWS_VM_SAMPLES) {
		rg_lp_init_rule(&st, lim->lp_comment_rule);
		rg_counts_add_db(out, NULL, 0, rg_lp_count(&st, p, n));
		return;
	}
	while (i < n) {
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - p) : n;
		uint64_t samples = rg_lp_vm_samples(p + i, end - i);
		__u64 from, to;
		char db[RG_DB_NAME_MAX];

		if (samples && lim->db_label_vm && rg_lp_vm_db_tag(p + i, end - i, &from, &to))
			rg_counts_add_db(out, db, rg_lp_vm_unescape(p + i + from, to - from, db), samples);
		else
			rg_counts_add_db(out, NULL, 0, samples);
		i = end + 1;
	}
}

/* Line protocol counted as it streams out of the decompressor. */
struct lp_sink {
	struct rg_sink sink;
	struct rg_lp_state st;
	uint64_t rows;
};

static int lp_sink_write(struct rg_sink *s, const uint8_t *p, size_t n)
{
	struct lp_sink *l = (struct lp_sink *)s;

	l->rows += rg_lp_count(&l->st, p, n);
	return RG_COUNT_OK;
}

/* Go's Header.Get("Content-Encoding") == want: the first header line
 * (repeated lines are joined by '\n'), surrounding blanks trimmed. */
static bool ce_first_is(const char *ce, const char *want)
{
	size_t n;

	if (!ce)
		return false;
	while (*ce == ' ' || *ce == '\t')
		ce++;
	n = strcspn(ce, "\n");
	while (n && (ce[n - 1] == ' ' || ce[n - 1] == '\t'))
		n--;
	return n == strlen(want) && !memcmp(ce, want, n);
}

/* Content-Encoding list -> codecs in the order they were applied. */
static int parse_codings(const char *ce, enum rg_codec *codecs, int *n,
			 struct rg_row_counts *out)
{
	const char *p = ce;

	*n = 0;
	while (p && *p) {
		const char *start, *end;
		enum rg_codec c;

		/* '\n' joins repeated header lines (rowgate/http.h) */
		while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n')
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ',' && *p != '\n')
			p++;
		end = p;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		c = rg_codec_parse(start, (size_t)(end - start));
		if (c == RG_CODEC_INVALID) {
			rg_counts_msg(out, "unsupported Content-Encoding \"%.*s\"",
				      (int)(end - start > 32 ? 32 : end - start), start);
			return RG_COUNT_E_ENCODING;
		}
		if (c == RG_CODEC_IDENTITY)
			continue;
		if (*n == RG_COUNT_MAX_CODINGS) {
			rg_counts_msg(out, "more than %d content codings",
				      RG_COUNT_MAX_CODINGS);
			return RG_COUNT_E_ENCODING;
		}
		codecs[(*n)++] = c;
	}
	return RG_COUNT_OK;
}

static bool ct_has(const char *ct, const char *needle)
{
	return ct && strcasestr(ct, needle);
}

static int neg_errno(enum rg_count_err e)
{
	switch (e) {
	case RG_COUNT_OK:
		return 0;
	case RG_COUNT_E_ENCODING:
	case RG_COUNT_E_UNSUPPORTED:
		return -EOPNOTSUPP;
	case RG_COUNT_E_TOO_LARGE:
		return -EFBIG;
	case RG_COUNT_E_NOMEM:
		return -ENOMEM;
	case RG_COUNT_E_CORRUPT:
	case RG_COUNT_E_TRUNCATED:
	case RG_COUNT_E_MALFORMED:
		return -EBADMSG;
	default:
		return -EINVAL;
	}
}

static int count_decoded(enum rg_payload_protocol p, const char *ct,
			 const uint8_t *d, size_t n,
			 const struct rg_count_limits *lim,
			 struct rg_row_counts *out)
{
	switch (p) {
	case RG_PAYLOAD_PROM_RW:
		return rg_pb_count_prom(d, n, lim, out);
	case RG_PAYLOAD_OTLP_METRICS:
		return rg_pb_count_otlp_metrics(d, n, lim, out);
	case RG_PAYLOAD_OTLP_LOGS:
		return rg_pb_count_otlp_logs(d, n, out);
	case RG_PAYLOAD_OTLP_TRACES:
		return rg_pb_count_otlp_traces(d, n, out);
	case RG_PAYLOAD_LOKI_PROTO:
		return rg_pb_count_loki(d, n, out);
	case RG_PAYLOAD_LOKI_JSON:
		return rg_json_count_loki(d, n, out);
	case RG_PAYLOAD_ES_BULK:
		return rg_json_count_es_bulk(d, n, out);
	case RG_PAYLOAD_NDJSON:
		return rg_json_count_ingest(d, n, ct, out);
	case RG_PAYLOAD_OPENTSDB:
		return rg_json_count_opentsdb(d, n, out);
	case RG_PAYLOAD_GREPTIME_GRPC:
		return rg_pb_count_greptime(d, n, out);
	case RG_PAYLOAD_ARROW_FLIGHT:
		return rg_pb_count_flight(d, n, out);
	default:
		rg_counts_msg(out, "no counter for protocol %d", (int)p);
		return RG_COUNT_E_INVAL;
	}
}

int rg_count_payload(enum rg_payload_protocol p, const char *content_encoding,
		     const char *content_type, const void *body, size_t len,
		     const struct rg_count_limits *lim, struct rg_row_counts *out)
{
	struct rg_count_limits deflim;
	enum rg_codec codecs[RG_COUNT_MAX_CODINGS + 1];
	struct rg_buf_sink stage[2];
	const uint8_t *data = body;
	size_t dlen = len;
	int ncodecs = 0, i, err, cur = 0;
	uint64_t cap;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memset(stage, 0, sizeof(stage));
	if (!lim) {
		rg_count_limits_default(&deflim);
		lim = &deflim;
	}
	cap = lim->max_decoded_bytes ? lim->max_decoded_bytes :
				       RG_COUNT_DEFAULT_MAX_DECODED_BYTES;
	if (cap > SIZE_MAX / 2)
		cap = SIZE_MAX / 2;
	if ((!body && len) || p < 0 || p >= RG_PAYLOAD__COUNT) {
		rg_counts_msg(out, "%s", !body && len ? "NULL body" : "unknown protocol");
		err = RG_COUNT_E_INVAL;
		goto out;
	}
	if (p == RG_PAYLOAD_LOKI)
		p = ct_has(content_type, "json") ? RG_PAYLOAD_LOKI_JSON :
						   RG_PAYLOAD_LOKI_PROTO;
	if (p == RG_PAYLOAD_PROM_RW && ct_has(content_type, "io.prometheus.write.v2")) {
		rg_counts_msg(out, "prometheus remote write 2.0 is not counted");
		err = RG_COUNT_E_UNSUPPORTED;
		goto out;
	}
	/* protobuf bodies of these two carry their own snappy (or zstd for
	 * VictoriaMetrics clients), applied before any HTTP coding */
	if (p == RG_PAYLOAD_PROM_RW && lim->prom_snappy_only) {
		codecs[ncodecs++] = RG_CODEC_SNAPPY;
	} else if (p == RG_PAYLOAD_PROM_RW || p == RG_PAYLOAD_LOKI_PROTO) {
		err = parse_codings(content_encoding, codecs + 1, &ncodecs, out);
		if (err)
			goto out;
		for (i = 1; i <= ncodecs; i++)
			if (codecs[i] == RG_CODEC_SNAPPY || codecs[i] == RG_CODEC_ZSTD)
				break;
		if (i > ncodecs) {
			codecs[0] = RG_CODEC_SNAPPY;
			ncodecs++;
		} else {
			memmove(codecs, codecs + 1, sizeof(codecs[0]) * (size_t)ncodecs);
		}
	} else if (p == RG_PAYLOAD_LINE && lim->lp_gzip_only) {
		if (ce_first_is(content_encoding, "gzip"))
			codecs[ncodecs++] = RG_CODEC_GZIP;
	} else {
		err = parse_codings(content_encoding, codecs, &ncodecs, out);
		if (err)
			goto out;
	}

	/* undo the codings right to left; line protocol's last one streams */
	for (i = ncodecs - 1; i >= 0; i--) {
		if (i == 0 && p == RG_PAYLOAD_LINE && lim->lp_rows_mode == RG_ROWS_LINES) {
			struct lp_sink ls = { .sink.write = lp_sink_write };

			rg_lp_init_rule(&ls.st, lim->lp_comment_rule);
			err = rg_decompress(codecs[i], data, dlen, cap, &ls.sink,
					    out->err_msg, sizeof(out->err_msg));
			/* kept on failure: the worst case is counted from it */
			out->decoded_bytes = ls.sink.total;
			if (err == RG_COUNT_E_TRUNCATED && lim->body_cut) {
				out->flags |= RG_COUNT_F_CUT;
				err = RG_COUNT_OK;
			}
			if (err)
				goto out;
			rg_counts_add_db(out, NULL, 0, ls.rows);
			goto out;
		}
		rg_buf_sink_free(&stage[cur]);
		rg_buf_sink_init(&stage[cur], (size_t)cap);
		err = rg_decompress(codecs[i], data, dlen, cap, &stage[cur].sink,
				    out->err_msg, sizeof(out->err_msg));
		/* cut line protocol: what decodes */
		if (err == RG_COUNT_E_TRUNCATED && lim->body_cut && p == RG_PAYLOAD_LINE) {
			out->flags |= RG_COUNT_F_CUT;
			err = RG_COUNT_OK;
		}
		if (err) {
			out->decoded_bytes = stage[cur].sink.total;
			goto out;
		}
		data = stage[cur].buf;
		dlen = stage[cur].len;
		cur ^= 1;
	}
	out->decoded_bytes = dlen;
	if (dlen > cap) {
		rg_counts_msg(out, "body of %zu bytes exceeds the %llu-byte cap", dlen,
			      (unsigned long long)cap);
		err = RG_COUNT_E_TOO_LARGE;
		goto out;
	}
	if (p == RG_PAYLOAD_LINE) {
		lp_rows(data ? data : (const uint8_t *)"", dlen, lim, out);
		err = RG_COUNT_OK;
		goto out;
	}
	err = count_decoded(p, content_type, data ? data : (const uint8_t *)"", dlen,
			    lim, out);
out:
	rg_buf_sink_free(&stage[0]);
	rg_buf_sink_free(&stage[1]);
	if (err) {
		char msg[sizeof(out->err_msg)];
		uint64_t decoded = out->decoded_bytes;

		memcpy(msg, out->err_msg, sizeof(msg));
		memset(out, 0, sizeof(*out));
		out->decoded_bytes = decoded;
		out->err = (enum rg_count_err)err;
		if (!msg[0])
			snprintf(msg, sizeof(msg), "%s", rg_count_strerror(out->err));
		memcpy(out->err_msg, msg, sizeof(msg));
		return neg_errno(out->err);
	}
	/* a refusal keeps its reason; a plain success has none */
	if (!(out->flags & RG_COUNT_F_SERVER_REFUSES))
		out->err_msg[0] = '\0';
	return 0;
}
