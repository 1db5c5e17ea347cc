#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The HTTP/2 facts the kernel gRPC design rests on (docs/grpc.md §6),
# checked against real servers: gRPC C-core (tests/grpc/greptime_server.py)
# and grpc-go (rg-grpc-go-server, SETTINGS_MAX_CONCURRENT_STREAMS 100).  A
# raw HTTP/2 client (tests/grpc/h2_probe.py) sends what rowgate's in-place
# rewrite would leave of a rejected message -- RST_STREAM(CANCEL) + empty
# SETTINGS + unknown-type filler, later DATA as unknown frames -- between
# admitted calls on one connection.  Asserted, on both servers:
#  - every admitted call is answered OK; no rejected message reaches a
#    handler (handler calls == admitted calls); no GOAWAY;
#  - each kernel SETTINGS is acknowledged (the egress trigger);
#  - 10,000 rejected streams on one connection do not use up the server's
#    concurrent-stream limit;
#  - PING as the trigger, with no server data between, ends in GOAWAY
#    ENHANCE_YOUR_CALM "too_many_pings" (why SETTINGS is the trigger);
#  - the server gives back no connection window for the rejected bytes it
#    never saw as DATA (grpc-go), so the kernel owes the client a
#    WINDOW_UPDATE.
# Recorded, not asserted: C-core sometimes writes its own CANCELLED
# trailers + RST_STREAM(NO_ERROR) on a rejected stream after the trigger's
# answer (docs/grpc.md §6.2).
source "$(dirname "$0")/lib.sh"
rg_require_cmd curl ss "$RG_PY"
GRPC_PY=$RG_BUILD/grpc/py
PROBE=$RG_ROOT/tests/grpc/h2_probe.py
"$RG_PY" -c 'import grpc, google.protobuf, hpack' 2>/dev/null ||
	rg_skip "needs python3-grpcio, python3-protobuf and python3-hpack for $RG_PY (make deps)"
rg_require_grpc_go server
[ -f "$GRPC_PY/greptime/v1/ingest_pb2.py" ] || rg_fail "build first: $GRPC_PY is missing"

ports() { # NAME: NAME_PORT and NAME_ADMIN, distinct free ports
	local p a
	p=$(rg_free_port) || rg_fail "no free port"
	a=$(rg_free_port) || rg_fail "no free port"
	while [ "$a" = "$p" ]; do a=$(rg_free_port) || rg_fail "no free port"; done
	eval "$1_PORT=$p $1_ADMIN=$a"
}
ports CC
ports GO
RG_GRPC_PY=$GRPC_PY "$RG_PY" "$RG_ROOT/tests/grpc/greptime_server.py" \
	--port "$CC_PORT" --admin-port "$CC_ADMIN" >"$RG_TMP/ccore.log" 2>&1 &
CC_PID=$!
rg_on_exit "kill -9 $CC_PID; wait $CC_PID"
"$GO_SERVER" -port "$GO_PORT" -admin-port "$GO_ADMIN" >"$RG_TMP/gogrpc.log" 2>&1 &
GO_PID=$!
rg_on_exit "kill -9 $GO_PID; wait $GO_PID"
rg_wait_for 20 curl -sf "http://127.0.0.1:$CC_ADMIN/stats" || rg_fail "C-core server did not come up"
rg_wait_for 20 curl -sf "http://127.0.0.1:$GO_ADMIN/stats" || rg_fail "grpc-go server did not come up"

probe() { # OUT PORT args...
	local out=$1 port=$2; shift 2
	RG_GRPC_PY=$GRPC_PY "$RG_PY" "$PROBE" --port "$port" "$@" >"$RG_TMP/$out.json" \
		2>"$RG_TMP/$out.err" || rg_fail "probe $out: $(cat "$RG_TMP/$out.err")"
	rg_log "$out: $(head -c 400 "$RG_TMP/$out.json")"
}
calls() { curl -sf "http://127.0.0.1:$1/stats" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["calls"])'; }

for srv in CC GO; do
	port_var=${srv}_PORT admin_var=${srv}_ADMIN
	port=${!port_var} admin=${!admin_var}
	name=$([ $srv = CC ] && echo "C-core" || echo "grpc-go")
	before=$(calls "$admin")

	probe "$srv.mix" "$port" --scenario mix --rejects 1000 --admit-every 10
	f=$RG_TMP/$srv.mix.json
	rg_check "$name: admitted calls all answered OK beside 1000 rejected messages" \
		[ "$(rg_jget "$f" "d['admitted_ok'] == d['admitted'] == 101")" = True ]
	rg_check "$name: every kernel SETTINGS acknowledged" [ "$(rg_jget "$f" "d['trigger_acks']")" = 1000 ]
	rg_check "$name: no GOAWAY, connection open" [ "$(rg_jget "$f" "d['goaway'] is None and not d['closed']")" = True ]
	rg_check "$name: rejected messages never reached a handler" [ "$(($(calls "$admin") - before))" = 101 ]

	before=$(calls "$admin")
	probe "$srv.many" "$port" --scenario mix --rejects 10000 --admit-every 2500
	f=$RG_TMP/$srv.many.json
	rg_check "$name: 10,000 rejected streams on one connection, admitted calls still answered" \
		[ "$(rg_jget "$f" "d['admitted_ok'] == d['admitted'] == 5 and d['trigger_acks'] == 10000 and d['goaway'] is None")" = True ]
	rg_check "$name: handler calls = admitted calls" [ "$(($(calls "$admin") - before))" = 5 ]
	rg_log "$name: rejected streams the server answered itself after the trigger: $(rg_jget "$f" "d['rejected_streams_answered_after_trigger']") of 10000"

	probe "$srv.ping" "$port" --scenario mix --rejects 20 --admit-every 0 --trigger ping
	rg_check "$name: PING as the trigger ends in GOAWAY too_many_pings" \
		[ "$(rg_jget "$RG_TMP/$srv.ping.json" "(d['goaway'] or {}).get('debug')")" = too_many_pings ]
done
# flow control: grpc-go gives no window back for bytes it never saw as DATA
# (C-core raises its connection window by ~4 MB at start, which hides it
# for a while)
probe GO.window "$GO_PORT" --scenario window --rejects 20 --rows 2000
rg_check "grpc-go: no connection WINDOW_UPDATE for 900 KB of rejected DATA" \
	[ "$(rg_jget "$RG_TMP/GO.window.json" "d['server_conn_window_updates'] == 0 and d['rejected_data_bytes'] > 65535")" = True ]
rg_pass
