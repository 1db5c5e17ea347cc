// SPDX-License-Identifier: MIT
/* rowgated: the host agent.  Loads and pins the BPF programs, attaches them
 * to the ingest cgroup and ports, keeps the limits in the pinned maps and in
 * a state file, and answers rowgatectl on the admin socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>

#include "../lib/clock.h"
#include "rowgate.skel.h"
#include "rowgate_version.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "rowgate/guard.h"
#include "../lib/admin.h"
#include "../lib/limits.h"
#include "../lib/log.h"
#include "adopt.h"
#include "../lib/health.h"
#include "metrics.h"
#include "../lib/detach.h"
#include "reconcile.h"
#include "../lib/xdp.h"
#include "../lib/counters.h"
#include "../lib/maps.h"
#include "meta_agent.h"
#include "../lib/state.h"

#define RG_DEFAULT_PORT     4000
#define RG_DEFAULT_BPFFS    "/sys/fs/bpf/rowgate"
#define RG_POLL_INTERVAL_MS 1000
#define RG_GC_INTERVAL_MS   10000 /* state of closed adopted connections */
#define RG_CONNS_FULL_LOG_MS 10000 /* at most one connection-table alarm per 10 s */
#define RG_MAX_CONNS_LIMIT  (1U << 22) /* --max-conns: 4 Mi connections */

struct route_opt {
	char path[RG_PATH_MAX];
	struct rg_route route;
};

struct config {
	__u32 ports[RG_MAX_PORTS];
	struct rg_port port_cfg[RG_MAX_PORTS]; /* profile and flags of ports[i] */
	int nports;
	__u32 allow_unparsed[RG_MAX_PORTS]; /* --allow-unparsed, applied after parsing */
	int nallow_unparsed;
	struct server_timeout_opt {
		__u32 port;
		__u16 header_s, idle_s;
	} server_timeouts[RG_MAX_PORTS]; /* --server-timeout, applied after parsing */
	int nserver_timeouts;
	const char *cgroup;
	char cgroup_buf[PATH_MAX];
	const char *bpffs;
	const char *admin_socket;
	gid_t admin_group; /* RG_ADMIN_ROOT_ONLY: no --admin-group */
	const char *state_file;
	bool foreground;
	__u32 max_conns;       /* connection table entries, set before load */
	bool conns_full_close; /* --conns-full=fail-closed */
	bool egress_off;       /* --egress off */
	__u64 copy_memory_bytes; /* --copy-memory */
	__u32 copy_expiry_s;     /* --copy-expiry */
	bool cleanup;
	const char *metrics_addr; /* /metrics listener, NULL = off */
	const char *xdp_iface;    /* UDP path: interface, NULL = off */
	struct rg_udp_mapping udp[RG_MAX_UDP_PORTS];
	int nudp;
	const char *meta_url;   /* distributed mode: rowgate-meta URL(s) */
	const char *node_id;
	char node_id_buf[64];
	const char *token_file;
	struct route_opt routes[RG_MAX_ROUTES];
	int nroutes;
};

struct daemon {
	struct config *cfg;
	struct rowgate *skel;
	struct rg_limit_list limits;
	int lock_fd;
	int admin_fd;
	struct rg_metrics *metrics;
	struct rg_reconciler *rec;
	struct rg_xdp *xdp;
	struct rg_meta_agent *agent; /* NULL in standalone mode */
	bool detached; /* rowgatectl detach: enforcement removed on request */
	bool cgroup_gone; /* the guarded cgroup is absent (said once) */
	int cgroup_watch_fd; /* inotify on its parent, -1 = none */
	struct rg_guard guard; /* what the pinned guard record says */
};

/* Maps whose contents outlive a clean stop: limits, debt, counters, and the
 * body ring (rowgated --cleanup removes them; detach keeps them). */
static const char *const state_maps[] = {
	RG_STR(RG_MAP_LIMITS), RG_STR(RG_MAP_BUCKETS), RG_STR(RG_MAP_DB_STATS),
	RG_STR(RG_MAP_GLOBAL), RG_STR(RG_MAP_PROTO_STATS), RG_STR(RG_MAP_RATIOS),
	RG_STR(RG_MAP_GUARD), RG_STR(RG_MAP_GUARD_STATS), RG_STR(RG_MAP_PORTS),
	RG_STR(RG_MAP_ROUTES), RG_STR(RG_MAP_VERDICT_STATS), RG_STR(RG_MAP_BODIES),
};

/* The well-known port that picks each server profile by default
 * (docs/server-profiles.md; names: rg_profile_name). */
static const __u32 profile_ports[RG_PROFILE_MAX] = {
	[RG_PROFILE_GREPTIMEDB] = 4000,
	[RG_PROFILE_INFLUXDB] = 8086,
	[RG_PROFILE_VICTORIAMETRICS] = 8428,
	[RG_PROFILE_PROMETHEUS] = 9090,
	[RG_PROFILE_LOKI] = 3100,
};

#define P_GT RG_PROFILE_BIT(RG_PROFILE_GREPTIMEDB)
#define P_IN RG_PROFILE_BIT(RG_PROFILE_INFLUXDB)
#define P_VM RG_PROFILE_BIT(RG_PROFILE_VICTORIAMETRICS)
#define P_PR RG_PROFILE_BIT(RG_PROFILE_PROMETHEUS)
#define P_LK RG_PROFILE_BIT(RG_PROFILE_LOKI)

/* The write routes of each server profile; /v1/sql and the rest pass.  The
 * greptimedb profile keeps the generic paths it always had. */
