#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, estimates that cannot be gamed (rowgate/estimate.h):
#   - a client that first teaches its database's bytes-per-row ratio bulky
#     rows (gzip writes of one 4 KB string each) cannot make a later
#     compressed write of 20,000 small rows look like fewer rows: the
#     estimate charged at admission is at least the rows it holds;
#   - a concurrent wave of 40 gzip writes of 500 rows on a new database
#     (limit 2,000 rows/s, full bucket) stores at most about one second of
#     quota plus what is in flight: 3,500 rows here (14,500 before the
#     ceilings: bench/gzip_wave.sh).
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_on_exit 'kill -9 $RG_PID; wait $RG_PID'
rg_ctl limit set poison 1000000000 >/dev/null
rg_ctl limit set wave 2000 >/dev/null

pstat() { # pstat DB FIELD: a counter of the database's line protocol
	rg_ctl --json stats "$1" | "$RG_PY" -c '
import json, sys
p = json.load(sys.stdin)["databases"][0].get("protocols", {}).get("influx", {})
print(p.get(sys.argv[1], 0))' "$2"
}

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" \
	>"$RG_TMP/poison.out" 2>&1 <<'PY' || rg_fail "poisoning client: $(tail -n 5 "$RG_TMP/poison.out")"
import gzip, json, random, subprocess, sys, time
from rgclient import Conn
port, ctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rnd = random.Random(11)
def stat(field):
    out = json.loads(subprocess.check_output([ctl, "--socket", sock, "--json", "stats", "poison"]))
    return out["databases"][0].get("protocols", {}).get("influx", {}).get(field, 0)
def settle(n):
    deadline = time.time() + 10
    while stat("reconciled_requests") + stat("undecodable_requests") < n:
        if time.time() > deadline:
            raise SystemExit("not reconciled")
        time.sleep(0.05)
c = Conn(port)
for i in range(20):  # one incompressible 4 KB string per write: ~4,000 bytes/row learned
    s = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(4096))
    r = c.request("/write?db=poison", gzip.compress(b'p,k=%d s="%s" %d\n' % (i, s.encode(), 1000 + i)),
                  {"Content-Encoding": "gzip"})
    assert r.status == 204, r
settle(20)
est0, rows0 = stat("estimated_rows"), stat("reconciled_rows")
now = int(time.time() * 1000)
big = gzip.compress(b"".join(b"p v=%d %d\n" % (j % 10, now - j) for j in range(20000)))
r = c.request("/write?db=poison&precision=ms", big, {"Content-Encoding": "gzip"})
assert r.status == 204, r
settle(21)
print(len(big), stat("estimated_rows") - est0, stat("reconciled_rows") - rows0)
PY
read -r big_bytes est rows <"$RG_TMP/poison.out"
rg_log "after poisoning: a gzip write of $rows rows in $big_bytes bytes was estimated at $est rows"
rg_check "the estimate ($est) is not below the rows ($rows)" [ "$est" -ge "$rows" ]
rg_check "and was reconciled exactly (20000 rows: $rows)" [ "$rows" -eq 20000 ]

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" >"$RG_TMP/wave.out" 2>&1 <<'PY' ||
import sys
from rgclient import gzip_wave
status, _ = gzip_wave(int(sys.argv[1]), "wave", 40, 500)
print(sum(1 for s in status if s == 204), sum(1 for s in status if s == 429))
PY
	rg_fail "wave client: $(tail -n 5 "$RG_TMP/wave.out")"
read -r admitted rejected <"$RG_TMP/wave.out"
stored=$(rg_vm_rows_wait '{db="wave"}' $((admitted * 500)))
rg_log "wave: $admitted of 40 admitted, $rejected rejected, victoria-metrics stored $stored rows"
rg_check "every write admitted or rejected ($admitted + $rejected == 40)" [ $((admitted + rejected)) -eq 40 ]
rg_check "the wave stored at most 3,500 rows ($stored)" [ "$stored" -le 3500 ]
rg_check "and at least one write ($stored)" [ "$stored" -ge 500 ]
rg_pass
