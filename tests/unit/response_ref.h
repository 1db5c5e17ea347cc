/* SPDX-License-Identifier: GPL-2.0 */
/* The reference for the kernel's responses: snprintf of the printf
 * templates of rowgate/response.h with a plan's fields, what test_response
 * and the fuzzer hold rg_response_plan and rg_response_write against. */
#ifndef ROWGATE_TEST_RESPONSE_REF_H
#define ROWGATE_TEST_RESPONSE_REF_H

#include <stdio.h>
#include "rowgate/response.h"

/* The reference: the printf template with the plan's fields. */
static inline int format_ref(char *out, size_t n, const struct rg_response *r, const char *db)
{
	static const char *const msgs[] = { RG_STR_MALFORMED, RG_STR_FRAMING, RG_STR_TOO_LARGE,
					     RG_STR_H2, RG_STR_H2_UNCOUNTED };
	const char *ows = r->ows ? RG_STR_OWS : "";
	const char *conn = r->close ? RG_STR_CLOSE : RG_STR_KEEP_ALIVE;

	if (r->kind == RG_RESP_400)
		return snprintf(out, n, RG_400_HEAD_FMT RG_400_BODY_FMT, ows, conn,
				(unsigned long long)r->content_length, msgs[r->error]);
	return snprintf(out, n,
			r->short_form ? RG_429_HEAD_FMT RG_429_BODY_SHORT_FMT :
					RG_429_HEAD_FMT RG_429_BODY_FMT,
			(unsigned long long)r->retry_after_s, ows, conn,
			(unsigned long long)r->content_length, db,
			r->estimated ? RG_STR_ESTIMATED : "", (unsigned long long)r->rows,
			(unsigned long long)r->quota_rows_per_s,
			(unsigned long long)r->limit_rows_per_s);
}

#endif
