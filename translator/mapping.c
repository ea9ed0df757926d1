#include "translator/mapping.h"

#include "common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FIELD_NAMES[MF_COUNT] = {
	[MF_NODE] = "node",
	[MF_VPC] = "vpc",
	[MF_ATTACHMENT] = "vpcAttachment",
	[MF_HOST_IF] = "hostInterface",
	[MF_GUEST_IF] = "guestInterface",
	[MF_VRF_IF] = "vrfInterface",
	[MF_CONTAINER_ID] = "containerID",
	[MF_POD_NAME] = "podName",
	[MF_POD_SUBNET] = "podSubnet",
};

/* Longest value accepted per field: kernel IFNAMSIZ-1 for devices, DNS names else. */
static const size_t FIELD_MAX[MF_COUNT] = {
	[MF_NODE] = 253,
	[MF_VPC] = 253,
	[MF_ATTACHMENT] = 253,
	[MF_HOST_IF] = 15,
	[MF_GUEST_IF] = 15,
	[MF_VRF_IF] = 15,
	[MF_CONTAINER_ID] = 253,
	[MF_POD_NAME] = 253,
	[MF_POD_SUBNET] = 43,
};

const char *map_field_name(enum map_field f)
{
	return (unsigned)f < MF_COUNT ? FIELD_NAMES[f] : "?";
}

void mapping_default(struct report_mapping *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->name, "galactic");
	strcpy(m->group, "network.datumapis.com");
	strcpy(m->version, "v1alpha1");
	strcpy(m->resource, "nodeattachments");
	m->namespaced = true;
	strcpy(m->path[MF_NODE], "spec.node");
	strcpy(m->path[MF_VPC], "spec.vpc");
	strcpy(m->path[MF_ATTACHMENT], "spec.vpcAttachment");
	strcpy(m->path[MF_HOST_IF], "spec.hostInterface");
	strcpy(m->path[MF_GUEST_IF], "spec.guestInterface");
	strcpy(m->path[MF_VRF_IF], "spec.vrfInterface");
	strcpy(m->path[MF_CONTAINER_ID], "spec.containerID");
	strcpy(m->path[MF_POD_NAME], "spec.pod.name");
	strcpy(m->path[MF_POD_SUBNET], "spec.podSubnets");
	strcpy(m->cond_path, "status.conditions");
	strcpy(m->cond_type, "Programmed");
}

int mapping_set_init(struct mapping_set *s)
{
	s->e = calloc(1, sizeof(*s->e));
	if (!s->e) {
		s->n = 0;
		return -1;
	}
	s->n = 1;
	mapping_default(&s->e[0]);
	return 0;
}

void mapping_set_free(struct mapping_set *s)
{
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

static void errf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/* Dotted path of [A-Za-z0-9_-] segments; a leading '.' (jsonpath style) is dropped. */
static int path_parse(const char *in, char *out, size_t n)
{
	const char *p = in;
	size_t seg = 0;

	if (*p == '.')
		p++;
	if (!*p || strlen(p) >= n)
		return -1;
	for (const char *q = p; *q; q++) {
		if (*q == '.') {
			if (!seg)
				return -1;
			seg = 0;
			continue;
		}
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '_' || *q == '-'))
			return -1;
		seg++;
	}
	if (!seg)
		return -1;
	strcpy(out, p);
	return 0;
}

static bool dns_label_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
			return false;
	return true;
}

