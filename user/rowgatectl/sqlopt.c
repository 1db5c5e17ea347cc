// SPDX-License-Identifier: GPL-2.0
/* Parser for the statements that carry ingest_rows_rate_limit; see sqlopt.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../lib/limits.h"
#include "sqlopt.h"

#define SQL_TOKEN_MAX 256 /* longer than any name or value we accept */

enum token_type {
	TOK_END,
	TOK_WORD,   /* keyword, bare identifier or bare value */
	TOK_QIDENT, /* "identifier" or `identifier` */
	TOK_STRING, /* 'literal' */
	TOK_PUNCT,  /* ( ) , = ; */
};

struct token {
	enum token_type type;
	char text[SQL_TOKEN_MAX];
};

struct lexer {
	const char *pos;
	char *err;
	size_t errlen;
};

static bool is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool is_punct(char c)
{
	return c && strchr("(),=;", c);
}

/* Bare words stop at spaces, punctuation and quotes; anything else is kept
 * so that validation can say what is wrong with "1000/s" or "greptime-x". */
static bool is_word_char(char c)
{
	return c && !is_space(c) && !is_punct(c) && !strchr("'\"`", c);
}

static int lex_quoted(struct lexer *lx, struct token *tok, char quote)
{
	const char *p = lx->pos + 1;
	size_t len = 0;

	for (;;) {
		if (!*p) {
			snprintf(lx->err, lx->errlen, "unterminated %c quote in the statement",
				 quote);
			return -EINVAL;
		}
		if (*p == quote) {
			if (p[1] != quote)
				break;
			p++; /* a doubled quote stands for itself */
		}
		if (len + 1 >= sizeof(tok->text)) {
			snprintf(lx->err, lx->errlen,
				 "a quoted name or value is longer than %zu bytes",
				 sizeof(tok->text) - 1);
			return -EINVAL;
		}
		tok->text[len++] = *p++;
	}
	tok->text[len] = 0;
	tok->type = quote == '\'' ? TOK_STRING : TOK_QIDENT;
	lx->pos = p + 1;
	return 0;
}

static int next_token(struct lexer *lx, struct token *tok)
{
	const char *p = lx->pos;
	size_t len = 0;

	while (is_space(*p))
		p++;
	lx->pos = p;
	tok->text[0] = 0;
	if (!*p) {
		tok->type = TOK_END;
		return 0;
	}
	if (*p == '\'' || *p == '"' || *p == '`')
		return lex_quoted(lx, tok, *p);
	if (is_punct(*p)) {
		tok->type = TOK_PUNCT;
		tok->text[0] = *p;
		tok->text[1] = 0;
		lx->pos = p + 1;
		return 0;
	}
	while (is_word_char(*p)) {
		if (len + 1 >= sizeof(tok->text)) {
			snprintf(lx->err, lx->errlen,
				 "a word in the statement is longer than %zu bytes",
				 sizeof(tok->text) - 1);
			return -EINVAL;
		}
		tok->text[len++] = *p++;
	}
	tok->text[len] = 0;
	tok->type = TOK_WORD;
	lx->pos = p;
	return 0;
}

static bool is_keyword(const struct token *tok, const char *keyword)
{
	return tok->type == TOK_WORD && !strcasecmp(tok->text, keyword);
}

static bool is_punct_tok(const struct token *tok, char c)
{
	return tok->type == TOK_PUNCT && tok->text[0] == c;
}

static const char *describe(const struct token *tok)
{
	return tok->type == TOK_END ? "the end of the statement" : tok->text;
}

static int expect_keyword(struct lexer *lx, const char *keyword)
{
	struct token tok;
	int ret = next_token(lx, &tok);

	if (ret)
		return ret;
	if (!is_keyword(&tok, keyword)) {
		snprintf(lx->err, lx->errlen, "expected %s, found '%s'", keyword, describe(&tok));
		return -EINVAL;
	}
	return 0;
}

