// SPDX-License-Identifier: MIT
/* Line-protocol row counting: the SWAR word counter against the byte
 * reference, with the chunk boundary at every offset, and the rules on
 * hand-written bodies. */
#include <stdlib.h>
#include <string.h>
#include "rowgate/rows.h"
#include "check.h"
#include "rows_ref.h"

static void expect_rows(const char *body, uint64_t want)
{
	size_t len = strlen(body), cut;

	CHECK_EQ_U64(ref_count(body, len), want, body);
	for (cut = 0; cut <= len; cut++)
		CHECK_EQ_U64(swar_split(body, len, cut), want, body);
	CHECK_EQ_U64(masked_words(body, len), want, body);
}

static void test_rules(void)
{
	expect_rows("", 0);
	expect_rows("cpu v=1", 1);                       /* no trailing newline */
	expect_rows("cpu v=1\n", 1);
	expect_rows("cpu v=1\ncpu v=2\n", 2);
	expect_rows("cpu v=1\r\ncpu v=2\r\n", 2);        /* CRLF */
	expect_rows("cpu v=1\r\n\r\n\r\ncpu v=2", 2);    /* empty CRLF lines */
	expect_rows("\n\n\ncpu v=1\n\n", 1);             /* empty lines */
	expect_rows("# comment\ncpu v=1\n#x\n", 1);      /* comments */
	expect_rows("   \t \ncpu v=1\n", 1);             /* blank line */
	expect_rows("   cpu v=1\n\t\t  # c\n", 1);       /* leading blanks */
	expect_rows("a\nb\nc\nd\ne\nf\ng\nh\ni\nj", 10);
	expect_rows("         x\n          y\n", 2);      /* blank runs > 7 */
	expect_rows("cpu,host=a#b v=1\n", 1);            /* '#' inside a line */
}

static void test_random(void)
{
	static const char alphabet[] = "ab \t\r\n#\n\n  x";
	char buf[300];
	int iter;

	srandom(7);
	for (iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)random() % sizeof(buf), i, cut;
		uint64_t want;

		for (i = 0; i < len; i++)
			buf[i] = alphabet[random() % (sizeof(alphabet) - 1)];
		want = ref_count(buf, len);
		cut = len ? (size_t)random() % (len + 1) : 0;
		CHECK_EQ_U64(swar_split(buf, len, cut), want, "random body");
		CHECK_EQ_U64(masked_words(buf, len), want, "random body, masked words");
	}
	/* every boundary of one body with every kind of line */
	{
		const char *body = "  a\n#c\n\r\n\t\tb v=1\r\n\n   \n#\nlast";
		size_t len = strlen(body), cut;

		for (cut = 0; cut <= len; cut++)
			CHECK_EQ_U64(swar_split(body, len, cut), 3, "every boundary");
	}
}

static void test_mask(void)
{
	uint64_t x = rg_load_le64((const uint8_t *)"abcdefgh");
	uint64_t m = rg_lp_mask_word(x, 2, 5);

	CHECK(m == rg_load_le64((const uint8_t *)"  cde   "), "mask keeps [2,5)");
	CHECK(rg_lp_mask_word(x, 0, 8) == x, "full word unchanged");
	CHECK(rg_lp_mask_word(x, 8, 8) == rg_load_le64((const uint8_t *)"        "), "empty");
}

int main(void)
{
	test_rules();
	test_random();
	test_mask();
	return check_report("rows");
}
