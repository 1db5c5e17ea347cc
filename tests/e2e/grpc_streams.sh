#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Many streams with half-read messages on one connection (issue 35): the
# parser has 16 slots; the streams past them park in h2_parked
# (bpf/h2/park.h, docs/grpc.md#framing) up to 128 at once.  Against the
# grpc-go server (SETTINGS_MAX_CONCURRENT_STREAMS 256, rowgated with
# --grpc-max-streams off so clients see it): a raw client with 128 calls
# whose messages are all half sent before any ends, and grpc-go's own
# client with 128 calls of multi-frame messages in flight; every call
# succeeds on one connection, no GOAWAY, rows charged = rows stored; the
# parked entries are gone once the connection closed.  A 129th half-read
# stream fails closed (GOAWAY, h2_failclosed_err 4), nothing charged or
# stored of that connection.  Then --grpc-parked-streams 50 bounds
# h2_parked for all connections: 66 half-read messages work, the 67th
# fails closed; a pinned map of another size is refused until a detach.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd curl bpftool "$RG_PY"
GRPC_PY=$RG_BUILD/grpc/py
rg_require_grpc_go client server
"$RG_PY" -c 'import hpack, google.protobuf' 2>/dev/null ||
	rg_skip "needs python3-hpack and python3-protobuf for $RG_PY (make deps)"
[ -f "$GRPC_PY/greptime/v1/ingest_pb2.py" ] || rg_fail "build first: $GRPC_PY is missing"

rg_make_cgroup
rg_start_grpc_go_server -max-concurrent-streams 256
rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" --grpc-max-streams off

stored() {
	curl -sf "http://127.0.0.1:$GADMIN/stats" |
		"$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['rows'].get(sys.argv[1], 0))" "$1"
}
probe() { # probe OUT DB STREAMS
	RG_GRPC_PY=$GRPC_PY "$RG_PY" "$RG_ROOT/tests/grpc/h2_probe.py" --port "$GPORT" \
		--scenario streams --db "$2" --streams "$3" --rows 10 >"$1" 2>&1 ||
		rg_fail "h2_probe: $(cat "$1")"
	rg_log "$3 streams: $(rg_jget "$1" "(d['codes'], d['goaway'] and d['goaway']['code'], d['server_max_concurrent_streams'])")"
}
# no entry of h2_parked is left (every connection so far closed)
parked_empty() { [ "$(bpftool -j map dump pinned "$RG_BPFFS/h2_parked" | "$RG_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 0 ]; }
rg_check "h2_parked is pinned with the other HTTP/2 state" [ -e "$RG_BPFFS/h2_parked" ]

for db in st_raw st_go st_over; do rg_ctl limit set $db 100000000 >/dev/null || rg_fail "limit set"; done

# 128 half-read messages on one connection, all kept at once
parked0=$(rg_global h2_streams_parked) fc0=$(rg_global h2_failclosed) conns0=$(rg_global h2_conns)
probe "$RG_TMP/raw.json" st_raw 128
[ "$(rg_jget "$RG_TMP/raw.json" "d['codes']")" = "{'0': 128}" ] &&
	[ "$(rg_jget "$RG_TMP/raw.json" "d['goaway']")" = None ] &&
	[ "$(rg_global h2_failclosed)" = "$fc0" ]
rg_check_rc $? "128 calls with half-sent messages on one connection: all OK, no GOAWAY"
parked=$(($(rg_global h2_streams_parked) - parked0))
rg_check "the 112 streams past the 16 slots parked at once ($parked parked)" [ "$parked" -ge 112 ]
rg_check "raw: rows charged = rows stored = 1280" rg_wait_charged st_raw 1280
rg_check "raw: the server stored 1,280 rows" [ "$(stored st_raw)" = 1280 ]
rg_check "raw: the parked entries went with the connection" rg_wait_for 10 parked_empty

# grpc-go's client: 128 calls of 2,000-row messages (several DATA frames
# each, interleaved frame by frame) in flight on its one connection
parked0=$(rg_global h2_streams_parked)
"$GO_CLIENT" -target "127.0.0.1:$GPORT" -id st -db st_go -calls 128 \
	-concurrency 128 -rows 2000 -no-retry >"$RG_TMP/go.json" 2>&1
