// SPDX-License-Identifier: GPL-2.0
/* The GreptimeDB statements of ingest_rows_rate_limit (user/rowgatectl/sqlopt.c). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "../../user/rowgatectl/sqlopt.h"

struct sql_case {
	const char *sql;
	int ret;
	enum rg_sql_action action;
	const char *db;
	__u64 limit;
	const char *hint; /* part of the message when ret != 0 */
};

#define OPT "'ingest_rows_rate_limit'"

static const struct sql_case sql_cases[] = {
	/* CREATE DATABASE */
	{ "CREATE DATABASE logs WITH (" OPT " = '10000')", 0, RG_SQL_SET_LIMIT, "logs", 10000,
	  NULL },
	{ "create database if not exists logs with ('INGEST_ROWS_RATE_LIMIT'='5');", 0,
	  RG_SQL_SET_LIMIT, "logs", 5, NULL },
	{ "  CREATE\tDATABASE  IF NOT EXISTS logs\nWITH(\n  ingest_rows_rate_limit = '7'\n) ;  ", 0,
	  RG_SQL_SET_LIMIT, "logs", 7, NULL },
	{ "CREATE DATABASE Logs WITH (" OPT " = '1')", 0, RG_SQL_SET_LIMIT, "logs", 1, NULL },
	{ "CREATE DATABASE \"Logs\" WITH (" OPT " = '1')", 0, RG_SQL_SET_LIMIT, "Logs", 1, NULL },
	{ "CREATE DATABASE `greptime-logs` WITH (" OPT " = '1')", 0, RG_SQL_SET_LIMIT, "logs", 1,
	  NULL },
	{ "CREATE DATABASE logs WITH (" OPT " = '18446744073709551615')", 0, RG_SQL_SET_LIMIT,
	  "logs", 18446744073709551615ULL, NULL },
	{ "CREATE DATABASE logs WITH (" OPT " = '0')", 0, RG_SQL_SET_LIMIT, "logs", 0, NULL },
	{ "CREATE DATABASE logs", 0, RG_SQL_NOTHING, "logs", 0, NULL },
	{ "CREATE DATABASE IF NOT EXISTS logs;", 0, RG_SQL_NOTHING, "logs", 0, NULL },
	{ "CREATE DATABASE logs WITH ('ttl' = '7d')", -EINVAL, 0, NULL, 0,
	  "Unrecognized database option key: ttl" },
	{ "CREATE DATABASE logs WITH (" OPT " = '1', 'ttl' = '7d')", -EINVAL, 0, NULL, 0,
	  "Unrecognized database option key" },
	{ "CREATE DATABASE logs WITH (" OPT " = '1', " OPT " = '2')", -EINVAL, 0, NULL, 0, "twice" },
	{ "CREATE DATABASE logs WITH (" OPT " = '1000/s')", -EINVAL, 0, NULL, 0, "unit" },
	{ "CREATE DATABASE logs WITH (" OPT " = '-1')", -EINVAL, 0, NULL, 0, "negative" },
	{ "CREATE DATABASE logs WITH (" OPT " = '1e3')", -EINVAL, 0, NULL, 0, "exponent" },
	{ "CREATE DATABASE logs WITH (" OPT " = '18446744073709551616')", -EINVAL, 0, NULL, 0,
	  "maximum" },
	{ "CREATE DATABASE logs WITH (" OPT " = '')", -EINVAL, 0, NULL, 0, "empty" },
	{ "CREATE DATABASE logs WITH (" OPT " = '10'", -EINVAL, 0, NULL, 0, "expected ')'" },
	{ "CREATE DATABASE logs WITH (" OPT " = '10)", -EINVAL, 0, NULL, 0, "unterminated" },
	{ "CREATE DATABASE logs WITH " OPT " = '10'", -EINVAL, 0, NULL, 0, "expected '('" },
	{ "CREATE DATABASE WITH (" OPT " = '10')", -EINVAL, 0, NULL, 0,
	  "expected a database name, found 'WITH'" },
	{ "ALTER DATABASE logs SET " OPT " = '1', 'ttl' = '2'", -EINVAL, 0, NULL, 0,
	  "Unrecognized database option key: ttl" },
	{ "ALTER DATABASE logs UNSET " OPT ", " OPT, -EINVAL, 0, NULL, 0, "twice" },
	{ "CREATE DATABASE IF EXISTS logs", -EINVAL, 0, NULL, 0, "expected NOT" },
	{ "CREATE DATABASE logs; DROP DATABASE logs", -EINVAL, 0, NULL, 0, "one statement" },
	/* ALTER DATABASE */
	{ "ALTER DATABASE logs SET " OPT " = '20000'", 0, RG_SQL_SET_LIMIT, "logs", 20000, NULL },
	{ "alter database logs set ingest_rows_rate_limit = 3;", 0, RG_SQL_SET_LIMIT, "logs", 3,
	  NULL },
	{ "ALTER DATABASE logs SET " OPT " = '0'", 0, RG_SQL_SET_LIMIT, "logs", 0, NULL },
	{ "ALTER DATABASE logs UNSET " OPT, 0, RG_SQL_UNSET_LIMIT, "logs", 0, NULL },
	{ "ALTER DATABASE logs UNSET " OPT ";", 0, RG_SQL_UNSET_LIMIT, "logs", 0, NULL },
	{ "ALTER DATABASE logs SET 'ttl' = '1d'", -EINVAL, 0, NULL, 0,
	  "Unrecognized database option key: ttl" },
	{ "ALTER DATABASE logs UNSET 'Ttl'", -EINVAL, 0, NULL, 0,
	  "Unrecognized database option key: ttl" },
	{ "ALTER DATABASE logs SET " OPT " = '+5'", -EINVAL, 0, NULL, 0, "sign" },
	{ "ALTER DATABASE logs SET " OPT " = '0x10'", -EINVAL, 0, NULL, 0, "decimal" },
	{ "ALTER DATABASE logs SET " OPT " '10'", -EINVAL, 0, NULL, 0, "expected '='" },
	{ "ALTER DATABASE logs SET " OPT " = '1', " OPT " = '2'", -EINVAL, 0, NULL, 0, "twice" },
	{ "ALTER DATABASE logs RENAME TO x", -EINVAL, 0, NULL, 0, "SET or UNSET" },
	{ "ALTER DATABASE logs SET " OPT " = '1' extra", -EINVAL, 0, NULL, 0, "unexpected 'extra'" },
	/* SHOW CREATE DATABASE */
	{ "SHOW CREATE DATABASE logs", 0, RG_SQL_SHOW_CREATE, "logs", 0, NULL },
	{ "show create database greptime-logs;", 0, RG_SQL_SHOW_CREATE, "logs", 0, NULL },
	{ "SHOW CREATE TABLE logs", -EINVAL, 0, NULL, 0, "expected DATABASE" },
	/* the option is per database, never per table */
	{ "ALTER TABLE cpu SET " OPT " = '10'", -EINVAL, 0, NULL, 0, "database option" },
	{ "CREATE TABLE cpu (ts TIMESTAMP TIME INDEX) WITH (" OPT " = '10')", -EINVAL, 0, NULL, 0,
	  "cannot be set on a table" },
	{ "ALTER TABLE cpu SET 'ttl' = '1d'", -EINVAL, 0, NULL, 0, "unsupported statement" },
	/* everything else */
	{ "", -EINVAL, 0, NULL, 0, "empty" },
	{ "   ;", -EINVAL, 0, NULL, 0, "unsupported" },
	{ "DROP DATABASE logs", -EINVAL, 0, NULL, 0, "unsupported statement" },
	{ "SELECT 1", -EINVAL, 0, NULL, 0, "unsupported statement" },
};

