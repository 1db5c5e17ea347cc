// SPDX-License-Identifier: GPL-2.0
/* One request from rowgatectl: to rowgated's admin socket, or with --meta
 * to rowgate-meta's HTTP API, in the admin socket's shapes both ways. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/admin.h"
#include "../lib/http_client.h"
#include "../lib/meta_proto.h"
#include "rowgatectl.h"

static json_t *call_meta(json_t *request);

/* Send request (stolen) and return the reply, or NULL after reporting. */
json_t *ctl_call_daemon(json_t *request)
{
	char err[ERR_MAX];
	json_t *reply = NULL;
	int ret;

	if (!request) {
		ctl_fail("out of memory");
		return NULL;
	}
	if (rg_log_get_level() >= RG_LOG_DEBUG) {
		char *text = json_dumps(request, JSON_COMPACT);

		pr_debug("request to %s: %s", ctl_cfg.socket_path, text ? text : "");
		free(text);
	}
	if (ctl_cfg.meta_url)
		return call_meta(request);
	ret = rg_admin_call(ctl_cfg.socket_path, request, &reply, err, sizeof(err));
	json_decref(request);
	if (ret) {
		json_decref(reply);
		ctl_fail(err);
		return NULL;
	}
	return reply;
}

/*
 * The admin requests of ctl_call_daemon, as rowgate-meta calls:
 *   limit_set -> PUT /v1/limits/DB {"limit":"N"}   limit_unset -> DELETE
 *   limit_show -> GET /v1/limits[/DB]               stats -> GET /v1/status[/DB]
 * The replies have the admin socket's shape ({"ok":true,...}).  Each URL of
 * --meta is tried in turn until one answers; followers redirect to the leader.
 */
static json_t *call_meta(json_t *request)
{
	const char *op = json_string_value(json_object_get(request, "op"));
	const char *db = json_string_value(json_object_get(request, "db"));
	const char *source = json_string_value(json_object_get(request, "source"));
	char token[RG_META_TOKEN_MAX] = "", err[ERR_MAX] = "", url[600], *urls, *save = NULL;
	char auth[RG_META_TOKEN_MAX + 8] = "";
	const char *method = "GET", *api = RG_META_API_LIMITS, *u;
	json_t *body = NULL, *reply = NULL;
	struct rg_http_result res = {};
	static struct rg_http_origins origins;
	struct rg_http_opts opts = {
		.authorization = auth,
		.connect_timeout_ms = META_CONNECT_TIMEOUT_MS,
		.timeout_ms = META_TIMEOUT_MS,
		.origins = &origins,
		.ca_file = ctl_cfg.meta_ca,
		.cert_file = ctl_cfg.meta_cert,
		.key_file = ctl_cfg.meta_key,
	};
	bool answered = false;

	if (ctl_cfg.token_file &&
	    rg_meta_read_token(ctl_cfg.token_file, token, sizeof(token), err, sizeof(err))) {
		json_decref(request);
		ctl_fail(err);
		return NULL;
	}
	if (token[0])
		snprintf(auth, sizeof(auth), "Bearer %s", token);
	if (!strcmp(op, "limit_set")) {
		method = "PUT";
		body = json_pack("{s:O}", "limit", json_object_get(request, "limit"));
	} else if (!strcmp(op, "limit_unset")) {
		method = "DELETE";
	} else if (!strcmp(op, "stats")) {
		api = RG_META_API_STATUS;
	}
	urls = strdup(ctl_cfg.meta_url);
	if (!urls || rg_http_global_init()) {
		free(urls);
		json_decref(request);
		json_decref(body);
		ctl_fail("out of memory");
		return NULL;
	}
	/* a follower's redirect is followed only to one of these: the token
	 * goes nowhere else */
	for (u = strtok_r(urls, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
		if (rg_http_origins_add(&origins, u, err, sizeof(err))) {
			char msg[ERR_MAX + 16];

			snprintf(msg, sizeof(msg), "--meta: %s", err);
			free(urls);
			json_decref(request);
			json_decref(body);
			ctl_fail(msg);
			return NULL;
		}
	}
	strcpy(urls, ctl_cfg.meta_url);
	save = NULL;
	for (u = strtok_r(urls, ",", &save); u && !answered; u = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(u);

		while (n && u[n - 1] == '/')
			n--;
		/* rowgate-meta logs where a change came from (rowgatectl sql) */
		snprintf(url, sizeof(url), "%.*s%s%s%s%s%s", (int)(n > 300 ? 300 : n), u, api,
			 db ? "/" : "", db ? db : "", source ? "?source=" : "",
			 source ? source : "");
		pr_debug("%s %s", method, url);
		if (rg_http_json(method, url, body, &opts, &res, err, sizeof(err)) == 0)
			answered = true;
	}
	free(urls);
	json_decref(request);
	json_decref(body);
	if (!answered) {
		char msg[ERR_MAX + 64];

		snprintf(msg, sizeof(msg), "cannot reach rowgate-meta: %s", err);
		ctl_fail(msg);
		return NULL;
	}
	if (res.status / 100 == 2 && json_is_true(json_object_get(res.reply, "ok"))) {
		reply = json_incref(res.reply);
	} else {
		const char *msg = json_string_value(json_object_get(res.reply, "error"));
		char line[ERR_MAX + 64];

		if (res.status == 401)
			snprintf(line, sizeof(line), "rowgate-meta refused the request (401): %s",
				 ctl_cfg.token_file ? "wrong token in --token-file" :
						  "it needs a token: pass --token-file");
		else if (res.status == 403)
			snprintf(line, sizeof(line), "rowgate-meta refused the request (403): %.450s",
				 msg ? msg : "forbidden");
		else if (msg)
			snprintf(line, sizeof(line), "%.500s", msg);
		else
			snprintf(line, sizeof(line), "rowgate-meta answered HTTP %ld", res.status);
		ctl_fail(line);
	}
	rg_http_result_free(&res);
	return reply;
}
