// SPDX-License-Identifier: MIT
/* rowgate-meta protocol messages: pure JSON encode/decode.  See meta_proto.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_proto.h"
#include "limits.h"
#include "state.h"

static bool node_id_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == ':' || c == '-';
}

int rg_meta_parse_node_id(const char *s, char *out, char *err, size_t errlen)
{
	char quoted[96];
	size_t len, i;

	if (!s || !*s) {
		snprintf(err, errlen, "the node id is empty");
		return -EINVAL;
	}
	len = strlen(s);
	rg_quote_input(s, quoted, sizeof(quoted));
	if (len >= RG_META_NODE_ID_MAX) {
		snprintf(err, errlen, "node id '%s' is too long: at most %d bytes", quoted,
			 RG_META_NODE_ID_MAX - 1);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (!node_id_char((unsigned char)s[i])) {
			snprintf(err, errlen,
				 "invalid node id '%s': only letters, digits and _ . : - are allowed",
				 quoted);
			return -EINVAL;
		}
	}
	memcpy(out, s, len + 1);
	return 0;
}

/* A required u64 member; fails with a message naming it. */
static int get_u64(const json_t *obj, const char *key, __u64 *out, bool required, char *err,
		   size_t errlen)
{
	const json_t *v = json_object_get(obj, key);

	if (!v && !required) {
		*out = 0;
		return 0;
	}
	if (!v || rg_json_get_u64(v, out)) {
		snprintf(err, errlen, "\"%s\" %s", key,
			 v ? "must be a non-negative integer (or a string of digits)" : "is missing");
		return -EINVAL;
	}
	return 0;
}

static int get_db(const json_t *obj, struct rg_db_key *db, char *err, size_t errlen)
{
	const char *name = json_string_value(json_object_get(obj, "db"));

	if (!name) {
		snprintf(err, errlen, "\"db\" is missing or not a string");
		return -EINVAL;
	}
	return rg_parse_db_name(name, db, err, errlen);
}

static int set_u64(json_t *obj, const char *key, __u64 v)
{
	return json_object_set_new(obj, key, rg_json_u64(v));
}

json_t *rg_meta_hb_req_encode(const struct rg_meta_hb_req *req)
{
	json_t *obj = json_object(), *arr = json_array(), *d;
	size_t i;

	if (!obj || !arr)
		goto nomem;
	if (json_object_set_new(obj, "node_id", json_string(req->node_id)) ||
	    set_u64(obj, "interval_ms", req->interval_ms))
		goto nomem;
	for (i = 0; i < req->count; i++) {
		const struct rg_meta_hb_db *e = &req->dbs[i];

		d = json_object();
		if (!d || json_array_append_new(arr, d))
			goto nomem;
		if (json_object_set_new(d, "db", json_string(e->db.name)) ||
		    set_u64(d, "admitted_rows_per_s", e->admitted_rows_per_s) ||
		    set_u64(d, "rejected_rows_per_s", e->rejected_rows_per_s) ||
		    set_u64(d, "debt_rows", e->debt_rows) ||
		    set_u64(d, "quota_rows_per_s", e->quota_rows_per_s))
			goto nomem;
	}
	if (json_object_set_new(obj, "databases", arr))
		goto nomem_obj;
	return obj;
nomem:
	json_decref(arr);
nomem_obj:
	json_decref(obj);
	return NULL;
}

void rg_meta_hb_req_free(struct rg_meta_hb_req *req)
{
	free(req->dbs);
	req->dbs = NULL;
	req->count = 0;
}

static int cmp_db_key(const void *a, const void *b)
{
	return strncmp(((const struct rg_db_key *)a)->name, ((const struct rg_db_key *)b)->name,
		       RG_DB_NAME_MAX);
}

/* Sort entries by name (their first member is the key) and refuse repeats. */
static int sort_unique(void *base, size_t count, size_t size, char *err, size_t errlen)
{
	size_t i;

	qsort(base, count, size, cmp_db_key);
	for (i = 1; i < count; i++) {
		const struct rg_db_key *a = (const void *)((char *)base + (i - 1) * size);
		const struct rg_db_key *b = (const void *)((char *)base + i * size);

		if (!cmp_db_key(a, b)) {
			snprintf(err, errlen, "database '%s' is listed twice", a->name);
			return -EINVAL;
		}
	}
	return 0;
}

