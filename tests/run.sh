#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run every rowgate test and end with "N passed, N failed, N skipped".
#
# A test is a native unit binary (build/tests/unit/test_*), or an executable
# script tests/{bpf,e2e,fuzz}/*.sh.  Exit 0 = pass, 77 = skipped (the test prints
# why), anything else = fail.  A skip is a failure too: it means the machine
# lacks something the suite needs (make test installs it:
# tools/install-deps.sh test), and a run that
# skipped has not tested what it says.  ALLOW_SKIP=1 counts skips as skipped
# and passes the run without them.  TESTS=glob limits the run; V=1 shows output.
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
filter=${TESTS:-*}
per_test_timeout=${TEST_TIMEOUT:-900}
allow_skip=${ALLOW_SKIP:-0}
logdir=$build/test-logs
mkdir -p "$logdir"

pass=0 fail=0 skip=0 skip_failed=0
failed=()

run_one() {
	local name=$1; shift
	local log="$logdir/${name//\//_}.log" rc start end
	# shellcheck disable=SC2053
	[[ $name == $filter ]] || return 0
	start=$EPOCHREALTIME
	if [ "${V:-0}" = 1 ]; then
		timeout -k 10 "$per_test_timeout" "$@" 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
	else
		timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1
		rc=$?
	fi
	end=$EPOCHREALTIME
	local secs
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS     %-40s %6ss\n' "$name" "$secs" ;;
	77) if [ "$allow_skip" = 1 ]; then
		skip=$((skip + 1))
		printf 'SKIPPED  %-40s %s\n' "$name" "$(grep -m1 -i 'skip' "$log" | cut -c1-100)"
	    else
		fail=$((fail + 1)) skip_failed=$((skip_failed + 1)); failed+=("$name")
		printf 'FAIL     %-40s %6ss (skipped: %s)\n' "$name" "$secs" \
			"$(grep -m1 -i 'skip' "$log" | cut -c1-100)"
	    fi ;;
	*) fail=$((fail + 1)); failed+=("$name")
	   printf 'FAIL     %-40s %6ss (exit %d, log %s)\n' "$name" "$secs" "$rc" "$log"
	   tail -n 25 "$log" | sed 's/^/    | /' ;;
	esac
}

for bin in "$build"/tests/unit/test_*; do
	[ -x "$bin" ] || continue
	run_one "unit/${bin##*/}" "$bin"
done
for dir in bpf e2e fuzz; do
	for script in tests/$dir/*.sh; do
		[ -x "$script" ] || continue
		base=${script##*/}
		run_one "$dir/${base%.sh}" "$script"
	done
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
if [ "$skip_failed" -gt 0 ]; then
	echo "$skip_failed of them skipped: what they need is missing (make test" \
		"installs it, tools/install-deps.sh test, and builds it); ALLOW_SKIP=1 reports them as skipped"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
