/* SPDX-License-Identifier: GPL-2.0 */
/* Per-connection state of the HTTP verdict: where the request stream is, the
 * bytes held back from the server, and the TCP ledger (docs/design.md#tcp-read-accounting).  Kept in
 * a hash map keyed by socket cookie (sk_storage is not allowed in sk_skb),
 * created by sockops, deleted when the socket closes; serialised by the
 * socket lock, so its scratch fields are safe to use across a run (a per-CPU
 * buffer is not: scratch.h).
 */
#ifndef ROWGATE_BPF_CONN_H
#define ROWGATE_BPF_CONN_H

#include "base.h"
#include "rowgate/abi.h"
#include "rowgate/http.h"
#include "rowgate/rows.h"
#include "rowgate/lp_dbtag.h"
#include "admit.h"
#include "rowgate/response.h"
#include "rowgate/http_resp.h"

#define RG_WINDOW_BYTES   256  /* bytes loaded from an skb per bpf_loop step */
#define RG_RESERVE_BYTES  1024 /* charge withheld from a rejected body so the
				* 429 carrier can grow to a full response */
#define RG_ADJUST_MAX     4095 /* bpf_skb_adjust_room moves < 4 KiB per call */
#define RG_CHANGE_TAIL_MAX 16064 /* change_tail fails above this length */

enum rg_conn_mode {
	RG_MODE_HTTP = 0,    /* parsing requests */
	RG_MODE_PASSTHROUGH, /* not HTTP: every byte passes untouched */
	RG_MODE_CLOSING,     /* answered with Connection: close: drop the rest */
};

enum rg_phase {
	RG_PHASE_HEAD = 0,
	RG_PHASE_BODY_LENGTH,  /* Content-Length body */
	RG_PHASE_BODY_CHUNKED,
};

enum rg_req_verdict {
	RG_REQ_PASS = 0,   /* not a guarded write, or no limit: untouched */
	RG_REQ_ADMIT,      /* admitted: rows charged at its end */
	RG_REQ_REJECT,     /* never reaches the server; answered 429 */
	RG_REQ_UNENFORCED, /* should be rejected but cannot be answered in
			    * order: passed, charged, counted */
};

/* Which of the server's timers runs while it sees no bytes (rejected
 * requests never reach it): docs/server-profiles.md#server-timeouts. */
enum rg_server_timer {
	RG_TIMER_HEADER = 0, /* since accept: no request was passed yet */
	RG_TIMER_IDLE,	     /* since the last passed request's answer */
};

enum rg_respond {
	RG_RESPOND_NONE = 0,
	RG_RESPOND_429,   /* rejected request ended exactly at the skb end */
	RG_RESPOND_429_CLOSE,
	RG_RESPOND_400,
};

/* Passed requests awaiting their answer; more pipelined than this and
 * egress stops tracking the connection. */
#define RG_PENDING_MAX 8

#define RG_PEND_HEAD	 (1U << 0) /* the method was HEAD: no body in the answer */
#define RG_PEND_CHARGED	 (1U << 1) /* rows were charged to db in the kernel */
#define RG_PEND_ENFORCED (1U << 2) /* charged as admitted (else unenforced) */
#define RG_PEND_COPIED	 (1U << 3) /* rows are rowgated's estimate: corrected later */
#define RG_PEND_VOIDED	 (1U << 4) /* voided (docs/design.md#response-ordering): its
				    * server 400 is replaced with rowgate's 429 */

/* rg_pending.sync bits: whichever side sets the second one refunds. */
#define RG_PEND_DONE	(1U << 0) /* verdict: the request ended, rows are final */
#define RG_PEND_REFUSED (1U << 1) /* egress: answered with a refund status */

/* One passed request, as the egress program needs it to judge its answer.
 * Pushed when its head passes; the server may answer before its body ends. */
struct rg_pending {
	__u64 rows;
	__u32 seq;  /* the request's number (body records of copied ones) */
	__u32 sync; /* RG_PEND_DONE | RG_PEND_REFUSED, set atomically */
	__u8 flags; /* RG_PEND_*, final once DONE */
	__u8 key;   /* its database and protocol: rg_egress.keys[key] */
	__u8 pad[6];
};

/* Distinct (database, protocol) keys the requests in flight may have: one
 * past the other keeps a client that moves to another database pipelining */
