// SPDX-License-Identifier: MIT
/* The XDP program through BPF_PROG_TEST_RUN: loaded with fresh (unpinned)
 * maps, fed crafted frames from a fixture table (name, frame, expected
 * verdict, expected counters), then an admit-then-drop sequence against a
 * small limit, random payloads against the reference row counter, and the
 * HTTP object sharing the same limits/buckets/db_stats maps.
 *
 *   test_xdp            run the tests (needs root; exit 77 otherwise)
 *   test_xdp --bench N  ns per run (N repeats) for pass, admit and drop
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate/abi.h"
#include "rowgate/bucket.h"
#include "rowgate/rows.h"
#include "rowgate/xdp_abi.h"
#include "rowgate.skel.h"
#include "xdp.skel.h"
#include "../unit/check.h"
#include "maps_test.h"

#define PORT_LIM   8089 /* db "lim": a limit nothing in the table exhausts */
#define PORT_FREE  8090 /* db "free": no limit */
#define PORT_SMALL 8091 /* db "small": 10 rows/s */
#define PORT_OTHER 9999 /* not mapped */
#define LIM_LIMIT  1000000000ULL
#define SMALL_LIMIT 10ULL
#define FRAME_MAX  9000

static struct xdp *skel;
static int ncpu;

/* ---- frame builder ---- */

struct pkt {
	__u16 vlan;          /* 0, ETH_P_8021Q or ETH_P_8021AD */
	__u16 ethertype;     /* 0: IPv4 or IPv6 from v6 */
	int v6;
	int ip_opt_words;    /* IPv4 options, 4-byte words */
	int v6_hbh;          /* one 8-byte hop-by-hop header */
	int v6_exts;         /* that many 8-byte destination-options headers */
	int frag;            /* 1: first fragment (MF), 2: a later fragment */
	__u8 proto;          /* 0: UDP */
	__u16 dport;
	const char *payload; /* NUL-terminated unless plen is set */
	size_t plen;
	int udp_len_delta;   /* added to the true UDP length */
	int ip_len_delta;    /* added to the true IP length */
	int ip_trailer;      /* bytes inside the IP packet after the datagram */
	int eth_pad;         /* bytes after the IP packet (Ethernet padding) */
	int cut;             /* bytes cut from the end of the frame */
	int cut_to;          /* frame length, when set */
	int csum_zero;
};

