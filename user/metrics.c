// SPDX-License-Identifier: MIT
/* Prometheus exposition of rowgate's counters, straight from the maps. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <microhttpd.h>

#include "clock.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "health.h"
#include "log.h"
#include "metrics.h"

struct rg_metrics {
	struct MHD_Daemon *mhd;
	struct rg_metrics_maps maps;
};

struct text {
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		t->cap = t->cap * 2 + (size_t)n;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf) {
			t->err = -ENOMEM;
			return;
		}
	}
}

/* Per-database series: name, help, type, and where the value comes from. */
enum src { SRC_STAT, SRC_LIMIT, SRC_QUOTA, SRC_DEBT, SRC_TOKENS };
static const struct {
	const char *name, *help, *type;
	enum src src;
	size_t off;
} db_series[] = {
#define STAT(n, f, h) { "rowgate_" n, h, "counter", SRC_STAT, offsetof(struct rg_db_stats, f) }
	STAT("admitted_requests_total", admitted_requests, "Write requests admitted."),
	STAT("admitted_rows_total", admitted_rows, "Rows of admitted writes, charged to the bucket."),
	STAT("rejected_requests_total", rejected_requests, "Write requests answered 429 by the kernel."),
	STAT("rejected_rows_total", rejected_rows, "Rows of rejected writes."),
	STAT("unenforced_requests_total", unenforced_requests,
	     "Writes that should have been rejected but could not be answered in order: passed."),
	STAT("unenforced_rows_total", unenforced_rows, "Rows of unenforced writes."),
#undef STAT
	{ "rowgate_limit_rows_per_second", "Configured limit (0 = disabled).", "gauge", SRC_LIMIT, 0 },
	{ "rowgate_quota_rows_per_second", "Effective quota of this host.", "gauge", SRC_QUOTA, 0 },
	{ "rowgate_debt_rows", "Rows admitted beyond the tokens there were, not yet repaid.", "gauge",
	  SRC_DEBT, 0 },
	{ "rowgate_tokens", "Whole tokens available now.", "gauge", SRC_TOKENS, 0 },
};

static const struct {
	const char *name, *help;
	size_t off;
} global_series[] = {
#define G(n, f, h) { "rowgate_" n, h, offsetof(struct rg_global_stats, f) }
	G("connections_tracked_total", conns_tracked, "Ingest connections guarded."),
	G("connections_untracked_total", conns_untracked, "Connections passed unguarded: state map full."),
	G("non_http_connections_total", non_http_conns, "Connections whose first bytes were not HTTP."),
	G("bad_requests_total", bad_requests, "Requests answered 400 (ambiguous or malformed framing)."),
	G("heads_split_total", heads_split, "Request heads held back across segments."),
	G("pipelined_unenforced_total", pipelined_unenforced, "Rejections passed to keep responses in order."),
	G("recvmsg_failopen_total", recvmsg_failopen, "Verdicts run inside recvmsg: passed."),
	G("responses_close_total", responses_close, "429s that had to close the connection."),
	G("internal_errors_total", internal_errors, "Helper failures: passed unenforced."),
#undef G
};

/* Label values escape backslash, quote and newline. */
static void put_db(struct text *t, const char *name)
{
	for (; *name; name++) {
		if (*name == '\\' || *name == '"')
			put(t, "\\%c", *name);
		else if (*name == '\n')
			put(t, "\\n");
		else
			put(t, "%c", *name);
	}
}

/* rowgate_enforcing{port}: 1 while every part of enforcement is in force. */
static void put_enforcing(struct text *t, const char *bpffs)
{
	struct rg_health h;

	put(t, "# HELP rowgate_enforcing Enforcement in force for the port (programs "
	       "attached, cgroup present); 0 means writes pass unlimited.\n"
	       "# TYPE rowgate_enforcing gauge\n");
	if (!bpffs || rg_health_read(bpffs, &h))
		return;
	for (int i = 0; i < h.nports; i++)
		put(t, "rowgate_enforcing{port=\"%u\"} %d\n", h.ports[i], h.enforcing);
	put(t, "# HELP rowgate_connections_adopting Connections adopted at a start, not yet "
	       "at a request boundary.\n# TYPE rowgate_connections_adopting gauge\n"
	       "rowgate_connections_adopting %llu\n",
	    (unsigned long long)h.adopting_now);
}

