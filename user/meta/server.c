// SPDX-License-Identifier: MIT
/* rowgate-meta: the cluster's quota allocator (the Metasrv role).  Keeps the
 * cluster-wide limits (a local state file, or etcd), answers frontend
 * heartbeats with per-database quotas from rg_alloc_* (water-filling), and
 * with --etcd elects one leader among its replicas.  HTTP/JSON, curl-able:
 * user/lib/meta_proto.h and docs/distributed.md describe the protocol.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "../lib/clock.h"
#include "cluster.h"
#include "etcd.h"
#include "../lib/http_client.h"
#include "../lib/meta_proto.h"
#include "../lib/limits.h"
#include "../lib/log.h"
#include "../lib/state.h"
#include "rowgate_version.h"

#define RG_META_LISTEN_DEFAULT     "127.0.0.1:4100"
#define RG_META_STATE_DEFAULT      "/var/lib/rowgate/meta-limits.json"
#define RG_META_ETCD_PREFIX        "/rowgate/"
/* etcd's smallest lease is 2 s with its default election timeout; a dead
 * leader is replaced within this plus one election tick. */
#define RG_META_ELECTION_TTL_S_DEFAULT 2
/* Election steps (campaign / check) this often, in ms. */
#define RG_META_ELECTION_TICK_MS 200
/* Concurrent HTTP connections: one per frontend and a few admins. */
#define RG_META_CONNECTION_LIMIT 4096

struct meta_config {
	const char *listen;
	const char *advertise;
	char advertise_buf[128];
	const char *etcd_url;
	const char *etcd_prefix;
	const char *state_file;
	const char *token_file;
	__u64 heartbeat_interval_ms;
	__u64 lease_ms;
	__u64 learning_ms; /* RG_U64_MAX = same as the lease */
	__u64 election_ttl_s;
	enum rg_alloc_strategy strategy;
};

struct meta {
	struct meta_config cfg;
	pthread_mutex_t lock; /* everything below */
	struct rg_cluster cl;
	bool use_etcd;
	struct rg_etcd etcd;
	bool leader;
	char leader_url[256]; /* "" when unknown */
	__u64 leader_since_ns;
	char token[RG_META_TOKEN_MAX];
	__u64 unauthorized;
	__u64 redirects;
	__u64 elections_won;
};

struct request {
	char *body;
	size_t len;
	bool too_big;
	bool unauthorized; /* its body is not kept: the reply is 401 */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rowgate-meta [OPTIONS]\n"
		"\n"
		"rowgate's quota allocator (the Metasrv role).  Keeps the cluster-wide\n"
		"per-database limits (rows/s) and answers the heartbeats of every rowgated\n"
		"(started with --meta) with each frontend's share of each limit.\n"
		"HTTP/JSON on --listen; see docs/distributed.md.\n"
		"\n"
		"Options:\n"
		"      --listen ADDR:PORT        where to serve HTTP (default %s;\n"
		"                                [::1]:PORT for IPv6)\n"
		"      --advertise URL           this replica's URL, for redirects from the\n"
		"                                other replicas (default http://LISTEN)\n"
		"      --etcd URL                keep limits in etcd and elect a leader among\n"
		"                                replicas (etcd v3 JSON gateway, e.g.\n"
		"                                http://127.0.0.1:2379); default: no etcd\n"
		"      --etcd-prefix PREFIX      key prefix in etcd (default %s)\n"
		"      --state-file PATH         limits file without etcd (default %s)\n"
		"      --heartbeat-interval MS   interval told to frontends (default %llu)\n"
		"      --lease MS                validity of a quota grant (default %llu)\n"
		"      --learning MS             learning phase of a new leader: adopt the\n"
		"                                quotas frontends hold (default: the lease)\n"
		"      --election-ttl S          etcd lease of the leader key, seconds\n"
		"                                (default %d; etcd rounds up to its minimum)\n"
		"      --strategy NAME           waterfill|greptime-doc|even|doorman-prop|\n"
		"                                doorman-fair (default waterfill)\n"
		"      --token-file PATH         require \"Authorization: Bearer TOKEN\" (the\n"
		"                                file's first line) on every call but health\n"
		"  -l, --log-level LEVEL         %s (default warn)\n"
		"  -h, --help                    this help\n"
		"  -V, --version                 version\n"
		"\n"
		"Examples:\n"
		"  rowgate-meta --listen 127.0.0.1:4100 --state-file /var/lib/rowgate/meta.json\n"
		"  rowgate-meta --listen 10.0.0.5:4100 --etcd http://127.0.0.1:2379 \\\n"
		"               --token-file /etc/rowgate/token\n"
		"  rowgatectl --meta http://127.0.0.1:4100 limit set logs 10000\n"
		"  curl -s http://127.0.0.1:4100/v1/health\n",
		RG_META_LISTEN_DEFAULT, RG_META_ETCD_PREFIX, RG_META_STATE_DEFAULT,
		RG_META_HEARTBEAT_INTERVAL_MS_DEFAULT, RG_ALLOC_LEASE_MS_DEFAULT,
		RG_META_ELECTION_TTL_S_DEFAULT, RG_LOG_LEVELS);
}

