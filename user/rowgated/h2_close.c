// SPDX-License-Identifier: GPL-2.0
/*
 * After a kernel GOAWAY nothing more of a connection reaches the server
 * (bpf/h2/verdict.h), so the streams the GOAWAY names as possibly processed wait
 * for bodies that never come, on both sides, until a deadline if the client
 * set one.  No BPF helper of 6.1 can close a socket, so the verdict queues
 * the connection (h2_goaway) and rowgated resets it with sock_diag's
 * SOCK_DESTROY (CONFIG_INET_DIAG_DESTROY) once --grpc-close-grace has let
 * the client read the GOAWAY and the server answer what it had whole
 * (docs/grpc.md#h2-close).  The same queue carries, for a reset at once,
 * connections a full table refused and adopted connections that went on
 * sending past --adopt-grace without a request boundary (bpf/guard.h; told
 * apart by their adopting entry).  The server's socket may live in another network
 * namespace than rowgated's (a container): those of the guarded cgroup's
 * processes are tried next.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/inet_diag.h>
#include <netinet/tcp.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "../lib/counters.h"
#include "../lib/log.h"
#include "adopt.h"
#include "h2_close.h"
#include "rowgate/abi.h"

#define RG_H2_CLOSE_PENDING_MAX 4096 /* beyond, the kernel queue holds them */
#define RG_H2_CLOSE_NETNS_MAX	64   /* namespaces tried for one socket */

struct rg_h2_closer {
	int queue_fd;
	int adopt_fd; /* the adopting map */
	int nl_fd;    /* sock_diag in rowgated's own namespace */
	unsigned int grace_ms;
	const char *cgroup;
	struct rg_h2_goaway *pending;
	unsigned int npending;
	__u32 seq;
	bool warned;
	struct rg_h2_close_stats st; /* written here, read atomically by /metrics */
};

static void stat_add(__u64 *field, __u64 v)
{
	__atomic_store_n(field, *field + v, __ATOMIC_RELAXED);
}

/* A dump's entries, one inet_diag_msg each. */
typedef void (*rg_diag_entry_fn)(const struct inet_diag_msg *m, void *arg);

/* One sock_diag request for TCP sockets and its answer: 0 or a negative
 * errno from the kernel's NLMSG_ERROR (an acknowledged request) or
 * NLMSG_DONE (a dump, whose entries go to fn, or are skipped without one);
 * -EPROTO for anything else.  Answers to earlier requests (another seq)
 * are skipped too. */
static int sock_diag_call(int nl_fd, __u32 *seq, __u16 type, __u16 flags,
			  const struct inet_diag_req_v2 *req, rg_diag_entry_fn fn, void *arg)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
		.nlh = {
			.nlmsg_len = sizeof(msg),
			.nlmsg_type = type,
			.nlmsg_flags = NLM_F_REQUEST | flags,
			.nlmsg_seq = ++*seq,
		},
		.req = *req,
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nlh;
		char buf[32768]; /* a dump's batch */
	} reply;

	if (sendto(nl_fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return -errno;
	for (;;) {
		struct nlmsghdr *h = &reply.nlh;
		ssize_t n = recv(nl_fd, &reply, sizeof(reply), 0);
		unsigned int len;

		if (n < 0)
			return -errno;
		len = (unsigned int)n; /* the kernel's messages are aligned */
		if (!NLMSG_OK(h, len))
			return -EPROTO;
		for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != *seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == NLMSG_DONE)
				return h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) ?
					       *(int *)NLMSG_DATA(h) :
					       0;
			if (!(flags & NLM_F_DUMP))
				return -EPROTO;
			if (fn && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
				fn(NLMSG_DATA(h), arg);
		}
	}
}

/* Whether sock_diag can reach TCP sockets here: a dump that matches no
 * state answers NLMSG_DONE when the inet_diag and tcp_diag handlers are
 * in (or load on demand), an error when they are not.  Without them every
 * SOCK_DESTROY would answer -ENOENT, which looks like a closed socket.
 * 0 or negative errno. */
