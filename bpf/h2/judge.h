/* SPDX-License-Identifier: GPL-2.0 */
/* Judging a completed message: charged, refused, or a compressed one
 * admitted on the databases its connection named before (h2_cdb). */
#ifndef ROWGATE_BPF_H2_JUDGE_H
#define ROWGATE_BPF_H2_JUDGE_H

#include "../base.h"
#include "../maps.h"
#include "../admit.h"
#include "stats.h"
#include "state.h"
#include "rowgate/abi.h"
#include "rowgate/h2/result.h"
#include "rowgate/h2/msg.h"
#include "rowgate/h2/frame.h"

/*
 * A compressed message (--grpc-compressed debt) is judged on every database
 * the connection's compressed messages named before (h2_cdb, learned by
 * rowgated from their copies), or, before it learned one, on those its
 * client's other connections named (h2_cdb_peer): so a client opening a
 * connection per message is limited too.  Refused while any is in debt, a
 * refusal the server might not have made, never an admission it would not
 * have made (docs/grpc.md#compressed).  Returns RG_ADMIT_UNLIMITED when
 * none is learned or limited, RG_ADMIT_YES (st->db: the first), RG_ADMIT_NO
 * (st->db, st->info: the one in debt), or -1: too many to follow.
 */
__noinline int rg_h2_compressed_admit(struct rg_h2_sock *st)
{
	struct rg_h2_cdb *cdb; /* its keys are map memory: keys 6.1 takes */
	int verdict = RG_ADMIT_UNLIMITED;
	/* Linux 6.1 takes no map key from an argument's memory; one slot
	 * for both keys keeps the call chain's stack within 512 bytes */
	union {
		__u64 cookie;
		struct rg_peer peer;
	} key;
	__u32 i;

	if (!st)
		return -1;
	key.cookie = st->cookie;
	cdb = bpf_map_lookup_elem(&RG_MAP_H2_CDB, &key.cookie);
	if ((!cdb || !cdb->n) && st->peer.family) {
		/* nothing learned of this connection yet: what its client's
		 * other connections named */
		struct rg_h2_cdb *peer_cdb;

		__builtin_memcpy(&key.peer, &st->peer, sizeof(key.peer));
		peer_cdb = bpf_map_lookup_elem(&RG_MAP_H2_CDB_PEER, &key.peer);
		if (peer_cdb)
			cdb = peer_cdb;
	}
	if (!cdb)
		return RG_ADMIT_UNLIMITED;
	if (cdb->full)
		return -1;
	for (i = 0; i < RG_H2_CDB_DBS && i < cdb->n; i++) {
		switch (rg_admit(&cdb->db[i], &st->info)) {
		case RG_ADMIT_UNLIMITED:
			continue;
		case RG_ADMIT_SHADOW:
			/* passes unless another database refuses or admits it */
			if (verdict != RG_ADMIT_UNLIMITED)
				continue;
			verdict = RG_ADMIT_SHADOW;
			break;
		case RG_ADMIT_YES:
			if (verdict == RG_ADMIT_YES)
				continue;
			verdict = RG_ADMIT_YES;
			break;
		default:
			verdict = RG_ADMIT_NO;
			break;
		}
		__builtin_memcpy(&st->db, &cdb->db[i], sizeof(st->db));
		st->db_len = cdb->len[i] < RG_DB_NAME_MAX ? cdb->len[i] : RG_DB_NAME_MAX - 1;
		if (verdict == RG_ADMIT_NO)
			break;
	}
	return verdict;
}

/* A message completed: charge it, or refuse it (returns 1; the caller names
 * its rows in the answer: rg_h2_refused_rows).  A message the
 * kernel cannot judge (compressed, a database name that fits no key) is
 * an error: the connection is not followed further.  A global function:
 * verified once, not at every step of the byte loop that reaches it. */
