// SPDX-License-Identifier: MIT
/* rowgated's options: one table (name, config key, value, parser, help)
 * that makes the command line, --help and the keys of the config file.
 * The file is read first, the command line overrides it (an option given
 * there replaces every value the file gave it), and the result is checked
 * as a whole into struct config.  rgd_reload reads both again on SIGHUP
 * and applies what can change live. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "rowgate_version.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "../lib/prom.h"
#include "metrics.h"
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


/* ---- each option's value into cfg --------------------------------------- */

/* An option's parser: 0, or -EINVAL with what was expected in err. */
typedef int (*opt_apply_fn)(struct config *cfg, const char *v, char *err, size_t len);

#define EXPECT(...) (snprintf(err, len, __VA_ARGS__), -EINVAL)

/* v is a (*is_a true) or b; the message names them in the order help
 * does: first, then second. */
static int one_of(const char *v, const char *a, const char *b, bool *is_a, const char *first,
		  const char *second, char *err, size_t len)
{
	if (!strcmp(v, a))
		*is_a = true;
	else if (!strcmp(v, b))
		*is_a = false;
	else
		return EXPECT("expected %s or %s", first, second);
	return 0;
}

static int parse_bool(const char *v, bool *out, char *err, size_t len)
{
	static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(v, yes[i]) || !strcmp(v, no[i])) {
			*out = !strcmp(v, yes[i]);
			return 0;
		}
	}
	return EXPECT("expected true or false");
}

static int opt_port(struct config *cfg, const char *v, char *err, size_t len)
{
	int i;

	if (cfg->nports == RG_MAX_PORTS)
		return EXPECT("at most %d ports can be guarded", RG_MAX_PORTS);
	switch (parse_port_profile(v, &cfg->ports[cfg->nports], &cfg->port_cfg[cfg->nports])) {
	case 0:
		break;
	case -ENOENT:
		return EXPECT("unknown server profile; expected greptimedb, influxdb, "
			      "victoriametrics, prometheus or loki");
	default:
		return EXPECT("expected PORT[=PROFILE], PORT a TCP port number 1-65535");
	}
	for (i = 0; i < cfg->nports; i++)
		if (cfg->ports[i] == cfg->ports[cfg->nports])
			break;
	if (i < cfg->nports && cfg->port_cfg[i].profile != cfg->port_cfg[cfg->nports].profile)
		return EXPECT("port %u given with two server profiles", cfg->ports[i]);
	if (i == cfg->nports)
		cfg->nports++;
	return 0;
}

/* A guarded port number into list[*n] (checked against --port later). */
static int port_into(__u32 *list, int *n, const char *v, char *err, size_t len)
{
	if (*n == RG_MAX_PORTS || parse_port(v, &list[*n]))
		return EXPECT("expected a guarded TCP port number");
	(*n)++;
	return 0;
}

static int opt_allow_unparsed(struct config *cfg, const char *v, char *err, size_t len)
{
	return port_into(cfg->allow_unparsed, &cfg->nallow_unparsed, v, err, len);
}

static int opt_grpc(struct config *cfg, const char *v, char *err, size_t len)
{
	return port_into(cfg->grpc, &cfg->ngrpc, v, err, len);
}

static int opt_no_grpc(struct config *cfg, const char *v, char *err, size_t len)
{
	return port_into(cfg->no_grpc, &cfg->nno_grpc, v, err, len);
}

static int opt_server_timeout(struct config *cfg, const char *v, char *err, size_t len)
{
	if (cfg->nserver_timeouts == RG_MAX_PORTS ||
	    parse_server_timeout(v, &cfg->server_timeouts[cfg->nserver_timeouts]))
		return EXPECT("expected PORT=SECONDS[,IDLE], PORT a guarded TCP port, SECONDS "
			      "and IDLE whole seconds 0-%u (0: never)",
			      RG_TIMEOUT_MAX_S);
	cfg->nserver_timeouts++;
	return 0;
}

static int opt_cgroup(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->cgroup = v;
	return 0;
}

static int opt_bpffs(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->bpffs = v;
	return 0;
}

static int opt_admin_socket(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->admin_socket = v;
	return 0;
}

static int opt_admin_group(struct config *cfg, const char *v, char *err, size_t len)
{
	struct group *gr = getgrnam(v);

	if (!gr)
		return EXPECT("no such group");
	cfg->admin_group = gr->gr_gid;
	return 0;
}

static int opt_state_file(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->state_file = v;
	return 0;
}

static int opt_route(struct config *cfg, const char *v, char *err, size_t len)
{
	if (cfg->nroutes == RG_MAX_ROUTES || rgd_parse_route(v, &cfg->routes[cfg->nroutes]))
		return EXPECT("expected /PATH=PROTO, PROTO one that rowgated --help lists "
			      "(path shorter than %d bytes)",
			      RG_PATH_MAX);
	cfg->nroutes++;
	return 0;
}

static int opt_routes_file(struct config *cfg, const char *v, char *err, size_t len)
{
	/* the file's own errors are logged with their lines */
	return rgd_load_routes_file(v, cfg) ? EXPECT("cannot use this routes file") : 0;
}

static int opt_metrics(struct config *cfg, const char *v, char *err, size_t len)
{
	struct rg_listen_addr la;
	char why[300];

	/* refused before anything is attached; rg_metrics_listen resolves it
	 * again when it listens */
	if (rg_listen_addr_parse(v, &la, why, sizeof(why)))
		return EXPECT("%s (e.g. :9464, 127.0.0.1:9464, [::1]:9464, localhost:9464)", why);
	cfg->metrics_addr = v;
	return 0;
}

