// SPDX-License-Identifier: MIT
/* The JSON row counters (user/decode/jsoncount.c): Loki JSON push,
 * OpenTSDB, Elasticsearch bulk, /v1/ingest (JSON, NDJSON, text).  Any body
 * gives counts or a reason, never more rows than the body could hold, and
 * the rows all belong to the request's own database.
 *
 * Input: a byte choosing the counter (and /v1/ingest's content type), then
 * the body. */
#include "count.h"
#include "internal.h"
#include "fuzz.h"

static const char *const ingest_types[] = {
	NULL,	      "application/json",	   "application/x-ndjson",
	"text/plain", "Text/Plain; charset=utf-8", "application/octet-stream"
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t sel = fuzz_u8(&in);
	struct rg_row_counts *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		abort();
	switch (sel % 4) {
	case 0:
		err = rg_json_count_loki(in.p, in.n, c);
		break;
	case 1:
		err = rg_json_count_opentsdb(in.p, in.n, c);
		break;
	case 2:
		err = rg_json_count_es_bulk(in.p, in.n, c);
		break;
	default:
		err = rg_json_count_ingest(in.p, in.n,
					   ingest_types[(sel >> 2) % (sizeof(ingest_types) /
								      sizeof(ingest_types[0]))],
					   c);
	}
	FUZZ_ASSERT(err >= RG_COUNT_OK && err < RG_COUNT_E__COUNT, "class %d", err);
	if (err) {
		FUZZ_ASSERT(c->err_msg[0] && memchr(c->err_msg, 0, sizeof(c->err_msg)),
			    "error %d without a reason", err);
	} else {
		/* a row takes at least one byte (a digit, a newline-ended line) */
		FUZZ_ASSERT(c->rows <= in.n, "counter %d: %llu rows in %zu bytes", sel % 4,
			    (unsigned long long)c->rows, in.n);
		FUZZ_ASSERT(c->default_rows == c->rows && c->n_dbs == 0 && !c->overflow_rows,
			    "rows outside the request's database");
	}
	free(c);
	return 0;
}
