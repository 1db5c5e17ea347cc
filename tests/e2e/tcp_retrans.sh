#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Retransmissions that start before bytes the server already holds
# (docs/design.md#retransmitted-bytes).  tcp_read_skb hands a sockmap
# verdict, and then the server, such a segment whole: without rowgate's cut
# both would read the old bytes twice (the stream corrupted, rows counted
# twice).  victoria-metrics and the client run in a network namespace whose
# loopback (1,500-byte MTU, one segment per skb) drops a tenth of the
# client's new data (never a retransmission) and, each second, the server's ACKs for a quarter of a
# second (tests/bpf/lossy.bpf.c): the client's timeouts retransmit merged
# small segments.  Keep-alive connections POST line protocol in small
# writes, in rounds until such a retransmission was cut (at most 8; none:
# skipped, which fails make test unless ALLOW_SKIP=1).  Checked: every
# request answered 204; victoria-metrics stores exactly the rows sent,
# rowgate charged exactly those; the verdict never lost its place
# (tcp_seq_gaps).
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics ip tc curl "$RG_PY"

rg_seg_namespace rg-rtx-$$
RG_PORT=18428 # LOSSY_PORT: the namespace is the test's own

rg_make_cgroup
mkdir -p "$RG_TMP/vm"
(
	echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
	exec ip netns exec "$NS" victoria-metrics -httpListenAddr="127.0.0.1:$RG_PORT" \
		-storageDataPath="$RG_TMP/vm" -loggerLevel=ERROR -search.disableCache \
		-retentionPeriod=100y
) >"$RG_TMP/vm.log" 2>&1 &
VM_PID=$!
rg_on_exit "kill -9 $VM_PID; wait $VM_PID"
rg_wait_for 20 in_ns curl -sf "http://127.0.0.1:$RG_PORT/health" ||
	rg_fail "victoria-metrics did not come up"
rg_mount_bpffs
rg_start_rowgated
rg_ctl limit set retrans 1000000000 >/dev/null || rg_fail "limit set"

rg_lossy_link

# Runs cut 36 to 52 retransmissions on the host, and some in both TCG guests;
# rounds stop at the first cut, so rounds beyond the first cost time only
# in a run that would otherwise skip, and so fail the suite.
CONNS=4 REQS=3 LINES=${RTX_LINES:-1500} ROUNDS=8
[ "${VMTEST:-0}" != 1 ] || LINES=600
old0=$(rg_global tcp_old_segments) gaps0=$(rg_global tcp_seq_gaps)
# Each connection writes its requests in 1 to 120-byte pieces, 1 ms apart
# (TCP_NODELAY: mostly a segment each), and reads each answer.  Rounds
# until a retransmission over received bytes happened (at most $ROUNDS).
round() {
	local c pids=""
	for c in $(seq "$CONNS"); do
		in_ns "$RG_PY" - "$RG_PORT" "$1$c" "$REQS" "$LINES" >"$RG_TMP/client$1-$c.log" 2>&1 <<'PY' &
import random, socket, sys, time
port, conn, reqs, lines = map(int, sys.argv[1:5])
rnd = random.Random(conn)
s = socket.create_connection(("127.0.0.1", port), timeout=120)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for r in range(reqs):
    base = 1700000000000 + (conn * 100 + r) * 1000000
    body = "".join(f"retrans,conn={conn} v={i} {base + i}\n" for i in range(lines)).encode()
    msg = (f"POST /write?db=retrans HTTP/1.1\r\nHost: vm\r\nContent-Length: {len(body)}\r\n\r\n"
           ).encode() + body
    off = 0
    while off < len(msg):
        n = rnd.randint(1, 120)
        s.sendall(msg[off:off + n])
        off += n
        time.sleep(0.001)
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            sys.exit("closed")
        head += d
    print(head.split(b"\r\n")[0].decode(), flush=True)
s.close()
PY
		pids="$pids $!"
	done
	wait $pids
}
rounds=0
while [ $rounds -lt $ROUNDS ]; do
	rounds=$((rounds + 1))
	round $rounds
	[ "$(rg_global tcp_old_segments)" = "$old0" ] || break
done
want=$((rounds * CONNS * REQS * LINES))
rg_log "$rounds round(s); answers: $(cat "$RG_TMP"/client*.log | sort | uniq -c | tr -s ' \n' ' ')"
rg_log "namespace TCP: $(in_ns nstat -az 2>/dev/null | awk '$2 != 0 && /Retrans|DSACK|OFO/ { printf "%s=%s ", $1, $2 }')"
old=$(($(rg_global tcp_old_segments) - old0)) gaps=$(($(rg_global tcp_seq_gaps) - gaps0))
rg_log "tcp_old_segments +$old (tcp_old_bytes $(rg_global tcp_old_bytes)), tcp_seq_gaps +$gaps"
rg_log "rowgate: $(rg_ctl --json stats | "$RG_PY" -c "import json,sys; g=json.load(sys.stdin)['global']
print(' '.join(f'{k}={v}' for k, v in g.items() if v))")"
rg_log "lossy link: $(bpftool map dump name lossy.bss 2>/dev/null | tr -s ' \n' ' ' | cut -c1-200)"
rg_check "every request answered 204" \
	[ "$(cat "$RG_TMP"/client*.log | grep -c '^HTTP/1.1 204')" = $((rounds * CONNS * REQS)) ]

stored=$(RG_VM_NS=$NS rg_vm_rows_wait '{db="retrans"}' "$want")
rg_check "victoria-metrics stores the $want rows sent, each once" rg_is "$stored" "$want" "stored rows"
rg_check "rowgate charged the $want rows" rg_wait_charged retrans "$want"
rg_check "the verdict never lost its place in the stream (tcp_seq_gaps)" [ "$gaps" = 0 ]
[ "$old" -gt 0 ] ||
	rg_skip "the link made no retransmission over received bytes in $ROUNDS rounds: the cut was not exercised"
rg_log "ok: retransmitted old bytes were cut (tcp_old_segments)"
rg_pass
