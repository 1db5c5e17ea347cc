#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 3: a real Prometheus (Debian's 2.42) scrapes itself and
# victoria-metrics every second and remote-writes the samples to
# victoria-metrics' /api/v1/write through rowgate, database `prom` named by
# the db= query parameter, with a limit below the offered rate.  (Debian's
# 2.42 did not send a remote_write `headers:` entry in our runs, so the
# X-Greptime-DB-Name form is covered by proto_payloads.sh with curl.)
#
#   - over 60 s the rate victoria-metrics stores stays within ±5 % of the
#     limit;
#   - once reconciliation has settled (no body copy pending), the rows rowgate
#     charged to `prom` equal the samples victoria-metrics stored, exactly;
#   - reconciliation lag p50/p99 is reported.
#
# The port's profile is victoriametrics, so rowgated counts as it stores:
# victoria-metrics does not store NaN samples (empty summary quantiles are
# NaN here) but stores staleness markers, and rowgate charges the same
# (charging every NaN sample would charge 3.5 % more than is stored).
# retry_on_http_429 is left false (2.42's default, made explicit): a rejected
# batch is dropped by Prometheus, so nothing is stored twice and sample
# timestamps stay close to admission time.  With true Prometheus would resend
# and fall ever further behind its WAL while the stored rate stays the limit;
# PROM_RETRY=true runs that.
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_cmd prometheus
LIMIT=${PROM_LIMIT:-1000}
WINDOW=${PROM_WINDOW:-60}
rg_setup
# kill -9 is asynchronous: reap rowgated before the bpffs is unmounted
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
PROM_PORT=$(rg_free_port) || rg_fail "no free port"
mkdir -p "$RG_TMP/prom"
# Two jobs per target double the series: a few thousand samples/s offered.
cat >"$RG_TMP/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: self
    static_configs: [{ targets: ["127.0.0.1:$PROM_PORT"] }]
  - job_name: self2
    static_configs: [{ targets: ["127.0.0.1:$PROM_PORT"] }]
  - job_name: vm
    static_configs: [{ targets: ["127.0.0.1:$RG_PORT"] }]
  - job_name: vm2
    static_configs: [{ targets: ["127.0.0.1:$RG_PORT"] }]
remote_write:
  - url: http://127.0.0.1:$RG_PORT/api/v1/write?db=prom
    remote_timeout: 10s
    queue_config:
      max_samples_per_send: 500
      capacity: 2500
      batch_send_deadline: 500ms
      min_shards: 1
      max_shards: 4
      min_backoff: 30ms
      max_backoff: 1s
      retry_on_http_429: ${PROM_RETRY:-false}
EOF
rg_ctl limit set prom "$LIMIT" >/dev/null || rg_fail "limit set"

prometheus --config.file="$RG_TMP/prom/prometheus.yml" \
	--storage.tsdb.path="$RG_TMP/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" \
	--storage.remote.flush-deadline=2s --log.level=warn \
	>"$RG_TMP/prometheus.log" 2>&1 &
PROM_PID=$!
rg_on_exit "kill -9 $PROM_PID; wait $PROM_PID"
rg_wait_for 20 curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" || rg_fail "prometheus did not come up"

