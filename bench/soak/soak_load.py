#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Mixed write load for bench/soak/soak.sh.

  soak_load.py --port P --db D --seconds S --procs N --bodies DIR --out DIR

N processes, pinned round-robin to the CPUs, each one keep-alive connection
(reopened after a close or an error), cycling through the protocols:
line protocol plain, gzip and chunked (each request tagged req=<id>, so the
server's copy of every request can be found), and the bodies in DIR made by
rg-count: prom-rw.bin, otlp-metrics.bin, loki-json.bin with DIR/rows.json
giving their rows.  One JSON line per request in OUT/load-<i>.jsonl, written
as it is answered:  [send_ns, answer_ns, proto, status, rows, id, error]
(CLOCK_MONOTONIC; status 0 = no answer, error says why; -400 = rowgate's
own 400, which well-formed requests must never get).
"""
import argparse
import gzip
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "e2e"))
from rgclient import Conn, build_request, chunked, lines  # noqa: E402

PROTOS = ["lp", "lp-gzip", "lp-chunked", "prom-rw", "otlp-metrics", "loki-json"]


def request(proto, db, rid, rows, bodies):
    if proto.startswith("lp"):
        body = lines(rows, series="rg_soak", tag="req=%s" % rid)
        path = "/write?db=%s" % db
        if proto == "lp-gzip":
            return build_request(path, gzip.compress(body, 1), {"Content-Encoding": "gzip"})
        if proto == "lp-chunked":
            return build_request(path, chunked(body, 97),
                                 {"Transfer-Encoding": "chunked", "Content-Length": None})
        return build_request(path, body)
    body = bodies[proto]
    if proto == "prom-rw":
        return build_request("/api/v1/write?db=%s" % db, body,
                             {"Content-Encoding": "snappy",
                              "Content-Type": "application/x-protobuf"})
    if proto == "otlp-metrics":
        return build_request("/v1/otlp/v1/metrics", body,
                             {"X-Greptime-DB-Name": db,
                              "Content-Type": "application/x-protobuf"})
    return build_request("/loki/api/v1/push", body,
                         {"X-Scope-OrgID": db, "Content-Type": "application/json"})


def worker(idx, args, bodies, body_rows):
    ncpu = os.cpu_count() or 1
    try:
        os.sched_setaffinity(0, {idx % ncpu})
    except OSError:
        pass
    rnd = random.Random(args.seed * 1000 + idx)
    out = open(os.path.join(args.out, "load-%d.jsonl" % idx), "w", buffering=1)
    conn = None
    seq = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        proto = PROTOS[seq % len(PROTOS)]
        rid = "w%dr%d" % (idx, seq)
        seq += 1
        rows = rnd.randint(1, args.max_rows) if proto.startswith("lp") else body_rows[proto]
        data = request(proto, args.db, rid, rows, bodies)
        t0 = time.monotonic_ns()
        status, err = 0, ""
        try:
            if conn is None:
                conn = Conn(args.port, timeout=args.timeout)
            conn.send(data)
            resp = conn.read_response()
            status = resp.status
            if status == 400 and b"rowgate:" in resp.body:
                status = -400  # refused by rowgate itself, not the server
            if resp.header("connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, ValueError) as e:
            err = str(e) or type(e).__name__
            if conn:
                conn.close()
            conn = None
        t1 = time.monotonic_ns()
        out.write(json.dumps([t0, t1, proto, status, rows, rid, err]) + "\n")
        if err:
            time.sleep(0.05)  # the server is restarting: do not spin
        elif args.pause:
            time.sleep(rnd.uniform(0, args.pause))
    if conn:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--max-rows", type=int, default=40)
    ap.add_argument("--pause", type=float, default=0.02,
                    help="max random pause between requests (s), default 0.02")
    ap.add_argument("--timeout", type=float, default=30.0, help="socket timeout (s)")
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    body_rows = json.load(open(os.path.join(args.bodies, "rows.json")))
    bodies = {p: open(os.path.join(args.bodies, p + ".bin"), "rb").read() for p in body_rows}
    pids = []
    for i in range(args.procs):
        pid = os.fork()
        if pid == 0:
            try:
                worker(i, args, bodies, body_rows)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
