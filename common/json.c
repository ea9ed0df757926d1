#include "common/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

json_t *gj_get(const json_t *obj, const char *path)
{
	char seg[256];
	const json_t *cur = obj;

	while (cur && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(seg) || !json_is_object(cur))
			return NULL;
		memcpy(seg, path, n);
		seg[n] = 0;
		cur = json_object_get(cur, seg);
		path += n + (dot ? 1 : 0);
	}
	return (json_t *)cur;
}

const char *gj_str(const json_t *obj, const char *path)
{
	return json_string_value(gj_get(obj, path));
}

int64_t gj_int(const json_t *obj, const char *path, int64_t def)
{
	json_t *v = gj_get(obj, path);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

int gj_set(json_t *obj, const char *path, json_t *value)
{
	char seg[256];
	json_t *cur = obj;

	for (;;) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(seg) || !json_is_object(cur)) {
			json_decref(value);
			return -1;
		}
		memcpy(seg, path, n);
		seg[n] = 0;
		if (!dot)
			return json_object_set_new(cur, seg, value);
		json_t *next = json_object_get(cur, seg);
		if (next && !json_is_object(next)) {
			json_decref(value); /* never clobber a non-object on the way */
			return -1;
		}
		if (!next) {
			next = json_object();
			if (json_object_set_new(cur, seg, next) < 0) {
				json_decref(value);
				return -1;
			}
		}
		cur = next;
		path = dot + 1;
	}
}

char *gj_dumps(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

int gj_object_key(const json_t *obj, char *buf, size_t n)
{
	const char *ns = gj_str(obj, "metadata.namespace");
	const char *name = gj_str(obj, "metadata.name");
	int r;

	if (!name || !*name)
		return -1;
	if (ns && *ns)
		r = snprintf(buf, n, "%s/%s", ns, name);
	else
		r = snprintf(buf, n, "%s", name);
	return r < 0 || (size_t)r >= n ? -1 : 0;
}

void gj_time_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- gj_stream_array ------------------------------------------------------ */

static size_t skip_ws(const char *t, size_t len, size_t off)
{
	while (off < len && (t[off] == ' ' || t[off] == '\t' || t[off] == '\n' || t[off] == '\r'))
		off++;
	return off;
}

/* One value at t[*off] (any JSON value), *off moved past it; NULL with err. */
static json_t *one_value(const char *t, size_t len, size_t *off, char *err, size_t errlen)
{
	json_error_t je;
	json_t *v;

	v = json_loadb(t + *off, len - *off, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES,
		       &je);
	if (!v) {
		snprintf(err, errlen, "byte %zu: %s", *off + (size_t)(je.position > 0 ? je.position : 0), je.text);
		return NULL;
	}
	*off += (size_t)je.position;
	return v;
}

int gj_stream_array(const char *text, size_t len, const char *array,
		    int (*member)(const char *name, json_t *value, void *ctx),
		    int (*each)(json_t *elem, size_t i, void *ctx), void *ctx, bool *found, char *err,
		    size_t errlen)
{
	json_t *seen = json_object(), *k = NULL, *v;
	size_t off, n = 0;
	int rc = -EINVAL;

#define SBAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto out; } while (0)
	*found = false;
	if (!seen)
		SBAD("out of memory");
	off = skip_ws(text, len, 0);
	if (off >= len || text[off] != '{')
		SBAD("byte %zu: not a JSON object", off);
	off = skip_ws(text, len, off + 1);
	if (off < len && text[off] == '}') {
		off++;
		goto end;
	}
	for (;;) {
		const char *name;

		if (off >= len || text[off] != '"')
			SBAD("byte %zu: a member name expected", off);
		if (!(k = one_value(text, len, &off, err, errlen)))
			goto out;
		name = json_string_value(k);
		if (json_object_get(seen, name))
			SBAD("byte %zu: member \"%s\" given twice", off, name);
		json_object_set_new(seen, name, json_true());
		off = skip_ws(text, len, off);
		if (off >= len || text[off] != ':')
			SBAD("byte %zu: ':' expected", off);
		off = skip_ws(text, len, off + 1);
		if (!strcmp(name, array)) {
			*found = true;
			if (off >= len || text[off] != '[')
				SBAD("byte %zu: \"%s\" must be an array", off, array);
			off = skip_ws(text, len, off + 1);
			if (off < len && text[off] == ']') {
				off++;
			} else {
				for (;;) {
					if (!(v = one_value(text, len, &off, err, errlen)))
						goto out;
					rc = each(v, n++, ctx);
					json_decref(v);
					if (rc)
						goto out;
					rc = -EINVAL;
					off = skip_ws(text, len, off);
					if (off < len && text[off] == ']') {
						off++;
						break;
					}
					if (off >= len || text[off] != ',')
						SBAD("byte %zu: ',' or ']' expected", off);
					off = skip_ws(text, len, off + 1);
				}
			}
		} else {
			if (!(v = one_value(text, len, &off, err, errlen)))
				goto out;
			rc = member ? member(name, v, ctx) : 0;
			json_decref(v);
			if (rc)
				goto out;
			rc = -EINVAL;
		}
		json_decref(k);
		k = NULL;
		off = skip_ws(text, len, off);
		if (off < len && text[off] == '}') {
			off++;
			break;
		}
		if (off >= len || text[off] != ',')
			SBAD("byte %zu: ',' or '}' expected", off);
		off = skip_ws(text, len, off + 1);
	}
end:
	off = skip_ws(text, len, off);
	if (off != len)
		SBAD("byte %zu: data after the object", off);
	rc = 0;
out:
#undef SBAD
	json_decref(k);
	json_decref(seen);
	return rc;
}

/* The first element of have whose "type" is t (borrowed), or NULL. */
static const json_t *by_type(const json_t *have, const char *t)
{
	const json_t *hc;
	size_t j;

	json_array_foreach(have, j, hc) {
		const char *ht = gj_str(hc, "type");

		if (ht && !strcmp(ht, t))
			return hc;
	}
	return NULL;
}

bool gj_subset(const json_t *want, const json_t *have, enum gj_array_rule rule)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_object(want)) {
		if (!json_is_object(have))
			return false;
		json_object_foreach((json_t *)want, k, v)
			if (!gj_subset(v, json_object_get(have, k), rule))
				return false;
		return true;
	}
	if (!json_is_array(want))
		return json_equal(want, have);
	if (!json_is_array(have) ||
	    (rule == GJ_ARRAYS_SAME_LENGTH ? json_array_size(have) != json_array_size(want)
					   : json_array_size(have) < json_array_size(want)))
		return false;
	json_array_foreach(want, i, v) {
		const char *t = gj_str(v, "type");
		const json_t *hc;

		if (!t) {
			if (rule == GJ_ARRAYS_CONTAIN)
				return json_equal(want, have);
			if (!json_equal(v, json_array_get(have, i)))
				return false;
			continue;
		}
		if (!(hc = by_type(have, t)) || !gj_subset(v, hc, rule))
			return false;
	}
	return true;
}
