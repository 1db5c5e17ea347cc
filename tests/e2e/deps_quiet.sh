#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make deps never starts a server on an ingest host (tools/install-deps.sh):
# the build's packages hold no server; every server package the test deps
# installed has its services disabled (and, under systemd, not running);
# the policy that held them while apt-get ran is gone; and once everything
# is there, make test's `install-deps.sh test --if-missing` needs neither
# root nor the network (run as nobody, it installs nothing and succeeds).
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd setpriv dpkg-query systemctl
DEPS=$RG_ROOT/tools/install-deps.sh
servers="victoria-metrics influxdb etcd-server prometheus nginx-light nginx-common haproxy"

build=$("$DEPS" build --list) || rg_fail "install-deps.sh build --list"
for p in $servers; do
	! grep -qx "$p" <<<"$build" || rg_fail "make deps installs the server package $p"
done
rg_log "ok: make deps installs $(wc -l <<<"$build") packages, no server"
demo=$("$DEPS" demo --list) test=$("$DEPS" test --list)
grep -qx victoria-metrics <<<"$demo" || rg_fail "make demo does not install victoria-metrics"
for p in victoria-metrics influxdb etcd-server prometheus nginx-light haproxy; do
	grep -qx "$p" <<<"$test" || rg_fail "make test-deps does not install $p"
done

record=/var/lib/rowgate-deps/servers
[ -s "$record" ] || rg_fail "$record is missing: make test-deps records the server services it disabled"
systemd=0
[ "$(ps -p 1 -o comm=)" = systemd ] && systemd=1
n=0
while read -r pkg unit; do
	[ -n "$unit" ] || continue
	dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -q '^ii' || continue
	state=$(systemctl is-enabled "$unit" 2>/dev/null) || true
	[ "$state" = disabled ] || rg_fail "$unit ($pkg) is '$state' after make test-deps, not disabled"
	if [ "$systemd" = 1 ] && systemctl is-active -q "$unit"; then
		rg_fail "$unit ($pkg) is running"
	fi
	n=$((n + 1))
done <"$record"
[ "$n" -gt 0 ] || rg_fail "no installed server package in $record"
rg_log "ok: $n server services installed by the test deps are disabled$([ "$systemd" = 1 ] && echo " and not running" || echo " (no systemd running here: not started by policy)")"

! grep -qs "rowgate tools/install-deps.sh" /usr/sbin/policy-rc.d ||
	rg_fail "install-deps.sh left its policy-rc.d behind"
rg_log "ok: no policy-rc.d of install-deps.sh left"

# as nobody: no apt-get (it would fail without root), nothing to do
cp -r "$RG_ROOT/tools" "$RG_TMP/" && mkdir -p "$RG_TMP/tests/grpc/node_modules" &&
	cp "$RG_ROOT/tests/grpc/package-lock.json" "$RG_TMP/tests/grpc/" &&
	cp "$RG_ROOT/tests/grpc/node_modules/.rowgate-lock" "$RG_TMP/tests/grpc/node_modules/" ||
	rg_fail "npm modules not recorded (tests/grpc/node_modules/.rowgate-lock): make test-deps"
chmod -R a+rX "$RG_TMP"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$RG_TMP/tools/install-deps.sh" test --if-missing 2>&1) ||
	rg_fail "install-deps.sh test --if-missing as nobody: $out"
[ -z "$out" ] || rg_fail "install-deps.sh test --if-missing printed: $out"
# and a lock file that changed makes it want to install again
echo '{}' >"$RG_TMP/tests/grpc/package-lock.json"
! setpriv --reuid=65534 --regid=65534 --clear-groups "$RG_TMP/tools/install-deps.sh" test --if-missing \
	>"$RG_TMP/changed.log" 2>&1 || rg_fail "a changed package-lock.json went unnoticed"
grep -q "run as root" "$RG_TMP/changed.log" || rg_fail "unexpected: $(cat "$RG_TMP/changed.log")"
rg_log "ok: test --if-missing installs nothing when all is there, and sees a changed lock file"
rg_pass
