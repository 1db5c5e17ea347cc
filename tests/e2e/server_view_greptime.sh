#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# server_view against GreptimeDB's reading: every case's raw bytes go
# through rowgate (profile greptimedb) to rg-greptime, a server on hyper's
# HTTP/1 with GreptimeDB's routes, database resolution and line-protocol
# rules (tests/greptime, docs/server-profiles.md#greptimedb-server), while
# database `t` is deep in debt; the rows it stored per database must equal
# what rowgate charged, unless rowgate refused the request and nothing was
# stored.  Hand-written cases per class (path, method, query, header,
# catalog, version, coding, body), generated combinations, and the framing
# cases split in two at every byte offset; server_view.py compares.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
GT_BIN=$RG_BUILD/greptime/rg-greptime
[ -x "$GT_BIN" ] || rg_skip "$GT_BIN is not built (make needs cargo and Debian's librust-hyper-dev: tools/install-deps.sh)"
"$GT_BIN" --help >/dev/null 2>&1 || rg_skip "$GT_BIN does not run here"
rg_mount_bpffs
rg_make_cgroup
RG_PORT=$(rg_free_port) || rg_fail "no free port"
(
	echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
	exec "$GT_BIN" --port "$RG_PORT" --databases public,t,free
) >"$RG_TMP/greptime.log" 2>&1 &
GT_PID=$!
rg_on_exit "kill -9 $GT_PID; wait $GT_PID"
rg_wait_for 20 curl -sf "http://127.0.0.1:$RG_PORT/health" || rg_fail "rg-greptime did not come up"
rg_start_rowgated
rg_view_limits "http://127.0.0.1:$RG_PORT/v1/influxdb/write?db=t"
stored=$(curl -sf "http://127.0.0.1:$RG_PORT/stats" |
	"$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["rows"]["t"]["seed_debt"])')
rg_check "rg-greptime stored the seed batch ($stored rows)" [ "$stored" = 20000 ]

# every split offset costs ~20 ms here; under TCG emulation (vmtest) about
# ten times that, so the guest sends every 23rd (a VM runs every test in
# one VMTEST_TIMEOUT)
stride=$([ "${VMTEST:-0}" = 1 ] && echo 23 || echo 1)
if "$RG_PY" "$RG_ROOT/tests/e2e/server_view.py" --server greptimedb --port "$RG_PORT" \
	--ctl "$RG_ROWGATECTL" --socket "$RG_SOCK" --generated "${RG_VIEW_GENERATED:-60}" \
	--splits --split-stride "${RG_VIEW_SPLIT_STRIDE:-$stride}" >"$RG_TMP/view.out" 2>&1; then
	grep -v '^ok:  .*@[0-9]' "$RG_TMP/view.out"
	rg_log "greptimedb: $(tail -n 1 "$RG_TMP/view.out")"
else
	grep -v '^ok:  .*@[0-9]' "$RG_TMP/view.out"
	rg_fail "rowgate and GreptimeDB's reading differ on some requests"
fi
rg_pass
