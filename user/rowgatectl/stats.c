// SPDX-License-Identifier: GPL-2.0
/* rowgatectl stats, status and detach: counters from the daemon (or
 * rowgate-meta's allocation table), enforcement read from the kernel, and
 * removing it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/admin.h"
#include "../lib/detach.h"
#include "../lib/health.h"
#include "../lib/maps.h"
#include "rowgatectl.h"

/* A counter or other scalar as a table cell. */
static void format_cell(const json_t *value, char *buf, size_t len)
{
	char *text;

	switch (json_typeof(value)) {
	case JSON_INTEGER:
		snprintf(buf, len, "%lld", (long long)json_integer_value(value));
		break;
	case JSON_STRING:
		snprintf(buf, len, "%s", json_string_value(value));
		break;
	case JSON_REAL:
		snprintf(buf, len, "%g", json_real_value(value));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(buf, len, "%s", json_is_true(value) ? "yes" : "no");
		break;
	case JSON_NULL:
		snprintf(buf, len, "-");
		break;
	default:
		text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, len, "%s", text ? text : "?");
		free(text);
	}
}

#define STATS_MAX_COLUMNS 32
#define CELL_MAX	  64

/* Columns are the keys of the first database object, "db" first. */
static void print_databases(json_t *databases)
{
	const char *columns[STATS_MAX_COLUMNS];
	int widths[STATS_MAX_COLUMNS];
	size_t ncolumns = 0, i, c;
	json_t *first = json_array_get(databases, 0), *row, *value;
	const char *key;
	char cell[CELL_MAX];

	if (!json_is_object(first)) {
		printf("no databases\n");
		return;
	}
	columns[ncolumns++] = "db";
	json_object_foreach(first, key, value) {
		/* nested objects (per-protocol counters) get lines of their own */
		if (strcmp(key, "db") && !json_is_object(value) && ncolumns < STATS_MAX_COLUMNS)
			columns[ncolumns++] = key;
	}
	for (c = 0; c < ncolumns; c++) {
		widths[c] = (int)strlen(columns[c]);
		json_array_foreach(databases, i, row) {
			format_cell(json_object_get(row, columns[c]), cell, sizeof(cell));
			if ((int)strlen(cell) > widths[c])
				widths[c] = (int)strlen(cell);
		}
	}
	for (c = 0; c < ncolumns; c++)
		printf(c ? "  %*s" : "%-*s", widths[c], columns[c]);
	putchar('\n');
	json_array_foreach(databases, i, row) {
		for (c = 0; c < ncolumns; c++) {
			format_cell(json_object_get(row, columns[c]), cell, sizeof(cell));
			printf(c ? "  %*s" : "%-*s", widths[c], cell);
		}
		putchar('\n');
	}
	json_array_foreach(databases, i, row) {
		json_t *protos = json_object_get(row, "protocols"), *counters, *v;
		const char *proto, *name;

		json_object_foreach(protos, proto, counters) {
			printf("  %s %s:", json_string_value(json_object_get(row, "db")), proto);
			json_object_foreach(counters, name, v) {
				format_cell(v, cell, sizeof(cell));
				printf(" %s=%s", name, cell);
			}
			putchar('\n');
		}
	}
}

/* rowgate-meta's allocation table: one block per database. */
static void print_meta_status(json_t *reply)
{
	static const char *const keys[5] = { "demand", "rejected", "debt", "quota",
					     "lease_ms_left" };
	json_t *dbs = json_object_get(reply, "databases"), *d, *f;
	size_t i, j;

	if (!json_array_size(dbs)) {
		printf("no limits configured\n");
		return;
	}
	json_array_foreach(dbs, i, d) {
		char lim[CELL_MAX], out[CELL_MAX];

		format_cell(json_object_get(d, "limit"), lim, sizeof(lim));
		format_cell(json_object_get(d, "outstanding"), out, sizeof(out));
		printf("%s%s: limit %s rows/s, granted %s rows/s to %zu frontend(s)\n", i ? "\n" : "",
		       json_string_value(json_object_get(d, "db")), lim, out,
		       json_array_size(json_object_get(d, "frontends")));
		if (!json_array_size(json_object_get(d, "frontends")))
			continue;
		printf("  %-20s %12s %12s %12s %12s %10s\n", "FRONTEND", "DEMAND/s", "REJECTED/s",
		       "DEBT", "QUOTA/s", "LEASE ms");
		json_array_foreach(json_object_get(d, "frontends"), j, f) {
			char c[5][CELL_MAX];

			for (int k = 0; k < 5; k++)
				format_cell(json_object_get(f, keys[k]), c[k], sizeof(c[k]));
			printf("  %-20s %12s %12s %12s %12s %10s\n",
			       json_string_value(json_object_get(f, "node")), c[0], c[1], c[2], c[3],
			       c[4]);
		}
	}
	if (json_is_true(json_object_get(reply, "learning")))
		printf("\n(learning phase: the allocator adopts the quotas frontends hold)\n");
}

