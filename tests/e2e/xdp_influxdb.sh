#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The UDP path end to end: a real InfluxDB 1.x with [[udp]] listeners runs in
# a network namespace reached over a veth pair from a second namespace; the
# XDP program sits on the receiving veth, sharing rowgated's pinned maps.
# Checks: (1) the points InfluxDB stores equal the rows XDP admitted, every
# datagram stored whole or not at all, dropped ones absent, over IPv4 and
# IPv6; (2) HTTP and UDP writes of one database charge one bucket: HTTP debt
# makes the next datagram drop.  Addresses are TEST-NET-1 (192.0.2.0/24) and
# documentation IPv6 (2001:db8::/64), only inside namespaces made here.
#
# rowgated runs in the server's network namespace (nsenter keeps the mounts,
# so its cgroup and bpffs stay visible) with --xdp-iface and --udp.
RG_PROFILE=influxdb # rowgate reads requests as InfluxDB 1.x does
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd influxd ip curl ss "$RG_PY"
rg_require_cmd nsenter
[ -x "$RG_ROWGATED" ] || rg_fail "build first (make)"

NS_SRV=rgx-srv-$$
NS_CLI=rgx-cli-$$
IF_SRV=rgxs$$
IF_CLI=rgxc$$
SRV4=192.0.2.2 CLI4=192.0.2.1
SRV6=2001:db8::2 CLI6=2001:db8::1
UDP_PORT=8089      # -> database udpdb
UDP_PORT_MIX=8090  # -> database mixed (also written over HTTP)
HTTP_PORT=8086
LIMIT=100          # rows/s of udpdb and of mixed

in_srv() { ip netns exec "$NS_SRV" "$@"; }
in_cli() { ip netns exec "$NS_CLI" "$@"; }

# ---- two namespaces and a veth pair between them ----
ip netns add "$NS_SRV" || rg_skip "cannot create network namespaces"
rg_on_exit "ip netns del '$NS_SRV'"
ip netns add "$NS_CLI" || rg_fail "ip netns add"
rg_on_exit "ip netns del '$NS_CLI'"
ip -n "$NS_SRV" link add "$IF_SRV" type veth peer name "$IF_CLI" netns "$NS_CLI" ||
	rg_skip "cannot create a veth pair"
ip -n "$NS_SRV" addr add "$SRV4/24" dev "$IF_SRV"
ip -n "$NS_CLI" addr add "$CLI4/24" dev "$IF_CLI"
ip -n "$NS_SRV" addr add "$SRV6/64" dev "$IF_SRV" nodad
ip -n "$NS_CLI" addr add "$CLI6/64" dev "$IF_CLI" nodad
for ns in "$NS_SRV" "$NS_CLI"; do ip -n "$ns" link set lo up; done
ip -n "$NS_SRV" link set "$IF_SRV" up
ip -n "$NS_CLI" link set "$IF_CLI" up
rg_wait_for 10 sh -c "ip -n '$NS_CLI' link show '$IF_CLI' | grep -q LOWER_UP" ||
	rg_fail "the veth pair did not come up"

# ---- InfluxDB in the server namespace, in a cgroup rowgated guards ----
rg_make_cgroup
RG_INFLUX_NETNS=$NS_SRV RG_INFLUX_MORE="[[udp]]
  enabled = true
  bind-address = \":$UDP_PORT\"
  database = \"udpdb\"
  batch-size = 1000
  batch-timeout = \"50ms\"
  read-buffer = 8388608
[[udp]]
  enabled = true
  bind-address = \":$UDP_PORT_MIX\"
  database = \"mixed\"
  batch-size = 1000
  batch-timeout = \"50ms\"" rg_start_influxd "$HTTP_PORT"
rg_wait_for 10 sh -c "ip netns exec '$NS_SRV' ss -Hlun 'sport = :$UDP_PORT' | grep -q ." ||
	rg_fail "influxd's UDP listener did not come up"

influx_query() { # DB QUERY -> JSON
	in_srv curl -sfG "http://127.0.0.1:$HTTP_PORT/query" --data-urlencode "db=$1" \
		--data-urlencode "q=$2"
}
# "dg count" lines: points stored per datagram tag of measurement m in DB.
influx_per_dg() {
	influx_query "$1" 'SELECT count(v) FROM m GROUP BY dg' | "$RG_PY" -c '
import json, sys
r = json.load(sys.stdin)["results"][0]
for s in r.get("series", []):
    print(s["tags"]["dg"], s["values"][0][1])'
}
influx_total() { influx_per_dg "$1" | awk '{ t += $2 } END { print t + 0 }'; }
# Wait until DB holds WANT points (UDP batches flush every 50 ms).
influx_total_wait() {
	local got deadline=$((SECONDS + 15))
	while :; do
		got=$(influx_total "$1")
		if [ "$got" = "$2" ] || [ $SECONDS -ge $deadline ]; then
			echo "$got"
			return 0
		fi
		sleep 0.2
	done
}
influx_query mixed 'CREATE DATABASE mixed' >/dev/null || rg_fail "create database mixed"

