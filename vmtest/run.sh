#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# vmtest host driver: boot each kernel of vmtest/kernels in qemu with an
# initramfs holding busybox, the tools and libraries tests need, and the
# repo's build/ and tests/; run the tests of vmtest/tests.list inside; collect
# per-test results from the guest's second serial port; end with
# "N passed, N failed, N skipped".  See vmtest/README.md.
#
#   vmtest/run.sh               fetch what is missing, build, boot, test
#   vmtest/run.sh --deps-only   only install host packages and fetch kernels
#
# Knobs (environment): VMTEST_KERNELS=name[,name]  VMTEST_TIMEOUT=secs per VM
# (2400)  TEST_TIMEOUT=secs per test (600)  TESTS=glob on test names
# VMTEST_SHELL=1  VMTEST_MEM=2G  VMTEST_SMP=2  VMTEST_ACCEL=auto|kvm|tcg
# VMTEST_PYTHON=auto|0|1  VMTEST_LIST=file  VMTEST_CMDLINE=extra kernel args
# VMTEST_COMPRESS=none|gzip|zstd  VMTEST_CRASH_RETRIES=n (2)  V=1 (guest test output on the console, live)
# ALLOW_SKIP=1 (a test skipped in the guest is reported as skipped, not failed)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
OUT=$BUILD/vmtest
CACHE=$OUT/cache
WORK=$OUT/work
LOGS=$OUT/logs
LIST=${VMTEST_LIST:-vmtest/tests.list}
KERNELS_FILE=${VMTEST_KERNELS_FILE:-vmtest/kernels}
VM_TIMEOUT=${VMTEST_TIMEOUT:-2400}
CRASH_RETRIES=${VMTEST_CRASH_RETRIES:-2}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
MEM=${VMTEST_MEM:-2G}
SMP=${VMTEST_SMP:-2}
ACCEL=${VMTEST_ACCEL:-auto}
SHELL_MODE=${VMTEST_SHELL:-0}
COMPRESS=${VMTEST_COMPRESS:-none}
FILTER=${TESTS:-*}
BIG_FILE_BYTES=$((64 << 20)) # files in build/ above this stay out of the guest

die() { echo "vmtest: error: $*" >&2; exit 1; }
info() { echo "vmtest: $*"; }
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# --- host packages ------------------------------------------------------------

apt_updated=0
apt_update_once() {
	[ "$apt_updated" = 1 ] && return 0
	apt_updated=1
	[ "$(id -u)" = 0 ] || return 1
	info "apt-get update"
	apt-get update -q >/dev/null 2>&1 || info "apt-get update failed (offline?)"
}

ensure_host_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	command -v busybox >/dev/null || missing+=(busybox-static)
	command -v cpio >/dev/null || missing+=(cpio)
	if [ "$COMPRESS" = zstd ] && ! command -v zstd >/dev/null; then missing+=(zstd); fi
	if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
		die "needs a Debian host (apt-get, dpkg-deb) to fetch kernels"
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		die "missing host packages: ${missing[*]} (run as root, or: apt-get install ${missing[*]})"
	fi
	info "installing ${missing[*]}"
	apt_update_once
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >"$WORK/apt-install.log" 2>&1 ||
		{ tail -n 20 "$WORK/apt-install.log" >&2; die "apt-get install ${missing[*]} failed"; }
}

# --- kernels --------------------------------------------------------------------

apt_known() {
	apt-cache show --no-all-versions "$1" >/dev/null 2>&1 && return 0
	apt_update_once && apt-cache show --no-all-versions "$1" >/dev/null 2>&1
}

# A meta-package (linux-image-cloud-amd64) depends on the real image; follow it.
resolve_deb() {
	local pkg=$1 dep _
	for _ in 1 2 3 4 5; do # meta-packages chain at most this deep
		apt_known "$pkg" || return 1
		dep=$(apt-cache depends --important "$pkg" 2>/dev/null |
			awk '$1 ~ /Depends:$/ && $2 ~ /^linux-image-/ { print $2; exit }')
		[ -n "$dep" ] || { echo "$pkg"; return 0; }
		pkg=$dep
	done
	return 1
}

