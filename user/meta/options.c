// SPDX-License-Identifier: MIT
/* rowgate-meta's command line: usage with every default, and --listen. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/limits.h"
#include "../lib/log.h"
#include "rowgate_version.h"
#include "meta.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rowgate-meta [OPTIONS]\n"
		"\n"
		"rowgate's quota allocator (the Metasrv role).  Keeps the cluster-wide\n"
		"per-database limits (rows/s) and answers the heartbeats of every rowgated\n"
		"(started with --meta) with each frontend's share of each limit.\n"
		"HTTP/JSON on --listen; see docs/distributed.md.  Prometheus metrics at\n"
		"/metrics on the same listener, without the token (docs/metrics.md).\n"
		"\n"
		"Options:\n"
		"      --listen ADDR:PORT        where to serve HTTP (default %s;\n"
		"                                [::1]:PORT for IPv6)\n"
		"      --advertise URL           this replica's URL, for redirects from the\n"
		"                                other replicas (default http://LISTEN, or\n"
		"                                https:// with --tls-cert); clients follow a\n"
		"                                redirect only to a URL they list\n"
		"      --etcd URL[,URL...]       keep limits in etcd and elect a leader among\n"
		"                                replicas (etcd v3 JSON gateway, e.g.\n"
		"                                http://127.0.0.1:2379); several members are\n"
		"                                tried in turn; default: no etcd\n"
		"      --etcd-ca PATH            CA (PEM) that verifies https:// etcd members\n"
		"                                (default: the system's)\n"
		"      --etcd-cert PATH          client certificate (PEM) for etcd\n"
		"                                (its --client-cert-auth)\n"
		"      --etcd-key PATH           the key of --etcd-cert (PEM)\n"
		"      --etcd-user NAME          authenticate to etcd as NAME (etcd's auth\n"
		"                                enabled; a role with readwrite on the prefix)\n"
		"      --etcd-password-file PATH NAME's password (the file's first line)\n"
		"      --etcd-prefix PREFIX      key prefix in etcd (default %s)\n"
		"      --state-file PATH         limits file without etcd (default %s)\n"
		"      --heartbeat-interval MS   interval told to frontends (default %llu)\n"
		"      --lease MS                validity of a quota grant (default %llu)\n"
		"      --learning MS             learning phase of a new leader: adopt the\n"
		"                                quotas frontends hold (default: the lease)\n"
		"      --election-ttl S          etcd lease of the leader key, seconds\n"
		"                                (default %d; etcd rounds up to its minimum)\n"
		"      --strategy NAME           waterfill|greptime-doc|even|doorman-prop|\n"
		"                                doorman-fair (default waterfill)\n"
		"      --agent-token-file PATH   the frontends' token (the file's first line;\n"
		"                                rowgated's --token-file), required as\n"
		"                                \"Authorization: Bearer TOKEN\" on heartbeats\n"
		"                                and reads (limits, status); it cannot change\n"
		"                                a limit (403)\n"
		"      --admin-token-file PATH   the administrators' token (what rowgatectl\n"
		"                                reads with --token-file), required to change\n"
		"                                limits, accepted wherever the agent token is\n"
		"      --tls-cert PATH           serve HTTPS: this replica's certificate (PEM,\n"
		"                                intermediates after it); needs --tls-key\n"
		"      --tls-key PATH            the certificate's key (PEM, unencrypted)\n"
		"      --tls-client-ca PATH      require a client certificate signed by one of\n"
		"                                these CAs (PEM) on every request, /metrics\n"
		"                                and /v1/health included (403 otherwise)\n"
		"      --token-file PATH         legacy form: one token for agents and\n"
		"                                administrators alike (any holder may change\n"
		"                                limits); /v1/health and /metrics never need one\n"
		"  -l, --log-level LEVEL         %s (default notice)\n"
		"  -h, --help                    this help\n"
		"  -V, --version                 version\n"
		"\n"
		"Examples:\n"
		"  rowgate-meta --listen 127.0.0.1:4100 --state-file /var/lib/rowgate/meta.json\n"
		"  rowgate-meta --listen 10.0.0.5:4100 \\\n"
		"               --etcd https://10.0.0.7:2379,https://10.0.0.8:2379 \\\n"
		"               --etcd-ca /etc/rowgate/etcd-ca.pem --etcd-user rowgate \\\n"
		"               --etcd-password-file /etc/rowgate/etcd.password \\\n"
		"               --agent-token-file /etc/rowgate/agent.token \\\n"
		"               --admin-token-file /etc/rowgate/admin.token\n"
		"  rowgatectl --meta http://127.0.0.1:4100 --token-file /etc/rowgate/admin.token \\\n"
		"             limit set logs 10000\n"
		"  curl -s http://127.0.0.1:4100/v1/health\n"
		"  curl -s http://127.0.0.1:4100/metrics\n",
		RG_META_LISTEN_DEFAULT, RG_META_ETCD_PREFIX, RG_META_STATE_DEFAULT,
		RG_META_HEARTBEAT_INTERVAL_MS_DEFAULT, RG_ALLOC_LEASE_MS_DEFAULT,
		RG_META_ELECTION_TTL_S_DEFAULT, RG_LOG_LEVELS);
}

static int parse_ms(const char *opt, const char *s, __u64 *out, __u64 min, __u64 max)
{
	char err[160];

	if (rg_parse_limit(s, out, err, sizeof(err)) || *out < min || *out > max) {
		pr_err("%s '%s': expected a whole number from %llu to %llu", opt, s,
		       (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

static void meta_config_defaults(struct meta_config *cfg)
{
	cfg->listen = RG_META_LISTEN_DEFAULT;
	cfg->etcd_prefix = RG_META_ETCD_PREFIX;
	cfg->state_file = RG_META_STATE_DEFAULT;
	cfg->heartbeat_interval_ms = RG_META_HEARTBEAT_INTERVAL_MS_DEFAULT;
	cfg->lease_ms = RG_ALLOC_LEASE_MS_DEFAULT;
	cfg->learning_ms = RG_U64_MAX; /* not given: the lease (meta_check_config) */
	cfg->election_ttl_s = RG_META_ELECTION_TTL_S_DEFAULT;
	cfg->strategy = RG_ALLOC_WATERFILL;
}

