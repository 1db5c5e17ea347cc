/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* One gRPC message as the server will decode it (docs/grpc.md §1-3): its
 * kind, rows and RequestHeader strings, filled by the protobuf walk
 * (pb.h); the database it writes to (rg_grpc_db_key_in), whether it is
 * charged and the rows a refusal names. */
#ifndef ROWGATE_H2_MSG_H
#define ROWGATE_H2_MSG_H

#include "../types.h"
#include "../abi.h"
#include "../dbname.h"
#include "../estimate.h"
#include "result.h"

/* GreptimeRequest oneof `request` field numbers (docs/grpc.md §1). */
enum rg_grpc_kind {
	RG_GRPC_NONE = 0,
	RG_GRPC_INSERTS = 2,
	RG_GRPC_QUERY = 3,
	RG_GRPC_DDL = 4,
	RG_GRPC_DELETES = 5,
	RG_GRPC_ROW_INSERTS = 6,
	RG_GRPC_ROW_DELETES = 7,
};

/* Whether messages of this kind are charged (docs/grpc.md §3). */
RG_INLINE bool rg_grpc_kind_charged(__u32 kind)
{
	return kind == RG_GRPC_INSERTS || kind == RG_GRPC_ROW_INSERTS;
}

/* Which RequestHeader string a capture fills. */
enum rg_grpc_str {
	RG_GRPC_STR_CATALOG = 0,
	RG_GRPC_STR_SCHEMA = 1,
	RG_GRPC_STR_DBNAME = 2,
	RG_GRPC_STRS = 3,
};

/* One gRPC message as the server will decode it.  Protobuf merge rules
 * apply: the last value of a header string wins (across repeated headers),
 * the last oneof member set replaces earlier ones, repeated occurrences of
 * the same member merge (their rows add up). */
struct rg_grpc_msg {
	__u64 rows;
	__u32 len;           /* message bytes after the 5-byte prefix */
	__u32 row_count;     /* row_count of the InsertRequest being walked */
	__u8 kind;           /* enum rg_grpc_kind: the oneof member set last */
	__u8 compressed;     /* grpc-encoding applied: nothing below is known */
	__u8 has_header;
	/* enum rg_protocol of a message whose database is its stream's header
	 * (OTLP/gRPC): nothing inside it is read in the kernel; 0: none */
	__u8 hdr;
	__u16 str_len[RG_GRPC_STRS]; /* may exceed RG_DB_RAW_MAX: too long */
	char str[RG_GRPC_STRS][RG_DB_RAW_MAX]; /* zero past str_len */
};

/* Whether nothing inside message m is read in the kernel: it is
 * compressed, or an OTLP/gRPC export (its rows are rowgated's to count). */
RG_INLINE bool rg_grpc_opaque(const struct rg_grpc_msg *m)
{
	return m->compressed || m->hdr;
}

/* Whether message m's database is inside its compressed bytes: a
 * compressed GreptimeRequest, judged on what rowgated learned
 * (--grpc-compressed debt), not an OTLP export, whose header names it. */
RG_INLINE bool rg_grpc_db_hidden(const struct rg_grpc_msg *m)
{
	return m->compressed && !m->hdr;
}

/* A RequestHeader string starts again (the last occurrence wins). */
RG_INLINE void rg_grpc_str_reset(struct rg_grpc_msg *m, __u8 k, __u16 len)
{
	/* constant indexes: the verifier sees every access in bounds */
	switch (k) {
	case RG_GRPC_STR_CATALOG:
		__builtin_memset(m->str[RG_GRPC_STR_CATALOG], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_CATALOG] = len;
		break;
	case RG_GRPC_STR_SCHEMA:
		__builtin_memset(m->str[RG_GRPC_STR_SCHEMA], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_SCHEMA] = len;
		break;
	case RG_GRPC_STR_DBNAME:
		__builtin_memset(m->str[RG_GRPC_STR_DBNAME], 0, RG_DB_RAW_MAX);
		m->str_len[RG_GRPC_STR_DBNAME] = len;
		break;
	}
}

