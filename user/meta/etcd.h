/* SPDX-License-Identifier: GPL-2.0 */
/* The few etcd v3 calls rowgate-meta makes, through etcd's JSON gateway
 * (HTTP, keys and values base64, int64 as strings): limits under a key
 * prefix, and leader election with a lease-bound key.  Several endpoints
 * (members of one cluster) are tried in turn from the last that answered;
 * https:// with a CA and a client certificate; etcd's authentication with
 * a user and password (/v3/auth/authenticate gives a token, sent as the
 * Authorization header and renewed when etcd says it is no longer valid).
 */
#ifndef ROWGATE_USER_META_ETCD_H
#define ROWGATE_USER_META_ETCD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <rowgate/types.h>

#include "../lib/http_client.h"
#include "../lib/state.h"

/* One etcd call never holds rowgate-meta longer than this. */
#define RG_ETCD_CONNECT_TIMEOUT_MS 500
#define RG_ETCD_TIMEOUT_MS         2000

#define RG_ETCD_ENDPOINTS_MAX 8
#define RG_ETCD_TOKEN_MAX     512

struct rg_etcd {
	char endpoints[RG_ETCD_ENDPOINTS_MAX][256]; /* http(s)://host:port, no trailing / */
	int nr_endpoints;
	int cur; /* the endpoint that answered last (atomic) */
	char prefix[128]; /* e.g. "/rowgate/" */
	struct rg_http_origins origins;
	/* TLS: NULL = the system's CAs, no client certificate */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	/* authentication: NULL user = none */
	const char *user;
	char password[256];
	pthread_mutex_t auth_lock; /* token: the election and the API both call */
	char token[RG_ETCD_TOKEN_MAX];
};

/* urls: "URL[,URL...]".  0, or -EINVAL when a URL is not http(s)://..., there
 * are more than RG_ETCD_ENDPOINTS_MAX, or the prefix is empty. */
int rg_etcd_init(struct rg_etcd *e, const char *urls, const char *prefix);

/* The endpoint that answered last, for status pages. */
const char *rg_etcd_endpoint(struct rg_etcd *e);

/* Authenticate as user with the password (first line of password_file) and
 * keep doing so when the token expires: 0, -EACCES when etcd refuses the
 * user or password, other negative errno when it cannot be asked (err
 * says why; calls will try again). */
int rg_etcd_set_auth(struct rg_etcd *e, const char *user, const char *password_file, char *err,
		     size_t errlen);

/* Limits: <prefix>limits/<db> = decimal rows/s. */
int rg_etcd_put_limit(struct rg_etcd *e, const struct rg_db_key *db, __u64 limit,
		      char *err, size_t errlen);
/* 0, or -ENOENT when the key did not exist. */
int rg_etcd_delete_limit(struct rg_etcd *e, const struct rg_db_key *db, char *err,
			 size_t errlen);
/* Every limit into an initialised, empty list; bad entries are skipped with
 * a warning. */
int rg_etcd_load_limits(struct rg_etcd *e, struct rg_limit_list *list, char *err,
			size_t errlen);

/* Grant a lease of ttl_s seconds (etcd may round up); *id set. */
int rg_etcd_lease_grant(struct rg_etcd *e, __u64 ttl_s, __s64 *id, char *err,
			size_t errlen);
/* Refresh a lease; -ENOENT when it has expired. */
int rg_etcd_lease_keepalive(struct rg_etcd *e, __s64 id, char *err, size_t errlen);
/* Revoke a lease (a clean stop hands leadership over at once). */
int rg_etcd_lease_revoke(struct rg_etcd *e, __s64 id, char *err, size_t errlen);

/*
 * One election step: create <prefix>leader = me bound to lease id if it
 * does not exist (txn, create revision 0).  *leader tells whether this
 * replica holds the key (created now, or earlier with the same lease);
 * leader_url gets the holder's value ("" when nobody holds it).
 */
int rg_etcd_campaign(struct rg_etcd *e, __s64 lease, const char *me, bool *leader,
		     char *leader_url, size_t urllen, char *err, size_t errlen);

/* base64 (RFC 4648, padded): exposed for the unit tests.  encode returns
 * the length written (out needs 4 * ceil(n / 3) + 1 bytes); decode returns
 * the length or -1 on bad input (out needs 3 * len / 4 + 1 bytes). */
size_t rg_base64_encode(const void *in, size_t n, char *out);
long rg_base64_decode(const char *in, size_t len, void *out);

#endif /* ROWGATE_USER_META_ETCD_H */
