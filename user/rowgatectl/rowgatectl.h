/* SPDX-License-Identifier: GPL-2.0 */
/* What rowgatectl's files share: the options and how results are reported
 * (report.c), one request to the daemon or to rowgate-meta (call.c), the
 * limit commands and the SQL statements (limit.c), and what reads counters
 * and health (stats.c, top.c); main.c parses the command line and
 * dispatches.
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
	const char *token_file; /* the admin token */
	const char *meta_ca;    /* https:// --meta: CA, client certificate and key */
	const char *meta_cert;
	const char *meta_key;
	bool json;
	enum rg_log_level log_level;
};

/* report.c: the options, set once by main.c; a failure as one line (JSON
 * on stdout with --json, else on stderr), returning EXIT_FAILURE; a JSON
 * value, compact. */
extern struct ctl_config ctl_cfg;
int ctl_fail(const char *msg);
void ctl_print_json(const json_t *value);

/* call.c: send request (stolen) to rowgated, or to rowgate-meta with
 * --meta; the reply, or NULL after reporting. */
json_t *ctl_call_daemon(json_t *request);

/* limit.c */
int ctl_limit_set(const struct rg_db_key *db, const char *typed, bool shadow);
int ctl_limit_unset(const struct rg_db_key *db);
int ctl_limit_show(const struct rg_db_key *db_or_null);
int ctl_sql(const char *statement);

/* stats.c */
int ctl_stats(const struct rg_db_key *db_or_null);
int ctl_status(void);
int ctl_detach(void);

/* top.c: argv holds top's own arguments */
int ctl_top(int argc, char **argv);

#endif /* ROWGATE_USER_ROWGATECTL_ROWGATECTL_H */
