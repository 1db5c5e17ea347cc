// SPDX-License-Identifier: GPL-2.0
/* Bug 3 of the series: tcp_bpf_recvmsg_parser() writes back a copied_seq
 * snapshot over the charges the verdict made inside it.
 *
 * sockops puts the server's passively established socket in a sockmap whose
 * verdict drops every skb.  The client sends 1000 bytes before the server
 * accept()s: the verdict cannot run yet (no sk_socket), so it first runs in
 * the server's first recvmsg(), through tcp_data_ready(); tcp_eat_skb()
 * charges the 1000 bytes to copied_seq and the write-back on the way out
 * undoes it.  rcv_nxt - copied_seq stays 1000 with an empty queue: a
 * level-triggered epoll keeps reporting the socket readable and recv()
 * returns EAGAIN, forever.  Counted for 1 s: stock kernels spin (many empty
 * wake-ups; on 6.1 SIOCINQ says 1000), with the fix there are none.
 * tools/repro/copied_seq is the fuller tool (inet_diag, --redirect).
 *
 *   sockmap_pre_accept           exit 0 pass, 1 fail, 2 setup error
 */
#include "common.h"
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static char cg[1100], cg_parent[1024];

/* The cgroup v2 mount and this process's cgroup in it. */
static void cgroup_paths(void)
{
	char line[512], mnt[200] = "", rel[512] = "/";
	FILE *f = fopen("/proc/self/mounts", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %199s cgroup2", mnt) == 1 && strstr(line, " cgroup2 "))
			break;
		else
			mnt[0] = 0;
	if (f)
		fclose(f);
	if (!mnt[0]) {
		errno = ENOENT;
		kp_die("no cgroup2 mount");
	}
	f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			snprintf(rel, sizeof(rel), "%s", line + 3);
			rel[strcspn(rel, "\n")] = 0;
		}
	if (f)
		fclose(f);
	snprintf(cg_parent, sizeof(cg_parent), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	snprintf(cg, sizeof(cg), "%s/kp-pre-accept.%d", cg_parent, getpid());
}

static void join(const char *dir)
{
	char p[1200], pid[16];
	int fd;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", getpid());
	fd = open(p, O_WRONLY);
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
		kp_die("join %s", dir);
	close(fd);
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct sockmap_verdict *skel;
	socklen_t al = sizeof(a);
	int lfd, cli, srv, cgfd, ep, inq = -1, rc;
	long empty = 0, data = 0;
	char buf[2000];
	double t0;
	ssize_t n;

	cgroup_paths();
	if (mkdir(cg, 0755))
		kp_die("mkdir %s", cg);
	cgfd = open(cg, O_RDONLY | O_DIRECTORY);

	/* The listener (and so its children) belongs to our cgroup. */
	join(cg);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (void *)&a, &al))
		kp_die("listen");
	join(cg_parent);

	skel = sockmap_verdict__open();
	if (!skel)
		kp_die("open sockmap_verdict.bpf.o");
	skel->rodata->port = ntohs(a.sin_port);
	if (sockmap_verdict__load(skel))
		kp_die("load sockmap_verdict.bpf.o");
	if (bpf_prog_attach(bpf_program__fd(skel->progs.verdict_drop),
			    bpf_map__fd(skel->maps.sock_map), BPF_SK_SKB_STREAM_VERDICT, 0))
		kp_die("attach stream_verdict");
	if (bpf_prog_attach(bpf_program__fd(skel->progs.sockops_add), cgfd,
			    BPF_CGROUP_SOCK_OPS, 0))
		kp_die("attach sockops");

	cli = socket(AF_INET, SOCK_STREAM, 0);
	if (cli < 0 || connect(cli, (void *)&a, sizeof(a)))
		kp_die("connect");
	memset(buf, 'x', 1000);
	if (send(cli, buf, 1000, 0) != 1000)
		kp_die("send");
	usleep(300000); /* queued on the unaccepted socket */

	srv = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
	if (srv < 0)
		kp_die("accept");
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, srv, &ev);
	t0 = kp_now();
	while (kp_now() - t0 < 1.0 && empty < 1000000) {
		if (epoll_wait(ep, &out, 1, 100) <= 0)
			continue;
		n = recv(srv, buf, sizeof(buf), 0);
		if (n > 0)
			data++;
		else if (n < 0 && errno == EAGAIN)
			empty++;
		else
			break;
	}
	ioctl(srv, SIOCINQ, &inq);

	printf("kernel %s: 1000 bytes sent before accept(), verdict dropped %llu skbs "
	       "(%llu bytes); then in 1 s: %ld empty wake-ups (epoll readable, recv EAGAIN), "
	       "%ld with data; SIOCINQ %d\n",
	       kp_kernel(), (unsigned long long)skel->bss->skbs,
	       (unsigned long long)skel->bss->bytes, empty, data, inq);
	if (!skel->bss->skbs) {
		printf("SKIP: the verdict never ran\n");
		rc = 2;
	} else if (empty > 10) {
		printf("FAIL: the verdict's copied_seq charges are lost in recvmsg (the server spins)\n");
		rc = 1;
	} else {
		printf("PASS: copied_seq keeps the verdict's charges\n");
		rc = 0;
	}
	bpf_prog_detach2(bpf_program__fd(skel->progs.sockops_add), cgfd, BPF_CGROUP_SOCK_OPS);
	close(srv);
	close(cli);
	close(lfd);
	close(cgfd);
	rmdir(cg);
	sockmap_verdict__destroy(skel);
	return rc;
}
