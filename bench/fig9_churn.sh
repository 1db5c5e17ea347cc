#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 9: connection churn.  Curl-style clients: one admitted ~1 KB
# write per connection (wrk sends "Connection: close", the server answers
# with it and closes, wrk reconnects).  Each round runs victoria-metrics
# bare, through nginx and through haproxy with limits that admit
# everything (rowgated stopped), then with rowgated guarding it for a db
# whose limit admits everything; medians over interleaved rounds.  Every
# guarded connection costs rowgate its sockops program and per-connection
# state (docs/design.md#bpf-cost); a proxy pays an accept() and a close()
# per client connection and reuses its upstream connections.
source "$(dirname "$0")/lib.sh"
bl_require nginx haproxy
RUNS=${FIG9_RUNS:-3}
LINES=${FIG9_LINES:-20}
HIGH=1000000000000 # rows/s: never binds
bl_setup
bl_warmup 2
bl_start_proxies_admitting
BL_LUA=$BL_ROOT/bench/body.lua

# victoria-metrics' accepted connections: the check that a bare run made
# one connection per request
vm_accepts() {
	curl -s "http://127.0.0.1:$BL_PORT/metrics" |
		awk '/^vm_tcplistener_accepts_total/ { n += $NF } END { printf "%d\n", n }'
}

load() { # OUT [PORT PROXY_PIDS]
	PORT=${2:-$BL_PORT} PROXY_PIDS=${3:-} bl_wrk "$1" -- \
		path=/write?db=bench lines="$LINES" close=1
}

raw=$BL_TMP/fig9
CPU_PIDS=$VM_PID
for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	a0=$(vm_accepts)
	load "$raw.bare"
	a1=$(vm_accepts)
	# accepted connections per request of this bare run, the /metrics
	# scrapes' own two connections aside
	n=$(tail -n1 "$raw.bare" | sed 's/.*requests=\([0-9]*\).*/\1/')
	echo "conns_per_req=$("$BL_PY" -c "print(($a1 - $a0 - 1) / $n)")" >>"$raw.accepts"
	load "$raw.nginx" "$NGINX_PORT" "$NGINX_PIDS"
	load "$raw.haproxy" "$HAPROXY_PORT" "$HAPROXY_PID"
	bl_rowgated_start
	[ "$r" -gt 1 ] || bl_ctl limit set bench "$HIGH" >/dev/null
	load "$raw.rowgate"
	bl_rowgated_stop
done
bl_rowgated_start
adm=$(bl_stat bench admitted_requests)
rej=$(bl_stat bench rejected_requests)
bl_rowgated_stop
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

for f in "$raw".bare "$raw".nginx "$raw".haproxy "$raw".rowgate; do
	read -r bad < <(bl_agg "$f" "non2xx + errors")
	[ "$bad" = 0 ] || bl_log "WARNING: ${f##*/} runs had non-2xx or socket errors (median $bad)"
done
[ "$rej" = 0 ] || bl_log "WARNING: rowgate rejected $rej requests under a limit of $HIGH rows/s"
read -r cpr < <(bl_agg "$raw.accepts" conns_per_req)
"$BL_PY" -c "import sys; sys.exit(0 if abs($cpr - 1) < 0.02 else 1)" ||
	bl_die "bare runs made $cpr connections per request, not 1: is Connection: close honoured?"

CPU="bench_ticks/HZ/requests*1e6"
read -r b_rps b_p50 b_p99 b_cpu < <(bl_agg "$raw.bare" rps p50_us p99_us "$CPU")
row() {
	local name=$1 f=$2 rps p50 p99 cpu lim srv kth
	read -r rps p50 p99 cpu lim srv kth < <(bl_agg "$f" rps p50_us p99_us "$CPU" \
		"(proxy_ticks+rg_ticks)/HZ/requests*1e6" "server_ticks/HZ/requests*1e6" \
		"kthread_ticks/HZ/requests*1e6")
	printf '| %s | %s | **%s** | %s | %s | %s | %s | %s | **%s** | %s | %s | %s |\n' "$name" \
		"$(bl_fmt "$rps" .0f)" "$(bl_ratio "$rps" "$b_rps")" \
		"$(bl_fmt "$p50" .0f)" "$(bl_ratio "$p50" "$b_p50")" \
		"$(bl_fmt "$p99" .0f)" "$(bl_ratio "$p99" "$b_p99")" \
		"$(bl_fmt "$cpu" .1f)" "$(bl_ratio "$cpu" "$b_cpu")" \
		"$(bl_fmt "$lim" .1f)" "$(bl_fmt "$srv" .1f)" "$(bl_fmt "$kth" .1f)"
}
read -r rg < <(bl_agg "$raw.rowgate" "$CPU")
read -r ng < <(bl_agg "$raw.nginx" "$CPU")
read -r hp < <(bl_agg "$raw.haproxy" "$CPU")
other=$(bl_fmt "$(bl_agg "$raw.bare" "(host_ticks-bench_ticks)/HZ/seconds*100")" .0f)

cat <<EOF
## 9. Connection churn: one write per connection

Curl-style clients: every request on a new connection (\`wrk -t$BENCH_THREADS
-c$BENCH_CONNS -d$BENCH_SECONDS\` with \`Connection: close\`, bench/body.lua;
the server answers with it and closes, wrk reconnects: victoria-metrics
accepted $(bl_fmt "$cpr" .2f) connections per request in the bare runs).
Each request is \`POST /write?db=bench\` with $LINES lines of line protocol,
admitted: victoria-metrics bare, through nginx and haproxy with figure
1's limits that never bind (keep-alive to victoria-metrics), and guarded
by rowgate with a limit of $HIGH rows/s ($adm admitted, $rej rejected).
$RUNS interleaved rounds, medians.  *CPU µs/conn*: wrk +
victoria-metrics + the proxy's processes + rowgated + kernel threads
(utime+stime) over the connections (= requests) served: the handshake,
the request and the teardown.  *limiter*, *server*, *kthreads*: the parts
of it spent in the proxy's processes or rowgated, in victoria-metrics and
in kernel threads (the rest is wrk, whose softirqs on loopback run the
receive path, rowgate's BPF included).  p50/p99: wrk's latency of the
request, the connect not included.  Other load on this shared host: median
$other % of a core (bare runs).

| configuration | conn/s | ÷ bare | p50 µs | ÷ bare | p99 µs | ÷ bare | CPU µs/conn | ÷ bare | limiter µs/conn | server µs/conn | kthreads µs/conn |
|---|---|---|---|---|---|---|---|---|---|---|---|
$(row bare "$raw.bare")
$(row "rowgate, admitted" "$raw.rowgate")
$(row "nginx limit_req (admits all)" "$raw.nginx")
$(row "haproxy stick table (admits all)" "$raw.haproxy")

$(bl_added_line "per connection" "$b_cpu" "$rg" "$ng" "$hp")

EOF
cat <<'EOF2'
**What makes it worse.** Each guarded connection runs rowgate's sockops
program, which allocates and frees the connection's state (most of it
buffers an idle connection never uses; docs/design.md#bpf-cost), and
inserts the socket into the sockhash; the verdict then parses one
request head.  A proxy in front does more per connection (accept, read,
write upstream, close) but reuses its upstream connections, so the
server behind it no longer accepts and closes one connection a request.

**Next improvement.** A small per-connection core element, with the
large buffers taken from a preallocated pool only while a connection
needs them (issue 37, part 2).

EOF2
