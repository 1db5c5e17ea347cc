/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/2 verdict: connections on a --grpc port that open with the h2c
 * preface are followed frame by frame (rowgate/h2/frame.h), each completed
 * GreptimeDatabase insert message is charged to its database's bucket, and
 * a message the bucket refuses, or HTTP/2 the parser cannot follow, ends
 * the connection with a kernel GOAWAY (docs/grpc.md#7-what-is-built).
 * Streams whose `:path` no gRPC route names pass unread and uncharged
 * (docs/grpc.md#7-path-routing).  A program of its own (rg_h2_verdict in
 * rowgate.bpf.c; its maps and steps are here), reached by a tail call from
 * the HTTP/1 verdict, so it has its own stack and verifier budget. */
#ifndef ROWGATE_BPF_H2_H
#define ROWGATE_BPF_H2_H

#include "base.h"
#include "maps.h"
#include "admit.h"
#include "close.h"
#include "conn.h"
#include "copy.h"
#include "egress.h"
#include "request.h"
#include "respond.h"
#include "skb_edit.h"
#include "rowgate/abi.h"
#include "rowgate/h2/frame.h"
#include "rowgate/h2/stash.h"
#include "rowgate/guard.h"
#include "rowgate/h2/answer.h"

#define RG_H2_WINDOW_BYTES 256 /* bytes loaded from the skb at a time */
#define RG_H2_GOAWAY_HDR_BYTES 17 /* frame header, last stream id, error code */
#define RG_H2_FILLER_TYPE 0xfa	  /* a frame type no peer knows: ignored (RFC 9113 §5.5) */
#define RG_H2_ENHANCE_YOUR_CALM 0xb
#define RG_H2_PROTOCOL_ERROR 0x1

#define RG_H2_OPS	      32 /* frames rewritten in one skb (--grpc-reject keep) */
/* kernel RST_STREAMs in one skb: below h2's 20 resets of streams not yet
 * accepted (docs/grpc.md §6.2.3) */
#define RG_H2_RESETS_PER_SKB 16
#define RG_H2_REJECTED	      16 /* refused streams the client still sends on */
#define RG_H2_OP_REWRITE      1 /* RST_STREAM + kernel SETTINGS + filler */
#define RG_H2_OP_FILL	      2 /* the frame becomes unknown filler */
#define RG_H2_OP_EARLY	      3 /* RST_STREAM + filler; SETTINGS at the frame's end */
#define RG_H2_OP_GIVE_BACK    4 /* kernel SETTINGS + filler (docs/grpc.md#h2-give-back) */

/* Why --grpc-reject keep could not keep a refusal: it closes with GOAWAY
 * instead, counted in h2_reject_fallback and in one h2_fallback_* counter
 * (include/rowgate/counters.h; docs/grpc.md#7-step-2) */
enum rg_h2_fallback {
	RG_H2_FB_HEAD_SPLIT = 1, /* the completing frame's header: an earlier skb */
	RG_H2_FB_SHORT,		 /* its payload cannot hold the rewrite */
	RG_H2_FB_LATER_SPLIT,	 /* a refused stream's later frame header: an earlier skb */
	RG_H2_FB_FULL,		 /* answer or SETTINGS queue */
	RG_H2_FB_PER_SKB,	 /* RG_H2_RESETS_PER_SKB or RG_H2_OPS reached */
	RG_H2_FB_NAME,		 /* the database name needs percent-encoding */
	RG_H2_FB_EGRESS,	 /* egress lost the connection's framing */
};

struct rg_h2_op {
	__u32 off; /* skb offset of the frame header */
	__u32 sid;
	__u32 flen;
	__u32 kind; /* RG_H2_OP_* */
};

/* One HTTP/2 connection.  Serialised by the socket lock, as rg_conn. */
struct rg_h2_sock {
	struct rg_h2_conn h;
	__u8 win[RG_H2_WINDOW_BYTES];
	__u32 win_len;
	__u32 pos;	/* next byte in win */
	__u32 win_off;	/* skb offset of win[0] */
	__s32 err;	/* enum rg_h2_result of the error that closed it */
	__u8 closing;	/* GOAWAY sent: nothing more reaches the server */
	__u8 reject;	/* this skb completes a refused message */
	__u8 must_pass; /* inside the server's recvmsg: only SK_PASS sticks */
	__u8 lost;	/* not followed any more (an error where only a pass sticks) */
	__u32 reject_sid; /* stream of the refused message */
	__u64 messages;	  /* charged messages, for bpftool */
	__u64 rows;	  /* their rows */
	struct rg_reject_info info;
	__u64 reject_rows;
	__u32 db_len;
	__u32 sid_passed; /* highest stream the client opened before this skb */
	struct rg_db_key db;
	char db_raw[RG_GRPC_DB_SCRATCH_BYTES]; /* scratch of rg_grpc_db_key_in */
	struct rg_response plan;
	struct rg_resp_buf text;
	/* --grpc-reject keep (docs/grpc.md §6.3) */
	__u32 fh_off;	/* skb offset of the current frame's header; ~0: not in this skb */
	__u32 nops;	/* rewrites due in this skb */
	__u32 resets;	/* of them, RST_STREAMs */
	__u32 pad_adm_next; /* free: earlier builds' admitted-stream ring */
	__u32 frame_rej; /* the current frame was rewritten: its stream was refused */
	__u32 unrouted_seen; /* h->unrouted_streams already counted */
	__u32 stash_whole; /* the stash begins with the current frame's whole header */
	/* a refusal decided at a DATA frame's header (rg_h2_early_decide) */
	__u32 early_sid;      /* its stream, until its answer is queued; 0: none */
	__u32 early_left;     /* bytes of its frame still to come, from the next
			       * skb's base on; not 0: its last 9 bytes (the
			       * trigger) are not all written */
	__u32 early_rows_set; /* its message completed: early_ans.rows is known */
	__u32 early_head_left; /* bytes of its rewritten head for the next skb's
				* start (docs/grpc.md#h2-early-head-split) */
	__u32 early_flen;      /* its frame's payload length, to write them */
	struct rg_h2_answer early_ans;
	struct rg_h2_op ops[RG_H2_OPS];
	__u32 rej[RG_H2_REJECTED]; /* refused streams, 0 = free */
	__u32 rej_next;		   /* the entry taken when none is free (a ring) */
	__u32 pad_adm[16]; /* free (as pad_adm_next): the pinned layout stays */
	/* --grpc-compressed debt: copies of compressed messages for rowgated */
	__u64 copy_seq[RG_H2_STREAM_SLOTS]; /* the slot's message's copy; 0: none */
	__u32 copy_sid[RG_H2_STREAM_SLOTS]; /* the stream copy_seq belongs to */
	__u32 copy_next;		    /* copies begun on the connection */
	__s32 cp_slot;			    /* bytes of this skb not emitted yet: */
	__u32 cp_from;			    /* [cp_from, cp_to) of slot cp_slot */
	__u32 cp_to;
	__u64 cookie; /* of the socket, for h2_cdb */
	__s32 cverdict; /* rg_h2_compressed_admit of the compressed message completing */
	__u32 reject_estimated; /* reject_rows is an estimate (rg_grpc_answer_rows) */
	__u32 goaway_sid; /* the GOAWAY's last stream id (rg_h2_goaway_text) */
};

/* 1: rowgated --grpc-compressed debt: a compressed GreptimeDatabase message
 * passes and a copy goes to rowgated, which charges its rows to the
 * database it names (docs/grpc.md#compressed); 0: it fails closed. */
const volatile __u32 rg_h2_compressed_debt = 0;
/* copy_seq of a message not copied (its stream was refused, its copy lost) */
#define RG_H2_COPY_NONE 1
/* copy ids: apart from HTTP/1 request numbers on the same ring */
#define RG_H2_COPY_SEQ_BASE (1ULL << 63)

/* h2_conns: socket cookie -> state of a connection that opened with the
 * HTTP/2 preface; deleted with the connection (sockops) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_h2_sock);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_CONNS SEC(".maps");

/* h2_cdb: the database of each connection's compressed messages
 * (struct rg_h2_cdb), written by rowgated; not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct rg_h2_cdb);
} RG_MAP_H2_CDB SEC(".maps");

/* h2_zero: [0] -> a zeroed state to create entries from (too large for
 * the stack); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_h2_sock);
} h2_zero SEC(".maps");

/* h2_slot: [RG_VERDICT_SLOT] -> the HTTP/2 verdict of the running build;
 * pinned for the reason verdict_slot is */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, RG_VERDICT_SLOT + 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_SLOT SEC(".maps");

/* h2_routes: a gRPC method path's wire bytes (raw or Huffman, whole or a
 * prefix) -> route; key {0, 0} lists the prefix lengths, written last:
 * until it is there every stream is followed.  Written by rowgated at
 * each start (rgd_populate_h2_routes); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_H2_MAX_ROUTES);
	__type(key, struct rg_h2_route_key);
	__type(value, struct rg_h2_route);
} RG_MAP_H2_ROUTES SEC(".maps");

/* h2_route_key: [0] -> scratch for an h2_routes key (the stack of the
 * byte loop's call chain is nearly full); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_h2_route_key);
} h2_route_key SEC(".maps");

/* The class of a route found in h2_routes. */
static __always_inline int rg_h2_route_found(const struct rg_h2_route *r)
{
	return rg_h2_route_flags_class(r->flags);
}

/* The class of the `:path` the HPACK shadow just read: the whole value,
 * then each prefix length, looked up in h2_routes.  A global function:
 * verified once. */
__attribute__((noinline)) int rg_h2_route_class(struct rg_hpack *t)
{
	struct rg_h2_route_key *k;
	struct rg_h2_route *lens, *r;
	__u32 i, j, zero = 0;
	__u8 huff, l;

	if (!t)
		return RG_HPACK_PATH_ROUTED;
	k = bpf_map_lookup_elem(&h2_route_key, &zero);
	if (!k)
		return RG_HPACK_PATH_ROUTED; /* cannot happen: followed, the safe side */
	huff = t->huff ? RG_H2_ROUTE_HUFFMAN : 0;
	__builtin_memset(k, 0, sizeof(*k));
	if (t->slen <= RG_HPACK_PATH_BYTES) {
		k->len = (__u8)t->slen;
		k->coding = huff;
		__builtin_memcpy(k->b, t->path, RG_HPACK_PATH_BYTES);
		r = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
		if (r)
			return rg_h2_route_found(r);
	}
	__builtin_memset(k, 0, sizeof(*k));
	lens = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
	if (!lens)
		return RG_HPACK_PATH_ROUTED; /* routes not written yet: follow all */
	for (j = 0; j < RG_H2_ROUTE_LENS; j++) {
		l = lens->prefix_lens[j];
		if (l == 0 || l > t->slen || l > RG_HPACK_PATH_BYTES)
			continue;
		k->len = l;
		k->coding = huff | RG_H2_ROUTE_PREFIX;
		/* the first l bytes, zero after: no branch per byte */
		for (i = 0; i < RG_HPACK_PATH_BYTES; i++)
			k->b[i] = t->path[i] & (__u8)(0 - rg_hpack_ge(l, i + 1));
		r = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
		if (r)
			return rg_h2_route_found(r);
	}
	return RG_HPACK_PATH_OTHER;
}

struct rg_h2_loop {
	struct __sk_buff *skb;
	struct rg_h2_sock *st;
	struct rg_h2_out *out; /* the server's side: the SETTINGS queue */
};

/* Index of sid in a small set, -1 if absent. */
static __always_inline int rg_h2_find(const __u32 *set, __u32 n, __u32 sid)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (set[i] == sid)
			return (int)i;
	return -1;
}

