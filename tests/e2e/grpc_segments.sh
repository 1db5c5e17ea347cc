#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gRPC writes that reach the verdict in MSS-sized segments, as from a NIC
# without receive offload: the grpc-go server and client run in a network
# namespace whose loopback has a 1,500-byte MTU and one segment per GSO
# packet.  A large message's 16 KB DATA frames then each span a dozen
# skbs, so the frame that completes a refused message is too large to
# hold back (docs/grpc.md#h2-stash) and is refused at its header
# (docs/grpc.md#h2-early).  Checked: every refused call fails with code 8
# and the 429's sentence on one connection, no GOAWAY, no fallback, the
# handler never called; the same for compressed messages refused on the
# database their connection's first one named (--grpc-compressed debt);
# admitted large messages are stored, rows stored = rows admitted.
RG_PROFILE=greptimedb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd ip curl "$RG_PY"
rg_require_grpc_go client server

rg_seg_namespace rg-seg-$$

rg_make_cgroup
RG_GO_WRAP="ip netns exec $NS" rg_start_grpc_go_server

rg_mount_bpffs
RG_PORT=$GPORT rg_start_rowgated --grpc-compressed debt
# The namespace's TCP counters of reordering and retransmission: its
# loopback reorders segments (the sender's CPU changes between them), and
# a retransmission over received bytes once desynchronised the verdict here
# (until it cut them: docs/design.md#retransmitted-bytes); with rowgate's
# count of those cuts.
seg_tcp() {
	in_ns nstat -az 2>/dev/null |
		awk '$2 != 0 && /Retrans|DSACK|Backlog|OFO|Prune|Collapse|Reorder|Undo/ { printf "%s=%s ", $1, $2 }'
	printf 'tcp_old_segments=%s tcp_seq_gaps=%s' "$(rg_global tcp_old_segments)" "$(rg_global tcp_seq_gaps)"
}
sget() { in_ns curl -sf "http://127.0.0.1:$GADMIN/stats" | "$RG_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# a full bucket of 1 row/s takes the first message, then refuses
rg_ctl limit set seg_spent 1 >/dev/null || rg_fail "limit set"
rg_ctl limit set seg_big 100000000 >/dev/null || rg_fail "limit set"
# 20,200 rows: the message's last frame is over 4 KB (20,000 leaves it
# under, and the hold-back takes it)
ROWS=${SEG_ROWS:-20200} CALLS=20
[ "${VMTEST:-0}" != 1 ] || CALLS=5
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id s -db seg_spent -calls 1 -rows 10 -no-retry \
	>"$RG_TMP/seed.json" 2>&1
rg_check "seg_spent: the first message admitted" [ "$(rg_jget "$RG_TMP/seed.json" "d['ok']")" = 1 ]

conns0=$(rg_global conns_tracked) early0=$(rg_global h2_reject_early) kept0=$(rg_global h2_reject_kept)
calls0=$(sget "d['calls']")
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id r -db seg_spent -calls "$CALLS" -rows "$ROWS" -no-retry \
	>"$RG_TMP/refused.json" 2>&1
rg_log "refused: $(cat "$RG_TMP/refused.json")"
rg_log "h2_reject_kept=$(rg_global h2_reject_kept) h2_reject_early=$(rg_global h2_reject_early) h2_stashed=$(rg_global h2_stashed) h2_reject_fallback=$(rg_global h2_reject_fallback) h2_fallback_head_split=$(rg_global h2_fallback_head_split)"
[ "$(rg_jget "$RG_TMP/refused.json" "d['codes']")" = "{'8': $CALLS}" ] &&
	grep -q "Ingestion rate limit exceeded for database 'seg_spent': rejected $ROWS rows" "$RG_TMP/refused.json" &&
	[ "$(rg_global conns_tracked)" = $((conns0 + 1)) ]
rg_check_rc $? "$CALLS refused $ROWS-row messages in MSS-sized segments: code 8 with the 429's sentence, one connection"
# Each refusal is kept (the connection stays whole).  Most are early, at
# the last frame's header; a slow receiver (TCG) can let TCP coalesce the
# queued segments, so a last frame may arrive whole in one skb and be
# refused at completion instead: correct, but not the path under test,
# so at least one early refusal is required, not all.
early=$(($(rg_global h2_reject_early) - early0))
[ $(($(rg_global h2_reject_kept) - kept0)) = "$CALLS" ] && [ "$early" -ge 1 ] &&
	[ "$(rg_global h2_reject_fallback)" = 0 ] && [ "$(rg_global h2_reject_closed)" = 0 ] &&
	[ "$(sget "d['calls']")" = "$calls0" ]
rg_check_rc $? "each refused and kept, $early of $CALLS at the last frame's header: no GOAWAY, no fallback, no handler call"
[ "$(rg_stat seg_spent rejected_requests)" = "$CALLS" ] &&
	[ "$(rg_stat seg_spent rejected_rows)" = $((CALLS * ROWS)) ]
rg_check_rc $? "seg_spent: $CALLS refused, $((CALLS * ROWS)) rows rejected"

# Under fire (SEG_WIDE=0 skips it): 8 calls in flight, unary and
# HandleRequests, their frames interleaved in the segments, one connection
# each.  It failed in some runs until a small frame held back whole a
# second time could be cut (docs/grpc.md#h2-stash) and a refused stream's
# later frames were no longer read as new messages.  seg_wide's debt
# (20,200 rows at 1 row/s) outlasts the test however slow the machine
# (seg_spent's 10 rows ran out under TCG).  On by default on the host; in
# a vmtest guest (passed on 6.1, not yet run on 6.12) with SEG_WIDE=1.
# SEG_WIDE_RUNS=N repeats it N times, to hunt a rare failure.
WIDE=${SEG_WIDE:-1}
[ "${VMTEST:-0}" != 1 ] || WIDE=${SEG_WIDE:-0}
if [ "$WIDE" = 1 ]; then
	rg_ctl limit set seg_wide 1 >/dev/null || rg_fail "limit set"
	in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id ws -db seg_wide -calls 1 -rows "$ROWS" -no-retry \
		>"$RG_TMP/wide-seed.json" 2>&1
	rg_check "seg_wide: the first message admitted" [ "$(rg_jget "$RG_TMP/wide-seed.json" "d['ok']")" = 1 ]
fi
for mode in $([ "$WIDE" = 1 ] && for _ in $(seq "${SEG_WIDE_RUNS:-1}"); do echo stream unary; done); do
	conns0=$(rg_global conns_tracked) calls0=$(sget "d['calls']") msgs0=$(sget "d['messages']")
	in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id "w$mode" -db seg_wide -mode $mode -per-call 2 \
		-concurrency 8 -calls $((CALLS * 2)) -rows "$ROWS" -no-retry >"$RG_TMP/wide-$mode.json" 2>&1
	rg_log "8 in flight, $mode: $(cat "$RG_TMP/wide-$mode.json") [$(rg_h2_counters)] [$(seg_tcp)]"
	# a stream's handler runs when its HEADERS arrive (grpc-go, as
	# GreptimeDB's tonic): refused, it reads no message; a unary handler
	# runs only with its whole message, so never
	conns=$(($(rg_global conns_tracked) - conns0)) calls=$(($(sget "d['calls']") - calls0))
	msgs=$(($(sget "d['messages']") - msgs0)) handled=0
	[ $mode = unary ] || handled=$((CALLS * 2))
	[ "$(rg_jget "$RG_TMP/wide-$mode.json" "d['codes']")" = "{'8': $((CALLS * 2))}" ] &&
		[ "$conns" = 1 ] && [ "$(rg_global h2_reject_fallback)" = 0 ] && [ "$msgs" = 0 ] &&
		[ "$calls" = $handled ]
	rg_check_rc $? "8 refused $mode calls in flight, interleaved in the segments: all code 8, one connection ($conns), no fallback ($(rg_global h2_reject_fallback)), no message reached a handler ($msgs; $calls handlers ran)"
done

# Compressed messages (--grpc-compressed debt) refused in the same
# segments: the first gzip call of the connection passes (nothing learned
# yet) and leaves seg_gz in debt; the connection's later ones are refused
# on the database rowgated learned from its copy.  A refused message's
# last frame is over 4 KB in most calls, so it is refused at that frame's
# header, as a plain one (docs/grpc.md#compressed), not closed.
# SEG_GZ_CALLS=N and SEG_GZ_GAP (a Go duration) make the leg longer, to
# hunt a rare failure.
rg_ctl limit set seg_gz 1 >/dev/null || rg_fail "limit set"
GAP=300ms
[ "${VMTEST:-0}" != 1 ] || GAP=1500ms
GAP=${SEG_GZ_GAP:-$GAP} GZ_CALLS=${SEG_GZ_CALLS:-$CALLS}
conns0=$(rg_global conns_tracked) early0=$(rg_global h2_reject_early) calls0=$(sget "d['calls']")
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id gz -db seg_gz -gzip -calls $((GZ_CALLS + 1)) -rows "$ROWS" \
	-call-gap $GAP -no-retry >"$RG_TMP/gz.json" 2>&1
rg_log "namespace TCP so far: $(seg_tcp)"
rg_log "gzip, $((GZ_CALLS + 1)) calls, $GAP apart: $(cat "$RG_TMP/gz.json") h2_reject_early +$(($(rg_global h2_reject_early) - early0)) [$(rg_h2_counters)]"
[ "$(rg_jget "$RG_TMP/gz.json" "(d['ok'], d['codes'])")" = "(1, {'8': $GZ_CALLS})" ] &&
	[ "$(rg_global conns_tracked)" = $((conns0 + 1)) ] &&
	[ "$(rg_global h2_reject_fallback)" = 0 ] && [ "$(rg_global h2_reject_closed)" = 0 ] &&
	[ $(($(sget "d['calls']") - calls0)) = 1 ]
rg_check_rc $? "compressed: the first call stored, the $GZ_CALLS next refused with code 8 on one connection, no fallback, never handled"
rg_check "compressed: refused at a frame's header (h2_reject_early +$(($(rg_global h2_reject_early) - early0)))" \
	[ $(($(rg_global h2_reject_early) - early0)) -ge 1 ]
gz_settled() { [ "$(rg_stat seg_gz rejected_rows)" = $((GZ_CALLS * ROWS)) ]; }
rg_wait_for 60 gz_settled
[ "$(rg_stat seg_gz admitted_rows)" = "$ROWS" ] && [ "$(rg_stat seg_gz rejected_requests)" = "$GZ_CALLS" ] &&
	gz_settled && [ "$(rg_global h2_compressed_lost)" = 0 ] &&
	[ "$(sget "d['rows'].get('seg_gz', 0)")" = "$ROWS" ]
rg_check_rc $? "compressed: seg_gz charged its stored $ROWS rows, $GZ_CALLS refused requests of $((GZ_CALLS * ROWS)) rows counted from their copies ($(rg_stat seg_gz admitted_rows) admitted, $(rg_stat seg_gz rejected_requests) refused, $(rg_stat seg_gz rejected_rows) rows), no copy lost"

# admitted large messages in the same segments are stored whole
in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id a -db seg_big -calls "$CALLS" -rows "$ROWS" -no-retry \
	>"$RG_TMP/admitted.json" 2>&1
[ "$(rg_jget "$RG_TMP/admitted.json" "d['ok']")" = "$CALLS" ] &&
	[ "$(sget "d['rows'].get('seg_big', 0)")" = $((CALLS * ROWS)) ] &&
	[ "$(rg_stat seg_big admitted_rows)" = $((CALLS * ROWS)) ]
rg_check_rc $? "seg_big: $CALLS admitted $ROWS-row messages stored, rows stored = rows admitted"
# A refusal that falls back to GOAWAY (its RequestHeader after 4 KB of
# rows) while an earlier call's body is unfinished: the server's socket
# is in the namespace, rowgated is not; it finds the socket through the
# guarded cgroup's processes and resets it after its grace
# (docs/grpc.md#h2-close).  300 ms between the sends: a slow verdict (a
# TCG guest) would otherwise read them as one, and judge the frame whole.
GRPC_PY=$RG_BUILD/grpc/py
if "$RG_PY" -c 'import hpack, google.protobuf' 2>/dev/null && [ -f "$GRPC_PY/greptime/v1/ingest_pb2.py" ]; then
	# a database in debt for 1,000 s (seg_spent may have refilled by now
	# in a slow guest)
	rg_ctl limit set seg_oc 1 >/dev/null || rg_fail "limit set"
	in_ns "$GO_CLIENT" -target "127.0.0.1:$GPORT" -id oc -db seg_oc -calls 1 -rows 1000 -no-retry \
		>"$RG_TMP/oc_seed.json" 2>&1 || rg_fail "seg_oc seed: $(cat "$RG_TMP/oc_seed.json")"
	RG_GRPC_PY=$GRPC_PY in_ns "$RG_PY" "$RG_ROOT/tests/grpc/h2_probe.py" --port "$GPORT" \
		--scenario open_call --db seg_oc --gap-ms 300 >"$RG_TMP/open_call.json" 2>&1 ||
		rg_fail "open_call: $(cat "$RG_TMP/open_call.json")"
	rg_log "open call: $(cat "$RG_TMP/open_call.json")"
	[ "$(rg_jget "$RG_TMP/open_call.json" "(d['goaway'], d['last_stream'], 5 in d['answered'], d['end'], 1.5 <= d['after_s'] <= 8)")" = "(11, 5, True, 'reset', True)" ] &&
		[ "$(rg_global h2_goaway_resets)" = 1 ] && [ "$(rg_global h2_goaway_reset_failed)" = 0 ]
	rg_check_rc $? "a GOAWAY naming a later stream answered and an open call (last stream 5), the server in another network namespace: reset $(rg_jget "$RG_TMP/open_call.json" "d['after_s']") s after it (grace 2 s)"
else
	rg_log "no python3-hpack or python3-protobuf here: the open-call probe does not run"
fi
[ "$(rg_global h2_out_answers)" = "$(rg_global h2_reject_kept)" ] &&
	[ "$(rg_global h2_out_answer_failed)" = 0 ] && [ "$(rg_global internal_errors)" = 0 ]
rg_check_rc $? "every refusal answered, no internal errors"
rg_pass
