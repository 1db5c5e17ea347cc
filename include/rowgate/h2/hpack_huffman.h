/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The HPACK Huffman code (RFC 7541 Appendix B), for userspace: encodes
 * route paths as a client's encoder does (the code is canonical: one
 * string has one encoding), so the kernel compares wire bytes. */
#ifndef ROWGATE_HPACK_HUFFMAN_H
#define ROWGATE_HPACK_HUFFMAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "hpack.h"

/* code of symbol s, right-aligned, and its length in bits; 256 = EOS */
static const uint32_t rg_huff_code[257] = {
	0x1ff8,	    0x7fffd8,  0xfffffe2,  0xfffffe3, 0xfffffe4, 0xfffffe5,  0xfffffe6,	 0xfffffe7,
	0xfffffe8,  0xffffea,  0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb,	 0xfffffec,
	0xfffffed,  0xfffffee, 0xfffffef,  0xffffff0, 0xffffff1, 0xffffff2,  0x3ffffffe, 0xffffff3,
	0xffffff4,  0xffffff5, 0xffffff6,  0xffffff7, 0xffffff8, 0xffffff9,  0xffffffa,	 0xffffffb,
	0x14,	    0x3f8,     0x3f9,	   0xffa,     0x1ff9,	 0x15,	     0xf8,	 0x7fa,
	0x3fa,	    0x3fb,     0xf9,	   0x7fb,     0xfa,	 0x16,	     0x17,	 0x18,
	0x0,	    0x1,       0x2,	   0x19,      0x1a,	 0x1b,	     0x1c,	 0x1d,
	0x1e,	    0x1f,      0x5c,	   0xfb,      0x7ffc,	 0x20,	     0xffb,	 0x3fc,
	0x1ffa,	    0x21,      0x5d,	   0x5e,      0x5f,	 0x60,	     0x61,	 0x62,
	0x63,	    0x64,      0x65,	   0x66,      0x67,	 0x68,	     0x69,	 0x6a,
	0x6b,	    0x6c,      0x6d,	   0x6e,      0x6f,	 0x70,	     0x71,	 0x72,
	0xfc,	    0x73,      0xfd,	   0x1ffb,    0x7fff0,	 0x1ffc,     0x3ffc,	 0x22,
	0x7ffd,	    0x3,       0x23,	   0x4,	      0x24,	 0x5,	     0x25,	 0x26,
	0x27,	    0x6,       0x74,	   0x75,      0x28,	 0x29,	     0x2a,	 0x7,
	0x2b,	    0x76,      0x2c,	   0x8,	      0x9,	 0x2d,	     0x77,	 0x78,
	0x79,	    0x7a,      0x7b,	   0x7ffe,    0x7fc,	 0x3ffd,     0x1ffd,	 0xffffffc,
	0xfffe6,    0x3fffd2,  0xfffe7,	   0xfffe8,   0x3fffd3,	 0x3fffd4,   0x3fffd5,	 0x7fffd9,
	0x3fffd6,   0x7fffda,  0x7fffdb,   0x7fffdc,  0x7fffdd,	 0x7fffde,   0xffffeb,	 0x7fffdf,
	0xffffec,   0xffffed,  0x3fffd7,   0x7fffe0,  0xffffee,	 0x7fffe1,   0x7fffe2,	 0x7fffe3,
	0x7fffe4,   0x1fffdc,  0x3fffd8,   0x7fffe5,  0x3fffd9,	 0x7fffe6,   0x7fffe7,	 0xffffef,
	0x3fffda,   0x1fffdd,  0xfffe9,	   0x3fffdb,  0x3fffdc,	 0x7fffe8,   0x7fffe9,	 0x1fffde,
	0x7fffea,   0x3fffdd,  0x3fffde,   0xfffff0,  0x1fffdf,	 0x3fffdf,   0x7fffeb,	 0x7fffec,
	0x1fffe0,   0x1fffe1,  0x3fffe0,   0x1fffe2,  0x7fffed,	 0x3fffe1,   0x7fffee,	 0x7fffef,
	0xfffea,    0x3fffe2,  0x3fffe3,   0x3fffe4,  0x7ffff0,	 0x3fffe5,   0x3fffe6,	 0x7ffff1,
	0x3ffffe0,  0x3ffffe1, 0xfffeb,	   0x7fff1,   0x3fffe7,	 0x7ffff2,   0x3fffe8,	 0x1ffffec,
	0x3ffffe2,  0x3ffffe3, 0x3ffffe4,  0x7ffffde, 0x7ffffdf, 0x3ffffe5,  0xfffff1,	 0x1ffffed,
	0x7fff2,    0x1fffe3,  0x3ffffe6,  0x7ffffe0, 0x7ffffe1, 0x3ffffe7,  0x7ffffe2,	 0xfffff2,
	0x1fffe4,   0x1fffe5,  0x3ffffe8,  0x3ffffe9, 0xffffffd, 0x7ffffe3,  0x7ffffe4,	 0x7ffffe5,
	0xfffec,    0xfffff3,  0xfffed,	   0x1fffe6,  0x3fffe9,	 0x1fffe7,   0x1fffe8,	 0x7ffff3,
	0x3fffea,   0x3fffeb,  0x1ffffee,  0x1ffffef, 0xfffff4,	 0xfffff5,   0x3ffffea,	 0x7ffff4,
	0x3ffffeb,  0x7ffffe6, 0x3ffffec,  0x3ffffed, 0x7ffffe7, 0x7ffffe8,  0x7ffffe9,	 0x7ffffea,
	0x7ffffeb,  0xffffffe, 0x7ffffec,  0x7ffffed, 0x7ffffee, 0x7ffffef,  0x7fffff0,	 0x3ffffee,
	0x3fffffff,
};

