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
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "rowgate.skel.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "admin.h"
#include "limits.h"
#include "log.h"
#include "metrics.h"
#include "reconcile.h"
#include "xdp.h"
#include "meta_agent.h"
#include "state.h"

#define RG_VERSION          "0.1.0"
#define RG_DEFAULT_PORT     4000
#define RG_DEFAULT_BPFFS    "/sys/fs/bpf/rowgate"
#define RG_BPFFS_MAGIC      0xcafe4a11
#define RG_POLL_INTERVAL_MS 1000

/* Pins under the bpffs directory besides the maps (named as in abi.h). */
#define RG_PIN_LINK_SOCKOPS "link_sockops"
#define RG_PIN_LINK_PEER4   "link_getpeername4"
#define RG_PIN_LINK_PEER6   "link_getpeername6"
#define RG_PIN_PROG_VERDICT "prog_verdict"

struct route_opt {
	char path[RG_PATH_MAX];
	struct rg_route route;
};

struct config {
	__u32 ports[RG_MAX_PORTS];
	int nports;
	const char *cgroup;
	char cgroup_buf[PATH_MAX];
	const char *bpffs;
	const char *admin_socket;
	gid_t admin_group; /* RG_ADMIN_ROOT_ONLY: no --admin-group */
	const char *state_file;
	bool foreground;
	bool keep;
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
};

/* Maps whose contents outlive a clean stop: limits, debt, counters. */
static const char *const state_maps[] = {
	RG_STR(RG_MAP_LIMITS), RG_STR(RG_MAP_BUCKETS), RG_STR(RG_MAP_DB_STATS),
	RG_STR(RG_MAP_GLOBAL),
};

/* The write routes of GreptimeDB, InfluxDB 1.x/2.x, Prometheus-compatible
 * receivers, VictoriaMetrics and Loki; /v1/sql and the rest pass. */
