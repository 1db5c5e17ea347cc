// SPDX-License-Identifier: MIT
/* etcd v3 through its JSON gateway.  See etcd.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "etcd.h"
#include "../lib/http_client.h"
#include "../lib/limits.h"
#include "../lib/log.h"
#include "../lib/meta_proto.h"

#define KEY_MAX 512

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t rg_base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		out[o++] = b64[p[i] >> 2];
		out[o++] = b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		out[o++] = b64[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
		out[o++] = b64[p[i + 2] & 63];
	}
	if (i < n) {
		out[o++] = b64[p[i] >> 2];
		if (i + 1 < n) {
			out[o++] = b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			out[o++] = b64[(p[i + 1] & 15) << 2];
		} else {
			out[o++] = b64[(p[i] & 3) << 4];
			out[o++] = '=';
		}
		out[o++] = '=';
	}
	out[o] = 0;
	return o;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

long rg_base64_decode(const char *in, size_t len, void *out)
{
	unsigned char *o = out;
	size_t i, n = 0;
	int v[4];

	if (len % 4)
		return -1;
	for (i = 0; i < len; i += 4) {
		bool last = i + 4 == len;

		for (int k = 0; k < 4; k++) {
			v[k] = b64_value(in[i + k]);
			if (v[k] < 0 && !(last && k >= 2 && in[i + k] == '='))
				return -1;
		}
		if (v[2] < 0 && v[3] >= 0)
			return -1;
		o[n++] = (unsigned char)((v[0] << 2) | (v[1] >> 4));
		if (v[2] >= 0)
			o[n++] = (unsigned char)(((v[1] & 15) << 4) | (v[2] >> 2));
		if (v[3] >= 0)
			o[n++] = (unsigned char)(((v[2] & 3) << 6) | v[3]);
	}
	o[n] = 0;
	return (long)n;
}

int rg_etcd_init(struct rg_etcd *e, const char *urls, const char *prefix)
{
	char why[160], *copy, *save = NULL, *tok;
	int ret = 0;

	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->auth_lock, NULL);
	if (!prefix || !*prefix || strlen(prefix) >= sizeof(e->prefix))
		return -EINVAL;
	snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);
	copy = strdup(urls);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *ep = e->endpoints[e->nr_endpoints];
		size_t n;

		if ((strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) ||
		    strlen(tok) >= sizeof(e->endpoints[0]) ||
		    e->nr_endpoints == RG_ETCD_ENDPOINTS_MAX ||
		    rg_http_origins_add(&e->origins, tok, why, sizeof(why))) {
			ret = -EINVAL;
			break;
		}
		snprintf(ep, sizeof(e->endpoints[0]), "%s", tok);
		n = strlen(ep);
		while (n && ep[n - 1] == '/')
			ep[--n] = 0;
		e->nr_endpoints++;
	}
	free(copy);
	return ret ? ret : e->nr_endpoints ? 0 : -EINVAL;
}

const char *rg_etcd_endpoint(struct rg_etcd *e)
{
	return e->endpoints[__atomic_load_n(&e->cur, __ATOMIC_RELAXED)];
}

/* One POST to endpoint i; 0 with *res, or negative errno (nothing came). */
static int post(struct rg_etcd *e, int i, const char *api, json_t *body, bool with_token,
		struct rg_http_result *res, char *err, size_t errlen)
{
	char url[320], token[RG_ETCD_TOKEN_MAX] = "";
	struct rg_http_opts opts = {
		.connect_timeout_ms = RG_ETCD_CONNECT_TIMEOUT_MS,
		.timeout_ms = RG_ETCD_TIMEOUT_MS,
		.origins = &e->origins,
		.ca_file = e->ca_file,
		.cert_file = e->cert_file,
		.key_file = e->key_file,
	};

