#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (f) kill -9 of rowgated under load: no admitted request is lost or
# corrupted, enforcement continues from the pins, and a restarted rowgated
# adopts them (same maps, debt intact).
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_cmd bpftool
rg_setup
rg_ctl limit set crash 300 >/dev/null || rg_fail "limit set"

map_id() { bpftool -j map show pinned "$RG_BPFFS/$1" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
pinned_stat() { # FIELD of db "crash" in the pinned db_stats map
	bpftool -j map dump pinned "$RG_BPFFS/db_stats" | "$RG_PY" -c "import json,sys
for e in json.load(sys.stdin):
    if e['formatted']['key']['name'] == 'crash': print(e['formatted']['value']['$1'])"
}
pinned_debt() {
	bpftool -j map dump pinned "$RG_BPFFS/buckets" | "$RG_PY" -c "import json,sys
for e in json.load(sys.stdin):
    if e['formatted']['key']['name'] == 'crash': print(e['formatted']['value']['b']['debt_rows'])"
}
buckets_id=$(map_id buckets)

"$RG_PY" "$RG_CLIENT" load --port "$RG_PORT" --db crash --seconds 6 --threads 4 \
	--max-rows 30 --series rg_crash >"$RG_TMP/load.json" &
load_pid=$!
rg_on_exit "kill $load_pid"
rg_wait_for 10 sh -c "[ \"\$(bpftool -j map dump pinned '$RG_BPFFS/db_stats' | grep -c rejected_requests)\" -gt 0 ]"
sleep 1
kill -9 "$RG_PID"
wait "$RG_PID" 2>/dev/null
RG_PID=""
rg_log "rowgated killed with SIGKILL under load"
r1=$(pinned_stat rejected_requests)
# Enforcement without the daemon, whatever the load client is doing by now:
# 1,000 rows against a 300 rows/s bucket either are rejected or leave debt,
# and then the next write must be rejected.
seq 1000 | awk '{ printf "rg_probe v=%d\n", $1 }' >"$RG_TMP/probe.lp"
probe() { curl -s -o /dev/null -w '%{http_code}' --data-binary @"$RG_TMP/probe.lp" \
	"http://127.0.0.1:$RG_PORT/write?db=crash"; }
code=$(probe)
[ "$code" = 429 ] || code=$(probe)
[ "$code" = 429 ] || rg_fail "no rejection after the daemon died (HTTP $code): enforcement stopped"
r2=$(pinned_stat rejected_requests)
[ "$r2" -gt "$r1" ] || rg_fail "a 429 without the rejection counted ($r1 -> $r2)"
rg_log "enforcement continues without the daemon (rejected_requests $r1 -> $r2)"

# a large batch makes a debt that outlives the restart; prints the rows
# admitted (3,000, or 0 if no token came)
big=$(PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY'
import sys, time
from rgclient import Conn, lines
deadline = time.time() + 5
admitted = 0
while time.time() < deadline:  # wait for a token, then write 3,000 rows
    c = Conn(int(sys.argv[1]))
    r = c.request("/write?db=crash", lines(3000, series="rg_crash", tag="req=bigdebt"))
    c.close()
    if r.status == 204:
        admitted = 3000
        break
print(admitted)
PY
) || rg_fail "the large batch's client failed"
debt_before=$(pinned_debt)
rg_start_rowgated
debt_after=$(pinned_debt)
rg_log "debt before restart $debt_before, after $debt_after"
rg_check "restarted rowgated reuses the pinned buckets map" [ "$(map_id buckets)" = "$buckets_id" ]
rg_check "debt survives the restart (>= 1000 rows still owed)" [ "$debt_after" -ge 1000 ]
rg_check "debt only went down by refills" [ "$debt_after" -le "$debt_before" ]
rg_check "admin socket answers again" rg_ctl stats crash
wait "$load_pid" || rg_fail "load client failed"
read -r adm errors < <("$RG_PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["admitted_rows"], len(s["errors"]))' "$RG_TMP/load.json")
rg_check "no client saw an error or a broken response ($errors)" [ "$errors" -eq 0 ]
stored_big=$(rg_vm_rows_wait '{__name__="rg_crash_v",req="bigdebt"}' "$big")
rg_check "the large batch stored as admitted ($stored_big == $big)" [ "$stored_big" -eq "$big" ]
want=$((adm + big))
stored=$(rg_vm_rows_wait '{__name__="rg_crash_v"}' "$want")
rg_check "every admitted row stored, nothing else ($stored == $adm + $big)" [ "$stored" -eq "$want" ]
rg_pass
