#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guest gives tests what vmtest/README.md promises: mounts, BTF, loopback,
# network namespaces, module autoload and the tools.  Outside vmtest it skips.
set -u
if [ "${VMTEST:-0}" != 1 ]; then
	echo "skip: only meaningful inside vmtest's guest"
	exit 77
fi
fails=0
check() {
	local what=$1; shift
	if "$@" >/tmp/env-check.out 2>&1; then
		echo "ok    $what"
	else
		echo "FAIL  $what: $*"; sed 's/^/      /' /tmp/env-check.out
		fails=$((fails + 1))
	fi
}
fstype() { [ "$(stat -f -c %T "$1")" = "$2" ]; }
check "bpffs on /sys/fs/bpf"         fstype /sys/fs/bpf bpf_fs
check "cgroup2 on /sys/fs/cgroup"    fstype /sys/fs/cgroup cgroup2fs
check "tmpfs on /tmp"                fstype /tmp tmpfs
check "BTF at /sys/kernel/btf/vmlinux" test -s /sys/kernel/btf/vmlinux
check "loopback up"                  sh -c 'ip -o link show lo | grep -q "UP"'
check "127.0.0.1 answers"            sh -c 'ip -o addr show lo | grep -q "127.0.0.1"'
check "bpftool reads the kernel"     bpftool -j feature probe kernel
check "curl runs"                    curl --version
check "victoria-metrics runs"        victoria-metrics -version
check "/dev/fd for process substitution" bash -c 'cat <(echo x) >/dev/null'
check "network namespace + bpffs remount" sh -c \
	'ip netns add vmtest-env && ip netns exec vmtest-env ip link set lo up && ip netns del vmtest-env'
check "veth pair (module autoload)"  sh -c \
	'ip link add vmt0 type veth peer name vmt1 && ip link del vmt0'
# interpreters vmtest added because a selected test uses them
while read -r interp; do
	[ -n "$interp" ] && check "$interp runs" "$interp" -c 'import json, socket, subprocess, http.client'
done </vmtest/needs
[ "$fails" -eq 0 ]
