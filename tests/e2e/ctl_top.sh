#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgatectl top against known traffic: t_busy offered 1,600 rows/s
# (4 paced writers of 20 rows every 50 ms) over a 400 rows/s limit, t_calm
# 200 rows/s under a limit it never reaches.  `top --once --json`: t_busy
# first (most rejected), its admitted rate near its limit and the rest
# rejected, t_calm admitted whole; on screen (tmux capture-pane) the live
# view shows the same order; bad arguments are usage errors.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_cmd tmux
rg_setup
rg_ctl limit set t_busy 400 >/dev/null && rg_ctl limit set t_calm 100000 >/dev/null ||
	rg_fail "limit set"

for bad in "--interval 0" "--interval x" "--count 0" "--bogus"; do
	# shellcheck disable=SC2086 # the words on purpose
	out=$(rg_ctl top $bad 2>&1)
	rc=$?
	rg_check "top $bad: a usage error (exit $rc): $(head -n1 <<<"$out")" [ "$rc" = 2 ]
done

stop=$RG_TMP/stop
"$RG_PY" "$RG_CLIENT" paced --port "$RG_PORT" --db t_busy --seconds 60 --threads 4 --rows 20 \
	--interval-ms 50 --series rg_top_busy --stop-file "$stop" >"$RG_TMP/busy.json" 2>&1 &
BUSY=$!
"$RG_PY" "$RG_CLIENT" paced --port "$RG_PORT" --db t_calm --seconds 60 --threads 1 --rows 10 \
	--interval-ms 50 --series rg_top_calm --stop-file "$stop" >"$RG_TMP/calm.json" 2>&1 &
CALM=$!
rg_on_exit "touch $stop; wait $BUSY $CALM"
# both databases counted, the bucket of t_busy spent (its first second
# holds a full bucket)
rg_wait_for 20 eval '[ "$(rg_stat t_busy rejected_rows)" -gt 0 ] && [ "$(rg_stat t_calm admitted_rows)" -gt 0 ]' ||
	rg_fail "no traffic counted"
rg_ctl --json top --once --interval 3 >"$RG_TMP/top.json" || rg_fail "top --once: $(cat "$RG_TMP/top.json")"
rg_log "top --once --json: $(cat "$RG_TMP/top.json")"
row() { rg_jget "$RG_TMP/top.json" "next(r for r in d['databases'] if r['db'] == '$1')['$2']"; }
near() { "$RG_PY" -c "import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(not lo <= v <= hi)" "$@"; }
rg_check "most rejected first: t_busy, then t_calm" \
	[ "$(rg_jget "$RG_TMP/top.json" "[r['db'] for r in d['databases']][:2]")" = "['t_busy', 't_calm']" ]
rg_check "t_busy admitted near its limit of 400 rows/s ($(row t_busy admitted_rows_per_s))" \
	near "$(row t_busy admitted_rows_per_s)" 200 600
rg_check "t_busy rejected the rest of 1,600 rows/s ($(row t_busy rejected_rows_per_s))" \
	near "$(row t_busy rejected_rows_per_s)" 600 1500
near "$(row t_calm admitted_rows_per_s)" 100 300 && [ "$(row t_calm rejected_rows_per_s)" = 0.0 ]
rg_check_rc $? "t_calm admitted its 200 rows/s whole ($(row t_calm admitted_rows_per_s)), nothing rejected"
[ "$(row t_busy limit)" = 400.0 ] && [ "$(row t_calm limit)" = 100000.0 ] && [ "$(row t_busy quota)" = 400.0 ]
rg_check_rc $? "limits and quotas as set"

# the live view in a terminal: the first row under the header is t_busy
session=rgtop$$
tmux new-session -d -s "$session" -x 120 -y 20 \
	"$RG_ROWGATECTL --socket $RG_SOCK top --interval 0.5; sleep 30" || rg_fail "tmux"
rg_on_exit "tmux kill-session -t $session 2>/dev/null"
screen() { tmux capture-pane -p -t "$session"; }
rg_wait_for 10 eval 'screen | grep -q "^t_calm "' || rg_fail "top shows no table: $(screen)"
rg_log "screen: $(screen | grep -v '^$' | tr '\n' '|')"
rg_check "on screen: a header, then t_busy, then t_calm" \
	[ "$(screen | awk '/^DB /{ getline a; getline b; print $1 "," substr(a, 1, 7) "," substr(b, 1, 7) }')" = "DB,t_busy ,t_calm " ]
rg_check "on screen: it says how to quit" grep -q "Ctrl-C quits" <(screen)
rg_pass
