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

/* One entry of a "databases" array: @d is its JSON object. */
typedef int (*db_encode_fn)(json_t *d, const void *entry);
/* Fills @entry from @d; @err names the member at fault. */
typedef int (*db_decode_fn)(const json_t *d, void *entry, char *err, size_t errlen);

/*
 * The "databases" member of @obj: an object per entry of @dbs (@count of
 * @size bytes, each starting with its struct rg_db_key), "db" first.
 */
static int encode_dbs(json_t *obj, const void *dbs, size_t count, size_t size, db_encode_fn encode)
{
	json_t *arr = json_array(), *d;
	size_t i;

	if (!arr)
		return -1;
	for (i = 0; i < count; i++) {
		const void *entry = (const char *)dbs + i * size;

		d = json_object();
		if (!d || json_array_append_new(arr, d) ||
		    json_object_set_new(d, "db",
					json_string(((const struct rg_db_key *)entry)->name)) ||
		    encode(d, entry)) {
			json_decref(arr);
			return -1;
		}
	}
	return json_object_set_new(obj, "databases", arr);
}

/*
 * A "databases" array into *@dbs (calloc'd, freed by the caller even on
 * failure), @count counting the entries decoded, sorted and unique by name;
 * @what names the message in the error for a long array.
 */
static int decode_dbs(const json_t *arr, const char *what, void **dbs, size_t *count, size_t size,
		      db_decode_fn decode, char *err, size_t errlen)
{
	const json_t *d;
	char sub[192];
	size_t i;
	int ret;

	if (json_array_size(arr) > RG_MAX_DATABASES) {
		snprintf(err, errlen, "a %s lists at most %d databases", what, RG_MAX_DATABASES);
		return -E2BIG;
	}
	/* + 1: calloc(0) may return NULL */
	*dbs = calloc(json_array_size(arr) + 1, size);
	if (!*dbs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(arr, i, d) {
		void *entry = (char *)*dbs + i * size;

		if (!json_is_object(d)) {
			snprintf(err, errlen, "databases[%zu] must be an object", i);
			return -EINVAL;
		}
		ret = get_db(d, entry, sub, sizeof(sub));
		if (!ret)
			ret = decode(d, entry, sub, sizeof(sub));
		if (ret) {
			snprintf(err, errlen, "databases[%zu]: %s", i, sub);
			return ret;
		}
		(*count)++;
	}
	return sort_unique(*dbs, *count, size, err, errlen);
}

static int hb_db_encode(json_t *d, const void *entry)
{
	const struct rg_meta_hb_db *e = entry;

	return set_u64(d, "admitted_rows_per_s", e->admitted_rows_per_s) ||
	       set_u64(d, "rejected_rows_per_s", e->rejected_rows_per_s) ||
	       set_u64(d, "debt_rows", e->debt_rows) ||
	       set_u64(d, "quota_rows_per_s", e->quota_rows_per_s);
}

static int hb_db_decode(const json_t *d, void *entry, char *err, size_t errlen)
{
	struct rg_meta_hb_db *e = entry;
	int ret;

	if ((ret = get_u64(d, "admitted_rows_per_s", &e->admitted_rows_per_s, true, err, errlen)) ||
	    (ret = get_u64(d, "rejected_rows_per_s", &e->rejected_rows_per_s, true, err, errlen)) ||
	    (ret = get_u64(d, "debt_rows", &e->debt_rows, false, err, errlen)) ||
	    (ret = get_u64(d, "quota_rows_per_s", &e->quota_rows_per_s, false, err, errlen)))
		return ret;
	return 0;
}

static int hb_grant_encode(json_t *d, const void *entry)
{
	const struct rg_meta_hb_grant *g = entry;

	return set_u64(d, "limit", g->limit_rows_per_s) || set_u64(d, "quota", g->quota_rows_per_s);
}

static int hb_grant_decode(const json_t *d, void *entry, char *err, size_t errlen)
{
	struct rg_meta_hb_grant *g = entry;
	int ret;

	if ((ret = get_u64(d, "limit", &g->limit_rows_per_s, true, err, errlen)) ||
	    (ret = get_u64(d, "quota", &g->quota_rows_per_s, false, err, errlen)))
		return ret;
	return 0;
}

json_t *rg_meta_hb_req_encode(const struct rg_meta_hb_req *req)
{
	json_t *obj = json_object();

	if (!obj)
		return NULL;
	if (json_object_set_new(obj, "node_id", json_string(req->node_id)) ||
	    set_u64(obj, "interval_ms", req->interval_ms) ||
	    encode_dbs(obj, req->dbs, req->count, sizeof(req->dbs[0]), hb_db_encode)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

int rg_meta_hb_req_decode(const json_t *obj, struct rg_meta_hb_req *req, char *err, size_t errlen)
{
	const json_t *arr;
	void *dbs = NULL;
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
	ret = decode_dbs(arr, "heartbeat", &dbs, &req->count, sizeof(req->dbs[0]), hb_db_decode,
			 err, errlen);
	req->dbs = dbs;
	return ret;
}

json_t *rg_meta_hb_reply_encode(const struct rg_meta_hb_reply *reply)
{
	json_t *obj = json_object();

	if (!obj)
		return NULL;
	if (json_object_set_new(obj, "ok", json_true()) ||
	    set_u64(obj, "lease_ms", reply->lease_ms) ||
	    set_u64(obj, "heartbeat_interval_ms", reply->heartbeat_interval_ms) ||
	    json_object_set_new(obj, "learning", json_boolean(reply->learning)) ||
	    encode_dbs(obj, reply->dbs, reply->count, sizeof(reply->dbs[0]), hb_grant_encode)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
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
	const json_t *arr;
	void *dbs = NULL;
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
	ret = decode_dbs(arr, "reply", &dbs, &reply->count, sizeof(reply->dbs[0]), hb_grant_decode,
			 err, errlen);
	reply->dbs = dbs;
	return ret;
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
