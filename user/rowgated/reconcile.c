// SPDX-License-Identifier: MIT
/* Body copies from the kernel -> exact row counts -> bucket corrections. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../lib/clock.h"
#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "rowgate/dbname.h"
#include "rowgate/estimate.h"
#include "rowgate/http.h"
#include "../decode/count.h"
#include "../lib/counters.h"
#include "../lib/log.h"
#include "reconcile.h"

#define RG_PENDING_BUCKETS   1024
#define RG_LAG_SAMPLES       4096             /* reservoir for percentiles */
#define RG_OVER_MEMORY_LOG_NS (10ULL * 1000000000ULL) /* one warning per 10 s */
#define RG_COPY_CACHE        16 /* first buffers kept for reuse (1 MiB): most
				 * bodies fit one, and a map per body costs two
				 * syscalls and its page faults */

/* A body copy: its start record and the bytes so far, in an anonymous
 * mapping of cap bytes (munmap gives the memory back at once, which a
 * malloc arena may not: the RSS follows the held bytes). */
struct pending {
	struct pending *next;
	__u64 cookie, seq;
	__u64 last_ns; /* of its last record: idle past the expiry, it is freed */
	struct rg_body_start start;
	unsigned char *buf;
	size_t len, cap;
	bool overflow; /* bytes dropped (a cap): worst case at the end */
};

struct rg_reconciler {
	struct ring_buffer *rb;
	int ratios_fd, prog_fd, h2_cdb_fd, h2_cdb_peer_fd;
	__u64 memory_limit, expiry_ns;
	struct pending *table[RG_PENDING_BUCKETS];
	/* each body counted by the rules of its port's profile */
	struct rg_count_limits limits[RG_PROFILE_MAX];
	/* written by the poll loop only, read by /metrics' thread too */
	struct rg_reconcile_stats st;
	__u64 lag_ns[RG_LAG_SAMPLES];
	__u64 nlag;
	__u64 lag_buckets[RG_LAG_NR_BOUNDS + 1]; /* not cumulative; atomic */
	__u64 lag_sum_ns;			 /* atomic */
	__u64 last_sweep_ns;
	__u64 over_memory_logged, last_over_memory_log_ns;
	/* free RG_COPY_BUF_MIN_BYTES buffers, counted in held_bytes */
	void *cache[RG_COPY_CACHE];
	unsigned int ncache;
};

#define STAT_ADD(r, f, v) __atomic_fetch_add(&(r)->st.f, (v), __ATOMIC_RELAXED)
#define STAT_SUB(r, f, v) __atomic_fetch_sub(&(r)->st.f, (v), __ATOMIC_RELAXED)

/* 0.1 ms (p50 is ~0.2 ms, bench/RECONCILE.md) to the 30 s copy expiry */
const __u64 rg_lag_bound_us[RG_LAG_NR_BOUNDS] = {
	100,   250,   500,    1000,    2500,	5000,
	10000, 25000, 100000, 1000000, 5000000, RG_COPY_EXPIRY_DEFAULT_S * 1000000ULL,
};

unsigned int rg_lag_bucket(__u64 lag_ns)
{
	unsigned int i = 0;

	while (i < RG_LAG_NR_BOUNDS && lag_ns > rg_lag_bound_us[i] * 1000)
		i++;
	return i;
}

/* A correction's lag: a sample for the percentiles, a count for /metrics. */
static void record_lag(struct rg_reconciler *r, __u64 lag_ns)
{
	r->lag_ns[r->nlag++ % RG_LAG_SAMPLES] = lag_ns;
	__atomic_fetch_add(&r->lag_buckets[rg_lag_bucket(lag_ns)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->lag_sum_ns, lag_ns, __ATOMIC_RELAXED);
}

int rg_parse_bytes(const char *s, __u64 *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 0:
		break;
	default:
		return -EINVAL;
	}
	if (shift && end[1])
		return -EINVAL;
	if (v > (~0ULL >> shift))
		return -EINVAL;
	*out = (__u64)v << shift;
	return 0;
}

