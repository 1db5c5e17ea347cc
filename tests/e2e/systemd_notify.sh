#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgated and rowgate-meta as their systemd units run them (Type=notify,
# the units' CapabilityBoundingSet), with a socket standing in for
# systemd's NOTIFY_SOCKET: READY=1 comes from the main pid once the daemon
# serves (rowgatectl answers on the admin socket, /metrics and
# rowgate-meta's /v1/health answer), STOPPING=1 on SIGTERM, exit 0; and
# rowgated's stop leaves enforcement attached (rowgatectl status).
RG_PROFILE=greptimedb # no server behind the port: only the start and stop matter
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd setpriv curl "$RG_PY"

# The unit's CapabilityBoundingSet= as setpriv's --bounding-set.
unit_caps() {
	local caps c out=-all
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$RG_ROOT/systemd/$1.service.in")
	for c in $caps; do
		c=${c#CAP_}
		out+=",+${c,,}"
	done
	echo "$out"
}

# Records each datagram as one line; on READY=1 it first runs the command
# given, so the line says whether the daemon served when it said ready.
cat >"$RG_TMP/notify.py" <<'PY'
import socket, struct, subprocess, sys
path, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
with open(out, "a", buffering=1) as f:
    print("listening", file=f)
    while True:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = next((struct.unpack("iII", d)[0] for l, t, d in anc
                    if l == socket.SOL_SOCKET and t == socket.SCM_CREDENTIALS), 0)
        line = "%s pid=%d" % (msg.decode().replace("\n", " "), pid)
        if b"READY=1" in msg.split(b"\n"):
            line += " serving=%d" % subprocess.call(cmd, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL)
        print(line, file=f)
PY
# start_listener NAME CHECK-COMMAND...: sets NOTIFY to its socket
start_listener() {
	local name=$1; shift
	NOTIFY=$RG_TMP/$name.sock
	"$RG_PY" "$RG_TMP/notify.py" "$NOTIFY" "$RG_TMP/$name.notify" "$@" &
	rg_on_exit "kill $!"
	rg_wait_for 10 grep -q listening "$RG_TMP/$name.notify" || rg_fail "no $name listener"
}

# rowgated
rg_mount_bpffs
rg_make_cgroup
RG_PORT=$(rg_free_port) || rg_fail "no free port"
METRICS_PORT=$(rg_free_port) || rg_fail "no free port"
caps=$(unit_caps rowgated)
rg_log "rowgated with the unit's capabilities: $caps"
start_listener rowgated sh -c "'$RG_ROWGATECTL' --socket '$RG_SOCK' limit show &&
	curl -sf 'http://127.0.0.1:$METRICS_PORT/metrics'"
RG_WRAP="env NOTIFY_SOCKET=$NOTIFY setpriv --bounding-set=$caps --inh-caps=-all" \
	rg_start_rowgated --metrics "127.0.0.1:$METRICS_PORT"
rg_wait_for 10 grep -q READY=1 "$RG_TMP/rowgated.notify" || rg_fail "rowgated sent no READY=1"
cat "$RG_TMP/rowgated.notify"
rg_check "rowgated: READY=1 from its main pid, once serving" \
	grep -qx "READY=1 pid=$RG_PID serving=0" "$RG_TMP/rowgated.notify"
rg_check "rowgated enforces with the unit's capabilities" rg_ctl status
kill -TERM "$RG_PID"
wait "$RG_PID"
rc=$?
RG_PID=""
cat "$RG_TMP/rowgated.notify"
rg_check "rowgated exits 0 on SIGTERM (exit $rc)" test "$rc" -eq 0
rg_check "rowgated: STOPPING=1 on SIGTERM" grep -q '^STOPPING=1 ' "$RG_TMP/rowgated.notify"
rg_check "rowgated stopped: enforcement still attached" rg_ctl status

# rowgate-meta
META_PORT=$(rg_free_port) || rg_fail "no free port"
caps=$(unit_caps rowgate-meta)
rg_log "rowgate-meta with the unit's capabilities: $caps"
start_listener meta curl -sf "http://127.0.0.1:$META_PORT/v1/health"
NOTIFY_SOCKET=$NOTIFY setpriv --bounding-set="$caps" --inh-caps=-all "$RG_BUILD/rowgate-meta" \
	--listen "127.0.0.1:$META_PORT" --state-file "$RG_TMP/meta-limits.json" \
	>"$RG_TMP/meta.log" 2>&1 &
META_PID=$!
rg_on_exit "kill -9 $META_PID"
rg_wait_for 10 grep -q READY=1 "$RG_TMP/meta.notify" || rg_fail "rowgate-meta sent no READY=1"
rg_check "rowgate-meta: READY=1 from its main pid, once serving" \
	grep -qx "READY=1 pid=$META_PID serving=0" "$RG_TMP/meta.notify"
kill -TERM "$META_PID"
wait "$META_PID"
rc=$?
cat "$RG_TMP/meta.notify"
rg_check "rowgate-meta exits 0 on SIGTERM (exit $rc)" test "$rc" -eq 0
rg_check "rowgate-meta: STOPPING=1 on SIGTERM" grep -q '^STOPPING=1 ' "$RG_TMP/meta.notify"
rg_pass
