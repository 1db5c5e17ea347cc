/* SPDX-License-Identifier: GPL-2.0 */
/* Line-protocol row counts by the byte-wise model (rg_lp_step) and by the
 * word counter as the BPF program runs it (whole words, bytes past the end
 * masked), under the comment rule in rows_ref_rule: what test_rows and the
 * fuzzer hold rg_lp_count against. */
#ifndef ROWGATE_TEST_ROWS_REF_H
#define ROWGATE_TEST_ROWS_REF_H

#include <stdint.h>
#include <string.h>
#include "rowgate/rows.h"

/* The comment rule (enum rg_lp_comment_rule) every model below runs under. */
static int rows_ref_rule = RG_LP_COMMENT_AFTER_BLANKS;

static inline uint64_t ref_count(const char *buf, size_t len)
{
	struct rg_lp_state s;
	uint64_t rows = 0;
	size_t i;

	rg_lp_init_rule(&s, (uint8_t)rows_ref_rule);
	for (i = 0; i < len; i++)
		rows += rg_lp_step(&s, (uint8_t)buf[i]);
	return rows;
}

/* The word counter over buf split at `cut`, as two streamed chunks. */
static inline uint64_t swar_split(const char *buf, size_t len, size_t cut)
{
	struct rg_lp_state s;
	uint64_t rows;

	rg_lp_init_rule(&s, (uint8_t)rows_ref_rule);
	rows = rg_lp_count(&s, (const uint8_t *)buf, cut);
	rows += rg_lp_count(&s, (const uint8_t *)buf + cut, len - cut);
	return rows;
}

/* As the BPF program does: whole words with bytes outside [from, to) masked. */
static inline uint64_t masked_words(const char *buf, size_t len)
{
	struct rg_lp_state s;
	uint64_t rows = 0;
	size_t w;

	rg_lp_init_rule(&s, (uint8_t)rows_ref_rule);
	for (w = 0; w * 8 < len; w++) {
		uint8_t word[8] = { 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x' };
		size_t n = len - w * 8 < 8 ? len - w * 8 : 8;

		memcpy(word, buf + w * 8, n);
		rows += rg_lp_count_word(&s, rg_lp_mask_word(rg_load_le64(word), 0, (uint32_t)n));
	}
	return rows;
}

#endif
