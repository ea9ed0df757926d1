/*
 * The translator's intent for NetworkInterface and NetworkInterfaceClaim
 * status, and the guarded JSON Patch that writes condition entries into a
 * status.conditions list declared atomic (DESIGN §4, §4.1). Pure functions:
 * no I/O, no clock (callers pass now).
 *
 *   NetworkInterface   status attachmentRef {apiGroup,kind,name}, vpc
 *                      (server-side apply), conditions Prepared, Programmed
 *                      (guarded JSON Patch)
 *   NetworkInterfaceClaim conditions Prepared, Programmed (guarded JSON Patch)
 *
 * Prepared follows the attachment's Ready (VPC operator); Programmed follows
 * the attachment's Programmed (the node's report, through the translator).
 * Links: interface <- attachment of the same name, controller-owned by the
 * interface (uid) and naming it in spec.interfaceRef.name; claim <->
 * interface through NetworkInterface.spec.claimRef.name and
 * NetworkInterfaceClaim.status.networkInterfaceRef.name (both must agree).
 */
#ifndef GALACTIC_TRANSLATOR_NIC_H
#define GALACTIC_TRANSLATOR_NIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define NIC_GROUP "networking.datumapis.com"
#define VPCATT_GROUP "cloud.datumapis.com"

/* The translator's condition types on interfaces and claims. */
#define C_PREPARED "Prepared"
#define C_PROGRAMMED "Programmed"

/* Reasons the translator states (facts about the consumer's own objects). */
#define R_ATT_MISSING "AttachmentMissing"
#define R_ATT_READY "AttachmentReady"
#define R_ATT_NOT_READY "AttachmentNotReady"
#define R_ATT_READY_UNKNOWN "AttachmentReadyUnknown"
#define R_ATT_PROGRAMMED "AttachmentProgrammed"
#define R_ATT_NOT_PROGRAMMED "AttachmentNotProgrammed"
#define R_ATT_PROGRAMMED_UNKNOWN "AttachmentProgrammedUnknown"
#define R_IF_PENDING "InterfacePending"
#define R_IF_MISSING "InterfaceMissing"
#define R_IF_MISMATCH "InterfaceNotBoundToClaim"

/*
 * True when att is iface's attachment as upstream links them (cloud
 * NetworkInterfaceReconciler): same namespace and name as the interface, a
 * controller ownerReference to kind NetworkInterface with the interface's
 * name and current uid (an attachment made for an earlier incarnation of the
 * same name does not count), and spec.interfaceRef.name = the interface's
 * name. Upstream's interfaceRef has no uid.
 */
bool nic_attachment_links(const json_t *iface, const json_t *att);

/*
 * The translator's two conditions (a JSON array [Prepared, Programmed]) for
 * obj (an interface or a claim), derived from att (the interface's
 * attachment, or NULL). obj's metadata.generation becomes
 * observedGeneration; lastTransitionTime is kept from obj's current entry of
 * that type when status is unchanged, else now.
 * what_missing: when att is NULL, the reason and message to state instead
 * (NULL: R_ATT_MISSING with the interface's words).
 */
struct nic_missing {
	const char *status; /* "False" | "Unknown" */
	const char *reason;
	const char *message;
};
json_t *nic_conditions(const json_t *obj, const json_t *att, const struct nic_missing *missing,
		       const char *now);

/*
 * The server-side-apply body for an interface's /status with the
 * translator's non-list fields: attachmentRef and vpc (att's status.vpc, the
 * base62 VPC id, left out until the VPC operator has set it) from att (att NULL:
 * status {} so that apply withdraws them). NULL when iface lacks name,
 * namespace or uid (err set).
 */
json_t *nic_fields_intent(const json_t *iface, const json_t *att, char *err, size_t errlen);

/*
 * True when iface already shows intent's fields as owned by manager (its
 * Apply entry on the status subresource owns exactly attachmentRef/vpc as
 * intended and nothing else under status). why names the first difference.
 */
bool nic_fields_satisfied(const json_t *iface, const json_t *intent, const char *manager,
			  char *why, size_t whylen);

/*
 * The RFC 6902 JSON Patch (for the object's /status subresource) that makes
 * obj's status.conditions show every entry of want (condition objects with
 * distinct types) while leaving every other entry, and the list's order,
 * as they are:
 *  - guards first: for every current entry i, "test /status/conditions/i/type"
 *    (the whole entry when it has no string type), and "test
 *    /status/conditions/-N/type" against entry 0, which holds only when the
 *    list still has exactly N entries (the API server's JSON Patch accepts
 *    negative indices counted from the end); an absent list or status is
 *    tested as absent (null), an empty one as [];
 *  - "replace /status/conditions/i" for each wanted type present at i whose
 *    entry differs; further entries of the same type are removed (highest
 *    index first);
 *  - "add /status/conditions/-" for each wanted type not present (or "add"
 *    of the list, or of status, when absent).
 * Returns an empty array when obj already shows want (nothing to write), a
 * new array of ops otherwise, NULL (err set) when status or status.conditions
 * is there but of the wrong type.
 */
json_t *cond_patch_build(const json_t *obj, const json_t *want, char *err, size_t errlen);

/*
 * The list cond_patch_build's ops would leave: obj's status.conditions with
 * the first entry of each wanted type replaced in place, later entries of
 * those types removed, missing wanted types appended (in want's order),
 * everyone else's entries untouched and in their places. For an atomic list
 * written whole by one server-side apply together with the fields (one write
 * per transition; the apply's resourceVersion precondition guards the
 * others' entries). A new array, NULL (err set) on the wrong types.
 */
json_t *cond_list_merged(const json_t *obj, const json_t *want, char *err, size_t errlen);

#endif