# Sets KDIR (extracted package: boot/vmlinuz-*, lib/modules/*) for deb:PKG.
fetch_deb_kernel() {
	local src=$1 pkg ver tmp memo
	memo=$CACHE/resolved/$src
	if pkg=$(resolve_deb "$src") &&
		ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }') &&
		[ -n "$ver" ] && [ "$ver" != "(none)" ]; then
		KDIR=$CACHE/kernels/${pkg}_${ver//:/%}
		if [ ! -e "$KDIR/.done" ]; then
			info "fetching $pkg $ver"
			tmp=$CACHE/download.$$
			rm -rf "$tmp" "$KDIR" && mkdir -p "$tmp" "${KDIR%/*}"
			(cd "$tmp" && apt-get download -q -o APT::Sandbox::User="$(id -un)" \
				"$pkg=$ver" >download.log 2>&1) ||
				{ cat "$tmp/download.log" >&2; rm -rf "$tmp"; return 1; }
			dpkg-deb -x "$tmp"/*.deb "$KDIR" || { rm -rf "$tmp" "$KDIR"; return 1; }
			rm -rf "$tmp"
			touch "$KDIR/.done"
		fi
		mkdir -p "${memo%/*}" && echo "$KDIR" >"$memo"
	elif [ -s "$memo" ] && [ -e "$(cat "$memo")/.done" ]; then
		KDIR=$(cat "$memo")
		info "apt cannot resolve $src now; using the cached ${KDIR##*/}"
	else
		echo "vmtest: cannot find Debian package $src (apt-cache show $src);" \
			"check /etc/apt/sources.list and run apt-get update" >&2
		return 1
	fi
}

# The version string a bzImage carries (boot protocol: kernel_version field).
bzimage_version() {
	local off
	off=$(od -An -tu2 -j $((0x20e)) -N2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((off + 0x200)) count=128 2>/dev/null | tr '\0' '\n' |
		head -n1 | cut -d' ' -f1
}

# Sets VMLINUZ, KVER, MODDIR (may be empty) for one vmtest/kernels source.
prepare_kernel() {
	local src=$1 f
	MODDIR=
	case $src in
	deb:*)
		fetch_deb_kernel "${src#deb:}" || return 1
		VMLINUZ=$(find "$KDIR/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n1)
		[ -n "$VMLINUZ" ] || { echo "vmtest: no boot/vmlinuz-* in $KDIR" >&2; return 1; }
		KVER=${VMLINUZ##*/vmlinuz-}
		for f in "$KDIR/lib/modules/$KVER" "$KDIR/usr/lib/modules/$KVER"; do
			if [ -d "$f" ]; then MODDIR=$f; fi
		done
		;;
	file:*)
		VMLINUZ=${src#file:}
		[ -r "$VMLINUZ" ] || { echo "vmtest: cannot read $VMLINUZ" >&2; return 1; }
		KVER=$(bzimage_version "$VMLINUZ")
		if [ -d "/lib/modules/$KVER/kernel" ]; then MODDIR=/lib/modules/$KVER; fi
		;;
	*) echo "vmtest: unknown kernel source '$src' (deb:PKG or file:PATH)" >&2; return 1 ;;
	esac
}

# --- initramfs ------------------------------------------------------------------

# The guest is merged-/usr: /bin, /sbin, /lib, /lib64 link into /usr.
guest_path() {
	case $1 in
	/bin/* | /sbin/* | /lib/* | /lib64/*) echo "/usr$1" ;;
	*) echo "$1" ;;
	esac
}

compress() {
	case $COMPRESS in
	zstd) zstd -q -1 -T0 ;;
	gzip) gzip -1 ;;
	none) cat ;;
	*) die "VMTEST_COMPRESS=$COMPRESS: zstd, gzip or none" ;;
	esac
}

make_cpio() { # DIR -> stdout
	(cd "$1" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | compress
}

put() { # HOSTFILE: copy (dereferenced) to the same guest path
	local dest
	dest=$STAGE$(guest_path "$1")
	[ -e "$dest" ] && return 0
	mkdir -p "${dest%/*}"
	cp -L --preserve=mode "$1" "$dest"
}

put_bin() {
	local p
	if ! p=$(PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin command -v "$1"); then
		echo "vmtest: note: '$1' (tests.list bin) not installed on the host; not in the guest"
		return 0
	fi
	put "$p"
}

put_pkg() {
	local f
	if ! dpkg -s "$1" >/dev/null 2>&1; then
		echo "vmtest: note: package $1 (tests.list pkg) not installed on the host; not in the guest"
		return 0
	fi
	while IFS= read -r f; do
		case $f in /bin/* | /sbin/* | /usr/bin/* | /usr/sbin/*) ;; *) continue ;; esac
		if [ -f "$f" ] && [ -x "$f" ]; then put "$f"; fi
	done < <(dpkg -L "$1")
	return 0
}

put_python() {
	local py ver
	py=$(readlink -f /usr/bin/python3) || die "python3 needed in the guest but /usr/bin/python3 is missing (apt-get install python3)"
	ver=${py##*/}
	put "$py"
	ln -sf "$ver" "$STAGE/usr/bin/python3"
	tar -C /usr/lib -cf - --exclude="$ver/test" --exclude="$ver/idlelib" \
		--exclude="$ver/tkinter" --exclude="$ver/turtledemo" --exclude="$ver/ensurepip" \
		--exclude="$ver/lib2to3" --exclude="$ver/config-*" "$ver" |
		tar -C "$STAGE/usr/lib" -xf -
	# two Debian packages beside the stdlib, for the raw HTTP/2 probes
	# (python3-hpack, python3-protobuf; its .so gets its libraries below)
	for d in hpack google; do
		[ -d "/usr/lib/python3/dist-packages/$d" ] || continue
		mkdir -p "$STAGE/usr/lib/python3/dist-packages"
		cp -a "/usr/lib/python3/dist-packages/$d" "$STAGE/usr/lib/python3/dist-packages/"
	done
	echo python3 >>"$STAGE/vmtest/needs"
}

