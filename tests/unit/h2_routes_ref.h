// SPDX-License-Identifier: MIT
/* The h2_routes map as rowgated fills it (rg_h2_route_paths), and the
 * lookups bpf/h2/route.h makes in it, for the userspace runs of rowgate/h2/hpack.h
 * (unit/test_h2, fuzz_h2).  The includer declares
 *	static int test_route(const struct rg_hpack *t);
 *	#define RG_HPACK_ROUTE(t) test_route(t)
 * before rowgate/h2/frame.h, and includes this after rowgate/h2/hpack_huffman.h. */
#ifndef ROWGATE_H2_ROUTES_REF_H
#define ROWGATE_H2_ROUTES_REF_H

#include <stdbool.h>
#include <string.h>

#define ROUTE_HANDLE	      "/greptime.v1.GreptimeDatabase/Handle"
#define ROUTE_HANDLE_REQUESTS "/greptime.v1.GreptimeDatabase/HandleRequests"

static struct rg_h2_route_key route_keys[RG_H2_ROUTE_PATHS * RG_H2_ROUTE_KEYS_PER_PATH];
static uint32_t route_kinds[RG_H2_ROUTE_PATHS * RG_H2_ROUTE_KEYS_PER_PATH];
static int nroute_keys;

/* rowgated's rg_h2_route_paths, as rgd_populate_h2_routes writes them
 * (--grpc-uncounted refuse): a key two paths share keeps the later one */
static void routes_init(void)
{
	size_t i;

	if (nroute_keys)
		return;
	for (i = 0; i < RG_H2_ROUTE_PATHS; i++) {
		int n = rg_h2_route_keys(rg_h2_route_paths[i].path, route_keys + nroute_keys);

		for (int k = 0; k < n; k++)
			route_kinds[nroute_keys + k] = rg_h2_route_paths[i].kind;
		if (n > 0)
			nroute_keys += n;
	}
}

/* The kind of key k in the map, 0 if absent. */
static int route_found(const struct rg_h2_route_key *k)
{
	int i, kind = 0;

	for (i = 0; i < nroute_keys; i++)
		if (!memcmp(&route_keys[i], k, sizeof(*k)))
			kind = (int)route_kinds[i];
	return kind;
}

/* The lookups bpf/h2/route.h makes in h2_routes: the whole value, then each
 * prefix length a key has. */
static int test_route(const struct rg_hpack *t)
{
	struct rg_h2_route_key k;
	int i, kind;

	memset(&k, 0, sizeof(k));
	if (t->slen <= RG_HPACK_PATH_BYTES) {
		k.len = (uint8_t)t->slen;
		k.coding = t->huff ? RG_H2_ROUTE_HUFFMAN : 0;
		memcpy(k.b, t->path, t->slen);
		kind = route_found(&k);
		if (kind)
			return kind;
	}
	for (i = 0; i < nroute_keys; i++) {
		uint8_t l = route_keys[i].len;

		if (!(route_keys[i].coding & RG_H2_ROUTE_PREFIX) || l > t->slen)
			continue;
		memset(&k, 0, sizeof(k));
		k.len = l;
		k.coding = (t->huff ? RG_H2_ROUTE_HUFFMAN : 0) | RG_H2_ROUTE_PREFIX;
		memcpy(k.b, t->path, l);
		kind = route_found(&k);
		if (kind)
			return kind;
	}
	return RG_H2_PATH_OTHER;
}

#endif
