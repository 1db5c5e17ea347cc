// SPDX-License-Identifier: MIT
/* Prometheus exposition of rowgate's counters, straight from the maps. */
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
#include "../lib/prom.h"
#include "meta_agent.h"
#include "rowgate_version.h"

struct rg_metrics {
	struct MHD_Daemon *mhd;
	struct rg_metrics_maps maps;
};

/* One labelled row of a table: the database, the protocol (or NULL) and
 * the struct the table describes. */
struct row {
	struct rg_db_key db;
	const char *protocol;
	union {
		struct rg_db_stats db;
		struct rg_proto_stats proto;
		struct rg_udp_stats udp;
		struct rg_unlimited_stats unlimited;
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
static void put_table(struct rg_prom *t, const struct rg_counter_table *tab, const struct rows *rs)
{
	for (size_t i = 0; i < tab->n; i++) {
		const struct rg_counter_desc *d = &tab->d[i];

		rg_prom_header(t, d->series, rg_counter_kind_name(d->kind), d->help);
		for (size_t k = 0; k < rs->n; k++) {
			rg_prom_printf(t, "%s{", d->series);
			rg_prom_label(t, "db", rs->r[k].db.name);
			if (rs->r[k].protocol) {
				rg_prom_printf(t, ",");
				rg_prom_label(t, "protocol", rs->r[k].protocol);
			}
			rg_prom_printf(t, "} %llu\n",
				       (unsigned long long)rg_counter_get(d, &rs->r[k].v));
		}
	}
}

/* The one entry of the pinned counter map NAME (a struct of __u64 counters
 * that TABLE describes, read into buf) as series, when it is pinned. */
static void put_pinned(struct rg_prom *t, const char *bpffs, const char *name,
		       const struct rg_counter_table *table, void *buf)
{
	__u32 zero = 0;
	int fd = bpffs ? rg_pin_open(bpffs, name) : -ENOENT;

	if (fd < 0)
		return;
	bpf_map_lookup_elem(fd, &zero, buf);
	close(fd);
	rg_prom_table(t, table, buf);
}

/* The HTTP/2 path's host-wide counters (h2_stats). */
static void put_h2(struct rg_prom *t, const char *bpffs)
{
	struct rg_h2_stats h2 = { 0 };

	put_pinned(t, bpffs, RG_STR(RG_MAP_H2_STATS), &rg_h2_stats_table, &h2);
}

/* Adoption and connection-table counters (guard_stats) and the verdict
 * entry's (verdict_stats). */
static void put_guard(struct rg_prom *t, const char *bpffs)
{
	struct rg_guard_stats gs = { 0 };
	struct rg_verdict_stats vs = { 0 };

	put_pinned(t, bpffs, RG_STR(RG_MAP_GUARD_STATS), &rg_guard_stats_table, &gs);
	put_pinned(t, bpffs, RG_STR(RG_MAP_VERDICT_STATS), &rg_verdict_stats_table, &vs);
}

/* Databases whose limit runs in shadow mode, and what it would have
 * refused (the pinned shadow map). */
static void put_shadow(struct rg_prom *t, const char *bpffs)
{
	static const struct {
		const char *name, *type, *help;
	} series[] = {
		{ "rowgate_shadow", "gauge",
		  "1 while the database's limit runs in shadow mode: counted, never refused." },
		{ "rowgate_would_reject_requests_total", "counter",
		  "Writes a limit in shadow mode would have refused: passed, uncharged." },
		{ "rowgate_would_reject_rows_total", "counter",
		  "Rows of those writes where known when they passed (gRPC, UDP; 0 for HTTP)." },
	};
	struct rg_db_key key, next;
	struct rg_shadow_stats st;
	int fd = bpffs ? rg_pin_open(bpffs, RG_STR(RG_MAP_SHADOW)) : -ENOENT;

	if (fd < 0)
		return;
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		bool first = true;

		rg_prom_header(t, series[i].name, series[i].type, series[i].help);
		while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
			key = next;
			first = false;
			if (bpf_map_lookup_elem(fd, &key, &st))
				continue;
			rg_prom_printf(t, "%s{", series[i].name);
			rg_prom_label(t, "db", key.name);
			rg_prom_printf(t, "} %llu\n",
				       i == 0 ? 1ULL :
				       i == 1 ? (unsigned long long)st.would_reject_requests :
						(unsigned long long)st.would_reject_rows);
		}
	}
	close(fd);
}

