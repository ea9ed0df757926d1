/*
 * One place for the translator's write bookkeeping, shared by the three
 * reconcilers: the guarded writes themselves, the per-key memo of our last
 * write (a cache that lags our own write is not written again), skip
 * counting, takeovers of fields another manager holds, values withheld
 * because the target schema cannot hold them (log and metric once per
 * object and field; an Event once per resource and field), refused writes (422: logged once per intent, not
 * retried hot), and every write metric.
 *
 * Guards (no write lands on a deleted-and-recreated object of the same name):
 *  - server-side apply to /status carries the cached object's
 *    metadata.resourceVersion, which the API server treats as a precondition
 *    (measured: a stale or other incarnation's resourceVersion gets 409,
 *    while metadata.uid alone is not enforced on /status);
 *  - a JSON Patch starts with "test /metadata/uid".
 * A refused guard is "stale": counted, retried through the queue once the
 * cache has the newer object.
 */
#ifndef GALACTIC_TRANSLATOR_WRITES_H
#define GALACTIC_TRANSLATOR_WRITES_H

#include "common/kube_client.h"
#include "common/metrics.h"
#include "translator/kinds.h"
#include "translator/schema.h"

#include <jansson.h>
#include <stdbool.h>

struct writes_opts {
	const char *manager;  /* field manager */
	const char *instance; /* this replica (Event reportingInstance) */
	bool (*may_write)(void *ud); /* checked right before every request (leadership) */
	void *ud;
};

struct writes;

/* kc and m are borrowed. The test hook GALACTIC_TRANSLATOR_TEST_WRITE_GATE is read here. */
struct writes *writes_new(struct kube_client *kc, struct metrics *m, const struct writes_opts *o);
void writes_free(struct writes *w);

enum wres {
	WR_OK,      /* written; *out is the object the server returned */
	WR_NOOP,    /* not sent (no longer leading) */
	WR_GONE,    /* 404: the object went; the key is done */
	WR_STALE,   /* the guard refused (object changed or re-created since the cache): retry */
	WR_REFUSED, /* the server refused the values (422 invalid): logged once, not retried hot */
	WR_FAILED,  /* anything else: retry with backoff */
};

/* A reconcile found the object already showing the intent. */
void writes_skip(struct writes *w, enum tkind k);
/*
 * True when our last write for key carried fingerprint fp and obj (the
 * cache) predates it; also true when the same intent was refused (422)
 * for this incarnation before (it is not sent again until it changes).
 * Counts a skip when true.
 */
bool writes_already_sent(struct writes *w, enum tkind k, const char *key, const json_t *obj,
			 const char *fp);
/* A target schema changed: intents refused before may be accepted now (send them again). */
void writes_schema_changed(struct writes *w);
/* The object is gone: forget its memo. */
void writes_forget(struct writes *w, const char *key);
/* Logs and counts every intended field/condition that another manager owns (force takes it). */
void writes_note_takeovers(struct writes *w, const char *key, const json_t *obj,
			   const json_t *intent);
/* Reports withheld values: log and metric once per uid+field; an Event (reason FieldWithheld)
 * on the first object of each resource and field per process (posted again if it failed). */
void writes_withheld(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		     const struct withheld *wh, size_t n);

/* Server-side apply of intent (its metadata.resourceVersion set from obj) to obj's /status. */
enum wres writes_apply(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		       json_t *intent, const char *fp, json_t **out);
/* JSON Patch ops (a "test /metadata/uid" is put first) to obj's /status. */
enum wres writes_patch(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		       json_t *ops, const char *fp, json_t **out);

#endif
