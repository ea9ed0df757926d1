/*
 * Plain-libcurl requests to the test control plane, for tests that must not
 * depend on the client library under test. Caller runs curl_global_init.
 */
#ifndef GALACTIC_TESTS_KREQ_H
#define GALACTIC_TESTS_KREQ_H
#include "tests/lib/cp.h"

#include <jansson.h>

/*
 * One request as the admin (or with `token`); returns the HTTP status (0 on
 * transport failure) and, when out is set, the parsed body (NULL if not JSON).
 * Non-2xx replies are echoed to stderr for the test log.
 */
long kreq(const struct cp *cp, const char *method, const char *path, const char *ctype,
	  const char *body, const char *token, json_t **out);

/* Server-side apply (fieldManager=mgr, no force); a 409 increments *conflicts when given. */
long kapply(const struct cp *cp, const char *path, const char *mgr, const char *body, int *conflicts);
/* GET; the object (new reference) on 200, else NULL. code gets the status when set. */
json_t *kget(const struct cp *cp, const char *path, long *code);
/* The item named name of the list at list_path (new reference), NULL if absent.
 * A list answers 200 while the object does not exist yet, so polling stays quiet. */
json_t *klist_find(const struct cp *cp, const char *list_path, const char *name);
/* status.conditions entry of type, borrowed from o; NULL if none. */
const json_t *kcond(const json_t *o, const char *type);
/* o[a] (or o[a][b]) as a string, NULL when absent or not a string. */
const char *kstr(const json_t *o, const char *a, const char *b);

#endif
