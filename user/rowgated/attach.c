// SPDX-License-Identifier: MIT
/* Attaching: the verdict slot and entry on the sockhash, egress, the
 * cgroup links (adopting a previous rowgated's), the connections that
 * predate the start; and putting back what goes missing while running. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "../lib/clock.h"
#include "../lib/detach.h"
#include "../lib/health.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "h2_close.h"
#include "rowgated.h"

/* Attach prog to the cgroup through a pinned link, or adopt the link a
 * previous rowgated pinned on the same cgroup and swap its program
 * atomically.  A pinned link on another cgroup (--cgroup changed, or the
 * cgroup was removed and recreated) is replaced: the new link first. */
static int attach_cgroup_link(struct bpf_program *prog, int cgroup_fd, __u64 cgroup_id,
			      const char *dir, const char *pin_name, int *adopted)
{
	struct bpf_link *link, *stale = NULL;
	char path[PATH_MAX];
	__u64 linked = 0;
	int err;

	rg_pin_path(path, sizeof(path), dir, pin_name);
	link = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (link && rg_link_cgroup(dir, pin_name, &linked, NULL) == 0 && linked == cgroup_id) {
		err = bpf_link__update_program(link, prog);
		if (!err) {
			pr_info("adopted %s", path);
			(*adopted)++;
			bpf_link__disconnect(link);
			bpf_link__destroy(link);
			return 0;
		}
		pr_warn("cannot update pinned link %s (%s): replacing it", path, strerror(-err));
	} else if (link) {
		pr_info("%s is attached to cgroup id %llu, not %llu: replacing it", path,
			(unsigned long long)linked, (unsigned long long)cgroup_id);
	}
	stale = link;
	link = bpf_program__attach_cgroup(prog, cgroup_fd);
	err = libbpf_get_error(link);
	if (err) {
		pr_err("cannot attach %s to the cgroup: %s", bpf_program__name(prog),
		       strerror(-err));
		bpf_link__destroy(stale);
		return err;
	}
	if (stale) {
		bpf_link__detach(stale);
		bpf_link__unpin(stale);
		bpf_link__destroy(stale);
	}
	unlink(path);
	err = bpf_link__pin(link, path);
	if (err) {
		pr_err("cannot pin %s: %s", path, strerror(-err));
		bpf_link__destroy(link);
		return err;
	}
	bpf_link__disconnect(link); /* the pin keeps it attached */
	bpf_link__destroy(link);
	return 0;
}

struct rg_adopt_maps rgd_adopt_maps(struct daemon *d)
{
	return (struct rg_adopt_maps){
		.conns_fd = bpf_map__fd(d->skel->maps.RG_MAP_CONNS),
		.sockhash_fd = bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH),
		.adopt_fd = bpf_map__fd(d->skel->maps.RG_MAP_ADOPT),
		.stash_fd = bpf_map__fd(d->skel->maps.RG_MAP_STASH),
		.conn_value_size = bpf_map__value_size(d->skel->maps.RG_MAP_CONNS),
	};
}

static void write_guard(struct daemon *d)
{
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD), &zero, &d->guard, BPF_ANY);
}

/* Guard the connections the servers already have (the sockops program only
 * sees new ones): after sockops is attached, so none falls in between. */
static void adopt_now(struct daemon *d)
{
	struct rg_adopt_maps m = rgd_adopt_maps(d);
	struct rg_adopt_result r;
	__u64 t0 = rg_monotonic_ns();
	const char *unadopted = d->cfg->conns_full_close ?
					"they are reset (--conns-full=fail-closed)" :
					"they pass unlimited until they reconnect";

	if (rg_adopt_existing(d->cfg->cgroup, d->cfg->ports, d->cfg->nports, &m, &r)) {
		pr_warn("cannot look for established connections: out of memory");
		return;
	}
	d->guard.adopted += r.adopted;
	write_guard(d);
	if (r.adopted || r.failed)
		pr_info("adopted %u established connection(s) in %llu ms (%u between requests "
			"already, the others once they reach one); %u already tracked, %u could "
			"not be adopted",
			r.adopted, (unsigned long long)((rg_monotonic_ns() - t0) / 1000000),
			r.at_boundary, r.tracked, r.failed);
	if (r.failed) {
		pr_warn("%u established connection(s) could not be adopted (connection table "
			"full?): %s",
			r.failed, unadopted);
		rg_event(d->cfg->conns_full_close ? "fail_closed" : "fail_open",
			 "reason=adopt_failed count=%u", r.failed);
	}
	if (r.unreadable) {
		pr_warn("%u socket(s) of the guarded servers could not be taken with "
			"pidfd_getfd() (ptrace restrictions?): connections among them are not "
			"adopted: %s",
			r.unreadable, unadopted);
		rg_event(d->cfg->conns_full_close ? "fail_closed" : "fail_open",
			 "reason=adopt_unreadable count=%u", r.unreadable);
	}
}

