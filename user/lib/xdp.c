// SPDX-License-Identifier: MIT
/* The UDP path's loader: see xdp.h. */
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdp.skel.h"
#include "limits.h"
#include "log.h"
#include "state.h"
#include "xdp.h"
#include "counters.h"
#include "maps.h"

/* Maps of the XDP object shared with the HTTP path (rowgated pins them). */
static const char *const shared_maps[] = {
	RG_STR(RG_MAP_LIMITS), RG_STR(RG_MAP_BUCKETS), RG_STR(RG_MAP_DB_STATS),
	RG_STR(RG_MAP_GLOBAL), RG_STR(RG_MAP_SHADOW), RG_STR(RG_MAP_UNLIMITED),
};

/* Longest pin directory accepted: leaves room for the pin names. */
#define RG_XDP_DIR_MAX 1024

struct rg_xdp {
	struct xdp *skel;
	char bpffs[RG_XDP_DIR_MAX];
	char ifname[IF_NAMESIZE];
	char link_pin[PATH_MAX];
	int ifindex;
	int link_fd;
	enum rg_xdp_mode mode;
};

const char *rg_xdp_mode_name(enum rg_xdp_mode mode)
{
	switch (mode) {
	case RG_XDP_MODE_NATIVE:
		return "native";
	case RG_XDP_MODE_GENERIC:
		return "generic";
	default:
		return "auto";
	}
}

enum rg_xdp_mode rg_xdp_mode(const struct rg_xdp *x)
{
	return x ? x->mode : RG_XDP_MODE_AUTO;
}

int rg_parse_udp_mapping(const char *s, struct rg_udp_mapping *m, char *err, size_t errlen)
{
	char quoted[64], *end;
	const char *eq;
	unsigned long port;
	int ret;

	eq = s ? strchr(s, '=') : NULL;
	if (!eq || eq == s) {
		snprintf(err, errlen, "invalid UDP mapping '%s': expected PORT=DB",
			 rg_quote_input(s ? s : "", quoted, sizeof(quoted)));
		return -EINVAL;
	}
	errno = 0;
	port = strtoul(s, &end, 10);
	if (errno || end != eq || port == 0 || port > 65535 || s[0] < '0' || s[0] > '9') {
		snprintf(err, errlen, "invalid UDP mapping '%s': the port must be 1-65535",
			 rg_quote_input(s, quoted, sizeof(quoted)));
		return -EINVAL;
	}
	memset(m, 0, sizeof(*m));
	m->port = (__u16)port;
	ret = rg_parse_db_name(eq + 1, &m->db, err, errlen);
	return ret;
}

static const char *xdp_errno(int err)
{
	switch (-err) {
	case EBUSY:
	case EEXIST:
		return "another XDP program is already attached to this interface "
		       "(remove it, e.g. with 'ip link set dev IFACE xdp off')";
	case EOPNOTSUPP:
		return "the driver has no native XDP";
	case ERANGE:
		return "the interface MTU is too large for XDP without multi-buffer support";
	case ENODEV:
		return "no such interface";
	case EPERM:
		return "permission denied (needs CAP_BPF and CAP_NET_ADMIN)";
	default:
		return strerror(-err);
	}
}

static void warn_unshared(const struct rg_xdp *x)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		rg_pin_path(path, sizeof(path), x->bpffs, shared_maps[i]);
		if (access(path, F_OK))
			pr_warn("%s is not pinned yet: the XDP path creates it, and rowgated "
				"must reuse it so HTTP and UDP share one bucket",
				path);
	}
}

struct udp_wanted {
	const struct rg_udp_mapping *maps;
	int n;
};

static bool udp_port_wanted(const void *key, void *ctx)
{
	const struct rg_udp_port_key *k = key;
	const struct udp_wanted *w = ctx;
	int i;

	for (i = 0; i < w->n; i++)
		if (w->maps[i].port == k->port)
			return true;
	return false;
}

/* The port map the running program reads (pinned: a restart's program
 * shares it) is updated in place, never emptied: a datagram that arrived
 * while it was empty would pass uncounted and unlimited. */
