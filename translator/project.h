/*
 * What the translator's caches keep of each object (docs/translator.md
 * "Memory"): the objects are pruned as they are decoded, before they are
 * cached (informer_opts.transform), to the fields the reconcilers, index
 * functions and event handlers read:
 *   - metadata: name, namespace, uid, resourceVersion, generation,
 *     creationTimestamp, deletionTimestamp, ownerReferences, finalizers;
 *     labels only where read (the egress kinds); annotations never;
 *   - managedFields never as the server sends them: on the kinds whose
 *     status the translator writes they are reduced to what the skip check
 *     and the takeover note read (translator/ssa.c): per entry that owns
 *     something under status, its manager, operation and subresource and the
 *     keys of fieldsV1.f:status (and of f:conditions), no deeper; elsewhere
 *     dropped;
 *   - spec and status as they are (small, and read by the mapping, the
 *     intent and the skip check).
 * Pure; unit-tested (tests/unit/test_translator_patch.c).
 */
#ifndef GALACTIC_TRANSLATOR_PROJECT_H
#define GALACTIC_TRANSLATOR_PROJECT_H

#include <jansson.h>
#include <stdbool.h>

struct project_opts {
	bool keep_labels;        /* read by an index or a reconciler */
	bool keep_status_owners; /* the status is written by us: keep the reduced managedFields */
};

/* Prunes obj in place; ud is a const struct project_opts * (informer_opts.transform). */
void project_object(json_t *obj, void *ud);

#endif
