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

#include "../clock.h"
#include "../log.h"
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
