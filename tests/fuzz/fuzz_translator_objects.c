/* libFuzzer: the upstream objects the translator decodes and what it
 * computes from them (translator/intent.c, nic.c, rec_common.c): a
 * VPCAttachment, a NetworkInterface, a NetworkInterfaceClaim and a report,
 * each any JSON (NetworkContext decoding is fuzz_translator_egress's).
 * Input: a JSON array [attachment, interface, claim, report]. The
 * reconcilers' decode steps run as they do: the report through the default
 * mapping, the attachment's intent from it, the interface linked to the
 * attachment through a cache (rec_iface_attachment), both nic intents and
 * their guarded condition patches. Invariants: an intent is refused with a
 * reason or names the object it is for; a failed "satisfied" says why; the
 * conditions are [Prepared, Programmed], each a complete entry; a patch is
 * refused with a reason or is an array of ops that each have "op" and "path";
 * the whole list one apply would carry (cond_list_merged) is refused with a
 * reason or holds each wanted type exactly once; the cache's projection
 * (translator/project.c) keeps the ids, spec and status and every ssa_*
 * answer; a compact cache gives back what it was given. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/kube_store.h"
#include "translator/intent.h"
#include "translator/nic.h"
#include "translator/project.h"
#include "translator/reconcile.h"
#include "translator/ssa.h"

static const char NOW[] = "2026-01-01T00:00:00Z";

static void check_conditions(const json_t *conds)
{
	static const char *const types[2] = { C_PREPARED, C_PROGRAMMED };
	const char *st;

	if (!conds)
		return; /* out of memory only */
	if (json_array_size(conds) != 2)
		abort();
	for (size_t i = 0; i < 2; i++) {
		const json_t *c = json_array_get(conds, i);

		st = gj_str(c, "status");
		if (strcmp(gj_str(c, "type") ?: "", types[i]) || !st ||
		    (strcmp(st, "True") && strcmp(st, "False") && strcmp(st, "Unknown")) ||
		    !condition_reason_ok(gj_str(c, "reason") ?: "") || !gj_str(c, "lastTransitionTime"))
			abort();
	}
}

static void check_patch(const json_t *obj, const json_t *want)
{
	char err[512] = "";
	json_t *ops = cond_patch_build(obj, want, err, sizeof(err)), *op;
	size_t i;

	if (!ops) {
		if (!err[0])
			abort();
		return;
	}
	json_array_foreach(ops, i, op)
		if (!gj_str(op, "op") || !gj_str(op, "path"))
			abort();
	json_decref(ops);
}

static void check_merged(const json_t *obj, const json_t *want)
{
	char err[512] = "";
	json_t *l = cond_list_merged(obj, want, err, sizeof(err)), *w, *c;
	size_t i, j;

	if (!l) {
		if (!err[0])
			abort();
		return;
	}
	json_array_foreach(want, j, w) {
		int n = 0;
		json_array_foreach(l, i, c)
			n += json_equal(json_object_get(c, "type"), json_object_get(w, "type"));
		if (n != 1)
			abort();
	}
	json_decref(l);
}

static bool same(const json_t *a, const json_t *b) { return (!a && !b) || json_equal(a, b); }

/* The projection keeps what the reconcilers and the skip check read. */
static void check_projection(const json_t *obj, const json_t *intent)
{
	static const struct project_opts owners = { .keep_status_owners = true };
	static const char *const ids[] = { "metadata.name", "metadata.namespace", "metadata.uid",
					   "metadata.resourceVersion" };
	json_t *p;
	char w1[512], w2[512];

	if (!json_is_object(obj) || !(p = json_deep_copy(obj)))
		return;
	project_object(p, (void *)&owners);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (!same(gj_get(obj, ids[i]), gj_get(p, ids[i])))
			abort();
	if (!same(json_object_get(obj, "status"), json_object_get(p, "status")) ||
	    !same(json_object_get(obj, "spec"), json_object_get(p, "spec")))
		abort();
	if (json_is_object(gj_get(obj, "metadata")) &&
	    ssa_withdraw_empties_status(obj, TRANSLATOR_MANAGER) !=
		    ssa_withdraw_empties_status(p, TRANSLATOR_MANAGER))
		abort();
	if (intent && ssa_status_satisfied(obj, intent, TRANSLATOR_MANAGER, w1, sizeof(w1)) !=
			      ssa_status_satisfied(p, intent, TRANSLATOR_MANAGER, w2, sizeof(w2)))
		abort();
	json_decref(p);
}