/* Byte c of string k, with left bytes of it to go (this one included).  A
 * value longer than a key holds is not stored: rg_grpc_db_key refuses it. */
RG_INLINE void rg_grpc_str_put(struct rg_grpc_msg *m, __u8 k, __u32 left, __u8 c)
{
	__u32 len, i;

	if (k >= RG_GRPC_STRS)
		return;
	len = m->str_len[k == RG_GRPC_STR_CATALOG ? RG_GRPC_STR_CATALOG :
			 k == RG_GRPC_STR_SCHEMA ? RG_GRPC_STR_SCHEMA : RG_GRPC_STR_DBNAME];
	if (len >= RG_DB_RAW_MAX || left > len)
		return;
	i = rg_h2_opaque(len - left);
	if (i >= RG_DB_RAW_MAX)
		return;
	if (k == RG_GRPC_STR_CATALOG)
		m->str[RG_GRPC_STR_CATALOG][i] = (char)c;
	else if (k == RG_GRPC_STR_SCHEMA)
		m->str[RG_GRPC_STR_SCHEMA][i] = (char)c;
	else
		m->str[RG_GRPC_STR_DBNAME][i] = (char)c;
}

/* Byte i of the default catalog ("greptime") or schema ("public"),
 * spelled out: clang turns a copy of a literal into a memcpy call, which
 * BPF has not, and a literal indexed at run time lands in .rodata.str1.1,
 * which breaks BTF (docs/design.md#toolchain-traps). */
RG_INLINE char rg_grpc_default_char(bool schema, __u32 i)
{
	switch (schema ? i + 8 : i) {
	case 0: return 'g';
	case 1: return 'r';
	case 2: return 'e';
	case 3: return 'p';
	case 4: return 't';
	case 5: return 'i';
	case 6: return 'm';
	case 7: return 'e';
	case 8: return 'p';
	case 9: return 'u';
	case 10: return 'b';
	case 11: return 'l';
	case 12: return 'i';
	case 13: return 'c';
	}
	return 0;
}

/* Scratch of rg_grpc_db_key_in: "catalog-schema" is built here.  Twice
 * the longest value, so every index masked to it stays in bounds. */
#define RG_GRPC_DB_SCRATCH_BYTES 256

/* Lower-case an ASCII letter (catalog and schema are lower-cased). */
RG_INLINE char rg_grpc_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The non-zero bytes of a header string (zero past its length): its
 * length unless it holds a NUL.  Arithmetic, no branch per byte: the
 * verifier walks it once. */
RG_INLINE __u32 rg_grpc_nonzero(const char *s)
{
	__u32 i, n = 0;

	for (i = 0; i < RG_DB_RAW_MAX; i++)
		n += ((__u32)(__u8)s[i] + 255) >> 8;
	return n;
}

/*
 * The database a completed message writes to, as greptimedb's
 * create_query_context() resolves it (docs/grpc.md §2), into key: dbname if
 * non-empty (split at its first '-', not lower-cased), else catalog and
 * schema lower-cased with defaults "greptime" / "public".  Returns the key
 * length, or -1 when the name does not fit a key, holds a NUL byte (the
 * zero-padded key would fold it into a shorter name), or when catalog/schema
 * has non-ASCII bytes, which the server lower-cases by Unicode rules (Rust's
 * to_lowercase) this code does not carry: fail closed.  raw is
 * RG_GRPC_DB_SCRATCH_BYTES of scratch (the BPF caller's is in a map value:
 * the verifier follows variable-offset writes there cheaply, not on the
 * stack).  The header strings are zero past their length, so each is
 * copied whole, one path per byte.
 */
