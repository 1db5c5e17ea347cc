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
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench/grpc_ab.sh: needs root (BPF, cgroups)" >&2; exit 1; }
A=${GRPC_AB_A-}
B=${GRPC_AB_B---egress off --grpc-reject close}
PAIRS=${GRPC_AB_PAIRS:-3}
export FIG7_SIZES=${FIG7_SIZES:-20} FIG7_RUNS=${FIG7_RUNS:-3}
case $FIG7_SIZES in *" "*) echo "bench/grpc_ab.sh: one size in FIG7_SIZES" >&2; exit 1 ;; esac

tmp=$(mktemp -d /tmp/rowgate-bench-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one_run LABEL ARGS: appends "ratio bpf_us" of the guarded admitted row
one_run() {
	local md=$tmp/run.md ratio bpf
	if ! FIG7_RG_ARGS="$2" bash "$ROOT/bench/fig7_grpc.sh" >"$md" 2>"$tmp/run.err"; then
		echo "bench/grpc_ab.sh: fig7_grpc.sh failed ($1):" >&2
		tail -n5 "$tmp/run.err" >&2
		exit 1
	fi
	# the ratios table's admitted calls/s column (bold), the figure's BPF column
	ratio=$(awk -F'|' -v s="$FIG7_SIZES" '$2 == " " s " " && NF == 10 && $8 ~ /\*\*/ { gsub(/[ *]/, "", $8); print $8 }' "$md")
	bpf=$(awk -F'|' -v s="$FIG7_SIZES" '$2 == " " s " " && $3 == " admitted through rowgate " { gsub(/ /, "", $8); print $8 }' "$md")
	[ -n "$ratio" ] && [ -n "$bpf" ] || { echo "bench/grpc_ab.sh: no admitted row in the figure ($1)" >&2; exit 1; }
	echo "$ratio $bpf" >>"$tmp/$1"
	echo "| $3 | $1 | $ratio | $bpf |"
}

echo "| pair | configuration | admitted calls/s, rowgate ÷ bare | BPF µs / admitted call |"
echo "|---|---|---|---|"
for ((p = 1; p <= PAIRS; p++)); do
	one_run A "$A" "$p"
	one_run B "$B" "$p"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "A = rowgated ${A:-(defaults)}: median $(cut -d' ' -f1 "$tmp/A" | median) (rowgate ÷ bare), BPF $(cut -d' ' -f2 "$tmp/A" | median) µs"
echo "B = rowgated ${B:-(defaults)}: median $(cut -d' ' -f1 "$tmp/B" | median) (rowgate ÷ bare), BPF $(cut -d' ' -f2 "$tmp/B" | median) µs"
echo "($PAIRS pairs, $FIG7_SIZES rows a call, FIG7_RUNS=$FIG7_RUNS rounds a run, $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
