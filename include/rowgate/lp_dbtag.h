/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* victoria-metrics files a line-protocol line under its `db` tag, not the
 * query's database (docs/server-profiles.md, rg_lp_vm_db_tag in rows.h).
 * This follows that tag while a body streams past, a byte at a time, so the
 * kernel can refuse a line that names an indebted database before the
 * server reads it.  It reads what rg_lp_vm_db_tag and rg_lp_vm_unescape
 * read from whole lines: the last tag whose key is "db" as sent and whose
 * value is not empty, in the tag section (before the first unescaped
 * space), unescaped as victoria-metrics does.  Lines are split at every
 * '\n', as victoria-metrics splits them; a line starting with '#' is a
 * comment.  Lines the server rejects later (no fields) may still name a
 * database here: a refusal there is the conservative side.
 */
#ifndef ROWGATE_LP_DBTAG_H
#define ROWGATE_LP_DBTAG_H

#include "abi.h"

/* A tag value as victoria-metrics unescapes it (lib/protoparser/influx
 * unescapeTagValue: '\\' drops before ' ', ',', '=' and '\\' only) into
 * dst[RG_DB_NAME_MAX]; its whole length, which may not fit. */
static inline __u64 rg_lp_vm_unescape(const __u8 *s, __u64 n, char *dst)
{
	__u64 i, len = 0;

	for (i = 0; i < n; i++) {
		__u8 c = s[i];

		if (c == '\\' && i + 1 < n &&
		    (s[i + 1] == ' ' || s[i + 1] == ',' || s[i + 1] == '=' || s[i + 1] == '\\'))
			c = s[++i];
		if (len < RG_DB_NAME_MAX)
			dst[len] = (char)c;
		len++;
	}
	return len;
}

enum rg_lp_dbtag_state {
	RG_DBT_LINE = 0, /* at a line's first byte */
	RG_DBT_MEASUREMENT,
	RG_DBT_KEY,
	RG_DBT_VALUE,
	RG_DBT_REST, /* past the tag section, or a comment: until '\n' */
};

#define RG_DBT_KEY_OTHER 3 /* the key being read is not "db" */

struct rg_lp_dbtag {
	/* the line's winning db value, unescaped; a map key once
	 * rg_lp_dbtag_key() has cleared the bytes past it */
	struct rg_db_key key;
	__u8 state;  /* enum rg_lp_dbtag_state */
	__u8 esc;    /* the previous byte was an unescaped '\\' */
	__u8 key_at; /* bytes of the key matched against "db" */
	__u8 in_db;  /* the value being read is a db tag's */
	__u8 cur;    /* bytes of that value so far (RG_DB_NAME_MAX: too long) */
	__u8 len;    /* the winning value's length (RG_DB_NAME_MAX: too long) */
	__u8 pad[2];
};

RG_INLINE void rg_lp_dbtag_init(struct rg_lp_dbtag *s)
{
	s->state = RG_DBT_LINE;
	s->esc = 0;
	s->len = 0;
}

/* One byte of a value being read (still escaped: esc tracks the pair). */
RG_INLINE void rg_lp_dbtag_put(struct rg_lp_dbtag *s, __u8 ch)
{
	if (!s->in_db)
		return;
	if (s->cur < RG_DB_NAME_MAX) {
		s->key.name[s->cur & (RG_DB_NAME_MAX - 1)] = (char)ch;
		s->cur++;
	}
}

/* The value ends (an unescaped ',' or ' '): a db tag with bytes wins. */
RG_INLINE void rg_lp_dbtag_value_end(struct rg_lp_dbtag *s)
{
	if (s->in_db && s->cur)
		s->len = s->cur;
}

/*
 * Feed one byte; true when it ends a line's tag section that named a
 * database (s->len bytes of s->key.name; RG_DB_NAME_MAX when too long to be
 * any database's key).  A new value overwrites the name only once it has a
 * byte, so an empty db tag after a full one leaves the full one standing.
 */
RG_INLINE bool rg_lp_dbtag_step(struct rg_lp_dbtag *s, __u8 ch)
{
	if (ch == '\n') {
		rg_lp_dbtag_init(s);
		return false;
	}
	switch (s->state) {
	case RG_DBT_LINE:
		if (ch == '#') {
			s->state = RG_DBT_REST;
			return false;
		}
		s->state = RG_DBT_MEASUREMENT;
		/* fall through */
	case RG_DBT_MEASUREMENT:
		if (s->esc) {
			s->esc = 0;
		} else if (ch == '\\') {
			s->esc = 1;
		} else if (ch == ',') {
			s->state = RG_DBT_KEY;
			s->key_at = 0;
		} else if (ch == ' ') {
			s->state = RG_DBT_REST;
		}
		return false;
	case RG_DBT_KEY:
		if (s->esc) {
			s->esc = 0;
			s->key_at = RG_DBT_KEY_OTHER;
		} else if (ch == '\\') {
			s->esc = 1;
			s->key_at = RG_DBT_KEY_OTHER;
		} else if (ch == '=') {
			s->in_db = s->key_at == 2;
			s->cur = 0;
			s->state = RG_DBT_VALUE;
		} else if (ch == ',') {
			s->key_at = 0; /* a tag without '=': the server rejects the line */
		} else if (ch == ' ') {
			s->state = RG_DBT_REST;
			return s->len != 0;
		} else if (s->key_at == 0 && ch == 'd') {
			s->key_at = 1;
		} else if (s->key_at == 1 && ch == 'b') {
			s->key_at = 2;
		} else {
			s->key_at = RG_DBT_KEY_OTHER;
		}
		return false;
	case RG_DBT_VALUE:
		if (s->esc) {
			s->esc = 0;
			if (ch != ' ' && ch != ',' && ch != '=' && ch != '\\')
				rg_lp_dbtag_put(s, '\\');
			rg_lp_dbtag_put(s, ch);
		} else if (ch == '\\') {
			s->esc = 1;
		} else if (ch == ',') {
			rg_lp_dbtag_value_end(s);
			s->state = RG_DBT_KEY;
			s->key_at = 0;
		} else if (ch == ' ') {
			rg_lp_dbtag_value_end(s);
			s->state = RG_DBT_REST;
			return s->len != 0;
		} else {
			rg_lp_dbtag_put(s, ch);
		}
		return false;
	default:
		return false;
	}
}

/* The named database as a map key: the bytes past its length cleared.
 * False when the name is too long to be any database's key. */
RG_INLINE bool rg_lp_dbtag_key(struct rg_lp_dbtag *s)
{
	__u32 i;

	if (s->len == 0 || s->len >= RG_DB_NAME_MAX)
		return false;
	RG_UNROLL
	for (i = 0; i < RG_DB_NAME_MAX; i++)
		if (i >= s->len)
			s->key.name[i] = 0;
	return true;
}

#endif /* ROWGATE_LP_DBTAG_H */