/* fail-closed: what the table does not hold gets no data to the server, so
 * a connection neither sockops nor adoption saw is reset, not left hanging. */
static void sweep_untracked(struct daemon *d)
{
	int n = rg_h2_closer_sweep(d->closer, bpf_map__fd(d->skel->maps.RG_MAP_CONNS),
				   bpf_map__value_size(d->skel->maps.RG_MAP_CONNS), d->cfg->ports,
				   d->cfg->nports);

	if (n > 0) {
		pr_warn("%d established connection(s) on the guarded ports are not in the "
			"connection table (not adopted, or refused by a full table): reset, "
			"their clients reconnect (--conns-full=fail-closed)",
			n);
		rg_event("fail_closed", "reason=untracked_reset count=%d", n);
	} else if (n < 0)
		pr_warn("cannot look for untracked connections (%s): any not adopted get no "
			"data through until they reconnect (--conns-full=fail-closed)",
			strerror(-n));
}

/* The cgroup hooks, and the record rowgatectl status and the re-attach
 * check compare the kernel's attachments with.  why: the event's reason. */
static int attach_cgroup(struct daemon *d, const char *why)
{
	struct rowgate *skel = d->skel;
	struct rg_guard guard = {};
	struct stat st;
	__u32 zero = 0;
	int cgroup_fd, err, adopted = 0;

	/* the record outlives restarts: carry its counters */
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.RG_MAP_GUARD), &zero, &guard);

	cgroup_fd = open(d->cfg->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0 || fstat(cgroup_fd, &st)) {
		err = -errno;
		pr_err("cannot open cgroup %s: %s", d->cfg->cgroup, strerror(errno));
		if (cgroup_fd >= 0)
			close(cgroup_fd);
		return err;
	}
	guard.cgroup_id = st.st_ino; /* cgroup2: the inode number is the cgroup id */
	guard.max_conns = bpf_map__max_entries(skel->maps.RG_MAP_CONNS);
	guard.conns_full_close = d->cfg->conns_full_close;
	guard.abi_version = RG_ABI_VERSION;
	snprintf(guard.cgroup_path, sizeof(guard.cgroup_path), "%s", d->cfg->cgroup);
	d->guard = guard;
	write_guard(d);
	err = attach_cgroup_link(skel->progs.rg_getpeername4, cgroup_fd, guard.cgroup_id,
				 d->cfg->bpffs, RG_PIN_LINK_PEER4, &adopted);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_getpeername6, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_PEER6, &adopted);
	/* before sockops: no connection it guards can be reset unseen */
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_hold_reset, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_RESETS, &adopted);
	if (!err)
		err = attach_cgroup_link(skel->progs.rg_sockops, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_SOCKOPS, &adopted);
	if (!err)
		adopt_now(d);
	if (!err && d->cfg->conns_full_close) {
		err = attach_cgroup_link(skel->progs.rg_refuse, cgroup_fd, guard.cgroup_id,
					 d->cfg->bpffs, RG_PIN_LINK_REFUSE, &adopted);
		if (!err)
			sweep_untracked(d);
	} else if (!err)
		rg_detach_pinned_link(d->cfg->bpffs, RG_PIN_LINK_REFUSE); /* fail-open now */
	close(cgroup_fd);
	if (!err)
		rg_event("cgroup_attach", "cgroup=%s cgroup_id=%llu links=%s conns_full=%s reason=%s",
			 d->cfg->cgroup, (unsigned long long)guard.cgroup_id,
			 adopted ? "adopted" : "new",
			 d->cfg->conns_full_close ? "fail-closed" : "fail-open", why);
	return err;
}

