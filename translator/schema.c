#include "translator/schema.h"

#include "common/json.h"

#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const json_t *schema_of_crd(const json_t *crd, const char *version)
{
	const json_t *v;
	size_t i;

	json_array_foreach(gj_get(crd, "spec.versions"), i, v)
		if (!strcmp(gj_str(v, "name") ?: "", version ? version : ""))
			return gj_get(v, "schema.openAPIV3Schema");
	return NULL;
}

static const json_t *prop(const json_t *node, const char *k)
{
	return json_object_get(json_object_get(node, "properties"), k);
}

const json_t *schema_at(const json_t *root, const char *path)
{
	char seg[256];
	const char *p = path, *dot;
	const json_t *n = root;

	while (n && p && *p) {
		size_t len;
		dot = strchr(p, '.');
		len = dot ? (size_t)(dot - p) : strlen(p);
		if (len >= sizeof(seg))
			return NULL;
		memcpy(seg, p, len);
		seg[len] = 0;
		n = prop(n, seg);
		p = dot ? dot + 1 : NULL;
	}
	return json_is_object(n) ? n : NULL;
}

bool schema_list_is_map_by(const json_t *node, const char *key)
{
	const json_t *keys = json_object_get(node, "x-kubernetes-list-map-keys");
	return !strcmp(gj_str(node, "x-kubernetes-list-type") ?: "", "map") &&
	       json_array_size(keys) == 1 &&
	       !strcmp(json_string_value(json_array_get(keys, 0)) ?: "", key);
}

/* Characters (UTF-8 code points), as the API server counts string lengths. */
static size_t utf8_len(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* Go regexp (RE2 syntax) to POSIX ERE for the common cases; NULL if not expressible. */
static char *pattern_to_ere(const char *p)
{
	size_t n = strlen(p);
	char *o = malloc(n * 12 + 1), *w = o;

	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '(' && p[i + 1] == '?') {
			if (p[i + 2] != ':') {
				free(o);
				return NULL; /* flags, named groups, lookaround */
			}
			*w++ = '(';
			i += 2;
		} else if (p[i] == '\\' && i + 1 < n) {
			const char *rep = NULL;
			switch (p[i + 1]) {
			case 'd': rep = "[0-9]"; break;
			case 'D': rep = "[^0-9]"; break;
			case 'w': rep = "[A-Za-z0-9_]"; break;
			case 'W': rep = "[^A-Za-z0-9_]"; break;
			case 's': rep = "[[:space:]]"; break;
			case 'S': rep = "[^[:space:]]"; break;
			case 'b': case 'B': case 'p': case 'P': case 'x': case 'A': case 'z':
			case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
			case '9': /* back-references: not RE2 (so never in a valid CRD), and slow in ERE */
				free(o);
				return NULL;
			default: break;
			}
			if (rep) {
				strcpy(w, rep);
				w += strlen(rep);
			} else {
				*w++ = p[i];
				*w++ = p[i + 1];
			}
			i++;
		} else {
			*w++ = p[i];
		}
	}
	*w = 0;
	return o;
}

/*
 * Compiled patterns, process-wide: a schema names a handful (condition type
 * and reason), and every write is checked against them, so compiling one per
 * check was 12% of the translator's CPU in a burst (bench_burst, perf). Entries
 * are never removed (at most PATTERNS_MAX; beyond that a pattern is compiled
 * per check as before); regexec on a shared compiled pattern is thread-safe.
 */
#define PATTERNS_MAX 64
static struct compiled {
	char *pattern;
	bool ok; /* false: not expressible here (-1) */
	regex_t re;
} patterns[PATTERNS_MAX];
static size_t n_patterns;
static pthread_mutex_t patterns_mu = PTHREAD_MUTEX_INITIALIZER;

static bool compile(const char *pattern, regex_t *re)
{
	char *ere = pattern_to_ere(pattern);
	bool ok = ere && !regcomp(re, ere, REG_EXTENDED | REG_NOSUB);

	free(ere);
	return ok;
}

