/* SPDX-License-Identifier: GPL-2.0 */
/* What rowgated's and rowgate-meta's /metrics share: the Prometheus text
 * format written into a growing buffer (HELP and TYPE lines, escaped label
 * values), the counter tables of counters.h as series, and the listen
 * address both take ("IP:PORT", "[IPv6]:PORT", "HOST:PORT" or ":PORT").
 */
#ifndef ROWGATE_USER_LIB_PROM_H
#define ROWGATE_USER_LIB_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "counters.h"

struct rg_prom {
	char *buf; /* NUL-terminated once anything was written */
	size_t len, cap;
	int err; /* the first failure (-ENOMEM); later writes do nothing */
};

/* An empty text; 0 or -ENOMEM. */
int rg_prom_init(struct rg_prom *t);
/* The text (the caller frees it), or NULL after a failure (freed here). */
char *rg_prom_finish(struct rg_prom *t);

void rg_prom_printf(struct rg_prom *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "# HELP name help\n# TYPE name type\n". */
void rg_prom_header(struct rg_prom *t, const char *name, const char *type, const char *help);
/* name="value" with \\, \" and \n escaped as the format wants. */
void rg_prom_label(struct rg_prom *t, const char *name, const char *value);
/* A sample without labels: "name value\n". */
void rg_prom_sample(struct rg_prom *t, const char *name, unsigned long long value);
/* One series without labels: its HELP, TYPE and sample, the name once. */
void rg_prom_one(struct rg_prom *t, const char *name, const char *type, const char *help,
		 unsigned long long value);

/* Every series of table tab from the struct st, without labels (host-wide
 * counters): HELP, TYPE and one sample each. */
void rg_prom_table(struct rg_prom *t, const struct rg_counter_table *tab, const void *st);

/* rowgate_build_info{version="..."} 1, with its HELP and TYPE. */
void rg_prom_build_info(struct rg_prom *t, const char *version);

/* A listen address.  any: ":PORT", every address of the host (IPv6 and
 * IPv4 where the host has IPv6, else IPv4); otherwise ss/len hold the
 * address, IPv4 or IPv6 (a host name resolves to its first address). */
struct rg_listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port;
	bool any;
};

/* Parse s; 0, or -EINVAL with why in err ("--OPT 's': " is the caller's). */
int rg_listen_addr_parse(const char *s, struct rg_listen_addr *out, char *err, size_t errlen);

#endif /* ROWGATE_USER_LIB_PROM_H */
