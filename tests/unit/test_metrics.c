// SPDX-License-Identifier: GPL-2.0
/* /metrics of both daemons without a kernel: the listen addresses --metrics
 * takes (and refuses), the text format's escaping and counter tables, and
 * rowgate-meta's page from a cluster (leader and follower). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../../user/lib/prom.h"
#include "../../user/meta/meta.h"
#include "rowgate_version.h"

static void test_listen_addr(void)
{
	static const char *const bad[] = {
		"9464",		/* no port separator */
		":",		/* no port */
		":0",		/* port 0 */
		":65536",	/* past the range */
		":94x4",	/* not a number */
		":-1",		/* signed */
		"::1:9464",	/* IPv6 without brackets */
		"[::1]9464",	/* bracket not followed by ':' */
		"[::1",		/* no closing bracket */
		"[localhost]:9464", /* brackets hold an IPv6 address only */
		"127.0.0.1:",	/* empty port */
	};
	struct rg_listen_addr la;
	char err[300];

	CHECK(rg_listen_addr_parse(":9464", &la, err, sizeof(err)) == 0 && la.any &&
		      la.port == 9464,
	      ":PORT is every address");
	CHECK(rg_listen_addr_parse("127.0.0.1:9464", &la, err, sizeof(err)) == 0 && !la.any &&
		      la.ss.ss_family == AF_INET && la.port == 9464 &&
		      ((struct sockaddr_in *)&la.ss)->sin_port == htons(9464) &&
		      ((struct sockaddr_in *)&la.ss)->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "IPv4: %s", err);
	CHECK(rg_listen_addr_parse("[::1]:9464", &la, err, sizeof(err)) == 0 && !la.any &&
		      la.ss.ss_family == AF_INET6 &&
		      ((struct sockaddr_in6 *)&la.ss)->sin6_port == htons(9464) &&
		      IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&la.ss)->sin6_addr),
	      "IPv6: %s", err);
	/* a host name: /etc/hosts names localhost on every Debian */
	CHECK(rg_listen_addr_parse("localhost:65535", &la, err, sizeof(err)) == 0 && !la.any &&
		      la.port == 65535 &&
		      (la.ss.ss_family == AF_INET ?
			       ((struct sockaddr_in *)&la.ss)->sin_addr.s_addr ==
				       htonl(INADDR_LOOPBACK) :
			       IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&la.ss)->sin6_addr)),
	      "localhost: %s", err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK(rg_listen_addr_parse(bad[i], &la, err, sizeof(err)) == -EINVAL && err[0],
		      "'%s' refused with a reason", bad[i]);
	}
}

static void test_text(void)
{
	struct rg_agent_stats as = { .heartbeats_ok = 5, .fallback = 1 };
	struct rg_prom t;
	char *text;

	CHECK(rg_prom_init(&t) == 0, "init");
	rg_prom_printf(&t, "x{");
	rg_prom_label(&t, "db", "a\"b\\c\nd");
	rg_prom_printf(&t, "} 1\n");
	rg_prom_build_info(&t, "1.2.3-g\"x");
	rg_prom_table(&t, &rg_agent_stats_table, &as);
	for (int i = 0; i < 2000; i++) /* past the first buffer */
		rg_prom_sample(&t, "rowgate_filler", (unsigned long long)i);
	text = rg_prom_finish(&t);
	CHECK(text != NULL, "text");
	if (!text)
		return;
	CHECK(strstr(text, "x{db=\"a\\\"b\\\\c\\nd\"} 1\n") == text, "label escaped: %.40s", text);
	CHECK(strstr(text, "# TYPE rowgate_build_info gauge\n"
			   "rowgate_build_info{version=\"1.2.3-g\\\"x\"} 1\n"),
	      "build_info");
	CHECK(strstr(text, "# TYPE rowgate_meta_agent_heartbeats_ok_total counter\n"
			   "rowgate_meta_agent_heartbeats_ok_total 5\n"),
	      "a counter of a table");
	CHECK(strstr(text, "# TYPE rowgate_meta_agent_fallback gauge\n"
			   "rowgate_meta_agent_fallback 1\n"),
	      "a gauge of a table");
	CHECK(strstr(text, "\nrowgate_filler 1999\n"), "grows");
	free(text);
}

