/* SPDX-License-Identifier: GPL-2.0 */
/* The HTTP/1 verdict's side of HTTP/2: whether a --grpc port's
 * connection opens with the preface (rg_h2_opens), and so is handed to
 * rg_h2_verdict (rg_h2_start). */
#ifndef ROWGATE_BPF_H2_START_H
#define ROWGATE_BPF_H2_START_H

#include "../base.h"
#include "../maps.h"
#include "../conn.h"
#include "../skb_edit.h"
#include "../request.h"
#include "rowgate/h2/frame.h"

/* The HTTP/1 verdict's side: whether a --grpc port's connection opens with
 * the preface, and so is handed to rg_h2_verdict. */
enum rg_h2_open {
	RG_H2_OPEN_NO = 0,   /* not the HTTP/2 preface: HTTP/1 */
	RG_H2_OPEN_YES = 1,  /* the preface (at least "PRI", which no HTTP/1
			      * method starts with; the parser checks the rest) */
	RG_H2_OPEN_HOLD = 2, /* too few bytes to tell, all of them its start */
};

/* Whether a connection's first bytes, those held back (the stash) and
 * this skb's, open with the HTTP/2 preface: enum rg_h2_open.  A client
 * may send the preface in pieces of any size. */
__noinline int rg_h2_opens(struct __sk_buff *skb, struct rg_conn *c)
{
	struct rg_stash *buf = NULL;
	__u8 pre[32];
	__u32 held, n, i;

	if (!skb || !c)
		return RG_H2_OPEN_NO;
	held = c->stash_len;
	if (held >= 3)
		return RG_H2_OPEN_NO;
	if (held) {
		buf = rg_stash_of(skb, c);
		if (!buf)
			return RG_H2_OPEN_NO;
	}
	n = skb->len < RG_H2_PREFACE_LEN - held ? skb->len : RG_H2_PREFACE_LEN - held;
	if (n == 0 || bpf_skb_load_bytes(skb, 0, pre, ((n - 1) & 31) + 1))
		return RG_H2_OPEN_NO;
	for (i = 0; i < 2; i++)
		if (i < held && buf && buf->bytes[i] != rg_h2_preface_byte(i))
			return RG_H2_OPEN_NO;
	for (i = 0; i < RG_H2_PREFACE_LEN; i++)
		if (i < n && pre[i] != rg_h2_preface_byte(held + i))
			return RG_H2_OPEN_NO;
	return held + n >= 3 ? RG_H2_OPEN_YES : RG_H2_OPEN_HOLD;
}

/* A --grpc port's connection whose first bytes may be the preface
 * (nothing passed yet, nothing read as HTTP/1): 1 when it is HTTP/2 from
 * here on, the bytes held back in front of skb again; 0 when it is HTTP/1,
 * with the same; -1 when skb is held back too (the caller drops it).  A
 * global function: verified once, apart from the verdict's walk. */
__noinline int rg_h2_start(struct __sk_buff *skb, struct rg_conn *c)
{
	int open;

	if (!skb || !c)
		return 0;
	open = rg_h2_opens(skb, c);

	if (open == RG_H2_OPEN_HOLD && !rg_in_recvmsg(skb, c) &&
	    !rg_stash_append(skb, c, 0, skb->len)) {
		if (!bpf_skb_change_tail(skb, 0, 0)) {
			rg_global_inc(heads_split);
			return -1;
		}
		c->stash_len -= skb->len; /* cannot shrink: pass it */
		c->uncharged -= skb->len;
	}
	/* the held bytes go first; if they cannot, the connection is
	 * read as HTTP/1, which answers the preface 400: fail closed */
	if (c->stash_len && rg_unstash(skb, c))
		return 0;
	return open == RG_H2_OPEN_YES;
}

#endif /* ROWGATE_BPF_H2_START_H */
