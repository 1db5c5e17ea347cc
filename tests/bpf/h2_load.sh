#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The HTTP/2 + gRPC parser (include/rowgate/h2/) inside an sk_skb verdict
# fed from bpf_loop (tests/bpf/h2_load.bpf.c) passes this kernel's verifier:
# the check that the shared parser stays BPF-compatible (vmtest runs it on
# 6.1).  Needs root to load BPF; skips otherwise.
cd "$(dirname "$0")/../.." || exit 1
build=${BUILD:-build}
obj=$build/tests/bpf/h2_load.bpf.o
loader=$build/vmtest/bpf_load
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: needs root to load BPF programs"
	exit 77
fi
for f in "$obj" "$loader"; do
	if [ ! -e "$f" ]; then
		echo "FAIL: $f is missing (run make)"
		exit 1
	fi
done
exec "$loader" "$obj"