static void beat(struct rg_cluster *cl, const char *node, __u64 adm, __u64 rej, __u64 now)
{
	struct rg_meta_hb_db d = { .admitted_rows_per_s = adm, .rejected_rows_per_s = rej };
	struct rg_meta_hb_req req = { .count = 1, .dbs = &d };
	struct rg_meta_hb_reply reply;
	char err[128];

	snprintf(req.node_id, sizeof(req.node_id), "%s", node);
	snprintf(d.db.name, sizeof(d.db.name), "logs");
	CHECK(rg_cluster_heartbeat(cl, &req, now, &reply, err, sizeof(err)) == 0, "hb: %s", err);
	rg_meta_hb_reply_free(&reply);
}

static void test_meta_page(void)
{
	static struct meta m;
	struct rg_db_key logs = { .name = "logs" }, metrics = { .name = "me\"trics" };
	__u64 now = 1000ULL * 1000000000ULL;
	char *text, want[256];

	CHECK(rg_cluster_init(&m.cl, RG_ALLOC_WATERFILL, 3000, 1000, 0) == 0, "cluster");
	CHECK(rg_cluster_set_limit(&m.cl, &logs, 1000) == 0, "limit");
	CHECK(rg_cluster_set_limit(&m.cl, &metrics, 7) == 0, "limit");
	rg_cluster_start_leading(&m.cl, now);
	m.leader = true;
	m.elections_won = 1;
	m.etcd_errors = 3;
	beat(&m.cl, "fe1", 300, 0, now);
	beat(&m.cl, "fe2", 900, 200, now + 1);
	text = meta_metrics_render(&m, now + 2);
	CHECK(text != NULL, "rendered");
	if (text) {
		snprintf(want, sizeof(want), "rowgate_build_info{version=\"%s\"} 1\n", RG_VERSION);
		CHECK(strstr(text, want), "build_info");
		CHECK(strstr(text, "\nrowgate_meta_leader 1\n"), "leader");
		CHECK(strstr(text, "\nrowgate_meta_etcd_errors_total 3\n"), "etcd errors");
		CHECK(strstr(text, "\nrowgate_meta_heartbeats_total 2\n"), "heartbeats");
		CHECK(strstr(text, "\nrowgate_meta_frontends_live 2\n"), "live");
		CHECK(strstr(text, "\nrowgate_meta_frontend_heartbeats_total{frontend=\"fe2\"} 1\n"),
		      "per frontend");
		CHECK(strstr(text, "\nrowgate_meta_limit_rows_per_second{db=\"logs\"} 1000\n"),
		      "limit");
		CHECK(strstr(text, "\nrowgate_meta_limit_rows_per_second{db=\"me\\\"trics\"} 7\n"),
		      "limit of an escaped name");
		CHECK(strstr(text, "\nrowgate_meta_demand_rows_per_second{db=\"logs\",frontend="
				   "\"fe2\"} 1100\n"),
		      "demand: admitted + rejected");
		CHECK(strstr(text, "\nrowgate_meta_quota_rows_per_second{db=\"logs\",frontend="
				   "\"fe1\"} "),
		      "quota");
		CHECK(strstr(text, "# TYPE rowgate_meta_quota_rows_per_second gauge\n"), "TYPE");
		free(text);
	}
	/* a follower's copy of the allocation is stale: not shown */
	m.leader = false;
	text = meta_metrics_render(&m, now + 3);
	CHECK(text && strstr(text, "\nrowgate_meta_leader 0\n") &&
		      !strstr(text, "rowgate_meta_limit_rows_per_second{"),
	      "follower");
	free(text);
	rg_cluster_free(&m.cl);
}

int main(void)
{
	test_listen_addr();
	test_text();
	test_meta_page();
	return check_report("test_metrics");
}
