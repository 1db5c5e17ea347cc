#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Send a file of line protocol as POST requests of about CHUNK bytes
(split at line ends) over one keep-alive connection; every answer must be
204.  Prints "requests=N bytes=B lines=L seconds=S": B counts every byte
sent, request heads and chunk framing included (what the kernel's verdict
walks).  With TE_CHUNK_BYTES, each body goes chunked in chunks of that size.

  send_body.py PORT PATH FILE [CHUNK_BYTES [TE_CHUNK_BYTES]]
"""
import socket
import sys
import time


def main():
    port, path, fname = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    chunk = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
    te_chunk = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    data = open(fname, "rb").read()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    off = sent = requests = 0
    t0 = time.monotonic()
    while off < len(data):
        end = data.find(b"\n", min(off + chunk, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        body = data[off:end]
        if te_chunk:
            body = b"".join(b"%x\r\n" % len(body[i:i + te_chunk]) + body[i:i + te_chunk] +
                            b"\r\n" for i in range(0, len(body), te_chunk)) + b"0\r\n\r\n"
            framing = "Transfer-Encoding: chunked"
        else:
            framing = "Content-Length: %d" % len(body)
        head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                "%s\r\n\r\n" % (path, framing)).encode()
        s.sendall(head + body)
        sent += len(head) + len(body)
        requests += 1
        status = f.readline().split()
        if len(status) < 2 or status[1] != b"204":
            sys.exit("request %d: unexpected answer %r" % (requests, status))
        length = 0
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        f.read(length)
        off = end
    print("requests=%d bytes=%d lines=%d seconds=%.3f" %
          (requests, sent, data.count(b"\n"), time.monotonic() - t0))


if __name__ == "__main__":
    main()