__u64 rg_copy_grow(__u64 held, __u64 limit, __u64 cap, __u64 need)
{
	__u64 room, nc;

	if (need <= cap)
		return cap;
	if (need > RG_COPY_MAX_BYTES || held < cap)
		return 0;
	room = limit > held - cap ? limit - (held - cap) : 0;
	for (nc = cap ? cap * 2 : RG_COPY_BUF_MIN_BYTES; nc < need; nc *= 2)
		;
	if (nc > RG_COPY_MAX_BYTES)
		nc = RG_COPY_MAX_BYTES;
	if (nc <= room)
		return nc;
	/* near the cap: only what this record needs */
	nc = (need + RG_COPY_BUF_MIN_BYTES - 1) / RG_COPY_BUF_MIN_BYTES * RG_COPY_BUF_MIN_BYTES;
	return nc <= room ? nc : 0;
}

static void held_add(struct rg_reconciler *r, __u64 bytes)
{
	__u64 now = STAT_ADD(r, held_bytes, bytes) + bytes;

	if (now > r->st.held_bytes_max)
		__atomic_store_n(&r->st.held_bytes_max, now, __ATOMIC_RELAXED);
}

/* Counted always, logged at most every RG_OVER_MEMORY_LOG_NS. */
static void over_memory(struct rg_reconciler *r, const struct rg_body_start *s)
{
	__u64 now = rg_monotonic_ns(), n = STAT_ADD(r, over_memory, 1) + 1;

	if (r->last_over_memory_log_ns && now - r->last_over_memory_log_ns < RG_OVER_MEMORY_LOG_NS)
		return;
	pr_warn("body copy of a request to %s dropped: %llu bytes held for copies, cap "
		"(--copy-memory) %llu; %llu dropped since the last warning, charged at the "
		"worst case",
		s->db.name, (unsigned long long)r->st.held_bytes,
		(unsigned long long)r->memory_limit,
		(unsigned long long)(n - r->over_memory_logged));
	r->over_memory_logged = n;
	r->last_over_memory_log_ns = now;
}

static struct pending **slot(struct rg_reconciler *r, __u64 cookie, __u64 seq)
{
	struct pending **p = &r->table[(cookie * 31 + seq) % RG_PENDING_BUCKETS];

	while (*p && ((*p)->cookie != cookie || (*p)->seq != seq))
		p = &(*p)->next;
	return p;
}

static void pending_drop_buf(struct rg_reconciler *r, struct pending *p)
{
	if (p->buf && p->cap == RG_COPY_BUF_MIN_BYTES && r->ncache < RG_COPY_CACHE) {
		r->cache[r->ncache++] = p->buf;
	} else if (p->buf) {
		munmap(p->buf, p->cap);
		STAT_SUB(r, held_bytes, p->cap);
	}
	p->buf = NULL;
	p->len = p->cap = 0;
}

static void pending_free(struct rg_reconciler *r, struct pending *p)
{
	pending_drop_buf(r, p);
	STAT_SUB(r, held_bytes, sizeof(*p));
	STAT_SUB(r, held_copies, 1);
	free(p);
}

long rg_dechunk(unsigned char *buf, size_t len, bool cut)
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
	/* the copy may stop in the trailers: the data is complete; a body
	 * cut by its connection ends anywhere, and a Go server has read the
	 * data of a chunk begun (its chunked reader returns what arrived) */
	return st.last_chunk || cut ? (long)out : -1;
}

/* proto_uncounted: the kernel charged (or refused) the message without
 * counting it in proto_stats (an OTLP or Flight gRPC message): the
 * correction counts it there whole. */
