// SPDX-License-Identifier: GPL-2.0
/* Bug 2 of the series: sk_psock_verdict_data_ready() wakes the reader after
 * every skb the verdict dropped.
 *
 * The server end of a loopback pair is in a sockmap whose verdict drops
 * every skb.  A reader thread sleeps in a level-triggered epoll_wait() on it
 * (and on an eventfd that ends the test).  The client sends N small writes,
 * one at a time (TCP_NODELAY, a pause after each), so each is one skb and
 * one data_ready.  The reader's voluntary context switches
 * (getrusage(RUSAGE_THREAD)) count how often it was woken: stock kernels
 * wake it once per dropped skb (epoll finds nothing and sleeps again, so
 * epoll_wait() itself does not return); with the fix, never.
 *
 *   sockmap_drop_wake [-n SKBS]    exit 0 pass, 1 fail, 2 setup error
 */
#include "common.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

static int srv, efd;
static long wakes, returns, readable;

static void *reader(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	struct rusage r0, r1;
	int ep = epoll_create1(0), n, i;
	char buf[4096];

	(void)arg;
	ev.data.fd = srv;
	epoll_ctl(ep, EPOLL_CTL_ADD, srv, &ev);
	ev.data.fd = efd;
	epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	getrusage(RUSAGE_THREAD, &r0);
	for (;;) {
		n = epoll_wait(ep, out, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		returns++;
		for (i = 0; i < n; i++) {
			if (out[i].data.fd == efd)
				goto done;
			readable++;
			while (recv(srv, buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
		}
	}
done:
	getrusage(RUSAGE_THREAD, &r1);
	/* minus the eventfd wake that ends the test */
	wakes = r1.ru_nvcsw - r0.ru_nvcsw - 1;
	returns--;
	close(ep);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockmap_verdict *skel;
	int cli, i, n = 200, opt;
	char msg[100];
	pthread_t t;
	__u64 one = 1;
	double t0;

	while ((opt = getopt(argc, argv, "n:")) != -1)
		n = atoi(optarg);
	kp_pair(&cli, &srv);
	skel = kp_sockmap(kp_drop, srv);
	efd = eventfd(0, 0);
	memset(msg, 'x', sizeof(msg));
	pthread_create(&t, NULL, reader, NULL);
	usleep(100000); /* the reader is asleep in epoll_wait */
	t0 = kp_now();
	for (i = 0; i < n; i++) {
		if (send(cli, msg, sizeof(msg), 0) != sizeof(msg))
			kp_die("send");
		usleep(3000);
	}
	while (skel->bss->skbs < (__u64)n && kp_now() - t0 < 30)
		usleep(10000);
	usleep(100000);
	write(efd, &one, sizeof(one));
	pthread_join(t, NULL);

	printf("kernel %s: verdict dropped %llu skbs (%llu bytes); reader woken %ld times "
	       "(%.2f per dropped skb), epoll_wait returned %ld times, readable %ld\n",
	       kp_kernel(), (unsigned long long)skel->bss->skbs,
	       (unsigned long long)skel->bss->bytes, wakes,
	       skel->bss->skbs ? (double)wakes / skel->bss->skbs : 0.0, returns, readable);
	if (skel->bss->skbs < (__u64)n / 2) {
		printf("SKIP: the verdict saw %llu of %d skbs\n",
		       (unsigned long long)skel->bss->skbs, n);
		return 2;
	}
	/* A few wake-ups from elsewhere (timers, the scheduler) are not the bug. */
	if (wakes > (long)skel->bss->skbs / 10) {
		printf("FAIL: the reader is woken for skbs the verdict dropped\n");
		return 1;
	}
	printf("PASS: dropped skbs do not wake the reader\n");
	sockmap_verdict__destroy(skel);
	close(cli);
	close(srv);
	return 0;
}
