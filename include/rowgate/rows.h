/* Exact row counting of InfluxDB line protocol, streamed in chunks.
 *
 * A row is a line whose first byte that is not blank (' ', '\t', '\r') is
 * neither '#' (a comment) nor '\n' (an empty line); CRLF endings and a last
 * line without a newline count like any other.  The state between chunks is
 * one flag: whether the stream is at the start of a line (still in its
 * leading blanks).  The word counter is branch-free SWAR over 8 bytes, so
 * the BPF verifier sees a straight line and the kernel counts at memory
 * speed; the byte counter is the reference it is tested against.
 */
#ifndef ROWGATE_ROWS_H
#define ROWGATE_ROWS_H

#include "types.h"

#define RG_LP_WORD_BYTES 8
#define RG_SWAR_ONES  0x0101010101010101ULL
#define RG_SWAR_LOW7  0x7f7f7f7f7f7f7f7fULL
#define RG_SWAR_HIGH  0x8080808080808080ULL

/* Streaming state: at_line_start = 1 while no significant byte was seen. */
struct rg_lp_state {
	__u8 at_line_start;
};

RG_INLINE void rg_lp_init(struct rg_lp_state *s)
{
	s->at_line_start = 1;
}

RG_INLINE bool rg_lp_is_blank(__u8 c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Reference byte step: returns 1 when c starts a row. */
RG_INLINE __u32 rg_lp_step(struct rg_lp_state *s, __u8 c)
{
	if (c == '\n') {
		s->at_line_start = 1;
		return 0;
	}
	if (!s->at_line_start || rg_lp_is_blank(c))
		return 0;
	s->at_line_start = 0;
	return c != '#';
}

/* 0x80 in every byte of x equal to c, exactly (no false positives). */
RG_INLINE __u64 rg_swar_eq(__u64 x, __u8 c)
{
	__u64 t = x ^ (RG_SWAR_ONES * c);

	return ~(((t & RG_SWAR_LOW7) + RG_SWAR_LOW7) | t) & RG_SWAR_HIGH;
}

/* Number of bytes flagged 0x80 in m. */
RG_INLINE __u32 rg_swar_count(__u64 m)
{
	return (__u32)(((m >> 7) * RG_SWAR_ONES) >> 56);
}

/*
 * Count the rows starting in one little-endian word (byte i = bits 8i..8i+7).
 * Line-start positions are the bytes after a '\n' (or byte 0 when the stream
 * is at a line start), carried forward through runs of blanks; a row starts
 * at such a position when its byte is not blank, '\n' or '#'.
 */
RG_INLINE __u32 rg_lp_count_word(struct rg_lp_state *s, __u64 x)
{
	__u64 nl = rg_swar_eq(x, '\n');
	__u64 blank, hash, start, rows;

	/* most words sit inside a line: no row can start there */
	if (!nl && !s->at_line_start)
		return 0;
	blank = rg_swar_eq(x, ' ') | rg_swar_eq(x, '\t') | rg_swar_eq(x, '\r');
	hash = rg_swar_eq(x, '#');
	start = (nl << 8) | ((__u64)s->at_line_start << 7);

	/* propagate line starts through up to 7 blanks: fixed, branch-free */
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	start |= (start & blank) << 8;
	rows = start & ~(blank | nl | hash);
	/* the next word starts a line after '\n', or after blanks at one */
	s->at_line_start = (__u8)((((nl | (start & blank)) >> 63)) & 1);
	return rg_swar_count(rows);
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
 * middle), so a partial word counts exactly like its bytes.
 */
RG_INLINE __u64 rg_lp_mask_word(__u64 x, __u32 from, __u32 to)
{
	__u64 keep_lo = from >= 8 ? 0 : ~0ULL << (from * 8);
	__u64 keep_hi = to >= 8 ? ~0ULL : ~(~0ULL << (to * 8));
	__u64 keep = keep_lo & keep_hi;

	return (x & keep) | (RG_SWAR_ONES * ' ' & ~keep);
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
		rows += rg_lp_count_word(
			s, rg_lp_mask_word(rg_load_le64(tail), 0, (__u32)j));
	}
	return rows;
}
#endif

#endif /* ROWGATE_ROWS_H */