static void correct(struct rg_reconciler *r, const struct rg_body_start *s, const char *db,
		    bool raw_name, __u64 est, __u64 exact, bool admitted, bool undecodable,
		    __u64 lag, bool proto_uncounted)
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
	c.proto_uncounted = proto_uncounted;
	c.estimated_rows = est;
	c.exact_rows = exact;
	c.lag_ns = lag;
	c.cookie = s->h.cookie;
	c.seq = s->h.seq;
	if (bpf_prog_test_run_opts(r->prog_fd, &opts)) {
		pr_warn("cannot correct database %s: %s", c.db.name, strerror(errno));
		return;
	}
	STAT_ADD(r, corrections, 1);
	/* the program's rule (rowgate/bucket.h), counted here */
	if (admitted && !undecodable && exact < est && !rg_refund_credited(lag)) {
		STAT_ADD(r, late_refunds, 1);
		STAT_ADD(r, late_refund_rows, est - exact);
	}
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

/* The held copy with the largest buffer, self aside. */
static struct pending *largest(struct rg_reconciler *r, const struct pending *self)
{
	struct pending *best = NULL, *p;
	size_t i;

	for (i = 0; i < RG_PENDING_BUCKETS; i++)
		for (p = r->table[i]; p; p = p->next)
			if (p != self && p->buf && (!best || p->cap > best->cap))
				best = p;
	return best;
}

/* Free bytes under the cap by dropping the buffers of the copies that hold
 * the most, each larger than `than` bytes: under pressure the largest
 * copies lose (worst case at their end), so copies of many bodies in
 * flight cannot keep every other request from being counted.  false when
 * the room cannot be made: the caller's copy loses instead. */
static bool make_room(struct rg_reconciler *r, const struct pending *self, __u64 bytes, __u64 than)
{
	while (r->st.held_bytes + bytes > r->memory_limit) {
		struct pending *v;

		if (r->ncache) { /* free buffers first */
			munmap(r->cache[--r->ncache], RG_COPY_BUF_MIN_BYTES);
			STAT_SUB(r, held_bytes, RG_COPY_BUF_MIN_BYTES);
			continue;
		}
		v = largest(r, self);
		if (!v || v->cap <= than)
			return false;
		over_memory(r, &v->start);
		v->overflow = true;
		pending_drop_buf(r, v);
	}
	return true;
}

/* Correct what was charged to counted rows: the request's own database takes
 * the rows without a label of their own (and those of names too long to be
 * a database), each database named inside the body its own. */
static void correct_counted(struct rg_reconciler *r, const struct rg_body_start *s,
			    const struct rg_body_end *e, const struct rg_row_counts *counts,
			    __u64 lag)
{
	__u32 i;

	correct(r, s, s->db.name, false, e->estimated_rows,
		counts->default_rows + counts->overflow_rows, e->admitted, false, lag, false);
	for (i = 0; i < counts->n_dbs && i < RG_COUNT_MAX_DBS; i++)
		correct(r, s, counts->dbs[i].name, true, 0, counts->dbs[i].rows, e->admitted,
			false, lag, false);
}

/* The counting rules of the port's profile the body came through. */
static const struct rg_count_limits *limits_of(const struct rg_reconciler *r,
					       const struct rg_body_start *s)
{
	return &r->limits[s->profile < RG_PROFILE_MAX ? s->profile : 0];
}

/*
 * The connection closed inside the body (rg_copy_aborted): the request never
 * ended, and victoria-metrics stores gzip line protocol as it decodes it.
 * Line protocol is counted as far as it arrived, dechunked and decodes, its
 * last line too (the kernel's rule for plain line protocol,
 * docs/design.md#aborted-copies), in place of the estimate charged while the
 * bytes arrived.  Other bodies are read whole by their servers (nothing
 * stored): their estimate stands.
 */
static void finish_aborted(struct rg_reconciler *r, struct pending *p, const struct rg_body_end *e,
			   const char *ce, const char *ct, __u64 lag)
{
	const struct rg_body_start *s = &p->start;
	enum rg_payload_protocol proto = rg_payload_of(s->protocol);
	struct rg_count_limits lim = *limits_of(r, s);
	struct rg_row_counts counts = { 0 };
	long len = (long)p->len;

	lim.body_cut = true;
	if (s->chunked)
		len = rg_dechunk(p->buf, p->len, true);
	if (len < 0 || proto != RG_PAYLOAD_LINE ||
	    rg_count_payload(proto, ce[0] ? ce : NULL, ct[0] ? ct : NULL, p->buf, (size_t)len, &lim,
			     &counts) ||
	    counts.err != RG_COUNT_OK) {
		STAT_ADD(r, aborted_estimated, 1);
		return;
	}
	correct_counted(r, s, e, &counts, lag);
	STAT_ADD(r, aborted, 1);
}

