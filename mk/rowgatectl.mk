# SPDX-License-Identifier: GPL-2.0
# rowgatectl (user/rowgatectl/): the command line over the admin socket, the
# pins and rowgate-meta, and the GreptimeDB statements it reads (sqlopt.c).

RG_CTL_SRCS := $(wildcard user/rowgatectl/*.c)
RG_CTL_HDRS := $(wildcard user/rowgatectl/*.h)

USER_BINS += $(BUILD)/rowgatectl

$(BUILD)/rowgatectl: $(RG_CTL_SRCS) $(RG_CTL_HDRS) $(RG_LIB) $(RG_LIB_HDRS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_CTL_SRCS) $(RG_LIB) $(LDFLAGS) -o $@ $(RG_LIB_LIBS)

UNIT_EXTRA_test_sqlopt := user/rowgatectl/sqlopt.c user/lib/limits.c
$(BUILD)/tests/unit/test_sqlopt: $(RG_CTL_HDRS) $(RG_LIB_HDRS)
