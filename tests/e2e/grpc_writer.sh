#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# GreptimeDB's streaming writer against a limit (docs/grpc.md#streams): a
# grpc-go and a grpc-js client each hold one HandleRequests call open and
# write 5x their database's limit into it, against rg-greptime (the h2
# crate, as tonic and so GreptimeDB).  Every message is judged on its own
# database's bucket, mid-stream included: a refused one never reaches the
# handler and ends the call with RESOURCE_EXHAUSTED (6001) after the
# earlier messages were stored, as GreptimeDB's own limiter ends it; the
# writer reopens its call.  Checked: the stored rate of each database in
# every 5-s window after the first is within 1.1x of its limit (and the
# writer is still served: above half of it), every failed call is code 8,
# each database is charged exactly the rows stored.  Then writers that
# resend a failed call's messages (they cannot know which were stored):
# every message ends stored at least once, the duplicates are counted, and
# charged = stored.  WRITER_SECONDS (60) sets the first part's length.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl node "$RG_PY"
GT_BIN=$RG_BUILD/greptime/rg-greptime
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
[ -x "$GT_BIN" ] || rg_skip "needs $GT_BIN (cargo and Debian's librust-hyper-dev, librust-h2-dev, librust-tokio-dev; make)"
rg_require_grpc_go client
[ -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ] ||
	rg_skip "needs @grpc/grpc-js in tests/grpc/node_modules (make deps)"
SECS=${WRITER_SECONDS:-60}
[ "$SECS" -ge 15 ] || rg_fail "WRITER_SECONDS=$SECS: at least 15 (three 5-s windows)"

rg_make_cgroup
HPORT=$(rg_free_port) || rg_fail "no free port"
GPORT=$(rg_free_port) || rg_fail "no free port"
[ "$HPORT" != "$GPORT" ] || rg_fail "ports collide"
(
	echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
	exec "$GT_BIN" --port "$HPORT" --grpc-port "$GPORT" --databases w_go,w_js,r_go,r_js
) >"$RG_TMP/greptime.log" 2>&1 &
SRV=$!
rg_on_exit "kill -9 $SRV; wait $SRV"
rg_wait_for 20 curl -sf "http://127.0.0.1:$HPORT/stats" || rg_fail "rg-greptime did not come up"
rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT"
T=127.0.0.1:$GPORT
stats() { curl -sf "http://127.0.0.1:$HPORT/stats"; }
# rows stored in a database, all tables
stored() { stats | "$RG_PY" -c "import json,sys; print(sum(json.load(sys.stdin)['rows'].get(sys.argv[1], {}).values()))" "$1"; }
# wait until DB is charged exactly what it stored (the last answers and
# charges settle after the clients exit)
charged_is_stored() {
	rg_wait_for 10 eval "[ \"\$(rg_stat $1 admitted_rows)\" = \"\$(stored $1)\" ]" ||
		{ rg_log "  $1: admitted_rows $(rg_stat "$1" admitted_rows), stored $(stored "$1")"; return 1; }
}

# 1. Writers at 5x the limit: 2,000 rows/s each, 100 messages/s of 100 rows,
# a failed call reopened after 100 ms
LIMIT=2000
rg_ctl limit set w_go $LIMIT >/dev/null && rg_ctl limit set w_js $LIMIT >/dev/null || rg_fail "limit set"
"$RG_PY" - "$HPORT" "$SECS" >"$RG_TMP/windows.json" <<'EOF' &
# The stored rows of w_go and w_js every 5 s, with the time they were read
import json, sys, time, urllib.request
port, secs = sys.argv[1], int(sys.argv[2])
def read():
    rows = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5))["rows"]
    return [time.monotonic()] + [sum(rows.get(db, {}).values()) for db in ("w_go", "w_js")]
