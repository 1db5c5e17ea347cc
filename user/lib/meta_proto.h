/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/JSON protocol between rowgated / rowgatectl and rowgate-meta:
 * paths, message structs, and pure encode/decode functions (no I/O), so the
 * same code runs on both sides and in the unit tests.  docs/distributed.md
 * describes the protocol for operators, with curl examples.
 *
 *   POST   /v1/heartbeat      frontend -> allocator (rg_meta_hb_req / _reply)
 *   GET    /v1/limits[/DB]    {"ok":true,"limits":[{"db":..,"limit":..}]}
 *   PUT    /v1/limits/DB      body {"limit":"N"} -> {"ok":true,"db":..,"limit":N}
 *   DELETE /v1/limits/DB      {"ok":true,"db":..}
 *   GET    /v1/status[/DB]    allocation table: frontends, demand, quotas
 *   GET    /v1/health         role, leader, learning phase (no token needed)
 *   any failure               {"ok":false,"error":"one-line message"}
 *
 * u64 values follow state.h (a JSON integer up to 2^63-1, a decimal string
 * above); readers accept both.
 */
#ifndef ROWGATE_USER_LIB_META_PROTO_H
#define ROWGATE_USER_LIB_META_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <rowgate/abi.h>

#define RG_META_API_HEARTBEAT "/v1/heartbeat"
#define RG_META_API_LIMITS    "/v1/limits"
#define RG_META_API_STATUS    "/v1/status"
#define RG_META_API_HEALTH    "/v1/health"

#define RG_META_NODE_ID_MAX 64 /* bytes of a frontend id, NUL included */
/* Bytes of a request body; a heartbeat naming every database fits. */
#define RG_META_BODY_MAX (8 * 1024 * 1024)
/* Bytes of a bearer token, NUL included. */
#define RG_META_TOKEN_MAX 256

/* One database of a heartbeat: rates over the frontend's last interval
 * (counter deltas / elapsed time), and what it holds now. */
struct rg_meta_hb_db {
	struct rg_db_key db;
	__u64 admitted_rows_per_s;
	__u64 rejected_rows_per_s;
	__u64 debt_rows;        /* bucket debt at the heartbeat */
	__u64 quota_rows_per_s; /* the grant it enforces, 0 = none (uses L) */
};

struct rg_meta_hb_req {
	char node_id[RG_META_NODE_ID_MAX];
	__u64 interval_ms; /* the interval the rates were measured over */
	size_t count;
	struct rg_meta_hb_db *dbs; /* malloc'd, count entries */
};

/* One database of a reply: every database with a cluster limit is listed;
 * a database missing from the reply has no limit. */
struct rg_meta_hb_grant {
	struct rg_db_key db;
	__u64 limit_rows_per_s; /* L; 0 = disabled */
	__u64 quota_rows_per_s; /* 0 = no assignment: use L */
};

struct rg_meta_hb_reply {
	__u64 lease_ms;              /* quotas are valid this long after the request was sent */
	__u64 heartbeat_interval_ms; /* when to send the next heartbeat */
	bool learning;               /* the allocator is adopting held quotas */
	size_t count;
	struct rg_meta_hb_grant *dbs; /* malloc'd, count entries */
};

/* Frontend ids: 1..63 bytes of [A-Za-z0-9_.:-].  0 or -EINVAL with err. */
int rg_meta_parse_node_id(const char *s, char *out, char *err, size_t errlen);

/* Heartbeat request.  decode validates every field (names with
 * rg_parse_db_name, a database at most once) and fills *req (free it with
 * rg_meta_hb_req_free, also after a failure).  encode returns NULL on ENOMEM. */
json_t *rg_meta_hb_req_encode(const struct rg_meta_hb_req *req);
int rg_meta_hb_req_decode(const json_t *obj, struct rg_meta_hb_req *req, char *err,
			  size_t errlen);
void rg_meta_hb_req_free(struct rg_meta_hb_req *req);

/* Heartbeat reply, the same way. */
json_t *rg_meta_hb_reply_encode(const struct rg_meta_hb_reply *reply);
int rg_meta_hb_reply_decode(const json_t *obj, struct rg_meta_hb_reply *reply, char *err,
			    size_t errlen);
void rg_meta_hb_reply_free(struct rg_meta_hb_reply *reply);

/* The body of PUT /v1/limits/DB: {"limit":"N"} (a JSON integer too),
 * validated with rg_parse_limit.  0 or -EINVAL / -ERANGE with err. */
int rg_meta_limit_body_decode(const json_t *obj, __u64 *limit, char *err, size_t errlen);

enum rg_meta_endpoint {
	RG_META_EP_NONE = 0, /* unknown path: 404 */
	RG_META_EP_HEALTH,
	RG_META_EP_HEARTBEAT,
	RG_META_EP_LIMITS, /* with or without a database */
	RG_META_EP_STATUS, /* with or without a database */
};

struct rg_meta_route {
	enum rg_meta_endpoint ep;
	bool has_db;
	struct rg_db_key db;
};

/*
 * Map a request path (no query string) to an endpoint.  Returns 0 with *r
 * set; -ENOENT for an unknown path; -EINVAL with err when the database in
 * the path is not a valid name.  The method is checked by the caller
 * (rg_meta_method_allowed).
 */
int rg_meta_route_path(const char *path, struct rg_meta_route *r, char *err, size_t errlen);

/* Whether method is served on the endpoint (405 otherwise). */
bool rg_meta_method_allowed(const struct rg_meta_route *r, const char *method);

/* "Bearer TOKEN" against token, in time independent of where they differ.
 * true when token is NULL or empty (authentication off) or they match. */
bool rg_meta_bearer_ok(const char *authorization_header, const char *token);

/* Read a shared token: the first line of path, surrounding whitespace
 * removed; empty, unreadable or too long files are errors.  0 or negative
 * errno with err. */
int rg_meta_read_token(const char *path, char *out, size_t outlen, char *err, size_t errlen);

/* {"ok":false,"error":msg}; NULL on ENOMEM. */
json_t *rg_meta_error_json(const char *msg);

#endif /* ROWGATE_USER_LIB_META_PROTO_H */
