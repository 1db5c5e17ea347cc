// SPDX-License-Identifier: GPL-2.0
/*
 * copied_seq: reproduce the kernel's copied_seq write-back in
 * tcp_bpf_recvmsg_parser() (README.md).  Loads repro.bpf.c, attaches it to a
 * cgroup of its own, and runs a TCP server on 127.0.0.1 in two cases:
 *
 *   early:   the client sends before the server accept()s, so the verdict
 *            first runs inside the server's first recvmsg and its drop is
 *            undone by the write-back: the server spins on EAGAIN;
 *   control: the client sends after accept(): the verdict runs in softirq
 *            and its drop sticks: no wakeups.
 *
 * A tool, not a test: exits 0 whatever it finds, 2 if setup failed, and with
 * --check 1 if the control case spins (the tool itself is then broken).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/tcp.h>  /* glibc's tcp_info lacks tcpi_bytes_received */
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "repro.skel.h"

/* A server that is not spinning sees at most one wakeup per segment; the
 * spinning one sees ~10^5 a second.  Anything above this is a spin. */
#define RP_SPIN_WAKEUPS     100
/* How long the server's epoll loop runs per case. */
#define RP_DEFAULT_MS       2000
/* What the client sends: one small request, one segment on loopback. */
#define RP_DEFAULT_BYTES    1000
/* How long to wait for the sent bytes to reach the server socket. */
#define RP_ARRIVE_TIMEOUT_MS 1000
#define RP_POLL_STEP_US     1000
/* Without inet_diag: how long to let loopback deliver before accept(). */
#define RP_SETTLE_MS        100
#define RP_CGROUP_NAME      "rowgate-repro-copied_seq"

#define EXIT_SPIN   1  /* --check: the control case spun */
#define EXIT_SETUP  2  /* could not set up (not root, no cgroup v2, ...) */

struct rp_opts {
	unsigned int duration_ms;  /* epoll loop per case */
	unsigned int bytes;        /* payload the client sends */
	bool redirect;             /* verdict redirects instead of dropping */
	bool check;                /* exit 1 if the control case spins */
	int verbose;
};

static const struct rp_opts rp_defaults = {
	.duration_ms = RP_DEFAULT_MS,
	.bytes = RP_DEFAULT_BYTES,
};

/* What one case measured on the server socket. */
struct rp_result {
	long empty_wakeups;   /* epoll said readable, recv said EAGAIN */
	long data_wakeups;    /* recv returned bytes */
	long bytes_read;
	int siocinq;          /* after the loop; SIOCINQ (FIONREAD) */
	int rqueue_before;    /* rcv_nxt - copied_seq before the first recv */
	int rqueue_after;     /* rcv_nxt - copied_seq after the loop */
	__u64 bytes_received; /* tcpi_bytes_received: what TCP took in */
	long echoed;          /* what came back to the client (--redirect) */
	bool eof;
};

/* Everything that must be undone, in one place. */
struct rp_env {
	struct repro *skel;
	struct bpf_link *sockops_link;
	bool verdict_attached;
	char cgroup_root[256];     /* the cgroup2 mount */
	char cgroup_orig[512];     /* the cgroup we came from (cgroup.procs) */
	char cgroup_path[512];     /* the one we create */
	bool cgroup_made;
	bool cgroup_joined;
	int cgroup_fd;
	int lfd;
	struct sockaddr_in addr;   /* where the server listens */
};

static volatile sig_atomic_t rp_stop;
static int rp_verbose;