rg_log "grpc-go: $(cat "$RG_TMP/go.json"); parked +$(($(rg_global h2_streams_parked) - parked0)); $(rg_h2_counters)"
[ "$(rg_jget "$RG_TMP/go.json" "d['ok']")" = 128 ] && [ "$(rg_global h2_failclosed)" = "$fc0" ] &&
	[ "$(rg_global h2_conns)" = $((conns0 + 2)) ]
rg_check_rc $? "grpc-go: 128 concurrent calls on one connection all OK, none failed closed"
rg_check "grpc-go: some streams parked" [ "$(rg_global h2_streams_parked)" -gt "$parked0" ]
rg_check "grpc-go: rows charged = rows stored = 256,000" rg_wait_charged st_go 256000
rg_check "grpc-go: the server stored 256,000 rows" [ "$(stored st_go)" = 256000 ]
rg_check "grpc-go: the parked entries went with the connection" rg_wait_for 10 parked_empty

# one past the bound: the 129th half-read message fails closed
probe "$RG_TMP/over.json" st_over 129
[ "$(rg_jget "$RG_TMP/over.json" "d['goaway'] is not None")" = True ] &&
	[ "$(rg_global h2_failclosed)" = $((fc0 + 1)) ] && [ "$(rg_global h2_failclosed_err)" = 4 ]
rg_check_rc $? "129 half-read messages: GOAWAY, failed closed for streams (h2_failclosed_err 4)"
rg_check "over: nothing charged" [ "$(rg_stat st_over admitted_rows)" = 0 ]
rg_check "over: nothing stored" [ "$(stored st_over)" = 0 ]
rg_check "over: the parked entries went with the connection" rg_wait_for 10 parked_empty

# --grpc-parked-streams sizes h2_parked: a pinned one of another size is
# refused clearly while connections may live in it; after a detach, 50
# parked streams in all: 16 + 50 half-read messages work, one more fails
# closed the same way
rg_stop_rowgated
out=$(timeout 60 "$RG_ROWGATED" --foreground --port "$GPORT=$RG_PROFILE" --cgroup "$RG_CGROUP" \
	--bpffs "$RG_BPFFS" --admin-socket "$RG_SOCK" --state-file "$RG_STATE" --grpc "$GPORT" \
	--grpc-max-streams off --grpc-parked-streams 50 2>&1)
rc=$?
rg_check "another size while pinned: refused ($rc: $(tail -1 <<<"$out"))" \
	eval '[ $rc -ne 0 ] && grep -q "has 16384 entries, not --grpc-parked-streams 50: start with --grpc-parked-streams 16384, or .rowgatectl detach" <<<"$out"'
rg_ctl detach >/dev/null || rg_fail "detach"
RG_PORT=$GPORT rg_start_rowgated --grpc "$GPORT" --grpc-max-streams off --grpc-parked-streams 50
rg_check "h2_parked holds 50 entries" \
	[ "$(bpftool -j map show pinned "$RG_BPFFS/h2_parked" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["max_entries"])')" = 50 ]
for db in st_p66 st_p67; do rg_ctl limit set $db 100000000 >/dev/null || rg_fail "limit set"; done
fc0=$(rg_global h2_failclosed)
probe "$RG_TMP/p66.json" st_p66 66
[ "$(rg_jget "$RG_TMP/p66.json" "d['codes']")" = "{'0': 66}" ] && [ "$(rg_global h2_failclosed)" = "$fc0" ]
rg_check_rc $? "--grpc-parked-streams 50: 66 half-read messages on one connection, all OK"
rg_check "p66: rows charged = rows stored = 660" rg_wait_charged st_p66 660
rg_check "p66: the parked entries went with the connection" rg_wait_for 10 parked_empty
probe "$RG_TMP/p67.json" st_p67 67
[ "$(rg_jget "$RG_TMP/p67.json" "d['goaway'] is not None")" = True ] &&
	[ "$(rg_global h2_failclosed)" = $((fc0 + 1)) ]
rg_check_rc $? "--grpc-parked-streams 50: the 67th half-read message fails closed (GOAWAY)"
rg_check "p67: nothing stored" [ "$(stored st_p67)" = 0 ]
rg_check "p67: the parked entries went with the connection" rg_wait_for 10 parked_empty
rg_log "PASS"
