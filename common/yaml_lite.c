#include "common/yaml_lite.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct line {
	int indent;
	int lineno;
	char *s; /* content without indent, comment stripped, right-trimmed */
};

struct yp {
	struct line *l;
	int n, i;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct yp *p, int lineno, const char *what)
{
	if (!p->failed)
		snprintf(p->err, p->errlen, "yaml line %d: %s", lineno, what);
	p->failed = true;
}

static void rtrim(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
}

/* Cuts a " #" comment that is outside quotes. */
static void strip_comment(char *s)
{
	char q = 0;
	for (char *p = s; *p; p++) {
		if (q) {
			if (*p == '\\' && q == '"' && p[1])
				p++;
			else if (*p == q)
				q = 0;
		} else if (*p == '"' || *p == '\'') {
			if (p == s || isspace((unsigned char)p[-1]) || strchr("[{,:", p[-1]))
				q = *p;
		} else if (*p == '#' && (p == s || isspace((unsigned char)p[-1]))) {
			*p = 0;
			return;
		}
	}
}

static json_t *plain_scalar(const char *s)
{
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return json_false();
	if (!*s || !strcmp(s, "null") || !strcmp(s, "~") || !strcmp(s, "Null"))
		return json_null();
	return json_string(s);
}

/* Quoted scalar at *sp; advances *sp past the closing quote. */
static json_t *quoted(struct yp *p, int lineno, const char **sp)
{
	const char *s = *sp;
	char q = *s++;
	size_t cap = strlen(s) + 1, n = 0;
	char *out = malloc(cap);
	json_t *v;

	if (!out)
		return NULL;
	for (;; s++) {
		if (!*s) {
			free(out);
			fail(p, lineno, "unterminated quoted scalar");
			return NULL;
		}
		if (*s == q) {
			if (q == '\'' && s[1] == '\'') {
				out[n++] = '\'';
				s++;
				continue;
			}
			s++;
			break;
		}
		if (q == '"' && *s == '\\' && s[1]) {
			s++;
			switch (*s) {
			case 'n': out[n++] = '\n'; break;
			case 't': out[n++] = '\t'; break;
			case 'r': out[n++] = '\r'; break;
			case '0': out[n++] = '\0'; break;
			default: out[n++] = *s; break;
			}
			continue;
		}
		out[n++] = *s;
	}
	*sp = s;
	v = json_stringn(out, n);
	free(out);
	return v;
}

static void skip_ws(const char **s)
{
	while (isspace((unsigned char)**s))
		(*s)++;
}

static json_t *flow_value(struct yp *p, int lineno, const char **sp);

static json_t *flow_plain(const char **sp, const char *stops)
{
	const char *s = *sp, *e;
	char *tmp;
	json_t *v;

	while (*s && !strchr(stops, *s))
		s++;
	e = s;
	while (e > *sp && isspace((unsigned char)e[-1]))
		e--;
	tmp = strndup(*sp, (size_t)(e - *sp));
	if (!tmp)
		return NULL;
	v = plain_scalar(tmp);
	free(tmp);
	*sp = s;
	return v;
}

static json_t *flow_value(struct yp *p, int lineno, const char **sp)
{
	const char *s = *sp;
	json_t *v;

	skip_ws(&s);
	if (*s == '{' || *s == '[') {
		bool map = *s == '{';
		char close = map ? '}' : ']';
		v = map ? json_object() : json_array();
		s++;
		for (;;) {
			skip_ws(&s);
			if (*s == close) {
				s++;
				break;
			}
			if (!*s) {
				fail(p, lineno, "unterminated flow collection");
				json_decref(v);
				return NULL;
			}
			if (map) {
				json_t *k = (*s == '"' || *s == '\'') ? quoted(p, lineno, &s)
								     : flow_plain(&s, ":,}");
				if (!json_is_string(k) || (skip_ws(&s), *s != ':')) {
					json_decref(k);
					json_decref(v);
					fail(p, lineno, "bad flow mapping key");
					return NULL;
				}
				s++;
				json_t *val = flow_value(p, lineno, &s);
				if (!val) {
					json_decref(k);
					json_decref(v);
					return NULL;
				}
				json_object_set_new(v, json_string_value(k), val);
				json_decref(k);
			} else {
				json_t *val = flow_value(p, lineno, &s);
				if (!val) {
					json_decref(v);
					return NULL;
				}
				json_array_append_new(v, val);
			}
			skip_ws(&s);
			if (*s == ',')
				s++;
			else if (*s != close) {
				fail(p, lineno, "expected , in flow collection");
				json_decref(v);
				return NULL;
			}
		}
	} else if (*s == '"' || *s == '\'') {
		v = quoted(p, lineno, &s);
	} else {
		v = flow_plain(&s, ",}]");
	}
	*sp = s;
	return v;
}

