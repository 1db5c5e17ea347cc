// SPDX-License-Identifier: GPL-2.0
/* rg_btf_layout_diff (user/lib/maps.c), the check that keeps a rowgated from
 * adopting pinned maps whose values another build lays out differently:
 * layouts built with libbpf's BTF writer, one change at a time.
 */
#include <errno.h>
#include <string.h>

#include <bpf/btf.h>

#include "../../user/lib/maps.h"
#include "check.h"

enum variant {
	BASE,
	PAD_TAKEN, /* pad0 renamed: a field taken from padding */
	TYPEDEF,   /* a member through a typedef of the same int */
	RENAMED,   /* a member renamed */
	SWAPPED,   /* two nested members swap places */
	ARRAY_LEN, /* an array one element shorter, padding keeps the size */
	WIDER,	   /* a member of another width at the same offset */
};

/* struct conn { u8 started; u8 pad0; u16 n; struct walk { u32 len; u32 off; } w;
 * u8 win[8]; } and its variants; the id of struct conn in *id. */
static struct btf *conn_btf(enum variant v, __u32 *id)
{
	struct btf *b = btf__new_empty();
	int u8, u16, u32, walk, win, len_t;

	u8 = btf__add_int(b, "unsigned char", 1, 0);
	u16 = btf__add_int(b, "unsigned short", 2, 0);
	u32 = btf__add_int(b, "unsigned int", 4, 0);
	len_t = v == TYPEDEF ? btf__add_typedef(b, "__u32", u32) : u32;
	walk = btf__add_struct(b, "walk", 8);
	btf__add_field(b, v == SWAPPED ? "off" : "len", len_t, 0, 0);
	btf__add_field(b, v == SWAPPED ? "len" : "off", u32, 32, 0);
	win = btf__add_array(b, u32, u8, v == ARRAY_LEN ? 7 : 8);
	*id = btf__add_struct(b, "conn", 20);
	btf__add_field(b, v == RENAMED ? "begun" : "started", u8, 0, 0);
	btf__add_field(b, v == PAD_TAKEN ? "verdict_build" : "pad0", u8, 8, 0);
	btf__add_field(b, "n", v == WIDER ? u32 : u16, 16, 0);
	btf__add_field(b, "w", walk, 32, 0);
	btf__add_field(b, "win", win, 96, 0);
	return b;
}

static void expect(enum variant v, const char *want, const char *what)
{
	__u32 ia, ib;
	struct btf *a = conn_btf(BASE, &ia), *b = conn_btf(v, &ib);
	char why[256];
	int err;

	CHECK(a && b && ia && ib, "%s: BTF built", what);
	err = rg_btf_layout_diff(a, ia, b, ib, why, sizeof(why));
	if (!want) {
		CHECK(err == 0, "%s: compatible, got %d (%s)", what, err, why);
	} else {
		CHECK(err == -EPROTO, "%s: refused, got %d", what, err);
		CHECK(strstr(why, want) != NULL, "%s: says '%s', got '%s'", what, want, why);
	}
	/* the check is symmetric: a rollback is the same comparison */
	err = rg_btf_layout_diff(b, ib, a, ia, why, sizeof(why));
	CHECK(want ? err == -EPROTO : err == 0, "%s, backwards: got %d (%s)", what, err, why);
	btf__free(a);
	btf__free(b);
}

int main(void)
{
	expect(BASE, NULL, "the same layout");
	expect(PAD_TAKEN, NULL, "a field taken from padding");
	expect(TYPEDEF, NULL, "a typedef of the same type");
	expect(RENAMED, "conn.", "a renamed member");
	expect(SWAPPED, "conn.w.", "nested members swapped");
	expect(ARRAY_LEN, "conn.win", "an array of another length");
	expect(WIDER, "conn.n", "a member of another width");
	return check_report("test_btf_layout");
}
