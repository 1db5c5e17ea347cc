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

#include "rowgate_version.h"
#include "../lib/admin.h"
#include "../lib/limits.h"
#include "../lib/maps.h"
#include "rowgatectl.h"

static const struct ctl_config ctl_defaults = {
	.socket_path = RG_ADMIN_DEFAULT_PATH,
	.bpffs = RG_BPFFS_DEFAULT_DIR,
	.json = false,
	.log_level = RG_LOG_CLI_DEFAULT,
};

enum {
	OPT_LOG_LEVEL = 256,
	OPT_META,
	OPT_TOKEN_FILE,
	OPT_META_CA,
	OPT_META_CERT,
	OPT_META_KEY,
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
	  RG_BPFFS_DEFAULT_DIR },
	{ { "meta", required_argument, NULL, OPT_META },
	  "URL[,URL]",
	  "manage the cluster's limits at rowgate-meta instead of one rowgated;\n"
	  "                          list every replica as it advertises itself: a\n"
	  "                          follower's redirect is followed only to one of them",
	  "off" },
	{ { "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	  "PATH",
	  "the admin token for --meta (the file's first\n"
	  "                          line; rowgate-meta's --admin-token-file)",
	  "none" },
	{ { "meta-ca", required_argument, NULL, OPT_META_CA },
	  "PATH",
	  "CA certificates (PEM) that verify an https://\n"
	  "                          rowgate-meta",
	  "the system's" },
	{ { "meta-cert", required_argument, NULL, OPT_META_CERT },
	  "PATH",
	  "client certificate (PEM) for an https:// --meta\n"
	  "                          that requires one (rowgate-meta --tls-client-ca)",
	  "none" },
	{ { "meta-key", required_argument, NULL, OPT_META_KEY },
	  "PATH",
	  "the key of --meta-cert (PEM)",
	  "in --meta-cert" },
	{ { "json", no_argument, NULL, 'j' },
	  NULL,
	  "print JSON, errors included, instead of tables",
	  "off" },
	{ { "log-level", required_argument, NULL, OPT_LOG_LEVEL }, "LEVEL", RG_LOG_LEVELS, "warning" },
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
		     "  limit set DB N --shadow\n"
		     "                      the same limit in shadow mode: what it would refuse\n"
		     "                      passes, uncharged, and is counted (would_reject in\n"
		     "                      stats and /metrics); set it again without --shadow\n"
		     "                      to enforce\n"
		     "  limit unset DB      remove the limit of DB: its ingestion is unlimited\n"
		     "  limit show [DB]     list the configured limits (of DB only)\n"
		     "  stats [DB]          admission counters per database, and host-wide ones;\n"
		     "                      with --meta, the allocation: each frontend's quota\n"
		     "  top [--once] [--interval S] [--count N]\n"
		     "                      live view: rows/s admitted and rejected, limit,\n"
		     "                      quota, debt and seconds to pay it, per database,\n"
		     "                      most rejected first (top --help)\n"
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
		"  rowgatectl --meta http://10.0.0.5:4100 --token-file /etc/rowgate/admin.token \\\n"
		"             limit set logs 10000\n"
		"  rowgatectl --meta http://10.0.0.5:4100 stats logs\n",
		RG_DB_NAME_MAX - 1, (unsigned long long)RG_U64_MAX);
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
	ctl_fail(line);
	return EXIT_USAGE;
}

static int parse_db_arg(const char *arg, struct rg_db_key *db)
{
	char err[ERR_MAX];

	if (rg_parse_db_name(arg, db, err, sizeof(err)))
		return ctl_fail(err);
	return 0;
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
			bool shadow = argc == 5 && !strcmp(argv[4], "--shadow");

			if (argc != 4 && !shadow)
				return usage_error("usage: limit set DB N [--shadow]");
			if (parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			/* validate here so bad input never reaches the daemon */
			if (rg_parse_limit(argv[3], &limit, err, sizeof(err)))
				return ctl_fail(err);
			if (shadow && ctl_cfg.meta_url)
				return ctl_fail("--shadow is per host: rowgate-meta's cluster limits "
						"have no shadow mode yet");
			return ctl_limit_set(&db, argv[3], shadow);
		}
		if (!strcmp(argv[1], "unset")) {
			if (argc != 3)
				return usage_error("usage: limit unset DB");
			if (parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			return ctl_limit_unset(&db);
		}
		if (!strcmp(argv[1], "show")) {
			if (argc > 3)
				return usage_error("usage: limit show [DB]");
			if (argc == 3 && parse_db_arg(argv[2], &db))
				return EXIT_FAILURE;
			return ctl_limit_show(argc == 3 ? &db : NULL);
		}
		return usage_error("unknown limit command '%s'", argv[1]);
	}
	if (!strcmp(argv[0], "stats")) {
		if (argc > 2)
			return usage_error("usage: stats [DB]");
		if (argc == 2 && parse_db_arg(argv[1], &db))
			return EXIT_FAILURE;
		return ctl_stats(argc == 2 ? &db : NULL);
	}
	if (!strcmp(argv[0], "top"))
		return ctl_top(argc - 1, argv + 1);
	if (!strcmp(argv[0], "sql")) {
		if (argc != 2)
			return usage_error("usage: sql \"STATEMENT\" (quote the whole statement)");
		return ctl_sql(argv[1]);
	}
	if (!strcmp(argv[0], "status")) {
		if (argc != 1)
			return usage_error("usage: status");
		return ctl_status();
	}
	if (!strcmp(argv[0], "detach")) {
		if (argc != 1)
			return usage_error("usage: detach");
		return ctl_detach();
	}
	return usage_error("unknown command '%s'", argv[0]);
}

int main(int argc, char **argv)
{
	struct option longopts[N_OPTIONS + 1];
	size_t i;
	int opt;

	ctl_cfg = ctl_defaults;
	rg_log_set_level(ctl_cfg.log_level);
	for (i = 0; i < N_OPTIONS; i++)
		longopts[i] = ctl_options[i].opt;
	memset(&longopts[N_OPTIONS], 0, sizeof(longopts[0]));

	opterr = 0; /* our own one-line messages */
	/* '+': stop at the command, so "limit set db -1" reaches validation */
	while ((opt = getopt_long(argc, argv, "+:s:jhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctl_cfg.socket_path = optarg;
			break;
		case 'j':
			ctl_cfg.json = true;
			break;
		case OPT_META:
			ctl_cfg.meta_url = optarg;
			break;
		case OPT_TOKEN_FILE:
			ctl_cfg.token_file = optarg;
			break;
		case OPT_META_CA:
			ctl_cfg.meta_ca = optarg;
			break;
		case OPT_META_CERT:
			ctl_cfg.meta_cert = optarg;
			break;
		case OPT_META_KEY:
			ctl_cfg.meta_key = optarg;
			break;
		case OPT_BPFFS:
			ctl_cfg.bpffs = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (rg_log_parse_level(optarg, &ctl_cfg.log_level))
				return usage_error("invalid --log-level '%s': use " RG_LOG_LEVELS,
						   optarg);
			rg_log_set_level(ctl_cfg.log_level);
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