static int opt_xdp_iface(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->xdp_iface = v;
	return 0;
}

static int opt_udp(struct config *cfg, const char *v, char *err, size_t len)
{
	if (cfg->nudp == RG_MAX_UDP_PORTS)
		return EXPECT("at most %d UDP mappings", RG_MAX_UDP_PORTS);
	if (rg_parse_udp_mapping(v, &cfg->udp[cfg->nudp], err, len))
		return -EINVAL;
	cfg->nudp++;
	return 0;
}

static int opt_max_conns(struct config *cfg, const char *v, char *err, size_t len)
{
	unsigned long n;

	if (parse_whole(v, 1, RG_MAX_CONNS_LIMIT, &n))
		return EXPECT("expected a whole number from 1 to %u", RG_MAX_CONNS_LIMIT);
	cfg->max_conns = (__u32)n;
	return 0;
}

static int opt_conns_full(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "fail-closed", "fail-open", &cfg->conns_full_close, "fail-open",
		      "fail-closed", err, len);
}

static int opt_egress(struct config *cfg, const char *v, char *err, size_t len)
{
	bool on;

	if (one_of(v, "on", "off", &on, "on", "off", err, len))
		return -EINVAL;
	cfg->egress_off = !on;
	return 0;
}

static int opt_grpc_reject(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "keep", "close", &cfg->grpc_keep, "keep", "close", err, len);
}

static int opt_grpc_uncounted(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "pass", "refuse", &cfg->grpc_uncounted_pass, "refuse", "pass", err,
		      len);
}

static int opt_grpc_otlp(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "count", "refuse", &cfg->grpc_otlp_count, "refuse", "count", err, len);
}

static int opt_grpc_flight(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "count", "refuse", &cfg->grpc_flight_count, "refuse", "count", err,
		      len);
}

static int opt_grpc_compressed(struct config *cfg, const char *v, char *err, size_t len)
{
	return one_of(v, "debt", "refuse", &cfg->grpc_compressed_debt, "refuse", "debt", err,
		      len);
}

/* N|off, N from 1 to max, into *out (0: off). */
static int whole_or_off(const char *v, unsigned long max, __u32 *out, const char *what,
			char *err, size_t len)
{
	unsigned long n;

	if (!strcmp(v, "off")) {
		*out = 0;
		return 0;
	}
	if (parse_whole(v, 1, max, &n))
		return EXPECT("expected off or %s from 1 to %lu", what, max);
	*out = (__u32)n;
	return 0;
}

static int opt_grpc_max_streams(struct config *cfg, const char *v, char *err, size_t len)
{
	return whole_or_off(v, 1UL << 31, &cfg->grpc_max_streams, "a whole number of streams",
			    err, len);
}

static int opt_grpc_parked_streams(struct config *cfg, const char *v, char *err, size_t len)
{
	unsigned long n;

	if (parse_whole(v, 1, RG_PARKED_STREAMS_MAX, &n))
		return EXPECT("expected a whole number of streams from 1 to %u",
			      RG_PARKED_STREAMS_MAX);
	cfg->grpc_parked_streams = (__u32)n;
	return 0;
}

static int opt_grpc_close_grace(struct config *cfg, const char *v, char *err, size_t len)
{
	return whole_or_off(v, RG_GRPC_CLOSE_GRACE_MAX_MS, &cfg->grpc_close_grace_ms,
			    "whole milliseconds", err, len);
}

static int opt_adopt_grace(struct config *cfg, const char *v, char *err, size_t len)
{
	return whole_or_off(v, RG_ADOPT_GRACE_MAX_S, &cfg->adopt_grace_s, "whole seconds", err,
			    len);
}

static int opt_copy_memory(struct config *cfg, const char *v, char *err, size_t len)
{
	if (rg_parse_bytes(v, &cfg->copy_memory_bytes) ||
	    cfg->copy_memory_bytes < RG_COPY_MEMORY_MIN_BYTES)
		return EXPECT("expected bytes, at least %lluM, with an optional K, M or G "
			      "suffix (e.g. 256M)",
			      RG_COPY_MEMORY_MIN_BYTES >> 20);
	return 0;
}

static int opt_copy_expiry(struct config *cfg, const char *v, char *err, size_t len)
{
	unsigned long n;

	if (parse_whole(v, 1, RG_COPY_EXPIRY_MAX_S, &n))
		return EXPECT("expected whole seconds from 1 to %u", RG_COPY_EXPIRY_MAX_S);
	cfg->copy_expiry_s = (__u32)n;
	return 0;
}

static int opt_foreground(struct config *cfg, const char *v, char *err, size_t len)
{
	return parse_bool(v, &cfg->foreground, err, len);
}

static int opt_keep(struct config *cfg, const char *v, char *err, size_t len)
{
	bool unused;

	(void)cfg;
	return parse_bool(v, &unused, err, len); /* the default now: kept for old unit files */
}

static int opt_cleanup(struct config *cfg, const char *v, char *err, size_t len)
{
	return parse_bool(v, &cfg->cleanup, err, len);
}

static int opt_meta(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->meta_url = v;
	return 0;
}

static int opt_node_id(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->node_id = v;
	return 0;
}

