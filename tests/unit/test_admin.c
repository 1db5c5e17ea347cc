// SPDX-License-Identifier: GPL-2.0
/* The admin socket (user/lib/admin.c) over a real unix socket in a temporary
 * directory: a thread serves requests with fake ops while raw clients,
 * rg_admin_call and the built rowgatectl binary talk to it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../../user/lib/admin.h"
#include "../../user/lib/log.h"
#include "../../user/lib/state.h"

static char tmpdir[] = "/tmp/rowgate-test-admin.XXXXXX";
static char sock_path[256];

/* The daemon side: limits in a list, a call counter, canned stats. */
struct fake_daemon {
	struct rg_limit_list limits;
	int limit_set_calls;
	char last_source[16]; /* of the last limit_set or limit_unset */
};

static int fake_limit_set(void *ctx, const struct rg_db_key *db, __u64 limit, bool shadow,
			  const char *source, char *err, size_t errlen)
{
	struct fake_daemon *d = ctx;

	snprintf(d->last_source, sizeof(d->last_source), "%s", source);
	d->limit_set_calls++;
	if (!strcmp(db->name, "readonly")) {
		snprintf(err, errlen, "cannot save state file /x: Read-only file system");
		return -EROFS;
	}
	return rg_limit_list_set_mode(&d->limits, db, limit, shadow);
}

static int fake_limit_unset(void *ctx, const struct rg_db_key *db, const char *source, char *err,
			    size_t errlen)
{
	struct fake_daemon *d = ctx;

	snprintf(d->last_source, sizeof(d->last_source), "%s", source);
	(void)err;
	(void)errlen;
	rg_limit_list_unset(&d->limits, db); /* idempotent, as UNSET is */
	return 0;
}

static int fake_limit_show(void *ctx, const struct rg_db_key *db, json_t *limits, char *err,
			   size_t errlen)
{
	struct fake_daemon *d = ctx;
	size_t i;

	(void)err;
	(void)errlen;
	for (i = 0; i < d->limits.count; i++) {
		const struct rg_limit_entry *e = &d->limits.entries[i];

		if (db && strcmp(db->name, e->db.name))
			continue;
		if (rg_admin_add_limit(limits, &e->db, e->limit, e->shadow))
			return -ENOMEM;
	}
	return 0;
}

static int fake_stats(void *ctx, const struct rg_db_key *db, json_t *reply, char *err, size_t errlen)
{
	(void)ctx;
	if (db && !strcmp(db->name, "broken")) {
		snprintf(err, errlen, "cannot read the db_stats map");
		return -EIO;
	}
	json_object_set_new(reply, "databases",
			    json_pack("[{s:s, s:i, s:i, s:o}]", "db", "logs", "admitted_rows", 3000,
				      "rejected_rows", 12, "debt_rows", rg_json_u64(RG_U64_MAX)));
	json_object_set_new(reply, "global", json_pack("{s:i}", "conns_tracked", 4));
	return 0;
}

static const struct rg_admin_ops fake_ops = {
	.limit_set = fake_limit_set,
	.limit_unset = fake_limit_unset,
	.limit_show = fake_limit_show,
	.stats = fake_stats,
};

static const struct rg_admin_ops no_ops;

static struct fake_daemon daemon_state;
static const struct rg_admin_ops *server_ops = &fake_ops;
static _Atomic gid_t server_group = RG_ADMIN_ROOT_ONLY;
static atomic_bool server_stop;
static atomic_int server_last_ret;

