#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# vmtest wrapper: build/kernel-patches/selftests/sockmap_pre_accept (make kpatch-selftests).
cd "$(dirname "$0")/../../.." || exit 2
exec build/kernel-patches/selftests/sockmap_pre_accept