	if (with_token) {
		pthread_mutex_lock(&e->auth_lock);
		memcpy(token, e->token, sizeof(token));
		pthread_mutex_unlock(&e->auth_lock);
		/* etcd's gateway takes the bare token, no scheme */
		opts.authorization = token;
	}
	snprintf(url, sizeof(url), "%s/v3/%s", e->endpoints[i], api);
	return rg_http_json("POST", url, body, &opts, res, err, errlen);
}

static const char *error_text(const json_t *reply)
{
	const char *msg = json_string_value(json_object_get(reply, "error"));

	return msg ? msg : json_string_value(json_object_get(reply, "message"));
}

/* /v3/auth/authenticate at endpoint i: the token into e->token. */
static int authenticate_at(struct rg_etcd *e, int i, char *err, size_t errlen)
{
	json_t *body = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
	struct rg_http_result res;
	const char *token;
	int ret;

	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = post(e, i, "auth/authenticate", body, false, &res, err, errlen);
	json_decref(body);
	if (ret)
		return ret;
	token = json_string_value(json_object_get(res.reply, "token"));
	if (res.status != 200 || !token || strlen(token) >= RG_ETCD_TOKEN_MAX) {
		const char *msg = error_text(res.reply);

		snprintf(err, errlen, "etcd refused user '%s' (%ld%s%s)", e->user, res.status,
			 msg ? ": " : "", msg ? msg : "");
		/* only a refusal of these credentials is final */
		ret = msg && strstr(msg, "authentication failed") ? -EACCES : -EIO;
	} else {
		pthread_mutex_lock(&e->auth_lock);
		snprintf(e->token, sizeof(e->token), "%s", token);
		pthread_mutex_unlock(&e->auth_lock);
	}
	rg_http_result_free(&res);
	return ret;
}

/* etcd no longer takes our token (expired, or etcd restarted) or got none */
static bool auth_expired(const struct rg_http_result *res)
{
	const char *msg = error_text(res->reply);

	return res->status == 401 ||
	       (msg && (strstr(msg, "auth token") || strstr(msg, "user name is empty")));
}

/* POST body to /v3/<api>, endpoints in turn from the last that answered;
 * returns the JSON reply (caller frees) or NULL with err set.  body is
 * consumed. */
static json_t *call(struct rg_etcd *e, const char *api, json_t *body, char *err,
		    size_t errlen)
{
	json_t *reply = NULL;
	bool reauthed = false;

	if (!body) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
again:
	for (int k = 0, start = __atomic_load_n(&e->cur, __ATOMIC_RELAXED);
	     k < e->nr_endpoints; k++) {
		int i = (start + k) % e->nr_endpoints;
		struct rg_http_result res;

		/* nothing came back: the next member */
		if (post(e, i, api, body, e->user != NULL, &res, err, errlen))
			continue;
		__atomic_store_n(&e->cur, i, __ATOMIC_RELAXED);
		if (res.status == 200 && json_is_object(res.reply)) {
			reply = json_incref(res.reply);
		} else if (e->user && !reauthed && auth_expired(&res)) {
			rg_http_result_free(&res);
			reauthed = true;
			if (authenticate_at(e, i, err, errlen) == 0)
				goto again;
			break;
		} else {
			const char *msg = error_text(res.reply);

			snprintf(err, errlen, "etcd %s answered %ld%s%s", api, res.status,
				 msg ? ": " : "", msg ? msg : "");
		}
		rg_http_result_free(&res);
		break; /* an answer, good or bad: not a failover matter */
	}
	json_decref(body);
	return reply;
}

int rg_etcd_set_auth(struct rg_etcd *e, const char *user, const char *password_file, char *err,
		     size_t errlen)
{
	char why[300];
	int ret = -EIO;

	if (rg_meta_read_token(password_file, e->password, sizeof(e->password), why,
			       sizeof(why))) {
		snprintf(err, errlen, "--etcd-password-file: %s", why);
		return -EINVAL;
	}
	e->user = user;
	for (int i = 0; i < e->nr_endpoints; i++) {
		ret = authenticate_at(e, i, err, errlen);
		if (ret != -ECONNREFUSED && ret != -ETIMEDOUT && ret != -EIO)
			break;
	}
	return ret;
}

