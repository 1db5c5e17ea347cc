// SPDX-License-Identifier: MIT
/* Limits into the maps (from the state file, the admin socket or the meta
 * agent) and the admin socket's operations: limit set/unset/show, stats,
 * detach. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "../lib/clock.h"
#include "../lib/counters.h"
#include "../lib/detach.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "meta_agent.h"
#include "h2_close.h"
#include "reconcile.h"
#include "rowgated.h"

/* The maps of a database, for lib/maps.h. */
static struct rg_db_maps db_maps(const struct daemon *d)
{
	return (struct rg_db_maps){
		.limits_fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS),
		.buckets_fd = bpf_map__fd(d->skel->maps.RG_MAP_BUCKETS),
		.db_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS),
		.proto_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS),
	};
}

/* A configured limit, no quota: the standalone write. */
/* Shadow mode on or off for db (the shadow map's entry, counters kept
 * while it stays on). */
static int apply_shadow(struct daemon *d, const struct rg_db_key *db, bool shadow)
{
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_SHADOW);
	struct rg_shadow_stats zero = {};

	if (!shadow)
		return bpf_map_delete_elem(fd, db) && errno != ENOENT ? -errno : 0;
	if (bpf_map_update_elem(fd, db, &zero, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The limit, shadow entry first: a database going into shadow mode never
 * refuses meanwhile; one leaving it starts refusing with its new limit. */
static int apply_limit_mode(struct daemon *d, const struct rg_db_key *db, __u64 limit, bool shadow)
{
	struct rg_db_maps m = db_maps(d);
	int err = shadow ? apply_shadow(d, db, true) : 0;

	if (!err)
		err = rg_limit_write(&m, db, limit, 0);
	if (!err && !shadow)
		err = apply_shadow(d, db, false);
	return err;
}


static const char *map_errno(int err)
{
	switch (-err) {
	case E2BIG:
	case ENOSPC:
		return "the limits map is full";
	case ENOMEM:
		return "out of kernel memory";
	default:
		return strerror(-err);
	}
}

static bool limit_kept(const void *key, void *limits)
{
	return rg_limit_list_find(limits, key) != NULL;
}

static bool shadow_kept(const void *key, void *limits)
{
	const struct rg_limit_entry *e = rg_limit_list_find(limits, key);

	return e && e->shadow;
}

int rgd_sync_limits_to_maps(struct daemon *d)
{
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS);
	size_t i;
	int err;

	for (i = 0; i < d->limits.count; i++) {
		const struct rg_limit_entry *e = &d->limits.entries[i];

		err = apply_limit_mode(d, &e->db, e->limit, e->shadow);
		/* a map full of removed limits: drop them first after all */
		if ((err == -E2BIG || err == -ENOSPC) &&
		    !rg_map_prune(fd, sizeof(struct rg_db_key), limit_kept, &d->limits))
			err = apply_limit_mode(d, &e->db, e->limit, e->shadow);
		if (err) {
			pr_err("cannot load the limit of %s: %s", d->limits.entries[i].db.name,
			       map_errno(err));
			return err;
		}
	}
	/* then drop limits the state file no longer has: a database kept is
	 * never unlimited meanwhile */
	err = rg_map_prune(fd, sizeof(struct rg_db_key), limit_kept, &d->limits);
	if (!err)
		err = rg_map_prune(bpf_map__fd(d->skel->maps.RG_MAP_SHADOW),
				   sizeof(struct rg_db_key), shadow_kept, &d->limits);
	if (err)
		pr_err("cannot drop removed limits: %s", map_errno(err));
	return err;
}

/* Distributed mode: the cluster's limits live at rowgate-meta. */
static int meta_refuse(struct daemon *d, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "this rowgated takes its limits from rowgate-meta (--meta %s): use "
		 "'rowgatectl --meta %s limit ...'",
		 d->cfg->meta_url, d->cfg->meta_url);
	return -EPERM;
}

/* The meta agent's callback: the cluster's limit and this host's quota. */
int rgd_meta_apply(void *ctx, const struct rg_db_key *db, __u64 limit, __u64 quota)
{
	struct rg_db_maps m = db_maps(ctx);

	return rg_limit_write(&m, db, limit, quota);
}

/* "previous=N", or "previous=none" when there was no limit. */
static const char *previous(bool existed, __u64 old, char *buf, size_t len)
{
	if (!existed)
		return "none";
	snprintf(buf, len, "%llu", (unsigned long long)old);
	return buf;
}

