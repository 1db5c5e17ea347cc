/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each byte of the client's stream reaches the verdict once.
 *
 * tcp_read_skb hands a sockmap verdict whole skbs of the receive queue and
 * passes them whole to the server.  TCP queues a segment that starts before
 * rcv_nxt whole too (a retransmission that carries bytes already received,
 * or two out-of-order segments that overlap): tcp_recvmsg skips the old
 * bytes by copied_seq, tcp_read_skb does not.  Both the verdict and the
 * server would read them twice (measured on 6.18: a pass-through verdict
 * corrupts the stream; docs/design.md#retransmitted-bytes).  The verdict
 * cuts them off the front before it reads the skb.
 *
 * Where an skb starts, the verdict cannot read (its TCP control block is
 * not in __sk_buff).  It knows it:
 *  - for an skb queued behind the previous one: the previous verdict read
 *    its start from the queue (next_seq);
 *  - for the only skb in the queue: rcv_nxt minus its length;
 *  - for a segment that arrived partly old: sockops saw it come
 *    (BPF_SOCK_OPS_PARSE_HDR_OPT_CB, before TCP queues it) and recorded
 *    rcv_nxt and how many bytes before it it starts;
 *  - for the first skb of the stream: rcv_nxt minus bytes_received.
 * Anything else starts where the last skb ended.
 */
#ifndef ROWGATE_BPF_TCP_RX_H
#define ROWGATE_BPF_TCP_RX_H

#include "base.h"
#include "conn.h"
#include "maps.h"
#include "skb_edit.h"

/* sockops, for each segment of a guarded connection: one that starts
 * before rcv_nxt and ends after it is queued whole. */
static __always_inline void rg_rx_record(struct bpf_sock_ops *skops, struct rg_conn *c)
{
	void *data = (void *)(long)skops->skb_data;
	void *end = (void *)(long)skops->skb_data_end;
	__u32 seq, hdr, payload, rcv_nxt = skops->rcv_nxt, i;
	__u8 *th = data;
	__u8 slot;

	if (data + 20 > end)
		return;
	seq = ((__u32)th[4] << 24) | ((__u32)th[5] << 16) | ((__u32)th[6] << 8) | th[7];
	hdr = (th[12] >> 4) * 4;
	payload = skops->skb_len > hdr ? skops->skb_len - hdr : 0;
	if (!payload || (__s32)(seq - rcv_nxt) >= 0 || (__s32)(seq + payload - rcv_nxt) <= 0)
		return;
	/* a later retransmission at the same rcv_nxt replaces one TCP dropped */
	slot = c->rx.rec_slot & (RG_RX_RECS - 1);
	for (i = 0; i < RG_RX_RECS; i++)
		if (c->rx.rec_old[i] && c->rx.rec_at[i] == rcv_nxt)
			slot = i;
	c->rx.rec_at[slot & (RG_RX_RECS - 1)] = rcv_nxt;
	c->rx.rec_old[slot & (RG_RX_RECS - 1)] = rcv_nxt - seq;
	c->rx.rec_slot = slot + 1;
}

/* The start of the first skb in the receive queue (not empty: an empty
 * queue's next is the queue itself). */
static __always_inline int rg_rx_queue_head(struct tcp_sock *tp, __u32 *seq)
{
	struct sk_buff *next = BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_receive_queue.next);

	if (!next)
		return -1;
	/* struct tcp_skb_cb starts with seq */
	return bpf_probe_read_kernel(seq, sizeof(*seq),
				     (void *)next + bpf_core_field_offset(struct sk_buff, cb));
}

/*
 * At the verdict, before it reads the skb: cut off bytes it already saw.
 * A start taken on trust (no record could have told otherwise: an adopted
 * connection, whose segments sockops does not see) cuts nothing from the
 * next skb: an overlap then may be the trusted one's.
 */
static __always_inline void rg_rx_trim(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_rx_seq *rx = &c->rx;
	struct bpf_sock *sk = skb->sk;
	__u32 len = skb->len, start, qlen, i;
	struct tcp_sock *tp;
	bool exact = true;
	__s32 old;

	if (!sk)
		return;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return;
	qlen = BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_receive_queue.qlen);
	if (rx->known && rx->next_known) {
		start = rx->next_seq;
	} else if (!qlen && sk->state == BPF_TCP_ESTABLISHED) {
		start = tp->rcv_nxt - len; /* the only skb queued ends at rcv_nxt */
	} else if (!rx->known) {
		/* the first skb: of the stream, or of an adopted connection
		 * (roughly: the skb behind it may overlap it) */
		start = tp->rcv_nxt - tp->bytes_received;
		if (!rx->recorded) {
			exact = false;
			if (qlen && !rg_rx_queue_head(tp, &start))
				start -= len;
		}
	} else {
		start = rx->seen_end;
		exact = rx->recorded;
		for (i = 0; i < RG_RX_RECS; i++) {
			if (rx->rec_old[i] && rx->rec_at[i] == rx->seen_end &&
			    rx->rec_old[i] < len) {
				start = rx->rec_at[i] - rx->rec_old[i];
				rx->rec_old[i] = 0;
			}
		}
	}
	if (!rx->known) {
		rx->seen_end = start;
		rx->known = 1;
	}
	old = (__s32)(rx->seen_end - start);
	if (old > 0 && (__u32)old < len && !rx->trusted) {
		if (rg_cut_front(skb, (__u32)old)) {
			rg_global_inc(internal_errors);
		} else {
			rg_global_inc(tcp_old_segments);
			rg_global_add(tcp_old_bytes, (__u32)old);
		}
	} else if (old) {
		rg_global_inc(tcp_seq_gaps); /* lost track: take this skb's word */
	}
	rx->trusted = !exact;
	if ((__s32)(start + len - rx->seen_end) > 0)
		rx->seen_end = start + len;
	rx->next_known = qlen && !rg_rx_queue_head(tp, &rx->next_seq);
}

#endif /* ROWGATE_BPF_TCP_RX_H */
