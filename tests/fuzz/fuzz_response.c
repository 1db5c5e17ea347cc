// SPDX-License-Identifier: MIT
/* The kernel's 429/400 writer (rowgate/response.h): for any fields and any
 * target length, the plan's lengths and the writer's bytes are snprintf's
 * of the printf templates, and the plan fills the target exactly or is the
 * smallest response, larger, with Connection: close.
 *
 * Input: the fields, the target, then the database name's bytes. */
#include "fuzz.h"
#include "response_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct rg_response r = { 0 }, ref_r;
	struct rg_resp_buf *out = malloc(sizeof(*out));
	struct rg_db_key db;
	char ref[2048];
	uint8_t flags = fuzz_u8(&in);
	uint64_t target;
	uint32_t len, i;
	bool want_close;
	const char *json;
	int n;

	if (!out)
		abort();
	memset(out, 0x5a, sizeof(*out));
	r.kind = flags & 1 ? RG_RESP_400 : RG_RESP_429;
	/* bits 1, 2 and 5: 4..7 are not messages, written as malformed */
	r.error = ((flags >> 1) & 3) | ((flags >> 3) & 4);
	r.estimated = (flags >> 3) & 1;
	r.close = want_close = (flags >> 4) & 1;
	r.retry_after_s = fuzz_u64(&in);
	r.rows = fuzz_u64(&in);
	r.quota_rows_per_s = fuzz_u64(&in);
	r.limit_rows_per_s = fuzz_u64(&in);
	target = fuzz_u64(&in);
	/* mostly the sizes a request has; any u64 sometimes */
	if (!(flags & 0x80))
		target %= (flags & 0x40) ? 2000 : 200000;
	memset(&db, 0, sizeof(db));
	r.db_len = (uint32_t)(in.n < RG_DB_NAME_MAX - 1 ? in.n : RG_DB_NAME_MAX - 1);
	for (i = 0; i < r.db_len; i++)
		db.name[i] = in.p[i] ? (char)in.p[i] : '_';

	if (rg_response_plan(&r, target)) {
		FUZZ_ASSERT(r.text_len >= RG_RESP_TEXT_MAX || r.content_length >= RG_RESP_PADDED_MAX,
			    "refused a plan of %u bytes, content length %llu", r.text_len,
			    (unsigned long long)r.content_length);
		free(out);
		return 0;
	}
	ref_r = r;
	if (ref_r.error > RG_RESP_ERR_H2_UNCOUNTED)
		ref_r.error = RG_RESP_ERR_MALFORMED;
	n = format_ref(ref, sizeof(ref), &ref_r, db.name);
	FUZZ_ASSERT(n > 0 && (uint32_t)n == r.text_len, "text: snprintf %d, plan %u", n, r.text_len);
	len = rg_response_write(out, &r, &db);
	FUZZ_ASSERT(len == r.text_len && memcmp(out->b, ref, len) == 0,
		    "writer (%u bytes) differs from snprintf (%d): %.*s", len, n, (int)len, out->b);
	json = strstr(ref, "\r\n\r\n");
	FUZZ_ASSERT(json, "no end of head");
	json += 4;
	FUZZ_ASSERT(r.content_length >= strlen(json) &&
			    r.total_len == r.text_len - strlen(json) + r.content_length,
		    "total %u, text %u, content length %llu", r.total_len, r.text_len,
		    (unsigned long long)r.content_length);
	if (want_close)
		FUZZ_ASSERT(r.close, "close was required");
	if (r.total_len != target)
		FUZZ_ASSERT(r.close && r.total_len > target && r.total_len == r.text_len,
			    "target %llu: total %u, text %u, close %d", (unsigned long long)target,
			    r.total_len, r.text_len, r.close);
	free(out);
	return 0;
}
