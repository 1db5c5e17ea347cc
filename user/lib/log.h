/* SPDX-License-Identifier: GPL-2.0 */
/* Leveled logging to stderr for every rowgate binary, with libbpf's own
 * messages routed through it one level lower, and events: one line of
 * key=value pairs an operator's tools can parse (docs/logging.md).
 *
 * Two formats, chosen once at start:
 *   - stderr connected to the journal (systemd's JOURNAL_STREAM names its
 *     device and inode): "<N>message" per line, N the syslog priority (3 err,
 *     4 warning, 5 notice, 6 info, 7 debug); journald strips the prefix,
 *     keeps the priority and adds the program's name itself;
 *   - anything else: "prog: [warning: |debug: ]message", as always.
 */
#ifndef ROWGATE_USER_LIB_LOG_H
#define ROWGATE_USER_LIB_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* In syslog's order; RG_LOG_ERROR + 3 is the syslog priority. */
enum rg_log_level {
	RG_LOG_ERROR = 0,
	RG_LOG_WARN,
	RG_LOG_NOTICE, /* events: what changed, what failed open */
	RG_LOG_INFO,
	RG_LOG_DEBUG,
};

/* The daemons' level until --log-level: events show, info does not. */
#define RG_LOG_DEFAULT	   RG_LOG_NOTICE
/* rowgatectl's: its own output is the answer, not the log */
#define RG_LOG_CLI_DEFAULT RG_LOG_WARN
#define RG_LOG_LEVELS	   "err|warning|notice|info|debug"

void rg_log_set_level(enum rg_log_level level);
enum rg_log_level rg_log_get_level(void);

/* syslog's names "err", "warning", "notice", "info", "debug", also "error"
 * and "warn", or the priority 3 to 7 (case-insensitive); 0 or -EINVAL. */
int rg_log_parse_level(const char *name, enum rg_log_level *level);
/* The name that option takes, e.g. "warning". */
const char *rg_log_level_name(enum rg_log_level level);

/* Whether stderr is the journal's stream, decided at start from
 * JOURNAL_STREAM and fstat(2) of stderr; rg_log_detect_journal() decides
 * again (tests, or after stderr was redirected). */
bool rg_log_journal(void);
bool rg_log_detect_journal(void);

/* One record per line: a missing final newline is added; in the journal's
 * format every line of a multi-line message gets the prefix. */
void rg_log(enum rg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...)    rg_log(RG_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)   rg_log(RG_LOG_WARN, __VA_ARGS__)
#define pr_notice(...) rg_log(RG_LOG_NOTICE, __VA_ARGS__)
#define pr_info(...)   rg_log(RG_LOG_INFO, __VA_ARGS__)
#define pr_debug(...)  rg_log(RG_LOG_DEBUG, __VA_ARGS__)

/*
 * Events, at notice: "event=NAME" then fmt, a space-separated list of
 * key=value pairs such as "db=%s rows_per_s=%llu".  Every %s value is
 * quoted when it needs to be (rg_log_quote), so a value cannot forge
 * another key or line; the other conversions are printf's.
 */
void rg_event(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A repetitive event: at most one line per kind per RG_EVENT_INTERVAL_MS,
 * the kind being the name and the first key=value pair ("fail_open
 * reason=conns_full", "quota_set db=logs").  The events of a kind dropped
 * inside its interval are counted: the next line of that kind ends with
 * suppressed=N, or, when none comes, rg_log_tick() writes "event=NAME
 * FIRST-PAIR suppressed=N" once the interval is over.
 */
#define RG_EVENT_INTERVAL_MS 1000
void rg_event_limited(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Write the suppressed counts of kinds whose interval ended; a daemon's
 * main loop calls it about once a second. */
void rg_log_tick(void);

/*
 * What an event line is made of, exposed for the unit tests:
 * rg_log_quote writes value as is when it is non-empty and has no space,
 * control byte, '"', '=' or '\\', else in double quotes with '"', '\\' and
 * control bytes escaped (\n, \t, \r, \xHH); rg_event_format writes
 * "event=NAME pairs".  Both truncate to len like snprintf and return the
 * length the whole text needs.
 */
size_t rg_log_quote(char *buf, size_t len, const char *value);
size_t rg_event_format(char *buf, size_t len, const char *name, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Send libbpf's output through rg_log: its warnings show at info, its info
 * and debug messages at debug (verifier logs are noise to an operator). */
void rg_log_route_libbpf(void);

#endif /* ROWGATE_USER_LIB_LOG_H */
