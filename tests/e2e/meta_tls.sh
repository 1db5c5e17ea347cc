#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgate-meta over HTTPS, certificates made by openssl in the test's temp
# dir: rowgatectl and rowgated's agent verify the replica with --meta-ca
# (HTTPS heartbeats carry the limit to the frontend); a CA that did not sign
# the replica's certificate fails with a clear error and no heartbeat
# succeeds; with --tls-client-ca a client without a certificate, or with one
# another CA signed, is refused (403 saying why), and one with a
# certificate the CA signed is served.
source "$(dirname "$0")/meta_lib.sh"
meta_require
rg_require_cmd openssl
DB=tlsdb
HB_MS=200

# --- certificates: CA "good" signs the replica's and a client's; CA "other"
# signs nothing the replica trusts
P=$RG_TMP/pki
mkdir -p "$P"
ossl() { openssl "$@" 2>>"$P/openssl.log" >/dev/null || rg_fail "openssl $1 failed: $(tail -3 "$P/openssl.log")"; }
new_ca() { # new_ca NAME
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$P/$1.key" -out "$P/$1.pem" -subj "/CN=rowgate test $1 CA"
}
new_cert() { # new_cert NAME CA EXTENSIONS
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$P/$1.key" -out "$P/$1.csr" -subj "/CN=$1"
	printf '%s\n' "$3" >"$P/$1.ext"
	ossl x509 -req -in "$P/$1.csr" -CA "$P/$2.pem" -CAkey "$P/$2.key" -set_serial "$RANDOM$RANDOM" \
		-days 2 -extfile "$P/$1.ext" -out "$P/$1.pem"
}
new_ca good
new_ca other
new_cert replica good $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth'
new_cert fe1 good 'extendedKeyUsage=clientAuth'
# etcd's gateway dials its own gRPC port with the server certificate: with
# --client-cert-auth that certificate must also be good for clients
new_cert etcd good $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth'
new_cert stranger other 'extendedKeyUsage=clientAuth'

META_AUTH_ARGS=(--agent-token-file "$META_AGENT_TOKEN_FILE" --admin-token-file "$META_ADMIN_TOKEN_FILE")
META_SCHEME=https
META_CURL_ARGS=(--cacert "$P/good.pem" --cert "$P/fe1.pem" --key "$P/fe1.key")
admin="Authorization: Bearer $(cat "$META_ADMIN_TOKEN_FILE")"
ctl() { "$RG_ROWGATECTL" --token-file "$META_ADMIN_TOKEN_FILE" "$@"; }

out=$("$RG_META" --tls-cert "$P/replica.pem" 2>&1); rc=$?
rg_check "--tls-cert without --tls-key is refused (rc $rc: $out)" [ "$rc" = 2 ]

# --- a replica serving HTTPS, no client certificates asked
meta_start_allocator a --state-file "$RG_TMP/meta-a.json" --tls-cert "$P/replica.pem" \
	--tls-key "$P/replica.key"
rg_check "it advertises https ($(meta_health "$META_URL_a" self))" \
	[ "$(meta_health "$META_URL_a" self)" = "$META_URL_a" ]
rg_check "it does not answer plain HTTP" \
	eval '! curl -sf -m 2 "${META_URL_a/https/http}/v1/health" >/dev/null'
ctl --meta "$META_URL_a" --meta-ca "$P/good.pem" limit set "$DB" 100 >/dev/null ||
	rg_fail "rowgatectl over HTTPS with the right CA"
out=$(ctl --meta "$META_URL_a" --meta-ca "$P/other.pem" limit set "$DB" 5 2>&1); rc=$?
rg_check "rowgatectl with the wrong CA fails, saying so (rc $rc: $out)" \
	eval '[ "$rc" = 1 ] && grep -q "certificate is not trusted ($P/other.pem)" <<<"$out"'
out=$(ctl --meta "$META_URL_a" limit show 2>&1); rc=$?
rg_check "rowgatectl with the system's CAs fails too (rc $rc)" [ "$rc" = 1 ]
rg_check "the limit is what the right CA's call set" \
	eval '[ "$(ctl --meta "$META_URL_a" --meta-ca "$P/good.pem" limit show "$DB" | awk "NR == 2 { print \$2 }")" = 100 ]'

# --- a replica that requires client certificates
meta_start_allocator b --state-file "$RG_TMP/meta-b.json" --tls-cert "$P/replica.pem" \
	--tls-key "$P/replica.key" --tls-client-ca "$P/good.pem" --heartbeat-interval "$HB_MS" \
	--learning 0
META_URL=$META_URL_b
ctl --meta "$META_URL" --meta-ca "$P/good.pem" --meta-cert "$P/fe1.pem" --meta-key "$P/fe1.key" \
	limit set "$DB" 600 >/dev/null || rg_fail "rowgatectl with a client certificate"

# code [curl args] PATH: the status of a GET, the reply in $RG_TMP/reply
code() { curl -s -o "$RG_TMP/reply" -w '%{http_code}' --cacert "$P/good.pem" -H "$admin" "$@"; }
c=$(code "$META_URL/v1/limits")
rg_check "no client certificate: 403 ($c $(cat "$RG_TMP/reply"))" \
	eval '[ "$c" = 403 ] && grep -q "no client certificate was presented" "$RG_TMP/reply"'
c=$(code "$META_URL/metrics")
rg_check "no client certificate on /metrics: 403 ($c)" [ "$c" = 403 ]
c=$(code --cert "$P/stranger.pem" --key "$P/stranger.key" "$META_URL/v1/limits")
rg_check "a certificate another CA signed: 403 ($c $(cat "$RG_TMP/reply"))" \
	eval '[ "$c" = 403 ] && grep -q "tls-client-ca is required" "$RG_TMP/reply"'
