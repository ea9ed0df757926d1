/*
 * Watch stream framing and event decoding.
 *
 * The API server sends a watch as a stream of JSON objects
 * {"type": "...", "object": {...}}, one per line; curl hands us arbitrary
 * chunks, so a value may be split anywhere (even inside a UTF-8 sequence) and
 * one chunk may hold several values. The decoder buffers the partial tail and
 * parses one value at a time with jansson's JSON_DISABLE_EOF_CHECK.
 * Whitespace between values (newlines or none) is accepted.
 *
 * Anything malformed (bad JSON, wrong shape, an unknown type, an object
 * without name or resourceVersion, a buffered value larger than max_value) is
 * an error: the caller drops the connection and re-watches or relists. The
 * decoder never crashes on input (fuzzed by tests/fuzz/fuzz_watch.c).
 */
#ifndef GALACTIC_COMMON_KUBE_WATCH_H
#define GALACTIC_COMMON_KUBE_WATCH_H

#include <jansson.h>
#include <stddef.h>

enum kube_event_type {
	KUBE_EVENT_ADDED,
	KUBE_EVENT_MODIFIED,
	KUBE_EVENT_DELETED,
	KUBE_EVENT_BOOKMARK,
	KUBE_EVENT_ERROR,
};

struct kube_event {
	enum kube_event_type type;
	json_t *object;              /* borrowed for the callback; json_incref to keep */
	const char *resource_version; /* object's metadata.resourceVersion (not for ERROR) */
	long error_code;             /* ERROR: Status.code (410 = relist) */
	const char *error_reason;    /* ERROR: Status.reason, may be NULL */
	const char *error_message;   /* ERROR: Status.message, may be NULL */
};

const char *kube_event_type_name(enum kube_event_type t);

/*
 * Checks one decoded value and fills ev (pointers borrowed from v).
 * Returns 0 or -1 with a message.
 */
int kube_event_decode(json_t *v, struct kube_event *ev, char *err, size_t errlen);

/* Returns non-zero to stop feeding; that value is returned by feed. */
typedef int (*kube_event_fn)(const struct kube_event *ev, void *ud);

struct kube_watch_decoder;

/* max_value: the largest single event accepted (bytes); 0 = 16 MiB. */
struct kube_watch_decoder *kube_watch_decoder_new(size_t max_value);
void kube_watch_decoder_free(struct kube_watch_decoder *d);
/* Forgets buffered bytes (new connection). */
void kube_watch_decoder_reset(struct kube_watch_decoder *d);
/* Bytes buffered waiting for the rest of a value. */
size_t kube_watch_decoder_pending(const struct kube_watch_decoder *d);

/*
 * Feeds a chunk. Calls fn for each complete event, in order.
 * Returns 0 (all complete values consumed), -1 on a decode error (err set;
 * the decoder must be reset before reuse), or fn's non-zero return value.
 */
int kube_watch_decoder_feed(struct kube_watch_decoder *d, const char *data, size_t len,
			    kube_event_fn fn, void *ud, char *err, size_t errlen);

#endif
