/* SPDX-License-Identifier: GPL-2.0 */
/* The UDP path's steps (xdp.bpf.c): its maps, the Ethernet/IP/UDP header
 * parser that finds a whole datagram, and the line count over its payload
 * (rowgate/rows.h) a word at a time.  Outcomes per case: docs/xdp.md.
 */
#ifndef ROWGATE_BPF_XDP_H
#define ROWGATE_BPF_XDP_H

#include "base.h"
#include "net.h"
#include "rowgate/abi.h"
#include "rowgate/rows.h"
#include "rowgate/xdp_abi.h"

/* Verifier limit: a packet pointer with a variable offset is only usable
 * while offset + access size <= MAX_PACKET_OFF (0xffff); one word less. */
#ifndef RG_XDP_MAX_PKT_OFF
#define RG_XDP_MAX_PKT_OFF 0xfff0
#endif
/* Words counted per bpf_loop round: unrolled, so a 1,472-byte datagram takes
 * 23 rounds instead of 184 indirect calls. */
#ifndef RG_XDP_BLOCK_WORDS
#define RG_XDP_BLOCK_WORDS 8
#endif
/* IPv6 extension headers walked before the UDP header (unrolled). */
#ifndef RG_XDP_IPV6_EXT_MAX
#define RG_XDP_IPV6_EXT_MAX 4
#endif

#define RG_IP_MF        0x2000
#define RG_IP_OFFSET    0x1FFF
#define RG_IP6_HOPOPTS  0
#define RG_IP6_ROUTING  43
#define RG_IP6_FRAGMENT 44
#define RG_IP6_DSTOPTS  60
#define RG_IP6_FRAG_OFF_MASK 0xFFF8 /* fragment offset in 8-byte units << 3 */
#define RG_UDP_HDR_BYTES 8

/* udp_ports: UDP destination port (host order) -> database (daemon writes) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RG_MAX_UDP_PORTS);
	__type(key, struct rg_udp_port_key);
	__type(value, struct rg_db_key);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_UDP_PORTS SEC(".maps");

/* udp_stats: database -> UDP datagram counters, per CPU (daemon creates) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, RG_MAX_UDP_PORTS);
	__type(key, struct rg_db_key);
	__type(value, struct rg_udp_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_UDP_STATS SEC(".maps");

/* xdp_stats: [0] -> host-wide XDP counters, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rg_xdp_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RG_MAP_XDP_STATS SEC(".maps");

/* What the header parser found; its own range, never an XDP action. */
enum rg_xdp_parse {
	RG_XP_UDP = 100,      /* a whole UDP datagram: see struct rg_dgram */
	RG_XP_OTHER,          /* not IPv4/IPv6 UDP: pass */
	RG_XP_FRAGMENT,       /* UDP in a non-first IP fragment: port unknown */
	RG_XP_FIRST_FRAGMENT, /* first fragment: port known, length not */
	RG_XP_MALFORMED,      /* header truncated or inconsistent */
	RG_XP_IPV6_UNPARSED,  /* extension header chain too long */
};

/* Where a datagram lies, as offsets from the frame start. */
struct rg_dgram {
	__u32 udp_off;    /* UDP header */
	__u32 ip_payload; /* bytes the IP header grants the UDP header + payload */
	__u32 port;       /* destination, host order */
	__u32 udp_len;    /* UDP length field (header included) */
	__u32 ip_end;     /* where the IP length says the packet ends */
	__u16 csum;
	__u8 v6;
	__u8 beyond;      /* ip_end lies past data_end: a truncated frame or
			   * a multi-buffer one (the buffer length decides) */
};

/* bpf_loop state of the row count over payload words. */
struct rg_xdp_count {
	struct xdp_md *ctx;
	__u32 off;   /* payload start, from data */
	__u32 words; /* whole words in the payload */
	__u64 rows;
	struct rg_lp_state lp;
};

static __always_inline int rg_parse_udp_hdr(void *data, void *data_end, void *udp,
					    __u32 ip_payload, bool v6, struct rg_dgram *d)
{
	struct udphdr *uh = udp;

	if ((void *)(uh + 1) > data_end || ip_payload < RG_UDP_HDR_BYTES)
		return RG_XP_MALFORMED;
	d->udp_off = (__u32)(udp - data);
	d->ip_payload = ip_payload;
	d->port = bpf_ntohs(uh->dest);
	d->udp_len = bpf_ntohs(uh->len);
	d->csum = uh->check;
	d->v6 = v6;
	return RG_XP_UDP;
}

static __always_inline int rg_parse_ipv4(void *data, void *data_end, void *l3,
					 struct rg_dgram *d)
{
	struct iphdr *ip = l3;
	__u32 hl, tot, frag;
	int r;

	if ((void *)(ip + 1) > data_end)
		return RG_XP_MALFORMED;
	if (ip->version != 4 || ip->ihl < 5)
		return RG_XP_MALFORMED;
	hl = ip->ihl * 4;
	tot = bpf_ntohs(ip->tot_len);
	if (tot < hl)
		return RG_XP_MALFORMED;
	d->ip_end = (__u32)(l3 - data) + tot;
	d->beyond = l3 + tot > data_end;
	if (ip->protocol != RG_IPPROTO_UDP)
		return RG_XP_OTHER;
	frag = bpf_ntohs(ip->frag_off);
	if (frag & RG_IP_OFFSET)
		return RG_XP_FRAGMENT;
	r = rg_parse_udp_hdr(data, data_end, l3 + hl, tot - hl, false, d);
	if (r == RG_XP_UDP && (frag & RG_IP_MF))
		return RG_XP_FIRST_FRAGMENT;
	return r;
}

