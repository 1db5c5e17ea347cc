// SPDX-License-Identifier: MIT
/* Content-Encoding decoding (user/decode/decompress.c): gzip, deflate,
 * zstd, br, snappy block and framed.
 *
 * Raw mode: any bytes under any codec and output cap: never more output
 * than the cap, errors are classes count.h names.  Round-trip mode: the
 * input compressed by the real library decodes back to itself, and with a
 * cap one byte short it is refused as too large.
 *
 * Input: a mode/codec byte, a cap byte, then the data. */
#include "count.h"
#include "decompress.h"
#include "encode.h"
#include "fuzz.h"

static const enum rg_codec codecs[] = { RG_CODEC_IDENTITY, RG_CODEC_GZIP, RG_CODEC_DEFLATE,
					RG_CODEC_ZSTD,	   RG_CODEC_BR,	  RG_CODEC_SNAPPY };
#define N_CODECS (sizeof(codecs) / sizeof(codecs[0]))

static int decode(enum rg_codec c, const uint8_t *p, size_t n, uint64_t cap,
		  struct rg_buf_sink *sink)
{
	char msg[128];
	int r;

	rg_buf_sink_init(sink, (size_t)cap);
	msg[0] = 0;
	r = rg_decompress(c, p, n, cap, &sink->sink, msg, sizeof(msg));
	FUZZ_ASSERT(r >= RG_COUNT_OK && r < RG_COUNT_E__COUNT, "class %d", r);
	FUZZ_ASSERT(sink->len <= cap && sink->sink.total == sink->len,
		    "%zu bytes out (total %llu), cap %llu", sink->len,
		    (unsigned long long)sink->sink.total, (unsigned long long)cap);
	if (r != RG_COUNT_OK)
		FUZZ_ASSERT(memchr(msg, 0, sizeof(msg)), "message not terminated");
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t mode = fuzz_u8(&in), capb = fuzz_u8(&in);
	enum rg_codec c = codecs[(mode & 0x7f) % N_CODECS];
	bool framed = (mode >> 3) & 1;
	struct rg_buf_sink sink;
	uint8_t *z = NULL;
	size_t zlen = 0;
	int r;

	if (!(mode & 0x80)) {
		/* caps from a few bytes to 1 MiB: small ones hit the limit */
		decode(c, in.p, in.n, (uint64_t)1 << (capb % 21), &sink);
		rg_buf_sink_free(&sink);
		return 0;
	}
	if (rg_compress(c, framed, in.p, in.n, &z, &zlen))
		abort();
	r = decode(c, z, zlen, in.n + 64, &sink);
	FUZZ_ASSERT(r == RG_COUNT_OK, "codec %d%s: own output refused (%d)", c,
		    framed ? " framed" : "", r);
	FUZZ_ASSERT(sink.len == in.n && (!in.n || memcmp(sink.buf, in.p, in.n) == 0),
		    "codec %d%s: %zu bytes back from %zu", c, framed ? " framed" : "", sink.len,
		    in.n);
	rg_buf_sink_free(&sink);
	if (in.n) {
		r = decode(c, z, zlen, in.n - 1, &sink);
		FUZZ_ASSERT(r == RG_COUNT_E_TOO_LARGE, "codec %d: cap %zu gave %d", c, in.n - 1, r);
		rg_buf_sink_free(&sink);
	}
	free(z);
	return 0;
}
