#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# GreptimeDB gRPC ingestion without rowgate : a
# GreptimeDB-compatible server on gRPC C-core (python3-grpcio), clients on
# grpc-js and grpc-go, unary Handle and client-streaming HandleRequests, row
# and columnar inserts.  Asserts stored rows == sent rows per database, that
# the server's own RESOURCE_EXHAUSTED (x-greptime-err-code 6001) is retried by
# both clients' standard retry policy until each batch is stored exactly once,
# and that without a retry policy the client sees status 8 and code 6001.
# Then rowgated's defaults on that port (this part needs root and skips
# itself otherwise): a greptimedb port follows h2c without --grpc, and
# --no-grpc answers the preface 400.
RG_PROFILE=greptimedb # the gRPC port of a GreptimeDB-compatible server
source "$(dirname "$0")/lib.sh"
rg_require_cmd node curl ss "$RG_PY"
GRPC_PY=$RG_BUILD/grpc/py
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
"$RG_PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
	rg_skip "needs python3-grpcio and python3-protobuf for $RG_PY (make deps)"
[ -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ] ||
	rg_skip "needs @grpc/grpc-js in tests/grpc/node_modules (make deps)"
rg_require_grpc_go client
[ -f "$GRPC_PY/greptime/v1/ingest_pb2.py" ] || rg_fail "build first: $GRPC_PY is missing"

PORT=$(rg_free_port) || rg_fail "no free port"
ADMIN=$(rg_free_port) || rg_fail "no free port"
[ "$PORT" != "$ADMIN" ] || ADMIN=$(rg_free_port) || rg_fail "no free port"

# The server runs in a cgroup of its own when one can be made, so that the
# second part can put rowgated in front of exactly this server.
CG=""
root=$(rg_cgroup2_root)
if [ "$(id -u)" -eq 0 ] && [ -n "$root" ] && mkdir "$root/rowgate-test-$RG_NAME-$$" 2>/dev/null; then
	CG="$root/rowgate-test-$RG_NAME-$$"
	rg_on_exit "rmdir '$CG'"
fi
(
	[ -z "$CG" ] || echo "$BASHPID" >"$CG/cgroup.procs"
	RG_GRPC_PY=$GRPC_PY exec "$RG_PY" "$RG_ROOT/tests/grpc/greptime_server.py" \
		--port "$PORT" --admin-port "$ADMIN" \
		--reject js_u=3 --reject go_s=2 --reject js_s=1 --reject nr_go=1 --reject nr_js=1
) >"$RG_TMP/server.log" 2>&1 &
SRV=$!
rg_on_exit "kill -9 $SRV; wait $SRV"
rg_wait_for 20 curl -sf "http://127.0.0.1:$ADMIN/stats" || rg_fail "server did not come up"

stats() { curl -sf "http://127.0.0.1:$ADMIN/stats"; }

T=127.0.0.1:$PORT
# name | client | args
run_client() {
	local name=$1 impl=$2; shift 2
	if [ "$impl" = js ]; then
		node "$JS_CLIENT" --target "$T" --id "$name" "$@"
	else
		GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id "$name" "$@"
	fi >"$RG_TMP/$name.json" 2>"$RG_TMP/$name.err"
}

# db, rows expected: unary and streaming on both clients, row and columnar
# inserts, server rejections on js_u (3), go_s (2), js_s (1) retried away.
run_client js_u js --db js_u --mode unary --calls 20 --rows 10 || rg_fail "js unary: $(cat "$RG_TMP/js_u."*)"
run_client js_s js --db greptime-js_s --mode stream --calls 6 --per-call 3 --rows 7 ||
	rg_fail "js stream: $(cat "$RG_TMP/js_s."*)"
run_client js_c js --db acme-js_c --mode unary --calls 5 --rows 13 --columnar ||
	rg_fail "js columnar: $(cat "$RG_TMP/js_c."*)"
