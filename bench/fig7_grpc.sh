#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 7: GreptimeDB gRPC ingestion, the server rejecting inserts itself
# against the kernel's RESOURCE_EXHAUSTED (issue 12).  The
# GreptimeDB-compatible server of tests/grpc (gRPC C-core, python3-grpcio)
# rejecting every insert itself with RESOURCE_EXHAUSTED after decoding it
# (as GreptimeDB's own limiter does), the same server admitting bare, and
# a third instance behind rowgated --grpc (docs/grpc.md section 7): a
# spent database refused by the kernel (the handler never runs) and a
# database with a huge limit admitted through it.  All driven by the
# grpc-go client (unary Handle, row inserts, 16 calls in flight, one
# connection, no retries), rounds interleaved.
# Then GreptimeDB's streaming writer (one HandleRequests call held open,
# every message judged, docs/grpc.md#streams): its admitted throughput
# bare and through rowgate, and its refused calls, the server refusing
# them against the kernel; FIG7_WRITER=0 leaves it out,
# FIG7_WRITER_ROWS (100) rows a message, FIG7_WRITER_SECS (2) a run.
# FIG7_ROWGATE=0 (or no bpftool): the baseline rows only.  FIG7_RG_ARGS:
# more rowgated options.
source "$(dirname "$0")/lib.sh"
bl_require curl ss "$BL_PY"
ROWGATE=${FIG7_ROWGATE:-1}
if [ "$ROWGATE" = 1 ] && ! command -v bpftool >/dev/null 2>&1; then
	bl_log "no bpftool: the rowgate rows are not measured"
	ROWGATE=0
fi
GO_CLIENT=$BL_BUILD/grpc/rg-grpc-go
GRPC_PY=$BL_BUILD/grpc/py
[ -x "$GO_CLIENT" ] || bl_die "needs $GO_CLIENT (make; golang-go, golang-google-grpc-dev)"
"$BL_PY" -c 'import grpc' 2>/dev/null || bl_die "needs python3-grpcio"
RUNS=${FIG7_RUNS:-5}
SIZES=${FIG7_SIZES:-20 1000}
CONC=${FIG7_CONCURRENCY:-16}
WRITER=${FIG7_WRITER:-1}
WROWS=${FIG7_WRITER_ROWS:-100}
WSECS=${FIG7_WRITER_SECS:-2}
# the client's mode: calls of -calls N, or a writer (run_writer)
CLIENT_ARGS=()

