#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgate-meta's split credentials, with etcd and one frontend: the agent
# token (what an ingest host holds) heartbeats and reads but cannot change a
# limit (403 with a clear message; the limit stays as it was in etcd and in
# rowgated's maps); the admin token can, and also passes where the agent's
# does; no token is 401.  Redirects never carry a token to an origin that is
# not one of the client's --meta URLs: a fake replica answers 307 to a
# listener elsewhere, which must never see the Authorization header.
source "$(dirname "$0")/meta_lib.sh"
meta_require
DB=authdb
PREFIX=/rowgate-auth-$$/
HB_MS=200

META_AUTH_ARGS=(--agent-token-file "$META_AGENT_TOKEN_FILE" --admin-token-file "$META_ADMIN_TOKEN_FILE")
META_FE_AUTH_ARGS=(--token-file "$META_AGENT_TOKEN_FILE")
META_CTL_AUTH_ARGS=(--token-file "$META_ADMIN_TOKEN_FILE")
agent="Authorization: Bearer $(cat "$META_AGENT_TOKEN_FILE")"
admin="Authorization: Bearer $(cat "$META_ADMIN_TOKEN_FILE")"

# the command line refuses half a split and a mix with the legacy form
out=$("$RG_META" --agent-token-file "$META_AGENT_TOKEN_FILE" 2>&1); rc=$?
rg_check "an agent token without an admin token is refused (rc $rc: $out)" \
	eval '[ "$rc" = 2 ] && grep -q "needs --admin-token-file" <<<"$out"'
out=$("$RG_META" --token-file "$META_TOKEN_FILE" --admin-token-file "$META_ADMIN_TOKEN_FILE" 2>&1); rc=$?
rg_check "--token-file with the split options is refused (rc $rc: $out)" \
	eval '[ "$rc" = 2 ] && grep -q "legacy form" <<<"$out"'

meta_start_etcd
meta_start_allocator a --etcd "$ETCD" --etcd-prefix "$PREFIX" --heartbeat-interval "$HB_MS" \
	--learning 0 --election-ttl 2
META_URL=$META_URL_a
rg_wait_for 10 eval '[ "$(meta_health "$META_URL" role)" = leader ]' || rg_fail "no leader"

meta_ctl limit set "$DB" 500 >/dev/null || rg_fail "the admin token cannot set a limit"
fe_start 1 "$META_URL"
fe_limit() { fe_ctl 1 --json stats "$DB" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['limit'])"; }
fe_heartbeats() { fe_ctl 1 --json stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['meta']['heartbeats_ok'])"; }
rg_wait_for 10 eval '[ "$(fe_limit)" = 500 ]' || rg_fail "the frontend did not get the limit"
rg_log "the frontend heartbeats with the agent token and enforces $DB = 500"

# code METHOD PATH [curl args]: the HTTP status
code() {
	local method=$1 path=$2; shift 2
	curl -s -o "$RG_TMP/reply" -w '%{http_code}' -X "$method" "$@" "$META_URL$path"
}

# the ingest host's token cannot change a limit, through rowgatectl or not
out=$("$RG_ROWGATECTL" --meta "$META_URL" --token-file "$META_AGENT_TOKEN_FILE" \
	limit set "$DB" 7 2>&1); rc=$?
rg_check "rowgatectl with the agent token fails (rc $rc: $out)" \
	eval '[ "$rc" = 1 ] && grep -q "403" <<<"$out" && grep -q "admin token" <<<"$out"'
c=$(code PUT "/v1/limits/$DB" -H "$agent" --data-binary '{"limit":"7"}')
rg_check "PUT with the agent token: 403 ($c $(cat "$RG_TMP/reply"))" \
	eval '[ "$c" = 403 ] && grep -q "needs the admin token" "$RG_TMP/reply"'
c=$(code DELETE "/v1/limits/$DB" -H "$agent")
rg_check "DELETE with the agent token: 403 ($c)" [ "$c" = 403 ]
c=$(code PUT "/v1/limits/other" -H "$agent" --data-binary '{"limit":"7"}')
rg_check "a new limit with the agent token: 403 ($c)" [ "$c" = 403 ]
c=$(code PUT "/v1/limits/$DB" --data-binary '{"limit":"7"}')
rg_check "PUT without a token: 401 ($c)" [ "$c" = 401 ]
c=$(code PUT "/v1/limits/$DB" -H "Authorization: Bearer nope" --data-binary '{"limit":"7"}')
rg_check "PUT with a wrong token: 401 ($c)" [ "$c" = 401 ]
c=$(code POST /v1/heartbeat --data-binary '{"node_id":"x"}')
rg_check "a heartbeat without a token: 401 ($c)" [ "$c" = 401 ]

