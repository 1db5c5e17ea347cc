/* SPDX-License-Identifier: GPL-2.0 */
/* The server's side of an HTTP/2 connection (docs/grpc.md §6.2): egress
 * follows the server's frames across sendmsgs (h2_out, struct rg_h2_out),
 * pops the SETTINGS queue the verdict pushes to, writes the answers of
 * refused streams at their kernel SETTINGS' ACK, and caps the server's
 * first SETTINGS (--grpc-max-streams).  rg_h2_egress is the step
 * rg_egress (rowgate.bpf.c) takes on an HTTP/2 connection. */
#ifndef ROWGATE_BPF_H2_EGRESS_H
#define ROWGATE_BPF_H2_EGRESS_H

#include "../base.h"
#include "../maps.h"
#include "stats.h"
#include "rowgate/abi.h"
#include "rowgate/response.h"
#include "rowgate/h2/result.h"
#include "rowgate/h2/frame.h"
#include "rowgate/h2/answer.h"

/*
 * HTTP/2: the server's frames, followed across sendmsgs from its first
 * byte (it writes its SETTINGS before the client's preface may arrive).
 * The SETTINGS the client's side carried, in order, are a queue both
 * sides share (docs/grpc.md §6.2.1): the HTTP/2 verdict pushes one entry
 * per SETTINGS it passes (a bit in owner: 1 = written by the kernel, whose
 * ACK egress takes out; 0 = the client's), egress pops one per ACK the
 * server writes.  One writer each: settings_tail and owner belong to the
 * verdict, settings_head and the walk to egress; closing and ack_untracked
 * are only ever set.
 */
#define RG_H2_SETTINGS_QUEUE 64 /* bits of owner: SETTINGS not yet acknowledged */
#define RG_H2_ANSWERS	     64 /* refused streams awaiting their answer (a power of two) */
/* streams whose response HEADERS the server sent and has not ended (a
 * power of two; more than --grpc-max-streams allows open) */
#define RG_H2_RESP_OPEN 32

/* 1: rowgated --grpc-reject keep: a refused message resets its stream
 * instead of closing the connection (docs/grpc.md §6.3). */
const volatile __u32 rg_h2_keep = 0;
/* >0: the most concurrent streams a client is told it may open
 * (--grpc-max-streams); egress lowers the server's first SETTINGS */
const volatile __u32 rg_h2_max_streams = 0;

/* A refused stream, written by the verdict with the kernel SETTINGS that
 * precedes it; egress answers it at that SETTINGS' ACK, in order. */
struct rg_h2_answer {
	__u32 sid;
	__u8 hdrs_sent; /* the server sent the response HEADERS: trailers only */
	__u8 estimated; /* rows is an estimate: a compressed message */
	__u8 pad[2];
	__u64 rows;
	__u64 quota_rows_per_s;
	__u64 limit_rows_per_s;
	__u32 db_len;
	__u32 retry_after_s; /* the bucket's: the answer's RetryInfo */
	struct rg_db_key db;
};

struct rg_h2_out {
	__u8 hdr[16]; /* a frame header (9 bytes) split across sendmsgs */
	__u8 hdr_len;
	__u8 lost;    /* framing lost: nothing more is decided */
	__u8 closing; /* the verdict stopped following (GOAWAY, or lost) */
	__u8 ack_untracked; /* the queue overflowed: ACKs cannot be told apart */
	__u8 pad[4];
	__u32 left; /* payload bytes of the current frame still to come */
	__u32 pad2;
	__u64 frames;
	__u64 settings_acks;
	__u64 owner;	     /* bit (seq % 64): who wrote SETTINGS number seq */
	__u32 settings_tail; /* SETTINGS the verdict passed */
	__u32 settings_head; /* ACKs egress saw */
	__u32 ans_tail;	     /* answers the verdict queued */
	__u32 ans_head;	     /* answers egress wrote */
	__u64 owed_in;	     /* DATA bytes the verdict hid from the server */
	__u64 owed_out;	     /* of them, given back with WINDOW_UPDATE by egress */
	__u32 ack_start;     /* egress: a kernel ACK begins here in this msg */
	__u8 ack_due;	     /* egress: ... and must be replaced */
	__u8 cap_due;	     /* egress: ... and its MAX_CONCURRENT_STREAMS capped */
	__u8 pad3[2];
	__u32 resp_next; /* egress: the next resp_open entry to take */
	__u32 resp_seq;	 /* egress: bumped after each resp_open store */
	__u32 resp_open[RG_H2_RESP_OPEN]; /* egress: see RG_H2_RESP_OPEN */
	struct rg_h2_answer ans[RG_H2_ANSWERS];
	struct rg_response r;	/* egress scratch: the answer's plan */
	struct rg_resp_buf buf; /* egress scratch: the answer's bytes */
};

