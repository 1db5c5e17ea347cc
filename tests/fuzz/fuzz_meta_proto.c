// SPDX-License-Identifier: MIT
/* rowgate-meta's wire inputs (user/lib/meta_proto.c): heartbeats and their
 * replies, the PUT /v1/limits body, request paths, methods, bearer tokens
 * and node ids.  A decoded message encodes and decodes back to itself;
 * every refusal gives a reason; accepted names and ids are valid ones.
 *
 * Input: one byte choosing the decoder, then the body or string. */
#include <errno.h>
#include <strings.h>
#include "../../user/lib/limits.h"
#include "../../user/lib/meta_proto.h"
#include "fuzz.h"

static json_t *load(const uint8_t *p, size_t n)
{
	json_error_t jerr;

	return json_loadb((const char *)p, n, JSON_DECODE_ANY, &jerr);
}

static void check_key(const struct rg_db_key *db)
{
	FUZZ_ASSERT(fuzz_key_ok(db), "'%.*s' is not a key", RG_DB_NAME_MAX, db->name);
}

static void heartbeat(json_t *obj)
{
	struct rg_meta_hb_req req, back;
	char err[256] = "";
	json_t *enc;
	size_t i;

	if (rg_meta_hb_req_decode(obj, &req, err, sizeof(err))) {
		FUZZ_ASSERT(err[0], "no reason");
		rg_meta_hb_req_free(&req);
		return;
	}
	FUZZ_ASSERT(req.count <= RG_MAX_DATABASES, "%zu databases", req.count);
	for (i = 0; i < req.count; i++)
		check_key(&req.dbs[i].db);
	enc = rg_meta_hb_req_encode(&req);
	FUZZ_ASSERT(enc, "encode");
	FUZZ_ASSERT(rg_meta_hb_req_decode(enc, &back, err, sizeof(err)) == 0, "re-decode: %s", err);
	FUZZ_ASSERT(strcmp(back.node_id, req.node_id) == 0 && back.interval_ms == req.interval_ms &&
			    back.count == req.count &&
			    (!req.count ||
			     memcmp(back.dbs, req.dbs, req.count * sizeof(*req.dbs)) == 0),
		    "heartbeat does not round-trip");
	json_decref(enc);
	rg_meta_hb_req_free(&back);
	rg_meta_hb_req_free(&req);
}

static void reply(json_t *obj)
{
	struct rg_meta_hb_reply rep, back;
	char err[256] = "";
	json_t *enc;
	size_t i;

	if (rg_meta_hb_reply_decode(obj, &rep, err, sizeof(err))) {
		FUZZ_ASSERT(err[0], "no reason");
		rg_meta_hb_reply_free(&rep);
		return;
	}
	for (i = 0; i < rep.count; i++)
		check_key(&rep.dbs[i].db);
	enc = rg_meta_hb_reply_encode(&rep);
	FUZZ_ASSERT(enc, "encode");
	FUZZ_ASSERT(rg_meta_hb_reply_decode(enc, &back, err, sizeof(err)) == 0, "re-decode: %s",
		    err);
	FUZZ_ASSERT(back.lease_ms == rep.lease_ms &&
			    back.heartbeat_interval_ms == rep.heartbeat_interval_ms &&
			    back.learning == rep.learning && back.count == rep.count &&
			    (!rep.count ||
			     memcmp(back.dbs, rep.dbs, rep.count * sizeof(*rep.dbs)) == 0),
		    "reply does not round-trip");
	json_decref(enc);
	rg_meta_hb_reply_free(&back);
	rg_meta_hb_reply_free(&rep);
}

/* RFC 9110: the scheme in any case, then the token between optional
 * whitespace. */
static bool bearer_model(const char *s, const char *token)
{
	size_t n, t = strlen(token);

	if (strncasecmp(s, "Bearer ", 7))
		return false;
	for (s += 7; *s == ' '; s++)
		;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n == t && memcmp(s, token, t) == 0;
}

static void strings(const uint8_t *p, size_t n)
{
	static const char *const methods[] = { "GET", "PUT", "POST", "DELETE", "HEAD", "" };
	char *s = fuzz_str(p, n), err[256] = "", id[RG_META_NODE_ID_MAX];
	struct rg_meta_route route;
	size_t i;
	int r;

	memset(&route, 0, sizeof(route));
	r = rg_meta_route_path(s, &route, err, sizeof(err));
	FUZZ_ASSERT(r == 0 || r == -ENOENT || (r == -EINVAL && err[0]), "route %d", r);
	if (r == 0) {
		FUZZ_ASSERT(route.ep != RG_META_EP_NONE, "route without an endpoint");
		if (route.has_db)
			check_key(&route.db);
		for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
			rg_meta_method_allowed(&route, methods[i]);
	}
	r = rg_meta_parse_node_id(s, id, err, sizeof(err));
	if (r == 0)
		FUZZ_ASSERT(strlen(id) > 0 && strlen(id) < RG_META_NODE_ID_MAX &&
				    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					       "0123456789_.:-") == strlen(id),
			    "node id '%s'", id);
	/* the header against the token it carries, and against another */
	FUZZ_ASSERT(rg_meta_bearer_ok(s, "s3cret-token") == bearer_model(s, "s3cret-token"),
		    "bearer '%s'", s);
	FUZZ_ASSERT(rg_meta_bearer_ok(s, NULL) && rg_meta_bearer_ok(s, ""), "no token");
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t which = fuzz_u8(&in) % 4;
	char err[256] = "";
	json_t *obj;
	__u64 limit;

	if (which == 3) {
		strings(in.p, in.n);
		return 0;
	}
	obj = load(in.p, in.n);
	if (!obj)
		return 0;
	if (which == 0)
		heartbeat(obj);
	else if (which == 1)
		reply(obj);
	else if (rg_meta_limit_body_decode(obj, &limit, err, sizeof(err)))
		FUZZ_ASSERT(err[0], "no reason");
	json_decref(obj);
	return 0;
}
