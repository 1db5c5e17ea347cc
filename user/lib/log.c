// SPDX-License-Identifier: GPL-2.0
/* Leveled logging and events to stderr; see log.h. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "log.h"

#define LOG_LINE_MAX 1024

static enum rg_log_level current_level = RG_LOG_DEFAULT;
static bool journal;

static const char *const level_names[] = {
	[RG_LOG_ERROR] = "err",	    [RG_LOG_WARN] = "warning", [RG_LOG_NOTICE] = "notice",
	[RG_LOG_INFO] = "info",	    [RG_LOG_DEBUG] = "debug",
};

/* What precedes the message on a terminal; errors, notices and info read
 * as plain sentences.  The journal shows the priority instead. */
static const char *const level_tags[] = {
	[RG_LOG_ERROR] = "",  [RG_LOG_WARN] = "warning: ", [RG_LOG_NOTICE] = "",
	[RG_LOG_INFO] = "",   [RG_LOG_DEBUG] = "debug: ",
};

void rg_log_set_level(enum rg_log_level level)
{
	if (level > RG_LOG_DEBUG)
		level = RG_LOG_DEBUG;
	current_level = level;
}

enum rg_log_level rg_log_get_level(void)
{
	return current_level;
}

const char *rg_log_level_name(enum rg_log_level level)
{
	return level <= RG_LOG_DEBUG ? level_names[level] : "debug";
}

