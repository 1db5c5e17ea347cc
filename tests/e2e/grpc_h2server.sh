#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The kept-connection refusal of docs/grpc.md section 7, step 2, against
# an HTTP/2 server on the h2 crate (hyper 0.14's http2_only, what tonic
# and so GreptimeDB run): rg-greptime --grpc-port (tests/greptime).  The
# verdict rewrites the refused message's DATA frame into RST_STREAM(CANCEL)
# + an empty SETTINGS + unknown-type filler; egress answers trailers-only
# RESOURCE_EXHAUSTED at h2's SETTINGS ACK.  With grpc-go and grpc-js
# clients: refused calls fail with code 8, the 429's sentence and
# x-greptime-err-code 6001; no refused message reaches the handler; one
# connection per client run (the server counts the connections it
# accepted); with retryPolicy every row is stored once and stored rows =
# admitted rows, unary and HandleRequests; 1,000 refused streams on one
# connection (16 in flight) and 20 MB of refused DATA; no fallback.  More
# than 20 refused streams in flight would trip h2's limit on streams reset
# before the server accepted them (GOAWAY ENHANCE_YOUR_CALM, docs/grpc.md
# #h2-max-streams): egress tells the client at most 16 concurrent streams
# (rowgated --grpc-max-streams, default 16), so 64 calls in flight keep
# their connection against a server advertising more, or nothing.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl "$RG_PY"
GT_BIN=$RG_BUILD/greptime/rg-greptime
JS_CLIENT=$RG_ROOT/tests/grpc/client.js
[ -x "$GT_BIN" ] || rg_skip "needs $GT_BIN (cargo and Debian's librust-hyper-dev, librust-h2-dev, librust-tokio-dev; make)"
rg_require_grpc_go client
"$GT_BIN" --help | grep -q -- --grpc-port || rg_fail "$GT_BIN has no --grpc-port: rebuild"
# grpc-js needs node and npm's grpc-js; the vmtest guest has neither, and
# runs the grpc-go client alone
CLIENTS="go js"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$RG_ROOT/tests/grpc/node_modules/@grpc/grpc-js" ]; then
	[ -n "${VMTEST:-}" ] || rg_skip "needs node and @grpc/grpc-js in tests/grpc/node_modules (make deps)"
	rg_log "no grpc-js here: the grpc-js client does not run"
	CLIENTS=go
fi

out=$("$GT_BIN" --port 1 --grpc-port 1 2>&1) && rg_fail "rg-greptime accepted the same port twice"
rg_check "rg-greptime --grpc-port = --port: $out" grep -q "the same port" <<<"$out"
out=$("$GT_BIN" --port 1 --grpc-port x 2>&1) && rg_fail "rg-greptime accepted --grpc-port x"
rg_check "rg-greptime --grpc-port x: $out" grep -q "not a TCP port" <<<"$out"

rg_make_cgroup
HPORT=$(rg_free_port) || rg_fail "no free port"
GPORT=$(rg_free_port) || rg_fail "no free port"
HPORT2=$(rg_free_port) || rg_fail "no free port"
GPORT2=$(rg_free_port) || rg_fail "no free port"
[ "$(printf '%s\n' "$HPORT" "$GPORT" "$HPORT2" "$GPORT2" | sort -u | wc -l)" = 4 ] || rg_fail "ports collide"
DBS=public,h_spent,h_lim,h_retry,h_stream,h_free,u1_h_0,u2_h_0,u1_h_7,u2_h_7
(
	echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
	exec "$GT_BIN" --port "$HPORT" --grpc-port "$GPORT" --databases "$DBS"
) >"$RG_TMP/greptime.log" 2>&1 &
SRV=$!
rg_on_exit "kill -9 $SRV; wait $SRV"
# the same, advertising SETTINGS_MAX_CONCURRENT_STREAMS 16
(
	echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
	exec "$GT_BIN" --port "$HPORT2" --grpc-port "$GPORT2" --databases "$DBS" --grpc-max-streams 16
) >"$RG_TMP/greptime16.log" 2>&1 &
SRV2=$!
rg_on_exit "kill -9 $SRV2; wait $SRV2"
rg_wait_for 20 curl -sf "http://127.0.0.1:$HPORT/stats" || rg_fail "rg-greptime did not come up"
rg_wait_for 20 curl -sf "http://127.0.0.1:$HPORT2/stats" || rg_fail "rg-greptime (16 streams) did not come up"

