/* SPDX-License-Identifier: GPL-2.0 */
/* Whether enforcement is on, read from the kernel: the pinned links and the
 * cgroup's effective programs, the verdict's attachment to the sockhash, the
 * connection table.  Used by rowgatectl status, the rowgate_enforcing gauge
 * and rowgated's re-attach check; nothing here trusts a daemon's memory. */
#ifndef ROWGATE_USER_LIB_HEALTH_H
#define ROWGATE_USER_LIB_HEALTH_H

#include <stdbool.h>

#include <jansson.h>

#include "rowgate/abi.h"
#include "rowgate/guard.h"

struct rg_health {
	bool pins;		    /* the ports map is pinned: rowgate was set up */
	bool sockops, peer4, peer6; /* links attached and effective in the cgroup */
	bool refuse_wanted, refuse; /* fail-closed filter: asked for, attached */
	bool resets;                /* rg_hold_reset in force */
	bool verdict;		    /* the verdict is attached to the sockhash */
	bool entry;		    /* ... and it is the entry: the slot decides */
	__u32 slot_prog_id;	    /* the verdict in the verdict slot, 0 = empty */
	__u32 slot_build;	    /* its rg_build_id, 0 = unknown */
	bool cgroup_present;	    /* the recorded cgroup path exists */
	__u64 cgroup_id_attached;   /* the sockops link's cgroup, 0 = detached */
	__u64 cgroup_id_now;	    /* inode of the recorded path, 0 = absent */
	char cgroup_path[RG_CGROUP_PATH_MAX];
	__u32 max_conns;
	__u64 conns_now;		      /* connections with state now */
	__u64 adopting_now;		      /* of which still synchronising */
	__u64 conns_tracked, conns_untracked; /* counters since the maps exist */
	__u64 adopted;			      /* connections adopted at starts (guard record) */
	struct rg_guard_stats gs;
	int nports;
	__u32 ports[RG_MAX_PORTS];
	bool enforcing;	  /* every part above is in place */
	char reason[160]; /* why not, when not */
};

/* Read the state of the pins under dir.  Returns 0 (h filled, h->enforcing
 * says the verdict) or negative errno when dir cannot be read at all. */
int rg_health_read(const char *dir, struct rg_health *h);

json_t *rg_health_json(const struct rg_health *h);

/* Whether a program is attached to the sockhash at sockhash_fd as its
 * verdict (1, its name in name, "" if unreadable) or not (0). */
int rg_sockhash_verdict(int sockhash_fd, char *name, size_t len);

/* The cgroup id a pinned cgroup link is attached to (0: detached, its cgroup
 * was removed) and its program id.  0 or negative errno (no such pin). */
int rg_link_cgroup(const char *dir, const char *pin, __u64 *cgroup_id, __u32 *prog_id);

#endif /* ROWGATE_USER_LIB_HEALTH_H */
