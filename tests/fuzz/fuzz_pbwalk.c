// SPDX-License-Identifier: MIT
/* The protobuf wire walkers (user/decode/pbwalk.c) against protobuf-c's
 * unpacked messages counted by the same rules (tests/unit/decode_ref.c):
 * prom remote write, OTLP metrics, logs and traces, Loki push.
 *
 * The walker follows the server's decoders (prost, GreptimeDB's own prom
 * decoder), which differ from protobuf-c on purpose: a repeated oneof
 * member merges rather than replaces, strings keep their NUL bytes, some
 * wire types are refused (pbwalk.c's header).  So the comparison is on
 * the message as protobuf-c sees it: the input unpacked and packed again
 * (canonical), where both must give the same counts, and which the walker
 * must accept when protobuf-c knows every field in it.  On the raw input the
 * walker's result must be consistent: the database split adds up to the
 * rows, every named database is a possible key, every error has a reason.
 *
 * Input: a byte choosing the message and the limits, then the body. */
#include <protobuf-c/protobuf-c.h>
#include "count.h"
#include "internal.h"
#include "decode_ref.h"
#include "proto/prometheus_remote.pb-c.h"
#include "proto/otlp.pb-c.h"
#include "proto/loki_push.pb-c.h"
#include "fuzz.h"

enum { PROM, OTLP_METRICS, OTLP_LOGS, OTLP_TRACES, LOKI, N_MSGS };

static const ProtobufCMessageDescriptor *const descs[N_MSGS] = {
	&prometheus__write_request__descriptor,
	&rowgate__otlp__export_metrics_service_request__descriptor,
	&rowgate__otlp__export_logs_service_request__descriptor,
	&rowgate__otlp__export_trace_service_request__descriptor,
	&logproto__push_request__descriptor,
};

static int walk(int which, const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		struct rg_row_counts *out)
{
	memset(out, 0, sizeof(*out));
	switch (which) {
	case PROM:
		return rg_pb_count_prom(p, n, lim, out);
	case OTLP_METRICS:
		return rg_pb_count_otlp_metrics(p, n, lim, out);
	case OTLP_LOGS:
		return rg_pb_count_otlp_logs(p, n, out);
	case OTLP_TRACES:
		return rg_pb_count_otlp_traces(p, n, out);
	default:
		return rg_pb_count_loki(p, n, out);
	}
}

static int reference(int which, const uint8_t *p, size_t n, const struct rg_count_limits *lim,
		     struct rg_row_counts *out)
{
	switch (which) {
	case PROM:
		return ref_count_prom(p, n, lim, out);
	case OTLP_METRICS:
		return ref_count_otlp_metrics(p, n, lim, out);
	case OTLP_LOGS:
		return ref_count_otlp_logs(p, n, out);
	case OTLP_TRACES:
		return ref_count_otlp_traces(p, n, out);
	default:
		return ref_count_loki(p, n, out);
	}
}

/* Whether m or a message inside it kept fields protobuf-c does not know.
 * The walker may refuse those where the server's decoder does: field
 * number 0, keys over 32 bits, varints over 64 bits (protobuf-c keeps them
 * all), non-length-delimited WriteRequest fields (GreptimeDB's prom
 * decoder), and fields of the upstream schemas that proto/ leaves out
 * (exemplars) with another wire type. */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	unsigned i;
	size_t j;

	if (m->n_unknown_fields)
		return true;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v =
				*(ProtobufCMessage *const *const *)(base + f->offset);

			for (j = 0; j < n; j++)
				if (has_unknown(v[j]))
					return true;
			continue;
		}
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (*(ProtobufCMessage *const *)(base + f->offset) &&
		    has_unknown(*(ProtobufCMessage *const *)(base + f->offset)))
			return true;
	}
	return false;
}

/* The input as protobuf-c unpacks and packs it; NULL if it refuses it. */
static uint8_t *canonical(int which, const uint8_t *p, size_t n, size_t *len, bool *unknown)
{
	ProtobufCMessage *m = protobuf_c_message_unpack(descs[which], NULL, n, p);
	uint8_t *out;

	if (!m)
		return NULL;
	*unknown = has_unknown(m);
	*len = protobuf_c_message_get_packed_size(m);
	out = malloc(*len ? *len : 1);
	if (!out)
		abort();
	FUZZ_ASSERT(protobuf_c_message_pack(m, out) == *len, "pack");
	protobuf_c_message_free_unpacked(m, NULL);
	return out;
}

