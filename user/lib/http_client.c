// SPDX-License-Identifier: MIT
/* JSON-over-HTTP calls with libcurl.  See http_client.h. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http_client.h"

struct buf {
	char *data;
	size_t len;
	bool too_big;
};

int rg_http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct buf *b = userdata;
	size_t n = size * nmemb;
	char *p;

	if (b->len + n > RG_HTTP_REPLY_MAX) {
		b->too_big = true;
		return 0; /* aborts the transfer */
	}
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->data = p;
	b->len += n;
	b->data[b->len] = 0;
	return n;
}

int rg_http_origin(const char *url, char *out, size_t outlen)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	CURLU *u = curl_url();
	int ret = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
		for (char *p = scheme; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		for (char *p = host; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if ((!strcmp(scheme, "http") || !strcmp(scheme, "https")) &&
		    (size_t)snprintf(out, outlen, "%s://%s:%s", scheme, host, port) < outlen)
			ret = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return ret;
}

int rg_http_origins_add(struct rg_http_origins *o, const char *url, char *err, size_t errlen)
{
	char origin[RG_HTTP_ORIGIN_MAX];

	if (rg_http_origin(url, origin, sizeof(origin))) {
		snprintf(err, errlen, "'%s' is not an http:// or https:// URL", url);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->v[i], origin))
			return 0;
	if (o->n == RG_HTTP_ORIGINS_MAX) {
		snprintf(err, errlen, "at most %d URLs", RG_HTTP_ORIGINS_MAX);
		return -E2BIG;
	}
	memcpy(o->v[o->n++], origin, sizeof(origin));
	return 0;
}

static bool origin_allowed(const struct rg_http_origins *o, const char *origin)
{
	for (size_t i = 0; o && i < o->n; i++)
		if (!strcmp(o->v[i], origin))
			return true;
	return false;
}

/* Why a transfer failed, with a hint for certificate problems. */
static void transfer_error(const char *url, CURLcode rc, const char *errbuf,
			   const struct rg_http_opts *o, char *err, size_t errlen)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		snprintf(err, errlen, "%s: the server's certificate is not trusted (%s): %s", url,
			 o->ca_file ? o->ca_file : "the system's CAs", why);
		break;
	case CURLE_SSL_CERTPROBLEM:
		snprintf(err, errlen, "%s: cannot use the client certificate %s / key %s: %s", url,
			 o->cert_file ? o->cert_file : "-", o->key_file ? o->key_file : "-", why);
		break;
	case CURLE_SSL_CACERT_BADFILE:
		snprintf(err, errlen, "%s: cannot read the CA file %s: %s", url,
			 o->ca_file ? o->ca_file : "-", why);
		break;
	default:
		snprintf(err, errlen, "%s: %s", url, why);
	}
}

int rg_http_json(const char *method, const char *url, const json_t *body,
		 const struct rg_http_opts *o, struct rg_http_result *res, char *err,
		 size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE] = "", *text = NULL, *auth = NULL, *cur = NULL;
	struct curl_slist *headers = NULL;
	struct buf b = {};
	CURLcode rc;
	CURL *c;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	c = curl_easy_init();
	cur = strdup(url);
	if (!c || !cur) {
		snprintf(err, errlen, "cannot initialise libcurl");
		ret = -ENOMEM;
		goto out;
	}
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		headers = curl_slist_append(headers, "Content-Type: application/json");
	}
	headers = curl_slist_append(headers, "Accept: application/json");
	/* no "Expect: 100-continue" round trip on larger bodies */
	headers = curl_slist_append(headers, "Expect:");
	if (o->authorization && *o->authorization) {
		size_t n = strlen(o->authorization) + sizeof("Authorization: ");

		auth = malloc(n);
		if (!auth) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		snprintf(auth, n, "Authorization: %s", o->authorization);
		headers = curl_slist_append(headers, auth);
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "GET") && !body)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	/* redirects are ours to check (see http_client.h) */
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (o->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, o->key_file);
	for (int hops = 0;; hops++) {
		char origin[RG_HTTP_ORIGIN_MAX], *loc = NULL;

		free(b.data);
		b = (struct buf){};
		errbuf[0] = 0;
		curl_easy_setopt(c, CURLOPT_URL, cur);
		rc = curl_easy_perform(c);
		if (rc != CURLE_OK) {
			if (b.too_big)
				snprintf(err, errlen, "%s: the reply is larger than %d bytes", cur,
					 RG_HTTP_REPLY_MAX);
			else
				transfer_error(cur, rc, errbuf, o, err, errlen);
			ret = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
			      rc == CURLE_COULDNT_CONNECT    ? -ECONNREFUSED :
							       -EIO;
			goto out;
		}
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
		/* 307 and 308 keep the method and the body; rowgate-meta sends
		 * nothing else, and other redirects are answers to the caller */
		if ((res->status != 307 && res->status != 308) ||
		    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) != CURLE_OK || !loc)
			break;
		if (rg_http_origin(loc, origin, sizeof(origin)) ||
		    !origin_allowed(o->origins, origin)) {
			snprintf(err, errlen,
				 "%.200s redirected to %.200s, whose origin is not one of the "
				 "configured URLs: not following it (it would receive the "
				 "credentials); list every replica, as it advertises itself",
				 cur, loc);
			ret = -EPERM;
			goto out;
		}
		if (hops == RG_HTTP_MAX_REDIRECTS) {
			snprintf(err, errlen, "%s: more than %d redirects", url,
				 RG_HTTP_MAX_REDIRECTS);
			ret = -ELOOP;
			goto out;
		}
		free(cur);
		cur = strdup(loc);
		if (!cur) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
	}
	res->effective_url = strdup(cur);
	if (b.len)
		res->reply = json_loadb(b.data, b.len, 0, NULL);
out:
	if (ret)
		res->status = 0;
	curl_slist_free_all(headers);
	if (c)
		curl_easy_cleanup(c);
	free(text);
	free(auth);
	free(cur);
	free(b.data);
	return ret;
}

void rg_http_result_free(struct rg_http_result *res)
{
	json_decref(res->reply);
	free(res->effective_url);
	memset(res, 0, sizeof(*res));
}
