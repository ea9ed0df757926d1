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

/*
 * An apply whose status intent is empty withdraws every field manager owns;
 * when those are all obj's status holds, the API server would store status
 * as null, which a schema declaring status an object refuses (422; measured
 * on the upstream VPCAttachment). True in that case: write
 * ssa_withdraw_ops() instead.
 */
bool ssa_withdraw_empties_status(const json_t *obj, const char *manager);
/*
 * JSON Patch ops removing what manager's Apply entry owns under status
 * (fields, and entries of a map-list status.conditions), each guarded by a
 * test of its current value / type; NULL when there is nothing to remove.
 */
json_t *ssa_withdraw_ops(const json_t *obj, const char *manager);

#endif
