// SPDX-License-Identifier: MIT
/* rowgate-meta's cluster state and allocation glue.  See cluster.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

#define NODES_MAX 65536 /* frontends one allocator tracks */

int rg_cluster_init(struct rg_cluster *cl, enum rg_alloc_strategy strategy, __u64 lease_ms,
		    __u64 heartbeat_interval_ms, __u64 learning_ms)
{
	memset(cl, 0, sizeof(*cl));
	if (lease_ms == 0 || heartbeat_interval_ms == 0)
		return -EINVAL;
	rg_alloc_params_init(&cl->params, strategy);
	cl->params.lease_ns = lease_ms * RG_NSEC_PER_MSEC;
	cl->heartbeat_interval_ms = heartbeat_interval_ms;
	cl->learning_ns = learning_ms * RG_NSEC_PER_MSEC;
	rg_limit_list_init(&cl->limits);
	return 0;
}

static void db_free(struct rg_cluster_db *d)
{
	free(d->alloc.fe);
	free(d->alloc.order);
	memset(&d->alloc, 0, sizeof(d->alloc));
}

void rg_cluster_free(struct rg_cluster *cl)
{
	for (size_t i = 0; i < cl->nr_dbs; i++)
		db_free(&cl->dbs[i]);
	free(cl->dbs);
	free(cl->nodes);
	rg_limit_list_free(&cl->limits);
	memset(cl, 0, sizeof(*cl));
}

