#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Soak with faults: mixed admitted and rejected writes over
# line protocol (plain, gzip, chunked), Prometheus remote write, OTLP and
# Loki into one limited database of a victoria-metrics guarded by rowgated,
# for --minutes, while faults are injected in turn:
#   kill9        rowgated kill -9, restarted 2 s later (adopts the pins)
#   sigstop      rowgated SIGSTOP for --stop-s (default beyond the 30 s
#                body-copy expiry), then SIGCONT
#   limit        limit doubled for a while, then set back
#   unset        limit unset (unlimited) for a while, then set back
#   server-restart  victoria-metrics stopped (SIGTERM) and started again
#   meta-kill    with --meta: rowgate-meta (the allocator that holds the
#                limits and grants the quota) kill -9, restarted after
#                twice its lease; the frontend falls back to the limit
# At the end (soak_check.py): every admitted line-protocol write stored
# exactly once, no rejected one stored, every request answered within
# --stall-s, no request unanswered outside server restarts, and the rows
# admitted in every 10 s window with a settled limit within the limit plus
# one second of bucket capacity and one batch per writer.
#
#   bench/soak/soak.sh [--minutes 30] [--limit 2000] [--procs 4] [--pause 0.02]
#                      [--stop-s 35] [--gap-s 20] [--stall-s 5] [--results FILE]
#                      [--meta]
# --meta: distributed mode, rowgated --meta with one rowgate-meta (state
# file) that holds the limit; limit changes go through it.
# Needs root, victoria-metrics, bpftool; exit 0 pass, 1 fail, 77 skipped.
HERE=$(cd "$(dirname "$0")" && pwd)

MINUTES=30 LIMIT=2000 PROCS=4 PAUSE=0.02 STOP_S=35 GAP_S=20 STALL_S=5 RESULTS="" META=0
usage() {
	sed -n '2,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) MINUTES=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--procs) PROCS=$2; shift 2 ;;
	--pause) PAUSE=$2; shift 2 ;;
	--stop-s) STOP_S=$2; shift 2 ;;
	--gap-s) GAP_S=$2; shift 2 ;;
	--stall-s) STALL_S=$2; shift 2 ;;
	--results) RESULTS=$2; shift 2 ;;
	--meta) META=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "soak.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
	esac
done
for v in MINUTES LIMIT PROCS PAUSE STOP_S GAP_S STALL_S; do
	[[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "soak.sh: ${v,,} must be a number, got '${!v}'" >&2; exit 2; }
done
# after the options: a usage error leaves nothing behind
RG_PROFILE=greptimedb # every protocol's GreptimeDB route (victoria-metrics stores what it can)
source "$HERE/../../tests/e2e/meta_lib.sh"
rg_require_cmd bpftool
RG_COUNT=$RG_BUILD/rg-count
[ -x "$RG_COUNT" ] || rg_fail "build first: $RG_COUNT is missing"
DB=soak
SECS=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
OUT=$RG_TMP/out
mkdir -p "$OUT" "$RG_TMP/bodies"

RG_ARGS=()
META_LEASE_MS=3000
# meta_up PORT: rowgate-meta on PORT (restarts keep port and state file)
meta_up() {
	"$RG_META" --listen "127.0.0.1:$1" --token-file "$META_TOKEN_FILE" \
		--state-file "$RG_TMP/meta-limits.json" --heartbeat-interval 500 \
		--lease "$META_LEASE_MS" --log-level info >>"$RG_TMP/meta.log" 2>&1 &
	META_PID=$!
	rg_on_exit "kill -9 $META_PID; wait $META_PID"
	rg_wait_for 10 curl -sf "http://127.0.0.1:$1/v1/health" || rg_fail "rowgate-meta did not come up"
}
if [ "$META" = 1 ]; then
	meta_require
	META_PORT=$(rg_free_port) || rg_fail "no free port"
	META_URL=http://127.0.0.1:$META_PORT
	meta_up "$META_PORT"
	RG_ARGS=(--meta "$META_URL" --node-id fe1 --token-file "$META_TOKEN_FILE")
	set_limit() { meta_ctl limit set "$DB" "$1" >/dev/null; }
	unset_limit() { meta_ctl limit unset "$DB" >/dev/null; }
else
	set_limit() { rg_ctl limit set "$DB" "$1" >/dev/null; }
	unset_limit() { rg_ctl limit unset "$DB" >/dev/null; }
fi
rg_setup "${RG_ARGS[@]}"
# kill -9 is asynchronous: reap rowgated before the bpffs is unmounted
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
set_limit "$LIMIT" || rg_fail "limit set"
# in --meta mode the limit reaches rowgated with a heartbeat
rg_wait_for 15 bash -c "[ \"\$('$RG_ROWGATECTL' --socket '$RG_SOCK' --json stats $DB 2>/dev/null |
	$RG_PY -c 'import json,sys; print(json.load(sys.stdin)[\"databases\"][0][\"limit\"])')\" = $LIMIT ]" ||
	rg_fail "rowgated does not enforce the limit"

