# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Harness shared by the benchmark figures (bench/fig*.sh): victoria-metrics
# on 127.0.0.1 in a cgroup of its own, rowgated guarding its port with a
# private bpffs, admin socket and state file, and the readers every figure
# needs (wrk, /proc/stat, /proc/PID/stat, bpf_stats through bpftool).
# Everything a figure creates is removed by the EXIT trap.
#
#   source "$(dirname "$0")/lib.sh"
#   bl_setup                 # bpffs + victoria-metrics; sets BL_PORT, VM_PID
#   bl_rowgated_start        # enforcement on (bl_rowgated_stop: off);
#                            # BL_PROFILE=victoriametrics reads as that server
#   bl_wrk OUT -c 16 -d 3 -- path=/write?db=x lines=20 ...
#
# A figure prints its markdown section on stdout; logs go to stderr.

set -u
BL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# a relative BUILD is the checkout's, wherever the figure runs from
BUILD=${BUILD:-$BL_ROOT/build}
[ "${BUILD#/}" != "$BUILD" ] || BUILD=$BL_ROOT/$BUILD
# The end-to-end tests' harness: temporary directory, cleanups on exit,
# free ports, cgroup, bpffs, victoria-metrics, InfluxDB and rowgated.
# shellcheck source=../tests/e2e/lib.sh
RG_KIND=bench
RG_LOG_FD=2
source "$BL_ROOT/tests/e2e/lib.sh"
BL_BUILD=$RG_BUILD
BL_ROWGATED=$RG_ROWGATED
BL_ROWGATECTL=$RG_ROWGATECTL
BL_LUA=$BL_ROOT/bench/write.lua
BL_PY=$RG_PY
BL_NAME=$RG_NAME
BL_TMP=$RG_TMP
BL_BPFFS=$RG_BPFFS
BL_SOCK=$RG_SOCK
BL_STATE=$RG_STATE
BL_CGROUP=""
BL_PORT=""
BL_RG_PID=""

# Seconds of load per measured run and runs per configuration (medians).
BENCH_SECONDS=${BENCH_SECONDS:-3}
BENCH_RUNS=${BENCH_RUNS:-5}
# wrk: one thread leaves the second core to the server side.
BENCH_THREADS=${BENCH_THREADS:-1}
BENCH_CONNS=${BENCH_CONNS:-16}

bl_log() { rg_log "$@"; }
bl_die() { bl_log "ERROR: $*"; exit 1; }
bl_on_exit() { rg_on_exit "$@"; }
bl_free_port() { rg_free_port; }
bl_wait_for() { rg_wait_for "$@"; }

bl_require() {
	[ "$(id -u)" -eq 0 ] || bl_die "needs root (BPF, cgroups)"
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || bl_die "needs $c"
	done
	[ -x "$BL_ROWGATED" ] || bl_die "build first (make): $BL_ROWGATED is missing"
}

bl_ctl() { "$BL_ROWGATECTL" --socket "$BL_SOCK" "$@"; }

# The guarded server's cgroup (removed on exit) and port: BL_CGROUP, BL_PORT.
bl_server_cgroup_port() {
	rg_make_cgroup
	RG_PORT=$(rg_free_port) || bl_die "no free port"
	BL_CGROUP=$RG_CGROUP BL_PORT=$RG_PORT
}

# Start victoria-metrics in a cgroup of its own; the server rowgate guards.
bl_start_vm() {
	bl_server_cgroup_port
	rg_start_vm_in "$BL_CGROUP"
}

# Start InfluxDB 1.x in a cgroup of its own instead (figure 5): the server
# that rejects over-limit writes itself.  Its own limit is
# max-series-per-database = 1, with one series seeded in db bench: every
# write of other series is read, parsed and answered 400 ("partial write:
# max-series-per-database limit exceeded") without being stored.  Sets
# BL_PORT, BL_CGROUP and INFLUX_PID.
bl_start_influxdb() {
	bl_server_cgroup_port
	RG_INFLUX_DATA="  max-series-per-database = 1" RG_INFLUX_LOG_LEVEL=error \
		rg_start_influxd "$BL_PORT"
	curl -sf -XPOST "http://127.0.0.1:$BL_PORT/query" --data-urlencode 'q=CREATE DATABASE bench' \
		>/dev/null || bl_die "influxd: CREATE DATABASE failed"
	curl -sf -XPOST "http://127.0.0.1:$BL_PORT/write?db=bench" --data-binary 'seed v=1' ||
		bl_die "influxd: the seed write failed"
	# its own limit now rejects every other series
	[ "$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://127.0.0.1:$BL_PORT/write?db=bench" \
		--data-binary 'cpu,host=h1 user=1')" = 400 ] ||
		bl_die "influxd does not reject over its max-series-per-database"
}