__noinline int rg_h2_message(struct rg_h2_sock *st)
{
	struct rg_grpc_msg *m;
	struct rg_db_key db; /* Linux 6.1 takes no map key from an argument's memory */
	__s8 s;
	int n;

	if (!st)
		return -1;
	s = st->h.done_slot;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	m = &st->h.s[rg_h2_slot(s)].m;
	if (rg_grpc_db_hidden(m) && !rg_h2_compressed_debt) {
		/* grpc-encoding: the database and rows are unknown here
		 * (docs/grpc.md#compressed) */
		st->err = RG_H2_ERR_GRPC;
		return -1;
	}
	if (rg_h2_stream_refused(st, st->h.done_sid))
		return 0; /* its stream was reset: never handled, never charged */
	if (rg_grpc_db_hidden(m)) {
		/* --grpc-compressed debt: charged nothing here, its rows by
		 * rowgated from its copy (rg_h2_copy_end) */
		n = st->cverdict;
		if (n < 0) {
			rg_h2_stats_inc(h2_compressed_dbs_full);
			st->err = RG_H2_ERR_GRPC;
			return -1;
		}
		if (n == RG_ADMIT_UNLIMITED)
			return 0; /* nothing learned yet */
		__builtin_memcpy(&db, &st->db, sizeof(db));
	} else {
		if (!rg_grpc_charged(m))
			return 0;
		n = rg_grpc_db_key_in(m, &st->db, st->db_raw);
		if (n < 0) {
			st->err = RG_H2_ERR_PROTOBUF;
			return -1;
		}
		st->db_len = (__u32)n;
		__builtin_memcpy(&db, &st->db, sizeof(db));
		n = rg_admit(&db, &st->info);
		/* an OTLP export is charged (or refused) the estimate HTTP gives
		 * such a body; rowgated corrects it from the copy (rg_h2_copy_end
		 * sends it), and a lost copy leaves it standing */
		if (m->hdr)
			m->rows = n == RG_ADMIT_UNLIMITED ? 0 : rg_grpc_answer_rows(m);
	}
	switch (n) {
	case RG_ADMIT_UNLIMITED:
		/* an OTLP export's rows are rowgated's to count: an estimate */
		rg_unlimited_count(rg_unlimited_get(&db), rg_grpc_answer_rows(m), m->len,
				   rg_grpc_rows_estimated(m));
		return 0;
	case RG_ADMIT_SHADOW:
		rg_shadow_count(&db, rg_grpc_db_hidden(m) ? 0 : m->rows);
		return 0;
	case RG_ADMIT_YES:
		rg_charge(&db, m->rows, 1, true);
		st->messages++;
		st->rows += m->rows;
		return 0;
	default:
		break;
	}
	/* every message is judged on its own, a stream's later ones too:
	 * GreptimeDB's limiter fails a HandleRequests call at the first
	 * message it refuses, after storing the earlier ones (docs/grpc.md
	 * #streams) */
	if (st->must_pass) {
		/* its bytes reach the server whatever the verdict says */
		rg_charge(&db, m->rows, 1, false);
		rg_h2_stats_inc(h2_unenforced);
		return 0;
	}
	rg_account_reject(&db, m->rows, &st->info);
	st->reject_sid = st->h.done_sid;
	st->reject = 1;
	return 1;
}

/* The rows the answer to the message rg_h2_message refused names
 * (st->reject_rows): an estimate for a compressed one (its rows are
 * counted from its copy).  Not in rg_h2_message: its stack has no room. */
__noinline int rg_h2_refused_rows(struct rg_h2_sock *st)
{
	__s8 s;

	if (!st)
		return 0;
	s = st->h.done_slot;
	if (s < 0 || s >= RG_H2_STREAM_SLOTS)
		return 0;
	st->reject_rows = rg_grpc_answer_rows(&st->h.s[rg_h2_slot(s)].m);
	st->reject_estimated = rg_grpc_rows_estimated(&st->h.s[rg_h2_slot(s)].m);
	return 0;
}

#endif /* ROWGATE_BPF_H2_JUDGE_H */
