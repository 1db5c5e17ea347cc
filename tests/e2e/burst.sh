#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (b) The reference example of docs/design.md#admission: quota 1,000 rows/s, full bucket, a
# 3,000-row batch is admitted and leaves 2,000 rows of debt; writes are then
# rejected until the debt is repaid and one token exists, at 2.001 s (±50 ms).
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set burst 1000 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" >"$RG_TMP/burst.out" <<'PY' || rg_fail "client: $(cat "$RG_TMP/burst.out")"
import sys, time
from rgclient import Conn, lines
port = int(sys.argv[1])
c = Conn(port)
body = lines(3000, series="rg_burst", tag="req=big")
t0 = time.monotonic()
r = c.request("/write?db=burst", body)
assert r.status == 204, "the 3,000-row batch was not admitted: %r" % r
c.close()
first_429 = None
first_429_s = None
rejected = 0
i = 0
while True:
    t = time.monotonic() - t0
    if t > 3.0:
        raise SystemExit("no write admitted within 3 s")
    c = Conn(port)
    r = c.request("/write?db=burst", lines(1, series="rg_burst", tag="req=p%d" % i))
    c.close()
    i += 1
    if r.status == 429:
        rejected += 1
        if first_429 is None:
            first_429, first_429_s = r, t
        continue
    assert r.status == 204, r
    print("admitted_after_s=%.4f rejected=%d retry_after=%s first_429_s=%.4f" %
          (t, rejected, first_429.header("retry-after"), first_429_s))
    break
PY
read -r out <"$RG_TMP/burst.out"
rg_log "$out"
after=$(sed -n 's/.*admitted_after_s=\([0-9.]*\).*/\1/p' <<<"$out")
retry=$(sed -n 's/.*retry_after=\([0-9]*\).*/\1/p' <<<"$out")
t429=$(sed -n 's/.*first_429_s=\([0-9.]*\).*/\1/p' <<<"$out")
rg_check "first admission at ~2.001 s (got ${after}s, window 1.951-2.051)" \
	awk -v t="$after" 'BEGIN { exit !(t >= 1.951 && t <= 2.051) }'
# Retry-After is the real wait rounded up: ceil(2.001 - time of the 429)
rg_check "Retry-After ($retry) is the remaining debt time rounded up (429 at ${t429}s)" \
	awk -v r="$retry" -v t="$t429" 'function ceil(x) { return x == int(x) ? x : int(x) + 1 }
		BEGIN { exit !(r == ceil(2.001 - t - 0.01) || r == ceil(2.001 - t + 0.01)) }'
rg_check "rejected writes in between" grep -q 'rejected=[1-9]' "$RG_TMP/burst.out"
rg_check "admitted rows counted: 3001" [ "$(rg_stat burst admitted_rows)" -eq 3001 ]
stored=$(rg_vm_rows_wait '{__name__="rg_burst_v"}' 3001)
rg_check "victoria-metrics stores the 3,001 admitted rows ($stored)" [ "$stored" -eq 3001 ]
rg_pass
