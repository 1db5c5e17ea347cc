// SPDX-License-Identifier: MIT
/* Bounded streaming decompression with the field's libraries: zlib, libzstd,
 * libbrotlidec, libsnappy.  No size a stream claims is trusted: output is
 * produced in RG_DECOMP_CHUNK_BYTES steps and counted against the cap. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include <brotli/decode.h>
#include <snappy-c.h>
#include "decompress.h"
#include "internal.h"

/* The framing format never has more than this in one chunk (its spec). */
#define RG_SNAPPY_FRAME_MAX_BYTES 65536U
/* zstd refuses windows larger than this: 2^27 = 128 MiB, zstd's own default
 * limit, lowered further to the output cap (a window past the whole output
 * is never needed). */
#define RG_ZSTD_WINDOW_LOG_MAX 27
#define RG_ZSTD_WINDOW_LOG_MIN 10  /* zstd's ZSTD_WINDOWLOG_ABSOLUTEMIN */

const uint8_t rg_snappy_stream_id[10] = {
	0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'
};

static void set_msg(char *msg, size_t msg_len, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !msg_len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, msg_len, fmt, ap);
	va_end(ap);
}

static int buf_sink_write(struct rg_sink *s, const uint8_t *p, size_t n)
{
	struct rg_buf_sink *b = (struct rg_buf_sink *)s;

	if (n > b->max - b->len)
		return RG_COUNT_E_TOO_LARGE;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : RG_DECOMP_CHUNK_BYTES;
		uint8_t *nb;

		while (cap < b->len + n)
			cap = cap > b->max / 2 ? b->max : cap * 2;
		nb = realloc(b->buf, cap);
		if (!nb)
			return RG_COUNT_E_NOMEM;
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	return RG_COUNT_OK;
}

void rg_buf_sink_init(struct rg_buf_sink *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->sink.write = buf_sink_write;
	s->max = max;
}

void rg_buf_sink_free(struct rg_buf_sink *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}

enum rg_codec rg_codec_parse(const char *name, size_t n)
{
	static const struct {
		const char *name;
		enum rg_codec c;
	} tab[] = {
		{ "identity", RG_CODEC_IDENTITY }, { "gzip", RG_CODEC_GZIP },
		{ "x-gzip", RG_CODEC_GZIP },       { "deflate", RG_CODEC_DEFLATE },
		{ "zstd", RG_CODEC_ZSTD },         { "br", RG_CODEC_BR },
		{ "snappy", RG_CODEC_SNAPPY },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == n && !strncasecmp(tab[i].name, name, n))
			return tab[i].c;
	return RG_CODEC_INVALID;
}

/* Hand n bytes to the sink, enforcing the cap. */
static int emit(struct rg_sink *sink, uint64_t max_out, const uint8_t *p,
		size_t n, char *msg, size_t msg_len)
{
	int err;

	if (!n)
		return RG_COUNT_OK;
	if (n > max_out - sink->total) {
		set_msg(msg, msg_len, "decoded body exceeds the %llu-byte cap",
			(unsigned long long)max_out);
		return RG_COUNT_E_TOO_LARGE;
	}
	err = sink->write(sink, p, n);
	if (err == RG_COUNT_E_TOO_LARGE)
		set_msg(msg, msg_len, "decoded body exceeds the %llu-byte cap",
			(unsigned long long)max_out);
	else if (err == RG_COUNT_E_NOMEM)
		set_msg(msg, msg_len, "out of memory buffering the decoded body");
	sink->total += n;
	return err;
}

/* A zlib header: CM = 8, window <= 32K, FCHECK makes it a multiple of 31. */
static bool looks_zlib(const uint8_t *in, size_t len)
{
	return len >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 &&
	       ((in[0] << 8) | in[1]) % 31 == 0;
}

