// SPDX-License-Identifier: MIT
/* rowgated: the host agent.  Loads and pins the BPF programs, attaches them
 * to the ingest cgroup and ports, keeps the limits in the pinned maps and in
 * a state file, and answers rowgatectl on the admin socket.  Here: the
 * start, the main loop and the stop; rowgated.h lists the other files.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rowgate.skel.h"
#include "../lib/clock.h"
#include "../lib/counters.h"
#include "../lib/log.h"
#include "../lib/maps.h"
#include "../lib/notify.h"
#include "h2_close.h"
#include "meta_agent.h"
#include "metrics.h"
#include "reconcile.h"
#include "rowgated.h"

/* Detach once ready: the parent exits 0 when the child says so. */
static int daemonize(int *notify_fd)
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) == 1 && c == 'R')
			_exit(0);
		_exit(1);
	}
	close(pipefd[0]);
	setsid();
	*notify_fd = pipefd[1];
	return 0;
}

static void notify_ready(int fd)
{
	int nul;

	if (fd < 0)
		return;
	if (write(fd, "R", 1) != 1)
		pr_warn("cannot notify the parent process");
	close(fd);
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		close(nul);
	}
}

/* The connection table's alarm: a log line when connections went
 * unguarded (fail-open) or were refused (fail-closed), at most every
 * RG_CONNS_FULL_LOG_MS. */
static void conns_full_alarm(struct daemon *d)
{
	static __u64 seen_untracked, seen_refused, last_log_ns;
	static bool started;
	struct rg_global_stats g = {};
	struct rg_guard_stats gs = {};
	__u64 now = rg_monotonic_ns();
	__u32 zero = 0;

	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL), &zero, &g);
	bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.RG_MAP_GUARD_STATS), &zero, &gs);
	if (!started) { /* what happened before this start was reported then */
		seen_untracked = g.conns_untracked;
		seen_refused = gs.conns_refused;
		started = true;
		return;
	}
	if (g.conns_untracked == seen_untracked && gs.conns_refused == seen_refused)
		return;
	if (last_log_ns && now - last_log_ns < (__u64)RG_CONNS_FULL_LOG_MS * 1000000)
		return;
	if (g.conns_untracked > seen_untracked)
		pr_warn("connection table full (--max-conns %u): %llu connection(s) passed "
			"UNLIMITED since the last report (fail-open; conns_untracked %llu)",
			d->cfg->max_conns, (unsigned long long)(g.conns_untracked - seen_untracked),
			(unsigned long long)g.conns_untracked);
	if (gs.conns_refused > seen_refused)
		pr_warn("connection table full (--max-conns %u): %llu connection(s) refused "
			"since the last report (fail-closed: their data is dropped; conns_refused "
			"%llu)",
			d->cfg->max_conns, (unsigned long long)(gs.conns_refused - seen_refused),
			(unsigned long long)gs.conns_refused);
	seen_untracked = g.conns_untracked;
	seen_refused = gs.conns_refused;
	last_log_ns = now;
}

/* A log line when adopted connections were reset (--adopt-grace), at most
 * every RG_CONNS_FULL_LOG_MS: once per start, as a rule. */
static void adopt_reset_log(struct daemon *d)
{
	static __u64 seen, last_log_ns;
	struct rg_h2_close_stats cs;
	__u64 now = rg_monotonic_ns();

	rg_h2_closer_stats(d->closer, &cs);
	if (cs.adopt_resets == seen ||
	    (last_log_ns && now - last_log_ns < (__u64)RG_CONNS_FULL_LOG_MS * 1000000))
		return;
	pr_warn("reset %llu connection(s) that predate this start: %u s or more after "
		"adoption they sent bytes that start no request after their server answered "
		"(HTTP/2); their clients reconnect, enforced (adopt_resets %llu)",
		(unsigned long long)(cs.adopt_resets - seen), d->cfg->adopt_grace_s,
		(unsigned long long)cs.adopt_resets);
	seen = cs.adopt_resets;
	last_log_ns = now;
}

/* The signals serve() reads from a signalfd: SIGTERM and SIGINT stop,
 * SIGHUP reads the configuration again (rgd_reload). */
static void stop_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