sget() { curl -sf "http://127.0.0.1:${SHP:-$HPORT}/stats" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# rows stored in a database, all tables
stored() { curl -sf "http://127.0.0.1:$HPORT/stats" | "$RG_PY" -c "import json,sys; print(sum(json.load(sys.stdin)['rows'].get(sys.argv[1], {}).values()))" "$1"; }
T=127.0.0.1:$GPORT

# The server alone: unary and HandleRequests stored, an unknown method is
# UNIMPLEMENTED, a message that is not a GreptimeRequest INTERNAL
env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id a -db public -calls 2 -rows 7 >"$RG_TMP/bare.json" 2>&1 ||
	rg_fail "bare unary: $(cat "$RG_TMP/bare.json")"
env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id b -db public -mode stream -calls 2 -per-call 3 -rows 5 \
	>"$RG_TMP/bare-stream.json" 2>&1 || rg_fail "bare HandleRequests: $(cat "$RG_TMP/bare-stream.json")"
[ "$(rg_jget "$RG_TMP/bare.json" "d['ok']")" = 2 ] && [ "$(rg_jget "$RG_TMP/bare-stream.json" "d['ok']")" = 2 ] &&
	[ "$(stored public)" = 44 ] && [ "$(sget calls)" = 4 ] && [ "$(sget messages)" = 8 ]
rg_check_rc $? "without rowgate: 2 Handle + 2 HandleRequests calls stored 44 rows in public"
# raw h2c with curl: the status and the message are in the headers
h2() { curl -sS --http2-prior-knowledge -o /dev/null -D - -H 'content-type: application/grpc' -H 'te: trailers' \
	--data-binary "$2" "http://$T/greptime.v1.GreptimeDatabase/$1"; }
if curl -V | grep -qw HTTP2; then
	out=$(h2 Nope x 2>&1)
	rg_check "unknown method: grpc-status 12 ($out)" grep -qi '^grpc-status: 12' <<<"$out"
	rg_check "malformed message: grpc-status 13" \
		grep -qi '^grpc-status: 13' <<<"$(printf '\0\0\0\0\2\x0b\x0b' | h2 Handle @-)"
	rg_check "a truncated message: grpc-status 13" grep -qi '^grpc-status: 13' <<<"$(printf '\0\0\0\0\5' | h2 Handle @-)"
else
	rg_log "curl without HTTP/2 here: the error statuses are not checked"
fi

rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" --port "$GPORT2=greptimedb" --grpc "$GPORT2"
SEED_LIMIT=$(rg_seed_limit)
rg_ctl limit set h_lim $SEED_LIMIT >/dev/null || rg_fail "limit set"
rg_ctl limit set h_retry 2000 >/dev/null || rg_fail "limit set"

# run a client, check it used one connection, as rowgate and the server
# saw it: run_one OUT CMD...
run_one() {
	local sconns
	sconns=$(sget conns)
	rg_h2_client "$@"
	[ "$RG_CONNS_NEW" = 1 ] && [ "$(sget conns)" = $((sconns + 1)) ]
	rg_check_rc $? "$(basename "$1"): one connection for all its calls (rowgate and rg-greptime)"
}
msg="Ingestion rate limit exceeded for database"

# h_spent: limit 1 row/s, 1,000 rows of debt: refused from here on
rg_ctl limit set h_spent 1 >/dev/null || rg_fail "limit set"
run_one "$RG_TMP/spent.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id z -db h_spent -calls 1 -rows 1000 -no-retry
rg_check "h_spent: 1,000 rows admitted on a full bucket" [ "$(rg_jget "$RG_TMP/spent.json" "d['ok']")" = 1 ]

# 3,000 rows admitted on a full bucket, the next messages refused with
# RESOURCE_EXHAUSTED, their handler never called
run_one "$RG_TMP/seed.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id s -db h_lim -calls 1 -rows 3000 -no-retry
rg_check "h_lim: 3,000 rows admitted on a full bucket" [ "$(rg_jget "$RG_TMP/seed.json" "d['ok']")" = 1 ]
before=$(sget calls)
run_one "$RG_TMP/rej-go.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id r -db h_lim -calls 3 -rows 10 -no-retry
[ "$CLIENTS" = go ] ||
	run_one "$RG_TMP/rej-js.json" node "$JS_CLIENT" --target "$T" --id q --db h_spent --calls 3 --rows 10 --no-retry
for c in $CLIENTS; do
	f=$RG_TMP/rej-$c.json d=h_lim
	[ $c = js ] && d=h_spent
	[ "$(rg_jget "$f" "d['codes']")" = "{'8': 3}" ] && [ "$(rg_jget "$f" "d.get('err_code')")" = 6001 ] &&
		grep -q "$msg '$d': rejected 10 rows" "$f"
	rg_check_rc $? "grpc-$c client: 3 calls RESOURCE_EXHAUSTED, x-greptime-err-code 6001, the 429's sentence"
done
rg_check "refused messages never reached the handler" [ "$(sget calls)" = "$before" ]
[ "$(stored h_lim)" = 3000 ] && [ "$(rg_stat h_lim admitted_rows)" = 3000 ] &&
	[ "$(rg_stat h_lim rejected_requests)" = 3 ]
rg_check_rc $? "h_lim: 3,000 rows stored = admitted, 3 rejected"

# at a limit with retries: every row stored once; a call whose 5 attempts
# were all refused is made again by the application
for c in $CLIENTS; do
	R=h_retry rg_until_ok "retry-$c" 30 rg_grpc_retry_$c
	rg_check "grpc-$c client: 30 calls OK ($RUNS runs of the client)" [ "$LEFT" = 0 ]
done
n=$(wc -w <<<"$CLIENTS")
[ "$(stored h_retry)" = $((3000 * n)) ] && [ "$(rg_stat h_retry admitted_rows)" = $((3000 * n)) ] &&
	[ "$(rg_stat h_retry rejected_requests)" -gt 0 ]
rg_check_rc $? "h_retry: $((3000 * n)) rows stored = admitted ($(rg_stat h_retry rejected_requests) refusals retried)"

# HandleRequests at a limit (3 messages a call): every message judged, a
# call refused mid-stream after its earlier messages were stored
# (docs/grpc.md#streams); with retries every row at least once, each
# stored row charged
rg_ctl limit set h_stream 2000 >/dev/null || rg_fail "limit set"
R=h_stream rg_until_ok stream 20 rg_grpc_retry_stream
rg_check "HandleRequests: 20 calls OK ($RUNS runs of the client)" [ "$LEFT" = 0 ]
hst=$(stored h_stream)
[ "$hst" -ge 6000 ] && [ "$(rg_stat h_stream admitted_rows)" = "$hst" ] &&
	[ "$(rg_stat h_stream rejected_requests)" -gt 0 ]
rg_check_rc $? "HandleRequests: $hst rows stored (6,000 sent, $((hst - 6000)) again by retries) = admitted ($(rg_stat h_stream rejected_requests) refusals)"

# One connection multiplexing admitted and refused streams of two
# databases (8 in flight): h_free has no limit, h_spent is spent
before=$(sget calls)
run_one "$RG_TMP/mux.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id w \
	-db h_free,h_spent -calls 200 -rows 10 -concurrency 8 -no-retry
[ "$(rg_jget "$RG_TMP/mux.json" "d['ok']")" = 100 ] && [ "$(rg_jget "$RG_TMP/mux.json" "d['codes']")" = "{'8': 100}" ]
rg_check_rc $? "multiplexed: 100 calls of h_free OK, 100 of h_spent RESOURCE_EXHAUSTED"
[ "$(stored h_free)" = 1000 ] && [ "$(sget calls)" = $((before + 100)) ]
rg_check_rc $? "multiplexed: 1,000 rows of h_free stored, only its 100 calls handled"

# 1,000 refused streams on one connection, 16 in flight, for each client:
# every one reaches h2 as HEADERS and is reset there by the kernel's
# RST_STREAM, none stays open against the advertised limit of 100
STREAMS=1000
for c in $CLIENTS; do
	before=$(sget calls) streams=$(sget streams)
	if [ $c = go ]; then
		run_one "$RG_TMP/many-$c.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id x -db h_spent \
			-calls $STREAMS -rows 5 -concurrency 16 -no-retry
	else
		run_one "$RG_TMP/many-$c.json" node "$JS_CLIENT" --target "$T" --id x --db h_spent \
			--calls $STREAMS --rows 5 --concurrency 16 --no-retry
	fi
	rg_log "grpc-$c client: $STREAMS refused streams in $(rg_jget "$RG_TMP/many-$c.json" "round(d['seconds'], 2)") s"
	no_open() { [ "$(sget streams_open)" = 0 ]; }
	rg_wait_for 10 no_open
	[ "$(rg_jget "$RG_TMP/many-$c.json" "d['codes']")" = "{'8': $STREAMS}" ] && [ "$(sget calls)" = "$before" ] &&
		[ "$(sget streams)" = $((streams + STREAMS)) ] && [ "$(sget streams_open_max)" -le 100 ] && no_open
	rg_check_rc $? "grpc-$c client: $STREAMS refused streams on one connection, all RESOURCE_EXHAUSTED, none handled; h2 began $STREAMS streams, at most $(sget streams_open_max) open at once (limit 100), 0 open now"
done

# 64 refused streams in flight.  h2 (CVE-2023-26964's limit, 20 by
# default) answers GOAWAY ENHANCE_YOUR_CALM once more than 20 streams were
# reset before hyper accepted them, and one skb holding more than 16
# refusals falls back to rowgate's GOAWAY; 16 concurrent streams keep the
# client within both, whether the server advertises them or egress lowers
# the server's SETTINGS to them (--grpc-max-streams)
wide() { # wide OUT TARGET
	run_one "$1" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$2" -id x -db h_spent \
		-calls 2000 -rows 5 -concurrency 64 -no-retry
	[ "$(rg_jget "$1" "d['codes']")" = "{'8': 2000}" ] && [ "$(rg_global h2_reject_closed)" = 0 ] &&
		[ "$(sget conn_errors | grep -c GoAway)" = 0 ]
	rg_check_rc $? "64 in flight: 2,000 refused streams on one connection, all RESOURCE_EXHAUSTED, no GOAWAY"
}
SHP=$HPORT2 wide "$RG_TMP/wide16.json" 127.0.0.1:$GPORT2
[ "$(SHP=$HPORT2 sget calls)" = 0 ] && [ "$(SHP=$HPORT2 sget streams_open_max)" -le 16 ]
rg_check_rc $? "64 in flight, 16 streams advertised: none handled, at most 16 open"
capped0=$(rg_global h2_out_streams_capped)
wide "$RG_TMP/wide100.json" "$T"
[ "$(sget streams_open_max)" -le 16 ] && [ "$(rg_global h2_out_streams_capped)" -gt "$capped0" ]
rg_check_rc $? "64 in flight, the server's own limit lowered to 16 by egress: at most $(sget streams_open_max) open"

# Refused DATA worth 20 MB on one connection (44 messages of 20,000 rows,
# 460 KB each): the kernel gives h2's flow-control window back
before=$(sget calls)
RG_CLIENT_TIMEOUT=120 run_one "$RG_TMP/big.json" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id y -db h_spent \
	-calls 44 -rows 20000 -no-retry
rg_log "44 refused 20,000-row messages in $(rg_jget "$RG_TMP/big.json" "round(d['seconds'], 2)") s"
[ "$(rg_jget "$RG_TMP/big.json" "d['codes']")" = "{'8': 44}" ] && [ "$(sget calls)" = "$before" ]
rg_check_rc $? "20 MB of refused messages on one connection: all 44 answered RESOURCE_EXHAUSTED, none handled"
[ "$(stored h_spent)" = 1000 ] && [ "$(rg_stat h_spent admitted_rows)" = 1000 ]
rg_check_rc $? "h_spent: still 1,000 rows stored = admitted"

kept=$(rg_global h2_reject_kept)
fb_list=
for r in head_split short later_split full per_skb name egress; do fb_list="$fb_list $r=$(rg_global h2_fallback_$r)"; done
fb_list="$fb_list; h2_early_head_split=$(rg_global h2_early_head_split)"
rg_log "kept $kept, h2_reject_fallback=$(rg_global h2_reject_fallback) by reason:$fb_list; server: $(curl -sf "http://127.0.0.1:$HPORT/stats" | head -c 300)"
[ "$kept" -gt 0 ] && [ "$(rg_global h2_reject_closed)" = 0 ] && [ "$(rg_global h2_reject_fallback)" = 0 ]
rg_check_rc $? "every refusal kept its connection ($kept): no GOAWAY, no fallback"
# A unary Handle call whose DATA holds two messages (docs/grpc.md#unary):
# tonic, as rg-greptime, hands the handler the first; only it is charged,
# the second's database (in debt) neither charged nor refusing
if "$RG_PY" -c 'import hpack, google.protobuf' 2>/dev/null && [ -f "$RG_BUILD/grpc/py/greptime/v1/ingest_pb2.py" ]; then
	for from in 0 7; do
		U=u1_h_$from V=u2_h_$from
		rg_ctl limit set "$U" 1000000 >/dev/null && rg_ctl limit set "$V" 1 >/dev/null || rg_fail "limit set"
		RG_GRPC_PY=$RG_BUILD/grpc/py "$RG_PY" "$RG_ROOT/tests/grpc/h2_probe.py" --port "$GPORT" \
			--scenario unary_two --db "$U" --free-db "$V" --rows 500 --from "$from" \
			>"$RG_TMP/u2.json" 2>&1 || rg_fail "unary_two: $(cat "$RG_TMP/u2.json")"
		rg_log "unary call of two messages (frames of ${from/#0/any} bytes): $(cat "$RG_TMP/u2.json")"
		[ "$(rg_stat "$U" admitted_rows)" = "$(stored "$U")" ] && [ "$(stored "$U")" = 1 ] &&
			[ "$(rg_stat "$V" admitted_rows)" = 0 ] && [ "$(stored "$V")" = 0 ] &&
			[ "$(rg_stat "$V" rejected_requests)" = 0 ]
		rg_check_rc $? "$U charged = stored ($(stored "$U")), $V nothing ($(stored "$V") stored)"
	done
else
	rg_fail "needs python3-hpack and python3-protobuf, and $RG_BUILD/grpc/py (make deps; make)"
fi

# h2 takes the kernel's RST_STREAM(CANCEL) as a stream error, the
# connection lives on: every refused stream's body ended in a reset
r1=$(sget resets) r2=$(SHP=$HPORT2 sget resets)
rg_check "h2 saw each refused stream reset ($r1 + $r2, last: $(sget last_reset))" [ $((r1 + r2)) = "$kept" ]
[ "$(rg_global h2_out_answers)" = "$kept" ] && [ "$(rg_global h2_out_answer_failed)" = 0 ] &&
	[ "$(rg_global h2_out_lost)" = 0 ]
rg_check_rc $? "every refusal answered in place of h2's SETTINGS ACK"
[ ! -s "$RG_TMP/greptime.log" ] && [ ! -s "$RG_TMP/greptime16.log" ]
rg_check_rc $? "rg-greptime logged no error"
[ "$(sget conn_errors | grep -c GoAway)" = 0 ] && [ "$(SHP=$HPORT2 sget conn_errors | grep -c GoAway)" = 0 ]
rg_check_rc $? "h2 ended no connection with a GOAWAY: $(sget conn_errors) $(SHP=$HPORT2 sget conn_errors)"
[ "$(rg_global h2_out_streams_capped)" -gt 0 ] && [ "$(rg_global h2_out_streams_uncapped)" = 0 ]
rg_check_rc $? "every server's first SETTINGS capped ($(rg_global h2_out_streams_capped)), none left uncapped"
rg_check "no internal errors" [ "$(rg_global internal_errors)" = 0 ]
rg_pass