static int write_mappings(struct rg_xdp *x, const struct rg_udp_mapping *maps, int n)
{
	struct udp_wanted wanted = { maps, n };
	int ports_fd = bpf_map__fd(x->skel->maps.RG_MAP_UDP_PORTS);
	int stats_fd = bpf_map__fd(x->skel->maps.RG_MAP_UDP_STATS);
	int ncpu = libbpf_num_possible_cpus(), i, j, err;
	struct rg_udp_stats *zero;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (maps[i].port == maps[j].port &&
			    strcmp(maps[i].db.name, maps[j].db.name)) {
				pr_err("UDP port %u is mapped to both '%s' and '%s'", maps[i].port,
				       maps[j].db.name, maps[i].db.name);
				return -EINVAL;
			}
	zero = calloc((size_t)ncpu, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	for (i = 0, err = 0; !err && i < n; i++) {
		struct rg_udp_port_key key = { .port = maps[i].port };

		/* counters first, so the first datagram is counted */
		if (bpf_map_update_elem(stats_fd, &maps[i].db, zero, BPF_NOEXIST) &&
		    errno != EEXIST)
			err = -errno;
		else if (bpf_map_update_elem(ports_fd, &key, &maps[i].db, BPF_ANY))
			err = -errno;
		else
			pr_info("UDP port %u -> database %s", maps[i].port, maps[i].db.name);
	}
	free(zero);
	if (!err)
		err = rg_map_prune(ports_fd, sizeof(struct rg_udp_port_key), udp_port_wanted,
				   &wanted);
	if (err)
		pr_err("cannot write the UDP port map: %s",
		       err == -E2BIG || err == -ENOSPC ? "too many UDP ports (at most "
							  RG_STR(RG_MAX_UDP_PORTS) ")" :
							  strerror(-err));
	return err;
}

/* The link a previous run pinned, if it still drives ifindex. */
static int adopt_link(struct rg_xdp *x)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd, err;

	if (access(x->link_pin, F_OK))
		return -ENOENT;
	fd = bpf_obj_get(x->link_pin);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_LINK_TYPE_XDP ||
	    (int)info.xdp.ifindex != x->ifindex) {
		pr_warn("pinned link %s no longer drives %s: replacing it", x->link_pin,
			x->ifname);
		goto replace;
	}
	err = bpf_link_update(fd, bpf_program__fd(x->skel->progs.rg_xdp), NULL);
	if (err) {
		pr_warn("cannot update pinned link %s (%s): replacing it", x->link_pin,
			strerror(errno));
		goto replace;
	}
	x->link_fd = fd;
	pr_info("adopted %s", x->link_pin);
	return 0;
replace:
	close(fd);
	unlink(x->link_pin);
	return -ENOENT;
}

static int attach_mode(struct rg_xdp *x, enum rg_xdp_mode mode)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts);
	int fd;

	opts.flags = mode == RG_XDP_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	fd = bpf_link_create(bpf_program__fd(x->skel->progs.rg_xdp), x->ifindex, BPF_XDP, &opts);
	if (fd < 0)
		return -errno;
	x->link_fd = fd;
	x->mode = mode;
	return 0;
}

static enum rg_xdp_mode query_mode(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		return RG_XDP_MODE_AUTO;
	if (q.attach_mode == XDP_ATTACHED_DRV)
		return RG_XDP_MODE_NATIVE;
	if (q.attach_mode == XDP_ATTACHED_SKB)
		return RG_XDP_MODE_GENERIC;
	return RG_XDP_MODE_AUTO;
}

static int attach(struct rg_xdp *x, enum rg_xdp_mode mode)
{
	int err = -EOPNOTSUPP;
	bool adopted = false;

	if (adopt_link(x) == 0) {
		x->mode = query_mode(x->ifindex);
		adopted = true;
		goto pin;
	}
	if (mode != RG_XDP_MODE_GENERIC) {
		err = attach_mode(x, RG_XDP_MODE_NATIVE);
		if (err && mode == RG_XDP_MODE_NATIVE) {
			pr_err("cannot attach XDP in native mode to %s: %s", x->ifname,
			       xdp_errno(err));
			return err;
		}
		if (err && err != -EOPNOTSUPP && err != -EINVAL && err != -ERANGE) {
			pr_err("cannot attach XDP to %s: %s", x->ifname, xdp_errno(err));
			return err;
		}
		if (err)
			pr_info("native XDP unavailable on %s (%s): using generic mode", x->ifname,
				xdp_errno(err));
	}
	if (err) {
		err = attach_mode(x, RG_XDP_MODE_GENERIC);
		if (err) {
			pr_err("cannot attach XDP to %s: %s", x->ifname, xdp_errno(err));
			return err;
		}
	}
pin:
	if (access(x->link_pin, F_OK) && bpf_obj_pin(x->link_fd, x->link_pin)) {
		err = -errno;
		pr_err("cannot pin %s: %s", x->link_pin, strerror(errno));
		return err;
	}
	pr_info("XDP attached to %s in %s mode", x->ifname, rg_xdp_mode_name(x->mode));
	rg_event("xdp_attach", "ifname=%s mode=%s link=%s", x->ifname, rg_xdp_mode_name(x->mode),
		 adopted ? "adopted" : "new");
	return 0;
}

