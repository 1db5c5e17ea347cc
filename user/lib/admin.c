// SPDX-License-Identifier: GPL-2.0
/* The admin unix socket, server and client sides; see admin.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "io.h"
#include "limits.h"
#include "log.h"
#include "state.h"

#define ADMIN_LISTEN_BACKLOG 16
#define ADMIN_ERR_MAX	     256

static int fill_sockaddr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path))
		return -ENAMETOOLONG;
	strcpy(addr->sun_path, path);
	return 0;
}

/* Whether a server accepts connections on path right now. */
static bool socket_is_live(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
	close(fd);
	return live;
}

int rg_admin_listen(const char *path, gid_t group)
{
	struct sockaddr_un addr;
	struct stat st;
	mode_t old_umask;
	int fd = -1, ret;

	ret = fill_sockaddr(&addr, path);
	if (ret) {
		pr_warn("admin socket path %s is too long (at most %zu bytes)", path,
			sizeof(addr.sun_path) - 1);
		goto out;
	}
	ret = rg_make_parent_dir(path, 0755);
	if (ret) {
		pr_warn("cannot create the directory of admin socket %s: %s", path, strerror(-ret));
		goto out;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			ret = -EEXIST;
			pr_warn("%s exists and is not a socket; refusing to replace it", path);
			goto out;
		}
		if (socket_is_live(&addr)) {
			ret = -EADDRINUSE;
			pr_warn("another rowgated is already listening on %s", path);
			goto out;
		}
		if (unlink(path) && errno != ENOENT) {
			ret = -errno;
			pr_warn("cannot remove stale admin socket %s: %s", path, strerror(errno));
			goto out;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		pr_warn("cannot create the admin socket: %s", strerror(errno));
		goto out;
	}
	/* the socket must never exist with looser permissions, even briefly */
	old_umask = umask(0177);
	ret = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_umask);
	if (ret) {
		pr_warn("cannot bind admin socket %s: %s", path, strerror(-ret));
		goto out;
	}
	/* the group first: the mode never opens the socket to another one */
	if ((group != RG_ADMIN_ROOT_ONLY && chown(path, (uid_t)-1, group)) ||
	    chmod(path, group != RG_ADMIN_ROOT_ONLY ? 0660 : 0600) ||
	    listen(fd, ADMIN_LISTEN_BACKLOG)) {
		ret = -errno;
		pr_warn("cannot listen on admin socket %s: %s", path, strerror(errno));
		unlink(path);
		goto out;
	}
	ret = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int rg_admin_add_limit(json_t *limits_array, const struct rg_db_key *db, __u64 limit, bool shadow)
{
	char name[RG_DB_NAME_MAX];
	json_t *entry;

	snprintf(name, sizeof(name), "%.*s", RG_DB_NAME_MAX - 1, db->name);
	entry = json_pack("{s:s, s:o, s:b}", "db", name, "limit", rg_json_u64(limit), "shadow",
			  shadow);
	if (!entry)
		return -ENOMEM;
	return json_array_append_new(limits_array, entry) ? -ENOMEM : 0;
}

static long long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Read up to '\n' or EOF into buf (NUL-terminated, without the '\n'), within
 * deadline_ms.  Returns the length, -EMSGSIZE when max bytes pass without a
 * newline, -ETIMEDOUT, or another negative errno.
 */
static long read_line(int fd, char *buf, size_t max, long long deadline_ms)
{
	size_t len = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline_ms - monotonic_ms();
		ssize_t n;
		char *newline;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		if (len == max)
			return -EMSGSIZE;
		n = recv(fd, buf + len, max - len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			break; /* EOF ends a request too, for socat and friends */
		newline = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (newline) {
			len = (size_t)(newline - buf);
			break;
		}
	}
	buf[len] = 0;
	return (long)len;
}

/* Send obj and '\n'; steals the reference. */
static int send_json(int fd, json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	int ret = -ENOMEM;

	if (text) {
		ret = rg_write_all(fd, text, strlen(text));
		if (!ret)
			ret = rg_write_all(fd, "\n", 1);
	}
	free(text);
	json_decref(obj);
	return ret;
}