static const struct route_opt default_routes[] = {
	{ "/v1/influxdb/write", { RG_PROTO_LINE, 0, P_GT } },
	{ "/v1/influxdb/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM, P_GT } },
	{ "/v1/prometheus/write", { RG_PROTO_PROM_RW, 0, P_GT } },
	{ "/v1/otlp/v1/metrics", { RG_PROTO_OTLP_METRICS, 0, P_GT } },
	{ "/v1/otlp/v1/logs", { RG_PROTO_OTLP_LOGS, 0, P_GT } },
	{ "/v1/otlp/v1/traces", { RG_PROTO_OTLP_TRACES, 0, P_GT } },
	{ "/v1/loki/api/v1/push", { RG_PROTO_LOKI, 0, P_GT } },
	{ "/v1/elasticsearch/_bulk", { RG_PROTO_ES_BULK, 0, P_GT } },
	/* /v1/elasticsearch/{index}/_bulk */
	{ RG_ROUTE_BULK_WILDCARD, { RG_PROTO_ES_BULK, 0, P_GT } },
	{ "/v1/ingest", { RG_PROTO_NDJSON, 0, P_GT } },
	{ "/v1/events/logs", { RG_PROTO_NDJSON, 0, P_GT } },
	{ "/v1/opentsdb/api/put", { RG_PROTO_OPENTSDB, 0, P_GT } },
	{ "/write", { RG_PROTO_LINE, 0, P_GT | P_IN | P_VM } },
	{ "/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM, P_GT | P_VM } },
	{ "/api/v1/write", { RG_PROTO_PROM_RW, 0, P_GT | P_VM | P_PR } },
	{ "/api/v1/push", { RG_PROTO_PROM_RW, 0, P_GT } },
	{ "/influx/write", { RG_PROTO_LINE, 0, P_GT | P_VM } },
	{ "/influx/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM, P_GT | P_VM } },
	{ "/prometheus/api/v1/write", { RG_PROTO_PROM_RW, 0, P_VM } },
	{ "/api/v1/prom/write", { RG_PROTO_PROM_RW, 0, P_IN } },
	{ "/loki/api/v1/push", { RG_PROTO_LOKI, RG_ROUTE_TENANT, P_GT | P_LK } },
	/* victoria-metrics writes rowgate does not count (vminsert
	 * RequestHandler): refused rather than passed unlimited */
	{ "/api/v1/import", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/prometheus/api/v1/import", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/api/v1/import/csv", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/prometheus/api/v1/import/csv", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/api/v1/import/prometheus", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/prometheus/api/v1/import/prometheus", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/api/v1/import/native", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/prometheus/api/v1/import/native", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
	{ "/datadog/api/v1/series", { RG_PROTO_NONE, RG_ROUTE_REFUSE, P_VM } },
};

/* Route protocol names, as --route and the routes file spell them: every
 * protocol by its name, and the variants that also set a route flag. */
static const struct {
	const char *name;
	struct rg_route route;
} route_names[] = {
#define RG_X_(id, ID, name, k) { name, { RG_PROTO_##ID, 0, 0 } },
	RG_PROTOCOLS(RG_X_)
#undef RG_X_
	{ "influx-v2", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM, 0 } },
	{ "loki-tenant", { RG_PROTO_LOKI, RG_ROUTE_TENANT, 0 } },
	{ "refuse", { RG_PROTO_NONE, RG_ROUTE_REFUSE, 0 } },
	{ "none", { RG_PROTO_NONE, 0, 0 } },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rowgated [OPTIONS]\n"
		"\n"
		"Per-database ingestion rate limits (rows/s) enforced in the kernel.\n"
		"Loads and pins rowgate's BPF programs, guards the ingest ports of the\n"
		"servers in a cgroup, and serves rowgatectl on an admin socket.\n"
		"\n"
		"Options:\n"
		"  -p, --port N[=PROFILE]  ingest TCP port to guard, repeatable (default %d),\n"
		"                          and the server behind it, whose reading of a\n"
		"                          request and count of rows rowgate follows\n"
		"                          (docs/rows.md): greptimedb, influxdb\n"
		"                          (1.x), victoriametrics, prometheus or loki;\n"
		"                          default by port: 8086 influxdb, 8428\n"
		"                          victoriametrics, 9090 prometheus, 3100 loki,\n"
		"                          any other greptimedb\n"
		"      --allow-unparsed N  on guarded port N let a connection whose first\n"
		"                          bytes are not HTTP pass unenforced (counted);\n"
		"                          repeatable; default: answer 400 and close\n"
		"      --server-timeout N=SECONDS[,IDLE]\n"
		"                          the timers of the server on guarded port N: it\n"
		"                          closes a connection SECONDS after accept while no\n"
		"                          request reached it, IDLE seconds (default SECONDS)\n"
		"                          after its last answer; a rejected write is\n"
		"                          answered with Connection: close once half of the\n"
		"                          running timer has passed; 0 = never; repeatable;\n"
		"                          default by profile: victoriametrics 5,60,\n"
		"                          prometheus 300,300, loki 30,120, others 0\n"
		"  -c, --cgroup PATH       cgroup v2 directory holding the ingest servers, or\n"
		"                          a parent (a slice: guarded by port); re-attached\n"
		"                          when it is removed and recreated (default: the\n"
		"                          cgroup2 root)\n"
		"  -b, --bpffs DIR         pin directory on a bpf filesystem (default %s)\n"
		"  -s, --admin-socket PATH admin unix socket (default %s)\n"
		"      --admin-group NAME  group allowed to use the admin socket besides root\n"
		"                          (default: none, root only; mode 0660 instead of 0600)\n"
		"  -f, --state-file PATH   limits that survive restarts (default %s)\n"
		"  -r, --route PATH=PROTO  route a request path (exact, no query) to a\n"
		"                          protocol: influx (line protocol, db from db=),\n"
		"                          influx-v2 (also bucket=), prom-rw, otlp-metrics,\n"
		"                          otlp-logs, otlp-traces, loki, loki-tenant (db from\n"
		"                          X-Scope-OrgID), es-bulk, ndjson, opentsdb, refuse\n"
		"                          (a write rowgate cannot count: answer 400), or\n"
		"                          none (pass untouched); repeatable; on top of the\n"
		"                          defaults of each server profile (on\n"
		"                          victoriametrics its import and datadog writes\n"
		"                          are refused)\n"
		"      --routes-file PATH  one 'PATH PROTO' per line ('#' comments), as --route\n"
		"  -m, --metrics IP:PORT   serve Prometheus /metrics there (default off)\n"
		"      --xdp-iface IFACE   enforce UDP line protocol in XDP on IFACE (native\n"
		"                          mode where the driver has it, else generic)\n"
		"  -u, --udp PORT=DB       UDP port whose datagrams write to DB; repeatable;\n"
		"                          needs --xdp-iface\n"
		"      --max-conns N       connections tracked at once (default %u); a change\n"
		"                          needs 'rowgatectl detach' first (it releases the\n"
		"                          guarded connections)\n"
		"      --conns-full POLICY what a connection gets when the table is full:\n"
		"                          fail-open: it passes unlimited, counted\n"
		"                          (conns_untracked) and logged; fail-closed: none\n"
		"                          of its data reaches the server (dropped in the\n"
		"                          cgroup's ingress, its writes time out), counted\n"
		"                          (conns_refused) and logged (default fail-open)\n"
		"      --egress on|off     follow the servers' responses (sk_msg) and refund\n"
		"                          writes they refuse unstored: 401, 403, 404, 413,\n"
		"                          431 (default on)\n"
		"      --copy-memory BYTES cap on the memory rowgated holds for body copies\n"
		"                          waiting to be counted, K/M/G suffixes (default\n"
		"                          %lluM, at least %lluM); a copy beyond it is\n"
		"                          dropped and its request charged at the worst case\n"
		"                          (copies_over_memory); one copy holds at most %lluM\n"
		"      --copy-expiry SECONDS free a body copy that received nothing for this\n"
		"                          long (an aborted request); its estimate stands\n"
		"                          (default %u)\n"
		"      --foreground        stay in the foreground (default: detach once ready)\n"
		"      --keep              accepted for compatibility: stopping never detaches\n"
		"      --cleanup           detach and remove everything under --bpffs (limits,\n"
		"                          debt and counters included), exit\n"
		"      --meta URL[,URL]    distributed mode: heartbeat to rowgate-meta, which\n"
		"                          sets the limits and this host's quotas (local\n"
		"                          limit set/unset are refused; default standalone)\n"
		"      --node-id ID        this frontend's id for --meta (default hostname)\n"
		"      --token-file PATH   bearer token for --meta (first line of the file)\n"
		"  -l, --log-level LEVEL   %s (default warn)\n"
		"  -h, --help              this help\n"
		"  -V, --version           version and libbpf version\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop the daemon and leave enforcement attached\n"
		"and pinned: programs, limits, debt, counters and every guarded connection\n"
		"(a restart, upgrade or crash never opens an unlimited window).  A restarted\n"
		"rowgated adopts the pins.  Removing enforcement is explicit:\n"
		"'rowgatectl detach' (limits and counters stay pinned) or 'rowgated --cleanup'.\n"
		"\n"
		"Examples:\n"
		"  rowgated --port 4000 --cgroup /sys/fs/cgroup/system.slice/greptimedb.service\n"
		"  rowgated --port 4000 --cgroup /sys/fs/cgroup/system.slice\n"
		"  rowgated --foreground --port 8428 --log-level info\n"
		"  rowgated --port 8086=influxdb --port 9000=victoriametrics\n"
		"  rowgatectl limit set logs 10000\n",
		RG_DEFAULT_PORT, RG_DEFAULT_BPFFS, RG_ADMIN_DEFAULT_PATH, RG_STATE_DEFAULT_PATH,
		RG_MAX_CONNS, RG_COPY_MEMORY_DEFAULT_BYTES >> 20, RG_COPY_MEMORY_MIN_BYTES >> 20,
		RG_COPY_MAX_BYTES >> 20, RG_COPY_EXPIRY_DEFAULT_S, RG_LOG_LEVELS);
}

static int parse_port(const char *s, __u32 *port)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > 65535 || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	*port = (__u32)v;
	return 0;
}

/* SECONDS of --server-timeout: 0 (never) up to what a timer field holds. */
static int parse_timeout_s(const char *s, const char *end, __u16 *out)
{
	char num[16];
	char *e;
	unsigned long v;

	if (end == s || (size_t)(end - s) >= sizeof(num) || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	snprintf(num, sizeof(num), "%.*s", (int)(end - s), s);
	errno = 0;
	v = strtoul(num, &e, 10);
	if (errno || *e || v > RG_TIMEOUT_MAX_S)
		return -EINVAL;
	*out = (__u16)v;
	return 0;
}

/* PORT=SECONDS[,IDLE] of --server-timeout. */
static int parse_server_timeout(const char *s, struct server_timeout_opt *o)
{
	const char *eq = strchr(s, '='), *comma;
	char num[16];

	if (!eq || (size_t)(eq - s) >= sizeof(num))
		return -EINVAL;
	snprintf(num, sizeof(num), "%.*s", (int)(eq - s), s);
	if (parse_port(num, &o->port))
		return -EINVAL;
	comma = strchr(eq + 1, ',');
	if (parse_timeout_s(eq + 1, comma ? comma : eq + 1 + strlen(eq + 1), &o->header_s))
		return -EINVAL;
	o->idle_s = o->header_s;
	if (comma && parse_timeout_s(comma + 1, comma + 1 + strlen(comma + 1), &o->idle_s))
		return -EINVAL;
	return 0;
}

/* PORT[=PROFILE]; without a profile the port's well-known server. */
static int parse_port_profile(const char *s, __u32 *port, struct rg_port *pc)
{
	const char *eq = strchr(s, '=');
	char num[16];
	int i;

	if ((eq ? (size_t)(eq - s) : strlen(s)) >= sizeof(num))
		return -EINVAL;
	snprintf(num, sizeof(num), "%.*s", eq ? (int)(eq - s) : (int)strlen(s), s);
	if (parse_port(num, port))
		return -EINVAL;
	memset(pc, 0, sizeof(*pc));
	pc->profile = RG_PROFILE_GREPTIMEDB;
	for (i = 0; i < RG_PROFILE_MAX; i++) {
		if (eq ? !strcmp(eq + 1, rg_profile_name(i)) : *port == profile_ports[i]) {
			pc->profile = (__u8)i;
			return 0;
		}
	}
	return eq ? -ENOENT : 0;
}

static int parse_route(const char *s, struct route_opt *r)
{
	const char *eq = strrchr(s, '=');
	size_t len;

	if (!eq || eq == s || s[0] != '/')
		return -EINVAL;
	len = (size_t)(eq - s);
	if (len >= RG_PATH_MAX)
		return -ENAMETOOLONG;
	memset(r, 0, sizeof(*r));
	memcpy(r->path, s, len);
	for (size_t i = 0; i < sizeof(route_names) / sizeof(route_names[0]); i++) {
		if (!strcmp(eq + 1, route_names[i].name)) {
			r->route = route_names[i].route;
			return 0;
		}
	}
	return -EINVAL;
}

/* Routes from a file: "PATH PROTO" per line, '#' comments, blank lines. */
static int load_routes_file(const char *path, struct config *cfg)
{
	FILE *f = fopen(path, "r");
	char line[512], arg[512], p[256], proto[64];
	int lineno = 0, n;

	if (!f) {
		pr_err("--routes-file %s: %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || sscanf(line, "%255s", p) != 1)
			continue;
		n = sscanf(line, "%255s %63s", p, proto);
		snprintf(arg, sizeof(arg), "%s=%s", p, n == 2 ? proto : "");
		if (n != 2 || cfg->nroutes == RG_MAX_ROUTES ||
		    parse_route(arg, &cfg->routes[cfg->nroutes])) {
			pr_err("%s:%d: expected 'PATH PROTO' (see rowgated --help for protocols)",
			       path, lineno);
			fclose(f);
			return -EINVAL;
		}
		cfg->nroutes++;
	}
	fclose(f);
	return 0;
}

/* The first cgroup2 mount in /proc/self/mounts. */
static int find_cgroup2_root(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char dev[256], dir[PATH_MAX], type[64];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", dir);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
	enum { OPT_ROUTES_FILE = 300, OPT_XDP_IFACE, OPT_ALLOW_UNPARSED, OPT_MAX_CONNS,
	       OPT_CONNS_FULL, OPT_ADMIN_GROUP, OPT_SERVER_TIMEOUT, OPT_EGRESS,
	       OPT_COPY_MEMORY, OPT_COPY_EXPIRY };
	enum { OPT_FOREGROUND = 256, OPT_KEEP, OPT_CLEANUP, OPT_META, OPT_NODE_ID, OPT_TOKEN_FILE };
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "bpffs", required_argument, NULL, 'b' },
		{ "admin-socket", required_argument, NULL, 's' },
		{ "admin-group", required_argument, NULL, OPT_ADMIN_GROUP },
		{ "state-file", required_argument, NULL, 'f' },
		{ "route", required_argument, NULL, 'r' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "routes-file", required_argument, NULL, OPT_ROUTES_FILE },
		{ "allow-unparsed", required_argument, NULL, OPT_ALLOW_UNPARSED },
		{ "server-timeout", required_argument, NULL, OPT_SERVER_TIMEOUT },
		{ "xdp-iface", required_argument, NULL, OPT_XDP_IFACE },
		{ "udp", required_argument, NULL, 'u' },
		{ "foreground", no_argument, NULL, OPT_FOREGROUND },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "cleanup", no_argument, NULL, OPT_CLEANUP },
		{ "meta", required_argument, NULL, OPT_META },
		{ "node-id", required_argument, NULL, OPT_NODE_ID },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "log-level", required_argument, NULL, 'l' },
		{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
		{ "conns-full", required_argument, NULL, OPT_CONNS_FULL },
		{ "egress", required_argument, NULL, OPT_EGRESS },
		{ "copy-memory", required_argument, NULL, OPT_COPY_MEMORY },
		{ "copy-expiry", required_argument, NULL, OPT_COPY_EXPIRY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	enum rg_log_level level;
	int opt, i;

	cfg->bpffs = RG_DEFAULT_BPFFS;
	cfg->admin_socket = RG_ADMIN_DEFAULT_PATH;
	cfg->admin_group = RG_ADMIN_ROOT_ONLY;
	cfg->state_file = RG_STATE_DEFAULT_PATH;
	while ((opt = getopt_long(argc, argv, "p:c:b:s:f:r:m:u:l:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (cfg->nports == RG_MAX_PORTS) {
				pr_err("at most %d ports can be guarded", RG_MAX_PORTS);
				return -EINVAL;
			}
			switch (parse_port_profile(optarg, &cfg->ports[cfg->nports],
						   &cfg->port_cfg[cfg->nports])) {
			case 0:
				break;
			case -ENOENT:
				pr_err("--port '%s': unknown server profile; expected greptimedb, "
				       "influxdb, victoriametrics, prometheus or loki", optarg);
				return -EINVAL;
			default:
				pr_err("--port '%s': expected PORT[=PROFILE], PORT a TCP port "
				       "number 1-65535", optarg);
				return -EINVAL;
			}
			for (i = 0; i < cfg->nports; i++)
				if (cfg->ports[i] == cfg->ports[cfg->nports])
					break;
			if (i < cfg->nports &&
			    cfg->port_cfg[i].profile != cfg->port_cfg[cfg->nports].profile) {
				pr_err("--port %u given with two server profiles", cfg->ports[i]);
				return -EINVAL;
			}
			if (i == cfg->nports)
				cfg->nports++;
			break;
		case OPT_ALLOW_UNPARSED:
			if (cfg->nallow_unparsed == RG_MAX_PORTS ||
			    parse_port(optarg, &cfg->allow_unparsed[cfg->nallow_unparsed])) {
				pr_err("--allow-unparsed '%s': expected a guarded TCP port number",
				       optarg);
				return -EINVAL;
			}
			cfg->nallow_unparsed++;
			break;
		case OPT_SERVER_TIMEOUT:
			if (cfg->nserver_timeouts == RG_MAX_PORTS ||
			    parse_server_timeout(optarg,
						 &cfg->server_timeouts[cfg->nserver_timeouts])) {
				pr_err("--server-timeout '%s': expected PORT=SECONDS[,IDLE], PORT a "
				       "guarded TCP port, SECONDS and IDLE whole seconds 0-%u "
				       "(0: never)",
				       optarg, RG_TIMEOUT_MAX_S);
				return -EINVAL;
			}
			cfg->nserver_timeouts++;
			break;
		case 'c':
			cfg->cgroup = optarg;
			break;
		case 'b':
			cfg->bpffs = optarg;
			break;
		case 's':
			cfg->admin_socket = optarg;
			break;
		case OPT_ADMIN_GROUP: {
			struct group *gr = getgrnam(optarg);

			if (!gr) {
				pr_err("--admin-group '%s': no such group", optarg);
				return -EINVAL;
			}
			cfg->admin_group = gr->gr_gid;
			break;
		}
		case 'f':
			cfg->state_file = optarg;
			break;
		case 'r':
			if (cfg->nroutes == RG_MAX_ROUTES ||
			    parse_route(optarg, &cfg->routes[cfg->nroutes])) {
				pr_err("--route '%s': expected /PATH=PROTO, PROTO one that "
				       "rowgated --help lists (path shorter than %d bytes)",
				       optarg, RG_PATH_MAX);
				return -EINVAL;
			}
			cfg->nroutes++;
			break;
		case 'm':
			cfg->metrics_addr = optarg;
			break;
		case 'u': {
			char e[256];

			if (cfg->nudp == RG_MAX_UDP_PORTS) {
				pr_err("at most %d --udp mappings", RG_MAX_UDP_PORTS);
				return -EINVAL;
			}
			if (rg_parse_udp_mapping(optarg, &cfg->udp[cfg->nudp], e, sizeof(e))) {
				pr_err("--udp: %s", e);
				return -EINVAL;
			}
			cfg->nudp++;
			break;
		}
		case OPT_XDP_IFACE:
			cfg->xdp_iface = optarg;
			break;
		case OPT_ROUTES_FILE:
			if (load_routes_file(optarg, cfg))
				return -EINVAL;
			break;
		case OPT_FOREGROUND:
			cfg->foreground = true;
			break;
		case OPT_KEEP:
			break; /* the default now: kept for old unit files */
		case OPT_CLEANUP:
			cfg->cleanup = true;
			break;
		case OPT_META:
			cfg->meta_url = optarg;
			break;
		case OPT_NODE_ID:
			cfg->node_id = optarg;
			break;
		case OPT_TOKEN_FILE:
			cfg->token_file = optarg;
			break;
		case OPT_MAX_CONNS: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-' || optarg[0] == '+' ||
			    v == 0 || v > RG_MAX_CONNS_LIMIT) {
				pr_err("--max-conns '%s': expected a whole number from 1 to %u",
				       optarg, RG_MAX_CONNS_LIMIT);
				return -EINVAL;
			}
			cfg->max_conns = (__u32)v;
			break;
		}
		case OPT_CONNS_FULL:
			if (!strcmp(optarg, "fail-open")) {
				cfg->conns_full_close = false;
			} else if (!strcmp(optarg, "fail-closed")) {
				cfg->conns_full_close = true;
			} else {
				pr_err("--conns-full '%s': expected fail-open or fail-closed", optarg);
				return -EINVAL;
			}
			break;
		case OPT_EGRESS:
			if (!strcmp(optarg, "on")) {
				cfg->egress_off = false;
			} else if (!strcmp(optarg, "off")) {
				cfg->egress_off = true;
			} else {
				pr_err("--egress '%s': expected on or off", optarg);
				return -EINVAL;
			}
			break;
		case OPT_COPY_MEMORY:
			if (rg_parse_bytes(optarg, &cfg->copy_memory_bytes) ||
			    cfg->copy_memory_bytes < RG_COPY_MEMORY_MIN_BYTES) {
				pr_err("--copy-memory '%s': expected bytes, at least %lluM, with an "
				       "optional K, M or G suffix (e.g. 256M)",
				       optarg, RG_COPY_MEMORY_MIN_BYTES >> 20);
				return -EINVAL;
			}
			break;
		case OPT_COPY_EXPIRY: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-' || optarg[0] == '+' ||
			    v == 0 || v > RG_COPY_EXPIRY_MAX_S) {
				pr_err("--copy-expiry '%s': expected whole seconds from 1 to %u",
				       optarg, RG_COPY_EXPIRY_MAX_S);
				return -EINVAL;
			}
			cfg->copy_expiry_s = (__u32)v;
			break;
		}
		case 'l':
			if (rg_log_parse_level(optarg, &level)) {
				pr_err("--log-level '%s': expected %s", optarg, RG_LOG_LEVELS);
				return -EINVAL;
			}
			rg_log_set_level(level);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("rowgated %s (libbpf %s)\n", RG_VERSION, libbpf_version_string());
			exit(0);
		default:
			fprintf(stderr, "Try 'rowgated --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; try 'rowgated --help'", argv[optind]);
		return -EINVAL;
	}
	if (!cfg->xdp_iface != !cfg->nudp) {
		pr_err("--xdp-iface and --udp PORT=DB go together");
		return -EINVAL;
	}
	if (cfg->nports == 0) {
		cfg->ports[0] = RG_DEFAULT_PORT;
		cfg->port_cfg[0].profile = RG_PROFILE_GREPTIMEDB;
		cfg->nports = 1;
	}
	for (int k = 0; k < cfg->nallow_unparsed; k++) {
		for (i = 0; i < cfg->nports; i++)
			if (cfg->ports[i] == cfg->allow_unparsed[k])
				break;
		if (i == cfg->nports) {
			pr_err("--allow-unparsed %u: not a guarded port (add --port %u)",
			       cfg->allow_unparsed[k], cfg->allow_unparsed[k]);
			return -EINVAL;
		}
		cfg->port_cfg[i].flags |= RG_PORT_ALLOW_UNPARSED;
	}
	for (i = 0; i < cfg->nports; i++) {
		cfg->port_cfg[i].header_timeout_s =
			rg_profile_header_timeout_s(cfg->port_cfg[i].profile);
		cfg->port_cfg[i].idle_timeout_s = rg_profile_idle_timeout_s(cfg->port_cfg[i].profile);
	}
	for (int k = 0; k < cfg->nserver_timeouts; k++) {
		const struct server_timeout_opt *o = &cfg->server_timeouts[k];

		for (i = 0; i < cfg->nports; i++)
			if (cfg->ports[i] == o->port)
				break;
		if (i == cfg->nports) {
			pr_err("--server-timeout %u: not a guarded port (add --port %u)", o->port,
			       o->port);
			return -EINVAL;
		}
		cfg->port_cfg[i].header_timeout_s = o->header_s;
		cfg->port_cfg[i].idle_timeout_s = o->idle_s;
	}
	if (cfg->max_conns == 0)
		cfg->max_conns = RG_MAX_CONNS;
	if (!cfg->cgroup) {
		if (find_cgroup2_root(cfg->cgroup_buf, sizeof(cfg->cgroup_buf))) {
			pr_err("no cgroup v2 hierarchy is mounted; mount one or pass --cgroup");
			return -ENOENT;
		}
		cfg->cgroup = cfg->cgroup_buf;
	}
	if (!cfg->meta_url && (cfg->node_id || cfg->token_file)) {
		pr_err("--node-id and --token-file only make sense with --meta");
		return -EINVAL;
	}
	if (cfg->meta_url && !cfg->node_id) {
		if (gethostname(cfg->node_id_buf, sizeof(cfg->node_id_buf) - 1)) {
			pr_err("cannot read the hostname: pass --node-id");
			return -EINVAL;
		}
		cfg->node_id = cfg->node_id_buf;
	}
	return 0;
}