/* The options that only make sense together, and the defaults that
 * depend on other options. */
static int meta_check_config(struct meta_config *cfg)
{
	if (cfg->token_file && (cfg->agent_token_file || cfg->admin_token_file)) {
		pr_err("--token-file is the legacy form of --agent-token-file and "
		       "--admin-token-file together: give either it or them");
		return -EINVAL;
	}
	if (cfg->token_file)
		cfg->agent_token_file = cfg->admin_token_file = cfg->token_file;
	/* heartbeats behind a token but limit changes open to anyone would be
	 * the opposite of the point */
	if (cfg->agent_token_file && !cfg->admin_token_file) {
		pr_err("--agent-token-file needs --admin-token-file: without it anyone "
		       "could change the cluster's limits");
		return -EINVAL;
	}
	if (!cfg->tls_cert != !cfg->tls_key) {
		pr_err("--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (cfg->tls_client_ca && !cfg->tls_cert) {
		pr_err("--tls-client-ca needs --tls-cert and --tls-key: client certificates "
		       "are a TLS matter");
		return -EINVAL;
	}
	if (!cfg->etcd_url && (cfg->etcd_ca || cfg->etcd_cert || cfg->etcd_key || cfg->etcd_user ||
			       cfg->etcd_password_file)) {
		pr_err("--etcd-ca, --etcd-cert, --etcd-key, --etcd-user and "
		       "--etcd-password-file need --etcd");
		return -EINVAL;
	}
	if (!cfg->etcd_user != !cfg->etcd_password_file) {
		pr_err("--etcd-user and --etcd-password-file go together");
		return -EINVAL;
	}
	if (cfg->etcd_key && !cfg->etcd_cert) {
		pr_err("--etcd-key needs --etcd-cert");
		return -EINVAL;
	}
	if (cfg->learning_ms == RG_U64_MAX)
		cfg->learning_ms = cfg->lease_ms;
	if (cfg->heartbeat_interval_ms >= cfg->lease_ms)
		pr_warn("--heartbeat-interval %llu ms >= --lease %llu ms: grants expire between "
			"heartbeats and frontends fall back to the full limit",
			(unsigned long long)cfg->heartbeat_interval_ms,
			(unsigned long long)cfg->lease_ms);
	if (!cfg->advertise) {
		snprintf(cfg->advertise_buf, sizeof(cfg->advertise_buf), "%s://%s",
			 cfg->tls_cert ? "https" : "http", cfg->listen);
		cfg->advertise = cfg->advertise_buf;
	}
	return 0;
}

/* getopt codes of the long-only options */
enum {
	OPT_LISTEN = 256,
	OPT_ADVERTISE,
	OPT_ETCD,
	OPT_ETCD_PREFIX,
	OPT_STATE,
	OPT_HB,
	OPT_LEASE,
	OPT_LEARNING,
	OPT_TTL,
	OPT_STRATEGY,
	OPT_TOKEN,
	OPT_AGENT_TOKEN,
	OPT_ADMIN_TOKEN,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_CLIENT_CA,
	OPT_ETCD_CA,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_ETCD_USER,
	OPT_ETCD_PASSWORD,
};
static const struct option meta_opts[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "advertise", required_argument, NULL, OPT_ADVERTISE },
	{ "etcd", required_argument, NULL, OPT_ETCD },
	{ "etcd-prefix", required_argument, NULL, OPT_ETCD_PREFIX },
	{ "state-file", required_argument, NULL, OPT_STATE },
	{ "heartbeat-interval", required_argument, NULL, OPT_HB },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "learning", required_argument, NULL, OPT_LEARNING },
	{ "election-ttl", required_argument, NULL, OPT_TTL },
	{ "strategy", required_argument, NULL, OPT_STRATEGY },
	{ "token-file", required_argument, NULL, OPT_TOKEN },
	{ "agent-token-file", required_argument, NULL, OPT_AGENT_TOKEN },
	{ "admin-token-file", required_argument, NULL, OPT_ADMIN_TOKEN },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-client-ca", required_argument, NULL, OPT_TLS_CLIENT_CA },
	{ "etcd-ca", required_argument, NULL, OPT_ETCD_CA },
	{ "etcd-cert", required_argument, NULL, OPT_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, OPT_ETCD_KEY },
	{ "etcd-user", required_argument, NULL, OPT_ETCD_USER },
	{ "etcd-password-file", required_argument, NULL, OPT_ETCD_PASSWORD },
	{ "log-level", required_argument, NULL, 'l' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{},
};

