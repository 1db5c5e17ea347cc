// SPDX-License-Identifier: MIT
/* Which paths are writes, and of which protocol: the routes of each server
 * profile, --route and --routes-file over them, and the ports and routes
 * maps written from them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "rowgate/h2/hpack_huffman.h"
#include "rowgate/protocols.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "rowgated.h"

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

int rgd_parse_route(const char *s, struct route_opt *r)
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
		/* GreptimeDatabase and Flight messages come on gRPC only */
		if (!strcmp(eq + 1, route_names[i].name) &&
		    !rg_protocol_grpc_only(route_names[i].route.protocol)) {
			r->route = route_names[i].route;
			return 0;
		}
	}
	return -EINVAL;
}

/* Routes from a file: "PATH PROTO" per line, '#' comments, blank lines. */
int rgd_load_routes_file(const char *path, struct config *cfg)
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
		    rgd_parse_route(arg, &cfg->routes[cfg->nroutes])) {
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

static bool port_wanted(const void *key, void *ctx)
{
	const struct config *cfg = ctx;
	__u32 port = *(const __u32 *)key;

	for (int j = 0; j < cfg->nports; j++)
		if (cfg->ports[j] == port)
			return true;
	return false;
}

static bool route_wanted(const void *key, void *ctx)
{
	const struct rg_route_key *k = key;

	return wanted_route(ctx, k->path) != NULL;
}

/* Write the wanted entries first, then drop stale ones: a restart under
 * load never leaves a guarded port or route missing for a moment. */
int rgd_populate_ports_routes(struct daemon *d)
{
	int ports_fd = bpf_map__fd(d->skel->maps.RG_MAP_PORTS);
	int routes_fd = bpf_map__fd(d->skel->maps.RG_MAP_ROUTES);
	struct rg_route_key key;
	size_t i;
	int j, err;

	for (j = 0; j < d->cfg->nports; j++)
		if (bpf_map_update_elem(ports_fd, &d->cfg->ports[j], &d->cfg->port_cfg[j], BPF_ANY))
			return -errno;
	err = rg_map_prune(ports_fd, sizeof(__u32), port_wanted, (void *)d->cfg);
	if (err)
		return err;
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
	return rg_map_prune(routes_fd, sizeof(key), route_wanted, (void *)d->cfg);
}

/* Write h2_routes: each route path's raw and Huffman keys and prefix keys
 * (rg_h2_route_paths: the GreptimeDatabase writes, followed, and the
 * methods whose rows the kernel cannot count (OTLP exports too with
 * --grpc-otlp refuse), refused unless
 * --grpc-uncounted pass leaves them unrouted), and the entry listing the
 * prefix lengths (key {0, 0}), last: until it exists every stream is
 * followed. */
int rgd_populate_h2_routes(struct daemon *d)
{
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_H2_ROUTES);
	struct rg_h2_route_key keys[RG_H2_ROUTE_KEYS_PER_PATH], lens_key;
	struct rg_h2_route route = {}, lens = {};
	size_t i;
	int n, k, j, nlens = 0;

	for (i = 0; i < RG_H2_ROUTE_PATHS; i++) {
		route.kind = rg_h2_route_paths[i].kind;
		/* OTLP exports are counted unless --grpc-otlp refuse */
		if (rg_protocol_otlp(route.kind) && !d->cfg->grpc_otlp_count)
			route.kind = RG_H2_PATH_UNCOUNTED;
		/* DoPut too, unless --grpc-flight refuse */
		if (route.kind == RG_PROTO_ARROW_FLIGHT && !d->cfg->grpc_flight_count)
			route.kind = RG_H2_PATH_UNCOUNTED;
		if (route.kind == RG_H2_PATH_UNCOUNTED && d->cfg->grpc_uncounted_pass)
			continue;
		n = rg_h2_route_keys(rg_h2_route_paths[i].path, keys);
		if (n < 0)
			return -EINVAL;
		for (k = 0; k < n; k++) {
			if (bpf_map_update_elem(fd, &keys[k], &route, BPF_ANY))
				return -errno;
			if (!(keys[k].coding & RG_H2_ROUTE_PREFIX))
				continue;
			for (j = 0; j < nlens && lens.prefix_lens[j] != keys[k].len; j++)
				;
			if (j < nlens)
				continue;
			if (nlens == RG_H2_ROUTE_LENS)
				return -E2BIG;
			lens.prefix_lens[nlens++] = keys[k].len;
		}
	}
	memset(&lens_key, 0, sizeof(lens_key));
	if (bpf_map_update_elem(fd, &lens_key, &lens, BPF_ANY))
		return -errno;
	return 0;
}
