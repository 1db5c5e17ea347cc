/* SPDX-License-Identifier: GPL-2.0 */
/* Leveled logging to stderr for every rowgate binary, with libbpf's own
 * messages routed through it one level lower.
 */
#ifndef ROWGATE_USER_LIB_LOG_H
#define ROWGATE_USER_LIB_LOG_H

enum rg_log_level {
	RG_LOG_ERROR = 0,
	RG_LOG_WARN,
	RG_LOG_INFO,
	RG_LOG_DEBUG,
};

#define RG_LOG_DEFAULT RG_LOG_WARN
#define RG_LOG_LEVELS  "error|warn|info|debug"

void rg_log_set_level(enum rg_log_level level);
enum rg_log_level rg_log_get_level(void);

/* "error", "warn", "info" or "debug" (case-insensitive); 0 or -EINVAL. */
int rg_log_parse_level(const char *name, enum rg_log_level *level);

/* "prog: [warning: |debug: ]message\n"; a missing final newline is added. */
void rg_log(enum rg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...)   rg_log(RG_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)  rg_log(RG_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  rg_log(RG_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) rg_log(RG_LOG_DEBUG, __VA_ARGS__)

/* Send libbpf's output through rg_log: its warnings show at info, its info
 * and debug messages at debug (verifier logs are noise to an operator). */
void rg_log_route_libbpf(void);

#endif /* ROWGATE_USER_LIB_LOG_H */
