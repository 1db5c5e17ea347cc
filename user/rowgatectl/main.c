// SPDX-License-Identifier: GPL-2.0
/* rowgatectl: set, remove and show per-database ingestion limits and read
 * the counters of a running rowgated, through its admin socket. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <jansson.h>

#include "../lib/admin.h"
#include "../lib/health.h"
#include "../lib/limits.h"
#include "../lib/log.h"
#include "../lib/http_client.h"
#include "../lib/meta_proto.h"
#include "../lib/detach.h"
#include "rowgate_version.h"
#include "sqlopt.h"
#include "../lib/state.h"


#define EXIT_USAGE 2 /* bad command line, as getopt-based tools do */
#define ERR_MAX	   512
/* rowgate-meta answers an admin call well within this */
#define META_CONNECT_TIMEOUT_MS 2000L
#define META_TIMEOUT_MS         10000L

#define RG_DEFAULT_BPFFS "/sys/fs/bpf/rowgate"

struct ctl_config {
	const char *socket_path;
	const char *bpffs;      /* pins, for status and detach */
	const char *meta_url;   /* manage cluster limits at rowgate-meta */
	const char *token_file;
	bool json;
	enum rg_log_level log_level;
};

static const struct ctl_config ctl_defaults = {
	.socket_path = RG_ADMIN_DEFAULT_PATH,
	.bpffs = RG_DEFAULT_BPFFS,
	.json = false,
	.log_level = RG_LOG_DEFAULT,
};

static struct ctl_config cfg;

enum {
	OPT_LOG_LEVEL = 256,
	OPT_META,
	OPT_TOKEN_FILE,
	OPT_BPFFS,
};

struct ctl_option {
	struct option opt;
	const char *metavar;
	const char *help;
	const char *default_value;
};