static int parse_ms(const char *opt, const char *s, __u64 *out, __u64 min, __u64 max)
{
	char err[160];

	if (rg_parse_limit(s, out, err, sizeof(err)) || *out < min || *out > max) {
		pr_err("%s '%s': expected a whole number from %llu to %llu", opt, s,
		       (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct meta_config *cfg)
{
	enum {
		OPT_LISTEN = 256,
		OPT_ADVERTISE,
		OPT_ETCD,
		OPT_ETCD_PREFIX,
		OPT_STATE,
		OPT_HB,
		OPT_LEASE,
		OPT_LEARNING,
		OPT_TTL,
		OPT_STRATEGY,
		OPT_TOKEN,
	};
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "advertise", required_argument, NULL, OPT_ADVERTISE },
		{ "etcd", required_argument, NULL, OPT_ETCD },
		{ "etcd-prefix", required_argument, NULL, OPT_ETCD_PREFIX },
		{ "state-file", required_argument, NULL, OPT_STATE },
		{ "heartbeat-interval", required_argument, NULL, OPT_HB },
		{ "lease", required_argument, NULL, OPT_LEASE },
		{ "learning", required_argument, NULL, OPT_LEARNING },
		{ "election-ttl", required_argument, NULL, OPT_TTL },
		{ "strategy", required_argument, NULL, OPT_STRATEGY },
		{ "token-file", required_argument, NULL, OPT_TOKEN },
		{ "log-level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	enum rg_log_level level;
	int opt, s;

	cfg->listen = RG_META_LISTEN_DEFAULT;
	cfg->etcd_prefix = RG_META_ETCD_PREFIX;
	cfg->state_file = RG_META_STATE_DEFAULT;
	cfg->heartbeat_interval_ms = RG_META_HEARTBEAT_INTERVAL_MS_DEFAULT;
	cfg->lease_ms = RG_ALLOC_LEASE_MS_DEFAULT;
	cfg->learning_ms = RG_U64_MAX;
	cfg->election_ttl_s = RG_META_ELECTION_TTL_S_DEFAULT;
	cfg->strategy = RG_ALLOC_WATERFILL;
	while ((opt = getopt_long(argc, argv, "l:hV", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN:
			cfg->listen = optarg;
			break;
		case OPT_ADVERTISE:
			cfg->advertise = optarg;
			break;
		case OPT_ETCD:
			cfg->etcd_url = optarg;
			break;
		case OPT_ETCD_PREFIX:
			cfg->etcd_prefix = optarg;
			break;
		case OPT_STATE:
			cfg->state_file = optarg;
			break;
		case OPT_HB:
			if (parse_ms("--heartbeat-interval", optarg, &cfg->heartbeat_interval_ms, 10,
				     3600000))
				return -EINVAL;
			break;
		case OPT_LEASE:
			if (parse_ms("--lease", optarg, &cfg->lease_ms, 10, 86400000))
				return -EINVAL;
			break;
		case OPT_LEARNING:
			if (parse_ms("--learning", optarg, &cfg->learning_ms, 0, 86400000))
				return -EINVAL;
			break;
		case OPT_TTL:
			if (parse_ms("--election-ttl", optarg, &cfg->election_ttl_s, 1, 3600))
				return -EINVAL;
			break;
		case OPT_STRATEGY:
			s = rg_alloc_strategy_parse(optarg);
			if (s < 0) {
				pr_err("--strategy '%s': expected waterfill, greptime-doc, even, "
				       "doorman-prop or doorman-fair",
				       optarg);
				return -EINVAL;
			}
			cfg->strategy = (enum rg_alloc_strategy)s;
			break;
		case OPT_TOKEN:
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
			printf("rowgate-meta %s (libmicrohttpd %s)\n", RG_VERSION,
			       MHD_get_version());
			exit(0);
		default:
			fprintf(stderr, "Try 'rowgate-meta --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; try 'rowgate-meta --help'", argv[optind]);
		return -EINVAL;
	}
	if (cfg->learning_ms == RG_U64_MAX)
		cfg->learning_ms = cfg->lease_ms;
	if (cfg->heartbeat_interval_ms >= cfg->lease_ms)
		pr_warn("--heartbeat-interval %llu ms >= --lease %llu ms: grants expire between "
			"heartbeats and frontends fall back to the full limit",
			(unsigned long long)cfg->heartbeat_interval_ms,
			(unsigned long long)cfg->lease_ms);
	if (!cfg->advertise) {
		snprintf(cfg->advertise_buf, sizeof(cfg->advertise_buf), "http://%s", cfg->listen);
		cfg->advertise = cfg->advertise_buf;
	}
	return 0;
}

/* "ADDR:PORT" or "[V6ADDR]:PORT" into a socket address. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*ai;
	size_t hl;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - s - 1);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		port = close + 2;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		port = colon + 1;
	}
	host[hl] = 0;
	if (getaddrinfo(host, port, &hints, &ai))
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}

/* ---- responses ---- */

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned int status, json_t *obj,
				 const char *location)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len;

	json_decref(obj);
	if (!text) {
		text = strdup("{\"ok\":false,\"error\":\"out of memory\"}");
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		if (!text)
			return MHD_NO;
	}
	len = strlen(text);
	text = realloc(text, len + 2) ?: text;
	text[len++] = '\n';
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (location)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"rowgate-meta\"");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned int status,
				  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned int status,
				  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return send_json(conn, status, rg_meta_error_json(msg), NULL);
}

/* ---- endpoints (called with m->lock held) ---- */

static json_t *health_json(struct meta *m, __u64 now)
{
	__u64 left = m->cl.learning_until_ns > now ? m->cl.learning_until_ns - now : 0;
	char store[320];
	__u32 live = 0;

	for (__u32 i = 0; i < m->cl.nr_nodes; i++)
		if (m->cl.nodes[i].id[0] && now - m->cl.nodes[i].last_hb_ns < m->cl.params.lease_ns)
			live++;
	if (m->use_etcd)
		snprintf(store, sizeof(store), "etcd:%s", m->etcd.endpoint);
	else
		snprintf(store, sizeof(store), "file:%s", m->cfg.state_file);
	return json_pack("{s:b, s:s, s:s, s:s, s:b, s:o, s:o, s:I, s:I, s:s, s:s}", "ok", 1,
			 "role", m->leader ? "leader" : "follower", "self", m->cfg.advertise,
			 "leader", m->leader_url, "learning",
			 m->leader && rg_cluster_learning(&m->cl, now), "learning_ms_left",
			 rg_json_u64(m->leader ? left / RG_NSEC_PER_MSEC : 0), "lease_ms",
			 rg_json_u64(m->cfg.lease_ms), "limits", (json_int_t)m->cl.limits.count,
			 "frontends_live", (json_int_t)live, "store", store, "version",
			 RG_VERSION);
}

static enum MHD_Result do_heartbeat(struct meta *m, struct MHD_Connection *conn, json_t *body)
{
	struct rg_meta_hb_req req;
	struct rg_meta_hb_reply reply;
	char err[256];
	json_t *obj;
	int ret;

	ret = rg_meta_hb_req_decode(body, &req, err, sizeof(err));
	if (ret) {
		rg_meta_hb_req_free(&req);
		return send_error(conn, MHD_HTTP_BAD_REQUEST, "bad heartbeat: %s", err);
	}
	ret = rg_cluster_heartbeat(&m->cl, &req, rg_monotonic_ns(), &reply, err, sizeof(err));
	pr_debug("heartbeat from %s: %zu database(s)", req.node_id, req.count);
	rg_meta_hb_req_free(&req);
	if (ret) {
		rg_meta_hb_reply_free(&reply);
		return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", err);
	}
	obj = rg_meta_hb_reply_encode(&reply);
	rg_meta_hb_reply_free(&reply);
	if (obj)
		json_object_set_new(obj, "leader", json_string(m->cfg.advertise));
	return send_json(conn, MHD_HTTP_OK, obj, NULL);
}

static json_t *limits_json(struct meta *m, const struct rg_db_key *db)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < m->cl.limits.count; i++) {
		const struct rg_limit_entry *e = &m->cl.limits.entries[i];

		if (db && strncmp(db->name, e->db.name, RG_DB_NAME_MAX))
			continue;
		json_array_append_new(arr, json_pack("{s:s, s:o}", "db", e->db.name, "limit",
						     rg_json_u64(e->limit)));
	}
	return json_pack("{s:b, s:o}", "ok", 1, "limits", arr);
}

