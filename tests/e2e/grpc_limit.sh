#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gRPC ingestion limited in the kernel (rowgated --grpc PORT --grpc-reject
# close, docs/grpc.md section 7; grpc_reject.sh tests keep, the default): GreptimeDB-compatible gRPC C-core and grpc-go servers behind
# guarded ports, grpc-go and grpc-js clients.  Admitted insert messages reach the
# server and are charged to their database exactly as stored (unary and
# streaming, row and columnar, a database without a limit passes
# uncharged); the seed example (limit 1,000 rows/s: a 3,000-row message is
# admitted on a full bucket, the next one is refused) -- a refused message
# never reaches the handler, its connection ends with the kernel's GOAWAY
# carrying the 429's text, counted; HTTP/2 the kernel cannot follow ends
# with GOAWAY PROTOCOL_ERROR, counted; a connection's bytes split at every
# offset (preface, frame headers, HPACK, gRPC prefix, protobuf) are
# still followed, and both RequestHeader forms (dbname, catalog/schema)
# charge the database the server stores to; egress follows the servers'
# HTTP/2 frames (SETTINGS ACKs counted) and passes them untouched.
# Where python3-grpcio or node is missing (the vmtest guest) the grpc-go
# server and client run alone, as in grpc_reject.sh: the C-core server's
# cases, the grpc-js client's and the split-at-every-offset probe
# (python3-hpack, protobuf) are skipped, each saying so.
RG_PROFILE=greptimedb # the gRPC port of a GreptimeDB-compatible server
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl ss bpftool "$RG_PY"
GRPC_PY=$RG_BUILD/grpc/py
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
rg_require_grpc_go client server
CC=1 JS=1
if ! "$RG_PY" -c 'import grpc, google.protobuf, hpack' 2>/dev/null; then
	[ -n "${VMTEST:-}" ] || rg_skip "needs python3-grpcio, python3-protobuf and python3-hpack for $RG_PY (make deps)"
	rg_log "no python3-grpcio here: the C-core server's cases and the split-at-every-offset probe do not run"
	CC=
fi
if ! command -v node >/dev/null 2>&1 || [ ! -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ]; then
	[ -n "${VMTEST:-}" ] || rg_skip "needs node and @grpc/grpc-js in tests/grpc/node_modules (make deps)"
	rg_log "no grpc-js here: the grpc-js client's cases do not run"
	JS=
fi
[ -z "$CC" ] || [ -f "$GRPC_PY/greptime/v1/ingest_pb2.py" ] || rg_fail "build first: $GRPC_PY is missing"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"

# bad --grpc values: a clear error, nothing loaded
out=$("$RG_ROWGATED" --grpc 70000 2>&1) && rg_fail "--grpc 70000 accepted"
rg_check "--grpc 70000: $out" grep -q "expected a guarded TCP port number" <<<"$out"
out=$("$RG_ROWGATED" --port 4001 --grpc 4002 2>&1) && rg_fail "--grpc of an unguarded port accepted"
rg_check "--grpc 4002 without --port 4002: $out" grep -q "not a guarded port (add --port 4002)" <<<"$out"
"$RG_ROWGATED" --help | grep -q -- "--grpc N" || rg_fail "--help does not document --grpc"
out=$("$RG_ROWGATED" --grpc-max-streams 0 2>&1) && rg_fail "--grpc-max-streams 0 accepted"
rg_check "--grpc-max-streams 0: $out" grep -q "expected off or a whole number of streams" <<<"$out"
"$RG_ROWGATED" --help | grep -q -- "--grpc-max-streams N|off" || rg_fail "--help does not document --grpc-max-streams"

rg_make_cgroup
rg_start_grpc_servers "$CC" # grpc-go on a second guarded port

rg_mount_bpffs
RG_PORT=$PORT rg_start_rowgated --grpc "$PORT" --port "$GPORT=greptimedb" --grpc "$GPORT" --grpc-reject close \
	--grpc-compressed refuse