static int tcp_diag_probe(int nl_fd, __u32 *seq)
{
	const struct inet_diag_req_v2 req = { .sdiag_family = AF_INET,
					      .sdiag_protocol = IPPROTO_TCP };

	return sock_diag_call(nl_fd, seq, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, &req, NULL, NULL);
}

int rg_h2_closer_new(int queue_fd, int adopt_fd, unsigned int grace_ms, const char *cgroup,
		     struct rg_h2_closer **out)
{
	struct rg_h2_closer *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->pending = calloc(RG_H2_CLOSE_PENDING_MAX, sizeof(*c->pending));
	if (!c->pending) {
		free(c);
		return -ENOMEM;
	}
	c->queue_fd = queue_fd;
	c->adopt_fd = adopt_fd;
	c->grace_ms = grace_ms;
	c->cgroup = cgroup;
	/* with no grace too: connections the full table refused are reset */
	c->nl_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (c->nl_fd < 0) {
		pr_warn("no sock_diag socket (%s): connections closed by a kernel GOAWAY, or "
			"refused by a full table, are left to their clients",
			strerror(errno));
	} else {
		int err = tcp_diag_probe(c->nl_fd, &c->seq);

		if (err)
			pr_warn("sock_diag cannot reach TCP sockets (%s: is the tcp_diag module "
				"available?): connections closed by a kernel GOAWAY, or refused "
				"by a full table, are left to their clients",
				strerror(-err));
	}
	*out = c;
	return 0;
}

void rg_h2_closer_free(struct rg_h2_closer *c)
{
	if (!c)
		return;
	if (c->nl_fd >= 0)
		close(c->nl_fd);
	free(c->pending);
	free(c);
}

void rg_h2_closer_stats(const struct rg_h2_closer *c, struct rg_h2_close_stats *out)
{
#define RG_LOAD_(field, ...) out->field = __atomic_load_n(&c->st.field, __ATOMIC_RELAXED);
	RG_H2_CLOSE_STATS_FIELDS(RG_LOAD_)
#undef RG_LOAD_
}

/* SOCK_DESTROY of one socket by its addresses, checked against its cookie:
 * 0, -ENOENT (not in this namespace, or gone), -ESTALE (the 4-tuple is
 * another socket now), or another negative errno. */
static int sock_destroy(int nl_fd, __u32 *seq, const struct rg_h2_goaway *e)
{
	struct inet_diag_req_v2 req = {
		.sdiag_family = (__u8)e->family,
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_states = ~0U,
		.id = {
			.idiag_sport = htons(e->local_port),
			.idiag_dport = htons(e->remote_port),
			.idiag_cookie = { (__u32)e->cookie, (__u32)(e->cookie >> 32) },
		},
	};

	memcpy(req.id.idiag_src, e->local_ip, sizeof(req.id.idiag_src));
	memcpy(req.id.idiag_dst, e->remote_ip, sizeof(req.id.idiag_dst));
	return sock_diag_call(nl_fd, seq, SOCK_DESTROY, NLM_F_ACK, &req, NULL, NULL);
}

struct netns_walk {
	const struct rg_h2_goaway *e;
	__u32 *seq;
	ino_t seen[RG_H2_CLOSE_NETNS_MAX];
	unsigned int nseen;
	int ret; /* of the last try; 0 ends the walk */
};

