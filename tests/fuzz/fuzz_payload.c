// SPDX-License-Identifier: MIT
/* rg_count_payload (user/decode/count.c), what rowgated calls on every
 * body it reconciles: any protocol, Content-Encoding list, Content-Type and
 * limits.  Errors zero the counts and give a reason; success reports a
 * split that adds up, decoded bytes within the cap, and the same result
 * every time (no hidden state).
 *
 * Input: protocol, encoding, content type and limit bytes, then the body. */
#include "count.h"
#include "fuzz.h"

static const char *const encodings[] = {
	NULL, "",	"identity", "gzip",	   "x-gzip", "deflate",	 "zstd",
	"br", "snappy", "gzip, br", "snappy,zstd", "GZIP",   "compress", "gzip,gzip,gzip,gzip,gzip",
};
static const char *const types[] = {
	NULL,
	"application/x-protobuf",
	"application/json",
	"application/x-ndjson",
	"text/plain",
	"application/x-protobuf;proto=io.prometheus.write.v2.Request",
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t pb = fuzz_u8(&in), eb = fuzz_u8(&in), tb = fuzz_u8(&in), lb = fuzz_u8(&in);
	enum rg_payload_protocol p = (enum rg_payload_protocol)(pb % (RG_PAYLOAD__COUNT + 1)) - 1;
	const char *enc = encodings[eb % N(encodings)], *ct = types[tb % N(types)];
	struct rg_count_limits lim;
	struct rg_row_counts *c = malloc(sizeof(*c)), *again = malloc(sizeof(*again));
	uint64_t sum;
	uint32_t i;
	int r;

	if (!c || !again)
		abort();
	rg_count_limits_default(&lim);
	/* small caps reach E_TOO_LARGE; the largest keeps a run fast */
	lim.max_decoded_bytes = (uint64_t)1 << (lb % 21);
	lim.prom_native_histograms_refused = (lb >> 5) & 1;
	lim.otlp_summary_legacy = (lb >> 6) & 1;
	memset(c, 0xa5, sizeof(*c));
	r = rg_count_payload(p, enc, ct, in.p, in.n, &lim, c);
	FUZZ_ASSERT(r <= 0, "returned %d", r);
	if (r) {
		FUZZ_ASSERT(c->err > RG_COUNT_OK && c->err < RG_COUNT_E__COUNT, "class %d", c->err);
		FUZZ_ASSERT(c->err_msg[0] && memchr(c->err_msg, 0, sizeof(c->err_msg)), "no reason");
		FUZZ_ASSERT(!c->rows && !c->default_rows && !c->n_dbs && !c->overflow_rows,
			    "counts left on error %d", c->err);
	} else {
		FUZZ_ASSERT(c->err == RG_COUNT_OK, "class %d on success", c->err);
		FUZZ_ASSERT(c->decoded_bytes <= lim.max_decoded_bytes,
			    "%llu bytes decoded, cap %llu", (unsigned long long)c->decoded_bytes,
			    (unsigned long long)lim.max_decoded_bytes);
		FUZZ_ASSERT(c->n_dbs <= RG_COUNT_MAX_DBS, "%u databases", c->n_dbs);
		sum = c->default_rows + c->overflow_rows;
		for (i = 0; i < c->n_dbs; i++)
			sum += c->dbs[i].rows;
		FUZZ_ASSERT(sum == c->rows, "split %llu of %llu rows", (unsigned long long)sum,
			    (unsigned long long)c->rows);
		if (c->flags & RG_COUNT_F_SERVER_REFUSES)
			FUZZ_ASSERT(!c->rows, "%llu rows of a refused request",
				    (unsigned long long)c->rows);
	}
	memset(again, 0x5a, sizeof(*again));
	FUZZ_ASSERT(rg_count_payload(p, enc, ct, in.p, in.n, &lim, again) == r &&
			    again->rows == c->rows && again->default_rows == c->default_rows &&
			    again->n_dbs == c->n_dbs && again->err == c->err,
		    "a second count differs");
	free(c);
	free(again);
	return 0;
}