# Copy every library the guest's ELF files need (ldd: the dynamic loader too).
put_libraries() {
	local f elfs=() lib
	while IFS= read -r -d '' f; do
		if is_elf "$f"; then elfs+=("$f"); fi
	done < <(find "$STAGE" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
	[ ${#elfs[@]} -gt 0 ] || return 0
	while IFS= read -r lib; do
		put "$lib"
	done < <(ldd "${elfs[@]}" 2>/dev/null | awk '
		/=> not found/ { print "vmtest: warning: " $1 " not found (ldd)" > "/dev/stderr"; next }
		$2 == "=>" && $3 ~ /^\// { print $3; next }
		$1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u)
	# glibc dlopens libgcc_s for pthread_cancel and backtraces.
	lib=$(ldconfig -p 2>/dev/null | awk '/libgcc_s.so.1 .*x86-64/ && !f { print $NF; f = 1 }')
	[ -n "$lib" ] && put "$lib"
	return 0
}

write_etc() {
	local e=$STAGE/etc f
	cat >"$e/passwd" <<-'EOF'
	root:x:0:0:root:/root:/bin/bash
	nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
	EOF
	cat >"$e/group" <<-'EOF'
	root:x:0:
	tty:x:5:
	nogroup:x:65534:
	EOF
	printf '127.0.0.1\tlocalhost vmtest\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$e/hosts"
	printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\nservices: files\nprotocols: files\n' \
		>"$e/nsswitch.conf"
	: >"$e/resolv.conf"
	ln -sf /proc/self/mounts "$e/mtab"
	for f in services protocols ethertypes; do
		if [ -f "/etc/$f" ]; then cp "/etc/$f" "$e/$f"; fi
	done
	if [ -d /etc/iproute2 ]; then cp -r /etc/iproute2 "$e/"; fi
	for f in /usr/share/terminfo /lib/terminfo; do
		[ -d "$f/l" ] || continue
		mkdir -p "$STAGE$(guest_path "$f")"
		cp -r "$f/l" "$f/v" "$f/x" "$f/d" "$STAGE$(guest_path "$f")/" 2>/dev/null || true
	done
	return 0
}

# Parse tests.list; sets TESTS_SEL (paths), COPIES, BINS, PKGS, MODULES, NEED_PY.
read_list() {
	local kind arg line p name host_only=()
	local -A seen=()
	TESTS_SEL=() COPIES=() BINS=() PKGS=() MODULES=() NEED_PY=0
	[ -f "$LIST" ] || die "no test list $LIST"
	shopt -s nullglob
	while read -r kind arg line || [ -n "$kind" ]; do
		case $kind in '' | '#'*) continue ;; esac
		case $kind in
		run)
			# shellcheck disable=SC2206 # glob expansion is the point
			for p in $arg; do
				[ -n "${seen[$p]:-}" ] && continue
				seen[$p]=1
				[ -f "$p" ] || continue
				name=$(test_name "$p")
				# shellcheck disable=SC2053
				[[ $name == $FILTER ]] || continue
				if [ ! -x "$p" ]; then
					echo "vmtest: note: $p is not executable; not run"
					continue
				fi
				TESTS_SEL+=("$p")
			done
			;;
		skip) # a later run line leaves these out
			# shellcheck disable=SC2206
			for p in $arg; do
				seen[$p]=1
				host_only+=("$(test_name "$p")")
			done
			;;
		copy) COPIES+=("$arg") ;;
		bin) BINS+=("$arg") ;;
		pkg) PKGS+=("$arg") ;;
		module) MODULES+=("$arg") ;;
		python3) NEED_PY=1 ;;
		*) die "$LIST: unknown line '$kind $arg'" ;;
		esac
	done <"$LIST"
	shopt -u nullglob
	[ ${#host_only[@]} -eq 0 ] || echo "vmtest: host only (tests.list skip): ${host_only[*]}"
	case ${VMTEST_PYTHON:-auto} in
	0) NEED_PY=0 ;;
	1) NEED_PY=1 ;;
	auto) # a selected script, or a library or .py beside it, uses python3
		local dirs=()
		for p in "${TESTS_SEL[@]}"; do
			if ! is_elf "$p"; then dirs+=("$(dirname "$p")"); fi
		done
		for p in $(printf '%s\n' "${dirs[@]}" | sort -u); do
			if compgen -G "$p/*.py" >/dev/null || grep -qws python3 "$p"/*; then NEED_PY=1; fi
		done ;;
	esac
	return 0
}

is_elf() {
	local magic=
	IFS= LC_ALL=C read -r -n4 -d '' magic <"$1" || true
	[ "$magic" = $'\x7fELF' ]
}

test_name() {
	local n=$1
	n=${n#"$BUILD"/tests/}; n=${n#build/tests/}; n=${n#tests/}
	echo "${n%.sh}"
}

# Where the repo lives in the guest: the host path, unless a guest mount
# would hide it.
guest_repo() {
	case $ROOT in
	/tmp | /tmp/* | /run | /run/* | /proc/* | /sys/* | /dev/* | /) echo /rowgate ;;
	*) echo "$ROOT" ;;
	esac
}

build_userland() {
	local d repo big=() f bb
	STAGE=$WORK/root
	rm -rf "$STAGE"
	mkdir -p "$STAGE"/{usr/bin,usr/sbin,usr/lib,usr/lib64,usr/local/bin,proc,sys,dev,tmp,run,etc,root,var,vmtest,mnt}
	for d in bin sbin lib lib64; do ln -s "usr/$d" "$STAGE/$d"; done
	ln -s ../run "$STAGE/var/run"
	: >"$STAGE/vmtest/needs"

	bb=$(command -v busybox)
	put "$bb"
	mv "$STAGE$(guest_path "$bb")" "$STAGE/usr/bin/busybox" 2>/dev/null || true
	for f in "${PKGS[@]}"; do put_pkg "$f"; done
	for f in "${BINS[@]}"; do put_bin "$f"; done
	[ "$NEED_PY" = 1 ] && put_python

	repo=$(guest_repo)
	mkdir -p "$STAGE$repo"
	local copies=()
	for f in "${COPIES[@]}"; do
		if [ -e "$f" ]; then copies+=("$f"); fi
	done
	local c covered
	for f in "${TESTS_SEL[@]}"; do # a test outside every copy line comes along
		covered=0
		for c in "${copies[@]}"; do
			if [[ $f == "$c" || $f == "${c%/}"/* ]]; then covered=1; fi
		done
		if [ "$covered" = 0 ]; then copies+=("$f"); fi
	done
	COPIES=("${copies[@]}")
	while IFS= read -r -d '' f; do big+=("--exclude=$f"); echo "vmtest: note: $f is over $((BIG_FILE_BYTES >> 20)) MB; not copied"; done \
		< <(find "${COPIES[@]}" \( -path '*/vmtest/cache' -o -path '*/vmtest/work' -o -path '*/vmtest/logs' \) \
			-prune -o -type f -size +$((BIG_FILE_BYTES >> 10))k -print0 2>/dev/null)
	# not anchored: also a vmtest cache of another BUILD dir inside build/;
	# cargo's and Go's build caches are no program a test runs, and the
	# guest has no node for tests/grpc/node_modules
	tar -C "$ROOT" -cf - --exclude=vmtest/cache --exclude=vmtest/work --exclude=vmtest/logs \
		--exclude="$BUILD/test-logs" --exclude='*.log' --exclude='*.deb' \
		--exclude=greptime/target --exclude=grpc/gocache --exclude=node_modules \
		"${big[@]}" "${COPIES[@]}" |
		tar -C "$STAGE$repo" -xf -

	install -m 755 vmtest/guest/init "$STAGE/init"
	install -m 755 vmtest/guest/run-tests "$STAGE/vmtest/run-tests"
	ln -s /vmtest/run-tests "$STAGE/usr/local/bin/vmtest-run"
	printf '%s\n' "${TESTS_SEL[@]}" >"$STAGE/vmtest/tests"
	{
		echo "VMTEST_REPO=$(quote "$repo")"
		echo "BUILD=$(quote "$BUILD")"
		# the guest shell may override these: TEST_TIMEOUT=5 vmtest-run
		echo "TEST_TIMEOUT=\${TEST_TIMEOUT:-$(quote "$TEST_TIMEOUT")}"
		echo "VMTEST_SHELL=$(quote "$SHELL_MODE")"
		echo "V=\${V:-$(quote "${V:-0}")}"
		echo "ALLOW_SKIP=\${ALLOW_SKIP:-$(quote "${ALLOW_SKIP:-0}")}"
		echo "VMTEST_MODULES=$(quote "${MODULES[*]}")"
		# rowgate's own knobs reach the tests as on the host
		while IFS= read -r f; do
			echo "export $f=$(quote "${!f}")"
		done < <(compgen -e | grep '^ROWGATE_' || true)
	} >"$STAGE/vmtest/config"
	write_etc
	put_libraries

	# busybox fills in whatever no real program provides
	while IFS= read -r f; do
		d=$STAGE$(guest_path "/$f")
		[ -e "$d" ] || [ -L "$d" ] || [ -e "$STAGE/usr/bin/${f##*/}" ] ||
			[ -e "$STAGE/usr/sbin/${f##*/}" ] || { mkdir -p "${d%/*}"; ln -s /usr/bin/busybox "$d"; }
	done < <("$STAGE/usr/bin/busybox" --list-full)

	make_cpio "$STAGE" >"$WORK/userland.cpio"
}