SEED_LIMIT=$(rg_seed_limit)
rg_ctl limit set g_lim $SEED_LIMIT >/dev/null || rg_fail "limit set"
rg_ctl limit set g_js 100000 >/dev/null || rg_fail "limit set"
rg_ctl limit set acme-g_col 100000 >/dev/null || rg_fail "limit set"
rg_ctl limit set g_split 10000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set go_srv 100000 >/dev/null || rg_fail "limit set"
rg_ctl limit set go_mux 100000 >/dev/null || rg_fail "limit set"
rg_ctl limit set go_lim $SEED_LIMIT >/dev/null || rg_fail "limit set"
rg_ctl limit set go_many 1000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set acme-split_b 10000000 >/dev/null || rg_fail "limit set"

stats() { curl -sf "http://127.0.0.1:$ADMIN/stats"; }
stored() { stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['rows'].get(sys.argv[1], 0))" "$1"; }
calls() { stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['calls'])"; }
gstats() { curl -sf "http://127.0.0.1:$GADMIN/stats"; }
gstored() { gstats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['rows'].get(sys.argv[1], 0))" "$1"; }
gcalls() { gstats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['calls'])"; }
T=127.0.0.1:$PORT
GT=127.0.0.1:$GPORT
go_client() { GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" "$@"; }
js_client() { node "$JS_CLIENT" --target "$T" "$@"; }
# the raw-socket cases below go to the C-core server, else to grpc-go's
RAW_PORT=$PORT
[ -n "$CC" ] || RAW_PORT=$GPORT

# Admitted: charged exactly as stored.
if [ -n "$CC" ]; then
	go_client -id a -db g_free -calls 10 -rows 7 >"$RG_TMP/free.json" || rg_fail "unlimited: $(cat "$RG_TMP/free.json")"
	go_client -id c -db acme-g_col -mode stream -calls 2 -per-call 3 -rows 9 -columnar -concurrency 2 \
		>"$RG_TMP/col.json" || rg_fail "go columnar: $(cat "$RG_TMP/col.json")"
	rg_check "unlimited database: 70 rows stored" [ "$(stored g_free)" = 70 ]
	[ "$(stored acme-g_col)" = 54 ] && [ "$(rg_stat acme-g_col admitted_rows)" = 54 ]
	rg_check_rc $? "columnar (row_count) stream: 54 rows stored and admitted"
	if [ -n "$JS" ]; then
		js_client --id b --db g_js --mode stream --calls 3 --per-call 4 --rows 25 >"$RG_TMP/js.json" ||
			rg_fail "js stream: $(cat "$RG_TMP/js.json")"
		[ "$(stored g_js)" = 300 ] && [ "$(rg_stat g_js admitted_rows)" = 300 ]
		rg_check_rc $? "grpc-js stream: 300 rows stored and admitted"
		rg_check "grpc-js: 12 messages admitted" [ "$(rg_stat g_js admitted_requests)" = 12 ]
		rg_check "the HTTP/2 connections were followed" [ "$(rg_global h2_conns)" -ge 3 ]
	fi
else
	rg_log "no C-core server: the unlimited and columnar calls go to the grpc-go server"
	GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id a -db g_free -calls 10 -rows 7 >"$RG_TMP/free.json" ||
		rg_fail "unlimited: $(cat "$RG_TMP/free.json")"
	GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id c -db acme-g_col -mode stream -calls 2 -per-call 3 -rows 9 \
		-columnar -concurrency 2 >"$RG_TMP/col.json" || rg_fail "go columnar: $(cat "$RG_TMP/col.json")"
	rg_check "grpc-go server, unlimited database: 70 rows stored" [ "$(gstored g_free)" = 70 ]
	[ "$(gstored acme-g_col)" = 54 ] && [ "$(rg_stat acme-g_col admitted_rows)" = 54 ]
	rg_check_rc $? "grpc-go server, columnar (row_count) stream: 54 rows stored and admitted"
	rg_check "the HTTP/2 connections were followed" [ "$(rg_global h2_conns)" -ge 2 ]
fi

# The seed example: limit 1,000 rows/s, a full bucket admits a 3,000-row
# message (debt 2,000), the next message is refused before the server.
if [ -n "$CC" ]; then
	go_client -id d -db g_lim -calls 1 -rows 3000 -no-retry >"$RG_TMP/seed.json" ||
		rg_fail "the 3,000-row message on a full bucket: $(cat "$RG_TMP/seed.json")"
	before=$(calls)
	go_client -id e -db g_lim -calls 1 -rows 10 -no-retry >"$RG_TMP/rej_go.json" &&
		rg_fail "a message past the limit was admitted: $(cat "$RG_TMP/rej_go.json")"
	rg_log "grpc-go: $(cat "$RG_TMP/rej_go.json")"
	if [ -n "$JS" ]; then
		js_client --id f --db g_lim --calls 1 --rows 10 --no-retry >"$RG_TMP/rej_js.json" &&
			rg_fail "a message past the limit was admitted: $(cat "$RG_TMP/rej_js.json")"
		rg_log "grpc-js: $(cat "$RG_TMP/rej_js.json")"
		rg_check "grpc-js: RESOURCE_EXHAUSTED (ENHANCE_YOUR_CALM)" \
			[ "$(rg_jget "$RG_TMP/rej_js.json" "d['codes']")" = "{'8': 1}" ]
	fi
	rg_check "refused messages never reached the handler" [ "$(calls)" = "$before" ]
	[ "$(stored g_lim)" = 3000 ] && [ "$(rg_stat g_lim admitted_rows)" = 3000 ]
	rg_check_rc $? "g_lim: 3,000 rows stored = admitted"
	# grpc-go retries a call above the GOAWAY's last stream id once,
	# transparently, on a new connection: refused again
	rej=$(rg_stat g_lim rejected_requests) lo=1 hi=2
	[ -z "$JS" ] || lo=2 hi=3
	[ "$rej" -ge $lo ] && [ "$rej" -le $hi ] && [ "$(rg_stat g_lim rejected_rows)" = $((rej * 10)) ]
	rg_check_rc $? "g_lim: $rej messages rejected ($lo to $hi), 10 rows each"
	rg_check "every refusal closed its connection with GOAWAY" [ "$(rg_global h2_reject_closed)" = "$rej" ]
	rg_check "grpc-go: UNAVAILABLE" [ "$(rg_jget "$RG_TMP/rej_go.json" "d['codes']")" = "{'14': 1}" ]
fi

# Bytes the kernel cannot follow: DATA on stream 0 after the preface.
fc=$(rg_global h2_failclosed)
"$RG_PY" - "$RAW_PORT" >"$RG_TMP/bad.out" 2>&1 <<'PY' || rg_fail "bad h2: $(cat "$RG_TMP/bad.out")"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(9)[:3] + b"\x04" + bytes(5))
s.sendall(bytes([0, 0, 4, 0, 0, 0, 0, 0, 0]) + b"abcd")  # DATA on stream 0
got = b""
while True:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    if not b:
        break
    got += b
    i = got.find(b"\x07\x00\x00\x00\x00\x00")
    if i >= 3 and len(got) >= i + 14:
        break