static const struct route_opt default_routes[] = {
	{ "/v1/influxdb/write", { RG_PROTO_LINE, 0 } },
	{ "/v1/influxdb/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM } },
	{ "/v1/prometheus/write", { RG_PROTO_PROM_RW, 0 } },
	{ "/v1/otlp/v1/metrics", { RG_PROTO_OTLP_METRICS, 0 } },
	{ "/v1/otlp/v1/logs", { RG_PROTO_OTLP_LOGS, 0 } },
	{ "/v1/otlp/v1/traces", { RG_PROTO_OTLP_TRACES, 0 } },
	{ "/v1/loki/api/v1/push", { RG_PROTO_LOKI, 0 } },
	{ "/v1/elasticsearch/_bulk", { RG_PROTO_ES_BULK, 0 } },
	{ RG_ROUTE_BULK_WILDCARD, { RG_PROTO_ES_BULK, 0 } }, /* /v1/elasticsearch/{index}/_bulk */
	{ "/v1/ingest", { RG_PROTO_NDJSON, 0 } },
	{ "/v1/events/logs", { RG_PROTO_NDJSON, 0 } },
	{ "/v1/opentsdb/api/put", { RG_PROTO_OPENTSDB, 0 } },
	{ "/write", { RG_PROTO_LINE, 0 } },
	{ "/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM } },
	{ "/api/v1/write", { RG_PROTO_PROM_RW, 0 } },
	{ "/api/v1/push", { RG_PROTO_PROM_RW, 0 } },
	{ "/influx/write", { RG_PROTO_LINE, 0 } },
	{ "/influx/api/v2/write", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM } },
	{ "/loki/api/v1/push", { RG_PROTO_LOKI, RG_ROUTE_TENANT } },
};

/* Route protocol names, as --route and the routes file spell them. */
static const struct {
	const char *name;
	struct rg_route route;
} route_names[] = {
	{ "influx", { RG_PROTO_LINE, 0 } },
	{ "influx-v2", { RG_PROTO_LINE, RG_ROUTE_BUCKET_PARAM } },
	{ "prom-rw", { RG_PROTO_PROM_RW, 0 } },
	{ "otlp-metrics", { RG_PROTO_OTLP_METRICS, 0 } },
	{ "otlp-logs", { RG_PROTO_OTLP_LOGS, 0 } },
	{ "otlp-traces", { RG_PROTO_OTLP_TRACES, 0 } },
	{ "loki", { RG_PROTO_LOKI, 0 } },
	{ "loki-tenant", { RG_PROTO_LOKI, RG_ROUTE_TENANT } },
	{ "es-bulk", { RG_PROTO_ES_BULK, 0 } },
	{ "ndjson", { RG_PROTO_NDJSON, 0 } },
	{ "opentsdb", { RG_PROTO_OPENTSDB, 0 } },
	{ "none", { RG_PROTO_NONE, 0 } },
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
		"  -p, --port N            ingest TCP port to guard, repeatable (default %d)\n"
		"  -c, --cgroup PATH       cgroup v2 directory holding the ingest servers\n"
		"                          (default: the cgroup2 root)\n"
		"  -b, --bpffs DIR         pin directory on a bpf filesystem (default %s)\n"
		"  -s, --admin-socket PATH admin unix socket (default %s)\n"
		"      --admin-group NAME  group allowed to use the admin socket besides root\n"
		"                          (default: none, root only; mode 0660 instead of 0600)\n"
		"  -f, --state-file PATH   limits that survive restarts (default %s)\n"
		"  -r, --route PATH=PROTO  route a request path (exact, no query) to a\n"
		"                          protocol: influx (line protocol, db from db=),\n"
		"                          influx-v2 (also bucket=), prom-rw, otlp-metrics,\n"
		"                          otlp-logs, otlp-traces, loki, loki-tenant (db from\n"
		"                          X-Scope-OrgID), es-bulk, ndjson, opentsdb, or none\n"
		"                          (pass untouched); repeatable; on top of defaults\n"
		"                          for GreptimeDB, InfluxDB, Prometheus receivers,\n"
		"                          VictoriaMetrics and Loki\n"
		"      --routes-file PATH  one 'PATH PROTO' per line ('#' comments), as --route\n"
		"  -m, --metrics IP:PORT   serve Prometheus /metrics there (default off)\n"
		"      --xdp-iface IFACE   enforce UDP line protocol in XDP on IFACE (native\n"
		"                          mode where the driver has it, else generic)\n"
		"  -u, --udp PORT=DB       UDP port whose datagrams write to DB; repeatable;\n"
		"                          needs --xdp-iface\n"
		"      --foreground        stay in the foreground (default: detach once ready)\n"
		"      --keep              on exit leave enforcement pinned and running\n"
		"      --cleanup           detach and remove everything under --bpffs, exit\n"
		"      --meta URL[,URL]    distributed mode: heartbeat to rowgate-meta, which\n"
		"                          sets the limits and this host's quotas (local\n"
		"                          limit set/unset are refused; default standalone)\n"
		"      --node-id ID        this frontend's id for --meta (default hostname)\n"
		"      --token-file PATH   bearer token for --meta (first line of the file)\n"
		"  -l, --log-level LEVEL   %s (default warn)\n"
		"  -h, --help              this help\n"
		"  -V, --version           version and libbpf version\n"
		"\n"
		"Signals: SIGTERM/SIGINT detach the programs (open connections go on,\n"
		"unenforced) and keep limits, debt and counters pinned for the next start;\n"
		"with --keep nothing is detached.  A restarted rowgated adopts the pins.\n"
		"\n"
		"Examples:\n"
		"  rowgated --port 4000 --cgroup /sys/fs/cgroup/greptimedb.service\n"
		"  rowgated --foreground --port 8428 --log-level info\n"
		"  rowgatectl limit set logs 10000\n",
		RG_DEFAULT_PORT, RG_DEFAULT_BPFFS, RG_ADMIN_DEFAULT_PATH, RG_STATE_DEFAULT_PATH,
		RG_LOG_LEVELS);
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
	enum { OPT_ROUTES_FILE = 300, OPT_XDP_IFACE, OPT_ADMIN_GROUP };
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
		{ "xdp-iface", required_argument, NULL, OPT_XDP_IFACE },
		{ "udp", required_argument, NULL, 'u' },
		{ "foreground", no_argument, NULL, OPT_FOREGROUND },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "cleanup", no_argument, NULL, OPT_CLEANUP },
		{ "meta", required_argument, NULL, OPT_META },
		{ "node-id", required_argument, NULL, OPT_NODE_ID },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "log-level", required_argument, NULL, 'l' },
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
			if (parse_port(optarg, &cfg->ports[cfg->nports])) {
				pr_err("--port '%s': expected a TCP port number 1-65535", optarg);
				return -EINVAL;
			}
			for (i = 0; i < cfg->nports; i++)
				if (cfg->ports[i] == cfg->ports[cfg->nports])
					break;
			if (i == cfg->nports)
				cfg->nports++;
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
				pr_err("--route '%s': expected /PATH=influx|influx-v2|none "
				       "(path shorter than %d bytes)",
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
			cfg->keep = true;
			break;
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
	if (cfg->nports == 0)
		cfg->ports[cfg->nports++] = RG_DEFAULT_PORT;
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

static void pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == RG_BPFFS_MAGIC;
}

