/* SPDX-License-Identifier: GPL-2.0 */
/* Reference for rg_lp_vm_samples(): victoria-metrics 1.79's line-protocol
 * parser (lib/protoparser/influx/parser.go) and fastfloat's number checks,
 * transliterated function by function over (pointer, length) strings, with
 * the substring-and-index structure of the Go code rather than one scan. */
#ifndef ROWGATE_TEST_VM_INFLUX_REF_H
#define ROWGATE_TEST_VM_INFLUX_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct vs {
	const char *p;
	long n;
};

static struct vs vs_sub(struct vs s, long from, long to)
{
	return (struct vs){ s.p + from, to - from };
}

static long vs_index(struct vs s, char c)
{
	const char *q = s.n > 0 ? memchr(s.p, c, (size_t)s.n) : NULL;

	return q ? q - s.p : -1;
}

static long ref_next_unescaped(struct vs s, char ch, bool no_escape)
{
	struct vs orig = s;
	long n, n_orig, slashes;

	if (no_escape)
		return vs_index(s, ch);
again:
	n = vs_index(s, ch);
	if (n < 0)
		return -1;
	if (n == 0)
		return orig.n - s.n + n;
	if (s.p[n - 1] != '\\')
		return orig.n - s.n + n;
	n_orig = n;
	slashes = 0;
	while (n > 0 && s.p[n - 1] == '\\') {
		slashes++;
		n--;
	}
	if ((slashes & 1) == 0)
		return orig.n - s.n + n_orig;
	s = vs_sub(s, n_orig + 1, s.n);
	goto again;
}

static bool ref_in_quote(struct vs s, bool no_escape)
{
	bool q = false;

	for (;;) {
		long n = ref_next_unescaped(s, '"', no_escape);

		if (n < 0)
			return q;
		q = !q;
		s = vs_sub(s, n + 1, s.n);
	}
}

static long ref_next_unquoted(struct vs s, char ch, bool no_escape, bool has_quoted)
{
	struct vs orig = s;

	if (!has_quoted)
		return ref_next_unescaped(s, ch, no_escape);
	for (;;) {
		long n = ref_next_unescaped(s, ch, no_escape);

		if (n < 0)
			return -1;
		if (!ref_in_quote(vs_sub(s, 0, n), no_escape))
			return n + orig.n - s.n;
		s = vs_sub(s, n + 1, s.n);
		n = ref_next_unescaped(s, '"', no_escape);
		if (n < 0)
			return -1;
		s = vs_sub(s, n + 1, s.n);
	}
}

/* fastfloat.ParseInt64 / ParseUint64 (the >18-digit fallback is strconv's
 * range check, done here with 128-bit arithmetic: userspace only). */
static bool ref_parse_int(struct vs s, bool is_signed)
{
	unsigned __int128 v = 0;
	long i = 0, j;
	bool minus = false;

	if (s.n == 0)
		return false;
	if (is_signed && s.p[0] == '-') {
		minus = true;
		if (++i >= s.n)
			return false;
	}
	for (j = i; i < s.n && s.p[i] >= '0' && s.p[i] <= '9'; i++)
		if (v <= (unsigned __int128)1 << 70)
			v = v * 10 + (unsigned)(s.p[i] - '0');
	if (i <= j || i < s.n)
		return false;
	if (!is_signed)
		return v <= UINT64_MAX;
	return minus ? v <= (unsigned __int128)1 << 63 : v <= INT64_MAX;
}

static bool ref_is_nan(struct vs s)
{
	long i = 0;

	if (s.n && s.p[0] == '-')
		i++;
	if (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
		return false;
	s = vs_sub(s, i, s.n);
	if (s.n && s.p[0] == '+')
		s = vs_sub(s, 1, s.n);
	return s.n == 3 && strncasecmp(s.p, "nan", 3) == 0;
}

/* Field.unmarshal: -1 error, else 1 stored / 0 NaN (dropped by storage). */
static int ref_field(struct vs s, bool no_escape, bool has_quoted)
{
	long n = ref_next_unescaped(s, '=', no_escape);
	struct vs v;

	if (n < 0 || n == 0)
		return -1; /* missing value, or empty key */
	v = vs_sub(s, n + 1, s.n);
	if (v.n == 0)
		return -1;
	if (has_quoted && v.p[0] == '"') {
		if (v.n < 2 || v.p[v.n - 1] != '"')
			return -1;
		return !ref_is_nan(vs_sub(v, 1, v.n - 1));
	}
	if (v.p[v.n - 1] == 'i')
		return ref_parse_int(vs_sub(v, 0, v.n - 1), true) ? 1 : -1;
	if (v.p[v.n - 1] == 'u')
		return ref_parse_int(vs_sub(v, 0, v.n - 1), false) ? 1 : -1;
	return !ref_is_nan(v);
}

static struct vs ref_strip_spaces(struct vs s)
{
	while (s.n > 0 && s.p[0] == ' ')
		s = vs_sub(s, 1, s.n);
	return s;
}

/* unmarshalRow + Row.unmarshal: samples stored for one line. */
static uint64_t ref_vm_line(struct vs s, bool no_escape)
{
	struct vs mt, tags;
	long n;
	bool has_quoted;
	uint64_t samples = 0;

	if (s.n > 0 && s.p[s.n - 1] == '\r')
		s.n--;
	if (s.n == 0 || s.p[0] == '#')
		return 0;
	n = ref_next_unescaped(s, ' ', no_escape);
	if (n < 0)
		return 0;
	mt = vs_sub(s, 0, n);
	s = ref_strip_spaces(vs_sub(s, n + 1, s.n));
	n = ref_next_unescaped(mt, ',', no_escape);
	if (n >= 0) {
		tags = vs_sub(mt, n + 1, mt.n);
		for (;;) {
			long c = ref_next_unescaped(tags, ',', no_escape);
			struct vs t = c < 0 ? tags : vs_sub(tags, 0, c);

			if (ref_next_unescaped(t, '=', no_escape) < 0)
				return 0;
			if (c < 0)
				break;
			tags = vs_sub(tags, c + 1, tags.n);
		}
	}
	has_quoted = ref_next_unescaped(s, '"', no_escape) >= 0;
	n = ref_next_unquoted(s, ' ', no_escape, has_quoted);
	{
		struct vs fields = n < 0 ? s : vs_sub(s, 0, n);

		for (;;) {
			long c = ref_next_unquoted(fields, ',', no_escape, has_quoted);
			int f = ref_field(c < 0 ? fields : vs_sub(fields, 0, c), no_escape,
					  has_quoted);

			if (f < 0)
				return 0;
			samples += (uint64_t)f;
			if (c < 0)
				break;
			fields = vs_sub(fields, c + 1, fields.n);
		}
	}
	if (n >= 0 && !ref_parse_int(ref_strip_spaces(vs_sub(s, n + 1, s.n)), true))
		return 0;
	return samples;
}

/* unmarshalRows: a body split at '\n'; backslash-free bodies skip escapes. */
static uint64_t ref_vm_body(const char *p, long n)
{
	struct vs s = { p, n };
	bool no_escape = vs_index(s, '\\') < 0;
	uint64_t samples = 0;

	while (s.n > 0) {
		long nl = vs_index(s, '\n');

		if (nl < 0)
			return samples + ref_vm_line(s, no_escape);
		samples += ref_vm_line(vs_sub(s, 0, nl), no_escape);
		s = vs_sub(s, nl + 1, s.n);
	}
	return samples;
}

#endif
