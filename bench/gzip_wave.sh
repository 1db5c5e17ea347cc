#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The burst a concurrent wave of compressed writes takes before
# reconciliation catches up.  A database never written before
# (no learned bytes-per-row ratio) with limit WAVE_LIMIT rows/s, full bucket;
# WAVE_CONNS connections each send one gzip line-protocol write of
# WAVE_ROWS rows, all released at once.  Prints the writes admitted, the rows
# victoria-metrics stored, the rows rowgate charged, and the burst as a
# multiple of the bucket's capacity (one second of the limit).
#
#   sudo bench/gzip_wave.sh
#   WAVE_CONNS=40 WAVE_ROWS=500 WAVE_LIMIT=2000 WAVE_RUNS=5 bench/gzip_wave.sh
# rowgate reads requests as GreptimeDB does (victoria-metrics stores them),
# as in tests/e2e/estimates.sh, whose wave this is
RG_PROFILE=greptimedb
source "$(dirname "$0")/../tests/e2e/lib.sh"
CONNS=${WAVE_CONNS:-40}
ROWS=${WAVE_ROWS:-500}
LIMIT=${WAVE_LIMIT:-2000}
RUNS=${WAVE_RUNS:-5}
rg_setup
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'

for run in $(seq 1 "$RUNS"); do
	db=wave$run
	rg_ctl limit set "$db" "$LIMIT" >/dev/null || rg_fail "limit set"
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$db" "$CONNS" "$ROWS" \
		>"$RG_TMP/wave$run.out" <<'PY' || rg_fail "client: $(cat "$RG_TMP/wave$run.out")"
import sys
from rgclient import gzip_wave
port, db, conns, rows = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
status, body_bytes = gzip_wave(port, db, conns, rows)
print(sum(1 for s in status if s == 204), body_bytes)
PY
	read -r admitted body_bytes <"$RG_TMP/wave$run.out"
	stored=$(rg_vm_rows_wait "{db=\"$db\"}" $((admitted * ROWS)))
	sleep 0.5
	charged=$(rg_stat "$db" admitted_rows)
	rg_log "run $run: $admitted of $CONNS writes admitted ($body_bytes gzip bytes, $ROWS rows each); stored $stored rows, charged $charged; burst $(awk -v s="$stored" -v l="$LIMIT" 'BEGIN { printf "%.2f", s / l }')x capacity"
done