/* The compiled pattern (NULL: not expressible); *own: the caller frees it. */
static const regex_t *compiled(const char *pattern, regex_t *tmp, bool *own)
{
	const regex_t *re = NULL;
	size_t i;

	*own = false;
	pthread_mutex_lock(&patterns_mu);
	for (i = 0; i < n_patterns; i++)
		if (!strcmp(patterns[i].pattern, pattern))
			break;
	if (i == n_patterns && n_patterns < PATTERNS_MAX && (patterns[i].pattern = strdup(pattern))) {
		patterns[i].ok = compile(pattern, &patterns[i].re);
		n_patterns++;
	}
	if (i < n_patterns) {
		re = patterns[i].ok ? &patterns[i].re : NULL;
		pthread_mutex_unlock(&patterns_mu);
		return re;
	}
	pthread_mutex_unlock(&patterns_mu);
	if (!compile(pattern, tmp))
		return NULL;
	*own = true;
	return tmp;
}

/* 1 matches, 0 does not, -1 cannot tell (the pattern is not expressible here). */
static int pattern_match(const char *pattern, const char *s)
{
	regex_t tmp;
	bool own;
	const regex_t *re = compiled(pattern, &tmp, &own);
	int rc;

	if (!re)
		return -1;
	rc = regexec(re, s, 0, NULL, 0) == 0;
	if (own)
		regfree(&tmp);
	return rc;
}

static bool type_ok(const char *t, const json_t *v, const json_t *node)
{
	if (json_is_true(json_object_get(node, "x-kubernetes-int-or-string")))
		return json_is_integer(v) || json_is_string(v);
	if (!t)
		return true;
	if (json_is_null(v))
		return json_is_true(json_object_get(node, "nullable"));
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v);
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	return true;
}

int schema_check(const json_t *node, const json_t *v, const char *path, char *why, size_t whylen)
{
	const char *t = gj_str(node, "type");
	const json_t *en = json_object_get(node, "enum"), *x;
	size_t i;

	if (!node) {
		snprintf(why, whylen, "%s: not declared in the schema", path);
		return -1;
	}
	if (!type_ok(t, v, node)) {
		snprintf(why, whylen, "%s: type %s", path, t ? t : "?");
		return -1;
	}
	if (json_is_array(en)) {
		bool hit = false;
		json_array_foreach(en, i, x)
			hit = hit || json_equal(x, v);
		if (!hit) {
			char *e = gj_dumps(en);
			snprintf(why, whylen, "%s: enum %s", path, e ? e : "[...]");
			free(e);
			return -1;
		}
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v), *pat = gj_str(node, "pattern");
		size_t len = utf8_len(s);
		json_int_t mx = json_integer_value(json_object_get(node, "maxLength"));
		json_int_t mn = json_integer_value(json_object_get(node, "minLength"));

		if (json_is_integer(json_object_get(node, "maxLength")) && (json_int_t)len > mx) {
			snprintf(why, whylen, "%s: maxLength %lld (value has %zu characters)", path,
				 (long long)mx, len);
			return -1;
		}
		if (json_is_integer(json_object_get(node, "minLength")) && (json_int_t)len < mn) {
			snprintf(why, whylen, "%s: minLength %lld (value has %zu characters)", path,
				 (long long)mn, len);
			return -1;
		}
		if (pat && pattern_match(pat, s) == 0) {
			snprintf(why, whylen, "%s: pattern %s", path, pat);
			return -1;
		}
	}
	if (json_is_number(v)) {
		double d = json_number_value(v);
		const json_t *mn = json_object_get(node, "minimum"), *mx = json_object_get(node, "maximum");
		if (json_is_number(mn) && d < json_number_value(mn)) {
			snprintf(why, whylen, "%s: minimum %g", path, json_number_value(mn));
			return -1;
		}
		if (json_is_number(mx) && d > json_number_value(mx)) {
			snprintf(why, whylen, "%s: maximum %g", path, json_number_value(mx));
			return -1;
		}
	}
	if (json_is_array(v)) {
		const json_t *mn = json_object_get(node, "minItems"), *mx = json_object_get(node, "maxItems");
		char sub[320];
		if (json_is_integer(mx) && (json_int_t)json_array_size(v) > json_integer_value(mx)) {
			snprintf(why, whylen, "%s: maxItems %lld", path, (long long)json_integer_value(mx));
			return -1;
		}
		if (json_is_integer(mn) && (json_int_t)json_array_size(v) < json_integer_value(mn)) {
			snprintf(why, whylen, "%s: minItems %lld", path, (long long)json_integer_value(mn));
			return -1;
		}
		json_array_foreach(v, i, x) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (schema_check(json_object_get(node, "items"), x, sub, why, whylen))
				return -1;
		}
	}
	if (json_is_object(v)) {
		const json_t *props = json_object_get(node, "properties");
		const json_t *addl = json_object_get(node, "additionalProperties");
		bool open = json_is_true(json_object_get(node, "x-kubernetes-preserve-unknown-fields")) ||
			    json_is_true(addl);
		const char *k;
		char sub[320];

		json_array_foreach(json_object_get(node, "required"), i, x) {
			const char *rk = json_string_value(x);
			if (rk && !json_object_get(v, rk)) {
				snprintf(why, whylen, "%s.%s: required", path, rk);
				return -1;
			}
		}
		json_object_foreach((json_t *)v, k, x) {
			const json_t *ps = json_object_get(props, k);
			snprintf(sub, sizeof(sub), "%s.%s", path, k);
			if (!ps && json_is_object(addl))
				ps = addl;
			if (!ps && open)
				continue;
			if (schema_check(ps, x, sub, why, whylen))
				return -1;
		}
	}
	return 0;
}

