#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hold many concurrent keep-alive connections, then write once on each.

  conns_hold.py --ports P1,P2,... --conns N --dbs free,debt [--sources K]

Opens N connections to 127.0.0.1, an equal share to each port, one worker
process per port (a process's open files are limited, and so are a
server's), from K loopback source addresses, and sends GET /health on
each; prints "held N FAILED" (N: the connections answered 200) on stdout
and waits for a line on stdin.  Then each connection writes one
line-protocol row (POST /write?db=D, D taken in turn from --dbs, a distinct
timestamp each) in waves, keeps its connection open and reads its answer;
prints one line "DB:STATUS=COUNT ..." (STATUS "none" when nothing came
back, "closed" when the connection closed first) and waits for a line on
stdin again before closing them all.
"""
import argparse
import ctypes
import multiprocessing
import selectors
import signal
import socket
import sys
import time

IP_BIND_ADDRESS_NO_PORT = 24  # linux/in.h: take the port at connect()
BATCH = 1000                  # connects in flight (the listen backlog)
WAVE = 4000                   # requests in flight (the server's queue)
PR_SET_PDEATHSIG = 1


def open_batch(port, first, n, sources):
    """n connections, numbered from first; the failed ones closed."""
    sel = selectors.DefaultSelector()
    socks, failed = [], 0
    for i in range(first, first + n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        s.bind(("127.0.%d.%d" % (10 + i % sources // 250, 1 + i % sources % 250), 0))
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_WRITE)
    deadline = time.monotonic() + 60
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            sel.unregister(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                failed += 1
                s.close()
            else:
                socks.append(s)
    for key in list(sel.get_map().values()):
        sel.unregister(key.fileobj)
        key.fileobj.close()
        failed += 1
    return socks, failed


def health(i):
    return "health", b"GET /health HTTP/1.1\r\nHost: rowgate\r\n\r\n"


def write_one(dbs, base_ns):
    """One row to a database of dbs in turn, a millisecond apart."""
    def req(i):
        db = dbs[i % len(dbs)]
        body = b"conns_hold v=1 %d\n" % (base_ns + i * 1000000)
        return db, b"POST /write?db=%s HTTP/1.1\r\nHost: rowgate\r\nContent-Length: %d\r\n\r\n%s" % (
            db.encode(), len(body), body)
    return req


def status_of(buf):
    """The status of a whole response in buf, or None while it is partial."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].split(b"\r\n")
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if len(buf) < end + 4 + length:
        return None
    return head[0].split(b" ")[1].decode()


def exchange(socks, first, make):
    """One request on each connection (make(number) -> label, bytes), in
    waves; counts of "LABEL:STATUS"."""
    counts = {}
    sel = selectors.DefaultSelector()
    for start in range(0, len(socks), WAVE):
        bufs = {}
        for i in range(start, min(len(socks), start + WAVE)):
            label, req = make(first + i)
            socks[i].sendall(req)
            bufs[socks[i]] = [label, b""]
            sel.register(socks[i], selectors.EVENT_READ)
        deadline = time.monotonic() + 120
        while bufs and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except ConnectionError:
                    data = b""
                label = bufs[s][0]
                status = "closed" if not data else status_of(bufs[s][1] + data)
                if status is None:
                    bufs[s][1] += data
                    continue
                counts[label + ":" + status] = counts.get(label + ":" + status, 0) + 1
                sel.unregister(s)
                del bufs[s]
        for s, (label, _) in bufs.items():
            sel.unregister(s)
            counts[label + ":none"] = counts.get(label + ":none", 0) + 1
    return counts


def worker(pipe, port, n, first, sources, dbs, base_ns):
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # no orphans holding sockets
    # a request on each batch as it opens: a server closes a connection
    # that sends none within its header timeout, an idle keep-alive one only
    # after its idle timeout
    socks, failed, warm = [], 0, {}
    for start in range(first, first + n, BATCH):
        batch, f = open_batch(port, start, min(BATCH, first + n - start), sources)
        for k, v in exchange(batch, start, health).items():
            warm[k] = warm.get(k, 0) + v
        socks += batch
        failed += f
    pipe.send((len(socks), failed, warm))
    pipe.recv()
    pipe.send(exchange(socks, first, write_one(dbs, base_ns)))
    pipe.recv()
    for s in socks:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", required=True)
    ap.add_argument("--conns", type=int, required=True)
    ap.add_argument("--dbs", required=True)
    ap.add_argument("--sources", type=int, default=8)
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(",")]
    base_ns = time.time_ns() - 3600 * 10**9  # an hour back: a timestamp per row
    workers = []
    for k, port in enumerate(ports):
        n = a.conns // len(ports) + (k < a.conns % len(ports))
        first = sum(w[2] for w in workers)
        ours, theirs = multiprocessing.Pipe()
        p = multiprocessing.Process(target=worker, args=(theirs, port, n, first, a.sources,
                                                         a.dbs.split(","), base_ns))
        p.start()
        workers.append((p, ours, n))
    t0 = time.monotonic()
    held = [w[1].recv() for w in workers]
    warm = {}
    for h in held:
        for k, v in h[2].items():
            warm[k] = warm.get(k, 0) + v
    print("opened %d connections (%d failed) to %d ports, a GET on each (%s), in %.1f s" % (
        sum(h[0] for h in held), sum(h[1] for h in held), len(ports),
        " ".join("%s=%d" % kv for kv in sorted(warm.items())), time.monotonic() - t0),
        file=sys.stderr)
    print("held %d %d" % (warm.get("health:200", 0), a.conns - warm.get("health:200", 0)),
          flush=True)
    sys.stdin.readline()
    t0 = time.monotonic()
    for w in workers:
        w[1].send("go")
    counts = {}
    for w in workers:
        for k, v in w[1].recv().items():
            counts[k] = counts.get(k, 0) + v
    print("wrote on each in %.1f s" % (time.monotonic() - t0), file=sys.stderr)
    print(" ".join("%s=%d" % kv for kv in sorted(counts.items())), flush=True)
    sys.stdin.readline()
    for w in workers:
        w[1].send("close")
    for w in workers:
        w[0].join()


if __name__ == "__main__":
    main()