# Modules named in tests.list plus their dependencies, decompressed (busybox
# modprobe reads plain .ko) with the module index, as a second cpio archive.
build_modules() { # -> MODCPIO
	local key stage want=() m dep line rel dst
	MODCPIO=
	[ -n "$MODDIR" ] && [ ${#MODULES[@]} -gt 0 ] || return 0
	key=$(printf '%s\n' "$KVER" "$MODDIR" "${MODULES[@]}" "$COMPRESS" | md5sum | cut -c1-12)
	MODCPIO=$CACHE/modules-$KVER-$key.cpio
	[ -s "$MODCPIO" ] && return 0
	if [ ! -f "$MODDIR/modules.dep" ]; then # a package ships no index: make one
		busybox depmod -b "${MODDIR%/lib/modules/*}" "$KVER" ||
			{ echo "vmtest: depmod failed for $MODDIR" >&2; return 1; }
	fi
	stage=$WORK/modules
	rm -rf "$stage"
	dst=$stage/usr/lib/modules/$KVER
	mkdir -p "$dst"
	want=("${MODULES[@]}")
	local -A done_=()
	while [ ${#want[@]} -gt 0 ]; do
		m=${want[0]//-/_}; want=("${want[@]:1}")
		[ -z "${done_[$m]:-}" ] || continue
		done_[$m]=1
		line=$(awk -F: -v m="$m" '{ n = $1; sub(/.*\//, "", n); sub(/\.ko.*/, "", n);
			gsub(/-/, "_", n); if (n == m) { print; exit } }' "$MODDIR/modules.dep")
		if [ -z "$line" ]; then
			grep -qE "/${m//_/[-_]}\.ko" "$MODDIR/modules.builtin" 2>/dev/null ||
				echo "vmtest: note: module $m not found for $KVER"
			continue
		fi
		for rel in ${line%%:*} ${line#*:}; do
			[ ! -e "$dst/${rel%.ko*}.ko" ] || continue
			mkdir -p "$dst/$(dirname "$rel")"
			case $rel in
			*.ko.xz) busybox xz -dc "$MODDIR/$rel" >"$dst/${rel%.xz}" ;;
			*.ko.zst) zstd -qdc "$MODDIR/$rel" >"$dst/${rel%.zst}" ;;
			*.ko.gz) gzip -dc "$MODDIR/$rel" >"$dst/${rel%.gz}" ;;
			*) cp "$MODDIR/$rel" "$dst/$rel" ;;
			esac
			dep=${rel##*/}; want+=("${dep%%.ko*}")
		done
	done
	for f in modules.builtin modules.order; do
		[ ! -f "$MODDIR/$f" ] || cp "$MODDIR/$f" "$dst/$f"
	done
	busybox depmod -b "$stage/usr" "$KVER"
	make_cpio "$stage" >"$MODCPIO.tmp" && mv "$MODCPIO.tmp" "$MODCPIO"
}

# --- running --------------------------------------------------------------------

KVM_OK=
# /dev/kvm can exist and still fail: nested virtualization without the MSRs
# qemu sets aborts at the first vCPU reset, and a "KVM internal error:
# emulation failure" leaves qemu paused with the guest hung.  So boot the
# kernel for real once, init missing: only a kernel that gets as far as its
# panic (and reboots out of qemu, -no-reboot) proves KVM runs guests here.
kvm_works() {
	if [ -z "$KVM_OK" ]; then
		KVM_OK=0
		if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
			local rc
			: >"$WORK/kvm-probe.console"
			rc=$( { timeout 30 qemu-system-x86_64 -nodefaults -no-user-config -display none \
				-no-reboot -accel kvm -cpu host -m 256 -kernel "$VMLINUZ" \
				-serial "file:$WORK/kvm-probe.console" \
				-append "console=ttyS0 panic=-1 rdinit=/vmtest-kvm-probe" \
				>"$WORK/kvm-probe.log" 2>&1
				echo $?; } 2>/dev/null)
			if [ "$rc" = 0 ] && grep -q 'Kernel panic' "$WORK/kvm-probe.console" &&
				! grep -q 'KVM internal error' "$WORK/kvm-probe.log"; then
				KVM_OK=1
			fi
		fi
		if [ "$KVM_OK" = 1 ]; then info "accelerator: KVM"; else info "accelerator: TCG (KVM unavailable)"; fi
	fi
	[ "$KVM_OK" = 1 ]
}

accel_args() {
	case $ACCEL in
	kvm) echo "-accel kvm -cpu host" ;;
	tcg) echo "-accel tcg,thread=multi -cpu max" ;;
	auto) if kvm_works; then echo "-accel kvm -cpu host"; else echo "-accel tcg,thread=multi -cpu max"; fi ;;
	*) die "VMTEST_ACCEL=$ACCEL: auto, kvm or tcg" ;;
	esac
}

