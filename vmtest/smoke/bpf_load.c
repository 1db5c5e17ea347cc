// SPDX-License-Identifier: GPL-2.0
// bpf_load: open and load BPF objects on the running kernel, the "does our
// BPF load here" check vmtest runs on every kernel in vmtest/kernels.
//
// Usage: bpf_load [-v] [-s NAME=VALUE]... OBJ.bpf.o...
//        bpf_load -l OBJ.bpf.o...
// Loads every program and map of each object (nothing is attached or
// pinned), prints one line per program with its type and instruction count,
// and on failure the verifier log libbpf retrieves.  -s sets a `const
// volatile` global (.rodata) before the load, as rowgated sets its
// configuration: the verifier sees a different program for each; an
// object without that global fails.  Exit 0 when every object loaded, 1 when
// one failed, 2 on a usage error.  -l lists each object's const volatile
// globals, one a line, and loads nothing.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 16

struct rodata_set {
	const char *name;
	unsigned long long value;
};

static int verbose, list_only;
static struct rodata_set sets[MAX_SETS];
static int nsets;

// libbpf prints the verifier log at LIBBPF_WARN when a program fails to
// load; keep warnings, show debug chatter only with -v.
static void usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [-v] [-s NAME=VALUE]... OBJ.bpf.o...\n"
		   "       %s -l OBJ.bpf.o...\n"
		   "  -v              libbpf's debug output\n"
		   "  -s NAME=VALUE   set the const volatile global NAME before loading\n"
		   "  -l              list each object's const volatile globals, load nothing\n",
		prog, prog);
}

/* NAME=VALUE, VALUE a decimal or 0x number */
static int parse_set(char *arg)
{
	char *eq = strchr(arg, '='), *end;

	if (nsets == MAX_SETS || !eq || eq == arg || !eq[1])
		return -1;
	errno = 0;
	sets[nsets].value = strtoull(eq + 1, &end, 0);
	if (errno || *end || eq[1] == '-')
		return -1;
	*eq = '\0';
	sets[nsets++].name = arg;
	return 0;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* The .rodata map of obj: the internal map whose name ends ".rodata"
 * (libbpf prefixes it with the object's name). */
static struct bpf_map *rodata_map(struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t len = strlen(name);

		if (bpf_map__is_internal(map) && len >= 7 && !strcmp(name + len - 7, ".rodata"))
			return map;
	}
	return NULL;
}

/* Whether type id is volatile under its const (a `const volatile` global:
 * configuration, not one of the programs' constant tables). */
static bool is_volatile(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_const(t) || btf_is_volatile(t) || btf_is_restrict(t))) {
		if (btf_is_volatile(t))
			return true;
		t = btf__type_by_id(btf, t->type);
	}
	return false;
}

/* The variables of btf's .rodata section, *n of them (0: none). */
static const struct btf_var_secinfo *rodata_vars(const struct btf *btf, int *n)
{
	int id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	const struct btf_type *sec;

	*n = 0;
	if (id < 0)
		return NULL;
	sec = btf__type_by_id(btf, id);
	*n = btf_vlen(sec);
	return btf_var_secinfos(sec);
}

/* The const volatile global vi names, or NULL for another variable. */
static const char *config_name(const struct btf *btf, const struct btf_var_secinfo *vi)
{
	const struct btf_type *var = btf__type_by_id(btf, vi->type);

	return is_volatile(btf, var->type) ? btf__name_by_offset(btf, var->name_off) : NULL;
}

/* Where the const volatile global name lies in .rodata: 0 with *offset and
 * *size, -ENOENT when btf has no such global. */
static int find_global(const struct btf *btf, const char *name, __u32 *offset, __u32 *size)
{
	int n;
	const struct btf_var_secinfo *vi = rodata_vars(btf, &n);

	for (int i = 0; i < n; i++, vi++) {
		const char *g = config_name(btf, vi);

		if (g && !strcmp(g, name)) {
			*offset = vi->offset;
			*size = vi->size;
			return 0;
		}
	}
	return -ENOENT;
}

/* Prints the name of every const volatile global in obj, one a line. */
static int list_globals(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	const struct btf_var_secinfo *vi;
	struct btf *btf;
	int n = 0;

	if (!obj) {
		printf("FAIL  %s: open: %s\n", path, strerror(errno));
		return -1;
	}
	btf = bpf_object__btf(obj);
	vi = btf ? rodata_vars(btf, &n) : NULL;
	for (int i = 0; i < n; i++, vi++) {
		const char *g = config_name(btf, vi);

		if (g)
			printf("%s\n", g);
	}
	bpf_object__close(obj);
	return 0;
}

