// SPDX-License-Identifier: MIT
/* Row counting of JSON ingest bodies with jansson: Loki push JSON, OpenTSDB
 * put, Elasticsearch bulk and /v1/ingest, by GreptimeDB's rules (count.h). */
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include "internal.h"

#define JSON_STREAM_FLAGS (JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL)

static bool is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One JSON text over the whole body. */
static json_t *load_one(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	json_error_t e;
	json_t *v = json_loadb((const char *)p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);

	if (!v)
		rg_counts_msg(out, "invalid JSON at line %d column %d: %s", e.line,
			      e.column, e.text);
	return v;
}

/*
 * A stream of JSON values separated by optional whitespace (serde_json's
 * StreamDeserializer, which GreptimeDB uses for NDJSON and bulk bodies).
 * fn returns an rg_count_err; iteration stops at the first non-zero.
 */
static int json_each(const uint8_t *p, size_t n,
		     int (*fn)(json_t *v, void *ctx), void *ctx,
		     struct rg_row_counts *out, uint64_t *nvalues)
{
	size_t off = 0;
	int err = RG_COUNT_OK;

	*nvalues = 0;
	for (;;) {
		json_error_t e;
		json_t *v;

		while (off < n && is_ws(p[off]))
			off++;
		if (off == n)
			break;
		v = json_loadb((const char *)p + off, n - off, JSON_STREAM_FLAGS, &e);
		if (!v) {
			rg_counts_msg(out, "invalid JSON value %llu at byte %zu: %s",
				      (unsigned long long)*nvalues + 1, off, e.text);
			return RG_COUNT_E_MALFORMED;
		}
		/* on success jansson reports the bytes it consumed */
		off += e.position > 0 ? (size_t)e.position : 1;
		(*nvalues)++;
		err = fn(v, ctx);
		json_decref(v);
		if (err)
			break;
	}
	return err;
}

int rg_json_count_loki(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	json_t *root = load_one(p, n, out), *streams, *s;
	uint64_t rows = 0;
	size_t i, j;
	int err = RG_COUNT_OK;

	if (!root)
		return RG_COUNT_E_MALFORMED;
	streams = json_object_get(root, "streams");
	if (!json_is_array(streams)) {
		rg_counts_msg(out, "loki: \"streams\" is not an array");
		err = RG_COUNT_E_MALFORMED;
		goto out;
	}
	json_array_foreach(streams, i, s) {
		json_t *values = json_object_get(s, "values"), *e;

		if (!json_is_object(s) || !json_is_array(values)) {
			rg_counts_msg(out, "loki: stream %zu has no \"values\" array", i);
			err = RG_COUNT_E_MALFORMED;
			goto out;
		}
		json_array_foreach(values, j, e) {
			/* [ts, line] or [ts, line, structured metadata] */
			if (!json_is_array(e) || json_array_size(e) < 2 ||
			    json_array_size(e) > 3) {
				rg_counts_msg(out, "loki: stream %zu entry %zu is not [ts, line(, metadata)]",
					      i, j);
				err = RG_COUNT_E_MALFORMED;
				goto out;
			}
			rows++;
		}
	}
	rg_counts_add_db(out, NULL, 0, rows);
out:
	json_decref(root);
	return err;
}

int rg_json_count_opentsdb(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	json_t *root = load_one(p, n, out), *dp;
	uint64_t rows = 0;
	size_t i;
	int err = RG_COUNT_OK;

	if (!root)
		return RG_COUNT_E_MALFORMED;
	if (json_is_object(root)) {
		rows = 1;
	} else if (json_is_array(root)) {
		json_array_foreach(root, i, dp) {
			if (!json_is_object(dp)) {
				rg_counts_msg(out, "opentsdb: data point %zu is not an object", i);
				err = RG_COUNT_E_MALFORMED;
				goto out;
			}
			rows++;
		}
	} else {
		rg_counts_msg(out, "opentsdb: body is neither an object nor an array");
		err = RG_COUNT_E_MALFORMED;
		goto out;
	}
	rg_counts_add_db(out, NULL, 0, rows);
out:
	json_decref(root);
	return err;
}

