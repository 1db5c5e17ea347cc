// SPDX-License-Identifier: MIT
/* Enforcement health from the kernel's own state; see health.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "health.h"
#include "detach.h"

#define RG_QUERY_PROGS_MAX 64 /* programs listed per hook by a query */

int rg_link_cgroup(const char *dir, const char *pin, __u64 *cgroup_id, __u32 *prog_id)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd = rg_pin_open(dir, pin), err = 0;

	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	close(fd);
	if (err)
		return err;
	*cgroup_id = info.type == BPF_LINK_TYPE_CGROUP ? info.cgroup.cgroup_id : 0;
	if (prog_id)
		*prog_id = info.prog_id;
	return 0;
}

static bool prog_in(const __u32 *ids, __u32 n, __u32 id)
{
	for (__u32 i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* A pinned cgroup link is in force: attached to the cgroup at cgroup_fd
 * (or an ancestor) and among its effective programs for type. */
static bool link_effective(const char *dir, const char *pin, int cgroup_fd,
			   enum bpf_attach_type type)
{
	__u32 ids[RG_QUERY_PROGS_MAX], n = RG_QUERY_PROGS_MAX, prog_id = 0;
	__u64 linked = 0;

	if (rg_link_cgroup(dir, pin, &linked, &prog_id) || !linked || cgroup_fd < 0)
		return false;
	if (bpf_prog_query(cgroup_fd, type, BPF_F_QUERY_EFFECTIVE, NULL, ids, &n))
		return false;
	return prog_in(ids, n, prog_id);
}

static __u64 count_keys(int fd)
{
	__u64 key, next, n = 0;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		n++;
	}
	return n;
}

#define RG_PROG_MAPS_MAX 64 /* map ids read from a program's info */

int rg_sockhash_verdict(int sockhash_fd, char *name, size_t len)
{
	__u32 ids[RG_QUERY_PROGS_MAX], n = RG_QUERY_PROGS_MAX;
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	int fd;

	name[0] = 0;
	if (bpf_prog_query(sockhash_fd, BPF_SK_SKB_VERDICT, 0, NULL, ids, &n) || n == 0)
		return 0;
	fd = bpf_prog_get_fd_by_id(ids[0]);
	if (fd >= 0) {
		if (bpf_obj_get_info_by_fd(fd, &info, &info_len) == 0)
			snprintf(name, len, "%s", info.name);
		close(fd);
	}
	return 1;
}

/* rg_build_id in the .rodata of .rodata map fd, found through its BTF
 * (the section's layout is the compiler's): 0 when absent. */
static __u32 rodata_build_id(int fd, const struct bpf_map_info *mi)
{
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct btf *btf;
	__u32 zero = 0, build = 0;
	char *val;

	btf = mi->btf_id ? btf__load_from_kernel_by_id(mi->btf_id) : NULL;
	val = btf ? calloc(1, mi->value_size) : NULL;
	sec = btf ? btf__type_by_id(btf, mi->btf_value_type_id) : NULL;
	if (!val || !sec || !btf_is_datasec(sec) || bpf_map_lookup_elem(fd, &zero, val))
		goto out;
	vs = btf_var_secinfos(sec);
	for (__u16 i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);

		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), RG_BUILD_ID_VAR) &&
		    vs->size == sizeof(build) && vs->offset + vs->size <= mi->value_size) {
			memcpy(&build, val + vs->offset, sizeof(build));
			break;
		}
	}
out:
	free(val);
	btf__free(btf);
	return build;
}

/* Which build program id is: its rg_build_id, 0 when unknown. */
static __u32 prog_build_id(__u32 id)
{
	__u32 map_ids[RG_PROG_MAPS_MAX], build = 0;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd < 0)
		return 0;
	info.nr_map_ids = RG_PROG_MAPS_MAX;
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.nr_map_ids = 0;
	close(fd);
	for (__u32 i = 0; !build && i < info.nr_map_ids && i < RG_PROG_MAPS_MAX; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		const char *dot;
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);

		if (mfd < 0)
			continue;
		dot = bpf_obj_get_info_by_fd(mfd, &mi, &mlen) == 0 ? strrchr(mi.name, '.') : NULL;
		if (dot && !strcmp(dot, ".rodata"))
			build = rodata_build_id(mfd, &mi);
		close(mfd);
	}
	return build;
}

static void why(struct rg_health *h, const char *reason)
{
	if (!h->reason[0])
		snprintf(h->reason, sizeof(h->reason), "%s", reason);
}

