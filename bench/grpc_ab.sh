#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Two rowgated configurations against each other on figure 7's admitted
# gRPC calls: runs bench/fig7_grpc.sh with GRPC_AB_A, then GRPC_AB_B, in
# turn, GRPC_AB_PAIRS times, so host drift falls on both alike.  Each run
# measures bare and guarded calls in its own interleaved rounds; this
# prints each run's "admitted calls/s, rowgate / bare" and BPF time per
# admitted call, then the median per configuration.
#
#   bash bench/grpc_ab.sh      egress on (the default) against
#                              "--egress off --grpc-reject close", 20 rows
#   GRPC_AB_A="" GRPC_AB_B="--grpc-max-streams off" bash bench/grpc_ab.sh
#
# Knobs: GRPC_AB_PAIRS (3), FIG7_SIZES (20; one size), FIG7_RUNS (3).
source "$(dirname "$0")/lib.sh"
bl_require
A=${GRPC_AB_A-}
B=${GRPC_AB_B---egress off --grpc-reject close}
PAIRS=${GRPC_AB_PAIRS:-3}
export FIG7_SIZES=${FIG7_SIZES:-20} FIG7_RUNS=${FIG7_RUNS:-3}
case $FIG7_SIZES in *" "*) bl_die "one size in FIG7_SIZES" ;; esac

# one_run LABEL ARGS PAIR: one figure 7 run; appends its admitted ratio
# and BPF time to BL_TMP/LABEL, computed from its raw rounds as the
# figure computes them
one_run() {
	local raw=$BL_TMP/raw ba ga bpf ratio
	rm -rf "$raw" && mkdir "$raw"
	FIG7_RG_ARGS="$2" BENCH_RAW=$raw bash "$BL_ROOT/bench/fig7_grpc.sh" >/dev/null 2>"$BL_TMP/$1.$3.log" ||
		{ tail -n5 "$BL_TMP/$1.$3.log" >&2; bl_die "fig7_grpc.sh failed ($1, pair $3)"; }
	read -r ba _ < <(bl_agg "$raw/fig7.admit.$FIG7_SIZES" "calls/seconds")
	read -r ga bpf _ < <(bl_agg "$raw/fig7.rgadm.$FIG7_SIZES" "calls/seconds" "bpf_ns/calls/1000")
	ratio=$(bl_ratio "$ga" "$ba")
	bpf=$(bl_fmt "$bpf" .1f)
	echo "ratio=$ratio bpf=$bpf" >>"$BL_TMP/$1"
	echo "| $3 | $1 | $ratio | $bpf |"
}

echo "| pair | configuration | admitted calls/s, rowgate ÷ bare | BPF µs / admitted call |"
echo "|---|---|---|---|"
for ((p = 1; p <= PAIRS; p++)); do
	one_run A "$A" "$p"
	one_run B "$B" "$p"
done
echo
for c in A B; do
	[ $c = A ] && args=$A || args=$B
	read -r ratio bpf _ < <(bl_agg "$BL_TMP/$c" ratio bpf)
	echo "$c = rowgated ${args:-(defaults)}: median $(bl_fmt "$ratio" .2f) (rowgate ÷ bare), BPF $(bl_fmt "$bpf" .1f) µs"
done
echo "($PAIRS pairs, $FIG7_SIZES rows a call, FIG7_RUNS=$FIG7_RUNS rounds a run, $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$BL_ROOT" rev-parse --short HEAD 2>/dev/null))"
