/* SPDX-License-Identifier: GPL-2.0 */
/* What every libFuzzer target shares: an assertion that stops the run (a
 * failed property is a finding, like a crash), and a reader that takes
 * parameters off the front of the input. */
#ifndef ROWGATE_FUZZ_H
#define ROWGATE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rowgate/abi.h>

#define FUZZ_ASSERT(cond, ...)                                                                 \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: FUZZ_ASSERT(%s) failed: ", __FILE__, __LINE__, \
				#cond);                                                        \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
			abort();                                                               \
		}                                                                              \
	} while (0)

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | fuzz_u8(in);
	return v;
}

/* The rest of the input as a malloc'ed NUL-terminated string (cut at its
 * first NUL), so reading one byte past it is an ASan report. */
static inline char *fuzz_str(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

/*
 * A key a database name can give: 1..63 bytes of [A-Za-z0-9_.:-], zero
 * padded.  Not necessarily what rg_parse_db_name gives for its own text:
 * "greptime-greptime-x" names the schema "greptime-x", whose key starts
 * with the catalog prefix that parsing "greptime-x" again would drop
 * (rg_format_db_name writes the text that reads back).
 */
static inline int fuzz_key_ok(const struct rg_db_key *k)
{
	size_t n = strnlen(k->name, sizeof(k->name)), i;

	if (n == 0 || n >= sizeof(k->name))
		return 0;
	for (i = 0; i < n; i++) {
		char c = k->name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '-'))
			return 0;
	}
	for (; i < sizeof(k->name); i++)
		if (k->name[i])
			return 0;
	return 1;
}

#endif
