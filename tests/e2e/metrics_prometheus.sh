#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A real Prometheus scrapes rowgate: two frontends (victoria-metrics guarded
# by rowgated --meta, one with --metrics :PORT, every address, the other
# with --metrics localhost:PORT, a host name) and rowgate-meta's /metrics
# (etcd store, no token for the scrape), every second.  Known line-protocol
# writes go to each frontend; Prometheus' HTTP API must then answer with
# the rows and requests the clients saw admitted (204) and rejected (429),
# per frontend and database, the cluster's limit per database as
# rowgate-meta and each rowgated hold it, quotas within it, the leader,
# rowgate_build_info with the version --version prints, and
# rowgate_enforcing 1.  Then etcd is killed: Prometheus must see
# rowgate-meta's etcd errors and its step down (no leader, the allocation
# gone from its page), and each agent's failed heartbeats, lease expiry
# and fallback to the full limit.  Bad --metrics values are refused first.
source "$(dirname "$0")/meta_lib.sh"
meta_require
rg_require_cmd prometheus etcd

# --metrics values that must not start rowgated, and why they do not
for bad in 9464 :0 :65536 127.0.0.1:port ::1:9464 '[::1]9464' nosuchhost.invalid:9464; do
	out=$("$RG_ROWGATED" --foreground --port 1 --metrics "$bad" 2>&1)
	rc=$?
	[ "$rc" = 2 ] || rg_fail "--metrics '$bad': exit $rc, want 2 (usage error): $out"
	case $out in
	*"--metrics '$bad': "*"(e.g. :9464"*) ;;
	*) rg_fail "--metrics '$bad': no reason given: $out" ;;
	esac
done
rg_log "bad --metrics values refused with their reason"

ETCD_CLIENT=$(rg_free_port) || rg_fail "no free port"
ETCD_PEER=$(rg_free_port) || rg_fail "no free port"
etcd --name rgtest --data-dir "$RG_TMP/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_CLIENT" \
	--advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
	--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
	--initial-cluster "rgtest=http://127.0.0.1:$ETCD_PEER" >"$RG_TMP/etcd.log" 2>&1 &
ETCD_PID=$!
rg_on_exit "kill -9 $ETCD_PID; wait $ETCD_PID"
ETCD=http://127.0.0.1:$ETCD_CLIENT
rg_wait_for 20 curl -sf "$ETCD/health" || rg_fail "etcd did not come up"

meta_start_allocator a --etcd "$ETCD" --etcd-prefix "/rowgate-test-$$/" \
	--heartbeat-interval 300 --lease 2000 --election-ttl 2
META_URL=$META_URL_a
rg_wait_for 10 sh -c "curl -sf '$META_URL/v1/health' | grep -q '\"role\":\"leader\"'" ||
	rg_fail "rowgate-meta never led"
meta_ctl limit set pa 50 >/dev/null || rg_fail "limit set pa"
meta_ctl limit set pb 100000 >/dev/null || rg_fail "limit set pb"

MP1=$(rg_free_port) || rg_fail "no free port"
MP2=$(rg_free_port) || rg_fail "no free port"
fe_start 1 "$META_URL" --metrics ":$MP1"
fe_start 2 "$META_URL" --metrics "localhost:$MP2"
for i in 1 2; do
	rg_wait_for 10 sh -c "'$RG_ROWGATECTL' --socket '${FE_SOCK[$i]}' --json limit show |
		grep -q '\"pb\"'" || rg_fail "frontend $i never got the cluster's limits"
done
curl -sf "http://127.0.0.1:$MP1/metrics" >/dev/null || rg_fail ":$MP1 not served on 127.0.0.1"
# :PORT is every address: IPv6 loopback too, where the host has IPv6
if [ -e /proc/net/if_inet6 ]; then
	curl -sf -g "http://[::1]:$MP1/metrics" >/dev/null || rg_fail ":$MP1 not served on [::1]"
fi
curl -sf "http://localhost:$MP2/metrics" >/dev/null || rg_fail "localhost:$MP2 not served"
# rowgate-meta's page needs no token (its API does)
curl -sf "$META_URL/metrics" | grep -q '^rowgate_meta_leader 1$' ||
	rg_fail "rowgate-meta's /metrics without the token"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$META_URL/v1/limits")" = 401 ] ||
	rg_fail "the API answers without the token"

