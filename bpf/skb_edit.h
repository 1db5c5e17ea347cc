/* SPDX-License-Identifier: GPL-2.0 */
/* Editing the skb the verdict holds: head fragments stashed in the
 * connection and written back in front of the next skb
 * (docs/design.md#split-heads), space padding, and resizing within what the
 * helpers allow (docs/design.md#resizing-limits).  Every change here moves
 * what TCP charges for the skb (docs/design.md#tcp-read-accounting).
 */
#ifndef ROWGATE_BPF_SKB_EDIT_H
#define ROWGATE_BPF_SKB_EDIT_H

#include "base.h"
#include "conn.h"

/* The connection's stash entry (struct rg_stash), or NULL when it has none. */
static __always_inline struct rg_stash *rg_stash_of(struct __sk_buff *skb, struct rg_conn *c)
{
	__u64 cookie;

	if (!c->stash_held)
		return NULL;
	cookie = bpf_get_socket_cookie(skb);
	return bpf_map_lookup_elem(&RG_MAP_STASH, &cookie);
}

/* Its stash entry, taken from the stash map when it has none: NULL when
 * the kernel has no memory for one. */
static __always_inline struct rg_stash *rg_stash_take(struct __sk_buff *skb, struct rg_conn *c)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct rg_stash *tmpl, *buf;
	__u32 zero = 0;

	if (c->stash_held)
		return bpf_map_lookup_elem(&RG_MAP_STASH, &cookie);
	tmpl = bpf_map_lookup_elem(&stash_zero, &zero);
	if (!tmpl || bpf_map_update_elem(&RG_MAP_STASH, &cookie, tmpl, BPF_ANY))
		return NULL;
	buf = bpf_map_lookup_elem(&RG_MAP_STASH, &cookie);
	if (buf)
		c->stash_held = 1;
	return buf;
}

/* Give the stash entry back once nothing is held (no bytes, no head
 * parser's state): after an HTTP/1 head is written back, else at the start
 * of the connection's next verdict run (or at close), so HTTP/2 frames held
 * skb after skb keep one entry.  Not at the end of every run: keeping c
 * live to the exits grows the verdicts' frames past 6.1's 512-byte limit
 * for a chain of calls. */
static __always_inline void rg_stash_release(struct rg_conn *c, __u64 cookie)
{
	if (c->stash_held && !c->stash_len && !c->head_saved) {
		bpf_map_delete_elem(&RG_MAP_STASH, &cookie);
		c->stash_held = 0;
	}
}

/* The head parser's state that the last run left in the stash entry, into
 * h (the run's scratch buffer): 0, or -1 if it was not saved.  This and
 * rg_head_keep are global functions, verified once rather than on each
 * path of the verdict. */
__noinline int rg_head_restore(struct __sk_buff *skb, struct rg_conn *c, struct rg_http_head *h)
{
	struct rg_stash *buf;

	if (!skb || !c || !h || !c->head_saved)
		return -1;
	buf = rg_stash_of(skb, c);
	if (!buf)
		return -1;
	__builtin_memcpy(h, &buf->head, sizeof(*h));
	return 0;
}

/* At the end of a walk: a head it ended inside, which a later skb goes on
 * with, keeps its parser's state h in the stash entry.  If no entry can be
 * had, the next run finds it unsaved and fails closed. */
__noinline int rg_head_keep(struct __sk_buff *skb, struct rg_conn *c, const struct rg_http_head *h)
{
	struct rg_stash *buf;

	if (!skb || !c || !h)
		return 0;
	c->head_saved = 0;
	if (c->phase != RG_PHASE_HEAD || !c->head_begun || c->w.respond ||
	    c->mode != RG_MODE_HTTP)
		return 0;
	buf = rg_stash_take(skb, c);
	if (!buf) {
		rg_global_inc(internal_errors);
		return 0;
	}
	__builtin_memcpy(&buf->head, h, sizeof(*h));
	c->head_saved = 1;
	return 0;
}

const char spaces[RG_WINDOW_BYTES] = { [0 ... RG_WINDOW_BYTES - 1] = ' ' };

/* Copy skb bytes [from, from + n) into the stash at stash_len (n small). */
struct rg_stash_ctx {
	struct __sk_buff *skb;
	struct rg_conn *conn;
	struct rg_stash *buf;
	__u32 from;
	__u32 n;
	__s32 err;
};

static long rg_stash_cb(__u64 idx, void *ctx)
{
	struct rg_stash_ctx *s = ctx;
	struct rg_conn *c = s->conn;
	__u32 done = (__u32)idx * RG_WINDOW_BYTES;
	__u32 dst, n;

	if (done >= s->n)
		return 1;
	n = s->n - done;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	dst = (c->stash_len + done) & (RG_HEAD_MAX_BYTES - 1);
	s->err = bpf_skb_load_bytes(s->skb, s->from + done, &s->buf->bytes[dst], n);
	return s->err ? 1 : 0;
}

