// SPDX-License-Identifier: MIT
/* rowgated's heartbeat agent for rowgate-meta.  See meta_agent.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "../lib/clock.h"
#include "../lib/counters.h"
#include "../lib/log.h"
#include "../lib/http_client.h"
#include "../lib/meta_proto.h"
#include "meta_agent.h"
#include "../lib/maps.h"

/* One limited database as the agent last saw it. */
struct agent_db {
	struct rg_db_key db;
	__u64 admitted_rows; /* db_stats counters at the last sample */
	__u64 rejected_rows;
	__u64 limit;        /* from the last reply */
	__u64 quota;        /* held grant, 0 = none */
	bool granted;       /* named in the last reply */
	bool sampled;       /* the counters above were read */
};

struct rg_meta_agent {
	/* configuration, read-only once started */
	char *urls_buf;
	const char *urls[RG_META_AGENT_URLS_MAX];
	int nr_urls;
	char node_id[RG_META_NODE_ID_MAX];
	char token[RG_META_TOKEN_MAX];
	char auth[RG_META_TOKEN_MAX + 8]; /* "Bearer TOKEN", "" = none */
	struct rg_http_origins origins;   /* --meta's: where a redirect may lead */
	struct rg_meta_agent_config cfg;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop; /* under lock */

	/* agent thread only */
	struct agent_db *dbs; /* sorted by name */
	size_t nr_dbs;
	__u64 last_sample_ns;
	__u64 interval_ms;
	__u64 lease_expiry_ns; /* 0 = holding nothing */
	int cur_url;

	/* shared with the main thread, under lock */
	struct {
		__u64 heartbeats_ok;
		__u64 heartbeats_failed;
		__u64 lease_expiries; /* fallbacks to the full limits */
		__u64 quota_updates;  /* map writes of a changed limit or quota */
		__u64 learning_replies;
		__u64 apply_errors;
		__u64 last_ok_ns;
		__u64 lease_expiry_ns;
		bool failing;
		bool fallback;
		char last_error[256];
		char url[400];
	} st;
	struct rg_limit_list snapshot; /* the cluster's limits, last reply */
	__u64 snapshot_gen;
	__u64 applied_gen; /* main thread only */
};

static int cmp_db(const void *a, const void *b)
{
	return strncmp(((const struct agent_db *)a)->db.name, ((const struct agent_db *)b)->db.name,
		       RG_DB_NAME_MAX);
}

static struct agent_db *find_db(struct agent_db *dbs, size_t n, const struct rg_db_key *db)
{
	struct agent_db key = { .db = *db };

	return n ? bsearch(&key, dbs, n, sizeof(*dbs), cmp_db) : NULL;
}

/* rows over elapsed_ns as rows per second, rounded, saturating. */
static __u64 rate(__u64 rows, __u64 elapsed_ns)
{
	unsigned __int128 r;

	if (!elapsed_ns)
		return 0;
	r = ((unsigned __int128)rows * RG_NSEC_PER_SEC + elapsed_ns / 2) / elapsed_ns;
	return r > RG_U64_MAX ? RG_U64_MAX : (__u64)r;
}

/*
 * Sample every database of the limits map: counter deltas since the last
 * sample as rates, debt from the bucket (under its lock), the held quota.
 * Rebuilds a->dbs (keeping what the last reply said) and fills req.
 */
