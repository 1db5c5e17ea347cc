// SPDX-License-Identifier: MIT
/* UDP load for bench/xdp_bench.sh.
 *
 *   udp_load send HOST PORT SECONDS ROWS  blast datagrams of ROWS lines
 *                                          (sendmmsg), print "sent N"
 *   udp_load recv PORT SECONDS LIMIT      the userspace baseline: receive
 *                                          (recvmmsg), count rows with the
 *                                          same SWAR code as the kernel,
 *                                          admit/reject with the same bucket
 *                                          at LIMIT rows/s; print counts
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rowgate/bucket.h"
#include "rowgate/rows.h"

#define BATCH 64
#define DGRAM_MAX 2048

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * RG_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

static int do_send(const char *host, int port, double secs, int rows)
{
	static char buf[DGRAM_MAX];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((__u16)port) };
	struct mmsghdr msgs[BATCH];
	struct iovec iov;
	__u64 sent = 0, end;
	int fd, i, len = 0;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return 2;
	for (i = 0; i < rows && len < DGRAM_MAX - 40; i++)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "m,host=h%d v=%di\n", i, i);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	iov = (struct iovec){ buf, (size_t)len };
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	end = now_ns() + (__u64)(secs * 1e9);
	while (now_ns() < end) {
		int n = sendmmsg(fd, msgs, BATCH, 0);

		if (n > 0)
			sent += (__u64)n;
		else if (errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED)
			return 1;
	}
	printf("sent %llu bytes_each %d\n", (unsigned long long)sent, len);
	return 0;
}

static int do_recv(int port, double secs, __u64 limit)
{
	static char bufs[BATCH][DGRAM_MAX];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((__u16)port) };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct timeval rcv_timeout = { 0, 200000 }; /* recvmmsg's own timeout never fires while idle */
	struct rg_bucket b;
	__u64 admitted = 0, rejected = 0, rej_rows = 0, start, end;
	int fd, i, rcvbuf = 8 << 20;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_timeout, sizeof(rcv_timeout));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ bufs[i], DGRAM_MAX };
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	start = now_ns();
	rg_bucket_init(&b, limit, start);
	end = start + (__u64)(secs * 1e9);
	printf("ready\n");
	fflush(stdout);
	while (now_ns() < end) {
		int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);

		for (i = 0; i < n; i++) {
			struct rg_lp_state st;
			__u64 rows;

			rg_lp_init(&st);
			rows = rg_lp_count(&st, (const __u8 *)bufs[i], msgs[i].msg_len);
			if (rg_bucket_admit(&b, now_ns(), rows)) {
				admitted++;
			} else {
				rejected++;
				rej_rows += rows;
			}
		}
	}
	printf("admitted %llu rejected %llu rejected_rows %llu\n", (unsigned long long)admitted,
	       (unsigned long long)rejected, (unsigned long long)rej_rows);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]), atof(argv[3]), strtoull(argv[4], NULL, 10));
	fprintf(stderr, "usage: udp_load send HOST PORT SECONDS ROWS | recv PORT SECONDS LIMIT\n");
	return 2;
}
