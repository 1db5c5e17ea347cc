/* SPDX-License-Identifier: GPL-2.0 */
/* Validation of what users type: limit values and database names.  Every tool
 * uses these, so bad input is refused the same way before it reaches a daemon.
 */
#ifndef ROWGATE_USER_LIB_LIMITS_H
#define ROWGATE_USER_LIB_LIMITS_H

#include <stddef.h>

#include <rowgate/abi.h>

/*
 * A limit is a plain non-negative decimal integer that fits u64 (leading
 * zeros allowed), in rows per second; 0 disables the limit.  Signs, spaces,
 * units ("1000/s"), exponents, fractions, hex and non-ASCII digits are
 * refused.  Returns 0, or -EINVAL / -ERANGE with a one-line reason in err.
 */
int rg_parse_limit(const char *s, __u64 *out, char *err, size_t errlen);

/*
 * A database name as the server resolves it: "greptime-logs" is "logs"
 * (dbname.h).  Allowed characters are [A-Za-z0-9_.:-], the ones that appear
 * unencoded in a URL query value and an HTTP header alike, because the kernel
 * matches the raw bytes of either.  The normalized name must be 1..63 bytes.
 * Returns 0 with key NUL-padded, or -EINVAL / -ENAMETOOLONG with err filled.
 */
int rg_parse_db_name(const char *s, struct rg_db_key *key, char *err, size_t errlen);

/* Bytes of the text of a key (rg_format_db_name), NUL included. */
#define RG_DB_NAME_TEXT_MAX (RG_DB_NAME_MAX + 9)

/* The text rg_parse_db_name reads back as key: its name, with "greptime-"
 * put back when the name itself starts with it (the key of
 * "greptime-greptime-x" is "greptime-x", which alone would read as "x").
 * buflen >= RG_DB_NAME_TEXT_MAX always fits.  Returns buf. */
char *rg_format_db_name(const struct rg_db_key *key, char *buf, size_t buflen);

/* Quote untrusted input for an error message: printable ASCII kept, other
 * bytes as \xNN, cut with "..." to fit.  Returns dst. */
char *rg_quote_input(const char *s, char *dst, size_t dstlen);

#endif /* ROWGATE_USER_LIB_LIMITS_H */