# nothing changed: not in etcd, not in the frontend's maps (two heartbeats
# after the attempts)
hb=$(fe_heartbeats)
rg_wait_for 10 eval '[ "$(fe_heartbeats)" -ge $((hb + 2)) ]' || rg_fail "the frontend stopped heartbeating"
stored=$(meta_etcd_get "${PREFIX}limits/$DB")
rg_check "the limit in etcd is still 500 ($stored)" [ "$stored" = 500 ]
rg_check "no limit for 'other' in etcd" [ -z "$(meta_etcd_get "${PREFIX}limits/other")" ]
rg_check "the frontend's map still says 500 ($(fe_limit))" [ "$(fe_limit)" = 500 ]

# what the agent token may do: read
c=$(code GET "/v1/limits/$DB" -H "$agent")
rg_check "GET limits with the agent token: 200 ($c)" [ "$c" = 200 ]
out=$("$RG_ROWGATECTL" --meta "$META_URL" --token-file "$META_AGENT_TOKEN_FILE" limit show 2>&1)
rg_check "rowgatectl limit show with the agent token ($out)" grep -q "$DB" <<<"$out"

# the admin token: changes limits, and passes where the agent's does
meta_ctl limit set "$DB" 800 >/dev/null || rg_fail "the admin token cannot change the limit"
rg_wait_for 10 eval '[ "$(fe_limit)" = 800 ]' || rg_fail "the frontend did not get 800"
stored=$(meta_etcd_get "${PREFIX}limits/$DB")
rg_check "the admin token changed the limit (etcd $stored, frontend $(fe_limit))" [ "$stored" = 800 ]
c=$(code POST /v1/heartbeat -H "$admin" --data-binary '{"node_id":"admin-probe"}')
rg_check "a heartbeat with the admin token: 200 ($c $(cat "$RG_TMP/reply"))" [ "$c" = 200 ]

forbidden=$(curl -sf "$META_URL/metrics" | awk '$1 == "rowgate_meta_forbidden_total" { print $2 }')
rg_check "rowgate_meta_forbidden_total counts the 4 refusals ($forbidden)" [ "$forbidden" = 4 ]
grep -q 'event=admin_refused' "$RG_TMP/meta-a.log" ||
	rg_fail "no admin_refused event in rowgate-meta's log"

# --- redirects: a "replica" on R answers every call with 307 to O, where a
# listener records what arrives
R=$(rg_free_port) || rg_fail "no free port"
O=$(rg_free_port) || rg_fail "no free port"
cat >"$RG_TMP/redirect.py" <<'PY'
"""Port R: 307 to http://127.0.0.1:O/<same path>.  Port O: records
"METHOD PATH AUTHORIZATION" per request in LOG, answers an empty limit list."""
import http.server, json, sys, threading
r_port, o_port, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
class Base(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n: self.rfile.read(n)
    def reply(self, code, data, extra=()):
        self.send_response(code)
        for k, v in extra: self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers(); self.wfile.write(data)
class Redirect(Base):
    def handle_any(self):
        self.body()
        self.reply(307, b'{"ok":false,"error":"not the leader"}\n',
                   [("Location", "http://127.0.0.1:%d%s" % (o_port, self.path))])
    do_GET = do_POST = do_PUT = do_DELETE = handle_any
class Record(Base):
    def handle_any(self):
        self.body()
        with open(log, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, self.headers.get("Authorization", "-")))
        self.reply(200, b'{"ok":true,"limits":[]}\n')
    do_GET = do_POST = do_PUT = do_DELETE = handle_any
for port, h in ((o_port, Record), (r_port, Redirect)):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", port), h)
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
PY
: >"$RG_TMP/other.log"
"$RG_PY" "$RG_TMP/redirect.py" "$R" "$O" "$RG_TMP/other.log" >"$RG_TMP/redirect.out" 2>&1 &
RPID=$!
rg_on_exit "kill $RPID"
rg_wait_for 10 grep -q ready "$RG_TMP/redirect.out" || rg_fail "the redirector did not start"
loc=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$R/v1/limits")
rg_check "the fake replica redirects elsewhere ($loc)" [ "$loc" = "307 http://127.0.0.1:$O/v1/limits" ]
: >"$RG_TMP/other.log"

# rowgatectl with only R in --meta: refuses to follow, says why
out=$("$RG_ROWGATECTL" --meta "http://127.0.0.1:$R" --token-file "$META_ADMIN_TOKEN_FILE" \
	limit set "$DB" 1 2>&1); rc=$?
rg_check "rowgatectl refuses the redirect (rc $rc: $out)" \
	eval '[ "$rc" = 1 ] && grep -q "not one of the configured URLs" <<<"$out"'
