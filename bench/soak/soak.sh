#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Soak with faults: mixed admitted and rejected writes over
# line protocol (plain, gzip, chunked), Prometheus remote write, OTLP and
# Loki, and (--udp) UDP line protocol through rowgate's XDP program, into one
# limited database of a victoria-metrics guarded by rowgated, for --minutes,
# while faults are injected in turn:
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
# UDP: the datagrams (1-20 rows, tagged dg=<id>) and HTTP writes charge the
# same bucket; every datagram sent is counted by XDP (admitted, dropped,
# unlimited), every stored one whole and once, the passed ones not stored
# no more than the unstored ones sent during server restarts and no fewer
# than the kernel's UDP drop counters, and the windows include UDP rows.
# The whole run is then in a network namespace of its own (loopback for
# HTTP and rowgate-meta) with a veth pair to a sender namespace; XDP sits
# on the server's end (docs/xdp.md).
#
#   bench/soak/soak.sh [--minutes 30] [--limit 2000] [--procs 4] [--pause 0.02]
#                      [--stop-s 35] [--gap-s 20] [--stall-s 5] [--results FILE]
#                      [--meta] [--udp | --no-udp] [--udp-rate 50]
# --udp: on by default when the machine can make the namespaces (root, ip,
# nsenter, veth); without them it is left out with a line saying why.
# --udp-rate: datagrams per second (default 50).
# --meta: distributed mode, rowgated --meta with one rowgate-meta (state
# file) that holds the limit; limit changes go through it.
# Needs root, victoria-metrics, bpftool; exit 0 pass, 1 fail, 77 skipped.
HERE=$(cd "$(dirname "$0")" && pwd)

MINUTES=30 LIMIT=2000 PROCS=4 PAUSE=0.02 STOP_S=35 GAP_S=20 STALL_S=5 RESULTS="" META=0
UDP=auto UDP_RATE=50
ARGS=("$@")
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
	--udp) UDP=1; shift ;;
	--no-udp) UDP=0; shift ;;
	--udp-rate) UDP_RATE=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "soak.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
	esac
done
for v in MINUTES LIMIT PROCS PAUSE STOP_S GAP_S STALL_S UDP_RATE; do
	[[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "soak.sh: ${v,,} must be a number, got '${!v}'" >&2; exit 2; }
done
# after the options: a usage error leaves nothing behind

# UDP: this script runs again inside the server's namespace (nsenter keeps
# the mounts: cgroups and bpffs stay visible); the namespaces are removed
# here whatever happens inside
if [ -n "${SOAK_NS_SRV:-}" ]; then
	UDP=1
elif [ "$UDP" != 0 ]; then
	why=""
	[ "$(id -u)" = 0 ] || why="needs root"
	for c in ip nsenter; do
		[ -n "$why" ] || command -v "$c" >/dev/null || why="needs $c"
	done
	ns_srv=rgsoak-srv-$$ ns_cli=rgsoak-cli-$$ if_srv=rgsks$$ if_cli=rgskc$$
	ns_del() { ip netns del "$ns_srv" 2>/dev/null; ip netns del "$ns_cli" 2>/dev/null; }
	if [ -z "$why" ]; then
		if ! { ip netns add "$ns_srv" && ip netns add "$ns_cli"; } 2>/dev/null; then
			why="cannot create network namespaces"
		elif ! ip -n "$ns_srv" link add "$if_srv" type veth peer name "$if_cli" netns "$ns_cli" 2>/dev/null; then
			why="cannot create a veth pair"
		fi
		[ -z "$why" ] || ns_del
	fi
	if [ -n "$why" ]; then
		[ "$UDP" = auto ] || { echo "soak.sh: --udp $why" >&2; exit 77; }
		echo "soak.sh: UDP left out: $why"
		UDP=0
	else
		trap ns_del EXIT
		trap 'exit 130' INT TERM
		ip -n "$ns_srv" addr add 192.0.2.2/24 dev "$if_srv"
		ip -n "$ns_cli" addr add 192.0.2.1/24 dev "$if_cli"
		for ns in "$ns_srv" "$ns_cli"; do ip -n "$ns" link set lo up; done
		ip -n "$ns_srv" link set "$if_srv" up
		ip -n "$ns_cli" link set "$if_cli" up
		SOAK_NS_SRV=$ns_srv SOAK_NS_CLI=$ns_cli SOAK_IF=$if_srv SOAK_SRV_ADDR=192.0.2.2 \
			nsenter --net="/var/run/netns/$ns_srv" "$0" "${ARGS[@]}"
		exit $?
	fi
fi
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
VM_ARGS=()
if [ "$UDP" = 1 ]; then
	UDP_PORT=$(rg_free_port) || rg_fail "no free port"
	# victoria-metrics takes line protocol over UDP (and TCP) there
	VM_ARGS=(-influxListenAddr=":$UDP_PORT")
	RG_ARGS+=(--xdp-iface "$SOAK_IF" --udp "$UDP_PORT=$DB")
	rg_wait_for 10 sh -c "ip link show '$SOAK_IF' | grep -q LOWER_UP" ||
		rg_fail "the veth pair did not come up"
fi
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
rg_mount_bpffs
rg_start_vm "${VM_ARGS[@]}"
rg_start_rowgated "${RG_ARGS[@]}"
if [ "$UDP" = 1 ]; then
	rg_wait_for 10 sh -c "ss -Hlun 'sport = :$UDP_PORT' | grep -q ." ||
		rg_fail "victoria-metrics' UDP listener did not come up"
	rg_log "$(grep -m1 -i 'xdp attached' "$RG_TMP/rowgated.log")"
fi
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
	rg_start_vm_in "$RG_CGROUP" "${VM_ARGS[@]}"
}