static const struct ctl_option ctl_options[] = {
	{ { "socket", required_argument, NULL, 's' },
	  "PATH",
	  "admin socket of rowgated",
	  RG_ADMIN_DEFAULT_PATH },
	{ { "bpffs", required_argument, NULL, OPT_BPFFS },
	  "DIR",
	  "rowgated's pin directory (status, detach)",
	  RG_DEFAULT_BPFFS },
	{ { "meta", required_argument, NULL, OPT_META },
	  "URL[,URL]",
	  "manage the cluster's limits at rowgate-meta instead of one rowgated",
	  "off" },
	{ { "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	  "PATH",
	  "bearer token for --meta (first line of the file)",
	  "none" },
	{ { "json", no_argument, NULL, 'j' },
	  NULL,
	  "print JSON, errors included, instead of tables",
	  "off" },
	{ { "log-level", required_argument, NULL, OPT_LOG_LEVEL }, "LEVEL", RG_LOG_LEVELS, "warn" },
	{ { "help", no_argument, NULL, 'h' }, NULL, "show this help and exit", NULL },
	{ { "version", no_argument, NULL, 'V' }, NULL, "show the version and exit", NULL },
};

#define N_OPTIONS (sizeof(ctl_options) / sizeof(ctl_options[0]))

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: rowgatectl [OPTIONS] COMMAND [ARGS]\n"
		     "\n"
		     "Set, remove and show the per-database ingestion rate limits (rows per\n"
		     "second) that rowgated enforces in the kernel, and read its counters.\n"
		     "\n"
		     "Commands:\n"
		     "  limit set DB N      limit database DB to N rows per second (0 disables)\n"
		     "  limit unset DB      remove the limit of DB: its ingestion is unlimited\n"
		     "  limit show [DB]     list the configured limits (of DB only)\n"
		     "  stats [DB]          admission counters per database, and host-wide ones;\n"
		     "                      with --meta, the allocation: each frontend's quota\n"
		     "  sql \"STATEMENT\"     the GreptimeDB statements of the database option\n"
		     "                      ingest_rows_rate_limit (see EXAMPLES)\n"
		     "  status              whether enforcement is on for each guarded port, read\n"
		     "                      from the kernel (programs attached, cgroup present,\n"
		     "                      connections tracked/adopting); exit 1 when it is off\n"
		     "  detach              stop enforcing: detach the programs and release every\n"
		     "                      guarded connection (limits, debt and counters stay\n"
		     "                      pinned).  Through rowgated when it runs (it stays up,\n"
		     "                      not enforcing, until restarted), else on the pins\n"
		     "                      under --bpffs directly\n"
		     "\n"
		     "Options:\n");
	for (i = 0; i < N_OPTIONS; i++) {
		const struct ctl_option *o = &ctl_options[i];
		char left[48];
		int shortopt = o->opt.val < 256 ? o->opt.val : 0;

		snprintf(left, sizeof(left), "%c%c%c --%s%s%s", shortopt ? '-' : ' ',
			 shortopt ? shortopt : ' ', shortopt ? ',' : ' ', o->opt.name,
			 o->metavar ? " " : "", o->metavar ? o->metavar : "");
		fprintf(out, "  %-24s%s", left, o->help);
		if (o->default_value)
			fprintf(out, " (default: %s)", o->default_value);
		fputc('\n', out);
	}
	fprintf(out,
		"\n"
		"Values:\n"
		"  DB  a database name: letters, digits and _ . : - (at most %d bytes);\n"
		"      \"greptime-logs\" names database \"logs\" of the default catalog.\n"
		"  N   a whole number of rows per second, 0 to %llu;\n"
		"      no unit (\"1000/s\"), sign, exponent (\"1e3\") or hex.\n"
		"\n"
		"Exit status: 0 on success, 1 when the request failed (status: when\n"
		"enforcement is off for any guarded port), 2 on a usage error.\n"
		"\n"
		"EXAMPLES\n"
		"  rowgatectl limit set logs 10000\n"
		"  rowgatectl limit show\n"
		"  rowgatectl --json stats logs\n"
		"  rowgatectl status || alert 'rowgate is not enforcing'\n"
		"  rowgatectl limit unset logs\n"
		"  rowgatectl sql \"CREATE DATABASE logs WITH ('ingest_rows_rate_limit' = '10000')\"\n"
		"  rowgatectl sql \"ALTER DATABASE logs SET 'ingest_rows_rate_limit' = '20000'\"\n"
		"  rowgatectl sql \"ALTER DATABASE logs UNSET 'ingest_rows_rate_limit'\"\n"
		"  rowgatectl sql \"SHOW CREATE DATABASE logs\"\n"
		"  rowgatectl --socket /tmp/rg/admin.sock limit show logs\n"
		"  rowgatectl --meta http://10.0.0.5:4100 --token-file /etc/rowgate/token \\\n"
		"             limit set logs 10000\n"
		"  rowgatectl --meta http://10.0.0.5:4100 stats logs\n",
		RG_DB_NAME_MAX - 1, (unsigned long long)RG_U64_MAX);
}

/* One line: JSON on stdout in --json mode, a sentence on stderr otherwise. */
static int fail(const char *msg)
{
	if (cfg.json) {
		json_t *obj = json_pack("{s:s}", "error", msg);
		char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

		if (text)
			printf("%s\n", text);
		free(text);
		json_decref(obj);
	} else {
		pr_err("%s", msg);
	}
	return EXIT_FAILURE;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	char msg[256], line[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "%s (see rowgatectl --help)", msg);
	fail(line);
	return EXIT_USAGE;
}

static void print_json(const json_t *value)
{
	char *text = json_dumps(value, JSON_COMPACT);

	if (text)
		printf("%s\n", text);
	free(text);
}

static json_t *call_meta(json_t *request);