static int do_zlib(enum rg_codec c, const uint8_t *in, size_t len,
		   uint64_t max_out, struct rg_sink *sink, char *msg,
		   size_t msg_len)
{
	uint8_t *chunk = malloc(RG_DECOMP_CHUNK_BYTES);
	z_stream z;
	int wbits, zr, err = RG_COUNT_OK;
	const char *what = c == RG_CODEC_GZIP ? "gzip" : "deflate";

	if (!chunk) {
		set_msg(msg, msg_len, "out of memory");
		return RG_COUNT_E_NOMEM;
	}
	memset(&z, 0, sizeof(z));
	if (c == RG_CODEC_GZIP)
		wbits = 15 + 16;
	else
		wbits = looks_zlib(in, len) ? 15 : -15;
	if (inflateInit2(&z, wbits) != Z_OK) {
		free(chunk);
		set_msg(msg, msg_len, "out of memory");
		return RG_COUNT_E_NOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = 0;
	for (;;) {
		/* avail_in is 32-bit: feed at most 1 GiB at a time */
		size_t left = len - (size_t)((const uint8_t *)z.next_in - in);

		if (!z.avail_in)
			z.avail_in = left > (1U << 30) ? (1U << 30) : (uInt)left;
		z.next_out = chunk;
		z.avail_out = RG_DECOMP_CHUNK_BYTES;
		zr = inflate(&z, Z_NO_FLUSH);
		err = emit(sink, max_out, chunk, RG_DECOMP_CHUNK_BYTES - z.avail_out,
			   msg, msg_len);
		if (err)
			goto out;
		if (zr == Z_STREAM_END) {
			left = len - (size_t)((const uint8_t *)z.next_in - in);
			/* gzip allows several members one after the other */
			if (c == RG_CODEC_GZIP && left) {
				if (inflateReset(&z) != Z_OK) {
					err = RG_COUNT_E_CORRUPT;
					goto out;
				}
				continue;
			}
			if (left) {
				set_msg(msg, msg_len, "%s: %zu bytes after the end of the stream",
					what, left);
				err = RG_COUNT_E_CORRUPT;
			}
			goto out;
		}
		if (zr == Z_OK)
			continue;
		left = len - (size_t)((const uint8_t *)z.next_in - in);
		if (zr == Z_BUF_ERROR && z.avail_out && !z.avail_in && !left) {
			/* no progress possible: input exhausted before the end */
			set_msg(msg, msg_len, "%s: stream truncated", what);
			err = RG_COUNT_E_TRUNCATED;
			goto out;
		}
		if (zr == Z_BUF_ERROR)
			continue;
		if (zr == Z_MEM_ERROR) {
			set_msg(msg, msg_len, "out of memory");
			err = RG_COUNT_E_NOMEM;
			goto out;
		}
		set_msg(msg, msg_len, "%s: invalid data (%s)", what,
			z.msg ? z.msg : "inflate error");
		err = RG_COUNT_E_CORRUPT;
		goto out;
	}
out:
	inflateEnd(&z);
	free(chunk);
	return err;
}

static int ceil_log2(uint64_t x)
{
	int l = 0;

	while (l < 63 && (1ULL << l) < x)
		l++;
	return l;
}

static int do_zstd(const uint8_t *in, size_t len, uint64_t max_out,
		   struct rg_sink *sink, char *msg, size_t msg_len)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	uint8_t *chunk = malloc(RG_DECOMP_CHUNK_BYTES);
	ZSTD_inBuffer ib = { in, len, 0 };
	size_t zr = 0;
	int err = RG_COUNT_OK, wlog;

	if (!d || !chunk) {
		set_msg(msg, msg_len, "out of memory");
		err = RG_COUNT_E_NOMEM;
		goto out;
	}
	wlog = ceil_log2(max_out);
	if (wlog > RG_ZSTD_WINDOW_LOG_MAX)
		wlog = RG_ZSTD_WINDOW_LOG_MAX;
	if (wlog < RG_ZSTD_WINDOW_LOG_MIN)
		wlog = RG_ZSTD_WINDOW_LOG_MIN;
	ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
	if (!len) {
		set_msg(msg, msg_len, "zstd: empty stream");
		err = RG_COUNT_E_TRUNCATED;
		goto out;
	}
	for (;;) {
		ZSTD_outBuffer ob = { chunk, RG_DECOMP_CHUNK_BYTES, 0 };

		zr = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(zr)) {
			ZSTD_ErrorCode ec = ZSTD_getErrorCode(zr);

			set_msg(msg, msg_len, "zstd: %s", ZSTD_getErrorName(zr));
			err = ec == ZSTD_error_memory_allocation ? RG_COUNT_E_NOMEM :
			      ec == ZSTD_error_frameParameter_windowTooLarge ?
				      RG_COUNT_E_TOO_LARGE : RG_COUNT_E_CORRUPT;
			goto out;
		}
		err = emit(sink, max_out, chunk, ob.pos, msg, msg_len);
		if (err)
			goto out;
		/* the output buffer was not filled: all input that can be used was */
		if (ob.pos < ob.size && ib.pos == ib.size)
			break;
	}
	if (zr != 0) {
		set_msg(msg, msg_len, "zstd: stream truncated");
		err = RG_COUNT_E_TRUNCATED;
	}
