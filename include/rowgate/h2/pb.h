/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* The protobuf walk of greptime.v1.GreptimeRequest, one byte per step
 * (docs/grpc.md §1-3): RequestHeader (dbname / catalog / schema) and the
 * rows of InsertRequests / RowInsertRequests, into a struct rg_grpc_msg
 * (msg.h).  Protobuf the server's decoder (prost) refuses is an error. */
#ifndef ROWGATE_H2_PB_H
#define ROWGATE_H2_PB_H

#include "../types.h"
#include "result.h"
#include "msg.h"

/* Protobuf nesting followed: Request > RowInsertRequests > RowInsertRequest
 * > Rows (a Row is skipped, not entered); a power of two (masked index). */
#define RG_PB_DEPTH            8
#define RG_PB_VARINT_MAX_BYTES 10

/* Which message the protobuf walk is inside. */
enum rg_pb_ctx {
	RG_PB_REQUEST = 0,    /* GreptimeRequest */
	RG_PB_HEADER,         /* RequestHeader */
	RG_PB_INSERTS,        /* InsertRequests */
	RG_PB_INSERT,         /* InsertRequest */
	RG_PB_ROW_INSERTS,    /* RowInsertRequests */
	RG_PB_ROW_INSERT,     /* RowInsertRequest */
	RG_PB_ROWS,           /* Rows */
};
/* An unknown field encoded as a group (wire types 3 ... 4), skipped as
 * prost's skip_field does: a level of its own whose ctx is this bit and
 * the group's field number's low 7 bits, which its end-group key must
 * match (a mismatch in higher bits, which prost refuses, is charged: the
 * safe side). */
#define RG_PB_GROUP	   0x80
#define RG_PB_GROUP_FIELD 0x7f

enum rg_pb_state {
	RG_PBS_KEY = 0,
	RG_PBS_VARINT, /* a varint value (row_count is kept, others dropped) */
	RG_PBS_LEN,    /* the length of a length-delimited field */
	RG_PBS_SKIP,   /* bytes of a field nobody reads */
	RG_PBS_CAPTURE, /* a RequestHeader string */
};

/* Protobuf walk of one message; positions are message-relative. */
struct rg_pb_walk {
	__u32 pos;
	__u32 end[RG_PB_DEPTH];
	__u32 left;          /* bytes of SKIP/CAPTURE to go */
	__u64 varint;
	__u32 field;
	__u8 ctx[RG_PB_DEPTH];
	__u8 depth;
	__u8 st;             /* enum rg_pb_state */
	__u8 vbytes;         /* bytes of the varint so far */
	__u8 wire;           /* wire type of the current field */
	__u8 cap;            /* enum rg_grpc_str being captured */
	__u8 pad[3];
};

/* The same for a protobuf nesting level. */
RG_INLINE __u32 rg_pb_level(__u32 d)
{
	return rg_h2_opaque(d) & (RG_PB_DEPTH - 1);
}

/* ---- protobuf walk of GreptimeRequest ---------------------------------- */

/* What a length-delimited field of ctx with this number is. */
enum rg_pb_action {
	RG_PBA_SKIP = 0,
	RG_PBA_ENTER,        /* descend into a message we follow */
	RG_PBA_ROW,          /* a Row of Rows: one row, contents skipped */
	RG_PBA_CAPTURE,      /* a RequestHeader string */
};

/* A field number we know with the wrong wire type fails the server's
 * decoder; -1 then.  Otherwise the action, with *next = the context entered
 * or the string captured. */
