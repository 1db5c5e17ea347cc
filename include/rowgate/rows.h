/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Exact row counting of InfluxDB line protocol, streamed in chunks.
 *
 * A row is a line with a byte that is not blank (' ', '\t', '\r') and that
 * is not a comment; CRLF endings and a last line without a newline count
 * like any other.  What a comment is depends on the server
 * (enum rg_lp_comment_rule): InfluxDB 1.x (models/points.go) and GreptimeDB
 * skip blanks before a '#', victoria-metrics (lib/protoparser/influx) only
 * takes a '#' in the line's first byte for a comment and parses " #f=1" as a
 * row.  Lines that only hold blanks are never stored by either.
 * The state between chunks is three bytes: whether the stream is at the
 * start of a line (still in its leading blanks), whether at its very first
 * byte, and the rule.  The word counter is branch-free SWAR over 8 bytes, so
 * the BPF verifier sees a straight line and the kernel counts at memory
 * speed; the byte counter is the reference it is tested against.
 *
 * A line the server cannot parse is still counted here (the kernel does not
 * parse fields): the charge is then above what is stored, never below.
 * rg_lp_vm_samples() below counts what victoria-metrics stores exactly.
 */
#ifndef ROWGATE_ROWS_H
#define ROWGATE_ROWS_H

#include "types.h"

#define RG_LP_WORD_BYTES 8
#define RG_SWAR_ONES  0x0101010101010101ULL
#define RG_SWAR_LOW7  0x7f7f7f7f7f7f7f7fULL
#define RG_SWAR_HIGH  0x8080808080808080ULL

/* Where a '#' makes a comment line. */
enum rg_lp_comment_rule {
	RG_LP_COMMENT_AFTER_BLANKS = 0, /* InfluxDB 1.x, GreptimeDB: "  # x" */
	RG_LP_COMMENT_AT_START = 1,     /* victoria-metrics: "# x" only */
};

/* How rows of line protocol are counted for a server. */
enum rg_rows_mode {
	RG_ROWS_LINES = 0,     /* one row per line: GreptimeDB, InfluxDB 1.x */
	RG_ROWS_VM_SAMPLES,    /* one per field, rg_lp_vm_samples: victoria-metrics */
};

/* Streaming state: at_line_start = 1 while no significant byte was seen,
 * at_byte0 = 1 before the line's first byte. */
struct rg_lp_state {
	__u8 at_line_start;
	__u8 at_byte0;
	__u8 comment_rule; /* enum rg_lp_comment_rule */
};

RG_INLINE void rg_lp_init_rule(struct rg_lp_state *s, __u8 comment_rule)
{
	s->at_line_start = 1;
	s->at_byte0 = 1;
	s->comment_rule = comment_rule == RG_LP_COMMENT_AT_START;
}

RG_INLINE void rg_lp_init(struct rg_lp_state *s)
{
	rg_lp_init_rule(s, RG_LP_COMMENT_AFTER_BLANKS);
}

