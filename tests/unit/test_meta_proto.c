// SPDX-License-Identifier: MIT
/* rowgate-meta protocol messages: encode/decode round trips, validation,
 * routing, bearer tokens, token files.  Pure functions, no sockets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "../../user/lib/meta_proto.h"

static json_t *parse(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	if (!j)
		fprintf(stderr, "bad test JSON: %s\n", text);
	return j;
}

static void test_hb_request_roundtrip(void)
{
	struct rg_meta_hb_db dbs[2] = {
		{ .db = { "metrics" }, .admitted_rows_per_s = 120, .rejected_rows_per_s = 40,
		  .debt_rows = 7, .quota_rows_per_s = 150 },
		{ .db = { "logs" }, .admitted_rows_per_s = UINT64_MAX, .quota_rows_per_s = 0 },
	};
	struct rg_meta_hb_req in = { .node_id = "fe-1.a", .interval_ms = 500, .count = 2,
				     .dbs = dbs },
			      out;
	char err[256];
	json_t *j = rg_meta_hb_req_encode(&in);

	CHECK(j != NULL, "encode");
	/* u64 above 2^63-1 travels as a decimal string */
	CHECK(json_is_string(json_object_get(json_array_get(json_object_get(j, "databases"), 1),
					     "admitted_rows_per_s")),
	      "big u64 as a string");
	CHECK(rg_meta_hb_req_decode(j, &out, err, sizeof(err)) == 0, "decode: %s", err);
	CHECK(!strcmp(out.node_id, "fe-1.a"), "node id %s", out.node_id);
	CHECK_EQ_U64(out.interval_ms, 500, "interval");
	CHECK_EQ_U64(out.count, 2, "count");
	/* sorted by name on decode */
	CHECK(!strcmp(out.dbs[0].db.name, "logs"), "sorted: %s", out.dbs[0].db.name);
	CHECK_EQ_U64(out.dbs[0].admitted_rows_per_s, UINT64_MAX, "u64 max round trip");
	CHECK_EQ_U64(out.dbs[1].rejected_rows_per_s, 40, "rejected");
	CHECK_EQ_U64(out.dbs[1].debt_rows, 7, "debt");
	CHECK_EQ_U64(out.dbs[1].quota_rows_per_s, 150, "quota");
	rg_meta_hb_req_free(&out);
	json_decref(j);
}

static void test_hb_request_invalid(void)
{
	static const struct {
		const char *json;
		const char *why; /* substring of the error */
	} cases[] = {
		{ "[]", "JSON object" },
		{ "{}", "node_id" },
		{ "{\"node_id\":\"a b\"}", "node id" },
		{ "{\"node_id\":\"\"}", "empty" },
		{ "{\"node_id\":\"fe\",\"databases\":{}}", "array" },
		{ "{\"node_id\":\"fe\",\"databases\":[{\"db\":\"x\"}]}", "admitted_rows_per_s" },
		{ "{\"node_id\":\"fe\",\"databases\":[{\"db\":\"x y\",\"admitted_rows_per_s\":1,"
		  "\"rejected_rows_per_s\":0}]}",
		  "database name" },
		{ "{\"node_id\":\"fe\",\"databases\":[{\"db\":\"x\",\"admitted_rows_per_s\":-1,"
		  "\"rejected_rows_per_s\":0}]}",
		  "non-negative" },
		{ "{\"node_id\":\"fe\",\"databases\":[{\"db\":\"x\",\"admitted_rows_per_s\":\"1e3\","
		  "\"rejected_rows_per_s\":0}]}",
		  "admitted_rows_per_s" },
		{ "{\"node_id\":\"fe\",\"databases\":[{\"db\":\"x\",\"admitted_rows_per_s\":1,"
		  "\"rejected_rows_per_s\":0},{\"db\":\"greptime-x\",\"admitted_rows_per_s\":1,"
		  "\"rejected_rows_per_s\":0}]}",
		  "twice" },
	};
	struct rg_meta_hb_req req;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = parse(cases[i].json);

		err[0] = 0;
		CHECK(rg_meta_hb_req_decode(j, &req, err, sizeof(err)) < 0, "case %zu accepted", i);
		CHECK(strstr(err, cases[i].why) != NULL, "case %zu: '%s' lacks '%s'", i, err,
		      cases[i].why);
		rg_meta_hb_req_free(&req);
		json_decref(j);
	}
	/* no databases at all is a valid heartbeat */
	json_t *j = parse("{\"node_id\":\"fe\"}");

	CHECK(rg_meta_hb_req_decode(j, &req, err, sizeof(err)) == 0, "empty: %s", err);
	CHECK_EQ_U64(req.count, 0, "empty count");
	rg_meta_hb_req_free(&req);
	json_decref(j);
}