RG_INLINE int rg_pb_classify(__u8 ctx, __u32 field, __u8 wire, __u8 *next)
{
	bool len = wire == 2;

	if (ctx & RG_PB_GROUP)
		return RG_PBA_SKIP; /* inside an unknown group: nothing is read */
	switch (ctx) {
	case RG_PB_REQUEST:
		if (field >= 1 && field <= 7 && !len)
			return -1;
		if (field == 1) {
			*next = RG_PB_HEADER;
			return RG_PBA_ENTER;
		}
		if (field == RG_GRPC_INSERTS) {
			*next = RG_PB_INSERTS;
			return RG_PBA_ENTER;
		}
		if (field == RG_GRPC_ROW_INSERTS) {
			*next = RG_PB_ROW_INSERTS;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_HEADER:
		if (field >= 1 && field <= 6 && !len)
			return -1;
		if (field == 1 || field == 2 || field == 4) {
			*next = field == 1 ? RG_GRPC_STR_CATALOG :
				field == 2 ? RG_GRPC_STR_SCHEMA : RG_GRPC_STR_DBNAME;
			return RG_PBA_CAPTURE;
		}
		return RG_PBA_SKIP;
	case RG_PB_INSERTS:
		if (field == 1) {
			if (!len)
				return -1;
			*next = RG_PB_INSERT;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_INSERT:
		/* table_name 1, columns 3: length-delimited; row_count 4: varint */
		if ((field == 1 || field == 3) && !len)
			return -1;
		if (field == 4 && wire != 0)
			return -1;
		return RG_PBA_SKIP;
	case RG_PB_ROW_INSERTS:
		if (field == 1) {
			if (!len)
				return -1;
			*next = RG_PB_ROW_INSERT;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_ROW_INSERT:
		if ((field == 1 || field == 2) && !len)
			return -1;
		if (field == 2) {
			*next = RG_PB_ROWS;
			return RG_PBA_ENTER;
		}
		return RG_PBA_SKIP;
	case RG_PB_ROWS:
		if ((field == 1 || field == 2) && !len)
			return -1;
		if (field == 2)
			return RG_PBA_ROW;
		return RG_PBA_SKIP;
	}
	return -1;
}

/* Leave every message whose end is reached; an InsertRequest left adds its
 * row_count.  Returns 1 when the whole GreptimeRequest is complete. */
RG_INLINE int rg_pb_pop(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	int i;

	for (i = 0; i < RG_PB_DEPTH; i++) {
		__u32 d = rg_pb_level(w->depth);

		if (w->pos != w->end[d])
			return 0;
		if (d == 0)
			return 1;
		if (w->ctx[d] & RG_PB_GROUP)
			return RG_H2_ERR_PROTOBUF; /* the message ends inside a group */
		if (w->ctx[d] == RG_PB_INSERT)
			m->rows += m->row_count;
		w->depth = (__u8)(d - 1);
	}
	return 0;
}

/* A oneof member of GreptimeRequest starts: a different member replaces
 * the one set before (its rows are dropped), the same one merges. */
RG_INLINE void rg_pb_oneof(struct rg_grpc_msg *m, __u32 field)
{
	if (field < RG_GRPC_INSERTS || field > RG_GRPC_ROW_DELETES)
		return;
	if (m->kind != field) {
		m->kind = (__u8)field;
		m->rows = 0;
	}
}

/* A field's key has been read: set up its value.  Returns 0, 1 when the
 * message completed (an empty last field), or a negative error. */
RG_INLINE int rg_pb_field(struct rg_pb_walk *w)
{
	__u32 d = rg_pb_level(w->depth);

	if (w->field == 0)
		return RG_H2_ERR_PROTOBUF;
	switch (w->wire) {
	case 0: {
		__u8 nx = 0;

		if (rg_pb_classify(w->ctx[d], w->field, 0, &nx) < 0)
			return RG_H2_ERR_PROTOBUF;
		w->st = RG_PBS_VARINT;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	}
	case 1:
	case 5: {
		__u8 nx = 0;

		if (rg_pb_classify(w->ctx[d], w->field, w->wire, &nx) < 0)
			return RG_H2_ERR_PROTOBUF;
		w->left = w->wire == 1 ? 8 : 4;
		if (w->left > w->end[d] - w->pos)
			return RG_H2_ERR_PROTOBUF;
		w->st = RG_PBS_SKIP;
		return 0;
	}
	case 2:
		w->st = RG_PBS_LEN;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	case 3: {
		__u8 nx = 0;

		/* a start-group key: unknown fields only (these messages
		 * declare no group) */
		if (rg_pb_classify(w->ctx[d], w->field, 3, &nx) != RG_PBA_SKIP ||
		    d + 1 >= RG_PB_DEPTH)
			return RG_H2_ERR_PROTOBUF;
		w->depth = (__u8)(d + 1);
		w->end[rg_pb_level(d + 1)] = w->end[d];
		w->ctx[rg_pb_level(d + 1)] = RG_PB_GROUP | (w->field & RG_PB_GROUP_FIELD);
		w->st = RG_PBS_KEY;
		w->varint = 0;
		w->vbytes = 0;
		return 0;
	}
	}
	/* an end-group key comes through rg_pb_group_end; 6 and 7 are no
	 * wire types */
	return RG_H2_ERR_PROTOBUF;
}

/* An end-group key: it closes the innermost group, which it must name.
 * Returns rg_pb_pop's answer for the levels it completes. */
RG_INLINE int rg_pb_group_end(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	__u32 d = rg_pb_level(w->depth);

	if (!(w->ctx[d] & RG_PB_GROUP) || d == 0 ||
	    (w->ctx[d] & RG_PB_GROUP_FIELD) != (w->field & RG_PB_GROUP_FIELD))
		return RG_H2_ERR_PROTOBUF;
	w->depth = (__u8)(d - 1);
	w->st = RG_PBS_KEY;
	w->varint = 0;
	w->vbytes = 0;
	return rg_pb_pop(w, m);
}

/* A length-delimited field's length has been read. */
RG_INLINE int rg_pb_len_done(struct rg_pb_walk *w, struct rg_grpc_msg *m)
{
	__u32 d = rg_pb_level(w->depth);
	__u8 nx = 0;
	__u64 len = w->varint;
	int act;

	if (len > (__u64)(w->end[d] - w->pos))
		return RG_H2_ERR_PROTOBUF;
	act = rg_pb_classify(w->ctx[d], w->field, 2, &nx);
	if (act < 0)
		return RG_H2_ERR_PROTOBUF;
	if (w->ctx[d] == RG_PB_REQUEST) {
		rg_pb_oneof(m, w->field);
		if (w->field == 1)
			m->has_header = 1;
	}
	w->left = (__u32)len;
	w->st = RG_PBS_KEY;
	w->varint = 0;
	w->vbytes = 0;
	switch (act) {
	case RG_PBA_ENTER:
		if (d + 1 >= RG_PB_DEPTH)
			return RG_H2_ERR_PROTOBUF;
		w->depth = (__u8)(d + 1);
		w->end[rg_pb_level(d + 1)] = w->pos + (__u32)len;
		w->ctx[rg_pb_level(d + 1)] = nx;
		if (nx == RG_PB_INSERT)
			m->row_count = 0;
		break;
	case RG_PBA_ROW:
		m->rows++;
		w->st = RG_PBS_SKIP;
		break;
	case RG_PBA_CAPTURE:
		rg_grpc_str_reset(m, nx, len > 0xffff ? 0xffff : (__u16)len);
		w->cap = nx;
		w->st = RG_PBS_CAPTURE;
		break;
	default:
		w->st = RG_PBS_SKIP;
		break;
	}
	if (w->left == 0) {
		w->st = RG_PBS_KEY;
		return rg_pb_pop(w, m);
	}
	return 0;
}

/* One byte of a GreptimeRequest.  Returns 1 when it completed the message,
 * 0 for more, or a negative error. */
RG_INLINE int rg_pb_step(struct rg_pb_walk *w, struct rg_grpc_msg *m, __u8 c)
{
	__u32 d = rg_pb_level(w->depth);
	int r;

	w->pos++;
	switch (w->st) {
	case RG_PBS_KEY:
	case RG_PBS_VARINT:
	case RG_PBS_LEN:
		if (w->vbytes >= RG_PB_VARINT_MAX_BYTES)
			return RG_H2_ERR_PROTOBUF;
		w->varint |= (__u64)(c & 0x7f) << (7 * w->vbytes);
		w->vbytes++;
		if (c & 0x80) {
			/* the varint runs past its message */
			if (w->pos >= w->end[d])
				return RG_H2_ERR_PROTOBUF;
			return 0;
		}
		if (w->st == RG_PBS_KEY) {
			if (w->varint > 0xffffffffULL)
				return RG_H2_ERR_PROTOBUF;
			w->field = (__u32)(w->varint >> 3);
			w->wire = (__u8)(w->varint & 7);
			if (w->wire == 4 && w->field)
				return rg_pb_group_end(w, m);
			/* a key with no value before the end of its message */
			if (w->pos >= w->end[d])
				return RG_H2_ERR_PROTOBUF;
			return rg_pb_field(w);
		}
		if (w->st == RG_PBS_VARINT) {
			/* uint32 fields keep the low 32 bits, as decoders do */
			if (w->ctx[d] == RG_PB_INSERT && w->field == 4)
				m->row_count = (__u32)w->varint;
			w->st = RG_PBS_KEY;
			w->varint = 0;
			w->vbytes = 0;
			return rg_pb_pop(w, m);
		}
		return rg_pb_len_done(w, m);
	case RG_PBS_CAPTURE:
		rg_grpc_str_put(m, w->cap, w->left, c);
		/* fallthrough */
	case RG_PBS_SKIP:
		if (w->left == 0)
			return RG_H2_ERR_PROTOBUF;
		w->left--;
		if (w->left)
			return 0;
		w->st = RG_PBS_KEY;
		w->varint = 0;
		w->vbytes = 0;
		r = rg_pb_pop(w, m);
		return r;
	}
	return RG_H2_ERR_PROTOBUF;
}

/* Bytes the walk can pass over without looking (a skipped field's body,
 * minus its last byte, which goes through rg_pb_step). */
RG_INLINE __u32 rg_pb_skippable(const struct rg_pb_walk *w)
{
	return w->st == RG_PBS_SKIP && w->left > 1 ? w->left - 1 : 0;
}

/* Pass over n <= rg_pb_skippable(w) bytes. */
RG_INLINE void rg_pb_skip(struct rg_pb_walk *w, __u32 n)
{
	w->left -= n;
	w->pos += n;
}

/* A GreptimeRequest of len bytes begins: the walk at its first byte. */
RG_INLINE void rg_pb_begin_request(struct rg_pb_walk *w, __u32 len)
{
	__builtin_memset(w, 0, sizeof(*w));
	w->end[0] = len;
	w->ctx[0] = RG_PB_REQUEST;
}

#endif /* ROWGATE_H2_PB_H */
