#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 14.3: exact concurrency.  Keep-alive writers pinned to every CPU
# overload one database through rowgated guarding victoria-metrics; every
# GZIP_EVERY-th body is gzip, which the kernel charges an estimate for and
# rowgated corrects under the bucket lock while admissions go on.
#
# Phase A, fixed limit: the kernel's bucket after the run equals the bucket
# model (build/tests/bucket_replay, include/rowgate/bucket.h) fed the
# bucket before the run, the rows the kernel says it charged and the clock of
# its last refill, to the nanorow: a lost update (charge or refill without
# the lock) leaves more tokens than the model, a double charge fewer.  The
# charged rows equal the client's admitted rows and victoria-metrics' stored
# rows; the debt stays within one batch per CPU plus the gzip estimates; no
# 1 s window of admitted rows is over the limit.
# Phase B: the same while `rowgatectl limit set` alternates the limit every
# 50 ms: every counter still exact, and the bucket equals the model with each
# quota change applied when rowgatectl returned, within the rows those
# changes can move while in flight.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_cmd bpftool
REPLAY=$RG_BUILD/tests/bucket_replay
[ -x "$REPLAY" ] || rg_fail "build first: $REPLAY is missing"
# phase A admits most writes (many charges racing the other CPU's refills:
# charging without the lock fails it); phase B rejects most
QA=${CONC_LIMIT_A:-40000}
QB=${CONC_LIMIT_B:-3000}
SECS=${CONC_SECONDS:-6}
PROCS=${CONC_PROCS:-8}
MAXR=${CONC_MAX_ROWS:-20}
GZIP_EVERY=${CONC_GZIP_EVERY:-5}
NCPU=$(nproc)
rg_setup
# kill -9 is asynchronous: reap rowgated before the bpffs is unmounted
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
CONC="$RG_PY $RG_ROOT/tests/e2e/concurrency.py"

