#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Compressed GreptimeDatabase messages under rowgated --grpc-compressed debt,
# the default (docs/grpc.md#compressed): a message sent with grpc-encoding gzip names
# its database inside the compressed bytes (zstd too), so the kernel passes it
# uncharged and sends a copy to rowgated, which decodes it with the walk
# the kernel runs over plain messages and charges its rows to the database
# it names.  Checked against a grpc-go server with grpc-go and grpc-js
# clients: every compressed message is stored and charged exactly (unary,
# streams alternating two databases, one connection), a database pushed
# into debt by compressed writes has its next plain write refused
# (RESOURCE_EXHAUSTED, never handled), later compressed writes are refused
# on the databases the connection, or a new connection's client address,
# named before, and a bad --grpc-compressed value is a clear error.
# --grpc-compressed refuse fails closed: grpc_limit.sh.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl bpftool "$RG_PY"
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
rg_require_grpc_go client server
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
JS=1
if ! command -v node >/dev/null 2>&1 || [ ! -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ]; then
	[ -n "${VMTEST:-}" ] || rg_skip "needs node and @grpc/grpc-js in tests/grpc/node_modules (make deps)"
	rg_log "no grpc-js here: the grpc-js client's case does not run"
	JS=
fi

out=$("$RG_ROWGATED" --grpc-compressed maybe 2>&1) && rg_fail "--grpc-compressed maybe accepted"
rg_check "--grpc-compressed maybe: $out" grep -q "expected refuse or debt" <<<"$out"
"$RG_ROWGATED" --help | grep -q -- "--grpc-compressed debt|refuse" ||
	rg_fail "--help does not document --grpc-compressed"

rg_make_cgroup
rg_start_grpc_go_server

rg_mount_bpffs
# --grpc-compressed debt is the default
RG_PORT=$GPORT rg_start_rowgated --port "$GPORT=greptimedb" --grpc "$GPORT"
rg_check "the log says how compressed messages are treated: charged as debt by default" \
	grep -q "port $GPORT: greptimedb, gRPC (h2c) followed, compressed messages charged as debt" \
	"$RG_TMP/rowgated.log"
rg_ctl limit set gz_a 10000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set gz_b 10000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set gz_z 10000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set acme-gz_js 10000000 >/dev/null || rg_fail "limit set"
# 3,000 rows at 100 rows/s leave 29 s of debt: the refusal checked below
# does not race the bucket's refill (at 1,000 rows/s, 2 s ran out once
# between the charge and the next client's first call)
rg_ctl limit set gz_lim 100 >/dev/null || rg_fail "limit set"
rg_ctl limit set gz_gate 10 >/dev/null || rg_fail "limit set"
rg_ctl limit set gz_m1 10000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set gz_n1 10000000 >/dev/null || rg_fail "limit set"
# rowgated's charge follows the server's answer; slower under TCG
SETTLE=10
[ "${VMTEST:-0}" != 1 ] || SETTLE=60

gstored() { curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['rows'].get(sys.argv[1], 0))" "$1"; }
gcalls() { curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['calls'])"; }
GT=127.0.0.1:$GPORT
# The verdict judges a new connection's compressed messages on what its
# client address's connections named (h2_cdb_peer): legs that need a
# client with nothing learned take an address of their own.
SRC=127.0.0.1
go_client() { GRPC_GO_RETRY=on "$GO_CLIENT" -target "$GT" -source "$SRC" "$@"; }
# calls of one client this far apart: rowgated has learned the database of
# the first one's copy before the next
GAP=300ms
[ "${VMTEST:-0}" != 1 ] || GAP=1500ms
# rowgated charges a copy after the server stored it: wait for the charge
charged_is() { [ "$(rg_stat "$1" admitted_rows)" = "$2" ]; }
copied0=$(rg_global h2_compressed_copied)

# Unary, grpc-go, gzip: every message stored and charged as stored.
go_client -id a -db gz_a -gzip -calls 10 -rows 50 >"$RG_TMP/a.json" ||
	rg_fail "gzip unary: $(cat "$RG_TMP/a.json")"
