// SPDX-License-Identifier: MIT
/* rg-count: count the rows of one ingest body as rowgated does, or build a
 * real body with N rows (--encode) for tests that send payloads with curl. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "count.h"
#include "decompress.h"
#include "encode.h"
#include "../lib/io.h"

/* stdin is read up to this many bytes before the decoded cap applies. */
#define RG_COUNT_MAX_INPUT_BYTES (1ULL << 30)

struct opts {
	const char *protocol;
	const char *encoding;
	const char *content_type;
	uint64_t max_decoded_bytes;
	long long encode_rows;   /* -1: count mode */
	uint32_t series;
	const char *db_label;
	const char *metric;
	bool framed;
	bool legacy_summary;
	bool count_native_histograms;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rg-count --protocol P [--encoding E] [--content-type T] < body\n"
		"       rg-count --protocol P --encode N [--encoding E] [options] > body\n"
		"\n"
		"Counts the rows GreptimeDB will store for one request body and prints\n"
		"them as JSON, or writes a real body of N rows.\n"
		"\n"
		"  -p, --protocol P         influx, prom-rw, otlp-metrics, otlp-logs,\n"
		"                           otlp-traces, loki (by content type), loki-proto,\n"
		"                           loki-json, es-bulk, ndjson, opentsdb\n"
		"  -e, --encoding E         Content-Encoding: gzip, deflate, zstd, br, snappy,\n"
		"                           identity, or a list \"gzip, br\" (default: none;\n"
		"                           prom-rw and loki-proto are snappy by default)\n"
		"  -t, --content-type T     Content-Type (loki, ndjson, prom-rw v2 detection)\n"
		"  -m, --max-decoded BYTES  decompressed-size cap (default %llu)\n"
		"      --legacy-summary     OTLP summaries as one row per data point\n"
		"      --count-native-histograms  prom-rw: count samples of a request that\n"
		"                           has native histograms instead of 0 (GreptimeDB 1.x\n"
		"                           refuses it)\n"
		"  -n, --encode N           write a body with N rows to stdout\n"
		"      --series S           encode: series / streams / metrics (default N/100)\n"
		"      --db NAME            encode prom-rw: x_greptime_database label\n"
		"      --metric NAME        encode: metric / measurement name (default rg_test)\n"
		"      --framed             encode snappy in the framing format, not block\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 counted, 1 the body could not be counted (JSON error on\n"
		"stdout), 2 usage.\n"
		"\n"
		"EXAMPLES\n"
		"  rg-count -p prom-rw --encode 1000 --db metrics_db > rw.bin\n"
		"  curl --data-binary @rw.bin -H 'Content-Encoding: snappy' \\\n"
		"       -H 'Content-Type: application/x-protobuf' \\\n"
		"       http://127.0.0.1:4000/v1/prometheus/write\n"
		"  rg-count -p prom-rw -e snappy < rw.bin\n"
		"  rg-count -p otlp-metrics --encode 500 -e gzip | rg-count -p otlp-metrics -e gzip\n",
		(unsigned long long)RG_COUNT_DEFAULT_MAX_DECODED_BYTES);
}

static int read_all(FILE *f, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		size_t r;

		if (n == cap) {
			uint8_t *nb;

			if (cap >= RG_COUNT_MAX_INPUT_BYTES) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0) {
			if (ferror(f)) {
				free(buf);
				return -EIO;
			}
			break;
		}
	}
	*out = buf;
	*len = n;
	return 0;
}

