// SPDX-License-Identifier: GPL-2.0
/* The limits state file; see state.h. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "limits.h"
#include "state.h"

void rg_limit_list_init(struct rg_limit_list *list)
{
	list->entries = NULL;
	list->count = 0;
	list->capacity = 0;
}

void rg_limit_list_free(struct rg_limit_list *list)
{
	free(list->entries);
	rg_limit_list_init(list);
}

/* Index of db, or of where it would be inserted. */
static size_t list_position(const struct rg_limit_list *list, const struct rg_db_key *db,
			    bool *found)
{
	size_t lo = 0, hi = list->count;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strncmp(list->entries[mid].db.name, db->name, RG_DB_NAME_MAX);

		if (cmp == 0) {
			*found = true;
			return mid;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct rg_limit_entry *rg_limit_list_find(const struct rg_limit_list *list,
					  const struct rg_db_key *db)
{
	bool found;
	size_t pos = list_position(list, db, &found);

	return found ? &list->entries[pos] : NULL;
}

int rg_limit_list_set(struct rg_limit_list *list, const struct rg_db_key *db, __u64 limit)
{
	return rg_limit_list_set_mode(list, db, limit, false);
}

int rg_limit_list_set_mode(struct rg_limit_list *list, const struct rg_db_key *db, __u64 limit,
			   bool shadow)
{
	bool found;
	size_t pos = list_position(list, db, &found);

	if (!found) {
		if (list->count == list->capacity) {
			size_t capacity = list->capacity ? list->capacity * 2 : 16;
			struct rg_limit_entry *entries;

			entries = reallocarray(list->entries, capacity, sizeof(*entries));
			if (!entries)
				return -ENOMEM;
			list->entries = entries;
			list->capacity = capacity;
		}
		memmove(&list->entries[pos + 1], &list->entries[pos],
			(list->count - pos) * sizeof(list->entries[0]));
		list->count++;
		list->entries[pos].db = *db;
	}
	list->entries[pos].limit = limit;
	list->entries[pos].shadow = shadow;
	return 0;
}

int rg_limit_list_unset(struct rg_limit_list *list, const struct rg_db_key *db)
{
	bool found;
	size_t pos = list_position(list, db, &found);

	if (!found)
		return -ENOENT;
	memmove(&list->entries[pos], &list->entries[pos + 1],
		(list->count - pos - 1) * sizeof(list->entries[0]));
	list->count--;
	return 0;
}

json_t *rg_json_u64(__u64 value)
{
	char digits[24];

	if (value <= (__u64)INT64_MAX)
		return json_integer((json_int_t)value);
	snprintf(digits, sizeof(digits), "%llu", (unsigned long long)value);
	return json_string(digits);
}

int rg_json_get_u64(const json_t *value, __u64 *out)
{
	char err[128];

	if (json_is_integer(value)) {
		if (json_integer_value(value) < 0)
			return -EINVAL;
		*out = (__u64)json_integer_value(value);
		return 0;
	}
	if (json_is_string(value) &&
	    !rg_parse_limit(json_string_value(value), out, err, sizeof(err)))
		return 0;
	return -EINVAL;
}

int rg_make_parent_dir(const char *path, mode_t mode)
{
	char dir[PATH_MAX];
	char *p;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0; /* relative name in cwd, or a file in "/" */
	*p = 0;
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* "shadow": the databases of "limits" whose limit runs in shadow mode. */
static int parse_shadow(const char *path, json_t *root, struct rg_limit_list *list, char *err,
			size_t errlen)
{
	json_t *shadow = json_object_get(root, "shadow"), *v;
	struct rg_limit_entry *e;
	struct rg_db_key db;
	char why[160];
	size_t i;

	if (!shadow)
		return 0;
	if (!json_is_array(shadow)) {
		snprintf(err, errlen, "%s: \"shadow\" is not an array of database names", path);
		return -EINVAL;
	}
	json_array_foreach(shadow, i, v) {
		if (!json_is_string(v) || rg_parse_db_name(json_string_value(v), &db, why, sizeof(why))) {
			snprintf(err, errlen, "%s: \"shadow\"[%zu] is not a database name", path, i);
			return -EINVAL;
		}
		e = rg_limit_list_find(list, &db);
		if (!e) {
			snprintf(err, errlen, "%s: \"shadow\" names '%s', which has no limit", path,
				 db.name);
			return -EINVAL;
		}
		e->shadow = true;
	}
	return 0;
}

static int parse_limits(const char *path, json_t *root, struct rg_limit_list *list, char *err,
			size_t errlen)
{
	json_t *version, *limits, *value;
	const char *name;
	char why[160];
	int ret;

	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: the file is not a JSON object", path);
		return -EINVAL;
	}
	version = json_object_get(root, "version");
	if (!json_is_integer(version) || json_integer_value(version) != RG_STATE_VERSION) {
		snprintf(err, errlen, "%s: unsupported or missing \"version\" (expected %d)", path,
			 RG_STATE_VERSION);
		return -EINVAL;
	}
	limits = json_object_get(root, "limits");
	if (!json_is_object(limits)) {
		snprintf(err, errlen, "%s: \"limits\" is missing or not an object", path);
		return -EINVAL;
	}
	json_object_foreach(limits, name, value) {
		struct rg_db_key db;
		__u64 limit;

		ret = rg_parse_db_name(name, &db, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: %s", path, why);
			return ret;
		}
		if (rg_limit_list_find(list, &db)) {
			snprintf(err, errlen,
				 "%s: database '%s' appears twice (names are normalized: greptime-X is X)",
				 path, db.name);
			return -EINVAL;
		}
		if (rg_json_get_u64(value, &limit)) {
			snprintf(err, errlen,
				 "%s: the limit of '%s' is not a non-negative integer that fits 64 bits",
				 path, db.name);
			return -EINVAL;
		}
		ret = rg_limit_list_set(list, &db, limit);
		if (ret) {
			snprintf(err, errlen, "%s: out of memory", path);
			return ret;
		}
	}
	return parse_shadow(path, root, list, err, errlen);
}

int rg_state_load(const char *path, struct rg_limit_list *list, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = NULL;
	struct stat st;
	FILE *file;
	int ret;

	file = fopen(path, "re");
	if (!file) {
		if (errno == ENOENT)
			return 0; /* first start: nothing configured yet */
		ret = -errno;
		snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fileno(file), &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat state file %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "state file %s is not a regular file", path);
		goto out;
	}
	if (st.st_size == 0) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "state file %s is empty (expected {\"version\":1,\"limits\":{...}})",
			 path);
		goto out;
	}
	root = json_loadf(file, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		ret = -EINVAL;
		snprintf(err, errlen, "state file %s is not valid JSON: %s at line %d, column %d",
			 path, jerr.text, jerr.line, jerr.column);
		goto out;
	}
	ret = parse_limits(path, root, list, err, errlen);
	if (ret)
		rg_limit_list_free(list); /* never hand back half a file */