int rg_log_parse_level(const char *name, enum rg_log_level *level)
{
	unsigned int i;

	if (!name)
		return -EINVAL;
	/* the names the option took before notice existed */
	if (!strcasecmp(name, "error")) {
		*level = RG_LOG_ERROR;
		return 0;
	}
	if (!strcasecmp(name, "warn")) {
		*level = RG_LOG_WARN;
		return 0;
	}
	/* journalctl -p's numbers */
	if (name[0] >= '3' && name[0] <= '7' && !name[1]) {
		*level = (enum rg_log_level)(name[0] - '3');
		return 0;
	}
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcasecmp(name, level_names[i])) {
			*level = (enum rg_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* systemd sets JOURNAL_STREAM=DEV:INODE for a unit whose output goes to
 * the journal; it is ours only when stderr is still that stream (a child
 * may inherit the variable with stderr redirected elsewhere). */
bool rg_log_detect_journal(void)
{
	const char *s = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	journal = false;
	if (!s || !*s)
		return false;
	errno = 0;
	dev = strtoull(s, &end, 10);
	if (errno || end == s || *end != ':')
		return false;
	s = end + 1;
	ino = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	journal = (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	return journal;
}

bool rg_log_journal(void)
{
	return journal;
}

__attribute__((constructor)) static void log_init(void)
{
	rg_log_detect_journal();
}

/* msg in the chosen format.  In the journal's, every line of it gets the
 * prefix (journald reads one record per line), all in one write so that
 * threads logging at once do not interleave their lines. */
static void emit(enum rg_log_level level, const char *msg)
{
	char out[LOG_LINE_MAX + 64];
	size_t n = 0, len;
	const char *p = msg, *nl;
	int w;

	if (!journal) {
		len = strlen(msg);
		fprintf(stderr, "%s: %s%s%s", program_invocation_short_name, level_tags[level], msg,
			len && msg[len - 1] == '\n' ? "" : "\n");
		return;
	}
	while (*p && n < sizeof(out) - 1) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		w = snprintf(out + n, sizeof(out) - n, "<%d>%.*s\n", (int)level + 3, (int)len, p);
		if (w < 0)
			return;
		if ((size_t)w >= sizeof(out) - n) {
			n = sizeof(out) - 1;
			out[n - 1] = '\n'; /* truncated, still a whole line */
			break;
		}
		n += (size_t)w;
		p += len + (nl ? 1 : 0);
	}
	if (!n)
		n = (size_t)snprintf(out, sizeof(out), "<%d>\n", (int)level + 3);
	fwrite(out, 1, n, stderr);
}

static void log_v(enum rg_log_level level, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];
	int saved_errno = errno;

	if (level > current_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	emit(level, msg);
	errno = saved_errno;
}

void rg_log(enum rg_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(level, fmt, ap);
	va_end(ap);
}

/* --- events --- */

static bool needs_quotes(const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	if (!*p)
		return true;
	for (; *p; p++)
		if (*p <= ' ' || *p == 0x7f || *p == '"' || *p == '=' || *p == '\\')
			return true;
	return false;
}

/* Appends like snprintf: *n counts what the whole text needs. */
static void put(char *buf, size_t len, size_t *n, const char *s, size_t slen)
{
	if (*n < len) {
		size_t room = len - 1 - *n, k = slen < room ? slen : room;

		memcpy(buf + *n, s, k);
		buf[*n + k] = 0;
	}
	*n += slen;
}

size_t rg_log_quote(char *buf, size_t len, const char *value)
{
	const unsigned char *p;
	size_t n = 0;

	if (len)
		buf[0] = 0;
	if (!value)
		value = "";
	if (!needs_quotes(value)) {
		put(buf, len, &n, value, strlen(value));
		return n;
	}
	put(buf, len, &n, "\"", 1);
	for (p = (const unsigned char *)value; *p; p++) {
		char esc[5];

		switch (*p) {
		case '"':
			put(buf, len, &n, "\\\"", 2);
			break;
		case '\\':
			put(buf, len, &n, "\\\\", 2);
			break;
		case '\n':
			put(buf, len, &n, "\\n", 2);
			break;
		case '\r':
			put(buf, len, &n, "\\r", 2);
			break;
		case '\t':
			put(buf, len, &n, "\\t", 2);
			break;
		default:
			if (*p < ' ' || *p == 0x7f) {
				snprintf(esc, sizeof(esc), "\\x%02x", *p);
				put(buf, len, &n, esc, 4);
			} else {
				put(buf, len, &n, (const char *)p, 1);
			}
		}
	}
	put(buf, len, &n, "\"", 1);
	return n;
}

/*
 * printf's conversions, one at a time, except that %s goes through
 * rg_log_quote.  The format attribute on the callers checks the types;
 * this reads them back with the same length modifiers.
 */
size_t rg_event_format(char *buf, size_t len, const char *name, const char *fmt, va_list ap)
{
	size_t n = 0;
	const char *p = fmt;

	if (len)
		buf[0] = 0;
	put(buf, len, &n, "event=", 6);
	put(buf, len, &n, name, strlen(name));
	if (*fmt)
		put(buf, len, &n, " ", 1);
	while (*p) {
		char spec[32], piece[LOG_LINE_MAX];
		const char *start, *lit = strchr(p, '%');
		enum { L_NONE, L_HH, L_H, L_L, L_LL, L_Z, L_J, L_T } mod = L_NONE;
		size_t slen;
		int w = 0;

		if (!lit) {
			put(buf, len, &n, p, strlen(p));
			break;
		}
		put(buf, len, &n, p, (size_t)(lit - p));
		p = lit + 1;
		start = lit;
		if (*p == '%') {
			put(buf, len, &n, "%", 1);
			p++;
			continue;
		}
		p += strspn(p, "-+ #0");
		p += strspn(p, "0123456789");
		if (*p == '.') {
			p++;
			p += strspn(p, "0123456789");
		}
		if (p[0] == 'h' && p[1] == 'h') {
			mod = L_HH;
			p += 2;
		} else if (p[0] == 'l' && p[1] == 'l') {
			mod = L_LL;
			p += 2;
		} else if (*p == 'h' || *p == 'l' || *p == 'z' || *p == 'j' || *p == 't') {
			mod = *p == 'h' ? L_H : *p == 'l' ? L_L : *p == 'z' ? L_Z : *p == 'j' ? L_J : L_T;
			p++;
		}
		if (!*p)
			break;
		slen = (size_t)(p + 1 - start);
		if (slen >= sizeof(spec))
			break; /* no conversion of ours is that long */
		memcpy(spec, start, slen);
		spec[slen] = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		switch (*p) {
		case 's':
			rg_log_quote(piece, sizeof(piece), va_arg(ap, const char *));
			w = (int)strlen(piece);
			break;
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'X':
		case 'o':
		case 'c':
			switch (mod) {
			case L_L:
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, long));
				break;
			case L_LL:
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, long long));
				break;
			case L_Z:
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, size_t));
				break;
			case L_J:
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, long long));
				break;
			case L_T:
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, ptrdiff_t));
				break;
			default: /* int, char and short are promoted to int */
				w = snprintf(piece, sizeof(piece), spec, va_arg(ap, int));
			}
			break;
		case 'e':
		case 'f':
		case 'g':
		case 'E':
		case 'F':
		case 'G':
			w = snprintf(piece, sizeof(piece), spec, va_arg(ap, double));
			break;
		case 'p':
			w = snprintf(piece, sizeof(piece), spec, va_arg(ap, void *));
			break;
		default:
			/* nothing else is used; stop rather than misread the arguments */
			p = "";
			continue;
		}
