#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A gRPC connection that predates rowgated cannot be read (its streams and
# HPACK table began before the start) and never reaches an HTTP/1 request
# boundary: it would pass unenforced until it closes.  --adopt-grace resets
# it instead (docs/design.md#adoption).  A grpc-go client writes 5x its
# database's limit in unary calls over one connection; rowgated starts
# while it writes.  Checked: the connection is reset once (adopt_resets),
# the client reconnects (the server saw two connections) and is limited
# from then on (RESOURCE_EXHAUSTED); the rows stored unenforced are no more
# than the client sent until the reset; at most the call in flight at the
# reset fails otherwise.  Then, with --adopt-grace off, the same client
# stays unenforced and is not reset: the option is what makes it.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl ss "$RG_PY"
rg_require_grpc_go client server
rg_make_cgroup
rg_start_grpc_go_server
rg_mount_bpffs
LIMIT=200 GRACE=3
RATE=1000 # rows/s the client writes: 100-row calls every 100 ms
SECS1=20 SECS2=10 # seconds each leg's client writes
now() { "$RG_PY" -c 'import time; print(time.time())'; }
stats() { curl -sf "http://127.0.0.1:$GADMIN/stats"; }
stored() { stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["rows"].get(sys.argv[1], 0))' "$1"; }
conns() { stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["conns"])'; }
adopt_reset() { [ "$(rg_global adopt_resets)" -ge 1 ]; }

# One leg: DB written for SECS s by one client connection that rowgated
# adopts 2 s in; sets T0 (client start), TUP (rowgated up), CLIENT (its JSON).
leg() {
	local db=$1 secs=$2 calls
	shift 2
	calls=$((secs * 10))
	printf '{"version":1,"limits":{"%s":%d}}\n' "$db" $LIMIT >"$RG_STATE"
	T0=$(now)
	"$GO_CLIENT" -target "127.0.0.1:$GPORT" -db "$db" -mode unary -calls $calls -rows 100 \
		-call-gap 100ms -no-retry >"$RG_TMP/$db.json" 2>"$RG_TMP/$db.err" &
	CPID=$!
	rg_on_exit "kill $CPID 2>/dev/null"
	rg_wait_for 20 eval '[ "$(stored "$db")" -gt 0 ]' || rg_fail "$db: the client did not write"
	sleep 2 # writing, unguarded
	RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" "$@"
	TUP=$(now)
}

# 1. --adopt-grace 3
leg ad_go $SECS1 --adopt-grace $GRACE
c0=$(conns)
rg_check "the adopted connection is reset within the grace and a second" \
	rg_wait_for $((GRACE + 5)) adopt_reset
TRESET=$(now)
wait "$CPID" # non-zero: calls failed, read below
CLIENT=$(cat "$RG_TMP/ad_go.json")
rg_log "client: $CLIENT"
rg_log "rowgated up $("$RG_PY" -c "print(round($TUP - $T0, 1))") s after the client's start, reset seen $("$RG_PY" -c "print(round($TRESET - $TUP, 1))") s after"
read -r exhausted unavailable other < <("$RG_PY" -c '
import json,sys; c=json.loads(sys.argv[1])["codes"]
e=c.get("8",0); u=c.get("14",0)
print(e, u, sum(c.values())-e-u)' "$CLIENT")
st=$(stored ad_go)
ch=$(rg_stat ad_go admitted_rows)
# unenforced: everything the client sent before the reset; the reset was
# seen at TRESET at the latest
bound=$("$RG_PY" -c "print(int(($TRESET - $T0 + 1) * $RATE))")
rg_log "stored $st rows, charged $ch: $((st - ch)) unenforced (bound $bound); codes: $exhausted RESOURCE_EXHAUSTED, $unavailable UNAVAILABLE, $other other"
rg_check "one connection reset ($(rg_global adopt_resets)), none failed" \
	[ "$(rg_global adopt_resets)" -eq 1 -a "$(rg_global adopt_reset_failed)" -eq 0 ]
rg_check "the client reconnected (server saw $(conns) connections, $c0 before)" [ "$(conns)" -eq $((c0 + 1)) ]
rg_check "the client was limited after the reset ($exhausted RESOURCE_EXHAUSTED)" [ "$exhausted" -gt 0 ]
rg_check "at most the call in flight failed otherwise ($unavailable UNAVAILABLE, $other other)" \
	[ "$unavailable" -le 1 -a "$other" -eq 0 ]
rg_check "rows stored unenforced ($((st - ch))) <= rows sent until the reset ($bound)" \
	[ "$((st - ch))" -ge 0 -a "$((st - ch))" -le "$bound" ]
rg_check "the reset is logged" grep -q "reset 1 connection(s) that predate this start" "$RG_TMP/rowgated.log"
# the next start must adopt again: nothing of this one left attached
rg_ctl detach >/dev/null || rg_fail "detach"
rg_stop_rowgated

# 2. --adopt-grace off: the connection passes unenforced to its end
leg ad_off $SECS2 --adopt-grace off
wait "$CPID" || rg_fail "client failed: $(cat "$RG_TMP/ad_off.json" "$RG_TMP/ad_off.err")"
st=$(stored ad_off)
rg_log "adopt-grace off: stored $st rows of $((SECS2 * RATE)), charged $(rg_stat ad_off admitted_rows), adopt_resets $(rg_global adopt_resets)"
rg_check "off: nothing reset" [ "$(rg_global adopt_resets)" -eq 0 ]
rg_check "off: every row stored, unenforced ($st)" [ "$st" -eq $((SECS2 * RATE)) ]
rg_pass
