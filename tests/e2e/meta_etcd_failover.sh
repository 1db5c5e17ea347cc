#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Distributed mode with etcd: two rowgate-meta replicas keep the limits in
# etcd and elect a leader through a lease-bound key; the follower redirects
# (307) to the leader.  Under load (three frontends, 80/15/5 of 2 x L) the
# leader is killed (-9): the other replica takes over after the election
# TTL, starts in its learning phase (adopts the quotas frontends hold), the
# frontends keep their quotas meanwhile (no lease expires, no fallback to
# the full limit) and the cluster never admits more than L plus one
# heartbeat's worth of L in any 1 s window.
source "$(dirname "$0")/meta_lib.sh"
meta_require
rg_require_cmd etcd
meta_tools

L=300
HB_MS=500
LEASE_MS=4000    # > election TTL (2 s) + a tick: a failover fits in the lease
LOAD_S=16
KILL_AT_S=5
DB=failoverdb

meta_start_etcd

opts=(--etcd "$ETCD" --etcd-prefix "/rowgate-test-$$/" --heartbeat-interval "$HB_MS"
	--lease "$LEASE_MS" --election-ttl 2)
meta_start_allocator a "${opts[@]}"
meta_start_allocator b "${opts[@]}"
META_URL="$META_URL_a,$META_URL_b"

leader_of() { # prints a or b, the replica that says it leads
	local n
	for n in a b; do
		local u="META_URL_$n"
		[ "$(meta_health "${!u}" role 2>/dev/null)" = leader ] && { echo "$n"; return 0; }
	done
	return 1
}
rg_wait_for 10 leader_of || rg_fail "no leader elected"
LEADER=$(leader_of)
FOLLOWER=$([ "$LEADER" = a ] && echo b || echo a)
lu="META_URL_$LEADER"; fu="META_URL_$FOLLOWER"
rg_log "leader: $LEADER (${!lu}), follower: $FOLLOWER (${!fu})"

# admin calls through the follower reach the leader (307 followed: the
# leader is in rowgatectl's --meta list, tried after the follower)
"$RG_ROWGATECTL" --meta "${!fu},${!lu}" --token-file "$META_TOKEN_FILE" limit set "$DB" "$L" \
	>/dev/null || rg_fail "limit set through the follower"
loc=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' \
	-H "Authorization: Bearer $(cat "$META_TOKEN_FILE")" "${!fu}/v1/limits")
rg_check "follower redirects to the leader ($loc)" [ "$loc" = "307 ${!lu}/v1/limits" ]
stored=$(meta_etcd_get "/rowgate-test-$$/limits/$DB")
rg_check "the limit is stored in etcd ($stored)" [ "$stored" = "$L" ]

for i in 1 2 3; do fe_start "$i" "$META_URL"; done
fe_limit() { fe_ctl "$1" --json stats "$DB" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['limit'])"; }
ready() {
	[ "$(meta_health "${!lu}" learning)" = False ] || return 1
	for i in 1 2 3; do [ "$(fe_limit "$i")" = "$L" ] || return 1; done
}
rg_wait_for 15 ready || rg_fail "frontends did not receive the cluster limit"

meta_sampler_start "$DB" 0.25
sleep 0.5
T_START=$(mono)
pids=()
pace 1 "$DB" 480 "$LOAD_S" 4 5; pids+=("$PACE_PID")
pace 2 "$DB" 90 "$LOAD_S" 2 5; pids+=("$PACE_PID")
pace 3 "$DB" 30 "$LOAD_S" 1 5; pids+=("$PACE_PID")
sleep "$KILL_AT_S"
lp="META_PID_$LEADER"
T_KILL=$(mono)
kill -9 "${!lp}"
rg_log "killed leader $LEADER at t=$(awk -v a="$T_START" -v b="$T_KILL" 'BEGIN { printf "%.1f", b - a }')s"
new_leader() { [ "$(meta_health "${!fu}" role)" = leader ]; }
rg_wait_for 10 new_leader || rg_fail "follower $FOLLOWER did not take over"
T_NEW=$(mono)
takeover=$(awk -v a="$T_KILL" -v b="$T_NEW" 'BEGIN { printf "%.1f", b - a }')
rg_log "$FOLLOWER leads after ${takeover}s (learning: $(meta_health "${!fu}" learning))"
wait "${pids[@]}"
T_END=$(mono)
sleep 0.3
kill "$META_SAMPLER_PID" 2>/dev/null
"$RG_ROWGATECTL" --meta "${!fu}" --token-file "$META_TOKEN_FILE" stats "$DB" | sed 's/^/    /'

max_bound=$((L + L * HB_MS / 1000))
worst=0 over=0
rg_log "cluster admitted rows/s per 1 s window (raw / net of bucket level); bound $max_bound after the first second"
while read -r start raw net; do
	rg_log "  t=${start}s raw ${raw} net ${net}"
	# the first second drains the full buckets the frontends start with
	if awk -v s="$start" 'BEGIN { exit !(s >= 1) }'; then
		worst=$(awk -v a="$worst" -v b="$net" 'BEGIN { print (b > a) ? b : a }')
		awk -v v="$net" -v m="$max_bound" 'BEGIN { exit !(v > m) }' && over=$((over + 1))
	fi
done < <("$RG_PY" "$RG_TMP/windows.py" "$RG_TMP/samples" "$T_START" "$T_END" 1.0)
rg_log "worst 1 s window: $worst rows/s (limit $L)"
rg_check "never above L + one heartbeat's worth ($max_bound rows/s)" [ "$over" -eq 0 ]
for i in 1 2 3; do
	read -r ok failed expired < <(fe_ctl "$i" --json stats "$DB" | "$RG_PY" -c \
		'import json,sys; m=json.load(sys.stdin)["meta"]; print(m["heartbeats_ok"], m["heartbeats_failed"], m["lease_expiries"])')
	rg_log "fe$i agent: heartbeats ok $ok, failed $failed, lease expiries $expired"
	rg_check "fe$i kept its quota through the failover (no lease expiry)" [ "$expired" -eq 0 ]
done
rg_check "the new leader answers heartbeats" [ "$(meta_health "${!fu}" frontends_live)" -eq 3 ]
rg_pass
