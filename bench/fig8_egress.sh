#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 8: what following the server's responses (the sk_msg program
# rg_egress, docs/design.md#egress) costs.  Rounds interleave rowgated with
# --egress off and on over the same victoria-metrics (wrk opens new
# connections each run, so each run's connections have exactly the
# programs of that rowgated); medians.  Admitted writes (204) and GET
# /health (200 with a body), and the egress program's own run time from
# bpf_stats.
source "$(dirname "$0")/lib.sh"
RUNS=${FIG8_RUNS:-3}
LINES=${FIG8_LINES:-20}
HIGH=1000000000000 # rows/s: never binds
bl_setup
bl_bpf_stats_on
bl_warmup 2

egress_stats() {
	bpftool -j prog show pinned "$BL_BPFFS/prog_egress" 2>/dev/null |
		"$BL_PY" -c 'import json,sys; p=json.load(sys.stdin); print(p.get("run_time_ns",0), p.get("run_cnt",0))' ||
		echo "0 0"
}

raw=$BL_TMP/fig8
CPU_PIDS=$VM_PID
CASES=(
	"admit|POST /write?db=bench, $LINES lines (admitted, 204)|path=/write?db=bench lines=$LINES"
	"get|GET /health (200, body \"OK\")|path=/health method=GET"
)
for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for mode in off on; do
		bl_rowgated_start --egress "$mode"
		bl_ctl limit set bench "$HIGH" >/dev/null
		for c in "${CASES[@]}"; do
			IFS='|' read -r key _ args <<<"$c"
			read -r t0 n0 < <(egress_stats)
			# shellcheck disable=SC2086
			bl_wrk "$raw.$key.$mode.wrk" -- $args
			read -r t1 n1 < <(egress_stats)
			tail -n1 "$raw.$key.$mode.wrk" | tr -d '\n' >>"$raw.$key.$mode"
			echo " egress_ns=$((t1 - t0)) egress_calls=$((n1 - n0))" >>"$raw.$key.$mode"
		done
		bl_rowgated_stop
	done
done
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

rows() {
	local c key what args rps_off rps_on cpu_off cpu_on p99_off p99_on ns calls bad
	for c in "${CASES[@]}"; do
		IFS='|' read -r key what args <<<"$c"
		read -r rps_off p99_off cpu_off < <(bl_agg "$raw.$key.off" rps p99_us \
			"bench_ticks/HZ/requests*1e6")
		read -r rps_on p99_on cpu_on ns calls bad < <(bl_agg "$raw.$key.on" rps p99_us \
			"bench_ticks/HZ/requests*1e6" "egress_ns/max(egress_calls,1)" \
			"egress_calls/requests" "non2xx + errors")
		printf '| %s | %s | %s | **%s** | %s | %s | %s | %s | %s | %s |\n' "$what" \
			"$(bl_fmt "$rps_off" .0f)" "$(bl_fmt "$rps_on" .0f)" \
			"$(bl_ratio "$rps_on" "$rps_off")" "$(bl_fmt "$p99_off" .0f)" \
			"$(bl_fmt "$p99_on" .0f)" "$(bl_fmt "$cpu_off" .1f)" "$(bl_fmt "$cpu_on" .1f)" \
			"$(bl_fmt "$ns" .0f)" "$(bl_fmt "$calls" .2f)"
		[ "$bad" = 0 ] || bl_log "WARNING: $key had non-2xx or socket errors (median $bad)"
	done
}

cat <<EOF
## 8. Following the server's responses: cost of the sk_msg program

victoria-metrics, keep-alive; \`wrk -t$BENCH_THREADS -c$BENCH_CONNS
-d$BENCH_SECONDS\`, $RUNS interleaved rounds of rowgated \`--egress off\` then
\`--egress on\`, medians.  With egress on, every send of the server runs
\`rg_egress\` (tcp_bpf's transmit path replaces plain tcp_sendmsg for the
guarded sockets).  CPU per request as in figure 1; egress ns per call from
\`bpf_stats\` (which adds two clock reads a call).

| request | req/s off | req/s on | on ÷ off | p99 µs off | p99 µs on | CPU µs/req off | CPU µs/req on | egress ns per call | calls per request |
|---|---|---|---|---|---|---|---|---|---|
$(rows)

EOF
