/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/2 verdict: connections on a --grpc port that open with the h2c
 * preface are followed frame by frame (rowgate/h2.h), each completed
 * GreptimeDatabase insert message is charged to its database's bucket, and
 * a message the bucket refuses, or HTTP/2 the parser cannot follow, ends
 * the connection with a kernel GOAWAY (docs/grpc.md#7-what-is-built).  A
 * program of its own, reached by a tail call from the HTTP/1 verdict, so it
 * has its own stack and verifier budget. */
#ifndef ROWGATE_BPF_H2_H
#define ROWGATE_BPF_H2_H

#include "rowgate/h2.h"
#include "admit.h"
#include "conn.h"
#include "respond.h"
#include "skb_edit.h"

#define RG_H2_WINDOW_BYTES 256 /* bytes loaded from the skb at a time */
#define RG_H2_GOAWAY_HDR_BYTES 17 /* frame header, last stream id, error code */
#define RG_H2_FILLER_TYPE 0xfa	  /* a frame type no peer knows: ignored (RFC 9113 §5.5) */
#define RG_H2_ENHANCE_YOUR_CALM 0xb
#define RG_H2_PROTOCOL_ERROR 0x1

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
	__u32 pad;
	struct rg_db_key db;
	char db_raw[RG_GRPC_DB_SCRATCH_BYTES]; /* scratch of rg_grpc_db_key_in */
	struct rg_response plan;
	struct rg_resp_buf text;
};

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

struct rg_h2_loop {
	struct __sk_buff *skb;
	struct rg_h2_sock *st;
	struct rg_h2_out *out; /* the server's side: the SETTINGS queue */
};

/* A message completed: charge it, or refuse it (returns 1).  A message the
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
	if (m->compressed) {
		/* grpc-encoding: the kind and rows are unknown (docs/grpc.md §6.5) */
		st->err = RG_H2_ERR_GRPC;
		return -1;
	}
	if (!rg_grpc_charged(m))
		return 0;
	n = rg_grpc_db_key_in(m, &st->db, st->db_raw);
	if (n < 0) {
		st->err = RG_H2_ERR_PROTOBUF;
		return -1;
	}
	st->db_len = (__u32)n;
	__builtin_memcpy(&db, &st->db, sizeof(db));
	switch (rg_admit(&db, &st->info)) {
	case RG_ADMIT_UNLIMITED:
		return 0;
	case RG_ADMIT_YES:
		rg_charge(&db, m->rows, 1, true);
		st->messages++;
		st->rows += m->rows;
		return 0;
	default:
		break;
	}
	if (st->must_pass) {
		/* its bytes reach the server whatever the verdict says */
		rg_charge(&db, m->rows, 1, false);
		rg_global_inc(h2_unenforced);
		return 0;
	}
	rg_account_reject(&db, m->rows, &st->info);
	st->reject_rows = m->rows;
	st->reject_sid = st->h.done_sid;
	st->reject = 1;
	return 1;
}

static long rg_h2_byte_cb(__u64 idx, void *ctx)
{
	struct rg_h2_loop *l = ctx;
	struct rg_h2_sock *st = l->st;
	__u32 p = st->pos, n;
	int r;

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
	n = rg_h2_skippable(&st->h);
	if (n) {
		if (n > st->win_len - p)
			n = st->win_len - p;
		rg_h2_skip(&st->h, n);
		st->pos = p + n;
		return 0;
	}
	r = rg_h2_step(&st->h, st->win[p & (RG_H2_WINDOW_BYTES - 1)]);
	st->pos = p + 1;
	if (r < 0) {
		st->err = r;
		return 1;
	}
	if (r == RG_H2_EV_MESSAGE && rg_h2_message(st))
		return 1;
	if (r == RG_H2_EV_FRAME && st->h.ftype == RG_H2_SETTINGS &&
	    !(st->h.fflags & RG_H2_FLAG_ACK) && l->out)
		rg_h2_out_settings(l->out, false);
	return 0;
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
	struct rg_response *r = &st->plan;
	struct rg_pad_ctx pad = { .skb = skb };
	struct rg_h2_fill_ctx f = { .skb = skb };
	__u32 text, need, total, payload, last_sid;
	__u8 *b = (__u8 *)st->text.b;

	__builtin_memset(r, 0, sizeof(*r));
	if (st->reject) {
		r->kind = RG_RESP_429;
		r->retry_after_s = st->info.retry_after_s;
		r->rows = st->reject_rows;
		r->quota_rows_per_s = st->info.quota_rows_per_s;
		r->limit_rows_per_s = st->info.limit_rows_per_s;
		r->db_len = st->db_len;
		last_sid = st->reject_sid ? st->reject_sid - 1 : 0;
	} else {
		r->kind = RG_RESP_400;
		r->error = RG_RESP_ERR_H2;
		last_sid = st->h.last_sid;
	}
	text = rg_response_write_body(&st->text, RG_H2_GOAWAY_HDR_BYTES, r, &st->db);
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
	if (bpf_map_update_elem(&RG_MAP_H2_CONNS, &cookie, st, BPF_NOEXIST))
		return NULL;
	rg_global_inc(h2_conns);
	return bpf_map_lookup_elem(&RG_MAP_H2_CONNS, &cookie);
}

SEC("sk_skb")
int rg_h2_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct rg_h2_loop l = { .skb = skb };
	struct rg_h2_sock *st;
	struct rg_conn *c;
	int verdict;

	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return SK_PASS;
	st = rg_h2_sock_get(cookie);
	if (!st) {
		/* no room for its state: it cannot be followed */
		rg_global_inc(h2_failclosed);
		return SK_DROP;
	}
	if (st->closing)
		return SK_DROP;
	if (st->lost)
		return SK_PASS;
	l.out = rg_h2_out_get(&cookie);
	st->must_pass = rg_in_recvmsg(skb, c);
	st->win_off = 0;
	st->win_len = 0;
	st->pos = 0;
	st->reject = 0;
	l.st = st;
	/* at most one iteration per byte (skips take fewer) */
	bpf_loop(skb->len, rg_h2_byte_cb, &l, 0);
	if (!st->err && !st->reject)
		return SK_PASS;
	if (st->must_pass) {
		/* only a pass sticks here: the rest passes, unfollowed */
		st->lost = 1;
		if (l.out)
			l.out->closing = 1; /* its SETTINGS are not counted any more */
		rg_global_inc(h2_failclosed);
		return SK_PASS;
	}
	if (st->reject)
		rg_global_inc(h2_reject_closed);
	else
		rg_global_inc(h2_failclosed);
	st->closing = 1;
	if (l.out)
		l.out->closing = 1; /* egress stops following the server's frames */
	if (rg_h2_goaway(skb, st)) {
		rg_global_inc(internal_errors);
		return SK_DROP;
	}
	verdict = bpf_sk_redirect_hash(skb, &RG_MAP_SOCKHASH, &cookie, 0);
	return verdict;
}

#endif /* ROWGATE_BPF_H2_H */