/* Writes every -s into the .rodata image libbpf loads (through
 * bpf_map__set_initial_value: libbpf 1.1 hands the image out const).
 * 0, -ENOENT when obj has no such global, -EINVAL when a value does not
 * fit it; *bad names the set that failed. */
static int apply_sets(struct bpf_object *obj, int *bad)
{
	struct bpf_map *map = rodata_map(obj);
	struct btf *btf = bpf_object__btf(obj);
	const void *cur;
	__u8 *image;
	size_t size;
	int rc = 0;

	*bad = 0;
	if (!map || !btf || !(cur = bpf_map__initial_value(map, &size)))
		return -ENOENT;
	image = malloc(size);
	if (!image)
		return -ENOMEM;
	memcpy(image, cur, size);
	for (int i = 0; i < nsets && !rc; i++) {
		unsigned long long v = sets[i].value;
		__u32 off, len;

		*bad = i;
		rc = find_global(btf, sets[i].name, &off, &len);
		if (rc)
			break;
		if (off + len > size || (len < 8 && v >> (8 * len)) ||
		    (len != 1 && len != 2 && len != 4 && len != 8)) {
			rc = -EINVAL;
			break;
		}
		/* little-endian, as every target rowgate builds for */
		memcpy(image + off, &v, len);
	}
	if (!rc)
		rc = bpf_map__set_initial_value(map, image, size);
	free(image);
	return rc;
}

static int load_one(const char *path)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	char err[128];
	int nprogs = 0, nmaps = 0, rc;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		rc = -errno;
		libbpf_strerror(rc, err, sizeof(err));
		printf("FAIL  %s: open: %s\n", path, err);
		return rc;
	}
	/* a check, not a deployment: maps declared pinned stay private */
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	if (nsets) {
		int bad;

		rc = apply_sets(obj, &bad);
		if (rc) {
			printf("FAIL  %s: -s %s=%llu: %s\n", path, sets[bad].name, sets[bad].value,
			       rc == -ENOENT	 ? "no such const volatile global"
			       : rc == -EINVAL ? "the value does not fit it"
					       : "cannot set .rodata");
			goto out;
		}
	}
	rc = bpf_object__load(obj);
	if (rc) {
		libbpf_strerror(rc, err, sizeof(err));
		printf("FAIL  %s: load: %s (verifier log above)\n", path, err);
		goto out;
	}
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 info_len = sizeof(info);

		/* verified_insns: what the verifier walked, the budget that
		 * runs out first (1M); 0 where the kernel does not report it */
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &info_len))
			info.verified_insns = 0;
		printf("      %-32s %-16s %6zu insns %8u verified\n", bpf_program__name(prog),
		       libbpf_bpf_prog_type_str(bpf_program__type(prog)),
		       bpf_program__insn_cnt(prog), info.verified_insns);
		nprogs++;
	}
	bpf_object__for_each_map(map, obj)
		nmaps++;
	printf("OK    %s: %d programs, %d maps", path, nprogs, nmaps);
	for (int i = 0; i < nsets; i++)
		printf("%s%s=%llu", i ? " " : " (", sets[i].name, sets[i].value);
	printf("%s\n", nsets ? ")" : "");
out:
	bpf_object__close(obj);
	return rc;
}

int main(int argc, char **argv)
{
	int opt, failed = 0;

	while ((opt = getopt(argc, argv, "vls:h")) != -1) {
		switch (opt) {
		case 'v':
			verbose++;
			break;
		case 'l':
			list_only = 1;
			break;
		case 's':
			if (parse_set(optarg)) {
				fprintf(stderr, "%s: -s %s: want NAME=VALUE (at most %d)\n", argv[0],
					optarg, MAX_SETS);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	libbpf_set_print(print_libbpf);
	for (int i = optind; i < argc; i++)
		if (list_only ? list_globals(argv[i]) : load_one(argv[i]))
			failed++;
	if (list_only)
		return failed ? 1 : 0;
	printf("%d of %d objects loaded\n", argc - optind - failed, argc - optind);
	return failed ? 1 : 0;
}
