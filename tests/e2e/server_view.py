#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Differential check: what the guarded server stores per database against
what rowgate charged per database, one raw request at a time.

  server_view.py --server vm|influxdb --port P --ctl ROWGATECTL --socket S
                 [--generated N] [--seed K]

The target database `t` is deep in debt; `free` (and `public` on
victoria-metrics) have limits no test reaches, so their charges are counted.
Each case sends its raw bytes over its own TCP connection (Connection:
close) with rows of a measurement of its own, then the two views are
compared per case: rowgate rejected it (its 429 or 400) and the server
stored nothing, or for every limited database the rows the server stored
equal the rows rowgate charged.  Prints one line per case and exits 1 when
any case differs.
"""
import argparse
import json
import random
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

LIMITED = {"vm": ("t", "free", "public"), "influxdb": ("t", "free")}
ROWS = 3  # rows per case body: one field each, so one sample each


def body(cid, n=ROWS):
    return b"".join(b"sv_%s,k=%d v=1\n" % (cid.encode(), i) for i in range(n))


def req(method, target, cid, headers=(), version=b"HTTP/1.1", lead=b"", host=b"Host: h\r\n"):
    b = body(cid)
    head = lead + method + b" " + target + b" " + version + b"\r\n" + host
    head += b"Content-Length: %d\r\n" % len(b)
    for h in headers:
        head += h + b"\r\n"
    return head + b"Connection: close\r\n\r\n" + b


def raw_post(target, payload, ctype=b"text/plain"):
    return (b"POST " + target + b" HTTP/1.1\r\nHost: h\r\nContent-Type: " + ctype +
            b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(payload) + payload)


def hand_cases():
    """(name, bytes-producing function of the case id, [keep-alive prefix])."""
    c = []

    def add(name, fn, prefix=None):
        c.append((name, fn, prefix))

    add("plain", lambda i: req(b"POST", b"/write?db=t", i))
    add("double-slash", lambda i: req(b"POST", b"//write?db=t", i))
    add("triple-slash", lambda i: req(b"POST", b"///write?db=t", i))
    add("pct-slash", lambda i: req(b"POST", b"/%2Fwrite?db=t", i))
    add("pct-path", lambda i: req(b"POST", b"/wr%69te?db=t", i))
    add("absolute", lambda i: req(b"POST", b"http://h/write?db=t", i))
    add("absolute-upper", lambda i: req(b"POST", b"HTTP://h:8428/write?db=t", i))
    add("absolute-double", lambda i: req(b"POST", b"http://h//write?db=t", i))
    add("absolute-nohost", lambda i: req(b"POST", b"http:///write?db=t", i))
    add("absolute-userinfo", lambda i: req(b"POST", b"http://u@h/write?db=t", i))
    add("method-get", lambda i: req(b"GET", b"/write?db=t", i))
    add("method-put", lambda i: req(b"PUT", b"/write?db=t", i))
    add("method-lower", lambda i: req(b"post", b"/write?db=t", i))
    add("method-token", lambda i: req(b"X-W!", b"/write?db=t", i))
    add("method-long", lambda i: req(b"ABCDEFGHIJKLMNOPQRS", b"/write?db=t", i))
    add("garbage-method", lambda i: b"\x16\x03\x01" + req(b"POST", b"/write?db=t", i))
    add("pct-key", lambda i: req(b"POST", b"/write?d%62=t", i))
    add("pct-value", lambda i: req(b"POST", b"/write?db=%74", i))
    add("plus-value", lambda i: req(b"POST", b"/write?db=fr+ee&db=t", i))
    add("semicolon-first", lambda i: req(b"POST", b"/write?db=x;y&db=t", i))
    add("semicolon-t", lambda i: req(b"POST", b"/write?db=t;&db=free", i))
    add("bad-escape-first", lambda i: req(b"POST", b"/write?db=%zz&db=t", i))
    add("dup-t-first", lambda i: req(b"POST", b"/write?db=t&db=free", i))
    add("dup-free-first", lambda i: req(b"POST", b"/write?db=free&db=t", i))
    add("empty-first", lambda i: req(b"POST", b"/write?db=&db=t", i))
    add("encoded-eq", lambda i: req(b"POST", b"/write?db%3Dt", i))
    add("header-db", lambda i: req(b"POST", b"/write?db=t", i,
                                   headers=[b"X-Greptime-DB-Name: free"]))
    add("header-db-only", lambda i: req(b"POST", b"/write", i,
                                        headers=[b"X-Greptime-DB-Name: t"]))
    add("catalog-prefix", lambda i: req(b"POST", b"/write?db=greptime-t", i))
    add("v2-bucket", lambda i: req(b"POST", b"/api/v2/write?bucket=t", i))
    add("v2-db", lambda i: req(b"POST", b"/api/v2/write?bucket=free&db=t", i))
    add("influx-prefix", lambda i: req(b"POST", b"/influx//write?db=t", i))
    add("extra-label-db", lambda i: req(b"POST", b"/write?db=free&extra_label=db=t", i))
    add("http10", lambda i: req(b"POST", b"/write?db=t", i, version=b"HTTP/1.0"))
    # Go refuses these before any handler: nothing may be charged
    add("no-host", lambda i: req(b"POST", b"/write?db=free", i, host=b""))
    add("two-hosts", lambda i: req(b"POST", b"/write?db=free", i,
                                   host=b"Host: a\r\nHost: b\r\n"))
    add("http10-no-host", lambda i: req(b"POST", b"/write?db=free", i, host=b"",
                                        version=b"HTTP/1.0"))
    add("http10-te", lambda i: (b"POST /write?db=free HTTP/1.0\r\nHost: h\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n"
                                b"%x\r\n" % len(body(i)) + body(i) + b"\r\n0\r\n\r\n"))
    # chunk-size lines Go refuses (blanks before ';', text after the size)
    for name, sep in (("chunk-blank-ext", b" ;x"), ("chunk-size-junk", b" junk")):
        add(name, (lambda sep: lambda i: (
            b"POST /write?db=free HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n%x" % len(body(i)) + sep + b"\r\n" + body(i) +
            b"\r\n0\r\n\r\n"))(sep))
    # victoria-metrics writes rowgate cannot count: a db label in the body
    # lands in t; they must be refused, not passed unlimited
    add("import-prometheus", lambda i: raw_post(
        b"/api/v1/import/prometheus", b"".join(
            b'sv_%s_v{db="t",k="%d"} 1\n' % (i.encode(), k) for k in range(ROWS))))
    add("datadog-slash", lambda i: raw_post(
        b"/datadog/api/v1/series/", json.dumps({"series": [
            {"metric": "sv_%s_v" % i, "points": [[int(time.time()), 1]],
             "tags": ["db:t", "k:%d" % k]} for k in range(ROWS)]}).encode(),
        ctype=b"application/json"))
    add("lead-crlf-first", lambda i: req(b"POST", b"/write?db=t", i, lead=b"\r\n"))
    # after a POST on the same connection Go skips up to four CR/LF
    add("lead-crlf-after-post",
        lambda i: req(b"POST", b"/write?db=t", i, lead=b"\r\n"),
        prefix=lambda i: b"POST /write?db=free HTTP/1.1\r\nHost: h\r\n"
                         b"Content-Length: 0\r\n\r\n")
    add("lead-4-after-post",
        lambda i: req(b"POST", b"/write?db=t", i, lead=b"\n\r\n\r"),
        prefix=lambda i: b"POST /write?db=free HTTP/1.1\r\nHost: h\r\n"
                         b"Content-Length: 0\r\n\r\n")
    # a POST rowgate refused never reached the server: its last method is GET
    add("lead-crlf-after-rejected-post",
        lambda i: req(b"POST", b"/write?db=free", i, lead=b"\r\n"),
        prefix=lambda i: [b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n",
                          b"POST /write?db=t HTTP/1.1\r\nHost: h\r\n"
                          b"Content-Length: 400\r\n\r\n" + b"sv_pre v=1\n" * 36 + b"\n" * 4])
    add("lead-crlf-after-get",
        lambda i: req(b"POST", b"/write?db=t", i, lead=b"\r\n"),
        prefix=lambda i: b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
    return c


PATHS = [b"/write", b"//write", b"///write", b"/%2Fwrite", b"/wr%69te", b"/influx/write",
         b"//influx//write", b"/api/v2/write", b"http://h/write", b"http://h//write",
         b"http:/write", b"/write/"]
METHODS = [b"POST", b"GET", b"PUT", b"post", b"PATCH", b"X"]
QUERIES = [b"db=t", b"d%62=t", b"db=%74", b"db=x;y&db=t", b"db=t&db=free", b"db=free&db=t",
           b"db=%zz&db=t", b"db=t;&db=free", b"", b"db=fr%65e", b"db=free&d%62=t",
           b"db=t%3B&db=free", b"a=1;&db=t", b"db", b"db=t&extra_label=a=b"]


def generated_cases(n, seed):
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        m, p, q = rnd.choice(METHODS), rnd.choice(PATHS), rnd.choice(QUERIES)
        target = p + (b"?" + q if q else b"")
        out.append(("gen%d:%s %s" % (k, m.decode(), target.decode()),
                    (lambda m, t: lambda i: req(m, t, i))(m, target), None))
    return out


def read_answer(s):
    """One response: its head, then a body by Content-Length, none for 204,
    else until the server closes (Go's own 400s close without a length)."""
    got = b""
    try:
        while b"\r\n\r\n" not in got:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk
        head, rest = got.split(b"\r\n\r\n", 1)
        low = head.lower()
        if b"content-length:" in low:
            n = int(low.split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < n:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
            return head + b"\r\n\r\n" + rest
        if head.startswith((b"HTTP/1.1 204", b"HTTP/1.0 204")):
            return got
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return head + b"\r\n\r\n" + rest
            rest += chunk
    except ConnectionResetError:
        return got
    except socket.timeout:
        return got + b" (timed out)"


def send_case(port, data, prefix):
    """Sends the case on a connection of its own; returns the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for p in ([prefix] if isinstance(prefix, bytes) else prefix or []):
            s.sendall(p)
            read_answer(s)
        s.sendall(data)
        return read_answer(s)
    finally:
        s.close()


def by_rowgate(resp):
    """Whether rowgate itself answered (its 429 or its 400)."""
    head = resp.split(b"\r\n\r\n", 1)[0].lower()
    return (resp.startswith(b"HTTP/1.1 429") and b"x-greptime-err-code: 6001" in head) or \
        (resp.startswith(b"HTTP/1.1 400") and b"rowgate" in resp)


def charged(ctl, sock, dbs):
    out = subprocess.run([ctl, "--socket", sock, "--json", "stats"], check=True,
                         capture_output=True, text=True).stdout
    rows = {d["db"]: d["admitted_rows"] + d["unenforced_rows"]
            for d in json.loads(out)["databases"]}
    return {db: rows.get(db, 0) for db in dbs}


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def stored_vm(port):
    """{case id: {db: samples}}; a series without a db label is `public`."""
    base = "http://127.0.0.1:%d" % port
    http_get(base + "/internal/force_flush")
    data = http_get(base + "/api/v1/export?" +
                    urllib.parse.urlencode({"match[]": '{__name__=~"sv_.*"}'}))
    out = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        cid = o["metric"]["__name__"][len("sv_"):-len("_v")]
        db = o["metric"].get("db", "public")
        d = out.setdefault(cid, {})
        d[db] = d.get(db, 0) + len(o["values"])
    return out


def stored_influx(port):
    out = {}
    for db in LIMITED["influxdb"]:
        q = urllib.parse.urlencode({"db": db, "q": 'SELECT count(v) FROM /^sv_/'})
        res = json.loads(http_get("http://127.0.0.1:%d/query?%s" % (port, q)))
        for series in res["results"][0].get("series", []):
            cid = series["name"][len("sv_"):]
            out.setdefault(cid, {})[db] = series["values"][0][1]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=("vm", "influxdb"), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--generated", type=int, default=60)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    dbs = LIMITED[a.server]
    cases = hand_cases() + generated_cases(a.generated, a.seed)
    results = []
    for n, (name, fn, prefix) in enumerate(cases):
        cid = "c%d" % n
        before = charged(a.ctl, a.socket, dbs)
        resp = send_case(a.port, fn(cid), prefix(cid) if prefix else None)
        after = charged(a.ctl, a.socket, dbs)
        delta = {db: after[db] - before[db] for db in dbs}
        results.append((cid, name, resp, delta))

    # the sentinel is written last: once it is visible, so is every case
    sentinel = "sentinel"
    send_case(a.port, req(b"POST", b"/write?db=free", sentinel), None)
    stored_of = stored_vm if a.server == "vm" else stored_influx
    deadline = time.monotonic() + 30
    while True:
        stored = stored_of(a.port)
        if sentinel in stored or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if sentinel not in stored:
        print("FAIL: the sentinel never became visible in the server")
        return 1

    bad = []
    for cid, name, resp, delta in results:
        st = stored.get(cid, {})
        status = resp[:12].decode("latin-1") or "(no answer)"
        if by_rowgate(resp):
            ok = sum(st.values()) == 0 and sum(delta.values()) == 0
            verdict = "rejected by rowgate"
        else:
            ok = all(st.get(db, 0) == delta[db] for db in dbs)
            verdict = "passed"
        line = "%s %-4s %-34s %s %s: stored %s charged %s" % (
            "ok:  " if ok else "FAIL:", cid, name[:34], status, verdict,
            json.dumps(st, sort_keys=True),
            json.dumps({k: v for k, v in delta.items() if v}, sort_keys=True))
        print(line)
        if not ok:
            bad.append(name)
    print("%d cases, %d differ%s" % (len(results), len(bad),
                                       (": " + ", ".join(bad)) if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
