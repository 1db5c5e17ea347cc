# SPDX-License-Identifier: GPL-2.0
"""Prometheus remote-write bodies for the e2e tests: the protobuf fields of
prometheus.WriteRequest, written by hand so a test controls every byte
(NaN payloads, staleness markers, label order), and a snappy block."""
import struct


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fld(num, payload):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def label(k, v):
    return fld(1, fld(1, k.encode()) + fld(2, v.encode()))


def sample_bits(bits, ts):
    """A sample whose value is the 64-bit pattern bits (NaN, stale marker)."""
    return fld(2, b"\x09" + struct.pack("<Q", bits) + b"\x10" + varint(ts))


def sample(v, ts):
    return fld(2, b"\x09" + struct.pack("<d", v) + b"\x10" + varint(ts))


def snappy_literal(raw):
    """A valid snappy block of literals only (no compression)."""
    out = bytearray(varint(len(raw)))
    for i in range(0, len(raw), 60000):
        chunk = raw[i : i + 60000]
        n = len(chunk) - 1
        out += (bytes([61 << 2]) + struct.pack("<H", n)) if n >= 60 else bytes([n << 2])
        out += chunk
    return bytes(out)
