# SPDX-License-Identifier: GPL-2.0
# tools/repro/copied_seq: a minimal, self-contained reproducer of the kernel's
# copied_seq write-back in tcp_bpf_recvmsg_parser() (docs/design.md#pre-accept-data).
# `make repro && build/repro/copied_seq` (root).  A tool, not a test: it is
# not part of `all` or the test suite.

REPRO_SRC := tools/repro/copied_seq
REPRO_OUT := $(BUILD)/repro

.PHONY: repro
repro: $(REPRO_OUT)/copied_seq

$(REPRO_OUT)/repro.bpf.o: $(REPRO_SRC)/repro.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(REPRO_OUT)/repro.skel.h: $(REPRO_OUT)/repro.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name repro > $@

$(REPRO_OUT)/copied_seq: $(REPRO_SRC)/repro.c $(REPRO_OUT)/repro.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -I$(REPRO_OUT) $< -o $@ $(BPF_LIBS)