rg_log "grpc-go, 10 gzip messages of 50 rows: $(cat "$RG_TMP/a.json")"
rg_check "grpc-go gzip unary: 500 rows stored" [ "$(gstored gz_a)" = 500 ]
rg_wait_for $SETTLE charged_is gz_a 500
rg_check "grpc-go gzip unary: 500 rows charged to gz_a ($(rg_stat gz_a admitted_rows))" charged_is gz_a 500

# Streams: each call's messages name gz_a and gz_b in turn, two calls in
# flight on one connection; each message charged to its own database.
go_client -id s -db gz_a,gz_b -gzip -mode stream -calls 4 -per-call 4 -rows 25 -concurrency 2 \
	>"$RG_TMP/s.json" || rg_fail "gzip streams: $(cat "$RG_TMP/s.json")"
rg_log "grpc-go, 4 gzip streams of 4 messages, gz_a and gz_b in turn: $(cat "$RG_TMP/s.json")"
rg_check "streams: 200 more rows stored to gz_a, 200 to gz_b" \
	eval '[ "$(gstored gz_a)" = 700 ] && [ "$(gstored gz_b)" = 200 ]'
rg_wait_for $SETTLE eval 'charged_is gz_a 700 && charged_is gz_b 200'
rg_check "streams: each database charged what it stored (gz_a $(rg_stat gz_a admitted_rows), gz_b $(rg_stat gz_b admitted_rows))" \
	eval 'charged_is gz_a 700 && charged_is gz_b 200'

# Large messages: 20,000 rows each, many 16 KB frames and skbs, two calls'
# frames interleaved on one connection.
go_client -id l -db gz_b -gzip -calls 4 -rows 20000 -concurrency 2 >"$RG_TMP/l.json" ||
	rg_fail "large gzip messages: $(cat "$RG_TMP/l.json")"
rg_log "grpc-go, 4 gzip messages of 20,000 rows, 2 in flight: $(cat "$RG_TMP/l.json")"
rg_wait_for $SETTLE charged_is gz_b 80200
rg_check "large messages: 80,200 rows stored to gz_b and charged ($(gstored gz_b) stored, $(rg_stat gz_b admitted_rows) charged)" \
	eval '[ "$(gstored gz_b)" = 80200 ] && charged_is gz_b 80200'
rg_check "h2_compressed_copied counts the 30 messages" \
	[ $(($(rg_global h2_compressed_copied) - copied0)) = 30 ]

# zstd, the other coding GreptimeDB accepts: grpc-go with klauspost's
# encoder (frames without a content size), small and many-frame messages.
go_client -id z -db gz_z -zstd -calls 10 -rows 50 >"$RG_TMP/z.json" ||
	rg_fail "zstd unary: $(cat "$RG_TMP/z.json")"
go_client -id zl -db gz_z -zstd -calls 2 -rows 20000 -concurrency 2 >"$RG_TMP/zl.json" ||
	rg_fail "large zstd messages: $(cat "$RG_TMP/zl.json")"
rg_log "grpc-go, zstd: 10 messages of 50 rows $(cat "$RG_TMP/z.json"), 2 of 20,000 rows $(cat "$RG_TMP/zl.json")"
rg_wait_for $SETTLE charged_is gz_z 40500
rg_check "grpc-go zstd: 40,500 rows stored to gz_z and charged ($(gstored gz_z) stored, $(rg_stat gz_z admitted_rows) charged)" \
	eval '[ "$(gstored gz_z)" = 40500 ] && charged_is gz_z 40500'

# grpc-js, gzip, a catalog-schema name.
if [ -n "$JS" ]; then
	timeout 120 node "$JS_CLIENT" --target "$GT" --id j --db acme-gz_js --gzip --calls 5 --rows 20 \
		>"$RG_TMP/js.json" || rg_fail "grpc-js gzip: $(cat "$RG_TMP/js.json")"
	rg_log "grpc-js, 5 gzip messages of 20 rows: $(cat "$RG_TMP/js.json")"
	rg_check "grpc-js gzip: 100 rows stored" [ "$(gstored acme-gz_js)" = 100 ]
	rg_wait_for $SETTLE charged_is acme-gz_js 100
	rg_check "grpc-js gzip: 100 rows charged to acme-gz_js ($(rg_stat acme-gz_js admitted_rows))" \
		charged_is acme-gz_js 100
fi