static int op_limit_set(void *ctx, const struct rg_db_key *db, __u64 limit, bool shadow,
			const char *source, char *err, size_t errlen)
{
	char prev[24];
	struct daemon *d = ctx;
	struct rg_limit_entry *old = rg_limit_list_find(&d->limits, db);
	bool existed = old != NULL, old_shadow = old && old->shadow;
	__u64 old_limit = old ? old->limit : 0;
	int ret;

	if (d->agent)
		return meta_refuse(d, err, errlen);
	ret = rg_limit_list_set_mode(&d->limits, db, limit, shadow);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	/* durable first: a limit the daemon acknowledged survives a crash */
	ret = rg_state_save(d->cfg->state_file, &d->limits, err, errlen);
	if (!ret)
		ret = apply_limit_mode(d, db, limit, shadow);
	if (ret) {
		if (!*err)
			snprintf(err, errlen, "cannot apply the limit: %s", map_errno(ret));
		if (existed)
			rg_limit_list_set_mode(&d->limits, db, old_limit, old_shadow);
		else
			rg_limit_list_unset(&d->limits, db);
		return ret;
	}
	if (shadow)
		rg_event("limit_set", "db=%s rows_per_s=%llu previous=%s source=%s mode=shadow",
			 db->name, (unsigned long long)limit,
			 previous(existed, old_limit, prev, sizeof(prev)), source);
	else
		rg_event("limit_set", "db=%s rows_per_s=%llu previous=%s source=%s", db->name,
			 (unsigned long long)limit, previous(existed, old_limit, prev, sizeof(prev)),
			 source);
	return 0;
}

static int op_limit_unset(void *ctx, const struct rg_db_key *db, const char *source, char *err,
			  size_t errlen)
{
	struct daemon *d = ctx;
	struct rg_limit_entry *old = rg_limit_list_find(&d->limits, db);
	__u64 old_limit;
	int ret;

	if (d->agent)
		return meta_refuse(d, err, errlen);
	if (!old) {
		snprintf(err, errlen, "database '%s' has no limit", db->name);
		return -ENOENT;
	}
	old_limit = old->limit;
	rg_limit_list_unset(&d->limits, db);
	ret = rg_state_save(d->cfg->state_file, &d->limits, err, errlen);
	if (ret) {
		rg_limit_list_set(&d->limits, db, old_limit);
		return ret;
	}
	/* the bucket stays: re-enabling must not forgive debt */
	{
		struct rg_db_maps m = db_maps(d);

		rg_limit_remove(&m, db);
		apply_shadow(d, db, false);
	}
	rg_event("limit_unset", "db=%s previous=%llu source=%s", db->name,
		 (unsigned long long)old_limit, source);
	return 0;
}

static int op_limit_show(void *ctx, const struct rg_db_key *db, json_t *arr, char *err,
			 size_t errlen)
{
	struct daemon *d = ctx;
	size_t i;

	for (i = 0; i < d->limits.count; i++) {
		const struct rg_limit_entry *e = &d->limits.entries[i];

		if (db && strcmp(db->name, e->db.name))
			continue;
		if (rg_admin_add_limit(arr, &e->db, e->limit, e->shadow)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/* Counters per protocol that saw traffic: estimated vs reconciled rows. */
static json_t *proto_stats_json(struct daemon *d, const struct rg_db_key *db)
{
	json_t *all = json_object();

	for (__u32 p = RG_PROTO_NONE + 1; all && p < RG_PROTO_MAX; p++) {
		struct rg_proto_key k = { .db = *db, .protocol = p };
		struct rg_proto_stats ps;
		json_t *o;

		if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS), &k, &ps) ||
		    !rg_proto_stats_seen(&ps))
			continue;
		o = json_object();
		rg_counters_json(o, &rg_proto_stats_table, &ps);
		/* derived, for people: the table has the sum */
		json_object_set_new(o, "lag_avg_us",
				    rg_json_u64(ps.reconciled_requests ?
							ps.lag_ns_total / ps.reconciled_requests / 1000 :
							0));
		json_object_set_new(all, rg_protocol_name(p), o);
	}
	return all;
}