static enum MHD_Result do_limit_set(struct meta *m, struct MHD_Connection *conn,
				    const struct rg_db_key *db, json_t *body)
{
	struct rg_limit_entry *old;
	bool existed;
	__u64 limit, old_limit;
	char err[512] = "";
	int ret;

	if (rg_meta_limit_body_decode(body, &limit, err, sizeof(err)))
		return send_error(conn, MHD_HTTP_BAD_REQUEST, "%s", err);
	old = rg_limit_list_find(&m->cl.limits, db);
	existed = old != NULL;
	old_limit = old ? old->limit : 0;
	if (m->use_etcd) {
		/* durable first: an acknowledged limit survives a failover */
		if (rg_etcd_put_limit(&m->etcd, db, limit, err, sizeof(err)))
			return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "cannot store the limit: %s", err);
		ret = rg_cluster_set_limit(&m->cl, db, limit);
	} else {
		ret = rg_cluster_set_limit(&m->cl, db, limit);
		if (!ret && rg_state_save(m->cfg.state_file, &m->cl.limits, err, sizeof(err))) {
			if (existed)
				rg_cluster_set_limit(&m->cl, db, old_limit);
			else
				rg_cluster_unset_limit(&m->cl, db);
			return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", err);
		}
	}
	if (ret)
		return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	pr_info("cluster limit %s = %llu rows/s", db->name, (unsigned long long)limit);
	return send_json(conn, MHD_HTTP_OK,
			 json_pack("{s:b, s:s, s:o}", "ok", 1, "db", db->name, "limit",
				   rg_json_u64(limit)),
			 NULL);
}

