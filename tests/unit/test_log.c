// SPDX-License-Identifier: GPL-2.0
/* user/lib/log.c: level names, the journal's detection and format, event
 * lines (quoting, conversions) and the rate limit of repetitive events. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../user/lib/log.h"
#include "check.h"

static char captured[16384];

/* Run fn with stderr going to a file; its text in captured. */
static void capture(void (*fn)(void))
{
	char path[] = "/tmp/rowgate-test-log.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t n;

	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, captured, sizeof(captured) - 1, 0);
	captured[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(path);
}

static const char *quote(const char *v)
{
	static char buf[256];

	rg_log_quote(buf, sizeof(buf), v);
	return buf;
}

static void test_quote(void)
{
	char small[8];
	size_t n;

	CHECK(!strcmp(quote("logs"), "logs"), "plain value as is: %s", quote("logs"));
	CHECK(!strcmp(quote("/sys/fs/cgroup/a.slice"), "/sys/fs/cgroup/a.slice"),
	      "a path needs no quotes: %s", quote("/sys/fs/cgroup/a.slice"));
	CHECK(!strcmp(quote(""), "\"\""), "empty value quoted: %s", quote(""));
	CHECK(!strcmp(quote(NULL), "\"\""), "NULL is the empty value: %s", quote(NULL));
	CHECK(!strcmp(quote("connection refused"), "\"connection refused\""),
	      "a space quotes: %s", quote("connection refused"));
	CHECK(!strcmp(quote("a=b"), "\"a=b\""), "'=' quotes (no forged key): %s", quote("a=b"));
	CHECK(!strcmp(quote("say \"hi\""), "\"say \\\"hi\\\"\""), "quotes escaped: %s",
	      quote("say \"hi\""));
	CHECK(!strcmp(quote("C:\\x"), "\"C:\\\\x\""), "backslash escaped: %s", quote("C:\\x"));
	CHECK(!strcmp(quote("a\nevent=forged"), "\"a\\nevent=forged\""),
	      "a newline cannot start a line: %s", quote("a\nevent=forged"));
	CHECK(!strcmp(quote("t\tr\r\x01\x7f"), "\"t\\tr\\r\\x01\\x7f\""),
	      "control bytes escaped: %s", quote("t\tr\r\x01\x7f"));
	CHECK(!strcmp(quote("h\xc3\xa9"), "h\xc3\xa9"), "UTF-8 passes as is: %s", quote("h\xc3\xa9"));
	n = rg_log_quote(small, sizeof(small), "a long value");
	CHECK(n == 14 && strlen(small) == 7 && !strncmp(small, "\"a long", 7),
	      "truncated like snprintf: %zu [%s]", n, small);
}

static size_t fmt(char *buf, size_t len, const char *name, const char *f, ...)
	__attribute__((format(printf, 4, 5)));
static size_t fmt(char *buf, size_t len, const char *name, const char *f, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, f);
	n = rg_event_format(buf, len, name, f, ap);
	va_end(ap);
	return n;
}