samples, start = [read()], time.monotonic()
for k in range(1, secs // 5 + 1):
    time.sleep(max(0, start + 5 * k - time.monotonic()))
    samples.append(read())
print(json.dumps(samples))
EOF
SAMPLER=$!
rg_on_exit "kill $SAMPLER 2>/dev/null"
rg_h2_client "$RG_TMP/w_go.json" "$GO_CLIENT" -target "$T" -mode writer -db w_go -id g \
	-rate 100 -rows 100 -seconds "${SECS}s" -max-backoff 100ms &
GOW=$!
rg_h2_client "$RG_TMP/w_js.json" node "$JS_CLIENT" --target "$T" --mode writer --db w_js --id j \
	--rate 100 --rows 100 --seconds "$SECS" --max-backoff-ms 100
wait $GOW
wait $SAMPLER || rg_fail "the sampler failed"
for c in go js; do
	f=$RG_TMP/w_$c.json
	[ "$(rg_jget "$f" "d['failed'] > 0 and d['failed'] == d['codes'].get('8', 0)")" = True ] &&
		[ "$(rg_jget "$f" "d.get('err_code')")" = 6001 ]
	rg_check_rc $? "grpc-$c writer: $(rg_jget "$f" "d['messages']") messages in $(rg_jget "$f" "d['calls']") calls, every failed one RESOURCE_EXHAUSTED 6001"
	rg_check "grpc-$c writer: w_$c charged = stored ($(stored w_$c) rows, $(rg_stat w_$c rejected_requests) refusals)" \
		charged_is_stored w_$c
done
# the rate of each window after the first (it holds the full bucket)
windows=$("$RG_PY" - "$RG_TMP/windows.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ".join("%.0f/%.0f" % ((b[1] - a[1]) / (b[0] - a[0]), (b[2] - a[2]) / (b[0] - a[0]))
               for a, b in zip(s[1:], s[2:])))
EOF
)
rg_log "stored rows/s of w_go/w_js in each 5-s window after the first: $windows"
in_bounds() {
	local w
	for w in $windows; do
		"$RG_PY" -c "import sys; sys.exit(not all($LIMIT * 0.5 <= float(x) <= $LIMIT * 1.1 for x in sys.argv[1].split('/')))" "$w" ||
			return 1
	done
	[ -n "$windows" ]
}
rg_check "every window within [0.5, 1.1] x the limit of $LIMIT rows/s: $windows" in_bounds

# 2. Writers that resend a refused call's messages, 5 to a call (a call is
# stored whole only while the bucket holds it): 5x a limit of 1,000 rows/s
# for 4 s, then until every message is stored
rg_ctl limit set r_go 1000 >/dev/null && rg_ctl limit set r_js 1000 >/dev/null || rg_fail "limit set"
rg_h2_client "$RG_TMP/r_go.json" "$GO_CLIENT" -target "$T" -mode writer -db r_go -id rgo \
	-rate 50 -rows 100 -seconds 4s -call-messages 5 -resend -drain 120s &
GOW=$!
rg_h2_client "$RG_TMP/r_js.json" node "$JS_CLIENT" --target "$T" --mode writer --db r_js --id rjs \
	--rate 50 --rows 100 --seconds 4 --call-messages 5 --resend --drain-seconds 120
wait $GOW
# every message's table holds its 100 rows at least once: twice-stored rows
each_stored() { # each_stored DB PREFIX MESSAGES: prints the rows stored again
	stats | "$RG_PY" -c "
import json, sys
t = json.load(sys.stdin)['rows'].get(sys.argv[1], {})
n = int(sys.argv[3])
short = [i for i in range(n) if t.get(f'{sys.argv[2]}_{i}', 0) < 100]
if short or len(t) != n:
    sys.exit(f'{len(short)} of {n} messages not stored, {len(t)} tables')
print(sum(t.values()) - 100 * n)" "$@"
}
for c in go js; do
	f=$RG_TMP/r_$c.json
	n=$(rg_jget "$f" "d['messages']")
	again=$(each_stored r_$c r$c "$n") || rg_fail "grpc-$c resending writer: $again"
	[ "$(rg_jget "$f" "d.get('pending', 0)")" = 0 ] && [ "$(rg_jget "$f" "d['failed'] == d['codes'].get('8', 0)")" = True ]
	rg_check_rc $? "grpc-$c resending writer: all $n messages stored, $again rows twice ($(rg_jget "$f" "d['resent']") resent in $(rg_jget "$f" "d['calls']") calls), none pending"
	rg_check "grpc-$c resending writer: r_$c charged = stored" charged_is_stored r_$c
done
rg_pass
