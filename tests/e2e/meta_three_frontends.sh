#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Distributed mode, one database limited to L rows/s across three frontends
# (each a victoria-metrics guarded by its own rowgated --meta) with clients
# skewed 80/15/5 and offering 2 x L in all: the cluster-wide admitted rate
# (rowgate's counters, and the rows the three servers store) converges to L
# within 3 heartbeats and stays within 5 %; the skew is reversed and it
# reconverges.  Heartbeat 500 ms.
source "$(dirname "$0")/meta_lib.sh"
meta_require
meta_tools

L=300             # rows/s, the cluster limit
HB_MS=500         # heartbeat interval
PHASE_S=12        # seconds per skew
SETTLE_S=1.5      # 3 heartbeats
TOL_PCT=5
CHECK_WINDOW_S=2  # per-window check (1 s windows are logged too)
DB=metadb

meta_start_allocator a --state-file "$RG_TMP/meta-limits.json" \
	--heartbeat-interval "$HB_MS" --learning 1000
META_URL=$META_URL_a
meta_ctl limit set "$DB" "$L" >/dev/null || rg_fail "limit set at rowgate-meta"
for i in 1 2 3; do fe_start "$i" "$META_URL"; done

# a frontend that heartbeats with the wrong token is refused
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' \
	"$META_URL/v1/heartbeat" -d '{"node_id":"x"}')
rg_check "wrong token gets 401 ($code)" [ "$code" = 401 ]
out=$(fe_ctl 1 limit set "$DB" 5 2>&1)
rg_check "local limit set refused in meta mode ($out)" grep -q "rowgate-meta" <<<"$out"

ready() {
	[ "$(meta_health "$META_URL" learning)" = False ] || return 1
	for i in 1 2 3; do
		[ "$(rg_ctl_stat "$i" limit)" = "$L" ] || return 1
	done
}
rg_ctl_stat() {
	fe_ctl "$1" --json stats "$DB" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['$2'])"
}
rg_wait_for 15 ready || rg_fail "frontends did not receive the cluster limit"
rg_log "3 frontends enforce $DB = $L rows/s from rowgate-meta (heartbeat ${HB_MS} ms)"

meta_sampler_start "$DB" 0.25
sleep 0.5

# phase RATE1 RATE2 RATE3: paced load for PHASE_S seconds; sets T_START/T_END
phase() {
	local pids=() i r threads
	T_START=$(mono); W_START=$(date +%s.%N)
	for i in 1 2 3; do
		r=${!i}
		threads=$(( r >= 300 ? 4 : (r >= 80 ? 2 : 1) ))
		pace "$i" "$DB" "$r" "$PHASE_S" "$threads" 5
		pids+=("$PACE_PID")
	done
	wait "${pids[@]}"
	W_END=$(date +%s.%N)
	pace_span "$PHASE_S"
	T_START=$PACE_T0 T_END=$PACE_T1
}

check_phase() { # name t_start t_end w_start w_end
	local name=$1 ts=$2 te=$3 ws=$4 we=$5 bad=0 line start raw net lo hi first=1
	lo=$((L * (100 - TOL_PCT) / 100)); hi=$((L * (100 + TOL_PCT) / 100))
	rg_log "$name: cluster admitted rows/s per 1 s window (rowgate counters: raw / net of bucket level)"
	while read -r start raw net; do
		rg_log "  t=${start}s raw ${raw} net ${net} (from the load start)"
	done < <("$RG_PY" "$RG_TMP/windows.py" "$RG_TMP/samples" "$ts" "$te" 1.0)
	# every window from 3 heartbeats after the load start must be in the band
	# 2 s windows: 1 s ones swing +-10 % in pairs when the host is loaded
	# (sampler and pacer jitter), quiet hosts stay within 2 %
	rg_log "$name: ${CHECK_WINDOW_S}s windows from ${SETTLE_S}s (3 heartbeats) on:"
	while read -r start raw net; do
		rg_log "  t=$(awk -v s="$start" -v k="$SETTLE_S" 'BEGIN { print s + k }')s raw ${raw} net ${net}"
		awk -v v="$net" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v >= lo && v <= hi) }' || bad=$((bad + 1))
	done < <("$RG_PY" "$RG_TMP/windows.py" "$RG_TMP/samples" \
		"$(awk -v a="$ts" -v k="$SETTLE_S" 'BEGIN { print a + k }')" "$te" "$CHECK_WINDOW_S")
	rg_check "$name: every ${CHECK_WINDOW_S}s window after 3 heartbeats within ${TOL_PCT}% of $L (net)" [ "$bad" -eq 0 ]
	# steady state over the phase after settling, raw counters
	read -r raw < <("$RG_PY" "$RG_TMP/windows.py" "$RG_TMP/samples" \
		"$(awk -v a="$ts" -v k="$SETTLE_S" 'BEGIN { print a + k }')" "$te" \
		"$(awk -v a="$ts" -v b="$te" -v k="$SETTLE_S" 'BEGIN { print int(b - a - k) }')" | awk '{ print $2 }')
	rg_log "$name: steady raw admitted rate $raw rows/s"
	rg_check "$name: steady raw admitted rate ($raw) within ${TOL_PCT}% of $L" \
		awk -v v="$raw" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v >= lo && v <= hi) }'
	# what the servers stored, per second of row timestamp, whole seconds
	# from 2 s after the start (3 heartbeats, rounded up) to 1 s before the end
	local s0 s1 vm
	s0=$(awk -v w="$ws" 'BEGIN { print int(w) + 3 }'); s1=$(awk -v w="$we" 'BEGIN { print int(w) - 1 }')
	vm=$( (for i in 1 2 3; do vm_rows_per_second "$i"; done) |
		awk -v a="$s0" -v b="$s1" '$1 >= a && $1 < b { n[$1] += $2 } END { for (s in n) print s, n[s] }' | sort -n)
	rg_log "$name: rows stored by the three servers per second: $(echo $vm | tr '\n' ' ')"
	local vm_rate
	vm_rate=$(awk '{ t += $2; n++ } END { if (n) printf "%.1f", t / n; else print 0 }' <<<"$vm")
	rg_log "$name: stored rate over $((s1 - s0)) s: $vm_rate rows/s"
	rg_check "$name: stored rate ($vm_rate) within ${TOL_PCT}% of $L" \
		awk -v v="$vm_rate" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

rg_log "phase 1: offered 480 / 90 / 30 rows/s"
phase 480 90 30
P1=("$T_START" "$T_END" "$W_START" "$W_END")
meta_ctl stats "$DB" | sed 's/^/    /'
rg_log "phase 2 (skew reversed): offered 30 / 90 / 480 rows/s"
phase 30 90 480
P2=("$T_START" "$T_END" "$W_START" "$W_END")
meta_ctl stats "$DB" | sed 's/^/    /'
sleep 0.3
kill "$META_SAMPLER_PID" 2>/dev/null

check_phase "phase 1" "${P1[@]}"
check_phase "phase 2" "${P2[@]}"
for i in 1 2 3; do
	f=$(fe_ctl "$i" --json stats "$DB" | "$RG_PY" -c 'import json,sys; m=json.load(sys.stdin)["meta"]; print(m["heartbeats_ok"], m["heartbeats_failed"], m["lease_expiries"])')
	rg_log "fe$i agent: heartbeats ok/failed, lease expiries: $f"
done
rg_pass