static enum MHD_Result do_limit_unset(struct meta *m, struct MHD_Connection *conn,
				      const struct rg_db_key *db)
{
	struct rg_limit_entry *old = rg_limit_list_find(&m->cl.limits, db);
	__u64 old_limit;
	char err[512] = "";
	int ret;

	if (!old)
		return send_error(conn, MHD_HTTP_NOT_FOUND, "database '%s' has no limit", db->name);
	old_limit = old->limit;
	if (m->use_etcd) {
		ret = rg_etcd_delete_limit(&m->etcd, db, err, sizeof(err));
		if (ret && ret != -ENOENT)
			return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "cannot remove the limit: %s", err);
		rg_cluster_unset_limit(&m->cl, db);
	} else {
		rg_cluster_unset_limit(&m->cl, db);
		if (rg_state_save(m->cfg.state_file, &m->cl.limits, err, sizeof(err))) {
			rg_cluster_set_limit(&m->cl, db, old_limit);
			return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", err);
		}
	}
	pr_info("cluster limit %s unset", db->name);
	return send_json(conn, MHD_HTTP_OK, json_pack("{s:b, s:s}", "ok", 1, "db", db->name),
			 NULL);
}

static json_t *status_json(struct meta *m, const struct rg_db_key *db, __u64 now)
{
	json_t *nodes = json_array();

	for (__u32 i = 0; nodes && i < m->cl.nr_nodes; i++) {
		const struct rg_cluster_node *n = &m->cl.nodes[i];

		if (!n->id[0])
			continue;
		json_array_append_new(nodes,
				      json_pack("{s:s, s:o, s:o}", "node", n->id, "heartbeats",
						rg_json_u64(n->heartbeats), "last_heartbeat_ms_ago",
						rg_json_u64((now - n->last_hb_ns) / RG_NSEC_PER_MSEC)));
	}
	return json_pack("{s:b, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "ok", 1, "strategy",
			 rg_alloc_strategy_name(m->cl.params.strategy), "learning",
			 rg_cluster_learning(&m->cl, now), "heartbeats",
			 rg_json_u64(m->cl.heartbeats), "heartbeats_learning",
			 rg_json_u64(m->cl.heartbeats_learning), "unauthorized",
			 rg_json_u64(m->unauthorized), "redirects", rg_json_u64(m->redirects),
			 "databases", rg_cluster_status_json(&m->cl, db, now), "frontends", nodes);
}