static json_t *b64_string(const char *s, size_t n)
{
	char out[4 * ((KEY_MAX + 2) / 3) + 1];

	if (n > KEY_MAX)
		return NULL;
	rg_base64_encode(s, n, out);
	return json_string(out);
}

static void limit_key(const struct rg_etcd *e, const struct rg_db_key *db, char *key,
		      size_t len)
{
	snprintf(key, len, "%slimits/%s", e->prefix, db->name);
}

/* int64 fields come as strings ("123"); absent means 0. */
static __s64 get_s64(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	if (json_is_integer(v))
		return json_integer_value(v);
	return 0;
}

int rg_etcd_put_limit(struct rg_etcd *e, const struct rg_db_key *db, __u64 limit,
		      char *err, size_t errlen)
{
	char key[KEY_MAX], val[24];
	json_t *reply;

	limit_key(e, db, key, sizeof(key));
	snprintf(val, sizeof(val), "%llu", (unsigned long long)limit);
	reply = call(e, "kv/put",
		     json_pack("{s:o, s:o}", "key", b64_string(key, strlen(key)), "value",
			       b64_string(val, strlen(val))),
		     err, errlen);
	if (!reply)
		return -EIO;
	json_decref(reply);
	return 0;
}

int rg_etcd_delete_limit(struct rg_etcd *e, const struct rg_db_key *db, char *err,
			 size_t errlen)
{
	char key[KEY_MAX];
	json_t *reply;
	__s64 deleted;

	limit_key(e, db, key, sizeof(key));
	reply = call(e, "kv/deleterange",
		     json_pack("{s:o}", "key", b64_string(key, strlen(key))), err, errlen);
	if (!reply)
		return -EIO;
	deleted = get_s64(reply, "deleted");
	json_decref(reply);
	if (!deleted) {
		snprintf(err, errlen, "database '%s' has no limit", db->name);
		return -ENOENT;
	}
	return 0;
}

/* The smallest key after every key that starts with prefix. */
static void prefix_end(const char *prefix, char *end, size_t len)
{
	size_t n = strlen(prefix);

	snprintf(end, len, "%s", prefix);
	if (n && n < len)
		end[n - 1] = (char)(end[n - 1] + 1);
}

int rg_etcd_load_limits(struct rg_etcd *e, struct rg_limit_list *list, char *err,
			size_t errlen)
{
	char start[KEY_MAX], end[KEY_MAX], key[KEY_MAX + 4], val[64], why[160];
	size_t plen, i;
	json_t *reply, *kv;
	struct rg_db_key db;
	__u64 limit;

	snprintf(start, sizeof(start), "%slimits/", e->prefix);
	prefix_end(start, end, sizeof(end));
	plen = strlen(start);
	reply = call(e, "kv/range",
		     json_pack("{s:o, s:o}", "key", b64_string(start, strlen(start)), "range_end",
			       b64_string(end, strlen(end))),
		     err, errlen);
	if (!reply)
		return -EIO;
	json_array_foreach(json_object_get(reply, "kvs"), i, kv) {
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(kv, "value"));
		long klen, vlen;

		if (!k || strlen(k) > 4 * KEY_MAX / 3 || (v && strlen(v) > 4 * (sizeof(val) - 1) / 3))
			continue;
		klen = rg_base64_decode(k, strlen(k), key);
		vlen = v ? rg_base64_decode(v, strlen(v), val) : 0;
		if (klen < (long)plen || vlen < 0 ||
		    rg_parse_db_name(key + plen, &db, why, sizeof(why)) ||
		    rg_parse_limit(val, &limit, why, sizeof(why))) {
			pr_warn("etcd: skipping a malformed limit under %s", start);
			continue;
		}
		if (rg_limit_list_set(list, &db, limit)) {
			json_decref(reply);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	json_decref(reply);
	return 0;
}

int rg_etcd_lease_grant(struct rg_etcd *e, __u64 ttl_s, __s64 *id, char *err,
			size_t errlen)
{
	char ttl[24];
	json_t *reply;

	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)ttl_s);
	reply = call(e, "lease/grant", json_pack("{s:s}", "TTL", ttl), err, errlen);
	if (!reply)
		return -EIO;
	*id = get_s64(reply, "ID");
	json_decref(reply);
	if (*id == 0) {
		snprintf(err, errlen, "etcd granted no lease");
		return -EIO;
	}
	return 0;
}

