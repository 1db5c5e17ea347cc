# SPDX-License-Identifier: GPL-2.0
# user/lib: the one userspace owner of pins and map contents (maps.c) and
# the counter tables as data (counters.c), linked by rowgated, rowgatectl
# and the XDP test loader.  mk/rowgated.mk expands RG_D_SRCS late; the
# rowgatectl recipe expands RG_CTL_SRCS when it runs.

RG_LIB_SRCS := user/lib/maps.c user/lib/counters.c
RG_LIB_HDRS := user/lib/maps.h user/lib/counters.h

RG_D_SRCS += $(RG_LIB_SRCS)
$(BUILD)/rowgated: $(RG_LIB_HDRS)
RG_CTL_SRCS += $(RG_LIB_SRCS)
$(BUILD)/rowgatectl: $(RG_LIB_SRCS) $(RG_LIB_HDRS)

UNIT_EXTRA_test_tables := user/lib/counters.c user/state.c user/limits.c $(DECODE_LIB_SRCS)
UNIT_LIBS_test_tables  := -ljansson $(DECODE_LIB_LIBS)
$(BUILD)/tests/unit/test_tables: $(RG_LIB_HDRS) user/decode/count.h

UNIT_EXTRA_test_btf_layout := user/lib/maps.c user/log.c
UNIT_LIBS_test_btf_layout  := -lbpf -lelf -lz
$(BUILD)/tests/unit/test_btf_layout: $(RG_LIB_HDRS)
