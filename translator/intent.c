#include "translator/intent.h"

#include "translator/ssa.h"

#include "common/json.h"

#include <stdio.h>
#include <string.h>

const char *const VPCATT_TRANSLATOR_FIELDS[7] = {
	"node", "containerID", "podName", "hostInterface", "vrfInterface", "guestInterface",
	"podSubnet",
};
/* Report field feeding each of the above. */
static const enum map_field FROM[7] = {
	MF_NODE, MF_CONTAINER_ID, MF_POD_NAME, MF_HOST_IF, MF_VRF_IF, MF_GUEST_IF, MF_POD_SUBNET,
};

static int rank(const struct report_candidate *c)
{
	if (!c->valid)
		return 0;
	return c->v.programmed == PS_TRUE ? 2 : 1;
}

const struct report_candidate *report_pick(const struct report_candidate *c, size_t n)
{
	const struct report_candidate *best = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct report_candidate *x = &c[i];
		int d;

		if (!best) {
			best = x;
			continue;
		}
		d = rank(x) - rank(best);
		if (d > 0) {
			best = x;
			continue;
		}
		if (d < 0)
			continue;
		/* RFC 3339 UTC timestamps compare as strings. */
		d = strcmp(x->v.created ? x->v.created : "", best->v.created ? best->v.created : "");
		if (d > 0 || (d == 0 && strcmp(x->v.key, best->v.key) < 0))
			best = x;
	}
	return best;
}

/* Kubernetes condition reason: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024. */
bool condition_reason_ok(const char *r)
{
	size_t n = r ? strlen(r) : 0;

	if (!n || n > 1024)
		return false;
	if (!((r[0] >= 'A' && r[0] <= 'Z') || (r[0] >= 'a' && r[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++) {
		char ch = r[i];
		bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ((ch == ',' || ch == ':') && i < n - 1);
		if (!ok)
			return false;
	}
	return true;
}

static const json_t *find_cond(const json_t *att, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(gj_get(att, "status.conditions"), i, c)
		if (json_is_string(json_object_get(c, "type")) &&
		    !strcmp(json_string_value(json_object_get(c, "type")), type))
			return c;
	return NULL;
}

json_t *vpcatt_intent(const json_t *att, const struct report_candidate *rep, const char *now,
		      char *err, size_t errlen)
{
	const char *name = gj_str(att, "metadata.name"), *ns = gj_str(att, "metadata.namespace");
	const char *uid = gj_str(att, "metadata.uid"), *api = gj_str(att, "apiVersion");
	const char *vpc = gj_str(att, "status.vpc"), *vatt = gj_str(att, "status.vpcAttachment");
	const char *status, *reason, *ltt;
	char msg[1200];
	const json_t *cur;
	json_t *o, *st, *cond;

	if (!name || !*name || !ns || !*ns || !uid || !*uid) {
		snprintf(err, errlen, "VPCAttachment %s/%s: metadata.name, namespace or uid missing",
			 ns ? ns : "?", name ? name : "?");
		return NULL;
	}
	st = json_object();
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o}", "apiVersion",
		      api && *api ? api : "cloud.datumapis.com/v1alpha1", "kind", "VPCAttachment",
		      "metadata", "name", name, "namespace", ns, "uid", uid, "status", st);
	if (!o) {
		snprintf(err, errlen, "VPCAttachment %s/%s: out of memory", ns, name);
		return NULL;
	}
	if (!vpc || !*vpc || !vatt || !*vatt) {
		/* The VPC operator has not allocated the ids: nothing to match yet. */
		status = "Unknown";
		reason = R_IDS_PENDING;
		snprintf(msg, sizeof(msg), "status.vpc and status.vpcAttachment are not set yet");
	} else if (!rep) {
		status = "False";
		reason = R_REPORT_MISSING;
		snprintf(msg, sizeof(msg), "no data-plane report for vpc %s attachment %s", vpc, vatt);
	} else if (!rep->valid) {
		status = "Unknown";
		reason = R_REPORT_INVALID;
		snprintf(msg, sizeof(msg), "%s", rep->err);
	} else {
		for (int i = 0; i < 7; i++)
			if (rep->v.v[FROM[i]])
				json_object_set_new(st, VPCATT_TRANSLATOR_FIELDS[i],
						    json_string(rep->v.v[FROM[i]]));
		const char *node = rep->v.v[MF_NODE];
		if (rep->v.programmed == PS_ABSENT) {
			status = "Unknown";
			reason = R_NOT_REPORTED;
			snprintf(msg, sizeof(msg), "node %s has not reported Programmed yet", node);
		} else if (rep->v.outdated) {
			status = "Unknown";
			reason = R_REPORT_OUTDATED;
			snprintf(msg, sizeof(msg),
				 "node %s reported Programmed for an older generation of its report", node);
		} else {
			status = rep->v.programmed == PS_TRUE	 ? "True"
				 : rep->v.programmed == PS_FALSE ? "False"
								 : "Unknown";
			if (condition_reason_ok(rep->v.reason))
				reason = rep->v.reason;
			else
				reason = rep->v.programmed == PS_TRUE	 ? "Programmed"
					 : rep->v.programmed == PS_FALSE ? "NotProgrammed"
									 : "ProgrammingUnknown";
			if (rep->v.message && *rep->v.message)
				snprintf(msg, sizeof(msg), "node %s: %s", node, rep->v.message);
			else
				snprintf(msg, sizeof(msg), "reported by node %s", node);
		}
	}
	/* lastTransitionTime moves only when status does. */
	cur = find_cond(att, "Programmed");
	ltt = now;
	if (cur && json_is_string(json_object_get(cur, "status")) &&
	    !strcmp(json_string_value(json_object_get(cur, "status")), status) &&
	    json_is_string(json_object_get(cur, "lastTransitionTime")))
		ltt = json_string_value(json_object_get(cur, "lastTransitionTime"));
	cond = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Programmed", "status", status,
			 "reason", reason, "message", msg, "lastTransitionTime", ltt);
	if (cond && json_is_integer(gj_get(att, "metadata.generation")))
		json_object_set(cond, "observedGeneration", gj_get(att, "metadata.generation"));
	if (!cond || json_object_set_new(st, "conditions", json_pack("[o]", cond))) {
		json_decref(o);
		snprintf(err, errlen, "VPCAttachment %s/%s: out of memory", ns, name);
		return NULL;
	}
	return o;
}

bool vpcatt_intent_satisfied(const json_t *att, const json_t *intent, const char *manager,
			     char *why, size_t whylen)
{
	return ssa_status_satisfied(att, intent, manager, why, whylen);
}
