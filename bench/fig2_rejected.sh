#!/usr/bin/env bash
# Figure 2: rejected writes.  The same overload (one db far above its
# limit) rejected in the kernel by rowgate, and in userspace by nginx
# limit_req and by haproxy stick tables in front of the same
# victoria-metrics.  Two request sizes: ~1 KB (20 lines; rowgate's 429
# fits in the bytes it replaces, keep-alive) and tiny (1 line, ~170 bytes
# with the head; the 429 is larger, so rowgate answers with
# Connection: close and the client reconnects).  Two loads: saturating (as
# many requests as wrk can send) and paced (the same offered rate for all).
source "$(dirname "$0")/lib.sh"
bl_require nginx haproxy
bl_setup
bl_warmup 1
bl_start_nginx 1
bl_start_haproxy 1
RUNS=${FIG2_RUNS:-3}
# paced: each of BENCH_CONNS connections waits PACE_MS before a request
PACE_MS=${FIG2_PACE_MS:-4}

raw=$BL_TMP/fig2
CPU_PIDS=$VM_PID
# the server's background CPU (flushes, merges) over an idle run's length
v0=$(bl_proc_ticks "$VM_PID"); sleep "$BENCH_SECONDS"; v1=$(bl_proc_ticks "$VM_PID")
idle_ticks=$((v1 - v0))

for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for size in 20 1; do
		for mode in sat paced; do
			extra=()
			[ "$mode" = sat ] || extra=("delay_ms=$PACE_MS")
			bl_rowgated_start
			[ -s "$BL_STATE" ] || bl_ctl limit set bench 1 >/dev/null
			PROXY_PIDS="" bl_wrk "$raw.rowgate.$size.$mode" -- \
				path=/write?db=bench lines="$size" statuses=1 "${extra[@]}"
			bl_rowgated_stop
			PORT=$NGINX_PORT PROXY_PIDS=$NGINX_PIDS bl_wrk "$raw.nginx.$size.$mode" -- \
				path=/write?db=bench lines="$size" statuses=1 "${extra[@]}"
			PORT=$HAPROXY_PORT PROXY_PIDS=$HAPROXY_PID bl_wrk "$raw.haproxy.$size.$mode" -- \
				path=/write?db=bench lines="$size" statuses=1 "${extra[@]}"
		done
	done
done
bl_rowgated_start
closes=$(bl_ctl --json stats | "$BL_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["responses_close"])' 2>/dev/null || echo "?")
bl_rowgated_stop
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

for f in "$raw".*; do
	read -r other < <(bl_agg "$f" "sother + errors")
	[ "$other" = 0 ] || bl_log "WARNING: ${f##*/}: statuses other than 204/429 or socket errors (median $other)"
done

# per 429: host CPU (all cores, wrk included), host minus wrk, proxy, server
M=(
	"s429/seconds"
	"host_ticks/HZ/s429*1e6"
	"(host_ticks-client_ticks)/HZ/s429*1e6"
	"proxy_ticks/HZ/seconds*100"
	"server_ticks/HZ/seconds*100"
	"host_ticks/HZ/seconds*100"
	"p50_us"
	"s204"
)
table() { # size mode
	local size=$1 mode=$2 v n rg_host rg_net
	read -r _ rg_host rg_net _ < <(bl_agg "$raw.rowgate.$size.$mode" "${M[@]}")
	for v in rowgate nginx haproxy; do
		read -r rate host net proxy server hostpct p50 adm < <(bl_agg "$raw.$v.$size.$mode" "${M[@]}")
		case $v in
		rowgate) n="rowgate (kernel)" ;;
		nginx) n="nginx limit_req" ;;
		haproxy) n="haproxy stick table" ;;
		esac
		printf '| %s | %s | %s | **%s** | %s | **%s** | %s | %s | %s | %s |\n' "$n" \
			"$(bl_fmt "$rate" .0f)" "$(bl_fmt "$host" .1f)" "$(bl_ratio "$host" "$rg_host")" \
			"$(bl_fmt "$net" .1f)" "$(bl_ratio "$net" "$rg_net")" \
			"$(bl_fmt "$hostpct" .0f)" "$(bl_fmt "$proxy" .0f)" "$(bl_fmt "$server" .1f)" \
			"$(bl_fmt "$p50" .0f)"
	done
}
head='| limiter | 429/s | host CPU µs/429 | ÷ rowgate | host − client µs/429 | ÷ rowgate | host CPU % | limiter process CPU % | server CPU % | p50 µs |
|---|---|---|---|---|---|---|---|---|---|'
idle_pct=$(bl_fmt "$(awk -v t="$idle_ticks" -v hz="$BL_HZ" -v s="$BENCH_SECONDS" 'BEGIN { print t / hz / s * 100 }')" .1f)
offered=$((BENCH_CONNS * 1000 / PACE_MS))

cat <<EOF
## 2. Rejected writes: kernel 429 vs userspace limiters

One db far above its limit (rowgate: 1 row/s; nginx \`limit_req
rate=1r/s\` keyed by \`\$arg_db\`, \`limit_req_status 429\`, rejections not
logged, access log off, \`worker_processes auto\`; haproxy 2.6 stick table
\`http_req_rate(1s)\` keyed by \`url_param(db)\`, \`deny deny_status 429\`,
default threads), all in front of the same victoria-metrics.  \`wrk -t$BENCH_THREADS
-c$BENCH_CONNS -d$BENCH_SECONDS\`, $RUNS interleaved rounds, medians.  Every
response is counted by status (wrk Lua); the only 204s are the few writes
each limiter admits.

- *host CPU µs/429*: every core's busy time (/proc/stat: user, nice,
  system, irq, softirq, steal) ÷ 429s — the total cost of a rejection,
  the load generator included.  On loopback the BPF verdict runs in the
  softirq of the sender's \`send()\`, so rowgate's work is charged to wrk's
  system time or to softirq, never to the server: *host − client*
  (host minus wrk's own utime+stime) therefore under-counts rowgate and is
  shown for the proxies' sake only — the first ratio is the one to quote.
- *limiter process CPU %*: nginx master+workers or haproxy (100 % = one
  core); rowgate has no process on this path (rowgated sleeps).
- *server CPU %*: victoria-metrics utime+stime; idle, it spends
  $idle_pct % over the same time (its own background work).

### ~1 KB writes (20 lines), saturating load

$head
$(table 20 sat)

### ~1 KB writes, paced load (≤ $offered req/s offered to each)

$head
$(table 20 paced)

### Tiny writes (1 line), saturating load

rowgate's 429 (≥ ~240 bytes) is larger than the request it replaces, so it
goes out with \`Connection: close\` (DESIGN §3) and every rejection costs
the client a new connection — and the server an \`accept()\` and a
\`close()\` ($closes responses had to close, all figures included).

$head
$(table 1 sat)

### Tiny writes, paced load (≤ $offered req/s offered)

$head
$(table 1 paced)

Targets: a kernel 429 ≥ 3× cheaper in total CPU than the userspace
rejection (the *÷ rowgate* column of *host CPU µs/429* ≥ 3 for nginx and
haproxy); zero server CPU for rejected writes (server CPU % at its idle
level, $idle_pct %).

EOF
