#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Figure 4: BPF cost per request (bpf_stats), by outcome: passed without a
# route, classified but unlimited, admitted, rejected (keep-alive 429) and
# rejected tiny (429 with Connection: close).  Every program that runs for
# a request on the ingress path counts: the sockhash's entry with the
# verdict it tail-calls, and the per-connection programs (sockops,
# getpeername); the sk_msg program on the server's responses is reported
# apart, per response.
source "$(dirname "$0")/lib.sh"
RUNS=${FIG4_RUNS:-3}
raw=$BL_TMP/fig4
# the programs that run per connection, not per skb: sockops, and the
# accept-time drain, whose run time includes the verdict runs it triggers
CONN_PINS=(link_sockops)
DRAIN_PINS=(link_getpeername4 link_getpeername6)
# per packet the cgroup receives, ACKs included: the cgroup ingress
# programs that hold resets of connections no verdict has seen and, under
# --conns-full=fail-closed (the default), drop the data of connections the
# table does not hold
PKT_PINS=(link_resets link_refuse)
CASES=(
	"pass-get|GET /health (no body, no route)|path=/health method=GET"
	"pass-post|POST /api/v1/import/prometheus, 20 samples (no route)|path=/api/v1/import/prometheus lines=20 fmt=prom"
	"unlimited|POST /write?db=free, 20 lines (route, db without limit)|path=/write?db=free lines=20"
	"admit|POST /write?db=bench, 20 lines (admitted, rows counted)|path=/write?db=bench lines=20"
	"admit-shadow|POST /write?db=sbench, 20 lines (admitted under a shadow limit)|path=/write?db=sbench lines=20"
	"shadow-pass|POST /write?db=srej, 20 lines (a shadow limit would refuse: passed, counted)|path=/write?db=srej lines=20"
	"reject|POST /write?db=rej, 20 lines (kernel 429, keep-alive)|path=/write?db=rej lines=20"
	"reject-tiny|POST /write?db=rej, 1 line (kernel 429 + close)|path=/write?db=rej lines=1"
)
# FIG4_CASES="pass-get admit": only these cases (keys above)
if [ -n "${FIG4_CASES:-}" ]; then
	picked=()
	for c in "${CASES[@]}"; do
		[[ " $FIG4_CASES " == *" ${c%%|*} "* ]] && picked+=("$c")
	done
	[ ${#picked[@]} -gt 0 ] || bl_die "FIG4_CASES: no such case: $FIG4_CASES"
	CASES=("${picked[@]}")
fi

bl_setup
bl_bpf_stats_on
bl_rowgated_start
bl_ctl limit set bench 1000000000000 >/dev/null
bl_ctl limit set rej 1 >/dev/null
bl_ctl limit set sbench 1000000000000 --shadow >/dev/null
bl_ctl limit set srej 1 --shadow >/dev/null

for ((r = 1; r <= RUNS; r++)); do
	bl_log "round $r/$RUNS"
	for c in "${CASES[@]}"; do
		IFS='|' read -r key _ args <<<"$c"
		read -r t0 n0 < <(bl_verdict_stats)
		read -r ct0 cn0 < <(bl_prog_stats "${CONN_PINS[@]}")
		read -r dt0 dn0 < <(bl_prog_stats "${DRAIN_PINS[@]}")
		read -r et0 en0 < <(bl_prog_stats prog_egress)
		read -r pt0 pn0 < <(bl_prog_stats "${PKT_PINS[@]}")
		# shellcheck disable=SC2086
		bl_wrk "$raw.$key.wrk" -- $args statuses=1
		read -r t1 n1 < <(bl_verdict_stats)
		read -r ct1 cn1 < <(bl_prog_stats "${CONN_PINS[@]}")
		read -r dt1 dn1 < <(bl_prog_stats "${DRAIN_PINS[@]}")
		read -r et1 en1 < <(bl_prog_stats prog_egress)
		read -r pt1 pn1 < <(bl_prog_stats "${PKT_PINS[@]}")
		tail -n1 "$raw.$key.wrk" | tr -d '\n' >>"$raw.$key"
		echo " run_ns=$((t1 - t0)) calls=$((n1 - n0))" \
			"conn_ns=$((ct1 - ct0)) conn_calls=$((cn1 - cn0))" \
			"drain_ns=$((dt1 - dt0)) drain_calls=$((dn1 - dn0))" \
			"egress_ns=$((et1 - et0)) egress_calls=$((en1 - en0))" \
			"pkt_ns=$((pt1 - pt0)) pkt_calls=$((pn1 - pn0))" >>"$raw.$key"
	done
done
[ -n "${BENCH_RAW:-}" ] && cp "$raw".* "$BENCH_RAW/"

rows() {
	local c key what args ns calls per_req conn total drain eg pkt pkt_call st
	for c in "${CASES[@]}"; do
		IFS='|' read -r key what args <<<"$c"
		read -r ns calls per_req conn total drain eg pkt pkt_call < <(bl_agg "$raw.$key" \
			"run_ns/calls" "calls/requests" "run_ns/requests" "conn_ns/requests" \
			"(run_ns+conn_ns+pkt_ns)/requests" "drain_ns/requests" "egress_ns/requests" \
			"pkt_ns/requests" "pkt_ns/max(pkt_calls, 1)")
		st=$(bl_agg "$raw.$key" s204 s429 sother | awk '{ printf "%d×2xx %d×429 %d other", $1, $2, $3 }')
		printf '| %s | %s | %s | %s | %s | %s (%s a run) | **%s** | %s | %s | %s |\n' "$what" \
			"$(bl_fmt "$ns" .0f)" "$(bl_fmt "$calls" .2f)" "$(bl_fmt "$per_req" .0f)" \
			"$(bl_fmt "$conn" .0f)" "$(bl_fmt "$pkt" .0f)" "$(bl_fmt "$pkt_call" .0f)" \
			"$(bl_fmt "$total" .0f)" "$(bl_fmt "$drain" .0f)" "$(bl_fmt "$eg" .0f)" "$st"
	done
}

cat <<EOF
## 4. Per-request BPF cost

\`bpf_stats\` run time per request of the BPF programs that run for it
(\`wrk -t$BENCH_THREADS -c$BENCH_CONNS -d$BENCH_SECONDS\` on keep-alive connections;
$RUNS rounds, medians).  *Verdict* is the program attached to the
sockhash, the entry \`rg_entry\`, whose figures include the verdict it
tail-calls (a tail call never returns to it, and the verdict's own
\`bpf_stats\` stay 0); a call is one skb, and requests of ~1 KB arrive as
one skb each.  *Sockops* runs per connection: ~0 on keep-alive, once a
request for the tiny reject, which opens a connection per request.
*Cgroup ingress* is the two cgroup ingress programs, \`rg_hold_reset\`
(docs/design.md#pre-accept-data) and \`rg_refuse\` (attached under
\`--conns-full=fail-closed\`, the default; docs/design.md#full-table),
which run for every packet the server's cgroup receives (ACKs too).  The *ingress* total is the three.  *Drain* is the accept-time getpeername
program (docs/design.md#pre-accept-data), apart: its run time includes
the verdict runs it triggers for data that arrived before accept (the
tiny reject's request, counted in the verdict column too) and the
kernel's receive work under them.  *Egress* is the sk_msg program on the
server's responses (entry and \`rg_egress\`), one run per response,
apart too.  bpf_stats itself adds two clock reads a call.

| request | verdict ns per call | calls per request | verdict ns per request | sockops ns per request | cgroup ingress ns per request | ingress ns per request | drain ns per request | egress ns per response | statuses (median run) |
|---|---|---|---|---|---|---|---|---|---|
$(rows)

For scale (docs/design.md#bpf-cost, this VM kind): empty verdict ~90 ns, cookie + state
lookup ~230 ns, a minimal fast path ~0.7 µs, a full state machine ~1.4 µs.

EOF
cat <<'EOF2'
**What makes it worse.** Longer heads (runs of head bytes that read
alike, names, values nobody reads, Host's included, line ends, go a word
at a time; query names, the values rowgate reads and escapes one
callback step a byte); requests
split over several skbs (each call pays the cookie and state lookup
again, a split head is stashed and prepended); a rejection pads its response with spaces to the
size of the bytes it replaces (256-byte stores), so a larger rejected
request costs more to answer; the tiny reject closes the connection, and
the client's FIN runs the verdict a second time.  Egress: the server's
response head is walked one bpf_loop round per byte, except its reason
phrase, the values of headers that do not frame it and header names
eight tchars at a time; a kernel 429 is passed over whole (~0.1 µs).
(The 429 is written from literal pieces and sized by arithmetic,
`include/rowgate/response.h`: `bpf_snprintf`, which cost 2–3 µs a
rejection in perf, is gone.)

**Per connection.** Sockops costs ~22 µs per connection here (8
callbacks a connection; on keep-alive it is noise, for a client that
opens a connection per request it is most of the BPF cost).  Per
callback (`bpf_ktime_get_ns` around each op in a scratch build, the
tiny reject, ~63,000 connections): `PASSIVE_ESTABLISHED` ~12.6 µs (a
run that timed its steps: ~12.8 µs of its 14.4 the insert of the
~11.7 KB connection state, ~1.1 µs the sockhash insert); the state
change to CLOSE ~6.1 µs, nearly all the state's delete; the six others
(timeout, rwnd and ECN on the request socket; ESTABLISHED, CLOSE_WAIT,
LAST_ACK) 40–90 ns each; bpf_stats adds ~0.1 µs a callback.
Both are the BPF memory allocator of a map without preallocation, which
caches only 1–3 elements this large per CPU: nearly every connection
allocates from kmalloc and frees through irq_work and RCU (~2 IRQ-work
interrupts a connection, host-wide count).  The same map with 240-byte values costs
~0.9 µs to insert and ~0.8 µs to delete, with 4,000-byte values ~6 µs
and ~5 µs; preallocating would cost ~11.7 KB × `--max-conns` (~770 MB
at 65,536).  The cut this needs is a small per-connection element with
the buffers elsewhere, a change of the pinned `conns` map that open
connections live in across an upgrade (docs/design.md#bpf-cost).  At
close, HTTP/2 state is deleted only for connections that have one: a lookup instead of a
delete, ~0.2 µs by the split figures.  Interleaved against the commit
before it (8 rounds each of the tiny reject, `FIG4_CASES=reject-tiny
FIG4_RUNS=1`): sockops 21.4 µs a connection before (median; 19.6–26.9),
20.3 µs after (18.3–22.7), a difference inside the noise.

**Next improvement.** Request heads now go a word at a time (4e);
egress still walks most response head bytes one `bpf_loop` round each.
What remains of a request's verdict was not broken down there; the
head's per-byte calls are now ~12 (GET) to ~28 (admitted) a request.

EOF2