static int opt_token_file(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->token_file = v;
	return 0;
}

static int opt_meta_ca(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->meta_ca = v;
	return 0;
}

static int opt_meta_cert(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->meta_cert = v;
	return 0;
}

static int opt_meta_key(struct config *cfg, const char *v, char *err, size_t len)
{
	(void)err, (void)len;
	cfg->meta_key = v;
	return 0;
}

static int opt_log_level(struct config *cfg, const char *v, char *err, size_t len)
{
	if (rg_log_parse_level(v, &cfg->log_level))
		return EXPECT("expected %s", RG_LOG_LEVELS);
	cfg->log_level_set = true;
	return 0;
}

/* ---- the table ------------------------------------------------------------- */

enum {
	OPT_SWITCH = 1 << 0, /* no value on the command line; true|false in the file */
	OPT_REPEAT = 1 << 1, /* may be given many times */
	OPT_CLI = 1 << 2,    /* command line only */
	OPT_LIVE = 1 << 3,   /* SIGHUP applies a change (rgd_reload) */
	OPT_BOTH = 1 << 4,   /* a value, and OPT_SWITCH for old unit files */
};

struct option_def {
	const char *name; /* --name, and the file's key */
	char short_name;
	unsigned int flags;
	const char *arg;  /* the value in --help */
	opt_apply_fn apply;
	const char *help; /* lines; "%D" is the default, from fmt_default */
};

#define RG_STRX(x) #x
#define RG_XSTR(x) RG_STRX(x)

