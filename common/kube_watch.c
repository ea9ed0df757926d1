#include "common/kube_watch.h"

#include "common/json.h"
#include "common/grow.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kube_watch_decoder {
	char *buf;
	size_t len, cap, max;
	size_t scanned; /* bytes already known not to complete a value */
};

const char *kube_event_type_name(enum kube_event_type t)
{
	static const char *const n[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	return (unsigned)t < 5 ? n[t] : "?";
}

int kube_event_decode(json_t *v, struct kube_event *ev, char *err, size_t errlen)
{
	const char *type = gj_str(v, "type");
	json_t *obj = json_object_get(v, "object");

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(v) || !type) {
		snprintf(err, errlen, "watch event: not an object with a string type");
		return -1;
	}
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "watch event %.32s: object missing or not an object", type);
		return -1;
	}
	ev->object = obj;
	if (!strcmp(type, "ERROR")) {
		json_t *code = json_object_get(obj, "code");
		ev->type = KUBE_EVENT_ERROR;
		ev->error_code = json_is_integer(code) ? (long)json_integer_value(code) : 0;
		ev->error_reason = gj_str(obj, "reason");
		ev->error_message = gj_str(obj, "message");
		return 0;
	}
	if (!strcmp(type, "ADDED"))
		ev->type = KUBE_EVENT_ADDED;
	else if (!strcmp(type, "MODIFIED"))
		ev->type = KUBE_EVENT_MODIFIED;
	else if (!strcmp(type, "DELETED"))
		ev->type = KUBE_EVENT_DELETED;
	else if (!strcmp(type, "BOOKMARK"))
		ev->type = KUBE_EVENT_BOOKMARK;
	else {
		snprintf(err, errlen, "watch event: unknown type %.32s", type);
		return -1;
	}
	ev->resource_version = gj_str(obj, "metadata.resourceVersion");
	if (!ev->resource_version || !*ev->resource_version) {
		snprintf(err, errlen, "watch event %s: no metadata.resourceVersion", type);
		return -1;
	}
	if (ev->type != KUBE_EVENT_BOOKMARK) {
		const char *name = gj_str(obj, "metadata.name");
		if (!name || !*name) {
			snprintf(err, errlen, "watch event %s: no metadata.name", type);
			return -1;
		}
	}
	return 0;
}

struct kube_watch_decoder *kube_watch_decoder_new(size_t max_value)
{
	struct kube_watch_decoder *d = calloc(1, sizeof(*d));
	if (d)
		d->max = max_value ? max_value : (16u << 20);
	return d;
}

void kube_watch_decoder_free(struct kube_watch_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	free(d);
}

void kube_watch_decoder_reset(struct kube_watch_decoder *d)
{
	d->len = 0;
	d->scanned = 0;
}

size_t kube_watch_decoder_pending(const struct kube_watch_decoder *d) { return d->len; }

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/*
 * Could buf[from..len) end a value? Only a '}' can end an object, so while
 * none arrived there is no point in running the parser again (keeps a large
 * event split into many chunks linear rather than quadratic).
 */
static bool may_complete(const struct kube_watch_decoder *d)
{
	return memchr(d->buf + d->scanned, '}', d->len - d->scanned) != NULL;
}

int kube_watch_decoder_feed(struct kube_watch_decoder *d, const char *data, size_t len,
			    kube_event_fn fn, void *ud, char *err, size_t errlen)
{
	size_t pos = 0;

	if (len) {
		if (d->len + len > d->max + 2) {
			/* The buffered value can no longer be legal. */
			snprintf(err, errlen, "watch stream: event larger than %zu bytes", d->max);
			return -1;
		}
		if (G_RESERVE(d->buf, d->cap, d->len + len + 1, 65536)) {
			snprintf(err, errlen, "watch stream: out of memory");
			return -1;
		}
		memcpy(d->buf + d->len, data, len);
		d->len += len;
	}
	/* Every value is an object: reject anything else before waiting for more. */
	while (pos < d->len && is_ws(d->buf[pos]))
		pos++;
	if (pos < d->len && d->buf[pos] != '{') {
		snprintf(err, errlen, "watch stream: expected '{' at byte %zu, got 0x%02x", pos,
			 (unsigned char)d->buf[pos]);
		return -1;
	}
	if (!d->len || !may_complete(d)) {
		d->scanned = d->len;
		return 0;
	}
	for (;;) {
		json_error_t je;
		json_t *v;
		struct kube_event ev;
		int r;

		while (pos < d->len && is_ws(d->buf[pos]))
			pos++;
		if (pos == d->len)
			break;
		if (d->buf[pos] != '{') {
			snprintf(err, errlen, "watch stream: expected '{' at byte %zu, got 0x%02x",
				 pos, (unsigned char)d->buf[pos]);
			return -1;
		}
		v = json_loadb(d->buf + pos, d->len - pos,
			       JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
		if (!v) {
			/* Truncated input fails at its end (a split UTF-8 sequence up to
			 * 3 bytes before it): wait for the rest. A real error there
			 * shows up once more bytes arrive. */
			size_t rem = d->len - pos, at = je.position > 0 ? (size_t)je.position : 0;
			if (json_error_code(&je) == json_error_premature_end_of_input || at >= rem ||
			    (json_error_code(&je) == json_error_invalid_utf8 && at + 4 >= rem))
				break;
			snprintf(err, errlen, "watch stream: bad JSON at byte %zu: %s",
				 pos + (size_t)(je.position > 0 ? je.position : 0), je.text);
			return -1;
		}
		pos += (size_t)je.position;
		if (kube_event_decode(v, &ev, err, errlen) < 0) {
			json_decref(v);
			return -1;
		}
		r = fn(&ev, ud);
		json_decref(v);
		if (r) {
			memmove(d->buf, d->buf + pos, d->len - pos);
			d->len -= pos;
			d->scanned = 0;
			return r;
		}
	}
	memmove(d->buf, d->buf + pos, d->len - pos);
	d->len -= pos;
	d->scanned = d->len;
	if (d->len > d->max) {
		snprintf(err, errlen, "watch stream: event larger than %zu bytes", d->max);
		return -1;
	}
	return 0;
}
