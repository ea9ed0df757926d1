/* Small jansson helpers: dotted-path access and safe dumps. */
#ifndef GALACTIC_COMMON_JSON_H
#define GALACTIC_COMMON_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
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
/*
 * One JSON object whose largest member is an array, parsed a piece at a
 * time so that a file of 100,000 elements never becomes one tree (jansson
 * parses each piece; nothing is hand-decoded): every element of the member
 * named `array` is handed to each(elem, i, ctx) as its own tree (borrowed),
 * every other member to member(name, value, ctx) (NULL: ignored). Names
 * and elements are parsed with JSON_REJECT_DUPLICATES, and a name given
 * twice at the top is refused too. A callback's nonzero return stops the
 * parse and is returned. *found: whether the array member was there.
 * Returns 0, or -EINVAL with err ("byte N: ...") when text is not such an
 * object (the array member not an array included).
 */
int gj_stream_array(const char *text, size_t len, const char *array,
		    int (*member)(const char *name, json_t *value, void *ctx),
		    int (*each)(json_t *elem, size_t i, void *ctx), void *ctx, bool *found, char *err,
		    size_t errlen);
/*
 * How gj_subset compares arrays. In both, an element of want with a string
 * member "type" (a condition) is looked up in have by that type, order
 * free, and compared with gj_subset itself (first element of have with the
 * type; none: not a subset).
 */
enum gj_array_rule {
	/* have holds at least as many elements as want; once want has an element
	 * without a type, the whole arrays must be json_equal. */
	GJ_ARRAYS_CONTAIN,
	/* have holds exactly as many elements as want; an element of want without
	 * a type must be json_equal to have's element at the same index. */
	GJ_ARRAYS_SAME_LENGTH,
};
/*
 * Whether every member of want is in have: objects member by member
 * (recursively; have may hold more), arrays by rule, anything else
 * json_equal. Used to skip a server-side apply whose intent the server's
 * object already holds.
 */
bool gj_subset(const json_t *want, const json_t *have, enum gj_array_rule rule);
/* "namespace/name" or "name" for cluster-scoped objects, into buf. */
int gj_object_key(const json_t *obj, char *buf, size_t n);

#endif