static void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void pr_warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "copied_seq: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && rp_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && rp_verbose < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void on_signal(int sig)
{
	(void)sig;
	rp_stop = 1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_file(const char *path, const char *text)
{
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The cgroup2 mount from /proc/self/mounts (/sys/fs/cgroup or, on hybrid
 * systems, /sys/fs/cgroup/unified). */
static int find_cgroup2(char *buf, size_t len)
{
	char dev[256], dir[256], type[64];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%255s %255s %63s %*[^\n]", dev, dir, type) == 3) {
		if (strcmp(type, "cgroup2") == 0) {
			err = snprintf(buf, len, "%s", dir) < (int)len ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	fclose(f);
	return err;
}

/* Our own cgroup2 path ("0::/path" in /proc/self/cgroup). */
static int find_own_cgroup(const char *root, char *buf, size_t len)
{
	char line[512];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			err = snprintf(buf, len, "%s%s/cgroup.procs", root,
				       line + 3) < (int)len ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	fclose(f);
	return err;
}

static int join_cgroup(const char *procs)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d\n", getpid());
	return write_file(procs, pid);
}

/*
 * rcv_nxt - copied_seq of one TCP socket, by an exact inet_diag lookup
 * (idiag_rqueue).  SIOCINQ cannot be used for this: with a verdict attached,
 * tcp_bpf_ioctl() (6.x) reports the psock queue instead.  Returns the value,
 * or negative errno.
 */
static int diag_rqueue(const struct sockaddr_in *local, const struct sockaddr_in *peer)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
		.nlh = {
			.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST,
		},
		.req = {
			.sdiag_family = AF_INET,
			.sdiag_protocol = IPPROTO_TCP,
			.idiag_states = ~0U,
			.id = {
				.idiag_sport = local->sin_port,
				.idiag_dport = peer->sin_port,
				.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
			},
		},
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} reply;
	struct inet_diag_msg *d;
	int fd, n, ret;

	msg.req.id.idiag_src[0] = local->sin_addr.s_addr;
	msg.req.id.idiag_dst[0] = peer->sin_addr.s_addr;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		ret = -errno;
		goto out;
	}
	n = recv(fd, &reply, sizeof(reply), 0);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	if (!NLMSG_OK(&reply.nlh, (unsigned int)n)) {
		ret = -EPROTO;
		goto out;
	}
	if (reply.nlh.nlmsg_type == NLMSG_ERROR) {
		ret = ((struct nlmsgerr *)NLMSG_DATA(&reply.nlh))->error;
		ret = ret ? ret : -ENOENT;
		goto out;
	}
	d = NLMSG_DATA(&reply.nlh);
	ret = (int)d->idiag_rqueue;
out:
	close(fd);
	return ret;
}

static __u64 tcp_bytes_received(int fd)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return 0;
	return ti.tcpi_bytes_received;
}

/* Wait until the server end has taken in `bytes` (rcv_nxt moved), up to
 * RP_ARRIVE_TIMEOUT_MS.  Before accept() only inet_diag can see it. */
static int wait_arrived(const struct sockaddr_in *srv, const struct sockaddr_in *cli,
			int sfd, unsigned int bytes)
{
	long long deadline = now_ms() + RP_ARRIVE_TIMEOUT_MS;

	int q;

	while (!rp_stop && now_ms() < deadline) {
		if (sfd >= 0 && tcp_bytes_received(sfd) >= bytes)
			return 0;
		if (sfd < 0) {
			q = diag_rqueue(srv, cli);
			if (q >= (int)bytes)
				return 0;
			if (q < 0 && q != -ENOENT) {
				/* no inet_diag (tcp_diag not loaded): loopback
				 * delivers within the send; give it time */
				usleep(RP_SETTLE_MS * 1000);
				return 0;
			}
		}
		usleep(RP_POLL_STEP_US);
	}
	return -ETIMEDOUT;
}

/* Is the accepted socket in the sockhash, i.e. will the verdict see it? */
static int in_sockhash(struct rp_env *env, int sfd)
{
	__u64 cookie, val;
	socklen_t len = sizeof(cookie);

	if (getsockopt(sfd, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0)
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(env->skel->maps.rp_socks), &cookie, &val))
		return -errno;
	return 0;
}

/* The server's event loop: level-triggered epoll + non-blocking recv. */
static int serve(int sfd, unsigned int duration_ms, struct rp_result *r)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = sfd };
	long long deadline = now_ms() + duration_ms;
	char buf[16384];
	int epfd, n, err = 0;
	ssize_t got;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev) < 0) {
		err = -errno;
		goto out;
	}
	while (!rp_stop && !r->eof) {
		long long left = deadline - now_ms();

		if (left <= 0)
			break;
		n = epoll_wait(epfd, &ev, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			continue;
		got = recv(sfd, buf, sizeof(buf), 0);
		if (got > 0) {
			r->data_wakeups++;
			r->bytes_read += got;
		} else if (got == 0) {
			r->eof = true;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			r->empty_wakeups++;
		} else if (errno != EINTR) {
			err = -errno;
			break;
		}
	}
out:
	close(epfd);
	return err;
}