i = got.find(b"\x07\x00\x00\x00\x00\x00")
assert i >= 3, got[:200]
code = struct.unpack(">I", got[i + 10:i + 14])[0]
print("goaway code", code, got[i + 14:i + 120])
assert code == 1 and b"HTTP/2 the kernel cannot follow" in got[i + 14:], got[i:i + 200]
PY
rg_log "$(cat "$RG_TMP/bad.out")"
rg_check "HTTP/2 not followed: GOAWAY PROTOCOL_ERROR, counted" [ "$(rg_global h2_failclosed)" = $((fc + 1)) ]

# The preface and SETTINGS split at each of its 32 byte offsets, and cut
# into single bytes at its start: the
# connection is still recognised and followed (an empty SETTINGS is
# acknowledged by the server, and egress frames that ACK).
acks=$(rg_global h2_out_settings_acks)
"$RG_PY" - "$RAW_PORT" >"$RG_TMP/split.out" 2>&1 <<'PY' || rg_fail "split: $(cat "$RG_TMP/split.out")"
import socket, sys, time
msg = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
# every offset, then the first bytes one at a time ("P", "R", "I", ...)
for cuts in [(cut,) for cut in range(1, len(msg))] + [(1, 2), (1, 2, 3, 4)]:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for a, b in zip((0,) + cuts, cuts):
        s.sendall(msg[a:b])
        time.sleep(0.02)  # a segment of its own
    s.sendall(msg[cuts[-1]:])
    cut = cuts
    got = b""
    while b"\x00\x00\x00\x04\x01\x00\x00\x00\x00" not in got:
        b = s.recv(4096)
        assert b, "closed at cut %s: %r" % (cut, got[:80])
        got += b
    s.close()