static void test_hb_reply_roundtrip(void)
{
	struct rg_meta_hb_grant g[1] = { { .db = { "logs" }, .limit_rows_per_s = 300,
					   .quota_rows_per_s = 180 } };
	struct rg_meta_hb_reply in = { .lease_ms = 3000, .heartbeat_interval_ms = 500,
				       .learning = true, .count = 1, .dbs = g },
				out;
	char err[256];
	json_t *j = rg_meta_hb_reply_encode(&in);

	CHECK(rg_meta_hb_reply_decode(j, &out, err, sizeof(err)) == 0, "decode: %s", err);
	CHECK_EQ_U64(out.lease_ms, 3000, "lease");
	CHECK_EQ_U64(out.heartbeat_interval_ms, 500, "interval");
	CHECK(out.learning, "learning");
	CHECK_EQ_U64(out.count, 1, "count");
	CHECK_EQ_U64(out.dbs[0].limit_rows_per_s, 300, "limit");
	CHECK_EQ_U64(out.dbs[0].quota_rows_per_s, 180, "quota");
	rg_meta_hb_reply_free(&out);
	json_decref(j);

	/* an error reply carries its message through */
	j = parse("{\"ok\":false,\"error\":\"no leader elected yet\"}");
	CHECK(rg_meta_hb_reply_decode(j, &out, err, sizeof(err)) < 0, "error reply");
	CHECK(strstr(err, "no leader") != NULL, "message: %s", err);
	rg_meta_hb_reply_free(&out);
	json_decref(j);
	j = parse("{\"ok\":true,\"lease_ms\":0,\"heartbeat_interval_ms\":1,\"databases\":[]}");
	CHECK(rg_meta_hb_reply_decode(j, &out, err, sizeof(err)) < 0, "zero lease refused");
	rg_meta_hb_reply_free(&out);
	json_decref(j);
}

static void test_limit_body(void)
{
	static const struct {
		const char *json;
		int ok;
		__u64 limit;
	} cases[] = {
		{ "{\"limit\":\"300\"}", 1, 300 },
		{ "{\"limit\":0}", 1, 0 },
		{ "{\"limit\":\"18446744073709551615\"}", 1, UINT64_MAX },
		{ "{\"limit\":\"18446744073709551616\"}", 0, 0 },
		{ "{\"limit\":\"1000/s\"}", 0, 0 },
		{ "{\"limit\":\"-1\"}", 0, 0 },
		{ "{\"limit\":-1}", 0, 0 },
		{ "{\"limit\":\"1e3\"}", 0, 0 },
		{ "{\"limit\":1.5}", 0, 0 },
		{ "{}", 0, 0 },
		{ "[]", 0, 0 },
	};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = parse(cases[i].json);
		__u64 v = 12345;
		int ret = rg_meta_limit_body_decode(j, &v, err, sizeof(err));

		CHECK((ret == 0) == cases[i].ok, "case %zu (%s): ret %d", i, cases[i].json, ret);
		if (cases[i].ok)
			CHECK_EQ_U64(v, cases[i].limit, cases[i].json);
		json_decref(j);
	}
}

