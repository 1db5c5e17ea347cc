#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw HTTP/1.1 client for rowgate's end-to-end tests.

Plain sockets, so a test controls exactly how bytes are cut into sends, what
is pipelined and which connection is reused.  Used as a module (tests import
it with PYTHONPATH=tests/e2e) and as a command:

  rgclient.py load --port P --db D --seconds S --threads T [--max-rows N]
      writes line protocol with unique series ids until S seconds pass (or
      --stop-file exists) and
      prints a JSON summary: admitted/rejected requests and rows, the ids of
      rejected requests, connections opened, and any protocol errors.

  rgclient.py paced --port P --db D --seconds S --threads T --rows N --interval-ms I
      T keep-alive connections, each writing N rows every I ms for S seconds
      (or until --stop-file exists);
      prints a JSON summary with, per connection, the wall-clock time of its
      first 429, and in all admitted rows, connections opened and errors.
"""
import argparse
import fcntl
import gzip
import json
import os
import random
import socket
import struct
import subprocess
import sys
import termios
import threading
import time


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-cased names
        self.body = body

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        return "<%d %s %r>" % (self.status, self.reason, self.body[:120])


class Conn:
    """One TCP connection; responses are read in order."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0, nodelay=True):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        if nodelay:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by peer")
        self.buf += chunk

    def read_response(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        status = int(status)
        if status in (100, 101, 102, 103):
            return Response(status, reason, headers, b"")
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return Response(status, reason, headers, body)

    def request(self, path, body=b"", headers=None, method="POST"):
        self.send(build_request(path, body, headers, method))
        return self.read_response()

    def closed_by_peer(self, timeout=2.0):
        """True when the peer closed the connection (EOF) within timeout."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (socket.timeout, BlockingIOError):
            return False
        except ConnectionResetError:
            return True

    def wait_acked(self, timeout=10.0, also=None):
        """Wait until the peer's kernel acknowledged every byte sent (and
        also(), when given, holds)."""
        deadline = time.time() + timeout
        while (struct.unpack("i", fcntl.ioctl(self.sock, termios.TIOCOUTQ, b"\0" * 4))[0] or
               (also is not None and not also())):
            assert time.time() < deadline, "the peer never acknowledged what was sent"
            time.sleep(0.01)

    def reset(self):
        """Close with a reset (SO_LINGER 0): a request cut off mid-way."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self):
        self.sock.close()


def build_request(path, body=b"", headers=None, method="POST", host="127.0.0.1"):
    hdrs = {"Host": host, "User-Agent": "rgclient"}
    if method in ("POST", "PUT"):
        hdrs["Content-Length"] = str(len(body))
    if headers:
        hdrs.update(headers)
    head = "%s %s HTTP/1.1\r\n" % (method, path)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in hdrs.items() if v is not None)
    return head.encode() + b"\r\n" + body


def chunked(body, size):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def lines(n, series="m", tag="", start_ms=None, field="v"):
    """n line-protocol rows of one series with distinct timestamps."""
    t0 = start_ms if start_ms is not None else int(time.time() * 1000) - n
    tagpart = ",%s" % tag if tag else ""
    return b"".join(b"%s%s %s=%d %d\n" % (series.encode(), tagpart.encode(),
                                         field.encode(), i, t0 + i)
                    for i in range(n))


def tokens(ctl, sock, db):
    """Whole tokens in db's bucket now, from rowgatectl."""
    out = subprocess.check_output([ctl, "--socket", sock, "--json", "stats", db])
    return int(json.loads(out)["databases"][0]["tokens"])


def wait_token(ctl, sock, db, timeout=15):
    """Until db's bucket holds a whole token (the next write is admitted)."""
    deadline = time.monotonic() + timeout
    while tokens(ctl, sock, db) < 1:
        assert time.monotonic() < deadline, "bucket never refilled"
        time.sleep(0.02)