/* Send request (stolen) and return the reply, or NULL after reporting. */
static json_t *call_daemon(json_t *request)
{
	char err[ERR_MAX];
	json_t *reply = NULL;
	int ret;

	if (!request) {
		fail("out of memory");
		return NULL;
	}
	if (rg_log_get_level() >= RG_LOG_DEBUG) {
		char *text = json_dumps(request, JSON_COMPACT);

		pr_debug("request to %s: %s", cfg.socket_path, text ? text : "");
		free(text);
	}
	if (cfg.meta_url)
		return call_meta(request);
	ret = rg_admin_call(cfg.socket_path, request, &reply, err, sizeof(err));
	json_decref(request);
	if (ret) {
		json_decref(reply);
		fail(err);
		return NULL;
	}
	return reply;
}

static int parse_db_arg(const char *arg, struct rg_db_key *db)
{
	char err[ERR_MAX];

	if (rg_parse_db_name(arg, db, err, sizeof(err)))
		return fail(err);
	return 0;
}

static void format_limit(__u64 limit, char *buf, size_t len)
{
	if (limit == 0)
		snprintf(buf, len, "0 (disabled)");
	else
		snprintf(buf, len, "%llu", (unsigned long long)limit);
}

static int set_limit(const struct rg_db_key *db, const char *typed)
{
	char shown[32];
	json_t *reply;
	__u64 limit;

	reply = call_daemon(
		json_pack("{s:s, s:s, s:s}", "op", "limit_set", "db", db->name, "limit", typed));
	if (!reply)
		return EXIT_FAILURE;
	if (cfg.json) {
		print_json(reply);
	} else {
		/* the daemon's echo, else what was sent (already validated) */
		if (rg_json_get_u64(json_object_get(reply, "limit"), &limit) &&
		    rg_parse_limit(typed, &limit, shown, sizeof(shown)))
			limit = 0;
		format_limit(limit, shown, sizeof(shown));
		printf("%s: limit set to %s%s\n", db->name, shown,
		       limit ? " rows/s" : ", ingestion is unlimited");
	}
	json_decref(reply);
	return EXIT_SUCCESS;
}

static int unset_limit(const struct rg_db_key *db)
{
	json_t *reply;

	reply = call_daemon(json_pack("{s:s, s:s}", "op", "limit_unset", "db", db->name));
	if (!reply)
		return EXIT_FAILURE;
	if (cfg.json)
		print_json(reply);
	else
		printf("%s: limit removed, ingestion is unlimited\n", db->name);
	json_decref(reply);
	return EXIT_SUCCESS;
}

/* The limits array of a limit_show reply, NULL after reporting. */
static json_t *show_limits(const struct rg_db_key *db_or_null)
{
	json_t *request, *reply, *limits;

	request = db_or_null ? json_pack("{s:s, s:s}", "op", "limit_show", "db", db_or_null->name) :
			       json_pack("{s:s}", "op", "limit_show");
	reply = call_daemon(request);
	if (!reply)
		return NULL;
	limits = json_object_get(reply, "limits");
	if (!json_is_array(limits)) {
		json_decref(reply);
		fail("rowgated sent a limit_show reply without \"limits\"");
		return NULL;
	}
	return reply;
}

static int cmd_limit_show(const struct rg_db_key *db_or_null)
{
	json_t *reply = show_limits(db_or_null), *entry;
	int width = (int)strlen("DATABASE");
	size_t i;

	if (!reply)
		return EXIT_FAILURE;
	if (cfg.json) {
		print_json(reply);
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
	printf("%-*s  %s\n", width, "DATABASE", "LIMIT (rows/s)");
	json_array_foreach(json_object_get(reply, "limits"), i, entry) {
		const char *name = json_string_value(json_object_get(entry, "db"));
		char shown[32];
		__u64 limit;

		if (rg_json_get_u64(json_object_get(entry, "limit"), &limit))
			snprintf(shown, sizeof(shown), "?");
		else
			format_limit(limit, shown, sizeof(shown));
		printf("%-*s  %s\n", width, name ? name : "?", shown);
	}
out:
	json_decref(reply);
	return EXIT_SUCCESS;
}

/* A counter or other scalar as a table cell. */
static void format_cell(const json_t *value, char *buf, size_t len)
{
	char *text;

	switch (json_typeof(value)) {
	case JSON_INTEGER:
		snprintf(buf, len, "%lld", (long long)json_integer_value(value));
		break;
	case JSON_STRING:
		snprintf(buf, len, "%s", json_string_value(value));
		break;
	case JSON_REAL:
		snprintf(buf, len, "%g", json_real_value(value));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(buf, len, "%s", json_is_true(value) ? "yes" : "no");
		break;
	case JSON_NULL:
		snprintf(buf, len, "-");
		break;
	default:
		text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, len, "%s", text ? text : "?");
		free(text);
	}
}

