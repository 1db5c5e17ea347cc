#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, charge as the body arrives: rows the kernel counts are charged
# skb by skb while a body streams in, not only when it ends, so a client
# that sends most of a large write and then aborts it (victoria-metrics
# stores lines as it reads them) still pays for what it sent, and a
# request that never finishes cannot hold rows outside the bucket.
#   1. 12,000 of 20,000 announced lines, then the connection is reset:
#      admitted_rows counts them (the last line may be cut: +-1), no
#      request is counted as admitted, and the server stored no more than
#      was charged.
#   2. The same against a small limit: the aborted rows are debt, so the
#      next write is refused, with a Retry-After of the debt.
#   3. A gzip body (counted by rowgated from a copy) aborted the same way:
#      the estimate of the bytes that arrived is charged, so the next
#      write to a small limit is refused too.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set abort 1000000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set abortsmall 100 >/dev/null || rg_fail "limit set"
rg_ctl limit set abortgz 100 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" >"$RG_TMP/client.out" 2>&1 <<'PY' ||
import gzip, sys
from rgclient import Conn, lines, build_request
port = int(sys.argv[1])

def aborted(db, tag, sent=12000, announced=20000, gz=False):
    body = lines(announced, series="rg_abort", tag="req=" + tag)
    if gz:
        body = gzip.compress(body)
        sent_bytes = len(body) * 6 // 10
    else:
        part = body.split(b"\n")
        sent_bytes = len(b"\n".join(part[:sent])) + 1
    head = build_request("/write?db=" + db, body,
                         {"Content-Encoding": "gzip"} if gz else None)
    cut = len(head) - len(body)
    c = Conn(port)
    c.send(head[:cut + sent_bytes])
    # the verdict has seen every byte once the server acknowledged it all
    c.wait_acked()
    c.reset()  # the request never ends

aborted("abort", "a")
aborted("abortsmall", "b")
aborted("abortgz", "g", gz=True)
for db in ("abortsmall", "abortgz"):
    c = Conn(port)
    r = c.request("/write?db=" + db, lines(10, series="rg_abort", tag="req=c"))
    print("after the aborted write to %s:" % db, r.status, r.header("retry-after"))
    assert r.status == 429, (db, r)
    assert int(r.header("retry-after")) >= 5, (db, r.headers)
    c.close()
PY
	rg_fail "client: $(tail -n 5 "$RG_TMP/client.out")"
rg_log "$(cat "$RG_TMP/client.out")"

rows=$(rg_stat abort admitted_rows)
rg_log "aborted write: admitted_rows $rows, admitted_requests $(rg_stat abort admitted_requests)"
[ "$rows" -ge 11999 ] && [ "$rows" -le 12001 ]
rg_check_rc $? "12,000 sent rows charged while they arrived (+-1)"
rg_check "the aborted request is not counted as admitted" [ "$(rg_stat abort admitted_requests)" -eq 0 ]
rg_check "abortsmall carries the aborted rows as debt" [ "$(rg_stat abortsmall debt_rows)" -ge 11000 ]
gz=$(rg_stat abortgz admitted_rows)
rg_log "aborted gzip write: admitted_rows $gz (the estimate of what arrived)"
rg_check "the aborted gzip write's estimate is charged" [ "$gz" -gt 100 ]
rg_check "... and it is not counted as admitted" [ "$(rg_stat abortgz admitted_requests)" -eq 0 ]
stored=$(rg_vm_rows '{__name__="rg_abort_v",req="a"}')
rg_log "victoria-metrics stored $stored rows of the aborted write"
rg_check "the server stored no more than was charged" [ "$stored" -le "$rows" ]
rg_pass
