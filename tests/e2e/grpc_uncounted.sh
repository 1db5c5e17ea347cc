#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gRPC methods that store rows rowgate cannot count in the kernel
# (docs/grpc.md#uncounted): GreptimeDB's OTLP/gRPC and OTel Arrow exports
# and Arrow Flight DoPut take their database from HPACK metadata or carry
# rows in bodies the verdict cannot read.  Passed, they would store rows in
# a database in debt, unlimited.  By default (--grpc-uncounted refuse) a
# call of one is refused at the end of its header block: the client gets a
# GOAWAY that says why, the server's handler is never called,
# h2_streams_uncounted and h2_failclosed count it.  Three client stacks,
# three codings of :path: grpc-go (Huffman, indexed), curl's nghttp2 (h2c
# prior knowledge, Huffman) and a raw HPACK literal (python-hpack).  A
# GreptimeDatabase write on its own connection is still charged and stored.
# With --grpc-uncounted pass the same calls reach the server and are
# answered, uncharged, counted as unrouted streams.  OTLP exports and DoPut
# are counted by default (e2e/grpc_otlp, e2e/grpc_flight); here --grpc-otlp
# refuse and --grpc-flight refuse put them back among these methods.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl "$RG_PY"
PROBE=$RG_ROOT/tests/grpc/h2_probe.py
rg_require_grpc_go client server
"$RG_PY" -c 'import hpack, google.protobuf' 2>/dev/null ||
	rg_skip "needs python3-hpack and python3-protobuf (make deps)"
curl -V | grep -qw HTTP2 || rg_skip "needs a curl with HTTP/2"
export RG_GRPC_PY=$RG_BUILD/grpc/py

METHODS="/opentelemetry.proto.collector.metrics.v1.MetricsService/Export
/arrow.flight.protocol.FlightService/DoPut
/opentelemetry.proto.experimental.arrow.v1.ArrowMetricsService/ArrowMetrics"
CALLS=3 ROWS=50 DB=uc_db

rg_make_cgroup
rg_start_grpc_go_server

