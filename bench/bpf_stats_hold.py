#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Keep BPF run-time statistics on while this process lives.

BPF_ENABLE_STATS returns a file descriptor that holds the statistics on
until it is closed, whatever else writes kernel.bpf_stats_enabled (a
concurrent job restoring the sysctl to 0 would otherwise stop the
counters mid-measurement).  Prints "ok" once enabled, then sleeps until
killed.
"""
import ctypes
import os
import signal
import sys

NR_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0

if NR_BPF is None:
    sys.exit("unknown bpf syscall number for %s" % os.uname().machine)
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint32 * 2)(BPF_STATS_RUN_TIME, 0)
fd = libc.syscall(NR_BPF, BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr))
if fd < 0:
    sys.exit("BPF_ENABLE_STATS: %s" % os.strerror(ctypes.get_errno()))
print("ok", flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    signal.pause()
