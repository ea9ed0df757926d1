/*
 * String-keyed hash map (chaining, FNV-1a). Keys are copied; values are
 * opaque pointers owned by the caller. Not thread-safe: callers lock.
 */
#ifndef GALACTIC_COMMON_GMAP_H
#define GALACTIC_COMMON_GMAP_H

#include <stdbool.h>
#include <stddef.h>

struct gmap;

struct gmap *gmap_new(void);
/* The same, starting with one bucket (grows as any): for the many maps that
 * mostly hold one or two keys, e.g. a store index's set per value (16
 * empty buckets are 128 of the ~300 bytes such a value costs). */
struct gmap *gmap_new_small(void);
/* free_val (may be NULL) is called on each remaining value. */
void gmap_free(struct gmap *m, void (*free_val)(void *));
size_t gmap_len(const struct gmap *m);
void *gmap_get(const struct gmap *m, const char *key);
bool gmap_has(const struct gmap *m, const char *key);
/* Sets key to val; returns the previous value (or NULL); -1 on ENOMEM via *err. */
void *gmap_put(struct gmap *m, const char *key, void *val, int *err);
/* Removes key; returns its value (or NULL) and sets *found. */
void *gmap_del(struct gmap *m, const char *key, bool *found);

struct gmap_iter {
	const struct gmap *m;
	size_t bucket;
	void *node;
};
void gmap_iter_init(struct gmap_iter *it, const struct gmap *m);
/* Returns false at the end. Do not modify the map while iterating. */
bool gmap_next(struct gmap_iter *it, const char **key, void **val);

#endif