static enum MHD_Result dispatch(struct meta *m, struct MHD_Connection *conn, const char *url,
				const char *method, struct request *rq)
{
	struct rg_meta_route r;
	char err[256] = "", location[600];
	json_t *body = NULL;
	enum MHD_Result ret;
	__u64 now = rg_monotonic_ns();

	if (rg_meta_route_path(url, &r, err, sizeof(err)))
		return r.ep == RG_META_EP_NONE && !err[0] ?
			       send_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", url) :
			       send_error(conn, MHD_HTTP_BAD_REQUEST, "%s", err);
	if (!rg_meta_method_allowed(&r, method))
		return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed on %s",
				  method, url);
	if (r.ep == RG_META_EP_HEALTH)
		return send_json(conn, MHD_HTTP_OK, health_json(m, now), NULL);
	if (!rg_meta_bearer_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_AUTHORIZATION),
			       m->token)) {
		m->unauthorized++;
		return send_error(conn, MHD_HTTP_UNAUTHORIZED,
				  "missing or wrong bearer token (Authorization: Bearer TOKEN)");
	}
	if (!m->leader) {
		if (m->leader_url[0] && strcmp(m->leader_url, m->cfg.advertise)) {
			m->redirects++;
			snprintf(location, sizeof(location), "%s%s", m->leader_url, url);
			return send_json(conn, MHD_HTTP_TEMPORARY_REDIRECT,
					 json_pack("{s:b, s:s, s:s}", "ok", 0, "error",
						   "not the leader", "leader", m->leader_url),
					 location);
		}
		return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "no leader elected yet: retry shortly");
	}
	if (rq->too_big)
		return send_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "the body exceeds %d bytes",
				  RG_META_BODY_MAX);
	if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
		json_error_t jerr;

		body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &jerr);
		if (!body)
			return send_error(conn, MHD_HTTP_BAD_REQUEST, "the body is not JSON: %s",
					  jerr.text);
	}
	switch (r.ep) {
	case RG_META_EP_HEARTBEAT:
		ret = do_heartbeat(m, conn, body);
		break;
	case RG_META_EP_LIMITS:
		if (!strcmp(method, "PUT"))
			ret = do_limit_set(m, conn, &r.db, body);
		else if (!strcmp(method, "DELETE"))
			ret = do_limit_unset(m, conn, &r.db);
		else
			ret = send_json(conn, MHD_HTTP_OK, limits_json(m, r.has_db ? &r.db : NULL),
					NULL);
		break;
	case RG_META_EP_STATUS:
		ret = send_json(conn, MHD_HTTP_OK, status_json(m, r.has_db ? &r.db : NULL, now),
				NULL);
		break;
	default:
		ret = send_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", url);
	}
	json_decref(body);
	return ret;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

/* Percent-decoding of URLs as MHD's own, except that %00 stays as it is: a
 * NUL would end the path early, and /v1/limits/a%00b would name "a". */