/* The newest RG_H2_CDB_DBS databases a client address's compressed
 * messages named: a known one moves to the end, the oldest goes first. */
static void learn_peer_db(struct rg_reconciler *r, const struct rg_peer *peer,
			  const struct rg_db_key *key, __u32 len)
{
	struct rg_h2_cdb v = { 0 };
	__u32 i, n;

	if (r->h2_cdb_peer_fd < 0 || !peer->family)
		return;
	if (bpf_map_lookup_elem(r->h2_cdb_peer_fd, peer, &v))
		memset(&v, 0, sizeof(v));
	n = v.n < RG_H2_CDB_DBS ? v.n : RG_H2_CDB_DBS;
	for (i = 0; i < n; i++)
		if (!memcmp(&v.db[i], key, sizeof(*key)))
			break;
	if (i == n && n == RG_H2_CDB_DBS)
		i = 0; /* full: the oldest goes */
	else if (i == n)
		n++;
	if (i + 1 == n && !memcmp(&v.db[i], key, sizeof(*key)))
		return; /* the newest already */
	memmove(&v.db[i], &v.db[i + 1], (n - 1 - i) * sizeof(v.db[0]));
	memmove(&v.len[i], &v.len[i + 1], (n - 1 - i) * sizeof(v.len[0]));
	v.db[n - 1] = *key;
	v.len[n - 1] = len;
	v.n = n;
	v.full = 0;
	bpf_map_update_elem(r->h2_cdb_peer_fd, peer, &v, BPF_ANY);
}

/*
 * The databases a connection's compressed messages name, taught to the
 * verdict, which refuses the connection's later compressed messages while
 * any of them is in debt: a client cannot pass writes of a database in
 * debt by naming another between them.  Past RG_H2_CDB_DBS the
 * connection's further compressed messages fail closed.  The client's
 * address learns them too (its newest RG_H2_CDB_DBS): a connection of that
 * client is judged on them until its own entry names a database, so
 * opening a connection per message does not escape the limit
 * (docs/grpc.md#compressed).
 */
static void learn_grpc_db(struct rg_reconciler *r, const struct rg_body_start *s, const char *raw)
{
	struct rg_h2_cdb v = { 0 };
	struct rg_db_key key = { 0 };
	__u64 cookie = s->h.cookie;
	__u32 i;
	int n = rg_db_key_from_raw(&key, raw, (__u32)strlen(raw), (__u32)strlen(raw));

	if (n < 0 || r->h2_cdb_fd < 0)
		return;
	learn_peer_db(r, &s->peer, &key, (__u32)n);
	/* the verdict made the entry at the connection's first copy; none:
	 * the connection closed (or the map is full) */
	if (bpf_map_lookup_elem(r->h2_cdb_fd, &cookie, &v) || v.full)
		return;
	for (i = 0; i < v.n && i < RG_H2_CDB_DBS; i++)
		if (!memcmp(&v.db[i], &key, sizeof(key)))
			return;
	if (v.n >= RG_H2_CDB_DBS) {
		v.full = 1;
		pr_info("a gRPC connection's compressed messages name more than %d databases (%s "
			"too): its further compressed messages fail closed",
			RG_H2_CDB_DBS, key.name);
	} else {
		v.db[v.n] = key;
		v.len[v.n] = (__u32)n;
		v.n++;
	}
	/* only while it exists: the connection may have closed meanwhile */
	bpf_map_update_elem(r->h2_cdb_fd, &cookie, &v, BPF_EXIST);
}

