/*
 * The record (agent/record.h) in a temporary directory, for unit suites:
 * one helper per step the suites repeat (a directory, open, an attachment
 * as the CNI verbs make it, its reservation). Each fails the test on error.
 */
#ifndef GALACTIC_TESTS_RECFIX_H
#define GALACTIC_TESTS_RECFIX_H

#include <stddef.h>

#include "agent/record.h"

/* A new directory /tmp/<tag>.XXXXXX into dir (n bytes); recfix_rmdir removes it and all in it. */
void recfix_mkdir(char *dir, size_t n, const char *tag);
void recfix_rmdir(const char *dir);
/* record_open on dir with the default options. */
struct record *recfix_open(const char *dir);
/*
 * A CNI attachment's template as the verbs fill it: vpc/id, container
 * container, network "net", guest interface "eth0", host interface "gc<id>";
 * no address, no configuration (the caller adds what its test needs).
 */
void recfix_cni_att(struct rec_att *t, const char *vpc, const char *id, const char *container);
/* record_reserve of t under the record's lock (held by the caller). */
struct rec_att *recfix_reserve_locked(struct record *r, struct rec_att *t);

#endif
