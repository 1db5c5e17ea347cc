#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (d) Large, chunked and Expect: 100-continue bodies from curl: admitted ones
# reach the server byte-exact (every row stored with its value), rejected
# ones are answered cleanly and leave nothing behind.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
URL="http://127.0.0.1:$RG_PORT/write?db=bodies"

# make_body NAME BYTES: line protocol of about BYTES bytes; prints rows and value sum
make_body() {
	"$RG_PY" - "$RG_TMP/$1.lp" "$1" "$2" <<'PY'
import sys, time
path, name, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = int(time.time() * 1000) - 10_000_000
out, n, total, s = [], 0, 0, 0
while total < size:
    line = "rg_body,req=%s v=%d %d\n" % (name, n, t0 + n)
    out.append(line); total += len(line); s += n; n += 1
open(path, "w").write("".join(out))
print(n, s)
PY
}
post() { # post NAME [curl args]: prints the HTTP status
	local name=$1; shift
	curl -sS -o "$RG_TMP/$name.resp" -D "$RG_TMP/$name.hdr" -w '%{http_code}' "$@" \
		--data-binary "@$RG_TMP/$name.lp" "$URL"
}
# stored NAME: rows and value sum victoria-metrics holds for that request
stored() {
	curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null
	curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" \
		--data-urlencode "match[]={__name__=\"rg_body_v\",req=\"$1\"}" |
		"$RG_PY" -c 'import json,sys
v=[x for l in sys.stdin if l.strip() for x in json.loads(l)["values"]]
print(len(v), int(sum(v)))'
}
expect_stored() { # NAME "ROWS SUM"
	local got deadline=$((SECONDS + 20))
	while got=$(stored "$1"); [ "$got" != "$2" ] && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
	rg_check "$1 stored byte-exact: rows and value sum $2 (got $got)" [ "$got" = "$2" ]
}

rg_ctl limit set bodies 100000000 >/dev/null || rg_fail "limit set"
mb1=$(make_body mb1 1000000)
mb16=$(make_body mb16 16000000)
chk=$(make_body chunked1 1000000)
exp=$(make_body expect1 2000000)
rg_check "1 MB body admitted" [ "$(post mb1 -H 'Expect:')" = 204 ]
rg_check "16 MB body admitted (curl sends Expect: 100-continue)" [ "$(post mb16)" = 204 ]
rg_check "1 MB chunked body admitted" [ "$(post chunked1 -H 'Transfer-Encoding: chunked')" = 204 ]
rg_check "2 MB body with explicit Expect admitted" [ "$(post expect1 -H 'Expect: 100-continue')" = 204 ]
expect_stored mb1 "$mb1"
expect_stored mb16 "$mb16"
expect_stored chunked1 "$chk"
expect_stored expect1 "$exp"
rg_check "admitted rows counted exactly" [ "$(rg_stat bodies admitted_rows)" -eq \
	$(( ${mb1% *} + ${mb16% *} + ${chk% *} + ${exp% *} )) ]

# Now exhaust a small limit: everything below is rejected.
rg_ctl limit set bodies 10 >/dev/null
post mb1 -H 'Expect:' >/dev/null   # admitted on the tokens left: deep debt
r16=$(make_body rej16 16000000)
rc=$(make_body rejchunk 1000000)
rn=$(make_body rejplain 1000000)
rg_check "16 MB with Expect rejected before its body is sent" [ "$(post rej16)" = 429 ]
rg_check "its 429 says the count is an estimate" grep -q 'estimated' "$RG_TMP/rej16.resp"
rg_check "1 MB chunked rejected" [ "$(post rejchunk -H 'Transfer-Encoding: chunked')" = 429 ]
rg_check "chunked 429 counts the exact rows (${rc% *})" grep -q "rejected ${rc% *} rows" "$RG_TMP/rejchunk.resp"
rg_check "1 MB plain rejected" [ "$(post rejplain -H 'Expect:')" = 429 ]
rg_check "16 MB without Expect rejected after its body" [ "$(post rej16 -H 'Expect:')" = 429 ]
rg_check "429 carries X-Greptime-Err-Code: 6001" grep -qi '^X-Greptime-Err-Code: 6001' "$RG_TMP/rejplain.hdr"
rg_check "429 body is JSON with code 6001" "$RG_PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["code"] == 6001' "$RG_TMP/rejplain.resp"
for n in rej16 rejchunk rejplain; do
	rg_check "rejected $n stored nothing" [ "$(stored $n)" = "0 0" ]
done
rg_check "server still healthy" curl -sf -o /dev/null "http://127.0.0.1:$RG_PORT/health"
rg_pass