print("acked at every cut")
PY
rg_check "preface split at every offset: followed" grep -q 'acked at every cut' "$RG_TMP/split.out"
rg_check "egress framed the server's 34 SETTINGS ACKs" \
	[ "$(rg_global h2_out_settings_acks)" = $((acks + 34)) ]
# Two calls of two databases (dbname; catalog/schema lower-cased) on one
# connection, all of its bytes split in two sends at every
# offset: each call answered OK, charged exactly as stored.
if [ -n "$CC" ]; then
	RG_GRPC_PY=$GRPC_PY "$RG_PY" "$RG_ROOT/tests/grpc/h2_probe.py" --port "$PORT" --scenario split \
		--from 1 --rows 5 --db g_split >"$RG_TMP/splits.json" 2>&1 || rg_fail "split: $(cat "$RG_TMP/splits.json")"
	rg_log "splits: $(cat "$RG_TMP/splits.json")"
	cuts=$(rg_jget "$RG_TMP/splits.json" "d['cuts']")
	rg_check "every split connection answered both calls OK ($cuts cuts)" \
		[ "$(rg_jget "$RG_TMP/splits.json" "d['ok'] == d['cuts'] > 100")" = True ]
	[ "$(stored g_split)" = $((cuts * 5)) ] && [ "$(rg_stat g_split admitted_rows)" = $((cuts * 5)) ]
	rg_check_rc $? "g_split: $((cuts * 5)) rows stored = admitted"
	[ "$(stored acme-split_b)" = $((cuts * 5)) ] && [ "$(rg_stat acme-split_b admitted_rows)" = $((cuts * 5)) ]
	rg_check_rc $? "acme-split_b (catalog/schema): $((cuts * 5)) rows stored = admitted"
else
	rg_log "no python3-grpcio here: the split-at-every-offset probe does not run"
fi
# The grpc-go server: admitted calls (4 and 8 in flight on one connection)
# stored = admitted; the seed example refused before its handler.
GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id g -db go_srv -calls 40 -rows 10 -concurrency 4 \
	>"$RG_TMP/gosrv.json" || rg_fail "go->go: $(cat "$RG_TMP/gosrv.json")"
[ "$(gstored go_srv)" = 400 ] && [ "$(rg_stat go_srv admitted_rows)" = 400 ]
rg_check_rc $? "grpc-go server, grpc-go client: 400 rows stored = admitted"
if [ -n "$JS" ]; then
	node "$JS_CLIENT" --target "$GT" --id h --db go_mux --calls 16 --concurrency 8 --rows 100 \
		>"$RG_TMP/gomux.json" || rg_fail "js->go: $(cat "$RG_TMP/gomux.json")"
	[ "$(gstored go_mux)" = 1600 ] && [ "$(rg_stat go_mux admitted_rows)" = 1600 ]
	rg_check_rc $? "grpc-go server, grpc-js 8 in flight: 1,600 rows stored = admitted"
else
	GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id h -db go_mux -calls 16 -rows 100 -concurrency 8 \
		>"$RG_TMP/gomux.json" || rg_fail "go->go, 8 in flight: $(cat "$RG_TMP/gomux.json")"
	[ "$(gstored go_mux)" = 1600 ] && [ "$(rg_stat go_mux admitted_rows)" = 1600 ]
	rg_check_rc $? "grpc-go server, grpc-go 8 in flight: 1,600 rows stored = admitted"
