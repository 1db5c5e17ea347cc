#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make install` stages rowgate as a package does (DESTDIR, PREFIX=/usr):
# rowgated and rowgate-meta in /usr/sbin, rowgatectl in /usr/bin, the
# systemd units with their /etc/default files, the man pages, and nothing
# else, nothing outside DESTDIR, nothing rebuilt a second time.  The units
# pass `systemd-analyze verify` with their binaries and man pages found in
# the staged tree; the three binaries print one version, the build's; the
# man pages render without a warning and name every option --help lists;
# CFLAGS and LDFLAGS reach the binaries' compile and link; `make uninstall`
# removes every file but /etc/default files an administrator changed.
source "$(dirname "$0")/lib.sh"
# systemd-analyze and man are what this test checks with: missing, it fails
for c in make systemd-analyze man; do
	command -v "$c" >/dev/null 2>&1 ||
		rg_fail "needs $c (Debian: systemd for systemd-analyze, man-db for man)"
done

DEST=$(mktemp -d "/tmp/rowgate-install.XXXXXX")
rg_on_exit "rm -rf '$DEST'"
rg_make() { make -C "$RG_ROOT" --no-print-directory ${BUILD:+BUILD="$BUILD"} "$@"; }

sbin="rowgated rowgate-meta"
want=(/usr/sbin/rowgated /usr/sbin/rowgate-meta /usr/bin/rowgatectl
	/lib/systemd/system/rowgated.service /lib/systemd/system/rowgate-meta.service
	/etc/default/rowgated /etc/default/rowgate-meta
	/usr/share/man/man8/rowgated.8 /usr/share/man/man8/rowgatectl.8
	/usr/share/man/man8/rowgate-meta.8)
# The same paths on this machine, before: install must not touch them.
host_state() { local p; for p in "${want[@]}"; do stat -c '%n %Y %s' "$p" 2>/dev/null || echo "$p absent"; done; }
host_state >"$RG_TMP/host.before"

rg_make install DESTDIR="$DEST" PREFIX=/usr >"$RG_TMP/install.log" 2>&1 ||
	{ cat "$RG_TMP/install.log"; rg_fail "make install"; }
cat "$RG_TMP/install.log"
rg_make -n install DESTDIR="$DEST" PREFIX=/usr >"$RG_TMP/install-again.log" 2>&1
rg_check "a second make install compiles nothing" \
	sh -c "! grep -e ' -o ' '$RG_TMP/install-again.log'"