def gzip_wave(port, db, conns, rows):
    """A wave of compressed writes: conns connections, each with one gzip
    line-protocol write of rows rows (millisecond timestamps), all released
    at once.  Returns the statuses and the bytes of one body."""
    now = int(time.time() * 1000)
    bodies = [gzip.compress(b"".join(b"wave,c=%d v=%d %d\n" % (c, j, now - j) for j in range(rows)))
              for c in range(conns)]
    cs = [Conn(port) for _ in range(conns)]
    gate = threading.Barrier(conns)
    status = [0] * conns

    def go(i):
        gate.wait()
        status[i] = cs[i].request("/write?db=%s&precision=ms" % db, bodies[i],
                                  {"Content-Encoding": "gzip"}).status
    ts = [threading.Thread(target=go, args=(i,)) for i in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return status, len(bodies[0])


class Writer:
    """One thread's keep-alive connection for load and paced: connects
    (counted) when it has none, drops it after Connection: close or an
    error (recorded)."""

    def __init__(self, args, summary, lock):
        self.args, self.summary, self.lock = args, summary, lock
        self.conn = None

    def running(self, deadline):
        stop = self.args.stop_file
        return time.time() < deadline and not (stop and os.path.exists(stop))

    def write(self, rid, body):
        """The response to one write, or None after an error."""
        try:
            if self.conn is None:
                self.conn = Conn(self.args.port)
                with self.lock:
                    self.summary["connects"] += 1
            resp = self.conn.request("/write?db=%s" % self.args.db, body)
        except (OSError, ValueError) as e:
            with self.lock:
                self.summary["errors"].append("%s: %s" % (rid, e))
            self.close()
            return None
        if resp.header("connection", "").lower() == "close":
            self.close()
        return resp

    def close(self):
        if self.conn:
            self.conn.close()
        self.conn = None


def run_threads(args, worker, summary):
    """worker(tid) on --threads threads; the summary as JSON once all end."""
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump(summary, sys.stdout)
    print()


def load(args):
    lock = threading.Lock()
    summary = {"admitted_requests": 0, "admitted_rows": 0, "rejected_requests": 0,
               "rejected_rows": 0, "rejected_ids": [], "admitted_ids": [],
               "errors": [], "other_status": 0, "connects": 0}
    deadline = time.time() + args.seconds

    def worker(tid):
        rnd = random.Random(args.seed * 1000 + tid)
        w = Writer(args, summary, lock)
        seq = 0
        while w.running(deadline):
            rows = rnd.randint(args.min_rows, args.max_rows)
            rid = "t%dr%d" % (tid, seq)
            seq += 1
            resp = w.write(rid, lines(rows, series=args.series, tag="req=%s" % rid))
            if resp is None:
                continue
            with lock:
                if resp.status == 204:
                    summary["admitted_requests"] += 1
                    summary["admitted_rows"] += rows
                    summary["admitted_ids"].append(rid)
                elif resp.status == 429:
                    summary["rejected_requests"] += 1
                    summary["rejected_rows"] += rows
                    summary["rejected_ids"].append(rid)
                else:
                    summary["other_status"] += 1
                    summary["errors"].append("%s: status %d %r" % (rid, resp.status, resp.body[:200]))
        w.close()

    run_threads(args, worker, summary)


def paced(args):
    lock = threading.Lock()
    summary = {"admitted_rows": 0, "admitted_requests": 0, "rejected_requests": 0,
               "first_429": [None] * args.threads, "connects": 0, "errors": []}
    deadline = time.time() + args.seconds

    def worker(tid):
        w = Writer(args, summary, lock)
        seq = 0
        while w.running(deadline):
            rid = "p%dr%d" % (tid, seq)
            seq += 1
            resp = w.write(rid, lines(args.rows, series=args.series, tag="req=%s" % rid))
            if resp is None:
                continue
            with lock:
                if resp.status == 204:
                    summary["admitted_requests"] += 1
                    summary["admitted_rows"] += args.rows
                elif resp.status == 429:
                    summary["rejected_requests"] += 1
                    if summary["first_429"][tid] is None:
                        summary["first_429"][tid] = time.time()
                else:
                    summary["errors"].append("%s: status %d" % (rid, resp.status))
            time.sleep(args.interval_ms / 1000.0)
        w.close()

    run_threads(args, worker, summary)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load", help="concurrent writes with unique series ids")
    lp.add_argument("--port", type=int, required=True)
    lp.add_argument("--db", required=True)
    lp.add_argument("--seconds", type=float, default=3.0)
    lp.add_argument("--threads", type=int, default=4)
    lp.add_argument("--max-rows", type=int, default=50)
    lp.add_argument("--min-rows", type=int, default=1,
                    help="rows of the smallest request (10+ keeps 429s keep-alive)")
    lp.add_argument("--stop-file", help="stop early once this file exists")
    lp.add_argument("--series", default="rg_load")
    lp.add_argument("--seed", type=int, default=1)
    pp = sub.add_parser("paced", help="keep-alive connections writing at a pace")
    pp.add_argument("--port", type=int, required=True)
    pp.add_argument("--db", required=True)
    pp.add_argument("--seconds", type=float, default=3.0)
    pp.add_argument("--threads", type=int, default=10)
    pp.add_argument("--rows", type=int, default=20)
    pp.add_argument("--interval-ms", type=float, default=50.0)
    pp.add_argument("--series", default="rg_paced")
    pp.add_argument("--stop-file", help="stop early once this file exists")
    args = ap.parse_args()
    if args.cmd == "load":
        load(args)
    elif args.cmd == "paced":
        paced(args)


if __name__ == "__main__":
    main()
