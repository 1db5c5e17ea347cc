#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# XDP path benchmark (not a test).  Needs root and `make`.
#
#  1. ns per packet under BPF_PROG_TEST_RUN (repeat N): pass (other port),
#     admit and drop of 200 B / 1400 B line-protocol datagrams.
#  2. Over a veth pair between two namespaces made here (TEST-NET-1), the same
#     UDP flood of 10-row datagrams to a database over its limit, rejected
#     (a) by XDP on the receiving veth and (b) by a userspace receiver that
#     counts rows with the same SWAR code and the same bucket: rejections per
#     second, datagrams lost before userspace saw them, receiver CPU.
#
#   bench/xdp_bench.sh [SECONDS=5] [REPEAT=1000000]
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
SECS=${1:-5}
REPEAT=${2:-1000000}
ROWS=10
PORT=9000
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 1; }
for f in "$B/tests/bpf/test_xdp" "$B/tests/bpf/xdp_loader" "$B/bench/udp_load"; do
	[ -x "$f" ] || { echo "build first: $f missing (make)"; exit 1; }
done

TMP=$(mktemp -d /tmp/rowgate-xdpbench.XXXXXX)
NS_SRV=rgxb-srv-$$ NS_CLI=rgxb-cli-$$ IF_SRV=rgxbs$$ IF_CLI=rgxbc$$
BPFFS=$TMP/bpffs
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	umount "$BPFFS" 2>/dev/null
	ip netns del "$NS_SRV" 2>/dev/null
	ip netns del "$NS_CLI" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "== BPF_PROG_TEST_RUN, repeat $REPEAT ($(uname -r))"
"$B/tests/bpf/test_xdp" --bench "$REPEAT" || exit 1

ip netns add "$NS_SRV" && ip netns add "$NS_CLI" || exit 1
ip -n "$NS_SRV" link add "$IF_SRV" type veth peer name "$IF_CLI" netns "$NS_CLI" || exit 1
ip -n "$NS_SRV" addr add 192.0.2.2/24 dev "$IF_SRV"
ip -n "$NS_CLI" addr add 192.0.2.1/24 dev "$IF_CLI"
ip -n "$NS_SRV" link set "$IF_SRV" up
ip -n "$NS_CLI" link set "$IF_CLI" up
# no ARP in the measured path
ip -n "$NS_CLI" neigh add 192.0.2.2 lladdr "$(ip -n "$NS_SRV" -br link show "$IF_SRV" | awk '{ print $3 }')" dev "$IF_CLI"
mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" || exit 1

udp_drops() { ip netns exec "$NS_SRV" awk '/^Udp:/ { n++; if (n == 2) print $6 }' /proc/net/snmp; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# busy jiffies of the whole machine (sender, softirq, receiver: everything)
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)

# run_flood LABEL: receiver already started as $recv_pid; prints figures
run_flood() {
	local d0 c0 b0 out sent
	d0=$(udp_drops)
	c0=$(cpu_ticks "$recv_pid")
	b0=$(busy_ticks)
	out=$(ip netns exec "$NS_CLI" "$B/bench/udp_load" send 192.0.2.2 "$PORT" "$SECS" "$ROWS")
	sent=$(awk '{ print $2 }' <<<"$out")
	flood_busy=$(( $(busy_ticks) - b0 ))
	sleep 0.3
	flood_cpu=$(( $(cpu_ticks "$recv_pid") - c0 ))
	flood_sockdrops=$(( $(udp_drops) - d0 ))
	flood_sent=$sent
}

echo
echo "== veth flood: $SECS s of ${ROWS}-row datagrams to a database limited to 1 row/s"
# (a) XDP drops
ip netns exec "$NS_SRV" "$B/tests/bpf/xdp_loader" --bpffs "$BPFFS" --iface "$IF_SRV" \
	--udp "$PORT=bench" >"$TMP/loader.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready' "$TMP/loader.log" && break; sleep 0.1; done
grep -q '^ready' "$TMP/loader.log" || { cat "$TMP/loader.log"; exit 1; }
mode=$(awk '/^ready/ { print $2 }' "$TMP/loader.log")
"$B/tests/bpf/xdp_loader" --bpffs "$BPFFS" --limit bench=1 || exit 1
ip netns exec "$NS_SRV" "$B/bench/udp_load" recv "$PORT" $((SECS + 3)) 1 >"$TMP/recv_xdp.log" &
recv_pid=$!
pids+=($recv_pid)
sleep 0.5
dropped0=$("$B/tests/bpf/xdp_loader" --bpffs "$BPFFS" --stats bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["udp"]["databases"][0]["dropped_datagrams"])')
run_flood
dropped1=$("$B/tests/bpf/xdp_loader" --bpffs "$BPFFS" --stats bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["udp"]["databases"][0]["dropped_datagrams"])')
wait "$recv_pid"
xdp_sent=$flood_sent xdp_dropped=$((dropped1 - dropped0)) xdp_cpu=$flood_cpu xdp_sock=$flood_sockdrops
xdp_busy=$flood_busy
xdp_recv=$(cat "$TMP/recv_xdp.log" | tail -1)
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null; pids=()

# (b) userspace rejection, no XDP
ip netns exec "$NS_SRV" "$B/bench/udp_load" recv "$PORT" $((SECS + 3)) 1 >"$TMP/recv_user.log" &
recv_pid=$!
pids+=($recv_pid)
sleep 0.5
run_flood
wait "$recv_pid"
pids=()
user_line=$(tail -1 "$TMP/recv_user.log")
user_rej=$(awk '{ print $4 }' <<<"$user_line")

printf '\n%-34s %14s %14s\n' "" "XDP ($mode)" "userspace"
printf '%-34s %14d %14d\n' "datagrams sent" "$xdp_sent" "$flood_sent"
printf '%-34s %14d %14d\n' "rejected (XDP drop / app reject)" "$xdp_dropped" "$user_rej"
printf '%-34s %14d %14d\n' "rejections per second" $((xdp_dropped / SECS)) $((user_rej / SECS))
printf '%-34s %14d %14d\n' "lost in the socket (RcvbufErrors)" "$xdp_sock" "$flood_sockdrops"
printf '%-34s %13d%% %13d%%\n' "receiver process CPU" $((xdp_cpu * 100 / hz / SECS)) $((flood_cpu * 100 / hz / SECS))
printf '%-34s %14d %14d\n' "machine CPU ns per datagram sent" \
	$((xdp_busy * 1000000000 / hz / (xdp_sent ? xdp_sent : 1))) \
	$((flood_busy * 1000000000 / hz / (flood_sent ? flood_sent : 1)))
echo "(XDP run, receiver saw: $xdp_recv)"
echo "(userspace run, receiver saw: $user_line)"
