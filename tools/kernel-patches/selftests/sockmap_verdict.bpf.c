// SPDX-License-Identifier: GPL-2.0
/* Verdict-only sockmap programs for the selftests of the series
 * (README.md): one sockmap, an sk_skb stream_verdict that returns SK_DROP
 * or SK_PASS for every skb and counts what it saw.  No parser, no state.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} sock_map SEC(".maps");

__u64 skbs = 0;   /* skbs the verdict saw */
__u64 bytes = 0;  /* their bytes */

SEC("sk_skb/stream_verdict")
int verdict_drop(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&skbs, 1);
	__sync_fetch_and_add(&bytes, skb->len);
	return SK_DROP;
}

SEC("sk_skb/stream_verdict")
int verdict_pass(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&skbs, 1);
	__sync_fetch_and_add(&bytes, skb->len);
	return SK_PASS;
}

/* Bug 3's test: put the passively established sockets of one port in the
 * sockmap (slot 0) from sockops, before the server accept()s them. */
const volatile __u32 port = 0; /* host byte order */

SEC("sockops")
int sockops_add(struct bpf_sock_ops *skops)
{
	__u32 key = 0;

	if (skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB && skops->local_port == port)
		bpf_sock_map_update(skops, &sock_map, &key, BPF_ANY);
	return 1;
}