int rg_meta_hb_req_decode(const json_t *obj, struct rg_meta_hb_req *req, char *err,
			  size_t errlen)
{
	const json_t *arr, *d;
	char sub[192];
	size_t i;
	int ret;

	memset(req, 0, sizeof(*req));
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "a heartbeat must be a JSON object");
		return -EINVAL;
	}
	if (!json_is_string(json_object_get(obj, "node_id"))) {
		snprintf(err, errlen, "\"node_id\" is missing or not a string");
		return -EINVAL;
	}
	ret = rg_meta_parse_node_id(json_string_value(json_object_get(obj, "node_id")),
				    req->node_id, err, errlen);
	if (ret)
		return ret;
	ret = get_u64(obj, "interval_ms", &req->interval_ms, false, err, errlen);
	if (ret)
		return ret;
	arr = json_object_get(obj, "databases");
	if (!arr) /* a frontend that enforces nothing yet */
		return 0;
	if (!json_is_array(arr)) {
		snprintf(err, errlen, "\"databases\" must be an array");
		return -EINVAL;
	}
	if (json_array_size(arr) > RG_MAX_DATABASES) {
		snprintf(err, errlen, "a heartbeat lists at most %d databases", RG_MAX_DATABASES);
		return -E2BIG;
	}
	req->dbs = calloc(json_array_size(arr) + 1, sizeof(req->dbs[0]));
	if (!req->dbs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(arr, i, d) {
		struct rg_meta_hb_db *e = &req->dbs[i];

		if (!json_is_object(d)) {
			snprintf(err, errlen, "databases[%zu] must be an object", i);
			return -EINVAL;
		}
		if ((ret = get_db(d, &e->db, sub, sizeof(sub))) ||
		    (ret = get_u64(d, "admitted_rows_per_s", &e->admitted_rows_per_s, true, sub,
				   sizeof(sub))) ||
		    (ret = get_u64(d, "rejected_rows_per_s", &e->rejected_rows_per_s, true, sub,
				   sizeof(sub))) ||
		    (ret = get_u64(d, "debt_rows", &e->debt_rows, false, sub, sizeof(sub))) ||
		    (ret = get_u64(d, "quota_rows_per_s", &e->quota_rows_per_s, false, sub,
				   sizeof(sub)))) {
			snprintf(err, errlen, "databases[%zu]: %s", i, sub);
			return ret;
		}
		req->count++;
	}
	return sort_unique(req->dbs, req->count, sizeof(req->dbs[0]), err, errlen);
}

json_t *rg_meta_hb_reply_encode(const struct rg_meta_hb_reply *reply)
{
	json_t *obj = json_object(), *arr = json_array(), *d;
	size_t i;

	if (!obj || !arr)
		goto nomem;
	if (json_object_set_new(obj, "ok", json_true()) ||
	    set_u64(obj, "lease_ms", reply->lease_ms) ||
	    set_u64(obj, "heartbeat_interval_ms", reply->heartbeat_interval_ms) ||
	    json_object_set_new(obj, "learning", json_boolean(reply->learning)))
		goto nomem;
	for (i = 0; i < reply->count; i++) {
		const struct rg_meta_hb_grant *g = &reply->dbs[i];

		d = json_object();
		if (!d || json_array_append_new(arr, d))
			goto nomem;
		if (json_object_set_new(d, "db", json_string(g->db.name)) ||
		    set_u64(d, "limit", g->limit_rows_per_s) ||
		    set_u64(d, "quota", g->quota_rows_per_s))
			goto nomem;
	}
	if (json_object_set_new(obj, "databases", arr))
		goto nomem_obj;
	return obj;
nomem:
	json_decref(arr);
nomem_obj:
	json_decref(obj);
	return NULL;
}

void rg_meta_hb_reply_free(struct rg_meta_hb_reply *reply)
{
	free(reply->dbs);
	reply->dbs = NULL;
	reply->count = 0;
}

int rg_meta_hb_reply_decode(const json_t *obj, struct rg_meta_hb_reply *reply, char *err,
			    size_t errlen)
{
	const json_t *arr, *d;
	char sub[192];
	size_t i;
	int ret;

	memset(reply, 0, sizeof(*reply));
	if (!json_is_object(obj) || !json_is_true(json_object_get(obj, "ok"))) {
		const char *msg = json_string_value(json_object_get(obj, "error"));

		snprintf(err, errlen, "%s", msg ? msg : "the reply is not {\"ok\":true,...}");
		return -EINVAL;
	}
	if ((ret = get_u64(obj, "lease_ms", &reply->lease_ms, true, err, errlen)) ||
	    (ret = get_u64(obj, "heartbeat_interval_ms", &reply->heartbeat_interval_ms, true, err,
			   errlen)))
		return ret;
	if (reply->lease_ms == 0 || reply->heartbeat_interval_ms == 0) {
		snprintf(err, errlen, "\"lease_ms\" and \"heartbeat_interval_ms\" must be > 0");
		return -EINVAL;
	}
	reply->learning = json_is_true(json_object_get(obj, "learning"));
	arr = json_object_get(obj, "databases");
	if (!json_is_array(arr)) {
		snprintf(err, errlen, "\"databases\" is missing or not an array");
		return -EINVAL;
	}
	if (json_array_size(arr) > RG_MAX_DATABASES) {
		snprintf(err, errlen, "a reply lists at most %d databases", RG_MAX_DATABASES);
		return -E2BIG;
	}
	reply->dbs = calloc(json_array_size(arr) + 1, sizeof(reply->dbs[0]));
	if (!reply->dbs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(arr, i, d) {
		struct rg_meta_hb_grant *g = &reply->dbs[i];

		if (!json_is_object(d)) {
			snprintf(err, errlen, "databases[%zu] must be an object", i);
			return -EINVAL;
		}
		if ((ret = get_db(d, &g->db, sub, sizeof(sub))) ||
		    (ret = get_u64(d, "limit", &g->limit_rows_per_s, true, sub, sizeof(sub))) ||
		    (ret = get_u64(d, "quota", &g->quota_rows_per_s, false, sub, sizeof(sub)))) {
			snprintf(err, errlen, "databases[%zu]: %s", i, sub);
			return ret;
		}
		reply->count++;
	}
	return sort_unique(reply->dbs, reply->count, sizeof(reply->dbs[0]), err, errlen);
}

int rg_meta_limit_body_decode(const json_t *obj, __u64 *limit, char *err, size_t errlen)
{
	const json_t *v = json_object_get(obj, "limit");

	if (!json_is_object(obj) || !v) {
		snprintf(err, errlen, "the body must be {\"limit\":\"N\"}");
		return -EINVAL;
	}
	if (json_is_string(v))
		return rg_parse_limit(json_string_value(v), limit, err, errlen);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*limit = (__u64)json_integer_value(v);
		return 0;
	}
	snprintf(err, errlen, "\"limit\" must be a string of digits (0 disables)");
	return -EINVAL;
}