static json_t *error_reply(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* The optional or required "db" member, validated. */
static int request_db(json_t *request, bool required, struct rg_db_key *db, bool *present,
		      char *err, size_t errlen)
{
	json_t *value = json_object_get(request, "db");

	*present = value != NULL;
	if (!value) {
		if (!required)
			return 0;
		snprintf(err, errlen, "the request has no \"db\"");
		return -EINVAL;
	}
	if (!json_is_string(value)) {
		snprintf(err, errlen, "\"db\" must be a string");
		return -EINVAL;
	}
	return rg_parse_db_name(json_string_value(value), db, err, errlen);
}

/* "source" of a limit change: "admin" unless the request says "sql". */
static int request_source(json_t *request, const char **source, char *err, size_t errlen)
{
	json_t *v = json_object_get(request, "source");
	char quoted[48];

	*source = "admin";
	if (!v)
		return 0;
	if (json_is_string(v) &&
	    (!strcmp(json_string_value(v), "admin") || !strcmp(json_string_value(v), "sql"))) {
		*source = !strcmp(json_string_value(v), "sql") ? "sql" : "admin";
		return 0;
	}
	snprintf(err, errlen, "\"source\" must be \"admin\" or \"sql\", not '%s'",
		 json_is_string(v) ? rg_quote_input(json_string_value(v), quoted, sizeof(quoted)) :
				     "(not a string)");
	return -EINVAL;
}

/* "shadow": true sets the limit in shadow mode (counted, never refused). */
static int request_shadow(json_t *request, bool *shadow, char *err, size_t errlen)
{
	json_t *v = json_object_get(request, "shadow");

	*shadow = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "\"shadow\" must be true or false");
		return -EINVAL;
	}
	*shadow = json_is_true(v);
	return 0;
}

static int request_limit(json_t *request, __u64 *limit, char *err, size_t errlen)
{
	json_t *value = json_object_get(request, "limit");

	if (json_is_string(value))
		return rg_parse_limit(json_string_value(value), limit, err, errlen);
	if (json_is_integer(value) && json_integer_value(value) >= 0) {
		*limit = (__u64)json_integer_value(value);
		return 0;
	}
	snprintf(err, errlen,
		 value ? "\"limit\" must be a string of digits" : "the request has no \"limit\"");
	return -EINVAL;
}

static void not_supported(const char *op, char *err, size_t errlen)
{
	snprintf(err, errlen, "this rowgated does not support %s", op);
}