/* Attach prog to the cgroup through a pinned link, or adopt the link a
 * previous rowgated pinned on the same cgroup and swap its program
 * atomically.  A pinned link on another cgroup (--cgroup changed, or the
 * cgroup was removed and recreated) is replaced: the new link first. */
static int attach_cgroup_link(struct bpf_program *prog, int cgroup_fd, __u64 cgroup_id,
			      const char *dir, const char *pin_name)
{
	struct bpf_link *link, *stale = NULL;
	char path[PATH_MAX];
	__u64 linked = 0;
	int err;

	rg_pin_path(path, sizeof(path), dir, pin_name);
	link = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (link && rg_link_cgroup(dir, pin_name, &linked, NULL) == 0 && linked == cgroup_id) {
		err = bpf_link__update_program(link, prog);
		if (!err) {
			pr_info("adopted %s", path);
			bpf_link__disconnect(link);
			bpf_link__destroy(link);
			return 0;
		}
		pr_warn("cannot update pinned link %s (%s): replacing it", path, strerror(-err));
	} else if (link) {
		pr_info("%s is attached to cgroup id %llu, not %llu: replacing it", path,
			(unsigned long long)linked, (unsigned long long)cgroup_id);
	}
	stale = link;
	link = bpf_program__attach_cgroup(prog, cgroup_fd);
	err = libbpf_get_error(link);
	if (err) {
		pr_err("cannot attach %s to the cgroup: %s", bpf_program__name(prog),
		       strerror(-err));
		bpf_link__destroy(stale);
		return err;
	}
	if (stale) {
		bpf_link__detach(stale);
		bpf_link__unpin(stale);
		bpf_link__destroy(stale);
	}
	unlink(path);
	err = bpf_link__pin(link, path);
	if (err) {
		pr_err("cannot pin %s: %s", path, strerror(-err));
		bpf_link__destroy(link);
		return err;
	}
	bpf_link__disconnect(link); /* the pin keeps it attached */
	bpf_link__destroy(link);
	return 0;
}