# ---- rowgated: HTTP on influxd's port, the UDP ports in XDP, one set of maps ----
rg_mount_bpffs
RG_PORT=$HTTP_PORT
RG_WRAP="nsenter --net=/var/run/netns/$NS_SRV" rg_start_rowgated \
	--xdp-iface "$IF_SRV" --udp "$UDP_PORT=udpdb" --udp "$UDP_PORT_MIX=mixed"
rg_ctl limit set udpdb "$LIMIT" >/dev/null || rg_fail "limit set udpdb"
rg_ctl limit set mixed "$LIMIT" >/dev/null || rg_fail "limit set mixed"
rg_log "$(grep -m1 -i 'xdp' "$RG_TMP/rowgated.log")"

udp_stat() { # DB FIELD
	rg_ctl --json stats "$1" |
		"$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['udp']['databases'][0]['$2'])"
}
xdp_global() { # FIELD
	rg_ctl --json stats |
		"$RG_PY" -c "import json,sys; print(json.load(sys.stdin)['udp']['global']['$1'])"
}
rcvbuf_errors() { in_srv awk '/^Udp:/ { n++; if (n == 2) print $6 }' /proc/net/snmp; }

# The sender: datagrams of 1..20 lines, each line a unique point tagged
# with its datagram; alternating IPv4 and IPv6; paced so InfluxDB's socket
# never overflows.  Prints "datagrams rows".
cat >"$RG_TMP/send.py" <<'EOF'
import random, socket, sys, time
v4, v6, port, count, first_dg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(first_dg)
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
# a datagram the device drops fails its sendto (ENOBUFS) instead of
# counting as sent
s4.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR (not in Python 3.11)
s6.setsockopt(socket.IPPROTO_IPV6, 25, 1)  # IPV6_RECVERR (not in Python 3.11)
base = 1_600_000_000_000_000_000
rows = 0
for i in range(first_dg, first_dg + count):
    n = rnd.randint(1, 20)
    lines = ["m,dg=%d v=%di %d" % (i, j, base + i * 1000 + j) for j in range(n)]
    if i % 7 == 3:
        lines.insert(0, "# a comment is not a row")
    body = ("\n".join(lines) + ("\n" if i % 2 else "")).encode()
    if i % 3 == 2:
        s6.sendto(body, (v6, port))
    else:
        s4.sendto(body, (v4, port))
    rows += n
    time.sleep(0.002)
print(count, rows)
EOF

# ---- (1) UDP only: stored == admitted, whole datagrams only ----
rcv0=$(rcvbuf_errors)
read -r sent_dg sent_rows < <(in_cli "$RG_PY" "$RG_TMP/send.py" "$SRV4" "$SRV6" "$UDP_PORT" 150 1000) ||
	rg_fail "sender failed"
# a datagram of comments only: 0 rows, passes uncharged
in_cli "$RG_PY" -c "import socket; socket.socket().close(); s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'# nothing\n\n', ('$SRV4', $UDP_PORT))"
adm_dg=$(udp_stat udpdb admitted_datagrams)
adm_rows=$(udp_stat udpdb admitted_rows)
drop_dg=$(udp_stat udpdb dropped_datagrams)
drop_rows=$(udp_stat udpdb dropped_rows)
empty_dg=$(udp_stat udpdb empty_datagrams)
rg_log "sent $sent_dg datagrams / $sent_rows rows; XDP admitted $adm_dg / $adm_rows, dropped $drop_dg / $drop_rows, empty $empty_dg"
rg_check "every datagram accounted ($adm_dg + $drop_dg == $sent_dg)" [ $((adm_dg + drop_dg)) -eq "$sent_dg" ]
rg_check "every row accounted ($adm_rows + $drop_rows == $sent_rows)" [ $((adm_rows + drop_rows)) -eq "$sent_rows" ]
rg_check "both outcomes happened" [ "$adm_dg" -gt 0 -a "$drop_dg" -gt 0 ]
rg_check "the comment-only datagram is empty, uncharged" [ "$empty_dg" -eq 1 ]
stored=$(influx_total_wait udpdb "$adm_rows")
rcv1=$(rcvbuf_errors)
rg_check "influxd's socket dropped nothing (RcvbufErrors $rcv0 -> $rcv1)" [ "$rcv0" = "$rcv1" ]
rg_log "InfluxDB stores $stored points"
rg_check "stored points ($stored) == admitted rows ($adm_rows)" [ "$stored" -eq "$adm_rows" ]
stored_dg=$(influx_per_dg udpdb | wc -l)
rg_check "stored datagrams ($stored_dg) == admitted datagrams ($adm_dg)" [ "$stored_dg" -eq "$adm_dg" ]
# whole or nothing: every stored datagram has all its lines
partial=$("$RG_PY" - "$RG_TMP" <<EOF
import random, subprocess, sys
rnd = random.Random(1000)
want = {str(i): rnd.randint(1, 20) for i in range(1000, 1150)}
got = dict(l.split() for l in """$(influx_per_dg udpdb)""".splitlines() if l.strip())
print(sum(1 for dg, n in got.items() if int(n) != want[dg]))
EOF
)
rg_check "no datagram stored in part ($partial)" [ "$partial" -eq 0 ]
k_adm=$(rg_stat udpdb admitted_rows)
k_rej=$(rg_stat udpdb rejected_rows)
rg_check "db_stats (shared with HTTP) admitted_rows $k_adm == $adm_rows" [ "$k_adm" -eq "$adm_rows" ]
rg_check "db_stats rejected_rows $k_rej == $drop_rows" [ "$k_rej" -eq "$drop_rows" ]

