/* SPDX-License-Identifier: GPL-2.0 */
/* The UDP path's loader: attaches bpf/xdp.bpf.c to one interface, sharing
 * the limits, buckets and counters rowgated pinned, fills the port -> database
 * map and reads the UDP counters back.  Every function returns 0 or a
 * negative errno and logs a sentence (log.h) on failure.
 */
#ifndef ROWGATE_USER_LIB_XDP_H
#define ROWGATE_USER_LIB_XDP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <rowgate/abi.h>
#include <rowgate/xdp_abi.h>

/* One UDP listener: datagrams to port (host order) write to db. */
struct rg_udp_mapping {
	__u16 port;
	struct rg_db_key db;
};

/* How the program is attached; AUTO tries native, then generic. */
enum rg_xdp_mode {
	RG_XDP_MODE_AUTO = 0,
	RG_XDP_MODE_NATIVE,
	RG_XDP_MODE_GENERIC,
};

struct rg_xdp; /* opaque: the loaded object and its attachment */

/*
 * "PORT=DB" as typed on a command line: a port 1-65535 and a database name
 * validated like rowgatectl's (limits.h rg_parse_db_name).  Returns 0, or
 * -EINVAL / -ENAMETOOLONG with a one-line reason in err.
 */
int rg_parse_udp_mapping(const char *s, struct rg_udp_mapping *m, char *err, size_t errlen);

/*
 * Load the XDP program with the shared maps reused from bpffs_dir (limits,
 * buckets, db_stats, global_stats; created there if nothing is pinned yet)
 * and its own maps pinned there too (udp_ports, udp_stats, xdp_stats), write
 * the n mappings into udp_ports (replacing what it held; one port maps to one
 * database) with zeroed counters for new databases, and attach to ifname:
 * native mode where the driver has it, generic otherwise, reported with
 * pr_info.  The attachment is a bpf_link pinned as link_xdp_<ifname>; one a
 * previous run pinned is adopted (its program swapped atomically).
 */
int rg_xdp_start(const char *bpffs_dir, const char *ifname, const struct rg_udp_mapping *maps,
		 int n, struct rg_xdp **out);

/* rg_xdp_start with an explicit mode; NATIVE fails where the driver lacks it. */
int rg_xdp_start_mode(const char *bpffs_dir, const char *ifname, enum rg_xdp_mode mode,
		      const struct rg_udp_mapping *maps, int n, struct rg_xdp **out);

/* The mode the program runs in: RG_XDP_MODE_NATIVE or RG_XDP_MODE_GENERIC. */
enum rg_xdp_mode rg_xdp_mode(const struct rg_xdp *x);
const char *rg_xdp_mode_name(enum rg_xdp_mode mode);

/*
 * Stop: with keep, leave the program attached and pinned (a restarted daemon
 * adopts it); without, detach it and remove the link and udp_ports pins.
 * Counters (udp_stats, xdp_stats) stay pinned either way.  x may be NULL.
 */
void rg_xdp_stop(struct rg_xdp *x, bool keep);

/*
 * Remove what rg_xdp_start pinned under bpffs_dir without a running
 * struct rg_xdp (rowgated --cleanup): every link_xdp_* pin (detaching the
 * program), udp_ports, and with purge also udp_stats and xdp_stats.
 */
void rg_xdp_cleanup(const char *bpffs_dir, bool purge);

/*
 * Add the UDP counters to an admin stats reply, read from the pins under
 * bpffs_dir (per-CPU values summed):
 *   "udp": { "databases": [ { "db", "ports": [..], "admitted_datagrams",
 *            "admitted_rows", "dropped_datagrams", "dropped_rows",
 *            "unlimited_datagrams", "empty_datagrams",
 *            "unaccounted_datagrams" } ],
 *            "global": { "packets", "passed", "fragments", "malformed",
 *            "oversize", "ipv6_unparsed", "udp6_zero_csum", "admitted",
 *            "dropped" } }
 * db (or NULL for all) filters the databases.  Returns -ENOENT (reply
 * untouched) when no XDP maps are pinned there.
 */
int rg_xdp_stats_json(const char *bpffs_dir, const struct rg_db_key *db, json_t *reply);

/* The same counters as structs: udp_stats of db and the global ones. */
int rg_xdp_read_db_stats(const char *bpffs_dir, const struct rg_db_key *db,
			 struct rg_udp_stats *out);
int rg_xdp_read_global_stats(const char *bpffs_dir, struct rg_xdp_stats *out);

#endif /* ROWGATE_USER_LIB_XDP_H */