static int serve(struct daemon *d, int notify_fd)
{
	struct pollfd pfd[4];
	__u64 last_gc_ns = rg_monotonic_ns();
	int sfd, timeout_ms = RG_POLL_INTERVAL_MS;
	bool grpc_warned = false;
	sigset_t mask;

	stop_signals(&mask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		return -errno;
	pr_info("guarding %d port(s) in %s; admin socket %s", d->cfg->nports, d->cfg->cgroup,
		d->cfg->admin_socket);
	for (int i = 0; i < d->cfg->nports; i++) {
		const char *grpc = "answered 400";

		if ((d->cfg->port_cfg[i].flags & RG_PORT_GRPC) && d->cfg->egress_off && !grpc_warned) {
			/* both need the server's side followed (docs/grpc.md) */
			pr_warn("--egress off: a refused gRPC message closes its connection (GOAWAY), "
				"and a server's SETTINGS_MAX_FRAME_SIZE over 16,384 is not lowered, "
				"so larger client frames (gRPC C-core's) fail closed");
			grpc_warned = true;
		}
		if (d->cfg->port_cfg[i].flags & RG_PORT_GRPC)
			grpc = d->cfg->grpc_compressed_debt ?
				       "followed, compressed messages charged as debt" :
				       "followed";
		pr_info("port %u: %s, gRPC (h2c) %s%s", d->cfg->ports[i],
			rg_profile_name(d->cfg->port_cfg[i].profile), grpc,
			d->cfg->port_cfg[i].flags & RG_PORT_ALLOW_UNPARSED ?
				", unparsed bytes pass" :
				"");
	}
	/* ready: attached, admin socket and --metrics listening */
	notify_ready(notify_fd);
	rg_sd_notify("READY=1");
	pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = d->admin_fd, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = rg_reconciler_fd(d->rec), .events = POLLIN };
	pfd[3] = (struct pollfd){ .fd = d->cgroup_watch_fd, .events = POLLIN };
	for (;;) {
		struct signalfd_siginfo si;
		char ev[4096];

		if (poll(pfd, 4, timeout_ms) < 0 && errno != EINTR)
			break;
		/* a reset due sooner than the next tick shortens the wait */
		timeout_ms = rg_h2_closer_tick(d->closer, rg_monotonic_ns());
		if (timeout_ms < 0 || timeout_ms > RG_POLL_INTERVAL_MS)
			timeout_ms = RG_POLL_INTERVAL_MS;
		if (pfd[3].revents & POLLIN)
			while (read(d->cgroup_watch_fd, ev, sizeof(ev)) > 0)
				;
		rgd_guard_check(d);
		conns_full_alarm(d);
		adopt_reset_log(d);
		rgd_fail_events(d);
		if (!d->detached &&
		    rg_monotonic_ns() - last_gc_ns >= RG_GC_INTERVAL_MS * 1000000ULL) {
			struct rg_adopt_maps m = rgd_adopt_maps(d);

			rg_adopt_gc(&m);
			last_gc_ns = rg_monotonic_ns();
		}
		/* body copies first: corrections decide the next admissions */
		rg_reconciler_poll(d->rec, 0);
		if (pfd[0].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					rgd_reload(d, d->argc, d->argv);
				} else {
					pr_info("signal %u: stopping", si.ssi_signo);
					break;
				}
			}
		}
		if (pfd[1].revents & POLLIN)
			while (rg_admin_serve_one(d->admin_fd, d->cfg->admin_group, &rgd_admin_ops,
						  d) != -EAGAIN)
				;
		rg_meta_agent_tick(d->agent, &d->limits, d->cfg->state_file);
	}
	rg_sd_notify("STOPPING=1");
	close(sfd);
	return 0;
}

/* The /metrics endpoint over the maps and rowgated's own counters; even
 * without --metrics, as SIGHUP may give it an address (rgd_reload). */
static int metrics_start(struct daemon *d)
{
	struct rg_metrics_maps mm = {
		.limits_fd = bpf_map__fd(d->skel->maps.RG_MAP_LIMITS),
		.buckets_fd = bpf_map__fd(d->skel->maps.RG_MAP_BUCKETS),
		.db_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_DB_STATS),
		.global_fd = bpf_map__fd(d->skel->maps.RG_MAP_GLOBAL),
		.proto_stats_fd = bpf_map__fd(d->skel->maps.RG_MAP_PROTO_STATS),
		.bpffs = d->cfg->bpffs,
		.reconciler = d->rec,
		.closer = d->closer,
		.agent = d->agent,
	};
	int err;

	err = rg_metrics_new(&mm, &d->metrics);
	if (!err && d->cfg->metrics_addr)
		err = rg_metrics_listen(d->metrics, d->cfg->metrics_addr);
	return err;
}

