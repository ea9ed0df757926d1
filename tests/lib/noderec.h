/*
 * The record of a topology node's agent (tests/lib/topo.h: its state
 * directory is <topo dir>/n<node>), read as one record.json document with
 * its journal applied (agent/record.h record_dump), for suites that check
 * what the agent wrote down.
 */
#ifndef GALACTIC_TESTS_NODEREC_H
#define GALACTIC_TESTS_NODEREC_H

#include <jansson.h>

#include "tests/lib/topo.h"

/* The whole record (a new reference), or NULL when it cannot be read. */
json_t *noderec(const struct topo *t, int node);
/* Its attachment whose config names vpcattachment att (a new reference), or NULL. */
json_t *noderec_att(const struct topo *t, int node, const char *att);

#endif
