// SPDX-License-Identifier: GPL-2.0
/* Leveled logging to stderr; see log.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <bpf/libbpf.h>

#include "log.h"

static enum rg_log_level current_level = RG_LOG_DEFAULT;

static const char *const level_names[] = {
	[RG_LOG_ERROR] = "error",
	[RG_LOG_WARN] = "warn",
	[RG_LOG_INFO] = "info",
	[RG_LOG_DEBUG] = "debug",
};

/* What precedes the message; errors and info read as plain sentences. */
static const char *const level_tags[] = {
	[RG_LOG_ERROR] = "",
	[RG_LOG_WARN] = "warning: ",
	[RG_LOG_INFO] = "",
	[RG_LOG_DEBUG] = "debug: ",
};

void rg_log_set_level(enum rg_log_level level)
{
	if (level > RG_LOG_DEBUG)
		level = RG_LOG_DEBUG;
	current_level = level;
}

enum rg_log_level rg_log_get_level(void)
{
	return current_level;
}

int rg_log_parse_level(const char *name, enum rg_log_level *level)
{
	unsigned int i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (name && !strcasecmp(name, level_names[i])) {
			*level = (enum rg_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void log_v(enum rg_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t len;
	int saved_errno = errno;

	if (level > current_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	/* one record per line: callers may or may not end with '\n' */
	fprintf(stderr, "%s: %s%s%s", program_invocation_short_name, level_tags[level], msg,
		len && msg[len - 1] == '\n' ? "" : "\n");
	errno = saved_errno;
}

void rg_log(enum rg_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(level, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level libbpf_level, const char *fmt, va_list ap)
{
	enum rg_log_level level = libbpf_level == LIBBPF_WARN ? RG_LOG_INFO : RG_LOG_DEBUG;

	log_v(level, fmt, ap);
	return 0;
}

void rg_log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
