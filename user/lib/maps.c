// SPDX-License-Identifier: GPL-2.0
/* Pins and map contents: see maps.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "clock.h"
#include "log.h"
#include "rowgate/bucket.h"
#include "maps.h"

#define RG_BPFFS_ROOT "/sys/fs/bpf"

void rg_pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

bool rg_is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == RG_BPFFS_MAGIC;
}

int rg_bpffs_prepare(const char *dir)
{
	char parent[PATH_MAX], *slash;
	struct stat st;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (!rg_is_bpffs(parent) && !strcmp(parent, RG_BPFFS_ROOT)) {
		if (mount("bpf", RG_BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			pr_err("cannot mount a bpf filesystem on " RG_BPFFS_ROOT ": %s",
			       strerror(errno));
			return -errno;
		}
		pr_info("mounted a bpf filesystem on " RG_BPFFS_ROOT);
	}
	if (!rg_is_bpffs(parent)) {
		pr_err("%s is not on a bpf filesystem; mount one with: mount -t bpf bpf %s",
		       dir, parent);
		return -EINVAL;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	/* whoever may add or replace a pin decides what the kernel enforces */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		pr_err("%s belongs to uid %u, not to rowgated's: its pins are not trusted", dir,
		       (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & 022) && chmod(dir, st.st_mode & 07755)) {
		pr_err("cannot make %s writable by its owner only: %s", dir, strerror(errno));
		return -errno;
	}
	if (st.st_mode & 022)
		pr_warn("%s was writable by group or others: now mode %o", dir, st.st_mode & 07755);
	return 0;
}

int rg_bpffs_lock(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		pr_err("cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pr_err("another rowgated is using %s (its lock is held)", dir);
		close(fd);
		return -EBUSY;
	}
	return fd;
}

const char *rg_load_hint(int err)
{
	return err == -EINVAL ? " (pinned maps from an incompatible rowgated? run 'rowgated "
				"--cleanup' with the same --bpffs)" :
				" (run with --log-level debug for the verifier log)";
}

#define RG_BTF_DEPTH_MAX 16 /* nesting of the map values compared (rg_conn: 3) */

static const struct btf_type *btf_skip_mods(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

static bool pad_name(const char *name)
{
	return !strncmp(name, "pad", 3);
}

static int layout_diff(const struct btf *a, __u32 ia, const struct btf *b, __u32 ib,
		       const char *where, int depth, char *why, size_t len)
{
	const struct btf_type *ta = btf_skip_mods(a, &ia), *tb = btf_skip_mods(b, &ib);
	char sub[256];
	__u16 i;

	if (!ta || !tb) {
		snprintf(why, len, "%s: a type is missing", where);
		return -EPROTO;
	}
	if (btf_kind(ta) != btf_kind(tb)) {
		snprintf(why, len, "%s: kind %u, not %u", where, btf_kind(ta), btf_kind(tb));
		return -EPROTO;
	}
	if (depth > RG_BTF_DEPTH_MAX) {
		snprintf(why, len, "%s: nested too deep to compare", where);
		return -EPROTO;
	}
	switch (btf_kind(ta)) {
	case BTF_KIND_ARRAY: {
		const struct btf_array *aa = btf_array(ta), *ab = btf_array(tb);

		if (aa->nelems != ab->nelems) {
			snprintf(why, len, "%s: %u elements, not %u", where, aa->nelems, ab->nelems);
			return -EPROTO;
		}
		snprintf(sub, sizeof(sub), "%s[]", where);
		return layout_diff(a, aa->type, b, ab->type, sub, depth + 1, why, len);
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		const struct btf_member *ma = btf_members(ta), *mb = btf_members(tb);

		if (ta->size != tb->size || btf_vlen(ta) != btf_vlen(tb)) {
			snprintf(why, len, "%s: %u bytes in %u members, not %u in %u", where,
				 ta->size, btf_vlen(ta), tb->size, btf_vlen(tb));
			return -EPROTO;
		}
		for (i = 0; i < btf_vlen(ta); i++) {
			const char *na = btf__name_by_offset(a, ma[i].name_off);
			const char *nb = btf__name_by_offset(b, mb[i].name_off);
			int err;

			na = na ? na : "";
			nb = nb ? nb : "";
			snprintf(sub, sizeof(sub), "%s.%s", where, na);
			if (strcmp(na, nb) && !pad_name(na) && !pad_name(nb)) {
				snprintf(why, len, "%s: named %s in the other", sub, nb);
				return -EPROTO;
			}
			if (btf_member_bit_offset(ta, i) != btf_member_bit_offset(tb, i) ||
			    btf_member_bitfield_size(ta, i) != btf_member_bitfield_size(tb, i)) {
				snprintf(why, len, "%s: at bit %u, not %u", sub,
					 btf_member_bit_offset(ta, i),
					 btf_member_bit_offset(tb, i));
				return -EPROTO;
			}
			err = layout_diff(a, ma[i].type, b, mb[i].type, sub, depth + 1, why, len);
			if (err)
				return err;
		}
		return 0;
	}
	case BTF_KIND_PTR:
		return 0; /* a pointer's size does not depend on what it points to */
	default: {
		__s64 sa = btf__resolve_size(a, ia), sb = btf__resolve_size(b, ib);

		if (sa != sb) {
			snprintf(why, len, "%s: %lld bytes, not %lld", where, (long long)sa,
				 (long long)sb);
			return -EPROTO;
		}
		return 0;
	}
	}
}

int rg_btf_layout_diff(const struct btf *a, __u32 ia, const struct btf *b, __u32 ib, char *why,
		       size_t len)
{
	const struct btf_type *t = btf_skip_mods(a, &ia);
	const char *name = t ? btf__name_by_offset(a, t->name_off) : NULL;

	why[0] = 0;
	return layout_diff(a, ia, b, ib, name && name[0] ? name : "value", 0, why, len);
}

int rg_pin_open(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd;

	rg_pin_path(path, sizeof(path), dir, name);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

void rg_unpin(const char *dir, const char *name)
{
	char path[PATH_MAX];

	rg_pin_path(path, sizeof(path), dir, name);
	if (unlink(path) && errno != ENOENT)
		pr_warn("cannot remove %s: %s", path, strerror(errno));
}

int rg_map_clear(int fd, size_t key_size)
{
	char key[256], next[256];

	if (key_size > sizeof(key))
		return -EINVAL;
	/* always restart from the first key: the one we held is gone */
	while (bpf_map_get_next_key(fd, NULL, next) == 0) {
		memcpy(key, next, key_size);
		if (bpf_map_delete_elem(fd, key))
			return -errno;
	}
	return 0;
}

int rg_map_prune(int fd, size_t key_size, bool (*keep)(const void *key, void *ctx), void *ctx)
{
	char key[256], next[256];
	char *drop = NULL, *grown;
	size_t n = 0, cap = 0, i;
	int err = 0;

	if (key_size > sizeof(key))
		return -EINVAL;
	/* collect first: deleting while walking may restart the walk */
	for (void *prev = NULL; bpf_map_get_next_key(fd, prev, next) == 0; prev = key) {
		memcpy(key, next, key_size);
		if (keep(key, ctx))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(drop, cap * key_size);
			if (!grown) {
				free(drop);
				return -ENOMEM;
			}
			drop = grown;
		}
		memcpy(drop + n++ * key_size, key, key_size);
	}
	for (i = 0; i < n && !err; i++)
		if (bpf_map_delete_elem(fd, drop + i * key_size) && errno != ENOENT)
			err = -errno;
	free(drop);
	return err;
}

int rg_percpu_sum(int fd, const void *key, void *out, size_t size)
{
	int ncpu = libbpf_num_possible_cpus();
	size_t nfields = size / sizeof(__u64), f;
	__u64 *vals, *sum = out;
	int err = 0, c;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, size);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, key, vals)) {
		err = -errno;
	} else {
		for (f = 0; f < nfields; f++) {
			sum[f] = 0;
			for (c = 0; c < ncpu; c++)
				sum[f] += vals[(size_t)c * nfields + f];
		}
	}
	free(vals);
	return err;
}