static void put16(__u8 *p, __u16 v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

static size_t build(const struct pkt *o, __u8 *buf)
{
	size_t plen = o->payload ? (o->plen ? o->plen : strlen(o->payload)) : o->plen;
	size_t off = 0, l3, l4, iplen, hdrs;
	__u8 proto = o->proto ? o->proto : IPPROTO_UDP;
	int i;

	memset(buf, 0, FRAME_MAX);
	memset(buf, 0xaa, 12); /* MACs */
	off = 12;
	if (o->vlan) {
		put16(buf + off, o->vlan);
		put16(buf + off + 2, 42); /* TCI */
		off += 4;
	}
	put16(buf + off, o->ethertype ? o->ethertype : o->v6 ? ETH_P_IPV6 : ETH_P_IP);
	off += 2;
	l3 = off;
	if (o->ethertype && o->ethertype != ETH_P_IP && o->ethertype != ETH_P_IPV6) {
		memset(buf + off, 0x11, 28);
		return off + 28;
	}
	if (!o->v6) {
		struct iphdr *ip = (struct iphdr *)(buf + l3);

		hdrs = 20 + 4 * (size_t)o->ip_opt_words;
		ip->version = 4;
		ip->ihl = (__u8)(hdrs / 4);
		ip->ttl = 64;
		ip->protocol = proto;
		ip->saddr = htonl(0xc0000201);
		ip->daddr = htonl(0xc0000202);
		if (o->frag == 1)
			ip->frag_off = htons(0x2000);
		else if (o->frag == 2)
			ip->frag_off = htons(0x2000 | 185);
		for (i = 0; i < 4 * o->ip_opt_words; i++)
			buf[l3 + 20 + i] = 1; /* NOP options */
		l4 = l3 + hdrs;
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(buf + l3);
		__u8 *nhp = &ip6->nexthdr;
		size_t e = l3 + 40;

		ip6->version = 6;
		ip6->hop_limit = 64;
		ip6->saddr.s6_addr[0] = 0xfd;
		ip6->daddr.s6_addr[0] = 0xfd;
		ip6->daddr.s6_addr[15] = 2;
		if (o->v6_hbh) {
			*nhp = 0;
			nhp = &buf[e];
			buf[e + 1] = 0; /* 8 bytes */
			buf[e + 2] = 1; /* PadN */
			buf[e + 3] = 4;
			e += 8;
		}
		for (i = 0; i < o->v6_exts; i++) {
			*nhp = 60;
			nhp = &buf[e];
			buf[e + 2] = 1;
			buf[e + 3] = 4;
			e += 8;
		}
		if (o->frag) {
			*nhp = 44;
			nhp = &buf[e];
			put16(buf + e + 2, o->frag == 1 ? 0x0001 : (185 << 3) | 1);
			buf[e + 4] = 0x12; /* id */
			e += 8;
		}
		*nhp = proto;
		l4 = e;
		hdrs = e - l3;
	}
	/* the datagram */
	{
		struct udphdr *uh = (struct udphdr *)(buf + l4);
		size_t ulen = 8 + plen;

		uh->source = htons(40000);
		uh->dest = htons(o->dport);
		uh->len = htons((__u16)((int)ulen + o->udp_len_delta));
		uh->check = o->csum_zero ? 0 : htons(0xbeef);
		if (plen && o->payload)
			memcpy(buf + l4 + 8, o->payload, plen);
		else if (plen)
			memset(buf + l4 + 8, 'x', plen);
		iplen = hdrs + ulen + (size_t)o->ip_trailer;
		memset(buf + l4 + ulen, '\n', (size_t)o->ip_trailer); /* would be rows */
	}
	if (!o->v6)
		put16(buf + l3 + 2, (__u16)((int)iplen + o->ip_len_delta));
	else
		put16(buf + l3 + 4, (__u16)((int)(iplen - 40) + o->ip_len_delta));
	off = l3 + iplen;
	memset(buf + off, '\n', (size_t)o->eth_pad); /* would be rows */
	off += (size_t)o->eth_pad;
	if (o->cut_to)
		return (size_t)o->cut_to;
	return off - (size_t)o->cut;
}

/* ---- maps ---- */

static int set_limit(const char *name, __u64 limit)
{
	struct rg_db_key k = dbkey(name);
	struct rg_limit lim = { .limit_rows_per_s = limit };
	struct rg_bucket_value bv;
	struct rg_db_stats st;

	memset(&bv, 0, sizeof(bv));
	memset(&st, 0, sizeof(st));
	rg_bucket_init(&bv.b, limit, mono_ns());
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.buckets), &k, &bv, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.db_stats), &k, &st, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.limits), &k, &lim, BPF_ANY))
		return -errno;
	return 0;
}

static int map_port(__u16 port, const char *name)
{
	struct rg_udp_port_key pk = { .port = port };
	struct rg_db_key k = dbkey(name);
	struct rg_udp_stats *zero = calloc((size_t)ncpu, sizeof(*zero));
	int err = 0;

	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.udp_stats), &k, zero, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.udp_ports), &pk, &k, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

static void sum_percpu(int fd, const void *key, __u64 *out, size_t n)
{
	__u64 *vals = calloc((size_t)ncpu, n * sizeof(__u64));
	size_t f;
	int c;

	memset(out, 0, n * sizeof(__u64));
	if (vals && bpf_map_lookup_elem(fd, key, vals) == 0)
		for (c = 0; c < ncpu; c++)
			for (f = 0; f < n; f++)
				out[f] += vals[(size_t)c * n + f];
	free(vals);
}

static struct rg_xdp_stats xdp_stats(void)
{
	struct rg_xdp_stats s;
	__u32 zero = 0;

	sum_percpu(bpf_map__fd(skel->maps.xdp_stats), &zero, (__u64 *)&s, sizeof(s) / 8);
	return s;
}

static struct rg_udp_stats udp_stats(const char *name)
{
	struct rg_db_key k = dbkey(name);
	struct rg_udp_stats s;

	sum_percpu(bpf_map__fd(skel->maps.udp_stats), &k, (__u64 *)&s, sizeof(s) / 8);
	return s;
}

static struct rg_db_stats db_stats(const char *name)
{
	return db_stats_in(bpf_map__fd(skel->maps.db_stats), name);
}

static struct rg_bucket bucket(const char *name)
{
	return bucket_in(bpf_map__fd(skel->maps.buckets), name);
}

