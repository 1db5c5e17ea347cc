#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (c) One keep-alive connection carrying admitted and rejected writes mixed:
# responses arrive in order, the connection is reused throughout, and a
# kernel 429 never overtakes a server response: a write refused behind an
# unanswered request (pipelined, in one segment or across a held-back head)
# is voided, answered by the server in order, never stored, and egress
# turns the server's 400 into rowgate's 429 with Connection: close.  With
# rowgated --egress off the server's 400 stays (the fallback).
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set ka 20 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" \
	>"$RG_TMP/ka.out" 2>&1 <<'PY' || rg_fail "client: $(cat "$RG_TMP/ka.out")"
import json, subprocess, sys, time
import rgclient
from rgclient import Conn, lines, build_request
port, ctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def wait_token():
    rgclient.wait_token(ctl, sock, "ka", timeout=10)

c = Conn(port)
peer = c.sock.getsockname()
seen = []
def req(name, n):
    r = c.request("/write?db=ka", lines(n, series="rg_ka", tag="req=" + name))
    seen.append((name, r.status))
    assert r.header("connection", "keep-alive").lower() != "close", (name, r)
    return r

assert req("a", 60).status == 204          # admitted: 40 rows of debt
r = req("b", 30)                           # rejected, answered by the kernel
assert r.status == 429, r
assert r.header("x-greptime-err-code") == "6001", r.headers
body = json.loads(r.body)
assert body["code"] == 6001 and "'ka'" in body["error"] and "30 rows" in body["error"], body
assert int(r.header("retry-after")) >= 1
assert req("c", 25).status == 429          # still in debt
wait_token()
assert req("d", 25).status == 204          # admitted again on the same connection
assert req("e", 25).status == 429
wait_token()
# Pipelined: "f" is passed, then "g" must be refused, but a kernel 429
# would overtake f's response: g is voided, the server answers it 400
# after f's 204 and closes the connection, and egress replaces that 400
# with rowgate's 429.  g is never stored.
def is_rowgate_429(r, tag):
    assert r.status == 429, (tag, r)
    assert r.header("connection", "").lower() == "close", (tag, r.headers)
    assert r.header("x-greptime-err-code") == "6001", (tag, r.headers)
    assert int(r.header("retry-after")) >= 1, (tag, r.headers)
    assert int(r.header("content-length")) == len(r.body), (tag, r.headers)
    body = json.loads(r.body)
    assert body["code"] == 6001 and "'ka'" in body["error"], (tag, body)
    assert "an estimated" in body["error"], (tag, body)

c.send(build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=f")) +
       build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=g")))
rf, rg = c.read_response(), c.read_response()
assert rf.status == 204, (rf, rg)
is_rowgate_429(rg, "pipelined")
assert c.buf == b"", ("bytes after the 429", c.buf)
assert c.closed_by_peer(5), "the server keeps the connection after its answer"
print("sequence", seen, "pipelined", rf.status, rg.status)
c.close()

# The same behind a request rowgate does not limit (a GET), in one segment.
def refused_in_order(c, first_status, tag):
    r1, r2 = c.read_response(), c.read_response()
    assert r1.status == first_status, (tag, r1, r2)
    is_rowgate_429(r2, tag)
    assert c.buf == b"", (tag, "bytes after the 429", c.buf)
    assert c.closed_by_peer(5), tag
    c.close()
    print(tag, r1.status, r2.status)

wait_token()
c = Conn(port)
assert c.request("/write?db=ka", lines(30, series="rg_ka", tag="req=h")).status == 204
c.send(build_request("/health", b"", method="GET") +
       build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=i")))
refused_in_order(c, 200, "GET + write")

# A write behind a head held back across segments (stashed, then written
# back in front of the skb that completes it).  The pause only makes two
# segments likely; coalesced, the case above runs again.
c = Conn(port)
get = build_request("/health", b"", method="GET")
c.send(get[:9])
time.sleep(0.05)
c.send(get[9:] + build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=j")))
refused_in_order(c, 200, "split GET + write")

# A head that begins after a complete request and ends in the next
# segment: the request before it passes alone, the fragment waits.  Once
# the server has answered the GET, the write gets the kernel's 429;
# before, it is voided: either way in order, never stored.
c = Conn(port)
w = build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=k"))
c.send(get + w[:7])
time.sleep(0.05)
c.send(w[7:])
r1, r2 = c.read_response(), c.read_response()
assert r1.status == 200, (r1, r2)
assert r2.status == 429 and r2.header("x-greptime-err-code") == "6001", (r1, r2)
print("GET + split write", r1.status, r2.status)
c.close()
PY
rg_log "$(cat "$RG_TMP/ka.out")"
for r in a:60 d:25 f:25 h:30; do
	rg_check "request ${r%:*} stored (${r#*:} rows)" \
		[ "$(rg_vm_rows_wait "{__name__=\"rg_ka_v\",req=\"${r%:*}\"}" "${r#*:}")" -eq "${r#*:}" ]
done
for r in b c e g i j k; do
	rg_check "rejected request $r not stored" [ "$(rg_vm_rows "{__name__=\"rg_ka_v\",req=\"$r\"}")" -eq 0 ]
done
rg_check "no request passed unenforced" [ "$(rg_stat ka unenforced_requests)" -eq 0 ]
rg_check "kernel refused 7 requests (3 + 1 answered, 3 voided, 1 either)" \
	[ "$(rg_stat ka rejected_requests)" -eq 7 ]
rg_check "pipelined requests voided" [ "$(rg_global pipelined_voided)" -ge 3 ]
rg_check "egress paired every answer, the servers' 400s too" [ "$(rg_global egress_lost)" -eq 0 ]
rg_check "voided requests answered 429 by egress" [ "$(rg_global pipelined_answered_429)" -ge 3 ]
rg_check "no voided request fell back to the server's 400" \
	[ "$(rg_global pipelined_answered_400)" -eq 0 ]

# Without egress the server's 400 answers a voided request (the fallback).
rg_stop_rowgated
rg_start_rowgated --egress off
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" \
	>"$RG_TMP/off.out" 2>&1 <<'PY' || rg_fail "client (--egress off): $(cat "$RG_TMP/off.out")"
import json, subprocess, sys, time
import rgclient
from rgclient import Conn, lines, build_request
port, ctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]

rgclient.wait_token(ctl, sock, "ka", timeout=10)
c = Conn(port)
c.send(build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=l")) +
       build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=m")))
r1, r2 = c.read_response(), c.read_response()
assert r1.status == 204 and r2.status == 400, (r1, r2)
assert r2.header("connection", "").lower() == "close", r2
assert c.closed_by_peer(5), "the server keeps the connection after its 400"
print("--egress off: pipelined", r1.status, r2.status)
c.close()
PY
rg_log "$(cat "$RG_TMP/off.out")"
rg_check "request l stored (25 rows)" \
	[ "$(rg_vm_rows_wait '{__name__="rg_ka_v",req="l"}' 25)" -eq 25 ]
rg_check "voided request m not stored" [ "$(rg_vm_rows '{__name__="rg_ka_v",req="m"}')" -eq 0 ]
rg_check "the fallback 400 counted" [ "$(rg_global pipelined_answered_400)" -ge 1 ]
rg_pass
