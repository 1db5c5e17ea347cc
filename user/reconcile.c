// SPDX-License-Identifier: MIT
/* Body copies from the kernel -> exact row counts -> bucket corrections. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "rowgate/abi.h"
#include "rowgate/dbname.h"
#include "rowgate/estimate.h"
#include "rowgate/http.h"
#include "decode/count.h"
#include "log.h"
#include "reconcile.h"

#define RG_PENDING_BUCKETS   1024
#define RG_PENDING_MAX_BYTES (64ULL << 20)    /* GreptimeDB's body limit */
#define RG_PENDING_TTL_NS    (30ULL * 1000000000ULL) /* a copy missing its end */
#define RG_LAG_SAMPLES       4096             /* reservoir for percentiles */

struct pending {
	struct pending *next;
	__u64 cookie, seq, created_ns;
	struct rg_body_start start;
	unsigned char *buf;
	size_t len, cap;
	bool overflow;
};

struct rg_reconciler {
	struct ring_buffer *rb;
	int ratios_fd, prog_fd;
	struct pending *table[RG_PENDING_BUCKETS];
	/* each body counted by the rules of its port's profile */
	struct rg_count_limits limits[RG_PROFILE_MAX];
	/* counters */
	__u64 reconciled, undecodable, incomplete, orphans, expired, corrections;
	__u64 lag_ns[RG_LAG_SAMPLES];
	__u64 nlag;
	__u64 last_sweep_ns;
};

static struct pending **slot(struct rg_reconciler *r, __u64 cookie, __u64 seq)
{
	struct pending **p = &r->table[(cookie * 31 + seq) % RG_PENDING_BUCKETS];

	while (*p && ((*p)->cookie != cookie || (*p)->seq != seq))
		p = &(*p)->next;
	return p;
}

static void pending_free(struct pending *p)
{
	free(p->buf);
	free(p);
}

long rg_dechunk(unsigned char *buf, size_t len)
{
	struct rg_chunked st;
	size_t in, out = 0;

	/* the kernel's parser: a body rowgated reads is the body it framed */
	rg_chunked_init(&st);
	for (in = 0; in < len; in++) {
		switch (rg_chunked_step(&st, buf[in])) {
		case RG_CHUNK_DATA:
			buf[out++] = buf[in];
			break;
		case RG_CHUNK_DONE:
			return (long)out;
		case RG_CHUNK_ERR:
			return -1;
		}
	}
	/* the copy may stop in the trailers: the data is complete */
	return st.last_chunk ? (long)out : -1;
}

static void correct(struct rg_reconciler *r, const struct rg_body_start *s, const char *db,
		    bool raw_name, __u64 est, __u64 exact, bool admitted, bool undecodable,
		    __u64 lag)
{
	struct rg_correction c = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &c, .data_size_in = sizeof(c),
		    .repeat = 1);

	if (raw_name && rg_profile_is_go(s->profile)) {
		/* only GreptimeDB knows catalogs: a Go server's name is as sent */
		if (strlen(db) >= RG_DB_NAME_MAX)
			return;
		strcpy(c.db.name, db);
	} else if (raw_name) {
		if (rg_db_key_from_raw(&c.db, db, (__u32)strlen(db), (__u32)strlen(db)) < 0)
			return;
	} else {
		memcpy(&c.db, db, sizeof(c.db));
	}
	c.protocol = s->protocol;
	c.admitted = admitted;
	c.undecodable = undecodable;
	c.estimated_rows = est;
	c.exact_rows = exact;
	c.lag_ns = lag;
	c.cookie = s->h.cookie;
	c.seq = s->h.seq;
	if (bpf_prog_test_run_opts(r->prog_fd, &opts))
		pr_warn("cannot correct database %s: %s", c.db.name, strerror(errno));
	else
		r->corrections++;
}

static void learn_ratio(struct rg_reconciler *r, const struct rg_body_start *s,
			__u64 body_bytes, __u64 rows)
{
	struct rg_proto_key k = { 0 };
	struct rg_ratio old = { 0 }, v;
	__u64 sample, ceil = rg_est_ceiling_x16(s->protocol, s->content_encoding[0] != 0);

	if (!rows || !body_bytes)
		return;
	k.db = s->db;
	k.protocol = s->protocol;
	sample = body_bytes * 16 / rows;
	if (!sample)
		sample = 1;
	/* a moving average: one odd request moves the estimate a quarter */
	if (bpf_map_lookup_elem(r->ratios_fd, &k, &old) == 0 && old.bytes_per_row_x16)
		v.bytes_per_row_x16 = (old.bytes_per_row_x16 * 3 + sample) / 4;
	else
		v.bytes_per_row_x16 = sample;
	/* the kernel caps it too; kept capped so one outlier moves it at once */
	if (v.bytes_per_row_x16 > ceil)
		v.bytes_per_row_x16 = ceil;
	bpf_map_update_elem(r->ratios_fd, &k, &v, BPF_ANY);
}

