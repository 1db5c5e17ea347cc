#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Arrow Flight DoPut, GreptimeDB's bulk write, limited in the kernel
# (rowgated --grpc-flight count, the default; docs/grpc.md#flight): each
# FlightData of a DoPut stream is judged on the database its
# x-greptime-db-name metadata names, refused with RESOURCE_EXHAUSTED while
# that database is in debt (the stream ends there; the batches before it
# are stored), charged an estimate of its length, and corrected to its
# RecordBatch's rows by rowgated from a copy (a Schema message: none).  The
# Arrow IPC comes from npm apache-arrow (tests/grpc/flight_js.js, on
# grpc-js); gRPC C-core (tests/grpc/flight_client.py) sends the same
# FlightData.  The server (tests/grpc/greptime_server.py, gRPC C-core)
# stores each RecordBatch's rows per database: stored = charged.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
CLIENT=$RG_ROOT/tests/grpc/flight_client.py
JS=$RG_ROOT/tests/grpc/flight_js.js
# --grpc-flight count is the default
rg_setup_grpc_protocol --grpc-flight apache-arrow flight_pb2.py
for db in f_free f_gz f_cc public; do
	rg_ctl limit set $db 1000000 >/dev/null || rg_fail "limit set $db"
done
rg_ctl limit set f_lim 1000 >/dev/null || rg_fail "limit set"

sget() { curl -sf -m 10 "http://127.0.0.1:$ADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
stored() { sget "d['flight_rows'].get('$1', 0)"; }
# pstat DB FIELD: a counter of DB's arrow-flight protocol
pstat() { rg_ctl --json stats "$1" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['protocols']['arrow-flight']['$2'])"; }
# each call has a 30 s deadline, each client 120 s: a hang fails with its
# output and the kernel's HTTP/2 counters logged
run_client() { RG_CLIENT_TIMEOUT=120 rg_h2_client "$@"; } # run_client OUT CMD...
js() { # js OUT ARGS...: apache-arrow + grpc-js against the guarded port
	run_client "$1" node "$JS" --target "127.0.0.1:$PORT" --deadline 30 "${@:2}"
}
py() { # py OUT ARGS...: gRPC C-core sending a dump of flight_js.js
	run_client "$1" "$RG_PY" "$CLIENT" --target "127.0.0.1:$PORT" --deadline 30 "${@:2}"
}

# --- admitted: stored = charged, per database --------------------------------
js "$RG_TMP/free.json" --db f_free --streams 2 --batches 3 --rows 500
rg_check "apache-arrow on grpc-js: 2 DoPut streams of 3 batches of 500 rows answered" \
	eval 'rg_is "$(rg_jget "$RG_TMP/free.json" "d['"'ok'"']")" 2 ok &&
	      rg_is "$(rg_jget "$RG_TMP/free.json" "d['"'acked_rows'"']")" 3000 acked'
rg_check "f_free: 3,000 rows stored, 3,000 charged (the estimates corrected, the Schemas none)" \
	eval 'rg_is "$(stored f_free)" 3000 stored && rg_wait_charged f_free 3000'
rg_check "f_free's arrow-flight counters: 8 messages admitted (2 Schemas, 6 batches), 3,000 rows reconciled" \
	eval 'rg_is "$(pstat f_free admitted_requests)" 8 requests && rg_is "$(pstat f_free admitted_rows)" 3000 rows &&
	      rg_is "$(pstat f_free reconciled_rows)" 3000 reconciled'
js "$RG_TMP/gz.json" --db greptime-f_gz --streams 1 --batches 2 --rows 400 --gzip
rg_check "gzip, greptime-f_gz: 800 rows stored, 800 charged to f_gz" \
	eval 'rg_is "$(rg_jget "$RG_TMP/gz.json" "d['"'ok'"']")" 1 ok && rg_is "$(stored f_gz)" 800 stored &&
	      rg_wait_charged f_gz 800'
js "$RG_TMP/pub.json" --streams 1 --batches 1 --rows 70
rg_check "no x-greptime-db-name: 70 rows stored and charged to public" \
	eval 'rg_is "$(stored public)" 70 stored && rg_wait_charged public 70'
node "$JS" --dump "$RG_TMP/dump.bin" --batches 2 --rows 300 >/dev/null 2>&1 || rg_fail "flight_js.js --dump"
py "$RG_TMP/cc.json" --db f_cc --streams 3 --dump "$RG_TMP/dump.bin"
rg_check "gRPC C-core: 3 streams of 2 batches of 300 rows stored and charged" \
	eval 'rg_is "$(rg_jget "$RG_TMP/cc.json" "d['"'ok'"']")" 3 ok && rg_is "$(stored f_cc)" 1800 stored &&
	      rg_wait_charged f_cc 1800'

# --- at a limit: a 3,000-row batch admitted on a full bucket, the next ------
# refused while it is repaid; the stream ends RESOURCE_EXHAUSTED there
calls=$(sget "d['flight_batches']")
js "$RG_TMP/lim.json" --db f_lim --streams 1 --batches 3 --rows 3000 --interval 300
rg_check "f_lim (1,000 rows/s): the stream refused with the 429's sentence" \
	eval 'rg_is "$(rg_jget "$RG_TMP/lim.json" "d['"'failed'"']")" 1 failed &&
	      rg_is "$(rg_jget "$RG_TMP/lim.json" "d['"'codes'"'].get('"'8'"', 0)")" 1 code8 &&
	      grep -q "Ingestion rate limit exceeded for database '"'"'f_lim'"'"'" "$RG_TMP/lim.json"'
rg_check "f_lim: the first batch stored and charged (3,000), the refused one never handled" \
	eval 'rg_is "$(stored f_lim)" 3000 stored && rg_wait_charged f_lim 3000 &&
	      rg_is "$(sget "d['"'flight_batches'"']")" $((calls + 1)) batches'
rg_check "f_lim: the refused batch's 3,000 rows counted as rejected" \
	rg_wait_for 10 eval '[ "$(rg_stat f_lim rejected_rows)" -ge 3000 ] && [ "$(pstat f_lim rejected_rows)" -ge 3000 ]'

# --- --grpc-flight refuse: DoPut is a method rowgate does not count ----------
rg_stop_rowgated
RG_PORT=$PORT rg_start_rowgated --grpc "$PORT" --grpc-flight refuse
unc=$(rg_global h2_streams_uncounted)
calls=$(sget "d['flight_calls']")
py "$RG_TMP/refuse.json" --db f_free --streams 1 --dump "$RG_TMP/dump.bin"
# grpc-js reports the GOAWAY's PROTOCOL_ERROR as its streams' (code 13)
js "$RG_TMP/refusejs.json" --db f_free --streams 1 --batches 1 --rows 10
rg_log "after the refusals, HTTP/2: $(rg_h2_counters)"
rg_check "--grpc-flight refuse: DoPut fails closed at the GOAWAY (C-core code 14, grpc-js 13 or 14), its handler never called" \
	eval 'rg_is "$(rg_jget "$RG_TMP/refuse.json" "d['"'codes'"'].get('"'14'"', 0)")" 1 code14 &&
	      rg_is "$(rg_jget "$RG_TMP/refusejs.json" "d['"'codes'"'].get('"'13'"', 0) + d['"'codes'"'].get('"'14'"', 0)")" 1 js_code &&
	      rg_is "$(sget "d['"'flight_calls'"']")" "$calls" flight_calls &&
	      [ "$(rg_global h2_streams_uncounted)" -ge $((unc + 2)) ]'
rg_pass
