/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* Fixed-width types and inline markers shared by BPF and userspace code. */
#ifndef ROWGATE_TYPES_H
#define ROWGATE_TYPES_H

#ifdef __bpf__
/* The kernel's __u8 .. __u64 and libbpf's __always_inline/__noinline: a
 * no-op in the objects, which include both first, but it lets each header
 * compile alone (make headers-check). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#ifndef RG_INLINE
#define RG_INLINE static __always_inline
#endif
/* A global BPF function, verified once apart from its callers: the return
 * value of a branchy helper then reaches them as a plain value instead of
 * multiplying their states.  Only one BPF object may include its header. */
#define RG_GLOBAL __noinline
#else
#include <linux/types.h>
#include <stdbool.h>
#ifndef RG_INLINE
#define RG_INLINE static inline __attribute__((always_inline))
#endif
#define RG_GLOBAL static inline
#endif

#define RG_U64_MAX ((__u64)~0ULL)

/* A loop with a constant trip count, unrolled in BPF code: Linux 6.1 refuses
 * some loops clang 14 makes ("back-edge from insn"). */
#ifdef __clang__
#define RG_UNROLL _Pragma("unroll")
#else
#define RG_UNROLL
#endif

#endif /* ROWGATE_TYPES_H */