/* Try the socket in the namespace of one process, once per namespace. */
static void try_netns_of(struct netns_walk *w, const char *pid)
{
	char path[64];
	struct stat sb;
	int ns_fd, self_fd, nl_fd;

	snprintf(path, sizeof(path), "/proc/%s/ns/net", pid);
	if (stat(path, &sb))
		return;
	for (unsigned int i = 0; i < w->nseen; i++)
		if (w->seen[i] == sb.st_ino)
			return;
	if (w->nseen == RG_H2_CLOSE_NETNS_MAX)
		return;
	w->seen[w->nseen++] = sb.st_ino;
	ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	self_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0 || self_fd < 0)
		goto out;
	/* the socket keeps the namespace it was made in: enter, make, leave */
	if (setns(ns_fd, CLONE_NEWNET))
		goto out;
	nl_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (setns(self_fd, CLONE_NEWNET)) {
		/* never go on in the wrong namespace */
		pr_err("h2 close: cannot return to rowgated's network namespace: %s",
		       strerror(errno));
		abort();
	}
	if (nl_fd >= 0) {
		w->ret = sock_destroy(nl_fd, w->seq, w->e);
		close(nl_fd);
	}
out:
	if (ns_fd >= 0)
		close(ns_fd);
	if (self_fd >= 0)
		close(self_fd);
}

/* Every process of the cgroup and of the cgroups below it. */
static void walk_cgroup(struct netns_walk *w, const char *dir, int depth)
{
	char path[PATH_MAX], pid[32];
	struct dirent *de;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f) {
		while (w->ret && fgets(pid, sizeof(pid), f)) {
			pid[strcspn(pid, "\n")] = 0;
			try_netns_of(w, pid);
		}
		fclose(f);
	}
	if (!w->ret || depth >= 8)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while (w->ret && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		walk_cgroup(w, path, depth + 1);
	}
	closedir(d);
}

/* A connection the full table refused (--conns-full=fail-closed; the
 * kernel queues it with at_ns 0) is reset at once: none of its data reaches
 * the server, and its client would otherwise wait for its own timeout. */
/* A reset at once: refused by a full table, or adopted and overdue */
static bool refused_by_table(const struct rg_h2_goaway *e)
{
	return !e->at_ns;
}

enum reset_why { RESET_GOAWAY, RESET_REFUSED, RESET_ADOPTED };

static const char *const reset_what[] = {
	[RESET_GOAWAY] = "closed by GOAWAY",
	[RESET_REFUSED] = "the full table refused",
	[RESET_ADOPTED] = "adopted and still unreadable after --adopt-grace",
};

static enum reset_why reset_why(const struct rg_h2_closer *c, const struct rg_h2_goaway *e)
{
	struct rg_adopt a;

	if (!refused_by_table(e))
		return RESET_GOAWAY;
	if (c->adopt_fd >= 0 && !bpf_map_lookup_elem(c->adopt_fd, &e->cookie, &a))
		return RESET_ADOPTED;
	return RESET_REFUSED;
}

static void reset_one(struct rg_h2_closer *c, const struct rg_h2_goaway *e)
{
	struct netns_walk w = { .e = e, .seq = &c->seq, .ret = -ENOENT };
	enum reset_why why = reset_why(c, e);
	__u64 *done[] = { &c->st.resets, &c->st.refused_resets, &c->st.adopt_resets };
	__u64 *failed[] = { &c->st.failed, &c->st.refused_reset_failed, &c->st.adopt_reset_failed };
	struct stat sb;

	if (c->nl_fd >= 0)
		w.ret = sock_destroy(c->nl_fd, &c->seq, e);
	if (w.ret == -ENOENT && c->cgroup && !stat("/proc/thread-self/ns/net", &sb)) {
		w.seen[w.nseen++] = sb.st_ino; /* tried already */
		walk_cgroup(&w, c->cgroup, 0);
	}
	if (!w.ret) {
		stat_add(done[why], 1);
		pr_debug("reset connection %llu (%u -> %u): %s", (unsigned long long)e->cookie,
			 e->remote_port, e->local_port, reset_what[why]);
	} else if (w.ret == -ENOENT || w.ret == -ESTALE) {
		stat_add(&c->st.gone, 1);
	} else {
		stat_add(failed[why], 1);
		if (!c->warned)
			pr_warn("cannot reset a connection %s (%s%s); %s", reset_what[why],
				strerror(-w.ret),
				w.ret == -EOPNOTSUPP ? ": no CONFIG_INET_DIAG_DESTROY" : "",
				why == RESET_GOAWAY ?
					"its client closes it, or waits for its calls' deadlines" :
					"its bytes are dropped and its client waits for its own "
					"timeout");
		c->warned = true;
	}
}

