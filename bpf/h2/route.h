/* SPDX-License-Identifier: GPL-2.0 */
/* gRPC method routes (docs/grpc.md#7-path-routing): h2_routes, written
 * by rowgated, and rg_h2_route_kind, the lookup of the `:path` the HPACK
 * shadow read. */
#ifndef ROWGATE_BPF_H2_ROUTE_H
#define ROWGATE_BPF_H2_ROUTE_H

#include "../base.h"
#include "rowgate/h2/hpack.h"

/* h2_routes: a gRPC method path's wire bytes (raw or Huffman, whole or a
 * prefix) -> route; key {0, 0} lists the prefix lengths, written last:
 * until it is there every stream is followed.  Written by rowgated at
 * each start (rgd_populate_h2_routes); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_H2_MAX_ROUTES);
	__type(key, struct rg_h2_route_key);
	__type(value, struct rg_h2_route);
} RG_MAP_H2_ROUTES SEC(".maps");

/* h2_route_key: [0] -> scratch for an h2_routes key (the stack of the
 * byte loop's call chain is nearly full); not pinned */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_h2_route_key);
} h2_route_key SEC(".maps");

/* The kind (enum rg_h2_path) of the `:path` the HPACK shadow just read: the whole value,
 * then each prefix length, looked up in h2_routes.  A global function:
 * verified once. */
__attribute__((noinline)) int rg_h2_route_kind(struct rg_hpack *t)
{
	struct rg_h2_route_key *k;
	struct rg_h2_route *lens, *r;
	__u32 i, j, zero = 0;
	__u8 huff, l;

	if (!t)
		return RG_PROTO_GREPTIME_GRPC;
	k = bpf_map_lookup_elem(&h2_route_key, &zero);
	if (!k)
		return RG_PROTO_GREPTIME_GRPC; /* cannot happen: followed, the safe side */
	huff = t->huff ? RG_H2_ROUTE_HUFFMAN : 0;
	__builtin_memset(k, 0, sizeof(*k));
	if (t->slen <= RG_HPACK_PATH_BYTES) {
		k->len = (__u8)t->slen;
		k->coding = huff;
		__builtin_memcpy(k->b, t->path, RG_HPACK_PATH_BYTES);
		r = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
		if (r)
			return r->kind;
	}
	__builtin_memset(k, 0, sizeof(*k));
	lens = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
	if (!lens)
		return RG_PROTO_GREPTIME_GRPC; /* routes not written yet: follow all */
	for (j = 0; j < RG_H2_ROUTE_LENS; j++) {
		l = lens->prefix_lens[j];
		if (l == 0 || l > t->slen || l > RG_HPACK_PATH_BYTES)
			continue;
		k->len = l;
		k->coding = huff | RG_H2_ROUTE_PREFIX;
		/* the first l bytes, zero after: no branch per byte */
		for (i = 0; i < RG_HPACK_PATH_BYTES; i++)
			k->b[i] = t->path[i] & (__u8)(0 - rg_hpack_ge(l, i + 1));
		r = bpf_map_lookup_elem(&RG_MAP_H2_ROUTES, k);
		if (r)
			return r->kind;
	}
	return RG_H2_PATH_OTHER;
}

#endif /* ROWGATE_BPF_H2_ROUTE_H */
