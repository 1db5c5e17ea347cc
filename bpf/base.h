/* SPDX-License-Identifier: GPL-2.0 */
/* What every BPF header builds on: the kernel's types (vmlinux.h, generated
 * into build/ by bpftool) and libbpf's helpers, endianness and CO-RE
 * macros.  Each header in bpf/ includes what it uses, this first, so each
 * compiles alone (make headers-check).
 */
#ifndef ROWGATE_BPF_BASE_H
#define ROWGATE_BPF_BASE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

/* A static function of a header that only a program uses (a bpf_loop
 * callback, a subprogram): unused where the header is compiled alone.  It
 * only silences that warning; the code is the same. */
#ifndef __maybe_unused
#define __maybe_unused __attribute__((__unused__))
#endif

#ifndef AF_INET6
#define AF_INET6 10 /* a macro: not in vmlinux.h */
#endif

#define RG_MSG_MAX_STEPS (1 << 23) /* bpf_loop's limit */

/* A field the other side writes: load it once, now. */
#define RG_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
/* An atomic add that publishes a store before the loads after it: its old
 * value is used, so it is BPF_FETCH, ordered on every arch (an add whose
 * result is dropped compiles to the plain atomic add, a barrier on x86
 * only). */
#define RG_FETCH_ADD(p, v)                                       \
	({                                                       \
		typeof(*(p)) __old = __sync_fetch_and_add(p, v); \
		barrier_var(__old);                              \
		__old;                                           \
	})

#endif /* ROWGATE_BPF_BASE_H */