/* h2_out: socket cookie -> the server's side of an HTTP/2 connection;
 * deleted with the connection (sockops) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_h2_out);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_H2_OUT SEC(".maps");

struct rg_h2_out_walk {
	struct sk_msg_md *msg;
	struct rg_h2_out *o;
	__u32 off;
	__u32 size;
};

static __always_inline void rg_h2_out_lose(struct rg_h2_out *o)
{
	if (!o->lost) {
		o->lost = 1;
		rg_h2_stats_inc(h2_out_lost);
	}
}

/* The server sent HEADERS on stream sid: its response is open until
 * HEADERS that end it (trailers).  A full set drops its oldest entry.
 * Global: verified once, not at every frame of the walk. */
__noinline int rg_h2_out_resp(struct rg_h2_out *o, __u32 sid, __u32 end)
{
	__u32 i;

	if (!o)
		return 0;
	/* one early exit per loop: the verifier follows one path each */
	for (i = 0; i < RG_H2_RESP_OPEN; i++) {
		if (o->resp_open[i] == sid) {
			if (end)
				o->resp_open[i] = 0;
			return 0;
		}
	}
	if (end)
		return 0;
	for (i = 0; i < RG_H2_RESP_OPEN; i++) {
		if (!o->resp_open[i]) {
			o->resp_open[i] = sid;
			break;
		}
	}
	if (i == RG_H2_RESP_OPEN)
		o->resp_open[o->resp_next++ & (RG_H2_RESP_OPEN - 1)] = sid;
	/* a full barrier between this store and the read of ans_tail */
	RG_FETCH_ADD(&o->resp_seq, 1);
	return 0;
}

/* The verdict queued answer number t (after publishing it): its stream's
 * response HEADERS went out before, so the answer is trailers only
 * (docs/grpc.md §6.2.7). */
__noinline int rg_h2_out_resp_sent(struct rg_h2_out *o, __u32 t)
{
	struct rg_h2_answer *a;
	int i;

	if (!o)
		return 0;
	a = &o->ans[t & (RG_H2_ANSWERS - 1)];
	for (i = 0; i < RG_H2_RESP_OPEN; i++) {
		if (o->resp_open[i] == a->sid) {
			a->hdrs_sent = 1;
			return 0;
		}
	}
	return 0;
}

/* A frame header completed.  The first must be the server's SETTINGS.
 * whole: all of it is in this msg, ending at end. */
