#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 14.4, the 2-minute soak: bench/soak/soak.sh in distributed mode with
# every fault once (rowgate-meta kill -9, rowgated kill -9 and restart,
# SIGSTOP for 32 s, beyond the 30 s body-copy expiry, limit doubled, limit
# unset, victoria-metrics restarted) under mixed line protocol
# (plain/gzip/chunked), remote-write, OTLP and Loki load, and UDP line
# protocol through XDP on a veth pair (left out, saying why, where the
# namespaces cannot be made); the invariants are soak.sh's, every settled
# window included (docs/design.md#late-refunds).  `make soak` runs the
# 30-minute one.
exec "$(dirname "$0")/../../bench/soak/soak.sh" --meta --minutes 2 --gap-s 4 --stop-s 32 "$@"
