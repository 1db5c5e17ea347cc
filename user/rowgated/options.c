// SPDX-License-Identifier: MIT
/* rowgated's command line: usage with every default, and the options
 * checked against each other into struct config. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "rowgate_version.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "../lib/prom.h"
#include "reconcile.h"
#include "rowgated.h"

/* The well-known port that picks each server profile by default
 * (docs/server-profiles.md; names: rg_profile_name). */
static const __u32 profile_ports[RG_PROFILE_MAX] = {
	[RG_PROFILE_GREPTIMEDB] = 4000,
	[RG_PROFILE_INFLUXDB] = 8086,
	[RG_PROFILE_VICTORIAMETRICS] = 8428,
	[RG_PROFILE_PROMETHEUS] = 9090,
	[RG_PROFILE_LOKI] = 3100,
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
		"      --grpc N            on guarded port N follow gRPC over h2c (the HTTP/2\n"
		"                          preface): GreptimeDatabase inserts are charged in\n"
		"                          the kernel, a refused one never reaches the server,\n"
		"                          other gRPC services pass (docs/grpc.md);\n"
		"                          repeatable; default: on for greptimedb ports\n"
		"      --no-grpc N         on guarded port N answer the HTTP/2 preface 400\n"
		"                          and close, as any request rowgate cannot read;\n"
		"                          repeatable; default: so on every port whose\n"
		"                          profile is not greptimedb (their servers do not\n"
		"                          serve gRPC)\n"
		"      --grpc-reject keep|close\n"
		"                          how a refused gRPC message is answered: keep its\n"
		"                          connection (the stream is reset, the client gets\n"
		"                          RESOURCE_EXHAUSTED; a refusal that cannot be kept\n"
		"                          closes, counted; needs --egress on), or close it\n"
		"                          with GOAWAY; docs/grpc.md section 7; default: keep\n"
		"      --grpc-close-grace MS|off\n"
		"                          after the kernel closes an HTTP/2 connection with\n"
		"                          GOAWAY (nothing more reaches its server), reset it\n"
		"                          MS milliseconds later, so calls still open on it\n"
		"                          fail UNAVAILABLE instead of waiting for their\n"
		"                          deadline; off leaves it to the client;\n"
		"                          docs/grpc.md#h2-close; default: 2000\n"
		"      --grpc-max-streams N|off\n"
		"                          with --grpc-reject keep, tell gRPC clients they\n"
		"                          may open at most N concurrent streams per\n"
		"                          connection (the server's first SETTINGS is\n"
		"                          lowered on its way out; a lower server value\n"
		"                          stays): more refused streams in flight close\n"
		"                          connections (h2/tonic servers allow 20 reset\n"
		"                          streams not yet accepted); off sends the\n"
		"                          server's value; docs/grpc.md#h2-max-streams;\n"
		"                          default: 16\n"
		"      --grpc-uncounted refuse|pass\n"
		"                          gRPC methods that store rows rowgate cannot count\n"
		"                          in the kernel (OTel Arrow exports; Flight DoPut\n"
		"                          and OTLP/gRPC exports with --grpc-flight or\n"
		"                          --grpc-otlp refuse): refuse closes\n"
		"                          the connection with GOAWAY before the call\n"
		"                          reaches the server (counted h2_streams_uncounted);\n"
		"                          pass lets them through unlimited, as any gRPC\n"
		"                          service rowgate does not route; default: refuse\n"
		"      --grpc-otlp count|refuse\n"
		"                          OTLP/gRPC exports (metrics, logs, traces Export):\n"
		"                          count judges each message on the database its\n"
		"                          x-greptime-db-name header names, charges the\n"
		"                          estimate HTTP charges such a body and corrects it\n"
		"                          to the rows rowgated counts from a copy\n"
		"                          (docs/grpc.md#otlp); refuse treats them as\n"
		"                          --grpc-uncounted says; default: count\n"
		"      --grpc-flight count|refuse\n"
		"                          Arrow Flight DoPut (GreptimeDB bulk inserts): as\n"
		"                          --grpc-otlp, each FlightData judged on the\n"
		"                          database x-greptime-db-name names, charged an\n"
		"                          estimate, corrected to its record batch's rows\n"
		"                          from a copy (docs/grpc.md#flight); refuse treats\n"
		"                          DoPut as --grpc-uncounted says; default: count\n"
		"      --grpc-compressed refuse|debt\n"
		"                          GreptimeDatabase messages sent compressed\n"
		"                          (grpc-encoding gzip or zstd) name their database\n"
		"                          inside the compressed bytes, out of the kernel's\n"
		"                          reach: refuse closes the connection with GOAWAY\n"
		"                          (counted h2_failclosed); debt charges their\n"
		"                          rows, counted by rowgated from a copy, to the\n"
		"                          database they name, and refuses a connection's\n"
		"                          later compressed messages while a database it\n"
		"                          wrote is in debt (a new connection's first ones\n"
		"                          pass); docs/grpc.md#compressed; default: refuse\n"
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
		"  -m, --metrics ADDR      serve Prometheus /metrics on ADDR (default off):\n"
		"                          :PORT (every address), IP:PORT, [IPv6]:PORT or\n"
		"                          HOST:PORT; series in docs/metrics.md\n"
		"      --xdp-iface IFACE   enforce UDP line protocol in XDP on IFACE (native\n"
		"                          mode where the driver has it, else generic)\n"
		"  -u, --udp PORT=DB       UDP port whose datagrams write to DB; repeatable;\n"
		"                          needs --xdp-iface\n"
		"      --max-conns N       connections tracked at once (default %u); a change\n"
		"                          needs 'rowgatectl detach' first (it releases the\n"
		"                          guarded connections)\n"
		"      --conns-full POLICY what a connection gets when the table is full:\n"
		"                          fail-closed (default): none of its data reaches\n"
		"                          the server (dropped in the cgroup's ingress) and\n"
		"                          rowgated resets it within a second, counted\n"
		"                          (conns_refused, conns_refused_resets) and logged;\n"
		"                          fail-open: it passes unlimited, counted\n"
		"                          (conns_untracked) and logged\n"
		"      --egress on|off     follow the servers' responses (sk_msg) and refund\n"
		"                          writes they refuse unstored: 401, 403, 404, 413,\n"
		"                          431; on gRPC ports off also closes refused calls'\n"
		"                          connections and fails frames over 16 KB closed\n"
		"                          (default on)\n"
		"      --copy-memory BYTES cap on the memory rowgated holds for body copies\n"
		"                          waiting to be counted, K/M/G suffixes (default\n"
		"                          %lluM, at least %lluM); a copy beyond it is\n"
		"                          dropped and its request charged at the worst case\n"
		"                          (copies_over_memory); one copy holds at most %lluM\n"
		"      --copy-expiry SECONDS free a body copy that received nothing for this\n"
		"                          long, its connection open; its estimate stands\n"
		"                          (default %u; a copy whose connection closed is\n"
		"                          counted as far as it arrived at once)\n"
		"      --foreground        stay in the foreground (default: detach once ready)\n"
		"      --keep              accepted for compatibility: stopping never detaches\n"
		"      --cleanup           detach and remove everything under --bpffs (limits,\n"
		"                          debt and counters included), exit\n"
		"      --meta URL[,URL]    distributed mode: heartbeat to rowgate-meta, which\n"
		"                          sets the limits and this host's quotas (local\n"
		"                          limit set/unset are refused; default standalone)\n"
		"      --node-id ID        this frontend's id for --meta (default hostname)\n"
		"      --token-file PATH   bearer token for --meta (first line of the file)\n"
		"  -l, --log-level LEVEL   %s (default notice)\n"
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
		RG_DEFAULT_PORT, RG_BPFFS_DEFAULT_DIR, RG_ADMIN_DEFAULT_PATH, RG_STATE_DEFAULT_PATH,
		RG_MAX_CONNS, RG_COPY_MEMORY_DEFAULT_BYTES >> 20, RG_COPY_MEMORY_MIN_BYTES >> 20,
		RG_COPY_MAX_BYTES >> 20, RG_COPY_EXPIRY_DEFAULT_S, RG_LOG_LEVELS);
}