/*
 * A compressed GreptimeDatabase message (--grpc-compressed debt): the
 * kernel passed it uncharged, its database unknown.  Its coding is read
 * from its magic bytes: the server decodes by the grpc-encoding header, and
 * only gzip and zstd (the codings GreptimeDB accepts) succeed there, each
 * only on its own format.  What neither can decode the server stores
 * nothing of: nothing is charged.  The rows go to the database the message
 * names, as debt (docs/grpc.md#compressed).
 */
/* An OTLP/gRPC export or Flight DoPut message: the kernel judged it on its
 * header's database (s->db) and charged (or refused) an estimate; its rows
 * (data points, log records, spans, by the OTLP/HTTP rules; a FlightData's
 * RecordBatch length) replace it here.  One rowgated cannot decode keeps
 * the estimate, as an HTTP body does. */
static void finish_grpc_export(struct rg_reconciler *r, struct pending *p,
			       const struct rg_body_end *e, const char *ce, __u64 lag)
{
	const struct rg_body_start *s = &p->start;
	struct rg_row_counts counts = { 0 };

	if (rg_count_payload(rg_payload_of(s->protocol), ce, "application/x-protobuf", p->buf,
			     p->len, limits_of(r, s), &counts) ||
	    counts.err != RG_COUNT_OK) {
		STAT_ADD(r, undecodable, 1);
		pr_info("%s gRPC message of %zu bytes to %s not counted: %s",
			rg_protocol_name(s->protocol), p->len, s->db.name, counts.err_msg);
		correct(r, s, s->db.name, false, e->estimated_rows, e->estimated_rows, e->admitted,
			true, lag, true);
		return;
	}
	correct(r, s, s->db.name, false, e->estimated_rows, counts.rows, e->admitted, false, lag,
		true);
	STAT_ADD(r, reconciled, 1);
	record_lag(r, rg_monotonic_ns() - e->end_ns);
}

static void finish_grpc(struct rg_reconciler *r, struct pending *p, const struct rg_body_end *e,
			__u64 lag)
{
	const struct rg_body_start *s = &p->start;
	static const unsigned char gzip_magic[] = { 0x1f, 0x8b };
	static const unsigned char zstd_magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
	struct rg_row_counts counts = { 0 };
	const char *ce = NULL;
	__u32 i;

	if (!e->complete || p->overflow) {
		STAT_ADD(r, incomplete, 1);
		pr_warn("gRPC message of %llu bytes not counted: its copy is incomplete",
			(unsigned long long)e->body_bytes);
		return;
	}
	if (p->len >= sizeof(gzip_magic) && !memcmp(p->buf, gzip_magic, sizeof(gzip_magic)))
		ce = "gzip";
	else if (p->len >= sizeof(zstd_magic) && !memcmp(p->buf, zstd_magic, sizeof(zstd_magic)))
		ce = "zstd";
	if (s->protocol != RG_PROTO_GREPTIME_GRPC) {
		finish_grpc_export(r, p, e, ce, lag);
		return;
	}
	if (!ce || rg_count_payload(RG_PAYLOAD_GREPTIME_GRPC, ce, NULL, p->buf, p->len,
				    limits_of(r, s), &counts) ||
	    counts.err != RG_COUNT_OK) {
		STAT_ADD(r, undecodable, 1);
		pr_info("compressed gRPC message of %zu bytes not counted (the server cannot store "
			"it either): %s",
			p->len, ce ? counts.err_msg : "neither gzip nor zstd");
		return;
	}
	if (counts.overflow_rows)
		pr_warn("compressed gRPC message names a database no key holds: "
			"%llu rows not charged",
			(unsigned long long)counts.overflow_rows);
	for (i = 0; i < counts.n_dbs && i < RG_COUNT_MAX_DBS; i++)
		correct(r, s, counts.dbs[i].name, true, 0, counts.dbs[i].rows, e->admitted, false,
			lag, false);
	if (counts.n_dbs == 1)
		learn_grpc_db(r, s, counts.dbs[0].name);
	STAT_ADD(r, reconciled, 1);
	record_lag(r, rg_monotonic_ns() - e->end_ns);
}