static const struct option_def options[] = {
	{ "config", 0, OPT_CLI, "PATH", NULL,
	  "the config file: every option below as 'name = value'\n"
	  "(default " RGD_CONFIG_DEFAULT ", read when\n"
	  "it exists); options given here override it" },
	{ "port", 'p', OPT_REPEAT, "N[=PROFILE]", opt_port,
	  "ingest TCP port to guard, repeatable (default " RG_XSTR(RG_DEFAULT_PORT) "),\n"
	  "and the server behind it, whose reading of a\n"
	  "request and count of rows rowgate follows\n"
	  "(docs/rows.md): greptimedb, influxdb\n"
	  "(1.x), victoriametrics, prometheus or loki;\n"
	  "default by port: 8086 influxdb, 8428\n"
	  "victoriametrics, 9090 prometheus, 3100 loki,\n"
	  "any other greptimedb" },
	{ "allow-unparsed", 0, OPT_REPEAT, "N", opt_allow_unparsed,
	  "on guarded port N let a connection whose first\n"
	  "bytes are not HTTP pass unenforced (counted);\n"
	  "repeatable; default: answer 400 and close" },
	{ "grpc", 0, OPT_REPEAT, "N", opt_grpc,
	  "on guarded port N follow gRPC over h2c (the HTTP/2\n"
	  "preface): GreptimeDatabase inserts are charged in\n"
	  "the kernel, a refused one never reaches the server,\n"
	  "other gRPC services pass (docs/grpc.md);\n"
	  "repeatable; default: on for greptimedb ports" },
	{ "no-grpc", 0, OPT_REPEAT, "N", opt_no_grpc,
	  "on guarded port N answer the HTTP/2 preface 400\n"
	  "and close, as any request rowgate cannot read;\n"
	  "repeatable; default: so on every port whose\n"
	  "profile is not greptimedb (their servers do not\n"
	  "serve gRPC)" },
	{ "grpc-reject", 0, 0, "keep|close", opt_grpc_reject,
	  "how a refused gRPC message is answered: keep its\n"
	  "connection (the stream is reset, the client gets\n"
	  "RESOURCE_EXHAUSTED; a refusal that cannot be kept\n"
	  "closes, counted; needs --egress on), or close it\n"
	  "with GOAWAY; docs/grpc.md section 7; default: keep" },
	{ "grpc-close-grace", 0, 0, "MS|off", opt_grpc_close_grace,
	  "after the kernel closes an HTTP/2 connection with\n"
	  "GOAWAY (nothing more reaches its server), reset it\n"
	  "MS milliseconds later, so calls still open on it\n"
	  "fail UNAVAILABLE instead of waiting for their\n"
	  "deadline; off leaves it to the client;\n"
	  "docs/grpc.md#h2-close; default: " RG_XSTR(RG_GRPC_CLOSE_GRACE_MS) },
	{ "grpc-parked-streams", 0, 0, "N", opt_grpc_parked_streams,
	  "gRPC streams, all connections together, whose\n"
	  "half-read message may wait outside the parser's\n"
	  "16 slots of its connection (up to 112 each); one\n"
	  "more fails its connection closed (GOAWAY);\n"
	  "~370 bytes each, taken as streams park; a change\n"
	  "needs 'rowgatectl detach' first;\n"
	  "docs/grpc.md#framing; default: " RG_XSTR(RG_H2_PARKED_ENTRIES) },
	{ "grpc-max-streams", 0, 0, "N|off", opt_grpc_max_streams,
	  "with --grpc-reject keep, tell gRPC clients they\n"
	  "may open at most N concurrent streams per\n"
	  "connection (the server's first SETTINGS is\n"
	  "lowered on its way out; a lower server value\n"
	  "stays): more refused streams in flight close\n"
	  "connections (h2/tonic servers allow 20 reset\n"
	  "streams not yet accepted); off sends the\n"
	  "server's value; docs/grpc.md#h2-max-streams;\n"
	  "default: " RG_XSTR(RG_GRPC_MAX_STREAMS) },
	{ "grpc-uncounted", 0, 0, "refuse|pass", opt_grpc_uncounted,
	  "gRPC methods that store rows rowgate cannot count\n"
	  "in the kernel (OTel Arrow exports; Flight DoPut\n"
	  "and OTLP/gRPC exports with --grpc-flight or\n"
	  "--grpc-otlp refuse): refuse closes\n"
	  "the connection with GOAWAY before the call\n"
	  "reaches the server (counted h2_streams_uncounted);\n"
	  "pass lets them through unlimited, as any gRPC\n"
	  "service rowgate does not route; default: refuse" },
	{ "grpc-otlp", 0, 0, "count|refuse", opt_grpc_otlp,
	  "OTLP/gRPC exports (metrics, logs, traces Export):\n"
	  "count judges each message on the database its\n"
	  "x-greptime-db-name header names, charges the\n"
	  "estimate HTTP charges such a body and corrects it\n"
	  "to the rows rowgated counts from a copy\n"
	  "(docs/grpc.md#otlp); refuse treats them as\n"
	  "--grpc-uncounted says; default: count" },
	{ "grpc-flight", 0, 0, "count|refuse", opt_grpc_flight,
	  "Arrow Flight DoPut (GreptimeDB bulk inserts): as\n"
	  "--grpc-otlp, each FlightData judged on the\n"
	  "database x-greptime-db-name names, charged an\n"
	  "estimate, corrected to its record batch's rows\n"
	  "from a copy (docs/grpc.md#flight); refuse treats\n"
	  "DoPut as --grpc-uncounted says; default: count" },
	{ "grpc-compressed", 0, 0, "debt|refuse", opt_grpc_compressed,
	  "GreptimeDatabase messages sent compressed\n"
	  "(grpc-encoding gzip or zstd) name their database\n"
	  "inside the compressed bytes, out of the kernel's\n"
	  "reach: debt passes them and charges their rows,\n"
	  "counted by rowgated from a copy, to the database\n"
	  "they name, and refuses later compressed messages\n"
	  "of the connection, or of a new connection from\n"
	  "the same client address, while a database they\n"
	  "wrote is in debt (a client's first ones pass);\n"
	  "refuse closes the connection with GOAWAY (counted\n"
	  "h2_failclosed); docs/grpc.md#compressed;\n"
	  "default: debt" },
	{ "server-timeout", 0, OPT_REPEAT, "N=SECONDS[,IDLE]", opt_server_timeout,
	  "the timers of the server on guarded port N: it\n"
	  "closes a connection SECONDS after accept while no\n"
	  "request reached it, IDLE seconds (default SECONDS)\n"
	  "after its last answer; a rejected write is\n"
	  "answered with Connection: close once half of the\n"
	  "running timer has passed; 0 = never; repeatable;\n"
	  "default by profile: victoriametrics 5,60,\n"
	  "prometheus 300,300, loki 30,120, others 0" },
	{ "cgroup", 'c', 0, "PATH", opt_cgroup,
	  "cgroup v2 directory holding the ingest servers, or\n"
	  "a parent (a slice: guarded by port); re-attached\n"
	  "when it is removed and recreated (default: the\n"
	  "cgroup2 root)" },
	{ "bpffs", 'b', 0, "DIR", opt_bpffs,
	  "pin directory on a bpf filesystem (default\n" RG_BPFFS_DEFAULT_DIR ")" },
	{ "admin-socket", 's', 0, "PATH", opt_admin_socket,
	  "admin unix socket (default " RG_ADMIN_DEFAULT_PATH ")" },
	{ "admin-group", 0, 0, "NAME", opt_admin_group,
	  "group allowed to use the admin socket besides root\n"
	  "(default: none, root only; mode 0660 instead of 0600)" },
	{ "state-file", 'f', 0, "PATH", opt_state_file,
	  "limits that survive restarts (default\n" RG_STATE_DEFAULT_PATH ")" },
	{ "route", 'r', OPT_REPEAT | OPT_LIVE, "PATH=PROTO", opt_route,
	  "route a request path (exact, no query) to a\n"
	  "protocol: influx (line protocol, db from db=),\n"
	  "influx-v2 (also bucket=), prom-rw, otlp-metrics,\n"
	  "otlp-logs, otlp-traces, loki, loki-tenant (db from\n"
	  "X-Scope-OrgID), es-bulk, ndjson, opentsdb, refuse\n"
	  "(a write rowgate cannot count: answer 400), or\n"
	  "none (pass untouched); repeatable; on top of the\n"
	  "defaults of each server profile (on\n"
	  "victoriametrics its import and datadog writes\n"
	  "are refused); SIGHUP applies a change" },
	{ "routes-file", 0, OPT_REPEAT | OPT_LIVE, "PATH", opt_routes_file,
	  "one 'PATH PROTO' per line ('#' comments), as --route;\n"
	  "SIGHUP reads it again" },
	{ "metrics", 'm', OPT_LIVE, "ADDR", opt_metrics,
	  "serve Prometheus /metrics on ADDR (default off):\n"
	  ":PORT (every address), IP:PORT, [IPv6]:PORT or\n"
	  "HOST:PORT; series in docs/metrics.md; SIGHUP\n"
	  "moves it" },
	{ "xdp-iface", 0, 0, "IFACE", opt_xdp_iface,
	  "enforce UDP line protocol in XDP on IFACE (native\n"
	  "mode where the driver has it, else generic)" },
	{ "udp", 'u', OPT_REPEAT, "PORT=DB", opt_udp,
	  "UDP port whose datagrams write to DB; repeatable;\n"
	  "needs --xdp-iface" },
	{ "max-conns", 0, 0, "N", opt_max_conns,
	  "connections tracked at once (default " RG_XSTR(RG_MAX_CONNS) "); a change\n"
	  "needs 'rowgatectl detach' first (it releases the\n"
	  "guarded connections)" },
	{ "conns-full", 0, 0, "POLICY", opt_conns_full,
	  "what a connection gets when the table is full:\n"
	  "fail-closed (default): none of its data reaches\n"
	  "the server (dropped in the cgroup's ingress) and\n"
	  "rowgated resets it within a second, counted\n"
	  "(conns_refused, conns_refused_resets) and logged;\n"
	  "fail-open: it passes unlimited, counted\n"
	  "(conns_untracked) and logged" },
	{ "adopt-grace", 0, 0, "S|off", opt_adopt_grace,
	  "a connection that predates the start and, S\n"
	  "seconds or more after it was adopted, sends bytes\n"
	  "that start no request after its server answered\n"
	  "(HTTP/2, whose state began before rowgated) is\n"
	  "reset and its bytes dropped: its client\n"
	  "reconnects, enforced; counted (adopt_resets);\n"
	  "off: it passes unenforced until it closes;\n"
	  "default: " RG_XSTR(RG_ADOPT_GRACE_S) },
	{ "egress", 0, 0, "on|off", opt_egress,
	  "follow the servers' responses (sk_msg) and refund\n"
	  "writes they refuse unstored: 401, 403, 404, 413,\n"
	  "431; on gRPC ports off also closes refused calls'\n"
	  "connections and fails frames over 16 KB closed\n"
	  "(default on)" },
	{ "copy-memory", 0, 0, "BYTES", opt_copy_memory,
	  "cap on the memory rowgated holds for body copies\n"
	  "waiting to be counted, K/M/G suffixes (default\n"
	  "256M, at least 1M); a copy beyond it is\n"
	  "dropped and its request charged at the worst case\n"
	  "(copies_over_memory); one copy holds at most 64M" },
	{ "copy-expiry", 0, 0, "SECONDS", opt_copy_expiry,
	  "free a body copy that received nothing for this\n"
	  "long, its connection open; its estimate stands\n"
	  "(default 30; a copy whose connection closed is\n"
	  "counted as far as it arrived at once)" },
	{ "foreground", 0, OPT_SWITCH, NULL, opt_foreground,
	  "stay in the foreground (default: detach once ready)" },
	{ "keep", 0, OPT_SWITCH, NULL, opt_keep,
	  "accepted for compatibility: stopping never detaches" },
	{ "cleanup", 0, OPT_SWITCH | OPT_CLI, NULL, opt_cleanup,
	  "detach and remove everything under --bpffs (limits,\n"
	  "debt and counters included), exit" },
	{ "meta", 0, 0, "URL[,URL]", opt_meta,
	  "distributed mode: heartbeat to rowgate-meta, which\n"
	  "sets the limits and this host's quotas (local\n"
	  "limit set/unset are refused; default standalone);\n"
	  "list every replica as it advertises itself: a\n"
	  "redirect is followed only to one of them" },
	{ "node-id", 0, 0, "ID", opt_node_id,
	  "this frontend's id for --meta (default hostname)" },
	{ "token-file", 0, 0, "PATH", opt_token_file,
	  "the agent token for --meta (the file's first\n"
	  "line; rowgate-meta's --agent-token-file)" },
	{ "meta-ca", 0, 0, "PATH", opt_meta_ca,
	  "CA certificates (PEM) that verify https://\n"
	  "replicas of --meta (default: the system's)" },
	{ "meta-cert", 0, 0, "PATH", opt_meta_cert,
	  "this host's client certificate (PEM) for replicas\n"
	  "that require one (rowgate-meta --tls-client-ca)" },
	{ "meta-key", 0, 0, "PATH", opt_meta_key,
	  "the key of --meta-cert (PEM; default: in that file)" },
	{ "log-level", 'l', OPT_LIVE, "LEVEL", opt_log_level,
	  RG_LOG_LEVELS "\n(default notice: events, not info);\nSIGHUP applies a change" },
	{ "check-config", 0, OPT_SWITCH | OPT_CLI, NULL, NULL,
	  "read the config file and the command line, say\n"
	  "whether they are valid, exit (0: valid)" },
	{ "help", 'h', OPT_SWITCH | OPT_CLI, NULL, NULL, "this help" },
	{ "version", 'V', OPT_SWITCH | OPT_CLI, NULL, NULL, "version and libbpf version" },
};