/* A scalar or flow value that fills the rest of a line. */
static json_t *inline_value(struct yp *p, int lineno, const char *s)
{
	json_t *v;

	if (*s == '&' || *s == '*' || *s == '!') {
		fail(p, lineno, "anchors, aliases and tags are not supported");
		return NULL;
	}
	if (*s == '{' || *s == '[' || *s == '"' || *s == '\'') {
		v = flow_value(p, lineno, &s);
		if (v && (skip_ws(&s), *s)) {
			json_decref(v);
			fail(p, lineno, "trailing characters after value");
			return NULL;
		}
		return v;
	}
	return plain_scalar(s);
}

/* Offset of the "key:" separator (':' followed by space or end), or -1. */
static int key_sep(const char *s)
{
	char q = 0;
	for (const char *c = s; *c; c++) {
		if (q) {
			if (*c == q)
				q = 0;
		} else if ((*c == '"' || *c == '\'') && c == s) {
			q = *c;
		} else if (*c == ':' && (!c[1] || c[1] == ' ')) {
			return (int)(c - s);
		} else if (c == s && (*c == '{' || *c == '[')) {
			return -1;
		}
	}
	return -1;
}

static bool is_seq_item(const char *s) { return s[0] == '-' && (!s[1] || s[1] == ' '); }

static json_t *node(struct yp *p, int indent);

