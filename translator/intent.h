/*
 * The translator's intent for one VPCAttachment: the status fields the
 * ownership table gives it (node, containerID, podName, hostInterface,
 * vrfInterface, guestInterface, podSubnet, condition Programmed), computed
 * from the attachment and the data-plane report with the same (vpc,
 * vpcAttachment) ids. Pure functions: no I/O, no clock (the caller passes now).
 */
#ifndef GALACTIC_TRANSLATOR_INTENT_H
#define GALACTIC_TRANSLATOR_INTENT_H

#include "translator/mapping.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TRANSLATOR_MANAGER "galactic-translator"

/* One report whose ids match an attachment; valid=false: err says what is wrong. */
struct report_candidate {
	struct report_view v;
	bool valid;
	char err[512];
};

/*
 * The report that speaks for an attachment when several match (a pod moved
 * and the old node's report is not gone yet, or two data planes): valid
 * before invalid, Programmed=True before others, newest creationTimestamp,
 * then smallest key. NULL when n == 0.
 */
const struct report_candidate *report_pick(const struct report_candidate *c, size_t n);

/*
 * The server-side-apply object for att's /status: apiVersion, kind,
 * metadata {name, namespace, uid} and status with the translator's fields
 * only. rep is the picked report or NULL. now is RFC 3339; it becomes the
 * condition's lastTransitionTime only when its status changes.
 * Returns NULL (err set) when att lacks name, namespace or uid.
 */
json_t *vpcatt_intent(const json_t *att, const struct report_candidate *rep, const char *now,
		      char *err, size_t errlen);

/*
 * True when att already shows exactly intent, as owned by `manager`:
 * every intended field has the intended value and is owned by the manager
 * (managedFields, Apply on the status subresource), and the manager owns
 * nothing under status that the intent leaves out. Otherwise false, with why
 * naming the first difference ("status.node: want node-a, have none").
 */
bool vpcatt_intent_satisfied(const json_t *att, const json_t *intent, const char *manager,
			     char *why, size_t whylen);

/* The translator-owned scalar status fields, in the order above. */
extern const char *const VPCATT_TRANSLATOR_FIELDS[7];

/* A valid Kubernetes condition reason (^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, <= 1024). */
bool condition_reason_ok(const char *r);

/* Reason strings the translator itself states (facts about the attachment). */
#define R_IDS_PENDING "AttachmentIDsPending"
#define R_REPORT_MISSING "ReportMissing"
#define R_REPORT_INVALID "ReportInvalid"
#define R_NOT_REPORTED "ProgrammedNotReported"
#define R_REPORT_OUTDATED "ReportOutdated"

#endif