#define STATS_MAX_COLUMNS 32
#define CELL_MAX	  64

/* Columns are the keys of the first database object, "db" first. */
static void print_databases(json_t *databases)
{
	const char *columns[STATS_MAX_COLUMNS];
	int widths[STATS_MAX_COLUMNS];
	size_t ncolumns = 0, i, c;
	json_t *first = json_array_get(databases, 0), *row, *value;
	const char *key;
	char cell[CELL_MAX];

	if (!json_is_object(first)) {
		printf("no databases\n");
		return;
	}
	columns[ncolumns++] = "db";
	json_object_foreach(first, key, value) {
		/* nested objects (per-protocol counters) get lines of their own */
		if (strcmp(key, "db") && !json_is_object(value) && ncolumns < STATS_MAX_COLUMNS)
			columns[ncolumns++] = key;
	}
	for (c = 0; c < ncolumns; c++) {
		widths[c] = (int)strlen(columns[c]);
		json_array_foreach(databases, i, row) {
			format_cell(json_object_get(row, columns[c]), cell, sizeof(cell));
			if ((int)strlen(cell) > widths[c])
				widths[c] = (int)strlen(cell);
		}
	}
	for (c = 0; c < ncolumns; c++)
		printf(c ? "  %*s" : "%-*s", widths[c], columns[c]);
	putchar('\n');
	json_array_foreach(databases, i, row) {
		for (c = 0; c < ncolumns; c++) {
			format_cell(json_object_get(row, columns[c]), cell, sizeof(cell));
			printf(c ? "  %*s" : "%-*s", widths[c], cell);
		}
		putchar('\n');
	}
	json_array_foreach(databases, i, row) {
		json_t *protos = json_object_get(row, "protocols"), *counters, *v;
		const char *proto, *name;

		json_object_foreach(protos, proto, counters) {
			printf("  %s %s:", json_string_value(json_object_get(row, "db")), proto);
			json_object_foreach(counters, name, v) {
				format_cell(v, cell, sizeof(cell));
				printf(" %s=%s", name, cell);
			}
			putchar('\n');
		}
	}
}

/*
 * The admin requests of call_daemon, as rowgate-meta calls:
 *   limit_set -> PUT /v1/limits/DB {"limit":"N"}   limit_unset -> DELETE
 *   limit_show -> GET /v1/limits[/DB]               stats -> GET /v1/status[/DB]
 * The replies have the admin socket's shape ({"ok":true,...}).  Each URL of
 * --meta is tried in turn until one answers; followers redirect to the leader.
 */
