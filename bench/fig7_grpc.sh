#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 7: GreptimeDB gRPC ingestion, the baseline the kernel gRPC path
# will be measured against.  The GreptimeDB-compatible server of
# tests/grpc (gRPC C-core, python3-grpcio) rejecting every insert itself
# with RESOURCE_EXHAUSTED after decoding it (as GreptimeDB's own limiter
# does), and the same server admitting, both driven by the grpc-go client
# (unary Handle, row inserts, 16 calls in flight, one connection).
# Until the kernel path exists the rowgate columns are n/a.
source "$(dirname "$0")/lib.sh"
bl_require curl ss "$BL_PY"
GO_CLIENT=$BL_BUILD/grpc/rg-grpc-go
GRPC_PY=$BL_BUILD/grpc/py
[ -x "$GO_CLIENT" ] || bl_die "needs $GO_CLIENT (make; golang-go, golang-google-grpc-dev)"
"$BL_PY" -c 'import grpc' 2>/dev/null || bl_die "needs python3-grpcio"
RUNS=${FIG7_RUNS:-5}
SIZES=${FIG7_SIZES:-20 1000}
CONC=${FIG7_CONCURRENCY:-16}

start_server() { # name args...
	local name=$1 port admin; shift
	port=$(bl_free_port) || bl_die "no free port"
	admin=$(bl_free_port) || bl_die "no free port"
	RG_GRPC_PY=$GRPC_PY "$BL_PY" "$BL_ROOT/tests/grpc/greptime_server.py" \
		--port "$port" --admin-port "$admin" "$@" >"$BL_TMP/$name.log" 2>&1 &
	local pid=$!
	bl_on_exit "kill -9 $pid; wait $pid"
	bl_wait_for 20 curl -sf "http://127.0.0.1:$admin/stats" || bl_die "$name server did not come up"
	eval "${name}_PID=$pid ${name}_PORT=$port"
}
start_server REJ --reject-all
start_server ADM

# calls per run: ~2 s of load at this machine's rates
calls_for() { [ "$1" -ge 1000 ] && echo 600 || echo 3000; }

run() { # out server-pid port size
	local out=$1 pid=$2 port=$3 size=$4 calls t0 t1 ct json
	calls=$(calls_for "$size")
	read -r h0 _ < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	t0=$(bl_proc_ticks "$pid")
	TIMEFORMAT='%U %S'
	ct=$( { time "$GO_CLIENT" -target "127.0.0.1:$port" -db bench -rows "$size" \
		-calls "$calls" -concurrency "$CONC" -no-retry -id "r$RANDOM" \
		>"$BL_TMP/client.json" 2>>"$BL_TMP/client.log"; } 2>&1 | tail -n1)
	t1=$(bl_proc_ticks "$pid")
	read -r h1 _ < <("$BL_PY" "$BL_ROOT/bench/cpuacct.py")
	json=$(cat "$BL_TMP/client.json")
	"$BL_PY" - "$json" "$ct" "$((t1 - t0))" "$((h1 - h0))" >>"$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
cu, cs = (float(x) for x in sys.argv[2].split())
print("calls=%d ok=%d failed=%d seconds=%f rows=%d server_ticks=%s client_s=%f host_ticks=%s"
      % (d["calls"], d["ok"], d["failed"], d["seconds"], d["rows_sent"],
         sys.argv[3], cu + cs, sys.argv[4]))
PY
}

raw=$BL_TMP/fig7
for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for size in $SIZES; do
		run "$raw.reject.$size" "$REJ_PID" "$REJ_PORT" "$size"
		run "$raw.admit.$size" "$ADM_PID" "$ADM_PORT" "$size"
	done
done

# The parser the kernel path will run (include/rowgate/h2.h), in an sk_skb
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

for size in $SIZES; do
	read -r ok _ < <(bl_agg "$raw.reject.$size" "ok")
	[ "$ok" = 0 ] || bl_log "WARNING: the rejecting server admitted $ok calls ($size rows)"
	read -r failed _ < <(bl_agg "$raw.admit.$size" "failed")
	[ "$failed" = 0 ] || bl_log "WARNING: $failed admitted calls failed ($size rows)"
done

cat <<EOF
## 7. GreptimeDB gRPC inserts: the server rejecting them itself, and admitted (baseline for the kernel path)

The GreptimeDB-compatible gRPC server of \`tests/grpc\` (gRPC C-core
through python3-grpcio, $(dpkg-query -W -f '${Version}' python3-grpcio 2>/dev/null || echo '?'))
and the grpc-go client (\`build/grpc/rg-grpc-go\`, unary \`Handle\`, row
inserts, $CONC calls in flight on one connection, no retries); $RUNS
interleaved rounds, medians.  *server rejects*: \`--reject-all\`, every
insert decoded and answered \`RESOURCE_EXHAUSTED\` with
\`x-greptime-err-code: 6001\`, as GreptimeDB's own limiter does.
*admitted*: the same server storing the rows.  The kernel's
\`RESOURCE_EXHAUSTED\` does not exist yet (docs/grpc.md): its columns
come with it.

| rows a call | case | calls/s | rows/s | server CPU µs / call | client CPU µs / call | other load (% of a core) |
|---|---|---|---|---|---|---|
EOF
M=("calls/seconds" "rows/seconds" "server_ticks/HZ/calls*1e6" "client_s/calls*1e6"
   "(host_ticks/HZ-server_ticks/HZ-client_s)/seconds*100")
for size in $SIZES; do
	read -r rate rrate srv cli other < <(bl_agg "$raw.reject.$size" "${M[@]}")
	echo "| $size | server rejects | $(bl_fmt "$rate" .0f) | – | $(bl_fmt "$srv" .0f) | $(bl_fmt "$cli" .0f) | $(bl_fmt "$other" .0f) |"
	read -r rate rrate srv cli other < <(bl_agg "$raw.admit.$size" "${M[@]}")
	echo "| $size | admitted, bare | $(bl_fmt "$rate" .0f) | $(bl_fmt "$rrate" .0f) | $(bl_fmt "$srv" .0f) | $(bl_fmt "$cli" .0f) | $(bl_fmt "$other" .0f) |"
	echo "| $size | kernel rejects (rowgate) | n/a | – | n/a | n/a | |"
	echo "| $size | admitted through rowgate | n/a | n/a | n/a | n/a | |"
done
cat <<EOF

The parser the kernel path will run (\`include/rowgate/h2.h\` in the
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
cat <<EOF

To come with the kernel path: *CPU per rejected insert*, kernel
\`RESOURCE_EXHAUSTED\` ÷ server rejection (server + kernel-thread CPU), and
*admitted throughput* through rowgate ÷ bare, from one run of this figure.
EOF
