/* The pins under rowgated's bpffs directory: one loader at a time, and the
 * explicit removal of enforcement (rowgatectl detach, rowgated --cleanup).
 * Stopping rowgated removes nothing: enforcement outlives the daemon. */
#ifndef ROWGATE_USER_PINS_H
#define ROWGATE_USER_PINS_H

#include <stdbool.h>
#include <stddef.h>

void rg_pin_path(char *buf, size_t len, const char *dir, const char *name);
void rg_unpin(const char *dir, const char *name);

/* Take the pin directory's lock (flock, non-blocking): fd, or negative errno
 * after saying why (-EBUSY: a running rowgated holds it). */
int rg_bpffs_lock(const char *dir);

/* Detach a pinned link from its hook (held elsewhere or not) and unpin it. */
void rg_detach_pinned_link(const char *dir, const char *name);

/* Stop enforcing: detach the cgroup programs, the verdict and XDP, release
 * the guarded sockets so open connections go on untouched.  Limits, debt,
 * counters and the guarded ports stay pinned for the next start (and for
 * rowgatectl status to name what is not enforced). */
void rg_detach_all(const char *dir);

#endif /* ROWGATE_USER_PINS_H */