static void *server_main(void *arg)
{
	int listen_fd = *(int *)arg;

	while (!atomic_load(&server_stop)) {
		struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
		int ret;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		ret = rg_admin_serve_one(listen_fd, server_group, server_ops, &daemon_state);
		atomic_store(&server_last_ret, ret);
	}
	return NULL;
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send raw bytes (optionally half-closing), return the parsed reply. */
static json_t *raw_request(const char *data, size_t len, bool half_close)
{
	static char buf[65536];
	size_t got = 0;
	ssize_t n;
	int fd = connect_to(sock_path);

	if (fd < 0)
		return NULL;
	while (len) {
		n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		data += n;
		len -= (size_t)n;
	}
	if (half_close)
		shutdown(fd, SHUT_WR);
	while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	CHECK(got && buf[got - 1] == '\n', "reply ends with a newline: [%s]", buf);
	return json_loads(buf, 0, NULL);
}

static json_t *raw_text(const char *text)
{
	return raw_request(text, strlen(text), false);
}

static const char *reply_error(json_t *reply)
{
	const char *msg = json_string_value(json_object_get(reply, "error"));

	CHECK(json_is_false(json_object_get(reply, "ok")), "reply has ok:false");
	return msg ? msg : "";
}

static void expect_error(const char *request, const char *hint)
{
	json_t *reply = raw_text(request);
	const char *msg = reply_error(reply);

	CHECK(strstr(msg, hint), "[%s]: error '%s' lacks '%s'", request, msg, hint);
	CHECK(!strchr(msg, '\n'), "[%s]: error is one line", request);
	json_decref(reply);
}

static void test_protocol(void)
{
	json_t *reply, *limits;
	struct rg_db_key k;
	char *big;
	size_t big_len = RG_ADMIN_REQUEST_MAX + 4096;

	reply = raw_text("{\"op\":\"limit_set\",\"db\":\"greptime-logs\",\"limit\":\"1000\"}\n");
	CHECK(json_is_true(json_object_get(reply, "ok")), "limit_set ok");
	CHECK(!strcmp(json_string_value(json_object_get(reply, "db")) ?: "", "logs"),
	      "limit_set echoes the normalized db");
	CHECK(json_integer_value(json_object_get(reply, "limit")) == 1000,
	      "limit_set echoes the limit");
	json_decref(reply);
	memset(&k, 0, sizeof(k));
	strcpy(k.name, "logs");
	CHECK(rg_limit_list_find(&daemon_state.limits, &k) &&
		      rg_limit_list_find(&daemon_state.limits, &k)->limit == 1000,
	      "callback got logs=1000");
	CHECK(!strcmp(daemon_state.last_source, "admin"), "no source: admin (%s)",
	      daemon_state.last_source);

	reply = raw_text(
		"{\"op\":\"limit_set\",\"db\":\"big\",\"limit\":\"18446744073709551615\"}\n");
	CHECK(!strcmp(json_string_value(json_object_get(reply, "limit")) ?: "",
		      "18446744073709551615"),
	      "u64 max echoed exactly, as a string");
	json_decref(reply);

	/* EOF instead of a newline ends a request too */
	reply = raw_request("{\"op\":\"limit_show\"}", 19, true);
	limits = json_object_get(reply, "limits");
	CHECK(json_is_true(json_object_get(reply, "ok")) && json_array_size(limits) == 2,
	      "limit_show lists 2 limits");
	json_decref(reply);

	reply = raw_text("{\"op\":\"limit_show\",\"db\":\"logs\"}\n");
	limits = json_object_get(reply, "limits");
	CHECK(json_array_size(limits) == 1 &&
		      json_integer_value(json_object_get(json_array_get(limits, 0), "limit")) ==
			      1000,
	      "limit_show db lists logs=1000");
	json_decref(reply);

	reply = raw_text("{\"op\":\"stats\"}\n");
	CHECK(json_is_true(json_object_get(reply, "ok")) &&
		      json_is_array(json_object_get(reply, "databases")) &&
		      json_is_object(json_object_get(reply, "global")),
	      "stats carries databases and global");
	json_decref(reply);

	reply = raw_text("{\"op\":\"limit_unset\",\"db\":\"big\",\"source\":\"sql\"}\n");
	CHECK(json_is_true(json_object_get(reply, "ok")), "limit_unset ok");
	CHECK(!strcmp(daemon_state.last_source, "sql"), "source sql passed on (%s)",
	      daemon_state.last_source);
	json_decref(reply);

	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\",\"limit\":\"1000/s\"}\n", "unit");
	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\",\"limit\":\"-1\"}\n", "negative");
	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\",\"limit\":\"18446744073709551616\"}\n",
		     "maximum");
	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\",\"limit\":1.5}\n", "\"limit\" must be");
	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\"}\n", "no \"limit\"");
	expect_error("{\"op\":\"limit_set\",\"limit\":\"5\"}\n", "no \"db\"");
	expect_error("{\"op\":\"limit_set\",\"db\":\"my logs\",\"limit\":\"5\"}\n", "whitespace");
	expect_error("{\"op\":\"limit_set\",\"db\":5,\"limit\":\"5\"}\n", "must be a string");
	expect_error("{\"op\":\"limit_set\",\"db\":\"logs\",\"limit\":\"5\",\"source\":\"meta\"}\n",
		     "\"source\" must be");
	expect_error("{\"op\":\"limit_set\",\"db\":\"readonly\",\"limit\":\"5\"}\n",
		     "Read-only file system");
	expect_error("{\"op\":\"stats\",\"db\":\"broken\"}\n", "db_stats map");
	expect_error("{\"op\":\"drop\"}\n", "unknown op 'drop'");
	expect_error("{\"db\":\"logs\"}\n", "no \"op\"");
	expect_error("{\"op\":\"limit_show\",\"op\":\"stats\"}\n", "not valid JSON");
	expect_error("{\"op\":\"limit_show\"\n", "not valid JSON");
	expect_error("not json\n", "not valid JSON");
	expect_error("[1,2]\n", "must be a JSON object");
	expect_error("\n", "empty request");
	CHECK(daemon_state.limit_set_calls == 3,
	      "invalid requests never reached the callback (%d calls)",
	      daemon_state.limit_set_calls);

	big = malloc(big_len);
	memset(big, ' ', big_len);
	big[big_len - 1] = '\n';
	reply = raw_request(big, big_len, false);
	CHECK(strstr(reply_error(reply), "larger than 65536"), "oversized request refused: %s",
	      reply_error(reply));
	json_decref(reply);
	free(big);

	server_ops = &no_ops;
	expect_error("{\"op\":\"stats\"}\n", "does not support stats");
	server_ops = &fake_ops;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A client that connects and says nothing must not hold the server. */
