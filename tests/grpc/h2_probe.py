#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Probe a real gRPC server with the bytes the kernel design would make.

A raw HTTP/2 client (frames by hand, HPACK by python3-hpack) that sends what
a client's connection looks like after rowgate rewrote it (docs/grpc.md §6):
a rejected message's first DATA frame replaced, same length, by
RST_STREAM(CANCEL) + a trigger frame (empty SETTINGS, or PING) + an
unknown-type filler; the stream's later DATA as unknown frames.  Admitted
unary calls go on the same connection.  It reports, as one JSON object, what
the server did: answers to admitted calls, trigger answers, frames on
rejected streams, GOAWAY, connection WINDOW_UPDATEs.

usage: h2_probe.py --port P --scenario S [--rejects N] [--admit-every K]
                   [--rows N] [--trigger settings|ping] [--client-rst]
scenarios: mix (rejected and admitted calls interleaved on one connection),
           window (rejected bytes vs the connection window),
           split (two unary calls of two databases on one connection, the
           whole connection's bytes split in two sends at every offset
           from --from on, one connection per offset: what a guarded port
           must follow whatever the segments; with --want 8, calls it
           must refuse, keeping the connection, whatever the segments),
           fallback (refused messages --db cut across sends: one whose
           last DATA frame holds its RequestHeader in 11 bytes and one
           whose 14 KB frame has its RequestHeader after 4 KB of rows
           close with GOAWAY; on one connection, calls cut after the DATA
           header, inside it, inside the payload, a refused stream's later
           DATA cut inside its header, frames over 4 KB cut in many ways,
           messages whose last DATA frame holds 10 bytes, and frames
           whose first send, over 16 KB, ends inside the refusal's head
           are kept:
           grpc-status 8, the connection open),
           open_call (a refusal that falls back to GOAWAY while an earlier
           call's body is unfinished and a later call was answered: the
           GOAWAY's last stream, how and when the connection ends),
           uncounted (one call of --path, its :path a raw literal: the
           GOAWAY that refuses it, or its grpc-status),
           unary_two (one Handle call whose DATA holds a message of --db
           and one of --free-db: the call's grpc-status),
           streams (--streams unary calls on one connection, each
           message half sent before any is finished: each call's
           grpc-status),
           late (a call of --db refused and answered, then 48,000 bytes
           more DATA on its stream, as a client sends what it had queued
           before the answer reached it: the connection WINDOW_UPDATEs
           that give those bytes back, then an admitted call of --free-db).
"""
import argparse
import json
import os
import socket
import struct
import sys
import threading
import time

import hpack

sys.path.insert(0, os.environ.get("RG_GRPC_PY", os.path.dirname(__file__)))
import greptime.v1.ingest_pb2 as pb  # noqa: E402

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, \
    WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
CANCEL = 0x8
UNKNOWN_TYPE = 0xfa  # not registered (0x10 is PRIORITY_UPDATE, RFC 9218)
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, sid, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xffff, ftype, flags, sid) + payload


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.lock = threading.Condition()
        self.settings_acks = 0
        self.ping_acks = 0
        self.goaway = None
        self.closed = False
        self.conn_window_updates = 0
        self.server_settings = {}
        self.streams = {}  # sid -> {"frames": [...], "headers": [...], "done": bool}
        self.block = None  # (sid, flags, bytes) of a header block in progress
        self.seq = 0       # frames received so far
        self.ack_seq = []  # sequence number of each trigger answer
        # the reader's own frames (ACKs, WINDOW_UPDATEs) wait while a frame
        # is sent in two parts: a frame between them would be inside it
        self.wlock = threading.Lock()
        self.held = None
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
        threading.Thread(target=self._reader, daemon=True).start()

    def send(self, b):
        try:
            with self.wlock:
                self.sock.sendall(b)
        except OSError:
            with self.lock:
                self.closed = True

    def send_split(self, b, cut, gap, *more):
        """b cut at cut (and the offsets in more), the parts sent gap
        seconds apart, nothing of ours between them."""
        cuts = (cut,) + more
        with self.wlock:
            self.held = []
        prev = 0
        for k in cuts:
            self.send(b[prev:k])
            time.sleep(gap)
            prev = k
        with self.wlock:
            held, self.held = self.held, None
            try:
                self.sock.sendall(b[prev:] + b"".join(held))
            except OSError:
                with self.lock:
                    self.closed = True

    def _reply(self, b):
        with self.wlock:
            if self.held is not None:
                self.held.append(b)
            else:
                self.sock.sendall(b)

    def _recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.sock.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b

    def _reader(self):
        try:
            while True:
                h = self._recv_exact(9)
                n = h[0] << 16 | h[1] << 8 | h[2]
                ftype, flags = h[3], h[4]
                sid = struct.unpack(">I", h[5:9])[0] & 0x7fffffff
                payload = self._recv_exact(n) if n else b""
                with self.lock:
                    self._on_frame(ftype, flags, sid, payload)
                    self.lock.notify_all()
        except (EOFError, OSError):
            with self.lock:
                self.closed = True
                self.lock.notify_all()

    def _stream(self, sid):
        return self.streams.setdefault(sid, {"frames": [], "headers": [], "done": False})

    def _on_frame(self, ftype, flags, sid, payload):
        self.seq += 1
        if sid:
            self._stream(sid).setdefault("seq", []).append(self.seq)
        if ftype == SETTINGS:
            if flags & ACK:
                self.settings_acks += 1
                self.ack_seq.append(self.seq)
            else:
                for i in range(0, len(payload), 6):
                    k, v = struct.unpack(">HI", payload[i:i + 6])
                    self.server_settings[k] = v
                self._reply(frame(SETTINGS, ACK, 0))
        elif ftype == PING:
            if flags & ACK:
                self.ping_acks += 1
                self.ack_seq.append(self.seq)
            else:
                self._reply(frame(PING, ACK, 0, payload))
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = {"last_stream": last & 0x7fffffff, "code": code,
                           "debug": payload[8:].decode("latin-1")}
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", payload)[0] & 0x7fffffff
            if sid == 0:
                self.conn_window_updates += inc
            else:
                self._stream(sid)["frames"].append("WINDOW_UPDATE")
        elif ftype in (HEADERS, CONTINUATION):
            s = self._stream(sid)
            s["frames"].append("HEADERS" if ftype == HEADERS else "CONTINUATION")
            if ftype == HEADERS:
                pad = payload[0] if flags & 0x8 else 0
                body = payload[1 if flags & 0x8 else 0:len(payload) - pad]
                if flags & 0x20:
                    body = body[5:]
                self.block = [sid, flags, body]
            else:
                self.block[2] += payload
                self.block[1] |= flags & END_HEADERS
            if self.block[1] & END_HEADERS:
                hdrs = self.dec.decode(self.block[2])
                s["headers"].append(dict(hdrs))
                s.setdefault("raw", []).append(self.block[2].hex())
                if self.block[1] & END_STREAM:
                    s["done"] = True
                self.block = None
        elif ftype == DATA:
            s = self._stream(sid)
            s["frames"].append("DATA")
            if payload:
                # give the window back so the server can always answer
                inc = struct.pack(">I", len(payload))
                self._reply(frame(WINDOW_UPDATE, 0, 0, inc) +
                            frame(WINDOW_UPDATE, 0, sid, inc))
            if flags & END_STREAM:
                s["done"] = True
        elif ftype == RST_STREAM:
            s = self._stream(sid)
            s["frames"].append("RST_STREAM(%d)" % struct.unpack(">I", payload)[0])
            s["done"] = True
        else:
            self._stream(sid)["frames"].append("type%d" % ftype)

    def wait(self, cond, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not cond() and not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
            return cond()

    def headers_frame(self, sid, port, end_stream=False):
        block = self.enc.encode([
            (":method", "POST"), (":scheme", "http"),
            (":path", "/greptime.v1.GreptimeDatabase/Handle"),
            (":authority", "127.0.0.1:%d" % port),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ])
        return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid, block)


def message(db, rows, table, header=None, header_last=False):
    """A length-prefixed GreptimeRequest; header_last: its RequestHeader
    after the rows (valid protobuf, which no encoder writes)."""
    h = header or pb.RequestHeader(dbname=db)
    req = pb.GreptimeRequest() if header_last else pb.GreptimeRequest(header=h)
    ri = req.row_inserts.inserts.add(table_name=table)
    for r in range(rows):
        row = ri.rows.rows.add()
        row.values.add(timestamp_millisecond_value=1700000000000 + r)
        row.values.add(f64_value=r * 0.5)
    body = req.SerializeToString()
    if header_last:
        body += pb.GreptimeRequest(header=h).SerializeToString()
    return struct.pack(">BI", 0, len(body)) + body


MAX_FRAME = 16384  # SETTINGS_MAX_FRAME_SIZE's initial value


def rejected_frames(sid, msg, trigger):
    """A rejected message as the server gets it: DATA frames of at most
    MAX_FRAME bytes, the first rewritten in place, the others turned into
    unknown-type frames of the same length."""
    out = rewritten(sid, min(len(msg), MAX_FRAME), trigger)
    for off in range(MAX_FRAME, len(msg), MAX_FRAME):
        out += frame(UNKNOWN_TYPE, 0, sid, b"\0" * min(MAX_FRAME, len(msg) - off))
    return out


def rewritten(sid, payload_len, trigger):
    """The in-place rewrite of a DATA frame of payload_len bytes."""
    rst = frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL))
    trig = frame(SETTINGS, 0, 0) if trigger == "settings" else \
        frame(PING, 0, 0, struct.pack(">Q", 0x726f776761746500 | (sid & 0xff)))
    filler = payload_len + 9 - len(rst) - len(trig) - 9
    if filler < 0:
        raise ValueError("DATA frame too small to rewrite: %d" % payload_len)
    out = rst + trig + frame(UNKNOWN_TYPE, 0, sid, b"\0" * filler)
    assert len(out) == payload_len + 9
    return out


def scenario_mix(c, a):
    sid, admitted, rejected, rejected_bytes = 1, [], [], 0
    for i in range(a.rejects):
        if a.admit_every and i % a.admit_every == 0:
            m = message("admitted", a.rows, "a%d" % sid)
            c.send(c.headers_frame(sid, a.port) + frame(DATA, END_STREAM, sid, m))
            admitted.append(sid)
            sid += 2
            # let the answer go out before the next rejection
            c.wait(lambda: c.streams.get(admitted[-1], {}).get("done"), 10)
        m = message("rejected", a.rows, "r%d" % sid)
        c.send(c.headers_frame(sid, a.port) + rejected_frames(sid, m, a.trigger))
        rejected_bytes += len(m)
        # the rest of the stream: frames the verdict turns into unknown type
        c.send(frame(UNKNOWN_TYPE, 0, sid, b"later DATA") +
               frame(UNKNOWN_TYPE, END_STREAM, sid, b""))
        rejected.append(sid)
        if a.client_rst:
            # what a client sends after our trailers-only answer, if it
            # had not half-closed its side yet
            want = len(rejected)
            c.wait(lambda: (c.settings_acks if a.trigger == "settings" else c.ping_acks) >= want)
            c.send(frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL)))
        sid += 2
        if c.goaway or c.closed:
            break
    acks = (lambda: c.settings_acks) if a.trigger == "settings" else (lambda: c.ping_acks)
    c.wait(lambda: acks() >= len(rejected) and
           all(c.streams.get(s, {}).get("done") for s in admitted), 20)
    # a last admitted call proves the connection still works
    m = message("admitted", a.rows, "last%d" % sid)
    c.send(c.headers_frame(sid, a.port) + frame(DATA, END_STREAM, sid, m))
    admitted.append(sid)
    c.wait(lambda: c.streams.get(sid, {}).get("done"), 10)
    time.sleep(0.2)  # anything the server would still write on rejected streams
    ok = [s for s in admitted
          if any(h.get("grpc-status") == "0" for h in c.streams.get(s, {}).get("headers", []))]
    on_rejected, answered, after_ack = {}, [], 0
    for k, s in enumerate(rejected):
        st = c.streams.get(s, {})
        # server frames on the stream after the answer to its own trigger:
        # they would follow the kernel's trailers-only response
        if st.get("seq") and k < len(c.ack_seq) and max(st["seq"]) > c.ack_seq[k]:
            after_ack += 1
        for f in st.get("frames", []):
            on_rejected[f] = on_rejected.get(f, 0) + 1
        if st.get("headers") and len(answered) < 3:
            answered.append({"stream": s, "headers": st["headers"], "hpack": st.get("raw")})
    return {"admitted": len(admitted), "admitted_ok": len(ok), "rejected": len(rejected),
            "trigger_acks": acks(), "frames_on_rejected_streams": on_rejected,
            "answered_rejected_examples": answered,
            "rejected_streams_answered_after_trigger": after_ack,
            "rejected_data_bytes": rejected_bytes}


def scenario_window(c, a):
    """Rejected bytes the server never saw as DATA: does it give window back?"""
    sid, sent = 1, 0
    c.wait(lambda: 4 in c.server_settings or c.settings_acks >= 1, 5)
    rows = a.rows
    for _ in range(a.rejects):
        m = message("rejected", rows, "w%d" % sid)
        c.send(c.headers_frame(sid, a.port) + rejected_frames(sid, m, "settings"))
        sent += len(m)
        sid += 2
    c.wait(lambda: c.settings_acks >= a.rejects, 20)
    time.sleep(0.2)
    return {"rejected": a.rejects, "rejected_data_bytes": sent,
            "server_conn_window_updates": c.conn_window_updates,
            "client_conn_window_left": 65535 + c.conn_window_updates - sent}


def scenario_late(c, a):
    """DATA a client sends on a refused stream after its answer: the server
    never sees it, so only the kernel can give its window back."""
    m = message(a.db, a.rows, "late")
    c.send(c.headers_frame(1, a.port) + frame(DATA, 0, 1, m))
    c.wait(lambda: c.streams.get(1, {}).get("done"), 10)
    status = [h.get("grpc-status") for h in c.streams.get(1, {}).get("headers", [])]
    credit0, late = c.conn_window_updates, 0
    for k in range(3):
        chunk = 16000
        c.send(frame(DATA, END_STREAM if k == 2 else 0, 1, b"\0" * chunk))
        late += chunk
    credited = c.wait(lambda: c.conn_window_updates - credit0 >= late, 10)
    m = message(a.free_db, a.rows, "late_free")
    c.send(c.headers_frame(3, a.port) + frame(DATA, END_STREAM, 3, m))
    c.wait(lambda: c.streams.get(3, {}).get("done"), 10)
    return {"refused_status": status, "late_bytes": late,
            "late_credit": c.conn_window_updates - credit0, "credited": credited,
            "admitted_status": [h.get("grpc-status")
                                for h in c.streams.get(3, {}).get("headers", [])]}


def scenario_split(a):
    """Every offset: preface, SETTINGS, a unary call on stream 1 (dbname
    --db) and one on stream 3 (catalog/schema --catalog/--schema), cut
    once; each call must be answered grpc-status --want (0; 8 when both
    databases are refused: then every refusal must be kept)."""
    enc = hpack.Encoder()
    block = enc.encode([
        (":method", "POST"), (":scheme", "http"),
        (":path", "/greptime.v1.GreptimeDatabase/Handle"),
        (":authority", "127.0.0.1:%d" % a.port),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ], huffman=False)
    # the second block indexes the first's fields (a client's dynamic table)
    block3 = enc.encode([
        (":method", "POST"), (":scheme", "http"),
        (":path", "/greptime.v1.GreptimeDatabase/Handle"),
        (":authority", "127.0.0.1:%d" % a.port),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ], huffman=False)
    ok = failed = 0
    last = None
    for cut in range(a.split_from, 10 ** 9):
        m1 = message(a.db, a.rows, "s1_%d" % cut)
        m3 = message(None, a.rows, "s3_%d" % cut,
                     pb.RequestHeader(catalog=a.catalog, schema=a.schema))
        allb = (PREFACE + frame(SETTINGS, 0, 0) +
                frame(HEADERS, END_HEADERS, 1, block) + frame(DATA, END_STREAM, 1, m1) +
                frame(HEADERS, END_HEADERS, 3, block3) +
                frame(DATA, END_STREAM, 3, m3))
        if cut >= len(allb):
            break
        s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(allb[:cut])
        time.sleep(a.gap_ms / 1000.0)  # a segment of its own
        s.sendall(allb[cut:])
        dec, status = hpack.Decoder(), {}
        try:
            for ftype, _, sid, payload in frames_of(s):
                if ftype == HEADERS:
                    for k, v in dec.decode(payload):
                        if k in ("grpc-status", b"grpc-status"):
                            status[sid] = int(v)
                if len(status) == 2:
                    break
        except OSError:
            pass
        s.close()
        if status == {1: a.want, 3: a.want}:
            ok += 1
        else:
            failed += 1
            last = {"cut": cut, "status": status}
    return {"cuts": ok + failed, "ok": ok, "failed": failed, "last_failure": last,
            "bytes": len(allb)}


def frames_of(s):
    """The frames a socket receives, as (type, flags, stream id, payload),
    until the server closes; a socket error is raised to the caller."""
    got = b""
    while True:
        while len(got) >= 9:
            n = got[0] << 16 | got[1] << 8 | got[2]
            if len(got) < 9 + n:
                break
            yield got[3], got[4], struct.unpack(">I", got[5:9])[0] & 0x7fffffff, got[9:9 + n]
            got = got[9 + n:]
        b = s.recv(65536)
        if not b:
            return
        got += b


def goaway_of(s, with_last=False):
    """Read frames until a GOAWAY (its error code, and with_last its last
    stream id) or the end (None)."""
    try:
        for ftype, _, _, payload in frames_of(s):
            if ftype == GOAWAY:
                last, code = struct.unpack(">II", payload[:8])
                return (code, last & 0x7fffffff) if with_last else code
    except OSError:
        pass
    return None


def scenario_uncounted(a):
    """One call of --path, an empty message, on a new connection whose
    :path is a raw literal with incremental indexing (python-hpack with
    Huffman off; grpc-go and nghttp2 send Huffman).  Returns how it ended:
    the GOAWAY's code, last stream id and debug text, or the call's
    grpc-status."""
    s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    block = hpack.Encoder().encode([
        (":method", "POST"), (":scheme", "http"), (":path", a.path),
        (":authority", "127.0.0.1:%d" % a.port),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ], huffman=False)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block) +
              frame(DATA, END_STREAM, 1, struct.pack(">BI", 0, 0)))
    dec = hpack.Decoder()
    out = {"goaway": None, "grpc_status": None}
    try:
        for ftype, flags, sid, payload in frames_of(s):
            if ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            elif ftype == GOAWAY:
                last, code = struct.unpack(">II", payload[:8])
                out["goaway"] = {"code": code, "last": last & 0x7fffffff,
                                 "debug": payload[8:].decode("utf-8", "replace").strip()}
                break
            elif ftype == HEADERS and sid == 1:
                # the server's blocks: END_HEADERS, no padding or priority
                for k, v in dec.decode(payload):
                    if k == "grpc-status":
                        out["grpc_status"] = int(v)
                if out["grpc_status"] is not None:
                    break
    except OSError as e:
        out["error"] = str(e)
    s.close()
    return out


def scenario_open_call(a):
    """A refusal that falls back to GOAWAY while stream 1's body is
    unfinished and stream 5, opened after the refused stream 3, was
    answered already: the GOAWAY must name stream 5 possibly processed
    (last stream id 5: a client retries streams above it, and a retry of
    5 would store it twice), and since stream 1's body never reaches the
    server, only rowgated's reset (--grpc-close-grace) ends the
    connection (docs/grpc.md#h2-close).  Returns the GOAWAY's code and
    last stream, the streams answered, how the connection ended and how
    long after the GOAWAY."""
    s = socket.create_connection(("127.0.0.1", a.port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # each send must reach the verdict in skbs of its own, or the refused
    # frame is judged whole and kept: a slow verdict (a TCG guest) reads
    # sends close together as one
    gap = max(a.gap_ms, 100) / 1000.0
    enc = hpack.Encoder()
    hdr = [(":method", "POST"), (":scheme", "http"),
           (":path", "/greptime.v1.GreptimeDatabase/Handle"),
           (":authority", "127.0.0.1:%d" % a.port),
           ("content-type", "application/grpc"), ("te", "trailers")]
    d3 = frame(DATA, END_STREAM, 3, message(a.db, 600, "oc_refused3", header_last=True))
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, enc.encode(hdr))
              + frame(DATA, 0, 1, message(a.db, a.rows, "oc_open1")[:-10]))
    time.sleep(gap)
    s.sendall(frame(HEADERS, END_HEADERS, 3, enc.encode(hdr)) +
              frame(HEADERS, END_HEADERS, 5, enc.encode(hdr)) +
              frame(DATA, END_STREAM, 5, message(a.free_db, a.rows, "oc_free5")))
    time.sleep(gap)
    s.sendall(d3[:9 + 5000])
    time.sleep(gap)
    s.sendall(d3[9 + 5000:])
    answered, end, t0, goaway = set(), "eof", None, None
    try:
        for ftype, _, sid, payload in frames_of(s):
            if ftype == HEADERS:
                answered.add(sid)
            elif ftype == GOAWAY and goaway is None:
                last, code = struct.unpack(">II", payload[:8])
                goaway = (code, last & 0x7fffffff)
                t0 = time.monotonic()
    except ConnectionResetError:
        end = "reset"
    except OSError as e:
        end = "error: %s" % e
    s.close()
    return {"goaway": goaway[0] if goaway else None,
            "last_stream": goaway[1] if goaway else None,
            "answered": sorted(answered), "end": end,
            "after_s": round(time.monotonic() - t0, 3) if t0 else None}


def scenario_unary_two(a):
    """One unary Handle call whose DATA carries two messages: --db with 1
    row, then --free-db with --rows rows (one frame, or with --from N the
    second message in frames of N bytes).  tonic and grpc-go hand the
    handler the first and drop the second; rowgate charges only what the
    server stores.  Returns the call's grpc-status."""
    s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    enc = hpack.Encoder()
    hdr = [(":method", "POST"), (":scheme", "http"),
           (":path", "/greptime.v1.GreptimeDatabase/Handle"),
           (":authority", "127.0.0.1:%d" % a.port),
           ("content-type", "application/grpc"), ("te", "trailers")]
    first = message(a.db, 1, "u2_first_%d" % os.getpid())
    second = message(a.free_db, a.rows, "u2_second_%d" % os.getpid())
    if a.split_from > 1:
        body = frame(DATA, 0, 1, first)
        for off in range(0, len(second), a.split_from):
            last = off + a.split_from >= len(second)
            body += frame(DATA, END_STREAM if last else 0, 1, second[off:off + a.split_from])
    else:
        body = frame(DATA, END_STREAM, 1, first + second)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, enc.encode(hdr))
              + body)
    dec, status = hpack.Decoder(), None
    try:
        for ftype, flags, sid, payload in frames_of(s):
            if ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            if ftype == HEADERS and sid == 1:
                for k, v in dec.decode(payload):
                    if k in ("grpc-status", b"grpc-status"):
                        status = int(v)
                if flags & END_STREAM:
                    break
    except OSError:
        pass
    s.close()
    return {"status": status}


def scenario_streams(c, a):
    """--streams unary Handle calls on one connection, each with its
    message (--db, --rows rows) half sent: every stream's first DATA frame
    holds the first half, and only once all are sent do the second halves
    follow (END_STREAM), last stream first.  The kernel then follows that
    many half-read messages at once.  Returns each call's grpc-status."""
    sids = [2 * i + 1 for i in range(a.streams)]
    halves = {}
    for i, sid in enumerate(sids):
        msg = message(a.db, a.rows, "streams_%d_%d" % (os.getpid(), i))
        cut = len(msg) // 2
        halves[sid] = msg[cut:]
        c.send(c.headers_frame(sid, a.port) + frame(DATA, 0, sid, msg[:cut]))
    for sid in reversed(sids):
        c.send(frame(DATA, END_STREAM, sid, halves[sid]))

    def status(sid):
        for h in c.streams.get(sid, {}).get("headers", []):
            v = h.get("grpc-status", h.get(b"grpc-status"))
            if v is not None:
                return int(v)
        return None
    c.wait(lambda: all(c.streams.get(sid, {}).get("done") for sid in sids), 30)
    codes = {}
    for sid in sids:
        k = str(status(sid))
        codes[k] = codes.get(k, 0) + 1
    return {"streams": a.streams, "codes": codes}


def scenario_fallback(a):
    """Refusals whose frames reach the kernel cut across skbs: a short
    completing frame whose RequestHeader is in it, and a completing frame
    over the stash bound (4 KB) whose RequestHeader comes after 4 KB of
    rows, still close with GOAWAY; cut elsewhere, the header is held back
    to the next skb, or the message is judged at its frame's header (or at
    the frame before a short last one), and the refusal is kept."""
    block = hpack.Encoder().encode([
        (":method", "POST"), (":scheme", "http"),
        (":path", "/greptime.v1.GreptimeDatabase/Handle"),
        (":authority", "127.0.0.1:%d" % a.port),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ])
    head = PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block)
    gap = a.gap_ms / 1000.0
    out = {}
    for case in ("short", "over"):
        if case == "short":
            # its RequestHeader in the last 11 bytes: the database is not
            # known at the frame before them (docs/grpc.md#h2-short-tail)
            m = message(a.db, a.rows, "fb_short", header_last=True)
        else:
            m = message(a.db, 600, "fb_over", header_last=True)
        s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if case == "short":
            s.sendall(head + frame(DATA, 0, 1, m[:-11]) + frame(DATA, END_STREAM, 1, m[-11:]))
        else:
            # its RequestHeader after 4 KB of rows: neither held back nor
            # judged at its header (docs/grpc.md#h2-early)
            d = frame(DATA, END_STREAM, 1, m)
            if len(d) <= 4096 + 9 + 5000:
                raise ValueError("over: a frame of %d bytes is too short" % len(d))
            s.sendall(head + d[:9 + 5000])
            time.sleep(gap)  # a segment of its own
            s.sendall(d[9 + 5000:])
        out[case] = goaway_of(s)
        s.close()

    out["open_call"] = scenario_open_call(a)

    # one connection: each refused call cut once, then a whole one
    c = Conn(a.port)
    if not c.wait(lambda: c.settings_acks >= 1, 10):
        raise RuntimeError("no SETTINGS ACK from the server")

    def status(sid):
        c.wait(lambda: c.streams.get(sid, {}).get("done"), 10)
        for h in c.streams.get(sid, {}).get("headers", []):
            if "grpc-status" in h:
                return int(h["grpc-status"])
        return None

    def call(sid, cut, end_stream=True):
        d = frame(DATA, END_STREAM if end_stream else 0, sid,
                  message(a.db, a.rows, "kept%d" % sid))
        b = c.headers_frame(sid, a.port) + d
        if cut is None:
            c.send(b)
        else:
            c.send_split(b, cut + len(b) - len(d), gap)
        return status(sid)

    kept = {}
    kept["header_then_payload"] = call(1, 9)
    kept["header_cut"] = call(3, 4)
    kept["payload_cut"] = call(5, 9 + 7)
    # a refused stream the client goes on sending on: its later frame,
    # header cut, becomes filler
    kept["later_cut"] = call(7, None, end_stream=False)
    later = frame(DATA, END_STREAM, 7, message(a.db, a.rows, "later7"))
    c.send_split(later, 4, gap)
    # frames too large to hold back, their header and the message's
    # RequestHeader in the first send: refused at the frame's header
    # (docs/grpc.md#h2-early), the trigger in the frame's last 9 bytes
    def big(sid, rows, cut_from_end=None, cut_in_payload=None, then=None):
        m = message(a.db, rows, "big%d" % sid)
        parts = [m[i:i + MAX_FRAME] for i in range(0, len(m), MAX_FRAME)]
        d = b"".join(frame(DATA, END_STREAM if i == len(parts) - 1 else 0, sid, x)
                     for i, x in enumerate(parts))
        last = len(m) % MAX_FRAME or MAX_FRAME
        if last + 9 <= 4096:
            raise ValueError("big: a last frame of %d bytes fits the stash" % last)
        b = c.headers_frame(sid, a.port) + d
        cut = len(b) - cut_from_end if cut_from_end else len(b) - (last + 9) + 9 + cut_in_payload
        if then is None:
            c.send_split(b, cut, gap)
        else:
            c.send_split(b, cut, gap, cut + then)  # a third send
        return status(sid)

    kept["early_two_frames"] = big(11, 2000, cut_in_payload=100)
    kept["early_trigger_cut"] = big(13, 2000, cut_from_end=4)
    kept["early_one_frame"] = big(15, 600, cut_in_payload=400)
    # its header alone in a send: its start held back until the
    # RequestHeader arrives, then judged at its header
    kept["early_after_hold"] = big(19, 600, cut_in_payload=0, then=400)
    # a message whose last DATA frame holds 10 bytes, too few for the
    # rewrite: refused at the frame before (docs/grpc.md#h2-short-tail),
    # sent with it, before it (grpc-go's cut at the flow-control window),
    # cut in its payload (held back whole), and over 4 KB cut in its
    # payload (refused at its header)
    def short_tail(sid, rows, cut_in_payload=None, apart=True):
        m = message(a.db, rows, "tail%d" % sid)
        f1 = frame(DATA, 0, sid, m[:-10])
        if len(f1) > MAX_FRAME + 9:
            raise ValueError("short_tail: %d rows do not fit one frame" % rows)
        b = c.headers_frame(sid, a.port) + f1 + frame(DATA, END_STREAM, sid, m[-10:])
        end1 = len(b) - 19
        if not apart:
            c.send(b)
        elif cut_in_payload is None:
            c.send_split(b, end1, gap)
        else:
            c.send_split(b, end1 - len(f1) + 9 + cut_in_payload, gap, end1)
        return status(sid)

    kept["short_tail"] = short_tail(21, a.rows, apart=False)
    kept["short_tail_later"] = short_tail(23, a.rows)
    kept["short_tail_held"] = short_tail(25, a.rows, cut_in_payload=30)
    kept["short_tail_early"] = short_tail(27, 600, cut_in_payload=400)
    # the first send over 16 KB, so it cannot be cut and held back, and
    # ending inside the 22-byte head the refusal writes: the head's rest
    # goes at the next send's start (docs/grpc.md#h2-early-head-split)
    kept["early_head_split"] = big(29, 2000, cut_in_payload=5)
    kept["early_header_only"] = big(31, 2000, cut_in_payload=0)
    kept["early_head_three"] = big(33, 2000, cut_in_payload=0, then=4)
    kept["whole_after"] = call(35, None)
    out["kept"] = kept
    out["frames"] = {k: v["frames"] for k, v in c.streams.items()}
    out["goaway"] = c.goaway
    out["closed"] = c.closed
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True, help="server's gRPC port")
    ap.add_argument("--scenario",
                    choices=("mix", "window", "split", "fallback", "open_call", "uncounted",
                             "late", "unary_two", "streams"),
                    required=True)
    ap.add_argument("--path", default="/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
                    help="uncounted: the method path called")
    ap.add_argument("--rejects", type=int, default=100, help="rejected streams (default 100)")
    ap.add_argument("--admit-every", type=int, default=10,
                    help="an admitted call before every K-th rejection (default 10, 0: none)")
    ap.add_argument("--rows", type=int, default=20, help="rows a message (default 20)")
    ap.add_argument("--streams", type=int, default=128,
                    help="streams: concurrent half-sent calls (default 128)")
    ap.add_argument("--trigger", choices=("settings", "ping"), default="settings",
                    help="frame that makes the server answer (default settings)")
    ap.add_argument("--client-rst", action="store_true",
                    help="send the client's RST_STREAM after each trigger answer")
    ap.add_argument("--db", default="split_a",
                    help="split: dbname of stream 1; fallback, late: a database refused now")
    ap.add_argument("--free-db", default="probe_free",
                    help="open_call, late: a database without a limit (default probe_free)")
    ap.add_argument("--catalog", default="Acme", help="split: catalog of stream 3")
    ap.add_argument("--schema", default="Split_B", help="split: schema of stream 3")
    ap.add_argument("--from", dest="split_from", type=int, default=1,
                    help="split: first offset (default 1)")
    ap.add_argument("--want", type=int, default=0,
                    help="split: the grpc-status each call must get (default 0)")
    ap.add_argument("--gap-ms", type=float, default=5,
                    help="split, fallback: pause between the two sends (default 5)")
    a = ap.parse_args()
    if a.scenario == "split":
        print(json.dumps(scenario_split(a)))
        return
    if a.scenario == "fallback":
        print(json.dumps(scenario_fallback(a)))
        return
    if a.scenario == "open_call":
        print(json.dumps(scenario_open_call(a)))
        return
    if a.scenario == "uncounted":
        print(json.dumps(scenario_uncounted(a)))
        return
    if a.scenario == "unary_two":
        print(json.dumps(scenario_unary_two(a)))
        return
    c = Conn(a.port)
    if not c.wait(lambda: c.settings_acks >= 1, 10):
        sys.exit("h2_probe: no SETTINGS ACK from the server")
    base = c.settings_acks
    c.settings_acks = 0
    r = {"mix": scenario_mix, "window": scenario_window, "late": scenario_late,
         "streams": scenario_streams}[a.scenario](c, a)
    r.update({"goaway": c.goaway, "closed": c.closed,
              "server_max_concurrent_streams": c.server_settings.get(3),
              "handshake_acks": base})
    print(json.dumps(r))


if __name__ == "__main__":
    main()
