#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, which rows: on a port of profile victoriametrics rowgate charges
# each database exactly the samples victoria-metrics (1.79) stores, request
# by request, for line protocol and remote write:
#   - uncompressed line protocol (copied and counted by rowgated under these
#     rules, the kernel charging at most one row per 4 bytes until then):
#     '#' is a comment only in a line's first byte (" #f=1" is stored, as
#     metric "#f"), blank and CRLF lines store nothing, a line of three
#     fields stores three samples;
#   - gzip line protocol, reconciled: one sample per field, none for a line
#     victoria-metrics rejects (no field, bad integer, trailing space), none
#     for a NaN field;
#   - line protocol under a coding victoria-metrics does not undo ("GZIP",
#     zstd, a second header line after "identity"): it reads the bytes as
#     they are, so does rowgate;
#   - remote write: NaN samples are not stored, staleness markers are;
#   - a line's `db` tag, a series' `db` label file its samples under that
#     database, not the query's: that database is charged.
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_cmd gzip zstd
rg_setup
# kill -9 is asynchronous: reap rowgated before the bpffs is unmounted
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
BASE="http://127.0.0.1:$RG_PORT"
BIG=1000000000
for db in lpraw lpgz lpupper lpzstd; do rg_ctl limit set $db $BIG >/dev/null; done
rg_ctl limit set prom_nan $BIG >/dev/null

post() { # post FILE URL [curl args]: HTTP status
	local f=$1 u=$2; shift 2
	curl -s -o /dev/null -w '%{http_code}' --data-binary "@$f" "$u" "$@"
}
# settle DB: every copied request of the database counted (or none copied)
settle() {
	local deadline=$((SECONDS + 10))
	while :; do
		rg_ctl --json stats "$1" | "$RG_PY" -c '
import json, sys
d = json.load(sys.stdin)["databases"][0]
n = [0, 0]
for p in d.get("protocols", {}).values():
    n[0] += p.get("admitted_requests", 0) + p.get("rejected_requests", 0)
    n[1] += p.get("reconciled_requests", 0) + p.get("undecodable_requests", 0) + p.get("unreconciled_requests", 0)
sys.exit(0 if n[1] >= n[0] else 1)' && return 0
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}
# same DB SELECTOR WHAT: charged rows == stored samples, exactly
same() {
	local charged stored
	settle "$1" || rg_fail "$1: reconciliation did not settle"
	charged=$(rg_stat "$1" admitted_rows)
	stored=$(rg_vm_rows_wait "$2" "$charged")
	rg_check "$3: charged $charged == stored $stored" [ "$charged" -eq "$stored" ]
}

printf 'm1 f=1\n #f=1\n# comment\n\n   \n\t\r\nm2,t=a g=2\r\n#h=3\n  #k=4\nm3 a=1,b=2,c=3' >"$RG_TMP/raw.lp"
rg_check "uncompressed line protocol admitted" [ "$(post "$RG_TMP/raw.lp" "$BASE/write?db=lpraw")" = 204 ]
same lpraw '{db="lpraw"}' "uncompressed, comments only in the first byte"
rg_check "seven samples stored (m1_f, #f, m2_g, #k, m3_a..c: $(rg_stat lpraw admitted_rows))" \
	[ "$(rg_stat lpraw admitted_rows)" -eq 7 ]
est=$(rg_ctl --json stats lpraw | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["databases"][0]["protocols"]["influx"]["estimated_rows"])')
rg_check "the kernel's estimate (one row per 4 bytes: $est) was not below the 7 samples" [ "$est" -ge 7 ]

# reconciled: fields, rejected lines, NaN, quoted strings, escapes
cat >"$RG_TMP/fields.lp" <<'LP'
cpu,host=a usage=1,idle=2,steal=3
cpu,host=b usage=1,idle=NaN,note="a b,c=d" 1700000000000000000
cpu,host=c usage=1 
cpu,host=d n=5i,m=7u,bad=-7u
cpu,host=e
cpu,host\ f x\=y=1,z="nan",w=t
 #lead=1,more=2
