#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
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
idle_ticks=$(bl_idle_ticks "$VM_PID")

# each limiter in turn on the same overload: overload_run SIZE MODE WRK_ARGS...
overload_run() {
	local size=$1 mode=$2
	shift 2
	bl_wrk_rowgate_rejecting "$raw.rowgate.$size.$mode" "$@"
	PORT=$NGINX_PORT PROXY_PIDS=$NGINX_PIDS bl_wrk "$raw.nginx.$size.$mode" -- "$@"
	PORT=$HAPROXY_PORT PROXY_PIDS=$HAPROXY_PID bl_wrk "$raw.haproxy.$size.$mode" -- "$@"
}
bl_overload_rounds "$RUNS" "20 1" "$PACE_MS" overload_run
bl_rowgated_start
closes=$(bl_ctl --json stats | "$BL_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["responses_close"])' 2>/dev/null || echo "?")
bl_rowgated_stop
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

bl_warn_nonzero "sother + errors" "statuses other than 204/429 or socket errors" "$raw".*

# per 429: the benchmark's CPU (wrk + server + limiter + kernel threads),
# the same without wrk, and where it went; in the table's order
M=(
	"s429/seconds"
	"bench_ticks/HZ/s429*1e6"
	"(bench_ticks-client_ticks)/HZ/s429*1e6"
	"bench_ticks/HZ/seconds*100"
	"proxy_ticks/HZ/seconds*100"
	"server_ticks/HZ/seconds*100"
	"kthread_ticks/HZ/seconds*100"
	"p50_us"
	"(host_ticks-bench_ticks)/HZ/seconds*100"
)
table() { # size mode
	local f=$1.$2
	bl_versus_rows "$raw.rowgate.$f" ".0f .1f .1f .0f .0f .1f .1f .0f .0f" \
		"rowgate (kernel)" "$raw.rowgate.$f" "nginx limit_req" "$raw.nginx.$f" \
		"haproxy stick table" "$raw.haproxy.$f"
}
head='| limiter | 429/s | CPU µs/429 | ÷ rowgate | without wrk µs/429 | ÷ rowgate | CPU % | limiter % | server % | kthreads % | p50 µs | other load % |
|---|---|---|---|---|---|---|---|---|---|---|---|'
idle_pct=$(bl_ticks_pct "$idle_ticks")
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

- *CPU µs/429*: the CPU of everything the benchmark runs — wrk, the
  limiter process, victoria-metrics, rowgated and the kernel threads
  (utime+stime) — ÷ 429s: the total cost of a rejection, load generator
  included.  On loopback the receive path, BPF verdict included, runs in
  the softirq of the sender's \`send()\` and is charged to wrk; the kernel
  429 itself is transmitted by the sockmap backlog kernel thread.  So
  *without wrk* hides most of rowgate's cost and is shown for the proxies'
  sake only — the first ratio is the one to quote.
- *CPU %*, *limiter %*, *server %*, *kthreads %*: the same over time
  (100 % = one core); limiter = nginx master+workers or haproxy; server =
  victoria-metrics, which spends $idle_pct % idle (its background work).
- *other load %*: the host's busy time (/proc/stat) minus the benchmark's:
  what else this shared machine ran meanwhile (not in any other column).

### ~1 KB writes (20 lines), saturating load

$head
$(table 20 sat)

### ~1 KB writes, paced load (≤ $offered req/s offered to each)

$head
$(table 20 paced)

### Tiny writes (1 line), saturating load

rowgate's 429 (≥ ~240 bytes) is larger than the request it replaces, so it
goes out with \`Connection: close\` (docs/design.md#tcp-read-accounting) and every rejection costs
the client a new connection — and the server an \`accept()\` and a
\`close()\` ($closes responses had to close, all figures included).

$head
$(table 1 sat)

### Tiny writes, paced load (≤ $offered req/s offered)

$head
$(table 1 paced)

Targets: zero server CPU for rejected writes (server CPU % at its idle
level, $idle_pct %).  The 3× target is against the server's own
rejection, which reads and parses the write first: figure 5.  Limiters
in front of the server (this figure) never parse a body either; against
them the kernel 429 is measured, not targeted.

EOF
cat <<'EOF2'
**What makes it worse.** Tiny requests: the 429 cannot fit the bytes it
replaces, so it closes the connection, and each rejection then costs a
TCP handshake, an `accept()` and a `close()` in the server and a new
connection in the client.  Each kernel 429 is transmitted by the sockmap
backlog worker (`bpf_sk_redirect_hash` to egress queues the skb to a
kernel thread: see *kthreads %*), and the server is woken although it
reads nothing (*server %* above its idle level): the kernel's sockmap
calls the socket's original `sk_data_ready` after every verdict that
consumed data, dropped or redirected alike ("bpf, sockmap: wake up
polling after data copy", upstream since 2023), so victoria-metrics'
epoll returns once per rejected skb — strace over 1.5 s of kernel 429s:
37,801 `epoll_pwait` returns, 16 `read`s.  The 429
is padded to the size of the request it replaces, so the client reads
~1 KB per rejection where nginx sends ~200 bytes.

**Next improvement.** The wake-up is the largest single cost of a kernel
429 (figure 6 splits it: the wake-up in the client's softirq plus the
server's own share, more than a third of the total) and cannot be
removed from BPF: it needs a kernel change that wakes the socket only when
the verdict queued data for it.  Then the verdict's own cost per rejection
(figure 4; its `bpf_snprintf` is already gone), and answering tiny
rejected requests on a connection-level basis (the ledger allows a 429 as
large as the bytes received since the last answer, so a client that
pipelines or sends larger batches keeps its connection).

EOF2