static int run(const __u8 *frame, size_t len, __u32 repeat, __u32 *retval, __u32 *duration)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (__u32)len,
		    .repeat = repeat);
	int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.rg_xdp), &opts);

	if (err)
		return -errno;
	*retval = opts.retval;
	if (duration)
		*duration = opts.duration;
	return 0;
}

/* ---- the fixture table ---- */

/* Counter deltas a fixture expects; fields not named must stay 0. */
struct expect {
	__u32 action;
	struct rg_xdp_stats g;   /* packets is implied (1) */
	struct rg_udp_stats u;   /* of the database the port maps to */
	const char *db;          /* NULL: no database touched */
	__u64 db_admitted_rows;  /* db_stats of db */
};

struct fixture {
	const char *name;
	struct pkt p;
	struct expect e;
};

#define PASS XDP_PASS
#define DROP XDP_DROP
#define LP3 "cpu,host=a v=1 1\ncpu,host=b v=2 2\ncpu,host=c v=3 3\n"

static const struct fixture fixtures[] = {
	{ "ipv4: 3 lines admitted", { .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv4 + 802.1Q", { .vlan = ETH_P_8021Q, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv4 + 802.1ad", { .vlan = ETH_P_8021AD, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv4 with options", { .ip_opt_words = 3, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv6", { .v6 = 1, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv6 + 802.1Q", { .v6 = 1, .vlan = ETH_P_8021Q, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv6 + hop-by-hop + 2 dstopts", { .v6 = 1, .v6_hbh = 1, .v6_exts = 2, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv6: 5 extension headers", { .v6 = 1, .v6_exts = 5, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.ipv6_unparsed = 1 } },
	{ "crlf, blanks, comments, no final newline",
	  { .dport = PORT_LIM, .payload = "# c\r\n  m v=1\r\n\r\n\t \n#x\nm v=2\r\n   m v=3" },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "1-byte payload", { .dport = PORT_LIM, .payload = "m" },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 1 }, "lim", 1 } },
	{ "ipv4 udp checksum 0 is fine", { .dport = PORT_LIM, .payload = LP3, .csum_zero = 1 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 3 }, "lim", 3 } },
	{ "ipv6 udp checksum 0: stack drops it", { .v6 = 1, .dport = PORT_LIM, .payload = LP3, .csum_zero = 1 },
	  { PASS, .g.udp6_zero_csum = 1 } },
	{ "ethernet padding is not payload", { .dport = PORT_LIM, .payload = "m v=1", .eth_pad = 9 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 1 }, "lim", 1 } },
	{ "ip bytes after the udp length are not payload", { .dport = PORT_LIM, .payload = "m v=1", .ip_trailer = 5 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 1 }, "lim", 1 } },
	{ "zero-length payload", { .dport = PORT_LIM },
	  { PASS, .u.empty_datagrams = 1, .db = "lim" } },
	{ "blanks and comments only: 0 rows", { .dport = PORT_LIM, .payload = "\n \r\n# nothing\n\t\n" },
	  { PASS, .u.empty_datagrams = 1, .db = "lim" } },
	{ "unlimited database", { .dport = PORT_FREE, .payload = LP3 },
	  { PASS, .u.unlimited_datagrams = 1, .db = "free" } },
	{ "other udp port", { .dport = PORT_OTHER, .payload = LP3 }, { PASS, .g.passed = 1 } },
	{ "tcp", { .proto = IPPROTO_TCP, .dport = PORT_LIM, .payload = LP3 }, { PASS, .g.passed = 1 } },
	{ "ipv6 tcp", { .v6 = 1, .proto = IPPROTO_TCP, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.passed = 1 } },
	{ "arp", { .ethertype = ETH_P_ARP }, { PASS, .g.passed = 1 } },
	{ "runt frame", { .ethertype = ETH_P_ARP, .cut_to = 10 }, { PASS, .g.passed = 1 } },
	{ "ipv4 first fragment", { .frag = 1, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.fragments = 1, .u.unaccounted_datagrams = 1, .db = "lim" } },
	{ "ipv4 later fragment", { .frag = 2, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.fragments = 1 } },
	{ "ipv4 first fragment, other port", { .frag = 1, .dport = PORT_OTHER, .payload = LP3 },
	  { PASS, .g.fragments = 1 } },
	{ "ipv6 first fragment", { .v6 = 1, .frag = 1, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.fragments = 1, .u.unaccounted_datagrams = 1, .db = "lim" } },
	{ "ipv6 later fragment", { .v6 = 1, .frag = 2, .dport = PORT_LIM, .payload = LP3 },
	  { PASS, .g.fragments = 1 } },
	{ "ipv4 header truncated", { .dport = PORT_LIM, .payload = LP3, .cut_to = 14 + 12 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv6 header truncated", { .v6 = 1, .dport = PORT_LIM, .payload = LP3, .cut_to = 14 + 30 },
	  { PASS, .g.malformed = 1 } },
	{ "udp header truncated", { .dport = PORT_LIM, .payload = LP3, .cut_to = 14 + 20 + 5 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv4 total length beyond the frame", { .dport = PORT_LIM, .payload = LP3, .ip_len_delta = 40 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv4 frame cut short", { .dport = PORT_LIM, .payload = LP3, .cut = 7 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv6 payload length beyond the frame", { .v6 = 1, .dport = PORT_LIM, .payload = LP3, .ip_len_delta = 8 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv4 total length below the headers", { .dport = PORT_LIM, .payload = LP3, .ip_len_delta = -(int)sizeof(LP3) - 20 },
	  { PASS, .g.malformed = 1 } },
	{ "udp length beyond the ip packet", { .dport = PORT_LIM, .payload = LP3, .udp_len_delta = 1 },
	  { PASS, .g.malformed = 1 } },
	{ "ipv6 udp length beyond the ip packet", { .v6 = 1, .dport = PORT_LIM, .payload = LP3, .udp_len_delta = 3 },
	  { PASS, .g.malformed = 1 } },
	{ "udp length below its header", { .dport = PORT_LIM, .payload = LP3, .udp_len_delta = -(int)sizeof(LP3) },
	  { PASS, .g.malformed = 1 } },
	{ "udp length lying short: counts what the stack delivers",
	  { .dport = PORT_LIM, .payload = LP3, .udp_len_delta = -17 },
	  { PASS, .g.admitted = 1, .u = { .admitted_datagrams = 1, .admitted_rows = 2 }, "lim", 2 } },
	{ "multi-buffer frame (5000 bytes)", { .dport = PORT_LIM, .plen = 5000 - 42 },
	  { PASS, .g.oversize = 1, .u.unaccounted_datagrams = 1, .db = "lim" } },
};

static void check_fixture(const struct fixture *f)
{
	static __u8 frame[FRAME_MAX];
	const struct expect *e = &f->e;
	struct rg_xdp_stats g0 = xdp_stats(), g1, gw = e->g;
	const char *dbs[] = { "lim", "free" };
	struct rg_udp_stats u0[2], u1;
	struct rg_db_stats d0 = {}, d1;
	size_t len = build(&f->p, frame);
	__u32 ret = ~0U;
	int i, err;

	for (i = 0; i < 2; i++)
		u0[i] = udp_stats(dbs[i]);
	if (e->db)
		d0 = db_stats(e->db);
	err = run(frame, len, 1, &ret, NULL);
	CHECK(err == 0, "%s: test run failed: %s", f->name, strerror(-err));
	CHECK(ret == e->action, "%s: verdict %u, want %u", f->name, ret, e->action);
	g1 = xdp_stats();
	gw.packets = 1;
	{
		const __u64 *a = (const __u64 *)&g0, *b = (const __u64 *)&g1,
			    *w = (const __u64 *)&gw;
		size_t k;

		for (k = 0; k < sizeof(g0) / 8; k++)
			CHECK(b[k] - a[k] == w[k], "%s: xdp_stats field %zu moved by %llu, want %llu",
			      f->name, k, (unsigned long long)(b[k] - a[k]),
			      (unsigned long long)w[k]);
	}
	for (i = 0; i < 2; i++) {
		const struct rg_udp_stats zero = {};
		const struct rg_udp_stats *want =
			e->db && !strcmp(e->db, dbs[i]) ? &e->u : &zero;
		const __u64 *a = (const __u64 *)&u0[i], *b, *w = (const __u64 *)want;
		size_t k;

		u1 = udp_stats(dbs[i]);
		b = (const __u64 *)&u1;
		for (k = 0; k < sizeof(u1) / 8; k++)
			CHECK(b[k] - a[k] == w[k], "%s: udp_stats[%s] field %zu moved by %llu, want %llu",
			      f->name, dbs[i], k, (unsigned long long)(b[k] - a[k]),
			      (unsigned long long)w[k]);
	}
	if (e->db) {
		d1 = db_stats(e->db);
		CHECK_EQ_U64(d1.admitted_rows - d0.admitted_rows, e->db_admitted_rows, f->name);
		CHECK_EQ_U64(d1.rejected_rows - d0.rejected_rows, 0, f->name);
	}
}

/* ---- sequences ---- */

static __u32 send_lines(__u16 port, int v6, int lines)
{
	static __u8 frame[FRAME_MAX];
	static char payload[2048];
	struct pkt p = { .v6 = v6, .dport = port, .payload = payload };
	__u32 ret = ~0U;
	int i, n = 0;

	for (i = 0; i < lines; i++)
		n += snprintf(payload + n, sizeof(payload) - (size_t)n, "m,i=%d v=1\n", i);
	if (run(frame, build(&p, frame), 1, &ret, NULL))
		return ~0U;
	return ret;
}

/* A database without a limit: its datagrams pass and are counted in the
 * unlimited map, rows exactly, the way a limit would have charged them. */
static void test_unlimited_counted(void)
{
	struct rg_db_key k = dbkey("free");
	struct rg_unlimited_stats u0 = {}, u1 = {};
	int fd = bpf_map__fd(skel->maps.unlimited);

	bpf_map_lookup_elem(fd, &k, &u0);
	CHECK(send_lines(PORT_FREE, 0, 7) == XDP_PASS, "7 rows to an unlimited database pass");
	CHECK(send_lines(PORT_FREE, 1, 5) == XDP_PASS, "5 more (ipv6) pass");
	CHECK(bpf_map_lookup_elem(fd, &k, &u1) == 0, "free is in the unlimited map");
	CHECK_EQ_U64(u1.requests - u0.requests, 2, "unlimited requests");
	CHECK_EQ_U64(u1.rows - u0.rows, 12, "unlimited rows");
	CHECK_EQ_U64(u1.estimated_requests - u0.estimated_requests, 0, "none estimated");
	CHECK(u1.body_bytes - u0.body_bytes > 0, "unlimited body bytes counted");
	CHECK_EQ_U64(db_stats("free").admitted_rows, 0, "nothing charged to free");
}

/* quota 10 rows/s, full bucket: a 25-row datagram is admitted (15 rows of
 * debt), the next one dropped whole, and stays out of db_stats' admitted. */
static void test_admit_then_drop(void)
{
	struct rg_db_stats s;
	struct rg_udp_stats u;
	struct rg_bucket b;

	CHECK(set_limit("small", SMALL_LIMIT) == 0, "set small limit");
	CHECK(send_lines(PORT_SMALL, 0, 25) == XDP_PASS, "25 rows on a full bucket of 10 pass");
	CHECK(send_lines(PORT_SMALL, 1, 1) == XDP_DROP, "then 1 row (ipv6) is dropped");
	CHECK(send_lines(PORT_SMALL, 0, 4) == XDP_DROP, "and 4 more rows are dropped");
	s = db_stats("small");
	u = udp_stats("small");
	b = bucket("small");
	CHECK_EQ_U64(s.admitted_requests, 1, "small admitted requests");
	CHECK_EQ_U64(s.admitted_rows, 25, "small admitted rows");
	CHECK_EQ_U64(s.rejected_requests, 2, "small rejected requests");
	CHECK_EQ_U64(s.rejected_rows, 5, "small rejected rows");
	CHECK_EQ_U64(u.admitted_datagrams, 1, "udp admitted datagrams");
	CHECK_EQ_U64(u.admitted_rows, 25, "udp admitted rows");
	CHECK_EQ_U64(u.dropped_datagrams, 2, "udp dropped datagrams");
	CHECK_EQ_U64(u.dropped_rows, 5, "udp dropped rows");
	/* 15 rows of debt, minus what a few ms refill at 10 rows/s */
	CHECK(b.tokens == 0 && b.debt_rows >= 14 && b.debt_rows <= 15,
	      "bucket after the batch: tokens %llu debt %llu, want 0 / 15",
	      (unsigned long long)b.tokens, (unsigned long long)b.debt_rows);
	CHECK_EQ_U64(s.debt_rows, 15, "db_stats debt snapshot at the charge");
}

/* Random payloads: the kernel's count equals the byte-by-byte reference. */
static void test_random_payloads(void)
{
	static const char alphabet[] = "ab  \t\r\n\n#=,";
	static __u8 frame[FRAME_MAX];
	static char payload[1500];
	unsigned int seed = 12345;
	int iter, bad = 0;

	CHECK(set_limit("lim", LIM_LIMIT) == 0, "refill lim");
	for (iter = 0; iter < 400; iter++) {
		size_t len = 1 + (size_t)(rand_r(&seed) % (iter < 64 ? 24 : 1472)), i;
		struct pkt p = { .v6 = iter & 1, .vlan = iter & 2 ? ETH_P_8021Q : 0,
				 .dport = PORT_LIM, .payload = payload, .plen = len };
		struct rg_lp_state st;
		struct rg_db_stats d0 = db_stats("lim"), d1;
		__u64 want = 0;
		__u32 ret;

		for (i = 0; i < len; i++)
			payload[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		rg_lp_init(&st);
		for (i = 0; i < len; i++)
			want += rg_lp_step(&st, (__u8)payload[i]);
		if (run(frame, build(&p, frame), 1, &ret, NULL) || ret != XDP_PASS) {
			bad++;
			continue;
		}
		d1 = db_stats("lim");
		if (d1.admitted_rows - d0.admitted_rows != want) {
			if (bad++ < 5)
				fprintf(stderr, "random payload %d (%zu bytes): counted %llu, want %llu\n",
					iter, len,
					(unsigned long long)(d1.admitted_rows - d0.admitted_rows),
					(unsigned long long)want);
		}
	}
	CHECK(bad == 0, "%d of 400 random payloads miscounted", bad);
}

/*
 * HTTP and UDP share one bucket: the HTTP object, loaded with its limits,
 * buckets, db_stats and global_stats reusing the XDP object's maps (as both
 * reuse rowgated's pins), sees the UDP charge, and debt the HTTP path leaves
 * in the bucket makes the next datagram drop.
 */
static void test_shared_bucket(void)
{
	struct rowgate *http = rowgate__open();
	struct bpf_map *map;
	struct bpf_map_info a = {}, b = {};
	__u32 la = sizeof(a), lb = sizeof(b);
	struct rg_db_key k = dbkey("shared");
	struct rg_bucket_value bv;
	struct rg_db_stats st;
	int err;

	CHECK(http != NULL, "open the HTTP object");
	if (!http)
		return;
	bpf_object__for_each_map(map, http->obj)
		bpf_map__set_pin_path(map, NULL); /* nothing pinned: private maps */
	err = bpf_map__reuse_fd(http->maps.limits, bpf_map__fd(skel->maps.limits));
	err = err ?: bpf_map__reuse_fd(http->maps.buckets, bpf_map__fd(skel->maps.buckets));
	err = err ?: bpf_map__reuse_fd(http->maps.db_stats, bpf_map__fd(skel->maps.db_stats));
	err = err ?: bpf_map__reuse_fd(http->maps.global_stats,
				       bpf_map__fd(skel->maps.global_stats));
	err = err ?: rowgate__load(http);
	CHECK(err == 0, "load the HTTP object on the XDP object's maps: %d", err);
	if (err)
		goto out;
	bpf_obj_get_info_by_fd(bpf_map__fd(http->maps.buckets), &a, &la);
	bpf_obj_get_info_by_fd(bpf_map__fd(skel->maps.buckets), &b, &lb);
	CHECK(a.id == b.id, "one buckets map: ids %u and %u", a.id, b.id);

	CHECK(set_limit("shared", 100) == 0, "set shared limit");
	CHECK(map_port(8092, "shared") == 0, "map 8092");
	CHECK(send_lines(8092, 0, 30) == XDP_PASS, "30 UDP rows pass");
	memset(&bv, 0, sizeof(bv));
	bpf_map_lookup_elem_flags(bpf_map__fd(http->maps.buckets), &k, &bv, BPF_F_LOCK);
	CHECK(bv.b.tokens >= 70 && bv.b.tokens <= 71 && bv.b.debt_rows == 0,
	      "the HTTP object's view: tokens %llu (want 70) debt %llu",
	      (unsigned long long)bv.b.tokens, (unsigned long long)bv.b.debt_rows);
	/* an HTTP batch of 500 rows as rg_charge leaves it: 430 rows of debt */
	rg_bucket_refill(&bv.b, mono_ns());
	rg_bucket_charge(&bv.b, 500);
	CHECK(bpf_map_update_elem(bpf_map__fd(http->maps.buckets), &k, &bv, BPF_F_LOCK) == 0,
	      "charge through the HTTP object's map");
	CHECK(send_lines(8092, 0, 1) == XDP_DROP, "UDP now drops: the debt is shared");
	memset(&st, 0, sizeof(st));
	bpf_map_lookup_elem(bpf_map__fd(http->maps.db_stats), &k, &st);
	CHECK_EQ_U64(st.admitted_rows, 30, "db_stats via the HTTP object: admitted rows");
	CHECK_EQ_U64(st.rejected_rows, 1, "db_stats via the HTTP object: rejected rows");
out:
	rowgate__destroy(http);
}

static int setup(void)
{
	struct bpf_map *map;
	int err;

	ncpu = libbpf_num_possible_cpus();
	skel = xdp__open();
	if (!skel) {
		fprintf(stderr, "cannot open the XDP object: %s\n", strerror(errno));
		return -1;
	}
	/* private maps: nothing pinned under the default /sys/fs/bpf */
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_pin_path(map, NULL);
	err = xdp__load(skel);
	if (err) {
		fprintf(stderr, "cannot load the XDP object: %s\n", strerror(-err));
		return -1;
	}
	err = set_limit("lim", LIM_LIMIT);
	err = err ?: map_port(PORT_LIM, "lim");
	err = err ?: map_port(PORT_FREE, "free");
	err = err ?: map_port(PORT_SMALL, "small");
	if (err) {
		fprintf(stderr, "cannot fill the maps: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

/* ns per run of three frames: other port (pass), admitted, dropped. */
static int bench(__u32 repeat)
{
	static __u8 frame[FRAME_MAX];
	static char payload[1400];
	struct {
		const char *name;
		__u16 port;
		size_t plen;
	} cases[] = {
		{ "pass (other port, 64 B)", PORT_OTHER, 22 },
		{ "admit (10 rows, 200 B)", PORT_LIM, 158 },
		{ "admit (70 rows, 1400 B)", PORT_LIM, 1358 },
		{ "drop (10 rows, 200 B)", PORT_SMALL, 158 },
		{ "drop (70 rows, 1400 B)", PORT_SMALL, 1358 },
	};
	size_t i, j;

	for (j = 0; j < sizeof(payload); j++)
		payload[j] = j % 20 == 19 ? '\n' : 'a' + (char)(j % 20);
	/* "small" in debt for the whole run: 10 rows/s, 10^9 rows owed */
	set_limit("small", SMALL_LIMIT);
	{
		struct rg_db_key k = dbkey("small");
		struct rg_bucket_value bv;

		memset(&bv, 0, sizeof(bv));
		rg_bucket_init(&bv.b, SMALL_LIMIT, mono_ns());
		rg_bucket_charge(&bv.b, 1000000000ULL);
		bpf_map_update_elem(bpf_map__fd(skel->maps.buckets), &k, &bv, BPF_ANY);
	}
	set_limit("lim", RG_U64_MAX / 2);
	printf("%-28s %10s %8s\n", "case", "ns/run", "verdict");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pkt p = { .dport = cases[i].port, .payload = payload, .plen = cases[i].plen };
		__u32 ret = 0, dur = 0;
		size_t len = build(&p, frame);

		if (run(frame, len, repeat, &ret, &dur)) {
			fprintf(stderr, "test run failed: %s\n", strerror(errno));
			return 1;
		}
		printf("%-28s %10u %8s\n", cases[i].name, dur,
		       ret == XDP_PASS ? "PASS" : ret == XDP_DROP ? "DROP" : "?");
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (geteuid() != 0) {
		printf("SKIP: needs root (BPF_PROG_TEST_RUN)\n");
		return 77;
	}
	if (setup())
		return 1;
	if (argc == 3 && !strcmp(argv[1], "--bench"))
		return bench((__u32)strtoul(argv[2], NULL, 10));
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		int before = check_failures;

		check_fixture(&fixtures[i]);
		printf("%s  %s\n", check_failures == before ? "ok  " : "FAIL", fixtures[i].name);
	}
	test_admit_then_drop();
	printf("%s  admit then drop\n", check_failures ? "?   " : "ok  ");
	test_unlimited_counted();
	printf("%s  unlimited counted\n", check_failures ? "?   " : "ok  ");
	test_random_payloads();
	printf("     random payloads\n");
	test_shared_bucket();
	printf("     shared bucket\n");
	xdp__destroy(skel);
	return check_report("test_xdp");
}