/* Create the pin directory on a bpf filesystem, mounting /sys/fs/bpf as
 * systemd would when nothing is mounted there. */
static int prepare_bpffs(const char *dir)
{
	char parent[PATH_MAX], *slash;
	struct stat st;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (!is_bpffs(parent) && !strcmp(parent, "/sys/fs/bpf")) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
			pr_err("cannot mount a bpf filesystem on /sys/fs/bpf: %s", strerror(errno));
			return -errno;
		}
		pr_info("mounted a bpf filesystem on /sys/fs/bpf");
	}
	if (!is_bpffs(parent)) {
		pr_err("%s is not on a bpf filesystem; mount one with: mount -t bpf bpf %s",
		       dir, parent);
		return -EINVAL;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	/* whoever may add or replace a pin decides what the kernel enforces */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		pr_err("%s belongs to uid %u, not to rowgated's: its pins are not trusted", dir,
		       (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & 022) && chmod(dir, st.st_mode & 07755)) {
		pr_err("cannot make %s writable by its owner only: %s", dir, strerror(errno));
		return -errno;
	}
	if (st.st_mode & 022)
		pr_warn("%s was writable by group or others: now mode %o", dir, st.st_mode & 07755);
	return 0;
}

/* One loader at a time per pin directory. */
static int lock_bpffs(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		pr_err("cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pr_err("another rowgated is using %s (its lock is held)", dir);
		close(fd);
		return -EBUSY;
	}
	return fd;
}

static int set_pin_paths(struct rowgate *skel, const char *dir)
{
	struct bpf_map *map;
	char path[PATH_MAX];

	bpf_object__for_each_map(map, skel->obj) {
		const char *name = bpf_map__name(map);

		if (bpf_map__is_internal(map) || !strcmp(name, "conn_zero"))
			continue; /* .rodata and templates belong to one load */
		pin_path(path, sizeof(path), dir, name);
		if (bpf_map__set_pin_path(map, path))
			return -ENOMEM;
	}
	return 0;
}

/* Attach prog to the cgroup through a pinned link, or adopt the link a
 * previous rowgated pinned and swap its program atomically. */
