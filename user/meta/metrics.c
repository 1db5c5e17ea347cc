// SPDX-License-Identifier: MIT
/* rowgate-meta's /metrics: the allocation (per database and frontend, from
 * the leader only, so that a sum over replicas counts each once), this
 * replica's role and its counters. */
#include <stddef.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/prom.h"
#include "rowgate_version.h"
#include "meta.h"

/* A frontend's figures in the allocation of one database. */
static const struct {
	const char *series, *type, *help;
	size_t off; /* of the __u64 in struct rg_alloc_fe */
} fe_series[] = {
	{ "rowgate_meta_quota_rows_per_second", "gauge",
	  "Quota granted to the frontend (0: none, it enforces the full limit).",
	  offsetof(struct rg_alloc_fe, quota_rows_per_s) },
	{ "rowgate_meta_demand_rows_per_second", "gauge",
	  "Demand the frontend reported (admitted + rejected rows/s).",
	  offsetof(struct rg_alloc_fe, demand_rows_per_s) },
	{ "rowgate_meta_rejected_rows_per_second", "gauge", "Rejected rows/s the frontend reported.",
	  offsetof(struct rg_alloc_fe, rejected_rows_per_s) },
	{ "rowgate_meta_debt_rows", "gauge", "Debt the frontend reported (rows).",
	  offsetof(struct rg_alloc_fe, debt_rows) },
	{ "rowgate_meta_demand_estimate_rows_per_second", "gauge",
	  "The allocator's demand estimate for the frontend (after hysteresis).",
	  offsetof(struct rg_alloc_fe, est_rows_per_s) },
};

static bool fe_shown(const struct rg_cluster *cl, const struct rg_cluster_db *d, __u32 i)
{
	return i < cl->nr_nodes && cl->nodes[i].id[0] && (d->alloc.fe[i].flags & RG_ALLOC_FE_LIVE);
}

static void put_db_fe(struct rg_prom *t, const struct rg_cluster_db *d, const char *node,
		      const char *series, __u64 v)
{
	rg_prom_printf(t, "%s{", series);
	rg_prom_label(t, "db", d->db.name);
	rg_prom_printf(t, ",");
	rg_prom_label(t, "frontend", node);
	rg_prom_printf(t, "} %llu\n", (unsigned long long)v);
}

static void put_allocation(struct rg_prom *t, const struct rg_cluster *cl, __u64 now)
{
	rg_prom_header(t, "rowgate_meta_limit_rows_per_second", "gauge",
		       "The cluster-wide limit of the database (0: disabled).");
	for (size_t k = 0; k < cl->nr_dbs; k++) {
		rg_prom_printf(t, "rowgate_meta_limit_rows_per_second{");
		rg_prom_label(t, "db", cl->dbs[k].db.name);
		rg_prom_printf(t, "} %llu\n", (unsigned long long)cl->dbs[k].alloc.limit_rows_per_s);
	}
	rg_prom_header(t, "rowgate_meta_granted_rows_per_second", "gauge",
		       "Quotas of the database outstanding (granted, lease not ended).");
	for (size_t k = 0; k < cl->nr_dbs; k++) {
		rg_prom_printf(t, "rowgate_meta_granted_rows_per_second{");
		rg_prom_label(t, "db", cl->dbs[k].db.name);
		rg_prom_printf(t, "} %llu\n",
			       (unsigned long long)rg_alloc_outstanding(&cl->dbs[k].alloc));
	}
	for (size_t s = 0; s < sizeof(fe_series) / sizeof(fe_series[0]); s++) {
		rg_prom_header(t, fe_series[s].series, fe_series[s].type, fe_series[s].help);
		for (size_t k = 0; k < cl->nr_dbs; k++) {
			const struct rg_cluster_db *d = &cl->dbs[k];

			for (__u32 i = 0; i < d->alloc.nr_fe; i++)
				if (fe_shown(cl, d, i))
					put_db_fe(t, d, cl->nodes[i].id, fe_series[s].series,
						  *(const __u64 *)((const char *)&d->alloc.fe[i] +
								   fe_series[s].off));
		}
	}
	rg_prom_header(t, "rowgate_meta_lease_left_ms", "gauge",
		       "Milliseconds until the frontend's quota lease ends.");
	for (size_t k = 0; k < cl->nr_dbs; k++) {
		const struct rg_cluster_db *d = &cl->dbs[k];

		for (__u32 i = 0; i < d->alloc.nr_fe; i++) {
			const struct rg_alloc_fe *f = &d->alloc.fe[i];

			if (fe_shown(cl, d, i))
				put_db_fe(t, d, cl->nodes[i].id, "rowgate_meta_lease_left_ms",
					  f->lease_expiry_ns > now ?
						  (f->lease_expiry_ns - now) / RG_NSEC_PER_MSEC :
						  0);
		}
	}
}