/* | or > block scalar: the more-indented lines that follow. */
static json_t *block_scalar(struct yp *p, int parent_indent, char style)
{
	size_t cap = 64, n = 0;
	char *buf = malloc(cap);
	json_t *v;
	int ind = -1;

	if (!buf)
		return NULL;
	while (p->i < p->n && p->l[p->i].indent > parent_indent) {
		struct line *l = &p->l[p->i++];
		size_t need;
		if (ind < 0)
			ind = l->indent;
		need = n + (size_t)(l->indent - ind) + strlen(l->s) + 2;
		if (need > cap) {
			cap = need * 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		if (n)
			buf[n++] = style == '>' ? ' ' : '\n';
		for (int k = ind; k < l->indent; k++)
			buf[n++] = ' ';
		memcpy(buf + n, l->s, strlen(l->s));
		n += strlen(l->s);
	}
	if (style == '|')
		buf[n++] = '\n';
	v = json_stringn(buf, n);
	free(buf);
	return v;
}

/* Value after "key:" or "- ": inline, block scalar, or the nested block. */
static json_t *value_after(struct yp *p, struct line *l, const char *rest, int indent,
			   bool seq_at_same_indent)
{
	if (*rest == '|' || *rest == '>')
		return block_scalar(p, indent, *rest);
	if (*rest)
		return inline_value(p, l->lineno, rest);
	if (p->i < p->n && p->l[p->i].indent > indent)
		return node(p, p->l[p->i].indent);
	if (seq_at_same_indent && p->i < p->n && p->l[p->i].indent == indent &&
	    is_seq_item(p->l[p->i].s))
		return node(p, indent);
	return json_null();
}

static json_t *mapping(struct yp *p, int indent)
{
	json_t *m = json_object();

	while (!p->failed && p->i < p->n && p->l[p->i].indent == indent &&
	       !is_seq_item(p->l[p->i].s)) {
		struct line *l = &p->l[p->i];
		int sep = key_sep(l->s);
		json_t *k, *v;
		const char *rest;

		if (sep < 0) {
			fail(p, l->lineno, "expected 'key: value'");
			break;
		}
		l->s[sep] = 0;
		rtrim(l->s);
		if (l->s[0] == '"' || l->s[0] == '\'') {
			const char *ks = l->s;
			k = quoted(p, l->lineno, &ks);
		} else {
			k = json_string(l->s);
		}
		if (!k)
			break;
		rest = l->s + sep + 1;
		while (*rest == ' ')
			rest++;
		p->i++;
		v = value_after(p, l, rest, indent, true);
		if (!v) {
			json_decref(k);
			break;
		}
		json_object_set_new(m, json_string_value(k), v);
		json_decref(k);
	}
	if (!p->failed && p->i < p->n && p->l[p->i].indent > indent)
		fail(p, p->l[p->i].lineno, "unexpected indentation");
	if (p->failed) {
		json_decref(m);
		return NULL;
	}
	return m;
}

static json_t *sequence(struct yp *p, int indent)
{
	json_t *a = json_array();

	while (!p->failed && p->i < p->n && p->l[p->i].indent == indent &&
	       is_seq_item(p->l[p->i].s)) {
		struct line *l = &p->l[p->i];
		const char *rest = l->s + 1;
		json_t *v;
		int off = 1;

		while (*rest == ' ')
			rest++, off++;
		if (*rest && key_sep(rest) >= 0) {
			/* "- key: v": the item is a mapping starting on this line. */
			l->indent = indent + off;
			l->s = (char *)rest;
			v = mapping(p, l->indent);
		} else if (*rest && is_seq_item(rest)) {
			l->indent = indent + off;
			l->s = (char *)rest;
			v = sequence(p, l->indent);
		} else {
			p->i++;
			v = value_after(p, l, rest, indent, false);
		}
		if (!v)
			break;
		json_array_append_new(a, v);
	}
	if (p->failed) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static json_t *node(struct yp *p, int indent)
{
	struct line *l = &p->l[p->i];

	if (is_seq_item(l->s))
		return sequence(p, indent);
	if (key_sep(l->s) >= 0)
		return mapping(p, indent);
	p->i++;
	return inline_value(p, l->lineno, l->s);
}

json_t *yaml_lite_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct yp p = { .err = err, .errlen = errlen };
	char *buf, *ln, *next;
	int lineno = 0, cap = 0;
	json_t *v = NULL;
	size_t k = 0;

	while (k < len && isspace((unsigned char)text[k]))
		k++;
	if (k < len && text[k] == '{') {
		json_error_t je;
		v = json_loadb(text, len, 0, &je);
		if (!v)
			snprintf(err, errlen, "json line %d: %s", je.line, je.text);
		return v;
	}
	buf = strndup(text, len);
	if (!buf)
		return NULL;
	for (ln = buf; ln; ln = next) {
		int ind = 0;
		next = strchr(ln, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		if (strchr(ln, '\t') && strspn(ln, " \t") > strspn(ln, " ")) {
			snprintf(err, errlen, "yaml line %d: tab in indentation", lineno);
			goto out;
		}
		while (ln[ind] == ' ')
			ind++;
		strip_comment(ln + ind);
		rtrim(ln + ind);
		if (!ln[ind] || !strcmp(ln + ind, "---") || !strcmp(ln + ind, "..."))
			continue;
		if (p.n == cap) {
			cap = cap ? cap * 2 : 64;
			struct line *nl = realloc(p.l, (size_t)cap * sizeof(*nl));
			if (!nl)
				goto out;
			p.l = nl;
		}
		p.l[p.n++] = (struct line){ .indent = ind, .lineno = lineno, .s = ln + ind };
	}
	if (!p.n) {
		v = json_object();
		goto out;
	}
	v = node(&p, p.l[0].indent);
	if (v && p.i < p.n) {
		fail(&p, p.l[p.i].lineno, "unexpected content");
		json_decref(v);
		v = NULL;
	}
out:
	free(p.l);
	free(buf);
	return v;
}
