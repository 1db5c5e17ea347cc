# SPDX-License-Identifier: GPL-2.0
# One version for every binary: `git describe` of the tree being built
# (the last tag, or RG_VERSION_BASE plus the commit when there is none,
# "-dirty" for uncommitted changes), RG_VERSION_BASE outside a git checkout.
# Written to $(BUILD)/rowgate_version.h only when it changes, so a new
# commit rebuilds the binaries and nothing else does.

RG_VERSION_BASE := 0.1.0
RG_GIT_DESCRIBE := $(shell git -C "$(CURDIR)" describe --tags --always --dirty 2>/dev/null)
ifeq ($(RG_GIT_DESCRIBE),)
RG_VERSION := $(RG_VERSION_BASE)
else ifeq ($(shell git -C "$(CURDIR)" tag 2>/dev/null),)
RG_VERSION := $(RG_VERSION_BASE)-g$(RG_GIT_DESCRIBE)
else
RG_VERSION := $(RG_GIT_DESCRIBE)
endif

RG_VERSION_H := $(BUILD)/rowgate_version.h
RG_VERSION_LINE := \#define RG_VERSION "$(RG_VERSION)"
$(shell mkdir -p "$(BUILD)" && \
	(printf '%s\n' '$(RG_VERSION_LINE)' | cmp -s - "$(RG_VERSION_H)" || \
	 printf '%s\n' '$(RG_VERSION_LINE)' > "$(RG_VERSION_H)"))

$(BUILD)/rowgated $(BUILD)/rowgatectl $(BUILD)/rowgate-meta: $(RG_VERSION_H)