static __always_inline int rg_parse_ipv6(void *data, void *data_end, void *l3,
					 struct rg_dgram *d)
{
	struct ipv6hdr *ip6 = l3;
	__u32 plen, off = sizeof(*ip6), end;
	__u8 nh;
	bool first_frag = false;
	int i, r;

	if ((void *)(ip6 + 1) > data_end)
		return RG_XP_MALFORMED;
	if (ip6->version != 6)
		return RG_XP_MALFORMED;
	plen = bpf_ntohs(ip6->payload_len);
	/* 0 announces a jumbogram, which no Ethernet frame can carry */
	if (plen == 0)
		return RG_XP_MALFORMED;
	end = sizeof(*ip6) + plen;
	d->ip_end = (__u32)(l3 - data) + end;
	d->beyond = l3 + end > data_end;
	nh = ip6->nexthdr;
#pragma unroll
	for (i = 0; i < RG_XDP_IPV6_EXT_MAX; i++) {
		__u8 *h = l3 + off;

		if (nh == RG_IPPROTO_UDP)
			break;
		if (nh != RG_IP6_HOPOPTS && nh != RG_IP6_ROUTING && nh != RG_IP6_DSTOPTS &&
		    nh != RG_IP6_FRAGMENT)
			return RG_XP_OTHER;
		if ((void *)(h + 8) > data_end || off + 8 > end)
			return RG_XP_MALFORMED;
		if (nh == RG_IP6_FRAGMENT) {
			/* fragment header: next, reserved, offset|flags, id */
			__u16 fo = bpf_ntohs(*(__u16 *)(h + 2));

			if (h[0] != RG_IPPROTO_UDP)
				return RG_XP_OTHER;
			if (fo & RG_IP6_FRAG_OFF_MASK)
				return RG_XP_FRAGMENT;
			first_frag = true;
			nh = h[0];
			off += 8;
		} else {
			nh = h[0];
			off += ((__u32)h[1] + 1) * 8;
		}
	}
	if (nh != RG_IPPROTO_UDP)
		return RG_XP_IPV6_UNPARSED;
	if (off > end)
		return RG_XP_MALFORMED;
	r = rg_parse_udp_hdr(data, data_end, l3 + off, end - off, true, d);
	if (r == RG_XP_UDP && first_frag)
		return RG_XP_FIRST_FRAGMENT;
	return r;
}

/* Ethernet, at most one 802.1Q/802.1ad tag, then IPv4 or IPv6. */
static __always_inline int rg_parse(struct xdp_md *ctx, struct rg_dgram *d)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		return RG_XP_OTHER;
	proto = bpf_ntohs(eth->h_proto);
	if (proto == RG_ETH_P_8021Q || proto == RG_ETH_P_8021AD) {
		struct vlan_hdr *vh = l3;

		if ((void *)(vh + 1) > data_end)
			return RG_XP_OTHER;
		proto = bpf_ntohs(vh->h_vlan_encapsulated_proto);
		l3 = vh + 1;
	}
	if (proto == RG_ETH_P_IP)
		return rg_parse_ipv4(data, data_end, l3, d);
	if (proto == RG_ETH_P_IPV6)
		return rg_parse_ipv6(data, data_end, l3, d);
	return RG_XP_OTHER;
}

/* Count the rows of RG_XDP_BLOCK_WORDS whole payload words. */
static long rg_count_block(__u64 idx, void *arg)
{
	struct rg_xdp_count *c = arg;
	void *data = (void *)(long)c->ctx->data;
	void *data_end = (void *)(long)c->ctx->data_end;
	__u32 w0 = (__u32)idx * RG_XDP_BLOCK_WORDS;
	int k;

#pragma unroll
	for (k = 0; k < RG_XDP_BLOCK_WORDS; k++) {
		__u32 w = w0 + k, o;
		__u64 *p;

		if (w >= c->words)
			return 1;
		o = c->off + w * RG_LP_WORD_BYTES;
		if (o > RG_XDP_MAX_PKT_OFF)
			return 1;
		p = data + o;
		if ((void *)(p + 1) > data_end)
			return 1;
		c->rows += rg_lp_count_word(&c->lp, *p);
	}
	return 0;
}

/*
 * Rows in payload bytes [off, off + len): whole words in bpf_loop rounds,
 * then the last partial word read as the 8 bytes that end the payload (the
 * UDP header precedes it, so they exist) with the bytes already counted
 * masked out.  Caller guarantees off + len <= RG_XDP_MAX_PKT_OFF and that
 * the payload lies inside the frame.
 */
static __always_inline __u64 rg_count_rows(struct xdp_md *ctx, __u32 off, __u32 len)
{
	struct rg_xdp_count c = { .ctx = ctx, .off = off, .words = len / RG_LP_WORD_BYTES };
	__u32 tail = len % RG_LP_WORD_BYTES, o;
	void *data, *data_end;
	__u64 *p;

	rg_lp_init(&c.lp);
	if (c.words)
		bpf_loop((c.words + RG_XDP_BLOCK_WORDS - 1) / RG_XDP_BLOCK_WORDS, rg_count_block,
			 &c, 0);
	if (!tail)
		return c.rows;
	o = off + len - RG_LP_WORD_BYTES;
	if (o > RG_XDP_MAX_PKT_OFF)
		return c.rows;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	p = data + o;
	if ((void *)(p + 1) > data_end)
		return c.rows;
	return c.rows + rg_lp_count_span(&c.lp, *p, RG_LP_WORD_BYTES - tail, RG_LP_WORD_BYTES);
}

#define rg_xdp_inc(st, field)            \
	do {                             \
		if (st)                  \
			(st)->field += 1; \
	} while (0)

#endif /* ROWGATE_BPF_XDP_H */
