# SPDX-License-Identifier: GPL-2.0
# tools/kernel-patches: the sockmap series for Debian 12's 6.1, its kernels
# and its selftests (tools/kernel-patches/README.md).  None of it is part of
# `all`, `make test` or .ci/run.
#
#   make kernel-patched            build/kernel-patched/bzImage (cached)
#   make kernel-stock              build/kernel-stock/bzImage, same config
#   make kpatch-selftests          the reproducers, host-built
#   make kpatch-vmtest             the reproducers on Debian's stock 6.1 and
#                                  on the patched kernel, one run
#   make vmtest KERNEL=patched     vmtest's suite on the patched kernel only
#   make vmtest KERNEL=both        ... on Debian's 6.1 and the patched kernel

KP_SRC := tools/kernel-patches
KP_OUT := $(BUILD)/kernel-patches/selftests
KP_TESTS := $(KP_OUT)/sockmap_drop_wake $(KP_OUT)/sockmap_overlap $(KP_OUT)/sockmap_pre_accept

.PHONY: kernel-patched kernel-stock kpatch-selftests kpatch-vmtest

kernel-patched:
	$(Q)BUILD=$(BUILD) $(KP_SRC)/build.sh patched

kernel-stock:
	$(Q)BUILD=$(BUILD) $(KP_SRC)/build.sh stock

kpatch-selftests: $(KP_TESTS) repro

$(KP_OUT)/sockmap_verdict.bpf.o: $(KP_SRC)/selftests/sockmap_verdict.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -target bpf -mcpu=v3 -g -O2 -Wall -Werror -I/usr/include/$(shell $(CC) -print-multiarch) -c $< -o $@

$(KP_OUT)/sockmap_verdict.skel.h: $(KP_OUT)/sockmap_verdict.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sockmap_verdict > $@

$(KP_OUT)/%: $(KP_SRC)/selftests/%.c $(KP_SRC)/selftests/common.h $(KP_OUT)/sockmap_verdict.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -I$(KP_OUT) $< -o $@ $(BPF_LIBS) -lpthread

# The selftests on Debian's stock 6.1 and the patched kernel in one run, in
# their own vmtest build directory.  KP_KERNELS=debian12-6.1,stock-6.1,patched-6.1
# adds our stock build (make kernel-stock first).
KP_KERNELS ?= debian12-6.1,patched-6.1
kpatch-vmtest: kpatch-selftests kernel-patched
	$(Q)BUILD=$(BUILD)/kernel-patches/vm VMTEST_LIST=$(KP_SRC)/selftests/vmtest.list \
		VMTEST_KERNELS_FILE=$(KP_SRC)/vmtest.kernels VMTEST_KERNELS=$(KP_KERNELS) \
		V=1 nice -n 19 vmtest/run.sh

ifeq ($(KERNEL),patched)
vmtest: kernel-patched
export VMTEST_KERNELS_FILE := $(KP_SRC)/vmtest.kernels.patched
else ifeq ($(KERNEL),both)
vmtest: kernel-patched
export VMTEST_KERNELS_FILE := $(KP_SRC)/vmtest.kernels.both
endif