int rg_xdp_start_mode(const char *bpffs_dir, const char *ifname, enum rg_xdp_mode mode,
		      const struct rg_udp_mapping *maps, int n, struct rg_xdp **out)
{
	struct rg_xdp *x;
	int err;

	*out = NULL;
	if (!ifname || strlen(ifname) >= IF_NAMESIZE) {
		pr_err("invalid interface name '%s'", ifname ? ifname : "");
		return -EINVAL;
	}
	if (strlen(bpffs_dir) >= RG_XDP_DIR_MAX) {
		pr_err("pin directory %s is too long", bpffs_dir);
		return -ENAMETOOLONG;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->link_fd = -1;
	snprintf(x->bpffs, sizeof(x->bpffs), "%s", bpffs_dir);
	snprintf(x->ifname, sizeof(x->ifname), "%s", ifname);
	snprintf(x->link_pin, sizeof(x->link_pin), "%s/%s%s", bpffs_dir, RG_PIN_LINK_XDP_PREFIX,
		 ifname);
	x->ifindex = (int)if_nametoindex(ifname);
	if (!x->ifindex) {
		err = -errno;
		pr_err("cannot use interface %s: %s", ifname, xdp_errno(err));
		goto fail;
	}
	{
		/* maps declared LIBBPF_PIN_BY_NAME are pinned there, or adopted */
		LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = x->bpffs);

		x->skel = xdp__open_opts(&opts);
	}
	if (!x->skel) {
		err = -errno;
		pr_err("cannot open the XDP object: %s", strerror(errno));
		goto fail;
	}
	warn_unshared(x);
	err = xdp__load(x->skel);
	if (err) {
		pr_err("cannot load the XDP program: %s%s", strerror(-err), rg_load_hint(err));
		goto fail;
	}
	err = write_mappings(x, maps, n);
	if (!err)
		err = attach(x, mode);
	if (err)
		goto fail;
	*out = x;
	return 0;
fail:
	if (x->link_fd >= 0)
		close(x->link_fd);
	xdp__destroy(x->skel);
	free(x);
	return err;
}

int rg_xdp_start(const char *bpffs_dir, const char *ifname, const struct rg_udp_mapping *maps,
		 int n, struct rg_xdp **out)
{
	return rg_xdp_start_mode(bpffs_dir, ifname, RG_XDP_MODE_AUTO, maps, n, out);
}

void rg_xdp_stop(struct rg_xdp *x, bool keep)
{
	if (!x)
		return;
	if (keep) {
		pr_info("XDP stays attached to %s (pinned %s)", x->ifname, x->link_pin);
	} else {
		/* the link detaches when its last reference, the pin or our
		 * fd, goes; unpinned the mapping no longer outlives us */
		if (x->link_fd >= 0 && bpf_link_detach(x->link_fd) && errno != EINVAL)
			pr_warn("cannot detach XDP from %s: %s", x->ifname, strerror(errno));
		if (unlink(x->link_pin) && errno != ENOENT)
			pr_warn("cannot remove %s: %s", x->link_pin, strerror(errno));
		rg_unpin(x->bpffs, RG_STR(RG_MAP_UDP_PORTS));
		pr_info("XDP detached from %s", x->ifname);
		rg_event("xdp_detach", "ifname=%s reason=stop", x->ifname);
	}
	if (x->link_fd >= 0)
		close(x->link_fd);
	xdp__destroy(x->skel);
	free(x);
}

