/* SPDX-License-Identifier: GPL-2.0 */
/* A JSON-over-HTTP(S) call with libcurl, shared by rowgatectl --meta,
 * rowgated's meta agent and rowgate-meta's etcd client.
 *
 * Redirects (rowgate-meta followers answer 307 to the leader) are followed
 * here, not by libcurl, and only to an origin (scheme://host:port) the
 * caller lists: the Authorization header goes with the method and the body,
 * so a redirect elsewhere, from a misconfigured or hostile replica, would
 * hand the token to whoever it names.  Such a redirect is an error.
 */
#ifndef ROWGATE_USER_LIB_HTTP_CLIENT_H
#define ROWGATE_USER_LIB_HTTP_CLIENT_H

#include <stddef.h>

#include <jansson.h>

/* Redirects followed per call: follower -> leader, with room for one more. */
#define RG_HTTP_MAX_REDIRECTS 3
/* Bytes of a reply body kept; larger replies are an error. */
#define RG_HTTP_REPLY_MAX (64 * 1024 * 1024)
/* Origins a client may be redirected to (its configured URLs). */
#define RG_HTTP_ORIGINS_MAX 8
#define RG_HTTP_ORIGIN_MAX  272

struct rg_http_origins {
	size_t n;
	char v[RG_HTTP_ORIGINS_MAX][RG_HTTP_ORIGIN_MAX]; /* "scheme://host:port" */
};

struct rg_http_opts {
	const char *authorization; /* the Authorization header's value; NULL: none */
	long connect_timeout_ms;
	long timeout_ms;
	/* where a 307/308 may lead; NULL or empty: no redirect is followed */
	const struct rg_http_origins *origins;
	/* https://: the CA file that verifies the server (NULL: the system's
	 * CAs), a client certificate and its key (PEM; NULL: none) */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
};

struct rg_http_result {
	long status;    /* HTTP status, 0 when no response arrived */
	json_t *reply;  /* parsed body when it was JSON, else NULL; caller frees */
	char *effective_url; /* the URL that answered (after redirects); caller frees */
};

/* Once per process, before any thread calls rg_http_json; 0 or -EIO. */
int rg_http_global_init(void);

/* url's origin, "scheme://host:port" with the scheme and host in lower case
 * and the port explicit (80, 443 by default): 0, or -EINVAL when url is not
 * an absolute http(s) URL. */
int rg_http_origin(const char *url, char *out, size_t outlen);

/* Add url's origin to o (a duplicate is not added again): 0, -EINVAL (bad
 * URL) or -E2BIG (full), err saying which. */
int rg_http_origins_add(struct rg_http_origins *o, const char *url, char *err, size_t errlen);

/*
 * method ("GET", "POST", "PUT", "DELETE") url with body (may be NULL) as
 * JSON.  Returns 0 when a response arrived (whatever its status;
 * res->reply holds its JSON body if any), or negative errno with err saying
 * why nothing arrived: -EPERM for a redirect to an origin not in
 * opts->origins, -ELOOP for too many redirects.
 */
int rg_http_json(const char *method, const char *url, const json_t *body,
		 const struct rg_http_opts *opts, struct rg_http_result *res, char *err,
		 size_t errlen);

void rg_http_result_free(struct rg_http_result *res);

#endif /* ROWGATE_USER_LIB_HTTP_CLIENT_H */