#comment=1
cpu,host=g v=1,w=2  1700000000000000001
LP
gzip -c "$RG_TMP/fields.lp" >"$RG_TMP/fields.gz"
rg_check "gzip line protocol admitted" \
	[ "$(post "$RG_TMP/fields.gz" "$BASE/write?db=lpgz" -H 'Content-Encoding: gzip')" = 204 ]
same lpgz '{db="lpgz"}' "gzip line protocol, one row per stored field"
rg_check "9 samples stored ($(rg_stat lpgz admitted_rows))" [ "$(rg_stat lpgz admitted_rows)" -eq 9 ]

# codings victoria-metrics does not undo: the bytes are read as they are
printf 'up1 f=1,g=2\nup2 f=3\n' >"$RG_TMP/upper.lp"
rg_check "'Content-Encoding: GZIP' on a plain body admitted" \
	[ "$(post "$RG_TMP/upper.lp" "$BASE/write?db=lpupper" -H 'Content-Encoding: GZIP')" = 204 ]
same lpupper '{db="lpupper"}' "GZIP (not gzip): the plain body's 3 fields"
# two header lines: Go servers read the first one only
rg_ctl limit set lpdup $BIG >/dev/null
rg_check "two Content-Encoding lines (identity, then gzip) on a plain body admitted" \
	[ "$(post "$RG_TMP/upper.lp" "$BASE/write?db=lpdup" -H 'Content-Encoding: identity' \
		-H 'Content-Encoding: gzip')" = 204 ]
same lpdup '{db="lpdup"}' "identity then gzip: the plain body's 3 fields"
rg_ctl limit set lpdup2 $BIG >/dev/null
rg_check "two Content-Encoding lines (gzip, then identity) on a gzip body admitted" \
	[ "$(post "$RG_TMP/fields.gz" "$BASE/write?db=lpdup2" -H 'Content-Encoding: gzip' \
		-H 'Content-Encoding: identity')" = 204 ]
same lpdup2 '{db="lpdup2"}' "gzip then identity: decoded, 9 samples"
zstd -q -c "$RG_TMP/fields.lp" >"$RG_TMP/fields.zst"
post "$RG_TMP/fields.zst" "$BASE/write?db=lpzstd" -H 'Content-Encoding: zstd' >/dev/null
same lpzstd '{db="lpzstd"}' "zstd: read as raw line protocol"

# remote write: 3 series of 10 samples, one NaN and one staleness marker each
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_TMP/nan.bin" <<'PY'
import struct, sys, time
from remote_write import fld, label, sample_bits, snappy_literal
NAN, STALE = 0x7ff8000000000001, 0x7ff0000000000002
t0 = int(time.time() * 1000) - 600_000
req = b""
for s in range(3):
    ts = label("__name__", "rg_nan") + label("series", str(s))
    for j in range(10):
        v = NAN if j == 3 else STALE if j == 9 else struct.unpack("<Q", struct.pack("<d", j))[0]
        ts += sample_bits(v, t0 + j * 1000)
    req += fld(1, ts)
open(sys.argv[1], "wb").write(snappy_literal(req))
PY
rg_check "remote write with NaN samples admitted" \
	[ "$(post "$RG_TMP/nan.bin" "$BASE/api/v1/write?db=prom_nan" -H 'Content-Encoding: snappy' -H 'Content-Type: application/x-protobuf')" = 204 ]
