// SPDX-License-Identifier: MIT
/* Line-protocol row counting: the SWAR word counter against the byte
 * reference, with the chunk boundary at every offset, under both comment
 * rules, and the rules on hand-written bodies; victoria-metrics' sample
 * counter against a transliteration of its parser; the streaming `db` tag
 * reader against the whole-line one. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "rowgate/rows.h"
#include "rowgate/estimate.h"
#include "rowgate/lp_dbtag.h"
#include "check.h"
#include "vm_influx_ref.h"
#include "rows_ref.h"

/* As the kernel's bulk path: the body at byte `off` of aligned words, the
 * edge words counted as spans, split once more at `cut`. */
static uint64_t spans_at(const char *buf, size_t len, size_t off, size_t cut)
{
	uint8_t mem[512 + 16];
	struct rg_lp_state s;
	uint64_t rows = 0;
	size_t seg;

	memset(mem, 'x', sizeof(mem));
	memcpy(mem + off, buf, len);
	rg_lp_init_rule(&s, (uint8_t)rows_ref_rule);
	for (seg = 0; seg < 2; seg++) {
		size_t from = off + (seg ? cut : 0), to = off + (seg ? len : cut), w;

		for (w = from / 8; from < to && w <= (to - 1) / 8; w++) {
			size_t a = w * 8 > from ? 0 : from - w * 8;
			size_t b = w * 8 + 8 < to ? 8 : to - w * 8;

			rows += rg_lp_count_span(&s, rg_load_le64(mem + w * 8), (uint32_t)a,
						 (uint32_t)b);
		}
	}
	return rows;
}

static void expect_rows(const char *body, uint64_t want)
{
	size_t len = strlen(body), cut, off;

	CHECK_EQ_U64(ref_count(body, len), want, body);
	for (cut = 0; cut <= len; cut++)
		CHECK_EQ_U64(swar_split(body, len, cut), want, body);
	CHECK_EQ_U64(masked_words(body, len), want, body);
	for (off = 0; off < 8 && len < 500; off++)
		for (cut = 0; cut <= len; cut++)
			CHECK_EQ_U64(spans_at(body, len, off, cut), want, body);
}

static void test_rules(void)
{
	expect_rows("", 0);
	expect_rows("cpu v=1", 1);                       /* no trailing newline */
	expect_rows("cpu v=1\n", 1);
	expect_rows("cpu v=1\ncpu v=2\n", 2);
	expect_rows("cpu v=1\r\ncpu v=2\r\n", 2);        /* CRLF */
	expect_rows("cpu v=1\r\n\r\n\r\ncpu v=2", 2);    /* empty CRLF lines */
	expect_rows("\n\n\ncpu v=1\n\n", 1);             /* empty lines */
	expect_rows("# comment\ncpu v=1\n#x\n", 1);      /* comments */
	expect_rows("   \t \ncpu v=1\n", 1);             /* blank line */
	expect_rows("   cpu v=1\n\t\t  # c\n", 1);       /* leading blanks */
	expect_rows("a\nb\nc\nd\ne\nf\ng\nh\ni\nj", 10);
	expect_rows("         x\n          y\n", 2);      /* blank runs > 7 */
	expect_rows("cpu,host=a#b v=1\n", 1);            /* '#' inside a line */
	expect_rows(" #f=1\n\t#g=2\n#c\n", 0);          /* blanks, then '#' */
}

/* victoria-metrics: only a '#' in a line's first byte is a comment. */
static void test_rules_at_start(void)
{
	rows_ref_rule = RG_LP_COMMENT_AT_START;
	expect_rows("", 0);
	expect_rows("cpu v=1\r\ncpu v=2\r\n", 2);
	expect_rows("# comment\ncpu v=1\n#x\n", 1);
	expect_rows(" #f=1\n", 1);                       /* stored as metric "#f" */
	expect_rows("\t#f=1\n  # x\n#y\n", 2);
	expect_rows("   \t \n\r\n\n", 0);                /* blank lines */
	expect_rows("       #\n        #\n#\n#\n", 2);    /* blank runs, word edges */
	expect_rows("1234567#\n#234567\n#", 1);
	rows_ref_rule = RG_LP_COMMENT_AFTER_BLANKS;
}