#pragma GCC diagnostic pop
		if (w < 0)
			w = 0;
		put(buf, len, &n, piece, strnlen(piece, (size_t)w));
		p++;
	}
	return n;
}

void rg_event(const char *name, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;

	if (RG_LOG_NOTICE > current_level)
		return;
	va_start(ap, fmt);
	rg_event_format(line, sizeof(line), name, fmt, ap);
	va_end(ap);
	emit(RG_LOG_NOTICE, line);
}

/* --- rate-limited events --- */

#define KINDS_MAX 64
#define KIND_LEN  128

static struct kind {
	char key[KIND_LEN]; /* "event=NAME first=pair", "" = free */
	unsigned long long start_ns; /* the interval's first line */
	unsigned long long suppressed;
} kinds[KINDS_MAX];
static pthread_mutex_t kinds_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The kind of a formatted line: up to the end of its second pair. */
static void kind_of(const char *line, char *key, size_t len)
{
	const char *sp = strchr(line, ' ');
	size_t k;
	bool quoted = false;

	if (sp) {
		/* the second pair's value may be quoted, spaces included */
		for (sp++; *sp; sp++) {
			if (*sp == '"' && sp[-1] != '\\')
				quoted = !quoted;
			else if (*sp == ' ' && !quoted)
				break;
		}
	}
	k = sp ? (size_t)(sp - line) : strlen(line);
	if (k >= len)
		k = len - 1;
	memcpy(key, line, k);
	key[k] = 0;
}

static void flush_kind(struct kind *k, unsigned long long now)
{
	char line[KIND_LEN + 32];

	snprintf(line, sizeof(line), "%.*s suppressed=%llu", KIND_LEN - 1, k->key, k->suppressed);
	k->suppressed = 0;
	k->start_ns = now; /* a line of this kind went out */
	emit(RG_LOG_NOTICE, line);
}

void rg_event_limited(const char *name, const char *fmt, ...)
{
	unsigned long long now = now_ns(), interval = RG_EVENT_INTERVAL_MS * 1000000ULL;
	char line[LOG_LINE_MAX], key[KIND_LEN];
	struct kind *k = NULL, *oldest = NULL, *free_slot = NULL;
	va_list ap;
	size_t n;
	int i;

	if (RG_LOG_NOTICE > current_level)
		return;
	va_start(ap, fmt);
	n = rg_event_format(line, sizeof(line), name, fmt, ap);
	va_end(ap);
	kind_of(line, key, sizeof(key));
	pthread_mutex_lock(&kinds_lock);
	for (i = 0; i < KINDS_MAX && !k; i++) {
		if (!strcmp(kinds[i].key, key))
			k = &kinds[i];
		else if (!kinds[i].key[0])
			free_slot = free_slot ? free_slot : &kinds[i];
		else if (!oldest || kinds[i].start_ns < oldest->start_ns)
			oldest = &kinds[i];
	}
	if (!k) {
		/* a kind not seen lately: a free slot, or the one quiet longest
		 * (its count written first, not lost) */
		k = free_slot ? free_slot : oldest;
		if (k->key[0] && k->suppressed)
			flush_kind(k, now);
		snprintf(k->key, sizeof(k->key), "%s", key);
		k->suppressed = 0;
	} else if (now - k->start_ns < interval) {
		k->suppressed++;
		pthread_mutex_unlock(&kinds_lock);
		return;
	}
	if (k->suppressed && n + 32 < sizeof(line))
		snprintf(line + n, sizeof(line) - n, " suppressed=%llu", k->suppressed);
	k->suppressed = 0;
	k->start_ns = now;
	emit(RG_LOG_NOTICE, line);
	pthread_mutex_unlock(&kinds_lock);
}

void rg_log_tick(void)
{
	unsigned long long now = now_ns(), interval = RG_EVENT_INTERVAL_MS * 1000000ULL;
	int i;

	pthread_mutex_lock(&kinds_lock);
	for (i = 0; i < KINDS_MAX; i++)
		if (kinds[i].key[0] && kinds[i].suppressed && now - kinds[i].start_ns >= interval)
			flush_kind(&kinds[i], now);
	pthread_mutex_unlock(&kinds_lock);
}

static int libbpf_print(enum libbpf_print_level libbpf_level, const char *fmt, va_list ap)
{
	enum rg_log_level level = libbpf_level == LIBBPF_WARN ? RG_LOG_INFO : RG_LOG_DEBUG;

	log_v(level, fmt, ap);
	return 0;
}

void rg_log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
