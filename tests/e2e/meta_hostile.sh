#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgate-meta under hostile input: nothing changes a limit without the
# token; bad limit values, database names, node ids, heartbeats and bodies
# are refused with a clear error and change nothing; bodies over 8 MiB are
# 413; clients without the token cost no memory for their bodies (peak RSS
# with 40 concurrent 7 MiB unauthenticated uploads).
source "$(dirname "$0")/meta_lib.sh"
rg_require_root
rg_require_cmd curl "$RG_PY"
[ -x "$RG_META" ] || rg_fail "build first: $RG_META is missing"
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$META_TOKEN_FILE"
meta_start_allocator a --state-file "$RG_TMP/meta-limits.json"
url=$META_URL_a
pid=$META_PID_a
auth="Authorization: Bearer $(cat "$META_TOKEN_FILE")"

# call METHOD PATH [BODY-FILE|-d DATA] [curl args...]: prints "CODE BODY"
call() {
	local method=$1 path=$2; shift 2
	curl -s -o "$RG_TMP/reply" -w '%{http_code}' -X "$method" "$@" "$url$path" >"$RG_TMP/code"
	printf '%s %s\n' "$(cat "$RG_TMP/code")" "$(cat "$RG_TMP/reply")"
}
expect() { # expect CODE WHAT METHOD PATH [curl args...]
	local want=$1 what=$2 out; shift 2
	out=$(call "$@")
	case $out in
	"$want "*'"ok":false'*'"error":"'?*) rg_log "ok: $what -> $out" ;;
	"$want "*) [ "$want" = 200 ] && rg_log "ok: $what -> $out" ||
		rg_fail "$what: no error message: $out" ;;
	*) rg_fail "$what: want $want, got $out" ;;
	esac
}
json() { printf '%s' "$1" >"$RG_TMP/body"; echo "--data-binary @$RG_TMP/body"; }

expect 200 "valid limit" PUT /v1/limits/valid -H "$auth" --data-binary '{"limit":"100"}'

# no credential, a wrong one, the wrong scheme
expect 401 "no token" PUT /v1/limits/valid --data-binary '{"limit":"1"}'
expect 401 "wrong token" PUT /v1/limits/valid -H "Authorization: Bearer nope" \
	--data-binary '{"limit":"1"}'
expect 401 "basic auth" PUT /v1/limits/valid -u "x:$(cat "$META_TOKEN_FILE")" \
	--data-binary '{"limit":"1"}'
expect 401 "delete without token" DELETE /v1/limits/valid
expect 401 "heartbeat without token" POST /v1/heartbeat --data-binary '{"node_id":"fe"}'

# limit values
for v in '"-1"' '"1e3"' '"18446744073709551616"' '-5' '"5 "' '" 5"' '"0x10"' '1.5' \
	'null' '"1000/s"' '["5"]'; do
	expect 400 "limit $v" PUT /v1/limits/valid -H "$auth" --data-binary "{\"limit\":$v}"
done
expect 400 "no limit" PUT /v1/limits/valid -H "$auth" --data-binary '{}'
expect 400 "not JSON" PUT /v1/limits/valid -H "$auth" --data-binary 'limit=5'
expect 400 "JSON nested deeper than jansson allows" PUT /v1/limits/valid -H "$auth" \
	--data-binary "$(printf '[%.0s' $(seq 3000))"

# database names
long=$(printf 'n%.0s' $(seq 64))
for db in "$long" 'a$b' 'a%20b' 'greptime-' '%00x' 'valid%00x'; do
	expect 400 "database '$db'" PUT "/v1/limits/$db" -H "$auth" --data-binary '{"limit":"1"}'
done
expect 404 "database 'a%2Fb' (a path)" PUT "/v1/limits/a%2Fb" -H "$auth" --data-binary '{"limit":"1"}'

# heartbeats
hb() { expect 400 "heartbeat: $1" POST /v1/heartbeat -H "$auth" --data-binary "$2"; }
hb "node id with a space" '{"node_id":"fe 1"}'
hb "node id of 64 bytes" "{\"node_id\":\"$long\"}"
hb "empty node id" '{"node_id":""}'
hb "node id not a string" '{"node_id":5}'
hb "negative rate" '{"node_id":"fe","databases":[{"db":"valid","admitted_rows_per_s":-1,"rejected_rows_per_s":0}]}'
hb "rate over 64 bits" '{"node_id":"fe","databases":[{"db":"valid","admitted_rows_per_s":"18446744073709551616","rejected_rows_per_s":0}]}'
hb "bad database" '{"node_id":"fe","databases":[{"db":"a b","admitted_rows_per_s":1,"rejected_rows_per_s":0}]}'
hb "duplicate database" '{"node_id":"fe","databases":[{"db":"x","admitted_rows_per_s":1,"rejected_rows_per_s":0},{"db":"greptime-x","admitted_rows_per_s":1,"rejected_rows_per_s":0}]}'
"$RG_PY" - "$RG_TMP/many.json" <<'PY'
import json, sys
dbs = [{"db": "d%d" % i, "admitted_rows_per_s": 1, "rejected_rows_per_s": 0} for i in range(16385)]
json.dump({"node_id": "fe", "databases": dbs}, open(sys.argv[1], "w"))
PY
expect 400 "16385 databases" POST /v1/heartbeat -H "$auth" --data-binary "@$RG_TMP/many.json"

# bodies over the cap, with the token
head -c $((8 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$RG_TMP/big"
expect 413 "body over 8 MiB" PUT /v1/limits/valid -H "$auth" --data-binary "@$RG_TMP/big"

# memory: 40 concurrent unauthenticated 7 MiB uploads
head -c $((7 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$RG_TMP/upload"
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$pid/status"; }
before=$(hwm)
uploads=()
for i in $(seq 40); do
	curl -s -m 60 -o /dev/null -w '%{http_code}\n' -X PUT --data-binary "@$RG_TMP/upload" \
		"$url/v1/limits/valid" >>"$RG_TMP/codes" &
	uploads+=($!)
done
wait "${uploads[@]}"
after=$(hwm)
rg_log "peak RSS ${before} kB before, ${after} kB after 40 x 7 MiB unauthenticated uploads"
[ "$(grep -c '^401$' "$RG_TMP/codes")" = 40 ] || rg_fail "uploads: $(sort "$RG_TMP/codes" | uniq -c)"
[ $((after - before)) -lt $((32 * 1024)) ] ||
	rg_fail "peak RSS grew by $(((after - before) / 1024)) MiB for unauthenticated bodies"

# nothing but the valid call changed anything
out=$(call GET /v1/limits -H "$auth")
"$RG_PY" -c '
import json, sys
r = json.loads(sys.argv[1].split(" ", 1)[1])
assert r["ok"] and r["limits"] == [{"db": "valid", "limit": 100}], r
' "$out" || rg_fail "limits changed: $out"
kill -0 "$pid" || rg_fail "rowgate-meta died"
rg_pass "hostile inputs refused; limits are only what the token set"