bl_mount_bpffs() { rg_mount_bpffs; }

# Enforcement on: rowgated guards BL_PORT (it adopts earlier pins, so
# limits and counters survive a stop/start); BL_PROFILE: how it reads the
# port (greptimedb, the profile of a port no server is known by).
bl_rowgated_start() {
	RG_PORT=$BL_PORT RG_CGROUP=$BL_CGROUP
	RG_PROFILE=${BL_PROFILE:-greptimedb} rg_start_rowgated --log-level warn "$@"
	BL_RG_PID=$RG_PID
}

# Enforcement off: SIGTERM detaches every program (DESIGN: open connections
# go on unenforced; wrk opens new ones each run).
bl_rowgated_stop() {
	rg_stop_rowgated
	BL_RG_PID=""
}

bl_setup() {
	bl_require victoria-metrics wrk curl ss bpftool "$BL_PY"
	bl_mount_bpffs
	bl_start_vm
}

# Warm the server up: a few seconds of admitted writes, bare.
bl_warmup() {
	wrk -t1 -c4 -d"${1:-2}" -s "$BL_LUA" "http://127.0.0.1:$BL_PORT" -- \
		path=/write?db=warmup lines=20 >/dev/null 2>&1 || true
}

# bl_wrk OUT [wrk options] -- script args (key=value): one wrk run on
# BL_PORT (or PORT=... in the environment); appends its result line
# ("requests=... rps=... p50_us=... ...") plus CPU deltas to OUT, in ticks:
#   client_ticks:  wrk (on loopback the receive path and the BPF verdict run
#                  in the softirq of the sender: mostly charged here)
#   server_ticks:  the pids in CPU_PIDS (the ingest server)
#   proxy_ticks:   the pids in PROXY_PIDS (a limiter in front)
#   rg_ticks:      rowgated, when running
#   kthread_ticks: every kernel thread (sockmap backlog worker, ksoftirqd)
#   bench_ticks:   the sum of the above: the cost of the benchmark
#   host_ticks:    the whole host's busy time; host - bench is other load
bl_wrk() {
	local out=$1; shift
	local opts=() port=${PORT:-$BL_PORT} h0 h1 k0 k1 s0 s1 p0 p1 r0 r1 c1 line
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	s0=$(bl_proc_ticks ${CPU_PIDS:-})
	p0=$(bl_proc_ticks ${PROXY_PIDS:-})
	r0=$(bl_proc_ticks $BL_RG_PID)
	read -r h0 k0 < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	/usr/bin/time -o "$BL_TMP/wrk.time" -f '%U %S' \
		wrk -t"$BENCH_THREADS" -c"$BENCH_CONNS" -d"$BENCH_SECONDS" "${opts[@]}" \
		-s "$BL_LUA" "http://127.0.0.1:$port" -- "$@" >"$BL_TMP/wrk.out" 2>&1 ||
		{ cat "$BL_TMP/wrk.out" >&2; bl_die "wrk failed"; }
	read -r h1 k1 < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	s1=$(bl_proc_ticks ${CPU_PIDS:-})
	p1=$(bl_proc_ticks ${PROXY_PIDS:-})
	r1=$(bl_proc_ticks $BL_RG_PID)
	line=$(grep '^BENCH ' "$BL_TMP/wrk.out" | tail -n1) ||
		{ cat "$BL_TMP/wrk.out" >&2; bl_die "no result line from wrk"; }
	c1=$(awk -v hz="$BL_HZ" '{ printf "%d", ($1 + $2) * hz + 0.5 }' "$BL_TMP/wrk.time")
	echo "${line#BENCH } host_ticks=$((h1 - h0)) kthread_ticks=$((k1 - k0))" \
		"server_ticks=$((s1 - s0)) proxy_ticks=$((p1 - p0)) rg_ticks=$((r1 - r0))" \
		"client_ticks=$c1 bench_ticks=$((c1 + s1 - s0 + p1 - p0 + r1 - r0 + k1 - k0))" >>"$out"
}

