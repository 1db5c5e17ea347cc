// SPDX-License-Identifier: GPL-2.0
/*
 * A lossy link for tests (tc ingress on a namespace's loopback): drops a
 * share of the segments sent to the guarded port, and every second drops
 * the server's segments (its ACKs) for a quarter of a second.  The client
 * then retransmits on timeout, merging small segments, some of which the
 * server already holds: a retransmission that starts before rcv_nxt
 * (bpf/tcp_rx.h).  The guarded port is fixed: the namespace is the
 * test's own.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define LOSSY_PORT	    18428
#define LOSSY_DROP_PER_MILLE 100
#define LOSSY_BLACKOUT_MS    250 /* of every 1,000 */

__u64 data_dropped, acks_dropped;

SEC("tc")
int lossy(struct __sk_buff *skb)
{
	__u16 ports[2];
	__u8 vihl;

	if (skb->protocol != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN + (vihl & 0xf) * 4, ports, sizeof(ports)))
		return TC_ACT_OK;
	if (bpf_ntohs(ports[0]) == LOSSY_PORT &&
	    bpf_ktime_get_ns() / 1000000 % 1000 < LOSSY_BLACKOUT_MS) {
		__sync_fetch_and_add(&acks_dropped, 1);
		return TC_ACT_SHOT;
	}
	if (bpf_ntohs(ports[1]) == LOSSY_PORT &&
	    bpf_get_prandom_u32() % 1000 < LOSSY_DROP_PER_MILLE) {
		__sync_fetch_and_add(&data_dropped, 1);
		return TC_ACT_SHOT;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
