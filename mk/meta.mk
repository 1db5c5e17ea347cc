# SPDX-License-Identifier: GPL-2.0
# Distributed mode: rowgate-meta (the allocator, user/meta/), rowgated's
# heartbeat agent (user/meta_agent.c) and rowgatectl --meta.
#

RG_META_PROTO_SRCS  := user/meta/proto.c user/meta/http_client.c
RG_META_HDRS        := $(wildcard user/meta/*.h) user/meta_agent.h
RG_META_LIB_SRCS    := user/log.c user/limits.c user/state.c
RG_META_SRCS        := user/meta/server.c user/meta/cluster.c user/meta/etcd.c \
                       $(RG_META_PROTO_SRCS) user/meta/alloc.c $(RG_META_LIB_SRCS)
RG_META_LIBS        := -lmicrohttpd -lcurl -ljansson -lbpf -lpthread

USER_BINS += $(BUILD)/rowgate-meta

$(BUILD)/rowgate-meta: $(RG_META_SRCS) $(RG_META_HDRS) $(RG_CTL_HDRS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_META_SRCS) -o $@ $(RG_META_LIBS)

# rowgated: the agent thread and the HTTP client (mk/rowgated.mk expands
# RG_D_SRCS / RG_D_LIBS late); rowgatectl: the client (RG_CTL_SRCS is
# expanded when mk/ctl.mk is read, so its prerequisites are added here).
RG_D_SRCS       += user/meta_agent.c $(RG_META_PROTO_SRCS)
RG_D_LIBS       += -lcurl -lpthread
RG_CTL_SRCS     += $(RG_META_PROTO_SRCS)
RG_CTL_LIB_LIBS += -lcurl
$(BUILD)/rowgatectl: $(RG_META_PROTO_SRCS) $(RG_META_HDRS)

# Unit tests of the pure parts: messages, routing, auth, allocation glue, base64.
UNIT_EXTRA_test_meta_proto   := user/meta/proto.c $(RG_META_LIB_SRCS)
UNIT_LIBS_test_meta_proto    := -ljansson -lbpf
UNIT_EXTRA_test_meta_cluster := user/meta/cluster.c user/meta/proto.c user/meta/alloc.c \
                                $(RG_META_LIB_SRCS)
UNIT_LIBS_test_meta_cluster  := -ljansson -lbpf
UNIT_EXTRA_test_meta_etcd    := user/meta/etcd.c user/meta/http_client.c $(RG_META_LIB_SRCS)
UNIT_LIBS_test_meta_etcd     := -ljansson -lcurl -lbpf
$(BUILD)/tests/unit/test_meta_proto $(BUILD)/tests/unit/test_meta_cluster \
$(BUILD)/tests/unit/test_meta_etcd: $(RG_META_HDRS) $(RG_CTL_HDRS)