out:
	ZSTD_freeDCtx(d);
	free(chunk);
	return err;
}

static int do_brotli(const uint8_t *in, size_t len, uint64_t max_out,
		     struct rg_sink *sink, char *msg, size_t msg_len)
{
	BrotliDecoderState *st = BrotliDecoderCreateInstance(NULL, NULL, NULL);
	uint8_t *chunk = malloc(RG_DECOMP_CHUNK_BYTES);
	const uint8_t *next_in = in;
	size_t avail_in = len;
	int err = RG_COUNT_OK;

	if (!st || !chunk) {
		set_msg(msg, msg_len, "out of memory");
		err = RG_COUNT_E_NOMEM;
		goto out;
	}
	for (;;) {
		uint8_t *next_out = chunk;
		size_t avail_out = RG_DECOMP_CHUNK_BYTES;
		BrotliDecoderResult r = BrotliDecoderDecompressStream(
			st, &avail_in, &next_in, &avail_out, &next_out, NULL);

		err = emit(sink, max_out, chunk, RG_DECOMP_CHUNK_BYTES - avail_out,
			   msg, msg_len);
		if (err)
			goto out;
		if (r == BROTLI_DECODER_RESULT_SUCCESS) {
			if (avail_in) {
				set_msg(msg, msg_len, "br: %zu bytes after the end of the stream",
					avail_in);
				err = RG_COUNT_E_CORRUPT;
			}
			goto out;
		}
		if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
			continue;
		if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
			set_msg(msg, msg_len, "br: stream truncated");
			err = RG_COUNT_E_TRUNCATED;
			goto out;
		}
		set_msg(msg, msg_len, "br: %s",
			BrotliDecoderErrorString(BrotliDecoderGetErrorCode(st)));
		err = RG_COUNT_E_CORRUPT;
		goto out;
	}
out:
	if (st)
		BrotliDecoderDestroyInstance(st);
	free(chunk);
	return err;
}

/* Snappy block: the varint length header is checked against the cap before
 * anything is allocated; libsnappy validates before it decodes. */
static int do_snappy_block(const uint8_t *in, size_t len, uint64_t max_out,
			   struct rg_sink *sink, char *msg, size_t msg_len)
{
	size_t ulen;
	char *out;
	int err;

	if (snappy_uncompressed_length((const char *)in, len, &ulen) != SNAPPY_OK) {
		set_msg(msg, msg_len, "snappy: invalid length header");
		return len ? RG_COUNT_E_CORRUPT : RG_COUNT_E_TRUNCATED;
	}
	if (ulen > max_out - sink->total) {
		set_msg(msg, msg_len,
			"snappy: block claims %zu decoded bytes, over the %llu-byte cap",
			ulen, (unsigned long long)max_out);
		return RG_COUNT_E_TOO_LARGE;
	}
	if (snappy_validate_compressed_buffer((const char *)in, len) != SNAPPY_OK) {
		set_msg(msg, msg_len, "snappy: invalid or truncated block");
		return RG_COUNT_E_CORRUPT;
	}
	out = malloc(ulen ? ulen : 1);
	if (!out) {
		set_msg(msg, msg_len, "out of memory");
		return RG_COUNT_E_NOMEM;
	}
	if (snappy_uncompress((const char *)in, len, out, &ulen) != SNAPPY_OK) {
		free(out);
		set_msg(msg, msg_len, "snappy: invalid block");
		return RG_COUNT_E_CORRUPT;
	}
	err = emit(sink, max_out, (const uint8_t *)out, ulen, msg, msg_len);
	free(out);
	return err;
}

