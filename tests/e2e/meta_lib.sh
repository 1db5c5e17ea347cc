# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Distributed-mode harness (sourced, not run): several frontends on this
# machine, each a victoria-metrics in its own cgroup on its own loopback port,
# guarded by its own rowgated (own bpffs mount, admin socket, state file)
# started with --meta; rowgate-meta replicas; a paced load generator and a
# sampler of rowgate's counters.  Built on lib.sh: everything is registered
# with rg_on_exit and removed by its EXIT trap, pass or fail.
#
#   source "$(dirname "$0")/meta_lib.sh"
#   meta_require
#   meta_start_allocator NAME [rowgate-meta options]    # sets META_URL_<NAME>
#   fe_start 1 "$META_URL"                              # sets FE_PORT[1], FE_SOCK[1]
#   meta_ctl limit set db 300
#
# Credentials: by default one token for both (--token-file $META_TOKEN_FILE,
# the legacy form); a test that splits them sets META_AUTH_ARGS (the
# allocator's token options), META_FE_AUTH_ARGS (rowgated's) and
# META_CTL_AUTH_ARGS (rowgatectl's) before starting anything; the TLS
# options of frontends and rowgatectl go there too.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RG_META=$RG_BUILD/rowgate-meta
META_TOKEN_FILE=$RG_TMP/token
META_AGENT_TOKEN_FILE=$RG_TMP/agent.token
META_ADMIN_TOKEN_FILE=$RG_TMP/admin.token
META_AUTH_ARGS=(--token-file "$META_TOKEN_FILE")
META_FE_AUTH_ARGS=(--token-file "$META_TOKEN_FILE")
META_CTL_AUTH_ARGS=(--token-file "$META_TOKEN_FILE")
META_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -a FE_PORT FE_SOCK FE_PID FE_VM_PID
META_URL=""
PACE_STARTS=()

