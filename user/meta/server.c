// SPDX-License-Identifier: MIT
/* rowgate-meta: the cluster's quota allocator (the Metasrv role).  Keeps the
 * cluster-wide limits (a local state file, or etcd), answers frontend
 * heartbeats with per-database quotas from rg_alloc_* (water-filling), and
 * with --etcd elects one leader among its replicas.  HTTP/JSON, curl-able:
 * user/lib/meta_proto.h and docs/distributed.md describe the protocol.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "../lib/clock.h"
#include "../lib/http_client.h"
#include "../lib/log.h"
#include "../lib/notify.h"
#include "../lib/state.h"
#include "meta.h"

static void become_leader(struct meta *m)
{
	struct rg_limit_list limits;
	char err[512];
	__u64 now;

	rg_limit_list_init(&limits);
	if (m->use_etcd && rg_etcd_load_limits(&m->etcd, &limits, err, sizeof(err))) {
		meta_etcd_error(m);
		pr_warn("won the election but cannot load the limits from etcd (%s): "
			"not leading yet",
			err);
		rg_limit_list_free(&limits);
		return;
	}
	pthread_mutex_lock(&m->lock);
	now = rg_monotonic_ns();
	if (m->use_etcd && rg_cluster_replace_limits(&m->cl, &limits))
		pr_err("out of memory loading the limits");
	rg_cluster_start_leading(&m->cl, now);
	m->leader = true;
	m->leader_since_ns = now;
	m->elections_won++;
	snprintf(m->leader_url, sizeof(m->leader_url), "%s", m->cfg.advertise);
	pthread_mutex_unlock(&m->lock);
	pr_warn("leading (%zu limits); learning the quotas frontends hold for %llu ms",
		limits.count ? limits.count : m->cl.limits.count,
		(unsigned long long)m->cfg.learning_ms);
	rg_event("leader_elected", "advertise=%s limits=%zu learning_ms=%llu", m->cfg.advertise,
		 limits.count ? limits.count : m->cl.limits.count,
		 (unsigned long long)m->cfg.learning_ms);
	rg_limit_list_free(&limits);
}

static void step_down(struct meta *m, const char *why)
{
	pthread_mutex_lock(&m->lock);
	if (m->leader) {
		pr_warn("no longer leading: %s", why);
		rg_event("leader_lost", "advertise=%s reason=%s", m->cfg.advertise, why);
	}
	m->leader = false;
	if (!strcmp(m->leader_url, m->cfg.advertise))
		m->leader_url[0] = 0;
	pthread_mutex_unlock(&m->lock);
}

struct election {
	__s64 lease;
	__u64 last_keepalive_ns; /* last successful keepalive or grant */
	__u64 last_ok_ns;        /* last time etcd confirmed our role */
};

static void election_step(struct meta *m, struct election *el)
{
	__u64 ttl_ns = m->cfg.election_ttl_s * 1000000000ULL, now = rg_monotonic_ns();
	char err[512], url[256];
	bool leader, was;
	int ret;

	if (!el->lease) {
		if (rg_etcd_lease_grant(&m->etcd, m->cfg.election_ttl_s, &el->lease, err,
					sizeof(err))) {
			pr_debug("etcd: %s", err);
			goto unreachable;
		}
		el->last_keepalive_ns = now;
	} else if (now - el->last_keepalive_ns >= ttl_ns / 3) {
		ret = rg_etcd_lease_keepalive(&m->etcd, el->lease, err, sizeof(err));
		if (ret == -ENOENT) {
			el->lease = 0;
			step_down(m, "the etcd lease expired");
			return;
		}
		if (ret) {
			pr_debug("etcd: %s", err);
			goto unreachable;
		}
		el->last_keepalive_ns = now;
	}
	if (rg_etcd_campaign(&m->etcd, el->lease, m->cfg.advertise, &leader, url, sizeof(url),
			     err, sizeof(err))) {
		pr_debug("etcd: %s", err);
		goto unreachable;
	}
	el->last_ok_ns = now;
	pthread_mutex_lock(&m->lock);
	was = m->leader;
	if (!leader)
		snprintf(m->leader_url, sizeof(m->leader_url), "%s", url);
	pthread_mutex_unlock(&m->lock);
	if (leader && !was)
		become_leader(m);
	else if (!leader && was)
		step_down(m, "another replica holds the leader key");
	return;
unreachable:
	meta_etcd_error(m);
	/* our key may be gone by now: never lead on an unconfirmed lease */
	if (now - el->last_ok_ns >= ttl_ns) {
		step_down(m, "etcd unreachable for longer than the election TTL");
		pthread_mutex_lock(&m->lock);
		m->leader_url[0] = 0;
		pthread_mutex_unlock(&m->lock);
	}
}

