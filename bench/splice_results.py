#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Put re-run figures into an existing bench/RESULTS.md.

splice_results.py RESULTS FIG_MD RUN_LINE: FIG_MD starts with its
figure's heading ("## 7. ..."); the section of RESULTS with the same
number (up to the next "## " heading) is replaced by it and RUN_LINE, so
that `bench/run.sh 7` does not throw the other figures away.  A figure
not in RESULTS yet goes before the first section that is not a numbered
figure.  Prints the figures it replaced or added.
"""
import re
import sys

HEAD = re.compile(r"^## (\d+)\. ")


def sections(lines):
    """(start, end) of each "## " section, and the figure number or None."""
    starts = [i for i, l in enumerate(lines) if l.startswith("## ")]
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(lines)
        m = HEAD.match(lines[s])
        yield s, e, (m.group(1) if m else None)


def splice(results, fig, run_line):
    new = fig.rstrip("\n").split("\n")
    m = HEAD.match(new[0]) if new else None
    if not m:
        raise SystemExit("splice_results.py: a figure must start with '## N. ': %r" % new[:1])
    new += ["", run_line, ""]
    lines = results.split("\n")
    for s, e, n in sections(lines):
        if n == m.group(1):
            return "\n".join(lines[:s] + new + lines[e:]), "replaced"
    for s, _e, n in sections(lines):
        if n is None:
            return "\n".join(lines[:s] + new + lines[s:]), "added"
    return "\n".join(lines + [""] + new), "added"


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    path, fig_path, run_line = sys.argv[1:]
    with open(path) as f:
        results = f.read()
    with open(fig_path) as f:
        fig = f.read()
    out, how = splice(results, fig, run_line)
    with open(path, "w") as f:
        f.write(out)
    print("%s %s" % (how, fig.split("\n", 1)[0]))


if __name__ == "__main__":
    main()
