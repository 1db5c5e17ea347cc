# SPDX-License-Identifier: GPL-2.0
# Benchmarks (bench/): `make bench` runs every figure side by side and
# writes bench/RESULTS.md; bench/count_lines is figure 3's userspace
# yardstick (memchr over the same bytes the kernel counts).

.PHONY: bench

$(BUILD)/bench/count_lines: bench/count_lines.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@

EXTRA_ALL += $(BUILD)/bench/count_lines

bench:
	$(Q)tools/install-deps.sh test --if-missing
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) bench/run.sh