b64d() { base64 -d 2>/dev/null || true; }

print_result() { # name status secs rc b64detail
	local name=$1 status=$2 secs=$3 rc=$4 log
	case $status in
	PASS) K_PASS=$((K_PASS + 1)); printf 'PASS     %-40s %6ss\n' "$name" "$secs" ;;
	SKIP) K_SKIP=$((K_SKIP + 1))
	      printf 'SKIPPED  %-40s %s\n' "$name" "$(printf '%s' "$5" | b64d | cut -c1-100)" ;;
	*) K_FAIL=$((K_FAIL + 1))
	   log=$LOGS/$KNAME/${name//\//_}.log
	   mkdir -p "${log%/*}"
	   printf '%s' "$5" | b64d >"$log"
	   printf 'FAIL     %-40s %6ss (exit %s, log %s)\n' "$name" "$secs" "$rc" "$log"
	   tail -n 25 "$log" | awk '{ print "    | " $0 }' ;;
	esac
}

handle_line() {
	local tag kind f1 f2 f3 f4 f5
	read -r tag kind f1 f2 f3 f4 f5 <<<"$1"
	[ "$tag" = "@@VMTEST" ] || return 0
	case $kind in
	KERNEL)
		GUEST_KVER=$(printf '%s' "$f1" | b64d)
		BOOT_SECS=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
		echo "guest kernel: $GUEST_KVER ($(printf '%s' "$f2" | b64d))$([ "$SHELL_MODE" = 1 ] || echo ", up in ${BOOT_SECS}s")"
		;;
	START) CURRENT=$f1 ;;
	RESULT) CURRENT=; LAST_DONE=$f1; print_result "$f1" "$f2" "$f3" "$f4" "$f5" ;;
	DONE) GUEST_DONE=1 ;;
	esac
	return 0
}