int main(int argc, char **argv)
{
	struct config cfg = {};
	struct daemon d = { .cfg = &cfg, .lock_fd = -1, .admin_fd = -1, .cgroup_watch_fd = -1,
			    .argc = argc, .argv = argv };
	char err[256] = "";
	int notify_fd = -1, ret = 1;
	sigset_t mask;

	rg_log_route_libbpf();
	if (rgd_parse_args(argc, argv, &cfg))
		return 2;
	if (geteuid() != 0)
		pr_warn("not running as root: loading BPF programs will likely fail");
	if (cfg.cleanup) {
		if (!rg_is_bpffs(cfg.bpffs) && access(cfg.bpffs, F_OK))
			return 0;
		d.lock_fd = rg_bpffs_lock(cfg.bpffs);
		if (d.lock_fd < 0)
			return 1;
		rgd_purge_all(cfg.bpffs);
		return 0;
	}
	rg_limit_list_init(&d.limits);
	if (rg_state_load(cfg.state_file, &d.limits, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (rg_bpffs_prepare(cfg.bpffs))
		return 1;
	d.lock_fd = rg_bpffs_lock(cfg.bpffs);
	if (d.lock_fd < 0)
		return 1;
	if (!cfg.foreground && daemonize(&notify_fd))
		return 1;
	if (rgd_load(&d))
		goto out;
	if (rgd_populate_ports_routes(&d)) {
		pr_err("cannot write the ports and routes maps: %s", strerror(errno));
		goto out;
	}
	{
		int err = rgd_populate_h2_routes(&d);

		if (err) {
			pr_err("cannot write the gRPC routes map: %s", strerror(-err));
			goto out;
		}
	}
	if (rgd_sync_limits_to_maps(&d))
		goto out;
	d.admin_fd = rg_admin_listen(cfg.admin_socket, cfg.admin_group);
	if (d.admin_fd < 0)
		goto out;
	{
		struct rg_reconcile_fds rf = {
			.bodies_fd = bpf_map__fd(d.skel->maps.RG_MAP_BODIES),
			.ratios_fd = bpf_map__fd(d.skel->maps.RG_MAP_RATIOS),
			.prog_fd = bpf_program__fd(d.skel->progs.rg_reconcile),
			.h2_cdb_fd = bpf_map__fd(d.skel->maps.RG_MAP_H2_CDB),
			.h2_cdb_peer_fd = bpf_map__fd(d.skel->maps.RG_MAP_H2_CDB_PEER),
			.copy_memory_bytes = cfg.copy_memory_bytes,
			.copy_expiry_s = cfg.copy_expiry_s,
		};

		if (rg_reconciler_new(&rf, &d.rec))
			goto out;
	}
	if (rg_h2_closer_new(bpf_map__fd(d.skel->maps.RG_MAP_H2_GOAWAY),
			     bpf_map__fd(d.skel->maps.RG_MAP_ADOPT), cfg.grpc_close_grace_ms,
			     cfg.cgroup, &d.closer))
		goto out;
	if (rgd_attach_all(&d))
		goto stop;
	d.cgroup_watch_fd = rgd_watch_cgroup_parent(cfg.cgroup);
	if (cfg.xdp_iface && rg_xdp_start(cfg.bpffs, cfg.xdp_iface, cfg.udp, cfg.nudp, &d.xdp))
		goto stop;
	/* Blocked before the threads of --metrics and --meta inherit the mask:
	 * a stop signal delivered to one of them killed rowgated on the spot,
	 * skipping the orderly stop (STOPPING=1, the admin socket removed, exit
	 * 0).  serve() reads them from a signalfd. */
	stop_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* the agent first: /metrics reads it until rg_metrics_free */
	if (cfg.meta_url) {
		struct rg_meta_agent_config mc = {
			.urls = cfg.meta_url,
			.node_id = cfg.node_id,
			.token_file = cfg.token_file,
			.ca_file = cfg.meta_ca,
			.cert_file = cfg.meta_cert,
			.key_file = cfg.meta_key,
			.limits_fd = bpf_map__fd(d.skel->maps.RG_MAP_LIMITS),
			.buckets_fd = bpf_map__fd(d.skel->maps.RG_MAP_BUCKETS),
			.stats_fd = bpf_map__fd(d.skel->maps.RG_MAP_DB_STATS),
			.apply = rgd_meta_apply,
			.ctx = &d,
		};

		if (rg_meta_agent_start(&mc, &d.agent))
			goto stop;
	}
	if (metrics_start(&d))
		goto stop_threads;
	ret = serve(&d, notify_fd) ? 1 : 0;
stop_threads:
	rg_metrics_free(d.metrics);
	d.metrics = NULL;
	rg_meta_agent_stop(d.agent);
	d.agent = NULL;
stop:
	/* enforcement outlives the daemon; removing it is explicit */
	rg_xdp_stop(d.xdp, true);
	if (ret == 0 && !d.detached)
		pr_info("stopped; enforcement stays attached (pins under %s): "
			"'rowgatectl detach' or 'rowgated --cleanup' removes it",
			cfg.bpffs);
out:
	if (d.cgroup_watch_fd >= 0)
		close(d.cgroup_watch_fd);
	rg_metrics_free(d.metrics);
	rg_reconciler_free(d.rec);
	rg_h2_closer_free(d.closer);
	if (d.admin_fd >= 0) {
		close(d.admin_fd);
		unlink(cfg.admin_socket);
	}
	rowgate__destroy(d.skel);
	rg_limit_list_free(&d.limits);
	rgd_config_free(&cfg);
	return ret;
}
