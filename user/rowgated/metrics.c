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
#include <unistd.h>

#include <bpf/bpf.h>
#include <microhttpd.h>

#include "../lib/clock.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "../lib/health.h"
#include "../lib/log.h"
#include "metrics.h"
#include "h2_close.h"
#include "reconcile.h"
#include "../lib/counters.h"
#include "../lib/maps.h"

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

/* Label values escape backslash, quote and newline. */
static void put_label(struct text *t, const char *name, const char *value)
{
	put(t, "%s=\"", name);
	for (; *value; value++) {
		if (*value == '\\' || *value == '"')
			put(t, "\\%c", *value);
		else if (*value == '\n')
			put(t, "\\n");
		else
			put(t, "%c", *value);
	}
	put(t, "\"");
}

/* One labelled row of a table: the database, the protocol (or NULL) and
 * the struct the table describes. */
struct row {
	struct rg_db_key db;
	const char *protocol;
	union {
		struct rg_db_stats db;
		struct rg_proto_stats proto;
		struct rg_udp_stats udp;
	} v;
};

struct rows {
	struct row *r;
	size_t n, cap;
};

static struct row *add_row(struct rows *rs)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct row *r = reallocarray(rs->r, cap, sizeof(*r));

		if (!r)
			return NULL;
		rs->r = r;
		rs->cap = cap;
	}
	memset(&rs->r[rs->n], 0, sizeof(rs->r[0]));
	return &rs->r[rs->n++];
}

/* Every series of table t, one sample per row. */
static void put_table(struct text *t, const struct rg_counter_table *tab, const struct rows *rs)
{
	for (size_t i = 0; i < tab->n; i++) {
		const struct rg_counter_desc *d = &tab->d[i];

		put(t, "# HELP %s %s\n# TYPE %s %s\n", d->series, d->help, d->series,
		    rg_counter_kind_name(d->kind));
		for (size_t k = 0; k < rs->n; k++) {
			put(t, "%s{", d->series);
			put_label(t, "db", rs->r[k].db.name);
			if (rs->r[k].protocol) {
				put(t, ",");
				put_label(t, "protocol", rs->r[k].protocol);
			}
			put(t, "} %llu\n", (unsigned long long)rg_counter_get(d, &rs->r[k].v));
		}
	}
}

/* Host-wide series of table t from st. */
static void put_global(struct text *t, const struct rg_counter_table *tab, const void *st)
{
	for (size_t i = 0; i < tab->n; i++) {
		const struct rg_counter_desc *d = &tab->d[i];

		put(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", d->series, d->help, d->series,
		    rg_counter_kind_name(d->kind), d->series,
		    (unsigned long long)rg_counter_get(d, st));
	}
}

/* Adoption and connection-table counters (guard_stats) and the verdict
 * entry's (verdict_stats), when pinned. */
static void put_guard(struct text *t, const char *bpffs)
{
	struct rg_guard_stats gs = { 0 };
	struct rg_verdict_stats vs = { 0 };
	__u32 zero = 0;
	int fd;

	fd = bpffs ? rg_pin_open(bpffs, RG_STR(RG_MAP_GUARD_STATS)) : -ENOENT;
	if (fd < 0)
		return;
	bpf_map_lookup_elem(fd, &zero, &gs);
	close(fd);
	put_global(t, &rg_guard_stats_table, &gs);
	fd = rg_pin_open(bpffs, RG_STR(RG_MAP_VERDICT_STATS));
	if (fd < 0)
		return;
	bpf_map_lookup_elem(fd, &zero, &vs);
	close(fd);
	put_global(t, &rg_verdict_stats_table, &vs);
}

/* The per-database, per-protocol and global series of the HTTP path. */
static void put_http(struct text *t, const struct rg_metrics_maps *maps)
{
	struct rg_db_maps m = {
		.limits_fd = maps->limits_fd,
		.buckets_fd = maps->buckets_fd,
		.db_stats_fd = maps->db_stats_fd,
		.proto_stats_fd = maps->proto_stats_fd,
	};
	struct rows dbs = { 0 }, protos = { 0 };
	struct rg_global_stats g = { 0 };
	struct rg_db_key key, next;
	__u64 now = rg_monotonic_ns();
	bool first = true;
	__u32 zero = 0;

	while (bpf_map_get_next_key(maps->db_stats_fd, first ? NULL : &key, &next) == 0) {
		struct rg_db_snapshot snap;
		struct row *r;

		key = next;
		first = false;
		if (rg_db_snapshot_read(&m, &key, now, &snap) || !snap.has_stats)
			continue;
		r = add_row(&dbs);
		if (!r)
			goto nomem;
		r->db = key;
		r->v.db = snap.stats;
		for (__u32 p = RG_PROTO_NONE + 1; maps->proto_stats_fd >= 0 && p < RG_PROTO_MAX; p++) {
			struct rg_proto_key pk = { .db = key, .protocol = p };
			struct rg_proto_stats ps;

			if (bpf_map_lookup_elem(maps->proto_stats_fd, &pk, &ps) ||
			    !rg_proto_stats_seen(&ps))
				continue;
			r = add_row(&protos);
			if (!r)
				goto nomem;
			r->db = key;
			r->protocol = rg_protocol_name(p);
			r->v.proto = ps;
		}
	}
	put_table(t, &rg_db_stats_table, &dbs);
	put_table(t, &rg_proto_stats_table, &protos);
	bpf_map_lookup_elem(maps->global_fd, &zero, &g);
	put_global(t, &rg_global_stats_table, &g);
	put_guard(t, maps->bpffs);
	if (maps->reconciler) {
		struct rg_reconcile_stats rs;

		rg_reconciler_stats(maps->reconciler, &rs);
		put_global(t, &rg_reconcile_stats_table, &rs);
	}
	if (maps->closer) {
		struct rg_h2_close_stats cs;

		rg_h2_closer_stats(maps->closer, &cs);
		put_global(t, &rg_h2_close_stats_table, &cs);
	}
	goto out;
nomem:
	t->err = -ENOMEM;
out:
	free(dbs.r);
	free(protos.r);
}

/* The UDP path's series, when its maps are pinned. */
static void put_udp(struct text *t, const char *bpffs)
{
	struct rows udp = { 0 };
	struct rg_xdp_stats xs = { 0 };
	struct rg_db_key key, next;
	bool first = true;
	__u32 zero = 0;
	int fd, xfd;

	fd = bpffs ? rg_pin_open(bpffs, RG_STR(RG_MAP_UDP_STATS)) : -ENOENT;
	if (fd < 0)
		return;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		struct row *r;

		key = next;
		first = false;
		r = add_row(&udp);
		if (!r) {
			t->err = -ENOMEM;
			break;
		}
		r->db = key;
		if (rg_percpu_sum(fd, &key, &r->v.udp, sizeof(r->v.udp)))
			udp.n--;
	}
	close(fd);
	put_table(t, &rg_udp_stats_table, &udp);
	free(udp.r);
	xfd = rg_pin_open(bpffs, RG_STR(RG_MAP_XDP_STATS));
	if (xfd >= 0) {
		rg_percpu_sum(xfd, &zero, &xs, sizeof(xs));
		close(xfd);
	}
	put_global(t, &rg_xdp_stats_table, &xs);
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

	t.cap = 4096;
	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	put_http(&t, maps);
	put_udp(&t, maps->bpffs);
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
