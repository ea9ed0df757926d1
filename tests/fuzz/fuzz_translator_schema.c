/* libFuzzer: what the translator reads from CRDs and objects others write:
 * a target CRD's openAPIV3Schema (schema_withhold, schema_check, list type)
 * and an object's managedFields (ssa_status_satisfied, ssa_withdraw_ops).
 * Input: first byte selects the intent, the rest is JSON. Invariant: after
 * withholding, nothing more is withheld (what is left, the schema holds). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "translator/schema.h"
#include "translator/ssa.h"

static const char *const INTENTS[] = {
	("{\"status\":{\"node\":\"node-a\",\"containerID\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
	"\"podSubnet\":\"fd00:1::/64\",\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"Programmed\","
	"\"message\":\"m\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":3}]}}"),
	("{\"status\":{\"attachmentRef\":{\"apiGroup\":\"cloud.datumapis.com\",\"kind\":\"VPCAttachment\",\"name\":\"a\"},"
	"\"vpc\":\"Vb1\",\"conditions\":[{\"type\":\"Prepared\",\"status\":\"Unknown\",\"reason\":\"R\"},7,null]}}"),
	"{\"status\":{}}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in, *intent, *ops;
	struct withheld wh[8];
	char why[512];
	const json_t *root;

	if (size < 1)
		return 0;
	in = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
	if (!in)
		return 0;
	/* As a schema root, as a CRD and as the status node. */
	root = json_object_get(in, "spec") ? schema_of_crd(in, "v1alpha1") : in;
	intent = json_loads(INTENTS[data[0] % 3], 0, NULL);
	schema_withhold(root, intent, wh, 8);
	if (schema_withhold(root, intent, wh, 8) != 0) {
		fprintf(stderr, "withheld twice: %s: %s\n", wh[0].field, wh[0].why);
		abort();
	}
	json_decref(intent);
	/* The input as the intent against itself. */
	intent = json_pack("{s:o}", "status", json_deep_copy(in)); /* a copy: root lives in in */
	if (intent) {
		schema_withhold(root, intent, wh, 8);
		if (schema_withhold(root, intent, wh, 8) != 0) {
			fprintf(stderr, "withheld twice (self): %s: %s\n", wh[0].field, wh[0].why);
			abort();
		}
		json_decref(intent);
	}
	schema_check(schema_at(root, "status.conditions"), json_object_get(in, "status"), "status", why,
		     sizeof(why));
	(void)schema_list_is_map_by(schema_at(root, "status.conditions"), "type");
	/* As an object with managedFields. */
	intent = json_loads(INTENTS[data[0] % 3], 0, NULL);
	(void)ssa_status_satisfied(in, intent, "galactic-translator", why, sizeof(why));
	(void)ssa_withdraw_empties_status(in, "galactic-translator");
	ops = ssa_withdraw_ops(in, "galactic-translator");
	if (ops && !json_array_size(ops))
		abort();
	json_decref(ops);
	json_decref(intent);
	json_decref(in);
	return 0;
}