char *rg_metrics_render(const struct rg_metrics_maps *maps)
{
	struct text t = { 0 };
	struct rg_global_stats g = { 0 };
	struct rg_db_key key, next;
	size_t i;
	__u32 zero = 0;

	t.cap = 4096;
	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	for (i = 0; i < sizeof(db_series) / sizeof(db_series[0]); i++) {
		bool first = true;

		put(&t, "# HELP %s %s\n# TYPE %s %s\n", db_series[i].name, db_series[i].help,
		    db_series[i].name, db_series[i].type);
		while (bpf_map_get_next_key(maps->db_stats_fd, first ? NULL : &key, &next) == 0) {
			struct rg_db_stats st;
			struct rg_limit lim = { 0 };
			struct rg_bucket_value bv;
			bool has_bucket;
			__u64 v = 0;

			key = next;
			first = false;
			if (bpf_map_lookup_elem(maps->db_stats_fd, &key, &st))
				continue;
			bpf_map_lookup_elem(maps->limits_fd, &key, &lim);
			has_bucket = bpf_map_lookup_elem_flags(maps->buckets_fd, &key, &bv,
							       BPF_F_LOCK) == 0;
			if (has_bucket)
				rg_bucket_refill(&bv.b, rg_monotonic_ns());
			switch (db_series[i].src) {
			case SRC_STAT:
				v = *(__u64 *)((char *)&st + db_series[i].off);
				break;
			case SRC_LIMIT:
				v = lim.limit_rows_per_s;
				break;
			case SRC_QUOTA:
				v = lim.limit_rows_per_s ? rg_effective_quota(&lim) : 0;
				break;
			case SRC_DEBT:
				v = has_bucket ? bv.b.debt_rows : 0;
				break;
			case SRC_TOKENS:
				v = has_bucket ? bv.b.tokens : 0;
				break;
			}
			put(&t, "%s{db=\"", db_series[i].name);
			put_db(&t, key.name);
			put(&t, "\"} %llu\n", (unsigned long long)v);
		}
	}
	bpf_map_lookup_elem(maps->global_fd, &zero, &g);
	for (i = 0; i < sizeof(global_series) / sizeof(global_series[0]); i++)
		put(&t, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", global_series[i].name,
		    global_series[i].help, global_series[i].name, global_series[i].name,
		    (unsigned long long)*(__u64 *)((char *)&g + global_series[i].off));
	put_enforcing(&t, maps->bpffs);
	if (t.err) {
		free(t.buf);
		return NULL;
	}
	return t.buf;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **req_cls)
{
	struct rg_metrics *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;
	char *body;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = strdup("only GET /metrics\n");
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		body = strdup("rowgate serves /metrics\n");
		status = MHD_HTTP_NOT_FOUND;
	} else {
		body = rg_metrics_render(&m->maps);
	}
	if (!body)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

int rg_metrics_start(const char *addr, const struct rg_metrics_maps *maps,
		     struct rg_metrics **out)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	char host[128];
	const char *colon = strrchr(addr, ':');
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	struct rg_metrics *m;
	char *end;
	long port;
	size_t hlen;

	if (!colon || colon == addr)
		goto bad;
	port = strtol(colon + 1, &end, 10);
	if (*end || port <= 0 || port > 65535)
		goto bad;
	hlen = (size_t)(colon - addr);
	if (hlen >= sizeof(host))
		goto bad;
	memcpy(host, addr, hlen);
	host[hlen] = 0;
	if (host[0] == '[' && host[hlen - 1] == ']') {
		host[hlen - 1] = 0;
		if (inet_pton(AF_INET6, host + 1, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
	} else {
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto bad;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->maps = *maps;
	m->mhd = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, m,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!m->mhd) {
		pr_err("cannot serve metrics on %s (address in use?)", addr);
		free(m);
		return -EADDRINUSE;
	}
	*out = m;
	return 0;
bad:
	pr_err("--metrics '%s': expected IP:PORT, e.g. 127.0.0.1:9464 or [::1]:9464", addr);
	return -EINVAL;
}

void rg_metrics_stop(struct rg_metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->mhd);
	free(m);
}