static int attach_cgroup_link(struct bpf_program *prog, int cgroup_fd, const char *dir,
			      const char *pin_name)
{
	char path[PATH_MAX];
	struct bpf_link *link;
	int err;

	pin_path(path, sizeof(path), dir, pin_name);
	link = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (link) {
		err = bpf_link__update_program(link, prog);
		if (!err) {
			pr_info("adopted %s", path);
			bpf_link__disconnect(link);
			bpf_link__destroy(link);
			return 0;
		}
		pr_warn("cannot update pinned link %s (%s): replacing it", path, strerror(-err));
		bpf_link__unpin(link);
		bpf_link__destroy(link);
	}
	link = bpf_program__attach_cgroup(prog, cgroup_fd);
	err = libbpf_get_error(link);
	if (err) {
		pr_err("cannot attach %s to the cgroup: %s", bpf_program__name(prog),
		       strerror(-err));
		return err;
	}
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

static int attach_all(struct daemon *d)
{
	struct rowgate *skel = d->skel;
	char path[PATH_MAX];
	int cgroup_fd, err;

	cgroup_fd = open(d->cfg->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0) {
		pr_err("cannot open cgroup %s: %s", d->cfg->cgroup, strerror(errno));
		return -errno;
	}
	/* verdict first, so no socket enters the sockhash unguarded;
	 * attaching again replaces a previous rowgated's program */
	err = bpf_prog_attach(bpf_program__fd(skel->progs.rg_verdict),
			      bpf_map__fd(skel->maps.RG_MAP_SOCKHASH), BPF_SK_SKB_VERDICT, 0);
	if (err) {
		pr_err("cannot attach the verdict program to the sockhash: %s", strerror(errno));
		goto out;
	}
	pin_path(path, sizeof(path), d->cfg->bpffs, RG_PIN_PROG_VERDICT);
	unlink(path);
	bpf_program__pin(skel->progs.rg_verdict, path);
	err = attach_cgroup_link(skel->progs.rg_getpeername4, cgroup_fd, d->cfg->bpffs,
				 RG_PIN_LINK_PEER4);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_getpeername6, cgroup_fd, d->cfg->bpffs,
					 RG_PIN_LINK_PEER6);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_sockops, cgroup_fd, d->cfg->bpffs,
					 RG_PIN_LINK_SOCKOPS);
out:
	close(cgroup_fd);
	return err;
}

static void map_clear(int fd, size_t key_size)
{
	char key[256], next[256];
	bool first = true;

	if (key_size > sizeof(key))
		return;
	while (bpf_map_get_next_key(fd, first ? NULL : key, next) == 0) {
		memcpy(key, next, key_size);
		first = false;
		bpf_map_delete_elem(fd, key);
		first = true; /* restart: the key we held is gone */
	}
}

static int populate_ports_routes(struct daemon *d)
{
	int ports_fd = bpf_map__fd(d->skel->maps.RG_MAP_PORTS);
	int routes_fd = bpf_map__fd(d->skel->maps.RG_MAP_ROUTES);
	__u32 one = 1;
	size_t i;
	int j;

	map_clear(ports_fd, sizeof(__u32));
	for (j = 0; j < d->cfg->nports; j++)
		if (bpf_map_update_elem(ports_fd, &d->cfg->ports[j], &one, BPF_ANY))
			return -errno;
	map_clear(routes_fd, sizeof(struct rg_route_key));
	for (i = 0; i < sizeof(default_routes) / sizeof(default_routes[0]); i++) {
		struct rg_route_key key = {};

		memcpy(key.path, default_routes[i].path, strlen(default_routes[i].path));
		if (bpf_map_update_elem(routes_fd, &key, &default_routes[i].route, BPF_ANY))
			return -errno;
	}
	for (j = 0; j < d->cfg->nroutes; j++) {
		struct rg_route_key key = {};

		memcpy(key.path, d->cfg->routes[j].path, sizeof(key.path));
		if (d->cfg->routes[j].route.protocol == RG_PROTO_NONE)
			bpf_map_delete_elem(routes_fd, &key);
		else if (bpf_map_update_elem(routes_fd, &key, &d->cfg->routes[j].route, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Put one limit into the maps.  A new database gets a full bucket and zeroed
 * counters; an existing bucket is kept, debt included (DESIGN §1). */
static int apply_limit(struct daemon *d, const struct rg_db_key *db, __u64 limit)
{
	struct rg_limit lim = { .limit_rows_per_s = limit };
	struct rg_bucket_value bv = {};
	struct rg_db_stats st = {};

	if (limit) {
		rg_bucket_init(&bv.b, limit, rg_monotonic_ns());
		if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_BUCKETS), db, &bv,
					BPF_NOEXIST) &&
		    errno != EEXIST)
			return -errno;
	}
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS), db, &st,
				BPF_NOEXIST) &&
	    errno != EEXIST)
		return -errno;
	for (__u32 p = RG_PROTO_LINE; p < RG_PROTO_MAX; p++) {
		struct rg_proto_key pk = { .db = *db, .protocol = p };
		struct rg_proto_stats ps = {};

		if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS), &pk, &ps,
					BPF_NOEXIST) &&
		    errno != EEXIST)
			return -errno;
	}
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_LIMITS), db, &lim, BPF_ANY))
		return -errno;
	return 0;
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

