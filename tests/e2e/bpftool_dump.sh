#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (e) The pinned maps read well with bpftool: per-database counters with
# their field names, equal to what was sent; /metrics says the same.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_cmd bpftool
METRICS_PORT=$(rg_free_port) || rg_fail "no free port"
rg_setup --metrics "127.0.0.1:$METRICS_PORT"
rg_ctl limit set dumpdb 50 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY' || rg_fail "client failed"
import sys
from rgclient import Conn, lines
sent = [(100, 204), (7, 429), (9, 429)]  # 1 s of debt, then rejected
for n, want in sent:
    c = Conn(int(sys.argv[1]))  # a small request's 429 closes the connection
    r = c.request("/write?db=dumpdb", lines(n, series="rg_dump"))
    c.close()
    assert r.status == want, (n, r)
PY
bpftool -j map dump pinned "$RG_BPFFS/db_stats" >"$RG_TMP/dump.json" || rg_fail "bpftool map dump failed"
bpftool map dump pinned "$RG_BPFFS/db_stats" | head -20
"$RG_PY" - "$RG_TMP/dump.json" <<'PY' || rg_fail "counters in bpftool's dump differ from what was sent"
import json, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    f = e["formatted"]
    if f["key"]["name"] != "dumpdb":
        continue
    v = f["value"]
    want = {"admitted_requests": 1, "admitted_rows": 100, "rejected_requests": 2,
            "rejected_rows": 16, "limit_rows_per_s": 50}
    for k, x in want.items():
        assert v[k] == x, "%s = %s, want %s" % (k, v[k], x)
    print("bpftool shows", {k: v[k] for k in want})
    break
else:
    raise SystemExit("no entry named dumpdb")
PY
rg_check "limits map shows the limit by name" \
	sh -c "bpftool map dump pinned '$RG_BPFFS/limits' | grep -q 'dumpdb'"
rg_check "buckets map shows debt by field name" \
	sh -c "bpftool map dump pinned '$RG_BPFFS/buckets' | grep -q 'debt_rows'"
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >"$RG_TMP/metrics.txt" || rg_fail "no /metrics"
for want in 'rowgate_admitted_rows_total{db="dumpdb"} 100' 'rowgate_rejected_rows_total{db="dumpdb"} 16' \
	'rowgate_rejected_requests_total{db="dumpdb"} 2' 'rowgate_limit_rows_per_second{db="dumpdb"} 50'; do
	rg_check "/metrics has: $want" grep -qF "$want" "$RG_TMP/metrics.txt"
done
rg_check "/metrics is valid exposition text (TYPE lines)" grep -q '^# TYPE rowgate_debt_rows gauge' "$RG_TMP/metrics.txt"
rg_pass
