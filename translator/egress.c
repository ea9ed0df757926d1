#include "translator/egress.h"

#include "common/json.h"

#include <stdio.h>
#include <string.h>

static const char *str_or(const json_t *o, const char *path, const char *def)
{
	const char *s = gj_str(o, path);
	return s ? s : def;
}

static bool nonempty(const char *s) { return s && *s; }

void egress_want(const json_t *att, const json_t *nc, struct egress_want *out)
{
	const json_t *inet = gj_get(nc, "spec.egress.internet"), *reach, *f;
	const char *node = gj_str(att, "status.node"), *vpc = gj_str(att, "spec.vpc.name");
	size_t i;

	memset(out, 0, sizeof(*out));
	out->decl = ED_NONE;
	if (!nc || !json_is_object(inet) || strcmp(str_or(inet, "mode", ""), "Enabled"))
		return;
	snprintf(out->vpc, sizeof(out->vpc), "%s", vpc ? vpc : "");
	reach = json_object_get(inet, "reach");
	if (!json_array_size(reach)) {
		out->decl = ED_BAD;
		snprintf(out->why, sizeof(out->why),
			 "the network enables internet egress but lists no address family to reach");
		return;
	}
	json_array_foreach(reach, i, f) {
		const char *s = json_string_value(f), *fam = NULL;
		if (s && !strcmp(s, "IPv6"))
			fam = "IPv6";
		else if (s && !strcmp(s, "IPv4"))
			fam = "IPv4";
		if (!fam || out->nfam >= 2 || (out->nfam && !strcmp(out->families[0], fam))) {
			out->decl = ED_BAD;
			out->nfam = 0;
			snprintf(out->why, sizeof(out->why),
				 "the network asks to reach %s%s%s, which internet egress does not support",
				 s ? "\"" : "", s ? s : "a non-string family", s ? "\"" : "");
			return;
		}
		out->families[out->nfam++] = fam;
	}
	if (!nonempty(node)) {
		out->decl = ED_NO_NODE;
		return;
	}
	snprintf(out->node, sizeof(out->node), "%s", node);
	out->decl = ED_OK;
}

json_t *egress_claim_new(const json_t *att, const struct egress_want *w)
{
	const char *name = gj_str(att, "metadata.name"), *ns = gj_str(att, "metadata.namespace");
	const char *uid = gj_str(att, "metadata.uid");
	json_t *fams = json_array();

	if (!nonempty(name) || !nonempty(ns) || !nonempty(uid) || !fams || w->decl != ED_OK) {
		json_decref(fams);
		return NULL;
	}
	for (size_t i = 0; i < w->nfam; i++)
		json_array_append_new(fams, json_string(w->families[i]));
	/* No blockOwnerDeletion: setting it needs update on vpcattachments/finalizers
	 * where OwnerReferencesPermissionEnforcement is on, and nothing here needs
	 * a foreground deletion of the attachment to wait for its claim. */
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]},"
			 " s:{s:{s:s}, s:{s:s}, s:s, s:o}}",
			 "apiVersion", "network.datumapis.com/v1alpha1", "kind", "EgressShardClaim",
			 "metadata", "name", name, "namespace", ns, "labels", EGRESS_NODE_LABEL, w->node,
			 "ownerReferences", "apiVersion",
			 str_or(att, "apiVersion", "cloud.datumapis.com/v1alpha1"), "kind", "VPCAttachment",
			 "name", name, "uid", uid, "controller", 1, "spec",
			 "attachment", "name", name, "vpc", "name", w->vpc, "nodeName", w->node,
			 "families", fams);
}

/* The uid of obj's controller ownerReference, or NULL. */
static const char *controller_uid(const json_t *obj)
{
	const json_t *r;
	size_t i;
	json_array_foreach(gj_get(obj, "metadata.ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")))
			return gj_str(r, "uid");
	return NULL;
}

