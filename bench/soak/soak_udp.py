#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""UDP line-protocol load for bench/soak/soak.sh.

  soak_udp.py --addr A --port P --seconds S --rate N --out FILE

Sends N datagrams a second (paced, not bursty) to A:P, each of 1..--max-rows
lines of series rg_soak_u tagged dg=<id>, field v=<line>; line j of datagram
i has timestamp base + i * 32 + j ms, so every point is distinct and a
stored point names its datagram.  One JSON line per datagram in FILE, as it
is sent: [send_ns, id, rows, base_ms] (CLOCK_MONOTONIC).  UDP has no answer:
soak_check.py learns a datagram's fate from the server's copy and rowgate's
XDP counters.
"""
import argparse
import json
import random
import socket
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--rate", type=float, default=50.0, help="datagrams/s, default 50")
    ap.add_argument("--max-rows", type=int, default=20, help="lines per datagram, default 20")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not 1 <= args.max_rows <= 32 or args.rate <= 0:
        ap.error("--max-rows must be 1..32 and --rate positive")
    rnd = random.Random(args.seed)
    s = socket.socket(socket.AF_INET6 if ":" in args.addr else socket.AF_INET,
                      socket.SOCK_DGRAM)
    # a day back, inside the server's retention; ids * 32 ms stay in the past
    base_ms = int(time.time() * 1000) - 86_400_000
    out = open(args.out, "w", buffering=1)
    start = time.monotonic()
    deadline = start + args.seconds
    i = 0
    while True:
        due = start + i / args.rate
        now = time.monotonic()
        if due >= deadline:
            break
        if due > now:
            time.sleep(due - now)
        n = rnd.randint(1, args.max_rows)
        body = "".join("rg_soak_u,dg=%d v=%di %d\n" % (i, j, (base_ms + i * 32 + j) * 1_000_000)
                       for j in range(n)).encode()
        t0 = time.monotonic_ns()
        # unconnected: an ICMP port unreachable (server restarting) is not
        # reported to the sender
        s.sendto(body, (args.addr, args.port))
        out.write(json.dumps([t0, i, n, base_ms]) + "\n")
        i += 1


if __name__ == "__main__":
    main()