RG_INLINE bool rg_lp_is_blank(__u8 c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Reference byte step: returns 1 when c starts a row. */
RG_INLINE __u32 rg_lp_step(struct rg_lp_state *s, __u8 c)
{
	__u8 first = s->at_byte0;

	if (c == '\n') {
		s->at_line_start = 1;
		s->at_byte0 = 1;
		return 0;
	}
	s->at_byte0 = 0;
	if (!s->at_line_start || rg_lp_is_blank(c))
		return 0;
	s->at_line_start = 0;
	return c != '#' || (s->comment_rule && !first);
}

/* 0x80 in every byte of x equal to c, exactly (no false positives). */
RG_INLINE __u64 rg_swar_eq(__u64 x, __u8 c)
{
	__u64 t = x ^ (RG_SWAR_ONES * c);

	return ~(((t & RG_SWAR_LOW7) + RG_SWAR_LOW7) | t) & RG_SWAR_HIGH;
}

/* 0x80 in every byte of x below 0x20, exactly (bytes >= 0x80 are not). */
RG_INLINE __u64 rg_swar_lt_space(__u64 x)
{
	return ~(((x & RG_SWAR_LOW7) + RG_SWAR_ONES * (0x80 - 0x20)) | x) & RG_SWAR_HIGH;
}

/* Number of bytes flagged 0x80 in m. */
RG_INLINE __u32 rg_swar_count(__u64 m)
{
	return (__u32)(((m >> 7) * RG_SWAR_ONES) >> 56);
}

/*
 * Count the rows starting in one little-endian word (byte i = bits 8i..8i+7)
 * of which the bytes flagged 0x80 in pad are not part of the stream (they
 * were made blanks by rg_lp_mask_word).  Line-start positions are the bytes
 * after a '\n' (or byte 0 when the stream is at a line start), carried
 * forward through runs of blanks; a row starts at such a position when its
 * byte is not blank, '\n' or a comment's '#'.  First-byte positions (for
 * RG_LP_COMMENT_AT_START) are carried through padding only.
 */
RG_INLINE __u32 rg_lp_count_word_pad(struct rg_lp_state *s, __u64 x, __u64 pad)
{
	__u64 nl = rg_swar_eq(x, '\n');
	__u64 blank, hash, start, start0, rows;

	/* most words sit inside a line: no row can start there */
	if (!nl && !s->at_line_start)
		return 0;
	blank = rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t') | rg_swar_eq(x, '\r');
	hash = rg_swar_eq(x, '#');
	start = (nl << 8) | ((__u64)s->at_line_start << 7);
	start0 = (nl << 8) | ((__u64)s->at_byte0 << 7);

	/* propagate line starts through up to 7 blanks: fixed, branch-free */
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	start0 |= (start0 & pad) << 8;
	/* AT_START: only a '#' in a line's first byte makes a comment */
	hash &= start0 | ((__u64)s->comment_rule - 1);
	rows = start & ~(blank | nl | hash);
	/* the next word starts a line after '\n', or after blanks at one */
	s->at_line_start = (__u8)((((nl | (start & blank)) >> 63)) & 1);
	s->at_byte0 = (__u8)((((nl | (start0 & pad)) >> 63)) & 1);
	return rg_swar_count(rows);
}

RG_INLINE __u32 rg_lp_count_word(struct rg_lp_state *s, __u64 x)
{
	return rg_lp_count_word_pad(s, x, 0);
}

/* Load 8 bytes little-endian from p (any alignment). */
RG_INLINE __u64 rg_load_le64(const __u8 *p)
{
	return (__u64)p[0] | (__u64)p[1] << 8 | (__u64)p[2] << 16 |
	       (__u64)p[3] << 24 | (__u64)p[4] << 32 | (__u64)p[5] << 40 |
	       (__u64)p[6] << 48 | (__u64)p[7] << 56;
}

/*
 * A word of which only the bytes [from, to) belong to the stream: the others
 * become blanks, which never start a row and leave the line-start flag as it
 * was (a blank keeps a line start a line start, and the middle of a line the
 * middle), so a partial word counts exactly like its bytes; the first-byte
 * position of RG_LP_COMMENT_AT_START needs to know which bytes are padding:
 * rg_lp_count_span() below.
 */
RG_INLINE __u64 rg_lp_mask_word(__u64 x, __u32 from, __u32 to)
{
	__u64 keep_lo = from >= 8 ? 0 : ~0ULL << (from * 8);
	__u64 keep_hi = to >= 8 ? ~0ULL : ~(~0ULL << (to * 8));
	__u64 keep = keep_lo & keep_hi;

	return (x & keep) | (RG_SWAR_ONES * ' ' & ~keep);
}

/* Rows of the bytes [from, to) of word x, the others not part of the stream. */
RG_INLINE __u32 rg_lp_count_span(struct rg_lp_state *s, __u64 x, __u32 from, __u32 to)
{
	__u64 keep_lo = from >= 8 ? 0 : ~0ULL << (from * 8);
	__u64 keep_hi = to >= 8 ? ~0ULL : ~(~0ULL << (to * 8));

	return rg_lp_count_word_pad(s, rg_lp_mask_word(x, from, to),
				    ~(keep_lo & keep_hi) & RG_SWAR_HIGH);
}

#ifndef __bpf__
/* Userspace: count rows in buf[0..len) with the word counter. */
static inline __u64 rg_lp_count(struct rg_lp_state *s, const __u8 *buf,
				__u64 len)
{
	__u64 rows = 0, i = 0;

	for (; i + RG_LP_WORD_BYTES <= len; i += RG_LP_WORD_BYTES)
		rows += rg_lp_count_word(s, rg_load_le64(buf + i));
	if (i < len) {
		__u8 tail[RG_LP_WORD_BYTES] = { 0 };
		__u64 j;

		for (j = 0; i + j < len; j++)
			tail[j] = buf[i + j];
		rows += rg_lp_count_span(s, rg_load_le64(tail), 0, (__u32)j);
	}
	return rows;
}

/*
 * Samples victoria-metrics (1.79, lib/protoparser/influx/parser.go and
 * lib/storage) stores for one line of line protocol, without its '\n': one
 * per field of a line it parses, none for a line it rejects, minus fields
 * whose value is NaN (storage keeps no NaN but Prometheus' staleness marker,
 * which line protocol cannot express).  Its rules, in order:
 *   - one trailing '\r' is dropped; an empty line or one whose first byte is
 *     '#' stores nothing;
 *   - measurement and tags end at the first unescaped ' ' (none: rejected);
 *     every tag needs an unescaped '=';
 *   - after spaces, fields end at the first ' ' outside double quotes, and
 *     are split at ',' outside quotes; a field needs an unescaped '=' with a
 *     non-empty key and a non-empty value; a value starting with '"' must end
 *     with '"'; one ending in 'i' must be -?[0-9]+ in int64 before it, in 'u'
 *     [0-9]+ in uint64; any other value parses (best effort: 0 if not a number);
 *   - a timestamp after the fields (after spaces) must be -?[0-9]+ in int64:
 *     a trailing space alone rejects the line.
 * A character is escaped by an odd run of backslashes before it.
 */
/* Index of the next unescaped c in p[from, n), or n; with quoted, a c
 * between unescaped double quotes does not count. */
static inline __u64 rg_lp_next(const __u8 *p, __u64 from, __u64 n, __u8 c, bool quoted)
{
	bool esc = false, inq = false;
	__u64 i;

	for (i = from; i < n; i++) {
		__u8 b = p[i];

		if (esc) {
			esc = false;
			continue;
		}
		if (b == '\\') {
			esc = true;
			continue;
		}
		if (quoted && b == '"')
			inq = !inq;
		else if (b == c && !inq)
			return i;
	}
	return n;
}

/* -?[0-9]+ (signed) or [0-9]+ within int64 / uint64, as fastfloat does. */
static inline bool rg_lp_int_ok(const __u8 *p, __u64 n, bool is_signed)
{
	__u64 v = 0, i = 0, lim;
	bool minus = false;

	if (is_signed && n && p[0] == '-') {
		minus = true;
		i = 1;
	}
	if (i >= n)
		return false;
	lim = !is_signed ? ~0ULL : minus ? 1ULL << 63 : (1ULL << 63) - 1;
	for (; i < n; i++) {
		__u64 d;

		if (p[i] < '0' || p[i] > '9')
			return false;
		d = p[i] - '0';
		if (v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	return true;
}

/* fastfloat.ParseBestEffort's NaN: "-"? "+"? then "nan" in any case. */
static inline bool rg_lp_is_nan(const __u8 *p, __u64 n)
{
	if (n && p[0] == '-')
		p++, n--;
	if (n && p[0] == '+')
		p++, n--;
	return n == 3 && (p[0] | 0x20) == 'n' && (p[1] | 0x20) == 'a' && (p[2] | 0x20) == 'n';
}

/* Samples of one field "key=value"; -1 when it rejects the line. */
static inline int rg_lp_vm_field(const __u8 *p, __u64 n)
{
	__u64 eq = rg_lp_next(p, 0, n, '=', false);
	const __u8 *v = p + eq + 1;
	__u64 vn;

	if (eq >= n || eq == 0)
		return -1;
	vn = n - eq - 1;
	if (!vn)
		return -1;
	if (v[0] == '"') {
		if (vn < 2 || v[vn - 1] != '"')
			return -1;
		return !rg_lp_is_nan(v + 1, vn - 2);
	}
	if (v[vn - 1] == 'i')
		return rg_lp_int_ok(v, vn - 1, true) ? 1 : -1;
	if (v[vn - 1] == 'u')
		return rg_lp_int_ok(v, vn - 1, false) ? 1 : -1;
	return !rg_lp_is_nan(v, vn);
}

static inline __u64 rg_lp_vm_samples(const __u8 *p, __u64 n)
{
	__u64 sp, i, end, ts, samples = 0;

	if (n && p[n - 1] == '\r')
		n--;
	if (!n || p[0] == '#')
		return 0;
	sp = rg_lp_next(p, 0, n, ' ', false);
	if (sp >= n)
		return 0;
	/* tags: after the measurement, each needs an '=' */
	i = rg_lp_next(p, 0, sp, ',', false);
	while (i < sp) {
		__u64 next = rg_lp_next(p, i + 1, sp, ',', false);

		if (rg_lp_next(p, i + 1, next, '=', false) >= next)
			return 0;
		i = next;
	}
	for (i = sp + 1; i < n && p[i] == ' '; i++)
		;
	end = rg_lp_next(p, i, n, ' ', true);
	for (;;) {
		__u64 comma = rg_lp_next(p, i, end, ',', true);
		int f = rg_lp_vm_field(p + i, comma - i);

		if (f < 0)
			return 0;
		samples += (__u64)f;
		if (comma >= end)
			break;
		i = comma + 1;
	}
	if (end < n) {
		for (ts = end + 1; ts < n && p[ts] == ' '; ts++)
			;
		if (!rg_lp_int_ok(p + ts, n - ts, true))
			return 0;
	}
	return samples;
}

/* The database victoria-metrics files a stored line under when the line
 * names one (app/vminsert/influx insertRows adds the query's db only when
 * no tag is `db`; lib/protoparser/influx unmarshalTags skips tags with an
 * empty key or value; lib/storage MetricName.sortTags keeps the last of
 * duplicate keys): the last `db` tag with a value.  Its value, still
 * escaped, is p[*from, *to); false when the line has none.  A key unescapes
 * to "db" only when it is "db" as sent. */
static inline bool rg_lp_vm_db_tag(const __u8 *p, __u64 n, __u64 *from, __u64 *to)
{
	__u64 sp = rg_lp_next(p, 0, n, ' ', false);
	__u64 i = rg_lp_next(p, 0, sp, ',', false);
	bool found = false;

	while (i < sp) {
		__u64 next = rg_lp_next(p, i + 1, sp, ',', false);
		__u64 eq = rg_lp_next(p, i + 1, next, '=', false);

		if (eq == i + 3 && p[i + 1] == 'd' && p[i + 2] == 'b' && next > eq + 1) {
			*from = eq + 1;
			*to = next;
			found = true;
		}
		i = next;
	}
	return found;
}
#endif

#endif /* ROWGATE_ROWS_H */