/* One dump of the TCP sockets of a family in these states, to fn. */
static int sock_diag_dump(int nl_fd, __u32 *seq, __u8 family, __u32 states, rg_diag_entry_fn fn,
			  void *arg)
{
	const struct inet_diag_req_v2 req = { .sdiag_family = family,
					      .sdiag_protocol = IPPROTO_TCP,
					      .idiag_states = states };

	return sock_diag_call(nl_fd, seq, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, &req, fn, arg);
}

struct sweep {
	struct rg_h2_closer *c;
	int conns_fd;
	void *conn;
	const __u32 *ports;
	int nports;
	unsigned int found;
};

static void sweep_one(const struct inet_diag_msg *m, void *arg)
{
	struct sweep *w = arg;
	struct rg_h2_goaway e = {
		.cookie = (__u64)m->id.idiag_cookie[1] << 32 | m->id.idiag_cookie[0],
		.family = m->idiag_family,
		.local_port = ntohs(m->id.idiag_sport),
		.remote_port = ntohs(m->id.idiag_dport),
	};

	if (!rg_port_guarded(w->ports, w->nports, e.local_port) ||
	    !bpf_map_lookup_elem(w->conns_fd, &e.cookie, w->conn) ||
	    w->c->npending >= RG_H2_CLOSE_PENDING_MAX)
		return;
	memcpy(e.local_ip, m->id.idiag_src, sizeof(e.local_ip));
	memcpy(e.remote_ip, m->id.idiag_dst, sizeof(e.remote_ip));
	w->c->pending[w->c->npending++] = e; /* at_ns 0: reset at the next tick */
	w->found++;
}

int rg_h2_closer_sweep(struct rg_h2_closer *c, int conns_fd, __u32 conn_value_size,
		       const __u32 *ports, int nports)
{
	const __u32 states = 1U << TCP_ESTABLISHED | 1U << TCP_CLOSE_WAIT;
	struct sweep w = { .c = c, .conns_fd = conns_fd, .ports = ports, .nports = nports };
	int err;

	if (c->nl_fd < 0)
		return -EOPNOTSUPP;
	w.conn = malloc(conn_value_size);
	if (!w.conn)
		return -ENOMEM;
	err = sock_diag_dump(c->nl_fd, &c->seq, AF_INET, states, sweep_one, &w);
	if (!err)
		err = sock_diag_dump(c->nl_fd, &c->seq, AF_INET6, states, sweep_one, &w);
	free(w.conn);
	__atomic_store_n(&c->st.pending, c->npending, __ATOMIC_RELAXED);
	return err ? err : (int)w.found;
}

int rg_h2_closer_tick(struct rg_h2_closer *c, __u64 now_ns)
{
	__u64 grace_ns = (__u64)c->grace_ms * 1000000ULL, next = ~0ULL;
	unsigned int i, kept = 0;

	while (c->npending < RG_H2_CLOSE_PENDING_MAX &&
	       !bpf_map_lookup_and_delete_elem(c->queue_fd, NULL, &c->pending[c->npending]))
		if (c->grace_ms || refused_by_table(&c->pending[c->npending]))
			c->npending++;
	for (i = 0; i < c->npending; i++) {
		const struct rg_h2_goaway *e = &c->pending[i];

		/* at_ns > now_ns: wraps, due */
		if (refused_by_table(e) || now_ns - e->at_ns >= grace_ns) {
			reset_one(c, e);
			continue;
		}
		if (e->at_ns + grace_ns - now_ns < next)
			next = e->at_ns + grace_ns - now_ns;
		c->pending[kept++] = *e;
	}
	c->npending = kept;
	__atomic_store_n(&c->st.pending, kept, __ATOMIC_RELAXED);
	if (!kept)
		return -1;
	return (int)((next + 999999) / 1000000);
}