static int do_encode(enum rg_payload_protocol p, const struct opts *o)
{
	struct rg_encode_opts eo = {
		.series = o->series, .db_label = o->db_label, .metric = o->metric,
	};
	uint8_t *body = NULL, *z = NULL;
	size_t len = 0, zlen = 0;
	enum rg_codec codecs[4];
	int n = 0, i, err;
	const char *e = o->encoding;

	/* the encoding list, applied left to right */
	while (e && *e) {
		const char *s;

		while (*e == ' ' || *e == ',')
			e++;
		s = e;
		while (*e && *e != ',' && *e != ' ')
			e++;
		if (e == s)
			break;
		if (n == 4 || (codecs[n] = rg_codec_parse(s, (size_t)(e - s))) ==
				      RG_CODEC_INVALID) {
			fprintf(stderr, "rg-count: unsupported encoding \"%.*s\"\n",
				(int)(e - s), s);
			return 2;
		}
		n++;
	}
	/* prom-rw and loki protobuf bodies are snappy themselves */
	if ((p == RG_PAYLOAD_PROM_RW || p == RG_PAYLOAD_LOKI_PROTO || p == RG_PAYLOAD_LOKI)) {
		for (i = 0; i < n; i++)
			if (codecs[i] == RG_CODEC_SNAPPY || codecs[i] == RG_CODEC_ZSTD)
				break;
		if (i == n) {
			if (n == 4) {
				fprintf(stderr, "rg-count: too many encodings\n");
				return 2;
			}
			memmove(codecs + 1, codecs, sizeof(codecs[0]) * (size_t)n);
			codecs[0] = RG_CODEC_SNAPPY;
			n++;
		}
	}
	err = rg_encode_rows(p, (uint64_t)o->encode_rows, &eo, &body, &len);
	if (err) {
		fprintf(stderr, "rg-count: encode: %s\n", strerror(-err));
		return 1;
	}
	for (i = 0; i < n; i++) {
		err = rg_compress(codecs[i], o->framed, body, len, &z, &zlen);
		free(body);
		if (err) {
			fprintf(stderr, "rg-count: compress: %s\n", strerror(-err));
			return 1;
		}
		body = z;
		len = zlen;
	}
	err = rg_write_all(STDOUT_FILENO, body, len);
	free(body);
	if (err) {
		fprintf(stderr, "rg-count: write: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}

static int do_count(enum rg_payload_protocol p, const struct opts *o)
{
	struct rg_count_limits lim;
	struct rg_row_counts c;
	json_t *j, *dbs;
	uint8_t *body;
	size_t len;
	uint32_t i;
	int err;

	err = read_all(stdin, &body, &len);
	if (err) {
		fprintf(stderr, "rg-count: reading stdin: %s\n", strerror(-err));
		return 1;
	}
	rg_count_limits_default(&lim);
	if (o->max_decoded_bytes)
		lim.max_decoded_bytes = o->max_decoded_bytes;
	lim.otlp_summary_legacy = o->legacy_summary;
	lim.prom_native_histograms_refused = !o->count_native_histograms;
	err = rg_count_payload(p, o->encoding, o->content_type, body, len, &lim, &c);
	free(body);

	j = json_object();
	json_object_set_new(j, "protocol", json_string(rg_payload_protocol_name(p)));
	if (err) {
		json_object_set_new(j, "error", json_string(c.err_msg));
		json_object_set_new(j, "error_class", json_string(rg_count_strerror(c.err)));
		json_object_set_new(j, "errno", json_integer(-err));
	} else {
		json_object_set_new(j, "rows", json_integer((json_int_t)c.rows));
		json_object_set_new(j, "default_db_rows", json_integer((json_int_t)c.default_rows));
		dbs = json_object();
		for (i = 0; i < c.n_dbs; i++)
			json_object_set_new(dbs, c.dbs[i].name,
					    json_integer((json_int_t)c.dbs[i].rows));
		json_object_set_new(j, "databases", dbs);
		json_object_set_new(j, "overflow_rows", json_integer((json_int_t)c.overflow_rows));
		json_object_set_new(j, "server_refuses",
				    json_boolean(c.flags & RG_COUNT_F_SERVER_REFUSES));
		if (c.flags & RG_COUNT_F_SERVER_REFUSES)
			json_object_set_new(j, "reason", json_string(c.err_msg));
		if (p == RG_PAYLOAD_PROM_RW)
			json_object_set_new(j, "native_histograms",
					    json_integer(c.prom_native_histograms));
	}
	json_object_set_new(j, "decoded_bytes", json_integer((json_int_t)c.decoded_bytes));
	json_dumpf(j, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(j);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	enum { O_SERIES = 256, O_DB, O_METRIC, O_FRAMED, O_LEGACY, O_NATIVE };
	static const struct option lo[] = {
		{ "protocol", required_argument, NULL, 'p' },
		{ "encoding", required_argument, NULL, 'e' },
		{ "content-type", required_argument, NULL, 't' },
		{ "max-decoded", required_argument, NULL, 'm' },
		{ "encode", required_argument, NULL, 'n' },
		{ "series", required_argument, NULL, O_SERIES },
		{ "db", required_argument, NULL, O_DB },
		{ "metric", required_argument, NULL, O_METRIC },
		{ "framed", no_argument, NULL, O_FRAMED },
		{ "legacy-summary", no_argument, NULL, O_LEGACY },
		{ "count-native-histograms", no_argument, NULL, O_NATIVE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .encode_rows = -1 };
	enum rg_payload_protocol p;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "p:e:t:m:n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.protocol = optarg; break;
		case 'e': o.encoding = optarg; break;
		case 't': o.content_type = optarg; break;
		case 'm':
			o.max_decoded_bytes = strtoull(optarg, &end, 10);
			if (*end || !o.max_decoded_bytes) {
				fprintf(stderr, "rg-count: bad --max-decoded \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'n':
			o.encode_rows = strtoll(optarg, &end, 10);
			if (*end || o.encode_rows < 0) {
				fprintf(stderr, "rg-count: bad --encode \"%s\"\n", optarg);
				return 2;
			}
			break;
		case O_SERIES: o.series = (uint32_t)strtoul(optarg, NULL, 10); break;
		case O_DB: o.db_label = optarg; break;
		case O_METRIC: o.metric = optarg; break;
		case O_FRAMED: o.framed = true; break;
		case O_LEGACY: o.legacy_summary = true; break;
		case O_NATIVE: o.count_native_histograms = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.protocol || optind != argc) {
		usage(stderr);
		return 2;
	}
	p = rg_payload_protocol_parse(o.protocol);
	if (p == RG_PAYLOAD_INVALID) {
		fprintf(stderr, "rg-count: unknown protocol \"%s\"\n", o.protocol);
		return 2;
	}
	return o.encode_rows >= 0 ? do_encode(p, &o) : do_count(p, &o);
}
