// SPDX-License-Identifier: MIT
/* Loading the BPF object over what is pinned: the pins' ABI and layouts
 * checked first, the connection table sized; and --cleanup. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "../lib/detach.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "rowgated.h"

/* Maps whose contents outlive a clean stop: limits, debt, counters, and the
 * body ring (rowgated --cleanup removes them; detach keeps them). */
static const char *const state_maps[] = {
	RG_STR(RG_MAP_LIMITS), RG_STR(RG_MAP_BUCKETS), RG_STR(RG_MAP_DB_STATS),
	RG_STR(RG_MAP_GLOBAL), RG_STR(RG_MAP_H2_STATS), RG_STR(RG_MAP_PROTO_STATS), RG_STR(RG_MAP_RATIOS),
	RG_STR(RG_MAP_GUARD), RG_STR(RG_MAP_GUARD_STATS), RG_STR(RG_MAP_PORTS),
	RG_STR(RG_MAP_ROUTES), RG_STR(RG_MAP_VERDICT_STATS), RG_STR(RG_MAP_BODIES),
	RG_STR(RG_MAP_SHADOW), RG_STR(RG_MAP_UNLIMITED),
};

/* rowgated --cleanup: no enforcement, no state left under the directory. */
void rgd_purge_all(const char *dir)
{
	size_t i;

	rg_detach_all(dir);
	rg_xdp_cleanup(dir, true);
	for (i = 0; i < sizeof(state_maps) / sizeof(state_maps[0]); i++)
		rg_unpin(dir, state_maps[i]);
	if (rmdir(dir) && errno != ENOENT)
		pr_warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Whether a pinned map's key or value type, as its BTF describes it, lays
 * out memory differently from this object's: a new verdict reads the state
 * of connections an older one wrote (rg_conn), so equal sizes are not
 * enough.  Pins without BTF are judged by their sizes alone. */
static bool pinned_btf_differs(struct daemon *d, const struct bpf_map *map,
			       const struct bpf_map_info *info, char *why, size_t len)
{
	const struct btf *ours = bpf_object__btf(d->skel->obj);
	struct btf *theirs;
	bool differs = false;

	if (!ours || !info->btf_id)
		return false;
	theirs = btf__load_from_kernel_by_id(info->btf_id);
	if (!theirs)
		return false;
	if (info->btf_key_type_id && bpf_map__btf_key_type_id(map))
		differs = rg_btf_layout_diff(theirs, info->btf_key_type_id, ours,
					     bpf_map__btf_key_type_id(map), why, len) != 0;
	if (!differs && info->btf_value_type_id && bpf_map__btf_value_type_id(map))
		differs = rg_btf_layout_diff(theirs, info->btf_value_type_id, ours,
					     bpf_map__btf_value_type_id(map), why, len) != 0;
	btf__free(theirs);
	return differs;
}

/* A pinned map this object cannot share: different layout or version.
 * Checked before loading, so an incompatible upgrade attaches nothing. */
static int check_pinned_abi(struct daemon *d)
{
	char path[PATH_MAX], why[512];
	struct bpf_map *map;
	struct rg_guard g = {};
	__u32 zero = 0;
	int fd;

	rg_pin_path(path, sizeof(path), d->cfg->bpffs, RG_STR(RG_MAP_GUARD));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		int ret = bpf_map_lookup_elem(fd, &zero, &g);

		close(fd);
		if (!ret && g.abi_version && g.abi_version != RG_ABI_VERSION) {
			pr_err("the pins under %s are rowgate map ABI %u, this rowgated speaks %u: "
			       "nothing was changed; run the rowgated that matches them, or "
			       "'rowgated --cleanup' first (drops limits, debt and counters; "
			       "open connections go on unlimited until this one adopts them)",
			       d->cfg->bpffs, g.abi_version, RG_ABI_VERSION);
			return -EPROTO;
		}
	}
	bpf_object__for_each_map(map, d->skel->obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		const char *pin = bpf_map__pin_path(map); /* set by pin_root_path */

		if (!pin)
			continue; /* .rodata and templates belong to one load */
		snprintf(path, sizeof(path), "%s", pin);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			info.type = BPF_MAP_TYPE_UNSPEC;
		close(fd);
		if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
		    info.value_size != bpf_map__value_size(map)) {
			pr_err("pinned map %s has another layout (key %u / value %u bytes, this "
			       "rowgated: %u / %u): nothing was changed; run the rowgated that "
			       "matches the pins, or 'rowgated --cleanup' first",
			       path, info.key_size, info.value_size, bpf_map__key_size(map),
			       bpf_map__value_size(map));
			return -EPROTO;
		}
		if (pinned_btf_differs(d, map, &info, why, sizeof(why))) {
			pr_err("pinned map %s has another layout (the pinned one first, this "
			       "rowgated's second: %s): nothing was changed; run the rowgated that "
			       "matches the pins, or 'rowgated --cleanup' first",
			       path, why);
			return -EPROTO;
		}
	}
	return 0;
}