static struct rg_adopt_maps adopt_maps(struct daemon *d)
{
	return (struct rg_adopt_maps){
		.conns_fd = bpf_map__fd(d->skel->maps.RG_MAP_CONNS),
		.sockhash_fd = bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH),
		.adopt_fd = bpf_map__fd(d->skel->maps.RG_MAP_ADOPT),
		.conn_value_size = bpf_map__value_size(d->skel->maps.RG_MAP_CONNS),
	};
}

static void write_guard(struct daemon *d)
{
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD), &zero, &d->guard, BPF_ANY);
}

/* Guard the connections the servers already have (the sockops program only
 * sees new ones): after sockops is attached, so none falls in between. */
static void adopt_now(struct daemon *d)
{
	struct rg_adopt_maps m = adopt_maps(d);
	struct rg_adopt_result r;
	__u64 t0 = rg_monotonic_ns();

	if (rg_adopt_existing(d->cfg->cgroup, d->cfg->ports, d->cfg->nports, &m, &r)) {
		pr_warn("cannot look for established connections: out of memory");
		return;
	}
	d->guard.adopted += r.adopted;
	write_guard(d);
	if (r.adopted || r.failed)
		pr_info("adopted %u established connection(s) in %llu ms (%u between requests "
			"already, the others once they reach one); %u already tracked, %u could "
			"not be adopted",
			r.adopted, (unsigned long long)((rg_monotonic_ns() - t0) / 1000000),
			r.at_boundary, r.tracked, r.failed);
	if (r.failed)
		pr_warn("%u established connection(s) could not be adopted (connection table "
			"full?): they pass unlimited until they reconnect",
			r.failed);
	if (r.unreadable)
		pr_warn("%u socket(s) of the guarded servers could not be taken with "
			"pidfd_getfd() (ptrace restrictions?): connections among them are not "
			"adopted and pass unlimited until they reconnect",
			r.unreadable);
}

