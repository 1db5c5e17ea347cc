/* SPDX-License-Identifier: GPL-2.0 */
/* The explicit removal of enforcement from rowgated's bpffs directory
 * (rowgatectl detach, rowgated --cleanup).  Stopping rowgated removes nothing: enforcement outlives the daemon. */
#ifndef ROWGATE_USER_LIB_DETACH_H
#define ROWGATE_USER_LIB_DETACH_H

#include "maps.h" /* rg_pin_path, rg_unpin, rg_bpffs_lock */

/* Detach a pinned link from its hook (held elsewhere or not) and unpin it. */
void rg_detach_pinned_link(const char *dir, const char *name);

/* Stop enforcing: detach the cgroup programs, the verdict and XDP, release
 * the guarded sockets so open connections go on untouched.  Limits, debt,
 * counters and the guarded ports stay pinned for the next start (and for
 * rowgatectl status to name what is not enforced). */
void rg_detach_all(const char *dir);

#endif /* ROWGATE_USER_LIB_DETACH_H */
