// SPDX-License-Identifier: MIT
/* Database names (rowgate/dbname.h, user/lib/limits.c): the kernel's padded
 * key builder against the generic one, and what the tools accept
 * (rg_parse_db_name) against a plain model: [A-Za-z0-9_.:-], "greptime-"
 * dropped, 1..63 bytes left; an accepted name's key is the kernel's key of
 * the same bytes, so a limit set by name matches what the kernel resolves.
 *
 * Input: the raw value bytes (a query parameter or header value). */
#include <errno.h>
#include "rowgate/dbname.h"
#include "../../user/lib/limits.h"
#include "fuzz.h"

static bool model_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':' || c == '-';
}

/* 0 with the normalized length, or the error rg_parse_db_name must give. */
static int model(const char *s, size_t len, size_t *norm)
{
	size_t i, skip = 0;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (!model_char((uint8_t)s[i]))
			return -EINVAL;
	if (len >= 9 && memcmp(s, "greptime-", 9) == 0)
		skip = 9;
	*norm = len - skip;
	if (*norm >= RG_DB_NAME_MAX)
		return -ENAMETOOLONG;
	return *norm ? 0 : -EINVAL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char raw[RG_DB_RAW_MAX], err[160], *s;
	struct rg_db_key a, b, c;
	int la, lb, r, m;
	size_t norm = 0;

	/* the kernel's view: a captured value, zero past its length */
	if (size <= RG_DB_RAW_MAX) {
		memset(raw, 0, sizeof(raw));
		memcpy(raw, data, size);
		memset(&a, 0x55, sizeof(a));
		memset(&b, 0xaa, sizeof(b));
		la = rg_db_key_from_raw(&a, raw, (__u32)size, sizeof(raw));
		lb = rg_db_key_from_padded(&b, raw, (__u32)size);
		FUZZ_ASSERT(la == lb, "generic %d, padded %d", la, lb);
		if (la >= 0)
			FUZZ_ASSERT(memcmp(&a, &b, sizeof(a)) == 0, "keys differ");
	}

	/* the tools' view: a NUL-terminated argument */
	s = fuzz_str(data, size);
	memset(err, 0, sizeof(err));
	r = rg_parse_db_name(s, &c, err, sizeof(err));
	m = model(s, strlen(s), &norm);
	FUZZ_ASSERT(r == m, "'%s': parse %d, model %d (%s)", s, r, m, err);
	if (r == 0) {
		size_t len = strlen(s);

		FUZZ_ASSERT(strlen(c.name) == norm, "key length %zu, want %zu", strlen(c.name),
			    norm);
		memset(raw, 0, sizeof(raw));
		FUZZ_ASSERT(len <= sizeof(raw), "accepted %zu bytes", len);
		memcpy(raw, s, len);
		lb = rg_db_key_from_padded(&b, raw, (__u32)len);
		FUZZ_ASSERT(lb == (int)norm && memcmp(&b, &c, sizeof(b)) == 0,
			    "the kernel resolves '%s' differently", s);
	} else {
		FUZZ_ASSERT(err[0] && memchr(err, 0, sizeof(err)), "no reason given");
	}
	free(s);
	return 0;
}
