/* SPDX-License-Identifier: GPL-2.0 */
/* How the verdict walks an skb: windows of RG_WINDOW_BYTES loaded from it,
 * the bulk of a body counted a word at a time, and everything else fed
 * byte by byte to the request state machine (rg_feed_byte), with the runs
 * of head bytes a state reads alike taken a word at a time.  The cost figures are in
 * docs/design.md#row-counting.
 */
#ifndef ROWGATE_BPF_WALK_H
#define ROWGATE_BPF_WALK_H

#include "base.h"
#include "maps.h"
#include "conn.h"
#include "request.h"
#include "scratch.h"

/* What a bpf_loop callback needs: the skb, its connection, and the window
 * the skb's bytes are loaded into and the head parser's state (in a scratch
 * buffer, scratch.h).  Kept apart from the walk state, which global
 * functions may write. */
struct rg_loop {
	struct __sk_buff *skb;
	struct rg_conn *conn;
	struct rg_window *win;
	struct rg_http_head *head;
};

/* Body bytes ahead that are plain data: the rest of a Content-Length body
 * or of the current chunk's data (0 elsewhere). */
static __always_inline __u64 rg_data_ahead(const struct rg_conn *c)
{
	if (c->phase == RG_PHASE_BODY_LENGTH)
		return c->body_remaining;
	if (c->phase == RG_PHASE_BODY_CHUNKED && c->chunk.state == RG_CS_DATA)
		return c->chunk.remaining;
	return 0;
}

#define RG_BYTES_PER_STEP 8 /* byte steps per bpf_loop iteration */

/*
 * The head bytes at w->pos that rg_http_head_take_word() takes at once, as
 * many byte steps would; returns how many (0: step one).  A global
 * function: verified once, not once per state of the callback's steps.
 */
__noinline int rg_head_word(struct rg_conn *c, const struct rg_window *win,
			    struct rg_http_head *h)
{
	struct rg_walk *w;
	__u32 p, n;

	if (!c || !win || !h)
		return 0;
	w = &c->w;
	p = w->pos;
	if (p + 8 > w->win_len || p > RG_WINDOW_BYTES - 8)
		return 0;
	n = rg_http_head_take_word(h, *(const __u64 *)&win->b[p & (RG_WINDOW_BYTES - 1)]);
	w->pos = p + n;
	return (int)n;
}

/* Up to RG_BYTES_PER_STEP bytes of the window per iteration (the frames of
 * nested callbacks and global functions are limited, so no deeper call). */
static long rg_byte_cb(__u64 idx, void *ctx)
{
	struct rg_loop *l = ctx;
	struct rg_conn *c = l->conn;
	const struct rg_window *win = l->win;
	struct rg_walk *w = &c->w;
	__u32 i, p;

	for (i = 0; i < RG_BYTES_PER_STEP; i++) {
		p = w->pos;
		if (w->stop || p >= w->win_len || p >= RG_WINDOW_BYTES)
			return 1;
		/* the db tag reader yields past a tag section, not at its '\n' */
		if (w->yield_to_bulk && rg_data_ahead(c) > 8 &&
		    (!c->scan_db || (c->dbt.state == RG_DBT_REST &&
				     win->b[p & (RG_WINDOW_BYTES - 1)] != '\n')))
			return 1;
		if (c->phase == RG_PHASE_HEAD) {
			if (!c->head_begun)
				rg_head_begin(c, l->head, w->win_off + p);
			/* a state that never takes a word costs no call */
			if (rg_http_head_may_take(l->head) && rg_head_word(c, win, l->head))
				continue;
		}
		w->pos = p + 1;
		if (c->scan_db && c->phase == RG_PHASE_BODY_LENGTH && c->body_remaining > 1 &&
		    !c->count_rows) {
			/* a tag section's byte, and not the body's last: the db
			 * tag reader's alone, without a call per byte */
			c->body_bytes++;
			c->body_remaining--;
			if (rg_lp_dbtag_step(&c->dbt, win->b[p & (RG_WINDOW_BYTES - 1)]) &&
			    rg_body_db_check(l->skb, c))
				return 1;
			continue;
		}
		if (rg_feed_byte(l->skb, c, w->win_off + p, win->b[p & (RG_WINDOW_BYTES - 1)],
				 l->head))
			return 1;
	}
	return 0;
}

/* The offset of the first '\n' of the window in [from, to), or to. */
static __always_inline __u32 rg_scan_newline(const struct rg_window *win, __u32 from, __u32 to)
{
	__u32 n, i, at, first = from / 8, last = (to - 1) / 8;

	RG_UNROLL
	for (n = 0; n < RG_WINDOW_BYTES / 8; n++) {
		__u64 x, m;

		i = first + n;
		if (i > last || i >= RG_WINDOW_BYTES / 8)
			break;
		x = rg_window_word(win, i) ^ (RG_SWAR_ONES * '\n');
		/* the lowest flagged byte is the first '\n' exactly */
		m = (x - RG_SWAR_ONES) & ~x & RG_SWAR_HIGH;
		if (n == 0)
			m &= ~0ULL << ((from & 7) * 8);
		if (!m)
			continue;
		/* the flag's byte index: bit 8j+7 alone, times bytes 7..0 */
		at = i * 8 + (__u32)((((m & -m) >> 7) * 0x0001020304050607ULL) >> 56);
		return at < to ? at : to;
	}
	return to;
}