static size_t unescape_keep_nul(void *cls, struct MHD_Connection *conn, char *s)
{
	char *w = s;
	const char *r = s;

	(void)cls, (void)conn;
	while (*r) {
		int hi = r[0] == '%' ? hex_digit(r[1]) : -1;
		int lo = hi >= 0 ? hex_digit(r[2]) : -1;

		if (lo >= 0 && (hi | lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
	return (size_t)(w - s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct meta *m = cls;
	struct request *rq = *con_cls;
	enum MHD_Result ret;

	(void)version;
	if (!rq) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		/* the headers are in: memory goes only to bodies that may be
		 * used, so clients without the token cost none */
		rq->unauthorized = !rg_meta_bearer_ok(
			MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION),
			m->token);
		rq->too_big = cl && strtoull(cl, NULL, 10) > RG_META_BODY_MAX;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rq->unauthorized)
			return MHD_YES;
		if (rq->too_big || rq->len + n > RG_META_BODY_MAX) {
			rq->too_big = true;
			return MHD_YES;
		}
		char *p = realloc(rq->body, rq->len + n + 1);

		if (!p)
			return MHD_NO;
		memcpy(p + rq->len, upload_data, n);
		rq->body = p;
		rq->len += n;
		rq->body[rq->len] = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&m->lock);
	ret = dispatch(m, conn, url, method, rq);
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *rq = *con_cls;

	(void)cls, (void)conn, (void)toe;
	if (rq) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* ---- leadership ---- */

static void become_leader(struct meta *m)
{
	struct rg_limit_list limits;
	char err[512];
	__u64 now;

	rg_limit_list_init(&limits);
	if (m->use_etcd && rg_etcd_load_limits(&m->etcd, &limits, err, sizeof(err))) {
		pr_warn("won the election but cannot load the limits from etcd (%s): "
			"not leading yet",
			err);
		rg_limit_list_free(&limits);
		return;
	}
	pthread_mutex_lock(&m->lock);
	now = rg_monotonic_ns();
	if (m->use_etcd && rg_cluster_replace_limits(&m->cl, &limits))
		pr_err("out of memory loading the limits");
	rg_cluster_start_leading(&m->cl, now);
	m->leader = true;
	m->leader_since_ns = now;
	m->elections_won++;
	snprintf(m->leader_url, sizeof(m->leader_url), "%s", m->cfg.advertise);
	pthread_mutex_unlock(&m->lock);
	pr_warn("leading (%zu limits); learning the quotas frontends hold for %llu ms",
		limits.count ? limits.count : m->cl.limits.count,
		(unsigned long long)m->cfg.learning_ms);
	rg_limit_list_free(&limits);
}

static void step_down(struct meta *m, const char *why)
{
	pthread_mutex_lock(&m->lock);
	if (m->leader)
		pr_warn("no longer leading: %s", why);
	m->leader = false;
	if (!strcmp(m->leader_url, m->cfg.advertise))
		m->leader_url[0] = 0;
	pthread_mutex_unlock(&m->lock);
}

struct election {
	__s64 lease;
	__u64 last_keepalive_ns; /* last successful keepalive or grant */
	__u64 last_ok_ns;        /* last time etcd confirmed our role */
};

static void election_step(struct meta *m, struct election *el)
{
	__u64 ttl_ns = m->cfg.election_ttl_s * 1000000000ULL, now = rg_monotonic_ns();
	char err[512], url[256];
	bool leader, was;
	int ret;

	if (!el->lease) {
		if (rg_etcd_lease_grant(&m->etcd, m->cfg.election_ttl_s, &el->lease, err,
					sizeof(err))) {
			pr_debug("etcd: %s", err);
			goto unreachable;
		}
		el->last_keepalive_ns = now;
	} else if (now - el->last_keepalive_ns >= ttl_ns / 3) {
		ret = rg_etcd_lease_keepalive(&m->etcd, el->lease, err, sizeof(err));
		if (ret == -ENOENT) {
			el->lease = 0;
			step_down(m, "the etcd lease expired");
			return;
		}
		if (ret) {
			pr_debug("etcd: %s", err);
			goto unreachable;
		}
		el->last_keepalive_ns = now;
	}
	if (rg_etcd_campaign(&m->etcd, el->lease, m->cfg.advertise, &leader, url, sizeof(url),
			     err, sizeof(err))) {
		pr_debug("etcd: %s", err);
		goto unreachable;
	}
	el->last_ok_ns = now;
	pthread_mutex_lock(&m->lock);
	was = m->leader;
	if (!leader)
		snprintf(m->leader_url, sizeof(m->leader_url), "%s", url);
	pthread_mutex_unlock(&m->lock);
	if (leader && !was)
		become_leader(m);
	else if (!leader && was)
		step_down(m, "another replica holds the leader key");
	return;
unreachable:
	/* our key may be gone by now: never lead on an unconfirmed lease */
	if (now - el->last_ok_ns >= ttl_ns) {
		step_down(m, "etcd unreachable for longer than the election TTL");
		pthread_mutex_lock(&m->lock);
		m->leader_url[0] = 0;
		pthread_mutex_unlock(&m->lock);
	}
}

int main(int argc, char **argv)
{
	static struct meta m;
	struct sockaddr_storage ss = {};
	struct election el = {};
	struct MHD_Daemon *httpd;
	struct pollfd pfd;
	char err[512];
	sigset_t mask;
	bool v6 = false;
	int sfd, ret = 1;

	if (parse_args(argc, argv, &m.cfg))
		return 2;
	if (parse_listen(m.cfg.listen, &ss, &v6)) {
		pr_err("--listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:4100 or [::1]:4100",
		       m.cfg.listen);
		return 2;
	}
	if (m.cfg.token_file &&
	    rg_meta_read_token(m.cfg.token_file, m.token, sizeof(m.token), err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	pthread_mutex_init(&m.lock, NULL);
	if (rg_http_global_init()) {
		pr_err("cannot initialise libcurl");
		return 1;
	}
	if (rg_cluster_init(&m.cl, m.cfg.strategy, m.cfg.lease_ms, m.cfg.heartbeat_interval_ms,
			    m.cfg.learning_ms)) {
		pr_err("invalid lease or heartbeat interval");
		return 2;
	}
	if (m.cfg.etcd_url) {
		if (rg_etcd_init(&m.etcd, m.cfg.etcd_url, m.cfg.etcd_prefix)) {
			pr_err("--etcd '%s': expected http://HOST:PORT (and a non-empty prefix)",
			       m.cfg.etcd_url);
			return 2;
		}
		m.use_etcd = true;
	} else {
		struct rg_limit_list limits;

		rg_limit_list_init(&limits);
		if (rg_state_load(m.cfg.state_file, &limits, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		if (rg_cluster_replace_limits(&m.cl, &limits)) {
			pr_err("out of memory");
			return 1;
		}
		rg_limit_list_free(&limits);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL); /* before MHD's thread inherits the mask */
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		pr_err("signalfd: %s", strerror(errno));
		return 1;
	}
	httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					 (v6 ? MHD_USE_IPv6 : 0),
				 0, NULL, NULL, on_request, &m, MHD_OPTION_SOCK_ADDR, &ss,
				 MHD_OPTION_NOTIFY_COMPLETED, on_completed, &m,
				 MHD_OPTION_UNESCAPE_CALLBACK, unescape_keep_nul, NULL,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)RG_META_CONNECTION_LIMIT,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
	if (!httpd) {
		pr_err("cannot listen on %s (address in use, or not a local address?)",
		       m.cfg.listen);
		return 1;
	}
	if (!m.use_etcd)
		become_leader(&m);
	pr_warn("serving on %s (%s store%s)", m.cfg.listen, m.use_etcd ? "etcd" : "file",
		m.token[0] ? ", token required" : "");
	pfd = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (;;) {
		struct signalfd_siginfo si;

		if (m.use_etcd)
			election_step(&m, &el);
		if (poll(&pfd, 1, RG_META_ELECTION_TICK_MS) < 0 && errno != EINTR)
			break;
		if ((pfd.revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGHUP) {
			pr_info("signal %u: stopping", si.ssi_signo);
			break;
		}
	}
	ret = 0;
	MHD_stop_daemon(httpd);
	if (m.use_etcd && el.lease) {
		/* hand leadership over now rather than at lease expiry */
		if (rg_etcd_lease_revoke(&m.etcd, el.lease, err, sizeof(err)))
			pr_warn("%s", err);
	}
	rg_cluster_free(&m.cl);
	close(sfd);
	return ret;
}
