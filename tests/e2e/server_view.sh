#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgate reads a request as the guarded server does: every case's raw bytes
# go through rowgate to a real victoria-metrics (profile victoriametrics) and
# a real InfluxDB 1.x (profile influxdb) while database `t` is deep in debt,
# and what the server stored per database must equal what rowgate charged,
# unless rowgate itself refused the request (its 429 or 400) and the server
# stored nothing.  Hand-written cases for each way a reading can differ
# (method, path, absolute form, escapes, `;` pairs, duplicates, leading
# CRLF, HTTP/1.0 framing, GreptimeDB's header on a Go server, a `db` tag in
# the body naming t) and generated combinations; server_view.py has the
# cases and the comparison.  No case may store a row in t.
RG_PROFILE=victoriametrics # on RG_PORT; influxd's port is guarded as influxdb
source "$(dirname "$0")/lib.sh"
rg_setup_vm_influxd ss
rg_influx_create_dbs "$IN_PORT" t free
rg_view_limits "http://127.0.0.1:$RG_PORT/write?db=t"

# the framing cases (and on victoria-metrics those with a db tag in the
# body) are also sent split in two at every byte offset (every 41st under
# TCG: 280 s at every 23rd on 6.1, within one VMTEST_TIMEOUT with the rest)
stride=$([ "${VMTEST:-0}" = 1 ] && echo 41 || echo 1)
ok=0
for server in vm influxdb; do
	port=$RG_PORT
	[ "$server" = influxdb ] && port=$IN_PORT
	rg_log "---- $server ----"
	if "$RG_PY" "$RG_ROOT/tests/e2e/server_view.py" --server "$server" --port "$port" \
		--ctl "$RG_ROWGATECTL" --socket "$RG_SOCK" --generated "${RG_VIEW_GENERATED:-60}" \
		--splits --split-stride "${RG_VIEW_SPLIT_STRIDE:-$stride}" \
		>"$RG_TMP/view-$server.out" 2>&1; then
		cat "$RG_TMP/view-$server.out"
		rg_log "$server: $(tail -n 1 "$RG_TMP/view-$server.out")"
	else
		cat "$RG_TMP/view-$server.out"
		ok=1
	fi
done
[ "$ok" -eq 0 ] || rg_fail "rowgate and the server read some requests differently"
rg_ctl --json stats | "$RG_PY" -c 'import json,sys; g=json.load(sys.stdin)["global"]; print(" ".join("%s=%d" % (k, v) for k, v in sorted(g.items()) if k.startswith("failclosed")))' |
	while read -r l; do rg_log "fail-closed counters: $l"; done
rg_pass