/* Writes to databases without a limit, by database (every path's). */
static void put_unlimited(struct rg_prom *t, const char *bpffs)
{
	struct rows rs = { 0 };
	struct rg_db_key key, next;
	bool first = true;
	int fd = bpffs ? rg_pin_open(bpffs, RG_STR(RG_MAP_UNLIMITED)) : -ENOENT;

	if (fd < 0)
		return;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		struct rg_unlimited_stats u;
		struct row *r;

		key = next;
		first = false;
		if (bpf_map_lookup_elem(fd, &key, &u))
			continue; /* evicted meanwhile */
		r = add_row(&rs);
		if (!r) {
			t->err = -ENOMEM;
			break;
		}
		r->db = key;
		r->v.unlimited = u;
	}
	close(fd);
	put_table(t, &rg_unlimited_stats_table, &rs);
	free(rs.r);
}

/* The per-database, per-protocol and global series of the HTTP path. */
static void put_http(struct rg_prom *t, const struct rg_metrics_maps *maps)
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
		for (__u32 p = RG_PROTO_NONE + 1; maps->proto_stats_fd >= 0 && p < RG_PROTO_MAX;
		     p++) {
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
	rg_prom_table(t, &rg_global_stats_table, &g);
	put_h2(t, maps->bpffs);
	put_guard(t, maps->bpffs);
	put_shadow(t, maps->bpffs);
	put_unlimited(t, maps->bpffs);
	if (maps->reconciler) {
		struct rg_reconcile_stats rs;

		rg_reconciler_stats(maps->reconciler, &rs);
		rg_prom_table(t, &rg_reconcile_stats_table, &rs);
	}
	if (maps->closer) {
		struct rg_h2_close_stats cs;

		rg_h2_closer_stats(maps->closer, &cs);
		rg_prom_table(t, &rg_h2_close_stats_table, &cs);
	}
	goto out;
nomem:
	t->err = -ENOMEM;
out:
	free(dbs.r);
	free(protos.r);
}

/* The UDP path's series, when its maps are pinned. */
static void put_udp(struct rg_prom *t, const char *bpffs)
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
	rg_prom_table(t, &rg_xdp_stats_table, &xs);
}

/* The correction lag histogram: the one series that is not a counter of a
 * table, as its buckets are counted by rowgated. */
static void put_lag(struct rg_prom *t, const struct rg_reconciler *rec)
{
	struct rg_lag_histogram h;

	rg_reconciler_lag_histogram(rec, &h);
	rg_prom_header(t, "rowgate_reconcile_lag_seconds", "histogram",
		       "A counted body's request end to its bucket corrected.");
	for (unsigned int i = 0; i < RG_LAG_NR_BOUNDS; i++)
		rg_prom_printf(t, "rowgate_reconcile_lag_seconds_bucket{le=\"%g\"} %llu\n",
			       (double)rg_lag_bound_us[i] / 1e6, (unsigned long long)h.le[i]);
	rg_prom_printf(t,
		       "rowgate_reconcile_lag_seconds_bucket{le=\"+Inf\"} %llu\n"
		       "rowgate_reconcile_lag_seconds_sum %.9f\n"
		       "rowgate_reconcile_lag_seconds_count %llu\n",
		       (unsigned long long)h.count, (double)h.sum_ns / 1e9,
		       (unsigned long long)h.count);
}

static void put_bool(struct rg_prom *t, const char *name, const char *label, const char *value,
		     bool on)
{
	rg_prom_printf(t, "%s{", name);
	rg_prom_label(t, label, value);
	rg_prom_printf(t, "} %d\n", on);
}

/* What `rowgatectl status` reads from the kernel: rowgate_enforcing{port}
 * (1 while every part of enforcement is in force), the programs, the
 * cgroup and the connection table. */
