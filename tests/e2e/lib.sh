# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Harness for rowgate's end-to-end tests: a real victoria-metrics on
# 127.0.0.1 in a cgroup of its own, rowgated guarding its port with a private
# bpffs, admin socket and state file.  Everything a test creates is removed by
# the EXIT trap, whether it passes or fails.
#
#   RG_PROFILE=victoriametrics  # how rowgate reads requests on the port
#   source "$(dirname "$0")/lib.sh"
#   rg_require_root; rg_require_cmd victoria-metrics
#   rg_setup            # VM + rowgated; sets RG_PORT, RG_CTL, VM_PID, ...
#   rg_ctl limit set db 100
#   ...; rg_pass / rg_fail "why"
#
# Exit codes: 0 pass, 1 fail, 77 skipped.
#
# The benchmarks (bench/lib.sh) share this harness: RG_KIND names their
# temporary directory and cgroup, RG_LOG_FD=2 keeps their logs off the
# markdown they print on stdout.

set -u
RG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RG_BUILD=${BUILD:-$RG_ROOT/build}
RG_ROWGATED=$RG_BUILD/rowgated
RG_ROWGATECTL=$RG_BUILD/rowgatectl
RG_PY=${PYTHON:-/usr/bin/python3}
RG_CLIENT=$RG_ROOT/tests/e2e/rgclient.py
RG_NAME=$(basename "$0" .sh)
RG_KIND=${RG_KIND:-e2e}
RG_LOG_FD=${RG_LOG_FD:-1}
RG_TMP=$(mktemp -d "/tmp/rowgate-$RG_KIND-$RG_NAME.XXXXXX")
RG_CGROUP=""
RG_BPFFS_MNT="$RG_TMP/bpffs"
RG_BPFFS="$RG_BPFFS_MNT/rowgate"
RG_SOCK="$RG_TMP/admin.sock"
RG_STATE="$RG_TMP/limits.json"
RG_PID=""
VM_PID=""
RG_PORT=""
_rg_cleanups=()

rg_log() { printf '[%s] %s\n' "$RG_NAME" "$*" >&"$RG_LOG_FD"; }
rg_pass() { rg_log "PASS${1:+: $1}"; exit 0; }
rg_fail() { rg_log "FAIL: $*"; exit 1; }
rg_skip() { rg_log "SKIP: $*"; exit 77; }
rg_check() { # rg_check "description" test-args...
	local what=$1; shift
	if "$@"; then rg_log "ok: $what"; else rg_fail "$what"; fi
}
# A condition of several commands (`rg_check "x" [ a ] && [ b ]` would
# check only [ a ]: the shell ends rg_check's arguments at &&), checked by
# its status:  [ a ] && [ b ]; rg_check_rc $? "description"
rg_check_rc() {
	if [ "$1" = 0 ]; then rg_log "ok: $2"; else rg_fail "$2"; fi
}

rg_on_exit() { _rg_cleanups+=("$1"); }