# rowgated's agent with only R in --meta: its heartbeats fail, say why
fe_start 2 "http://127.0.0.1:$R"
fe2_meta() { fe_ctl 2 --json stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['meta']['$1'])"; }
rg_wait_for 10 eval '[ "$(fe2_meta heartbeats_failed)" -ge 2 ]' || rg_fail "frontend 2 sent no heartbeat"
err=$(fe2_meta last_error)
rg_check "the agent refuses the redirect ($err)" grep -q "not one of the configured URLs" <<<"$err"
rg_check "the agent has no successful heartbeat ($(fe2_meta heartbeats_ok))" [ "$(fe2_meta heartbeats_ok)" = 0 ]
rg_check "nothing reached the other origin ($(wc -l <"$RG_TMP/other.log") requests)" \
	[ ! -s "$RG_TMP/other.log" ]

# the control: with O in rowgatectl's list the redirect is followed and the
# listener sees the token, so the check above could have failed
"$RG_ROWGATECTL" --meta "http://127.0.0.1:$R,http://127.0.0.1:$O" \
	--token-file "$META_ADMIN_TOKEN_FILE" limit show >/dev/null ||
	rg_fail "rowgatectl did not follow a redirect to a listed origin"
rg_check "a listed origin gets the call and the token ($(cat "$RG_TMP/other.log"))" \
	grep -qx "GET /v1/limits Bearer $(cat "$META_ADMIN_TOKEN_FILE")" "$RG_TMP/other.log"

# --- etcd: several endpoints (the first dead) and etcd's authentication
rg_require_cmd etcdctl
meta_start_etcd
EP=/rowgate-etcdauth-$$/
ectl() { ETCDCTL_API=3 etcdctl --endpoints="$ETCD" "$@" 2>>"$RG_TMP/etcdctl.log"; }
ectl user add root:rootpw >/dev/null && ectl role add rowgate >/dev/null &&
	ectl role grant-permission rowgate --prefix=true readwrite "$EP" >/dev/null &&
	ectl user add rg:rgpw >/dev/null && ectl user grant-role rg rowgate >/dev/null &&
	ectl auth enable >/dev/null || rg_fail "cannot enable etcd's auth: $(tail -3 "$RG_TMP/etcdctl.log")"
printf 'rgpw\n' >"$RG_TMP/etcd.pw"
printf 'nope\n' >"$RG_TMP/etcd.badpw"
DEAD=$(rg_free_port) || rg_fail "no free port"
ETCDS="http://127.0.0.1:$DEAD,$ETCD"
eopts=(--etcd "$ETCDS" --etcd-prefix "$EP" --heartbeat-interval "$HB_MS" --learning 0 --election-ttl 2)

out=$("$RG_META" --listen 127.0.0.1:0 "${META_AUTH_ARGS[@]}" "${eopts[@]}" --etcd-user rg \
	--etcd-password-file "$RG_TMP/etcd.badpw" 2>&1); rc=$?
rg_check "a wrong etcd password stops rowgate-meta at start (rc $rc: $out)" \
	eval '[ "$rc" = 1 ] && grep -q "etcd refused user .rg." <<<"$out"'

meta_start_allocator noauth "${eopts[@]}"
etcd_errors() { curl -sf "$1/metrics" | awk '$1 == "rowgate_meta_etcd_errors_total" { print $2 }'; }
rg_wait_for 10 eval '[ "$(etcd_errors "$META_URL_noauth")" -ge 5 ]' ||
	rg_fail "rowgate-meta without etcd credentials reported no etcd errors"
rg_check "without etcd credentials it does not lead ($(meta_health "$META_URL_noauth" role))" \
	[ "$(meta_health "$META_URL_noauth" role)" = follower ]
kill "$META_PID_noauth"

meta_start_allocator eauth "${eopts[@]}" --etcd-user rg --etcd-password-file "$RG_TMP/etcd.pw"
META_URL=$META_URL_eauth
rg_wait_for 10 eval '[ "$(meta_health "$META_URL" role)" = leader ]' ||
	rg_fail "rowgate-meta with etcd credentials did not lead: $(tail -3 "$RG_TMP/meta-eauth.log")"
rg_check "it uses the live etcd member ($(meta_health "$META_URL" store))" \
	[ "$(meta_health "$META_URL" store)" = "etcd:$ETCD" ]
meta_ctl limit set "$DB" 321 >/dev/null || rg_fail "limit set through an authenticated etcd"
stored=$(ectl --user root:rootpw get --print-value-only "${EP}limits/$DB")
rg_check "the limit is in etcd, written as user rg ($stored)" [ "$stored" = 321 ]
rg_check "anonymous etcd reads are refused (the check above could fail)" \
	eval '! ectl get --print-value-only "${EP}limits/$DB" >/dev/null'

rg_pass "the agent token cannot change limits; the admin token can; tokens follow no redirect off the list; etcd with failover and auth"