int rg_etcd_lease_keepalive(struct rg_etcd *e, __s64 id, char *err, size_t errlen)
{
	char ids[24];
	json_t *reply;
	__s64 ttl;

	snprintf(ids, sizeof(ids), "%lld", (long long)id);
	reply = call(e, "lease/keepalive", json_pack("{s:s}", "ID", ids), err, errlen);
	if (!reply)
		return -EIO;
	/* a stream of one message: {"result":{"ID":..,"TTL":..}}; no TTL = gone */
	ttl = get_s64(json_object_get(reply, "result"), "TTL");
	json_decref(reply);
	if (ttl <= 0) {
		snprintf(err, errlen, "the etcd lease %lld has expired", (long long)id);
		return -ENOENT;
	}
	return 0;
}

int rg_etcd_lease_revoke(struct rg_etcd *e, __s64 id, char *err, size_t errlen)
{
	char ids[24];
	json_t *reply;

	snprintf(ids, sizeof(ids), "%lld", (long long)id);
	reply = call(e, "lease/revoke", json_pack("{s:s}", "ID", ids), err, errlen);
	if (!reply)
		return -EIO;
	json_decref(reply);
	return 0;
}

int rg_etcd_campaign(struct rg_etcd *e, __s64 lease, const char *me, bool *leader,
		     char *leader_url, size_t urllen, char *err, size_t errlen)
{
	char key[KEY_MAX], ids[24], val[4 * 256 / 3 + 4];
	const json_t *kv;
	json_t *reply, *req;
	const char *v;
	long n;

	snprintf(key, sizeof(key), "%sleader", e->prefix);
	snprintf(ids, sizeof(ids), "%lld", (long long)lease);
	req = json_pack("{s:[{s:o, s:s, s:s, s:s}], s:[{s:{s:o, s:o, s:s}}], s:[{s:{s:o}}]}",
			"compare", "key", b64_string(key, strlen(key)), "target", "CREATE",
			"create_revision", "0", "result", "EQUAL", "success", "request_put", "key",
			b64_string(key, strlen(key)), "value", b64_string(me, strlen(me)), "lease",
			ids, "failure", "request_range", "key", b64_string(key, strlen(key)));
	reply = call(e, "kv/txn", req, err, errlen);
	if (!reply)
		return -EIO;
	*leader = false;
	leader_url[0] = 0;
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		*leader = true;
		snprintf(leader_url, urllen, "%s", me);
		json_decref(reply);
		return 0;
	}
	kv = json_array_get(json_object_get(json_object_get(
					    json_array_get(json_object_get(reply, "responses"), 0),
					    "response_range"),
				    "kvs"),
			    0);
	v = json_string_value(json_object_get(kv, "value"));
	if (kv && v && strlen(v) < sizeof(val) * 3 / 4 && strlen(v) <= 4 * (urllen - 1) / 3) {
		n = rg_base64_decode(v, strlen(v), val);
		if (n > 0 && (size_t)n < urllen)
			snprintf(leader_url, urllen, "%s", val);
		/* the key bound to our own lease: we created it earlier */
		*leader = get_s64(kv, "lease") == lease;
	}
	json_decref(reply);
	return 0;
}
