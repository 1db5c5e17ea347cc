# SPDX-License-Identifier: GPL-2.0
# GreptimeDB gRPC ingestion test stack (tests/grpc/): the protobuf
# module the gRPC C-core test server imports, and the grpc-go client, both
# from proto/greptime/v1/ingest.proto.  The grpc-js client runs from
# tests/grpc/node_modules (make deps).
# Debian: python3-grpcio python3-protobuf protobuf-compiler golang-go
# golang-google-grpc-dev golang-google-protobuf-dev protoc-gen-go
# golang-github-klauspost-compress-dev.

GRPC_PROTO  := proto/greptime/v1/ingest.proto
GRPC_PY     := $(BUILD)/grpc/py/greptime/v1/ingest_pb2.py
GRPC_GO_DIR := $(BUILD)/grpc/go
GRPC_GO_BIN := $(BUILD)/grpc/rg-grpc-go
GRPC_GO_SRV := $(BUILD)/grpc/rg-grpc-go-server
# Debian's Go packages are a GOPATH tree; no module download.
GRPC_GOPATH ?= /usr/share/gocode

# OTLP messages for the same server's OTLP/gRPC exports (proto/otlp.proto:
# package rowgate.otlp, wire-compatible with opentelemetry-proto)
GRPC_PY_OTLP := $(BUILD)/grpc/py/otlp_pb2.py
# Arrow Flight DoPut for its bulk writes (proto/flight.proto: package
# arrow.flight.protocol, wire-compatible with Apache Arrow's Flight.proto)
GRPC_PY_FLIGHT := $(BUILD)/grpc/py/flight_pb2.py
EXTRA_ALL += $(GRPC_PY) $(GRPC_PY_OTLP) $(GRPC_PY_FLIGHT)
# Without Go and Debian's grpc-go the client is not built and the tests
# that need it skip, saying so (which fails `make test` unless
# ALLOW_SKIP=1).  Decided as this file is read: `make test` reads it again
# after `make deps` installed them (Makefile, test).
ifneq ($(and $(shell command -v go 2>/dev/null),$(shell command -v protoc-gen-go 2>/dev/null),$(wildcard $(GRPC_GOPATH)/src/google.golang.org/grpc),$(wildcard $(GRPC_GOPATH)/src/github.com/klauspost/compress/zstd)),)
EXTRA_ALL += $(GRPC_GO_BIN) $(GRPC_GO_SRV)
endif

$(GRPC_PY): $(GRPC_PROTO)
	@mkdir -p $(BUILD)/grpc/py
	$(call msg,PROTOC,$@)
	$(Q)protoc --proto_path=proto --python_out=$(BUILD)/grpc/py greptime/v1/ingest.proto

$(GRPC_PY_OTLP): proto/otlp.proto
	@mkdir -p $(BUILD)/grpc/py
	$(call msg,PROTOC,$@)
	$(Q)protoc --proto_path=proto --python_out=$(BUILD)/grpc/py otlp.proto

$(GRPC_PY_FLIGHT): proto/flight.proto
	@mkdir -p $(BUILD)/grpc/py
	$(call msg,PROTOC,$@)
	$(Q)protoc --proto_path=proto --python_out=$(BUILD)/grpc/py flight.proto

# One GOPATH-mode package per program: the generated messages, main.go
# and the files both programs share (tests/grpc/gocommon).
GRPC_GO_COMMON := $(wildcard tests/grpc/gocommon/*.go)
# $(1): program, $(2): source directory under tests/grpc, $(3): package dir.
define grpc_go_prog
$(1): tests/grpc/$(2)/main.go $$(GRPC_GO_COMMON) $$(GRPC_PROTO)
	@mkdir -p $$(GRPC_GO_DIR)
	$$(call msg,GO,$$@)
	$$(Q)protoc --proto_path=proto --go_out=$$(GRPC_GO_DIR) --go_opt=paths=import \
		--go_opt='Mgreptime/v1/ingest.proto=rowgate/$(3);main' greptime/v1/ingest.proto
	$$(Q)cp tests/grpc/$(2)/main.go $$(GRPC_GO_COMMON) $$(GRPC_GO_DIR)/rowgate/$(3)/
	$$(Q)cd $$(GRPC_GO_DIR)/rowgate/$(3) && GO111MODULE=off GOPATH=$$(GRPC_GOPATH) \
		GOCACHE=$$(abspath $$(BUILD))/grpc/gocache go build -o $$(abspath $$@) .
endef
$(eval $(call grpc_go_prog,$(GRPC_GO_BIN),goclient,grpcclient))
$(eval $(call grpc_go_prog,$(GRPC_GO_SRV),goserver,grpcserver))

# The parser of include/rowgate/h2/ inside an sk_skb verdict: built here and
# loaded by tests/bpf/h2_load.sh (vmtest: on 6.1) to keep it BPF-compatible.
EXTRA_ALL += $(BUILD)/tests/bpf/h2_load.bpf.o $(BUILD)/vmtest/bpf_load

$(BUILD)/tests/bpf/h2_load.bpf.o: tests/bpf/h2_load.bpf.c tests/bpf/h2_load.h $(BUILD)/vmlinux.h $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/tests/unit/test_h2: SAN_CFLAGS += -DRG_GRPC_FIXTURE_DIR='"$(abspath tests/fixtures/grpc)"'
$(BUILD)/tests/unit/test_h2: $(wildcard tests/fixtures/grpc/*.bin)

# Its userspace driver: the same verdict on real gRPC connections
# (tests/bpf/h2_kern.sh).
EXTRA_ALL += $(BUILD)/tests/h2_kern

$(BUILD)/tests/h2_kern: tests/bpf/h2_kern.c tests/bpf/h2_load.h $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ $(BPF_LIBS)

# test_h2 also counts compressed messages the way rowgated does (user/decode)
UNIT_EXTRA_test_h2 := $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS)
UNIT_LIBS_test_h2  := $(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)
