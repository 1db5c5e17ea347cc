# SPDX-License-Identifier: GPL-2.0
# user/lib: what several binaries share, built once as a static library
# (build/user/librowgate.a: each binary takes the objects it calls).
# Logging, input validation, the limits state file and its JSON codec, the
# admin socket, pins and map contents (maps.c), the counter tables as data,
# detaching, enforcement health read from the kernel, the XDP loader,
# rowgate-meta's wire protocol and its HTTP client, systemd's readiness
# notification (notify.c), writing a whole buffer to a socket or file
# (io.c, which rg-count links alone).

RG_LIB_SRCS := $(wildcard user/lib/*.c)
RG_LIB_HDRS := $(wildcard user/lib/*.h)
RG_LIB_OBJS := $(RG_LIB_SRCS:%.c=$(BUILD)/%.o)
RG_LIB      := $(BUILD)/user/librowgate.a
# What a binary linking RG_LIB adds after it.
RG_LIB_LIBS := -ljansson -lcurl -lbpf -lelf -lz

$(BUILD)/user/lib/%.o: user/lib/%.c $(RG_LIB_HDRS) $(SHARED_H) $(BUILD)/xdp.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(RG_LIB): $(RG_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# Unit tests build the sources they test with ASan/UBSan.
UNIT_EXTRA_test_limits    := user/lib/limits.c
UNIT_EXTRA_test_state     := user/lib/state.c user/lib/io.c user/lib/limits.c
UNIT_LIBS_test_state      := -ljansson
UNIT_EXTRA_test_admin     := user/lib/admin.c user/lib/log.c user/lib/limits.c user/lib/state.c user/lib/io.c
UNIT_LIBS_test_admin      := -ljansson -lbpf -lpthread
UNIT_EXTRA_test_meta_proto := user/lib/meta_proto.c user/lib/log.c user/lib/limits.c \
                              user/lib/state.c user/lib/io.c
UNIT_LIBS_test_meta_proto := -ljansson -lbpf
UNIT_EXTRA_test_tables    := user/lib/counters.c user/lib/state.c user/lib/io.c user/lib/limits.c \
                             $(DECODE_LIB_SRCS)
UNIT_LIBS_test_tables     := -ljansson $(DECODE_LIB_LIBS)
UNIT_EXTRA_test_btf_layout := user/lib/maps.c user/lib/log.c
UNIT_LIBS_test_btf_layout := -lbpf -lelf -lz
UNIT_EXTRA_test_notify    := user/lib/notify.c
UNIT_EXTRA_test_log       := user/lib/log.c
UNIT_LIBS_test_log        := -lbpf

# The unit rule knows only the shared headers; ours matter too.
$(BUILD)/tests/unit/test_limits $(BUILD)/tests/unit/test_state \
$(BUILD)/tests/unit/test_admin $(BUILD)/tests/unit/test_meta_proto \
$(BUILD)/tests/unit/test_btf_layout $(BUILD)/tests/unit/test_notify \
$(BUILD)/tests/unit/test_log: $(RG_LIB_HDRS)
$(BUILD)/tests/unit/test_tables: $(RG_LIB_HDRS) user/decode/count.h
# test_admin runs the real client binary against its server.
$(BUILD)/tests/unit/test_admin: | $(BUILD)/rowgatectl