/* The worst case of a body rowgated could not count. */
static __u64 worst_rows(__u64 estimate, __u64 decoded_bytes)
{
	__u64 w = decoded_bytes / RG_WORST_BYTES_PER_ROW;

	return w > estimate ? w : estimate;
}

static void finish(struct rg_reconciler *r, struct pending *p, const struct rg_body_end *e)
{
	const struct rg_body_start *s = &p->start;
	struct rg_row_counts counts = { 0 };
	__u64 lag = rg_monotonic_ns() - e->end_ns;
	char ct[RG_CT_BYTES + 1] = "", ce[RG_CE_BYTES + 1] = "";
	long len = (long)p->len;
	enum rg_payload_protocol proto = rg_payload_of(s->protocol);
	__u32 i;

	memcpy(ct, s->content_type, RG_CT_BYTES);
	memcpy(ce, s->content_encoding, RG_CE_BYTES);
	if (!e->complete || p->overflow) {
		r->incomplete++;
		/* a copy over the pending cap: its bytes at the smallest row */
		correct(r, s, s->db.name, false, e->estimated_rows,
			p->overflow ? worst_rows(e->estimated_rows, e->body_bytes) :
				      e->estimated_rows,
			e->admitted, true, lag);
		return;
	}
	if (s->chunked)
		len = rg_dechunk(p->buf, p->len);
	if (len < 0 || proto == RG_PAYLOAD_INVALID ||
	    rg_count_payload(proto, ce[0] ? ce : NULL, ct[0] ? ct : NULL, p->buf, (size_t)len,
			     &r->limits[s->profile < RG_PROFILE_MAX ? s->profile : 0], &counts) ||
	    counts.err != RG_COUNT_OK) {
		r->undecodable++;
		pr_info("body of a %s request to %s not counted: %s", rg_payload_protocol_name(proto),
			s->db.name, len < 0 ? "bad chunked framing" : counts.err_msg);
		/* what the server could store: the bytes decoded before the
		 * failure (or the cap) at the smallest row, never less than the
		 * estimate; a coding rowgated lacks may be read raw */
		correct(r, s, s->db.name, false, e->estimated_rows,
			worst_rows(e->estimated_rows,
				   len < 0 ? e->body_bytes :
				   counts.err == RG_COUNT_E_ENCODING ? (__u64)len :
								       counts.decoded_bytes),
			e->admitted, true, lag);
		return;
	}
	/* the request's own database takes the rows without a label of
	 * their own (and those of names too long to be a database) */
	correct(r, s, s->db.name, false, e->estimated_rows,
		counts.default_rows + counts.overflow_rows, e->admitted, false, lag);
	for (i = 0; i < counts.n_dbs && i < RG_COUNT_MAX_DBS; i++)
		correct(r, s, counts.dbs[i].name, true, 0, counts.dbs[i].rows, e->admitted, false,
			lag);
	learn_ratio(r, s, e->body_bytes, counts.rows);
	r->reconciled++;
	r->lag_ns[r->nlag++ % RG_LAG_SAMPLES] = rg_monotonic_ns() - e->end_ns;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct rg_reconciler *r = ctx;
	const struct rg_body_hdr *h = data;
	struct pending **sp, *p;

	if (size < sizeof(*h))
		return 0;
	sp = slot(r, h->cookie, h->seq);
	switch (h->type) {
	case RG_BODY_START:
		if (size < sizeof(struct rg_body_start))
			return 0;
		if (*sp) { /* a stale copy of the same request: replace it */
			p = *sp;
			*sp = p->next;
			pending_free(p);
		}
		p = calloc(1, sizeof(*p));
		if (!p)
			return 0;
		p->cookie = h->cookie;
		p->seq = h->seq;
		p->created_ns = rg_monotonic_ns();
		memcpy(&p->start, data, sizeof(p->start));
		p->next = r->table[(h->cookie * 31 + h->seq) % RG_PENDING_BUCKETS];
		r->table[(h->cookie * 31 + h->seq) % RG_PENDING_BUCKETS] = p;
		break;
	case RG_BODY_DATA: {
		const struct rg_body_data *d = data;
		size_t n = h->len;

		p = *sp;
		if (!p) {
			r->orphans++;
			return 0;
		}
		if (n > RG_BODY_DATA_BYTES || size < sizeof(*h) + n || p->overflow)
			return 0;
		if (p->len + n > RG_PENDING_MAX_BYTES) {
			p->overflow = true;
			free(p->buf);
			p->buf = NULL;
			p->len = p->cap = 0;
			return 0;
		}
		if (p->len + n > p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 65536;
			unsigned char *nb;

			while (cap < p->len + n)
				cap *= 2;
			nb = realloc(p->buf, cap);
			if (!nb) {
				p->overflow = true;
				return 0;
			}
			p->buf = nb;
			p->cap = cap;
		}
		memcpy(p->buf + p->len, d->data, n);
		p->len += n;
		break;
	}
	case RG_BODY_END:
		p = *sp;
		if (!p || size < sizeof(struct rg_body_end)) {
			r->orphans++;
			return 0;
		}
		*sp = p->next;
		finish(r, p, data);
		pending_free(p);
		break;
	}
	return 0;
}

