#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgated guarding a slice (systemd's system.slice layout: the server runs in
# a child cgroup, slice/vm.service) limits the server by port, and a restart
# of the service that removes and recreates its cgroup needs no re-attach:
# the slice's programs apply to the new child at once.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
root=$(rg_cgroup2_root)
[ -n "$root" ] || rg_skip "no cgroup v2 hierarchy mounted"
SLICE="$root/rowgate-test-$$.slice"
SERVICE="$SLICE/vm.service"
mkdir "$SLICE" || rg_fail "cannot create $SLICE"
rg_on_exit "rmdir '$SLICE'"
mkdir "$SERVICE" || rg_fail "cannot create $SERVICE"
rg_on_exit "rmdir '$SERVICE'"
RG_PORT=$(rg_free_port) || rg_fail "no free port"
rg_mount_bpffs
rg_start_vm_in "$SERVICE"
RG_CGROUP=$SLICE
rg_start_rowgated
rg_ctl limit set slc 100 >/dev/null || rg_fail "limit set"

limited() { # the second 150-row write at 100 rows/s is refused
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY'
import sys
from rgclient import Conn, lines
c = Conn(int(sys.argv[1]))
codes = [c.request("/write?db=slc", lines(150, series="rg_slc")).status for _ in range(2)]
sys.exit(0 if codes == [204, 429] else 1)
PY
}
rg_check "status: enforcing on the slice" rg_ctl status
rg_check "a server in a child cgroup of the slice is limited" limited

rg_stop_vm
rmdir "$SERVICE" || rg_fail "cannot remove $SERVICE"
mkdir "$SERVICE" || rg_fail "cannot recreate $SERVICE"
rg_start_vm_in "$SERVICE"
sleep 1.1 # a full bucket again
rg_check "after the service's cgroup was recreated it is still limited" limited
rg_check "status: still enforcing" rg_ctl status
rg_check "nothing had to be re-attached" sh -c "! grep -q 're-attach' '$RG_TMP/rowgated.log'"
rg_pass
