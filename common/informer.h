/*
 * Reflector + informer: keeps a kube_store in step with the server and fans
 * changes out to handlers.
 *
 * Loop (one thread per informer, started by informer_start):
 *   1. LIST with paging (limit/continue), page by page into the store
 *      (consistent, or from the watch cache with opts.list_from_cache)
 *      (only one page is held decoded), emitting add/update for each page
 *      and delete for what no page had; mark synced. A continue token that
 *      expired (410) restarts the list once, unpaged.
 *   2. WATCH from the list's resourceVersion with allowWatchBookmarks and a
 *      server timeoutSeconds drawn from [min_timeout_s, max_timeout_s]
 *      (default 5-10 min). Events update the store and advance the version;
 *      bookmarks only advance it.
 *   3. Stream ends (server timeout): watch again from the last version.
 *      Transport error, idle timeout (no byte for idle_timeout_s): watch again
 *      from the last version after a jittered backoff (0.8 s doubling to 30 s).
 *      410 Gone (HTTP status or an ERROR event inside the 200 stream) or
 *      any other ERROR event or undecodable data: relist (step 1); after a
 *      backoff only when the list was younger than 5 s and nothing arrived
 *      since (a relist loop), at once otherwise.
 *   A backoff ends early, once at least its first step has passed, when
 *   the client sees the API server answer again (kube_client_recoveries:
 *   any request through it, e.g. a Lease renewal, got a 2xx after a
 *   failure), and starts again from its first step: after an outage every
 *   informer lists again within about 0.1 s of the server's first answer.
 *   A Retry-After the server sent is waited whole. A list after failures
 *   is logged at info ("listed again after failures").
 *
 * Handlers run on the informer thread, after the store has the new state,
 * with no lock held; they must not block for long (enqueue a key into a
 * workqueue and return). Objects passed to handlers are borrowed and read-only.
 */
#ifndef GALACTIC_COMMON_INFORMER_H
#define GALACTIC_COMMON_INFORMER_H

#include "common/kube_client.h"
#include "common/kube_store.h"

#include <stdbool.h>

struct informer_handlers {
	void (*on_add)(json_t *obj, void *ud);
	void (*on_update)(json_t *old, json_t *newobj, void *ud);
	/* obj is the last state known (from the event, or the cache after a relist). */
	void (*on_delete)(json_t *obj, void *ud);
	void *ud;
};

struct informer_opts {
	struct kube_resource res;
	const char *ns;              /* NULL: all namespaces */
	const char *label_selector;
	const char *field_selector;
	long page_size;              /* 0: 500 */
	int min_timeout_s, max_timeout_s; /* 0: 300, 600 */
	int idle_timeout_s;          /* 0: 150 (bookmarks come about every minute) */
	double backoff_initial_s, backoff_max_s; /* 0: 0.8, 30 */
	const char *name;            /* for logs; default the resource */
	/* Drop metadata.managedFields before caching (as client-go's transform
	 * is often used): most of an object's bytes for controllers that never
	 * read it. */
	bool drop_managed_fields;
	/* Called on every object before it is cached (after drop_managed_fields),
	 * from the informer thread: prune it in place to what the handlers and
	 * readers of the cache use (as client-go's transform functions do). */
	void (*transform)(json_t *obj, void *ud);
	void *transform_ud;
	/* Keep the cache compact (kube_store_set_compact): every read decodes. */
	bool compact;
	/* List from the API server's watch cache (resourceVersion "0" first,
	 * then NotOlderThan the last version seen), as client-go's reflector
	 * does, instead of a consistent list: a paged list with a label
	 * selector that matches few of many objects is otherwise read from
	 * etcd page by page (at 100,000 reports, 60 s and more). The first
	 * list may be slightly behind the newest write; the watch that
	 * follows brings the rest. */
	bool list_from_cache;
};

struct informer_stats {
	unsigned long lists, watches, events, bookmarks, relists_gone, errors;
	char resource_version[64];
};

struct informer;

/* kc is borrowed. Strings in opts are copied. */
struct informer *informer_new(struct kube_client *kc, const struct informer_opts *opts);
/* Before informer_start. */
int informer_add_index(struct informer *inf, const char *name, kube_index_fn fn, void *ud);
int informer_add_handlers(struct informer *inf, const struct informer_handlers *h);
int informer_start(struct informer *inf);
/* Waits until the first list is in the store; false on timeout or stop. */
bool informer_wait_synced(struct informer *inf, double timeout_s);
bool informer_synced(struct informer *inf);
/* The cache (borrowed, valid until informer_free). */
struct kube_store *informer_store(struct informer *inf);
void informer_get_stats(struct informer *inf, struct informer_stats *out);
/* Drops the current watch connection (it resumes from the last version). */
void informer_rewatch(struct informer *inf);
/* Stops the thread and waits for it. Safe to call twice. */
void informer_stop(struct informer *inf);
/* Asks the thread to stop without waiting (then informer_stop joins it):
 * stopping several informers costs one watch wake-up, not one each. */
void informer_request_stop(struct informer *inf);
void informer_free(struct informer *inf);

#endif