# bodies of the protocols rowgated reconciles, with their exact rows
printf '{' >"$RG_TMP/bodies/rows.json"
sep=""
for spec in prom-rw:200 otlp-metrics:150 loki-json:100; do
	p=${spec%%:*} n=${spec#*:}
	"$RG_COUNT" -p "$p" --encode "$n" --metric rg_soak_$((RANDOM)) >"$RG_TMP/bodies/$p.bin" ||
		rg_fail "rg-count --encode $p"
	printf '%s"%s": %d' "$sep" "$p" "$n" >>"$RG_TMP/bodies/rows.json"
	sep=", "
done
echo '}' >>"$RG_TMP/bodies/rows.json"

mono_ns() { "$RG_PY" -c 'import time; print(time.monotonic_ns())'; }
event() { printf '[%s, %s, "%s", %s]\n' "$1" "$2" "$3" "${4:-0}" >>"$OUT/events.jsonl"; }
: >"$OUT/events.jsonl"

# the guarded server, stopped cleanly (it flushes what it admitted) and
# started again on the same port, storage and cgroup
restart_vm() {
	kill -TERM "$VM_PID"
	wait "$VM_PID" 2>/dev/null
	(
		echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
		exec victoria-metrics -httpListenAddr="127.0.0.1:$RG_PORT" \
			-storageDataPath="$RG_TMP/vm" -loggerLevel=ERROR \
			-search.disableCache -retentionPeriod=100y
	) >>"$RG_TMP/vm.log" 2>&1 &
	VM_PID=$!
	rg_on_exit "kill -9 $VM_PID; wait $VM_PID"
	rg_wait_for 30 curl -sf "http://127.0.0.1:$RG_PORT/health" ||
		rg_fail "victoria-metrics did not come back"
}

rg_log "soak: $MINUTES min$([ "$META" = 1 ] && echo ", distributed (rowgate-meta)"), limit $LIMIT rows/s, $PROCS writers, faults every ${GAP_S}s, SIGSTOP ${STOP_S}s"
"$RG_PY" "$HERE/soak_load.py" --port "$RG_PORT" --db "$DB" --seconds "$SECS" --procs "$PROCS" \
	--bodies "$RG_TMP/bodies" --out "$OUT" --pause "$PAUSE" --timeout $((STALL_S * 4)) >"$RG_TMP/load.log" 2>&1 &
load_pid=$!
rg_on_exit "kill $load_pid"
end=$((SECONDS + SECS))
faults=(kill9 limit sigstop unset server-restart)
[ "$META" = 0 ] || faults=(meta-kill "${faults[@]}")
i=0
while :; do
	sleep "$GAP_S"
	[ $((SECONDS + STOP_S + 5)) -lt $end ] || break
	f=${faults[$((i % ${#faults[@]}))]}
	i=$((i + 1))
	t0=$(mono_ns)
	case $f in
	kill9)
		kill -9 "$RG_PID"
		wait "$RG_PID" 2>/dev/null
		sleep 2
		rg_start_rowgated "${RG_ARGS[@]}"
		;;
	sigstop)
		kill -STOP "$RG_PID"
		sleep "$STOP_S"
		kill -CONT "$RG_PID"
		rg_wait_for 10 rg_ctl limit show || rg_fail "rowgated does not answer after SIGCONT"
		;;
	limit)
		set_limit $((LIMIT * 2)) || rg_fail "limit set"
		event "$t0" "$(mono_ns)" limit $((LIMIT * 2))
		sleep 10
		t0=$(mono_ns)
		set_limit "$LIMIT" || rg_fail "limit set"
		;;
	unset)
		unset_limit || rg_fail "limit unset"
		event "$t0" "$(mono_ns)" limit 0
		sleep 5
		t0=$(mono_ns)
		set_limit "$LIMIT" || rg_fail "limit set"
		;;
	server-restart)
		restart_vm
		;;
	meta-kill)
		kill -9 "$META_PID"
		wait "$META_PID" 2>/dev/null
		sleep $((2 * META_LEASE_MS / 1000))
		meta_up "$META_PORT"
		;;
	esac
	case $f in
	limit | unset) event "$t0" "$(mono_ns)" limit "$LIMIT" ;;
	*) event "$t0" "$(mono_ns)" "$f" ;;
	esac
	rg_log "fault $i: $f"