# charged: rows the kernel charged to a db (enforced and fail-open alike)
charged() { rg_ctl --json stats "$1" | "$RG_PY" -c '
import json,sys; d=json.load(sys.stdin)["databases"][0]
print(d["admitted_rows"] + d["unenforced_rows"], d["rejected_rows"], d["unenforced_requests"])'; }
bucket() { $CONC bucket --bpffs "$RG_BPFFS" --db "$1"; }
vm_series_rows() { rg_vm_rows "{__name__=\"$1_v\"}"; }

# client_sum FILE: admitted_requests admitted_rows rejected_requests rejected_rows
#                  gzip_admitted errors
client_sum() { "$RG_PY" -c '
import json,sys; s=json.load(open(sys.argv[1])); r=s["requests"]
a=[x for x in r if x[2]==204]; j=[x for x in r if x[2]==429]
print(len(a), sum(x[3] for x in a), len(j), sum(x[3] for x in j),
      sum(1 for x in a if x[4]), len(s["errors"]))
for e in s["errors"][:5]: print("error:", e, file=sys.stderr)' "$1"; }

# windows FILE: worst 1 s window of admitted rows by answer time, full
# windows from the first admission on (the warm-up debt is repaid then): "min max"
windows() { "$RG_PY" -c '
import json,sys; r=json.load(open(sys.argv[1]))["requests"]
a=[x for x in r if x[2]==204]
t0=min(x[1] for x in a); t1=max(x[1] for x in r)
ws={}
for x in a: ws[(x[1]-t0)//10**9]=ws.get((x[1]-t0)//10**9,0)+x[3]
full=[ws.get(i,0) for i in range((t1-t0)//10**9)]
print(min(full), max(full))' "$1"; }

# warm DB: one batch of 3 s of quota leaves 2 s of debt, so that the bucket
# is never full (never clamped) from the first snapshot to the last
warm() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" -c '
import sys; from rgclient import Conn, lines
c = Conn(int(sys.argv[1])); r = c.request("/write?db=" + sys.argv[2],
    lines(int(sys.argv[3]), series=sys.argv[2], tag="req=warm"))
sys.exit(0 if r.status == 204 else "warm-up batch got %r" % r)' "$RG_PORT" "$1" $((3 * Q)) ||
		rg_fail "warm-up batch not admitted"
}

# settle DB ROWS: wait until the kernel's charged rows equal the client's
# admitted rows (the gzip corrections have all landed)
settle() { rg_wait_for 20 bash -c "[ \"\$(rg_ctl_c --json stats $1 | $RG_PY -c 'import json,sys; d=json.load(sys.stdin)[\"databases\"][0]; print(d[\"admitted_rows\"]+d[\"unenforced_rows\"])')\" = $2 ]"; }
rg_ctl_c() { "$RG_ROWGATECTL" --socket "$RG_SOCK" "$@"; }
export -f rg_ctl_c
export RG_ROWGATECTL RG_SOCK

# phase DB Q LIMITS: run the load (and the limit loop when LIMITS is set);
# sets S0 S1 CH0 CH1 (charged before/after) and the client sums
phase() {
	local db=$1 vals=${3:-} lpid=""
	Q=$2
	rg_ctl limit set "$db" "$Q" >/dev/null || rg_fail "limit set"
	warm "$db"
	read -r -a S0 < <(bucket "$db")
	read -r CH0 _ < <(charged "$db")
	if [ -n "$vals" ]; then
		# the last change lands a second before the writers stop: the
		# kernel applies a change at its next admission check
		$CONC limits --socket "$RG_SOCK" --ctl "$RG_ROWGATECTL" --db "$db" \
			--seconds $((SECS - 1)) --values "$vals" >"$RG_TMP/$db.limits.json" &
		lpid=$!
	fi
	$CONC load --port "$RG_PORT" --db "$db" --series "$db" --seconds "$SECS" --procs "$PROCS" \
		--max-rows "$MAXR" --gzip-every "$GZIP_EVERY" --out "$RG_TMP/$db.json" ||
		rg_fail "load client failed"
	[ -z "$lpid" ] || wait "$lpid" || rg_fail "limit loop failed"
	read -r ADM_REQ ADM_ROWS REJ_REQ REJ_ROWS GZ_ADM ERRS < <(client_sum "$RG_TMP/$db.json")
	rg_log "$db client: admitted $ADM_REQ requests / $ADM_ROWS rows ($GZ_ADM gzip), rejected $REJ_REQ / $REJ_ROWS, errors $ERRS"
	rg_check "$db: no client errors" [ "$ERRS" -eq 0 ]
	rg_check "$db: admissions, gzip admissions and rejections all happened" \
		[ "$ADM_REQ" -gt 0 -a "$GZ_ADM" -gt 0 -a "$REJ_REQ" -gt 0 ]
	settle "$db" $((CH0 + ADM_ROWS)) ||
		rg_fail "$db: kernel charged $(($(charged "$db" | cut -d' ' -f1) - CH0)) rows, clients were admitted $ADM_ROWS"
	read -r CH1 REJ_K UNENF < <(charged "$db")
	read -r -a S1 < <(bucket "$db")
	rg_log "$db: charged $((CH1 - CH0)) rows ($UNENF fail-open requests); bucket before ${S0[*]}, after ${S1[*]}"
	rg_check "$db: kernel charged rows == client admitted rows ($ADM_ROWS)" [ $((CH1 - CH0)) -eq "$ADM_ROWS" ]
	rg_check "$db: kernel rejected rows ($REJ_K) == client rejected rows ($REJ_ROWS)" [ "$REJ_K" -eq "$REJ_ROWS" ]
	local want=$((ADM_ROWS + 3 * Q)) stored
	stored=$(rg_vm_rows_wait "{__name__=\"${db}_v\"}" "$want")
	rg_check "$db: victoria-metrics stores the admitted rows exactly ($stored == $want)" [ "$stored" -eq "$want" ]
	local leaked
	leaked=$("$RG_PY" -c 'import json,sys
r=[x for x in json.load(open(sys.argv[1]))["requests"] if x[2]==429]
print("|".join(x[5] for x in r[:200]))' "$RG_TMP/$db.json")
	rg_check "$db: no rejected request stored (200 sampled)" \
		[ "$(rg_vm_rows "{__name__=\"${db}_v\",req=~\"$leaked\"}")" -eq 0 ]
}

# filled FILE Q: how often a bucket fed the clients' admissions (answer
# times) would have reached capacity during the run: a diagnostic only
filled() { "$RG_PY" -c '
import json,sys; r=json.load(open(sys.argv[1]))["requests"]; q=int(sys.argv[2])
a=sorted((x[1], x[3]) for x in r if x[2]==204); lvl=1; t=a[0][0]; n=0
for ta, rows in a:
    lvl=min(q, lvl+q*(ta-t)/1e9); n+=lvl>=q; lvl-=rows; t=ta
print(n)' "$1" "$2"; }
level() { echo $(($1 * 1000000000 - $2 * 1000000000 + $3)); } # tokens debt frac -> nanorows

# --- phase A: fixed limit ------------------------------------------------
phase conca "$QA"
model=$(printf 'state %s %s %s %s %s\ncharge %s\nrefill %s\nprint\n' "${S0[@]}" \
	$((CH1 - CH0)) "${S1[4]}" | "$REPLAY") || rg_fail "bucket_replay failed"
rg_log "conca: model after the run: $model (kernel: ${S1[*]})"
if [ "$model" != "${S1[*]}" ]; then
	read -r -a M <<<"$model"
	diff=$(($(level "${S1[@]:0:3}") - $(level "${M[@]:0:3}")))
	# fewer tokens than the model is a double charge, or a bucket that
	# filled up (clamped) because the writers fell below the limit
	[ "$diff" -lt 0 ] && rg_log "conca: client-side, the bucket filled $(filled "$RG_TMP/conca.json" "$Q") times (if > 0 the machine was too busy to overload $Q rows/s: rerun alone)"
	rg_fail "conca: kernel bucket (${S1[*]}) != model ($model): $diff nanorows"
fi
rg_log "ok: conca: kernel bucket == model replay of the charged rows, exactly"
read -r wmin wmax < <(windows "$RG_TMP/conca.json")
# a window holds what refilled in it, plus the batches in flight at its
# edges; windows are cut by the clients' clocks, which see an answer when
# the scheduler runs them: on a busy machine (CI, the whole suite) that
# shifts an edge by up to ~100 ms (a window of 42,161 rows at 40,000 rows/s
# was seen).  Exactness is the model check above; this one catches a
# limit that is off by a factor, so it allows 10 %.
slack=$((2 * NCPU * MAXR + Q / 10))
rg_log "conca: admitted rows per 1 s window: min $wmin, max $wmax (limit $Q, slack $slack)"
rg_check "conca: no 1 s window over the limit + $slack rows" [ "$wmax" -le $((Q + slack)) ]
# A window under the limit is not asserted: it needs the 8 writers to keep
# the bucket overloaded every moment, which 2 CPUs shared with the server
# and rowgated do not promise (seen: 35,128 on an idle machine with no
# client-side sign of a full bucket; 33,956 in CI).  That the limiter
# admits what the bucket holds is the model check above, exactly.
rg_log "conca: the bucket filled $(filled "$RG_TMP/conca.json" "$Q") times, client-side"
rg_check "conca: debt after the run (${S1[1]}) within one batch per CPU and writer" \
	[ "${S1[1]}" -le $(((NCPU + PROCS) * MAXR)) ]

# --- phase B: limit changes during the load ------------------------------
phase concb "$QB" "$((QB * 2)),$QB"
# all charges first: the model's level stays below every capacity, never
# clamped, as the kernel's was under overload
replay_in=$(printf 'state %s %s %s %s %s\ncharge %s\n' "${S0[@]}" $((CH1 - CH0))
	"$RG_PY" -c 'import json,sys
for t0, t1, v in json.load(open(sys.argv[1])): print("quota", t1, v)' "$RG_TMP/concb.limits.json"
	printf 'refill %s\nprint\n' "${S1[4]}")
model=$("$REPLAY" <<<"$replay_in") || rg_fail "bucket_replay failed"
read -r -a M <<<"$model"
# the kernel applies a change at the first admission after the map update:
# each change may move the refill by |dq| x (its rowgatectl call + 2 ms)
tol=$("$RG_PY" -c 'import json,sys
c=json.load(open(sys.argv[1])); q=int(sys.argv[2]); t=0
for t0, t1, v in c: t += abs(v - q) * (t1 - t0 + 2000000); q = v
print(t)' "$RG_TMP/concb.limits.json" "$Q")
nchanges=$("$RG_PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$RG_TMP/concb.limits.json")
diff=$(($(level "${S1[@]:0:3}") - $(level "${M[@]:0:3}")))
rg_log "concb: $nchanges limit changes; kernel ${S1[*]}, model ${M[*]}; level difference $diff nanorows (tolerance $tol)"
rg_check "concb: the limit changes took effect (final quota ${S1[3]} == last set)" \
	[ "${S1[3]}" -eq "${M[3]}" ]
rg_check "concb: kernel bucket == model within the in-flight quota changes" \
	[ "${diff#-}" -le "$tol" ]
rg_pass