static int copy_str(char *dst, size_t n, const json_t *v, const char *where, char *err,
		    size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || !*s || strlen(s) >= n) {
		errf(err, errlen, "%s: want a non-empty string shorter than %zu", where, n);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

static int entry_from_json(const json_t *j, const char *at, struct report_mapping *m, char *err,
			   size_t errlen)
{
	char where[160];
	const json_t *fields, *prog, *v;
	const char *k;

	memset(m, 0, sizeof(*m));
	if (!json_is_object(j)) {
		errf(err, errlen, "%s: want an object", at);
		return -1;
	}
	snprintf(where, sizeof(where), "%s.name", at);
	if (copy_str(m->name, sizeof(m->name), json_object_get(j, "name"), where, err, errlen))
		return -1;
	if (json_is_false(json_object_get(j, "enabled")))
		return 1; /* removal: nothing else needed */
	snprintf(where, sizeof(where), "%s.group", at);
	if (copy_str(m->group, sizeof(m->group), json_object_get(j, "group"), where, err, errlen))
		return -1;
	snprintf(where, sizeof(where), "%s.version", at);
	if (copy_str(m->version, sizeof(m->version), json_object_get(j, "version"), where, err,
		     errlen))
		return -1;
	snprintf(where, sizeof(where), "%s.resource", at);
	if (copy_str(m->resource, sizeof(m->resource), json_object_get(j, "resource"), where, err,
		     errlen))
		return -1;
	if (!dns_label_ok(m->group, 253) || !dns_label_ok(m->resource, 63) ||
	    !dns_label_ok(m->version, 63)) {
		errf(err, errlen, "%s: group/version/resource must be lowercase DNS names", at);
		return -1;
	}
	v = json_object_get(j, "namespaced");
	if (v && !json_is_boolean(v)) {
		errf(err, errlen, "%s.namespaced: want a boolean", at);
		return -1;
	}
	m->namespaced = v ? json_is_true(v) : true;

	fields = json_object_get(j, "fields");
	if (!json_is_object(fields)) {
		errf(err, errlen, "%s.fields: want an object", at);
		return -1;
	}
	json_object_foreach((json_t *)fields, k, v) {
		int f;
		for (f = 0; f < MF_COUNT && strcmp(k, FIELD_NAMES[f]); f++)
			;
		if (f == MF_COUNT) {
			errf(err, errlen, "%s.fields.%s: unknown field", at, k);
			return -1;
		}
		if (!json_is_string(v) ||
		    path_parse(json_string_value(v), m->path[f], sizeof(m->path[f]))) {
			errf(err, errlen, "%s.fields.%s: want a dotted path like \"spec.node\"", at, k);
			return -1;
		}
	}
	for (int f = MF_NODE; f <= MF_ATTACHMENT; f++)
		if (!m->path[f][0]) {
			errf(err, errlen, "%s.fields.%s: required", at, FIELD_NAMES[f]);
			return -1;
		}

	prog = json_object_get(j, "programmed");
	if (!json_is_object(prog)) {
		errf(err, errlen, "%s.programmed: want {\"conditions\",\"type\"} or {\"path\"}", at);
		return -1;
	}
	v = json_object_get(prog, "path");
	if (v) {
		if (!json_is_string(v) ||
		    path_parse(json_string_value(v), m->bool_path, sizeof(m->bool_path))) {
			errf(err, errlen, "%s.programmed.path: want a dotted path", at);
			return -1;
		}
		if (json_object_get(prog, "conditions")) {
			errf(err, errlen, "%s.programmed: give either path or conditions, not both", at);
			return -1;
		}
		return 0;
	}
	v = json_object_get(prog, "conditions");
	if (!json_is_string(v) || path_parse(json_string_value(v), m->cond_path, sizeof(m->cond_path))) {
		errf(err, errlen, "%s.programmed.conditions: want a dotted path", at);
		return -1;
	}
	v = json_object_get(prog, "type");
	snprintf(where, sizeof(where), "%s.programmed.type", at);
	if (!v) {
		strcpy(m->cond_type, "Programmed");
		return 0;
	}
	return copy_str(m->cond_type, sizeof(m->cond_type), v, where, err, errlen);
}

int mapping_set_load_json(struct mapping_set *s, const json_t *doc, char *err, size_t errlen)
{
	const json_t *kinds, *v;
	struct report_mapping *e, m;
	size_t n, i, idx;
	bool replace;

	if (!json_is_object(doc)) {
		errf(err, errlen, "mapping config: want a JSON object");
		return -1;
	}
	v = json_object_get(doc, "replaceDefaults");
	if (v && !json_is_boolean(v)) {
		errf(err, errlen, "mapping config: replaceDefaults: want a boolean");
		return -1;
	}
	replace = json_is_true(v);
	kinds = json_object_get(doc, "reportKinds");
	if (!json_is_array(kinds)) {
		errf(err, errlen, "mapping config: reportKinds: want an array");
		return -1;
	}
	/* Work on a copy so a bad document leaves s unchanged. */
	n = replace ? 0 : s->n;
	e = calloc(n + json_array_size(kinds) + 1, sizeof(*e));
	if (!e) {
		errf(err, errlen, "mapping config: out of memory");
		return -1;
	}
	if (n)
		memcpy(e, s->e, n * sizeof(*e));
	json_array_foreach((json_t *)kinds, idx, v) {
		char at[48];
		int r;

		snprintf(at, sizeof(at), "reportKinds[%zu]", idx);
		r = entry_from_json(v, at, &m, err, errlen);
		if (r < 0) {
			free(e);
			return -1;
		}
		for (i = 0; i < n && strcmp(e[i].name, m.name); i++)
			;
		if (r == 1) { /* disabled: drop the entry of that name */
			if (i < n) {
				memmove(&e[i], &e[i + 1], (n - i - 1) * sizeof(*e));
				n--;
			}
			continue;
		}
		for (size_t j = 0; j < n; j++)
			if (j != i && !strcmp(e[j].group, m.group) && !strcmp(e[j].resource, m.resource)) {
				errf(err, errlen, "%s: %s.%s is already mapped by entry %s", at,
				     m.resource, m.group, e[j].name);
				free(e);
				return -1;
			}
		e[i] = m;
		if (i == n)
			n++;
	}
	if (!n) {
		errf(err, errlen, "mapping config: no report kinds left");
		free(e);
		return -1;
	}
	free(s->e);
	s->e = e;
	s->n = n;
	return 0;
}

int mapping_set_load_file(struct mapping_set *s, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	int r;

	if (!doc) {
		errf(err, errlen, "mapping config %s: line %d: %s", path, je.line, je.text);
		return -1;
	}
	r = mapping_set_load_json(s, doc, err, errlen);
	if (r) {
		char tmp[512];
		snprintf(tmp, sizeof(tmp), "%s", err);
		errf(err, errlen, "%s: %s", path, tmp);
	}
	json_decref(doc);
	return r;
}

/* ---- reading reports ---- */

static const char *jtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Printable ASCII only: values end up in other objects and in logs. */
static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* The first prefix of path that exists but is not an object (so path cannot exist), or NULL. */
static const json_t *blocked_at(const json_t *obj, const char *path, char *prefix, size_t n)
{
	const char *dot = path;

	while ((dot = strchr(dot, '.'))) {
		size_t len = (size_t)(dot - path);
		const json_t *x;
		if (len >= n)
			return NULL;
		memcpy(prefix, path, len);
		prefix[len] = 0;
		x = gj_get(obj, prefix);
		if (x && !json_is_object(x) && !json_is_null(x))
			return x;
		if (!x)
			return NULL;
		dot++;
	}
	return NULL;
}

static int read_field(const struct report_mapping *m, const json_t *obj, enum map_field f,
		      struct report_view *v, char *err, size_t errlen)
{
	const json_t *x;
	const char *s;

	if (!m->path[f][0])
		return 0;
	x = gj_get(obj, m->path[f]);
	if (!x || json_is_null(x)) {
		char prefix[MAP_PATH_MAX + 1];
		const json_t *b = blocked_at(obj, m->path[f], prefix, sizeof(prefix));
		if (b) {
			errf(err, errlen, "%s %s: %s is %s, want an object holding %s (%s)", m->name,
			     v->key, prefix, jtype(b), m->path[f], FIELD_NAMES[f]);
			return -1;
		}
		if (f <= MF_ATTACHMENT) {
			errf(err, errlen, "%s %s: %s (%s) is missing", m->name, v->key, m->path[f],
			     FIELD_NAMES[f]);
			return -1;
		}
		return 0;
	}
	/* A list (podSubnets): the first item is the primary one. */
	if (json_is_array(x) && f == MF_POD_SUBNET) {
		if (!json_array_size(x))
			return 0;
		x = json_array_get(x, 0);
	}
	if (!json_is_string(x)) {
		errf(err, errlen, "%s %s: %s (%s) is %s, want a string", m->name, v->key, m->path[f],
		     FIELD_NAMES[f], jtype(x));
		return -1;
	}
	s = json_string_value(x);
	if (!*s) {
		if (f <= MF_ATTACHMENT) {
			errf(err, errlen, "%s %s: %s (%s) is empty", m->name, v->key, m->path[f],
			     FIELD_NAMES[f]);
			return -1;
		}
		return 0;
	}
	if (strlen(s) > FIELD_MAX[f] || !printable(s) ||
	    ((f == MF_VPC || f == MF_ATTACHMENT) && strchr(s, '/'))) {
		errf(err, errlen, "%s %s: %s (%s) is not a valid value (at most %zu printable characters%s)",
		     m->name, v->key, m->path[f], FIELD_NAMES[f], FIELD_MAX[f],
		     f == MF_VPC || f == MF_ATTACHMENT ? ", no '/'" : "");
		return -1;
	}
	if (!(v->v[f] = strdup(s))) {
		errf(err, errlen, "%s %s: out of memory", m->name, v->key);
		return -1;
	}
	return 0;
}

static int dup_bounded(char **dst, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		n = max;
	*dst = strndup(s, n);
	return *dst ? 0 : -1;
}

static int read_programmed(const struct report_mapping *m, const json_t *obj,
			   struct report_view *v, char *err, size_t errlen)
{
	const json_t *x, *c;
	size_t i;

	if (m->bool_path[0]) {
		x = gj_get(obj, m->bool_path);
		if (!x || json_is_null(x))
			return 0;
		if (!json_is_boolean(x)) {
			errf(err, errlen, "%s %s: %s (programmed) is %s, want a boolean", m->name,
			     v->key, m->bool_path, jtype(x));
			return -1;
		}
		v->programmed = json_is_true(x) ? PS_TRUE : PS_FALSE;
		return 0;
	}
	x = gj_get(obj, m->cond_path);
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_array(x)) {
		errf(err, errlen, "%s %s: %s is %s, want a list of conditions", m->name, v->key,
		     m->cond_path, jtype(x));
		return -1;
	}
	json_array_foreach((json_t *)x, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *st, *r, *msg;
		const json_t *og;

		if (!t || strcmp(t, m->cond_type))
			continue;
		st = json_string_value(json_object_get(c, "status"));
		if (st && !strcmp(st, "True"))
			v->programmed = PS_TRUE;
		else if (st && !strcmp(st, "False"))
			v->programmed = PS_FALSE;
		else if (st && !strcmp(st, "Unknown"))
			v->programmed = PS_UNKNOWN;
		else {
			errf(err, errlen, "%s %s: %s[type=%s].status is not True, False or Unknown",
			     m->name, v->key, m->cond_path, m->cond_type);
			return -1;
		}
		r = json_string_value(json_object_get(c, "reason"));
		msg = json_string_value(json_object_get(c, "message"));
		if ((r && dup_bounded(&v->reason, r, 1024)) || (msg && dup_bounded(&v->message, msg, 1024))) {
			errf(err, errlen, "%s %s: out of memory", m->name, v->key);
			return -1;
		}
		/* A condition computed for an older generation says nothing about the current spec. */
		og = json_object_get(c, "observedGeneration");
		if (json_is_integer(og) && json_is_integer(gj_get(obj, "metadata.generation")) &&
		    json_integer_value(og) < json_integer_value(gj_get(obj, "metadata.generation")))
			v->outdated = true;
		return 0;
	}
	return 0;
}

