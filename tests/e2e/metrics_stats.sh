#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# /metrics and `rowgatectl --json stats` show the same counters: every
# number of the stats JSON (per database, per protocol, host-wide, UDP per
# database and host-wide) has its series in /metrics with the same value, and
# every rowgate_* sample of /metrics is a number of the stats JSON, or of
# `rowgatectl --json status` (programs, cgroup, connection table), the
# build (rowgate_build_info, as --version prints it) or the correction lag
# histogram.  The UDP
# path runs on a veth pair inside a network namespace made here, so
# its counters are there too.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd ip nsenter
NS=rgm-$$
ip netns add "$NS" || rg_skip "cannot create network namespaces"
rg_on_exit "ip netns del '$NS'"
ip -n "$NS" link add rgm0 type veth peer name rgm1 || rg_skip "cannot create a veth pair"
ip -n "$NS" link set rgm0 up
ip -n "$NS" link set rgm1 up
ip -n "$NS" link set lo up
UDP_PORT=$(rg_free_port) || rg_fail "no free port"
METRICS_PORT=$(rg_free_port) || rg_fail "no free port"
# rowgated in the namespace (nsenter keeps the mounts: bpffs, cgroup, socket)
RG_WRAP="nsenter --net=/run/netns/$NS"
rg_setup --metrics "127.0.0.1:$METRICS_PORT" --xdp-iface rgm0 --udp "$UDP_PORT=udpdb"
rg_ctl limit set mdb 50 >/dev/null || rg_fail "limit set"
rg_ctl limit set udpdb 1000 >/dev/null || rg_fail "limit set"

# admitted, rejected (debt), and a reconciled protocol (ndjson on /v1/ingest)
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY' || rg_fail "client failed"
import sys
from rgclient import Conn, lines
for n, want in [(100, 204), (7, 429)]:
    c = Conn(int(sys.argv[1]))
    r = c.request("/write?db=mdb", lines(n, series="rg_ms"))
    c.close()
    assert r.status == want, (n, r)
c = Conn(int(sys.argv[1]))
c.request("/v1/ingest?db=mdb", b'{"a":1}\n{"a":2}\n', headers={"Content-Type": "application/x-ndjson"})
c.close()
PY
rg_wait_for 10 sh -c "'$RG_ROWGATECTL' --socket '$RG_SOCK' --json stats mdb | grep -q '\"ndjson\"'" ||
	rg_fail "the ndjson request never showed in the stats"

rg_ctl --json stats >"$RG_TMP/stats.json" || rg_fail "stats"
ip netns exec "$NS" curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >"$RG_TMP/metrics.txt" ||
	rg_fail "no /metrics"
rg_ctl --json stats >"$RG_TMP/stats2.json" || rg_fail "stats"

rg_ctl --json status >"$RG_TMP/status.json" || rg_fail "status"
VERSION=$("$RG_ROWGATED" --version | awk '{ print $2 }')
"$RG_PY" - "$RG_TMP/stats.json" "$RG_TMP/stats2.json" "$RG_TMP/metrics.txt" "$RG_PORT" \
	"$RG_TMP/status.json" "$VERSION" "$RG_ROOT/docs/metrics.md" <<'PY' || rg_fail "/metrics and the stats JSON disagree"
import json, re, sys
before, after = (json.load(open(f)) for f in sys.argv[1:3])
# names kept from before the tables: JSON key -> series (after rowgate_)
DB = {"limit": "limit_rows_per_second", "quota": "quota_rows_per_second",
      "tokens": "tokens", "debt_rows": "debt_rows"}
GLOBAL = {"conns_tracked": "connections_tracked_total",
          "conns_untracked": "connections_untracked_total",
          "non_http_conns": "non_http_connections_total",
          "conns_refused": "connections_refused_total",
          "adopt_sync_ns_total": "adopt_sync_ns_total", "adopt_sync_ns_max": "adopt_sync_ns_max",
          "copies_held": "copies_held", "copy_bytes_held": "copy_bytes_held",
          "copy_bytes_held_max": "copy_bytes_held_max", "copy_memory_bytes": "copy_memory_bytes",
          "h2_goaway_pending": "h2_goaway_pending", "h2_failclosed_err": "h2_failclosed_err"}
PROTO = {"lag_ns_total": "protocol_reconcile_lag_ns_total"}
MOVING = {"tokens", "debt_rows"}  # refilled between two reads
# Shown by the stats but not by /metrics, on purpose: derived figures
# (averages, percentiles).
NOT_SERIES_PROTO = {"lag_avg_us"}
NOT_SERIES_GLOBAL = {"lag_p50_us", "lag_p99_us"}

def num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None

want = {}  # (series, labels) -> (value, value in the second read, moving)
def expect(series, labels, key, v, v2):
    want[("rowgate_" + series, tuple(sorted(labels.items())))] = (v, v2, key in MOVING)

def both(a, b, path):
    for p in path:
        b = b[p] if isinstance(b, dict) else b
    return b

