#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write MIB mebibytes of InfluxDB line protocol (disk usage samples,
~100 bytes a line, one field, nanosecond timestamps) to FILE.

  gen_lines.py FILE MIB
"""
import sys

fname, mib = sys.argv[1], int(sys.argv[2])
want = mib << 20
out = []
size = i = 0
ts = 1700000000000000000
while size < want:
    line = ("disk,host=h%05d,region=eu-west-1,dc=dc%d,device=nvme%dn1 used_bytes=%di %d\n" %
            (i % 20000, i % 7, i % 4, 123456789 + i, ts + i * 1000000)).encode()
    out.append(line)
    size += len(line)
    i += 1
with open(fname, "wb") as f:
    f.write(b"".join(out))