fi
# 1,000 streams on one connection, 16 in flight
GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id k -db go_many -calls 1000 -rows 2 -concurrency 16 \
	>"$RG_TMP/gomany.json" || rg_fail "1,000 streams: $(cat "$RG_TMP/gomany.json")"
[ "$(gstored go_many)" = 2000 ] && [ "$(rg_stat go_many admitted_rows)" = 2000 ] &&
	[ "$(rg_stat go_many admitted_requests)" = 1000 ]
rg_check_rc $? "1,000 streams on one connection: 2,000 rows stored = admitted, 1,000 messages"
GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id i -db go_lim -calls 1 -rows 3000 -no-retry \
	>"$RG_TMP/goseed.json" || rg_fail "3,000 rows on a full bucket: $(cat "$RG_TMP/goseed.json")"
before=$(gcalls) closed=$(rg_global h2_reject_closed)
if [ -n "$JS" ]; then
	node "$JS_CLIENT" --target "$GT" --id j --db go_lim --calls 1 --rows 10 --no-retry \
		>"$RG_TMP/gorej.json" && rg_fail "a message past the limit was admitted: $(cat "$RG_TMP/gorej.json")"
	lo=1 hi=1
else
	# grpc-go: refused, retried once transparently on a new connection
	GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id j -db go_lim -calls 1 -rows 10 -no-retry \
		>"$RG_TMP/gorej.json" && rg_fail "a message past the limit was admitted: $(cat "$RG_TMP/gorej.json")"
	rg_check "grpc-go client: UNAVAILABLE" [ "$(rg_jget "$RG_TMP/gorej.json" "d['codes']")" = "{'14': 1}" ]
	lo=1 hi=2
fi
rg_log "grpc-go server's refusal: $(cat "$RG_TMP/gorej.json")"
rej=$(rg_stat go_lim rejected_requests)
rg_check "grpc-go server: the refused message never reached the handler" [ "$(gcalls)" = "$before" ]
[ "$(gstored go_lim)" = 3000 ] && [ "$(rg_stat go_lim admitted_rows)" = 3000 ] &&
	[ "$rej" -ge $lo ] && [ "$rej" -le $hi ]
rg_check_rc $? "grpc-go server: 3,000 rows stored = admitted, $rej rejected ($lo to $hi)"
rg_check "grpc-go server: every refusal closed its connection with GOAWAY" \
	[ "$(rg_global h2_reject_closed)" = $((closed + rej)) ]
# After a kernel GOAWAY nothing more of the connection reaches the server
# (docs/grpc.md#h2-close).  A long-lived HandleRequests call (a message
# every 300 ms) and a later call refused on the same connection (GOAWAY
# ENHANCE_YOUR_CALM, last stream id 1, a client's id): grpc-go drains,
# keeping the long-lived call, named possibly processed, whose next
# messages never reach the server, so only rowgated's reset after
# --grpc-close-grace (2 s) ends it; grpc-js (nghttp2) ends every stream
# of a connection whose GOAWAY carries an error code, at once, with
# RESOURCE_EXHAUSTED ("Bandwidth exhausted"), which its retryPolicy
# retries.  (An even last stream id, refused - 1 before, made grpc-go
# close its transport and nghttp2 answer a protocol error: code 13.)
rg_ctl limit set go_spent 1 >/dev/null || rg_fail "limit set"
GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -id ws -db go_spent -calls 1 -rows 50 -no-retry \
	>"$RG_TMP/spent.json" ||
	rg_fail "the go_spent seed: $(cat "$RG_TMP/spent.json")"