int rg_health_read(const char *dir, struct rg_health *h)
{
	struct rg_global_stats g = {};
	struct rg_guard guard = {};
	int fd, cgroup_fd = -1;
	__u32 zero = 0, port, next;
	bool first = true;
	struct stat st;
	bool attached_pins;

	memset(h, 0, sizeof(*h));
	if (access(dir, F_OK))
		return -errno;
	fd = rg_pin_open(dir, RG_STR(RG_MAP_PORTS));
	if (fd >= 0) {
		h->pins = true;
		while (h->nports < RG_MAX_PORTS &&
		       bpf_map_get_next_key(fd, first ? NULL : &port, &next) == 0) {
			port = next;
			first = false;
			h->ports[h->nports++] = port;
		}
		close(fd);
	}
	fd = rg_pin_open(dir, RG_STR(RG_MAP_GUARD));
	if (fd >= 0) {
		if (bpf_map_lookup_elem(fd, &zero, &guard) == 0) {
			memcpy(h->cgroup_path, guard.cgroup_path, sizeof(h->cgroup_path));
			h->cgroup_path[sizeof(h->cgroup_path) - 1] = 0;
			h->refuse_wanted = guard.conns_full_close;
			h->max_conns = guard.max_conns;
			h->adopted = guard.adopted;
		}
		close(fd);
	}
	if (h->cgroup_path[0] && stat(h->cgroup_path, &st) == 0) {
		h->cgroup_present = true;
		h->cgroup_id_now = st.st_ino;
		cgroup_fd = open(h->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	rg_link_cgroup(dir, RG_PIN_LINK_SOCKOPS, &h->cgroup_id_attached, NULL);
	h->sockops = link_effective(dir, RG_PIN_LINK_SOCKOPS, cgroup_fd, BPF_CGROUP_SOCK_OPS);
	h->peer4 = link_effective(dir, RG_PIN_LINK_PEER4, cgroup_fd, BPF_CGROUP_INET4_GETPEERNAME);
	h->peer6 = link_effective(dir, RG_PIN_LINK_PEER6, cgroup_fd, BPF_CGROUP_INET6_GETPEERNAME);
	h->refuse = link_effective(dir, RG_PIN_LINK_REFUSE, cgroup_fd, BPF_CGROUP_INET_INGRESS);
	h->resets = link_effective(dir, RG_PIN_LINK_RESETS, cgroup_fd, BPF_CGROUP_INET_INGRESS);
	if (cgroup_fd >= 0)
		close(cgroup_fd);

	fd = rg_pin_open(dir, RG_STR(RG_MAP_SOCKHASH));
	if (fd >= 0) {
		char name[BPF_OBJ_NAME_LEN];

		h->verdict = rg_sockhash_verdict(fd, name, sizeof(name)) > 0;
		h->entry = !strcmp(name, RG_ENTRY_PROG_NAME);
		close(fd);
	}
	fd = rg_pin_open(dir, RG_STR(RG_MAP_VERDICT_SLOT));
	if (fd >= 0) {
		__u32 slot = RG_VERDICT_SLOT;

		if (bpf_map_lookup_elem(fd, &slot, &h->slot_prog_id)) /* a prog id */
			h->slot_prog_id = 0;
		close(fd);
		if (h->slot_prog_id)
			h->slot_build = prog_build_id(h->slot_prog_id);
	}
	fd = rg_pin_open(dir, RG_STR(RG_MAP_CONNS));
	if (fd >= 0) {
		h->conns_now = count_keys(fd);
		close(fd);
	}
	fd = rg_pin_open(dir, RG_STR(RG_MAP_ADOPT));
	if (fd >= 0) {
		h->adopting_now = count_keys(fd);
		close(fd);
	}
	fd = rg_pin_open(dir, RG_STR(RG_MAP_GLOBAL));
	if (fd >= 0) {
		bpf_map_lookup_elem(fd, &zero, &g);
		close(fd);
	}
	h->conns_tracked = g.conns_tracked;
	h->conns_untracked = g.conns_untracked;
	fd = rg_pin_open(dir, RG_STR(RG_MAP_GUARD_STATS));
	if (fd >= 0) {
		bpf_map_lookup_elem(fd, &zero, &h->gs);
		close(fd);
	}

	fd = rg_pin_open(dir, RG_PIN_LINK_SOCKOPS);
	attached_pins = fd >= 0;
	if (fd >= 0)
		close(fd);
	fd = rg_pin_open(dir, RG_STR(RG_MAP_SOCKHASH));
	attached_pins = attached_pins || fd >= 0;
	if (fd >= 0)
		close(fd);

	if (!h->pins)
		why(h, "not set up: no guarded ports are pinned");
	else if (!attached_pins)
		why(h, "detached (rowgatectl detach): a rowgated start attaches again");
	else if (!h->nports)
		why(h, "no guarded ports");
	else if (!h->verdict)
		why(h, "the verdict program is not attached to the sockhash");
	else if (h->entry && !h->slot_prog_id)
		why(h, "the verdict slot is empty: segments pass unparsed (verdict_missing)");
	else if (!h->cgroup_present)
		why(h, "the guarded cgroup does not exist (removed?)");
	else if (!h->cgroup_id_attached)
		why(h, "the cgroup programs are detached (the cgroup was removed)");
	else if (h->cgroup_id_attached != h->cgroup_id_now)
		why(h, "the cgroup programs are attached to an older cgroup of that path "
		       "(recreated)");
	else if (!h->sockops)
		why(h, "the sockops program is not in force in the cgroup");
	else if (!h->peer4 || !h->peer6)
		why(h, "the getpeername programs are not in force in the cgroup");
	else if (!h->resets)
		why(h, "the ingress program that holds resets of unseen connections is not in "
		       "force in the cgroup");
	else if (h->refuse_wanted && !h->refuse)
		why(h, "--conns-full=fail-closed but its ingress filter is not attached");
	h->enforcing = !h->reason[0];
	return 0;
}

static void set_u64(json_t *o, const char *k, __u64 v)
{
	json_object_set_new(o, k, json_integer((json_int_t)v));
}

json_t *rg_health_json(const struct rg_health *h)
{
	json_t *o = json_object(), *ports = json_array(), *progs = json_object();
	json_t *conns = json_object(), *adopt = json_object();

	if (!o || !ports || !progs || !conns || !adopt) {
		json_decref(o);
		json_decref(ports);
		json_decref(progs);
		json_decref(conns);
		json_decref(adopt);
		return NULL;
	}
	for (int i = 0; i < h->nports; i++)
		json_array_append_new(ports, json_pack("{s:i, s:b}", "port", (int)h->ports[i],
						       "enforcing", h->enforcing));
	json_object_set_new(o, "enforcing", json_boolean(h->enforcing));
	if (!h->enforcing)
		json_object_set_new(o, "reason", json_string(h->reason));
	json_object_set_new(o, "ports", ports);
	json_object_set_new(o, "cgroup", json_string(h->cgroup_path));
	json_object_set_new(o, "cgroup_present", json_boolean(h->cgroup_present));
	set_u64(o, "cgroup_id", h->cgroup_id_now);
	set_u64(o, "cgroup_id_attached", h->cgroup_id_attached);
	json_object_set_new(progs, "sockops", json_boolean(h->sockops));
	json_object_set_new(progs, "getpeername4", json_boolean(h->peer4));
	json_object_set_new(progs, "getpeername6", json_boolean(h->peer6));
	json_object_set_new(progs, "verdict", json_boolean(h->verdict));
	json_object_set_new(progs, "hold_resets", json_boolean(h->resets));
	if (h->entry) {
		set_u64(progs, "verdict_slot_prog_id", h->slot_prog_id);
		set_u64(progs, "verdict_slot_build", h->slot_build);
	}
	if (h->refuse_wanted)
		json_object_set_new(progs, "fail_closed_filter", json_boolean(h->refuse));
	json_object_set_new(o, "programs", progs);
	set_u64(conns, "max", h->max_conns);
	json_object_set_new(conns, "when_full",
			    json_string(h->refuse_wanted ? "fail-closed" : "fail-open"));
	set_u64(conns, "tracked_now", h->conns_now - h->adopting_now);
	set_u64(conns, "adopting_now", h->adopting_now);
	set_u64(conns, "tracked_total", h->conns_tracked);
	set_u64(conns, "untracked_total", h->conns_untracked);
	set_u64(conns, "refused_total", h->gs.conns_refused);
	set_u64(conns, "refused_segments_total", h->gs.refused_segments);
	json_object_set_new(o, "connections", conns);
	set_u64(adopt, "adopted_total", h->adopted);
	set_u64(adopt, "synced_total", h->gs.adopt_synced);
	set_u64(adopt, "sync_ms_avg",
		h->gs.adopt_synced ? h->gs.adopt_sync_ns_total / h->gs.adopt_synced / 1000000 : 0);
	set_u64(adopt, "sync_ms_max", h->gs.adopt_sync_ns_max / 1000000);
	set_u64(adopt, "passed_bytes_total", h->gs.adopt_passed_bytes);
	json_object_set_new(o, "adoption", adopt);
	return o;
}