/* Put this build's program in the slot an entry jumps to: one atomic map
 * update, seen by every open connection from its next segment (or send) on. */
static int fill_slot(struct bpf_map *map, struct bpf_program *prog, const char *what)
{
	int slot_fd = bpf_map__fd(map), prog_fd = bpf_program__fd(prog);
	__u32 slot = RG_VERDICT_SLOT, prev = 0;

	bpf_map_lookup_elem(slot_fd, &slot, &prev); /* a prog array reads back ids */
	if (bpf_map_update_elem(slot_fd, &slot, &prog_fd, BPF_ANY)) {
		pr_err("cannot put the %s program in its slot: %s", what, strerror(errno));
		return -errno;
	}
	if (prev)
		pr_info("%s slot: program %u replaced, open connections run this build's %s "
			"program from now on",
			what, prev, what);
	return 0;
}

static int fill_verdict_slot(struct daemon *d)
{
	return fill_slot(d->skel->maps.RG_MAP_VERDICT_SLOT, d->skel->progs.rg_verdict, "verdict");
}

static int fill_egress_slot(struct daemon *d)
{
	return fill_slot(d->skel->maps.RG_MAP_EGRESS_SLOT, d->skel->progs.rg_egress, "egress");
}

static int fill_h2_slot(struct daemon *d)
{
	return fill_slot(d->skel->maps.RG_MAP_H2_SLOT, d->skel->progs.rg_h2_verdict, "HTTP/2 verdict");
}

int rgd_attach_all(struct daemon *d)
{
	struct rowgate *skel = d->skel;
	int sockhash_fd = bpf_map__fd(skel->maps.RG_MAP_SOCKHASH);
	char path[PATH_MAX], was[BPF_OBJ_NAME_LEN];
	int err;

	/* the slots before the entry, so no socket meets an empty slot */
	err = fill_h2_slot(d);
	if (!err)
		err = fill_verdict_slot(d);
	if (err)
		return err;
	if (rg_sockhash_verdict(sockhash_fd, was, sizeof(was)) && strcmp(was, RG_ENTRY_PROG_NAME))
		pr_warn("the sockhash ran %s, a verdict without the entry (an older rowgated): "
			"connections it accepted keep that verdict until they close",
			was);
	/* entry before sockops, so no socket enters the sockhash unguarded;
	 * attaching again replaces a previous rowgated's entry (same code) */
	err = bpf_prog_attach(bpf_program__fd(skel->progs.rg_entry), sockhash_fd,
			      BPF_SK_SKB_VERDICT, 0);
	if (err) {
		pr_err("cannot attach the verdict entry to the sockhash: %s", strerror(errno));
		return -errno;
	}
	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_PIN_PROG_VERDICT);
	unlink(path);
	bpf_program__pin(skel->progs.rg_entry, path);
	/* egress next to it (docs/design.md#egress): a socket takes the
	 * map's programs when sockops inserts it; the entry jumps to the
	 * egress slot as the verdict's does */
	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_PIN_PROG_EGRESS);
	if (d->cfg->egress_off) {
		int old = bpf_obj_get(path); /* a previous rowgated's */
		__u32 slot = RG_VERDICT_SLOT;

		if (old >= 0) {
			bpf_prog_detach2(old, bpf_map__fd(skel->maps.RG_MAP_SOCKHASH),
					 BPF_SK_MSG_VERDICT);
			close(old);
		}
		/* connections that still run the entry stop following */
		bpf_map_delete_elem(bpf_map__fd(skel->maps.RG_MAP_EGRESS_SLOT), &slot);
	}
	unlink(path);
	if (!d->cfg->egress_off) {
		err = fill_egress_slot(d);
		if (err)
			return err;
		if (bpf_prog_attach(bpf_program__fd(skel->progs.rg_egress_entry),
				    bpf_map__fd(skel->maps.RG_MAP_SOCKHASH), BPF_SK_MSG_VERDICT,
				    0)) {
			pr_err("cannot attach the egress program to the sockhash: %s",
			       strerror(errno));
			return -errno;
		}
		bpf_program__pin(skel->progs.rg_egress_entry, path);
	}
	return attach_cgroup(d, "start");
}

