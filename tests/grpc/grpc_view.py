#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""One gRPC connection's bytes, whole or split at every offset.

The differential suite of e2e/grpc_server_view: each case is the whole
byte stream of an h2c connection a GreptimeDB client could send (preface,
SETTINGS, header blocks, DATA), built by hand so that the same bytes go
straight to a server and through rowgate.  Sent whole once (--whole), or
once per offset k (1 .. len - 1), the first k bytes in one send and the
rest in another after --gap-ms, one connection each.  Prints one JSON
object: the case, its length, the connections made and, per stream, how
many times the server answered each grpc-status ("rst" for a reset,
"goaway" for a GOAWAY before the answer, "none" for no answer).

usage: grpc_view.py --port P --case C --dbs A,B [--whole] [--gap-ms G]
cases: unary, stream, frames, padded, group, columnar, two_calls, unary_two
"""
import argparse
import json
import os
import socket
import struct
import sys
import time

import hpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2_probe import (CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY,  # noqa: E402
                      HEADERS, PREFACE, RST_STREAM, SETTINGS, frame, frames_of, message,
                      pb)

PADDED = 0x8
SERVICE = "/greptime.v1.GreptimeDatabase/"


def header_block(enc, port, method):
    return enc.encode([
        (":method", "POST"), (":scheme", "http"), (":path", SERVICE + method),
        (":authority", "127.0.0.1:%d" % port),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ])


def prefixed(body):
    return struct.pack(">BI", 0, len(body)) + body


def group_message(db, rows, table):
    """A GreptimeRequest led by an unknown field 100 encoded as a group (a
    varint inside): protobuf decoders skip it (prost's skip_field too)."""
    body = message(db, rows, table)[5:]
    group = bytes([0xa3, 0x06, 0x08, 0x07, 0xa4, 0x06])
    return prefixed(group + body)


def columnar_message(db, rows, table):
    req = pb.GreptimeRequest(header=pb.RequestHeader(dbname=db))
    req.inserts.inserts.add(table_name=table, row_count=rows)
    return prefixed(req.SerializeToString())


def case_bytes(case, port, a, b):
    """The connection's bytes and its streams."""
    enc = hpack.Encoder()
    out = PREFACE + frame(SETTINGS, 0, 0)
    if case == "unary":
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 1, message(a, 3, "t_unary"))
        return out, [1]
    if case == "stream":
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "HandleRequests"))
        out += frame(DATA, 0, 1, message(a, 2, "t_s1") + message(b, 3, "t_s2"))
        out += frame(DATA, END_STREAM, 1, message(a, 1, "t_s3"))
        return out, [1]
    if case == "frames":
        # one message over three DATA frames, then an empty DATA that ends
        # the stream; the header block split into HEADERS + CONTINUATION
        m = message(a, 4, "t_frames")
        block = header_block(enc, port, "Handle")
        out += frame(HEADERS, 0, 1, block[:5]) + frame(CONTINUATION, END_HEADERS, 1, block[5:])
        third = len(m) // 3
        out += frame(DATA, 0, 1, m[:third])
        out += frame(DATA, 0, 1, m[third:2 * third])
        out += frame(DATA, 0, 1, m[2 * third:])
        out += frame(DATA, END_STREAM, 1, b"")
        return out, [1]
    if case == "padded":
        # a message in a padded DATA frame (RFC 9113 6.1)
        m = message(a, 4, "t_padded")
        pad = 7
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, PADDED | END_STREAM, 1, bytes([pad]) + m + b"\0" * pad)
        return out, [1]
    if case == "group":
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 1, group_message(a, 2, "t_group"))
        return out, [1]
    if case == "columnar":
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 1, columnar_message(a, 5, "t_columnar"))
        return out, [1]
    if case == "two_calls":
        # the second header block refers to the first's fields through
        # the dynamic table, as real clients do
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 1, message(a, 2, "t_two1"))
        out += frame(HEADERS, END_HEADERS, 3, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 3, message(b, 3, "t_two3"))
        return out, [1, 3]
    if case == "unary_two":
        # two messages in one unary call: servers differ on the second
        out += frame(HEADERS, END_HEADERS, 1, header_block(enc, port, "Handle"))
        out += frame(DATA, END_STREAM, 1, message(a, 1, "t_u1") + message(b, 4, "t_u2"))
        return out, [1]
    raise SystemExit("grpc_view.py: unknown case %r" % case)


def answers(s, streams, timeout):
    """grpc-status per stream, read until every stream has one, or the
    server closes or sends GOAWAY."""
    dec, got, block = hpack.Decoder(), {}, None
    s.settimeout(timeout)
    try:
        for ftype, flags, sid, payload in frames_of(s):
            if ftype == SETTINGS and not flags & 1:
                s.sendall(frame(SETTINGS, 1, 0))
            elif ftype in (HEADERS, CONTINUATION):
                if ftype == HEADERS:
                    p = payload[1:len(payload) - payload[0]] if flags & PADDED else payload
                    block = [sid, flags, p[5:] if flags & 0x20 else p]
                else:
                    block[2] += payload
                    block[1] |= flags & END_HEADERS
                if block[1] & END_HEADERS:
                    for k, v in dec.decode(block[2]):
                        k = k.decode() if isinstance(k, bytes) else k
                        if k == "grpc-status" and block[0] in streams:
                            got.setdefault(block[0], str(int(v)))
                    block = None
            elif ftype == RST_STREAM and sid in streams:
                got.setdefault(sid, "rst")
            elif ftype == GOAWAY:
                for g in streams:
                    got.setdefault(g, "goaway")
            if len(got) == len(streams):
                break
    except OSError:
        pass
    return {sid: got.get(sid, "none") for sid in streams}


def run(a):
    dbs = a.dbs.split(",")
    data, streams = case_bytes(a.case, a.port, dbs[0], dbs[-1])
    cuts = [None] if a.whole else range(1, len(data))
    tally = {str(sid): {} for sid in streams}
    for cut in cuts:
        s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if cut is None:
                s.sendall(data)
            else:
                s.sendall(data[:cut])
                time.sleep(a.gap_ms / 1000.0)  # a segment of its own
                s.sendall(data[cut:])
            got = answers(s, streams, a.timeout)
        except OSError as e:
            got = {sid: "error:%s" % e.__class__.__name__ for sid in streams}
        s.close()
        for sid, v in got.items():
            t = tally[str(sid)]
            t[v] = t.get(v, 0) + 1
    return {"case": a.case, "bytes": len(data), "conns": len(cuts), "status": tally}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--case", required=True)
    p.add_argument("--dbs", required=True, help="the case's databases: A or A,B")
    p.add_argument("--whole", action="store_true", help="one connection, not split")
    p.add_argument("--gap-ms", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=5.0)
    print(json.dumps(run(p.parse_args())))


if __name__ == "__main__":
    main()
