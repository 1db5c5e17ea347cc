# SPDX-License-Identifier: GPL-2.0
# rowgated (user/rowgated/): the host agent, linking the BPF skeleton, the
# shared library (mk/lib.mk) and the counting library (mk/decode.mk).

RG_D_SRCS := $(wildcard user/rowgated/*.c) $(DECODE_LIB_SRCS)
RG_D_HDRS := $(wildcard user/rowgated/*.h) $(RG_LIB_HDRS) $(DECODE_HDRS)
RG_D_LIBS := $(RG_LIB_LIBS) $(DECODE_LIB_LIBS) -lmicrohttpd -linih -lpthread

USER_BINS += $(BUILD)/rowgated

$(BUILD)/rowgated: $(RG_D_SRCS) $(RG_D_HDRS) $(RG_LIB) $(SHARED_H) $(BUILD)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_D_SRCS) $(RG_LIB) $(LDFLAGS) -o $@ $(RG_D_LIBS)

UNIT_EXTRA_test_reconcile := user/rowgated/reconcile.c user/lib/log.c user/lib/counters.c \
                             user/lib/state.c user/lib/io.c user/lib/limits.c $(DECODE_LIB_SRCS)
UNIT_LIBS_test_reconcile  := -lbpf -lelf -lz -ljansson $(DECODE_LIB_LIBS)
$(BUILD)/tests/unit/test_reconcile: $(RG_D_HDRS)

# A second rowgated from a rebuilt BPF object (build id 2, visible as
# rg_build_id in bpftool): tests/e2e/upgrade.sh swaps between the two under
# load.
RG_V2 := $(BUILD)/tests/v2
USER_BINS += $(RG_V2)/rowgated

$(RG_V2)/rowgate.bpf.o: bpf/rowgate.bpf.c $(BUILD)/vmlinux.h $(SHARED_H) $(BPF_H)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DRG_BUILD_ID=2 -c $< -o $@

$(RG_V2)/rowgate.skel.h: $(RG_V2)/rowgate.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name rowgate > $@

$(RG_V2)/rowgated: $(RG_D_SRCS) $(RG_D_HDRS) $(RG_LIB) $(SHARED_H) $(RG_V2)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -I$(RG_V2) $(USER_CFLAGS) $(RG_D_SRCS) $(RG_LIB) $(LDFLAGS) -o $@ $(RG_D_LIBS)