# One boot of the guest, running the suite after test $1 (all if empty):
# results stream into K_PASS K_FAIL K_SKIP; sets GUEST_DONE GUEST_KVER
# CURRENT (the test running when the guest stopped) LAST_DONE TIMED_OUT.
boot_vm() {
	local resume_after=$1 con=$WORK/$KNAME.console res=$WORK/$KNAME.results
	local qpid partial='' line cmdline rfd cfd secs accel done_at=
	GUEST_DONE=0 GUEST_KVER='' CURRENT='' BOOT_SECS='' TIMED_OUT=0
	: >"$con"; : >"$res"
	cmdline="console=ttyS0 rdinit=/init panic=-1 mitigations=off VMTEST_KERNEL_NAME=$KNAME${KTESTS:+ VMTEST_KERNEL_TESTS=$KTESTS}${resume_after:+ VMTEST_RESUME_AFTER=$resume_after} ${VMTEST_CMDLINE:-}"
	read -r -a accel <<<"$(accel_args)"
	local qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
		"${accel[@]}" -smp "$SMP" -m "$MEM" -kernel "$VMLINUZ" -initrd "$WORK/$KNAME.initrd"
		-append "$cmdline")
	T0=$EPOCHREALTIME
	if [ "$SHELL_MODE" = 1 ]; then
		"${qemu[@]}" -serial mon:stdio -chardev "file,id=res,path=$res" -serial chardev:res || true
		while IFS= read -r line; do handle_line "$line"; done <"$res"
		return 0
	fi
	"${qemu[@]}" -chardev "file,id=con,path=$con" -serial chardev:con \
		-chardev "file,id=res,path=$res" -serial chardev:res >"$WORK/$KNAME.qemu.log" 2>&1 &
	qpid=$!
	exec {rfd}<"$res" {cfd}<"$con"
	while :; do
		while IFS= read -r line <&"$rfd"; do
			handle_line "$partial$line"; partial=
		done
		partial+=$line
		if [ "${V:-0}" = 1 ]; then
			while IFS= read -r line <&"$cfd"; do echo "  [guest] $line"; done
		fi
		kill -0 "$qpid" 2>/dev/null || break
		secs=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
		# A kernel without ACPI (tools/kernel-patches' builds) halts on the
		# guest's poweroff instead of ending qemu: stop it once the suite is done.
		if [ "$GUEST_DONE" = 1 ]; then
			done_at=${done_at:-$secs}
			if [ $((secs - done_at)) -ge 10 ]; then kill "$qpid" 2>/dev/null; fi
		fi
		if [ "$secs" -ge "$VM_TIMEOUT" ]; then
			TIMED_OUT=1
			kill "$qpid" 2>/dev/null
			sleep 1
			kill -KILL "$qpid" 2>/dev/null || true
			break
		fi
		sleep 0.3
	done
	wait "$qpid" 2>/dev/null || true
	while IFS= read -r line <&"$rfd"; do handle_line "$partial$line"; partial=; done
	[ -n "$partial$line" ] && handle_line "$partial$line"
	exec {rfd}<&- {cfd}<&-
	return 0
}