#define RG_PENDING_KEYS 2

/*
 * The server's side of the connection (docs/design.md#egress): the verdict
 * pushes each passed request at tail, the sk_msg program pops one per final
 * response at head.  One writer each (the verdict under the receive path,
 * the msg program under the sender's socket lock); kernel_bytes is shared
 * and changed atomically.
 */
struct rg_egress {
	struct rg_resp resp;
	__u64 kernel_bytes; /* bytes of the verdict's own 429/400 answers that
			     * egress passes over instead of parsing */
	__u32 head;	    /* next request to pop */
	__u32 tail;	    /* next free slot */
	__u32 cur;	    /* slot of the verdict's current request */
	__u8 armed;	    /* seen from the first byte (sockops): tracked */
	__u8 lost;	    /* framing lost: egress decides nothing more */
	__u8 open;	    /* the current request has a slot (cur) */
	__u8 answered;	    /* a voided request's 429 went out: the server's
			     * later bytes are dropped (it closes) */
	__u8 key_last;	    /* the key the newest request took */
	__u8 pad[7];
	struct rg_pending q[RG_PENDING_MAX];
	/* written by the verdict only where no request in flight has it */
	struct rg_proto_key keys[RG_PENDING_KEYS];
	/* scratch of refunds (the verdict's stack is full), one per side */
	struct rg_refund_scratch {
		struct rg_refused_key key;
		struct rg_refused val;
	} sv, se;
};

/* State of one verdict run over one skb (scalars only: global functions
 * get the connection and may write any of it). */
struct rg_walk {
	__u32 len;       /* skb length */
	__u32 win_off;   /* skb offset of the loaded window */
	__u32 win_len;
	__u32 pos;       /* next byte within the window */
	__u32 req_start; /* skb offset where the current head began */
	__u32 pass_end;  /* [0, pass_end) belongs to passed requests */
	__s32 error;     /* enum rg_head_result of a 400 */
	__u8 stop;
	__u8 respond;    /* enum rg_respond */
	__u8 must_pass;  /* verdict runs inside recvmsg: only SK_PASS sticks */
	__u8 req_in_skb; /* the current request's head began in this skb */
	__u8 body_open;  /* body bytes of a copied request began in this skb */
	__u8 yield_to_bulk; /* byte steps stop where a body can go in bulk */
	__u8 close_deadline; /* the 429 closes ahead of the server's timer */
	__u8 slot;	     /* the scratch buffer this run claimed (scratch.h) */
	__u32 body_from; /* skb offset where they began */
};

/*
 * Where the verdict stands in the client's TCP sequence (bpf/tcp_rx.h).
 * The kernel hands a sockmap verdict whole skbs, also one that a
 * retransmission made start before bytes already handed over; the verdict
 * cuts those bytes off, so it and the server read each byte once.
 */
#define RG_RX_RECS 4
struct rg_rx_seq {
	__u32 seen_end;  /* sequence after the last byte the verdict saw */
	__u32 next_seq;  /* start of the skb queued behind the last one */
	__u32 rec_at[RG_RX_RECS];  /* sockops: rcv_nxt when a segment that */
	__u32 rec_old[RG_RX_RECS]; /* starts this many bytes before it came */
	__u8 known;      /* seen_end is set */
	__u8 next_known; /* next_seq is */
	__u8 rec_slot;   /* the slot the next record takes */
	__u8 recorded;   /* sockops records this connection's segments */
	__u8 trusted;    /* the last skb's start was taken on trust */
	__u8 pad[3];
};