static const uint8_t rg_huff_bits[257] = {
	13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28,
	30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,	8,  11, 10, 10, 8,  11,
	8,  6,	6,  6,	5,  5,	5,  6,	6,  6,	6,  6,	6,  6,	7,  8,	15, 6,	12, 10, 13, 6,
	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,	7,  7,
	8,  7,	8,  13, 19, 13, 14, 6,	15, 5,	6,  5,	6,  5,	6,  6,	6,  5,	7,  7,	6,  6,
	6,  5,	6,  7,	6,  5,	5,  6,	7,  7,	7,  7,	7,  15, 11, 14, 13, 28, 20, 22, 20, 20,
	22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
	22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
	21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23,
	22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26,
	28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27,
	26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
};

/* Encode n bytes of s into out (cap bytes), padding the last byte with the
 * most significant bits of EOS (ones).  Returns the encoded length, or -1
 * when it does not fit; *bits (if set) gets the length without padding. */
static inline int rg_huff_encode(const void *s, size_t n, uint8_t *out, size_t cap, size_t *bits)
{
	const uint8_t *p = s;
	uint64_t acc = 0;
	size_t total = 0, len = 0;
	unsigned int nb = 0;

	for (size_t i = 0; i < n; i++) {
		acc = acc << rg_huff_bits[p[i]] | rg_huff_code[p[i]];
		nb += rg_huff_bits[p[i]];
		total += rg_huff_bits[p[i]];
		while (nb >= 8) {
			if (len >= cap)
				return -1;
			out[len++] = (uint8_t)(acc >> (nb - 8));
			nb -= 8;
		}
		acc &= (1ULL << nb) - 1;
	}
	if (nb) {
		if (len >= cap)
			return -1;
		out[len++] = (uint8_t)(acc << (8 - nb) | (0xffU >> nb));
	}
	if (bits)
		*bits = total;
	return (int)len;
}

/*
 * The gRPC methods rowgated writes into h2_routes
 * (docs/grpc.md#7-path-routing).  GreptimeDatabase's writes are followed:
 * database and rows are read from each message.  GreptimeDB's other
 * methods that store rows name their database in HPACK metadata
 * (`x-greptime-db-name`) or carry rows the verdict cannot count (Arrow
 * IPC, nested OTLP, compressed): their streams are refused, fail closed,
 * unless rowgated runs with --grpc-uncounted pass.  Which of them current
 * GreptimeDB serves: docs/grpc.md section 3.
 */
struct rg_h2_route_path {
	const char *path;
	uint32_t kind; /* struct rg_h2_route's */
};