/* The cgroup hooks, and the record rowgatectl status and the re-attach
 * check compare the kernel's attachments with. */
static int attach_cgroup(struct daemon *d)
{
	struct rowgate *skel = d->skel;
	struct rg_guard guard = {};
	struct stat st;
	__u32 zero = 0;
	int cgroup_fd, err;

	/* the record outlives restarts: carry its counters */
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.RG_MAP_GUARD), &zero, &guard);

	cgroup_fd = open(d->cfg->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0 || fstat(cgroup_fd, &st)) {
		err = -errno;
		pr_err("cannot open cgroup %s: %s", d->cfg->cgroup, strerror(errno));
		if (cgroup_fd >= 0)
			close(cgroup_fd);
		return err;
	}
	guard.cgroup_id = st.st_ino; /* cgroup2: the inode number is the cgroup id */
	guard.max_conns = bpf_map__max_entries(skel->maps.RG_MAP_CONNS);
	guard.conns_full_close = d->cfg->conns_full_close;
	guard.abi_version = RG_ABI_VERSION;
	snprintf(guard.cgroup_path, sizeof(guard.cgroup_path), "%s", d->cfg->cgroup);
	d->guard = guard;
	write_guard(d);
	err = attach_cgroup_link(skel->progs.rg_getpeername4, cgroup_fd, guard.cgroup_id,
				 d->cfg->bpffs, RG_PIN_LINK_PEER4);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_getpeername6, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_PEER6);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_sockops, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_SOCKOPS);
	if (!err)
		adopt_now(d);
	if (!err && d->cfg->conns_full_close)
		err = attach_cgroup_link(skel->progs.rg_refuse, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_REFUSE);
	else if (!err)
		rg_detach_pinned_link(d->cfg->bpffs, RG_PIN_LINK_REFUSE); /* fail-open now */
	close(cgroup_fd);
	return err;
}

/* Put this build's verdict in the slot the entry jumps to: one atomic map
 * update, seen by every open connection from its next segment on. */
static int fill_verdict_slot(struct daemon *d)
{
	int slot_fd = bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_SLOT);
	int prog_fd = bpf_program__fd(d->skel->progs.rg_verdict);
	__u32 slot = RG_VERDICT_SLOT, prev = 0;

	bpf_map_lookup_elem(slot_fd, &slot, &prev); /* a prog array reads back ids */
	if (bpf_map_update_elem(slot_fd, &slot, &prog_fd, BPF_ANY)) {
		pr_err("cannot put the verdict in the verdict slot: %s", strerror(errno));
		return -errno;
	}
	if (prev)
		pr_info("verdict slot: program %u replaced, open connections run this build's "
			"verdict from their next segment",
			prev);
	return 0;
}

static int attach_all(struct daemon *d)
{
	struct rowgate *skel = d->skel;
	int sockhash_fd = bpf_map__fd(skel->maps.RG_MAP_SOCKHASH);
	char path[PATH_MAX], was[BPF_OBJ_NAME_LEN];
	int err;

	/* the slot before the entry, so no socket meets an empty slot */
	err = fill_verdict_slot(d);
	if (err)
		return err;
	if (rg_sockhash_verdict(sockhash_fd, was, sizeof(was)) && strcmp(was, RG_ENTRY_PROG_NAME))
		pr_warn("the sockhash ran %s, a verdict without the entry (an older rowgated): "
			"connections it accepted keep that verdict until they close",
			was);
	/* entry before sockops, so no socket enters the sockhash unguarded;
	 * attaching again replaces a previous rowgated's entry (same code) */
	err = bpf_prog_attach(bpf_program__fd(skel->progs.rg_entry), sockhash_fd,
			      BPF_SK_SKB_VERDICT, 0);
	if (err) {
		pr_err("cannot attach the verdict entry to the sockhash: %s", strerror(errno));
		return -errno;
	}
	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_PIN_PROG_VERDICT);
	unlink(path);
	bpf_program__pin(skel->progs.rg_entry, path);
	/* egress next to it (docs/design.md#egress): a socket takes the
	 * map's programs when sockops inserts it */
	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_PIN_PROG_EGRESS);
	if (d->cfg->egress_off) {
		int old = bpf_obj_get(path); /* a previous rowgated's */

		if (old >= 0) {
			bpf_prog_detach2(old, bpf_map__fd(skel->maps.RG_MAP_SOCKHASH),
					 BPF_SK_MSG_VERDICT);
			close(old);
		}
	}
	unlink(path);
	if (!d->cfg->egress_off) {
		if (bpf_prog_attach(bpf_program__fd(skel->progs.rg_egress),
				    bpf_map__fd(skel->maps.RG_MAP_SOCKHASH), BPF_SK_MSG_VERDICT,
				    0)) {
			pr_err("cannot attach the egress program to the sockhash: %s",
			       strerror(errno));
			return -errno;
		}
		bpf_program__pin(skel->progs.rg_egress, path);
	}
	return attach_cgroup(d);
}

/*
 * The guarded cgroup may be removed and recreated under us (systemd does so
 * on every restart of a service): its cgroup links detach with it (and a
 * link detached by hand looks the same).  Checked
 * on inotify events of the parent directory and every poll interval: when
 * the directory at the path is not the cgroup the sockops link is on,
 * re-attach; while it is absent, say so once.
 */
static void guard_check(struct daemon *d)
{
	__u32 ids[4], n = 4, slot = RG_VERDICT_SLOT, prog_id;
	__u64 linked = 0;
	struct stat st;

	if (d->detached)
		return;
	/* the verdict taken off the sockhash (by hand): put it back */
	if (bpf_prog_query(bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH), BPF_SK_SKB_VERDICT, 0,
			   NULL, ids, &n) == 0 && n == 0) {
		pr_warn("the verdict program was detached from the sockhash: re-attaching");
		if (bpf_prog_attach(bpf_program__fd(d->skel->progs.rg_entry),
				    bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH), BPF_SK_SKB_VERDICT,
				    0))
			pr_err("cannot re-attach the verdict program: %s", strerror(errno));
	}
	/* the slot emptied (by hand): every connection passes unparsed */
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_SLOT), &slot, &prog_id)) {
		pr_warn("the verdict slot is empty: putting the verdict back");
		fill_verdict_slot(d);
	}
	rg_link_cgroup(d->cfg->bpffs, RG_PIN_LINK_SOCKOPS, &linked, NULL);
	if (stat(d->cfg->cgroup, &st)) {
		if (!d->cgroup_gone)
			pr_warn("cgroup %s is gone: a server started in it again is not guarded "
				"until it reappears (open guarded connections stay guarded)",
				d->cfg->cgroup);
		d->cgroup_gone = true;
		return;
	}
	if (linked == st.st_ino)
		return;
	pr_warn("cgroup %s %s (programs on cgroup id %llu, the directory is id %llu): "
		"re-attaching",
		d->cfg->cgroup,
		d->cgroup_gone ? "was recreated" :
		linked	       ? "was replaced" :
				 "lost its programs (removed and recreated, or detached by hand)",
		(unsigned long long)linked, (unsigned long long)st.st_ino);
	d->cgroup_gone = false;
	if (attach_cgroup(d) == 0)
		pr_warn("re-attached to cgroup %s (id %llu): enforcing again", d->cfg->cgroup,
			(unsigned long long)st.st_ino);
}

/* Wake on entries created or removed beside the guarded cgroup. */
static int watch_cgroup_parent(const char *cgroup)
{
	char parent[PATH_MAX], *slash;
	int fd;

	snprintf(parent, sizeof(parent), "%s", cgroup);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -1;
	*slash = 0;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -1;
	if (inotify_add_watch(fd, parent, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
						  IN_ONLYDIR) < 0) {
		pr_info("cannot watch %s (%s): checking the cgroup every %d ms only", parent,
			strerror(errno), RG_POLL_INTERVAL_MS);
		close(fd);
		return -1;
	}
	return fd;
}