static json_t *call_meta(json_t *request)
{
	const char *op = json_string_value(json_object_get(request, "op"));
	const char *db = json_string_value(json_object_get(request, "db"));
	char token[RG_META_TOKEN_MAX] = "", err[ERR_MAX] = "", url[600], *urls, *save = NULL;
	const char *method = "GET", *api = RG_META_API_LIMITS, *u;
	json_t *body = NULL, *reply = NULL;
	struct rg_http_result res = {};
	bool answered = false;

	if (cfg.token_file &&
	    rg_meta_read_token(cfg.token_file, token, sizeof(token), err, sizeof(err))) {
		json_decref(request);
		fail(err);
		return NULL;
	}
	if (!strcmp(op, "limit_set")) {
		method = "PUT";
		body = json_pack("{s:O}", "limit", json_object_get(request, "limit"));
	} else if (!strcmp(op, "limit_unset")) {
		method = "DELETE";
	} else if (!strcmp(op, "stats")) {
		api = RG_META_API_STATUS;
	}
	urls = strdup(cfg.meta_url);
	if (!urls || rg_http_global_init()) {
		free(urls);
		json_decref(request);
		json_decref(body);
		fail("out of memory");
		return NULL;
	}
	for (u = strtok_r(urls, ",", &save); u && !answered; u = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(u);

		while (n && u[n - 1] == '/')
			n--;
		snprintf(url, sizeof(url), "%.*s%s%s%s", (int)(n > 300 ? 300 : n), u, api,
			 db ? "/" : "", db ? db : "");
		pr_debug("%s %s", method, url);
		if (rg_http_json(method, url, token, body, META_CONNECT_TIMEOUT_MS, META_TIMEOUT_MS,
				 &res, err, sizeof(err)) == 0)
			answered = true;
	}
	free(urls);
	json_decref(request);
	json_decref(body);
	if (!answered) {
		char msg[ERR_MAX + 64];

		snprintf(msg, sizeof(msg), "cannot reach rowgate-meta: %s", err);
		fail(msg);
		return NULL;
	}
	if (res.status / 100 == 2 && json_is_true(json_object_get(res.reply, "ok"))) {
		reply = json_incref(res.reply);
	} else {
		const char *msg = json_string_value(json_object_get(res.reply, "error"));
		char line[ERR_MAX + 64];

		if (res.status == 401)
			snprintf(line, sizeof(line), "rowgate-meta refused the request (401): %s",
				 cfg.token_file ? "wrong token in --token-file" :
						  "it needs a token: pass --token-file");
		else if (msg)
			snprintf(line, sizeof(line), "%.500s", msg);
		else
			snprintf(line, sizeof(line), "rowgate-meta answered HTTP %ld", res.status);
		fail(line);
	}
	rg_http_result_free(&res);
	return reply;
}

/* rowgate-meta's allocation table: one block per database. */
static void print_meta_status(json_t *reply)
{
	static const char *const keys[5] = { "demand", "rejected", "debt", "quota",
					     "lease_ms_left" };
	json_t *dbs = json_object_get(reply, "databases"), *d, *f;
	size_t i, j;

	if (!json_array_size(dbs)) {
		printf("no limits configured\n");
		return;
	}
	json_array_foreach(dbs, i, d) {
		char lim[CELL_MAX], out[CELL_MAX];

		format_cell(json_object_get(d, "limit"), lim, sizeof(lim));
		format_cell(json_object_get(d, "outstanding"), out, sizeof(out));
		printf("%s%s: limit %s rows/s, granted %s rows/s to %zu frontend(s)\n", i ? "\n" : "",
		       json_string_value(json_object_get(d, "db")), lim, out,
		       json_array_size(json_object_get(d, "frontends")));
		if (!json_array_size(json_object_get(d, "frontends")))
			continue;
		printf("  %-20s %12s %12s %12s %12s %10s\n", "FRONTEND", "DEMAND/s", "REJECTED/s",
		       "DEBT", "QUOTA/s", "LEASE ms");
		json_array_foreach(json_object_get(d, "frontends"), j, f) {
			char c[5][CELL_MAX];

			for (int k = 0; k < 5; k++)
				format_cell(json_object_get(f, keys[k]), c[k], sizeof(c[k]));
			printf("  %-20s %12s %12s %12s %12s %10s\n",
			       json_string_value(json_object_get(f, "node")), c[0], c[1], c[2], c[3],
			       c[4]);
		}
	}
	if (json_is_true(json_object_get(reply, "learning")))
		printf("\n(learning phase: the allocator adopts the quotas frontends hold)\n");
}

