#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The HTTP/2 + gRPC parser (include/rowgate/h2/) in the kernel, on real
# connections: the test verdict of tests/bpf/h2_load.bpf.c parses every byte
# grpc-go and grpc-js clients send to the C-core test server (relayed by
# build/tests/h2_kern through a socket in its sockhash), and for each
# connection the messages and rows it counted equal what the server stored:
# unary and client-streaming calls, row and columnar inserts, 20,000-row
# messages spanning many DATA frames and skbs, 4 calls multiplexed on one
# connection, and 16 calls in flight (small and 1,000-row messages).  The verdict only parses (it passes every skb).
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd node curl ss "$RG_PY"
GRPC_PY=$RG_BUILD/grpc/py
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
KERN=$RG_BUILD/tests/h2_kern
OBJ=$RG_BUILD/tests/bpf/h2_load.bpf.o
"$RG_PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
	rg_skip "needs python3-grpcio and python3-protobuf for $RG_PY (make deps)"
[ -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ] ||
	rg_skip "needs @grpc/grpc-js in tests/grpc/node_modules (make deps)"
rg_require_grpc_go client
[ -x "$KERN" ] && [ -f "$OBJ" ] || rg_fail "build first: $KERN or $OBJ is missing"

PORT=$(rg_free_port) || rg_fail "no free port"
ADMIN=$(rg_free_port) || rg_fail "no free port"
while [ "$ADMIN" = "$PORT" ]; do ADMIN=$(rg_free_port) || rg_fail "no free port"; done
RG_GRPC_PY=$GRPC_PY "$RG_PY" "$RG_ROOT/tests/grpc/greptime_server.py" \
	--port "$PORT" --admin-port "$ADMIN" >"$RG_TMP/server.log" 2>&1 &
SRV=$!
rg_on_exit "kill -9 $SRV; wait $SRV"
rg_wait_for 20 curl -sf "http://127.0.0.1:$ADMIN/stats" || rg_fail "server did not come up"

"$KERN" "$OBJ" "$PORT" >"$RG_TMP/kern.out" 2>"$RG_TMP/kern.log" &
KPID=$!
rg_on_exit "kill -9 $KPID; wait $KPID"
rg_wait_for 10 grep -q '^port ' "$RG_TMP/kern.out" || rg_fail "h2_kern did not start: $(cat "$RG_TMP/kern.log")"
KPORT=$(awk '/^port /{ print $2 }' "$RG_TMP/kern.out")
T=127.0.0.1:$KPORT

# One client process = one connection, in this order: db, messages, rows.
expect=(
	"k_go_u 50 1000"
	"k_js_s 6 3000"
	"k_go_big 4 80000"
	"k_js_mux 4 120000"
	"k_go_col 6 60"
	"k_go_c16 600 12000"
	"k_go_c16b 64 64000"
)
"$GO_CLIENT" -target "$T" -db k_go_u -calls 50 -rows 20 >"$RG_TMP/c1.json" || rg_fail "client 1: $(cat "$RG_TMP/c1.json")"
node "$JS_CLIENT" --target "$T" --db greptime-k_js_s --mode stream --calls 2 --per-call 3 --rows 500 \
	>"$RG_TMP/c2.json" || rg_fail "client 2: $(cat "$RG_TMP/c2.json")"
"$GO_CLIENT" -target "$T" -db k_go_big -mode stream -calls 2 -per-call 2 -rows 20000 \
	>"$RG_TMP/c3.json" || rg_fail "client 3: $(cat "$RG_TMP/c3.json")"
node "$JS_CLIENT" --target "$T" --db k_js_mux --calls 4 --concurrency 4 --rows 30000 \
	>"$RG_TMP/c4.json" || rg_fail "client 4: $(cat "$RG_TMP/c4.json")"
"$GO_CLIENT" -target "$T" -db k_go_col -mode stream -calls 2 -per-call 3 -rows 10 -columnar \
	>"$RG_TMP/c5.json" || rg_fail "client 5: $(cat "$RG_TMP/c5.json")"
# 16 calls in flight: 16 streams open before their DATA; large messages
# interleaved 16 KB at a time
"$GO_CLIENT" -target "$T" -db k_go_c16 -calls 600 -rows 20 -concurrency 16 \
	>"$RG_TMP/c6.json" || rg_fail "client 6: $(cat "$RG_TMP/c6.json")"
"$GO_CLIENT" -target "$T" -db k_go_c16b -calls 64 -rows 1000 -concurrency 16 \
	>"$RG_TMP/c7.json" || rg_fail "client 7: $(cat "$RG_TMP/c7.json")"

kill -TERM "$KPID"
wait "$KPID" || rg_fail "h2_kern failed: $(cat "$RG_TMP/kern.log")"
rg_log "kernel: $(tr '\n' ';' <"$RG_TMP/kern.out")"
curl -sf "http://127.0.0.1:$ADMIN/stats" >"$RG_TMP/stats.json" || rg_fail "stats"
mapfile -t conns < <(grep '^conn ' "$RG_TMP/kern.out")
rg_check "one parsed connection per client" [ "${#conns[@]}" = "${#expect[@]}" ]
for i in "${!expect[@]}"; do
	read -r db msgs rows <<<"${expect[$i]}"
	stored=$("$RG_PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['rows'].get(sys.argv[2], 0))" \
		"$RG_TMP/stats.json" "$db")
	rg_check "$db: server stored $stored rows, sent $rows" [ "$stored" = "$rows" ]
	rg_check "$db: kernel parsed ${conns[$i]}" \
		[ "${conns[$i]% bytes=*}" = "conn messages=$msgs rows=$rows err=0" ]
done
rg_pass
