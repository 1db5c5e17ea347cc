#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The XDP program under BPF_PROG_TEST_RUN (tests/bpf/test_xdp.c): fixtures
# for every edge case, admit-then-drop, exact row counts, the shared bucket.
# Exit code is the binary's: 0 pass, 77 skipped (not root), else fail.
cd "$(dirname "$0")/../.." || exit 1
bin=${BUILD:-build}/tests/bpf/test_xdp
if [ ! -x "$bin" ]; then
	echo "FAIL: $bin is missing (run make)"
	exit 1
fi
exec "$bin"
