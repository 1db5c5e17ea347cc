/* SPDX-License-Identifier: GPL-2.0 */
/* A JSON-over-HTTP call with libcurl, shared by rowgatectl --meta, rowgated's
 * meta agent and rowgate-meta's etcd client.  Redirects (rowgate-meta
 * followers answer 307 to the leader) are followed, keeping the method, the
 * body and the bearer token.
 */
#ifndef ROWGATE_USER_LIB_HTTP_CLIENT_H
#define ROWGATE_USER_LIB_HTTP_CLIENT_H

#include <stddef.h>

#include <jansson.h>

/* Redirects followed per call: follower -> leader, with room for one more. */
#define RG_HTTP_MAX_REDIRECTS 3
/* Bytes of a reply body kept; larger replies are an error. */
#define RG_HTTP_REPLY_MAX (64 * 1024 * 1024)

struct rg_http_result {
	long status;    /* HTTP status, 0 when no response arrived */
	json_t *reply;  /* parsed body when it was JSON, else NULL; caller frees */
	char *effective_url; /* the URL that answered (after redirects); caller frees */
};

/* Once per process, before any thread calls rg_http_json; 0 or -EIO. */
int rg_http_global_init(void);

/*
 * method ("GET", "POST", "PUT", "DELETE") url with body (may be NULL) as
 * JSON, "Authorization: Bearer token" when token is non-NULL and not empty,
 * connect_timeout_ms / timeout_ms bounds.  Returns 0 when a response
 * arrived (whatever its status; res->reply holds its JSON body if any), or
 * negative errno with err saying why nothing arrived.
 */
int rg_http_json(const char *method, const char *url, const char *token, const json_t *body,
		 long connect_timeout_ms, long timeout_ms, struct rg_http_result *res, char *err,
		 size_t errlen);

void rg_http_result_free(struct rg_http_result *res);

#endif /* ROWGATE_USER_LIB_HTTP_CLIENT_H */
