// SPDX-License-Identifier: GPL-2.0
/* Minimal reproducer of the copied_seq write-back in tcp_bpf_recvmsg_parser()
 * (README.md): sockops puts passively established sockets on one port in a
 * sockhash, and the verdict drops (or redirects to the socket's own egress)
 * every skb.  Nothing else: no state, no parsing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* The sockhash holds at most this many sockets (one per case, plus slack). */
#define RP_MAX_SOCKS 16

/* Set through the skeleton before load. */
const volatile __u32 rp_port = 0;      /* server port, host byte order */
const volatile __u32 rp_redirect = 0;  /* 1: redirect to own egress; 0: drop */

/* socket cookie -> accepted server socket; the verdict is attached here */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, RP_MAX_SOCKS);
	__type(key, __u64);
	__type(value, __u64);
} rp_socks SEC(".maps");

SEC("sockops")
int rp_sockops(struct bpf_sock_ops *skops)
{
	__u64 cookie;

	/* Fires in softirq when the handshake completes, before accept(). */
	if (skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    skops->local_port == rp_port) {
		cookie = bpf_get_socket_cookie(skops);
		bpf_sock_hash_update(skops, &rp_socks, &cookie, BPF_NOEXIST);
	}
	return 1;
}

SEC("sk_skb")
int rp_verdict(struct __sk_buff *skb)
{
	__u64 cookie;

	if (!rp_redirect)
		return SK_DROP;
	cookie = bpf_get_socket_cookie(skb);
	return bpf_sk_redirect_hash(skb, &rp_socks, &cookie, 0);
}
