// SPDX-License-Identifier: MIT
/* rowgate-meta's HTTP API: heartbeats, limits, status and health, with
 * authentication, redirects to the leader and request bodies. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <jansson.h>

#include "../lib/clock.h"
#include "../lib/limits.h"
#include "../lib/log.h"
#include "../lib/state.h"
#include "rowgate_version.h"
#include "meta.h"

/* Who a bearer token makes the caller: an agent may heartbeat and read, an
 * admin may also change what the cluster enforces. */
enum meta_role {
	ROLE_NONE,
	ROLE_AGENT,
	ROLE_ADMIN,
};

struct request {
	char *body;
	size_t len;
	bool too_big;
	enum meta_role role;
	bool refused; /* its body is not kept: the reply is 401 or 403 */
	bool no_cert; /* --tls-client-ca and no valid client certificate */
	char cert_why[160];
};

bool meta_client_cert_ok(struct MHD_Connection *conn, char *why, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	gnutls_datum_t text = {};
	unsigned int status = 0, n = 0;
	int rc;

	if (!s || !gnutls_certificate_get_peers(s, &n) || !n) {
		snprintf(why, len, "no client certificate was presented");
		return false;
	}
	/* the chain against --tls-client-ca, dates included */
	rc = gnutls_certificate_verify_peers2(s, &status);
	if (rc < 0) {
		snprintf(why, len, "the client certificate cannot be verified: %s",
			 gnutls_strerror(rc));
		return false;
	}
	if (status) {
		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text,
								 0) == 0) {
			snprintf(why, len, "%s", (const char *)text.data);
			gnutls_free(text.data);
		} else {
			snprintf(why, len, "the client certificate is not valid (status 0x%x)",
				 status);
		}
		return false;
	}
	return true;
}

static enum meta_role request_role(const struct meta *m, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);

	/* an empty token is not required: without an admin token everyone is
	 * one (options.c allows no agent token then either) */
	if (rg_meta_bearer_ok(h, m->admin_token))
		return ROLE_ADMIN;
	if (rg_meta_bearer_ok(h, m->agent_token))
		return ROLE_AGENT;
	return ROLE_NONE;
}

/* What an agent's token may do: heartbeat and read.  Anything else, and any
 * endpoint added later, is an admin's. */
static bool agent_may(const struct rg_meta_route *r, const char *method)
{
	switch (r->ep) {
	case RG_META_EP_HEALTH:
		return true;
	case RG_META_EP_HEARTBEAT:
		return !strcmp(method, "POST");
	case RG_META_EP_LIMITS:
	case RG_META_EP_STATUS:
		return !strcmp(method, "GET") || !strcmp(method, "HEAD");
	default:
		return false;
	}
}

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

/* The Prometheus text format, served locally by every replica (a follower
 * reports its own role and counters, not the leader's). */
static enum MHD_Result send_metrics(struct MHD_Connection *conn, char *text)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!text)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
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
		snprintf(store, sizeof(store), "etcd:%s", rg_etcd_endpoint(&m->etcd));
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

