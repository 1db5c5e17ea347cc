// SPDX-License-Identifier: GPL-2.0
/* The limits state file and list (user/lib/state.c), in a temporary directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "../../user/lib/state.h"

static char tmpdir[] = "/tmp/rowgate-test-state.XXXXXX";

static struct rg_db_key key(const char *name)
{
	struct rg_db_key k;

	memset(&k, 0, sizeof(k));
	strncpy(k.name, name, sizeof(k.name) - 1);
	return k;
}

static void path_in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Entries of dir whose name starts with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

static void test_list(void)
{
	struct rg_limit_list list;
	struct rg_db_key k;
	char name[16];
	int i;

	rg_limit_list_init(&list);
	k = key("b");
	CHECK(rg_limit_list_set(&list, &k, 2) == 0, "set b");
	k = key("a");
	CHECK(rg_limit_list_set(&list, &k, 1) == 0, "set a");
	k = key("c");
	CHECK(rg_limit_list_set(&list, &k, 3) == 0, "set c");
	k = key("b");
	CHECK(rg_limit_list_set(&list, &k, 20) == 0, "replace b");
	CHECK(list.count == 3, "3 entries, got %zu", list.count);
	CHECK(!strcmp(list.entries[0].db.name, "a") && !strcmp(list.entries[1].db.name, "b") &&
		      !strcmp(list.entries[2].db.name, "c"),
	      "sorted by name");
	CHECK(rg_limit_list_find(&list, &k) && rg_limit_list_find(&list, &k)->limit == 20,
	      "b replaced");
	CHECK(rg_limit_list_unset(&list, &k) == 0, "unset b");
	CHECK(rg_limit_list_unset(&list, &k) == -ENOENT, "unset b twice");
	CHECK(!rg_limit_list_find(&list, &k), "b gone");
	CHECK(list.count == 2, "2 entries left");
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "db%04d", 999 - i);
		k = key(name);
		if (rg_limit_list_set(&list, &k, (__u64)i))
			break;
	}
	CHECK(list.count == 1002, "grew to 1002, got %zu", list.count);
	k = key("db0500");
	CHECK(rg_limit_list_find(&list, &k) && rg_limit_list_find(&list, &k)->limit == 499,
	      "find among many");
	rg_limit_list_free(&list);
	CHECK(list.count == 0 && !list.entries, "freed list is empty");
}

static void test_json_u64(void)
{
	static const __u64 values[] = { 0, 1, INT64_MAX, (__u64)INT64_MAX + 1, RG_U64_MAX };
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		json_t *j = rg_json_u64(values[i]);
		__u64 back = 0;

		CHECK(j && rg_json_get_u64(j, &back) == 0 && back == values[i],
		      "json u64 %llu round trip", (unsigned long long)values[i]);
		CHECK(values[i] <= INT64_MAX ? json_is_integer(j) : json_is_string(j),
		      "json u64 %llu type", (unsigned long long)values[i]);
		json_decref(j);
	}
	{
		json_t *bad[] = { json_integer(-1), json_string("1e3"), json_real(1.0),
				  json_null() };
		__u64 out;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			CHECK(rg_json_get_u64(bad[i], &out) == -EINVAL, "bad json u64 #%zu refused",
			      i);
			json_decref(bad[i]);
		}
	}
}

static void test_missing_file(void)
{
	struct rg_limit_list list;
	char path[256], err[512] = "";

	path_in_tmp(path, sizeof(path), "missing/limits.json");
	rg_limit_list_init(&list);
	CHECK(rg_state_load(path, &list, err, sizeof(err)) == 0, "missing file loads: %s", err);
	CHECK(list.count == 0, "missing file is empty");
	rg_limit_list_free(&list);
}

static void test_round_trip(void)
{
	static const struct {
		const char *db;
		__u64 limit;
	} entries[] = {
		{ "logs", 1000 },	  { "zero", 0 },
		{ "i64max", INT64_MAX },  { "above", (__u64)INT64_MAX + 1 },
		{ "u64max", RG_U64_MAX }, { "a-b.c:d_e", 7 },
		/* the key "greptime-x", next to "x" (found by tests/fuzz/fuzz_state) */
		{ "greptime-greptime-x", 8 }, { "x", 9 },
	};
	struct rg_limit_list list, back;
	char path[256], err[512] = "";
	struct rg_db_key k;
	const char *text;
	size_t i;

	path_in_tmp(path, sizeof(path), "new/dir/limits.json");
	rg_limit_list_init(&list);
	rg_limit_list_init(&back);
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		k = key(entries[i].db);
		rg_limit_list_set(&list, &k, entries[i].limit);
	}
	CHECK(rg_state_save(path, &list, err, sizeof(err)) == 0,
	      "save into missing directories: %s", err);
	CHECK(rg_state_load(path, &back, err, sizeof(err)) == 0, "load: %s", err);
	CHECK(back.count == list.count, "same count: %zu vs %zu", back.count, list.count);
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		struct rg_limit_entry *e;

		k = key(entries[i].db);
		e = rg_limit_list_find(&back, &k);
		CHECK(e && e->limit == entries[i].limit, "%s: %llu survives", entries[i].db,
		      (unsigned long long)entries[i].limit);
	}
	text = read_file(path);
	CHECK(text && strstr(text, "\"u64max\": \"18446744073709551615\""),
	      "u64 max stored as a string: %s", text);
	CHECK(text && strstr(text, "\"logs\": 1000"), "small values stored as integers: %s", text);
	CHECK(text && strstr(text, "\"version\": 1"), "version written");
	CHECK(text && !strstr(text, "shadow"), "no shadow key without shadow limits: %s", text);

	/* shadow mode survives; a limit set again without it enforces */
	k = key("logs");
	rg_limit_list_set_mode(&list, &k, 500, true);
	rg_limit_list_free(&back);
	rg_limit_list_init(&back);
	CHECK(rg_state_save(path, &list, err, sizeof(err)) == 0, "save shadow: %s", err);
	CHECK(rg_state_load(path, &back, err, sizeof(err)) == 0, "load shadow: %s", err);
	CHECK(rg_limit_list_find(&back, &k) && rg_limit_list_find(&back, &k)->shadow &&
		      rg_limit_list_find(&back, &k)->limit == 500,
	      "logs stays 500 in shadow mode");
	k = key("u64max");
	CHECK(rg_limit_list_find(&back, &k) && !rg_limit_list_find(&back, &k)->shadow,
	      "the others enforce");
	k = key("logs");
	rg_limit_list_set(&list, &k, 500);
	CHECK(!rg_limit_list_find(&list, &k)->shadow, "set without shadow enforces");
	rg_limit_list_free(&list);
	rg_limit_list_free(&back);
}

