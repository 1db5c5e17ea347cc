// SPDX-License-Identifier: GPL-2.0
/* The Prometheus text format (version 0.0.4) and the listen address of
 * /metrics: shared by rowgated and rowgate-meta. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

int rg_prom_init(struct rg_prom *t)
{
	*t = (struct rg_prom){ .cap = 4096 };
	t->buf = malloc(t->cap);
	if (!t->buf)
		return t->err = -ENOMEM;
	t->buf[0] = 0;
	return 0;
}

char *rg_prom_finish(struct rg_prom *t)
{
	char *buf = t->buf;

	if (t->err) {
		free(buf);
		buf = NULL;
	}
	t->buf = NULL;
	return buf;
}

void rg_prom_printf(struct rg_prom *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		char *buf;

		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		buf = realloc(t->buf, t->cap * 2 + (size_t)n);
		if (!buf) {
			t->err = -ENOMEM;
			return;
		}
		t->buf = buf;
		t->cap = t->cap * 2 + (size_t)n;
	}
}

void rg_prom_header(struct rg_prom *t, const char *name, const char *type, const char *help)
{
	rg_prom_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void rg_prom_label(struct rg_prom *t, const char *name, const char *value)
{
	rg_prom_printf(t, "%s=\"", name);
	for (; *value; value++) {
		if (*value == '\\' || *value == '"')
			rg_prom_printf(t, "\\%c", *value);
		else if (*value == '\n')
			rg_prom_printf(t, "\\n");
		else
			rg_prom_printf(t, "%c", *value);
	}
	rg_prom_printf(t, "\"");
}

void rg_prom_sample(struct rg_prom *t, const char *name, unsigned long long value)
{
	rg_prom_printf(t, "%s %llu\n", name, value);
}

void rg_prom_one(struct rg_prom *t, const char *name, const char *type, const char *help,
		 unsigned long long value)
{
	rg_prom_header(t, name, type, help);
	rg_prom_sample(t, name, value);
}

void rg_prom_table(struct rg_prom *t, const struct rg_counter_table *tab, const void *st)
{
	for (size_t i = 0; i < tab->n; i++) {
		const struct rg_counter_desc *d = &tab->d[i];

		rg_prom_one(t, d->series, rg_counter_kind_name(d->kind), d->help,
			    (unsigned long long)rg_counter_get(d, st));
	}
}

void rg_prom_build_info(struct rg_prom *t, const char *version)
{
	rg_prom_header(t, "rowgate_build_info", "gauge",
		       "Always 1; the version label is what --version prints.");
	rg_prom_printf(t, "rowgate_build_info{");
	rg_prom_label(t, "version", version);
	rg_prom_printf(t, "} 1\n");
}

int rg_listen_addr_parse(const char *s, struct rg_listen_addr *out, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV },
			*ai = NULL;
	const char *colon, *port;
	char host[256], *end;
	unsigned long p;
	size_t hl;
	int ret;

	*out = (struct rg_listen_addr){ 0 };
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':') {
			snprintf(err, errlen, "expected [IPv6]:PORT");
			return -EINVAL;
		}
		colon = close + 1;
		hl = (size_t)(close - s - 1);
		s++;
		hints.ai_flags |= AI_NUMERICHOST;
		hints.ai_family = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			snprintf(err, errlen, "no port: expected HOST:PORT or :PORT");
			return -EINVAL;
		}
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl)) {
			snprintf(err, errlen, "an IPv6 address goes in brackets: [ADDR]:PORT");
			return -EINVAL;
		}
	}
	port = colon + 1;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (port[0] < '0' || port[0] > '9' || *end || errno || p == 0 || p > 65535) {
		snprintf(err, errlen, "port '%s': expected 1 to 65535", port);
		return -EINVAL;
	}
	out->port = (uint16_t)p;
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "host name too long");
		return -EINVAL;
	}
	memcpy(host, s, hl);
	host[hl] = 0;
	if (!host[0]) {
		/* ":PORT", as Go's servers (node_exporter, Prometheus) take it */
		out->any = true;
		return 0;
	}
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host,
			 ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
		return -EINVAL;
	}
	memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
	out->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}