bool egress_claim_matches(const json_t *claim, const json_t *att, const struct egress_want *w,
			  char *why, size_t whylen)
{
	const json_t *fams = gj_get(claim, "spec.families");
	const char *cu = controller_uid(claim), *au = gj_str(att, "metadata.uid");

	if (!cu || !au || strcmp(cu, au)) {
		snprintf(why, whylen, "controlled by another owner (uid %s)", cu ? cu : "none");
		return false;
	}
	if (strcmp(str_or(claim, "spec.nodeName", ""), w->node)) {
		snprintf(why, whylen, "spec.nodeName %s, the attachment is on %s",
			 str_or(claim, "spec.nodeName", "none"), w->node);
		return false;
	}
	if (strcmp(str_or(claim, "spec.vpc.name", ""), w->vpc) ||
	    strcmp(str_or(claim, "spec.attachment.name", ""), str_or(att, "metadata.name", ""))) {
		snprintf(why, whylen, "spec.vpc or spec.attachment differs");
		return false;
	}
	if (json_array_size(fams) != w->nfam) {
		snprintf(why, whylen, "spec.families differs");
		return false;
	}
	for (size_t i = 0; i < w->nfam; i++) {
		bool hit = false;
		const json_t *f;
		size_t j;
		json_array_foreach(fams, j, f)
			hit = hit || !strcmp(json_string_value(f) ?: "", w->families[i]);
		if (!hit) {
			snprintf(why, whylen, "spec.families lacks %s", w->families[i]);
			return false;
		}
	}
	return true;
}

const json_t *egress_pick_shard(const json_t *shards, const char *node)
{
	const json_t *s, *best = NULL;
	size_t i;

	json_array_foreach(shards, i, s) {
		if (!node || strcmp(str_or(s, "spec.targetRef.name", ""), node))
			continue;
		if (!best || strcmp(str_or(s, "metadata.name", ""), str_or(best, "metadata.name", "")) < 0)
			best = s;
	}
	return best;
}

const char *egress_refusal(const json_t *shard, const char *node, const char *const *families,
			   size_t nfam, char *msg, size_t msglen)
{
	const char *name = str_or(shard, "metadata.name", "?");
	const char *ssid = str_or(shard, "status.shardSID", ""), *psid = str_or(shard, "spec.shardSID", "");
	const char *s6 = str_or(shard, "status.shardAddressIPv6", "");
	const char *p6 = str_or(shard, "spec.shardAddressIPv6", "");

	if (!shard) {
		snprintf(msg, msglen, "no EgressShard targets node %s", node ? node : "?");
		return ER_NO_SHARD;
	}
	if (gj_get(shard, "metadata.deletionTimestamp")) {
		snprintf(msg, msglen, "EgressShard %s (node %s) is being deleted", name, node);
		return ER_TERMINATING;
	}
	if (!*ssid) {
		snprintf(msg, msglen, "EgressShard %s (node %s) has not reported status.shardSID", name,
			 node);
		return ER_NOT_READY;
	}
	if (*psid && strcmp(psid, ssid)) {
		snprintf(msg, msglen, "EgressShard %s: spec.shardSID %s, status.shardSID %s", name, psid,
			 ssid);
		return ER_MISMATCH;
	}
	if (*p6 && *s6 && strcmp(p6, s6)) {
		snprintf(msg, msglen, "EgressShard %s: spec.shardAddressIPv6 %s, status.shardAddressIPv6 %s",
			 name, p6, s6);
		return ER_MISMATCH;
	}
	for (size_t i = 0; i < nfam; i++)
		if (!strcmp(families[i], "IPv4") && !*str_or(shard, "status.shardAddressIPv4", "")) {
			snprintf(msg, msglen, "EgressShard %s reports no status.shardAddressIPv4 for family IPv4",
				 name);
			return ER_FAMILY;
		}
	return NULL;
}

bool egress_shard_held(const json_t *shard)
{
	const json_t *f;
	size_t i;
	json_array_foreach(gj_get(shard, "metadata.finalizers"), i, f)
		if (!strcmp(json_string_value(f) ?: "", EGRESS_FINALIZER))
			return true;
	return false;
}

const char *egress_claim_shard(const json_t *claim, const char *shard_ns)
{
	const char *n = gj_str(claim, "status.shardRef.name");
	if (!nonempty(n) || strcmp(str_or(claim, "status.shardRef.namespace", ""), shard_ns))
		return NULL;
	return n;
}

static const json_t *find_cond(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;
	json_array_foreach(gj_get(obj, "status.conditions"), i, c)
		if (!strcmp(str_or(c, "type", ""), type))
			return c;
	return NULL;
}