static void finish(struct rg_reconciler *r, struct pending *p, const struct rg_body_end *e)
{
	const struct rg_body_start *s = &p->start;
	struct rg_row_counts counts = { 0 };
	__u64 lag = rg_monotonic_ns() - e->end_ns;
	char ct[RG_CT_BYTES + 1] = "", ce[RG_CE_BYTES + 1] = "";
	long len = (long)p->len;
	enum rg_payload_protocol proto = rg_payload_of(s->protocol);

	if (s->protocol == RG_PROTO_GREPTIME_GRPC || (s->h.seq >> 63)) {
		/* a gRPC message's copy (its id's top bit: bpf/h2/state.h) */
		finish_grpc(r, p, e, lag);
		return;
	}
	memcpy(ct, s->content_type, RG_CT_BYTES);
	memcpy(ce, s->content_encoding, RG_CE_BYTES);
	if (e->aborted && !p->overflow) {
		finish_aborted(r, p, e, ce, ct, lag);
		return;
	}
	if (!e->complete || p->overflow) {
		STAT_ADD(r, incomplete, 1);
		/* a copy over a cap: its bytes at the smallest row */
		correct(r, s, s->db.name, false, e->estimated_rows,
			p->overflow ? worst_rows(e->estimated_rows, e->body_bytes) :
				      e->estimated_rows,
			e->admitted, true, lag, false);
		return;
	}
	if (s->chunked)
		len = rg_dechunk(p->buf, p->len, false);
	if (len < 0 || proto == RG_PAYLOAD_INVALID ||
	    rg_count_payload(proto, ce[0] ? ce : NULL, ct[0] ? ct : NULL, p->buf, (size_t)len,
			     limits_of(r, s), &counts) ||
	    counts.err != RG_COUNT_OK) {
		STAT_ADD(r, undecodable, 1);
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
			e->admitted, true, lag, false);
		return;
	}
	correct_counted(r, s, e, &counts, lag);
	learn_ratio(r, s, e->body_bytes, counts.rows);
	STAT_ADD(r, reconciled, 1);
	record_lag(r, rg_monotonic_ns() - e->end_ns);
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
			pending_free(r, p);
		}
		/* no room for the record itself: the copy is dropped whole and
		 * its request keeps the kernel's estimate, like one whose start
		 * the full ring lost (its other records count as orphans) */
		if (!make_room(r, NULL, sizeof(*p), 0)) {
			over_memory(r, data);
			return 0;
		}
		p = calloc(1, sizeof(*p));
		if (!p)
			return 0;
		held_add(r, sizeof(*p));
		STAT_ADD(r, held_copies, 1);
		p->cookie = h->cookie;
		p->seq = h->seq;
		p->last_ns = rg_monotonic_ns();
		memcpy(&p->start, data, sizeof(p->start));
		p->next = r->table[(h->cookie * 31 + h->seq) % RG_PENDING_BUCKETS];
		r->table[(h->cookie * 31 + h->seq) % RG_PENDING_BUCKETS] = p;
		break;
	case RG_BODY_DATA: {
		const struct rg_body_data *d = data;
		size_t n = h->len;

		p = *sp;
		if (!p) {
			STAT_ADD(r, orphans, 1);
			return 0;
		}
		p->last_ns = rg_monotonic_ns();
		if (n > RG_BODY_DATA_BYTES || size < sizeof(*h) + n || p->overflow)
			return 0;
		if (p->len + n > RG_COPY_MAX_BYTES) {
			p->overflow = true;
			pending_drop_buf(r, p);
			return 0;
		}
		if (!p->buf && r->ncache && n <= RG_COPY_BUF_MIN_BYTES) {
			p->buf = r->cache[--r->ncache]; /* counted already */
			p->cap = RG_COPY_BUF_MIN_BYTES;
		}
		if (p->len + n > p->cap) {
			__u64 need = p->len + n, cap;
			__u64 min = (need + RG_COPY_BUF_MIN_BYTES - 1) / RG_COPY_BUF_MIN_BYTES *
				    RG_COPY_BUF_MIN_BYTES;
			void *nb;

			cap = rg_copy_grow(r->st.held_bytes, r->memory_limit, p->cap, need);
			if (!cap && make_room(r, p, min - p->cap, min))
				cap = rg_copy_grow(r->st.held_bytes, r->memory_limit, p->cap, need);
			if (!cap) {
				/* counted as a copy over a cap: worst case at its end */
				over_memory(r, &p->start);
				p->overflow = true;
				pending_drop_buf(r, p);
				return 0;
			}
			nb = p->buf ? mremap(p->buf, p->cap, cap, MREMAP_MAYMOVE) :
				      mmap(NULL, cap, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (nb == MAP_FAILED) {
				p->overflow = true;
				pending_drop_buf(r, p);
				return 0;
			}
			held_add(r, cap - p->cap);
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
			STAT_ADD(r, orphans, 1);
			return 0;
		}
		*sp = p->next;
		finish(r, p, data);
		pending_free(r, p);
		break;
	}
	return 0;
}