/* The meta agent's callback: a new database gets its bucket and counters as
 * for a local limit (apply_limit), then the limit and quota are written. */
static int meta_apply(void *ctx, const struct rg_db_key *db, __u64 limit, __u64 quota)
{
	struct daemon *d = ctx;
	struct rg_limit lim = { .limit_rows_per_s = limit, .quota_rows_per_s = quota };
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS), err;

	if (bpf_map_update_elem(fd, db, &lim, BPF_EXIST)) {
		err = apply_limit(d, db, limit);
		if (err)
			return err;
	}
	return bpf_map_update_elem(fd, db, &lim, BPF_ANY) ? -errno : 0;
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
	bpf_map_delete_elem(bpf_map__fd(d->skel->maps.RG_MAP_LIMITS), db);
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

static int json_set_u64(json_t *obj, const char *key, __u64 v)
{
	return json_object_set_new(obj, key, rg_json_u64(v));
}

static const char *const protocol_names[RG_PROTO_MAX] = {
	[RG_PROTO_LINE] = "influx",	     [RG_PROTO_PROM_RW] = "prom-rw",
	[RG_PROTO_OTLP_METRICS] = "otlp-metrics", [RG_PROTO_OTLP_LOGS] = "otlp-logs",
	[RG_PROTO_OTLP_TRACES] = "otlp-traces", [RG_PROTO_LOKI] = "loki",
	[RG_PROTO_ES_BULK] = "es-bulk",	     [RG_PROTO_NDJSON] = "ndjson",
	[RG_PROTO_OPENTSDB] = "opentsdb",
};

/* Counters per protocol that saw traffic: estimated vs reconciled rows. */
static json_t *proto_stats_json(struct daemon *d, const struct rg_db_key *db)
{
	json_t *all = json_object();

	for (__u32 p = RG_PROTO_LINE; all && p < RG_PROTO_MAX; p++) {
		struct rg_proto_key k = { .db = *db, .protocol = p };
		struct rg_proto_stats ps;
		json_t *o;

		/* per-series databases get rows without requests of their own */
		if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS), &k, &ps) ||
		    (!ps.admitted_requests && !ps.rejected_requests && !ps.admitted_rows &&
		     !ps.rejected_rows && !ps.reconciled_rows))
			continue;
		o = json_object();
		json_set_u64(o, "admitted_requests", ps.admitted_requests);
		json_set_u64(o, "admitted_rows", ps.admitted_rows);
		json_set_u64(o, "rejected_requests", ps.rejected_requests);
		json_set_u64(o, "rejected_rows", ps.rejected_rows);
		json_set_u64(o, "estimated_rows", ps.estimated_rows);
		json_set_u64(o, "reconciled_requests", ps.reconciled_requests);
		json_set_u64(o, "reconciled_rows", ps.reconciled_rows);
		json_set_u64(o, "unreconciled_requests", ps.unreconciled_requests);
		json_set_u64(o, "unreconciled_bytes", ps.unreconciled_bytes);
		json_set_u64(o, "undecodable_requests", ps.undecodable_requests);
		json_set_u64(o, "body_bytes", ps.body_bytes);
		json_set_u64(o, "lag_avg_us",
			     ps.reconciled_requests ? ps.lag_ns_total / ps.reconciled_requests / 1000 : 0);
		json_object_set_new(all, protocol_names[p], o);
	}
	return all;
}

