#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgate standalone demo: a local victoria-metrics guarded by rowgated with
# a demo limit of 1,000 rows/s on database "demo".  Runs until Ctrl-C, then
# removes everything it created.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${DEMO_PORT:-8428}
LIMIT=${DEMO_LIMIT:-1000}
BUILD=${BUILD:-build}
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it loads BPF programs)" >&2; exit 1; }
command -v victoria-metrics >/dev/null || { echo "demo: run 'make demo' (it installs victoria-metrics, kept from starting)" >&2; exit 1; }
[ -x "$BUILD/rowgated" ] || make -s
if ss -Htln "sport = :$PORT" | grep -q .; then
	echo "demo: port $PORT is in use; set DEMO_PORT" >&2
	exit 1
fi

work=$(mktemp -d /tmp/rowgate-demo.XXXXXX)
cg_root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
cg="$cg_root/rowgate-demo-$$"
bpffs="$work/bpffs"
sock="$work/admin.sock"
vm_pid="" rg_pid=""
cleanup() {
	set +e
	# stopping rowgated leaves enforcement attached: --cleanup removes it
	[ -n "$rg_pid" ] && kill -TERM "$rg_pid" 2>/dev/null && wait "$rg_pid" 2>/dev/null
	"$BUILD/rowgated" --cleanup --bpffs "$bpffs/rowgate" 2>/dev/null
	[ -n "$vm_pid" ] && kill "$vm_pid" 2>/dev/null && wait "$vm_pid" 2>/dev/null
	umount "$bpffs" 2>/dev/null
	rmdir "$cg" 2>/dev/null
	rm -rf "$work"
	echo "demo: cleaned up"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

mkdir -p "$cg" "$bpffs"
mount -t bpf bpf "$bpffs"
(
	echo "$BASHPID" >"$cg/cgroup.procs"
	exec victoria-metrics -httpListenAddr="127.0.0.1:$PORT" -storageDataPath="$work/vm" \
		-loggerLevel=ERROR
) >"$work/vm.log" 2>&1 &
vm_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
"$BUILD/rowgated" --foreground --port "$PORT" --cgroup "$cg" --bpffs "$bpffs/rowgate" \
	--admin-socket "$sock" --state-file "$work/limits.json" --log-level info &
rg_pid=$!
for _ in $(seq 100); do "$BUILD/rowgatectl" --socket "$sock" limit show >/dev/null 2>&1 && break; sleep 0.1; done
"$BUILD/rowgatectl" --socket "$sock" limit set demo "$LIMIT"
ctl="$(pwd)/$BUILD/rowgatectl --socket $sock"
cat <<TXT

rowgate is guarding victoria-metrics on 127.0.0.1:$PORT (cgroup $cg).
Database "demo" may ingest $LIMIT rows/s. Try:

  # one 5,000-row batch is admitted (it leaves ~4,000 rows of debt) ...
  seq 5000 | sed 's/.*/cpu,host=a v=&/' | curl -si --data-binary @- 'http://127.0.0.1:$PORT/write?db=demo'
  # ... so the next write is answered 429 by the kernel, Retry-After from the debt
  curl -si --data-binary 'cpu,host=a v=1' 'http://127.0.0.1:$PORT/write?db=demo'
  # other databases are not limited
  curl -si --data-binary 'cpu,host=a v=1' 'http://127.0.0.1:$PORT/write?db=other'

  $ctl stats
  $ctl limit set demo 20000
  $ctl sql "SHOW CREATE DATABASE demo"
  bpftool map dump pinned $bpffs/rowgate/db_stats

Ctrl-C stops the demo and removes everything it created.
TXT
wait "$rg_pid"