done
wait "$load_pid" || rg_fail "load generator failed: $(tail -3 "$RG_TMP/load.log")"

# reconciliation settles: no body copy pending
settled() {
	rg_ctl --json stats "$DB" | "$RG_PY" -c '
import json,sys
d=json.load(sys.stdin)["databases"][0]["protocols"]
sys.exit(0 if all(p.get("reconciled_requests",0)+p.get("undecodable_requests",0)
  +p.get("unreconciled_requests",0) >= p.get("admitted_requests",0)+p.get("rejected_requests",0)
  for n,p in d.items() if n != "influx") else 1)'
}
rg_wait_for 30 settled || rg_log "reconciliation did not settle in 30 s (reported below)"
curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null
# victoria-metrics makes fresh rows searchable within seconds: wait until
# the stored count stops moving
prev=-1
for _ in $(seq 1 30); do
	n=$(rg_vm_rows '{__name__="rg_soak_v"}')
	[ "$n" = "$prev" ] && break
	prev=$n
	sleep 1
done
curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" --data-urlencode 'match[]={__name__="rg_soak_v"}' \
	>"$RG_TMP/export.jsonl" || rg_fail "export from victoria-metrics failed"
rg_ctl --json stats "$DB" >"$RG_TMP/stats.json"
rc=0
"$RG_PY" "$HERE/soak_check.py" --out "$OUT" --export "$RG_TMP/export.jsonl" --limit "$LIMIT" \
	--stall-s "$STALL_S" >"$RG_TMP/figures.json" 2>"$RG_TMP/violations.txt" || rc=$?
cat "$RG_TMP/figures.json"
"$RG_PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))["databases"][0]
print("rowgate counters:", {k: d[k] for k in ("admitted_requests","admitted_rows","rejected_requests","rejected_rows","unenforced_requests")})
for n,p in sorted(d["protocols"].items()):
    print("  %s:" % n, {k: p.get(k,0) for k in ("admitted_requests","admitted_rows","rejected_requests","reconciled_requests","unreconciled_requests","undecodable_requests")})' \
	"$RG_TMP/stats.json"
[ -z "$RESULTS" ] || cp "$RG_TMP/figures.json" "$RESULTS"
if [ "$rc" -ne 0 ]; then
	cat "$RG_TMP/violations.txt"
	rg_fail "soak invariants violated"
fi
rg_pass "soak of $MINUTES min: every invariant held"
