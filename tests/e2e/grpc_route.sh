#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gRPC streams routed by their :path (docs/grpc.md#7-path-routing): a
# grpc-go server serves GreptimeDatabase, grpc.health.v1.Health and
# rowgate.test.Other (a GreptimeRequest to a method rowgate does not route)
# on one --grpc port.  grpc-go and grpc-js clients call all three, many
# times on one connection each, so later calls name their :path from the
# HPACK dynamic table.  The other services' calls all succeed and are never
# charged, though Other's messages write to a database in debt; the
# GreptimeDatabase writes on the same connections are charged and refused
# as before (stored = admitted); h2_streams_unrouted counts every other
# call's stream, h2_failclosed stays 0.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl "$RG_PY"
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
rg_require_grpc_go client server
CLIENTS="go js"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ]; then
	[ -n "${VMTEST:-}" ] || rg_skip "needs node and @grpc/grpc-js in tests/grpc/node_modules (make deps)"
	rg_log "no grpc-js here: the grpc-js client does not run"
	CLIENTS=go
fi

CALLS=10 OTHER=5 ROWS=100

rg_make_cgroup
rg_start_grpc_go_server

rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT"

# is GOT WANT WHAT: equal, or say what differs
is() { [ "$1" = "$2" ] || { rg_log "  $3: got '$1', want '$2'"; return 1; }; }
sget() { curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

unrouted=0
for c in $CLIENTS; do
	db=rt_$c
	# 1 row/s: the first message is admitted on a full bucket, its debt
	# refuses every later one
	rg_ctl limit set $db 1 >/dev/null || rg_fail "limit set"
	before_conns=$(rg_global conns_tracked)
	other_rows=$(sget "d['other_rows']")
	other_calls=$(sget "d['other_calls']")
	out=$RG_TMP/$c.json
	if [ $c = go ]; then
		env GRPC_GO_RETRY=on "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id "r$c" -db $db \
			-calls $CALLS -rows $ROWS -other $OTHER -no-retry >"$out" 2>&1
	else
		node "$JS_CLIENT" --target "127.0.0.1:$GPORT" --id "r$c" --db $db \
			--calls $CALLS --rows $ROWS --other $OTHER --no-retry >"$out" 2>&1
	fi
	rg_log "grpc-$c: $(cat "$out")"
	n=$((CALLS * OTHER))
	rg_check "grpc-$c: one connection for all its calls" \
		is "$(rg_global conns_tracked)" $((before_conns + 1)) conns_tracked
	rg_check "grpc-$c: $n Health/Check calls answered SERVING, $n Other/Handle calls answered" \
		eval 'is "$(rg_jget "$out" "d['"'health_ok'"']")" $n health_ok &&
		      is "$(rg_jget "$out" "d['"'other_ok'"']")" $n other_ok &&
		      is "$(rg_jget "$out" "d['"'other_failed'"']")" 0 other_failed'
	rg_check "grpc-$c: Other/Handle stored $((n * ROWS)) rows for $db, in debt, uncharged" \
		eval 'is "$(sget "d['"'other_rows'"']")" $((other_rows + n * ROWS)) "server other_rows" &&
		      is "$(sget "d['"'other_calls'"']")" $((other_calls + n)) "server other_calls" &&
		      is "$(rg_jget "$out" "d['"'other_rows_acked'"']")" $((n * ROWS)) "client other_rows_acked"'
	rg_check "grpc-$c: GreptimeDatabase: 1 call admitted, $((CALLS - 1)) RESOURCE_EXHAUSTED" \
		eval 'is "$(rg_jget "$out" "d['"'ok'"']")" 1 ok &&
		      is "$(rg_jget "$out" "d['"'codes'"']")" "{'"'8'"': $((CALLS - 1))}" codes'
	rg_check "grpc-$c: $db stored = admitted = $ROWS rows, $((CALLS - 1)) messages refused" \
		eval 'is "$(sget "d['"'rows'"'].get('"'$db'"', 0)")" $ROWS stored &&
		      is "$(rg_stat $db admitted_rows)" $ROWS admitted_rows &&
		      is "$(rg_stat $db rejected_requests)" $((CALLS - 1)) rejected_requests'
	unrouted=$((unrouted + 2 * n))
	rg_check "grpc-$c: h2_streams_unrouted = $unrouted (every other call's stream), h2_failclosed 0" \
		eval 'is "$(rg_global h2_streams_unrouted)" $unrouted h2_streams_unrouted &&
		      is "$(rg_global h2_failclosed)" 0 h2_failclosed'
done
rg_check "no connection closed by the kernel" is "$(rg_global h2_reject_closed)" 0 h2_reject_closed
rg_pass