char *meta_metrics_render(struct meta *m, __u64 now)
{
	const struct rg_cluster *cl = &m->cl;
	struct rg_prom t;
	__u32 live = 0;

	if (rg_prom_init(&t))
		return NULL;
	rg_prom_build_info(&t, RG_VERSION);
	rg_prom_one(&t, "rowgate_meta_leader", "gauge",
		    "1 on the replica that allocates (the others redirect to it).", m->leader);
	rg_prom_one(&t, "rowgate_meta_learning", "gauge",
		    "1 while a new leader adopts the quotas frontends hold.",
		    m->leader && rg_cluster_learning(cl, now));
	rg_prom_one(&t, "rowgate_meta_elections_won_total", "counter",
		    "Times this replica became the leader.", m->elections_won);
	rg_prom_one(&t, "rowgate_meta_etcd_errors_total", "counter",
		    "etcd calls that failed (unreachable, timeout, or an error answer).",
		    __atomic_load_n(&m->etcd_errors, __ATOMIC_RELAXED));
	rg_prom_one(&t, "rowgate_meta_heartbeats_total", "counter",
		    "Frontend heartbeats this replica answered as the leader.", cl->heartbeats);
	rg_prom_one(&t, "rowgate_meta_heartbeats_learning_total", "counter",
		    "Of them, answered in a learning phase.", cl->heartbeats_learning);
	rg_prom_one(&t, "rowgate_meta_unauthorized_total", "counter",
		    "Requests refused for a missing or wrong bearer token.", m->unauthorized);
	rg_prom_one(&t, "rowgate_meta_forbidden_total", "counter",
		    "Requests refused because an agent's token may not make them "
		    "(a limit change).",
		    m->forbidden);
	rg_prom_one(&t, "rowgate_meta_client_cert_refused_total", "counter",
		    "Requests refused for want of a valid client certificate "
		    "(--tls-client-ca).",
		    m->no_client_cert);
	rg_prom_one(&t, "rowgate_meta_redirects_total", "counter",
		    "Requests redirected to the leader.", m->redirects);
	for (__u32 i = 0; i < cl->nr_nodes; i++)
		if (cl->nodes[i].id[0] && now - cl->nodes[i].last_hb_ns < cl->params.lease_ns)
			live++;
	rg_prom_one(&t, "rowgate_meta_frontends_live", "gauge",
		    "Frontends whose last heartbeat is younger than the lease.", live);
	rg_prom_header(&t, "rowgate_meta_frontend_heartbeats_total", "counter",
		       "Heartbeats answered, by frontend (since this replica first saw it).");
	for (__u32 i = 0; i < cl->nr_nodes; i++) {
		if (!cl->nodes[i].id[0])
			continue;
		rg_prom_printf(&t, "rowgate_meta_frontend_heartbeats_total{");
		rg_prom_label(&t, "frontend", cl->nodes[i].id);
		rg_prom_printf(&t, "} %llu\n", (unsigned long long)cl->nodes[i].heartbeats);
	}
	/* a follower's copy of the limits is stale: the leader alone speaks
	 * for the cluster */
	if (m->leader)
		put_allocation(&t, cl, now);
	return rg_prom_finish(&t);
}