/* A condition entry; lastTransitionTime kept from obj's entry of type while status is the same. */
static json_t *cond(const json_t *obj, const char *type, const char *status, const char *reason,
		    const char *msg, const char *now)
{
	const json_t *cur = find_cond(obj, type);
	const char *ltt = now;
	json_t *c;

	if (cur && !strcmp(str_or(cur, "status", ""), status) && gj_str(cur, "lastTransitionTime"))
		ltt = gj_str(cur, "lastTransitionTime");
	c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
		      "message", msg, "lastTransitionTime", ltt);
	if (c && json_is_integer(gj_get(obj, "metadata.generation")))
		json_object_set(c, "observedGeneration", gj_get(obj, "metadata.generation"));
	return c;
}

json_t *egress_claim_status(const json_t *claim, const char *shard_ns, const char *shard,
			    const char *status, const char *reason, const char *msg, const char *now)
{
	const char *name = gj_str(claim, "metadata.name"), *ns = gj_str(claim, "metadata.namespace");
	const char *uid = gj_str(claim, "metadata.uid");
	json_t *o, *st, *c;

	if (!nonempty(name) || !nonempty(ns) || !nonempty(uid))
		return NULL;
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{}}", "apiVersion",
		      "network.datumapis.com/v1alpha1", "kind", "EgressShardClaim", "metadata", "name",
		      name, "namespace", ns, "uid", uid, "status");
	st = json_object_get(o, "status");
	c = cond(claim, "Ready", status, reason, msg, now);
	if (!o || !c || json_object_set_new(st, "conditions", json_pack("[o]", c))) {
		json_decref(o);
		return NULL;
	}
	if (json_is_integer(gj_get(claim, "metadata.generation")))
		json_object_set(st, "observedGeneration", gj_get(claim, "metadata.generation"));
	if (shard)
		json_object_set_new(st, "shardRef",
				    json_pack("{s:s, s:s}", "namespace", shard_ns, "name", shard));
	return o;
}

json_t *egress_att_condition(const json_t *att, const struct egress_want *w, const json_t *claim,
			     const json_t *shard, const char *now)
{
	const json_t *ready = find_cond(claim, "Ready"), *cur = find_cond(att, EGRESS_COND);
	char why[256], msg[400];
	const char *addr;

	if (w->decl == ED_NONE || w->decl == ED_NO_NODE)
		return NULL;
	if (w->decl == ED_BAD)
		return cond(att, EGRESS_COND, "False", EA_UNAVAILABLE, w->why, now);
	if (!claim || !ready || gj_get(claim, "metadata.deletionTimestamp") ||
	    !egress_claim_matches(claim, att, w, why, sizeof(why)) ||
	    gj_int(claim, "status.observedGeneration", -1) != gj_int(claim, "metadata.generation", -2)) {
		/* Not decided yet: keep what the attachment shows. */
		json_t *cp;
		if (!cur)
			return NULL;
		cp = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", EGRESS_COND, "status",
			       str_or(cur, "status", "Unknown"), "reason", str_or(cur, "reason", EA_UNAVAILABLE),
			       "message", str_or(cur, "message", ""), "lastTransitionTime",
			       str_or(cur, "lastTransitionTime", now));
		if (cp && json_is_integer(json_object_get(cur, "observedGeneration")))
			json_object_set(cp, "observedGeneration", json_object_get(cur, "observedGeneration"));
		return cp;
	}
	if (strcmp(str_or(ready, "status", ""), "True"))
		return cond(att, EGRESS_COND, "False", EA_UNAVAILABLE,
			    !strcmp(str_or(ready, "reason", ""), ER_FAMILY)
				    ? "internet egress cannot serve an address family the network asks to reach"
				    : "internet egress is not available for this attachment yet",
			    now);
	if (!shard)
		return cond(att, EGRESS_COND, "False", EA_UNAVAILABLE,
			    "internet egress is not available for this attachment: its egress capacity went away",
			    now);
	addr = str_or(shard, "status.shardAddressIPv6", "");
	if (!*addr)
		return cond(att, EGRESS_COND, "False", EA_NO_ADDRESS,
			    "internet egress has no source address assigned yet", now);
	snprintf(msg, sizeof(msg), "internet egress is ready; traffic leaves from %s", addr);
	return cond(att, EGRESS_COND, "True", EA_READY, msg, now);
}