/* Run one parsed request; returns the reply, or NULL with err filled. */
static json_t *dispatch(json_t *request, const struct rg_admin_ops *ops, void *ctx, char *err,
			size_t errlen)
{
	json_t *op = json_object_get(request, "op"), *reply = NULL, *list;
	struct rg_db_key db;
	const char *name, *source;
	bool has_db, shadow;
	__u64 limit;
	int ret;

	if (!json_is_string(op)) {
		snprintf(err, errlen, "the request has no \"op\" string");
		return NULL;
	}
	name = json_string_value(op);
	memset(&db, 0, sizeof(db));
	if (!strcmp(name, "limit_set")) {
		if (request_db(request, true, &db, &has_db, err, errlen) ||
		    request_limit(request, &limit, err, errlen) ||
		    request_source(request, &source, err, errlen) ||
		    request_shadow(request, &shadow, err, errlen))
			return NULL;
		if (!ops->limit_set) {
			not_supported(name, err, errlen);
			return NULL;
		}
		ret = ops->limit_set(ctx, &db, limit, shadow, source, err, errlen);
		if (!ret)
			reply = json_pack("{s:b, s:s, s:o, s:b}", "ok", 1, "db", db.name, "limit",
					  rg_json_u64(limit), "shadow", shadow);
	} else if (!strcmp(name, "limit_unset")) {
		if (request_db(request, true, &db, &has_db, err, errlen) ||
		    request_source(request, &source, err, errlen))
			return NULL;
		if (!ops->limit_unset) {
			not_supported(name, err, errlen);
			return NULL;
		}
		ret = ops->limit_unset(ctx, &db, source, err, errlen);
		if (!ret)
			reply = json_pack("{s:b, s:s}", "ok", 1, "db", db.name);
	} else if (!strcmp(name, "limit_show")) {
		if (request_db(request, false, &db, &has_db, err, errlen))
			return NULL;
		if (!ops->limit_show) {
			not_supported(name, err, errlen);
			return NULL;
		}
		list = json_array();
		if (!list)
			goto nomem;
		ret = ops->limit_show(ctx, has_db ? &db : NULL, list, err, errlen);
		if (!ret)
			reply = json_pack("{s:b, s:o}", "ok", 1, "limits", list);
		else
			json_decref(list);
	} else if (!strcmp(name, "stats")) {
		if (request_db(request, false, &db, &has_db, err, errlen))
			return NULL;
		if (!ops->stats) {
			not_supported(name, err, errlen);
			return NULL;
		}
		reply = json_pack("{s:b}", "ok", 1);
		if (!reply)
			goto nomem;
		ret = ops->stats(ctx, has_db ? &db : NULL, reply, err, errlen);
		if (ret) {
			json_decref(reply);
			reply = NULL;
		}
	} else if (!strcmp(name, "detach")) {
		if (!ops->detach) {
			not_supported(name, err, errlen);
			return NULL;
		}
		ret = ops->detach(ctx, err, errlen);
		if (!ret)
			reply = json_pack("{s:b}", "ok", 1);
	} else {
		char quoted[48];

		snprintf(err, errlen,
			 "unknown op '%s' (expected limit_set, limit_unset, limit_show, stats or "
			 "detach)",
			 rg_quote_input(name, quoted, sizeof(quoted)));
		return NULL;
	}
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "%s failed: %s", name, strerror(-ret));
		return NULL;
	}
	if (reply)
		return reply;
nomem:
	snprintf(err, errlen, "rowgated is out of memory");
	return NULL;
}

static json_t *handle_request(const char *text, long len, const struct rg_admin_ops *ops, void *ctx)
{
	char err[ADMIN_ERR_MAX] = "";
	json_t *request, *reply = NULL;
	json_error_t jerr;

	if (len == 0)
		return error_reply("empty request: send one JSON object and a newline");
	request = json_loadb(text, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
	if (!request) {
		snprintf(err, sizeof(err), "the request is not valid JSON: %s", jerr.text);
	} else if (!json_is_object(request)) {
		snprintf(err, sizeof(err), "the request must be a JSON object");
	} else {
		reply = dispatch(request, ops, ctx, err, sizeof(err));
	}
	json_decref(request);
	return reply ? reply : error_reply(err);
}

int rg_admin_peer_allowed(int fd, gid_t group, char *err, size_t errlen)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	int ret = -EACCES;
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		snprintf(err, errlen, "cannot read the peer's credentials: %s", strerror(errno));
		return -errno;
	}
	if (cred.uid == 0 || (group != RG_ADMIN_ROOT_ONLY && cred.gid == group))
		return 0;
	if (group != RG_ADMIN_ROOT_ONLY) {
		len = sizeof(small);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
			if (errno != ERANGE) {
				len = 0; /* no supplementary groups known */
			} else if (!(groups = malloc(len))) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			} else if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
				len = 0;
			}
		}
		for (i = 0; i < len / sizeof(gid_t); i++)
			if (groups[i] == group)
				ret = 0;
		if (groups != small)
			free(groups);
		if (!ret)
			return 0;
	}
	snprintf(err, errlen,
		 "permission denied: uid %u (pid %d) is not root%s; rowgated --admin-group "
		 "names the group that may use the admin socket",
		 (unsigned)cred.uid, (int)cred.pid,
		 group != RG_ADMIN_ROOT_ONLY ? " nor in the admin group" : "");
	return ret;
}

