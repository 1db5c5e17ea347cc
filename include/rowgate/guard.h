/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Enforcement continuity: the pins that make up "enforcing" besides the maps
 * of abi.h, what rowgated records about the cgroup it guards, the
 * connection-table policy and the adoption of connections that predate a
 * start.  Read by BPF (adoption, fail-closed), rowgated and rowgatectl status.
 */
#ifndef ROWGATE_GUARD_H
#define ROWGATE_GUARD_H

#include "types.h"
#include "counters.h"

/* Pins under the bpffs directory besides the maps (names as in abi.h). */
#define RG_PIN_LINK_SOCKOPS "link_sockops"
#define RG_PIN_LINK_PEER4   "link_getpeername4"
#define RG_PIN_LINK_PEER6   "link_getpeername6"
#define RG_PIN_LINK_REFUSE  "link_refuse" /* --conns-full=fail-closed only */
#define RG_PIN_LINK_RESETS  "link_resets" /* rg_hold_reset, cgroup ingress */
#define RG_PIN_PROG_VERDICT "prog_verdict" /* what is attached to the sockhash: rg_entry */
#define RG_PIN_PROG_EGRESS  "prog_egress" /* sk_msg on the sockhash */

#define RG_MAP_GUARD	   guard       /* [0] -> struct rg_guard */
#define RG_MAP_GUARD_STATS guard_stats /* [0] -> struct rg_guard_stats */
#define RG_MAP_ADOPT	   adopting    /* cookie -> struct rg_adopt */
#define RG_MAP_VERDICT_SLOT  verdict_slot  /* [RG_VERDICT_SLOT] -> the verdict program */
#define RG_MAP_EGRESS_SLOT   egress_slot   /* [RG_VERDICT_SLOT] -> the egress program */
#define RG_MAP_H2_SLOT       h2_slot       /* [RG_VERDICT_SLOT] -> the HTTP/2 verdict */
#define RG_MAP_VERDICT_STATS verdict_stats /* [0] -> struct rg_verdict_stats */

/* The program attached to the sockhash is a fixed entry that tail-calls the
 * verdict in this slot of the pinned verdict_slot prog array: a socket's
 * psock copies the sockhash's program when it is inserted, so only a slot
 * swapped by rowgated reaches the connections already open
 * (docs/design.md#verdict-slot). */
#define RG_VERDICT_SLOT	   0
#define RG_ENTRY_PROG_NAME "rg_entry" /* how a sockhash running the entry is recognised */
/* The same for the sk_msg program that follows the server's responses:
 * rg_egress_entry tail-calls rg_egress in the egress_slot prog array. */
#define RG_EGRESS_ENTRY_PROG_NAME "rg_egress_entry"
#define RG_BUILD_ID_VAR	   "rg_build_id" /* .rodata variable: which build an object is */

/* The layout of every pinned map.  Bump it when a pinned map's key or
 * value changes (abi.h, guard.h, bpf/conn.h): a rowgated refuses pins of
 * another version rather than reading them wrong.  Pins without a guard
 * record predate the number and are version 1.  4: the HPACK shadow in
 * h2_conns keeps a :path's kind as its protocol id (issue 38).  5: the
 * HTTP/2 counters left global_stats for h2_stats; a stream's copy state
 * moved into its slot, streams past the slots park in h2_parked (issue
 * 35).  6: the stash left conns for a map of its own, stash (issue 37).
 * 7: an answer's text and plan left conns for per-CPU buffers; 8: so did
 * the walk's window and the routes key; 9: and the head parser's state,
 * which the stash entry keeps for a head split across skbs (issue 37). */
#define RG_ABI_VERSION 9

#define RG_CGROUP_PATH_MAX 256 /* bytes of a recorded cgroup path, NUL included */

/* guard: what rowgated attached, for rowgatectl status and the re-attach
 * check (the attachments themselves are queried from the kernel). */
struct rg_guard {
	__u64 cgroup_id;	/* inode of the cgroup directory when attached */
	__u64 adopted;		/* connections adopted at starts and re-attaches */
	__u32 conns_full_close; /* 1: --conns-full=fail-closed */
	__u32 max_conns;
	__u32 abi_version; /* RG_ABI_VERSION of the rowgated that attached */
	__u32 pad;
	char cgroup_path[RG_CGROUP_PATH_MAX];
};

/* guard_stats: host-wide counters of adoption and the connection table. */
struct rg_guard_stats {
	RG_GUARD_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* verdict_stats: the entry's counters (counters.h). */
struct rg_verdict_stats {
	RG_VERDICT_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* adopting: a connection found established at a start (rowgated inserts
 * it with a zeroed state), passed untouched until its next byte provably
 * starts a request: the server has written since the last client bytes (or
 * had, at adoption, read everything and answered after it) and the bytes
 * begin with a request line.  Then the verdict takes it like a new one. */
struct rg_adopt {
	__u64 adopted_ns;  /* CLOCK_MONOTONIC (bpf_ktime_get_ns) at adoption */
	__u64 write_seq;   /* server's write_seq when client bytes last passed */
	__u32 at_boundary; /* at adoption: nothing unread, answered since */
	__u32 seq_known;   /* write_seq is set */
	/* since when the server's connection timer has run: its last send
	 * before adoption (or the establishment), then the last client bytes
	 * passed (docs/server-profiles.md#server-timeouts) */
	__u64 timer_from_ns;
};

#endif /* ROWGATE_GUARD_H */
