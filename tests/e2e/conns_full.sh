#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The connection table filled (--max-conns 4 with 4 idle keep-alive
# connections): with --conns-full=fail-open a fifth connection writes
# without a limit, counted and logged; with fail-closed (the default) none
# of its bytes reach the server and rowgated resets it (before: its write timed out),
# counted and logged, while the tracked connections are still served and
# limited.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
MAX=4
rg_setup --max-conns $MAX --conns-full fail-open
rg_ctl limit set full 100 >/dev/null || rg_fail "limit set"

# hold MAX tracked connections, then write 3 x 150 rows on one more; prints
# the statuses of the extra connection ('timeout' when nothing came back)
# and of a write on a tracked one
fill_and_write() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$MAX" "$1" <<'PY'
import socket, sys, time
from rgclient import Conn, lines
port, n, series = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = [Conn(port) for _ in range(n)]
time.sleep(0.2)  # sockops ran for all of them
extra = Conn(port, timeout=10)
t0 = time.monotonic()
out = []
for i in range(3):
    try:
        out.append(str(extra.request("/write?db=full", lines(150, series=series, tag="i=%d" % i)).status))
    except socket.timeout:
        out.append("timeout")
        break
    except ConnectionError:  # reset, or closed
        out.append("reset")
        break
print("extra connection done after %.1f s" % (time.monotonic() - t0), file=sys.stderr)
time.sleep(1.1)  # a full bucket for a tracked connection
out.append(str(held[0].request("/write?db=full", lines(150, series=series + "_held")).status))
out.append(str(held[0].request("/write?db=full", lines(150, series=series + "_held")).status))
print(" ".join(out))
PY
}

extra() { echo "$1" | awk '{ NF -= 2; print }'; }
tracked() { echo "$1" | awk '{ print $(NF - 1), $NF }'; }
got=$(fill_and_write rg_open)
rg_log "fail-open: extra connection got [$(extra "$got")], tracked one [$(tracked "$got")]"
rg_check "fail-open: the untracked connection writes without a limit" [ "$(extra "$got")" = "204 204 204" ]
rg_check "fail-open: a tracked connection is still limited" [ "$(tracked "$got")" = "204 429" ]
untracked=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["conns_untracked"])')
rg_check "fail-open: conns_untracked counted ($untracked)" [ "$untracked" -ge 1 ]
rg_check "fail-open: logged" rg_wait_for 5 grep -q "passed UNLIMITED" "$RG_TMP/rowgated.log"
rg_ctl status | grep -q "when full: fail-open" || rg_fail "status does not show the policy"

# fail-closed is the default
rg_stop_rowgated
rg_start_rowgated --max-conns $MAX
rg_ctl status | grep -q "when full: fail-closed" || rg_fail "fail-closed is not the default"
sleep 1.1
got=$(fill_and_write rg_closed 2>"$RG_TMP/extra.err")
rg_log "fail-closed: extra connection got [$(extra "$got")] ($(cat "$RG_TMP/extra.err")), tracked one [$(tracked "$got")]"
rg_check "fail-closed: the untracked connection was reset, its write never answered" [ "$(extra "$got")" = "reset" ]
resets=$(rg_global conns_refused_resets)
rg_check "fail-closed: rowgated reset it (conns_refused_resets $resets)" [ "$resets" -ge 1 ]
rg_check "fail-closed: a tracked connection is still served and limited" [ "$(tracked "$got")" = "204 429" ]
stored=$(rg_vm_rows '{__name__="rg_closed_v"}')
rg_check "fail-closed: nothing of it was stored ($stored rows)" [ "$stored" -eq 0 ]
rg_ctl --json status >"$RG_TMP/status.json"; rc=$?
rg_check "fail-closed: status enforcing with its filter attached" [ "$rc" -eq 0 ]
read -r refused segs < <("$RG_PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["connections"]; print(c["refused_total"], c["refused_segments_total"])' "$RG_TMP/status.json")
rg_check "fail-closed: refused connections ($refused) and dropped segments ($segs) counted" [ "$refused" -ge 1 -a "$segs" -ge 1 ]
rg_check "fail-closed: logged" rg_wait_for 5 grep -q "refused since the last report" "$RG_TMP/rowgated.log"
rg_stop_rowgated
"$RG_ROWGATED" --foreground --port "$RG_PORT" --cgroup "$RG_CGROUP" --bpffs "$RG_BPFFS" \
	--admin-socket "$RG_SOCK" --state-file "$RG_STATE" --max-conns 8 >"$RG_TMP/resize.log" 2>&1 &&
	rg_fail "a start with another --max-conns over the pinned table succeeded"
rg_log "$(cat "$RG_TMP/resize.log")"
rg_check "a different --max-conns is refused clearly" grep -q "not --max-conns 8" "$RG_TMP/resize.log"
rg_check "... and enforcement stayed on" rg_ctl status

# A connection neither sockops nor adoption saw (in the accept queue of a
# stopped server when rowgated first attaches: no fd to adopt it by) gets
# no data through under fail-closed; the sweep at attach resets it, where
# before its writes were dropped until its client gave up.
rg_ctl detach >/dev/null || rg_fail "detach"
kill -STOP "$VM_PID"
rg_on_exit "kill -CONT $VM_PID"
resets0=$(rg_global conns_refused_resets 2>/dev/null || echo 0)
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_TMP/attached" >"$RG_TMP/backlog.out" 2>&1 <<'PY' &
import os, socket, sys, time
from rgclient import Conn, lines
c = Conn(int(sys.argv[1]), timeout=10)
print("connected", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
try:
    out = str(c.request("/write?db=full", lines(10, series="rg_backlog")).status)
except socket.timeout:
    out = "timeout"
except ConnectionError:
    out = "reset"
print(out, flush=True)
PY
py_pid=$!
rg_on_exit "kill $py_pid"
rg_wait_for 5 grep -q connected "$RG_TMP/backlog.out" || rg_fail "no connection: $(cat "$RG_TMP/backlog.out")"
rg_start_rowgated --max-conns $MAX
rg_check "the sweep found the connection in the accept queue" \
	rg_wait_for 10 grep -q "not in the connection table" "$RG_TMP/rowgated.log"
kill -CONT "$VM_PID"
touch "$RG_TMP/attached"
wait "$py_pid"
rg_log "accept-queue connection: [$(tail -n 1 "$RG_TMP/backlog.out")], conns_refused_resets $(rg_global conns_refused_resets)"
rg_check "it was reset, not left hanging" [ "$(tail -n 1 "$RG_TMP/backlog.out")" = reset ]
rg_check "nothing of it stored" [ "$(rg_vm_rows '{__name__="rg_backlog_v"}')" -eq 0 ]
rg_pass
