/* SPDX-License-Identifier: GPL-2.0 */
/* The one userspace owner of rowgate's pins and map contents: the bpffs
 * directory (prepared, locked; the objects pin their maps there by name
 * through libbpf's pin_root_path), pin paths, clearing and unpinning; writing a database's limit and reading a
 * consistent snapshot of a database.  Functions take map fds, not a daemon;
 * they return 0 or a negative errno, and log (log.h) only where they say so.
 */
#ifndef ROWGATE_USER_LIB_MAPS_H
#define ROWGATE_USER_LIB_MAPS_H

#include <stdbool.h>
#include <stddef.h>

#include <bpf/libbpf.h>

#include "rowgate/abi.h"

#define RG_BPFFS_MAGIC 0xcafe4a11

/* Where rowgated pins and rowgatectl reads, unless --bpffs says otherwise. */
#define RG_BPFFS_DEFAULT_DIR "/sys/fs/bpf/rowgate"

/* dir/name into buf (truncated to len). */
void rg_pin_path(char *buf, size_t len, const char *dir, const char *name);

/* Whether path is on a bpf filesystem. */
bool rg_is_bpffs(const char *path);

/* Create dir on a bpf filesystem, mounting /sys/fs/bpf as systemd would
 * when nothing is mounted there.  Logs why it failed. */
int rg_bpffs_prepare(const char *dir);

/* Lock dir so one loader at a time uses it: the locked fd, or a negative
 * errno (-EBUSY: another loader holds it).  Logs why it failed. */
int rg_bpffs_lock(const char *dir);

/* What to do about a failed object load, as a parenthesised hint: EINVAL
 * mostly means a pinned map of another layout. */
const char *rg_load_hint(int err);

struct btf;

/* Whether type ia of a and type ib of b lay out memory the same way: the
 * same kinds, sizes, array lengths, and struct members at the same offsets
 * under the same names, recursively (typedefs and qualifiers skipped).  A
 * member named pad* on either side may carry another name: a field taken
 * from padding reads as zero to a build that does not know it.  0 when they
 * do; -EPROTO, with where they differ ("rg_conn.w.len: ...") in why, when
 * not. */
int rg_btf_layout_diff(const struct btf *a, __u32 ia, const struct btf *b, __u32 ib, char *why,
		       size_t len);

/* The object pinned as dir/name: an fd, or a negative errno. */
int rg_pin_open(const char *dir, const char *name);

/* Remove dir/name; a missing pin is fine, anything else is logged. */
void rg_unpin(const char *dir, const char *name);

/* Delete every entry of a hash-like map (keys up to 256 bytes). */
int rg_map_clear(int fd, size_t key_size);

/* Delete the entries of a hash-like map whose key keep() refuses (keys up
 * to 256 bytes).  Entries kept are never absent meanwhile: a map the data
 * path reads is pruned to its desired set after that set was written. */
int rg_map_prune(int fd, size_t key_size, bool (*keep)(const void *key, void *ctx), void *ctx);

/* Look key up in a per-CPU map of __u64 counters and sum the CPUs into out
 * (size bytes). */
int rg_percpu_sum(int fd, const void *key, void *out, size_t size);

/* The maps that hold a database: limit, bucket and counters.  A fd of -1
 * is skipped where the function allows it. */
struct rg_db_maps {
	int limits_fd;
	int buckets_fd;
	int db_stats_fd;
	int proto_stats_fd; /* -1: an object without per-protocol counters */
};

/*
 * Write a database's limit and quota (0 = none: use the limit).  A database
 * seen for the first time gets a full bucket (when limit > 0) and zeroed
 * counters; an existing bucket is kept, debt included, so disabling and
 * re-enabling never forgives debt (docs/design.md#token-bucket).
 */
int rg_limit_write(const struct rg_db_maps *m, const struct rg_db_key *db, __u64 limit,
		   __u64 quota);

/* Remove a database's limit; its bucket and counters stay. -ENOENT if none. */
int rg_limit_remove(const struct rg_db_maps *m, const struct rg_db_key *db);

/* One database now: its counters with the four gauges (limit, effective
 * quota, tokens, debt) replaced by the live values — the limits map, and
 * the bucket read under its lock and refilled to now_ns. */
struct rg_db_snapshot {
	struct rg_db_stats stats;
	bool has_stats;  /* db_stats had an entry */
	bool has_limit;  /* limits had an entry */
	bool has_bucket; /* buckets had an entry */
};

/* 0 when the database has counters, a limit or a bucket; -ENOENT if none. */
int rg_db_snapshot_read(const struct rg_db_maps *m, const struct rg_db_key *db, __u64 now_ns,
			struct rg_db_snapshot *out);

#endif /* ROWGATE_USER_LIB_MAPS_H */
