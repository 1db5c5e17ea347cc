# SPDX-License-Identifier: GPL-2.0
# rg-greptime (tests/greptime/): the GreptimeDB-compatible ingest server
# of the differential e2e suite (docs/server-profiles.md#greptimedb-server),
# built with Debian's Rust toolchain from Debian's crates, offline: a
# CARGO_HOME in build/ replaces crates.io with /usr/share/cargo/registry.
# Debian: cargo rustc librust-hyper-dev (with its http2 feature, on
# librust-h2-dev: the gRPC port) librust-tokio-dev
# librust-serde-urlencoded-dev librust-flate2-dev.

GREPTIME_BIN      := $(BUILD)/greptime/rg-greptime
GREPTIME_REGISTRY ?= /usr/share/cargo/registry
# Debian's cargo, not a rustup one earlier in PATH: the crates are Debian's.
# Looked up as this file is read: `make test` reads it again after
# `make deps` installed /usr/bin/cargo (Makefile, test).
GREPTIME_CARGO    ?= $(firstword $(wildcard /usr/bin/cargo) $(shell command -v cargo 2>/dev/null))
GREPTIME_SRCS     := tests/greptime/Cargo.toml $(wildcard tests/greptime/src/*.rs)

# Without cargo or the crates it is not built and the tests that need it
# skip, saying so (which fails `make test` unless ALLOW_SKIP=1).
ifneq ($(and $(GREPTIME_CARGO),$(wildcard $(GREPTIME_REGISTRY)/hyper-0.14*),$(wildcard $(GREPTIME_REGISTRY)/h2-0.3*)),)
EXTRA_ALL += $(GREPTIME_BIN)
endif

$(BUILD)/greptime/cargo/config.toml:
	@mkdir -p $(@D)
	$(Q)printf '%s\n' '[source.crates-io]' 'replace-with = "debian"' \
		'[source.debian]' 'directory = "$(GREPTIME_REGISTRY)"' \
		'[net]' 'offline = true' >$@

# The package is copied into build/ so that cargo's lock file and target
# directory stay out of the source tree.
$(GREPTIME_BIN): $(GREPTIME_SRCS) $(BUILD)/greptime/cargo/config.toml
	$(call msg,CARGO,$@)
	$(Q)mkdir -p $(BUILD)/greptime/pkg/src && cp tests/greptime/Cargo.toml $(BUILD)/greptime/pkg/ && \
		cp tests/greptime/src/*.rs $(BUILD)/greptime/pkg/src/
	$(Q)CARGO_HOME=$(abspath $(BUILD))/greptime/cargo $(GREPTIME_CARGO) build --quiet --release \
		--manifest-path $(BUILD)/greptime/pkg/Cargo.toml \
		--target-dir $(abspath $(BUILD))/greptime/target
	$(Q)cp $(BUILD)/greptime/target/release/rg-greptime $@

# The line-protocol and protobuf rules' own tests (make greptime-test).
.PHONY: greptime-test
greptime-test: $(GREPTIME_BIN)
	$(Q)CARGO_HOME=$(abspath $(BUILD))/greptime/cargo $(GREPTIME_CARGO) test --quiet --release \
		--manifest-path $(BUILD)/greptime/pkg/Cargo.toml \
		--target-dir $(abspath $(BUILD))/greptime/target