/* Drop copies whose end never came (connection reset mid-body). */
static void sweep(struct rg_reconciler *r)
{
	__u64 now = rg_monotonic_ns();
	size_t i;

	if (now - r->last_sweep_ns < RG_PENDING_TTL_NS / 4)
		return;
	r->last_sweep_ns = now;
	for (i = 0; i < RG_PENDING_BUCKETS; i++) {
		struct pending **pp = &r->table[i];

		while (*pp) {
			if (now - (*pp)->created_ns > RG_PENDING_TTL_NS) {
				struct pending *p = *pp;

				*pp = p->next;
				pending_free(p);
				r->expired++;
			} else {
				pp = &(*pp)->next;
			}
		}
	}
}

int rg_reconciler_new(const struct rg_reconcile_fds *fds, struct rg_reconciler **out)
{
	struct rg_reconciler *r = calloc(1, sizeof(*r));
	unsigned int i;

	if (!r)
		return -ENOMEM;
	r->ratios_fd = fds->ratios_fd;
	r->prog_fd = fds->prog_fd;
	for (i = 0; i < RG_PROFILE_MAX; i++)
		rg_count_limits_for_profile_id(&r->limits[i], i);
	r->rb = ring_buffer__new(fds->bodies_fd, on_record, r, NULL);
	if (!r->rb) {
		int err = -errno;

		pr_err("cannot open the body ring: %s", strerror(-err));
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void rg_reconciler_free(struct rg_reconciler *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < RG_PENDING_BUCKETS; i++)
		while (r->table[i]) {
			struct pending *p = r->table[i];

			r->table[i] = p->next;
			pending_free(p);
		}
	ring_buffer__free(r->rb);
	free(r);
}

int rg_reconciler_fd(const struct rg_reconciler *r)
{
	return ring_buffer__epoll_fd(r->rb);
}

int rg_reconciler_poll(struct rg_reconciler *r, int timeout_ms)
{
	int n = ring_buffer__poll(r->rb, timeout_ms);

	sweep(r);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

void rg_reconciler_stats_json(const struct rg_reconciler *r, json_t *obj)
{
	__u64 n = r->nlag < RG_LAG_SAMPLES ? r->nlag : RG_LAG_SAMPLES;
	__u64 *s;

	json_object_set_new(obj, "reconciled_requests", json_integer((json_int_t)r->reconciled));
	json_object_set_new(obj, "undecodable_requests", json_integer((json_int_t)r->undecodable));
	json_object_set_new(obj, "incomplete_copies", json_integer((json_int_t)r->incomplete));
	json_object_set_new(obj, "expired_copies", json_integer((json_int_t)r->expired));
	json_object_set_new(obj, "corrections", json_integer((json_int_t)r->corrections));
	if (!n)
		return;
	s = malloc(n * sizeof(*s));
	if (!s)
		return;
	memcpy(s, r->lag_ns, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	json_object_set_new(obj, "lag_p50_us", json_integer((json_int_t)(s[n / 2] / 1000)));
	json_object_set_new(obj, "lag_p99_us", json_integer((json_int_t)(s[n * 99 / 100] / 1000)));
	free(s);
}
