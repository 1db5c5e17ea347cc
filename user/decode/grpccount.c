// SPDX-License-Identifier: MIT
/* A GreptimeDatabase gRPC message (GreptimeRequest, the bytes after the
 * 5-byte prefix, decoded): its rows and database, read by the same walk the
 * kernel verdict runs over plain messages (rowgate/h2/pb.h), so a compressed
 * message is charged exactly as the plain one would have been. */
#include <string.h>

#include "rowgate/h2/pb.h"
#include "rowgate/h2/grpc.h"
#include "internal.h"

int rg_pb_count_greptime(const uint8_t *p, size_t n, struct rg_row_counts *out)
{
	struct rg_pb_walk w;
	struct rg_grpc_msg m;
	struct rg_db_key key;
	char raw[RG_GRPC_DB_SCRATCH_BYTES];
	const char *name = raw;
	size_t i = 0, len;
	int r = 0;

	if (n > RG_GRPC_MSG_MAX_BYTES) {
		rg_counts_msg(out, "message of %zu bytes: over %u", n, RG_GRPC_MSG_MAX_BYTES);
		return RG_COUNT_E_TOO_LARGE;
	}
	memset(&m, 0, sizeof(m));
	m.len = (__u32)n;
	rg_pb_begin_request(&w, (__u32)n);
	while (i < n) {
		__u32 skip = rg_pb_skippable(&w);

		if (skip) {
			rg_pb_skip(&w, skip);
			i += skip;
			continue;
		}
		r = rg_pb_step(&w, &m, p[i++]);
		if (r < 0 || (r == 1 && i != n)) {
			rg_counts_msg(out, "GreptimeRequest malformed at byte %zu", i - 1);
			return RG_COUNT_E_MALFORMED;
		}
	}
	if (n && r != 1) {
		rg_counts_msg(out, "GreptimeRequest ends inside a field");
		return RG_COUNT_E_MALFORMED;
	}
	if (!rg_grpc_charged(&m))
		return RG_COUNT_OK; /* a query, DDL or delete: no rows stored */
	if (rg_grpc_db_key_in(&m, &key, raw) < 0) {
		/* a name no key holds: the kernel refuses it when plain */
		out->overflow_rows += m.rows;
		out->rows += m.rows;
		return RG_COUNT_OK;
	}
	/* the value the key came from: dbname as sent, or the lower-cased
	 * catalog-schema rg_grpc_db_key_in built in raw */
	if (m.str_len[RG_GRPC_STR_DBNAME]) {
		name = m.str[RG_GRPC_STR_DBNAME];
		len = m.str_len[RG_GRPC_STR_DBNAME];
	} else {
		len = strnlen(raw, sizeof(raw));
	}
	rg_counts_add_db(out, name, len, m.rows);
	return RG_COUNT_OK;
}