#define NOPTIONS ((int)(sizeof(options) / sizeof(options[0])))

static int option_index(const char *name)
{
	for (int i = 0; i < NOPTIONS; i++)
		if (!strcmp(options[i].name, name))
			return i;
	return -1;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: rowgated [OPTIONS]\n"
		     "\n"
		     "Per-database ingestion rate limits (rows/s) enforced in the kernel.\n"
		     "Loads and pins rowgate's BPF programs, guards the ingest ports of the\n"
		     "servers in a cgroup, and serves rowgatectl on an admin socket.\n"
		     "\n"
		     "Options:\n");
	for (int i = 0; i < NOPTIONS; i++) {
		const struct option_def *o = &options[i];
		const char *line = o->help, *nl;
		char head[64];
		int w;

		w = snprintf(head, sizeof(head), "  %c%c%s--%s%s%s", o->short_name ? '-' : ' ',
			     o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ",
			     o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* the text starts in column 26, or on the next line */
		if (w < 25)
			fprintf(out, "%-26s", head);
		else
			fprintf(out, "%s\n%26s", head, "");
		for (;;) {
			nl = strchr(line, '\n');
			fprintf(out, "%.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
			if (!nl)
				break;
			line = nl + 1;
			fprintf(out, "%26s", "");
		}
	}
	fprintf(out,
		"\n"
		"Config file: one 'name = value' per line, the names of the long options\n"
		"above (without --; a switch takes true or false); a repeatable option\n"
		"is a key given once per value; '#' or ';' starts a comment line; an\n"
		"optional [rowgated] section.  An unknown key or a bad value is an error\n"
		"naming its line.  See examples/rowgated.conf.\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop the daemon and leave enforcement attached\n"
		"and pinned: programs, limits, debt, counters and every guarded connection\n"
		"(a restart, upgrade or crash never opens an unlimited window).  A restarted\n"
		"rowgated adopts the pins.  Removing enforcement is explicit:\n"
		"'rowgatectl detach' (limits and counters stay pinned) or 'rowgated --cleanup'.\n"
		"SIGHUP reads the config file and the command line again: routes, the log\n"
		"level and the metrics address change live; any other change is logged and\n"
		"waits for a restart.\n"
		"\n"
		"Examples:\n"
		"  rowgated --port 4000 --cgroup /sys/fs/cgroup/system.slice/greptimedb.service\n"
		"  rowgated --port 4000 --cgroup /sys/fs/cgroup/system.slice\n"
		"  rowgated --foreground --port 8428 --log-level info\n"
		"  rowgated --port 8086=influxdb --port 9000=victoriametrics\n"
		"  rowgated --config /etc/rowgate/rowgated.conf --log-level debug\n"
		"  rowgatectl limit set logs 10000\n");
}

/* ---- reading the command line and the file ----------------------------- */

/* The command line's values, in order. */
struct given {
	int opt;
	const char *value;
};

struct sources {
	struct given *v;
	int n, cap;
	bool on_cli[NOPTIONS];
	const char *section; /* of the file's line being read */
	char err[320];	     /* why the file's line was refused */
	struct config *cfg;
};

static int add_given(struct sources *s, int opt, const char *value)
{
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 32;
		struct given *p = reallocarray(s->v, (size_t)cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = (struct given){ opt, value };
	return 0;
}

/* A copy of v that lives as long as cfg. */
static const char *own(struct config *cfg, const char *v)
{
	char *copy = strdup(v), **p;

	if (!copy)
		return NULL;
	p = reallocarray(cfg->owned, cfg->nowned + 1, sizeof(*p));
	if (!p) {
		free(copy);
		return NULL;
	}
	cfg->owned = p;
	cfg->owned[cfg->nowned++] = copy;
	return copy;
}

/* libinih's handler for one 'name = value' line of the file. */
static int file_key(void *user, const char *section, const char *name, const char *value)
{
	struct sources *s = user;
	const struct option_def *o;
	char why[256] = "";
	int i;

	(void)section; /* one line at a time: read_file keeps the section */
	if (*s->section && strcmp(s->section, "rowgated")) {
		snprintf(s->err, sizeof(s->err),
			 "unknown section [%s] (keys go at the top or under [rowgated])",
			 s->section);
		return 0;
	}
	i = option_index(name);
	if (i < 0) {
		snprintf(s->err, sizeof(s->err),
			 "unknown key '%s' (the long options of rowgated --help, without --)",
			 name);
		return 0;
	}
	o = &options[i];
	if (o->flags & OPT_CLI) {
		snprintf(s->err, sizeof(s->err), "'%s' can only be given on the command line",
			 name);
		return 0;
	}
	/* the command line overrides the file; a repeatable option's values
	 * there replace all of the file's */
	if (s->on_cli[i])
		return 1;
	value = own(s->cfg, value);
	if (!value) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return 0;
	}
	if (o->apply(s->cfg, value, why, sizeof(why))) {
		snprintf(s->err, sizeof(s->err), "%s = %s: %s", name, value, why);
		return 0;
	}
	return 1;
}

/* The file, line by line, each handed to libinih (so each error names its
 * line); sections are kept here.  A missing default file is no error. */
static int read_file(struct sources *s, const char *path, bool must_exist)
{
	static char section[64];
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, err = 0;

	if (!f) {
		if (errno == ENOENT && !must_exist)
			return 0;
		err = -errno;
		pr_err("config file %s: %s", path, strerror(errno));
		return err;
	}
	s->cfg->config_file = own(s->cfg, path);
	section[0] = '\0';
	s->section = section;
	while (!err && (n = getline(&line, &cap, f)) >= 0) {
		char *p = line, *close;

		lineno++;
		s->err[0] = '\0';
		/* libinih's line buffer: longer lines would be split */
		if (n >= INI_MAX_LINE) {
			snprintf(s->err, sizeof(s->err), "line longer than %d bytes",
				 INI_MAX_LINE - 1);
			err = -EINVAL;
			break;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '[') {
			close = strchr(p, ']');
			if (!close || (size_t)(close - p - 1) >= sizeof(section)) {
				snprintf(s->err, sizeof(s->err), "a section is '[name]'");
				err = -EINVAL;
			} else {
				snprintf(section, sizeof(section), "%.*s", (int)(close - p - 1),
					 p + 1);
			}
			continue;
		}
		if (ini_parse_string(p, file_key, s))
			err = -EINVAL;
	}
	if (err)
		pr_err("%s:%d: %s", path, lineno, s->err[0] ? s->err : "expected 'name = value'");
	else if (ferror(f))
		pr_err("config file %s: cannot read it", path), err = -EIO;
	free(line);
	fclose(f);
	return err;
}

/* The command line's values, after the file's. */
static int apply_cli(struct sources *s, struct config *cfg)
{
	char why[256];

	for (int k = 0; k < s->n; k++) {
		const struct option_def *o = &options[s->v[k].opt];

		why[0] = '\0';
		if (o->apply && o->apply(cfg, s->v[k].value, why, sizeof(why))) {
			pr_err("--%s '%s': %s", o->name, s->v[k].value, why);
			return -EINVAL;
		}
	}
	return 0;
}

/* The options checked against each other, and the defaults that depend
 * on them. */
static int finish(struct config *cfg)
{
	int i;

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
	if (!cfg->meta_url &&
	    (cfg->node_id || cfg->token_file || cfg->meta_ca || cfg->meta_cert || cfg->meta_key)) {
		pr_err("--node-id, --token-file and --meta-ca/--meta-cert/--meta-key only make "
		       "sense with --meta");
		return -EINVAL;
	}
	if (cfg->meta_key && !cfg->meta_cert) {
		pr_err("--meta-key needs --meta-cert");
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

static void defaults(struct config *cfg)
{
	cfg->bpffs = RG_BPFFS_DEFAULT_DIR;
	cfg->admin_socket = RG_ADMIN_DEFAULT_PATH;
	cfg->admin_group = RG_ADMIN_ROOT_ONLY;
	cfg->state_file = RG_STATE_DEFAULT_PATH;
	cfg->grpc_keep = true;
	cfg->grpc_otlp_count = true;
	cfg->grpc_flight_count = true;
	cfg->grpc_compressed_debt = true;
	/* whoever holds --max-conns idle connections must not unlimit the rest */
	cfg->conns_full_close = true;
	cfg->grpc_close_grace_ms = RG_GRPC_CLOSE_GRACE_MS;
	cfg->adopt_grace_s = RG_ADOPT_GRACE_S;
	cfg->grpc_max_streams = RG_GRPC_MAX_STREAMS;
	cfg->grpc_parked_streams = RG_H2_PARKED_ENTRIES;
}

/* The command line's options in order; --help and --version answered. */
static int read_cli(int argc, char **argv, struct sources *s, const char **config, bool *exit_now)
{
	struct option lopts[NOPTIONS + 1];
	char shorts[2 * NOPTIONS + 1], *sp = shorts;
	int opt, i;

	memset(lopts, 0, sizeof(lopts));
	for (i = 0; i < NOPTIONS; i++) {
		const struct option_def *o = &options[i];

		lopts[i].name = o->name;
		lopts[i].has_arg = (o->flags & OPT_SWITCH) ? no_argument : required_argument;
		lopts[i].val = 256 + i;
		if (o->short_name) {
			*sp++ = o->short_name;
			if (!(o->flags & OPT_SWITCH))
				*sp++ = ':';
		}
	}
	*sp = '\0';
	optind = 1;
	while ((opt = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			fprintf(stderr, "Try 'rowgated --help'.\n");
			return -EINVAL;
		}
		if (opt < 256) {
			for (i = 0; i < NOPTIONS && options[i].short_name != opt; i++)
				;
		} else {
			i = opt - 256;
		}
		if (!strcmp(options[i].name, "help")) {
			usage(stdout);
			*exit_now = true;
			return 0;
		}
		if (!strcmp(options[i].name, "version")) {
			printf("rowgated %s (libbpf %s)\n", RG_VERSION, libbpf_version_string());
			*exit_now = true;
			return 0;
		}
		if (!strcmp(options[i].name, "config")) {
			*config = optarg;
			continue;
		}
		if (!strcmp(options[i].name, "check-config")) {
			s->cfg->check_only = true;
			continue;
		}
		s->on_cli[i] = true;
		if (add_given(s, i, (options[i].flags & OPT_SWITCH) ? "true" : optarg))
			return -ENOMEM;
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; try 'rowgated --help'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static int parse(int argc, char **argv, struct config *cfg, bool *exit_now)
{
	struct sources s = { .cfg = cfg };
	const char *config = NULL;
	int err;

	defaults(cfg);
	err = read_cli(argc, argv, &s, &config, exit_now);
	if (!err && !*exit_now)
		err = read_file(&s, config ? config : RGD_CONFIG_DEFAULT, config != NULL);
	if (!err && !*exit_now)
		err = apply_cli(&s, cfg);
	if (!err && !*exit_now)
		err = finish(cfg);
	free(s.v);
	return err;
}

int rgd_parse_args(int argc, char **argv, struct config *cfg)
{
	bool exit_now = false;
	int err = parse(argc, argv, cfg, &exit_now);

	if (exit_now)
		exit(0);
	if (cfg->check_only) {
		if (!err)
			printf("rowgated: configuration valid (%s and the command line)\n",
			       cfg->config_file ? cfg->config_file : "no config file");
		exit(err ? 2 : 0);
	}
	if (!err && cfg->log_level_set)
		rg_log_set_level(cfg->log_level);
	return err;
}

void rgd_config_free(struct config *cfg)
{
	for (size_t i = 0; i < cfg->nowned; i++)
		free(cfg->owned[i]);
	free(cfg->owned);
	cfg->owned = NULL;
	cfg->nowned = 0;
}

static bool same_routes(const struct config *a, const struct config *b)
{
	return a->nroutes == b->nroutes &&
	       !memcmp(a->routes, b->routes, (size_t)a->nroutes * sizeof(a->routes[0]));
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* What a restart would change, besides what reload applies: the first
 * differing setting's name, or NULL. */
static const char *restart_change(const struct config *a, const struct config *b)
{
	if (a->nports != b->nports || memcmp(a->ports, b->ports, sizeof(a->ports)) ||
	    memcmp(a->port_cfg, b->port_cfg, sizeof(a->port_cfg)))
		return "port (and allow-unparsed, grpc, no-grpc, server-timeout)";
	if (!same_str(a->cgroup, b->cgroup))
		return "cgroup";
	if (!same_str(a->bpffs, b->bpffs))
		return "bpffs";
	if (!same_str(a->admin_socket, b->admin_socket) || a->admin_group != b->admin_group)
		return "admin-socket or admin-group";
	if (!same_str(a->state_file, b->state_file))
		return "state-file";
	if (!same_str(a->xdp_iface, b->xdp_iface) || a->nudp != b->nudp ||
	    memcmp(a->udp, b->udp, sizeof(a->udp)))
		return "xdp-iface or udp";
	if (a->max_conns != b->max_conns || a->conns_full_close != b->conns_full_close ||
	    a->adopt_grace_s != b->adopt_grace_s ||
	    a->grpc_parked_streams != b->grpc_parked_streams)
		return "max-conns, conns-full, adopt-grace or grpc-parked-streams";
	if (a->egress_off != b->egress_off || a->grpc_keep != b->grpc_keep ||
	    a->grpc_close_grace_ms != b->grpc_close_grace_ms ||
	    a->grpc_max_streams != b->grpc_max_streams ||
	    a->grpc_uncounted_pass != b->grpc_uncounted_pass ||
	    a->grpc_otlp_count != b->grpc_otlp_count ||
	    a->grpc_flight_count != b->grpc_flight_count ||
	    a->grpc_compressed_debt != b->grpc_compressed_debt)
		return "egress or a grpc-* option";
	if (a->copy_memory_bytes != b->copy_memory_bytes || a->copy_expiry_s != b->copy_expiry_s)
		return "copy-memory or copy-expiry";
	if (!same_str(a->meta_url, b->meta_url) || !same_str(a->node_id, b->node_id) ||
	    !same_str(a->token_file, b->token_file) || !same_str(a->meta_ca, b->meta_ca) ||
	    !same_str(a->meta_cert, b->meta_cert) || !same_str(a->meta_key, b->meta_key))
		return "meta, node-id, token-file or meta-ca/cert/key";
	return NULL;
}

int rgd_reload(struct daemon *d, int argc, char **argv)
{
	struct config *cur = d->cfg, *next = calloc(1, sizeof(*next));
	bool exit_now = false;
	const char *changed;
	int err;

	if (!next)
		return -ENOMEM;
	pr_info("SIGHUP: reading %s and the command line again",
		cur->config_file ? cur->config_file : "(no config file)");
	err = parse(argc, argv, next, &exit_now);
	if (err) {
		pr_err("SIGHUP: the configuration has errors (above): nothing changed");
		goto out;
	}
	changed = restart_change(cur, next);
	if (changed)
		pr_warn("SIGHUP: %s changed: it takes effect when rowgated restarts", changed);
	if (next->log_level_set != cur->log_level_set ||
	    (next->log_level_set && next->log_level != cur->log_level)) {
		cur->log_level = next->log_level;
		cur->log_level_set = next->log_level_set;
		rg_log_set_level(next->log_level_set ? next->log_level : RG_LOG_DEFAULT);
		pr_notice("SIGHUP: log level now %s", rg_log_level_name(rg_log_get_level()));
	}
	if (!same_routes(cur, next)) {
		memcpy(cur->routes, next->routes, sizeof(cur->routes));
		cur->nroutes = next->nroutes;
		err = rgd_populate_ports_routes(d);
		if (err)
			pr_err("SIGHUP: cannot write the routes: %s", strerror(-err));
		else
			pr_notice("SIGHUP: %d route(s) applied", cur->nroutes);
	}
	if (!same_str(cur->metrics_addr, next->metrics_addr)) {
		const char *addr = next->metrics_addr ? own(cur, next->metrics_addr) : NULL;

		err = rg_metrics_listen(d->metrics, addr);
		if (err) {
			pr_err("/metrics stays %s%s", cur->metrics_addr ? "on " : "off",
			       cur->metrics_addr ? cur->metrics_addr : "");
		} else {
			cur->metrics_addr = addr;
			pr_notice("SIGHUP: /metrics %s%s", addr ? "now on " : "off", addr ? addr : "");
		}
	}
out:
	rgd_config_free(next);
	free(next);
	return err;
}
