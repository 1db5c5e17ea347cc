#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bad input gets a clear error and loses nothing: smuggling attempts and
# malformed framing are answered 400 and closed without the server seeing a
# byte; so are non-HTTP bytes; bad limit values are refused; a
# database name longer than a key never matches by truncation.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set bad 1000 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" 2>&1 <<'PY' | tee "$RG_TMP/bad.out"
import subprocess, sys, time
from rgclient import Conn, lines
port = int(sys.argv[1])

def server_side_closed(client_port, timeout=3.0):
    """The server's socket of this connection goes away once the client
    closes: it saw the EOF (nothing left half-open in CLOSE-WAIT)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["ss", "-Htan", "state", "all",
                              "( sport = :%d and dport = :%d )" % (port, client_port)],
                             capture_output=True, text=True).stdout
        if not out.strip():
            return True
        time.sleep(0.05)
    return False
fail = []
def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""))
    if not ok: fail.append(what)

row = lambda tag: b"rg_bad,case=%s v=1\n" % tag.encode()
smuggle = {
    "cl+te": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nContent-Length: 19\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n13\r\n" + row("clte") + b"\r\n0\r\n\r\n",
    "te+cl": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
             b"Content-Length: 4\r\n\r\n13\r\n" + row("tecl") + b"\r\n0\r\n\r\n",
    "dup-cl": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nContent-Length: 18\r\n"
              b"Content-Length: 0\r\n\r\n" + row("dupcl"),
    "bad-cl": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nContent-Length: 1_8\r\n\r\n" + row("badcl"),
    "te-gzip": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
               b"13\r\n" + row("tegz") + b"\r\n0\r\n\r\n",
    "bad-chunk": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"zz\r\n" + row("badchunk") + b"\r\n0\r\n\r\n",
    "space-colon": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nContent-Length : 17\r\n\r\n" + row("spc"),
    "obs-fold": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  Content-Length: 17\r\n\r\n" + row("fold"),
    "huge-head": b"POST /write?db=bad HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 +
                 b"\r\nContent-Length: 18\r\n\r\n" + row("huge"),
}
for name, raw in smuggle.items():
    c = Conn(port)
    c.send(raw)
    r = c.read_response()
    check("%s answered 400" % name, r.status == 400, repr(r))
    check("%s says Connection: close" % name, r.header("connection", "").lower() == "close",
          r.headers)
    client_port = c.sock.getsockname()[1]
    c.close()
    check("%s: the server closes its side after the client" % name,
          server_side_closed(client_port))

# Non-HTTP bytes on a guarded port fail closed: rowgate's own 400 (it says
# "rowgate"), never passed (tests/e2e/allow_unparsed.sh: the opt-in).
c = Conn(port)
c.send(b"\x16\x03\x01\x00\x05hello\r\n\r\n")
r = c.read_response()
check("non-HTTP bytes answered by rowgate's 400", r.status == 400 and b"rowgate" in r.body,
      repr(r))
c.close()
sys.exit(1 if fail else 0)
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || rg_fail "framing checks failed"
sleep 0.5
stored=$(rg_vm_rows '{__name__="rg_bad_v"}')
rg_check "the server never stored a smuggled row ($stored)" [ "$stored" -eq 0 ]
rg_check "bad requests counted" [ "$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["bad_requests"])')" -ge 10 ]
rg_check "non-HTTP fail-closed counted" [ "$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["failclosed_not_http"])')" -ge 1 ]

for v in 1000/s -1 1e3 18446744073709551616 "" " 5" "5 " 0x10 +5 1.5; do
	if out=$(rg_ctl limit set bad "$v" 2>&1); then
		rg_fail "limit value '$v' was accepted"
	fi
	rg_log "refused '$v': $out"
done
rg_check "u64 max is a valid limit" rg_ctl limit set big 18446744073709551615
rg_check "the limit is unchanged by refused values" [ "$(rg_stat bad limit)" -eq 1000 ]

# 63-byte names are keys; a 64-byte name sharing them must not match.
n63=$(printf 'n%.0s' $(seq 63))
rg_ctl limit set "$n63" 1 >/dev/null || rg_fail "63-byte name refused"
rg_check "a 64-byte name is refused by rowgatectl" sh -c "! '$RG_ROWGATECTL' --socket '$RG_SOCK' limit set '${n63}x' 1 2>/dev/null"
for i in 1 2 3; do
	code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "$(printf 'rg_long v=1\n%.0s' $(seq 50))" \
		"http://127.0.0.1:$RG_PORT/write?db=${n63}x")
	rg_check "64-byte db write $i not limited by the 63-byte key" [ "$code" = 204 ]
done
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "$(printf 'rg_long v=1\n%.0s' $(seq 50))" \
	"http://127.0.0.1:$RG_PORT/write?db=$n63")
code2=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "$(printf 'rg_long v=1\n%.0s' $(seq 50))" \
	"http://127.0.0.1:$RG_PORT/write?db=$n63")
rg_check "the 63-byte db itself is limited ($code then $code2)" [ "$code" = 204 -a "$code2" = 429 ]
rg_pass