static void put_health(struct rg_prom *t, const char *bpffs)
{
	struct rg_health h;

	rg_prom_header(t, "rowgate_enforcing", "gauge",
		       "Enforcement in force for the port (programs attached, cgroup present); "
		       "0 means writes pass unlimited.");
	if (!bpffs || rg_health_read(bpffs, &h))
		return;
	for (int i = 0; i < h.nports; i++)
		rg_prom_printf(t, "rowgate_enforcing{port=\"%u\"} %d\n", h.ports[i], h.enforcing);
	rg_prom_header(t, "rowgate_program_attached", "gauge",
		       "1 while the program is attached where enforcement needs it.");
	put_bool(t, "rowgate_program_attached", "program", "sockops", h.sockops);
	put_bool(t, "rowgate_program_attached", "program", "getpeername4", h.peer4);
	put_bool(t, "rowgate_program_attached", "program", "getpeername6", h.peer6);
	put_bool(t, "rowgate_program_attached", "program", "verdict", h.verdict);
	put_bool(t, "rowgate_program_attached", "program", "hold_resets", h.resets);
	if (h.refuse_wanted)
		put_bool(t, "rowgate_program_attached", "program", "fail_closed_filter", h.refuse);
	if (h.entry)
		put_bool(t, "rowgate_program_attached", "program", "verdict_slot",
			 h.slot_prog_id != 0);
	rg_prom_one(t, "rowgate_cgroup_present", "gauge",
		    "1 while the guarded cgroup exists (its path as recorded at attach).",
		    h.cgroup_present);
	rg_prom_one(t, "rowgate_connections_adopting", "gauge",
		    "Connections adopted at a start, not yet at a request boundary.",
		    h.adopting_now);
	rg_prom_one(t, "rowgate_connections_guarded", "gauge",
		    "Connections with state now, adopting ones not included.",
		    h.conns_now - h.adopting_now);
	rg_prom_one(t, "rowgate_connection_table_size", "gauge",
		    "Connections the table holds (--max-conns); beyond: --conns-full.",
		    h.max_conns);
	rg_prom_one(t, "rowgate_connections_adopted_total", "counter",
		    "Connections that predate a start, adopted.", h.adopted);
}

char *rg_metrics_render(const struct rg_metrics_maps *maps)
{
	struct rg_prom t;

	if (rg_prom_init(&t))
		return NULL;
	rg_prom_build_info(&t, RG_VERSION);
	put_http(&t, maps);
	if (maps->reconciler)
		put_lag(&t, maps->reconciler);
	put_udp(&t, maps->bpffs);
	put_health(&t, maps->bpffs);
	if (maps->agent) {
		struct rg_agent_stats as;

		rg_meta_agent_read_stats(maps->agent, &as);
		rg_prom_table(&t, &rg_agent_stats_table, &as);
	}
	return rg_prom_finish(&t);
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

/* *mhd serving m on addr; 0 or negative errno (logged). */
static int listen_on(struct rg_metrics *m, const char *addr, struct MHD_Daemon **mhd)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	struct rg_listen_addr la;
	char err[300];

	if (rg_listen_addr_parse(addr, &la, err, sizeof(err))) {
		pr_err("--metrics '%s': %s (e.g. :9464, 127.0.0.1:9464, [::1]:9464, "
		       "localhost:9464)",
		       addr, err);
		return -EINVAL;
	}
	if (la.any) {
		/* IPv6 and IPv4 on one socket; IPv4 alone where IPv6 is off */
		*mhd = MHD_start_daemon(flags | MHD_USE_DUAL_STACK, la.port, NULL, NULL, handle, m,
					MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
		if (!*mhd)
			*mhd = MHD_start_daemon(flags, la.port, NULL, NULL, handle, m,
						MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	} else {
		if (la.ss.ss_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		*mhd = MHD_start_daemon(flags, la.port, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR,
					(struct sockaddr *)&la.ss, MHD_OPTION_CONNECTION_TIMEOUT,
					10u, MHD_OPTION_END);
	}
	if (!*mhd) {
		pr_err("cannot serve metrics on %s (address in use, or not an address of "
		       "this host?)",
		       addr);
		return -EADDRINUSE;
	}
	return 0;
}

int rg_metrics_new(const struct rg_metrics_maps *maps, struct rg_metrics **out)
{
	struct rg_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->maps = *maps;
	*out = m;
	return 0;
}

int rg_metrics_listen(struct rg_metrics *m, const char *addr)
{
	struct MHD_Daemon *mhd = NULL;
	int err;

	/* the new listener first: if it cannot listen, the old one stays */
	if (addr) {
		err = listen_on(m, addr, &mhd);
		if (err)
			return err;
	}
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	m->mhd = mhd;
	return 0;
}

void rg_metrics_free(struct rg_metrics *m)
{
	if (!m)
		return;
	rg_metrics_listen(m, NULL);
	free(m);
}
