# SPDX-License-Identifier: GPL-2.0
# Exact row counting of compressed and binary ingest payloads (user/decode/):
# the library rowgated links, the rg-count tool, the protobuf-c code
# generated from proto/*.proto, the fixture generator, the unit test and the
# reconciliation benchmark.
# Debian: libprotobuf-c-dev protobuf-c-compiler libzstd-dev libbrotli-dev
# libsnappy-dev zlib1g-dev libjansson-dev.

PROTOC_C ?= protoc-c

DECODE_PROTOS := $(wildcard proto/*.proto)
DECODE_PB_C   := $(DECODE_PROTOS:proto/%.proto=$(BUILD)/proto/%.pb-c.c)
DECODE_PB_H   := $(DECODE_PROTOS:proto/%.proto=$(BUILD)/proto/%.pb-c.h)

# The counting library (what rowgated links): no protobuf-c needed.
DECODE_LIB_SRCS := user/decode/count.c user/decode/payload.c user/decode/decompress.c \
                   user/decode/pbwalk.c user/decode/jsoncount.c user/decode/grpccount.c
DECODE_LIB_LIBS := -ljansson -lz -lzstd -lbrotlidec -lsnappy
DECODE_HDRS     := user/decode/count.h user/decode/decompress.h \
                   user/decode/internal.h user/decode/encode.h
# The encoders: protobuf-c messages and the real compressors.
DECODE_ENC_SRCS := user/decode/encode.c $(DECODE_PB_C)
DECODE_ENC_LIBS := -lprotobuf-c -lbrotlienc

RG_COUNT_SRCS := user/decode/rg_count_main.c user/lib/io.c $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS)
DECODE_BENCH_SRCS := bench/decode_bench.c $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS)
GEN_FIXTURES_SRCS := tests/fixtures/gen_fixtures.c $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS)

USER_BINS += $(BUILD)/rg-count
EXTRA_ALL += $(BUILD)/bench/decode_bench $(BUILD)/fixtures/manifest.txt

# A pattern rule with two targets: one protoc-c run makes both.
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(call msg,PROTOC-C,$<)
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(BUILD)/proto $<

$(BUILD)/rg-count: $(RG_COUNT_SRCS) $(DECODE_HDRS) user/lib/io.h $(DECODE_PB_H) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_COUNT_SRCS) -o $@ $(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)

$(BUILD)/bench/decode_bench: $(DECODE_BENCH_SRCS) $(DECODE_HDRS) $(DECODE_PB_H) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Iuser/decode $(DECODE_BENCH_SRCS) -o $@ \
		$(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)

# Fixture bodies made by the real encoders, with their expected counts in
# manifest.txt; test_decode checks every one.
$(BUILD)/fixtures/gen_fixtures: $(GEN_FIXTURES_SRCS) $(DECODE_HDRS) $(DECODE_PB_H) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Iuser/decode $(GEN_FIXTURES_SRCS) -o $@ \
		$(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)

$(BUILD)/fixtures/manifest.txt: $(BUILD)/fixtures/gen_fixtures
	$(call msg,GEN,$@)
	$(Q)$< $(BUILD)/fixtures > $@.tmp && mv $@.tmp $@

UNIT_EXTRA_test_decode := $(DECODE_LIB_SRCS) $(DECODE_ENC_SRCS) tests/unit/decode_ref.c
UNIT_LIBS_test_decode  := $(DECODE_LIB_LIBS) $(DECODE_ENC_LIBS)
$(BUILD)/tests/unit/test_decode: SAN_CFLAGS += -Iuser/decode \
	-DRG_FIXTURE_DIR='"$(BUILD)/fixtures"'
$(BUILD)/tests/unit/test_decode: $(DECODE_HDRS) $(DECODE_PB_H) \
	tests/unit/decode_ref.h $(BUILD)/fixtures/manifest.txt