# Multi-threaded TCG races the kernel's int3-based text patching (static
# keys flipped by cgroup attach, boot-time alternatives): a vCPU now and then
# traps on an int3 the patcher has already removed, and the kernel dies with
# "Oops: int3" in an unrelated function (seen on 6.12: at boot 1 in ~8, and
# once in a suite inside __alloc_pages).  It is the emulator's, not a test's:
# such a guest, or one that never booted, is booted again and the suite goes
# on from the test it died in, at most VMTEST_CRASH_RETRIES times a kernel.
# Any other crash, or a timeout, fails.
emulator_crash() {
	[ "$TIMED_OUT" = 0 ] || return 1
	[ -z "$GUEST_KVER" ] || grep -q 'Oops: int3' "$WORK/$KNAME.console"
}

run_vm() { # name -> counts in K_PASS K_FAIL K_SKIP
	local con=$WORK/$KNAME.console crashes=0 t_start=$EPOCHREALTIME why
	K_PASS=0 K_FAIL=0 K_SKIP=0 LAST_DONE='' K_CRASHES=0
	cat "$WORK/userland.cpio" ${MODCPIO:+"$MODCPIO"} >"$WORK/$KNAME.initrd"
	[ "$ACCEL" != auto ] || kvm_works || true
	rm -f "$con".crash*
	while :; do
		boot_vm "$LAST_DONE"
		if [ "$SHELL_MODE" = 1 ] || [ "$GUEST_DONE" = 1 ] || ! emulator_crash ||
			[ "$crashes" -ge "$CRASH_RETRIES" ]; then
			break
		fi
		crashes=$((crashes + 1))
		cp "$con" "$con.crash$crashes"
		printf 'RETRY    %-40s (the guest kernel %s; booting again%s, %d/%d)\n' \
			"${CURRENT:-boot}" \
			"$([ -n "$GUEST_KVER" ] && echo "oopsed on an int3 of text patching" || echo "did not boot")" \
			"${LAST_DONE:+ after $LAST_DONE}" "$crashes" "$CRASH_RETRIES"
		{ grep -E -B 1 -A 3 'Oops|Kernel panic' "$con.crash$crashes" || true; } | head -n 12 |
			tr -d '\r' | sed 's/^/    | /'
		echo "    (console: $con.crash$crashes)"
	done
	K_CRASHES=$crashes
	K_SECS=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
	[ "$SHELL_MODE" != 1 ] || return 0

	if [ "$GUEST_DONE" != 1 ]; then
		K_FAIL=$((K_FAIL + 1))
		if [ "$TIMED_OUT" = 1 ]; then
			why="timed out after ${VM_TIMEOUT}s (VMTEST_TIMEOUT)"
		elif [ -z "$GUEST_KVER" ]; then
			why="the guest did not boot"
		else
			why="the guest stopped before the suite finished"
		fi
		if [ -n "$CURRENT" ]; then
			printf 'FAIL     %-40s (%s during this test)\n' "$CURRENT" "$why"
		else
			echo "FAIL     vm: $why"
		fi
		awk '{ print "    qemu| " $0 }' "$WORK/$KNAME.qemu.log"
		echo "    console (last 60 lines of $con):"
		tail -n 60 "$con" | tr -d '\r' | awk '{ print "    | " $0 }'
	fi
	# A kernel warning or oops during the suite is a failure even if tests passed.
	if grep -qE 'WARNING:|BUG:|Oops|general protection fault|Kernel panic' "$con"; then
		K_FAIL=$((K_FAIL + 1))
		echo "FAIL     kernel: warnings in the console log ($con)"
		grep -E -A 12 'WARNING:|BUG:|Oops|general protection fault|Kernel panic' "$con" |
			head -n 60 | tr -d '\r' | sed 's/^/    | /'
	fi
}