void rg_xdp_cleanup(const char *bpffs_dir, bool purge)
{
	size_t plen = strlen(RG_PIN_LINK_XDP_PREFIX);
	struct dirent *de;
	DIR *dir;

	dir = opendir(bpffs_dir);
	if (dir) {
		while ((de = readdir(dir))) {
			char path[PATH_MAX];
			int fd;

			if (strncmp(de->d_name, RG_PIN_LINK_XDP_PREFIX, plen))
				continue;
			rg_pin_path(path, sizeof(path), bpffs_dir, de->d_name);
			fd = bpf_obj_get(path);
			if (fd >= 0) {
				bpf_link_detach(fd);
				close(fd);
			}
			rg_unpin(bpffs_dir, de->d_name);
		}
		closedir(dir);
	}
	rg_unpin(bpffs_dir, RG_STR(RG_MAP_UDP_PORTS));
	if (purge) {
		rg_unpin(bpffs_dir, RG_STR(RG_MAP_UDP_STATS));
		rg_unpin(bpffs_dir, RG_STR(RG_MAP_XDP_STATS));
	}
}

/* ---- counters ---- */

int rg_xdp_read_db_stats(const char *bpffs_dir, const struct rg_db_key *db,
			 struct rg_udp_stats *out)
{
	int fd = rg_pin_open(bpffs_dir, RG_STR(RG_MAP_UDP_STATS)), err;

	if (fd < 0)
		return fd;
	err = rg_percpu_sum(fd, db, out, sizeof(*out));
	close(fd);
	return err;
}

int rg_xdp_read_global_stats(const char *bpffs_dir, struct rg_xdp_stats *out)
{
	int fd = rg_pin_open(bpffs_dir, RG_STR(RG_MAP_XDP_STATS)), err;
	__u32 zero = 0;

	if (fd < 0)
		return fd;
	err = rg_percpu_sum(fd, &zero, out, sizeof(*out));
	close(fd);
	return err;
}

/* The ports mapped to db, from udp_ports. */
static json_t *ports_of(int ports_fd, const struct rg_db_key *db)
{
	struct rg_udp_port_key key, next;
	struct rg_db_key val;
	json_t *arr = json_array();
	bool first = true;

	if (!arr || ports_fd < 0)
		return arr;
	while (bpf_map_get_next_key(ports_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (bpf_map_lookup_elem(ports_fd, &key, &val) == 0 && !strcmp(val.name, db->name))
			json_array_append_new(arr, json_integer(key.port));
	}
	return arr;
}

int rg_xdp_stats_json(const char *bpffs_dir, const struct rg_db_key *db, json_t *reply)
{
	json_t *udp = NULL, *arr = NULL, *g = NULL, *o;
	int stats_fd, ports_fd, err = -ENOMEM;
	struct rg_db_key key, next;
	struct rg_udp_stats st;
	struct rg_xdp_stats gs = {};
	bool first = true;

	stats_fd = rg_pin_open(bpffs_dir, RG_STR(RG_MAP_UDP_STATS));
	if (stats_fd < 0)
		return stats_fd == -ENOENT ? -ENOENT : stats_fd;
	ports_fd = rg_pin_open(bpffs_dir, RG_STR(RG_MAP_UDP_PORTS));
	udp = json_object();
	arr = json_array();
	g = json_object();
	if (!udp || !arr || !g)
		goto out;
	while (bpf_map_get_next_key(stats_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (db && strcmp(db->name, key.name))
			continue;
		if (rg_percpu_sum(stats_fd, &key, &st, sizeof(st)))
			continue;
		o = json_object();
		if (!o || json_array_append_new(arr, o))
			goto out;
		json_object_set_new(o, "db", json_string(key.name));
		json_object_set_new(o, "ports", ports_of(ports_fd, &key));
		rg_counters_json(o, &rg_udp_stats_table, &st);
	}
	rg_xdp_read_global_stats(bpffs_dir, &gs);
	rg_counters_json(g, &rg_xdp_stats_table, &gs);
	json_object_set_new(udp, "databases", arr);
	json_object_set_new(udp, "global", g);
	arr = g = NULL;
	err = json_object_set_new(reply, "udp", udp) ? -ENOMEM : 0;
	udp = NULL;
out:
	json_decref(udp);
	json_decref(arr);
	json_decref(g);
	close(stats_fd);
	if (ports_fd >= 0)
		close(ports_fd);
	return err;
}