rg_log "soak: $MINUTES min$([ "$META" = 1 ] && echo ", distributed (rowgate-meta)"), limit $LIMIT rows/s, $PROCS writers$([ "$UDP" = 1 ] && echo " + UDP $UDP_RATE datagrams/s"), faults every ${GAP_S}s, SIGSTOP ${STOP_S}s"
"$RG_PY" "$HERE/soak_load.py" --port "$RG_PORT" --db "$DB" --seconds "$SECS" --procs "$PROCS" \
	--bodies "$RG_TMP/bodies" --out "$OUT" --pause "$PAUSE" --timeout $((STALL_S * 4)) >"$RG_TMP/load.log" 2>&1 &
load_pid=$!
rg_on_exit "kill $load_pid"
if [ "$UDP" = 1 ]; then
	nsenter --net="/var/run/netns/$SOAK_NS_CLI" "$RG_PY" "$HERE/soak_udp.py" --addr "$SOAK_SRV_ADDR" \
		--port "$UDP_PORT" --seconds "$SECS" --rate "$UDP_RATE" --out "$OUT/udp.jsonl" \
		>"$RG_TMP/udp.log" 2>&1 &
	udp_pid=$!
	rg_on_exit "kill $udp_pid"
fi
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
[ "$UDP" = 0 ] || wait "$udp_pid" || rg_fail "UDP sender failed: $(tail -3 "$RG_TMP/udp.log")"

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
	n=$(rg_vm_rows '{__name__=~"rg_soak_v|rg_soak_u_v"}')
	[ "$n" = "$prev" ] && break
	prev=$n
	sleep 1
done
curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" --data-urlencode 'match[]={__name__="rg_soak_v"}' \
	>"$RG_TMP/export.jsonl" || rg_fail "export from victoria-metrics failed"
rg_ctl --json stats "$DB" >"$RG_TMP/stats.json"
UDP_CHECK=()
if [ "$UDP" = 1 ]; then
	curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" --data-urlencode 'match[]={__name__="rg_soak_u_v"}' \
		>"$RG_TMP/udp-export.jsonl" || rg_fail "export from victoria-metrics failed"
	# the kernel's UDP drops in this namespace (it is the server's alone)
	"$RG_PY" - "$RG_TMP/stats.json" >"$RG_TMP/udp-stats.json" <<-'PY' || rg_fail "UDP counters"
		import json, sys
		u = json.load(open(sys.argv[1]))["udp"]["databases"][0]
		snmp = [l.split() for l in open("/proc/net/snmp") if l.startswith("Udp:")]
		k = dict(zip(snmp[0][1:], map(int, snmp[1][1:])))
		json.dump({"xdp": u, "kernel": {n: k.get(n, 0) for n in ("NoPorts", "InErrors", "RcvbufErrors")}}, sys.stdout)
	PY
	UDP_CHECK=(--udp-sent "$OUT/udp.jsonl" --udp-export "$RG_TMP/udp-export.jsonl"
		--udp-stats "$RG_TMP/udp-stats.json")
fi
rc=0
"$RG_PY" "$HERE/soak_check.py" --out "$OUT" --export "$RG_TMP/export.jsonl" --limit "$LIMIT" \
	--stall-s "$STALL_S" "${UDP_CHECK[@]}" >"$RG_TMP/figures.json" 2>"$RG_TMP/violations.txt" || rc=$?
cat "$RG_TMP/figures.json"
"$RG_PY" -c '
import json,sys; j=json.load(open(sys.argv[1])); d=j["databases"][0]; g=j["global"]
print("rowgate counters:", {k: d[k] for k in ("admitted_requests","admitted_rows","rejected_requests","rejected_rows","unenforced_requests")})
# the reconciler counters start again with each kill -9
print("rowgated since its last start:", {k: g.get(k,0) for k in ("corrections","late_refunds","late_refund_rows","expired_copies")})
for n,p in sorted(d["protocols"].items()):
    print("  %s:" % n, {k: p.get(k,0) for k in ("admitted_requests","admitted_rows","rejected_requests","reconciled_requests","unreconciled_requests","undecodable_requests")})' \
	"$RG_TMP/stats.json"
[ -z "$RESULTS" ] || cp "$RG_TMP/figures.json" "$RESULTS"
if [ "$rc" -ne 0 ]; then
	cat "$RG_TMP/violations.txt"
	rg_fail "soak invariants violated"
fi
rg_pass "soak of $MINUTES min: every invariant held"
