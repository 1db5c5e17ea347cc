#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, charging before the server decides (docs/design.md#refunds),
# against Debian's InfluxDB 1.x with authentication on: writes naming
# another tenant's database without credentials (401), with a user that may
# not write there (403) or to a database the server does not have (404) are
# refunded when the server's answer leaves, so they never drain the bucket;
# the victim's own writes (204) are charged and never refunded, and one
# keep-alive connection mixing both, pipelined too, stays in step.  Two
# databases may be in flight on a connection at once; a third loses its
# response tracking (docs/design.md#egress).
RG_PROFILE=influxdb
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd influxd curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
rg_mount_bpffs
rg_make_cgroup
RG_PORT=$(rg_free_port) || rg_fail "no free port"
RG_INFLUX_HTTP="  auth-enabled = true" rg_start_influxd "$RG_PORT"
rg_start_rowgated
BASE="http://127.0.0.1:$RG_PORT"

# with no user yet, influxd takes the first admin without credentials
q() { curl -sf -XPOST "$BASE/query?u=admin&p=adminpw" --data-urlencode "q=$1" >/dev/null; }
curl -sf -XPOST "$BASE/query" \
	--data-urlencode "q=CREATE USER admin WITH PASSWORD 'adminpw' WITH ALL PRIVILEGES" \
	>/dev/null || rg_fail "create admin"
q "CREATE DATABASE victim" && q "CREATE DATABASE small" || rg_fail "create databases"
q "CREATE USER writer WITH PASSWORD 'wpw'" && q "GRANT WRITE ON victim TO writer" &&
	q "GRANT WRITE ON small TO writer" &&
	q "CREATE USER other WITH PASSWORD 'opw'" || rg_fail "create users"
# 1000 rows/s: the attack below sends 20 times that
rg_ctl limit set victim 1000 >/dev/null || rg_fail "limit set victim"
rg_ctl limit set ghost 1000 >/dev/null || rg_fail "limit set ghost"
rg_ctl limit set small 10 >/dev/null || rg_fail "limit set small"

stored() {
	curl -sfG "$BASE/query?u=admin&p=adminpw" --data-urlencode "db=victim" \
		--data-urlencode 'q=SELECT count(v) FROM m' |
		"$RG_PY" -c 'import json,sys; r=json.load(sys.stdin)["results"][0].get("series"); print(r[0]["values"][0][1] if r else 0)'
}
egress_lost() {
	rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"]["egress_lost"])'
}

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" >"$RG_TMP/client.out" 2>&1 <<'PY' ||
import gzip, sys
from rgclient import Conn, lines, build_request
port = int(sys.argv[1])
ts = [0]
def body(n):
    # distinct timestamps: influxd stores every point
    out = "".join("m,t=a v=1 %d\n" % (ts[0] + i + 1) for i in range(n))
    ts[0] += n
    return out.encode()

# 1. the attack: 100 writes of 200 rows, no credentials, one connection
c = Conn(port)
for i in range(100):
    r = c.request("/write?db=victim", body(200))
    assert r.status == 401, (i, r)
# a user without the privilege, and a database influxd does not have
for i in range(10):
    r = c.request("/write?db=victim&u=other&p=opw", body(200))
    assert r.status == 403, (i, r)
for i in range(10):
    r = c.request("/write?db=ghost&u=admin&p=adminpw", body(200))
    assert r.status == 404, (i, r)
c.close()
print("attack done")

# 2. the victim's own writes on a new connection: all admitted at its rate
c = Conn(port)
for i in range(4):
    r = c.request("/write?db=victim&u=writer&p=wpw", body(100))
    assert r.status == 204, (i, r)

# 3. one keep-alive connection mixing refused and stored writes, in turn
#    and then pipelined in one send: answers stay in step
for i in range(6):
    r = c.request("/write?db=victim" + ("&u=writer&p=wpw" if i % 2 else ""), body(10))
    assert r.status == (204 if i % 2 else 401), (i, r)
reqs = b"".join(build_request("/write?db=victim" + ("&u=writer&p=wpw" if i % 2 else ""),
                              body(10)) for i in range(6))
c.send(reqs)
for i in range(6):
    r = c.read_response()
    assert r.status == (204 if i % 2 else 401), ("pipelined", i, r)
# two databases in flight at once, each refused: both are refunded
reqs = b"".join(build_request("/write?db=victim" if i % 2 else
                              "/write?db=ghost&u=admin&p=adminpw", body(10)) for i in range(6))
c.send(reqs)
for i in range(6):
    r = c.read_response()
    assert r.status == (401 if i % 2 else 404), ("pipelined, two databases", i, r)