/* A whole decimal number from min to max: no sign, nothing after it.
 * 0 or -EINVAL. */
static int parse_whole(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || s[0] == '+' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_port(const char *s, __u32 *port)
{
	unsigned long v;

	if (parse_whole(s, 1, 65535, &v))
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

/* The index of port among the guarded ones, or -1 with an error naming
 * the option that referred to it. */
static int guarded_port(const struct config *cfg, const char *opt, __u32 port)
{
	for (int i = 0; i < cfg->nports; i++)
		if (cfg->ports[i] == port)
			return i;
	pr_err("%s %u: not a guarded port (add --port %u)", opt, port, port);
	return -1;
}

int rgd_parse_args(int argc, char **argv, struct config *cfg)
{
	enum {
		OPT_ROUTES_FILE = 300,
		OPT_XDP_IFACE,
		OPT_ALLOW_UNPARSED,
		OPT_GRPC,
		OPT_NO_GRPC,
		OPT_MAX_CONNS,
		OPT_CONNS_FULL,
		OPT_ADMIN_GROUP,
		OPT_SERVER_TIMEOUT,
		OPT_EGRESS,
		OPT_COPY_MEMORY,
		OPT_COPY_EXPIRY,
		OPT_GRPC_REJECT,
		OPT_GRPC_CLOSE_GRACE,
		OPT_GRPC_MAX_STREAMS,
		OPT_GRPC_UNCOUNTED,
		OPT_GRPC_OTLP,
		OPT_GRPC_FLIGHT,
		OPT_GRPC_COMPRESSED
	};
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
		{ "grpc", required_argument, NULL, OPT_GRPC },
		{ "no-grpc", required_argument, NULL, OPT_NO_GRPC },
		{ "grpc-reject", required_argument, NULL, OPT_GRPC_REJECT },
		{ "grpc-close-grace", required_argument, NULL, OPT_GRPC_CLOSE_GRACE },
		{ "grpc-max-streams", required_argument, NULL, OPT_GRPC_MAX_STREAMS },
		{ "grpc-uncounted", required_argument, NULL, OPT_GRPC_UNCOUNTED },
		{ "grpc-otlp", required_argument, NULL, OPT_GRPC_OTLP },
		{ "grpc-flight", required_argument, NULL, OPT_GRPC_FLIGHT },
		{ "grpc-compressed", required_argument, NULL, OPT_GRPC_COMPRESSED },
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

	cfg->bpffs = RG_BPFFS_DEFAULT_DIR;
	cfg->admin_socket = RG_ADMIN_DEFAULT_PATH;
	cfg->admin_group = RG_ADMIN_ROOT_ONLY;
	cfg->state_file = RG_STATE_DEFAULT_PATH;
	cfg->grpc_keep = true;
	cfg->grpc_otlp_count = true;
	cfg->grpc_flight_count = true;
	/* whoever holds --max-conns idle connections must not unlimit the rest */
	cfg->conns_full_close = true;
	cfg->grpc_close_grace_ms = RG_GRPC_CLOSE_GRACE_MS;
	cfg->grpc_max_streams = RG_GRPC_MAX_STREAMS;
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
				       "influxdb, victoriametrics, prometheus or loki",
				       optarg);
				return -EINVAL;
			default:
				pr_err("--port '%s': expected PORT[=PROFILE], PORT a TCP port "
				       "number 1-65535",
				       optarg);
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
		case OPT_GRPC:
			if (cfg->ngrpc == RG_MAX_PORTS ||
			    parse_port(optarg, &cfg->grpc[cfg->ngrpc])) {
				pr_err("--grpc '%s': expected a guarded TCP port number", optarg);
				return -EINVAL;
			}
			cfg->ngrpc++;
			break;
		case OPT_NO_GRPC:
			if (cfg->nno_grpc == RG_MAX_PORTS ||
			    parse_port(optarg, &cfg->no_grpc[cfg->nno_grpc])) {
				pr_err("--no-grpc '%s': expected a guarded TCP port number", optarg);
				return -EINVAL;
			}
			cfg->nno_grpc++;
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
			    rgd_parse_route(optarg, &cfg->routes[cfg->nroutes])) {
				pr_err("--route '%s': expected /PATH=PROTO, PROTO one that "
				       "rowgated --help lists (path shorter than %d bytes)",
				       optarg, RG_PATH_MAX);
				return -EINVAL;
			}
			cfg->nroutes++;
			break;
		case 'm': {
			struct rg_listen_addr la;
			char e[300];

			/* refused before anything is attached; rg_metrics_start
			 * resolves it again when it listens */
			if (rg_listen_addr_parse(optarg, &la, e, sizeof(e))) {
				pr_err("--metrics '%s': %s (e.g. :9464, 127.0.0.1:9464, "
				       "[::1]:9464, localhost:9464)",
				       optarg, e);
				return -EINVAL;
			}
			cfg->metrics_addr = optarg;
			break;
		}
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
			if (rgd_load_routes_file(optarg, cfg))
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
			unsigned long v;

			if (parse_whole(optarg, 1, RG_MAX_CONNS_LIMIT, &v)) {
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
				pr_err("--conns-full '%s': expected fail-open or fail-closed",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_REJECT:
			if (!strcmp(optarg, "close")) {
				cfg->grpc_keep = false;
			} else if (!strcmp(optarg, "keep")) {
				cfg->grpc_keep = true;
			} else {
				pr_err("--grpc-reject '%s': expected keep or close", optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_UNCOUNTED:
			if (!strcmp(optarg, "refuse")) {
				cfg->grpc_uncounted_pass = false;
			} else if (!strcmp(optarg, "pass")) {
				cfg->grpc_uncounted_pass = true;
			} else {
				pr_err("--grpc-uncounted '%s': expected refuse or pass", optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_OTLP:
			if (!strcmp(optarg, "refuse")) {
				cfg->grpc_otlp_count = false;
			} else if (!strcmp(optarg, "count")) {
				cfg->grpc_otlp_count = true;
			} else {
				pr_err("--grpc-otlp '%s': expected refuse or count", optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_FLIGHT:
			if (!strcmp(optarg, "refuse")) {
				cfg->grpc_flight_count = false;
			} else if (!strcmp(optarg, "count")) {
				cfg->grpc_flight_count = true;
			} else {
				pr_err("--grpc-flight '%s': expected refuse or count", optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_COMPRESSED:
			if (!strcmp(optarg, "refuse")) {
				cfg->grpc_compressed_debt = false;
			} else if (!strcmp(optarg, "debt")) {
				cfg->grpc_compressed_debt = true;
			} else {
				pr_err("--grpc-compressed '%s': expected refuse or debt", optarg);
				return -EINVAL;
			}
			break;
		case OPT_GRPC_MAX_STREAMS: {
			unsigned long v;

			if (!strcmp(optarg, "off")) {
				cfg->grpc_max_streams = 0;
			} else if (parse_whole(optarg, 1, 1U << 31, &v)) {
				pr_err("--grpc-max-streams '%s': expected off or a whole number of "
				       "streams from 1 to %u",
				       optarg, 1U << 31);
				return -EINVAL;
			} else {
				cfg->grpc_max_streams = (__u32)v;
			}
			break;
		}
		case OPT_GRPC_CLOSE_GRACE: {
			unsigned long v;

			if (!strcmp(optarg, "off")) {
				cfg->grpc_close_grace_ms = 0;
			} else if (parse_whole(optarg, 1, RG_GRPC_CLOSE_GRACE_MAX_MS, &v)) {
				pr_err("--grpc-close-grace '%s': expected off or whole milliseconds "
				       "from 1 to %u",
				       optarg, RG_GRPC_CLOSE_GRACE_MAX_MS);
				return -EINVAL;
			} else {
				cfg->grpc_close_grace_ms = (__u32)v;
			}
			break;
		}
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
			unsigned long v;

			if (parse_whole(optarg, 1, RG_COPY_EXPIRY_MAX_S, &v)) {
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
		i = guarded_port(cfg, "--allow-unparsed", cfg->allow_unparsed[k]);
		if (i < 0)
			return -EINVAL;
		cfg->port_cfg[i].flags |= RG_PORT_ALLOW_UNPARSED;
	}
	for (int k = 0; k < cfg->ngrpc; k++) {
		i = guarded_port(cfg, "--grpc", cfg->grpc[k]);
		if (i < 0)
			return -EINVAL;
		cfg->port_cfg[i].flags |= RG_PORT_GRPC;
	}
	/* GreptimeDB serves GreptimeDatabase over h2c; the Go servers of the
	 * other profiles answer the preface with an error themselves */
	for (i = 0; i < cfg->nports; i++)
		if (cfg->port_cfg[i].profile == RG_PROFILE_GREPTIMEDB)
			cfg->port_cfg[i].flags |= RG_PORT_GRPC;
	for (int k = 0; k < cfg->nno_grpc; k++) {
		i = guarded_port(cfg, "--no-grpc", cfg->no_grpc[k]);
		if (i < 0)
			return -EINVAL;
		for (int j = 0; j < cfg->ngrpc; j++) {
			if (cfg->grpc[j] == cfg->no_grpc[k]) {
				pr_err("--grpc %u and --no-grpc %u: choose one", cfg->grpc[j],
				       cfg->no_grpc[k]);
				return -EINVAL;
			}
		}
		cfg->port_cfg[i].flags &= ~RG_PORT_GRPC;
	}
	for (i = 0; i < cfg->nports; i++) {
		cfg->port_cfg[i].header_timeout_s =
			rg_profile_header_timeout_s(cfg->port_cfg[i].profile);
		cfg->port_cfg[i].idle_timeout_s =
			rg_profile_idle_timeout_s(cfg->port_cfg[i].profile);
	}
	for (int k = 0; k < cfg->nserver_timeouts; k++) {
		const struct server_timeout_opt *o = &cfg->server_timeouts[k];

		i = guarded_port(cfg, "--server-timeout", o->port);
		if (i < 0)
			return -EINVAL;
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
