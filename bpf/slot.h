/* SPDX-License-Identifier: GPL-2.0 */
/* The verdict slot (docs/design.md#verdict-slot): the programs attached to
 * the sockhash (rg_entry, rg_egress_entry) are the same in every build and
 * jump to the running build's verdict and egress programs through these
 * prog arrays, which rowgated fills.
 */
#ifndef ROWGATE_BPF_SLOT_H
#define ROWGATE_BPF_SLOT_H

#include "base.h"
#include "rowgate/abi.h"
#include "rowgate/guard.h"

/* verdict_slot: [RG_VERDICT_SLOT] -> the verdict of the running build.
 * Pinned, so it outlives rowgated: a prog array is cleared when its last
 * user reference (fd or pin) goes, not when the programs using it do. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, RG_VERDICT_SLOT + 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_VERDICT_SLOT SEC(".maps");

/* verdict_stats: [0] -> the entry's counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_verdict_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_VERDICT_STATS SEC(".maps");

/* egress_slot: [RG_VERDICT_SLOT] -> the egress program of the running
 * build, for the same reason as verdict_slot */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, RG_VERDICT_SLOT + 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_EGRESS_SLOT SEC(".maps");

#endif /* ROWGATE_BPF_SLOT_H */