# docs/metrics.md lists every series of both pages (the agent's too)
for url in "http://127.0.0.1:$MP1/metrics" "$META_URL/metrics"; do
	curl -sf "$url" >"$RG_TMP/page.txt" || rg_fail "no $url"
	names=$(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$RG_TMP/page.txt")
	[ -n "$names" ] || rg_fail "no series on $url"
	for name in $names; do
		grep -qF -e "\`$name\`" -e "\`$name{" "$RG_ROOT/docs/metrics.md" ||
			rg_fail "$name ($url) is not in docs/metrics.md"
	done
done

PP=$(rg_free_port) || rg_fail "no free port"
mkdir -p "$RG_TMP/prom"
cat >"$RG_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rowgated
    static_configs:
      - targets: ['127.0.0.1:$MP1', 'localhost:$MP2']
  - job_name: rowgate-meta
    static_configs:
      - targets: ['127.0.0.1:${META_URL##*:}']
EOF
prometheus --config.file="$RG_TMP/prometheus.yml" --storage.tsdb.path="$RG_TMP/prom" \
	--web.listen-address="127.0.0.1:$PP" --log.level=warn >"$RG_TMP/prometheus.log" 2>&1 &
PROM_PID=$!
rg_on_exit "kill $PROM_PID; wait $PROM_PID"
PROM=http://127.0.0.1:$PP
rg_wait_for 30 curl -sf "$PROM/-/ready" || rg_fail "prometheus did not come up"

# Known traffic: per frontend, 12 writes of 40 rows to pa (limit 50
# rows/s: the first runs into debt, most of the rest are refused) and 5 of
# 30 rows to pb (a limit far above; a frontend's quota may still refuse
# some); the clients count the answers.
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "${FE_PORT[1]}" "${FE_PORT[2]}" \
	>"$RG_TMP/sent.json" <<'PY' || rg_fail "client failed"
import json, sys
from rgclient import Conn, lines
out = {}
for fe, port in enumerate(sys.argv[1:], 1):
    for db, n, rows in (("pa", 12, 40), ("pb", 5, 30)):
        t = {"admitted_rows": 0, "rejected_rows": 0, "admitted_requests": 0,
             "rejected_requests": 0}
        conn = None
        for k in range(n):
            conn = conn or Conn(int(port))
            r = conn.request("/write?db=%s" % db,
                             lines(rows, series="rg_prom", tag="fe=%d,req=%d" % (fe, k)))
            assert r.status in (204, 429), (fe, db, k, r.status)
            what = "admitted" if r.status == 204 else "rejected"
            t[what + "_rows"] += rows
            t[what + "_requests"] += 1
            if r.header("connection", "").lower() == "close":
                conn.close()
                conn = None
        if conn:
            conn.close()
        out["%d/%s" % (fe, db)] = t
print(json.dumps(out))
PY
rg_log "sent: $(cat "$RG_TMP/sent.json")"
VERSION=$("$RG_ROWGATED" --version | awk '{ print $2 }')

# Every check is polled until it holds (a scrape a second) or 30 s pass.
cat >"$RG_TMP/check.py" <<'PY'
import json, sys, time, urllib.parse, urllib.request
prom, phase = sys.argv[1], sys.argv[2]
env = json.loads(sys.argv[3])

def query(expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.load(urllib.request.urlopen(url, timeout=5))
    assert r["status"] == "success", r
    return {tuple(sorted((k, v) for k, v in x["metric"].items() if k != "__name__")):
            float(x["value"][1]) for x in r["data"]["result"]}

def one(expr):
    v = query(expr)
    return list(v.values())[0] if len(v) == 1 else v

checks = []  # (description, expression, predicate on its value)
def want(desc, expr, pred):
    checks.append((desc, expr, pred))

fe_inst = {1: env["inst1"], 2: env["inst2"]}
if phase == "traffic":
    sent = env["sent"]
    for key, t in sent.items():
        fe, db = key.split("/")
        inst = fe_inst[int(fe)]
        for c in ("admitted_rows", "rejected_rows", "admitted_requests", "rejected_requests"):
            want("%s %s on fe%s" % (c, db, fe),
                 'rowgate_%s_total{job="rowgated",instance="%s",db="%s"}' % (c, inst, db),
                 lambda v, x=t[c]: v == x)
    for db in ("pa", "pb"):
        for c in ("admitted_rows", "rejected_rows"):
            total = sum(t[c] for k, t in sent.items() if k.endswith("/" + db))
            want("sum of %s %s" % (c, db),
                 'sum by (db) (rowgate_%s_total{job="rowgated",db="%s"})' % (c, db),
                 lambda v, x=total: v == x)
    want("traffic refused on pa", 'sum(rowgate_rejected_rows_total{db="pa"})',
         lambda v: v > 0)
    want("traffic admitted on pb", 'sum(rowgate_admitted_rows_total{db="pb"})',
         lambda v: v > 0)
    for db, lim in (("pa", 50), ("pb", 100000)):
        want("meta's limit of " + db,
             'rowgate_meta_limit_rows_per_second{job="rowgate-meta",db="%s"}' % db,
             lambda v, x=lim: v == x)
        want("each rowgated's limit of " + db,
             'count(rowgate_limit_rows_per_second{job="rowgated",db="%s"} == %d)' % (db, lim),
             lambda v: v == 2)
        want("quotas of %s within its limit" % db,
             'sum(rowgate_meta_quota_rows_per_second{db="%s"})' % db,
             lambda v, x=lim: 0 < v <= x)
        want("a quota of %s per frontend" % db,
             'count(rowgate_meta_quota_rows_per_second{db="%s"})' % db, lambda v: v == 2)
        want("each frontend's demand for " + db,
             'count(rowgate_meta_demand_rows_per_second{db="%s"})' % db, lambda v: v == 2)
    want("leader", 'rowgate_meta_leader', lambda v: v == 1)
    want("frontends live", 'rowgate_meta_frontends_live', lambda v: v == 2)
    want("heartbeats answered", 'rowgate_meta_heartbeats_total', lambda v: v > 0)
    want("no etcd error yet", 'rowgate_meta_etcd_errors_total', lambda v: v == 0)
    want("build_info of the three, at --version",
         'count(rowgate_build_info{version="%s"} == 1)' % env["version"], lambda v: v == 3)
    want("no other build_info", 'count(rowgate_build_info)', lambda v: v == 3)
    want("enforcing on both", 'count(rowgate_enforcing == 1)', lambda v: v == 2)
    want("not enforcing nowhere", 'count(rowgate_enforcing == 0) or vector(0)',
         lambda v: v == 0)
    want("agents heartbeating", 'count(rowgate_meta_agent_heartbeats_ok_total > 0)',
         lambda v: v == 2)
    want("agents on their quotas", 'sum(rowgate_meta_agent_fallback)', lambda v: v == 0)
    want("every target up", 'count(up == 1)', lambda v: v == 3)
else:  # etcd killed
    want("etcd errors counted", 'rowgate_meta_etcd_errors_total', lambda v: v > 0)
    want("stepped down", 'rowgate_meta_leader', lambda v: v == 0)
    want("no allocation shown", 'count(rowgate_meta_limit_rows_per_second) or vector(0)',
         lambda v: v == 0)
    want("failed heartbeats", 'count(rowgate_meta_agent_heartbeats_failed_total > 0)',
         lambda v: v == 2)
    want("leases expired", 'count(rowgate_meta_agent_lease_expiries_total > 0)',
         lambda v: v == 2)
    want("on the full limits", 'count(rowgate_meta_agent_fallback == 1)', lambda v: v == 2)
    want("agents unreachable", 'count(rowgate_meta_agent_unreachable == 1)',
         lambda v: v == 2)
    want("still enforcing", 'count(rowgate_enforcing == 1)', lambda v: v == 2)

deadline = time.time() + 30
pending = list(checks)
last = {}
while pending and time.time() < deadline:
    still = []
    for c in pending:
        v = one(c[1])
        last[c[0]] = v
        if not (isinstance(v, float) and c[2](v)):
            still.append(c)
    pending = still
    if pending:
        time.sleep(0.5)
for desc, expr, _ in pending:
    print("FAILED %s: %s = %s" % (desc, expr, last.get(desc)))
print("%d of %d checks hold" % (len(checks) - len(pending), len(checks)))
sys.exit(1 if pending else 0)
PY
env_json() {
	"$RG_PY" -c 'import json, sys; print(json.dumps({"inst1": sys.argv[1], "inst2": sys.argv[2],
		"version": sys.argv[3], "sent": json.load(open(sys.argv[4]))}))' \
		"127.0.0.1:$MP1" "localhost:$MP2" "$VERSION" "$RG_TMP/sent.json"
}
"$RG_PY" "$RG_TMP/check.py" "$PROM" traffic "$(env_json)" ||
	rg_fail "Prometheus disagrees with the traffic sent"

{ kill -9 "$ETCD_PID" && wait "$ETCD_PID"; } 2>/dev/null
"$RG_PY" "$RG_TMP/check.py" "$PROM" etcd-down "$(env_json)" ||
	rg_fail "Prometheus did not see etcd go"
rg_pass "Prometheus scraped both daemons: values match the traffic and etcd's loss"