/* The route a path ends up with: the last --route naming it, else a default;
 * NULL when none (or "none"). */
static const struct rg_route *wanted_route(const struct config *cfg, const char *path)
{
	size_t i;
	int j;

	for (j = cfg->nroutes - 1; j >= 0; j--)
		if (!strncmp(cfg->routes[j].path, path, RG_PATH_MAX))
			/* "none" passes untouched; "refuse" is a route */
			return cfg->routes[j].route.protocol == RG_PROTO_NONE &&
					       !cfg->routes[j].route.flags ?
				       NULL :
				       &cfg->routes[j].route;
	for (i = 0; i < sizeof(default_routes) / sizeof(default_routes[0]); i++)
		if (!strncmp(default_routes[i].path, path, RG_PATH_MAX))
			return &default_routes[i].route;
	return NULL;
}

static bool port_wanted(const struct config *cfg, __u32 port)
{
	for (int j = 0; j < cfg->nports; j++)
		if (cfg->ports[j] == port)
			return true;
	return false;
}

/* Write the wanted entries first, then drop stale ones: a restart under
 * load never leaves a guarded port or route missing for a moment. */
static int populate_ports_routes(struct daemon *d)
{
	int ports_fd = bpf_map__fd(d->skel->maps.RG_MAP_PORTS);
	int routes_fd = bpf_map__fd(d->skel->maps.RG_MAP_ROUTES);
	struct rg_route_key key, next;
	__u32 port, pnext;
	bool first = true;
	size_t i;
	int j;

	for (j = 0; j < d->cfg->nports; j++)
		if (bpf_map_update_elem(ports_fd, &d->cfg->ports[j], &d->cfg->port_cfg[j], BPF_ANY))
			return -errno;
	while (bpf_map_get_next_key(ports_fd, first ? NULL : &port, &pnext) == 0) {
		port = pnext;
		first = false;
		if (!port_wanted(d->cfg, port) && !bpf_map_delete_elem(ports_fd, &port))
			first = true;
	}
	for (i = 0; i < sizeof(default_routes) / sizeof(default_routes[0]); i++) {
		const struct rg_route *r = wanted_route(d->cfg, default_routes[i].path);

		memset(&key, 0, sizeof(key));
		memcpy(key.path, default_routes[i].path, strlen(default_routes[i].path));
		if (r && bpf_map_update_elem(routes_fd, &key, r, BPF_ANY))
			return -errno;
	}
	for (j = 0; j < d->cfg->nroutes; j++) {
		const struct rg_route *r = wanted_route(d->cfg, d->cfg->routes[j].path);

		memset(&key, 0, sizeof(key));
		memcpy(key.path, d->cfg->routes[j].path, sizeof(key.path));
		if (r && bpf_map_update_elem(routes_fd, &key, r, BPF_ANY))
			return -errno;
	}
	first = true;
	while (bpf_map_get_next_key(routes_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (!wanted_route(d->cfg, key.path) && !bpf_map_delete_elem(routes_fd, &key))
			first = true;
	}
	return 0;
}

/* The maps of a database, for lib/maps.h. */
static struct rg_db_maps db_maps(const struct daemon *d)
{
	return (struct rg_db_maps){
		.limits_fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS),
		.buckets_fd = bpf_map__fd(d->skel->maps.RG_MAP_BUCKETS),
		.db_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS),
		.proto_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS),
	};
}

/* A configured limit, no quota: the standalone write. */
static int apply_limit(struct daemon *d, const struct rg_db_key *db, __u64 limit)
{
	struct rg_db_maps m = db_maps(d);

	return rg_limit_write(&m, db, limit, 0);
}

static const char *map_errno(int err)
{
	switch (-err) {
	case E2BIG:
	case ENOSPC:
		return "the limits map is full";
	case ENOMEM:
		return "out of kernel memory";
	default:
		return strerror(-err);
	}
}

static int sync_limits_to_maps(struct daemon *d)
{
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS);
	struct rg_db_key key, next;
	bool first = true;
	size_t i;
	int err;

	/* drop limits the state file no longer has */
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (!rg_limit_list_find(&d->limits, &key)) {
			bpf_map_delete_elem(fd, &key);
			first = true;
		}
	}
	for (i = 0; i < d->limits.count; i++) {
		err = apply_limit(d, &d->limits.entries[i].db, d->limits.entries[i].limit);
		if (err) {
			pr_err("cannot load the limit of %s: %s", d->limits.entries[i].db.name,
			       map_errno(err));
			return err;
		}
	}
	return 0;
}

/* ---- admin socket callbacks ---- */

/* Distributed mode: the cluster's limits live at rowgate-meta. */
static int meta_refuse(struct daemon *d, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "this rowgated takes its limits from rowgate-meta (--meta %s): use "
		 "'rowgatectl --meta %s limit ...'",
		 d->cfg->meta_url, d->cfg->meta_url);
	return -EPERM;
}

/* The meta agent's callback: the cluster's limit and this host's quota. */
static int meta_apply(void *ctx, const struct rg_db_key *db, __u64 limit, __u64 quota)
{
	struct rg_db_maps m = db_maps(ctx);

	return rg_limit_write(&m, db, limit, quota);
}

static int op_limit_set(void *ctx, const struct rg_db_key *db, __u64 limit, char *err,
			size_t errlen)
{
	struct daemon *d = ctx;
	struct rg_limit_entry *old = rg_limit_list_find(&d->limits, db);
	bool existed = old != NULL;
	__u64 old_limit = old ? old->limit : 0;
	int ret;

	if (d->agent)
		return meta_refuse(d, err, errlen);
	ret = rg_limit_list_set(&d->limits, db, limit);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	/* durable first: a limit the daemon acknowledged survives a crash */
	ret = rg_state_save(d->cfg->state_file, &d->limits, err, errlen);
	if (!ret)
		ret = apply_limit(d, db, limit);
	if (ret) {
		if (!*err)
			snprintf(err, errlen, "cannot apply the limit: %s", map_errno(ret));
		if (existed)
			rg_limit_list_set(&d->limits, db, old_limit);
		else
			rg_limit_list_unset(&d->limits, db);
		return ret;
	}
	pr_info("limit %s = %llu rows/s", db->name, (unsigned long long)limit);
	return 0;
}

static int op_limit_unset(void *ctx, const struct rg_db_key *db, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	struct rg_limit_entry *old = rg_limit_list_find(&d->limits, db);
	__u64 old_limit;
	int ret;

	if (d->agent)
		return meta_refuse(d, err, errlen);
	if (!old) {
		snprintf(err, errlen, "database '%s' has no limit", db->name);
		return -ENOENT;
	}
	old_limit = old->limit;
	rg_limit_list_unset(&d->limits, db);
	ret = rg_state_save(d->cfg->state_file, &d->limits, err, errlen);
	if (ret) {
		rg_limit_list_set(&d->limits, db, old_limit);
		return ret;
	}
	/* the bucket stays: re-enabling must not forgive debt */
	{
		struct rg_db_maps m = db_maps(d);

		rg_limit_remove(&m, db);
	}
	pr_info("limit %s unset", db->name);
	return 0;
}

static int op_limit_show(void *ctx, const struct rg_db_key *db, json_t *arr, char *err,
			 size_t errlen)
{
	struct daemon *d = ctx;
	size_t i;

	for (i = 0; i < d->limits.count; i++) {
		const struct rg_limit_entry *e = &d->limits.entries[i];

		if (db && strcmp(db->name, e->db.name))
			continue;
		if (rg_admin_add_limit(arr, &e->db, e->limit)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/* Counters per protocol that saw traffic: estimated vs reconciled rows. */
static json_t *proto_stats_json(struct daemon *d, const struct rg_db_key *db)
{
	json_t *all = json_object();

	for (__u32 p = RG_PROTO_NONE + 1; all && p < RG_PROTO_MAX; p++) {
		struct rg_proto_key k = { .db = *db, .protocol = p };
		struct rg_proto_stats ps;
		json_t *o;

		if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS), &k, &ps) ||
		    !rg_proto_stats_seen(&ps))
			continue;
		o = json_object();
		rg_counters_json(o, &rg_proto_stats_table, &ps);
		/* derived, for people: the table has the sum */
		json_object_set_new(o, "lag_avg_us",
				    rg_json_u64(ps.reconciled_requests ?
							ps.lag_ns_total / ps.reconciled_requests / 1000 :
							0));
		json_object_set_new(all, rg_protocol_name(p), o);
	}
	return all;
}