static void test_parse(void)
{
	size_t i;

	for (i = 0; i < sizeof(sql_cases) / sizeof(sql_cases[0]); i++) {
		const struct sql_case *c = &sql_cases[i];
		struct rg_sql_request req;
		char err[512] = "";
		int ret = rg_sql_parse(c->sql, &req, err, sizeof(err));

		CHECK(ret == c->ret, "[%s]: ret %d, want %d (%s)", c->sql, ret, c->ret, err);
		if (ret != c->ret)
			continue;
		if (ret == 0) {
			CHECK(req.action == c->action, "[%s]: action %d, want %d", c->sql,
			      req.action, c->action);
			CHECK(!strcmp(req.db.name, c->db), "[%s]: db '%s', want '%s'", c->sql,
			      req.db.name, c->db);
			CHECK_EQ_U64(req.limit, c->limit, c->sql);
		} else {
			CHECK(strstr(err, c->hint), "[%s]: message '%s' lacks '%s'", c->sql, err,
			      c->hint);
			CHECK(!strchr(err, '\n'), "[%s]: message has a newline", c->sql);
		}
	}
	printf("checked %zu statements\n", sizeof(sql_cases) / sizeof(sql_cases[0]));
}

static void check_show(const char *db, bool has_limit, __u64 limit, const char *want)
{
	struct rg_db_key key;
	char buf[256];
	int len;

	memset(&key, 0, sizeof(key));
	strncpy(key.name, db, sizeof(key.name) - 1);
	len = rg_sql_show_create(&key, has_limit, limit, buf, sizeof(buf));
	CHECK(!strcmp(buf, want), "SHOW CREATE %s: got\n%s\nwant\n%s", db, buf, want);
	CHECK(len == (int)strlen(want), "SHOW CREATE %s: length %d", db, len);
}