static void test_stuck_client(void)
{
	int stuck = connect_to(sock_path);
	double start = now_s(), took;
	json_t *reply;

	CHECK(stuck >= 0, "stuck client connected");
	usleep(100 * 1000); /* let the server pick the stuck one first */
	reply = raw_text("{\"op\":\"limit_show\"}\n");
	took = now_s() - start;
	CHECK(json_is_true(json_object_get(reply, "ok")), "next client served after the stuck one");
	CHECK(took < RG_ADMIN_SERVER_TIMEOUT_MS / 1000.0 + 1.5,
	      "stuck client held the server %.1f s", took);
	json_decref(reply);
	close(stuck);
	printf("stuck client released the server after %.1f s\n", took);
}

static void test_client_errors(void)
{
	char path[300], err[512] = "";
	json_t *req = json_pack("{s:s}", "op", "limit_show"), *reply = NULL;
	int fd, ret;

	ret = rg_admin_call(sock_path, req, &reply, err, sizeof(err));
	CHECK(ret == 0 && reply, "rg_admin_call ok: %s", err);
	json_decref(reply);

	snprintf(path, sizeof(path), "%s/nowhere.sock", tmpdir);
	ret = rg_admin_call(path, req, &reply, err, sizeof(err));
	CHECK(ret == -ENOENT && !reply, "missing socket: %d", ret);
	CHECK(strstr(err, "cannot reach rowgated at ") && strstr(err, path) &&
		      strstr(err, "(is rowgated running?)"),
	      "missing socket message: %s", err);

	/* a socket file nobody listens on */
	snprintf(path, sizeof(path), "%s/stale.sock", tmpdir);
	fd = rg_admin_listen(path, RG_ADMIN_ROOT_ONLY);
	close(fd);
	ret = rg_admin_call(path, req, &reply, err, sizeof(err));
	snprintf(path, sizeof(path),
		 "cannot reach rowgated at %s/stale.sock: Connection refused (is rowgated running?)",
		 tmpdir);
	CHECK(ret == -ECONNREFUSED && !strcmp(err, path), "refused message: %s", err);

	json_decref(req);
	req = json_pack("{s:s}", "op", "nope");
	ret = rg_admin_call(sock_path, req, &reply, err, sizeof(err));
	CHECK(ret == -EREMOTEIO && reply && strstr(err, "unknown op"), "daemon refusal: %d %s", ret,
	      err);
	json_decref(reply);
	json_decref(req);
}