static __always_inline void rg_h2_out_frame(struct rg_h2_out *o, bool whole, __u32 end)
{
	__u8 type = o->hdr[3], flags = o->hdr[4];

	o->left = (__u32)o->hdr[0] << 16 | (__u32)o->hdr[1] << 8 | o->hdr[2];
	o->hdr_len = 0;
	if (o->frames == 0 && (type != RG_H2_SETTINGS || (flags & RG_H2_FLAG_ACK))) {
		rg_h2_out_lose(o); /* not an HTTP/2 server preface */
		return;
	}
	/* the frame size is lowered with or without --grpc-max-streams */
	if (o->frames == 0) {
		if (whole && end >= RG_H2_FRAME_HDR_BYTES)
			o->cap_due = 1; /* the walk stops at end */
		else
			rg_h2_stats_inc(h2_out_streams_uncapped);
	}
	o->frames++;
	rg_h2_stats_inc(h2_out_frames);
	if (type == RG_H2_SETTINGS && (flags & RG_H2_FLAG_ACK)) {
		__u32 head = o->settings_head;

		o->settings_acks++;
		rg_h2_stats_inc(h2_out_settings_acks);
		if (RG_READ_ONCE(o->ack_untracked))
			return;
		if (head == RG_READ_ONCE(o->settings_tail)) {
			rg_h2_out_lose(o); /* an ACK of no SETTINGS the verdict passed */
			return;
		}
		__sync_fetch_and_add(&o->settings_head, 1);
		if (!(RG_READ_ONCE(o->owner) & (1ULL << (head & (RG_H2_SETTINGS_QUEUE - 1)))))
			return;
		/* the ACK of a kernel SETTINGS: the client never sent it, the
		 * refused stream's answer takes its place */
		if (!whole || end < RG_H2_FRAME_HDR_BYTES) {
			rg_h2_stats_inc(h2_out_answer_failed);
			rg_h2_out_lose(o);
			return;
		}
		o->ack_start = end - RG_H2_FRAME_HDR_BYTES;
		o->ack_due = 1;
		return;
	}
	if (type == RG_H2_RST_STREAM) {
		/* a response the server abandons is over */
		rg_h2_out_resp(o, ((__u32)o->hdr[5] << 24 | (__u32)o->hdr[6] << 16 |
				   (__u32)o->hdr[7] << 8 | o->hdr[8]) & 0x7fffffffU,
			       1);
		return;
	}
	if (type == RG_H2_HEADERS) {
		/* the server answered the head of a stream refused since */
		__u32 sid = ((__u32)o->hdr[5] << 24 | (__u32)o->hdr[6] << 16 |
			     (__u32)o->hdr[7] << 8 | o->hdr[8]) & 0x7fffffffU;
		__u32 h = o->ans_head, t, i;

		/* before the answers are read: a refusal the verdict queues
		 * after finds it open (rg_h2_out_resp_sent) */
		rg_h2_out_resp(o, sid, !!(flags & RG_H2_FLAG_END_STREAM));
		t = RG_READ_ONCE(o->ans_tail);

		for (i = 0; i < RG_H2_ANSWERS; i++) {
			if (h + i == t)
				break;
			if (o->ans[(h + i) & (RG_H2_ANSWERS - 1)].sid == sid)
				o->ans[(h + i) & (RG_H2_ANSWERS - 1)].hdrs_sent = 1;
		}
	}
}

/* One step: a frame's payload passed over, or header bytes read. */
static long rg_h2_out_cb(__u64 idx, void *ctx)
{
	struct rg_h2_out_walk *w = ctx;
	struct rg_h2_out *o = w->o;
	__u8 *data, *end;
	__u32 n, i;

	if (!o || o->lost || w->off >= w->size)
		return 1;
	n = w->size - w->off;
	if (o->left) {
		if (n > o->left)
			n = o->left;
		o->left -= n;
		w->off += n;
		return 0;
	}
	if (n > RG_H2_FRAME_HDR_BYTES - o->hdr_len)
		n = RG_H2_FRAME_HDR_BYTES - o->hdr_len;
	if (bpf_msg_pull_data(w->msg, w->off, w->off + n, 0)) {
		rg_h2_out_lose(o);
		return 1;
	}
	data = (__u8 *)(long)w->msg->data;
	end = (__u8 *)(long)w->msg->data_end;
	for (i = 0; i < RG_H2_FRAME_HDR_BYTES; i++) {
		if (i >= n)
			break;
		if (data + i + 1 > end || o->hdr_len >= RG_H2_FRAME_HDR_BYTES) {
			rg_h2_out_lose(o);
			return 1;
		}
		o->hdr[o->hdr_len & 15] = data[i];
		o->hdr_len++;
	}
	w->off += n;
	if (o->hdr_len == RG_H2_FRAME_HDR_BYTES) {
		rg_h2_out_frame(o, n == RG_H2_FRAME_HDR_BYTES, w->off);
		if (o->ack_due || o->cap_due)
			return 1; /* rewritten between two runs of the walk */
	}
	return 0;
}

/* Entries start from this (the verdict's stack has no room); never written. */
static struct rg_h2_out rg_h2_out_zero;

/* The connection's h2_out entry, created by whichever side comes first
 * (the other one's BPF_NOEXIST fails and it finds the entry). */
static __always_inline struct rg_h2_out *rg_h2_out_get(__u64 *cookie)
{
	struct rg_h2_out *o = bpf_map_lookup_elem(&RG_MAP_H2_OUT, cookie);

	if (o)
		return o;
	bpf_map_update_elem(&RG_MAP_H2_OUT, cookie, &rg_h2_out_zero, BPF_NOEXIST);
	o = bpf_map_lookup_elem(&RG_MAP_H2_OUT, cookie);
	if (!o)
		rg_h2_stats_inc(h2_out_lost); /* no room: not followed */
	return o;
}

/* Verdict side: a SETTINGS frame passes to the server, written by the
 * client (kernel = 0) or by the kernel. */