/*
 * The bulk of a Content-Length body or of a chunk's data in the loaded
 * window, from w->pos: whole words through the SWAR counter instead of
 * per-byte steps.  The last byte of the body (or chunk) is left to the
 * byte path, which ends the request (or the chunk).
 */
__noinline int rg_bulk_body(struct rg_conn *c, const struct rg_window *win)
{
	struct rg_walk *w;
	__u32 from, to, i, k;
	__u64 ahead;

	if (!c || !win)
		return 0;
	w = &c->w;
	ahead = rg_data_ahead(c);
	if (ahead <= 1 || w->pos >= w->win_len || w->win_len > RG_WINDOW_BYTES)
		return 0;
	from = w->pos;
	k = w->win_len - from;
	if (ahead - 1 < k)
		k = (__u32)(ahead - 1);
	to = from + k;
	if (c->scan_db) {
		/* the db tag reader takes every byte of a line's tag section;
		 * the rest of the line, up to its '\n', is skipped here */
		if (c->dbt.state != RG_DBT_REST || !k)
			return 0;
		to = rg_scan_newline(win, from, to);
		k = to - from;
		/* never counted: the verifier need not walk the counter once
		 * per place the scan can end (6.12 went past 1M steps) */
		goto advance;
	}
	if (c->count_rows && k) {
		/* read as words: clang 14 loads a byte array at a variable
		 * index byte by byte, even where it is aligned */
		struct rg_lp_state lp = c->lp;
		__u32 first = from / 8, last = (to - 1) / 8;
		__u64 rows;

		if (first >= RG_WINDOW_BYTES / 8 || last >= RG_WINDOW_BYTES / 8)
			return 0;
		if (first == last) {
			rows = rg_lp_count_span(&lp, rg_window_word(win, first), from - first * 8,
						to - first * 8);
		} else {
			/* only the edge words are masked */
			rows = rg_lp_count_span(&lp, rg_window_word(win, first), from - first * 8, 8);
			for (i = first + 1; i < last && i < RG_WINDOW_BYTES / 8; i++)
				rows += rg_lp_count_word(&lp, rg_window_word(win, i));
			rows += rg_lp_count_span(&lp, rg_window_word(win, last), 0, to - last * 8);
		}
		c->lp = lp;
		c->req_rows += rows;
	}
advance:
	if (c->phase == RG_PHASE_BODY_LENGTH)
		c->body_remaining -= k;
	else
		c->chunk.remaining -= k;
	c->body_bytes += k;
	w->pos = to;
	return 0;
}

/* Segments of one window: body bulk and byte steps alternate (a head, then
 * its body; a body's end, then the next head); past this many the rest of
 * the window goes byte by byte. */
#define RG_WINDOW_SEGMENTS 3

/* One window of up to RG_WINDOW_BYTES bytes of the skb. */
static __maybe_unused long rg_window_cb(__u64 idx, void *ctx)
{
	struct rg_loop *l = ctx;
	struct rg_conn *c = l->conn;
	struct rg_walk *w = &c->w;
	__u32 off = (__u32)idx * RG_WINDOW_BYTES;
	__u32 n, seg;

	if (w->stop || off >= w->len)
		return 1;
	n = w->len - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1; /* [1, 256] for the verifier */
	/* inside a body nobody counts or copies: no need to look at it */
	if (c->phase == RG_PHASE_BODY_LENGTH && !c->count_rows && !c->copy_body &&
	    c->body_remaining > n) {
		c->body_remaining -= n;
		c->body_bytes += n;
		return 0;
	}
	if (bpf_skb_load_bytes(l->skb, off, l->win->b, n)) {
		rg_global_inc(internal_errors);
		w->stop = 1;
		w->must_pass = 1;
		return 1;
	}
	w->win_off = off;
	w->win_len = n;
	w->pos = 0;
	for (seg = 0; seg <= RG_WINDOW_SEGMENTS; seg++) {
		rg_bulk_body(c, l->win);
		if (w->stop || w->pos >= n)
			break;
		/* byte steps yield back when a body worth the bulk path starts */
		w->yield_to_bulk = seg < RG_WINDOW_SEGMENTS;
		bpf_loop((n - w->pos + RG_BYTES_PER_STEP - 1) / RG_BYTES_PER_STEP + 1, rg_byte_cb,
			 l, 0);
		if (w->stop || w->pos >= n)
			break;
	}
	return w->stop ? 1 : 0;
}

#endif /* ROWGATE_BPF_WALK_H */