static void lower_ascii(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static int parse_db_name(struct lexer *lx, struct rg_db_key *db)
{
	char why[160];
	struct token tok;
	int ret = next_token(lx, &tok);

	if (ret)
		return ret;
	if ((tok.type != TOK_WORD && tok.type != TOK_QIDENT) || is_keyword(&tok, "WITH") ||
	    is_keyword(&tok, "SET") || is_keyword(&tok, "UNSET")) {
		snprintf(lx->err, lx->errlen, "expected a database name, found '%s'",
			 describe(&tok));
		return -EINVAL;
	}
	if (tok.type == TOK_WORD) /* unquoted identifiers fold to lower case */
		lower_ascii(tok.text);
	ret = rg_parse_db_name(tok.text, db, why, sizeof(why));
	if (ret) {
		snprintf(lx->err, lx->errlen, "%s", why);
		return -EINVAL;
	}
	return 0;
}

/* An option key, quoted or bare, lower-cased; only ours is recognized. */
static int parse_option_key(struct lexer *lx)
{
	char quoted[64];
	struct token tok;
	int ret = next_token(lx, &tok);

	if (ret)
		return ret;
	if (tok.type == TOK_END || tok.type == TOK_PUNCT) {
		snprintf(lx->err, lx->errlen, "expected an option key such as '%s', found '%s'",
			 RG_OPT_INGEST_ROWS_RATE_LIMIT, describe(&tok));
		return -EINVAL;
	}
	lower_ascii(tok.text);
	if (strcmp(tok.text, RG_OPT_INGEST_ROWS_RATE_LIMIT)) {
		snprintf(lx->err, lx->errlen,
			 "Unrecognized database option key: %s (rowgate handles only '%s')",
			 rg_quote_input(tok.text, quoted, sizeof(quoted)),
			 RG_OPT_INGEST_ROWS_RATE_LIMIT);
		return -EINVAL;
	}
	return 0;
}

/* key = 'value', the value validated as a limit. */
static int parse_option(struct lexer *lx, __u64 *limit)
{
	char why[160];
	struct token tok;
	int ret;

	ret = parse_option_key(lx);
	if (ret)
		return ret;
	ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (!is_punct_tok(&tok, '=')) {
		snprintf(lx->err, lx->errlen, "expected '=' after '%s', found '%s'",
			 RG_OPT_INGEST_ROWS_RATE_LIMIT, describe(&tok));
		return -EINVAL;
	}
	ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (tok.type != TOK_STRING && tok.type != TOK_QIDENT && tok.type != TOK_WORD) {
		snprintf(lx->err, lx->errlen,
			 "expected a value such as '1000' for '%s', found '%s'",
			 RG_OPT_INGEST_ROWS_RATE_LIMIT, describe(&tok));
		return -EINVAL;
	}
	ret = rg_parse_limit(tok.text, limit, why, sizeof(why));
	if (ret) {
		snprintf(lx->err, lx->errlen, "%s", why);
		return -EINVAL;
	}
	return 0;
}

/* tok was read after the statement: only a ';' may follow. */
static int finish(struct lexer *lx, struct token *tok)
{
	bool after_semicolon = is_punct_tok(tok, ';');
	int ret = 0;

	if (after_semicolon)
		ret = next_token(lx, tok);
	if (ret)
		return ret;
	if (tok->type != TOK_END) {
		snprintf(lx->err, lx->errlen, "unexpected '%s'%s", describe(tok),
			 after_semicolon ? " (one statement at a time)" : "");
		return -EINVAL;
	}
	return 0;
}

static int expect_end(struct lexer *lx)
{
	struct token tok;
	int ret = next_token(lx, &tok);

	return ret ? ret : finish(lx, &tok);
}

/*
 * key = 'value' [, ...] (or key [, ...] to unset), then the token after the
 * list in *tok.  Every key is checked before a repeat is refused, so an
 * unknown key is reported as such.
 */
static int parse_option_list(struct lexer *lx, bool with_values, __u64 *limit, struct token *tok)
{
	bool seen = false;
	int ret;

	do {
		ret = with_values ? parse_option(lx, limit) : parse_option_key(lx);
		if (ret)
			return ret;
		if (seen) {
			snprintf(lx->err, lx->errlen, "option '%s' is given twice",
				 RG_OPT_INGEST_ROWS_RATE_LIMIT);
			return -EINVAL;
		}
		seen = true;
		ret = next_token(lx, tok);
		if (ret)
			return ret;
	} while (is_punct_tok(tok, ','));
	return 0;
}

/* WITH ( key = 'value' [, ...] ) or nothing. */
static int parse_create_options(struct lexer *lx, struct rg_sql_request *req)
{
	struct token tok;
	int ret;

	ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (!is_keyword(&tok, "WITH")) {
		req->action = RG_SQL_NOTHING;
		return finish(lx, &tok);
	}
	ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (!is_punct_tok(&tok, '(')) {
		snprintf(lx->err, lx->errlen, "expected '(' after WITH, found '%s'", describe(&tok));
		return -EINVAL;
	}
	ret = parse_option_list(lx, true, &req->limit, &tok);
	if (ret)
		return ret;
	if (!is_punct_tok(&tok, ')')) {
		snprintf(lx->err, lx->errlen, "expected ')' or ',', found '%s'", describe(&tok));
		return -EINVAL;
	}
	req->action = RG_SQL_SET_LIMIT;
	return expect_end(lx);
}

static int parse_create(struct lexer *lx, struct rg_sql_request *req)
{
	const char *after_database = lx->pos;
	struct token tok;
	int ret;

	ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (is_keyword(&tok, "IF")) {
		ret = expect_keyword(lx, "NOT");
		if (!ret)
			ret = expect_keyword(lx, "EXISTS");
		if (ret)
			return ret;
	} else {
		lx->pos = after_database;
	}
	ret = parse_db_name(lx, &req->db);
	if (ret)
		return ret;
	return parse_create_options(lx, req);
}

static int parse_alter(struct lexer *lx, struct rg_sql_request *req)
{
	struct token tok;
	int ret;

	ret = parse_db_name(lx, &req->db);
	if (!ret)
		ret = next_token(lx, &tok);
	if (ret)
		return ret;
	if (is_keyword(&tok, "SET")) {
		req->action = RG_SQL_SET_LIMIT;
	} else if (is_keyword(&tok, "UNSET")) {
		req->action = RG_SQL_UNSET_LIMIT;
	} else {
		snprintf(lx->err, lx->errlen,
			 "expected SET or UNSET after the database name, found '%s'",
			 describe(&tok));
		return -EINVAL;
	}
	ret = parse_option_list(lx, req->action == RG_SQL_SET_LIMIT, &req->limit, &tok);
	return ret ? ret : finish(lx, &tok);
}

/* Whether the rest of a statement mentions our option (table statements). */
static bool mentions_option(struct lexer *lx)
{
	struct token tok;

	while (!next_token(lx, &tok) && tok.type != TOK_END) {
		lower_ascii(tok.text);
		if (!strcmp(tok.text, RG_OPT_INGEST_ROWS_RATE_LIMIT))
			return true;
	}
	/* a statement we cannot lex may still name it */
	return strcasestr(lx->pos, RG_OPT_INGEST_ROWS_RATE_LIMIT) != NULL;
}

static int unsupported(struct lexer *lx)
{
	snprintf(lx->err, lx->errlen,
		 "unsupported statement: rowgatectl sql takes CREATE DATABASE, ALTER DATABASE ... SET/UNSET '%s', or SHOW CREATE DATABASE",
		 RG_OPT_INGEST_ROWS_RATE_LIMIT);
	return -EINVAL;
}

static int parse_table_statement(struct lexer *lx)
{
	if (!mentions_option(lx))
		return unsupported(lx);
	snprintf(lx->err, lx->errlen,
		 "'%s' is a database option and cannot be set on a table: use ALTER DATABASE db SET '%s' = 'N'",
		 RG_OPT_INGEST_ROWS_RATE_LIMIT, RG_OPT_INGEST_ROWS_RATE_LIMIT);
	return -EINVAL;
}

int rg_sql_parse(const char *sql, struct rg_sql_request *req, char *err, size_t errlen)
{
	struct lexer lx = { .pos = sql ? sql : "", .err = err, .errlen = errlen };
	struct token verb, object;
	int ret;

	memset(req, 0, sizeof(*req));
	ret = next_token(&lx, &verb);
	if (!ret)
		ret = next_token(&lx, &object);
	if (ret)
		return ret;
	if (verb.type == TOK_END) {
		snprintf(err, errlen, "the statement is empty");
		return -EINVAL;
	}
	if ((is_keyword(&verb, "CREATE") || is_keyword(&verb, "ALTER")) &&
	    is_keyword(&object, "TABLE"))
		return parse_table_statement(&lx);
	if (is_keyword(&verb, "CREATE") && is_keyword(&object, "DATABASE"))
		return parse_create(&lx, req);
	if (is_keyword(&verb, "ALTER") && is_keyword(&object, "DATABASE"))
		return parse_alter(&lx, req);
	if (is_keyword(&verb, "SHOW") && is_keyword(&object, "CREATE")) {
		ret = expect_keyword(&lx, "DATABASE");
		if (!ret)
			ret = parse_db_name(&lx, &req->db);
		if (ret)
			return ret;
		req->action = RG_SQL_SHOW_CREATE;
		return expect_end(&lx);
	}
	return unsupported(&lx);
}

/* Whether name reads back unquoted as the same identifier. */
static bool is_plain_identifier(const char *name)
{
	const char *p;

	if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return false;
	/* words the parser reads as keywords where a name goes */
	if (!strcmp(name, "with") || !strcmp(name, "set") || !strcmp(name, "unset"))
		return false;
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

int rg_sql_show_create(const struct rg_db_key *db, bool has_limit, __u64 limit, char *buf,
		       size_t buflen)
{
	char name[RG_DB_NAME_TEXT_MAX];
	const char *quote;

	rg_format_db_name(db, name, sizeof(name));
	quote = is_plain_identifier(name) ? "" : "`";
	if (!has_limit)
		return snprintf(buf, buflen, "CREATE DATABASE IF NOT EXISTS %s%s%s", quote, name,
				quote);
	return snprintf(buf, buflen,
			"CREATE DATABASE IF NOT EXISTS %s%s%s\nWITH(\n  %s = '%llu'\n)", quote,
			name, quote, RG_OPT_INGEST_ROWS_RATE_LIMIT, (unsigned long long)limit);
}