# ---- (2) one bucket for HTTP and UDP ----
sleep 1.2 # the mixed bucket is full (never used)
body=$("$RG_PY" -c "print('\n'.join('m,dg=http v=%di %d' % (j, 1600000000000000000 + j) for j in range(300)))")
code=$(in_cli curl -s -o /dev/null -w '%{http_code}' --data-binary "$body" \
	"http://$SRV4:$HTTP_PORT/write?db=mixed")
rg_check "HTTP write of 300 rows on a full bucket of $LIMIT admitted ($code)" [ "$code" = 204 ]
in_cli "$RG_PY" -c "
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'm,dg=udp v=1i 1600000000000000001\nm,dg=udp v=2i 1600000000000000002\n', ('$SRV4', $UDP_PORT_MIX))"
sleep 0.3
rg_check "the datagram after the HTTP debt was dropped" [ "$(udp_stat mixed dropped_datagrams)" -eq 1 ]
rg_check "... with its 2 rows" [ "$(udp_stat mixed dropped_rows)" -eq 2 ]
mixed=$(influx_total_wait mixed 300)
rg_check "mixed stores the 300 HTTP points only ($mixed)" [ "$mixed" -eq 300 ]
rg_check "mixed admitted_rows (HTTP) == 300" [ "$(rg_stat mixed admitted_rows)" -eq 300 ]
rg_check "mixed rejected_rows (UDP) == 2" [ "$(rg_stat mixed rejected_rows)" -eq 2 ]

# ---- (3) restarts under load: the port map is never empty ----
# rowgated restarted three times while datagrams flood udpdb (in debt: XDP
# drops nearly all): the pinned link and port map stay, and a restart
# rewrites the map in place, so every datagram is accounted.  A map emptied
# and refilled would pass those of that moment uncounted and unlimited.
# Host only: the flood and three verifier walks take minutes under TCG,
# and the map's update is the same on every kernel.
if [ "${VMTEST:-0}" = 1 ]; then
	rg_log "xdp global: malformed $(xdp_global malformed), fragments $(xdp_global fragments), passed $(xdp_global passed)"
	rg_pass
fi
dg0=$(($(udp_stat udpdb admitted_datagrams) + $(udp_stat udpdb dropped_datagrams)))
# the client veth's TX drops (its peer's XDP ring full): logged, since
# the sender no longer counts them as sent
tx_dropped() { ip -n "$NS_CLI" -s -j link show dev "$IF_CLI" | "$RG_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["dropped"])'; }
txd0=$(tx_dropped)
cat >"$RG_TMP/flood.py" <<'EOF'
import errno, os, socket, sys
addr, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# Without IP_RECVERR, Linux reports a datagram the device dropped (the
# veth's XDP ring full while rowgated's restart holds the CPU) as sent.
s.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR (not in Python 3.11)
n = full = 0
while not os.path.exists(stop):
    for _ in range(1000):
        try:
            s.sendto(b"m,dg=flood v=1i 1600000000000000000\n", (addr, port))
            n += 1
        except OSError as e:
            if e.errno != errno.ENOBUFS:
                raise
            full += 1
print(n, full)
EOF
in_cli "$RG_PY" "$RG_TMP/flood.py" "$SRV4" "$UDP_PORT" "$RG_TMP/stop-flood" >"$RG_TMP/flood.out" 2>&1 &
flood_pid=$!
rg_on_exit "touch '$RG_TMP/stop-flood'; wait $flood_pid"
for i in 1 2 3; do
	rg_stop_rowgated
	RG_WRAP="nsenter --net=/var/run/netns/$NS_SRV" rg_start_rowgated \
		--xdp-iface "$IF_SRV" --udp "$UDP_PORT=udpdb" --udp "$UDP_PORT_MIX=mixed"
done
touch "$RG_TMP/stop-flood"
wait $flood_pid || rg_fail "the flood failed: $(cat "$RG_TMP/flood.out")"
read -r flood ring_full <"$RG_TMP/flood.out"
dg=$(($(udp_stat udpdb admitted_datagrams) + $(udp_stat udpdb dropped_datagrams) - dg0))
rg_log "flood: $flood datagrams sent over 3 restarts ($ring_full refused by the device, veth TX drops $(($(tx_dropped) - txd0))), XDP accounted $dg"
rg_check "every datagram of the flood accounted across restarts ($dg == $flood)" [ "$dg" -eq "$flood" ]
rg_log "xdp global: malformed $(xdp_global malformed), fragments $(xdp_global fragments), passed $(xdp_global passed)"
rg_pass
