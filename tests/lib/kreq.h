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

#endif
