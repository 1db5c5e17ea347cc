# SPDX-License-Identifier: GPL-2.0
# rowgate-meta (user/meta/): the distributed allocator's server, its
# allocation glue, etcd storage and the quota allocator (alloc.c), with the
# deterministic simulator that compares the allocator with the anchor
# strategies (bench/sim/).  Its wire protocol and HTTP client are in
# user/lib (rowgated and rowgatectl speak them too).

RG_META_SRCS := $(wildcard user/meta/*.c)
RG_META_HDRS := $(wildcard user/meta/*.h)
RG_META_LIBS := -lmicrohttpd -lgnutls $(RG_LIB_LIBS) -lpthread

USER_BINS += $(BUILD)/rowgate-meta

$(BUILD)/rowgate-meta: $(RG_META_SRCS) $(RG_META_HDRS) $(RG_LIB) $(RG_LIB_HDRS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(RG_META_SRCS) $(RG_LIB) $(LDFLAGS) -o $@ $(RG_META_LIBS)

# Unit tests of the pure parts: routing, auth, allocation glue, etcd, the allocator.
RG_META_TEST_LIB := user/lib/log.c user/lib/limits.c user/lib/state.c user/lib/io.c
UNIT_EXTRA_test_meta_cluster := user/meta/cluster.c user/lib/meta_proto.c user/meta/alloc.c \
                                $(RG_META_TEST_LIB)
UNIT_LIBS_test_meta_cluster  := -ljansson -lbpf
UNIT_EXTRA_test_meta_etcd    := user/meta/etcd.c user/lib/http_client.c user/lib/meta_proto.c \
                                $(RG_META_TEST_LIB)
UNIT_LIBS_test_meta_etcd     := -ljansson -lcurl -lbpf -lpthread
UNIT_EXTRA_test_alloc        := user/meta/alloc.c
$(BUILD)/tests/unit/test_meta_cluster $(BUILD)/tests/unit/test_meta_etcd \
$(BUILD)/tests/unit/test_alloc: $(RG_META_HDRS) $(RG_LIB_HDRS)

SIM_SRCS := bench/sim/sim.c user/meta/alloc.c

$(BUILD)/bench/sim: $(SIM_SRCS) $(RG_META_HDRS) $(RG_LIB_HDRS) $(SHARED_H)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(SIM_SRCS) -o $@ -lm

EXTRA_ALL += $(BUILD)/bench/sim

# /metrics without a kernel: the shared text format and listen addresses
# (user/lib/prom.c) and rowgate-meta's page from a cluster.
UNIT_EXTRA_test_metrics := user/lib/prom.c user/lib/counters.c user/meta/metrics.c \
                           user/meta/cluster.c user/meta/alloc.c user/lib/meta_proto.c \
                           $(RG_META_TEST_LIB)
UNIT_LIBS_test_metrics  := -ljansson -lbpf
$(BUILD)/tests/unit/test_metrics: $(RG_META_HDRS) $(RG_LIB_HDRS) $(BUILD)/rowgate_version.h
