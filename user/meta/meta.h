/* SPDX-License-Identifier: GPL-2.0 */
/* What rowgate-meta's files share: its defaults, its configuration and
 * state (struct meta), the command line (options.c) and the HTTP API
 * (api.c) that server.c starts, with the leadership and the main loop.
 */
#ifndef ROWGATE_USER_META_META_H
#define ROWGATE_USER_META_META_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "../lib/meta_proto.h"
#include "cluster.h"
#include "etcd.h"

#define RG_META_LISTEN_DEFAULT     "127.0.0.1:4100"
#define RG_META_STATE_DEFAULT      "/var/lib/rowgate/meta-limits.json"
#define RG_META_ETCD_PREFIX        "/rowgate/"
/* etcd's smallest lease is 2 s with its default election timeout; a dead
 * leader is replaced within this plus one election tick. */
#define RG_META_ELECTION_TTL_S_DEFAULT 2
/* Election steps (campaign / check) this often, in ms. */
#define RG_META_ELECTION_TICK_MS 200
/* Concurrent HTTP connections: one per frontend and a few admins. */
#define RG_META_CONNECTION_LIMIT 4096

struct meta_config {
	const char *listen;
	const char *advertise;
	char advertise_buf[128];
	const char *etcd_url; /* URL[,URL...] */
	const char *etcd_ca;
	const char *etcd_cert;
	const char *etcd_key;
	const char *etcd_user;
	const char *etcd_password_file;
	const char *etcd_prefix;
	const char *state_file;
	const char *token_file;       /* legacy: one token for agents and admins */
	const char *agent_token_file; /* heartbeats and reads */
	const char *admin_token_file; /* limit changes; also accepted as an agent's */
	const char *tls_cert;      /* HTTPS: certificate chain and key (PEM) */
	const char *tls_key;
	const char *tls_client_ca; /* require client certificates it signed */
	__u64 heartbeat_interval_ms;
	__u64 lease_ms;
	__u64 learning_ms; /* RG_U64_MAX = same as the lease */
	__u64 election_ttl_s;
	enum rg_alloc_strategy strategy;
};

struct meta {
	struct meta_config cfg;
	pthread_mutex_t lock; /* everything below */
	struct rg_cluster cl;
	bool use_etcd;
	struct rg_etcd etcd;
	bool leader;
	char leader_url[256]; /* "" when unknown */
	__u64 leader_since_ns;
	/* "" = not required.  An admin token also passes where an agent's
	 * does; options.c refuses an agent token without an admin token. */
	char agent_token[RG_META_TOKEN_MAX];
	char admin_token[RG_META_TOKEN_MAX];
	__u64 unauthorized;
	__u64 forbidden; /* an agent's token on an admin endpoint */
	__u64 no_client_cert; /* refused: no valid client certificate */
	__u64 redirects;
	__u64 elections_won;
	__u64 etcd_errors; /* atomic: the election runs outside the lock */
};

/* options.c: the command line into cfg, exits on --help and --version
 * (0 or negative errno, logged); --listen's HOST:PORT (0 or -EINVAL). */
int meta_parse_args(int argc, char **argv, struct meta_config *cfg);
int meta_parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6);

/* api.c: libmicrohttpd's request and completion callbacks; cls is the
 * struct meta. */
enum MHD_Result meta_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				const char *method, const char *version, const char *upload_data,
				size_t *upload_size, void **con_cls);
void meta_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		       enum MHD_RequestTerminationCode toe);
/* api.c: with --tls-client-ca, whether conn presented a certificate that
 * chains to it (why says what is wrong otherwise). */
bool meta_client_cert_ok(struct MHD_Connection *conn, char *why, size_t len);
/* metrics.c: the /metrics page (malloc'd; NULL on ENOMEM), m->lock held. */
char *meta_metrics_render(struct meta *m, __u64 now);
/* A failed etcd call, for rowgate_meta_etcd_errors_total. */
static inline void meta_etcd_error(struct meta *m)
{
	__atomic_fetch_add(&m->etcd_errors, 1, __ATOMIC_RELAXED);
}

/* Percent-decoding of URLs that keeps %00 as it is (MHD's unescape
 * callback). */
size_t meta_unescape_keep_nul(void *cls, struct MHD_Connection *conn, char *s);

#endif /* ROWGATE_USER_META_META_H */