int ctl_stats(const struct rg_db_key *db_or_null)
{
	json_t *request, *reply, *global, *value;
	const char *key;
	int width = 0;

	request = db_or_null ? json_pack("{s:s, s:s}", "op", "stats", "db", db_or_null->name) :
			       json_pack("{s:s}", "op", "stats");
	reply = ctl_call_daemon(request);
	if (!reply)
		return EXIT_FAILURE;
	if (ctl_cfg.json) {
		ctl_print_json(reply);
		goto out;
	}
	if (ctl_cfg.meta_url) {
		print_meta_status(reply);
		goto out;
	}
	print_databases(json_object_get(reply, "databases"));
	/* what databases without a limit take: the data to pick one from */
	if (json_array_size(json_object_get(reply, "unlimited"))) {
		printf("\nwithout a limit:\n");
		print_databases(json_object_get(reply, "unlimited"));
	}
	if (json_object_size(json_object_get(reply, "meta"))) {
		printf("\nrowgate-meta agent:\n");
		json_object_foreach(json_object_get(reply, "meta"), key, value) {
			char cell[CELL_MAX * 4];

			format_cell(value, cell, sizeof(cell));
			printf("  %-18s  %s\n", key, cell);
		}
	}
	global = json_object_get(reply, "global");
	if (json_object_size(global)) {
		json_object_foreach(global, key, value) {
			if ((int)strlen(key) > width)
				width = (int)strlen(key);
		}
		printf("\nhost-wide:\n");
		json_object_foreach(global, key, value) {
			char cell[CELL_MAX];

			format_cell(value, cell, sizeof(cell));
			printf("  %-*s  %s\n", width, key, cell);
		}
	}
	/* the UDP path (--xdp-iface): per-database datagram counters */
	if (json_is_object(json_object_get(reply, "udp"))) {
		json_t *udp = json_object_get(reply, "udp");

		printf("\nUDP (XDP):\n");
		print_databases(json_object_get(udp, "databases"));
		json_object_foreach(json_object_get(udp, "global"), key, value) {
			char cell[CELL_MAX];

			format_cell(value, cell, sizeof(cell));
			printf("  %-*s  %s\n", width, key, cell);
		}
	}
out:
	json_decref(reply);
	return EXIT_SUCCESS;
}

/* Through the daemon when one answers (so it knows), else on the pins. */
int ctl_detach(void)
{
	json_t *request = json_pack("{s:s}", "op", "detach"), *reply = NULL;
	char err[ERR_MAX];
	int ret, lock_fd;

	if (!request)
		return ctl_fail("out of memory");
	ret = rg_admin_call(ctl_cfg.socket_path, request, &reply, err, sizeof(err));
	json_decref(request);
	json_decref(reply);
	if (ret == 0) {
		if (ctl_cfg.json)
			printf("{\"ok\":true,\"via\":\"rowgated\"}\n");
		else
			printf("detached: rowgated enforces nothing until it is restarted\n");
		return EXIT_SUCCESS;
	}
	if (ret == -EREMOTEIO)
		return ctl_fail(err);
	pr_info("%s: detaching the pins under %s directly", err, ctl_cfg.bpffs);
	if (access(ctl_cfg.bpffs, F_OK))
		return ctl_fail("nothing to detach: no rowgate pins there (see --bpffs)");
	lock_fd = rg_bpffs_lock(ctl_cfg.bpffs);
	if (lock_fd < 0)
		return ctl_fail(lock_fd == -EBUSY ?
				    "a rowgated holds the pins but does not answer on --socket" :
				    "cannot lock the pin directory");
	rg_detach_all(ctl_cfg.bpffs);
	close(lock_fd);
	if (ctl_cfg.json)
		printf("{\"ok\":true,\"via\":\"pins\"}\n");
	else
		printf("detached: nothing under %s is enforced any more\n", ctl_cfg.bpffs);
	return EXIT_SUCCESS;
}

