#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (c) A keep-alive client whose every write is rejected keeps writing for
# longer than the server's own timeout (victoria-metrics: header timeout 5 s
# after accept, -http.idleConnTimeout after its last answer).  The server
# never sees those writes, so its timer fires under the client.  With the
# server's timers the 429 that comes once half of the timer has run carries
# Connection: close, and the client reconnects with no connection error;
# also on a connection that predates rowgated (adopted).  A connection whose
# writes pass is never closed.  With the port's --server-timeout set to 0
# the clients are cut mid-send (the control: this test can fail).
# docs/server-profiles.md#server-timeouts
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"

HEADER_S=5 # victoria-metrics' ReadHeaderTimeout (not a flag)
# -http.idleConnTimeout, short so the test runs in seconds; the connection
# that predates rowgated must still be open when its writes start, after
# rowgated's start, which under TCG emulation (vmtest) takes seconds
IDLE_S=3
[ "${VMTEST:-0}" = 1 ] && IDLE_S=8
rg_mount_bpffs
rg_start_vm "-http.idleConnTimeout=${IDLE_S}s"

# A client connected before rowgated starts: one write answered, then, once
# told to go, only rejected writes for SECONDS (reconnecting on close).
# Each connection records [seconds since the server's last answer, status,
# Connection: close] per response.
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_TMP/ready" "$RG_TMP/go" 6 \
	>"$RG_TMP/adopted.json" 2>&1 <<'PY' &
import json, os, sys, time
from rgclient import Conn, lines
port, ready, go, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
c = Conn(port, timeout=5)
r = c.request("/write?db=free", lines(1, series="rg_to_free"))
assert r.status == 204, r
conns = [{"responses": [], "error": None, "answered": time.monotonic()}]
open(ready, "w").close()
deadline = time.monotonic() + 20
while not os.path.exists(go):
    assert time.monotonic() < deadline, "never told to go"
    time.sleep(0.01)
cur, end, n = conns[0], time.monotonic() + seconds, 0
while time.monotonic() < end:
    try:
        if cur is None:
            c = Conn(port, timeout=5)
            cur = {"responses": [], "error": None, "answered": time.monotonic()}
            conns.append(cur)
        n += 1
        r = c.request("/write?db=tdb", lines(40, series="rg_to_adopted", tag="n=%d" % n))
        close = r.header("connection", "").lower() == "close"
        cur["responses"].append([round(time.monotonic() - cur["answered"], 3), r.status, close])
        if r.status == 204: # passed while the adoption waited for a request boundary
            cur["answered"] = time.monotonic()
        if close:
            c.close()
            cur = None
    except OSError as e:
        cur["error"] = [round(time.monotonic() - cur["answered"], 3), repr(e)]
        c.close()
        cur = None
    time.sleep(0.2)
print(json.dumps(conns))
PY
adopted_pid=$!
rg_on_exit "kill $adopted_pid 2>/dev/null"
rg_wait_for 20 test -e "$RG_TMP/ready" || rg_fail "the early client did not connect"

# the limit is in the state file: enforced from the start
printf '{"version":1,"limits":{"tdb":1}}\n' >"$RG_STATE"
rg_start_rowgated --server-timeout "$RG_PORT=$HEADER_S,$IDLE_S"
# one admitted write leaves ~1000 s of debt: every later write is rejected
code=$("$RG_PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from rgclient import lines
sys.stdout.buffer.write(lines(1000, series="rg_to"))' "$RG_ROOT/tests/e2e" |
	curl -s -o /dev/null -w '%{http_code}' --data-binary @- "http://127.0.0.1:$RG_PORT/write?db=tdb")
rg_check "the debt-making write is admitted" [ "$code" = 204 ]
touch "$RG_TMP/go"

# Three clients at once, every 200 ms for SECONDS: "header" writes only
# rejected writes on fresh connections; "idle" passes one write (db free has
# no limit) on each connection, then only rejected ones; "pass" writes to
# free only.  Prints one JSON summary.
run_clients() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$1" <<'PY'
import json, sys, threading, time
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

