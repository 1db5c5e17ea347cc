/* SPDX-License-Identifier: GPL-2.0 */
/* rowgated's own state, shared by its files: the options (options.c,
 * routes.c), the daemon (main.c), and what each file offers the others:
 * loading and the pin checks (load.c), attaching and keeping attached
 * (attach.c), the route and port maps (routes.c), limits and the admin
 * socket's operations (admin_ops.c).
 */
#ifndef ROWGATE_USER_ROWGATED_ROWGATED_H
#define ROWGATE_USER_ROWGATED_ROWGATED_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "rowgate/abi.h"
#include "rowgate/guard.h"
#include "../lib/admin.h"
#include "../lib/log.h"
#include "../lib/state.h"
#include "../lib/xdp.h"
#include "adopt.h"

#define RG_DEFAULT_PORT     4000
#define RGD_CONFIG_DEFAULT  "/etc/rowgate/rowgated.conf"
#define RG_POLL_INTERVAL_MS 1000
#define RG_GRPC_CLOSE_GRACE_MS 2000 /* --grpc-close-grace default */
#define RG_ADOPT_GRACE_S       5    /* --adopt-grace default */
#define RG_ADOPT_GRACE_MAX_S   3600
#define RG_PARKED_STREAMS_MAX  (1U << 24) /* --grpc-parked-streams */
#define RG_GRPC_CLOSE_GRACE_MAX_MS 3600000
/* --grpc-max-streams default: refusals of more streams in one read trip
 * h2's limit of 20 reset streams not yet accepted (tonic, GreptimeDB) and
 * the verdict's 16 resets per skb (docs/grpc.md#h2-max-streams) */
#define RG_GRPC_MAX_STREAMS 16
#define RG_GC_INTERVAL_MS   10000 /* state of closed adopted connections */
#define RG_CONNS_FULL_LOG_MS 10000 /* at most one connection-table alarm per 10 s */
#define RG_MAX_CONNS_LIMIT  (1U << 22) /* --max-conns: 4 Mi connections */

struct route_opt {
	char path[RG_PATH_MAX];
	struct rg_route route;
};

struct config {
	__u32 ports[RG_MAX_PORTS];
	struct rg_port port_cfg[RG_MAX_PORTS]; /* profile and flags of ports[i] */
	int nports;
	__u32 allow_unparsed[RG_MAX_PORTS]; /* --allow-unparsed, applied after parsing */
	int nallow_unparsed;
	__u32 grpc[RG_MAX_PORTS]; /* --grpc, applied after parsing */
	int ngrpc;
	__u32 no_grpc[RG_MAX_PORTS]; /* --no-grpc, applied after the defaults */
	int nno_grpc;
	struct server_timeout_opt {
		__u32 port;
		__u16 header_s, idle_s;
	} server_timeouts[RG_MAX_PORTS]; /* --server-timeout, applied after parsing */
	int nserver_timeouts;
	const char *cgroup;
	char cgroup_buf[PATH_MAX];
	const char *bpffs;
	const char *admin_socket;
	gid_t admin_group; /* RG_ADMIN_ROOT_ONLY: no --admin-group */
	const char *state_file;
	bool foreground;
	__u32 max_conns;       /* connection table entries, set before load */
	bool conns_full_close; /* --conns-full=fail-closed */
	__u32 adopt_grace_s;   /* --adopt-grace, 0 = off */
	bool egress_off;       /* --egress off */
	bool grpc_keep;        /* --grpc-reject keep */
	__u64 copy_memory_bytes; /* --copy-memory */
	__u32 copy_expiry_s;     /* --copy-expiry */
	__u32 grpc_close_grace_ms; /* --grpc-close-grace, 0 = off */
	__u32 grpc_max_streams;	   /* --grpc-max-streams, 0 = off */
	__u32 grpc_parked_streams; /* --grpc-parked-streams: h2_parked entries */
	bool grpc_uncounted_pass;  /* --grpc-uncounted pass */
	bool grpc_otlp_count;      /* --grpc-otlp count */
	bool grpc_flight_count;    /* --grpc-flight count */
	bool grpc_compressed_debt; /* --grpc-compressed debt */
	bool cleanup;
	const char *metrics_addr; /* /metrics listener, NULL = off */
	const char *xdp_iface;    /* UDP path: interface, NULL = off */
	struct rg_udp_mapping udp[RG_MAX_UDP_PORTS];
	int nudp;
	const char *meta_url;   /* distributed mode: rowgate-meta URL(s) */
	const char *node_id;
	char node_id_buf[64];
	const char *token_file;
	const char *meta_ca; /* https:// --meta: CA, client certificate, key */
	const char *meta_cert;
	const char *meta_key;
	struct route_opt routes[RG_MAX_ROUTES];
	int nroutes;
	enum rg_log_level log_level;
	bool log_level_set;	 /* --log-level given */
	bool check_only;	 /* --check-config */
	const char *config_file; /* the file read, NULL: none */
	char **owned;		 /* the file's strings, freed with the config */
	size_t nowned;
};

