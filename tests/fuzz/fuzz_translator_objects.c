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
 * refused with a reason or is an array of ops that each have "op" and "path". */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/kube_store.h"
#include "translator/intent.h"
#include "translator/nic.h"
#include "translator/reconcile.h"

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
	if (json_is_object(att)) {
		json_t *cp = json_deep_copy(att);

		if (cp && kube_store_upsert(atts, cp, &old) == 0)
			json_decref(old);
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
	if (conds)
		check_patch(iface, conds);
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
