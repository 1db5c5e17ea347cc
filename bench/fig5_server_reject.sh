#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 5: rejected writes, the kernel 429 vs the server's own rejection.
# InfluxDB 1.x rejecting over-limit writes itself (it reads and parses the
# whole write, then answers 400: max-series-per-database, its own limit),
# and rowgate answering 429 in front of the same InfluxDB before the server
# reads a byte.  Two batch sizes: 20 lines (~1 KB) and 1,000 lines (~50 KB,
# Telegraf's default metric_batch_size); saturating and paced load.
source "$(dirname "$0")/lib.sh"
bl_require influxd wrk curl ss bpftool "$BL_PY"
bl_mount_bpffs
bl_start_influxdb
RUNS=${FIG5_RUNS:-3}
PACE_MS=${FIG5_PACE_MS:-4}
SIZES=${FIG5_SIZES:-20 1000}

raw=$BL_TMP/fig5
CPU_PIDS=$INFLUX_PID
idle_ticks=$(bl_idle_ticks "$INFLUX_PID")

# the server rejecting, then rowgate in front of it: overload_run SIZE MODE WRK_ARGS...
overload_run() {
	local size=$1 mode=$2
	shift 2
	PROXY_PIDS="" bl_wrk "$raw.server.$size.$mode" -- "$@"
	bl_wrk_rowgate_rejecting "$raw.rowgate.$size.$mode" "$@"
}
bl_overload_rounds "$RUNS" "$SIZES" "$PACE_MS" overload_run
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

# Nothing may be stored: the server's own rejections are 400s, rowgate's
# 429s (its first write of a round may be admitted, and is then a 400).
bl_warn_nonzero "s204 + errors" "writes stored or socket errors" "$raw".*

M=(
	"(s429+sother)/seconds"
	"bench_ticks/HZ/(s429+sother)*1e6"
	"server_ticks/HZ/(s429+sother)*1e6"
	"bench_ticks/HZ/seconds*100"
	"server_ticks/HZ/seconds*100"
	"kthread_ticks/HZ/seconds*100"
	"p50_us"
	"(host_ticks-bench_ticks)/HZ/seconds*100"
)
table() { # size mode
	local f=$1.$2
	bl_versus_rows "$raw.rowgate.$f" ".0f .1f .1f .0f .1f .1f .0f .0f" \
		"rowgate (kernel 429)" "$raw.rowgate.$f" "InfluxDB itself (400)" "$raw.server.$f"
}
head='| who rejects | rejections/s | CPU µs/rejection | ÷ rowgate | server µs/rejection | ÷ rowgate | CPU % | server % | kthreads % | p50 µs | other load % |
|---|---|---|---|---|---|---|---|---|---|---|'
idle_pct=$(bl_ticks_pct "$idle_ticks")
offered=$((BENCH_CONNS * 1000 / PACE_MS))
version=$(dpkg-query -W -f '${Version}' influxdb 2>/dev/null || echo "?")

cat <<EOF
## 5. Rejected writes: kernel 429 vs the server's own rejection

The same over-limit writes to one database, rejected by the ingest server
itself and by rowgate in front of it.  The server is InfluxDB $version
(Debian), whose own limit rejects writes only after reading and parsing
them: with \`max-series-per-database = 1\` and one series stored, every
write of other series is parsed and answered \`400 partial write:
max-series-per-database limit exceeded\` — what an ingest server that
counts rows itself (GreptimeDB's rate limiter) must do before it can say
no.  rowgate (limit 1 row/s) answers 429 from the kernel; InfluxDB never
reads those writes.  \`wrk -t$BENCH_THREADS -c$BENCH_CONNS -d$BENCH_SECONDS\`,
line protocol as in figure 1, $RUNS interleaved rounds, medians; nothing
is stored in either configuration.

- *CPU µs/rejection*: everything the benchmark runs (wrk, influxd,
  rowgated, kernel threads; utime+stime) ÷ rejections: the ratio to quote.
- *server µs/rejection*: influxd alone (idle: $idle_pct % of a core).

### 20 lines (~1 KB a write), saturating load

$head
$(table 20 sat)

### 20 lines, paced load (≤ $offered writes/s offered)

$head
$(table 20 paced)

### 1,000 lines (~50 KB a write), saturating load

$head
$(table 1000 sat)

### 1,000 lines, paced load (≤ $offered writes/s offered)

$head
$(table 1000 paced)

Target: a kernel 429 at least 3× cheaper in total CPU than the server's
own rejection (*÷ rowgate* of *CPU µs/rejection* ≥ 3).

**What makes it worse.** Small writes: the server's own rejection of 20
lines is cheap, and rowgate's fixed costs per rejection stay — the
verdict, the sockmap backlog worker that transmits the 429, and the
server's poller woken after every verdict (figure 2).  **Next
improvement.** Those fixed costs: a verdict that parses heads word at a
time, and no wake-up of the server for bytes it never receives (a kernel
change: the sockmap calls the socket's data-ready callback after every
verdict that consumed data).
EOF
