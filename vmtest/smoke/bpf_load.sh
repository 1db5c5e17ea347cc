#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every BPF object rowgate builds (build/bpf/*.bpf.o) passes the verifier on
# this kernel, and rowgate.bpf.o does in every configuration rowgated can
# load it with (user/rowgated/load.c sets its const volatile globals): the
# verifier walks a different program for each, and one the defaults never
# show can be refused (6.18 refused --grpc-compressed debt with keep-alive:
# over 1M instructions).  On failure bpf_load prints the verifier log.
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${BUILD:-build}
load=$build/vmtest/bpf_load
shopt -s nullglob
objs=("$build"/bpf/*.bpf.o)
if [ ${#objs[@]} -eq 0 ]; then
	echo "skip: no BPF objects in $build/bpf yet"
	exit 77
fi
if [ ! -x "$load" ]; then
	echo "skip: $load not built (make vmtest-bins)"
	exit 77
fi
rc=0
"$load" "${objs[@]}" || rc=1

obj=$build/bpf/rowgate.bpf.o
[ -f "$obj" ] || exit $rc
# The globals varied below, and rg_build_id, which only tags the build.  A
# new one fails here until it is varied too.
known=" rg_egress_on rg_h2_keep rg_h2_max_streams rg_h2_compressed_debt rg_conns_full_close rg_adopt_grace_ns rg_build_id "
globals=$("$load" -l "$obj") || exit 1
for g in $globals; do
	case $known in
	*" $g "*) ;;
	*)
		echo "FAIL  $obj: const volatile $g is not varied by $0"
		rc=1
		;;
	esac
done
# rg_h2_keep needs egress; rg_h2_max_streams is 0 without keep, and 0
# (unlimited) or a limit (rowgated's default, 16) with it.  rg_adopt_grace_ns
# goes with rg_conns_full_close: 5 s (the default) with fail-closed (the
# default), 0 (off) with fail-open.
configs=0 failed=0
for egress in 0 1; do
	for keep in 0 1; do
		[ $egress = 0 ] && [ $keep = 1 ] && continue
		streams_list=0
		[ $keep = 1 ] && streams_list="16 0"
		for streams in $streams_list; do
			for debt in 0 1; do
				for full_close in 0 1; do
					configs=$((configs + 1))
					"$load" -s rg_egress_on=$egress -s rg_h2_keep=$keep \
						-s rg_h2_max_streams=$streams -s rg_h2_compressed_debt=$debt \
						-s rg_conns_full_close=$full_close \
						-s rg_adopt_grace_ns=$((full_close * 5000000000)) "$obj" ||
						failed=$((failed + 1))
				done
			done
		done
	done
done
echo "$((configs - failed)) of $configs rowgated configurations of $obj loaded"
[ $failed = 0 ] || rc=1
exit $rc