# 4. the kernel's own 429 leaves through the same egress: it is passed
#    over, not taken for the server's answer to the next request
r = c.request("/write?db=small&u=writer&p=wpw", body(50))
assert r.status == 204, r
r = c.request("/write?db=small&u=writer&p=wpw", body(30))
assert r.status == 429 and r.header("connection", "").lower() != "close", r
r = c.request("/write?db=victim", body(10))
assert r.status == 401, r
r = c.request("/write?db=victim&u=writer&p=wpw", body(10))
assert r.status == 204, r
# an answer to HEAD has no body whatever its Content-Length says
c.send(build_request("/query?q=SHOW+DATABASES", b"", None, "HEAD"))
while b"\r\n\r\n" not in c.buf:
    c._fill()
head, c.buf = c.buf.split(b"\r\n\r\n", 1)
print("HEAD answered:", head.decode().replace("\r\n", " | "))
r = c.request("/write?db=victim", body(10))
assert r.status == 401, r
r = c.request("/write?db=victim&u=writer&p=wpw", body(10))
assert r.status == 204, r
c.close()

# 5. gzip bodies, counted by rowgated from a copy: the refund and the later
#    correction, in either order, leave the bucket as if never sent
c = Conn(port)
gz = {"Content-Encoding": "gzip"}
for i in range(20):
    r = c.request("/write?db=victim", gzip.compress(body(500)), gz)
    assert r.status == 401, ("gzip", i, r)
for i in range(3):
    r = c.request("/write?db=victim&u=writer&p=wpw", gzip.compress(body(50)), gz)
    assert r.status == 204, ("gzip stored", i, r)
c.close()

# 6. a third database while two are in flight: the connection's response
#    tracking is lost (egress_lost), so its writes in flight stay charged,
#    and the server's answers pass untouched
c = Conn(port)
c.send(build_request("/write?db=victim", body(10)) +
       build_request("/write?db=ghost&u=admin&p=adminpw", body(10)) +
       build_request("/write?db=third&u=admin&p=adminpw", body(10)))
for i, want in enumerate((401, 404, 404)):
    r = c.read_response()
    assert r.status == want, ("three databases", i, r)
c.close()
print("ok")
PY
	rg_fail "client: $(cat "$RG_TMP/client.out")"

# stored: 4*100 + 3*10 + 3*10 + 2*10 + 3*50 points; refused: 100+10 +
# 3+3+3+2 + 20 gzip writes, and 1 more not refunded (tracking lost)
rg_settle victim || rg_fail "reconciliation did not settle"
rg_check "the victim's rows are stored ($(stored))" [ "$(stored)" -eq 630 ]
rg_check "nothing of the victim was rejected" [ "$(rg_stat victim rejected_requests)" -eq 0 ]
rg_check "admitted: the victim's 15 writes and 1 untracked ($(rg_stat victim admitted_requests))" \
	[ "$(rg_stat victim admitted_requests)" -eq 16 ]
rg_check "admitted rows: the victim's 630, gzip reconciled, and 10 ($(rg_stat victim admitted_rows))" \
	[ "$(rg_stat victim admitted_rows)" -eq 640 ]
rg_check "refunded: 110 + 11 + 20 gzip refused writes ($(rg_stat victim refunded_requests))" \
	[ "$(rg_stat victim refunded_requests)" -eq 141 ]
# a gzip write is refunded its estimate or, corrected first, its 500 rows
rg_check "refunded rows: more than 110*200 + 11*10 ($(rg_stat victim refunded_rows))" \
	[ "$(rg_stat victim refunded_rows)" -gt 22110 ]
rg_check "the 429 of small was the kernel's ($(rg_stat small rejected_requests))" \
	[ "$(rg_stat small rejected_requests)" -eq 1 -a "$(rg_stat small refunded_requests)" -eq 0 ]
rg_check "404s refunded, 3 of them pipelined behind other databases ($(rg_stat ghost refunded_requests))" \
	[ "$(rg_stat ghost refunded_requests)" -eq 13 ]
rg_check "ghost's write in flight with a third database stays charged ($(rg_stat ghost admitted_requests))" \
	[ "$(rg_stat ghost admitted_requests)" -eq 1 ]
rg_check "no debt left by the attack ($(rg_stat victim debt_rows))" \
	[ "$(rg_stat victim debt_rows)" -eq 0 ]
rg_check "one connection lost its response tracking: three databases in flight ($(egress_lost))" \
	[ "$(egress_lost)" -eq 1 ]
rg_pass
