#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reconciliation cost, side by side with the server's own cost.
#
#  A. Throughput: a known volume of Prometheus remote-write bodies (snappy
#     protobuf from build/rg-count) is sent through rowgate while rowgated is
#     SIGSTOPped, so every copy waits in the 64 MiB body ring; then SIGCONT
#     and rowgated's CPU time (/proc/PID/stat utime+stime) until every copy is
#     reconciled gives MB/s and rows/s per core.  The same bodies sent to
#     victoria-metrics before rowgated ever started give the server's CPU
#     time for the same requests without rowgate.
#  B. Lag: a real Prometheus (scrape 1 s, itself and victoria-metrics, two
#     jobs each) remote-writes through rowgate for BENCH_PROM_SECONDS; lag
#     p50/p99 (request end -> bucket corrected) from `rowgatectl stats`, and
#     rowgated's vs victoria-metrics' CPU time over the same interval.
#
#   sudo bench/reconcile_bench.sh            # prints a markdown section
#   BENCH_BODIES=40 BENCH_ROWS=100000 BENCH_PROM_SECONDS=30 bench/reconcile_bench.sh
source "$(dirname "$0")/../tests/e2e/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics prometheus curl ss "$RG_PY"
RG_COUNT=$RG_BUILD/rg-count
[ -x "$RG_COUNT" ] && [ -x "$RG_ROWGATED" ] || rg_fail "build first (make)"
BODIES=${BENCH_BODIES:-40}
ROWS=${BENCH_ROWS:-100000}
SERIES=${BENCH_SERIES:-1000}
PROM_SECONDS=${BENCH_PROM_SECONDS:-30}
HZ=$(getconf CLK_TCK)
log() { rg_log "$@" >&2; }

rg_mount_bpffs
rg_start_vm
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'

# the bodies: BODIES distinct requests (metric name per body) of ROWS samples
# (fresh metric names per set: every run creates its series, as the first did)
ROUNDS=${BENCH_ROUNDS:-3}
for set in $(seq 0 "$ROUNDS"); do
	for i in $(seq 1 "$BODIES"); do
		"$RG_COUNT" -p prom-rw --encode "$ROWS" --series "$SERIES" --metric "rb_${set}_$i" \
			>"$RG_TMP/b${set}_$i.bin" || rg_fail "rg-count --encode"
	done
done
BYTES=$(cat "$RG_TMP"/b0_*.bin | wc -c)
DECODED=$("$RG_COUNT" -p prom-rw <"$RG_TMP/b0_1.bin" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["decoded_bytes"])')
DECODED=$((DECODED * BODIES))
TOTAL_ROWS=$((ROWS * BODIES))
[ "$BYTES" -lt $((60 << 20)) ] || rg_fail "bodies ($BYTES bytes) must fit the 64 MiB ring"

