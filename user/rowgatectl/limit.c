// SPDX-License-Identifier: GPL-2.0
/* rowgatectl limit set/unset/show and sql: the limit commands, and the
 * GreptimeDB statements (sqlopt.c) turned into them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/admin.h"
#include "../lib/limits.h"
#include "../lib/state.h"
#include "rowgatectl.h"
#include "sqlopt.h"

static void format_limit(__u64 limit, char *buf, size_t len)
{
	if (limit == 0)
		snprintf(buf, len, "0 (disabled)");
	else
		snprintf(buf, len, "%llu", (unsigned long long)limit);
}

/* A change made by `rowgatectl sql` says so: the daemons log the source. */
static json_t *with_source(json_t *request, const char *source)
{
	if (request && source)
		json_object_set_new(request, "source", json_string(source));
	return request;
}

static int limit_set(const struct rg_db_key *db, const char *typed, bool shadow,
		     const char *source)
{
	char shown[32];
	json_t *reply, *request;
	__u64 limit;

	request = json_pack("{s:s, s:s, s:s}", "op", "limit_set", "db", db->name, "limit", typed);
	/* sent only when asked: an older rowgated refuses nothing it knows */
	if (request && shadow)
		json_object_set_new(request, "shadow", json_true());
	reply = ctl_call_daemon(with_source(request, source));
	if (!reply)
		return EXIT_FAILURE;
	if (ctl_cfg.json) {
		ctl_print_json(reply);
	} else {
		/* the daemon's echo, else what was sent (already validated) */
		if (rg_json_get_u64(json_object_get(reply, "limit"), &limit) &&
		    rg_parse_limit(typed, &limit, shown, sizeof(shown)))
			limit = 0;
		format_limit(limit, shown, sizeof(shown));
		printf("%s: limit set to %s%s%s\n", db->name, shown,
		       limit ? " rows/s" : ", ingestion is unlimited",
		       shadow && limit ? " in shadow mode: counted, never refused" : "");
	}
	json_decref(reply);
	return EXIT_SUCCESS;
}

int ctl_limit_set(const struct rg_db_key *db, const char *typed, bool shadow)
{
	return limit_set(db, typed, shadow, NULL);
}

static int limit_unset(const struct rg_db_key *db, const char *source)
{
	json_t *reply;

	reply = ctl_call_daemon(
		with_source(json_pack("{s:s, s:s}", "op", "limit_unset", "db", db->name), source));
	if (!reply)
		return EXIT_FAILURE;
	if (ctl_cfg.json)
		ctl_print_json(reply);
	else
		printf("%s: limit removed, ingestion is unlimited\n", db->name);
	json_decref(reply);
	return EXIT_SUCCESS;
}

int ctl_limit_unset(const struct rg_db_key *db)
{
	return limit_unset(db, NULL);
}

/* The limits array of a limit_show reply, NULL after reporting. */
static json_t *show_limits(const struct rg_db_key *db_or_null)
{
	json_t *request, *reply, *limits;

	request = db_or_null ? json_pack("{s:s, s:s}", "op", "limit_show", "db", db_or_null->name) :
			       json_pack("{s:s}", "op", "limit_show");
	reply = ctl_call_daemon(request);
	if (!reply)
		return NULL;
	limits = json_object_get(reply, "limits");
	if (!json_is_array(limits)) {
		json_decref(reply);
		ctl_fail("rowgated sent a limit_show reply without \"limits\"");
		return NULL;
	}
	return reply;
}

int ctl_limit_show(const struct rg_db_key *db_or_null)
{
	json_t *reply = show_limits(db_or_null), *entry;
	int width = (int)strlen("DATABASE");
	size_t i;

	if (!reply)
		return EXIT_FAILURE;
	if (ctl_cfg.json) {
		ctl_print_json(reply);
		goto out;
	}
	json_array_foreach(json_object_get(reply, "limits"), i, entry) {
		const char *name = json_string_value(json_object_get(entry, "db"));

		if (name && (int)strlen(name) > width)
			width = (int)strlen(name);
	}
	if (!json_array_size(json_object_get(reply, "limits"))) {
		if (db_or_null)
			printf("%s: no limit, ingestion is unlimited\n", db_or_null->name);
		else
			printf("no limits configured\n");
		goto out;
	}
	printf("%-*s  %-16s  %s\n", width, "DATABASE", "LIMIT (rows/s)", "MODE");
	json_array_foreach(json_object_get(reply, "limits"), i, entry) {
		const char *name = json_string_value(json_object_get(entry, "db"));
		char shown[32];
		__u64 limit;

		if (rg_json_get_u64(json_object_get(entry, "limit"), &limit))
			snprintf(shown, sizeof(shown), "?");
		else
			format_limit(limit, shown, sizeof(shown));
		printf("%-*s  %-16s  %s\n", width, name ? name : "?", shown,
		       json_is_true(json_object_get(entry, "shadow")) ? "shadow" : "enforce");
	}
out:
	json_decref(reply);
	return EXIT_SUCCESS;
}

static int cmd_show_create(const struct rg_db_key *db)
{
	json_t *reply = show_limits(db), *entry, *out;
	bool has_limit = false;
	char text[256];
	__u64 limit = 0;
	size_t i;

	if (!reply)
		return EXIT_FAILURE;
	json_array_foreach(json_object_get(reply, "limits"), i, entry) {
		const char *name = json_string_value(json_object_get(entry, "db"));

		if (name && !strcmp(name, db->name) &&
		    !rg_json_get_u64(json_object_get(entry, "limit"), &limit))
			has_limit = true;
	}
	json_decref(reply);
	rg_sql_show_create(db, has_limit, limit, text, sizeof(text));
	if (ctl_cfg.json) {
		/* the two columns GreptimeDB returns */
		out = json_pack("{s:s, s:s}", "Database", db->name, "Create Database", text);
		if (out)
			ctl_print_json(out);
		json_decref(out);
	} else {
		printf("%s\n", text);
	}
	return EXIT_SUCCESS;
}

int ctl_sql(const char *statement)
{
	struct rg_sql_request req;
	char err[ERR_MAX], typed[24];

	if (rg_sql_parse(statement, &req, err, sizeof(err)))
		return ctl_fail(err);
	switch (req.action) {
	case RG_SQL_SET_LIMIT:
		snprintf(typed, sizeof(typed), "%llu", (unsigned long long)req.limit);
		return limit_set(&req.db, typed, false, "sql");
	case RG_SQL_UNSET_LIMIT:
		return limit_unset(&req.db, "sql");
	case RG_SQL_SHOW_CREATE:
		return cmd_show_create(&req.db);
	case RG_SQL_NOTHING:
		break;
	}
	if (ctl_cfg.json)
		printf("{\"ok\":true}\n");
	else
		printf("%s: nothing to do, rowgate keeps only the option '%s'\n", req.db.name,
		       RG_OPT_INGEST_ROWS_RATE_LIMIT);
	return EXIT_SUCCESS;
}
