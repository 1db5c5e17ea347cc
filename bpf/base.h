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

#endif /* ROWGATE_BPF_BASE_H */
