/* SPDX-License-Identifier: GPL-2.0 */
/* Bounded, streaming undoing of HTTP Content-Encodings (gzip, deflate, zstd,
 * br, snappy block and framed).  Output goes to a sink in chunks; the total
 * is capped before any byte past the cap is produced or allocated, so a small
 * body that claims (or expands to) gigabytes costs at most the cap. */
#ifndef ROWGATE_DECODE_DECOMPRESS_H
#define ROWGATE_DECODE_DECOMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include "count.h"

enum rg_codec {
	RG_CODEC_INVALID = -1,
	RG_CODEC_IDENTITY = 0,
	RG_CODEC_GZIP,
	RG_CODEC_DEFLATE,   /* zlib-wrapped (RFC 9110), raw deflate also accepted */
	RG_CODEC_ZSTD,
	RG_CODEC_BR,
	RG_CODEC_SNAPPY,    /* block format; framed when the stream identifier leads */
};

/* Streaming chunk size: what one inflate/zstd/brotli step writes at most. */
#define RG_DECOMP_CHUNK_BYTES (64U << 10)

/* Receives decoded bytes; returns 0, or an enum rg_count_err to stop. */
struct rg_sink {
	int (*write)(struct rg_sink *s, const uint8_t *p, size_t n);
	uint64_t total;  /* bytes written so far (maintained by rg_decompress) */
};

/* A sink that gathers everything into one malloc'ed buffer. */
struct rg_buf_sink {
	struct rg_sink sink;
	uint8_t *buf;
	size_t len, cap;
	size_t max;      /* never grows past this */
};

void rg_buf_sink_init(struct rg_buf_sink *s, size_t max);
void rg_buf_sink_free(struct rg_buf_sink *s);

/* Parse one coding name ("gzip", "x-gzip", "deflate", "zstd", "br",
 * "snappy", "identity"), case-insensitive, n bytes. */
enum rg_codec rg_codec_parse(const char *name, size_t n);

/*
 * Undo codec c over in[0..len) into sink, at most max_out bytes in total.
 * Returns RG_COUNT_OK or an rg_count_err (E_TOO_LARGE as soon as the output
 * would pass max_out), with a reason in msg (msg_len bytes, may be NULL).
 */
int rg_decompress(enum rg_codec c, const uint8_t *in, size_t len,
		  uint64_t max_out, struct rg_sink *sink, char *msg,
		  size_t msg_len);

/* CRC-32C (Castagnoli) and the snappy framing format's masking of it. */
uint32_t rg_crc32c(uint32_t crc, const uint8_t *p, size_t n);
uint32_t rg_snappy_mask_crc(uint32_t crc);

/* The framing format's stream identifier chunk (10 bytes). */
extern const uint8_t rg_snappy_stream_id[10];

#endif /* ROWGATE_DECODE_DECOMPRESS_H */
