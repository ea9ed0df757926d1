/*
 * The informer's local cache: objects keyed by "namespace/name" (or "name"
 * for cluster-scoped objects) plus secondary indexes.
 *
 * Threading: a read-write lock inside. Readers (any thread) get new
 * references; objects in the store are shared and must be treated as
 * read-only (json_deep_copy before changing one). Writers are the informer's
 * thread (or a test).
 *
 * An index function returns the index values of an object (e.g. the node
 * name of a report, a label value); an object may have zero or more.
 */
#ifndef GALACTIC_COMMON_KUBE_STORE_H
#define GALACTIC_COMMON_KUBE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KUBE_INDEX_MAX_VALUES 16

struct kube_index_values {
	int n;
	char v[KUBE_INDEX_MAX_VALUES][256];
};
/* Adds a value (ignored when full or too long); for index functions. */
void kube_index_values_add(struct kube_index_values *iv, const char *value);

typedef void (*kube_index_fn)(const json_t *obj, struct kube_index_values *out, void *ud);

/* Built-in index functions. */
void kube_index_by_namespace(const json_t *obj, struct kube_index_values *out, void *ud);
/* ud is the label key (a const char *). */
void kube_index_by_label(const json_t *obj, struct kube_index_values *out, void *ud);

struct kube_store;

struct kube_store *kube_store_new(void);
void kube_store_free(struct kube_store *s);
/*
 * Compact mode (before any object is added): each object is kept as its
 * serialized JSON (no whitespace), deflated (zlib, raw) against the first
 * object stored as a dictionary (objects of one kind share most of their
 * bytes: a 1.4 KB NetworkInterface keeps ~0.1-0.3 KB), instead of a tree of
 * jansson values (~12 KB for the same object); every read (get, list,
 * by_index, the old object of upsert/del and of replace's changes) inflates
 * and decodes a new copy (~10-20 us). For large caches read a few objects at
 * a time (the translator's).
 */
int kube_store_set_compact(struct kube_store *s);
/* Before any object is added. */
int kube_store_add_index(struct kube_store *s, const char *name, kube_index_fn fn, void *ud);

size_t kube_store_len(struct kube_store *s);
/* New reference or NULL. */
json_t *kube_store_get(struct kube_store *s, const char *key);
json_t *kube_store_get_nn(struct kube_store *s, const char *ns, const char *name);
/* All objects: a new array (each element a shared, read-only object). */
json_t *kube_store_list(struct kube_store *s);
/* Objects whose index `index` has `value`: a new array; NULL if no such index. */
json_t *kube_store_by_index(struct kube_store *s, const char *index, const char *value);
/* Keys of all objects, sorted (new array of strings). */
json_t *kube_store_keys(struct kube_store *s);

/*
 * Writer side. upsert takes a new reference to obj and returns the previous
 * object (new reference, or NULL); del returns the removed object or NULL.
 */
int kube_store_upsert(struct kube_store *s, json_t *obj, json_t **old);
json_t *kube_store_del(struct kube_store *s, const char *key);

/*
 * Replaces the whole content with items (an array), as after a relist, and
 * reports the difference: for each change fn(kind, old, new) with kind 'a'
 * (added: old NULL), 'u' (resourceVersion changed), 'd' (gone: new NULL).
 * fn runs after the lock is released, in that order: adds and updates in
 * list order, then deletes.
 */
typedef void (*kube_store_diff_fn)(char kind, json_t *old, json_t *newobj, void *ud);
int kube_store_replace(struct kube_store *s, json_t *items, kube_store_diff_fn fn, void *ud);

/*
 * The same, one page at a time (a paged list need not be held whole):
 * begin, then page for each page of items (adds and updates of that page
 * reported when it returns), then end (what no page had is deleted and
 * reported) or abort (a failed list: nothing deleted). end and abort free r.
 */
struct kube_store_replace;
struct kube_store_replace *kube_store_replace_begin(struct kube_store *s);
int kube_store_replace_page(struct kube_store_replace *r, json_t *items, kube_store_diff_fn fn,
			    void *ud);
int kube_store_replace_end(struct kube_store_replace *r, kube_store_diff_fn fn, void *ud);
void kube_store_replace_abort(struct kube_store_replace *r);

#endif