for c in go js; do
	[ $c = go ] || [ -n "$JS" ] || continue
	resets0=$(rg_global h2_goaway_resets)
	if [ $c = go ]; then
		"$GO_CLIENT" -target "$GT" -id w -db go_free,go_spent -mode stream -per-call 5 -gap 300ms \
			-calls 2 -concurrency 2 -stagger 100ms -rows 10 -no-retry >"$RG_TMP/long-$c.json"
	else
		timeout 120 node "$JS_CLIENT" --target "$GT" --id wj --db go_free,go_spent --mode stream \
			--per-call 5 --gap-ms 300 --calls 2 --concurrency 2 --stagger-ms 100 --rows 10 \
			--no-retry >"$RG_TMP/long-$c.json"
	fi
	rg_log "grpc-$c, a long-lived stream and a refused one on one connection: $(cat "$RG_TMP/long-$c.json"), h2_goaway_resets +$(($(rg_global h2_goaway_resets) - resets0))"
	if [ $c = go ]; then
		[ "$(rg_jget "$RG_TMP/long-$c.json" "(d['codes'], 1.5 <= d['seconds'] < 30)")" = "({'14': 2}, True)" ] &&
			[ $(($(rg_global h2_goaway_resets) - resets0)) = 1 ]
		rg_check_rc $? "grpc-go: a long-lived stream named possibly processed by a kernel GOAWAY: UNAVAILABLE $(rg_jget "$RG_TMP/long-$c.json" "d['seconds']") s later, reset by rowgated (grace 2 s)"
	else
		rg_check "grpc-js: both calls RESOURCE_EXHAUSTED at once ($(rg_jget "$RG_TMP/long-$c.json" "d['seconds']") s)" \
			[ "$(rg_jget "$RG_TMP/long-$c.json" "(d['codes'], d['seconds'] < 30)")" = "({'8': 2}, True)" ]
	fi
done
# A message the kernel cannot read (grpc-encoding gzip, under
# --grpc-compressed refuse) fails closed with
# GOAWAY PROTOCOL_ERROR, and never hangs until its deadline (30 s here):
# - its HEADERS passed in an earlier skb (the usual case): the GOAWAY names
#   the stream possibly processed, as the connection's last; grpc-go waits
#   for an answer that never comes (the body never reached the server)
#   until rowgated resets the connection after --grpc-close-grace (2 s);
# - HEADERS and message in one skb (a busy receiver coalesces them):
#   nothing of the stream reached the server, the GOAWAY's last stream is
#   below it, and grpc-go fails the call at once ("the connection is
#   draining"); there is nothing to reset.
# Either way UNAVAILABLE, retryable.
resets0=$(rg_global h2_goaway_resets) fc=$(rg_global h2_failclosed)
"$GO_CLIENT" -target "$GT" -id z -db go_free -gzip -deadline 30s -calls 1 -rows 10 -no-retry \
	>"$RG_TMP/gzip.json" && rg_fail "a gzip message passed: $(cat "$RG_TMP/gzip.json")"
gz_resets=$(($(rg_global h2_goaway_resets) - resets0))
rg_log "grpc-go, a gzip message: $(cat "$RG_TMP/gzip.json"), h2_goaway_resets +$gz_resets"
gz_waited() { [ "$(rg_jget "$RG_TMP/gzip.json" "(d['codes'], 1.5 <= d['seconds'] < 20)")" = "({'14': 1}, True)" ] && [ "$gz_resets" = 1 ]; }
gz_at_once() { [ "$(rg_jget "$RG_TMP/gzip.json" "(d['codes'], d['seconds'] < 1.5, 'draining' in d.get('last_error', ''))")" = "({'14': 1}, True, True)" ] && [ "$gz_resets" = 0 ]; }
# counted as fail-closed (seen once at +0 right after the call, in a run
# with another test loading the machine: looked at until it is there)
failclosed_above() { [ "$(rg_global h2_failclosed)" -gt "$1" ]; }
gz_failed_closed() { { gz_waited || gz_at_once; } && rg_wait_for 3 failclosed_above "$fc"; }
rg_check "grpc-go: a gzip message fails closed, its call UNAVAILABLE $(rg_jget "$RG_TMP/gzip.json" "d['seconds']") s later (reset after the 2 s grace, or at once if the server saw nothing of it), not at its deadline" \
	gz_failed_closed