static void test_random(void)
{
	static const char alphabet[] = "ab \t\r\n#\n\n  x#";
	char buf[300];
	int iter;

	srandom(7);
	for (iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)random() % sizeof(buf), i, cut;
		uint64_t want;

		for (i = 0; i < len; i++)
			buf[i] = alphabet[random() % (sizeof(alphabet) - 1)];
		want = ref_count(buf, len);
		cut = len ? (size_t)random() % (len + 1) : 0;
		CHECK_EQ_U64(swar_split(buf, len, cut), want, "random body");
		CHECK_EQ_U64(masked_words(buf, len), want, "random body, masked words");
		CHECK_EQ_U64(spans_at(buf, len, (size_t)random() % 8, cut), want,
			     "random body, spans");
	}
	/* every boundary of one body with every kind of line */
	{
		const char *body = "  a\n#c\n\r\n\t\tb v=1\r\n\n   \n#\nlast";
		size_t len = strlen(body), cut;

		for (cut = 0; cut <= len; cut++)
			CHECK_EQ_U64(swar_split(body, len, cut), 3, "every boundary");
	}
}

static void test_mask(void)
{
	uint64_t x = rg_load_le64((const uint8_t *)"abcdefgh");
	uint64_t m = rg_lp_mask_word(x, 2, 5);

	CHECK(m == rg_load_le64((const uint8_t *)"  cde   "), "mask keeps [2,5)");
	CHECK(rg_lp_mask_word(x, 0, 8) == x, "full word unchanged");
	CHECK(rg_lp_mask_word(x, 8, 8) == rg_load_le64((const uint8_t *)"        "), "empty");
}

static uint64_t vm_samples(const char *body, size_t len)
{
	uint64_t n = 0;
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(body + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - body) : len;

		n += rg_lp_vm_samples((const uint8_t *)body + i, end - i);
		i = end + 1;
	}
	return n;
}

static void expect_vm(const char *body, uint64_t want)
{
	CHECK_EQ_U64(ref_vm_body(body, (long)strlen(body)), want, body);
	CHECK_EQ_U64(vm_samples(body, strlen(body)), want, body);
}

static void test_vm_samples(void)
{
	static const char alphabet[] = "ab =,\"\\ 1i-u#\r\n0n 9=,";
	char buf[120];
	int iter;

	expect_vm("m f=1", 1);
	expect_vm("m f1=1,f2=2", 2);
	expect_vm("m,t=a f1=1,f2=2,f3=3 1700000000\n", 3);
	expect_vm("m f=1 \n", 0);                        /* empty timestamp */
	expect_vm("m f=1  123\r\n", 1);
	expect_vm("m f=1 12x\n", 0);
	expect_vm("m f=\"a b,c=d\",g=2 5\n", 2);         /* quoted ' ' and ',' */
	expect_vm("m f=\"abc\n", 0);                     /* unclosed quote */
	expect_vm("m f=\"\n", 0);
	expect_vm("m\\ x,t\\,u=1 f\\=g=1,h=2\n", 2);      /* escapes */
	expect_vm("m f=1i,g=-5i,h=7u,k=-7u\n", 0);        /* -7u is no uint */
	expect_vm("m f=1i,g=-9223372036854775808i,h=18446744073709551615u\n", 3);
	expect_vm("m f=9223372036854775808i\n", 0);
	expect_vm("m f=NaN,g=1,h=\"nan\",k=-nan,l=+NaN\n", 1); /* NaN not stored */
	expect_vm("m f=inf,g=t,h=abc\n", 3);              /* best effort */
	expect_vm("m,t f=1\n", 0);                        /* tag without '=' */
	expect_vm("m,t= f=1\n", 1);                       /* empty tag value */
	expect_vm("m =1\n", 0);                           /* empty key */
	expect_vm("m f=\n", 0);
	expect_vm(" f=1\n", 1);                           /* empty measurement */
	expect_vm(" #f=1\n#f=1\n", 1);
	expect_vm("\n\r\n   \n", 0);
	expect_vm("m\n", 0);
	expect_vm("m f=1,\n", 0);
	srandom(11);
	for (iter = 0; iter < 200000; iter++) {
		size_t len = (size_t)random() % sizeof(buf), i;

		for (i = 0; i < len; i++)
			buf[i] = alphabet[random() % (sizeof(alphabet) - 1)];
		/* most random lines fail; seed a valid-looking start */
		if (len > 6 && iter % 2)
			memcpy(buf, "m f=1,", 6);
		CHECK_EQ_U64(vm_samples(buf, len), ref_vm_body(buf, (long)len), "random line");
	}
}

