#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The kernel's row count over bodies of every shape: lines of random length
# (so line ends fall at every offset of an 8-byte word and of a 256-byte
# window), empty and blank lines, comments, CRLF, leading blanks, a last
# line without a newline; Content-Length and chunked bodies, sent whole or
# in random pieces.  The rows rowgate charges equal an independent count of
# the same bodies by GreptimeDB's rule, request by request.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set shapes 1000000000000 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" \
	>"$RG_TMP/shapes.out" 2>&1 <<'PY' || rg_fail "client: $(tail -n 20 "$RG_TMP/shapes.out")"
import json, random, subprocess, sys
from rgclient import Conn, build_request, chunked
port, ctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rnd = random.Random(20261201)

def charged():
    out = subprocess.check_output([ctl, "--socket", sock, "--json", "stats", "shapes"])
    return int(json.loads(out)["databases"][0]["admitted_rows"])

def reference(body):
    """Rows by the rule: a line whose first byte that is not ' ', '\\t' or
    '\\r' is neither '#' nor the end of the line."""
    rows = 0
    for line in body.split(b"\n"):
        s = line.lstrip(b" \t\r")
        if s and not s.startswith(b"#"):
            rows += 1
    return rows

def line():
    kind = rnd.random()
    if kind < 0.08:
        return b""
    if kind < 0.14:
        return bytes(rnd.choice(b" \t\r") for _ in range(rnd.randint(1, 20)))
    if kind < 0.20:
        return b"# comment " + b"c" * rnd.randint(0, 90)
    pad = b"x" * rnd.randint(0, 300)
    lead = b" \t"[rnd.randint(0, 1):] * rnd.randint(0, 9) if rnd.random() < 0.2 else b""
    return lead + b"m,t=a s=\"" + pad + b"\" 1"

def body():
    out = b""
    for _ in range(rnd.randint(1, 60)):
        out += line() + (b"\r\n" if rnd.random() < 0.3 else b"\n")
    if rnd.random() < 0.3:
        out += line()  # no newline at the end
    return out

c = Conn(port)
before = charged()
total = 0
for i in range(300):
    b = body()
    want = reference(b)
    if i % 5 == 4:
        req = build_request("/write?db=shapes", chunked(b, rnd.randint(1, 700)),
                            {"Transfer-Encoding": "chunked", "Content-Length": None})
    else:
        req = build_request("/write?db=shapes", b)
    if i % 3 == 2:
        # random pieces: the kernel sees the request as several skbs
        cuts = sorted(rnd.sample(range(1, len(req)), min(4, len(req) - 1)))
        for a, z in zip([0] + cuts, cuts + [len(req)]):
            c.send(req[a:z])
    else:
        c.send(req)
    r = c.read_response()
    assert r.status in (204, 400), (i, r.status, r.body[:200])
    total += want
    got = charged() - before
    assert got == total, "request %d (%d bytes, %s): charged %d rows in all, reference %d" % (
        i, len(b), "chunked" if i % 5 == 4 else "length", got, total)
print("rows", total)
PY
rg_log "$(cat "$RG_TMP/shapes.out")"
rg_check "every request charged exactly its rows" grep -q '^rows [1-9]' "$RG_TMP/shapes.out"
rg_pass