static void test_show_create(void)
{
	struct rg_sql_request req;
	char buf[256], err[256];

	check_show("logs", false, 0, "CREATE DATABASE IF NOT EXISTS logs");
	check_show("logs", true, 10000,
		   "CREATE DATABASE IF NOT EXISTS logs\nWITH(\n"
		   "  ingest_rows_rate_limit = '10000'\n)");
	check_show("logs", true, 18446744073709551615ULL,
		   "CREATE DATABASE IF NOT EXISTS logs\nWITH(\n"
		   "  ingest_rows_rate_limit = '18446744073709551615'\n)");
	check_show("a-b", false, 0, "CREATE DATABASE IF NOT EXISTS `a-b`");
	check_show("Logs", false, 0, "CREATE DATABASE IF NOT EXISTS `Logs`");
	/* keywords where the name goes, and a name that is itself
	 * "greptime-..." (found by tests/fuzz/fuzz_sqlopt) read back too */
	check_show("set", false, 0, "CREATE DATABASE IF NOT EXISTS `set`");
	check_show("greptime-x", false, 0, "CREATE DATABASE IF NOT EXISTS `greptime-greptime-x`");
	{
		static const char *const names[] = { "set", "unset", "with", "greptime-x" };
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			memset(&req, 0, sizeof(req));
			strcpy(req.db.name, names[i]);
			rg_sql_show_create(&req.db, true, 7, buf, sizeof(buf));
			memset(&req, 0, sizeof(req));
			CHECK(rg_sql_parse(buf, &req, err, sizeof(err)) == 0 &&
				      !strcmp(req.db.name, names[i]) && req.limit == 7,
			      "'%s' reads back as '%s': %s", buf, req.db.name, err);
		}
	}

	/* what SHOW CREATE prints reads back as the same request */
	memset(&req.db, 0, sizeof(req.db));
	strcpy(req.db.name, "Logs.v1");
	rg_sql_show_create(&req.db, true, 42, buf, sizeof(buf));
	CHECK(rg_sql_parse(buf, &req, err, sizeof(err)) == 0, "round trip of '%s': %s", buf, err);
	CHECK(req.action == RG_SQL_SET_LIMIT && req.limit == 42 && !strcmp(req.db.name, "Logs.v1"),
	      "round trip of '%s': db '%s' limit %llu", buf, req.db.name,
	      (unsigned long long)req.limit);
}

int main(void)
{
	test_parse();
	test_show_create();
	return check_report("test_sqlopt");
}
