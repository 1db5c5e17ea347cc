#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# 100,000 concurrent keep-alive connections to one real victoria-metrics,
# every one guarded (issue 37: a guarded connection must be cheap):
#   - every connection, open and answered a GET (idle keep-alive), has
#     its state (tracked_now = N), none passes unguarded or is refused;
#   - then every connection writes once, half to a database without a limit
#     (each answered 204 by the server, each row stored) and half to one in
#     debt (each answered 429 by the kernel, nothing stored);
#   - once they close, no connection state is left.
# It logs the kernel memory the held connections took (SUnreclaim: socket
# and rowgate state together) per connection, the figure the small
# per-connection element is meant to cut.  CONNS_100K_N sets N.
RG_PROFILE=influxdb # rowgate reads requests as InfluxDB's /write (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"

N=${CONNS_100K_N:-100000}
# Each end of each connection is an open file, and a process here may not
# hold more than the hard limit (root without CAP_SYS_RESOURCE): the
# connections are shared among as many servers, and client processes, as
# that takes.
ulimit -n "$(ulimit -Hn)"
PER_SERVER=$(($(ulimit -n) - 1000))
SERVERS=$(((N + PER_SERVER - 1) / PER_SERVER))
rg_mount_bpffs
rg_make_cgroup
ports=()
for k in $(seq "$SERVERS"); do
	RG_PORT=$(rg_free_port) || rg_fail "no free port"
	# idle connections stay open however long the test takes (1 min by default)
	RG_VM_DATA=$RG_TMP/vm$k rg_start_vm_in "$RG_CGROUP" -http.idleConnTimeout=1h \
		-maxConcurrentInserts=64 -insert.maxQueueDuration=5m
	ports+=("$RG_PORT")
done
rg_log "$N connections over $SERVERS victoria-metrics servers (open files: $(ulimit -n) a process)"
# shellcheck disable=SC2046 # one --port argument pair per further server
RG_PORT=${ports[0]} rg_start_rowgated --max-conns $((N + N / 4)) \
	$(for p in "${ports[@]:1}"; do echo --port "$p=$RG_PROFILE"; done)
RG_PORT=${ports[0]}
rg_ctl limit set debt 1 >/dev/null || rg_fail "limit set"
rg_post_lines() { # rg_post_lines DB N: one write of N rows
	seq "$2" | awk '{ print "conns_setup v=" $1 }' |
		curl -s -o /dev/null -w '%{http_code}' --data-binary @- "http://127.0.0.1:$RG_PORT/write?db=$1"
}
code=$(rg_post_lines debt 1000)
rg_check "the debt database admitted its first write into debt ($code)" [ "$code" = 204 ]
status_json() { rg_ctl --json status | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['connections']['$1'])"; }
untracked0=$(status_json untracked_total) refused0=$(status_json refused_total)
kmem() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; } # kB
mem0=$(kmem)

coproc HOLD { exec "$RG_PY" "$RG_ROOT/tests/e2e/conns_hold.py" --ports "$(IFS=,; echo "${ports[*]}")" --conns "$N" \
	--dbs free,debt 2>>"$RG_TMP/hold.log"; }
rg_on_exit "kill $HOLD_PID 2>/dev/null; wait $HOLD_PID 2>/dev/null"
hold_out=${HOLD[0]} hold_in=${HOLD[1]}
read -r -t 900 _ held failed <&"$hold_out" || rg_fail "the client did not open its connections: $(cat "$RG_TMP/hold.log")"
rg_log "$(cat "$RG_TMP/hold.log")"
rg_check "$N connections open, each answered a GET ($held, $failed not)" [ "$held" = "$N" -a "$failed" = 0 ]
all_tracked() { [ "$(status_json tracked_now)" -ge "$N" ]; }
rg_check "every connection has its state (tracked_now $(status_json tracked_now))" all_tracked
mem1=$(kmem)
conns_bytes=$(bpftool -j map show pinned "$RG_BPFFS/conns" | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["bytes_memlock"])')
rg_log "kernel memory held (SUnreclaim) $(((mem1 - mem0) / 1024)) MiB for $N connections: $(((mem1 - mem0) * 1024 / N)) bytes each, both ends' sockets included; the conns map's own count $((conns_bytes / N)) bytes each"
# the head stash is an entry of its own, taken only while a connection
# holds bytes back: an idle keep-alive connection has none
stash_entries() { bpftool -j map dump pinned "$RG_BPFFS/stash" | "$RG_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
held_stash=$(stash_entries)
rg_check "no idle connection holds a stash entry ($held_stash)" [ "$held_stash" = 0 ]
rg_check "none passed unguarded ($(status_json untracked_total) - $untracked0)" [ "$(status_json untracked_total)" = "$untracked0" ]
rg_check "none refused ($(status_json refused_total) - $refused0)" [ "$(status_json refused_total)" = "$refused0" ]

echo go >&"$hold_in"
read -r -t 900 answers <&"$hold_out" || rg_fail "the client did not finish its writes: $(cat "$RG_TMP/hold.log")"
rg_log "answers: $answers"
rg_check "every write to the database without a limit answered 204" [ "$(echo "$answers" | tr ' ' '\n' | grep '^free:')" = "free:204=$((N / 2))" ]
rg_check "every write to the database in debt answered 429" [ "$(echo "$answers" | tr ' ' '\n' | grep '^debt:')" = "debt:429=$((N - N / 2))" ]
stored_all() { # the rows of database $1 all servers stored
	local p sum=0
	for p in "${ports[@]}"; do
		sum=$((sum + $(RG_PORT=$p rg_vm_rows "{__name__=\"conns_hold_v\",db=\"$1\"}")))
	done
	echo "$sum"
}
stored=$(stored_all free)
rg_check "each admitted row stored ($stored of $((N / 2)))" [ "$stored" = $((N / 2)) ]
stored=$(stored_all debt)
rg_check "no refused row stored ($stored)" [ "$stored" = 0 ]
rejected=$(rg_stat debt rejected_requests)
rg_check "the kernel counted every refusal ($rejected)" [ "$rejected" = $((N - N / 2)) ]

echo close >&"$hold_in"
wait "$HOLD_PID"
none_left() { [ "$(status_json tracked_now)" = 0 ]; }
rg_check "no connection state left once they closed" rg_wait_for 60 none_left
held_stash=$(stash_entries)
rg_check "no stash entry left ($held_stash)" [ "$held_stash" = 0 ]
rg_pass