static void test_event_format(void)
{
	char buf[512], tiny[16];
	size_t n;

	fmt(buf, sizeof(buf), "limit_set", "db=%s rows_per_s=%llu previous=%s source=%s", "logs",
	    10000ULL, "5000", "admin");
	CHECK(!strcmp(buf, "event=limit_set db=logs rows_per_s=10000 previous=5000 source=admin"),
	      "the documented example: %s", buf);
	fmt(buf, sizeof(buf), "meta_unreachable", "error=%s", "http://h:1: Connection refused");
	CHECK(!strcmp(buf, "event=meta_unreachable error=\"http://h:1: Connection refused\""),
	      "a value with spaces quoted: %s", buf);
	fmt(buf, sizeof(buf), "x", "a=%d b=%u c=%ld d=%lu e=%zu f=%x g=%5d h=%-3d| i=%c j=%.2f k=%%",
	    -1, 2U, -3L, 4UL, (size_t)5, 255U, 6, 7, 'z', 1.5);
	CHECK(!strcmp(buf, "event=x a=-1 b=2 c=-3 d=4 e=5 f=ff g=    6 h=7  | i=z j=1.50 k=%"),
	      "printf's conversions: %s", buf);
	fmt(buf, sizeof(buf), "x", "a=%s b=%s", "one two", "three");
	CHECK(!strcmp(buf, "event=x a=\"one two\" b=three"), "arguments stay in order: %s", buf);
	fmt(buf, sizeof(buf), "x", "a=%llu b=%s c=%d", 18446744073709551615ULL, "", 3);
	CHECK(!strcmp(buf, "event=x a=18446744073709551615 b=\"\" c=3"), "u64 max, empty: %s",
	      buf);
	fmt(buf, sizeof(buf), "started", "%s", "");
	CHECK(!strcmp(buf, "event=started \"\""), "a bare value is quoted too: %s", buf);
	{
		const char *none = ""; /* a literal "" would trip -Wformat-zero-length */

		fmt(buf, sizeof(buf), "bare", none, 0);
		CHECK(!strcmp(buf, "event=bare"), "no pairs: %s", buf);
	}
	n = fmt(tiny, sizeof(tiny), "limit_set", "db=%s", "logs");
	CHECK(n == strlen("event=limit_set db=logs") && strlen(tiny) == sizeof(tiny) - 1,
	      "truncated like snprintf: %zu [%s]", n, tiny);
}

static void test_levels(void)
{
	enum rg_log_level l = RG_LOG_DEBUG;

	CHECK(rg_log_parse_level("err", &l) == 0 && l == RG_LOG_ERROR, "err");
	CHECK(rg_log_parse_level("error", &l) == 0 && l == RG_LOG_ERROR, "error (old name)");
	CHECK(rg_log_parse_level("warning", &l) == 0 && l == RG_LOG_WARN, "warning");
	CHECK(rg_log_parse_level("Warn", &l) == 0 && l == RG_LOG_WARN, "warn (old name)");
	CHECK(rg_log_parse_level("NOTICE", &l) == 0 && l == RG_LOG_NOTICE, "notice");
	CHECK(rg_log_parse_level("info", &l) == 0 && l == RG_LOG_INFO, "info");
	CHECK(rg_log_parse_level("debug", &l) == 0 && l == RG_LOG_DEBUG, "debug");
	CHECK(rg_log_parse_level("5", &l) == 0 && l == RG_LOG_NOTICE, "journalctl's 5");
	CHECK(rg_log_parse_level("2", &l) == -EINVAL, "crit is not a level of ours");
	CHECK(rg_log_parse_level("verbose", &l) == -EINVAL, "unknown refused");
	CHECK(rg_log_parse_level("", &l) == -EINVAL, "empty refused");
	CHECK(!strcmp(rg_log_level_name(RG_LOG_NOTICE), "notice"), "name of notice");
	CHECK(RG_LOG_DEFAULT == RG_LOG_NOTICE, "daemons show events by default");
}

static void log_all(void)
{
	pr_err("e %d", 1);
	pr_warn("w");
	pr_notice("n\n");
	pr_info("i");
	pr_debug("d");
	rg_event("limit_set", "db=%s rows_per_s=%d", "logs", 5);
	pr_info("two\nlines");
}

/* JOURNAL_STREAM names stderr's device and inode, as systemd sets it. */
static void set_journal_stream(void)
{
	struct stat st;
	char v[64];

	fstat(STDERR_FILENO, &st);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
}

static bool detected;
static void detect_then_log(void)
{
	set_journal_stream();
	detected = rg_log_detect_journal();
	log_all();
}

static void detect_wrong_inode(void)
{
	setenv("JOURNAL_STREAM", "1:2", 1);
	detected = rg_log_detect_journal();
	log_all();
}

