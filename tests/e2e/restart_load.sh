#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Restarts keep enforcing: rowgated stopped 20 times (8 in vmtest) under load from
# keep-alive clients (SIGTERM and kill -9 alternating) and started again.
# The rows admitted never exceed what the bucket allows, over the run and
# over every window between samples taken around each stop and start; every
# admitted row is stored, no connection breaks and the kernel rejects writes
# while the daemon is down.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
LIMIT=400 THREADS=8 MAXROWS=40 RESTARTS=20 DOWN_WAIT_S=3
# TCG: a start costs ~20 s of verifier time, so fewer of them; and the old
# wait of 2 (whole) seconds, 1-2 s, with each look at the pinned counters
# (bpftool, python) slow in the guest, saw a rejection in only 9 of 20
# stops once (6.1): 5 s keeps "the kernel rejects while the daemon is down"
# a fact of the limiter, not of the emulator's speed.  (A lower limit is no
# way out: clients rejected for seconds meet the server's header timeout,
# which this test does not race.)
[ "${VMTEST:-0}" != 1 ] || RESTARTS=8 DOWN_WAIT_S=5
rg_ctl limit set rst $LIMIT >/dev/null || rg_fail "limit set"

pinned_rejected() { # from the pins: the daemon may be down
	bpftool -j map dump pinned "$RG_BPFFS/db_stats" | "$RG_PY" -c "import json,sys
for e in json.load(sys.stdin):
    if e['formatted']['key']['name'] == 'rst': print(e['formatted']['value']['rejected_requests'])"
}
rejected_above() { [ "$(pinned_rejected)" -gt "$1" ]; }
# (time, admitted rows) from the pins, daemon up or down
sample() {
	printf '%s %s\n' "$(date +%s.%N)" "$(bpftool -j map dump pinned "$RG_BPFFS/db_stats" | "$RG_PY" -c "import json,sys
for e in json.load(sys.stdin):
    if e['formatted']['key']['name'] == 'rst': print(e['formatted']['value']['admitted_rows'])")" >>"$RG_TMP/samples"
}
rg_require_cmd bpftool

rg_start_load rst 300 "$THREADS" "$MAXROWS"
rg_wait_for 10 rejected_above 0 || rg_fail "no rejections under load"
down_rejections=0
for i in $(seq 1 $RESTARTS); do
	if [ $((i % 2)) -eq 0 ]; then sig=KILL; else sig=TERM; fi
	sample
	kill -$sig "$RG_PID"
	wait "$RG_PID" 2>/dev/null
	RG_PID=""
	before=$(pinned_rejected)
	# the daemon is down: the kernel alone decides
	if rg_wait_for $DOWN_WAIT_S rejected_above "$before"; then
		down_rejections=$((down_rejections + 1))
	fi
	rg_start_rowgated
	sample
done
rg_log "$RESTARTS restarts done; rejections seen while the daemon was down in $down_rejections of them"
rg_finish_load "$LIMIT"
adm_rows=$ADM_ROWS
rg_check "the kernel rejected writes while the daemon was down ($down_rejections/$RESTARTS)" [ "$down_rejections" -ge $((RESTARTS / 2)) ]
# every window between two samples (around each stop and start): what the
# kernel admitted fits the refill over the window plus one bucket and a batch
worst=$("$RG_PY" - "$RG_TMP/samples" $LIMIT $MAXROWS <<'PY'
import sys
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
limit, maxrows = int(sys.argv[2]), int(sys.argv[3])
worst = 0.0  # largest share of the allowance used by any window
for i in range(len(pts)):
    for j in range(i + 1, len(pts)):
        (t0, a0), (t1, a1) = pts[i], pts[j]
        allow = limit * (t1 - t0) + limit + maxrows
        worst = max(worst, (a1 - a0) / allow)
print("%.3f %d" % (worst, len(pts)))
PY
)
rg_log "windows between $(echo "$worst" | cut -d' ' -f2) samples: the fullest used $(echo "$worst" | cut -d' ' -f1) of its allowance"
rg_check "no window between samples exceeded the bucket's allowance" "$RG_PY" -c "import sys; sys.exit(0 if float('${worst%% *}') <= 1.0 else 1)"
stored=$(rg_vm_rows_wait '{__name__="rg_rst_v"}' "$adm_rows")
rg_check "stored rows ($stored) == admitted rows ($adm_rows)" [ "$stored" -eq "$adm_rows" ]
k_rows=$(rg_stat rst admitted_rows)
rg_check "rowgate's admitted_rows ($k_rows) == the client's ($adm_rows)" [ "$k_rows" -eq "$adm_rows" ]
rg_pass
