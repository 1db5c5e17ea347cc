#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Debian package (debian/): `dpkg-buildpackage -us -uc -b` on a copy of
# the tracked tree builds rowgate_VERSION_ARCH.deb holding the three
# binaries, their man pages, the systemd units and /etc/default files;
# the binaries carry Debian's hardening (PIE, RELRO, BIND_NOW, fortified
# calls: CFLAGS and LDFLAGS passed through), say the changelog's version,
# and the maintainer scripts neither enable nor start a unit.  Nothing is
# installed on this machine: the package is unpacked with dpkg-deb -x.
source "$(dirname "$0")/lib.sh"
rg_require_cmd dpkg-buildpackage dpkg-deb dpkg-parsechangelog dh git readelf nm

src=$RG_TMP/src
mkdir -p "$src"
git -C "$RG_ROOT" ls-files -z | (cd "$RG_ROOT" && tar --null -T - -cf -) | tar -xf - -C "$src" ||
	rg_fail "cannot copy the tracked tree"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$RG_TMP/build.log" 2>&1 ||
	rg_fail "dpkg-buildpackage failed: $(tail -20 "$RG_TMP/build.log")"
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
deb=$(ls "$RG_TMP"/rowgate_"$version"_*.deb 2>/dev/null | head -1)
[ -f "$deb" ] || rg_fail "no rowgate_${version}_*.deb built"
rg_log "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$RG_TMP/files"
for f in /usr/sbin/rowgated /usr/sbin/rowgate-meta /usr/bin/rowgatectl \
	/usr/share/man/man8/rowgated.8.gz /usr/share/man/man8/rowgatectl.8.gz \
	/usr/share/man/man8/rowgate-meta.8.gz /lib/systemd/system/rowgated.service \
	/lib/systemd/system/rowgate-meta.service /etc/default/rowgated /etc/default/rowgate-meta \
	/usr/share/doc/rowgate/copyright; do
	grep -qx "$f" "$RG_TMP/files" || rg_fail "the package lacks $f"
done
rg_log "ok: binaries, man pages, units, /etc/default files and copyright packaged"
dpkg-deb -I "$deb" conffiles | grep -qx /etc/default/rowgated ||
	rg_fail "/etc/default/rowgated is not a conffile"

x=$RG_TMP/x
dpkg-deb -x "$deb" "$x"
for b in usr/sbin/rowgated usr/sbin/rowgate-meta usr/bin/rowgatectl; do
	v=$("$x/$b" --version) || rg_fail "$b --version failed"
	grep -q " $version\b" <<<"$v" || rg_fail "$b says '$v', the changelog $version"
	readelf -lW "$x/$b" | grep -q GNU_RELRO || rg_fail "$b: no RELRO"
	readelf -dW "$x/$b" | grep -q BIND_NOW || rg_fail "$b: no BIND_NOW"
	readelf -hW "$x/$b" | grep -q "DYN (Position-Independent" || rg_fail "$b: not PIE"
	nm -D "$x/$b" | grep -q "__[a-z_]*_chk@" || rg_fail "$b: no fortified calls"
done
rg_log "ok: the binaries say $version and carry PIE, RELRO, BIND_NOW and _FORTIFY_SOURCE"
for s in postinst prerm postrm; do
	dpkg-deb -I "$deb" "$s" 2>/dev/null
done >"$RG_TMP/scripts"
# --no-enable --no-start: a unit is only re-enabled where an operator had
# enabled it before (an upgrade), never started
! grep -Eq "deb-systemd-invoke (start|restart)" "$RG_TMP/scripts" ||
	rg_fail "the maintainer scripts start a unit: $(cat "$RG_TMP/scripts")"
[ "$(grep -c "deb-systemd-helper enable" "$RG_TMP/scripts")" = \
	"$(grep -c "was-enabled" "$RG_TMP/scripts")" ] ||
	rg_fail "the maintainer scripts enable a unit not enabled before"
rg_log "ok: installing it neither enables nor starts a unit"
rg_pass