static void test_routes(void)
{
	struct rg_meta_route r;
	char err[256];

	CHECK(rg_meta_route_path("/v1/health", &r, err, sizeof(err)) == 0 &&
		      r.ep == RG_META_EP_HEALTH,
	      "health");
	CHECK(rg_meta_route_path("/v1/limits", &r, err, sizeof(err)) == 0 &&
		      r.ep == RG_META_EP_LIMITS && !r.has_db,
	      "limits");
	CHECK(rg_meta_route_path("/v1/limits/", &r, err, sizeof(err)) == 0 && !r.has_db,
	      "limits/");
	CHECK(rg_meta_route_path("/v1/limits/greptime-logs", &r, err, sizeof(err)) == 0 &&
		      r.has_db && !strcmp(r.db.name, "logs"),
	      "catalog-schema normalised: %s", r.db.name);
	CHECK(rg_meta_route_path("/v1/limits/a%20b", &r, err, sizeof(err)) == -EINVAL,
	      "bad name");
	CHECK(rg_meta_route_path("/v1/limits/a/b", &r, err, sizeof(err)) == -ENOENT, "a/b");
	CHECK(rg_meta_route_path("/v1/heartbeat/x", &r, err, sizeof(err)) == -ENOENT, "hb/x");
	CHECK(rg_meta_route_path("/v1/limitsx", &r, err, sizeof(err)) == -ENOENT, "limitsx");
	CHECK(rg_meta_route_path("/", &r, err, sizeof(err)) == -ENOENT, "/");
	CHECK(rg_meta_route_path("/v1/status/logs", &r, err, sizeof(err)) == 0 &&
		      r.ep == RG_META_EP_STATUS && r.has_db,
	      "status/db");

	rg_meta_route_path("/v1/limits/logs", &r, err, sizeof(err));
	CHECK(rg_meta_method_allowed(&r, "PUT") && rg_meta_method_allowed(&r, "DELETE") &&
		      rg_meta_method_allowed(&r, "GET") && !rg_meta_method_allowed(&r, "POST"),
	      "limits/db methods");
	rg_meta_route_path("/v1/limits", &r, err, sizeof(err));
	CHECK(!rg_meta_method_allowed(&r, "PUT") && !rg_meta_method_allowed(&r, "DELETE"),
	      "limits without db: GET only");
	rg_meta_route_path("/v1/heartbeat", &r, err, sizeof(err));
	CHECK(rg_meta_method_allowed(&r, "POST") && !rg_meta_method_allowed(&r, "GET"),
	      "heartbeat: POST only");
}

static void test_bearer(void)
{
	CHECK(rg_meta_bearer_ok(NULL, NULL), "auth off");
	CHECK(rg_meta_bearer_ok(NULL, ""), "auth off (empty)");
	CHECK(!rg_meta_bearer_ok(NULL, "t0k"), "missing header");
	CHECK(rg_meta_bearer_ok("Bearer t0k", "t0k"), "match");
	CHECK(rg_meta_bearer_ok("bearer  t0k ", "t0k"), "scheme case, spaces");
	CHECK(!rg_meta_bearer_ok("Bearer t0k2", "t0k"), "longer");
	CHECK(!rg_meta_bearer_ok("Bearer t0", "t0k"), "prefix");
	CHECK(!rg_meta_bearer_ok("Bearer ", "t0k"), "empty");
	CHECK(!rg_meta_bearer_ok("Basic t0k", "t0k"), "other scheme");
	CHECK(!rg_meta_bearer_ok("t0k", "t0k"), "no scheme");
}

static void test_token_file(void)
{
	char path[] = "/tmp/rg-test-token.XXXXXX", tok[RG_META_TOKEN_MAX], err[256];
	int fd = mkstemp(path);
	FILE *f;

	CHECK(fd >= 0, "mkstemp");
	f = fdopen(fd, "w");
	fputs("  s3cr3t-token \nsecond line\n", f);
	fclose(f);
	CHECK(rg_meta_read_token(path, tok, sizeof(tok), err, sizeof(err)) == 0, "read: %s", err);
	CHECK(!strcmp(tok, "s3cr3t-token"), "trimmed: '%s'", tok);
	f = fopen(path, "w");
	fputs("\n", f);
	fclose(f);
	CHECK(rg_meta_read_token(path, tok, sizeof(tok), err, sizeof(err)) < 0, "empty refused");
	f = fopen(path, "w");
	fputs("a b\n", f);
	fclose(f);
	CHECK(rg_meta_read_token(path, tok, sizeof(tok), err, sizeof(err)) < 0, "space refused");
	unlink(path);
	CHECK(rg_meta_read_token(path, tok, sizeof(tok), err, sizeof(err)) < 0, "missing file");
	CHECK(strstr(err, path) != NULL, "names the file: %s", err);
}

static void test_node_id(void)
{
	char out[RG_META_NODE_ID_MAX], err[256], big[100];

	CHECK(rg_meta_parse_node_id("ingest-3.dc1:a_b", out, err, sizeof(err)) == 0, "ok");
	CHECK(rg_meta_parse_node_id("a/b", out, err, sizeof(err)) < 0, "slash");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(rg_meta_parse_node_id(big, out, err, sizeof(err)) < 0, "too long");
}

int main(void)
{
	test_hb_request_roundtrip();
	test_hb_request_invalid();
	test_hb_reply_roundtrip();
	test_limit_body();
	test_routes();
	test_bearer();
	test_token_file();
	test_node_id();
	return check_report("test_meta_proto");
}
