// SPDX-License-Identifier: MIT
/* Limit values (user/lib/limits.c): rg_parse_limit against a plain model (ASCII
 * digits only, not empty, at most 2^64-1, computed in 128 bits), and the
 * quoting of untrusted input for messages: always terminated, inside the
 * buffer, printable.
 *
 * Input: one byte for the quote buffer's size, then the string. */
#include <errno.h>
#include "../../user/lib/limits.h"
#include "fuzz.h"

static int model(const char *s, __u64 *out)
{
	unsigned __int128 v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > UINT64_MAX) {
			/* the rest must still be digits for ERANGE */
			for (; *s; s++)
				if (*s < '0' || *s > '9')
					return -EINVAL;
			return -ERANGE;
		}
	}
	*out = (__u64)v;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t qlen = fuzz_u8(&in) % 64;
	char *s = fuzz_str(in.p, in.n), err[200], *q;
	__u64 got = 0, want = 0;
	int r, m;
	size_t i;

	err[0] = 0;
	r = rg_parse_limit(s, &got, err, sizeof(err));
	m = model(s, &want);
	FUZZ_ASSERT(r == m, "'%s': parse %d, model %d (%s)", s, r, m, err);
	if (!r)
		FUZZ_ASSERT(got == want, "'%s': %llu, model %llu", s, (unsigned long long)got,
			    (unsigned long long)want);
	else
		FUZZ_ASSERT(err[0], "no reason");

	q = malloc(qlen ? qlen : 1);
	if (!q)
		abort();
	rg_quote_input(s, q, qlen);
	if (qlen) {
		size_t len = strnlen(q, qlen);

		FUZZ_ASSERT(len < qlen, "quote not terminated in %zu bytes", qlen);
		for (i = 0; i < len; i++)
			FUZZ_ASSERT(q[i] >= 0x20 && q[i] < 0x7f, "unprintable byte %#x",
				    (unsigned char)q[i]);
		if (strlen(s) + 4 <= qlen && !strpbrk(s, "\\"))
			for (i = 0; (uint8_t)s[i] >= 0x20 && (uint8_t)s[i] < 0x7f; i++)
				FUZZ_ASSERT(q[i] == s[i], "printable input changed");
	}
	free(q);
	free(s);
	return 0;
}
