#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gRPC over a link whose retransmissions start before bytes the server
# already holds (docs/design.md#retransmitted-bytes; e2e/tcp_retrans for
# HTTP/1): the grpc-go server and client run in a network namespace whose
# loopback drops a tenth of the client's new data and, each second, the
# server's ACKs for a quarter of a second (tests/bpf/lossy.bpf.c).  One
# connection makes small calls on a database with
# room (client streams, a message every millisecond), another on a spent
# one (unary, four in flight; 1 row/s: a call now and then is admitted).
# Checked: the streams on room all succeed and the server stores their rows,
# which rowgate charged; on the spent database every call that failed did
# with code 8, and only the admitted ones reached the handler; no
# connection failed closed; the verdict never lost its place in the stream
# (tcp_seq_gaps).  Logged, not required: how many retransmissions over
# received bytes were cut (tcp_old_segments): a few in most runs (gRPC's
# segments are rarely merged on retransmission); e2e/tcp_retrans requires
# them.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd ip tc curl "$RG_PY"
rg_require_grpc_go client server

rg_seg_namespace rg-grtx-$$

rg_make_cgroup
GPORT=18428 # LOSSY_PORT: the namespace is the test's own
GADMIN=18429
RG_GO_WRAP="ip netns exec $NS" rg_run_grpc_go_server
sget() { in_ns curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated
rg_ctl limit set rtx_free 1000000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set rtx_spent 1 >/dev/null || rg_fail "limit set"
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id seed -db rtx_spent -calls 1 -rows 10 -no-retry \
	>"$RG_TMP/seed.json" 2>&1
rg_check "rtx_spent: the first message admitted" [ "$(rg_jget "$RG_TMP/seed.json" "d['ok']")" = 1 ]

rg_lossy_link

CALLS=${RTX_CALLS:-300} ROWS=20 SROWS=1 STREAMS=8 PER=1500
[ "${VMTEST:-0}" != 1 ] || { CALLS=100; PER=400; }
old0=$(rg_global tcp_old_segments) gaps0=$(rg_global tcp_seq_gaps) failclosed0=$(rg_global h2_failclosed)
calls0=$(sget "d['calls']")
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id free -db rtx_free -mode stream -calls "$STREAMS" \
	-per-call "$PER" -rows "$SROWS" -gap 1ms -concurrency 4 -no-retry >"$RG_TMP/free.json" 2>&1 &
free=$!
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id spent -db rtx_spent -calls "$CALLS" -rows "$ROWS" \
	-concurrency 4 -call-gap 1ms -no-retry >"$RG_TMP/spent.json" 2>&1
wait $free
rg_log "free: $(cat "$RG_TMP/free.json")"
rg_log "spent: $(cat "$RG_TMP/spent.json")"
rg_log "namespace TCP: $(in_ns nstat -az 2>/dev/null | awk '$2 != 0 && /Retrans|DSACK|OFO/ { printf "%s=%s ", $1, $2 }')"
old=$(($(rg_global tcp_old_segments) - old0)) gaps=$(($(rg_global tcp_seq_gaps) - gaps0))
rg_log "tcp_old_segments +$old (tcp_old_bytes $(rg_global tcp_old_bytes)), tcp_seq_gaps +$gaps, h2_failclosed +$(($(rg_global h2_failclosed) - failclosed0))"
[ "$(rg_jget "$RG_TMP/free.json" "d['ok']")" = "$STREAMS" ] &&
	[ "$(sget "d['rows'].get('rtx_free', 0)")" = $((STREAMS * PER * SROWS)) ] &&
	rg_wait_charged rtx_free $((STREAMS * PER * SROWS))
rg_check_rc $? "rtx_free: all $STREAMS streams of $PER messages succeed, the server stores their rows, rowgate charged them"
ok=$(rg_jget "$RG_TMP/spent.json" "d['ok']") calls=$(($(sget "d['calls']") - calls0))
[ "$(rg_jget "$RG_TMP/spent.json" "d['codes']")" = "{'8': $((CALLS - ok))}" ] &&
	[ $calls = $((STREAMS + ok)) ]
rg_check_rc $? "rtx_spent: every failed call refused with code 8 ($ok admitted), only the admitted handled ($calls handlers: $STREAMS rtx_free streams + $ok)"
rg_check "no connection failed closed" [ "$(rg_global h2_failclosed)" = "$failclosed0" ]
rg_check "the verdict never lost its place in the stream (tcp_seq_gaps)" [ "$gaps" = 0 ]
rg_pass
