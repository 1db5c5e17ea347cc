#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, an aborted compressed body is charged what the server could
# store of it.  victoria-metrics inserts gzip line protocol as it decodes
# it, so a client that sends part of a gzip body and resets the connection
# has those lines stored.  The kernel charges such a body an estimate from
# its bytes (2 bytes a row for a coded body) and copies it to rowgated;
# before, a copy whose request never ended was dropped and that estimate
# stood, so a body denser than it stored more than it was charged.  Now the
# kernel tells rowgated when the connection closes inside a copied body,
# and rowgated charges what arrived as the server reads it (the kernel's
# rule for plain line protocol), counted in `aborted_copies`.
#   1. 20,000 lines, 60 % of the gzip body sent (cut anywhere): charged the
#      complete lines that arrived, or one more for the cut last line, and
#      the server stored no more than that (it stores a few lines either
#      side of the complete ones, as its reads fall).
#   2. 1,000 lines of 100 fields (100,000 samples to victoria-metrics),
#      the gzip body sent up to a flush point after line 600: charged
#      exactly 60,000, all stored, against an estimate of its bytes of a
#      few thousand.
#   2b. The same, chunked, cut inside a chunk's data: rowgated dechunks
#      what arrived (a Go server reads a begun chunk's data as it comes).
#   3. Writes reset before the server accepted their connection: the
#      reset is held until a verdict saw the data, so a write into a
#      database in debt is refused, one into a free database stored and
#      charged (before: stored, never charged).
RG_PROFILE=victoriametrics
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set abgz 1000000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set abdense 1000000000 >/dev/null || rg_fail "limit set"
rg_ctl limit set abchunk 1000000000 >/dev/null || rg_fail "limit set"

PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$RG_ROWGATECTL" "$RG_SOCK" "$RG_BPFFS" \
	>"$RG_TMP/client.out" 2>&1 <<'PY' ||
import gzip, json, subprocess, sys, time, zlib
from rgclient import Conn, lines, build_request
port, ctl = int(sys.argv[1]), sys.argv[2:5]

def charged(db):
    out = subprocess.run([ctl[0], "--socket", ctl[1], "--bpffs", ctl[2], "--json", "stats", db],
                         capture_output=True, check=True).stdout
    return json.loads(out)["databases"][0]["admitted_rows"]

def aborted(db, gz, sent, chunk=0):
    if chunk:  # one chunk of `chunk` bytes, then one the cut falls inside
        head = build_request("/write?db=" + db, b"", {"Content-Encoding": "gzip",
                             "Transfer-Encoding": "chunked", "Content-Length": None})
        c = Conn(port)
        c.send(head + b"%x\r\n" % chunk + gz[:chunk] + b"\r\n" +
               b"%x\r\n" % (len(gz) - chunk) + gz[chunk:sent])
    else:
        head = build_request("/write?db=" + db, gz, {"Content-Encoding": "gzip"})
        cut = len(head) - len(gz)
        c = Conn(port)
        c.send(head[:cut + sent])
    # the verdict has seen every byte once the server acknowledged it all
    # and accepted the connection (before accept no verdict runs, and a
    # reset then is closed_unseen, case 3): it charged the bytes' estimate
    c.wait_acked(also=lambda: charged(db))
    c.reset()  # the request never ends
    decoded = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(gz[:sent])
    return decoded