/* Bytes waiting for the client: what a redirect sent back to it. */
static long drain(int cfd)
{
	char buf[16384];
	long total = 0;
	ssize_t got;

	while ((got = recv(cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		total += got;
	return total;
}

/* One connection: the client sends before (early) or after accept(). */
static int run_case(struct rp_env *env, const struct rp_opts *o, bool early,
		    struct rp_result *r)
{
	struct sockaddr_in cli;
	socklen_t len = sizeof(cli);
	int cfd = -1, sfd = -1, err;
	char *payload;

	memset(r, 0, sizeof(*r));
	payload = malloc(o->bytes);
	if (!payload)
		return -ENOMEM;
	memset(payload, 'x', o->bytes);

	cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&env->addr, sizeof(env->addr)) < 0 ||
	    getsockname(cfd, (struct sockaddr *)&cli, &len) < 0) {
		err = -errno;
		pr_warn("client connect: %s\n", strerror(-err));
		goto out;
	}
	if (early) {
		if (send(cfd, payload, o->bytes, 0) != (ssize_t)o->bytes) {
			err = -errno;
			pr_warn("client send: %s\n", strerror(-err));
			goto out;
		}
		err = wait_arrived(&env->addr, &cli, -1, o->bytes);
		if (err) {
			pr_warn("the early bytes never reached the unaccepted socket\n");
			goto out;
		}
	}
	/* No address: accept4() then does not call getname, so a getpeername
	 * hook (rowgate's workaround) could not run here either. */
	sfd = accept4(env->lfd, NULL, NULL, 0);
	if (sfd < 0 || fcntl(sfd, F_SETFL, O_NONBLOCK) < 0) {
		err = -errno;
		pr_warn("accept: %s\n", strerror(-err));
		goto out;
	}
	err = in_sockhash(env, sfd);
	if (err) {
		pr_warn("the accepted socket is not in the sockhash (%s): sockops did not run\n",
			strerror(-err));
		goto out;
	}
	if (!early) {
		if (send(cfd, payload, o->bytes, 0) != (ssize_t)o->bytes) {
			err = -errno;
			pr_warn("client send: %s\n", strerror(-err));
			goto out;
		}
		err = wait_arrived(&env->addr, &cli, sfd, o->bytes);
		if (err) {
			pr_warn("the bytes never reached the server socket\n");
			goto out;
		}
	}
	r->rqueue_before = diag_rqueue(&env->addr, &cli);
	err = serve(sfd, o->duration_ms, r);
	if (err) {
		pr_warn("server loop: %s\n", strerror(-err));
		goto out;
	}
	if (ioctl(sfd, SIOCINQ, &r->siocinq) < 0)
		r->siocinq = -errno;
	r->rqueue_after = diag_rqueue(&env->addr, &cli);
	r->bytes_received = tcp_bytes_received(sfd);
	r->echoed = drain(cfd);
out:
	if (sfd >= 0)
		close(sfd);
	if (cfd >= 0)
		close(cfd);
	free(payload);
	return err;
}

/* A diag_rqueue() value for humans. */
static const char *fmt_rqueue(int v, char *buf, size_t len)
{
	if (v >= 0)
		snprintf(buf, len, "%d", v);
	else
		snprintf(buf, len, "n/a (inet_diag: %s)", strerror(-v));
	return buf;
}

static void print_result(const char *name, const struct rp_result *r, double secs)
{
	char before[64], after[64];

	printf("  %-8s empty wakeups %ld in %.1f s, data wakeups %ld, bytes read %ld, "
	       "echoed to the client %ld\n",
	       name, r->empty_wakeups, secs, r->data_wakeups, r->bytes_read, r->echoed);
	printf("  %-8s TCP received %llu; rcv_nxt-copied_seq %s before the first recv, "
	       "%s after; SIOCINQ %d\n",
	       "", (unsigned long long)r->bytes_received,
	       fmt_rqueue(r->rqueue_before, before, sizeof(before)),
	       fmt_rqueue(r->rqueue_after, after, sizeof(after)), r->siocinq);
}

/*
 * Create our cgroup and the listener inside it (a socket belongs to the
 * cgroup of the task that created it; accepted children inherit it), then
 * go back: only the listener lives there, so the cgroup can be removed.
 */
static int setup_server(struct rp_env *env)
{
	socklen_t len = sizeof(env->addr);
	char procs[sizeof(env->cgroup_path) + 16];
	int err, one = 1;

	err = find_cgroup2(env->cgroup_root, sizeof(env->cgroup_root));
	if (err) {
		pr_warn("no cgroup2 mount in /proc/self/mounts\n");
		return err;
	}
	err = find_own_cgroup(env->cgroup_root, env->cgroup_orig, sizeof(env->cgroup_orig));
	if (err) {
		pr_warn("no cgroup2 entry in /proc/self/cgroup\n");
		return err;
	}
	if (snprintf(env->cgroup_path, sizeof(env->cgroup_path), "%s/%s.%d",
		     env->cgroup_root, RP_CGROUP_NAME, getpid()) >= (int)sizeof(env->cgroup_path))
		return -ENAMETOOLONG;
	if (mkdir(env->cgroup_path, 0755) < 0) {
		err = -errno;
		pr_warn("mkdir %s: %s%s\n", env->cgroup_path, strerror(-err),
			err == -EACCES || err == -EPERM ? " (run as root)" : "");
		return err;
	}
	env->cgroup_made = true;
	env->cgroup_fd = open(env->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (env->cgroup_fd < 0) {
		err = -errno;
		pr_warn("open %s: %s\n", env->cgroup_path, strerror(-err));
		return err;
	}

	if (snprintf(procs, sizeof(procs), "%s/cgroup.procs", env->cgroup_path) >=
	    (int)sizeof(procs))
		return -ENAMETOOLONG;
	err = join_cgroup(procs);
	if (err) {
		pr_warn("join %s: %s\n", env->cgroup_path, strerror(-err));
		return err;
	}
	env->cgroup_joined = true;
	env->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	err = env->lfd < 0 ? -errno : 0;
	if (!err)
		err = join_cgroup(env->cgroup_orig);
	if (err) {
		pr_warn("listener socket / leaving the cgroup: %s\n", strerror(-err));
		return err;
	}
	env->cgroup_joined = false;

	env->addr.sin_family = AF_INET;
	env->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(env->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(env->lfd, (struct sockaddr *)&env->addr, sizeof(env->addr)) < 0 ||
	    getsockname(env->lfd, (struct sockaddr *)&env->addr, &len) < 0 ||
	    listen(env->lfd, 16) < 0) {
		err = -errno;
		pr_warn("listen on 127.0.0.1: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

static int setup_bpf(struct rp_env *env, const struct rp_opts *o)
{
	int err;

	env->skel = repro__open();
	if (!env->skel) {
		err = -errno;
		pr_warn("open BPF object: %s\n", strerror(-err));
		return err;
	}
	env->skel->rodata->rp_port = ntohs(env->addr.sin_port);
	env->skel->rodata->rp_redirect = o->redirect;
	err = repro__load(env->skel);
	if (err) {
		pr_warn("load BPF programs: %s%s\n", strerror(-err),
			err == -EPERM ? " (run as root)" : "");
		return err;
	}
	env->sockops_link = bpf_program__attach_cgroup(env->skel->progs.rp_sockops,
						       env->cgroup_fd);
	if (!env->sockops_link) {
		err = -errno;
		pr_warn("attach sockops to %s: %s\n", env->cgroup_path, strerror(-err));
		return err;
	}
	/* libbpf 1.1 has no bpf_program__attach_sockmap; 6.1 has no sockmap
	 * links: plain prog_attach works on both. */
	err = bpf_prog_attach(bpf_program__fd(env->skel->progs.rp_verdict),
			      bpf_map__fd(env->skel->maps.rp_socks), BPF_SK_SKB_VERDICT, 0);
	if (err) {
		err = -errno;
		pr_warn("attach the verdict to the sockhash: %s\n", strerror(-err));
		return err;
	}
	env->verdict_attached = true;
	return 0;
}

static void teardown(struct rp_env *env)
{
	if (env->lfd >= 0)
		close(env->lfd);
	if (env->verdict_attached)
		bpf_prog_detach2(bpf_program__fd(env->skel->progs.rp_verdict),
				 bpf_map__fd(env->skel->maps.rp_socks), BPF_SK_SKB_VERDICT);
	bpf_link__destroy(env->sockops_link);
	repro__destroy(env->skel);
	if (env->cgroup_joined && join_cgroup(env->cgroup_orig))
		pr_warn("could not leave %s\n", env->cgroup_path);
	if (env->cgroup_fd >= 0)
		close(env->cgroup_fd);
	if (env->cgroup_made && rmdir(env->cgroup_path) < 0)
		pr_warn("rmdir %s: %s\n", env->cgroup_path, strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: copied_seq [OPTIONS]\n"
		"Reproduce the copied_seq write-back in tcp_bpf_recvmsg_parser(): a verdict\n"
		"that drops (or redirects) data that arrived before accept() leaves the server\n"
		"spinning on EAGAIN.  Needs root; creates and removes its own cgroup.\n"
		"\n"
		"  -t, --duration-ms N  epoll loop per case (default %u)\n"
		"  -b, --bytes N        bytes the client sends (default %u)\n"
		"  -r, --redirect       verdict redirects to the socket's own egress\n"
		"                       (default: drops)\n"
		"  -c, --check          exit 1 if the control case spins (sanity)\n"
		"  -v, --verbose        more output; -vv shows libbpf debug output\n"
		"  -V, --version        print version and libbpf version\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit: 0 whatever was found, 1 with --check if the control case spun,\n"
		"2 if setup failed.\n"
		"\n"
		"EXAMPLES\n"
		"  make repro && build/repro/copied_seq\n"
		"  build/repro/copied_seq --redirect --check\n",
		rp_defaults.duration_ms, rp_defaults.bytes);
}

static int parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "duration-ms", required_argument, NULL, 't' },
		{ "bytes",       required_argument, NULL, 'b' },
		{ "redirect",    no_argument,       NULL, 'r' },
		{ "check",       no_argument,       NULL, 'c' },
		{ "verbose",     no_argument,       NULL, 'v' },
		{ "version",     no_argument,       NULL, 'V' },
		{ "help",        no_argument,       NULL, 'h' },
		{ 0 }
	};
	struct rp_env env = { .cgroup_fd = -1, .lfd = -1 };
	struct rp_opts o = rp_defaults;
	struct rp_result early, control;
	struct utsname uts;
	char rq[64];
	bool reproduced, control_spins;
	int c, err, ret = EXIT_SETUP;
	double secs;

	while ((c = getopt_long(argc, argv, "t:b:rcvVh", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_uint(optarg, 100, 60000, &o.duration_ms)) {
				pr_warn("--duration-ms takes 100..60000\n");
				return EXIT_SETUP;
			}
			break;
		case 'b':
			if (parse_uint(optarg, 1, 65536, &o.bytes)) {
				pr_warn("--bytes takes 1..65536\n");
				return EXIT_SETUP;
			}
			break;
		case 'r':
			o.redirect = true;
			break;
		case 'c':
			o.check = true;
			break;
		case 'v':
			o.verbose++;
			break;
		case 'V':
			printf("copied_seq (rowgate) libbpf %u.%u\n",
			       libbpf_major_version(), libbpf_minor_version());
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_SETUP;
		}
	}
	rp_verbose = o.verbose;
	libbpf_set_print(libbpf_print);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);

	err = setup_server(&env);
	if (!err)
		err = setup_bpf(&env, &o);
	if (err)
		goto out;

	uname(&uts);
	secs = o.duration_ms / 1000.0;
	printf("kernel %s; verdict %s every skb; server 127.0.0.1:%u in %s\n",
	       uts.release, o.redirect ? "redirects to own egress" : "drops",
	       ntohs(env.addr.sin_port), env.cgroup_path);
	printf("client sends %u bytes; server: accept4(NULL), O_NONBLOCK, "
	       "level-triggered epoll + recv for %.1f s\n", o.bytes, secs);

	err = run_case(&env, &o, true, &early);
	if (!err && !rp_stop)
		err = run_case(&env, &o, false, &control);
	if (err || rp_stop)
		goto out;
	print_result("early", &early, secs);
	print_result("control", &control, secs);

	reproduced = early.empty_wakeups > RP_SPIN_WAKEUPS;
	control_spins = control.empty_wakeups > RP_SPIN_WAKEUPS;
	fmt_rqueue(early.rqueue_after, rq, sizeof(rq));
	if (reproduced)
		printf("BUG REPRODUCED: %ld empty wakeups in %.1f s, SIOCINQ=%d, "
		       "rcv_nxt-copied_seq=%s with an empty queue\n",
		       early.empty_wakeups, secs, early.siocinq, rq);
	else
		printf("not reproduced: %ld empty wakeups in %.1f s, "
		       "rcv_nxt-copied_seq=%s after the loop\n",
		       early.empty_wakeups, secs, rq);
	if (control_spins)
		printf("WARNING: the control case spun too (%ld empty wakeups): "
		       "the reproducer, not the write-back, is at fault\n",
		       control.empty_wakeups);
	ret = o.check && control_spins ? EXIT_SPIN : 0;
out:
	if (rp_stop)
		pr_warn("interrupted\n");
	teardown(&env);
	return ret;
}
