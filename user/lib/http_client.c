// SPDX-License-Identifier: MIT
/* JSON-over-HTTP calls with libcurl.  See http_client.h. */
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

int rg_http_json(const char *method, const char *url, const char *token, const json_t *body,
		 long connect_timeout_ms, long timeout_ms, struct rg_http_result *res, char *err,
		 size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE] = "", auth[300], *text = NULL, *eff = NULL;
	struct curl_slist *headers = NULL;
	struct buf b = {};
	CURLcode rc;
	CURL *c;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	c = curl_easy_init();
	if (!c) {
		snprintf(err, errlen, "cannot initialise libcurl");
		return -ENOMEM;
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
	if (token && *token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		headers = curl_slist_append(headers, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "GET") && !body)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)RG_HTTP_MAX_REDIRECTS);
	/* the token is shared by every replica a follower redirects to */
	curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		if (b.too_big)
			snprintf(err, errlen, "%s: the reply is larger than %d bytes", url,
				 RG_HTTP_REPLY_MAX);
		else
			snprintf(err, errlen, "%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		ret = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
		      rc == CURLE_COULDNT_CONNECT    ? -ECONNREFUSED :
						       -EIO;
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
	if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff)
		res->effective_url = strdup(eff);
	if (b.len)
		res->reply = json_loadb(b.data, b.len, 0, NULL);
out:
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
	free(text);
	free(b.data);
	return ret;
}

void rg_http_result_free(struct rg_http_result *res)
{
	json_decref(res->reply);
	free(res->effective_url);
	memset(res, 0, sizeof(*res));
}