/* Give d one allocation slot per node; new slots are zeroed (unused). */
static int db_fit_nodes(struct rg_cluster_db *d, __u32 nr_nodes)
{
	struct rg_alloc_fe *fe;
	__u32 *order, old = d->alloc.nr_fe;

	if (old >= nr_nodes)
		return 0;
	fe = reallocarray(d->alloc.fe, nr_nodes, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	d->alloc.fe = fe;
	order = reallocarray(d->alloc.order, nr_nodes, sizeof(*order));
	if (!order)
		return -ENOMEM;
	d->alloc.order = order;
	memset(&fe[old], 0, sizeof(*fe) * (nr_nodes - old));
	memset(&order[old], 0, sizeof(*order) * (nr_nodes - old));
	d->alloc.nr_fe = nr_nodes;
	return 0;
}

static size_t limit_index(const struct rg_cluster *cl, const struct rg_limit_entry *e)
{
	return (size_t)(e - cl->limits.entries);
}

int rg_cluster_set_limit(struct rg_cluster *cl, const struct rg_db_key *db, __u64 limit)
{
	struct rg_limit_entry *e = rg_limit_list_find(&cl->limits, db);
	struct rg_cluster_db nd = {};
	size_t pos;

	if (e) {
		e->limit = limit;
		cl->dbs[limit_index(cl, e)].alloc.limit_rows_per_s = limit;
		return 0;
	}
	if (cl->nr_dbs == cl->cap_dbs) {
		size_t cap = cl->cap_dbs ? cl->cap_dbs * 2 : 16;
		struct rg_cluster_db *dbs = reallocarray(cl->dbs, cap, sizeof(*dbs));

		if (!dbs)
			return -ENOMEM;
		cl->dbs = dbs;
		cl->cap_dbs = cap;
	}
	nd.db = *db;
	nd.alloc.limit_rows_per_s = limit;
	if (db_fit_nodes(&nd, cl->nr_nodes)) {
		db_free(&nd);
		return -ENOMEM;
	}
	if (rg_limit_list_set(&cl->limits, db, limit)) {
		db_free(&nd);
		return -ENOMEM;
	}
	pos = limit_index(cl, rg_limit_list_find(&cl->limits, db));
	memmove(&cl->dbs[pos + 1], &cl->dbs[pos], (cl->nr_dbs - pos) * sizeof(cl->dbs[0]));
	cl->dbs[pos] = nd;
	cl->nr_dbs++;
	return 0;
}

int rg_cluster_unset_limit(struct rg_cluster *cl, const struct rg_db_key *db)
{
	struct rg_limit_entry *e = rg_limit_list_find(&cl->limits, db);
	size_t pos;

	if (!e)
		return -ENOENT;
	pos = limit_index(cl, e);
	db_free(&cl->dbs[pos]);
	memmove(&cl->dbs[pos], &cl->dbs[pos + 1], (cl->nr_dbs - pos - 1) * sizeof(cl->dbs[0]));
	cl->nr_dbs--;
	return rg_limit_list_unset(&cl->limits, db);
}

int rg_cluster_replace_limits(struct rg_cluster *cl, const struct rg_limit_list *limits)
{
	size_t i;
	int ret;

	/* drop what the new list lacks, then set everything it has */
	for (i = cl->limits.count; i-- > 0;)
		if (!rg_limit_list_find(limits, &cl->limits.entries[i].db))
			rg_cluster_unset_limit(cl, &cl->limits.entries[i].db);
	for (i = 0; i < limits->count; i++) {
		ret = rg_cluster_set_limit(cl, &limits->entries[i].db, limits->entries[i].limit);
		if (ret)
			return ret;
	}
	return 0;
}

void rg_cluster_start_leading(struct rg_cluster *cl, __u64 now_ns)
{
	/* what a previous leader granted is unknown: forget every slot */
	for (size_t i = 0; i < cl->nr_dbs; i++)
		for (__u32 j = 0; j < cl->dbs[i].alloc.nr_fe; j++)
			rg_alloc_forget(&cl->dbs[i].alloc, j);
	cl->learning_until_ns = cl->learning_ns ? now_ns + cl->learning_ns : 0;
}

bool rg_cluster_learning(const struct rg_cluster *cl, __u64 now_ns)
{
	return cl->learning_until_ns && now_ns < cl->learning_until_ns;
}

static int node_index(struct rg_cluster *cl, const char *id, __u32 *out, char *err,
		      size_t errlen)
{
	__u32 i;

	for (i = 0; i < cl->nr_nodes; i++) {
		if (!strcmp(cl->nodes[i].id, id)) {
			*out = i;
			return 0;
		}
	}
	/* reuse the slot of a frontend silent for long */
	for (i = 0; i < cl->nr_nodes; i++) {
		if (!cl->nodes[i].id[0])
			break;
	}
	if (i == cl->nr_nodes) {
		if (cl->nr_nodes == NODES_MAX) {
			snprintf(err, errlen, "this allocator tracks at most %d frontends", NODES_MAX);
			return -E2BIG;
		}
		if (cl->nr_nodes == cl->cap_nodes) {
			__u32 cap = cl->cap_nodes ? cl->cap_nodes * 2 : 8;
			struct rg_cluster_node *n = reallocarray(cl->nodes, cap, sizeof(*n));

			if (!n)
				goto nomem;
			cl->nodes = n;
			cl->cap_nodes = cap;
		}
		for (size_t k = 0; k < cl->nr_dbs; k++)
			if (db_fit_nodes(&cl->dbs[k], cl->nr_nodes + 1))
				goto nomem;
		cl->nr_nodes++;
	}
	memset(&cl->nodes[i], 0, sizeof(cl->nodes[i]));
	snprintf(cl->nodes[i].id, sizeof(cl->nodes[i].id), "%s", id);
	*out = i;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* Forget frontends silent for RG_META_NODE_FORGET_NS: their slots are reused. */
static void forget_silent_nodes(struct rg_cluster *cl, __u64 now_ns)
{
	for (__u32 i = 0; i < cl->nr_nodes; i++) {
		struct rg_cluster_node *n = &cl->nodes[i];

		if (!n->id[0] || now_ns < n->last_hb_ns ||
		    now_ns - n->last_hb_ns < RG_META_NODE_FORGET_NS)
			continue;
		for (size_t k = 0; k < cl->nr_dbs; k++)
			rg_alloc_forget(&cl->dbs[k].alloc, i);
		n->id[0] = 0;
	}
}

static const struct rg_meta_hb_db *find_report(const struct rg_meta_hb_req *req,
					       const struct rg_db_key *db)
{
	size_t lo = 0, hi = req->count;

	/* decode sorted the reports by name, as the limits are */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strncmp(req->dbs[mid].db.name, db->name, RG_DB_NAME_MAX);

		if (cmp == 0)
			return &req->dbs[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int rg_cluster_heartbeat(struct rg_cluster *cl, const struct rg_meta_hb_req *req, __u64 now_ns,
			 struct rg_meta_hb_reply *reply, char *err, size_t errlen)
{
	bool learning = rg_cluster_learning(cl, now_ns);
	__u32 i;
	int ret;

	memset(reply, 0, sizeof(*reply));
	forget_silent_nodes(cl, now_ns);
	ret = node_index(cl, req->node_id, &i, err, errlen);
	if (ret)
		return ret;
	cl->nodes[i].last_hb_ns = now_ns;
	cl->nodes[i].heartbeats++;
	cl->nodes[i].seen = true;
	cl->heartbeats++;
	if (learning)
		cl->heartbeats_learning++;
	reply->dbs = calloc(cl->nr_dbs + 1, sizeof(reply->dbs[0]));
	if (!reply->dbs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	reply->lease_ms = cl->params.lease_ns / RG_NSEC_PER_MSEC;
	reply->heartbeat_interval_ms = cl->heartbeat_interval_ms;
	reply->learning = learning;
	for (size_t k = 0; k < cl->nr_dbs; k++) {
		struct rg_cluster_db *d = &cl->dbs[k];
		const struct rg_meta_hb_db *rep = find_report(req, &d->db);
		struct rg_alloc_report r = {};
		struct rg_alloc_fe *f = &d->alloc.fe[i];
		__u64 L = d->alloc.limit_rows_per_s;

		if (rep) {
			r.admitted_rows_per_s = rep->admitted_rows_per_s;
			r.rejected_rows_per_s = rep->rejected_rows_per_s;
			r.debt_rows = rep->debt_rows;
		}
		rg_alloc_report(&d->alloc, &cl->params, i, &r, now_ns);
		if (learning) {
			__u64 held = rep ? rep->quota_rows_per_s : 0;

			/* adopt what the frontend enforces, so the sum stays
			 * what the previous leader left */
			f->quota_rows_per_s = L == 0 ? 0 : (held > L ? L : held);
			f->lease_expiry_ns = now_ns + cl->params.lease_ns;
			f->flags &= ~RG_ALLOC_FE_PENDING;
		}
		/* only this frontend is pending: the round grants it alone */
		rg_alloc_round(&d->alloc, &cl->params, now_ns);
		reply->dbs[k].db = d->db;
		reply->dbs[k].limit_rows_per_s = L;
		reply->dbs[k].quota_rows_per_s = f->quota_rows_per_s;
	}
	reply->count = cl->nr_dbs;
	return 0;
}

static json_t *u64j(__u64 v)
{
	return rg_json_u64(v);
}

static json_t *db_status_json(const struct rg_cluster *cl, const struct rg_cluster_db *d,
			      __u64 now_ns)
{
	json_t *o = json_object(), *arr = json_array();

	if (!o || !arr) {
		json_decref(o);
		json_decref(arr);
		return NULL;
	}
	for (__u32 i = 0; i < d->alloc.nr_fe && i < cl->nr_nodes; i++) {
		const struct rg_alloc_fe *f = &d->alloc.fe[i];
		bool live = f->flags & RG_ALLOC_FE_LIVE;

		if (!live || !cl->nodes[i].id[0])
			continue;
		json_array_append_new(
			arr, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "node",
				       cl->nodes[i].id, "demand", u64j(f->demand_rows_per_s),
				       "rejected", u64j(f->rejected_rows_per_s), "debt",
				       u64j(f->debt_rows), "estimate", u64j(f->est_rows_per_s),
				       "target", u64j(f->target_rows_per_s), "quota",
				       u64j(f->quota_rows_per_s), "lease_ms_left",
				       u64j(f->lease_expiry_ns > now_ns ?
						    (f->lease_expiry_ns - now_ns) / RG_NSEC_PER_MSEC :
						    0)));
	}
	json_object_set_new(o, "db", json_string(d->db.name));
	json_object_set_new(o, "limit", u64j(d->alloc.limit_rows_per_s));
	json_object_set_new(o, "outstanding", u64j(rg_alloc_outstanding(&d->alloc)));
	json_object_set_new(o, "frontends", arr);
	return o;
}

json_t *rg_cluster_status_json(const struct rg_cluster *cl, const struct rg_db_key *db,
			       __u64 now_ns)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	for (size_t k = 0; k < cl->nr_dbs; k++) {
		if (db && strncmp(db->name, cl->dbs[k].db.name, RG_DB_NAME_MAX))
			continue;
		if (json_array_append_new(arr, db_status_json(cl, &cl->dbs[k], now_ns))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}
