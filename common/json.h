/* Small jansson helpers: dotted-path access and safe dumps. */
#ifndef GALACTIC_COMMON_JSON_H
#define GALACTIC_COMMON_JSON_H

#include <jansson.h>
#include <stdint.h>

/* Borrowed value at a dotted path ("metadata.name"), or NULL. */
json_t *gj_get(const json_t *obj, const char *path);
/* String at path, or NULL if missing or not a string (borrowed). */
const char *gj_str(const json_t *obj, const char *path);
/* Integer at path, or def. */
int64_t gj_int(const json_t *obj, const char *path, int64_t def);
/* Sets path to value (reference stolen), creating missing objects on the way;
 * -1 if a non-object is in the way. */
int gj_set(json_t *obj, const char *path, json_t *value);
/* Compact dump (malloc'd, free()); never NULL for a valid value except on ENOMEM. */
char *gj_dumps(const json_t *v);
/* Now as Kubernetes writes a metav1.Time (RFC 3339, UTC, whole seconds):
 * "2026-12-01T12:00:00Z". n >= 21. */
void gj_time_now(char *buf, size_t n);
/* "namespace/name" or "name" for cluster-scoped objects, into buf. */
int gj_object_key(const json_t *obj, char *buf, size_t n);

#endif