/* Estimates: capped per protocol and coding, exact ceiling, no overflow. */
static void test_estimate(void)
{
	uint64_t sizes[] = { 0, 1, 2, 15, 16, 17, 2209, 1ULL << 40, 1ULL << 59,
			     (1ULL << 63) - 1, ~0ULL };
	uint64_t learned[] = { 0, 1, 7, 16, 31, 32, 33, 512, 1ULL << 40, ~0ULL };
	uint32_t protos[] = { RG_PROTO_LINE, RG_PROTO_PROM_RW, RG_PROTO_OTLP_METRICS,
			      RG_PROTO_LOKI, RG_PROTO_ES_BULK, RG_PROTO_NDJSON,
			      RG_PROTO_OPENTSDB };
	size_t i, j, k;

	/* a new database: the prior; gzip line protocol of 500 rows in
	 * 2,209 bytes is estimated at 1,105 rows, not the 70 of 32 bytes/row */
	CHECK_EQ_U64(rg_est_rows(2209, 0, RG_PROTO_LINE, true), 1105, "gzip prior");
	/* a poisoned ratio (a client taught it 1,000 bytes per row) is capped */
	CHECK_EQ_U64(rg_est_rows(2209, 1000 * 16, RG_PROTO_LINE, true), 1105, "poisoned");
	/* a denser learned ratio is used: more rows, never fewer */
	CHECK_EQ_U64(rg_est_rows(2209, 8, RG_PROTO_LINE, true), 4418, "denser ratio");
	CHECK_EQ_U64(rg_est_rows(3200, 0, RG_PROTO_ES_BULK, false), 200, "es bulk prior");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(learned) / sizeof(learned[0]); j++)
			for (k = 0; k < sizeof(protos) / sizeof(protos[0]); k++) {
				bool coded = (i + j) % 2;
				uint64_t p = rg_est_bytes_per_row_x16(learned[j], protos[k], coded);
				unsigned __int128 want =
					((unsigned __int128)sizes[i] * 16 + p - 1) / p;
				uint64_t got = rg_est_rows(sizes[i], learned[j], protos[k], coded);

				CHECK(p <= rg_est_ceiling_x16(protos[k], coded) && p > 0,
				      "ratio %" PRIu64 " capped", p);
				if (want < ~0ULL >> 1)
					CHECK_EQ_U64(got, (uint64_t)want, "estimate = ceil(bytes*16/p)");
				else
					CHECK_EQ_U64(got, ~0ULL >> 1, "estimate saturates");
			}
}

/* The database the streaming reader names for a body's lines, one entry
 * per line whose tag section ended: name, or "" for none. */
static int dbtag_stream(const char *body, size_t len, char names[][RG_DB_NAME_MAX + 1], int max)
{
	struct rg_lp_dbtag s;
	size_t i;
	int n = 0, line = 0;

	memset(&s, 0x5a, sizeof(s)); /* only init's fields may matter */
	rg_lp_dbtag_init(&s);
	for (i = 0; i < len; i++) {
		if (body[i] == '\n')
			line++;
		if (!rg_lp_dbtag_step(&s, (uint8_t)body[i]) || line >= max)
			continue;
		if (s.len >= RG_DB_NAME_MAX) {
			strcpy(names[line], "<long>");
		} else {
			CHECK(rg_lp_dbtag_key(&s), "a named database has a key");
			memcpy(names[line], s.key.name, RG_DB_NAME_MAX);
			names[line][RG_DB_NAME_MAX] = 0;
			CHECK(strlen(names[line]) <= s.len, "key cleared past the name");
		}
		n++;
	}
	return n;
}

