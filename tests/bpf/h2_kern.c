// SPDX-License-Identifier: MIT
/* h2_kern: run the h2 parser test verdict (h2_load.bpf.o) on real gRPC
 * connections and print what it parsed in the kernel.
 *
 * Usage: h2_kern OBJ UPSTREAM_PORT
 * Listens on an ephemeral 127.0.0.1 port (printed as "port N") and relays
 * each client connection to 127.0.0.1:UPSTREAM_PORT, one at a time.  The
 * client's bytes go client -> A -> B -> upstream, where B is a socket put in
 * the object's sockhash before A writes a byte: the verdict sees every byte
 * the client sent, cut into skbs by a real TCP path.  Answers go straight
 * back.  On SIGTERM or SIGINT it prints one line per parsed connection,
 * "conn messages=M rows=R err=E bytes=B", in connection order, then
 * "verdict runs=N run_ns=T" (BPF run-time statistics, enabled for this
 * process's lifetime), and exits 0.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "h2_load.h"

#define MAX_CONNS 64
#define RELAY_BYTES 65536

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		perror("h2_kern: listen");
		exit(1);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("h2_kern: connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Move what is readable from one fd to the other; 0 on EOF or error. */
static int pump(int from, int to)
{
	static char buf[RELAY_BYTES];
	ssize_t n = read(from, buf, sizeof(buf)), off = 0;

	if (n <= 0)
		return 0;
	while (off < n) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w <= 0)
			return 0;
		off += w;
	}
	return 1;
}

static uint64_t cookie_of(int fd)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);

	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len))
		return 0;
	return c;
}

/* One client connection, relayed until the upstream closes.  Returns the
 * cookie of B, which keys its parser state (0 if it never got there). */
static uint64_t relay(int cfd, int blisten, int bport, int socks_fd, uint32_t key, int upstream)
{
	int a = connect_to(bport), b = -1, u = -1;
	int c_open = 1, b_open = 1, u_open = 1;
	uint64_t cookie = 0, fd64;

	if (a < 0)
		goto out;
	b = accept(blisten, NULL, NULL);
	fd64 = (uint64_t)b; /* the map's value is 8 bytes */
	if (b < 0 || bpf_map_update_elem(socks_fd, &key, &fd64, BPF_ANY)) {
		fprintf(stderr, "h2_kern: sockhash insert: %s\n", strerror(errno));
		goto out;
	}
	cookie = cookie_of(b);
	u = connect_to(upstream);
	if (u < 0)
		goto out;
	while (!stop && u_open) {
		struct pollfd p[3] = {
			{ .fd = c_open ? cfd : -1, .events = POLLIN },
			{ .fd = b_open ? b : -1, .events = POLLIN },
			{ .fd = u, .events = POLLIN },
		};

		if (poll(p, 3, 100) < 0 && errno != EINTR)
			break;
		if (p[0].revents && !pump(cfd, a)) {
			c_open = 0;
			shutdown(a, SHUT_WR);
		}
		if (p[1].revents && !pump(b, u)) {
			b_open = 0;
			shutdown(u, SHUT_WR);
		}
		if (p[2].revents && !pump(u, cfd))
			u_open = 0;
	}
out:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	if (u >= 0)
		close(u);
	close(cfd);
	return cookie;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	int socks_fd, conns_fd, lfd, blisten, port, bport, upstream, n = 0, i;
	uint64_t cookies[MAX_CONNS];
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	int stats_fd;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OBJ UPSTREAM_PORT\n", argv[0]);
		return 2;
	}
	upstream = atoi(argv[2]);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "h2_kern: cannot load %s\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "h2_verdict");
	socks_fd = bpf_object__find_map_fd_by_name(obj, "h2_socks");
	conns_fd = bpf_object__find_map_fd_by_name(obj, "h2_conns");
	if (!prog || socks_fd < 0 || conns_fd < 0 ||
	    bpf_prog_attach(bpf_program__fd(prog), socks_fd, BPF_SK_SKB_VERDICT, 0)) {
		fprintf(stderr, "h2_kern: attach: %s\n", strerror(errno));
		return 1;
	}
	/* run-time statistics while this fd is open (off again at exit) */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_any(&port);
	blisten = listen_any(&bport);
	printf("port %d\n", port);
	fflush(stdout);
	while (!stop && n < MAX_CONNS) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int cfd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		cookies[n] = relay(cfd, blisten, bport, socks_fd, (uint32_t)n, upstream);
		n++;
	}
	for (i = 0; i < n; i++) {
		struct h2_state st;

		if (!cookies[i] || bpf_map_lookup_elem(conns_fd, &cookies[i], &st)) {
			printf("conn none\n");
			continue;
		}
		printf("conn messages=%llu rows=%llu err=%d bytes=%llu\n",
		       (unsigned long long)st.messages, (unsigned long long)st.rows, st.err,
		       (unsigned long long)st.bytes);
	}
	if (stats_fd >= 0 && !bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &info_len))
		printf("verdict runs=%llu run_ns=%llu\n", (unsigned long long)info.run_cnt,
		       (unsigned long long)info.run_time_ns);
	bpf_object__close(obj);
	return 0;
}