# Debt: a compressed message of 3,000 rows to a database of 100 rows/s
# passes (the kernel cannot read its database) and is charged after the
# fact; the database's next plain write is refused and never handled.
go_client -id d -db gz_lim -gzip -calls 1 -rows 3000 -no-retry >"$RG_TMP/d.json" ||
	rg_fail "gzip 3,000 rows: $(cat "$RG_TMP/d.json")"
rg_wait_for $SETTLE charged_is gz_lim 3000
rg_check "3,000 compressed rows stored and charged to gz_lim ($(gstored gz_lim) stored, $(rg_stat gz_lim admitted_rows) charged)" \
	eval '[ "$(gstored gz_lim)" = 3000 ] && charged_is gz_lim 3000'
calls0=$(gcalls)
go_client -id p -db gz_lim -calls 1 -rows 10 -no-retry >"$RG_TMP/p.json" &&
	rg_fail "a plain write to a database in debt passed: $(cat "$RG_TMP/p.json")"
rg_log "a plain write to gz_lim in debt: $(cat "$RG_TMP/p.json")"
rg_check "the plain write is refused RESOURCE_EXHAUSTED, never handled; its answer names the 10 rows read" \
	eval '[ "$(rg_jget "$RG_TMP/p.json" "d[\"codes\"]")" = "{'"'"'8'"'"': 1}" ] && [ "$(gcalls)" = "$calls0" ] && [ "$(gstored gz_lim)" = 3000 ] &&
	      [ "$(rg_jget "$RG_TMP/p.json" "\"rejected 10 rows\" in d[\"last_error\"]")" = True ]'
# The gate: a connection's later compressed messages are judged on the
# database its first one named.  3 calls of 500 rows at 10 rows/s, apart:
# the first passes (nothing learned yet) and leaves 49 s of debt, the next
# two are refused on one connection, never handled.
calls0=$(gcalls) SRC=127.0.0.2
go_client -id g -db gz_gate -gzip -calls 3 -rows 500 -call-gap $GAP -no-retry >"$RG_TMP/g.json" &&
	rg_fail "compressed writes past the debt passed: $(cat "$RG_TMP/g.json")"
rg_log "3 gzip calls of 500 rows to gz_gate (10 rows/s), $GAP apart: $(cat "$RG_TMP/g.json")"
rg_wait_for $SETTLE charged_is gz_gate 500
# A compressed message's rows are unread: the answer names an estimate
# from its length, as HTTP's 429 does for a coded body.
rg_check "the gate: the first compressed call stored and charged, the next two refused RESOURCE_EXHAUSTED with the 429's sentence (an estimated rows), never handled" \
	eval '[ "$(rg_jget "$RG_TMP/g.json" "(d[\"ok\"], d[\"codes\"], \"gz_gate\" in d[\"last_error\"], \"rejected an estimated \" in d[\"last_error\"])")" = "(1, {'"'"'8'"'"': 2}, True, True)" ] &&
	      [ "$(gstored gz_gate)" = 500 ] && charged_is gz_gate 500 && [ $(($(gcalls) - calls0)) = 1 ]'
# A connection whose compressed messages name two databases is judged on
# both: one in debt refuses its compressed writes to the other too (a
# refusal the server might not have made, never an admission it would not
# have).  gz_m1 is free, gz_g2 takes 10 rows/s: gz_m1 passes (nothing
# learned), gz_g2 passes on gz_m1's quota and leaves 49 s of debt, then
# both are refused.
rg_ctl limit set gz_g2 10 >/dev/null || rg_fail "limit set"
calls0=$(gcalls) SRC=127.0.0.3
go_client -id m -db gz_m1,gz_g2 -gzip -calls 4 -rows 500 -call-gap $GAP -no-retry >"$RG_TMP/m.json" &&
	rg_fail "a connection naming a database in debt went on: $(cat "$RG_TMP/m.json")"
rg_log "4 gzip calls naming gz_m1 and gz_g2 in turn, $GAP apart: $(cat "$RG_TMP/m.json")"
rg_wait_for $SETTLE eval 'charged_is gz_m1 500 && charged_is gz_g2 500'
rg_check "two databases on one connection: each charged its own, then both refused while gz_g2 is in debt, never handled" \
	eval '[ "$(rg_jget "$RG_TMP/m.json" "(d[\"ok\"], d[\"codes\"], \"gz_g2\" in d[\"last_error\"])")" = "(2, {'"'"'8'"'"': 2}, True)" ] &&
	      [ "$(gstored gz_m1)" = 500 ] && [ "$(gstored gz_g2)" = 500 ] &&
	      charged_is gz_m1 500 && charged_is gz_g2 500 && [ $(($(gcalls) - calls0)) = 2 ]'
