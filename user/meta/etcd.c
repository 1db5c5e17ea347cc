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

int rg_etcd_init(struct rg_etcd *e, const char *url, const char *prefix)
{
	char why[160];
	size_t n;

	memset(e, 0, sizeof(*e));
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return -EINVAL;
	if (!prefix || !*prefix || strlen(prefix) >= sizeof(e->prefix) ||
	    strlen(url) >= sizeof(e->endpoint))
		return -EINVAL;
	snprintf(e->endpoint, sizeof(e->endpoint), "%s", url);
	n = strlen(e->endpoint);
	while (n && e->endpoint[n - 1] == '/')
		e->endpoint[--n] = 0;
	snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);
	if (rg_http_origins_add(&e->origins, e->endpoint, why, sizeof(why)))
		return -EINVAL;
	return 0;
}

/* POST body to /v3/<call>; returns the JSON reply (caller frees) or NULL. */
static json_t *call(const struct rg_etcd *e, const char *api, json_t *body, char *err,
		    size_t errlen)
{
	const struct rg_http_opts opts = {
		.connect_timeout_ms = RG_ETCD_CONNECT_TIMEOUT_MS,
		.timeout_ms = RG_ETCD_TIMEOUT_MS,
		.origins = &e->origins,
	};
	struct rg_http_result res;
	char url[320];
	json_t *reply = NULL;

	snprintf(url, sizeof(url), "%s/v3/%s", e->endpoint, api);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (rg_http_json("POST", url, body, &opts, &res, err, errlen) == 0) {
		if (res.status == 200 && json_is_object(res.reply)) {
			reply = json_incref(res.reply);
		} else {
			const char *msg = json_string_value(json_object_get(res.reply, "error"));

			if (!msg)
				msg = json_string_value(json_object_get(res.reply, "message"));
			snprintf(err, errlen, "etcd %s answered %ld%s%s", api, res.status,
				 msg ? ": " : "", msg ? msg : "");
		}
		rg_http_result_free(&res);
	}
	json_decref(body);
	return reply;
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

int rg_etcd_put_limit(const struct rg_etcd *e, const struct rg_db_key *db, __u64 limit,
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

int rg_etcd_delete_limit(const struct rg_etcd *e, const struct rg_db_key *db, char *err,
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

int rg_etcd_load_limits(const struct rg_etcd *e, struct rg_limit_list *list, char *err,
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

int rg_etcd_lease_grant(const struct rg_etcd *e, __u64 ttl_s, __s64 *id, char *err,
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

int rg_etcd_lease_keepalive(const struct rg_etcd *e, __s64 id, char *err, size_t errlen)
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

int rg_etcd_lease_revoke(const struct rg_etcd *e, __s64 id, char *err, size_t errlen)
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

int rg_etcd_campaign(const struct rg_etcd *e, __s64 lease, const char *me, bool *leader,
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
