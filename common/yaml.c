/*
 * YAML -> jansson on libyaml's event parser (see yaml.h).
 *
 * Only the first document is read. Anchors and aliases are refused: no
 * kubeconfig needs them, and aliases are how a small file expands into a huge
 * tree ("billion laughs"). Depth is bounded for the same reason.
 */
#include "common/yaml.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_DEPTH 64

struct yctx {
	yaml_parser_t p;
	char *err;
	size_t errlen;
};

static void fail_at(struct yctx *y, size_t line, const char *what)
{
	snprintf(y->err, y->errlen, "yaml line %zu: %s", line + 1, what);
}

static bool next(struct yctx *y, yaml_event_t *ev)
{
	if (yaml_parser_parse(&y->p, ev))
		return true;
	fail_at(y, y->p.problem_mark.line, y->p.problem ? y->p.problem : "parse error");
	return false;
}

/* Plain (unquoted) scalars follow the YAML 1.2 core schema for the types
 * kubeconfigs use; quoted scalars are always strings. */
static json_t *scalar(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	char *end;
	long long i;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(v, n);
	if (!n || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
		return json_null();
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		return json_true();
	if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		return json_false();
	if ((v[0] >= '0' && v[0] <= '9') || ((v[0] == '-' || v[0] == '+') && v[1] >= '0' && v[1] <= '9')) {
		i = strtoll(v, &end, 10);
		if (*end == 0)
			return json_integer(i);
	}
	return json_stringn(v, n);
}

static json_t *node(struct yctx *y, yaml_event_t *ev, int depth);

static bool anchored(struct yctx *y, const yaml_event_t *ev)
{
	const yaml_char_t *a = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.anchor
			       : ev->type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.anchor
			       : ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
			       : NULL;

	if (ev->type == YAML_ALIAS_EVENT || a) {
		fail_at(y, ev->start_mark.line, "anchors and aliases are not supported");
		return true;
	}
	return false;
}

static json_t *mapping(struct yctx *y, int depth)
{
	json_t *o = json_object();
	yaml_event_t k, v;

	for (;;) {
		json_t *val;

		if (!next(y, &k))
			goto bad;
		if (k.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&k);
			return o;
		}
		if (k.type != YAML_SCALAR_EVENT || anchored(y, &k)) {
			if (k.type != YAML_SCALAR_EVENT)
				fail_at(y, k.start_mark.line, "mapping keys must be scalars");
			yaml_event_delete(&k);
			goto bad;
		}
		if (!next(y, &v)) {
			yaml_event_delete(&k);
			goto bad;
		}
		val = node(y, &v, depth + 1);
		if (!val) {
			yaml_event_delete(&k);
			goto bad;
		}
		json_object_setn_new(o, (const char *)k.data.scalar.value, k.data.scalar.length, val);
		yaml_event_delete(&k);
	}
bad:
	json_decref(o);
	return NULL;
}

static json_t *sequence(struct yctx *y, int depth)
{
	json_t *a = json_array();
	yaml_event_t ev;

	for (;;) {
		json_t *val;

		if (!next(y, &ev))
			goto bad;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return a;
		}
		val = node(y, &ev, depth + 1);
		if (!val)
			goto bad;
		json_array_append_new(a, val);
	}
bad:
	json_decref(a);
	return NULL;
}

/* Consumes ev (and, for collections, every event up to their end). */
static json_t *node(struct yctx *y, yaml_event_t *ev, int depth)
{
	json_t *r = NULL;

	if (depth > YAML_MAX_DEPTH)
		fail_at(y, ev->start_mark.line, "nested too deeply");
	else if (anchored(y, ev))
		;
	else if (ev->type == YAML_SCALAR_EVENT)
		r = scalar(ev);
	else if (ev->type == YAML_MAPPING_START_EVENT)
		r = mapping(y, depth);
	else if (ev->type == YAML_SEQUENCE_START_EVENT)
		r = sequence(y, depth);
	else
		fail_at(y, ev->start_mark.line, "unexpected YAML event");
	yaml_event_delete(ev);
	return r;
}

json_t *yaml_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct yctx y = { .err = err, .errlen = errlen };
	yaml_event_t ev;
	json_t *r = NULL;

	if (!yaml_parser_initialize(&y.p)) {
		snprintf(err, errlen, "yaml: out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&y.p, (const unsigned char *)text, len);
	/* stream start, document start, then the root node */
	while (next(&y, &ev)) {
		yaml_event_type_t t = ev.type;

		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			r = json_object(); /* an empty file is an empty config */
			break;
		}
		r = node(&y, &ev, 0);
		break;
	}
	yaml_parser_delete(&y.p);
	return r;
}
