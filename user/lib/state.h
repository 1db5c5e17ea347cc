/* SPDX-License-Identifier: GPL-2.0 */
/* The limits state file and the in-memory list of configured limits.
 *
 * File format (default RG_STATE_DEFAULT_PATH):
 *
 *   {"version": 1, "limits": {"logs": 1000, "metrics": "18446744073709551615"}}
 *
 * A u64 is written as a JSON integer when it fits jansson's signed 64-bit
 * json_int_t and as a decimal string above 2^63-1, so every value round-trips
 * exactly; readers accept both forms for any value (rg_json_get_u64).  The
 * admin protocol uses the same convention.
 */
#ifndef ROWGATE_USER_LIB_STATE_H
#define ROWGATE_USER_LIB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include <rowgate/abi.h>

#define RG_STATE_DEFAULT_PATH "/var/lib/rowgate/limits.json"
#define RG_STATE_VERSION      1

struct rg_limit_entry {
	struct rg_db_key db;
	__u64 limit; /* rows per second; 0 = configured but disabled */
	bool shadow; /* counted, never refused (rowgatectl limit set --shadow) */
};

/* Entries kept sorted by name, so files and listings are stable. */
struct rg_limit_list {
	struct rg_limit_entry *entries;
	size_t count;
	size_t capacity;
};

void rg_limit_list_init(struct rg_limit_list *list);
void rg_limit_list_free(struct rg_limit_list *list);
struct rg_limit_entry *rg_limit_list_find(const struct rg_limit_list *list,
					  const struct rg_db_key *db);
/* Insert or replace, enforcing (not shadow); 0 or -ENOMEM. */
int rg_limit_list_set(struct rg_limit_list *list, const struct rg_db_key *db, __u64 limit);
/* Insert or replace in shadow mode or not; 0 or -ENOMEM. */
int rg_limit_list_set_mode(struct rg_limit_list *list, const struct rg_db_key *db, __u64 limit,
			   bool shadow);
/* 0, or -ENOENT when db has no entry. */
int rg_limit_list_unset(struct rg_limit_list *list, const struct rg_db_key *db);

/*
 * Load path into an initialised, empty list.  A missing file is an empty list;
 * anything unreadable or malformed is an error naming the file and the
 * problem (never an empty list).  Returns 0 or negative errno with err filled.
 */
int rg_state_load(const char *path, struct rg_limit_list *list, char *err, size_t errlen);

/*
 * Replace path atomically: write a temporary file in the same directory
 * (created if missing), fsync it, rename it over path, fsync the directory.
 * On failure the old file is untouched.  Returns 0 or negative errno.
 */
int rg_state_save(const char *path, const struct rg_limit_list *list, char *err, size_t errlen);

/* The u64 convention above; NULL on allocation failure. */
json_t *rg_json_u64(__u64 value);
/* Accept a non-negative JSON integer or a decimal string; 0 or -EINVAL. */
int rg_json_get_u64(const json_t *value, __u64 *out);

/* mkdir -p of the directory holding path; 0 or negative errno. */
int rg_make_parent_dir(const char *path, mode_t mode);

#endif /* ROWGATE_USER_LIB_STATE_H */