out:
	json_decref(root);
	fclose(file);
	return ret;
}

static json_t *limits_to_json(const struct rg_limit_list *list)
{
	json_t *root, *limits, *shadow;
	size_t i;

	root = json_object();
	limits = json_object();
	shadow = json_array();
	if (!root || !limits || !shadow ||
	    json_object_set_new(root, "version", json_integer(RG_STATE_VERSION)) ||
	    json_object_set(root, "limits", limits))
		goto fail;
	for (i = 0; i < list->count; i++) {
		const struct rg_limit_entry *e = &list->entries[i];
		char name[RG_DB_NAME_TEXT_MAX];

		rg_format_db_name(&e->db, name, sizeof(name));
		if (json_object_set_new(limits, name, rg_json_u64(e->limit)) ||
		    (e->shadow && json_array_append_new(shadow, json_string(name))))
			goto fail;
	}
	/* only when used: a file without shadow limits reads as before */
	if (json_array_size(shadow) && json_object_set(root, "shadow", shadow))
		goto fail;
	json_decref(shadow);
	json_decref(limits);
	return root;
fail:
	json_decref(shadow);
	json_decref(limits);
	json_decref(root);
	return NULL;
}

static int fsync_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	int fd, ret = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

int rg_state_save(const char *path, const struct rg_limit_list *list, char *err, size_t errlen)
{
	const char *step = "prepare";
	bool tmp_exists = false;
	char tmp[PATH_MAX];
	json_t *root = NULL;
	char *text = NULL;
	int fd = -1, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	step = "create the directory of";
	ret = rg_make_parent_dir(path, 0755);
	if (ret)
		goto out;
	step = "encode";
	root = limits_to_json(list);
	text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	step = "create a temporary file for";
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	tmp_exists = true;
	step = "write";
	ret = rg_write_all(fd, text, strlen(text));
	if (!ret)
		ret = rg_write_all(fd, "\n", 1);
	if (ret)
		goto out;
	if (fchmod(fd, 0644) || fsync(fd)) {
		ret = -errno;
		goto out;
	}
	ret = close(fd) ? -errno : 0;
	fd = -1;
	if (ret)
		goto out;
	step = "replace";
	if (rename(tmp, path)) {
		ret = -errno;
		goto out;
	}
	tmp_exists = false;
	/* the rename is durable only once the directory is */
	step = "sync the directory of";
	ret = fsync_parent_dir(path);
out:
	if (ret)
		snprintf(err, errlen, "cannot %s state file %s: %s", step, path, strerror(-ret));
	if (fd >= 0)
		close(fd);
	if (tmp_exists)
		unlink(tmp);
	free(text);
	json_decref(root);
	return ret;
}