/* --grpc-reject keep: the kernel reset stream sid in the server's view (its
 * current frame rewritten, or in the refused set) */
static __always_inline bool rg_h2_stream_refused(const struct rg_h2_sock *st, __u32 sid)
{
	return rg_h2_keep && (st->frame_rej == sid || rg_h2_find(st->rej, RG_H2_REJECTED, sid) >= 0);
}

/* The slot whose copied message (compressed under --grpc-compressed debt,
 * or OTLP) the next byte belongs to, or -1. */
static __always_inline int rg_h2_copy_slot(const struct rg_h2_sock *st)
{
	const struct rg_h2_stream *s;

	if (st->h.st != RG_H2S_DATA || st->h.unrouted_frame)
		return -1;
	if (st->h.slot < 0 || st->h.slot >= RG_H2_STREAM_SLOTS)
		return -1;
	s = &st->h.s[rg_h2_slot(st->h.slot)];
	if (s->pfx_got != 5)
		return -1;
	return s->m.hdr || (rg_h2_compressed_debt && s->m.compressed) ? st->h.slot : -1;
}

/* The current DATA frame goes on with a compressed message whose copy is
 * under way. */
static __always_inline bool rg_h2_copy_open(const struct rg_h2_sock *st)
{
	__s8 slot = st->h.slot;
	__u32 i;

	if (slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return false;
	i = rg_h2_slot(slot);
	return st->h.s[i].id == st->h.fsid && st->h.s[i].pfx_got == 5 &&
	       st->copy_seq[i] > RG_H2_COPY_NONE && st->copy_sid[i] == st->h.fsid;
}

/* Emit the bytes of this skb gathered for a copy. */
__noinline int rg_h2_copy_flush(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u32 slot;

	if (!skb || !st || st->cp_slot < 0 || st->cp_slot >= RG_H2_STREAM_SLOTS)
		return 0;
	slot = rg_h2_slot(st->cp_slot);
	st->cp_slot = -1;
	if (st->copy_seq[slot] <= RG_H2_COPY_NONE)
		return 0;
	if (rg_emit_bytes(skb, st->copy_seq[slot], st->cp_from, st->cp_to)) {
		st->copy_seq[slot] = RG_H2_COPY_NONE;
		rg_global_inc(h2_compressed_lost);
	}
	return 0;
}

/* Bytes [off, off + n) of this skb are the compressed message of stream
 * slot `slot`: begin its copy at its first bytes (the start record), and
 * gather them, contiguous ones in one range. */
__noinline int rg_h2_copy_extend(struct __sk_buff *skb, struct rg_h2_sock *st, int slot, __u32 off,
				 __u32 n)
{
	struct rg_body_start *rec;
	const struct rg_h2_stream *s;
	__u32 i, sid;

	if (!skb || !st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	i = rg_h2_slot(slot);
	s = &st->h.s[i];
	sid = s->id;
	if (!st->copy_seq[i] || st->copy_sid[i] != sid) {
		st->copy_sid[i] = sid;
		st->copy_seq[i] = RG_H2_COPY_NONE;
		/* a refused stream's frames never reach the server */
		if (rg_h2_stream_refused(st, sid))
			return 0;
		rec = bpf_ringbuf_reserve(&RG_MAP_BODIES, sizeof(*rec), 0);
		if (!rec) {
			rg_global_inc(body_ring_full);
			rg_global_inc(h2_compressed_lost);
			return 0;
		}
		st->copy_seq[i] = RG_H2_COPY_SEQ_BASE | ++st->copy_next;
		__builtin_memset(rec, 0, sizeof(*rec));
		rec->h.type = RG_BODY_START;
		rec->h.cookie = bpf_get_socket_cookie(skb);
		rec->h.seq = st->copy_seq[i];
		rec->protocol = s->m.hdr ? s->m.hdr : RG_PROTO_GREPTIME_GRPC;
		if (s->m.hdr) /* an OTLP export's: its header's database */
			rg_grpc_db_key_in(&s->m, &rec->db, st->db_raw);
		rec->admitted = 1;
		rec->content_length = s->m.len;
		bpf_ringbuf_submit(rec, 0);
	}
	if (st->copy_seq[i] == RG_H2_COPY_NONE)
		return 0;
	if (st->cp_slot == slot && st->cp_to == off) {
		st->cp_to += n;
		return 0;
	}
	rg_h2_copy_flush(skb, st);
	st->cp_slot = slot;
	st->cp_from = off;
	st->cp_to = off + n;
	return 0;
}

/* The compressed message of slot `slot` completed (its last byte is
 * gathered) and was judged: its copy's end record; the kernel charged
 * nothing.  A refused one is counted by rowgated as rejected rows. */
__noinline int rg_h2_copy_end(struct __sk_buff *skb, struct rg_h2_sock *st, int slot, int admitted)
{
	__u32 i;

	if (!skb || !st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	i = rg_h2_slot(slot);
	if (st->cp_slot == slot)
		rg_h2_copy_flush(skb, st);
	if (st->copy_seq[i] > RG_H2_COPY_NONE) {
		/* what the kernel charged or refused: an OTLP export's estimate */
		if (rg_body_end_record(bpf_get_socket_cookie(skb), st->copy_seq[i],
				       st->h.s[i].m.len, st->h.s[i].m.hdr ? st->h.s[i].m.rows : 0,
				       admitted, false)) {
			rg_global_inc(body_ring_full);
			rg_global_inc(h2_compressed_lost);
		} else {
			rg_global_inc(h2_compressed_copied);
		}
	}
	st->copy_seq[i] = 0;
	return 0;
}

/*
 * A compressed message (--grpc-compressed debt) is judged on every database
 * the connection's compressed messages named before (h2_cdb, learned by
 * rowgated from their copies): refused while any of them is in debt, a
 * refusal the server might not have made, never an admission it would not
 * have made (docs/grpc.md#compressed).  Returns RG_ADMIT_UNLIMITED when
 * none is learned or limited, RG_ADMIT_YES (st->db: the first), RG_ADMIT_NO
 * (st->db, st->info: the one in debt), or -1: too many to follow.
 */
__noinline int rg_h2_compressed_admit(struct rg_h2_sock *st)
{
	struct rg_h2_cdb *cdb; /* its keys are map memory: keys 6.1 takes */
	int verdict = RG_ADMIT_UNLIMITED;
	__u64 cookie; /* Linux 6.1 takes no map key from an argument's memory */
	__u32 i;

	if (!st)
		return -1;
	cookie = st->cookie;
	cdb = bpf_map_lookup_elem(&RG_MAP_H2_CDB, &cookie);
	if (!cdb)
		return RG_ADMIT_UNLIMITED;
	if (cdb->full)
		return -1;
	for (i = 0; i < RG_H2_CDB_DBS && i < cdb->n; i++) {
		switch (rg_admit(&cdb->db[i], &st->info)) {
		case RG_ADMIT_UNLIMITED:
			continue;
		case RG_ADMIT_SHADOW:
			/* passes unless another database refuses or admits it */
			if (verdict != RG_ADMIT_UNLIMITED)
				continue;
			verdict = RG_ADMIT_SHADOW;
			break;
		case RG_ADMIT_YES:
			if (verdict == RG_ADMIT_YES)
				continue;
			verdict = RG_ADMIT_YES;
			break;
		default:
			verdict = RG_ADMIT_NO;
			break;
		}
		__builtin_memcpy(&st->db, &cdb->db[i], sizeof(st->db));
		st->db_len = cdb->len[i] < RG_DB_NAME_MAX ? cdb->len[i] : RG_DB_NAME_MAX - 1;
		if (verdict == RG_ADMIT_NO)
			break;
	}
	return verdict;
}

/* A message completed: charge it, or refuse it (returns 1; the caller names
 * its rows in the answer: rg_h2_refused_rows).  A message the
 * kernel cannot judge (compressed, a database name that fits no key) is
 * an error: the connection is not followed further.  A global function:
 * verified once, not at every step of the byte loop that reaches it. */
__noinline int rg_h2_message(struct rg_h2_sock *st)
{
	struct rg_grpc_msg *m;
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	__s8 s;
	int n;

	if (!st)
		return -1;
	s = st->h.done_slot;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	m = &st->h.s[rg_h2_slot(s)].m;
	if (rg_grpc_db_hidden(m) && !rg_h2_compressed_debt) {
		/* grpc-encoding: the database and rows are unknown here
		 * (docs/grpc.md#compressed) */
		st->err = RG_H2_ERR_GRPC;
		return -1;
	}
	if (rg_h2_stream_refused(st, st->h.done_sid))
		return 0; /* its stream was reset: never handled, never charged */
	if (rg_grpc_db_hidden(m)) {
		/* --grpc-compressed debt: charged nothing here, its rows by
		 * rowgated from its copy (rg_h2_copy_end) */
		n = st->cverdict;
		if (n < 0) {
			rg_global_inc(h2_compressed_dbs_full);
			st->err = RG_H2_ERR_GRPC;
			return -1;
		}
		if (n == RG_ADMIT_UNLIMITED)
			return 0; /* nothing learned yet */
		__builtin_memcpy(&db, &st->db, sizeof(db));
	} else {
		if (!rg_grpc_charged(m))
			return 0;
		n = rg_grpc_db_key_in(m, &st->db, st->db_raw);
		if (n < 0) {
			st->err = RG_H2_ERR_PROTOBUF;
			return -1;
		}
		st->db_len = (__u32)n;
		__builtin_memcpy(&db, &st->db, sizeof(db));
		n = rg_admit(&db, &st->info);
		/* an OTLP export is charged (or refused) the estimate HTTP gives
		 * such a body; rowgated corrects it from the copy (rg_h2_copy_end
		 * sends it), and a lost copy leaves it standing */
		if (m->hdr)
			m->rows = n == RG_ADMIT_UNLIMITED ? 0 : rg_grpc_answer_rows(m);
	}
	switch (n) {
	case RG_ADMIT_UNLIMITED:
		/* an OTLP export's rows are rowgated's to count: an estimate */
		rg_unlimited_count(rg_unlimited_get(&db), rg_grpc_answer_rows(m), m->len,
				   rg_grpc_rows_estimated(m));
		return 0;
	case RG_ADMIT_SHADOW:
		rg_shadow_count(&db, rg_grpc_db_hidden(m) ? 0 : m->rows);
		return 0;
	case RG_ADMIT_YES:
		rg_charge(&db, m->rows, 1, true);
		st->messages++;
		st->rows += m->rows;
		return 0;
	default:
		break;
	}
	/* every message is judged on its own, a stream's later ones too:
	 * GreptimeDB's limiter fails a HandleRequests call at the first
	 * message it refuses, after storing the earlier ones (docs/grpc.md
	 * #streams) */
	if (st->must_pass) {
		/* its bytes reach the server whatever the verdict says */
		rg_charge(&db, m->rows, 1, false);
		rg_global_inc(h2_unenforced);
		return 0;
	}
	rg_account_reject(&db, m->rows, &st->info);
	st->reject_sid = st->h.done_sid;
	st->reject = 1;
	return 1;
}

/* The rows the answer to the message rg_h2_message refused names
 * (st->reject_rows): an estimate for a compressed one (its rows are
 * counted from its copy).  Not in rg_h2_message: its stack has no room. */
__noinline int rg_h2_refused_rows(struct rg_h2_sock *st)
{
	__s8 s;

	if (!st)
		return 0;
	s = st->h.done_slot;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	st->reject_rows = rg_grpc_answer_rows(&st->h.s[rg_h2_slot(s)].m);
	st->reject_estimated = rg_grpc_rows_estimated(&st->h.s[rg_h2_slot(s)].m);
	return 0;
}

/* An entry of the refused-stream set for a new refusal: a free one, else
 * the ring's next (a client that abandons a refused call never ends its
 * stream: its later frames, if any ever come, reach the server as frames
 * on a stream it reset, a stream error, never a handler call). */
static __always_inline int rg_h2_rej_slot(struct rg_h2_sock *st)
{
	int free = rg_h2_find(st->rej, RG_H2_REJECTED, 0);

	if (free < 0)
		free = (int)(st->rej_next++ & (RG_H2_REJECTED - 1));
	return free;
}

/* The parser's slot of a refused stream may go to a new stream. */
static __always_inline void rg_h2_mark_refused(struct rg_h2_conn *h, __s8 slot, __u32 sid)
{
	if (slot >= 0 && slot < RG_H2_STREAM_SLOTS && h->s[rg_h2_slot(slot)].id == sid)
		h->s[rg_h2_slot(slot)].refused = 1;
}

/* Queue a rewrite of the current frame; 0, or why none fits: split (the
 * frame's header is not in this skb) or RG_H2_FB_PER_SKB. */
static __always_inline int rg_h2_op(struct rg_h2_sock *st, __u32 kind, int split)
{
	struct rg_h2_op *op;

	if (st->fh_off == ~0U)
		return split;
	if (st->nops >= RG_H2_OPS)
		return RG_H2_FB_PER_SKB;
	op = &st->ops[st->nops & (RG_H2_OPS - 1)];
	op->off = st->fh_off;
	op->sid = st->h.fsid;
	op->flen = st->h.flen;
	op->kind = kind;
	st->nops++;
	return 0;
}

/* Whether egress can take one more refused stream's answer and kernel
 * SETTINGS: 0, or the enum rg_h2_fallback why not. */
static __always_inline int rg_h2_out_room(const struct rg_h2_out *o)
{
	if (!o || o->lost || o->closing)
		return RG_H2_FB_EGRESS;
	if (o->ack_untracked || /* the SETTINGS queue overflowed once */
	    o->ans_tail - RG_READ_ONCE(o->ans_head) >= RG_H2_ANSWERS ||
	    o->settings_tail - RG_READ_ONCE(o->settings_head) >= RG_H2_SETTINGS_QUEUE)
		return RG_H2_FB_FULL;
	return 0;
}

/*
 * Reset the current DATA frame's stream in the server's view: queue the
 * frame's rewrite (kind: RG_H2_OP_REWRITE or RG_H2_OP_EARLY), and account
 * the stream as refused: its later messages in this frame are gone with
 * it, the client's later frames on it become filler, its parser slot
 * (slot) may go to a new stream, and the window of the hidden DATA is owed
 * to the client.  0, or rg_h2_op's reason (split) why no rewrite fits.
 */
static __always_inline int rg_h2_reset_stream(struct rg_h2_sock *st, struct rg_h2_out *o,
					      __u32 kind, int split, __s8 slot)
{
	__u32 sid = st->h.fsid;
	int r = rg_h2_op(st, kind, split);

	if (r)
		return r;
	st->resets++;
	st->frame_rej = sid;
	if (!(st->h.fflags & RG_H2_FLAG_END_STREAM))
		st->rej[rg_h2_rej_slot(st) & (RG_H2_REJECTED - 1)] = sid;
	rg_h2_mark_refused(&st->h, slot, sid);
	RG_FETCH_ADD(&o->owed_in, st->h.flen);
	return 0;
}

/* A refused stream's answer: rows (estimated or not) of the database
 * st->db names, at the quota and limit rg_admit found. */
static __always_inline void rg_h2_answer_set(struct rg_h2_answer *a, const struct rg_h2_sock *st,
					     __u32 sid, __u64 rows, __u8 estimated)
{
	a->sid = sid;
	a->hdrs_sent = 0;
	a->estimated = estimated;
	a->rows = rows;
	a->quota_rows_per_s = st->info.quota_rows_per_s;
	a->limit_rows_per_s = st->info.limit_rows_per_s;
	a->db_len = st->db_len;
	a->retry_after_s = st->info.retry_after_s > 0xffffffffULL ? 0xffffffffU :
								  (__u32)st->info.retry_after_s;
	__builtin_memcpy(&a->db, &st->db, sizeof(a->db));
}

/* Queue a refused stream's answer (rows of st->db) and its kernel
 * SETTINGS for egress. */
static __always_inline void rg_h2_answer_push(struct rg_h2_sock *st, struct rg_h2_out *o,
					      __u32 sid, __u64 rows, __u8 estimated)
{
	__u32 t = o->ans_tail;

	rg_h2_answer_set(&o->ans[t & (RG_H2_ANSWERS - 1)], st, sid, rows, estimated);
	/* a full barrier between this publication and the read of resp_open */
	RG_FETCH_ADD(&o->ans_tail, 1);
	rg_h2_out_resp_sent(o, t);
	rg_h2_out_settings(o, true);
	rg_global_inc(h2_reject_kept);
}

/*
 * --grpc-reject keep: the refused message completes in the current DATA
 * frame; rewrite that frame into RST_STREAM + a kernel SETTINGS + filler
 * and queue the stream's answer for egress (docs/grpc.md §6.3).  Returns
 * 0 when kept, else the enum rg_h2_fallback why the connection must close
 * instead.
 */
static __always_inline int rg_h2_keep_reject(struct rg_h2_sock *st, struct rg_h2_out *o)
{
	__u32 sid = st->h.fsid;
	int r;

	if (!o || o->lost || o->closing)
		return RG_H2_FB_EGRESS;
	if (o->ack_untracked)
		return RG_H2_FB_FULL; /* the SETTINGS queue overflowed once */
	/* messages complete in DATA frames of their stream: defensive */
	if (st->h.ftype != RG_H2_DATA || sid != st->reject_sid)
		return RG_H2_FB_HEAD_SPLIT;
	if (st->h.flen < RG_H2_REWRITE_MIN_PAYLOAD)
		return RG_H2_FB_SHORT;
	if (st->resets >= RG_H2_RESETS_PER_SKB)
		return RG_H2_FB_PER_SKB;
	if (!rg_grpc_db_plain(&st->db, st->db_len))
		return RG_H2_FB_NAME;
	r = rg_h2_out_room(o);
	if (r)
		return r;
	r = rg_h2_reset_stream(st, o, RG_H2_OP_REWRITE, RG_H2_FB_HEAD_SPLIT, st->h.done_slot);
	if (r)
		return r;
	rg_h2_answer_push(st, o, sid, st->reject_rows, (__u8)st->reject_estimated);
	st->reject = 0;
	return 0;
}

/*
 * Whether the current DATA frame, hidden from the server, is to give the
 * window of all DATA hidden so far back (docs/grpc.md#h2-give-back): no
 * answer is queued that would, the queues have room, and its SETTINGS and
 * filler header are in this skb (skb_len bytes).  Called after owed_in
 * grew (a full barrier): an answer egress takes after this read of
 * ans_head reads owed_in after the add.
 */
static __always_inline bool rg_h2_give_back_due(const struct rg_h2_sock *st,
						const struct rg_h2_out *o, __u32 skb_len)
{
	return st->h.flen >= RG_H2_GIVE_BACK_MIN_PAYLOAD && st->fh_off != ~0U &&
	       st->fh_off + RG_H2_GIVE_BACK_HEAD_BYTES <= skb_len &&
	       RG_READ_ONCE(o->ans_head) == o->ans_tail && !rg_h2_out_room(o);
}

/* --grpc-reject keep: a client frame on a reset stream (DATA,
 * WINDOW_UPDATE, RST_STREAM) never reaches the server: the server would
 * answer it with a stream error (docs/grpc.md §6.2.4).  0, or the enum
 * rg_h2_fallback why it cannot. */
static __always_inline int rg_h2_keep_frame(struct rg_h2_sock *st, struct rg_h2_out *o,
					    __u32 skb_len)
{
	__u32 kind = RG_H2_OP_FILL;
	__u8 type = st->h.ftype;
	int i, r;

	if (st->h.fsid == 0 ||
	    (type != RG_H2_DATA && type != RG_H2_WINDOW_UPDATE && type != RG_H2_RST_STREAM))
		return 0;
	i = rg_h2_find(st->rej, RG_H2_REJECTED, st->h.fsid);
	if (i < 0)
		return 0;
	if (type == RG_H2_DATA && o) {
		/* the server never gives this window back */
		RG_FETCH_ADD(&o->owed_in, st->h.flen);
		if (rg_h2_give_back_due(st, o, skb_len))
			kind = RG_H2_OP_GIVE_BACK;
	}
	r = rg_h2_op(st, kind, RG_H2_FB_LATER_SPLIT);
	if (r)
		return r;
	if (kind == RG_H2_OP_GIVE_BACK) {
		/* an entry without a stream: egress writes the window only */
		o->ans[o->ans_tail & (RG_H2_ANSWERS - 1)].sid = 0;
		__sync_fetch_and_add(&o->ans_tail, 1);
		rg_h2_out_settings(o, true);
		rg_global_inc(h2_give_backs);
	}
	/* a message completing in it is gone with it, not refused again */
	st->frame_rej = st->h.fsid;
	/* and the frame is passed unread, its stream's slot let go, unless
	 * it carries on a compressed message's copy (its rows are counted as
	 * rejected from the whole copy): then the slot is only marked, and
	 * may go to a new stream */
	if (type == RG_H2_DATA && !rg_h2_copy_open(st))
		rg_h2_frame_unread(&st->h);
	else
		rg_h2_mark_refused(&st->h, st->h.slot, st->h.fsid);
	if (type == RG_H2_RST_STREAM || (type == RG_H2_DATA && (st->h.fflags & RG_H2_FLAG_END_STREAM)))
		st->rej[i & (RG_H2_REJECTED - 1)] = 0;
	return 0;
}

/* One lookup for h2_reject_fallback and its reason's counter.  A global
 * function: inlined, it grew rg_h2_byte_cb's frame past what 6.1 allows on
 * the verdict -> byte callback -> rg_h2_message chain (512 bytes). */
__noinline int rg_h2_count_fallback(int why)
{
	__u32 zero = 0;
	struct rg_global_stats *g = bpf_map_lookup_elem(&RG_MAP_GLOBAL, &zero);

	if (!g)
		return 0;
	__sync_fetch_and_add(&g->h2_reject_fallback, 1);
	switch (why) {
	case RG_H2_FB_HEAD_SPLIT:
		__sync_fetch_and_add(&g->h2_fallback_head_split, 1);
		break;
	case RG_H2_FB_SHORT:
		__sync_fetch_and_add(&g->h2_fallback_short, 1);
		break;
	case RG_H2_FB_LATER_SPLIT:
		__sync_fetch_and_add(&g->h2_fallback_later_split, 1);
		break;
	case RG_H2_FB_FULL:
		__sync_fetch_and_add(&g->h2_fallback_full, 1);
		break;
	case RG_H2_FB_PER_SKB:
		__sync_fetch_and_add(&g->h2_fallback_per_skb, 1);
		break;
	case RG_H2_FB_NAME:
		__sync_fetch_and_add(&g->h2_fallback_name, 1);
		break;
	default:
		__sync_fetch_and_add(&g->h2_fallback_egress, 1);
		break;
	}
	return 0;
}

/*
 * --grpc-reject keep: hold back the skb's last frame bytes
 * (rg_h2_stash_bytes) in the connection's stash, the one HTTP/1 heads use
 * (docs/design.md#split-heads; an HTTP/2 connection never has a head
 * stashed), and cut them off: the next skb gets them in front
 * (rg_h2_unstash), so the frame's header is in hand when its message is
 * decided (docs/grpc.md#h2-stash).  Returns 1 when the whole skb is held
 * (it is then 0 bytes long: dropped, it charges nothing), else 0.  A global
 * function: its stack is not on the byte loop's call chain.
 */
__noinline int rg_h2_hold(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u64 cookie;
	struct rg_conn *c;
	__u32 len, n, cut;
	long r;

	if (!skb || !st)
		return 0;
	len = skb->len;
	n = rg_h2_stash_bytes(&st->h, len, st->fh_off);
	if (n == 0 || n > len || n > RG_H2_STASH_MAX)
		return 0;
	cut = len - n;
	/* a rewrite queued at or past the cut is written in this skb */
	if (st->nops && st->ops[(st->nops - 1) & (RG_H2_OPS - 1)].off >= cut)
		return 0;
	if (cut && len > RG_CHANGE_TAIL_MAX)
		return 0; /* change_tail cannot shrink it */
	cookie = bpf_get_socket_cookie(skb);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c || c->stash_len)
		return 0;
	if (rg_stash_append(skb, c, cut, n))
		return 0;
	/* the held bytes are charged when the server reads them in front of
	 * the next skb, not now (docs/design.md#tcp-read-accounting) */
	r = cut ? bpf_skb_change_tail(skb, cut, 0) : rg_empty_skb(skb);
	if (r) {
		c->stash_len = 0;
		c->uncharged -= n;
		if (r == -2) {
			/* the skb lost bytes the server has not seen */
			rg_global_inc(internal_errors);
			st->err = RG_H2_ERR_PROTOCOL;
		}
		return 0;
	}
	st->stash_whole = st->h.st != RG_H2S_FRAME_HDR;
	rg_global_inc(h2_stashed);
	return cut == 0;
}

/* Write the held bytes in front of the skb: how many, or -1. */
__noinline int rg_h2_unstash(struct __sk_buff *skb)
{
	__u64 cookie;
	struct rg_conn *c;
	__u32 n;

	if (!skb)
		return -1;
	cookie = bpf_get_socket_cookie(skb);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return -1;
	n = c->stash_len;
	if (!n)
		return 0;
	if (n > RG_H2_STASH_MAX || rg_unstash(skb, c)) {
		c->uncharged -= n;
		c->stash_len = 0;
		return -1;
	}
	return (int)n;
}

/*
 * --grpc-reject keep, a DATA frame too large to hold back
 * (docs/grpc.md#h2-early): the skb ends inside it, its header is in this
 * skb, and the message it carries completes in it, so that message is
 * decided now, on the database its RequestHeader named and the bucket as
 * it is now, while the header can still be rewritten.  Refused: the frame
 * becomes RST_STREAM + unknown filler here, its last 9 bytes the kernel
 * SETTINGS (rg_h2_early_tail), and the answer is queued with the message's
 * rows when the frame ends (rg_h2_early_push).  Admitted, or not decidable
 * yet: nothing changes, the message is judged when it completes.  Returns
 * 1 when refused.  A global function: not on the byte loop's call chain.
 */
__noinline int rg_h2_early_decide(struct __sk_buff *skb, struct rg_h2_sock *st,
				  struct rg_h2_out *o)
{
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	struct rg_h2_stream *s;
	struct rg_h2_conn *h;
	__u32 len, sid, head_min = RG_H2_EARLY_HEAD_BYTES;
	int n;

	if (!skb || !st)
		return 0;
	h = &st->h;
	len = skb->len;
	sid = h->fsid;
	/* a skb that cannot be cut (rg_h2_hold) is judged with the frame's
	 * header alone in it: the rest of the head goes in the next skb */
	if (st->fh_off && st->fh_off < len && len > RG_CHANGE_TAIL_MAX)
		head_min = RG_H2_FRAME_HDR_BYTES;
	if (st->early_sid || rg_h2_early_state(h, len, st->fh_off, head_min) != RG_H2_EARLY_READY)
		return 0;
	if (rg_h2_stream_refused(st, sid))
		return 0; /* already refused */
	if (h->slot < 0 || h->slot >= RG_H2_STREAM_SLOTS)
		return 0;
	s = &h->s[rg_h2_slot(h->slot)];
	if (rg_grpc_db_hidden(&s->m)) {
		/* --grpc-compressed debt: on the databases the connection's
		 * earlier compressed messages named (refuse: fails closed at
		 * completion) */
		if (!rg_h2_compressed_debt || rg_h2_compressed_admit(st) != RG_ADMIT_NO)
			return 0;
	} else {
		n = rg_grpc_db_key_in(&s->m, &st->db, st->db_raw);
		if (n < 0 || !rg_grpc_db_plain(&st->db, (__u32)n))
			return 0;
		st->db_len = (__u32)n;
		__builtin_memcpy(&db, &st->db, sizeof(db));
		if (rg_admit(&db, &st->info) != RG_ADMIT_NO)
			return 0;
	}
	/* room for everything the refusal needs, else it is judged (and
	 * falls back) at completion as before */
	if (rg_h2_out_room(o) || st->resets >= RG_H2_RESETS_PER_SKB ||
	    rg_h2_reset_stream(st, o, RG_H2_OP_EARLY, 1, h->slot))
		return 0;
	rg_h2_answer_set(&st->early_ans, st, sid, 0, 0); /* its rows when it completes */
	st->early_sid = sid;
	st->early_rows_set = 0;
	/* the frame's bytes from the end of the rewritten head on: the tail
	 * (its last 9 bytes) is pending while this is not 0 */
	st->early_left = RG_H2_FRAME_HDR_BYTES + h->flen - RG_H2_EARLY_HEAD_BYTES;
	st->early_flen = h->flen;
	st->early_head_left = 0;
	if (len - st->fh_off < RG_H2_EARLY_HEAD_BYTES) {
		st->early_head_left = RG_H2_EARLY_HEAD_BYTES - (len - st->fh_off);
		rg_global_inc(h2_early_head_split);
	}
	rg_global_inc(h2_reject_early);
	return 1;
}

/*
 * Write what is left of the early-refused frame's head at base: its first
 * bytes ended the skb before, which could not be cut
 * (docs/grpc.md#h2-early-head-split).  Returns how many bytes it wrote,
 * or -1 on a failed write.  In the skb that decided the refusal base is
 * past its end: nothing is written (rg_h2_apply_ops writes the head).
 */
static __always_inline int rg_h2_early_head_rest(struct __sk_buff *skb, struct rg_h2_sock *st,
						 __u32 base)
{
	__u32 len, left, i0, n;
	__u8 *b;

	if (!skb || !st)
		return -1;
	left = st->early_head_left;
	len = skb->len;
	if (!left || base >= len)
		return 0;
	if (left >= RG_H2_EARLY_HEAD_BYTES)
		return -1;
	b = (__u8 *)st->text.b;
	if (rg_h2_put_early_head(b, st->early_sid, st->early_flen) != RG_H2_EARLY_HEAD_BYTES)
		return -1;
	i0 = RG_H2_EARLY_HEAD_BYTES - left;
	n = len - base < left ? len - base : left;
	if (bpf_skb_store_bytes(skb, base, b + (i0 & 31), ((n - 1) & 31) + 1, 0))
		return -1;
	st->early_head_left = left - n;
	return (int)n;
}

/*
 * Write the part of the early-refused frame's last 9 bytes (the kernel
 * SETTINGS) that lies in this skb, from offset base on, where
 * st->early_left bytes of the frame begin, after what is left of its head
 * (rg_h2_early_head_rest).  Returns 1 when the frame ends in this skb, 0
 * when it goes on, -1 on a failed write.
 */
__noinline int rg_h2_early_tail(struct __sk_buff *skb, struct rg_h2_sock *st, __u32 base)
{
	__u32 len, end, lo, hi, i0, n;
	__u8 *b;

	if (!skb || !st || !st->early_left)
		return 0;
	n = rg_h2_early_head_rest(skb, st, base);
	if ((int)n < 0)
		return -1;
	base += n;
	len = skb->len;
	end = base + st->early_left;
	lo = end >= base + RG_H2_SETTINGS_EMPTY_BYTES ? end - RG_H2_SETTINGS_EMPTY_BYTES : base;
	hi = end < len ? end : len;
	if (lo < hi) {
		b = (__u8 *)st->text.b;
		rg_h2_put_settings_empty(b);
		i0 = lo + RG_H2_SETTINGS_EMPTY_BYTES - end;
		n = hi - lo;
		if (i0 >= RG_H2_SETTINGS_EMPTY_BYTES || n > RG_H2_SETTINGS_EMPTY_BYTES - i0)
			return -1;
		if (bpf_skb_store_bytes(skb, lo, b + (i0 & 15), ((n - 1) & 15) + 1, 0))
			return -1;
	}
	if (end <= len) {
		st->early_left = 0;
		return 1;
	}
	st->early_left = end - (base > len ? base : len);
	return 0;
}

/* The early-refused stream's message (in parser slot s) completed, or its
 * frame ended before its short tail: its rows, those read so far. */
__noinline int rg_h2_early_rows(struct rg_h2_sock *st, int s)
{
	struct rg_reject_info info = {};
	struct rg_grpc_msg *m;
	struct rg_db_key db;

	if (!st || st->early_rows_set)
		return 0;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	m = &st->h.s[rg_h2_slot(s)].m;
	st->early_ans.rows = rg_grpc_answer_rows(m);
	st->early_ans.estimated = rg_grpc_rows_estimated(m);
	st->early_rows_set = 1;
	info.quota_rows_per_s = st->early_ans.quota_rows_per_s;
	info.limit_rows_per_s = st->early_ans.limit_rows_per_s;
	__builtin_memcpy(&db, &st->early_ans.db, sizeof(db));
	/* a compressed message's rejected rows: counted by rowgated from
	 * its copy */
	rg_account_reject(&db, m->rows, &info);
	return 0;
}

/*
 * The early-refused frame ended: queue its answer and its SETTINGS for
 * egress.  0, or the enum rg_h2_fallback why the connection must close
 * (the 429 then names the refused message).
 */
__noinline int rg_h2_early_push(struct rg_h2_sock *st, struct rg_h2_out *o)
{
	struct rg_h2_answer *a;
	__u32 t;
	int why;

	if (!st || !st->early_sid)
		return 0;
	why = st->early_rows_set ? rg_h2_out_room(o) : RG_H2_FB_HEAD_SPLIT;
	if (why) {
		st->reject_sid = st->early_sid;
		st->reject_rows = st->early_ans.rows;
		st->reject_estimated = st->early_ans.estimated;
		st->info.quota_rows_per_s = st->early_ans.quota_rows_per_s;
		st->info.limit_rows_per_s = st->early_ans.limit_rows_per_s;
		st->info.retry_after_s = st->early_ans.retry_after_s;
		st->db_len = st->early_ans.db_len;
		__builtin_memcpy(&st->db, &st->early_ans.db, sizeof(st->db));
		st->early_sid = 0;
		return why;
	}
	t = o->ans_tail;
	a = &o->ans[t & (RG_H2_ANSWERS - 1)];
	__builtin_memcpy(a, &st->early_ans, sizeof(*a));
	RG_FETCH_ADD(&o->ans_tail, 1); /* then resp_open is read */
	rg_h2_out_resp_sent(o, t);
	rg_h2_out_settings(o, true);
	st->early_sid = 0;
	rg_global_inc(h2_reject_kept);
	return 0;
}

/* rg_h2_tail_judge: a compressed message, for rg_h2_compressed_admit */
#define RG_H2_TAIL_COMPRESSED 2

/*
 * --grpc-reject keep: an unpadded DATA frame ended at the byte just
 * stepped, its stream's message, in parser slot `slot`, half-read: whether
 * that message is to be refused now (rg_h2_tail_refuse), while this
 * frame's header can still be rewritten, because what is left of it may
 * come in a frame too short to rewrite (rg_h2_short_tail_ready,
 * docs/grpc.md#h2-short-tail): 1 when its database's bucket refuses it
 * (st->db, st->info set); RG_H2_TAIL_COMPRESSED when it is compressed
 * (--grpc-compressed debt), to be judged by rg_h2_compressed_admit; 0
 * otherwise: it is judged at completion.  A global function, as
 * rg_h2_tail_refuse: they fit the byte loop's call chain (512 bytes on
 * 6.1) only one at a time.
 */
__noinline int rg_h2_tail_judge(struct rg_h2_sock *st, int slot)
{
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	struct rg_h2_stream *s;
	__u32 sid;
	int n;

	if (!st || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	s = &st->h.s[rg_h2_slot(slot)];
	sid = st->h.fsid;
	if (s->id != sid || (st->h.fflags & RG_H2_FLAG_END_STREAM))
		return 0;
	if (st->fh_off == ~0U || st->h.flen < RG_H2_REWRITE_MIN_PAYLOAD ||
	    !rg_h2_short_tail_ready(s))
		return 0;
	if (rg_h2_stream_refused(st, sid))
		return 0; /* already refused */
	if (rg_grpc_db_hidden(&s->m))
		return rg_h2_compressed_debt ? RG_H2_TAIL_COMPRESSED : 0;
	n = rg_grpc_db_key_in(&s->m, &st->db, st->db_raw);
	if (n < 0 || !rg_grpc_db_plain(&st->db, (__u32)n))
		return 0;
	st->db_len = (__u32)n;
	__builtin_memcpy(&db, &st->db, sizeof(db));
	return rg_admit(&db, &st->info) == RG_ADMIT_NO;
}

/*
 * Refuse the message rg_h2_tail_judge refused like one completing in this
 * frame: the frame becomes RST_STREAM + SETTINGS + filler, the answer
 * carries the rows read so far, and the frame that would complete it
 * becomes filler (rg_h2_keep_frame).  Without room for that, it is judged
 * (and falls back) at completion as before.
 */
__noinline int rg_h2_tail_refuse(struct rg_h2_sock *st, struct rg_h2_out *o, int slot)
{
	struct rg_grpc_msg *m;
	struct rg_db_key db;
	__u64 rows;

	if (!st || !o || slot < 0 || slot >= RG_H2_STREAM_SLOTS)
		return 0;
	if (rg_h2_out_room(o) || st->resets >= RG_H2_RESETS_PER_SKB ||
	    rg_h2_reset_stream(st, o, RG_H2_OP_REWRITE, 1, (__s8)slot))
		return 0;
	m = &st->h.s[rg_h2_slot(slot)].m;
	rows = rg_grpc_answer_rows(m);
	__builtin_memcpy(&db, &st->db, sizeof(db));
	rg_account_reject(&db, m->rows, &st->info);
	rg_h2_answer_push(st, o, st->h.fsid, rows, rg_grpc_rows_estimated(m));
	rg_global_inc(h2_reject_short_tail);
	return 1;
}

/* rg_h2_tail_judge, and rg_h2_tail_refuse when it refuses: the byte
 * loop's call chain has room for one global function under these */
static __always_inline void rg_h2_tail(struct rg_h2_sock *st, struct rg_h2_out *o, int slot)
{
	int r = rg_h2_tail_judge(st, slot);

	if (r == RG_H2_TAIL_COMPRESSED)
		r = rg_h2_compressed_admit(st) == RG_ADMIT_NO;
	if (r == 1)
		rg_h2_tail_refuse(st, o, slot);
}

static __maybe_unused long rg_h2_byte_cb(__u64 idx, void *ctx)
{
	struct rg_h2_loop *l = ctx;
	struct rg_h2_sock *st = l->st;
	__u32 p = st->pos, n;
	int r, fb, cs, tail;

	if (p >= st->win_len) {
		__u32 off = st->win_off + st->win_len, left;

		if (off >= l->skb->len)
			return 1;
		left = l->skb->len - off;
		if (left >= RG_H2_WINDOW_BYTES) {
			if (bpf_skb_load_bytes(l->skb, off, st->win, RG_H2_WINDOW_BYTES))
				goto internal;
			st->win_len = RG_H2_WINDOW_BYTES;
		} else {
			/* left is in [1, RG_H2_WINDOW_BYTES): written so that
			 * Linux 6.1's verifier sees a non-zero length */
			left = ((left - 1) & (RG_H2_WINDOW_BYTES - 1)) + 1;
			if (bpf_skb_load_bytes(l->skb, off, st->win, left))
				goto internal;
			st->win_len = left;
		}
		st->win_off = off;
		st->pos = p = 0;
	}
	cs = rg_h2_copy_slot(st);
	n = rg_h2_skippable(&st->h);
	if (n && cs >= 0) {
		/* a copied message: past the window, to the skb's end */
		__u32 at = st->win_off + p;

		if (n > l->skb->len - at)
			n = l->skb->len - at;
		rg_h2_skip(&st->h, n);
		rg_h2_copy_extend(l->skb, st, cs, at, n);
		st->win_off = at + n;
		st->win_len = 0;
		st->pos = 0;
		return 0;
	}
	if (n) {
		if (n > st->win_len - p)
			n = st->win_len - p;
		rg_h2_skip(&st->h, n);
		st->pos = p + n;
		return 0;
	}
	/* gathered before the step, which may end the stream and free its slot */
	if (cs >= 0)
		rg_h2_copy_extend(l->skb, st, cs, st->win_off + p, 1);
	/* the last byte of an unpadded DATA frame: its stream's slot */
	tail = st->h.st == RG_H2S_DATA && st->h.left == 1 && !st->h.pad_left ? st->h.slot : -1;
	r = rg_h2_step(&st->h, st->win[p & (RG_H2_WINDOW_BYTES - 1)]);
	st->pos = p + 1;
	if (r < 0) {
		st->err = r;
		return 1;
	}
	if (r == 0 && tail >= 0 && rg_h2_keep && !st->must_pass) {
		/* refused at its header already: its rows are those read */
		if (st->early_sid && st->early_sid == st->h.fsid)
			rg_h2_early_rows(st, tail);
		else
			rg_h2_tail(st, l->out, tail);
	}
	if (r == RG_H2_EV_MESSAGE && st->early_sid && st->h.done_sid == st->early_sid) {
		/* refused at its frame's header: only its rows are wanted
		 * (a compressed one's: rowgated's, from its copy) */
		rg_h2_early_rows(st, st->h.done_slot);
		if (cs >= 0)
			rg_h2_copy_end(l->skb, st, cs, 0);
		return 0;
	}
	if (r == RG_H2_EV_MESSAGE) {
		/* a compressed message's databases are looked up here:
		 * rg_h2_message's stack has no room for another call */
		if (cs >= 0)
			st->cverdict = rg_h2_compressed_admit(st);
		fb = rg_h2_message(st);
		/* one completing on a stream refused before its short tail
		 * (rg_h2_tail_refuse) never reached the server: refused */
		if (cs >= 0)
			rg_h2_copy_end(l->skb, st, cs, !fb && !rg_h2_stream_refused(st, st->h.done_sid));
		if (!fb)
			return 0;
		if (fb > 0)
			rg_h2_refused_rows(st);
		/* a compressed message's error fails closed at once */
		if (!rg_h2_keep || (fb < 0 && cs >= 0))
			return 1;
		fb = rg_h2_keep_reject(st, l->out);
		if (fb)
			goto fallback;
		return 0;
	}
	if (r == RG_H2_EV_FRAME) {
		/* the header's last byte is at win_off + p: all of it is in
		 * this skb unless it began in an earlier one */
		if (st->early_sid) {
			/* the early-refused frame ended before this one */
			fb = rg_h2_early_push(st, l->out);
			if (fb)
				goto fallback;
		}
		st->frame_rej = 0;
		st->fh_off = st->win_off + p >= RG_H2_FRAME_HDR_BYTES - 1 ?
				     st->win_off + p - (RG_H2_FRAME_HDR_BYTES - 1) :
				     ~0U;
		if (st->h.ftype == RG_H2_SETTINGS && !(st->h.fflags & RG_H2_FLAG_ACK) && l->out)
			rg_h2_out_settings(l->out, false);
		if (rg_h2_keep && !st->must_pass) {
			fb = rg_h2_keep_frame(st, l->out, l->skb->len);
			if (fb)
				goto fallback;
		}
	}
	return 0;
fallback:
	/* close instead, as for a refused message */
	rg_h2_count_fallback(fb);
	st->reject = 1;
	return 1;
internal:
	rg_global_inc(internal_errors);
	st->err = RG_H2_ERR_PROTOCOL;
	return 1;
}

struct rg_h2_fill_ctx {
	struct __sk_buff *skb;
	__u32 off;
	__u32 len;
	__s32 err;
};

/* One unknown-type frame header every RG_H2_DEFAULT_MAX_FRAME_BYTES: the
 * client's own bytes after the GOAWAY become ignored payload. */
static long rg_h2_fill_cb(__u64 idx, void *ctx)
{
	struct rg_h2_fill_ctx *f = ctx;
	__u32 rem, n;
	__u8 hdr[RG_H2_FRAME_HDR_BYTES] = {};

	if (f->off >= f->len)
		return 1;
	rem = f->len - f->off;
	n = rem - RG_H2_FRAME_HDR_BYTES;
	if (n > RG_H2_DEFAULT_MAX_FRAME_BYTES)
		n = RG_H2_DEFAULT_MAX_FRAME_BYTES;
	/* never leave a tail too short for a frame header */
	if (rem - RG_H2_FRAME_HDR_BYTES - n > 0 && rem - RG_H2_FRAME_HDR_BYTES - n < RG_H2_FRAME_HDR_BYTES)
		n -= RG_H2_FRAME_HDR_BYTES;
	hdr[0] = (__u8)(n >> 16);
	hdr[1] = (__u8)(n >> 8);
	hdr[2] = (__u8)n;
	hdr[3] = RG_H2_FILLER_TYPE;
	f->err = bpf_skb_store_bytes(f->skb, f->off, hdr, sizeof(hdr), 0);
	f->off += RG_H2_FRAME_HDR_BYTES + n;
	return f->err ? 1 : 0;
}

/* The GOAWAY's text in st->text from RG_H2_GOAWAY_HDR_BYTES on: the 429
 * of the refused message, or the 400 of what the parser could not follow;
 * its last stream id in st->goaway_sid.  Returns the text's end.  A global
 * function: rg_h2_verdict's stack has no room for it. */
__noinline __u32 rg_h2_goaway_text(struct rg_h2_sock *st)
{
	struct rg_response *r;
	__u32 last_sid;

	if (!st)
		return 0;
	r = &st->plan;
	__builtin_memset(r, 0, sizeof(*r));
	if (st->reject) {
		r->kind = RG_RESP_429;
		r->retry_after_s = st->info.retry_after_s;
		r->rows = st->reject_rows;
		r->estimated = (__u8)st->reject_estimated;
		r->quota_rows_per_s = st->info.quota_rows_per_s;
		r->limit_rows_per_s = st->info.limit_rows_per_s;
		r->db_len = st->db_len;
		/* the refused stream and those opened after it are named
		 * unprocessed (the client may retry them) unless a later
		 * stream's bytes reached the server already: then that one
		 * may have been handled, and a retry would store it twice.
		 * The last stream id is a client's (odd) stream: nghttp2
		 * takes an even one for a protocol error, grpc-go closes its
		 * transport on it (docs/grpc.md#7-what-is-built). */
		last_sid = st->reject_sid > 2 ? st->reject_sid - 2 : 0;
		if (st->sid_passed > st->reject_sid)
			last_sid = st->sid_passed;
	} else {
		r->kind = RG_RESP_400;
		r->error = st->err == RG_H2_ERR_UNCOUNTED ? RG_RESP_ERR_H2_UNCOUNTED :
							    RG_RESP_ERR_H2;
		/* streams opened in this skb never reached the server */
		last_sid = st->sid_passed;
	}
	st->goaway_sid = last_sid;
	return rg_response_write_body(&st->text, RG_H2_GOAWAY_HDR_BYTES, r, &st->db);
}

/*
 * Turn the skb into a GOAWAY to the client, as long as the skb (every
 * received byte is charged once: docs/design.md#tcp-read-accounting): its
 * debug data is the 429's JSON (or the 400's), padded with spaces; what
 * does not fit one frame becomes unknown-type frames.  Only a skb shorter
 * than the GOAWAY grows (the connection ends anyway).  The last stream id
 * is the one before the refused message's stream: the client may retry
 * that call elsewhere, its server never saw the message.
 */
static __always_inline int rg_h2_goaway(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	struct rg_pad_ctx pad = { .skb = skb };
	struct rg_h2_fill_ctx f = { .skb = skb };
	__u32 text, need, total, payload, last_sid;
	__u8 *b = (__u8 *)st->text.b;

	text = rg_h2_goaway_text(st);
	last_sid = st->goaway_sid;
	if (text <= RG_H2_GOAWAY_HDR_BYTES || text >= RG_RESP_TEXT_MAX)
		return -1;
	need = text;
	total = skb->len;
	if (total < need) {
		if (rg_resize(skb, need))
			return -1;
		total = need;
	}
	payload = total - RG_H2_FRAME_HDR_BYTES;
	if (payload > RG_H2_DEFAULT_MAX_FRAME_BYTES) {
		payload = RG_H2_DEFAULT_MAX_FRAME_BYTES;
		if (total - RG_H2_FRAME_HDR_BYTES - payload < RG_H2_FRAME_HDR_BYTES)
			payload -= RG_H2_FRAME_HDR_BYTES;
	}
	b[0] = (__u8)(payload >> 16);
	b[1] = (__u8)(payload >> 8);
	b[2] = (__u8)payload;
	b[3] = RG_H2_GOAWAY;
	b[4] = 0;
	b[5] = b[6] = b[7] = b[8] = 0;
	b[9] = (__u8)(last_sid >> 24) & 0x7f;
	b[10] = (__u8)(last_sid >> 16);
	b[11] = (__u8)(last_sid >> 8);
	b[12] = (__u8)last_sid;
	b[13] = b[14] = b[15] = 0;
	b[16] = st->reject ? RG_H2_ENHANCE_YOUR_CALM : RG_H2_PROTOCOL_ERROR;
	if (bpf_skb_store_bytes(skb, 0, b, ((need - 1) & (RG_RESP_TEXT_MAX - 1)) + 1, 0))
		return -1;
	pad.from = need;
	pad.len = RG_H2_FRAME_HDR_BYTES + payload;
	if (pad.len > pad.from) {
		bpf_loop((pad.len - pad.from + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_pad_cb,
			 &pad, 0);
		if (pad.err)
			return -1;
	}
	f.off = RG_H2_FRAME_HDR_BYTES + payload;
	f.len = total;
	if (f.off < f.len) {
		bpf_loop(f.len / RG_H2_DEFAULT_MAX_FRAME_BYTES + 2, rg_h2_fill_cb, &f, 0);
		if (f.err || f.off != f.len)
			return -1;
	}
	return 0;
}

/*
 * Write an early-refused frame's head at off; the skb may end inside it:
 * the rest goes at the next skb's start (rg_h2_early_head_rest).  0, or -1
 * on a failed write.  A global function: verified once, not per op.
 */
__noinline int rg_h2_early_head(struct __sk_buff *skb, struct rg_h2_sock *st, __u32 off,
				__u32 sid, __u32 flen)
{
	__u8 *b;
	__u32 n;

	if (!skb || !st || off >= skb->len)
		return -1;
	b = (__u8 *)st->text.b;
	n = skb->len - off;
	if (n > RG_H2_EARLY_HEAD_BYTES)
		n = RG_H2_EARLY_HEAD_BYTES;
	/* the mask keeps 6.1's verifier sure of n's bounds */
	if (rg_h2_put_early_head(b, sid, flen) != RG_H2_EARLY_HEAD_BYTES ||
	    bpf_skb_store_bytes(skb, off, b, ((n - 1) & 31) + 1, 0))
		return -1;
	return 0;
}

/* Write the rewrites the walk queued (same lengths: TCP read accounting). */
static __always_inline int rg_h2_apply_ops(struct __sk_buff *skb, struct rg_h2_sock *st)
{
	__u8 *b = (__u8 *)st->text.b;
	struct rg_h2_op *op;
	__u32 i;

	for (i = 0; i < RG_H2_OPS; i++) {
		if (i >= st->nops)
			break;
		op = &st->ops[i];
		if (op->kind == RG_H2_OP_REWRITE) {
			if (rg_h2_put_rewrite_head(b, op->sid, op->flen) != RG_H2_REWRITE_HEAD_BYTES ||
			    bpf_skb_store_bytes(skb, op->off, b, RG_H2_REWRITE_HEAD_BYTES, 0))
				return -1;
		} else if (op->kind == RG_H2_OP_EARLY) {
			if (rg_h2_early_head(skb, st, op->off, op->sid, op->flen))
				return -1;
		} else if (op->kind == RG_H2_OP_GIVE_BACK) {
			if (rg_h2_put_give_back_head(b, op->sid, op->flen) != RG_H2_GIVE_BACK_HEAD_BYTES ||
			    bpf_skb_store_bytes(skb, op->off, b, RG_H2_GIVE_BACK_HEAD_BYTES, 0))
				return -1;
		} else {
			b[0] = RG_H2_FILLER;
			b[1] = 0;
			if (bpf_skb_store_bytes(skb, op->off + 3, b, 2, 0))
				return -1;
		}
	}
	return 0;
}

static __always_inline struct rg_h2_sock *rg_h2_sock_get(__u64 cookie)
{
	struct rg_h2_sock *st = bpf_map_lookup_elem(&RG_MAP_H2_CONNS, &cookie);
	__u32 zero = 0;

	if (st)
		return st;
	st = bpf_map_lookup_elem(&h2_zero, &zero);
	if (!st)
		return NULL;
	/* the template stays zero but for these */
	st->h.max_frame = RG_H2_DEFAULT_MAX_FRAME_BYTES;
	st->h.slot = -1;
	st->h.done_slot = -1;
	st->h.hp.max = RG_HPACK_TABLE_MAX_BYTES;
	if (bpf_map_update_elem(&RG_MAP_H2_CONNS, &cookie, st, BPF_NOEXIST))
		return NULL;
	rg_global_inc(h2_conns);
	return bpf_map_lookup_elem(&RG_MAP_H2_CONNS, &cookie);
}

/* Nothing more of this connection reaches the server: queue it for
 * rowgated to reset once the client had time to read the GOAWAY
 * (docs/grpc.md#h2-close). */
static __maybe_unused __noinline void rg_h2_queue_close(struct __sk_buff *skb, __u64 cookie)
{
	struct rg_h2_goaway ev = { .cookie = cookie, .at_ns = bpf_ktime_get_ns() };

	rg_close_event_fill(&ev, skb);
	if (bpf_map_push_elem(&RG_MAP_H2_GOAWAY, &ev, 0))
		rg_global_inc(h2_goaway_unqueued);
	else
		rg_global_inc(h2_goaway_queued);
}

/* The HTTP/1 verdict's side: whether a --grpc port's connection opens with
 * the preface, and so is handed to rg_h2_verdict. */
enum rg_h2_open {
	RG_H2_OPEN_NO = 0,   /* not the HTTP/2 preface: HTTP/1 */
	RG_H2_OPEN_YES = 1,  /* the preface (at least "PRI", which no HTTP/1
			      * method starts with; the parser checks the rest) */
	RG_H2_OPEN_HOLD = 2, /* too few bytes to tell, all of them its start */
};

/* Whether a connection's first bytes, those held back (the stash) and
 * this skb's, open with the HTTP/2 preface: enum rg_h2_open.  A client
 * may send the preface in pieces of any size. */
__noinline int rg_h2_opens(struct __sk_buff *skb, struct rg_conn *c)
{
	__u32 held, n, i;

	if (!skb || !c)
		return RG_H2_OPEN_NO;
	held = c->stash_len;
	if (held >= 3)
		return RG_H2_OPEN_NO;
	n = skb->len < RG_H2_PREFACE_LEN - held ? skb->len : RG_H2_PREFACE_LEN - held;
	if (n == 0 || bpf_skb_load_bytes(skb, 0, c->win, ((n - 1) & 31) + 1))
		return RG_H2_OPEN_NO;
	for (i = 0; i < 2; i++)
		if (i < held && c->stash[i] != rg_h2_preface_byte(i))
			return RG_H2_OPEN_NO;
	for (i = 0; i < RG_H2_PREFACE_LEN; i++)
		if (i < n && c->win[i] != rg_h2_preface_byte(held + i))
			return RG_H2_OPEN_NO;
	return held + n >= 3 ? RG_H2_OPEN_YES : RG_H2_OPEN_HOLD;
}

/* A --grpc port's connection whose first bytes may be the preface
 * (nothing passed yet, nothing read as HTTP/1): 1 when it is HTTP/2 from
 * here on, the bytes held back in front of skb again; 0 when it is HTTP/1,
 * with the same; -1 when skb is held back too (the caller drops it).  A
 * global function: verified once, apart from the verdict's walk. */
__noinline int rg_h2_start(struct __sk_buff *skb, struct rg_conn *c)
{
	int open;

	if (!skb || !c)
		return 0;
	open = rg_h2_opens(skb, c);

	if (open == RG_H2_OPEN_HOLD && !rg_in_recvmsg(skb, c) &&
	    !rg_stash_append(skb, c, 0, skb->len)) {
		if (!bpf_skb_change_tail(skb, 0, 0)) {
			rg_global_inc(heads_split);
			return -1;
		}
		c->stash_len -= skb->len; /* cannot shrink: pass it */
		c->uncharged -= skb->len;
	}
	/* the held bytes go first; if they cannot, the connection is
	 * read as HTTP/1, which answers the preface 400: fail closed */
	if (c->stash_len && rg_unstash(skb, c))
		return 0;
	return open == RG_H2_OPEN_YES;
}

#endif /* ROWGATE_BPF_H2_H */
