# rowgated: the host agent, linking the BPF skeleton and the control-plane
# libraries of mk/ctl.mk.

RG_D_SRCS := user/rowgated.c $(RG_CTL_LIB_SRCS)

USER_BINS += $(BUILD)/rowgated

$(BUILD)/rowgated: $(RG_D_SRCS) $(RG_CTL_HDRS) $(SHARED_H) $(BUILD)/rowgate.skel.h
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_D_SRCS) -o $@ $(RG_CTL_LIB_LIBS) -lelf -lz