/* Elasticsearch bulk: action, document, action, document, ... */
struct es_state {
	bool want_doc;      /* the last value was an admitted action */
	bool refused;       /* an action GreptimeDB does not accept */
	uint64_t docs;
	uint64_t index;
	struct rg_row_counts *out;
};

static int es_value(json_t *v, void *ctx)
{
	struct es_state *st = ctx;
	json_t *cmd, *idx;

	st->index++;
	if (st->want_doc) {
		st->want_doc = false;
		st->docs++;
		return RG_COUNT_OK;
	}
	cmd = json_object_get(v, "create");
	if (!cmd)
		cmd = json_object_get(v, "index");
	if (!cmd) {
		/* delete, update or anything else: the request is refused */
		rg_counts_msg(st->out, "es-bulk: value %llu is not a create or index action",
			      (unsigned long long)st->index);
		st->refused = true;
		return RG_COUNT_E_UNSUPPORTED; /* stop; turned into a refusal */
	}
	idx = json_object_get(cmd, "_index");
	if (idx && !json_is_string(idx)) {
		rg_counts_msg(st->out, "es-bulk: _index of action %llu is not a string",
			      (unsigned long long)st->index);
		st->refused = true;
		return RG_COUNT_E_UNSUPPORTED;
	}
	st->want_doc = true;
	return RG_COUNT_OK;
}

int rg_json_count_es_bulk(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	struct es_state st = { .out = out };
	uint64_t nvalues;
	int err = json_each(p, n, es_value, &st, out, &nvalues);

	if (st.refused) {
		out->flags |= RG_COUNT_F_SERVER_REFUSES;
		return RG_COUNT_OK;
	}
	if (err)
		return err;
	if (!nvalues) {
		/* GreptimeDB: "empty bulk request" */
		rg_counts_msg(out, "es-bulk: empty bulk request");
		out->flags |= RG_COUNT_F_SERVER_REFUSES;
		return RG_COUNT_OK;
	}
	/* a trailing action without its document is ignored */
	rg_counts_add_db(out, NULL, 0, st.docs);
	return RG_COUNT_OK;
}

/* /v1/ingest JSON: an object is a row, an array's objects are rows. */
struct ingest_state {
	uint64_t rows;
	struct rg_row_counts *out;
};

static int ingest_value(json_t *v, void *ctx)
{
	struct ingest_state *st = ctx;
	json_t *e;
	size_t i;

	if (json_is_object(v)) {
		st->rows++;
		return RG_COUNT_OK;
	}
	if (!json_is_array(v)) {
		rg_counts_msg(st->out, "ingest: a value is neither an object nor an array");
		return RG_COUNT_E_MALFORMED;
	}
	json_array_foreach(v, i, e) {
		if (!json_is_object(e)) {
			rg_counts_msg(st->out, "ingest: array element %zu is not an object", i);
			return RG_COUNT_E_MALFORMED;
		}
		st->rows++;
	}
	return RG_COUNT_OK;
}

/* text/plain: one row per non-empty line (Rust str::lines: "\n" splits,
 * one trailing "\r" is dropped). */
static uint64_t count_text_lines(const uint8_t *p, size_t n)
{
	uint64_t rows = 0;
	size_t start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '\n')
			continue;
		if (i == n && start == n)
			break;
		{
			size_t len = i - start;

			if (len && p[i - 1] == '\r')
				len--;
			rows += len > 0;
		}
		start = i + 1;
	}
	return rows;
}

static bool ct_is(const char *ct, const char *mime)
{
	size_t n = strlen(mime);

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	return !strncasecmp(ct, mime, n) &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

int rg_json_count_ingest(const uint8_t *p, size_t n, const char *content_type,
			 struct rg_row_counts *out)
{
	struct ingest_state st = { .out = out };
	uint64_t nvalues;
	int err;

	if (ct_is(content_type, "text/plain")) {
		rg_counts_add_db(out, NULL, 0, count_text_lines(p, n));
		return RG_COUNT_OK;
	}
	err = json_each(p, n, ingest_value, &st, out, &nvalues);
	if (err)
		return err;
	rg_counts_add_db(out, NULL, 0, st.rows);
	return RG_COUNT_OK;
}