static void test_listen(void)
{
	char path[300];
	struct stat st;
	int fd;

	CHECK(stat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
	      "socket mode 0600, got %o", st.st_mode & 0777);
	CHECK(rg_admin_listen(sock_path, RG_ADMIN_ROOT_ONLY) == -EADDRINUSE,
	      "a live socket is not taken over");

	snprintf(path, sizeof(path), "%s/stale.sock", tmpdir);
	fd = rg_admin_listen(path, RG_ADMIN_ROOT_ONLY);
	CHECK(fd >= 0, "stale socket replaced: %d", fd);
	close(fd);

	snprintf(path, sizeof(path), "%s/plain-file", tmpdir);
	close(creat(path, 0644));
	CHECK(rg_admin_listen(path, RG_ADMIN_ROOT_ONLY) == -EEXIST, "a regular file is not removed");
	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), "file still there");
}

/* Run rowgatectl under wrapper (a command prefix, may be "") against the
 * socket at path; stdout into out, stderr into err; returns the exit code. */
static int run_ctl_at(const char *wrapper, const char *path, const char *args, char *out,
		      size_t outlen, char *err, size_t errlen)
{
	char cmd[1024], err_path[300];
	const char *build = getenv("BUILD") ?: "build";
	size_t n;
	FILE *p;
	int status;

	snprintf(err_path, sizeof(err_path), "%s/ctl.err", tmpdir);
	snprintf(cmd, sizeof(cmd), "%s %s/rowgatectl --socket %s %s 2>%s", wrapper, build, path,
		 args, err_path);
	p = popen(cmd, "r");
	n = fread(out, 1, outlen - 1, p);
	out[n] = 0;
	status = pclose(p);
	p = fopen(err_path, "r");
	n = p ? fread(err, 1, errlen - 1, p) : 0;
	err[n] = 0;
	if (p)
		fclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_ctl(const char *args, char *out, size_t outlen, char *err, size_t errlen)
{
	return run_ctl_at("", sock_path, args, out, outlen, err, errlen);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#define OPT "'ingest_rows_rate_limit'" /* inside the shell's double quotes */

static void test_rowgatectl(void)
{
	char bin[300], out[16384], err[4096];
	const char *build = getenv("BUILD") ?: "build";
	int calls, rc;
	json_t *j;

	snprintf(bin, sizeof(bin), "%s/rowgatectl", build);
	if (access(bin, X_OK)) {
		printf("skip rowgatectl checks: %s is not built\n", bin);
		return;
	}
	rc = run_ctl("limit set greptime-metrics 5000", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "metrics") && strstr(out, "5000"),
	      "limit set: rc %d out [%s] err [%s]", rc, out, err);

	CHECK(!strcmp(daemon_state.last_source, "admin"), "limit set: source admin (%s)",
	      daemon_state.last_source);
	rc = run_ctl("limit show", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "DATABASE") && strstr(out, "metrics") && strstr(out, "5000") &&
		      strstr(out, "logs"),
	      "limit show table: [%s] %s", out, err);

	rc = run_ctl("limit set lazy 10 --shadow", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "shadow mode"), "limit set --shadow: rc %d [%s] %s", rc, out,
	      err);
	rc = run_ctl("limit show", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "lazy") && strstr(out, "shadow") && strstr(out, "enforce"),
	      "limit show names the modes: [%s] %s", out, err);
	rc = run_ctl("limit set lazy 10 --shadowy", out, sizeof(out), err, sizeof(err));
	CHECK(rc != 0, "limit set with a stray argument refused: [%s]", out);

	rc = run_ctl("--json limit show metrics", out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	CHECK(rc == 0 && json_is_true(json_object_get(j, "ok")) &&
		      json_array_size(json_object_get(j, "limits")) == 1,
	      "--json limit show: [%s]", out);
	json_decref(j);

	calls = daemon_state.limit_set_calls;
	rc = run_ctl("limit set logs 1e3", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 1 && count_lines(err) == 1 && strstr(err, "exponent") && !out[0],
	      "bad limit: rc %d, one line on stderr: [%s]", rc, err);
	rc = run_ctl("--json limit set logs -1", out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	CHECK(rc == 1 && strstr(json_string_value(json_object_get(j, "error")) ?: "", "negative"),
	      "--json error is JSON: [%s]", out);
	json_decref(j);
	rc = run_ctl("sql \"ALTER TABLE cpu SET " OPT " = '1'\"", out, sizeof(out), err,
		     sizeof(err));
	CHECK(rc == 1 && strstr(err, "database option"), "table option refused: %s", err);
	CHECK(daemon_state.limit_set_calls == calls, "bad input never reached the daemon");

	rc = run_ctl("sql \"CREATE DATABASE IF NOT EXISTS sqldb WITH (" OPT " = '42')\"", out,
		     sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && daemon_state.limit_set_calls == calls + 1,
	      "CREATE DATABASE sets the limit: %s", err);
	CHECK(!strcmp(daemon_state.last_source, "sql"), "rowgatectl sql says so: %s",
	      daemon_state.last_source);
	rc = run_ctl("sql \"SHOW CREATE DATABASE sqldb\"", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && !strcmp(out, "CREATE DATABASE IF NOT EXISTS sqldb\nWITH(\n"
				      "  ingest_rows_rate_limit = '42'\n)\n"),
	      "SHOW CREATE DATABASE: [%s] %s", out, err);
	rc = run_ctl("sql \"ALTER DATABASE sqldb UNSET " OPT "\"", out, sizeof(out), err,
		     sizeof(err));
	CHECK(rc == 0, "ALTER DATABASE UNSET: %s", err);
	rc = run_ctl("--json sql \"SHOW CREATE DATABASE sqldb\"", out, sizeof(out), err,
		     sizeof(err));
	CHECK(rc == 0 && !strcmp(out, "{\"Database\":\"sqldb\",\"Create Database\":"
				      "\"CREATE DATABASE IF NOT EXISTS sqldb\"}\n"),
	      "SHOW CREATE without a limit: [%s]", out);

	rc = run_ctl("stats", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "admitted_rows") && strstr(out, "3000") &&
		      strstr(out, "18446744073709551615") && strstr(out, "conns_tracked"),
	      "stats table: [%s] %s", out, err);
	rc = run_ctl("stats broken", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 1 && count_lines(err) == 1 && strstr(err, "db_stats map"),
	      "daemon error shown: [%s]", err);

	rc = run_ctl("bogus", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 2 && count_lines(err) == 1, "unknown command: %d [%s]", rc, err);
	rc = run_ctl("--help", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "EXAMPLES") && strstr(out, RG_ADMIN_DEFAULT_PATH),
	      "--help lists defaults and examples");
	rc = run_ctl("--version", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "libbpf"), "--version: %s", out);
}