meta_require() {
	rg_require_root
	rg_require_cmd victoria-metrics curl ss "$RG_PY"
	[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
	[ -x "$RG_META" ] || rg_fail "build first: $RG_META is missing"
	meta_new_tokens
}

# Random tokens into the three token files.
meta_new_tokens() {
	local f
	for f in "$META_TOKEN_FILE" "$META_AGENT_TOKEN_FILE" "$META_ADMIN_TOKEN_FILE"; do
		head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$f"
	done
}

meta_ctl() { "$RG_ROWGATECTL" --meta "$META_URL" "${META_CTL_AUTH_ARGS[@]}" "$@"; }
fe_ctl() { local i=$1; shift; "$RG_ROWGATECTL" --socket "${FE_SOCK[$i]}" "$@"; }

# meta_start_allocator NAME [options]: one rowgate-meta on a free port, with
# META_AUTH_ARGS.  Prints nothing; sets META_PID_<NAME> and META_URL_<NAME>
# (https:// when META_SCHEME=https; then META_CURL_ARGS verify it).
META_SCHEME=http
META_CURL_ARGS=()
meta_start_allocator() {
	local name=$1 port pid url; shift
	port=$(rg_free_port) || rg_fail "no free port"
	url=$META_SCHEME://127.0.0.1:$port
	"$RG_META" --listen "127.0.0.1:$port" --advertise "$url" "${META_AUTH_ARGS[@]}" \
		--log-level info "$@" >>"$RG_TMP/meta-$name.log" 2>&1 &
	pid=$!
	rg_on_exit "kill -9 $pid; wait $pid"
	printf -v "META_PID_$name" '%s' "$pid"
	printf -v "META_URL_$name" '%s' "$url"
	rg_wait_for 10 curl -sf "${META_CURL_ARGS[@]}" "$url/v1/health" ||
		rg_fail "rowgate-meta $name did not come up"
}

# meta_start_etcd [etcd options]: a one-member etcd on loopback ports, its
# data in $RG_TMP (one per call); sets ETCD (client URL, http:// unless the options make it
# https) and ETCD_PID.  ETCD_SCHEME=https and ETCD_CURL_ARGS for TLS.
ETCD_SCHEME=http
ETCD_CURL_ARGS=()
meta_start_etcd() {
	local client peer
	rg_require_cmd etcd
	client=$(rg_free_port) || rg_fail "no free port"
	peer=$(rg_free_port) || rg_fail "no free port"
	ETCD=$ETCD_SCHEME://127.0.0.1:$client
	etcd --name rgtest --data-dir "$RG_TMP/etcd-$client" \
		--listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "rgtest=http://127.0.0.1:$peer" "$@" >"$RG_TMP/etcd-$client.log" 2>&1 &
	ETCD_PID=$!
	rg_on_exit "kill -9 $ETCD_PID; wait $ETCD_PID"
	rg_wait_for 20 curl -sf "${ETCD_CURL_ARGS[@]}" "$ETCD/health" ||
		rg_fail "etcd did not come up"
}

# meta_etcd_get KEY [curl args]: the value stored at KEY, "" when absent.
meta_etcd_get() {
	local key=$1; shift
	curl -sf "${ETCD_CURL_ARGS[@]}" "$@" "$ETCD/v3/kv/range" \
		-d "{\"key\":\"$(printf '%s' "$key" | base64 -w0)\"}" |
		"$RG_PY" -c 'import json,sys,base64; k=json.load(sys.stdin).get("kvs"); print(base64.b64decode(k[0]["value"]).decode() if k else "")'
}

# meta_health URL FIELD
meta_health() {
	curl -sf "${META_CURL_ARGS[@]}" "$1/v1/health" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# fe_start I META_URLS [rowgated options]: frontend I (victoria-metrics +
# rowgated --meta --node-id feI).
fe_start() {
	local i=$1 urls=$2 root cg port mnt dir; shift 2
	root=$(rg_cgroup2_root)
	[ -n "$root" ] || rg_skip "no cgroup v2 hierarchy mounted"
	dir=$RG_TMP/fe$i
	mkdir -p "$dir/vm" "$dir/bpffs"
	cg="$root/rowgate-test-$RG_NAME-$$-fe$i"
	mkdir "$cg" || rg_fail "cannot create cgroup $cg"
	rg_on_exit "rmdir '$cg'"
	port=$(rg_free_port) || rg_fail "no free port"
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		exec victoria-metrics -httpListenAddr="127.0.0.1:$port" \
			-storageDataPath="$dir/vm" -loggerLevel=ERROR \
			-search.disableCache -retentionPeriod=100y
	) >"$RG_TMP/vm$i.log" 2>&1 &
	FE_VM_PID[$i]=$!
	rg_on_exit "kill -9 ${FE_VM_PID[$i]}; wait ${FE_VM_PID[$i]}"
	rg_wait_for 20 curl -sf "http://127.0.0.1:$port/health" ||
		rg_fail "victoria-metrics $i did not come up"
	mnt=$dir/bpffs
	mount -t bpf bpf "$mnt" || rg_skip "cannot mount a bpf filesystem"
	rg_on_exit "umount '$mnt'"
	rg_on_exit "'$RG_ROWGATED' --cleanup --bpffs '$mnt/rowgate'"
	FE_PORT[$i]=$port
	FE_SOCK[$i]=$dir/admin.sock
	"$RG_ROWGATED" --foreground --port "$port" --cgroup "$cg" --bpffs "$mnt/rowgate" \
		--admin-socket "${FE_SOCK[$i]}" --state-file "$dir/limits.json" \
		--meta "$urls" --node-id "fe$i" "${META_FE_AUTH_ARGS[@]}" \
		--log-level info "$@" >>"$RG_TMP/rowgated$i.log" 2>&1 &
	FE_PID[$i]=$!
	rg_on_exit "kill -9 ${FE_PID[$i]}; wait ${FE_PID[$i]}"
	rg_wait_for 20 fe_ctl "$i" limit show || rg_fail "rowgated $i did not come up"
}

# Write the load generator and the sampler once.
meta_tools() {
	cat >"$RG_TMP/pace.py" <<'PY'
"""Open-loop paced writer: RATE rows/s to one frontend in batches of BATCH
rows over THREADS keep-alive connections for SECONDS; unique series per
request (tag req) so victoria-metrics stores every admitted row; rows carry
the send time as timestamp.  Prints a JSON summary."""
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from rgclient import Conn, lines
port, db, rate, seconds, threads, batch, tag = (int(sys.argv[2]), sys.argv[3], float(sys.argv[4]),
    float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8])
lock = threading.Lock()
out = {"admitted_rows": 0, "rejected_rows": 0, "errors": 0, "other": 0}
t0 = time.time(); end = t0 + seconds
if len(sys.argv) > 9:  # the monotonic start, for the test's windows
    open(sys.argv[9], "w").write("%.3f\n" % time.monotonic())
def worker(tid):
    conn = None; seq = 0
    gap = batch * threads / rate
    nxt = t0 + gap * tid / threads
    while True:
        now = time.time()
        if now >= end: break
        if nxt > now: time.sleep(nxt - now)
        nxt = max(nxt + gap, time.time() - 1.0)  # never catch up more than 1 s
        rid = "%s-%dr%d" % (tag, tid, seq); seq += 1
        try:
            if conn is None: conn = Conn(port)
            r = conn.request("/write?db=%s" % db, lines(batch, series="rg_meta", tag="fe=%s,req=%s" % (tag, rid)))
            if r.header("connection", "").lower() == "close":
                conn.close(); conn = None
        except OSError:
            with lock: out["errors"] += 1
            if conn: conn.close()
            conn = None; continue
        with lock:
            if r.status == 204: out["admitted_rows"] += batch
            elif r.status == 429: out["rejected_rows"] += batch
            else: out["other"] += 1
ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps(out))
PY
	cat >"$RG_TMP/sample.py" <<'PY'