same prom_nan '{__name__="rg_nan"}' "remote write: NaN not stored, staleness markers stored"
rg_check "27 samples charged ($(rg_stat prom_nan admitted_rows))" [ "$(rg_stat prom_nan admitted_rows)" -eq 27 ]
# the database a line or a series names is where victoria-metrics files it
# (app/vminsert/influx insertRows: a `db` tag replaces the query's db; the
# last one with a value wins): that database is charged, even when the
# query's database has no limit
for db in dbq dbt dbt2 dbt3 dbr; do rg_ctl limit set $db $BIG >/dev/null; done
printf 'dt,db=dbt a=1,b=2\ndt,db=,k=1 a=3\ndt,db=x,db=dbt2 a=4\ndt c=5\n' >"$RG_TMP/dbtag.lp"
rg_check "line protocol with db tags admitted" \
	[ "$(post "$RG_TMP/dbtag.lp" "$BASE/write?db=dbq")" = 204 ]
charged_is() { [ "$(rg_stat "$1" admitted_rows)" = "$2" ]; }
for want in dbt:2 dbt2:1 dbq:2; do
	db=${want%:*} n=${want#*:}
	stored=$(rg_vm_rows_wait "{db=\"$db\"}" "$n")
	rg_check "$db: victoria-metrics stored $n samples ($stored)" [ "$stored" -eq "$n" ]
	rg_wait_for 10 charged_is "$db" "$n" ||
		rg_fail "$db: charged $(rg_stat "$db" admitted_rows), stored $n"
	rg_log "ok: $db charged $n"
done
printf 'dt3,db=dbt3 a=1,b=2,c=3\n' >"$RG_TMP/dbtag3.lp"
rg_check "a db tag through a database without a limit admitted" \
	[ "$(post "$RG_TMP/dbtag3.lp" "$BASE/write?db=nolimit")" = 204 ]
stored=$(rg_vm_rows_wait '{db="dbt3"}' 3)
rg_check "dbt3: victoria-metrics stored 3 samples ($stored)" [ "$stored" -eq 3 ]
rg_wait_for 10 charged_is dbt3 3 || rg_fail "dbt3: charged $(rg_stat dbt3 admitted_rows), stored 3"
rg_log "ok: dbt3 charged 3"

# only GreptimeDB knows catalogs: victoria-metrics files "greptime-dbg" as
# it is, so database dbg is not charged for it
rg_ctl limit set dbg $BIG >/dev/null
printf 'dg,db=greptime-dbg a=1\n' >"$RG_TMP/dbtagg.lp"
rg_check "a greptime- db tag admitted" [ "$(post "$RG_TMP/dbtagg.lp" "$BASE/write?db=dbq")" = 204 ]
stored=$(rg_vm_rows_wait '{db="greptime-dbg"}' 1)
rg_check "greptime-dbg: victoria-metrics stored 1 sample ($stored)" [ "$stored" -eq 1 ]
settle dbq || rg_fail "dbq: reconciliation did not settle"
rg_check "dbg not charged for greptime-dbg ($(rg_stat dbg admitted_rows))" \
	[ "$(rg_stat dbg admitted_rows)" -eq 0 ]

# remote write: victoria-metrics ignores the query's db; a series' `db`
# label files it
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_TMP/dblabel.bin" <<'PY'
import sys, time
from remote_write import fld, label, sample, snappy_literal
t0 = int(time.time() * 1000) - 600_000
ts = label("__name__", "rg_dbl") + label("db", "dbr")
for j in range(5):
    ts += sample(j, t0 + j * 1000)
open(sys.argv[1], "wb").write(snappy_literal(fld(1, ts)))
PY
rg_check "remote write with a db label admitted" \
	[ "$(post "$RG_TMP/dblabel.bin" "$BASE/api/v1/write?db=dbq" -H 'Content-Encoding: snappy' -H 'Content-Type: application/x-protobuf')" = 204 ]
stored=$(rg_vm_rows_wait '{db="dbr"}' 5)
rg_check "dbr: victoria-metrics stored 5 samples ($stored)" [ "$stored" -eq 5 ]
rg_wait_for 10 charged_is dbr 5 || rg_fail "dbr: charged $(rg_stat dbr admitted_rows), stored 5"
rg_log "ok: dbr charged 5"
rg_pass
