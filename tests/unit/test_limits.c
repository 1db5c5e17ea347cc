// SPDX-License-Identifier: GPL-2.0
/* Limit values and database names as users type them (user/lib/limits.c). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "../../user/lib/limits.h"

struct limit_case {
	const char *input;
	int ret;
	__u64 value;	  /* when ret == 0 */
	const char *hint; /* part of the message when ret != 0 */
};

static const struct limit_case limit_cases[] = {
	{ "0", 0, 0, NULL },
	{ "1", 0, 1, NULL },
	{ "1000", 0, 1000, NULL },
	{ "007", 0, 7, NULL },
	{ "9223372036854775807", 0, 9223372036854775807ULL, NULL },
	{ "9223372036854775808", 0, 9223372036854775808ULL, NULL },
	{ "18446744073709551615", 0, 18446744073709551615ULL, NULL },
	{ "18446744073709551616", -ERANGE, 0, "maximum" },
	{ "99999999999999999999999", -ERANGE, 0, "maximum" },
	{ "", -EINVAL, 0, "empty" },
	{ " 5", -EINVAL, 0, "spaces" },
	{ "5 ", -EINVAL, 0, "spaces" },
	{ "1 000", -EINVAL, 0, "spaces" },
	{ "5\n", -EINVAL, 0, "spaces" },
	{ "1000/s", -EINVAL, 0, "unit" },
	{ "1000rows", -EINVAL, 0, "unit" },
	{ "-1", -EINVAL, 0, "negative" },
	{ "-0", -EINVAL, 0, "negative" },
	{ "+5", -EINVAL, 0, "sign" },
	{ "1e3", -EINVAL, 0, "exponent" },
	{ "1E3", -EINVAL, 0, "exponent" },
	{ "1.5", -EINVAL, 0, "whole number" },
	{ "1,000", -EINVAL, 0, "whole number" },
	{ "0x10", -EINVAL, 0, "decimal" },
	{ "abc", -EINVAL, 0, "digits" },
	{ "\xd9\xa1\xd9\xa2", -EINVAL, 0, "ASCII" }, /* Arabic-Indic 12 */
	{ "1\xef\xbc\x92", -EINVAL, 0, "ASCII" },    /* 1 + fullwidth 2 */
	{ "\xef\xbc\x91\xef\xbc\x90", -EINVAL, 0, "ASCII" },
};

static void test_limits(void)
{
	size_t i;

	for (i = 0; i < sizeof(limit_cases) / sizeof(limit_cases[0]); i++) {
		const struct limit_case *c = &limit_cases[i];
		char err[256] = "";
		__u64 value = 12345;
		int ret = rg_parse_limit(c->input, &value, err, sizeof(err));

		CHECK(ret == c->ret, "limit '%s': ret %d, want %d (%s)", c->input, ret, c->ret, err);
		if (c->ret == 0 && ret == 0)
			CHECK_EQ_U64(value, c->value, c->input);
		if (c->ret != 0) {
			CHECK(value == 12345, "limit '%s': output written on error", c->input);
			CHECK(strstr(err, c->hint), "limit '%s': message '%s' lacks '%s'", c->input,
			      err, c->hint);
			CHECK(!strchr(err, '\n'), "limit '%s': message has a newline", c->input);
		}
	}
	CHECK(rg_parse_limit(NULL, &(__u64){ 0 }, (char[64]){ 0 }, 64) == -EINVAL,
	      "NULL limit refused");
	printf("checked %zu limit values\n", sizeof(limit_cases) / sizeof(limit_cases[0]));
}

struct db_case {
	const char *input;
	int ret;
	const char *key;  /* normalized, when ret == 0 */
	const char *hint; /* part of the message otherwise */
};

#define NAME_63 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"
#define NAME_64 NAME_63 "l"

static const struct db_case db_cases[] = {
	{ "logs", 0, "logs", NULL },
	{ "greptime-logs", 0, "logs", NULL },
	{ "a-b", 0, "a-b", NULL },
	{ "Logs_2024.v1:x", 0, "Logs_2024.v1:x", NULL },
	{ NAME_63, 0, NAME_63, NULL },
	{ "greptime-" NAME_63, 0, NAME_63, NULL },
	{ NAME_64, -ENAMETOOLONG, NULL, "too long" },
	{ "greptime-" NAME_64, -ENAMETOOLONG, NULL, "too long" },
	{ "", -EINVAL, NULL, "empty" },
	{ "greptime-", -EINVAL, NULL, "no database" },
	{ "my logs", -EINVAL, NULL, "whitespace" },
	{ " logs", -EINVAL, NULL, "whitespace" },
	{ "logs\t", -EINVAL, NULL, "whitespace" },
	{ "lo\x01gs", -EINVAL, NULL, "control" },
	{ "logs\x7f", -EINVAL, NULL, "control" },
	{ "logs&x=1", -EINVAL, NULL, "allowed" },
	{ "logs%20", -EINVAL, NULL, "allowed" },
	{ "a/b", -EINVAL, NULL, "allowed" },
	{ "caf\xc3\xa9", -EINVAL, NULL, "allowed" },
};

static void test_db_names(void)
{
	size_t i;

	for (i = 0; i < sizeof(db_cases) / sizeof(db_cases[0]); i++) {
		const struct db_case *c = &db_cases[i];
		struct rg_db_key key;
		char err[256] = "";
		int ret;

		memset(&key, 0x55, sizeof(key));
		ret = rg_parse_db_name(c->input, &key, err, sizeof(err));
		CHECK(ret == c->ret, "db '%s': ret %d, want %d (%s)", c->input, ret, c->ret, err);
		if (c->ret == 0 && ret == 0) {
			size_t len = strlen(c->key), j;
			bool padded = true;

			CHECK(!memcmp(key.name, c->key, len), "db '%s': key '%.*s'", c->input,
			      RG_DB_NAME_MAX, key.name);
			for (j = len; j < RG_DB_NAME_MAX; j++)
				padded &= key.name[j] == 0;
			CHECK(padded, "db '%s': key not NUL-padded", c->input);
		}
		if (c->ret != 0)
			CHECK(strstr(err, c->hint), "db '%s': message '%s' lacks '%s'", c->input,
			      err, c->hint);
	}
	printf("checked %zu database names\n", sizeof(db_cases) / sizeof(db_cases[0]));
}

static void test_quote_input(void)
{
	char out[16];

	CHECK(!strcmp(rg_quote_input("a\x01"
				     "b",
				     out, sizeof(out)),
		      "a\\x01b"),
	      "control byte escaped: %s", out);
	rg_quote_input("0123456789abcdefghij", out, sizeof(out));
	CHECK(strlen(out) < sizeof(out) && strstr(out, "..."), "long input cut: %s", out);
}

int main(void)
{
	test_limits();
	test_db_names();
	test_quote_input();
	return check_report("test_limits");
}
