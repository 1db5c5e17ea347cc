// SPDX-License-Identifier: MIT
/* The pins under rowgated's bpffs directory; see detach.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "rowgate/abi.h"
#include "rowgate/guard.h"
#include "log.h"
#include "detach.h"
#include "xdp.h"

void rg_detach_pinned_link(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd;

	rg_pin_path(path, sizeof(path), dir, name);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bpf_link_detach(fd);
		close(fd);
	}
	rg_unpin(dir, name);
}

void rg_detach_all(const char *dir)
{
	char path[PATH_MAX];
	int sockhash_fd, prog_fd;

	rg_detach_pinned_link(dir, RG_PIN_LINK_SOCKOPS); /* no new connections are guarded */
	rg_detach_pinned_link(dir, RG_PIN_LINK_PEER4);
	rg_detach_pinned_link(dir, RG_PIN_LINK_PEER6);
	rg_detach_pinned_link(dir, RG_PIN_LINK_REFUSE);
	rg_detach_pinned_link(dir, RG_PIN_LINK_RESETS);
	rg_pin_path(path, sizeof(path), dir, RG_STR(RG_MAP_SOCKHASH));
	sockhash_fd = bpf_obj_get(path);
	rg_pin_path(path, sizeof(path), dir, RG_PIN_PROG_VERDICT);
	prog_fd = bpf_obj_get(path);
	if (sockhash_fd >= 0) {
		int egress_fd;

		if (prog_fd >= 0)
			bpf_prog_detach2(prog_fd, sockhash_fd, BPF_SK_SKB_VERDICT);
		rg_pin_path(path, sizeof(path), dir, RG_PIN_PROG_EGRESS);
		egress_fd = bpf_obj_get(path);
		if (egress_fd >= 0) {
			bpf_prog_detach2(egress_fd, sockhash_fd, BPF_SK_MSG_VERDICT);
			close(egress_fd);
		}
		rg_map_clear(sockhash_fd, sizeof(__u64));
		close(sockhash_fd);
	}
	if (prog_fd >= 0)
		close(prog_fd);
	rg_unpin(dir, RG_PIN_PROG_VERDICT);
	/* the last user reference gone, the kernel empties the prog array */
	rg_unpin(dir, RG_STR(RG_MAP_VERDICT_SLOT));
	rg_unpin(dir, RG_STR(RG_MAP_EGRESS_SLOT));
	rg_unpin(dir, RG_STR(RG_MAP_H2_SLOT));
	rg_unpin(dir, RG_PIN_PROG_EGRESS);
	rg_unpin(dir, RG_STR(RG_MAP_SOCKHASH));
	rg_unpin(dir, RG_STR(RG_MAP_CONNS));
	rg_unpin(dir, RG_STR(RG_MAP_STASH));
	rg_unpin(dir, RG_STR(RG_MAP_H2_CONNS));
	rg_unpin(dir, RG_STR(RG_MAP_H2_PARKED));
	rg_unpin(dir, RG_STR(RG_MAP_H2_OUT));
	rg_unpin(dir, RG_STR(RG_MAP_H2_GOAWAY));
	rg_unpin(dir, RG_STR(RG_MAP_REFUSED));
	rg_unpin(dir, RG_STR(RG_MAP_ADOPT));
	rg_xdp_cleanup(dir, false);
}