static __always_inline void rg_h2_out_settings(struct rg_h2_out *o, bool kernel)
{
	__u32 tail = o->settings_tail;
	__u64 bit = 1ULL << (tail & (RG_H2_SETTINGS_QUEUE - 1));

	if (o->ack_untracked)
		return;
	if (tail - RG_READ_ONCE(o->settings_head) >= RG_H2_SETTINGS_QUEUE) {
		o->ack_untracked = 1;
		return;
	}
	if (kernel)
		__sync_fetch_and_or(&o->owner, bit);
	else
		__sync_fetch_and_and(&o->owner, ~bit);
	/* publish the entry after its bit */
	__sync_fetch_and_add(&o->settings_tail, 1);
}

/*
 * Replace the kernel-owned SETTINGS ACK at o->ack_start with the next
 * refused stream's trailers-only HEADERS and a connection WINDOW_UPDATE
 * for the DATA the verdict hid: push all but 9 bytes there, then write
 * over the ACK and the pushed bytes.  Returns the bytes now in the ACK's
 * place, 0 on failure.
 */
struct rg_h2_copy {
	struct sk_msg_md *msg;
	struct rg_h2_out *o;
	struct rg_grpc_details d;
	__u32 len;
	__u32 i;
	__s32 err;
};

/* One base64 step of the answer's grpc-status-details-bin. */
static long rg_h2_details_cb(__u64 idx, void *ctx)
{
	struct rg_h2_copy *c = ctx;

	rg_grpc_details_quad(&c->d, (__u8 *)c->o->buf.b, (__u32)idx);
	return 0;
}

/* Copy o->buf into the pulled msg: a word, or a byte at the end, a step. */
static long rg_h2_copy_cb(__u64 idx, void *ctx)
{
	struct rg_h2_copy *c = ctx;
	__u8 *data = (__u8 *)(long)c->msg->data, *end = (__u8 *)(long)c->msg->data_end;
	__u32 i = c->i & RG_GRPC_ANSWER_MASK;

	if (c->i >= c->len)
		return 1;
	if (c->i + 8 <= c->len && i <= RG_GRPC_ANSWER_MAX - 8) {
		if (data + i + 8 > end)
			goto err;
		*(__u64 *)(data + i) = *(__u64 *)&c->o->buf.b[i];
		c->i += 8;
		return 0;
	}
	if (data + i + 1 > end)
		goto err;
	data[i] = c->o->buf.b[i];
	c->i++;
	return 0;
err:
	c->err = -1;
	return 1;
}

/* A global function: verified once, not for every answer of a msg.
 * Returns the bytes now in the ACK's place (0: the ACK went), or -1. */
__noinline int rg_h2_out_answer(struct sk_msg_md *msg, struct rg_h2_out *o)
{
	struct rg_h2_copy cp = { .msg = msg, .o = o };
	struct rg_h2_answer *a;
	__u32 start, h, len = 0, sid, at;
	__u64 owed;

	if (!msg || !o)
		return -1;
	start = o->ack_start;
	h = o->ans_head;
	if (h == RG_READ_ONCE(o->ans_tail))
		return -1;
	a = &o->ans[h & (RG_H2_ANSWERS - 1)];
	sid = a->sid;
	/* sid 0: a give-back (rg_h2_keep_frame), the window only */
	if (sid) {
		__builtin_memset(&o->r, 0, sizeof(o->r));
		o->r.kind = RG_RESP_429;
		o->r.rows = a->rows;
		o->r.estimated = a->estimated;
		o->r.quota_rows_per_s = a->quota_rows_per_s;
		o->r.limit_rows_per_s = a->limit_rows_per_s;
		o->r.db_len = a->db_len;
		o->r.retry_after_s = a->retry_after_s;
		len = rg_grpc_write_answer(&o->buf, sid, a->hdrs_sent, &o->r, &a->db, &cp.d);
		if (len <= RG_H2_FRAME_HDR_BYTES || len >= RG_GRPC_DETAILS_PRE_AT)
			return -1;
		if (cp.d.quads)
			bpf_loop(cp.d.quads, rg_h2_details_cb, &cp, 0);
	}
	/* taken before owed_in is read: DATA the verdict hides after this
	 * read finds no answer queued and queues a give-back */
	RG_FETCH_ADD(&o->ans_head, 1);
	owed = RG_READ_ONCE(o->owed_in) - o->owed_out;
	if (owed > RG_H2_WINDOW_MAX)
		owed = RG_H2_WINDOW_MAX;
	at = rg_h2_opaque(len); /* checked where it is used (6.1) */
	if (owed && at <= RG_GRPC_ANSWER_MAX - RG_H2_WINDOW_UPDATE_BYTES)
		len += rg_h2_put_window_update((__u8 *)&o->buf.b[at], 0, (__u32)owed);
	if (!len) {
		/* given back by the answer before: the ACK just goes */
		if (bpf_msg_pop_data(msg, start, RG_H2_FRAME_HDR_BYTES, 0))
			return -1;
		return 0;
	}
	if (len <= RG_H2_FRAME_HDR_BYTES ||
	    bpf_msg_push_data(msg, start, len - RG_H2_FRAME_HDR_BYTES, 0))
		return -1;
	if (len >= RG_GRPC_ANSWER_MAX || bpf_msg_pull_data(msg, start, start + len, 0))
		goto broken;
	cp.len = len;
	bpf_loop(RG_GRPC_ANSWER_MAX, rg_h2_copy_cb, &cp, 0);
	if (cp.err || cp.i != len)
		goto broken;
	o->owed_out += owed;
	if (sid) {
		/* the kernel's trailers end the stream's response for the
		 * client; the server, reset, never ends it */
		rg_h2_out_resp(o, sid, 1);
		rg_h2_stats_inc(h2_out_answers);
	}
	return (int)len;
broken:
	/* the pushed bytes are not the answer: take them out again */
	bpf_msg_pop_data(msg, start, len - RG_H2_FRAME_HDR_BYTES, 0);
	return -1;
}

