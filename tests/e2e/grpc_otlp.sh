#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# OTLP/gRPC exports limited in the kernel (rowgated --grpc-otlp count, the
# default; docs/grpc.md#otlp): each Export's messages are judged on the
# database its x-greptime-db-name metadata names (read from HPACK in the
# verdict, raw or Huffman, literal or indexed), refused with
# RESOURCE_EXHAUSTED while that database is in debt, charged an estimate,
# and corrected to the rows rowgated counts from a copy (data points, log
# records, spans; gzip too).  Two
# client stacks: gRPC C-core (python3-grpcio, tests/grpc/otlp_client.py)
# and OpenTelemetry's own exporter on grpc-js (npm
# @opentelemetry/exporter-metrics-otlp-grpc, tests/grpc/otlp_js.js, which
# retries no gRPC failure), against the C-core server of tests/grpc,
# which stores the rows each database gets.  Stored = charged for each
# database; a refused export never reaches the handler and its rows are
# counted rejected; two values of the metadata fail closed.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
CLIENT=$RG_ROOT/tests/grpc/otlp_client.py
JS=$RG_ROOT/tests/grpc/otlp_js.js
# --grpc-otlp count is the default
rg_setup_grpc_protocol --grpc-otlp @opentelemetry/exporter-metrics-otlp-grpc otlp_pb2.py
for db in o_free o_gz public o_tr o_js o_jsgz o_two; do
	rg_ctl limit set $db 1000000 >/dev/null || rg_fail "limit set $db"
done
rg_ctl limit set o_lim 10 >/dev/null || rg_fail "limit set"
rg_ctl limit set o_big 10 >/dev/null || rg_fail "limit set"
rg_ctl limit set o_jslim 100 >/dev/null || rg_fail "limit set"