/* Drop copies whose end never came (connection reset mid-body): idle for
 * the expiry, their requests keep the kernel's estimate. */
static void sweep(struct rg_reconciler *r)
{
	__u64 now = rg_monotonic_ns();
	size_t i;

	if (now - r->last_sweep_ns < r->expiry_ns / 4)
		return;
	r->last_sweep_ns = now;
	for (i = 0; i < RG_PENDING_BUCKETS; i++) {
		struct pending **pp = &r->table[i];

		while (*pp) {
			if (now - (*pp)->last_ns > r->expiry_ns) {
				struct pending *p = *pp;

				*pp = p->next;
				pending_free(r, p);
				STAT_ADD(r, expired, 1);
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
	r->h2_cdb_fd = fds->h2_cdb_fd;
	r->h2_cdb_peer_fd = fds->h2_cdb_peer_fd;
	r->prog_fd = fds->prog_fd;
	r->memory_limit = fds->copy_memory_bytes ?: RG_COPY_MEMORY_DEFAULT_BYTES;
	r->expiry_ns = (__u64)(fds->copy_expiry_s ?: RG_COPY_EXPIRY_DEFAULT_S) * 1000000000ULL;
	r->st.memory_limit = r->memory_limit;
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
			pending_free(r, p);
		}
	while (r->ncache)
		munmap(r->cache[--r->ncache], RG_COPY_BUF_MIN_BYTES);
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

void rg_reconciler_stats(const struct rg_reconciler *r, struct rg_reconcile_stats *out)
{
#define RG_LOAD_(field, ...) out->field = __atomic_load_n(&r->st.field, __ATOMIC_RELAXED);
	RG_RECONCILE_STATS_FIELDS(RG_LOAD_)
#undef RG_LOAD_
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

void rg_reconciler_lag_histogram(const struct rg_reconciler *r, struct rg_lag_histogram *out)
{
	__u64 sum = 0;

	for (unsigned int i = 0; i <= RG_LAG_NR_BOUNDS; i++) {
		sum += __atomic_load_n(&r->lag_buckets[i], __ATOMIC_RELAXED);
		if (i < RG_LAG_NR_BOUNDS)
			out->le[i] = sum;
	}
	out->count = sum;
	out->sum_ns = __atomic_load_n(&r->lag_sum_ns, __ATOMIC_RELAXED);
}

void rg_reconciler_stats_json(const struct rg_reconciler *r, json_t *obj)
{
	__u64 n = r->nlag < RG_LAG_SAMPLES ? r->nlag : RG_LAG_SAMPLES;
	__u64 *s;

	struct rg_reconcile_stats st;

	rg_reconciler_stats(r, &st);
	rg_counters_json(obj, &rg_reconcile_stats_table, &st);
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
