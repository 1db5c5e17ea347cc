/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Database names as GreptimeDB resolves them (reference/GREPTIMEDB.md):
 * the value is split at its first '-' into catalog-schema, and the default
 * catalog's form names the same database as the bare schema.  Shared by the
 * BPF classifier and by every tool that takes a database name.
 */
#ifndef ROWGATE_DBNAME_H
#define ROWGATE_DBNAME_H

#include "types.h"
#include "abi.h"

#define RG_DEFAULT_CATALOG     "greptime"
#define RG_DEFAULT_CATALOG_LEN 8
#define RG_DEFAULT_DB          "public"

/* Whether raw[0..len) starts with "greptime-" (the default catalog). */
RG_INLINE bool rg_db_in_default_catalog(const char *raw, __u32 len)
{
	return len > RG_DEFAULT_CATALOG_LEN && raw[0] == 'g' && raw[1] == 'r' &&
	       raw[2] == 'e' && raw[3] == 'p' && raw[4] == 't' && raw[5] == 'i' &&
	       raw[6] == 'm' && raw[7] == 'e' && raw[8] == '-';
}

/*
 * Fill key from the raw value raw[0..len) (len <= RG_DB_NAME_MAX - 1 + 9 is
 * not assumed: raw must hold at least RG_DB_NAME_MAX bytes).  Returns the key
 * length, or -1 when the name does not fit a key: such a name must never
 * match a configured one by truncation.
 */
RG_INLINE int rg_db_key_from_raw(struct rg_db_key *key, const char *raw,
				 __u32 len, __u32 raw_cap)
{
	__u32 skip = 0, i;

	if (rg_db_in_default_catalog(raw, len))
		skip = RG_DEFAULT_CATALOG_LEN + 1;
	if (len - skip >= RG_DB_NAME_MAX || len > raw_cap)
		return -1;
	for (i = 0; i < RG_DB_NAME_MAX; i++) {
		__u32 j = i + skip;

		key->name[i] = (i < len - skip && j < raw_cap) ? raw[j] : 0;
	}
	return (int)(len - skip);
}

/* Bytes a raw value buffer holds: a key plus the "greptime-" prefix. */
#define RG_DB_RAW_MAX (RG_DB_NAME_MAX + RG_DEFAULT_CATALOG_LEN + 1)

/*
 * The same as rg_db_key_from_raw for a buffer of RG_DB_RAW_MAX bytes that is
 * zero past len: two straight copies instead of a per-byte choice, which
 * keeps the BPF verifier's work small.
 */
RG_INLINE int rg_db_key_from_padded(struct rg_db_key *key, const char *raw, __u32 len)
{
	if (rg_db_in_default_catalog(raw, len)) {
		if (len - (RG_DEFAULT_CATALOG_LEN + 1) >= RG_DB_NAME_MAX)
			return -1;
		__builtin_memcpy(key->name, raw + RG_DEFAULT_CATALOG_LEN + 1, RG_DB_NAME_MAX);
		return (int)(len - (RG_DEFAULT_CATALOG_LEN + 1));
	}
	if (len >= RG_DB_NAME_MAX)
		return -1;
	__builtin_memcpy(key->name, raw, RG_DB_NAME_MAX);
	return (int)len;
}

#endif /* ROWGATE_DBNAME_H */
