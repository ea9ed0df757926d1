/*
 * The target CRDs' schemas, kept current: one informer per target CRD
 * (customresourcedefinitions, field selector metadata.name), so a CRD
 * upgrade re-reads the schema at once and the caller re-queues that kind.
 * Thread-safe: every query runs under the module's lock on its own copy of
 * the served version's openAPIV3Schema.
 */
#ifndef GALACTIC_TRANSLATOR_CRDS_H
#define GALACTIC_TRANSLATOR_CRDS_H

#include "common/kube_client.h"
#include "translator/kinds.h"
#include "translator/schema.h"

#include <stdbool.h>

struct crds;

/* Called from an informer thread when kind's CRD (its schema) changed or went;
 * first: the first sight of it (start-up), not a change. */
typedef void (*crds_changed_fn)(enum tkind k, bool first, void *ud);

struct crds *crds_new(struct kube_client *kc, crds_changed_fn fn, void *ud);
int crds_start(struct crds *c);
bool crds_synced(struct crds *c);
/* Asks every CRD informer to stop without waiting (crds_stop joins them). */
void crds_request_stop(struct crds *c);
void crds_stop(struct crds *c);
void crds_free(struct crds *c);

/* Whether kind's CRD and its version's schema are known. */
bool crds_known(struct crds *c, enum tkind k);
/* status.conditions of kind is a map list keyed by type (server-side apply can own entries). */
bool crds_conditions_map(struct crds *c, enum tkind k);
/* schema_withhold() against kind's schema; 0 (nothing checked) when it is unknown. */
size_t crds_withhold(struct crds *c, enum tkind k, json_t *intent, struct withheld *out,
		     size_t max);

#endif
