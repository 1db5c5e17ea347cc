/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal assertions for the native unit tests: count, print, keep going. */
#ifndef ROWGATE_TEST_CHECK_H
#define ROWGATE_TEST_CHECK_H

#include <stdio.h>
#include <inttypes.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		check_count++;                                            \
		if (!(cond)) {                                            \
			check_failures++;                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ",       \
				__FILE__, __LINE__, #cond);               \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
		}                                                         \
	} while (0)

#define CHECK_EQ_U64(a, b, what)                                             \
	CHECK((uint64_t)(a) == (uint64_t)(b), "%s: got %" PRIu64 ", want %" PRIu64, \
	      what, (uint64_t)(a), (uint64_t)(b))

static inline int check_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
