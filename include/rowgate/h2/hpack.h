/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* HPACK (RFC 7541) of a client's header blocks, read one byte per step as
 * the server's decoder reads them, for one thing: each block's `:path`
 * kind (the protocol of a routed gRPC method, another path).  It keeps a
 * shadow of the client->server dynamic table: per entry its size (name +
 * value + 32, decoded lengths), its name's length and whether it is a
 * `:path` and of which kind, evicted exactly as RFC 7541 §4.  Huffman
 * strings are not decoded: their decoded length is counted (the code is
 * canonical: a symbol's length follows from its first 30 bits), and a
 * `:path` is compared by its wire bytes with the route paths' raw and
 * Huffman encodings (docs/grpc.md#7-path-routing).  It also decodes the
 * value of `x-greptime-db-name`, the metadata that names the database of a
 * gRPC write whose message does not (OTLP, Flight DoPut): the server reads
 * it, so the shadow must (docs/grpc.md#header-db).  Errors are negative:
 * what the server's decoder refuses, and what this shadow cannot follow. */
#ifndef ROWGATE_HPACK_H
#define ROWGATE_HPACK_H

#include "../types.h"
#include "../abi.h" /* RG_DB_NAME_MAX */

#define RG_HPACK_STATIC_ENTRIES 61
/* SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2): a size
 * update above it is not followed (fail closed) */
#define RG_HPACK_TABLE_MAX_BYTES 4096
#define RG_HPACK_ENTRY_OVERHEAD	 32 /* RFC 7541 §4.1 */
/* entries a table of RG_HPACK_TABLE_MAX_BYTES can hold; a power of two */
#define RG_HPACK_ENTRIES 128
#define RG_HPACK_INT_MAX (1U << 24) /* integers above: fail closed */
/* wire bytes of a `:path` kept to compare with routes; a longer value
 * matches only prefix routes */
#define RG_HPACK_PATH_BYTES	  64
#define RG_HPACK_HUFF_WINDOW_BITS 30 /* the longest code (EOS) */

#define RG_HPACK_ERR -7 /* same value as RG_H2_ERR_HPACK */

/* The kind of a `:path`, one encoding for the route that names it
 * (h2_routes), the shadow's fields, dynamic-table entries and blocks: the
 * enum rg_protocol of the gRPC method (RG_PROTO_GREPTIME_GRPC: followed,
 * each message read; RG_PROTO_OTLP_* and RG_PROTO_ARROW_FLIGHT: their
 * database is the block's `x-greptime-db-name`, docs/grpc.md#otlp),
 * RG_PROTO_NONE for a field that is no `:path`, or one of the outcomes
 * that are no protocol: */
enum rg_h2_path {
	RG_H2_PATH_OTHER = 14, /* a `:path` no route names: passed unread */
	/* a method that writes rows the kernel cannot count: refused */
	RG_H2_PATH_UNCOUNTED = 15,
};
_Static_assert((int)RG_PROTO_MAX <= (int)RG_H2_PATH_OTHER, "protocol ids below `:path` outcomes");
#define RG_H2_PATH_KIND 15 /* the bits of a kind (4 in ent_bits) */
/* beside a kind: a unary method (GreptimeDatabase/Handle): tonic and
 * grpc-go hand its handler the first request message and drop the rest
 * (rg_h2_unary_open) */
#define RG_H2_PATH_UNARY 16

/* Whether a kind's database is its block's `x-greptime-db-name`: its
 * messages do not name one (an OTLP export, a Flight DoPut). */
RG_INLINE bool rg_h2_path_header_db(__u32 k)
{
	return rg_protocol_otlp(k) || k == RG_PROTO_ARROW_FLIGHT;
}

/* ent_bits: bit 0 the name is `:path`, bits 1-5 its kind and
 * RG_H2_PATH_UNARY, bit 6 the name is `x-greptime-db-name` */
#define RG_HPACK_F_PATH_NAME  1
#define RG_HPACK_F_KIND_SHIFT 1
#define RG_HPACK_F_DB_NAME    64

/* blk_bits: a `:path` of another kind than the block's first (blk_kind)
 * came, both mixable (rg_hpack_mixable): the block is followed; either
 * not (an uncounted method, an export's or DoPut's `:path` beside any
 * other: not ours to guess): refused.  And RG_H2_PATH_UNARY. */
#define RG_HPACK_BLK_MIXED    1
#define RG_HPACK_BLK_CONFLICT 2

/* Values of `x-greptime-db-name` the connection's fields carry, decoded:
 * dynamic-table entries and the block refer to them by slot.  A slot is
 * reused round-robin; an entry whose slot was reused since names a
 * database the shadow no longer knows (RG_HPACK_DB_LOST). */
#define RG_HPACK_DB_SLOTS 8 /* a power of two */
/* blk_db beyond a slot: */
#define RG_HPACK_DB_MANY 0xfe /* the block has more than one such field */
#define RG_HPACK_DB_LOST 0xff /* it refers to an entry whose value is lost */

enum rg_hpack_state {
	RG_HPS_REP = 0, /* first byte of a representation */
	RG_HPS_INT,	/* continuation bytes of an integer */
	RG_HPS_STRLEN,	/* first byte of a string: H bit and length prefix */
	RG_HPS_STR,	/* string bytes */
};

/* What the integer being read is. */
enum rg_hpack_int {
	RG_HPI_INDEX = 0,  /* indexed field */
	RG_HPI_NAME_INDEX, /* literal field: its name's index, 0 = literal */
	RG_HPI_SIZE,	   /* dynamic table size update */
	RG_HPI_STRLEN,	   /* a string's length */
};

enum rg_hpack_rep {
	RG_HPR_INDEXED = 0,
	RG_HPR_INC,   /* literal with incremental indexing */
	RG_HPR_NOIDX, /* literal without indexing, or never indexed */
};

/* gRPC routes (map h2_routes, written by rowgated): a `:path`'s wire
 * bytes, zero padded, and how they are coded.  A prefix key matches the
 * first len bytes of a longer value: a route path followed by '?' or '#'
 * is that route to a server that routes by the URI's path (tonic). */
#define RG_MAP_H2_ROUTES    h2_routes
#define RG_H2_ROUTE_HUFFMAN 1  /* key.coding: Huffman coded */
#define RG_H2_ROUTE_PREFIX  2  /* key.coding: matches a longer value */
#define RG_H2_ROUTE_LENS    24 /* distinct prefix lengths */
#define RG_H2_MAX_ROUTES    128
struct rg_h2_route_key {
	__u8 len;    /* 0 with coding 0: the entry listing prefix lengths */
	__u8 coding; /* RG_H2_ROUTE_* */
	__u8 pad[2];
	__u8 b[RG_HPACK_PATH_BYTES];
};

struct rg_h2_route {
	__u32 kind; /* enum rg_h2_path: a protocol or uncounted, | RG_H2_PATH_UNARY */
	__u8 prefix_lens[RG_H2_ROUTE_LENS]; /* lengths of prefix keys, 0: none */
};

/* A value of `x-greptime-db-name`: its first RG_DB_NAME_MAX - 1 bytes,
 * zero padded (a longer one is known by its length). */
struct rg_hpack_db {
	union {
		char c[RG_DB_NAME_MAX];
		__u64 w[RG_DB_NAME_MAX / 8];
	};
};

struct rg_hpack {
	__u32 max;   /* dynamic table size (RFC 7541 §4.2) */
	__u32 used;  /* sum of entry sizes */
	__u32 count; /* entries */
	__u32 head;  /* ring position after the newest entry */
	__u32 ival;  /* integer being read */
	__u32 left;  /* string bytes to go */
	__u32 slen;  /* the string's wire length */
	__u32 dlen;  /* decoded length so far (Huffman: symbols counted) */
	__u32 name_len;
	__u64 acc; /* Huffman bits not counted yet */
	__u8 nbits;
	__u8 st;   /* enum rg_hpack_state */
	__u8 what; /* enum rg_hpack_int */
	__u8 rep;  /* enum rg_hpack_rep */
	__u8 ishift;
	__u8 huff;     /* the string is Huffman coded */
	__u8 in_value; /* the string is the value (else the name) */
	__u8 is_path;  /* the field's name is `:path` */
	__u8 name_pos; /* literal name bytes equal to `:path` so far; 0xff: differs */
	__u8 kind;     /* the field's `:path` kind (enum rg_h2_path) */
	__u8 blk_kind; /* the kind of the block's first `:path`, 0: none */
	__u8 is_db;    /* the field's name is `x-greptime-db-name` */
	__u8 db_pos;   /* literal name bytes equal to it so far; 0xff: differs */
	__u8 db_slot;  /* the field's value: its slot */
	__u8 blk_db;   /* the block's `x-greptime-db-name`: slot + 1, 0: none,
			* or RG_HPACK_DB_MANY, RG_HPACK_DB_LOST */
	__u8 db_next;  /* the slot a new value takes */
	__u8 db_used;  /* bit per slot holding a value */
	__u8 blk_bits; /* RG_HPACK_BLK_*, RG_H2_PATH_UNARY */
	__u8 pad3;
	__u16 ent_size[RG_HPACK_ENTRIES];
	__u16 ent_name[RG_HPACK_ENTRIES];
	__u8 ent_bits[RG_HPACK_ENTRIES];
	/* a db-name entry's value: its slot, RG_HPACK_DB_LOST once the slot
	 * took another value */
	__u8 ent_db[RG_HPACK_ENTRIES];
	__u8 path[RG_HPACK_PATH_BYTES];		  /* the `:path` being read, zero padded */
	__u8 db_len[RG_HPACK_DB_SLOTS];		  /* decoded length, 255: 255 or more */
	struct rg_hpack_db dbv;			  /* the value being read */
	struct rg_hpack_db db[RG_HPACK_DB_SLOTS]; /* the slots' values */
};

/* The kind of the `:path` in t->path (t->slen wire bytes, t->huff): the
 * includer may define RG_HPACK_ROUTE(t) before including; without it
 * every path is routed (followed as a GreptimeDatabase call) in userspace,
 * and looked up by rg_h2_route_kind() in BPF. */
#ifndef RG_HPACK_ROUTE
#ifdef __bpf__
/* the verdict's lookup in h2_routes (bpf/h2/route.h) */
__attribute__((noinline)) int rg_h2_route_kind(struct rg_hpack *t);
#define RG_HPACK_ROUTE(t) rg_h2_route_kind(t)
#else
#define RG_HPACK_ROUTE(t) RG_PROTO_GREPTIME_GRPC
#endif
#endif

/* In BPF the step and the eviction are global functions: verified once,
 * not once per path of the byte loop that calls them. */
#ifdef __bpf__
#define RG_HPACK_FN __attribute__((noinline))
#else
#define RG_HPACK_FN static inline
#endif

RG_INLINE void rg_hpack_init(struct rg_hpack *t)
{
	__builtin_memset(t, 0, sizeof(*t));
	t->max = RG_HPACK_TABLE_MAX_BYTES;
}

/* Name lengths of the static table (RFC 7541 Appendix A), 1-based. */
RG_INLINE __u32 rg_hpack_static_name_len(__u32 i)
{
	switch (i) {
	case 1:
	case 55:
	case 58:
		return 10;
	case 2:
	case 3:
	case 6:
	case 7:
	case 8:
	case 9:
	case 10:
	case 11:
	case 12:
	case 13:
	case 14:
	case 36:
	case 51:
	case 52:
		return 7;
	case 4:
	case 5:
	case 22:
	case 50:
		return 5;
	case 15:
	case 28:
		return 14;
	case 16:
	case 17:
		return 15;
	case 18:
	case 23:
	case 24:
	case 30:
	case 41:
	case 44:
		return 13;
	case 19:
	case 32:
	case 35:
	case 54:
		return 6;
	case 20:
		return 27;
	case 21:
	case 60:
		return 3;
	case 25:
	case 43:
	case 49:
		return 19;
	case 26:
	case 27:
	case 29:
	case 61:
		return 16;
	case 31:
	case 47:
		return 12;
	case 33:
	case 34:
	case 37:
	case 38:
	case 45:
	case 59:
		return 4;
	case 39:
	case 42:
	case 46:
		return 8;
	case 40:
	case 57:
		return 17;
	case 48:
		return 18;
	case 53:
		return 11;
	case 56:
		return 25;
	}
	return 0;
}

/* Byte i of `:path`, raw or Huffman coded (b9 58 d3 3f). */
RG_INLINE int rg_hpack_path_name_byte(bool huff, __u32 i)
{
	if (huff) {
		switch (i) {
		case 0:
			return 0xb9;
		case 1:
			return 0x58;
		case 2:
			return 0xd3;
		case 3:
			return 0x3f;
		}
		return -1;
	}
	switch (i) {
	case 0:
		return ':';
	case 1:
		return 'p';
	case 2:
		return 'a';
	case 3:
		return 't';
	case 4:
		return 'h';
	}
	return -1;
}

#define RG_HPACK_PATH_NAME_RAW	5
#define RG_HPACK_PATH_NAME_HUFF 4

/* `x-greptime-db-name`, raw and Huffman coded. */
#define RG_HPACK_DB_NAME_RAW  18
#define RG_HPACK_DB_NAME_HUFF 13
static const __u8 rg_hpack_db_name_raw[RG_HPACK_DB_NAME_RAW] = "x-greptime-db-name";
static const __u8 rg_hpack_db_name_huff[RG_HPACK_DB_NAME_HUFF] = {
	0xf2, 0xb4, 0xd6, 0x16, 0xb4, 0x9a, 0x92, 0xad, 0x24, 0x6b, 0x54, 0x3a, 0x4b,
};

/* Byte i of `x-greptime-db-name`, raw or Huffman coded. */
RG_INLINE int rg_hpack_db_name_byte(bool huff, __u32 i)
{
	if (huff)
		return i < RG_HPACK_DB_NAME_HUFF ? rg_hpack_db_name_huff[i] : -1;
	return i < RG_HPACK_DB_NAME_RAW ? rg_hpack_db_name_raw[i] : -1;
}

/* The Huffman code's symbols in code order (RFC 7541 Appendix B is
 * canonical: by length, then by symbol), EOS left out; per code length,
 * its first code and that code's place in the order.  unit/test_h2 checks
 * them against the encoder's table. */
static const __u8 rg_hpack_huff_syms[256] = {
	48,  49,  50,  97,  99,	 101, 105, 111, 115, 116, 32,  37,  45,	 46,  47,  51,	52,  53,
	54,  55,  56,  57,  61,	 65,  95,  98,	100, 102, 103, 104, 108, 109, 110, 112, 114, 117,
	58,  66,  67,  68,  69,	 70,  71,  72,	73,  74,  75,  76,  77,	 78,  79,  80,	81,  82,
	83,  84,  85,  86,  87,	 89,  106, 107, 113, 118, 119, 120, 121, 122, 38,  42,	44,  59,
	88,  90,  33,  34,  40,	 41,  63,  39,	43,  124, 35,  62,  0,	 36,  64,  91,	93,  126,
	94,  125, 60,  96,  123, 92,  195, 208, 128, 130, 131, 162, 184, 194, 224, 226, 153, 161,
	167, 172, 176, 177, 179, 209, 216, 217, 227, 229, 230, 129, 132, 133, 134, 136, 146, 154,
	156, 160, 163, 164, 169, 170, 173, 178, 181, 185, 186, 187, 189, 190, 196, 198, 228, 232,
	233, 1,	  135, 137, 138, 139, 140, 141, 143, 147, 149, 150, 151, 152, 155, 157, 158, 165,
	166, 168, 174, 175, 180, 182, 183, 188, 191, 197, 231, 239, 9,	 142, 144, 145, 148, 159,
	171, 206, 215, 225, 236, 237, 199, 207, 234, 235, 192, 193, 200, 201, 202, 205, 210, 213,
	218, 219, 238, 240, 242, 243, 255, 203, 204, 211, 212, 214, 221, 222, 223, 241, 244, 245,
	246, 247, 248, 250, 251, 252, 253, 254, 2,   3,	  4,   5,   6,	 7,   8,   11,	12,  14,
	15,  16,  17,  18,  19,	 20,  21,  23,	24,  25,  26,  27,  28,	 29,  30,  31,	127, 220,
	249, 10,  13,  22,
};

static const __u32 rg_hpack_huff_first[32] = {
	[5] = 0x0,	   [6] = 0x14,	     [7] = 0x5c,       [8] = 0xf8,	 [10] = 0x3f8,
	[11] = 0x7fa,	   [12] = 0xffa,     [13] = 0x1ff8,    [14] = 0x3ffc,	 [15] = 0x7ffc,
	[19] = 0x7fff0,	   [20] = 0xfffe6,   [21] = 0x1fffdc,  [22] = 0x3fffd2,	 [23] = 0x7fffd8,
	[24] = 0xffffea,   [25] = 0x1ffffec, [26] = 0x3ffffe0, [27] = 0x7ffffde, [28] = 0xfffffe2,
	[30] = 0x3ffffffc,
};

static const __u16 rg_hpack_huff_first_idx[32] = {
	[5] = 0,    [6] = 10,	[7] = 36,   [8] = 68,	[10] = 74,  [11] = 79,	[12] = 82,
	[13] = 84,  [14] = 90,	[15] = 92,  [19] = 95,	[20] = 98,  [21] = 106, [22] = 119,
	[23] = 145, [24] = 174, [25] = 186, [26] = 190, [27] = 205, [28] = 224, [30] = 253,
};

/* The symbol of the code of `bits` bits at the top of the 30-bit window v. */
RG_INLINE __u8 rg_hpack_huff_sym(__u32 v, __u32 bits)
{
	__u32 b = bits & 31, code = v >> ((RG_HPACK_HUFF_WINDOW_BITS - b) & 31);

	return rg_hpack_huff_syms[(rg_hpack_huff_first_idx[b] + code - rg_hpack_huff_first[b]) & 255];
}

/* Length of the Huffman code starting the 30-bit window v (RFC 7541
 * Appendix B is canonical: codes of one length are consecutive and
 * ordered by length, so each length ends at a fixed window value). */
/* 1 when v >= lim, without a branch: the verifier follows one path, not
 * one per code length.  Verifier workaround: the asm keeps clang from
 * turning the arithmetic back into a compare and jump. */
RG_INLINE __u32 rg_hpack_ge(__u32 v, __u32 lim)
{
	__u64 d = (__u64)v - lim;

#ifdef __bpf__
	asm volatile("" : "+r"(d));
#endif
	return (__u32)((d >> 63) ^ 1);
}

RG_HPACK_FN __u32 rg_hpack_code_bits(__u32 v)
{
	__u32 bits = 5;

	bits += 1 * rg_hpack_ge(v, 0x14000000U);
	bits += 1 * rg_hpack_ge(v, 0x2e000000U);
	bits += 1 * rg_hpack_ge(v, 0x3e000000U);
	bits += 2 * rg_hpack_ge(v, 0x3f800000U);
	bits += 1 * rg_hpack_ge(v, 0x3fd00000U);
	bits += 1 * rg_hpack_ge(v, 0x3fe80000U);
	bits += 1 * rg_hpack_ge(v, 0x3ff00000U);
	bits += 1 * rg_hpack_ge(v, 0x3ffc0000U);
	bits += 1 * rg_hpack_ge(v, 0x3ffe0000U);
	bits += 4 * rg_hpack_ge(v, 0x3fff8000U);
	bits += 1 * rg_hpack_ge(v, 0x3fff9800U);
	bits += 1 * rg_hpack_ge(v, 0x3fffb800U);
	bits += 1 * rg_hpack_ge(v, 0x3fffd200U);
	bits += 1 * rg_hpack_ge(v, 0x3fffec00U);
	bits += 1 * rg_hpack_ge(v, 0x3ffffa80U);
	bits += 1 * rg_hpack_ge(v, 0x3ffffd80U);
	bits += 1 * rg_hpack_ge(v, 0x3ffffe00U);
	bits += 1 * rg_hpack_ge(v, 0x3ffffef0U);
	bits += 1 * rg_hpack_ge(v, 0x3fffff88U);
	bits += 2 * rg_hpack_ge(v, 0x3ffffffcU);
	return bits;
}

/* Count the symbol at the top of the bits held, if there are 30 of them
 * (or at the string's end, pad with ones).  Returns 1 counted, 0 not
 * enough bits, negative: EOS inside the string. */
RG_INLINE int rg_hpack_huff_one(struct rg_hpack *t, bool end)
{
	__u32 n = t->nbits, v, bits;

	if (n == 0 || (!end && n < RG_HPACK_HUFF_WINDOW_BITS))
		return 0;
	if (n >= RG_HPACK_HUFF_WINDOW_BITS)
		v = (__u32)(t->acc >> (n - RG_HPACK_HUFF_WINDOW_BITS)) & 0x3fffffffU;
	else
		v = (__u32)((t->acc << (RG_HPACK_HUFF_WINDOW_BITS - n)) |
			    ((1ULL << (RG_HPACK_HUFF_WINDOW_BITS - n)) - 1)) &
		    0x3fffffffU;
	bits = rg_hpack_code_bits(v);
	if (bits == RG_HPACK_HUFF_WINDOW_BITS && n >= RG_HPACK_HUFF_WINDOW_BITS)
		return RG_HPACK_ERR; /* EOS in a string (RFC 7541 §5.2) */
	if (bits > n)
		return 0; /* the rest is padding */
	if (t->is_db && t->in_value && t->dlen < RG_DB_NAME_MAX - 1)
		t->dbv.c[t->dlen & (RG_DB_NAME_MAX - 1)] = (char)rg_hpack_huff_sym(v, bits);
	t->nbits = (__u8)(n - bits);
	t->acc &= (1ULL << t->nbits) - 1;
	t->dlen++;
	return 1;
}

/* One byte of a Huffman string whose decoded length is needed. */
RG_INLINE int rg_hpack_huff_byte(struct rg_hpack *t, __u8 c)
{
	int r;

	t->acc = (t->acc << 8) | c;
	t->nbits += 8;
	/* 8 bits in, at least 5 out per symbol: two rounds keep nbits < 30 */
	r = rg_hpack_huff_one(t, false);
	if (r > 0)
		r = rg_hpack_huff_one(t, false);
	return r < 0 ? r : 0;
}

/* The string's end: count what is left; the padding must be under 8
 * bits, all ones (RFC 7541 §5.2). */
RG_INLINE int rg_hpack_huff_end(struct rg_hpack *t)
{
	int i, r;

	/* under 30 bits held, codes of 5 bits or more: at most 5 symbols */
	for (i = 0; i < 6; i++) {
		r = rg_hpack_huff_one(t, true);
		if (r < 0)
			return r;
		if (r == 0)
			break;
	}
	if (t->nbits > 7 || t->acc != (1ULL << t->nbits) - 1)
		return RG_HPACK_ERR;
	return 0;
}

/* Evict the oldest entries until extra more bytes fit (RFC 7541 §4.4). */
RG_HPACK_FN int rg_hpack_evict(struct rg_hpack *t, __u32 extra)
{
	__u32 i, pos;

	if (!t)
		return RG_HPACK_ERR;
	for (i = 0; i < RG_HPACK_ENTRIES; i++) {
		if (!t->count || t->used + extra <= t->max)
			break;
		pos = (t->head - t->count) & (RG_HPACK_ENTRIES - 1);
		t->used -= t->ent_size[pos];
		t->count--;
	}
	return 0;
}

RG_INLINE void rg_hpack_insert(struct rg_hpack *t, __u32 size, __u32 name_len, __u8 bits,
			       __u8 db_slot)
{
	__u32 pos;

	if (size > t->max) {
		/* a too large entry empties the table and is not added */
		t->count = 0;
		t->used = 0;
		return;
	}
	rg_hpack_evict(t, size);
	if (t->count >= RG_HPACK_ENTRIES) {
		/* cannot happen at 32 bytes an entry within 4096 */
		pos = (t->head - t->count) & (RG_HPACK_ENTRIES - 1);
		t->used -= t->ent_size[pos];
		t->count--;
	}
	pos = t->head & (RG_HPACK_ENTRIES - 1);
	t->ent_size[pos] = (__u16)size;
	t->ent_name[pos] = (__u16)name_len;
	t->ent_bits[pos] = bits;
	t->ent_db[pos] = db_slot;
	t->head++;
	t->count++;
	t->used += size;
}

/* Ring position of dynamic index i (1 = newest), -1 if none. */
RG_INLINE int rg_hpack_dyn(const struct rg_hpack *t, __u32 i)
{
	if (i == 0 || i > t->count)
		return -1;
	return (int)((t->head - i) & (RG_HPACK_ENTRIES - 1));
}

/* Whether a `:path` of this kind may share a block with one of another:
 * a routed method's and an unrouted path's (the block is followed, the
 * safe side), never an uncounted method's or one whose database is the
 * block's. */
RG_INLINE bool rg_hpack_mixable(__u32 k)
{
	return k == RG_PROTO_GREPTIME_GRPC || k == RG_H2_PATH_OTHER;
}

/* The block has a `:path` of the field's kind. */
RG_INLINE void rg_hpack_block_path(struct rg_hpack *t)
{
	__u8 k = t->kind & RG_H2_PATH_KIND;

	t->blk_bits |= t->kind & RG_H2_PATH_UNARY;
	if (!t->blk_kind)
		t->blk_kind = k;
	else if (k != t->blk_kind)
		t->blk_bits |= rg_hpack_mixable(k) && rg_hpack_mixable(t->blk_kind) ?
				       RG_HPACK_BLK_MIXED :
				       RG_HPACK_BLK_CONFLICT;
}

/* A field is complete. */
RG_INLINE void rg_hpack_field_done(struct rg_hpack *t, __u32 value_len)
{
	if (t->rep == RG_HPR_INC)
		rg_hpack_insert(t, t->name_len + value_len + RG_HPACK_ENTRY_OVERHEAD, t->name_len,
				(__u8)((t->is_path ? RG_HPACK_F_PATH_NAME : 0) |
				       (t->is_db ? RG_HPACK_F_DB_NAME : 0) |
				       (t->kind << RG_HPACK_F_KIND_SHIFT)),
				t->db_slot);
	if (t->is_path)
		rg_hpack_block_path(t);
	if (t->is_db)
		t->blk_db = t->blk_db			    ? RG_HPACK_DB_MANY :
			    t->db_slot >= RG_HPACK_DB_SLOTS ? RG_HPACK_DB_LOST :
							      t->db_slot + 1;
	t->st = RG_HPS_REP;
}

/* A db-name field's value is read (t->dbv, t->dlen bytes): the slot that
 * holds it, a new one if none does.  The entries that named the value the
 * new one replaces lose it. */
RG_HPACK_FN int rg_hpack_db_store(struct rg_hpack *t)
{
	__u32 i, j, len, diff;

	if (!t)
		return RG_HPACK_ERR;
	len = t->dlen > 255 ? 255 : t->dlen;
	for (i = 0; i < RG_HPACK_DB_SLOTS; i++) {
		if (!(t->db_used & (1U << i)) || t->db_len[i] != len)
			continue;
		diff = 0;
		for (j = 0; j < RG_DB_NAME_MAX / 8; j++)
			diff |= t->db[i].w[j] != t->dbv.w[j];
		if (!diff) {
			t->db_slot = (__u8)i;
			return 0;
		}
	}
	i = t->db_next++ & (RG_HPACK_DB_SLOTS - 1);
	for (j = 0; j < RG_HPACK_ENTRIES; j++)
		if ((t->ent_bits[j] & RG_HPACK_F_DB_NAME) && t->ent_db[j] == i)
			t->ent_db[j] = RG_HPACK_DB_LOST;
	t->db_used |= (__u8)(1U << i);
	t->db_len[i] = (__u8)len;
	__builtin_memcpy(&t->db[i], &t->dbv, sizeof(t->dbv));
	t->db_slot = (__u8)i;
	return 0;
}

/* A string's length is known. */
RG_INLINE int rg_hpack_str_start(struct rg_hpack *t, __u32 len);

/* An integer is complete. */
RG_INLINE int rg_hpack_int_done(struct rg_hpack *t, __u32 v)
{
	int pos;

	switch (t->what) {
	case RG_HPI_INDEX:
		if (v == 0)
			return RG_HPACK_ERR;
		if (v <= RG_HPACK_STATIC_ENTRIES) {
			/* static 4 and 5: `:path /` and `:path /index.html` */
			t->is_path = v == 4 || v == 5;
			t->is_db = 0;
			t->kind = t->is_path ? RG_H2_PATH_OTHER : RG_PROTO_NONE;
		} else {
			pos = rg_hpack_dyn(t, v - RG_HPACK_STATIC_ENTRIES);
			if (pos < 0)
				return RG_HPACK_ERR;
			pos &= RG_HPACK_ENTRIES - 1;
			t->is_path = t->ent_bits[pos] & RG_HPACK_F_PATH_NAME;
			t->is_db = !!(t->ent_bits[pos] & RG_HPACK_F_DB_NAME);
			t->kind = (t->ent_bits[pos] >> RG_HPACK_F_KIND_SHIFT) &
				  (RG_H2_PATH_KIND | RG_H2_PATH_UNARY);
			t->db_slot = t->ent_db[pos];
		}
		t->rep = RG_HPR_NOIDX; /* nothing added */
		rg_hpack_field_done(t, 0);
		return 0;
	case RG_HPI_NAME_INDEX:
		t->kind = RG_PROTO_NONE;
		t->st = RG_HPS_STRLEN;
		if (v == 0) {
			t->in_value = 0;
			t->is_path = 0;
			t->is_db = 0;
			return 0;
		}
		t->in_value = 1;
		if (v <= RG_HPACK_STATIC_ENTRIES) {
			t->is_path = v == 4 || v == 5;
			t->is_db = 0;
			t->name_len = rg_hpack_static_name_len(v);
		} else {
			pos = rg_hpack_dyn(t, v - RG_HPACK_STATIC_ENTRIES);
			if (pos < 0)
				return RG_HPACK_ERR;
			pos &= RG_HPACK_ENTRIES - 1;
			t->is_path = t->ent_bits[pos] & RG_HPACK_F_PATH_NAME;
			t->is_db = !!(t->ent_bits[pos] & RG_HPACK_F_DB_NAME);
			t->name_len = t->ent_name[pos];
		}
		return 0;
	case RG_HPI_SIZE:
		if (v > RG_HPACK_TABLE_MAX_BYTES)
			return RG_HPACK_ERR;
		t->max = v;
		rg_hpack_evict(t, 0);
		t->st = RG_HPS_REP;
		return 0;
	case RG_HPI_STRLEN:
		return rg_hpack_str_start(t, v);
	}
	return RG_HPACK_ERR;
}

/* Whether the string's Huffman code is walked: its decoded length sizes
 * an entry, or its symbols are a database's name. */
RG_INLINE bool rg_hpack_huff_walked(const struct rg_hpack *t)
{
	return t->huff && (t->rep == RG_HPR_INC || (t->in_value && t->is_db));
}

/* A string is complete. */
RG_INLINE int rg_hpack_str_done(struct rg_hpack *t)
{
	int r;

	if (rg_hpack_huff_walked(t)) {
		r = rg_hpack_huff_end(t);
		if (r < 0)
			return r;
	}
	if (!t->in_value) {
		t->name_len = t->dlen;
		t->is_path = t->name_pos ==
			     (t->huff ? RG_HPACK_PATH_NAME_HUFF : RG_HPACK_PATH_NAME_RAW);
		t->is_db = t->db_pos == (t->huff ? RG_HPACK_DB_NAME_HUFF : RG_HPACK_DB_NAME_RAW);
		t->in_value = 1;
		t->st = RG_HPS_STRLEN;
		return 0;
	}
	if (t->is_path)
		t->kind = (__u8)RG_HPACK_ROUTE(t);
	if (t->is_db)
		rg_hpack_db_store(t);
	rg_hpack_field_done(t, t->dlen);
	return 0;
}

RG_INLINE int rg_hpack_str_start(struct rg_hpack *t, __u32 len)
{
	t->left = len;
	t->slen = len;
	t->dlen = t->huff ? 0 : len;
	t->acc = 0;
	t->nbits = 0;
	if (!t->in_value) {
		t->name_pos = len == (t->huff ? RG_HPACK_PATH_NAME_HUFF : RG_HPACK_PATH_NAME_RAW) ?
				      0 :
				      0xff;
		t->db_pos = len == (t->huff ? RG_HPACK_DB_NAME_HUFF : RG_HPACK_DB_NAME_RAW) ? 0 :
											      0xff;
	} else if (t->is_path) {
		__builtin_memset(t->path, 0, sizeof(t->path));
	} else if (t->is_db) {
		__builtin_memset(&t->dbv, 0, sizeof(t->dbv));
	}
	if (len == 0)
		return rg_hpack_str_done(t);
	t->st = RG_HPS_STR;
	return 0;
}

/* An integer with an n-bit prefix starts with v (RFC 7541 §5.1). */
RG_INLINE int rg_hpack_int_start(struct rg_hpack *t, __u8 what, __u32 v, __u32 mask)
{
	t->what = what;
	if (v < mask)
		return rg_hpack_int_done(t, v);
	t->ival = v;
	t->ishift = 0;
	t->st = RG_HPS_INT;
	return 0;
}

/* Whether the current string's bytes must be looked at. */
RG_INLINE bool rg_hpack_str_needed(const struct rg_hpack *t)
{
	if (rg_hpack_huff_walked(t))
		return true;
	if (t->in_value)
		return t->is_path || t->is_db;
	return t->name_pos != 0xff || t->db_pos != 0xff;
}

/* One byte of a header block.  Returns 0 or RG_HPACK_ERR. */
RG_HPACK_FN int rg_hpack_step(struct rg_hpack *t, __u8 c)
{
	__u32 i;
	int e;

	if (!t)
		return RG_HPACK_ERR;
	switch (t->st) {
	case RG_HPS_REP:
		if (c & 0x80) {
			t->rep = RG_HPR_INDEXED;
			return rg_hpack_int_start(t, RG_HPI_INDEX, c & 0x7f, 0x7f);
		}
		if (c & 0x40) {
			t->rep = RG_HPR_INC;
			return rg_hpack_int_start(t, RG_HPI_NAME_INDEX, c & 0x3f, 0x3f);
		}
		if (c & 0x20)
			return rg_hpack_int_start(t, RG_HPI_SIZE, c & 0x1f, 0x1f);
		t->rep = RG_HPR_NOIDX;
		return rg_hpack_int_start(t, RG_HPI_NAME_INDEX, c & 0x0f, 0x0f);
	case RG_HPS_INT:
		if (t->ishift > 21)
			return RG_HPACK_ERR;
		t->ival += (__u32)(c & 0x7f) << t->ishift;
		t->ishift += 7;
		if (t->ival > RG_HPACK_INT_MAX)
			return RG_HPACK_ERR;
		if (c & 0x80)
			return 0;
		return rg_hpack_int_done(t, t->ival);
	case RG_HPS_STRLEN:
		t->huff = c >> 7;
		return rg_hpack_int_start(t, RG_HPI_STRLEN, c & 0x7f, 0x7f);
	case RG_HPS_STR:
		if (t->left == 0)
			return RG_HPACK_ERR;
		i = t->slen - t->left;
		if (!t->in_value) {
			if (t->name_pos != 0xff)
				t->name_pos = rg_hpack_path_name_byte(t->huff, i) == c ?
						      (__u8)(i + 1) :
						      0xff;
			if (t->db_pos != 0xff)
				t->db_pos = rg_hpack_db_name_byte(t->huff, i) == c ? (__u8)(i + 1) :
										     0xff;
		} else if (t->is_path && i < RG_HPACK_PATH_BYTES) {
			t->path[i & (RG_HPACK_PATH_BYTES - 1)] = c;
		} else if (t->is_db && !t->huff && i < RG_DB_NAME_MAX - 1) {
			t->dbv.c[i & (RG_DB_NAME_MAX - 1)] = (char)c;
		}
		if (rg_hpack_huff_walked(t)) {
			e = rg_hpack_huff_byte(t, c);
			if (e < 0)
				return e;
		}
		if (--t->left)
			return 0;
		return rg_hpack_str_done(t);
	}
	return RG_HPACK_ERR;
}

/* Bytes that can be passed over without rg_hpack_step: a string nobody
 * reads, but its last byte, which makes the transition. */
RG_INLINE __u32 rg_hpack_skippable(const struct rg_hpack *t)
{
	if (t->st != RG_HPS_STR || t->left < 2 || rg_hpack_str_needed(t))
		return 0;
	return t->left - 1;
}

RG_INLINE void rg_hpack_skip(struct rg_hpack *t, __u32 n)
{
	t->left -= n;
}

/* A header block starts. */
RG_INLINE void rg_hpack_block_start(struct rg_hpack *t)
{
	t->blk_kind = 0;
	t->blk_db = 0;
	t->blk_bits = 0;
}

/* The block's `x-greptime-db-name` value, if it has exactly one the shadow
 * knows in whole (NULL: none, several, lost, longer than a key); *len its
 * length. */
RG_INLINE const char *rg_hpack_block_db(const struct rg_hpack *t, __u32 *len)
{
	__u32 i = t->blk_db - 1;

	if (!t->blk_db || i >= RG_HPACK_DB_SLOTS)
		return NULL;
	*len = t->db_len[i];
	if (*len >= RG_DB_NAME_MAX)
		return NULL;
	return t->db[i].c;
}

/* The block ended: -1 if it ended inside a representation, else its
 * `:path` kind: an uncounted method's path anywhere in it, or an export's
 * or DoPut's beside another kind, makes RG_H2_PATH_UNCOUNTED (refused); a
 * routed path, or no `:path` (the server refuses the request), is
 * RG_PROTO_GREPTIME_GRPC (followed); only `:path`s no route names make
 * RG_H2_PATH_OTHER. */
RG_INLINE int rg_hpack_block_end(const struct rg_hpack *t)
{
	if (t->st != RG_HPS_REP)
		return RG_HPACK_ERR;
	if (t->blk_bits & RG_HPACK_BLK_CONFLICT)
		return RG_H2_PATH_UNCOUNTED;
	if (!t->blk_kind || (t->blk_bits & RG_HPACK_BLK_MIXED))
		return RG_PROTO_GREPTIME_GRPC;
	return t->blk_kind;
}

/* Whether the block that ended (rg_hpack_block_end: RG_PROTO_GREPTIME_GRPC)
 * calls a unary method: its one `:path` kind names one. */
RG_INLINE bool rg_hpack_block_unary(const struct rg_hpack *t)
{
	return t->blk_kind == RG_PROTO_GREPTIME_GRPC && (t->blk_bits & RG_H2_PATH_UNARY) &&
	       !(t->blk_bits & (RG_HPACK_BLK_MIXED | RG_HPACK_BLK_CONFLICT));
}

#endif /* ROWGATE_HPACK_H */
