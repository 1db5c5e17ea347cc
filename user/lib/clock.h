/* SPDX-License-Identifier: GPL-2.0 */
/* The clock of the BPF side: bpf_ktime_get_ns() is CLOCK_MONOTONIC, so
 * buckets refilled here and in the kernel agree to the nanosecond. */
#ifndef ROWGATE_USER_LIB_CLOCK_H
#define ROWGATE_USER_LIB_CLOCK_H

#include <time.h>
#include <linux/types.h>

#define RG_NSEC_PER_MSEC 1000000ULL

static inline __u64 rg_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

#endif /* ROWGATE_USER_LIB_CLOCK_H */