sget() { curl -sf "http://127.0.0.1:$ADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
stored() { sget "d['otlp_rows'].get('$1', 0)"; }
py() { # py OUT ARGS...: the C-core client against the guarded port
	local out=$1
	shift
	"$RG_PY" "$CLIENT" --target "127.0.0.1:$PORT" "$@" >"$out" 2>&1
	rg_log "$(basename "$out"): $(cat "$out")"
}
js() { # js OUT ARGS...: OpenTelemetry's exporter
	local out=$1
	shift
	node "$JS" --target "127.0.0.1:$PORT" "$@" >"$out" 2>&1
	rg_log "$(basename "$out"): $(cat "$out")"
}

# --- admitted: stored = charged, per database, per signal -----------------
py "$RG_TMP/free.json" --db o_free --calls 5 --points 100
rg_check "C-core metrics: 5 exports of 100 points answered" rg_is "$(rg_jget "$RG_TMP/free.json" "d['ok']")" 5 ok
rg_check "o_free: 500 points stored, 500 charged" eval 'rg_is "$(stored o_free)" 500 stored && rg_wait_charged o_free 500'
py "$RG_TMP/gz.json" --db greptime-o_gz --calls 3 --points 40 --gzip
rg_check "C-core gzip, greptime-o_gz: 120 stored, 120 charged to o_gz" \
	eval 'rg_is "$(rg_jget "$RG_TMP/gz.json" "d['"'ok'"']")" 3 ok && rg_is "$(stored o_gz)" 120 stored && rg_wait_charged o_gz 120'
py "$RG_TMP/logs.json" --kind logs --calls 1 --points 7
rg_check "logs without x-greptime-db-name: 7 records stored and charged to public" \
	eval 'rg_is "$(stored public)" 7 stored && rg_wait_charged public 7'
py "$RG_TMP/traces.json" --kind traces --db o_tr --calls 2 --points 9
rg_check "traces: 18 spans stored and charged to o_tr" eval 'rg_is "$(stored o_tr)" 18 stored && rg_wait_charged o_tr 18'
js "$RG_TMP/js.json" --db o_js --exports 3 --points 50
rg_check "OTel exporter: 3 exports, 150 points stored and charged" \
	eval 'rg_is "$(rg_jget "$RG_TMP/js.json" "d['"'ok'"']")" 3 ok && rg_is "$(stored o_js)" 150 stored && rg_wait_charged o_js 150'
js "$RG_TMP/jsgz.json" --db o_jsgz --exports 2 --points 20 --gzip
rg_check "OTel exporter, gzip: 40 points stored and charged" \
	eval 'rg_is "$(stored o_jsgz)" 40 stored && rg_wait_charged o_jsgz 40'

# --- at a limit: admitted on a full bucket, then refused until repaid -------
calls=$(sget "d['otlp_calls']")
py "$RG_TMP/lim.json" --db o_lim --calls 3 --points 500 --interval 0.3
rg_check "o_lim (10 rows/s): the first export admitted, the next two RESOURCE_EXHAUSTED" \
	eval 'rg_is "$(rg_jget "$RG_TMP/lim.json" "d['"'ok'"']")" 1 ok &&
	      rg_is "$(rg_jget "$RG_TMP/lim.json" "d['"'codes'"'].get('"'8'"', 0)")" 2 code8'
rg_check "o_lim: the refusal says why, as the 429 does" \
	grep -q "Ingestion rate limit exceeded for database" "$RG_TMP/lim.json"
rg_check "o_lim: the refused exports never reached the handler; 500 stored, 500 charged" \
	eval 'rg_is "$(sget "d['"'otlp_calls'"']")" $((calls + 1)) otlp_calls &&
	      rg_is "$(stored o_lim)" 500 stored && rg_wait_charged o_lim 500'
rg_check "o_lim: their 1,000 points counted as rejected rows" \
	rg_wait_for 10 eval '[ "$(rg_stat o_lim rejected_rows)" = 1000 ]'

# C-core's server offers a SETTINGS_MAX_FRAME_SIZE of 4 MiB, and its
# clients then send a message in one frame that large; egress lowers the
# offer to 16,384 (h2_out_frame_size_capped), the largest the verdict reads
rg_check "the server's MAX_FRAME_SIZE lowered on its connections" [ "$(rg_global h2_out_frame_size_capped)" -gt 0 ]
py "$RG_TMP/bigcc.json" --db o_free --calls 2 --points 5000
rg_check "C-core, 2 exports of 5,000 points (many frames): answered, 10,000 more stored and charged" \
	eval 'rg_is "$(rg_jget "$RG_TMP/bigcc.json" "d['"'ok'"']")" 2 ok && rg_is "$(stored o_free)" 10500 stored &&
	      rg_wait_charged o_free 10500'

# exports of many 16 KB frames: the refusals kept
early=$(rg_global h2_reject_early)
calls=$(sget "d['otlp_calls']")
js "$RG_TMP/big.json" --db o_big --exports 3 --points 1500
rg_check "o_big (10 rows/s): 1,500-point exports over several 16 KB frames: the first admitted, the others refused" \
	eval 'rg_is "$(rg_jget "$RG_TMP/big.json" "d['"'ok'"']")" 1 ok && rg_is "$(rg_jget "$RG_TMP/big.json" "d['"'failed'"']")" 2 failed &&
	      grep -q "RESOURCE_EXHAUSTED: Ingestion rate limit exceeded" "$RG_TMP/big.json"'
rg_log "o_big: h2_reject_early +$(($(rg_global h2_reject_early) - early))"
rg_check "o_big: the refused exports never handled; 1,500 stored and charged" \
	eval 'rg_is "$(sget "d['"'otlp_calls'"']")" $((calls + 1)) otlp_calls &&
	      rg_is "$(stored o_big)" 1500 stored && rg_wait_charged o_big 1500'

# OpenTelemetry's exporter at 100 rows/s, back to back: the first export
# admitted on a full bucket, the rest refused while it is repaid.  This
# exporter (0.223) retries no gRPC failure: a refused export is dropped by
# the client, as with GreptimeDB's own limiter; what it stores is charged.
calls=$(sget "d['otlp_calls']")
js "$RG_TMP/jslim.json" --db o_jslim --exports 4 --points 150
ok=$(rg_jget "$RG_TMP/jslim.json" "d['ok']")
rg_check "OTel exporter at 100 rows/s: the first export admitted, the others refused with the 429's sentence" \
	eval '[ "$ok" -ge 1 ] && [ "$ok" -lt 4 ] &&
	      rg_is "$(rg_jget "$RG_TMP/jslim.json" "d['"'ok'"'] + d['"'failed'"']")" 4 exports &&
	      grep -q "RESOURCE_EXHAUSTED: Ingestion rate limit exceeded for database '"'"'o_jslim'"'"'" "$RG_TMP/jslim.json"'
rg_check "o_jslim: only admitted exports handled; stored = charged = $((ok * 150))" \
	eval 'rg_is "$(sget "d['"'otlp_calls'"']")" $((calls + ok)) otlp_calls &&
	      rg_is "$(stored o_jslim)" $((ok * 150)) stored && rg_wait_charged o_jslim $((ok * 150))'
rg_check "o_jslim: the refused points counted as rejected rows" \
	rg_wait_for 10 eval "[ \"\$(rg_stat o_jslim rejected_rows)\" = $(((4 - ok) * 150)) ]"

# --- a block the kernel cannot read as the server does: fail closed ---------
fc=$(rg_global h2_failclosed)
calls=$(sget "d['otlp_calls']")
"$RG_PY" - "127.0.0.1:$PORT" >"$RG_TMP/two.txt" 2>&1 <<'PY'
import sys, grpc
ch = grpc.insecure_channel(sys.argv[1])
call = ch.unary_unary("/opentelemetry.proto.collector.metrics.v1.MetricsService/Export")
try:
    call(b"", metadata=(("x-greptime-db-name", "o_two"), ("x-greptime-db-name", "o_free")),
         timeout=20)
    print("ok")
except grpc.RpcError as e:
    print("code", e.code().value[0], e.details())
PY
rg_log "two x-greptime-db-name values: $(cat "$RG_TMP/two.txt")"
rg_check "two x-greptime-db-name values: failed closed (GOAWAY), the handler never called" \
	eval 'grep -q "^code 14" "$RG_TMP/two.txt" && rg_is "$(sget "d['"'otlp_calls'"']")" "$calls" otlp_calls &&
	      [ "$(rg_global h2_failclosed)" -gt "$fc" ]'
# --- the frame size is lowered without the stream cap too -----------------
rg_stop_rowgated
RG_PORT=$PORT rg_start_rowgated --grpc "$PORT" --grpc-max-streams off
fs=$(rg_global h2_out_frame_size_capped)
sc=$(rg_global h2_out_streams_capped)
py "$RG_TMP/bigoff.json" --db o_free --calls 2 --points 5000
rg_check "--grpc-max-streams off: 2 C-core exports of 5,000 points answered, stored and charged" \
	eval 'rg_is "$(rg_jget "$RG_TMP/bigoff.json" "d['"'ok'"']")" 2 ok && rg_is "$(stored o_free)" 20500 stored &&
	      rg_wait_charged o_free 20500'
rg_check "--grpc-max-streams off: MAX_FRAME_SIZE lowered, MAX_CONCURRENT_STREAMS left as the server sent it" \
	eval '[ "$(rg_global h2_out_frame_size_capped)" -gt "$fs" ] && rg_is "$(rg_global h2_out_streams_capped)" "$sc" streams_capped'
rg_pass