struct rg_conn {
	__u8 started;
	__u8 mode;       /* enum rg_conn_mode */
	__u8 phase;      /* enum rg_phase */
	__u8 verdict;    /* enum rg_req_verdict of the current request */
	__u8 count_rows; /* the current request's body is line protocol */
	__u8 copy_body;  /* rowgated counts this request from a body copy */
	__u8 copy_lost;  /* a record of the copy did not fit the ring */
	__u8 protocol;   /* enum rg_protocol of the current request's route */
	__u8 awaiting;   /* a passed request may still await its answer */
	__u8 force_unenforced; /* the next decision cannot be enforced */
	__u8 keep_alive; /* the current request allows keep-alive */
	__u8 reject_estimated; /* reject_rows is a guess: the body was not read */
	__u16 stash_len; /* head bytes held back (dropped, not yet passed) */
	__u8 draining;   /* the accept-time drain runs the verdict */
	__u8 db_len;     /* bytes of db.name */
	__u8 profile;    /* enum rg_profile of the port, set by sockops */
	__u8 port_flags; /* RG_PORT_* */
	__u8 last_post;  /* the previous request's method was "POST" */
	__u8 server_timer; /* enum rg_server_timer running on the server */
	__u32 uncharged; /* bytes received but not yet charged to TCP */
	__u32 requests;
	__u16 header_timeout_s; /* the port's server timers (struct rg_port) */
	__u16 idle_timeout_s;
	__u8 verdict_build; /* low byte of rg_build_id of the verdict that ran last:
			     * taken from padding, so older builds leave it 0 */
	__u8 h2;	    /* opened with the HTTP/2 preface on a --grpc port: the
			     * HTTP/2 verdict follows it (bpf/h2/); from padding */
	__u8 scan_db;	    /* the body's lines may name databases of their own
			     * (victoria-metrics' db tag): read as they pass */
	__u8 unlimited;	    /* the current request is a write to a database without a
			     * limit: counted at its end (rg_unlimited_count); from
			     * padding */
	__u8 stash_held;    /* the stash map holds an entry for it (rg_stash_take) */
	__u8 head_begun;    /* the current head has bytes: its parser's state is
			     * in a scratch buffer during a run, else saved */
	__u8 head_saved;    /* the stash entry holds that state between runs */
	__u8 req_lead;      /* what the verdict keeps of a complete head: the CR/LF */
	__u8 req_method_head; /* before its method, whether that method is HEAD, */
	__u8 req_ce;	      /* whether it named a Content-Encoding, */
	__u8 req_identity;    /* and whether that coding is the identity */
	__u8 pad_head[3];
	__u64 req_content_length; /* the complete head's Content-Length */
	__u64 timer_from_ns; /* when server_timer started, as the verdict sees it */
	__u64 body_remaining;
	__u64 write_seq_mark; /* server's write_seq when a request was passed */
	__u64 req_rows;
	__u64 charged_rows; /* of req_rows, charged while the body arrived */
	__u64 body_bytes; /* body bytes of the current request seen so far */
	__u64 reject_rows; /* rows of the request the pending 429 answers */
	struct rg_walk w;
	struct rg_reject_info reject;
	/* the current request's database (pk.db), and the protocol of its
	 * route where a map is keyed by both (rg_proto_key_of) */
	struct rg_proto_key pk;
	struct rg_lp_state lp;
	struct rg_lp_dbtag dbt; /* while scan_db */
	struct rg_chunked chunk;
	struct rg_egress eg;
	struct rg_rx_seq rx;
};

/* Head bytes a connection holds back (stash_len of them), and the parser's
 * state of a head split across skbs: an entry of the stash map, taken when
 * a connection starts holding either and given back when it holds neither,
 * so an idle connection carries none of it (docs/design.md#split-heads). */
struct rg_stash {
	__u8 bytes[RG_HEAD_MAX_BYTES + RG_WINDOW_BYTES];
	/* the parser's state of a head a run ended inside (head_saved) */
	struct rg_http_head head;
};

/* ports: guarded local TCP port (host order) -> its server profile, which
 * each of its connections takes */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct rg_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_PORTS SEC(".maps");

/* sockhash: socket cookie -> guarded socket; the verdict is attached here */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, RG_MAX_CONNS);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_SOCKHASH SEC(".maps");

/* conns: socket cookie -> connection state, allocated on demand */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_CONNS SEC(".maps");

/* conn_zero: [0] -> an all-zero connection, the template sockops copies;
 * not pinned: it belongs to one load */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_conn);
} conn_zero SEC(".maps");

/* stash: socket cookie -> the bytes it holds back (struct rg_stash), one
 * entry per connection that holds any: the table's size, as no connection
 * may be refused one */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_CONNS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct rg_stash);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_STASH SEC(".maps");

/* stash_zero: [0] -> the template a stash entry is created from (its bytes
 * are never read: only stash_len of them, written first) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_stash);
} stash_zero SEC(".maps");

#endif /* ROWGATE_BPF_CONN_H */