static __always_inline int rg_stash_append(struct __sk_buff *skb, struct rg_conn *c,
					   __u32 from, __u32 n)
{
	struct rg_stash_ctx s = { .skb = skb, .conn = c, .from = from, .n = n };

	if (n == 0)
		return 0;
	if ((__u32)c->stash_len + n > RG_HEAD_MAX_BYTES)
		return -1;
	s.buf = rg_stash_take(skb, c);
	if (!s.buf)
		return -1;
	bpf_loop((n + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_stash_cb, &s, 0);
	if (s.err)
		return -1;
	c->stash_len += n;
	c->uncharged += n;
	return 0;
}

/* Write the stash back in front of the skb (the head it belongs to is
 * admitted): grow in steps adjust_room allows, then store the bytes. */
static long rg_unstash_cb(__u64 idx, void *ctx)
{
	struct rg_stash_ctx *s = ctx;
	__u32 off = (__u32)idx * RG_WINDOW_BYTES;
	__u32 n;

	if (off >= s->n)
		return 1;
	n = s->n - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	s->err = bpf_skb_store_bytes(s->skb, off, &s->buf->bytes[off & (RG_HEAD_MAX_BYTES - 1)],
				      n, 0);
	return s->err ? 1 : 0;
}

static __always_inline int rg_grow_front(struct __sk_buff *skb, __u32 n)
{
	__u32 i;

	for (i = 0; i < 3 && n; i++) {
		__u32 step = n > RG_ADJUST_MAX ? RG_ADJUST_MAX : n;

		if (bpf_skb_adjust_room(skb, (__s32)step, 0, 0))
			return -1;
		n -= step;
	}
	return n ? -1 : 0;
}

/* Cut n bytes (at most 16 steps of adjust_room) off the front of the skb.
 * 0; -1 when nothing was cut; -2 when part was. */
static __always_inline int rg_cut_front(struct __sk_buff *skb, __u32 n)
{
	__u32 i, step;

	for (i = 0; i < 16 && n; i++) {
		step = n > RG_ADJUST_MAX ? RG_ADJUST_MAX : n;
		if (bpf_skb_adjust_room(skb, -(__s32)step, 0, 0))
			return i ? -2 : -1;
		n -= step;
	}
	return n ? -2 : 0;
}

/* Cut the whole skb away, from the front: after rg_grow_front,
 * change_tail refuses to cut below the grown bytes (the minimum length it
 * allows moved with them), adjust_room does not.  0; -1 when nothing was
 * cut; -2 when part was. */
static __always_inline int rg_empty_skb(struct __sk_buff *skb)
{
	return rg_cut_front(skb, skb->len);
}

static __always_inline int rg_unstash(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_stash_ctx s = { .skb = skb, .conn = c, .n = c->stash_len };

	if (!s.n)
		return 0;
	s.buf = rg_stash_of(skb, c);
	if (!s.buf || rg_grow_front(skb, s.n))
		return -1;
	bpf_loop((s.n + RG_WINDOW_BYTES - 1) / RG_WINDOW_BYTES, rg_unstash_cb, &s, 0);
	if (s.err)
		return -1;
	c->uncharged -= c->stash_len;
	c->stash_len = 0;
	return 0;
}

/* Pad skb bytes [from, len) with spaces. */
struct rg_pad_ctx {
	struct __sk_buff *skb;
	__u32 from;
	__u32 len;
	__s32 err;
};

static __maybe_unused long rg_pad_cb(__u64 idx, void *ctx)
{
	struct rg_pad_ctx *p = ctx;
	__u32 off = p->from + (__u32)idx * RG_WINDOW_BYTES;
	__u32 n;

	if (off >= p->len)
		return 1;
	n = p->len - off;
	if (n > RG_WINDOW_BYTES)
		n = RG_WINDOW_BYTES;
	n = ((n - 1) & (RG_WINDOW_BYTES - 1)) + 1;
	p->err = bpf_skb_store_bytes(p->skb, off, spaces, n, 0);
	return p->err ? 1 : 0;
}

/* Make the skb exactly len bytes long. */
static __always_inline int rg_resize(struct __sk_buff *skb, __u32 len)
{
	__u32 cur = skb->len;

	if (cur == len)
		return 0;
	if (len <= RG_CHANGE_TAIL_MAX && cur <= RG_CHANGE_TAIL_MAX)
		return bpf_skb_change_tail(skb, len, 0);
	if (len > cur)
		return rg_grow_front(skb, len - cur);
	return -1; /* a large skb cannot shrink from the tail */
}

#endif /* ROWGATE_BPF_SKB_EDIT_H */
