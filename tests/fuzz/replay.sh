#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make test: every fuzz target runs every input of its corpus once (the
# regression inputs of past findings are among them), under ASan/UBSan.
set -u
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
fail=0
for src in tests/fuzz/fuzz_*.c; do
	name=${src##*/fuzz_}
	name=${name%.c}
	bin=$build/fuzz/fuzz_$name
	if [ ! -x "$bin" ]; then
		if [ -z "$(find "$(clang --print-runtime-dir 2>/dev/null || echo /nonexistent)" \
			-name 'libclang_rt.fuzzer-x86_64.a' 2>/dev/null)" ]; then
			echo "skipped: clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev)"
			exit 77
		fi
		echo "FAIL $name: $bin was not built"
		fail=1
		continue
	fi
	files=(tests/fuzz/corpus/"$name"/*)
	if [ ! -f "${files[0]}" ]; then
		echo "FAIL $name: no corpus in tests/fuzz/corpus/$name"
		fail=1
		continue
	fi
	if "$bin" -timeout=25 "${files[@]}" >"$build/fuzz/replay-$name.log" 2>&1; then
		echo "ok   $name: ${#files[@]} inputs"
	else
		echo "FAIL $name: log $build/fuzz/replay-$name.log"
		grep -E 'FUZZ_ASSERT|ERROR|runtime error|Running: ' "$build/fuzz/replay-$name.log" |
			tail -n 5
		fail=1
	fi
done
exit $fail
