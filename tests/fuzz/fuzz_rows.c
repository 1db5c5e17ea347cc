// SPDX-License-Identifier: MIT
/* The line-protocol row counter (rowgate/rows.h): the word-at-a-time
 * counter, whole, streamed in two pieces split anywhere, and as the BPF
 * program runs it (masked whole words), against the byte-wise model.
 *
 * Input: two bytes choosing the split, then the body. */
#include "fuzz.h"
#include "rows_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t cut = (size_t)fuzz_u8(&in) << 8;
	const char *body;
	struct rg_lp_state s;
	uint64_t want, got;

	cut |= fuzz_u8(&in);
	body = (const char *)in.p;
	cut = in.n ? cut % (in.n + 1) : 0;
	want = ref_count(body, in.n);
	FUZZ_ASSERT(want <= in.n, "%llu rows in %zu bytes", (unsigned long long)want, in.n);
	rg_lp_init(&s);
	got = rg_lp_count(&s, in.p, in.n);
	FUZZ_ASSERT(got == want, "whole: %llu rows, model %llu", (unsigned long long)got,
		    (unsigned long long)want);
	got = swar_split(body, in.n, cut);
	FUZZ_ASSERT(got == want, "split at %zu: %llu rows, model %llu", cut,
		    (unsigned long long)got, (unsigned long long)want);
	got = masked_words(body, in.n);
	FUZZ_ASSERT(got == want, "masked words: %llu rows, model %llu", (unsigned long long)got,
		    (unsigned long long)want);
	return 0;
}
