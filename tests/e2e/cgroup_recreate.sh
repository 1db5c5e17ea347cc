#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guarded cgroup removed and recreated while rowgated runs, as systemd
# does when it restarts a service: rowgatectl status and rowgate_enforcing
# report the gap (exit 1, gauge 0), rowgated re-attaches as soon as the
# directory is back, and the restarted server's new connections are limited
# again.  Programs detached by hand are put back.  Then 'rowgatectl detach':
# status exits 1 with the reason.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
rg_mount_bpffs
rg_start_vm
MPORT=$(rg_free_port) || rg_fail "no free port"
rg_start_rowgated --metrics "127.0.0.1:$MPORT"
rg_ctl limit set cgr 100 >/dev/null || rg_fail "limit set"

status_rc() { rg_ctl status >"$RG_TMP/status.txt" 2>&1; echo $?; }
gauge() { curl -sf "http://127.0.0.1:$MPORT/metrics" | awk -v p="rowgate_enforcing{port=\"$RG_PORT\"}" '$1 == p { print $2 }'; }
# a 150-row write when the bucket allows 100/s: the second one is refused
limited() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY'
import sys
from rgclient import Conn, lines
c = Conn(int(sys.argv[1]))
codes = [c.request("/write?db=cgr", lines(150, series="rg_cgr")).status for _ in range(2)]
sys.exit(0 if codes[-1] == 429 else 1)
PY
}

rg_check "status exits 0 while enforcing" [ "$(status_rc)" -eq 0 ]
rg_check "rowgate_enforcing is 1" [ "$(gauge)" = 1 ]
rg_check "writes are limited" limited
rg_ctl --json status >"$RG_TMP/status.json"
rg_check "status --json: sockops, getpeername and verdict attached" "$RG_PY" -c '
import json,sys; s=json.load(open(sys.argv[1])); p=s["programs"]
sys.exit(0 if s["enforcing"] and all(p[k] for k in ("sockops","getpeername4","getpeername6","verdict")) and s["daemon"] else 1)' "$RG_TMP/status.json"

# systemd restarting the service: the server stops, its cgroup goes
rg_stop_vm
rmdir "$RG_CGROUP" || rg_fail "cannot remove the cgroup"
rg_wait_for 5 sh -c "! '$RG_ROWGATECTL' --bpffs '$RG_BPFFS' --socket '$RG_SOCK' status >/dev/null" ||
	rg_fail "status still says enforcing with the cgroup gone"
rg_log "gap reported: $(rg_ctl status | head -1)"
rg_check "rowgate_enforcing is 0 during the gap" [ "$(gauge)" = 0 ]
rg_check "rowgated logged the gap" grep -q "is gone" "$RG_TMP/rowgated.log"

# ... and creates it again, then starts the server in it
t0=$(date +%s%N)
mkdir "$RG_CGROUP" || rg_fail "cannot recreate the cgroup"
rg_wait_for 5 grep -q "re-attached to cgroup" "$RG_TMP/rowgated.log" ||
	rg_fail "rowgated did not re-attach"
t1=$(date +%s%N)
rg_log "re-attached $(( (t1 - t0) / 1000000 )) ms after the cgroup reappeared"
rg_start_vm_in "$RG_CGROUP"
rg_check "status exits 0 again" [ "$(status_rc)" -eq 0 ]
rg_check "rowgate_enforcing is 1 again" [ "$(gauge)" = 1 ]
sleep 1.1 # a full bucket for the next check
rg_check "the restarted server's new connections are limited" limited

# attachments removed by hand come back too
if command -v bpftool >/dev/null; then
	bpftool link detach pinned "$RG_BPFFS/link_sockops" || rg_fail "bpftool link detach"
	bpftool prog detach pinned "$RG_BPFFS/prog_verdict" skb_verdict pinned "$RG_BPFFS/sockhash" ||
		rg_fail "bpftool prog detach"
	rg_check "rowgated put the verdict back" rg_wait_for 5 grep -q "verdict program was detached" "$RG_TMP/rowgated.log"
	rg_check "... and re-attached the sockops link" rg_wait_for 5 sh -c "[ \$(grep -c 're-attached to cgroup' '$RG_TMP/rowgated.log') -ge 2 ]"
	rg_check "status exits 0 after the repair" rg_wait_for 5 rg_ctl status
fi

rg_ctl detach >/dev/null || rg_fail "detach"
rc=$(status_rc)
rg_log "after detach: $(head -1 "$RG_TMP/status.txt")"
rg_check "status exits 1 after rowgatectl detach" [ "$rc" -eq 1 ]
rg_check "rowgate_enforcing is 0 after detach" [ "$(gauge)" = 0 ]
sleep 1.1
rg_check "after detach writes are not limited" sh -c "! PYTHONPATH='$RG_ROOT/tests/e2e' '$RG_PY' -c 'import sys
from rgclient import Conn, lines
c = Conn($RG_PORT)
codes = [c.request(\"/write?db=cgr\", lines(150, series=\"rg_cgr\")).status for _ in range(3)]
sys.exit(0 if 429 in codes else 1)'"
rg_pass
