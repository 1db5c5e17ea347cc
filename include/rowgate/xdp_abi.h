/* The XDP path's kernel <-> userspace ABI: map names, keys and values of the
 * UDP line-protocol enforcement (bpf/xdp.bpf.c, user/xdp.c), pinned beside
 * the shared maps of abi.h.  Both sides include this file.
 */
#ifndef ROWGATE_XDP_ABI_H
#define ROWGATE_XDP_ABI_H

#include "types.h"
#include "abi.h"

/* Map names double as pin names under the bpffs directory. */
#define RG_MAP_UDP_PORTS udp_ports
#define RG_MAP_UDP_STATS udp_stats
#define RG_MAP_XDP_STATS xdp_stats

/* Pin name prefix of the XDP link, followed by the interface name. */
#define RG_PIN_LINK_XDP_PREFIX "link_xdp_"

#define RG_MAX_UDP_PORTS 64 /* UDP listeners (one database each) per host */

/* udp_ports: UDP destination port (host order) -> database it writes to. */
struct rg_udp_port_key {
	__u32 port;
};

/* udp_stats: database -> UDP counters since the map was created (per CPU:
 * readers sum the CPUs).  A datagram is a batch: it is admitted or dropped
 * whole.  The same datagrams also count as requests in db_stats. */
struct rg_udp_stats {
	__u64 admitted_datagrams;    /* passed, all rows charged */
	__u64 admitted_rows;
	__u64 dropped_datagrams;     /* no whole token: XDP_DROP */
	__u64 dropped_rows;
	__u64 unlimited_datagrams;   /* no limit (or 0): passed, rows not counted */
	__u64 empty_datagrams;       /* 0 rows (empty, blanks, comments): passed uncharged */
	__u64 unaccounted_datagrams; /* first IP fragments, oversize: passed uncharged */
};

/* xdp_stats: [0] -> host-wide XDP counters (per CPU: readers sum). */
struct rg_xdp_stats {
	__u64 packets;         /* frames the program ran on */
	__u64 passed;          /* not IPv4/IPv6 UDP to a mapped port: passed untouched */
	__u64 fragments;       /* UDP in IP fragments: cannot be counted, passed */
	__u64 malformed;       /* truncated headers, lengths beyond the whole frame */
	__u64 oversize;        /* mapped datagram not all in the linear part (multi-buffer)
				* or ending past RG_XDP_MAX_PKT_OFF: passed uncounted */
	__u64 ipv6_unparsed;   /* more IPv6 extension headers than RG_XDP_IPV6_EXT_MAX */
	__u64 udp6_zero_csum;  /* IPv6 UDP checksum 0: the stack drops it, passed uncharged */
	__u64 admitted;        /* datagrams admitted (all databases) */
	__u64 dropped;         /* datagrams dropped (all databases) */
};

#endif /* ROWGATE_XDP_ABI_H */
