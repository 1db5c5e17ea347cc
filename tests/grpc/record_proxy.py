#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Record the client->server bytes of TCP connections through a proxy.

usage: record_proxy.py LISTEN_PORT TARGET_PORT OUT_PREFIX
Each accepted connection is forwarded to 127.0.0.1:TARGET_PORT both ways;
the client->server bytes of connection N go to OUT_PREFIX.N.bin.  Used to
make the real-client fixtures of tests/unit/test_h2.c
(tests/fixtures/grpc/).  Stops on SIGTERM/SIGINT.
"""
import socket
import sys
import threading


def pump(src, dst, out):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            if out:
                out.write(b)
                out.flush()
            dst.sendall(b)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    lport, tport, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(16)
    n = 0
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", tport))
        out = open(f"{prefix}.{n}.bin", "wb")
        n += 1
        threading.Thread(target=pump, args=(c, s, out), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, None), daemon=True).start()


if __name__ == "__main__":
    main()
