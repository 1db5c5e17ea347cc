#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Concurrent writers for tests/e2e/concurrency.sh.

  concurrency.py load --port P --db D --seconds S --procs N --max-rows M
                      [--gzip-every K] [--out FILE]
      N processes, pinned round-robin to the CPUs, each one keep-alive
      connection writing line protocol with a unique tag per request (every
      K-th request gzip-compressed, which the kernel can only estimate and
      rowgated corrects).  Writes one JSON object with every request:
      [send_ns, answer_ns, status, rows, gzip, id] (CLOCK_MONOTONIC, the
      clock of bpf_ktime_get_ns), and the errors.

  concurrency.py limits --socket S --ctl PATH --db D --seconds S --values A,B,...
      `rowgatectl limit set` in a loop, cycling through the values; prints
      [before_ns, after_ns, value] per change as JSON.

  concurrency.py bucket --bpffs DIR --db D
      the pinned bucket of D: tokens debt_rows frac_nrows quota last_ns
"""
import argparse
import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rgclient import Conn, build_request, lines  # noqa: E402


def worker(idx, args, q):
    ncpu = os.cpu_count() or 1
    try:
        os.sched_setaffinity(0, {idx % ncpu})
    except OSError:
        pass
    rnd = __import__("random").Random(args.seed * 1000 + idx)
    reqs, errors = [], []
    conn = None
    seq = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        rows = rnd.randint(1, args.max_rows)
        rid = "p%dr%d" % (idx, seq)
        seq += 1
        body = lines(rows, series=args.series, tag="req=%s" % rid)
        gz = args.gzip_every > 0 and seq % args.gzip_every == 0
        headers = None
        if gz:
            body = gzip.compress(body, 1)
            headers = {"Content-Encoding": "gzip"}
        try:
            if conn is None:
                conn = Conn(args.port)
            t0 = time.monotonic_ns()
            conn.send(build_request("/write?db=%s" % args.db, body, headers))
            resp = conn.read_response()
            t1 = time.monotonic_ns()
            if resp.header("connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, ValueError) as e:
            errors.append("%s: %s" % (rid, e))
            if conn:
                conn.close()
            conn = None
            continue
        if resp.status not in (204, 429):
            errors.append("%s: status %d %r" % (rid, resp.status, resp.body[:200]))
        reqs.append([t0, t1, resp.status, rows, 1 if gz else 0, rid])
    if conn:
        conn.close()
    q.put((reqs, errors))


def load(args):
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(i, args, q))
             for i in range(args.procs)]
    for p in procs:
        p.start()
    reqs, errors = [], []
    for _ in procs:
        r, e = q.get()
        reqs += r
        errors += e
    for p in procs:
        p.join()
    reqs.sort()
    out = open(args.out, "w") if args.out else sys.stdout
    json.dump({"requests": reqs, "errors": errors}, out)
    out.write("\n")


def limits(args):
    values = [int(v) for v in args.values.split(",")]
    changes = []
    deadline = time.monotonic() + args.seconds
    i = 0
    while time.monotonic() < deadline:
        v = values[i % len(values)]
        i += 1
        t0 = time.monotonic_ns()
        subprocess.run([args.ctl, "--socket", args.socket, "limit", "set", args.db, str(v)],
                       check=True, stdout=subprocess.DEVNULL)
        t1 = time.monotonic_ns()
        changes.append([t0, t1, v])
        time.sleep(args.interval)
    json.dump(changes, sys.stdout)
    print()


def bucket(args):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned",
                          os.path.join(args.bpffs, "buckets")],
                         check=True, capture_output=True, text=True).stdout
    for e in json.loads(out):
        if e["formatted"]["key"]["name"] == args.db:
            b = e["formatted"]["value"]["b"]
            print(b["tokens"], b["debt_rows"], b["frac_nrows"], b["quota"], b["last_ns"])
            return
    sys.exit("no bucket for %s" % args.db)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--port", type=int, required=True)
    lp.add_argument("--db", required=True)
    lp.add_argument("--seconds", type=float, default=5.0)
    lp.add_argument("--procs", type=int, default=8)
    lp.add_argument("--max-rows", type=int, default=20)
    lp.add_argument("--gzip-every", type=int, default=0)
    lp.add_argument("--series", default="rg_conc")
    lp.add_argument("--seed", type=int, default=1)
    lp.add_argument("--out")
    lm = sub.add_parser("limits")
    lm.add_argument("--socket", required=True)
    lm.add_argument("--ctl", required=True)
    lm.add_argument("--db", required=True)
    lm.add_argument("--seconds", type=float, default=5.0)
    lm.add_argument("--interval", type=float, default=0.05)
    lm.add_argument("--values", required=True)
    bp = sub.add_parser("bucket")
    bp.add_argument("--bpffs", required=True)
    bp.add_argument("--db", required=True)
    args = ap.parse_args()
    {"load": load, "limits": limits, "bucket": bucket}[args.cmd](args)


if __name__ == "__main__":
    main()