# is GOT WANT WHAT: equal, or say what differs
is() { [ "$1" = "$2" ] || { rg_log "  $3: got '$1', want '$2'"; return 1; }; }
sget() { curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# an empty GreptimeRequest, length-prefixed
printf '\0\0\0\0\0' >"$RG_TMP/empty.grpc"
curl_call() { # curl_call PATH: h2c prior knowledge, as nghttp2 sends it
	curl -sS --max-time 20 --http2-prior-knowledge -H 'content-type: application/grpc' \
		-H 'te: trailers' --data-binary @"$RG_TMP/empty.grpc" -o /dev/null \
		-D "$RG_TMP/curl.hdr" "http://127.0.0.1:$GPORT$1" 2>"$RG_TMP/curl.err"
}
go_calls() { # go_calls PATH OUT: CALLS unary calls of PATH, one connection
	"$GO_CLIENT" -target "127.0.0.1:$GPORT" -id uc -db $DB -method "$1" -calls $CALLS \
		-rows $ROWS -no-retry -deadline 20s >"$2" 2>&1
}

rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" --grpc-otlp refuse --grpc-flight refuse
rg_ctl limit set $DB 1 >/dev/null || rg_fail "limit set"

# --- refuse (the default) -------------------------------------------------
i=0
for m in $METHODS; do
	i=$((i + 1))
	calls=$(sget "d['uncounted_calls']")
	out=$RG_TMP/go_refuse_$i.json
	go_calls "$m" "$out"
	rg_log "grpc-go $m: $(cat "$out")"
	rg_check "grpc-go $m: $CALLS calls, none answered by the server" \
		eval 'is "$(rg_jget "$out" "d['"'ok'"']")" 0 ok &&
		      is "$(rg_jget "$out" "d['"'failed'"']")" $CALLS failed &&
		      is "$(sget "d['"'uncounted_calls'"']")" "$calls" "server uncounted_calls"'
	rg_check "grpc-go $m: every call failed UNAVAILABLE (the GOAWAY), none RESOURCE_EXHAUSTED" \
		is "$(rg_jget "$out" "list(d['codes'].keys())")" "['14']" codes
	rc=0
	curl_call "$m" || rc=$?
	rg_log "curl $m: exit $rc, $(tr -d '\r' <"$RG_TMP/curl.err" | head -c 300)"
	rg_check "curl $m: the call fails at the kernel's GOAWAY, the server never answers" \
		eval '[ $rc -ne 0 ] && ! grep -qi "^grpc-status" "$RG_TMP/curl.hdr" &&
		      is "$(sget "d['"'uncounted_calls'"']")" "$calls" "server uncounted_calls"'
	out=$RG_TMP/probe_refuse_$i.json
	"$RG_PY" "$PROBE" --port "$GPORT" --scenario uncounted --path "$m" >"$out" 2>&1 ||
		rg_fail "h2_probe: $(cat "$out")"
	rg_log "raw literal $m: $(cat "$out")"
	rg_check "raw literal $m: GOAWAY PROTOCOL_ERROR, last stream 0, saying why" \
		eval 'is "$(rg_jget "$out" "d['"'goaway'"']['"'code'"']")" 1 code &&
		      is "$(rg_jget "$out" "d['"'goaway'"']['"'last'"']")" 0 last &&
		      rg_jget "$out" "d['"'goaway'"']['"'debug'"']" | grep -q -- "--grpc-uncounted"'
done
# each call once, or twice where the client retried a stream the GOAWAY
# names unprocessed (grpc-go's transparent retry, curl's on REFUSED_STREAM)
rg_check "h2_streams_uncounted counts every refused call" \
	eval '[ "$(rg_global h2_streams_uncounted)" -ge $((3 * (CALLS + 2))) ] &&
	      [ "$(rg_global h2_streams_uncounted)" -le $((3 * (2 * CALLS + 3))) ]'
rg_check "h2_failclosed counts their connections too, h2_failclosed_err says why (9: RG_H2_ERR_UNCOUNTED)" \
	eval '[ "$(rg_global h2_failclosed)" -ge "$(rg_global h2_streams_uncounted)" ] &&
	      [ "$(rg_global h2_failclosed_err)" = 9 ]'
rg_check "nothing charged to $DB" is "$(rg_stat $DB admitted_rows)" 0 admitted_rows

# a GreptimeDatabase write beside them is followed as before
out=$RG_TMP/go_write.json
"$GO_CLIENT" -target "127.0.0.1:$GPORT" -id ucw -db $DB -calls 1 -rows $ROWS -no-retry \
	-deadline 20s >"$out" 2>&1 || rg_fail "GreptimeDatabase write: $(cat "$out")"
rg_check "GreptimeDatabase/Handle: admitted, stored = charged = $ROWS rows" \
	eval 'is "$(sget "d['"'rows'"'].get('"'$DB'"', 0)")" $ROWS stored &&
	      is "$(rg_stat $DB admitted_rows)" $ROWS admitted_rows'

# --- pass -------------------------------------------------------------------
rg_stop_rowgated
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" --grpc-otlp refuse --grpc-flight refuse --grpc-uncounted pass
rg_ctl limit set $DB 1 >/dev/null || rg_fail "limit set"
unrouted=$(rg_global h2_streams_unrouted)
before=$(rg_global h2_streams_uncounted)
admitted=$(rg_stat $DB admitted_rows)
i=0
for m in $METHODS; do
	i=$((i + 1))
	calls=$(sget "d['uncounted_calls']")
	rows=$(sget "d['uncounted_rows']")
	out=$RG_TMP/go_pass_$i.json
	go_calls "$m" "$out" || rg_fail "grpc-go $m with pass: $(cat "$out")"
	rg_check "pass: grpc-go $m: $CALLS calls answered, $((CALLS * ROWS)) rows stored" \
		eval 'is "$(rg_jget "$out" "d['"'ok'"']")" $CALLS ok &&
		      is "$(sget "d['"'uncounted_calls'"']")" $((calls + CALLS)) "server uncounted_calls" &&
		      is "$(sget "d['"'uncounted_rows'"']")" $((rows + CALLS * ROWS)) "server uncounted_rows"'
	curl_call "$m" || rg_fail "pass: curl $m: $(cat "$RG_TMP/curl.err")"
	rg_check "pass: curl $m: answered grpc-status 0" \
		grep -qi '^grpc-status: *0' "$RG_TMP/curl.hdr"
	out=$RG_TMP/probe_pass_$i.json
	"$RG_PY" "$PROBE" --port "$GPORT" --scenario uncounted --path "$m" >"$out" 2>&1 ||
		rg_fail "h2_probe: $(cat "$out")"
	rg_check "pass: raw literal $m: answered grpc-status 0, no GOAWAY" \
		eval 'is "$(rg_jget "$out" "d['"'grpc_status'"']")" 0 grpc_status &&
		      is "$(rg_jget "$out" "d['"'goaway'"']")" None goaway'
done
rg_check "pass: every call an unrouted stream, none refused" \
	eval 'is "$(rg_global h2_streams_unrouted)" $((unrouted + 3 * (CALLS + 2))) h2_streams_unrouted &&
	      is "$(rg_global h2_streams_uncounted)" "$before" h2_streams_uncounted'
rg_check "pass: nothing charged to $DB" is "$(rg_stat $DB admitted_rows)" "$admitted" admitted_rows
rg_pass
