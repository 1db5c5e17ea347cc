#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Differential check: what the guarded server stores per database against
what rowgate charged per database, one raw request at a time.

  server_view.py --server vm|influxdb|greptimedb --port P --ctl ROWGATECTL
                 --socket S [--generated N] [--seed K] [--splits [--split-stride N]]

The target database `t` is deep in debt; `free` (and `public` on
victoria-metrics) have limits no test reaches, so their charges are counted.
Each case sends its raw bytes over its own TCP connection (Connection:
close) with rows of a measurement of its own, then the two views are
compared per case: rowgate rejected it (its 429 or 400) and the server
stored nothing, or for every limited database the rows the server stored
equal the rows rowgate charged.  A case marked as a known overcharge (a
body the server refuses as a whole: docs/threat-model.md) passes when the
server answered its own error and stored nothing.  Prints one line per case
and exits 1 when any case differs.

greptimedb is rg-greptime (tests/greptime: hyper with GreptimeDB's rules);
--splits also sends the framing cases split in two at every byte offset
(victoria-metrics: also the cases with a `db` tag in the body).
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

LIMITED = {"vm": ("t", "free", "public"), "influxdb": ("t", "free"),
           "greptimedb": ("t", "free", "public")}
ROWS = 3  # rows per case body: one field each, so one sample each


def body(cid, n=ROWS):
    return b"".join(b"sv_%s,k=%d v=1\n" % (cid.encode(), i) for i in range(n))


def req(method, target, cid, headers=(), version=b"HTTP/1.1", lead=b"", host=b"Host: h\r\n",
        payload=None):
    b = body(cid) if payload is None else payload
    head = lead + method + b" " + target + b" " + version + b"\r\n" + host
    head += b"Content-Length: %d\r\n" % len(b)
    for h in headers:
        head += h + b"\r\n"
    return head + b"Connection: close\r\n\r\n" + b


def tagged_body(cid, tags, n=ROWS, first=0):
    """body() with `tags` after the measurement of every line."""
    return b"".join(b"sv_%s%s,k=%d v=1\n" % (cid.encode(), tags, i) for i in range(first, n))


# (name, target, tags): a `db` tag in the body naming t, or not quite
BODY_DB_CASES = (
    ("body-db-tag", b"/write?db=free", b",db=t"),
    ("body-db-tag-no-query", b"/write", b",db=t"),
    ("body-db-tag-unlimited", b"/write?db=nolimit", b",db=t"),
    ("body-db-tag-long-query", b"/write?db=" + b"x" * 70, b",db=t"),
    ("body-db-last-wins", b"/write?db=free", b",db=free,db=t"),
    ("body-db-free-last", b"/write?db=free", b",db=t,db=free"),
    ("body-db-empty-last", b"/write?db=free", b",db=t,db="),
    ("body-db-escaped-value", b"/write?db=free", b",db=\\t"),
    ("body-db-escaped-key", b"/write?db=free", b",d\\b=t"),
)


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
    # victoria-metrics files a line under its db tag (the last one with a
    # value), whatever the query says: lines naming t must be refused
    for name, target, tags in BODY_DB_CASES:
        add(name, (lambda target, tags: lambda i: req(
            b"POST", target, i, payload=tagged_body(i, tags)))(target, tags))
    add("body-db-chunked", lambda i: chunked(b"/write?db=free", tagged_body(i, b",db=t"),
                                             sizes=[7, 30, 1000]))
    add("body-db-second-line", lambda i: req(
        b"POST", b"/write?db=free", i,
        payload=body(i, 1) + tagged_body(i, b",db=t", first=1)))
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


GT_W = b"/v1/influxdb/write"
GT_V2 = b"/v1/influxdb/api/v2/write"


def chunked(target, payload, headers=b"", sizes=None, ext=b""):
    """A chunked POST: payload in chunks of `sizes` bytes (one chunk by
    default), `ext` after each chunk size."""
    out = b"POST " + target + b" HTTP/1.1\r\nHost: h\r\n" + headers + \
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    pos = 0
    for n in sizes or [len(payload)]:
        part = payload[pos:pos + n]
        pos += n
        out += b"%x" % len(part) + ext + b"\r\n" + part + b"\r\n"
    return out + b"0\r\n\r\n"


def gzip_body(cid):
    import gzip
    return gzip.compress(body(cid))


def deflate_body(cid):
    import zlib
    return zlib.compress(body(cid))


def greptime_cases():
    """GreptimeDB's reading (rg-greptime): (name, fn, prefix, known
    overcharge).  The framing ones are also sent split (--splits)."""
    c = []

    def add(name, fn, prefix=None, over=False):
        c.append((name, fn, prefix, over))

    w = GT_W
    add("plain", lambda i: req(b"POST", w + b"?db=t", i))
    add("plain-free", lambda i: req(b"POST", w + b"?db=free", i))
    add("no-db", lambda i: req(b"POST", w, i))
    add("v2-bucket", lambda i: req(b"POST", GT_V2 + b"?bucket=t", i))
    add("v2-db-first", lambda i: req(b"POST", GT_V2 + b"?bucket=free&db=t", i))
    add("v2-empty-db", lambda i: req(b"POST", GT_V2 + b"?db=&bucket=t", i))
    add("v1-bucket", lambda i: req(b"POST", w + b"?bucket=t", i))
    # routes: axum matches the raw path exactly
    add("double-slash", lambda i: req(b"POST", b"/" + w + b"?db=t", i))
    add("trailing-slash", lambda i: req(b"POST", w + b"/?db=t", i))
    add("pct-path", lambda i: req(b"POST", b"/v1/influxdb/wr%69te?db=t", i))
    add("pct-slash", lambda i: req(b"POST", b"/v1%2Finfluxdb/write?db=t", i))
    add("upper-path", lambda i: req(b"POST", b"/V1/influxdb/write?db=t", i))
    add("absolute", lambda i: req(b"POST", b"http://h" + w + b"?db=t", i))
    add("absolute-upper", lambda i: req(b"POST", b"HTTP://h:4000" + w + b"?db=t", i))
    add("absolute-free", lambda i: req(b"POST", b"http://h" + w + b"?db=free", i))
    add("absolute-nohost", lambda i: req(b"POST", b"http://" + w + b"?db=t", i))
    add("absolute-userinfo", lambda i: req(b"POST", b"http://u@h" + w + b"?db=t", i))
    add("generic-write", lambda i: req(b"POST", b"/write?db=free", i))
    # methods
    add("method-get", lambda i: req(b"GET", w + b"?db=t", i))
    add("method-put", lambda i: req(b"PUT", w + b"?db=t", i))
    add("method-lower", lambda i: req(b"post", w + b"?db=t", i))
    add("method-token", lambda i: req(b"X-W!", w + b"?db=t", i))
    add("garbage-method", lambda i: b"\x16\x03\x01" + req(b"POST", w + b"?db=t", i))
    # the database: the raw query's first db= pair
    add("pct-key", lambda i: req(b"POST", w + b"?d%62=t", i))
    add("pct-value", lambda i: req(b"POST", w + b"?db=%74", i))
    add("plus-value", lambda i: req(b"POST", w + b"?db=fr+ee&db=t", i))
    add("semicolon-t", lambda i: req(b"POST", w + b"?db=t;&db=free", i))
    add("dup-t-first", lambda i: req(b"POST", w + b"?db=t&db=free", i))
    add("dup-free-first", lambda i: req(b"POST", w + b"?db=free&db=t", i))
    add("empty-first", lambda i: req(b"POST", w + b"?db=&db=t", i))
    add("encoded-eq", lambda i: req(b"POST", w + b"?db%3Dt", i))
    add("ampersand-lead", lambda i: req(b"POST", w + b"?&db=t", i))
    add("catalog-prefix", lambda i: req(b"POST", w + b"?db=greptime-t", i))
    add("catalog-other", lambda i: req(b"POST", w + b"?db=other-t", i))
    add("catalog-empty", lambda i: req(b"POST", w + b"?db=greptime-", i))
    add("header-db", lambda i: req(b"POST", w + b"?db=t", i,
                                   headers=[b"X-Greptime-DB-Name: free"]))
    add("header-db-only", lambda i: req(b"POST", w, i, headers=[b"X-Greptime-DB-Name: t"]))
    add("header-lower", lambda i: req(b"POST", w + b"?db=free", i,
                                      headers=[b"x-greptime-db-name: t"]))
    add("header-catalog", lambda i: req(b"POST", w + b"?db=free", i,
                                        headers=[b"X-Greptime-DB-Name: greptime-t"]))
    add("header-empty", lambda i: req(b"POST", w + b"?db=t", i,
                                      headers=[b"X-Greptime-DB-Name: "]))
    add("header-dup", lambda i: req(b"POST", w + b"?db=free", i,
                                    headers=[b"X-Greptime-DB-Name: t",
                                             b"X-Greptime-DB-Name: free"]))
    add("header-non-ascii", lambda i: req(b"POST", w + b"?db=t", i,
                                          headers=[b"X-Greptime-DB-Name: fr\xe9e"]))
    add("header-del", lambda i: req(b"POST", w + b"?db=free", i,
                                    headers=[b"X-Greptime-DB-Name: t\x7f"]))
    add("header-tab-inside", lambda i: req(b"POST", w + b"?db=t", i,
                                           headers=[b"X-Greptime-DB-Name: fr\tee"]))
    add("header-space-name", lambda i: req(b"POST", w + b"?db=free", i,
                                           headers=[b"X-Greptime-DB-Name : t"]))
    add("header-underscore", lambda i: req(b"POST", w + b"?db=free", i,
                                           headers=[b"X_Greptime_DB_Name: t"]))
    add("header-blanks", lambda i: req(b"POST", w + b"?db=free", i,
                                       headers=[b"X-Greptime-DB-Name:  t \t"]))
    # targets the http crate parses its own way, or refuses (400)
    add("fragment-t", lambda i: req(b"POST", w + b"?db=t#x", i))
    add("fragment-free", lambda i: req(b"POST", w + b"?db=free#x", i))
    add("fragment-path", lambda i: req(b"POST", w + b"#?db=t", i))
    add("empty-query", lambda i: req(b"POST", w + b"?", i))
    add("query-brace", lambda i: req(b"POST", w + b"?db=free&x={", i))
    add("query-quote", lambda i: req(b"POST", w + b"?db=free&x=\"", i))
    add("query-pipe", lambda i: req(b"POST", w + b"?db=free&x=|^`", i))
    add("query-non-ascii", lambda i: req(b"POST", w + b"?db=fr\xc3\xa9e", i))
    add("query-space", lambda i: req(b"POST", w + b"?db=free x", i))
    add("query-tab", lambda i: req(b"POST", w + b"?db=free\tx", i))
    add("path-brace", lambda i: req(b"POST", w + b"{?db=free", i))
    add("query-del", lambda i: req(b"POST", w + b"?db=free&x=\x7f", i))
    add("query-backslash", lambda i: req(b"POST", w + b"?db=free&x=\\", i))
    add("query-db-upper", lambda i: req(b"POST", w + b"?DB=t", i))
    add("query-db-space-key", lambda i: req(b"POST", w + b"?+db=t", i))
    add("long-db", lambda i: req(b"POST", w + b"?db=" + b"x" * 300, i))
    add("long-db-t", lambda i: req(b"POST", w + b"?db=" + b"x" * 300 + b"&db=t", i))
    # versions and heads hyper takes and Go does not
    add("http10", lambda i: req(b"POST", w + b"?db=t", i, version=b"HTTP/1.0"))
    add("http10-free", lambda i: req(b"POST", w + b"?db=free", i, version=b"HTTP/1.0"))
    add("no-host", lambda i: req(b"POST", w + b"?db=free", i, host=b""))
    add("two-hosts", lambda i: req(b"POST", w + b"?db=free", i,
                                   host=b"Host: a\r\nHost: b\r\n"))
    add("lead-crlf-first", lambda i: req(b"POST", w + b"?db=free", i, lead=b"\r\n"))
    add("lead-crlf-after-post",
        lambda i: req(b"POST", w + b"?db=free", i, lead=b"\r\n"),
        prefix=lambda i: b"POST " + w + b"?db=free HTTP/1.1\r\nHost: h\r\n"
                         b"Content-Length: 0\r\n\r\n")
    add("keepalive-second",
        lambda i: req(b"POST", w + b"?db=free", i),
        prefix=lambda i: b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
    # bodies: codings, and what the line-protocol parser refuses as a whole
    add("gzip", lambda i: req(b"POST", w + b"?db=free", i, payload=gzip_body(i),
                              headers=[b"Content-Encoding: gzip"]))
    add("deflate", lambda i: req(b"POST", w + b"?db=free", i, payload=deflate_body(i),
                                 headers=[b"Content-Encoding: deflate"]))
    add("identity-coding", lambda i: req(b"POST", w + b"?db=free", i,
                                         headers=[b"Content-Encoding: identity"]))
    add("comments-blanks", lambda i: req(b"POST", w + b"?db=free", i, payload=(
        b"# c\n\n  \t# c2\n" + body(i) + b"\n \n")))
    add("quoted-newline", lambda i: req(b"POST", w + b"?db=free", i, payload=(
        b'sv_%s s="a\nb"\n' % i.encode() + body(i))), over=True)
    add("crlf-lines", lambda i: req(b"POST", w + b"?db=free", i,
                                    payload=body(i).replace(b"\n", b"\r\n")), over=True)
    add("bad-line", lambda i: req(b"POST", w + b"?db=free", i,
                                  payload=body(i) + b"sv_%s\n" % i.encode()), over=True)
    add("bad-precision", lambda i: req(b"POST", w + b"?db=free&precision=x", i), over=True)
    add("precision-s", lambda i: req(b"POST", w + b"?db=free&precision=s", i))
    add("not-utf8", lambda i: req(b"POST", w + b"?db=free", i,
                                  payload=body(i) + b"sv_%s s=\"\xff\"\n" % i.encode()),
        over=True)
    return c


def framing_cases(w=GT_W):
    """Framing cases on write path `w` (hyper's or Go's reading of them):
    also sent split at every byte offset (--splits)."""
    c = []

    def add(name, fn):
        c.append((name, fn, None, False))

    add("frame-cl", lambda i: req(b"POST", w + b"?db=free", i))
    add("frame-chunked", lambda i: chunked(w + b"?db=free", body(i), sizes=[5, 20, 1000]))
    add("frame-chunked-t", lambda i: chunked(w + b"?db=t", body(i)))
    add("frame-chunk-ext", lambda i: chunked(w + b"?db=free", body(i), ext=b";a=b"))
    add("frame-chunk-upper", lambda i: chunked(w + b"?db=free", body(i)).replace(
        b"chunked", b"CHUNKED"))
    add("frame-chunk-blank-ext", lambda i: chunked(w + b"?db=free", body(i), ext=b" ;x"))
    add("frame-cl-te", lambda i: chunked(w + b"?db=free", body(i),
                                         headers=b"Content-Length: 5\r\n"))
    add("frame-te-gzip-chunked", lambda i: chunked(w + b"?db=free", body(i)).replace(
        b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip, chunked"))
    add("frame-dup-cl", lambda i: req(b"POST", w + b"?db=free", i,
                                      headers=[b"Content-Length: %d" % len(body(i))]))
    add("frame-cl-plus", lambda i: req(b"POST", w + b"?db=free", i).replace(
        b"Content-Length: ", b"Content-Length: +"))
    add("frame-expect", lambda i: req(b"POST", w + b"?db=free", i,
                                      headers=[b"Expect: 100-continue"]))
    add("frame-http10-te", lambda i: (b"POST " + w + b"?db=free HTTP/1.0\r\nHost: h\r\n"
                                      b"Transfer-Encoding: chunked\r\n\r\n"
                                      b"%x\r\n" % len(body(i)) + body(i) + b"\r\n0\r\n\r\n"))
    add("frame-cl-zeros", lambda i: req(b"POST", w + b"?db=free", i).replace(
        b"Content-Length: ", b"Content-Length: 000"))
    add("frame-chunk-zeros", lambda i: chunked(w + b"?db=free", body(i)).replace(
        b"\r\n\r\n%x\r\n" % len(body(i)), b"\r\n\r\n000%x\r\n" % len(body(i))))
    add("frame-chunk-hex-upper", lambda i: chunked(w + b"?db=free", body(i) + b"sv_%s v=1\n"
                                                   % i.encode()).replace(b"\r\n2f\r\n", b"\r\n2F\r\n"))
    add("frame-trailer", lambda i: chunked(w + b"?db=free", body(i)).replace(
        b"0\r\n\r\n", b"0\r\nX-T: y\r\n\r\n"))
    add("frame-te-dup", lambda i: chunked(w + b"?db=free", body(i),
                                          headers=b"Transfer-Encoding: chunked\r\n"))
    add("frame-te-identity", lambda i: req(b"POST", w + b"?db=free", i,
                                           headers=[b"Transfer-Encoding: identity"]))
    add("frame-pipelined", lambda i: req(b"POST", w + b"?db=free", i).replace(
        b"Connection: close\r\n", b"") + req(b"POST", w + b"?db=t", i))
    add("frame-pipelined-free", lambda i: req(b"POST", w + b"?db=free", i).replace(
        b"Connection: close\r\n", b"") + req(b"POST", w + b"?db=free", i))
    add("frame-bare-lf", lambda i: req(b"POST", w + b"?db=free", i).replace(b"\r\n", b"\n"))
    return c


GT_PATHS = [GT_W, GT_W, GT_V2, GT_V2, b"/" + GT_W, GT_W + b"/", b"/v1/influxdb/wr%69te",
            b"http://h" + GT_W, b"/write", b"/v1/influxdb//write"]
GT_METHODS = [b"POST", b"POST", b"POST", b"GET", b"PUT", b"post", b"X"]
GT_QUERIES = [b"db=t", b"db=free", b"d%62=t", b"db=%74", b"db=t&db=free", b"db=free&db=t",
              b"db=&db=t", b"bucket=t", b"bucket=free&db=t", b"db=&bucket=t", b"",
              b"db=greptime-t", b"db=greptime-free", b"db=t;x", b"a=1&db=t", b"db"]
GT_HEADERS = [[], [], [b"X-Greptime-DB-Name: t"], [b"X-Greptime-DB-Name: free"],
              [b"X-Greptime-DB-Name: greptime-t"], [b"X-Greptime-DB-Name: "]]


def greptime_generated(n, seed):
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        m, p, q = rnd.choice(GT_METHODS), rnd.choice(GT_PATHS), rnd.choice(GT_QUERIES)
        h = rnd.choice(GT_HEADERS)
        target = p + (b"?" + q if q else b"")
        name = "gen%d:%s %s%s" % (k, m.decode(), target.decode(),
                                  " [" + h[0].decode() + "]" if h else "")
        out.append((name, (lambda m, t, h: lambda i: req(m, t, i, headers=h))(m, target, h),
                    None, False))
    return out


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


def send_case(port, data, prefix, split=None):
    """Sends the case on a connection of its own, in two writes at byte
    `split` if given; returns the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for p in ([prefix] if isinstance(prefix, bytes) else prefix or []):
            s.sendall(p)
            read_answer(s)
        requests = data.count(b" HTTP/1.1\r\n")
        if split:
            s.sendall(data[:split])
            time.sleep(0.002)  # two segments, not a wait for a condition
            data = data[split:]
        s.sendall(data)
        resp = read_answer(s)
        # pipelined: every answer is read before the close, which would
        # otherwise reset the connection under the last request
        try:
            while resp.count(b"HTTP/1.1 ") < requests:
                chunk = s.recv(65536)
                if not chunk:
                    break
                resp += chunk
        except (ConnectionResetError, socket.timeout):
            resp += b" (reset or timed out)"
        return resp
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


def stored_greptime(port):
    """rg-greptime's counts: {case id: {db: rows}}."""
    out = {}
    for db, per in json.loads(http_get("http://127.0.0.1:%d/stats" % port))["rows"].items():
        for m, n in per.items():
            if m.startswith("sv_"):
                out.setdefault(m[len("sv_"):], {})[db] = n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=("vm", "influxdb", "greptimedb"), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--generated", type=int, default=60)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--splits", action="store_true",
                    help="also send each framing case split at every offset "
                         "(vm: and each body-db-tag case)")
    ap.add_argument("--split-stride", type=int, default=1,
                    help="with --splits: every Nth offset only (default 1: all)")
    a = ap.parse_args()
    dbs = LIMITED[a.server]
    if a.server == "greptimedb":
        cases = greptime_cases() + framing_cases() + \
            greptime_generated(a.generated, a.seed)
    else:
        # InfluxDB answers 400 to a line with a duplicate or empty tag and
        # stores nothing; a 400 is never refunded (design.md#refunds)
        over = ("body-db-last-wins", "body-db-free-last", "body-db-empty-last") \
            if a.server == "influxdb" else ()
        cases = [c + (c[0] in over,)
                 for c in hand_cases() + generated_cases(a.generated, a.seed)]
        cases += framing_cases(b"/write")
    cases = [c + (None,) for c in cases]
    if a.splits:
        w = GT_W if a.server == "greptimedb" else b"/write"
        for name, fn, prefix, over in framing_cases(w):
            size = len(fn("c%d" % len(cases)))
            cases += [("%s@%d" % (name, k), fn, prefix, over, k)
                      for k in range(1, size, max(1, a.split_stride))]
    if a.splits and a.server == "vm":
        # a refusal decided in a later segment than the head: bytes that
        # passed keep their estimate (an overcharge, never an escape)
        for name, fn, prefix, over, _ in [c for c in cases if c[0].startswith("body-db-tag")]:
            size = len(fn("c%d" % len(cases)))
            cases += [("%s@%d" % (name, k), fn, prefix, True, k)
                      for k in range(1, size, max(1, a.split_stride))]
    results = []
    for n, (name, fn, prefix, over, split) in enumerate(cases):
        cid = "c%d" % n
        before = charged(a.ctl, a.socket, dbs)
        resp = send_case(a.port, fn(cid), prefix(cid) if prefix else None, split)
        after = charged(a.ctl, a.socket, dbs)
        delta = {db: after[db] - before[db] for db in dbs}
        results.append((cid, name, resp, delta, over))

    # the sentinel is written last: once it is visible, so is every case
    sentinel = "sentinel"
    write_path = GT_W if a.server == "greptimedb" else b"/write"
    send_case(a.port, req(b"POST", write_path + b"?db=free", sentinel), None)
    stored_of = {"vm": stored_vm, "influxdb": stored_influx,
                 "greptimedb": stored_greptime}[a.server]
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
    for cid, name, resp, delta, over in results:
        st = stored.get(cid, {})
        status = resp[:12].decode("latin-1") or "(no answer)"
        if by_rowgate(resp):
            ok = sum(st.values()) == 0 and (over or sum(delta.values()) == 0)
            verdict = "rejected by rowgate"
        elif over:
            # lines the server refuses are charged (docs/threat-model.md)
            ok = all(st.get(db, 0) <= delta[db] for db in dbs)
            verdict = "known overcharge"
        else:
            ok = all(st.get(db, 0) == delta[db] for db in dbs)
            verdict = "passed"
        # t is thousands of seconds in debt: no case may store a row there
        if st.get("t", 0):
            ok = False
            verdict += ", stored in t"
        if resp.count(b"HTTP/1.") > 1:  # pipelined: every answer's status
            status = "+".join(x[:3].decode("latin-1") for x in resp.split(b"HTTP/1.1 ")[1:])
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
