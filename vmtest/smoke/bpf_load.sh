#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every BPF object rowgate builds (build/bpf/*.bpf.o) passes the verifier on
# this kernel.  On failure bpf_load prints libbpf's verifier log.
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${BUILD:-build}
shopt -s nullglob
objs=("$build"/bpf/*.bpf.o)
if [ ${#objs[@]} -eq 0 ]; then
	echo "skip: no BPF objects in $build/bpf yet"
	exit 77
fi
if [ ! -x "$build/vmtest/bpf_load" ]; then
	echo "skip: $build/vmtest/bpf_load not built (make vmtest-bins)"
	exit 77
fi
exec "$build/vmtest/bpf_load" "${objs[@]}"