# A compressed message whose last bytes come alone: grpc-go cuts DATA
# frames at the flow-control window (65,535 bytes on a new stream), so a
# message gzipped to 65,530 + 10 bytes (-msg-bytes) sends a short last
# frame, too short to rewrite.  The first of 4 calls passes (nothing
# learned) and leaves debt; the next three are refused at the frame before
# (docs/grpc.md#h2-short-tail), the connection kept, never handled.  A
# refused message's copy ends, and rowgated counts its rows as rejected,
# only if the client still sends its last bytes: grpc-go drops them when
# the refusal's answer comes before the window update that lets them go
# (a race: under load it does).
rg_ctl limit set gz_tail 10 >/dev/null || rg_fail "limit set"
# the frame before is judged at its end, or at its header when it is over
# 4 KB and cut across skbs (h2_reject_early)
tail_early() { echo $(($(rg_global h2_reject_short_tail) + $(rg_global h2_reject_early))); }
calls0=$(gcalls) tail0=$(rg_global h2_reject_short_tail) early0=$(rg_global h2_reject_early)
te0=$(tail_early) fb0=$(rg_global h2_reject_fallback) copied_t0=$(rg_global h2_compressed_copied)
tail_copies() { echo $(($(rg_global h2_compressed_copied) - copied_t0)); }
tail_rejected_ok() { [ "$(rg_stat gz_tail rejected_rows)" = $((($(tail_copies) - 1) * 2000)) ]; }
SRC=127.0.0.4
go_client -id t -db gz_tail -gzip -calls 4 -rows 2000 -msg-bytes $((65535 - 5 + 10)) -call-gap $GAP \
	-no-retry >"$RG_TMP/t.json" && rg_fail "compressed writes past the debt passed: $(cat "$RG_TMP/t.json")"
rg_log "4 gzip calls of 2,000 rows, 65,545 bytes each on the wire, to gz_tail (10 rows/s): $(cat "$RG_TMP/t.json"), h2_reject_short_tail +$(($(rg_global h2_reject_short_tail) - tail0)), h2_reject_early +$(($(rg_global h2_reject_early) - early0))"
rg_wait_for $SETTLE eval 'charged_is gz_tail 2000 && tail_rejected_ok'
rg_log "gz_tail: $(tail_copies) copies ended, $(rg_stat gz_tail rejected_rows) rejected rows counted from them"
rg_check "short last frames: the first call stored and charged, the next three refused at the frame before (RESOURCE_EXHAUSTED, no fallback), never handled; 2,000 rejected rows counted from each refused copy whose last bytes came" \
	eval '[ "$(rg_jget "$RG_TMP/t.json" "(d[\"ok\"], d[\"codes\"])")" = "(1, {'"'"'8'"'"': 3})" ] &&
	      [ "$(rg_jget "$RG_TMP/t.json" "\"rejected an estimated $(((65540 + 1) / 2)) rows\" in d[\"last_error\"]")" = True ] &&
	      [ $(($(tail_early) - te0)) = 3 ] && [ "$(rg_global h2_reject_fallback)" = "$fb0" ] &&
	      [ "$(gstored gz_tail)" = 2000 ] && charged_is gz_tail 2000 &&
	      [ "$(rg_stat gz_tail rejected_requests)" = 3 ] &&
	      [ "$(tail_copies)" -ge 1 ] && [ "$(tail_copies)" -le 4 ] && tail_rejected_ok &&
	      [ $(($(gcalls) - calls0)) = 1 ]'
TAIL_COPIES=$(tail_copies)

# A connection per call (a client that reconnects for each write, or
# retries a GOAWAY on a new connection): each new connection is judged on
# what its client address's connections named.  4 processes of one call
# of 500 rows to gz_peer (10 rows/s), one after another from one address:
# the first passes (nothing learned) and leaves 49 s of debt; each later
# one, on a connection of its own, is refused, never handled.
rg_ctl limit set gz_peer 10 >/dev/null || rg_fail "limit set"
calls0=$(gcalls) SRC=127.0.0.6
go_client -id c0 -db gz_peer -gzip -calls 1 -rows 500 -no-retry >"$RG_TMP/c0.json" ||
	rg_fail "the first connection's compressed write: $(cat "$RG_TMP/c0.json")"