rg_log "h2_failclosed +$(($(rg_global h2_failclosed) - fc)), h2_reject_closed $(rg_global h2_reject_closed)"
# A client that connects and closes before its preface, while the server
# has not accepted yet: 6.1 hands the verdict the FIN as an empty skb
# before the grpc-go server writes its SETTINGS.  Those are HTTP/2 all
# the same: the connection never started (egress_lost stays 0 below;
# the walk took it in 1 of 5 runs in the 6.1 guest before).
kill -STOP "$GSRV"
"$RG_PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$GPORT" ||
	{ kill -CONT "$GSRV"; rg_fail "cannot connect to $GPORT"; }
kill -CONT "$GSRV"
fin_closed() { [ -z "$(ss -Htn state close-wait "( sport = :$GPORT )")" ]; }
rg_wait_for 20 fin_closed || rg_fail "the grpc-go server kept a connection its client closed"
rg_check "the HTTP/1 egress walk never took an HTTP/2 connection (the grpc-go server writes first)" [ "$(rg_global egress_lost)" = 0 ]
[ "$(rg_global h2_out_lost)" = 0 ] && [ "$(rg_global h2_out_frames)" -gt 2000 ]
rg_check_rc $? "egress followed every HTTP/2 server's frames ($(rg_global h2_out_frames)), each SETTINGS ACK matched to a SETTINGS the verdict passed"
rg_check "no internal errors" [ "$(rg_global internal_errors)" = 0 ]
# every client is gone: sockops deletes each HTTP/2 connection's state
# when the server's socket closes (the servers close idle ones quickly)
h2_states() { bpftool -j map dump pinned "$RG_BPFFS/$1" | "$RG_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
no_h2_state() { [ "$(h2_states h2_conns)" = 0 ] && [ "$(h2_states h2_out)" = 0 ]; }
rg_wait_for 30 no_h2_state
rg_check "closed HTTP/2 connections leave no HTTP/2 state ($(h2_states h2_conns) + $(h2_states h2_out) left)" no_h2_state

# --egress off: nothing follows the server's side, so a refusal cannot be
# answered on its connection (--grpc-reject keep stands down) and closes
# it with GOAWAY; rowgated says so, and why frames over 16 KB then fail
# closed, when it starts
rg_stop_rowgated
RG_PORT=$PORT rg_start_rowgated --grpc "$PORT" --port "$GPORT=greptimedb" --grpc "$GPORT" --egress off
rg_check "--egress off on gRPC ports: rowgated warns that refusals close and large frames fail closed" \
	grep -q "egress off: a refused gRPC message closes its connection (GOAWAY).*SETTINGS_MAX_FRAME_SIZE" "$RG_TMP/rowgated.log"
rg_ctl limit set go_off 1 >/dev/null || rg_fail "limit set"
"$GO_CLIENT" -target "$GT" -id off -db go_off -calls 1 -rows 100 -no-retry >"$RG_TMP/off-seed.json" 2>&1
rg_check "go_off: the first message admitted on a full bucket" [ "$(rg_jget "$RG_TMP/off-seed.json" "d['ok']")" = 1 ]
kept0=$(rg_global h2_reject_kept) closed0=$(rg_global h2_reject_closed) before=$(gcalls)
"$GO_CLIENT" -target "$GT" -id off -db go_off -calls 1 -rows 10 -no-retry >"$RG_TMP/off.json" 2>&1
rg_log "--egress off, refused: $(cat "$RG_TMP/off.json")"
[ "$(rg_jget "$RG_TMP/off.json" "d['codes']")" = "{'14': 1}" ] &&
	[ "$(rg_global h2_reject_kept)" = "$kept0" ] && [ "$(rg_global h2_reject_closed)" -gt "$closed0" ] &&
	[ "$(gcalls)" = "$before" ] && [ "$(rg_stat go_off rejected_requests)" -ge 1 ]
rg_check_rc $? "--egress off: the refused call UNAVAILABLE, its connection closed with GOAWAY (not kept), never handled"
rg_pass
