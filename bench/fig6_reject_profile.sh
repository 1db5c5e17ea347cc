#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 6: where the CPU of a kernel 429 goes.  perf samples every CPU
# (software clock; this VM kind has no hardware counters) while wrk floods
# one db far above its limit through rowgate, as in figure 2, and
# bench/perf_split.py sorts each sample by its stack: the server's poller
# woken after each verdict, the verdict program, the sockmap backlog worker
# that transmits the 429, the server, the client.
source "$(dirname "$0")/lib.sh"
bl_require perf
perf record -q -o /dev/null -a -e cpu-clock -- true >/dev/null 2>&1 ||
	bl_die "perf cannot sample every CPU here"
bl_setup
bl_warmup 1
bl_rowgated_start
bl_ctl limit set bench 1 >/dev/null
RUNS=${FIG6_RUNS:-3}
FREQ=${FIG6_HZ:-999}

raw=$BL_TMP/fig6
CPU_PIDS=$VM_PID
for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	perf record -q -o "$BL_TMP/perf.data" -a -g -e cpu-clock -F "$FREQ" -- \
		sleep "$BENCH_SECONDS" >/dev/null 2>&1 &
	perf_pid=$!
	PROXY_PIDS="" bl_wrk "$raw.wrk" -- path=/write?db=bench lines=20 statuses=1
	wait "$perf_pid"
	perf script -i "$BL_TMP/perf.data" -F comm,ip,sym 2>/dev/null |
		"$BL_PY" "$BL_ROOT/bench/perf_split.py" victoria-metric |
		awk '{ printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2 } END { print "" }' \
			>>"$raw.split"
done
bl_rowgated_stop
paste -d' ' "$raw.wrk" "$raw.split" >"$raw.all"
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

KEYS=(wakeup verdict format backlog server client other)
declare -A WHAT=(
	[wakeup]="the server's poller, woken after each verdict (\`sock_def_readable\` from \`sk_psock_verdict_data_ready\`, in the client's softirq)"
	[verdict]="the verdict program and its helpers (parse, count, plan and write the 429)"
	[format]="\`bpf_snprintf\` (none since the 429 is written from pieces)"
	[backlog]="the sockmap backlog worker (kworker): transmits each 429"
	[server]="victoria-metrics (woken, reads nothing)"
	[client]="wrk: its syscalls, the rest of loopback TCP both ways"
	[other]="everything else"
)
busy_expr="(total-idle)"
rows() {
	local k share us
	for k in "${KEYS[@]}"; do
		read -r share us < <(bl_agg "$raw.all" "$k/$busy_expr*100" \
			"$k/$busy_expr*bench_ticks/HZ/s429*1e6")
		printf '| %s | %s | %s |\n' "${WHAT[$k]}" "$(bl_fmt "$share" .1f)" "$(bl_fmt "$us" .1f)"
	done
}
read -r rate cpu < <(bl_agg "$raw.all" "s429/seconds" "bench_ticks/HZ/s429*1e6")

cat <<EOF
## 6. Where the CPU of a kernel 429 goes

\`perf record -a -g -e cpu-clock -F $FREQ\` over the whole host during
the saturating run of figure 2 (~1 KB writes, \`wrk -t$BENCH_THREADS
-c$BENCH_CONNS -d$BENCH_SECONDS\`, $RUNS runs, medians): $(bl_fmt "$rate" .0f) 429s/s at
$(bl_fmt "$cpu" .1f) µs of CPU each (utime+stime, as in figure 2).  Each busy sample is
sorted by its stack (\`bench/perf_split.py\`, first rule that matches);
*µs per 429* splits figure 2's CPU by those shares.  Software-clock
samples land where interrupts are re-enabled, so a cost inside an
irq-off section (a wake-up's IPI) shows at its end: the shares are right,
the symbols inside a bucket are not.

| where | share of busy samples % | µs per 429 |
|---|---|---|
$(rows)

**What makes it worse.** Every verdict that consumes data (drop or
redirect) is followed by the socket's original \`sk_data_ready\`: the
server's idle poller is woken although nothing was queued for it, and on
this VM kind a cross-CPU wake-up is an IPI, the largest single cost of a
kernel 429.  Debian 12's own 6.1.192 does the same: in a vmtest guest,
2,759 kernel 429s cost victoria-metrics 2,865 context switches above idle
(6.18 here: 110,855 429s, 110,558).  The backlog worker adds a context switch per 429.  **Next
improvement.** Neither can be removed from BPF: the wake-up needs a kernel
change (wake only when the verdict queued data for the socket: in
\`sk_psock_verdict_data_ready\`, \`copied\` counts dropped and redirected
bytes too), and a 429 sent without the backlog worker needs a transmit
path sk_skb programs do not have.
EOF