static void test_hand_written(void)
{
	struct rg_limit_list list;
	char path[256], err[512] = "";
	struct rg_db_key k;

	path_in_tmp(path, sizeof(path), "hand.json");
	write_file(path, "{\"version\":1,\"limits\":{\"greptime-logs\":\"1000\","
			 "\"metrics\":5},\"comment\":\"ignored\"}\n");
	rg_limit_list_init(&list);
	CHECK(rg_state_load(path, &list, err, sizeof(err)) == 0, "load: %s", err);
	k = key("logs");
	CHECK(rg_limit_list_find(&list, &k) && rg_limit_list_find(&list, &k)->limit == 1000,
	      "string value and greptime- name accepted");
	rg_limit_list_free(&list);
}

static void test_corrupt(void)
{
	static const struct {
		const char *text;
		const char *hint;
	} cases[] = {
		{ "", "empty" },
		{ "{", "not valid JSON" },
		{ "{\"version\":1,\"limits\":{\"a\":1}", "not valid JSON" },
		{ "[]", "not a JSON object" },
		{ "{\"limits\":{}}", "version" },
		{ "{\"version\":2,\"limits\":{}}", "version" },
		{ "{\"version\":\"1\",\"limits\":{}}", "version" },
		{ "{\"version\":1}", "\"limits\" is missing" },
		{ "{\"version\":1,\"limits\":[]}", "not an object" },
		{ "{\"version\":1,\"limits\":{\"a\":-1}}", "limit of 'a'" },
		{ "{\"version\":1,\"limits\":{\"a\":1.5}}", "limit of 'a'" },
		{ "{\"version\":1,\"limits\":{\"a\":\"1000/s\"}}", "limit of 'a'" },
		{ "{\"version\":1,\"limits\":{\"a\":null}}", "limit of 'a'" },
		{ "{\"version\":1,\"limits\":{\"a\":\"18446744073709551616\"}}", "limit of 'a'" },
		{ "{\"version\":1,\"limits\":{\"a b\":1}}", "whitespace" },
		{ "{\"version\":1,\"limits\":{\"\":1}}", "empty" },
		{ "{\"version\":1,\"limits\":{\"a\":1,\"a\":2}}", "duplicate" },
		{ "{\"version\":1,\"limits\":{\"logs\":1,\"greptime-logs\":2}}", "twice" },
		{ "{\"version\":1,\"limits\":{\"a\":1},\"shadow\":[\"b\"]}", "no limit" },
		{ "{\"version\":1,\"limits\":{\"a\":1},\"shadow\":\"a\"}", "not an array" },
		{ "{\"version\":1,\"limits\":{\"a\":1},\"shadow\":[1]}", "not a database" },
	};
	char path[256];
	size_t i;

	path_in_tmp(path, sizeof(path), "corrupt.json");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rg_limit_list list;
		char err[512] = "";
		int ret;

		write_file(path, cases[i].text);
		rg_limit_list_init(&list);
		ret = rg_state_load(path, &list, err, sizeof(err));
		CHECK(ret < 0, "corrupt [%s] refused", cases[i].text);
		CHECK(list.count == 0, "corrupt [%s] left entries", cases[i].text);
		CHECK(strstr(err, path), "[%s]: message '%s' names the file", cases[i].text, err);
		CHECK(strstr(err, cases[i].hint), "[%s]: message '%s' lacks '%s'", cases[i].text,
		      err, cases[i].hint);
		rg_limit_list_free(&list);
	}
	printf("checked %zu corrupt files\n", sizeof(cases) / sizeof(cases[0]));

	/* a directory where the file should be */
	{
		struct rg_limit_list list;
		char err[512] = "";

		path_in_tmp(path, sizeof(path), "adir");
		mkdir(path, 0755);
		rg_limit_list_init(&list);
		CHECK(rg_state_load(path, &list, err, sizeof(err)) < 0 &&
			      strstr(err, "not a regular file"),
		      "directory refused: %s", err);
	}
}