/* Insert value under key unless the key is there already. */
static int create(int fd, const void *key, const void *value)
{
	if (bpf_map_update_elem(fd, key, value, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	return 0;
}

int rg_limit_write(const struct rg_db_maps *m, const struct rg_db_key *db, __u64 limit,
		   __u64 quota)
{
	struct rg_limit lim = { .limit_rows_per_s = limit, .quota_rows_per_s = quota };
	struct rg_bucket_value bv = {};
	struct rg_db_stats st = {};
	int err = 0;

	if (limit) {
		rg_bucket_init(&bv.b, limit, rg_monotonic_ns());
		err = create(m->buckets_fd, db, &bv);
	}
	if (!err)
		err = create(m->db_stats_fd, db, &st);
	for (__u32 p = RG_PROTO_NONE + 1; !err && m->proto_stats_fd >= 0 && p < RG_PROTO_MAX;
	     p++) {
		struct rg_proto_key pk = { .db = *db, .protocol = p };
		struct rg_proto_stats ps = {};

		err = create(m->proto_stats_fd, &pk, &ps);
	}
	if (!err && bpf_map_update_elem(m->limits_fd, db, &lim, BPF_ANY))
		err = -errno;
	return err;
}

int rg_limit_remove(const struct rg_db_maps *m, const struct rg_db_key *db)
{
	return bpf_map_delete_elem(m->limits_fd, db) ? -errno : 0;
}

int rg_db_snapshot_read(const struct rg_db_maps *m, const struct rg_db_key *db, __u64 now_ns,
			struct rg_db_snapshot *out)
{
	struct rg_bucket_value bv;
	struct rg_limit lim;

	memset(out, 0, sizeof(*out));
	out->has_stats = bpf_map_lookup_elem(m->db_stats_fd, db, &out->stats) == 0;
	if (!out->has_stats)
		memset(&out->stats, 0, sizeof(out->stats));
	out->has_limit = bpf_map_lookup_elem(m->limits_fd, db, &lim) == 0;
	out->stats.limit_rows_per_s = out->has_limit ? lim.limit_rows_per_s : 0;
	out->stats.quota_rows_per_s =
		out->has_limit && lim.limit_rows_per_s ? rg_effective_quota(&lim) : 0;
	/* the level now, as the kernel would see it */
	out->has_bucket = bpf_map_lookup_elem_flags(m->buckets_fd, db, &bv, BPF_F_LOCK) == 0;
	if (out->has_bucket)
		rg_bucket_refill(&bv.b, now_ns);
	out->stats.tokens = out->has_bucket ? bv.b.tokens : 0;
	out->stats.debt_rows = out->has_bucket ? bv.b.debt_rows : 0;
	return out->has_stats || out->has_limit || out->has_bucket ? 0 : -ENOENT;
}
