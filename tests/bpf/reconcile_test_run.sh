#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rg_reconcile under BPF_PROG_TEST_RUN (tests/bpf/test_reconcile.c): every
# correction rowgated can send, the bucket against the shared model.
# Exit code is the binary's: 0 pass, 77 skipped (not root), else fail.
cd "$(dirname "$0")/../.." || exit 1
bin=${BUILD:-build}/tests/bpf/test_reconcile
if [ ! -x "$bin" ]; then
	echo "FAIL: $bin is missing (run make)"
	exit 1
fi
exec "$bin"
