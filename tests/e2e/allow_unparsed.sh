#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Non-HTTP bytes pass only on a port the operator marks: with
# --allow-unparsed the server answers them itself (Go's own 400) and the
# connection is counted in non_http_conns; bad --port/--allow-unparsed
# arguments are refused with a clear error.
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
[ -x "$RG_ROWGATED" ] || rg_fail "build first: $RG_ROWGATED is missing"

for args in "--port 8428=mysql" "--port 0=influxdb" "--port 8428=influxdb --port 8428=loki" \
	"--port 8428 --allow-unparsed 9999" "--allow-unparsed x"; do
	# shellcheck disable=SC2086
	if out=$("$RG_ROWGATED" $args --foreground --bpffs "$RG_TMP/none" 2>&1 </dev/null); then
		rg_fail "'$args' was accepted"
	fi
	out=$(printf '%s\n' "$out" | head -n 1)
	case "$out" in
	*"--port"* | *"--allow-unparsed"*) rg_log "refused '$args': $out" ;;
	*) rg_fail "'$args': unclear error: $out" ;;
	esac
done

rg_mount_bpffs
rg_start_vm
rg_start_rowgated --allow-unparsed "$RG_PORT"
rg_ctl limit set u 1 >/dev/null || rg_fail "limit set"

reply=$("$RG_PY" - "$RG_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"\x16\x03\x01\x00\x05hello\r\n\r\n")
got = b""
while True:
    c = s.recv(4096)
    if not c:
        break
    got += c
print(got[:200].decode("latin-1").replace("\r\n", " | "))
PY
)
rg_log "reply: $reply"
case "$reply" in
"HTTP/1.1 400"*) ;;
*) rg_fail "the server did not answer the non-HTTP bytes itself" ;;
esac
case "$reply" in *rowgate*) rg_fail "rowgate answered on an --allow-unparsed port" ;; esac
g=$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; g=json.load(sys.stdin)["global"]; print(g["non_http_conns"], g["failclosed_not_http"])')
rg_check "counted as passed non-HTTP, not as fail-closed ($g)" [ "$g" = "1 0" ]
rg_pass
