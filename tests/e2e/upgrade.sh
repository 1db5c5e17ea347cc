#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Upgrade in place under load: rowgated built from another BPF object
# (tests/v2, build id 2) takes over from a running one, and back, six times
# (four in vmtest; SIGTERM and kill -9 mixed).  The pinned cgroup links are updated in place
# (same link, new program: no moment without a program); the sockhash runs
# the fixed entry (the same program tag in both builds), which jumps to the
# verdict in the pinned verdict_slot, so the keep-alive connections opened
# before the first swap run each new build's verdict from their next
# segment (each connection's verdict_build says which ran last; status
# shows the slot's build) and the slot stays filled while no rowgated runs.
# No write is lost, none is admitted beyond the bucket, no connection
# breaks.  An emptied slot passes segments (counted), status names it, and
# rowgated fills it again.  A rowgated whose map layout differs from the
# pins refuses and attaches nothing; rowgatectl detach removes the slot's
# pin, rowgated --cleanup everything else.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_cmd bpftool
V1=$RG_ROWGATED
V2=$RG_BUILD/tests/v2/rowgated
[ -x "$V2" ] || rg_fail "build first: $V2 is missing"
rg_setup
LIMIT=400 THREADS=6 MAXROWS=40 SWAPS=6
# TCG: each start costs ~35 s; four swaps still cover both builds both ways
# and a kill -9 (the third)
[ "${VMTEST:-0}" != 1 ] || SWAPS=4
rg_ctl limit set upg $LIMIT >/dev/null || rg_fail "limit set"

jq_field() { "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
link_id() { bpftool -j link show pinned "$RG_BPFFS/link_sockops" | jq_field id; }
link_prog() { bpftool -j link show pinned "$RG_BPFFS/link_sockops" | jq_field prog_id; }
build_id() { # rg_build_id in the .rodata of the program the sockops link runs
	local m
	for m in $(bpftool -j prog show id "$(link_prog)" | "$RG_PY" -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin).get("map_ids", []))))'); do
		bpftool map dump id "$m" 2>/dev/null | grep -o '"rg_build_id": *[0-9]*' | grep -o '[0-9]*$' && return
	done
}
# "cookie build" of each tracked connection: the build whose verdict ran last
conn_builds() {
	bpftool -j map dump pinned "$RG_BPFFS/conns" | "$RG_PY" -c '
import json,sys
for e in json.load(sys.stdin):
	f = e["formatted"]
	print(f["key"], f["value"]["verdict_build"])'
}
# every connection opened before the first swap now runs build $1
old_conns_run() {
	local now
	now=$(conn_builds) || return 1
	for c in $cookies; do
		grep -qx "$c $1" <<<"$now" || return 1
	done
}
slot_prog() { # the program id in a slot (verdict_slot by default), empty when none
	bpftool -j map dump pinned "$RG_BPFFS/${1:-verdict_slot}" | "$RG_PY" -c '
import json,sys
for e in json.load(sys.stdin):
	v = e.get("formatted", e)["value"]
	print(v if isinstance(v, int) else int.from_bytes(bytes(int(b, 16) for b in v), "little"))'
}
entry_tag() { bpftool -j prog show pinned "$RG_BPFFS/${1:-prog_verdict}" | jq_field tag; }
link0=$(link_id)
tag0=$(entry_tag)
etag0=$(entry_tag prog_egress)
prog_before=$(link_prog)
rg_check "v1 runs build 1" [ "$(build_id)" = 1 ]

# the load runs until the swaps are done (six swaps took 136 s under TCG)
rg_start_load upg 900 "$THREADS" "$MAXROWS"
load_pid=$LOAD_PID
conns_open() { [ "$(conn_builds | grep -c ' 1$')" -eq $THREADS ]; }
rg_wait_for 30 conns_open || rg_fail "the $THREADS load connections are not all tracked: $(conn_builds)"
cookies=$(conn_builds | cut -d' ' -f1)
slot_before=$(slot_prog)
eslot_before=$(slot_prog egress_slot)
rg_log "connections opened under build 1: $(echo $cookies); verdict slot runs program $slot_before"
for i in $(seq 1 $SWAPS); do
	if [ $((i % 2)) -eq 1 ]; then bin=$V2 want=2; else bin=$V1 want=1; fi
	if [ $((i % 3)) -eq 0 ]; then kill -9 "$RG_PID"; else kill -TERM "$RG_PID"; fi
	wait "$RG_PID" 2>/dev/null
	RG_PID=""
	[ "$(slot_prog)" = "$slot_before" ] || rg_fail "the verdict slot did not outlive rowgated"
	RG_ROWGATED=$bin rg_start_rowgated
	prog=$(link_prog)
	slot=$(slot_prog)
	rg_log "swap $i: build $(build_id) (want $want), sockops link $(link_id), program $prog_before -> $prog, verdict slot $slot_before -> $slot"
	[ "$(link_id)" = "$link0" ] || rg_fail "the sockops link was re-created, not updated in place"
	[ "$prog" != "$prog_before" ] || rg_fail "the program was not replaced"
	[ "$(build_id)" = "$want" ] || rg_fail "the link does not run build $want"
	[ -n "$slot" ] && [ "$slot" != "$slot_before" ] || rg_fail "the verdict slot was not refilled"
	[ "$(entry_tag)" = "$tag0" ] || rg_fail "build $want's entry differs from build 1's (tag $(entry_tag), not $tag0)"
	# the server's side the same way: a fixed sk_msg entry, its slot refilled
	eslot=$(slot_prog egress_slot)
	[ -n "$eslot" ] && [ "$eslot" != "$eslot_before" ] || rg_fail "the egress slot was not refilled"
	[ "$(entry_tag prog_egress)" = "$etag0" ] || rg_fail "build $want's egress entry differs from build 1's"
	eslot_before=$eslot
	kill -0 "$load_pid" 2>/dev/null || rg_fail "the load ended before swap $i was checked"
	rg_wait_for 30 old_conns_run $want ||
		rg_fail "connections opened under build 1 do not run build $want: $(conn_builds)"
	slot_before=$slot
	rg_ctl status >"$RG_TMP/status.txt" || rg_fail "not enforcing after swap $i"
	grep -q "^verdict slot: program $slot, build $want$" "$RG_TMP/status.txt" ||
		rg_fail "status does not show build $want in the slot: $(cat "$RG_TMP/status.txt")"
	prog_before=$prog
	sleep 0.5
	kill -0 "$load_pid" 2>/dev/null || rg_fail "the load ended before swap $i was done"