static json_t *db_stats_json(struct daemon *d, const struct rg_db_key *db,
			     const struct rg_db_stats *st)
{
	json_t *o = json_object();
	struct rg_bucket_value bv;
	struct rg_limit lim;
	bool has_limit;

	if (!o)
		return NULL;
	has_limit = bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_LIMITS), db, &lim) == 0;
	json_object_set_new(o, "db", json_string(db->name));
	json_set_u64(o, "limit", has_limit ? lim.limit_rows_per_s : 0);
	json_set_u64(o, "quota", has_limit && lim.limit_rows_per_s ? rg_effective_quota(&lim) : 0);
	json_set_u64(o, "admitted_requests", st->admitted_requests);
	json_set_u64(o, "admitted_rows", st->admitted_rows);
	json_set_u64(o, "rejected_requests", st->rejected_requests);
	json_set_u64(o, "rejected_rows", st->rejected_rows);
	json_set_u64(o, "unenforced_requests", st->unenforced_requests);
	json_set_u64(o, "unenforced_rows", st->unenforced_rows);
	if (bpf_map_lookup_elem_flags(bpf_map__fd(d->skel->maps.RG_MAP_BUCKETS), db, &bv,
				      BPF_F_LOCK) == 0) {
		/* the level now, as the kernel would see it */
		rg_bucket_refill(&bv.b, rg_monotonic_ns());
		json_set_u64(o, "tokens", bv.b.tokens);
		json_set_u64(o, "debt_rows", bv.b.debt_rows);
	}
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
	struct rg_db_key key, next;
	struct rg_db_stats st;
	bool first = true;
	__u32 zero = 0;

	if (!arr || !g)
		goto nomem;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (db && strcmp(db->name, key.name))
			continue;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue;
		if (json_array_append_new(arr, db_stats_json(d, &key, &st)))
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
	json_set_u64(g, "conns_tracked", gs.conns_tracked);
	json_set_u64(g, "conns_untracked", gs.conns_untracked);
	json_set_u64(g, "non_http_conns", gs.non_http_conns);
	json_set_u64(g, "bad_requests", gs.bad_requests);
	json_set_u64(g, "heads_split", gs.heads_split);
	json_set_u64(g, "pipelined_unenforced", gs.pipelined_unenforced);
	json_set_u64(g, "recvmsg_failopen", gs.recvmsg_failopen);
	json_set_u64(g, "responses_close", gs.responses_close);
	json_set_u64(g, "internal_errors", gs.internal_errors);
	json_set_u64(g, "body_ring_full", gs.body_ring_full);
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

static const struct rg_admin_ops admin_ops = {
	.limit_set = op_limit_set,
	.limit_unset = op_limit_unset,
	.limit_show = op_limit_show,
	.stats = op_stats,
};

/* ---- lifecycle ---- */

static void unpin(const char *dir, const char *name)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), dir, name);
	if (unlink(path) && errno != ENOENT)
		pr_warn("cannot remove %s: %s", path, strerror(errno));
}

/* Stop enforcing: detach everything, release guarded sockets so open
 * connections go on untouched, keep the state maps unless purging. */
