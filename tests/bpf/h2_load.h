/* SPDX-License-Identifier: GPL-2.0 */
/* Per-connection state of the h2 parser test verdict (h2_load.bpf.c),
 * shared with its userspace driver (h2_kern.c). */
#ifndef ROWGATE_TEST_H2_LOAD_H
#define ROWGATE_TEST_H2_LOAD_H

#include "rowgate/h2/frame.h"

#define H2_WINDOW_BYTES 256 /* bytes loaded from the skb at a time */
#define H2_MAX_CONNS    1024

struct h2_state {
	struct rg_h2_conn h;
	__u8 win[H2_WINDOW_BYTES];
	__u32 win_len;
	__u32 pos;      /* in win */
	__u32 win_off;  /* skb offset of win[0] */
	__s32 err;      /* the first parser error */
	__u64 messages;
	__u64 rows;     /* of charged messages */
	__u64 bytes;    /* received bytes the verdict saw */
};

#endif