_rg_cleanup() {
	local rc=$? i
	for ((i = ${#_rg_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_rg_cleanups[$i]}" >/dev/null 2>&1 || true
	done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		rg_log "logs kept in $RG_TMP"
		for f in "$RG_TMP"/*.log; do
			[ -f "$f" ] || continue
			echo "--- $f (tail)"
			tail -n 20 "$f"
		done >&"$RG_LOG_FD"
	else
		rm -rf "$RG_TMP"
	fi
	exit "$rc"
}
trap _rg_cleanup EXIT
trap 'exit 1' INT TERM

rg_require_root() { [ "$(id -u)" -eq 0 ] || rg_skip "needs root (BPF, cgroups)"; }
rg_require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || rg_skip "needs $c (make deps installs it)"
	done
}

# The grpc-go client and server tests/grpc builds (make): GO_CLIENT and
# GO_SERVER; rg_require_grpc_go client|server... skips without them.
GO_CLIENT=$RG_BUILD/grpc/rg-grpc-go
GO_SERVER=$RG_BUILD/grpc/rg-grpc-go-server
rg_require_grpc_go() {
	local w exe
	for w in "$@"; do
		case $w in
		client) exe=$GO_CLIENT ;;
		server) exe=$GO_SERVER ;;
		*) rg_fail "rg_require_grpc_go: client or server, not '$w'" ;;
		esac
		[ -x "$exe" ] || rg_skip "needs the grpc-go $w $exe (golang-go, golang-google-grpc-dev; make)"
	done
}

# The summary of an rgclient.py load run (its JSON in file $1): admitted
# rows, rejected requests, errors, connections made.
rg_load_summary() {
	"$RG_PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))
print(s["admitted_rows"], s["rejected_requests"], len(s["errors"]), s["connects"])' "$1"
}

# An rgclient.py load run in the background until rg_finish_load: THREADS
# connections writing 10 to MAXROWS rows a request (series rg_DB) to db DB,
# for SECONDS at most.  Sets LOAD_PID.  rg_start_load DB SECONDS THREADS MAXROWS
rg_start_load() {
	_rg_load_threads=$3 _rg_load_maxrows=$4
	_rg_load_t0=$(date +%s.%N)
	"$RG_PY" "$RG_CLIENT" load --port "$RG_PORT" --db "$1" --seconds "$2" --threads "$3" \
		--min-rows 10 --max-rows "$4" --series "rg_$1" --stop-file "$RG_TMP/stop" \
		>"$RG_TMP/load.json" &
	LOAD_PID=$!
	rg_on_exit "kill $LOAD_PID"
}

# Stop that run, then check that no client saw an error, no connection
# broke and the rows admitted (ADM_ROWS) fit the allowance of a bucket of
# LIMIT rows/s over the run.  rg_finish_load LIMIT
rg_finish_load() {
	local limit=$1 t1 rej_req errors connects elapsed_ms allowed
	touch "$RG_TMP/stop"
	wait "$LOAD_PID" || rg_fail "load client failed"
	t1=$(date +%s.%N)
	read -r ADM_ROWS rej_req errors connects < <(rg_load_summary "$RG_TMP/load.json")
	elapsed_ms=$("$RG_PY" -c "print(int(($t1 - $_rg_load_t0) * 1000))")
	allowed=$((limit * elapsed_ms / 1000 + limit + _rg_load_maxrows))
	rg_log "admitted $ADM_ROWS rows in $elapsed_ms ms (bucket allows at most $allowed)," \
		"rejected $rej_req requests, $connects connections"
	rg_check "no client saw an error ($errors)" [ "$errors" -eq 0 ]
	rg_check "no connection broke: $connects connections for $_rg_load_threads clients" \
		[ "$connects" -eq "$_rg_load_threads" ]
	rg_check "admitted rows ($ADM_ROWS) within the bucket's allowance ($allowed)" [ "$ADM_ROWS" -le "$allowed" ]
}

# The differential suites' databases (e2e/server_view*): t limited to 1
# row/s and left ~20,000 s in debt by one admitted batch of 20,000 rows
# written to URL (its db=t write path), free and public unlimited in effect.
rg_view_limits() { # URL
	local code debt
	rg_ctl limit set t 1 >/dev/null || rg_fail "limit set t"
	rg_ctl limit set free 1000000000000 >/dev/null || rg_fail "limit set free"
	rg_ctl limit set public 1000000000000 >/dev/null || rg_fail "limit set public"
	"$RG_PY" -c 'import sys; sys.stdout.write("".join("seed_debt,k=%d v=1\n" % i for i in range(20000)))' \
		>"$RG_TMP/seed.lp"
	code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$RG_TMP/seed.lp" "$1")
	rg_check "the seed batch is admitted ($code)" [ "$code" = 204 ]
	debt=$(rg_stat t debt_rows)
	rg_check "t is in debt ($debt rows)" [ "$debt" -ge 19000 ]
}

# The cgroup v2 mount point (a hybrid host mounts it at /sys/fs/cgroup/unified).
rg_cgroup2_root() { awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts; }

# A TCP port nothing listens on, from a range no service of this machine uses.
# Never one it handed out before in this test, though nothing listens there
# yet (it runs in a subshell: the ports are kept in a file).
rg_free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral range
		if ! grep -qx "$p" "$RG_TMP/.ports" 2>/dev/null &&
			! ss -Htan "sport = :$p" | grep -q .; then
			echo "$p" >>"$RG_TMP/.ports"
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Wait until a command succeeds: rg_wait_for SECONDS cmd args...
rg_wait_for() {
	local deadline=$((SECONDS + $1)); shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}

rg_ctl() { "$RG_ROWGATECTL" --socket "$RG_SOCK" --bpffs "$RG_BPFFS" "$@"; }

# The grpc-go GreptimeDatabase server (tests/grpc/goserver) in the test's
# cgroup (rg_make_cgroup first) on free ports: sets GPORT (gRPC), GADMIN
# (its GET /stats) and GSRV; killed on exit.  Arguments go to the server.
rg_start_grpc_go_server() {
	GPORT=$(rg_free_port) || rg_fail "no free port"
	GADMIN=$(rg_free_port) || rg_fail "no free port"
	[ "$GPORT" != "$GADMIN" ] || rg_fail "ports collide"
	rg_run_grpc_go_server "$@"
}

# The same on the GPORT and GADMIN the test set; RG_GO_WRAP: a command
# prefix for the server and for the check that it is up (ip netns exec NS).
rg_run_grpc_go_server() {
	(
		echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
		exec ${RG_GO_WRAP:-} "$RG_BUILD/grpc/rg-grpc-go-server" -port "$GPORT" -admin-port "$GADMIN" "$@"
	) >"$RG_TMP/goserver.log" 2>&1 &
	GSRV=$!
	rg_on_exit "kill -9 $GSRV; wait $GSRV"
	rg_wait_for 20 ${RG_GO_WRAP:-} curl -sf "http://127.0.0.1:$GADMIN/stats" ||
		rg_fail "grpc-go server did not come up"
}

# The gRPC C-core GreptimeDatabase server (tests/grpc/greptime_server.py)
# in RG_CGROUP, on free ports: sets PORT (gRPC), ADMIN (its GET /stats)
# and SRV; killed on exit.  Arguments go to the server.
rg_start_greptime_py_server() {
	PORT=$(rg_free_port) || rg_fail "no free port"
	ADMIN=$(rg_free_port) || rg_fail "no free port"
	[ "$PORT" != "$ADMIN" ] || rg_fail "ports collide"
	(
		echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
		RG_GRPC_PY=$RG_BUILD/grpc/py exec "$RG_PY" "$RG_ROOT/tests/grpc/greptime_server.py" \
			--port "$PORT" --admin-port "$ADMIN" "$@"
	) >"$RG_TMP/server.log" 2>&1 &
	SRV=$!
	rg_on_exit "kill -9 $SRV; wait $SRV"
	rg_wait_for 20 curl -sf "http://127.0.0.1:$ADMIN/stats" ||
		rg_fail "the gRPC C-core server did not come up"
}

# The setup of a test of one more gRPC protocol GreptimeDB takes (OTLP,
# Arrow Flight) from a Python and a Node client: needs grpcio, the node
# module NODE_MODULE in tests/grpc/node_modules and PB2 (a module of
# build/grpc/py, exported as RG_GRPC_PY); checks that rowgated refuses
# OPTION maybe (its values are refuse and count); then the C-core server
# (rg_start_greptime_py_server) and rowgated guarding its PORT with the
# option's default.  rg_setup_grpc_protocol OPTION NODE_MODULE PB2
rg_setup_grpc_protocol() {
	local option=$1 node_module=$2 pb2=$3 out
	rg_require_root
	rg_require_cmd curl "$RG_PY"
	"$RG_PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
		rg_skip "needs python3-grpcio and python3-protobuf for $RG_PY (make deps)"
	command -v node >/dev/null 2>&1 && [ -d "$RG_ROOT/tests/grpc/node_modules/$node_module" ] ||
		rg_skip "needs node and $node_module in tests/grpc/node_modules (make deps)"
	[ -f "$RG_BUILD/grpc/py/$pb2" ] || rg_fail "build first: $RG_BUILD/grpc/py/$pb2 is missing"
	export RG_GRPC_PY=$RG_BUILD/grpc/py

	out=$("$RG_ROWGATED" "$option" maybe 2>&1) && rg_fail "$option maybe accepted"
	rg_check "$option maybe: $out" grep -q "expected refuse or count" <<<"$out"

	rg_make_cgroup
	rg_start_greptime_py_server
	rg_mount_bpffs
	RG_PORT=$PORT rg_start_rowgated --grpc "$PORT"
}

# Both GreptimeDatabase servers on guarded ports: the C-core one when
# WITH_PY is 1 (PORT, ADMIN, SRV), else a free PORT with no server behind
# it and ADMIN empty (guests lack grpcio); then the grpc-go one (GPORT,
# GADMIN, GSRV).  Usage: rg_start_grpc_servers WITH_PY
rg_start_grpc_servers() {
	if [ "$1" = 1 ]; then
		rg_start_greptime_py_server
	else
		PORT=$(rg_free_port) || rg_fail "no free port"
		ADMIN=
	fi
	rg_start_grpc_go_server
	[ "$PORT" != "$GPORT" ] && [ "$PORT" != "$GADMIN" ] || rg_fail "ports collide"
}

# The seed's limit: 3,000 rows leave 2 s of debt at 1,000 rows/s; under
# TCG a client takes about that long to start, so 100 rows/s (29 s) there.
rg_seed_limit() { if [ "${VMTEST:-0}" = 1 ]; then echo 100; else echo 1000; fi; }

# The test's own cgroup (RG_CGROUP), removed on exit.
rg_make_cgroup() {
	local root
	root=$(rg_cgroup2_root)
	[ -n "$root" ] || rg_skip "no cgroup v2 hierarchy mounted"
	# rowgate-test-* for the tests, as ever; rowgate-bench-* for figures
	RG_CGROUP="$root/rowgate-${RG_KIND/e2e/test}-$RG_NAME-$$"
	mkdir "$RG_CGROUP" || rg_fail "cannot create cgroup $RG_CGROUP"
	rg_on_exit "rmdir '$RG_CGROUP'"
}

# A network namespace (NS, in_ns) whose loopback carries MSS-sized
# segments as from a NIC without receive offload: a 1,500-byte MTU and one
# segment per GSO packet.  Removed at exit.
rg_seg_namespace() {
	NS=$1
	ip netns add "$NS" || rg_skip "cannot create a network namespace"
	rg_on_exit "ip netns del '$NS'"
	ip -n "$NS" link set lo mtu 1500 up || rg_fail "cannot bring the namespace's loopback up"
	ip -n "$NS" link set lo gso_max_segs 1 || rg_skip "this iproute2 cannot set gso_max_segs"
}
in_ns() { ip netns exec "$NS" "$@"; }

# Make that loopback lossy for the guarded port 18428 (tests/bpf/lossy.bpf.c).
rg_lossy_link() {
	[ -f "$RG_BUILD/tests/bpf/lossy.bpf.o" ] || rg_fail "build first: $RG_BUILD/tests/bpf/lossy.bpf.o is missing"
	in_ns tc qdisc add dev lo clsact || rg_skip "tc cannot add a clsact qdisc"
	in_ns tc filter add dev lo ingress bpf direct-action obj "$RG_BUILD/tests/bpf/lossy.bpf.o" sec tc ||
		rg_skip "tc cannot load a BPF object"
}

# Start victoria-metrics inside a fresh cgroup on a free loopback port.
rg_start_vm() {
	rg_make_cgroup
	RG_PORT=$(rg_free_port) || rg_fail "no free port"
	rg_start_vm_in "$RG_CGROUP" "$@"
}

# Start victoria-metrics in the existing cgroup $1 on $RG_PORT (data kept in
# ${RG_VM_DATA:-$RG_TMP/vm} across restarts); sets VM_PID.
rg_start_vm_in() {
	local cg=$1 data=${RG_VM_DATA:-$RG_TMP/vm}; shift
	mkdir -p "$data"
	# the subshell joins the cgroup, then becomes the server; connTimeout:
	# keep-alive connections stay open however long a run takes (by default
	# the server closes each after 2 min, which slow runs would count as
	# broken connections)
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		exec victoria-metrics -httpListenAddr="127.0.0.1:$RG_PORT" \
			-storageDataPath="$data" -loggerLevel=ERROR \
			-search.disableCache -retentionPeriod=100y -http.connTimeout=1h "$@"
	) >>"$RG_TMP/vm.log" 2>&1 &
	VM_PID=$!
	rg_on_exit "kill -9 $VM_PID; wait $VM_PID"
	# a restart replays its storage first
	rg_wait_for 30 curl -sf "http://127.0.0.1:$RG_PORT/health" ||
		rg_fail "victoria-metrics did not come up"
}

rg_stop_vm() {
	kill "$VM_PID" 2>/dev/null
	wait "$VM_PID" 2>/dev/null
}

# Start InfluxDB 1.x on 127.0.0.1:PORT (a free port for its RPC) inside the
# cgroup rowgated guards (RG_CGROUP must exist); sets INFLUX_PID.
# RG_INFLUX_HTTP: more lines of its [http] section (e.g. auth-enabled = true);
# RG_INFLUX_MORE: more sections ([[udp]] listeners); RG_INFLUX_NETNS: the
# network namespace it runs in, listening on all its addresses;
# RG_INFLUX_DATA: more lines of its [data] section; RG_INFLUX_LOG_LEVEL: its
# log level (warn).
rg_start_influxd() {
	local port=$1 rpc bind=127.0.0.1 in=()
	if [ -n "${RG_INFLUX_NETNS:-}" ]; then
		in=(ip netns exec "$RG_INFLUX_NETNS")
		bind= # every address of the namespace
	fi
	rpc=$(rg_free_port) || rg_fail "no free port"
	mkdir -p "$RG_TMP/influx"
	cat >"$RG_TMP/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc"
[meta]
  dir = "$RG_TMP/influx/meta"
[data]
  dir = "$RG_TMP/influx/data"
  wal-dir = "$RG_TMP/influx/wal"
  query-log-enabled = false
${RG_INFLUX_DATA:-}
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[http]
  bind-address = "$bind:$port"
  log-enabled = false
${RG_INFLUX_HTTP:-}
[logging]
  level = "${RG_INFLUX_LOG_LEVEL:-warn}"
${RG_INFLUX_MORE:-}
CONF
	(
		echo "$BASHPID" >"$RG_CGROUP/cgroup.procs"
		exec "${in[@]}" influxd -config "$RG_TMP/influxdb.conf"
	) >"$RG_TMP/influxd.log" 2>&1 &
	INFLUX_PID=$!
	rg_on_exit "kill -9 $INFLUX_PID; wait $INFLUX_PID"
	rg_wait_for 30 "${in[@]}" curl -sf "http://127.0.0.1:$port/ping" ||
		rg_fail "influxd did not come up"
}

# victoria-metrics on RG_PORT and InfluxDB 1.x on IN_PORT, both in the
# cgroup rowgated guards, and rowgated guarding both (IN_PORT read as
# influxdb): the tests that write the same bytes to the two servers.
# Arguments: more commands the test needs.
rg_setup_vm_influxd() {
	rg_require_root
	rg_require_cmd victoria-metrics influxd curl "$RG_PY" "$@"
	[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
	rg_mount_bpffs
	rg_start_vm
	IN_PORT=$(rg_free_port) || rg_fail "no free port"
	rg_start_influxd "$IN_PORT"
	rg_start_rowgated --port "$IN_PORT=influxdb"
}

# Databases in the InfluxDB on 127.0.0.1:PORT: rg_influx_create_dbs PORT DB...
rg_influx_create_dbs() {
	local port=$1 db
	shift
	for db in "$@"; do
		curl -sf -XPOST "http://127.0.0.1:$port/query" --data-urlencode "q=CREATE DATABASE $db" \
			>/dev/null || rg_fail "CREATE DATABASE $db"
	done
}

rg_mount_bpffs() {
	mkdir -p "$RG_BPFFS_MNT"
	mount -t bpf bpf "$RG_BPFFS_MNT" || rg_skip "cannot mount a bpf filesystem"
	rg_on_exit "umount '$RG_BPFFS_MNT'"
	rg_on_exit "'$RG_ROWGATED' --cleanup --bpffs '$RG_BPFFS'"
}

# Start rowgated in the foreground (background job) and wait for its socket;
# arguments are added to its command line.  RG_PROFILE: the server profile of
# RG_PORT, which every test states (greptimedb reads requests as GreptimeDB
# does, whatever server stores them).
rg_start_rowgated() {
	[ -n "${RG_PROFILE:-}" ] || rg_fail "the test does not state RG_PROFILE"
	# RG_WRAP: a command prefix, e.g. nsenter into a test's network namespace
	${RG_WRAP:-} "$RG_ROWGATED" --foreground --port "$RG_PORT=$RG_PROFILE" --cgroup "$RG_CGROUP" \
		--bpffs "$RG_BPFFS" --admin-socket "$RG_SOCK" --state-file "$RG_STATE" \
		--log-level info "$@" >>"$RG_TMP/rowgated.log" 2>&1 &
	RG_PID=$!
	rg_on_exit "kill -9 $RG_PID; wait $RG_PID"
	# the verifier's walk of the programs takes seconds under TCG, and
	# more under load (restart_load on 6.1: over 20 s)
	rg_wait_for "$([ "${VMTEST:-0}" = 1 ] && echo 120 || echo 20)" rg_ctl limit show ||
		rg_fail "rowgated did not come up"
}

rg_stop_rowgated() {
	[ -n "$RG_PID" ] || return 0
	kill -TERM "$RG_PID" 2>/dev/null
	wait "$RG_PID" 2>/dev/null
	RG_PID=""
}

rg_setup() {
	rg_require_root
	rg_require_cmd victoria-metrics curl ss "$RG_PY"
	[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"
	rg_mount_bpffs
	rg_start_vm
	rg_start_rowgated "$@"
}

# One counter of a database from rowgatectl: rg_stat DB FIELD
rg_stat() { rg_ctl --json stats "$1" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['$2'])"; }
# A host-wide counter: rg_global NAME
rg_global() { rg_ctl --json stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['global']['$1'])"; }
# The non-zero global h2_* counters and gauges, failures and
# internal_errors, on one line: what a gRPC test logs beside a result.
rg_h2_counters() {
	rg_ctl --json stats | "$RG_PY" -c "import json,sys; g=json.load(sys.stdin)['global']
print(' '.join(f'{k}={v}' for k, v in g.items() if v and (k.startswith('h2_') or 'fail' in k or k == 'internal_errors')))"
}
# Run a client until all its calls succeed, as an application makes a call
# again whose attempts were all refused: rg_until_ok NAME CALLS FN, where
# FN OUT RUN LEFT runs the client once for LEFT calls with its JSON summary
# ({"ok": N, ...}) in OUT; at most 20 runs.  Sets LEFT (0: all succeeded)
# and RUNS.
rg_until_ok() {
	local name=$1 fn=$3 out
	LEFT=$2 RUNS=0
	while [ "$LEFT" -gt 0 ] && [ "$RUNS" -lt 20 ]; do
		out=$RG_TMP/$name-$RUNS.json
		"$fn" "$out" "$RUNS" "$LEFT"
		LEFT=$((LEFT - $(rg_jget "$out" "d['ok']")))
		RUNS=$((RUNS + 1))
	done
}

# One run of a gRPC client at a limit with retries (the clients' retry
# policies on), for rg_until_ok: target $T, database $R, through the test's
# run_one OUT CMD... (it checks what one run must show).
rg_grpc_retry_go() {
	run_one "$1" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id "t$2" -db "$R" -calls "$3" \
		-rows 100 -concurrency 4
}
rg_grpc_retry_js() {
	run_one "$1" node "$JS_CLIENT" --target "$T" --id "u$2" --db "$R" --calls "$3" --rows 100 \
		--concurrency 4
}
rg_grpc_retry_stream() { # HandleRequests, 3 messages a call
	run_one "$1" env GRPC_GO_RETRY=on "$GO_CLIENT" -target "$T" -id "v$2" -db "$R" -mode stream \
		-calls "$3" -per-call 3 -rows 100 -concurrency 4
}

# Run a gRPC client with its output to OUT, bounded by RG_CLIENT_TIMEOUT
# seconds (600), and log that output, its exit status when not 0 and
# rg_h2_counters.  RG_CONNS_NEW: the connections rowgate began to track
# meanwhile.  rg_h2_client OUT CMD...
rg_h2_client() {
	local out=$1 rc=0 before
	shift
	before=$(rg_global conns_tracked)
	timeout "${RG_CLIENT_TIMEOUT:-600}" "$@" >"$out" 2>&1 || rc=$?
	RG_CONNS_NEW=$(($(rg_global conns_tracked) - before))
	rg_log "$(basename "$out"): $(cat "$out")$([ "$rc" = 0 ] || echo " (exit $rc$([ "$rc" != 124 ] || echo ", timed out"))") [$(rg_h2_counters)]"
}
# A Python expression over the JSON object d in FILE: rg_jget FILE EXPR
rg_jget() { "$RG_PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# Whether got is want, logging both when not: rg_is GOT WANT WHAT
rg_is() { [ "$1" = "$2" ] || { rg_log "  $3: got '$1', want '$2'"; return 1; }; }
# Wait until DB's admitted rows are ROWS: rg_wait_charged DB ROWS
rg_wait_charged() {
	rg_wait_for 10 eval "[ \"\$(rg_stat $1 admitted_rows)\" = $2 ]" ||
		{ rg_log "  $1: admitted_rows $(rg_stat "$1" admitted_rows), want $2"; return 1; }
}

# Wait until every body of DB that rowgated was sent is counted (or
# counted lost): rg_settle DB
rg_settle() {
	local deadline=$((SECONDS + 10))
	until rg_ctl --json stats "$1" | "$RG_PY" -c '
import json, sys
d = json.load(sys.stdin)["databases"][0]
n = [0, 0]
for p in d.get("protocols", {}).values():
    n[0] += p.get("admitted_requests", 0) + p.get("rejected_requests", 0)
    n[1] += p.get("reconciled_requests", 0) + p.get("undecodable_requests", 0) + p.get("unreconciled_requests", 0)
sys.exit(0 if n[1] >= n[0] else 1)'; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}

# Rows (samples) victoria-metrics stores for the series matching SELECTOR
# (RG_VM_NS: victoria-metrics listens in that network namespace).
rg_vm_rows() {
	${RG_VM_NS:+ip netns exec "$RG_VM_NS"} curl -sf "http://127.0.0.1:$RG_PORT/internal/force_flush" >/dev/null
	${RG_VM_NS:+ip netns exec "$RG_VM_NS"} curl -sf "http://127.0.0.1:$RG_PORT/api/v1/export" --data-urlencode "match[]=$1" |
		"$RG_PY" -c 'import json,sys; print(sum(len(json.loads(l)["values"]) for l in sys.stdin if l.strip()))'
}

# CPU time (user + system) of a process in clock ticks.
rg_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Wait until victoria-metrics stores WANT rows for SELECTOR (its ingestion
# buffers make fresh rows visible within a few seconds); prints the count.
rg_vm_rows_wait() {
	local want=$2 got deadline=$((SECONDS + 15))
	while :; do
		got=$(rg_vm_rows "$1")
		if [ "$got" = "$want" ] || [ $SECONDS -ge $deadline ]; then
			echo "$got"
			return 0
		fi
		sleep 0.2
	done
}
