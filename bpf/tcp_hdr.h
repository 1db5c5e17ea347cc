/* SPDX-License-Identifier: GPL-2.0 */
/* The TCP header of an ingress packet, as the cgroup_skb programs
 * (rg_hold_reset, rg_refuse) see it: the skb starts at the IP header.
 */
#ifndef ROWGATE_BPF_TCP_HDR_H
#define ROWGATE_BPF_TCP_HDR_H

#include "base.h"
#include "net.h"

#define RG_IPV6_HDR_BYTES 40
#define RG_TCP_FLAG_RST	  0x04

/* Where the TCP header of an ingress packet starts (the skb starts at the
 * IP header); -1 when the headers cannot be read. */
static __always_inline int rg_tcp_header_at(struct __sk_buff *skb)
{
	__u8 b;

	if (skb->protocol == bpf_htons(RG_ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, &b, 1))
			return -1;
		return (b & 0xf) * 4;
	}
	if (skb->protocol == bpf_htons(RG_ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 6, &b, 1) || b != RG_IPPROTO_TCP)
			return -1; /* extension headers */
		return RG_IPV6_HDR_BYTES;
	}
	return -1;
}

/* Bytes of TCP payload in an ingress packet; -1 when the headers cannot be
 * read, which counts as data. */
static __always_inline int rg_tcp_payload(struct __sk_buff *skb)
{
	int at = rg_tcp_header_at(skb);
	__u8 b;

	if (at < 0 || at > 60 || bpf_skb_load_bytes(skb, at + 12, &b, 1))
		return -1;
	return (int)skb->len - at - (int)((b >> 4) * 4);
}

#endif /* ROWGATE_BPF_TCP_HDR_H */
