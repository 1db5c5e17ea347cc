/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The gRPC layer of one HTTP/2 stream: the 5-byte length-prefixed message
 * (compressed flag, length), then its GreptimeRequest through the protobuf
 * walk (pb.h), messages spanning DATA frames. */
#ifndef ROWGATE_H2_GRPC_H
#define ROWGATE_H2_GRPC_H

#include "../types.h"
#include "result.h"
#include "msg.h"
#include "pb.h"

/* GreptimeDB's default max_recv_message_size (512 MiB,
 * DEFAULT_MAX_GRPC_RECV_MESSAGE_SIZE): a larger length prefix is refused. */
#define RG_GRPC_MSG_MAX_BYTES  (512U << 20)

struct rg_h2_stream {
	__u32 id;            /* 0: free slot */
	__u8 pfx[5];         /* the gRPC length prefix being read */
	__u8 pfx_got;        /* 0..5; 5 = inside the message */
	__u8 refused;        /* the kernel reset it (bpf/h2/refuse.h): a new stream may take the slot */
	__u8 hdr;     /* rg_grpc_msg.hdr of its messages */
	struct rg_pb_walk w;
	struct rg_grpc_msg m;
	/* the verdict's copy of its message for rowgated (bpf/h2/copy.h),
	 * kept with the stream so that it moves with it when parked
	 * (bpf/h2/park.h); the native parser leaves them alone */
	__u64 copy_seq; /* 0: none */
	__u32 copy_sid; /* the stream copy_seq belongs to (the slot may have
			 * changed hands since) */
	__u32 pad;
};

/* ---- gRPC messages of one stream ---------------------------------------- */

/* One byte of a stream's DATA.  Returns RG_H2_EV_MESSAGE, 0 or an error.
 * The message's result lives in s->m until the next message's first byte. */
RG_INLINE int rg_grpc_step(struct rg_h2_stream *s, __u8 c)
{
	int r;

	if (s->pfx_got < 5) {
		if (s->pfx_got == 0) {
			/* an OTLP stream's database stays (rg_h2_stream_open) */
			if (s->hdr)
				__builtin_memset(&s->m, 0,
						 __builtin_offsetof(struct rg_grpc_msg, str_len));
			else
				__builtin_memset(&s->m, 0, sizeof(s->m));
			s->m.hdr = s->hdr;
		}
		s->pfx[s->pfx_got] = c;
		s->pfx_got++;
		if (s->pfx_got < 5)
			return 0;
		if (s->pfx[0] > 1)
			return RG_H2_ERR_GRPC;
		s->m.len = (__u32)s->pfx[1] << 24 | (__u32)s->pfx[2] << 16 |
			   (__u32)s->pfx[3] << 8 | s->pfx[4];
		if (s->m.len > RG_GRPC_MSG_MAX_BYTES)
			return RG_H2_ERR_GRPC;
		s->m.compressed = s->pfx[0];
		rg_pb_begin_request(&s->w, s->m.len);
		if (rg_grpc_opaque(&s->m)) {
			/* nothing inside is read: skip it whole */
			s->w.st = RG_PBS_SKIP;
			s->w.left = s->m.len;
		}
		if (s->m.len == 0) {
			s->pfx_got = 0;
			return RG_H2_EV_MESSAGE;
		}
		return 0;
	}
	r = rg_pb_step(&s->w, &s->m, c);
	if (r == 1) {
		s->pfx_got = 0;
		return RG_H2_EV_MESSAGE;
	}
	return r;
}

#endif /* ROWGATE_H2_GRPC_H */
