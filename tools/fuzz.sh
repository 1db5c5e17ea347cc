#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make fuzz: run each libFuzzer target (or those named) for FUZZ_SECONDS,
# one at a time on one core, starting from its corpus in the repo; inputs
# that add coverage are merged back into tests/fuzz/corpus/NAME (commit
# them), and any crash is kept in build/fuzz/artifacts/ and fails the run.
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
seconds=${FUZZ_SECONDS:-60}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for src in tests/fuzz/fuzz_*.c; do
		n=${src##*/fuzz_}
		names+=("${n%.c}")
	done
fi
mkdir -p "$build/fuzz/artifacts" "$build/fuzz/logs"
failed=()
TIMEFORMAT='%U %S'
for name in "${names[@]}"; do
	bin=$build/fuzz/fuzz_$name
	corpus=tests/fuzz/corpus/$name
	work=$build/fuzz/work/$name
	log=$build/fuzz/logs/$name.log
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin is missing (is clang's fuzzer runtime, libclang-rt-14-dev, installed?)" >&2
		exit 1
	fi
	dict=()
	[ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
	mkdir -p "$corpus" "$work"
	cpu=$({ time "$bin" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 "${dict[@]}" \
		-artifact_prefix="$build/fuzz/artifacts/$name-" "$work" "$corpus" \
		>"$log" 2>&1; } 2>&1)
	rc=$?
	"$bin" -merge=1 "$corpus" "$work" >>"$log" 2>&1
	runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1)
	read -r user sys <<<"$cpu"
	printf '%-12s %10s runs  %-10s corpus %4d files  cpu %6.1fs  %s\n' "$name" "${runs:-?}" \
		"${cov:-cov: ?}" "$(find "$corpus" -type f | wc -l)" \
		"$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
		"$([ $rc -eq 0 ] && echo ok || echo "FAILED (log $log)")"
	[ $rc -eq 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: findings in ${failed[*]}: see build/fuzz/artifacts/" >&2
	exit 1
fi
