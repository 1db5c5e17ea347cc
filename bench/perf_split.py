#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Split `perf script` samples of a kernel-429 flood by where they went.

Reads `perf script -F comm,ip,sym` output (callchains, leaf first) on stdin
(argument: the server's comm, as perf shows it) and prints one line per bucket: "key samples share", then "total N".
A sample lands in the first bucket whose rule matches it, walking its
stack from the leaf (the order below is the order of the rules).
"""
import sys

SERVER = sys.argv[1] if len(sys.argv) > 1 else "victoria-metric"

# (key, test on (comm, frames)): frames are symbol names, leaf first
RULES = [
    ("idle", lambda comm, fr: comm == "swapper"),
    # the sockmap wakes the server's poller after every verdict
    ("wakeup", lambda comm, fr: "sock_def_readable" in fr and
     "sk_psock_verdict_data_ready" in fr),
    ("format", lambda comm, fr: any(f in ("bpf_snprintf", "____bpf_snprintf",
                                          "bpf_bprintf_prepare") for f in fr)),
    # the verdict program and the helpers it calls
    ("verdict", lambda comm, fr: any(f.startswith("bpf_prog_") for f in fr)),
    ("backlog", lambda comm, fr: comm.startswith("kworker")),
    ("server", lambda comm, fr: comm.startswith(SERVER)),
    ("client", lambda comm, fr: comm == "wrk"),
    ("other", lambda comm, fr: True),
]


def samples(lines):
    comm, frames = None, []
    for line in lines:
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
            continue
        if not line[0].isspace():
            if comm is not None:
                yield comm, frames
            comm, frames = line.split()[0], []
            continue
        parts = line.split()
        if len(parts) >= 2:
            frames.append(parts[1].split("+")[0])
    if comm is not None:
        yield comm, frames


def main():
    counts = {k: 0 for k, _ in RULES}
    total = 0
    for comm, frames in samples(sys.stdin):
        total += 1
        for key, rule in RULES:
            if rule(comm, frames):
                counts[key] += 1
                break
    for key, _ in RULES:
        print(key, counts[key], "%.4f" % (counts[key] / total if total else 0))
    print("total", total)


if __name__ == "__main__":
    main()