int meta_parse_args(int argc, char **argv, struct meta_config *cfg)
{
	enum rg_log_level level;
	int opt, s;

	meta_config_defaults(cfg);
	while ((opt = getopt_long(argc, argv, "l:hV", meta_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN:
			cfg->listen = optarg;
			break;
		case OPT_ADVERTISE:
			cfg->advertise = optarg;
			break;
		case OPT_ETCD:
			cfg->etcd_url = optarg;
			break;
		case OPT_ETCD_PREFIX:
			cfg->etcd_prefix = optarg;
			break;
		case OPT_STATE:
			cfg->state_file = optarg;
			break;
		case OPT_HB:
			if (parse_ms("--heartbeat-interval", optarg, &cfg->heartbeat_interval_ms,
				     10, 3600000))
				return -EINVAL;
			break;
		case OPT_LEASE:
			if (parse_ms("--lease", optarg, &cfg->lease_ms, 10, 86400000))
				return -EINVAL;
			break;
		case OPT_LEARNING:
			if (parse_ms("--learning", optarg, &cfg->learning_ms, 0, 86400000))
				return -EINVAL;
			break;
		case OPT_TTL:
			if (parse_ms("--election-ttl", optarg, &cfg->election_ttl_s, 1, 3600))
				return -EINVAL;
			break;
		case OPT_STRATEGY:
			s = rg_alloc_strategy_parse(optarg);
			if (s < 0) {
				pr_err("--strategy '%s': expected waterfill, greptime-doc, even, "
				       "doorman-prop or doorman-fair",
				       optarg);
				return -EINVAL;
			}
			cfg->strategy = (enum rg_alloc_strategy)s;
			break;
		case OPT_TOKEN:
			cfg->token_file = optarg;
			break;
		case OPT_AGENT_TOKEN:
			cfg->agent_token_file = optarg;
			break;
		case OPT_ADMIN_TOKEN:
			cfg->admin_token_file = optarg;
			break;
		case OPT_TLS_CERT:
			cfg->tls_cert = optarg;
			break;
		case OPT_TLS_KEY:
			cfg->tls_key = optarg;
			break;
		case OPT_TLS_CLIENT_CA:
			cfg->tls_client_ca = optarg;
			break;
		case OPT_ETCD_CA:
			cfg->etcd_ca = optarg;
			break;
		case OPT_ETCD_CERT:
			cfg->etcd_cert = optarg;
			break;
		case OPT_ETCD_KEY:
			cfg->etcd_key = optarg;
			break;
		case OPT_ETCD_USER:
			cfg->etcd_user = optarg;
			break;
		case OPT_ETCD_PASSWORD:
			cfg->etcd_password_file = optarg;
			break;
		case 'l':
			if (rg_log_parse_level(optarg, &level)) {
				pr_err("--log-level '%s': expected %s", optarg, RG_LOG_LEVELS);
				return -EINVAL;
			}
			rg_log_set_level(level);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("rowgate-meta %s (libmicrohttpd %s)\n", RG_VERSION,
			       MHD_get_version());
			exit(0);
		default:
			fprintf(stderr, "Try 'rowgate-meta --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; try 'rowgate-meta --help'", argv[optind]);
		return -EINVAL;
	}
	return meta_check_config(cfg);
}

/* "ADDR:PORT" or "[V6ADDR]:PORT" into a socket address. */
int meta_parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*ai;
	size_t hl;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - s - 1);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		port = close + 2;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		port = colon + 1;
	}
	host[hl] = 0;
	if (getaddrinfo(host, port, &hints, &ai))
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}
