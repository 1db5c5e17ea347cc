// SPDX-License-Identifier: GPL-2.0
/* The wire tables and what is expanded from them: every counter struct is
 * covered field by field by its descriptors, JSON keys and series names are
 * unique and well formed, the JSON carries every field with its value, and
 * the protocol table's ids, names and payload mapping agree. */
#include <regex.h>
#include <string.h>

#include "check.h"
#include "../../user/lib/counters.h"
#include "../../user/decode/count.h"
#include "../../user/lib/state.h"

static const struct {
	const char *name;
	const struct rg_counter_table *t;
	size_t size;
} tables[] = {
	{ "db_stats", &rg_db_stats_table, sizeof(struct rg_db_stats) },
	{ "proto_stats", &rg_proto_stats_table, sizeof(struct rg_proto_stats) },
	{ "global_stats", &rg_global_stats_table, sizeof(struct rg_global_stats) },
	{ "h2_stats", &rg_h2_stats_table, sizeof(struct rg_h2_stats) },
	{ "udp_stats", &rg_udp_stats_table, sizeof(struct rg_udp_stats) },
	{ "xdp_stats", &rg_xdp_stats_table, sizeof(struct rg_xdp_stats) },
	{ "guard_stats", &rg_guard_stats_table, sizeof(struct rg_guard_stats) },
	{ "reconcile_stats", &rg_reconcile_stats_table, sizeof(struct rg_reconcile_stats) },
	{ "verdict_stats", &rg_verdict_stats_table, sizeof(struct rg_verdict_stats) },
	{ "h2_close_stats", &rg_h2_close_stats_table, sizeof(struct rg_h2_close_stats) },
	{ "agent_stats", &rg_agent_stats_table, sizeof(struct rg_agent_stats) },
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static void test_layout(void)
{
	for (size_t i = 0; i < NTABLES; i++) {
		const struct rg_counter_table *t = tables[i].t;

		CHECK(t->n * sizeof(__u64) == tables[i].size, "%s: %zu descriptors for %zu bytes",
		      tables[i].name, t->n, tables[i].size);
		for (size_t k = 0; k < t->n; k++)
			CHECK(t->d[k].off == k * sizeof(__u64), "%s: %s at offset %zu",
			      tables[i].name, t->d[k].json, t->d[k].off);
	}
}

static void test_names(void)
{
	regex_t series, key;

	regcomp(&series, "^rowgate_[a-z][a-z0-9_]*[a-z0-9]$", REG_EXTENDED | REG_NOSUB);
	regcomp(&key, "^[a-z][a-z0-9_]*$", REG_EXTENDED | REG_NOSUB);
	for (size_t i = 0; i < NTABLES; i++) {
		const struct rg_counter_table *t = tables[i].t;

		for (size_t k = 0; k < t->n; k++) {
			const struct rg_counter_desc *d = &t->d[k];
			size_t len = strlen(d->series);
			bool total = len > 6 && !strcmp(d->series + len - 6, "_total");

			CHECK(!regexec(&series, d->series, 0, NULL, 0), "series name %s", d->series);
			CHECK(!regexec(&key, d->json, 0, NULL, 0), "JSON key %s", d->json);
			CHECK(d->help && d->help[0] && !strchr(d->help, '\n'), "HELP of %s",
			      d->series);
			CHECK(total == (d->kind == RG_KIND_COUNTER),
			      "%s: counters end in _total, gauges do not", d->series);
			for (size_t k2 = 0; k2 < k; k2++)
				CHECK(strcmp(d->json, t->d[k2].json), "%s: JSON key %s twice",
				      tables[i].name, d->json);
			/* one /metrics page holds every table: names unique in all */
			for (size_t i2 = 0; i2 <= i; i2++)
				for (size_t k2 = 0; k2 < (i2 == i ? k : tables[i2].t->n); k2++)
					CHECK(strcmp(d->series, tables[i2].t->d[k2].series),
					      "series %s twice", d->series);
		}
	}
	regfree(&series);
	regfree(&key);
}

static void test_json(void)
{
	for (size_t i = 0; i < NTABLES; i++) {
		const struct rg_counter_table *t = tables[i].t;
		__u64 st[64];
		json_t *o;

		CHECK(t->n <= sizeof(st) / sizeof(st[0]), "%s fits the test buffer", tables[i].name);
		if (t->n > sizeof(st) / sizeof(st[0]))
			continue;
		o = json_object();
		for (size_t k = 0; k < t->n; k++)
			st[k] = 1000 * (i + 1) + k;
		st[t->n - 1] = RG_U64_MAX; /* above 2^63: a decimal string */
		CHECK(rg_counters_json(o, t, st) == 0, "%s to JSON", tables[i].name);
		CHECK(json_object_size(o) == t->n, "%s: %zu keys", tables[i].name,
		      json_object_size(o));
		for (size_t k = 0; k < t->n; k++) {
			json_t *v = json_object_get(o, t->d[k].json);
			__u64 got = 0;

			CHECK(v && rg_json_get_u64(v, &got) == 0 && got == st[k], "%s.%s", tables[i].name,
			      t->d[k].json);
		}
		json_decref(o);
	}
}

static void test_protocols(void)
{
	CHECK(rg_protocol_name(RG_PROTO_NONE) == NULL, "NONE has no name");
	CHECK(rg_protocol_name(RG_PROTO_MAX) == NULL, "past the table: no name");
	CHECK(rg_payload_of(RG_PROTO_NONE) == RG_PAYLOAD_INVALID, "NONE has no payload");
	CHECK(rg_protocol_in_kernel(RG_PROTO_LINE), "line protocol is counted in the kernel");
	for (__u32 p = RG_PROTO_NONE + 1; p < RG_PROTO_MAX; p++) {
		const char *name = rg_protocol_name(p);

		CHECK(name != NULL, "protocol %u has a name", p);
		if (!name)
			continue;
		CHECK(p == RG_PROTO_LINE || !rg_protocol_in_kernel(p), "%s is reconciled", name);
		CHECK(!strcmp(rg_payload_protocol_name(rg_payload_of(p)), name),
		      "%s: the payload of the same name", name);
		CHECK(rg_payload_protocol_parse(name) == rg_payload_of(p), "%s parses back", name);
		for (__u32 q = RG_PROTO_NONE + 1; q < p; q++)
			CHECK(strcmp(name, rg_protocol_name(q)), "name %s twice", name);
	}
	/* wire ids live in pinned maps: they never move */
	CHECK_EQ_U64(RG_PROTO_LINE, 1, "line id");
	CHECK_EQ_U64(RG_PROTO_OPENTSDB, 9, "opentsdb id");
	CHECK_EQ_U64(RG_PROTO_GREPTIME_GRPC, 10, "greptime-grpc id");
	CHECK_EQ_U64(RG_PROTO_ARROW_FLIGHT, 11, "arrow-flight id");
	CHECK_EQ_U64(RG_PROTO_MAX, 12, "protocols");
}

/* The profiles' server timers (docs/server-profiles.md#server-timeouts) and
 * the point from which a rejection closes ahead of them: half the timer. */
static void test_server_timers(void)
{
	const __u64 s = RG_NSEC_PER_SEC;

	CHECK_EQ_U64(rg_profile_header_timeout_s(RG_PROFILE_VICTORIAMETRICS), 5, "vm header");
	CHECK_EQ_U64(rg_profile_idle_timeout_s(RG_PROFILE_VICTORIAMETRICS), 60, "vm idle");
	CHECK_EQ_U64(rg_profile_header_timeout_s(RG_PROFILE_PROMETHEUS), 300, "prometheus");
	CHECK_EQ_U64(rg_profile_idle_timeout_s(RG_PROFILE_LOKI), 120, "loki idle");
	CHECK_EQ_U64(rg_profile_header_timeout_s(RG_PROFILE_INFLUXDB), 0, "influxd: none");
	CHECK_EQ_U64(rg_profile_idle_timeout_s(RG_PROFILE_GREPTIMEDB), 0, "greptimedb: none");
	CHECK(!rg_server_timer_near(UINT64_MAX, 0), "0: never");
	CHECK(!rg_server_timer_near(5 * s / 2 - 1, 5), "5 s: keep-alive before 2.5 s");
	CHECK(rg_server_timer_near(5 * s / 2, 5), "5 s: close from 2.5 s");
	CHECK(rg_server_timer_near(UINT64_MAX, RG_TIMEOUT_MAX_S), "largest timer, no overflow");
	CHECK(!rg_server_timer_near((__u64)RG_TIMEOUT_MAX_S * s / 2 - 1, RG_TIMEOUT_MAX_S),
	      "largest timer: keep-alive before half");
	CHECK_EQ_U64(sizeof(struct rg_port), 8, "ports value (wire ABI)");
}

int main(void)
{
	test_layout();
	test_names();
	test_json();
	test_protocols();
	test_server_timers();
	return check_report("test_tables");
}
