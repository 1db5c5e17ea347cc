// SPDX-License-Identifier: GPL-2.0
/* Validation of limit values and database names; see limits.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rowgate/dbname.h>

#include "limits.h"

#define QUOTED_INPUT_MAX 48 /* bytes of user input echoed in a message */

char *rg_quote_input(const char *s, char *dst, size_t dstlen)
{
	size_t out = 0;
	const unsigned char *p = (const unsigned char *)s;

	if (!dstlen)
		return dst;
	for (; *p; p++) {
		char piece[5];
		size_t n;

		if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
			piece[0] = (char)*p;
			piece[1] = 0;
		} else {
			snprintf(piece, sizeof(piece), "\\x%02x", *p);
		}
		n = strlen(piece);
		if (out + n + 4 > dstlen) { /* room for "..." and NUL */
			if (out + 4 <= dstlen) {
				memcpy(dst + out, "...", 3);
				out += 3;
			}
			break;
		}
		memcpy(dst + out, piece, n);
		out += n;
	}
	dst[out] = 0;
	return dst;
}

char *rg_format_db_name(const struct rg_db_key *key, char *buf, size_t buflen)
{
	__u32 len = (__u32)strnlen(key->name, sizeof(key->name));

	snprintf(buf, buflen, "%s%.*s",
		 rg_db_in_default_catalog(key->name, len) ? RG_DEFAULT_CATALOG "-" : "", (int)len,
		 key->name);
	return buf;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool has_space(const char *s)
{
	for (; *s; s++)
		if (is_space((unsigned char)*s))
			return true;
	return false;
}

/* Why a string that is not all ASCII digits is not a limit. */
static const char *limit_problem(const char *s)
{
	const char *p;

	if (has_space(s))
		return "remove the spaces";
	for (p = s; *p; p++)
		if ((unsigned char)*p >= 0x80)
			return "only the ASCII digits 0-9 are allowed";
	if (s[0] == '-')
		return "a limit cannot be negative; 0 disables it";
	if (s[0] == '+')
		return "write the number without a sign";
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return "write the number in decimal";
	if (s[0] >= '0' && s[0] <= '9' && strpbrk(s, "eE") &&
	    strspn(s, "0123456789.") == strcspn(s, "eE"))
		return "write all the digits, without an exponent";
	if (strchr(s, '.') || strchr(s, ','))
		return "a limit is a whole number of rows";
	if (s[0] >= '0' && s[0] <= '9')
		return "no unit: a limit is always in rows per second";
	return "only the digits 0-9 are allowed";
}

int rg_parse_limit(const char *s, __u64 *out, char *err, size_t errlen)
{
	char quoted[QUOTED_INPUT_MAX];
	__u64 value = 0;
	const char *p;

	if (!s || !*s) {
		snprintf(err, errlen,
			 "the limit is empty: give a whole number of rows per second (0 disables)");
		return -EINVAL;
	}
	rg_quote_input(s, quoted, sizeof(quoted));
	if (strspn(s, "0123456789") != strlen(s)) {
		snprintf(err, errlen, "invalid limit '%s': %s", quoted, limit_problem(s));
		return -EINVAL;
	}
	for (p = s; *p; p++) {
		unsigned int digit = (unsigned int)(*p - '0');

		if (value > (RG_U64_MAX - digit) / 10) {
			snprintf(err, errlen,
				 "invalid limit '%s': the maximum is %llu rows per second", quoted,
				 (unsigned long long)RG_U64_MAX);
			return -ERANGE;
		}
		value = value * 10 + digit;
	}
	*out = value;
	return 0;
}

static bool is_db_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':' || c == '-';
}

int rg_parse_db_name(const char *s, struct rg_db_key *key, char *err, size_t errlen)
{
	char quoted[QUOTED_INPUT_MAX];
	size_t len, i;
	int key_len;

	if (!s || !*s) {
		snprintf(err, errlen, "the database name is empty");
		return -EINVAL;
	}
	rg_quote_input(s, quoted, sizeof(quoted));
	len = strlen(s);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (is_db_name_char(c))
			continue;
		if (is_space(c))
			snprintf(err, errlen, "invalid database name '%s': it contains whitespace",
				 quoted);
		else if (c < 0x20 || c == 0x7f)
			snprintf(err, errlen,
				 "invalid database name '%s': it contains a control character",
				 quoted);
		else
			snprintf(err, errlen,
				 "invalid database name '%s': only letters, digits and _ . : - are allowed",
				 quoted);
		return -EINVAL;
	}
	/* anything this long fails below; the bound keeps the __u32 exact */
	if (len > 4 * RG_DB_NAME_MAX)
		len = 4 * RG_DB_NAME_MAX;
	key_len = rg_db_key_from_raw(key, s, (__u32)len, (__u32)len);
	if (key_len < 0) {
		snprintf(err, errlen, "database name '%s' is too long: at most %d bytes", quoted,
			 RG_DB_NAME_MAX - 1);
		return -ENAMETOOLONG;
	}
	if (key_len == 0) {
		snprintf(err, errlen, "invalid database name '%s': no database after the catalog",
			 quoted);
		return -EINVAL;
	}
	return 0;
}
