/* SPDX-License-Identifier: GPL-2.0 */
/* Per-CPU scratch for what a connection needs only inside one verdict run:
 * the window of skb bytes the walk reads, the head parser's state (saved to
 * the stash entry only when a run ends inside a head), and the text of
 * rowgate's own answers (a 429 or a 400).  Kept out of rg_conn so an idle connection
 * does not carry them (docs/design.md#per-connection-state).
 *
 * A verdict can be interrupted on its CPU by a softirq running another
 * verdict, and on a fully preemptible kernel a task holding a buffer can be
 * preempted by another task on the same CPU, so a single per-CPU buffer is
 * not safe and a nesting counter is not either (the holders need not end in
 * the order they began).  Each buffer is claimed with a compare-and-swap and
 * put back as soon as the walk ends or the answer is copied out.
 */
#ifndef ROWGATE_BPF_SCRATCH_H
#define ROWGATE_BPF_SCRATCH_H

#include "base.h"
#include "maps.h"
#include "conn.h"
#include "rowgate/response.h"

/* Holders at once on one CPU: a task and the softirq that interrupts it, and
 * room for tasks preempted while holding one. */
#define RG_SCRATCH_SLOTS 4

/* A window of skb bytes, and a word past it for whole-word reads. */
struct rg_window {
	__u8 b[RG_WINDOW_BYTES + 8] __attribute__((aligned(8)));
};

/* Word i of a window.  The mask sits behind a barrier, or clang drops it
 * where i was already checked, and through unrolled or strength-reduced
 * loops the verifier loses that check: without it a read can be proven
 * only 264 bytes in, past the buffer. */
static __always_inline __u64 rg_window_word(const struct rg_window *win, __u32 i)
{
	barrier_var(i);
	return ((const __u64 *)win->b)[i & (RG_WINDOW_BYTES / 8 - 1)];
}

struct rg_scratch {
	struct rg_response plan;
	struct rg_resp_buf text;
	struct rg_window win;
	struct rg_http_head head;
};

struct rg_scratch_cpu {
	__u32 busy[RG_SCRATCH_SLOTS];
	struct rg_scratch slot[RG_SCRATCH_SLOTS];
};

/* scratch: [0] -> this CPU's buffers; not pinned: it belongs to one load,
 * and holds nothing between two programs' runs */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_scratch_cpu);
} scratch SEC(".maps");

/* This CPU's buffers (NULL only if the map is missing). */
static __always_inline struct rg_scratch_cpu *rg_scratch_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/*
 * Claim a free buffer of cpu: its slot, or -1 (counted: every slot held).
 * A global function, verified once: the caller sees the slot as an unknown
 * number, so its paths do not multiply by the slot it got.
 */
__noinline int rg_scratch_claim(struct rg_scratch_cpu *cpu)
{
	__u32 i;

	if (!cpu)
		return -1;
	for (i = 0; i < RG_SCRATCH_SLOTS; i++) {
		if (__sync_val_compare_and_swap(&cpu->busy[i], 0, 1) == 0)
			return (int)i;
	}
	rg_global_inc(internal_errors);
	return -1;
}

/* The buffer of a claimed slot (>= 0). */
static __always_inline struct rg_scratch *rg_scratch_of(struct rg_scratch_cpu *cpu, int slot)
{
	return &cpu->slot[slot & (RG_SCRATCH_SLOTS - 1)];
}

/* Give back what rg_scratch_claim returned. */
static __always_inline void rg_scratch_put(struct rg_scratch_cpu *cpu, int slot)
{
	__sync_lock_test_and_set(&cpu->busy[slot & (RG_SCRATCH_SLOTS - 1)], 0);
}

#endif /* ROWGATE_BPF_SCRATCH_H */
