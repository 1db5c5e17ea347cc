// SPDX-License-Identifier: MIT
/* The limits state file (user/lib/state.c): any file content loads as a valid,
 * sorted list of normalized names or is refused whole with a reason; a
 * loaded list saves and loads back to itself.
 *
 * Input: the file's bytes. */
#include <sys/mman.h>
#include <unistd.h>
#include "../../user/lib/limits.h"
#include "../../user/lib/state.h"
#include "fuzz.h"

static char saved_dir[64], saved_path[96];

static void remove_saved(void)
{
	unlink(saved_path);
	rmdir(saved_dir);
}

static void check_list(const struct rg_limit_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++) {
		const struct rg_db_key *db = &l->entries[i].db;

		FUZZ_ASSERT(fuzz_key_ok(db), "entry %zu is not a key", i);
		if (i)
			FUZZ_ASSERT(strcmp(l->entries[i - 1].db.name, db->name) < 0,
				    "entries %zu and %zu out of order or equal", i - 1, i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rg_limit_list list, back;
	char path[64], err[512] = "";
	int fd = memfd_create("state", MFD_CLOEXEC), r;

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rg_limit_list_init(&list);
	r = rg_state_load(path, &list, err, sizeof(err));
	close(fd);
	if (r) {
		FUZZ_ASSERT(r < 0 && err[0] && memchr(err, 0, sizeof(err)), "%d without a reason",
			    r);
		FUZZ_ASSERT(list.count == 0, "half a file kept: %zu entries", list.count);
		rg_limit_list_free(&list);
		return 0;
	}
	check_list(&list);
	if (!saved_dir[0]) {
		snprintf(saved_dir, sizeof(saved_dir), "/dev/shm/rg-fuzz-state-XXXXXX");
		if (!mkdtemp(saved_dir))
			abort();
		snprintf(saved_path, sizeof(saved_path), "%s/limits.json", saved_dir);
		atexit(remove_saved);
	}
	FUZZ_ASSERT(rg_state_save(saved_path, &list, err, sizeof(err)) == 0, "save: %s", err);
	rg_limit_list_init(&back);
	FUZZ_ASSERT(rg_state_load(saved_path, &back, err, sizeof(err)) == 0, "reload: %s", err);
	FUZZ_ASSERT(back.count == list.count &&
			    (!list.count || memcmp(back.entries, list.entries,
						   list.count * sizeof(list.entries[0])) == 0),
		    "%zu entries back of %zu", back.count, list.count);
	rg_limit_list_free(&back);
	rg_limit_list_free(&list);
	return 0;
}