/*
 * The guarded cgroup may be removed and recreated under us (systemd does so
 * on every restart of a service): its cgroup links detach with it (and a
 * link detached by hand looks the same).  Checked
 * on inotify events of the parent directory and every poll interval: when
 * the directory at the path is not the cgroup the sockops link is on,
 * re-attach; while it is absent, say so once.
 */
void rgd_guard_check(struct daemon *d)
{
	__u32 ids[4], n = 4, slot = RG_VERDICT_SLOT, prog_id;
	const char *why;
	__u64 linked = 0;
	struct stat st;

	if (d->detached)
		return;
	/* the verdict taken off the sockhash (by hand): put it back */
	if (bpf_prog_query(bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH), BPF_SK_SKB_VERDICT, 0,
			   NULL, ids, &n) == 0 && n == 0) {
		pr_warn("the verdict program was detached from the sockhash: re-attaching");
		if (bpf_prog_attach(bpf_program__fd(d->skel->progs.rg_entry),
				    bpf_map__fd(d->skel->maps.RG_MAP_SOCKHASH), BPF_SK_SKB_VERDICT,
				    0))
			pr_err("cannot re-attach the verdict program: %s", strerror(errno));
		else
			rg_event("prog_restore", "prog=verdict_entry");
	}
	/* the slot emptied (by hand): every connection passes unparsed */
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_VERDICT_SLOT), &slot, &prog_id)) {
		pr_warn("the verdict slot is empty: putting the verdict back");
		if (!fill_verdict_slot(d))
			rg_event("prog_restore", "prog=verdict_slot");
	}
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_H2_SLOT), &slot, &prog_id)) {
		pr_warn("the HTTP/2 verdict slot is empty: putting the HTTP/2 verdict back");
		if (!fill_h2_slot(d))
			rg_event("prog_restore", "prog=h2_slot");
	}
	if (!d->cfg->egress_off &&
	    bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_EGRESS_SLOT), &slot, &prog_id)) {
		pr_warn("the egress slot is empty: putting the egress program back");
		if (!fill_egress_slot(d))
			rg_event("prog_restore", "prog=egress_slot");
	}
	rg_link_cgroup(d->cfg->bpffs, RG_PIN_LINK_SOCKOPS, &linked, NULL);
	if (stat(d->cfg->cgroup, &st)) {
		if (!d->cgroup_gone) {
			pr_warn("cgroup %s is gone: a server started in it again is not guarded "
				"until it reappears (open guarded connections stay guarded)",
				d->cfg->cgroup);
			rg_event("cgroup_detach", "cgroup=%s cgroup_id=%llu reason=cgroup_gone",
				 d->cfg->cgroup, (unsigned long long)linked);
		}
		d->cgroup_gone = true;
		return;
	}
	if (linked == st.st_ino)
		return;
	why = d->cgroup_gone ? "recreated" : linked ? "replaced" : "lost";
	if (!d->cgroup_gone)
		rg_event("cgroup_detach", "cgroup=%s cgroup_id=%llu reason=%s", d->cfg->cgroup,
			 (unsigned long long)(linked ? linked : d->guard.cgroup_id), why);
	pr_warn("cgroup %s %s (programs on cgroup id %llu, the directory is id %llu): "
		"re-attaching",
		d->cfg->cgroup,
		d->cgroup_gone ? "was recreated" :
		linked	       ? "was replaced" :
				 "lost its programs (removed and recreated, or detached by hand)",
		(unsigned long long)linked, (unsigned long long)st.st_ino);
	d->cgroup_gone = false;
	if (attach_cgroup(d, why) == 0)
		pr_warn("re-attached to cgroup %s (id %llu): enforcing again", d->cfg->cgroup,
			(unsigned long long)st.st_ino);
}

/* Wake on entries created or removed beside the guarded cgroup. */
int rgd_watch_cgroup_parent(const char *cgroup)
{
	char parent[PATH_MAX], *slash;
	int fd;

	snprintf(parent, sizeof(parent), "%s", cgroup);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -1;
	*slash = 0;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -1;
	if (inotify_add_watch(fd, parent, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
						  IN_ONLYDIR) < 0) {
		pr_info("cannot watch %s (%s): checking the cgroup every %d ms only", parent,
			strerror(errno), RG_POLL_INTERVAL_MS);
		close(fd);
		return -1;
	}
	return fd;
}