c=$(code --cert "$P/fe1.pem" --key "$P/fe1.key" "$META_URL/v1/limits/$DB")
rg_check "a certificate the CA signed: 200 ($c $(cat "$RG_TMP/reply"))" [ "$c" = 200 ]
out=$(ctl --meta "$META_URL" --meta-ca "$P/good.pem" limit set "$DB" 5 2>&1); rc=$?
rg_check "rowgatectl without a certificate is refused (rc $rc: $out)" \
	eval '[ "$rc" = 1 ] && grep -q "client certificate" <<<"$out"'

# frontends: the right CA and a certificate; the wrong CA; no certificate
META_FE_AUTH_ARGS=(--token-file "$META_AGENT_TOKEN_FILE" --meta-ca "$P/good.pem"
	--meta-cert "$P/fe1.pem" --meta-key "$P/fe1.key")
fe_start 1 "$META_URL"
META_FE_AUTH_ARGS=(--token-file "$META_AGENT_TOKEN_FILE" --meta-ca "$P/other.pem"
	--meta-cert "$P/fe1.pem" --meta-key "$P/fe1.key")
fe_start 2 "$META_URL"
META_FE_AUTH_ARGS=(--token-file "$META_AGENT_TOKEN_FILE" --meta-ca "$P/good.pem")
fe_start 3 "$META_URL"
fe_meta() { fe_ctl "$1" --json stats | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['meta']['$2'])"; }
fe_limit() { fe_ctl 1 --json stats "$DB" | "$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['databases'][0]['limit'])"; }
rg_wait_for 10 eval '[ "$(fe_limit)" = 600 ]' || rg_fail "frontend 1 did not get the limit over HTTPS"
hb=$(fe_meta 1 heartbeats_ok)
rg_wait_for 10 eval '[ "$(fe_meta 1 heartbeats_ok)" -ge $((hb + 2)) ]' || rg_fail "frontend 1 stopped heartbeating"
rg_log "frontend 1 heartbeats over HTTPS with its certificate and enforces $DB = 600"
for i in 2 3; do
	rg_wait_for 10 eval '[ "$(fe_meta '"$i"' heartbeats_failed)" -ge 2 ]' ||
		rg_fail "frontend $i sent no heartbeat"
	rg_check "frontend $i has no successful heartbeat" [ "$(fe_meta "$i" heartbeats_ok)" = 0 ]
done
err=$(fe_meta 2 last_error)
rg_check "frontend 2 (wrong CA) says the replica is not trusted ($err)" \
	grep -q "certificate is not trusted ($P/other.pem)" <<<"$err"
err=$(fe_meta 3 last_error)
rg_check "frontend 3 (no certificate) says it needs one ($err)" \
	grep -q "client certificate" <<<"$err"
rg_check "the replica sees one live frontend ($(meta_health "$META_URL" frontends_live))" \
	[ "$(meta_health "$META_URL" frontends_live)" = 1 ]

refused=$(curl -sf --cacert "$P/good.pem" --cert "$P/fe1.pem" --key "$P/fe1.key" "$META_URL/metrics" |
	awk '$1 == "rowgate_meta_client_cert_refused_total" { print $2 }')
rg_check "rowgate_meta_client_cert_refused_total counts the refusals ($refused)" [ "${refused:-0}" -ge 5 ]

# --- etcd over HTTPS with client certificates (--client-cert-auth); the
# replicas themselves on plain HTTP here
META_SCHEME=http
META_CURL_ARGS=()
ETCD_SCHEME=https
ETCD_CURL_ARGS=(--cacert "$P/good.pem" --cert "$P/fe1.pem" --key "$P/fe1.key")
meta_start_etcd --cert-file "$P/etcd.pem" --key-file "$P/etcd.key" \
	--client-cert-auth --trusted-ca-file "$P/good.pem"
EP=/rowgate-tls-$$/
eopts=(--etcd "$ETCD" --etcd-prefix "$EP" --election-ttl 2)
etcd_errors() { curl -sf "${META_CURL_ARGS[@]}" "$1/metrics" | awk '$1 == "rowgate_meta_etcd_errors_total" { print $2 }'; }
meta_start_allocator nocert "${eopts[@]}" --etcd-ca "$P/good.pem"
meta_start_allocator wrongca "${eopts[@]}" --etcd-ca "$P/other.pem" --etcd-cert "$P/fe1.pem" \
	--etcd-key "$P/fe1.key"
for n in nocert wrongca; do
	u=META_URL_$n
	rg_wait_for 10 eval '[ "$(etcd_errors "${!u}")" -ge 5 ]' ||
		rg_fail "rowgate-meta $n reported no etcd errors"
	rg_check "rowgate-meta $n cannot use etcd, so does not lead" \
		[ "$(meta_health "${!u}" role)" = follower ]
done
meta_start_allocator etls "${eopts[@]}" --etcd-ca "$P/good.pem" --etcd-cert "$P/fe1.pem" \
	--etcd-key "$P/fe1.key"
META_URL=$META_URL_etls
rg_wait_for 10 eval '[ "$(meta_health "$META_URL" role)" = leader ]' ||
	rg_fail "rowgate-meta did not lead over etcd's TLS: $(tail -3 "$RG_TMP/meta-etls.log")"
ctl --meta "$META_URL" --meta-ca "$P/good.pem" limit set "$DB" 777 >/dev/null ||
	rg_fail "limit set with etcd over TLS"
stored=$(meta_etcd_get "${EP}limits/$DB")
rg_check "the limit is in etcd, written over TLS ($stored)" [ "$stored" = 777 ]

rg_pass "HTTPS between the agent, rowgatectl and rowgate-meta; wrong CAs and missing certificates refused; etcd over TLS"
