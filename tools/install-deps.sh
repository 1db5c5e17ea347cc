#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian 12 packages rowgate needs, by purpose:
#
#   tools/install-deps.sh [build|demo|test] [--if-missing] [--list]
#
#   build  building and running rowgate (make deps)
#   demo   build + the local victoria-metrics of make demo
#   test   everything the tests and benchmarks need (make test-deps): the
#          real servers and clients, Go, cargo, qemu, the npm modules
#   --if-missing  install only when something is missing (make test, make
#          demo): no apt-get update, no root, no network when all is there
#   --list print the packages of that purpose and exit
#
# A server package (victoria-metrics, influxdb, etcd-server, prometheus,
# nginx, haproxy) never starts here.  Debian's maintainer scripts start a
# server's service as they install it and enable it for every boot: on an
# ingest host it would take the ports of the servers rowgate guards.  While
# apt-get runs, policy-rc.d forbids starting any service; the services of
# the server packages this run installed are then disabled.  A server that
# was installed before (an operator's own) is left as it was.  What was
# disabled is recorded in /var/lib/rowgate-deps/servers (e2e/deps_quiet).
set -euo pipefail
cd "$(dirname "$0")/.."

build_pkgs=(
	make gcc clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config
	libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev
	# rowgate-meta checks client certificates on libmicrohttpd's TLS session
	libgnutls28-dev
	# rowgated's config file
	libinih-dev
	# payload decoding: compression and protobuf
	libzstd-dev libbrotli-dev libsnappy-dev
	libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
)
demo_pkgs=(victoria-metrics curl iproute2)
test_pkgs=(
	# fuzzing (make fuzz, and the corpus replay of make test): libFuzzer
	libclang-rt-14-dev
	# real servers and clients
	victoria-metrics influxdb etcd-server prometheus
	# e2e/meta_auth: etcdctl turns etcd's authentication on
	etcd-client
	curl python3 iproute2 procps util-linux zstd tmux
	# e2e/install: systemd-analyze verify on the units, man -l on the pages;
	# e2e/debian_package: dpkg-buildpackage
	systemd man-db dpkg-dev debhelper
	# vmtest: Debian's 6.1 and 6.12 kernels under qemu
	qemu-system-x86 busybox-static cpio
	# gRPC ingestion: C-core server, grpc-go client, grpc-js via npm
	python3-grpcio python3-protobuf python3-hpack golang-go golang-google-grpc-dev
	golang-google-protobuf-dev protoc-gen-go golang-github-klauspost-compress-dev nodejs
	# the GreptimeDB-compatible test server (tests/greptime): Rust, offline
	cargo rustc librust-hyper-dev librust-h2-dev librust-tokio-dev librust-serde-urlencoded-dev
	librust-flate2-dev
	# benchmarks: userspace rate-limit baselines and load generators
	wrk nginx-light haproxy linux-perf
)
# packages whose services must not start (nginx's unit is nginx-common's)
server_pkgs=(victoria-metrics influxdb etcd-server prometheus nginx-common haproxy)

purpose=build if_missing=0 list=0
for a in "$@"; do
	case $a in
	build | demo | test) purpose=$a ;;
	--if-missing) if_missing=1 ;;
	--list) list=1 ;;
	-h | --help) sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install-deps: unknown argument '$a' (build, demo, test, --if-missing, --list)" >&2; exit 2 ;;
	esac
done
pkgs=("${build_pkgs[@]}")
case $purpose in
demo) pkgs+=("${demo_pkgs[@]}") ;;
test) pkgs+=("${test_pkgs[@]}") ;;
esac
if [ "$list" = 1 ]; then
	printf '%s\n' "${pkgs[@]}" | sort -u
	exit 0
fi

installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; }
# grpc-js, OpenTelemetry's exporter and apache-arrow for the gRPC tests,
# pinned by tests/grpc/package-lock.json; the stamp says which lock file
# the installed modules follow
lock=tests/grpc/package-lock.json stamp=tests/grpc/node_modules/.rowgate-lock
npm_current() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(sha256sum <"$lock")" ]; }

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ "$if_missing" = 1 ] && [ ${#missing[@]} -eq 0 ] && { [ "$purpose" != test ] || npm_current; }; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: ${missing[*]:-the npm modules of tests/grpc} missing; run as root (apt-get install)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ] || [ "$if_missing" = 0 ]; then
	new_servers=()
	for p in "${server_pkgs[@]}"; do
		installed "$p" || new_servers+=("$p")
	done
	# no service starts while apt-get runs; a policy already there (a
	# container's) is put back after
	policy=/usr/sbin/policy-rc.d saved=""
	if [ -e "$policy" ]; then
		saved=$(mktemp /usr/sbin/.policy-rc.d.rowgate.XXXXXX)
		cp -p "$policy" "$saved"
	fi
	restore_policy() {
		if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
	}
	trap restore_policy EXIT
	printf '#!/bin/sh\n# rowgate tools/install-deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	# one update serves make deps test's two installs
	lists_stamp=/var/lib/apt/lists/.rowgate-updated
	if [ -z "$(find "$lists_stamp" -mmin -30 2>/dev/null)" ]; then
		apt-get update -q
		touch "$lists_stamp"
	fi
	apt-get install -y -q --no-install-recommends "${pkgs[@]}"
	restore_policy
	trap - EXIT
	# enabled for every boot by their maintainer scripts: disable those
	# this run installed
	mkdir -p /var/lib/rowgate-deps
	for p in "${new_servers[@]}"; do
		installed "$p" || continue
		for unit in $(dpkg -L "$p" | sed -n 's|^/\(usr/\)\{0,1\}lib/systemd/system/\([^/@]*\.service\)$|\2|p'); do
			if systemctl disable "$unit" >/dev/null 2>&1; then
				echo "install-deps: $unit ($p) installed, not started, disabled"
				echo "$p $unit" >>/var/lib/rowgate-deps/servers
			else
				echo "install-deps: could not disable $unit (package $p)" >&2
			fi
		done
	done
fi

if [ "$purpose" = test ] && ! npm_current; then
	# nodesource's nodejs carries npm; Debian's does not (its npm is a
	# package of its own, which nodesource's nodejs conflicts with):
	# install it only when no npm is there
	if ! command -v npm >/dev/null 2>&1; then
		apt-get install -y -q --no-install-recommends npm
	fi
	npm ci --prefix tests/grpc --no-audit --no-fund
	sha256sum <"$lock" >"$stamp"
fi
