#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""CPU snapshot for the benchmarks, in clock ticks (USER_HZ).

Prints "HOST KTHREADS": the busy ticks of the whole host (/proc/stat: user,
nice, system, irq, softirq, steal) and the utime+stime of every kernel
thread (PF_KTHREAD).  A benchmark's own cost is its processes plus the
kernel threads (the sockmap backlog worker that transmits redirected skbs
is one); the difference to HOST is whatever else the machine ran, which a
shared host makes worth printing rather than silently including.
"""
import os

PF_KTHREAD = 0x00200000


def host_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def kthreads():
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(rest[6]) & PF_KTHREAD:
            total += int(rest[11]) + int(rest[12])
    return total


if __name__ == "__main__":
    print(host_busy(), kthreads())
