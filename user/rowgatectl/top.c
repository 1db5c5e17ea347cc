// SPDX-License-Identifier: GPL-2.0
/* rowgatectl top: each database's row rates, live.  Two stats samples an
 * interval apart give rows/s admitted and rejected; the table is sorted by
 * rejections, so the database in trouble is on top. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rowgatectl.h"

#define TOP_NAME_MAX 64

struct top_row {
	char db[TOP_NAME_MAX];
	double limit, quota, debt;
	double admitted, rejected; /* counters at the sample */
	double would;		   /* requests a shadow limit would have refused */
	bool unlimited;		   /* no limit: admitted is what it passed */
	double admitted_rate, rejected_rate, would_rate;
	bool shadow;
};

struct top_sample {
	struct top_row *rows;
	size_t n;
	double t; /* monotonic seconds */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : 0;
}

/* One stats reply into s (its rows replaced); 0, or EXIT_FAILURE reported. */
static int top_take(struct top_sample *s)
{
	json_t *reply = ctl_call_daemon(json_pack("{s:s}", "op", "stats")), *dbs, *unl, *d;
	size_t i, j;

	if (!reply)
		return EXIT_FAILURE;
	dbs = json_object_get(reply, "databases");
	unl = json_object_get(reply, "unlimited");
	free(s->rows);
	s->n = 0;
	s->rows = calloc(json_array_size(dbs) + json_array_size(unl) + 1, sizeof(*s->rows));
	if (!s->rows) {
		json_decref(reply);
		return ctl_fail("out of memory");
	}
	s->t = now_s();
	json_array_foreach(dbs, i, d) {
		struct top_row *r = &s->rows[s->n++];
		const char *name = json_string_value(json_object_get(d, "db"));

		snprintf(r->db, sizeof(r->db), "%s", name ? name : "?");
		r->limit = num(d, "limit");
		r->quota = num(d, "quota");
		r->debt = num(d, "debt_rows");
		r->admitted = num(d, "admitted_rows");
		r->rejected = num(d, "rejected_rows");
		r->shadow = json_is_true(json_object_get(d, "shadow"));
		r->would = num(d, "would_reject_requests");
	}
	/* a database without a limit: its rows all pass.  One whose limit
	 * was removed keeps its old counters, which no longer grow: the
	 * rows it passes since are added to them. */
	json_array_foreach(unl, i, d) {
		const char *name = json_string_value(json_object_get(d, "db"));
		struct top_row *r = NULL;

		for (j = 0; j < s->n && name; j++)
			if (!strcmp(s->rows[j].db, name) && s->rows[j].limit == 0)
				r = &s->rows[j];
		if (!r) {
			r = &s->rows[s->n++];
			snprintf(r->db, sizeof(r->db), "%s", name ? name : "?");
		}
		r->unlimited = true;
		r->admitted += num(d, "rows");
	}
	json_decref(reply);
	return 0;
}

/* Rates of cur against prev, by database (a database new since has none). */
static void top_rates(struct top_sample *cur, const struct top_sample *prev)
{
	double dt = cur->t - prev->t;
	size_t i, j;

	for (i = 0; i < cur->n; i++) {
		struct top_row *r = &cur->rows[i];

		r->admitted_rate = r->rejected_rate = r->would_rate = 0;
		for (j = 0; j < prev->n && dt > 0; j++) {
			if (strcmp(prev->rows[j].db, r->db))
				continue;
			/* a counter reset (rowgated --cleanup) reads as 0, not negative */
			r->admitted_rate = r->admitted > prev->rows[j].admitted ?
						   (r->admitted - prev->rows[j].admitted) / dt :
						   0;
			r->rejected_rate = r->rejected > prev->rows[j].rejected ?
						   (r->rejected - prev->rows[j].rejected) / dt :
						   0;
			r->would_rate = r->would > prev->rows[j].would ?
						(r->would - prev->rows[j].would) / dt :
						0;
			break;
		}
	}
}

/* Most rejected first, then most would-be refusals (shadow), then most
 * admitted, then by name. */
static int top_cmp(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->rejected_rate != y->rejected_rate)
		return x->rejected_rate < y->rejected_rate ? 1 : -1;
	if (x->would_rate != y->would_rate)
		return x->would_rate < y->would_rate ? 1 : -1;
	if (x->admitted_rate != y->admitted_rate)
		return x->admitted_rate < y->admitted_rate ? 1 : -1;
	return strcmp(x->db, y->db);
}

/* Seconds until the debt is paid at the quota: -1 without debt, INFINITY
 * without a quota. */
static double top_recover(const struct top_row *r)
{
	if (r->debt <= 0)
		return -1;
	return r->quota > 0 ? r->debt / r->quota : INFINITY;
}

