# SPDX-License-Identifier: GPL-2.0
# rowgatectl and the small libraries it shares with rowgated: logging, input
# validation, the limits state file and the admin socket.

# What rowgated links too (it adds its own sources and -ljansson -lbpf).
RG_CTL_LIB_SRCS := user/log.c user/limits.c user/state.c user/admin.c
RG_CTL_LIB_LIBS := -ljansson -lbpf
RG_CTL_HDRS     := user/log.h user/limits.h user/state.h user/admin.h \
                   user/sqlopt.h

RG_CTL_SRCS := user/rowgatectl.c user/sqlopt.c user/pins.c user/health.c user/xdp.c \
               $(RG_CTL_LIB_SRCS)

USER_BINS += $(BUILD)/rowgatectl

$(BUILD)/rowgatectl: $(RG_CTL_SRCS) $(RG_CTL_HDRS) $(SHARED_H) user/pins.h user/health.h \
                      $(BUILD)/xdp.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_CTL_SRCS) -o $@ $(RG_CTL_LIB_LIBS)

UNIT_EXTRA_test_limits := user/limits.c
UNIT_EXTRA_test_sqlopt := user/sqlopt.c user/limits.c
UNIT_EXTRA_test_state  := user/state.c user/limits.c
UNIT_LIBS_test_state   := -ljansson
UNIT_EXTRA_test_admin  := $(RG_CTL_LIB_SRCS)
UNIT_LIBS_test_admin   := $(RG_CTL_LIB_LIBS) -lpthread

# The unit rule knows only the shared headers; ours matter too.
$(BUILD)/tests/unit/test_limits $(BUILD)/tests/unit/test_sqlopt \
$(BUILD)/tests/unit/test_state $(BUILD)/tests/unit/test_admin: $(RG_CTL_HDRS)
# test_admin runs the real client binary against its server.
$(BUILD)/tests/unit/test_admin: | $(BUILD)/rowgatectl
