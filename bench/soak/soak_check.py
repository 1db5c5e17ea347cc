#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Invariants of a soak run (bench/soak/soak.sh), from the clients' records,
the faults and limit changes the driver logged, and the server's export.

  soak_check.py --out DIR --export FILE --limit L [--stall-s S] [--window-s W]

DIR holds load-*.jsonl (soak_load.py), events.jsonl (the driver: one
[start_ns, end_ns, kind, value] per fault or limit change; kind "limit" with
value N, 0 = unset).  FILE is victoria-metrics' /api/v1/export of the
line-protocol series.  With --udp-sent (soak_udp.py's record), --udp-export
(the export of rg_soak_u_v) and --udp-stats (rowgate's XDP counters of the
database and the kernel's UDP drop counters of the server's namespace) the
datagrams are checked too.  Prints one JSON object of figures, and a line per
violated invariant on stderr; exit 1 if any.
"""
import argparse
import glob
import json
import os
import sys

NS = 10**9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--stall-s", type=float, default=5.0)
    ap.add_argument("--window-s", type=int, default=10)
    ap.add_argument("--settle-s", type=float, default=2.0,
                    help="windows starting this soon after a limit change are not checked")
    ap.add_argument("--error-margin-s", type=float, default=2.0)
    ap.add_argument("--udp-sent")
    ap.add_argument("--udp-export")
    ap.add_argument("--udp-stats")
    args = ap.parse_args()

    reqs = []
    for f in glob.glob(os.path.join(args.out, "load-*.jsonl")):
        with open(f) as fh:
            for line in fh:
                if line.strip():
                    reqs.append(json.loads(line))
    events = [json.loads(line) for line in open(os.path.join(args.out, "events.jsonl"))
              if line.strip()]
    stored = {}
    for line in open(args.export):
        if not line.strip():
            continue
        s = json.loads(line)
        rid = s["metric"].get("req", "")
        stored[rid] = stored.get(rid, 0) + len(s["values"])

    bad = []
    fig = {"requests": len(reqs), "by_protocol": {}, "faults": {}}
    for t0, t1, proto, status, rows, rid, err in reqs:
        p = fig["by_protocol"].setdefault(proto, {"requests": 0, "passed": 0, "stored": 0,
                                                  "rejected": 0, "rowgate_400": 0,
                                                  "no_answer": 0})
        p["requests"] += 1
        if status == 0:
            p["no_answer"] += 1
        elif status == 429:
            p["rejected"] += 1
        elif status == -400:
            p["rowgate_400"] += 1
        else:
            # reached the server (victoria-metrics 1.79 answers OTLP and
            # Loki with an error: admission consumed quota all the same)
            p["passed"] += 1
            p["stored"] += 200 <= status < 300
    refused = sum(p["rowgate_400"] for p in fig["by_protocol"].values())
    if refused:
        bad.append("%d well-formed requests refused by rowgate with 400" % refused)
    for e in events:
        if e[2] != "limit":
            fig["faults"][e[2]] = fig["faults"].get(e[2], 0) + 1
    fig["limit_changes"] = sum(1 for e in events if e[2] == "limit")

    # 1. line protocol: every admitted request stored exactly once, no
    # rejected one stored; one cut off by a fault stored whole or not at all
    lp = [r for r in reqs if r[2].startswith("lp")]
    twice = missing = leaked = partial = ambiguous_stored = 0
    for t0, t1, proto, status, rows, rid, err in lp:
        got = stored.get(rid, 0)
        if 200 <= status < 300:
            if got > rows:
                twice += 1
            elif got < rows:
                missing += 1
        elif status == 429:
            leaked += got > 0
        elif status == 0:
            if got not in (0, rows):
                partial += 1
            ambiguous_stored += got == rows
    fig["lp_admitted_rows"] = sum(r[4] for r in lp if 200 <= r[3] < 300)
    fig["lp_stored_rows"] = sum(stored.values())
    fig["lp_admitted_stored_twice"] = twice
    fig["lp_admitted_missing"] = missing
    fig["lp_rejected_stored"] = leaked
    fig["lp_unanswered_partly_stored"] = partial
    fig["lp_unanswered_stored_whole"] = ambiguous_stored
    known = {r[5] for r in lp}
    fig["stored_unknown_requests"] = sum(1 for k in stored if k not in known)
    for what, n in (("admitted requests stored more than once", twice),
                    ("admitted requests not stored (or partly)", missing),
                    ("rejected requests stored", leaked),
                    ("unanswered requests stored in part", partial),
                    ("stored requests nobody sent", fig["stored_unknown_requests"])):
        if n:
            bad.append("%d %s" % (n, what))

    # 2. no stall: every answer within the bound; errors only while the
    # guarded server was down
    lat = sorted(r[1] - r[0] for r in reqs if r[3])
    fig["answer_ms_p50"] = lat[len(lat) // 2] / 1e6 if lat else 0
    fig["answer_ms_p99"] = lat[len(lat) * 99 // 100] / 1e6 if lat else 0
    fig["answer_ms_max"] = lat[-1] / 1e6 if lat else 0
    if lat and lat[-1] > args.stall_s * NS:
        bad.append("an answer took %.1f s (bound %.1f s)" % (lat[-1] / NS, args.stall_s))
    down = [(e[0] - int(args.error_margin_s * NS), e[1] + int(args.error_margin_s * NS))
            for e in events if e[2] == "server-restart"]
    errs = [r for r in reqs if r[3] == 0]
    outside = [r for r in errs if not any(a <= r[0] <= b or a <= r[1] <= b for a, b in down)]
    fig["unanswered"] = len(errs)
    fig["unanswered_outside_server_restarts"] = len(outside)
    if outside:
        bad.append("%d requests unanswered outside server restarts, e.g. %s: %s" %
                   (len(outside), outside[0][5], outside[0][6]))
    stalls = [r for r in errs if "timed out" in r[6]]
    if stalls:
        bad.append("%d requests timed out (stalled connections)" % len(stalls))

    # 2b. UDP: XDP accounts for every datagram sent; every stored datagram
    # is whole and stored once; the admitted ones not stored are the ones
    # the kernel could lose while the server restarted (closed socket, no
    # port), at least the kernel's own drop counters
    udp_adm = []
    if args.udp_sent:
        sent = {}
        for line in open(args.udp_sent):
            if line.strip():
                t0, dg, rows, _base = json.loads(line)[:4]
                sent[dg] = (t0, rows)
        got = {}
        for line in open(args.udp_export):
            if line.strip():
                sr = json.loads(line)
                dg = int(sr["metric"].get("dg", -1))
                got[dg] = got.get(dg, 0) + len(sr["values"])
        st = json.load(open(args.udp_stats))
        x = st["xdp"]
        u = {"datagrams_sent": len(sent), "rows_sent": sum(r for _, r in sent.values())}
        for k in ("admitted_datagrams", "admitted_rows", "dropped_datagrams", "dropped_rows",
                  "unlimited_datagrams", "empty_datagrams", "unaccounted_datagrams"):
            u["xdp_" + k] = x.get(k, 0)
        passed = x.get("admitted_datagrams", 0) + x.get("unlimited_datagrams", 0)
        accounted = passed + sum(x.get(k, 0) for k in ("dropped_datagrams", "empty_datagrams",
                                                      "unaccounted_datagrams"))
        u["stored_datagrams"] = len(got)
        u["stored_rows"] = sum(got.values())
        u["stored_twice"] = sum(1 for dg, n in got.items() if dg in sent and n > sent[dg][1])
        u["stored_in_part"] = sum(1 for dg, n in got.items() if dg in sent and n < sent[dg][1])
        u["stored_unknown"] = sum(1 for dg in got if dg not in sent)
        u["passed_not_stored"] = passed - len(got)
        u["kernel_lost"] = st["kernel"].get("NoPorts", 0) + st["kernel"].get("InErrors", 0)
        u["kernel_counters"] = st["kernel"]
        restarts = [(e[0] - int(args.error_margin_s * NS), e[1] + int(args.error_margin_s * NS))
                    for e in events if e[2] == "server-restart"]
        u["sent_in_server_restarts_not_stored"] = sum(
            1 for dg, (t0, _) in sent.items()
            if dg not in got and any(a <= t0 <= b for a, b in restarts))
        fig["udp"] = u
        if accounted != len(sent):
            bad.append("XDP accounted for %d datagrams, %d were sent" % (accounted, len(sent)))
        for what, n in (("datagrams stored more than once", u["stored_twice"]),
                        ("datagrams stored in part", u["stored_in_part"]),
                        ("stored datagrams nobody sent", u["stored_unknown"])):
            if n:
                bad.append("%d %s" % (n, what))
        if u["passed_not_stored"] < 0:
            bad.append("%d more datagrams stored than XDP passed: dropped ones stored"
                       % -u["passed_not_stored"])
        elif u["passed_not_stored"] < u["kernel_lost"]:
            bad.append("%d passed datagrams not stored, but the kernel dropped %d"
                       % (u["passed_not_stored"], u["kernel_lost"]))
        elif u["passed_not_stored"] > u["sent_in_server_restarts_not_stored"]:
            bad.append("%d passed datagrams not stored, only %d unstored ones were sent "
                       "during server restarts" % (u["passed_not_stored"],
                                                   u["sent_in_server_restarts_not_stored"]))
        # the rate windows count a stored datagram at its send time
        udp_adm = [(sent[dg][0], n) for dg, n in got.items() if dg in sent]

    # 3. rate: rows passed to the server (answer time; a stored datagram at
    # its send time, one lost in a server restart not at all) in every W s window, sliding by
    # 1 s, whose limit was constant from settle_s before it to its end, are
    # at most W s of the limit plus the one second of capacity the bucket
    # may hold at the window's start plus one batch per writer in flight
    t_start = min(r[0] for r in reqs)
    t_end = max(r[1] for r in reqs)
    changes = sorted((e[1], e[3]) for e in events if e[2] == "limit")
    max_batch = max([r[4] for r in reqs] + [n for _, n in udp_adm])
    writers = len(glob.glob(os.path.join(args.out, "load-*.jsonl"))) + bool(args.udp_sent)

    def limit_at(t):
        v = args.limit
        for tc, val in changes:
            if tc <= t:
                v = val
        return v

    adm = sorted([(r[1], r[4]) for r in reqs if r[3] not in (0, 429, -400)] + udp_adm)
    w = args.window_s * NS
    worst = None
    checked = 0
    over = []
    i0 = i1 = 0
    acc = 0
    a = t_start
    while a + w <= t_end:
        lo = a - int(args.settle_s * NS)
        lim = limit_at(a)
        constant = all(not (lo <= tc <= a + w) for tc, _ in changes) and lim > 0
        while i1 < len(adm) and adm[i1][0] < a + w:
            acc += adm[i1][1]
            i1 += 1
        while i0 < len(adm) and adm[i0][0] < a:
            acc -= adm[i0][1]
            i0 += 1
        if constant:
            checked += 1
            allowed = lim * args.window_s + lim + max_batch * writers
            ratio = acc / (lim * args.window_s)
            if worst is None or ratio > worst["rate_over_limit"]:
                worst = {"start_s": round((a - t_start) / NS, 1), "rows": acc, "limit": lim,
                         "rate_over_limit": round(ratio, 4), "allowed_rows": allowed}
            if acc > allowed:
                over.append(round((a - t_start) / NS))
                bad.append("window at %.0f s: %d rows admitted, allowed %d (limit %d)" %
                           ((a - t_start) / NS, acc, allowed, lim))
        a += NS
    fig["windows_checked"] = checked
    fig["worst_window"] = worst
    fig["windows_over"] = len(over)
    fig["windows_over_start_s"] = over[:100]
    fig["duration_s"] = round((t_end - t_start) / NS, 1)
    if checked == 0:
        bad.append("no %d s window with a constant limit to check" % args.window_s)
    json.dump(fig, sys.stdout, indent=1)
    print()
    for b in bad[:20]:
        print("VIOLATION:", b, file=sys.stderr)
    if len(bad) > 20:
        print("... and %d more violations" % (len(bad) - 20), file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