static int cmd_stats(const struct rg_db_key *db_or_null)
{
	json_t *request, *reply, *global, *value;
	const char *key;
	int width = 0;

	request = db_or_null ? json_pack("{s:s, s:s}", "op", "stats", "db", db_or_null->name) :
			       json_pack("{s:s}", "op", "stats");
	reply = call_daemon(request);
	if (!reply)
		return EXIT_FAILURE;
	if (cfg.json) {
		print_json(reply);
		goto out;
	}
	if (cfg.meta_url) {
		print_meta_status(reply);
		goto out;
	}
	print_databases(json_object_get(reply, "databases"));
	if (json_object_size(json_object_get(reply, "meta"))) {
		printf("\nrowgate-meta agent:\n");
		json_object_foreach(json_object_get(reply, "meta"), key, value) {
			char cell[CELL_MAX * 4];

			format_cell(value, cell, sizeof(cell));
			printf("  %-18s  %s\n", key, cell);
		}
	}
	global = json_object_get(reply, "global");
	if (json_object_size(global)) {
		json_object_foreach(global, key, value) {
			if ((int)strlen(key) > width)
				width = (int)strlen(key);
		}
		printf("\nhost-wide:\n");
		json_object_foreach(global, key, value) {
			char cell[CELL_MAX];

			format_cell(value, cell, sizeof(cell));
			printf("  %-*s  %s\n", width, key, cell);
		}
	}
	/* the UDP path (--xdp-iface): per-database datagram counters */
	if (json_is_object(json_object_get(reply, "udp"))) {
		json_t *udp = json_object_get(reply, "udp");

		printf("\nUDP (XDP):\n");
		print_databases(json_object_get(udp, "databases"));
		json_object_foreach(json_object_get(udp, "global"), key, value) {
			char cell[CELL_MAX];

			format_cell(value, cell, sizeof(cell));
			printf("  %-*s  %s\n", width, key, cell);
		}
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
	if (cfg.json) {
		/* the two columns GreptimeDB returns */
		out = json_pack("{s:s, s:s}", "Database", db->name, "Create Database", text);
		if (out)
			print_json(out);
		json_decref(out);
	} else {
		printf("%s\n", text);
	}
	return EXIT_SUCCESS;
}

static int cmd_sql(const char *statement)
{
	struct rg_sql_request req;
	char err[ERR_MAX], typed[24];

	if (rg_sql_parse(statement, &req, err, sizeof(err)))
		return fail(err);
	switch (req.action) {
	case RG_SQL_SET_LIMIT:
		snprintf(typed, sizeof(typed), "%llu", (unsigned long long)req.limit);
		return set_limit(&req.db, typed);
	case RG_SQL_UNSET_LIMIT:
		return unset_limit(&req.db);
	case RG_SQL_SHOW_CREATE:
		return cmd_show_create(&req.db);
	case RG_SQL_NOTHING:
		break;
	}
	if (cfg.json)
		printf("{\"ok\":true}\n");
	else
		printf("%s: nothing to do, rowgate keeps only the option '%s'\n", req.db.name,
		       RG_OPT_INGEST_ROWS_RATE_LIMIT);
	return EXIT_SUCCESS;
}

/* Through the daemon when one answers (so it knows), else on the pins. */
static int cmd_detach(void)
{
	json_t *request = json_pack("{s:s}", "op", "detach"), *reply = NULL;
	char err[ERR_MAX];
	int ret, lock_fd;

	if (!request)
		return fail("out of memory");
	ret = rg_admin_call(cfg.socket_path, request, &reply, err, sizeof(err));
	json_decref(request);
	json_decref(reply);
	if (ret == 0) {
		if (cfg.json)
			printf("{\"ok\":true,\"via\":\"rowgated\"}\n");
		else
			printf("detached: rowgated enforces nothing until it is restarted\n");
		return EXIT_SUCCESS;
	}
	if (ret == -EREMOTEIO)
		return fail(err);
	pr_info("%s: detaching the pins under %s directly", err, cfg.bpffs);
	if (access(cfg.bpffs, F_OK))
		return fail("nothing to detach: no rowgate pins there (see --bpffs)");
	lock_fd = rg_bpffs_lock(cfg.bpffs);
	if (lock_fd < 0)
		return fail(lock_fd == -EBUSY ?
				    "a rowgated holds the pins but does not answer on --socket" :
				    "cannot lock the pin directory");
	rg_detach_all(cfg.bpffs);
	close(lock_fd);
	if (cfg.json)
		printf("{\"ok\":true,\"via\":\"pins\"}\n");
	else
		printf("detached: nothing under %s is enforced any more\n", cfg.bpffs);
	return EXIT_SUCCESS;
}

static void print_status(const struct rg_health *h, bool daemon_up)
{
	printf("enforcing: %s%s%s\n", h->enforcing ? "yes" : "NO", h->enforcing ? "" : " - ",
	       h->enforcing ? "" : h->reason);
	for (int i = 0; i < h->nports; i++)
		printf("  port %u: %s\n", h->ports[i], h->enforcing ? "enforcing" : "NOT enforcing");
	printf("cgroup: %s (%s", h->cgroup_path[0] ? h->cgroup_path : "?",
	       h->cgroup_present ? "present" : "ABSENT");
	if (h->cgroup_present)
		printf(", id %llu", (unsigned long long)h->cgroup_id_now);
	printf(", programs attached to id %llu)\n", (unsigned long long)h->cgroup_id_attached);
	printf("programs: sockops %s, getpeername4 %s, getpeername6 %s, verdict %s", 
	       h->sockops ? "yes" : "NO", h->peer4 ? "yes" : "NO", h->peer6 ? "yes" : "NO",
	       h->verdict ? "yes" : "NO");
	if (h->refuse_wanted)
		printf(", fail-closed filter %s", h->refuse ? "yes" : "NO");
	if (h->entry && h->slot_prog_id)
		printf("\nverdict slot: program %u, build %u", h->slot_prog_id, h->slot_build);
	else if (h->entry)
		printf("\nverdict slot: EMPTY");
	else if (h->verdict)
		printf("\nverdict slot: not used (the sockhash runs a verdict of an older build)");
	printf("\nconnections: %llu tracked, %llu adopting (table of %u, when full: %s); "
	       "since start: %llu tracked, %llu untracked, %llu refused\n",
	       (unsigned long long)(h->conns_now - h->adopting_now),
	       (unsigned long long)h->adopting_now, h->max_conns,
	       h->refuse_wanted ? "fail-closed" : "fail-open",
	       (unsigned long long)h->conns_tracked, (unsigned long long)h->conns_untracked,
	       (unsigned long long)h->gs.conns_refused);
	printf("adoption: %llu adopted, %llu synchronised (avg %llu ms, max %llu ms)\n",
	       (unsigned long long)h->adopted, (unsigned long long)h->gs.adopt_synced,
	       (unsigned long long)(h->gs.adopt_synced ?
					    h->gs.adopt_sync_ns_total / h->gs.adopt_synced / 1000000 :
					    0),
	       (unsigned long long)(h->gs.adopt_sync_ns_max / 1000000));
	printf("rowgated: %s\n",
	       daemon_up ? "running" : "not answering (enforcement does not depend on it)");
}

/* From the kernel, not the daemon: exit 1 when enforcement is off. */
static int cmd_status(void)
{
	json_t *request = json_pack("{s:s}", "op", "limit_show"), *reply = NULL, *out;
	struct rg_health h;
	char err[ERR_MAX];
	bool daemon_up;
	int ret;

	ret = rg_health_read(cfg.bpffs, &h);
	if (ret) {
		snprintf(err, sizeof(err), "not enforcing: nothing pinned under %s (%s)", cfg.bpffs,
			 strerror(-ret));
		json_decref(request);
		return fail(err);
	}
	daemon_up = request && rg_admin_call(cfg.socket_path, request, &reply, err, sizeof(err)) == 0;
	json_decref(request);
	json_decref(reply);
	if (cfg.json) {
		out = rg_health_json(&h);
		if (!out)
			return fail("out of memory");
		json_object_set_new(out, "daemon", json_boolean(daemon_up));
		print_json(out);
		json_decref(out);
	} else {
		print_status(&h, daemon_up);
	}
	return h.enforcing ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int run_command(int argc, char **argv)
{
	struct rg_db_key db;
	char err[ERR_MAX];
	__u64 limit;

	if (argc < 1)
		return usage_error("no command given");
	if (!strcmp(argv[0], "limit")) {
		if (argc < 2)
			return usage_error("limit needs set, unset or show");
		if (!strcmp(argv[1], "set")) {
			if (argc != 4)
				return usage_error("usage: limit set DB N");
			if (parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			/* validate here so bad input never reaches the daemon */
			if (rg_parse_limit(argv[3], &limit, err, sizeof(err)))
				return fail(err);
			return set_limit(&db, argv[3]);
		}
		if (!strcmp(argv[1], "unset")) {
			if (argc != 3)
				return usage_error("usage: limit unset DB");
			if (parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			return unset_limit(&db);
		}
		if (!strcmp(argv[1], "show")) {
			if (argc > 3)
				return usage_error("usage: limit show [DB]");
			if (argc == 3 && parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			return cmd_limit_show(argc == 3 ? &db : NULL);
		}
		return usage_error("unknown limit command '%s'", argv[1]);
	}
	if (!strcmp(argv[0], "stats")) {
		if (argc > 2)
			return usage_error("usage: stats [DB]");
		if (argc == 2 && parse_db_arg(argv[1], &db))
			return EXIT_FAILURE;
		return cmd_stats(argc == 2 ? &db : NULL);
	}
	if (!strcmp(argv[0], "sql")) {
		if (argc != 2)
			return usage_error("usage: sql \"STATEMENT\" (quote the whole statement)");
		return cmd_sql(argv[1]);
	}
	if (!strcmp(argv[0], "status")) {
		if (argc != 1)
			return usage_error("usage: status");
		return cmd_status();
	}
	if (!strcmp(argv[0], "detach")) {
		if (argc != 1)
			return usage_error("usage: detach");
		return cmd_detach();
	}
	return usage_error("unknown command '%s'", argv[0]);
}

int main(int argc, char **argv)
{
	struct option longopts[N_OPTIONS + 1];
	size_t i;
	int opt;

	cfg = ctl_defaults;
	rg_log_set_level(cfg.log_level);
	for (i = 0; i < N_OPTIONS; i++)
		longopts[i] = ctl_options[i].opt;
	memset(&longopts[N_OPTIONS], 0, sizeof(longopts[0]));

	opterr = 0; /* our own one-line messages */
	/* '+': stop at the command, so "limit set db -1" reaches validation */
	while ((opt = getopt_long(argc, argv, "+:s:jhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			cfg.socket_path = optarg;
			break;
		case 'j':
			cfg.json = true;
			break;
		case OPT_META:
			cfg.meta_url = optarg;
			break;
		case OPT_TOKEN_FILE:
			cfg.token_file = optarg;
			break;
		case OPT_BPFFS:
			cfg.bpffs = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (rg_log_parse_level(optarg, &cfg.log_level))
				return usage_error("invalid --log-level '%s': use " RG_LOG_LEVELS,
						   optarg);
			rg_log_set_level(cfg.log_level);
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case 'V':
			printf("rowgatectl %s (libbpf %s)\n", RG_VERSION,
			       libbpf_version_string());
			return EXIT_SUCCESS;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	rg_log_route_libbpf();
	return run_command(argc - optind, argv + optind);
}
