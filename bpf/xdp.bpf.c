// SPDX-License-Identifier: GPL-2.0
/* rowgate UDP path: InfluxDB line protocol in UDP datagrams to a configured
 * port (one database per port) is counted line by line in XDP and the whole
 * datagram admitted or dropped against the database's shared bucket (the
 * same limits/buckets/db_stats as the HTTP verdict).  Whatever cannot be
 * counted exactly passes, counted.  Outcomes per case: docs/xdp.md.
 *
 * The program only: bpf/xdp.h owns its maps and steps.
 */
#include "base.h"
#include "admit.h"
#include "xdp.h"

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int rg_xdp(struct xdp_md *ctx)
{
	struct rg_udp_port_key pk = {};
	struct rg_reject_info info = {};
	struct rg_udp_stats *us = NULL;
	struct rg_xdp_stats *xs;
	struct rg_dgram d = {};
	struct rg_db_key db;
	struct rg_db_key *mapped;
	enum rg_admission adm;
	int action = XDP_PASS, r;
	__u32 zero = 0, plen;
	__u64 rows;

	xs = bpf_map_lookup_elem(&RG_MAP_XDP_STATS, &zero);
	rg_xdp_inc(xs, packets);
	r = rg_parse(ctx, &d);
	switch (r) {
	case RG_XP_UDP:
	case RG_XP_FIRST_FRAGMENT:
		break;
	case RG_XP_FRAGMENT:
		rg_xdp_inc(xs, fragments);
		goto out;
	case RG_XP_MALFORMED:
		rg_xdp_inc(xs, malformed);
		goto out;
	case RG_XP_IPV6_UNPARSED:
		rg_xdp_inc(xs, ipv6_unparsed);
		goto out;
	default:
		rg_xdp_inc(xs, passed);
		goto out;
	}
	pk.port = d.port;
	mapped = bpf_map_lookup_elem(&RG_MAP_UDP_PORTS, &pk);
	if (!mapped) {
		if (r == RG_XP_FIRST_FRAGMENT)
			rg_xdp_inc(xs, fragments);
		else
			rg_xdp_inc(xs, passed);
		goto out;
	}
	/* a stable key: the daemon may rewrite the mapping meanwhile */
	__builtin_memcpy(&db, mapped, sizeof(db));
	us = bpf_map_lookup_elem(&RG_MAP_UDP_STATS, &db);
	if (r == RG_XP_FIRST_FRAGMENT) {
		rg_xdp_inc(xs, fragments);
		rg_xdp_inc(us, unaccounted_datagrams);
		goto out;
	}
	if (d.beyond) {
		/* frags (multi-buffer) hold the rest, or the frame lies */
		if (bpf_xdp_get_buff_len(ctx) >= d.ip_end) {
			rg_xdp_inc(xs, oversize);
			rg_xdp_inc(us, unaccounted_datagrams);
		} else {
			rg_xdp_inc(xs, malformed);
		}
		goto out;
	}
	/* the stack drops what the UDP length contradicts: not a batch */
	if (d.udp_len < RG_UDP_HDR_BYTES || d.udp_len > d.ip_payload) {
		rg_xdp_inc(xs, malformed);
		goto out;
	}
	if (d.v6 && d.csum == 0) {
		rg_xdp_inc(xs, udp6_zero_csum);
		goto out;
	}
	if (d.udp_off + d.udp_len > RG_XDP_MAX_PKT_OFF) {
		rg_xdp_inc(xs, oversize);
		rg_xdp_inc(us, unaccounted_datagrams);
		goto out;
	}
	plen = d.udp_len - RG_UDP_HDR_BYTES;
	if (plen == 0) {
		rg_xdp_inc(us, empty_datagrams);
		goto out;
	}
	adm = rg_admit(&db, &info);
	rows = rg_count_rows(ctx, d.udp_off + RG_UDP_HDR_BYTES, plen);
	if (adm == RG_ADMIT_UNLIMITED) {
		/* counted, so its rate is known before a limit is set */
		if (rows)
			rg_unlimited_count(rg_unlimited_get(&db), rows, plen, false);
		rg_xdp_inc(us, unlimited_datagrams);
		goto out;
	}
	if (rows == 0) {
		rg_xdp_inc(us, empty_datagrams);
		goto out;
	}
	if (adm == RG_ADMIT_SHADOW) {
		/* passes uncharged, as an unlimited database's */
		rg_shadow_count(&db, rows);
		rg_xdp_inc(us, unlimited_datagrams);
		goto out;
	}
	if (adm == RG_ADMIT_YES) {
		rg_charge(&db, rows, 1, true);
		rg_xdp_inc(xs, admitted);
		if (us) {
			us->admitted_datagrams += 1;
			us->admitted_rows += rows;
		}
	} else {
		rg_account_reject(&db, rows, &info);
		rg_xdp_inc(xs, dropped);
		if (us) {
			us->dropped_datagrams += 1;
			us->dropped_rows += rows;
		}
		action = XDP_DROP;
	}
out:
	return action;
}