static void top_print_json(const struct top_sample *s, double interval)
{
	json_t *out = json_pack("{s:f, s:[]}", "interval_s", interval, "databases");
	json_t *arr = json_object_get(out, "databases");
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct top_row *r = &s->rows[i];
		double rec = top_recover(r);

		json_array_append_new(arr, json_pack("{s:s, s:f, s:f, s:b, s:b, s:f, s:f, s:f, s:f, s:o}",
						     "db", r->db, "limit", r->limit, "quota", r->quota,
						     "shadow", r->shadow, "unlimited", r->unlimited,
						     "admitted_rows_per_s", r->admitted_rate,
						     "rejected_rows_per_s", r->rejected_rate,
						     "would_reject_requests_per_s", r->would_rate,
						     "debt_rows", r->debt, "recover_s",
						     rec < 0	? json_real(0) :
						     isinf(rec) ? json_null() :
								  json_real(rec)));
	}
	ctl_print_json(out);
	json_decref(out);
}

static void top_print_table(const struct top_sample *s, double interval, bool screen)
{
	time_t t = time(NULL);
	char clock[16] = "";
	size_t i;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (screen)
		fputs("\033[H\033[2J", stdout); /* home, clear: a live view */
	printf("rowgate top  %s  every %gs  %zu database(s)%s\n\n", clock, interval, s->n,
	       screen ? "  (Ctrl-C quits)" : "");
	printf("%-24s %12s %12s %13s %13s %10s %12s %10s\n", "DB", "LIMIT/s", "QUOTA/s",
	       "ADMITTED/s", "REJECTED/s", "WOULD-REJ", "DEBT", "RECOVER s");
	for (i = 0; i < s->n; i++) {
		const struct top_row *r = &s->rows[i];
		double rec = top_recover(r);
		char recover[24], would[24];

		if (rec < 0)
			snprintf(recover, sizeof(recover), "-");
		else if (isinf(rec))
			snprintf(recover, sizeof(recover), "never");
		else
			snprintf(recover, sizeof(recover), "%.1f", rec);
		/* requests/s a shadow limit would refuse; '-': enforcing */
		if (r->shadow)
			snprintf(would, sizeof(would), "%.1f/s", r->would_rate);
		else
			snprintf(would, sizeof(would), "-");
		if (r->unlimited) {
			printf("%-24s %12s %12s %13.0f %13s %10s %12s %10s\n", r->db, "none", "-",
			       r->admitted_rate, "-", "-", "-", "-");
			continue;
		}
		printf("%-24s %12.0f %12.0f %13.0f %13.0f %10s %12.0f %10s\n", r->db, r->limit,
		       r->quota, r->admitted_rate, r->rejected_rate, would, r->debt, recover);
	}
	if (!s->n)
		printf("(no database limited or counted yet)\n");
	fflush(stdout);
}

static void top_usage(FILE *out)
{
	fprintf(out, "usage: rowgatectl [--json] top [--once] [--interval SECONDS] [--count N]\n"
		     "  --once            one table of rates over one interval, then exit\n"
		     "  --interval S      seconds between samples, 0.1 to 3600 (default 1)\n"
		     "  --count N         stop after N tables (default: until Ctrl-C)\n"
		     "Rows/s admitted and rejected per database, limit, quota, debt and the\n"
		     "seconds until the debt is paid, most rejected first; a database\n"
		     "without a limit shows LIMIT none and the rows/s it passes, to pick a\n"
		     "limit from.  With --json one JSON object a table.\n");
}

int ctl_top(int argc, char **argv)
{
	struct top_sample prev = { 0 }, cur = { 0 };
	double interval = 1;
	long count = 0, shown = 0;
	bool screen;
	int i, rc = 0;

	for (i = 0; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--once")) {
			count = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			top_usage(stdout);
			return EXIT_SUCCESS;
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			errno = 0;
			interval = strtod(argv[++i], &end);
			if (errno || *end || end == argv[i] ||
			    !(interval >= 0.1 && interval <= 3600)) {
				fprintf(stderr,
					"rowgatectl: top: --interval wants seconds from 0.1 to 3600, got '%s'\n",
					argv[i]);
				return EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			errno = 0;
			count = strtol(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || count < 1) {
				fprintf(stderr,
					"rowgatectl: top: --count wants a whole number above 0, got '%s'\n",
					argv[i]);
				return EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "rowgatectl: top: unknown argument '%s'\n", argv[i]);
			top_usage(stderr);
			return EXIT_USAGE;
		}
	}
	screen = !ctl_cfg.json && count != 1 && isatty(STDOUT_FILENO);
	if (top_take(&prev))
		return EXIT_FAILURE;
	for (;;) {
		usleep((useconds_t)(interval * 1e6));
		if (top_take(&cur)) {
			rc = EXIT_FAILURE;
			break;
		}
		top_rates(&cur, &prev);
		qsort(cur.rows, cur.n, sizeof(*cur.rows), top_cmp);
		if (ctl_cfg.json)
			top_print_json(&cur, interval);
		else
			top_print_table(&cur, interval, screen);
		if (count && ++shown >= count)
			break;
		/* cur becomes the next interval's start */
		free(prev.rows);
		prev = cur;
		cur.rows = NULL;
		cur.n = 0;
	}
	free(prev.rows);
	free(cur.rows);
	return rc;
}