/* What victoria-metrics files a stored line under, from the whole line. */
static void dbtag_whole(const char *line, size_t n, char *out)
{
	__u64 from, to, len;
	char db[RG_DB_NAME_MAX];

	out[0] = 0;
	if (!rg_lp_vm_db_tag((const uint8_t *)line, n, &from, &to))
		return;
	len = rg_lp_vm_unescape((const uint8_t *)line + from, to - from, db);
	if (len >= RG_DB_NAME_MAX) {
		strcpy(out, "<long>");
		return;
	}
	memcpy(out, db, len);
	out[len] = 0;
}

/* Every stored line: the streaming reader names what the whole-line reader
 * does (lines the server drops may name anything: refusing them is safe). */
static void expect_dbtags(const char *body, size_t len)
{
	char names[16][RG_DB_NAME_MAX + 1], want[RG_DB_NAME_MAX + 1];
	size_t i = 0;
	int line = 0;

	memset(names, 0, sizeof(names));
	dbtag_stream(body, len, names, 16);
	while (i <= len && line < 16) {
		const char *nl = memchr(body + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - body) : len;

		if (rg_lp_vm_samples((const uint8_t *)body + i, end - i)) {
			dbtag_whole(body + i, end - i, want);
			if (strcmp(names[line], want)) {
				fprintf(stderr, "line %d of [%.*s]: stream '%s', whole '%s'\n", line,
					(int)len, body, names[line], want);
				CHECK(0, "streamed db tag = whole-line db tag");
			}
		}
		if (!nl)
			break;
		i = end + 1;
		line++;
	}
}

static void expect_dbtag(const char *line, const char *want)
{
	char names[16][RG_DB_NAME_MAX + 1];

	memset(names, 0, sizeof(names));
	dbtag_stream(line, strlen(line), names, 16);
	CHECK(!strcmp(names[0], want), line);
	expect_dbtags(line, strlen(line));
}

static void test_vm_dbtag(void)
{
	static const char alphabet[] = "db=, \\\\#\n1x=,d b";
	char buf[96], longname[200];
	int iter;

	expect_dbtag("m,db=a f=1", "a");
	expect_dbtag("m,host=h,db=a f=1 5", "a");
	expect_dbtag("m f=1,db=a", "");                /* a field, not a tag */
	expect_dbtag("m,db=a,db=b f=1", "b");          /* the last one wins */
	expect_dbtag("m,db=a,db= f=1", "a");           /* an empty one does not */
	expect_dbtag("m,db=a\\ b\\,c\\=d\\\\e\\x f=1", "a b,c=d\\e\\x");
	expect_dbtag("m\\,db=a f=1", "");              /* an escaped comma */
	expect_dbtag("m,d\\b=a f=1", "");              /* a key is "db" as sent */
	expect_dbtag("m,dbx=a,xdb=b f=1", "");
	expect_dbtag("#m,db=a f=1", "");               /* a comment */
	expect_dbtag(" m,db=a f=1", "");               /* no tags: the space comes first */
	expect_dbtag("m,db=a=b f=1", "a=b");
	expect_dbtag("m,t=1\nm,db=a f=1", "");         /* line 0 has no fields */
	/* 63 bytes fit a key; 64 do not */
	memset(longname, 'x', sizeof(longname));
	memcpy(longname, "m,db=", 5);
	strcpy(longname + 5 + 63, " f=1");
	expect_dbtags(longname, strlen(longname));
	memset(longname + 5, 'x', 100);
	strcpy(longname + 5 + 64, " f=1");
	expect_dbtag(longname, "<long>");
	srandom(13);
	for (iter = 0; iter < 200000; iter++) {
		size_t len = (size_t)random() % sizeof(buf), i;

		for (i = 0; i < len; i++)
			buf[i] = alphabet[random() % (sizeof(alphabet) - 1)];
		/* most random lines have no fields: give half of them one */
		if ((iter & 1) && len + 4 < sizeof(buf)) {
			memcpy(buf + len, " f=1", 4);
			len += 4;
		}
		expect_dbtags(buf, len);
	}
}

int main(void)
{
	test_estimate();
	test_rules();
	test_rules_at_start();
	test_random();
	rows_ref_rule = RG_LP_COMMENT_AT_START;
	test_random();
	rows_ref_rule = RG_LP_COMMENT_AFTER_BLANKS;
	test_mask();
	test_vm_samples();
	test_vm_dbtag();
	return check_report("rows");
}