static void print_status(const struct rg_health *h, bool daemon_up)
{
	printf("enforcing: %s%s%s\n", h->enforcing ? "yes" : "NO", h->enforcing ? "" : " - ",
	       h->enforcing ? "" : h->reason);
	for (int i = 0; i < h->nports; i++)
		printf("  port %u: %s\n", h->ports[i], h->enforcing ? "enforcing" : "NOT enforcing");
	printf("cgroup: %s (%s", h->cgroup_path[0] ? h->cgroup_path : "?",
	       h->cgroup_present ? "present" : "ABSENT");
	if (h->cgroup_present)
		printf(", id %llu", (unsigned long long)h->cgroup_id_now);
	printf(", programs attached to id %llu)\n", (unsigned long long)h->cgroup_id_attached);
	printf("programs: sockops %s, getpeername4 %s, getpeername6 %s, verdict %s, "
	       "hold resets %s",
	       h->sockops ? "yes" : "NO", h->peer4 ? "yes" : "NO", h->peer6 ? "yes" : "NO",
	       h->verdict ? "yes" : "NO", h->resets ? "yes" : "NO");
	if (h->refuse_wanted)
		printf(", fail-closed filter %s", h->refuse ? "yes" : "NO");
	if (h->entry && h->slot_prog_id)
		printf("\nverdict slot: program %u, build %u", h->slot_prog_id, h->slot_build);
	else if (h->entry)
		printf("\nverdict slot: EMPTY");
	else if (h->verdict)
		printf("\nverdict slot: not used (the sockhash runs a verdict of an older build)");
	printf("\nconnections: %llu tracked, %llu adopting (table of %u, when full: %s); "
	       "since start: %llu tracked, %llu untracked, %llu refused\n",
	       (unsigned long long)(h->conns_now - h->adopting_now),
	       (unsigned long long)h->adopting_now, h->max_conns,
	       h->refuse_wanted ? "fail-closed" : "fail-open",
	       (unsigned long long)h->conns_tracked, (unsigned long long)h->conns_untracked,
	       (unsigned long long)h->gs.conns_refused);
	printf("adoption: %llu adopted, %llu synchronised (avg %llu ms, max %llu ms)\n",
	       (unsigned long long)h->adopted, (unsigned long long)h->gs.adopt_synced,
	       (unsigned long long)(h->gs.adopt_synced ?
					    h->gs.adopt_sync_ns_total / h->gs.adopt_synced / 1000000 :
					    0),
	       (unsigned long long)(h->gs.adopt_sync_ns_max / 1000000));
	printf("rowgated: %s\n",
	       daemon_up ? "running" : "not answering (enforcement does not depend on it)");
}

/* From the kernel, not the daemon: exit 1 when enforcement is off. */
int ctl_status(void)
{
	json_t *request = json_pack("{s:s}", "op", "limit_show"), *reply = NULL, *out;
	struct rg_health h;
	char err[ERR_MAX];
	bool daemon_up;
	int ret;

	ret = rg_health_read(ctl_cfg.bpffs, &h);
	if (ret) {
		snprintf(err, sizeof(err), "not enforcing: nothing pinned under %s (%s)", ctl_cfg.bpffs,
			 strerror(-ret));
		json_decref(request);
		return ctl_fail(err);
	}
	daemon_up = request && rg_admin_call(ctl_cfg.socket_path, request, &reply, err, sizeof(err)) == 0;
	json_decref(request);
	json_decref(reply);
	if (ctl_cfg.json) {
		out = rg_health_json(&h);
		if (!out)
			return ctl_fail("out of memory");
		json_object_set_new(out, "daemon", json_boolean(daemon_up));
		ctl_print_json(out);
		json_decref(out);
	} else {
		print_status(&h, daemon_up);
	}
	return h.enforcing ? EXIT_SUCCESS : EXIT_FAILURE;
}
