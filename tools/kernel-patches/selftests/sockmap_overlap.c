// SPDX-License-Identifier: GPL-2.0
/* Bug 1 of the series: tcp_read_skb() hands the verdict whole skbs, so the
 * bytes of a segment that starts before rcv_nxt are delivered twice.
 *
 * In a network namespace of its own (timestamps off, so a raw segment needs
 * no TS option): the server end of a loopback pair is in a sockmap whose
 * verdict passes every skb.  The client sends bytes [0, 1000) of a pattern
 * and the server reads them.  Then a raw segment is injected from the
 * client's address and port that starts 500 bytes before the client's
 * snd_nxt (read with TCP_REPAIR) and carries [500, 1500): the
 * retransmission of a sender that merged segments the receiver partly
 * holds.  TCP queues it whole ("partial packet").  The server must then
 * read exactly [1000, 1500); stock kernels give it [500, 1500).
 *
 *   sockmap_overlap              exit 0 pass, 1 fail, 2 setup error
 */
#include "common.h"
#include <fcntl.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <sched.h>
#include <sys/ioctl.h>

#define FIRST 1000
#define OLD 500
#define NEW 500

static unsigned char pat(unsigned int i) { return (i * 7 + i / 251) & 0xff; }

static void sysctl_w(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, val, strlen(val)) < 0)
		kp_die("%s", path);
	close(fd);
}

static void netns(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (unshare(CLONE_NEWNET))
		kp_die("unshare(CLONE_NEWNET)");
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		kp_die("SIOCGIFFLAGS");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr))
		kp_die("SIOCSIFFLAGS");
	close(fd);
	sysctl_w("/proc/sys/net/ipv4/tcp_timestamps", "0");
}

static __u32 queue_seq(int fd, int q)
{
	__u32 seq;
	socklen_t l = sizeof(seq);

	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &seq, &l))
		kp_die("TCP_QUEUE_SEQ");
	return seq;
}

static __u16 csum(const void *p, size_t n, __u32 sum)
{
	const __u8 *b = p;

	for (; n > 1; n -= 2, b += 2)
		sum += (b[0] << 8) | b[1];
	if (n)
		sum += b[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* One TCP segment cli -> srv: seq, ack, payload; checksummed. */
static void inject(int cli, __u32 seq, __u32 ack, const __u8 *data, size_t len)
{
	struct sockaddr_in ca, sa;
	socklen_t l = sizeof(ca);
	__u8 pkt[20 + 20 + 2000], ph[12 + 20 + 2000];
	struct iphdr *ip = (void *)pkt;
	struct tcphdr *th = (void *)(pkt + 20);
	int raw, one = 1;
	__u16 c;

	getsockname(cli, (void *)&ca, &l);
	l = sizeof(sa);
	getpeername(cli, (void *)&sa, &l);
	memset(pkt, 0, 40);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(40 + len);
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->saddr = ca.sin_addr.s_addr;
	ip->daddr = sa.sin_addr.s_addr;
	ip->check = htons(csum(ip, 20, 0));
	th->source = ca.sin_port;
	th->dest = sa.sin_port;
	th->seq = htonl(seq);
	th->ack_seq = htonl(ack);
	th->doff = 5;
	th->ack = 1;
	th->psh = 1;
	th->window = htons(1024);
	memcpy(pkt + 40, data, len);
	/* pseudo-header + TCP header + data */
	memcpy(ph, &ip->saddr, 8);
	ph[8] = 0;
	ph[9] = IPPROTO_TCP;
	ph[10] = (20 + len) >> 8;
	ph[11] = (20 + len) & 0xff;
	memcpy(ph + 12, th, 20 + len);
	c = csum(ph, 12 + 20 + len, 0);
	th->check = htons(c);
	raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (raw < 0 || setsockopt(raw, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)))
		kp_die("raw socket");
	if (sendto(raw, pkt, 40 + len, 0, (void *)&sa, sizeof(sa)) != (ssize_t)(40 + len))
		kp_die("inject");
	close(raw);
}

/* Read what arrives within `secs` of the last byte. */
static size_t drain(int fd, __u8 *buf, size_t cap, double secs)
{
	struct timeval tv = { .tv_sec = (long)secs, .tv_usec = (secs - (long)secs) * 1e6 };
	size_t got = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < cap && (n = recv(fd, buf + got, cap - got, 0)) > 0)
		got += n;
	return got;
}

int main(void)
{
	static __u8 data[FIRST + NEW], got[4 * (FIRST + NEW)];
	struct sockmap_verdict *skel;
	int cli, srv, on = 1, off = -1 /* TCP_REPAIR_OFF_NO_WP */;
	__u32 snd_nxt, rcv_nxt;
	size_t n, i, bad = 0;

	netns();
	for (i = 0; i < sizeof(data); i++)
		data[i] = pat(i);
	kp_pair(&cli, &srv);
	skel = kp_sockmap(kp_pass, srv);

	if (send(cli, data, FIRST, 0) != FIRST)
		kp_die("send");
	n = drain(srv, got, FIRST, 2.0);
	if (n != FIRST || memcmp(got, data, FIRST))
		kp_die("the first %d bytes came %zu", FIRST, n);
	usleep(50000); /* acked: nothing left in the client's write queue */

	if (setsockopt(cli, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)))
		kp_die("TCP_REPAIR");
	snd_nxt = queue_seq(cli, TCP_SEND_QUEUE);
	rcv_nxt = queue_seq(cli, TCP_RECV_QUEUE);
	setsockopt(cli, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off));

	inject(cli, snd_nxt - OLD, rcv_nxt, data + FIRST - OLD, OLD + NEW);
	n = drain(srv, got, sizeof(got), 1.0);

	for (i = 0; i < n && i < NEW; i++)
		bad += got[i] != data[FIRST + i];
	printf("kernel %s: verdict saw %llu skbs (%llu bytes); after a segment of %d bytes "
	       "starting %d before rcv_nxt, the server read %zu bytes (want %d), "
	       "%zu of the first %d differ from the stream\n",
	       kp_kernel(), (unsigned long long)skel->bss->skbs,
	       (unsigned long long)skel->bss->bytes, OLD + NEW, OLD, n, NEW, bad,
	       NEW);
	if (n == 0) {
		printf("SKIP: the injected segment never reached the server\n");
		return 2;
	}
	if (n != NEW || bad) {
		printf("FAIL: bytes before rcv_nxt delivered again (stream corrupt)\n");
		return 1;
	}
	printf("PASS: each byte delivered once\n");
	sockmap_verdict__destroy(skel);
	return 0;
}
