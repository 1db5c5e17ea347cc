// SPDX-License-Identifier: GPL-2.0
// bpf_load: open and load BPF objects on the running kernel, the "does our
// BPF load here" check vmtest runs on every kernel in vmtest/kernels.
//
// Usage: bpf_load [-v] OBJ.bpf.o...
// Loads every program and map of each object (nothing is attached or
// pinned), prints one line per program with its type and instruction count,
// and on failure the verifier log libbpf retrieves.  Exit 0 when every object
// loaded, 1 when one failed, 2 on a usage error.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int verbose;

// libbpf prints the verifier log at LIBBPF_WARN when a program fails to
// load; keep warnings, show debug chatter only with -v.
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
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
	printf("OK    %s: %d programs, %d maps\n", path, nprogs, nmaps);
out:
	bpf_object__close(obj);
	return rc;
}

int main(int argc, char **argv)
{
	int opt, failed = 0;

	while ((opt = getopt(argc, argv, "vh")) != -1) {
		switch (opt) {
		case 'v':
			verbose++;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] OBJ.bpf.o...\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-v] OBJ.bpf.o...\n", argv[0]);
		return 2;
	}
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	libbpf_set_print(print_libbpf);
	for (int i = optind; i < argc; i++)
		if (load_one(argv[i]))
			failed++;
	printf("%d of %d objects loaded\n", argc - optind - failed, argc - optind);
	return failed ? 1 : 0;
}