rg_wait_for $SETTLE charged_is gz_peer 500
refused_calls=0
for i in 1 2 3; do
	go_client -id c$i -db gz_peer -gzip -calls 1 -rows 500 -no-retry >"$RG_TMP/c$i.json" &&
		rg_fail "connection $((i + 1)) passed a compressed write while gz_peer is in debt: $(cat "$RG_TMP/c$i.json")"
	rg_log "connection $((i + 1)) of 127.0.0.6: $(cat "$RG_TMP/c$i.json")"
	[ "$(rg_jget "$RG_TMP/c$i.json" "(d[\"codes\"], \"gz_peer\" in d[\"last_error\"])")" = "({'8': 1}, True)" ] &&
		refused_calls=$((refused_calls + 1))
done
rg_check "a connection per call: the first stored and charged, each of the 3 later connections refused RESOURCE_EXHAUSTED naming gz_peer, never handled ($refused_calls refused)" \
	eval '[ "$refused_calls" = 3 ] && [ "$(gstored gz_peer)" = 500 ] && charged_is gz_peer 500 &&
	      [ $(($(gcalls) - calls0)) = 1 ]'

# More databases on one connection than the verdict follows (8): the
# connection fails closed at its next compressed message, counted and
# logged.  The call then fails UNAVAILABLE when rowgated resets the
# connection -- or, when its HEADERS came in the skb the GOAWAY replaced
# (the server never saw the stream), grpc-go retries it on a new
# connection, judged there on the client address's newest 8 databases
# (none in debt), and it is stored and charged (docs/grpc.md#compressed).
f0=$(rg_global h2_compressed_dbs_full) fc0=$(rg_global h2_failclosed)
"$GO_CLIENT" -target "$GT" -source 127.0.0.5 -id n -db gz_n1,gz_n2,gz_n3,gz_n4,gz_n5,gz_n6,gz_n7,gz_n8,gz_n9,gz_n1 \
	-gzip -calls 10 -rows 10 -call-gap $GAP -no-retry >"$RG_TMP/n.json"
rg_log "10 gzip calls naming 9 databases, $GAP apart: $(cat "$RG_TMP/n.json"), h2_compressed_dbs_full +$(($(rg_global h2_compressed_dbs_full) - f0)), h2_failclosed +$(($(rg_global h2_failclosed) - fc0))"
n1_settled() { charged_is gz_n1 "$(gstored gz_n1)"; }
rg_wait_for $SETTLE n1_settled
n1_outcome() {
	case "$(rg_jget "$RG_TMP/n.json" "(d[\"ok\"], d[\"codes\"])")" in
	"(9, {'14': 1})") [ "$(gstored gz_n1)" = 10 ] ;; # reset: failed UNAVAILABLE
	"(10, {})") [ "$(gstored gz_n1)" = 20 ] ;;       # retried on a new connection
	*) false ;;
	esac
}
rg_check "a ninth database: the connection fails closed at its next compressed message, counted, logged; the call fails UNAVAILABLE or is retried on a new connection, stored and charged there" \
	eval '[ $(($(rg_global h2_compressed_dbs_full) - f0)) = 1 ] && [ $(($(rg_global h2_failclosed) - fc0)) = 1 ] &&
	      grep -q "compressed messages name more than 8 databases (gz_n9 too)" "$RG_TMP/rowgated.log" &&
	      n1_outcome && n1_settled'

# compressed messages whose copies ended above, and the retry of the tenth
SENT=$((64 + TAIL_COPIES))
[ "$(rg_jget "$RG_TMP/n.json" "d[\"ok\"]")" = 9 ] || SENT=$((SENT + 1))
[ -z "$JS" ] || SENT=$((SENT + 5))
rg_check "every compressed message copied ($(($(rg_global h2_compressed_copied) - copied0)) of $SENT), none lost" \
	eval '[ $(($(rg_global h2_compressed_copied) - copied0)) = $SENT ] &&
	      [ "$(rg_global h2_compressed_lost)" = 0 ]'
rg_pass
