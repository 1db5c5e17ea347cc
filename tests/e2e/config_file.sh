#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgated's config file (--config, user/rowgated/options.c): a bad key or
# value is an error naming its line (exit 2, nothing attached); the
# annotated example is valid; the file's options apply and the command line
# overrides them; SIGHUP applies a route and a /metrics address live, logs
# a change that waits for a restart, and keeps everything as it was when
# the new file has an error.  Against a real victoria-metrics: a route
# `/write=none` in the file lets writes pass unlimited; removed on SIGHUP,
# the same writes are limited.
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl ss "$RG_PY"
CONF=$RG_TMP/rowgated.conf

# --- errors name the line; nothing starts
check() { "$RG_ROWGATED" --config "$CONF" --check-config 2>&1; }
printf '# a comment\n[rowgated]\nport = 4000\nbogus = 1\n' >"$CONF"
out=$(check) && rg_fail "an unknown key passed: $out"
rg_check "unknown key on line 4: $out" grep -q "rowgated.conf:4: unknown key 'bogus'" <<<"$out"
printf 'log-level = info\n\nmax-conns = 0\n' >"$CONF"
out=$(check) && rg_fail "max-conns = 0 passed: $out"
rg_check "bad value on line 3: $out" grep -q "rowgated.conf:3: max-conns = 0: expected a whole number" <<<"$out"
printf 'cleanup = true\n' >"$CONF"
out=$(check) && rg_fail "cleanup in the file passed"
rg_check "command-line-only key refused: $out" grep -q "rowgated.conf:1: 'cleanup' can only be given on the command line" <<<"$out"
printf '[other]\nport = 4000\n' >"$CONF"
out=$(check) && rg_fail "an unknown section passed"
rg_check "unknown section on line 2: $out" grep -q "rowgated.conf:2: unknown section \[other\]" <<<"$out"
out=$("$RG_ROWGATED" --config "$RG_TMP/missing.conf" --check-config 2>&1) && rg_fail "a missing --config passed"
rg_check "a missing --config is an error: $out" grep -q "missing.conf: No such file" <<<"$out"
rg_check "the annotated example is valid" "$RG_ROWGATED" --config "$RG_ROOT/examples/rowgated.conf" --check-config

# --- a daemon from the file; the command line overrides it
rg_mount_bpffs
rg_start_vm
M1=$(rg_free_port) || rg_fail "no free port"
cat >"$CONF" <<EOF
[rowgated]
# the command line's --log-level info overrides this
log-level = error
metrics = 127.0.0.1:$M1
route = /write=none
EOF
rg_start_rowgated --config "$CONF"
rg_check "info lines logged: the command line's --log-level overrides the file's" \
	grep -q "guarding 1 port" "$RG_TMP/rowgated.log"
rg_check "/metrics on the file's address" curl -sf "http://127.0.0.1:$M1/metrics" -o /dev/null
rg_ctl limit set cfg 10 >/dev/null || rg_fail "limit set"

body=$("$RG_PY" -c "print(''.join('cfg v=%d %d\n' % (i, 1700000000000 + i) for i in range(200)), end='')")
write() { curl -s -o /dev/null -w '%{http_code}\n' --data-binary "$body" "http://127.0.0.1:$RG_PORT/write?db=cfg"; }
codes=$(write; write; write)
rg_check "route /write=none from the file: 3 writes of 200 rows at 10 rows/s all pass ($(echo $codes))" \
	[ "$(grep -c 204 <<<"$codes")" = 3 ]

# --- SIGHUP: the route removed, /metrics moved, max-conns waits
M2=$(rg_free_port) || rg_fail "no free port"
cat >"$CONF" <<EOF
[rowgated]
log-level = error
metrics = 127.0.0.1:$M2
max-conns = 1000
EOF
kill -HUP "$RG_PID"
rg_wait_for 10 grep -q "SIGHUP: 0 route(s) applied" "$RG_TMP/rowgated.log" ||
	rg_fail "SIGHUP did not apply the routes: $(tail -5 "$RG_TMP/rowgated.log")"
rg_check "/metrics moved to the new address" rg_wait_for 10 curl -sf "http://127.0.0.1:$M2/metrics" -o /dev/null
closed() { ! curl -sf "http://127.0.0.1:$1/metrics" -o /dev/null; }
rg_check "... and left the old one" closed "$M1"
rg_check "max-conns logged as waiting for a restart" \
	grep -q "SIGHUP: max-conns, conns-full, adopt-grace or grpc-parked-streams changed: it takes effect when rowgated restarts" "$RG_TMP/rowgated.log"
codes=$(write; write; write)
rg_check "without the route the same writes are limited ($(echo $codes))" grep -q 429 <<<"$codes"

# --- SIGHUP with an error: nothing changes, rowgated goes on
printf '[rowgated]\nmetrics = nowhere\nroute = /write=none\n' >"$CONF"
kill -HUP "$RG_PID"
rg_wait_for 10 grep -q "SIGHUP: the configuration has errors" "$RG_TMP/rowgated.log" ||
	rg_fail "a bad file on SIGHUP was not reported: $(tail -5 "$RG_TMP/rowgated.log")"
rg_check "the error names the line" grep -q "rowgated.conf:2: metrics = nowhere" "$RG_TMP/rowgated.log"
rg_check "rowgated still runs" kill -0 "$RG_PID"
rg_check "/metrics still on the last good address" curl -sf "http://127.0.0.1:$M2/metrics" -o /dev/null
codes=$(write; write)
rg_check "the route of the bad file was not applied ($(echo $codes))" [ "$(grep -c 429 <<<"$codes")" = 2 ]
rg_pass
