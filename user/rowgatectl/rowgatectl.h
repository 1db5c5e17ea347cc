/* SPDX-License-Identifier: GPL-2.0 */
/* What rowgatectl's files share: its options (main.c), one request to the
 * daemon or to rowgate-meta (call.c), the limit commands and the SQL
 * statements (limit.c), and what reads counters and health (stats.c).
 * Commands return the exit status.
 */
#ifndef ROWGATE_USER_ROWGATECTL_ROWGATECTL_H
#define ROWGATE_USER_ROWGATECTL_ROWGATECTL_H

#include <stdbool.h>
#include <jansson.h>

#include "rowgate/abi.h"
#include "../lib/log.h"

#define EXIT_USAGE 2 /* bad command line, as getopt-based tools do */
#define ERR_MAX	   512
/* rowgate-meta answers an admin call well within this */
#define META_CONNECT_TIMEOUT_MS 2000L
#define META_TIMEOUT_MS         10000L

struct ctl_config {
	const char *socket_path;
	const char *bpffs;      /* pins, for status and detach */
	const char *meta_url;   /* manage cluster limits at rowgate-meta */
	const char *token_file;
	bool json;
	enum rg_log_level log_level;
};

extern struct ctl_config ctl_cfg;

/* main.c: a failure as one line (JSON on stdout with --json, else on
 * stderr): EXIT_FAILURE; a usage error: EXIT_USAGE; a JSON value, compact. */
int ctl_fail(const char *msg);
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ctl_print_json(const json_t *value);
/* A database name as typed: 0, or EXIT_FAILURE after reporting. */
int ctl_parse_db_arg(const char *arg, struct rg_db_key *db);

/* call.c: send request (stolen) to rowgated, or to rowgate-meta with
 * --meta; the reply, or NULL after reporting. */
json_t *ctl_call_daemon(json_t *request);

/* limit.c */
int ctl_limit_set(const struct rg_db_key *db, const char *typed);
int ctl_limit_unset(const struct rg_db_key *db);
int ctl_limit_show(const struct rg_db_key *db_or_null);
int ctl_sql(const char *statement);

/* stats.c */
int ctl_stats(const struct rg_db_key *db_or_null);
int ctl_status(void);
int ctl_detach(void);

#endif /* ROWGATE_USER_ROWGATECTL_ROWGATECTL_H */