static void test_log_levels(void)
{
	enum rg_log_level level = RG_LOG_ERROR;

	CHECK(rg_log_parse_level("debug", &level) == 0 && level == RG_LOG_DEBUG, "debug level");
	CHECK(rg_log_parse_level("WARN", &level) == 0 && level == RG_LOG_WARN,
	      "level names are case-insensitive");
	CHECK(rg_log_parse_level("verbose", &level) == -EINVAL, "unknown level refused");
}

/* A group no account here has: the admin group of the permission tests. */
#define TEST_ADMIN_GID 4242
#define AS_NOBODY      "setpriv --reuid=65534 --regid=65534"

static atomic_bool perm_stop;

static void *perm_server_main(void *arg)
{
	int listen_fd = *(int *)arg;

	while (!atomic_load(&perm_stop)) {
		struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

		if (poll(&pfd, 1, 50) > 0)
			rg_admin_serve_one(listen_fd, TEST_ADMIN_GID, &fake_ops, &daemon_state);
	}
	return NULL;
}

/* Who may use the socket, run as an unprivileged user with rowgatectl: the
 * file mode keeps others out, and the peer credentials do even when the
 * mode would let them in. */
static void test_permissions(void)
{
	char path[300], out[4096], err[4096], bin[300];
	const char *build = getenv("BUILD") ?: "build";
	pthread_t server;
	struct stat st;
	int fd, rc, calls;

	snprintf(bin, sizeof(bin), "%s/rowgatectl", build);
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) || access(bin, X_OK)) {
		printf("skip permission checks: needs root, setpriv and %s\n", bin);
		return;
	}
	chmod(tmpdir, 0711); /* nobody may reach the sockets, the modes decide */
	snprintf(path, sizeof(path), "%s/group/admin.sock", tmpdir);
	fd = rg_admin_listen(path, TEST_ADMIN_GID);
	CHECK(fd >= 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0660 &&
		      st.st_gid == TEST_ADMIN_GID,
	      "group socket: mode %o gid %u", st.st_mode & 0777, (unsigned)st.st_gid);
	if (fd < 0)
		return;
	atomic_store(&perm_stop, false);
	pthread_create(&server, NULL, perm_server_main, &fd);

	calls = daemon_state.limit_set_calls;
	rc = run_ctl_at(AS_NOBODY " --clear-groups", path, "limit set logs 1", out, sizeof(out),
			err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "Permission denied") &&
		      strstr(err, "the admin socket is for root and the group of rowgated "
				  "--admin-group"),
	      "nobody is refused by the file mode: rc %d [%s]", rc, err);
	rc = run_ctl_at(AS_NOBODY " --groups=4242", path, "limit set logs 2", out, sizeof(out), err,
			sizeof(err));
	CHECK(rc == 0 && daemon_state.limit_set_calls == calls + 1,
	      "a supplementary member of the admin group may: rc %d [%s]", rc, err);
	rc = run_ctl_at("setpriv --reuid=65534 --regid=4242 --clear-groups", path,
			"limit set logs 3", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && daemon_state.limit_set_calls == calls + 2,
	      "the admin group as primary group may: rc %d [%s]", rc, err);

	/* a mode that lets anyone connect still lets no one else in */
	chmod(path, 0666);
	rc = run_ctl_at(AS_NOBODY " --clear-groups", path, "limit set logs 4", out, sizeof(out),
			err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "permission denied: uid 65534") &&
		      strstr(err, "nor in the admin group") &&
		      daemon_state.limit_set_calls == calls + 2,
	      "peer credentials refuse nobody: rc %d [%s]", rc, err);
	chmod(sock_path, 0666);
	rc = run_ctl_at(AS_NOBODY " --groups=4242", sock_path, "limit show", out, sizeof(out), err,
			sizeof(err));
	CHECK(rc != 0 && strstr(err, "permission denied: uid 65534") && !out[0],
	      "a root-only socket refuses the group too: rc %d [%s]", rc, err);
	rc = run_ctl("limit show", out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0, "root still may: rc %d [%s]", rc, err);
	chmod(sock_path, 0600);

	atomic_store(&perm_stop, true);
	pthread_join(server, NULL);
	close(fd);
	chmod(tmpdir, 0700);
}

int main(void)
{
	pthread_t server;
	char cmd[512];
	int listen_fd, ret;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	rg_log_set_level(RG_LOG_ERROR);
	snprintf(sock_path, sizeof(sock_path), "%s/run/rowgate/admin.sock", tmpdir);
	rg_limit_list_init(&daemon_state.limits);
	listen_fd = rg_admin_listen(sock_path, RG_ADMIN_ROOT_ONLY);
	CHECK(listen_fd >= 0, "listen on %s: %d", sock_path, listen_fd);
	if (listen_fd < 0)
		return check_report("test_admin");
	pthread_create(&server, NULL, server_main, &listen_fd);

	test_log_levels();
	test_listen();
	test_protocol();
	test_client_errors();
	test_stuck_client();
	test_rowgatectl();
	test_permissions();

	atomic_store(&server_stop, true);
	pthread_join(server, NULL);
	close(listen_fd);
	rg_limit_list_free(&daemon_state.limits);
	ret = check_report("test_admin");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return ret;
}
