# SPDX-License-Identifier: GPL-2.0
# The UDP/XDP path: its loader (user/xdp.c) is linked by rowgated; here the
# BPF_PROG_TEST_RUN test, and the small loader that tests and the benchmark
# drive without a rowgated.

RG_XDP_SRCS := user/xdp.c user/log.c user/limits.c user/state.c $(RG_LIB_SRCS)
RG_XDP_HDRS := user/xdp.h user/log.h user/limits.h user/state.h $(RG_LIB_HDRS)

XDP_TEST_BINS := $(BUILD)/tests/bpf/test_xdp $(BUILD)/tests/bpf/xdp_loader
EXTRA_ALL += $(XDP_TEST_BINS)

$(BUILD)/tests/bpf/test_xdp: tests/bpf/test_xdp.c tests/bpf/maps_test.h tests/unit/check.h $(SHARED_H) \
			     $(BUILD)/xdp.skel.h $(BUILD)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ $(BPF_LIBS)

$(BUILD)/tests/bpf/xdp_loader: tests/bpf/xdp_loader.c $(RG_XDP_SRCS) $(RG_XDP_HDRS) \
			       $(SHARED_H) $(BUILD)/xdp.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< $(RG_XDP_SRCS) -o $@ -ljansson $(BPF_LIBS)

# bench/xdp_bench.sh: UDP blaster and the userspace rejecting receiver.
$(BUILD)/bench/udp_load: bench/udp_load.c $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@

EXTRA_ALL += $(BUILD)/bench/udp_load

# rg_reconcile (the HTTP object's correction program) under BPF_PROG_TEST_RUN.
$(BUILD)/tests/bpf/test_reconcile: tests/bpf/test_reconcile.c tests/bpf/maps_test.h tests/unit/check.h $(SHARED_H) \
				   $(BUILD)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ $(BPF_LIBS)

EXTRA_ALL += $(BUILD)/tests/bpf/test_reconcile