for i, row in enumerate(before["databases"]):
    row2 = after["databases"][i]
    db = row["db"]
    for k, v in row.items():
        if num(v) is None:
            continue
        expect(DB.get(k, k + "_total"), {"db": db}, k, num(v), num(row2[k]))
    for proto, counters in row.get("protocols", {}).items():
        for k, v in counters.items():
            if k in NOT_SERIES_PROTO:
                continue
            expect(PROTO.get(k, "protocol_" + k + "_total"), {"db": db, "protocol": proto}, k,
                   num(v), num(row2["protocols"][proto][k]))
for k, v in before["global"].items():
    if k in NOT_SERIES_GLOBAL or num(v) is None:
        continue
    expect(GLOBAL.get(k, k + "_total"), {}, k, num(v), num(after["global"][k]))
udp = before.get("udp")
assert udp, "no udp section in the stats"
for i, row in enumerate(udp["databases"]):
    for k, v in row.items():
        if num(v) is None or k == "ports":
            continue
        expect("udp_" + k + "_total", {"db": row["db"]}, k, num(v),
               num(after["udp"]["databases"][i][k]))
for k, v in udp["global"].items():
    expect("xdp_" + k + "_total", {}, k, num(v), num(after["udp"]["global"][k]))

# Shown by /metrics but not by the stats, on purpose: what `rowgatectl
# status` shows (checked against its JSON below), the build, and the
# correction lag as a histogram (the stats show percentiles).
NOT_STATS = {"rowgate_enforcing", "rowgate_connections_adopting", "rowgate_program_attached",
             "rowgate_cgroup_present", "rowgate_connections_guarded",
             "rowgate_connection_table_size", "rowgate_connections_adopted_total",
             "rowgate_build_info", "rowgate_reconcile_lag_seconds_bucket",
             "rowgate_reconcile_lag_seconds_sum", "rowgate_reconcile_lag_seconds_count"}
got = {}
types = {}
state = {}
for line in open(sys.argv[3]):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r'(rowgate_\w+)(?:\{(.*)\})? (\d+(?:\.\d+)?)$', line.strip())
    assert m, "unparsable sample: " + line
    labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
    if m.group(1) in NOT_STATS:
        state[(m.group(1), labels)] = float(m.group(3))
        continue
    assert "." not in m.group(3), "a counter that is not whole: " + line
    got[(m.group(1), labels)] = int(m.group(3))

missing = sorted(set(want) - set(got))
extra = sorted(set(got) - set(want))
bad = []
for key in set(want) & set(got):
    v, v2, moving = want[key]
    if not moving and not min(v, v2) <= got[key] <= max(v, v2):
        bad.append((key, v, got[key]))
    assert key[0] in types, "no TYPE line for " + key[0]
for k in missing:
    print("stats shows, /metrics lacks:", k)
for k in extra:
    print("/metrics shows, stats lack:", k)
for k in bad:
    print("values differ:", k)
assert not missing and not extra and not bad
assert any(k[0] == "rowgate_protocol_reconciled_requests_total" for k in got)
assert any(k[0] == "rowgate_connections_refused_total" for k in got)
assert got.get(("rowgate_reconciled_requests_total", ())) >= 1, "the ndjson body not reconciled"
assert got.get(("rowgate_copy_memory_bytes", ())) == 256 << 20, "--copy-memory default"
assert state.get(("rowgate_enforcing", (("port", sys.argv[4]),))) == 1, state
assert any(k[0] == "rowgate_udp_admitted_datagrams_total" for k in got)
for name in set(k[0] for k in list(got) + list(state)):
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    assert name in types or base in types, "no TYPE line for " + name

# docs/metrics.md lists every series of the page
doc = open(sys.argv[7]).read()
undocumented = sorted(n for n in types if "`%s`" % n not in doc and "`%s{" % n not in doc)
assert not undocumented, "not in docs/metrics.md: %s" % undocumented

# the status JSON's figures that /metrics shows too
status = json.load(open(sys.argv[5]))
assert state[("rowgate_connection_table_size", ())] == status["connections"]["max"], status
assert state[("rowgate_connections_adopted_total", ())] == status["adoption"]["adopted_total"]
assert state[("rowgate_cgroup_present", ())] == int(status["cgroup_present"])
for prog, on in status["programs"].items():
    if isinstance(on, bool):
        assert state[("rowgate_program_attached", (("program", prog),))] == int(on), prog
assert types["rowgate_build_info"] == "gauge"
builds = [k for k in state if k[0] == "rowgate_build_info"]
assert builds == [("rowgate_build_info", (("version", sys.argv[6]),))], builds

# the correction lag: cumulative buckets, +Inf == count >= the ndjson body
lag = sorted((float("inf") if dict(k[1])["le"] == "+Inf" else float(dict(k[1])["le"]), v)
             for k, v in state.items() if k[0] == "rowgate_reconcile_lag_seconds_bucket")
assert len(lag) >= 2 and lag[-1][0] == float("inf"), lag
assert all(a[1] <= b[1] for a, b in zip(lag, lag[1:])), "buckets not cumulative: %s" % lag
assert lag[-1][1] == state[("rowgate_reconcile_lag_seconds_count", ())] >= 1, lag
assert types["rowgate_reconcile_lag_seconds"] == "histogram"
print("%d series samples agree with the stats JSON" % len(got))
PY
rg_log "$(grep -c '^rowgate_' "$RG_TMP/metrics.txt") samples in /metrics"
rg_pass