static int sample(struct rg_meta_agent *a, struct rg_meta_hb_req *req, __u64 now)
{
	struct rg_db_key key, next;
	struct agent_db *dbs = NULL, *old;
	size_t n = 0, cap = 0, i;
	__u64 elapsed = now - a->last_sample_ns;
	bool first = true, holding = a->lease_expiry_ns && now < a->lease_expiry_ns;
	const struct rg_db_maps maps = {
		.limits_fd = a->cfg.limits_fd,
		.buckets_fd = a->cfg.buckets_fd,
		.db_stats_fd = a->cfg.stats_fd,
		.proto_stats_fd = -1,
	};

	while (bpf_map_get_next_key(a->cfg.limits_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct agent_db *p = reallocarray(dbs, c, sizeof(*p));

			if (!p) {
				free(dbs);
				return -ENOMEM;
			}
			dbs = p;
			cap = c;
		}
		memset(&dbs[n], 0, sizeof(dbs[n]));
		dbs[n++].db = key;
	}
	/* keep databases of the last reply the map lost (a failed write) */
	for (i = 0; i < a->nr_dbs; i++) {
		if (!a->dbs[i].granted)
			continue;
		bool there = false;

		for (size_t k = 0; k < n && !there; k++)
			there = !strncmp(dbs[k].db.name, a->dbs[i].db.name, RG_DB_NAME_MAX);
		if (there)
			continue;
		if (n == cap) {
			struct agent_db *p = reallocarray(dbs, cap + 16, sizeof(*p));

			if (!p) {
				free(dbs);
				return -ENOMEM;
			}
			dbs = p;
			cap += 16;
		}
		memset(&dbs[n], 0, sizeof(dbs[n]));
		dbs[n++].db = a->dbs[i].db;
	}
	if (n)
		qsort(dbs, n, sizeof(*dbs), cmp_db);
	req->dbs = calloc(n + 1, sizeof(req->dbs[0]));
	if (!req->dbs) {
		free(dbs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct rg_meta_hb_db *e = &req->dbs[i];
		struct rg_db_snapshot snap;

		old = find_db(a->dbs, a->nr_dbs, &dbs[i].db);
		if (old) {
			dbs[i].limit = old->limit;
			dbs[i].quota = old->quota;
			dbs[i].granted = old->granted;
		}
		e->db = dbs[i].db;
		rg_db_snapshot_read(&maps, &dbs[i].db, now, &snap);
		if (snap.has_stats) {
			dbs[i].admitted_rows = snap.stats.admitted_rows;
			dbs[i].rejected_rows = snap.stats.rejected_rows;
			dbs[i].sampled = true;
			/* a database new since the last sample: no delta yet */
			if (old && old->sampled) {
				e->admitted_rows_per_s =
					rate(snap.stats.admitted_rows - old->admitted_rows, elapsed);
				e->rejected_rows_per_s =
					rate(snap.stats.rejected_rows - old->rejected_rows, elapsed);
			}
		}
		e->debt_rows = snap.stats.debt_rows;
		e->quota_rows_per_s = holding ? dbs[i].quota : 0;
	}
	free(a->dbs);
	a->dbs = dbs;
	a->nr_dbs = n;
	a->last_sample_ns = now;
	req->count = n;
	return 0;
}

static void set_error(struct rg_meta_agent *a, const char *msg)
{
	pthread_mutex_lock(&a->lock);
	snprintf(a->st.last_error, sizeof(a->st.last_error), "%.255s", msg);
	pthread_mutex_unlock(&a->lock);
}

/* POST the heartbeat to the replicas in turn, from the last that answered. */
static int exchange(struct rg_meta_agent *a, const struct rg_meta_hb_req *req,
		    struct rg_meta_hb_reply *reply, char *err, size_t errlen)
{
	long timeout = (long)a->interval_ms;
	json_t *body = rg_meta_hb_req_encode(req);
	struct rg_http_opts opts = {
		.authorization = a->auth,
		.connect_timeout_ms = RG_META_AGENT_CONNECT_TIMEOUT_MS,
		.origins = &a->origins,
		.ca_file = a->cfg.ca_file,
		.cert_file = a->cfg.cert_file,
		.key_file = a->cfg.key_file,
	};
	char url[320], why[256];
	int ret = -EIO;

	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (timeout > RG_META_AGENT_TIMEOUT_MS_MAX)
		timeout = RG_META_AGENT_TIMEOUT_MS_MAX;
	if (timeout < 2 * RG_META_AGENT_CONNECT_TIMEOUT_MS)
		timeout = 2 * RG_META_AGENT_CONNECT_TIMEOUT_MS;
	opts.timeout_ms = timeout;
	for (int k = 0; k < a->nr_urls; k++) {
		int u = (a->cur_url + k) % a->nr_urls;
		struct rg_http_result res;

		snprintf(url, sizeof(url), "%s%s", a->urls[u], RG_META_API_HEARTBEAT);
		if (rg_http_json("POST", url, body, &opts, &res, why, sizeof(why))) {
			snprintf(err, errlen, "%s", why);
			continue;
		}
		if (res.status == 200 &&
		    rg_meta_hb_reply_decode(res.reply, reply, why, sizeof(why)) == 0) {
			a->cur_url = u;
			pthread_mutex_lock(&a->lock);
			snprintf(a->st.url, sizeof(a->st.url), "%s",
				 res.effective_url ? res.effective_url : url);
			pthread_mutex_unlock(&a->lock);
			rg_http_result_free(&res);
			ret = 0;
			break;
		}
		rg_meta_hb_reply_free(reply);
		if (res.status != 200) {
			const char *msg = json_string_value(json_object_get(res.reply, "error"));

			snprintf(err, errlen, "%.300s answered %ld%s%.150s%s", url, res.status,
				 msg ? " (" : "", msg ? msg : "", msg ? ")" : "");
			if (res.status == 401)
				snprintf(err, errlen,
					 "%.300s refused the token (401): check --token-file", url);
			else if (res.status == 403 && msg)
				snprintf(err, errlen, "%.300s refused the heartbeat (403): %.180s",
					 url, msg);
		} else {
			snprintf(err, errlen, "%.300s: bad reply: %.180s", url, why);
		}
		rg_http_result_free(&res);
	}
	json_decref(body);
	return ret;
}

static int apply_one(struct rg_meta_agent *a, const struct rg_db_key *db, __u64 limit,
		     __u64 quota)
{
	int err = a->cfg.apply(a->cfg.ctx, db, limit, quota);

	pthread_mutex_lock(&a->lock);
	if (err)
		a->st.apply_errors++;
	else
		a->st.quota_updates++;
	pthread_mutex_unlock(&a->lock);
	if (err)
		pr_warn("meta: cannot apply limit %llu / quota %llu of %s: %s",
			(unsigned long long)limit, (unsigned long long)quota, db->name,
			strerror(-err));
	return err;
}

/* The events of a grant written to the map: the limit as the cluster set
 * it, the quota as the allocator moves it (rate-limited per database: it
 * may move at every heartbeat).  cur: what the map held, NULL = nothing. */
static void log_changes(const struct rg_db_key *db, const struct rg_limit *cur, __u64 limit,
			__u64 quota)
{
	char prev[24] = "none";

	if (!cur || cur->limit_rows_per_s != limit) {
		if (cur)
			snprintf(prev, sizeof(prev), "%llu", (unsigned long long)cur->limit_rows_per_s);
		rg_event("limit_set", "db=%s rows_per_s=%llu previous=%s source=meta", db->name,
			 (unsigned long long)limit, prev);
	}
	if (!cur || cur->quota_rows_per_s != quota)
		rg_event_limited("quota_set", "db=%s quota_rows_per_s=%llu previous=%llu limit=%llu",
				 db->name, (unsigned long long)quota,
				 (unsigned long long)(cur ? cur->quota_rows_per_s : 0),
				 (unsigned long long)limit);
}

/* Publish the cluster's limits for the main thread when they changed. */
static void publish_limits(struct rg_meta_agent *a, const struct rg_meta_hb_reply *reply)
{
	bool same;
	size_t i;

	pthread_mutex_lock(&a->lock);
	same = a->snapshot.count == reply->count;
	for (i = 0; same && i < reply->count; i++)
		same = !strncmp(a->snapshot.entries[i].db.name, reply->dbs[i].db.name,
				RG_DB_NAME_MAX) &&
		       a->snapshot.entries[i].limit == reply->dbs[i].limit_rows_per_s;
	if (!same) {
		rg_limit_list_free(&a->snapshot);
		for (i = 0; i < reply->count; i++)
			if (rg_limit_list_set(&a->snapshot, &reply->dbs[i].db,
					      reply->dbs[i].limit_rows_per_s))
				break;
		a->snapshot_gen++;
	}
	pthread_mutex_unlock(&a->lock);
}

/* Enforce a reply: write changed limits and quotas, drop limits the
 * cluster no longer has (their buckets stay, debt included). */
static void apply_reply(struct rg_meta_agent *a, const struct rg_meta_hb_reply *reply,
			__u64 sent_ns)
{
	const struct rg_db_maps maps = { .limits_fd = a->cfg.limits_fd };
	struct rg_db_key key, next;
	bool first = true;
	size_t i, added = 0;

	for (i = 0; i < a->nr_dbs; i++)
		a->dbs[i].granted = false;
	/* databases new to this frontend first: their counters are sampled
	 * from the next round */
	for (i = 0; i < reply->count; i++) {
		struct agent_db *p;

		if (find_db(a->dbs, a->nr_dbs - added, &reply->dbs[i].db))
			continue;
		p = reallocarray(a->dbs, a->nr_dbs + 1, sizeof(*p));
		if (!p)
			break;
		a->dbs = p;
		memset(&p[a->nr_dbs], 0, sizeof(*p));
		p[a->nr_dbs++].db = reply->dbs[i].db;
		added++;
	}
	if (added)
		qsort(a->dbs, a->nr_dbs, sizeof(*a->dbs), cmp_db);
	for (i = 0; i < reply->count; i++) {
		const struct rg_meta_hb_grant *g = &reply->dbs[i];
		struct agent_db *d = find_db(a->dbs, a->nr_dbs, &g->db);
		struct rg_limit cur;
		__u64 q = g->quota_rows_per_s;
		bool had = !bpf_map_lookup_elem(a->cfg.limits_fd, &g->db, &cur);

		if ((!had || cur.limit_rows_per_s != g->limit_rows_per_s ||
		     cur.quota_rows_per_s != q) &&
		    apply_one(a, &g->db, g->limit_rows_per_s, q) == 0)
			log_changes(&g->db, had ? &cur : NULL, g->limit_rows_per_s, q);
		if (d) {
			d->limit = g->limit_rows_per_s;
			d->quota = q;
			d->granted = true;
		}
	}
	while (bpf_map_get_next_key(a->cfg.limits_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		bool listed = false;

		for (i = 0; i < reply->count && !listed; i++)
			listed = !strncmp(reply->dbs[i].db.name, key.name, RG_DB_NAME_MAX);
		struct rg_limit cur = {};

		if (!listed)
			bpf_map_lookup_elem(a->cfg.limits_fd, &key, &cur);
		if (!listed && rg_limit_remove(&maps, &key) == 0) {
			pr_info("meta: %s has no cluster limit any more", key.name);
			rg_event("limit_unset", "db=%s previous=%llu source=meta", key.name,
				 (unsigned long long)cur.limit_rows_per_s);
			first = true; /* restart: the key we held is gone */
		}
	}
	a->lease_expiry_ns = sent_ns + reply->lease_ms * RG_NSEC_PER_MSEC;
	a->interval_ms = reply->heartbeat_interval_ms;
	publish_limits(a, reply);
}

/* Lease over and nothing renewed it: every database back to its full limit. */
static void fall_back(struct rg_meta_agent *a, __u64 now)
{
	size_t i, n = 0;

	for (i = 0; i < a->nr_dbs; i++) {
		if (!a->dbs[i].quota)
			continue;
		a->dbs[i].quota = 0;
		if (a->dbs[i].granted)
			apply_one(a, &a->dbs[i].db, a->dbs[i].limit, 0);
		n++;
	}
	pthread_mutex_lock(&a->lock);
	a->st.lease_expiries++;
	a->st.fallback = true;
	pthread_mutex_unlock(&a->lock);
	pr_warn("meta: no allocator answered for the whole lease (%llu ms late): %zu "
		"database(s) fall back to their full limit",
		(unsigned long long)((now - a->lease_expiry_ns) / RG_NSEC_PER_MSEC), n);
	rg_event("quota_fallback", "databases=%zu late_ms=%llu", n,
		 (unsigned long long)((now - a->lease_expiry_ns) / RG_NSEC_PER_MSEC));
	a->lease_expiry_ns = 0;
}

static void heartbeat_once(struct rg_meta_agent *a)
{
	struct rg_meta_hb_req req = {};
	struct rg_meta_hb_reply reply = {};
	char err[512] = "";
	__u64 sent = rg_monotonic_ns();
	bool was_failing;
	int ret;

	snprintf(req.node_id, sizeof(req.node_id), "%s", a->node_id);
	req.interval_ms = a->interval_ms;
	ret = sample(a, &req, sent);
	if (ret) {
		snprintf(err, sizeof(err), "out of memory");
	} else {
		ret = exchange(a, &req, &reply, err, sizeof(err));
	}
	rg_meta_hb_req_free(&req);
	pthread_mutex_lock(&a->lock);
	was_failing = a->st.failing;
	if (ret) {
		a->st.heartbeats_failed++;
		a->st.failing = true;
	} else {
		a->st.heartbeats_ok++;
		a->st.failing = false;
		a->st.fallback = false;
		a->st.last_ok_ns = rg_monotonic_ns();
		a->st.learning_replies += reply.learning;
	}
	pthread_mutex_unlock(&a->lock);
	if (ret) {
		set_error(a, err);
		if (!was_failing) {
			pr_warn("meta: heartbeat failed: %s; keeping the quotas until their lease "
				"ends",
				err);
			rg_event("meta_unreachable", "error=%s", err);
		}
		else
			pr_debug("meta: heartbeat failed: %s", err);
		if (a->lease_expiry_ns && rg_monotonic_ns() >= a->lease_expiry_ns)
			fall_back(a, rg_monotonic_ns());
	} else {
		if (was_failing) {
			pr_warn("meta: heartbeats answered again");
			rg_event("meta_reachable", "url=%s", a->urls[a->cur_url]);
		}
		apply_reply(a, &reply, sent);
		pthread_mutex_lock(&a->lock);
		a->st.lease_expiry_ns = a->lease_expiry_ns;
		pthread_mutex_unlock(&a->lock);
	}
	rg_meta_hb_reply_free(&reply);
}

static void *agent_main(void *arg)
{
	struct rg_meta_agent *a = arg;
	struct timespec ts;
	__u64 next;

	for (;;) {
		next = rg_monotonic_ns() + a->interval_ms * RG_NSEC_PER_MSEC;
		heartbeat_once(a);
		pthread_mutex_lock(&a->lock);
		while (!a->stop) {
			__u64 now = rg_monotonic_ns();

			/* wake at the lease end too, when it comes first */
			__u64 wake = next;
			if (a->lease_expiry_ns && a->lease_expiry_ns > now &&
			    a->lease_expiry_ns < wake)
				wake = a->lease_expiry_ns;
			if (now >= wake)
				break;
			ts.tv_sec = (time_t)(wake / RG_NSEC_PER_SEC);
			ts.tv_nsec = (long)(wake % RG_NSEC_PER_SEC);
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
		}
		if (a->stop) {
			pthread_mutex_unlock(&a->lock);
			break;
		}
		pthread_mutex_unlock(&a->lock);
		if (a->lease_expiry_ns && rg_monotonic_ns() >= a->lease_expiry_ns && rg_monotonic_ns() < next)
			fall_back(a, rg_monotonic_ns());
	}
	return NULL;
}

static int parse_urls(struct rg_meta_agent *a, const char *urls)
{
	char *save = NULL, *tok, err[256];

	a->urls_buf = strdup(urls);
	if (!a->urls_buf)
		return -ENOMEM;
	for (tok = strtok_r(a->urls_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(tok);

		while (n && tok[n - 1] == '/')
			tok[--n] = 0;
		if (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
			pr_err("--meta '%s': expected http://HOST:PORT[,http://HOST:PORT...]", urls);
			return -EINVAL;
		}
		if (a->nr_urls == RG_META_AGENT_URLS_MAX) {
			pr_err("--meta: at most %d URLs", RG_META_AGENT_URLS_MAX);
			return -EINVAL;
		}
		if (rg_http_origins_add(&a->origins, tok, err, sizeof(err))) {
			pr_err("--meta: %s", err);
			return -EINVAL;
		}
		a->urls[a->nr_urls++] = tok;
	}
	if (!a->nr_urls) {
		pr_err("--meta '%s': no URL", urls);
		return -EINVAL;
	}
	return 0;
}

int rg_meta_agent_start(const struct rg_meta_agent_config *cfg, struct rg_meta_agent **out)
{
	struct rg_meta_agent *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	char err[512];
	int ret;

	if (!a)
		return -ENOMEM;
	a->cfg = *cfg;
	a->interval_ms = RG_META_AGENT_INTERVAL_MS_DEFAULT;
	rg_limit_list_init(&a->snapshot);
	ret = parse_urls(a, cfg->urls);
	if (ret)
		goto fail;
	ret = rg_meta_parse_node_id(cfg->node_id, a->node_id, err, sizeof(err));
	if (ret) {
		pr_err("--node-id: %s", err);
		goto fail;
	}
	if (cfg->token_file) {
		ret = rg_meta_read_token(cfg->token_file, a->token, sizeof(a->token), err,
					 sizeof(err));
		if (ret) {
			pr_err("--token-file: %s", err);
			goto fail;
		}
		if (a->token[0])
			snprintf(a->auth, sizeof(a->auth), "Bearer %s", a->token);
	}
	/* a typo in a path is a startup error, not a failing heartbeat */
	{
		const char *files[] = { cfg->ca_file, cfg->cert_file, cfg->key_file };
		const char *names[] = { "--meta-ca", "--meta-cert", "--meta-key" };

		for (int i = 0; i < 3; i++) {
			if (files[i] && access(files[i], R_OK)) {
				ret = -errno;
				pr_err("%s %s: %s", names[i], files[i], strerror(errno));
				goto fail;
			}
		}
	}
	ret = rg_http_global_init();
	if (ret) {
		pr_err("cannot initialise libcurl");
		goto fail;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&a->thread, NULL, agent_main, a);
	if (ret) {
		pr_err("cannot start the meta agent thread: %s", strerror(-ret));
		goto fail;
	}
	pr_info("meta: heartbeating to %s as %s", cfg->urls, a->node_id);
	*out = a;
	return 0;
fail:
	free(a->urls_buf);
	free(a);
	return ret;
}

void rg_meta_agent_stop(struct rg_meta_agent *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	free(a->dbs);
	rg_limit_list_free(&a->snapshot);
	free(a->urls_buf);
	free(a);
}

void rg_meta_agent_tick(struct rg_meta_agent *a, struct rg_limit_list *limits,
			const char *state_file)
{
	char err[512];
	bool changed = false;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->snapshot_gen != a->applied_gen) {
		rg_limit_list_free(limits);
		for (size_t i = 0; i < a->snapshot.count; i++)
			rg_limit_list_set(limits, &a->snapshot.entries[i].db,
					  a->snapshot.entries[i].limit);
		a->applied_gen = a->snapshot_gen;
		changed = true;
	}
	pthread_mutex_unlock(&a->lock);
	if (changed && state_file && rg_state_save(state_file, limits, err, sizeof(err)))
		pr_warn("meta: cannot save the cluster's limits: %s", err);
}

json_t *rg_meta_agent_stats(struct rg_meta_agent *a)
{
	__u64 now = rg_monotonic_ns();
	json_t *o;

	pthread_mutex_lock(&a->lock);
	o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "node_id",
		      a->node_id, "url", a->st.url[0] ? a->st.url : a->urls[0], "state",
		      a->st.fallback ? "fallback (full limits)" :
		      a->st.failing  ? "unreachable (keeping quotas)" :
		      a->st.heartbeats_ok ? "ok" : "starting",
		      "heartbeats_ok", rg_json_u64(a->st.heartbeats_ok), "heartbeats_failed",
		      rg_json_u64(a->st.heartbeats_failed), "lease_expiries",
		      rg_json_u64(a->st.lease_expiries), "quota_updates",
		      rg_json_u64(a->st.quota_updates), "learning_replies",
		      rg_json_u64(a->st.learning_replies), "apply_errors",
		      rg_json_u64(a->st.apply_errors), "last_ok_ms_ago",
		      rg_json_u64(a->st.last_ok_ns ? (now - a->st.last_ok_ns) / RG_NSEC_PER_MSEC :
						     0),
		      "lease_ms_left",
		      rg_json_u64(a->st.lease_expiry_ns > now ?
					  (a->st.lease_expiry_ns - now) / RG_NSEC_PER_MSEC :
					  0),
		      "last_error", a->st.last_error);
	pthread_mutex_unlock(&a->lock);
	return o;
}

void rg_meta_agent_read_stats(struct rg_meta_agent *a, struct rg_agent_stats *out)
{
	__u64 now = rg_monotonic_ns();

	pthread_mutex_lock(&a->lock);
	*out = (struct rg_agent_stats){
		.heartbeats_ok = a->st.heartbeats_ok,
		.heartbeats_failed = a->st.heartbeats_failed,
		.lease_expiries = a->st.lease_expiries,
		.quota_updates = a->st.quota_updates,
		.learning_replies = a->st.learning_replies,
		.apply_errors = a->st.apply_errors,
		.unreachable = a->st.failing,
		.fallback = a->st.fallback,
		.last_ok_ms_ago = a->st.last_ok_ns ? (now - a->st.last_ok_ns) / RG_NSEC_PER_MSEC : 0,
		.lease_ms_left = a->st.lease_expiry_ns > now ?
					 (a->st.lease_expiry_ns - now) / RG_NSEC_PER_MSEC :
					 0,
	};
	pthread_mutex_unlock(&a->lock);
}