/* Where a change comes from, for the log: ?source=sql from rowgatectl sql. */
static const char *change_source(struct MHD_Connection *conn)
{
	const char *s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "source");

	return s && !strcmp(s, "sql") ? "sql" : "admin";
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
		if (rg_etcd_put_limit(&m->etcd, db, limit, err, sizeof(err))) {
			meta_etcd_error(m);
			return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "cannot store the limit: %s", err);
		}
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
	{
		char prev[24] = "none";

		if (existed)
			snprintf(prev, sizeof(prev), "%llu", (unsigned long long)old_limit);
		rg_event("limit_set", "db=%s rows_per_s=%llu previous=%s source=%s", db->name,
			 (unsigned long long)limit, prev, change_source(conn));
	}
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
		if (ret && ret != -ENOENT) {
			meta_etcd_error(m);
			return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "cannot remove the limit: %s", err);
		}
		rg_cluster_unset_limit(&m->cl, db);
	} else {
		rg_cluster_unset_limit(&m->cl, db);
		if (rg_state_save(m->cfg.state_file, &m->cl.limits, err, sizeof(err))) {
			rg_cluster_set_limit(&m->cl, db, old_limit);
			return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", err);
		}
	}
	rg_event("limit_unset", "db=%s previous=%llu source=%s", db->name,
		 (unsigned long long)old_limit, change_source(conn));
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
	return json_pack("{s:b, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "ok", 1, "strategy",
			 rg_alloc_strategy_name(m->cl.params.strategy), "learning",
			 rg_cluster_learning(&m->cl, now), "heartbeats",
			 rg_json_u64(m->cl.heartbeats), "heartbeats_learning",
			 rg_json_u64(m->cl.heartbeats_learning), "unauthorized",
			 rg_json_u64(m->unauthorized), "forbidden", rg_json_u64(m->forbidden),
			 "redirects", rg_json_u64(m->redirects),
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

	/* who may connect at all comes before any endpoint, /metrics included */
	if (rq->no_cert) {
		m->no_client_cert++;
		return send_error(conn, MHD_HTTP_FORBIDDEN,
				  "a client certificate signed by this replica's "
				  "--tls-client-ca is required: %s",
				  rq->cert_why);
	}
	/* Unauthenticated, like /v1/health: Prometheus scrapes it the way it
	 * scrapes etcd's client port, and giving it the bearer token would give
	 * it the power to change every cluster limit.  It shows limits, quotas
	 * and frontend names, which are not secrets; nothing it shows is
	 * enough to call another endpoint. */
	if (!strcmp(url, "/metrics")) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "%s is not allowed on /metrics", method);
		return send_metrics(conn, meta_metrics_render(m, now));
	}
	if (rg_meta_route_path(url, &r, err, sizeof(err)))
		return r.ep == RG_META_EP_NONE && !err[0] ?
			       send_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", url) :
			       send_error(conn, MHD_HTTP_BAD_REQUEST, "%s", err);
	if (!rg_meta_method_allowed(&r, method))
		return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed on %s",
				  method, url);
	if (r.ep == RG_META_EP_HEALTH)
		return send_json(conn, MHD_HTTP_OK, health_json(m, now), NULL);
	if (rq->role == ROLE_NONE) {
		m->unauthorized++;
		return send_error(conn, MHD_HTTP_UNAUTHORIZED,
				  "missing or wrong bearer token (Authorization: Bearer TOKEN)");
	}
	if (rq->role == ROLE_AGENT && !agent_may(&r, method)) {
		m->forbidden++;
		rg_event_limited("admin_refused", "method=%s path=%s reason=agent_token", method,
				 url);
		return send_error(conn, MHD_HTTP_FORBIDDEN,
				  "%s %s needs the admin token (rowgate-meta --admin-token-file): "
				  "this is an agent's token, which may heartbeat and read but "
				  "not change the cluster's limits",
				  method, url);
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
size_t meta_unescape_keep_nul(void *cls, struct MHD_Connection *conn, char *s)
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

enum MHD_Result meta_on_request(void *cls, struct MHD_Connection *conn, const char *url,
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
		 * used, so clients without the right token cost none */
		rq->role = request_role(m, conn);
		if (m->cfg.tls_client_ca &&
		    !meta_client_cert_ok(conn, rq->cert_why, sizeof(rq->cert_why))) {
			rq->no_cert = rq->refused = true;
		} else if (rq->role == ROLE_AGENT) {
			struct rg_meta_route r;
			char err[256];

			rq->refused = !rg_meta_route_path(url, &r, err, sizeof(err)) &&
				      !agent_may(&r, method);
		} else {
			rq->refused = rq->role == ROLE_NONE;
		}
		rq->too_big = cl && strtoull(cl, NULL, 10) > RG_META_BODY_MAX;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rq->refused)
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

void meta_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
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