static const struct rg_h2_route_path rg_h2_route_paths[] = {
	{ "/greptime.v1.GreptimeDatabase/Handle", RG_PROTO_GREPTIME_GRPC | RG_H2_PATH_UNARY },
	{ "/greptime.v1.GreptimeDatabase/HandleRequests", RG_PROTO_GREPTIME_GRPC },
	{ "/arrow.flight.protocol.FlightService/DoPut", RG_PROTO_ARROW_FLIGHT },
	{ "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", RG_PROTO_OTLP_METRICS },
	{ "/opentelemetry.proto.collector.trace.v1.TraceService/Export", RG_PROTO_OTLP_TRACES },
	{ "/opentelemetry.proto.collector.logs.v1.LogsService/Export", RG_PROTO_OTLP_LOGS },
	{ "/opentelemetry.proto.experimental.arrow.v1.ArrowMetricsService/ArrowMetrics",
	  RG_H2_PATH_UNCOUNTED },
	{ "/opentelemetry.proto.experimental.arrow.v1.ArrowTracesService/ArrowTraces",
	  RG_H2_PATH_UNCOUNTED },
	{ "/opentelemetry.proto.experimental.arrow.v1.ArrowLogsService/ArrowLogs",
	  RG_H2_PATH_UNCOUNTED },
};

#define RG_H2_ROUTE_PATHS    (sizeof(rg_h2_route_paths) / sizeof(rg_h2_route_paths[0]))
#define RG_H2_ROUTE_PATH_MAX 255 /* bytes of a route path */

/* Append a key of len bytes of b, coded so, unless it is there already: a
 * coding longer than a key matches by its first RG_HPACK_PATH_BYTES. */
static inline int rg_h2_route_key_add(struct rg_h2_route_key *k, int nk, const uint8_t *b,
				      size_t len, uint8_t coding)
{
	int i;

	if (len > RG_HPACK_PATH_BYTES) {
		len = RG_HPACK_PATH_BYTES;
		coding |= RG_H2_ROUTE_PREFIX;
	}
	memset(&k[nk], 0, sizeof(k[nk]));
	k[nk].len = (uint8_t)len;
	k[nk].coding = coding;
	memcpy(k[nk].b, b, len);
	for (i = 0; i < nk; i++)
		if (!memcmp(&k[i], &k[nk], sizeof(k[i])))
			return nk;
	return nk + 1;
}

/*
 * The h2_routes keys of one gRPC method path: its raw and Huffman-coded
 * wire bytes, and prefix keys for the path followed by '?' or '#' (a query
 * or fragment a URI-path router drops): raw, path + the character;
 * Huffman, the whole bytes of the code of path + the character, which
 * every longer value starting so shares (a value sharing only those bits
 * matches too: the safe side, for a followed and a refused route alike).
 * A coding longer than a key has no exact key, only a prefix key of its
 * first RG_HPACK_PATH_BYTES bytes.  Returns the number of distinct keys
 * written (at most RG_H2_ROUTE_KEYS_PER_PATH), or -1 when the path is
 * empty, not absolute, or over RG_H2_ROUTE_PATH_MAX bytes.
 */
#define RG_H2_ROUTE_KEYS_PER_PATH 6
static inline int rg_h2_route_keys(const char *path, struct rg_h2_route_key *k)
{
	static const char ends[2] = { '?', '#' };
	/* the longest code is 30 bits: 4 bytes a symbol at most */
	uint8_t code[4 * (RG_H2_ROUTE_PATH_MAX + 1)];
	char tmp[RG_H2_ROUTE_PATH_MAX + 1];
	size_t n = strlen(path), bits;
	int e, len, nk = 0;

	if (n == 0 || path[0] != '/' || n > RG_H2_ROUTE_PATH_MAX)
		return -1;
	nk = rg_h2_route_key_add(k, nk, (const uint8_t *)path, n, 0);
	len = rg_huff_encode(path, n, code, sizeof(code), NULL);
	if (len < 0)
		return -1;
	nk = rg_h2_route_key_add(k, nk, code, (size_t)len, RG_H2_ROUTE_HUFFMAN);
	for (e = 0; e < 2; e++) {
		memcpy(tmp, path, n);
		tmp[n] = ends[e];
		nk = rg_h2_route_key_add(k, nk, (const uint8_t *)tmp, n + 1, RG_H2_ROUTE_PREFIX);
		if (rg_huff_encode(tmp, n + 1, code, sizeof(code), &bits) < 0)
			return -1;
		nk = rg_h2_route_key_add(k, nk, code, bits / 8,
					 RG_H2_ROUTE_HUFFMAN | RG_H2_ROUTE_PREFIX);
	}
	return nk;
}

#endif /* ROWGATE_HPACK_HUFFMAN_H */
