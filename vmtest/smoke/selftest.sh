#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# vmtest's own BPF object (vmtest/smoke/selftest.bpf.c) loads on this kernel:
# proves the VM, libbpf, BTF and CO-RE path before bpf/ has objects.
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${BUILD:-build}
obj=$build/vmtest/smoke/selftest.bpf.o
if [ ! -x "$build/vmtest/bpf_load" ] || [ ! -f "$obj" ]; then
	echo "skip: $build/vmtest/bpf_load or $obj not built (make vmtest-bins)"
	exit 77
fi
exec "$build/vmtest/bpf_load" "$obj"