int rg_admin_serve_one(int listen_fd, gid_t group, const struct rg_admin_ops *ops, void *ctx)
{
	char denied[ADMIN_ERR_MAX];
	long long deadline_ms = monotonic_ms() + RG_ADMIN_SERVER_TIMEOUT_MS;
	struct timeval send_timeout = {
		.tv_sec = RG_ADMIN_SERVER_TIMEOUT_MS / 1000,
		.tv_usec = (RG_ADMIN_SERVER_TIMEOUT_MS % 1000) * 1000,
	};
	char *buf = NULL;
	json_t *reply;
	int fd, ret;
	long len;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* a client that stops reading must not block the daemon either */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
	buf = malloc(RG_ADMIN_REQUEST_MAX + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	len = read_line(fd, buf, RG_ADMIN_REQUEST_MAX, deadline_ms);
	if (len == -EMSGSIZE) {
		char msg[96];

		snprintf(msg, sizeof(msg), "the request is larger than %d bytes",
			 RG_ADMIN_REQUEST_MAX);
		reply = error_reply(msg);
	} else if (len == -ETIMEDOUT) {
		reply = error_reply("timed out waiting for the request");
	} else if (len < 0) {
		ret = (int)len;
		pr_debug("admin client: cannot read the request: %s", strerror(-ret));
		goto out;
	} else if (rg_admin_peer_allowed(fd, group, denied, sizeof(denied))) {
		/* read first: closing on an unread request would reset the
		 * connection before the client reads why */
		pr_info("admin socket: %s", denied);
		reply = error_reply(denied);
	} else {
		reply = handle_request(buf, len, ops, ctx);
	}
	ret = send_json(fd, reply);
	if (ret)
		pr_debug("admin client: cannot send the reply: %s", strerror(-ret));
out:
	free(buf);
	close(fd);
	return ret;
}

static void describe_connect_error(const char *path, int errnum, char *err, size_t errlen)
{
	const char *hint = "is rowgated running?";

	if (errnum == EACCES || errnum == EPERM)
		hint = "the admin socket is for root and the group of rowgated --admin-group";
	snprintf(err, errlen, "cannot reach rowgated at %s: %s (%s)", path, strerror(errnum), hint);
}

int rg_admin_call(const char *path, json_t *request, json_t **reply, char *err, size_t errlen)
{
	long long deadline_ms = monotonic_ms() + RG_ADMIN_CLIENT_TIMEOUT_MS;
	struct timeval send_timeout = {
		.tv_sec = RG_ADMIN_CLIENT_TIMEOUT_MS / 1000,
	};
	struct sockaddr_un addr;
	json_t *answer = NULL, *ok;
	json_error_t jerr;
	char *buf = NULL;
	int fd = -1, ret;
	long len;

	*reply = NULL;
	ret = fill_sockaddr(&addr, path);
	if (ret) {
		snprintf(err, errlen, "admin socket path %s is too long", path);
		goto out;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		ret = -errno;
		describe_connect_error(path, errno, err, errlen);
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
	ret = send_json(fd, json_incref(request));
	if (ret) {
		snprintf(err, errlen, "cannot send the request to rowgated at %s: %s", path,
			 strerror(-ret));
		goto out;
	}
	buf = malloc(RG_ADMIN_REPLY_MAX + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	len = read_line(fd, buf, RG_ADMIN_REPLY_MAX, deadline_ms);
	if (len < 0) {
		ret = (int)len;
		if (ret == -ETIMEDOUT)
			snprintf(err, errlen, "rowgated at %s did not answer within %d s", path,
				 RG_ADMIN_CLIENT_TIMEOUT_MS / 1000);
		else
			snprintf(err, errlen, "cannot read the reply of rowgated at %s: %s", path,
				 strerror(-ret));
		goto out;
	}
	answer = json_loadb(buf, (size_t)len, 0, &jerr);
	ok = json_object_get(answer, "ok");
	if (!json_is_object(answer) || !json_is_boolean(ok)) {
		ret = -EPROTO;
		snprintf(err, errlen,
			 len ? "rowgated at %s sent a reply that is not a protocol object" :
			       "rowgated at %s closed the connection without a reply",
			 path);
		goto out;
	}
	if (json_is_true(ok)) {
		ret = 0;
	} else {
		const char *msg = json_string_value(json_object_get(answer, "error"));

		ret = -EREMOTEIO;
		snprintf(err, errlen, "%s", msg ? msg : "rowgated refused the request");
	}
	*reply = answer;
	answer = NULL;
out:
	json_decref(answer);
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}
