#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian 12 packages rowgate's build, tests and benchmarks need.
set -euo pipefail
pkgs=(
	# build
	make gcc clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config
	libjansson-dev libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev
	# payload decoding: compression and protobuf
	zlib1g-dev libzstd-dev libbrotli-dev libsnappy-dev
	libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
	# fuzzing (make fuzz, and the corpus replay of make test): libFuzzer
	libclang-rt-14-dev
	# tests: real servers and clients
	victoria-metrics influxdb etcd-server etcd-client prometheus
	curl python3 iproute2 procps psmisc util-linux jq socat zstd tmux
	# e2e/install: systemd-analyze verify on the units, man -l on the pages
	systemd man-db
	# vmtest: Debian's 6.1 kernel under qemu
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
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${pkgs[@]}"
# grpc-js, OpenTelemetry's exporter and apache-arrow for the gRPC tests,
# pinned by tests/grpc/package-lock.json.  nodesource's nodejs carries npm;
# Debian's does not (its npm is a package of its own, which nodesource's
# nodejs conflicts with): install it only when no npm is there.
if ! command -v npm >/dev/null 2>&1; then
	apt-get install -y -q --no-install-recommends npm
fi
npm ci --prefix "$(dirname "$0")/../tests/grpc" --no-audit --no-fund
