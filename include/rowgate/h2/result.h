/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* What every layer of the HTTP/2 parser (frame.h, grpc.h, pb.h) shares:
 * the results of a step, and the verifier workaround that hides an index
 * from clang. */
#ifndef ROWGATE_H2_RESULT_H
#define ROWGATE_H2_RESULT_H

#include "../types.h"
#include "hpack.h"

/* Step results.  Events are positive, errors negative and say why. */
enum rg_h2_result {
	RG_H2_MORE = 0,
	RG_H2_EV_FRAME = 1,   /* a frame header completed: ftype/fflags/fsid/flen */
	RG_H2_EV_MESSAGE = 2, /* a gRPC message completed: h->s[h->done_slot].m */
	RG_H2_ERR_PREFACE = -1,   /* not the client preface, or no SETTINGS first */
	RG_H2_ERR_FRAME_SIZE = -2, /* over max_frame, or a wrong fixed length */
	RG_H2_ERR_PROTOCOL = -3,  /* stream ids, header blocks, padding, PUSH_PROMISE */
	RG_H2_ERR_STREAMS = -4,   /* more than RG_H2_STREAM_SLOTS streams in flight */
	RG_H2_ERR_GRPC = -5,      /* compressed flag > 1, message over the max */
	RG_H2_ERR_PROTOBUF = -6,  /* a GreptimeRequest the server cannot decode */
	RG_H2_ERR_HPACK = RG_HPACK_ERR, /* a header block the shadow cannot follow */
	RG_H2_ERR_UNROUTED = -8,  /* more than RG_H2_UNROUTED_SLOTS unrouted streams */
	RG_H2_ERR_UNCOUNTED = -9, /* a stream of a method whose rows the kernel cannot count */
	/* an OTLP/gRPC stream whose x-greptime-db-name the shadow cannot give
	 * (several, lost, too long, empty), or more than RG_H2_HDB_SLOTS */
	RG_H2_ERR_HEADER_DB = -10,
};

/* Verifier workaround: hide a value from clang, which otherwise drops a
 * mask or a bound check made after the caller's own range check and
 * re-derives an unbounded index from the stored byte. */
RG_INLINE __u32 rg_h2_opaque(__u32 k)
{
#ifdef __bpf__
	asm volatile("" : "+r"(k));
#endif
	return k;
}

#endif /* ROWGATE_H2_RESULT_H */
