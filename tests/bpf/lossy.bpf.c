// SPDX-License-Identifier: GPL-2.0
/*
 * A lossy link for tests (tc ingress on a namespace's loopback): drops a
 * share of the client's new data to the guarded port, and every second
 * drops the server's segments (its ACKs) for a quarter of a second.  The
 * client then retransmits on timeout, merging small segments, some of
 * which the server already holds: a retransmission that starts before
 * rcv_nxt (bpf/tcp_rx.h).
 *
 * A retransmission of the client's data is never dropped: each byte is
 * lost at most once, so no retransmission timer backs off past a blackout
 * and a request never stalls for seconds.  Servers close a connection
 * whose request head takes too long (victoria-metrics after 5 s): a stall
 * would read as a limiter fault.  The guarded port is fixed: the
 * namespace is the test's own.
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

/* client port -> the end of the highest data sequence seen from it */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u16);
	__type(value, __u32);
} seen_end SEC(".maps");

/* Data a segment carries first: true when it reaches past every byte of
 * its flow seen before (a first transmission, in part at least). */
static __always_inline int lossy_new_data(struct __sk_buff *skb, int ip_at, int tcp_at,
					  __u16 client_port)
{
	__u8 doff_flags[2];
	__u16 ip_len;
	__u32 seq, end, *seen;
	int len;

	if (bpf_skb_load_bytes(skb, ip_at + 2, &ip_len, 2) ||
	    bpf_skb_load_bytes(skb, tcp_at + 4, &seq, 4) ||
	    bpf_skb_load_bytes(skb, tcp_at + 12, doff_flags, 2))
		return 0;
	/* a SYN starts a flow: a port used again starts from its new ISN */
	if (doff_flags[1] & 0x02) {
		bpf_map_delete_elem(&seen_end, &client_port);
		return 0;
	}
	len = (int)bpf_ntohs(ip_len) - (tcp_at - ip_at) - (doff_flags[0] >> 4) * 4;
	if (len <= 0)
		return 0;
	end = bpf_ntohl(seq) + len;
	seen = bpf_map_lookup_elem(&seen_end, &client_port);
	if (seen && (__s32)(end - *seen) <= 0)
		return 0;
	bpf_map_update_elem(&seen_end, &client_port, &end, BPF_ANY);
	return 1;
}

SEC("tc")
int lossy(struct __sk_buff *skb)
{
	__u16 ports[2];
	__u8 vihl;
	int tcp_at;

	if (skb->protocol != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1))
		return TC_ACT_OK;
	tcp_at = ETH_HLEN + (vihl & 0xf) * 4;
	if (bpf_skb_load_bytes(skb, tcp_at, ports, sizeof(ports)))
		return TC_ACT_OK;
	if (bpf_ntohs(ports[0]) == LOSSY_PORT &&
	    bpf_ktime_get_ns() / 1000000 % 1000 < LOSSY_BLACKOUT_MS) {
		__sync_fetch_and_add(&acks_dropped, 1);
		return TC_ACT_SHOT;
	}
	if (bpf_ntohs(ports[1]) == LOSSY_PORT &&
	    lossy_new_data(skb, ETH_HLEN, tcp_at, ports[0]) &&
	    bpf_get_prandom_u32() % 1000 < LOSSY_DROP_PER_MILLE) {
		__sync_fetch_and_add(&data_dropped, 1);
		return TC_ACT_SHOT;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
