#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (c) One keep-alive connection carrying admitted and rejected writes mixed:
# responses arrive in order, the connection is reused throughout, and a
# kernel 429 never overtakes a server response (pipelined requests).
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set ka 20 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" \
	>"$RG_TMP/ka.out" 2>&1 <<'PY' || rg_fail "client: $(cat "$RG_TMP/ka.out")"
import json, subprocess, sys, time
from rgclient import Conn, lines, build_request
port, ctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def tokens():
    out = subprocess.check_output([ctl, "--socket", sock, "--json", "stats", "ka"])
    return int(json.loads(out)["databases"][0]["tokens"])

def wait_token(timeout=10):
    deadline = time.monotonic() + timeout
    while tokens() < 1:
        assert time.monotonic() < deadline, "bucket never refilled"
        time.sleep(0.02)

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
# Pipelined: "f" is passed, then "g" would be rejected, but its 429 would
# overtake f's response; it must be passed (unenforced), in order.
c.send(build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=f")) +
       build_request("/write?db=ka", lines(25, series="rg_ka", tag="req=g")))
rf, rg = c.read_response(), c.read_response()
assert rf.status == 204 and rg.status == 204, (rf, rg)
assert c.sock.getsockname() == peer
print("sequence", seen, "pipelined", rf.status, rg.status)
c.close()
PY
rg_log "$(cat "$RG_TMP/ka.out")"
for r in a:60 d:25 f:25 g:25; do
	rg_check "request ${r%:*} stored (${r#*:} rows)" \
		[ "$(rg_vm_rows_wait "{__name__=\"rg_ka_v\",req=\"${r%:*}\"}" "${r#*:}")" -eq "${r#*:}" ]
done
for r in b c e; do
	rg_check "rejected request $r not stored" [ "$(rg_vm_rows "{__name__=\"rg_ka_v\",req=\"$r\"}")" -eq 0 ]
done
rg_check "one pipelined request counted unenforced" [ "$(rg_stat ka unenforced_requests)" -eq 1 ]
rg_check "kernel rejected 3 requests" [ "$(rg_stat ka rejected_requests)" -eq 3 ]
rg_pass