static void check_intent(const json_t *obj, json_t *intent, const char *err, bool nic)
{
	char why[512] = "";
	bool ok;

	if (!intent) {
		if (!err[0])
			abort();
		return;
	}
	if (strcmp(gj_str(intent, "metadata.name") ?: "", gj_str(obj, "metadata.name") ?: "-") ||
	    !json_is_object(json_object_get(intent, "status")))
		abort();
	ok = nic ? nic_fields_satisfied(obj, intent, TRANSLATOR_MANAGER, why, sizeof(why))
		 : vpcatt_intent_satisfied(obj, intent, TRANSLATOR_MANAGER, why, sizeof(why));
	check_projection(obj, intent);
	if (!ok && !why[0])
		abort();
	json_decref(intent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL), *conds, *body;
	json_t *linked = NULL, *old = NULL;
	const json_t *att, *iface, *claim, *rep;
	struct report_mapping m;
	struct report_candidate cand;
	struct kube_store *atts;
	struct rec_ctx c = { 0 };
	char err[512];

	if (!in)
		return 0;
	att = json_array_get(in, 0);
	iface = json_array_get(in, 1);
	claim = json_array_get(in, 2);
	rep = json_array_get(in, 3);

	/* The attachment and its report (rec_attachment). */
	mapping_default(&m);
	memset(&cand, 0, sizeof(cand));
	cand.valid = report_extract(&m, rep, &cand.v, cand.err, sizeof(cand.err)) == 0;
	err[0] = 0;
	check_intent(att, vpcatt_intent(att, json_is_object(rep) ? &cand : NULL, NOW, err, sizeof(err)),
		     err, false);
	report_view_clear(&cand.v);

	/* The interface and its attachment through the cache (rec_interface). */
	atts = kube_store_new();
	kube_store_set_compact(atts); /* as the translator keeps it */
	if (json_is_object(att)) {
		json_t *cp = json_deep_copy(att), *back = NULL;
		char key[600];

		if (cp && kube_store_upsert(atts, cp, &old) == 0) {
			json_decref(old);
			if (gj_object_key(cp, key, sizeof(key)) == 0 &&
			    (!(back = kube_store_get(atts, key)) || !json_equal(back, cp)))
				abort();
			json_decref(back);
		}
		json_decref(cp);
	}
	c.att = atts;
	linked = json_is_object(iface) ? rec_iface_attachment(&c, iface) : NULL;
	if (linked && !nic_attachment_links(iface, linked))
		abort();
	err[0] = 0;
	check_intent(iface, nic_fields_intent(iface, linked, err, sizeof(err)), err, true);
	conds = nic_conditions(iface, linked, NULL, NOW);
	check_conditions(conds);
	if (conds) {
		check_patch(iface, conds);
		check_merged(iface, conds);
	}
	json_decref(conds);
	body = rec_body(TK_NI, iface);
	if (body && strcmp(gj_str(body, "metadata.uid") ?: "", gj_str(iface, "metadata.uid") ?: "-"))
		abort();
	json_decref(body);

	/* The claim (rec_claim): with the interface's attachment, and without. */
	conds = nic_conditions(claim, linked, NULL, NOW);
	check_conditions(conds);
	if (conds)
		check_patch(claim, conds);
	json_decref(conds);
	conds = nic_conditions(claim, NULL,
			       &(struct nic_missing){ "Unknown", R_IF_PENDING, "not set yet" }, NOW);
	check_conditions(conds);
	if (conds)
		check_patch(claim, conds);
	json_decref(conds);

	json_decref(linked);
	kube_store_free(atts);
	json_decref(in);
	return 0;
}
