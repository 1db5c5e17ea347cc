#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, which rows, against Debian's InfluxDB 1.x: on a port of profile
# influxdb the rows rowgate charges a database equal the points influxd
# stores, request by request:
#   - blanks before '#' make a comment (models/points.go), blank lines store
#     nothing;
#   - a line influxd cannot parse is refused alone (a 400 "partial write";
#     the other lines are stored): the kernel, which does not parse fields,
#     charges it, so charged == stored + the refused lines, never less;
#   - only "Content-Encoding: gzip", exactly, is undone (serveWrite reads
#     Header.Get); "GZIP" on a plain body is stored as plain text, by both.
RG_PROFILE=influxdb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd influxd curl ss gzip "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
rg_mount_bpffs
rg_make_cgroup
RG_PORT=$(rg_free_port) || rg_fail "no free port"
rg_start_influxd "$RG_PORT"
rg_start_rowgated
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
BASE="http://127.0.0.1:$RG_PORT"

stored() { # stored DB: points of measurement m
	curl -sfG "$BASE/query" --data-urlencode "db=$1" --data-urlencode 'q=SELECT count(v) FROM m' |
		"$RG_PY" -c 'import json,sys; r=json.load(sys.stdin)["results"][0].get("series"); print(r[0]["values"][0][1] if r else 0)'
}
post() { # post FILE URL [curl args]: HTTP status
	local f=$1 u=$2; shift 2
	curl -s -o "$RG_TMP/resp" -w '%{http_code}' --data-binary "@$f" "$u" "$@"
}
# expect DB REFUSED WHAT: charged == stored + REFUSED (lines influxd refused)
expect() {
	local charged got deadline=$((SECONDS + 10))
	rg_settle "$1" || rg_fail "$1: reconciliation did not settle"
	charged=$(rg_stat "$1" admitted_rows)
	while got=$(stored "$1"); [ $((got + $2)) -ne "$charged" ] && [ $SECONDS -lt $deadline ]; do
		sleep 0.2
	done
	rg_check "$3: charged $charged == stored $got + refused $2" [ "$charged" -eq $((got + $2)) ]
}
for db in cm bad upper gz; do
	curl -sf -XPOST "$BASE/query" --data-urlencode "q=CREATE DATABASE $db" >/dev/null ||
		rg_fail "create database $db"
	rg_ctl limit set $db 1000000000 >/dev/null
done

printf 'm v=1 1000\n  # comment\n\t#c2\n\n   \n\t \nm v=2 2000\n # x=1\nm v=3 3000' >"$RG_TMP/cm.lp"
rg_check "comments after blanks: admitted" [ "$(post "$RG_TMP/cm.lp" "$BASE/write?db=cm")" = 204 ]
expect cm 0 "comments after blanks, blank lines"
rg_check "3 points ($(stored cm))" [ "$(stored cm)" -eq 3 ]

printf 'm v=1 1000\nthis is not a point\nm v=2 2000\nm v= 3000\n' >"$RG_TMP/bad.lp"
code=$(post "$RG_TMP/bad.lp" "$BASE/write?db=bad")
rg_check "a partial write is answered 400 by influxd ($code: $(head -c 80 "$RG_TMP/resp"))" [ "$code" = 400 ]
expect bad 2 "two refused lines, the others stored"

printf 'm v=1 1000\nm v=2 2000\n' >"$RG_TMP/upper.lp"
rg_check "'Content-Encoding: GZIP' on a plain body admitted" \
	[ "$(post "$RG_TMP/upper.lp" "$BASE/write?db=upper" -H 'Content-Encoding: GZIP')" = 204 ]
expect upper 0 "GZIP (not gzip): read as plain text"

printf 'm v=1 1000\n  #c\nm v=2 2000\nm v=3 3000\n' | gzip -c >"$RG_TMP/gz.lp.gz"
rg_check "gzip admitted" [ "$(post "$RG_TMP/gz.lp.gz" "$BASE/write?db=gz" -H 'Content-Encoding: gzip')" = 204 ]
expect gz 0 "gzip, reconciled"
rg_pass