/* "/v1/limits" or "/v1/limits/DB"; returns the rest after prefix or NULL. */
static const char *match_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n))
		return NULL;
	if (path[n] == 0 || path[n] == '/')
		return path + n;
	return NULL;
}

int rg_meta_route_path(const char *path, struct rg_meta_route *r, char *err, size_t errlen)
{
	static const struct {
		const char *prefix;
		enum rg_meta_endpoint ep;
		bool takes_db;
	} table[] = {
		{ RG_META_API_HEALTH, RG_META_EP_HEALTH, false },
		{ RG_META_API_HEARTBEAT, RG_META_EP_HEARTBEAT, false },
		{ RG_META_API_LIMITS, RG_META_EP_LIMITS, true },
		{ RG_META_API_STATUS, RG_META_EP_STATUS, true },
	};
	const char *rest;
	size_t i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		rest = match_prefix(path, table[i].prefix);
		if (!rest)
			continue;
		if (*rest == '/' && rest[1] == 0)
			rest++; /* a trailing slash names no database */
		if (*rest == 0) {
			r->ep = table[i].ep;
			return 0;
		}
		if (!table[i].takes_db || strchr(rest + 1, '/'))
			return -ENOENT;
		if (rg_parse_db_name(rest + 1, &r->db, err, errlen))
			return -EINVAL;
		r->ep = table[i].ep;
		r->has_db = true;
		return 0;
	}
	return -ENOENT;
}

bool rg_meta_method_allowed(const struct rg_meta_route *r, const char *method)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	switch (r->ep) {
	case RG_META_EP_HEALTH:
	case RG_META_EP_STATUS:
		return get;
	case RG_META_EP_HEARTBEAT:
		return !strcmp(method, "POST");
	case RG_META_EP_LIMITS:
		if (!r->has_db)
			return get;
		return get || !strcmp(method, "PUT") || !strcmp(method, "DELETE");
	default:
		return false;
	}
}

bool rg_meta_bearer_ok(const char *header, const char *token)
{
	static const char scheme[] = "Bearer ";
	size_t tlen, hlen, i;
	unsigned char diff = 0;

	if (!token || !*token)
		return true;
	if (!header || strncasecmp(header, scheme, sizeof(scheme) - 1))
		return false;
	header += sizeof(scheme) - 1;
	while (*header == ' ')
		header++;
	hlen = strlen(header);
	while (hlen && (header[hlen - 1] == ' ' || header[hlen - 1] == '\t'))
		hlen--;
	tlen = strlen(token);
	/* compare every byte of the token whatever the header holds */
	for (i = 0; i < tlen; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < hlen ? header[i] : 0);
	return diff == 0 && hlen == tlen;
}

int rg_meta_read_token(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char line[RG_META_TOKEN_MAX + 2], *start, *end;
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f) {
		snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	start = line;
	while (*start && isspace((unsigned char)*start))
		start++;
	end = start + strlen(start);
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	*end = 0;
	len = (size_t)(end - start);
	if (len == 0) {
		snprintf(err, errlen, "the token file %s is empty", path);
		return -EINVAL;
	}
	if (len >= outlen || len >= RG_META_TOKEN_MAX) {
		snprintf(err, errlen, "the token in %s is too long: at most %d bytes", path,
			 RG_META_TOKEN_MAX - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)start[i] < 0x21 || (unsigned char)start[i] > 0x7e) {
			snprintf(err, errlen,
				 "the token in %s must be printable ASCII without spaces", path);
			return -EINVAL;
		}
	}
	memcpy(out, start, len + 1);
	return 0;
}

json_t *rg_meta_error_json(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}
