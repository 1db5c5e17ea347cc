// SPDX-License-Identifier: GPL-2.0
/* Replays bucket operations through include/rowgate/bucket.h, the code the
 * kernel runs, so that end-to-end tests compare the kernel's bucket with the
 * model.  One command per line on stdin:
 *
 *   state TOKENS DEBT FRAC_NROWS QUOTA LAST_NS   set the bucket
 *   charge ROWS | refund ROWS | refill NOW_NS
 *   quota NOW_NS Q                                rg_bucket_set_quota
 *   admit NOW_NS ROWS                             prints "1" or "0"
 *   print                                         prints the state line
 *
 * Exit status 2 on a malformed line.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rowgate/bucket.h"

int main(void)
{
	struct rg_bucket b = {};
	char line[256], cmd[16];
	unsigned long long a1, a2, a3, a4, a5;
	unsigned int lineno = 0;

	while (fgets(line, sizeof(line), stdin)) {
		int n;

		lineno++;
		n = sscanf(line, "%15s %llu %llu %llu %llu %llu", cmd, &a1, &a2, &a3, &a4, &a5);
		if (n < 1)
			continue;
		if (!strcmp(cmd, "state") && n == 6) {
			b.tokens = a1;
			b.debt_rows = a2;
			b.frac_nrows = a3;
			b.quota = a4;
			b.last_ns = a5;
		} else if (!strcmp(cmd, "charge") && n == 2) {
			rg_bucket_charge(&b, a1);
		} else if (!strcmp(cmd, "refund") && n == 2) {
			rg_bucket_refund(&b, a1);
		} else if (!strcmp(cmd, "refill") && n == 2) {
			rg_bucket_refill(&b, a1);
		} else if (!strcmp(cmd, "quota") && n == 3) {
			rg_bucket_set_quota(&b, a1, a2);
		} else if (!strcmp(cmd, "admit") && n == 3) {
			printf("%d\n", rg_bucket_admit(&b, a1, a2) ? 1 : 0);
		} else if (!strcmp(cmd, "print") && n == 1) {
			printf("%llu %llu %llu %llu %llu\n", (unsigned long long)b.tokens,
			       (unsigned long long)b.debt_rows, (unsigned long long)b.frac_nrows,
			       (unsigned long long)b.quota, (unsigned long long)b.last_ns);
		} else {
			fprintf(stderr, "bucket_replay: line %u: cannot parse: %s", lineno, line);
			return 2;
		}
	}
	return 0;
}