RG_INLINE int rg_grpc_db_key_in(const struct rg_grpc_msg *m, struct rg_db_key *key, char *raw)
{
	__u32 cl = m->str_len[RG_GRPC_STR_CATALOG], sl = m->str_len[RG_GRPC_STR_SCHEMA];
	__u32 i, n;
	__u8 bad = 0;

	if (m->str_len[RG_GRPC_STR_DBNAME]) {
		n = m->str_len[RG_GRPC_STR_DBNAME];
		if (n >= RG_DB_RAW_MAX)
			return -1;
		/* a NUL inside the name: the zero-padded key would lose it and
		 * name another database ("v\0" is not "v") */
		if (rg_grpc_nonzero(m->str[RG_GRPC_STR_DBNAME]) != n)
			return -1;
		return rg_db_key_from_padded(key, m->str[RG_GRPC_STR_DBNAME], n);
	}
	if (cl >= RG_DB_RAW_MAX || sl >= RG_DB_RAW_MAX ||
	    rg_grpc_nonzero(m->str[RG_GRPC_STR_CATALOG]) != cl ||
	    rg_grpc_nonzero(m->str[RG_GRPC_STR_SCHEMA]) != sl)
		return -1; /* a NUL inside catalog or schema, as in dbname */
	__builtin_memset(raw, 0, RG_GRPC_DB_SCRATCH_BYTES);
	if (cl) {
		for (i = 0; i < RG_DB_RAW_MAX; i++) {
			char c = m->str[RG_GRPC_STR_CATALOG][i];

			bad |= (__u8)c & 0x80;
			raw[i] = rg_grpc_lower(c);
		}
		n = cl;
	} else {
		for (i = 0; i < RG_DEFAULT_CATALOG_LEN; i++)
			raw[i] = rg_grpc_default_char(false, rg_h2_opaque(i));
		n = RG_DEFAULT_CATALOG_LEN;
	}
	raw[n & (RG_GRPC_DB_SCRATCH_BYTES - 1)] = '-';
	n++;
	if (sl) {
		for (i = 0; i < RG_DB_RAW_MAX; i++) {
			char c = m->str[RG_GRPC_STR_SCHEMA][i];

			bad |= (__u8)c & 0x80;
			raw[(n + i) & (RG_GRPC_DB_SCRATCH_BYTES - 1)] = rg_grpc_lower(c);
		}
		n += sl;
	} else {
		for (i = 0; i < 6; i++)
			raw[(n + i) & (RG_GRPC_DB_SCRATCH_BYTES - 1)] =
				rg_grpc_default_char(true, rg_h2_opaque(i));
		n += 6;
	}
	if (bad || n >= RG_DB_RAW_MAX)
		return -1;
	return rg_db_key_from_padded(key, raw, n);
}

#ifndef __bpf__
/* rg_grpc_db_key_in with scratch of its own. */
static inline int rg_grpc_db_key(const struct rg_grpc_msg *m, struct rg_db_key *key)
{
	char raw[RG_GRPC_DB_SCRATCH_BYTES];

	return rg_grpc_db_key_in(m, key, raw);
}
#endif

/* Whether a completed message is charged, and its rows (docs/grpc.md §3). */
RG_INLINE bool rg_grpc_charged(const struct rg_grpc_msg *m)
{
	return m->hdr || rg_grpc_kind_charged(m->kind);
}

/* Whether a refusal of message m names an estimate: its rows are unread
 * (compressed, OTLP). */
RG_INLINE bool rg_grpc_rows_estimated(const struct rg_grpc_msg *m)
{
	return rg_grpc_opaque(m);
}

/* The rows a refusal of message m names: those read, or for an opaque
 * message the estimate HTTP's 429 gives a body of its length and protocol
 * (rowgate/estimate.h). */
RG_INLINE __u64 rg_grpc_answer_rows(const struct rg_grpc_msg *m)
{
	if (!rg_grpc_rows_estimated(m))
		return m->rows;
	return rg_est_rows(m->len, 0, m->hdr ? m->hdr : RG_PROTO_GREPTIME_GRPC, m->compressed);
}

#endif /* ROWGATE_H2_MSG_H */
