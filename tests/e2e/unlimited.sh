#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Databases without a limit are counted (issue 36.6): an operator picks a
# limit from data.  Against Debian's InfluxDB (profile influxdb, whose rows
# are lines) and the grpc-go GreptimeDatabase server, with no limit set:
#   - plain line protocol: rows counted exactly, equal to what influxd
#     stores; a gzip body: counted once, its rows an estimate, and said so
#     (estimated_requests);
#   - gRPC: every message's rows, exactly as the server acknowledges;
#   - the counts show in rowgatectl stats, top and /metrics;
#   - once a limit is set the database is charged as before and its
#     unlimited counters stop growing.
RG_PROFILE=influxdb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd influxd curl gzip "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
rg_require_grpc_go client server

rg_mount_bpffs
rg_make_cgroup
RG_PORT=$(rg_free_port) || rg_fail "no free port"
rg_start_influxd "$RG_PORT"
rg_start_grpc_go_server
MPORT=$(rg_free_port) || rg_fail "no free port"
rg_start_rowgated --port "$GPORT=greptimedb" --metrics "127.0.0.1:$MPORT"
BASE="http://127.0.0.1:$RG_PORT"
curl -sf -XPOST "$BASE/query" --data-urlencode 'q=CREATE DATABASE free' >/dev/null || rg_fail "create database"

# unl DB FIELD: a database's unlimited counter (0 when it has none)
unl() {
	rg_ctl --json stats | "$RG_PY" -c "import json,sys
u=[d for d in json.load(sys.stdin)['unlimited'] if d['db']=='$1']
print(u[0]['$2'] if u else 0)"
}
lines() { # lines N TAG: N points of measurement m
	"$RG_PY" -c "print(''.join('m,t=$2 v=%d %d\n' % (j, 1700000000000000000 + j) for j in range($1)), end='')"
}
stored() {
	curl -sfG "$BASE/query" --data-urlencode "db=$1" --data-urlencode 'q=SELECT count(v) FROM m' |
		"$RG_PY" -c 'import json,sys; r=json.load(sys.stdin)["results"][0].get("series"); print(r[0]["values"][0][1] if r else 0)'
}

# --- HTTP, line protocol: exact
for i in 1 2 3; do
	lines 500 "a$i" >"$RG_TMP/b$i"
	code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$RG_TMP/b$i" "$BASE/write?db=free")
	rg_check "write $i of 500 rows stored (204)" rg_is "$code" 204 "status"
done
rg_check "3 plain writes: requests 3, rows 1500, none estimated" \
	rg_is "$(unl free requests)/$(unl free rows)/$(unl free estimated_requests)" 3/1500/0 "requests/rows/estimated"
rg_check "influxd stores the 1500 rows rowgate counted" rg_is "$(stored free)" 1500 "stored"
rg_check "body bytes counted" rg_is "$(unl free body_bytes)" \
	"$(($(stat -c %s "$RG_TMP/b1") + $(stat -c %s "$RG_TMP/b2") + $(stat -c %s "$RG_TMP/b3")))" "body_bytes"
rg_check "no limit, no limited counters: databases stays empty" \
	rg_is "$(rg_ctl --json stats free | "$RG_PY" -c "import json,sys; print(len(json.load(sys.stdin)['databases']))")" 0 "databases"

# --- a gzip body: counted once, estimated, and said so
lines 300 z | gzip -c >"$RG_TMP/z.gz"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Encoding: gzip' --data-binary "@$RG_TMP/z.gz" "$BASE/write?db=free")
rg_check "the gzip write stored (204)" rg_is "$code" 204 "status"
rg_check "the gzip write: requests 4, one estimated, rows grew" \
	sh -c "[ '$(unl free requests)/$(unl free estimated_requests)' = 4/1 ] && [ $(unl free rows) -gt 1500 ]"

# --- gRPC: every message's rows
"$GO_CLIENT" -target "127.0.0.1:$GPORT" -id g -db gfree -calls 4 -rows 250 -no-retry \
	>"$RG_TMP/g.json" 2>"$RG_TMP/g.err" || rg_fail "grpc-go client: $(cat "$RG_TMP/g.err")"
rg_check "gRPC: 4 calls acknowledged, 1000 rows" rg_is "$(rg_jget "$RG_TMP/g.json" "d['ok'], d['rows_acked']")" "4 1000" "ok, rows_acked"
rg_check "gRPC: requests 4, rows 1000, exact" \
	rg_is "$(unl gfree requests)/$(unl gfree rows)/$(unl gfree estimated_requests)" 4/1000/0 "requests/rows/estimated"

# --- visible: stats, /metrics, top
out=$(rg_ctl stats) || rg_fail "rowgatectl stats"
rg_log "rowgatectl stats:"$'\n'"$out"
rg_check "rowgatectl stats has a 'without a limit' table naming free and gfree" \
	rg_is "$(sed -n '/^without a limit:/,/^$/p' <<<"$out" | grep -cE '^g?free ')" 2 "rows of the table"
page=$(curl -sf "http://127.0.0.1:$MPORT/metrics") || rg_fail "/metrics"
rg_check "/metrics: rowgate_unlimited_rows_total{db=\"gfree\"} 1000" \
	grep -q '^rowgate_unlimited_rows_total{db="gfree"} 1000$' <<<"$page"
rg_check "/metrics: rowgate_unlimited_estimated_requests_total{db=\"free\"} 1" \
	grep -q '^rowgate_unlimited_estimated_requests_total{db="free"} 1$' <<<"$page"
lines 200 t >"$RG_TMP/top"
"$RG_ROWGATECTL" --socket "$RG_SOCK" --bpffs "$RG_BPFFS" --json top --once --interval 2 >"$RG_TMP/top.json" &
top_pid=$!
# writes all through its interval, whenever its first sample falls
while kill -0 $top_pid 2>/dev/null; do
	curl -s -o /dev/null --data-binary "@$RG_TMP/top" "$BASE/write?db=free"
done
wait $top_pid || rg_fail "rowgatectl top --once failed"
rg_check "top: free has no limit and passes rows ($(cat "$RG_TMP/top.json"))" \
	"$RG_PY" -c "import json,sys; d=[r for r in json.load(open(sys.argv[1]))['databases'] if r['db']=='free'][0]
assert d['unlimited'] and d['limit'] == 0 and d['admitted_rows_per_s'] > 0, d" "$RG_TMP/top.json"
table=$("$RG_ROWGATECTL" --socket "$RG_SOCK" --bpffs "$RG_BPFFS" top --once --interval 0.2) || rg_fail "top table"
rg_check "top's table says LIMIT none for free" grep -qE '^free +none ' <<<"$table"

# --- a limit set: charged as before, the unlimited counters stop
before=$(unl free rows)
rg_ctl limit set free 100000 >/dev/null || rg_fail "limit set free"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$RG_TMP/b1" "$BASE/write?db=free")
rg_check "limited write stored (204)" rg_is "$code" 204 "status"
rg_check "limited: admitted_rows 500, unlimited rows unchanged" \
	rg_is "$(rg_stat free admitted_rows)/$(unl free rows)" "500/$before" "admitted/unlimited rows"
rg_pass