counter() {
	rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["responses_close_deadline"])'
}

# --- the server's timers: every rejected write answered, reconnects clean ---
run_clients 8 >"$RG_TMP/on.json" || rg_fail "clients: $(cat "$RG_TMP/on.json")"
wait "$adopted_pid" || rg_fail "early client: $(cat "$RG_TMP/adopted.json")"
counted=$(counter)

"$RG_PY" - "$RG_TMP/on.json" "$RG_TMP/adopted.json" "$HEADER_S" "$IDLE_S" "$counted" <<'PY' >"$RG_TMP/check.out" 2>&1 || rg_fail "$(cat "$RG_TMP/check.out")"
import json, sys
s = json.load(open(sys.argv[1]))
s["adopted"] = json.load(open(sys.argv[2]))
header_s, idle_s, counted = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
closes = 0

def closed_in_time(kind, c, lo, hi):
    t, _, cl = c["responses"][-1]
    assert cl, (kind, "connection left without Connection: close", c)
    assert lo <= t < hi, (kind, "close outside [%s, %s)" % (lo, hi), c)

for kind, timeout in (("header", header_s), ("idle", idle_s), ("adopted", header_s)):
    conns = s[kind]
    assert len(conns) >= 2, (kind, "the session outlived the timer on one connection", conns)
    for i, c in enumerate(conns):
        assert c["error"] is None, (kind, "connection error", c)
        rs = c["responses"]
        if kind == "adopted" and i == 0:
            # held until a request boundary: at most one write passes first
            rs = [r for r in rs if r[1] != 204]
            assert len(c["responses"]) - len(rs) <= 1, (kind, "passed writes", c)
        assert rs and all(st == 429 for _, st, _ in rs), (kind, "not all 429", c)
        # only the last answer of a connection closes it, before the server would
        assert not any(cl for _, _, cl in c["responses"][:-1]), (kind, "closed early", c)
        if i == len(conns) - 1:
            continue
        if kind == "adopted" and i == 0:
            # the server's idle timer ran from its last answer, before rowgated
            closed_in_time(kind, c, 0, idle_s)
        else:
            closed_in_time(kind, c, timeout / 2 - 0.3, timeout)
        closes += 1
    print(kind, "connections", len(conns), "closing 429s at",
          [c["responses"][-1][0] for c in conns[:-1]],
          "(passed while held: %d)" % sum(r[1] == 204 for r in conns[0]["responses"])
          if kind == "adopted" else "")
p = s["pass"]
assert len(p) == 1 and p[0]["error"] is None, ("passing connection closed or cut", p)
assert all(st == 204 and not cl for _, st, cl in p[0]["responses"]), ("pass", p)
print("pass: one connection,", len(p[0]["responses"]), "writes answered 204 keep-alive")
assert counted >= closes, ("responses_close_deadline is", counted, "closes seen", closes)
print("responses_close_deadline %d for %d closes seen" % (counted, closes))
PY
rg_log "$(cat "$RG_TMP/check.out")"

# --- control: no deadline, the server cuts the rejected clients ---
rg_stop_rowgated
rg_start_rowgated --server-timeout "$RG_PORT=0"
before=$(counter)
run_clients $((IDLE_S + 4)) >"$RG_TMP/off.json" || rg_fail "clients: $(cat "$RG_TMP/off.json")"
# $1: client kind: its first connection error "T: error", or nothing
first_error() {
	"$RG_PY" -c 'import json,sys
for c in json.load(open(sys.argv[1]))[sys.argv[2]]:
    if c["error"]:
        print("%.2fs: %s" % tuple(c["error"])); break' "$RG_TMP/off.json" "$1"
}
e=$(first_error header)
rg_check "deadline 0: the server cuts a never-served connection (${e:-no error})" [ -n "$e" ]
e=$(first_error idle)
rg_check "deadline 0: the server cuts an idle connection (${e:-no error})" [ -n "$e" ]
rg_check "deadline 0: no close ahead of the server counted" [ "$(counter)" -eq "$before" ]
rg_pass "every rejected write answered, Connection: close ahead of the server's timers"