# utime + stime of processes (all their threads), in clock ticks.
bl_proc_ticks() {
	local t=0 p v
	for p in "$@"; do
		v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null) || v=0
		t=$((t + v))
	done
	echo "$t"
}

# The server's own CPU while nothing loads it (flushes, merges), in ticks
# over one run's length: bl_idle_ticks PID
bl_idle_ticks() {
	local t0 t1
	t0=$(bl_proc_ticks "$1")
	sleep "$BENCH_SECONDS"
	t1=$(bl_proc_ticks "$1")
	echo $((t1 - t0))
}

# Ticks over one run's length as a percentage of one core, for a table:
# bl_ticks_pct TICKS
bl_ticks_pct() {
	bl_fmt "$(awk -v t="$1" -v hz="$BL_HZ" -v s="$BENCH_SECONDS" 'BEGIN { print t / hz / s * 100 }')" .1f
}

# bl_overload_rounds RUNS SIZES PACE_MS RUN: RUNS interleaved rounds, each
# calling `RUN SIZE MODE WRK_ARGS...` for every write size in SIZES (lines)
# and both loads: sat (as many requests as wrk sends) and paced (each
# connection waits PACE_MS before a request).  WRK_ARGS: bench/write.lua's
# arguments for those writes to db bench, every response counted by status.
bl_overload_rounds() {
	local runs=$1 sizes=$2 pace_ms=$3 run=$4 r size mode pace
	for ((r = 1; r <= runs; r++)); do
		bl_log "round $r/$runs"
		for size in $sizes; do
			for mode in sat paced; do
				pace=()
				[ "$mode" = sat ] || pace=("delay_ms=$pace_ms")
				"$run" "$size" "$mode" path=/write?db=bench lines="$size" statuses=1 "${pace[@]}"
			done
		done
	done
}

# One run of bl_wrk through rowgate, started for it with db bench limited
# to 1 row/s (the state file keeps that limit after the first run) and
# stopped after it: bl_wrk_rowgate_rejecting OUT WRK_ARGS...
bl_wrk_rowgate_rejecting() {
	local out=$1
	shift
	bl_rowgated_start
	[ -s "$BL_STATE" ] || bl_ctl limit set bench 1 >/dev/null
	PROXY_PIDS="" bl_wrk "$out" -- "$@"
	bl_rowgated_stop
}

