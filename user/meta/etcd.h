/* SPDX-License-Identifier: GPL-2.0 */
/* The few etcd v3 calls rowgate-meta makes, through etcd's JSON gateway
 * (HTTP, keys and values base64, int64 as strings): limits under a key
 * prefix, and leader election with a lease-bound key.
 */
#ifndef ROWGATE_USER_META_ETCD_H
#define ROWGATE_USER_META_ETCD_H

#include <stdbool.h>
#include <stddef.h>

#include <rowgate/types.h>

#include "../lib/http_client.h"
#include "../lib/state.h"

/* One etcd call never holds rowgate-meta longer than this. */
#define RG_ETCD_CONNECT_TIMEOUT_MS 500
#define RG_ETCD_TIMEOUT_MS         2000

struct rg_etcd {
	char endpoint[256]; /* http://host:port, no trailing slash */
	char prefix[128];   /* e.g. "/rowgate/" */
	struct rg_http_origins origins;
};

/* 0, or -EINVAL when the URL is not http(s)://... or the prefix is empty. */
int rg_etcd_init(struct rg_etcd *e, const char *url, const char *prefix);

/* Limits: <prefix>limits/<db> = decimal rows/s. */
int rg_etcd_put_limit(const struct rg_etcd *e, const struct rg_db_key *db, __u64 limit,
		      char *err, size_t errlen);
/* 0, or -ENOENT when the key did not exist. */
int rg_etcd_delete_limit(const struct rg_etcd *e, const struct rg_db_key *db, char *err,
			 size_t errlen);
/* Every limit into an initialised, empty list; bad entries are skipped with
 * a warning. */
int rg_etcd_load_limits(const struct rg_etcd *e, struct rg_limit_list *list, char *err,
			size_t errlen);

/* Grant a lease of ttl_s seconds (etcd may round up); *id set. */
int rg_etcd_lease_grant(const struct rg_etcd *e, __u64 ttl_s, __s64 *id, char *err,
			size_t errlen);
/* Refresh a lease; -ENOENT when it has expired. */
int rg_etcd_lease_keepalive(const struct rg_etcd *e, __s64 id, char *err, size_t errlen);
/* Revoke a lease (a clean stop hands leadership over at once). */
int rg_etcd_lease_revoke(const struct rg_etcd *e, __s64 id, char *err, size_t errlen);

/*
 * One election step: create <prefix>leader = me bound to lease id if it
 * does not exist (txn, create revision 0).  *leader tells whether this
 * replica holds the key (created now, or earlier with the same lease);
 * leader_url gets the holder's value ("" when nobody holds it).
 */
int rg_etcd_campaign(const struct rg_etcd *e, __s64 lease, const char *me, bool *leader,
		     char *leader_url, size_t urllen, char *err, size_t errlen);

/* base64 (RFC 4648, padded): exposed for the unit tests.  encode returns
 * the length written (out needs 4 * ceil(n / 3) + 1 bytes); decode returns
 * the length or -1 on bad input (out needs 3 * len / 4 + 1 bytes). */
size_t rg_base64_encode(const void *in, size_t n, char *out);
long rg_base64_decode(const char *in, size_t len, void *out);

#endif /* ROWGATE_USER_META_ETCD_H */
