# SPDX-License-Identifier: GPL-2.0
# libFuzzer targets (tests/fuzz/fuzz_X.c -> build/fuzz/fuzz_X), built with
# ASan/UBSan by clang when its fuzzer runtime (Debian: libclang-rt-14-dev)
# is installed.  `make fuzz` runs each for FUZZ_SECONDS and grows its corpus
# in tests/fuzz/corpus/X/; `make test` replays every corpus (tests/fuzz/replay.sh).
# A target may set FUZZ_EXTRA_X (more sources), FUZZ_LIBS_X and FUZZ_CFLAGS_X.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_RUNTIME := $(wildcard $(shell $(FUZZ_CC) --print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a)
FUZZ_CFLAGS  := $(COMMON_CFLAGS) -O1 -fsanitize=fuzzer,address,undefined \
		-fno-omit-frame-pointer -fno-sanitize-recover=all -Itests/fuzz

FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=%)
FUZZ_BINS    := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)

ifneq ($(FUZZ_RUNTIME),)
EXTRA_ALL += $(FUZZ_BINS)
endif

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(SHARED_H) $$(FUZZ_EXTRA_$$*)
	@mkdir -p $(@D)
	$(call msg,CC-FUZZ,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_CFLAGS_$*) $< $(FUZZ_EXTRA_$*) -o $@ $(FUZZ_LIBS_$*)

fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) BUILD=$(BUILD) tools/fuzz.sh $(FUZZ_TARGETS)
.PHONY: fuzz

# The references the unit tests share with the fuzzers.
$(BUILD)/tests/unit/test_rows: tests/unit/rows_ref.h
$(BUILD)/tests/unit/test_response: tests/unit/response_ref.h
FUZZ_CFLAGS_rows     := -Itests/unit
FUZZ_CFLAGS_response := -Itests/unit
$(BUILD)/fuzz/fuzz_rows: tests/unit/rows_ref.h
$(BUILD)/fuzz/fuzz_response: tests/unit/response_ref.h
# Prerequisites are expanded as this fragment is read, before mk/lib.mk.
FUZZ_LIB_HDRS        := $(wildcard user/lib/*.h)
FUZZ_EXTRA_dbname    := user/lib/limits.c
FUZZ_EXTRA_limits    := user/lib/limits.c
FUZZ_EXTRA_sqlopt    := user/rowgatectl/sqlopt.c user/lib/limits.c
$(BUILD)/fuzz/fuzz_dbname $(BUILD)/fuzz/fuzz_limits: $(FUZZ_LIB_HDRS)
$(BUILD)/fuzz/fuzz_sqlopt: $(FUZZ_LIB_HDRS) user/rowgatectl/sqlopt.h
FUZZ_EXTRA_meta_proto  := user/lib/meta_proto.c user/lib/limits.c user/lib/state.c user/lib/io.c user/lib/log.c
FUZZ_LIBS_meta_proto   := -ljansson -lbpf
$(BUILD)/fuzz/fuzz_meta_proto: $(FUZZ_LIB_HDRS)
# The decoders: the counting library, the real encoders and protobuf-c's
# unpacked messages (tests/unit/decode_ref.c, the walker's reference).
FUZZ_DECODE_SRCS := $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS)
FUZZ_DECODE_LIBS := $(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)
FUZZ_DECODE_DEPS := $(DECODE_HDRS) $(DECODE_PB_H)
# clang, unlike gcc, warns about unused static inline functions in .c files.
FUZZ_DECODE_CFLAGS := -Iuser/decode -I$(BUILD) -Wno-unused-function
FUZZ_CFLAGS_decompress := $(FUZZ_DECODE_CFLAGS)
FUZZ_EXTRA_decompress  := $(FUZZ_DECODE_SRCS)
FUZZ_LIBS_decompress   := $(FUZZ_DECODE_LIBS)
$(BUILD)/fuzz/fuzz_decompress: $(FUZZ_DECODE_DEPS)
FUZZ_CFLAGS_pbwalk := $(FUZZ_DECODE_CFLAGS) -Itests/unit
FUZZ_EXTRA_pbwalk  := $(FUZZ_DECODE_SRCS) tests/unit/decode_ref.c
FUZZ_LIBS_pbwalk   := $(FUZZ_DECODE_LIBS)
$(BUILD)/fuzz/fuzz_pbwalk: $(FUZZ_DECODE_DEPS) tests/unit/decode_ref.h
FUZZ_CFLAGS_json    := $(FUZZ_DECODE_CFLAGS)
FUZZ_EXTRA_json     := $(DECODE_LIB_SRCS)
FUZZ_LIBS_json      := $(DECODE_LIB_LIBS)
FUZZ_CFLAGS_payload := $(FUZZ_DECODE_CFLAGS)
FUZZ_EXTRA_payload  := $(DECODE_LIB_SRCS)
FUZZ_LIBS_payload   := $(DECODE_LIB_LIBS)
$(BUILD)/fuzz/fuzz_json $(BUILD)/fuzz/fuzz_payload: $(DECODE_HDRS)
FUZZ_EXTRA_state := user/lib/state.c user/lib/io.c user/lib/limits.c
FUZZ_LIBS_state  := -ljansson
$(BUILD)/fuzz/fuzz_state: $(FUZZ_LIB_HDRS)
# The HTTP/2 parser with the route lookups unit/test_h2 makes.
FUZZ_CFLAGS_h2 := -Itests/unit
$(BUILD)/fuzz/fuzz_h2: tests/unit/h2_routes_ref.h tests/unit/h2_feed_ref.h
$(BUILD)/tests/unit/test_h2: tests/unit/h2_routes_ref.h tests/unit/h2_feed_ref.h