static json_t *db_stats_json(struct daemon *d, const struct rg_db_key *db)
{
	struct rg_db_maps m = db_maps(d);
	struct rg_db_snapshot snap;
	json_t *o = json_object();

	if (!o)
		return NULL;
	struct rg_shadow_stats sh = {};
	bool shadow;

	rg_db_snapshot_read(&m, db, rg_monotonic_ns(), &snap);
	shadow = !bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_SHADOW), db, &sh);
	json_object_set_new(o, "db", json_string(db->name));
	rg_counters_json(o, &rg_db_stats_table, &snap.stats);
	/* what a limit in shadow mode would have refused: while it is on
	 * (the rowgate_would_reject_* series exist as long) */
	json_object_set_new(o, "shadow", json_boolean(shadow));
	if (shadow) {
		json_object_set_new(o, "would_reject_requests",
				    rg_json_u64(sh.would_reject_requests));
		json_object_set_new(o, "would_reject_rows", rg_json_u64(sh.would_reject_rows));
	}
	json_object_set_new(o, "protocols", proto_stats_json(d, db));
	return o;
}

/* Writes to databases without a limit (all of them, or db's), by database. */
static json_t *unlimited_json(struct daemon *d, const struct rg_db_key *db)
{
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_UNLIMITED);
	json_t *arr = json_array();
	struct rg_db_key key, next;
	bool first = true;

	while (arr && bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		struct rg_unlimited_stats u;
		json_t *o;

		key = next;
		first = false;
		if ((db && strcmp(db->name, key.name)) || bpf_map_lookup_elem(fd, &key, &u))
			continue;
		o = json_pack("{s:s}", "db", key.name);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
		rg_counters_json(o, &rg_unlimited_stats_table, &u);
	}
	return arr;
}

static int op_stats(void *ctx, const struct rg_db_key *db, json_t *reply, char *err,
		    size_t errlen)
{
	struct daemon *d = ctx;
	int fd = bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS);
	json_t *arr = json_array(), *g = json_object(), *unlimited;
	struct rg_global_stats gs = {};
	struct rg_h2_stats h2 = {};
	struct rg_guard_stats guard = {};
	struct rg_verdict_stats vs = {};
	struct rg_db_key key, next;
	bool first = true;
	__u32 zero = 0;

	if (!arr || !g)
		goto nomem;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (db && strcmp(db->name, key.name))
			continue;
		if (json_array_append_new(arr, db_stats_json(d, &key)))
			goto nomem;
	}
	unlimited = unlimited_json(d, db);
	if (!unlimited)
		goto nomem;
	if (db && json_array_size(arr) == 0 && json_array_size(unlimited) == 0) {
		snprintf(err, errlen, "no counters for database '%s' (never limited nor written to)",
			 db->name);
		json_decref(unlimited);
		json_decref(arr);
		json_decref(g);
		return -ENOENT;
	}
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL), &zero, &gs);
	rg_counters_json(g, &rg_global_stats_table, &gs);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_H2_STATS), &zero, &h2) == 0)
		rg_counters_json(g, &rg_h2_stats_table, &h2);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD_STATS), &zero, &guard) == 0)
		rg_counters_json(g, &rg_guard_stats_table, &guard);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_STATS), &zero, &vs) == 0)
		rg_counters_json(g, &rg_verdict_stats_table, &vs);
	rg_reconciler_stats_json(d->rec, g);
	if (d->closer) {
		struct rg_h2_close_stats cs;

		rg_h2_closer_stats(d->closer, &cs);
		rg_counters_json(g, &rg_h2_close_stats_table, &cs);
	}
	rg_xdp_stats_json(d->cfg->bpffs, db, reply); /* -ENOENT: no UDP path */
	json_object_set_new(reply, "databases", arr);
	json_object_set_new(reply, "unlimited", unlimited);
	json_object_set_new(reply, "global", g);
	if (d->agent)
		json_object_set_new(reply, "meta", rg_meta_agent_stats(d->agent));
	return 0;
nomem:
	json_decref(arr);
	json_decref(g);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* rowgatectl detach: the daemon stays up (a supervisor would restart it and
 * re-attach) and says it is not enforcing until it is restarted. */
static int op_detach(void *ctx, char *err, size_t errlen)
{
	struct daemon *d = ctx;

	(void)err;
	(void)errlen;
	rg_detach_all(d->cfg->bpffs);
	d->detached = true;
	pr_warn("detached on request: nothing is enforced until rowgated restarts");
	rg_event("cgroup_detach", "cgroup=%s cgroup_id=%llu reason=request", d->cfg->cgroup,
		 (unsigned long long)d->guard.cgroup_id);
	if (d->cfg->xdp_iface) /* rg_detach_all took XDP off too */
		rg_event("xdp_detach", "ifname=%s reason=request", d->cfg->xdp_iface);
	return 0;
}

const struct rg_admin_ops rgd_admin_ops = {
	.limit_set = op_limit_set,
	.limit_unset = op_limit_unset,
	.limit_show = op_limit_show,
	.stats = op_stats,
	.detach = op_detach,
};