static json_t *db_stats_json(struct daemon *d, const struct rg_db_key *db)
{
	struct rg_db_maps m = db_maps(d);
	struct rg_db_snapshot snap;
	json_t *o = json_object();

	if (!o)
		return NULL;
	rg_db_snapshot_read(&m, db, rg_monotonic_ns(), &snap);
	json_object_set_new(o, "db", json_string(db->name));
	rg_counters_json(o, &rg_db_stats_table, &snap.stats);
	json_object_set_new(o, "protocols", proto_stats_json(d, db));
	return o;
}

static int op_stats(void *ctx, const struct rg_db_key *db, json_t *reply, char *err,
		    size_t errlen)
{
	struct daemon *d = ctx;
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS);
	json_t *arr = json_array(), *g = json_object();
	struct rg_global_stats gs = {};
	struct rg_guard_stats guard = {};
	struct rg_verdict_stats vs = {};
	struct rg_db_key key, next;
	bool first = true;
	__u32 zero = 0;

	if (!arr || !g)
		goto nomem;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (db && strcmp(db->name, key.name))
			continue;
		if (json_array_append_new(arr, db_stats_json(d, &key)))
			goto nomem;
	}
	if (db && json_array_size(arr) == 0) {
		snprintf(err, errlen, "no counters for database '%s' (no limit was ever set)",
			 db->name);
		json_decref(arr);
		json_decref(g);
		return -ENOENT;
	}
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL), &zero, &gs);
	rg_counters_json(g, &rg_global_stats_table, &gs);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD_STATS), &zero, &guard) == 0)
		rg_counters_json(g, &rg_guard_stats_table, &guard);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_STATS), &zero, &vs) == 0)
		rg_counters_json(g, &rg_verdict_stats_table, &vs);
	rg_reconciler_stats_json(d->rec, g);
	rg_xdp_stats_json(d->cfg->bpffs, db, reply); /* -ENOENT: no UDP path */
	json_object_set_new(reply, "databases", arr);
	json_object_set_new(reply, "global", g);
	if (d->agent)
		json_object_set_new(reply, "meta", rg_meta_agent_stats(d->agent));
	return 0;
nomem:
	json_decref(arr);
	json_decref(g);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* rowgatectl detach: the daemon stays up (a supervisor would restart it and
 * re-attach) and says it is not enforcing until it is restarted. */
static int op_detach(void *ctx, char *err, size_t errlen)
{
	struct daemon *d = ctx;

	(void)err;
	(void)errlen;
	rg_detach_all(d->cfg->bpffs);
	d->detached = true;
	pr_warn("detached on request: nothing is enforced until rowgated restarts");
	return 0;
}

static const struct rg_admin_ops admin_ops = {
	.limit_set = op_limit_set,
	.limit_unset = op_limit_unset,
	.limit_show = op_limit_show,
	.stats = op_stats,
	.detach = op_detach,
};

/* ---- lifecycle ---- */

/* rowgated --cleanup: no enforcement, no state left under the directory. */
static void purge_all(const char *dir)
{
	size_t i;

	rg_detach_all(dir);
	rg_xdp_cleanup(dir, true);
	for (i = 0; i < sizeof(state_maps) / sizeof(state_maps[0]); i++)
		rg_unpin(dir, state_maps[i]);
	if (rmdir(dir) && errno != ENOENT)
		pr_warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Whether a pinned map's key or value type, as its BTF describes it, lays
 * out memory differently from this object's: a new verdict reads the state
 * of connections an older one wrote (rg_conn), so equal sizes are not
 * enough.  Pins without BTF are judged by their sizes alone. */
static bool pinned_btf_differs(struct daemon *d, const struct bpf_map *map,
			       const struct bpf_map_info *info, char *why, size_t len)
{
	const struct btf *ours = bpf_object__btf(d->skel->obj);
	struct btf *theirs;
	bool differs = false;

	if (!ours || !info->btf_id)
		return false;
	theirs = btf__load_from_kernel_by_id(info->btf_id);
	if (!theirs)
		return false;
	if (info->btf_key_type_id && bpf_map__btf_key_type_id(map))
		differs = rg_btf_layout_diff(theirs, info->btf_key_type_id, ours,
					     bpf_map__btf_key_type_id(map), why, len) != 0;
	if (!differs && info->btf_value_type_id && bpf_map__btf_value_type_id(map))
		differs = rg_btf_layout_diff(theirs, info->btf_value_type_id, ours,
					     bpf_map__btf_value_type_id(map), why, len) != 0;
	btf__free(theirs);
	return differs;
}

/* A pinned map this object cannot share: different layout or version.
 * Checked before loading, so an incompatible upgrade attaches nothing. */
static int check_pinned_abi(struct daemon *d)
{
	char path[PATH_MAX], why[512];
	struct bpf_map *map;
	struct rg_guard g = {};
	__u32 zero = 0;
	int fd;

	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_STR(RG_MAP_GUARD));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		int ret = bpf_map_lookup_elem(fd, &zero, &g);

		close(fd);
		if (!ret && g.abi_version && g.abi_version != RG_ABI_VERSION) {
			pr_err("the pins under %s are rowgate map ABI %u, this rowgated speaks %u: "
			       "nothing was changed; run the rowgated that matches them, or "
			       "'rowgated --cleanup' first (drops limits, debt and counters; "
			       "open connections go on unlimited until this one adopts them)",
			       d->cfg->bpffs, g.abi_version, RG_ABI_VERSION);
			return -EPROTO;
		}
	}
	bpf_object__for_each_map(map, d->skel->obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		const char *pin = bpf_map__pin_path(map); /* set by pin_root_path */

		if (!pin)
			continue; /* .rodata and templates belong to one load */
		snprintf(path, sizeof(path), "%s", pin);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			info.type = BPF_MAP_TYPE_UNSPEC;
		close(fd);
		if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
		    info.value_size != bpf_map__value_size(map)) {
			pr_err("pinned map %s has another layout (key %u / value %u bytes, this "
			       "rowgated: %u / %u): nothing was changed; run the rowgated that "
			       "matches the pins, or 'rowgated --cleanup' first",
			       path, info.key_size, info.value_size, bpf_map__key_size(map),
			       bpf_map__value_size(map));
			return -EPROTO;
		}
		if (pinned_btf_differs(d, map, &info, why, sizeof(why))) {
			pr_err("pinned map %s has another layout (the pinned one first, this "
			       "rowgated's second: %s): nothing was changed; run the rowgated that "
			       "matches the pins, or 'rowgated --cleanup' first",
			       path, why);
			return -EPROTO;
		}
	}
	return 0;
}

/* The connection table's maps get --max-conns entries; pinned ones of
 * another size are kept (open connections live in them): refuse clearly. */
static int size_conn_table(struct daemon *d)
{
	struct bpf_map *maps[] = { d->skel->maps.RG_MAP_CONNS, d->skel->maps.RG_MAP_SOCKHASH,
				   d->skel->maps.RG_MAP_ADOPT };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd;

		rg_pin_path(path, sizeof(path), d->cfg->bpffs, bpf_map__name(maps[i]));
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			int ret = bpf_obj_get_info_by_fd(fd, &info, &len);

			close(fd);
			if (!ret && info.max_entries != d->cfg->max_conns) {
				pr_err("the pinned connection table %s has %u entries, not --max-conns "
				       "%u: start with --max-conns %u, or 'rowgatectl detach' first "
				       "(it releases every guarded connection)",
				       path, info.max_entries, d->cfg->max_conns, info.max_entries);
				return -EEXIST;
			}
		}
		if (bpf_map__set_max_entries(maps[i], d->cfg->max_conns))
			return -EINVAL;
	}
	return 0;
}

static int load(struct daemon *d)
{
	int err;

	/* maps declared LIBBPF_PIN_BY_NAME are pinned there, or adopted */
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = d->cfg->bpffs);

	d->skel = rowgate__open_opts(&opts);
	if (!d->skel) {
		pr_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	err = check_pinned_abi(d);
	if (!err)
		err = size_conn_table(d);
	if (err == -EEXIST || err == -EPROTO)
		return err;
	d->skel->rodata->rg_conns_full_close = d->cfg->conns_full_close;
	d->skel->rodata->rg_egress_on = !d->cfg->egress_off;
	if (!err)
		err = rowgate__load(d->skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s%s", strerror(-err), rg_load_hint(err));
		return err;
	}
	return 0;
}

/* Detach once ready: the parent exits 0 when the child says so. */
static int daemonize(int *notify_fd)
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) == 1 && c == 'R')
			_exit(0);
		_exit(1);
	}
	close(pipefd[0]);
	setsid();
	*notify_fd = pipefd[1];
	return 0;
}