main() {
	local lockfd kname src total_pass=0 total_fail=0 total_skip=0 summary=() selected=() any=0 k
	mkdir -p "$CACHE" "$WORK"
	# One run at a time per build tree: runs share the work dir, the logs and
	# the kernel cache, and two TCG guests on two cores would starve each other.
	exec {lockfd}>"$OUT/.lock"
	if ! flock -n "$lockfd"; then
		info "another vmtest run holds $OUT/.lock; waiting for it"
		flock "$lockfd"
	fi
	ensure_host_tools
	while read -r kname src ktests _; do
		case $kname in '' | '#'*) continue ;; esac
		if [ -n "${VMTEST_KERNELS:-}" ]; then
			[[ ",${VMTEST_KERNELS// /,}," == *",$kname,"* ]] || continue
		fi
		selected+=("$kname $src ${ktests:-}")
	done <"$KERNELS_FILE"
	[ ${#selected[@]} -gt 0 ] || die "no kernel selected (VMTEST_KERNELS=${VMTEST_KERNELS:-} in $KERNELS_FILE)"

	if [ "${1:-}" = --deps-only ]; then
		for k in "${selected[@]}"; do
			read -r kname src _ <<<"$k"
			prepare_kernel "$src" || die "kernel $kname ($src) unavailable"
			info "$kname: $VMLINUZ"
		done
		return 0
	fi

	read_list
	info "building the initramfs (${#TESTS_SEL[@]} tests$([ "$NEED_PY" = 1 ] && echo ", python3"))"
	build_userland
	info "userland archive $(du -h "$WORK/userland.cpio" | cut -f1) ($COMPRESS)"
	rm -rf "$LOGS"

	for k in "${selected[@]}"; do
		read -r KNAME src KTESTS <<<"$k"
		echo
		echo "== vmtest $KNAME ($src${KTESTS:+; tests $KTESTS})"
		if ! prepare_kernel "$src"; then
			echo "FAIL     vm: kernel $src unavailable"
			total_fail=$((total_fail + 1))
			summary+=("$KNAME: kernel unavailable")
			continue
		fi
		build_modules
		run_vm
		any=1
		total_pass=$((total_pass + K_PASS))
		total_fail=$((total_fail + K_FAIL))
		total_skip=$((total_skip + K_SKIP))
		summary+=("$KNAME ${GUEST_KVER:-?}: $K_PASS passed, $K_FAIL failed, $K_SKIP skipped (${K_SECS}s$([ "$K_CRASHES" = 0 ] || echo ", $K_CRASHES emulator crashes rebooted"))")
	done
	echo
	echo "== vmtest summary"
	printf '%s\n' "${summary[@]}"
	echo "$total_pass passed, $total_fail failed, $total_skip skipped"
	[ "$any" = 1 ] && [ "$total_fail" -eq 0 ]
}

main "$@"
