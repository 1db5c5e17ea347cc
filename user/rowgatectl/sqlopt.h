/* SPDX-License-Identifier: GPL-2.0 */
/* The GreptimeDB statements that carry the database option
 * ingest_rows_rate_limit, parsed into what rowgatectl asks the daemon.
 * Pure functions: no I/O, no allocation.
 *
 * Accepted (keywords case-insensitive, optional trailing ';'):
 *   CREATE DATABASE [IF NOT EXISTS] db [WITH ('ingest_rows_rate_limit' = 'N')]
 *   ALTER DATABASE db SET 'ingest_rows_rate_limit' = 'N'
 *   ALTER DATABASE db UNSET 'ingest_rows_rate_limit'
 *   SHOW CREATE DATABASE db
 * Option keys are lower-cased as in GreptimeDB and may be quoted or bare; any
 * other key is refused ("Unrecognized database option key").  Unquoted
 * database names are lower-cased, quoted ones ("x" or `x`) kept as written.
 */
#ifndef ROWGATE_USER_ROWGATECTL_SQLOPT_H
#define ROWGATE_USER_ROWGATECTL_SQLOPT_H

#include <stdbool.h>
#include <stddef.h>

#include <rowgate/abi.h>

#define RG_OPT_INGEST_ROWS_RATE_LIMIT "ingest_rows_rate_limit"

enum rg_sql_action {
	RG_SQL_NOTHING,	    /* CREATE DATABASE without the option */
	RG_SQL_SET_LIMIT,   /* CREATE ... WITH, ALTER ... SET */
	RG_SQL_UNSET_LIMIT, /* ALTER ... UNSET */
	RG_SQL_SHOW_CREATE, /* SHOW CREATE DATABASE */
};

struct rg_sql_request {
	enum rg_sql_action action;
	struct rg_db_key db; /* normalized with rg_parse_db_name */
	__u64 limit;	     /* RG_SQL_SET_LIMIT only */
};

/* Returns 0, or -EINVAL with a one-line message in err. */
int rg_sql_parse(const char *sql, struct rg_sql_request *req, char *err, size_t errlen);

/*
 * The "Create Database" column of SHOW CREATE DATABASE, as GreptimeDB prints
 * it: "CREATE DATABASE IF NOT EXISTS db" and, with a limit, "\nWITH(\n
 * ingest_rows_rate_limit = 'N'\n)".  The name is quoted with backticks only
 * when it would not read back as the same identifier.  Returns the length
 * that was needed (as snprintf).
 */
int rg_sql_show_create(const struct rg_db_key *db, bool has_limit, __u64 limit, char *buf,
		       size_t buflen);

#endif /* ROWGATE_USER_ROWGATECTL_SQLOPT_H */