static void consistent(int err, const struct rg_row_counts *c)
{
	uint64_t sum = c->default_rows + c->overflow_rows;
	uint32_t i;

	FUZZ_ASSERT(err >= RG_COUNT_OK && err < RG_COUNT_E__COUNT, "class %d", err);
	if (err) {
		FUZZ_ASSERT(c->err_msg[0], "error %d without a reason", err);
		return;
	}
	FUZZ_ASSERT(c->n_dbs <= RG_COUNT_MAX_DBS, "%u databases", c->n_dbs);
	for (i = 0; i < c->n_dbs; i++) {
		size_t len = strnlen(c->dbs[i].name, sizeof(c->dbs[i].name));

		FUZZ_ASSERT(len > 0 && len < RG_DB_NAME_MAX, "database name of %zu bytes", len);
		FUZZ_ASSERT(rg_row_counts_db(c, c->dbs[i].name) == c->dbs[i].rows, "database %s twice",
			    c->dbs[i].name);
		sum += c->dbs[i].rows;
	}
	FUZZ_ASSERT(sum == c->rows, "split adds up to %llu of %llu rows", (unsigned long long)sum,
		    (unsigned long long)c->rows);
}

/* Databases with 0 rows (series without samples) are not compared. */
static void same_counts(const struct rg_row_counts *a, const struct rg_row_counts *b)
{
	uint32_t i;

	FUZZ_ASSERT(a->rows == b->rows && a->default_rows == b->default_rows &&
			    a->overflow_rows == b->overflow_rows &&
			    a->prom_native_histograms == b->prom_native_histograms &&
			    (a->flags & RG_COUNT_F_SERVER_REFUSES) ==
				    (b->flags & RG_COUNT_F_SERVER_REFUSES),
		    "walker rows %llu default %llu overflow %llu flags %#x, protobuf-c %llu %llu "
		    "%llu %#x",
		    (unsigned long long)a->rows, (unsigned long long)a->default_rows,
		    (unsigned long long)a->overflow_rows, a->flags, (unsigned long long)b->rows,
		    (unsigned long long)b->default_rows, (unsigned long long)b->overflow_rows,
		    b->flags);
	for (i = 0; i < a->n_dbs; i++)
		FUZZ_ASSERT(a->dbs[i].rows == rg_row_counts_db(b, a->dbs[i].name),
			    "database %s: walker %llu rows, protobuf-c %llu", a->dbs[i].name,
			    (unsigned long long)a->dbs[i].rows,
			    (unsigned long long)rg_row_counts_db(b, a->dbs[i].name));
	for (i = 0; i < b->n_dbs; i++)
		FUZZ_ASSERT(b->dbs[i].rows == rg_row_counts_db(a, b->dbs[i].name),
			    "database %s: protobuf-c %llu rows, walker %llu", b->dbs[i].name,
			    (unsigned long long)b->dbs[i].rows,
			    (unsigned long long)rg_row_counts_db(a, b->dbs[i].name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t sel = fuzz_u8(&in);
	int which = sel % N_MSGS, w;
	struct rg_count_limits lim;
	struct rg_row_counts *got = malloc(sizeof(*got)), *ref = calloc(1, sizeof(*ref));
	uint8_t *canon;
	size_t clen = 0;
	bool unknown = false;

	if (!got || !ref)
		abort();
	rg_count_limits_default(&lim);
	lim.prom_native_histograms_refused = (sel >> 4) & 1;
	lim.otlp_summary_legacy = (sel >> 5) & 1;

	w = walk(which, in.p, in.n, &lim, got);
	consistent(w, got);

	canon = canonical(which, in.p, in.n, &clen, &unknown);
	if (canon) {
		FUZZ_ASSERT(reference(which, in.p, in.n, &lim, ref) == 0, "reference refuses");
		w = walk(which, canon, clen, &lim, got);
		consistent(w, got);
		if (!unknown)
			FUZZ_ASSERT(w == RG_COUNT_OK,
				    "message %d: walker refuses protobuf-c's "
				    "encoding: %s",
				    which, got->err_msg);
		if (w == RG_COUNT_OK)
			same_counts(got, ref);
		free(canon);
	}
	free(got);
	free(ref);
	return 0;
}
