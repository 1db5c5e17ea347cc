#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Each guarded port counts rows by its own server's rules: one rowgated
# guards victoria-metrics (profile victoriametrics) and InfluxDB 1.x
# (profile influxdb), and the same line-protocol bytes, plain and gzip, are
# written through both.  victoria-metrics stores a sample per field and
# reads '#' as a comment only in a line's first byte; influxd stores a point
# per line and skips "  #..." lines too.  Each database is charged what its
# own server stored, in the kernel (plain, influxdb) and in rowgated
# (victoriametrics, gzip).
RG_PROFILE=victoriametrics # on RG_PORT; influxd's port is guarded as influxdb
source "$(dirname "$0")/lib.sh"
# no rule flag: the profiles alone choose the counting rules
rg_setup_vm_influxd gzip
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
for db in vmplain vmgz inplain ingz; do
	rg_ctl limit set $db 1000000000 >/dev/null || rg_fail "limit set $db"
done
rg_influx_create_dbs "$IN_PORT" inplain ingz

# 2 lines of 3 fields, a line victoria-metrics stores and influxd skips,
# a comment to both
printf 'm,k=1 a=1,b=2,c=3\nm,k=2 a=1,b=2,c=3\n  #x=4\n# comment\n' >"$RG_TMP/body.lp"
gzip -c "$RG_TMP/body.lp" >"$RG_TMP/body.gz"
post() { # post FILE URL [curl args]: HTTP status
	local f=$1 u=$2; shift 2
	curl -s -o /dev/null -w '%{http_code}' --data-binary "@$f" "$u" "$@"
}
influx_stored() { # points of measurement m in DB
	curl -sfG "http://127.0.0.1:$IN_PORT/query" --data-urlencode "db=$1" \
		--data-urlencode 'q=SELECT count(a) FROM m' |
		"$RG_PY" -c 'import json,sys; r=json.load(sys.stdin)["results"][0].get("series"); print(r[0]["values"][0][1] if r else 0)'
}

VM="http://127.0.0.1:$RG_PORT"
IN="http://127.0.0.1:$IN_PORT"
rg_check "plain to victoria-metrics" [ "$(post "$RG_TMP/body.lp" "$VM/write?db=vmplain")" = 204 ]
rg_check "gzip to victoria-metrics" \
	[ "$(post "$RG_TMP/body.gz" "$VM/write?db=vmgz" -H 'Content-Encoding: gzip')" = 204 ]
rg_check "plain to influxd" [ "$(post "$RG_TMP/body.lp" "$IN/write?db=inplain")" = 204 ]
rg_check "gzip to influxd" \
	[ "$(post "$RG_TMP/body.gz" "$IN/write?db=ingz" -H 'Content-Encoding: gzip')" = 204 ]

for db in vmplain vmgz; do
	rg_settle $db || rg_fail "$db: reconciliation did not settle"
	charged=$(rg_stat $db admitted_rows)
	stored=$(rg_vm_rows_wait "{db=\"$db\"}" 7)
	rg_check "$db: victoria-metrics stored 7 samples ($stored)" [ "$stored" -eq 7 ]
	rg_check "$db: charged $charged == stored $stored" [ "$charged" -eq "$stored" ]
done
for db in inplain ingz; do
	rg_settle $db || rg_fail "$db: reconciliation did not settle"
	charged=$(rg_stat $db admitted_rows)
	stored=$(influx_stored $db)
	rg_check "$db: influxd stored 2 points ($stored)" [ "$stored" -eq 2 ]
	rg_check "$db: charged $charged == stored $stored" [ "$charged" -eq "$stored" ]
done
rg_pass