done
rg_finish_load "$LIMIT"
adm_rows=$ADM_ROWS
stored=$(rg_vm_rows_wait '{__name__="rg_upg_v"}' "$adm_rows")
rg_check "stored rows ($stored) == admitted rows ($adm_rows)" [ "$stored" -eq "$adm_rows" ]
missing=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["verdict_missing"])')
rg_check "no segment met an empty verdict slot ($missing)" [ "$missing" -eq 0 ]
emissing=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["egress_missing"])')
rg_check "no server send met an empty egress slot ($emissing)" [ "$emissing" -eq 0 ]
lost=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["egress_lost"])')
rg_check "egress followed every answer across the swaps (egress_lost $lost)" [ "$lost" -eq 0 ]

# an emptied slot (by hand, rowgated stopped): segments pass, counted, and
# status says so; rowgated puts its verdict back when it runs again
missing_now() { bpftool -j map dump pinned "$RG_BPFFS/verdict_stats" | "$RG_PY" -c '
import json,sys; print(json.load(sys.stdin)[0]["formatted"]["value"]["verdict_missing"])'; }
slot_filled() { [ -n "$(slot_prog)" ]; }
kill -STOP "$RG_PID"
rg_on_exit "kill -CONT $RG_PID"
bpftool map delete pinned "$RG_BPFFS/verdict_slot" key 0 0 0 0 || rg_fail "bpftool map delete"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'rg_upg_gap v=1' "http://127.0.0.1:$RG_PORT/write?db=upg")
rg_check "with the slot empty a write passes ($code)" [ "$code" = 204 ]
rg_check "... counted in verdict_missing ($(missing_now))" [ "$(missing_now)" -ge 1 ]
rg_ctl status >"$RG_TMP/status.txt"
rc=$?
rg_log "$(head -1 "$RG_TMP/status.txt")"
rg_check "status exits 1 ($rc)" [ $rc -eq 1 ]
rg_check "... and names the empty slot" grep -q "verdict slot is empty" "$RG_TMP/status.txt"
kill -CONT "$RG_PID"
rg_check "rowgated refills the slot" rg_wait_for 20 slot_filled
rg_check "status exits 0 again" rg_wait_for 20 rg_ctl status

# pins from an incompatible layout: refused before anything is attached
other="$RG_BPFFS_MNT/abi"
mkdir -p "$other"
rg_on_exit "rm -rf '$other'"
bpftool map create "$other/conns" type hash key 8 value 16 entries 16 name conns flags 1 ||
	rg_fail "bpftool map create"
"$V1" --foreground --port "$RG_PORT" --cgroup "$RG_CGROUP" --bpffs "$other" \
	--admin-socket "$RG_TMP/abi.sock" --state-file "$RG_STATE" >"$RG_TMP/abi.log" 2>&1 &&
	rg_fail "rowgated started over an incompatible pinned map"
rg_log "$(cat "$RG_TMP/abi.log")"
rg_check "an incompatible pinned map is named" grep -q "has another layout" "$RG_TMP/abi.log"
rg_check "... and nothing was attached" [ ! -e "$other/link_sockops" -a ! -e "$other/prog_verdict" ]

rg_ctl detach >/dev/null || rg_fail "rowgatectl detach"
rg_check "detach removes the verdict slot" [ ! -e "$RG_BPFFS/verdict_slot" -a ! -e "$RG_BPFFS/prog_verdict" ]
rg_check "... and the egress slot" [ ! -e "$RG_BPFFS/egress_slot" -a ! -e "$RG_BPFFS/prog_egress" ]
rg_stop_rowgated
"$V1" --cleanup --bpffs "$RG_BPFFS" >"$RG_TMP/cleanup.log" 2>&1 || rg_fail "rowgated --cleanup: $(cat "$RG_TMP/cleanup.log")"
rg_check "--cleanup leaves nothing ($(ls "$RG_BPFFS" 2>/dev/null | tr '\n' ' '))" [ ! -e "$RG_BPFFS" ]
rg_pass
