/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the series' selftests: a loopback TCP pair whose server end is
 * in a verdict-only sockmap (sockmap_verdict.bpf.c), selftests/bpf style. */
#ifndef KP_COMMON_H
#define KP_COMMON_H
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "sockmap_verdict.skel.h"

#define KP_SKIP 77 /* kselftest's skip; setup failures exit 2 */

static inline void __attribute__((noreturn, format(printf, 1, 2))) kp_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "setup: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	va_end(ap);
	exit(2);
}

static inline double kp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline const char *kp_kernel(void)
{
	static struct utsname u;

	uname(&u);
	return u.release;
}

/* Connected pair on 127.0.0.1: *cli (client), *srv (accepted). */
static inline void kp_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int one = 1, lfd;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (void *)&a, &al))
		kp_die("listen");
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	if (*cli < 0 || connect(*cli, (void *)&a, sizeof(a)))
		kp_die("connect");
	setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*srv = accept(lfd, NULL, NULL);
	if (*srv < 0)
		kp_die("accept");
	close(lfd);
}

/* Load the verdicts, attach `prog` to the sockmap, put srv in it. */
static inline struct sockmap_verdict *kp_sockmap(struct bpf_program *(*pick)(struct sockmap_verdict *),
					  int srv)
{
	struct sockmap_verdict *skel = sockmap_verdict__open_and_load();
	__u32 key = 0, val = srv;

	if (!skel)
		kp_die("load sockmap_verdict.bpf.o");
	if (bpf_prog_attach(bpf_program__fd(pick(skel)), bpf_map__fd(skel->maps.sock_map),
			    BPF_SK_SKB_STREAM_VERDICT, 0))
		kp_die("attach stream_verdict");
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.sock_map), &key, &val, BPF_ANY))
		kp_die("sockmap update");
	return skel;
}

static inline struct bpf_program *kp_drop(struct sockmap_verdict *s) { return s->progs.verdict_drop; }
static inline struct bpf_program *kp_pass(struct sockmap_verdict *s) { return s->progs.verdict_pass; }

#endif