start_server() { # name [--cgroup DIR --port PORT] args...
	local name=$1 port="" admin cg=""; shift
	if [ "${1:-}" = --cgroup ]; then cg=$2 port=$4; shift 4; fi
	[ -n "$port" ] || port=$(bl_free_port) || bl_die "no free port"
	admin=$(bl_free_port) || bl_die "no free port"
	(
		[ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs"
		RG_GRPC_PY=$GRPC_PY exec "$BL_PY" "$BL_ROOT/tests/grpc/greptime_server.py" \
			--port "$port" --admin-port "$admin" "$@"
	) >"$BL_TMP/$name.log" 2>&1 &
	local pid=$!
	bl_on_exit "kill -9 $pid; wait $pid"
	bl_wait_for 20 curl -sf "http://127.0.0.1:$admin/stats" || bl_die "$name server did not come up"
	eval "${name}_PID=$pid ${name}_PORT=$port ${name}_ADMIN=$admin"
}
start_server REJ --reject-all
start_server ADM
if [ "$ROWGATE" = 1 ]; then
	# the guarded instance: its own cgroup and port, rowgated --grpc on it
	bl_mount_bpffs
	bl_bpf_stats_on
	bl_server_cgroup_port
	start_server GRD --cgroup "$BL_CGROUP" --port "$BL_PORT"
	# FIG7_RG_ARGS: more rowgated options, to take a part out (e.g.
	# "--egress off --grpc-reject close": no sk_msg program on the server)
	# shellcheck disable=SC2086 # words on purpose
	bl_rowgated_start --port "$BL_PORT=greptimedb" --grpc "$BL_PORT" ${FIG7_RG_ARGS:-}
	bl_ctl limit set bench 1000000000000 >/dev/null || bl_die "limit set bench"
	# rej: 1 row/s, then one admitted call of 1,000 rows on the full
	# bucket leaves ~1,000 s of debt: every later call is refused
	bl_ctl limit set rej 1 >/dev/null || bl_die "limit set rej"
	"$GO_CLIENT" -target "127.0.0.1:$BL_PORT" -db rej -rows 1000 -calls 1 -no-retry \
		-id spend >"$BL_TMP/spend.json" 2>>"$BL_TMP/client.log" ||
		bl_die "the spending call through rowgate failed"
	"$BL_PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["ok"] != 1)' "$BL_TMP/spend.json" ||
		bl_die "the spending call was not admitted: $(cat "$BL_TMP/spend.json")"
fi
# What the kernel runs for a call: the sockhash's entry (its run time
# includes the verdict and the HTTP/2 verdict it tail-calls,
# docs/design.md#verdict-slot), the egress entry (the answer written in
# place of the kernel SETTINGS ACK, with rg_egress) and sockops.
KPINS=(prog_verdict prog_egress link_sockops)

# calls per run: ~2 s of load at this machine's rates
calls_for() { [ "$1" -ge 1000 ] && echo 600 || echo 3000; }

# refusals that fell back to closing the connection (GOAWAY, docs/grpc.md#7-step-2)
fallbacks() {
	[ "$ROWGATE" = 1 ] || { echo 0; return; }
	bl_ctl --json stats | "$BL_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["h2_reject_fallback"])'
}

run() { # out server-pid port size [db]
	local out=$1 pid=$2 port=$3 size=$4 db=${5:-bench} calls t0 t1 r0 r1 b0 b1 f0 f1 ct json
	calls=$(calls_for "$size")
	read -r b0 _ < <(bl_prog_stats "${KPINS[@]}")
	f0=$(fallbacks)
	read -r h0 k0 < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	t0=$(bl_proc_ticks "$pid")
	r0=$(bl_proc_ticks $BL_RG_PID)
	TIMEFORMAT='%U %S'
	[ ${#CLIENT_ARGS[@]} -gt 0 ] || CLIENT_ARGS=(-calls "$calls" -concurrency "$CONC")
	ct=$( { time "$GO_CLIENT" -target "127.0.0.1:$port" -db "$db" -rows "$size" \
		"${CLIENT_ARGS[@]}" -no-retry -id "r$RANDOM" \
		>"$BL_TMP/client.json" 2>>"$BL_TMP/client.log"; } 2>&1 | tail -n1)
	CLIENT_ARGS=()
	t1=$(bl_proc_ticks "$pid")
	r1=$(bl_proc_ticks $BL_RG_PID)
	read -r h1 k1 < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	read -r b1 _ < <(bl_prog_stats "${KPINS[@]}")
	f1=$(fallbacks)
	json=$(cat "$BL_TMP/client.json")
	[ "$db" != rej ] || "$BL_PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
if d["codes"] != {"8": d["calls"]}: print(d["codes"], d.get("last_error", ""))' \
		"$BL_TMP/client.json" | while read -r l; do bl_log "kernel rejects, $size rows: $l"; done
	"$BL_PY" - "$json" "$ct" "$((t1 - t0))" "$((h1 - h0))" "$((k1 - k0))" "$((r1 - r0))" \
		"$((b1 - b0))" "$((f1 - f0))" >>"$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
cu, cs = (float(x) for x in sys.argv[2].split())
c8 = d.get("codes", {}).get("8", 0)
print("calls=%d ok=%d failed=%d exhausted=%d seconds=%f rows=%d server_ticks=%s client_s=%f"
      " host_ticks=%s kthread_ticks=%s rg_ticks=%s bpf_ns=%s fallbacks=%s"
      % (d["calls"], d["ok"], d["failed"], c8, d["seconds"], d["rows_sent"],
         sys.argv[3], cu + cs, sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7],
         sys.argv[8]))
PY
}

# run_writer: run, the client a streaming writer: unpaced, a failed call
# reopened at once, for WSECS seconds
run_writer() {
	CLIENT_ARGS=(-mode writer -seconds "${WSECS}s" -rate 1000000 -backoff 0 -max-backoff 0)
	run "$@"
}

raw=$BL_TMP/fig7
for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for size in $SIZES; do
		run "$raw.reject.$size" "$REJ_PID" "$REJ_PORT" "$size"
		run "$raw.admit.$size" "$ADM_PID" "$ADM_PORT" "$size"
		[ "$ROWGATE" = 1 ] || continue
		run "$raw.krej.$size" "$GRD_PID" "$BL_PORT" "$size" rej
		run "$raw.rgadm.$size" "$GRD_PID" "$BL_PORT" "$size" bench
	done
	[ "$WRITER" = 1 ] || continue
	run_writer "$raw.wreject" "$REJ_PID" "$REJ_PORT" "$WROWS"
	run_writer "$raw.wadmit" "$ADM_PID" "$ADM_PORT" "$WROWS"
	[ "$ROWGATE" = 1 ] || continue
	run_writer "$raw.wkrej" "$GRD_PID" "$BL_PORT" "$WROWS" rej
	run_writer "$raw.wrgadm" "$GRD_PID" "$BL_PORT" "$WROWS" bench
done

# The parser the kernel path will run (include/rowgate/h2/), in an sk_skb
# verdict on the same calls (tests/bpf/h2_kern.c relays them to the
# admitting server): BPF run time per message and per byte.
KERN=$BL_BUILD/tests/h2_kern
KOBJ=$BL_BUILD/tests/bpf/h2_load.bpf.o
if [ -x "$KERN" ] && [ -f "$KOBJ" ]; then
	for ((r = 1; r <= RUNS; r++)); do
		for size in $SIZES; do
			"$KERN" "$KOBJ" "$ADM_PORT" >"$BL_TMP/kern.out" 2>>"$BL_TMP/kern.log" &
			kpid=$!
			bl_wait_for 10 grep -q '^port ' "$BL_TMP/kern.out" || bl_die "h2_kern did not start"
			kport=$(awk '/^port /{ print $2 }' "$BL_TMP/kern.out")
			"$GO_CLIENT" -target "127.0.0.1:$kport" -db bench -rows "$size" \
				-calls "$(calls_for "$size")" -concurrency "$CONC" -id "k$RANDOM" \
				>/dev/null 2>>"$BL_TMP/client.log" || bl_die "client through h2_kern failed"
			kill -TERM "$kpid"
			wait "$kpid"
			awk '/^(conn|verdict) / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
			     END { printf "messages=%d bytes=%d runs=%d run_ns=%d err=%d\n",
				   v["messages"], v["bytes"], v["runs"], v["run_ns"], v["err"] }' \
				"$BL_TMP/kern.out" >>"$raw.kparse.$size"
			grep -q 'err=0' "$BL_TMP/kern.out" ||
				bl_log "WARNING: the parser failed: $(tr '\n' ' ' <"$BL_TMP/kern.out")"
		done
	done
fi
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

# sums FILE EXPR...: totals over every round (bl_agg gives medians)
sums() {
	local f=$1; shift
	"$BL_PY" - "$f" "$@" <<'PY'
import sys
runs = [dict((k, float(v)) for k, _, v in (kv.partition("=") for kv in l.split()))
        for l in open(sys.argv[1])]
print(" ".join("%d" % sum(eval(e, {}, r) for r in runs) for e in sys.argv[2:]))
PY
}

for size in $SIZES; do
	read -r ok _ < <(bl_agg "$raw.reject.$size" "ok")
	[ "$ok" = 0 ] || bl_log "WARNING: the rejecting server admitted $ok calls ($size rows)"
	read -r failed _ < <(bl_agg "$raw.admit.$size" "failed")
	[ "$failed" = 0 ] || bl_log "WARNING: $failed admitted calls failed ($size rows)"
	[ "$ROWGATE" = 1 ] || continue
	read -r ok ex fb _ < <(sums "$raw.krej.$size" ok calls-exhausted fallbacks)
	[ "$ok" = 0 ] && [ "$ex" = 0 ] ||
		bl_log "WARNING: kernel rejects ($size rows), all rounds: $ok calls admitted," \
			"$ex not RESOURCE_EXHAUSTED, $fb refusals fell back to GOAWAY"
	read -r failed _ < <(bl_agg "$raw.rgadm.$size" "failed")
	[ "$failed" = 0 ] || bl_log "WARNING: $failed calls admitted through rowgate failed ($size rows)"
done
if [ "$ROWGATE" = 1 ]; then
	grd_calls=$(curl -sf "http://127.0.0.1:$GRD_ADMIN/stats" |
		"$BL_PY" -c 'import json,sys; print(json.load(sys.stdin)["calls"])')
	bl_log "the guarded server handled $grd_calls calls (the admitted ones and the spending call)"
	bl_log "rowgate: $(bl_ctl --json stats | "$BL_PY" -c 'import json,sys; g=json.load(sys.stdin)["global"]
print(" ".join("%s=%s" % (k, v) for k, v in sorted(g.items()) if k.startswith("h2_") or k == "internal_errors"))')"
	# the refusals and why any fell back (h2_fallback_* by reason)
	h2_counts=$(bl_ctl --json stats | "$BL_PY" -c 'import json,sys; g=json.load(sys.stdin)["global"]
print(", ".join("`%s` %s" % (k, v) for k, v in sorted(g.items()) if v and (k.startswith(("h2_reject", "h2_fallback", "h2_early", "h2_failclosed", "h2_give_backs")) or k == "internal_errors")))')
fi

cat <<EOF
## 7. GreptimeDB gRPC inserts: the kernel's RESOURCE_EXHAUSTED against the server rejecting them itself

The GreptimeDB-compatible gRPC server of \`tests/grpc\` (gRPC C-core
through python3-grpcio, $(dpkg-query -W -f '${Version}' python3-grpcio 2>/dev/null || echo '?'))
and the grpc-go client (\`build/grpc/rg-grpc-go\`, unary \`Handle\`, row
inserts, $CONC calls in flight on one connection, no retries); $RUNS
interleaved rounds, medians.  *server rejects*: \`--reject-all\`, every
insert decoded and answered \`RESOURCE_EXHAUSTED\` with
\`x-greptime-err-code: 6001\`, as GreptimeDB's own limiter does.
*admitted, bare*: the same server storing the rows.  *kernel rejects*:
a third instance of the server behind \`rowgated --port P=greptimedb --grpc P\`
(\`--grpc-reject keep\`, docs/grpc.md section 7), database \`rej\` limited
to 1 row/s and spent by one admitted 1,000-row call: the verdict refuses
each message and egress answers a trailers-only \`RESOURCE_EXHAUSTED\`,
stream reset, connection kept; the handler never runs.  *admitted through
rowgate*: the same guarded server, database \`bench\` with a limit of
10^12 rows/s.  *BPF*: \`bpf_stats\` run time of the sockhash's entry
(with the verdict and HTTP/2 verdict it tail-calls), the egress entry
(with \`rg_egress\`) and sockops, per call; on loopback it runs in the
client's and server's system time and softirqs, so it is inside the
other columns, shown apart.  *kthreads + rowgated*: kernel threads
(ksoftirqd, the sockmap backlog worker) and the daemon.

| rows a call | case | calls/s | rows/s | server CPU µs / call | client CPU µs / call | BPF µs / call | kthreads + rowgated µs / call | other load (% of a core) |
|---|---|---|---|---|---|---|---|---|
EOF
M=("calls/seconds" "server_ticks/HZ/calls*1e6" "client_s/calls*1e6"
   "(kthread_ticks+rg_ticks)/HZ/calls*1e6"
   "(host_ticks-server_ticks-kthread_ticks-rg_ticks)/HZ/seconds*100-client_s/seconds*100")
row() { # size label file rows/s bpf
	local rate srv cli kt other
	read -r rate srv cli kt other < <(bl_agg "$3" "${M[@]}")
	echo "| $1 | $2 | $(bl_fmt "$rate" .0f) | $4 | $(bl_fmt "$srv" .0f) | $(bl_fmt "$cli" .0f) | $5 | $(bl_fmt "$kt" .0f) | $(bl_fmt "$other" .0f) |"
}
ratios="" notes=""
for size in $SIZES; do
	read -r rrate _ < <(bl_agg "$raw.admit.$size" "rows/seconds")
	row "$size" "server rejects" "$raw.reject.$size" "–" "–"
	row "$size" "admitted, bare" "$raw.admit.$size" "$(bl_fmt "$rrate" .0f)" "–"
	if [ "$ROWGATE" != 1 ]; then
		echo "| $size | kernel rejects (rowgate) | not run (FIG7_ROWGATE=0 or no bpftool) | | | | | | |"
		echo "| $size | admitted through rowgate | not run | | | | | | |"
		continue
	fi
	read -r bpf _ < <(bl_agg "$raw.krej.$size" "bpf_ns/calls/1000")
	row "$size" "kernel rejects (rowgate)" "$raw.krej.$size" "–" "$(bl_fmt "$bpf" .1f)"
	read -r grrate bpf _ < <(bl_agg "$raw.rgadm.$size" "rows/seconds" "bpf_ns/calls/1000")
	row "$size" "admitted through rowgate" "$raw.rgadm.$size" "$(bl_fmt "$grrate" .0f)" "$(bl_fmt "$bpf" .1f)"
	# ratios of the medians, all from this run
	read -r srej scli _ < <(bl_agg "$raw.reject.$size" \
		"(server_ticks+kthread_ticks)/HZ/calls*1e6" "client_s/calls*1e6")
	read -r krej kbpf kcli _ < <(bl_agg "$raw.krej.$size" \
		"(server_ticks+kthread_ticks+rg_ticks)/HZ/calls*1e6+bpf_ns/calls/1000" \
		"bpf_ns/calls/1000" "client_s/calls*1e6")
	read -r ba bc _ < <(bl_agg "$raw.admit.$size" "calls/seconds" "rows/seconds")
	read -r ga gc _ < <(bl_agg "$raw.rgadm.$size" "calls/seconds" "rows/seconds")
	read -r kc kx ku kf _ < <(sums "$raw.krej.$size" calls exhausted calls-exhausted-ok fallbacks)
	notes+="| $size | $kc | $kx | $ku | $kf |
"
	ratios+="| $size | $(bl_fmt "$krej" .1f) | $(bl_fmt "$srej" .0f) | **$(bl_ratio "$krej" "$srej")** | $(bl_ratio "$kbpf" "$srej") | $(bl_ratio "$kcli" "$scli") | **$(bl_ratio "$ga" "$ba")** | $(bl_ratio "$gc" "$bc") |
"
done
if [ "$ROWGATE" = 1 ]; then
	cat <<EOF

Ratios of the medians above.  *Kernel reject CPU*: per refused call, the
guarded server + kernel threads + rowgated + BPF; *server reject CPU*:
per call, the rejecting server + kernel threads.  Client CPU is left out
of both and compared on its own.

| rows a call | kernel reject CPU µs / call | server reject CPU µs / call | kernel ÷ server reject | BPF alone ÷ server reject | client CPU, kernel ÷ server reject | admitted calls/s, rowgate ÷ bare | admitted rows/s, rowgate ÷ bare |
|---|---|---|---|---|---|---|---|
${ratios%
}

Kernel rejects, totals over the $RUNS rounds: a refusal that falls back
to closing the connection (GOAWAY, \`h2_reject_fallback\`,
docs/grpc.md#7-step-2) fails the calls then in flight, the refused one
included, with UNAVAILABLE (the client does not retry) and the client
reconnects.

| rows a call | calls | RESOURCE_EXHAUSTED | other failures (UNAVAILABLE) | refusals fallen back to GOAWAY |
|---|---|---|---|---|
${notes%
}

Over the whole run, rowgated's refusal counters (\`rowgatectl --json
stats\`, non-zero only): ${h2_counts:-none}.
EOF
fi
if [ "$WRITER" = 1 ]; then
	cat <<EOF

The streaming writer (\`rg-grpc-go -mode writer\`: one \`HandleRequests\`
call held open, $WROWS rows a message, unpaced, ${WSECS} s a run; a failed
call reopened at once, docs/grpc.md#streams), the same servers, rounds
interleaved with the rows above.  *admitted*: one call for the whole run,
its rows stored; CPU per message.  *refused*: every call's first message
refused, by the server itself (\`--reject-all\`) or by the kernel
(database \`rej\`, spent); a refused call is one the writer reopens; CPU
per refused call.

| case | refused calls/s | rows/s | server CPU µs | client CPU µs | BPF µs | kthreads + rowgated µs |
|---|---|---|---|---|---|---|
EOF
	wrow() { # label file bpf-expr unit-expr
		local rate rows srv cli kt bpf
		read -r rate rows srv cli kt bpf < <(bl_agg "$2" "(calls-ok)/seconds" "rows/seconds" \
			"server_ticks/HZ/($4)*1e6" "client_s/($4)*1e6" "(kthread_ticks+rg_ticks)/HZ/($4)*1e6" \
			"$3/($4)/1000")
		if [ "$3" = 0 ]; then bpf="–"; else bpf=$(bl_fmt "$bpf" .1f); fi
		echo "| $1 | $(bl_fmt "$rate" .0f) | $(bl_fmt "$rows" .0f) | $(bl_fmt "$srv" .0f) | $(bl_fmt "$cli" .0f) | $bpf | $(bl_fmt "$kt" .0f) |"
	}
	wrow "refused by the server, per call" "$raw.wreject" 0 "calls"
	wrow "admitted, bare, per message" "$raw.wadmit" 0 "rows/$WROWS"
	if [ "$ROWGATE" = 1 ]; then
		wrow "refused by the kernel (rowgate), per call" "$raw.wkrej" bpf_ns "calls"
		wrow "admitted through rowgate, per message" "$raw.wrgadm" bpf_ns "rows/$WROWS"
		read -r srej _ < <(bl_agg "$raw.wreject" "(server_ticks+kthread_ticks)/HZ/calls*1e6")
		read -r krej _ < <(bl_agg "$raw.wkrej" \
			"(server_ticks+kthread_ticks+rg_ticks)/HZ/calls*1e6+bpf_ns/calls/1000")
		read -r ba _ < <(bl_agg "$raw.wadmit" "rows/seconds")
		read -r ga _ < <(bl_agg "$raw.wrgadm" "rows/seconds")
		read -r wx wc wf _ < <(sums "$raw.wkrej" exhausted calls fallbacks)
		cat <<EOF

Ratios of the medians: CPU per refused call (as above: server + kernel
threads, and rowgated + BPF for the kernel), kernel ÷ server refusing:
**$(bl_ratio "$krej" "$srej")**; admitted rows/s, rowgate ÷ bare:
**$(bl_ratio "$ga" "$ba")**.  Kernel refusals, all rounds: $wx of $wc
calls RESOURCE_EXHAUSTED, $wf refusals fallen back to GOAWAY.
EOF
	fi
fi
cat <<EOF

The parser the kernel path runs (\`include/rowgate/h2/\` in the
sk_skb test verdict of \`tests/bpf/h2_load.bpf.c\`, driven by
\`tests/bpf/h2_kern.c\` on the same admitted calls through a relay; BPF
run time from \`BPF_ENABLE_STATS\`; parsing only, no enforcement):

| rows a call | messages parsed | BPF µs / message | BPF ns / byte | verdict runs / message |
|---|---|---|---|---|
EOF
for size in $SIZES; do
	[ -f "$raw.kparse.$size" ] || { echo "| $size | not run (build/tests/h2_kern missing) | | | |"; continue; }
	read -r msgs us ns runs < <(bl_agg "$raw.kparse.$size" "messages" "run_ns/messages/1000" \
		"run_ns/bytes" "runs/messages")
	echo "| $size | $(bl_fmt "$msgs" .0f) | $(bl_fmt "$us" .1f) | $(bl_fmt "$ns" .2f) | $(bl_fmt "$runs" .2f) |"
done
echo
