/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The XDP path's kernel <-> userspace ABI: map names, keys and values of the
 * UDP line-protocol enforcement (bpf/xdp.bpf.c, user/lib/xdp.c), pinned beside
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
	RG_UDP_STATS_FIELDS(RG_COUNTER_FIELD_)
};

/* xdp_stats: [0] -> host-wide XDP counters (per CPU: readers sum). */
struct rg_xdp_stats {
	RG_XDP_STATS_FIELDS(RG_COUNTER_FIELD_)
};

#endif /* ROWGATE_XDP_ABI_H */