int report_extract(const struct report_mapping *m, const json_t *obj, struct report_view *v,
		   char *err, size_t errlen)
{
	const char *ts;

	memset(v, 0, sizeof(*v));
	v->kind = m->name;
	if (!json_is_object(obj) || gj_object_key(obj, v->key, sizeof(v->key))) {
		errf(err, errlen, "%s report without a usable metadata.name", m->name);
		return -1;
	}
	ts = gj_str(obj, "metadata.creationTimestamp");
	if (ts && !(v->created = strndup(ts, 64))) {
		errf(err, errlen, "%s %s: out of memory", m->name, v->key);
		return -1;
	}
	/* Ids first: they stay set when a later field is bad, so the attachment
	 * can still be told its report is invalid. */
	static const enum map_field order[MF_COUNT] = {
		MF_VPC, MF_ATTACHMENT, MF_NODE, MF_HOST_IF, MF_GUEST_IF, MF_VRF_IF,
		MF_CONTAINER_ID, MF_POD_NAME, MF_POD_SUBNET,
	};
	for (int i = 0; i < MF_COUNT; i++)
		if (read_field(m, obj, order[i], v, err, errlen))
			return -1;
	return read_programmed(m, obj, v, err, errlen);
}

void report_view_clear(struct report_view *v)
{
	for (int f = 0; f < MF_COUNT; f++)
		free(v->v[f]);
	free(v->reason);
	free(v->message);
	free(v->created);
	memset(v, 0, sizeof(*v));
}

int mapping_ids_key(const char *vpc, const char *attachment, char *buf, size_t n)
{
	int r;

	if (!vpc || !*vpc || !attachment || !*attachment)
		return -1;
	r = snprintf(buf, n, "%s/%s", vpc, attachment);
	return r < 0 || (size_t)r >= n ? -1 : 0;
}