static void record(struct withheld *out, size_t max, size_t n, const char *field, const char *why)
{
	if (n >= max)
		return;
	snprintf(out[n].field, sizeof(out[n].field), "%s", field);
	snprintf(out[n].why, sizeof(out[n].why), "%s", why);
}

static bool is_required(const json_t *node, const char *k)
{
	const json_t *x;
	size_t i;
	json_array_foreach(json_object_get(node, "required"), i, x)
		if (!strcmp(json_string_value(x) ?: "", k))
			return true;
	return false;
}

/* Conditions: members, then whole entries. */
static size_t withhold_conditions(const json_t *lnode, json_t *list, struct withheld *out,
				  size_t max, size_t n)
{
	const json_t *item = json_object_get(lnode, "items");
	char why[480], path[200];

	for (size_t i = json_array_size(list); i-- > 0;) {
		json_t *e = json_array_get(list, i);
		const char *type = gj_str(e, "type") ?: "?";
		const char *k;
		json_t *v;
		void *tmp;
		bool drop = false;

		snprintf(path, sizeof(path), "status.conditions[%s]", type);
		if (!json_is_object(e) || !item) {
			drop = true;
			snprintf(why, sizeof(why), "%s: %s", path,
				 item ? "not an object" : "the list's items are not declared");
		}
		json_object_foreach_safe(e, tmp, k, v) {
			const json_t *ps = prop(item, k);
			char sub[240];
			if (drop)
				break;
			snprintf(sub, sizeof(sub), "%s.%s", path, k);
			if (!ps && json_is_true(json_object_get(item, "x-kubernetes-preserve-unknown-fields")))
				continue;
			if (!schema_check(ps, v, sub, why, sizeof(why)))
				continue;
			if (!strcmp(k, "type") || is_required(item, k)) {
				drop = true;
				break;
			}
			record(out, max, n++, sub, why);
			json_object_del(e, k);
		}
		if (!drop && schema_check(item, e, path, why, sizeof(why)))
			drop = true; /* a required member the intent lacks */
		if (drop) {
			record(out, max, n++, path, why);
			json_array_remove(list, i);
		}
	}
	return n;
}

size_t schema_withhold(const json_t *root, json_t *intent, struct withheld *out, size_t max)
{
	json_t *st = json_object_get(intent, "status"), *v;
	const json_t *sst = schema_at(root, "status");
	const char *k;
	void *tmp;
	char why[480], path[200];
	size_t n = 0;

	if (!root || !json_is_object(st))
		return 0;
	json_object_foreach_safe(st, tmp, k, v) {
		const json_t *ps = prop(sst, k);
		snprintf(path, sizeof(path), "status.%s", k);
		if (!strcmp(k, "conditions") && json_is_array(v) && ps &&
		    !strcmp(gj_str(ps, "type") ?: "", "array")) {
			n = withhold_conditions(ps, v, out, max, n);
			continue;
		}
		if (!ps && sst && json_is_true(json_object_get(sst, "x-kubernetes-preserve-unknown-fields")))
			continue;
		if (schema_check(ps, v, path, why, sizeof(why))) {
			record(out, max, n++, path, why);
			json_object_del(st, k);
		}
	}
	return n;
}