/* A connection map gets the entries its option says; a pinned one of
 * another size is kept (open connections live in it): refuse clearly. */
static int size_map(struct daemon *d, struct bpf_map *map, __u32 entries, const char *option)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd;

	rg_pin_path(path, sizeof(path), d->cfg->bpffs, bpf_map__name(map));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		int ret = bpf_obj_get_info_by_fd(fd, &info, &len);

		close(fd);
		if (!ret && info.max_entries != entries) {
			pr_err("the pinned connection map %s has %u entries, not --%s %u: start "
			       "with --%s %u, or 'rowgatectl detach' first (it releases every "
			       "guarded connection)",
			       path, info.max_entries, option, entries, option, info.max_entries);
			return -EEXIST;
		}
	}
	return bpf_map__set_max_entries(map, entries) ? -EINVAL : 0;
}

/* The connection table's maps get --max-conns entries, h2_parked
 * --grpc-parked-streams. */
static int size_conn_table(struct daemon *d)
{
	struct bpf_map *maps[] = { d->skel->maps.RG_MAP_CONNS, d->skel->maps.RG_MAP_SOCKHASH,
				   d->skel->maps.RG_MAP_ADOPT, d->skel->maps.RG_MAP_H2_CONNS,
				   d->skel->maps.RG_MAP_H2_OUT, d->skel->maps.RG_MAP_STASH,
				   d->skel->maps.RG_MAP_H2_CDB };
	int err = 0;

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]) && !err; i++)
		err = size_map(d, maps[i], d->cfg->max_conns, "max-conns");
	if (!err)
		err = size_map(d, d->skel->maps.RG_MAP_H2_PARKED, d->cfg->grpc_parked_streams,
			       "grpc-parked-streams");
	return err;
}

int rgd_load(struct daemon *d)
{
	int err;

	/* maps declared LIBBPF_PIN_BY_NAME are pinned there, or adopted */
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = d->cfg->bpffs);

	d->skel = rowgate__open_opts(&opts);
	if (!d->skel) {
		pr_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	err = check_pinned_abi(d);
	if (!err)
		err = size_conn_table(d);
	if (err == -EEXIST || err == -EPROTO)
		return err;
	d->skel->rodata->rg_conns_full_close = d->cfg->conns_full_close;
	d->skel->rodata->rg_adopt_grace_ns = (__u64)d->cfg->adopt_grace_s * 1000000000ULL;
	d->skel->rodata->rg_egress_on = !d->cfg->egress_off;
	d->skel->rodata->rg_h2_keep = d->cfg->grpc_keep && !d->cfg->egress_off;
	d->skel->rodata->rg_h2_compressed_debt = d->cfg->grpc_compressed_debt;
	d->skel->rodata->rg_h2_max_streams =
		d->skel->rodata->rg_h2_keep ? d->cfg->grpc_max_streams : 0;
	if (!err)
		err = rowgate__load(d->skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s%s", strerror(-err), rg_load_hint(err));
		return err;
	}
	return 0;
}
