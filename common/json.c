#include "common/json.h"

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
