// SPDX-License-Identifier: MIT
/* xdp_loader: drives user/lib/xdp.c for the e2e test and the benchmark until
 * rowgated has --xdp-iface/--udp.  Attaches, writes "ready" to stdout, and
 * detaches on SIGTERM/SIGINT; --stats prints the UDP counters as rowgatectl
 * stats would carry them; --limit writes a limit as rowgated does, for runs
 * without rowgated.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../../user/lib/limits.h"
#include "../../user/lib/log.h"
#include "../../user/lib/xdp.h"
#include "../../user/lib/maps.h"

#define MAX_MAPPINGS RG_MAX_UDP_PORTS

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xdp_loader --bpffs DIR --iface IF --udp PORT=DB [--udp ...]\n"
		"                  [--mode auto|native|generic] [--keep] [-v]\n"
		"       xdp_loader --bpffs DIR --stats [DB]\n"
		"       xdp_loader --bpffs DIR --limit DB=N\n"
		"       xdp_loader --bpffs DIR --cleanup\n"
		"Test helper for rowgate's XDP path (user/lib/xdp.c); rowgated --udp replaces it.\n");
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A limit written as rowgated writes it (lib/maps.h rg_limit_write). */
static int write_limit(const char *bpffs, const char *arg)
{
	char err[256] = "";
	const char *eq = strrchr(arg, '=');
	struct rg_db_key db;
	struct rg_db_maps m;
	char name[RG_DB_NAME_MAX * 4];
	__u64 limit;
	int ret;

	if (!eq || (size_t)(eq - arg) >= sizeof(name)) {
		pr_err("--limit expects DB=N");
		return -EINVAL;
	}
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = 0;
	if (rg_parse_db_name(name, &db, err, sizeof(err)) ||
	    rg_parse_limit(eq + 1, &limit, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	m.limits_fd = rg_pin_open(bpffs, RG_STR(RG_MAP_LIMITS));
	m.buckets_fd = rg_pin_open(bpffs, RG_STR(RG_MAP_BUCKETS));
	m.db_stats_fd = rg_pin_open(bpffs, RG_STR(RG_MAP_DB_STATS));
	m.proto_stats_fd = rg_pin_open(bpffs, RG_STR(RG_MAP_PROTO_STATS)); /* HTTP path only */
	if (m.limits_fd < 0 || m.buckets_fd < 0 || m.db_stats_fd < 0)
		ret = m.limits_fd < 0 ? m.limits_fd : m.buckets_fd < 0 ? m.buckets_fd : m.db_stats_fd;
	else
		ret = rg_limit_write(&m, &db, limit, 0);
	if (ret)
		pr_err("cannot write the limit under %s: %s", bpffs, strerror(-ret));
	if (m.limits_fd >= 0)
		close(m.limits_fd);
	if (m.buckets_fd >= 0)
		close(m.buckets_fd);
	if (m.db_stats_fd >= 0)
		close(m.db_stats_fd);
	if (m.proto_stats_fd >= 0)
		close(m.proto_stats_fd);
	return ret;
}

int main(int argc, char **argv)
{
	enum { OPT_KEEP = 256, OPT_CLEANUP, OPT_STATS, OPT_LIMIT, OPT_MODE };
	static const struct option opts[] = {
		{ "bpffs", required_argument, NULL, 'b' },
		{ "iface", required_argument, NULL, 'i' },
		{ "udp", required_argument, NULL, 'u' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "cleanup", no_argument, NULL, OPT_CLEANUP },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct rg_udp_mapping maps[MAX_MAPPINGS];
	enum rg_xdp_mode mode = RG_XDP_MODE_AUTO;
	const char *bpffs = NULL, *iface = NULL, *limit = NULL;
	bool keep = false, cleanup = false, stats = false;
	struct rg_xdp *x = NULL;
	char err[256];
	int n = 0, opt, verbose = 0;

	rg_log_route_libbpf();
	if (argc == 1) {
		/* vmtest runs build/tests/bpf/ * as tests: this is a helper */
		printf("skip: xdp_loader is a helper of tests/e2e/xdp_influxdb.sh, not a test\n");
		return 77;
	}
	while ((opt = getopt_long(argc, argv, "b:i:u:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			bpffs = optarg;
			break;
		case 'i':
			iface = optarg;
			break;
		case 'u':
			if (n == MAX_MAPPINGS) {
				pr_err("at most %d UDP mappings", MAX_MAPPINGS);
				return 2;
			}
			if (rg_parse_udp_mapping(optarg, &maps[n], err, sizeof(err))) {
				pr_err("--udp: %s", err);
				return 2;
			}
			n++;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "native"))
				mode = RG_XDP_MODE_NATIVE;
			else if (!strcmp(optarg, "generic"))
				mode = RG_XDP_MODE_GENERIC;
			else if (strcmp(optarg, "auto")) {
				pr_err("--mode: expected auto, native or generic");
				return 2;
			}
			break;
		case OPT_KEEP:
			keep = true;
			break;
		case OPT_CLEANUP:
			cleanup = true;
			break;
		case OPT_STATS:
			stats = true;
			break;
		case OPT_LIMIT:
			limit = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	rg_log_set_level(verbose >= 2 ? RG_LOG_DEBUG : RG_LOG_INFO);
	if (!bpffs) {
		usage(stderr);
		return 2;
	}
	if (cleanup) {
		rg_xdp_cleanup(bpffs, true);
		return 0;
	}
	if (limit)
		return write_limit(bpffs, limit) ? 1 : 0;
	if (stats) {
		struct rg_db_key db, *dbp = NULL;
		json_t *reply = json_object();
		int ret;

		if (optind < argc) {
			if (rg_parse_db_name(argv[optind], &db, err, sizeof(err))) {
				pr_err("%s", err);
				return 2;
			}
			dbp = &db;
		}
		ret = rg_xdp_stats_json(bpffs, dbp, reply);
		if (ret) {
			pr_err("no UDP counters under %s: %s", bpffs, strerror(-ret));
			return 1;
		}
		json_dumpf(reply, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(reply);
		return 0;
	}
	if (!iface || n == 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (rg_xdp_start_mode(bpffs, iface, mode, maps, n, &x))
		return 1;
	printf("ready %s\n", rg_xdp_mode_name(rg_xdp_mode(x)));
	fflush(stdout);
	while (!stop)
		pause();
	rg_xdp_stop(x, keep);
	return 0;
}