static void detach_all(const char *dir, bool purge)
{
	char path[PATH_MAX];
	int sockhash_fd, prog_fd;
	size_t i;

	unpin(dir, RG_PIN_LINK_SOCKOPS); /* no new connections are guarded */
	unpin(dir, RG_PIN_LINK_PEER4);
	unpin(dir, RG_PIN_LINK_PEER6);
	pin_path(path, sizeof(path), dir, RG_STR(RG_MAP_SOCKHASH));
	sockhash_fd = bpf_obj_get(path);
	pin_path(path, sizeof(path), dir, RG_PIN_PROG_VERDICT);
	prog_fd = bpf_obj_get(path);
	if (sockhash_fd >= 0) {
		if (prog_fd >= 0)
			bpf_prog_detach2(prog_fd, sockhash_fd, BPF_SK_SKB_VERDICT);
		map_clear(sockhash_fd, sizeof(__u64));
		close(sockhash_fd);
	}
	if (prog_fd >= 0)
		close(prog_fd);
	unpin(dir, RG_PIN_PROG_VERDICT);
	unpin(dir, RG_STR(RG_MAP_SOCKHASH));
	unpin(dir, RG_STR(RG_MAP_CONNS));
	unpin(dir, RG_STR(RG_MAP_PORTS));
	unpin(dir, RG_STR(RG_MAP_ROUTES));
	if (purge) {
		rg_xdp_cleanup(dir, true);
		for (i = 0; i < sizeof(state_maps) / sizeof(state_maps[0]); i++)
			unpin(dir, state_maps[i]);
		if (rmdir(dir) && errno != ENOENT)
			pr_warn("cannot remove %s: %s", dir, strerror(errno));
	}
}

static int load(struct daemon *d)
{
	int err;

	d->skel = rowgate__open();
	if (!d->skel) {
		pr_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	err = set_pin_paths(d->skel, d->cfg->bpffs);
	if (!err)
		err = rowgate__load(d->skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s%s", strerror(-err),
		       err == -EINVAL ? " (pinned maps from an incompatible rowgated? "
					"run 'rowgated --cleanup' with the same --bpffs)" :
					" (run with --log-level debug for the verifier log)");
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

static int serve(struct daemon *d, int notify_fd)
{
	struct pollfd pfd[3];
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
	for (;;) {
		struct signalfd_siginfo si;

		if (poll(pfd, 3, RG_POLL_INTERVAL_MS) < 0 && errno != EINTR)
			break;
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
	struct daemon d = { .cfg = &cfg, .lock_fd = -1, .admin_fd = -1 };
	char err[256] = "";
	int notify_fd = -1, ret = 1;

	rg_log_route_libbpf();
	if (parse_args(argc, argv, &cfg))
		return 2;
	if (geteuid() != 0)
		pr_warn("not running as root: loading BPF programs will likely fail");
	if (cfg.cleanup) {
		if (!is_bpffs(cfg.bpffs) && access(cfg.bpffs, F_OK))
			return 0;
		d.lock_fd = lock_bpffs(cfg.bpffs);
		if (d.lock_fd < 0)
			return 1;
		detach_all(cfg.bpffs, true);
		return 0;
	}
	rg_limit_list_init(&d.limits);
	if (rg_state_load(cfg.state_file, &d.limits, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (prepare_bpffs(cfg.bpffs))
		return 1;
	d.lock_fd = lock_bpffs(cfg.bpffs);
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
		};

		if (rg_reconciler_new(&rf, &d.rec))
			goto out;
	}
	if (attach_all(&d))
		goto detach;
	if (cfg.xdp_iface && rg_xdp_start(cfg.bpffs, cfg.xdp_iface, cfg.udp, cfg.nudp, &d.xdp))
		goto detach;
	if (cfg.metrics_addr) {
		struct rg_metrics_maps mm = {
			.limits_fd = bpf_map__fd(d.skel->maps.RG_MAP_LIMITS),
			.buckets_fd = bpf_map__fd(d.skel->maps.RG_MAP_BUCKETS),
			.db_stats_fd = bpf_map__fd(d.skel->maps.RG_MAP_DB_STATS),
			.global_fd = bpf_map__fd(d.skel->maps.RG_MAP_GLOBAL),
		};

		if (rg_metrics_start(cfg.metrics_addr, &mm, &d.metrics))
			goto detach;
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
			goto detach;
	}
	ret = serve(&d, notify_fd) ? 1 : 0;
	rg_meta_agent_stop(d.agent);
	d.agent = NULL;
detach:
	rg_xdp_stop(d.xdp, cfg.keep);
	if (!cfg.keep)
		detach_all(cfg.bpffs, false);
	else
		pr_info("--keep: enforcement stays pinned under %s", cfg.bpffs);
out:
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
