// SPDX-License-Identifier: GPL-2.0
// vmtest's own BPF object: exercises, on each kernel in vmtest/kernels, the
// features rowgate depends on (BTF-defined maps, a sockhash, sockops, an
// sk_skb verdict, CO-RE reads through bpf_skc_to_tcp_sock, bpf_loop, XDP) so
// that the VM machinery is proven even before bpf/ has objects.  Loaded, not
// attached, by vmtest/smoke/selftest.sh; never shipped.
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#define SELFTEST_LOOP_STEPS 16 // bpf_loop iterations in the XDP program

// key: 0; value: packets seen by the XDP program
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} selftest_counts SEC(".maps");

// key: local port; value: socket, as rowgate's sockops fills its sockhash
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} selftest_socks SEC(".maps");

struct loop_ctx {
	__u64 sum;
};

static long loop_step(__u32 i, void *data)
{
	struct loop_ctx *ctx = data;

	ctx->sum += i;
	return 0;
}

SEC("xdp")
int selftest_xdp(struct xdp_md *xdp)
{
	struct loop_ctx lctx = {};
	__u32 key = 0;
	__u64 *count;

	bpf_loop(SELFTEST_LOOP_STEPS, loop_step, &lctx, 0);
	count = bpf_map_lookup_elem(&selftest_counts, &key);
	if (count)
		__sync_fetch_and_add(count, lctx.sum ? 1 : 0);
	(void)xdp;
	return XDP_PASS;
}

SEC("sockops")
int selftest_sockops(struct bpf_sock_ops *ops)
{
	__u32 port = ops->local_port;

	if (ops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		bpf_sock_hash_update(ops, &selftest_socks, &port, BPF_ANY);
	return 1;
}

SEC("sk_skb")
int selftest_verdict(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct tcp_sock *tp;
	__u32 write_seq = 0;

	if (!sk)
		return SK_PASS;
	tp = bpf_skc_to_tcp_sock(sk);
	if (tp)
		write_seq = BPF_CORE_READ(tp, write_seq);
	return write_seq == 1 ? SK_DROP : SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