static void notify_ready(int fd)
{
	int nul;

	if (fd < 0)
		return;
	if (write(fd, "R", 1) != 1)
		pr_warn("cannot notify the parent process");
	close(fd);
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		close(nul);
	}
}

/* The connection table's alarm: a log line when connections went
 * unguarded (fail-open) or were refused (fail-closed), at most every
 * RG_CONNS_FULL_LOG_MS. */
static void conns_full_alarm(struct daemon *d)
{
	static __u64 seen_untracked, seen_refused, last_log_ns;
	static bool started;
	struct rg_global_stats g = {};
	struct rg_guard_stats gs = {};
	__u64 now = rg_monotonic_ns();
	__u32 zero = 0;

	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL), &zero, &g);
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD_STATS), &zero, &gs);
	if (!started) { /* what happened before this start was reported then */
		seen_untracked = g.conns_untracked;
		seen_refused = gs.conns_refused;
		started = true;
		return;
	}
	if (g.conns_untracked == seen_untracked && gs.conns_refused == seen_refused)
		return;
	if (last_log_ns && now - last_log_ns < (__u64)RG_CONNS_FULL_LOG_MS * 1000000)
		return;
	if (g.conns_untracked > seen_untracked)
		pr_warn("connection table full (--max-conns %u): %llu connection(s) passed "
			"UNLIMITED since the last report (fail-open; conns_untracked %llu)",
			d->cfg->max_conns, (unsigned long long)(g.conns_untracked - seen_untracked),
			(unsigned long long)g.conns_untracked);
	if (gs.conns_refused > seen_refused)
		pr_warn("connection table full (--max-conns %u): %llu connection(s) refused "
			"since the last report (fail-closed: their data is dropped; conns_refused "
			"%llu)",
			d->cfg->max_conns, (unsigned long long)(gs.conns_refused - seen_refused),
			(unsigned long long)gs.conns_refused);
	seen_untracked = g.conns_untracked;
	seen_refused = gs.conns_refused;
	last_log_ns = now;
}

static int serve(struct daemon *d, int notify_fd)
{
	struct pollfd pfd[4];
	__u64 last_gc_ns = rg_monotonic_ns();
	sigset_t mask;
	int sfd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		return -errno;
	pr_info("guarding %d port(s) in %s; admin socket %s", d->cfg->nports, d->cfg->cgroup,
		d->cfg->admin_socket);
	notify_ready(notify_fd);
	pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = d->admin_fd, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = rg_reconciler_fd(d->rec), .events = POLLIN };
	pfd[3] = (struct pollfd){ .fd = d->cgroup_watch_fd, .events = POLLIN };
	for (;;) {
		struct signalfd_siginfo si;
		char ev[4096];

		if (poll(pfd, 4, RG_POLL_INTERVAL_MS) < 0 && errno != EINTR)
			break;
		if (pfd[3].revents & POLLIN)
			while (read(d->cgroup_watch_fd, ev, sizeof(ev)) > 0)
				;
		guard_check(d);
		conns_full_alarm(d);
		if (!d->detached && rg_monotonic_ns() - last_gc_ns >= RG_GC_INTERVAL_MS * 1000000ULL) {
			struct rg_adopt_maps m = adopt_maps(d);

			rg_adopt_gc(&m);
			last_gc_ns = rg_monotonic_ns();
		}
		/* body copies first: corrections decide the next admissions */
		rg_reconciler_poll(d->rec, 0);
		if (pfd[0].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGHUP) {
				pr_info("signal %u: stopping", si.ssi_signo);
				break;
			}
		}
		if (pfd[1].revents & POLLIN)
			while (rg_admin_serve_one(d->admin_fd, d->cfg->admin_group, &admin_ops,
						  d) != -EAGAIN)
				;
		rg_meta_agent_tick(d->agent, &d->limits, d->cfg->state_file);
	}
	close(sfd);
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg = {};
	struct daemon d = { .cfg = &cfg, .lock_fd = -1, .admin_fd = -1, .cgroup_watch_fd = -1 };
	char err[256] = "";
	int notify_fd = -1, ret = 1;

	rg_log_route_libbpf();
	if (parse_args(argc, argv, &cfg))
		return 2;
	if (geteuid() != 0)
		pr_warn("not running as root: loading BPF programs will likely fail");
	if (cfg.cleanup) {
		if (!rg_is_bpffs(cfg.bpffs) && access(cfg.bpffs, F_OK))
			return 0;
		d.lock_fd = rg_bpffs_lock(cfg.bpffs);
		if (d.lock_fd < 0)
			return 1;
		purge_all(cfg.bpffs);
		return 0;
	}
	rg_limit_list_init(&d.limits);
	if (rg_state_load(cfg.state_file, &d.limits, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (rg_bpffs_prepare(cfg.bpffs))
		return 1;
	d.lock_fd = rg_bpffs_lock(cfg.bpffs);
	if (d.lock_fd < 0)
		return 1;
	if (!cfg.foreground && daemonize(&notify_fd))
		return 1;
	if (load(&d))
		goto out;
	if (populate_ports_routes(&d)) {
		pr_err("cannot write the ports and routes maps: %s", strerror(errno));
		goto out;
	}
	if (sync_limits_to_maps(&d))
		goto out;
	d.admin_fd = rg_admin_listen(cfg.admin_socket, cfg.admin_group);
	if (d.admin_fd < 0)
		goto out;
	{
		struct rg_reconcile_fds rf = {
			.bodies_fd = bpf_map__fd(d.skel->maps.RG_MAP_BODIES),
			.ratios_fd = bpf_map__fd(d.skel->maps.RG_MAP_RATIOS),
			.prog_fd = bpf_program__fd(d.skel->progs.rg_reconcile),
			.copy_memory_bytes = cfg.copy_memory_bytes,
			.copy_expiry_s = cfg.copy_expiry_s,
		};

		if (rg_reconciler_new(&rf, &d.rec))
			goto out;
	}
	if (attach_all(&d))
		goto stop;
	d.cgroup_watch_fd = watch_cgroup_parent(cfg.cgroup);
	if (cfg.xdp_iface && rg_xdp_start(cfg.bpffs, cfg.xdp_iface, cfg.udp, cfg.nudp, &d.xdp))
		goto stop;
	if (cfg.metrics_addr) {
		struct rg_metrics_maps mm = {
			.limits_fd = bpf_map__fd(d.skel->maps.RG_MAP_LIMITS),
			.buckets_fd = bpf_map__fd(d.skel->maps.RG_MAP_BUCKETS),
			.db_stats_fd = bpf_map__fd(d.skel->maps.RG_MAP_DB_STATS),
			.global_fd = bpf_map__fd(d.skel->maps.RG_MAP_GLOBAL),
			.proto_stats_fd = bpf_map__fd(d.skel->maps.RG_MAP_PROTO_STATS),
			.bpffs = cfg.bpffs,
			.reconciler = d.rec,
		};

		if (rg_metrics_start(cfg.metrics_addr, &mm, &d.metrics))
			goto stop;
	}
	if (cfg.meta_url) {
		struct rg_meta_agent_config mc = {
			.urls = cfg.meta_url,
			.node_id = cfg.node_id,
			.token_file = cfg.token_file,
			.limits_fd = bpf_map__fd(d.skel->maps.RG_MAP_LIMITS),
			.buckets_fd = bpf_map__fd(d.skel->maps.RG_MAP_BUCKETS),
			.stats_fd = bpf_map__fd(d.skel->maps.RG_MAP_DB_STATS),
			.apply = meta_apply,
			.ctx = &d,
		};

		if (rg_meta_agent_start(&mc, &d.agent))
			goto stop;
	}
	ret = serve(&d, notify_fd) ? 1 : 0;
	rg_meta_agent_stop(d.agent);
	d.agent = NULL;
stop:
	/* enforcement outlives the daemon; removing it is explicit */
	rg_xdp_stop(d.xdp, true);
	if (ret == 0 && !d.detached)
		pr_info("stopped; enforcement stays attached (pins under %s): "
			"'rowgatectl detach' or 'rowgated --cleanup' removes it",
			cfg.bpffs);
out:
	if (d.cgroup_watch_fd >= 0)
		close(d.cgroup_watch_fd);
	rg_metrics_stop(d.metrics);
	rg_reconciler_free(d.rec);
	if (d.admin_fd >= 0) {
		close(d.admin_fd);
		unlink(cfg.admin_socket);
	}
	rowgate__destroy(d.skel);
	rg_limit_list_free(&d.limits);
	return ret;
}