# bl_versus_rows REF FORMATS LABEL FILE [LABEL FILE]...: markdown table
# rows, one a LABEL, of the medians over its FILE of the expressions in
# the array M (the figure's): M[0] a rate, M[1] and M[2] two costs, each
# followed by its ratio to the same cost over REF (rowgate's runs), then
# the rest.  FORMATS: each expression's bl_fmt format, space separated.
bl_versus_rows() {
	local ref=$1 ref1 ref2 row i
	local -a fmt v
	read -r -a fmt <<<"$2"
	shift 2
	read -r _ ref1 ref2 _ < <(bl_agg "$ref" "${M[@]}")
	while [ $# -gt 0 ]; do
		read -r -a v < <(bl_agg "$2" "${M[@]}")
		row="| $1 | $(bl_fmt "${v[0]}" "${fmt[0]}") | $(bl_fmt "${v[1]}" "${fmt[1]}")"
		row+=" | **$(bl_ratio "${v[1]}" "$ref1")** | $(bl_fmt "${v[2]}" "${fmt[2]}")"
		row+=" | $(bl_ratio "${v[2]}" "$ref2") |"
		for ((i = 3; i < ${#M[@]}; i++)); do
			row+=" $(bl_fmt "${v[i]}" "${fmt[i]}") |"
		done
		echo "$row"
		shift 2
	done
}

# Warn of each raw file whose runs' median of EXPR is not 0:
# bl_warn_nonzero EXPR WHAT FILE...
bl_warn_nonzero() {
	local expr=$1 what=$2 f v
	shift 2
	for f in "$@"; do
		read -r v < <(bl_agg "$f" "$expr")
		[ "$v" = 0 ] || bl_log "WARNING: ${f##*/}: $what (median $v)"
	done
}

# bpf_stats of the verdict program: "run_time_ns run_cnt".  The pin is
# what the sockhash runs: the entry, whose figures include the verdict it
# tail-calls (docs/design.md#verdict-slot).
bl_verdict_stats() {
	bl_prog_stats prog_verdict
}

# bl_prog_stats PIN...: bpf_stats summed over pinned programs or links
# under BL_BPFFS (a link counts its program): "run_time_ns run_cnt".  A
# pin that does not exist (an older build, an option off) counts 0.
bl_prog_stats() {
	local pin t=0 n=0 a b id sel
	for pin in "$@"; do
		[ -e "$BL_BPFFS/$pin" ] || continue
		if [ "${pin#link_}" != "$pin" ]; then
			id=$(bpftool -j link show pinned "$BL_BPFFS/$pin" 2>/dev/null |
				"$BL_PY" -c 'import json,sys; print(json.load(sys.stdin)["prog_id"])') ||
				continue
			sel=(id "$id")
		else
			sel=(pinned "$BL_BPFFS/$pin")
		fi
		read -r a b < <(bpftool -j prog show "${sel[@]}" 2>/dev/null |
			"$BL_PY" -c 'import json,sys; p=json.load(sys.stdin); print(p.get("run_time_ns",0), p.get("run_cnt",0))' ||
			echo "0 0")
		t=$((t + a)) n=$((n + b))
	done
	echo "$t $n"
}

# Turn bpf_stats on for this figure: the sysctl (back to what it was on
# exit) and a BPF_ENABLE_STATS descriptor held by a helper, so a concurrent
# job resetting the sysctl cannot stop the counters mid-run.
bl_bpf_stats_on() {
	local old
	old=$(cat /proc/sys/kernel/bpf_stats_enabled)
	bl_on_exit "echo $old > /proc/sys/kernel/bpf_stats_enabled"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	"$BL_PY" "$BL_ROOT/bench/bpf_stats_hold.py" >"$BL_TMP/stats_hold.out" 2>&1 &
	BL_STATS_PID=$!
	bl_on_exit "kill $BL_STATS_PID; wait $BL_STATS_PID"
	bl_wait_for 5 grep -q ok "$BL_TMP/stats_hold.out" ||
		bl_die "cannot enable BPF statistics: $(cat "$BL_TMP/stats_hold.out")"
}

# One counter of a database: bl_stat DB FIELD
bl_stat() { bl_ctl --json stats "$1" | "$BL_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['$2'])"; }

BL_HZ=$(getconf CLK_TCK)

# bl_agg FILE EXPR...: medians over the runs in FILE (one key=value line
# per run) of python expressions over those keys, space separated.
bl_agg() {
	local f=$1; shift
	"$BL_PY" - "$f" "$BL_HZ" "$@" <<'EOF'
import statistics, sys
f, hz, exprs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = []
for line in open(f):
    d = {}
    for kv in line.split():
        k, _, v = kv.partition("=")
        d[k] = float(v)
    d["HZ"] = hz
    runs.append(d)
out = []
for e in exprs:
    vals = [eval(e, {}, r) for r in runs]
    out.append("%.6g" % statistics.median(vals))
print(" ".join(out))
EOF
}

# Format helpers for the markdown tables.
bl_fmt() { "$BL_PY" -c "import sys; print(format(float(sys.argv[1]), sys.argv[2]))" "$1" "$2"; }
bl_ratio() { "$BL_PY" -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.2f' % (a/b) if b else 'n/a')" "$1" "$2"; }

# The limiters operators put in front of an ingest server today, each
# rejecting a db above RATE requests/s with 429 and proxying the rest to
# BL_PORT over keep-alive.  Set NGINX_PORT/NGINX_PIDS, HAPROXY_PORT/_PID.
# bl_start_nginx RATE [BURST]: with BURST, `limit_req burst=BURST nodelay`
# (without a burst nginx rejects a second request within the same
# millisecond whatever the rate).
bl_start_nginx() {
	local rate=$1 burst=${2:-} d=$BL_TMP/nginx
	NGINX_PORT=$(bl_free_port) || bl_die "no free port"
	mkdir -p "$d/logs" "$d/tmp"
	cat >"$d/nginx.conf" <<NGX
worker_processes auto;
pid $d/nginx.pid;
error_log $d/logs/error.log crit;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    # per-db request rate; rejections are not logged (cheapest setting)
    limit_req_zone \$arg_db zone=perdb:1m rate=${rate}r/s;
    limit_req_status 429;
    limit_req_log_level info;
    upstream vm { server 127.0.0.1:$BL_PORT; keepalive 32; }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            limit_req zone=perdb${burst:+ burst=$burst nodelay};
            proxy_pass http://vm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
NGX
	nginx -p "$d" -e "$d/logs/error.log" -c "$d/nginx.conf" -g 'daemon off;' \
		>"$BL_TMP/nginx.log" 2>&1 &
	NGINX_PID=$!
	bl_on_exit "kill -QUIT $NGINX_PID; sleep 0.2; kill -9 $NGINX_PID; wait $NGINX_PID"
	bl_wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/health" ||
		bl_die "nginx did not come up"
	NGINX_PIDS="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
}

bl_start_haproxy() {
	local rate=$1 d=$BL_TMP/haproxy
	HAPROXY_PORT=$(bl_free_port) || bl_die "no free port"
	mkdir -p "$d"
	cat >"$d/haproxy.cfg" <<HAP
global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend ingest
    bind 127.0.0.1:$HAPROXY_PORT
    # per-db request rate over the last second, keyed by ?db=
    stick-table type string len 64 size 100k expire 10s store http_req_rate(1s)
    http-request track-sc0 url_param(db)
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt $rate }
    default_backend vm
backend vm
    http-reuse always
    server vm 127.0.0.1:$BL_PORT
HAP
	haproxy -f "$d/haproxy.cfg" -db >"$BL_TMP/haproxy.log" 2>&1 &
	HAPROXY_PID=$!
	bl_on_exit "kill -9 $HAPROXY_PID; wait $HAPROXY_PID"
	bl_wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$HAPROXY_PORT/health" ||
		bl_die "haproxy did not come up"
}

# nginx and haproxy as above with limits that admit everything (the
# limiter's per-request work without its rejections): nginx 1,000,000 r/s
# with a burst of 1,000,000, haproxy 1e9 requests/s.  A write through each
# must come back 204.
BL_NGINX_ALL="1000000 1000000"
BL_HAPROXY_ALL=1000000000
bl_start_proxies_admitting() {
	local p
	# shellcheck disable=SC2086
	bl_start_nginx $BL_NGINX_ALL
	bl_start_haproxy "$BL_HAPROXY_ALL"
	for p in "$NGINX_PORT" "$HAPROXY_PORT"; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'proxycheck v=1' \
			"http://127.0.0.1:$p/write?db=proxycheck")" = 204 ] ||
			bl_die "a write through the proxy on port $p was not admitted"
	done
}

# bl_rw_body FILE SAMPLES [SERIES]: a Prometheus remote-write request body
# (snappy-compressed protobuf, from build/rg-count) of SAMPLES samples
# over SERIES series (default: one sample each, as one scrape batch).
# Sets BL_RW_HEADERS, the wrk header= arguments it goes with (bench/body.lua).
bl_rw_body() {
	local f=$1 n=$2 series=${3:-$2}
	[ -x "$BL_BUILD/rg-count" ] || bl_die "build first (make): $BL_BUILD/rg-count is missing"
	"$BL_BUILD/rg-count" -p prom-rw --encode "$n" --series "$series" --metric bench_rw >"$f" ||
		bl_die "rg-count --encode failed"
	BL_RW_HEADERS=(header=Content-Encoding:snappy header=Content-Type:application/x-protobuf
		header=X-Prometheus-Remote-Write-Version:0.1.0)
}

# bl_added_line WHAT BARE ROWGATE NGINX HAPROXY: given the CPU µs of one
# unit (a request, a connection) bare and through each limiter, the
# markdown line of what each adds (its CPU minus bare's) and rowgate's
# added CPU ÷ each proxy's: (rowgate - bare) ÷ (proxy - bare).
bl_added_line() {
	"$BL_PY" - "$@" <<'PY'
import sys
what = sys.argv[1]
b, rg, ng, hp = (float(x) for x in sys.argv[2:6])
d = lambda x: x - b
r = lambda p: "%.2f" % (d(rg) / d(p)) if d(p) > 0 else "n/a"
print("Added CPU %s (median CPU µs minus bare's): rowgate %.1f µs, nginx "
      "%.1f µs, haproxy %.1f µs.  **rowgate's added CPU %s ÷ nginx's: %s; "
      "÷ haproxy's: %s.**" % (what, d(rg), d(ng), d(hp), what, r(ng), r(hp)))
PY
}
