# SPDX-License-Identifier: GPL-2.0
# Concurrency exactness and the soak with faults.  build/tests/bucket_replay
# replays bucket operations through include/rowgate/bucket.h for
# tests/e2e/concurrency.sh; `make soak` runs bench/soak/soak.sh for
# SOAK_MINUTES (default 30), prints its figures and keeps them in
# build/soak-figures.json.

SOAK_MINUTES ?= 30

.PHONY: soak

$(BUILD)/tests/bucket_replay: tests/e2e/bucket_replay.c $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@

EXTRA_ALL += $(BUILD)/tests/bucket_replay

soak: all
	$(Q)BUILD=$(BUILD) bench/soak/soak.sh --minutes $(SOAK_MINUTES) --results $(BUILD)/soak-figures.json
