#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (c) A keep-alive client whose every write is rejected keeps writing for
# longer than the server's own timeout (victoria-metrics: header timeout 5 s
# after accept, -http.idleConnTimeout after its last answer).  The server
# never sees those writes, so its timer fires under the client.  With the
# port's --server-timeout set to 0 the client is cut mid-send (the control:
# this test can fail); with the server's timers the 429 that comes once half
# of the timer has run carries Connection: close, and the client reconnects
# with no connection error.  A connection whose writes pass is never closed.
# docs/server-profiles.md#server-timeouts
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"

HEADER_S=5 # victoria-metrics' ReadHeaderTimeout (not a flag)
IDLE_S=2   # -http.idleConnTimeout, short so the test runs in seconds
rg_mount_bpffs
rg_start_vm "-http.idleConnTimeout=${IDLE_S}s"
rg_start_rowgated --server-timeout "$RG_PORT=0"

rg_ctl limit set tdb 1 >/dev/null || rg_fail "limit set"
# one admitted write leaves ~1000 s of debt: every later write is rejected
code=$("$RG_PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from rgclient import lines
sys.stdout.buffer.write(lines(1000, series="rg_to"))' "$RG_ROOT/tests/e2e" |
	curl -s -o /dev/null -w '%{http_code}' --data-binary @- "http://127.0.0.1:$RG_PORT/write?db=tdb")
rg_check "the debt-making write is admitted" [ "$code" = 204 ]

# Three clients at once, every 200 ms for SECONDS: "header" writes only
# rejected writes on fresh connections; "idle" passes one write (db free has
# no limit) on each connection, then only rejected ones; "pass" writes to
# free only.  Prints one JSON summary.
run_clients() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$1" <<'PY'
import json, socket, sys, threading, time
from rgclient import Conn, lines
port, seconds = int(sys.argv[1]), float(sys.argv[2])
out = {}

def client(kind):
    conns, cur, deadline = [], None, time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        try:
            if cur is None:
                c = Conn(port, timeout=5)
                cur = {"responses": [], "error": None, "t0": time.monotonic()}
                conns.append(cur)
                if kind == "idle":
                    r = c.request("/write?db=free", lines(1, series="rg_to_free"))
                    assert r.status == 204, r
                    cur["t0"] = time.monotonic() # the server's idle timer runs from here
            db = "free" if kind == "pass" else "tdb"
            n += 1
            # 40 rows: larger than a 429, which then keeps the connection
            # (docs/design.md#tcp-read-accounting)
            r = c.request("/write?db=%s" % db, lines(40, series="rg_to_" + kind, tag="n=%d" % n))
            close = r.header("connection", "").lower() == "close"
            cur["responses"].append([round(time.monotonic() - cur["t0"], 3), r.status, close])
            if close:
                c.close()
                cur = None
        except (OSError, AssertionError) as e:
            if cur is None:
                raise
            cur["error"] = [round(time.monotonic() - cur["t0"], 3), repr(e)]
            c.close()
            cur = None
        time.sleep(0.2)
    if cur is not None:
        c.close()
    out[kind] = conns

threads = [threading.Thread(target=client, args=(k,)) for k in ("header", "idle", "pass")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
PY
}

# $1: summary file, $2: client kind: the first error "T: error" or nothing
first_error() {
	"$RG_PY" -c 'import json,sys
for c in json.load(open(sys.argv[1]))[sys.argv[2]]:
    if c["error"]:
        print("%.2fs: %s" % tuple(c["error"])); break' "$1" "$2"
}

# --- control: no deadline, the server cuts the rejected clients ---
run_clients 7 >"$RG_TMP/off.json" || rg_fail "clients: $(cat "$RG_TMP/off.json")"
e=$(first_error "$RG_TMP/off.json" header)
rg_check "deadline 0: the server cuts a never-served connection (${e:-no error})" [ -n "$e" ]
e=$(first_error "$RG_TMP/off.json" idle)
rg_check "deadline 0: the server cuts an idle connection (${e:-no error})" [ -n "$e" ]

# --- the server's timers: every rejected write answered, reconnects clean ---
rg_stop_rowgated
rg_start_rowgated --server-timeout "$RG_PORT=$HEADER_S,$IDLE_S"
before=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["responses_close_deadline"])')
run_clients 8 >"$RG_TMP/on.json" || rg_fail "clients: $(cat "$RG_TMP/on.json")"
after=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["responses_close_deadline"])')

"$RG_PY" - "$RG_TMP/on.json" "$HEADER_S" "$IDLE_S" $((after - before)) <<'PY' >"$RG_TMP/check.out" 2>&1 || rg_fail "$(cat "$RG_TMP/check.out")"
import json, sys
s = json.load(open(sys.argv[1]))
header_s, idle_s, counted = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
closes = 0
for kind, timeout in (("header", header_s), ("idle", idle_s)):
    conns = s[kind]
    assert len(conns) >= 2, (kind, "the session outlived the timer on one connection", conns)
    for i, c in enumerate(conns):
        assert c["error"] is None, (kind, "connection error", c)
        rs = c["responses"]
        assert rs and all(st == 429 for _, st, _ in rs), (kind, "not all 429", c)
        # only the last answer of a connection closes it, before the server would
        assert not any(cl for _, _, cl in rs[:-1]), (kind, "closed early", c)
        if i < len(conns) - 1:
            t, _, cl = rs[-1]
            assert cl, (kind, "connection left without Connection: close", c)
            assert timeout / 2 - 0.3 <= t < timeout, (kind, "close outside [T/2, T)", c)
            closes += 1
    print(kind, "connections", len(conns), "closing 429s at",
          [c["responses"][-1][0] for c in conns[:-1]])
p = s["pass"]
assert len(p) == 1 and p[0]["error"] is None, ("passing connection closed or cut", p)
assert all(st == 204 and not cl for _, st, cl in p[0]["responses"]), ("pass", p)
print("pass: one connection,", len(p[0]["responses"]), "writes answered 204 keep-alive")
assert counted >= closes, ("responses_close_deadline moved by", counted, "closes seen", closes)
print("responses_close_deadline +%d for %d closes seen" % (counted, closes))
PY
rg_log "$(cat "$RG_TMP/check.out")"
rg_pass "every rejected write answered, Connection: close ahead of the server's timers"
