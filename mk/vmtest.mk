# SPDX-License-Identifier: GPL-2.0
# vmtest: run the BPF and end-to-end suites inside qemu on the kernels listed
# in vmtest/kernels (Debian 12's 6.1 first).  `make vmtest`; see
# vmtest/README.md for the knobs (VMTEST_KERNELS, VMTEST_TIMEOUT, TESTS,
# VMTEST_SHELL=1, ...).

VMTEST_OUT  := $(BUILD)/vmtest
VMTEST_BINS := $(VMTEST_OUT)/bpf_load $(VMTEST_OUT)/smoke/selftest.bpf.o

.PHONY: vmtest vmtest-bins vmtest-deps

vmtest: all vmtest-bins
	$(Q)BUILD=$(BUILD) vmtest/run.sh

vmtest-bins: $(VMTEST_BINS)

# Install what vmtest needs on the host (qemu, busybox-static, cpio).
vmtest-deps:
	$(Q)vmtest/run.sh --deps-only

$(VMTEST_OUT)/bpf_load: vmtest/smoke/bpf_load.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ $(BPF_LIBS)

$(VMTEST_OUT)/smoke/%.bpf.o: vmtest/smoke/%.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Instruction counts of every BPF program as this kernel's verifier walks
# them: compare before and after a change to the kernel path.
.PHONY: bpf-insns
bpf-insns: bpf $(VMTEST_OUT)/bpf_load
	$(Q)$(VMTEST_OUT)/bpf_load $(BPF_OBJS)
