# SPDX-License-Identifier: GPL-2.0
# rowgated: the host agent, linking the BPF skeleton and the control-plane
# libraries of mk/ctl.mk.  Other fragments add sources and libraries with
# RG_D_SRCS += / RG_D_LIBS += (the rule expands them late).

RG_D_SRCS += user/rowgated.c user/metrics.c user/reconcile.c user/xdp.c user/pins.c user/health.c user/adopt.c \
             $(RG_CTL_LIB_SRCS) \
             $(DECODE_LIB_SRCS)
RG_D_LIBS += $(RG_CTL_LIB_LIBS) $(DECODE_LIB_LIBS) -lmicrohttpd -lelf -lz

USER_BINS += $(BUILD)/rowgated

$(BUILD)/rowgated: $$(RG_D_SRCS) $(RG_CTL_HDRS) $(SHARED_H) $(BUILD)/rowgate.skel.h \
		   $(BUILD)/xdp.skel.h \
		   $$(wildcard user/*.h)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(sort $(RG_D_SRCS)) -o $@ $(RG_D_LIBS)

UNIT_EXTRA_test_reconcile := user/reconcile.c user/log.c user/lib/counters.c user/state.c user/limits.c \
                             $(DECODE_LIB_SRCS)
UNIT_LIBS_test_reconcile  := -lbpf -lelf -lz -ljansson $(DECODE_LIB_LIBS)

# A second rowgated from a rebuilt BPF object (build id 2, visible as
# rg_build_id in bpftool): tests/e2e/upgrade.sh swaps between the two under
# load.
RG_V2 := $(BUILD)/tests/v2
USER_BINS += $(RG_V2)/rowgated

$(RG_V2)/rowgate.bpf.o: bpf/rowgate.bpf.c $(BUILD)/vmlinux.h $(SHARED_H) $(wildcard bpf/*.h)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DRG_BUILD_ID=2 -c $< -o $@

$(RG_V2)/rowgate.skel.h: $(RG_V2)/rowgate.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name rowgate > $@

$(RG_V2)/rowgated: $$(RG_D_SRCS) $(RG_CTL_HDRS) $(SHARED_H) $(RG_V2)/rowgate.skel.h \
		   $(BUILD)/xdp.skel.h $$(wildcard user/*.h)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -I$(RG_V2) $(USER_CFLAGS) $(sort $(RG_D_SRCS)) -o $@ $(RG_D_LIBS)
