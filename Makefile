# SPDX-License-Identifier: GPL-2.0
# rowgate: one entry point.  `make` builds everything into build/,
# `make test` runs every test (installing what the tests need first, when
# something is missing), `make deps` installs what building and running need.
# Quiet by default; V=1 prints full commands.

BUILD    ?= build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
OPT      ?= -O2

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

COMMON_CFLAGS := -std=gnu11 -g -Wall -Wextra -Werror -Iinclude -I$(BUILD) -D_GNU_SOURCE
USER_CFLAGS   := $(COMMON_CFLAGS) $(OPT)
SAN_CFLAGS    := $(COMMON_CFLAGS) -O1 -fsanitize=address,undefined \
                 -fno-omit-frame-pointer -fno-sanitize-recover=all
BPF_CFLAGS    := -target bpf -mcpu=v3 -g -O2 -Wall -Werror -D__TARGET_ARCH_x86 \
                 -Iinclude -I$(BUILD) -Ibpf
BPF_LIBS      := -lbpf -lelf -lz

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
SKELS     := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)
# Headers shared by BPF and userspace, and the BPF-only ones, with their
# HTTP/2 wings (include/rowgate/h2/, bpf/h2/).
SHARED_H  := $(wildcard include/rowgate/*.h include/rowgate/h2/*.h)
BPF_H     := $(wildcard bpf/*.h bpf/h2/*.h)

# Native unit tests: tests/unit/test_X.c -> build/tests/unit/test_X, built
# with ASan/UBSan.  A fragment may set UNIT_EXTRA_test_X (more sources) and
# UNIT_LIBS_test_X (libraries).
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)

USER_BINS :=
EXTRA_ALL :=

.PHONY: all test deps test-deps clean bpf unit headers-check
.DELETE_ON_ERROR:
.SECONDARY:
.SECONDEXPANSION:

all: headers-check bpf unit userspace

# Component fragments (userspace binaries, benchmarks, vmtest) add to
# USER_BINS / EXTRA_ALL and declare their own rules.
include $(sort $(wildcard mk/*.mk))

userspace: $(USER_BINS) $(EXTRA_ALL)
bpf: $(BPF_OBJS) $(SKELS)
unit: $(UNIT_BINS)

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(SHARED_H) $(BPF_H)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Every header compiles alone, as the only include of an empty file: a
# header that leans on what its includer happened to include first breaks
# the build.  bpf/*.h and bpf/h2/*.h for BPF; include/rowgate/*.h and
# include/rowgate/h2/*.h for BPF and natively,
# but for the userspace-only ones (libc headers).  A stamp per header and
# flavour, redone when any header changes.
HDR_NATIVE_ONLY := include/rowgate/h2/hpack_huffman.h
HDR_ALL         := $(BPF_H) $(SHARED_H)
HDR_STAMPS      := $(patsubst %,$(BUILD)/hdr/%.bpf,$(BPF_H) $(filter-out $(HDR_NATIVE_ONLY),$(SHARED_H))) \
		   $(patsubst %,$(BUILD)/hdr/%.native,$(SHARED_H))

headers-check: $(HDR_STAMPS)

$(BUILD)/hdr/%.bpf: % $(HDR_ALL) $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(call msg,HDR-BPF,$<)
	$(Q)$(CLANG) $(BPF_CFLAGS) -fsyntax-only -x c -include $< /dev/null
	$(Q)touch $@

$(BUILD)/hdr/%.native: % $(HDR_ALL)
	@mkdir -p $(@D)
	$(call msg,HDR-CC,$<)
	$(Q)$(CC) $(USER_CFLAGS) -fsyntax-only -x c -include $< /dev/null
	$(Q)touch $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@

$(BUILD)/tests/unit/%: tests/unit/%.c $(SHARED_H) $$(UNIT_EXTRA_$$*)
	@mkdir -p $(@D)
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(SAN_CFLAGS) $< $(UNIT_EXTRA_$*) -o $@ $(UNIT_LIBS_$*)

# The suite's build is a make of its own: test-deps may install Go, cargo
# and clang's fuzzer runtime after this Makefile was read, so what
# mk/grpc.mk, mk/greptime.mk and mk/fuzz.mk decided from the machine then
# would leave their programs out (and their tests skipped).  A skip fails
# the run unless ALLOW_SKIP=1 (tests/run.sh), which also lets the suite run
# on what is there when the packages cannot be installed.
test:
	$(Q)tools/install-deps.sh test --if-missing || [ "$(ALLOW_SKIP)" = 1 ]
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

# Building and running rowgate: compilers, libbpf, the decoders' libraries.
# Never a server (tools/install-deps.sh).
deps:
	$(Q)tools/install-deps.sh build

# The tests' and benchmarks' servers (installed, never started), clients,
# Go, cargo, qemu and npm modules.
test-deps:
	$(Q)tools/install-deps.sh test

# deps before what is named with it (`make deps test`), -j or not.
all test test-deps demo vmtest bench: | $(filter deps,$(MAKECMDGOALS))

clean:
	rm -rf $(BUILD)

# A local victoria-metrics guarded by rowgated with a demo limit (root).
demo:
	$(Q)tools/install-deps.sh demo --if-missing
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo.sh
.PHONY: demo
