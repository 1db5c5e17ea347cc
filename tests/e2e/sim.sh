#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The allocator's goals at small scale, in the deterministic simulator:
# 20 frontends x 50 databases, each spread 80/15/5 over 3 frontends.
#   waterfill: steady state within 5 % of the target (mean, p1, p99 over
#     databases), every demand shift settled within 3 heartbeats;
#   "limit / N" measurably worse: mean admitted below 90 % of the target.
set -u
cd "$(dirname "$0")/../.."
sim=${BUILD:-build}/bench/sim
if [ ! -x "$sim" ]; then
	echo "SKIP: $sim not built (make)"
	exit 77
fi
out=$("$sim" -f 20 -d 50 -w 80,15,5 -t 60 --tsv -s waterfill -s even) || {
	echo "FAIL: sim exited $?"
	exit 1
}
echo "$out"
echo "$out" | awk -F'\t' '
	function check(cond, what) {
		printf "%s %s\n", cond ? "ok  " : "FAIL", what
		if (!cond)
			bad = 1
	}
	$1 == "waterfill" {
		seen_w = 1
		check($2 >= 0.95 && $2 <= 1.05, "waterfill mean admitted/target " $2 " within 5 %")
		check($3 >= 0.95 && $4 <= 1.05, "waterfill p1 " $3 " and p99 " $4 " within 5 %")
		check($7 == 100.0 && $8 == 0, "waterfill: " $7 " % of shifts settled within 3 heartbeats, " $8 " unsettled")
		w_mean = $2
	}
	$1 == "even" {
		seen_e = 1
		check($2 < 0.90, "limit / N mean admitted/target " $2 " < 0.90 under 80/15/5 skew")
		e_mean = $2
	}
	END {
		check(seen_w && seen_e, "both strategies reported")
		check(w_mean - e_mean > 0.10, "waterfill beats limit / N by > 10 points")
		exit bad
	}'
