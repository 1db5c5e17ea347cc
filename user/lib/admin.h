/* SPDX-License-Identifier: GPL-2.0 */
/* The admin unix socket between rowgatectl and rowgated.
 *
 * One request per connection: the client sends one JSON object and '\n'; the
 * server answers one JSON object and '\n', then closes.
 *
 *   {"op":"limit_set","db":"logs","limit":"1000"}  -> {"ok":true,"db":"logs","limit":1000,"shadow":false}
 *   ("shadow":true: the limit counts what it would refuse and refuses nothing)
 *   {"op":"limit_unset","db":"logs"}               -> {"ok":true,"db":"logs"}
 *   limit_set and limit_unset may say where the change comes from, for the
 *   daemon's log: "source":"admin" (the default) or "sql" (rowgatectl sql).
 *   {"op":"limit_show"[,"db":"logs"]}  -> {"ok":true,"limits":[{"db":"logs","limit":1000}]}
 *   {"op":"stats"[,"db":"logs"]}       -> {"ok":true,"databases":[...],"global":{...}}
 *   {"op":"detach"}                    -> {"ok":true}  (enforcement removed)
 *   any failure                        -> {"ok":false,"error":"one-line message"}
 *
 * "limit" in a request is the text the user typed (a JSON integer is accepted
 * too); the server validates it with rg_parse_limit.  Database names are
 * normalized with rg_parse_db_name.  u64 values in replies follow state.h: a
 * JSON integer up to 2^63-1, a decimal string above (rg_json_u64).
 */
#ifndef ROWGATE_USER_LIB_ADMIN_H
#define ROWGATE_USER_LIB_ADMIN_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include <rowgate/abi.h>

#define RG_ADMIN_DEFAULT_PATH "/run/rowgate/admin.sock"
/* Bytes of one request; larger ones get an error reply. */
#define RG_ADMIN_REQUEST_MAX (64 * 1024)
/* Bytes of one reply: stats of every database fit. */
#define RG_ADMIN_REPLY_MAX (64 * 1024 * 1024)
/* A stuck client holds the daemon no longer than this, request and reply. */
#define RG_ADMIN_SERVER_TIMEOUT_MS 2000
/* How long rowgatectl waits for rowgated to answer. */
#define RG_ADMIN_CLIENT_TIMEOUT_MS 10000

/*
 * What the daemon does for each request.  Each callback returns 0, or a
 * negative errno with a one-line message in err (sent to the client).  A NULL
 * callback answers "not supported".  db_or_null is NULL when the client asked
 * about every database.
 *   limit_show: append {"db":..,"limit":..} objects (rg_admin_add_limit); a
 *               database without a limit is simply not listed.
 *   stats:      set "databases" (array of objects, each with "db") and
 *               "global" (object) in reply_object, which already has "ok".
 *   detach:     stop enforcing (the daemon keeps running, not enforcing).
 *   source:     "admin" or "sql" (the request's "source"), for the log.
 */
struct rg_admin_ops {
	int (*limit_set)(void *ctx, const struct rg_db_key *db, __u64 limit, bool shadow,
			 const char *source, char *err, size_t errlen);
	int (*limit_unset)(void *ctx, const struct rg_db_key *db, const char *source, char *err,
			   size_t errlen);
	int (*limit_show)(void *ctx, const struct rg_db_key *db_or_null, json_t *limits_array,
			  char *err, size_t errlen);
	int (*stats)(void *ctx, const struct rg_db_key *db_or_null, json_t *reply_object, char *err,
		     size_t errlen);
	int (*detach)(void *ctx, char *err, size_t errlen);
};

/* Who may use the admin socket: root, and the members of an admin group
 * (rowgated --admin-group), or root alone. */
#define RG_ADMIN_ROOT_ONLY ((gid_t)-1)

/*
 * Listen on path: creates the parent directory (0755), replaces a stale
 * socket (refuses when a server answers there, or when path is not a socket),
 * binds with mode 0600, or 0660 with group `group` unless RG_ADMIN_ROOT_ONLY.
 * The socket is non-blocking, close-on-exec.  Returns the fd, or negative
 * errno after logging why with pr_warn.
 */
int rg_admin_listen(const char *path, gid_t group);

/*
 * Accept one client on listen_fd, read its request (RG_ADMIN_REQUEST_MAX
 * bytes, RG_ADMIN_SERVER_TIMEOUT_MS in all), dispatch to ops, reply, close.
 * A client that is neither root nor in group (its SO_PEERCRED gid or
 * SO_PEERGROUPS) is answered "permission denied" and nothing is dispatched,
 * whatever the socket file's mode.  Returns 0 when a reply was sent (error
 * replies included), -EAGAIN when no client was waiting, or another negative
 * errno when accepting or talking to the client failed; those concern one
 * client only and are logged at debug.
 */
int rg_admin_serve_one(int listen_fd, gid_t group, const struct rg_admin_ops *ops, void *ctx);

/* Whether the peer of connected unix socket fd is root or in group: 0, or
 * -EACCES with the reason in err (or another negative errno). */
int rg_admin_peer_allowed(int fd, gid_t group, char *err, size_t errlen);

/* For limit_show callbacks: append {"db":"name","limit":N}; 0 or -ENOMEM. */
int rg_admin_add_limit(json_t *limits_array, const struct rg_db_key *db, __u64 limit, bool shadow);

/*
 * Client side: send request to the daemon at path and wait for the reply.
 * Returns 0 with *reply set when the daemon answered ok; -EREMOTEIO with
 * *reply set and err holding the daemon's message when it refused; another
 * negative errno with *reply NULL and err a sentence when it could not be
 * reached or answered nonsense.  The caller frees *reply.
 */
int rg_admin_call(const char *path, json_t *request, json_t **reply, char *err, size_t errlen);

#endif /* ROWGATE_USER_LIB_ADMIN_H */
