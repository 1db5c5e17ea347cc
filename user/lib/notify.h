/* SPDX-License-Identifier: GPL-2.0 */
/* systemd's readiness protocol (sd_notify(3)) without libsystemd: one
 * datagram to the socket $NOTIFY_SOCKET names, so a Type=notify unit starts
 * its dependents only once rowgated or rowgate-meta is really serving.
 */
#ifndef ROWGATE_USER_LIB_NOTIFY_H
#define ROWGATE_USER_LIB_NOTIFY_H

/* Send STATE ("READY=1", "STOPPING=1", newline-separated assignments) to
 * $NOTIFY_SOCKET: an absolute path, or '@' for Linux's abstract namespace.
 * Returns 1 when sent, 0 when NOTIFY_SOCKET is unset or empty (not started
 * by systemd), a negative errno otherwise. */
int rg_sd_notify(const char *state);

#endif /* ROWGATE_USER_LIB_NOTIFY_H */