struct daemon {
	struct config *cfg;
	struct rowgate *skel;
	struct rg_limit_list limits;
	int lock_fd;
	int admin_fd;
	struct rg_metrics *metrics;
	struct rg_reconciler *rec;
	struct rg_h2_closer *closer; /* resets after a kernel GOAWAY */
	struct rg_xdp *xdp;
	struct rg_meta_agent *agent; /* NULL in standalone mode */
	bool detached; /* rowgatectl detach: enforcement removed on request */
	bool cgroup_gone; /* the guarded cgroup is absent (said once) */
	int cgroup_watch_fd; /* inotify on its parent, -1 = none */
	struct rg_guard guard; /* what the pinned guard record says */
	int argc;	       /* the command line, read again on SIGHUP */
	char **argv;
};

/* options.c: the config file and the command line into cfg; exits on
 * --help and --version.  0 or negative errno (logged). */
int rgd_parse_args(int argc, char **argv, struct config *cfg);
void rgd_config_free(struct config *cfg);
/* SIGHUP: read both again; apply routes, log level and the metrics
 * address, log what waits for a restart.  0 or negative errno (logged). */
int rgd_reload(struct daemon *d, int argc, char **argv);

/* routes.c: one --route PATH=PROTO (0 or negative errno), a routes file
 * (logged), and the ports and routes maps written from cfg. */
int rgd_parse_route(const char *s, struct route_opt *r);
int rgd_load_routes_file(const char *path, struct config *cfg);
int rgd_populate_ports_routes(struct daemon *d);
int rgd_populate_h2_routes(struct daemon *d);

/* load.c: open, check the pins and load the BPF object; --cleanup. */
int rgd_load(struct daemon *d);
void rgd_purge_all(const char *dir);

/* attach.c: attach everything (0 or negative errno), put back what went
 * missing, and the inotify watch on the cgroup's parent (-1: none). */
int rgd_attach_all(struct daemon *d);
void rgd_guard_check(struct daemon *d);
int rgd_watch_cgroup_parent(const char *cgroup);
struct rg_adopt_maps rgd_adopt_maps(struct daemon *d);

/* events.c: fail-open and fail-closed events from the counters, at most
 * once a second (call it every loop); also writes the rate-limited
 * events' suppressed counts (rg_log_tick). */
void rgd_fail_events(struct daemon *d);

/* admin_ops.c: the state file's limits into the maps, the meta agent's
 * writes, and what the admin socket serves. */
int rgd_sync_limits_to_maps(struct daemon *d);
int rgd_meta_apply(void *ctx, const struct rg_db_key *db, __u64 limit, __u64 quota);
extern const struct rg_admin_ops rgd_admin_ops;

#endif /* ROWGATE_USER_ROWGATED_ROWGATED_H */