/* A PEM file for MHD, NUL-terminated (malloc'd); NULL after logging. */
static char *read_pem(const char *opt, const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		pr_err("%s %s: %s", opt, path, strerror(errno));
		return NULL;
	}
	do {
		if (len + 4096 + 1 > cap) {
			char *p = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!p || cap > (1 << 22)) {
				pr_err("%s %s: %s", opt, path, p ? "larger than 4 MiB" : "out of memory");
				free(p ? p : buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n);
	fclose(f);
	buf[len] = 0;
	if (!strstr(buf, "-----BEGIN ")) {
		pr_err("%s %s: not a PEM file", opt, path);
		free(buf);
		return NULL;
	}
	return buf;
}

/* The agent and admin tokens, from their files; warns about a weak pair. */
static int meta_read_tokens(struct meta *m)
{
	char err[512];

	if (m->cfg.agent_token_file &&
	    rg_meta_read_token(m->cfg.agent_token_file, m->agent_token, sizeof(m->agent_token), err,
			       sizeof(err))) {
		pr_err("--agent-token-file: %s", err);
		return 1;
	}
	if (m->cfg.admin_token_file &&
	    rg_meta_read_token(m->cfg.admin_token_file, m->admin_token, sizeof(m->admin_token), err,
			       sizeof(err))) {
		pr_err("--admin-token-file: %s", err);
		return 1;
	}
	if (m->admin_token[0] && !m->agent_token[0])
		pr_warn("--admin-token-file without --agent-token-file: heartbeats and reads "
			"need no token");
	else if (m->admin_token[0] && !m->cfg.token_file && !strcmp(m->admin_token, m->agent_token))
		pr_warn("the agent and admin tokens are the same: every frontend can change "
			"the cluster's limits");
	return 0;
}

/* Where the limits live: etcd (loaded by the leader) or the state file
 * (loaded now).  Returns main's exit code on failure, else 0. */
static int meta_open_store(struct meta *m)
{
	char err[512];
	int ret;

	if (m->cfg.etcd_url) {
		if (rg_etcd_init(&m->etcd, m->cfg.etcd_url, m->cfg.etcd_prefix)) {
			pr_err("--etcd '%s': expected http(s)://HOST:PORT[,http(s)://HOST:PORT...] "
			       "(at most %d, and a non-empty prefix)",
			       m->cfg.etcd_url, RG_ETCD_ENDPOINTS_MAX);
			return 2;
		}
		m->etcd.ca_file = m->cfg.etcd_ca;
		m->etcd.cert_file = m->cfg.etcd_cert;
		m->etcd.key_file = m->cfg.etcd_key;
		if (m->cfg.etcd_user) {
			ret = rg_etcd_set_auth(&m->etcd, m->cfg.etcd_user,
					       m->cfg.etcd_password_file, err, sizeof(err));
			/* a wrong user or password will not get better */
			if (ret == -EACCES || ret == -EINVAL) {
				pr_err("%s", err);
				return 1;
			}
			if (ret)
				pr_warn("etcd: cannot authenticate yet (%s): retrying with every "
					"call",
					err);
		}
		m->use_etcd = true;
	} else {
		struct rg_limit_list limits;

		rg_limit_list_init(&limits);
		if (rg_state_load(m->cfg.state_file, &limits, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		if (rg_cluster_replace_limits(&m->cl, &limits)) {
			pr_err("out of memory");
			return 1;
		}
		rg_limit_list_free(&limits);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *tls_cert = NULL, *tls_key = NULL, *tls_ca = NULL;
	static struct meta m;
	struct sockaddr_storage ss = {};
	struct election el = {};
	struct MHD_Daemon *httpd;
	struct pollfd pfd;
	char err[512];
	sigset_t mask;
	bool v6 = false;
	int sfd, ret = 1;

	if (meta_parse_args(argc, argv, &m.cfg))
		return 2;
	if (meta_parse_listen(m.cfg.listen, &ss, &v6)) {
		pr_err("--listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:4100 or [::1]:4100",
		       m.cfg.listen);
		return 2;
	}
	if (meta_read_tokens(&m))
		return 1;
	pthread_mutex_init(&m.lock, NULL);
	if (rg_http_global_init()) {
		pr_err("cannot initialise libcurl");
		return 1;
	}
	if (rg_cluster_init(&m.cl, m.cfg.strategy, m.cfg.lease_ms, m.cfg.heartbeat_interval_ms,
			    m.cfg.learning_ms)) {
		pr_err("invalid lease or heartbeat interval");
		return 2;
	}
	ret = meta_open_store(&m);
	if (ret)
		return ret;
	ret = 1;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL); /* before MHD's thread inherits the mask */
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		pr_err("signalfd: %s", strerror(errno));
		return 1;
	}
	if (m.cfg.tls_cert) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			pr_err("--tls-cert: this libmicrohttpd (%s) is built without TLS",
			       MHD_get_version());
			return 1;
		}
		tls_cert = read_pem("--tls-cert", m.cfg.tls_cert);
		tls_key = tls_cert ? read_pem("--tls-key", m.cfg.tls_key) : NULL;
		if (!tls_key)
			return 1;
		if (m.cfg.tls_client_ca) {
			tls_ca = read_pem("--tls-client-ca", m.cfg.tls_client_ca);
			if (!tls_ca)
				return 1;
		}
	}
	{
		/* TLS options only when serving HTTPS; MHD_OPTION_END ends the
		 * list early otherwise */
		struct MHD_OptionItem tls[] = {
			{ MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert },
			{ MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key },
			/* makes MHD ask for a client certificate; that one was
			 * sent and is valid is checked per request (api.c) */
			{ tls_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, tls_ca },
			{ MHD_OPTION_END, 0, NULL },
		};

		httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
						 (v6 ? MHD_USE_IPv6 : 0) |
						 (tls_cert ? MHD_USE_TLS : 0),
					 0, NULL, NULL, meta_on_request, &m, MHD_OPTION_SOCK_ADDR,
					 &ss, MHD_OPTION_NOTIFY_COMPLETED, meta_on_completed, &m,
					 MHD_OPTION_UNESCAPE_CALLBACK, meta_unescape_keep_nul, NULL,
					 MHD_OPTION_CONNECTION_LIMIT,
					 (unsigned int)RG_META_CONNECTION_LIMIT,
					 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
					 MHD_OPTION_ARRAY, tls_cert ? tls : &tls[3],
					 MHD_OPTION_END);
	}
	if (!httpd) {
		pr_err("cannot listen on %s (address in use, not a local address%s?)", m.cfg.listen,
		       tls_cert ? ", or a certificate and key that do not match or parse" : "");
		return 1;
	}
	if (!m.use_etcd)
		become_leader(&m);
	pr_warn("serving %s on %s (%s store, %s)",
		!tls_cert ? "HTTP" :
		tls_ca	  ? "HTTPS, client certificates required" :
			    "HTTPS",
		m.cfg.listen, m.use_etcd ? "etcd" : "file",
		!m.admin_token[0]		      ? "no token required" :
		!strcmp(m.admin_token, m.agent_token) ? "one token for agents and admins" :
		m.agent_token[0]		      ? "agent and admin tokens" :
							"admin token only");
	rg_sd_notify("READY=1");
	pfd = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (;;) {
		struct signalfd_siginfo si;

		if (m.use_etcd)
			election_step(&m, &el);
		if (poll(&pfd, 1, RG_META_ELECTION_TICK_MS) < 0 && errno != EINTR)
			break;
		if ((pfd.revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGHUP) {
			pr_info("signal %u: stopping", si.ssi_signo);
			break;
		}
	}
	ret = 0;
	rg_sd_notify("STOPPING=1");
	MHD_stop_daemon(httpd);
	if (m.use_etcd && el.lease) {
		/* hand leadership over now rather than at lease expiry */
		if (rg_etcd_lease_revoke(&m.etcd, el.lease, err, sizeof(err)))
			pr_warn("%s", err);
	}
	rg_cluster_free(&m.cl);
	free(tls_cert);
	free(tls_key);
	free(tls_ca);
	close(sfd);
	return ret;
}