gz = gzip.compress(lines(20000, series="rg_abgz", tag="req=a"), 9)
decoded = aborted("abgz", gz, len(gz) * 60 // 100)
# the complete lines, and one more if the cut left a line begun
print("abgz", len(gz) * 60 // 100, decoded.count(b"\n"), int(not decoded.endswith(b"\n")))

t0 = int(time.time() * 1000) - 10000
fields = b",".join(b"f%d=1" % k for k in range(100))

def dense(db):
    """1,000 lines of 100 fields gzipped, and the length of the part that
    ends at a flush point after line 600 (it decodes to those lines)."""
    lp = [b"rg_%s %s %d\n" % (db.encode(), fields, t0 + i) for i in range(1000)]
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    gz = z.compress(b"".join(lp[:600])) + z.flush(zlib.Z_SYNC_FLUSH)
    sent = len(gz)
    return gz + z.compress(b"".join(lp[600:])) + z.flush(), sent, b"".join(lp[:600])

gz, sent, want = dense("abdense")
assert aborted("abdense", gz, sent) == want, "the flush point decodes to 600 whole lines"
print("abdense", sent, 600 * 100, 0)
# the same body chunked, cut inside its second chunk's data
gz, sent, want = dense("abchunk")
assert sent > 1000
assert aborted("abchunk", gz, sent, chunk=1000) == want
print("abchunk", sent, 600 * 100, 0)
PY
	rg_fail "client: $(tail -n 5 "$RG_TMP/client.out")"
rg_log "$(cat "$RG_TMP/client.out")"

aborted_copies() { rg_ctl --json stats | "$RG_PY" -c 'import json,sys; print(json.load(sys.stdin)["global"].get("aborted_copies", 0))'; }
copies_done() { [ "$(aborted_copies)" -ge 3 ]; }
rg_wait_for 20 copies_done ||
	rg_log "$(rg_ctl --json stats | "$RG_PY" -c 'import json,sys; g=json.load(sys.stdin)["global"]; print(" ".join("%s=%s" % (k, g[k]) for k in sorted(g) if "cop" in k or "orphan" in k or "ring" in k or "reconciled" in k))')"
rg_check "rowgated counted the three aborted copies (aborted_copies $(aborted_copies); charged abgz $(rg_stat abgz admitted_rows), abdense $(rg_stat abdense admitted_rows), abchunk $(rg_stat abchunk admitted_rows))" copies_done

while read -r db sent want partial; do
	charged=$(rg_stat "$db" admitted_rows)
	sel="{__name__=~\"rg_${db}_.*\"}"
	vm_near() { [ "$(rg_vm_rows "$sel")" -ge $((want - 10)) ]; }
	rg_wait_for 15 vm_near
	stored=$(rg_vm_rows "$sel")
	rg_log "$db: $sent gzip bytes arrived, $want rows in their complete lines (+$partial begun); charged $charged, victoria-metrics stored $stored"
	rg_check "$db: charged the rows that arrived ($want <= $charged <= $want + $partial)" \
		[ "$charged" -ge "$want" -a "$charged" -le $((want + partial)) ]
	rg_check "$db: the server stored no more than was charged ($stored <= $charged)" [ "$stored" -le "$charged" ]
	# it inserts as it decodes (a few lines either side of the cut, as its
	# reads and blocks fall)
	rg_check "$db: the server stored rows of it" [ "$stored" -gt 0 ]
	rg_check "$db: not counted as an admitted request" [ "$(rg_stat "$db" admitted_requests)" -eq 0 ]
	if [ "$db" != abgz ]; then
		rg_check "$db: the server stored more rows than the estimate of its bytes ($stored > $sent / 2)" \
			[ "$stored" -gt $((sent / 2)) ]
	fi
done <"$RG_TMP/client.out"

# 3. Writes reset before the server accepted their connection.  No
#    verdict runs before accept (docs/design.md#pre-accept-data) and a reset
#    then took the socket out of the sockhash, yet the server still read
#    the queued bytes: 100 rows stored into a database in debt, 0 charged.
#    Now the reset is held (rg_hold_reset, resets_held): the server accepts,
#    the verdict runs on the data at accept, the write into the database
#    in debt is refused and one into a free database is stored and charged.
rg_ctl limit set abpre 1 >/dev/null || rg_fail "limit set"
rg_ctl limit set abprefree 1000000000 >/dev/null || rg_fail "limit set"
code=$(printf 'rg_abpre_seed v=1\n%.0s' $(seq 1000) | curl -s -o /dev/null -w '%{http_code}' \
	--data-binary @- "http://127.0.0.1:$RG_PORT/write?db=abpre")
rg_check "abpre: a seed write leaves it in debt ($code, $(rg_stat abpre debt_rows) rows)" \
	[ "$code" = 204 -a "$(rg_stat abpre debt_rows)" -ge 900 ]
held0=$(rg_global resets_held) unseen0=$(rg_global closed_unseen)
kill -STOP "$VM_PID"
rg_on_exit "kill -CONT $VM_PID"
PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" <<'PY' || rg_fail "client (reset before accept) failed"
import sys
from rgclient import Conn, lines, build_request
for db in ("abpre", "abprefree"):
    c = Conn(int(sys.argv[1]))
    c.send(build_request("/write?db=" + db, lines(100, series="rg_" + db, tag="req=p")))
    c.wait_acked()
    c.reset()
PY
kill -CONT "$VM_PID"
stored_free=$(rg_vm_rows_wait '{__name__="rg_abprefree_v"}' 100)
stored_debt=$(rg_vm_rows '{__name__="rg_abpre_v"}')
rg_log "reset before accept: resets_held +$(($(rg_global resets_held) - held0)), closed_unseen +$(($(rg_global closed_unseen) - unseen0)); abpre: $(rg_stat abpre rejected_requests) rejected, stored $stored_debt; abprefree: charged $(rg_stat abprefree admitted_rows), stored $stored_free"
rg_check "both resets held" [ "$(rg_global resets_held)" -ge $((held0 + 2)) ]
rg_check "none closed unseen" [ "$(rg_global closed_unseen)" = "$unseen0" ]
rg_check "the write into the database in debt was refused, nothing stored" \
	[ "$(rg_stat abpre rejected_requests)" -ge 1 -a "$stored_debt" = 0 ]
rg_check "the write into the free database was stored and charged (100 = 100)" \
	[ "$stored_free" = 100 -a "$(rg_stat abprefree admitted_rows)" = 100 ]
rg_pass