"""Every PERIOD s until killed: for each admin socket, the db's admitted
rows, debt and tokens (rowgatectl stats), one line per sample:
t_monotonic fe admitted_rows debt_rows tokens quota"""
import json, subprocess, sys, time
ctl, db, period = sys.argv[1], sys.argv[2], float(sys.argv[3])
socks = sys.argv[4:]
while True:
    t = time.monotonic()
    for i, s in enumerate(socks, 1):
        try:
            a = time.monotonic()
            o = json.loads(subprocess.run([ctl, "--socket", s, "--json", "stats", db],
                                          capture_output=True, timeout=5).stdout)
            ts = (a + time.monotonic()) / 2  # each frontend at its own read time
            d = o["databases"][0]
            print("%.3f %d %d %d %d %d" % (ts, i, int(d["admitted_rows"]), int(d.get("debt_rows", 0)),
                  int(d.get("tokens", 0)), int(d.get("quota", 0))), flush=True)
        except Exception as e:
            print("# %s" % e, flush=True)
    time.sleep(max(0.0, period - (time.monotonic() - t)))
PY
	cat >"$RG_TMP/windows.py" <<'PY'
"""Cluster-wide admitted rows/s per window from the sampler's lines.
args: samples_file t_start t_end window_s
prints one line per window: start(rel) raw_rate net_rate
raw = admitted rows in the window / window; net = the same net of the change
of every bucket's level (tokens - debt), i.e. what the buckets granted free
of where batches fall relative to the window edges (bench/sim/README.md)."""
import sys, bisect
f, t0, t1, w = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
by = {}
for line in open(f):
    if line.startswith("#"): continue
    t, fe, adm, debt, tok, q = line.split()
    by.setdefault(int(fe), []).append((float(t), int(adm), int(tok) - int(debt)))
def at(fe, t):
    s = by[fe]; i = bisect.bisect_left([x[0] for x in s], t)
    i = min(max(i, 0), len(s) - 1)
    return s[i]
t = t0
while t + w <= t1 + 1e-6:
    raw = net = 0.0
    for fe in by:
        # each frontend over the span between its own samples: a loaded
        # host delays samples, and dividing by w would misread that as rate
        a, b = at(fe, t), at(fe, t + w)
        span = b[0] - a[0]
        if span <= 0: continue
        raw += (b[1] - a[1]) / span
        net += ((b[1] - a[1]) + (b[2] - a[2])) / span
    print("%.1f %.1f %.1f" % (t - t0, raw, net))
    t += w
PY
}

# meta_sampler_start DB PERIOD: sample every frontend into $RG_TMP/samples.
meta_sampler_start() {
	local socks=() i
	for i in "${!FE_SOCK[@]}"; do socks+=("${FE_SOCK[$i]}"); done
	"$RG_PY" "$RG_TMP/sample.py" "$RG_ROWGATECTL" "$1" "$2" "${socks[@]}" \
		>"$RG_TMP/samples" 2>>"$RG_TMP/sampler.log" &
	META_SAMPLER_PID=$!
	rg_on_exit "kill $META_SAMPLER_PID"
}

mono() { "$RG_PY" -c 'import time; print("%.3f" % time.monotonic())'; }

# pace FE DB RATE SECONDS THREADS BATCH: background paced load; output in
# $RG_TMP/pace-FE-N.json, its monotonic start appended to $RG_TMP/pace-starts.
# Sets PACE_PID.
pace() {
	local n=$RANDOM out
	out=$RG_TMP/pace-$1-$n.json
	"$RG_PY" "$RG_TMP/pace.py" "$META_E2E_DIR" "${FE_PORT[$1]}" "$2" "$3" "$4" "$5" "$6" \
		"fe$1" "$RG_TMP/pace-start-$n" >"$out" 2>>"$RG_TMP/pace.log" &
	PACE_PID=$!
	PACE_STARTS+=("$RG_TMP/pace-start-$n")
	rg_on_exit "kill $PACE_PID"
}

# After the pacers of one phase ended: PACE_T0 = the latest start (all
# running), PACE_T1 = the earliest start + SECONDS (all still running).
pace_span() {
	read -r PACE_T0 PACE_T1 < <(cat "${PACE_STARTS[@]}" |
		awk -v d="$1" 'NR == 1 || $1 > hi { hi = $1 } NR == 1 || $1 < lo { lo = $1 }
			END { printf "%.3f %.3f\n", hi, lo + d }')
	PACE_STARTS=()
}

# Rows victoria-metrics of frontend I stores per second of timestamp:
# lines "unix_second rows".
vm_rows_per_second() {
	local port=${FE_PORT[$1]}
	curl -sf "http://127.0.0.1:$port/internal/force_flush" >/dev/null
	curl -sf "http://127.0.0.1:$port/api/v1/export" --data-urlencode 'match[]={__name__="rg_meta_v"}' |
		"$RG_PY" -c '
import json, sys, collections
c = collections.Counter()
for l in sys.stdin:
    if l.strip():
        for ts in json.loads(l)["timestamps"]: c[ts // 1000] += 1
for s in sorted(c): print(s, c[s])'
}