# send_all DB SET: every body of a set once, one keep-alive connection;
# prints wall seconds
send_all() {
	"$RG_PY" - "$RG_PORT" "$1" "$RG_TMP" "$BODIES" "$2" <<'PY'
import http.client, sys, time
port, db, d, n, st = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
c = http.client.HTTPConnection("127.0.0.1", port)
t = time.monotonic()
for i in range(1, n + 1):
    body = open("%s/b%s_%d.bin" % (d, st, i), "rb").read()
    c.request("POST", "/api/v1/write?db=" + db, body,
              {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"})
    r = c.getresponse(); r.read()
    if r.status != 204:
        sys.exit("status %d" % r.status)
print("%.3f" % (time.monotonic() - t))
PY
}
vm_flush() { curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null; }

# --- A1: the server alone (rowgated not running) -----------------------------
vm_flush; sleep 1
v0=$(rg_cpu_ticks "$VM_PID")
wall_vm=$(send_all direct 0) || rg_fail "direct send failed"
vm_flush; sleep 2 # background merges of the fresh rows count too
v1=$(rg_cpu_ticks "$VM_PID")
vm_cpu=$(awk -v t=$((v1 - v0)) -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
log "A1 server alone: $BODIES requests, $TOTAL_ROWS rows, $BYTES bytes in ${wall_vm}s; VM CPU ${vm_cpu}s"

# --- A2: through rowgate, rowgated stopped, then draining --------------------
rg_start_rowgated
rg_ctl limit set rb 1000000000000 >/dev/null || rg_fail "limit set"
rg_on_exit "kill -CONT $RG_PID"
pst() { rg_ctl --json stats rb | "$RG_PY" -c '
import json,sys; p=json.load(sys.stdin)["databases"][0]["protocols"]["prom-rw"]
print(p["admitted_requests"], p["reconciled_requests"], p["reconciled_rows"], p["undecodable_requests"], p["unreconciled_requests"])'; }
vm_t=0 rg_t=0 drain_ns=0
for set in $(seq 1 "$ROUNDS"); do
	kill -STOP "$RG_PID"
	v0=$(rg_cpu_ticks "$VM_PID")
	send_all rb "$set" >/dev/null || rg_fail "send through rowgate failed"
	vm_flush; sleep 2
	v1=$(rg_cpu_ticks "$VM_PID")
	r0=$(rg_cpu_ticks "$RG_PID")
	t0=$(date +%s%N)
	kill -CONT "$RG_PID"
	while read -r a rc rrows ud ur < <(pst); [ $((rc + ud + ur)) -lt "$a" ]; do sleep 0.01; done
	t1=$(date +%s%N)
	r1=$(rg_cpu_ticks "$RG_PID")
	vm_t=$((vm_t + v1 - v0)) rg_t=$((rg_t + r1 - r0)) drain_ns=$((drain_ns + t1 - t0))
	[ "$rrows" -eq $((TOTAL_ROWS * set)) ] || rg_fail "reconciled $rrows rows, expected $((TOTAL_ROWS * set)) (undecodable $ud, lost $ur)"
done
per() { awk -v t="$1" -v hz="$HZ" -v n="$ROUNDS" 'BEGIN { printf "%.3f", t / hz / n }'; }
rg_cpu=$(per $rg_t)
vm_cpu2=$(per $vm_t)
drain=$(awk -v a="$drain_ns" -v n="$ROUNDS" 'BEGIN { printf "%.3f", a / 1e9 / n }')
log "A2 rowgated: per round drained $BODIES copies ($TOTAL_ROWS rows) in ${drain}s wall, ${rg_cpu}s CPU (includes answering the admin polls); VM CPU ${vm_cpu2}s"

# --- B: Prometheus remote-write load ------------------------------------------
PROM_PORT=$(rg_free_port) || rg_fail "no free port"
mkdir -p "$RG_TMP/prom"
cat >"$RG_TMP/prom/prometheus.yml" <<EOF
global: { scrape_interval: 1s, scrape_timeout: 900ms }
scrape_configs:
  - { job_name: self,  static_configs: [{ targets: ["127.0.0.1:$PROM_PORT"] }] }
  - { job_name: self2, static_configs: [{ targets: ["127.0.0.1:$PROM_PORT"] }] }
  - { job_name: vm,    static_configs: [{ targets: ["127.0.0.1:$RG_PORT"] }] }
  - { job_name: vm2,   static_configs: [{ targets: ["127.0.0.1:$RG_PORT"] }] }
remote_write:
  - url: http://127.0.0.1:$RG_PORT/api/v1/write?db=promb
    queue_config: { max_samples_per_send: 500, batch_send_deadline: 500ms }
EOF
rg_ctl limit set promb 1000000000 >/dev/null
prometheus --config.file="$RG_TMP/prom/prometheus.yml" --storage.tsdb.path="$RG_TMP/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --storage.remote.flush-deadline=2s \
	--log.level=warn >"$RG_TMP/prometheus.log" 2>&1 &
PROM_PID=$!
rg_on_exit "kill -9 $PROM_PID; wait $PROM_PID"
rg_wait_for 20 curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" || rg_fail "prometheus did not come up"
sleep 8 # remote write starts after the first WAL segment is read
# a fresh rowgated so the lag reservoir holds this load only (pins adopted)
kill -9 "$RG_PID"; wait "$RG_PID" 2>/dev/null
rg_start_rowgated
bst() { rg_ctl --json stats promb | "$RG_PY" -c '
import json,sys; d=json.load(sys.stdin); p=d["databases"][0]["protocols"].get("prom-rw",{}); g=d["global"]
print(p.get("reconciled_requests",0), p.get("reconciled_rows",0), p.get("body_bytes",0), g.get("lag_p50_us",0), g.get("lag_p99_us",0))'; }
read -r q0 rows0 bytes0 _ _ < <(bst)
r0=$(rg_cpu_ticks "$RG_PID"); v0=$(rg_cpu_ticks "$VM_PID"); t0=$(date +%s%N)
sleep "$PROM_SECONDS"
r1=$(rg_cpu_ticks "$RG_PID"); v1=$(rg_cpu_ticks "$VM_PID"); t1=$(date +%s%N)
read -r q1 rows1 bytes1 p50 p99 < <(bst)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
prg=$(awk -v t=$((r1 - r0)) -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
pvm=$(awk -v t=$((v1 - v0)) -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
log "B Prometheus: $((q1 - q0)) requests, $((rows1 - rows0)) rows, $((bytes1 - bytes0)) bytes in ${secs}s; rowgated CPU ${prg}s, VM CPU ${pvm}s; lag p50 ${p50}us p99 ${p99}us"

mbs() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", b / 1e6 / s; else print "n/a (below tick)" }'; }
rps() { awk -v r="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2fM", r / 1e6 / s; else print "n/a" }'; }
cat <<EOF
## Reconciliation cost (bench/reconcile_bench.sh)

$(uname -r), $(nproc) CPUs, victoria-metrics $(dpkg-query -W -f="\${Version}" victoria-metrics 2>/dev/null), $(prometheus --version 2>&1 | head -1)

### A. Throughput: $BODIES remote-write requests, $TOTAL_ROWS samples, $BYTES bytes snappy ($DECODED decoded)

| | CPU s | wire MB/s per core | decoded MB/s per core | rows/s per core |
|---|---|---|---|---|
| rowgated reconciling (ring drained after SIGCONT, ${drain}s wall; mean of $ROUNDS rounds) | $rg_cpu | $(mbs "$BYTES" "$rg_cpu") | $(mbs "$DECODED" "$rg_cpu") | $(rps "$TOTAL_ROWS" "$rg_cpu") |
| victoria-metrics ingesting the same requests, no rowgate | $vm_cpu | $(mbs "$BYTES" "$vm_cpu") | $(mbs "$DECODED" "$vm_cpu") | $(rps "$TOTAL_ROWS" "$vm_cpu") |
| victoria-metrics, same volume through rowgate (mean of $ROUNDS rounds) | $vm_cpu2 | $(mbs "$BYTES" "$vm_cpu2") | $(mbs "$DECODED" "$vm_cpu2") | $(rps "$TOTAL_ROWS" "$vm_cpu2") |

### B. Prometheus remote-write load, ${secs}s

| requests | samples | wire bytes | rowgated CPU s | victoria-metrics CPU s | lag p50 | lag p99 |
|---|---|---|---|---|---|---|
| $((q1 - q0)) | $((rows1 - rows0)) | $((bytes1 - bytes0)) | $prg | $pvm | ${p50} µs | ${p99} µs |
EOF