run_client go_u go -db go_u -mode unary -calls 20 -rows 11 -concurrency 4 ||
	rg_fail "go unary: $(cat "$RG_TMP/go_u."*)"
run_client go_s go -db go_s -mode stream -calls 5 -per-call 4 -rows 5 -columnar ||
	rg_fail "go stream: $(cat "$RG_TMP/go_s."*)"

stats >"$RG_TMP/stats.json" || rg_fail "stats"
rg_log "server: $(cat "$RG_TMP/stats.json")"
for pair in js_u:200 js_s:126 acme-js_c:65 go_u:220 go_s:100; do
	db=${pair%%:*} want=${pair#*:}
	got=$(rg_jget "$RG_TMP/stats.json" "d['rows'].get('$db', 0)")
	rg_check "database $db stored $got rows, sent $want" [ "$got" = "$want" ]
done
for c in js_u js_s js_c go_u go_s; do
	rg_check "$c: every call answered OK, rows acknowledged = rows sent" \
		[ "$(rg_jget "$RG_TMP/$c.json" "d['failed'] == 0 and d['rows_acked'] == d['rows_sent'] > 0")" = True ]
done
rg_check "the 6 server rejections happened and were retried" \
	[ "$(rg_jget "$RG_TMP/stats.json" "d['rejected']")" = 6 ]
rg_check "no batch stored twice" [ "$(rg_jget "$RG_TMP/stats.json" "d['duplicates']")" = 0 ]
# Handler calls: one per admitted call, plus one per rejected attempt.
rg_check "handler calls = calls + retried attempts (56 + 6)" \
	[ "$(rg_jget "$RG_TMP/stats.json" "d['calls']")" = 62 ]

# Without a retry policy the rejection reaches the caller as GreptimeDB's.
run_client nr_go go -db nr_go -calls 1 -no-retry && rg_fail "go: a rejected call succeeded"
rg_check "grpc-go sees RESOURCE_EXHAUSTED with x-greptime-err-code 6001" \
	[ "$(rg_jget "$RG_TMP/nr_go.json" "d['codes'] == {'8': 1} and d['err_code'] == '6001' and \"'nr_go'\" in d['last_error']")" = True ]
run_client nr_js js --db nr_js --calls 1 --no-retry && rg_fail "js: a rejected call succeeded"
rg_check "grpc-js sees RESOURCE_EXHAUSTED with x-greptime-err-code 6001" \
	[ "$(rg_jget "$RG_TMP/nr_js.json" "d['codes'] == {'8': 1} and d['err_code'] == '6001'")" = True ]

# With rowgated guarding this port: a greptimedb port follows h2c by
# default (docs/grpc.md); --no-grpc PORT answers the preface 400 and closes,
# as any request rowgate cannot read.
if [ -z "$CG" ] || [ ! -x "$RG_ROWGATED" ]; then
	rg_pass "baseline (rowgated part skipped: needs root, cgroup v2 and a build)"
fi
out=$("$RG_ROWGATED" --port "$PORT" --grpc "$PORT" --no-grpc "$PORT" 2>&1) &&
	rg_fail "--grpc and --no-grpc of one port accepted"
rg_check "--grpc P --no-grpc P: $out" grep -q "choose one" <<<"$out"
out=$("$RG_ROWGATED" --port "$PORT" --no-grpc 4002 2>&1) && rg_fail "--no-grpc of an unguarded port accepted"
rg_check "--no-grpc 4002 without --port 4002: $out" grep -q "not a guarded port (add --port 4002)" <<<"$out"
out=$("$RG_ROWGATED" --no-grpc x 2>&1) && rg_fail "--no-grpc x accepted"
rg_check "--no-grpc x: $out" grep -q "expected a guarded TCP port number" <<<"$out"
"$RG_ROWGATED" --help | grep -q -- "--no-grpc N" || rg_fail "--help does not document --no-grpc"

rg_mount_bpffs
VPORT=$(rg_free_port) || rg_fail "no free port"
RG_PORT=$PORT RG_CGROUP=$CG rg_start_rowgated --no-grpc "$PORT" --port "$VPORT=victoriametrics"
rg_check "the log says which ports follow h2c: $(grep 'gRPC (h2c)' "$RG_TMP/rowgated.log" | tr '\n' ' ')" \
	grep -q "port $PORT: greptimedb, gRPC (h2c) answered 400" "$RG_TMP/rowgated.log"
rg_check "a victoriametrics port answers the preface 400 by default" \
	grep -q "port $VPORT: victoriametrics, gRPC (h2c) answered 400" "$RG_TMP/rowgated.log"
"$RG_PY" - "$PORT" >"$RG_TMP/preface.out" 2>&1 <<'PY' || rg_fail "preface: $(cat "$RG_TMP/preface.out")"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
# client preface + an empty SETTINGS frame, as every gRPC client opens
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
got = b""
while b"HTTP/1.1 400" not in got:
    b = s.recv(4096)
    if not b:
        break
    got += b
# Preface and SETTINGS in one skb are answered 400 at once; when the
# preface's first 18 bytes ("PRI * HTTP/2.0" + CRLF CRLF) arrive alone they
# pass as an HTTP/1 head and the server's SETTINGS comes first (docs/grpc.md)
print(got[got.find(b"HTTP/1.1"):][:40], "after", got.find(b"HTTP/1.1"), "bytes")
assert b"HTTP/1.1 400" in got, got[:200]
PY
rg_log "--no-grpc: preface answered: $(cat "$RG_TMP/preface.out")"
run_client gap go -db gap -calls 1 -no-retry && rg_fail "a gRPC call passed a --no-grpc port"
rg_check "--no-grpc: a grpc-go call fails UNAVAILABLE" \
	[ "$(rg_jget "$RG_TMP/gap.json" "d['codes'] == {'14': 1}")" = True ]

# The default: the same port without --no-grpc follows h2c, charges inserts
# and refuses them in the kernel at the limit.
rg_stop_rowgated
RG_PORT=$PORT RG_CGROUP=$CG rg_start_rowgated
rg_check "the log says port $PORT follows h2c" \
	grep -q "port $PORT: greptimedb, gRPC (h2c) followed" "$RG_TMP/rowgated.log"
rg_ctl limit set dflt 100000 >/dev/null || rg_fail "limit set"
rg_ctl limit set dflt_spent 10 >/dev/null || rg_fail "limit set"
calls0=$(rg_jget <(stats) "d['calls']")
run_client dflt go -db dflt -mode unary -calls 10 -rows 7 || rg_fail "go unary: $(cat "$RG_TMP/dflt."*)"
run_client dflt_js js --db dflt --mode stream --calls 2 --per-call 3 --rows 5 ||
	rg_fail "js stream: $(cat "$RG_TMP/dflt_js."*)"
rg_check "default: 100 rows admitted and charged in the kernel" [ "$(rg_stat dflt admitted_rows)" = 100 ]
rg_check "default: the server stored them" [ "$(rg_jget <(stats) "d['rows'].get('dflt', 0)")" = 100 ]
# a 50-row insert on a 10 rows/s database: the first is admitted (the bucket
# may go into debt), the next is refused by the kernel, never handled
run_client dflt_spent go -db dflt_spent -calls 2 -rows 50 -no-retry &&
	rg_fail "two 50-row calls at 10 rows/s both passed"
rg_check "default: the second call is refused RESOURCE_EXHAUSTED with code 6001" \
	[ "$(rg_jget "$RG_TMP/dflt_spent.json" "d['codes'].get('8') == 1 and d['err_code'] == '6001'")" = True ]
rg_check "default: the kernel refused it" [ "$(rg_stat dflt_spent rejected_rows)" = 50 ]
rg_check "default: the refused call never reached the handler (12 + 1 handled calls)" \
	[ "$(rg_jget <(stats) "d['calls']")" = $((calls0 + 13)) ]
rg_pass
