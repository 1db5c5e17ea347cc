# SPDX-License-Identifier: GPL-2.0
# Quota allocator (user/meta/alloc.c): its unit test and the deterministic
# simulator that compares it with the anchor strategies (bench/sim/).

UNIT_EXTRA_test_alloc := user/meta/alloc.c

SIM_SRCS := bench/sim/sim.c user/meta/alloc.c

$(BUILD)/bench/sim: $(SIM_SRCS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(SIM_SRCS) -o $@ -lm

EXTRA_ALL += $(BUILD)/bench/sim