# The tree: exactly these files, binaries executable, the rest 0644.
(cd "$DEST" && find . ! -type d | sed 's|^\.||' | sort) >"$RG_TMP/tree"
printf '%s\n' "${want[@]}" | sort >"$RG_TMP/tree.want"
rg_check "installed files are exactly the expected ones" diff "$RG_TMP/tree.want" "$RG_TMP/tree"
for p in "${want[@]}"; do
	case $p in
	*bin/*) rg_check "$p is an executable file" test -f "$DEST$p" -a -x "$DEST$p" ;;
	*) rg_check "$p is mode 0644" test "$(stat -c %a "$DEST$p")" = 644 ;;
	esac
done
host_state >"$RG_TMP/host.after"
rg_check "nothing written outside DESTDIR" diff "$RG_TMP/host.before" "$RG_TMP/host.after"

# The units.  verify checks that ExecStart's binary exists and runs, so it
# reads copies whose ExecStart points into DESTDIR (everything else as
# installed), and `man` finds their Documentation= pages there too.  Its
# problems go to its output with exit 0 (an unknown key): both must be clean.
mkdir "$RG_TMP/units"
for u in $sbin; do
	unit=$DEST/lib/systemd/system/$u.service
	rg_check "$u.service starts /usr/sbin/$u" grep -q "^ExecStart=/usr/sbin/$u " "$unit"
	rg_check "$u.service reads /etc/default/$u" grep -q "^EnvironmentFile=-/etc/default/$u\$" "$unit"
	sed "s|^ExecStart=/usr/sbin/|ExecStart=$DEST/usr/sbin/|" "$unit" >"$RG_TMP/units/$u.service"
done
verify() { MANPATH=$DEST/usr/share/man systemd-analyze verify "$@" >"$RG_TMP/verify.log" 2>&1; }
verify "$RG_TMP/units/rowgated.service" "$RG_TMP/units/rowgate-meta.service"
rc=$?
cat "$RG_TMP/verify.log"
rg_check "systemd-analyze verify passes both units (exit $rc)" test "$rc" -eq 0
rg_check "systemd-analyze verify has nothing to say" test ! -s "$RG_TMP/verify.log"
# the check can fail: a unit whose binary is missing does
mkdir "$RG_TMP/broken"
sed 's|sbin/rowgated |sbin/rowgated.missing |' "$RG_TMP/units/rowgated.service" \
	>"$RG_TMP/broken/rowgated.service"
rg_check "systemd-analyze verify refuses a unit whose binary is missing" \
	sh -c "! MANPATH='$DEST/usr/share/man' systemd-analyze verify '$RG_TMP/broken/rowgated.service' >/dev/null 2>&1"
rg_check "the units are Type=notify" grep -q '^Type=notify$' "$RG_TMP/units/rowgated.service" \
	"$RG_TMP/units/rowgate-meta.service"
rg_check "no ExecStop detaches rowgated on stop" \
	sh -c "! grep -q '^ExecStop' '$RG_TMP/units/rowgated.service'"

# One version, from mk/version.mk.
build_version=$(sed -n 's/^#define RG_VERSION "\(.*\)"$/\1/p' "$RG_BUILD/rowgate_version.h")
rg_check "the build has a version ($build_version)" test -n "$build_version"
for b in usr/sbin/rowgated usr/sbin/rowgate-meta usr/bin/rowgatectl; do
	out=$("$DEST/$b" --version) || rg_fail "$b --version exits $?"
	rg_log "$out"
	rg_check "${b##*/} --version names itself and $build_version" \
		test "${out%% (*}" = "${b##*/} $build_version"
done

# Man pages: rendered without a warning; every long option of --help has
# an entry (a .TP tag) of its own.
for b in rowgated rowgatectl rowgate-meta; do
	page=$DEST/usr/share/man/man8/$b.8
	MANWIDTH=80 man --warnings -l "$page" >"$RG_TMP/$b.txt" 2>"$RG_TMP/$b.warn"
	cat "$RG_TMP/$b.warn"
	rg_check "man -l $b.8 renders without warnings" test ! -s "$RG_TMP/$b.warn"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS FILES 'SEE ALSO'; do
		rg_check "$b(8) has $s" grep -q "^$s\$" "$RG_TMP/$b.txt"
	done
	bin=$DEST/usr/sbin/$b
	[ -x "$bin" ] || bin=$DEST/usr/bin/$b
	awk 'prev == ".TP" { print } { prev = $0 }' "$page" | sed 's/\\-/-/g' >"$RG_TMP/$b.tags"
	missing=$("$bin" --help | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z0-9-]*).*/\2/p' |
		sort -u | while read -r o; do
		grep -qE -e "$o([^a-z0-9-]|$)" "$RG_TMP/$b.tags" || echo "$o"
	done)
	rg_check "$b(8) documents every option of --help${missing:+ (missing: $missing)}" \
		test -z "$missing"
done

# Distribution flags reach the installed binaries' compile and link.
for pair in rowgated:user/rowgated/main.c rowgatectl:user/rowgatectl/main.c \
	rowgate-meta:user/meta/server.c; do
	b=${pair%%:*}
	rg_make -n -W "${pair#*:}" "${BUILD:-build}/$b" CFLAGS=-DRG_TEST_CFLAGS \
		CPPFLAGS=-DRG_TEST_CPPFLAGS LDFLAGS=-Wl,-z,now >"$RG_TMP/flags.log" 2>&1
	rg_check "$b is built with CFLAGS, CPPFLAGS and LDFLAGS" \
		sh -c "grep -e ' -o [^ ]*/$b ' '$RG_TMP/flags.log' | grep -e -DRG_TEST_CFLAGS |
			grep -e -DRG_TEST_CPPFLAGS | grep -q -e -Wl,-z,now"
done

rg_make uninstall DESTDIR="$DEST" PREFIX=/usr >"$RG_TMP/uninstall.log" 2>&1 ||
	{ cat "$RG_TMP/uninstall.log"; rg_fail "make uninstall"; }
rg_check "make uninstall leaves no file" test -z "$(find "$DEST" ! -type d)"

# An administrator's options survive install and uninstall.
rg_make install DESTDIR="$DEST" PREFIX=/usr >/dev/null 2>&1 || rg_fail "make install (again)"
echo 'ROWGATED_OPTS="--port 8428"' >>"$DEST/etc/default/rowgated"
cp "$DEST/etc/default/rowgated" "$RG_TMP/defaults.changed"
rg_make install DESTDIR="$DEST" PREFIX=/usr >/dev/null 2>&1 || rg_fail "make install (over it)"
rg_check "make install keeps a changed /etc/default/rowgated" \
	cmp -s "$RG_TMP/defaults.changed" "$DEST/etc/default/rowgated"
rg_make uninstall DESTDIR="$DEST" PREFIX=/usr >/dev/null 2>&1 || rg_fail "make uninstall (again)"
rg_check "make uninstall keeps only the changed /etc/default/rowgated" \
	test "$(cd "$DEST" && find . ! -type d)" = ./etc/default/rowgated
rg_pass
