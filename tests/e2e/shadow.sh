#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Shadow mode (rowgatectl limit set DB N --shadow): a limit that counts what
# it would refuse and refuses nothing.  The same replayed load, a burst of
# 10 writes of 500 rows at 100 rows/s (the first admitted into debt, the
# rest refused until it is repaid, 5 s), runs against an enforcing limit
# and a shadow one, over HTTP (victoria-metrics) and gRPC (grpc-go's
# GreptimeDatabase): in shadow every write is stored, none charged but the
# first, and would_reject counts exactly what enforcement refused.  The
# mode survives a restart (state file), shows in limit show, stats and
# /metrics, and a limit set again without --shadow enforces.
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl "$RG_PY"
rg_require_grpc_go client server

rg_mount_bpffs
rg_start_vm
rg_start_grpc_go_server
MPORT=$(rg_free_port) || rg_fail "no free port"
RG_ARGS=(--port "$GPORT=greptimedb" --metrics "127.0.0.1:$MPORT")
rg_start_rowgated "${RG_ARGS[@]}"

burst() { # DB: 10 writes of 500 rows, back to back; prints the status codes
	local i body
	for i in $(seq 10); do
		body=$("$RG_PY" -c "print(''.join('m,w=$i v=%d %d\n' % (j, 1700000000000 + $i * 1000 + j) for j in range(500)), end='')")
		curl -s -o /dev/null -w '%{http_code}\n' --data-binary "$body" "http://127.0.0.1:$RG_PORT/write?db=$1"
	done
}
shadow_stat() { rg_ctl --json stats "$1" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['$2'])"; }

# --- HTTP: enforcing, then shadow, on the same load
rg_ctl limit set enf 100 >/dev/null || rg_fail "limit set enf"
out=$(rg_ctl limit set sh 100 --shadow) || rg_fail "limit set sh --shadow"
rg_check "the CLI says shadow mode: $out" grep -q "shadow mode" <<<"$out"
codes=$(burst enf)
rejected=$(grep -c 429 <<<"$codes")
rg_log "enforcing: $(echo $codes)"
rg_check "enforcing: 1 admitted, 9 refused" [ "$(grep -c 204 <<<"$codes")" = 1 -a "$rejected" = 9 ]
codes=$(burst sh)
rg_log "shadow: $(echo $codes)"
rg_check "shadow: all 10 writes pass" [ "$(grep -c 204 <<<"$codes")" = 10 ]
rg_check "shadow: would_reject_requests = the refusals enforcing made ($rejected)" \
	[ "$(shadow_stat sh would_reject_requests)" = "$rejected" ]
rg_check "shadow: only the first write charged (admitted_rows 500)" \
	rg_is "$(rg_stat sh admitted_rows)/$(rg_stat sh rejected_requests)" 500/0 "admitted rows/rejected requests"
stored=$(rg_vm_rows_wait '{db="sh"}' 5000)
rg_check "shadow: victoria-metrics stores all 5000 rows" rg_is "$stored" 5000 "stored rows"
rg_check "enforcing is unaffected: not in shadow mode, no would-be refusals" \
	[ "$(rg_ctl --json stats enf | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin)['databases'][0]; print(d['shadow'], 'would_reject_requests' in d)")" = "False False" ]

# --- gRPC: the same burst as 10 unary calls
rg_ctl limit set genf 100 >/dev/null && rg_ctl limit set gsh 100 --shadow >/dev/null || rg_fail "limit set g*"
for db in genf gsh; do
	env GRPC_GO_RETRY=on "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id "$db" -db "$db" -calls 10 -rows 500 \
		-no-retry >"$RG_TMP/$db.json" 2>"$RG_TMP/$db.err" || true
	rg_log "$db: $(cat "$RG_TMP/$db.json")"
done
g_failed=$(rg_jget "$RG_TMP/genf.json" "d['failed']")
rg_check "gRPC enforcing: 9 of 10 calls refused (code 8)" \
	[ "$g_failed" = 9 -a "$(rg_jget "$RG_TMP/genf.json" "d['codes'].get('8', 0)")" = 9 ]
rg_check "gRPC shadow: all 10 calls succeed, 5000 rows acknowledged" \
	[ "$(rg_jget "$RG_TMP/gsh.json" "d['ok']")" = 10 -a "$(rg_jget "$RG_TMP/gsh.json" "d['rows_acked']")" = 5000 ]
rg_check "gRPC shadow: would_reject = the enforcing refusals ($g_failed calls, $((g_failed * 500)) rows)" \
	[ "$(shadow_stat gsh would_reject_requests)" = "$g_failed" -a \
	  "$(shadow_stat gsh would_reject_rows)" = $((g_failed * 500)) ]

# --- visible: limit show, /metrics
rg_check "limit show names the mode" sh -c "'$RG_ROWGATECTL' --socket '$RG_SOCK' limit show | grep -E '^sh +100 +shadow'"
page=$(curl -sf "http://127.0.0.1:$MPORT/metrics") || rg_fail "/metrics"
rg_check "/metrics: rowgate_would_reject_requests_total{db=\"sh\"} $rejected" \
	grep -q "^rowgate_would_reject_requests_total{db=\"sh\"} $rejected\$" <<<"$page"
rg_check "/metrics: rowgate_shadow{db=\"gsh\"} 1, none for genf" \
	sh -c "grep -q '^rowgate_shadow{db=\"gsh\"} 1' && ! grep -q 'rowgate_shadow{db=\"genf\"}'" <<<"$page"

# --- rowgatectl top: a burst during its interval shows as would-be refusals
"$RG_ROWGATECTL" --socket "$RG_SOCK" --bpffs "$RG_BPFFS" --json top --once --interval 2 >"$RG_TMP/top.json" &
top_pid=$!
burst sh >/dev/null
wait $top_pid || rg_fail "rowgatectl top --once failed"
rg_check "top: sh in shadow mode with would-be refusals per second ($(cat "$RG_TMP/top.json"))" \
	"$RG_PY" -c "import json,sys; d=[r for r in json.load(open(sys.argv[1]))['databases'] if r['db']=='sh'][0]
assert d['shadow'] and d['would_reject_requests_per_s'] > 0 and d['rejected_rows_per_s'] == 0" "$RG_TMP/top.json"

# --- a restart keeps the mode; set again without --shadow, it enforces
rg_stop_rowgated
rg_start_rowgated "${RG_ARGS[@]}"
rg_check "after a restart sh is still in shadow mode" \
	[ "$(rg_ctl --json limit show sh | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['limits'][0]['shadow'])")" = True ]
rg_ctl limit set sh 100 >/dev/null || rg_fail "limit set sh (enforce)"
codes=$(burst sh)
rg_log "enforcing again: $(echo $codes)"
rg_check "set without --shadow, sh refuses again" grep -q 429 <<<"$codes"
rg_check "... and counts no more would-be refusals" [ "$(shadow_stat sh shadow)" = False ]
rg_pass
