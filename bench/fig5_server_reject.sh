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
v0=$(bl_proc_ticks "$INFLUX_PID"); sleep "$BENCH_SECONDS"; v1=$(bl_proc_ticks "$INFLUX_PID")
idle_ticks=$((v1 - v0))

for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for size in $SIZES; do
		for mode in sat paced; do
			extra=()
			[ "$mode" = sat ] || extra=("delay_ms=$PACE_MS")
			PROXY_PIDS="" bl_wrk "$raw.server.$size.$mode" -- \
				path=/write?db=bench lines="$size" statuses=1 "${extra[@]}"
			bl_rowgated_start
			[ -s "$BL_STATE" ] || bl_ctl limit set bench 1 >/dev/null
			PROXY_PIDS="" bl_wrk "$raw.rowgate.$size.$mode" -- \
				path=/write?db=bench lines="$size" statuses=1 "${extra[@]}"
			bl_rowgated_stop
		done
	done
done
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

# Nothing may be stored: the server's own rejections are 400s, rowgate's
# 429s (its first write of a round may be admitted, and is then a 400).
for f in "$raw".*; do
	read -r ok < <(bl_agg "$f" "s204 + errors")
	[ "$ok" = 0 ] || bl_log "WARNING: ${f##*/}: writes stored or socket errors (median $ok)"
done

M=(
	"(s429+sother)/seconds"
	"bench_ticks/HZ/(s429+sother)*1e6"
	"server_ticks/HZ/(s429+sother)*1e6"
	"server_ticks/HZ/seconds*100"
	"kthread_ticks/HZ/seconds*100"
	"bench_ticks/HZ/seconds*100"
	"p50_us"
	"(host_ticks-bench_ticks)/HZ/seconds*100"
)
table() { # size mode
	local size=$1 mode=$2 v n rg_cpu rg_srv
	read -r _ rg_cpu rg_srv _ < <(bl_agg "$raw.rowgate.$size.$mode" "${M[@]}")
	for v in rowgate server; do
		read -r rate cpu srv server kth total p50 other < <(bl_agg "$raw.$v.$size.$mode" "${M[@]}")
		case $v in
		rowgate) n="rowgate (kernel 429)" ;;
		server) n="InfluxDB itself (400)" ;;
		esac
		printf '| %s | %s | %s | **%s** | %s | %s | %s | %s | %s | %s | %s |\n' "$n" \
			"$(bl_fmt "$rate" .0f)" "$(bl_fmt "$cpu" .1f)" "$(bl_ratio "$cpu" "$rg_cpu")" \
			"$(bl_fmt "$srv" .1f)" "$(bl_ratio "$srv" "$rg_srv")" \
			"$(bl_fmt "$total" .0f)" "$(bl_fmt "$server" .1f)" "$(bl_fmt "$kth" .1f)" \
			"$(bl_fmt "$p50" .0f)" "$(bl_fmt "$other" .0f)"
	done
}
head='| who rejects | rejections/s | CPU µs/rejection | ÷ rowgate | server µs/rejection | ÷ rowgate | CPU % | server % | kthreads % | p50 µs | other load % |
|---|---|---|---|---|---|---|---|---|---|---|'
idle_pct=$(bl_fmt "$(awk -v t="$idle_ticks" -v hz="$BL_HZ" -v s="$BENCH_SECONDS" 'BEGIN { print t / hz / s * 100 }')" .1f)
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