pq() { # pq PROMQL: scalar result of an instant query (0 when empty)
	curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		"$RG_PY" -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'
}
dbj() { rg_ctl --json stats prom; }
field() { "$RG_PY" -c '
import json,sys
d=json.load(sys.stdin); db=d["databases"][0]; p=db.get("protocols",{}).get("prom-rw",{})
out=[]
for f in sys.argv[1:]:
    s,k=f.split(".",1)
    out.append(str({"db":db,"p":p,"g":d["global"]}[s].get(k,0)))
print(" ".join(out))' "$@"; }

# settled_rows: the database's admitted and rejected rows at a moment when
# no admitted request waits for rowgated (an estimate is above the rows
# until then, by up to the estimate ceiling's factor: rowgate/estimate.h)
settled_rows() {
	local a r rc ud ur adm rej i
	for i in $(seq 1 200); do
		read -r a r rc ud ur adm rej < <(dbj | field p.admitted_requests p.rejected_requests \
			p.reconciled_requests p.undecodable_requests p.unreconciled_requests \
			db.admitted_rows db.rejected_rows)
		[ $((rc + ud + ur)) -eq $((a + r)) ] && break
		sleep 0.01
	done
	echo "$adm $rej"
}
# warm up: scrapes running, remote write flowing, the bucket in steady state
sleep "${PROM_WARMUP:-8}"
read -r adm0 rej0 < <(settled_rows)
rg_check "remote write reaches rowgate (admitted $adm0 rows in warm-up)" [ "$adm0" -gt 0 ]
prom_in() { curl -sf "http://127.0.0.1:$PROM_PORT/metrics" | awk '/^prometheus_remote_storage_samples_in_total/ { print $2 }'; }
in0=$(prom_in)
T0=$(date +%s%3N)
rg_log "measuring for ${WINDOW}s at limit $LIMIT rows/s"
sleep "$WINDOW"
T1=$(date +%s%3N)
in1=$(prom_in)
read -r adm1 rej1 < <(settled_rows)
curl -sf "http://127.0.0.1:$PROM_PORT/metrics" >"$RG_TMP/prom_metrics.txt"

# stop the client; its queue flushes for at most 2 s
kill -TERM "$PROM_PID"; wait "$PROM_PID" 2>/dev/null
# (counters just before the stop are close enough for the log)
settled=0
for _ in $(seq 1 100); do
	read -r a r rc ud ur < <(dbj | field p.admitted_requests p.rejected_requests \
		p.reconciled_requests p.undecodable_requests p.unreconciled_requests)
	if [ $((rc + ud + ur)) -eq $((a + r)) ]; then settled=1; break; fi
	sleep 0.1
done
rg_check "reconciliation settled (requests $a+$r, reconciled $rc, undecodable $ud, unreconciled $ur)" [ $settled = 1 ]
sleep 0.5 # nothing in flight any more: Prometheus is gone

curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null
stored_json=$RG_TMP/export.jsonl
count_stored() {
	curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null
	curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" --data-urlencode 'match[]={__name__!=""}' \
		>"$stored_json"
	"$RG_PY" - "$stored_json" "$T0" "$T1" <<'PY'
import json, sys
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
total = inwin = dups = nonnum = 0
for l in open(sys.argv[1]):
    if not l.strip():
        continue
    o = json.loads(l)
    ts = o["timestamps"]
    total += len(ts)
    dups += len(ts) - len(set(ts))
    nonnum += sum(1 for v in o["values"] if not isinstance(v, (int, float)) or v != v)
    inwin += sum(1 for t in ts if t0 <= t < t1)
print(total, inwin, dups, nonnum)
PY
}
read -r adm_rows rej_rows unenf < <(dbj | field db.admitted_rows db.rejected_rows db.unenforced_rows)
# victoria-metrics makes fresh rows searchable within a few seconds
deadline=$((SECONDS + 20))
while read -r stored inwin dups nonnum < <(count_stored); [ "$stored" != "$adm_rows" ] && [ $SECONDS -lt $deadline ]; do
	sleep 0.5
done
read -r lagp50 lagp99 rcount < <(dbj | field g.lag_p50_us g.lag_p99_us g.reconciled_requests)
read -r est rrows areq rreq < <(dbj | field p.estimated_rows p.reconciled_rows p.admitted_requests p.rejected_requests)
secs=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
offered=$(awk -v a="$in0" -v b="$in1" -v s="$secs" 'BEGIN { printf "%.1f", (b - a) / s }')
vm_inserted=$(curl -sf "http://127.0.0.1:$RG_PORT/metrics" | awk '/^vm_rows_inserted_total\{type="promremotewrite"\}/ { print $2 }')
stored_rate=$(awk -v n="$inwin" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')
charged_rate=$(awk -v a="$adm0" -v b="$adm1" -v s="$secs" 'BEGIN { printf "%.1f", (b - a) / s }')
rg_log "offered by Prometheus: $offered samples/s"
rg_log "window ${secs}s: victoria-metrics stored $inwin samples stamped in it = $stored_rate/s; rowgate charged $charged_rate/s; limit $LIMIT/s"
rg_log "stored samples: $dups duplicate timestamps, $nonnum non-numeric (NaN/staleness) values"
rg_log "prometheus remote write: $(grep -E '^prometheus_remote_storage_(samples|exemplars|metadata|histograms)_(total|failed_total|retried_total|dropped_total|in_total)' "$RG_TMP/prom_metrics.txt" | sed 's/{.*}//' | tr '\n' ' ')"
rg_log "victoria-metrics: $(curl -sf "http://127.0.0.1:$RG_PORT/metrics" | grep -E '^vm_(rows_inserted_total|rows_ignored_total|deduplicated_samples_total|too_long_item|rows_added_to_storage_total|slow_row_inserts_total|http_request_errors_total|protoparser_read_errors)' | grep -v ' 0$' | tr '\n' ' ')"
rg_log "totals: stored $stored, rowgate admitted_rows $adm_rows, rejected_rows $rej_rows, unenforced_rows $unenf"
rg_log "prom-rw: admitted_requests $areq, rejected_requests $rreq, estimated_rows $est, reconciled_rows $rrows"
rg_log "reconciliation lag p50 ${lagp50} us, p99 ${lagp99} us over $rcount requests"

rg_check "offered rate ($offered/s) is above the limit" \
	awk -v o="$offered" -v l="$LIMIT" 'BEGIN { exit !(o > 1.2 * l) }'
rg_check "requests were rejected ($rreq)" [ "$rreq" -gt 0 ]
rg_check "stored rate $stored_rate/s within ±5% of $LIMIT/s" \
	awk -v r="$stored_rate" -v l="$LIMIT" 'BEGIN { exit !(r >= 0.95 * l && r <= 1.05 * l) }'
rg_check "charged rate $charged_rate/s within ±5% of $LIMIT/s" \
	awk -v r="$charged_rate" -v l="$LIMIT" 'BEGIN { exit !(r >= 0.95 * l && r <= 1.05 * l) }'
rg_check "no unenforced rows ($unenf)" [ "$unenf" -eq 0 ]
rg_log "victoria-metrics' own vm_rows_inserted_total{type=promremotewrite}: $vm_inserted (diagnostic only: NaN samples count there, not in storage)"
rg_check "rows charged ($adm_rows) == samples stored ($stored), exactly" [ "$adm_rows" -eq "$stored" ]
rg_pass