static void test_formats(void)
{
	rg_log_set_level(RG_LOG_INFO);
	unsetenv("JOURNAL_STREAM");
	CHECK(!rg_log_detect_journal(), "no JOURNAL_STREAM: not the journal");
	capture(log_all);
	CHECK(!strcmp(captured, "test_log: e 1\n"
				"test_log: warning: w\n"
				"test_log: n\n"
				"test_log: i\n"
				"test_log: event=limit_set db=logs rows_per_s=5\n"
				"test_log: two\nlines\n"),
	      "human format unchanged:\n%s", captured);

	capture(detect_then_log);
	CHECK(detected, "JOURNAL_STREAM naming stderr: the journal");
	CHECK(!strcmp(captured, "<3>e 1\n"
				"<4>w\n"
				"<5>n\n"
				"<6>i\n"
				"<5>event=limit_set db=logs rows_per_s=5\n"
				"<6>two\n<6>lines\n"),
	      "journal format: a prefix per line, no program name:\n%s", captured);

	capture(detect_wrong_inode);
	CHECK(!detected && !strncmp(captured, "test_log: e 1\n", 14),
	      "JOURNAL_STREAM of another file (inherited): human format:\n%s", captured);

	rg_log_set_level(RG_LOG_WARN);
	capture(detect_then_log);
	CHECK(!strcmp(captured, "<3>e 1\n<4>w\n"), "warning hides notice and events:\n%s",
	      captured);
	unsetenv("JOURNAL_STREAM");
	rg_log_detect_journal();
	rg_log_set_level(RG_LOG_NOTICE);
}

static int floods;
static void flood(void)
{
	for (int i = 0; i < floods; i++) {
		rg_event_limited("fail_open", "reason=%s count=%d", "conns_full", i);
		rg_event_limited("fail_open", "reason=%s count=%d", "recvmsg", i);
	}
	rg_event_limited("quota_set", "db=%s quota_rows_per_s=%d", "a b", 1);
	rg_event_limited("quota_set", "db=%s quota_rows_per_s=%d", "a b", 2);
	rg_event_limited("quota_set", "db=%s quota_rows_per_s=%d", "a c", 3);
}

static void tick(void)
{
	rg_log_tick();
}

static void after_interval(void)
{
	rg_event_limited("fail_open", "reason=%s count=%d", "conns_full", 99);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_rate_limit(void)
{
	struct timespec pause = { .tv_sec = 1, .tv_nsec = 50 * 1000 * 1000 };

	floods = 1000;
	capture(flood);
	CHECK(count(captured, "\n") == 4, "one line per kind in the interval:\n%s", captured);
	CHECK(strstr(captured, "event=fail_open reason=conns_full count=0\n") &&
		      strstr(captured, "event=fail_open reason=recvmsg count=0\n") &&
		      strstr(captured, "event=quota_set db=\"a b\" quota_rows_per_s=1\n") &&
		      strstr(captured, "event=quota_set db=\"a c\" quota_rows_per_s=3\n"),
	      "the first of each kind goes out; the kind includes the first pair:\n%s",
	      captured);
	capture(tick);
	CHECK(!captured[0], "nothing flushed inside the interval: [%s]", captured);
	nanosleep(&pause, NULL); /* the interval is wall time, nothing to wait on */
	capture(after_interval);
	CHECK(!strcmp(captured, "test_log: event=fail_open reason=conns_full count=99 "
				"suppressed=999\n"),
	      "the next line counts what was dropped: %s", captured);
	capture(tick);
	CHECK(strstr(captured, "event=fail_open reason=recvmsg suppressed=999\n") &&
		      strstr(captured, "event=quota_set db=\"a b\" suppressed=1\n") &&
		      count(captured, "\n") == 2,
	      "the tick writes the counts of kinds that went quiet:\n%s", captured);
	capture(tick);
	CHECK(!captured[0], "each count once: [%s]", captured);
}

int main(void)
{
	test_quote();
	test_event_format();
	test_levels();
	test_formats();
	test_rate_limit();
	return check_report("test_log");
}
