/* SPDX-License-Identifier: GPL-2.0 */
/* One HTTP/2 connection as the verdict follows it: struct rg_h2_sock
 * (the parser's state, the window, the refusal queue) and its maps:
 * h2_conns, h2_cdb, h2_zero, and h2_slot, the slot of the HTTP/2 verdict
 * rg_verdict tail-calls. */
#ifndef ROWGATE_BPF_H2_STATE_H
#define ROWGATE_BPF_H2_STATE_H

#include "../base.h"
#include "../maps.h"
#include "../admit.h"
#include "stats.h"
#include "egress.h"
#include "rowgate/abi.h"
#include "rowgate/guard.h"
#include "rowgate/response.h"
#include "rowgate/h2/hpack.h"
#include "rowgate/h2/msg.h"
#include "rowgate/h2/frame.h"

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
/* Streams with a message half-read at a frame boundary, at most: grpc's
 * clients open up to 100 concurrent calls by default.  Those past the
 * parser's RG_H2_STREAM_SLOTS wait in h2_parked; one more fails closed
 * (docs/grpc.md#framing). */
#define RG_H2_HALF_READ_MAX 128
#define RG_H2_PARKED	    (RG_H2_HALF_READ_MAX - RG_H2_STREAM_SLOTS)
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
	/* the client's address, for h2_cdb_peer (0: not known, an entry
	 * created by an earlier build) */
	struct rg_peer peer;
	/* a compressed message's copy began in this skb: its connection's
	 * h2_cdb entry is made (if none) after the byte loop */
	__u32 cdb_wanted;
	__u32 pad_adm[10]; /* free (as pad_adm_next): the pinned layout stays */
	/* --grpc-compressed debt: copies of compressed messages for rowgated */
	__u32 copy_next;		    /* copies begun on the connection */
	__s32 cp_slot;			    /* bytes of this skb not emitted yet: */
	__u32 cp_from;			    /* [cp_from, cp_to) of slot cp_slot */
	__u32 cp_to;
	__u64 cookie; /* of the socket, for h2_cdb */
	__s32 cverdict; /* rg_h2_compressed_admit of the compressed message completing */
	__u32 reject_estimated; /* reject_rows is an estimate (rg_grpc_answer_rows) */
	__u32 goaway_sid; /* the GOAWAY's last stream id (rg_h2_goaway_text) */
	/* streams whose half-read message waits in h2_parked (bpf/h2/park.h) */
	__u32 parked[RG_H2_PARKED]; /* their ids, 0 = free */
	__u32 parked_n;		    /* ids in parked */
	__u32 park_next;	    /* the slot parked next (a ring) */
	__s32 park_at;		    /* scratch of rg_h2_parked_find */
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
 * (struct rg_h2_cdb): made empty by the verdict at the connection's first
 * copy (rg_h2_cdb_make), filled by rowgated, deleted with the connection
 * (sockops); allocated only for those connections; not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_h2_cdb);
} RG_MAP_H2_CDB SEC(".maps");

/* h2_cdb_peer: the databases the compressed messages of a client address's
 * connections named (struct rg_h2_cdb, the newest RG_H2_CDB_DBS), written by
 * rowgated: a connection it has learned nothing of yet is judged on them;
 * not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RG_H2_CDB_PEERS);
	__type(key, struct rg_peer);
	__type(value, struct rg_h2_cdb);
} RG_MAP_H2_CDB_PEER SEC(".maps");

/* The client's address.  Every field is read, each by its own load from
 * the context: the barriers keep clang from merging loads into one off a
 * moved context pointer, which the verifier refuses. */
static __always_inline void rg_h2_peer_fill(struct rg_h2_sock *st, struct __sk_buff *skb)
{
	__u32 family, ip4, ip6[4];

	family = skb->family;
	asm volatile("" : "+r"(skb));
	ip4 = skb->remote_ip4;
	asm volatile("" : "+r"(skb));
	ip6[0] = skb->remote_ip6[0];
	asm volatile("" : "+r"(skb));
	ip6[1] = skb->remote_ip6[1];
	asm volatile("" : "+r"(skb));
	ip6[2] = skb->remote_ip6[2];
	asm volatile("" : "+r"(skb));
	ip6[3] = skb->remote_ip6[3];
	st->peer.family = family;
	if (family == AF_INET6) {
		st->peer.ip[0] = ip6[0];
		st->peer.ip[1] = ip6[1];
		st->peer.ip[2] = ip6[2];
		st->peer.ip[3] = ip6[3];
	} else {
		st->peer.ip[0] = ip4;
	}
}

/* h2_zero: [0] -> a zeroed state to create entries from (too large for
 * the stack); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_h2_sock);
} h2_zero SEC(".maps");

/* The connection's h2_cdb entry, empty, for rowgated to fill (it only
 * updates an entry that exists: a connection closed meanwhile leaves none
 * behind).  st must be the h2_conns value itself: 6.1 takes a map key only
 * from the stack or a map value. */
static __always_inline void rg_h2_cdb_make(struct rg_h2_sock *st)
{
	__u32 zero = 0;
	void *empty = bpf_map_lookup_elem(&h2_zero, &zero); /* zeroed, and larger */

	st->cdb_wanted = 0;
	if (empty)
		bpf_map_update_elem(&RG_MAP_H2_CDB, &st->cookie, empty, BPF_NOEXIST);
}

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
	rg_h2_stats_inc(h2_conns);
	return bpf_map_lookup_elem(&RG_MAP_H2_CONNS, &cookie);
}

#endif /* ROWGATE_BPF_H2_STATE_H */
