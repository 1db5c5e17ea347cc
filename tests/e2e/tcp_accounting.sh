#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (g) TCP read accounting stays exact (docs/design.md#tcp-read-accounting): after each scenario the
# server neither spins (its CPU time stays flat while idle) nor stalls (the
# next request on the connection is answered at once):
#   1. requests sent before the server accept()s (admitted and rejected)
#   2. a request head split across three sends (admitted and rejected)
#   3. a rejected request whose body spans hundreds of skbs
#   4. a 429 for a request smaller than the response (Connection: close)
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set acct 100 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$VM_PID" "$RG_ROWGATECTL" "$RG_SOCK" \
	2>&1 <<'PY' | tee "$RG_TMP/acct.out"
import json, os, signal, socket, subprocess, sys, time
import rgclient
from rgclient import Conn, lines, build_request
port, vm, ctl, sock = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
HZ = os.sysconf("SC_CLK_TCK")
failures = []

def cpu():
    f = open("/proc/%d/stat" % vm).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])

def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""))
    if not ok:
        failures.append(what)

def idle_check(what):
    """A spinning server burns ~a core; an idle one little (victoria-metrics'
    own background work reached ~20% under qemu TCG on a loaded host)."""
    c0, t0 = cpu(), time.monotonic()
    time.sleep(1.0)
    used = (cpu() - c0) / HZ / (time.monotonic() - t0)
    check(what + ": server idle afterwards", used < 0.5, "%.0f%% of a core" % (used * 100))

def wait_token():
    rgclient.wait_token(ctl, sock, "acct")

def exhaust():
    """Go into debt so that the next write is rejected."""
    wait_token()
    c = Conn(port)
    r = c.request("/write?db=acct", lines(300, series="rg_acct", tag="req=debt"))
    c.close()
    assert r.status == 204, r

def answered_at_once(c, what, status=204, path="/health", method="GET"):
    t = time.monotonic()
    r = c.request(path, b"", method=method)
    dt = time.monotonic() - t
    check(what + ": next request answered at once", r.status == 200 and dt < 0.5,
          "%d in %.0f ms" % (r.status, dt * 1000))

big = lines(40, series="rg_acct", tag="req=ka")  # large enough for a keep-alive 429

# 1. before accept: freeze the server, queue requests, thaw
for want in (204, 429):
    if want == 429:
        exhaust()
    else:
        wait_token()
    os.kill(vm, signal.SIGSTOP)
    try:
        c = Conn(port)
        c.send(build_request("/write?db=acct", big))
        time.sleep(0.2)  # the data sits in the accept queue
    finally:
        os.kill(vm, signal.SIGCONT)
    r = c.read_response()
    check("pre-accept request answered %d" % want, r.status == want, repr(r))
    answered_at_once(c, "pre-accept %d" % want)
    idle_check("pre-accept %d" % want)
    c.close()

# 2. a head split across three sends
req = build_request("/write?db=acct", big)
cut1, cut2 = 20, req.index(b"\r\n\r\n") - 5
for want in (204, 429):
    if want == 429:
        exhaust()
    else:
        wait_token()
    c = Conn(port)
    for part in (req[:cut1], req[cut1:cut2], req[cut2:]):
        c.send(part)
        time.sleep(0.05)  # separate segments
    r = c.read_response()
    check("split head answered %d" % want, r.status == want, repr(r))
    answered_at_once(c, "split head %d" % want)
    idle_check("split head %d" % want)
    c.close()

# 3. a rejected body over hundreds of skbs (2 KB sends, no Expect)
exhaust()
body = lines(40000, series="rg_acct", tag="req=huge")
c = Conn(port)
c.send(build_request("/write?db=acct", b"", {"Content-Length": str(len(body))}))
sent = 0
for i in range(0, len(body), 2048):
    c.send(body[i:i + 2048])
    sent += 1
r = c.read_response()
check("rejected body over %d sends answered 429" % sent, r.status == 429, repr(r))
check("its 429 keeps the connection", r.header("connection", "").lower() == "keep-alive", r.headers)
answered_at_once(c, "rejected %d-send body" % sent)
idle_check("rejected %d-send body" % sent)
c.close()

# 4. a request smaller than its 429: the answer grows and closes
exhaust()
c = Conn(port)
r = c.request("/write?db=acct", b"x v=1")
check("tiny request answered 429", r.status == 429, repr(r))
check("with Connection: close", r.header("connection", "").lower() == "close", r.headers)
c.close()
idle_check("tiny 429")
c = Conn(port)
answered_at_once(c, "new connection after a closing 429")
c.close()

sys.exit(1 if failures else 0)
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || rg_fail "$(grep -c FAIL "$RG_TMP/acct.out") scenario checks failed"
rg_check "no rows of rejected requests stored" [ "$(rg_vm_rows '{__name__="rg_acct_v",req="huge"}')" -eq 0 ]
rg_pass