/* CRC-32C, reflected polynomial 0x82F63B78; table built on first use. */
uint32_t rg_crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	static int ready;
	size_t i;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		uint32_t t[256];

		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;
			int k;

			for (k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
			t[i] = c;
		}
		memcpy(table, t, sizeof(t)); /* same bytes from any racing thread */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	crc = ~crc;
	for (i = 0; i < n; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t rg_snappy_mask_crc(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

/* Snappy framing format: stream identifier, then typed chunks of at most
 * 64 KiB decoded each, every data chunk carrying a masked CRC-32C. */
static int do_snappy_framed(const uint8_t *in, size_t len, uint64_t max_out,
			    struct rg_sink *sink, char *msg, size_t msg_len)
{
	char *chunk = malloc(RG_SNAPPY_FRAME_MAX_BYTES);
	size_t off = 0;
	int err = RG_COUNT_OK;
	bool seen_id = false;

	if (!chunk) {
		set_msg(msg, msg_len, "out of memory");
		return RG_COUNT_E_NOMEM;
	}
	while (off < len) {
		uint8_t type;
		size_t clen, ulen;
		const uint8_t *data;

		if (len - off < 4) {
			set_msg(msg, msg_len, "snappy frame: truncated chunk header");
			err = RG_COUNT_E_TRUNCATED;
			goto out;
		}
		type = in[off];
		clen = in[off + 1] | (size_t)in[off + 2] << 8 | (size_t)in[off + 3] << 16;
		if (clen > len - off - 4) {
			set_msg(msg, msg_len, "snappy frame: truncated chunk");
			err = RG_COUNT_E_TRUNCATED;
			goto out;
		}
		data = in + off + 4;
		off += 4 + clen;
		if (type == 0xff) {
			if (clen != 6 || memcmp(data, rg_snappy_stream_id + 4, 6)) {
				set_msg(msg, msg_len, "snappy frame: bad stream identifier");
				err = RG_COUNT_E_CORRUPT;
				goto out;
			}
			seen_id = true;
			continue;
		}
		if (!seen_id) {
			set_msg(msg, msg_len, "snappy frame: missing stream identifier");
			err = RG_COUNT_E_CORRUPT;
			goto out;
		}
		if (type == 0x00 || type == 0x01) {
			uint32_t want, got;

			if (clen < 4) {
				set_msg(msg, msg_len, "snappy frame: chunk without checksum");
				err = RG_COUNT_E_CORRUPT;
				goto out;
			}
			want = rg_le32(data);
			if (type == 0x00) {
				if (snappy_uncompressed_length((const char *)data + 4,
							       clen - 4, &ulen) != SNAPPY_OK ||
				    ulen > RG_SNAPPY_FRAME_MAX_BYTES ||
				    snappy_uncompress((const char *)data + 4, clen - 4,
						      chunk, &ulen) != SNAPPY_OK) {
					set_msg(msg, msg_len, "snappy frame: invalid compressed chunk");
					err = RG_COUNT_E_CORRUPT;
					goto out;
				}
			} else {
				ulen = clen - 4;
				if (ulen > RG_SNAPPY_FRAME_MAX_BYTES) {
					set_msg(msg, msg_len, "snappy frame: oversized chunk");
					err = RG_COUNT_E_CORRUPT;
					goto out;
				}
				memcpy(chunk, data + 4, ulen);
			}
			got = rg_snappy_mask_crc(rg_crc32c(0, (uint8_t *)chunk, ulen));
			if (got != want) {
				set_msg(msg, msg_len, "snappy frame: checksum mismatch");
				err = RG_COUNT_E_CORRUPT;
				goto out;
			}
			err = emit(sink, max_out, (uint8_t *)chunk, ulen, msg, msg_len);
			if (err)
				goto out;
			continue;
		}
		if (type >= 0x80)   /* skippable, padding included */
			continue;
		set_msg(msg, msg_len, "snappy frame: reserved unskippable chunk 0x%02x", type);
		err = RG_COUNT_E_CORRUPT;
		goto out;
	}
	if (!seen_id) {
		set_msg(msg, msg_len, "snappy frame: empty stream");
		err = RG_COUNT_E_TRUNCATED;
	}
out:
	free(chunk);
	return err;
}

int rg_decompress(enum rg_codec c, const uint8_t *in, size_t len,
		  uint64_t max_out, struct rg_sink *sink, char *msg,
		  size_t msg_len)
{
	switch (c) {
	case RG_CODEC_IDENTITY:
		return emit(sink, max_out, in, len, msg, msg_len);
	case RG_CODEC_GZIP:
	case RG_CODEC_DEFLATE:
		return do_zlib(c, in, len, max_out, sink, msg, msg_len);
	case RG_CODEC_ZSTD:
		return do_zstd(in, len, max_out, sink, msg, msg_len);
	case RG_CODEC_BR:
		return do_brotli(in, len, max_out, sink, msg, msg_len);
	case RG_CODEC_SNAPPY:
		if (len >= sizeof(rg_snappy_stream_id) &&
		    !memcmp(in, rg_snappy_stream_id, sizeof(rg_snappy_stream_id)))
			return do_snappy_framed(in, len, max_out, sink, msg, msg_len);
		return do_snappy_block(in, len, max_out, sink, msg, msg_len);
	default:
		set_msg(msg, msg_len, "unsupported content encoding");
		return RG_COUNT_E_ENCODING;
	}
}
