/*
 * "Does the object already show this server-side-apply intent?" for the
 * status subresource, read from the object and its managedFields. Pure.
 */
#ifndef GALACTIC_TRANSLATOR_SSA_H
#define GALACTIC_TRANSLATOR_SSA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* fieldsV1 under f:status of manager's Apply entry on the status subresource, or NULL. */
const json_t *ssa_owned_status(const json_t *obj, const char *manager);

/*
 * True when obj shows intent["status"] as manager's apply would leave it:
 * every intended field (other than conditions) equal and owned (f:<field>),
 * every intended entry of status.conditions (a map list keyed by type)
 * present with the same status, reason, message, observedGeneration and
 * lastTransitionTime and owned (k:{"type":...}), and nothing else under
 * status owned through that entry (a field or condition no longer intended
 * must be withdrawn). Otherwise false, why naming the first difference.
 */
bool ssa_status_satisfied(const json_t *obj, const json_t *intent, const char *manager, char *why,
			  size_t whylen);

#endif