static void test_atomic_save(void)
{
	struct rg_limit_list list;
	char path[256], err[512] = "", old_text[4096];
	struct stat before, after;
	struct rg_db_key k;
	ssize_t n;
	int old_fd;

	path_in_tmp(path, sizeof(path), "atomic.json");
	rg_limit_list_init(&list);
	k = key("old");
	rg_limit_list_set(&list, &k, 1);
	CHECK(rg_state_save(path, &list, err, sizeof(err)) == 0, "first save: %s", err);
	stat(path, &before);
	CHECK((before.st_mode & 0777) == 0644, "mode 0644, got %o", before.st_mode & 0777);
	old_fd = open(path, O_RDONLY);

	k = key("new");
	rg_limit_list_set(&list, &k, 2);
	CHECK(rg_state_save(path, &list, err, sizeof(err)) == 0, "second save: %s", err);
	stat(path, &after);
	CHECK(before.st_ino != after.st_ino, "replaced by rename, not rewritten in place");
	n = read(old_fd, old_text, sizeof(old_text) - 1);
	old_text[n > 0 ? n : 0] = 0;
	close(old_fd);
	CHECK(strstr(old_text, "\"old\"") && !strstr(old_text, "\"new\""),
	      "a reader of the old file sees it whole: %s", old_text);
	CHECK(strstr(read_file(path), "\"new\": 2"), "new content in place");
	CHECK(count_entries(tmpdir, "atomic.json.") == 0, "no temporary file left behind");

	/* a failed save leaves no temporary file and no change */
	path_in_tmp(path, sizeof(path), "blocked");
	mkdir(path, 0755);
	path_in_tmp(path, sizeof(path), "blocked/keep");
	write_file(path, "x");
	path_in_tmp(path, sizeof(path), "blocked");
	err[0] = 0;
	CHECK(rg_state_save(path, &list, err, sizeof(err)) < 0,
	      "save over a non-empty directory fails");
	CHECK(strstr(err, path) && strstr(err, "cannot replace"), "failure message: %s", err);
	CHECK(count_entries(tmpdir, "blocked.") == 0, "failed save cleaned its temporary file");

	/* parent is a regular file */
	path_in_tmp(path, sizeof(path), "atomic.json/sub/limits.json");
	err[0] = 0;
	CHECK(rg_state_save(path, &list, err, sizeof(err)) < 0 &&
		      strstr(err, "cannot create the directory"),
	      "parent that is a file: %s", err);
	rg_limit_list_free(&list);
}

int main(void)
{
	char cmd[512];
	int ret;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	test_list();
	test_json_u64();
	test_missing_file();
	test_round_trip();
	test_hand_written();
	test_corrupt();
	test_atomic_save();
	ret = check_report("test_state");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return ret;
}
