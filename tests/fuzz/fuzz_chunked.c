// SPDX-License-Identifier: MIT
/* The chunked-body parser (rowgate/http.h) against a strict whole-buffer
 * reference of RFC 9112 §7.1 with the parser's limits, and streamed (state
 * copied between pieces, as the kernel keeps it in a map) against whole.
 *
 * Input: one byte choosing the piece size of the streamed run, then the
 * body. */
#include "rowgate/http.h"
#include "fuzz.h"

struct outcome {
	int result;    /* RG_CHUNK_DONE, RG_CHUNK_ERR, or RG_CHUNK_FRAMING if it ran out */
	size_t used;   /* bytes consumed up to DONE or the failing byte */
	size_t data;   /* data bytes */
	uint64_t hash; /* of the data bytes and their positions */
};

static void mix(struct outcome *o, size_t i, uint8_t c)
{
	o->hash = (o->hash ^ (i * 131 + c)) * 0x100000001b3ULL;
}

static void parse(const uint8_t *p, size_t n, size_t piece, struct outcome *o)
{
	struct rg_chunked s, copy;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->result = RG_CHUNK_FRAMING;
	rg_chunked_init(&s);
	for (i = 0; i < n; i++) {
		int r;

		if (piece && i % piece == 0) {
			memcpy(&copy, &s, sizeof(s));
			memset(&s, 0x5a, sizeof(s));
			memcpy(&s, &copy, sizeof(s));
		}
		r = rg_chunked_step(&s, p[i]);
		if (r == RG_CHUNK_DATA) {
			o->data++;
			mix(o, i, p[i]);
		}
		if (r == RG_CHUNK_DONE || r == RG_CHUNK_ERR) {
			o->result = r;
			o->used = i + 1;
			return;
		}
	}
	o->used = n;
}

static bool is_crlf(const uint8_t *p, size_t n, size_t i)
{
	return i + 1 < n && p[i] == '\r' && p[i + 1] == '\n';
}

/* A field line's bytes from i up to its CR: the parser's rg_is_field_byte. */
static size_t field_end(const uint8_t *p, size_t n, size_t i)
{
	while (i < n && rg_is_field_byte(p[i]))
		i++;
	return i;
}

/* The reference: RG_CHUNK_DONE with used, or RG_CHUNK_ERR (where it fails
 * is not compared: the parser may notice later), or RG_CHUNK_FRAMING when
 * the input ends first. */
static void reference(const uint8_t *p, size_t n, struct outcome *o)
{
	size_t i = 0;

	memset(o, 0, sizeof(*o));
	for (;;) {
		uint64_t size = 0;
		size_t digits = 0, j;

		while (i < n && rg_hex_value(p[i]) >= 0) {
			if (++digits > RG_CHUNK_SIZE_DIGITS)
				goto err;
			size = size << 4 | (uint64_t)rg_hex_value(p[i]);
			i++;
		}
		if (i == n)
			goto more;
		if (!digits)
			goto err;
		/* chunk-ext, from ';' up to CR; or blanks alone up to CR (the
		 * only reading Go and hyper share) */
		if (p[i] == ';') {
			i = field_end(p, n, i);
		} else {
			while (i < n && (p[i] == ' ' || p[i] == '\t'))
				i++;
		}
		if (i == n)
			goto more;
		if (p[i] != '\r')
			goto err;
		if (i + 1 == n)
			goto more;
		if (p[i + 1] != '\n')
			goto err;
		i += 2;
		if (size == 0)
			break;
		for (j = 0; j < size; j++, i++) {
			if (i == n)
				goto more;
			o->data++;
			mix(o, i, p[i]);
		}
		if (i == n || (p[i] == '\r' && i + 1 == n))
			goto more;
		if (!is_crlf(p, n, i))
			goto err;
		i += 2;
	}
	/* trailer fields, then the empty line */
	for (;;) {
		if (i == n || (p[i] == '\r' && i + 1 == n))
			goto more;
		if (is_crlf(p, n, i)) {
			o->result = RG_CHUNK_DONE;
			o->used = i + 2;
			return;
		}
		if (!rg_is_tchar(p[i]))
			goto err;
		i = field_end(p, n, i);
		if (i == n || (p[i] == '\r' && i + 1 == n))
			goto more;
		if (!is_crlf(p, n, i))
			goto err;
		i += 2;
	}
more:
	o->result = RG_CHUNK_FRAMING;
	o->used = n;
	return;
err:
	o->result = RG_CHUNK_ERR;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t piece = fuzz_u8(&in) % 17 + 1;
	struct outcome whole, streamed, ref;

	parse(in.p, in.n, 0, &whole);
	parse(in.p, in.n, piece, &streamed);
	FUZZ_ASSERT(memcmp(&whole, &streamed, sizeof(whole)) == 0,
		    "pieces of %zu: result %d/%d used %zu/%zu data %zu/%zu", piece, streamed.result,
		    whole.result, streamed.used, whole.used, streamed.data, whole.data);
	reference(in.p, in.n, &ref);
	FUZZ_ASSERT(ref.result == whole.result, "reference %d, parser %d (used %zu)", ref.result,
		    whole.result, whole.used);
	if (ref.result != RG_CHUNK_ERR)
		FUZZ_ASSERT(ref.used == whole.used && ref.data == whole.data &&
				    ref.hash == whole.hash,
			    "reference used %zu data %zu, parser used %zu data %zu", ref.used,
			    ref.data, whole.used, whole.data);
	return 0;
}