#define RG_H2_SETTING_BYTES	       6
#define RG_H2_SETTINGS_CAPPED_MAX      16 /* parameters looked at */
#define RG_H2_SETTING_MAX_CONC_STREAMS 0x3
#define RG_H2_SETTING_MAX_FRAME_SIZE   0x5

/*
 * The server's first SETTINGS, whole in this msg at start, its payload
 * o->left bytes: make the MAX_CONCURRENT_STREAMS the client obeys at most
 * rg_h2_max_streams (docs/grpc.md#h2-max-streams): lower the server's
 * value in place, or add the parameter when the server sent none (no
 * limit).  A MAX_FRAME_SIZE over the default is lowered to it in place:
 * the verdict reads frames of the default size at most (gRPC C-core
 * servers offer 4 MiB, and C-core clients then send larger frames).  The
 * server's own view is untouched; its limits are the same or higher than
 * what the client now keeps to.  Returns the bytes added to the frame (0
 * or 6).
 */
__noinline __u32 rg_h2_out_cap_settings(struct sk_msg_md *msg, struct rg_h2_out *o, __u32 start)
{
	__u32 len, i, at, v, cap = rg_h2_max_streams;
	__u8 *data, *end, *p, found = 0;

	if (!msg || !o)
		return 0;
	len = o->left;
	if (len % RG_H2_SETTING_BYTES || len > RG_H2_SETTINGS_CAPPED_MAX * RG_H2_SETTING_BYTES ||
	    start + RG_H2_FRAME_HDR_BYTES + len > msg->size)
		goto uncapped;
	if (bpf_msg_pull_data(msg, start, start + RG_H2_FRAME_HDR_BYTES + len, 0))
		goto uncapped;
	data = (__u8 *)(long)msg->data;
	end = (__u8 *)(long)msg->data_end;
	for (i = 0; i < RG_H2_SETTINGS_CAPPED_MAX; i++) {
		at = RG_H2_FRAME_HDR_BYTES + i * RG_H2_SETTING_BYTES;
		if (i * RG_H2_SETTING_BYTES >= len)
			break;
		p = data + at;
		if (p + RG_H2_SETTING_BYTES > end)
			goto uncapped;
		if (p[0] != 0)
			continue;
		v = (__u32)p[2] << 24 | (__u32)p[3] << 16 | (__u32)p[4] << 8 | p[5];
		if (p[1] == RG_H2_SETTING_MAX_FRAME_SIZE && v > RG_H2_DEFAULT_MAX_FRAME_BYTES) {
			rg_h2_put_u32(p + 2, RG_H2_DEFAULT_MAX_FRAME_BYTES);
			rg_h2_stats_inc(h2_out_frame_size_capped);
			continue;
		}
		if (p[1] != RG_H2_SETTING_MAX_CONC_STREAMS || found || !cap)
			continue;
		found = 1;
		if (v <= cap)
			continue; /* the server's own limit is lower */
		rg_h2_put_u32(p + 2, cap);
		rg_h2_stats_inc(h2_out_streams_capped);
	}
	if (found || !cap)
		return 0;
	/* none: the server allows any number.  Push 6 bytes before the
	 * frame (6.1 cannot push at the end of a msg) and write the frame's
	 * header, 6 bytes longer, over them and the old header's first 6,
	 * and the parameter over the rest: the payload follows unmoved. */
	if (bpf_msg_push_data(msg, start, RG_H2_SETTING_BYTES, 0))
		goto uncapped;
	if (bpf_msg_pull_data(msg, start, start + RG_H2_FRAME_HDR_BYTES + RG_H2_SETTING_BYTES, 0))
		goto broken;
	data = (__u8 *)(long)msg->data;
	end = (__u8 *)(long)msg->data_end;
	if (data + RG_H2_FRAME_HDR_BYTES + RG_H2_SETTING_BYTES > end)
		goto broken;
	rg_h2_put_frame_hdr(data, len + RG_H2_SETTING_BYTES, RG_H2_SETTINGS, 0, 0);
	p = data + RG_H2_FRAME_HDR_BYTES;
	p[0] = 0;
	p[1] = RG_H2_SETTING_MAX_CONC_STREAMS;
	rg_h2_put_u32(p + 2, cap);
	rg_h2_stats_inc(h2_out_streams_capped);
	return RG_H2_SETTING_BYTES;
broken:
	/* the pushed bytes are not the parameter: take them out again */
	bpf_msg_pop_data(msg, start, RG_H2_SETTING_BYTES, 0);
uncapped:
	rg_h2_stats_inc(h2_out_streams_uncapped);
	return 0;
}

