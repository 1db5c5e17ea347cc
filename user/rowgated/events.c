// SPDX-License-Identifier: GPL-2.0
/* Fail-open and fail-closed events: the kernel counts what it let through
 * unenforced, or refused for safety, and cannot log; this turns the growth
 * of those counters into one event line per reason at most every second,
 * with the count since the last (docs/logging.md).  Read at most every
 * RG_EVENT_INTERVAL_MS, which is the rate limit of these lines. */
#include <stddef.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "rowgate/counters.h"
#include "rowgate/guard.h"
#include "../lib/clock.h"
#include "../lib/counters.h"
#include "../lib/log.h"
#include "reconcile.h"
#include "rowgated.h"

enum source { GLOBAL, H2, GUARD, VERDICT, RECONCILE, NR_SOURCES };

/* One counter whose growth is an event: "event=EVENT reason=REASON". */
static const struct watch {
	enum source src;
	size_t off; /* of its __u64 in the source's struct */
	const char *event;
	const char *reason;
} watches[] = {
#define G(f) GLOBAL, offsetof(struct rg_global_stats, f)
#define H(f) H2, offsetof(struct rg_h2_stats, f)
	/* passed without enforcement */
	{ G(conns_untracked), "fail_open", "conns_full" },
	{ G(recvmsg_failopen), "fail_open", "recvmsg" },
	{ G(internal_errors), "fail_open", "internal_error" },
	{ G(pipelined_unenforced), "fail_open", "pipelined" },
	{ G(body_db_unenforced), "fail_open", "body_db" },
	{ H(h2_unenforced), "fail_open", "h2_recvmsg" },
	{ G(closed_unseen), "fail_open", "closed_unseen" },
	/* counted from the estimate only: the body copy was lost */
	{ G(body_ring_full), "fail_open", "body_ring_full" },
	{ H(h2_compressed_lost), "fail_open", "h2_compressed_lost" },
	{ VERDICT, offsetof(struct rg_verdict_stats, verdict_missing), "fail_open",
	  "verdict_missing" },
	{ VERDICT, offsetof(struct rg_verdict_stats, egress_missing), "fail_open",
	  "egress_missing" },
	/* refused for safety */
	{ GUARD, offsetof(struct rg_guard_stats, conns_refused), "fail_closed", "conns_full" },
	{ H(h2_failclosed), "fail_closed", "h2" },
	{ H(h2_compressed_dbs_full), "fail_closed", "h2_compressed_dbs_full" },
	{ RECONCILE, offsetof(struct rg_reconcile_stats, over_memory), "fail_closed",
	  "copy_memory" },
	/* a gRPC refusal --grpc-reject keep could not keep: GOAWAY instead */
	{ H(h2_fallback_head_split), "h2_reject_fallback", "head_split" },
	{ H(h2_fallback_short), "h2_reject_fallback", "short" },
	{ H(h2_fallback_later_split), "h2_reject_fallback", "later_split" },
	{ H(h2_fallback_full), "h2_reject_fallback", "full" },
	{ H(h2_fallback_per_skb), "h2_reject_fallback", "per_skb" },
	{ H(h2_fallback_name), "h2_reject_fallback", "name" },
	{ H(h2_fallback_egress), "h2_reject_fallback", "egress" },
#undef H
#undef G
};

#define NR_WATCHES (sizeof(watches) / sizeof(watches[0]))

void rgd_fail_events(struct daemon *d)
{
	static __u64 seen[NR_WATCHES], last_ns;
	static bool started;
	struct rg_global_stats g = {};
	struct rg_h2_stats h2 = {};
	struct rg_guard_stats gs = {};
	struct rg_verdict_stats vs = {};
	struct rg_reconcile_stats rs = {};
	const void *src[NR_SOURCES] = { &g, &h2, &gs, &vs, &rs };
	__u64 now = rg_monotonic_ns(), v;
	__u32 zero = 0;
	size_t i;

	if (started && now - last_ns < RG_EVENT_INTERVAL_MS * RG_NSEC_PER_MSEC)
		return;
	last_ns = now;
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL), &zero, &g);
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_H2_STATS), &zero, &h2);
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD_STATS), &zero, &gs);
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_STATS), &zero, &vs);
	if (d->rec)
		rg_reconciler_stats(d->rec, &rs);
	for (i = 0; i < NR_WATCHES; i++) {
		memcpy(&v, (const char *)src[watches[i].src] + watches[i].off, sizeof(v));
		/* what happened before this start was logged then; a counter
		 * that went back (maps recreated) starts over */
		if (started && v > seen[i])
			rg_event(watches[i].event, "reason=%s count=%llu total=%llu",
					 watches[i].reason, (unsigned long long)(v - seen[i]),
					 (unsigned long long)v);
		seen[i] = v;
	}
	started = true;
	rg_log_tick();
}
