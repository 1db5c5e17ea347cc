// SPDX-License-Identifier: MIT
/* The SQL statements rowgatectl reads (user/rowgatectl/sqlopt.c): any input gives a
 * request or a reason; an accepted database is a valid normalized name; and
 * SHOW CREATE DATABASE's text reads back as the same database and limit, at
 * any buffer size with snprintf's contract.
 *
 * Input: one byte for the output buffer's size, then the statement. */
#include <errno.h>
#include "../../user/lib/limits.h"
#include "../../user/rowgatectl/sqlopt.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t blen = fuzz_u8(&in);
	char *sql = fuzz_str(in.p, in.n), err[256], full[512], *small;
	struct rg_sql_request req, back;
	bool has_limit;
	int r, n, m;

	memset(&req, 0, sizeof(req));
	err[0] = 0;
	r = rg_sql_parse(sql, &req, err, sizeof(err));
	FUZZ_ASSERT(r == 0 || r == -EINVAL, "returned %d", r);
	if (r) {
		FUZZ_ASSERT(err[0] && memchr(err, 0, sizeof(err)), "no reason");
		free(sql);
		return 0;
	}
	FUZZ_ASSERT(fuzz_key_ok(&req.db), "'%s' gave database '%.*s', not a key", sql,
		    RG_DB_NAME_MAX, req.db.name);

	has_limit = req.action == RG_SQL_SET_LIMIT;
	n = rg_sql_show_create(&req.db, has_limit, req.limit, full, sizeof(full));
	FUZZ_ASSERT(n > 0 && (size_t)n < sizeof(full), "show create: %d", n);
	small = malloc(blen ? blen : 1);
	if (!small)
		abort();
	m = rg_sql_show_create(&req.db, has_limit, req.limit, small, blen);
	FUZZ_ASSERT(m == n, "with %zu bytes: %d, needed %d", blen, m, n);
	if (blen)
		FUZZ_ASSERT(strlen(small) == ((size_t)n < blen ? (size_t)n : blen - 1) &&
				    memcmp(small, full, strlen(small)) == 0,
			    "cut output differs");
	free(small);

	memset(&back, 0, sizeof(back));
	FUZZ_ASSERT(rg_sql_parse(full, &back, err, sizeof(err)) == 0, "'%s' does not read back: %s",
		    full, err);
	FUZZ_ASSERT(back.action == (has_limit ? RG_SQL_SET_LIMIT : RG_SQL_NOTHING) &&
			    memcmp(&back.db, &req.db, sizeof(back.db)) == 0 &&
			    (!has_limit || back.limit == req.limit),
		    "'%s' read back as action %d db '%s' limit %llu (from '%s')", full, back.action,
		    back.db.name, (unsigned long long)back.limit, sql);
	free(sql);
	return 0;
}
