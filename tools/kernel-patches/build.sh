#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build Debian 12's 6.1 kernel (linux-source-6.1) for vmtest's qemu guest,
# stock and with this directory's patch series applied, from one config
# (tinyconfig + vmtest.config).  One source tree and one object directory
# serve both: the series is applied or reversed in place and `make` rebuilds
# what it touches (patch 1 changes include/linux/tcp.h: most of net/).
#
#   tools/kernel-patches/build.sh            patched kernel -> build/kernel-patched/bzImage
#   tools/kernel-patches/build.sh stock      stock kernel   -> build/kernel-stock/bzImage
#   tools/kernel-patches/build.sh both       both
#   tools/kernel-patches/build.sh --check    only unpack and check that the series applies
#
# A kernel whose bzImage exists is not rebuilt (FORCE=1 rebuilds).  Needs
# linux-source-6.1, dwarves (pahole, for BTF), flex, bison, bc, libelf-dev,
# libssl-dev (as root it installs what is missing).  Knobs: BUILD (build),
# KSRC_DIR (where to unpack: $BUILD/kernel-src), JOBS (2).  Runs make under
# nice -n 19.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HERE=$ROOT/tools/kernel-patches
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
KSRC_DIR=${KSRC_DIR:-$BUILD/kernel-src}
SRC=$KSRC_DIR/linux-source-6.1
OBJ=$KSRC_DIR/obj
JOBS=${JOBS:-2}
TARBALL=/usr/src/linux-source-6.1.tar.xz
what=${1:-patched}

die() { echo "kernel-patches: error: $*" >&2; exit 1; }
info() { echo "kernel-patches: $*"; }

deps() {
	local missing=() c
	for c in pahole:dwarves flex:flex bison:bison bc:bc gcc:gcc make:make; do
		command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
	done
	[ -r "$TARBALL" ] || missing+=(linux-source-6.1)
	[ -e /usr/include/libelf.h ] || missing+=(libelf-dev)
	[ -e /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing: ${missing[*]} (apt-get install ${missing[*]})"
	info "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

unpack() {
	[ -e "$SRC/.unpacked" ] && return 0
	info "unpacking $TARBALL into $KSRC_DIR"
	mkdir -p "$KSRC_DIR"
	rm -rf "$SRC"
	nice -n 19 tar -C "$KSRC_DIR" -xf "$TARBALL"
	touch "$SRC/.unpacked"
}

series() { ls "$HERE"/[0-9][0-9][0-9][0-9]-*.patch | grep -v /0000-; }

# The tree is "stock" or "patched"; $SRC/.series-applied marks the latter.
set_tree() {
	local want=$1 p
	if [ "$want" = patched ] && [ ! -e "$SRC/.series-applied" ]; then
		for p in $(series); do
			patch -d "$SRC" -p1 --dry-run -s <"$p" >/dev/null || die "${p##*/} does not apply"
			patch -d "$SRC" -p1 -s <"$p"
			info "applied ${p##*/}"
		done
		touch "$SRC/.series-applied"
	elif [ "$want" = stock ] && [ -e "$SRC/.series-applied" ]; then
		for p in $(series | sort -r); do
			patch -d "$SRC" -p1 -R -s <"$p" || die "cannot reverse ${p##*/}"
		done
		rm -f "$SRC/.series-applied"
		info "series reversed"
	fi
}

configure() {
	[ -e "$OBJ/.config" ] && [ "$OBJ/.config" -nt "$HERE/vmtest.config" ] && [ "$(cat "$OBJ/.btf" 2>/dev/null)" = "${BTF:-0}" ] && return 0
	info "configuring (tinyconfig + vmtest.config)"
	mkdir -p "$OBJ"
	make -s -C "$SRC" O="$OBJ" ARCH=x86_64 tinyconfig >/dev/null
	"$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "$HERE/vmtest.config" \
		$([ "${BTF:-0}" = 1 ] && echo "$HERE/vmtest.btf.config") >/dev/null
	make -s -C "$SRC" O="$OBJ" ARCH=x86_64 olddefconfig >/dev/null
	local line bad=0
	while read -r line; do
		case $line in CONFIG_*=*) ;; *) continue ;; esac
		grep -qx "$line" "$OBJ/.config" || { echo "kernel-patches: config lost: $line" >&2; bad=1; }
	done < <(cat "$HERE/vmtest.config"; [ "${BTF:-0}" != 1 ] || cat "$HERE/vmtest.btf.config")
	[ "$bad" = 0 ] || die "vmtest.config did not survive olddefconfig"
	echo "${BTF:-0}" >"$OBJ/.btf"
}

build_one() {
	local kind=$1 out=$BUILD/kernel-$1 t0 log
	if [ -e "$out/bzImage" ] && [ "${FORCE:-0}" != 1 ]; then
		info "$out/bzImage exists (FORCE=1 rebuilds)"
		return 0
	fi
	set_tree "$kind"
	configure
	mkdir -p "$out"
	log=$out/build.log
	info "building the $kind kernel (nice -n 19 make -j$JOBS; log $log)"
	t0=$SECONDS
	nice -n 19 make -C "$SRC" O="$OBJ" ARCH=x86_64 -j"$JOBS" LOCALVERSION=-rowgate-"$kind" bzImage >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "$kind kernel build failed"; }
	cp "$OBJ/arch/x86/boot/bzImage" "$out/bzImage"
	cp "$OBJ/.config" "$out/config"
	(cd "$HERE" && cat [0-9]*.patch 2>/dev/null | sha256sum | cut -c1-16) >"$out/series.sha"
	info "$kind kernel: $out/bzImage ($((SECONDS - t0)) s)"
}

deps
unpack
case $what in
--check)
	was=stock; [ -e "$SRC/.series-applied" ] && was=patched
	set_tree stock; set_tree patched; set_tree stock; set_tree "$was"
	info "series applies to $(make -s -C "$SRC" kernelversion)" ;;
patched | stock) build_one "$what" ;;
both) build_one stock; build_one patched ;;
*) die "usage: $0 [patched|stock|both|--check]" ;;
esac