struct rg_h2_round {
	struct sk_msg_md *msg;
	struct rg_h2_out_walk *w;
	__s32 err;
};

/* Walk to the next kernel ACK, or to the end, and answer there. */
static long rg_h2_round_cb(__u64 idx, void *ctx)
{
	struct rg_h2_round *r = ctx;
	struct rg_h2_out_walk *w = r->w;
	struct rg_h2_out *o = w->o;
	int n;

	if (!o)
		return 1;
	o->ack_due = 0;
	o->cap_due = 0;
	/* a header takes at most two steps (split), its payload one */
	bpf_loop(w->size < RG_MSG_MAX_STEPS / 2 ? 2 * w->size + 2 : RG_MSG_MAX_STEPS, rg_h2_out_cb,
		 w, 0);
	if (o->cap_due) {
		/* the walk stopped after the SETTINGS header: its payload
		 * is still to come, 6 bytes longer if a parameter went in */
		o->left += rg_h2_out_cap_settings(r->msg, o, w->off - RG_H2_FRAME_HDR_BYTES);
		w->size = r->msg->size;
		return 0;
	}
	if (!o->ack_due)
		return 1;
	o->ack_due = 0;
	n = rg_h2_out_answer(r->msg, o);
	if (n < 0) {
		r->err = -1;
		return 1;
	}
	w->size = r->msg->size;
	w->off = o->ack_start + (__u32)n;
	return 0;
}

/* Follow the server's frames in this msg; its bytes pass untouched but
 * the ACKs of kernel SETTINGS, which become refused streams' answers. */
static __always_inline int rg_h2_egress(struct sk_msg_md *msg, __u64 cookie)
{
	struct rg_h2_out_walk w = { .msg = msg };
	struct rg_h2_round r = { .msg = msg, .w = &w };
	struct rg_h2_out *o = rg_h2_out_get(&cookie);

	if (!o)
		return SK_PASS;
	if (o->lost || RG_READ_ONCE(o->closing))
		return SK_PASS;
	w.o = o;
	w.size = msg->size;
	/* one round per answer, one for the server's first SETTINGS, and
	 * the last to the end */
	bpf_loop(RG_H2_ANSWERS + 2, rg_h2_round_cb, &r, 0);
	if (r.err) {
		/* the client would see an ACK it never asked for */
		rg_h2_stats_inc(h2_out_answer_failed);
		rg_h2_out_lose(o);
		return SK_PASS;
	}
	if (w.off < w.size)
		rg_h2_out_lose(o);
	return SK_PASS;
}

#endif /* ROWGATE_BPF_H2_EGRESS_H */
