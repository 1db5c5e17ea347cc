# SPDX-License-Identifier: GPL-2.0
# The UDP/XDP path: its loader (user/lib/xdp.c) is linked by rowgated; here
# the BPF_PROG_TEST_RUN test, and the small loader that tests and the
# benchmark drive without a rowgated.

XDP_TEST_BINS := $(BUILD)/tests/bpf/test_xdp $(BUILD)/tests/bpf/xdp_loader
EXTRA_ALL += $(XDP_TEST_BINS)

$(BUILD)/tests/bpf/test_xdp: tests/bpf/test_xdp.c tests/bpf/maps_test.h tests/unit/check.h $(SHARED_H) \
			     $(BUILD)/xdp.skel.h $(BUILD)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ $(BPF_LIBS)

$(BUILD)/tests/bpf/xdp_loader: tests/bpf/xdp_loader.c $(RG_LIB) $(RG_LIB_HDRS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< $(RG_LIB) -o $@ $(RG_LIB_LIBS)

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

# A lossy link for e2e/tcp_retrans (tc ingress of its namespace).
EXTRA_ALL += $(BUILD)/tests/bpf/lossy.bpf.o
$(BUILD)/tests/bpf/lossy.bpf.o: tests/bpf/lossy.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -target bpf -O2 -g -Wall -Werror -I/usr/include/$(shell gcc -dumpmachine) -c $< -o $@
