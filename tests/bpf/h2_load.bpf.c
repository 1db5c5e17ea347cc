// SPDX-License-Identifier: GPL-2.0
/* The HTTP/2 + gRPC parser (rowgate/h2/) inside an sk_skb verdict, fed
 * from bpf_loop the way the kernel path will feed it: it builds for BPF and
 * passes the verifier (tests/bpf/h2_load.sh; vmtest runs it on 6.1), and
 * parses real gRPC connections in the kernel (tests/bpf/h2_kern.sh).  It
 * parses and counts; it always passes the skb. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
/* every stream is followed as a GreptimeDatabase call */
#define RG_HPACK_ROUTE(t) RG_PROTO_GREPTIME_GRPC
#include "h2_load.h"

/* sockets whose received bytes the verdict parses (tests/bpf/h2_kern.c) */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} h2_socks SEC(".maps");

/* socket cookie -> parser state */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, H2_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct h2_state);
} h2_conns SEC(".maps");

/* a zeroed value to create entries from (too large for the stack) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct h2_state);
} h2_zero SEC(".maps");

struct h2_loop {
	struct __sk_buff *skb;
	struct h2_state *st;
};

static long h2_byte_cb(__u64 idx, void *ctx)
{
	struct h2_loop *l = ctx;
	struct h2_state *st = l->st;
	__u32 p = st->pos, n;
	int r;

	if (p >= st->win_len) {
		__u32 off = st->win_off + st->win_len, left;

		if (off >= l->skb->len)
			return 1;
		left = l->skb->len - off;
		if (left >= H2_WINDOW_BYTES) {
			if (bpf_skb_load_bytes(l->skb, off, st->win, H2_WINDOW_BYTES))
				return 1;
			st->win_len = H2_WINDOW_BYTES;
		} else {
			/* left is in [1, H2_WINDOW_BYTES): written so that Linux
			 * 6.1's verifier sees a non-zero length */
			left = ((left - 1) & (H2_WINDOW_BYTES - 1)) + 1;
			if (bpf_skb_load_bytes(l->skb, off, st->win, left))
				return 1;
			st->win_len = left;
		}
		st->win_off = off;
		st->pos = p = 0;
	}
	n = rg_h2_skippable(&st->h);
	if (n) {
		if (n > st->win_len - p)
			n = st->win_len - p;
		rg_h2_skip(&st->h, n);
		st->pos = p + n;
		return 0;
	}
	r = rg_h2_step(&st->h, st->win[p & (H2_WINDOW_BYTES - 1)]);
	st->pos = p + 1;
	if (r < 0) {
		st->err = r;
		return 1;
	}
	if (r == RG_H2_EV_MESSAGE) {
		__s8 s = st->h.done_slot;

		st->messages++;
		if (s >= 0 && s < RG_H2_STREAM_SLOTS && rg_grpc_charged(&st->h.s[s].m))
			st->rows += st->h.s[s].m.rows;
	}
	return 0;
}

SEC("sk_skb/stream_verdict")
int h2_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct h2_state *st;
	struct h2_loop l;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&h2_conns, &cookie);
	if (!st) {
		struct h2_state *z = bpf_map_lookup_elem(&h2_zero, &zero);

		if (!z)
			return SK_PASS;
		z->h.max_frame = RG_H2_DEFAULT_MAX_FRAME_BYTES;
		z->h.slot = -1;
		z->h.done_slot = -1;
		z->h.hp.max = RG_HPACK_TABLE_MAX_BYTES;
		if (bpf_map_update_elem(&h2_conns, &cookie, z, BPF_NOEXIST))
			return SK_PASS;
		st = bpf_map_lookup_elem(&h2_conns, &cookie);
		if (!st)
			return SK_PASS;
	}
	st->bytes += skb->len;
	if (st->err)
		return SK_PASS;
	st->win_off = 0;
	st->win_len = 0;
	st->pos = 0;
	l.skb = skb;
	l.st = st;
	/* at most one iteration per byte (skips take fewer) */
	bpf_loop(skb->len, h2_byte_cb, &l, 0);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
